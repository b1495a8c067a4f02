/*
 * test_props.c - the property engine finds planted failures and shrinks
 * them to their known minimal counterexamples, deterministically, in
 * process and in forked children; duplicates and skips are counted,
 * hooks can halt and repeat, the seed database replays failures first,
 * and a counterexample's bytes replay it.
 *
 * Expectations are the planted bugs' known minima (suite_planted.c says
 * why each is minimal), never the engine's own earlier output, except
 * where the point is reproduction (same seed, same counterexample).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "props/props.h"
#include "tests/test.h"

/* Sanitizers make everything 3-10 times slower (forks under MSan take
 * most of a second here): the time limits are for release builds. */
#ifdef TEST_SANITIZED
#define TIME_SCALE 10
#else
#define TIME_SCALE 1
#endif

/* A planted property's cfg, quiet, with a seed. */
static int planted_cfg(const char *name, uint64_t seed, struct props_cfg *cfg)
{
	const struct props_prop *p = props_prop_find(name, NULL);

	if (!p)
		return -ENOENT;
	*cfg = p->cfg;
	cfg->name = p->name;
	cfg->seed = seed;
	cfg->quiet = 1;
	return 0;
}

/* The single integer argument of a counterexample, from its text. */
static long long cex_int(const struct props_report *rep)
{
	const char *p = rep->cex ? strstr(rep->cex, "arg 0 (int): ") : NULL;

	return p ? atoll(p + strlen("arg 0 (int): ")) : -1;
}

/* Ops in a printed op-sequence counterexample: indented lines but
 * comments and `file` directives. */
static int cex_ops(const struct props_report *rep)
{
	const char *p = rep->cex ? strstr(rep->cex, "arg 0 (ops):\n") : NULL;
	int n = 0;

	if (!p)
		return -1;
	p = strchr(p, '\n') + 1;
	while (!strncmp(p, "    ", 4)) {
		if (p[4] != '#' && strncmp(p + 4, "file ", 5))
			n++;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return n;
}

TEST(props_int_failure_shrinks_to_exactly_1000)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct props_cfg cfg;
		struct props_report rep;

		CHECK_OK(planted_cfg("planted_int_below_1000", seed, &cfg));
		CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
		CHECK_MSG(cex_int(&rep) == 1000, "seed %llu: shrunk to %lld",
			  (unsigned long long)seed, cex_int(&rep));
		CHECK(strstr(rep.cex, "1000 is not below 1000"));
		CHECK_EQ(rep.fail, 1);
		props_report_free(&rep);
	}
}

TEST(props_op_sequence_failure_shrinks_to_three_ops_within_a_second)
{
	for (uint64_t seed = 1; seed <= 5; seed++) {
		struct props_cfg cfg;
		struct props_report rep;

		CHECK_OK(planted_cfg("planted_ops_trunc_tail", seed, &cfg));
		CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
		CHECK_MSG(cex_ops(&rep) >= 2 && cex_ops(&rep) <= 3,
			  "seed %llu: %d ops:\n%s", (unsigned long long)seed,
			  cex_ops(&rep), rep.cex);
		CHECK(strstr(rep.cex, "truncate"));
		/* the log replays as is: its header names the targets */
		CHECK(strstr(rep.cex, "targets=model,planted:trunc_tail"));
		CHECK_MSG(rep.shrink_ms < 1000 * TIME_SCALE,
			  "shrinking took %.0f ms", rep.shrink_ms);
		CHECK(!rep.shrink_halted);
		props_report_free(&rep);
	}
}

TEST(props_same_seed_gives_the_same_counterexample)
{
	const char *names[] = { "planted_int_below_1000",
				"planted_ops_trunc_tail" };

	for (size_t i = 0; i < 2; i++) {
		struct props_cfg cfg;
		struct props_report a, b;

		CHECK_OK(planted_cfg(names[i], 7, &cfg));
		CHECK_EQ(props_run(&cfg, &a), PROPS_FAIL);
		CHECK_EQ(props_run(&cfg, &b), PROPS_FAIL);
		CHECK(!strcmp(a.cex, b.cex));
		CHECK_EQ(a.cex_len, b.cex_len);
		CHECK_MEM(a.cex_bytes, b.cex_bytes, a.cex_len);
		CHECK_EQ(a.fail_seed, b.fail_seed);
		CHECK_EQ(a.shrink_attempts, b.shrink_attempts);
		/* the failing trial's seed as the run seed: the first trial
		 * fails and shrinks to the same minimum */
		cfg.seed = a.fail_seed;
		props_report_free(&b);
		CHECK_EQ(props_run(&cfg, &b), PROPS_FAIL);
		CHECK_EQ(b.fail_trial, 0);
		CHECK(!strcmp(a.cex, b.cex));
		props_report_free(&a);
		props_report_free(&b);
	}
}

