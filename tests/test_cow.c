/*
 * test_cow.c - reflink and the COW fork (seed path c) against hand-worked
 * expectations: clone and dedupe share blocks and count their owners,
 * freeing keeps shared blocks, writes to shared or always-COW blocks go
 * to staging and end-COW remaps them (naive, optimized and fallback doing
 * the record work the seed's table gives), power cuts at every write of
 * a clone + overwrite run recover with a clean audit, and the audit
 * catches the states likely mistakes would leave.
 */
#include "test.h"
#include "test_crash_util.h"
#include "test_extents.h"

#include "hw/hw.h"
#include "ref/ref.h"
#include "ref/ref_internal.h"

#define COW (1u << REF_PATH_COW_END)
#define BS 4096u

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

static struct ref_fs *mk(struct hw_dev *d, uint32_t reflink, uint32_t naive,
			 uint32_t fallback)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .inodes = 16,
				   .reflink = reflink };
	struct ref_mount_opts m = { .naive = naive, .fallback = fallback };
	struct ref_fs *fs = NULL;

	if (ref_mkfs(d, &o) || ref_mount(d, &m, &fs))
		return NULL;
	return fs;
}

static struct hw_dev *dev(void)
{
	struct hw_dev *d = NULL;

	return hw_open("mem:8m", &d, NULL, 0) ? NULL : d;
}

struct refs { uint64_t start[32], len[32]; uint32_t count[32]; int n; };
static int collect_refs(void *arg, uint64_t start, uint64_t len, uint32_t count)
{
	struct refs *r = arg;

	if (r->n < 32) {
		r->start[r->n] = start;
		r->len[r->n] = len;
		r->count[r->n++] = count;
	}
	return 0;
}

static void fill(uint8_t *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 13 + seed) | 1;
}

static void two_files(struct ref_fs *fs, uint64_t *a, uint64_t *b)
{
	CHECK_OK(ref_create(fs, "a", a));
	CHECK_OK(ref_create(fs, "b", b));
}

/* The audit passes, unmount, and so does fsck of the image. */
static void finish(struct ref_fs *fs, struct hw_dev *d)
{
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	CHECK_OK(ref_fsck(d, quiet, NULL));
	hw_close(d);
}

static uint64_t free_blocks(struct ref_fs *fs)
{
	struct ref_statfs st;

	return ref_statfs(fs, &st) ? 0 : st.free_blocks;
}

