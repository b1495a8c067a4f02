/*
 * test_engine.c - the engine core against hand-written expectations and
 * an independent byte-array model: data paths, extent maps, truncate,
 * fallocate, remount, the audit, and corruption handling.
 */
#include "test.h"
#include "test_extents.h"

#include "hw/hw.h"
#include "ref/ref.h"

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

static struct hw_dev *dev_new(const char *spec)
{
	struct hw_dev *d = NULL;

	if (hw_open(spec, &d, NULL, 0))
		return NULL;
	return d;
}

static struct ref_fs *fs_new(struct hw_dev *d, uint32_t maxrecs, uint32_t bs)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = maxrecs, .blocksize = bs };
	struct ref_fs *fs = NULL;

	if (ref_mkfs(d, &o) || ref_mount(d, NULL, &fs))
		return NULL;
	return fs;
}

static int audit(struct ref_fs *fs)
{
	return ref_audit(fs, quiet, NULL);
}

TEST(write_then_read_returns_bytes_and_zero_holes)
{
	struct hw_dev *d = dev_new("mem:16m");
	struct ref_fs *fs = fs_new(d, 0, 0);
	uint8_t buf[10000], out[12000];
	uint64_t ino;

	CHECK(fs);
	CHECK_OK(ref_create(fs, "a", &ino));
	memset(buf, 0xab, sizeof(buf));
	CHECK_EQ(ref_pwrite(fs, ino, buf, 3000, 5000), 3000);
	CHECK_EQ(ref_pread(fs, ino, out, sizeof(out), 0), 8000);
	for (int i = 0; i < 5000; i++)
		CHECK_EQ(out[i], 0);
	for (int i = 5000; i < 8000; i++)
		CHECK_EQ(out[i], 0xab);
	CHECK_EQ(ref_pread(fs, ino, out, 10, 8000), 0);
	CHECK_OK(audit(fs));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

TEST(truncate_down_zeroes_tail_and_up_reads_zeros)
{
	struct hw_dev *d = dev_new("mem:16m");
	struct ref_fs *fs = fs_new(d, 0, 0);
	uint8_t buf[1 << 20], out[64];
	uint64_t ino;

	CHECK(fs);
	CHECK_OK(ref_create(fs, "f", &ino));
	memset(buf, 0xab, sizeof(buf));
	CHECK_EQ(ref_pwrite(fs, ino, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(ref_truncate(fs, ino, 5000));
	CHECK_EQ(ref_pread(fs, ino, out, 20, 4990), 10);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(out[i], 0xab);
	CHECK_OK(ref_truncate(fs, ino, 1 << 20));
	CHECK_EQ(ref_pread(fs, ino, out, 20, 4990), 20);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(out[i], 0xab);
	for (int i = 10; i < 20; i++)
		CHECK_EQ(out[i], 0);
	CHECK_OK(audit(fs));
	ref_unmount(fs);
	hw_close(d);
}

TEST(bmap_shows_merged_and_split_records)
{
	struct hw_dev *d = dev_new("mem:16m");
	struct ref_fs *fs = fs_new(d, 4, 0);
	uint8_t buf[4096 * 8];
	struct extlist l = { .n = 0 };
	uint64_t ino;

	CHECK(fs);
	CHECK_OK(ref_create(fs, "f", &ino));
	memset(buf, 1, sizeof(buf));
	/* eight blocks written in two pieces merge into one record */
	CHECK_EQ(ref_pwrite(fs, ino, buf, 4096 * 4, 0), 4096 * 4);
	CHECK_EQ(ref_pwrite(fs, ino, buf, 4096 * 4, 4096 * 4), 4096 * 4);
	CHECK_OK(ref_bmap(fs, ino, collect_extent, &l));
	CHECK_EQ(l.n, 1);
	CHECK_EQ(l.e[0].fileoff, 0);
	CHECK_EQ(l.e[0].len, 8);
	CHECK_EQ(l.e[0].state, 0);
	/* punching blocks 2..3 leaves [0,2) and [4,8) with the same blocks */
	CHECK_OK(ref_fallocate(fs, ino, REF_FALLOC_PUNCH_HOLE | REF_FALLOC_KEEP_SIZE,
			       4096 * 2, 4096 * 2));
	l.n = 0;
	CHECK_OK(ref_bmap(fs, ino, collect_extent, &l));
	CHECK_EQ(l.n, 2);
	CHECK_EQ(l.e[0].len, 2);
	CHECK_EQ(l.e[1].fileoff, 4);
	CHECK_EQ(l.e[1].startblk, l.e[0].startblk + 4);
	CHECK_EQ(l.e[1].len, 4);
	/* zero range over 5..6 converts them to unwritten: three records */
	CHECK_OK(ref_fallocate(fs, ino, REF_FALLOC_ZERO_RANGE, 4096 * 5, 4096 * 2));
	l.n = 0;
	CHECK_OK(ref_bmap(fs, ino, collect_extent, &l));
	CHECK_EQ(l.n, 4);
	CHECK_EQ(l.e[2].fileoff, 5);
	CHECK_EQ(l.e[2].len, 2);
	CHECK_EQ(l.e[2].state, REF_EXT_UNWRITTEN);
	CHECK_EQ(l.e[3].fileoff, 7);
	CHECK_EQ(l.e[3].state, 0);
	CHECK_OK(audit(fs));
	ref_unmount(fs);
	hw_close(d);
}

/*
 * Collapse and insert against hand-written extent lists.  File blocks
 * 0..7 are written in one extent at device block D; then:
 *   collapse [2,4):  [0,2)->D, [2,6)->D+4         (two records)
 *   insert 1 at 1:   [0,1)->D, [2,3)->D+1, [3,7)->D+4
 */
TEST(collapse_and_insert_shift_extents_as_drawn)
{
	struct hw_dev *d = dev_new("mem:16m");
	struct ref_fs *fs = fs_new(d, 4, 0);
	uint8_t buf[4096 * 8], out[4096];
	struct extlist l = { .n = 0 };
	struct ref_stat st;
	uint64_t ino, D;

	CHECK(fs);
	CHECK_OK(ref_create(fs, "f", &ino));
	for (int i = 0; i < 8; i++)
		memset(buf + 4096 * i, 'a' + i, 4096);
	CHECK_EQ(ref_pwrite(fs, ino, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(ref_bmap(fs, ino, collect_extent, &l));
	CHECK_EQ(l.n, 1);
	D = l.e[0].startblk;

	CHECK_OK(ref_fallocate(fs, ino, REF_FALLOC_COLLAPSE_RANGE, 2 * 4096, 2 * 4096));
	l.n = 0;
	CHECK_OK(ref_bmap(fs, ino, collect_extent, &l));
	CHECK_EQ(l.n, 2);
	CHECK_EQ(l.e[0].fileoff, 0); CHECK_EQ(l.e[0].startblk, D); CHECK_EQ(l.e[0].len, 2);
	CHECK_EQ(l.e[1].fileoff, 2); CHECK_EQ(l.e[1].startblk, D + 4); CHECK_EQ(l.e[1].len, 4);
	CHECK_OK(ref_stat(fs, ino, &st));
	CHECK_EQ(st.size, 6 * 4096);
	CHECK_EQ(ref_pread(fs, ino, out, 1, 2 * 4096), 1);
	CHECK_EQ(out[0], 'e');

	CHECK_OK(ref_fallocate(fs, ino, REF_FALLOC_INSERT_RANGE, 4096, 4096));
	l.n = 0;
	CHECK_OK(ref_bmap(fs, ino, collect_extent, &l));
	CHECK_EQ(l.n, 3);
	CHECK_EQ(l.e[0].fileoff, 0); CHECK_EQ(l.e[0].startblk, D); CHECK_EQ(l.e[0].len, 1);
	CHECK_EQ(l.e[1].fileoff, 2); CHECK_EQ(l.e[1].startblk, D + 1); CHECK_EQ(l.e[1].len, 1);
	CHECK_EQ(l.e[2].fileoff, 3); CHECK_EQ(l.e[2].startblk, D + 4); CHECK_EQ(l.e[2].len, 4);
	CHECK_EQ(ref_pread(fs, ino, out, 4096, 4096), 4096);
	for (int i = 0; i < 4096; i++)
		CHECK_EQ(out[i], 0);
	CHECK_OK(ref_stat(fs, ino, &st));
	CHECK_EQ(st.size, 7 * 4096);

	/* Linux's rules: aligned, collapse before EOF, insert inside the file */
	CHECK_EQ(ref_fallocate(fs, ino, REF_FALLOC_COLLAPSE_RANGE, 100, 4096), -EINVAL);
	CHECK_EQ(ref_fallocate(fs, ino, REF_FALLOC_COLLAPSE_RANGE, 0, 7 * 4096), -EINVAL);
	CHECK_EQ(ref_fallocate(fs, ino, REF_FALLOC_INSERT_RANGE, 7 * 4096, 4096), -EINVAL);
	CHECK_OK(audit(fs));
	ref_unmount(fs);
	hw_close(d);
}

TEST(copy_range_copies_bytes_and_stops_at_source_eof)
{
	struct hw_dev *d = dev_new("mem:16m");
	struct ref_fs *fs = fs_new(d, 4, 0);
	uint8_t buf[10000], out[10000];
	uint64_t a, b;

	CHECK(fs);
	CHECK_OK(ref_create(fs, "a", &a));
	CHECK_OK(ref_create(fs, "b", &b));
	for (int i = 0; i < 10000; i++)
		buf[i] = (uint8_t)(i * 13 + 1);
	CHECK_EQ(ref_pwrite(fs, a, buf, 10000, 0), 10000);
	CHECK_EQ(ref_copy_range(fs, b, 500, a, 9000, 5000), 1000);
	CHECK_EQ(ref_pread(fs, b, out, 2000, 0), 1500);
	for (int i = 0; i < 500; i++)
		CHECK_EQ(out[i], 0);
	CHECK_MEM(out + 500, buf + 9000, 1000);
	CHECK_EQ(ref_copy_range(fs, a, 100, a, 0, 200), -EINVAL); /* overlap */
	CHECK_EQ(ref_copy_range(fs, a, 5000, a, 0, 200), 200);
	CHECK_OK(audit(fs));
	ref_unmount(fs);
	hw_close(d);
}

/*
 * Any device size: the bitmap covers exactly the data region, the last
 * group may be partial, and a device filled to ENOSPC still audits clean.
 */
TEST(odd_device_sizes_fill_to_enospc_and_audit_clean)
{
	/* 130592k at bs 4096 (journal 64, 1024 inodes) leaves exactly one
	 * block more than a bitmap block covers: the layout once gave it an
	 * empty last group that started past the end of the device. */
	static const char *const specs[] = { "mem:1m", "mem:1028k", "mem:2044k",
					     "mem:1900k", "mem:3m", "mem:130592k" };
	static uint8_t buf[1 << 16];

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		for (uint32_t bs = 512; bs <= 4096; bs *= 8) {
			struct ref_mkfs_opts mo = { .blocksize = bs, .btree_maxrecs = 4,
						    .journal_blocks = 64 };
			struct hw_dev *d = dev_new(specs[i]);
			struct ref_fs *fs = NULL;
			uint64_t ino, off = 0;
			int64_t r;

			if (ref_mkfs(d, &mo) || ref_mount(d, NULL, &fs))
				fs = NULL;

			CHECK_MSG(fs, "%s bs %u: mkfs or mount failed", specs[i], bs);
			CHECK_OK(ref_create(fs, "f", &ino));
			while ((r = ref_pwrite(fs, ino, buf, sizeof(buf), off)) > 0)
				off += (uint64_t)r;
			CHECK_MSG(r == -ENOSPC, "%s bs %u: %lld", specs[i], bs,
				  (long long)r);
			CHECK_MSG(audit(fs) == 0, "%s bs %u: audit", specs[i], bs);
			CHECK_OK(ref_unmount(fs));
			CHECK_MSG(ref_fsck(d, quiet, NULL) == 0, "%s bs %u: fsck",
				  specs[i], bs);
			hw_close(d);
		}
	}
}

TEST(audit_leaves_work_counters_unchanged)
{
	struct hw_dev *d = dev_new("mem:16m");
	struct ref_fs *fs = fs_new(d, 4, 0);
	struct ref_counters before;
	uint8_t buf[4096] = { 1 };
	uint64_t ino;

	CHECK(fs);
	CHECK_OK(ref_create(fs, "f", &ino));
	for (int i = 0; i < 20; i++)
		CHECK_EQ(ref_pwrite(fs, ino, buf, 4096, (uint64_t)i * 8192), 4096);
	before = *ref_counters(fs);
	CHECK(before.bt.node_visits > 0);
	CHECK_OK(audit(fs));
	CHECK_MEM(&before, ref_counters(fs), sizeof(before));
	ref_unmount(fs);
	hw_close(d);
}

TEST(freed_blocks_are_reused_without_fsync_on_a_small_device)
{
	/* Blocks freed in the running transaction stay busy until it commits;
	 * rewriting and punching far more than the device holds, with no
	 * fsync, must still never run out of space. */
	struct hw_dev *d = dev_new("mem:2m");
	struct ref_fs *fs = fs_new(d, 4, 0);
	uint8_t buf[65536];
	struct ref_statfs st;
	uint64_t ino;

	CHECK(fs);
	CHECK_OK(ref_statfs(fs, &st));
	memset(buf, 7, sizeof(buf));
	CHECK_OK(ref_create(fs, "f", &ino));
	for (int i = 0; i < 2000; i++) {
		CHECK_EQ(ref_pwrite(fs, ino, buf, sizeof(buf), (uint64_t)(i % 5) * 8192),
			 sizeof(buf));
		CHECK_OK(ref_fallocate(fs, ino, REF_FALLOC_PUNCH_HOLE |
				       REF_FALLOC_KEEP_SIZE, 0, 1 << 20));
	}
	CHECK(2000ull * 16 > st.free_blocks * 10); /* really many times over */
	CHECK_OK(audit(fs));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

/* ---- random ops against a byte-array model ---- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

#define NFILES 3
#define MAXLEN (256 * 1024)
struct mfile { uint8_t data[MAXLEN]; uint64_t size; uint64_t ino; };
static struct mfile model[NFILES];

static int model_check(struct ref_fs *fs, int f)
{
	static uint8_t got[MAXLEN];
	struct ref_stat st;

	if (ref_stat(fs, model[f].ino, &st) || st.size != model[f].size)
		return -1;
	if (ref_pread(fs, model[f].ino, got, MAXLEN, 0) != (int64_t)model[f].size)
		return -2;
	return memcmp(got, model[f].data, model[f].size) ? -3 : 0;
}

static void random_ops(const char *spec, uint32_t bs, uint32_t maxrecs,
		       int nops, uint64_t seed)
{
	struct hw_dev *d = dev_new(spec);
	struct ref_fs *fs = fs_new(d, maxrecs, bs);
	static uint8_t buf[MAXLEN];
	char name[16];

	CHECK(fs);
	rng_state = seed;
	memset(model, 0, sizeof(model));
	for (int f = 0; f < NFILES; f++) {
		snprintf(name, sizeof(name), "f%d", f);
		CHECK_OK(ref_create(fs, name, &model[f].ino));
	}
	for (int i = 0; i < nops; i++) {
		int f = (int)(rnd() % NFILES), op = (int)(rnd() % 10);
		uint64_t off = rnd() % MAXLEN, len = rnd() % (MAXLEN / 4) + 1;
		struct mfile *m = &model[f];

		if (off + len > MAXLEN)
			len = MAXLEN - off;
		if (op < 4) {
			for (uint64_t k = 0; k < len; k++)
				buf[k] = (uint8_t)(i + k * 7 + 1);
			CHECK_EQ(ref_pwrite(fs, m->ino, buf, len, off), len);
			memcpy(m->data + off, buf, len);
			if (off + len > m->size)
				m->size = off + len;
		} else if (op == 4) {
			CHECK_OK(ref_truncate(fs, m->ino, off));
			if (off < m->size)
				memset(m->data + off, 0, m->size - off);
			m->size = off;
		} else if (op == 5) {
			CHECK_OK(ref_fallocate(fs, m->ino, REF_FALLOC_PUNCH_HOLE |
					       REF_FALLOC_KEEP_SIZE, off, len));
			if (off < m->size)
				memset(m->data + off, 0,
				       (off + len < m->size ? off + len : m->size) - off);
		} else if (op == 6) {
			unsigned keep = rnd() & 1 ? REF_FALLOC_KEEP_SIZE : 0;

			CHECK_OK(ref_fallocate(fs, m->ino, REF_FALLOC_ZERO_RANGE | keep,
					       off, len));
			if (off < m->size)
				memset(m->data + off, 0,
				       (off + len < m->size ? off + len : m->size) - off);
			if (!keep && off + len > m->size)
				m->size = off + len;
		} else if (op == 7) {
			unsigned keep = rnd() & 1 ? REF_FALLOC_KEEP_SIZE : 0;

			CHECK_OK(ref_fallocate(fs, m->ino, keep, off, len));
			if (!keep && off + len > m->size)
				m->size = off + len;
		} else if (op == 8) {
			CHECK_OK(ref_fsync(fs, m->ino));
		} else {
			/* remount: everything must come back */
			CHECK_OK(ref_unmount(fs));
			CHECK_OK(ref_mount(d, NULL, &fs));
		}
		CHECK_MSG(model_check(fs, f) == 0, "op %d (kind %d) file %d: "
			  "model mismatch %d", i, op, f, model_check(fs, f));
		if (i % 50 == 0)
			CHECK_MSG(audit(fs) == 0, "audit failed after op %d", i);
	}
	CHECK_OK(audit(fs));
	CHECK_OK(ref_unmount(fs));
	CHECK_OK(ref_fsck(d, quiet, NULL));
	hw_close(d);
}

TEST(random_ops_match_model_tiny_btree)
{
	random_ops("mem:64m", 4096, 4, 3000, 1);
}

TEST(random_ops_match_model_512_byte_blocks)
{
	random_ops("mem:64m", 512, 4, 2000, 2);
}

TEST(random_ops_match_model_default_geometry)
{
	random_ops("mem:64m", 4096, 0, 2000, 3);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
