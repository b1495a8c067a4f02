/*
 * cow.c - the COW fork and end-COW remap: seed path (c), its naive twin
 * beside the optimized version (shared/SEED-PATHS.md, section c).
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

#include <stdlib.h>

#define COW_EXTSIZE   8u     /* blocks a COW allocation reaches ahead  */
#define COW_REMAP_MAX 1024u  /* blocks one transaction may remap       */

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* ---- the in-memory fork ---- */

struct cow_fork *cow_fork(struct ref_fs *fs, const struct ref_inode *ip)
{
	return &fs->rl->forks[ip->ino - 1];
}

static uint64_t ext_end(const struct ref_extent *e)
{
	return e->fileoff + e->len;
}

/* Index of the first extent ending past fb. */
static size_t fork_find(const struct cow_fork *f, uint64_t fb)
{
	size_t lo = 0, hi = f->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ext_end(&f->v[mid]) <= fb)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool fork_joins(const struct ref_fs *fs, const struct ref_extent *l,
		       const struct ref_extent *r)
{
	return ext_end(l) == r->fileoff && l->startblk + l->len == r->startblk &&
	       l->state == r->state && l->len + r->len <= fs->maxext;
}

/* Put e (inside a gap of the fork) at index i, joining its neighbours. */
static int fork_put(struct ref_fs *fs, struct cow_fork *f, size_t i,
		    const struct ref_extent *e)
{
	if (i > 0 && fork_joins(fs, &f->v[i - 1], e)) {
		f->v[i - 1].len += e->len;
		if (i < f->n && fork_joins(fs, &f->v[i - 1], &f->v[i])) {
			f->v[i - 1].len += f->v[i].len;
			memmove(&f->v[i], &f->v[i + 1], (f->n - i - 1) * sizeof(*f->v));
			f->n--;
		}
		return 0;
	}
	if (i < f->n && fork_joins(fs, e, &f->v[i])) {
		f->v[i].fileoff = e->fileoff;
		f->v[i].startblk = e->startblk;
		f->v[i].len += e->len;
		return 0;
	}
	if (f->n == f->cap) {
		size_t c = f->cap ? f->cap * 2 : 8;
		struct ref_extent *p = realloc(f->v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		f->v = p;
		f->cap = c;
	}
	memmove(&f->v[i + 1], &f->v[i], (f->n - i) * sizeof(*f->v));
	f->v[i] = *e;
	f->n++;
	return 0;
}

/*
 * Take [fb, fb+len) out of the fork; a piece of it that was there (one
 * extent at most: callers pass ranges inside one) goes to *got.
 */
static int fork_cut(struct ref_fs *fs, struct cow_fork *f, uint64_t fb,
		    uint64_t len, struct ref_extent *got)
{
	size_t i = fork_find(f, fb);
	struct ref_extent e, tail;

	if (i >= f->n || f->v[i].fileoff >= fb + len)
		return -ENOENT;
	e = f->v[i];
	*got = e;
	got->fileoff = max64(fb, e.fileoff);
	got->len = min64(fb + len, ext_end(&e)) - got->fileoff;
	got->startblk = e.startblk + (got->fileoff - e.fileoff);
	tail = (struct ref_extent){ ext_end(got), got->startblk + got->len,
				    ext_end(&e) - ext_end(got), e.state };
	if (got->fileoff > e.fileoff) {
		f->v[i].len = got->fileoff - e.fileoff;
		i++;
	} else {
		memmove(&f->v[i], &f->v[i + 1], (f->n - i - 1) * sizeof(*f->v));
		f->n--;
	}
	return tail.len ? fork_put(fs, f, i, &tail) : 0;
}

int ref_cow_bmap(struct ref_fs *fs, uint64_t ino, ref_extent_fn fn, void *arg)
{
	struct ref_inode *ip;
	int err = inode_get(fs, ino, &ip);

	if (err || !fs->rl)
		return err ? err : -EOPNOTSUPP;
	for (size_t i = 0; i < cow_fork(fs, ip)->n; i++) {
		struct ref_extent e = cow_fork(fs, ip)->v[i];

		err = fn(arg, &e);
		if (err)
			return err < 0 ? err : 0;
	}
	return 0;
}

/* ---- the staging tree ---- */

static int stage_add(struct ref_fs *fs, uint64_t start, uint64_t len)
{
	uint8_t rec[16] = { 0 };
	struct bt_tree t;
	int err;

	put64(rec, start);
	put32(rec + 8, (uint32_t)len);
	stage_tree(fs, &t);
	err = bt_insert(&t, rec);
	return err ? err : reflink_log_roots(fs);
}

/* Blocks [start, start+len) leave the staging tree (records split). */
static int stage_del(struct ref_fs *fs, uint64_t start, uint64_t len)
{
	uint64_t end = start + len;
	struct bt_tree t;
	int err = 0;

	stage_tree(fs, &t);
	while (!err && start < end) {
		uint8_t rec[16];
		uint64_t rs, re;

		err = bt_lookup_le(&t, start, rec);
		rs = get64(rec);
		re = rs + get32(rec + 8);
		if (!err && re <= start) {
			ref_report(fs, "COW staging block %llu is not in the "
				   "staging tree", (unsigned long long)start);
			return -EFSCORRUPTED;
		}
		/* the head keeps the record (its key); a tail goes in before
		 * the record goes out, so the tree never empties in between */
		if (!err && rs < start) {
			put32(rec + 8, (uint32_t)(start - rs));
			err = bt_update(&t, rec);
		}
		if (!err && re > end) {
			put64(rec, end);
			put32(rec + 8, (uint32_t)(re - end));
			err = bt_insert(&t, rec);
		}
		if (!err && rs >= start)
			err = bt_delete(&t, rs);
		start = re;
	}
	return err ? err : reflink_log_roots(fs);
}

/* ---- the write side ---- */

int cow_needed(struct ref_fs *fs, struct ref_inode *ip,
	       const struct ref_extent *e, uint64_t fb, uint64_t *n)
{
	uint64_t blk = e->startblk + (fb - e->fileoff), ss, sl;
	int err;

	if ((ip->flags & REF_IF_COW) && e->state == 0)
		return 1;
	err = reflink_find_shared(fs, blk, *n, &ss, &sl);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	if (ss == blk) {
		*n = sl;
		return 1;
	}
	*n = ss - blk;
	return 0;
}

/*
 * Staging for file block fb, at most *n blocks: the fork's unwritten
 * extent holding fb, or a new allocation reaching COW_EXTSIZE-aligned
 * blocks ahead (never into the next fork extent).  *n is clipped.
 */
static int get_staging(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		       uint64_t *n, uint64_t goal, struct ref_extent *s)
{
	struct cow_fork *f = cow_fork(fs, ip);
	size_t i = fork_find(f, fb);
	uint64_t want, blk, got;
	int err;

	if (i < f->n && f->v[i].fileoff <= fb) {
		*s = f->v[i];
		if (s->state != REF_EXT_UNWRITTEN) {
			ref_report(fs, "inode %llu: COW fork block %llu written "
				   "twice before end-COW",
				   (unsigned long long)ip->ino,
				   (unsigned long long)fb);
			return -EFSCORRUPTED;
		}
		*n = min64(*n, ext_end(s) - fb);
		return 0;
	}
	want = max64(fb + *n, (fb / COW_EXTSIZE + 1) * COW_EXTSIZE) - fb;
	if (i < f->n)
		want = min64(want, f->v[i].fileoff - fb);
	if (i > 0 && ext_end(&f->v[i - 1]) == fb)
		goal = f->v[i - 1].startblk + f->v[i - 1].len;
	err = alloc_data(fs, goal, want, &blk, &got);
	if (err == -ENOSPC && alloc_has_busy(fs)) {
		err = tx_commit(fs);
		if (!err && alloc_has_busy(fs))
			err = journal_checkpoint(fs);
		if (!err)
			err = alloc_data(fs, goal, want, &blk, &got);
	}
	if (!err)
		err = stage_add(fs, blk, got);
	if (err)
		return err;
	fs->ctr.cow_blocks_staged += got;
	*s = (struct ref_extent){ fb, blk, got, REF_EXT_UNWRITTEN };
	*n = min64(*n, got);
	return fork_put(fs, f, i, s);
}

/*
 * One block of staging at device block dst: the old block's bytes (old:
 * its device block; zeroes when it is unwritten) with [a, b) of it
 * replaced by src (NULL: zeroes).
 */
static int merge_block(struct ref_fs *fs, struct ref_inode *ip, uint64_t old,
		       bool unwritten, uint64_t dst, uint64_t a, uint64_t b,
		       const uint8_t *src)
{
	int err = 0;

	if (unwritten)
		memset(fs->rl->bounce, 0, fs->bs);
	else
		err = fdata_read(fs, ip, old << fs->bshift, fs->rl->bounce, fs->bs);
	if (err)
		return err;
	if (src)
		memcpy(fs->rl->bounce + a, src, b - a);
	else
		memset(fs->rl->bounce + a, 0, b - a);
	fs->ctr.data_bytes_written += fs->bs;
	return fdata_write(fs, ip, dst << fs->bshift, fs->rl->bounce, fs->bs);
}

int cow_write(struct ref_fs *fs, struct ref_inode *ip,
	      const struct ref_extent *e, uint64_t fb, uint64_t *n,
	      const uint8_t *src, uint64_t pos, uint64_t end)
{
	uint64_t oldblk = e->startblk + (fb - e->fileoff);
	bool unw = e->state != 0;
	uint64_t mask = fs->bs - 1, first = fb << fs->bshift;
	uint64_t wend, last, m0, m1, blk;
	struct ref_extent s;
	int err;

	if (!fs->rl->bounce) {
		fs->rl->bounce = malloc(fs->bs);
		if (!fs->rl->bounce)
			return -ENOMEM;
	}
	err = get_staging(fs, ip, fb, n, oldblk, &s);
	if (err)
		return err;
	wend = min64(end, (fb + *n) << fs->bshift);
	last = (wend - 1) >> fs->bshift;
	blk = s.startblk + (fb - s.fileoff);
	/*
	 *   blocks  |  fb  | m0 ...... m1 | last |
	 *   bytes      pos^                  ^wend
	 * partial blocks at either end take the old bytes around the new.
	 */
	m0 = (pos & mask) ? fb + 1 : fb;
	m1 = (wend & mask) ? last : last + 1;
	if ((pos & mask) || (fb == last && (wend & mask)))
		err = merge_block(fs, ip, oldblk, unw, blk, pos - first,
				  min64(wend, first + fs->bs) - first, src);
	if (!err && m1 > m0) {
		uint64_t dev = (blk + (m0 - fb)) << fs->bshift;
		uint64_t len = (m1 - m0) << fs->bshift;

		fs->ctr.data_bytes_written += len;
		err = src ? fdata_write(fs, ip, dev, src + ((m0 << fs->bshift) - pos),
					len) :
			    fdata_zero(fs, ip, dev, len);
	}
	if (!err && last > fb && (wend & mask))
		err = merge_block(fs, ip, oldblk + (last - fb), unw,
				  blk + (last - fb),
				  0, wend - (last << fs->bshift),
				  src ? src + ((last << fs->bshift) - pos) : NULL);
	if (err)
		return err;
	/* the staging now holds data: end-COW remaps it */
	err = fork_cut(fs, cow_fork(fs, ip), fb, *n, &s);
	if (!err) {
		s.state = 0;
		err = fork_put(fs, cow_fork(fs, ip),
			       fork_find(cow_fork(fs, ip), fb), &s);
	}
	return err ? err : tx_maybe_roll(fs);
}

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
	*found = (left ? ext_end(e) : e->fileoff) == fb;
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
	if (err || !rfound || !fork_joins(fs, &l, &r))
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
		err = stage_del(fs, c->startblk, c->len);
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
	struct ref_extent tail = { ext_end(c), old + c->len,
				   ext_end(g) - ext_end(c), g->state };
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
	lc = lc && fork_joins(fs, &l, &mid);
	if (!err && !tail.len)
		err = neighbour(&t, ext_end(g), false, &r, &rc);
	rc = rc && fork_joins(fs, &mid, &r) &&
	     (!lc || l.len + mid.len + r.len <= fs->maxext);
	if (!err)
		err = stage_del(fs, c->startblk, c->len);
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
		err = join_at(fs, ip, &t, ext_end(g));
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
	int err = fork_cut(fs, cow_fork(fs, ip), fb, len, &c);

	if (!err && remap == remap_inplace) {
		err = bmap_lookup(fs, ip, ext_end(&c) - 1, &g);
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
		size_t i = fork_find(f, fb);
		uint64_t a, n;
		int err;

		while (i < f->n && f->v[i].fileoff < end && f->v[i].state != 0)
			i++; /* unwritten staging is never remapped */
		if (i >= f->n || f->v[i].fileoff >= end)
			return 0;
		a = max64(fb, f->v[i].fileoff);
		n = min64(end, ext_end(&f->v[i])) - a;
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

int cow_cancel(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
	       uint64_t len)
{
	struct ref_extent c;
	int err;

	if (!fs->rl)
		return 0;
	err = cow_end(fs, ip, fb, len);
	while (!err && (err = fork_cut(fs, cow_fork(fs, ip), fb, len, &c)) == 0) {
		err = stage_del(fs, c.startblk, c.len);
		if (!err)
			err = alloc_free(fs, c.startblk, c.len);
	}
	return err == -ENOENT ? 0 : err;
}

int cow_zero_written(struct ref_fs *fs, struct ref_inode *ip,
		     const struct ref_extent *e, uint64_t from, uint64_t to)
{
	while (from < to) {
		uint64_t fb = from >> fs->bshift;
		uint64_t n = ((to - 1) >> fs->bshift) - fb + 1;
		uint64_t old = e->startblk + (fb - e->fileoff), bto;
		int cow = cow_needed(fs, ip, e, fb, &n), err = cow < 0 ? cow : 0;

		if (cow > 0) {
			err = cow_write(fs, ip, e, fb, &n, NULL, from, to);
			if (!err)
				err = cow_end(fs, ip, fb, n);
		}
		bto = min64(to, (fb + n) << fs->bshift);
		if (cow == 0) {
			fs->ctr.bytes_zeroed += bto - from;
			err = fdata_zero(fs, ip, (old << fs->bshift) +
					 (from & (fs->bs - 1)), bto - from);
		}
		if (err < 0)
			return err;
		from = bto;
	}
	return 0;
}
