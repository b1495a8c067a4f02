/*
 * file.c - file data: write, read, fallocate, sync, stat.
 *
 * Data goes straight to the device (the realtime device for a realtime
 * file); metadata changes go through the journal.  Three rules keep crash
 * states clean:
 *   1. a mapping is committed only after its data was written (ordered
 *      mode: the commit flushes first), so no committed written extent
 *      ever exposes old bytes;
 *   2. the written bytes of the EOF tail past EOF are always zero on the
 *      device, and no written block lies past the tail (except while an
 *      orphan's truncate is being finished), so extending a file (write
 *      past EOF, truncate up, fallocate) needs no zeroing at all.  The
 *      tail is the EOF block; for a realtime file, the EOF rt extent
 *      (file_tail_end);
 *   3. a block's new data and the size that covers it change in the same
 *      transaction step, so a cut never leaves written data past EOF.
 *
 * A realtime file allocates whole rt extents, aligned in the file and on
 * the device, and maps every block of every rt extent it touches: blocks
 * nobody wrote are unwritten.  Holes in it are therefore whole rt extents,
 * and where a plain file would unmap part of an rt extent (punch), the
 * blocks become unwritten instead.
 */
#include "ref/ref_internal.h"
#include "ref/pcache.h"
#include "ref/reflink.h"

#include <stdlib.h>

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* File data I/O goes to the device, or through the journal (jdata.c). */
static int data_write(struct ref_fs *fs, const struct ref_inode *ip,
		      uint64_t blk, uint64_t boff, const void *buf, uint64_t len)
{
	fs->ctr.data_bytes_written += len;
	return fdata_write(fs, ip, (blk << fs->bshift) + boff, buf, len);
}

static int zero_write(struct ref_fs *fs, const struct ref_inode *ip,
		      uint64_t devoff, uint64_t len)
{
	if (len == 0)
		return 0;
	fs->ctr.bytes_zeroed += len;
	return fdata_zero(fs, ip, devoff, len);
}

/*
 * Write [pos, end) into fresh or unwritten blocks [fb, fb+n) at device
 * block blk: whole blocks, with zeroes around the caller's bytes.
 */
static int write_full_blocks(struct ref_fs *fs, const struct ref_inode *ip,
			     uint64_t fb, uint64_t n, uint64_t blk,
			     const uint8_t *buf, uint64_t off, uint64_t pos,
			     uint64_t end)
{
	uint64_t first = fb << fs->bshift, last = (fb + n) << fs->bshift;
	uint64_t dev0 = blk << fs->bshift;
	uint64_t wend = min64(end, last);
	int err;

	err = zero_write(fs, ip, dev0, pos - first);
	if (!err)
		err = data_write(fs, ip, blk, pos - first, buf + (pos - off),
				 wend - pos);
	if (!err)
		err = zero_write(fs, ip, dev0 + (wend - first), last - wend);
	return err;
}

/* Allocation goal: right after the device block backing file block fb-1. */
static uint64_t alloc_goal(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb)
{
	struct ref_extent e;

	if (fb > 0 && bmap_lookup(fs, ip, fb - 1, &e) == 0 && e.state != BMAP_HOLE)
		return e.startblk + (fb - 1 - e.fileoff) + 1;
	return inode_is_rt(ip) ? 0 : fs->data;
}

/* No goal known: alloc_goal's lookup finds it. */
#define GOAL_LOOKUP UINT64_MAX

static int alloc_try(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t goal, uint64_t want, uint64_t *blk, uint64_t *got)
{
	if (goal == GOAL_LOOKUP)
		goal = alloc_goal(fs, ip, fb);
	if (inode_is_rt(ip))
		return rtalloc_blocks(fs, goal, want, blk, got);
	return alloc_data(fs, goal, want, blk, got);
}

/*
 * Allocate up to want blocks for file block fb (whole rt extents for a
 * realtime file), near goal (GOAL_LOOKUP: alloc_goal's).  When space is
 * short but blocks freed in the running transaction are waiting, commit
 * (and, for metadata, checkpoint) to release them and try again.
 */
static int alloc_for(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t goal, uint64_t want, uint64_t *blk,
		     uint64_t *got)
{
	int err;

	if (goal == GOAL_LOOKUP)
		goal = alloc_goal(fs, ip, fb);
	err = alloc_try(fs, ip, fb, goal, want, blk, got);
	if (err == -ENOSPC && alloc_has_busy(fs)) {
		err = inode_log(fs, ip);
		if (!err)
			err = tx_commit(fs);
		if (!err && alloc_has_busy(fs))
			err = journal_checkpoint(fs);
		if (!err)
			err = alloc_try(fs, ip, fb, goal, want, blk, got);
	}
	return err;
}

