/*
 * cmd_prop.c - `fsoracle prop`: run the property suites (props/), list
 * them, or benchmark the engine.  One run seed serves every property, so
 * `--seed S` repeats a whole run, and a failure's trial seed given as
 * `--seed` reproduces that failure in its property's first trial.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/rng.h"
#include "harness/runopts.h"
#include "props/props.h"
#include "tools/cmds.h"
#include "tools/common.h"

#define DEFAULT_DB ".fsoracle-props"

static const char usage_text[] =
"usage: fsoracle prop [SUITE|PROPERTY...] [OPTIONS]\n"
"\n"
"Run property tests: each property runs on generated arguments (integers,\n"
"byte buffers, op sequences, state-machine steps); the first failure is\n"
"shrunk to a minimal counterexample and printed with its trial seed (op\n"
"sequences as a text op log `fsoracle replay` takes as is).  Without\n"
"names every suite runs except the planted ones (`planted`, the engine's\n"
"self-test, and `zoned_planted`: their properties must fail, and they run\n"
"only when named).  A name is a suite or a single property.\n"
"\n"
"Options:\n"
"  --trials N      random trials per property (default: the property's,\n"
"                  usually 100)\n"
"  --seed S        the run seed (decimal or 0x hex; default: from the\n"
"                  clock, printed); a failure's trial seed reproduces it\n"
"  --fork          run every trial in a child process (crashes and hangs\n"
"                  become failures that shrink)\n"
"  --db DIR        where failing seeds are kept and replayed first next\n"
"                  time (default " DEFAULT_DB ")\n"
"  --no-db         keep no seeds\n"
"  --logs DIR      write each failure's counterexample, when it is an op\n"
"                  sequence, as DIR/PROPERTY.ops (the op log printed),\n"
"                  for `fsoracle replay` and `fsoracle minimize`\n"
"  --progress      a character per trial: . pass, d duplicate, s skip, F fail\n"
"  -q              only failures and the summary\n"
"  --list          list suites and properties, and what each must hold\n"
"  --bench         measure trials/s and shrink times (see README)\n"
"\n"
"Exit status: 0 every property held (known engine bugs, listed with\n"
"--list, are reported but do not fail the run; planted properties must\n"
"fail); 1 a property failed; 2 bad usage or an unknown name.\n";

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

static void list_all(void)
{
	for (size_t i = 0; i < props_nsuites; i++) {
		const struct props_suite *s = props_suites[i];

		printf("%s: %s%s\n", s->name, s->doc,
		       s->planted ? " [runs only when named]" : "");
		for (size_t j = 0; j < s->nprops; j++) {
			printf("  %-44s %s\n", s->props[j].name, s->props[j].doc);
			if (s->props[j].known_bug)
				printf("  %-44s known bug: %s\n", "",
				       s->props[j].known_bug);
		}
	}
}

/* The properties to run, in the order they were named, each once. */
struct selection {
	const struct props_prop *p[256];
	const struct props_suite *s[256];
	size_t n;
};

static int select_add(struct selection *sel, const struct props_suite *s,
		      const struct props_prop *p)
{
	for (size_t i = 0; i < sel->n; i++)
		if (sel->p[i] == p)
			return 0;
	if (sel->n == sizeof(sel->p) / sizeof(sel->p[0]))
		return -ENOSPC;
	sel->s[sel->n] = s;
	sel->p[sel->n++] = p;
	return 0;
}

static int select_name(struct selection *sel, const char *name)
{
	const struct props_suite *s = props_suite_find(name);
	const struct props_prop *p;

	if (s) {
		for (size_t j = 0; j < s->nprops; j++)
			if (select_add(sel, s, &s->props[j]))
				return -ENOSPC;
		return 0;
	}
	p = props_prop_find(name, &s);
	if (!p)
		return -ENOENT;
	return select_add(sel, s, p);
}

struct tally {
	unsigned passed, failed, skipped, known, fixed, planted_ok;
	const char *logs;          /* --logs DIR, or NULL */
};

/* The counterexample's op log into DIR/PROPERTY.ops (--logs). */
static void write_log(const char *dir, const struct props_prop *p,
		      const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.ops", dir, p->name);
	f = fopen(path, "w");
	if (f) {
		int bad = fputs(text, f) == EOF;

		if (fclose(f) || bad)
			f = NULL;
	}
	if (!f) {
		errmsg("%s: %s", path, strerror(errno));
		return;
	}
	printf("  op log: %s (fsoracle replay %s)\n", path, path);
}

