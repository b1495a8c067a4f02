/*
 * run.c - the driver: each scenario point (variant x parameter) run
 * through both twins, first for the counters, then for the clock.
 *
 * Counters: one run per twin on null: devices at the requested scale;
 * counters reset after the setup, so only the measured operation counts.
 * The twins differ in nothing but the naive switch of the scenario's path,
 * so every difference is the path's.
 *
 * Time: pairs of runs on mem: devices, each pair one naive and one
 * optimized run, the order alternating from pair to pair (A B, B A, ...)
 * so neither twin always runs on a warmer machine; the first pairs are a
 * warm-up and discarded.  Only the operation is timed (CLOCK_MONOTONIC),
 * never the setup.
 */
#include "perf/perf_internal.h"

#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- counters by name ---- */

struct find_ctx { const char *name; size_t len; uint64_t v; int found; };

static void find_cb(void *arg, const char *name, uint64_t v)
{
	struct find_ctx *f = arg;

	if (strlen(name) == f->len && !memcmp(name, f->name, f->len)) {
		f->v = v;
		f->found = 1;
	}
}

int perf_counter_get(const struct ref_counters *c, const char *sum,
		     uint64_t *out)
{
	const char *s = sum;
	uint64_t total = 0;

	while (*s) {
		const char *end = strchr(s, '+');
		struct find_ctx f = { s, end ? (size_t)(end - s) : strlen(s),
				      0, 0 };

		ref_counters_foreach(c, find_cb, &f);
		if (!f.found)
			return -ENOENT;
		total += f.v;
		s += f.len + (end ? 1 : 0);
	}
	*out = total;
	return 0;
}

int perf_counter_known(const char *name)
{
	struct ref_counters zero;
	uint64_t v;

	memset(&zero, 0, sizeof(zero));
	return perf_counter_get(&zero, name, &v) == 0;
}

/* ---- noise control ---- */

int perf_pin_cpu(char *what, size_t len)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu < 0) {
		snprintf(what, len, "not pinned: sched_getcpu: %s",
			 strerror(errno));
		return -errno;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		int e = errno;

		snprintf(what, len, "not pinned (sched_setaffinity: %s)",
			 strerror(e));
		return -e;
	}
	snprintf(what, len, "pinned to CPU %d (children inherit it)", cpu);
	return 0;
}

/*
 * Keep the memory the engine frees in this process.  The kernel's page
 * cache puts a truncated page on its own free lists; the engine's frees
 * it to malloc, which (glibc's defaults) gives the heap's top back to the
 * kernel past 128 KiB and unmaps large blocks at once, and the next
 * allocation takes the memory back by page faults: work of the process
 * and the kernel, inside the timed window, in proportion to the pages
 * freed and not to the path's work.  Measured here, a 001 truncate of 16
 * x 1 MiB took 0.9 ms of CPU with it and 0.17 ms without, and a 004 sync
 * with two workers 29 against 18 ms.  So the heap is not trimmed, large
 * blocks come from mmap only past 32 MiB (no longer moving up as blocks
 * are freed), and the heap grows 64 MiB at a time.
 */
void perf_hold_memory(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
	mallopt(M_TOP_PAD, 64 << 20);
#endif
}