/*
 * Allocate blocks for the hole at file block fb, n blocks of which are
 * wanted (all inside the hole), near goal (GOAL_LOOKUP: alloc_goal's).
 * A plain file gets up to n blocks at fb.
 * A realtime file gets whole rt extents, from the one holding fb up to at
 * most the one holding fb+n-1 (holes in it are whole rt extents, so all
 * of that is hole).  *m is what was allocated, not yet mapped.
 *
 *   rt, R = 4:         fb        fb+n
 *              |    .  [xxxxxxxxxx]   .    |
 *              |<--------- *m: 3 rt extents ------->|
 */
static int alloc_hole(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		      uint64_t n, uint64_t goal, struct ref_extent *m)
{
	uint64_t unit = file_unit(fs, ip);
	uint64_t a0 = round_down(fb, unit), a1 = round_up(fb + n, unit);
	int err = alloc_for(fs, ip, a0, goal, a1 - a0, &m->startblk, &m->len);

	m->fileoff = a0;
	m->state = 0;
	return err;
}

/*
 * Map the fresh allocation m: blocks [w0, w1) written, the rest of it
 * unwritten (a realtime file's padding up to whole rt extents).  The
 * caller logs the inode.
 */
static int map_new(struct ref_fs *fs, struct ref_inode *ip,
		   const struct ref_extent *m, uint64_t w0, uint64_t w1)
{
	uint64_t cut[4] = { m->fileoff, w0, w1, m->fileoff + m->len };
	int err = 0;

	for (int i = 0; i < 3 && !err; i++) {
		struct ref_extent piece = {
			cut[i], m->startblk + (cut[i] - m->fileoff),
			cut[i + 1] - cut[i], i == 1 ? 0 : REF_EXT_UNWRITTEN };

		if (piece.len)
			err = bmap_map(fs, ip, &piece);
	}
	return err;
}

static int set_size_and_log(struct ref_fs *fs, struct ref_inode *ip,
			    uint64_t newend)
{
	if (newend > ip->size)
		ip->size = newend;
	return inode_log(fs, ip);
}

int file_alloc_blocks(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		      uint64_t want, bool may_commit, uint64_t *blk,
		      uint64_t *got)
{
	if (file_zoned(fs, ip)) /* zoned_append allocates and writes */
		return -EINVAL;
	return may_commit ? alloc_for(fs, ip, fb, GOAL_LOOKUP, want, blk, got) :
	       alloc_try(fs, ip, fb, GOAL_LOOKUP, want, blk, got);
}

int file_alloc_whole(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t n, uint64_t *blk)
{
	uint64_t goal = alloc_goal(fs, ip, fb);

	if (file_zoned(fs, ip))
		return -EINVAL;
	return inode_is_rt(ip) ? rtalloc_whole(fs, goal, n, blk) :
	       alloc_data_whole(fs, goal, n, blk);
}

int file_unalloc(struct ref_fs *fs, const struct ref_inode *ip,
		 uint64_t start, uint64_t len)
{
	int err;

	if (inode_is_rt(ip)) /* rt data never goes through the journal */
		return rtalloc_free(fs, start, len);
	/* a journaled write may have left the blocks it wrote before the
	 * failure as buffers in the running transaction: forgotten first
	 * (forget.c), or the next owner would read them and the checkpoint
	 * write them over its data.  Not alloc_free_file: nothing shares
	 * blocks no record maps yet. */
	err = forget_file_blocks(fs, ip, start, len);
	return err ? err : alloc_free(fs, start, len);
}

/*
 * A write of a delalloc-capable file with delayed allocation on: holes
 * become delalloc pages (delalloc.c), everything else is written through.
 */
static int64_t write_delayed(struct ref_fs *fs, struct ref_inode *ip,
			     const uint8_t *buf, uint64_t len, uint64_t off)
{
	uint64_t pos = off, end = off + len;
	int err = 0;

	while (pos < end) {
		uint64_t fb = pos >> fs->bshift, wend;
		struct ref_extent e;
		int64_t r;

		err = bmap_lookup(fs, ip, fb, &e);
		if (err)
			break;
		wend = e.fileoff + e.len > (UINT64_MAX >> fs->bshift) ? end :
		       min64(end, (e.fileoff + e.len) << fs->bshift);
		if (e.state != BMAP_HOLE) {
			r = file_write_through(fs, ip, buf + (pos - off),
					       wend - pos, pos, false);
			if (r <= 0) {
				err = r ? (int)r : -EIO;
				break;
			}
			pos += (uint64_t)r;
			continue;
		}
		err = da_write(fs, ip, pos, &wend, buf + (pos - off));
		if (!err && wend == pos) /* writeback ran: maybe compressed */
			err = compr_expand(fs, ip, fb, fs_blocks_roundup(fs, end));
		if (err)
			break;
		if (wend > pos && wend > ip->size) {
			err = set_size_and_log(fs, ip, wend);
			if (!err)
				err = tx_maybe_roll(fs);
			if (err) /* not counted, as in file_write_through */
				break;
		}
		pos = wend; /* unchanged: writeback made room, look again */
	}
	if (pos > off)
		return (int64_t)(pos - off);
	return err;
}

