/*
 * suite_crash.c - the crash layer as a device model: what a power cut may
 * leave on a block device and on persistent memory.
 *
 * A trial is a sequence of device I/Os (writes, FUA writes, zero-outs,
 * flushes; on pmem stores and persists of byte ranges) followed by one
 * cut.  The model knows nothing of the layer's records: it keeps, per
 * byte, the history of what was written there and whether that write is
 * durable yet, and after the cut replays the history in issue order,
 * applying each write that is durable or that the cut keeps.  The device
 * must then read back exactly that image.
 *
 *   durable      a flush makes every earlier write durable; an HW_FUA
 *                write makes itself durable; hw_persist(off, len) makes
 *                the bytes of [off, off+len) durable (pmem)
 *   kept         DROP_ALL none, KEEP_ALL all, PREFIX the first n pending
 *                writes, MASK pending write i iff bit i, MARK every
 *                write issued before the mark
 *   torn         PREFIX with tear=UNITS: the first dropped write keeps its
 *                first `units` atomic units (sectors; 8-byte words on
 *                pmem), counted from its first byte, unit edges aligned
 *
 * Properties:
 *   crash_block_cut_image_exact   on crash:mem: the image after any cut is
 *                                 the model's, and nothing stays pending
 *   crash_pmem_cut_image_exact    the same on crash:pmem: with persists of
 *                                 arbitrary byte ranges (cuts that do not
 *                                 depend on how persist splits records);
 *                                 not in builds without libpmem2 (MSan)
 *   crash_device_runs_on_after_cut  after a cut, new writes and a second
 *                                 DROP_ALL cut leave the first cut's image
 *                                 plus the new durable writes
 *   crash_engine_cut_keeps_fsynced  the engine against the model through
 *                                 the checker, with `cut` ops (the power
 *                                 cut model of every loop, harness/cut.h)
 *                                 among data, sync, crash and remount
 *                                 ops; the input's first bit picks the
 *                                 device: crash:mem: (0) or crash:pmem:
 *                                 through its real persist path (1; an
 *                                 8-byte-tearing mem: without libpmem2):
 *                                 every fsynced file reads back after each
 *                                 cut and the audit passes
 */
#include "props/props.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/cut.h"
#include "hw/hw.h"
#include "ref/ref.h"

#define DEV_BYTES  (64 * 1024)
#define SECTOR     512u
#define MAX_IOS    40

enum io_kind { IO_WRITE, IO_FUA, IO_ZERO, IO_FLUSH, IO_PERSIST, IO_MARK,
	       IO_KINDS };

struct io {
	uint8_t kind;
	uint32_t off, len;
	uint32_t seed;          /* the data pattern */
};

struct trial_seq {
	int pmem;
	unsigned n;
	struct io io[MAX_IOS];
	struct hw_cut cut;
	uint8_t mask[(MAX_IOS + 7) / 8];
	unsigned mark_io;       /* MARK cuts: at io #mark_io */
	unsigned after;         /* runs-on: writes after the cut */
	struct io post[8];
};

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	uint32_t x = seed * 2654435761u + i * 40503u;

	return (uint8_t)(x >> 13 ^ x >> 5);
}

/* ---- generation ---- */

struct gen_env { int pmem; int runs_on; };

static void gen_range(struct props_trial *t, int pmem, struct io *io)
{
	if (pmem) {
		io->off = (uint32_t)props_below(t, DEV_BYTES);
		io->len = (uint32_t)props_int(t, 1, 4096);
		if (io->off + io->len > DEV_BYTES)
			io->len = DEV_BYTES - io->off;
	} else {
		uint32_t s = (uint32_t)props_below(t, DEV_BYTES / SECTOR);
		uint32_t n = (uint32_t)props_int(t, 1, 8);

		if (s + n > DEV_BYTES / SECTOR)
			n = DEV_BYTES / SECTOR - s;
		io->off = s * SECTOR;
		io->len = n * SECTOR;
	}
}

