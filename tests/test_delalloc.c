/*
 * test_delalloc.c - delayed allocation, compressed writeback and seed path
 * (e): the delalloc cap on zoned devices.
 *
 * What must hold: writes into holes allocate nothing until writeback;
 * contents are identical whether a piece was compressed or not, across
 * drop_caches and remount; changes to part of a compressed extent keep
 * every byte; the seed's chunk arithmetic, at reduced size; and the audit
 * catches the states likely mistakes would leave (a zoned extent over the
 * append limit, an unbalanced reservation, a delalloc page over a mapped
 * block, a compressed frame that does not decode).
 */
#include "test.h"

#include "hw/hw.h"
#include "ref/ref.h"
#include "ref/ref_internal.h"
#include "ref/delalloc_internal.h"
#include "ref/pcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BS 4096u
#define KB 1024u
#define MB (1024u * 1024u)

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

/* Collect message lines into arg (a 1 KiB buffer). */
static void collect(void *arg, const char *line)
{
	size_t n = strlen(arg);

	snprintf((char *)arg + n, 1024 - n, "%s\n", line);
}

struct dfs {
	struct hw_dev *dev, *rtdev;
	struct ref_fs *fs;
	char mount[128];
};

static int d_mount(struct dfs *z, const char *opts)
{
	struct ref_mount_opts mo = { 0 };

	snprintf(z->mount, sizeof(z->mount), "%s", opts);
	if (ref_parse_mount_opts(opts, &mo, NULL, 0))
		return -EINVAL;
	mo.rtdev = z->rtdev;
	mo.msg = quiet;
	return ref_mount(z->dev, &mo, &z->fs);
}

static int d_new(struct dfs *z, const char *rtdev, const char *opts)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 8, .inodes = 64 };

	memset(z, 0, sizeof(*z));
	if (hw_open("mem:256m", &z->dev, NULL, 0) ||
	    (rtdev && hw_open(rtdev, &z->rtdev, NULL, 0)))
		return -1;
	o.rtdev = z->rtdev;
	if (ref_mkfs(z->dev, &o))
		return -1;
	return d_mount(z, opts);
}

static void d_close(struct dfs *z)
{
	if (z->fs)
		ref_unmount(z->fs);
	hw_close(z->dev);
	if (z->rtdev)
		hw_close(z->rtdev);
}

static int d_fsck(struct dfs *z)
{
	struct ref_mount_opts mo = { .rtdev = z->rtdev, .msg = quiet };

	return ref_fsck_opts(z->dev, &mo);
}

struct ctr_find { const char *name; uint64_t v; };
static void ctr_visit(void *arg, const char *name, uint64_t v)
{
	struct ctr_find *f = arg;

	if (!strcmp(f->name, name))
		f->v = v;
}

static uint64_t ctr(struct ref_fs *fs, const char *name)
{
	struct ctr_find f = { name, UINT64_MAX };

	ref_counters_foreach(ref_counters(fs), ctr_visit, &f);
	return f.v;
}

