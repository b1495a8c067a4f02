/*
 * test_harness_check.c - the checker can fail, and fails right: targets
 * that each differ from the model in one planted way are caught with the
 * right class (exit code), the report names the op that wrote the bad
 * bytes, the op log replays as is, and the minimizer shrinks each
 * failure to at most 5 ops.  Agreeing targets agree over long seeded
 * runs, and ops a target cannot do are skipped and reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/check.h"
#include "harness/check_internal.h"
#include "harness/gen.h"
#include "harness/load.h"
#include "harness/minimize.h"
#include "harness/target.h"
#include "harness/text.h"
#include "tests/test.h"

struct pair {
	struct target *t[2];
	int n;
};

static int open_pair(const char *list, struct pair *p)
{
	char err[256];
	int r = target_list_open(list, NULL, p->t, &p->n, err, sizeof(err));

	if (r)
		fprintf(stderr, "%s: %s\n", list, err);
	return r;
}

/* Seeded generator ops through a checker until status or n ops. */
static int soak(struct checker *c, uint64_t seed, size_t n, uint64_t exclude)
{
	struct gen_cfg gc = { .seed = seed, .exclude = exclude };
	struct gen g;
	int r = 0;

	if (gen_init(&g, &gc))
		return -EINVAL;
	for (size_t i = 0; i < n && !r; i++) {
		struct op op;

		gen_next(&g, &op);
		r = check_op(c, &op);
	}
	return r ? r : check_finish(c);
}

TEST(check_models_agree_over_a_long_seeded_run)
{
	struct pair p;
	struct checker *c;
	struct check_cfg cfg = { .quiet = 1 };

	CHECK_OK(open_pair("model,model", &p));
	CHECK_OK(check_new(p.t, p.n, &cfg, NULL, &c));
	CHECK_EQ(soak(c, 1, 200000, 0), CHECK_OK);
	CHECK_EQ(check_stats(c)->ops, 200000);
	CHECK(check_stats(c)->crashes > 0);
	check_free(c);
	target_list_close(p.t, p.n);
}

struct planted_case {
	const char *bug;
	int status;
	uint64_t exclude;   /* keep other failures out of the way */
};

static const struct planted_case cases[] = {
	{ "trunc_tail", CHECK_DATA, 0 },
	{ "punch_short", CHECK_DATA, 0 },
	{ "zero_keep_size", CHECK_SIZE, 0 },
	{ "collapse_eio", CHECK_ERRNO, 0 },
	{ "audit_unlink", CHECK_AUDIT, 0 },
	{ "enospc_room", CHECK_ERRNO, 0 },
	{ "enfile_room", CHECK_ERRNO, 0 },
};

TEST(check_catches_every_planted_bug_and_minimizes_it)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pair p;
		struct checker *c;
		struct check_cfg cfg = { .quiet = 1 };
		struct op_seq seq;
		struct min_stats st;
		char list[64];
		int status;

		snprintf(list, sizeof(list), "model,planted:%s", cases[i].bug);
		CHECK_OK(open_pair(list, &p));
		CHECK_OK(check_new(p.t, p.n, &cfg, NULL, &c));
		status = soak(c, 42, 100000, cases[i].exclude);
		CHECK_MSG(status == cases[i].status, "%s: status %d, want %d",
			  cases[i].bug, status, cases[i].status);
		CHECK(!strcmp(check_failure(c)->bad, list + 6));
		op_seq_init(&seq);
		CHECK_OK(op_seq_copy(&seq, check_log(c)));
		check_free(c);

		CHECK_OK(minimize(p.t, p.n, &cfg, NULL, &seq, &st));
		CHECK_EQ(st.status, cases[i].status);
		CHECK_MSG(seq.n <= 5, "%s: minimized to %zu ops", cases[i].bug,
			  seq.n);
		CHECK(st.ops_before > st.ops_after);
		/* The minimal sequence still fails the same way on its own. */
		CHECK_OK(check_new(p.t, p.n, &cfg, &seq, &c));
		CHECK_EQ(check_run(c, &seq), cases[i].status);
		check_free(c);
		op_seq_free(&seq);
		target_list_close(p.t, p.n);
	}
}

