/*
 * cutall.c - a power cut at every durability point of an op sequence
 * (cutall.h): count the points, then one fresh run per crash state.
 *
 *   counting run     mkfs ... op 1 ... op 2 ....... op n     D points
 *                        (points 1..3)  (4..9)       (..D)
 *   state (k, how)   mkfs ... op 1 ... op 2 [k] ..          power fails
 *                    cut (exact / subset s) -> crash op: recover, verify
 *                    durable files, audit -> remount -> verify, audit
 *
 * Each state starts from a fresh device so the crash layer numbers its
 * writes the same way every time, and a seeded subset cut is the same
 * cut whatever ran before it.  The engine is deterministic, so point k
 * falls in the same op on every run; a run where it does not is
 * reported as a failure (the counting run and the state disagree).
 *
 * The checker decides what must survive.  Its notion of durable (a file
 * fsynced, or synced or remounted, and not changed since) is per file;
 * the op that was running when the power failed is undone in it: if
 * the op issued any I/O after the failure it did not finish, so what it
 * made durable is not, and every file it names is fair game.
 *
 * A cut here is the `cut` op's model (cut.h): exact is seed 0, subset
 * s a 16-bit seed drawn from (seed, point, s), so the first failure of
 * a sequence prints as an op log: the ops before the one the power
 * failed in (a `crash` among them as `cut 0 0`: keep only what is
 * durable), `cut P SEED` with P counted from there, that op, and a
 * remount.  `fsoracle replay` repeats it and `fsoracle minimize`
 * shrinks it.
 */
#include "harness/cutall.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/check_internal.h" /* the durable set, c->dirty */
#include "harness/cut.h"
#include "harness/rng.h"
#include "harness/target.h"
#include "harness/text.h"
#include "hw/hw.h"
#include "ref/ref.h"

#define DEFAULT_SIZE "64m"

struct cutall {
	const struct op_seq *seq;
	const struct cutall_cfg *cfg;
	struct cutall_stats *st;
	char list[OP_HDR_STR + 320];   /* "engine:crash:...,model" */
	char pmem_path[256];
	struct target_env env;
	struct hw_crash_plan lies;     /* the broken device, if asked */
	uint64_t points;
	const uint64_t *at;            /* points issued by the end of op i */
};

/* One run's targets, checker and the engine's device. */
struct run {
	struct target *t[TARGET_MAX];
	int n;
	struct checker *c;
	struct hw_dev *dev;
	size_t stop;                   /* the op the power failed in (or n) */
};

static int setup(struct cutall *x, char *err, size_t errlen)
{
	const struct op_header *h = &x->seq->hdr;
	const char *size = DEFAULT_SIZE, *dir;
	int fd;

	if (h->rtdev[0])
		return snprintf(err, errlen, "needs a realtime device (%s)",
				h->rtdev), -EOPNOTSUPP;
	for (size_t i = 0; i < x->seq->n; i++)
		if (x->seq->ops[i].kind == OP_CUT)
			return snprintf(err, errlen, "has cut ops (op %zu): "
					"its own power cuts", i + 1), -EOPNOTSUPP;
	if (h->dev[0] && strncmp(h->dev, "mem:", 4))
		return snprintf(err, errlen, "written for device %s, not mem:",
				h->dev), -EOPNOTSUPP;
	if (h->dev[0])
		size = h->dev + 4;
	x->env.mkfs = h->mkfs[0] ? h->mkfs : NULL;
	x->env.mount = h->mount[0] ? h->mount : NULL;
	if (x->cfg->dev == CUTALL_MEM) {
		snprintf(x->list, sizeof(x->list), "engine:crash:mem:%s,model",
			 size);
		return 0;
	}
	/* tmpfs if there is one: persists there cost no disk writes */
	dir = x->cfg->pmem_dir ? x->cfg->pmem_dir : getenv("TMPDIR");
	if ((!dir || !dir[0]) && access("/dev/shm", W_OK) == 0)
		dir = "/dev/shm";
	snprintf(x->pmem_path, sizeof(x->pmem_path), "%s/fso-cutall-XXXXXX",
		 dir && dir[0] ? dir : "/tmp");
	fd = mkstemp(x->pmem_path);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", x->pmem_path, strerror(e));
		x->pmem_path[0] = 0;
		return -e;
	}
	close(fd);
	snprintf(x->list, sizeof(x->list), "engine:crash:pmem:%s,size=%s,model",
		 x->pmem_path, size);
	return 0;
}

static void run_close(struct run *r)
{
	if (r->c)
		check_free(r->c);
	target_list_close(r->t, r->n);
	memset(r, 0, sizeof(*r));
}