/* Compressible bytes (a short repeating record) or not (xorshift). */
static void fill(uint8_t *b, size_t n, unsigned seed, int compressible)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);

	for (size_t i = 0; i < n; i++) {
		if (compressible) {
			b[i] = (uint8_t)("fsoracle delalloc "[i % 18] + seed);
			continue;
		}
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

/* Compression needs the library (not in MSan builds): say so, skip. */
#define NEED_COMPRESSION()                                                  \
	do {                                                                \
		if (!compress_available()) {                                \
			printf("    skipped: built without a compression "  \
			       "library\n");                               \
			return;                                             \
		}                                                           \
	} while (0)

/* The file reads back as want (len bytes from 0, size len). */
static int reads_as(struct ref_fs *fs, uint64_t ino, const uint8_t *want,
		    size_t len)
{
	uint8_t *got = malloc(len + 1);
	struct ref_stat st;
	int ok;

	if (!got || ref_stat(fs, ino, &st) || st.size != len) {
		free(got);
		return 0;
	}
	ok = ref_pread(fs, ino, got, len + 1, 0) == (int64_t)len &&
	     memcmp(got, want, len) == 0;
	free(got);
	return ok;
}

/*
 * The audit passes; unmounted, the image passes fsck; mounted again with
 * opts, the file still reads as want (len bytes).  Closes z.
 */
static void audited_and_remounted(struct dfs *z, const char *opts,
				  uint64_t ino, const uint8_t *want, size_t len)
{
	CHECK_OK(ref_audit(z->fs, quiet, NULL));
	CHECK_OK(ref_unmount(z->fs));
	z->fs = NULL;
	CHECK_OK(d_fsck(z));
	CHECK_OK(d_mount(z, opts));
	CHECK(reads_as(z->fs, ino, want, len));
	d_close(z);
}

TEST(delalloc_allocates_nothing_until_writeback)
{
	struct dfs z;
	uint8_t buf[64 * KB];
	struct ref_stat st;
	uint64_t ino;

	CHECK_OK(d_new(&z, NULL, "delalloc"));
	fill(buf, sizeof(buf), 1, 0);
	CHECK_OK(ref_create(z.fs, "f", &ino));
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(ref_stat(z.fs, ino, &st));
	CHECK_EQ(st.blocks, 0);
	CHECK_EQ(st.size, sizeof(buf));
	CHECK_EQ(ctr(z.fs, "delalloc_pages"), 16);
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	CHECK(reads_as(z.fs, ino, buf, sizeof(buf)));
	CHECK_OK(ref_fsync(z.fs, ino));
	CHECK_OK(ref_stat(z.fs, ino, &st));
	CHECK_EQ(st.blocks, 16);
	CHECK_EQ(ctr(z.fs, "delalloc_calls"), 1);
	CHECK_OK(ref_unmount(z.fs));
	CHECK_OK(d_mount(&z, "delalloc"));
	CHECK(reads_as(z.fs, ino, buf, sizeof(buf)));
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	CHECK_OK(d_fsck(&z));
	d_close(&z);
}

/* A filesystem with compression on that has written back a file, so
 * its delalloc state (fs->da) is made: that state, or NULL; the file
 * is *ino. */
static const void *da_used(struct dfs *z, uint8_t *buf, size_t len,
			   uint64_t *ino)
{
	if (d_new(z, NULL, "delalloc,compress=zstd") ||
	    ref_create(z->fs, "f", ino) ||
	    ref_pwrite(z->fs, *ino, buf, len, 0) != (int64_t)len ||
	    ref_fsync(z->fs, *ino))
		return NULL;
	return z->fs->da;
}

/*
 * Unmount parks a delalloc state's scratch for the next mount in the
 * process (four at most), and what it holds works there: the same
 * states come back, and the files written through them read back.
 */
TEST(unmount_parks_the_delalloc_scratch_for_the_next_mount)
{
	enum { N = 4 };
	struct dfs z[N + 1];
	const void *first[N], *again;
	uint8_t buf[256 * KB];
	uint64_t ino;

	NEED_COMPRESSION();
	fill(buf, sizeof(buf), 7, 1);
	/* N at once take whatever earlier tests parked, and leave N parked */
	for (int i = 0; i < N; i++)
		CHECK((first[i] = da_used(&z[i], buf, sizeof(buf), &ino)) != NULL);
	CHECK_EQ(da_parked(), 0);
	for (int i = 0; i < N; i++)
		d_close(&z[i]);
	CHECK_EQ(da_parked(), N);
	for (int i = 0; i < N; i++) {
		int found = 0;

		again = da_used(&z[i], buf, sizeof(buf), &ino);
		CHECK(again != NULL);
		for (int k = 0; k < N; k++)
			found += again == first[k];
		CHECK_EQ(found, 1);
		CHECK_OK(ref_drop_caches(z[i].fs));
		CHECK(reads_as(z[i].fs, ino, buf, sizeof(buf)));
	}
	/* none parked now: one more is made afresh, and of the five only
	 * four are kept when they go */
	CHECK_EQ(da_parked(), 0);
	again = da_used(&z[N], buf, sizeof(buf), &ino);
	CHECK(again != NULL);
	for (int k = 0; k < N; k++)
		CHECK(again != first[k]);
	for (int i = 0; i <= N; i++)
		d_close(&z[i]);
	CHECK_EQ(da_parked(), N);
}

/*
 * A compress=zstd filesystem with file f (*ino): 1 MiB that compresses,
 * then 256 KiB that does not, written and fsynced.  Returns those bytes
 * (the caller frees them), or NULL when any of that failed.
 */
static uint8_t *mixed_file(struct dfs *z, uint64_t *ino)
{
	uint8_t *buf = malloc(MB + 256 * KB);

	if (buf) {
		fill(buf, MB, 2, 1);
		fill(buf + MB, 256 * KB, 3, 0);
	}
	if (!buf || d_new(z, NULL, "compress=zstd") ||
	    ref_create(z->fs, "f", ino) ||
	    ref_pwrite(z->fs, *ino, buf, MB + 256 * KB, 0) != MB + 256 * KB ||
	    ref_fsync(z->fs, *ino)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * A write taken as delalloc is written back, whatever B+tree blocks other
 * ops allocated since.  Here one page is promised with the device nearly
 * full, then writes into an unwritten extent split its records (every
 * other block converted: B+tree blocks only, no data block); the
 * remount's writeback must still find the page its block.  The B+tree
 * allocations may fail with ENOSPC first: they must not take the
 * promised block and the floor its mapping needs.
 */
TEST(a_delalloc_write_is_written_back_after_b_tree_blocks_took_the_reserve)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .inodes = 16 };
	static uint8_t page[BS];
	struct ref_statfs sf;
	struct dfs z = { 0 };
	uint64_t a, b, off = 0;
	int64_t r = 0;

	CHECK_OK(hw_open("mem:8m", &z.dev, NULL, 0));
	CHECK_OK(ref_mkfs(z.dev, &o));
	CHECK_OK(d_mount(&z, "delalloc,pagecache=64"));
	CHECK_OK(ref_create(z.fs, "a", &a));
	CHECK_OK(ref_create(z.fs, "b", &b));
	/* a: unwritten extents until about 80 blocks are left */
	for (;;) {
		CHECK_OK(ref_statfs(z.fs, &sf));
		if (sf.free_blocks <= 80)
			break;
		CHECK_OK(ref_fallocate(z.fs, a, 0, off, 16 * BS));
		off += 16 * BS;
	}
	CHECK_OK(ref_sync(z.fs));
	/* b: one delalloc page, promised */
	fill(page, BS, 7, 0);
	CHECK_EQ(ref_pwrite(z.fs, b, page, BS, 0), (int64_t)BS);
	CHECK_EQ(z.fs->pc->ndelalloc[0], 1);
	/* a: every other block written, splitting its records */
	for (uint64_t blk = 1; blk * BS < off && r >= 0; blk += 2)
		r = ref_pwrite(z.fs, a, page, 1, blk * BS);
	CHECK(r == 1 || r == -ENOSPC);
	audited_and_remounted(&z, "delalloc,pagecache=64", b, page, BS);
}

/*
 * Delayed allocation keeps back the extent-map blocks its promised pages
 * may need: on a filesystem of one-block extents and 5-record B+tree
 * nodes every page is a record, and a tree of them needs a node for every
 * two or three.  Pages written one by one until the device refuses one:
 * every page it took is written back by the sync, and the audit passes
 * (with a margin of a sixteenth the sync failed with ENOSPC).
 */
TEST(delalloc_keeps_back_the_map_blocks_of_one_block_extents)
{
	struct ref_mkfs_opts o = { .max_extlen = 1, .btree_maxrecs = 5,
				   .inodes = 16 };
	static uint8_t page[BS];
	struct dfs z = { 0 };
	uint64_t a, n = 0;
	int64_t r = (int64_t)BS;

	CHECK_OK(hw_open("mem:3m", &z.dev, NULL, 0));
	CHECK_OK(ref_mkfs(z.dev, &o));
	CHECK_OK(d_mount(&z, "delalloc,pagecache=2048"));
	CHECK_OK(ref_create(z.fs, "a", &a));
	fill(page, BS, 9, 0);
	while (r == (int64_t)BS && n < 2048) {
		r = ref_pwrite(z.fs, a, page, BS, n * BS);
		n += r == (int64_t)BS;
	}
	CHECK(r == -ENOSPC);
	CHECK(n > 100);
	CHECK_OK(ref_sync(z.fs));
	CHECK_EQ(z.fs->pc->ndelalloc[0], 0);
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	d_close(&z);
}

TEST(compressed_writeback_reads_back_everywhere)
{
	size_t len = MB + 256 * KB;
	struct ref_stat st;
	struct dfs z;
	uint64_t ino;
	uint8_t *buf;

	NEED_COMPRESSION();
	buf = mixed_file(&z, &ino);
	CHECK(buf);
	/* 1.25 MiB: 3 chunks; 8 compressed pieces, 2 that do not shrink */
	CHECK_EQ(ctr(z.fs, "async_chunks"), 3);
	CHECK_EQ(ctr(z.fs, "compressed_extents"), 8);
	CHECK_EQ(ctr(z.fs, "compress_fallbacks"), 2);
	CHECK_OK(ref_stat(z.fs, ino, &st));
	CHECK(st.blocks < 64 + 16);   /* far below 320 */
	CHECK_OK(ref_drop_caches(z.fs));
	CHECK(reads_as(z.fs, ino, buf, len));
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	CHECK_OK(d_fsck(&z));
	/* read without compression on, and without a page cache */
	CHECK_OK(d_mount(&z, "pagecache=0"));
	CHECK(reads_as(z.fs, ino, buf, len));
	d_close(&z);
	free(buf);
}

TEST(changes_to_part_of_a_compressed_extent_keep_every_byte)
{
	size_t len = MB + 256 * KB;
	uint8_t *buf, one = 0xab;
	struct dfs z;
	uint64_t ino;

	NEED_COMPRESSION();
	buf = mixed_file(&z, &ino);
	CHECK(buf);
	/* a byte inside the first extent */
	CHECK_EQ(ref_pwrite(z.fs, ino, &one, 1, 5000), 1);
	buf[5000] = one;
	/* punch inside the second, zero inside the third */
	CHECK_OK(ref_fallocate(z.fs, ino, REF_FALLOC_PUNCH_HOLE |
			       REF_FALLOC_KEEP_SIZE, 130 * KB, 10 * KB));
	memset(buf + 130 * KB, 0, 10 * KB);
	CHECK_OK(ref_fallocate(z.fs, ino, REF_FALLOC_ZERO_RANGE |
			       REF_FALLOC_KEEP_SIZE, 260 * KB + 7, 3 * KB));
	memset(buf + 260 * KB + 7, 0, 3 * KB);
	/* collapse a block out of the fourth */
	CHECK_OK(ref_fallocate(z.fs, ino, REF_FALLOC_COLLAPSE_RANGE,
			       400 * KB, 4 * KB));
	memmove(buf + 400 * KB, buf + 404 * KB, len - 404 * KB);
	len -= 4 * KB;
	/* truncate inside the sixth */
	len = 700 * KB + 123;
	CHECK_OK(ref_truncate(z.fs, ino, len));
	CHECK(ctr(z.fs, "compressed_expands") >= 5);
	CHECK(reads_as(z.fs, ino, buf, len));
	audited_and_remounted(&z, "compress=zstd", ino, buf, len);
	free(buf);
}

/*
 * A fresh filesystem of 1 KiB blocks on dev, mounted compress=zstd, with
 * file f: buf's 128 KiB written, fsynced, one compressed extent.  0, or
 * -1 when any step fails.
 */
static int one_compressed_file(struct dfs *z, const char *dev,
			       const uint8_t *buf, uint64_t *f)
{
	struct ref_mkfs_opts o = { .blocksize = KB, .inodes = 16 };

	if (hw_open(dev, &z->dev, NULL, 0) || ref_mkfs(z->dev, &o) ||
	    d_mount(z, "compress=zstd") || ref_create(z->fs, "f", f) ||
	    ref_pwrite(z->fs, *f, buf, 128 * KB, 0) != 128 * KB ||
	    ref_fsync(z->fs, *f) || ctr(z->fs, "compressed_extents") != 1)
		return -1;
	return 0;
}

/*
 * Expanding a compressed extent (a write into part of it) where the free
 * space after it is fragmented: 1 KiB blocks, f's 128 KiB compressed
 * into a few blocks, then g's 200 blocks with every other one punched.
 * The first fit from f's goal is 100 single blocks, more pieces than one
 * expansion step takes: that was ENOSPC with the device nearly empty.
 * The free run past g holds the extent whole.
 */
TEST(a_compressed_extent_expands_past_fragmented_free_space)
{
	uint8_t *buf = malloc(128 * KB), *junk = malloc(200 * KB), one = 0xab;
	struct dfs z = { 0 };
	uint64_t f, g;

	NEED_COMPRESSION();
	CHECK(buf && junk);
	fill(buf, 128 * KB, 5, 1);
	fill(junk, 200 * KB, 6, 0);
	CHECK_OK(one_compressed_file(&z, "mem:16m", buf, &f));
	CHECK_OK(ref_create(z.fs, "g", &g));
	CHECK_EQ(ref_pwrite(z.fs, g, junk, 200 * KB, 0), 200 * KB);
	CHECK_OK(ref_fsync(z.fs, g));
	for (uint64_t b = 0; b < 200; b += 2)
		CHECK_OK(ref_fallocate(z.fs, g, REF_FALLOC_PUNCH_HOLE |
				       REF_FALLOC_KEEP_SIZE, b * KB, KB));
	/* the punched blocks become reusable once durable and checkpointed */
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	CHECK_OK(d_mount(&z, "compress=zstd"));
	CHECK_EQ(ref_pwrite(z.fs, f, &one, 1, 60 * KB), 1);
	buf[60 * KB] = one;
	CHECK_EQ(ctr(z.fs, "compressed_expands"), 1);
	CHECK(reads_as(z.fs, f, buf, 128 * KB));
	audited_and_remounted(&z, "compress=zstd", f, buf, 128 * KB);
	free(buf);
	free(junk);
}

/*
 * An expansion whose write of the new blocks fails gives them back: the
 * write returns the error, nothing was remapped, no block is left
 * allocated and unmapped (the audit's count of free blocks agrees, and
 * statfs shows as many free as before), and the file reads as before.
 */
TEST(an_expansion_whose_new_blocks_fail_to_write_gives_them_back)
{
	struct hw_fault eio = { .ops = HW_FAULT_WRITE, .nth = 1 };
	struct ref_statfs before, after;
	uint8_t *buf = malloc(128 * KB), one = 0xab;
	struct dfs z = { 0 };
	uint64_t f;

	NEED_COMPRESSION();
	CHECK(buf);
	fill(buf, 128 * KB, 5, 1);
	CHECK_OK(one_compressed_file(&z, "faulty:mem:16m", buf, &f));
	CHECK_OK(ref_statfs(z.fs, &before));
	CHECK(hw_fault_arm(z.dev, &eio) >= 0);
	CHECK_EQ(ref_pwrite(z.fs, f, &one, 1, 60 * KB), -EIO);
	CHECK_EQ(hw_fault_fired(z.dev), 1);
	CHECK_OK(hw_fault_disarm(z.dev, -1));
	CHECK_EQ(ctr(z.fs, "compressed_expands"), 0);
	CHECK_OK(ref_statfs(z.fs, &after));
	CHECK_EQ(after.free_blocks, before.free_blocks);
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	CHECK(reads_as(z.fs, f, buf, 128 * KB));
	d_close(&z);
	free(buf);
}

/*
 * The seed's arithmetic at 8 MiB, 672 KiB appends: naive 13 calls (12 of
 * 672 KiB, one of 128), 12 x 2 + 1 = 25 chunks, 12 x 6 + 1 = 73
 * compressed extents; optimized 1 call, 16 chunks, 64 extents.  Without
 * compression both make the same zone appends.
 */
static void seed_run(int naive, int compress, uint64_t out[4])
{
	char opts[96];
	struct dfs z;
	uint8_t *buf = calloc(1, 8 * MB);
	uint64_t ino;

	CHECK(buf);
	snprintf(opts, sizeof(opts), "%s,pagecache=4096%s",
		 compress ? "compress=zstd" : "delalloc",
		 naive ? ",naive=delalloc_cap" : "");
	CHECK_OK(d_new(&z, "zoned:mem,size=256m,zone=64m,append_max=672k", opts));
	CHECK_OK(ref_create(z.fs, "f", &ino));
	CHECK_OK(ref_set_flags(z.fs, ino, REF_FLAG_REALTIME, 0));
	fill(buf, 8 * MB, 4, 1);
	ref_counters_reset(z.fs);
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, 8 * MB, 0), 8 * MB);
	CHECK_OK(ref_sync(z.fs));
	out[0] = ctr(z.fs, "delalloc_calls");
	out[1] = ctr(z.fs, "async_chunks");
	out[2] = ctr(z.fs, "compressed_extents");
	out[3] = ctr(z.fs, "zone_appends");
	CHECK_OK(ref_drop_caches(z.fs));
	CHECK(reads_as(z.fs, ino, buf, 8 * MB));
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	d_close(&z);
	free(buf);
}

