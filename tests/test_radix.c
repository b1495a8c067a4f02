/*
 * test_radix.c - base/radix.h: radix_sort_u64 orders keys as qsort does,
 * whatever bytes they set (none, only the top one, all), with repeats,
 * and leaves zero or one key alone; radix_order_u64 keeps equal keys in
 * their places' order, both when it inserts a few keys and when it makes
 * passes over more.
 */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include "base/radix.h"

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Sort n keys of kind k both ways; 1 when the results are the same,
 * 0 when they differ, -1 when memory or the sort failed. */
static int same_as_qsort(size_t n, unsigned kind, uint64_t seed)
{
	uint64_t *a = malloc((n + 1) * sizeof(*a));
	uint64_t *b = malloc((n + 1) * sizeof(*b));
	int ok = -1;

	if (!a || !b)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = next(&seed);

		a[i] = kind == 0 ? r                   /* every byte        */
		     : kind == 1 ? r % 7               /* repeats, one byte */
		     : kind == 2 ? (r & 0xff) << 56    /* only the top byte */
		     : kind == 3 ? 0                   /* no byte at all    */
		     : (r % 5) << 40 | (r >> 60);      /* bytes with gaps   */
	}
	memcpy(b, a, n * sizeof(*a));
	qsort(b, n, sizeof(*b), cmp_u64);
	if (radix_sort_u64(a, n) == 0)
		ok = memcmp(a, b, n * sizeof(*a)) == 0;
out:
	free(a);
	free(b);
	return ok;
}

TEST(radix_sort_orders_keys_as_qsort_does)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 31, 32, 33, 34, 255, 256,
					 257, 5000 };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (unsigned kind = 0; kind < 5; kind++)
			CHECK_MSG(same_as_qsort(sizes[s], kind,
						0x9e3779b97f4a7c15ull + s) == 1,
				  "%zu keys of kind %u", sizes[s], kind);
}

TEST(radix_sort_keeps_every_key)
{
	uint64_t v[] = { UINT64_MAX, 0, 1ull << 63, 42, 42, 1, UINT64_MAX - 1 };
	const uint64_t want[] = { 0, 1, 42, 42, 1ull << 63, UINT64_MAX - 1,
				  UINT64_MAX };

	CHECK_OK(radix_sort_u64(v, sizeof(v) / sizeof(v[0])));
	CHECK_MEM(v, want, sizeof(want));
}

TEST(radix_order_keeps_equal_keys_in_their_places_order)
{
	const uint64_t key[] = { 5, 1ull << 40, 5, 0, 5, 1ull << 40, 0 };
	const uint32_t want[] = { 3, 6, 0, 2, 4, 1, 5 };
	uint32_t ord[7];

	CHECK_OK(radix_order_u64(key, 7, ord));
	CHECK_MEM(ord, want, sizeof(want));
	CHECK_OK(radix_order_u64(key, 0, ord));
}

/* Many keys with repeats: the same order as a stable insertion by hand,
 * on either side of the count where the passes start. */
TEST(radix_order_is_stable_with_few_keys_and_with_many)
{
	static const size_t sizes[] = { 5, 32, 33, 200 };
	uint64_t key[200], seed = 7;
	uint32_t ord[200], want[200];

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s], k = 0;

		for (size_t i = 0; i < n; i++)
			key[i] = (next(&seed) % 6) << (8 * (i % 3));
		/* every place of the smallest key, in place order, then the
		 * next key's: stable by construction */
		for (uint64_t done = 0, have = 0; k < n; have = 0) {
			uint64_t low = UINT64_MAX;

			for (size_t i = 0; i < n; i++)
				if ((!done || key[i] > done - 1) && key[i] < low)
					low = key[i];
			for (size_t i = 0; i < n; i++)
				if (key[i] == low)
					want[k++] = (uint32_t)i, have++;
			done = low + 1;
			CHECK(have > 0);
		}
		CHECK_OK(radix_order_u64(key, n, ord));
		CHECK_MSG(memcmp(ord, want, n * sizeof(*ord)) == 0,
			  "%zu keys", n);
	}
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