/* ---- one run ---- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The process's CPU time: every thread's, none of the time it waited. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int perf_sample(const struct perf_scenario *sc, const struct perf_job *j,
		struct perf_counts *cnt, double *secs, double plant_pct,
		char *err, size_t len)
{
	return perf_sample_clock(sc, j, cnt, secs, plant_pct, PERF_CLOCK_WALL,
				 err, len);
}

int perf_sample_clock(const struct perf_scenario *sc,
		      const struct perf_job *j, struct perf_counts *cnt,
		      double *secs, double plant_pct, enum perf_clock clock,
		      char *err, size_t len)
{
	double (*tick)(void) = clock == PERF_CLOCK_CPU ? cpu_now : now;
	struct perf_world w;
	double t0, t1;
	int rc;

	memset(&w, 0, sizeof(w));
	rc = sc->setup(&w, j, err, len);
	if (rc)
		goto out;
	ref_counters_reset(w.fs);
	t0 = tick();
	rc = sc->op(&w, j);
	t1 = tick();
	if (rc) {
		perf_fail(err, len, rc, "the measured operation failed: %s",
			  ref_strerror(rc));
		goto out;
	}
	if (plant_pct > 0) {
		double until = t1 + (t1 - t0) * plant_pct / 100;

		while ((t1 = tick()) < until)
			;
	}
	if (secs)
		*secs = t1 - t0;
	if (cnt) {
		memset(cnt, 0, sizeof(*cnt));
		for (unsigned i = 0; i < sc->ncounters; i++)
			if (!perf_counter_get(ref_counters(w.fs),
					      sc->counters[i].sum, &cnt->v[i]))
				cnt->have |= 1u << i;
	}
out:
	perf_world_close(&w);
	return rc;
}

int perf_check_holds(const struct perf_check *c)
{
	uint64_t diff;

	if (!c->have)
		return 0;
	diff = c->got > c->expect ? c->got - c->expect : c->expect - c->got;
	if (c->tolerance_pct == 0)
		return diff == 0;
	return (double)diff <= (double)c->expect * c->tolerance_pct / 100;
}

static void fill_checks(const struct perf_scenario *sc,
			const struct perf_job *j, struct perf_point *pt,
			struct perf_result *r)
{
	if (!sc->seed)
		return;
	memset(pt->checks, 0, sizeof(pt->checks));
	pt->nchecks = sc->seed(j, pt->checks, PERF_MAX_CHECKS);
	for (unsigned i = 0; i < pt->nchecks; i++) {
		struct perf_check *c = &pt->checks[i];
		uint32_t bit = 1u << c->counter;

		if (c->counter >= sc->ncounters)
			continue;
		switch (c->twin) {
		case 0:
			c->have = !!(pt->naive.have & bit);
			c->got = pt->naive.v[c->counter];
			break;
		case 1:
			c->have = !!(pt->opt.have & bit);
			c->got = pt->opt.v[c->counter];
			break;
		default: /* 2: naive minus optimized, 3: the other way */
			c->have = !!(pt->naive.have & pt->opt.have & bit);
			c->got = c->twin == 2 ?
				 pt->naive.v[c->counter] - pt->opt.v[c->counter] :
				 pt->opt.v[c->counter] - pt->naive.v[c->counter];
			break;
		}
		r->seed_checks++;
		if (!perf_check_holds(c))
			r->seed_mismatches++;
	}
}

static void progress_line(FILE *f, const struct perf_scenario *sc,
			  const struct perf_point *pt, const char *what)
{
	char p[32];

	if (!f)
		return;
	perf_format_param(sc, pt->param, p, sizeof(p));
	fprintf(f, "perf %s %s%s%s %s=%s: %s\n", sc->id, sc->name,
		sc->nvariants ? " " : "",
		sc->nvariants ? sc->variants[pt->variant] : "",
		sc->param_name, p, what);
	fflush(f);
}

static int count_point(const struct perf_scenario *sc, struct perf_job *j,
		       struct perf_point *pt, struct perf_result *r)
{
	int rc;

	j->where = PERF_COUNT;
	j->naive = 1u << sc->path;
	rc = perf_sample(sc, j, &pt->naive, NULL, 0, r->reason,
		      sizeof(r->reason));
	if (rc)
		return rc;
	j->naive = 0;
	rc = perf_sample(sc, j, &pt->opt, NULL, 0, r->reason, sizeof(r->reason));
	if (rc)
		return rc;
	pt->counted = 1;
	fill_checks(sc, j, pt, r);
	/* Where the case saves work, the optimized twin does strictly less
	 * of it; where it does not, exactly as much. */
	pt->saves = !sc->saves || sc->saves(j);
	for (unsigned i = 0; i < sc->ncounters; i++) {
		uint64_t n = pt->naive.v[i], o = pt->opt.v[i];

		if (!sc->counters[i].primary ||
		    !(pt->naive.have & pt->opt.have & (1u << i)))
			continue;
		if (pt->saves ? !(o < n) : o != n)
			pt->less_fail |= 1u << i;
	}
	if (pt->less_fail)
		r->less_work_failures++;
	return 0;
}

unsigned perf_repeats(const struct perf_opts *o)
{
	return o->repeats ? o->repeats : o->scale == PERF_FULL ? 20 : 12;
}

