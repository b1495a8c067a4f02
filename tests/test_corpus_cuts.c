/*
 * test_corpus_cuts.c - a power cut at every durability point of every
 * op log in the corpus (the .ops files of corpus/regressions and
 * fuzz/seeds), on a block device and on pmem, with recovery, fsck and
 * the fsynced bytes checked after each (harness/cutall.h); the crash
 * layer's power-failure plan it stands on; and a device that lies about
 * one fsync, which the check must catch.
 *
 * Bounded: each sequence is cut at every point in a release build (one
 * exact and one subset cut each: torn in sectors on the block device,
 * in 8-byte stores on pmem); sanitizer builds cut
 * at most SAN_POINTS points per sequence, spread over the whole run,
 * first and last included.  FSO_CUT_POINTS=N overrides (0: every
 * point), and FSO_CUT_VERBOSE=1 prints a line per sequence.  `fsoracle
 * cutall` is the long form (many subsets per point).
 */
#include "tests/test.h"

#include <dirent.h>
#include <errno.h>

#include "harness/cutall.h"
#include "harness/load.h"
#include "harness/text.h"
#include "hw/hw.h"

#define SAN_POINTS 5

/* ---- the crash layer's plan ---------------------------------------- */

#define UNIT 512

static void put(struct hw_dev *d, uint64_t blk, uint8_t v, unsigned flags)
{
	uint8_t b[UNIT];

	memset(b, v, sizeof(b));
	if (hw_write(d, blk * UNIT, b, UNIT, flags))
		abort();
}

static uint8_t at(struct hw_dev *d, uint64_t blk)
{
	uint8_t b[UNIT];

	return hw_read(d, blk * UNIT, b, UNIT) ? 0xff : b[0];
}

/*
 * write 1, flush (point 1), write 2, FUA write 3 (point 2), write 4,
 * flush (point 3), under plan p; then cut.  Returns the image as the
 * four blocks' first bytes, "1234" with '.' for a block that is zero.
 */
static void plan_image(const struct hw_crash_plan *p, const struct hw_cut *cut,
		       char img[5], struct hw_crash_info *ci)
{
	struct hw_dev *d = NULL;

	if (hw_open("crash:mem:64k", &d, NULL, 0) || hw_crash_set_plan(d, p))
		abort();
	put(d, 0, '1', 0);
	hw_flush(d);
	put(d, 1, '2', 0);
	put(d, 2, '3', HW_FUA);
	put(d, 3, '4', 0);
	hw_flush(d);
	hw_crash_info(d, ci);
	if (hw_crash_cut(d, cut))
		abort();
	for (int i = 0; i < 4; i++)
		img[i] = at(d, (uint64_t)i) ? (char)at(d, (uint64_t)i) : '.';
	img[4] = 0;
	hw_close(d);
}

TEST(crash_plan_fails_the_power_right_after_a_point)
{
	struct hw_crash_plan p = { .fail_at = 2 };
	struct hw_cut keep = { .kind = HW_CUT_KEEP_ALL };
	struct hw_crash_info ci;
	char img[5];

	/* FUA write 3 completed; write 4 and the last flush came after the
	 * failure: lost even to a cut that keeps everything pending */
	plan_image(&p, &keep, img, &ci);
	CHECK_MSG(!strcmp(img, "123."), "%s", img);
	CHECK(ci.power_off);
	CHECK_EQ(ci.lost, 2);
	CHECK_EQ(ci.plan_points, 2);
	plan_image(&p, NULL, img, &ci);
	CHECK_MSG(!strcmp(img, "1.3."), "%s", img);
}

TEST(crash_plan_fails_the_power_instead_of_a_point)
{
	struct hw_crash_plan p = { .fail_at = 2, .fail_before = true };
	struct hw_cut keep = { .kind = HW_CUT_KEEP_ALL };
	struct hw_crash_info ci;
	char img[5];

	/* the FUA write was in flight: pending, not durable */
	plan_image(&p, NULL, img, &ci);
	CHECK_MSG(!strcmp(img, "1..."), "%s", img);
	CHECK_EQ(ci.pending, 2);
	plan_image(&p, &keep, img, &ci);
	CHECK_MSG(!strcmp(img, "123."), "%s", img);
}

TEST(crash_plan_lying_flush_keeps_nothing_durable)
{
	struct hw_crash_plan p = { .lie_from = 1, .lie_count = 1 };
	struct hw_crash_info ci;
	char img[5];

	/* the first flush lied, but the last one is real */
	plan_image(&p, NULL, img, &ci);
	CHECK_MSG(!strcmp(img, "1234"), "%s", img);
	p.lie_count = 3;
	plan_image(&p, NULL, img, &ci);
	CHECK_MSG(!strcmp(img, "...."), "%s", img);   /* all three lied */
	CHECK(!ci.power_off);
	p.lie_from = 3;                  /* the FUA write stays durable */
	p.lie_count = 1;
	plan_image(&p, NULL, img, &ci);
	CHECK_MSG(!strcmp(img, "1.3."), "%s", img);
}