static void gen_io(struct props_trial *t, int pmem, struct io *io)
{
	/* pmem: stores, persists, flushes; block: writes, FUA, zero, flush */
	static const uint8_t block_kinds[] = { IO_WRITE, IO_WRITE, IO_WRITE,
					       IO_FUA, IO_ZERO, IO_FLUSH };
	static const uint8_t pmem_kinds[] = { IO_WRITE, IO_WRITE, IO_WRITE,
					      IO_PERSIST, IO_PERSIST, IO_FLUSH };

	io->kind = pmem ? pmem_kinds[props_below(t, sizeof(pmem_kinds))]
			: block_kinds[props_below(t, sizeof(block_kinds))];
	if (io->kind != IO_FLUSH)
		gen_range(t, pmem, io);
	io->seed = (uint32_t)props_bits(t, 16);
}

static int seq_alloc(struct props_trial *t, void *env, void **out)
{
	const struct gen_env *ge = env;
	struct trial_seq *s = calloc(1, sizeof(*s));
	struct props_many m = PROPS_MANY(0, MAX_IOS, 12);

	if (!s)
		return PROPS_ERROR;
	s->pmem = ge->pmem;
	while (props_more(t, &m))
		gen_io(t, s->pmem, &s->io[s->n++]);
	/* pmem records split at persist edges, so pending-index cuts
	 * (PREFIX, MASK) are block-only; MARK counts issued writes. */
	if (s->pmem) {
		static const enum hw_cut_kind k[] = {
			HW_CUT_DROP_ALL, HW_CUT_KEEP_ALL, HW_CUT_MARK };
		s->cut.kind = k[props_below(t, 3)];
	} else {
		s->cut.kind = (enum hw_cut_kind)props_below(t, HW_CUT_MASK + 1);
		if (s->cut.kind == HW_CUT_MARK || s->cut.kind == HW_CUT_RANDOM)
			s->cut.kind = HW_CUT_PREFIX;
	}
	s->cut.n = props_below(t, MAX_IOS + 1);  /* clipped at run time */
	s->mark_io = (unsigned)props_below(t, s->n + 1);
	for (unsigned i = 0; i < sizeof(s->mask); i++)
		s->mask[i] = (uint8_t)props_bits(t, 8);
	if (!s->pmem && s->cut.kind == HW_CUT_PREFIX && props_bool(t)) {
		s->cut.tear = HW_TEAR_UNITS;
		s->cut.units = props_below(t, 8);
	}
	if (ge->runs_on) {
		s->after = (unsigned)props_below(t, 9);
		for (unsigned i = 0; i < s->after; i++) {
			gen_io(t, s->pmem, &s->post[i]);
			if (s->post[i].kind == IO_PERSIST ||
			    s->post[i].kind == IO_FLUSH)
				s->post[i].kind = IO_FUA;
			if (s->pmem && s->post[i].kind == IO_FUA)
				s->post[i].kind = IO_WRITE;
		}
	}
	*out = s;
	return PROPS_PASS;
}

static const char *const io_names[IO_KINDS] = {
	"write", "write-fua", "zero", "flush", "persist", "mark" };
static const char *const cut_names[] = {
	"drop-all", "keep-all", "prefix", "mark", "random", "mask" };

static void seq_print(FILE *f, const void *inst, void *env)
{
	const struct trial_seq *s = inst;

	(void)env;
	fprintf(f, "%s device, %u I/Os:\n", s->pmem ? "pmem" : "block", s->n);
	for (unsigned i = 0; i < s->n; i++) {
		if (s->cut.kind == HW_CUT_MARK && i == s->mark_io)
			fprintf(f, "  mark\n");
		fprintf(f, "  %s", io_names[s->io[i].kind]);
		if (s->io[i].kind != IO_FLUSH)
			fprintf(f, " %u+%u", s->io[i].off, s->io[i].len);
		fprintf(f, "\n");
	}
	fprintf(f, "  cut %s n=%llu tear=%s units=%llu\n",
		cut_names[s->cut.kind], (unsigned long long)s->cut.n,
		s->cut.tear ? "units" : "none",
		(unsigned long long)s->cut.units);
	for (unsigned i = 0; i < s->after; i++)
		fprintf(f, "  then %s %u+%u\n", io_names[s->post[i].kind],
			s->post[i].off, s->post[i].len);
}

/* ---- the model: per byte, the writes in issue order ---- */

struct hist {
	uint16_t io;            /* index of the write          */
	uint8_t val;
	uint8_t durable;
};

