/*
 * suite_extmap.c - the engine's extent map and file data against the
 * model, on tiny geometry (4 KiB blocks, B+tree fan-out 4, files up to
 * 512 KiB) so a handful of ops split, merge and rebalance the mapping
 * tree.  Op sequences come from the binary decoder (opgen.c), so every
 * counterexample is a text op log `fsoracle replay` runs as is.
 *
 * Properties:
 *   extmap_data_matches_model        every file equals the model's after
 *                                    every op (sizes, all bytes)
 *   extmap_audit_clean_after_every_op  the engine's fsck after every op
 *   extmap_bmap_well_formed          after the ops the extent lists are
 *                                    sorted, disjoint, merged where they
 *                                    could be, inside the device, never
 *                                    share a block, and add up to the
 *                                    blocks stat reports
 *   extmap_holes_read_zero           every byte outside a written extent
 *                                    reads back as zero
 */
#include "props/props.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"

#define EXT_KINDS (PROPS_KINDS_DATA | PROPS_KIND(OP_FCOLLAPSE) |            \
		   PROPS_KIND(OP_FINSERT) | PROPS_KIND(OP_FSYNC))
#define NFILES 2
#define MKFS "bs=4k,maxrecs=4,inodes=64,journal=64"
#define DEV "mem:8m"

static const struct props_ops_env ops_env = {
	.max_file = 512 * 1024, .nfiles = NFILES, .kinds = EXT_KINDS,
	.max_ops = 48, .avg_ops = 12,
	.dev = DEV, .mkfs = MKFS, .targets = "engine,model",
};
static const struct props_type ops_type = PROPS_OPS_TYPE(&ops_env);

static struct props_targets pt = {
	.list = "engine,model", .dev = DEV, .mkfs = MKFS,
};

static int data_matches(struct props_trial *t, void *seq)
{
	const struct check_cfg cc = { .verify_each_op = 1 };

	return props_check_ops(t, &pt, seq, &cc);
}

static int audit_each(struct props_trial *t, void *seq)
{
	const struct check_cfg cc = { .audit_every = 1 };

	return props_check_ops(t, &pt, seq, &cc);
}

/* ---- the extent lists ---- */

struct extlist {
	struct ref_extent *e;
	size_t n, cap;
};

static int collect(void *arg, const struct ref_extent *ext)
{
	struct extlist *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		struct ref_extent *ne = realloc(l->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		l->e = ne;
		l->cap = cap;
	}
	l->e[l->n++] = *ext;
	return 0;
}

static int by_startblk(const void *a, const void *b)
{
	const struct ref_extent *x = a, *y = b;

	return x->startblk < y->startblk ? -1 : x->startblk > y->startblk;
}

/* One file's list: sorted, disjoint, merged, in the device, adds up. */
static int file_extents_ok(struct props_trial *t, const char *name,
			   const struct extlist *l, const struct ref_stat *st,
			   const struct ref_statfs *sf)
{
	uint64_t blocks = 0;

	for (size_t i = 0; i < l->n; i++) {
		const struct ref_extent *e = &l->e[i], *p = i ? e - 1 : NULL;

		blocks += e->len;
		if (e->len == 0 || e->startblk + e->len > sf->total_blocks ||
		    e->startblk + e->len < e->startblk) {
			props_note(t, "%s: extent %zu (file block %llu, device "
				   "block %llu, %llu blocks) is empty or off the "
				   "device", name, i,
				   (unsigned long long)e->fileoff,
				   (unsigned long long)e->startblk,
				   (unsigned long long)e->len);
			return PROPS_FAIL;
		}
		if (p && p->fileoff + p->len > e->fileoff) {
			props_note(t, "%s: extents %zu and %zu overlap or are out "
				   "of order in the file", name, i - 1, i);
			return PROPS_FAIL;
		}
		if (p && p->fileoff + p->len == e->fileoff &&
		    p->startblk + p->len == e->startblk &&
		    p->state == e->state && p->len + e->len < 1u << 21) {
			props_note(t, "%s: extents %zu and %zu are contiguous "
				   "and alike but not merged", name, i - 1, i);
			return PROPS_FAIL;
		}
	}
	if (blocks != st->blocks || l->n != st->nextents) {
		props_note(t, "%s: extents add up to %llu blocks in %zu records, "
			   "stat says %llu in %llu", name,
			   (unsigned long long)blocks, l->n,
			   (unsigned long long)st->blocks,
			   (unsigned long long)st->nextents);
		return PROPS_FAIL;
	}
	return PROPS_PASS;
}

