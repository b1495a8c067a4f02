/*
 * bmap.c - the data-fork extent map: file blocks -> device blocks.
 *
 * Records are {fileoff, startblk, len, state}, kept in the inode's B+tree
 * keyed by fileoff.  Invariants (checked by fsck):
 *   - records never overlap and 1 <= len <= maxext;
 *   - two neighbours that are adjacent in the file and on the device and
 *     share a state are always merged (unless the merge would exceed
 *     maxext), so the record list is canonical: equal mappings give equal
 *     lists, whatever history produced them.
 *
 * Three primitives build everything else:
 *   bmap_map      put a mapping into a hole, merging with its neighbours
 *   bmap_unmap    punch a range out, splitting records at its edges
 *   bmap_convert  change the state of a mapped range, record by record
 *                 in place
 * Each merges what a split left mergeable (merge_at), so the list stays
 * canonical with a small maxext too.
 *
 * Unmapping [a, b) from a record that straddles both edges:
 *
 *     before:  |<------------------ r ------------------>|
 *                        a                  b
 *     after:   |<-- r' -->|      (freed)    |<-- new -->|
 *              r.off..a    blocks a..b       b..r.end, startblk + (b - r.off)
 *
 * A realtime file maps every block of every rt extent it touches, each rt
 * extent onto one aligned rt extent of the realtime device; its records
 * may split an rt extent by state (written/unwritten is per block).  So
 * a realtime unmap that frees covers whole rt extents, frees each rt
 * extent with its last record, and never commits with an rt extent half
 * unmapped; shifts move whole rt extents between commits likewise.
 */
#include "ref/ref_internal.h"

#include <stdio.h>

static uint64_t xrec_key(const void *rec)
{
	return get64((const uint8_t *)rec + XR_OFF);
}

static void xrec_print(const void *rec, char *buf, size_t len)
{
	struct ref_extent e;

	xrec_decode(rec, &e);
	if (ext_compressed(&e))
		snprintf(buf, len, "[%llu+%llu -> %llu+%llu compressed]",
			 (unsigned long long)e.fileoff, (unsigned long long)e.len,
			 (unsigned long long)e.startblk,
			 (unsigned long long)ext_plen(&e));
	else
		snprintf(buf, len, "[%llu+%llu -> %llu%s]",
			 (unsigned long long)e.fileoff, (unsigned long long)e.len,
			 (unsigned long long)e.startblk,
			 e.state ? " unwritten" : "");
}

static const struct bt_type bmbt_type = {
	.name = "bmbt",
	.magic = MAGIC_BMBT,
	.rec_size = XR_SIZE,
	.rec_key = xrec_key,
	.rec_print = xrec_print,
};

void xrec_decode(const void *rec, struct ref_extent *e)
{
	const uint8_t *p = rec;

	e->fileoff = get64(p + XR_OFF);
	e->startblk = get64(p + XR_BLK);
	e->len = get32(p + XR_LEN);
	e->state = get32(p + XR_FLAGS);
}

void xrec_encode(void *rec, const struct ref_extent *e)
{
	uint8_t *p = rec;

	put64(p + XR_OFF, e->fileoff);
	put64(p + XR_BLK, e->startblk);
	put32(p + XR_LEN, (uint32_t)e->len);
	put32(p + XR_FLAGS, e->state);
}

static void root_changed(struct bt_tree *t)
{
	(void)t; /* the root lives in the in-core inode; callers log it */
}

void bmap_tree(struct ref_fs *fs, struct ref_inode *ip, struct bt_tree *t)
{
	memset(t, 0, sizeof(*t));
	t->type = &bmbt_type;
	t->store = &fs->bt_store;
	t->root = &ip->root;
	t->blocksize = fs->bs;
	t->maxrecs = fs->maxrecs;
	t->owner = ip->ino;
	t->stats = &fs->ctr.bt;
	t->root_changed = root_changed;
}

