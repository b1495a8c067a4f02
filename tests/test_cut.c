/*
 * test_cut.c - the `cut` op (op.h, harness/cut.h): its text and binary
 * forms, the engine target's power cut through its crash layer, inside
 * an op, and the checker's rules around it, which must fail on a device
 * that loses what it acknowledged.
 */
#include <errno.h>
#include <string.h>

#include "harness/binary.h"
#include "harness/check.h"
#include "harness/target.h"
#include "harness/text.h"
#include "hw/hw.h"
#include "ref/ref.h"
#include "tests/test.h"

static int parse(const char *text, struct op_seq *seq)
{
	char err[200];

	op_seq_init(seq);
	return op_text_parse(text, strlen(text), seq, err, sizeof(err));
}

TEST(cut_text_and_binary_forms_round_trip)
{
	struct op_seq seq, back;
	uint8_t bin[64];
	char line[64], err[200];

	CHECK_OK(parse("cut 3 17\ncut 0\n", &seq));
	CHECK_EQ(seq.n, 2);
	CHECK_EQ(seq.ops[0].kind, OP_CUT);
	CHECK_EQ(OP_CUT_POINT(seq.ops[0].arg), 3);
	CHECK_EQ(OP_CUT_SEED(seq.ops[0].arg), 17);
	CHECK_EQ(seq.ops[1].arg, 0);
	op_format(&seq.ops[0], &seq, line, sizeof(line));
	CHECK(!strcmp(line, "cut 3 17"));
	CHECK_EQ(op_bin_encode(&seq, NULL, 0, bin, sizeof(bin), NULL), 32);
	op_seq_init(&back);
	CHECK_OK(op_bin_decode(bin, 32, NULL, &back));
	CHECK_EQ(back.n, 2);
	CHECK(op_equal(&back.ops[0], &seq.ops[0]));
	CHECK(op_text_parse("cut 70000\n", 10, &back, err, sizeof(err)) < 0);
	CHECK(op_text_parse("cut\n", 4, &back, err, sizeof(err)) < 0);
	op_seq_free(&seq);
	op_seq_free(&back);
}

static int64_t apply(struct target *t, const char *line)
{
	struct op_seq seq;
	char buf[16384];
	int64_t r;

	if (parse(line, &seq) || seq.n != 1)
		return -EINVAL;
	r = target_apply(t, &seq.ops[0], 1, buf, sizeof(buf));
	op_seq_free(&seq);
	return r;
}

/*
 * A cut at the first durability point of an fsync: the fsync returns
 * (the device still answers) but the power failed inside it, so after
 * the cut the file it made is gone; the same fsync uncut keeps it, and
 * without power cuts the engine lists cut as unsupported.
 */
TEST(cut_inside_an_fsync_loses_it)
{
	struct target_env env = { .power_cuts = 1 };
	struct target *t[2];
	char err[256];
	int n;

	CHECK_OK(target_list_open("engine:mem:16m,engine:mem:16m", &env, t, &n,
				  err, sizeof(err)));
	for (int i = 0; i < 2; i++) {
		CHECK(!(t[i]->unsupported & (1ull << OP_CUT)));
		CHECK_EQ(apply(t[i], "pwrite 0 8k"), 8192);
		if (i == 0)
			CHECK_EQ(apply(t[i], "cut 1 0"), 0);
		CHECK_EQ(t[i]->ops->power(t[i]), TARGET_POWER_ON);
		CHECK_EQ(apply(t[i], "fsync"), 0);
		CHECK_EQ(t[i]->ops->power(t[i]),
			 i == 0 ? TARGET_POWER_LOST : TARGET_POWER_ON);
		CHECK_EQ(apply(t[i], "cut 0 0"), 0);
		CHECK_EQ(t[i]->ops->size(t[i], 0), i == 0 ? -ENOENT : 8192);
	}
	target_list_close(t, n);
	env.power_cuts = 0;
	CHECK_OK(target_list_open("engine:mem:16m", &env, t, &n, err,
				  sizeof(err)));
	CHECK(t[0]->unsupported & (1ull << OP_CUT));
	target_list_close(t, n);
}

