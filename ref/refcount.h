/*
 * refcount.h - how many owners each device block has: the refcount
 * B+tree that reflink, dedupe and the COW fork stand on.
 *
 * As on XFS, the tree holds only shared ranges.  A block with no record
 * has one owner if it is allocated and none if it is free; the allocator
 * knows which.  A record says "blocks [start, start+len) have `count`
 * owners", count >= 2.  Records never overlap, and two records that touch
 * with the same count are always merged, so the tree is canonical: the
 * same sharing state has exactly one set of records, whatever the
 * history.
 *
 *   blocks   100 ............ 108 ...... 112 ....... 120
 *   owners    1  1  2  2  2  2  3  3  3  3  2  2  2  2  1
 *   records         [102, 4, 2] [106, 4, 3] [110, 4, 2]
 *
 * Record (16 bytes, little-endian): u64 start, u32 len, u32 count.
 * len is at most REFC_MAX_LEN; a longer shared range is several records
 * (the only case where touching records with one count are not merged).
 *
 * Everything works on a struct bt_tree whose type is refcount_bt_type,
 * so the engine runs it on its journaled buffer cache and the unit tests
 * on an array.
 */
#ifndef FSORACLE_REF_REFCOUNT_H
#define FSORACLE_REF_REFCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "ref/btree.h"

#define REFC_REC_SIZE 16
#define REFC_MAX_LEN  UINT32_MAX
#define REFC_MAX_COUNT UINT32_MAX

extern const struct bt_type refcount_bt_type;

struct refc_rec {
	uint64_t start;
	uint32_t len;
	uint32_t count;          /* >= 2 */
};

/*
 * Blocks whose owner count drops from 1 to 0 are handed to this
 * callback, one call per contiguous range, in ascending order: the
 * caller frees them.
 */
typedef int (*refc_free_fn)(void *arg, uint64_t start, uint64_t len);

/*
 * Add delta (+1 or -1) owners to every block of [start, start+len), all
 * of which must be allocated.  +1 turns unrecorded blocks (1 owner) into
 * count-2 records; -1 turns count-2 records back into nothing (1 owner)
 * and hands unrecorded blocks (1 -> 0 owners) to free_fn.  -ERANGE if a
 * count would pass REFC_MAX_COUNT (nothing changed), else 0 or the
 * tree's -errno.
 */
int refcount_adjust(struct bt_tree *t, uint64_t start, uint64_t len,
		    int delta, refc_free_fn free_fn, void *arg);

/*
 * The first shared piece of [start, start+len): 0 with *sstart and *slen
 * set (clipped to the range), -ENOENT when no block of it is shared.
 */
int refcount_find_shared(struct bt_tree *t, uint64_t start, uint64_t len,
			 uint64_t *sstart, uint64_t *slen);

/* Owners of block blk as the tree records them: 1 without a record. */
int refcount_get(struct bt_tree *t, uint64_t blk, uint32_t *count);

/*
 * Audit the records: counts >= 2, lengths 1..REFC_MAX_LEN, no overlap,
 * no mergeable neighbours, each inside [0, limit).  For fsck: visit(arg,
 * rec) is called for every record in order (may be NULL).  0 or
 * -EUCLEAN with the reason in why.
 */
int refcount_check(struct bt_tree *t, uint64_t limit,
		   int (*visit)(void *arg, const struct refc_rec *r),
		   void *arg, char *why, size_t whylen);

#endif
