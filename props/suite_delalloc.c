/*
 * suite_delalloc.c - seed path (e): delayed allocation, compressed
 * writeback and the delalloc cap on zoned devices, with tiny geometry.
 *
 * The differential properties run random op sequences on the optimized
 * engine, the naive one and the model in lock step, the engine audited
 * after every op: the audit recounts delalloc reservations (one per
 * delalloc page, on its device), requires every delalloc page over a
 * hole, every zoned extent at most the append limit, every compressed
 * extent whole and decodable, and no page left locked.  Sequences carry
 * the path switches, so both twins and the direct-I/O fallback are met.
 *
 * Properties:
 *   delalloc_compressed_agrees_with_the_model
 *                               delalloc through a 16-page cache, two of
 *                               three files compressed (chattr +c)
 *                               (writeback under pressure, expands of
 *                               compressed extents), crashes included
 *   delalloc_zoned_agrees_with_the_model
 *                               every file realtime on a zoned device
 *                               with 16 KiB appends and 96 KiB zones
 *                               (reclaim), two of three compressed
 *   delalloc_zoned_extents_within_device_append_limit
 *                               the zoned sequences, then every realtime
 *                               extent of both engines walked from
 *                               outside: none covers more device bytes
 *                               than the device reports as its largest
 *                               append (not the engine's own copy)
 *   delalloc_workers_agree_with_the_model
 *                               the zoned case mounted workers=2: the
 *                               chunks compressed by two threads
 *   delalloc_calls_follow_the_seed_formula
 *                               one write of L blocks, then sync, on a
 *                               zoned device with an append limit of A
 *                               blocks: the naive twin makes ceil(L/A)
 *                               delalloc calls, the optimized one
 *                               ceil(L/32768); with compression the
 *                               chunks and compressed extents are the
 *                               per-range sums the seed's arithmetic
 *                               gives, and the bytes read back
 */
#include "props/props.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw.h"
#include "ref/ref.h"

#define MKFS "bs=4k,maxrecs=4,inodes=64,journal=64"
#define NFILES 3
#define ZONED "zoned:mem,size=2m,zone=128k,cap=96k,append_max=16k,max_open=1," \
	      "max_active=1"
#define KINDS (PROPS_KINDS_DATA | PROPS_KINDS_DURABLE |                      \
	       PROPS_KIND(OP_FCOLLAPSE) | PROPS_KIND(OP_FINSERT) |           \
	       PROPS_KIND(OP_WRITEBACK) | PROPS_KIND(OP_DROP_CACHES) |       \
	       PROPS_KIND(OP_CRASH) | PROPS_KIND(OP_REMOUNT) |               \
	       PROPS_KIND(OP_NAIVE) | PROPS_KIND(OP_FALLBACK) |              \
	       PROPS_KIND(OP_COPY_RANGE))

static struct props_targets plain_pt = {
	.list = "engine,naive,model", .dev = "mem:16m", .mkfs = MKFS,
	.mount = "delalloc,pagecache=16",
};
static struct props_targets zoned_pt = {
	.list = "engine,naive,model", .dev = "mem:16m", .mkfs = MKFS,
	.mount = "delalloc,pagecache=16", .rtdev = ZONED,
};

/* The same with two compression workers in every engine (threads). */
static struct props_targets workers_pt = {
	.list = "engine,naive,model", .dev = "mem:16m", .mkfs = MKFS,
	.mount = "delalloc,pagecache=16,workers=2", .rtdev = ZONED,
};

static const struct props_ops_env plain_env = {
	.max_file = 256 * 1024, .nfiles = NFILES, .kinds = KINDS,
	.max_ops = 48, .avg_ops = 16, .dev = "mem:16m", .mkfs = MKFS,
	.targets = "engine,naive,model",
};
static const struct props_ops_env zoned_env = {
	.max_file = 128 * 1024, .nfiles = NFILES, .kinds = KINDS,
	.max_ops = 48, .avg_ops = 16, .dev = "mem:16m", .mkfs = MKFS,
	.targets = "engine,naive,model",
};
static const struct props_type plain_ops = PROPS_OPS_TYPE(&plain_env);
static const struct props_type zoned_ops = PROPS_OPS_TYPE(&zoned_env);

static int agrees(struct props_trial *t, struct props_targets *pt,
		  const struct op_seq *seq)
{
	struct check_cfg cc = { .audit_every = 1, .verify_every = 8 };

	return props_check_ops(t, pt, seq, &cc);
}

/*
 * seq after a chattr of every file: attrs, and OP_ATTR_COMPRESS too for
 * all but f2 (uncompressed beside compressed; a build without the
 * library refuses +c, and the target answers as the model does).
 */
