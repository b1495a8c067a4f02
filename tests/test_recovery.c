/*
 * test_recovery.c - crash consistency of the journal, and corruption
 * handling of every metadata block.
 *
 * A recording device (defined here, on the public hw_dev vtable) logs
 * every write and flush of a short sequence.  For each cut point k, a
 * fresh image receives the first k writes (and, torn, a prefix of the
 * k-th), then must mount (recovering the log), pass the audit, and read
 * back every file that was fsynced before the cut and not touched after.
 * Separately, every byte position sampled in every in-use metadata block
 * of a clean image is flipped: mount or fsck must then fail with a
 * corruption error, never crash and never pass.
 */
#include "test.h"

#include <stdlib.h>

#include "hw/hw.h"
#include "ref/ref.h"
#include "ref/ref_internal.h"
#include "tests/test_crash_util.h"

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

/* What a file must read after a cut at or after write index `durable`. */
struct expect {
	const char *name;
	size_t durable;       /* write count when its fsync returned */
	uint8_t *data;
	size_t size;
};

#define DEVSPEC "mem:8m"

static int file_reads(struct ref_fs *fs, const struct expect *e)
{
	uint64_t ino;
	struct ref_stat st;
	uint8_t *got;
	int ok;

	if (ref_lookup(fs, e->name, &ino) || ref_stat(fs, ino, &st) ||
	    st.size != e->size)
		return 0;
	got = malloc(e->size + 1);
	ok = ref_pread(fs, ino, got, e->size, 0) == (int64_t)e->size &&
	     memcmp(got, e->data, e->size) == 0;
	free(got);
	return ok;
}

static uint8_t *pattern(size_t len, int seed)
{
	uint8_t *p = malloc(len);

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 9));
	return p;
}

TEST(cut_at_every_write_recovers_consistent_and_keeps_fsynced_data)
{
	struct rec_dev *r = rec_open(DEVSPEC);
	struct ref_mkfs_opts mo = { .btree_maxrecs = 4, .journal_blocks = 64 };
	struct ref_fs *fs;
	struct expect ex[4];
	size_t nex = 0, mkfs_end;
	uint64_t a, b, c;
	uint8_t *pa = pattern(40000, 1), *pb = pattern(9000, 2), *pc = pattern(70000, 3);

	CHECK(r);
	CHECK_OK(ref_mkfs(&r->dev, &mo));
	mkfs_end = r->n;
	CHECK_OK(ref_mount(&r->dev, NULL, &fs));
	/* a: fragmented writes, fsynced, then left alone */
	CHECK_OK(ref_create(fs, "a", &a));
	for (int i = 0; i < 10; i++)
		CHECK_OK(ref_pwrite(fs, a, pa + i * 4000, 4000, (uint64_t)i * 4000));
	CHECK_OK(ref_fsync(fs, a));
	ex[nex++] = (struct expect){ "a", r->n, pa, 40000 };
	/* b: written, truncated, fsynced */
	CHECK_OK(ref_create(fs, "b", &b));
	CHECK_OK(ref_pwrite(fs, b, pb, 9000, 0));
	CHECK_OK(ref_truncate(fs, b, 5000));
	CHECK_OK(ref_fsync(fs, b));
	ex[nex++] = (struct expect){ "b", r->n, pb, 5000 };
	/* c: many small extents (deep tree with maxrecs 4), punched, unlinked */
	CHECK_OK(ref_create(fs, "c", &c));
	for (int i = 0; i < 35; i++)
		CHECK_OK(ref_pwrite(fs, c, pc + i * 2000, 1000, (uint64_t)i * 2000));
	CHECK_OK(ref_fallocate(fs, c, REF_FALLOC_PUNCH_HOLE | REF_FALLOC_KEEP_SIZE,
			       3000, 30000));
	CHECK_OK(ref_fsync(fs, c));
	CHECK_OK(ref_unlink(fs, "c"));
	CHECK_OK(ref_create(fs, "d", &c));
	CHECK_OK(ref_pwrite(fs, c, pc, 70000, 0));
	CHECK_OK(ref_unmount(fs));
	CHECK_MSG(r->n > mkfs_end + 20, "only %zu writes recorded", r->n);

	for (size_t k = mkfs_end; k <= r->n; k++) {
		for (int t = 0; t < 2; t++) {
			struct hw_dev *d = rec_image_at(r, k, t ? 512 : 0);
			struct ref_fs *m;
			int rc;

			CHECK(d);
			rc = ref_mount(d, NULL, &m);
			CHECK_MSG(rc == 0, "cut %zu%s: mount failed: %s", k,
				  t ? " (torn)" : "", ref_strerror(rc));
			rc = ref_audit(m, quiet, NULL);
			CHECK_MSG(rc == 0, "cut %zu%s: audit failed", k, t ? " (torn)" : "");
			for (size_t i = 0; i < nex; i++)
				if (k >= ex[i].durable)
					CHECK_MSG(file_reads(m, &ex[i]),
						  "cut %zu: fsynced file %s lost", k,
						  ex[i].name);
			CHECK_OK(ref_unmount(m));
			CHECK_OK(ref_fsck(d, quiet, NULL));
			hw_close(d);
		}
	}
	hw_close(&r->dev);
	free(pa);
	free(pb);
	free(pc);
}

