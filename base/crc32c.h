/*
 * crc32c.h - CRC32C (Castagnoli), the checksum of every metadata block of
 * the engine and of the zone state files of zoned:file devices.
 */
#ifndef FSORACLE_BASE_CRC32C_H
#define FSORACLE_BASE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc32c(0, buf, len) starts a checksum; pass a previous result to chain. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
/* The same with tables only, whatever the CPU (tests compare the two). */
uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len);
/* 1 when crc32c() uses the CPU's crc32 instruction. */
int crc32c_accelerated(void);

#endif
