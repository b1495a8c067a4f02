/*
 * test_rt.c - the realtime device: files flagged realtime allocate whole
 * rt extents on it, aligned in the file and on the device, map every
 * block of every rt extent they touch, and free only whole rt extents.
 *
 * Expectations are written by hand from the geometry (rt extent lists,
 * counts of rt extents allocated and freed, bytes zeroed), or come from
 * an independent source: a plain file given the same ops, the model
 * through the checker.  The audit's rt half is shown to fail on planted
 * states built through the engine's internal functions.
 *
 * Geometry unless said otherwise: 4 KiB blocks, rtextsize 16k (R = 4
 * blocks), a 16 MiB realtime device (1024 rt extents).
 */
#include "test.h"
#include "test_extents.h"

#include <errno.h>

#include "harness/check.h"
#include "harness/gen.h"
#include "harness/runopts.h"
#include "harness/target.h"
#include "harness/text.h"
#include "hw/hw.h"
#include "ref/ref_internal.h"

#define R 4                     /* rt extent size in blocks */
#define RTBLOCKS 4096           /* mem:16m in 4k blocks     */

/* Engine messages, for checking what the audit or mount said. */
static char msgs[4096];
static void collect_msg(void *arg, const char *line)
{
	size_t n = strlen(msgs);

	(void)arg;
	snprintf(msgs + n, sizeof(msgs) - n, "%s\n", line);
}

struct rtfs {
	struct hw_dev *dev, *rtdev;
	struct ref_fs *fs;
};

static int rt_mount(struct rtfs *r)
{
	struct ref_mount_opts mo = { .rtdev = r->rtdev, .msg = collect_msg };

	msgs[0] = 0;
	return ref_mount(r->dev, &mo, &r->fs);
}

/* A fresh filesystem on the two device specs, rt extents of rtextsize. */
static int rt_new_on(struct rtfs *r, const char *dev, const char *rtdev,
		     uint32_t rtextsize, const char *mkfs)
{
	struct ref_mkfs_opts o = { 0 };

	memset(r, 0, sizeof(*r));
	if (hw_open(dev, &r->dev, NULL, 0) ||
	    hw_open(rtdev, &r->rtdev, NULL, 0) ||
	    ref_parse_mkfs_opts(mkfs, &o, NULL, 0))
		return -1;
	o.rtdev = r->rtdev;
	o.rtextsize = rtextsize;
	if (ref_mkfs(r->dev, &o))
		return -1;
	return rt_mount(r);
}

static int rt_new(struct rtfs *r, uint32_t rtextsize, const char *mkfs)
{
	return rt_new_on(r, "mem:16m", "mem:16m", rtextsize, mkfs);
}

/* Unmount (or, after a planted corruption, just drop) and close. */
static void rt_free_all(struct rtfs *r)
{
	if (r->fs)
		ref_unmount(r->fs);
	hw_close(r->dev);
	hw_close(r->rtdev);
}

static void rt_drop(struct rtfs *r)
{
	ref_abandon(r->fs);
	r->fs = NULL;
	rt_free_all(r);
}

/* A power cut: the engine forgets what it had not committed, and mounts
 * again (recovering its journal, finishing orphans). */
static int rt_crash(struct rtfs *r)
{
	ref_abandon(r->fs);
	r->fs = NULL;
	return rt_mount(r);
}

static int audit(struct ref_fs *fs)
{
	msgs[0] = 0;
	return ref_audit(fs, collect_msg, NULL);
}

static int rt_file(struct ref_fs *fs, const char *name, uint64_t *ino)
{
	int err = ref_create(fs, name, ino);

	return err ? err : ref_set_flags(fs, *ino, REF_FLAG_REALTIME, 0);
}

/* The usual start: R = 4 blocks, one empty realtime file. */
static int rt_new_file(struct rtfs *r, const char *name, uint64_t *ino)
{
	int err = rt_new(r, 16384, NULL);

	return err ? err : rt_file(r->fs, name, ino);
}

static int64_t fill(struct ref_fs *fs, uint64_t ino, int byte, uint64_t off,
		    uint64_t len)
{
	static uint8_t buf[1 << 20];

	memset(buf, byte, len);
	return ref_pwrite(fs, ino, buf, len, off);
}

/* 1 when [off, off+len) reads as byte. */
static int reads_as(struct ref_fs *fs, uint64_t ino, int byte, uint64_t off,
		    uint64_t len)
{
	static uint8_t buf[1 << 20];

	if (ref_pread(fs, ino, buf, len, off) != (int64_t)len)
		return 0;
	for (uint64_t i = 0; i < len; i++)
		if (buf[i] != byte)
			return 0;
	return 1;
}

static uint64_t rt_free(struct ref_fs *fs)
{
	struct ref_statfs st;

	return ref_statfs(fs, &st) ? ~0ull : st.rt_free_blocks;
}

#define U REF_EXT_UNWRITTEN
#define KEEP REF_FALLOC_KEEP_SIZE
#define PUNCH REF_FALLOC_PUNCH_HOLE
#define ZERO REF_FALLOC_ZERO_RANGE
#define COLLAPSE REF_FALLOC_COLLAPSE_RANGE
#define INSERT REF_FALLOC_INSERT_RANGE
struct want { uint64_t off, blk, len; uint32_t state; };