TEST(crash_plan_ends_at_the_cut_and_is_taken_on_the_zone_model)
{
	struct hw_crash_plan p = { .fail_at = 1 };
	struct hw_crash_info ci;
	struct hw_dev *d = NULL;

	CHECK_OK(hw_open("crash:mem:64k", &d, NULL, 0));
	CHECK_OK(hw_crash_set_plan(d, &p));
	put(d, 0, 'a', 0);
	CHECK_OK(hw_flush(d));
	put(d, 1, 'b', 0);
	CHECK_EQ(hw_crash_set_plan(d, NULL), -EBUSY);
	CHECK_OK(hw_crash_cut(d, NULL));
	put(d, 2, 'c', 0);          /* the power is back: durable at flush */
	CHECK_OK(hw_flush(d));
	CHECK_OK(hw_crash_cut(d, NULL));
	CHECK_OK(hw_crash_info(d, &ci));
	CHECK(!ci.power_off && ci.lost == 0);
	CHECK_EQ(at(d, 0), 'a');
	CHECK_EQ(at(d, 1), 0);
	CHECK_EQ(at(d, 2), 'c');
	hw_close(d);
	/* the zone model undoes what a plan's failure loses (zbd: cannot) */
	CHECK_OK(hw_open("crash:zoned:mem,size=1m,zone=64k", &d, NULL, 0));
	CHECK_OK(hw_crash_set_plan(d, &p));
	hw_close(d);
}

/* ---- the corpus ------------------------------------------------------ */

static uint64_t max_points(void)
{
	const char *e = getenv("FSO_CUT_POINTS");

	if (e)
		return strtoull(e, NULL, 0);
#ifdef TEST_SANITIZED
	return SAN_POINTS;
#else
	return 0;
#endif
}

/* dir (relative to the repository root), from there or next to this file */
static DIR *open_dir(const char *dir, char *path, size_t len)
{
	const char *slash = strrchr(__FILE__, '/');
	DIR *d;

	snprintf(path, len, "%s", dir);
	d = opendir(path);
	if (!d) {
		snprintf(path, len, "%.*s/../%s", slash ? (int)(slash - __FILE__) : 1,
			 slash ? __FILE__ : ".", dir);
		d = opendir(path);
	}
	return d;
}

struct tally {
	struct cutall_stats st;
	unsigned seqs, skipped, rt, own;
	char bad[700];
};

static bool has_cut_ops(const struct op_seq *seq)
{
	for (size_t i = 0; i < seq->n; i++)
		if (seq->ops[i].kind == OP_CUT)
			return true;
	return false;
}

static int cut_file(const char *path, enum cutall_dev dev, int whole,
		    struct tally *t)
{
	struct cutall_cfg cfg = { .name = path, .dev = dev, .subsets = 1,
				  .whole = whole, .seed = 1,
				  .max_points = max_points(), .out = stderr };
	struct cutall_stats st = { 0 };
	struct op_seq seq;
	char err[400] = "";
	int ret;

	op_seq_init(&seq);
	ret = op_load_file(path, OP_FORM_AUTO, NULL, &seq, NULL, err, sizeof(err));
	if (!ret && (seq.hdr.rtdev[0] ||
		     strncmp(seq.hdr.dev, "zoned:", 6) == 0)) {
		/* cutall takes no realtime device and no zoned data device
		 * (it cuts block and pmem images); the log replays in the
		 * corpus tests, and the soak cuts such engines (one power
		 * domain, zoned write pointers rewound) */
		op_seq_free(&seq);
		t->rt++;
		return 0;
	}
	if (!ret && (strncmp(seq.hdr.dev, "crash", 5) == 0 ||
		     has_cut_ops(&seq))) {
		/* a log of its own power cuts (cut ops, or a crash layer
		 * with its own atomic unit): replayed with them by the
		 * corpus tests; cutall's cuts would not be those */
		op_seq_free(&seq);
		t->own++;
		return 0;
	}
	if (!ret)
		ret = cutall_run(&seq, &cfg, &st, err, sizeof(err));
	op_seq_free(&seq);
	cutall_stats_add(&t->st, &st);
	if (ret == -EOPNOTSUPP) {
		t->skipped++;
		fprintf(stderr, "    %s: not cut: %s\n", path, err);
		return 0;
	}
	if (ret) {
		snprintf(t->bad, sizeof(t->bad), "%.300s: %.390s", path, err);
		return ret;
	}
	t->seqs++;
	if (getenv("FSO_CUT_VERBOSE"))
		fprintf(stderr, "    %s [%s]: %llu points, %llu cut, %llu states, "
			"%llu failures %s\n", path, dev == CUTALL_PMEM ? "pmem" : "mem",
			(unsigned long long)st.points,
			(unsigned long long)st.cut_points,
			(unsigned long long)st.states,
			(unsigned long long)st.failures, st.skipped);
	return 0;
}