static int get_le(struct bt_tree *t, uint64_t key, struct ref_extent *e)
{
	uint8_t rec[XR_SIZE];
	int err = bt_lookup_le(t, key, rec);

	if (!err)
		xrec_decode(rec, e);
	return err;
}

static int get_ge(struct bt_tree *t, uint64_t key, struct ref_extent *e)
{
	uint8_t rec[XR_SIZE];
	int err = bt_lookup_ge(t, key, rec);

	if (!err)
		xrec_decode(rec, e);
	return err;
}

/* The records either side of file block fb (bt_lookup_around). */
static int get_around(struct bt_tree *t, uint64_t fb, struct ref_extent *l,
		      bool *have_l, struct ref_extent *r, bool *have_r)
{
	uint8_t lrec[XR_SIZE], rrec[XR_SIZE];
	int err = bt_lookup_around(t, fb, lrec, have_l, rrec, have_r);

	if (err)
		return err;
	if (*have_l)
		xrec_decode(lrec, l);
	if (*have_r)
		xrec_decode(rrec, r);
	return 0;
}

static int put_new(struct bt_tree *t, const struct ref_extent *e)
{
	uint8_t rec[XR_SIZE];

	xrec_encode(rec, e);
	return bt_insert(t, rec);
}

static int put_update(struct bt_tree *t, const struct ref_extent *e)
{
	uint8_t rec[XR_SIZE];

	xrec_encode(rec, e);
	return bt_update(t, rec);
}

/* The hole at fb, which no record covers: up to the next record. */
static int hole_at(struct ref_fs *fs, struct ref_inode *ip,
		   struct bt_tree *t, uint64_t fb, struct ref_extent *ext)
{
	struct ref_extent e;
	int err;

	ext->fileoff = fb;
	ext->startblk = 0;
	ext->state = BMAP_HOLE;
	err = get_ge(t, fb, &e);
	if (err == -ENOENT) {
		ext->len = UINT64_MAX - fb;
		return 0;
	}
	if (err)
		return err;
	if (e.fileoff <= fb) {
		/* a record of no blocks at fb, or keys out of order: the hole
		 * would be empty, and a caller walking the file would not move */
		ref_report(fs, "inode %llu: extent record at file block %llu "
			   "covers no block (length %llu)",
			   (unsigned long long)ip->ino,
			   (unsigned long long)e.fileoff,
			   (unsigned long long)e.len);
		return -EFSCORRUPTED;
	}
	ext->len = e.fileoff - fb;
	return 0;
}

/*
 * The mapping at file block fb: the record covering it, or a hole running
 * to the next record (or to the end of the address space), with state
 * BMAP_HOLE.
 */
int bmap_lookup(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		struct ref_extent *ext)
{
	struct bt_tree t;
	struct ref_extent e;
	int err;

	bmap_tree(fs, ip, &t);
	err = get_le(&t, fb, &e);
	if (err && err != -ENOENT)
		return err;
	if (!err && fb < e.fileoff + e.len) {
		*ext = e;
		return 0;
	}
	return hole_at(fs, ip, &t, fb, ext);
}

/*
 * bmap_lookup_run's walk: the answer, then the records continuing it.
 * For a reader of zeros (zeros), an answer that reads as zeros (a hole,
 * an unwritten record) goes on over every hole and unwritten record
 * after it: [e.fileoff, zend) once known.
 */
struct run_walk {
	uint64_t fb, upto;
	struct ref_extent e;
	bool have;
	bool zeros, zrun, known, stopped;
	uint64_t zend;
};

static int run_stop(struct run_walk *w)
{
	w->stopped = true;
	return 1;
}

/* A record after a run of zeros: the hole before it, then it if unwritten. */
static int zeros_next(struct run_walk *w, const struct ref_extent *n)
{
	if (n->fileoff < w->zend)
		return run_stop(w); /* out of order: a lookup reports it */
	w->zend = n->fileoff;
	w->known = true;
	if (w->zend >= w->upto || n->state != REF_EXT_UNWRITTEN || n->len == 0 ||
	    n->len > UINT64_MAX - n->fileoff)
		return run_stop(w);
	w->zend = n->fileoff + n->len;
	return w->zend >= w->upto ? run_stop(w) : 0;
}