static int bmap_well_formed(struct props_trial *t, void *seq)
{
	struct extlist all = { 0 };
	struct ref_statfs sf;
	struct ref_fs *fs;
	int res = props_check_ops(t, &pt, seq, NULL);

	if (res != PROPS_PASS)
		return res;
	fs = engine_target_fs(pt.t[0]);
	if (!fs || ref_statfs(fs, &sf))
		return PROPS_ERROR;
	for (unsigned f = 0; f < NFILES && res == PROPS_PASS; f++) {
		const char *name = op_file_name(NULL, f);
		struct extlist l = { 0 };
		struct ref_stat st;
		uint64_t ino;

		if (ref_lookup(fs, name, &ino))
			continue;
		if (ref_stat(fs, ino, &st) || ref_bmap(fs, ino, collect, &l)) {
			free(l.e);
			res = PROPS_ERROR;
			break;
		}
		res = file_extents_ok(t, name, &l, &st, &sf);
		for (size_t i = 0; i < l.n && res == PROPS_PASS; i++)
			if (collect(&all, &l.e[i]))
				res = PROPS_ERROR;
		free(l.e);
	}
	/* no device block in two extents, of one file or of two */
	if (res == PROPS_PASS && all.n > 1) {
		qsort(all.e, all.n, sizeof(all.e[0]), by_startblk);
		for (size_t i = 1; i < all.n; i++)
			if (all.e[i - 1].startblk + all.e[i - 1].len >
			    all.e[i].startblk) {
				props_note(t, "device block %llu is mapped twice",
					   (unsigned long long)all.e[i].startblk);
				res = PROPS_FAIL;
				break;
			}
	}
	free(all.e);
	return res;
}

/* Bytes outside written extents must read zero (holes, unwritten). */
static int holes_read_zero(struct props_trial *t, void *seq)
{
	struct ref_fs *fs;
	int res = props_check_ops(t, &pt, seq, NULL);

	if (res != PROPS_PASS)
		return res;
	fs = engine_target_fs(pt.t[0]);
	if (!fs)
		return PROPS_ERROR;
	for (unsigned f = 0; f < NFILES && res == PROPS_PASS; f++) {
		const char *name = op_file_name(NULL, f);
		struct extlist l = { 0 };
		struct ref_stat st;
		uint64_t ino, bs, nblk;
		uint8_t *buf = NULL, *written = NULL;

		if (ref_lookup(fs, name, &ino))
			continue;
		if (ref_stat(fs, ino, &st) || ref_bmap(fs, ino, collect, &l)) {
			free(l.e);
			return PROPS_ERROR;
		}
		bs = st.blocksize;
		nblk = (st.size + bs - 1) / bs;
		buf = malloc(st.size ? st.size : 1);
		written = calloc(nblk ? nblk : 1, 1);
		if (!buf || !written ||
		    ref_pread(fs, ino, buf, st.size, 0) != (int64_t)st.size) {
			res = PROPS_ERROR;
		} else {
			for (size_t i = 0; i < l.n; i++)
				for (uint64_t b = l.e[i].fileoff;
				     b < l.e[i].fileoff + l.e[i].len && b < nblk; b++)
					written[b] = l.e[i].state == 0;
			for (uint64_t off = 0; off < st.size; off++) {
				if (written[off / bs] || !buf[off])
					continue;
				props_note(t, "%s: byte %llu is 0x%02x but file "
					   "block %llu is a hole or unwritten",
					   name, (unsigned long long)off, buf[off],
					   (unsigned long long)(off / bs));
				res = PROPS_FAIL;
				break;
			}
		}
		free(buf);
		free(written);
		free(l.e);
	}
	return res;
}

#define EXT_CFG(fn) PROPS_TARGETS_CFG(fn, &ops_type, &pt)

static const struct props_prop props[] = {
	{
		.name = "extmap_data_matches_model",
		.doc = "every file equals the model's after every op",
		.cfg = EXT_CFG(data_matches),
	},
	{
		.name = "extmap_audit_clean_after_every_op",
		.doc = "the engine's audit (fsck) passes after every op",
		.cfg = EXT_CFG(audit_each),
	},
	{
		.name = "extmap_bmap_well_formed",
		.doc = "extent lists are sorted, disjoint, merged, inside the "
		       "device, share no block, and add up to stat's blocks",
		.cfg = EXT_CFG(bmap_well_formed),
	},
	{
		.name = "extmap_holes_read_zero",
		.doc = "bytes outside written extents read back as zero",
		.cfg = EXT_CFG(holes_read_zero),
	},
};

const struct props_suite props_suite_extmap = {
	.name = "extmap",
	.doc = "the engine's extent map and data against the model "
	       "(mkfs bs=4k,maxrecs=4)",
	PROPS_LIST(props),
};
