/*
 * suite_rt_truncate.c - seed path (a), truncating a realtime file down:
 * the naive twin, the optimized path and its forced fallback side by
 * side (the targets naive, engine and fallback, with the model), running
 * one generated op log: a block size and rt extent size in its header, a
 * realtime file laid out by writes, preallocations and punches, a sync,
 * the truncate to S, and an extension past the old EOF.
 *
 *                S   bend            tail
 *     | ..data.. |xxx|xxxxxxxxxxxxxxx|  whole rt extents past: freed
 *     naive      zero [S, tail)
 *     optimized  zero [S, bend), [bend, tail) unwritten
 *     fallback   as naive (forced here with fallback=all)
 *
 * A counterexample is printed as that op log, with the targets and
 * check=each,twins=stat+free in its header, so `fsoracle replay` runs it
 * as is and fails the same way (the checks of one truncate's work below
 * are the property's own: a replay runs the ops, the verifies, the
 * audits and the twin comparison).
 *
 * Properties:
 *   rt_truncate_twins_agree      after every op the four read the same
 *                                (so [S, old size) reads zero after the
 *                                extension), the three engines have the
 *                                same sizes, block counts and free space
 *                                (data and rt; the checker's twins=
 *                                stat+free) and free as many rt extents
 *                                at the truncate; every audit passes
 *   rt_truncate_work_is_bounded  the truncate zeroes exactly the written
 *                                bytes of [S, tail) (naive, fallback) and
 *                                of [S, bend) (optimized); the optimized
 *                                file has no written block in [bend,
 *                                tail), at most one record and one insert
 *                                more than the naive one; the fallback
 *                                maps exactly as the naive twin and is
 *                                counted; truncating to S again changes
 *                                no mapping
 */
#include "props/props.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/op.h"
#include "ref/ref.h"

#define MAXSTEPS 6
#define SPAN_R 24              /* files reach SPAN_R rt extents         */

enum { ST_WRITE, ST_FALLOC, ST_PUNCH, NSTEPKINDS };
enum { EX_PWRITE, EX_TRUNCATE_UP, EX_FALLOC, EX_RETRUNCATE, NEXT };

/* The log, and what the property's own checks need of the case. */
struct rtt_log {
	struct op_seq seq;             /* first: props_ops_print takes it   */
	uint32_t bs, rtx;              /* block size, rt extent in blocks   */
	uint64_t s;                    /* the truncate point                */
	uint64_t trunc_op;             /* its op number (1-based)           */
	unsigned ext;                  /* EX_*                              */
};

static int push(struct op_seq *seq, unsigned kind, uint8_t flags,
		uint64_t off, uint64_t len, uint64_t arg)
{
	struct op op = { .kind = (uint8_t)kind, .flags = flags, .off = off,
			 .len = len, .arg = arg };

	return op_seq_push(seq, &op);
}

static int case_ops(struct rtt_log *c, const unsigned *kind,
		    const uint64_t (*step)[2], unsigned n, uint64_t size)
{
	static const unsigned kinds[NSTEPKINDS] = { OP_PWRITE, OP_FALLOC,
						    OP_FPUNCH };
	uint64_t past = size + (uint64_t)c->bs * c->rtx;
	struct op_seq *seq = &c->seq;
	int err = push(seq, OP_SET_FLAG, 0, 0, 0, OP_ATTR_REALTIME);

	for (unsigned i = 0; i < n && !err; i++)
		err = push(seq, kinds[kind[i]],
			   kind[i] == ST_FALLOC ? OP_FL_KEEP_SIZE : 0,
			   step[i][0], step[i][1], 0);
	if (!err)
		err = push(seq, OP_SYNC, 0, 0, 0, 0);
	if (!err)
		err = push(seq, OP_TRUNCATE, 0, 0, 0, c->s);
	c->trunc_op = seq->n;
	if (err)
		return err;
	switch (c->ext) {
	case EX_PWRITE: {
		struct op op = { .kind = OP_PWRITE, .flags = OP_FL_PATTERN,
				 .pattern = 0xee, .off = size, .len = 1 };

		return op_seq_push(seq, &op);
	}
	case EX_TRUNCATE_UP:
		return push(seq, OP_TRUNCATE, 0, 0, 0, past);
	case EX_FALLOC:
		return push(seq, OP_FALLOC, 0, c->s, past - c->s, 0);
	default:
		err = push(seq, OP_TRUNCATE, 0, 0, 0, c->s);
		return err ? err : push(seq, OP_TRUNCATE, 0, 0, 0, past);
	}
}

