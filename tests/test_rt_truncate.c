/*
 * test_rt_truncate.c - seed path (a): truncating a realtime file down.
 * The naive twin zeroes the rest of the EOF rt extent; the optimized path
 * zeroes to the end of the EOF block and turns the rest of the rt extent
 * unwritten in place; the fallback (forced, or when the record split
 * cannot get its B+tree blocks) does the naive work.  And the record
 * conversions the optimized path is built on keep the extent list
 * canonical with a small maxext (they used to leave mergeable records).
 *
 * Expectations are hand-computed from the geometry (extent lists, bytes
 * zeroed, record operations) or come from the naive twin run on its own
 * filesystem; the seed thread's numbers (shared/SEED-PATHS.md) are
 * reproduced exactly.  props/suite_rt_truncate.c checks the same
 * invariants over generated cases.
 */
#include "test.h"

#include <errno.h>
#include <stdlib.h>

#include "hw/hw.h"
#include "ref/ref_internal.h"

#define RTP (1u << REF_PATH_RT_TRUNCATE)

enum twin { NAIVE, OPT, FALLBACK };

struct fsx {
	struct hw_dev *dev, *rtdev;
	struct ref_fs *fs;
	uint64_t ino;
};

static int mount_twin(struct fsx *f, enum twin tw)
{
	struct ref_mount_opts mo = { .rtdev = f->rtdev,
				     .naive = tw == NAIVE ? RTP : 0,
				     .fallback = tw == FALLBACK ? RTP : 0 };

	return ref_mount(f->dev, &mo, &f->fs);
}

/* A filesystem on dev + rtdev specs, mounted as twin tw, one rt file. */
static int fsx_new(struct fsx *f, const char *dev, const char *rtdev,
		   const char *mkfs, enum twin tw)
{
	struct ref_mkfs_opts o = { 0 };
	int err;

	memset(f, 0, sizeof(*f));
	if (hw_open(dev, &f->dev, NULL, 0) ||
	    hw_open(rtdev, &f->rtdev, NULL, 0) ||
	    ref_parse_mkfs_opts(mkfs, &o, NULL, 0))
		return -EINVAL;
	o.rtdev = f->rtdev;
	err = ref_mkfs(f->dev, &o);
	if (!err)
		err = mount_twin(f, tw);
	if (!err)
		err = ref_create(f->fs, "f", &f->ino);
	if (!err)
		err = ref_set_flags(f->fs, f->ino, REF_FLAG_REALTIME, 0);
	return err;
}

static void fsx_free(struct fsx *f)
{
	if (f->fs)
		ref_unmount(f->fs);
	hw_close(f->dev);
	hw_close(f->rtdev);
}

static int64_t put(struct fsx *f, int byte, uint64_t off, uint64_t len)
{
	uint8_t *b = malloc(len);
	int64_t r;

	memset(b, byte, len);
	r = ref_pwrite(f->fs, f->ino, b, len, off);
	free(b);
	return r;
}

/* Does [off, off+len) read as `byte`? */
static int reads(struct fsx *f, int byte, uint64_t off, uint64_t len)
{
	uint8_t *b = malloc(len);
	int ok = ref_pread(f->fs, f->ino, b, len, off) == (int64_t)len;

	for (uint64_t i = 0; ok && i < len; i++)
		ok = b[i] == byte;
	free(b);
	return ok;
}

struct elist { struct ref_extent e[16]; int n; };

static int grab(void *arg, const struct ref_extent *e)
{
	struct elist *l = arg;

	if (l->n < 16)
		l->e[l->n] = *e;
	l->n++;
	return 0;
}