static int run_checker_on(const char *rtdev, const char *text, int lie,
			  uint64_t *crashes)
{
	struct target_env env = { .power_cuts = 1, .rtdev = rtdev };
	struct check_cfg cfg = { .quiet = 1 };
	struct target *t[2];
	struct checker *c;
	struct op_seq seq;
	char err[256];
	int n, ret;

	if (parse(text, &seq) ||
	    target_list_open("engine:mem:16m,model", &env, t, &n, err,
			     sizeof(err)))
		return -EINVAL;
	ret = check_new(t, n, &cfg, &seq, &c);
	if (!ret && lie) {
		/* every durability point from here on lies */
		struct hw_crash_plan plan = { .lie_from = 1, .lie_count = ~0ull };

		ret = hw_crash_set_plan(ref_device(engine_target_fs(t[0])), &plan);
	}
	if (!ret) {
		ret = check_run(c, &seq);
		*crashes = check_stats(c)->crashes;
		check_free(c);
	}
	target_list_close(t, n);
	op_seq_free(&seq);
	return ret;
}

static int run_checker(const char *text, int lie, uint64_t *crashes)
{
	return run_checker_on(NULL, text, lie, crashes);
}

/*
 * The checker cuts right after the op the power failed in (f1's fsync
 * here), the durable f0 must read back, f1 takes what the engine
 * recovered; on a device whose flushes lie, a cut loses the fsynced f0
 * and the checker must say so.
 */
TEST(checker_cuts_after_the_op_and_holds_fsynced_files)
{
	const char *seq = "open -f f0\npwrite 0 40k\nfsync\nopen -f f1\n"
			  "pwrite 0 8k\ncut 2 9\nfsync\npwrite 4k 4k\n"
			  "cut 0 0\nopen f0\npread 0 40k\n";
	uint64_t crashes = 0;

	CHECK_EQ(run_checker(seq, 0, &crashes), CHECK_OK);
	CHECK_EQ(crashes, 2);
	CHECK_EQ(run_checker("open -f f0\npwrite 0 40k\nfsync\ncut 0 0\n", 0,
			     &crashes), CHECK_OK);
	CHECK(run_checker("open -f f0\npwrite 0 40k\nfsync\ncut 0 0\n", 1,
			  &crashes) > 0);
}

/*
 * With a realtime device the two devices are one power domain: the cut
 * inside f1's fsync holds the fsynced realtime file f0 on both the plain
 * and the zoned realtime device, and a domain whose points lie (on
 * either device) loses it, which the checker must say.
 */
TEST(checker_cuts_realtime_engines_and_holds_fsynced_rt_files)
{
	static const char *const rt[] = {
		"mem:16m",
		"zoned:mem,size=8m,zone=1m,cap=768k,append_max=672k",
	};
	const char *seq = "open -f f0\nchattr +r\npwrite 0 40k\nfsync\n"
			  "open -f f1\nchattr +r\npwrite 0 8k\ncut 2 9\nfsync\n"
			  "pwrite 4k 4k\ncut 0 0\nopen f0\npread 0 40k\n";
	uint64_t crashes = 0;

	for (int i = 0; i < 2; i++) {
		CHECK_EQ(run_checker_on(rt[i], seq, 0, &crashes), CHECK_OK);
		CHECK_EQ(crashes, 2);
		CHECK(run_checker_on(rt[i], "open -f f0\nchattr +r\n"
				     "pwrite 0 40k\nfsync\ncut 0 0\n", 1,
				     &crashes) > 0);
	}
}

/* An engine whose realtime device cannot be cut takes no cuts at all. */
TEST(cut_is_unsupported_when_either_device_cannot_be_cut)
{
	struct target_env env = { .power_cuts = 1, .rtdev = "null:16m" };
	struct target *t[1];
	char err[256];
	int n;

	CHECK_OK(target_list_open("engine:mem:16m", &env, t, &n, err,
				  sizeof(err)));
	CHECK(t[0]->unsupported & (1ull << OP_CUT));
	CHECK(strstr(t[0]->note, "no power cut") != NULL);
	target_list_close(t, n);
	env.rtdev = "mem:16m";
	CHECK_OK(target_list_open("engine:mem:16m", &env, t, &n, err,
				  sizeof(err)));
	CHECK(!(t[0]->unsupported & (1ull << OP_CUT)));
	target_list_close(t, n);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