static int run_next(void *arg, const void *rec)
{
	struct run_walk *w = arg;
	uint64_t end = w->e.fileoff + w->e.len;
	struct ref_extent n;

	xrec_decode(rec, &n);
	if (w->zrun)
		return zeros_next(w, &n);
	if (!w->have) {
		w->e = n;
		w->have = true;
		end = n.fileoff + n.len;
		/* (a record of no blocks is no hole: hole_at reports it) */
		if (w->zeros && end > n.fileoff &&
		    (w->fb >= end || n.state == REF_EXT_UNWRITTEN)) {
			/* zeros at fb: a hole to the next record, or n */
			w->zrun = true;
			if (w->fb >= end) {
				w->e = (struct ref_extent){ w->fb, 0, 0, BMAP_HOLE };
				w->zend = w->fb;
				return 0;
			}
			w->zend = end;
			w->known = true;
			return end >= w->upto ? run_stop(w) : 0;
		}
		/* a hole at fb, or a mapping that stays alone */
		return w->fb >= end || end < n.fileoff || n.state != 0 ||
		       end >= w->upto;
	}
	if (n.fileoff != end || n.startblk != w->e.startblk + w->e.len ||
	    n.state != 0 || n.len > UINT64_MAX - end)
		return 1;
	w->e.len += n.len;
	return end + n.len >= w->upto;
}

static int lookup_run(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		      uint64_t upto, bool zeros, struct ref_extent *ext)
{
	struct run_walk w = { .fb = fb, .upto = upto, .zeros = zeros };
	struct bt_tree t;
	int err;

	bmap_tree(fs, ip, &t);
	err = bt_lookup_le_run(&t, fb, run_next, &w);
	if (w.zrun) {
		/* the tree ended with nothing after the zeros but hole */
		if (!err && !w.stopped) {
			w.zend = UINT64_MAX;
			w.known = true;
		}
		if (w.known && fb < w.zend) {
			*ext = w.e;
			ext->len = w.zend - w.e.fileoff;
			return 0;
		}
		/* the hole at fb, its end not seen: as a lookup finds it */
		return hole_at(fs, ip, &t, fb, ext);
	} else if (w.have && fb < w.e.fileoff + w.e.len) {
		*ext = w.e;
		return 0;
	}
	if (err && err != -ENOENT)
		return err;
	return hole_at(fs, ip, &t, fb, ext);
}

/*
 * bmap_lookup for a reader of the blocks from fb up to upto: a written
 * answer is joined with the written records after it that continue it in
 * the file and on the device, up to upto or beyond, all in one descent.
 * A file mapped a block a record (maxext=1) is read a run at a time
 * instead of a descent a block.  The run is what a read or an overwrite
 * in place needs and no more: the records stay as they are, and only
 * written ones join (an unwritten run would be converted whole, in one
 * transaction the log may not hold).  A record past the first that
 * cannot be read ends the run without an error: the caller reaches it,
 * and its error, when it needs that block, as it did a lookup a block.
 */
int bmap_lookup_run(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		    uint64_t upto, struct ref_extent *ext)
{
	return lookup_run(fs, ip, fb, upto, false, ext);
}

/*
 * bmap_lookup_run for a reader that reads every block not written as
 * zeros: an answer that reads as zeros (a hole, an unwritten record)
 * also takes in every hole and unwritten record after it, wherever those
 * lie on the device, up to upto or beyond, in the same descent.  Such an
 * answer has its first part's state (BMAP_HOLE or unwritten) and no
 * device blocks a reader may use: a long preallocated range of a file
 * mapped a block a record is read as one run of zeros.
 */
