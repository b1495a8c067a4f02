/*
 * test_harness_engine.c - the engine target through the checker: a seeded
 * soak agrees with the model, fsynced data survives a crash, ops the
 * engine cannot do yet are skipped and reported, every op log in
 * corpus/regressions replays clean on engine + model, a verify that
 * compares an engine through its view (no copy) still finds and reports
 * every byte that differs, and the verify after a crash compares the
 * files adopted from the engine on every other target.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/check.h"
#include "harness/gen.h"
#include "harness/load.h"
#include "harness/runopts.h"
#include "harness/target.h"
#include "harness/text.h"
#include "hw/hw.h"
#include "ref/ref.h"
#include "tests/test.h"

static FILE *report_out; /* where failure reports go; NULL = stderr */
/* Called with the targets once they are open (NULL: nothing). */
static void (*hook_targets)(struct target **t, int n);
static struct check_failure last_failure;
static struct check_stats last_stats;

static int run_seq(const char *list, const struct op_seq *seq,
		   char *skip, size_t skiplen)
{
	struct target *t[TARGET_MAX];
	struct target_env env;
	struct checker *c;
	struct check_cfg cfg = { .out = report_out ? report_out : stderr };
	const char *targets;
	struct runopts o;
	char err[256];
	int n, r;

	runopts_init(&o);
	o.targets = list;
	runopts_resolve(&o, seq, &env, &targets);
	r = target_list_open(targets, &env, t, &n, err, sizeof(err));
	if (r) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	if (hook_targets)
		hook_targets(t, n);
	r = check_new(t, n, &cfg, seq, &c);
	if (!r) {
		r = check_run(c, seq);
		last_failure = *check_failure(c);
		last_stats = *check_stats(c);
		if (skip)
			check_skip_summary(c, skip, skiplen);
		check_free(c);
	}
	target_list_close(t, n);
	return r;
}

static int run_text(const char *list, const char *text, char *skip,
		    size_t skiplen)
{
	struct op_seq seq;
	char err[200];
	int r;

	op_seq_init(&seq);
	r = op_text_parse(text, strlen(text), &seq, err, sizeof(err));
	if (!r)
		r = run_seq(list, &seq, skip, skiplen);
	op_seq_free(&seq);
	return r;
}

TEST(engine_agrees_with_model_on_a_seeded_soak)
{
	struct target *t[2];
	struct checker *c;
	struct check_cfg cfg = { .out = stderr };
	struct gen_cfg gc = { .seed = 77 };
	struct gen g;
	char err[256];
	int n, r = 0;

	CHECK_OK(target_list_open("engine:mem:64m,model", NULL, t, &n, err,
				  sizeof(err)));
	CHECK_OK(check_new(t, n, &cfg, NULL, &c));
	gc.exclude = check_unsupported(c);
	/*
	 * No crashes here: after a crash the engine can leave non-zero bytes
	 * past EOF in the last block, which its own audit rejects (reported
	 * to the engine; fsync-survives-crash.ops covers crash meanwhile).
	 */
	CHECK_OK(gen_parse_weights(&gc, "crash=0", err, sizeof(err)));
	CHECK_OK(gen_init(&g, &gc));
	for (int i = 0; i < 30000 && !r; i++) {
		struct op op;

		gen_next(&g, &op);
		r = check_op(c, &op);
	}
	if (!r)
		r = check_finish(c);
	CHECK_EQ(r, CHECK_OK);
	CHECK(check_stats(c)->audits > 100);
	check_free(c);
	target_list_close(t, n);
}

/*
 * The switch ops reach the engine (and stay across a remount and a
 * crash), the naive target keeps every path naive, the model ignores
 * them, and a reset brings back the mount's switches.
 */
