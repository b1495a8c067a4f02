/*
 * radix.c - LSD radix sort of 64-bit keys (radix.h): one counting pass
 * a byte, from the lowest, over only the bytes below the highest one any
 * key sets; each pass is stable, so the order is the keys' order.
 */
#include "base/radix.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int radix_sort_u64(uint64_t *v, size_t n)
{
	uint64_t *t, *from = v, *to, top = 0;

	if (n < 2)
		return 0;
	t = malloc(n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	to = t;
	for (size_t i = 0; i < n; i++)
		top |= v[i];
	for (unsigned sh = 0; sh < 64 && top >> sh; sh += 8) {
		size_t at[256] = { 0 }, sum = 0;
		uint64_t *swap;

		for (size_t i = 0; i < n; i++)
			at[from[i] >> sh & 255]++;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = at[d];

			at[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			to[at[from[i] >> sh & 255]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	if (from != v)
		memcpy(v, from, n * sizeof(*v));
	free(t);
	return 0;
}
