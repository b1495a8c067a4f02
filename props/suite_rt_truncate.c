/*
 * suite_rt_truncate.c - seed path (a), truncating a realtime file down:
 * the naive twin, the optimized path and its forced fallback, side by
 * side on three filesystems that get the same generated case (block
 * size, rt extent size, a file layout of writes, preallocations and
 * punches, a truncate point, an extension after it).
 *
 *                S   bend            tail
 *     | ..data.. |xxx|xxxxxxxxxxxxxxx|  whole rt extents past: freed
 *     naive      zero [S, tail)
 *     optimized  zero [S, bend), [bend, tail) unwritten
 *     fallback   as naive (forced here with fallback=rt_truncate)
 *
 * Properties:
 *   rt_truncate_twins_agree      the three give the same sizes, block
 *                                counts, free space (data and rt), rt
 *                                extents freed and bytes; [S, old size)
 *                                reads zero after the extension; every
 *                                audit passes
 *   rt_truncate_work_is_bounded  bytes zeroed are exactly the written
 *                                bytes of [S, tail) (naive, fallback)
 *                                and of [S, bend) (optimized); the
 *                                optimized file has no written block in
 *                                [bend, tail), at most one record and
 *                                one insert more than the naive one; the
 *                                fallback maps exactly as the naive twin
 *                                and is counted
 */
#include "props/props.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw.h"
#include "ref/ref.h"

#define MAXSTEPS 6
#define SPAN_R 24              /* files reach SPAN_R rt extents         */
#define DEVSPEC "mem:2m"
#define RT (1u << REF_PATH_RT_TRUNCATE)

enum { W_NAIVE, W_OPT, W_FALLBACK, NWAYS };
static const char *const way_name[NWAYS] = { "naive", "optimized",
					     "fallback" };
enum { ST_WRITE, ST_FALLOC, ST_PUNCH, NSTEPKINDS };
static const char *const step_name[NSTEPKINDS] = { "pwrite", "falloc -k",
						   "fpunch" };
enum { EX_PWRITE, EX_TRUNCATE_UP, EX_FALLOC, EX_RETRUNCATE, NEXT };
static const char *const ext_name[NEXT] = {
	"pwrite past the old EOF", "truncate up past the old EOF",
	"falloc [S, past the old EOF)", "truncate to S again, then up",
};

struct rtt_step { unsigned kind; uint64_t off, len; };

struct rtt_case {
	uint32_t bs, rtx;              /* block size, rt extent in blocks   */
	struct rtt_step step[MAXSTEPS];
	unsigned nsteps;
	uint64_t size;                 /* the size the steps leave          */
	uint64_t s;                    /* the truncate point                */
	unsigned ext;                  /* EX_*                              */
};

static int case_alloc(struct props_trial *t, void *env, void **out)
{
	struct rtt_case *c = calloc(1, sizeof(*c));
	struct props_many m = PROPS_MANY(1, MAXSTEPS, 3);
	uint64_t max;

	(void)env;
	if (!c)
		return PROPS_ERROR;
	c->bs = 512u << props_below(t, 4);
	c->rtx = 1 + (uint32_t)props_below(t, 8);
	max = (uint64_t)SPAN_R * c->bs * c->rtx;
	while (props_more(t, &m)) {
		struct rtt_step *st = &c->step[c->nsteps++];

		st->kind = (unsigned)props_below(t, NSTEPKINDS);
		st->off = props_below(t, max);
		st->len = 1 + props_below(t, max - st->off);
		if (st->kind == ST_WRITE && st->off + st->len > c->size)
			c->size = st->off + st->len;
	}
	c->s = props_below(t, c->size + 1);
	c->ext = (unsigned)props_below(t, NEXT);
	*out = c;
	return PROPS_PASS;
}

