/*
 * radix.c - LSD radix order of 64-bit keys (radix.h): one counting pass
 * a byte, from the lowest, over only the bytes below the highest one any
 * key sets; each pass is stable, so equal keys keep their places' order.
 * A few keys are put in order by insertion instead (RADIX_FEW): a pass
 * clears, sums and walks 256 counters whatever n is, and an audit of a
 * small filesystem orders a few dozen references at a time.
 */
#include "base/radix.h"

#include "base/park.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* At most this many keys: insertion, no scratch (a pass costs about as
 * much as n * n / 4 moves at this n). */
#define RADIX_FEW 32

/* ord[0..n) by key, stable: a place moves only past greater keys. */
static void insertion_order(const uint64_t *key, size_t n, uint32_t *ord)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t p = ord[i];
		size_t j = i;

		for (; j > 0 && key[ord[j - 1]] > key[p]; j--)
			ord[j] = ord[j - 1];
		ord[j] = p;
	}
}

int radix_order_u64(const uint64_t *key, size_t n, uint32_t *ord)
{
	uint32_t *t, *from = ord, *to;
	uint64_t top = 0;
	void *scratch = NULL; /* the park's: an audit orders many times */
	size_t tcap = 0;

	if (n > UINT32_MAX)
		return -EOVERFLOW;
	for (size_t i = 0; i < n; i++) {
		ord[i] = (uint32_t)i;
		top |= key[i];
	}
	if (n <= RADIX_FEW) {
		insertion_order(key, n, ord);
		return 0;
	}
	if (park_grow(&scratch, &tcap, 0, n * sizeof(*t)))
		return -ENOMEM;
	t = to = scratch;
	for (unsigned sh = 0; sh < 64 && top >> sh; sh += 8) {
		size_t at[256] = { 0 }, sum = 0;
		uint32_t *swap;

		for (size_t i = 0; i < n; i++)
			at[key[i] >> sh & 255]++; /* the count: any order */
		for (unsigned d = 0; d < 256; d++) {
			size_t c = at[d];

			at[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			to[at[key[from[i]] >> sh & 255]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	if (from != ord)
		memcpy(ord, from, n * sizeof(*ord));
	park_free(t, tcap);
	return 0;
}

int radix_sort_u64(uint64_t *v, size_t n)
{
	uint32_t *ord;
	uint64_t *out;
	int err;

	if (n <= RADIX_FEW) { /* in place, no scratch */
		for (size_t i = 1; i < n; i++) {
			uint64_t x = v[i];
			size_t j = i;

			for (; j > 0 && v[j - 1] > x; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		return 0;
	}
	ord = malloc(n * sizeof(*ord));
	out = malloc(n * sizeof(*out));
	err = ord && out ? radix_order_u64(v, n, ord) : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++)
		out[i] = v[ord[i]];
	if (!err)
		memcpy(v, out, n * sizeof(*v));
	free(ord);
	free(out);
	return err;
}
