/*
 * free_blocks.c - freeing a block that had an owner: who must hear of it,
 * and in what order, before the allocator (alloc.c) takes it back.
 *
 *   a file's data blocks (alloc_free_file)
 *     reflink filesystem?  --yes-->  the refcount tree drops one owner of
 *       |no                          the range (reflink.c); the pieces
 *       v                            left with none take the two steps
 *     forget them in the journal     below there
 *     (seed path (d), forget.c: the buffer of a journaled block dropped,
 *      its log copies revoked)
 *       v
 *     back to the bitmap (alloc_free), busy until the freeing commit
 *
 *   a metadata block, a B+tree node (alloc_free_meta): always forgotten
 *   and revoked, whatever the file's mode, then freed.
 *
 * Realtime extents hold only file data, outside the journal and the
 * refcount tree: bmap.c frees them with rtalloc_free directly.
 */
#include "ref/ref_internal.h"
#include "ref/reflink.h"

/*
 * Free blocks of file ip: first forget them in the journal, the seed
 * path (d) of forget.c (the buffer of a journaled block is dropped and
 * its log copies revoked), then give them back.
 */
int alloc_free_file(struct ref_fs *fs, const struct ref_inode *ip,
		    uint64_t start, uint64_t len)
{
	int err;

	if (fs->rl && !inode_is_rt(ip)) /* shared blocks stay (reflink.c) */
		return reflink_free_file(fs, ip, start, len);
	err = forget_file_blocks(fs, ip, start, len);
	return err ? err : alloc_free(fs, start, len);
}

/* Free a metadata block (a B+tree node): always forgotten and revoked. */
int alloc_free_meta(struct ref_fs *fs, uint64_t blk)
{
	int err = forget_meta(fs, blk);

	return err ? err : alloc_free(fs, blk, 1);
}
