/*
 * cmd_perf_ab.c - `fsoracle perf --ab`: this build (A) against another
 * (B), sampled until the answer is as strong as the question.
 *
 * Every timed sample runs in a child process (`perf --sample`), so both
 * builds run the same case on the same machine, side by side.  A round
 * runs every timed point (variant x size) of one twin once through A and
 * once through B: one child of each build runs all the points, the order
 * A B or B A alternating from twin to twin and from round to round (so
 * neither build always runs second, on a warmer cache); its value is the
 * mean over the points of log(tB/tA).
 * A scenario is two comparisons, its naive twin and its optimized twin;
 * each is a sequential test (perf/seq.c) that stops when the interval of
 * B/A lies above 1 (slower), below 1 (faster) or inside ±min-effect (no
 * change), or the scenario's time budget runs out (inconclusive).  The
 * first rounds are a warm-up and discarded.  Counters are exact and must
 * agree in every round: any difference is more or less work.
 */
#include "tools/cmd_perf_ab.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/cmds.h"
#include "tools/common.h"

#define AB_MAX_ROUNDS 1000       /* per-point ratios kept for the table */

int perf_ab_self(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n <= 0 || memchr(buf, '\'', (size_t)n))
		return -EINVAL;
	buf[n] = 0;
	return 0;
}

/* One ID:VARIANT:PARAM:TWIN of a sample list into its scenario and job. */
static int parse_spec(const char *spec, size_t len,
		      const struct perf_scenario **sc, struct perf_job *j,
		      unsigned *twin)
{
	char buf[96], id[16];
	unsigned variant;
	unsigned long long param;
	int end = 0;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, spec, len);
	buf[len] = 0;
	if (sscanf(buf, "%15[^:]:%u:%llu:%u%n", id, &variant, &param, twin,
		   &end) != 4 || buf[end] || !(*sc = perf_scenario_find(id)) ||
	    *twin > 1 || variant >= ((*sc)->nvariants ? (*sc)->nvariants : 1) ||
	    !(*sc)->setup)
		return -EINVAL;
	memset(j, 0, sizeof(*j));
	j->where = PERF_TIME;
	j->variant = variant;
	j->param = param;
	j->naive = *twin ? 0 : 1u << (*sc)->path;
	return 0;
}

/*
 * The child side: every sample of the comma-separated list, in order, in
 * this one process, a line each (seconds, then the counters).  One child
 * per round and build, not one per point: a new process pays for its
 * first touch of the devices' and the page cache's memory (here about
 * 250 ms for a 64 MiB point, 13 ms for each run after it), and the
 * points after the first find that memory mapped.  Every spec is checked
 * before any runs.
 */
int perf_ab_sample(const char *specs, const struct perf_opts *o)
{
	struct sample {
		const struct perf_scenario *sc;
		struct perf_job j;
		unsigned twin;
	} list[PERF_MAX_VARIANTS * PERF_MAX_PARAMS];
	unsigned n = 0;

	for (const char *p = specs;; p++) {
		const char *e = strchrnul(p, ',');

		if (n == sizeof(list) / sizeof(list[0]) ||
		    parse_spec(p, (size_t)(e - p), &list[n].sc, &list[n].j,
			       &list[n].twin)) {
			errmsg("--sample takes ID:VARIANT:PARAM:TWIN[,...] of "
			       "runnable scenarios, at most %zu: '%.*s'",
			       sizeof(list) / sizeof(list[0]), (int)(e - p), p);
			return EXIT_USAGE;
		}
		n++;
		if (!*e)
			break;
		p = e;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct perf_scenario *sc = list[i].sc;
		struct perf_counts c;
		char err[256] = "";
		double secs = 0, plant = 0;

		if (o->plant_id && list[i].twin == 1 &&
		    (!strcmp(o->plant_id, sc->id) ||
		     !strcmp(o->plant_id, sc->name)))
			plant = o->plant_pct;
		for (unsigned k = 0; k < (o->sample_reps ? o->sample_reps : 1);
		     k++) {
			double x;
			int rc = perf_sample_clock(sc, &list[i].j, &c, &x, plant,
						   o->clock, err, sizeof(err));

			if (rc) {
				errmsg("%s", err);
				return EXIT_CHECK;
			}
			secs = k == 0 || x < secs ? x : secs;
		}
		printf("%.9f %u", secs, c.have);
		for (unsigned k = 0; k < sc->ncounters; k++)
			printf(" %llu", (unsigned long long)c.v[k]);
		printf("\n");
	}
	return 0;
}

/*
 * Run one --sample child of bin over the specs list of n points; 0 and
 * each point's time and counters, or -1.
 */
