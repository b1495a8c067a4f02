/*
 * suite_exchange.c - exchange range: the engine against the model, and
 * what a swap of mappings must leave alone.  A generated op log writes
 * two files whole, then mixes writes, preallocations, punches, clones,
 * exchanges (block-aligned, inside the files, so most of them swap),
 * fsyncs and crashes over them; its header names the filesystem, the
 * targets and check=each, so a counterexample replays and minimizes as
 * is (what one exchange must keep is the property's own check).
 *
 *     f0  | A A | hole | u u | A |        exchange f0 1..3 <-> f1 4..6
 *     f1  | B B B B | C C C C C |   ->   the pieces change files whole
 *
 * Properties:
 *   exchange_matches_model     the case as ops on the engine, its all-
 *                              naive twin and the model (a reflink
 *                              filesystem, fan-out 4, maxext 5, a 64-block
 *                              log): same results, bytes and sizes after
 *                              every op, audits pass, crashes recover
 *   exchange_keeps_every_block the same log with a remount before each
 *                              exchange (it frees COW staging) and no
 *                              crash (an fsync in its place), on the
 *                              engine and the model: each exchange
 *                              leaves the files' sizes, the blocks the
 *                              two files map (each with its state,
 *                              whichever file has it), the refcount
 *                              records and the free space (data-fork
 *                              B+tree nodes aside) as they were; the
 *                              audit passes after every op
 */
#include "props/props.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/op.h"
#include "ref/ref.h"

#define MAXSTEPS 10
#define SPAN 16                /* files are SPAN blocks long at first   */
#define BSZ 1024u
#define DEV "mem:2m"
#define MKFS "bs=1k,maxrecs=4,maxext=5,journal=64,inodes=16,reflink=1"
#define MAXB (4 * SPAN)        /* blocks the two files map, at most     */

enum { X_WRITE, X_FALLOC, X_PUNCH, X_CLONE, X_EXCHANGE, X_FSYNC, X_CRASH,
       NXKINDS };

struct xstep { unsigned kind, file, src; uint64_t off, len, soff; };

static void to_op(const struct xstep *s, struct op *op)
{
	static const uint8_t kind[NXKINDS] = {
		OP_PWRITE, OP_FALLOC, OP_FPUNCH, OP_CLONE_RANGE,
		OP_EXCHANGE_RANGE, OP_FSYNC, OP_CRASH };

	memset(op, 0, sizeof(*op));
	op->kind = kind[s->kind];
	op->file = (uint8_t)s->file;
	op->off = s->off * BSZ;
	op->len = s->len * BSZ;
	if (s->kind == X_FALLOC)
		op->flags = OP_FL_KEEP_SIZE;
	if (s->kind == X_CLONE || s->kind == X_EXCHANGE) {
		/* range ops: off is the source's, arg the destination's */
		op->file2 = (uint8_t)s->src;
		op->arg = s->off * BSZ;
		op->off = s->soff * BSZ;
	}
}

/* The case as an op log: both files written whole, then the steps (when
 * env says so a remount before each exchange, and fsync for crash: what
 * an exchange keeps is asked of files that are there). */
