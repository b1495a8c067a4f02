/*
 * minimize.c - shrink a failing op sequence (minimize.h).
 */
#include "harness/minimize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mctx {
	struct target **t;
	int n;
	struct check_cfg ccfg;
	struct min_cfg mcfg;
	struct checker *c;
	struct min_stats *st;
	uint64_t fail_opno;     /* of the last failing run */
	const char *last_step;  /* progress: what was said last */
	size_t last_n;
};

/* Run seq from scratch; the failure class (0 = passes), or -errno. */
static int run(struct mctx *m, const struct op_seq *seq)
{
	int ret;

	m->st->runs++;
	ret = check_reset(m->c);
	if (ret)
		return ret;
	ret = check_run(m->c, seq);
	if (ret)
		m->fail_opno = check_failure(m->c)->opno;
	return ret;
}

static int budget_left(const struct mctx *m)
{
	return m->st->runs < m->mcfg.max_runs;
}

static void progress(struct mctx *m, const char *step, size_t nops)
{
	char line[160];

	/* Say something when the size or the step changes, not every pass. */
	if (!m->mcfg.progress || (step == m->last_step && nops == m->last_n))
		return;
	m->last_step = step;
	m->last_n = nops;
	snprintf(line, sizeof(line), "%s: %zu ops after %u runs", step, nops,
		 m->st->runs);
	m->mcfg.progress(m->mcfg.progress_arg, line);
}

/* cand = seq without ops [from, to). */
static int without(const struct op_seq *seq, size_t from, size_t to,
		   struct op_seq *cand)
{
	op_seq_clear(cand);
	op_seq_copy_meta(cand, seq);
	for (size_t i = 0; i < seq->n; i++) {
		if (i >= from && i < to)
			continue;
		if (op_seq_push(cand, &seq->ops[i]))
			return -ENOMEM;
	}
	return 0;
}

/* Keep cand if it fails the same way; 1 kept, 0 not, <0 error. */
static int try_keep(struct mctx *m, struct op_seq *seq, struct op_seq *cand)
{
	int r = run(m, cand);

	if (r < 0)
		return r;
	if (r != m->st->status)
		return 0;
	/* Ops after the failing one are dead weight. */
	if (m->fail_opno && m->fail_opno < cand->n)
		cand->n = m->fail_opno;
	{
		struct op_seq tmp = *seq;

		*seq = *cand;
		*cand = tmp;
	}
	return 1;
}

static int ddmin(struct mctx *m, struct op_seq *seq, struct op_seq *cand)
{
	size_t parts = 2;

	while (seq->n >= 2 && budget_left(m)) {
		size_t chunk = (seq->n + parts - 1) / parts;
		int reduced = 0;

		for (size_t from = 0; from < seq->n && budget_left(m); from += chunk) {
			int r = without(seq, from, from + chunk, cand);

			if (!r)
				r = try_keep(m, seq, cand);
			if (r < 0)
				return r;
			if (r) {
				reduced = 1;
				parts = parts > 2 ? parts - 1 : 2;
				break;
			}
		}
		progress(m, "chunks", seq->n);
		if (!reduced) {
			if (parts >= seq->n)
				break;
			parts = parts * 2 < seq->n ? parts * 2 : seq->n;
		}
	}
	return 0;
}

static int singles(struct mctx *m, struct op_seq *seq, struct op_seq *cand)
{
	int changed = 1;

	while (changed && budget_left(m)) {
		changed = 0;
		for (size_t i = seq->n; i-- > 0 && budget_left(m);) {
			int r = without(seq, i, i + 1, cand);

			if (!r)
				r = try_keep(m, seq, cand);
			if (r < 0)
				return r;
			if (r) {
				changed = 1;
				if (i > seq->n)
					i = seq->n;
			}
		}
		progress(m, "single ops", seq->n);
	}
	return 0;
}

/* Smaller values to try for v, best first; returns how many. */
static int smaller(uint64_t v, uint64_t *out)
{
	uint64_t c[8];
	int n = 0, k = 0;

	/* Big steps first; no v - 1 for big v, which would creep for ages. */
	c[n++] = 0;
	c[n++] = v / 2;
	c[n++] = v - v / 4;
	c[n++] = v & ~(uint64_t)4095;
	c[n++] = v & ~(uint64_t)511;
	if (v <= 16)
		c[n++] = v - 1;
	for (int i = 0; i < n; i++) {
		int dup = c[i] >= v;

		for (int j = 0; j < k && !dup; j++)
			dup = out[j] == c[i];
		if (!dup)
			out[k++] = c[i];
	}
	return v ? k : 0;
}

static int shrink_values(struct mctx *m, struct op_seq *seq,
			 struct op_seq *cand)
{
	int changed = 1;

	while (changed && budget_left(m)) {
		changed = 0;
		for (size_t i = 0; i < seq->n && budget_left(m); i++) {
			for (int field = 0; field < 5; field++) {
				uint64_t v, opts[8];
				int nopt;

				if (i >= seq->n)
					break;
				{
					const struct op *op = &seq->ops[i];

					v = field == 0 ? op->off : field == 1 ? op->len :
					    field == 2 ? op->arg : field == 3 ?
					    op->flags : op->bsize;
				}
				if (field == 3) {
					/* Drop one flag bit at a time. */
					nopt = 0;
					for (unsigned b = 0; b < 8; b++)
						if (v & (1u << b))
							opts[nopt++] = v & ~(1ull << b);
					if (nopt > 8)
						nopt = 8;
				} else {
					nopt = smaller(v, opts);
				}
				for (int o = 0; o < nopt && budget_left(m); o++) {
					struct op *c;
					int r;

					if (op_seq_copy(cand, seq))
						return -ENOMEM;
					c = &cand->ops[i];
					if (field == 0)
						c->off = opts[o];
					else if (field == 1)
						c->len = opts[o];
					else if (field == 2)
						c->arg = opts[o];
					else if (field == 3)
						c->flags = (uint8_t)opts[o];
					else
						c->bsize = (uint32_t)opts[o];
					op_normalize(c);
					if (op_equal(c, &seq->ops[i]))
						continue;
					r = try_keep(m, seq, cand);
					if (r < 0)
						return r;
					if (r) {
						changed = 1;
						break;
					}
				}
			}
		}
		progress(m, "values", seq->n);
	}
	return 0;
}

int minimize(struct target **t, int n, const struct check_cfg *ccfg,
	     const struct min_cfg *mcfg, struct op_seq *seq,
	     struct min_stats *st)
{
	struct mctx m = { .t = t, .n = n, .st = st };
	struct op_seq cand;
	int ret;

	memset(st, 0, sizeof(*st));
	st->ops_before = seq->n;
	if (ccfg)
		m.ccfg = *ccfg;
	m.ccfg.quiet = 1;
	m.ccfg.log_path = NULL;
	if (mcfg)
		m.mcfg = *mcfg;
	if (!m.mcfg.max_runs)
		m.mcfg.max_runs = 20000;
	op_seq_init(&cand);
	ret = check_new(t, n, &m.ccfg, seq, &m.c);
	if (ret)
		goto out;
	ret = run(&m, seq);
	if (ret < 0)
		goto out;
	st->status = ret;
	ret = 0;
	/* running out of memory is no failure to keep (check.h) */
	if (st->status && st->status != CHECK_NOMEM) {
		if (m.fail_opno && m.fail_opno < seq->n)
			seq->n = m.fail_opno;
		ret = ddmin(&m, seq, &cand);
		if (!ret)
			ret = singles(&m, seq, &cand);
		if (!ret)
			ret = shrink_values(&m, seq, &cand);
		/* Values may have made more ops removable. */
		if (!ret)
			ret = singles(&m, seq, &cand);
		st->gave_up = !budget_left(&m);
	}
	st->ops_after = seq->n;
out:
	check_free(m.c);
	op_seq_free(&cand);
	return ret;
}
