/*
 * test_harness_space.c - running out of space, judged: an ENOSPC with too
 * little room left is accepted on every target alike and the run goes
 * on in step; one with room left is a bug (planted:enospc_room); and the
 * checker's adoption of a file (after a crash or an accepted ENOSPC)
 * never asks the destination for more space than the source holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "harness/rng.h"
#include "harness/runopts.h"
#include "harness/target.h"
#include "harness/text.h"
#include "ref/ref.h"
#include "tests/test.h"

struct rig {
	struct target *t[TARGET_MAX];
	int n;
	struct checker *c;
	struct op_seq seq;
};

/* Open the targets and a checker for text (its header sets devices). */
static int rig_open(struct rig *r, const char *list, const char *text)
{
	struct check_cfg cfg = { .quiet = 1 };
	struct target_env env;
	const char *targets;
	struct runopts o;
	char err[256];
	int ret;

	memset(r, 0, sizeof(*r));
	op_seq_init(&r->seq);
	ret = op_text_parse(text, strlen(text), &r->seq, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "parse: %s\n", err);
		return ret;
	}
	runopts_init(&o);
	o.targets = list;
	runopts_resolve(&o, &r->seq, &env, &targets);
	ret = target_list_open(targets, &env, r->t, &r->n, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", targets, err);
		return ret;
	}
	return check_new(r->t, r->n, &cfg, &r->seq, &r->c);
}

static void rig_close(struct rig *r)
{
	check_free(r->c);
	target_list_close(r->t, r->n);
	op_seq_free(&r->seq);
}

/* Three files of 1 MiB on a 2 MiB device: the engines run out, the model
 * cannot; after the crash and more writes everything still agrees. */
static const char full_device[] =
	"#! fsoracle dev=mem:2m\n"
	"file f0\npwrite 0 1m\n"
	"file f1\npwrite 0 1m\n"
	"file f2\npwrite 0 1m\n"
	"file f1\nfsync\ncrash\n"
	"file f0\ntruncate 0\n"
	"file f2\npwrite 64k 64k\n";

TEST(enospc_without_room_is_accepted_and_targets_stay_in_step)
{
	struct rig r;

	CHECK_OK(rig_open(&r, "engine,naive,model", full_device));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_OK);
	CHECK(check_stats(r.c)->enospc > 0);
	CHECK(!check_stalled(r.c));
	/* every target holds what the full engine kept of f2 */
	for (int i = 1; i < r.n; i++)
		CHECK_EQ(r.t[i]->ops->size(r.t[i], 2), r.t[0]->ops->size(r.t[0], 2));
	CHECK(r.t[0]->ops->size(r.t[0], 2) < (1 << 20));
	rig_close(&r);
}

/* planted:enospc_room refuses op opno of text with room left: a bug
 * (a failed check is recorded, and the test's own checks go on). */
static void room_left_is_a_bug(const char *text, uint64_t opno)
{
	struct rig r;

	CHECK_OK(rig_open(&r, "model,planted:enospc_room", text));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_ERRNO);
	CHECK(strstr(check_failure(r.c)->what, "with room left"));
	CHECK_EQ(check_failure(r.c)->opno, opno);
	rig_close(&r);
}

TEST(enospc_with_room_left_is_a_bug)
{
	room_left_is_a_bug(full_device, 1);
}

/*
 * An engine with an inode table of 2 cannot create a third file (ENFILE)
 * where the model can: no bug, since it has no free inode, but the
 * targets are out of step for good, so the checker stalls.  A target that
 * refuses a file with 1000 inodes free (planted:enfile_room) is a bug.
 */
static const char three_files[] =
	"#! fsoracle dev=mem:8m mkfs=inodes=2\n"
	"file f0\npwrite 0 1k\n"
	"file f1\npwrite 0 1k\n"
	"file f2\npwrite 0 1k\n"
	"file f0\npwrite 1k 1k\n";

TEST(enfile_without_free_inodes_stalls_and_with_them_is_a_bug)
{
	struct rig r;

	CHECK_OK(rig_open(&r, "engine,model", three_files));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_OK);
	CHECK(check_stalled(r.c));
	CHECK_EQ(check_stats(r.c)->stalls, 1);
	rig_close(&r);
	CHECK_OK(rig_open(&r, "model,planted:enfile_room", three_files));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_ERRNO);
	CHECK(strstr(check_failure(r.c)->what, "with 1000 free inodes"));
	CHECK_EQ(check_failure(r.c)->opno, 3);
	rig_close(&r);
}