int bmap_lookup_read(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t upto, struct ref_extent *ext)
{
	return lookup_run(fs, ip, fb, upto, true, ext);
}

static bool mergeable(const struct ref_fs *fs, const struct ref_inode *ip,
		      const struct ref_extent *l, const struct ref_extent *r)
{
	return l->fileoff + l->len == r->fileoff &&
	       l->startblk + l->len == r->startblk &&
	       l->state == r->state && !ext_compressed(l) &&
	       l->len + r->len <= file_maxext(fs, ip);
}

/*
 * Merge the record ending at file block fb with the one starting there,
 * if they are mergeable.  A split can make a piece mergeable with the
 * neighbour on its far side: the whole record was too long to merge
 * with it (maxext), the shorter piece is not.  With maxext 16:
 *
 *     before:  [0 ....... 16)[16 .. 20)      16 + 4 > 16: two records
 *     convert block 3:
 *              [0..3)[3]u[4 ... 16)[16 .. 20) 12 + 4 <= 16: merge them
 *     after:   [0..3)[3]u[4 ........... 20)
 */
static int merge_at(struct ref_fs *fs, struct ref_inode *ip, struct bt_tree *t,
		    uint64_t fb)
{
	struct ref_extent l, r;
	int err;

	if (fb == 0 || fb == UINT64_MAX)
		return 0;
	err = get_le(t, fb - 1, &l);
	if (!err && l.fileoff + l.len == fb)
		err = get_ge(t, fb, &r);
	else if (!err)
		return 0;
	if (err)
		return err == -ENOENT ? 0 : err;
	if (r.fileoff != fb || !mergeable(fs, ip, &l, &r))
		return 0;
	err = bt_delete(t, r.fileoff);
	if (err)
		return err;
	ip->nextents--;
	l.len += r.len;
	return put_update(t, &l);
}

/* Insert ext into a hole, merging with the left and right neighbours. */
int bmap_map(struct ref_fs *fs, struct ref_inode *ip,
	     const struct ref_extent *ext)
{
	struct bt_tree t;
	struct ref_extent cur = *ext, left = { 0 }, right = { 0 };
	bool have_left = false, have_right = false;
	int err;

	bmap_tree(fs, ip, &t);
	err = get_around(&t, ext->fileoff, &left, &have_left, &right,
			 &have_right);
	if (err)
		return err;
	have_left = have_left && mergeable(fs, ip, &left, &cur);
	if (have_right && right.fileoff < ext->fileoff + ext->len) {
		ref_report(fs, "inode %llu: mapping file block %llu over an "
			   "existing record", (unsigned long long)ip->ino,
			   (unsigned long long)right.fileoff);
		return -EFSCORRUPTED;
	}
	have_right = have_right && mergeable(fs, ip, &cur, &right);
	if (have_left && have_right && left.len + cur.len + right.len > file_maxext(fs, ip))
		have_right = false;

	if (have_right) {
		/* the right record's key changes: delete it, fold it in */
		err = bt_delete(&t, right.fileoff);
		if (err)
			return err;
		cur.len += right.len;
		ip->nextents--;
	}
	if (have_left) {
		left.len += cur.len;
		err = put_update(&t, &left);
	} else {
		err = put_new(&t, &cur);
		if (!err)
			ip->nextents++;
	}
	if (err)
		return err;
	ip->nblocks += ext_plen(ext);
	return 0;
}

/*
 * Free the device blocks [da, db) of a piece just unmapped.  A realtime
 * piece frees the rt extents it completes: the walk goes backwards over a
 * range of whole rt extents, so the blocks of the one it ends in that lie
 * after it are already gone; the one it starts in is complete only if the
 * piece starts it.
 *
 *    rt extents:  |  j-1   |   j    |  j+1   |
 *    piece:             [da.........db)          frees j only;
 *                                                 j+1 went earlier,
 *                                                 j-1 goes with [.., da)
 */
