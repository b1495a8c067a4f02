/*
 * suite_cow.c - seed path (c), end-COW remap: the naive twin, the
 * optimized version and its forced fallback side by side (the targets
 * naive, engine and fallback, with the model) on reflink filesystems of
 * a drawn geometry (block size, maximum extent length), running the same
 * generated op log: writes, block-aligned clones and dedupes, zeroed
 * ranges and chattr +o/-o (always-COW) over two files, without a page
 * cache, so every write to a shared or always-COW block ends its COW at
 * once.
 *
 *     data fork   |<------ G ------>|        naive     unmap, map C
 *     COW fork         |<- C ->|             optimized rewrite G in place
 *                                            fallback  as naive (forced)
 *
 * A counterexample is printed as that op log: its header names the
 * targets, the geometry and what the checker compares (check=each,
 * twins=all), so `fsoracle replay` takes it as is and fails the same way,
 * and `fsoracle minimize` shrinks it further.
 *
 * Properties:
 *   cow_twins_agree      after every op the four return the same and
 *                        read the same; the three engines have the same
 *                        sizes, block counts, free space (B+tree blocks
 *                        of the data forks counted as free: delete +
 *                        insert and an update in place may leave trees of
 *                        different shapes), merged data-fork extents,
 *                        COW forks and refcount records (the checker's
 *                        twins=all); every audit passes
 *   cow_staging_is_sane  no written staging is left after an op, no
 *                        block of unwritten staging is mapped by a data
 *                        fork (never remapped); the naive twin counts one
 *                        intent and roll per remap, the fallback counts
 *                        every remap as a fallback, the optimized one an
 *                        intent only for a fallback it took (the
 *                        property's own check after every op: a replay of
 *                        its log runs the ops and the twin comparison)
 */
#include "props/props.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/op.h"
#include "ref/ref.h"

#define SPAN 24                /* files reach SPAN blocks              */
#define MAXEXT 64              /* staging extents a listing keeps      */

static const struct props_ops_env cow_env = {
	.nfiles = 2,
	.kinds = PROPS_KIND(OP_PWRITE) | PROPS_KIND(OP_CLONE_RANGE) |
		 PROPS_KIND(OP_DEDUPE_RANGE) | PROPS_KIND(OP_FZERO) |
		 PROPS_KIND(OP_SET_FLAG),
	.max_ops = 8, .avg_ops = 5, .dev = "mem:2m",
	.targets = "naive,engine,fallback,model",
};

/*
 * Ops the remap rules take as they are: clone and dedupe block-aligned
 * (a misaligned one is refused alike everywhere, so costs a step), and
 * chattr the always-COW flag (+o or -o), the one attribute this path
 * reads.  A function of the drawn ops, so shrinking goes on through the
 * draws as before.
 */
static void toward_cow(struct op_seq *seq, uint32_t bs)
{
	for (size_t i = 0; i < seq->n; i++) {
		struct op *op = &seq->ops[i];

		if (op->kind == OP_SET_FLAG) {
			op->arg = OP_ATTR_ALWAYS_COW;
		} else if (op->kind == OP_CLONE_RANGE ||
			   op->kind == OP_DEDUPE_RANGE) {
			op->off -= op->off % bs;
			op->arg -= op->arg % bs;
			op->len -= op->len % bs;
			if (!op->len)
				op->len = bs;
		}
	}
}

/* The geometry first (block size, extent cap), then the ops. */
static int cow_alloc(struct props_trial *t, void *env, void **out)
{
	struct props_ops_env e = cow_env;
	uint32_t bs = 512u << props_below(t, 2);
	uint32_t maxext = props_below(t, 2) ? 0 : 2 + (uint32_t)props_below(t, 7);
	struct op_seq *seq = malloc(sizeof(*seq));

	(void)env;
	if (!seq)
		return PROPS_ERROR;
	op_seq_init(seq);
	e.max_file = (uint64_t)SPAN * bs;
	if (props_ops_gen(t, &e, seq)) {
		props_ops_free(seq, NULL);
		return PROPS_ERROR;
	}
	toward_cow(seq, bs);
	snprintf(seq->hdr.mkfs, sizeof(seq->hdr.mkfs),
		 "reflink=1,bs=%u,maxext=%u,inodes=16,maxrecs=4", bs, maxext);
	snprintf(seq->hdr.mount, sizeof(seq->hdr.mount), "pagecache=0");
	snprintf(seq->hdr.check, sizeof(seq->hdr.check), "each,twins=all");
	*out = seq;
	return PROPS_PASS;
}

static const struct props_type cow_log =
	PROPS_LOG_TYPE("cow log", cow_alloc, NULL);

static int twins_agree(struct props_trial *t, void *seq)
{
	return props_check_log(t, seq, NULL, NULL, NULL);
}

/* ---- the staging, and what each twin counts ---- */

struct listing {
	struct ref_extent e[MAXEXT];
	int n;
};

static int list_one(void *arg, const struct ref_extent *e)
{
	struct listing *l = arg;

	if (l->n == MAXEXT)
		return -ENOSPC;
	l->e[l->n++] = *e;
	return 0;
}