TEST(seed_004_chunk_arithmetic_at_8_mib)
{
	uint64_t n[4], o[4];

	NEED_COMPRESSION();
	seed_run(1, 1, n);
	seed_run(0, 1, o);
	CHECK_EQ(n[0], 13);
	CHECK_EQ(n[1], 25);
	CHECK_EQ(n[2], 73);
	CHECK_EQ(o[0], 1);
	CHECK_EQ(o[1], 16);
	CHECK_EQ(o[2], 64);
	seed_run(1, 0, n);
	seed_run(0, 0, o);
	CHECK_EQ(n[0], 13);
	CHECK_EQ(o[0], 1);
	/* at least ceil(8 MiB / 672 KiB) appends (the rewrite steps also
	 * bound them by the journal's room), the same either way */
	CHECK(n[3] >= 13);
	CHECK_EQ(o[3], n[3]);
	CHECK_EQ(n[2] + o[2], 0);
}

TEST(the_direct_io_fallback_respects_the_append_limit)
{
	struct dfs z;
	uint8_t *buf = malloc(2 * MB);
	uint64_t ino;

	CHECK(buf);
	CHECK_OK(d_new(&z, "zoned:mem,size=256m,zone=64m,append_max=672k",
		       "delalloc,fallback=delalloc_cap"));
	CHECK_OK(ref_create(z.fs, "f", &ino));
	CHECK_OK(ref_set_flags(z.fs, ino, REF_FLAG_REALTIME, 0));
	fill(buf, 2 * MB, 5, 0);
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, 2 * MB, 0), 2 * MB);
	CHECK_EQ(ctr(z.fs, "delalloc_pages"), 0);
	CHECK(ctr(z.fs, "delalloc_direct") >= 1);
	CHECK(ctr(z.fs, "zone_appends") >= 4); /* 3 x 672 KiB + 32 KiB, or more */
	CHECK(reads_as(z.fs, ino, buf, 2 * MB));
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	d_close(&z);
	free(buf);
}