static int case_alloc(struct props_trial *t, void *env, void **out)
{
	struct rtt_log *c = calloc(1, sizeof(*c));
	struct props_many m = PROPS_MANY(1, MAXSTEPS, 3);
	unsigned kind[MAXSTEPS], n = 0;
	uint64_t step[MAXSTEPS][2], max, size = 0;

	(void)env;
	if (!c)
		return PROPS_ERROR;
	op_seq_init(&c->seq);
	c->bs = 512u << props_below(t, 4);
	c->rtx = 1 + (uint32_t)props_below(t, 8);
	max = (uint64_t)SPAN_R * c->bs * c->rtx;
	while (props_more(t, &m)) {
		kind[n] = (unsigned)props_below(t, NSTEPKINDS);
		step[n][0] = props_below(t, max);
		step[n][1] = 1 + props_below(t, max - step[n][0]);
		if (kind[n] == ST_WRITE && step[n][0] + step[n][1] > size)
			size = step[n][0] + step[n][1];
		n++;
	}
	c->s = props_below(t, size + 1);
	c->ext = (unsigned)props_below(t, NEXT);
	snprintf(c->seq.hdr.dev, sizeof(c->seq.hdr.dev), "mem:2m");
	snprintf(c->seq.hdr.rtdev, sizeof(c->seq.hdr.rtdev), "mem:2m");
	snprintf(c->seq.hdr.mkfs, sizeof(c->seq.hdr.mkfs),
		 "bs=%u,rtextsize=%u,inodes=16", c->bs, c->bs * c->rtx);
	snprintf(c->seq.hdr.targets, sizeof(c->seq.hdr.targets),
		 "naive,engine,fallback,model");
	snprintf(c->seq.hdr.check, sizeof(c->seq.hdr.check),
		 "each,twins=stat+free");
	if (case_ops(c, kind, (const uint64_t (*)[2])step, n, size)) {
		props_ops_free(c, NULL);
		return PROPS_ERROR;
	}
	*out = c;
	return PROPS_PASS;
}

static const struct props_type case_log =
	PROPS_LOG_TYPE("rt truncate log", case_alloc, NULL);

/* ---- one truncate's work, per twin ---- */

enum { W_NAIVE, W_OPT, W_FALLBACK, NWAYS };
static const char *const way_name[NWAYS] = { "naive", "optimized",
					     "fallback" };

/* The twin an engine target is, by its pin. */
static int way_of(const struct target *t)
{
	switch (engine_target_pin(t)) {
	case ENGINE_NAIVE: return W_NAIVE;
	case ENGINE_FALLBACK: return W_FALLBACK;
	default: return W_OPT;
	}
}

/* Written bytes (and blocks) of [a, b) in the current map. */
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

struct twin {
	struct ref_stat st;            /* after the truncate                */
	struct ref_counters ctr;       /* of the truncate alone             */
	uint64_t written_tail;         /* written blocks in [bend, tail)    */
};

struct rtt_run {
	const struct rtt_log *c;
	uint64_t bend, tail;           /* in bytes                          */
	uint64_t naive_zero, opt_zero; /* expected bytes_zeroed             */
	struct twin w[NWAYS];
	int seen[NWAYS];
	int bounded;                   /* check the work too                */
};

static int written_in(struct ref_fs *fs, uint64_t ino, uint32_t bs,
		      uint64_t a, uint64_t b, struct written *out)
{
	*out = (struct written){ bs, a, b, 0, 0 };
	return ref_bmap(fs, ino, count_written, out);
}

/* Before the truncate: what it must zero; its counters from zero. */
static int before_truncate(struct rtt_run *r, struct ref_fs *fs,
			   uint64_t ino)
{
	const struct rtt_log *c = r->c;
	struct written tw, bw;
	struct ref_stat st;
	int err = ref_stat(fs, ino, &st);

	if (!err && !(st.flags & REF_FLAG_REALTIME))
		return -EINVAL; /* chattr +r did not take: nothing to test */
	if (!err)
		err = written_in(fs, ino, c->bs, c->s, r->tail, &tw);
	if (!err)
		err = written_in(fs, ino, c->bs, c->s, r->bend, &bw);
	if (err)
		return err;
	r->naive_zero = tw.bytes;
	r->opt_zero = c->rtx > 1 && r->bend < r->tail ? bw.bytes : tw.bytes;
	ref_counters_reset(fs);
	return 0;
}

static int after_truncate(struct rtt_run *r, struct ref_fs *fs, uint64_t ino,
			  int way)
{
	struct twin *w = &r->w[way];
	struct written tw;
	int err = ref_stat(fs, ino, &w->st);

	if (!err)
		err = written_in(fs, ino, r->c->bs, r->bend, r->tail, &tw);
	if (err)
		return err;
	w->ctr = *ref_counters(fs);
	w->written_tail = tw.blocks;
	r->seen[way] = 1;
	return 0;
}