TEST(without_reflink_clone_dedupe_and_cow_flag_are_unsupported)
{
	struct hw_dev *d = dev();
	struct ref_fs *fs = mk(d, 0, 0, 0);
	uint8_t buf[BS];
	uint64_t a, b;

	CHECK(fs);
	fill(buf, sizeof(buf), 1);
	two_files(fs, &a, &b);
	CHECK_EQ(ref_pwrite(fs, a, buf, BS, 0), BS);
	CHECK_EQ(ref_clone_range(fs, b, 0, a, 0, BS), -EOPNOTSUPP);
	CHECK_EQ(ref_dedupe_range(fs, b, 0, a, 0, BS), -EOPNOTSUPP);
	CHECK_EQ(ref_set_flags(fs, a, REF_FLAG_COW, 0), -EOPNOTSUPP);
	CHECK_EQ(ref_refcount_walk(fs, collect_refs, NULL), -EOPNOTSUPP);
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

TEST(clone_shares_blocks_counts_owners_and_unlink_keeps_them)
{
	struct hw_dev *d = dev();
	struct ref_fs *fs = mk(d, 1, 0, 0);
	static uint8_t buf[16 * BS], out[16 * BS];
	struct extlist ea = { .n = 0 }, eb = { .n = 0 };
	struct refs r = { .n = 0 };
	uint64_t a, b, before;

	CHECK(fs);
	fill(buf, sizeof(buf), 2);
	two_files(fs, &a, &b);
	CHECK_EQ(ref_pwrite(fs, a, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(ref_sync(fs));
	before = free_blocks(fs);
	CHECK_OK(ref_clone_range(fs, b, 4 * BS, a, 2 * BS, 8 * BS));
	/* no data block allocated: b's and the refcount tree's root nodes */
	CHECK_EQ(free_blocks(fs) + 2, before);
	CHECK_OK(ref_bmap(fs, a, collect_extent, &ea));
	CHECK_OK(ref_bmap(fs, b, collect_extent, &eb));
	CHECK_EQ(ea.n, 1);
	CHECK_EQ(eb.n, 1);
	CHECK_EQ(eb.e[0].fileoff, 4);
	CHECK_EQ(eb.e[0].len, 8);
	CHECK_EQ(eb.e[0].startblk, ea.e[0].startblk + 2);
	CHECK_OK(ref_refcount_walk(fs, collect_refs, &r));
	CHECK_EQ(r.n, 1);
	CHECK_EQ(r.start[0], ea.e[0].startblk + 2);
	CHECK_EQ(r.len[0], 8);
	CHECK_EQ(r.count[0], 2);
	CHECK_EQ(ref_pread(fs, b, out, sizeof(out), 0), 12 * BS);
	for (size_t i = 0; i < 4 * BS; i++)
		CHECK_EQ(out[i], 0);
	CHECK_MEM(out + 4 * BS, buf + 2 * BS, 8 * BS);
	CHECK_OK(ref_audit(fs, quiet, NULL));
	/* the first owner goes: b keeps its bytes, nothing is shared */
	CHECK_OK(ref_unlink(fs, "a"));
	r.n = 0;
	CHECK_OK(ref_refcount_walk(fs, collect_refs, &r));
	CHECK_EQ(r.n, 0);
	CHECK_EQ(ref_pread(fs, b, out, 8 * BS, 4 * BS), 8 * BS);
	CHECK_MEM(out, buf + 2 * BS, 8 * BS);
	finish(fs, d);
}

TEST(clone_follows_ficlonerange_rules)
{
	struct hw_dev *d = dev();
	struct ref_fs *fs = mk(d, 1, 0, 0);
	uint8_t buf[3 * BS + 100], out[5 * BS];
	uint64_t a, b;

	CHECK(fs);
	fill(buf, sizeof(buf), 3);
	two_files(fs, &a, &b);
	CHECK_EQ(ref_pwrite(fs, a, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_EQ(ref_clone_range(fs, b, 100, a, 0, BS), -EINVAL);   /* align */
	CHECK_EQ(ref_clone_range(fs, b, 0, a, 0, 100), -EINVAL);    /* not EOF */
	CHECK_EQ(ref_clone_range(fs, a, BS, a, 0, 2 * BS), -EINVAL); /* overlap */
	CHECK_EQ(ref_clone_range(fs, b, 0, a, 8 * BS, BS), -EINVAL); /* past EOF */
	/* len 0 = to the source's EOF, partial; same file, apart: fine */
	CHECK_OK(ref_clone_range(fs, b, BS, a, 0, 0));
	CHECK_OK(ref_clone_range(fs, a, 8 * BS, a, 0, BS));
	CHECK_EQ(ref_pread(fs, b, out, sizeof(out), 0), BS + sizeof(buf));
	CHECK_MEM(out + BS, buf, sizeof(buf));
	finish(fs, d);
}

TEST(dedupe_shares_only_equal_bytes)
{
	struct hw_dev *d = dev();
	struct ref_fs *fs = mk(d, 1, 0, 0);
	uint8_t buf[4 * BS];
	struct refs r = { .n = 0 };
	uint64_t a, b, before;

	CHECK(fs);
	fill(buf, sizeof(buf), 4);
	two_files(fs, &a, &b);
	CHECK_EQ(ref_pwrite(fs, a, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_EQ(ref_pwrite(fs, b, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_EQ(ref_pwrite(fs, b, "x", 1, 3 * BS + 7), 1);
	CHECK_OK(ref_sync(fs));
	before = free_blocks(fs);
	CHECK_EQ(ref_dedupe_range(fs, b, 0, a, 0, 4 * BS), 0);  /* differ */
	CHECK_EQ(free_blocks(fs), before);
	CHECK_EQ(ref_dedupe_range(fs, b, 0, a, 0, 3 * BS), 3 * BS);
	CHECK_OK(ref_sync(fs));
	CHECK(free_blocks(fs) + 1 >= before + 3); /* b's three went back */
	CHECK_OK(ref_refcount_walk(fs, collect_refs, &r));
	CHECK_EQ(r.n, 1);
	CHECK_EQ(r.len[0], 3);
	finish(fs, d);
}

TEST(write_to_shared_block_copies_and_leaves_the_other_owner_alone)
{
	struct hw_dev *d = dev();
	struct ref_fs *fs = mk(d, 1, 0, 0);
	static uint8_t buf[8 * BS], out[8 * BS], want[8 * BS];
	struct extlist ea = { .n = 0 }, eb = { .n = 0 };
	struct refs r = { .n = 0 };
	uint64_t a, b;

	CHECK(fs);
	fill(buf, sizeof(buf), 5);
	two_files(fs, &a, &b);
	CHECK_EQ(ref_pwrite(fs, a, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(ref_clone_range(fs, b, 0, a, 0, sizeof(buf)));
	CHECK_EQ(ref_pwrite(fs, b, "hello", 5, 3 * BS + 10), 5);
	memcpy(want, buf, sizeof(want));
	memcpy(want + 3 * BS + 10, "hello", 5);
	CHECK_EQ(ref_pread(fs, b, out, sizeof(out), 0), sizeof(out));
	CHECK_MEM(out, want, sizeof(out));
	CHECK_EQ(ref_pread(fs, a, out, sizeof(out), 0), sizeof(out));
	CHECK_MEM(out, buf, sizeof(out));
	CHECK_OK(ref_bmap(fs, a, collect_extent, &ea));
	CHECK_OK(ref_bmap(fs, b, collect_extent, &eb));
	CHECK_EQ(eb.n, 3);                     /* old | staging | old */
	CHECK(eb.e[1].startblk != ea.e[0].startblk + 3);
	CHECK_EQ(eb.e[2].startblk, ea.e[0].startblk + 4);
	CHECK_OK(ref_refcount_walk(fs, collect_refs, &r));
	CHECK_EQ(r.n, 2);                      /* block 3 has one owner now */
	CHECK_EQ(r.len[0], 3);
	CHECK_EQ(r.start[1], ea.e[0].startblk + 4);
	CHECK_EQ(r.len[1], 4);
	CHECK(ref_counters(fs)->cow_remaps >= 1);
	CHECK_OK(ref_audit(fs, quiet, NULL));
	/* truncating b into a shared block zeroes its tail by COW too */
	CHECK_OK(ref_truncate(fs, b, 5 * BS + 3));
	CHECK_EQ(ref_pread(fs, a, out, sizeof(out), 0), sizeof(out));
	CHECK_MEM(out, buf, sizeof(out));
	finish(fs, d);
}

/* Counters of one overwrite of block 10 of a 64-block always-COW file. */
static void overwrite_inside(uint32_t naive, uint32_t fallback,
			     struct ref_counters *c, struct extlist *data,
			     struct extlist *fork)
{
	struct hw_dev *d = dev();
	struct ref_fs *fs = mk(d, 1, naive, fallback);
	static uint8_t buf[64 * BS];
	uint64_t a;

	CHECK(fs);
	fill(buf, sizeof(buf), 6);
	CHECK_OK(ref_create(fs, "a", &a));
	CHECK_EQ(ref_pwrite(fs, a, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(ref_set_flags(fs, a, REF_FLAG_COW, 0));
	ref_counters_reset(fs);
	CHECK_EQ(ref_pwrite(fs, a, buf, BS, 10 * BS), BS);
	*c = *ref_counters(fs);
	CHECK_OK(ref_bmap(fs, a, collect_extent, data));
	CHECK_OK(ref_cow_bmap(fs, a, collect_extent, fork));
	finish(fs, d);
}

TEST(end_cow_inside_an_extent_naive_pays_an_intent_and_a_roll)
{
	struct ref_counters n, o, f;
	struct extlist dn = { .n = 0 }, dopt = { .n = 0 }, df = { .n = 0 };
	struct extlist cn = { .n = 0 }, copt = { .n = 0 }, cf = { .n = 0 };

	overwrite_inside(COW, 0, &n, &dn, &cn);
	overwrite_inside(0, 0, &o, &dopt, &copt);
	overwrite_inside(0, COW, &f, &df, &cf);
	/* the seed's table: 1 update + 2 inserts, + 1 BUI + 1 roll naive */
	CHECK_EQ(o.cow_record_updates, 1);
	CHECK_EQ(o.cow_record_inserts, 2);
	CHECK_EQ(o.cow_record_deletes, 0);
	CHECK_EQ(o.cow_intents, 0);
	CHECK_EQ(o.cow_tx_rolls, 0);
	CHECK_EQ(n.cow_record_updates, 1);
	CHECK_EQ(n.cow_record_inserts, 2);
	CHECK_EQ(n.cow_intents, 1);
	CHECK_EQ(n.cow_tx_rolls, 1);
	CHECK_EQ(f.cow_fallbacks, 1);
	CHECK_EQ(f.cow_intents, 1);
	CHECK_EQ(o.cow_fallbacks + n.cow_fallbacks, 0);
	/* same records: head and tail keep the old blocks */
	CHECK_EQ(dopt.n, 3);
	CHECK_EQ(dn.n, 3);
	CHECK(same_extents(dopt.e, dn.e, 3));
	CHECK(same_extents(df.e, dn.e, 3));
	CHECK_EQ(dopt.e[2].startblk, dopt.e[0].startblk + 11);
	/* the preallocated rest of the COW extent stays, unwritten */
	CHECK_EQ(copt.n, 1);
	CHECK_EQ(copt.e[0].fileoff, 11);
	CHECK_EQ(copt.e[0].len, 5);
	CHECK_EQ(copt.e[0].state, REF_EXT_UNWRITTEN);
	CHECK(same_extents(cn.e, copt.e, 1));
}

TEST(end_cow_of_a_one_block_record_is_one_update)
{
	struct hw_dev *d = dev();
	struct ref_fs *fs = mk(d, 1, 0, 0);
	uint8_t buf[BS];
	uint64_t a, b;

	CHECK(fs);
	fill(buf, sizeof(buf), 7);
	two_files(fs, &a, &b);
	/* a's blocks 0 and 2 are apart on the device: three records */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(ref_pwrite(fs, a, buf, BS, (uint64_t)i * BS), BS);
		CHECK_EQ(ref_pwrite(fs, b, buf, BS, (uint64_t)i * BS), BS);
	}
	CHECK_OK(ref_set_flags(fs, a, REF_FLAG_COW, 0));
	ref_counters_reset(fs);
	CHECK_EQ(ref_pwrite(fs, a, buf, BS, BS), BS);
	CHECK_EQ(ref_counters(fs)->cow_record_updates, 1);
	CHECK_EQ(ref_counters(fs)->cow_record_inserts, 0);
	CHECK_EQ(ref_counters(fs)->cow_record_deletes, 0);
	finish(fs, d);
}

TEST(cow_extent_over_two_mappings_falls_back_by_itself)
{
	struct hw_dev *d = dev();
	struct ref_fs *fs = mk(d, 1, 0, 0);
	static uint8_t buf[8 * BS], out[8 * BS];
	struct extlist e = { .n = 0 };
	uint64_t a, b;

	CHECK(fs);
	fill(buf, sizeof(buf), 8);
	two_files(fs, &a, &b);
	CHECK_EQ(ref_pwrite(fs, a, buf, 4 * BS, 0), 4 * BS);
	CHECK_EQ(ref_pwrite(fs, b, buf, BS, 0), BS);        /* a gap */
	CHECK_EQ(ref_pwrite(fs, a, buf + 4 * BS, 4 * BS, 4 * BS), 4 * BS);
	CHECK_OK(ref_bmap(fs, a, collect_extent, &e));
	CHECK_EQ(e.n, 2);
	CHECK_OK(ref_set_flags(fs, a, REF_FLAG_COW, 0));
	ref_counters_reset(fs);
	fill(buf + 2 * BS, 4 * BS, 9);
	CHECK_EQ(ref_pwrite(fs, a, buf + 2 * BS, 4 * BS, 2 * BS), 4 * BS);
	CHECK_EQ(ref_counters(fs)->cow_fallbacks, 1);
	CHECK_EQ(ref_pread(fs, a, out, sizeof(out), 0), sizeof(out));
	CHECK_MEM(out, buf, sizeof(out));
	finish(fs, d);
}

TEST(crash_frees_leftover_staging_at_mount)
{
	struct hw_dev *d = dev();
	struct ref_fs *fs = mk(d, 1, 0, 0);
	uint8_t buf[4 * BS];
	struct extlist c = { .n = 0 };
	uint64_t a, before;

	CHECK(fs);
	fill(buf, sizeof(buf), 10);
	CHECK_OK(ref_create(fs, "a", &a));
	CHECK_EQ(ref_pwrite(fs, a, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(ref_set_flags(fs, a, REF_FLAG_COW, 0));
	CHECK_OK(ref_sync(fs));
	before = free_blocks(fs);
	CHECK_EQ(ref_pwrite(fs, a, buf, BS, 0), BS);
	CHECK_OK(ref_sync(fs));
	CHECK_OK(ref_cow_bmap(fs, a, collect_extent, &c));
	CHECK_EQ(c.n, 1);             /* blocks 1..7 preallocated */
	CHECK_EQ(c.e[0].len, 7);
	/* ... and the staging tree's root */
	CHECK_EQ(free_blocks(fs) + 8, before);
	ref_abandon(fs);
	CHECK_OK(ref_fsck(d, quiet, NULL));
	CHECK_OK(ref_mount(d, NULL, &fs));
	CHECK_EQ(free_blocks(fs), before);
	finish(fs, d);
}

/*
 * One run of the test below.  File a: blocks 0..15 in one record G,
 * shared with a clone, and five one-block records beyond, so a's data
 * fork is a two-level B+tree (maxrecs 4).  It is remounted with a
 * one-buffer metadata cache: every B+tree call walks from a root read
 * from the device again.  Then blocks 5..8 of a are written with the nth
 * device read failing; end-COW rewrites G in place (update G to the
 * head, insert C, insert the tail), so for one n the update's read of
 * the root fails inside remap_inplace, and the inserts must not be
 * counted.  Returns 1 when the write completed without the fault firing;
 * *mismatch is 1 when ip->nextents and the data fork's record count
 * disagree afterwards (on the live engine, or on the image the next
 * mount recovers when the error shut the engine down), -1 when the
 * setup failed.
 */
static int nextents_after_read_fault(uint64_t n, int *mismatch, int *fired)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .inodes = 16,
				   .reflink = 1 };
	struct ref_mount_opts m = { .cache_blocks = 1 };
	struct hw_fault f = { .ops = HW_FAULT_READ, .nth = n };
	static uint8_t buf[16 * BS];
	struct extlist recs = { .n = 0 };
	struct hw_dev *d = NULL;
	struct ref_fs *fs = NULL;
	struct ref_stat st;
	uint64_t a, b;
	int done = 0, err;

	*mismatch = -1;
	fill(buf, sizeof(buf), 12);
	if (hw_open("faulty:mem:8m", &d, NULL, 0) || ref_mkfs(d, &o) ||
	    ref_mount(d, NULL, &fs) || ref_create(fs, "a", &a) ||
	    ref_create(fs, "b", &b) ||
	    ref_pwrite(fs, a, buf, sizeof(buf), 0) != (int64_t)sizeof(buf) ||
	    ref_clone_range(fs, b, 0, a, 0, sizeof(buf)))
		goto out;
	for (int i = 1; i <= 5; i++)
		if (ref_pwrite(fs, a, buf, BS, (uint64_t)i * 100 * BS) != BS)
			goto out;
	err = ref_unmount(fs);
	fs = NULL;
	if (err || ref_mount(d, &m, &fs) || ref_stat(fs, a, &st) ||
	    st.nextents != 6 ||
	    hw_fault_arm(d, &f) < 0)
		goto out;
	(void)ref_pwrite(fs, a, buf, 4 * BS, 5 * BS);
	done = hw_fault_fired(d) == 0;
	*fired += !done;
	hw_fault_disarm(d, -1);
	if (ref_shutdown_error(fs)) { /* the image's count, as recovered */
		if (ref_unmount(fs) != -EIO)
			goto out;
		fs = NULL;
		if (ref_mount(d, NULL, &fs))
			goto out;
	}
	if (ref_stat(fs, a, &st) || ref_bmap(fs, a, collect_extent, &recs))
		goto out;
	*mismatch = st.nextents != (uint64_t)recs.n;
	if (*mismatch)
		fprintf(stderr, "    read %llu failed: nextents %llu, %d records\n",
			(unsigned long long)n, (unsigned long long)st.nextents,
			recs.n);
out:
	if (fs)
		ref_abandon(fs);
	hw_close(d);
	return done;
}

TEST(end_cow_failing_in_the_btree_keeps_nextents_equal_to_the_records)
{
	int mismatch = 0, fired = 0;
	uint64_t n;

	for (n = 1; n < 1000; n++)
		if (nextents_after_read_fault(n, &mismatch, &fired) || mismatch)
			break;
	CHECK_MSG(mismatch == 0, "read %llu failed: %s", (unsigned long long)n,
		  mismatch < 0 ? "setup or listing failed" :
				 "nextents is not the record count");
	CHECK(fired > 3);  /* the write read the device, and each read failed once */
}

/*
 * Two mounted filesystems, a tree of each made one after the other: the
 * first tree still reads its own filesystem's nodes (the B+tree store is
 * a field of the fs; a store shared by every fs pointed both trees at
 * the one made last).  Same layout on both devices, different records:
 * a's data fork holds file block 0 on one, file block 5 on the other.
 */
TEST(btree_of_one_fs_reads_its_own_nodes_while_another_is_mounted)
{
	struct hw_dev *d1 = dev(), *d2 = dev();
	struct ref_fs *f1 = mk(d1, 1, 0, 0), *f2 = mk(d2, 1, 0, 0);
	struct ref_inode *i1, *i2;
	struct ref_extent e;
	struct bt_tree t1, t2;
	uint8_t buf[BS], rec[XR_SIZE];
	uint64_t a1, a2;

	CHECK(f1 && f2);
	fill(buf, sizeof(buf), 3);
	CHECK_OK(ref_create(f1, "a", &a1));
	CHECK_OK(ref_create(f2, "a", &a2));
	CHECK_EQ(ref_pwrite(f1, a1, buf, BS, 0), BS);
	CHECK_EQ(ref_pwrite(f2, a2, buf, BS, 5 * BS), BS);
	CHECK_OK(inode_get(f1, a1, &i1));
	CHECK_OK(inode_get(f2, a2, &i2));
	bmap_tree(f1, i1, &t1);
	bmap_tree(f2, i2, &t2);
	CHECK_OK(bt_lookup_le(&t1, 100, rec));
	xrec_decode(rec, &e);
	CHECK_EQ(e.fileoff, 0);
	CHECK_OK(bt_lookup_le(&t2, 100, rec));
	xrec_decode(rec, &e);
	CHECK_EQ(e.fileoff, 5);
	finish(f1, d1);
	finish(f2, d2);
}

TEST(power_cut_at_every_write_of_clone_and_overwrite_recovers_clean)
{
	struct rec_dev *r = rec_open("mem:4m");
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .inodes = 16,
				   .reflink = 1 };
	struct ref_fs *fs = NULL;
	static uint8_t buf[12 * BS];
	uint64_t a, b;
	size_t k0;

	CHECK(r);
	CHECK_OK(ref_mkfs(&r->dev, &o));
	k0 = r->n;
	CHECK_OK(ref_mount(&r->dev, NULL, &fs));
	fill(buf, sizeof(buf), 11);
	two_files(fs, &a, &b);
	CHECK_EQ(ref_pwrite(fs, a, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(ref_fsync(fs, a));
	CHECK_OK(ref_clone_range(fs, b, 0, a, 0, sizeof(buf)));
	CHECK_OK(ref_fsync(fs, b));
	CHECK_EQ(ref_pwrite(fs, b, buf, 3 * BS + 5, BS + 9), 3 * BS + 5);
	CHECK_OK(ref_set_flags(fs, a, REF_FLAG_COW, 0));
	CHECK_EQ(ref_pwrite(fs, a, buf, 2 * BS, 6 * BS), 2 * BS);
	CHECK_OK(ref_truncate(fs, a, 5 * BS + 1));
	CHECK_OK(ref_unlink(fs, "b"));
	CHECK_OK(ref_unmount(fs));
	for (size_t k = k0; k <= r->n; k++) {
		struct hw_dev *img = rec_image_at(r, k, 0);
		struct ref_fs *m = NULL;

		CHECK(img);
		CHECK_MSG(ref_fsck(img, quiet, NULL) == 0, "fsck before "
			  "recovery, cut after write %zu of %zu", k, r->n);
		CHECK_MSG(ref_mount(img, NULL, &m) == 0, "mount, cut %zu", k);
		if (m) {
			CHECK_MSG(ref_audit(m, quiet, NULL) == 0, "audit after "
				  "recovery, cut after write %zu", k);
			CHECK_OK(ref_unmount(m));
		}
		CHECK_MSG(ref_fsck(img, quiet, NULL) == 0, "fsck, cut %zu", k);
		hw_close(img);
	}
	hw_close(&r->dev);
}

/*
 * Rewrite the refcount tree's first record on the image (the root is a
 * leaf here): what a leaked or lost owner count leaves behind.
 */
static void poke_refcount(struct hw_dev *d, uint32_t len, uint32_t count)
{
	uint8_t sb[BS], node[BS];
	uint64_t root;

	CHECK_OK(hw_read(d, 0, sb, BS));
	root = get64(sb + SB_REFC_ROOT);
	CHECK(root != 0);
	CHECK_OK(hw_read(d, root * BS, node, BS));
	put32(node + BT_HDR_SIZE + 8, len);
	put32(node + BT_HDR_SIZE + 12, count);
	blk_set_crc(node, BS);
	CHECK_OK(hw_write(d, root * BS, node, BS, 0));
}

TEST(audit_catches_a_leaked_and_a_lost_owner)
{
	static const uint32_t bad[2][2] = { { 4, 3 }, { 2, 2 } };

	for (int i = 0; i < 2; i++) {
		struct hw_dev *d = dev();
		struct ref_fs *fs = mk(d, 1, 0, 0);
		uint8_t buf[4 * BS];
		uint64_t a, b;

		CHECK(fs);
		fill(buf, sizeof(buf), 12);
		two_files(fs, &a, &b);
		CHECK_EQ(ref_pwrite(fs, a, buf, sizeof(buf), 0), sizeof(buf));
		CHECK_OK(ref_clone_range(fs, b, 0, a, 0, sizeof(buf)));
		CHECK_OK(ref_unmount(fs));
		CHECK_OK(ref_fsck(d, quiet, NULL));
		/* 3 owners where the forks give 2; 2 blocks shared of 4 */
		poke_refcount(d, bad[i][0], bad[i][1]);
		CHECK_EQ(ref_fsck(d, quiet, NULL), -EFSCORRUPTED);
		hw_close(d);
	}
}

int main(int argc, char **argv) { return test_main(argc, argv); }