/* Is device block range [b, b+n) inside any extent of l? */
static int overlaps(const struct listing *l, uint64_t b, uint64_t n)
{
	for (int i = 0; i < l->n; i++)
		if (b < l->e[i].startblk + l->e[i].len && l->e[i].startblk < b + n)
			return 1;
	return 0;
}

/* The twin's files' data and COW forks (a file not made yet: empty). */
static int listings(struct target *tg, struct ref_fs *fs,
		    struct listing data[2], struct listing fork[2])
{
	for (int f = 0; f < 2; f++) {
		uint64_t ino;
		int err;

		data[f].n = fork[f].n = 0;
		err = ref_lookup(fs, tg->names[f], &ino);
		if (err == -ENOENT)
			continue;
		if (!err)
			err = ref_bmap(fs, ino, list_one, &data[f]);
		if (!err)
			err = ref_cow_bmap(fs, ino, list_one, &fork[f]);
		if (err)
			return err;
	}
	return 0;
}

static int staging_of(struct props_trial *t, struct target *tg,
		      struct ref_fs *fs, uint64_t opno)
{
	const char *name = tg->name;
	struct listing data[2], fork[2];

	if (listings(tg, fs, data, fork))
		return PROPS_ERROR;
	for (int f = 0; f < 2; f++)
		for (int j = 0; j < fork[f].n; j++) {
			const struct ref_extent *e = &fork[f].e[j];

			if (e->state != REF_EXT_UNWRITTEN) {
				props_note(t, "%s, op %llu: written staging "
					   "left in f%d's COW fork", name,
					   (unsigned long long)opno, f);
				return PROPS_FAIL;
			}
			if (overlaps(&data[0], e->startblk, e->len) ||
			    overlaps(&data[1], e->startblk, e->len)) {
				props_note(t, "%s, op %llu: unwritten staging "
					   "at block %llu is mapped", name,
					   (unsigned long long)opno,
					   (unsigned long long)e->startblk);
				return PROPS_FAIL;
			}
		}
	return PROPS_PASS;
}

/* What the twin's path counts: one intent and roll per remap (naive),
 * every remap a fallback (fallback), an intent only for a fallback it
 * took (optimized). */
static int counts_of(struct props_trial *t, const struct target *tg,
		     const struct ref_counters *c, uint64_t opno)
{
	const char *name = tg->name;
	int bad;

	if (engine_target_pin(tg) == ENGINE_NAIVE)
		bad = c->cow_intents != c->cow_remaps ||
		      c->cow_tx_rolls != c->cow_remaps || c->cow_fallbacks;
	else if (engine_target_pin(tg) == ENGINE_FALLBACK)
		bad = c->cow_fallbacks != c->cow_remaps;
	else
		bad = c->cow_intents != c->cow_fallbacks;
	if (bad)
		props_note(t, "%s, op %llu: %llu remaps, %llu intents, %llu "
			   "rolls, %llu fallbacks", name,
			   (unsigned long long)opno,
			   (unsigned long long)c->cow_remaps,
			   (unsigned long long)c->cow_intents,
			   (unsigned long long)c->cow_tx_rolls,
			   (unsigned long long)c->cow_fallbacks);
	return bad ? PROPS_FAIL : PROPS_PASS;
}

static int staging_hook(struct props_trial *t, struct target **tg, int n,
			uint64_t opno, void *arg)
{
	int res = PROPS_PASS;

	(void)arg;
	for (int i = 0; i < n && res == PROPS_PASS; i++) {
		struct ref_fs *fs;

		if (engine_target_pin(tg[i]) < 0)
			continue;
		fs = engine_target_fs(tg[i]);
		if (!fs)
			return PROPS_ERROR;
		res = staging_of(t, tg[i], fs, opno);
		if (res == PROPS_PASS)
			res = counts_of(t, tg[i], ref_counters(fs), opno);
	}
	return res;
}

static int staging_is_sane(struct props_trial *t, void *seq)
{
	return props_check_log(t, seq, NULL, staging_hook, NULL);
}

static const struct props_prop props[] = {
	{
		.name = "cow_twins_agree",
		.doc = "naive, optimized and fallback end-COW leave the same "
		       "bytes, sizes, block counts, free space, refcounts, COW "
		       "forks and merged extent lists after every op; audits "
		       "pass (the printed log replays to the same failure)",
		.cfg = { .prop1 = twins_agree, .types = { &cow_log },
			 .trials = 1000 },
	},
	{
		.name = "cow_staging_is_sane",
		.doc = "no written staging outlives an op, unwritten staging "
		       "is never mapped, and each twin counts its intents, "
		       "rolls and fallbacks as its path does",
		.cfg = { .prop1 = staging_is_sane, .types = { &cow_log },
			 .trials = 1000 },
	},
};

const struct props_suite props_suite_cow = {
	.name = "cow",
	.doc = "seed path (c): end-COW remap, naive vs optimized vs fallback",
	PROPS_LIST(props),
};