TEST(audit_catches_a_zoned_extent_over_the_append_limit)
{
	struct ref_extent a, b, big;
	struct ref_inode *ip;
	char msgs[1024];
	struct dfs z;
	uint8_t *buf = malloc(MB);
	uint64_t ino;

	CHECK(buf);
	CHECK_OK(d_new(&z, "zoned:mem,size=256m,zone=64m,append_max=672k",
		       "delalloc"));
	CHECK_OK(ref_create(z.fs, "f", &ino));
	CHECK_OK(ref_set_flags(z.fs, ino, REF_FLAG_REALTIME, 0));
	fill(buf, MB, 6, 0);
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, MB, 0), MB);
	CHECK_OK(ref_fsync(z.fs, ino));
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	/* two appends side by side on the device, two records (the cap
	 * keeps them apart); one record over both is what one allocation
	 * past the append limit would have left */
	CHECK_OK(inode_get(z.fs, ino, &ip));
	CHECK_OK(bmap_lookup(z.fs, ip, 0, &a));
	CHECK_OK(bmap_lookup(z.fs, ip, a.len, &b));
	CHECK(a.len <= 168 && a.state == 0 && b.state == 0);
	CHECK_EQ(b.startblk, a.startblk + a.len);
	CHECK_OK(bmap_unmap_step(z.fs, ip, 0, a.len + b.len));
	/* (unmap freed them: take them back, as the bad allocation held) */
	big = (struct ref_extent){ 0, a.startblk, a.len + b.len, 0 };
	CHECK_OK(bmap_map(z.fs, ip, &big));
	msgs[0] = 0;
	CHECK_EQ(ref_audit(z.fs, collect, msgs), -EFSCORRUPTED);
	CHECK(strstr(msgs, "the zone-append limit") != NULL);
	ref_abandon(z.fs);
	z.fs = NULL;
	d_close(&z);
	free(buf);
}