struct model {
	struct hist *h[DEV_BYTES];
	uint16_t n[DEV_BYTES], cap[DEV_BYTES];
	uint8_t base[DEV_BYTES];        /* the image before the sequence */
};

static int hist_push(struct model *m, uint32_t b, uint16_t io, uint8_t v,
		     uint8_t durable)
{
	if (m->n[b] == m->cap[b]) {
		uint16_t c = m->cap[b] ? (uint16_t)(m->cap[b] * 2) : 4;
		struct hist *p = realloc(m->h[b], c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		m->h[b] = p;
		m->cap[b] = c;
	}
	m->h[b][m->n[b]++] = (struct hist){ io, v, durable };
	return 0;
}

static void model_free(struct model *m)
{
	for (uint32_t b = 0; b < DEV_BYTES; b++)
		free(m->h[b]);
	free(m);
}

static void all_durable(struct model *m, uint32_t off, uint32_t len)
{
	for (uint32_t b = off; b < off + len; b++)
		for (uint16_t i = 0; i < m->n[b]; i++)
			m->h[b][i].durable = 1;
}

/* ---- running ---- */

static int do_io(struct hw_dev *dev, const struct io *io, uint8_t *buf)
{
	switch (io->kind) {
	case IO_WRITE:
	case IO_FUA:
		for (uint32_t i = 0; i < io->len; i++)
			buf[i] = pattern(io->seed, io->off + i);
		return hw_write(dev, io->off, buf, io->len,
				io->kind == IO_FUA ? HW_FUA : 0);
	case IO_ZERO:
		return hw_zero_out(dev, io->off, io->len, 0);
	case IO_FLUSH:
		return hw_flush(dev);
	case IO_PERSIST:
		return hw_persist(dev, io->off, io->len);
	default:
		return -EINVAL;
	}
}

/* Record io (number k) in the model. */
static int model_io(struct model *m, const struct io *io, uint16_t k)
{
	switch (io->kind) {
	case IO_WRITE:
	case IO_FUA:
	case IO_ZERO:
		for (uint32_t b = io->off; b < io->off + io->len; b++) {
			uint8_t v = io->kind == IO_ZERO ? 0
							: pattern(io->seed, b);

			if (hist_push(m, b, k, v, io->kind == IO_FUA))
				return -ENOMEM;
		}
		return 0;
	case IO_FLUSH:
		all_durable(m, 0, DEV_BYTES);
		return 0;
	case IO_PERSIST:
		all_durable(m, io->off, io->len);
		return 0;
	default:
		return -EINVAL;
	}
}

static int is_write(const struct io *io)
{
	return io->kind == IO_WRITE || io->kind == IO_FUA ||
	       io->kind == IO_ZERO;
}

/*
 * Which writes the cut keeps: kept[k] for every write k, from the
 * writes still pending when the cut came (pending[k]).  torn is the
 * write the cut tears (-1: none).
 */
static void fates(const struct trial_seq *s, const uint8_t *pending,
		  uint8_t *kept, int *torn)
{
	uint64_t pi = 0;

	*torn = -1;
	for (unsigned k = 0; k < s->n; k++) {
		int keep = 0;

		kept[k] = 0;
		if (!is_write(&s->io[k]))
			continue;
		if (!pending[k]) {
			kept[k] = 1;
			continue;
		}
		switch (s->cut.kind) {
		case HW_CUT_KEEP_ALL: keep = 1; break;
		case HW_CUT_PREFIX:   keep = pi < s->cut.n; break;
		case HW_CUT_MARK:     keep = k < s->mark_io; break;
		case HW_CUT_MASK:     keep = s->mask[pi / 8] >> (pi % 8) & 1;
				      break;
		default:              break;
		}
		pi++;
		kept[k] = (uint8_t)keep;
		if (!keep && *torn < 0 && s->cut.tear == HW_TEAR_UNITS)
			*torn = (int)k;
	}
}

/* Was byte b of torn write io kept?  Its first `units` atomic units. */
static int torn_byte_kept(const struct io *io, uint32_t b, uint32_t atomic,
			  uint64_t units)
{
	uint64_t first = io->off / atomic;

	return (b / atomic) - first < units;
}

struct runner {
	struct hw_dev *dev;
	char path[64];
	uint8_t *img, *buf;
	struct model *m;
};

static int runner_open(struct props_trial *t, struct runner *r, int pmem)
{
	char spec[128], err[160];
	int rc;

	memset(r, 0, sizeof(*r));
	r->img = malloc(DEV_BYTES);
	r->buf = malloc(DEV_BYTES);
	r->m = calloc(1, sizeof(*r->m));
	if (!r->img || !r->buf || !r->m)
		return -ENOMEM;
	if (pmem) {
		int fd;

		snprintf(r->path, sizeof(r->path), "/tmp/fso-prop-pmem-XXXXXX");
		fd = mkstemp(r->path);
		if (fd < 0)
			return -errno;
		close(fd);
		snprintf(spec, sizeof(spec), "crash:pmem:%s,size=%u", r->path,
			 DEV_BYTES);
	} else {
		snprintf(spec, sizeof(spec), "crash:mem:%u", DEV_BYTES);
	}
	rc = hw_open(spec, &r->dev, err, sizeof(err));
	if (rc)
		props_note(t, "open %s: %s", spec, err);
	return rc;
}

static void runner_close(struct runner *r)
{
	if (r->dev)
		hw_close(r->dev);
	if (r->path[0])
		unlink(r->path);
	free(r->img);
	free(r->buf);
	if (r->m)
		model_free(r->m);
}

/* The model's image after the cut, into out. */
static void model_image(const struct runner *r, const struct trial_seq *s,
			const uint8_t *kept, int torn, uint32_t atomic,
			uint8_t *out)
{
	for (uint32_t b = 0; b < DEV_BYTES; b++) {
		uint8_t v = r->m->base[b];

		for (uint16_t i = 0; i < r->m->n[b]; i++) {
			const struct hist *h = &r->m->h[b][i];

			if (h->durable || kept[h->io] ||
			    (h->io == torn &&
			     torn_byte_kept(&s->io[h->io], b, atomic,
					    s->cut.units)))
				v = h->val;
		}
		out[b] = v;
	}
}

static int compare(struct props_trial *t, struct runner *r,
		   const uint8_t *want, const char *when)
{
	int rc = hw_read(r->dev, 0, r->img, DEV_BYTES);

	if (rc) {
		props_note(t, "%s: read back: %d", when, rc);
		return PROPS_FAIL;
	}
	for (uint32_t b = 0; b < DEV_BYTES; b++) {
		if (r->img[b] != want[b]) {
			props_note(t, "%s: byte %u is 0x%02x, the model says "
				   "0x%02x", when, b, r->img[b], want[b]);
			return PROPS_FAIL;
		}
	}
	return PROPS_PASS;
}

/* Record pending[k]: is write k not yet durable in any byte? */
static void pending_writes(const struct runner *r, const struct trial_seq *s,
			   uint8_t *pending)
{
	memset(pending, 0, MAX_IOS);
	for (uint32_t b = 0; b < DEV_BYTES; b++)
		for (uint16_t i = 0; i < r->m->n[b]; i++)
			if (!r->m->h[b][i].durable)
				pending[r->m->h[b][i].io] = 1;
	(void)s;
}

/*
 * Runs on: the cut image is the new base; new writes (FUA ones durable,
 * so into want), then a DROP_ALL cut keeps the base plus those.
 */
static int runs_on(struct props_trial *t, struct runner *r,
		   const struct trial_seq *s, uint8_t *want)
{
	int rc, res = PROPS_PASS;

	for (unsigned i = 0; res == PROPS_PASS && i < s->after; i++) {
		const struct io *io = &s->post[i];

		if ((rc = do_io(r->dev, io, r->buf))) {
			props_note(t, "after the cut, %s: %d", io_names[io->kind],
				   rc);
			res = PROPS_FAIL;
		} else if (io->kind == IO_FUA) {
			for (uint32_t b = io->off; b < io->off + io->len; b++)
				want[b] = pattern(io->seed, b);
		}
	}
	if (res == PROPS_PASS && s->after) {
		static const struct hw_cut drop_all;

		if ((rc = hw_crash_cut(r->dev, &drop_all))) {
			props_note(t, "second cut: %d", rc);
			res = PROPS_FAIL;
		} else {
			res = compare(t, r, want, "after the second cut");
		}
	}
	return res;
}

static int cut_image_exact(struct props_trial *t, void *arg)
{
	struct trial_seq *s = arg;
	struct runner r;
	struct hw_crash_info ci;
	uint8_t pending[MAX_IOS], kept[MAX_IOS], *want = NULL;
	int torn, rc, res = PROPS_ERROR;
	int64_t pend;

	if ((rc = runner_open(t, &r, s->pmem)))
		goto out;
	if (hw_read(r.dev, 0, r.m->base, DEV_BYTES))
		goto out;
	for (unsigned k = 0; k < s->n; k++) {
		if (s->cut.kind == HW_CUT_MARK && k == s->mark_io)
			s->cut.n = (uint64_t)hw_crash_mark(r.dev);
		if ((rc = do_io(r.dev, &s->io[k], r.buf))) {
			props_note(t, "I/O #%u (%s): %d", k,
				   io_names[s->io[k].kind], rc);
			res = PROPS_FAIL;
			goto out;
		}
		if (model_io(r.m, &s->io[k], (uint16_t)k))
			goto out;
	}
	if (s->cut.kind == HW_CUT_MARK && s->mark_io == s->n)
		s->cut.n = (uint64_t)hw_crash_mark(r.dev);
	pend = hw_crash_pending(r.dev);
	pending_writes(&r, s, pending);
	if (s->cut.kind == HW_CUT_PREFIX && s->cut.n > (uint64_t)pend)
		s->cut.n = (uint64_t)pend;
	if (s->cut.kind == HW_CUT_MASK) {
		s->cut.mask = s->mask;
		s->cut.mask_bits = MAX_IOS;
	}
	fates(s, pending, kept, &torn);
	if (hw_crash_info(r.dev, &ci))
		goto out;
	if ((rc = hw_crash_cut(r.dev, &s->cut))) {
		props_note(t, "hw_crash_cut: %d", rc);
		res = PROPS_FAIL;
		goto out;
	}
	want = malloc(DEV_BYTES);
	if (!want)
		goto out;
	model_image(&r, s, kept, torn, ci.atomic, want);
	res = compare(t, &r, want, "after the cut");
	if (res == PROPS_PASS && hw_crash_pending(r.dev) != 0) {
		props_note(t, "writes still pending after the cut");
		res = PROPS_FAIL;
	}
	if (res == PROPS_PASS)
		res = runs_on(t, &r, s, want);
out:
	if (res == PROPS_ERROR && rc)
		props_note(t, "error %d", rc);
	free(want);
	runner_close(&r);
	return res;
}

static struct gen_env block_env = { .pmem = 0 };
static struct gen_env runs_on_env = { .pmem = 0, .runs_on = 1 };

#define SEQ_TYPE(envp) { .name = "ios", .alloc = seq_alloc,                 \
	.print = seq_print, .env = (envp) }
