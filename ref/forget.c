/*
 * forget.c - seed path (d): what the journal must do when blocks are
 * freed (shared/SEED-PATHS.md (d), seeds/003).
 *
 * A freed block may have a buffer in the cache (metadata, or file data
 * written through the journal) and, if that buffer was committed since
 * the last checkpoint, an image in the log.  Before the block can be
 * reused, the buffer must be dropped (else the checkpoint writes the old
 * contents over the next owner) and the image revoked (else replay does):
 *
 *   free B:  cached?  --no-->  nothing to do
 *              |yes
 *            drop the buffer; logged (an image in the log)?  --no--> done
 *              |yes
 *            revoke B in the running transaction (journal_revoke)
 *
 * The allocator keeps B busy until that transaction commits, revoke and
 * all (alloc.c).  Logged buffers stay pinned until the checkpoint that
 * empties the log, so "the buffer is logged" is exactly "the live log has
 * an image of B": the revoke set is the same whichever twin runs.
 *
 * Metadata (B+tree nodes) always takes the lookup.  For file data:
 *   naive      look up every freed block, as ext4 did before 2012 (its
 *              "bforget every freed block");
 *   optimized  look up only the blocks of a file whose data goes through
 *              the journal (data=journal, or the journal-data flag): an
 *              ordered or writeback file's data never enters the cache
 *              nor the log, so every such lookup would miss.  Changing a
 *              file's journal-data flag flushes the journal first
 *              (inode.c), so no copy outlives the mode it was made in.
 *   fallback   the per-block lookups of the naive twin, when the
 *              optimized one must not trust the file's mode (forced by the
 *              fallback=forget knob, so it is as reachable as the fast
 *              path).
 * Unlinking a fallocated 60 GiB file of 4 KiB blocks: 15,728,640 lookups
 * naive, none optimized (tests/test_journal_modes.c checks the number).
 * Realtime files' blocks live on the realtime device, outside this cache
 * and the log: neither twin looks them up.
 */
#include "ref/ref_internal.h"
#include "ref/plant.h"

/* Look one freed block up: drop its buffer, revoke a logged one. */
static int forget_one(struct ref_fs *fs, uint64_t blk)
{
	bool logged;

	fs->ctr.forget_lookups++;
	fs->ctr.bcache_lookups++;
	if (!buf_forget(fs, blk, &logged))
		return 0;
	fs->ctr.forgets++;
	return logged ? journal_revoke(fs, blk) : 0;
}

int forget_meta(struct ref_fs *fs, uint64_t blk)
{
	return forget_one(fs, blk);
}

/* The naive twin: every freed block is looked up. */
static int forget_naive(struct ref_fs *fs, const struct ref_inode *ip,
			uint64_t start, uint64_t len)
{
	(void)ip;
	for (uint64_t b = start; b < start + len; b++) {
		int err = forget_one(fs, b);

		if (err)
			return err;
	}
	return 0;
}

/* The optimized twin: only a file whose data goes through the journal
 * can have its blocks in the cache or the log. */
static int forget_optimized(struct ref_fs *fs, const struct ref_inode *ip,
			    uint64_t start, uint64_t len)
{
	if (!inode_journals_data(fs, ip))
		return 0;
#ifdef FSO_PLANTED
	/* planted (plant.h): one block short of the extent's end */
	if (PLANTED(REF_PATH_FORGET) && len)
		len--;
#endif
	return forget_naive(fs, ip, start, len);
}

/* Blocks [start, start+len) of file ip are being freed. */
int forget_file_blocks(struct ref_fs *fs, const struct ref_inode *ip,
		       uint64_t start, uint64_t len)
{
	if (PATH_NAIVE(fs, REF_PATH_FORGET) || PATH_FALLBACK(fs, REF_PATH_FORGET))
		return forget_naive(fs, ip, start, len);
	return forget_optimized(fs, ip, start, len);
}