TEST(audit_catches_unbalanced_reservations_and_misplaced_delalloc)
{
	struct dfs z;
	uint8_t buf[32 * KB];
	struct pc_page *p;
	uint64_t ino;

	CHECK_OK(d_new(&z, NULL, "delalloc"));
	fill(buf, sizeof(buf), 7, 0);
	CHECK_OK(ref_create(z.fs, "f", &ino));
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	/* a reservation nothing holds: released twice, or taken twice */
	z.fs->pc->ndelalloc[0]++;
	CHECK_EQ(ref_audit(z.fs, quiet, NULL), -EFSCORRUPTED);
	z.fs->pc->ndelalloc[0]--;
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	/* a page left delalloc after its block was mapped */
	CHECK_OK(ref_fsync(z.fs, ino));
	p = pc_peek_page(z.fs->pc, pc_map_of(z.fs->pc, ino), 3);
	CHECK(p && !p->delalloc);
	p->delalloc = 1;
	z.fs->pc->ndelalloc[0]++;
	pc_page_set_mark(z.fs->pc, p, PC_DIRTY);
	CHECK_EQ(ref_audit(z.fs, quiet, NULL), -EFSCORRUPTED);
	pc_page_clear_mark(z.fs->pc, p, PC_DIRTY);
	pc_page_undelalloc(z.fs->pc, p);
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	d_close(&z);
}

static int first_extent(void *arg, const struct ref_extent *e)
{
	*(struct ref_extent *)arg = *e;
	return 1;
}