static const struct props_type block_seq = SEQ_TYPE(&block_env);
static const struct props_type runs_on_seq = SEQ_TYPE(&runs_on_env);
#ifndef FSO_NO_EXTERNAL_LIBS
static struct gen_env pmem_env = { .pmem = 1 };
static const struct props_type pmem_seq = SEQ_TYPE(&pmem_env);
#endif

/* ---- the engine under cut ops ---- */

#define CUT_MKFS "bs=4k,maxrecs=4,inodes=64,journal=64"

static char cut_pmem_spec[200];
static struct props_targets cut_block = {
	.list = "engine,model", .dev = "crash:mem:8m", .mkfs = CUT_MKFS,
};
static struct props_targets cut_pmem = {
	.list = "engine,model", .dev = cut_pmem_spec, .mkfs = CUT_MKFS,
};

static const struct props_ops_env cut_env = {
	.max_file = 256 * 1024, .nfiles = 3,
	.kinds = PROPS_KINDS_DATA | PROPS_KINDS_DURABLE | PROPS_KIND(OP_UNLINK) |
		 PROPS_KIND(OP_CUT) | PROPS_KIND(OP_CRASH) |
		 PROPS_KIND(OP_REMOUNT),
	.max_ops = 48, .avg_ops = 16, .mkfs = CUT_MKFS, .targets = "engine,model",
};