static int free_piece(struct ref_fs *fs, struct ref_inode *ip, uint64_t da,
		      uint64_t db)
{
	uint64_t f0, f1;

	if (!inode_is_rt(ip))
		return alloc_free_file(fs, ip, da, db - da);
	f0 = round_up(da, fs->rtx);
	f1 = round_up(db, fs->rtx);
	return f0 < f1 ? rtalloc_free(fs, f0, f1 - f0) : 0;
}

/*
 * Remove [fb, fb+len) from the map; with free_blocks, return the device
 * blocks to the allocator.  With roll, the transaction may be committed
 * between records (for a realtime file: between rt extents), so a huge
 * range is unmapped in bounded transactions; callers make that safe
 * (orphan flag, or a range that may legitimately be left half punched).
 */
static int unmap_range(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		       uint64_t len, bool free_blocks, bool roll)
{
	uint64_t end = fb + len < fb ? UINT64_MAX : fb + len;
	uint64_t unit = file_unit(fs, ip);
	struct bt_tree t;
	int err;

	if (free_blocks && (fb % unit || (end != UINT64_MAX && end % unit))) {
		ref_report(fs, "inode %llu: freeing file blocks %llu..%llu, not "
			   "whole rt extents", (unsigned long long)ip->ino,
			   (unsigned long long)fb, (unsigned long long)end);
		return -EINVAL;
	}
	bmap_tree(fs, ip, &t);
	for (;;) {
		struct ref_extent e;
		uint64_t a, b, eend;

		/* Work backwards from the end: the tail goes first. */
		err = get_le(&t, end - 1, &e);
		if (err == -ENOENT)
			return 0;
		if (err)
			return err;
		eend = e.fileoff + e.len;
		if (eend <= fb)
			return 0;
		a = e.fileoff > fb ? e.fileoff : fb;
		b = eend < end ? eend : end;
		if (ext_compressed(&e) && (a != e.fileoff || b != eend))
			return compr_partial(fs, ip, e.fileoff, "unmapping");

		if (a == e.fileoff && b == eend) {
			err = bt_delete(&t, e.fileoff);
			if (!err)
				ip->nextents--;
		} else if (a == e.fileoff) {
			/* keep the tail [b, eend): its key changes */
			struct ref_extent tail = { b, e.startblk + (b - e.fileoff),
						   eend - b, e.state };

			err = bt_delete(&t, e.fileoff);
			if (!err)
				err = put_new(&t, &tail);
		} else if (b == eend) {
			/* keep the head [e.fileoff, a) */
			e.len = a - e.fileoff;
			err = put_update(&t, &e);
		} else {
			/* keep both ends: the three-way split */
			struct ref_extent tail = { b, e.startblk + (b - e.fileoff),
						   eend - b, e.state };

			e.len = a - e.fileoff;
			err = put_update(&t, &e);
			if (!err)
				err = put_new(&t, &tail);
			if (!err)
				ip->nextents++;
		}
		/* a shortened piece may merge with its outer neighbour now */
		if (!err && b < eend)
			err = merge_at(fs, ip, &t, eend);
		if (!err && a > e.fileoff)
			err = merge_at(fs, ip, &t, e.fileoff);
		if (err)
			return err;
		ip->nblocks -= ext_compressed(&e) ? ext_plen(&e) : b - a;
		if (ext_compressed(&e))
			compr_forget(fs);
		if (free_blocks) {
			uint64_t da = e.startblk + (a - e.fileoff);
			uint64_t dn = ext_compressed(&e) ? ext_plen(&e) : b - a;

			err = free_piece(fs, ip, da, da + dn);
			if (err)
				return err;
		}
		if (roll && a % unit == 0) {
			err = inode_log(fs, ip);
			if (!err)
				err = tx_maybe_roll(fs);
			if (err)
				return err;
		}
		if (a == fb)
			return 0;
		end = a;
	}
}

int bmap_unmap(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
	       uint64_t len, bool free_blocks)
{
	return unmap_range(fs, ip, fb, len, free_blocks, true);
}

