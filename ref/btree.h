/*
 * btree.h - a generic on-disk B+tree of fixed-size records keyed by u64.
 *
 * Used for the per-inode data-fork extent map (keyed by file block) and,
 * later, the refcount tree (keyed by device block).  The tree does not do
 * I/O itself: it reaches blocks through struct bt_store, which the engine
 * implements on its buffer cache and journal, and unit tests implement on
 * a plain array.  Keys are unique.
 *
 * Node layout (one block, little-endian):
 *
 *   +-----------+--------+--------+------+--------------------------------+
 *   | blkhdr 24 | level  | nrecs  | pad  | leaf:  nrecs x rec_size bytes  |
 *   | (ondisk.h)| u16    | u16    | u32  | node:  nrecs x (u64 key,       |
 *   |           |        |        |      |                 u64 child)     |
 *   +-----------+--------+--------+------+--------------------------------+
 *
 * level 0 is a leaf.  An interior entry's key is the smallest key in its
 * child's subtree (the first entry's key may be stale-low after deletes; it
 * is only ever <= every key below it).  Every node but the root holds at
 * least maxrecs/2 entries; an interior root holds at least 2.  maxrecs is
 * the geometry knob (tests use 4) capped by what fits in a block.
 */
#ifndef FSORACLE_REF_BTREE_H
#define FSORACLE_REF_BTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BT_HDR_SIZE 32          /* blkhdr (24) + level, nrecs, pad */
#define BT_MAX_LEVELS 16

/* Where a tree's root lives (inside an inode, or the superblock). */
struct bt_root {
	uint64_t blk;    /* root block, 0 = empty tree */
	uint32_t levels; /* 0 = empty, 1 = root is a leaf */
};

/* Work counters; the engine points these at its own counter block. */
struct bt_stats {
	uint64_t node_visits;  /* node reads or modifies during a walk   */
	uint64_t rec_inserts;
	uint64_t rec_deletes;
	uint64_t rec_updates;
	uint64_t splits;
	uint64_t merges;       /* merges and borrows from a sibling      */
	uint64_t node_allocs;
	uint64_t node_frees;
};

/*
 * Block access.  get() returns a pointer to the block's bytes, valid until
 * put(); with write != 0 the block is also marked dirty (joined to the
 * running transaction).  get() of a fresh block from alloc() with write=1
 * returns zeroed memory.  All return 0 or -errno; get() returns
 * -EUCLEAN (EFSCORRUPTED) when the stored block fails its checksum.
 */
struct bt_store {
	int  (*get)(void *ctx, uint64_t blk, int write, void **data, void **handle);
	void (*put)(void *ctx, void *handle);
	int  (*alloc)(void *ctx, uint64_t near, uint64_t *blk);
	int  (*free)(void *ctx, uint64_t blk);
	void *ctx;
};

/* What kind of tree: record size, key extraction, magic number. */
struct bt_type {
	const char *name;
	uint32_t magic;
	uint16_t rec_size;                  /* bytes per leaf record (<= 64) */
	uint64_t (*rec_key)(const void *rec);
	/* optional: format one record for bt_dump() */
	void (*rec_print)(const void *rec, char *buf, size_t len);
};

struct bt_tree {
	const struct bt_type *type;
	const struct bt_store *store;
	struct bt_root *root;     /* updated in place; caller persists it */
	uint32_t blocksize;
	uint32_t maxrecs;         /* 0 = as many as fit in a block */
	uint64_t owner;           /* written to / checked in every node */
	struct bt_stats *stats;   /* may be NULL */
	/* called after root->blk / root->levels changed (may be NULL) */
	void (*root_changed)(struct bt_tree *t);
	void *priv;               /* for root_changed */
};

/* Effective per-node capacities for this tree (leaf, interior). */
uint32_t bt_leaf_max(const struct bt_tree *t);
uint32_t bt_node_max(const struct bt_tree *t);

/*
 * Lookups.  le: the record with the largest key <= key.  ge: the smallest
 * key >= key.  Return 0 and copy the record, or -ENOENT, or -errno.
 */