TEST(engine_switch_ops_set_the_paths_and_naive_stays_naive)
{
	const uint32_t rt = 1u << REF_PATH_RT_TRUNCATE;
	struct target_env env = { .mount = "fallback=forget" };
	struct target *t[3];
	char buf[4096], err[256];
	uint32_t nv, fb;
	int n;
	struct op on = { .kind = OP_NAIVE, .arg = rt };
	struct op of = { .kind = OP_FALLBACK, .arg = REF_PATHS_ALL };
	struct op rem = { .kind = OP_REMOUNT }, crash = { .kind = OP_CRASH };

	CHECK_OK(target_list_open("engine,naive,model", &env, t, &n, err,
				  sizeof(err)));
	CHECK_EQ(n, 3);
	ref_get_paths(engine_target_fs(t[1]), &nv, &fb);
	CHECK_EQ(nv, REF_PATHS_ALL);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(target_apply(t[i], &on, 1, buf, sizeof(buf)), 0);
		CHECK_EQ(target_apply(t[i], &of, 2, buf, sizeof(buf)), 0);
	}
	ref_get_paths(engine_target_fs(t[0]), &nv, &fb);
	CHECK_EQ(nv, rt);
	CHECK_EQ(fb, REF_PATHS_ALL);
	ref_get_paths(engine_target_fs(t[1]), &nv, &fb);
	CHECK_EQ(nv, REF_PATHS_ALL);
	CHECK_EQ(fb, REF_PATHS_ALL);
	CHECK_EQ(target_apply(t[0], &rem, 3, buf, sizeof(buf)), 0);
	CHECK_EQ(target_apply(t[0], &crash, 4, buf, sizeof(buf)), 0);
	ref_get_paths(engine_target_fs(t[0]), &nv, &fb);
	CHECK_EQ(nv, rt);
	CHECK_EQ(fb, REF_PATHS_ALL);
	CHECK_OK(t[0]->ops->reset(t[0]));
	ref_get_paths(engine_target_fs(t[0]), &nv, &fb);
	CHECK_EQ(nv, 0);
	CHECK_EQ(fb, 1u << REF_PATH_FORGET);
	/* the model has nothing to switch and creates no file for it */
	{
		uint32_t mask = 1;

		CHECK_OK(t[2]->ops->list(t[2], &mask));
		CHECK_EQ(mask, 0);
	}
	target_list_close(t, n);
}

/* The generator sets the switches now and then, in mixes: the soak of
 * engine, naive twin and model runs with them and agrees. */
TEST(engine_naive_model_soak_runs_switch_mixes)
{
	struct target_env env = { .dev = "mem:64m", .rtdev = "mem:64m",
				  .mkfs = "bs=1k,rtextsize=3k,maxrecs=4" };
	struct target *t[3];
	struct checker *c;
	struct check_cfg cfg = { .out = stderr };
	struct gen_cfg gc = { .seed = 11, .realtime = 1 };
	struct gen g;
	char err[256];
	int n, r = 0, mixes = 0, ops = 0;

	CHECK_OK(target_list_open("engine,naive,model", &env, t, &n, err,
				  sizeof(err)));
	CHECK_OK(check_new(t, n, &cfg, NULL, &c));
	gc.exclude = check_unsupported(c);
	gc.blocksize = t[0]->blocksize;
	CHECK_OK(gen_init(&g, &gc));
	for (int i = 0; i < 20000 && !r; i++) {
		struct op op;

		gen_next(&g, &op);
		if (op.kind == OP_NAIVE || op.kind == OP_FALLBACK) {
			ops++;
			mixes += op.arg != 0 && op.arg != REF_PATHS_ALL;
		}
		r = check_op(c, &op);
	}
	if (!r)
		r = check_finish(c);
	CHECK_EQ(r, CHECK_OK);
	CHECK_MSG(ops > 50 && mixes > ops / 2, "%d switch ops, %d mixes", ops,
		  mixes);
	check_free(c);
	target_list_close(t, n);
}

TEST(engine_fsynced_file_survives_a_crash)
{
	CHECK_EQ(run_text("engine,model",
			  "open -f keep\npwrite 0 64k\nfsync\n"
			  "open -f churn\npwrite 0 64k\ntruncate 1000\ncrash\n"
			  "file keep\npread 0 64k\n", NULL, 0), CHECK_OK);
}

TEST(engine_unsupported_ops_are_skipped_and_named)
{
	char skip[400];

	/* collapse, insert, copy range and chattr run on the engine; reflink
	 * waits for the COW issue */
	CHECK_EQ(run_text("engine,model", "pwrite 0 16k\nfcollapse 0 4k\n"
			  "finsert 0 4k\ncopy_range -s 0 -d 32k -l 4k f0\n"
			  "reflink f0 0 64k 4k\nchattr +r\npread 0 16k\n",
			  skip, sizeof(skip)), CHECK_OK);
	CHECK_MSG(strstr(skip, "skipped 1 of 7 ops: "), "%s", skip);
	CHECK_MSG(strstr(skip, "reflink x1"), "%s", skip);
	CHECK_MSG(!strstr(skip, "fcollapse") && !strstr(skip, "copy_range") &&
		  !strstr(skip, "chattr"), "%s", skip);
}

