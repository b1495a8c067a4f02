/*
 * radix.h - order 64-bit keys by their bytes (LSD radix), for the audits
 * that order every extent of a filesystem: no call through a comparison
 * pointer per pair, and only the bytes some key has are passes.
 */
#ifndef FSORACLE_BASE_RADIX_H
#define FSORACLE_BASE_RADIX_H

#include <stddef.h>
#include <stdint.h>

/* In ord[0..n): the places of key[0..n) in ascending order of key, equal
 * keys in their places' order (stable).  0, -ENOMEM when the scratch of n
 * places cannot be had, -EOVERFLOW when n does not fit 32 bits. */
int radix_order_u64(const uint64_t *key, size_t n, uint32_t *ord);

/* Sort v[0..n) ascending.  0, or -ENOMEM when the scratch cannot be had
 * (v is then left as it was). */
int radix_sort_u64(uint64_t *v, size_t n);

#endif
