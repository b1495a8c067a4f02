/*
 * suite_exchange.c - exchange range: the engine against the model, and
 * what a swap of mappings must leave alone.  A generated case writes two
 * files whole, then mixes writes, preallocations, punches, clones,
 * exchanges (block-aligned, inside the files, so most of them swap),
 * fsyncs and power cuts over them.
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
 *   exchange_keeps_every_block each exchange on the engine leaves the
 *                              files' sizes, the blocks the two files map
 *                              (each with its state, whichever file has
 *                              it), the refcount records and the free
 *                              space (data-fork B+tree nodes aside; a
 *                              remount before it frees COW staging) as
 *                              they were;
 *                              the audit passes
 */
#include "props/props.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness/op.h"
#include "hw/hw.h"
#include "ref/ref.h"

#define MAXSTEPS 10
#define SPAN 16                /* files are SPAN blocks long at first   */
#define BSZ 1024u
#define DEV "mem:2m"
#define MKFS "bs=1k,maxrecs=4,maxext=5,journal=64,inodes=16,reflink=1"
#define MAXB (4 * SPAN)        /* blocks the two files map, at most     */

enum { X_WRITE, X_FALLOC, X_PUNCH, X_CLONE, X_EXCHANGE, X_FSYNC, X_CRASH,
       NXKINDS };
static const char *const xkind_name[NXKINDS] = {
	"pwrite", "falloc -k", "fpunch", "reflink", "exchangerange", "fsync",
	"crash" };

struct xstep { unsigned kind, file, src; uint64_t off, len, soff; };
struct xcase {
	struct xstep step[MAXSTEPS];
	unsigned nsteps;
};

static int case_alloc(struct props_trial *t, void *env, void **out)
{
	struct xcase *c = calloc(1, sizeof(*c));
	struct props_many m = PROPS_MANY(1, MAXSTEPS, 5);

	(void)env;
	if (!c)
		return PROPS_ERROR;
	while (props_more(t, &m)) {
		struct xstep *st = &c->step[c->nsteps++];

		/* all zeros: an exchange of block 0 of f0 with itself */
		st->kind = (X_EXCHANGE + (unsigned)props_below(t, NXKINDS)) %
			   NXKINDS;
		st->file = (unsigned)props_below(t, 2);
		st->src = (unsigned)props_below(t, 2);
		st->off = props_below(t, SPAN);
		st->soff = props_below(t, SPAN);
		st->len = 1 + props_below(t, SPAN / 2);
	}
	*out = c;
	return PROPS_PASS;
}

static void case_print(FILE *f, const void *inst, void *env)
{
	const struct xcase *c = inst;

	(void)env;
	fprintf(f, "mkfs %s; f0, f1 written to %u blocks of %u bytes, then:\n",
		MKFS, SPAN, BSZ);
	for (unsigned i = 0; i < c->nsteps; i++) {
		const struct xstep *s = &c->step[i];

		fprintf(f, "  %s f%u block %llu, %llu blocks", xkind_name[s->kind],
			s->file, (unsigned long long)s->off,
			(unsigned long long)s->len);
		if (s->kind == X_CLONE || s->kind == X_EXCHANGE)
			fprintf(f, " <-> f%u block %llu", s->src,
				(unsigned long long)s->soff);
		fputc('\n', f);
	}
}

static const struct props_type case_type = {
	.name = "exchange case", .alloc = case_alloc, .print = case_print,
};

/* ---- exchange_matches_model ---- */

static struct props_targets pt = {
	.list = "engine,naive,model", .dev = DEV, .mkfs = MKFS,
};

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