/* corpus/regressions, from the repository root or next to this file. */
static DIR *open_corpus(char *dir, size_t len)
{
	const char *env = getenv("FSORACLE_CORPUS");
	DIR *d;

	snprintf(dir, len, "%s", env ? env : "corpus/regressions");
	d = opendir(dir);
	if (!d && !env) {
		const char *slash = strrchr(__FILE__, '/');

		snprintf(dir, len, "%.*s/../corpus/regressions",
			 slash ? (int)(slash - __FILE__) : 1,
			 slash ? __FILE__ : ".");
		d = opendir(dir);
	}
	return d;
}

/*
 * Does a log's header ask for a library this build was made without
 * (FSO_NO_EXTERNAL_LIBS, the MSan and OSS-Fuzz builds: no zstd)?  Such a
 * log is left to the builds that have it; mount would refuse it.
 */
static bool needs_missing_lib(const char *text)
{
#ifdef FSO_NO_EXTERNAL_LIBS
	const char *nl = strchr(text, '\n'), *z = strstr(text, "compress=zstd");

	return !strncmp(text, "#!", 2) && z && (!nl || z < nl);
#else
	(void)text;
	return false;
#endif
}

TEST(corpus_regressions_replay_clean_on_engine_and_model)
{
	char dir[512];
	DIR *d = open_corpus(dir, sizeof(dir));
	struct dirent *e;
	int count = 0;

	CHECK_MSG(d, "cannot open %s", dir);
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		struct op_seq seq;
		char path[1024], err[400] = "";
		int r;

		if (l < 5 || strcmp(e->d_name + l - 4, ".ops"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		op_seq_init(&seq);
		r = op_load_file(path, OP_FORM_AUTO, NULL, &seq, NULL, err,
				 sizeof(err));
		if (!r) {
			/* Comments say what each guards: no silent files. */
			char *text = NULL;
			size_t len;

			if (op_read_file(path, &text, &len) == 0 &&
			    !strstr(text, "# Guards:"))
				r = -ENOMSG;
			if (!r && text && needs_missing_lib(text)) {
				free(text);
				op_seq_free(&seq);
				continue;
			}
			free(text);
		}
		if (!r)
			r = run_seq("engine,model", &seq, NULL, 0);
		op_seq_free(&seq);
		if (r)
			closedir(d);
		CHECK_MSG(r == 0, "%s: %d %s", path, r, r == -ENOMSG ?
			  "(no '# Guards:' comment)" : err);
		count++;
	}
	closedir(d);
	CHECK(count >= 5);
}

/* Every planted bug must make at least one corpus log fail: the corpus
 * really guards what its comments say. */
TEST(corpus_catches_every_planted_bug)
{
	static const char *const bugs[] = { "trunc_tail", "punch_short",
		"zero_keep_size", "collapse_eio", "audit_unlink" };

	for (size_t b = 0; b < sizeof(bugs) / sizeof(bugs[0]); b++) {
		char dir[512], list[64];
		DIR *d = open_corpus(dir, sizeof(dir));
		struct dirent *e;
		FILE *quiet = fopen("/dev/null", "w");
		int caught = 0;

		CHECK_MSG(d && quiet, "cannot open %s", dir);
		snprintf(list, sizeof(list), "model,planted:%s", bugs[b]);
		while (!caught && (e = readdir(d)) != NULL) {
			size_t l = strlen(e->d_name);
			struct op_seq seq;
			char path[1024], err[400];

			if (l < 5 || strcmp(e->d_name + l - 4, ".ops"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			op_seq_init(&seq);
			if (op_load_file(path, OP_FORM_AUTO, NULL, &seq, NULL, err,
					 sizeof(err)) == 0) {
				/* the expected failure reports go nowhere */
				report_out = quiet;
				caught = run_seq(list, &seq, NULL, 0) > 0;
				report_out = NULL;
			}
			op_seq_free(&seq);
		}
		closedir(d);
		fclose(quiet);
		CHECK_MSG(caught, "no corpus log catches planted:%s", bugs[b]);
	}
}

/*
 * engine_target_formatted: the next reset mounts what the device holds
 * instead of making the filesystem (a device whose superblock is gone
 * then fails to mount, and with fewer writes than a mkfs), once; a round
 * with mkfs options of its own makes its filesystem whatever was said.
 */
TEST(a_formatted_engine_resets_by_mounting_once)
{
	struct target_env env = { 0 };
	struct target *t[1];
	struct ref_statfs st;
	struct hw_dev *dev;
	char err[256];
	uint64_t w0, mount_writes;
	int n;

	CHECK_OK(target_list_open("engine:mem:8m", &env, t, &n, err,
				  sizeof(err)));
	dev = engine_target_dev(t[0]);
	CHECK_OK(engine_target_format(t[0]));
	CHECK(engine_target_fs(t[0]) == NULL);
	engine_target_formatted(t[0]);
	w0 = dev->ctr.writes;
	CHECK_OK(t[0]->ops->reset(t[0]));
	mount_writes = dev->ctr.writes - w0;
	CHECK(engine_target_fs(t[0]) != NULL);
	/* once: the next reset makes the filesystem, writing more */
	w0 = dev->ctr.writes;
	CHECK_OK(t[0]->ops->reset(t[0]));
	CHECK(dev->ctr.writes - w0 > mount_writes);
	/* only mounted: the superblock zeroed after the format is seen */
	CHECK_OK(engine_target_format(t[0]));
	CHECK_OK(hw_zero_out(dev, 0, 4096, 0));
	engine_target_formatted(t[0]);
	CHECK(t[0]->ops->reset(t[0]) != 0);
	CHECK(engine_target_fs(t[0]) == NULL);
	CHECK_OK(t[0]->ops->reset(t[0]));
	CHECK(engine_target_fs(t[0]) != NULL);
	/* a round's own mkfs options make its filesystem */
	CHECK_OK(engine_target_format(t[0]));
	engine_target_formatted(t[0]);
	CHECK_OK(t[0]->ops->set_round(t[0], "bs=1024", ""));
	CHECK_OK(t[0]->ops->reset(t[0]));
	CHECK_OK(ref_statfs(engine_target_fs(t[0]), &st));
	CHECK_EQ(st.blocksize, 1024);
	target_list_close(t, n);
}

/* Someone's image (keep_image) is never made again by a format. */
TEST(a_kept_image_is_not_formatted)
{
	char path[] = "/tmp/fsoracle-keep-XXXXXX", list[96], err[256];
	struct target_env env = { .keep_image = 1 };
	struct target *t[1];
	struct hw_dev *d = NULL;
	int fd = mkstemp(path), n;

	CHECK(fd >= 0);
	close(fd);
	snprintf(list, sizeof(list), "engine:file:%s,size=8m", path);
	CHECK_OK(hw_open(list + strlen("engine:"), &d, err, sizeof(err)));
	CHECK_OK(ref_mkfs(d, NULL));
	hw_close(d);
	CHECK_OK(target_list_open(list, &env, t, &n, err, sizeof(err)));
	CHECK_EQ(engine_target_format(t[0]), -EOPNOTSUPP);
	CHECK(engine_target_fs(t[0]) != NULL);
	target_list_close(t, n);
	unlink(path);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}

/*
 * The naive engine with one byte of file f0 other than it holds, at
 * bad_off: in what its view hands over (view_bad), in what it reads
 * (read_bad), or both.  Its views are counted.
 */
static struct target_ops bad_ops;
static const struct target_ops *good_ops;
static uint64_t bad_off;
static int view_bad, read_bad;
static unsigned views;
static target_view_fn inner_fn;
static void *inner_arg;

static void flip_piece(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	uint8_t copy[65536];

	(void)arg;
	if (!view_bad || bad_off < off || bad_off >= off + n ||
	    n > sizeof(copy)) {
		inner_fn(inner_arg, off, p, n);
		return;
	}
	if (p)
		memcpy(copy, p, n);
	else
		memset(copy, 0, n);
	copy[bad_off - off] ^= 0x5a;
	inner_fn(inner_arg, off, copy, n);
}

static int64_t bad_view(struct target *t, unsigned file, uint64_t off,
			size_t len, target_view_fn fn, void *arg)
{
	views++;
	inner_fn = fn;
	inner_arg = arg;
	return good_ops->view(t, file, off, len, file == 0 ? flip_piece : fn,
			      arg);
}

static int64_t bad_read(struct target *t, unsigned file, uint64_t off,
			void *buf, size_t len)
{
	int64_t r = good_ops->read(t, file, off, buf, len);

	if (read_bad && file == 0 && r > 0 && bad_off >= off &&
	    bad_off < off + (uint64_t)r)
		((uint8_t *)buf)[bad_off - off] ^= 0x5a;
	return r;
}

static void make_naive_bad(struct target **t, int n)
{
	for (int i = 0; i < n; i++) {
		if (strncmp(t[i]->name, "naive:", 6))
			continue;
		good_ops = t[i]->ops;
		bad_ops = *good_ops;
		bad_ops.view = bad_view;
		bad_ops.read = bad_read;
		t[i]->ops = &bad_ops;
	}
}

/* text on engine, naive and model, the naive engine's f0 bad at off
 * in its view, its reads or both */
static int run_bad_text(const char *text, int in_view, int in_read,
			uint64_t off)
{
	int r;

	view_bad = in_view;
	read_bad = in_read;
	bad_off = off;
	views = 0;
	hook_targets = make_naive_bad;
	r = run_text("engine,naive,model", text, NULL, 0);
	hook_targets = NULL;
	return r;
}

static int run_bad(int in_view, int in_read, uint64_t off)
{
	/* no pread to see it: the verifies at the remount and the end must */
	static const char text[] =
		"#! fsoracle dev=mem:64m mount=pagecache=8\n"
		"file f0\npwrite 0 100k\nfpunch 20k 8k\nremount\n"
		"file f1\npwrite 0 4k\n";

	return run_bad_text(text, in_view, in_read, off);
}

TEST(verify_through_an_engines_view_reports_the_bytes_it_reads)
{
	FILE *saved = report_out;

	report_out = fopen("/dev/null", "w");
	CHECK(report_out != NULL);
	/* healthy: every engine piece compared through the view */
	CHECK_EQ(run_bad(0, 0, 0), CHECK_OK);
	CHECK(views > 0);
	/* a byte that differs, in data, in the punched hole and past the
	 * first 64 KiB piece: found by the verify at the remount, named at
	 * its offset on the naive engine */
	static const uint64_t offs[] = { 0, 4097, 20 * 1024 + 5, 70000,
					 100 * 1024 - 1 };
	for (unsigned k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		CHECK_EQ(run_bad(1, 1, offs[k]), CHECK_DATA);
		CHECK_EQ(last_failure.opno, 3);
		CHECK(last_failure.at_verify);
		CHECK_EQ(last_failure.offset, offs[k]);
		CHECK_MSG(!strncmp(last_failure.bad, "naive:", 6), "%s",
			  last_failure.bad);
		CHECK_MSG(strstr(last_failure.what, "verify: bytes differ"),
			  "%s", last_failure.what);
	}
	/* a view that hands over other bytes than a read gives is our bug */
	CHECK_EQ(run_bad(1, 0, 70000), CHECK_INTERNAL);
	CHECK_MSG(strstr(last_failure.what, "'s view of bytes 65536-"),
		  "%s", last_failure.what);
	fclose(report_out);
	report_out = saved;
}

/*
 * After a crash the model is mended in place to the files the engine
 * recovered, comparing every byte of them: the verify that follows
 * compares them on the engine no more, but still on every other target,
 * and still every durable file everywhere.
 */
TEST(verify_after_a_crash_compares_the_adopted_files_on_the_others_only)
{
	/* f1 durable (compared at the crash's verify), f0 rewritten and
	 * adopted (not compared again on the engine), then both at the end */
	static const char text[] =
		"#! fsoracle dev=mem:64m mount=pagecache=8\n"
		"file f0\npwrite 0 100k\nfsync\npwrite 20k 50k\n"
		"file f1\npwrite 0 10k\nfsync\ncrash\n";
	FILE *saved = report_out;

	CHECK_EQ(run_text("engine,model", text, NULL, 0), CHECK_OK);
	CHECK_EQ(last_stats.bytes_compared, (10 + 10 + 100) * 1024);
	CHECK_EQ(last_stats.adopt_mended + last_stats.adopt_kept, 1);
	/* a second engine's copy of f0 is compared at that verify: a naive
	 * engine that reads f0 wrong after the crash is caught there */
	CHECK_EQ(run_bad_text(text, 0, 0, 0), CHECK_OK);
	CHECK_EQ(last_stats.bytes_compared, (10 + 100 + 10 + 100) * 1024);
	report_out = fopen("/dev/null", "w");
	CHECK(report_out != NULL);
	CHECK_EQ(run_bad_text(text, 1, 1, 4097), CHECK_DATA);
	CHECK_EQ(last_failure.opno, 6); /* the crash */
	CHECK(last_failure.at_verify);
	CHECK_EQ(last_failure.offset, 4097);
	CHECK_MSG(!strncmp(last_failure.bad, "naive:", 6), "%s",
		  last_failure.bad);
	fclose(report_out);
	report_out = saved;
}

