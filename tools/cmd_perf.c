/*
 * cmd_perf.c - `fsoracle perf`: the performance oracle (perf/).  Runs the
 * seed scenarios naive against optimized, prints the table, writes JSON
 * and SVG, and compares saved runs (A/B).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf/perf.h"
#include "tools/cmds.h"
#include "tools/common.h"

#define DEFAULT_SEED 0x5eedu
#define PERF_AB_MAX  1000   /* pairs kept per point and twin in --ab */

static const char usage_text[] =
"usage: fsoracle perf [SCENARIO...] [--quick|--full] [--json FILE]\n"
"                     [--svg DIR] [--repeats N] [--baseline FILE]\n"
"       fsoracle perf --compare OLD.json NEW.json\n"
"       fsoracle perf --ab OTHER-FSORACLE [SCENARIO...] [--ab-plant ID=PCT]\n"
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
"  --baseline FILE  after the run, compare it with a saved one (A/B)\n"
"  --compare OLD NEW  compare two saved runs, run nothing (runs made\n"
"                   at different times: drift on a busy machine counts)\n"
"  --ab BIN         A/B of two builds side by side: every timed sample\n"
"                   runs in a child, this binary and BIN alternating\n"
"                   (A B, B A, ...); exact counters must agree, times\n"
"                   get the paired sign test (alpha 5% per scenario)\n"
"  --ab-plant ID=PCT  give B the planted cost (validates the verdict)\n"
"  --min-effect PCT smallest time change a comparison reports (2)\n"
"  --plant ID=PCT   test knob: PCT%% extra wall time in scenario ID's\n"
"                   optimized twin (validates the A/B verdict)\n"
"  --seed S         bootstrap seed (results are deterministic given the\n"
"                   samples)\n"
"  -q               no progress lines\n"
"  --list           list the scenarios and what they run\n"
"\n"
"Exit status: 0 all good; 1 an optimized path did not do less work, a\n"
"seed figure differs, a scenario failed, or a comparison found a\n"
"regression; 2 bad usage or a file that is not a perf report.\n";

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
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	buf[len] = 0;
	if (ferror(f) || memchr(buf, 0, len)) {
		errmsg("%s: %s", path, ferror(f) ? "read error" :
		       "not a text file");
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

static int compare(const char *oldp, const char *newp, const char *newtext,
		   const struct perf_cmp_opts *co)
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
	rc = perf_compare_reports(stdout, o, n, co, err, sizeof(err));
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
	double min_effect;
	int list;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	const char *opt = "";
	uint64_t v;

	a->o.warmup = 1;
	a->o.seed = DEFAULT_SEED;
	a->min_effect = 2;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		opt = s;

		if (!strcmp(s, "--quick")) {
			a->o.scale = PERF_QUICK;
		} else if (!strcmp(s, "--full")) {
			a->o.scale = PERF_FULL;
		} else if (!strcmp(s, "--list")) {
			a->list = 1;
		} else if (!strcmp(s, "-q")) {
			a->o.quiet = 1;
		} else if (!strcmp(s, "--counters-only")) {
			a->o.counters_only = 1;
		} else if (!strcmp(s, "--time-only")) {
			a->o.time_only = 1;
		} else if (!strcmp(s, "--json") || !strcmp(s, "--save") ||
			   !strcmp(s, "--svg") || !strcmp(s, "--baseline")) {
			if (!val)
				goto missing;
			if (!strcmp(s, "--json") || !strcmp(s, "--save"))
				a->json = val;
			else if (!strcmp(s, "--svg"))
				a->svg = val;
			else
				a->baseline = val;
			i++;
		} else if (!strcmp(s, "--ab") || !strcmp(s, "--sample")) {
			if (!val)
				goto missing;
			if (s[2] == 'a')
				a->ab = val;
			else
				a->sample = val;
			i++;
		} else if (!strcmp(s, "--ab-plant")) {
			if (!val || strlen(val) >= sizeof(a->ab_plant) ||
			    !strchr(val, '=') || strchr(val, '\''))
				goto bad_plant;
			snprintf(a->ab_plant, sizeof(a->ab_plant), "%s", val);
			i++;
		} else if (!strcmp(s, "--compare")) {
			if (i + 2 >= argc)
				goto missing;
			a->cmp_old = argv[++i];
			a->cmp_new = argv[++i];
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
			i++;
		} else if (!strcmp(s, "--min-effect")) {
			char *end;

			a->min_effect = val ? strtod(val, &end) : -1;
			if (!val || *end || a->min_effect < 0 ||
			    a->min_effect > 100) {
				errmsg("--min-effect needs a percentage");
				return EXIT_USAGE;
			}
			i++;
		} else if (!strcmp(s, "--plant")) {
			static char id[32];
			const char *eq = val ? strchr(val, '=') : NULL;
			char *end;

			if (!eq || eq == val || (size_t)(eq - val) >= sizeof(id))
				goto bad_plant;
			memcpy(id, val, (size_t)(eq - val));
			id[eq - val] = 0;
			a->o.plant_pct = strtod(eq + 1, &end);
			if (*end || !(a->o.plant_pct > 0) ||
			    a->o.plant_pct > 1000 || !perf_scenario_find(id))
				goto bad_plant;
			a->o.plant_id = id;
			i++;
		} else if (s[0] == '-') {
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
missing:
	errmsg("%s needs an argument", opt);
	return EXIT_USAGE;
bad_plant:
	errmsg("--plant takes SCENARIO=PCT (e.g. 000=5), a known scenario "
	       "and 0 < PCT <= 1000");
	return EXIT_USAGE;
}

/*
 * --sample ID:VARIANT:PARAM:TWIN (the child side of --ab): one timed run
 * of one case at the timing scale; prints the seconds, then the counters
 * as "have v0 v1 ...".
 */
static int sample(const char *spec, const struct perf_opts *o)
{
	char id[16], err[256] = "";
	unsigned variant, twin;
	unsigned long long param;
	const struct perf_scenario *sc;
	struct perf_job j = { .where = PERF_TIME };
	struct perf_counts c;
	double secs, plant = 0;
	int rc;

	if (sscanf(spec, "%15[^:]:%u:%llu:%u", id, &variant, &param,
		   &twin) != 4 || !(sc = perf_scenario_find(id)) || twin > 1 ||
	    variant >= (sc->nvariants ? sc->nvariants : 1) || !sc->setup) {
		errmsg("--sample takes ID:VARIANT:PARAM:TWIN of a runnable "
		       "scenario");
		return EXIT_USAGE;
	}
	j.variant = variant;
	j.param = param;
	j.naive = twin ? 0 : 1u << sc->path;
	if (o->plant_id && twin == 1 && (!strcmp(o->plant_id, sc->id) ||
					 !strcmp(o->plant_id, sc->name)))
		plant = o->plant_pct;
	rc = perf_sample(sc, &j, &c, &secs, plant, err, sizeof(err));
	if (rc) {
		errmsg("%s", err);
		return EXIT_CHECK;
	}
	printf("%.9f %u", secs, c.have);
	for (unsigned i = 0; i < sc->ncounters; i++)
		printf(" %llu", (unsigned long long)c.v[i]);
	printf("\n");
	return 0;
}

/* Run one --sample child of bin; 0 and its output, or -1. */
static int child(const char *bin, const char *plant, const char *spec,
		 double *secs, struct perf_counts *c, unsigned ncounters)
{
	char cmd[8192];
	FILE *p;
	int ok;

	snprintf(cmd, sizeof(cmd), "'%s' perf --sample %s%s%s", bin, spec,
		 plant[0] ? " --plant " : "", plant);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	memset(c, 0, sizeof(*c));
	ok = fscanf(p, "%lf %u", secs, &c->have) == 2;
	for (unsigned i = 0; ok && i < ncounters; i++) {
		unsigned long long v;

		ok = fscanf(p, "%llu", &v) == 1;
		c->v[i] = v;
	}
	return pclose(p) == 0 && ok ? 0 : -1;
}

/* The two builds of an --ab run and how to run them. */
struct ab {
	const char *bin[2];      /* A (this binary), B                     */
	const char *plant[2];    /* --plant for each ("" = none)          */
	unsigned warm, keep;
	int quiet;
	struct perf_cmp_opts cmp;
};

static const char *verdict_word(enum perf_verdict v)
{
	return v == PERF_SLOWER ? "SLOWER" : v == PERF_FASTER ? "faster" :
	       "no significant change";
}

/*
 * One point and twin of an --ab run: warm + keep pairs, A first in even
 * pairs and B first in odd ones.  Sets *more if B's counters are higher,
 * returns the time verdict, or PERF_NO_DATA if a child failed.
 */
static enum perf_verdict ab_point(const struct ab *ab,
				  const struct perf_scenario *sc, unsigned v,
				  uint64_t param, unsigned tw, int *more)
{
	static double t[2][PERF_AB_MAX];
	struct perf_counts c[2];
	struct perf_cmp cmp;
	unsigned keep = ab->keep < PERF_AB_MAX ? ab->keep : PERF_AB_MAX;
	char spec[96], ps[32];
	const char *label = sc->nvariants > 1 ? sc->variants[v] : "";

	perf_format_param(sc, param, ps, sizeof(ps));
	snprintf(spec, sizeof(spec), "%s:%u:%llu:%u", sc->id, v,
		 (unsigned long long)param, tw);
	for (unsigned i = 0; i < ab->warm + keep; i++) {
		for (unsigned k = 0; k < 2; k++) {
			unsigned who = (i + k) % 2;
			double x;

			if (child(ab->bin[who], ab->plant[who], spec, &x,
				  &c[who], sc->ncounters)) {
				printf("  %s: a child of %s failed\n", spec,
				       ab->bin[who]);
				return PERF_NO_DATA;
			}
			if (i >= ab->warm)
				t[who][i - ab->warm] = x;
		}
		if (!ab->quiet)
			fprintf(stderr, "perf A/B %s %s=%s %s: pair %u of %u\r",
				sc->id, sc->param_name, ps,
				tw ? "optimized" : "naive", i + 1,
				ab->warm + keep);
	}
	if (memcmp(c[0].v, c[1].v, sizeof(c[0].v)) || c[0].have != c[1].have) {
		int up = 0;

		for (unsigned k = 0; k < sc->ncounters; k++)
			up |= c[1].v[k] > c[0].v[k];
		*more |= up;
		printf("  %s %s=%s %s: counters differ (B does %s work)\n",
		       label, sc->param_name, ps, tw ? "optimized" : "naive",
		       up ? "MORE" : "less");
	}
	perf_compare_paired(t[0], t[1], keep, &ab->cmp, &cmp);
	printf("  %s %s=%s %-9s B/A %.3f [%.3f %.3f]  p=%.2g  %s\n", label,
	       sc->param_name, ps, tw ? "optimized" : "naive", cmp.ratio,
	       cmp.lo, cmp.hi, cmp.p, verdict_word(cmp.verdict));
	return cmp.verdict;
}

/*
 * --ab: this build (A) against another (B), every sample a child process,
 * A and B alternating so both see the same machine.  Per scenario point
 * and twin: counters must agree exactly (else B does more or less work),
 * and B's times against A's get the paired sign test, alpha split over
 * the scenario's tests (Bonferroni), with the --min-effect floor.
 */
static int ab_run(const struct args *a, const struct perf_cmp_opts *co)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct ab ab = { { self, a->ab }, { "", a->ab_plant },
			 a->o.warmup, perf_repeats(&a->o), a->o.quiet, *co };
	unsigned nsel = a->nsel ? a->nsel : perf_nscenarios, regressed = 0;
	const struct perf_scenario *const *sel =
		a->nsel ? a->sel : perf_scenarios;
	enum perf_scale scale = a->o.scale;

	if (n <= 0 || memchr(self, '\'', (size_t)n) || strchr(a->ab, '\'')) {
		errmsg("cannot name the two binaries for the children");
		return EXIT_USAGE;
	}
	self[n] = 0;
	printf("A/B: A = %s, B = %s%s%s; %u pairs per point and twin, "
	       "alternating\n", self, a->ab, a->ab_plant[0] ? " --plant " : "",
	       a->ab_plant, ab.keep);
	for (unsigned s = 0; s < nsel; s++) {
		const struct perf_scenario *sc = sel[s];
		unsigned nv = sc->nvariants ? sc->nvariants : 1, tests = 0;
		int more = 0, slower = 0, faster = 0, failed = 0;
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
		for (unsigned p = 0; p < sc->nparams[scale]; p++)
			tests += 2 * nv * (!sc->time_max_param ||
				sc->params[scale][p] <= sc->time_max_param);
		ab.cmp.alpha = (co->alpha > 0 ? co->alpha : 0.05) /
			       (tests ? tests : 1);
		for (unsigned v = 0; v < nv && !failed; v++)
			for (unsigned p = 0; p < sc->nparams[scale]; p++) {
				uint64_t param = sc->params[scale][p];

				if (sc->time_max_param &&
				    param > sc->time_max_param)
					continue;
				for (unsigned tw = 0; tw < 2 && !failed; tw++) {
					enum perf_verdict vd = ab_point(&ab, sc,
						v, param, tw, &more);

					failed = vd == PERF_NO_DATA;
					slower |= vd == PERF_SLOWER;
					faster |= vd == PERF_FASTER;
				}
			}
		if (!a->o.quiet)
			fprintf(stderr, "\n");
		printf("  => %s: %s\n", sc->id,
		       failed ? "FAILED (a child did not run)" :
		       more ? "REGRESSED (more work)" :
		       slower ? "REGRESSED (slower beyond noise)" :
		       faster ? "faster" : "no significant change");
		regressed += failed || more || slower;
	}
	printf("A/B: %u scenario%s regressed\n", regressed,
	       regressed == 1 ? "" : "s");
	return regressed ? EXIT_CHECK : 0;
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
		return compare(a.cmp_old, a.cmp_new, NULL, &co);
	if (a.sample)
		return sample(a.sample, &a.o);
	if (a.ab)
		return ab_run(&a, &co);
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
	if (a.json) {
		FILE *f = fopen(a.json, "w");

		if (!f || perf_write_json(f, &a.o, res, n) || fclose(f)) {
			errmsg("%s: cannot write: %s", a.json, strerror(errno));
			rc = EXIT_IO;
		}
	}
	if (a.svg) {
		char err[512];

		if (perf_write_svgs(a.svg, res, n, err, sizeof(err))) {
			errmsg("%s", err);
			rc = EXIT_IO;
		}
	}
	if (a.baseline) {
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		int crc;

		if (!m || perf_write_json(m, &a.o, res, n) || fclose(m)) {
			errmsg("out of memory");
			rc = EXIT_CHECK;
		} else {
			printf("\n");
			crc = compare(a.baseline, "this run", text, &co);
			if (crc && !rc)
				rc = crc;
		}
		free(text);
	}
	for (unsigned i = 0; i < n; i++)
		perf_result_free(&res[i]);
	free(res);
	return rc;
}