/* The map must be exactly the given {fileoff, startblk, len, state}s. */
static int map_is(struct fsx *f, const struct ref_extent *want, int n)
{
	struct elist l = { .n = 0 };

	if (ref_bmap(f->fs, f->ino, grab, &l) || l.n != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (l.e[i].fileoff != want[i].fileoff ||
		    l.e[i].startblk != want[i].startblk ||
		    l.e[i].len != want[i].len || l.e[i].state != want[i].state)
			return 0;
	return 1;
}
#define MAP_IS(f, ...)                                                     \
	do {                                                               \
		const struct ref_extent w_[] = { __VA_ARGS__ };            \
		CHECK(map_is((f), w_, (int)(sizeof(w_) / sizeof(w_[0]))));  \
	} while (0)

static int audit_quiet(struct ref_fs *fs)
{
	return ref_audit(fs, NULL, NULL);
}

/* ---- the optimized path ---- */

/* 4k blocks, R = 16k: a 1 MiB file (one record) truncated to 5000. */
TEST(rt_truncate_optimized_unwrites_the_eof_tail_in_place)
{
	struct ref_counters c[2];
	struct fsx f[2];

	for (int tw = 0; tw < 2; tw++) {
		CHECK_OK(fsx_new(&f[tw], "mem:16m", "mem:16m", "rtextsize=16k",
				 tw ? OPT : NAIVE));
		CHECK_EQ(put(&f[tw], 0xab, 0, 1 << 20), 1 << 20);
		CHECK_OK(ref_sync(f[tw].fs));
		ref_counters_reset(f[tw].fs);
		CHECK_OK(ref_truncate(f[tw].fs, f[tw].ino, 5000));
		c[tw] = *ref_counters(f[tw].fs);
		CHECK_OK(audit_quiet(f[tw].fs));
	}
	/* naive: blocks 2, 3 stay written (zeroes); optimized: unwritten */
	MAP_IS(&f[0], { 0, 0, 4, 0 });
	MAP_IS(&f[1], { 0, 0, 2, 0 }, { 2, 2, 2, REF_EXT_UNWRITTEN });
	CHECK_EQ(c[0].bytes_zeroed, 16384 - 5000);
	CHECK_EQ(c[1].bytes_zeroed, 8192 - 5000);
	CHECK_EQ(c[0].rt_extents_freed, 63);
	CHECK_EQ(c[1].rt_extents_freed, 63);
	/* the EOF rt extent's split: one update and one insert more */
	CHECK_EQ(c[1].bt.rec_updates, c[0].bt.rec_updates + 1);
	CHECK_EQ(c[1].bt.rec_inserts, c[0].bt.rec_inserts + 1);
	CHECK_EQ(c[1].bt.rec_deletes, c[0].bt.rec_deletes);
	CHECK_EQ(c[0].rt_truncate_fallbacks + c[1].rt_truncate_fallbacks, 0);
	/* extension reads zero on both, whatever extends */
	for (int tw = 0; tw < 2; tw++) {
		CHECK_EQ(put(&f[tw], 7, 20000, 1), 1);          /* past EOF */
		CHECK(reads(&f[tw], 0xab, 0, 5000));
		CHECK(reads(&f[tw], 0, 5000, 15000));
		CHECK_OK(ref_truncate(f[tw].fs, f[tw].ino, 4096 * 3 + 1));
		CHECK_OK(ref_truncate(f[tw].fs, f[tw].ino, 1 << 20));
		CHECK(reads(&f[tw], 0, 4096 * 3 + 1, (1 << 20) - 4096 * 3 - 1));
		CHECK_OK(ref_fallocate(f[tw].fs, f[tw].ino, 0, 0, 2 << 20));
		CHECK(reads(&f[tw], 0, 4096 * 3 + 1, (2 << 20) - 4096 * 3 - 1));
		CHECK_OK(audit_quiet(f[tw].fs));
		fsx_free(&f[tw]);
	}
}

/*
 * The seed thread's benchmark, as arithmetic: a file of 1024 rt extents
 * (dd bs=R count=1024) truncated to 4k frees 1023 rt extents either way;
 * the naive twin zeroes R - 4k per file, the optimized path nothing
 * (4k is block-aligned).  The realtime device is null: (it keeps no
 * data), so 1 GiB files cost only their metadata.
 */
TEST(rt_truncate_seed_000_arithmetic)
{
	static const struct { uint32_t r; const char *per_1000; } row[] = {
		{ 8 << 10, "3.9" }, { 16 << 10, "11.7" }, { 32 << 10, "27.3" },
		{ 64 << 10, "58.6" }, { 256 << 10, "246.1" },
		{ 1024 << 10, "996.1" },
	};
	static uint8_t buf[1 << 20];

	for (size_t i = 0; i < sizeof(row) / sizeof(row[0]); i++) {
		uint64_t zeroed[2];

		for (int tw = 0; tw < 2; tw++) {
			char mkfs[64];
			struct fsx f;

			snprintf(mkfs, sizeof(mkfs), "rtextsize=%u", row[i].r);
			CHECK_OK(fsx_new(&f, "mem:64m", "null:2g", mkfs,
					 tw ? OPT : NAIVE));
			for (uint64_t off = 0; off < 1024ull * row[i].r;
			     off += sizeof(buf))
				CHECK_EQ(ref_pwrite(f.fs, f.ino, buf,
						    sizeof(buf), off),
					 (int64_t)sizeof(buf));
			CHECK_OK(ref_sync(f.fs));
			ref_counters_reset(f.fs);
			CHECK_OK(ref_truncate(f.fs, f.ino, 4096));
			CHECK_EQ(ref_counters(f.fs)->rt_extents_freed, 1023);
			zeroed[tw] = ref_counters(f.fs)->bytes_zeroed;
			CHECK_OK(audit_quiet(f.fs));
			fsx_free(&f);
		}
		CHECK_EQ(zeroed[0], row[i].r - 4096);
		CHECK_EQ(zeroed[1], 0);
		/* x1000 files, in MiB to one decimal, as the table has it */
		{
			uint64_t tenths = (zeroed[0] * 10000 + (1 << 19)) >> 20;
			char got[16];

			snprintf(got, sizeof(got), "%llu.%llu",
				 (unsigned long long)(tenths / 10),
				 (unsigned long long)(tenths % 10));
			CHECK_MSG(!strcmp(got, row[i].per_1000), "R=%u: %s "
				  "MiB, want %s", row[i].r, got,
				  row[i].per_1000);
		}
	}
}

/* Re-truncating to the same size changes nothing; a tail that mixes
 * written and unwritten blocks ends unwritten in one record. */
TEST(rt_truncate_mixed_tail_and_same_size_again)
{
	struct fsx f;
	struct ref_stat st;
	uint64_t free0;
	struct ref_statfs sf;

	CHECK_OK(fsx_new(&f, "mem:16m", "mem:16m", "rtextsize=32k", OPT));
	/* R = 8 blocks: blocks 0..7 unwritten, then 1, 3, 5 written */
	CHECK_OK(ref_fallocate(f.fs, f.ino, 0, 0, 65536));
	for (int b = 1; b < 7; b += 2)
		CHECK_EQ(put(&f, 0x11, (uint64_t)b * 4096, 4096), 4096);
	CHECK_OK(ref_sync(f.fs));
	ref_counters_reset(f.fs);
	CHECK_OK(ref_truncate(f.fs, f.ino, 4096 + 100));
	MAP_IS(&f, { 0, 0, 1, REF_EXT_UNWRITTEN }, { 1, 1, 1, 0 },
	       { 2, 2, 6, REF_EXT_UNWRITTEN });
	CHECK_EQ(ref_counters(f.fs)->bytes_zeroed, 4096 - 100);
	CHECK_OK(ref_statfs(f.fs, &sf));
	free0 = sf.rt_free_blocks;
	ref_counters_reset(f.fs);
	CHECK_OK(ref_truncate(f.fs, f.ino, 4096 + 100));
	MAP_IS(&f, { 0, 0, 1, REF_EXT_UNWRITTEN }, { 1, 1, 1, 0 },
	       { 2, 2, 6, REF_EXT_UNWRITTEN });
	CHECK_EQ(ref_counters(f.fs)->bt.rec_inserts, 0);
	CHECK_EQ(ref_counters(f.fs)->bt.rec_updates, 0);
	CHECK_OK(ref_statfs(f.fs, &sf));
	CHECK_EQ(sf.rt_free_blocks, free0);
	CHECK_OK(ref_stat(f.fs, f.ino, &st));
	CHECK_EQ(st.blocks, 8);
	CHECK_OK(ref_truncate(f.fs, f.ino, 32768));
	CHECK(reads(&f, 0x11, 4096, 100));
	CHECK(reads(&f, 0, 4196, 32768 - 4196));
	CHECK_OK(audit_quiet(f.fs));
	fsx_free(&f);
}

/* ---- the fallback ---- */

/* fallback=rt_truncate: the naive work, the naive map, and counted. */
TEST(rt_truncate_forced_fallback_does_the_naive_work)
{
	struct fsx f[2];

	for (int tw = 0; tw < 2; tw++) {
		CHECK_OK(fsx_new(&f[tw], "mem:16m", "mem:16m", "rtextsize=16k",
				 tw ? FALLBACK : NAIVE));
		CHECK_EQ(put(&f[tw], 0x5c, 0, 100000), 100000);
		ref_counters_reset(f[tw].fs);
		CHECK_OK(ref_truncate(f[tw].fs, f[tw].ino, 40000));
		MAP_IS(&f[tw], { 0, 0, 12, 0 });
	}
	CHECK_EQ(ref_counters(f[1].fs)->bytes_zeroed, 49152 - 40000);
	CHECK_EQ(ref_counters(f[1].fs)->bytes_zeroed,
		 ref_counters(f[0].fs)->bytes_zeroed);
	CHECK_EQ(ref_counters(f[1].fs)->rt_truncate_fallbacks, 1);
	CHECK_EQ(ref_counters(f[0].fs)->rt_truncate_fallbacks, 0);
	/* switched off at run time: the optimized path again */
	ref_set_paths(f[1].fs, 0, 0);
	CHECK_OK(ref_truncate(f[1].fs, f[1].ino, 26000));
	MAP_IS(&f[1], { 0, 0, 7, 0 }, { 7, 7, 1, REF_EXT_UNWRITTEN });
	CHECK_EQ(ref_counters(f[1].fs)->rt_truncate_fallbacks, 1);
	CHECK_OK(audit_quiet(f[1].fs));
	fsx_free(&f[0]);
	fsx_free(&f[1]);
}

/*
 * The v6 bug's situation for real: no free data block for the record
 * split.  The optimized path must not split (nor fail): it falls back to
 * zeroing, and the tail reads zero after extension.  The test takes the
 * last free blocks with the engine's own allocator, as other metadata
 * would have, and gives them back before the audit.
 */
TEST(rt_truncate_falls_back_when_the_split_cannot_get_blocks)
{
	struct fsx f;
	struct ref_inode *ip;
	struct { uint64_t start, len; } held[64];
	int nheld = 0;

	CHECK_OK(fsx_new(&f, "mem:1m", "mem:16m", "bs=1k,maxrecs=4,"
			 "journal=64,inodes=16,rtextsize=4k", OPT));
	CHECK_EQ(put(&f, 0x77, 0, 40000), 40000);
	CHECK_OK(ref_sync(f.fs));
	while (nheld < 64 && alloc_extent(f.fs, 0, 1 << 20,
					  &held[nheld].start,
					  &held[nheld].len) == 0)
		nheld++;
	CHECK(nheld > 0 && nheld < 64);
	CHECK_OK(inode_get(f.fs, f.ino, &ip));
	CHECK(!bmap_can_insert(f.fs, ip, 1));
	ref_counters_reset(f.fs);
	CHECK_OK(ref_truncate(f.fs, f.ino, 9000));
	CHECK_EQ(ref_counters(f.fs)->rt_truncate_fallbacks, 1);
	CHECK_EQ(ref_counters(f.fs)->bytes_zeroed, 12288 - 9000);
	MAP_IS(&f, { 0, 0, 12, 0 });
	CHECK_OK(ref_truncate(f.fs, f.ino, 40000));
	CHECK(reads(&f, 0x77, 0, 9000));
	CHECK(reads(&f, 0, 9000, 40000 - 9000));
	for (int i = 0; i < nheld; i++)
		CHECK_OK(alloc_free(f.fs, held[i].start, held[i].len));
	CHECK_OK(audit_quiet(f.fs));
	fsx_free(&f);
}

/* ---- the audit sees the mistake the fallback exists to avoid ---- */

/* A tail left written with its old bytes (no conversion, no zeroing)
 * is exactly what the v6 bug left: the audit must name it. */
TEST(rt_truncate_audit_catches_a_written_stale_tail)
{
	struct fsx f;
	struct ref_inode *ip;

	CHECK_OK(fsx_new(&f, "mem:16m", "mem:16m", "rtextsize=16k", OPT));
	CHECK_EQ(put(&f, 0x42, 0, 65536), 65536);
	CHECK_OK(ref_truncate(f.fs, f.ino, 5000));
	CHECK_OK(audit_quiet(f.fs));
	/* undo the conversion: blocks 2, 3 written again, old bytes there */
	CHECK_OK(inode_get(f.fs, f.ino, &ip));
	CHECK_OK(bmap_convert(f.fs, ip, 2, 2, 0, false));
	CHECK_EQ(audit_quiet(f.fs), -EFSCORRUPTED);
	ref_abandon(f.fs);
	f.fs = NULL;
	fsx_free(&f);
}

/* ---- crashes ---- */

/*
 * A recorder over both devices with one write order: a cut after k
 * writes keeps the first k of either device (the order the engine issued
 * them in, as test_recovery.c does for one device).
 */
struct wlog { int dev; uint64_t off; size_t len; uint8_t *data; };
struct recorder { struct wlog *w; size_t n, cap; };
struct recdev { struct hw_dev dev; struct hw_dev *lower; struct recorder *r;
		int idx; };

static int rd_read(struct hw_dev *d, uint64_t off, void *buf, size_t len)
{
	return hw_read(((struct recdev *)d)->lower, off, buf, len);
}

static int rd_write(struct hw_dev *d, uint64_t off, const void *buf,
		    size_t len, unsigned flags)
{
	struct recdev *rd = (struct recdev *)d;
	struct recorder *r = rd->r;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->w = realloc(r->w, r->cap * sizeof(*r->w));
	}
	r->w[r->n] = (struct wlog){ rd->idx, off, len, malloc(len) };
	memcpy(r->w[r->n++].data, buf, len);
	return hw_write(rd->lower, off, buf, len, flags);
}