/* Fresh targets from mkfs (a fresh pmem file too), the plan armed. */
static int run_open(struct cutall *x, struct run *r,
		    const struct hw_crash_plan *plan, char *err, size_t errlen)
{
	struct check_cfg cc = { .quiet = 1 };
	int ret;

	memset(r, 0, sizeof(*r));
	if (x->pmem_path[0])
		unlink(x->pmem_path);
	ret = target_list_open(x->list, &x->env, r->t, &r->n, err, errlen);
	if (ret)
		return ret;
	ret = check_new(r->t, r->n, &cc, x->seq, &r->c);
	if (ret) {
		snprintf(err, errlen, "%s: starting the checker: %s", x->list,
			 strerror(-ret));
		goto out_error;
	}
	r->dev = engine_target_fs(r->t[0]) ?
		 ref_device(engine_target_fs(r->t[0])) : NULL;
	ret = r->dev ? hw_flush(r->dev) : -EIO;  /* the new filesystem */
	if (!ret)
		ret = hw_crash_set_plan(r->dev, plan);
	if (ret) {
		snprintf(err, errlen, "%s: arming the power failure: %s",
			 x->list, strerror(-ret));
		goto out_error;
	}
	return 0;
out_error:
	run_close(r);
	return ret;
}

/*
 * Run the ops until the power fails (r->stop: that op; seq->n if it
 * never did).  points[i] (if non-NULL): points issued by the end of op i.
 * Returns a check status, or -errno from a cut.
 */
