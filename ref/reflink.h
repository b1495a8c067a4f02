/*
 * reflink.h - shared blocks inside the engine: the refcount tree, the COW
 * staging tree and the per-inode COW forks (reflink.c, cow.c).  Private to
 * ref/; the public calls are in ref.h.
 *
 * Only a filesystem made with reflink has any of this (fs->rl != NULL);
 * every hook below is a no-op without it, so the engine behaves as before.
 *
 * Two on-disk B+trees hang off the superblock:
 *   refcount  shared ranges of the data region and their owner counts
 *             (refcount.h: a block without a record has one owner);
 *   staging   the blocks the COW forks hold, keyed by device block: they
 *             are allocated but no data fork maps them yet, so a mount
 *             after a power cut frees whatever this tree still lists.
 *
 * A COW fork is in memory only, per inode, as XFS keeps it: staging
 * extents {fileoff, startblk, len, state}, unwritten until a write fills
 * them, written until end-COW remaps them into the data fork.
 */
#ifndef FSORACLE_REF_REFLINK_H
#define FSORACLE_REF_REFLINK_H

#include "ref/ref_internal.h"

/* One inode's COW fork: sorted, disjoint, merged where contiguous. */
struct cow_fork {
	struct ref_extent *v;
	size_t n, cap;
};

struct reflink {
	struct bt_root refc, stage;          /* as in memory               */
	struct bt_root refc_sb, stage_sb;    /* as last put in the superblock */
	struct cow_fork *forks;              /* [ninodes], index ino - 1   */
	struct bt_stats tree_stats;          /* both trees' (not the data
						fork's: end-COW counts those) */
	uint8_t *bounce;                     /* one block, for COW copies  */
};

/* mount.c / format.c */
int  reflink_mount(struct ref_fs *fs);
int  reflink_recover(struct ref_fs *fs);     /* free leftover staging   */
int  reflink_unmount_flush(struct ref_fs *fs); /* free staging at unmount */
void reflink_unmount(struct ref_fs *fs);

/* the trees (reflink.c) */
void refc_tree(struct ref_fs *fs, struct bt_tree *t);
void stage_tree(struct ref_fs *fs, struct bt_tree *t);
int  reflink_log_roots(struct ref_fs *fs);
/* free_blocks.c: a data-fork block range of a plain file loses an owner */
int  reflink_free_file(struct ref_fs *fs, const struct ref_inode *ip,
		       uint64_t start, uint64_t len);
/* Is any block of [start, start+len) shared?  First shared piece. */
int  reflink_find_shared(struct ref_fs *fs, uint64_t start, uint64_t len,
			 uint64_t *sstart, uint64_t *slen);

/*
 * fsck.c: data-fork runs (every reference of every plain file, sorted by
 * start, possibly overlapping) against the refcount tree; the union of
 * the runs plus the staging extents and both trees' nodes comes back in
 * *out (sorted by start, disjoint except where fsck must still catch a
 * double reference), to be checked against the bitmap.
 */
int  reflink_audit(struct ref_fs *fs, const struct alloc_run *runs, size_t n,
		   struct alloc_run **out, size_t *nout);

/* the COW fork (cow_fork.c) */
struct cow_fork *cow_fork(struct ref_fs *fs, const struct ref_inode *ip);
static inline uint64_t cow_ext_end(const struct ref_extent *e)
{
	return e->fileoff + e->len;
}
/* Index of the first extent of f ending past fb. */
size_t cow_fork_find(const struct cow_fork *f, uint64_t fb);
/* Does r continue l: next in the file and on disk, same state, and the
 * two within the longest extent? */
bool cow_joins(const struct ref_fs *fs, const struct ref_extent *l,
	       const struct ref_extent *r);
/* Take [fb, fb+len) out of the fork (callers pass ranges inside one
 * extent); the piece that was there goes to *got, -ENOENT if none. */
int  cow_fork_cut(struct ref_fs *fs, struct cow_fork *f, uint64_t fb,
		  uint64_t len, struct ref_extent *got);
/* Blocks [start, start+len) leave the staging tree (records split). */
int  cow_stage_del(struct ref_fs *fs, uint64_t start, uint64_t len);
/*
 * file.c's write path: must blocks [fb, fb + *n) of the mapping e (written,
 * or unwritten: a zeroed range of shared blocks) be copied on write?  1 (and *n clipped to a run that must), 0 (and *n
 * clipped to a run that need not), or -errno.
 */
int  cow_needed(struct ref_fs *fs, struct ref_inode *ip,
		const struct ref_extent *e, uint64_t fb, uint64_t *n);
/*
 * Write bytes [pos, end) (src; NULL writes zeroes) into blocks
 * [fb, fb + *n) of the mapping e (old bytes: its blocks', zeroes if
 * unwritten) through the COW fork: staging blocks, the old bytes around the written
 * ones copied in; cow_end remaps them.  *n may shrink (space, staging).
 */
int  cow_write(struct ref_fs *fs, struct ref_inode *ip,
	       const struct ref_extent *e, uint64_t fb, uint64_t *n,
	       const uint8_t *src, uint64_t pos, uint64_t end);
/* End-COW (cow.c): remap the written staging of file blocks [fb, fb+len). */
int  cow_end(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
	     uint64_t len);
/* Before a range's mappings move (exchange range): remap its written
 * staging (cow_end), then free the rest of the fork over it, as XFS
 * cancels the COW preallocations there.  A no-op without reflink. */
int  cow_cancel(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		uint64_t len);
/* Before blocks are shared or move between files: the files' dirty pages
 * written, journaled data home (reflink.c). */
int  remap_settle(struct ref_fs *fs, struct ref_inode *a, struct ref_inode *b);
/* file_zero_written on a written mapping e: zero [from, to) (inside e),
 * through the COW fork where the blocks must not change in place. */
int  cow_zero_written(struct ref_fs *fs, struct ref_inode *ip,
		      const struct ref_extent *e, uint64_t from, uint64_t to);

#endif