static int64_t pwrite_call(struct ref_fs *fs, uint64_t ino, const void *buf,
			   uint64_t len, uint64_t off)
{
	struct ref_inode *ip;
	uint64_t end = off + len;
	int err = inode_get(fs, ino, &ip);

	if (err)
		return err;
	if (fs->rdonly)
		return -EROFS;
	if (end < off || end > REF_MAX_BYTES)
		return -EFBIG;
	if (len == 0)
		return 0;
	/* compressed extents change only whole: rewrite them plain first */
	err = compr_expand(fs, ip, off >> fs->bshift, fs_blocks_roundup(fs, end));
	if (err)
		return err;
	if (da_applies(fs, ip))
		return write_delayed(fs, ip, buf, len, off);
	return file_write_through(fs, ip, buf, len, off, false);
}

int64_t ref_pwrite(struct ref_fs *fs, uint64_t ino, const void *buf,
		   uint64_t len, uint64_t off)
{
	int err = fs_enter(fs);

	return err ? err : fs_leave(fs, pwrite_call(fs, ino, buf, len, off));
}

/*
 * The direct write path: allocate holes, write unwritten blocks and
 * convert them, overwrite written ones (in the cache, when it holds
 * dirty pages for the file; else in place).  from_cache: the bytes come
 * from the page cache's own pages (delalloc writeback), which must not be
 * dirtied or copied into again.
 */
int64_t file_write_through(struct ref_fs *fs, struct ref_inode *ip,
			   const uint8_t *buf, uint64_t len, uint64_t off,
			   bool from_cache)
{
	uint64_t pos = off, end = off + len, reached = off;
	/* the rest of a hole the step before took a piece of, and the goal
	 * of the next piece: the block after that one (what a lookup of
	 * the hole and alloc_goal's would give) */
	uint64_t hole_end = 0, goal = GOAL_LOOKUP;
	int err = 0;

	if (file_zoned(fs, ip)) { /* appended, never in place (zoned.c) */
		int64_t r = zoned_pwrite(fs, ip, buf, len, off);

		if (r > 0 && !from_cache)
			pcache_write(fs, ip, off, off + (uint64_t)r, buf, false);
		return r;
	}
	while (pos < end) {
		uint64_t step = pos, fb = pos >> fs->bshift;
		uint64_t lastfb = (end - 1) >> fs->bshift;
		struct ref_extent e;
		uint64_t n, blk;
		bool dirtied = false;
		int cow = 0;

		/* The records continuing fb's as one run (one descent for a
		 * file mapped a block a record); a reflinked file's go one
		 * at a time to the COW checks. */
		if (fb < hole_end) {
			e = (struct ref_extent){ fb, 0, hole_end - fb, BMAP_HOLE };
		} else {
			goal = GOAL_LOOKUP;
			err = fs->rl ? bmap_lookup(fs, ip, fb, &e) :
			      bmap_lookup_run(fs, ip, fb, lastfb + 1, &e);
		}
		hole_end = 0;
		if (err)
			break;
		n = min64(e.fileoff + e.len - fb, lastfb - fb + 1);
		n = min64(n, fdata_max_blocks(fs, ip)); /* journaled: log room */
		if (e.state == BMAP_HOLE) {
			struct ref_extent m;

			err = alloc_hole(fs, ip, fb, n, goal, &m);
			if (err)
				break;
			n = min64(n, m.fileoff + m.len - fb);
			blk = m.startblk + (fb - m.fileoff);
			err = write_full_blocks(fs, ip, fb, n, blk, buf, off,
						pos, end);
			if (err) /* nothing maps them yet: they go back */
				(void)file_unalloc(fs, ip, m.startblk, m.len);
			else
				err = map_new(fs, ip, &m, fb, fb + n);
			/* a piece that ends where its blocks do leaves hole
			 * after it (an rt piece's padding is unwritten) */
			if (!err && fb + n == m.fileoff + m.len &&
			    fb + n < e.fileoff + e.len) {
				hole_end = e.fileoff + e.len;
				goal = m.startblk + m.len;
			}
		} else if (fs->rl && (cow = cow_needed(fs, ip, &e, fb, &n)) != 0) {
			/* shared, or always COW: staging blocks (cow.c) */
			err = cow < 0 ? cow :
			      cow_write(fs, ip, &e, fb, &n,
					(const uint8_t *)buf + (pos - off), pos, end);
		} else if (e.state == REF_EXT_UNWRITTEN) {
			blk = e.startblk + (fb - e.fileoff);
			err = write_full_blocks(fs, ip, fb, n, blk, buf, off,
						pos, end);
			if (!err)
				err = bmap_convert(fs, ip, fb, n, 0, false);
		} else if (pcache_dirties(fs, ip) && !from_cache) {
			/* write-back: only the cached pages change (pcache.c) */
			err = pcache_write(fs, ip, pos,
					   min64(end, (fb + n) << fs->bshift),
					   (const uint8_t *)buf + (pos - off), true);
			dirtied = true;
		} else {
			uint64_t wend = min64(end, (fb + n) << fs->bshift);

			blk = e.startblk + (fb - e.fileoff);
			err = data_write(fs, ip, blk, pos - (fb << fs->bshift),
					 (const uint8_t *)buf + (pos - off), wend - pos);
		}
		if (err)
			break;
		if (!dirtied && !from_cache) /* cached pages follow */
			pcache_write(fs, ip, pos, min64(end, (fb + n) << fs->bshift),
				     (const uint8_t *)buf + (pos - off), false);
		pos = reached = min64(end, (fb + n) << fs->bshift);
		/* an overwrite inside EOF changes no metadata at all (but
		 * journaled data fills the transaction) */
		if (e.state != 0 || pos > ip->size ||
		    inode_journals_data(fs, ip)) {
			err = set_size_and_log(fs, ip, pos);
			if (!err)
				err = tx_maybe_roll(fs);
			if (err) { /* this step is not counted */
				pos = step;
				break;
			}
		}
	}
	/* the write is done: end-COW (cow.c) of every block it wrote */
	if (fs->rl && reached > off) {
		int end_err = cow_end(fs, ip, off >> fs->bshift,
				      fs_blocks_roundup(fs, reached) -
				      (off >> fs->bshift));

		if (end_err)
			return end_err;
	}
	/* A short write, as POSIX has it: a step whose commit step failed
	 * is not in the count (the write fails when it was the first), so
	 * a caller that writes the rest meets the error. */
	if (pos > off)
		return (int64_t)(pos - off);
	return err;
}