TEST(fsck_catches_a_compressed_frame_that_does_not_decode)
{
	uint8_t *buf, junk[BS];
	struct ref_extent e;
	struct dfs z;
	uint64_t ino;

	NEED_COMPRESSION();
	buf = mixed_file(&z, &ino);
	CHECK(buf);
	CHECK_OK(ref_bmap(z.fs, ino, first_extent, &e));
	CHECK(e.state & REF_EXT_COMPRESSED);
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	CHECK_OK(d_fsck(&z));
	fill(junk, sizeof(junk), 8, 0);
	CHECK_OK(hw_write(z.dev, e.startblk * BS, junk, BS, 0));
	CHECK_EQ(d_fsck(&z), -EFSCORRUPTED);
	d_close(&z);
	free(buf);
}

/* The last compressed extent of a file (ref_bmap's callback). */
static int last_compressed(void *arg, const struct ref_extent *e)
{
	if (e->state & REF_EXT_COMPRESSED)
		*(struct ref_extent *)arg = *e;
	return 0;
}

/* mixed_file, its last compressed extent in *e and its inode in *ip; the
 * file's bytes, or NULL (nothing left open) when any step fails. */
static uint8_t *with_last_compressed(struct dfs *z, struct ref_extent *e,
				     struct ref_inode **ip)
{
	uint64_t ino;
	uint8_t *buf = mixed_file(z, &ino);

	if (!buf)
		return NULL;
	if (ref_bmap(z->fs, ino, last_compressed, e) ||
	    !(e->state & REF_EXT_COMPRESSED) || inode_get(z->fs, ino, ip)) {
		d_close(z);
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * The audit decodes a compressed frame once a mount: a frame whose bytes
 * are those that decoded to its length before is not decoded again; the
 * same bytes for an extent a block shorter are, and refused; and a frame
 * whose bytes changed is, even the frame decoded last (the bytes a read
 * would take from memory): junk over it fails the audit.
 */
TEST(the_audit_decodes_a_frame_again_only_when_its_bytes_changed)
{
	struct ref_extent e = { 0 }, shorter;
	struct ref_inode *ip;
	uint8_t *buf, junk[BS];
	uint64_t first;
	struct dfs z;

	NEED_COMPRESSION();
	buf = with_last_compressed(&z, &e, &ip);
	CHECK(buf);
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	first = compr_decodes(z.fs);
	CHECK(first >= 8); /* a mebibyte compressed: 128 KiB a frame */
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	CHECK_EQ(compr_decodes(z.fs), first);
	/* the same bytes said to decode to a block less: decoded, refused */
	shorter = e;
	shorter.len--;
	CHECK_EQ(compr_check(z.fs, ip, &shorter), -EFSCORRUPTED);
	CHECK_EQ(compr_decodes(z.fs), first + 1);
	fill(junk, sizeof(junk), 8, 0);
	CHECK_OK(hw_write(z.dev, e.startblk * BS, junk, BS, 0));
	CHECK_EQ(ref_audit(z.fs, quiet, NULL), -EFSCORRUPTED);
	CHECK_EQ(compr_decodes(z.fs), first + 2);
	d_close(&z);
	free(buf);
}

/*
 * A read of a frame whose very bytes decoded before takes what they
 * decoded to from the audit's slot, even after the extent a read keeps
 * decoded is forgotten: the same bytes, no decode.  Junk over the frame
 * is decoded again, and refused.
 */
TEST(a_read_of_a_frame_decoded_before_takes_its_bytes_and_junk_is_decoded)
{
	struct ref_extent e = { 0 };
	struct ref_inode *ip;
	uint8_t *buf, out[BS], junk[BS];
	uint64_t first;
	struct dfs z;

	NEED_COMPRESSION();
	buf = with_last_compressed(&z, &e, &ip);
	CHECK(buf);
	CHECK_OK(ref_audit(z.fs, quiet, NULL)); /* every frame decoded once */
	first = compr_decodes(z.fs);
	for (uint64_t fb = e.fileoff; fb < e.fileoff + e.len; fb++) {
		compr_forget(z.fs);
		CHECK_OK(compr_read_block(z.fs, ip, &e, fb, out));
		CHECK_MEM(out, buf + fb * BS, BS);
	}
	CHECK_EQ(compr_decodes(z.fs), first);
	fill(junk, sizeof(junk), 9, 0);
	CHECK_OK(hw_write(z.dev, e.startblk * BS, junk, BS, 0));
	compr_forget(z.fs);
	CHECK_EQ(compr_read_block(z.fs, ip, &e, e.fileoff, out), -EFSCORRUPTED);
	CHECK_EQ(compr_decodes(z.fs), first + 1);
	d_close(&z);
	free(buf);
}

/*
 * A compressed record that maps more file blocks than one compressed
 * extent takes (a damaged image: the fuzzed image target met one that
 * claimed some four billion blocks) is refused as damage before its
 * frame is read or room made for its bytes, by a read as by the audit:
 * neither an allocation of the size it claims nor a decode.
 */
TEST(a_compressed_record_longer_than_any_frame_is_damage_not_an_allocation)
{
	struct ref_extent e = { 0 }, longer;
	struct ref_inode *ip;
	uint8_t *buf, out[BS];
	uint64_t before;
	struct dfs z;

	NEED_COMPRESSION();
	buf = with_last_compressed(&z, &e, &ip);
	CHECK(buf);
	before = compr_decodes(z.fs);
	longer = e;
	longer.len = (DA_PIECE_BYTES / BS) + 1; /* a block past the limit */
	CHECK_EQ(compr_check(z.fs, ip, &longer), -EFSCORRUPTED);
	CHECK_EQ(compr_read_block(z.fs, ip, &longer, longer.fileoff, out),
		 -EFSCORRUPTED);
	longer.len = (uint64_t)1 << 32; /* 16 TiB of 4 KiB blocks */
	CHECK_EQ(compr_read_block(z.fs, ip, &longer, longer.fileoff, out),
		 -EFSCORRUPTED);
	CHECK_EQ(compr_decodes(z.fs), before);
	/* the record as written still reads */
	CHECK_OK(compr_read_block(z.fs, ip, &e, e.fileoff, out));
	d_close(&z);
	free(buf);
}

/*
 * The copies kept of decoded frames stay within their 4 MiB: 48 frames
 * of some 120 KiB each (random bytes, the last 8 KiB of each piece
 * zeros) are more than that.  The audit passes, the copies hold between
 * 3 and 4 MiB, and a second audit decodes the frames not kept, not all.
 */
TEST(the_copies_kept_of_decoded_frames_stay_within_their_budget)
{
	size_t len = 48 * DA_PIECE_BYTES, kept;
	uint8_t *buf = malloc(len);
	uint64_t ino, before, again;
	struct dfs z;

	NEED_COMPRESSION();
	CHECK(buf);
	for (unsigned i = 0; i < 48; i++) {
		uint8_t *p = buf + (size_t)i * DA_PIECE_BYTES;

		fill(p, DA_PIECE_BYTES - 8 * KB, 100 + i, 0);
		memset(p + DA_PIECE_BYTES - 8 * KB, 0, 8 * KB);
	}
	CHECK_OK(d_new(&z, NULL, "compress=zstd"));
	CHECK_OK(ref_create(z.fs, "f", &ino));
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, len, 0), (int64_t)len);
	CHECK_OK(ref_fsync(z.fs, ino));
	CHECK_EQ(ctr(z.fs, "compressed_extents"), 48);
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	kept = compr_kept_bytes(z.fs);
	CHECK_MSG(kept <= 4 * MB && kept >= 3 * MB, "%zu bytes kept", kept);
	before = compr_decodes(z.fs);
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	again = compr_decodes(z.fs) - before;
	CHECK_MSG(again > 0 && again < 48, "%llu decoded again",
		  (unsigned long long)again);
	CHECK(reads_as(z.fs, ino, buf, len));
	d_close(&z);
	free(buf);
}

