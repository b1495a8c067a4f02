/*
 * seq.c - the sequential test of the performance oracle: keep sampling
 * until the answer is as strong as the question.
 *
 * One comparison (one scenario twin, A against B) is a stream of
 * per-round values x_i, each the log of a time ratio B/A pooled over the
 * scenario's points (the mean of log(tB/tA) over sizes and variants), so
 * a 5% cost in B shifts every x_i by log 1.05 whatever the size.  The
 * estimate is the Hodges-Lehmann shift (median of the Walsh averages
 * (x_i + x_j)/2), robust to the long right tail of a shared machine; its
 * interval is the Wilcoxon signed-rank inversion, exact (distribution
 * free) when A and B are the same build, because then swapping the two
 * labels leaves the distribution of a round unchanged.
 *
 * Looks, not a peek after every round: at n = 10, 14, 20, 28, 40, ...
 * (x sqrt 2), at most PERF_SEQ_LOOKS of them.  Look k (1-based) spends
 * the share k^-1.5 / H of alpha, H the sum of the shares of all the
 * looks, so its interval has level 1 - alpha k^-1.5 / H (Bonferroni over
 * looks with unequal shares): the shares add up to 1, so the chance that
 * any look's interval misses the truth stays below alpha however the
 * stream stops.  The shares fall because the early looks are the ones a
 * minute's budget reaches, and the signed-rank interval needs its level
 * there: at 10 rounds no interval below the level 1 - 2/1024 exists
 * (every sign pattern has probability 1/1024), which an equal twelfth of
 * a 5% split over a few scenarios is already past.  Later looks have
 * more rounds and need less of alpha for the same width.
 *
 *      lo ............ hi         decision at a look
 *          |--1--|                 lo > 1        slower by (lo-1)..(hi-1)
 *   |--|                           hi < 1        faster
 *      [ 1-m     1     1+m ]       inside ±m     no change within ±m
 *        |----------|              else          keep sampling
 *
 * When the time budget runs out first, one last look (the next look's
 * share of alpha) and "inconclusive: noise ±h" with h its half-width.
 * For two saved runs (--baseline) the same looks on the two-sample form:
 * the shift is the median of the differences new - old, its interval the
 * Mann-Whitney inversion.
 */
#include "perf/perf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_LOOK 10u
#define EXACT_MAX  100u          /* signed-rank law by recurrence up to n */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

unsigned perf_seq_look_at(unsigned k)
{
	return (unsigned)lround(FIRST_LOOK * pow(2.0, k / 2.0));
}

double perf_seq_look_share(unsigned k, unsigned looks)
{
	double h = 0;

	if (looks == 0)
		looks = PERF_SEQ_LOOKS;
	if (k >= looks)
		return 0;
	for (unsigned j = 1; j <= looks; j++)
		h += pow(j, -1.5);
	return pow(k + 1, -1.5) / h;
}