int bmap_unmap_step(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		    uint64_t len)
{
	return unmap_range(fs, ip, fb, len, true, false);
}

int bmap_unmap_keep(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		    uint64_t len)
{
	return unmap_range(fs, ip, fb, len, false, false);
}

/*
 * The record inserts that moving e and the records after it in the
 * shift's order take until an edge falls on an rt extent boundary again
 * (n >= 1): the records of a realtime file may split an rt extent, and
 * the shift must not stop inside one.  One for every record of a plain
 * file, whose unit is a block.
 */
static int group_inserts(struct bt_tree *t, struct ref_extent e,
			 uint64_t from, uint64_t unit, bool up, unsigned *n)
{
	*n = 1;
	while (up ? e.fileoff > from && e.fileoff % unit :
		    (e.fileoff + e.len) % unit) {
		int err = up ? get_le(t, e.fileoff - 1, &e) :
			       get_ge(t, e.fileoff + e.len, &e);

		if (err == -ENOENT)
			break;
		if (err)
			return err;
		if (up && e.fileoff + e.len <= from)
			break;
		++*n;
	}
	return 0;
}

/*
 * Move every record at or past file block `from` by delta blocks: up for
 * insert range (from the last record down, so nothing collides; a record
 * straddling `from` is split there and only its tail moves), down for
 * collapse range (from `from` up, into the gap the caller emptied; the
 * first record moved may now merge with its new left neighbour).  Each
 * record moves in one step and the transaction may roll between steps
 * that leave no rt extent of a realtime file half moved.
 */
int bmap_shift(struct ref_fs *fs, struct ref_inode *ip, uint64_t from,
	       uint64_t delta, bool up)
{
	uint64_t cur = up ? UINT64_MAX : from, unit = file_unit(fs, ip);
	bool first = true, whole = true;
	struct bt_tree t;
	int err;

	bmap_tree(fs, ip, &t);
	for (;;) {
		struct ref_extent e;
		uint64_t orig, edge;
		bool last = false;

		err = up ? get_le(&t, cur, &e) : get_ge(&t, cur, &e);
		if (err == -ENOENT)
			return 0;
		if (err)
			return err;
		orig = e.fileoff;
		/* an rt extent is whole again once the record at this edge moved */
		edge = up ? orig : orig + e.len;
		if (up && orig + e.len <= from)
			return 0;
		if (up && orig < from && ext_compressed(&e))
			return compr_partial(fs, ip, orig, "splitting");
		/*
		 * Every step below inserts one record (a move deletes and
		 * inserts under another key, which may land in a full leaf;
		 * a split inserts its tail).  Without the blocks for it,
		 * stop before the delete, not after: the records moved so
		 * far stay moved, none is lost, and the caller gets -ENOSPC.
		 * Where a realtime file's rt extent spans several records,
		 * the room for all of them is asked before the first moves
		 * (group_inserts), so no rt extent is left half moved.
		 */
		if (whole) {
			unsigned n;

			err = group_inserts(&t, e, from, unit, up, &n);
			if (err)
				return err;
			if (!bmap_can_insert(fs, ip, n))
				return -ENOSPC;
		}
		if (up && orig < from) {
			struct ref_extent tail = { from + delta,
						   e.startblk + (from - orig),
						   orig + e.len - from, e.state };

			e.len = from - orig;
			err = put_update(&t, &e);
			if (!err)
				err = put_new(&t, &tail);
			if (!err)
				ip->nextents++;
			/* both pieces are shorter than e: see merge_at */
			if (!err)
				err = merge_at(fs, ip, &t, orig);
			if (!err)
				err = merge_at(fs, ip, &t, tail.fileoff + tail.len);
			last = true;
		} else {
			err = bt_delete(&t, orig);
			if (!err && !up && first) {
				/* bmap_map counts it anew and merges left */
				ip->nextents--;
				ip->nblocks -= ext_plen(&e);
				e.fileoff = orig - delta;
				err = bmap_map(fs, ip, &e);
			} else if (!err) {
				e.fileoff = up ? orig + delta : orig - delta;
				err = put_new(&t, &e);
			}
			first = false;
			if (up)
				last = orig == 0 || orig == from;
			cur = up ? orig - 1 : orig + e.len;
		}
		if (!err)
			err = inode_log(fs, ip);
		whole = edge % unit == 0;
		if (!err && whole)
			err = tx_maybe_roll(fs);
		if (err || last)
			return err;
	}
}

