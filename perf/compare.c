/*
 * compare.c - the A/B verdict: two saved runs (two builds, or one build
 * before and after a change), scenario by scenario.
 *
 * Counters first: they are exact, so any change is real, and more work in
 * either twin is a regression whatever the clock says.  Then time, per
 * twin and point: the two runs' samples are independent (not side by
 * side), so the Mann-Whitney U test and a bootstrap interval for the ratio
 * of medians (new/old).  A scenario has several points and two twins; the
 * tests share the scenario's false-alarm budget (alpha split evenly,
 * Bonferroni), so a run compared with itself says "slower" for a scenario
 * with probability at most alpha when nothing changed, and a minimum
 * effect (default 2%) keeps drift between two runs on a shared machine
 * from counting as a regression.
 */
#include "perf/perf.h"

#include <inttypes.h>
#include <stdlib.h>
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
static int compare_counters(FILE *f, const struct json *op,
			    const struct json *np)
{
	const struct json *oc = json_get(op, "counters");
	const struct json *nc = json_get(np, "counters");
	int more = 0, changed = 0;

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
			fprintf(f, "      %s %s: %" PRIu64 " -> %" PRIu64
				" (%s work)\n", twin, n->key, a, b,
				b > a ? "MORE" : "less");
		}
	}
	if (!changed && json_len(nc))
		fprintf(f, "      counters: identical\n");
	return more;
}

int perf_compare_reports(FILE *f, const struct json *old,
			 const struct json *cur, const struct perf_cmp_opts *o,
			 char *err, size_t len)
{
	const struct json *scs = json_get(cur, "scenarios");
	int regressions = 0;

	if (!is_report(old) || !is_report(cur))
		return perf_fail(err, len, -EINVAL, "not an fsoracle perf "
				 "report (schema fsoracle-perf/1)");
	for (unsigned s = 0; s < json_len(scs); s++) {
		const struct json *ns = json_at(scs, s);
		const char *id = str_of(ns, "id");
		const struct json *os = find_scenario(old, id);
		const struct json *pts = json_get(ns, "points");
		struct perf_cmp_opts co = *o;
		unsigned tests = 0;
		int more = 0, slower = 0, faster = 0;

		fprintf(f, "%s %s:\n", id, str_of(ns, "name"));
		if (!os || strcmp(str_of(os, "status"), "ok") ||
		    strcmp(str_of(ns, "status"), "ok")) {
			fprintf(f, "  not compared: %s\n",
				!os ? "not in the old run" :
				"not run in both (skipped or failed)");
			continue;
		}
		for (unsigned i = 0; i < json_len(pts); i++) {
			const struct json *op = find_point(os, json_at(pts, i));
			const struct json *t = json_get(json_at(pts, i), "time");

			if (op && t && t->type == JSON_OBJECT &&
			    json_get(op, "time") &&
			    json_get(op, "time")->type == JSON_OBJECT)
				tests += 2;
		}
		if (tests)
			co.alpha = (o->alpha > 0 ? o->alpha : 0.05) / tests;
		for (unsigned i = 0; i < json_len(pts); i++) {
			const struct json *np = json_at(pts, i);
			const struct json *op = find_point(os, np);
			const struct json *nt = json_get(np, "time");
			const struct json *ot;

			fprintf(f, "  %s %s=%s:\n", str_of(np, "variant"),
				str_of(ns, "param"),
				json_get(np, "param") ?
				json_get(np, "param")->str : "?");
			if (!op) {
				fprintf(f, "      not in the old run\n");
				continue;
			}
			more |= compare_counters(f, op, np);
			ot = json_get(op, "time");
			if (!nt || nt->type != JSON_OBJECT || !ot ||
			    ot->type != JSON_OBJECT)
				continue;
			for (int tw = 0; tw < 2; tw++) {
				const char *twin = tw ? "optimized" : "naive";
				unsigned na, nb;
				double *a = samples(ot, twin, &na);
				double *b = samples(nt, twin, &nb);
				struct perf_cmp c;

				perf_compare_unpaired(a, na, b, nb, &co, &c);
				fprintf(f, "      %-9s time new/old %.3f "
					"[%.3f %.3f]  p=%.2g  %s\n", twin,
					c.ratio, c.lo, c.hi, c.p,
					c.verdict == PERF_SLOWER ? "SLOWER" :
					c.verdict == PERF_FASTER ? "faster" :
					"no significant change");
				slower |= c.verdict == PERF_SLOWER;
				faster |= c.verdict == PERF_FASTER;
				free(a);
				free(b);
			}
		}
		fprintf(f, "  => %s: %s\n", id,
			more ? "REGRESSED (more work)" :
			slower ? "REGRESSED (slower beyond noise)" :
			faster ? "faster" : "no significant change");
		regressions += more || slower;
	}
	return regressions;
}
