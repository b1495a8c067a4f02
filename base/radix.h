/*
 * radix.h - sort 64-bit keys by their bytes (LSD radix), for the audits
 * that order every extent of a filesystem: no call through a comparison
 * pointer per pair, and only the bytes some key has are passes.
 */
#ifndef FSORACLE_BASE_RADIX_H
#define FSORACLE_BASE_RADIX_H

#include <stddef.h>
#include <stdint.h>

/* Sort v[0..n) ascending.  0, or -ENOMEM when the scratch of n keys
 * cannot be had (v is then left as it was). */
int radix_sort_u64(uint64_t *v, size_t n);

#endif
