/*
 * btree.c - the generic on-disk B+tree behind btree.h.
 *
 * One algorithm serves every tree type: leaves hold fixed-size records
 * (the type says how big and where the key is), interior nodes hold
 * (u64 key, u64 child) pairs.  The tree never does I/O; it asks the
 * bt_store for blocks, so the same code runs over the engine's buffer
 * cache and over the unit tests' array.
 *
 * Shape of every mutation, and why:
 *
 *   1. descend  - read-only walk from the root, remembering for each level
 *                 the block, the slot taken, the entry count and the two
 *                 neighbouring children.  Nodes are released on the way.
 *   2. plan     - decide from those counts alone (plus one read of a
 *                 sibling per level for deletes) which nodes split, borrow
 *                 or merge.
 *   3. prepare  - allocate every new block and take write access to every
 *                 node that will change.  Any failure here (-ENOSPC from the
 *                 allocator, -EIO from get) unwinds and leaves the tree
 *                 exactly as it was.
 *   4. apply    - pure in-memory edits that cannot fail.
 *   5. release  - put every buffer, then free the blocks that dropped out.
 *
 * So a caller sees all or nothing, except that a failing free() in step 5
 * is reported after the tree is already consistent without that block.
 *
 * Separator invariant (what bt_check enforces): for an interior entry
 * (K[i], child C[i]), every key in C[i]'s subtree, records and interior
 * keys alike, lies in [K[i], K[i+1]) (the last child inherits its parent's
 * upper bound).  Removing a record never touches separators, so K[i] may
 * be lower than the smallest key actually below it ("stale-low"); inserts
 * lower K[i] on the way down when a new key sorts before it, and borrows
 * reset the moved boundary to the right node's new first key.  Within a
 * node keys strictly increase, and a child's K[0] is >= its parent's K[i].
 *
 * Work counters: node_visits counts each distinct node an operation reads
 * or writes once (a node read during the descent and then rewritten is one
 * visit; a freshly allocated node is one visit).  An insert or delete that
 * neither splits nor rebalances in a tree of height h costs exactly h.
 * bt_check() and bt_dump() are audits, not engine work, and count nothing.
 */
#include "ref/btree.h"
#include "ref/ondisk.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef EFSCORRUPTED
#define EFSCORRUPTED EUCLEAN
#endif

/* Node header fields that follow the common 24-byte blkhdr. */
#define BT_OFF_LEVEL 24         /* u16: 0 = leaf                  */
#define BT_OFF_NRECS 26         /* u16: entries in use            */
#define BT_OFF_PAD   28         /* u32: zero                      */
#define BT_PTR_SIZE  16         /* interior entry: u64 key, child */
#define BT_REC_MAX   64         /* largest record a type may use  */

/*
 * Below four entries a node cannot hold two after a split and still have
 * maxrecs/2 >= 2, so min fill would degenerate to one entry per node.
 */
#define BT_MIN_FANOUT 4

#define STAT_ADD(t, field, n)                                   \
	do {                                                    \
		if ((t)->stats)                                 \
			(t)->stats->field += (n);               \
	} while (0)

/* A node held through the store; data == NULL means not held. */
struct bt_buf {
	uint64_t blk;
	uint8_t *data;
	void *handle;
};

/* One level of a root-to-leaf walk. */
struct bt_level {
	struct bt_buf b;
	int idx;                /* child slot (interior), record slot (leaf) */
	unsigned nrecs;         /* entries seen during the descent           */
	uint64_t lsib, rsib;    /* neighbours under the same parent, 0: none */
	bool low;               /* the search key sorts below K[idx]         */
};

struct bt_path {
	unsigned top;                          /* level of the root */
	struct bt_level lv[BT_MAX_LEVELS];     /* indexed by level  */
};

/* ---- geometry ---- */

static uint32_t fit_max(const struct bt_tree *t, uint32_t esize)
{
	uint32_t fit, want = t->maxrecs;

	if (esize == 0 || t->blocksize <= BT_HDR_SIZE)
		return 0;
	if (want && want < BT_MIN_FANOUT)
		want = BT_MIN_FANOUT;
	/* a fan-out asked for that fits needs no division (every node
	 * access asks this) */
	if (want && want <= UINT16_MAX &&
	    (uint64_t)want * esize <= t->blocksize - BT_HDR_SIZE)
		return want;
	fit = (t->blocksize - BT_HDR_SIZE) / esize;
	if (fit > UINT16_MAX)           /* nrecs is a u16 on disk */
		fit = UINT16_MAX;
	return want && want < fit ? want : fit;
}

uint32_t bt_leaf_max(const struct bt_tree *t)
{
	if (!t || !t->type)
		return 0;
	return fit_max(t, t->type->rec_size);
}

uint32_t bt_node_max(const struct bt_tree *t)
{
	if (!t)
		return 0;
	return fit_max(t, BT_PTR_SIZE);
}

static uint32_t lvl_max(const struct bt_tree *t, unsigned level)
{
	return level ? bt_node_max(t) : bt_leaf_max(t);
}

/* The fill every non-root node keeps after a delete. */
static uint32_t lvl_min(const struct bt_tree *t, unsigned level)
{
	return lvl_max(t, level) / 2;
}

static size_t ent_size(const struct bt_tree *t, unsigned level)
{
	return level ? BT_PTR_SIZE : t->type->rec_size;
}

/* ---- node accessors (all through the unaligned-safe helpers) ---- */

static unsigned nd_level(const uint8_t *d)
{
	return get16(d + BT_OFF_LEVEL);
}

static unsigned nd_nrecs(const uint8_t *d)
{
	return get16(d + BT_OFF_NRECS);
}

static void nd_set_nrecs(uint8_t *d, unsigned n)
{
	put16(d + BT_OFF_NRECS, (uint16_t)n);
}

static uint8_t *nd_ent(const struct bt_tree *t, uint8_t *d, unsigned level,
		       unsigned i)
{
	return d + BT_HDR_SIZE + (size_t)i * ent_size(t, level);
}

static uint64_t nd_key(const struct bt_tree *t, uint8_t *d, unsigned level,
		       unsigned i)
{
	const uint8_t *e = nd_ent(t, d, level, i);

	return level ? get64(e) : t->type->rec_key(e);
}

static void nd_set_key(uint8_t *d, unsigned i, uint64_t key)
{
	put64(d + BT_HDR_SIZE + (size_t)i * BT_PTR_SIZE, key);
}

static uint64_t nd_child(const uint8_t *d, unsigned i)
{
	return get64(d + BT_HDR_SIZE + (size_t)i * BT_PTR_SIZE + 8);
}