static int with_flags(struct props_trial *t, struct props_targets *pt,
		      const struct op_seq *seq, uint64_t attrs)
{
	struct op_seq s;
	int res = PROPS_ERROR;

	op_seq_init(&s);
	if (op_seq_copy(&s, seq))
		goto out;
	s.n = 0;
	for (unsigned f = 0; f < NFILES; f++) {
		struct op op = { .kind = OP_SET_FLAG, .file = (uint8_t)f,
				 .arg = attrs | (f != 2 ? OP_ATTR_COMPRESS : 0) };

		if (op_seq_push(&s, &op))
			goto out;
	}
	for (size_t i = 0; i < seq->n; i++)
		if (op_seq_push(&s, &seq->ops[i]))
			goto out;
	res = agrees(t, pt, &s);
out:
	op_seq_free(&s);
	return res;
}

static int plain_agrees(struct props_trial *t, void *arg)
{
	return with_flags(t, &plain_pt, arg, 0);
}

/* Every file realtime from its first op. */
static int zoned_agrees(struct props_trial *t, void *arg)
{
	return with_flags(t, &zoned_pt, arg, OP_ATTR_REALTIME);
}

/* The zoned sequences, then the device's append limit on both engines. */
static int zoned_within_limit(struct props_trial *t, void *arg)
{
	int res = with_flags(t, &zoned_pt, arg, OP_ATTR_REALTIME);

	for (int i = 0; i < 2 && res == PROPS_PASS; i++)
		res = props_append_limit_held(t, zoned_pt.t[i], NFILES);
	return res;
}

/* Realtime and compressed, written back by two worker threads. */
static int workers_agree(struct props_trial *t, void *arg)
{
	return with_flags(t, &workers_pt, arg, OP_ATTR_REALTIME);
}

/* ---- the formula ---- */

struct formula_case {
	uint32_t blocks;      /* L: the write, in 4 KiB blocks          */
	uint32_t append;      /* A: append_max in blocks                */
	int compress;
};

static int fc_alloc(struct props_trial *t, void *env, void **out)
{
	struct formula_case *c = malloc(sizeof(*c));

	(void)env;
	if (!c)
		return PROPS_ERROR;
	c->blocks = (uint32_t)props_int(t, 1, 1024);
	c->append = (uint32_t)props_int(t, 1, 96);
	c->compress = props_bool(t);
	*out = c;
	return PROPS_PASS;
}

static void fc_print(FILE *f, const void *inst, void *env)
{
	const struct formula_case *c = inst;

	(void)env;
	fprintf(f, "write %u blocks, append_max %u blocks, compress %d\n",
		c->blocks, c->append, c->compress);
}

static void fc_free(void *inst, void *env)
{
	(void)env;
	free(inst);
}

static const struct props_type fc_type = {
	.name = "formula", .alloc = fc_alloc, .free = fc_free, .print = fc_print,
};

struct ctr_pick { const char *name; uint64_t v; };
static void ctr_visit(void *arg, const char *name, uint64_t v)
{
	struct ctr_pick *p = arg;

	if (!strcmp(p->name, name))
		p->v = v;
}

static uint64_t ctr_of(struct ref_fs *fs, const char *name)
{
	struct ctr_pick p = { name, UINT64_MAX };

	ref_counters_foreach(ref_counters(fs), ctr_visit, &p);
	return p.v;
}

static uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Chunks and compressed pieces of one run of r blocks: chunks of 128,
 * pieces of at most min(32, cap) blocks; a 1-block piece is stored as it
 * is (it cannot shrink by a block), every other one compresses. */
static void run_cost(uint64_t r, uint64_t cap, uint64_t *chunks,
		     uint64_t *pieces)
{
	uint64_t piece = cap < 32 ? cap : 32;

	for (uint64_t done = 0; done < r;) {
		uint64_t c = r - done < 128 ? r - done : 128;

		*chunks += 1;
		*pieces += c / piece * (piece >= 2) + (c % piece >= 2);
		done += c;
	}
}

