/*
 * bytes.h - little-endian integers in byte buffers, the one copy: the
 * engine's on-disk format (ref/ondisk.h) and hw/zoned.c's zone state file
 * both read and write their fields through these.
 *
 * getN(p) reads the N-bit little-endian integer at p, putN(p, v) stores
 * v there; p needs no alignment.  memcpy keeps them free of aliasing and
 * alignment rules and compiles to one load or store; that is also why
 * they require a little-endian host (tests/test_bytes.c checks the byte
 * order against hand-written images).
 */
#ifndef FSORACLE_BASE_BYTES_H
#define FSORACLE_BASE_BYTES_H

#include <stdint.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fsoracle's byte accessors assume a little-endian host"
#endif

static inline uint16_t get16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t get32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t get64(const void *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void put16(void *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void put32(void *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void put64(void *p, uint64_t v) { memcpy(p, &v, 8); }

/* The index of the first byte of p[0, n) that is not zero, or n: a word
 * at a time, then the word's bytes. */
static inline size_t bytes_first_nonzero(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i = 0;

	while (i + 8 <= n && get64(b + i) == 0)
		i += 8;
	while (i < n && b[i] == 0)
		i++;
	return i;
}

#endif