/* The upper normal quantile: z with P(Z > z) = p, by bisection on erfc. */
static double z_upper(double p)
{
	double lo = 0, hi = 40;

	for (int i = 0; i < 100; i++) {
		double mid = (lo + hi) / 2;

		if (0.5 * erfc(mid / sqrt(2.0)) > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/*
 * The largest k >= 0 with P(T <= k - 1) <= a, T the signed-rank statistic
 * of n untied values under symmetry (T in 0..n(n+1)/2): the k-th smallest
 * and k-th largest Walsh averages bound a 1 - 2a interval.  Exact by the
 * recurrence over ranks for small n, the normal law beyond.
 */
static unsigned signed_rank_k(unsigned n, double a)
{
	unsigned N = n * (n + 1) / 2, k = 0;

	if (n <= EXACT_MAX) {
		double *p = calloc(N + 1, sizeof(*p)), cum = 0;

		if (!p)
			return 0;
		p[0] = 1;
		for (unsigned r = 1; r <= n; r++)   /* rank r in or out */
			for (unsigned t = r * (r + 1) / 2 + 1; t-- > 0;)
				p[t] = (p[t] + (t >= r ? p[t - r] : 0)) / 2;
		while (k <= N && cum + p[k] <= a)
			cum += p[k++];
		free(p);
		return k;
	}
	{
		double mu = N / 2.0;
		double sd = sqrt(n * (n + 1.0) * (2.0 * n + 1) / 24);
		double c = floor(mu - z_upper(a) * sd - 0.5);

		return c < 0 ? 0 : (unsigned)c + 1;
	}
}

/* The same for the Mann-Whitney U of m and n values (normal law). */
static unsigned mann_whitney_k(unsigned m, unsigned n, double a)
{
	double mu = m * (double)n / 2;
	double sd = sqrt(m * (double)n * (m + n + 1.0) / 12);
	double c = floor(mu - z_upper(a) * sd - 0.5);

	return c < 0 ? 0 : (unsigned)c + 1;
}

/*
 * Estimate and interval from the sorted array w of N pairwise values
 * (Walsh averages or differences): the median, and the k-th from each
 * end (the whole range when k is 0: too few values for this level).
 */
static void interval(struct perf_seq *s, double *w, size_t N, unsigned k)
{
	qsort(w, N, sizeof(*w), cmp_double);
	s->est = N % 2 ? w[N / 2] : (w[N / 2 - 1] + w[N / 2]) / 2;
	if (k == 0 || k > N) {
		s->lo = -INFINITY;
		s->hi = INFINITY;
	} else {
		s->lo = w[k - 1];
		s->hi = w[N - k];
	}
}

/* 1.4826 x the median absolute deviation of x: sd of a normal's worth. */
static double robust_spread(const double *x, unsigned n)
{
	double *d = malloc((n ? n : 1) * sizeof(*d)), m, r;

	if (!d || n == 0) {
		free(d);
		return NAN;
	}
	memcpy(d, x, n * sizeof(*d));
	qsort(d, n, sizeof(*d), cmp_double);
	m = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
	for (unsigned i = 0; i < n; i++)
		d[i] = fabs(x[i] - m);
	qsort(d, n, sizeof(*d), cmp_double);
	r = 1.4826 * (n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2);
	free(d);
	return r;
}

static int push(double **x, unsigned *n, unsigned *cap, double v)
{
	if (*n == *cap) {
		unsigned c = *cap ? 2 * *cap : 64;
		double *nx = realloc(*x, c * sizeof(**x));

		if (!nx)
			return -ENOMEM;
		*x = nx;
		*cap = c;
	}
	(*x)[(*n)++] = v;
	return 0;
}

void perf_seq_init(struct perf_seq *s, const struct perf_seq_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->alpha = o && o->alpha > 0 ? o->alpha : 0.05;
	s->min_effect = o && o->min_effect > 0 ? o->min_effect : 0.05;
	s->max_looks = o && o->max_looks ? o->max_looks : PERF_SEQ_LOOKS;
	s->lo = -INFINITY;
	s->hi = INFINITY;
	s->state = PERF_SEQ_RUNNING;
}

void perf_seq_free(struct perf_seq *s)
{
	free(s->x);
	free(s->ref);
	s->x = s->ref = NULL;
	s->n = s->nref = 0;
}

int perf_seq_set_reference(struct perf_seq *s, const double *ref,
			   unsigned n)
{
	free(s->ref);
	s->ref = malloc((n ? n : 1) * sizeof(*ref));
	if (!s->ref)
		return -ENOMEM;
	memcpy(s->ref, ref, n * sizeof(*ref));
	s->nref = n;
	return 0;
}

/*
 * The interval of this look, at level 1 - alpha x the look's share.  The
 * last look when the budget is out takes the share of the look it
 * replaces (the next one); a stream that took all its looks is decided,
 * so no share is spent twice.
 */
static int evaluate(struct perf_seq *s)
{
	double a = s->alpha * perf_seq_look_share(s->looks, s->max_looks) / 2;
	size_t N;
	double *w;
	unsigned k;

	N = s->nref ? (size_t)s->n * s->nref : (size_t)s->n * (s->n + 1) / 2;
	w = malloc((N ? N : 1) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (s->nref) {
		size_t t = 0;

		for (unsigned i = 0; i < s->n; i++)
			for (unsigned j = 0; j < s->nref; j++)
				w[t++] = s->x[i] - s->ref[j];
		k = mann_whitney_k(s->n, s->nref, a);
	} else {
		size_t t = 0;

		for (unsigned i = 0; i < s->n; i++)
			for (unsigned j = i; j < s->n; j++)
				w[t++] = (s->x[i] + s->x[j]) / 2;
		k = signed_rank_k(s->n, a);
	}
	interval(s, w, N, k);
	free(w);
	s->looks++;
	s->noise = robust_spread(s->x, s->n);
	return 0;
}

static void decide(struct perf_seq *s, int last)
{
	double m = s->min_effect;

	if (s->lo > 0)
		s->state = PERF_SEQ_SLOWER;
	else if (s->hi < 0)
		s->state = PERF_SEQ_FASTER;
	else if (s->lo > log(1 - m) && s->hi < log(1 + m))
		s->state = PERF_SEQ_SAME;
	else if (last || s->looks >= s->max_looks)
		s->state = PERF_SEQ_INCONCLUSIVE;
}

enum perf_seq_state perf_seq_add(struct perf_seq *s, double x)
{
	if (s->state != PERF_SEQ_RUNNING)
		return s->state;
	if (!isfinite(x) || push(&s->x, &s->n, &s->cap, x)) {
		s->state = PERF_SEQ_INCONCLUSIVE;
		return s->state;
	}
	if (s->max_looks > 1 && s->n == perf_seq_look_at(s->looks)) {
		if (evaluate(s))
			s->state = PERF_SEQ_INCONCLUSIVE;
		else
			decide(s, 0);
	}
	return s->state;
}

enum perf_seq_state perf_seq_stop(struct perf_seq *s)
{
	if (s->state != PERF_SEQ_RUNNING)
		return s->state;
	/* a last look, if anything came since the previous one */
	if (s->n > 0 && (s->looks == 0 ||
			 s->n != perf_seq_look_at(s->looks - 1)) &&
	    evaluate(s) == 0)
		decide(s, 1);
	if (s->state == PERF_SEQ_RUNNING)
		s->state = PERF_SEQ_INCONCLUSIVE;
	return s->state;
}

void perf_seq_text(const struct perf_seq *s, double secs, char *buf,
		   size_t len)
{
	double lo = 100 * (exp(s->lo) - 1), hi = 100 * (exp(s->hi) - 1);
	double m = 100 * s->min_effect;

	switch (s->state) {
	case PERF_SEQ_SAME:
		snprintf(buf, len, "no change within ±%.3g%%", m);
		break;
	case PERF_SEQ_SLOWER:
		snprintf(buf, len, "slower by %.2g-%.2g%%", lo, hi);
		break;
	case PERF_SEQ_FASTER:
		snprintf(buf, len, "faster by %.2g-%.2g%%", -hi, -lo);
		break;
	case PERF_SEQ_INCONCLUSIVE:
		if (isfinite(lo) && isfinite(hi) && s->max_looks == 1)
			snprintf(buf, len, "inconclusive: noise ±%.2g%% with "
				 "%u samples", (hi - lo) / 2, s->n);
		else if (isfinite(lo) && isfinite(hi))
			snprintf(buf, len, "inconclusive: noise ±%.2g%% after "
				 "%.0f s", (hi - lo) / 2, secs);
		else
			snprintf(buf, len, "inconclusive: too few rounds "
				 "(%u) after %.0f s", s->n, secs);
		break;
	case PERF_SEQ_RUNNING:
		snprintf(buf, len, "undecided (%u rounds)", s->n);
		break;
	}
}