TEST(props_fork_mode_catches_a_segfault_and_shrinks_it)
{
	struct props_cfg cfg;
	struct props_report rep;

	CHECK_OK(planted_cfg("planted_segfault", 3, &cfg));
	CHECK(cfg.fork.enable);
	CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
	CHECK_MSG(cex_int(&rep) == 1000, "shrunk to %lld", cex_int(&rep));
	/* a plain build dies of SIGSEGV; ASan and UBSan report and exit */
	CHECK_MSG(strstr(rep.cex, "signal 11") || strstr(rep.cex, "exited with"),
		  "%s", rep.cex);
	props_report_free(&rep);
}

TEST(props_fork_mode_catches_a_hang_and_shrinks_it)
{
	struct props_cfg cfg;
	struct props_report rep;

	CHECK_OK(planted_cfg("planted_hang", 3, &cfg));
	/* long enough that a passing child is never late, even when the
	 * machine is busy */
	cfg.fork.timeout_ms = 100 * TIME_SCALE;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
	CHECK_MSG(cex_int(&rep) == 1000, "shrunk to %lld", cex_int(&rep));
	CHECK(strstr(rep.cex, "timed out after"));
	props_report_free(&rep);
}

/* ---- duplicates, skips, hooks ---- */

static int calls;

/* one entry, four values: only four distinct pools exist */
static int choice4_alloc(struct props_trial *t, void *env, void **out)
{
	uint64_t *v = malloc(sizeof(*v));

	(void)env;
	if (!v)
		return PROPS_ERROR;
	*v = props_below(t, 4);
	*out = v;
	return PROPS_PASS;
}

static const struct props_type choice4 = { .name = "choice4",
					   .alloc = choice4_alloc };

static int count_calls(struct props_trial *t, void *x)
{
	(void)t;
	(void)x;
	calls++;
	return PROPS_PASS;
}

TEST(props_duplicates_are_skipped_and_counted)
{
	struct props_cfg cfg = { .name = "dups", .prop1 = count_calls,
				 .types = { &choice4 }, .trials = 100,
				 .quiet = 1 };
	struct props_report rep;

	calls = 0;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_PASS);
	CHECK_EQ(rep.trials, 100);
	CHECK_EQ(rep.pass, 4);          /* each value once */
	CHECK_EQ(rep.dup, 96);
	CHECK_EQ(calls, 4);
	props_report_free(&rep);
}

/* 64 random bits in one entry: distinct pools, barring a 2^-64 chance */
static int bits64_alloc(struct props_trial *t, void *env, void **out)
{
	uint64_t *v = malloc(sizeof(*v));

	(void)env;
	if (!v)
		return PROPS_ERROR;
	*v = props_bits(t, 64);
	*out = v;
	return PROPS_PASS;
}

static const struct props_type bits64 = { .name = "bits64",
					  .alloc = bits64_alloc };

TEST(props_duplicate_detection_grows_without_many_false_positives)
{
	struct props_cfg cfg = { .name = "distinct", .prop1 = count_calls,
				 .types = { &bits64 }, .trials = 100000,
				 .quiet = 1 };
	struct props_report rep;

	calls = 0;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_PASS);
	/* every "duplicate" here is a false positive of the filter */
	CHECK_MSG(rep.dup < 100, "%u false duplicates in 100000", rep.dup);
	CHECK_EQ((uint32_t)calls, rep.pass);
}

static int skip_alloc(struct props_trial *t, void *env, void **out)
{
	(void)env;
	(void)out;
	props_bits(t, 8);
	return PROPS_SKIP;
}

static const struct props_type never = { .name = "never",
					 .alloc = skip_alloc };

TEST(props_a_run_that_only_skips_is_skip)
{
	struct props_cfg cfg = { .name = "skips", .prop1 = count_calls,
				 .types = { &never }, .trials = 10, .quiet = 1 };
	struct props_report rep;

	calls = 0;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_SKIP);
	CHECK_EQ(rep.skip, 10);
	CHECK_EQ(calls, 0);
}