/* The pmem device of this process (a file in /dev/shm or $TMPDIR). */
static const char *pmem_spec(void)
{
	const char *dir = getenv("TMPDIR");

	if (cut_pmem_spec[0])
		return cut_pmem_spec;
#ifdef FSO_NO_EXTERNAL_LIBS
	(void)dir;
	snprintf(cut_pmem_spec, sizeof(cut_pmem_spec), "crash[atomic=8]:mem:8m");
#else
	if (!dir || !dir[0])
		dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(cut_pmem_spec, sizeof(cut_pmem_spec),
		 "crash:pmem:%.150s/fso-props-cut-%ld.img,size=8m", dir,
		 (long)getpid());
#endif
	return cut_pmem_spec;
}

/* An op sequence, its header naming the device the first bit picks. */
static int cut_ops_alloc(struct props_trial *t, void *env, void **out)
{
	int pmem = (int)props_bits(t, 1);
	int r = props_ops_alloc(t, env, out);
	struct op_seq *seq = *out;

	if (r == PROPS_PASS)
		snprintf(seq->hdr.dev, sizeof(seq->hdr.dev), "%s",
			 pmem ? pmem_spec() : cut_block.dev);
	return r;
}

static const struct props_type cut_ops = {
	.name = "ops", .alloc = cut_ops_alloc, .free = props_ops_free,
	.print = props_ops_print, .env = (void *)&cut_env,
};

