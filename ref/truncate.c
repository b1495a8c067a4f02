/*
 * truncate.c - truncate: a file's size goes down or up, and the blocks
 * past the new EOF go.
 *
 * Truncating down to S takes three steps, each a complete transaction
 * state (a cut anywhere leaves a file mount can finish):
 *   1. the new size and the orphan mark, and the written bytes of the new
 *      EOF tail, [S, tail end), zeroed on the device (rule 2 of file.c);
 *   2. every allocation unit past the tail unmapped and freed, in as many
 *      transactions as it takes (mount finishes an orphan's step 2);
 *   3. the orphan mark cleared.
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
 * Both then free from roundup(S, R).  Only the naive twin exists today;
 * the optimized one goes beside it, below, with the same signature.
 */
#include "ref/ref_internal.h"

/*
 * Unmap and free every block from file block from_fb on (rolling).  A
 * realtime file frees whole rt extents only: from the first rt extent
 * boundary at or after from_fb.
 */
int file_truncate_blocks(struct ref_fs *fs, struct ref_inode *ip,
			 uint64_t from_fb)
{
	uint64_t from = round_up(from_fb, file_unit(fs, ip));
	int err = bmap_unmap(fs, ip, from, UINT64_MAX - from, true);

	if (!err)
		err = inode_log(fs, ip);
	return err;
}

/*
 * Step 1's zeroing, the naive twin of seed path (a): zero every written
 * byte of the new EOF tail [size, file_tail_end) on the device.  For a
 * plain file that is the rest of the EOF block and nothing else; for a
 * realtime file it is the rest of the EOF rt extent (bytes_zeroed counts
 * up to R - (S mod R) bytes where the optimized path zeroes at most a
 * block).  Unwritten blocks already read as zero and are left alone.
 */
static int truncate_tail_naive(struct ref_fs *fs, struct ref_inode *ip)
{
	return file_zero_written(fs, ip, ip->size,
				 file_tail_end(fs, ip) << fs->bshift);
}

/*
 * ---- seed path (a), the optimized twin: goes here next ----
 *
 * static int truncate_tail_optimized(struct ref_fs *fs, struct ref_inode *ip)
 *
 * For a realtime file with R > 1: zero [size, roundup(size, bs)) as the
 * naive twin does for a plain file, then convert the written blocks of
 * [roundup(size, bs), file_tail_end) to unwritten with an in-place record
 * update (bmap.c), and fall back to truncate_tail_naive when the record
 * split cannot reserve its B+tree blocks (the v6 bug: "split fails when
 * resblks = 0" must be forceable).  ref_truncate picks the twin by the
 * mount's naive switch; plain files always take the naive path, which is
 * already optimal for them.
 */

int ref_truncate(struct ref_fs *fs, uint64_t ino, uint64_t size)
{
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
	/* Step 1: new size, orphan mark, zero the EOF tail. */
	ip->size = size;
	ip->flags |= REF_IF_ORPHAN;
	err = truncate_tail_naive(fs, ip);
	if (!err)
		err = inode_log(fs, ip);
	/* Step 2: free whole units past the tail, in as many transactions as
	 * needed. */
	if (!err)
		err = file_truncate_blocks(fs, ip, file_tail_end(fs, ip));
	/* Step 3: done. */
	if (!err) {
		ip->flags &= ~REF_IF_ORPHAN;
		err = inode_log(fs, ip);
	}
	return err ? err : tx_maybe_roll(fs);
}