static int case_alloc(struct props_trial *t, void *env, void **out)
{
	struct props_many m = PROPS_MANY(1, MAXSTEPS, 5);
	struct op_seq *seq = malloc(sizeof(*seq));
	const int remounts = env != NULL;
	struct op op;
	int err = 0;

	if (!seq)
		return PROPS_ERROR;
	op_seq_init(seq);
	snprintf(seq->hdr.dev, sizeof(seq->hdr.dev), "%s", DEV);
	snprintf(seq->hdr.mkfs, sizeof(seq->hdr.mkfs), "%s", MKFS);
	snprintf(seq->hdr.targets, sizeof(seq->hdr.targets), "%s",
		 remounts ? "engine,model" : "engine,naive,model");
	snprintf(seq->hdr.check, sizeof(seq->hdr.check), "each");
	for (unsigned f = 0; f < 2 && !err; f++) {
		memset(&op, 0, sizeof(op));
		op.kind = OP_PWRITE;
		op.file = (uint8_t)f;
		op.len = SPAN * BSZ;
		err = op_seq_push(seq, &op);
	}
	while (!err && props_more(t, &m)) {
		struct xstep st;

		/* all zeros: an exchange of block 0 of f0 with itself */
		st.kind = (X_EXCHANGE + (unsigned)props_below(t, NXKINDS)) %
			  NXKINDS;
		st.file = (unsigned)props_below(t, 2);
		st.src = (unsigned)props_below(t, 2);
		st.off = props_below(t, SPAN);
		st.soff = props_below(t, SPAN);
		st.len = 1 + props_below(t, SPAN / 2);
		if (remounts && st.kind == X_EXCHANGE) {
			memset(&op, 0, sizeof(op));
			op.kind = OP_REMOUNT;
			err = op_seq_push(seq, &op);
		}
		to_op(&st, &op);
		if (remounts && op.kind == OP_CRASH) /* the files must stay */
			op.kind = OP_FSYNC;
		if (!err)
			err = op_seq_push(seq, &op);
	}
	if (err) {
		props_ops_free(seq, NULL);
		return PROPS_ERROR;
	}
	*out = seq;
	return PROPS_PASS;
}

static const int with_remounts = 1;
static const struct props_type case_log =
	PROPS_LOG_TYPE("exchange log", case_alloc, NULL);
static const struct props_type remount_log =
	PROPS_LOG_TYPE("exchange log", case_alloc, &with_remounts);

/* ---- exchange_matches_model ---- */

static int matches_model(struct props_trial *t, void *seq)
{
	return props_check_log(t, seq, NULL, NULL, NULL);
}

/* ---- exchange_keeps_every_block ---- */

/* One mapped block: device block and state, either file. */
struct mblk { uint64_t blk; uint32_t state; };

struct blocks {
	struct mblk v[MAXB];
	int n;
};

static int add_blocks(void *arg, const struct ref_extent *e)
{
	struct blocks *b = arg;

	for (uint64_t i = 0; i < e->len; i++) {
		if (b->n == MAXB)
			return -ENOSPC;
		b->v[b->n].blk = e->startblk + i;
		b->v[b->n++].state = e->state;
	}
	return 0;
}

static int add_fork(void *arg, const struct ref_extent *e)
{
	*(uint64_t *)arg += e->len;
	return 0;
}

static int mblk_cmp(const void *x, const void *y)
{
	const struct mblk *a = x, *b = y;

	if (a->blk != b->blk)
		return a->blk < b->blk ? -1 : 1;
	return (a->state > b->state) - (a->state < b->state);
}

struct refs { uint64_t v[MAXB][3]; int n; };

static int add_ref(void *arg, uint64_t start, uint64_t len, uint32_t count)
{
	struct refs *r = arg;

	if (r->n == MAXB)
		return -ENOSPC;
	r->v[r->n][0] = start;
	r->v[r->n][1] = len;
	r->v[r->n++][2] = count;
	return 0;
}

/* What an exchange must keep. */
struct kept {
	uint64_t size[2];
	uint64_t space;       /* free + COW fork blocks - data-fork nodes */
	struct blocks b;
	struct refs r;
};

static int snapshot(struct ref_fs *fs, const uint64_t *ino, struct kept *k)
{
	const struct bt_stats *bt = &ref_counters(fs)->bt;
	struct ref_statfs sf;
	uint64_t fork = 0;
	int err = ref_statfs(fs, &sf);

	memset(k, 0, sizeof(*k));
	for (int f = 0; f < 2 && !err; f++) {
		struct ref_stat st;

		err = ref_stat(fs, ino[f], &st);
		k->size[f] = st.size;
		if (!err)
			err = ref_bmap(fs, ino[f], add_blocks, &k->b);
		if (!err)
			err = ref_cow_bmap(fs, ino[f], add_fork, &fork);
	}
	if (!err)
		err = ref_refcount_walk(fs, add_ref, &k->r);
	/* a cancelled fork's blocks are free again; a tree's nodes move */
	k->space = sf.free_blocks + fork + bt->node_allocs - bt->node_frees;
	qsort(k->b.v, (size_t)k->b.n, sizeof(k->b.v[0]), mblk_cmp);
	return err;
}