/*
 * An exchange maps every record of both ranges into the other file: on
 * files mapped a block a record the engine reserves room for a split of
 * every level of a tree per record, or for what the trees can grow by,
 * and refuses here with 1.6 MB free, which the checker accepts for the
 * trees the engine reports.  A target that reports 1 GiB of room and
 * refuses an exchange of 64 KiB is still a bug.
 */
TEST(an_exchange_is_judged_with_room_for_its_extent_trees)
{
	static const char one_block_records[] =
		"#! fsoracle dev=mem:6m mkfs=bs=1024,maxrecs=5,maxext=1,"
		"inodes=64\n"
		"fzero 0 388k\npwrite 388k 736k\n"
		"file f1\npwrite 0 884k\n"
		"file f3\nfalloc 0 848k\n"
		"file f1\nexchangerange -s 0 -d 0 -l 296k f0\n";
	struct rig r;

	room_left_is_a_bug("file f0\npwrite 0 32k\npwrite 32k 32k\n"
			   "file f1\npwrite 0 32k\npwrite 32k 32k\n"
			   "exchangerange -s 0 -d 0 -l 64k f0\n", 5);
	CHECK_OK(rig_open(&r, "engine,naive,model", one_block_records));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_OK);
	CHECK_EQ(check_stats(r.c)->enospc, 1);
	rig_close(&r);
}

/*
 * The room for extent maps is judged in blocks where blocks are large:
 * at 64 KiB a block, 1 MiB is 16 of them, fewer than the engine keeps
 * back for its trees (the B+tree reserve and the floor a delalloc
 * write's mappings need), so a realtime file's first delalloc write on a
 * 6 MiB data device was refused with 1.7 MiB free and reported as a bug.
 */
TEST(a_metadata_margin_counts_blocks_where_they_are_large)
{
	static const char big_blocks[] =
		"#! fsoracle dev=mem:6m rt=mem:4m mkfs=bs=64k,journal=64,"
		"inodes=64 mount=data=writeback,delalloc\n"
		"chattr +r\nfile f1\nchattr +r\nfile f2\nchattr +r\n"
		"file f3\nchattr +r\nfile f0\npwrite 80384 424\n";
	struct rig r;

	CHECK_OK(rig_open(&r, "engine,naive,model", big_blocks));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_OK);
	CHECK(check_stats(r.c)->enospc > 0);
	rig_close(&r);
}

/*
 * An exchange that runs out takes each file's own range: the source
 * file's from the source offset, the destination's from the destination
 * offset.  With the two offsets apart, taking either from the other's
 * offset leaves the model's exchanged bytes below it, and the run's
 * verify reports them.
 */
TEST(an_exchange_that_runs_out_takes_each_file_from_its_own_offset)
{
	static const char apart[] =
		"#! fsoracle dev=mem:6m mkfs=bs=1024,maxrecs=5,maxext=1,"
		"inodes=64\n"
		"fzero 0 388k\npwrite 388k 736k\n"
		"file f1\npwrite 0 884k\n"
		"file f3\nfalloc 0 848k\n"
		"file f1\nexchangerange -s 0 -d 128k -l 296k f0\n";
	static const char apart_other_way[] =
		"#! fsoracle dev=mem:6m mkfs=bs=1024,maxrecs=5,maxext=1,"
		"inodes=64\n"
		"fzero 0 388k\npwrite 388k 736k\n"
		"file f1\npwrite 0 884k\n"
		"file f3\nfalloc 0 848k\n"
		"file f1\nexchangerange -s 128k -d 0 -l 296k f0\n";
	const char *texts[] = { apart, apart_other_way };

	for (int i = 0; i < 2; i++) {
		struct rig r;

		CHECK_OK(rig_open(&r, "engine,model", texts[i]));
		CHECK_EQ(check_run(r.c, &r.seq), CHECK_OK);
		CHECK_EQ(check_stats(r.c)->enospc, 1);
		CHECK_EQ(check_verify(r.c), CHECK_OK);
		rig_close(&r);
	}
}

/*
 * An accepted ENOSPC makes the others take what the op may have left
 * different (its range), not the whole file: bytes the targets held
 * differently before it, elsewhere in the file, are a bug the next
 * verify reports, never something the match copies over.  Here the
 * engine's first 4 KiB of f0 are changed behind the checker's back;
 * then a pwrite past them runs out on the engine.
 */