static int time_point(const struct perf_scenario *sc, struct perf_job *j,
		      struct perf_point *pt, const struct perf_opts *o,
		      struct perf_result *r, FILE *progress)
{
	unsigned keep = perf_repeats(o);
	unsigned warm = o->warmup, total = warm + keep;
	double plant = o->plant_id && (!strcmp(o->plant_id, sc->id) ||
					!strcmp(o->plant_id, sc->name)) ?
		       o->plant_pct : 0;
	struct perf_cmp_opts co = { .seed = o->seed };
	int rc = 0;

	pt->tnaive = calloc(keep, sizeof(double));
	pt->topt = calloc(keep, sizeof(double));
	if (!pt->tnaive || !pt->topt)
		return perf_fail(r->reason, sizeof(r->reason), -ENOMEM,
				 "out of memory");
	j->where = PERF_TIME;
	for (unsigned i = 0; i < total && !rc; i++) {
		double t[2] = { 0, 0 };

		for (unsigned k = 0; k < 2 && !rc; k++) {
			unsigned twin = (i + k) % 2; /* A B, then B A */

			j->naive = twin ? 0 : 1u << sc->path;
			rc = perf_sample_clock(sc, j, NULL, &t[twin],
					       twin ? plant : 0, o->clock,
					       r->reason, sizeof(r->reason));
		}
		if (!rc && i >= warm) {
			pt->tnaive[i - warm] = t[0];
			pt->topt[i - warm] = t[1];
			pt->nsamples = i - warm + 1;
		}
		if (progress && !o->quiet && (i + 1) % 4 == 0) {
			char what[48];

			snprintf(what, sizeof(what), "timing, pair %u of %u",
				 i + 1, total);
			progress_line(progress, sc, pt, what);
		}
	}
	if (rc)
		return rc;
	pt->timed = 1;
	perf_summarize(pt->tnaive, pt->nsamples, &pt->sn);
	perf_summarize(pt->topt, pt->nsamples, &pt->so);
	perf_compare_paired(pt->tnaive, pt->topt, pt->nsamples, &co, &pt->cmp);
	return 0;
}

void perf_run(const struct perf_scenario *sc, const struct perf_opts *o,
	      struct perf_result *r, FILE *progress)
{
	unsigned nv = sc->nvariants ? sc->nvariants : 1;
	unsigned np = sc->nparams[o->scale];
	FILE *pf = o->quiet ? NULL : progress;
	int rc;

	memset(r, 0, sizeof(*r));
	r->sc = sc;
	/* -ENOSYS: the engine lacks the path; anything else is a failure */
	rc = sc->probe ? sc->probe(r->reason, sizeof(r->reason)) : 0;
	if (rc) {
		r->status = rc == -ENOSYS ? PERF_SKIPPED : PERF_ERROR;
		if (pf)
			fprintf(pf, "perf %s %s: %s: %s\n", sc->id, sc->name,
				rc == -ENOSYS ? "not available" : "error",
				r->reason);
		return;
	}
	if (!sc->setup || !sc->op) {
		r->status = PERF_SKIPPED;
		snprintf(r->reason, sizeof(r->reason),
			 "scenario %s has no driver", sc->id);
		return;
	}
	for (unsigned v = 0; v < nv && v < PERF_MAX_VARIANTS; v++)
		for (unsigned p = 0; p < np && p < PERF_MAX_PARAMS; p++) {
			struct perf_point *pt = &r->pts[r->npts++];
			struct perf_job j = { .variant = v,
					      .param = sc->params[o->scale][p],
					      .scale = o->scale };

			rc = 0;

			pt->variant = v;
			pt->param = j.param;
			if (!o->time_only) {
				double t0 = now();
				char what[64];

				progress_line(pf, sc, pt, "counting...");
				rc = count_point(sc, &j, pt, r);
				snprintf(what, sizeof(what),
					 "counters done (%.1f s)", now() - t0);
				if (!rc)
					progress_line(pf, sc, pt, what);
			}
			if (!rc && !o->counters_only &&
			    (!sc->time_max_param ||
			     j.param <= sc->time_max_param))
				rc = time_point(sc, &j, pt, o, r, pf);
			if (rc) {
				r->status = PERF_ERROR;
				if (pf)
					fprintf(pf, "perf %s %s: error: %s\n",
						sc->id, sc->name, r->reason);
				return;
			}
		}
}

void perf_result_free(struct perf_result *r)
{
	for (unsigned i = 0; i < r->npts; i++) {
		free(r->pts[i].tnaive);
		free(r->pts[i].topt);
		r->pts[i].tnaive = r->pts[i].topt = NULL;
	}
}
