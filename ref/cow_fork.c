/*
 * cow_fork.c - reflink's copy-on-write before end-COW: the in-memory COW
 * fork, the staging tree and the write side (cow_needed, cow_write), and
 * what cancels or zeroes through them.  End-COW, seed path (c), is in
 * cow.c.
 *
 * A write to a shared block, or to any written block of an always-COW
 * file, never touches the old block.  It goes to staging blocks from the
 * inode's COW fork (allocated on demand, COW_EXTSIZE blocks at a time, so
 * the fork may hold unwritten preallocations), the old bytes around the
 * written ones copied in; when the write completes, end-COW (cow.c)
 * remaps every written staging extent into the data fork.
 *
 * Staging blocks are allocated in the bitmap and listed in the staging
 * tree in the same transaction, and leave it in the transaction that
 * remaps them, so a cut anywhere leaves them either listed (freed at the
 * next mount) or mapped.  Unwritten staging is never remapped.
 */
#include "ref/reflink.h"

#include <stdlib.h>

#define COW_EXTSIZE   8u     /* blocks a COW allocation reaches ahead  */

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* ---- the in-memory fork ---- */

struct cow_fork *cow_fork(struct ref_fs *fs, const struct ref_inode *ip)
{
	return &fs->rl->forks[ip->ino - 1];
}

/* Index of the first extent ending past fb. */
size_t cow_fork_find(const struct cow_fork *f, uint64_t fb)
{
	size_t lo = 0, hi = f->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cow_ext_end(&f->v[mid]) <= fb)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool cow_joins(const struct ref_fs *fs, const struct ref_extent *l,
	       const struct ref_extent *r)
{
	return cow_ext_end(l) == r->fileoff && l->startblk + l->len == r->startblk &&
	       l->state == r->state && l->len + r->len <= fs->maxext;
}

/* Put e (inside a gap of the fork) at index i, joining its neighbours. */
static int fork_put(struct ref_fs *fs, struct cow_fork *f, size_t i,
		    const struct ref_extent *e)
{
	if (i > 0 && cow_joins(fs, &f->v[i - 1], e)) {
		f->v[i - 1].len += e->len;
		if (i < f->n && cow_joins(fs, &f->v[i - 1], &f->v[i])) {
			f->v[i - 1].len += f->v[i].len;
			memmove(&f->v[i], &f->v[i + 1], (f->n - i - 1) * sizeof(*f->v));
			f->n--;
		}
		return 0;
	}
	if (i < f->n && cow_joins(fs, e, &f->v[i])) {
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
int cow_fork_cut(struct ref_fs *fs, struct cow_fork *f, uint64_t fb,
		 uint64_t len, struct ref_extent *got)
{
	size_t i = cow_fork_find(f, fb);
	struct ref_extent e, tail;

	if (i >= f->n || f->v[i].fileoff >= fb + len)
		return -ENOENT;
	e = f->v[i];
	*got = e;
	got->fileoff = max64(fb, e.fileoff);
	got->len = min64(fb + len, cow_ext_end(&e)) - got->fileoff;
	got->startblk = e.startblk + (got->fileoff - e.fileoff);
	tail = (struct ref_extent){ cow_ext_end(got), got->startblk + got->len,
				    cow_ext_end(&e) - cow_ext_end(got), e.state };
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

	FS_LIVE(fs);
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
int cow_stage_del(struct ref_fs *fs, uint64_t start, uint64_t len)
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
	size_t i = cow_fork_find(f, fb);
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
		*n = min64(*n, cow_ext_end(s) - fb);
		return 0;
	}
	want = max64(fb + *n, (fb / COW_EXTSIZE + 1) * COW_EXTSIZE) - fb;
	if (i < f->n)
		want = min64(want, f->v[i].fileoff - fb);
	if (i > 0 && cow_ext_end(&f->v[i - 1]) == fb)
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
	err = cow_fork_cut(fs, cow_fork(fs, ip), fb, *n, &s);
	if (!err) {
		s.state = 0;
		err = fork_put(fs, cow_fork(fs, ip),
			       cow_fork_find(cow_fork(fs, ip), fb), &s);
	}
	return err ? err : tx_maybe_roll(fs);
}

int cow_cancel(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
	       uint64_t len)
{
	struct ref_extent c;
	int err;

	if (!fs->rl)
		return 0;
	err = cow_end(fs, ip, fb, len);
	while (!err && (err = cow_fork_cut(fs, cow_fork(fs, ip), fb, len, &c)) == 0) {
		err = cow_stage_del(fs, c.startblk, c.len);
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
