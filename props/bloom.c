/*
 * bloom.c - "have we tried these arguments already?": a Bloom filter
 * that grows (a scalable Bloom filter).
 *
 * A layer is a bit array; a key sets K bits at h1 + i*h2 (double
 * hashing).  A layer counts as full at 16 bits per key (about 0.05%
 * false positives); then a new layer four times larger is added, at 4
 * more bits per key than the last, so the false positives of all layers
 * together stay near those of the first, and new keys go there.  A lookup
 * asks every layer.  So a run of millions of trials does not drown in
 * false "duplicates" (theft issue #59: a fixed filter did), while a run
 * of a hundred costs 4 KiB.
 *
 *   layer 0: 32768 bits (4 KiB)     2048 keys at 16 bits/key
 *   layer 1: 131072 bits (16 KiB)   6553 keys at 20 bits/key   ...
 *
 * (A blocked layout, all K bits in one cache line, was tried: at these
 * sizes it gives four times the false positives, and a trial costs far
 * more than K cache misses.)
 */
#include "props/props_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define K 11                            /* bits set per key */
#define FIRST_BITS (1u << 15)
#define FIRST_BITS_PER_KEY 16
#define MORE_BITS_PER_KEY 4             /* each next layer */

struct bloom_layer {
	uint64_t *words;
	uint64_t nbits;                 /* power of two */
	size_t keys, capacity;
};

void bloom_init(struct bloom *b)
{
	memset(b, 0, sizeof(*b));
}

void bloom_free(struct bloom *b)
{
	for (unsigned i = 0; i < b->nlayers; i++)
		free(b->layers[i].words);
	free(b->layers);
	memset(b, 0, sizeof(*b));
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static int layer_has(const struct bloom_layer *l, uint64_t h)
{
	uint64_t a = mix(h), b = mix(h ^ 0x9e3779b97f4a7c15ull) | 1;

	for (int k = 0; k < K; k++, a += b) {
		uint64_t bit = a & (l->nbits - 1);

		if (!(l->words[bit / 64] & (1ull << (bit % 64))))
			return 0;
	}
	return 1;
}

static void layer_add(struct bloom_layer *l, uint64_t h)
{
	uint64_t a = mix(h), b = mix(h ^ 0x9e3779b97f4a7c15ull) | 1;

	for (int k = 0; k < K; k++, a += b) {
		uint64_t bit = a & (l->nbits - 1);

		l->words[bit / 64] |= 1ull << (bit % 64);
	}
	l->keys++;
}

int bloom_has(const struct bloom *b, uint64_t h)
{
	for (unsigned i = 0; i < b->nlayers; i++)
		if (layer_has(&b->layers[i], h))
			return 1;
	return 0;
}

static int grow(struct bloom *b)
{
	uint64_t nbits = b->nlayers ?
		b->layers[b->nlayers - 1].nbits * 4 : FIRST_BITS;
	struct bloom_layer *nl = realloc(b->layers,
					 (b->nlayers + 1) * sizeof(*nl));

	if (!nl)
		return -ENOMEM;
	b->layers = nl;
	nl = &b->layers[b->nlayers];
	nl->words = calloc(nbits / 64, sizeof(uint64_t));
	if (!nl->words)
		return -ENOMEM;
	nl->nbits = nbits;
	nl->keys = 0;
	nl->capacity = nbits / (FIRST_BITS_PER_KEY +
				MORE_BITS_PER_KEY * b->nlayers);
	b->nlayers++;
	return 0;
}

int bloom_add(struct bloom *b, uint64_t h)
{
	struct bloom_layer *l;

	if (!b->nlayers || b->layers[b->nlayers - 1].keys >=
	    b->layers[b->nlayers - 1].capacity) {
		int r = grow(b);

		if (r)
			return r;
	}
	l = &b->layers[b->nlayers - 1];
	layer_add(l, h);
	return 0;
}