/* ---- corruption ---- */

static int visit_count(void *arg, const struct ref_extent *e)
{
	(void)e;
	++*(int *)arg;
	return 0;
}

TEST(flipping_any_metadata_byte_is_a_clean_corruption_error)
{
	struct ref_mkfs_opts mo = { .btree_maxrecs = 4, .blocksize = 512,
				    .inodes = 8, .journal_blocks = 64 };
	struct hw_dev *d = NULL;
	struct ref_fs *fs;
	uint8_t *clean, blk[512] = { 0 };
	uint64_t ino, size;
	int nrec = 0, tested = 0;

	CHECK_OK(hw_open("mem:1m", &d, NULL, 0));
	CHECK_OK(ref_mkfs(d, &mo));
	CHECK_OK(ref_mount(d, NULL, &fs));
	CHECK_OK(ref_create(fs, "x", &ino));
	for (int i = 0; i < 40; i++) /* every other block: 40 records, deep tree */
		CHECK_EQ(ref_pwrite(fs, ino, blk, 512, (uint64_t)i * 1024), 512);
	CHECK_OK(ref_bmap(fs, ino, visit_count, &nrec));
	CHECK_EQ(nrec, 40);
	CHECK_OK(ref_unmount(fs));
	size = hw_size(d);
	clean = malloc(size);
	CHECK_OK(hw_read(d, 0, clean, size));

	/* Every block whose magic says metadata, outside the log (blocks
	 * 2..65 here: after a clean unmount it holds only stale images). */
	for (uint64_t bno = 0; bno < size / 512; bno++) {
		uint32_t magic;

		if (bno >= 2 && bno < 2 + 64)
			continue;
		memcpy(&magic, clean + bno * 512, 4);
		if ((magic & 0xffffff00u) != 0x46534f00u || (magic & 0xff) == 'D' ||
		    (magic & 0xff) == 'C')
			continue;
		for (size_t pos = 0; pos < 512; pos++) {
			uint64_t at = bno * 512 + pos;
			int rc;

			/* fsck writes nothing, so one image serves every flip */
			blk[0] = clean[at] ^ 0x5a;
			CHECK_OK(hw_write(d, at, blk, 1, 0));
			rc = ref_fsck(d, quiet, NULL);
			CHECK_MSG(rc == -EFSCORRUPTED || rc == -EMEDIUMTYPE,
				  "block %llu (magic %08x) byte %zu flipped: fsck says %d",
				  (unsigned long long)bno, magic, pos, rc);
			CHECK_OK(hw_write(d, at, clean + at, 1, 0));
			tested++;
		}
	}
	CHECK_MSG(tested > 512 * 10, "only %d flips tested", tested);
	CHECK_OK(ref_fsck(d, quiet, NULL)); /* and the image was left intact */
	free(clean);
	hw_close(d);
}

/*
 * The superblock checksums its first sector only (a header-sector block,
 * format.c); the sector after it may hold its copy; every byte past
 * those must be zero, so a flipped bit there is a corruption too, at
 * fsck and at mount, and the image is fine again once it is undone.
 */
TEST(a_nonzero_byte_past_the_superblock_sectors_is_a_corruption)
{
	struct ref_mkfs_opts mo = { .blocksize = 4096, .inodes = 8,
				    .journal_blocks = 64 };
	static const size_t at[] = { 1024, 1025, 2048, 4094, 4095 };
	struct hw_dev *d = NULL;
	struct ref_fs *fs;
	uint8_t sb[4096];

	CHECK_OK(hw_open("mem:4m", &d, NULL, 0));
	CHECK_OK(ref_mkfs(d, &mo));
	CHECK_OK(ref_fsck(d, quiet, NULL));
	CHECK_OK(hw_read(d, 0, sb, sizeof(sb)));
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		for (unsigned bit = 0; bit < 8; bit += 7) {
			uint8_t v = (uint8_t)(sb[at[i]] ^ (1u << bit));

			CHECK_OK(hw_write(d, at[i], &v, 1, 0));
			CHECK_MSG(ref_fsck(d, quiet, NULL) == -EFSCORRUPTED,
				  "byte %zu bit %u set: fsck passes", at[i], bit);
			CHECK_EQ(ref_mount(d, NULL, &fs), -EFSCORRUPTED);
			CHECK_OK(hw_write(d, at[i], sb + at[i], 1, 0));
		}
	}
	CHECK_OK(ref_fsck(d, quiet, NULL));
	CHECK_OK(ref_mount(d, NULL, &fs));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

/*
 * An image abandoned with the superblock in its log (every mount logs
 * it), whose home copy then gets another fan-out, checksum and all: a
 * valid geometry on its own, but not the logged copy's that the replay
 * puts in place.  Mount and fsck must refuse it; found by the image fuzz
 * target, where the mount used the home copy's fan-out after the replay
 * and its trees were overfull by the logged copy's at the next fsck.
 */
