/*
 * compare.c - the A/B verdict: two saved runs (two builds, or one build
 * before and after a change), scenario by scenario.
 *
 * Counters first: they are exact, so any change is real, and more work in
 * either twin is a regression whatever the clock says.  Then time, one
 * comparison per scenario twin, not per point: sample i of every point
 * of a twin is pooled into one value, the mean of log t over the points
 * (sizes and variants), so a change that moves every size by 5% moves
 * each pooled value by log 1.05 and all the points' evidence adds up.
 * (Testing each point alone and calling the scenario slower when any
 * point is, with alpha split over every point and both twins, asked each
 * point for p < 0.05 / 12 at 000's six sizes: the exact sign test over 12
 * pairs reaches that only when all 12 agree, since 11 of 12 gives p =
 * 0.0063, so a real 5% that showed in every size was "no significant
 * change".)  The two runs' pooled values are independent samples: the
 * two-sample form of the sequential test (seq.c), whose interval must lie
 * above 1, below 1, or inside ±min-effect.  The 5% false-alarm budget is
 * split over every comparison of the run (Bonferroni, stated in the
 * output).  With a sampler (--baseline), the current build takes more
 * rounds until the comparison is decided or the budget is out.
 */
#include "perf/perf.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

static const struct json *find_scenario(const struct json *rep, const char *id)
{
	const struct json *arr = json_get(rep, "scenarios");

	for (unsigned i = 0; i < json_len(arr); i++) {
		const struct json *s = json_at(arr, i);
		const struct json *sid = json_get(s, "id");

		if (sid && sid->type == JSON_STRING && !strcmp(sid->str, id))
			return s;
	}
	return NULL;
}

static const char *str_of(const struct json *obj, const char *key)
{
	const struct json *j = json_get(obj, key);

	return j && j->type == JSON_STRING ? j->str : "";
}

static const struct json *find_point(const struct json *sc,
				     const struct json *pt)
{
	const struct json *arr = json_get(sc, "points");
	const char *variant = str_of(pt, "variant");
	uint64_t param = json_u64(json_get(pt, "param"));

	for (unsigned i = 0; i < json_len(arr); i++) {
		const struct json *q = json_at(arr, i);

		if (!strcmp(str_of(q, "variant"), variant) &&
		    json_u64(json_get(q, "param")) == param)
			return q;
	}
	return NULL;
}

/* The samples of array key in time object t, malloc'ed. */
static double *samples(const struct json *t, const char *key, unsigned *n)
{
	const struct json *arr = json_get(t, key);
	double *x;

	*n = json_len(arr);
	x = calloc(*n ? *n : 1, sizeof(*x));
	if (!x) {
		*n = 0;
		return NULL;
	}
	for (unsigned i = 0; i < *n; i++) {
		const struct json *v = json_at(arr, i);

		x[i] = v && v->type == JSON_NUMBER ? v->num : 0;
	}
	return x;
}

static int is_report(const struct json *r)
{
	const struct json *s = json_get(r, "schema");

	return s && s->type == JSON_STRING &&
	       !strcmp(s->str, "fsoracle-perf/1") &&
	       json_get(r, "scenarios");
}

/* Counter changes of one point; returns 1 if either twin does more. */
static int compare_counters(FILE *f, const struct json *ns,
			    const struct json *op, const struct json *np)
{
	const struct json *oc = json_get(op, "counters");
	const struct json *nc = json_get(np, "counters");
	int more = 0, changed = 0;

	if (json_len(nc) == 0)
		return 0;
	fprintf(f, "  %s %s=%s counters:", str_of(np, "variant"),
		str_of(ns, "param"), json_get(np, "param") ?
		json_get(np, "param")->str : "?");
	for (unsigned i = 0; i < json_len(nc); i++) {
		const struct json *n = json_at(nc, i);
		const struct json *o = json_get(oc, n->key);

		if (!o || o->type != JSON_OBJECT || n->type != JSON_OBJECT)
			continue;
		for (int t = 0; t < 2; t++) {
			const char *twin = t ? "optimized" : "naive";
			uint64_t a = json_u64(json_get(o, twin));
			uint64_t b = json_u64(json_get(n, twin));

			if (a == b)
				continue;
			changed = 1;
			more |= b > a;
			fprintf(f, "\n      %s %s: %" PRIu64 " -> %" PRIu64
				" (%s work)", twin, n->key, a, b,
				b > a ? "MORE" : "less");
		}
	}
	fprintf(f, "%s\n", changed ? "" : " identical");
	return more;
}