int bt_lookup_le(struct bt_tree *t, uint64_t key, void *rec);
int bt_lookup_ge(struct bt_tree *t, uint64_t key, void *rec);

/*
 * bt_lookup_le's answer and then each record after it in key order, to
 * fn (bt_iterate's callback, below), until fn returns nonzero (1: stop,
 * -errno: the return) or the tree ends: one descent for a reader that
 * takes the records continuing its answer.  0, -ENOENT (no record <=
 * key; fn not called), or -errno: -EFSCORRUPTED for keys that do not
 * rise, and for a leaf it steps into whose keys lie outside its parent's
 * bounds (a key below its separator, which a descent for that key would
 * meet in the leaf before).
 */
typedef int (*bt_visit_fn)(void *arg, const void *rec);
int bt_lookup_le_run(struct bt_tree *t, uint64_t key, bt_visit_fn fn,
		     void *arg);

/*
 * Both neighbours of key: the record with the largest key below key into
 * lo and the one with the smallest key >= key into hi, each only where
 * there is one (*have_lo, *have_hi).  One descent when key's leaf holds a
 * record below key (an insert's merge checks), two when it does not.
 * 0 or -errno (on an error neither record is to be used).
 */
int bt_lookup_around(struct bt_tree *t, uint64_t key, void *lo,
		     bool *have_lo, void *hi, bool *have_hi);

/* Insert a record whose key is not present (-EEXIST otherwise). */
int bt_insert(struct bt_tree *t, const void *rec);
/* Replace the record with the same key (-ENOENT if absent). */
int bt_update(struct bt_tree *t, const void *rec);
/* Delete the record with this key (-ENOENT if absent). */
int bt_delete(struct bt_tree *t, uint64_t key);

/*
 * Visit records with key >= start in key order.  The callback returns 0 to
 * go on, 1 to stop (bt_iterate then returns 0), or -errno to abort.  The
 * tree must not be modified during the walk.
 */
int bt_iterate(struct bt_tree *t, uint64_t start, bt_visit_fn fn, void *arg);

/* Free every node (records are not visited); leaves an empty tree. */
int bt_destroy(struct bt_tree *t);

/*
 * The tree's shape, read node by node: nodes, records, and whether every
 * node holds the entries bt_check asks (a non-root node the fill a delete
 * leaves, an interior root two).  A walk past `most` nodes is
 * -EFSCORRUPTED (EUCLEAN): a damaged tree whose nodes share children would
 * otherwise be walked once for every path to them.
 */
struct bt_shape {
	uint64_t nodes, recs;
	bool filled;
};
int bt_shape(struct bt_tree *t, uint64_t most, struct bt_shape *s);

/* The most nodes a tree of nrecs records can have while every node
 * holds what bt_check asks (UINT64_MAX: more levels than a tree has). */
uint64_t bt_nodes_most(const struct bt_tree *t, uint64_t nrecs);

/*
 * Audit from scratch: magic, owner, blkno, levels consistent, keys strictly
 * increasing across the whole tree, interior keys bound their subtrees,
 * fill limits, no block reached twice.  block_fn (may be NULL) is called
 * for every node block so fsck can account for it.  Returns 0, or
 * -EUCLEAN with a one-line reason in why.
 */
typedef int (*bt_block_fn)(void *arg, uint64_t blk);
int bt_check(struct bt_tree *t, bt_block_fn block_fn, void *arg,
	     uint64_t *nrecs_out, char *why, size_t whylen);

/*
 * bt_check, handing each leaf record to rec_fn (a bt_visit_fn) in
 * key order once its node and every key before it have passed: the
 * records of a tree the walk has not finished, so a caller that wants
 * only a sound tree's records keeps them until it returns 0.  One walk
 * for an audit that checks the tree and then reads its records.  rec_fn
 * returns 0 to go on or -errno, which ends the walk and is returned.
 */
int bt_check_recs(struct bt_tree *t, bt_block_fn block_fn, bt_visit_fn rec_fn,
		  void *arg, uint64_t *nrecs_out, char *why, size_t whylen);

/* Print the tree shape to a FILE* (passed as void* to keep stdio out). */
void bt_dump(struct bt_tree *t, void *file);

#endif