/* The inode a read of len bytes at off reads, and where it ends: at
 * most at its size (*end == off: nothing to read). */
static int read_bounds(struct ref_fs *fs, uint64_t ino, uint64_t len,
		       uint64_t off, struct ref_inode **ip, uint64_t *end)
{
	int err = inode_get(fs, ino, ip);

	if (err)
		return err;
	*end = off >= (*ip)->size ? off : off + min64(len, (*ip)->size - off);
	return 0;
}

static int64_t pread_call(struct ref_fs *fs, uint64_t ino, void *buf,
			  uint64_t len, uint64_t off)
{
	struct ref_inode *ip;
	uint8_t *out = buf;
	uint64_t pos, end;
	int err = read_bounds(fs, ino, len, off, &ip, &end);

	if (err)
		return err;
	if (end == off)
		return 0;
	if (fs->pc) /* buffered: through the page cache */
		return pcache_read(fs, ip, out, off, end);
	for (pos = off; pos < end;) {
		uint64_t fb = pos >> fs->bshift;
		struct ref_extent e;
		uint64_t n;

		err = bmap_lookup_run(fs, ip, fb, fs_blocks_roundup(fs, end),
				      &e);
		if (err)
			return err;
		n = min64(end, (e.fileoff + e.len) << fs->bshift) - pos;
		if (e.fileoff + e.len > (UINT64_MAX >> fs->bshift))
			n = end - pos; /* a hole to infinity */
		if (ext_compressed(&e)) { /* a block at a time, decoded */
			n = min64(n, ((fb + 1) << fs->bshift) - pos);
			err = compr_read_block(fs, ip, &e, fb, fs->scratch);
			if (err)
				return err;
			memcpy(out + (pos - off),
			       fs->scratch + (pos & (fs->bs - 1)), n);
		} else if (e.state == 0) {
			uint64_t dev = ((e.startblk + (fb - e.fileoff)) << fs->bshift) +
				       (pos & (fs->bs - 1));

			err = fdata_read(fs, ip, dev, out + (pos - off), n);
			if (err)
				return err;
			fs->ctr.data_bytes_read += n;
		} else {
			memset(out + (pos - off), 0, n);
		}
		pos += n;
	}
	return (int64_t)(end - off);
}

int64_t ref_pread(struct ref_fs *fs, uint64_t ino, void *buf, uint64_t len,
		  uint64_t off)
{
	int err = fs_enter(fs);

	return err ? err : fs_leave_read(fs,
					 pread_call(fs, ino, buf, len, off));
}

static int64_t pview_call(struct ref_fs *fs, uint64_t ino, uint64_t len,
			  uint64_t off, ref_view_fn fn, void *arg)
{
	struct ref_inode *ip;
	uint64_t end;
	int err;

	if (!fs->pc)
		return -EOPNOTSUPP;
	err = read_bounds(fs, ino, len, off, &ip, &end);
	if (err)
		return err;
	return end == off ? 0 : pcache_view(fs, ip, fn, arg, off, end);
}

int64_t ref_pview(struct ref_fs *fs, uint64_t ino, uint64_t len, uint64_t off,
		  ref_view_fn fn, void *arg)
{
	int err = fs_enter(fs);

	return err ? err : fs_leave_read(fs, pview_call(fs, ino, len, off, fn,
							arg));
}

