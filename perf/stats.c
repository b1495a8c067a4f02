/*
 * stats.c - the statistics of the performance oracle: order statistics,
 * two tests with exact false-alarm rates, and bootstrap intervals.
 *
 * Timings on a shared machine are not normal: they have a floor (the work
 * itself) and a long right tail (everything else the machine does).  So
 * everything here is rank-based or resampled: medians and quartiles, the
 * sign test over side-by-side pairs, the Mann-Whitney U test across two
 * runs, and percentile bootstrap intervals, drawn from a seeded generator
 * so the same samples always give the same interval.
 */
#include "perf/perf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/rng.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorted copy in tmp (n doubles). */
static void sorted(const double *x, unsigned n, double *tmp)
{
	memcpy(tmp, x, n * sizeof(*tmp));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
}

/* Quantile of an already sorted array (type 7: linear interpolation). */
static double quantile_sorted(const double *s, unsigned n, double q)
{
	double h, f;
	unsigned i;

	if (n == 0)
		return 0;
	if (q <= 0)
		return s[0];
	if (q >= 1)
		return s[n - 1];
	h = q * (n - 1);
	i = (unsigned)h;
	f = h - i;
	return i + 1 < n ? s[i] + f * (s[i + 1] - s[i]) : s[i];
}

double perf_quantile(const double *x, unsigned n, double q)
{
	double *tmp;
	double v;

	if (n == 0)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return NAN;
	sorted(x, n, tmp);
	v = quantile_sorted(tmp, n, q);
	free(tmp);
	return v;
}

void perf_summarize(const double *x, unsigned n, struct perf_summary *s)
{
	double *tmp;

	memset(s, 0, sizeof(*s));
	if (n == 0)
		return;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		s->median = s->q1 = s->q3 = s->min = s->max = NAN;
		return;
	}
	sorted(x, n, tmp);
	s->n = n;
	s->min = tmp[0];
	s->max = tmp[n - 1];
	s->q1 = quantile_sorted(tmp, n, 0.25);
	s->median = quantile_sorted(tmp, n, 0.5);
	s->q3 = quantile_sorted(tmp, n, 0.75);
	free(tmp);
}

const char *perf_verdict_name(enum perf_verdict v)
{
	switch (v) {
	case PERF_NO_DIFFERENCE: return "no significant difference";
	case PERF_FASTER:        return "faster";
	case PERF_SLOWER:        return "slower";
	case PERF_NO_DATA:       break;
	}
	return "no data";
}

/*
 * Sign test: under "no difference" each untied pair goes either way with
 * probability 1/2, so the count one way is Binomial(n, 1/2), and the
 * two-sided p-value is twice the smaller tail (at most 1).
 */
double perf_sign_test(unsigned k, unsigned n)
{
	unsigned lo = k < n - k ? k : n - k;
	double tail = 0, term;

	if (n == 0 || k > n)
		return 1;
	/* C(n, i) / 2^n, built up in logs so n in the thousands is fine */
	for (unsigned i = 0; i <= lo; i++) {
		term = lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) -
		       n * log(2.0);
		tail += exp(term);
	}
	return fmin(1.0, 2 * tail);
}

/*
 * Mann-Whitney U.  Exact when there are no ties and the samples are small
 * (the number of orderings with each U by the recurrence
 * f(u; m, n) = f(u - n; m - 1, n) + f(u; m, n - 1)); else the normal
 * approximation with tie and continuity corrections.
 */
#define MW_EXACT_MAX 40

