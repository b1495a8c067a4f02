/*
 * bench.c - how fast the property engine is (`fsoracle prop --bench`):
 * trials per second for a cheap property and for the differential
 * op-sequence property, and how long shrinking the planted failures
 * takes.  A measurement, not a test: nothing here fails on a slow
 * machine; it fails only if a planted bug is not found or not shrunk to
 * its known minimum.
 */
#include "props/props.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct props_int_env any = { 0, UINT64_MAX };
static const struct props_type any_int = PROPS_INT_TYPE(&any);

static int or_covers_and(struct props_trial *t, void *a, void *b)
{
	uint64_t x = *(uint64_t *)a, y = *(uint64_t *)b;

	(void)t;
	return (x | y) >= (x & y) ? PROPS_PASS : PROPS_FAIL;
}

/* Ops per trial of the differential property, counted by a hook. */
static uint64_t ops_seen;
static props_hook_fn chained_post;

static int count_ops(const struct props_info *info, void *env)
{
	if (info->args && !info->repeat)
		ops_seen += ((const struct op_seq *)info->args[0])->n;
	return chained_post ? chained_post(info, env) : PROPS_HOOK_CONTINUE;
}

static int bench_trials(FILE *out, const char *what, struct props_cfg *cfg,
			int count)
{
	struct props_report rep;
	double t0, dt;
	int r;

	ops_seen = 0;
	if (count && cfg->hooks.trial_post != count_ops) {
		chained_post = cfg->hooks.trial_post;
		cfg->hooks.trial_post = count_ops;
	}
	t0 = now_s();
	r = props_run(cfg, &rep);
	dt = now_s() - t0;
	fprintf(out, "  %-44s %7" PRIu32 " trials %7.2f s %10.0f trials/s",
		what, rep.trials, dt, rep.trials / (dt > 0 ? dt : 1e-9));
	if (count && rep.pass)
		fprintf(out, " (%.1f ops each)", (double)ops_seen / rep.pass);
	fputc('\n', out);
	props_report_free(&rep);
	return r == PROPS_PASS ? 0 : -1;
}

/* Op lines of a printed op-log argument (no comments, no `file`). */
static unsigned op_lines(const char *cex)
{
	const char *p = cex ? strstr(cex, "(ops):\n") : NULL;
	unsigned n = 0;

	for (p = p ? strchr(p, '\n') + 1 : NULL; p && !strncmp(p, "    ", 4);
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		n += p[4] != '#' && strncmp(p + 4, "file ", 5);
	return n;
}

/* A planted failure: found, shrunk, how long, to what. */
static int bench_shrink(FILE *out, const char *name, const char *want)
{
	const struct props_prop *p = props_prop_find(name, NULL);
	struct props_report rep;
	struct props_cfg cfg;
	int r, ok;

	if (!p)
		return -1;
	cfg = p->cfg;
	cfg.name = p->name;
	cfg.seed = 1;
	cfg.quiet = 1;
	r = props_run(&cfg, &rep);
	ok = r == PROPS_FAIL && rep.cex && strstr(rep.cex, want);
	if (ok && !strcmp(want, "(ops):"))
		ok = op_lines(rep.cex) <= 3;
	fprintf(out, "  %-30s %-6s found at trial %3" PRIu32 ", shrunk in "
		"%4" PRIu32 " runs %8.1f ms  %s\n", name,
		cfg.fork.enable ? "(fork)" : "", rep.fail_trial,
		rep.shrink_attempts, rep.shrink_ms,
		ok ? "minimal" : "NOT MINIMAL");
	props_report_free(&rep);
	return ok ? 0 : -1;
}

int props_bench(FILE *out)
{
	struct props_cfg cheap = { .name = "bench_or_and", .prop2 = or_covers_and,
				   .types = { &any_int, &any_int },
				   .trials = 200000, .seed = 1, .quiet = 1 };
	const struct props_prop *diff = props_prop_find("extmap_data_matches_model",
							NULL);
	struct props_cfg dcfg;
	int bad = 0;

	fprintf(out, "props bench: trials per second\n");
	bad |= bench_trials(out, "cheap: (a | b) >= (a & b), 2 ints", &cheap, 0);
	if (diff) {
		dcfg = diff->cfg;
		dcfg.name = diff->name;
		dcfg.trials = 2000;
		dcfg.seed = 1;
		dcfg.quiet = 1;
		bad |= bench_trials(out, "differential: extmap_data_matches_model",
				    &dcfg, 1);
		dcfg.fork.enable = 1;
		dcfg.trials = 500;
		bad |= bench_trials(out, "  the same, --fork", &dcfg, 1);
	}
	fprintf(out, "props bench: shrinking the planted failures (seed 1)\n");
	bad |= bench_shrink(out, "planted_int_below_1000", "arg 0 (int): 1000\n");
	bad |= bench_shrink(out, "planted_ops_trunc_tail", "(ops):");
	bad |= bench_shrink(out, "planted_segfault", "arg 0 (int): 1000\n");
	bad |= bench_shrink(out, "planted_hang", "arg 0 (int): 1000\n");
	return bad ? -1 : 0;
}