TEST(an_accepted_enospc_takes_only_the_range_the_op_wrote)
{
	static const char text[] =
		"#! fsoracle dev=mem:2m\n"
		"file f0\npwrite 0 256k\nsync\n";
	struct op w = { .kind = OP_PWRITE, .file = 0, .off = 0, .len = 4096,
			.flags = OP_FL_PATTERN, .pattern = 9 };
	struct op big = { .kind = OP_PWRITE, .file = 0, .off = 256 << 10,
			  .len = 4 << 20 };
	uint8_t *buf = malloc(1 << 16);
	struct rig r;

	CHECK(buf != NULL);
	CHECK_OK(rig_open(&r, "engine,model", text));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_OK);
	CHECK_EQ(target_apply(r.t[0], &w, 99, buf, 1 << 16), 4096);
	CHECK_EQ(check_op(r.c, &big), CHECK_OK);
	CHECK_EQ(check_stats(r.c)->enospc, 1);
	/* both stopped where the engine did, 4 MiB would not fit in 2 */
	CHECK_EQ(r.t[1]->ops->size(r.t[1], 0), r.t[0]->ops->size(r.t[0], 0));
	CHECK(r.t[0]->ops->size(r.t[0], 0) < (2 << 20));
	CHECK_EQ(check_verify(r.c), CHECK_DATA);
	CHECK_EQ(check_failure(r.c)->file, 0);
	CHECK_MSG(check_failure(r.c)->offset < 4096, "first difference at %llu",
		  (unsigned long long)check_failure(r.c)->offset);
	rig_close(&r);
	free(buf);
}

static uint64_t blocks_of(struct target *t, const char *name)
{
	struct ref_fs *fs = engine_target_fs(t);
	struct ref_stat st;
	uint64_t ino;

	if (!fs || ref_lookup(fs, name, &ino) || ref_stat(fs, ino, &st))
		return ~0ull;
	return st.blocks;
}

struct kinds {
	uint64_t data, unwritten;
};

static int count_range(void *arg, const struct target_range *g)
{
	struct kinds *k = arg;

	if (g->kind == TARGET_RANGE_UNWRITTEN)
		k->unwritten += g->len;
	else
		k->data += g->len;
	return 0;
}

/* Engines (targets: "engine,engine", ...) on the devices of text's
 * header; text's ops applied to the first `onto` of them.  0 or -errno. */
static int engines(const char *text, const char *list, int onto,
		   struct target **t, int *n, uint8_t *buf)
{
	struct target_env env;
	const char *targets;
	struct runopts o;
	struct op_seq seq;
	char err[256];
	int ret;

	op_seq_init(&seq);
	ret = op_text_parse(text, strlen(text), &seq, err, sizeof(err));
	runopts_init(&o);
	o.targets = list;
	runopts_resolve(&o, &seq, &env, &targets);
	if (!ret)
		ret = target_list_open(targets, &env, t, n, err, sizeof(err));
	for (int i = 0; i < onto && !ret; i++)
		for (size_t j = 0; j < seq.n && !ret; j++)
			if (target_apply(t[i], &seq.ops[j], j + 1, buf, 1 << 16) < 0)
				ret = -EIO;
	if (ret)
		fprintf(stderr, "engines: %s\n", err);
	op_seq_free(&seq);
	return ret;
}

