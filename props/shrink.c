/*
 * shrink.c - integrated shrinking on the pool.
 *
 * The shrinker never sees a value, only the failing trial's pool of
 * entries.  It edits a copy, regenerates the arguments from it (zeros
 * past its end), and keeps the edit when the property still fails and
 * the pool the generators actually read is smaller in shortlex order
 * (fewer entries, then smaller values).  That order is a well-founded
 * one, so shrinking always ends; it never depends on the clock unless a
 * budget runs out, so the same failure shrinks to the same minimum.
 *
 * Passes, repeated until a whole round changes nothing:
 *
 *   1. delete spans: for each span (an element of a collection, a
 *      state-machine step, an op), delete it together with as many of
 *      its following siblings as still fails.  The run length is found
 *      adaptively (1, 2, 3, 4, then doubling, then bisection), so a long
 *      irrelevant tail goes in a few attempts and single elements still
 *      go one by one:
 *
 *         before:  [op0][op1][op2][op3][op4][op5]   spans at one depth
 *         delete op1..op4 (k = 4 works, k = 5 not): [op0][op5]
 *
 *      When one span cannot go alone, two and three are tried, since
 *      steps often only make sense in pairs (inc then dec);
 *
 *   2. delete entries: the same over raw entry ranges, for generators
 *      without spans;
 *   3. minimize entries: each entry to 0, else a binary search for the
 *      smallest value that still fails (the first probe halves it, the
 *      last is a decrement);
 *   4. lower repeated values together: every entry holding v (the same
 *      file in three ops, two equal keys) set to 0, else bisected, at
 *      once, since moving any one alone loses the failure;
 *   5. the types' own tactics (props_type.shrink), in tactic order.
 *
 * Candidates are deduplicated through the run's Bloom filter, so a pool
 * that search or an earlier pass already ran is not run again.
 */
#include "props/props_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What props_edit hands a custom tactic: its argument's entries. */
struct props_edit {
	struct props_pool *pool;
	size_t start, n;
};

size_t props_edit_count(const struct props_edit *e)
{
	return e->n;
}

uint64_t props_edit_get(const struct props_edit *e, size_t i)
{
	return i < e->n ? e->pool->e[e->start + i].v : 0;
}

void props_edit_set(struct props_edit *e, size_t i, uint64_t v)
{
	if (i < e->n)
		e->pool->e[e->start + i].v = v;
}

void props_edit_delete(struct props_edit *e, size_t i, size_t n)
{
	struct props_pool *p = e->pool;

	if (i >= e->n)
		return;
	if (n > e->n - i)
		n = e->n - i;
	memmove(&p->e[e->start + i], &p->e[e->start + i + n],
		(p->n - (e->start + i + n)) * sizeof(p->e[0]));
	p->n -= n;
	e->n -= n;
}

/* ---- running one candidate ---- */

static int out_of_budget(struct shrink_ctx *c)
{
	const struct props_cfg *cfg = c->t->cfg;
	uint32_t max_att = cfg->shrink.max_attempts ?
		cfg->shrink.max_attempts : 20000;
	uint32_t max_ms = cfg->shrink.max_ms ? cfg->shrink.max_ms : 30000;

	if (c->attempts + c->rep->shrink_dups >= max_att)
		return 1;
	return props_now_ns() - c->t0_ns >= (uint64_t)max_ms * 1000000ull;
}

static int hook(struct shrink_ctx *c, props_hook_fn fn, int state, int res)
{
	struct props_info info = *c->base;

	if (!fn)
		return PROPS_HOOK_CONTINUE;
	info.shrink_attempts = c->attempts;
	info.shrinks = c->shrinks;
	info.shrink_state = state;
	info.result = res;
	info.report = c->rep;
	return fn(&info, c->t->cfg->hooks.env);
}

