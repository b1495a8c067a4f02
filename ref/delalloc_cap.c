/*
 * delalloc_cap.c - seed path (e): how much one writeback call collects,
 * and where the max extent size caps it (shared/SEED-PATHS.md (e),
 * seeds/004).
 *
 * Writeback meets a delalloc page and writes the run of delalloc pages
 * that starts there (delalloc.c).  The longest extent a file may have,
 * da_max_extent, is the filesystem's maxext, and on a zoned realtime
 * device the append limit (672 KiB in the seed).  Where the cap applies
 * is the path:
 *
 *   naive      lock at most the cap per call (btrfs upstream: the
 *              delalloc range is capped at max_extent_size), so every
 *              allocation is within it by construction;
 *   optimized  lock up to DA_COLLECT (128 MiB) per call and cap each
 *              allocation inside the allocation loop instead (the patch
 *              that was withdrawn).
 *
 * One writeback of a 2 MiB run, compressed, append limit 672 KiB:
 *
 *   the run    |<-------------------- 2048 KiB -------------------->|
 *   naive      |<---- 672 ---->|<---- 672 ---->|<---- 672 ---->|32|  4 calls
 *    chunks    |  512   | 160  |  512   | 160  |  512   | 160  |32|  7 chunks
 *   optimized  |<--------------- 2048 KiB: 1 call --------------->|  1 call
 *    chunks    |    512     |    512     |    512     |    512     |  4 chunks
 *
 * Each chunk is cut into pieces of at most 128 KiB of input, and at most
 * the cap (write_run), so no allocation is longer than the cap in either
 * twin: 6 pieces per naive call of 672 KiB, 16 in the optimized call.
 *
 * Invariants: both twins leave the same file contents, compressed or not;
 * every extent is at most da_max_extent blocks (the audit checks it); every
 * locked page is unlocked once, written or back to delalloc on an error.
 * Counters: delalloc_calls (calls), async_chunks (chunks),
 * compressed_extents, compress_fallbacks (pieces that did not pay),
 * delalloc_direct (the fallback's writes).
 *
 * The fallback is the caller that never goes through the delalloc loop,
 * direct I/O (da_write_direct, beside the dispatcher): every write of a
 * delalloc-capable file is written through at once, and must respect the
 * same cap.  PATH_FALLBACK forces it (da_write tests the switch).
 */
#include "ref/delalloc_internal.h"
#include "ref/plant.h"

#define DA_COLLECT   (128u << 20)  /* bytes one optimized call collects   */

/* The longest allocation one extent of ip may be: seed (e)'s cap. */
uint64_t da_max_extent(const struct ref_fs *fs, const struct ref_inode *ip)
{
	uint64_t cap = fs->maxext;

	if (file_zoned(fs, ip))
		cap = min64(cap, zoned_max_alloc(fs));
	return cap ? cap : 1;
}

/* The run of delalloc pages at index: up to max pages, locked. */
static uint64_t lock_run(struct ref_fs *fs, struct pc_map *m, uint64_t index,
			 uint64_t max)
{
	uint64_t n = 0;

	while (n < max) {
		struct pc_page *p = pc_peek_page(fs->pc, m, index + n);

		if (!p || !p->delalloc || pc_page_mark(p, PC_WRITEBACK))
			break;
		pc_page_set_mark(fs->pc, p, PC_WRITEBACK);
		n++;
	}
	return n;
}

/*
 * Unlock [index, index+n): written (clean), or after a failure back to
 * delalloc, except pages whose blocks the failed run mapped, which stay
 * dirty as ordinary pages over written blocks.
 */
static void unlock_run(struct ref_fs *fs, struct ref_inode *ip,
		       struct pc_map *m, uint64_t index, uint64_t n,
		       bool written)
{
	for (uint64_t i = 0; i < n; i++) {
		struct pc_page *p = pc_peek_page(fs->pc, m, index + i);
		struct ref_extent e;

		if (!p)
			continue;
		pc_page_clear_mark(fs->pc, p, PC_WRITEBACK);
		if (!written && bmap_lookup(fs, ip, index + i, &e) == 0 &&
		    e.state == 0)
			pc_page_undelalloc(fs->pc, p);
		if (written) {
			pc_page_clear_mark(fs->pc, p, PC_DIRTY);
			pc_page_clear_mark(fs->pc, p, PC_TOWRITE);
			pc_page_undelalloc(fs->pc, p);
			fs->ctr.pc_pages_written++;
		}
	}
}

/*
 * Write delalloc pages [fb, fb+n) (locked) of ip: the allocation loop
 * both twins end in.  Each allocation is at most the cap: the uncompressed
 * pieces here, the compressed pieces in compress.c's chunks.  For the
 * naive twin the run is within the cap already; for the optimized one
 * this is where the cap holds.
 */
static int write_run(struct ref_fs *fs, struct ref_inode *ip,
		     struct pc_map *m, uint64_t fb, uint64_t n)
{
	uint64_t cap = da_max_extent(fs, ip), bufb = DA_BUF >> fs->bshift;
	uint64_t piece = DA_PIECE >> fs->bshift;
	uint64_t done = 0;
	int err = 0;

	if (compr_applies(fs, ip)) {
		/* a record is at most cap */
		piece = min64(piece ? piece : 1, cap);
#ifdef FSO_PLANTED
		/* planted (plant.h): the cap one block too late */
		if (PLANTED(REF_PATH_DELALLOC_CAP) && piece == cap)
			piece++;
#endif
		return compr_write_run(fs, ip, m, fb, n, piece);
	}
	/* the allocation loop: each piece at most the cap */
	while (!err && done < n) {
		uint64_t k = min64(min64(n - done, cap), bufb);

		da_gather(fs, m, fb + done, k, fs->da->buf);
		err = da_write_plain(fs, ip, fb + done, k, fs->da->buf);
		done += k;
	}
	return err;
}

/*
 * Find and lock the run of delalloc pages at index of ip, at most max
 * pages, write it, unlock.  *next is the first index after the run.
 */
static int writeback_locked(struct ref_fs *fs, struct ref_inode *ip,
			    uint64_t index, uint64_t max, uint64_t *next)
{
	struct pc_map *m = pc_map_of(fs->pc, ip->ino);
	struct delalloc *da;
	uint64_t n;
	int err = da_get(fs, &da);

	if (err)
		return err;
	n = lock_run(fs, m, index, max ? max : 1);
	*next = index + (n ? n : 1);
	if (n == 0) {
		ref_report(fs, "inode %llu: delalloc page %llu is already "
			   "locked by writeback", (unsigned long long)ip->ino,
			   (unsigned long long)index);
		return -EFSCORRUPTED;
	}
	fs->ctr.delalloc_calls++;
	fs->da_spending = true;
	err = write_run(fs, ip, m, index, n);
	fs->da_spending = false;
	unlock_run(fs, ip, m, index, n, !err);
	return err;
}

/* The twins' one signature: writeback met delalloc page index of ip. */
typedef int da_writeback_fn(struct ref_fs *fs, struct ref_inode *ip,
			    uint64_t index, uint64_t *next);

/* The naive twin: the run is capped at the lock, one extent's worth a
 * call (672 KiB on the seed's zoned device: 2 chunks). */
static int da_writeback_naive(struct ref_fs *fs, struct ref_inode *ip,
			      uint64_t index, uint64_t *next)
{
	return writeback_locked(fs, ip, index, da_max_extent(fs, ip), next);
}

/* The optimized twin: up to 128 MiB a call (256 chunks), capped at
 * allocation (write_run). */
static int da_writeback_collect(struct ref_fs *fs, struct ref_inode *ip,
				uint64_t index, uint64_t *next)
{
	return writeback_locked(fs, ip, index, DA_COLLECT >> fs->bshift, next);
}

/* Seed path (e)'s switch: the naive twin or the collecting one. */
int da_writeback_run(struct ref_fs *fs, struct ref_inode *ip, uint64_t index,
		     uint64_t *next)
{
	da_writeback_fn *run = PATH_NAIVE(fs, REF_PATH_DELALLOC_CAP) ?
			       da_writeback_naive : da_writeback_collect;

	return run(fs, ip, index, next);
}

/*
 * The fallback, forced by PATH_FALLBACK (da_write tests it first): the
 * direct-I/O caller, around the delalloc loop.  As direct I/O does, it
 * flushes the cached range first (which may make compressed extents, so
 * they are expanded), then writes through at once, each allocation
 * within the same cap (file_write_through).
 */
int da_write_direct(struct ref_fs *fs, struct ref_inode *ip, uint64_t pos,
		    uint64_t *end, const uint8_t *src)
{
	uint64_t fb = pos >> fs->bshift, last = (*end - 1) >> fs->bshift;
	int64_t r;
	int err;

	fs->ctr.delalloc_direct++;
	/* as direct I/O flushes the cached range first */
	err = da_flush_range(fs, ip, fb, last + 1);
	if (!err) /* which may have made compressed extents */
		err = compr_expand(fs, ip, fb, last + 1);
	if (err)
		return err;
	r = file_write_through(fs, ip, src, *end - pos, pos, false);
	if (r < 0)
		return (int)r;
	*end = pos + (uint64_t)r;
	return 0;
}