TEST(copy_keeps_holes_and_unwritten_space_as_the_source_has_them)
{
	static const char text[] =
		"#! fsoracle dev=mem:64m\n"
		"file f0\n"
		"pwrite 0 1\n"              /* one block, almost all zeros */
		"pwrite -S 0 1m 64k\n"      /* written zeros: kept written */
		"falloc -k 4m 256k\n"       /* unwritten past EOF */
		"pwrite 8m 4096\n"
		"file f1\npwrite 0 16m\n"   /* dst's old contents, all freed */
		"sync\n";
	struct target *t[TARGET_MAX];
	struct kinds ks = { 0 }, kd = { 0 };
	uint8_t *buf = malloc(1 << 16), *a = malloc(1 << 16), *b = malloc(1 << 16);
	int n;

	CHECK(buf && a && b);
	CHECK_OK(engines(text, "engine,engine", 1, t, &n, buf));
	/* dst's f0 is f1 of the source's size in data: copy over it */
	{
		struct op w = { .kind = OP_PWRITE, .file = 0, .len = 12 << 20 };

		CHECK(target_apply(t[1], &w, 1, buf, 1 << 16) == 12 << 20);
	}
	CHECK_OK(target_copy_file(t[1], t[0], 0, buf, 1 << 16));
	CHECK_EQ(t[1]->ops->size(t[1], 0), t[0]->ops->size(t[0], 0));
	CHECK_EQ(blocks_of(t[1], "f0"), blocks_of(t[0], "f0"));
	CHECK_EQ(blocks_of(t[0], "f0"), 1 + 16 + 64 + 1);
	CHECK_OK(t[0]->ops->ranges(t[0], 0, count_range, &ks));
	CHECK_OK(t[1]->ops->ranges(t[1], 0, count_range, &kd));
	CHECK_EQ(kd.data, ks.data);
	CHECK_EQ(kd.unwritten, ks.unwritten);
	CHECK_EQ(kd.unwritten, 256 << 10);
	for (uint64_t off = 0; off < (uint64_t)t[0]->ops->size(t[0], 0);
	     off += 1 << 16) {
		int64_t x = t[0]->ops->read(t[0], 0, off, a, 1 << 16);

		CHECK_EQ(t[1]->ops->read(t[1], 0, off, b, 1 << 16), x);
		CHECK(x > 0 && !memcmp(a, b, (size_t)x));
	}
	target_list_close(t, n);
	free(buf);
	free(a);
	free(b);
}

/* The bytes of file f0 equal on targets a and b (size and every byte). */
static int same_file(struct target *a, struct target *b, unsigned f,
		     uint8_t *x, uint8_t *y)
{
	int64_t size = a->ops->size(a, f);

	if (size < 0 || b->ops->size(b, f) != size)
		return 0;
	for (uint64_t off = 0; off < (uint64_t)size; off += 1 << 16) {
		int64_t r = a->ops->read(a, f, off, x, 1 << 16);

		if (r <= 0 || b->ops->read(b, f, off, y, 1 << 16) != r ||
		    memcmp(x, y, (size_t)r))
			return 0;
	}
	return 1;
}

/*
 * A copy to several targets reads the source once: the source's reads
 * from its device are those of a copy to one target.  A target that runs
 * out of room is named (the copy stops there for all of them).
 */
TEST(copy_to_several_targets_reads_the_source_once)
{
	static const char text[] =
		"#! fsoracle dev=mem:64m mount=pagecache=0\n"
		"file f0\npwrite 0 100k\nfalloc -k 1m 64k\n"
		"file f1\npwrite 0 16m\nsync\n";
	struct target *t[TARGET_MAX];
	const struct ref_counters *k;
	uint8_t *buf = malloc(1 << 16), *x = malloc(1 << 16), *y = malloc(1 << 16);
	uint64_t one, two;
	int n, failed = -1;

	CHECK(buf && x && y);
	CHECK_OK(engines(text, "engine,engine,engine", 1, t, &n, buf));
	CHECK_EQ(n, 3);
	k = ref_counters(engine_target_fs(t[0]));
	one = k->data_bytes_read;
	CHECK_OK(target_copy_file_n(&t[1], 1, t[0], 0, buf, 1 << 16, &failed));
	one = k->data_bytes_read - one;
	two = k->data_bytes_read;
	CHECK_OK(target_copy_file_n(&t[1], 2, t[0], 0, buf, 1 << 16, &failed));
	two = k->data_bytes_read - two;
	CHECK(one >= 100 << 10);
	CHECK_EQ(two, one);
	CHECK(same_file(t[0], t[1], 0, x, y));
	CHECK(same_file(t[0], t[2], 0, x, y));
	/* f1 (16 MiB) does not fit beside 56 MiB on the third target */
	{
		struct op w = { .kind = OP_PWRITE, .file = 2, .len = 56 << 20 };

		CHECK_EQ(target_apply(t[2], &w, 1, buf, 1 << 16), 56 << 20);
	}
	CHECK_EQ(target_copy_file_n(&t[1], 2, t[0], 1, buf, 1 << 16, &failed),
		 -ENOSPC);
	CHECK_EQ(failed, 1);
	target_list_close(t, n);
	free(buf);
	free(x);
	free(y);
}