static int rd_flush(struct hw_dev *d)
{
	return hw_flush(((struct recdev *)d)->lower);
}

static void rd_destroy(struct hw_dev *d)
{
	hw_close(((struct recdev *)d)->lower);
	free(d);
}

static const struct hw_ops rd_ops = {
	.name = "record2", .read = rd_read, .write = rd_write,
	.flush = rd_flush, .destroy = rd_destroy,
};

static struct hw_dev *rd_open(const char *spec, struct recorder *r, int idx)
{
	struct recdev *rd = calloc(1, sizeof(*rd));

	if (hw_open(spec, &rd->lower, NULL, 0)) {
		free(rd);
		return NULL;
	}
	rd->dev.ops = &rd_ops;
	rd->dev.geo = rd->lower->geo;
	rd->r = r;
	rd->idx = idx;
	snprintf(rd->dev.spec, sizeof(rd->dev.spec), "record2:%s", spec);
	return &rd->dev;
}

/* Fresh devices holding the first k recorded writes. */
static int image_at(const struct recorder *r, size_t k, struct fsx *f)
{
	memset(f, 0, sizeof(*f));
	if (hw_open("mem:4m", &f->dev, NULL, 0) ||
	    hw_open("mem:4m", &f->rtdev, NULL, 0))
		return -ENOMEM;
	for (size_t i = 0; i < k; i++)
		hw_write(r->w[i].dev ? f->rtdev : f->dev, r->w[i].off,
			 r->w[i].data, r->w[i].len, 0);
	return 0;
}