/* Zero the written bytes of [from, to) on the device (holes, unwritten: 0). */
static int zero_device(struct ref_fs *fs, struct ref_inode *ip,
		       uint64_t *reached, uint64_t to)
{
	uint64_t from = *reached;

	if (file_zoned(fs, ip))
		return zoned_zero_written(fs, ip, from, to, reached);
	for (; from < to; *reached = from) {
		uint64_t fb = from >> fs->bshift;
		struct ref_extent e;
		uint64_t n;
		int err = bmap_lookup(fs, ip, fb, &e);

		if (err)
			return err;
		if (e.fileoff + e.len > (UINT64_MAX >> fs->bshift))
			n = to - from;
		else
			n = min64(to, (e.fileoff + e.len) << fs->bshift) - from;
		if (ext_compressed(&e))
			return compr_partial(fs, ip, e.fileoff, "zeroing");
		if (e.state == 0 && fs->rl) { /* shared blocks change by COW */
			err = cow_zero_written(fs, ip, &e, from, from + n);
			if (err)
				return err;
		} else if (e.state == 0) {
			uint64_t dev = ((e.startblk + (fb - e.fileoff)) << fs->bshift) +
				       (from & (fs->bs - 1));

			err = zero_write(fs, ip, dev, n);
			if (err)
				return err;
		}
		from += n;
	}
	return 0;
}

int file_zero_written(struct ref_fs *fs, struct ref_inode *ip, uint64_t from,
		      uint64_t to)
{
	uint64_t reached = from;
	int err = zero_device(fs, ip, &reached, to);

	/* cached pages read zeros too, as far as the device got (a failure
	 * leaves the rest as it was, clean pages equal to their blocks) */
	pcache_zero(fs, ip, from, err ? reached : to);
	return err;
}

/*
 * Rule 2 at the EOF tail: check that the written bytes of [size, tail end)
 * read as zero.  Without fix, *bad is the first that does not (off =
 * UINT64_MAX: none); with fix, every block part that does not is zeroed.
 * The tail is one block of a plain file, up to an rt extent of a
 * realtime one; it is read a block at a time.
 */
int file_scan_eof_tail(struct ref_fs *fs, struct ref_inode *ip, bool fix,
		       struct tail_bad *bad)
{
	uint64_t pos = ip->size, end = file_tail_end(fs, ip) << fs->bshift;

	bad->off = UINT64_MAX;
	while (pos < end) {
		uint64_t fb = pos >> fs->bshift, n, devoff, k;
		struct ref_extent e;
		int err = bmap_lookup(fs, ip, fb, &e);

		if (err)
			return err;
		if (ext_compressed(&e)) {
			/* writeback compresses zeroes past EOF: check them */
			const uint8_t *at = fs->scratch + (pos & (fs->bs - 1));

			n = min64(end, (fb + 1) << fs->bshift) - pos;
			err = compr_read_block(fs, ip, &e, fb, fs->scratch);
			if (err)
				return err;
			k = bytes_first_nonzero(at, (size_t)n);
			if (k < n) {
				*bad = (struct tail_bad){ pos + k, at[k] };
				if (!fix)
					return 0;
				ref_report(fs, "inode %llu: compressed extent "
					   "holds byte %#x past EOF",
					   (unsigned long long)ip->ino, bad->byte);
				return -EFSCORRUPTED;
			}
			pos += n;
			continue;
		}
		if (e.state != 0) {
			n = e.fileoff + e.len > (end >> fs->bshift) ? end - pos :
			    ((e.fileoff + e.len) << fs->bshift) - pos;
			pos += n;
			continue;
		}
		n = min64(end, (fb + 1) << fs->bshift) - pos;
		devoff = ((e.startblk + (fb - e.fileoff)) << fs->bshift) +
			 (pos & (fs->bs - 1));
		err = fdata_read(fs, ip, devoff, fs->scratch, n);
		if (err)
			return err;
		k = bytes_first_nonzero(fs->scratch, (size_t)n);
		if (k < n) {
			if (!fix) {
				*bad = (struct tail_bad){ pos + k, fs->scratch[k] };
				return 0;
			}
			err = file_zoned(fs, ip) ?
			      zoned_zero_written(fs, ip, pos, pos + n, NULL) :
			      zero_write(fs, ip, devoff, n);
			if (err)
				return err;
		}
		pos += n;
	}
	return 0;
}

/*
 * Unclean mount: zero any non-zero bytes past EOF in written tail blocks.
 * An in-place overwrite that extended the file inside its tail can reach
 * the device while the new size, still in the running transaction, is
 * lost at the cut; rule 2 is restored here before anyone can extend.
 */