/* Run text through a checker with a report into a memory buffer. */
static int run_text(const char *list, const char *text, const char *log,
		    char **report)
{
	struct pair p;
	struct checker *c;
	struct op_seq seq;
	size_t len = 0;
	FILE *out = open_memstream(report, &len);
	struct check_cfg cfg = { .out = out, .log_path = log, .targets = list };
	char err[200];
	int r;

	op_seq_init(&seq);
	r = op_text_parse(text, strlen(text), &seq, err, sizeof(err));
	if (!r)
		r = open_pair(list, &p);
	if (r) {
		fclose(out);
		return -1;
	}
	if (check_new(p.t, p.n, &cfg, &seq, &c) == 0) {
		r = check_run(c, &seq);
		check_free(c);
	}
	fclose(out);
	target_list_close(p.t, p.n);
	op_seq_free(&seq);
	return r;
}

TEST(check_report_names_pair_op_bytes_and_writer)
{
	char log[] = "/tmp/fsoracle-test-XXXXXX";
	char *report = NULL;
	int fd = mkstemp(log), r;

	CHECK(fd >= 0);
	close(fd);
	r = run_text("model,planted:trunc_tail",
		     "pwrite 0 8k\nfsync\ntruncate 5000\npwrite 4k 100\n"
		     "truncate 8k\npread 0 8k\n", log, &report);
	CHECK_EQ(r, CHECK_DATA);
	CHECK_MSG(strstr(report, "data mismatch (exit 10) between model (good) "
			 "and planted:trunc_tail (bad)"), "%s", report);
	CHECK_MSG(strstr(report, "at op #6 pread 0 8k"), "%s", report);
	CHECK(strstr(report, "OFFSET        GOOD  BAD"));
	CHECK_MSG(strstr(report, "0x0000001388  0x00  0x"), "%s", report);
	CHECK_MSG(strstr(report, "the op that last wrote 0x1388: #3 truncate 5000"),
		  "%s", report);
	CHECK_MSG(strstr(report, "look like data of #1 pwrite 0 8k"), "%s", report);
	free(report);

	/* The log is a text op log that replays to the same failure. */
	{
		struct op_seq seq;
		char err[300], *text = NULL;
		size_t len;

		op_seq_init(&seq);
		CHECK_OK(op_load_file(log, OP_FORM_AUTO, NULL, &seq, NULL, err,
				      sizeof(err)));
		CHECK_EQ(seq.n, 6);
		CHECK(!strcmp(seq.hdr.targets, "model,planted:trunc_tail"));
		CHECK_OK(op_read_file(log, &text, &len));
		CHECK(strstr(text, "# fsoracle: data mismatch (exit 10)"));
		free(text);
		op_seq_free(&seq);
	}
	unlink(log);
}

/*
 * The same bad bytes with no read to show them: the verify at the end
 * finds them, comparing with the model's bytes in place (its peek), and
 * reports them from a copy as a read would.
 */
TEST(check_verify_against_the_model_in_place_reports_the_bytes)
{
	char *report = NULL;
	int r = run_text("model,planted:trunc_tail",
			 "pwrite 0 80k\nfsync\ntruncate 5000\npwrite 4k 100\n"
			 "truncate 8k\n", NULL, &report);

	CHECK_EQ(r, CHECK_DATA);
	CHECK_MSG(strstr(report, "verify: bytes differ"), "%s", report);
	CHECK_MSG(strstr(report, "0x0000001388  0x00  0x"), "%s", report);
	CHECK_MSG(strstr(report, "the op that last wrote 0x1388: #3 truncate 5000"),
		  "%s", report);
	free(report);
	/* agreeing bytes, in and out of the model's chunks, pass */
	CHECK_EQ(run_text("model,model", "pwrite 0 200k\nfpunch 64k 64k\n"
			  "truncate 300k\npwrite 150k 1\n", NULL, &report), 0);
	free(report);
}