static void case_print(FILE *f, const void *inst, void *env)
{
	const struct rtt_case *c = inst;

	(void)env;
	fprintf(f, "bs=%u rtextsize=%u (R = %u blocks), a realtime file:\n",
		c->bs, c->bs * c->rtx, c->rtx);
	for (unsigned i = 0; i < c->nsteps; i++)
		fprintf(f, "  %s %llu %llu\n", step_name[c->step[i].kind],
			(unsigned long long)c->step[i].off,
			(unsigned long long)c->step[i].len);
	fprintf(f, "  truncate %llu (from %llu), then %s\n",
		(unsigned long long)c->s, (unsigned long long)c->size,
		ext_name[c->ext]);
}

static const struct props_type case_type = {
	.name = "rt truncate case", .alloc = case_alloc, .print = case_print,
};

/* ---- one filesystem per twin ---- */

struct twin {
	struct hw_dev *dev, *rtdev;
	struct ref_fs *fs;
	uint64_t ino;
	struct ref_stat st;
	struct ref_statfs sf;
	struct ref_counters ctr;       /* of the truncate alone             */
	uint64_t written_tail;         /* written blocks in [bend, tail)    */
};

static int twin_open(struct twin *w, const struct rtt_case *c, int way)
{
	struct ref_mkfs_opts mo = { .blocksize = c->bs, .inodes = 16,
				    .rtextsize = c->bs * c->rtx };
	struct ref_mount_opts mnt = {
		.naive = way == W_NAIVE ? RT : 0,
		.fallback = way == W_FALLBACK ? RT : 0,
	};
	int err;

	memset(w, 0, sizeof(*w));
	err = hw_open(DEVSPEC, &w->dev, NULL, 0);
	if (!err)
		err = hw_open(DEVSPEC, &w->rtdev, NULL, 0);
	if (err)
		return err;
	mo.rtdev = mnt.rtdev = w->rtdev;
	err = ref_mkfs(w->dev, &mo);
	if (!err)
		err = ref_mount(w->dev, &mnt, &w->fs);
	if (!err)
		err = ref_create(w->fs, "f", &w->ino);
	if (!err)
		err = ref_set_flags(w->fs, w->ino, REF_FLAG_REALTIME, 0);
	return err;
}

static void twin_close(struct twin *w)
{
	if (w->fs)
		ref_abandon(w->fs);
	hw_close(w->dev);
	hw_close(w->rtdev);
}

/* The bytes a step writes: non-zero, different per step and offset. */
static void step_bytes(uint8_t *buf, uint64_t off, uint64_t len, unsigned i)
{
	for (uint64_t k = 0; k < len; k++)
		buf[k] = (uint8_t)((off + k) * 7 + i * 61) | 1;
}

static int apply_step(struct twin *w, const struct rtt_step *st, unsigned i,
		      uint8_t *buf)
{
	int64_t r;

	switch (st->kind) {
	case ST_WRITE:
		step_bytes(buf, st->off, st->len, i);
		r = ref_pwrite(w->fs, w->ino, buf, st->len, st->off);
		return r == (int64_t)st->len ? 0 : r < 0 ? (int)r : -EIO;
	case ST_FALLOC:
		return ref_fallocate(w->fs, w->ino, REF_FALLOC_KEEP_SIZE,
				     st->off, st->len);
	default:
		return ref_fallocate(w->fs, w->ino, REF_FALLOC_KEEP_SIZE |
				     REF_FALLOC_PUNCH_HOLE, st->off, st->len);
	}
}

/* Written bytes of [a, b) in the current map. */
struct written { uint32_t bs; uint64_t a, b, bytes, blocks; };

static int count_written(void *arg, const struct ref_extent *e)
{
	struct written *w = arg;
	uint64_t s = e->fileoff * w->bs, end = (e->fileoff + e->len) * w->bs;

	if (e->state)
		return 0;
	if (s < w->a)
		s = w->a;
	if (end > w->b)
		end = w->b;
	if (s < end) {
		w->bytes += end - s;
		w->blocks += (end - s + w->bs - 1) / w->bs;
	}
	return 0;
}

