/*
 * suite_alloc.c - the engine's allocator: free space comes back.  Ops run
 * on the engine and the model in lock step (so the data stays checked
 * too); the free counts statfs reports are read on a fresh filesystem
 * first and compared after the property's own clean-up ops.
 *
 * Properties:
 *   alloc_unlink_returns_every_block   after the ops, unlink every file
 *                                      and sync: free blocks and inodes
 *                                      are what they were on the fresh fs
 *   alloc_truncate_returns_data_blocks truncate every file to 0 and sync:
 *                                      free blocks as on the fresh fs
 *   alloc_crash_then_unlink_returns_every_block
 *                                      crashes in the mix: recovery leaks
 *                                      nothing an unlink cannot free
 *   alloc_used_covers_file_blocks      after sync, blocks in use are at
 *                                      least the blocks the files own
 */
#include "props/props.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ref/ref.h"

/* reads change nothing here */
#define DATA_KINDS ((PROPS_KINDS_DATA & ~PROPS_KIND(OP_PREAD)) |            \
		    PROPS_KIND(OP_UNLINK) | PROPS_KIND(OP_FSYNC))
#define NFILES 3
#define MKFS "bs=4k,maxrecs=4,inodes=64,journal=64"
#define DEV "mem:8m"

static struct props_targets pt = {
	.list = "engine,model", .dev = DEV, .mkfs = MKFS,
};

static const struct props_ops_env plain_env = {
	.max_file = 512 * 1024, .nfiles = NFILES, .kinds = DATA_KINDS,
	.max_ops = 48, .avg_ops = 16,
	.dev = DEV, .mkfs = MKFS, .targets = "engine,model",
};
static const struct props_ops_env crash_env = {
	.max_file = 512 * 1024, .nfiles = NFILES,
	.kinds = DATA_KINDS | PROPS_KIND(OP_CRASH) | PROPS_KIND(OP_SYNC),
	.max_ops = 48, .avg_ops = 16,
	.dev = DEV, .mkfs = MKFS, .targets = "engine,model",
};
static const struct props_type plain_ops = PROPS_OPS_TYPE(&plain_env);
static const struct props_type crash_ops = PROPS_OPS_TYPE(&crash_env);

/* What the property does after the ops, on every target in lock step. */
enum cleanup { UNLINK_ALL, TRUNCATE_ALL, SYNC_ONLY };

static int statfs_of(struct props_trial *t, struct ref_statfs *sf)
{
	struct ref_fs *fs = engine_target_fs(pt.t[0]);

	if (!fs || ref_statfs(fs, sf)) {
		props_note(t, "statfs failed (no mounted engine)");
		return -EIO;
	}
	return 0;
}

/*
 * Fresh fs -> statfs -> ops -> cleanup ops -> statfs.  Returns the
 * checker's verdict; *before and *after are the two statfs results.
 */
static int run_cleanup(struct props_trial *t, const struct op_seq *seq,
		       enum cleanup how, struct ref_statfs *before,
		       struct ref_statfs *after)
{
	struct check_cfg cfg = { .quiet = 1, .chunk = 64 * 1024 };
	struct checker *c;
	char err[256];
	int st = CHECK_OK;

	if (props_targets_get(&pt, err, sizeof(err))) {
		props_note(t, "targets: %s", err);
		return PROPS_ERROR;
	}
	if (check_new(pt.t, pt.n, &cfg, seq, &c))
		return PROPS_ERROR;
	if (statfs_of(t, before)) {
		check_free(c);
		return PROPS_ERROR;
	}
	for (size_t i = 0; i < seq->n && !st; i++)
		st = check_op(c, &seq->ops[i]);
	for (unsigned f = 0; f < NFILES && !st && how != SYNC_ONLY; f++) {
		struct op op = { .kind = how == UNLINK_ALL ? OP_UNLINK : OP_TRUNCATE,
				 .file = (uint8_t)f };

		st = check_op(c, &op);
	}
	if (!st) {
		const struct op sync = { .kind = OP_SYNC };

		st = check_op(c, &sync);
	}
	if (!st)
		st = check_finish(c);
	if (st) {
		const struct check_failure *f = check_failure(c);

		props_note(t, "%s after op %llu: %s", check_status_name(st),
			   (unsigned long long)f->opno, f->what);
		check_free(c);
		/* out of memory is no counterexample (check.h) */
		return st == CHECK_NOMEM ? PROPS_ERROR : PROPS_FAIL;
	}
	check_free(c);
	return statfs_of(t, after) ? PROPS_ERROR : PROPS_PASS;
}