/*
 * Cut the optimized truncate (and the sync after it) at every write:
 * each image mounts, passes the audit, keeps [0, S) and, once extended
 * again, reads zero in [S, old size), whichever size survived.
 */
TEST(rt_truncate_cut_at_every_write_recovers_a_zero_tail)
{
	const uint64_t old = 204800, S = 70000;
	struct recorder rec = { 0 };
	struct ref_mkfs_opts mo = { .rtextsize = 32768, .btree_maxrecs = 4,
				    .journal_blocks = 64 };
	struct fsx f = { 0 };
	size_t start, k;
	int cuts = 0;

	f.dev = rd_open("mem:4m", &rec, 0);
	f.rtdev = rd_open("mem:4m", &rec, 1);
	CHECK(f.dev && f.rtdev);
	mo.rtdev = f.rtdev;
	CHECK_OK(ref_mkfs(f.dev, &mo));
	CHECK_OK(mount_twin(&f, OPT));
	CHECK_OK(ref_create(f.fs, "f", &f.ino));
	CHECK_OK(ref_set_flags(f.fs, f.ino, REF_FLAG_REALTIME, 0));
	/* several records: written pieces with unwritten ones between */
	CHECK_OK(ref_fallocate(f.fs, f.ino, 0, 0, old));
	for (uint64_t o = 0; o < old; o += 12288)
		CHECK_EQ(put(&f, 0x3d, o, 8192), 8192);
	CHECK_EQ(put(&f, 0x3d, 65536, 8192), 8192);
	CHECK_OK(ref_sync(f.fs));
	start = rec.n;
	CHECK_OK(ref_truncate(f.fs, f.ino, S));
	CHECK_EQ(ref_counters(f.fs)->rt_truncate_fallbacks, 0);
	CHECK_OK(ref_sync(f.fs));
	CHECK_OK(ref_unmount(f.fs));
	f.fs = NULL;
	CHECK_MSG(rec.n > start + 3, "only %zu writes", rec.n - start);

	for (k = start; k <= rec.n; k++) {
		struct fsx g;
		struct ref_stat st;
		uint64_t ino;

		CHECK_OK(image_at(&rec, k, &g));
		CHECK_MSG(mount_twin(&g, OPT) == 0, "cut %zu: mount", k);
		CHECK_MSG(audit_quiet(g.fs) == 0, "cut %zu: audit", k);
		CHECK_OK(ref_lookup(g.fs, "f", &ino));
		g.ino = ino;
		CHECK_OK(ref_stat(g.fs, ino, &st));
		CHECK_MSG(st.size == S || st.size == old, "cut %zu: size %llu",
			  k, (unsigned long long)st.size);
		/* [0, S): what was written there, 0x3d or unwritten zeroes */
		CHECK_MSG(reads(&g, 0x3d, 65536, S - 65536),
			  "cut %zu: data before S lost", k);
		CHECK_OK(ref_truncate(g.fs, ino, S));
		CHECK_OK(ref_truncate(g.fs, ino, old));
		CHECK_MSG(reads(&g, 0, S, old - S), "cut %zu: stale tail", k);
		CHECK_MSG(audit_quiet(g.fs) == 0, "cut %zu: audit after", k);
		fsx_free(&g);
		cuts++;
	}
	CHECK(cuts > 3);
	hw_close(f.dev);
	hw_close(f.rtdev);
	for (size_t i = 0; i < rec.n; i++)
		free(rec.w[i].data);
	free(rec.w);
}