static double mw_exact(unsigned m, unsigned n, double u)
{
	/* f[j][u] for the current m, j = 0..n; rolled over m */
	unsigned umax = m * n;
	double *f = calloc((size_t)(n + 1) * (umax + 1), sizeof(double));
	double *g = calloc((size_t)(n + 1) * (umax + 1), sizeof(double));
	double total = 0, tail = 0;
	unsigned ulo;

	if (!f || !g) {
		free(f);
		free(g);
		return NAN;
	}
#define F(a, j, v) (a)[(size_t)(j) * (umax + 1) + (v)]
	for (unsigned j = 0; j <= n; j++)   /* m = 0: only U = 0 */
		F(f, j, 0) = 1;
	for (unsigned i = 1; i <= m; i++) {
		memset(g, 0, (size_t)(n + 1) * (umax + 1) * sizeof(double));
		F(g, 0, 0) = 1;             /* n = 0: only U = 0 */
		for (unsigned j = 1; j <= n; j++)
			for (unsigned v = 0; v <= i * j; v++)
				F(g, j, v) = (v >= j ? F(f, j, v - j) : 0) +
					     F(g, j - 1, v);
		double *t = f;
		f = g;
		g = t;
	}
	/* two-sided: the tail at least as far from the centre as u */
	ulo = (unsigned)fmin(u, umax - u);
	for (unsigned v = 0; v <= umax; v++) {
		total += F(f, n, v);
		if (v <= ulo)
			tail += F(f, n, v);
	}
#undef F
	free(f);
	free(g);
	return fmin(1.0, 2 * tail / total);
}

double perf_mann_whitney(const double *a, unsigned na, const double *b,
			 unsigned nb)
{
	unsigned n = na + nb;
	struct { double v; int from_a; } *all;
	double ra = 0, u, mu, var, tie = 0, z;
	int ties = 0;

	if (na == 0 || nb == 0)
		return 1;
	all = malloc(n * sizeof(*all));
	if (!all)
		return NAN;
	for (unsigned i = 0; i < na; i++)
		all[i].v = a[i], all[i].from_a = 1;
	for (unsigned i = 0; i < nb; i++)
		all[na + i].v = b[i], all[na + i].from_a = 0;
	/* insertion sort: samples are small, and ties must group */
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && all[j - 1].v > all[j].v; j--) {
			double v = all[j].v;
			int fa = all[j].from_a;

			all[j] = all[j - 1];
			all[j - 1].v = v;
			all[j - 1].from_a = fa;
		}
	for (unsigned i = 0; i < n;) {
		unsigned j = i;
		double rank;

		while (j + 1 < n && all[j + 1].v == all[i].v)
			j++;
		rank = (i + j) / 2.0 + 1;    /* mid-rank of the tie group */
		if (j > i) {
			double t = j - i + 1;

			ties = 1;
			tie += t * t * t - t;
		}
		for (unsigned k = i; k <= j; k++)
			if (all[k].from_a)
				ra += rank;
		i = j + 1;
	}
	free(all);
	u = ra - na * (na + 1) / 2.0;
	if (!ties && n <= MW_EXACT_MAX)
		return mw_exact(na, nb, u);
	mu = na * (double)nb / 2;
	var = na * (double)nb / 12 * ((n + 1) - tie / ((double)n * (n - 1)));
	if (var <= 0)
		return 1;
	z = (fabs(u - mu) - 0.5) / sqrt(var);
	if (z < 0)
		z = 0;
	return fmin(1.0, erfc(z / sqrt(2.0)));
}

static void cmp_defaults(const struct perf_cmp_opts *o, struct perf_cmp_opts *d)
{
	*d = o ? *o : (struct perf_cmp_opts){ 0 };
	if (d->alpha <= 0)
		d->alpha = 0.05;
	if (d->level <= 0)
		d->level = 0.95;
	if (d->resamples == 0)
		d->resamples = 2000;
	if (d->seed == 0)
		d->seed = 0x9e5f0c1e;
}

static enum perf_verdict decide(const struct perf_cmp_opts *o,
				const struct perf_cmp *c)
{
	if (c->n == 0)
		return PERF_NO_DATA;
	if (c->p >= o->alpha || fabs(c->ratio - 1) < o->min_effect)
		return PERF_NO_DIFFERENCE;
	if (c->hi < 1)
		return PERF_FASTER;
	if (c->lo > 1)
		return PERF_SLOWER;
	return PERF_NO_DIFFERENCE;
}