int file_zero_eof_tails(struct ref_fs *fs)
{
	for (uint32_t i = 0; i < fs->ninodes; i++) {
		struct ref_inode *ip = &fs->inodes[i];
		struct tail_bad bad;
		int err;

		if (ip->type != ITYPE_FILE)
			continue;
		err = file_scan_eof_tail(fs, ip, true, &bad);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Zero the written bytes of [off, end) that lie in blocks it covers only
 * partly; [*in0, *in1) is then the run of blocks it covers whole (empty
 * when in0 >= in1).
 */
static int zero_partial_ends(struct ref_fs *fs, struct ref_inode *ip,
			     uint64_t off, uint64_t end, uint64_t *in0,
			     uint64_t *in1)
{
	int err;

	*in0 = fs_blocks_roundup(fs, off);
	*in1 = end >> fs->bshift;
	if (*in0 >= *in1)
		return file_zero_written(fs, ip, off, end);
	err = file_zero_written(fs, ip, off, *in0 << fs->bshift);
	if (!err)
		err = file_zero_written(fs, ip, *in1 << fs->bshift, end);
	return err;
}

/*
 * Punch whole blocks [fb0, fb1): a plain file unmaps and frees them.  A
 * realtime file frees only the whole rt extents inside; the blocks of the
 * rt extents at either end it covers only partly become unwritten:
 *
 *            fb0                            fb1
 *   | R    [u u|   R    |   R    |u u u]  R   |
 *          unwritten     freed     unwritten
 */
static int punch_blocks(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb0,
			uint64_t fb1)
{
	uint64_t unit = file_unit(fs, ip);
	uint64_t r0 = round_up(fb0, unit), r1 = round_down(fb1, unit);
	int err;

	if (r0 >= r1)
		return bmap_convert(fs, ip, fb0, fb1 - fb0, REF_EXT_UNWRITTEN,
				    true);
	err = bmap_convert(fs, ip, fb0, r0 - fb0, REF_EXT_UNWRITTEN, true);
	if (!err)
		err = bmap_unmap(fs, ip, r0, r1 - r0, true);
	if (!err)
		err = bmap_convert(fs, ip, r1, fb1 - r1, REF_EXT_UNWRITTEN, true);
	return err;
}

/* Give every hole in file blocks [fb, fbend) unwritten blocks. */
static int prealloc(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		    uint64_t fbend)
{
	while (fb < fbend) {
		struct ref_extent e;
		uint64_t end, goal = GOAL_LOOKUP;
		int err = bmap_lookup(fs, ip, fb, &e);

		if (err)
			return err;
		end = min64(e.fileoff + e.len, fbend);
		/* A hole is filled a piece at a time; what a piece leaves of
		 * it is still hole, so the next piece needs no lookup, and
		 * its goal is the block after the piece before (the goal
		 * alloc_goal would look up). */
		while (e.state == BMAP_HOLE && fb < end) {
			struct ref_extent m;

			err = alloc_hole(fs, ip, fb, end - fb, goal, &m);
			if (!err)
				err = map_new(fs, ip, &m, m.fileoff, m.fileoff);
			if (!err)
				err = inode_log(fs, ip);
			if (!err)
				err = tx_maybe_roll(fs);
			if (err)
				return err;
			fb = m.fileoff + m.len;
			goal = m.startblk + m.len;
		}
		fb = end > fb ? end : fb;
	}
	return 0;
}

/*
 * Collapse and insert range.  Both move every extent past the range by
 * len, in as many transactions as that takes, and order the size change
 * so that no step leaves a mapping past EOF: insert grows the file first,
 * collapse shrinks it last.  A realtime file moves whole rt extents only
 * (off and len rt-extent-aligned, as XFS has it).
 *
 *   collapse:  | A | gone | B |   ->   | A | B |
 *   insert:    | A |  B  |        ->   | A | hole | B |
 */
static int shift_check(struct ref_fs *fs, const struct ref_inode *ip,
		       unsigned mode, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, mask = fs->bs - 1;

	if ((mode != REF_FALLOC_COLLAPSE_RANGE && mode != REF_FALLOC_INSERT_RANGE) ||
	    len == 0 || (off & mask) || (len & mask) ||
	    (off >> fs->bshift) % file_unit(fs, ip) ||
	    (len >> fs->bshift) % file_unit(fs, ip))
		return -EINVAL;
	if (end < off || end > REF_MAX_BYTES)
		return -EFBIG;
	if (mode == REF_FALLOC_COLLAPSE_RANGE)
		return end >= ip->size ? -EINVAL : 0; /* to EOF: a truncate */
	if (off >= ip->size)
		return -EINVAL;
	return ip->size + len > REF_MAX_BYTES ? -EFBIG : 0;
}

/* shift_check() has passed */
static int shift_range(struct ref_fs *fs, struct ref_inode *ip, unsigned mode,
		       uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	int err;

	if (mode == REF_FALLOC_COLLAPSE_RANGE) {
		/* pages past off move: write those that stay, drop all */
		err = pcache_shift(fs, ip, off >> fs->bshift, end >> fs->bshift);
		if (!err)
			err = bmap_unmap(fs, ip, off >> fs->bshift,
					 len >> fs->bshift, true);
		if (!err)
			err = bmap_shift(fs, ip, end >> fs->bshift, len >> fs->bshift,
					 false);
		if (!err)
			ip->size -= len;
	} else {
		err = pcache_shift(fs, ip, off >> fs->bshift, off >> fs->bshift);
		if (err)
			return err;
		ip->size += len;
		err = inode_log(fs, ip);
		if (!err)
			err = bmap_shift(fs, ip, off >> fs->bshift, len >> fs->bshift,
					 true);
	}
	if (!err)
		err = inode_log(fs, ip);
	return err ? err : tx_maybe_roll(fs);
}

static int64_t copy_range_call(struct ref_fs *fs, uint64_t dst, uint64_t doff,
			       uint64_t src, uint64_t soff, uint64_t len)
{
	struct ref_inode *sip, *dip;
	uint64_t n, done = 0;
	int err = inode_get(fs, src, &sip);

	if (!err)
		err = inode_get(fs, dst, &dip);
	if (err)
		return err;
	if (fs->rdonly)
		return -EROFS;
	/* Shorten to the source's EOF first, as the kernel's checks do. */
	n = soff >= sip->size ? 0 : min64(len, sip->size - soff);
	if (doff >= REF_MAX_BYTES)
		return -EFBIG;
	n = min64(n, REF_MAX_BYTES - doff);
	if (src == dst && soff < doff + n && doff < soff + n)
		return -EINVAL;
	while (done < n) {
		uint64_t chunk = min64(n - done, fs->bs * 64ull);
		int64_t r;

		if (!fs->copybuf) {
			fs->copybuf = malloc(fs->bs * 64ull);
			if (!fs->copybuf)
				return done ? (int64_t)done : -ENOMEM;
		}
		r = ref_pread(fs, src, fs->copybuf, chunk, soff + done);
		if (r > 0)
			r = ref_pwrite(fs, dst, fs->copybuf, (uint64_t)r, doff + done);
		if (r <= 0)
			return done ? (int64_t)done : (r ? r : -EIO);
		done += (uint64_t)r;
	}
	return (int64_t)done;
}

int64_t ref_copy_range(struct ref_fs *fs, uint64_t dst, uint64_t doff,
		       uint64_t src, uint64_t soff, uint64_t len)
{
	int err = fs_enter(fs);

	return err ? err : fs_leave(fs, copy_range_call(fs, dst, doff, src,
							soff, len));
}

static int falloc_check(struct ref_fs *fs, const struct ref_inode *ip,
			unsigned mode, uint64_t off, uint64_t len)
{
	if (mode & (REF_FALLOC_COLLAPSE_RANGE | REF_FALLOC_INSERT_RANGE))
		return shift_check(fs, ip, mode, off, len);
	if (len == 0 || mode & ~(REF_FALLOC_KEEP_SIZE | REF_FALLOC_PUNCH_HOLE |
				 REF_FALLOC_ZERO_RANGE))
		return -EINVAL;
	if ((mode & REF_FALLOC_PUNCH_HOLE) && (mode & REF_FALLOC_ZERO_RANGE))
		return -EINVAL;
	if ((mode & REF_FALLOC_PUNCH_HOLE) && !(mode & REF_FALLOC_KEEP_SIZE))
		return -EOPNOTSUPP; /* as Linux: punching never changes the size */
	return off + len < off || off + len > REF_MAX_BYTES ? -EFBIG : 0;
}

static int fallocate_call(struct ref_fs *fs, uint64_t ino, unsigned mode,
			  uint64_t off, uint64_t len)
{
	struct ref_inode *ip;
	uint64_t end = off + len, fb0, fb1;
	int err = inode_get(fs, ino, &ip);

	if (err)
		return err;
	if (fs->rdonly)
		return -EROFS;
	/* the arguments are judged before anything is written (a bad range
	 * is -EINVAL even on a full device) */
	err = falloc_check(fs, ip, mode, off, len);
	if (err)
		return err;
	/* delalloc pages in the range get their blocks before it changes
	 * (a punch only drops or zeroes them), then compressed extents
	 * change only whole: those touched are rewritten plain */
	if (!(mode & REF_FALLOC_PUNCH_HOLE) && len && off + len > off)
		err = da_flush_range(fs, ip, off >> fs->bshift,
				     mode & (REF_FALLOC_COLLAPSE_RANGE |
					     REF_FALLOC_INSERT_RANGE) ?
				     UINT64_MAX : fs_blocks_roundup(fs, off + len));
	if (err)
		return err;
	if (mode & REF_FALLOC_INSERT_RANGE)
		err = compr_expand(fs, ip, off >> fs->bshift,
				   (off >> fs->bshift) + 1);
	else if (mode & (REF_FALLOC_COLLAPSE_RANGE | REF_FALLOC_PUNCH_HOLE |
			 REF_FALLOC_ZERO_RANGE))
		err = compr_expand(fs, ip, off >> fs->bshift,
				   fs_blocks_roundup(fs, min64(off + len,
							       REF_MAX_BYTES)));
	if (err)
		return err;
	if (mode & (REF_FALLOC_COLLAPSE_RANGE | REF_FALLOC_INSERT_RANGE))
		return shift_range(fs, ip, mode, off, len);
	fb0 = off >> fs->bshift;                 /* first touched block   */
	fb1 = fs_blocks_roundup(fs, end);        /* past the last touched */
	/* Cached pages of whole blocks punched or zeroed go (partial ends
	 * are zeroed in the cache by file_zero_written). */
	if (mode & (REF_FALLOC_PUNCH_HOLE | REF_FALLOC_ZERO_RANGE)) {
		err = pcache_discard(fs, ip, fs_blocks_roundup(fs, off),
				     end >> fs->bshift);
		if (err)
			return err;
	}

	if (mode & REF_FALLOC_PUNCH_HOLE) {
		/* Whole blocks inside the range go; partial ends are zeroed. */
		uint64_t in0, in1;

		err = zero_partial_ends(fs, ip, off, end, &in0, &in1);
		if (!err && in0 < in1)
			err = punch_blocks(fs, ip, in0, in1);
		if (!err)
			err = inode_log(fs, ip);
		return err ? err : tx_maybe_roll(fs);
	}

	err = prealloc(fs, ip, fb0, fb1);
	if (!err && (mode & REF_FALLOC_ZERO_RANGE)) {
		/* Whole blocks become unwritten; partial ends are zeroed. */
		uint64_t in0, in1;

		err = zero_partial_ends(fs, ip, off, end, &in0, &in1);
		if (!err && in0 < in1)
			err = bmap_convert(fs, ip, in0, in1 - in0,
					   REF_EXT_UNWRITTEN, true);
	}
	if (err)
		return err;
	if (!(mode & REF_FALLOC_KEEP_SIZE) && end > ip->size)
		ip->size = end;
	err = inode_log(fs, ip);
	return err ? err : tx_maybe_roll(fs);
}

int ref_fallocate(struct ref_fs *fs, uint64_t ino, unsigned mode,
		  uint64_t off, uint64_t len)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, fallocate_call(fs, ino, mode, off,
							    len));
}