TEST(match_writes_only_where_files_differ)
{
	static const char text[] =
		"#! fsoracle dev=mem:64m mount=pagecache=0\n"
		"file f0\npwrite 0 1m\nsync\n";
	struct target *t[TARGET_MAX];
	const struct ref_counters *k;
	uint8_t *buf = malloc(1 << 16);
	uint64_t before;
	int n;

	CHECK(buf);
	CHECK_OK(engines(text, "engine,engine", 2, t, &n, buf));
	{
		/* dst one sector different and 4k longer */
		struct op w = { .kind = OP_PWRITE, .file = 0, .off = 5000,
				.len = 10, .flags = OP_FL_PATTERN, .pattern = 7 };
		struct op g = { .kind = OP_PWRITE, .file = 0, .off = 1 << 20,
				.len = 4096 };

		CHECK_EQ(target_apply(t[1], &w, 9, buf, 1 << 16), 10);
		CHECK_EQ(target_apply(t[1], &g, 9, buf, 1 << 16), 4096);
	}
	k = ref_counters(engine_target_fs(t[1]));
	before = k->data_bytes_written;
	CHECK_OK(target_match_file(t[1], t[0], 0, 0, UINT64_MAX, buf, 1 << 16));
	CHECK_EQ(t[1]->ops->size(t[1], 0), 1 << 20);
	/* one sector differs: at most its block is written, not 1 MiB */
	CHECK_MSG(k->data_bytes_written - before <= 4096, "%llu bytes written",
		  (unsigned long long)(k->data_bytes_written - before));
	CHECK(k->data_bytes_written > before);
	target_list_close(t, n);
	free(buf);
}

/*
 * Which targets hold a file as the source does: the same size, bytes
 * and (between engines) written and unwritten ranges; missing on both
 * counts as the same.  A model is compared through its peek.
 */
TEST(same_file_tells_the_targets_that_hold_the_source_file)
{
	static const char text[] =
		"#! fsoracle dev=mem:64m mount=pagecache=0\n"
		"file f0\npwrite 0 100k\npwrite -S 0 200k 8k\n"
		"falloc -k 1m 64k\nfile f1\npwrite 0 4k\nsync\n";
	struct target *t[TARGET_MAX];
	uint8_t *buf = malloc(1 << 16);
	uint32_t same = ~0u;
	int n;

	CHECK(buf);
	CHECK_OK(engines(text, "engine,engine,model", 3, t, &n, buf));
	CHECK_EQ(n, 3);
	CHECK_OK(target_same_file_n(&t[1], 2, t[0], 0, buf, 1 << 16, &same));
	CHECK_EQ(same, 3u);
	/* f2 exists nowhere: the same everywhere */
	CHECK_OK(target_same_file_n(&t[1], 2, t[0], 2, buf, 1 << 16, &same));
	CHECK_EQ(same, 3u);
	{
		/* the model's last byte of f0 differs */
		struct op w = { .kind = OP_PWRITE, .file = 0, .off = 208 * 1024 - 1,
				.len = 1, .flags = OP_FL_PATTERN, .pattern = 9 };

		CHECK_EQ(target_apply(t[2], &w, 50, buf, 1 << 16), 1);
	}
	CHECK_OK(target_same_file_n(&t[1], 2, t[0], 0, buf, 1 << 16, &same));
	CHECK_EQ(same, 1u);
	{
		/* the second engine's written zeros become unwritten space:
		 * the same bytes, not the same ranges */
		struct op z = { .kind = OP_FZERO, .file = 0, .off = 200 * 1024,
				.len = 4096 };

		CHECK_EQ(target_apply(t[1], &z, 51, buf, 1 << 16), 0);
	}
	CHECK_OK(target_same_file_n(&t[1], 1, t[0], 0, buf, 1 << 16, &same));
	CHECK_EQ(same, 0u);
	/* f1: the model one byte longer; the engine without it */
	{
		struct op g = { .kind = OP_TRUNCATE, .file = 1, .arg = 4097 };
		struct op u = { .kind = OP_UNLINK, .file = 1 };

		CHECK_EQ(target_apply(t[2], &g, 52, buf, 1 << 16), 0);
		CHECK_EQ(target_apply(t[1], &u, 53, buf, 1 << 16), 0);
	}
	CHECK_OK(target_same_file_n(&t[1], 2, t[0], 1, buf, 1 << 16, &same));
	CHECK_EQ(same, 0u);
	target_list_close(t, n);
	free(buf);
}

/*
 * The model mended in the pass that compares: cut or extended to the
 * source's size and written where it differs, the source read once; a
 * target not in the mend mask is only judged; a file the model lacks is
 * left to the copy.
 */