/* ---- the extent map stays canonical with a small maxext ---- */

static int ops_then_audit(const char *mkfs, void (*ops)(struct fsx *))
{
	struct ref_mkfs_opts o = { 0 };
	struct fsx f;
	int err;

	memset(&f, 0, sizeof(f));
	if (hw_open("mem:64m", &f.dev, NULL, 0) ||
	    ref_parse_mkfs_opts(mkfs, &o, NULL, 0) || ref_mkfs(f.dev, &o) ||
	    ref_mount(f.dev, NULL, &f.fs) || ref_create(f.fs, "f", &f.ino))
		return -EINVAL;
	ops(&f);
	err = audit_quiet(f.fs);
	ref_unmount(f.fs);
	hw_close(f.dev);
	return err;
}

/* The fuzzers' find (bs=2k,maxext=2): the unwritten record [14, 16)
 * split by a write, its unwritten rest [15] next to [16, 18). */
static void write_into_falloc(struct fsx *f)
{
	put(f, 1, 0, 1);
	ref_fallocate(f->fs, f->ino, 0, 0, 36864);
	put(f, 2, 28672, 2304);
}

/*
 * bs=1k, maxext=16: a 20k file is records [0,16) [16,20), contiguous on
 * the device once an earlier write far away built the B+tree root.  A
 * split of blocks 3..6 leaves [7,16), which fits with [16,20).
 */