/*
 * Are there free blocks (busy ones do not count) for n record inserts,
 * each of which may split a node at every level and add a root?  Asked
 * before a change that inserts, so that it fails before it starts.
 */
bool bmap_can_insert(const struct ref_fs *fs, const struct ref_inode *ip,
		     unsigned n)
{
	uint64_t need = (uint64_t)n * (ip->root.levels + 1u);

	return alloc_meta_room(fs) >= need;
}

/*
 * Set the state of blocks [a, b) of record e (inside it) in place: the
 * record itself becomes its first piece (one update, its key unchanged),
 * the pieces after it are inserted, then each edge that moved merges
 * with its neighbour when it can.  Converting the tail of a record, as
 * the realtime truncate does, is one update and one insert:
 *
 *     before:  |<------------- e, written ------------->|
 *                          a                            b = e's end
 *     after:   |<-- e, written -->|<-- new, unwritten -->|
 *
 * A piece that is a whole record is one update (and a merge if the
 * neighbour now shares its state); a middle piece is an update and two
 * inserts.  Without the blocks its inserts may need, nothing changes:
 * -ENOSPC.
 */
static int convert_piece(struct ref_fs *fs, struct ref_inode *ip,
			 struct bt_tree *t, const struct ref_extent *e,
			 uint64_t a, uint64_t b, uint32_t state)
{
	uint64_t eend = e->fileoff + e->len;
	struct ref_extent head = *e;
	struct ref_extent mid = { a, e->startblk + (a - e->fileoff), b - a,
				  state };
	struct ref_extent tail = { b, e->startblk + (b - e->fileoff), eend - b,
				   e->state };
	int err;

	if (ext_compressed(e))
		return compr_partial(fs, ip, e->fileoff, "converting");
	if (!bmap_can_insert(fs, ip, (a > e->fileoff) + (b < eend)))
		return -ENOSPC;
	if (a > e->fileoff) {
		head.len = a - e->fileoff;
		err = put_update(t, &head);
		if (!err)
			err = put_new(t, &mid);
		if (!err)
			ip->nextents++;
	} else {
		err = put_update(t, &mid);
	}
	if (!err && b < eend) {
		err = put_new(t, &tail);
		if (!err)
			ip->nextents++;
	}
	/* left before right, as bmap_map prefers when maxext allows one */
	if (!err)
		err = merge_at(fs, ip, t, a);
	if (!err)
		err = merge_at(fs, ip, t, b);
	if (!err && a > e->fileoff)
		err = merge_at(fs, ip, t, e->fileoff);
	if (!err && b < eend)
		err = merge_at(fs, ip, t, eend);
	return err;
}

/* bmap_convert's walk over the records that need nothing. */
struct settled_walk {
	uint64_t next, end;     /* [from, next) needs nothing; the range's end */
	uint32_t state;
	bool first, stopped;
};

static int settled_stop(struct settled_walk *w)
{
	w->stopped = true;
	return 1;
}