TEST(a_logged_superblock_with_another_geometry_is_refused)
{
	struct ref_mkfs_opts mo = { .btree_maxrecs = 4, .blocksize = 512,
				    .inodes = 8, .journal_blocks = 64 };
	struct hw_dev *d = NULL;
	struct ref_fs *fs;
	uint8_t sbk[512], blk[512] = { 0 }, *img;
	uint64_t ino, size;

	CHECK_OK(hw_open("mem:1m", &d, NULL, 0));
	CHECK_OK(ref_mkfs(d, &mo));
	CHECK_OK(ref_mount(d, NULL, &fs));
	CHECK_OK(ref_create(fs, "x", &ino));
	CHECK_EQ(ref_pwrite(fs, ino, blk, 512, 0), 512);
	CHECK_OK(ref_fsync(fs, ino));
	ref_abandon(fs);
	size = hw_size(d);
	img = malloc(size);
	CHECK_OK(hw_read(d, 0, img, size));

	/* as it is, it recovers */
	CHECK_OK(ref_fsck(d, quiet, NULL));
	CHECK_OK(hw_read(d, 0, sbk, 512));
	CHECK_EQ(get32(sbk + SB_MAXRECS), 4);
	put32(sbk + SB_MAXRECS, 6);
	blk_set_crc(sbk, HDR_SECTOR);
	CHECK_OK(hw_write(d, 0, sbk, 512, 0));
	CHECK_EQ(ref_fsck(d, quiet, NULL), -EFSCORRUPTED);
	CHECK_EQ(ref_mount(d, NULL, &fs), -EFSCORRUPTED);
	CHECK_EQ(ref_mount(d, NULL, &fs), -EFSCORRUPTED); /* and again */
	/* nothing was written home: the image is as it was, but for the
	 * damage, and once that is undone it recovers */
	put32(sbk + SB_MAXRECS, 4);
	blk_set_crc(sbk, HDR_SECTOR);
	CHECK_OK(hw_write(d, 0, sbk, 512, 0));
	{
		uint8_t *now = malloc(size);

		CHECK_OK(hw_read(d, 0, now, size));
		CHECK_MEM(now, img, size);
		free(now);
	}
	CHECK_OK(ref_mount(d, NULL, &fs));
	CHECK_OK(ref_lookup(fs, "x", &ino));
	CHECK_OK(ref_unmount(fs));
	CHECK_OK(ref_fsck(d, quiet, NULL));
	free(img);
	hw_close(d);
}

/*
 * An inode count near 2^32 made the inode table's block count wrap in
 * 32 bits, (ninodes + ipb - 1) / ipb, to 0: mkfs formatted a 4 MiB
 * device with 4294967295 inodes and no table, and every mount then
 * failed with "out of memory".  mkfs must refuse the count (no room for
 * the table), and a superblock that says so, checksum and all, is a
 * corruption at mount and fsck.
 */
TEST(an_inode_count_near_2_to_the_32_does_not_wrap_the_table_size)
{
	struct ref_mkfs_opts mo = { .blocksize = 4096, .journal_blocks = 64 };
	static const uint32_t counts[] = { UINT32_MAX, UINT32_MAX - 13 };
	struct hw_dev *d = NULL;
	struct ref_fs *fs;
	uint8_t sb[HDR_SECTOR];

	CHECK_OK(hw_open("mem:4m", &d, NULL, 0));
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		mo.inodes = counts[i];
		CHECK_EQ(ref_mkfs(d, &mo), -ENOSPC);
	}
	mo.inodes = 16;
	CHECK_OK(ref_mkfs(d, &mo));
	CHECK_OK(hw_read(d, 0, sb, sizeof(sb)));
	put32(sb + SB_NINODES, UINT32_MAX);
	put32(sb + SB_ITABLEN, 0);
	blk_set_crc(sb, HDR_SECTOR);
	CHECK_OK(hw_write(d, 0, sb, sizeof(sb), 0));
	CHECK_EQ(ref_fsck(d, quiet, NULL), -EFSCORRUPTED);
	CHECK_EQ(ref_mount(d, NULL, &fs), -EFSCORRUPTED);
	hw_close(d);
}

/*
 * The free-space bitmap's block count is 32 bits on disk; on a device
 * needing more (null: of 8 PiB at 512-byte blocks, of nearly 16 EiB at
 * 4 KiB) it wrapped: mkfs made a bitmap covering a fraction of the
 * device (statfs: 2^52 blocks, 2^45 free).  mkfs must refuse the size.
 */
TEST(a_device_too_large_for_the_bitmap_is_refused_by_mkfs)
{
	static const struct { const char *spec; uint32_t bs; } big[] = {
		{ "null:8192t", 512 },
		{ "null:18446744073709547520", 4096 },
	};

	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		struct ref_mkfs_opts mo = { .blocksize = big[i].bs };
		struct hw_dev *d = NULL;

		CHECK_OK(hw_open(big[i].spec, &d, NULL, 0));
		CHECK_MSG(ref_mkfs(d, &mo) == -EFBIG, "mkfs on %s, bs %u",
			  big[i].spec, big[i].bs);
		hw_close(d);
	}
}

int main(int argc, char **argv) { return test_main(argc, argv); }