static const char *twin_name(unsigned tw)
{
	return tw ? "optimized" : "naive";
}

static int has_time(const struct json *pt)
{
	const struct json *t = json_get(pt, "time");

	return t && t->type == JSON_OBJECT;
}

/*
 * The points of new scenario ns timed in both runs (into pts, the new
 * run's), and the pooled values of twin tw of each run: x[i] the mean
 * over those points of log(sample i), for i below the smallest sample
 * count of the run.  0, or -ENOMEM.
 */
static int pooled(const struct json *os, const struct json *ns, unsigned tw,
		  const struct json **pts, unsigned *npts, double **x,
		  unsigned *nx)
{
	const struct json *arr = json_get(ns, "points");

	*npts = 0;
	for (unsigned i = 0; i < json_len(arr); i++) {
		const struct json *op = find_point(os, json_at(arr, i));

		if (op && has_time(op) && has_time(json_at(arr, i)) &&
		    *npts < PERF_MAX_VARIANTS * PERF_MAX_PARAMS)
			pts[(*npts)++] = json_at(arr, i);
	}
	for (int run = 0; run < 2; run++) {
		unsigned n = ~0u;

		for (unsigned p = 0; p < *npts; p++) {
			const struct json *pt = run ? pts[p] :
						find_point(os, pts[p]);
			const struct json *t = json_get(pt, "time");
			unsigned k = json_len(json_get(t, twin_name(tw)));

			n = k < n ? k : n;
		}
		if (*npts == 0)
			n = 0;
		x[run] = calloc(n ? n : 1, sizeof(double));
		if (!x[run])
			return -ENOMEM;
		nx[run] = n;
		for (unsigned p = 0; p < *npts; p++) {
			const struct json *pt = run ? pts[p] :
						find_point(os, pts[p]);
			const struct json *arr2 = json_get(json_get(pt, "time"),
							   twin_name(tw));

			for (unsigned i = 0; i < n; i++) {
				const struct json *v = json_at(arr2, i);
				double t = v && v->type == JSON_NUMBER ?
					   v->num : 0;

				x[run][i] += log(t > 0 ? t : 1e-9) / *npts;
			}
		}
	}
	return 0;
}