static void nd_init(const struct bt_tree *t, uint8_t *d, uint64_t blk,
		    unsigned level)
{
	memset(d, 0, t->blocksize);
	put32(d + BLKHDR_MAGIC, t->type->magic);
	put64(d + BLKHDR_BLKNO, blk);
	put64(d + BLKHDR_OWNER, t->owner);
	put16(d + BT_OFF_LEVEL, (uint16_t)level);
}

/*
 * Everything a node must satisfy before we follow its counts or pointers.
 * Fill minimums are not checked here: a reader can cope with an underfull
 * node, and bt_check reports it.
 */
static const char *nd_bad(const struct bt_tree *t, const uint8_t *d,
			  uint64_t blk, unsigned level)
{
	if (get32(d + BLKHDR_MAGIC) != t->type->magic)
		return "bad magic";
	if (get64(d + BLKHDR_BLKNO) != blk)
		return "blkno does not match its location";
	if (get64(d + BLKHDR_OWNER) != t->owner)
		return "wrong owner";
	if (nd_level(d) != level)
		return "level does not match its depth";
	if (nd_nrecs(d) == 0)
		return "empty node";
	if (nd_nrecs(d) > lvl_max(t, level))
		return "more entries than fit";
	return NULL;
}

/* ---- entry moves shared by leaves and interior nodes ---- */

static void ent_insert(const struct bt_tree *t, uint8_t *d, unsigned level,
		       unsigned pos, const void *e)
{
	size_t es = ent_size(t, level);
	unsigned n = nd_nrecs(d);

	memmove(nd_ent(t, d, level, pos + 1), nd_ent(t, d, level, pos),
		(n - pos) * es);
	memcpy(nd_ent(t, d, level, pos), e, es);
	nd_set_nrecs(d, n + 1);
}

static void ent_remove(const struct bt_tree *t, uint8_t *d, unsigned level,
		       unsigned pos)
{
	size_t es = ent_size(t, level);
	unsigned n = nd_nrecs(d);

	memmove(nd_ent(t, d, level, pos), nd_ent(t, d, level, pos + 1),
		(n - pos - 1) * es);
	nd_set_nrecs(d, n - 1);
}

/* Move cnt entries from src[spos..] to dst[dpos..], closing/opening gaps. */
static void ent_move(const struct bt_tree *t, unsigned level, uint8_t *src,
		     unsigned spos, unsigned cnt, uint8_t *dst, unsigned dpos)
{
	size_t es = ent_size(t, level);
	unsigned sn = nd_nrecs(src), dn = nd_nrecs(dst);

	memmove(nd_ent(t, dst, level, dpos + cnt), nd_ent(t, dst, level, dpos),
		(dn - dpos) * es);
	memcpy(nd_ent(t, dst, level, dpos), nd_ent(t, src, level, spos),
	       cnt * es);
	memmove(nd_ent(t, src, level, spos), nd_ent(t, src, level, spos + cnt),
		(sn - spos - cnt) * es);
	nd_set_nrecs(src, sn - cnt);
	nd_set_nrecs(dst, dn + cnt);
}

/* ---- store access ---- */

static int buf_get_raw(struct bt_tree *t, uint64_t blk, int write,
		       struct bt_buf *b)
{
	void *data = NULL, *handle = NULL;
	int err;

	if (blk == 0)           /* 0 means "no block"; never follow it */
		return -EFSCORRUPTED;
	err = t->store->get(t->store->ctx, blk, write, &data, &handle);
	if (err)
		return err < 0 ? err : -EIO;
	if (!data)
		return -EIO;
	b->blk = blk;
	b->data = data;
	b->handle = handle;
	return 0;
}

static void buf_put(struct bt_tree *t, struct bt_buf *b)
{
	if (!b->data)
		return;
	t->store->put(t->store->ctx, b->handle);
	b->data = NULL;
	b->handle = NULL;
}

/* Get a node we expect at this level; anything else is corruption. */
static int buf_get(struct bt_tree *t, uint64_t blk, unsigned level, int write,
		   struct bt_buf *b)
{
	int err = buf_get_raw(t, blk, write, b);