static void run_one(const struct props_suite *s, const struct props_prop *p,
		    const struct props_override *o, struct tally *t)
{
	struct props_override po = *o;
	struct props_report rep;
	int r;

	/* a planted failure is no news to remember */
	if (s->planted)
		po.db = NULL;
	r = props_prop_run(p, &po, &rep);
	if (r == PROPS_FAIL && t->logs && rep.cex_log)
		write_log(t->logs, p, rep.cex_log);
	if (s->planted) {
		if (r == PROPS_FAIL) {
			t->planted_ok++;
			if (!o->terse)
				printf("prop %s: failed, as a planted bug must\n",
				       p->name);
		} else {
			t->failed++;
			printf("prop %s: planted bug NOT found (%s)\n", p->name,
			       props_result_name(r));
		}
	} else if (r == PROPS_PASS) {
		t->passed++;
		if (p->known_bug) {
			t->fixed++;
			printf("prop %s: passes now; if this is fixed, drop its "
			       "known_bug: %s\n", p->name, p->known_bug);
		}
	} else if (r == PROPS_SKIP) {
		t->skipped++;
	} else if (r == PROPS_FAIL && p->known_bug) {
		t->known++;
		printf("prop %s: known bug: %s\n", p->name, p->known_bug);
	} else {
		t->failed++;
		if (r != PROPS_FAIL)
			printf("prop %s: %s\n", p->name, props_result_name(r));
	}
	props_report_free(&rep);
}

/*
 * prop's command line: the options into o, list and bench, --logs into
 * the tally, the names into sel.  0 or EXIT_USAGE (said why).
 */
static int prop_args(int argc, char **argv, struct props_override *o,
		     struct selection *sel, struct tally *tally, int *list,
		     int *bench)
{
	const char *v;
	int bad = 0;

	for (int i = 1; i < argc; i++) {
		uint64_t n;

		if ((v = runopts_value("--trials", argc, argv, &i, &bad))) {
			if (parse_u64(v, &n) || n == 0 || n > UINT32_MAX) {
				errmsg("--trials: bad count '%s'", v);
				return EXIT_USAGE;
			}
			o->trials = (uint32_t)n;
		} else if ((v = runopts_value("--seed", argc, argv, &i, &bad))) {
			if (parse_u64(v, &o->seed)) {
				errmsg("--seed: bad number '%s'", v);
				return EXIT_USAGE;
			}
			o->have_seed = 1;
		} else if ((v = runopts_value("--db", argc, argv, &i, &bad))) {
			o->db = v;
		} else if ((v = runopts_value("--logs", argc, argv, &i, &bad))) {
			tally->logs = v;
		} else if (bad) {
			errmsg("%s needs a value", argv[i]);
			return EXIT_USAGE;
		} else if (!strcmp(argv[i], "--no-db")) {
			o->db = NULL;
		} else if (!strcmp(argv[i], "--fork")) {
			o->fork = 1;
		} else if (!strcmp(argv[i], "--progress")) {
			o->progress = 1;
		} else if (!strcmp(argv[i], "-q")) {
			o->terse = 1;
		} else if (!strcmp(argv[i], "--list")) {
			*list = 1;
		} else if (!strcmp(argv[i], "--bench")) {
			*bench = 1;
		} else if (argv[i][0] == '-') {
			errmsg("unknown option '%s' (see --help)", argv[i]);
			return EXIT_USAGE;
		} else {
			int r = select_name(sel, argv[i]);

			if (r == -ENOENT) {
				errmsg("no suite or property '%s' (see --list)",
				       argv[i]);
				return EXIT_USAGE;
			}
			if (r) {
				errmsg("too many properties selected");
				return EXIT_USAGE;
			}
		}
	}
	return 0;
}

/* No --seed: one from the clock and the process id. */
static uint64_t clock_seed(void)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
	    (uint64_t)getpid();
	return rng_splitmix64(&x);
}

/* The last line: what passed, failed, was skipped, known and planted. */
static void print_tally(const struct tally *tally)
{
	printf("props: %u passed, %u failed, %u skipped", tally->passed,
	       tally->failed, tally->skipped);
	if (tally->known)
		printf(", %u known bugs", tally->known);
	if (tally->planted_ok)
		printf(", %u planted failures found", tally->planted_ok);
	printf("\n");
}

int cmd_prop(int argc, char **argv)
{
	struct props_override o = { .db = DEFAULT_DB };
	struct selection sel = { .n = 0 };
	struct tally tally = { 0 };
	int list = 0, bench = 0, rc;

	prog_cmd = "fsoracle prop";
	if (wants_help(argc, argv)) {
		fputs(usage_text, stdout);
		return 0;
	}
	rc = prop_args(argc, argv, &o, &sel, &tally, &list, &bench);
	if (rc)
		return rc;
	if (list) {
		list_all();
		return 0;
	}
	if (bench)
		return props_bench(stdout) ? EXIT_CHECK : 0;
	if (sel.n == 0)
		for (size_t i = 0; i < props_nsuites; i++)
			if (!props_suites[i]->planted)
				select_name(&sel, props_suites[i]->name);
	if (!o.have_seed) {
		o.seed = clock_seed();
		o.have_seed = 1;
	}
	printf("fsoracle prop: run seed 0x%016" PRIx64 " (--seed repeats "
	       "this run)\n", o.seed);
	fflush(stdout);
	for (size_t i = 0; i < sel.n; i++)
		run_one(sel.s[i], sel.p[i], &o, &tally);
	print_tally(&tally);
	return tally.failed ? EXIT_CHECK : 0;
}