/*
 * A flag change writes the file's delayed pages back first, under the old
 * flags; when that makes compressed extents, the file must still know it
 * holds them after the change: the audit accepts them, and an insert
 * range through the middle of one rewrites it plain first (without that
 * it meets part of a compressed extent: -EFSCORRUPTED).  Both ways a
 * writeback can compress: the file's own +c, cleared (ordered mount),
 * and a compress=zstd mount, with +j set.
 */
static void flag_change_after_compressing_writeback(const char *mount,
						    uint32_t before,
						    uint32_t set, uint32_t clear)
{
	size_t len = 5 * BS + 1000;
	uint8_t *buf = calloc(1, len + 2 * BS), *want = calloc(1, len + 2 * BS);
	struct ref_extent e = { 0 };
	struct ref_stat st;
	struct dfs z;
	uint64_t ino;

	CHECK(buf && want);
	if (!buf || !want)
		goto out;
	fill(buf, len, 9, 1);
	CHECK_OK(d_new(&z, NULL, mount));
	CHECK_OK(ref_create(z.fs, "f", &ino));
	if (before)
		CHECK_OK(ref_set_flags(z.fs, ino, before, 0));
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, len, 0), (int64_t)len);
	CHECK_OK(ref_stat(z.fs, ino, &st));
	CHECK_EQ(st.blocks, 0); /* delayed until the flag change */
	CHECK_OK(ref_set_flags(z.fs, ino, set, clear));
	CHECK_OK(ref_stat(z.fs, ino, &st));
	CHECK_EQ(st.flags & (set | clear), set);
	CHECK_OK(ref_bmap(z.fs, ino, first_extent, &e));
	CHECK_EQ(e.fileoff, 0);
	CHECK(e.state & REF_EXT_COMPRESSED); /* the flag change wrote it */
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	/* 4 KiB of zeroes inserted at 8 KiB, inside the compressed extent */
	CHECK_OK(ref_fallocate(z.fs, ino, REF_FALLOC_INSERT_RANGE, 2 * BS, BS));
	memcpy(want, buf, 2 * BS);
	memcpy(want + 3 * BS, buf + 2 * BS, len - 2 * BS);
	CHECK(reads_as(z.fs, ino, want, len + BS));
	audited_and_remounted(&z, mount, ino, want, len + BS);
out:
	free(buf);
	free(want);
}

TEST(clearing_c_keeps_the_compressed_extents_its_writeback_made)
{
	NEED_COMPRESSION();
	flag_change_after_compressing_writeback("", REF_FLAG_COMPRESS, 0,
						REF_FLAG_COMPRESS);
}

TEST(setting_j_keeps_the_compressed_extents_its_writeback_made)
{
	NEED_COMPRESSION();
	flag_change_after_compressing_writeback("compress=zstd", 0,
						REF_FLAG_JOURNAL_DATA, 0);
}

/*
 * A truncate to the size the file has still zeroes the EOF block past
 * EOF (and frees what lies beyond); when a compressed extent holds that
 * block it is rewritten plain first, as for a truncate down, and every
 * byte stays.
 */