/* One twin: write, sync, counters; PROPS_PASS or why not in *note. */
static int formula_twin(struct props_trial *t, const struct formula_case *c,
			int compress, int naive, uint64_t got[3])
{
	char spec[160], opts[96];
	struct ref_mkfs_opts mo = { .inodes = 16 };
	struct ref_mount_opts o = { 0 };
	struct hw_dev *dev = NULL, *rt = NULL;
	struct ref_fs *fs = NULL;
	uint64_t len = (uint64_t)c->blocks * 4096, ino;
	uint8_t *buf = malloc(len), *back = malloc(len);
	int res = PROPS_ERROR;

	snprintf(spec, sizeof(spec), "zoned:mem,size=64m,zone=16m,append_max=%u",
		 c->append * 4096u);
	snprintf(opts, sizeof(opts), "%s,pagecache=2048%s",
		 compress ? "compress=zstd" : "delalloc",
		 naive ? ",naive=delalloc_cap" : "");
	if (!buf || !back || hw_open("mem:16m", &dev, NULL, 0) ||
	    hw_open(spec, &rt, NULL, 0))
		goto out;
	mo.rtdev = rt;
	if (ref_mkfs(dev, &mo) || ref_parse_mount_opts(opts, &o, NULL, 0))
		goto out;
	o.rtdev = rt;
	if (ref_mount(dev, &o, &fs) == -EOPNOTSUPP) {
		res = -EOPNOTSUPP; /* a build without a compression library */
		goto out;
	}
	if (!fs || ref_create(fs, "f", &ino) ||
	    ref_set_flags(fs, ino, REF_FLAG_REALTIME, 0))
		goto out;
	for (uint64_t i = 0; i < len; i++) /* compressible, not constant */
		buf[i] = (uint8_t)((i / 4096) * 7 + (i % 13));
	if (ref_pwrite(fs, ino, buf, len, 0) != (int64_t)len ||
	    ref_sync(fs) || ref_drop_caches(fs) ||
	    ref_pread(fs, ino, back, len, 0) != (int64_t)len)
		goto out;
	res = PROPS_PASS;
	if (memcmp(buf, back, len)) {
		props_note(t, "%s twin: the bytes read back differ",
			   naive ? "naive" : "optimized");
		res = PROPS_FAIL;
	}
	got[0] = ctr_of(fs, "delalloc_calls");
	got[1] = ctr_of(fs, "async_chunks");
	got[2] = ctr_of(fs, "compressed_extents");
out:
	if (fs)
		ref_unmount(fs);
	hw_close(dev);
	hw_close(rt);
	free(buf);
	free(back);
	return res;
}

static int formula_holds(struct props_trial *t, void *arg)
{
	const struct formula_case *c = arg;
	uint64_t want[2][3] = { { 0 } }, got[2][3];
	uint64_t L = c->blocks, A = c->append, lim[2] = { A, 32768 };
	int compress = c->compress;

	for (int tw = 0; tw < 2; tw++) {
		int r = formula_twin(t, c, compress, tw == 0, got[tw]);

		if (r == -EOPNOTSUPP) { /* no compression here: the plain form */
			compress = 0;
			r = formula_twin(t, c, compress, tw == 0, got[tw]);
		}
		if (r != PROPS_PASS)
			return r == -EOPNOTSUPP ? PROPS_ERROR : r;
	}
	for (int tw = 0; tw < 2; tw++) {
		want[tw][0] = div_up(L, lim[tw]);
		for (uint64_t done = 0; compress && done < L;) {
			uint64_t r = L - done < lim[tw] ? L - done : lim[tw];

			run_cost(r, A, &want[tw][1], &want[tw][2]);
			done += r;
		}
		for (int k = 0; k < 3; k++) {
			if (got[tw][k] != want[tw][k]) {
				static const char *const what[] = {
					"delalloc calls", "async chunks",
					"compressed extents" };

				props_note(t, "%s twin: %llu %s, the formula says "
					   "%llu", tw ? "optimized" : "naive",
					   (unsigned long long)got[tw][k], what[k],
					   (unsigned long long)want[tw][k]);
				return PROPS_FAIL;
			}
		}
	}
	return PROPS_PASS;
}

static const struct props_prop props[] = {
	{
		.name = "delalloc_compressed_agrees_with_the_model",
		.doc = "compressed delalloc writeback through a 16-page cache: "
		       "optimized, naive and model agree, audits clean",
		.cfg = PROPS_TARGETS_CFG(plain_agrees, &plain_ops, &plain_pt),
	},
	{
		.name = "delalloc_zoned_agrees_with_the_model",
		.doc = "realtime files on a tiny zoned device with delalloc "
		       "(two compressed): twins and model agree, audits clean",
		.cfg = PROPS_TARGETS_CFG(zoned_agrees, &zoned_ops, &zoned_pt),
	},
	{
		.name = "delalloc_zoned_extents_within_device_append_limit",
		.doc = "after the zoned sequences no realtime extent of either "
		       "engine covers more than the device's reported append "
		       "limit",
		.cfg = PROPS_TARGETS_CFG(zoned_within_limit, &zoned_ops,
					 &zoned_pt),
	},
	{
		.name = "delalloc_workers_agree_with_the_model",
		.doc = "the zoned case with workers=2: chunks compressed by "
		       "two threads, submitted in order; twins and model "
		       "agree, audits clean (run it under TSan too)",
		.cfg = PROPS_TARGETS_CFG(workers_agree, &zoned_ops,
					 &workers_pt),
	},
	{
		.name = "delalloc_calls_follow_the_seed_formula",
		.doc = "one write then sync: delalloc calls, chunks and "
		       "compressed extents are the seed's arithmetic",
		.cfg = { .prop1 = formula_holds, .types = { &fc_type },
			 .trials = 40 },
	},
};

const struct props_suite props_suite_delalloc = {
	.name = "delalloc",
	.doc = "seed path (e): delayed allocation, compressed writeback, the "
	       "zoned cap",
	PROPS_LIST(props),
};