TEST(mend_makes_the_model_hold_the_source_file_in_the_same_pass)
{
	static const char text[] =
		"#! fsoracle dev=mem:64m mount=pagecache=0\n"
		"file f0\npwrite 0 100k\npwrite -S 0 200k 8k\n"
		"file f1\npwrite 0 40k\nfile f2\npwrite 0 4k\nsync\n";
	struct target *t[TARGET_MAX];
	const struct ref_counters *k;
	uint8_t *buf = malloc(1 << 16), *x = malloc(1 << 20),
		*y = malloc(1 << 20);
	uint32_t same, mended;
	uint64_t before;
	int n;

	CHECK(buf && x && y);
	CHECK_OK(engines(text, "engine,engine,model", 3, t, &n, buf));
	CHECK_EQ(n, 3);
	{
		/* f0: the model 100k longer, a byte different; f1: the model
		 * 30k shorter and the second engine a byte different; f2:
		 * the model without it */
		struct op w = { .kind = OP_PWRITE, .file = 0, .off = 5000,
				.len = 1, .flags = OP_FL_PATTERN, .pattern = 9 };
		struct op g = { .kind = OP_TRUNCATE, .file = 0,
				.arg = 308 << 10 };
		struct op s = { .kind = OP_TRUNCATE, .file = 1, .arg = 10 << 10 };
		struct op v = { .kind = OP_PWRITE, .file = 1, .off = 7,
				.len = 1, .flags = OP_FL_PATTERN, .pattern = 3 };
		struct op u = { .kind = OP_UNLINK, .file = 2 };

		CHECK_EQ(target_apply(t[2], &w, 60, buf, 1 << 16), 1);
		CHECK_EQ(target_apply(t[2], &g, 61, buf, 1 << 16), 0);
		CHECK_EQ(target_apply(t[2], &s, 62, buf, 1 << 16), 0);
		CHECK_EQ(target_apply(t[1], &v, 63, buf, 1 << 16), 1);
		CHECK_EQ(target_apply(t[2], &u, 64, buf, 1 << 16), 0);
	}
	CHECK(!same_file(t[0], t[2], 0, x, y));
	k = ref_counters(engine_target_fs(t[0]));
	before = k->data_bytes_read;
	CHECK_OK(target_mend_file_n(&t[1], 2, t[0], 0, buf, 1 << 16, 2u, &same,
				    &mended));
	CHECK_EQ(same, 3u);
	CHECK_EQ(mended, 2u);
	/* one pass over the source's 208k */
	CHECK_MSG(k->data_bytes_read - before <= 208 << 10, "%llu bytes read",
		  (unsigned long long)(k->data_bytes_read - before));
	CHECK(same_file(t[0], t[2], 0, x, y));
	CHECK_OK(target_mend_file_n(&t[1], 2, t[0], 0, buf, 1 << 16, 2u, &same,
				    &mended));
	CHECK_EQ(same, 3u);
	CHECK_EQ(mended, 0u);
	/* f1: the second engine differs (judged only), the model mended */
	CHECK_OK(target_mend_file_n(&t[1], 2, t[0], 1, buf, 1 << 16, 2u, &same,
				    &mended));
	CHECK_EQ(same, 2u);
	CHECK_EQ(mended, 2u);
	CHECK(same_file(t[0], t[2], 1, x, y));
	CHECK(!same_file(t[0], t[1], 1, x, y));
	/* f2: missing on the model, which only a copy can make */
	CHECK_OK(target_mend_file_n(&t[1], 2, t[0], 2, buf, 1 << 16, 2u, &same,
				    &mended));
	CHECK_EQ(same, 1u);
	CHECK_EQ(mended, 0u);
	CHECK_EQ(t[2]->ops->size(t[2], 2), -ENOENT);
	target_list_close(t, n);
	free(buf);
	free(x);
	free(y);
}

/* A random change to file 0 of t: a pwrite of one byte value (zeros
 * too), or a truncate. */
static void random_change(struct target *t, struct rng *g, uint64_t opno,
			  uint8_t *buf)
{
	struct op o = { .file = 0 };

	if (rng_below(g, 5) == 0) {
		o.kind = OP_TRUNCATE;
		o.arg = rng_below(g, 300 << 10);
	} else {
		o.kind = OP_PWRITE;
		o.off = rng_below(g, 300 << 10);
		o.len = 1 + rng_below(g, 20 << 10);
		o.flags = OP_FL_PATTERN;
		o.pattern = (uint8_t)(rng_below(g, 3) ? rng_next(g) : 0);
	}
	CHECK(target_apply(t, &o, opno, buf, 1 << 16) >= 0);
}

