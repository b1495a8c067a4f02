/*
 * cow.c - end-COW remap: seed path (c), its naive twin beside the
 * optimized version (shared/SEED-PATHS.md, section c).  The COW fork,
 * the staging tree and the write side that fill it are in cow_fork.c.
 *
 * A write to a shared block, or to any written block of an always-COW
 * file, never touches the old block.  It goes to staging blocks from the
 * inode's COW fork (allocated on demand, COW_EXTSIZE blocks at a time, so
 * the fork may hold unwritten preallocations), the old bytes around the
 * written ones copied in; when the write completes, end-COW remaps every
 * written staging extent C into the data fork, where the old mapping G
 * loses an owner (freed at zero):
 *
 *   data fork   |<--------------- G, blocks g ----------------->|
 *   COW fork                 |<--- C, blocks c --->|
 *   after       |<- G: g ... ->|<- c, written ---->|<- G: g + k ->|
 *                 head keeps G's old blocks and state; so does the tail
 *
 * Naive (upstream): unmap C's range from the data fork (records deleted
 * or split, owners dropped), then map C in as a separate deferred step,
 * merging with its neighbours: one intent and one transaction roll per
 * extent, counted in cow_intents and cow_tx_rolls.  This engine has no
 * intent log to replay a half-done remap, so both steps share one
 * transaction (what log recovery of the deferred chain guarantees on
 * XFS); the roll is the cost the counters measure.
 *
 * Optimized: rewrite G's record in place, as unwritten conversion does
 * (one record: update; flush with one end: update + insert; inside:
 * update + two inserts), then merge each moved edge with its neighbour.
 * It falls back to the naive path when G is a hole or unwritten, when C
 * starts before G (it spans two mappings), when C is longer than one
 * transaction may remap (COW_REMAP_MAX), or when forced
 * (PATH_FALLBACK(fs, REF_PATH_COW_END)).  remap_one is the one place
 * that reads the naive=cow_end switch and decides the fallback.
 *
 * Staging blocks are allocated in the bitmap and listed in the staging
 * tree in the same transaction, and leave it in the transaction that
 * remaps them, so a cut anywhere leaves them either listed (freed at the
 * next mount) or mapped.  Unwritten staging is never remapped.
 */
#include "ref/reflink.h"
#include "ref/plant.h"

#define COW_REMAP_MAX 1024u  /* blocks one transaction may remap       */

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* ---- end-COW ---- */

/*
 * The two twins have one signature: remap the written staging extent C
 * (already cut out of the COW fork) into the data fork.  g is the data
 * fork's written mapping G holding all of C, which the optimized twin
 * rewrites; the naive twin needs no G (the dispatcher does not look one
 * up for it, and passes NULL).
 */
typedef int remap_fn(struct ref_fs *fs, struct ref_inode *ip,
		     const struct ref_extent *c, const struct ref_extent *g);

static int put_xrec(struct bt_tree *t, const struct ref_extent *e, bool fresh)
{
	uint8_t rec[XR_SIZE];

	xrec_encode(rec, e);
	return fresh ? bt_insert(t, rec) : bt_update(t, rec);
}

/* A record in or out of the data fork; nextents follows what happened. */
static int xrec_insert(struct bt_tree *t, struct ref_inode *ip,
		       const struct ref_extent *e)
{
	int err = put_xrec(t, e, true);

	if (!err)
		ip->nextents++;
	return err;
}

static int xrec_delete(struct bt_tree *t, struct ref_inode *ip, uint64_t fb)
{
	int err = bt_delete(t, fb);

	if (!err)
		ip->nextents--;
	return err;
}

/*
 * The record ending at fb (left) or starting at fb (right): *found says
 * whether there is one; the return value is 0 or a B+tree error.
 */
static int neighbour(struct bt_tree *t, uint64_t fb, bool left,
		     struct ref_extent *e, bool *found)
{
	uint8_t rec[XR_SIZE];
	int err;

	*found = false;
	if (left && fb == 0)
		return 0;
	err = left ? bt_lookup_le(t, fb - 1, rec) : bt_lookup_ge(t, fb, rec);
	if (err)
		return err == -ENOENT ? 0 : err;
	xrec_decode(rec, e);
	*found = (left ? cow_ext_end(e) : e->fileoff) == fb;
	return 0;
}