/*
 * check_release drops the files and the engine's filesystem at once;
 * only a reset may follow, and after one the targets are fresh and run
 * a sequence as a first one would.
 */
TEST(check_release_drops_the_state_and_a_reset_makes_it_anew)
{
	struct pair p;
	struct checker *c;
	struct check_cfg cfg = { .quiet = 1 };
	struct op_seq seq;
	const char *text = "pwrite 0 64k\nfsync\nfile f1\npwrite 4k 8k\n";
	char err[200];

	op_seq_init(&seq);
	CHECK_OK(op_text_parse(text, strlen(text), &seq, err, sizeof(err)));
	CHECK_OK(open_pair("engine,model", &p));
	CHECK_OK(check_new(p.t, p.n, &cfg, &seq, &c));
	for (int round = 0; round < 3; round++) {
		CHECK_EQ(check_run(c, &seq), CHECK_OK);
		CHECK_EQ(p.t[0]->ops->size(p.t[0], 0), 64 << 10);
		CHECK_EQ(p.t[1]->ops->size(p.t[1], 1), 12 << 10);
		CHECK_OK(check_release(c));
		CHECK(engine_target_fs(p.t[0]) == NULL);
		CHECK_EQ(p.t[1]->ops->size(p.t[1], 0), -ENOENT);
		CHECK_EQ(p.t[1]->ops->size(p.t[1], 1), -ENOENT);
		CHECK_OK(round == 1 ? check_new_round(c, "", "delalloc", NULL) :
			 check_reset(c));
		CHECK(engine_target_fs(p.t[0]) != NULL);
		CHECK_EQ(p.t[0]->ops->size(p.t[0], 0), -ENOENT);
		CHECK_EQ(p.t[0]->ops->size(p.t[0], 1), -ENOENT);
	}
	/* a second release in a row has nothing left to drop */
	CHECK_OK(check_release(c));
	CHECK_OK(check_release(c));
	CHECK_OK(check_reset(c));
	CHECK_EQ(check_run(c, &seq), CHECK_OK);
	check_free(c);
	target_list_close(p.t, p.n);
	op_seq_free(&seq);
}

TEST(check_size_and_errno_classes)
{
	char *report = NULL;

	CHECK_EQ(run_text("model,planted:zero_keep_size",
			  "pwrite 0 4k\nfzero -k 2k 8k\n", NULL, &report),
		 CHECK_SIZE);
	CHECK_MSG(strstr(report, "f0: size 4096 on model but 10240 on "
			 "planted:zero_keep_size"), "%s", report);
	free(report);
	CHECK_EQ(run_text("model,planted:collapse_eio",
			  "pwrite 0 16k\nfcollapse 0 4k\n", NULL, &report),
		 CHECK_ERRNO);
	CHECK_MSG(strstr(report, "returned 0 on model but -EIO on "
			 "planted:collapse_eio"), "%s", report);
	free(report);
	CHECK_EQ(run_text("model,planted:audit_unlink",
			  "pwrite 0 1\nunlink f0\n", NULL, &report), CHECK_AUDIT);
	CHECK_MSG(strstr(report, "audit failure (exit 12) on planted:audit_unlink"),
		  "%s", report);
	free(report);
}