	if (err)
		return err;
	if (nd_bad(t, b->data, blk, level)) {
		buf_put(t, b);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* Write access to a freshly allocated block, stamped as an empty node. */
static int buf_new(struct bt_tree *t, uint64_t blk, unsigned level,
		   struct bt_buf *b)
{
	int err = buf_get_raw(t, blk, 1, b);

	if (err)
		return err;
	nd_init(t, b->data, blk, level);
	return 0;
}

/* *blk stays 0 unless a block was really allocated (unwind relies on it). */
static int node_alloc(struct bt_tree *t, uint64_t near, uint64_t *blk)
{
	uint64_t got = 0;
	int err;

	*blk = 0;
	err = t->store->alloc(t->store->ctx, near, &got);
	if (err)
		return err < 0 ? err : -EIO;
	if (got == 0)           /* would alias "empty tree" */
		return -EIO;
	STAT_ADD(t, node_allocs, 1);
	*blk = got;
	return 0;
}

static int node_free(struct bt_tree *t, uint64_t blk)
{
	int err = t->store->free(t->store->ctx, blk);

	if (err)
		return err < 0 ? err : -EIO;
	STAT_ADD(t, node_frees, 1);
	return 0;
}

static void set_root(struct bt_tree *t, uint64_t blk, uint32_t levels)
{
	t->root->blk = blk;
	t->root->levels = levels;
	if (t->root_changed)
		t->root_changed(t);
}

/* The tree description is usable and the root is self-consistent. */
static int tree_ok(const struct bt_tree *t)
{
	const struct bt_type *ty;

	if (!t || !t->type || !t->store || !t->root)
		return -EINVAL;
	ty = t->type;
	if (!ty->rec_key || ty->rec_size == 0 || ty->rec_size > BT_REC_MAX)
		return -EINVAL;
	if (!t->store->get || !t->store->put || !t->store->alloc ||
	    !t->store->free)
		return -EINVAL;
	if (bt_leaf_max(t) < BT_MIN_FANOUT || bt_node_max(t) < BT_MIN_FANOUT)
		return -EINVAL;
	if (t->root->levels > BT_MAX_LEVELS)
		return -EFSCORRUPTED;
	if ((t->root->blk == 0) != (t->root->levels == 0))
		return -EFSCORRUPTED;
	return 0;
}

/* ---- searching ---- */

/* Interior: the last slot whose key <= key, or slot 0 if key is smaller. */
static unsigned search_child(const struct bt_tree *t, uint8_t *d,
			     unsigned level, unsigned n, uint64_t key)
{
	unsigned lo = 0, hi = n;        /* answer in [lo, hi) */

	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;

		if (nd_key(t, d, level, mid) <= key)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Leaf: the first slot whose key >= key (n if none). */
static unsigned search_leaf(const struct bt_tree *t, uint8_t *d, unsigned n,
			    uint64_t key)
{
	unsigned lo = 0, hi = n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (nd_key(t, d, 0, mid) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Only the levels path_descend set up (0..top) can hold a buffer. */
static void path_release(struct bt_tree *t, struct bt_path *p)
{
	for (unsigned l = 0; l <= p->top; l++)
		buf_put(t, &p->lv[l].b);
}

/*
 * Walk from the root to the leaf that would hold key.  With hold, every
 * node stays held (cursors step sideways from it); without, each interior
 * node is released once its slot is known.  The leaf is held either way.
 * Levels strictly decrease, so a corrupted pointer cannot make this loop.
 */
static int path_descend(struct bt_tree *t, struct bt_path *p, uint64_t key,
			bool hold)
{
	uint64_t blk = t->root->blk;
	int err;

	/* Levels above the root stay unset: nothing reads them (a new root
	 * is an insert's own buffer), and a descent is the tree's hottest
	 * call, so the whole path (16 levels) is not cleared for it. */
	p->top = t->root->levels - 1;
	memset(p->lv, 0, (p->top + 1) * sizeof(p->lv[0]));
	for (unsigned l = p->top;; l--) {
		struct bt_level *lv = &p->lv[l];
		uint8_t *d;

		err = buf_get(t, blk, l, 0, &lv->b);
		if (err)
			goto out_error;
		STAT_ADD(t, node_visits, 1);
		d = lv->b.data;
		lv->nrecs = nd_nrecs(d);
		if (l == 0) {
			lv->idx = (int)search_leaf(t, d, lv->nrecs, key);
			return 0;
		}
		lv->idx = (int)search_child(t, d, l, lv->nrecs, key);
		lv->low = key < nd_key(t, d, l, lv->idx);
		blk = nd_child(d, lv->idx);
		p->lv[l - 1].lsib = lv->idx > 0 ? nd_child(d, lv->idx - 1) : 0;
		p->lv[l - 1].rsib = (unsigned)lv->idx + 1 < lv->nrecs ?
				    nd_child(d, lv->idx + 1) : 0;
		if (!hold)
			buf_put(t, &lv->b);
	}

out_error:
	path_release(t, p);
	return err;
}

/*
 * path_descend for the calls that need a record to find (lookups,
 * delete): a bad tree is its error, an empty one -ENOENT.
 */
static int path_find(struct bt_tree *t, struct bt_path *p, uint64_t key,
		     bool hold)
{
	int err = tree_ok(t);

	if (err)
		return err;
	if (t->root->levels == 0)
		return -ENOENT;
	return path_descend(t, p, key, hold);
}

/*
 * Move a fully held path to the next (dir > 0) or previous leaf: climb to
 * the lowest level that has a neighbour slot in that direction, then go
 * down its near edge.  Returns 1 when there is no such leaf.
 */
static int path_step(struct bt_tree *t, struct bt_path *p, int dir)
{
	unsigned l;
	int err;

	for (l = 1; l <= p->top; l++) {
		int ni = p->lv[l].idx + dir;

		if (ni >= 0 && ni < (int)p->lv[l].nrecs)
			break;
	}
	if (l > p->top)
		return 1;
	p->lv[l].idx += dir;
	for (; l > 0; l--) {
		struct bt_level *up = &p->lv[l], *lv = &p->lv[l - 1];

		buf_put(t, &lv->b);
		err = buf_get(t, nd_child(up->b.data, up->idx), l - 1, 0,
			      &lv->b);
		if (err)
			return err;
		STAT_ADD(t, node_visits, 1);
		lv->nrecs = nd_nrecs(lv->b.data);
		lv->idx = dir > 0 ? 0 : (int)lv->nrecs - 1;
	}
	return 0;
}

/* ---- lookups and iteration ---- */

static void copy_rec(const struct bt_tree *t, struct bt_level *leaf,
		     unsigned i, void *rec)
{
	memcpy(rec, nd_ent(t, leaf->b.data, 0, i), t->type->rec_size);
}

/*
 * Hold the path to the record with the largest key <= key, leaf->idx at
 * it, and copy it to rec.  On an error the caller still releases the
 * path (path_find's errors leave nothing held).
 */
static int find_le(struct bt_tree *t, struct bt_path *p, uint64_t key,
		   void *rec)
{
	struct bt_level *leaf = &p->lv[0];
	unsigned i;
	int err;

	i = (unsigned)leaf->idx;
	if (i < leaf->nrecs && nd_key(t, leaf->b.data, 0, i) == key) {
		err = 0;
	} else if (i > 0) {
		leaf->idx = (int)i - 1;
		err = 0;
	} else {
		/*
		 * A stale-low separator sent us to a leaf whose keys are all
		 * above key; the answer is the last record of the leaf before.
		 */
		err = path_step(t, p, -1);
		if (err == 1)
			err = -ENOENT;
	}
	if (err)
		return err;
	copy_rec(t, leaf, (unsigned)leaf->idx, rec);
	/* Out-of-order keys send the search astray: an answer above key
	 * made a caller that steps down from it loop for ever. */
	if (t->type->rec_key(rec) > key)
		return -EFSCORRUPTED;
	return 0;
}

int bt_lookup_le(struct bt_tree *t, uint64_t key, void *rec)
{
	struct bt_path p;
	int err;

	err = path_find(t, &p, key, true);
	if (err)
		return err;
	err = find_le(t, &p, key, rec);
	path_release(t, &p);
	return err;
}

/*
 * A leaf a walk stepped into lies inside its parent's bounds, [K[i],
 * K[i+1]): a key below its separator is corruption that a descent for
 * that key would meet in the leaf before, so a walk meets it too.
 */
static int leaf_in_bounds(struct bt_tree *t, const struct bt_path *p)
{
	const struct bt_level *up = &p->lv[1], *leaf = &p->lv[0];

	if (p->top < 1 || leaf->nrecs == 0)
		return 0;
	if (nd_key(t, leaf->b.data, 0, 0) < nd_key(t, up->b.data, 1, up->idx))
		return -EFSCORRUPTED;
	if ((unsigned)up->idx + 1 < up->nrecs &&
	    nd_key(t, leaf->b.data, 0, leaf->nrecs - 1) >=
	    nd_key(t, up->b.data, 1, (unsigned)up->idx + 1))
		return -EFSCORRUPTED;
	return 0;
}

int bt_lookup_le_run(struct bt_tree *t, uint64_t key, bt_visit_fn fn,
		     void *arg)
{
	uint64_t buf[BT_REC_MAX / 8];   /* aligned copy, as bt_iterate's */
	struct bt_path p;
	struct bt_level *leaf = &p.lv[0];
	uint64_t last;
	int err;

	err = path_find(t, &p, key, true);
	if (err)
		return err;
	err = find_le(t, &p, key, buf);
	last = err ? 0 : t->type->rec_key(buf);
	while (!err) {
		err = fn(arg, buf);
		if (err)
			break;
		if ((unsigned)++leaf->idx >= leaf->nrecs) {
			err = path_step(t, &p, 1);
			if (!err)
				err = leaf_in_bounds(t, &p);
			if (err)
				break;
		}
		copy_rec(t, leaf, (unsigned)leaf->idx, buf);
		/* Keys must rise, as bt_iterate checks. */
		if (t->type->rec_key(buf) <= last)
			err = -EFSCORRUPTED;
		last = t->type->rec_key(buf);
	}
	path_release(t, &p);
	return err < 0 ? err : 0;
}

int bt_lookup_ge(struct bt_tree *t, uint64_t key, void *rec)
{
	struct bt_path p;
	struct bt_level *leaf = &p.lv[0];
	int err;

	err = path_find(t, &p, key, true);
	if (err)
		return err;
	if ((unsigned)leaf->idx >= leaf->nrecs) {
		err = path_step(t, &p, 1);
		if (err == 1)
			err = -ENOENT;
	}
	if (!err)
		copy_rec(t, leaf, (unsigned)leaf->idx, rec);
	if (!err && t->type->rec_key(rec) < key) /* out of order, as above */
		err = -EFSCORRUPTED;
	path_release(t, &p);
	return err;
}

int bt_lookup_around(struct bt_tree *t, uint64_t key, void *lo,
		     bool *have_lo, void *hi, bool *have_hi)
{
	struct bt_path p;
	struct bt_level *leaf = &p.lv[0];
	unsigned i;
	int err;

	*have_lo = *have_hi = false;
	err = path_find(t, &p, key, true);
	if (err)
		return err == -ENOENT ? 0 : err;
	i = (unsigned)leaf->idx; /* the first slot >= key */
	if (i > 0) {
		copy_rec(t, leaf, i - 1, lo);
		*have_lo = true;
		/* out of order, as find_le's answers */
		if (t->type->rec_key(lo) >= key)
			err = -EFSCORRUPTED;
	}
	if (!err && i >= leaf->nrecs) {
		err = path_step(t, &p, 1);
		i = 0;
	}
	if (!err) {
		copy_rec(t, leaf, i, hi);
		*have_hi = true;
		if (t->type->rec_key(hi) < key) /* as bt_lookup_ge's */
			err = -EFSCORRUPTED;
	}
	path_release(t, &p);
	if (err == 1) /* no leaf after key's */
		err = 0;
	/* key's leaf starts at or above key: lo is the last record before */
	if (!err && !*have_lo && key > 0) {
		err = bt_lookup_le(t, key - 1, lo);
		*have_lo = !err;
		if (err == -ENOENT)
			err = 0;
	}
	return err;
}

int bt_iterate(struct bt_tree *t, uint64_t start, bt_visit_fn fn, void *arg)
{
	uint64_t buf[BT_REC_MAX / 8];   /* aligned copy the callback may keep */
	struct bt_path p;
	struct bt_level *leaf = &p.lv[0];
	bool have_last = false;
	uint64_t last = 0;
	int err;

	err = tree_ok(t);
	if (err)
		return err;
	if (t->root->levels == 0)
		return 0;
	err = path_descend(t, &p, start, true);
	while (!err) {
		for (unsigned i = (unsigned)leaf->idx; i < leaf->nrecs; i++) {
			uint64_t k = nd_key(t, leaf->b.data, 0, i);
			int ret;

			/* Out-of-order keys would make callers loop or lie. */
			if (have_last && k <= last) {
				err = -EFSCORRUPTED;
				goto out;
			}
			have_last = true;
			last = k;
			copy_rec(t, leaf, i, buf);
			ret = fn(arg, buf);
			if (ret) {
				err = ret < 0 ? ret : 0;
				goto out;
			}
		}
		err = path_step(t, &p, 1);
	}
	if (err == 1)
		err = 0;
out:
	path_release(t, &p);
	return err;
}

/* ---- update ---- */

int bt_update(struct bt_tree *t, const void *rec)
{
	struct bt_path p;
	struct bt_level *leaf = &p.lv[0];
	uint64_t key;
	unsigned i;
	int err;

	err = tree_ok(t);
	if (err)
		return err;
	if (t->root->levels == 0)
		return -ENOENT;
	key = t->type->rec_key(rec);
	err = path_descend(t, &p, key, false);
	if (err)
		return err;
	i = (unsigned)leaf->idx;
	if (i >= leaf->nrecs || nd_key(t, leaf->b.data, 0, i) != key) {
		buf_put(t, &leaf->b);
		return -ENOENT;
	}
	/* Re-get for writing: same node, so no second visit. */
	buf_put(t, &leaf->b);
	err = buf_get(t, p.lv[0].b.blk, 0, 1, &leaf->b);
	if (err)
		return err;
	memcpy(nd_ent(t, leaf->b.data, 0, i), rec, t->type->rec_size);
	buf_put(t, &leaf->b);
	STAT_ADD(t, rec_updates, 1);
	return 0;
}

/* ---- insert ---- */

/*
 * Split a full node while inserting entry e at pos.  The left node keeps
 * the larger half, so both halves hold at least max/2 entries.  With
 * maxrecs 4, inserting 25 into a full leaf:
 *
 *   before:  parent [ 10 | 60 ]            after:  parent [ 10 | 30 | 60 ]
 *                    |                                      |    |
 *            left  [10 20 30 40]                   left [10 20 25]  right [30 40]
 *
 * The caller then inserts (first key of right, right) into the parent,
 * which may split in turn; a split root grows a new root above both.
 */
static void split_insert(const struct bt_tree *t, unsigned level, uint8_t *l,
			 uint8_t *r, unsigned pos, const void *e)
{
	size_t es = ent_size(t, level);
	unsigned n = nd_nrecs(l), nl = (n + 2) / 2;     /* ceil((n+1)/2) */
	unsigned from = pos < nl ? nl - 1 : nl;         /* first entry to move */

	memcpy(nd_ent(t, r, level, 0), nd_ent(t, l, level, from),
	       (n - from) * es);
	nd_set_nrecs(r, n - from);
	nd_set_nrecs(l, from);
	if (pos < nl)
		ent_insert(t, l, level, pos, e);
	else
		ent_insert(t, r, level, pos - nl, e);
}

/* Buffers an insert holds between prepare and release. */
struct ins_plan {
	unsigned nsplit;                    /* levels 0..nsplit-1 split     */
	unsigned wtop;                      /* path levels 0..wtop written  */
	bool grow;                          /* the root splits: new root    */
	struct bt_buf right[BT_MAX_LEVELS]; /* new right half per level     */
	struct bt_buf newroot;
};

/* An empty tree gets a one-record leaf root (no locality hint to give). */
static int insert_first(struct bt_tree *t, const void *rec)
{
	struct bt_buf b = { 0 };
	uint64_t blk;
	int err;

	err = node_alloc(t, 0, &blk);
	if (err)
		return err;
	err = buf_new(t, blk, 0, &b);
	if (err) {
		node_free(t, blk);
		return err;
	}
	ent_insert(t, b.data, 0, 0, rec);
	buf_put(t, &b);
	STAT_ADD(t, node_visits, 1);
	STAT_ADD(t, rec_inserts, 1);
	set_root(t, blk, 1);
	return 0;
}

static void insert_unwind(struct bt_tree *t, struct bt_path *p,
			  struct ins_plan *ip)
{
	path_release(t, p);
	for (unsigned l = 0; l < ip->nsplit; l++) {
		buf_put(t, &ip->right[l]);
		if (ip->right[l].blk)
			node_free(t, ip->right[l].blk);
	}
	buf_put(t, &ip->newroot);
	if (ip->newroot.blk)
		node_free(t, ip->newroot.blk);
}

/*
 * Count the full levels from the leaf up, allocate a right half for each
 * (and a new root if the root itself is full), then take write access to
 * every path node that changes.  Nothing is modified yet.
 */
static int insert_prepare(struct bt_tree *t, struct bt_path *p,
			  struct ins_plan *ip)
{
	unsigned l;
	int err;

	memset(ip, 0, sizeof(*ip));
	while (ip->nsplit <= p->top &&
	       p->lv[ip->nsplit].nrecs >= lvl_max(t, ip->nsplit))
		ip->nsplit++;
	ip->grow = ip->nsplit > p->top;
	if (ip->grow && p->top + 2 > BT_MAX_LEVELS)
		return -EFBIG;

	/* The highest node that changes: a split's parent or a lowered key. */
	ip->wtop = ip->grow ? p->top : ip->nsplit;
	for (l = p->top; l > ip->wtop; l--) {
		if (p->lv[l].low) {
			ip->wtop = l;
			break;
		}
	}

	for (l = 0; l < ip->nsplit; l++) {
		err = node_alloc(t, p->lv[l].b.blk, &ip->right[l].blk);
		if (err)
			goto out_error;
	}
	if (ip->grow) {
		err = node_alloc(t, p->lv[p->top].b.blk, &ip->newroot.blk);
		if (err)
			goto out_error;
	}
	for (l = 0; l <= ip->wtop; l++) {
		err = buf_get(t, p->lv[l].b.blk, l, 1, &p->lv[l].b);
		if (err)
			goto out_error;
	}
	for (l = 0; l < ip->nsplit; l++) {
		err = buf_new(t, ip->right[l].blk, l, &ip->right[l]);
		if (err)
			goto out_error;
	}
	if (ip->grow) {
		err = buf_new(t, ip->newroot.blk, p->top + 1, &ip->newroot);
		if (err)
			goto out_error;
	}
	return 0;

out_error:
	insert_unwind(t, p, ip);
	return err;
}

/* New root over the old root (now the left half) and its new sibling. */
static void grow_root(struct bt_tree *t, struct bt_path *p,
		      struct ins_plan *ip, const uint8_t *right_ent)
{
	uint8_t *nr = ip->newroot.data, *old = p->lv[p->top].b.data;

	nd_set_key(nr, 0, nd_key(t, old, p->top, 0));
	put64(nr + BT_HDR_SIZE + 8, p->lv[p->top].b.blk);
	nd_set_nrecs(nr, 1);
	ent_insert(t, nr, p->top + 1, 1, right_ent);
}

static void insert_apply(struct bt_tree *t, struct bt_path *p,
			 struct ins_plan *ip, const void *rec, uint64_t key)
{
	uint8_t ent[BT_REC_MAX];
	unsigned l, pos = (unsigned)p->lv[0].idx;

	/*
	 * Lower stale separators first: they sit at the slot we descended
	 * through, left of any slot a split below inserts at.
	 */
	for (l = 1; l <= ip->wtop; l++)
		if (p->lv[l].low)
			nd_set_key(p->lv[l].b.data, (unsigned)p->lv[l].idx, key);

	memcpy(ent, rec, t->type->rec_size);
	for (l = 0; l < ip->nsplit; l++) {
		uint8_t *r = ip->right[l].data;

		split_insert(t, l, p->lv[l].b.data, r, pos, ent);
		/* What goes up: (first key of the right half, right half). */
		put64(ent, nd_key(t, r, l, 0));
		put64(ent + 8, ip->right[l].blk);
		pos = l < p->top ? (unsigned)p->lv[l + 1].idx + 1 : 1;
	}
	if (ip->grow)
		grow_root(t, p, ip, ent);
	else
		ent_insert(t, p->lv[ip->nsplit].b.data, ip->nsplit, pos, ent);
}

int bt_insert(struct bt_tree *t, const void *rec)
{
	struct bt_path p;
	struct bt_level *leaf = &p.lv[0];
	struct ins_plan ip;
	uint64_t key;
	bool dup;
	int err;

	err = tree_ok(t);
	if (err)
		return err;
	if (t->root->levels == 0)
		return insert_first(t, rec);
	key = t->type->rec_key(rec);
	err = path_descend(t, &p, key, false);
	if (err)
		return err;
	dup = (unsigned)leaf->idx < leaf->nrecs &&
	      nd_key(t, leaf->b.data, 0, (unsigned)leaf->idx) == key;
	buf_put(t, &leaf->b);
	if (dup)
		return -EEXIST;

	err = insert_prepare(t, &p, &ip);
	if (err)
		return err;
	insert_apply(t, &p, &ip, rec, key);
	path_release(t, &p);
	for (unsigned l = 0; l < ip.nsplit; l++)
		buf_put(t, &ip.right[l]);
	buf_put(t, &ip.newroot);

	STAT_ADD(t, rec_inserts, 1);
	STAT_ADD(t, splits, ip.nsplit);
	STAT_ADD(t, node_visits, ip.nsplit + ip.grow);
	if (ip.grow)
		set_root(t, ip.newroot.blk, p.top + 2);
	return 0;
}

/* ---- delete ---- */

/*
 * How an underfull node is fixed, using the neighbour under the same
 * parent (the left one when there is one).  maxrecs 4, min fill 2; the
 * node N just dropped to one entry:
 *
 * borrow (sibling has more than the minimum): one entry crosses over and
 * the parent's separator for the right-hand node moves with it.
 *
 *   before:  parent [ 10 | 40 ]              after:  parent [ 10 | 30 ]
 *   left [10 20 30]     N [50]               left [10 20]     N [30 50]
 *
 * merge (sibling at the minimum): the right node's entries append to the
 * left node, the right node is freed and its parent entry removed, which
 * may leave the parent underfull in turn.
 *
 *   before:  parent [ 10 | 40 | 70 ]         after:  parent [ 10 | 70 ]
 *   left [10 20]  N [50]  [70 80]            left [10 20 50]  [70 80]
 *
 * An interior root left with one child is freed and the child becomes the
 * root; a leaf root left empty is freed and the tree becomes empty.
 */
enum bt_fix { FIX_NONE, FIX_BORROW_LEFT, FIX_BORROW_RIGHT, FIX_MERGE_LEFT,
	      FIX_MERGE_RIGHT };

struct del_plan {
	enum bt_fix fix[BT_MAX_LEVELS];
	unsigned rmpos[BT_MAX_LEVELS];      /* entry removed at each level  */
	struct bt_buf sib[BT_MAX_LEVELS];   /* sibling used by fix[level]   */
	unsigned hi;                        /* highest level losing an entry */
	bool free_root;                     /* leaf root became empty       */
	bool collapse;                      /* interior root has one child  */
};

static bool fix_is_merge(enum bt_fix f)
{
	return f == FIX_MERGE_LEFT || f == FIX_MERGE_RIGHT;
}

/* Read the neighbour of underfull level l and choose borrow or merge. */
static int delete_pick_fix(struct bt_tree *t, struct bt_path *p, unsigned l,
			   struct del_plan *dp)
{
	struct bt_level *lv = &p->lv[l];
	bool left = lv->lsib != 0;
	uint64_t sblk = left ? lv->lsib : lv->rsib;
	struct bt_buf *s = &dp->sib[l];
	unsigned sn;
	int err;

	if (!sblk)              /* only child: nothing to fix with */
		return 0;
	if (sblk == lv->b.blk)  /* two parent slots share one child */
		return -EFSCORRUPTED;
	err = buf_get(t, sblk, l, 0, s);
	if (err)
		return err;
	STAT_ADD(t, node_visits, 1);
	sn = nd_nrecs(s->data);
	buf_put(t, s);
	if (sn > lvl_min(t, l))
		dp->fix[l] = left ? FIX_BORROW_LEFT : FIX_BORROW_RIGHT;
	else
		dp->fix[l] = left ? FIX_MERGE_LEFT : FIX_MERGE_RIGHT;
	return 0;
}

/* Walk up from the leaf deciding each level's fix, from counts alone. */
static int delete_plan(struct bt_tree *t, struct bt_path *p,
		       struct del_plan *dp)
{
	memset(dp, 0, sizeof(*dp));
	dp->rmpos[0] = (unsigned)p->lv[0].idx;
	for (unsigned l = 0;; l++) {
		unsigned cnt = p->lv[l].nrecs - 1;      /* after the removal */
		int err;

		dp->hi = l;
		if (l == p->top) {
			dp->free_root = l == 0 && cnt == 0;
			dp->collapse = l > 0 && cnt == 1;
			return 0;
		}
		if (cnt >= lvl_min(t, l))
			return 0;
		err = delete_pick_fix(t, p, l, dp);
		if (err || !fix_is_merge(dp->fix[l]))
			return err;
		dp->rmpos[l + 1] = (unsigned)p->lv[l + 1].idx +
				   (dp->fix[l] == FIX_MERGE_RIGHT);
	}
}

/* Take write access to every node the plan touches. */
static int delete_prepare(struct bt_tree *t, struct bt_path *p,
			  struct del_plan *dp)
{
	unsigned l, wtop = dp->hi;
	int err;

	if (dp->hi < BT_MAX_LEVELS - 1 && dp->fix[dp->hi] != FIX_NONE)
		wtop = dp->hi + 1;              /* borrow rewrites a separator */
	for (l = 0; l <= wtop; l++) {
		if (l == p->top && (dp->free_root || dp->collapse))
			break;                  /* freed, not rewritten */
		err = buf_get(t, p->lv[l].b.blk, l, 1, &p->lv[l].b);
		if (err)
			goto out_error;
		if (dp->fix[l] == FIX_NONE)
			continue;
		err = buf_get(t, dp->sib[l].blk, l, 1, &dp->sib[l]);
		if (err)
			goto out_error;
	}
	return 0;

out_error:
	path_release(t, p);
	for (l = 0; l < BT_MAX_LEVELS; l++)
		buf_put(t, &dp->sib[l]);
	return err;
}

static void delete_fix(struct bt_tree *t, struct bt_path *p,
		       struct del_plan *dp, unsigned l)
{
	uint8_t *n = p->lv[l].b.data, *s = dp->sib[l].data;
	uint8_t *par = p->lv[l + 1].b.data;
	unsigned i = (unsigned)p->lv[l + 1].idx;

	switch (dp->fix[l]) {
	case FIX_BORROW_LEFT:
		ent_move(t, l, s, nd_nrecs(s) - 1, 1, n, 0);
		nd_set_key(par, i, nd_key(t, n, l, 0));
		break;
	case FIX_BORROW_RIGHT:
		ent_move(t, l, s, 0, 1, n, nd_nrecs(n));
		nd_set_key(par, i + 1, nd_key(t, s, l, 0));
		break;
	case FIX_MERGE_LEFT:
		ent_move(t, l, n, 0, nd_nrecs(n), s, nd_nrecs(s));
		break;
	case FIX_MERGE_RIGHT:
		ent_move(t, l, s, 0, nd_nrecs(s), n, nd_nrecs(n));
		break;
	case FIX_NONE:
		break;
	}
}

static void delete_apply(struct bt_tree *t, struct bt_path *p,
			 struct del_plan *dp)
{
	for (unsigned l = 0; l <= dp->hi; l++) {
		if (l == p->top && (dp->free_root || dp->collapse))
			break;
		ent_remove(t, p->lv[l].b.data, l, dp->rmpos[l]);
		delete_fix(t, p, dp, l);
	}
}

/* After release: free what dropped out and move the root if needed. */
static int delete_finish(struct bt_tree *t, struct bt_path *p,
			 struct del_plan *dp)
{
	uint64_t survivor = 0;
	int err = 0, e;

	/* Levels below hi merged; hi itself may have borrowed. */
	for (unsigned l = 0; l <= dp->hi; l++) {
		bool left = dp->fix[l] == FIX_MERGE_LEFT;

		if (dp->fix[l] == FIX_NONE)
			continue;
		STAT_ADD(t, merges, 1);
		if (!fix_is_merge(dp->fix[l]))
			continue;
		survivor = left ? dp->sib[l].blk : p->lv[l].b.blk;
		e = node_free(t, left ? p->lv[l].b.blk : dp->sib[l].blk);
		err = err ? err : e;
	}
	if (dp->free_root || dp->collapse) {
		if (dp->free_root)
			set_root(t, 0, 0);
		else
			set_root(t, survivor, p->top);
		e = node_free(t, p->lv[p->top].b.blk);
		err = err ? err : e;
	}
	return err;
}

int bt_delete(struct bt_tree *t, uint64_t key)
{
	struct bt_path p;
	struct bt_level *leaf = &p.lv[0];
	struct del_plan dp;
	bool found;
	int err;

	err = path_find(t, &p, key, false);
	if (err)
		return err;
	found = (unsigned)leaf->idx < leaf->nrecs &&
		nd_key(t, leaf->b.data, 0, (unsigned)leaf->idx) == key;
	buf_put(t, &leaf->b);
	if (!found)
		return -ENOENT;

	err = delete_plan(t, &p, &dp);
	if (err)
		return err;
	err = delete_prepare(t, &p, &dp);
	if (err)
		return err;
	delete_apply(t, &p, &dp);
	path_release(t, &p);
	for (unsigned l = 0; l < BT_MAX_LEVELS; l++)
		buf_put(t, &dp.sib[l]);
	STAT_ADD(t, rec_deletes, 1);
	return delete_finish(t, &p, &dp);
}

/* ---- destroy ---- */

/* Postorder: children first, so a failure never strands a freed parent. */
static int destroy_node(struct bt_tree *t, uint64_t blk, unsigned level)
{
	struct bt_buf b = { 0 };
	int err;

	err = buf_get(t, blk, level, 0, &b);
	if (err)
		return err;
	STAT_ADD(t, node_visits, 1);
	for (unsigned i = 0; level > 0 && i < nd_nrecs(b.data); i++) {
		err = destroy_node(t, nd_child(b.data, i), level - 1);
		if (err)
			break;
	}
	buf_put(t, &b);
	return err ? err : node_free(t, blk);
}

int bt_destroy(struct bt_tree *t)
{
	int err;

	err = tree_ok(t);
	if (err)
		return err;
	if (t->root->levels == 0)
		return 0;
	err = destroy_node(t, t->root->blk, t->root->levels - 1);
	if (err)
		return err;
	set_root(t, 0, 0);
	return 0;
}

/* ---- shape ---- */

static int shape_node(struct bt_tree *t, uint64_t blk, unsigned level,
		      bool is_root, uint64_t most, struct bt_shape *s)
{
	struct bt_buf b = { 0 };
	unsigned n, need;
	int err;

	/* a damaged tree whose nodes share children is walked no further
	 * than a tree of that many nodes */
	if (s->nodes >= most)
		return -EFSCORRUPTED;
	err = buf_get(t, blk, level, 0, &b);
	if (err)
		return err;
	STAT_ADD(t, node_visits, 1);
	n = nd_nrecs(b.data);
	need = is_root ? (level ? 2 : 1) : lvl_min(t, level);
	s->nodes++;
	s->filled = s->filled && n >= need;
	if (level == 0)
		s->recs += n;
	for (unsigned i = 0; level > 0 && i < n && !err; i++)
		err = shape_node(t, nd_child(b.data, i), level - 1, false,
				 most, s);
	buf_put(t, &b);
	return err;
}

int bt_shape(struct bt_tree *t, uint64_t most, struct bt_shape *s)
{
	int err = tree_ok(t);

	*s = (struct bt_shape){ .filled = true };
	if (err || t->root->levels == 0)
		return err;
	return shape_node(t, t->root->blk, t->root->levels - 1, true, most,
			  s);
}

/*
 * Every non-root node holds at least lvl_min entries, so level l has at
 * most (entries of level l-1) / lvl_min nodes, or it is the root's.
 */
uint64_t bt_nodes_most(const struct bt_tree *t, uint64_t nrecs)
{
	uint64_t total = 0, n = nrecs;

	for (unsigned l = 0; l < BT_MAX_LEVELS; l++) {
		uint64_t m = lvl_min(t, l), nodes = m ? n / m : n;

		if (nodes <= 1)
			return total + 1;
		total += nodes;
		n = nodes;
	}
	return UINT64_MAX;      /* deeper than any tree may be */
}

/* ---- audit ---- */

/* Open-addressed set of block numbers (0 is the empty slot). */
/* The set starts in place (most trees an audit walks have a few nodes)
 * and moves to the heap when it outgrows that. */
#define BLKSET_INLINE 64

struct blkset {
	uint64_t *slot;         /* inl, or the heap's */
	size_t cap;             /* power of two */
	size_t used;
	uint64_t inl[BLKSET_INLINE];
};

static void blkset_init(struct blkset *s)
{
	memset(s->inl, 0, sizeof(s->inl));
	s->slot = s->inl;
	s->cap = BLKSET_INLINE;
	s->used = 0;
}

static void blkset_free(struct blkset *s)
{
	if (s->slot != s->inl)
		free(s->slot);
}

static size_t blkset_hash(const struct blkset *s, uint64_t blk)
{
	return (size_t)(blk * 0x9E3779B97F4A7C15ull >> 20) & (s->cap - 1);
}

/* 1 if blk was already present, 0 if added, -ENOMEM. */
static int blkset_add(struct blkset *s, uint64_t blk)
{
	size_t i;

	if (2 * (s->used + 1) > s->cap) {
		size_t ncap = 2 * s->cap;
		uint64_t *old = s->slot, *n = calloc(ncap, sizeof(*n));
		size_t ocap = s->cap;

		if (!n)
			return -ENOMEM;
		s->slot = n;
		s->cap = ncap;
		s->used = 0;
		for (i = 0; i < ocap; i++)
			if (old[i])
				blkset_add(s, old[i]);
		if (old != s->inl)
			free(old);
	}
	for (i = blkset_hash(s, blk); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == blk)
			return 1;
	s->slot[i] = blk;
	s->used++;
	return 0;
}

struct chk {
	struct bt_tree *t;
	bt_block_fn block_fn;
	bt_visit_fn rec_fn;
	void *arg;
	struct blkset seen;
	uint64_t nrecs;
	bool have_last;         /* last: the previous record key, tree-wide */
	uint64_t last;
	char *why;
	size_t whylen;
};

/* Half-open key range a subtree must stay inside. */
struct bounds {
	uint64_t lo, hi;
	bool has_lo, has_hi;
};

__attribute__((format(printf, 2, 3)))
static int chk_fail(struct chk *c, const char *fmt, ...)
{
	va_list ap;

	if (c->why && c->whylen) {
		va_start(ap, fmt);
		vsnprintf(c->why, c->whylen, fmt, ap);
		va_end(ap);
	}
	return -EFSCORRUPTED;
}

static bool in_bounds(const struct bounds *b, uint64_t k)
{
	return (!b->has_lo || k >= b->lo) && (!b->has_hi || k < b->hi);
}

/* Fill limits, key order and key bounds of one validated node. */
static int chk_entries(struct chk *c, uint8_t *d, uint64_t blk,
		       unsigned level, bool is_root, const struct bounds *b)
{
	struct bt_tree *t = c->t;
	unsigned n = nd_nrecs(d);
	unsigned need = is_root ? (level ? 2 : 1) : lvl_min(t, level);

	if (n < need)
		return chk_fail(c, "blk %llu level %u: underfull, %u < %u entries",
				(unsigned long long)blk, level, n, need);
	for (unsigned i = 0; i < n; i++) {
		uint64_t k = nd_key(t, d, level, i);

		if (!in_bounds(b, k))
			return chk_fail(c, "blk %llu level %u: key %llu at %u outside parent bounds",
					(unsigned long long)blk, level,
					(unsigned long long)k, i);
		if (level && i > 0 && k <= nd_key(t, d, level, i - 1))
			return chk_fail(c, "blk %llu level %u: keys not increasing at %u",
					(unsigned long long)blk, level, i);
		if (level)
			continue;
		if (c->have_last && k <= c->last)
			return chk_fail(c, "blk %llu: record key %llu at %u not above previous key %llu",
					(unsigned long long)blk,
					(unsigned long long)k, i,
					(unsigned long long)c->last);
		c->have_last = true;
		c->last = k;
		c->nrecs++;
		if (c->rec_fn) {
			uint64_t rec[BT_REC_MAX / 8]; /* aligned, as bt_iterate's */
			int err;

			memcpy(rec, nd_ent(t, d, 0, i), t->type->rec_size);
			err = c->rec_fn(c->arg, rec);
			if (err)
				return err;
		}
	}
	return 0;
}

static int chk_node(struct chk *c, uint64_t blk, unsigned level, bool is_root,
		    const struct bounds *b)
{
	struct bt_tree *t = c->t;
	struct bt_buf buf = { 0 };
	const char *bad;
	int err;

	if (blk == 0)
		return chk_fail(c, "level %u: null child pointer", level);
	err = blkset_add(&c->seen, blk);
	if (err < 0)
		return err;
	if (err)
		return chk_fail(c, "blk %llu reached twice", (unsigned long long)blk);
	if (c->block_fn) {
		err = c->block_fn(c->arg, blk);
		if (err < 0) {
			chk_fail(c, "blk %llu rejected by caller (%d)",
				 (unsigned long long)blk, err);
			return err;
		}
	}
	err = buf_get_raw(t, blk, 0, &buf);
	if (err) {
		chk_fail(c, "blk %llu level %u: read failed (%d)",
			 (unsigned long long)blk, level, err);
		return err;
	}
	bad = nd_bad(t, buf.data, blk, level);
	if (bad)
		err = chk_fail(c, "blk %llu level %u: %s", (unsigned long long)blk,
			       level, bad);
	if (!err)
		err = chk_entries(c, buf.data, blk, level, is_root, b);
	for (unsigned i = 0; !err && level > 0 && i < nd_nrecs(buf.data); i++) {
		struct bounds cb = *b;

		cb.lo = nd_key(t, buf.data, level, i);
		cb.has_lo = true;
		if (i + 1 < nd_nrecs(buf.data)) {
			cb.hi = nd_key(t, buf.data, level, i + 1);
			cb.has_hi = true;
		}
		err = chk_node(c, nd_child(buf.data, i), level - 1, false, &cb);
	}
	buf_put(t, &buf);
	return err;
}

int bt_check(struct bt_tree *t, bt_block_fn block_fn, void *arg,
	     uint64_t *nrecs_out, char *why, size_t whylen)
{
	return bt_check_recs(t, block_fn, NULL, arg, nrecs_out, why, whylen);
}

int bt_check_recs(struct bt_tree *t, bt_block_fn block_fn, bt_visit_fn rec_fn,
		  void *arg, uint64_t *nrecs_out, char *why, size_t whylen)
{
	struct chk c = { .t = t, .block_fn = block_fn, .rec_fn = rec_fn,
			 .arg = arg, .why = why, .whylen = whylen };
	struct bounds all = { 0 };
	int err;

	if (why && whylen)
		why[0] = '\0';
	if (nrecs_out)
		*nrecs_out = 0;
	err = tree_ok(t);
	if (err) {
		chk_fail(&c, "bad tree (%d): root blk %llu levels %u", err,
			 t && t->root ? (unsigned long long)t->root->blk : 0ull,
			 t && t->root ? t->root->levels : 0);
		return err;
	}
	if (t->root->levels == 0)
		return 0;
	blkset_init(&c.seen);
	err = chk_node(&c, t->root->blk, t->root->levels - 1, true, &all);
	blkset_free(&c.seen);
	if (!err && nrecs_out)
		*nrecs_out = c.nrecs;
	return err;
}

/* ---- dump ---- */

static void dump_node(struct bt_tree *t, FILE *f, uint64_t blk,
		      unsigned level, unsigned depth)
{
	struct bt_buf b = { 0 };
	const char *bad;
	char rbuf[128];
	int err;

	fprintf(f, "%*sL%u blk %llu", (int)depth * 2, "", level,
		(unsigned long long)blk);
	err = buf_get_raw(t, blk, 0, &b);
	if (err) {
		fprintf(f, ": read failed (%d)\n", err);
		return;
	}
	bad = nd_bad(t, b.data, blk, level);
	if (bad) {
		fprintf(f, ": %s (magic %#x level %u nrecs %u)\n", bad,
			get32(b.data + BLKHDR_MAGIC), nd_level(b.data),
			nd_nrecs(b.data));
		buf_put(t, &b);
		return;
	}
	fprintf(f, " n=%u:", nd_nrecs(b.data));
	for (unsigned i = 0; i < nd_nrecs(b.data); i++) {
		uint64_t k = nd_key(t, b.data, level, i);

		if (level || !t->type->rec_print) {
			fprintf(f, " %llu", (unsigned long long)k);
			continue;
		}
		t->type->rec_print(nd_ent(t, b.data, 0, i), rbuf, sizeof(rbuf));
		fprintf(f, " [%s]", rbuf);
	}
	fputc('\n', f);
	for (unsigned i = 0; level > 0 && i < nd_nrecs(b.data); i++)
		dump_node(t, f, nd_child(b.data, i), level - 1, depth + 1);
	buf_put(t, &b);
}

void bt_dump(struct bt_tree *t, void *file)
{
	FILE *f = file;
	int err = tree_ok(t);

	if (!f)
		return;
	if (err) {
		fprintf(f, "btree: unusable (%d)\n", err);
		return;
	}
	fprintf(f, "btree %s owner %llu root %llu levels %u maxrecs %u/%u\n",
		t->type->name ? t->type->name : "?",
		(unsigned long long)t->owner, (unsigned long long)t->root->blk,
		t->root->levels, bt_leaf_max(t), bt_node_max(t));
	if (t->root->levels)
		dump_node(t, f, t->root->blk, t->root->levels - 1, 1);
}