/* Median new/old of one point and twin (descriptive). */
static double point_ratio(const struct json *op, const struct json *np,
			  unsigned tw)
{
	unsigned na, nb;
	double *a = samples(json_get(op, "time"), twin_name(tw), &na);
	double *b = samples(json_get(np, "time"), twin_name(tw), &nb);
	double ma = perf_quantile(a, na, 0.5), mb = perf_quantile(b, nb, 0.5);

	free(a);
	free(b);
	return ma > 0 ? mb / ma : NAN;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * One scenario twin: the two-sample test of the new run's pooled values
 * against the old run's, with more rounds from the sampler (if any)
 * while undecided and within the budget.  The state.
 */
static enum perf_seq_state compare_twin(FILE *f, const struct json *os,
					const struct json *ns, unsigned tw,
					double alpha, double min_effect,
					const struct perf_more *more)
{
	const struct json *pts[PERF_MAX_VARIANTS * PERF_MAX_PARAMS];
	struct perf_seq_opts so = { alpha, min_effect, more ? 0 : 1 };
	struct perf_seq s;
	double *x[2] = { NULL, NULL }, t0 = now();
	unsigned npts, nx[2];
	char text[128];

	perf_seq_init(&s, &so);
	if (pooled(os, ns, tw, pts, &npts, x, nx) ||
	    perf_seq_set_reference(&s, x[0], nx[0])) {
		fprintf(f, "  %-9s out of memory\n", twin_name(tw));
		s.state = PERF_SEQ_INCONCLUSIVE;
		goto out;
	}
	for (unsigned i = 0; i < nx[1]; i++)
		perf_seq_add(&s, x[1][i]);
	while (more && s.state == PERF_SEQ_RUNNING &&
	       now() - t0 < more->budget) {
		double v;

		if (more->round(more->arg, str_of(ns, "id"), tw, pts, npts,
				&v))
			break;
		perf_seq_add(&s, v);
	}
	perf_seq_stop(&s);
	perf_seq_text(&s, now() - t0, text, sizeof(text));
	if (isfinite(s.lo) && isfinite(s.hi))
		fprintf(f, "  %-9s time new/old %.3f [%.3f %.3f]  %s\n",
			twin_name(tw), exp(s.est), exp(s.lo), exp(s.hi), text);
	else
		fprintf(f, "  %-9s time new/old -  %s\n", twin_name(tw), text);
	fprintf(f, "      %u old and %u new samples of %u point%s; noise "
		"±%.1f%% per sample\n", nx[0], s.n, npts,
		npts == 1 ? "" : "s", 100 * (exp(s.noise) - 1));
	fprintf(f, "      median new/old per point:");
	for (unsigned p = 0; p < npts; p++)
		fprintf(f, "%s %s %s=%.3f", p ? "," : "",
			str_of(pts[p], "variant"), json_get(pts[p], "param") ?
			json_get(pts[p], "param")->str : "?",
			point_ratio(find_point(os, pts[p]), pts[p], tw));
	fprintf(f, "\n");
out:
	free(x[0]);
	free(x[1]);
	perf_seq_free(&s);
	return s.state;
}

static int both_ok(const struct json *os, const struct json *ns)
{
	return os && !strcmp(str_of(os, "status"), "ok") &&
	       !strcmp(str_of(ns, "status"), "ok");
}

/* Was time measured on the same clock in both runs?  (wall if unsaid) */
static int same_clock(const struct json *old, const struct json *cur)
{
	const char *a = str_of(old, "clock"), *b = str_of(cur, "clock");

	return !strcmp(a[0] ? a : "wall", b[0] ? b : "wall");
}

int perf_compare_reports(FILE *f, const struct json *old,
			 const struct json *cur, const struct perf_cmp_opts *o,
			 const struct perf_more *more, char *err, size_t len)
{
	const struct json *scs = json_get(cur, "scenarios");
	double min_effect = o && o->min_effect > 0 ? o->min_effect : 0.05;
	unsigned ncomp = 0;
	int regressions = 0, clocks;

	if (!is_report(old) || !is_report(cur))
		return perf_fail(err, len, -EINVAL, "not an fsoracle perf "
				 "report (schema fsoracle-perf/1)");
	clocks = same_clock(old, cur);
	for (unsigned s = 0; s < json_len(scs); s++) {
		const struct json *ns = json_at(scs, s);

		ncomp += 2 * both_ok(find_scenario(old, str_of(ns, "id")), ns);
	}
	if (!clocks)
		fprintf(f, "time not compared: the runs measured different "
			"clocks (--clock)\n");
	else
		fprintf(f, "false alarms: at most 5%% over the run, Bonferroni "
			"over %u comparison%s (scenario x twin): %.2g each; "
			"min effect ±%.3g%%\n", ncomp, ncomp == 1 ? "" : "s",
			0.05 / (ncomp ? ncomp : 1), 100 * min_effect);
	for (unsigned s = 0; s < json_len(scs); s++) {
		const struct json *ns = json_at(scs, s);
		const char *id = str_of(ns, "id");
		const struct json *os = find_scenario(old, id);
		const struct json *pts = json_get(ns, "points");
		int worse = 0, slower = 0, faster = 0, same = clocks;

		fprintf(f, "%s %s:\n", id, str_of(ns, "name"));
		if (!both_ok(os, ns)) {
			fprintf(f, "  not compared: %s\n",
				!os ? "not in the old run" :
				"not run in both (skipped or failed)");
			continue;
		}
		for (unsigned i = 0; i < json_len(pts); i++) {
			const struct json *np = json_at(pts, i);
			const struct json *op = find_point(os, np);

			if (!op) {
				fprintf(f, "  %s %s=%s: not in the old run\n",
					str_of(np, "variant"),
					str_of(ns, "param"),
					json_get(np, "param") ?
					json_get(np, "param")->str : "?");
				continue;
			}
			worse |= compare_counters(f, ns, op, np);
		}
		for (unsigned tw = 0; tw < 2 && clocks; tw++) {
			enum perf_seq_state st = compare_twin(f, os, ns, tw,
				0.05 / ncomp, min_effect, more);

			slower |= st == PERF_SEQ_SLOWER;
			faster |= st == PERF_SEQ_FASTER;
			same &= st == PERF_SEQ_SAME;
		}
		fprintf(f, "  => %s: %s\n", id,
			worse ? "REGRESSED (more work)" :
			slower ? "REGRESSED (slower)" :
			faster ? "faster" : same ? "no change" :
			clocks ? "inconclusive" : "counters only");
		regressions += worse || slower;
	}
	return regressions;
}
