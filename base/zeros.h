/*
 * zeros.h - one read-only block of zeros for the whole process.
 *
 * zeros_block() is ZEROS_BYTES of zeros mapped read-only: the MMU
 * refuses a write to it (the process dies on the spot), so a pointer
 * into it can read nothing but zeros.  The page cache hands it out as
 * the bytes of a page read over a hole until something writes the page
 * (ref/pcache.c), as anonymous memory maps the kernel's zero page until
 * it is written; the checker takes bytes there as zeros without reading
 * them (zeros_hold).  Mapped at the first call and never unmapped; safe
 * from any thread.
 */
#ifndef FSORACLE_BASE_ZEROS_H
#define FSORACLE_BASE_ZEROS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest block the engine formats (ref.h: 512..65536). */
#define ZEROS_BYTES ((size_t)64 << 10)

/* The block, or NULL when it cannot be mapped (the caller zeroes its own
 * memory instead). */
const uint8_t *zeros_block(void);

/* Whether [p, p + n) lies inside the block: bytes that are zeros and
 * cannot be anything else.  Never maps it. */
bool zeros_hold(const void *p, size_t n);

/* Whether the n bytes at p are all zero (true for n == 0): one memcmp
 * of the bytes against themselves shifted by one, which libc runs a
 * vector at a time and the fuzzers' coverage does not trace, where a
 * loop over the bytes would be traced at every one. */
bool zeros_all(const void *p, size_t n);

#endif