static int written_in(struct twin *w, uint32_t bs, uint64_t a, uint64_t b,
		      struct written *out)
{
	*out = (struct written){ bs, a, b, 0, 0 };
	return ref_bmap(w->fs, w->ino, count_written, out);
}

struct rtt_run {
	struct twin w[NWAYS];
	uint64_t bend, tail;           /* in bytes                          */
	uint64_t naive_zero, opt_zero; /* expected bytes_zeroed             */
	uint8_t *model;                /* the file as it must read          */
	uint8_t *buf, *got;
	uint64_t cap;
};

static void run_free(struct rtt_run *r)
{
	for (int i = 0; i < NWAYS; i++)
		twin_close(&r->w[i]);
	free(r->model);
	free(r->buf);
	free(r->got);
}

static int fail(struct props_trial *t, int way, const char *what)
{
	props_note(t, "%s: %s", way_name[way], what);
	return PROPS_FAIL;
}

/* Model the steps and the truncate in r->model (up to r->cap bytes). */
static void model_steps(struct rtt_run *r, const struct rtt_case *c)
{
	for (unsigned i = 0; i < c->nsteps; i++) {
		const struct rtt_step *st = &c->step[i];

		if (st->kind == ST_WRITE)
			step_bytes(r->model + st->off, st->off, st->len, i);
		else if (st->kind == ST_PUNCH)
			memset(r->model + st->off, 0, st->len);
	}
	memset(r->model + c->s, 0, r->cap - c->s);
}

/*
 * Build the case on the three twins up to and including the truncate;
 * record what each did.  PROPS_PASS, PROPS_FAIL (with a note) or
 * PROPS_ERROR.
 */
static int run_case(struct props_trial *t, const struct rtt_case *c,
		    struct rtt_run *r)
{
	uint64_t R = (uint64_t)c->bs * c->rtx;
	struct written tw, bw;

	memset(r, 0, sizeof(*r));
	r->cap = (SPAN_R + 2) * R;
	r->model = calloc(1, r->cap);
	r->buf = malloc(r->cap);
	r->got = malloc(r->cap);
	if (!r->model || !r->buf || !r->got)
		return PROPS_ERROR;
	r->bend = (c->s + c->bs - 1) / c->bs * c->bs;
	r->tail = (r->bend + R - 1) / R * R;
	model_steps(r, c);
	for (int i = 0; i < NWAYS; i++) {
		struct twin *w = &r->w[i];
		int err = twin_open(w, c, i);

		for (unsigned k = 0; k < c->nsteps && !err; k++)
			err = apply_step(w, &c->step[k], k, r->buf);
		if (!err)
			err = ref_sync(w->fs);
		if (err) {
			props_note(t, "%s: setting up: %s", way_name[i],
				   ref_strerror(err));
			return PROPS_ERROR;
		}
		if (written_in(w, c->bs, c->s, r->tail, &tw) ||
		    written_in(w, c->bs, c->s, r->bend, &bw))
			return PROPS_ERROR;
		r->naive_zero = tw.bytes;
		r->opt_zero = c->rtx > 1 && r->bend < r->tail ? bw.bytes :
			      tw.bytes;
		ref_counters_reset(w->fs);
		err = ref_truncate(w->fs, w->ino, c->s);
		if (err) {
			props_note(t, "%s: truncate: %s", way_name[i],
				   ref_strerror(err));
			return PROPS_FAIL;
		}
		w->ctr = *ref_counters(w->fs);
		if (ref_stat(w->fs, w->ino, &w->st) ||
		    ref_statfs(w->fs, &w->sf) ||
		    written_in(w, c->bs, r->bend, r->tail, &tw))
			return PROPS_ERROR;
		w->written_tail = tw.blocks;
	}
	return PROPS_PASS;
}

static int audit_all(struct props_trial *t, struct rtt_run *r)
{
	for (int i = 0; i < NWAYS; i++)
		if (ref_audit(r->w[i].fs, NULL, NULL))
			return fail(t, i, "the audit fails");
	return PROPS_PASS;
}