static void twenty_k(struct fsx *f, int prealloc)
{
	put(f, 1, 102400, 1);
	if (prealloc)
		ref_fallocate(f->fs, f->ino, 0, 0, 20480);
	else
		put(f, 1, 0, 20480);
}

static void write_into_prealloc(struct fsx *f)
{
	twenty_k(f, 1);
	put(f, 2, 3072, 1024);
}

static void zero_inside(struct fsx *f)
{
	twenty_k(f, 0);
	ref_fallocate(f->fs, f->ino, REF_FALLOC_ZERO_RANGE, 2560, 1536);
}

static void punch_inside(struct fsx *f)
{
	twenty_k(f, 0);
	ref_fallocate(f->fs, f->ino, REF_FALLOC_PUNCH_HOLE |
		      REF_FALLOC_KEEP_SIZE, 5120, 1024);
}

static void insert_inside(struct fsx *f)
{
	twenty_k(f, 0);
	ref_fallocate(f->fs, f->ino, REF_FALLOC_INSERT_RANGE, 6144, 1024);
}

TEST(bmap_splits_leave_no_mergeable_records_with_a_small_maxext)
{
	static const char geo[] = "bs=1k,maxrecs=5,maxext=16";

	CHECK_OK(ops_then_audit("bs=2k,maxext=2", write_into_falloc));
	CHECK_OK(ops_then_audit(geo, write_into_prealloc));
	CHECK_OK(ops_then_audit(geo, zero_inside));
	CHECK_OK(ops_then_audit(geo, punch_inside));
	CHECK_OK(ops_then_audit(geo, insert_inside));
}

int main(int argc, char **argv) { return test_main(argc, argv); }