static const char *const cleanup_words[] = {
	[UNLINK_ALL] = "unlink every file, sync",
	[TRUNCATE_ALL] = "truncate every file to 0, sync",
	[SYNC_ONLY] = "sync",
};

static int free_returns(struct props_trial *t, const struct op_seq *seq,
			enum cleanup how, int inodes_too)
{
	struct ref_statfs a, b;
	int res = run_cleanup(t, seq, how, &a, &b);

	if (res != PROPS_PASS)
		return res;
	if (a.free_blocks == b.free_blocks &&
	    (!inodes_too || a.free_inodes == b.free_inodes))
		return PROPS_PASS;
	props_note(t, "after the ops, %s: %llu free blocks and %llu free "
		   "inodes, the fresh fs had %llu and %llu",
		   cleanup_words[how], (unsigned long long)b.free_blocks,
		   (unsigned long long)b.free_inodes,
		   (unsigned long long)a.free_blocks,
		   (unsigned long long)a.free_inodes);
	return PROPS_FAIL;
}

static int unlink_returns(struct props_trial *t, void *seq)
{
	return free_returns(t, seq, UNLINK_ALL, 1);
}

static int truncate_returns(struct props_trial *t, void *seq)
{
	return free_returns(t, seq, TRUNCATE_ALL, 0);
}

static int used_covers_files(struct props_trial *t, void *seq)
{
	struct ref_statfs a, b;
	struct ref_fs *fs;
	uint64_t owned = 0;
	int res = run_cleanup(t, seq, SYNC_ONLY, &a, &b);

	if (res != PROPS_PASS)
		return res;
	fs = engine_target_fs(pt.t[0]);
	for (unsigned f = 0; f < NFILES; f++) {
		struct ref_stat st;
		uint64_t ino;

		if (ref_lookup(fs, op_file_name(NULL, f), &ino))
			continue;
		if (ref_stat(fs, ino, &st))
			return PROPS_ERROR;
		owned += st.blocks;
	}
	if (b.free_blocks <= a.free_blocks &&
	    a.free_blocks - b.free_blocks >= owned &&
	    b.free_blocks <= b.total_blocks)
		return PROPS_PASS;
	props_note(t, "after sync %llu blocks are in use since mkfs but the "
		   "files own %llu (free %llu of %llu)",
		   (unsigned long long)(a.free_blocks - b.free_blocks),
		   (unsigned long long)owned, (unsigned long long)b.free_blocks,
		   (unsigned long long)b.total_blocks);
	return PROPS_FAIL;
}

#define A_CFG(fn, type) PROPS_TARGETS_CFG(fn, &(type), &pt)

static const struct props_prop props[] = {
	{
		.name = "alloc_unlink_returns_every_block",
		.doc = "after the ops, unlinking every file and a sync give back "
		       "every block and inode",
		.cfg = A_CFG(unlink_returns, plain_ops),
	},
	{
		.name = "alloc_truncate_returns_data_blocks",
		.doc = "after the ops, truncating every file to 0 and a sync give "
		       "back every block",
		.cfg = A_CFG(truncate_returns, plain_ops),
		/* Linux frees blocks past EOF on any truncate, even to the
		 * current size: xfs_io -f -c "falloc -k 0 4k" -c "truncate 0"
		 * on ext4 leaves stat.blocks = 0.  This property found the
		 * engine keeping them. */
	},
	{
		.name = "alloc_crash_then_unlink_returns_every_block",
		.doc = "with crashes in the mix, unlinking every file and a sync "
		       "still give back every block and inode",
		.cfg = A_CFG(unlink_returns, crash_ops),
	},
	{
		.name = "alloc_used_covers_file_blocks",
		.doc = "after a sync the blocks in use are at least the files' "
		       "blocks",
		.cfg = A_CFG(used_covers_files, plain_ops),
	},
};

const struct props_suite props_suite_alloc = {
	.name = "alloc",
	.doc = "free space and inodes come back (statfs before and after)",
	PROPS_LIST(props),
};