/* Extend past the old EOF as the case says, on every twin and the model. */
static int extend(struct props_trial *t, const struct rtt_case *c,
		  struct rtt_run *r, uint64_t *newsize)
{
	uint64_t R = (uint64_t)c->bs * c->rtx;
	uint64_t past = c->size + R;
	const uint8_t byte = 0xee;

	*newsize = past;
	if (c->ext == EX_PWRITE) {
		r->model[c->size] = byte;
		*newsize = c->size + 1;
	}
	for (int i = 0; i < NWAYS; i++) {
		struct twin *w = &r->w[i];
		int64_t err = 0;

		switch (c->ext) {
		case EX_PWRITE:
			err = ref_pwrite(w->fs, w->ino, &byte, 1, c->size);
			err = err == 1 ? 0 : err < 0 ? err : -EIO;
			break;
		case EX_TRUNCATE_UP:
			err = ref_truncate(w->fs, w->ino, past);
			break;
		case EX_FALLOC:
			err = ref_fallocate(w->fs, w->ino, 0, c->s,
					    past - c->s);
			break;
		default: {
			struct ref_stat st;

			err = ref_truncate(w->fs, w->ino, c->s);
			if (!err)
				err = ref_stat(w->fs, w->ino, &st);
			if (!err && (st.blocks != w->st.blocks ||
				     st.nextents != w->st.nextents))
				return fail(t, i, "truncating to S again "
					    "changed the mapping");
			if (!err)
				err = ref_truncate(w->fs, w->ino, past);
			break;
		}
		}
		if (err) {
			props_note(t, "%s: extending: %s", way_name[i],
				   ref_strerror((int)err));
			return PROPS_FAIL;
		}
	}
	return PROPS_PASS;
}

static int twins_agree(struct props_trial *t, void *arg)
{
	const struct rtt_case *c = arg;
	struct rtt_run r;
	uint64_t newsize;
	int res = run_case(t, c, &r);

	for (int i = 1; i < NWAYS && res == PROPS_PASS; i++) {
		const struct twin *a = &r.w[W_NAIVE], *b = &r.w[i];

		if (b->st.size != c->s || a->st.size != c->s)
			res = fail(t, i, "size is not S");
		else if (b->st.blocks != a->st.blocks)
			res = fail(t, i, "st.blocks differ from naive's");
		else if (b->sf.rt_free_blocks != a->sf.rt_free_blocks)
			res = fail(t, i, "free rt blocks differ");
		else if (b->sf.free_blocks != a->sf.free_blocks)
			res = fail(t, i, "free data blocks differ");
		else if (b->ctr.rt_extents_freed != a->ctr.rt_extents_freed)
			res = fail(t, i, "rt extents freed differ");
	}
	if (res == PROPS_PASS)
		res = audit_all(t, &r);
	if (res == PROPS_PASS)
		res = extend(t, c, &r, &newsize);
	if (res == PROPS_PASS)
		res = audit_all(t, &r);
	for (int i = 0; i < NWAYS && res == PROPS_PASS; i++) {
		struct twin *w = &r.w[i];
		int64_t got = ref_pread(w->fs, w->ino, r.got, newsize, 0);

		if (got != (int64_t)newsize) {
			res = fail(t, i, "short read after the extension");
			break;
		}
		for (uint64_t k = 0; k < newsize; k++) {
			if (r.got[k] == r.model[k])
				continue;
			props_note(t, "%s: byte %llu reads 0x%02x, want "
				   "0x%02x%s",
				   way_name[i], (unsigned long long)k, r.got[k],
				   r.model[k], k >= c->s && k < c->size ?
				   " (in [S, old size): stale data)" : "");
			res = PROPS_FAIL;
			break;
		}
	}
	run_free(&r);
	return res;
}