static int child(const struct perf_ab_opts *o, unsigned who,
		 const char *specs, unsigned n, double *secs,
		 struct perf_counts *c, unsigned ncounters)
{
	const char *plant = who ? o->plant : "";
	char cmd[8192];
	FILE *p;
	int ok = 1;

	if ((size_t)snprintf(cmd, sizeof(cmd), "'%s' perf --sample %s "
			     "--sample-reps %u%s%s%s", o->bin[who], specs,
			     o->reps ? o->reps : 1,
			     o->clock == PERF_CLOCK_CPU ? " --clock cpu" :
			     " --clock wall", plant[0] ? " --plant " : "",
			     plant) >= sizeof(cmd))
		return -1;
	p = popen(cmd, "r");
	if (!p)
		return -1;
	memset(c, 0, n * sizeof(*c));
	for (unsigned i = 0; ok && i < n; i++) {
		ok = fscanf(p, "%lf %u", &secs[i], &c[i].have) == 2 &&
		     secs[i] > 0;
		for (unsigned k = 0; ok && k < ncounters; k++) {
			unsigned long long v;

			ok = fscanf(p, "%llu", &v) == 1;
			c[i].v[k] = v;
		}
	}
	return pclose(p) == 0 && ok ? 0 : -1;
}

/* The timed points of a scenario at a scale. */
struct ab_point { unsigned v; uint64_t param; };

static unsigned timed_points(const struct perf_scenario *sc,
			     enum perf_scale scale, struct ab_point *pt)
{
	unsigned nv = sc->nvariants ? sc->nvariants : 1, n = 0;

	for (unsigned v = 0; v < nv && v < PERF_MAX_VARIANTS; v++)
		for (unsigned p = 0; p < sc->nparams[scale] &&
		     p < PERF_MAX_PARAMS; p++) {
			uint64_t param = sc->params[scale][p];

			if (sc->time_max_param && param > sc->time_max_param)
				continue;
			pt[n].v = v;
			pt[n++].param = param;
		}
	return n;
}

/*
 * One round of twin tw: a child of each build over all the points, in
 * the order the round gives (A B or B A); each point's log of tB/tA in
 * lx.  -1 if a child failed.
 */