static int halt_after_5(const struct props_info *info, void *env)
{
	(void)env;
	return info->trial >= 5 ? PROPS_HOOK_HALT : PROPS_HOOK_CONTINUE;
}

static int repeat_once(const struct props_info *info, void *env)
{
	(*(int *)env) += info->repeat;
	return PROPS_HOOK_REPEAT_ONCE;
}

static const struct props_int_env big = { 0, UINT64_MAX };
static const struct props_type big_type = PROPS_INT_TYPE(&big);

TEST(props_hooks_halt_a_run_and_repeat_a_trial)
{
	int repeats = 0;
	struct props_cfg cfg = { .name = "hooks", .prop1 = count_calls,
				 .types = { &big_type }, .trials = 100,
				 .quiet = 1,
				 .hooks = { .trial_pre = halt_after_5,
					    .trial_post = repeat_once,
					    .env = &repeats } };
	struct props_report rep;

	calls = 0;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_PASS);
	CHECK_EQ(rep.trials, 5);
	CHECK_EQ(rep.pass, 5);
	CHECK_EQ(calls, 10);            /* every trial ran twice */
	CHECK_EQ(repeats, 5);
}

TEST(props_bad_configs_are_rejected)
{
	struct props_cfg none = { .prop1 = count_calls };
	struct props_cfg two = { .prop1 = count_calls, .types = { &big_type,
								  &big_type } };
	struct props_cfg nofn = { .types = { &big_type } };

	CHECK_EQ(props_run(&none, NULL), -EINVAL);
	CHECK_EQ(props_run(&two, NULL), -EINVAL);
	CHECK_EQ(props_run(&nofn, NULL), -EINVAL);
}

/* ---- bytes: fuzzer entry point and replay ---- */

TEST(props_counterexample_bytes_replay_the_failure)
{
	struct props_cfg cfg;
	struct props_report rep, again;

	CHECK_OK(planted_cfg("planted_ops_trunc_tail", 11, &cfg));
	CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
	CHECK(rep.cex_len > 0);
	CHECK_EQ(props_run_bytes(&cfg, rep.cex_bytes, rep.cex_len, 0, &again),
		 PROPS_FAIL);
	CHECK(!strcmp(rep.cex, again.cex));
	props_report_free(&again);
	/* no bytes: the minimal value, which passes */
	CHECK_EQ(props_run_bytes(&cfg, NULL, 0, 0, NULL), PROPS_PASS);
	props_report_free(&rep);
	CHECK_OK(planted_cfg("planted_int_below_1000", 11, &cfg));
	{
		/* magnitude 10 bits, then 1000: what the minimum reads */
		const uint8_t b[] = { 10, 0xe8, 0x03 };

		CHECK_EQ(props_run_bytes(&cfg, b, sizeof(b), 0, &rep), PROPS_FAIL);
		CHECK_EQ(cex_int(&rep), 1000);
		props_report_free(&rep);
	}
}

/* ---- the seed database ---- */

static int bug_present;

static int fails_while_bug(struct props_trial *t, void *x)
{
	(void)t;
	return bug_present && *(uint64_t *)x > 5 ? PROPS_FAIL : PROPS_PASS;
}

TEST(props_seed_database_replays_failures_first_and_forgets_fixed_ones)
{
	char dir[] = "/tmp/fsoracle-props-db-XXXXXX", path[128];
	struct props_cfg cfg = { .name = "db_prop", .prop1 = fails_while_bug,
				 .types = { &big_type }, .quiet = 1 };
	struct props_report rep;

	CHECK(mkdtemp(dir));
	cfg.db = dir;
	snprintf(path, sizeof(path), "%s/db_prop.seeds", dir);
	bug_present = 1;
	cfg.seed = 100;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
	CHECK(access(path, F_OK) == 0);
	uint64_t failed = rep.fail_seed;
	props_report_free(&rep);

	/* another run seed: the saved seed runs first and fails at once */
	cfg.seed = 200;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
	CHECK_EQ(rep.db_replayed, 1);
	CHECK_EQ(rep.fail_trial, 0);
	CHECK_EQ(rep.fail_seed, failed);
	props_report_free(&rep);

	/* fixed: the saved seed passes, is dropped, the file goes away */
	bug_present = 0;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_PASS);
	CHECK_EQ(rep.db_replayed, 1);
	CHECK(access(path, F_OK) != 0);
	CHECK_OK(rmdir(dir));
}