static int run_ops(struct cutall *x, struct run *r, uint64_t *points)
{
	const struct op_seq *seq = x->seq;
	struct hw_crash_info ci;
	int ret = 0;

	for (r->stop = 0; r->stop < seq->n; r->stop++) {
		const struct op *op = &seq->ops[r->stop];
		const struct op_kind_info *ki = op_kind_info(op->kind);
		uint32_t before = r->c->dirty;

		/* A crash in the sequence: only what is durable survives. */
		if (op->kind == OP_CRASH && (ret = hw_crash_cut(r->dev, NULL)))
			return ret;
		ret = check_op(r->c, op);
		if (hw_crash_info(r->dev, &ci))
			return -EIO;
		if (points)
			points[r->stop] = ci.plan_points;
		if (ci.power_off) {
			/* Cut short: nothing it made durable is, and the
			 * files it names may hold anything it wrote. */
			if (ci.lost)
				r->c->dirty |= before |
					((ki->uses & OP_USE_FILE) ? 1u << op->file : 0) |
					((ki->uses & OP_USE_FILE2) ? 1u << op->file2 : 0);
			return ret;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static void fail(struct cutall *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct cutall *x, const char *fmt, ...)
{
	char line[sizeof(x->st->first)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!x->st->failures++)
		snprintf(x->st->first, sizeof(x->st->first), "%s", line);
	if (x->cfg->out)
		fprintf(x->cfg->out, "%s\n", line);
}

static const char *name_of(const struct cutall *x)
{
	return x->cfg->name ? x->cfg->name : "sequence";
}

static void first_line(void *arg, const char *line)
{
	char *buf = arg;

	if (!buf[0])
		snprintf(buf, 200, "%s", line);
}

/*
 * What the checker found, as "data mismatch at op 7: ...", and when the
 * engine is left unmounted (a failed recovery), why: the first line of
 * a read-only fsck of the image.
 */
static void what_failed(struct run *r, int status, char *buf, size_t len)
{
	const struct check_failure *f = check_failure(r->c);
	char why[200] = "", where[64];

	if (status < 0) {
		snprintf(buf, len, "error %d (%s)", status, strerror(-status));
		return;
	}
	if (!engine_target_fs(r->t[0]) && r->dev)
		ref_fsck(r->dev, first_line, why);
	/* the log is the ops up to r->stop, then recovery and a remount */
	if (f->opno <= r->stop + 1)
		snprintf(where, sizeof(where), "at op %llu",
			 (unsigned long long)f->opno);
	else
		snprintf(where, sizeof(where), "%s", f->opno == r->stop + 2 ?
			 "at recovery" : "after a remount");
	snprintf(buf, len, "%s %s: %s%s%s", check_status_name(status), where,
		 f->what, why[0] ? "; fsck: " : "", why);
}

/* The counting run: the points of each op, and the sequence's check. */
static int count_points(struct cutall *x, const struct hw_crash_plan *plan,
			uint64_t *points, char *err, size_t errlen)
{
	struct run r;
	char what[700];
	int ret = run_open(x, &r, plan, err, errlen);

	if (ret)
		return ret;
	ret = run_ops(x, &r, points);
	if (!ret)
		ret = check_finish(r.c);
	x->st->skipped_ops += check_stats(r.c)->skipped_total;
	if (!x->st->skipped[0])
		check_skip_summary(r.c, x->st->skipped, sizeof(x->st->skipped));
	if (ret > 0) {
		what_failed(&r, ret, what, sizeof(what));
		fail(x, "%s: without a cut: %s", name_of(x), what);
	} else if (ret < 0) {
		snprintf(err, errlen, "cut in the sequence: %s", strerror(-ret));
	}
	run_close(&r);
	return ret < 0 ? ret : 0;
}

/* The subset cut's seed for (point, subset): independent of the order,
 * never 0 (the exact cut's). */
static unsigned subset_seed(uint64_t seed, uint64_t k, unsigned s)
{
	uint64_t z = seed ^ (k * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)s << 48);

	return 1 + (unsigned)(rng_splitmix64(&z) % OP_CUT_MAX);
}

/*
 * The op log of state (k, cut seed) failing in op stop (cut.h, and the
 * top): printed under the failure line, and written to cfg->log_dir.
 */
static void print_log(struct cutall *x, uint64_t k, unsigned seed,
		      size_t stop)
{
	const struct op_seq *seq = x->seq;
	uint64_t before = stop ? x->at[stop - 1] : 0;
	struct op cut = { .kind = OP_CUT }, remount = { .kind = OP_REMOUNT };
	struct op_seq log;
	char path[512] = "";
	FILE *f;
	int ok = 1;

	op_seq_init(&log);
	op_seq_copy_meta(&log, seq);
	snprintf(log.hdr.dev, sizeof(log.hdr.dev), "%s%s",
		 x->cfg->dev == CUTALL_PMEM ? "pmem:cutall.img,size=" :
		 "crash:mem:", seq->hdr.dev[0] ? seq->hdr.dev + 4 : DEFAULT_SIZE);
	snprintf(log.hdr.targets, sizeof(log.hdr.targets), "engine,model");
	for (size_t i = 0; i < stop && ok; i++) {
		struct op op = seq->ops[i];

		if (op.kind == OP_CRASH)
			op = (struct op){ .kind = OP_CUT };
		ok = !op_seq_push(&log, &op);
	}
	cut.arg = OP_CUT_ARG(k - before, seed);
	ok = ok && !op_seq_push(&log, &cut) &&
	     !op_seq_push(&log, &seq->ops[stop]) && !op_seq_push(&log, &remount);
	if (ok && x->cfg->out) {
		fprintf(x->cfg->out, "  as an op log (fsoracle replay, "
			"fsoracle minimize):\n");
		op_text_write_header(&log.hdr, x->cfg->out);
		op_text_write_ops(&log, x->cfg->out);
	}
	if (ok && x->cfg->log_dir) {
		const char *base = strrchr(name_of(x), '/');

		snprintf(path, sizeof(path), "%s/%s-cut%llu.ops",
			 x->cfg->log_dir, base ? base + 1 : name_of(x),
			 (unsigned long long)k);
		f = fopen(path, "w");
		if (f) {
			op_text_write_header(&log.hdr, f);
			op_text_write_ops(&log, f);
			ok = fclose(f) == 0;
		}
		if (x->cfg->out)
			fprintf(x->cfg->out, "  %s %s\n", f && ok ?
				"written to" : "could not write", path);
	}
	op_seq_free(&log);
}

/* One crash state: power fails at point k (subset < 0: exact). */
static int one_state(struct cutall *x, uint64_t k, int subset, char *err,
		     size_t errlen)
{
	struct hw_crash_plan plan;
	struct hw_cut cut;
	struct op crash = { .kind = OP_CRASH }, remount = { .kind = OP_REMOUNT };
	char how[64], opname[160] = "", what[700];
	unsigned seed = subset < 0 ? 0 :
			subset_seed(x->cfg->seed, k, (unsigned)subset);
	struct run r;
	int ret;

	cut_model(OP_CUT_ARG(0, seed), &plan, &cut);
	plan.fail_at = k;
	plan.lie_from = x->lies.lie_from;
	plan.lie_count = x->lies.lie_count;
	if (x->cfg->whole)
		cut.tear = HW_TEAR_NONE;
	if (subset >= 0)
		snprintf(how, sizeof(how), "subset %d (cut seed %u)", subset,
			 seed);
	else
		snprintf(how, sizeof(how), "exact");
	ret = run_open(x, &r, &plan, err, errlen);
	if (ret)
		return ret;
	x->st->states++;
	ret = run_ops(x, &r, NULL);
	if (r.stop < x->seq->n)
		op_format(&x->seq->ops[r.stop], x->seq, opname, sizeof(opname));
	if (ret == 0 && r.stop == x->seq->n) {
		fail(x, "%s: point %llu of %llu, %s: the power never failed "
		     "(the run did not repeat the counting run)", name_of(x),
		     (unsigned long long)k, (unsigned long long)x->points, how);
		goto out;
	}
	if (!ret)
		ret = hw_crash_cut(r.dev, &cut);
	if (!ret)
		ret = check_op(r.c, &crash);
	if (!ret)
		ret = check_op(r.c, &remount);
	if (!ret)
		ret = check_finish(r.c);
	if (ret) {
		what_failed(&r, ret, what, sizeof(what));
		fail(x, "%s: point %llu of %llu (in op %zu: %s), %s: %s",
		     name_of(x), (unsigned long long)k,
		     (unsigned long long)x->points, r.stop + 1, opname, how, what);
		/* the first failure as a log, when the cut op can say it */
		if (x->st->failures == 1 && !x->cfg->whole && !x->lies.lie_count &&
		    r.stop < x->seq->n)
			print_log(x, k, seed, r.stop);
	}
out:
	if (x->cfg->progress) {
		fputc(ret ? 'F' : '.', x->cfg->progress);
		fflush(x->cfg->progress);
	}
	run_close(&r);
	return 0;
}

/* The lies of cfg->lie_sync: every point of that sync op. */
static int find_lies(struct cutall *x, const uint64_t *points, char *err,
		     size_t errlen)
{
	unsigned nth = 0;

	for (size_t i = 0; i < x->seq->n; i++) {
		unsigned kind = x->seq->ops[i].kind;
		uint64_t first = i ? points[i - 1] + 1 : 1;

		if (kind != OP_FSYNC && kind != OP_FDATASYNC && kind != OP_SYNC)
			continue;
		if (++nth < x->cfg->lie_sync)
			continue;
		if (points[i] < first)
			return snprintf(err, errlen, "sync op %u (op %zu) makes "
					"nothing durable", nth, i + 1), -ENOENT;
		x->lies.lie_from = first;
		x->lies.lie_count = points[i] - first + 1;
		return 0;
	}
	return snprintf(err, errlen, "no sync op number %u", x->cfg->lie_sync),
	       -ENOENT;
}

static int cut_all(struct cutall *x, char *err, size_t errlen)
{
	uint64_t want = x->cfg->max_points, n = x->points;
	unsigned subsets = x->cfg->subsets;
	int ret;

	if (x->cfg->only_point > n)
		return snprintf(err, errlen, "point %llu: the sequence has %llu",
				(unsigned long long)x->cfg->only_point,
				(unsigned long long)n), -EINVAL;
	if (!want || want > n)
		want = n;
	for (uint64_t i = 0; i < want; i++) {
		/* evenly spread, first and last included */
		uint64_t k = want == 1 ? n : 1 + i * (n - 1) / (want - 1);

		if (x->cfg->only_point)
			k = x->cfg->only_point;
		x->st->cut_points++;
		ret = one_state(x, k, -1, err, errlen);
		for (unsigned s = 0; !ret && s < subsets; s++)
			ret = one_state(x, k, (int)s, err, errlen);
		if (ret || x->cfg->only_point)
			return ret;
	}
	return 0;
}

int cutall_run(const struct op_seq *seq, const struct cutall_cfg *cfg,
	       struct cutall_stats *st, char *err, size_t errlen)
{
	struct cutall x = { .seq = seq, .cfg = cfg, .st = st };
	uint64_t *points = calloc(seq->n + 1, sizeof(*points));
	int ret;

	if (!points)
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	ret = setup(&x, err, errlen);
	if (!ret)
		ret = count_points(&x, &x.lies, points, err, errlen);
	if (!ret && cfg->lie_sync) {
		ret = find_lies(&x, points, err, errlen);
		/* count again: the lies may change what a crash op keeps */
		if (!ret)
			ret = count_points(&x, &x.lies, points, err, errlen);
	}
	x.points = seq->n ? points[seq->n - 1] : 0;
	x.at = points;
	st->points += x.points;
	if (!ret && x.points)
		ret = cut_all(&x, err, errlen);
	if (x.pmem_path[0])
		unlink(x.pmem_path);
	free(points);
	return ret;
}

void cutall_stats_add(struct cutall_stats *sum, const struct cutall_stats *one)
{
	sum->points += one->points;
	sum->cut_points += one->cut_points;
	sum->states += one->states;
	sum->failures += one->failures;
	sum->skipped_ops += one->skipped_ops;
	if (!sum->first[0])
		memcpy(sum->first, one->first, sizeof(sum->first));
	if (!sum->skipped[0])
		memcpy(sum->skipped, one->skipped, sizeof(sum->skipped));
}
