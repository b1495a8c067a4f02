/*
 * cmd_perf.c - `fsoracle perf`: the performance oracle (perf/).  Runs the
 * seed scenarios naive against optimized, prints the table, writes JSON
 * and SVG, and compares saved runs (A/B).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "perf/perf.h"
#include "tools/cmd_perf_ab.h"
#include "tools/cmds.h"
#include "tools/common.h"

#define DEFAULT_SEED 0x5eedu
#define PERF_AB_MAX  1000   /* pairs kept per point and twin in --ab */

static const char usage_text[] =
"usage: fsoracle perf [SCENARIO...] [--quick|--full] [--json FILE]\n"
"                     [--svg DIR] [--repeats N] [--baseline FILE]\n"
"       fsoracle perf --compare OLD.json NEW.json\n"
"       fsoracle perf --ab OTHER-FSORACLE [SCENARIO...] [--ab-plant ID=PCT]\n"
"       fsoracle perf --calibrate [K] [SCENARIO...]\n"
"       fsoracle perf --list\n"
"\n"
"The performance oracle: each seed's experiment run through a path's\n"
"naive twin and its optimized version on identical inputs.  Work counters\n"
"are exact (null: devices, the seed's own scale with --full) and checked\n"
"against the seed's figures; wall time is measured on mem: devices, the\n"
"twins side by side (A B, B A, ... after a warm-up pair), with the median\n"
"and quartiles, the ratio with a 95% bootstrap interval, and a sign-test\n"
"verdict: faster, slower, or no significant difference (false alarms at\n"
"most 5%).  A scenario whose path the engine does not implement yet is\n"
"reported as not available and skipped.  Progress goes to stderr.\n"
"\n"
"Comparisons of two builds (--ab, --baseline, --compare) are sequential:\n"
"one comparison per scenario twin, pooled over its sizes and variants,\n"
"sampled until the interval of the time ratio B/A lies above 1 (\"slower\n"
"by 6-9%\"), below 1 (\"faster by ...\") or inside ±min-effect (\"no change\n"
"within ±5%\"), or the budget runs out (\"inconclusive: noise ±12% after\n"
"60 s\").  False alarms stay at most 5% over the whole run: Bonferroni over\n"
"the comparisons and the 12 looks of each, the early looks taking the\n"
"larger shares (printed).\n"
"\n"
"SCENARIO is an id (000) or a name (rt-truncate); default: all.\n"
"\n"
"Options:\n"
"  --quick          reduced counts, 12 timed pairs (the default)\n"
"  --full           counters at the seed's scale, 20 timed pairs\n"
"  --repeats N      timed pairs kept (after --warmup N, default 1)\n"
"  --counters-only  no timing;  --time-only: no counters\n"
"  --json FILE      write the results as JSON (schema fsoracle-perf/1);\n"
"                   --save FILE is the same\n"
"  --svg DIR        one plot per scenario (and variant): counters and\n"
"                   time against the swept parameter\n"
"  --baseline FILE  after the run, compare it with a saved one; while\n"
"                   undecided, this build takes more rounds (budget)\n"
"  --compare OLD NEW  compare two saved runs, run nothing (runs made\n"
"                   at different times: drift on a busy machine counts)\n"
"  --ab BIN         A/B of two builds side by side: every timed sample\n"
"                   runs in a child, this binary and BIN alternating\n"
"                   (A B, B A, ...); exact counters must agree, times\n"
"                   get the sequential test\n"
"  --ab-plant ID=PCT  give B the planted cost (validates the verdict)\n"
"  --calibrate [K]  K A/A runs (this binary against itself) and K with\n"
"                   a planted min-effect cost in B, each as --ab runs\n"
"                   it; prints the false-alarm rate and power per\n"
"                   scenario (K default 10)\n"
"  --budget S       seconds per scenario for a sequential comparison (60);\n"
"                   no round starts that would end past it\n"
"  --min-effect PCT the ±band of \"no change\" (5)\n"
"  --clock wall|cpu what a timed run measures: wall time, or the\n"
"                   process's CPU time, every thread's (the default of\n"
"                   --ab and --calibrate: the time a shared machine gives\n"
"                   to other work does not count)\n"
"  --sample-reps N  runs per child sample in --ab, the fastest kept (3)\n"
"  --no-pin         do not pin to one CPU (--ab and --calibrate pin the\n"
"                   children to the CPU they start on, where allowed)\n"
"  --plant ID=PCT   test knob: PCT%% extra time in scenario ID's\n"
"                   optimized twin (validates the A/B verdict)\n"
"  --seed S         bootstrap seed (results are deterministic given the\n"
"                   samples)\n"
"  -q               no progress lines\n"
"  --list           list the scenarios and what they run\n"
"\n"
"Exit status: 0 all good; 1 an optimized path did not do less work, a\n"
"seed figure differs, a scenario failed, or a comparison found a\n"
"regression (more work, or slower); 2 bad usage or a file that is not a\n"
"perf report.\n";

