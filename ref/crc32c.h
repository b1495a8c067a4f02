/* crc32c.h - CRC32C (Castagnoli), the checksum of every metadata block. */
#ifndef FSORACLE_REF_CRC32C_H
#define FSORACLE_REF_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc32c(0, buf, len) starts a checksum; pass a previous result to chain. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif
