/*
 * truncate.c - truncate: a file's size goes down or up, and the blocks
 * past the new EOF go.
 *
 * Truncating down to S takes three steps, each a complete transaction
 * state (a cut anywhere leaves a file mount can finish):
 *   1. the new size and the orphan mark, and the written bytes past S
 *      zeroed on the device: the new EOF tail [S, tail end) (rule 2 of
 *      file.c), or for seed path (a)'s optimized twin the EOF block only;
 *   2. every allocation unit past the tail unmapped and freed, in as many
 *      transactions as it takes (mount finishes an orphan's step 2);
 *   3. the orphan mark cleared (with the optimized twin's conversion).
 * Truncating up changes the size only: rule 2 says nothing past the old
 * EOF can read as non-zero.
 *
 * A plain file's tail is its EOF block.  A realtime file frees only whole
 * rt extents, so the rt extent holding the new EOF stays allocated, and
 * its blocks past EOF may still hold old bytes that a later extension
 * (pwrite past EOF, truncate up, fallocate) must never expose.  That is
 * seed path (a) (shared/SEED-PATHS.md), with R the rt extent size:
 *
 *                  S    roundup(S, bs)      roundup(S, R)
 *      | ..data.. |xxxx|xxxxxxx|xxxxxxx|xxxxxxx| whole rt extents ...
 *                  <--- the EOF rt extent's tail -->  <- freed in step 2
 *
 *   naive      zero [S, roundup(S, R)): every written byte of the tail;
 *   optimized  zero [S, roundup(S, bs)) only, and convert the blocks
 *              [roundup(S, bs), roundup(S, R)) to unwritten in place
 *              (one record update, at most one insert), falling back to
 *              the naive zeroing when the split cannot get its blocks.
 *
 * Both free from roundup(S, R).  The optimized twin works as XFS's
 * bunmapi does, from the end backwards: it frees the whole rt extents
 * first, so the record holding the EOF rt extent ends at roundup(S, R)
 * when its tail is converted, in the transaction that clears the orphan
 * mark.  A cut before that commit leaves written stale blocks in the EOF
 * rt extent under the orphan mark; mount finishes the unmapping and
 * zeroes them (file_zero_eof_tails), as the fallback would have.
 *
 * The conversion inserts at most one record, and an insert may split a
 * B+tree node at every level and grow a new root: it needs levels + 1
 * free data blocks.  When they are not there (or PATH_FALLBACK forces it,
 * the v6 bug's "split fails when resblks = 0"), the optimized twin counts
 * rt_truncate_fallbacks and runs the naive twin instead.
 */
#include "ref/ref_internal.h"
#include "ref/pcache.h"
#include "ref/plant.h"

/*
 * Unmap and free every block from file block from_fb on (rolling).  A
 * realtime file frees whole rt extents only: from the first rt extent
 * boundary at or after from_fb.
 */
int file_truncate_blocks(struct ref_fs *fs, struct ref_inode *ip,
			 uint64_t from_fb)
{
	uint64_t from = round_up(from_fb, file_unit(fs, ip));
	/* the page cache first: pages and shadows past EOF and from from_fb */
	int err = pcache_truncate(fs, ip, from_fb);

	if (!err)
		err = bmap_unmap(fs, ip, from, UINT64_MAX - from, true);
	if (!err)
		err = inode_log(fs, ip);
	return err;
}

/* Step 3: the truncate is whole; the orphan mark goes. */
static int truncate_done(struct ref_fs *fs, struct ref_inode *ip)
{
	ip->flags &= ~REF_IF_ORPHAN;
	return inode_log(fs, ip);
}

/* The size and flags before the truncate, for a step 1 that fails. */
struct before {
	uint64_t size;
	uint32_t flags;
};

/*
 * Step 1's zeroing of [size, end) on the device.  When it fails (a zoned
 * device's out-of-place rewrite can run out of room) the truncate has not
 * happened: the size and flags go back, in memory and in the inode's
 * slot, which a rewrite's remap may have logged with the new size.
 */
static int zero_tail(struct ref_fs *fs, struct ref_inode *ip, uint64_t end,
		     const struct before *b)
{
	int err = file_zero_written(fs, ip, ip->size, end);

	if (!err)
		return inode_log(fs, ip);
	ip->size = b->size;
	ip->flags = b->flags;
	if (!fs->rdonly)
		inode_log(fs, ip); /* the error to report is err */
	return err;
}

/*
 * The naive twin of seed path (a), steps 1 to 3 for a size already set:
 * zero every written byte of the new EOF tail [size, file_tail_end) on
 * the device, then free what lies past it.  For a plain file that is the
 * rest of the EOF block, which is already optimal; for a realtime file it
 * is the rest of the EOF rt extent (bytes_zeroed counts up to
 * R - (S mod R) bytes where the optimized twin zeroes at most a block).
 * Unwritten blocks already read as zero and are left alone.
 */
static int truncate_down_naive(struct ref_fs *fs, struct ref_inode *ip,
			       const struct before *b)
{
	uint64_t tail = file_tail_end(fs, ip);
	int err = zero_tail(fs, ip, tail << fs->bshift, b);

	if (!err)
		err = file_truncate_blocks(fs, ip, tail);
	return err ? err : truncate_done(fs, ip);
}

/*
 * The optimized twin, the same steps: zero only [size, roundup(size, bs)),
 * free the whole rt extents past the EOF one, then convert the written
 * blocks of [roundup(size, bs), roundup(size, R)) to unwritten in place:
 *
 *            S  bend                    tail
 *   before:  |ww|wwwwwwwwwwwwwwwwwwwwwww|wwww ... freed in step 2
 *   after:   |w0|uuuuuuuuuuuuuuuuuuuuuuu|         (one update, one insert)
 *
 * A plain file, an rt extent of one block, or an EOF block that ends its
 * rt extent leave nothing to convert: the naive twin is the same work.
 * So does a zoned realtime device, which rewrites a whole rt extent out
 * of place to zero any byte of it (zoned.c), and must not be left with
 * a stale tail for mount to zero in place after a cut.
 */
static int truncate_down_optimized(struct ref_fs *fs, struct ref_inode *ip,
				   const struct before *b)
{
	uint64_t bend = fs_blocks_roundup(fs, ip->size);
	uint64_t tail = file_tail_end(fs, ip);
	int err;

	if (!inode_is_rt(ip) || bend == tail || file_zoned(fs, ip))
		return truncate_down_naive(fs, ip, b);
	/* the split's reservation: one insert's B+tree blocks */
	if (PATH_FALLBACK(fs, REF_PATH_RT_TRUNCATE) ||
	    !bmap_can_insert(fs, ip, 1)) {
		fs->ctr.rt_truncate_fallbacks++;
		return truncate_down_naive(fs, ip, b);
	}
	err = zero_tail(fs, ip, bend << fs->bshift, b);
	if (!err)
		err = file_truncate_blocks(fs, ip, tail);
#ifdef FSO_PLANTED
	/* planted (plant.h): the unwrite stops one block short */
	if (PLANTED(REF_PATH_RT_TRUNCATE) && tail - bend > 1)
		tail--;
#endif
	if (!err)
		err = bmap_convert(fs, ip, bend, tail - bend, REF_EXT_UNWRITTEN,
				   false);
	return err ? err : truncate_done(fs, ip);
}

static int truncate_call(struct ref_fs *fs, uint64_t ino, uint64_t size)
{
	struct before b;
	struct ref_inode *ip;
	int err = inode_get(fs, ino, &ip);

	if (err)
		return err;
	if (fs->rdonly)
		return -EROFS;
	if (size > REF_MAX_BYTES)
		return -EFBIG;
	if (size > ip->size) {
		/* Rule 2: nothing past the old EOF can read as non-zero.
		 * (Truncating to the same size falls through: like ext4, it
		 * frees blocks preallocated past EOF.) */
		ip->size = size;
		err = inode_log(fs, ip);
		return err ? err : tx_maybe_roll(fs);
	}
	/*
	 * A compressed extent holding the new EOF is rewritten plain first:
	 * step 1 zeroes the EOF block's bytes past the size, also when the
	 * size stays (which still frees the blocks past EOF).
	 */
	err = compr_expand(fs, ip, size >> fs->bshift, (size >> fs->bshift) + 1);
	if (err)
		return err;
	/* Steps 1 to 3 (see the top), by the twin the switch picks. */
	b = (struct before){ ip->size, ip->flags };
	ip->size = size;
	ip->flags |= REF_IF_ORPHAN;
	if (PATH_NAIVE(fs, REF_PATH_RT_TRUNCATE))
		err = truncate_down_naive(fs, ip, &b);
	else
		err = truncate_down_optimized(fs, ip, &b);
	return err ? err : tx_maybe_roll(fs);
}

int ref_truncate(struct ref_fs *fs, uint64_t ino, uint64_t size)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, truncate_call(fs, ino, size));
}