static int keep_best(struct shrink_ctx *c)
{
	struct props_trial *t = c->t;
	struct props_span *ns;

	if (pool_copy(&c->best, t->rec.e, t->rec.n))
		return -ENOMEM;
	ns = realloc(c->spans, (t->nspans ? t->nspans : 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	c->spans = ns;
	if (t->nspans)
		memcpy(ns, t->spans, t->nspans * sizeof(*ns));
	c->nspans = t->oom ? 0 : t->nspans;
	return 0;
}

/*
 * Try one candidate pool.  1: it fails and is smaller, now the best;
 * 0: not kept; -1: stop shrinking (budget, hook, error).
 */
static int consider(struct shrink_ctx *c, const struct props_entry *e,
		    size_t n)
{
	struct props_trial *t = c->t;
	const struct props_hooks *hk = &t->cfg->hooks;
	uint64_t h;
	int r, keep = 0, state;

	if (c->halted || c->error)
		return -1;
	if (out_of_budget(c) ||
	    hook(c, hk->shrink_pre, 0, 0) == PROPS_HOOK_HALT) {
		c->halted = 1;
		return -1;
	}
	trial_src_pool(t, e, n);
	r = trial_generate(t);
	if (r != PROPS_PASS)
		return 0;
	if (pool_cmp(t->rec.e, t->rec.n, c->best.e, c->best.n) >= 0) {
		trial_free_args(t);
		return 0;
	}
	h = pool_hash(t->rec.e, t->rec.n);
	if (bloom_has(c->bloom, h)) {
		trial_free_args(t);
		c->rep->shrink_dups++;
		state = PROPS_SHRINK_DUP;
		r = PROPS_DUP;
	} else {
		bloom_add(c->bloom, h);
		c->attempts++;
		r = isolate_call(t, c->base, 0);
		trial_free_args(t);
		if (r == PROPS_FAIL) {
			if (keep_best(c)) {
				c->error = 1;
				return -1;
			}
			c->shrinks++;
			keep = 1;
		}
		state = keep ? PROPS_SHRINK_SHRUNK : PROPS_SHRINK_FAILED;
	}
	if (hook(c, hk->shrink_post, state, r) == PROPS_HOOK_HALT) {
		c->halted = 1;
		return keep ? 1 : -1;
	}
	return keep;
}

/* ---- adaptive deletion ---- */

/*
 * Deletion probes for find_largest: delete from `base` entries [start,
 * ends[k - 1]) (k siblings, or k entries when ends == NULL).
 */
struct del_probe {
	struct shrink_ctx *c;
	const struct props_pool *base;
	struct props_pool *scratch;
	size_t start;
	const size_t *ends;
};

static int del_try(struct del_probe *p, size_t k)
{
	const struct props_pool *b = p->base;
	size_t end = p->ends ? p->ends[k - 1] : p->start + k;

	if (end > b->n)
		end = b->n;
	if (pool_copy(p->scratch, b->e, p->start))
		goto out_nomem;
	for (size_t i = end; i < b->n; i++)
		if (pool_push(p->scratch, b->e[i]))
			goto out_nomem;
	return consider(p->c, p->scratch->e, p->scratch->n);
out_nomem:
	p->c->error = 1;
	return -1;
}

/*
 * The largest k in [1, max] for which a deletion is kept, probing 1, 2,
 * 3, 4, then doubling, then bisecting (Hypothesis' find_integer).  Returns
 * whether any was kept, or -1 to stop.
 */
static int find_largest(struct del_probe *p, size_t max)
{
	size_t lo, hi;
	int r, kept = 0;

	if (max == 0)
		return 0;
	r = del_try(p, 1);
	if (r <= 0)
		return r;
	kept = 1;
	lo = 1;
	for (size_t k = 2; k <= 4; k++) {
		if (k > max)
			return kept;
		r = del_try(p, k);
		if (r < 0)
			return -1;
		if (r == 0)
			return kept;
		lo = k;
	}
	hi = lo * 2;
	while (hi <= max) {
		r = del_try(p, hi);
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		lo = hi;
		hi *= 2;
	}
	if (hi > max) {
		if (lo == max)
			return kept;
		r = del_try(p, max);
		if (r < 0)
			return -1;
		if (r > 0)
			return kept;
		hi = max;
	}
	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2;

		r = del_try(p, mid);
		if (r < 0)
			return -1;
		if (r > 0)
			lo = mid;
		else
			hi = mid;
	}
	return kept;
}

/* Pass 1.  Returns 1 if anything was kept, 0, or -1 to stop. */
static int pass_spans(struct shrink_ctx *c)
{
	struct props_pool base = { 0 }, scratch = { 0 };
	struct props_span *spans = NULL;
	size_t *ends = NULL, nspans;
	int any = 0, r = 0;

	for (size_t i = 0; i < c->nspans;) {
		struct props_span s = c->spans[i];
		size_t nrun = 0;
		uint32_t cur_end;

		if (s.start == s.end) {
			i++;
			continue;
		}
		/* A snapshot: the probes all start from this pool. */
		nspans = c->nspans;
		spans = realloc(spans, nspans * sizeof(*spans));
		ends = realloc(ends, nspans * sizeof(*ends));
		if (!spans || !ends || pool_copy(&base, c->best.e, c->best.n)) {
			r = -1;
			c->error = 1;
			break;
		}
		memcpy(spans, c->spans, nspans * sizeof(*spans));
		/* the run of siblings: same depth, each starting where the
		 * last ended */
		ends[nrun++] = s.end;
		cur_end = s.end;
		for (size_t j = i + 1; j < nspans; j++) {
			if (spans[j].depth < s.depth)
				break;
			if (spans[j].depth != s.depth)
				continue;
			if (spans[j].start != cur_end)
				break;
			if (spans[j].end == spans[j].start)
				continue;
			cur_end = spans[j].end;
			ends[nrun++] = cur_end;
		}
		struct del_probe p = { c, &base, &scratch, s.start, ends };

		r = find_largest(&p, nrun);
		/* Steps that only work in pairs (inc then dec, open then
		 * close) cannot go one at a time: try two and three. */
		for (size_t k = 2; r == 0 && k <= 3 && k <= nrun; k++)
			r = del_try(&p, k);
		if (r < 0)
			break;
		if (r > 0)
			any = 1;    /* spans changed: look at index i again */
		else
			i++;
	}
	free(spans);
	free(ends);
	pool_free(&base);
	pool_free(&scratch);
	return r < 0 ? -1 : any;
}

/* Pass 2: raw entry ranges. */
static int pass_entries(struct shrink_ctx *c)
{
	struct props_pool base = { 0 }, scratch = { 0 };
	int any = 0, r = 0;

	for (size_t i = 0; i < c->best.n;) {
		if (pool_copy(&base, c->best.e, c->best.n)) {
			c->error = 1;
			r = -1;
			break;
		}
		struct del_probe p = { c, &base, &scratch, i, NULL };

		r = find_largest(&p, base.n - i);
		if (r < 0)
			break;
		if (r > 0)
			any = 1;
		else
			i++;
	}
	pool_free(&base);
	pool_free(&scratch);
	return r < 0 ? -1 : any;
}

static int set_try(struct shrink_ctx *c, struct props_pool *scratch,
		   size_t i, uint64_t v)
{
	if (i >= c->best.n)
		return 0;   /* an earlier success made the pool shorter */
	if (pool_copy(scratch, c->best.e, c->best.n)) {
		c->error = 1;
		return -1;
	}
	scratch->e[i].v = v;
	return consider(c, scratch->e, scratch->n);
}

/* Pass 3: each entry as small as it can be. */
static int pass_minimize(struct shrink_ctx *c)
{
	struct props_pool scratch = { 0 };
	int any = 0, r = 0;

	for (size_t i = 0; i < c->best.n; i++) {
		uint64_t lo = 0, hi = c->best.e[i].v;

		if (hi == 0)
			continue;
		r = set_try(c, &scratch, i, 0);
		if (r < 0)
			break;
		if (r > 0) {
			any = 1;
			continue;
		}
		/* invariant: lo passes (or is not smaller), hi fails */
		while (hi - lo > 1 && i < c->best.n) {
			uint64_t mid = lo + (hi - lo) / 2;

			r = set_try(c, &scratch, i, mid);
			if (r < 0)
				break;
			if (r > 0) {
				any = 1;
				hi = c->best.e[i].v < mid ? c->best.e[i].v : mid;
			} else {
				lo = mid;
			}
		}
		if (r < 0)
			break;
	}
	pool_free(&scratch);
	return r < 0 ? -1 : any;
}

/*
 * An entry's role: its offset inside the innermost span holding it and
 * that span's depth (the file field of every op is at the same offset of
 * each op's span).  Entries outside every span have no role.
 */
struct role {
	uint32_t rel, depth;
	int in_span;
};

static struct role *roles(const struct shrink_ctx *c)
{
	struct role *r = calloc(c->best.n ? c->best.n : 1, sizeof(*r));

	if (!r)
		return NULL;
	/* spans begin in order and inner ones begin later: the last
	 * writer of an entry is its innermost span */
	for (size_t s = 0; s < c->nspans; s++)
		for (uint32_t i = c->spans[s].start;
		     i < c->spans[s].end && i < c->best.n; i++) {
			r[i].rel = i - c->spans[s].start;
			r[i].depth = c->spans[s].depth;
			r[i].in_span = 1;
		}
	return r;
}

static int same_group(const struct shrink_ctx *c, const struct role *r,
		      size_t i, size_t j, int by_role)
{
	if (c->best.e[i].v != c->best.e[j].v || c->best.e[i].w != c->best.e[j].w)
		return 0;
	if (!by_role)
		return 1;
	return r[i].in_span && r[j].in_span && r[i].rel == r[j].rel &&
	       r[i].depth == r[j].depth;
}

/* Set entry i's whole group to `to`. */
static int group_try(struct shrink_ctx *c, struct props_pool *scratch,
		     const struct role *r, size_t i, int by_role, uint64_t to)
{
	if (pool_copy(scratch, c->best.e, c->best.n)) {
		c->error = 1;
		return -1;
	}
	for (size_t j = 0; j < scratch->n; j++)
		if (same_group(c, r, i, j, by_role))
			scratch->e[j].v = to;
	return consider(c, scratch->e, scratch->n);
}

/* Is i the first of a group of two or more? */
static int group_leader(const struct shrink_ctx *c, const struct role *r,
			size_t i, int by_role)
{
	int later = 0;

	for (size_t j = 0; j < c->best.n; j++) {
		if (j == i || !same_group(c, r, i, j, by_role))
			continue;
		if (j < i)
			return 0;
		later = 1;
	}
	return later;
}

/*
 * Pass 4: a value repeated in several entries (the same file in every
 * op, two equal keys) lowered in all of them at once, since moving any
 * one alone loses the failure.  Groups by role first (the same field of
 * sibling elements), then by value alone.
 */
static int pass_duplicates(struct shrink_ctx *c)
{
	struct props_pool scratch = { 0 };
	struct role *r = NULL;
	int any = 0, ret = 0;

	for (int by_role = 1; by_role >= 0 && ret >= 0; by_role--) {
		for (size_t i = 0; i < c->best.n; i++) {
			uint64_t cur = c->best.e[i].v, lo = 0;

			/* roles change with every kept candidate */
			free(r);
			r = roles(c);
			if (!r) {
				c->error = 1;
				ret = -1;
				break;
			}
			if (cur == 0 || !group_leader(c, r, i, by_role))
				continue;
			ret = group_try(c, &scratch, r, i, by_role, 0);
			if (ret > 0)
				any = 1;
			while (ret == 0 && cur - lo > 1) {
				uint64_t mid = lo + (cur - lo) / 2;

				ret = group_try(c, &scratch, r, i, by_role, mid);
				if (ret > 0) {
					any = 1;
					cur = mid;
					/* the group now holds mid */
					free(r);
					r = roles(c);
					if (!r || i >= c->best.n ||
					    c->best.e[i].v != mid) {
						ret = r ? 0 : -1;
						c->error |= !r;
						break;
					}
					ret = 0;
				} else if (ret == 0) {
					lo = mid;
				}
			}
			if (ret < 0)
				break;
		}
	}
	free(r);
	pool_free(&scratch);
	return ret < 0 ? -1 : any;
}

/* Pass 5: the types' own tactics. */
static int pass_tactics(struct shrink_ctx *c)
{
	struct props_trial *t = c->t;
	struct props_pool cand = { 0 };
	int any = 0, r = 0;

	for (unsigned a = 0; a < t->nargs && r >= 0; a++) {
		const struct props_type *ty = t->cfg->types[a];

		if (!ty->shrink)
			continue;
		for (uint32_t tactic = 0;;) {
			struct props_edit e;
			int tr;

			/* the instance of the current best, to look at */
			trial_src_pool(t, c->best.e, c->best.n);
			if (trial_generate(t) != PROPS_PASS ||
			    pool_copy(&cand, c->best.e, c->best.n)) {
				r = -1;
				c->error = 1;
				break;
			}
			e.pool = &cand;
			e.start = t->argstart[a];
			e.n = t->argstart[a + 1] - t->argstart[a];
			tr = ty->shrink(t->args[a], &e, tactic, ty->env);
			trial_free_args(t);
			if (tr == PROPS_SHRINK_NO_MORE_TACTICS)
				break;
			if (tr != PROPS_SHRINK_OK) {
				tactic++;
				continue;
			}
			r = consider(c, cand.e, cand.n);
			if (r < 0)
				break;
			if (r > 0) {
				any = 1;
				tactic = 0;   /* big steps again on the new best */
			} else {
				tactic++;
			}
		}
	}
	pool_free(&cand);
	return r < 0 ? -1 : any;
}

int shrink_run(struct shrink_ctx *c)
{
	int (*const passes[])(struct shrink_ctx *) = {
		pass_spans, pass_entries, pass_minimize, pass_duplicates,
		pass_tactics,
	};

	c->t0_ns = props_now_ns();
	for (;;) {
		int progress = 0;

		for (size_t p = 0; p < sizeof(passes) / sizeof(passes[0]); p++) {
			int r = passes[p](c);

			if (r < 0)
				return c->error ? -ENOMEM : 0;
			if (r > 0)
				progress = 1;
		}
		if (!progress)
			return 0;
	}
}