/* The relations of one truncate's work (rt_truncate_work_is_bounded). */
static int work_bounded(struct props_trial *t, const struct rtt_run *r)
{
	const struct rtt_log *c = r->c;
	int split = c->rtx > 1 && r->bend < r->tail;
	const struct twin *nv = &r->w[W_NAIVE], *op = &r->w[W_OPT],
			  *fb = &r->w[W_FALLBACK];

	if (nv->ctr.bytes_zeroed != r->naive_zero)
		props_note(t, "naive zeroed %llu bytes, the written bytes of "
			   "[S, tail) are %llu",
			   (unsigned long long)nv->ctr.bytes_zeroed,
			   (unsigned long long)r->naive_zero);
	else if (op->ctr.bytes_zeroed != r->opt_zero)
		props_note(t, "optimized zeroed %llu bytes, want %llu",
			   (unsigned long long)op->ctr.bytes_zeroed,
			   (unsigned long long)r->opt_zero);
	else if (fb->ctr.bytes_zeroed != r->naive_zero)
		props_note(t, "fallback zeroed %llu bytes, the naive twin %llu",
			   (unsigned long long)fb->ctr.bytes_zeroed,
			   (unsigned long long)r->naive_zero);
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
		return PROPS_PASS;
	return PROPS_FAIL;
}

/* After the truncate: the twins free as many rt extents; the work. */
static int judge(struct props_trial *t, const struct rtt_run *r)
{
	for (int i = 0; i < NWAYS; i++)
		if (!r->seen[i]) {
			props_note(t, "no %s target", way_name[i]);
			return PROPS_ERROR;
		}
	for (int i = 1; i < NWAYS; i++)
		if (r->w[i].ctr.rt_extents_freed !=
		    r->w[W_NAIVE].ctr.rt_extents_freed) {
			props_note(t, "%s freed %llu rt extents, naive %llu",
				   way_name[i],
				   (unsigned long long)r->w[i].ctr.rt_extents_freed,
				   (unsigned long long)
				   r->w[W_NAIVE].ctr.rt_extents_freed);
			return PROPS_FAIL;
		}
	return r->bounded ? work_bounded(t, r) : PROPS_PASS;
}

static int truncate_hook(struct props_trial *t, struct target **tg, int n,
			 uint64_t opno, void *arg)
{
	struct rtt_run *r = arg;
	const struct rtt_log *c = r->c;

	if (opno + 1 < c->trunc_op ||
	    (opno > c->trunc_op + 1) || (opno == c->trunc_op + 1 &&
					 c->ext != EX_RETRUNCATE))
		return PROPS_PASS;
	for (int i = 0; i < n; i++) {
		struct ref_fs *fs;
		uint64_t ino;
		int way, err;

		if (engine_target_pin(tg[i]) < 0)
			continue;
		fs = engine_target_fs(tg[i]);
		way = way_of(tg[i]);
		if (!fs || ref_lookup(fs, tg[i]->names[0], &ino))
			return PROPS_ERROR;
		if (opno + 1 == c->trunc_op) {
			err = before_truncate(r, fs, ino);
		} else if (opno == c->trunc_op) {
			err = after_truncate(r, fs, ino, way);
		} else { /* truncated to S again: the mapping unchanged */
			struct ref_stat st;

			err = ref_stat(fs, ino, &st);
			if (!err && (st.blocks != r->w[way].st.blocks ||
				     st.nextents != r->w[way].st.nextents)) {
				props_note(t, "%s: truncating to S again "
					   "changed the mapping", way_name[way]);
				return PROPS_FAIL;
			}
		}
		if (err)
			return PROPS_ERROR;
	}
	return opno == c->trunc_op ? judge(t, r) : PROPS_PASS;
}

static int run_log(struct props_trial *t, const struct rtt_log *c,
		   int bounded)
{
	uint64_t R = (uint64_t)c->bs * c->rtx;
	struct rtt_run r = { .c = c, .bounded = bounded };

	r.bend = (c->s + c->bs - 1) / c->bs * c->bs;
	r.tail = (r.bend + R - 1) / R * R;
	return props_check_log(t, &c->seq, NULL, truncate_hook, &r);
}

static int twins_agree(struct props_trial *t, void *arg)
{
	return run_log(t, arg, 0);
}

static int work_is_bounded(struct props_trial *t, void *arg)
{
	return run_log(t, arg, 1);
}

static const struct props_prop props[] = {
	{
		.name = "rt_truncate_twins_agree",
		.doc = "naive, optimized and fallback truncates of a realtime "
		       "file leave the same blocks, free space and bytes, and "
		       "[S, old size) reads zero after any extension",
		.cfg = { .prop1 = twins_agree, .types = { &case_log } },
	},
	{
		.name = "rt_truncate_work_is_bounded",
		.doc = "the optimized truncate zeroes only to the EOF block's "
		       "end and leaves [roundup(S, bs), roundup(S, R)) "
		       "unwritten with at most one more record; the fallback "
		       "does exactly the naive work and is counted",
		.cfg = { .prop1 = work_is_bounded, .types = { &case_log } },
	},
};

const struct props_suite props_suite_rt_truncate = {
	.name = "rt_truncate",
	.doc = "seed path (a): realtime truncate-down, naive vs optimized vs "
	       "fallback",
	PROPS_LIST(props),
};