TEST(truncate_to_the_same_size_inside_a_compressed_extent)
{
	size_t len = 5 * BS + 1000;
	uint8_t *buf = malloc(len);
	struct ref_extent e = { 0 };
	struct dfs z;
	uint64_t ino;

	NEED_COMPRESSION();
	CHECK(buf);
	if (!buf)
		return;
	fill(buf, len, 10, 1);
	CHECK_OK(d_new(&z, NULL, "compress=zstd"));
	CHECK_OK(ref_create(z.fs, "f", &ino));
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, len, 0), (int64_t)len);
	CHECK_OK(ref_fsync(z.fs, ino));
	CHECK_OK(ref_bmap(z.fs, ino, first_extent, &e));
	CHECK(e.state & REF_EXT_COMPRESSED);
	CHECK_EQ(e.fileoff + e.len, 6); /* the EOF block is in it */
	CHECK_OK(ref_truncate(z.fs, ino, len));
	CHECK(reads_as(z.fs, ino, buf, len));
	audited_and_remounted(&z, "compress=zstd", ino, buf, len);
	free(buf);
}

int main(int argc, char **argv) { return test_main(argc, argv); }

/* ---- compression workers ---- */

struct image { uint64_t data, rt; uint64_t ctr[256]; unsigned nctr; };

static void ctr_all(void *arg, const char *name, uint64_t v)
{
	struct image *im = arg;

	(void)name;
	if (im->nctr < 256)
		im->ctr[im->nctr++] = v;
}

/* FNV-1a over a whole device, 8 bytes a step. */
static uint64_t dev_hash(struct hw_dev *dev)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint64_t *b = malloc(MB);

	if (!b)
		return 0;
	for (uint64_t off = 0; off < hw_size(dev); off += MB) {
		if (hw_read(dev, off, b, MB))
			break;
		for (unsigned i = 0; i < MB / 8; i++)
			h = (h ^ b[i]) * 0x100000001b3ull;
	}
	free(b);
	return h;
}

/*
 * Three realtime files on a zoned device, each a mix of compressible
 * runs, incompressible runs and holes, written and synced under
 * workers=W: the image (both devices, hashed) and every counter.
 */
static void workers_run(unsigned workers, const char *append, int naive,
			struct image *im)
{
	struct dfs z;
	char opts[128], rt[128];
	uint8_t *buf = malloc(3 * MB);

	CHECK(buf);
	memset(im, 0, sizeof(*im));
	snprintf(opts, sizeof(opts), "compress=zstd,pagecache=4096,"
		 "workers=%u%s", workers, naive ? ",naive=delalloc_cap" : "");
	snprintf(rt, sizeof(rt), "zoned:mem,size=64m,zone=16m,append_max=%s",
		 append);
	CHECK_OK(d_new(&z, rt, opts));
	for (unsigned f = 0; f < 3; f++) {
		char name[8];
		uint64_t ino;

		snprintf(name, sizeof(name), "f%u", f);
		CHECK_OK(ref_create(z.fs, name, &ino));
		CHECK_OK(ref_set_flags(z.fs, ino, REF_FLAG_REALTIME, 0));
		for (unsigned part = 0; part < 6; part++) {
			size_t n = (size_t)(300 + 170 * part + 90 * f) * KB;

			fill(buf, n, part + f, (part + f) % 3 != 0);
			CHECK_EQ(ref_pwrite(z.fs, ino, buf, n,
					    (uint64_t)part * 3 * MB / 2),
				 (int64_t)n);
		}
	}
	CHECK_OK(ref_sync(z.fs));
	ref_counters_foreach(ref_counters(z.fs), ctr_all, im);
	CHECK_OK(ref_audit(z.fs, quiet, NULL));
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	im->data = dev_hash(z.dev);
	im->rt = dev_hash(z.rtdev);
	d_close(&z);
	free(buf);
}

TEST(compression_workers_leave_the_same_image_and_counters)
{
	static const char *const appends[] = { "672k", "16k" };

	NEED_COMPRESSION();
	for (unsigned a = 0; a < 2; a++)
		for (int naive = 0; naive < 2 - (int)a; naive++) {
			struct image in_line, w;

			workers_run(0, appends[a], naive, &in_line);
			CHECK(in_line.nctr > 10 && in_line.ctr[0] + 1);
			for (unsigned workers = 3; workers <= 3; workers++) {
				workers_run(workers, appends[a], naive, &w);
				CHECK_MSG(w.data == in_line.data &&
					  w.rt == in_line.rt, "append_max=%s "
					  "naive=%d workers=%u: another image",
					  appends[a], naive, workers);
				CHECK_EQ(w.nctr, in_line.nctr);
				CHECK_MSG(!memcmp(w.ctr, in_line.ctr,
						  sizeof(w.ctr)),
					  "append_max=%s naive=%d workers=%u: "
					  "other counters", appends[a], naive,
					  workers);
			}
		}
}

TEST(workers_option_is_parsed_and_bounded)
{
	struct ref_mount_opts o = { 0 };
	char err[256];

	CHECK_OK(ref_parse_mount_opts("workers=4", &o, err, sizeof(err)));
	CHECK_EQ(o.workers, 4u);
	CHECK(ref_parse_mount_opts("workers=65", &o, err, sizeof(err)) < 0);
	CHECK(strstr(err, "workers"));
}
