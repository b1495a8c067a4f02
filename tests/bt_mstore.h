/*
 * bt_mstore.h - an array-backed bt_store for B+tree unit tests, stricter
 * than the engine's: it hands out the lowest free block, poisons freed and
 * freshly allocated blocks, fails the k-th alloc or get on demand, and
 * records API misuse (double free, a get of a free block, a block held
 * twice, a handle never put) in bugs/bug.
 *
 * Header-only (static functions) so each test program has its own copy.
 */
#ifndef FSORACLE_TESTS_BT_MSTORE_H
#define FSORACLE_TESTS_BT_MSTORE_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/btree.h"
#include "ref/ondisk.h"

struct mstore {
	uint32_t bs;
	uint64_t nblocks;       /* block 0 is never handed out */
	uint8_t *mem;
	uint8_t *used;
	uint8_t *fresh;         /* allocated, not yet written */
	uint32_t *held;         /* outstanding gets per block */
	uint64_t in_use;
	uint64_t nheld;         /* gets not yet put */
	uint64_t allocs, gets;  /* calls so far */
	uint64_t fail_alloc_at; /* fail the call with this ordinal, 0: never */
	uint64_t fail_get_at;
	bool check_postorder;   /* freeing a node whose children live = bug */
	unsigned bugs;
	char bug[160];
};

__attribute__((format(printf, 2, 3)))
static inline void ms_bug(struct mstore *s, const char *fmt, ...)
{
	va_list ap;

	if (s->bugs++ == 0) {
		va_start(ap, fmt);
		vsnprintf(s->bug, sizeof(s->bug), fmt, ap);
		va_end(ap);
	}
}

static inline uint8_t *ms_blk(struct mstore *s, uint64_t blk)
{
	return s->mem + blk * s->bs;
}

static inline int ms_get(void *ctx, uint64_t blk, int write, void **data,
		  void **handle)
{
	struct mstore *s = ctx;

	s->gets++;
	if (s->fail_get_at && s->gets == s->fail_get_at)
		return -EIO;
	if (blk == 0 || blk >= s->nblocks)
		return -EIO;            /* wild pointer: off the device */
	if (!s->used[blk]) {
		ms_bug(s, "get of free block %llu", (unsigned long long)blk);
		return -EIO;
	}
	if (s->held[blk])
		ms_bug(s, "block %llu held twice", (unsigned long long)blk);
	if (write && s->fresh[blk]) {
		memset(ms_blk(s, blk), 0, s->bs);
		s->fresh[blk] = 0;
	}
	s->held[blk]++;
	s->nheld++;
	*data = ms_blk(s, blk);
	*handle = &s->held[blk];
	return 0;
}

static inline void ms_put(void *ctx, void *handle)
{
	struct mstore *s = ctx;
	uint64_t blk = (uint64_t)((uint32_t *)handle - s->held);

	if (blk >= s->nblocks || s->held[blk] == 0) {
		ms_bug(s, "put of a handle not held (blk %llu)",
		       (unsigned long long)blk);
		return;
	}
	s->held[blk]--;
	s->nheld--;
}

static inline int ms_alloc(void *ctx, uint64_t near, uint64_t *blk)
{
	struct mstore *s = ctx;

	s->allocs++;
	if (s->fail_alloc_at && s->allocs == s->fail_alloc_at)
		return -ENOSPC;
	for (uint64_t b = 1; b < s->nblocks; b++) {
		if (s->used[b])
			continue;
		s->used[b] = 1;
		s->fresh[b] = 1;
		memset(ms_blk(s, b), 0xa5, s->bs);     /* unread garbage */
		s->in_use++;
		*blk = b;
		return 0;
	}
	return -ENOSPC;
}

/* A live node still pointing at live children is freed too early. */
static inline void ms_check_postorder(struct mstore *s, uint64_t blk)
{
	const uint8_t *d = ms_blk(s, blk);
	unsigned n = get16(d + 26);

	if (get32(d) != MAGIC_BMBT || get16(d + 24) == 0)
		return;
	for (unsigned i = 0; i < n && 32 + 16 * (i + 1) <= s->bs; i++) {
		uint64_t c = get64(d + 32 + 16 * i + 8);

		if (c < s->nblocks && s->used[c])
			ms_bug(s, "freed blk %llu before its child %llu",
			       (unsigned long long)blk, (unsigned long long)c);
	}
}

static inline int ms_free(void *ctx, uint64_t blk)
{
	struct mstore *s = ctx;

	if (blk == 0 || blk >= s->nblocks || !s->used[blk]) {
		ms_bug(s, "free of unallocated block %llu",
		       (unsigned long long)blk);
		return -EINVAL;
	}
	if (s->held[blk])
		ms_bug(s, "free of held block %llu", (unsigned long long)blk);
	if (s->check_postorder)
		ms_check_postorder(s, blk);
	s->used[blk] = 0;
	s->fresh[blk] = 0;
	memset(ms_blk(s, blk), 0xdb, s->bs);           /* use-after-free */
	s->in_use--;
	return 0;
}

/* Set up s with nblocks blocks of bs bytes (abort on no memory). */
static inline void ms_init(struct mstore *s, uint32_t bs, uint64_t nblocks)
{
	memset(s, 0, sizeof(*s));
	s->bs = bs;
	s->nblocks = nblocks;
	s->mem = calloc(nblocks, bs);
	s->used = calloc(nblocks, 1);
	s->fresh = calloc(nblocks, 1);
	s->held = calloc(nblocks, sizeof(*s->held));
	if (!s->mem || !s->used || !s->fresh || !s->held)
		abort();
}

static inline void ms_fini(struct mstore *s)
{
	free(s->mem);
	free(s->used);
	free(s->fresh);
	free(s->held);
}

#endif