static void list_scenarios(void)
{
	for (unsigned i = 0; i < perf_nscenarios; i++) {
		const struct perf_scenario *sc = perf_scenarios[i];
		char why[256] = "";
		int rc = sc->probe ? sc->probe(why, sizeof(why)) : 0;

		printf("%s %-15s path %s: %s\n", sc->id, sc->name,
		       sc->path_label, sc->title);
		printf("    --quick: %s\n    --full:  %s\n    time:    %s\n",
		       sc->scale_doc[0], sc->scale_doc[1], sc->time_doc);
		printf("    %s%s\n", !rc ? "available" : rc == -ENOSYS ?
		       "not available: " : "probe FAILED: ", why);
	}
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	int e = 0;

	if (!f) {
		errmsg("%s: %s", path, strerror(errno));
		return NULL;
	}
	do {
		if (len + 65536 + 1 > cap) {
			char *nb = realloc(buf, cap = 2 * cap + 65536 + 1);

			if (!nb) {
				free(buf);
				fclose(f);
				errmsg("%s: out of memory", path);
				return NULL;
			}
			buf = nb;
		}
		errno = 0;
		n = fread(buf + len, 1, cap - len - 1, f);
		e = errno;
		len += n;
	} while (n > 0);
	buf[len] = 0;
	if (ferror(f) || memchr(buf, 0, len)) {
		/* say why: a directory is EISDIR */
		errmsg("%s: %s", path, !ferror(f) ? "not a text file" :
		       e ? strerror(e) : "read error");
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static struct json *load_report(const char *path, const char *text)
{
	char err[256];
	struct json *j = json_parse(text, err, sizeof(err));

	if (!j)
		errmsg("%s: not valid JSON: %s", path, err);
	return j;
}

/*
 * --baseline's sampler: one more round of this build for scenario id's
 * twin tw, every point once on the run's clock, the mean log time.
 */
static int baseline_round(void *arg, const char *id, unsigned tw,
			  const struct json *const *pts, unsigned n, double *x)
{
	const struct perf_opts *o = arg;
	const struct perf_scenario *sc = perf_scenario_find(id);
	char err[256];
	double sum = 0;

	if (!sc || !sc->setup || n == 0)
		return -ENOENT;
	for (unsigned i = 0; i < n; i++) {
		const struct json *v = json_get(pts[i], "variant");
		struct perf_job j = { .param = json_u64(json_get(pts[i],
							"param")),
				      .scale = o->scale, .where = PERF_TIME,
				      .naive = tw ? 0 : 1u << sc->path };
		double t;
		unsigned k = 0;

		while (k < sc->nvariants && v && v->type == JSON_STRING &&
		       strcmp(sc->variants[k], v->str))
			k++;
		if (sc->nvariants && k == sc->nvariants)
			return -ENOENT;
		j.variant = k;
		if (perf_sample_clock(sc, &j, NULL, &t, 0, o->clock, err,
				      sizeof(err)) || !(t > 0)) {
			errmsg("%s", err);
			return -EIO;
		}
		sum += log(t);
	}
	*x = sum / n;
	return 0;
}

static int compare(const char *oldp, const char *newp, const char *newtext,
		   const struct perf_cmp_opts *co, const struct perf_more *more)
{
	char *ot = slurp(oldp), *nt = newtext ? NULL : slurp(newp);
	struct json *o = NULL, *n = NULL;
	char err[256];
	int rc = EXIT_USAGE;

	if (!ot || (!newtext && !nt))
		goto out;
	o = load_report(oldp, ot);
	n = o ? load_report(newp, newtext ? newtext : nt) : NULL;
	if (!o || !n)
		goto out;
	printf("A/B: %s (old) against %s (new)\n", oldp, newp);
	rc = perf_compare_reports(stdout, o, n, co, more, err, sizeof(err));
	if (rc < 0) {
		errmsg("%s", err);
		rc = EXIT_USAGE;
	} else {
		printf("A/B: %d scenario%s regressed\n", rc, rc == 1 ? "" : "s");
		rc = rc ? EXIT_CHECK : 0;
	}
out:
	json_free(o);
	json_free(n);
	free(ot);
	free(nt);
	return rc;
}

struct args {
	struct perf_opts o;
	const char *json, *svg, *baseline, *cmp_old, *cmp_new;
	const char *ab, *sample;
	char ab_plant[48];
	const struct perf_scenario *sel[16];
	unsigned nsel;
	double min_effect;       /* percent                               */
	double budget;           /* seconds per scenario (A/B)            */
	unsigned calibrate;      /* --calibrate K                         */
	int list, no_pin, clock_set;
};

static int missing(const char *opt)
{
	errmsg("%s needs an argument", opt);
	return EXIT_USAGE;
}

static int bad_plant(const char *opt)
{
	errmsg("%s takes SCENARIO=PCT (e.g. 000=5), a known scenario "
	       "and 0 < PCT <= 1000", opt);
	return EXIT_USAGE;
}

/* The options without a value: 1 if s is one of them (taken). */
static int flag_option(struct args *a, const char *s)
{
	if (!strcmp(s, "--quick"))
		a->o.scale = PERF_QUICK;
	else if (!strcmp(s, "--full"))
		a->o.scale = PERF_FULL;
	else if (!strcmp(s, "--list"))
		a->list = 1;
	else if (!strcmp(s, "-q"))
		a->o.quiet = 1;
	else if (!strcmp(s, "--no-pin"))
		a->no_pin = 1;
	else if (!strcmp(s, "--counters-only"))
		a->o.counters_only = 1;
	else if (!strcmp(s, "--time-only"))
		a->o.time_only = 1;
	else
		return 0;
	return 1;
}

/*
 * The options that set how scenarios are measured (a number or a word
 * each; val is the next argument, NULL at the end): -1 if s is none of
 * them, else 0 (*i past a value taken) or EXIT_USAGE (said why).
 */
static int measure_option(struct args *a, const char *s, const char *val,
			  int *i)
{
	uint64_t v;
	char *end;

	if (!strcmp(s, "--clock")) {
		if (!val || (strcmp(val, "wall") && strcmp(val, "cpu"))) {
			errmsg("--clock takes wall or cpu");
			return EXIT_USAGE;
		}
		a->o.clock = val[0] == 'c' ? PERF_CLOCK_CPU : PERF_CLOCK_WALL;
		a->clock_set = 1;
		(*i)++;
	} else if (!strcmp(s, "--sample-reps")) {
		if (!val || hw_parse_size(val, &v) || v < 1 || v > 100) {
			errmsg("--sample-reps needs a number from 1 to 100");
			return EXIT_USAGE;
		}
		a->o.sample_reps = (unsigned)v;
		(*i)++;
	} else if (!strcmp(s, "--calibrate")) {
		a->calibrate = 10;
		if (val && hw_parse_size(val, &v) == 0) {
			if (v < 1 || v > 1000) {
				errmsg("--calibrate takes K from 1 to 1000");
				return EXIT_USAGE;
			}
			a->calibrate = (unsigned)v;
			(*i)++;
		}
	} else if (!strcmp(s, "--budget")) {
		a->budget = val ? strtod(val, &end) : -1;
		if (!val || *end || !(a->budget >= 1) || a->budget > 86400) {
			errmsg("--budget needs seconds, 1 to 86400");
			return EXIT_USAGE;
		}
		(*i)++;
	} else if (!strcmp(s, "--repeats") || !strcmp(s, "--warmup") ||
		   !strcmp(s, "--seed")) {
		if (!val || hw_parse_size(val, &v) || (s[2] == 'r' &&
		    (v < 1 || v > 10000)) || (s[2] == 'w' && v > 100)) {
			errmsg("%s needs a number%s", s, s[2] == 'r' ?
			       " from 1 to 10000" : s[2] == 'w' ?
			       " up to 100" : "");
			return EXIT_USAGE;
		}
		if (s[2] == 'r')
			a->o.repeats = (unsigned)v;
		else if (s[2] == 'w')
			a->o.warmup = (unsigned)v;
		else
			a->o.seed = v ? v : DEFAULT_SEED;
		(*i)++;
	} else if (!strcmp(s, "--min-effect")) {
		a->min_effect = val ? strtod(val, &end) : -1;
		if (!val || *end || !(a->min_effect > 0) ||
		    a->min_effect > 100) {
			errmsg("--min-effect needs a percentage");
			return EXIT_USAGE;
		}
		(*i)++;
	} else {
		return -1;
	}
	return 0;
}

/* --plant SCENARIO=PCT: 0 or EXIT_USAGE. */
/* SCENARIO=PCT: a known scenario into id, 0 < PCT <= 1000 into *pct. */
static bool plant_spec(const char *val, char *id, size_t idlen, double *pct)
{
	const char *eq = val ? strchr(val, '=') : NULL;
	char *end;

	if (!eq || eq == val || (size_t)(eq - val) >= idlen)
		return false;
	memcpy(id, val, (size_t)(eq - val));
	id[eq - val] = 0;
	*pct = strtod(eq + 1, &end);
	return !*end && *pct > 0 && *pct <= 1000 && perf_scenario_find(id);
}

static int plant_option(struct args *a, const char *val)
{
	static char id[32];

	if (!plant_spec(val, id, sizeof(id), &a->o.plant_pct))
		return bad_plant("--plant");
	a->o.plant_id = id;
	return 0;
}

/*
 * The options that name files, builds and plants: -1 if argv[*i] is
 * none of them, else 0 (*i past the values taken) or EXIT_USAGE (said
 * why).
 */
static int run_option(struct args *a, int argc, char **argv, int *i)
{
	const char *s = argv[*i];
	const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;

	if (!strcmp(s, "--json") || !strcmp(s, "--save") ||
	    !strcmp(s, "--svg") || !strcmp(s, "--baseline")) {
		if (!val)
			return missing(s);
		if (!strcmp(s, "--json") || !strcmp(s, "--save"))
			a->json = val;
		else if (!strcmp(s, "--svg"))
			a->svg = val;
		else
			a->baseline = val;
	} else if (!strcmp(s, "--ab") || !strcmp(s, "--sample")) {
		if (!val)
			return missing(s);
		if (s[2] == 'a')
			a->ab = val;
		else
			a->sample = val;
	} else if (!strcmp(s, "--ab-plant")) {
		char id[32];
		double pct;

		if (!val || strlen(val) >= sizeof(a->ab_plant) ||
		    strchr(val, '\'') || !plant_spec(val, id, sizeof(id), &pct))
			return bad_plant("--ab-plant");
		snprintf(a->ab_plant, sizeof(a->ab_plant), "%s", val);
	} else if (!strcmp(s, "--compare")) {
		if (*i + 2 >= argc)
			return missing(s);
		a->cmp_old = argv[++*i];
		a->cmp_new = argv[*i + 1];
	} else if (!strcmp(s, "--plant")) {
		if (plant_option(a, val))
			return EXIT_USAGE;
	} else {
		return -1;
	}
	(*i)++;
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	a->o.warmup = 1;
	a->o.seed = DEFAULT_SEED;
	a->min_effect = 5;
	a->budget = 60;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		int ret;

		if (flag_option(a, s))
			continue;
		ret = measure_option(a, s, i + 1 < argc ? argv[i + 1] : NULL,
				     &i);
		if (ret < 0)
			ret = run_option(a, argc, argv, &i);
		if (ret > 0)
			return ret;
		if (ret == 0)
			continue;
		if (s[0] == '-') {
			errmsg("unknown option '%s' (see --help)", s);
			return EXIT_USAGE;
		} else {
			const struct perf_scenario *sc = perf_scenario_find(s);

			if (!sc) {
				errmsg("unknown scenario '%s' (see --list)", s);
				return EXIT_USAGE;
			}
			if (a->nsel < sizeof(a->sel) / sizeof(a->sel[0]))
				a->sel[a->nsel++] = sc;
		}
	}
	if (a->o.counters_only && a->o.time_only) {
		errmsg("--counters-only and --time-only exclude each other");
		return EXIT_USAGE;
	}
	if ((a->json || a->baseline || a->cmp_old) && !json_available()) {
		errmsg("%s: this build has no JSON library (built without "
		       "external libraries, as the MSan build is)", a->json ?
		       "--json" : a->baseline ? "--baseline" : "--compare");
		return EXIT_USAGE;
	}
	return 0;
}

/* Scenarios the engine can run (a probe failure counts as one). */
static unsigned runnable(const struct perf_scenario *const *sel, unsigned n)
{
	unsigned k = 0;

	for (unsigned s = 0; s < n; s++) {
		char why[256];
		int rc = sel[s]->probe ? sel[s]->probe(why, sizeof(why)) : 0;

		k += rc != -ENOSYS && sel[s]->setup;
	}
	return k;
}

/*
 * The A/B settings both --ab and --calibrate start from: the scenarios
 * (sel, nsel), the number of comparisons the 5% is split over.
 */
static int ab_setup(const struct args *a, struct perf_ab_opts *ab,
		    char *self, size_t len,
		    const struct perf_scenario *const **sel, unsigned *nsel,
		    unsigned *ncomp)
{
	*nsel = a->nsel ? a->nsel : perf_nscenarios;
	*sel = a->nsel ? a->sel : perf_scenarios;
	*ncomp = 2 * runnable(*sel, *nsel);
	if (perf_ab_self(self, len) || (a->ab && strchr(a->ab, '\''))) {
		errmsg("cannot name the two binaries for the children");
		return EXIT_USAGE;
	}
	memset(ab, 0, sizeof(*ab));
	ab->bin[0] = ab->bin[1] = self;
	ab->warm = a->o.warmup;
	ab->budget = a->budget;
	ab->min_effect = a->min_effect / 100;
	ab->alpha = 0.05 / (*ncomp ? *ncomp : 1);
	ab->scale = a->o.scale;
	ab->clock = a->clock_set ? a->o.clock : PERF_CLOCK_CPU;
	ab->reps = a->o.sample_reps ? a->o.sample_reps : 3;
	ab->quiet = a->o.quiet;
	return 0;
}

static void pin_line(const struct args *a)
{
	char what[128];

	if (a->no_pin)
		return;
	perf_pin_cpu(what, sizeof(what));
	printf("%s\n", what);
}

static void correction_line(const struct perf_ab_opts *ab, unsigned ncomp)
{
	printf("false alarms: at most 5%% over the whole run, Bonferroni over "
	       "%u comparison%s (scenario x twin) and %u looks each, look k "
	       "spending k^-1.5 of it: intervals at level 1 - %.2g (10 "
	       "rounds), 1 - %.2g (14), 1 - %.2g (20), ...; budget %.0f s "
	       "per scenario, min effect ±%.3g%%\n", ncomp,
	       ncomp == 1 ? "" : "s", PERF_SEQ_LOOKS,
	       ab->alpha * perf_seq_look_share(0, 0),
	       ab->alpha * perf_seq_look_share(1, 0),
	       ab->alpha * perf_seq_look_share(2, 0), ab->budget,
	       100 * ab->min_effect);
}

static const char *scenario_word(const struct perf_ab_result *r)
{
	int same = 1, faster = 0, slower = 0;

	for (unsigned tw = 0; tw < 2; tw++) {
		same &= r->state[tw] == PERF_SEQ_SAME;
		faster |= r->state[tw] == PERF_SEQ_FASTER;
		slower |= r->state[tw] == PERF_SEQ_SLOWER;
	}
	return r->failed ? "FAILED (a child did not run)" :
	       r->more ? "REGRESSED (more work)" :
	       slower ? "REGRESSED (slower)" : faster ? "faster" :
	       same ? "no change" : "inconclusive";
}

/*
 * --ab: this build (A) against another (B), every sample a child process,
 * sequential per scenario twin (cmd_perf_ab.c).  The 5% false-alarm
 * budget is split over every comparison of the run (two per scenario).
 */
static int ab_run(const struct args *a)
{
	char self[4096];
	struct perf_ab_opts ab;
	const struct perf_scenario *const *sel;
	unsigned nsel, ncomp, regressed = 0;
	int rc = ab_setup(a, &ab, self, sizeof(self), &sel, &nsel, &ncomp);

	if (rc)
		return rc;
	ab.bin[1] = a->ab;
	snprintf(ab.plant, sizeof(ab.plant), "%s", a->ab_plant);
	ab.out = stdout;
	printf("A/B: A = %s, B = %s%s%s; sequential, A B / B A alternating\n",
	       self, a->ab, a->ab_plant[0] ? " --plant " : "", a->ab_plant);
	pin_line(a);
	correction_line(&ab, ncomp);
	for (unsigned s = 0; s < nsel; s++) {
		const struct perf_scenario *sc = sel[s];
		struct perf_ab_result r;
		char why[256] = "no driver";
		int prc = sc->probe ? sc->probe(why, sizeof(why)) : 0;

		printf("%s %s:\n", sc->id, sc->name);
		if (prc && prc != -ENOSYS) {
			/* the engine's failure, not a missing path */
			printf("  => %s: FAILED (probe: %s)\n", sc->id, why);
			regressed++;
			continue;
		}
		if (prc || !sc->setup) {
			printf("  not available: %s\n", why);
			continue;
		}
		perf_ab_scenario(&ab, sc, &r);
		printf("  => %s: %s\n", sc->id, scenario_word(&r));
		regressed += r.failed || r.more ||
			     r.state[0] == PERF_SEQ_SLOWER ||
			     r.state[1] == PERF_SEQ_SLOWER;
	}
	printf("A/B: %u scenario%s regressed\n", regressed,
	       regressed == 1 ? "" : "s");
	return regressed ? EXIT_CHECK : 0;
}

/*
 * --calibrate K: per scenario, K A/A comparisons (this binary against
 * itself) and K with a planted 5% in B's optimized twin, each exactly as
 * --ab runs it.  A/A: both twins count toward the false-alarm rate;
 * planted: the optimized twin's "slower" is a detection (its naive twin,
 * unplanted, is one more A/A).
 */
static int calibrate(const struct args *a)
{
	char self[4096];
	struct perf_ab_opts ab;
	const struct perf_scenario *const *sel;
	unsigned nsel, ncomp, bad = 0;
	int rc = ab_setup(a, &ab, self, sizeof(self), &sel, &nsel, &ncomp);

	if (rc)
		return rc;
	printf("calibration: %u A/A and %u planted-%.3g%% comparisons per "
	       "scenario, this binary against itself\n", a->calibrate,
	       a->calibrate, a->min_effect);
	pin_line(a);
	correction_line(&ab, ncomp);
	printf("%-18s %-12s %-12s %-13s %-14s %s\n", "scenario",
	       "false alarms", "power", "inconclusive", "noise floor",
	       "mean time");
	for (unsigned s = 0; s < nsel; s++) {
		const struct perf_scenario *sc = sel[s];
		char why[256] = "no driver", name[32];
		int prc = sc->probe ? sc->probe(why, sizeof(why)) : 0;
		unsigned aa = 0, alarms = 0, found = 0, inc = 0, runs = 0;
		double secs = 0, noise = 0;

		if (prc || !sc->setup) {
			printf("%s %s: not available: %s\n", sc->id, sc->name,
			       why);
			bad += prc != -ENOSYS;
			continue;
		}
		for (unsigned k = 0; k < 2 * a->calibrate; k++) {
			struct perf_ab_result r;
			int planted = k % 2;

			ab.plant[0] = 0;
			if (planted)
				snprintf(ab.plant, sizeof(ab.plant), "%s=%g",
					 sc->id, a->min_effect);
			perf_ab_scenario(&ab, sc, &r);
			if (r.failed) {
				printf("%s %s: FAILED (a child did not run)\n",
				       sc->id, sc->name);
				bad++;
				break;
			}
			for (unsigned tw = 0; tw < 2; tw++) {
				int is_aa = !(planted && tw == 1);

				aa += is_aa;
				alarms += is_aa && (r.state[tw] ==
					PERF_SEQ_SLOWER || r.state[tw] ==
					PERF_SEQ_FASTER);
				found += !is_aa && r.state[tw] ==
					 PERF_SEQ_SLOWER;
				inc += r.state[tw] == PERF_SEQ_INCONCLUSIVE;
				secs += r.secs[tw];
				noise += r.noise[tw];
			}
			runs++;
			if (!a->o.quiet)
				fprintf(stderr, "calibrate %s: %u of %u done\n",
					sc->id, runs, 2 * a->calibrate);
		}
		if (runs == 0)
			continue;
		snprintf(name, sizeof(name), "%s %s", sc->id, sc->name);
		printf("%-18s %3u/%-3u %3.0f%% %3u/%-3u %3.0f%% %4u/%-4u "
		       "±%4.1f%%/round   %.1f s\n", name, alarms, aa,
		       100.0 * alarms / aa, found, runs / 2,
		       runs / 2 ? 100.0 * found / (runs / 2) : 0, inc,
		       2 * runs, 100 * noise / (2 * runs),
		       secs / (2 * runs));
	}
	return bad ? EXIT_CHECK : 0;
}

/* --json and --svg: the run's reports.  0, or EXIT_IO (said why). */
static int write_reports(const struct args *a, const struct perf_result *res,
			 unsigned n)
{
	int rc = 0;

	if (a->json) {
		FILE *f = fopen(a->json, "w");

		if (!f || perf_write_json(f, &a->o, res, n) || fclose(f)) {
			errmsg("%s: cannot write: %s", a->json, strerror(errno));
			rc = EXIT_IO;
		}
	}
	if (a->svg) {
		char err[512];

		if (perf_write_svgs(a->svg, res, n, err, sizeof(err))) {
			errmsg("%s", err);
			rc = EXIT_IO;
		}
	}
	return rc;
}

/*
 * --baseline: this run, as its JSON, compared with the saved one (more
 * rounds of this build while undecided).  rc as it was, unless the
 * comparison fails it first (or memory runs out: EXIT_CHECK).
 */
static int against_baseline(struct args *a, const struct perf_result *res,
			    unsigned n, const struct perf_cmp_opts *co, int rc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	int crc;

	if (!m || perf_write_json(m, &a->o, res, n) || fclose(m)) {
		errmsg("out of memory");
		rc = EXIT_CHECK;
	} else {
		printf("\n");
		struct perf_more more = { baseline_round, &a->o,
					  a->budget / 2 };

		crc = compare(a->baseline, "this run", text, co, &more);
		if (crc && !rc)
			rc = crc;
	}
	free(text);
	return rc;
}

/*
 * --json, --svg and --baseline, before a run that can take minutes: the
 * reports must be writable and the baseline a JSON report, or the run's
 * results were lost at its end.  0, or the exit status (said why).
 */
static int check_outputs(const struct args *a)
{
	struct stat st;

	if (a->json && !path_writable(a->json)) {
		errmsg("%s: cannot write: %s", a->json, strerror(errno));
		return EXIT_IO;
	}
	if (a->svg && (stat(a->svg, &st) ? mkdir(a->svg, 0777) :
		       !S_ISDIR(st.st_mode) ? (errno = ENOTDIR, -1) : 0)) {
		errmsg("%s: %s", a->svg, strerror(errno));
		return EXIT_IO;
	}
	if (a->baseline) {
		char *text = slurp(a->baseline);
		struct json *j = text ? load_report(a->baseline, text) : NULL;

		free(text);
		if (!j)
			return EXIT_USAGE;
		json_free(j);
	}
	return 0;
}

int cmd_perf(int argc, char **argv)
{
	struct args a;
	struct perf_result *res;
	struct perf_cmp_opts co;
	unsigned n, bad = 0;
	int rc;

	prog_cmd = "fsoracle perf";
	if (wants_help(argc, argv)) {
		fputs(usage_text, stdout);
		return 0;
	}
	memset(&a, 0, sizeof(a));
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	co = (struct perf_cmp_opts){ .min_effect = a.min_effect / 100,
				     .seed = a.o.seed };
	if (a.list) {
		list_scenarios();
		return 0;
	}
	if (a.cmp_old)
		return compare(a.cmp_old, a.cmp_new, NULL, &co, NULL);
	perf_hold_memory();    /* before the engine allocates anything */
	if (a.sample)
		return perf_ab_sample(a.sample, &a.o);
	if (a.calibrate)
		return calibrate(&a);
	if (a.ab)
		return ab_run(&a);
	rc = check_outputs(&a);
	if (rc)
		return rc;
	if (a.nsel == 0)
		for (unsigned i = 0; i < perf_nscenarios; i++)
			a.sel[a.nsel++] = perf_scenarios[i];
	n = a.nsel;
	res = calloc(n, sizeof(*res));
	if (!res) {
		errmsg("out of memory");
		return EXIT_CHECK;
	}
	for (unsigned i = 0; i < n; i++) {
		perf_run(a.sel[i], &a.o, &res[i], stderr);
		bad += res[i].status == PERF_ERROR || res[i].seed_mismatches ||
		       res[i].less_work_failures;
	}
	perf_print_table(stdout, res, n);
	rc = bad ? EXIT_CHECK : 0;
	if (write_reports(&a, res, n))
		rc = EXIT_IO;
	if (a.baseline)
		rc = against_baseline(&a, res, n, &co, rc);
	for (unsigned i = 0; i < n; i++)
		perf_result_free(&res[i]);
	free(res);
	return rc;
}