static int cut_corpus(enum cutall_dev dev, int whole, struct tally *t)
{
	static const char *const dirs[] = { "corpus/regressions", "fuzz/seeds" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char dir[512], path[1024];
		DIR *d = open_dir(dirs[i], dir, sizeof(dir));
		struct dirent *e;
		int ret = 0;

		if (!d) {
			snprintf(t->bad, sizeof(t->bad), "cannot open %s", dirs[i]);
			return -ENOENT;
		}
		while (!ret && (e = readdir(d)) != NULL) {
			size_t l = strlen(e->d_name);

			if (l < 5 || strcmp(e->d_name + l - 4, ".ops"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			ret = cut_file(path, dev, whole, t);
		}
		closedir(d);
		if (ret)
			return ret;
	}
	return 0;
}

static void corpus_on(enum cutall_dev dev, int whole)
{
	struct tally t = { 0 };

	CHECK_MSG(cut_corpus(dev, whole, &t) == 0, "%s", t.bad);
	CHECK_MSG(t.st.failures == 0, "%llu of %llu crash states failed; the "
		  "first: %s", (unsigned long long)t.st.failures,
		  (unsigned long long)t.st.states, t.st.first);
	/* every log is cut but those with a realtime device or on a zoned
	 * device, which cutall refuses, and those of their own power cuts */
	CHECK_EQ(t.skipped, 0);
	CHECK(t.rt + t.own < t.seqs);
	CHECK(t.seqs >= 10);
	CHECK(t.st.cut_points >= t.seqs);
	CHECK_EQ(t.st.states, 2 * t.st.cut_points);
}

TEST(corpus_every_durability_point_cut_on_block_recovers_fsynced_bytes)
{
	corpus_on(CUTALL_MEM, 0);   /* subsets torn in 512-byte sectors */
}

#ifndef FSO_NO_EXTERNAL_LIBS /* MSan builds have no libpmem2 */
TEST(corpus_every_durability_point_cut_on_pmem_recovers_fsynced_bytes)
{
	/* subsets torn in 8-byte stores (headers survive by their copy) */
	corpus_on(CUTALL_PMEM, 0);
}

#endif

/* ---- the check can fail ---------------------------------------------- */

static const char lying_seq[] =
	"open -f f0\n"
	"pwrite 0 40k\n"
	"fsync\n"
	"open -f f1\n"
	"pwrite 0 8k\n"
	"fsync\n";

static void lie(unsigned nth, enum cutall_dev dev, struct cutall_stats *st,
		int *ret)
{
	struct cutall_cfg cfg = { .name = "lying", .dev = dev, .seed = 1,
				  .lie_sync = nth };
	struct op_seq seq;
	char err[400] = "";

	memset(st, 0, sizeof(*st));
	op_seq_init(&seq);
	*ret = op_text_parse(lying_seq, sizeof(lying_seq) - 1, &seq, err,
			     sizeof(err));
	if (!*ret)
		*ret = cutall_run(&seq, &cfg, st, err, sizeof(err));
	if (*ret)
		fprintf(stderr, "    %s\n", err);
	op_seq_free(&seq);
}

/* A device acknowledging the first fsync's flushes without persisting
 * them loses f0's fsynced bytes at some cut; an honest one never. */
TEST(a_device_that_lies_about_one_fsync_loses_fsynced_bytes_and_is_caught)
{
	struct cutall_stats st;
	int ret;

	lie(0, CUTALL_MEM, &st, &ret);
	CHECK_OK(ret);
	CHECK_MSG(st.failures == 0, "%s", st.first);
	CHECK(st.states > 0);
	lie(1, CUTALL_MEM, &st, &ret);
	CHECK_OK(ret);
	CHECK_MSG(st.failures > 0, "%llu states, none failed",
		  (unsigned long long)st.states);
	CHECK_MSG(strstr(st.first, "data mismatch") ||
		  strstr(st.first, "size mismatch"), "%s", st.first);
	CHECK_MSG(strstr(st.first, "f0"), "%s", st.first);
#ifndef FSO_NO_EXTERNAL_LIBS
	lie(1, CUTALL_PMEM, &st, &ret);
	CHECK_OK(ret);
	CHECK_MSG(st.failures > 0, "pmem: %llu states, none failed",
		  (unsigned long long)st.states);
#endif
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