static int fsync_call(struct ref_fs *fs, uint64_t ino)
{
	struct ref_inode *ip;
	int err = inode_get(fs, ino, &ip);

	if (!err) /* dirty pages first: the commit flushes the devices */
		err = pcache_writeback(fs, ip);
	return err ? err : tx_commit(fs);
}

int ref_fsync(struct ref_fs *fs, uint64_t ino)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, fsync_call(fs, ino));
}

int ref_fdatasync(struct ref_fs *fs, uint64_t ino)
{
	return ref_fsync(fs, ino);
}

static int sync_call(struct ref_fs *fs)
{
	int err = pcache_writeback(fs, NULL);

	return err ? err : tx_commit(fs);
}

int ref_sync(struct ref_fs *fs)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, sync_call(fs));
}

int ref_stat(struct ref_fs *fs, uint64_t ino, struct ref_stat *st)
{
	struct ref_inode *ip;
	int err = inode_get(fs, ino, &ip);

	FS_LIVE(fs);
	if (err)
		return err;
	memset(st, 0, sizeof(*st));
	st->ino = ip->ino;
	st->size = ip->size;
	st->blocks = ip->nblocks;
	st->nextents = ip->nextents;
	st->flags = ip->flags;
	st->blocksize = fs->bs;
	st->map_levels = ip->root.levels;
	return 0;
}