TEST(check_last_writer_follows_collapse_and_insert)
{
	/*
	 *   #1 pwrite 0 16k      #2 pwrite 8k 4k
	 *   #3 fcollapse 0 4k:   [4k,8k) now holds what #2 wrote
	 *   #4 finsert 0 4k:     [0,4k) is a new hole; #2's bytes at [8k,12k)
	 *   #5 truncate 14k:     from 14k on, zero since #5
	 */
	static const char text[] = "pwrite 0 16k\npwrite 8k 4k\nfcollapse 0 4k\n"
				   "finsert 0 4k\ntruncate 14k\n";
	static const struct { uint64_t off, writer; } want[] = {
		{ 9000, 2 }, { 100, 4 }, { 5000, 1 }, { 14500, 5 }, { 13000, 1 },
		{ 12288, 1 }, { 8191, 1 }, { 8192, 2 },
	};
	struct pair p;
	struct checker *c;
	struct check_cfg cfg = { .quiet = 1 };
	struct op_seq seq;
	char err[200];

	CHECK_OK(open_pair("model,model", &p));
	op_seq_init(&seq);
	CHECK_OK(op_text_parse(text, strlen(text), &seq, err, sizeof(err)));
	CHECK_OK(check_new(p.t, p.n, &cfg, &seq, &c));
	CHECK_EQ(check_run(c, &seq), CHECK_OK);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK_MSG(check_last_writer(c, 5, 0, want[i].off) == want[i].writer,
			  "offset %llu: #%llu, want #%llu",
			  (unsigned long long)want[i].off,
			  (unsigned long long)check_last_writer(c, 5, 0, want[i].off),
			  (unsigned long long)want[i].writer);
	/* Another file was never written: no writer. */
	CHECK_EQ(check_last_writer(c, 5, 1, 0), 0);
	check_free(c);
	op_seq_free(&seq);
	target_list_close(p.t, p.n);
}

TEST(check_skips_and_reports_what_a_target_cannot_do)
{
	struct pair p;
	struct checker *c;
	struct check_cfg cfg = { .quiet = 1 };
	struct op_seq seq;
	char err[200], skip[300];
	static const char text[] = "pwrite 0 16k\nfcollapse 0 4k\nfcollapse 0 4k\n"
				   "reflink f0 0 0 4k\npread 0 16k\n";

	CHECK_OK(open_pair("model,model", &p));
	p.t[1]->unsupported = (1ull << OP_FCOLLAPSE) | (1ull << OP_CLONE_RANGE);
	snprintf(p.t[1]->name, sizeof(p.t[1]->name), "picky");
	op_seq_init(&seq);
	CHECK_OK(op_text_parse(text, strlen(text), &seq, err, sizeof(err)));
	CHECK_OK(check_new(p.t, p.n, &cfg, &seq, &c));
	CHECK_EQ(check_run(c, &seq), CHECK_OK);
	CHECK_EQ(check_stats(c)->skipped_total, 3);
	CHECK_EQ(check_stats(c)->checked, 2);
	check_skip_summary(c, skip, sizeof(skip));
	CHECK_MSG(!strcmp(skip, "skipped 3 of 5 ops: fcollapse x2 (picky) "
			  "reflink x1 (picky)"), "%s", skip);
	check_free(c);
	op_seq_free(&seq);
	target_list_close(p.t, p.n);
}

TEST(target_list_syntax)
{
	struct target *t[TARGET_MAX];
	char err[256];
	int n;

	CHECK_EQ(target_list_open("model,bogus", NULL, t, &n, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "unknown target 'bogus'"));
	CHECK_EQ(target_list_open("", NULL, t, &n, err, sizeof(err)), -EINVAL);
	CHECK_EQ(target_list_open("planted:nope", NULL, t, &n, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "unknown planted bug"));
	CHECK_EQ(target_list_open("model:3000", NULL, t, &n, err, sizeof(err)),
		 -EINVAL);
	CHECK_OK(target_list_open("model:1k,model,planted:trunc_tail", NULL, t, &n,
				  err, sizeof(err)));
	CHECK_EQ(n, 3);
	CHECK_EQ(t[0]->blocksize, 1024);
	CHECK_EQ(t[1]->blocksize, 4096);
	target_list_close(t, n);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