/* Merge the data-fork records meeting at file block fb if they join. */
static int join_at(struct ref_fs *fs, struct ref_inode *ip, struct bt_tree *t,
		   uint64_t fb)
{
	struct ref_extent l, r;
	bool lfound, rfound = false;
	int err = neighbour(t, fb, true, &l, &lfound);

	if (!err && lfound)
		err = neighbour(t, fb, false, &r, &rfound);
	if (err || !rfound || !cow_joins(fs, &l, &r))
		return err;
	err = xrec_delete(t, ip, fb);
	l.len += r.len;
	return err ? err : put_xrec(t, &l, false);
}

/*
 * The naive twin: unmap C's range (owners dropped, blocks freed at
 * zero), take C out of the staging tree, then the deferred map of C,
 * merging with its neighbours.
 */
static int remap_naive(struct ref_fs *fs, struct ref_inode *ip,
		       const struct ref_extent *c, const struct ref_extent *g)
{
	struct ref_extent m = *c;
	int err = bmap_unmap(fs, ip, c->fileoff, c->len, true);

	(void)g; /* the unmap finds whatever C covers */
	if (!err)
		err = cow_stage_del(fs, c->startblk, c->len);
	if (err)
		return err;
	fs->ctr.cow_intents++;   /* the map intent ...            */
	fs->ctr.cow_tx_rolls++;  /* ... and the roll finishing it */
	m.state = 0;
	return bmap_map(fs, ip, &m);
}

/*
 * The optimized twin, C inside the written mapping G: G's record is
 * rewritten in place, the head and tail keeping G's old blocks and
 * state, and C joins a neighbour it is contiguous with directly (as
 * unwritten conversion's left/right filling and contiguity cases do),
 * never inserted to be merged away.  What it does to the records, C
 * inside G (the general case; L and R are G's neighbours, g the device
 * blocks of G, c those of C, k = C's offset in G plus C's length):
 *
 *   data fork   ... |L|<------------- G: g, written ------------->|R| ...
 *   COW fork                    |<--- C: c --->|
 *
 *   1. G's record is updated to the head:
 *               ... |L|<- G: g ->|                                |R| ...
 *   2. C is inserted, written, at c:
 *               ... |L|<- G: g ->|<--- C: c --->|                 |R| ...
 *   3. the tail is inserted, keeping G's state at g + k:
 *               ... |L|<- G: g ->|<--- C: c --->|<- tail: g + k ->|R| ...
 *   4. the old blocks under C, g + (C's offset in G) for C's length,
 *      lose an owner (freed at zero); C leaves the staging tree.
 *
 * The other shapes do less, and C joins L or R where the device blocks
 * continue:
 *
 *   C = G         |C|          update G (or: extend L / R, delete G)
 *   flush left    |C|tail|     update G to C, insert tail
 *                              (C joins L: extend L, delete G, insert tail)
 *   flush right   |head|C|     update G to head, insert C
 *                              (C joins R: ..., delete R, insert C + R)
 *   inside        |head|C|tail|  update G to head, insert C and tail
 *
 * The neighbours join as bmap_map joins them: left first, and right too
 * only while the whole stays within maxext; then a shortened head or
 * tail may join its own outer neighbour (join_at).  ip->nextents moves
 * with each insert and delete that succeeded, and only then.
 */