static int work_is_bounded(struct props_trial *t, void *arg)
{
	const struct rtt_case *c = arg;
	struct rtt_run r;
	int res = run_case(t, c, &r);
	int split = c->rtx > 1 && r.bend < r.tail;
	const struct twin *nv = &r.w[W_NAIVE], *op = &r.w[W_OPT],
			  *fb = &r.w[W_FALLBACK];

	if (res != PROPS_PASS)
		goto out;
	res = PROPS_FAIL;
	if (nv->ctr.bytes_zeroed != r.naive_zero)
		props_note(t, "naive zeroed %llu bytes, the written bytes of "
			   "[S, tail) are %llu",
			   (unsigned long long)nv->ctr.bytes_zeroed,
			   (unsigned long long)r.naive_zero);
	else if (op->ctr.bytes_zeroed != r.opt_zero)
		props_note(t, "optimized zeroed %llu bytes, want %llu",
			   (unsigned long long)op->ctr.bytes_zeroed,
			   (unsigned long long)r.opt_zero);
	else if (fb->ctr.bytes_zeroed != r.naive_zero)
		props_note(t, "fallback zeroed %llu bytes, the naive twin %llu",
			   (unsigned long long)fb->ctr.bytes_zeroed,
			   (unsigned long long)r.naive_zero);
	else if (split && op->written_tail)
		props_note(t, "optimized: %llu written blocks left in "
			   "[roundup(S, bs), roundup(S, R))",
			   (unsigned long long)op->written_tail);
	else if (op->st.nextents > nv->st.nextents + 1)
		props_note(t, "optimized has %llu records, naive %llu",
			   (unsigned long long)op->st.nextents,
			   (unsigned long long)nv->st.nextents);
	else if (op->ctr.bt.rec_inserts > nv->ctr.bt.rec_inserts + 1)
		props_note(t, "optimized inserted %llu records, naive %llu",
			   (unsigned long long)op->ctr.bt.rec_inserts,
			   (unsigned long long)nv->ctr.bt.rec_inserts);
	else if (fb->st.nextents != nv->st.nextents ||
		 fb->ctr.bt.rec_inserts != nv->ctr.bt.rec_inserts ||
		 fb->ctr.bt.rec_updates != nv->ctr.bt.rec_updates)
		props_note(t, "the fallback's records differ from the naive "
			   "twin's");
	else if (fb->ctr.rt_truncate_fallbacks != (uint64_t)split ||
		 op->ctr.rt_truncate_fallbacks || nv->ctr.rt_truncate_fallbacks)
		props_note(t, "rt_truncate_fallbacks: naive %llu, optimized "
			   "%llu, fallback %llu (want 0, 0, %d)",
			   (unsigned long long)nv->ctr.rt_truncate_fallbacks,
			   (unsigned long long)op->ctr.rt_truncate_fallbacks,
			   (unsigned long long)fb->ctr.rt_truncate_fallbacks,
			   split);
	else
		res = PROPS_PASS;
out:
	run_free(&r);
	return res;
}

static const struct props_prop props[] = {
	{
		.name = "rt_truncate_twins_agree",
		.doc = "naive, optimized and fallback truncates of a realtime "
		       "file leave the same blocks, free space and bytes, and "
		       "[S, old size) reads zero after any extension",
		.cfg = { .prop1 = twins_agree, .types = { &case_type } },
	},
	{
		.name = "rt_truncate_work_is_bounded",
		.doc = "the optimized truncate zeroes only to the EOF block's "
		       "end and leaves [roundup(S, bs), roundup(S, R)) "
		       "unwritten with at most one more record; the fallback "
		       "does exactly the naive work and is counted",
		.cfg = { .prop1 = work_is_bounded, .types = { &case_type } },
	},
};

const struct props_suite props_suite_rt_truncate = {
	.name = "rt_truncate",
	.doc = "seed path (a): realtime truncate-down, naive vs optimized vs "
	       "fallback",
	.props = props,
	.nprops = sizeof(props) / sizeof(props[0]),
};