/* The source's views, counted. */
static struct target_ops counted_ops;
static const struct target_ops *uncounted_ops;
static unsigned nviews;

static int64_t counted_view(struct target *t, unsigned file, uint64_t off,
			    size_t len, target_view_fn fn, void *arg)
{
	nviews++;
	return uncounted_ops->view(t, file, off, len, fn, arg);
}

/*
 * Random files on a source model and on a model mended from it (sizes up
 * and down, runs of zeros against holes, a shared history or none, the
 * comparison's buffer at odd sizes): after the mend the two read alike,
 * and a model without the file is left to the copy.  Then the same from
 * an engine, whose pieces are compared through its view and read only
 * where the model differs.
 */
static void mend_random(const char *list)
{
	static const char text[] = "#! fsoracle dev=mem:64m\nfile f0\n";
	static const size_t lens[] = { 8192, 8194, 12000, 1 << 16 };
	struct target *t[TARGET_MAX];
	uint8_t *buf = malloc(1 << 16), *x = malloc(1 << 16),
		*y = malloc(1 << 16);
	struct rng g;
	uint64_t opno = 1;
	int n, nmended = 0;

	CHECK(buf && x && y);
	CHECK_OK(engines(text, list, 0, t, &n, buf));
	CHECK_EQ(n, 2);
	nviews = 0;
	if (t[0]->ops->view) {
		uncounted_ops = t[0]->ops;
		counted_ops = *t[0]->ops;
		counted_ops.view = counted_view;
		t[0]->ops = &counted_ops;
	}
	rng_seed(&g, 7);
	for (int round = 0; round < 300; round++) {
		struct op cut = { .kind = OP_TRUNCATE, .file = 0 };
		unsigned shared = (unsigned)rng_below(&g, 6);
		uint32_t same, mended;

		for (int i = 0; i < 2; i++)
			CHECK(target_apply(t[i], &cut, opno++, buf, 1 << 16) >= 0);
		for (unsigned k = 0; k < shared; k++) {
			struct rng h = g;

			random_change(t[0], &g, opno, buf);
			random_change(t[1], &h, opno++, buf);
		}
		for (int i = 0; i < 2; i++)
			for (unsigned k = rng_below(&g, 4); k; k--)
				random_change(t[i], &g, opno++, buf);
		CHECK_OK(target_mend_file_n(&t[1], 1, t[0], 0, buf,
					    lens[round % 4], 1u, &same,
					    &mended));
		CHECK_MSG(same == 1u && same_file(t[0], t[1], 0, x, y),
			  "round %d: same %u, mended %u", round, same, mended);
		nmended += mended != 0;
	}
	/* most rounds had something to mend, some nothing */
	CHECK_MSG(nmended > 200 && nmended < 300, "%d rounds mended", nmended);
	{
		struct op u = { .kind = OP_UNLINK, .file = 0 };
		uint32_t same, mended;

		CHECK(target_apply(t[1], &u, opno++, buf, 1 << 16) >= 0);
		CHECK_OK(target_mend_file_n(&t[1], 1, t[0], 0, buf, 1 << 16, 1u,
					    &same, &mended));
		CHECK_EQ(same | mended, 0u);
		CHECK_EQ(t[1]->ops->size(t[1], 0), -ENOENT);
	}
	CHECK_MSG((nviews > 300) == (t[0]->ops == &counted_ops), "%s: %u views",
		  list, nviews);
	if (t[0]->ops == &counted_ops)
		t[0]->ops = uncounted_ops;
	target_list_close(t, n);
	free(buf);
	free(x);
	free(y);
}

TEST(mend_matches_random_files_in_any_piece_size)
{
	mend_random("model,model");
	mend_random("engine,model");
}

/*
 * After a crash a target that recovered a file as the first engine did
 * keeps it (no copy): the naive engine lost f0's unsynced write as the
 * engine did, the model did not and takes the engine's f0; f1, written
 * back, came through on both engines as the model has it.
 */
TEST(crash_adoption_copies_only_to_targets_that_recovered_otherwise)
{
	static const char text[] =
		"#! fsoracle dev=mem:64m\n"
		"file f1\npwrite 0 32k\nwriteback\n"
		"file f0\npwrite 0 64k\nfsync\npwrite 0 4k\ncrash\n";
	struct rig r;

	CHECK_OK(rig_open(&r, "engine,naive,model", text));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_OK);
	CHECK_EQ(check_stats(r.c)->crashes, 1);
	/* the naive engine keeps f0 and f1, the model f1 and is mended
	 * to the engine's f0 in place */
	CHECK_EQ(check_stats(r.c)->adopt_kept, 3);
	CHECK_EQ(check_stats(r.c)->adopt_mended, 1);
	rig_close(&r);
}