static int engine_cut_keeps_fsynced(struct props_trial *t, void *inst)
{
	const struct op_seq *seq = inst;
	struct props_targets *pt = strcmp(seq->hdr.dev, cut_block.dev) ?
				   &cut_pmem : &cut_block;
	char err[256];
	size_t off, len;

	if (pt == &cut_pmem && !pt->open) {
		char path[200];

		pmem_spec();
		if (props_targets_get(pt, err, sizeof(err))) {
			props_note(t, "targets on %s: %s", pt->dev, err);
			return PROPS_ERROR;
		}
		/* the mapping keeps the file as long as the targets */
		if (hw_spec_path(pt->dev, &off, &len)) {
			snprintf(path, sizeof(path), "%.*s", (int)len,
				 pt->dev + off);
			unlink(path);
		}
	}
	return props_check_ops(t, pt, seq, NULL);
}

static int cut_targets_close(const struct props_info *info, void *env)
{
	(void)info, (void)env;
	props_targets_close(&cut_block);
	props_targets_close(&cut_pmem);
	return PROPS_HOOK_CONTINUE;
}

static const struct props_prop props[] = {
	{
		.name = "crash_block_cut_image_exact",
		.doc = "crash:mem: after any cut (drop, keep, prefix, mask, "
		       "torn prefix) the image is the model's",
		.cfg = { .prop1 = cut_image_exact, .types = { &block_seq } },
	},
#ifndef FSO_NO_EXTERNAL_LIBS /* MSan and OSS-Fuzz builds have no libpmem2 */
	{
		.name = "crash_pmem_cut_image_exact",
		.doc = "crash:pmem: stores and byte-range persists; after a "
		       "cut the image is the model's",
		.cfg = { .prop1 = cut_image_exact, .types = { &pmem_seq },
			 .trials = 40 },
	},
#endif
	{
		.name = "crash_device_runs_on_after_cut",
		.doc = "after a cut, new writes and a second drop-all cut "
		       "leave the cut image plus the new durable writes",
		.cfg = { .prop1 = cut_image_exact, .types = { &runs_on_seq } },
	},
	{
		.name = "crash_engine_cut_keeps_fsynced",
		.doc = "engine vs model with cut ops on crash:mem: or (first "
		       "bit) crash:pmem:'s persist path: fsynced files survive "
		       "every cut, the audit passes",
		.cfg = { .prop1 = engine_cut_keeps_fsynced, .types = { &cut_ops },
			 .hooks = { .run_post = cut_targets_close } },
	},
};

const struct props_suite props_suite_crash = {
	.name = "crash",
	.doc = "the crash layer as a device model: block devices and pmem",
	PROPS_LIST(props),
};