static int round_pair(const struct perf_ab_opts *o,
		      const struct perf_scenario *sc, const struct ab_point *pt,
		      unsigned npt, unsigned tw, unsigned order, double *lx,
		      int *more)
{
	struct perf_counts c[2][PERF_MAX_VARIANTS * PERF_MAX_PARAMS];
	double t[2][PERF_MAX_VARIANTS * PERF_MAX_PARAMS];
	char specs[PERF_MAX_VARIANTS * PERF_MAX_PARAMS * 48];
	size_t used = 0;

	for (unsigned i = 0; i < npt; i++)
		used += (size_t)snprintf(specs + used, sizeof(specs) - used,
					 "%s%s:%u:%llu:%u", i ? "," : "",
					 sc->id, pt[i].v,
					 (unsigned long long)pt[i].param, tw);
	for (unsigned k = 0; k < 2; k++) {
		unsigned who = (order + k) % 2;

		if (child(o, who, specs, npt, t[who], c[who],
			  sc->ncounters)) {
			if (o->out)
				fprintf(o->out, "  %s twin %u: a child of %s "
					"failed\n", sc->id, tw, o->bin[who]);
			return -1;
		}
	}
	for (unsigned i = 0; i < npt; i++) {
		if (c[0][i].have != c[1][i].have ||
		    memcmp(c[0][i].v, c[1][i].v, sizeof(c[0][i].v))) {
			int up = 0;

			for (unsigned k = 0; k < sc->ncounters; k++)
				up |= c[1][i].v[k] > c[0][i].v[k];
			if (o->out && !*more)
				fprintf(o->out, "  %s:%u:%llu:%u: counters "
					"differ (B does %s work)\n", sc->id,
					pt[i].v,
					(unsigned long long)pt[i].param, tw,
					up ? "MORE" : "less");
			*more |= up;
		}
		lx[i] = log(t[1][i] / t[0][i]);
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The per-point table: median B/A of each point's rounds. */
static void point_line(FILE *f, const struct perf_scenario *sc,
		       const struct ab_point *pt, unsigned npt,
		       double *lr, unsigned rounds)
{
	unsigned n = rounds < AB_MAX_ROUNDS ? rounds : AB_MAX_ROUNDS;

	if (!f || n == 0)
		return;
	fprintf(f, "      median B/A per point:");
	for (unsigned i = 0; i < npt; i++) {
		double *x = lr + (size_t)i * AB_MAX_ROUNDS;
		char ps[32];

		qsort(x, n, sizeof(*x), cmp_double);
		perf_format_param(sc, pt[i].param, ps, sizeof(ps));
		fprintf(f, "%s %s%s%s=%.3f", i ? "," : "",
			sc->nvariants > 1 ? sc->variants[pt[i].v] : "",
			sc->nvariants > 1 ? " " : "", ps,
			exp(n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2));
	}
	fprintf(f, "\n");
}

static void unit_line(FILE *f, unsigned tw, const struct perf_seq *s,
		      double secs)
{
	char text[128];

	if (!f)
		return;
	perf_seq_text(s, secs, text, sizeof(text));
	if (s->looks == 0 || !isfinite(s->lo) || !isfinite(s->hi))
		fprintf(f, "  %-9s B/A -  %s\n", tw ? "optimized" : "naive",
			text);
	else
		fprintf(f, "  %-9s B/A %.3f [%.3f %.3f]  %s\n",
			tw ? "optimized" : "naive", exp(s->est), exp(s->lo),
			exp(s->hi), text);
	fprintf(f, "      %u rounds in %.1f s; noise floor ±%.1f%% per "
		"round (1.48 MAD of the round ratios)\n", s->n, secs,
		100 * (exp(s->noise) - 1));
}

void perf_ab_scenario(const struct perf_ab_opts *o,
		      const struct perf_scenario *sc,
		      struct perf_ab_result *r)
{
	struct ab_point pt[PERF_MAX_VARIANTS * PERF_MAX_PARAMS];
	unsigned npt = timed_points(sc, o->scale, pt);
	struct perf_seq_opts so = { o->alpha, o->min_effect, 0 };
	struct perf_seq seq[2];
	double t0 = mono_seconds(), *lr;

	memset(r, 0, sizeof(*r));
	lr = calloc((size_t)2 * (npt ? npt : 1) * AB_MAX_ROUNDS, sizeof(*lr));
	for (unsigned tw = 0; tw < 2; tw++)
		perf_seq_init(&seq[tw], &so);
	if (!lr || npt == 0) {
		r->failed = 1;
		goto out;
	}
	for (unsigned round = 0;; round++) {
		unsigned kept = round >= o->warm ? round - o->warm : 0;
		double t_start = mono_seconds(), t_round;

		for (unsigned tw = 0; tw < 2; tw++) {
			double x = 0, lx[PERF_MAX_VARIANTS * PERF_MAX_PARAMS];

			if (seq[tw].state != PERF_SEQ_RUNNING)
				continue;
			if (round_pair(o, sc, pt, npt, tw, (round + tw) % 2,
				       lx, &r->more)) {
				r->failed = 1;
				goto out;
			}
			for (unsigned i = 0; i < npt; i++) {
				x += lx[i];
				if (round >= o->warm && kept < AB_MAX_ROUNDS)
					lr[((size_t)tw * npt + i) *
					   AB_MAX_ROUNDS + kept] = lx[i];
			}
			if (round >= o->warm &&
			    perf_seq_add(&seq[tw], x / npt) != PERF_SEQ_RUNNING)
				r->secs[tw] = mono_seconds() - t0;
		}
		if (!o->quiet)
			fprintf(stderr, "perf A/B %s: round %u, %.0f s\r",
				sc->id, round + 1, mono_seconds() - t0);
		if (seq[0].state != PERF_SEQ_RUNNING &&
		    seq[1].state != PERF_SEQ_RUNNING)
			break;
		/* out of budget, or the next round, as long as this one,
		 * would end past it: every verdict within the budget */
		t_round = mono_seconds() - t_start;
		if (mono_seconds() - t0 + t_round > o->budget) {
			for (unsigned tw = 0; tw < 2; tw++)
				if (seq[tw].state == PERF_SEQ_RUNNING) {
					perf_seq_stop(&seq[tw]);
					r->secs[tw] = mono_seconds() - t0;
				}
			break;
		}
	}
	if (!o->quiet)
		fprintf(stderr, "\n");
	for (unsigned tw = 0; tw < 2; tw++) {
		r->state[tw] = seq[tw].state;
		r->noise[tw] = exp(seq[tw].noise) - 1;
		r->rounds[tw] = seq[tw].n;
		unit_line(o->out, tw, &seq[tw], r->secs[tw]);
		point_line(o->out, sc, pt, npt,
			   lr + (size_t)tw * npt * AB_MAX_ROUNDS, seq[tw].n);
	}
out:
	for (unsigned tw = 0; tw < 2; tw++)
		perf_seq_free(&seq[tw]);
	free(lr);
}