static int settled_next(void *arg, const void *rec)
{
	struct settled_walk *w = arg;
	struct ref_extent e;
	bool first = w->first;

	xrec_decode(rec, &e);
	w->first = false;
	if (first && e.fileoff < w->next && e.fileoff + e.len <= w->next)
		return 0; /* the record before from */
	if (e.fileoff < w->next)
		return settled_stop(w); /* overlaps: a lookup reports it */
	if (e.fileoff >= w->end) {
		w->next = w->end;
		return settled_stop(w);
	}
	w->next = e.fileoff; /* the hole before it needs nothing */
	if (e.len == 0 || e.state != w->state || e.len > UINT64_MAX - e.fileoff)
		return settled_stop(w);
	w->next = e.fileoff + e.len;
	return w->next >= w->end ? settled_stop(w) : 0;
}

/*
 * From file block from (< end), the first block up to end whose record is
 * not in state: the holes and the records already in state before it,
 * walked in one descent instead of a lookup each.  Anything the walk
 * cannot read or judge ends it there: the caller's lookup of that block
 * reaches it, and its error, as a lookup a record did.
 */
static uint64_t settled_until(struct bt_tree *t, uint64_t from, uint64_t end,
			      uint32_t state)
{
	struct settled_walk w = { .next = from, .end = end, .state = state,
				  .first = true };
	int err = bt_lookup_le_run(t, from, settled_next, &w);

	/* the tree ended with every record after from settled: the rest
	 * of the range is hole */
	if (!err && !w.first && !w.stopped)
		w.next = end;
	return w.next < end ? w.next : end;
}

/*
 * Set the state of every mapped block in [fb, fb+len).  Holes stay holes.
 * With roll, the transaction may be committed between records; without,
 * the caller finishes the step (a write converts and extends the size in
 * one step, or a cut could leave written blocks past EOF).
 */
int bmap_convert(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		 uint64_t len, uint32_t state, bool roll)
{
	uint64_t end = fb + len;
	struct bt_tree t;

	bmap_tree(fs, ip, &t);
	while (fb < end) {
		struct ref_extent e;
		uint64_t n;
		int err = bmap_lookup(fs, ip, fb, &e);

		if (err)
			return err;
		n = e.fileoff + e.len - fb;
		if (n > end - fb)
			n = end - fb;
		if (e.state != BMAP_HOLE && e.state != state) {
			/* one piece at a time, never committed half done */
			err = convert_piece(fs, ip, &t, &e, fb, fb + n, state);
			if (!err)
				err = inode_log(fs, ip);
			if (!err && roll)
				err = tx_maybe_roll(fs);
			if (err)
				return err;
			fb += n;
		} else if ((fb += n) < end) {
			fb = settled_until(&t, fb, end, state);
		}
	}
	return 0;
}

static int count_block(void *arg, uint64_t blk)
{
	(void)blk;
	++*(uint64_t *)arg;
	return 0;
}

uint64_t bmap_nodes_most(struct ref_fs *fs, struct ref_inode *ip,
			 uint64_t nrecs)
{
	struct bt_tree t;

	bmap_tree(fs, ip, &t);
	return bt_nodes_most(&t, nrecs);
}

int ref_tree_blocks(struct ref_fs *fs, uint64_t ino, uint64_t *blocks)
{
	struct ref_inode *ip;
	struct bt_tree t;
	char why[160];
	int err = inode_get(fs, ino, &ip);

	FS_LIVE(fs);
	*blocks = 0;
	if (err)
		return err;
	bmap_tree(fs, ip, &t);
	return bt_check(&t, count_block, blocks, NULL, why, sizeof(why));
}

int ref_bmap(struct ref_fs *fs, uint64_t ino, ref_extent_fn fn, void *arg)
{
	struct ref_inode *ip;
	struct ref_extent e;
	struct bt_tree t;
	uint64_t fb = 0;
	int err = inode_get(fs, ino, &ip);

	FS_LIVE(fs);
	if (err)
		return err;
	bmap_tree(fs, ip, &t);
	for (;;) {
		err = get_ge(&t, fb, &e);
		if (err == -ENOENT)
			return 0;
		if (err)
			return err;
		err = fn(arg, &e);
		if (err)
			return err < 0 ? err : 0;
		fb = e.fileoff + e.len;
	}
}