static double median_of(double *x, unsigned n)
{
	qsort(x, n, sizeof(*x), cmp_double);
	return quantile_sorted(x, n, 0.5);
}

void perf_compare_paired(const double *a, const double *b, unsigned n,
			 const struct perf_cmp_opts *opts, struct perf_cmp *out)
{
	struct perf_cmp_opts o;
	double *r, *tmp, *boot;
	unsigned faster = 0, untied = 0;
	struct rng g;

	cmp_defaults(opts, &o);
	memset(out, 0, sizeof(*out));
	r = malloc((n ? n : 1) * sizeof(*r));
	tmp = malloc((n ? n : 1) * sizeof(*tmp));
	boot = malloc(o.resamples * sizeof(*boot));
	if (n == 0 || !r || !tmp || !boot)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		r[i] = a[i] > 0 ? b[i] / a[i] : 1;
		if (b[i] != a[i]) {
			untied++;
			faster += b[i] < a[i];
		}
	}
	out->n = n;
	memcpy(tmp, r, n * sizeof(*tmp));
	out->ratio = median_of(tmp, n);
	rng_seed(&g, o.seed);
	for (unsigned k = 0; k < o.resamples; k++) {
		for (unsigned i = 0; i < n; i++)
			tmp[i] = r[rng_below(&g, n)];
		boot[k] = median_of(tmp, n);
	}
	qsort(boot, o.resamples, sizeof(*boot), cmp_double);
	out->lo = quantile_sorted(boot, o.resamples, (1 - o.level) / 2);
	out->hi = quantile_sorted(boot, o.resamples, 1 - (1 - o.level) / 2);
	out->p = perf_sign_test(faster, untied);
	out->verdict = decide(&o, out);
out:
	free(r);
	free(tmp);
	free(boot);
}

void perf_compare_unpaired(const double *a, unsigned na, const double *b,
			   unsigned nb, const struct perf_cmp_opts *opts,
			   struct perf_cmp *out)
{
	struct perf_cmp_opts o;
	double *ta, *tb, *boot;
	struct rng g;

	cmp_defaults(opts, &o);
	memset(out, 0, sizeof(*out));
	ta = malloc((na ? na : 1) * sizeof(*ta));
	tb = malloc((nb ? nb : 1) * sizeof(*tb));
	boot = malloc(o.resamples * sizeof(*boot));
	if (na == 0 || nb == 0 || !ta || !tb || !boot)
		goto out;
	out->n = na < nb ? na : nb;
	memcpy(ta, a, na * sizeof(*ta));
	memcpy(tb, b, nb * sizeof(*tb));
	{
		double ma = median_of(ta, na), mb = median_of(tb, nb);

		out->ratio = ma > 0 ? mb / ma : 1;
	}
	rng_seed(&g, o.seed);
	for (unsigned k = 0; k < o.resamples; k++) {
		double ma, mb;

		for (unsigned i = 0; i < na; i++)
			ta[i] = a[rng_below(&g, na)];
		for (unsigned i = 0; i < nb; i++)
			tb[i] = b[rng_below(&g, nb)];
		ma = median_of(ta, na);
		mb = median_of(tb, nb);
		boot[k] = ma > 0 ? mb / ma : 1;
	}
	qsort(boot, o.resamples, sizeof(*boot), cmp_double);
	out->lo = quantile_sorted(boot, o.resamples, (1 - o.level) / 2);
	out->hi = quantile_sorted(boot, o.resamples, 1 - (1 - o.level) / 2);
	out->p = perf_mann_whitney(a, na, b, nb);
	out->verdict = decide(&o, out);
out:
	free(ta);
	free(tb);
	free(boot);
}