/* A naive engine whose sync flips a byte of f0 once a crash armed it. */
static struct target_ops bad_sync_ops;
static const struct target_ops *bad_sync_inner;
static int bad_sync_armed;

static int64_t bad_sync_apply(struct target *t, const struct op *op,
			      const void *wbuf, void *rbuf)
{
	int64_t r = bad_sync_inner->apply(t, op, wbuf, rbuf);

	if (op->kind == OP_CRASH) {
		bad_sync_armed = 1;
	} else if (op->kind == OP_SYNC && bad_sync_armed) {
		static const uint8_t junk = 0x5a;
		struct op w = { .kind = OP_PWRITE, .file = 0, .off = 100,
				.len = 1 };

		bad_sync_armed = 0;
		bad_sync_inner->apply(t, &w, &junk, NULL);
	}
	return r;
}

/*
 * A file a target keeps at a crash is still read back by the verify
 * after it: the checker syncs the engines after adopting, and a sync
 * that damaged the kept file is caught at the crash, not later or never
 * (here the file is emptied right after).
 */
TEST(crash_adoption_verifies_the_files_it_kept)
{
	static const char text[] =
		"#! fsoracle dev=mem:64m\n"
		"file f0\npwrite 0 32k\nfsync\npwrite 0 32k\nwriteback\n"
		"crash\ntruncate 0\n";
	struct rig r;

	CHECK_OK(rig_open(&r, "engine,naive,model", text));
	bad_sync_inner = r.t[1]->ops;
	bad_sync_ops = *r.t[1]->ops;
	bad_sync_ops.apply = bad_sync_apply;
	r.t[1]->ops = &bad_sync_ops;
	bad_sync_armed = 0;
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_DATA);
	CHECK_EQ(check_failure(r.c)->opno, 5);
	CHECK(check_stats(r.c)->adopt_kept >= 1);
	r.t[1]->ops = bad_sync_inner;
	rig_close(&r);
}

/* The false alarm a crash adoption raised on a nearly full zoned device:
 * rewriting whole 1 MiB chunks, zeros included, needed room the files
 * never used. */
TEST(crash_adoption_fits_where_the_source_fits)
{
	static const char text[] =
		"#! fsoracle dev=mem:64m rt=zoned:mem,size=8m,zone=1m,cap=768k,"
		"append_max=672k,max_open=4,max_active=4 "
		"mount=pagecache=16,delalloc\n"
		"file f1\nchattr +r\nfile f3\nchattr +r\nfile f0\nchattr +r\n"
		"file f2\nchattr +r\nfile f0\npwrite 2044k 76k\n"
		"file f1\ntruncate 963k\npwrite 0 1\nfile f0\npwrite 0 1\n"
		"file f2\npwrite 0 1\nfile f3\npwrite 876k 1\n"
		"file f2\npwrite 1322k 92560\nfile f3\nfsync\npwrite 0 0\n"
		"crash\n";
	struct rig r;

	CHECK_OK(rig_open(&r, "engine,naive,model", text));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_OK);
	CHECK_EQ(check_stats(r.c)->enospc, 0);
	rig_close(&r);
}

/*
 * A crash adoption's copies go to every other target in one pass; the
 * target that refuses a write is the one judged: planted:enospc_room,
 * the third target, says it has room, which is a bug.  (Judging the
 * model instead, with no room to tell, passed it as a plain error.)
 */
TEST(crash_adoption_judges_the_target_that_ran_out)
{
	static const char text[] =
		"#! fsoracle dev=mem:64m\n"
		"file f0\npwrite -b 32k 0 128k\nfsync\n"
		"pwrite -b 32k 0 32k\ncrash\n";
	struct rig r;

	CHECK_OK(rig_open(&r, "engine,model,planted:enospc_room", text));
	CHECK_EQ(check_run(r.c, &r.seq), CHECK_ERRNO);
	CHECK_MSG(strstr(check_failure(r.c)->what, "with room left") &&
		  strstr(check_failure(r.c)->what, "planted"), "%s",
		  check_failure(r.c)->what);
	CHECK_EQ(check_failure(r.c)->opno, 4);
	rig_close(&r);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