static int matches_model(struct props_trial *t, void *arg)
{
	const struct xcase *c = arg;
	struct op_seq seq;
	struct op op;
	int res = PROPS_ERROR;

	op_seq_init(&seq);
	for (unsigned f = 0; f < 2; f++) {
		memset(&op, 0, sizeof(op));
		op.kind = OP_PWRITE;
		op.file = (uint8_t)f;
		op.len = SPAN * BSZ;
		if (op_seq_push(&seq, &op))
			goto out;
	}
	for (unsigned i = 0; i < c->nsteps; i++) {
		to_op(&c->step[i], &op);
		if (op_seq_push(&seq, &op))
			goto out;
	}
	res = props_check_ops(t, &pt, &seq, NULL);
out:
	op_seq_free(&seq);
	return res;
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

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

/* One step straight on the engine; crashes and fsyncs are left out. */
static int64_t apply(struct ref_fs *fs, const uint64_t *ino,
		     const struct xstep *s, uint8_t *buf)
{
	uint64_t f = ino[s->file], src = ino[s->src];

	switch (s->kind) {
	case X_WRITE:
		memset(buf, (int)(s->off * 7 + s->len) | 1, s->len * BSZ);
		return ref_pwrite(fs, f, buf, s->len * BSZ, s->off * BSZ);
	case X_FALLOC:
		return ref_fallocate(fs, f, REF_FALLOC_KEEP_SIZE, s->off * BSZ,
				     s->len * BSZ);
	case X_PUNCH:
		return ref_fallocate(fs, f, REF_FALLOC_KEEP_SIZE |
				     REF_FALLOC_PUNCH_HOLE, s->off * BSZ,
				     s->len * BSZ);
	case X_CLONE:
		return ref_clone_range(fs, f, s->off * BSZ, src, s->soff * BSZ,
				       s->len * BSZ);
	case X_EXCHANGE:
		return ref_exchange_range(fs, f, s->off * BSZ, src,
					  s->soff * BSZ, s->len * BSZ);
	default:
		return 0;
	}
}

static int keeps_every_block(struct props_trial *t, void *arg)
{
	const struct xcase *c = arg;
	struct ref_mkfs_opts mo = { 0 };
	struct ref_mount_opts mnt = { 0 };
	struct hw_dev *dev = NULL;
	struct ref_fs *fs = NULL;
	struct kept *k = calloc(2, sizeof(*k));
	uint8_t *buf = malloc(SPAN * BSZ);
	uint64_t ino[2];
	int res = PROPS_ERROR;
	char err[160];

	if (!k || !buf || hw_open(DEV, &dev, NULL, 0) ||
	    ref_parse_mkfs_opts(MKFS, &mo, err, sizeof(err)) ||
	    ref_mkfs(dev, &mo) || ref_mount(dev, &mnt, &fs) ||
	    ref_create(fs, "f0", &ino[0]) || ref_create(fs, "f1", &ino[1]))
		goto out;
	for (unsigned f = 0; f < 2; f++) {
		memset(buf, (int)f + 1, SPAN * BSZ);
		if (ref_pwrite(fs, ino[f], buf, SPAN * BSZ, 0) != SPAN * BSZ)
			goto out;
	}
	res = PROPS_PASS;
	for (unsigned i = 0; i < c->nsteps && res == PROPS_PASS; i++) {
		const struct xstep *s = &c->step[i];
		const char *what;
		int64_t r;

		/* a remount first frees the COW preallocations, whose
		 * staging tree's nodes the space count cannot see */
		if (s->kind == X_EXCHANGE &&
		    (ref_unmount(fs) || (fs = NULL, ref_mount(dev, &mnt, &fs)) ||
		     snapshot(fs, ino, &k[0]))) {
			res = PROPS_ERROR;
			break;
		}
		r = apply(fs, ino, s, buf);
		if (r < 0 && r != -EINVAL) {
			props_note(t, "step %u: %s failed: %s", i + 1,
				   xkind_name[s->kind], ref_strerror((int)r));
			res = PROPS_FAIL;
		} else if (s->kind == X_EXCHANGE) {
			if (snapshot(fs, ino, &k[1])) {
				res = PROPS_ERROR;
				break;
			}
			what = kept_diff(&k[0], &k[1]);
			if (what) {
				props_note(t, "step %u: the exchange changed %s",
					   i + 1, what);
				res = PROPS_FAIL;
			}
		}
		if (res == PROPS_PASS && ref_audit(fs, quiet, NULL)) {
			props_note(t, "step %u: the audit fails after %s", i + 1,
				   xkind_name[s->kind]);
			res = PROPS_FAIL;
		}
	}
out:
	if (fs)
		ref_abandon(fs);
	hw_close(dev);
	free(k);
	free(buf);
	return res;
}

static const struct props_prop props[] = {
	{
		.name = "exchange_matches_model",
		.doc = "exchanges mixed with writes, preallocations, punches, "
		       "clones, fsyncs and crashes: the engine, its naive twin "
		       "and the model agree; audits pass",
		.cfg = PROPS_TARGETS_CFG(matches_model, &case_type, &pt),
	},
	{
		.name = "exchange_keeps_every_block",
		.doc = "an exchange keeps sizes, the blocks the files map and "
		       "their states, refcounts and free space; audits pass",
		.cfg = { .prop1 = keeps_every_block, .types = { &case_type } },
	},
};

const struct props_suite props_suite_exchange = {
	.name = "exchange",
	.doc = "exchange range: engine vs model, and what a swap keeps",
	.props = props,
	.nprops = sizeof(props) / sizeof(props[0]),
};