int ref_compress_available(void)
{
	return compress_available();
}

static uint64_t sub_floor(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

int ref_statfs(struct ref_fs *fs, struct ref_statfs *st)
{
	/* delalloc pages hold a block each of their device, not yet taken */
	uint64_t promised = fs->pc ? fs->pc->ndelalloc[0] : 0;
	uint64_t promised_rt = fs->pc ? fs->pc->ndelalloc[1] : 0;

	FS_LIVE(fs);
	memset(st, 0, sizeof(*st));
	st->blocksize = fs->bs;
	st->total_blocks = fs->total;
	st->data_blocks = fs->total - fs->data;
	st->free_blocks = fs->free_blocks;
	st->avail_blocks = alloc_data_avail(fs);
	st->meta_avail_blocks = sub_floor(fs->free_blocks, promised);
	st->inodes = fs->ninodes;
	for (uint32_t i = 0; i < fs->ninodes; i++)
		st->free_inodes += fs->inodes[i].type == ITYPE_FREE;
	if (fs->rtdev) {
		st->rtextsize = fs->rtx * fs->bs;
		st->rt_blocks = fs->rtblocks;
		st->rt_free_blocks = fs->rt_free * fs->rtx;
		st->rt_avail_blocks = sub_floor(fs->zoned ? zoned_free_blocks(fs) :
						st->rt_free_blocks, promised_rt);
	}
	return 0;
}