/* The file's records must be exactly `want` (n of them). */
static int bmap_is(struct ref_fs *fs, uint64_t ino, const struct want *w, int n)
{
	struct extlist l = { .n = 0 };
	int ok = ref_bmap(fs, ino, collect_extent, &l) == 0 && l.n == n;

	for (int i = 0; ok && i < n; i++)
		ok = l.e[i].fileoff == w[i].off && l.e[i].startblk == w[i].blk &&
		     l.e[i].len == w[i].len && l.e[i].state == w[i].state;
	if (!ok)
		for (int i = 0; i < l.n; i++)
			fprintf(stderr, "    have [%llu+%llu -> %llu%s]\n",
				(unsigned long long)l.e[i].fileoff,
				(unsigned long long)l.e[i].len,
				(unsigned long long)l.e[i].startblk,
				l.e[i].state ? " unwritten" : "");
	return ok;
}

#define BMAP_IS(fs, ino, ...)                                              \
	do {                                                              \
		static const struct want w_[] = { __VA_ARGS__ };          \
		CHECK(bmap_is(fs, ino, w_, (int)(sizeof(w_) / sizeof(w_[0])))); \
	} while (0)

TEST(rt_write_maps_whole_aligned_rt_extents_with_unwritten_padding)
{
	struct rtfs r;
	uint64_t ino;

	CHECK_OK(rt_new_file(&r, "f", &ino));
	/* bytes 5000..7999 lie in block 1: rt extent 0 (blocks 0..3) */
	CHECK_EQ(fill(r.fs, ino, 0xab, 5000, 3000), 3000);
	BMAP_IS(r.fs, ino, { 0, 0, 1, U }, { 1, 1, 1, 0 }, { 2, 2, 2, U });
	CHECK_EQ(ref_counters(r.fs)->rt_extents_allocated, 1);
	CHECK_EQ(rt_free(r.fs), RTBLOCKS - R);
	/* blocks 3..7: block 3 was unwritten, 4..7 a new rt extent next to it */
	CHECK_EQ(fill(r.fs, ino, 0xcd, 14336, 16384), 16384);
	BMAP_IS(r.fs, ino, { 0, 0, 1, U }, { 1, 1, 1, 0 }, { 2, 2, 1, U },
		{ 3, 3, 5, 0 });
	CHECK_EQ(ref_counters(r.fs)->rt_extents_allocated, 2);
	CHECK_EQ(rt_free(r.fs), RTBLOCKS - 2 * R);
	CHECK(reads_as(r.fs, ino, 0, 0, 5000));
	CHECK(reads_as(r.fs, ino, 0xab, 5000, 3000));
	CHECK(reads_as(r.fs, ino, 0, 8000, 14336 - 8000));
	CHECK(reads_as(r.fs, ino, 0xcd, 14336, 16384));
	/* data went to the realtime device: the data device gave only the
	 * B+tree root */
	CHECK_EQ(ref_counters(r.fs)->blocks_allocated,
		 ref_counters(r.fs)->bt.node_allocs);
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

TEST(rt_fallocate_rounds_out_to_whole_rt_extents)
{
	struct rtfs r;
	struct ref_stat st;
	uint64_t ino;

	CHECK_OK(rt_new_file(&r, "f", &ino));
	/* bytes 40k..50k touch blocks 10..12: rt extents 2 and 3 */
	CHECK_OK(ref_fallocate(r.fs, ino, KEEP, 40960, 10240));
	BMAP_IS(r.fs, ino, { 8, 0, 8, U });
	CHECK_OK(ref_stat(r.fs, ino, &st));
	CHECK_EQ(st.size, 0);
	CHECK_EQ(st.blocks, 8);
	CHECK(st.flags & REF_FLAG_REALTIME);
	CHECK_EQ(ref_counters(r.fs)->rt_extents_allocated, 2);
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

TEST(rt_punch_inside_an_rt_extent_unwrites_and_frees_nothing)
{
	struct rtfs r;
	uint64_t ino, free0;

	CHECK_OK(rt_new_file(&r, "f", &ino));
	CHECK_EQ(fill(r.fs, ino, 0xab, 0, 32768), 32768);
	BMAP_IS(r.fs, ino, { 0, 0, 8, 0 });
	free0 = rt_free(r.fs);
	/* blocks 1..2: inside rt extent 0 */
	CHECK_OK(ref_fallocate(r.fs, ino, KEEP | PUNCH, 4096, 8192));
	BMAP_IS(r.fs, ino, { 0, 0, 1, 0 }, { 1, 1, 2, U }, { 3, 3, 5, 0 });
	/* bytes 2k..22k: partial blocks zeroed, whole blocks 1..4 straddle
	 * two rt extents and cover neither */
	CHECK_OK(ref_fallocate(r.fs, ino, KEEP | PUNCH, 2048, 20480));
	BMAP_IS(r.fs, ino, { 0, 0, 1, 0 }, { 1, 1, 4, U }, { 5, 5, 3, 0 });
	CHECK_EQ(ref_counters(r.fs)->rt_extents_freed, 0);
	CHECK_EQ(rt_free(r.fs), free0);
	CHECK(reads_as(r.fs, ino, 0xab, 0, 2048));
	CHECK(reads_as(r.fs, ino, 0, 2048, 20480));
	CHECK(reads_as(r.fs, ino, 0xab, 22528, 32768 - 22528));
	/* blocks 2..8: rt extent 1 whole goes, block 2..3 become unwritten */
	CHECK_OK(ref_fallocate(r.fs, ino, KEEP | PUNCH, 8192, 24576));
	BMAP_IS(r.fs, ino, { 0, 0, 1, 0 }, { 1, 1, 3, U });
	CHECK_EQ(ref_counters(r.fs)->rt_extents_freed, 1);
	CHECK_EQ(rt_free(r.fs), free0 + R);
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

TEST(rt_truncate_down_frees_exactly_the_rt_extents_past_the_eof_one)
{
	struct rtfs r;
	uint64_t ino;

	CHECK_OK(rt_new_file(&r, "f", &ino));
	/* the naive twin (test_rt_truncate.c has the optimized one) */
	ref_set_paths(r.fs, 1u << REF_PATH_RT_TRUNCATE, 0);
	/* 1 MiB: 64 rt extents, one record */
	CHECK_EQ(fill(r.fs, ino, 0xab, 0, 1 << 20), 1 << 20);
	BMAP_IS(r.fs, ino, { 0, 0, 256, 0 });
	ref_counters_reset(r.fs);
	CHECK_OK(ref_truncate(r.fs, ino, 5000));
	/* the EOF rt extent (blocks 0..3) stays; 63 go */
	BMAP_IS(r.fs, ino, { 0, 0, 4, 0 });
	CHECK_EQ(ref_counters(r.fs)->rt_extents_freed, 63);
	CHECK_EQ(rt_free(r.fs), RTBLOCKS - R);
	/* the naive twin zeroes the written rest of the EOF rt extent */
	CHECK_EQ(ref_counters(r.fs)->bytes_zeroed, 16384 - 5000);
	CHECK_OK(audit(r.fs));
	/* to an rt extent boundary: nothing to zero, the rest goes (the
	 * freed rt extents are reused once the truncate committed) */
	CHECK_OK(ref_sync(r.fs));
	CHECK_EQ(fill(r.fs, ino, 0xab, 0, 65536), 65536);
	BMAP_IS(r.fs, ino, { 0, 0, 16, 0 });
	ref_counters_reset(r.fs);
	CHECK_OK(ref_truncate(r.fs, ino, 32768));
	CHECK_EQ(ref_counters(r.fs)->rt_extents_freed, 2);
	CHECK_EQ(ref_counters(r.fs)->bytes_zeroed, 0);
	BMAP_IS(r.fs, ino, { 0, 0, 8, 0 });
	/* again the same size: no work at all */
	ref_counters_reset(r.fs);
	CHECK_OK(ref_truncate(r.fs, ino, 32768));
	CHECK_EQ(ref_counters(r.fs)->rt_extents_freed, 0);
	CHECK_EQ(ref_counters(r.fs)->bytes_zeroed, 0);
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

/* Only written blocks are zeroed: a falloc'ed tail stays unwritten. */
TEST(rt_truncate_zeroes_only_the_written_blocks_of_the_tail)
{
	struct rtfs r;
	uint64_t ino;

	CHECK_OK(rt_new_file(&r, "f", &ino));
	CHECK_OK(ref_fallocate(r.fs, ino, 0, 0, 65536));
	CHECK_EQ(fill(r.fs, ino, 0xab, 0, 6000), 6000);
	BMAP_IS(r.fs, ino, { 0, 0, 2, 0 }, { 2, 2, 14, U });
	ref_counters_reset(r.fs);
	CHECK_OK(ref_truncate(r.fs, ino, 5000));
	CHECK_EQ(ref_counters(r.fs)->bytes_zeroed, 8192 - 5000);
	BMAP_IS(r.fs, ino, { 0, 0, 2, 0 }, { 2, 2, 2, U });
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

/* Seed path (a), invariant 1: after truncate(S), any extension reads
 * zeros over [S, old size) that nobody rewrote. */
TEST(rt_truncate_tail_reads_zero)
{
	for (int how = 0; how < 4; how++) {
		struct rtfs r;
		uint64_t ino;

		CHECK_OK(rt_new(&r, 65536, NULL)); /* R = 16 blocks */
		CHECK_OK(rt_file(r.fs, "f", &ino));
		CHECK_EQ(fill(r.fs, ino, 0xab, 0, 262144), 262144);
		CHECK_OK(ref_truncate(r.fs, ino, 5000));
		switch (how) {
		case 0: /* pwrite past EOF, inside the EOF rt extent */
			CHECK_EQ(fill(r.fs, ino, 0xcd, 60000, 1), 1);
			break;
		case 1: /* truncate up */
			CHECK_OK(ref_truncate(r.fs, ino, 262144));
			break;
		case 2: /* fallocate, extending */
			CHECK_OK(ref_fallocate(r.fs, ino, 0, 0, 262144));
			break;
		case 3: /* remount, then an extending write far out */
			CHECK_OK(ref_unmount(r.fs));
			r.fs = NULL;
			CHECK_OK(rt_mount(&r));
			CHECK_EQ(fill(r.fs, ino, 0xcd, 262143, 1), 1);
			break;
		}
		CHECK(reads_as(r.fs, ino, 0xab, 0, 5000));
		CHECK(reads_as(r.fs, ino, 0, 5000,
			       (how == 0 ? 60000 : 262143) - 5000));
		CHECK_OK(audit(r.fs));
		rt_free_all(&r);
	}
}

TEST(rt_freed_extents_are_busy_until_commit_and_counts_exact)
{
	struct rtfs r;
	struct ref_statfs st;
	uint64_t a, b, c;

	CHECK_OK(rt_new(&r, 16384, NULL));
	CHECK_OK(ref_statfs(r.fs, &st));
	CHECK_EQ(st.rtextsize, 16384);
	CHECK_EQ(st.rt_blocks, RTBLOCKS);
	CHECK_EQ(st.rt_free_blocks, RTBLOCKS);
	CHECK_OK(rt_file(r.fs, "a", &a));
	CHECK_EQ(fill(r.fs, a, 1, 0, 16384), 16384);
	CHECK_OK(ref_sync(r.fs));
	CHECK_OK(ref_unlink(r.fs, "a"));
	CHECK_EQ(rt_free(r.fs), RTBLOCKS);      /* free, though busy */
	CHECK_EQ(ref_counters(r.fs)->rt_extents_freed, 1);
	/* before the unlink commits, its rt extent must not be reused: a
	 * crash would bring the old mapping back */
	CHECK_OK(rt_file(r.fs, "b", &b));
	CHECK_EQ(fill(r.fs, b, 2, 0, 4096), 4096);
	BMAP_IS(r.fs, b, { 0, 4, 1, 0 }, { 1, 5, 3, U });
	CHECK_OK(ref_sync(r.fs));
	CHECK_OK(rt_file(r.fs, "c", &c));
	CHECK_EQ(fill(r.fs, c, 3, 0, 4096), 4096);
	BMAP_IS(r.fs, c, { 0, 0, 1, 0 }, { 1, 1, 3, U });
	CHECK_EQ(rt_free(r.fs), RTBLOCKS - 2 * R);
	CHECK_OK(audit(r.fs));
	/* the bitmap is journaled: a crash takes c's uncommitted allocation
	 * back with c, and the counts still add up */
	CHECK_OK(rt_crash(&r));
	CHECK_EQ(ref_lookup(r.fs, "c", &c), -ENOENT);
	CHECK_EQ(rt_free(r.fs), RTBLOCKS - R);
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

TEST(rt_flag_changes_only_on_files_without_blocks)
{
	struct rtfs r;
	struct hw_dev *plain;
	struct ref_fs *pfs;
	struct ref_stat st;
	uint64_t ino;

	/* no realtime device: no realtime files */
	CHECK_OK(hw_open("mem:16m", &plain, NULL, 0));
	CHECK_OK(ref_mkfs(plain, NULL));
	CHECK_OK(ref_mount(plain, NULL, &pfs));
	CHECK_OK(ref_create(pfs, "f", &ino));
	CHECK_EQ(ref_set_flags(pfs, ino, REF_FLAG_REALTIME, 0), -EINVAL);
	CHECK_OK(ref_unmount(pfs));
	hw_close(plain);

	CHECK_OK(rt_new(&r, 16384, NULL));
	CHECK_OK(ref_create(r.fs, "f", &ino));
	CHECK_EQ(ref_set_flags(r.fs, ino, 1u << 7, 0), -EOPNOTSUPP);
	CHECK_EQ(ref_set_flags(r.fs, ino, REF_FLAG_REALTIME, REF_FLAG_REALTIME),
		 -EINVAL);
	/* a size without blocks is still empty */
	CHECK_OK(ref_truncate(r.fs, ino, 1 << 20));
	CHECK_OK(ref_set_flags(r.fs, ino, REF_FLAG_REALTIME, 0));
	CHECK_OK(ref_set_flags(r.fs, ino, REF_FLAG_REALTIME, 0)); /* no change */
	CHECK_EQ(fill(r.fs, ino, 1, 0, 10), 10);
	CHECK_EQ(ref_set_flags(r.fs, ino, 0, REF_FLAG_REALTIME), -EINVAL);
	CHECK_OK(ref_truncate(r.fs, ino, 0));
	CHECK_OK(ref_fallocate(r.fs, ino, KEEP, 0, 1));
	CHECK_EQ(ref_set_flags(r.fs, ino, 0, REF_FLAG_REALTIME), -EINVAL);
	/* truncate to 0 frees even blocks past EOF */
	CHECK_OK(ref_truncate(r.fs, ino, 0));
	CHECK_OK(ref_set_flags(r.fs, ino, REF_FLAG_REALTIME, 0));
	CHECK_EQ(fill(r.fs, ino, 1, 0, 10), 10);
	/* the flag is on disk */
	CHECK_OK(ref_unmount(r.fs));
	r.fs = NULL;
	CHECK_OK(rt_mount(&r));
	CHECK_OK(ref_stat(r.fs, ino, &st));
	CHECK(st.flags & REF_FLAG_REALTIME);
	CHECK_EQ(st.blocks, R);
	rt_free_all(&r);
}

TEST(rt_mount_needs_exactly_its_realtime_device)
{
	struct rtfs r;
	struct hw_dev *small, *plain;
	struct ref_mount_opts mo = { .msg = collect_msg };
	struct ref_fs *fs = NULL;

	CHECK_OK(rt_new(&r, 16384, NULL));
	CHECK_OK(ref_unmount(r.fs));
	r.fs = NULL;
	msgs[0] = 0;
	CHECK_EQ(ref_mount(r.dev, &mo, &fs), -ENODEV);
	CHECK_MSG(strstr(msgs, "has a realtime device"), "%s", msgs);
	CHECK_EQ(ref_fsck(r.dev, collect_msg, NULL), -ENODEV);
	CHECK_OK(hw_open("mem:8m", &small, NULL, 0));
	msgs[0] = 0;
	mo.rtdev = small;
	CHECK_EQ(ref_mount(r.dev, &mo, &fs), -EINVAL);
	CHECK_MSG(strstr(msgs, "not its device"), "%s", msgs);
	/* a plain filesystem refuses a realtime device */
	CHECK_OK(hw_open("mem:16m", &plain, NULL, 0));
	CHECK_OK(ref_mkfs(plain, NULL));
	msgs[0] = 0;
	CHECK_EQ(ref_mount(plain, &mo, &fs), -EINVAL);
	CHECK_MSG(strstr(msgs, "has none"), "%s", msgs);
	/* with its device: fsck and mount */
	mo.rtdev = r.rtdev;
	CHECK_OK(ref_fsck_opts(r.dev, &mo));
	CHECK_OK(rt_mount(&r));
	hw_close(small);
	hw_close(plain);
	rt_free_all(&r);
}

TEST(rt_mkfs_checks_its_geometry)
{
	struct ref_mkfs_opts o = { 0 };
	struct hw_dev *d, *rt, *tiny;
	char err[200];

	CHECK_OK(ref_parse_mkfs_opts("rtextsize=64k", &o, err, sizeof(err)));
	CHECK_EQ(o.rtextsize, 65536);
	memset(&o, 0, sizeof(o));
	CHECK_EQ(ref_parse_mkfs_opts("rtextsize=6k", &o, err, sizeof(err)),
		 -EINVAL);
	CHECK_MSG(strstr(err, "multiple of the block size"), "%s", err);
	memset(&o, 0, sizeof(o));
	CHECK_EQ(ref_parse_mkfs_opts("maxext=4,rtextsize=32k", &o, err,
				     sizeof(err)), -EINVAL);
	CHECK_OK(hw_open("mem:16m", &d, NULL, 0));
	CHECK_OK(hw_open("mem:16m", &rt, NULL, 0));
	CHECK_OK(hw_open("mem:8k", &tiny, NULL, 0));
	o = (struct ref_mkfs_opts){ .rtextsize = 16384 };
	CHECK_EQ(ref_mkfs(d, &o), -EINVAL);           /* no device for it */
	o = (struct ref_mkfs_opts){ .rtdev = rt, .rtextsize = 12288,
				    .max_extlen = 2 };
	CHECK_EQ(ref_mkfs(d, &o), -EINVAL);           /* R > maxext */
	o = (struct ref_mkfs_opts){ .rtdev = tiny, .rtextsize = 16384 };
	CHECK_EQ(ref_mkfs(d, &o), -ENOSPC);           /* not one rt extent */
	o = (struct ref_mkfs_opts){ .rtdev = rt, .rtextsize = 12288 };
	CHECK_OK(ref_mkfs(d, &o));                    /* R = 3: fine */
	hw_close(d);
	hw_close(rt);
	hw_close(tiny);
}

TEST(rt_collapse_and_insert_move_whole_rt_extents)
{
	struct rtfs r;
	uint64_t ino;

	CHECK_OK(rt_new_file(&r, "f", &ino));
	CHECK_EQ(fill(r.fs, ino, 1, 0, 16384), 16384);
	CHECK_EQ(fill(r.fs, ino, 2, 16384, 16384), 16384);
	CHECK_EQ(fill(r.fs, ino, 3, 32768, 16384), 16384);
	CHECK_EQ(ref_fallocate(r.fs, ino, COLLAPSE, 4096, 16384),
		 -EINVAL);
	CHECK_EQ(ref_fallocate(r.fs, ino, INSERT, 0, 4096),
		 -EINVAL);
	CHECK_OK(ref_fallocate(r.fs, ino, COLLAPSE, 16384, 16384));
	CHECK_EQ(ref_counters(r.fs)->rt_extents_freed, 1);
	BMAP_IS(r.fs, ino, { 0, 0, 4, 0 }, { 4, 8, 4, 0 });
	CHECK(reads_as(r.fs, ino, 3, 16384, 16384));
	CHECK_OK(ref_fallocate(r.fs, ino, INSERT, 0, 32768));
	BMAP_IS(r.fs, ino, { 8, 0, 4, 0 }, { 12, 8, 4, 0 });
	CHECK(reads_as(r.fs, ino, 0, 0, 32768));
	CHECK(reads_as(r.fs, ino, 1, 32768, 16384));
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

/*
 * rtextsize = one block: a realtime file must behave exactly as a plain
 * file given the same ops: the same records (device blocks counted from
 * each device's first data block), the same bytes, the same zeroing.
 */
TEST(rt_extent_of_one_block_behaves_like_a_plain_device)
{
	struct rtfs r;
	uint64_t rino, pino;
	struct extlist lr = { .n = 0 }, lp = { .n = 0 };
	struct ref_counters ctr[2];
	static uint8_t br[1 << 18], bp[1 << 18];

	CHECK_OK(rt_new(&r, 4096, NULL));
	CHECK_OK(rt_file(r.fs, "rt", &rino));
	CHECK_OK(ref_create(r.fs, "plain", &pino));
	for (int k = 0; k < 2; k++) {
		uint64_t ino = k ? pino : rino;

		ref_counters_reset(r.fs);
		CHECK_EQ(fill(r.fs, ino, 1, 1000, 70000), 70000);
		CHECK_OK(ref_fallocate(r.fs, ino, KEEP, 90000, 50000));
		CHECK_OK(ref_fallocate(r.fs, ino, KEEP | PUNCH, 9000, 20000));
		CHECK_OK(ref_fallocate(r.fs, ino, ZERO, 40000, 9000));
		CHECK_EQ(fill(r.fs, ino, 2, 100000, 5000), 5000);
		CHECK_OK(ref_truncate(r.fs, ino, 50001));
		CHECK_OK(ref_truncate(r.fs, ino, 200000));
		CHECK_OK(ref_fallocate(r.fs, ino, COLLAPSE, 8192, 4096));
		CHECK_OK(ref_fallocate(r.fs, ino, INSERT, 4096, 8192));
		CHECK_EQ(ref_pread(r.fs, ino, k ? bp : br, sizeof(br), 0), 204096);
		CHECK_OK(ref_bmap(r.fs, ino, collect_extent, k ? &lp : &lr));
		ctr[k] = *ref_counters(r.fs);
	}
	/* the same zeroing and record work on both */
	CHECK_EQ(ctr[0].bytes_zeroed, ctr[1].bytes_zeroed);
	CHECK(ctr[0].bytes_zeroed > 0);
	CHECK_EQ(ctr[0].bt.rec_inserts, ctr[1].bt.rec_inserts);
	CHECK_EQ(ctr[0].bt.rec_deletes, ctr[1].bt.rec_deletes);
	CHECK_EQ(ctr[0].bt.rec_updates, ctr[1].bt.rec_updates);
	CHECK_EQ(ctr[0].rt_extents_allocated,
		 ctr[1].blocks_allocated - ctr[1].bt.node_allocs);
	CHECK_MEM(br, bp, 204096);
	CHECK_EQ(lr.n, lp.n);
	CHECK(lr.n > 3);
	for (int i = 0; i < lr.n; i++) {
		CHECK_EQ(lr.e[i].fileoff, lp.e[i].fileoff);
		CHECK_EQ(lr.e[i].len, lp.e[i].len);
		CHECK_EQ(lr.e[i].state, lp.e[i].state);
		CHECK_EQ(lr.e[i].startblk - lr.e[0].startblk,
			 lp.e[i].startblk - lp.e[0].startblk);
	}
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

/* ---- the audit's realtime half fails on planted states ---- */

/* Re-map file block range [off, off+len) of ino onto rt block blk,
 * bypassing the allocator: what a bug in a fast path could leave. */
static int remap(struct ref_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
		 uint64_t blk, uint32_t state)
{
	struct ref_inode *ip;
	struct ref_extent e = { off, blk, len, state };
	int err = inode_get(fs, ino, &ip);

	if (!err)
		err = bmap_unmap(fs, ip, off, len, false);
	if (!err && blk != ~0ull)
		err = bmap_map(fs, ip, &e);
	if (!err)
		err = inode_log(fs, ip);
	return err;
}

TEST(rt_audit_catches_an_rt_extent_referenced_twice)
{
	struct rtfs r;
	uint64_t a, b;

	CHECK_OK(rt_new_file(&r, "a", &a));
	CHECK_OK(rt_file(r.fs, "b", &b));
	CHECK_EQ(fill(r.fs, a, 1, 0, 16384), 16384);
	CHECK_EQ(fill(r.fs, b, 2, 0, 16384), 16384);
	BMAP_IS(r.fs, b, { 0, 4, 4, 0 });
	CHECK_OK(audit(r.fs));
	CHECK_OK(remap(r.fs, b, 0, 4, 0, 0));      /* b now maps a's extent */
	CHECK_EQ(audit(r.fs), -EFSCORRUPTED);
	CHECK_MSG(strstr(msgs, "rt block 0 is referenced twice"), "%s", msgs);
	CHECK_MSG(strstr(msgs, "rt extent 1 is unreferenced but allocated"),
		  "%s", msgs);
	rt_drop(&r);
}

TEST(rt_audit_catches_a_partly_mapped_rt_extent)
{
	struct rtfs r;
	uint64_t a;

	CHECK_OK(rt_new_file(&r, "a", &a));
	CHECK_EQ(fill(r.fs, a, 1, 0, 32768), 32768);
	/* block 6 unmapped, nothing freed: a partial unmap */
	CHECK_OK(remap(r.fs, a, 6, 1, ~0ull, 0));
	CHECK_EQ(audit(r.fs), -EFSCORRUPTED);
	CHECK_MSG(strstr(msgs, "rt extent at file block 4 is only partly mapped"),
		  "%s", msgs);
	/* mapped whole, but onto an rt extent at the wrong phase */
	CHECK_OK(remap(r.fs, a, 4, 4, 10, 0));
	CHECK_EQ(audit(r.fs), -EFSCORRUPTED);
	CHECK_MSG(strstr(msgs, "starts inside an rt extent"), "%s", msgs);
	rt_drop(&r);
}

TEST(rt_audit_catches_stale_bytes_and_written_blocks_past_eof)
{
	struct rtfs r;
	struct ref_inode *ip;
	uint64_t a;
	uint8_t x = 0x5a;

	CHECK_OK(rt_new_file(&r, "a", &a));
	ref_set_paths(r.fs, 1u << REF_PATH_RT_TRUNCATE, 0);
	CHECK_EQ(fill(r.fs, a, 1, 0, 32768), 32768);
	CHECK_OK(ref_truncate(r.fs, a, 5000));
	CHECK_OK(audit(r.fs));
	/* block 3 is past EOF, written and zeroed by the naive truncate:
	 * stale bytes there would reappear on extension */
	CHECK_OK(hw_write(r.rtdev, 3 * 4096 + 100, &x, 1, 0));
	CHECK_EQ(audit(r.fs), -EFSCORRUPTED);
	CHECK_MSG(strstr(msgs, "byte 12388 past EOF (size 5000) is 0x5a"),
		  "%s", msgs);
	/* a shrink that frees nothing: written rt extents past the EOF one */
	CHECK_OK(hw_write(r.rtdev, 3 * 4096 + 100, r.fs->zeroblk, 1, 0));
	CHECK_EQ(fill(r.fs, a, 1, 0, 32768), 32768);
	CHECK_OK(inode_get(r.fs, a, &ip));
	ip->size = 16384;
	CHECK_OK(inode_log(r.fs, ip));
	CHECK_EQ(audit(r.fs), -EFSCORRUPTED);
	CHECK_MSG(strstr(msgs, "written blocks 4..7 lie past EOF (size 16384) "
			 "and its rt extent"), "%s", msgs);
	rt_drop(&r);
}

TEST(rt_audit_catches_a_wrong_rt_free_count)
{
	struct rtfs r;
	uint64_t a;

	CHECK_OK(rt_new_file(&r, "a", &a));
	CHECK_EQ(fill(r.fs, a, 1, 0, 4096), 4096);
	r.fs->rt_free++;
	CHECK_EQ(audit(r.fs), -EFSCORRUPTED);
	CHECK_MSG(strstr(msgs, "free rt extents: in-core 1024, rt bitmap 1023"),
		  "%s", msgs);
	rt_drop(&r);
}

/* ---- crashes ---- */

/* A truncate cut after its first step: mount finishes it, freeing whole
 * rt extents only. */
TEST(rt_orphan_truncate_is_finished_on_whole_rt_extents)
{
	struct rtfs r;
	struct ref_inode *ip;
	uint64_t a;

	CHECK_OK(rt_new_file(&r, "a", &a));
	CHECK_EQ(fill(r.fs, a, 1, 0, 65536), 65536);
	CHECK_OK(ref_sync(r.fs));
	/* step 1 of truncate(5000), committed; then the power goes */
	CHECK_OK(inode_get(r.fs, a, &ip));
	ip->size = 5000;
	ip->flags |= REF_IF_ORPHAN;
	CHECK_OK(file_zero_written(r.fs, ip, 5000, 16384));
	CHECK_OK(inode_log(r.fs, ip));
	CHECK_OK(tx_commit(r.fs));
	CHECK_OK(rt_crash(&r));
	BMAP_IS(r.fs, a, { 0, 0, 4, 0 });
	CHECK_EQ(ref_counters(r.fs)->rt_extents_freed, 3);
	CHECK_EQ(rt_free(r.fs), RTBLOCKS - R);
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

/* An in-place write past EOF inside the EOF rt extent reaches the device,
 * the size that covered it does not: mount zeroes it again. */
TEST(rt_crash_after_a_write_past_eof_leaves_the_tail_zero)
{
	struct rtfs r;
	uint64_t a;

	CHECK_OK(rt_new_file(&r, "a", &a));
	CHECK_EQ(fill(r.fs, a, 1, 0, 16384), 16384);
	CHECK_OK(ref_truncate(r.fs, a, 5000));   /* blocks 2, 3: written 0s */
	CHECK_OK(ref_sync(r.fs));
	CHECK_EQ(fill(r.fs, a, 7, 13000, 100), 100); /* in place, block 3 */
	CHECK_OK(rt_crash(&r));      /* the new size is lost */
	CHECK_OK(audit(r.fs));
	CHECK_OK(ref_truncate(r.fs, a, 16384));
	CHECK(reads_as(r.fs, a, 0, 5000, 16384 - 5000));
	rt_free_all(&r);
}

/* Ordered mode holds on the realtime device too: a commit that maps rt
 * data comes after that data is durable.  A power cut (the crash layer
 * drops every write not yet flushed, on both devices) after fsync must
 * leave it readable. */
TEST(rt_data_is_durable_before_the_commit_that_maps_it)
{
	struct hw_cut cut = { .kind = HW_CUT_DROP_ALL };
	struct rtfs r;
	uint64_t a;

	CHECK_OK(rt_new_on(&r, "crash:mem:16m", "crash:mem:16m", 16384, NULL));
	CHECK_OK(rt_file(r.fs, "a", &a));
	CHECK_EQ(fill(r.fs, a, 0xab, 0, 40000), 40000);
	CHECK_OK(ref_fsync(r.fs, a));
	ref_abandon(r.fs);
	r.fs = NULL;
	CHECK_OK(hw_crash_cut(r.dev, &cut));
	CHECK_OK(hw_crash_cut(r.rtdev, &cut));
	CHECK_OK(rt_mount(&r));
	CHECK(reads_as(r.fs, a, 0xab, 0, 40000));
	CHECK_OK(audit(r.fs));
	rt_free_all(&r);
}

/* ---- through the checker ---- */

static int rt_used(struct ref_fs *fs)
{
	struct ref_statfs st;

	return fs && !ref_statfs(fs, &st) && st.rt_free_blocks < st.rt_blocks;
}

/* A seeded soak, engine with a realtime device vs the model, with tiny
 * B+trees, crashes and rt-flag flips: they agree, and rt files were used. */
TEST(rt_soak_through_the_checker_agrees_with_the_model)
{
	const char *mkfs[] = { "rtextsize=16k,maxrecs=4", "bs=1k,rtextsize=3k" };

	for (int k = 0; k < 2; k++) {
		struct target_env env = { .dev = "mem:64m", .rtdev = "mem:64m",
					  .mkfs = mkfs[k] };
		struct target *t[2];
		struct checker *c;
		struct check_cfg cfg = { .out = stderr };
		struct gen_cfg gc = { .seed = 5 + k, .realtime = 1 };
		struct gen g;
		char err[256];
		int n, r = 0, used = 0;

		CHECK_OK(target_list_open("engine,model", &env, t, &n, err,
					  sizeof(err)));
		CHECK_OK(check_new(t, n, &cfg, NULL, &c));
		gc.exclude = check_unsupported(c);
		gc.blocksize = t[0]->blocksize;
		CHECK_EQ(gc.blocksize, k ? 3072 : 16384);
		CHECK_OK(gen_parse_weights(&gc, "chattr=10", err, sizeof(err)));
		CHECK_OK(gen_init(&g, &gc));
		for (int i = 0; i < 20000 && !r; i++) {
			struct op op;

			gen_next(&g, &op);
			r = check_op(c, &op);
			used |= rt_used(engine_target_fs(t[0]));
		}
		if (!r)
			r = check_finish(c);
		CHECK_EQ(r, CHECK_OK);
		CHECK(used);
		check_free(c);
		target_list_close(t, n);
	}
}

/*
 * Found by the rt soak (minimized): a write into unwritten blocks past EOF
 * committed their conversion to written before the size that covers them
 * (the conversion rolled the transaction), so a crash left written blocks
 * past EOF.  The realtime file only shifts the allocation pattern that
 * makes the roll fall there; the victim is the plain file f0.
 */
TEST(rt_soak_regression_unwritten_write_past_eof_then_crash)
{
	static const char log[] =
		"#! fsoracle dev=mem:64m rt=mem:128m "
		"mkfs=bs=1k,rtextsize=5k,maxrecs=5,journal=64\n"
		"file f2\nchattr +r\npwrite 32k 1\npwrite 44544 1\n"
		"pwrite 56k 1\npwrite 0 1\npwrite 36k 1\nfcollapse 5k 25k\n"
		"file f0\npwrite 2k 1\nfile f2\npwrite 21k 1\nfile f0\n"
		"falloc -k 0 5632\npwrite 0 1\npwrite 4k 1\ncrash\n";
	struct op_seq seq;
	struct runopts o;
	struct target_env env;
	struct target *t[2];
	struct checker *c;
	struct check_cfg cfg = { .out = stderr };
	const char *targets;
	char err[256];
	int n;

	op_seq_init(&seq);
	CHECK_OK(op_text_parse(log, strlen(log), &seq, err, sizeof(err)));
	runopts_init(&o);
	o.targets = "engine,model";
	runopts_resolve(&o, &seq, &env, &targets);
	CHECK(env.rtdev && !strcmp(env.rtdev, "mem:128m"));
	CHECK_OK(target_list_open(targets, &env, t, &n, err, sizeof(err)));
	CHECK_OK(check_new(t, n, &cfg, &seq, &c));
	CHECK_EQ(check_run(c, &seq), CHECK_OK);
	check_free(c);
	target_list_close(t, n);
	op_seq_free(&seq);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