static int remap_inplace(struct ref_fs *fs, struct ref_inode *ip,
			 const struct ref_extent *c, const struct ref_extent *g)
{
	uint64_t old = g->startblk + (c->fileoff - g->fileoff);
	struct ref_extent head = *g, mid = { c->fileoff, c->startblk, c->len, 0 };
	struct ref_extent tail = { cow_ext_end(c), old + c->len,
				   cow_ext_end(g) - cow_ext_end(c), g->state };
	struct ref_extent l, r;
	bool has_head = c->fileoff > g->fileoff, lc = false, rc = false;
	struct bt_tree t;
	int err = 0;

	bmap_tree(fs, ip, &t);
#ifdef FSO_PLANTED
	/* planted (plant.h): the tail counted from G's start, not C's */
	if (PLANTED(REF_PATH_COW_END))
		tail.startblk = g->startblk + c->len;
#endif
	head.len = c->fileoff - g->fileoff;
	if (!has_head)
		err = neighbour(&t, g->fileoff, true, &l, &lc);
	lc = lc && cow_joins(fs, &l, &mid);
	if (!err && !tail.len)
		err = neighbour(&t, cow_ext_end(g), false, &r, &rc);
	rc = rc && cow_joins(fs, &mid, &r) &&
	     (!lc || l.len + mid.len + r.len <= fs->maxext);
	if (!err)
		err = cow_stage_del(fs, c->startblk, c->len);
	if (!err && lc) {              /* C joins L; G goes */
		l.len += mid.len + (rc ? r.len : 0);
		err = put_xrec(&t, &l, false);
		if (!err)
			err = xrec_delete(&t, ip, g->fileoff);
	} else if (!err && has_head) { /* G keeps its head */
		err = put_xrec(&t, &head, false);
		mid.len += rc ? r.len : 0;
		if (!err)
			err = xrec_insert(&t, ip, &mid);
	} else if (!err) {             /* G becomes C */
		mid.len += rc ? r.len : 0;
		err = put_xrec(&t, &mid, false);
	}
	if (!err && rc)
		err = xrec_delete(&t, ip, r.fileoff);
	if (!err && tail.len)
		err = xrec_insert(&t, ip, &tail);
	/* a shortened head or tail may join its outer neighbour (maxext) */
	if (!err && tail.len)
		err = join_at(fs, ip, &t, cow_ext_end(g));
	if (!err && has_head)
		err = join_at(fs, ip, &t, g->fileoff);
	return err ? err : alloc_free_file(fs, ip, old, c->len);
}

/*
 * The dispatcher, the one place that picks a twin: remap [fb, fb+len)
 * of the written COW extent holding it.  naive=cow_end takes the naive
 * twin.  Otherwise G, the data-fork mapping holding C's last block, is
 * looked up, and the optimized twin falls back to the naive one when
 *
 *   G is not written (a hole or unwritten: nothing to rewrite in place),
 *   G starts after C (C spans two mappings),
 *   C is longer than one transaction may remap (too_long: COW_REMAP_MAX),
 *   or fallback=cow_end forces it;
 *
 * each fallback counts cow_fallbacks.  The record work either twin does
 * is counted in cow_record_inserts / _deletes / _updates.
 */
static int remap_one(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t len, bool too_long)
{
	struct bt_stats before = fs->ctr.bt;
	remap_fn *remap = PATH_NAIVE(fs, REF_PATH_COW_END) ? remap_naive :
			  remap_inplace;
	struct ref_extent c, g;
	int err = cow_fork_cut(fs, cow_fork(fs, ip), fb, len, &c);

	if (!err && remap == remap_inplace) {
		err = bmap_lookup(fs, ip, cow_ext_end(&c) - 1, &g);
		if (!err && (g.state != 0 || g.fileoff > c.fileoff || too_long ||
			     PATH_FALLBACK(fs, REF_PATH_COW_END))) {
			fs->ctr.cow_fallbacks++;
			remap = remap_naive;
		}
	}
	if (!err)
		err = remap(fs, ip, &c, remap == remap_inplace ? &g : NULL);
	fs->ctr.cow_record_inserts += fs->ctr.bt.rec_inserts - before.rec_inserts;
	fs->ctr.cow_record_deletes += fs->ctr.bt.rec_deletes - before.rec_deletes;
	fs->ctr.cow_record_updates += fs->ctr.bt.rec_updates - before.rec_updates;
	fs->ctr.cow_remaps += !err;
	return err;
}

int cow_end(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb, uint64_t len)
{
	struct cow_fork *f = cow_fork(fs, ip);
	uint64_t end = fb + len;

	for (;;) {
		size_t i = cow_fork_find(f, fb);
		uint64_t a, n;
		int err;

		while (i < f->n && f->v[i].fileoff < end && f->v[i].state != 0)
			i++; /* unwritten staging is never remapped */
		if (i >= f->n || f->v[i].fileoff >= end)
			return 0;
		a = max64(fb, f->v[i].fileoff);
		n = min64(end, cow_ext_end(&f->v[i])) - a;
		err = remap_one(fs, ip, a, min64(n, COW_REMAP_MAX),
				n > COW_REMAP_MAX);
		if (!err)
			err = inode_log(fs, ip);
		if (!err)
			err = tx_maybe_roll(fs);
		if (err)
			return err;
		fb = a + min64(n, COW_REMAP_MAX);
	}
}