static const char *kept_diff(const struct kept *a, const struct kept *b)
{
	if (a->size[0] != b->size[0] || a->size[1] != b->size[1])
		return "sizes";
	if (a->b.n != b->b.n ||
	    memcmp(a->b.v, b->b.v, (size_t)a->b.n * sizeof(a->b.v[0])))
		return "the blocks the files map (with their states)";
	if (a->r.n != b->r.n ||
	    memcmp(a->r.v, b->r.v, (size_t)a->r.n * sizeof(a->r.v[0])))
		return "refcount records";
	if (a->space != b->space)
		return "free space (B+tree nodes and COW staging aside)";
	return NULL;
}

/* Snapshots around each exchange of the log, on the engine. */
struct keep_run {
	const struct op_seq *seq;
	struct kept k[2];
};

static int keep_hook(struct props_trial *t, struct target **tg, int n,
		     uint64_t opno, void *arg)
{
	struct keep_run *r = arg;
	const struct op_seq *seq = r->seq;
	int before = opno && opno < seq->n &&
		     seq->ops[opno].kind == OP_EXCHANGE_RANGE;
	int after = opno && seq->ops[opno - 1].kind == OP_EXCHANGE_RANGE;
	const char *what;

	if (!before && !after)
		return PROPS_PASS;
	for (int i = 0; i < n; i++) {
		struct ref_fs *fs;
		uint64_t ino[2];
		int err;

		if (engine_target_pin(tg[i]) < 0)
			continue;
		fs = engine_target_fs(tg[i]);
		err = !fs ? -EIO : ref_lookup(fs, tg[i]->names[0], &ino[0]);
		if (!err)
			err = ref_lookup(fs, tg[i]->names[1], &ino[1]);
		if (!err)
			err = snapshot(fs, ino, &r->k[before ? 0 : 1]);
		if (err) {
			props_note(t, "op %llu: the engine's state: %s",
				   (unsigned long long)opno, ref_strerror(err));
			return PROPS_ERROR;
		}
		if (before)
			return PROPS_PASS;
		what = kept_diff(&r->k[0], &r->k[1]);
		if (what) {
			props_note(t, "op %llu: the exchange changed %s",
				   (unsigned long long)opno, what);
			return PROPS_FAIL;
		}
		return PROPS_PASS;
	}
	props_note(t, "no engine target");
	return PROPS_ERROR;
}

static int keeps_every_block(struct props_trial *t, void *arg)
{
	struct keep_run *r = calloc(1, sizeof(*r));
	int res;

	if (!r)
		return PROPS_ERROR;
	r->seq = arg;
	res = props_check_log(t, arg, NULL, keep_hook, r);
	free(r);
	return res;
}

static const struct props_prop props[] = {
	{
		.name = "exchange_matches_model",
		.doc = "exchanges mixed with writes, preallocations, punches, "
		       "clones, fsyncs and crashes: the engine, its naive twin "
		       "and the model agree; audits pass",
		.cfg = { .prop1 = matches_model, .types = { &case_log } },
	},
	{
		.name = "exchange_keeps_every_block",
		.doc = "an exchange keeps sizes, the blocks the files map and "
		       "their states, refcounts and free space; audits pass",
		.cfg = { .prop1 = keeps_every_block,
			 .types = { &remount_log } },
	},
};

const struct props_suite props_suite_exchange = {
	.name = "exchange",
	.doc = "exchange range: engine vs model, and what a swap keeps",
	PROPS_LIST(props),
};