/*
 * A database that cannot be written (its directory cannot be made) loses
 * the failing seeds: the run says so on stderr instead of dropping them
 * unsaid, and still reports the failure.
 */
TEST(props_seed_database_that_cannot_be_written_says_so)
{
	char dir[] = "/tmp/fsoracle-props-db-XXXXXX", file[128], db[160];
	char errpath[] = "/tmp/fsoracle-props-err-XXXXXX", text[512] = "";
	struct props_cfg cfg = { .name = "db_prop", .prop1 = fails_while_bug,
				 .types = { &big_type }, .quiet = 1,
				 .seed = 100 };
	struct props_report rep;
	int fd, saved, res;
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/a-file", dir);
	f = fopen(file, "w");
	CHECK(f != NULL);
	fclose(f);
	snprintf(db, sizeof(db), "%s/db", file); /* under a file: no dir */
	cfg.db = db;
	bug_present = 1;
	fd = mkstemp(errpath);
	CHECK(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	res = props_run(&cfg, &rep);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	CHECK_EQ(res, PROPS_FAIL);
	props_report_free(&rep);
	CHECK(pread(fd, text, sizeof(text) - 1, 0) > 0);
	close(fd);
	CHECK_MSG(strstr(text, "cannot keep its failing seeds") != NULL,
		  "stderr: '%s'", text);
	unlink(errpath);
	unlink(file);
	CHECK_OK(rmdir(dir));
}

/* ---- custom shrink tactics ---- */

struct pair { uint64_t a, b; };

static int pair_alloc(struct props_trial *t, void *env, void **out)
{
	struct pair *p = malloc(sizeof(*p));

	(void)env;
	if (!p)
		return PROPS_ERROR;
	p->a = props_bits(t, 8);
	p->b = props_bits(t, 8);
	*out = p;
	return PROPS_PASS;
}

static void pair_print(FILE *f, const void *inst, void *env)
{
	const struct pair *p = inst;

	(void)env;
	fprintf(f, "%llu %llu", (unsigned long long)p->a,
		(unsigned long long)p->b);
}

/* Move both by the same amount: what no generic pass does. */
static int pair_shrink(const void *inst, struct props_edit *e, uint32_t tactic,
		       void *env)
{
	uint64_t half;

	(void)inst;
	(void)env;
	if (props_edit_count(e) != 2)
		return PROPS_SHRINK_NO_MORE_TACTICS;
	switch (tactic) {
	case 0:
		half = props_edit_get(e, 0) / 2;
		if (!half || props_edit_get(e, 1) < half)
			return PROPS_SHRINK_DEAD_END;
		props_edit_set(e, 0, props_edit_get(e, 0) - half);
		props_edit_set(e, 1, props_edit_get(e, 1) - half);
		return PROPS_SHRINK_OK;
	case 1:
		if (!props_edit_get(e, 0) || !props_edit_get(e, 1))
			return PROPS_SHRINK_DEAD_END;
		props_edit_set(e, 0, props_edit_get(e, 0) - 1);
		props_edit_set(e, 1, props_edit_get(e, 1) - 1);
		return PROPS_SHRINK_OK;
	default:
		return PROPS_SHRINK_NO_MORE_TACTICS;
	}
}

static int successors_below_10(struct props_trial *t, void *x)
{
	const struct pair *p = x;

	(void)t;
	return p->b == p->a + 1 && p->a >= 10 ? PROPS_FAIL : PROPS_PASS;
}

TEST(props_custom_shrink_tactics_reach_what_single_entries_cannot)
{
	struct props_type with = { .name = "pair", .alloc = pair_alloc,
				   .print = pair_print, .shrink = pair_shrink };
	struct props_type without = with;
	struct props_cfg cfg = { .name = "pair", .prop1 = successors_below_10,
				 .types = { &with }, .quiet = 1,
				 .trials = 5000, .seed = 5 };
	struct props_report rep;

	without.shrink = NULL;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
	CHECK_MSG(strstr(rep.cex, "arg 0 (pair): 10 11\n"), "%s", rep.cex);
	props_report_free(&rep);
	cfg.types[0] = &without;
	CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
	CHECK_MSG(!strstr(rep.cex, "arg 0 (pair): 10 11\n"), "%s", rep.cex);
	props_report_free(&rep);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
