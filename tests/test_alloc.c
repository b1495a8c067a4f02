/*
 * test_alloc.c - the free-space allocator, driven directly (the real
 * ref/alloc.c through its internal interface) on a mounted filesystem.
 *
 * Expectations are independent: block counts computed from the geometry
 * by hand, and the audit (which rebuilds usage from every reference).
 */
#include "test.h"

#include "hw/hw.h"
#include "ref/ref_internal.h"

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

/* 512-byte blocks: a bitmap block covers (512 - 32) * 8 = 3840 blocks. */
#define BPB 3840

static struct ref_fs *mount_new(const char *spec, uint32_t bs, struct hw_dev **d)
{
	struct ref_mkfs_opts o = { .blocksize = bs, .inodes = 16,
				   .journal_blocks = 64 };
	struct ref_fs *fs = NULL;

	if (hw_open(spec, d, NULL, 0) || ref_mkfs(*d, &o) ||
	    ref_mount(*d, NULL, &fs))
		return NULL;
	return fs;
}

TEST(first_fit_from_goal_is_contiguous_and_counts_exact)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:8m", 512, &d);
	uint64_t s1, l1, s2, l2, free0;

	CHECK(fs);
	free0 = fs->free_blocks;
	CHECK_EQ(free0, fs->total - fs->data); /* nothing used after mkfs */
	CHECK_OK(alloc_data(fs, fs->data, 10, &s1, &l1));
	CHECK_EQ(s1, fs->data);
	CHECK_EQ(l1, 10);
	CHECK_OK(alloc_data(fs, s1 + l1, 5, &s2, &l2));
	CHECK_EQ(s2, s1 + 10);                 /* right after: contiguous */
	CHECK_EQ(fs->free_blocks, free0 - 15);
	CHECK_OK(alloc_free(fs, s1, 15));
	CHECK_EQ(fs->free_blocks, free0);
	CHECK_OK(tx_commit(fs));
	CHECK_OK(ref_audit(fs, quiet, NULL));
	ref_unmount(fs);
	hw_close(d);
}

TEST(freed_blocks_are_busy_until_the_freeing_commit)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:8m", 512, &d);
	uint64_t s, l, s2, l2, m;

	CHECK(fs);
	CHECK_OK(alloc_data(fs, fs->data, 4, &s, &l));
	CHECK_OK(tx_commit(fs));
	CHECK_OK(alloc_free(fs, s, 4));
	CHECK(alloc_is_busy(fs, s, 4));
	CHECK_OK(alloc_data(fs, fs->data, 4, &s2, &l2));
	CHECK(s2 >= s + 4);                    /* not reused before commit */
	CHECK_OK(alloc_free(fs, s2, l2));
	CHECK_OK(tx_commit(fs));
	CHECK(!alloc_is_busy(fs, s, 4));
	CHECK_OK(alloc_data(fs, fs->data, 4, &s2, &l2));
	CHECK_EQ(s2, s);                       /* reused after commit */

	CHECK_OK(alloc_extent(fs, fs->data + 100, 1, &m, &l));
	CHECK_OK(tx_commit(fs));
	CHECK_OK(alloc_free_meta(fs, m));
	CHECK(alloc_is_busy(fs, m, 1));        /* until the freeing commit, */
	CHECK_OK(tx_commit(fs));
	CHECK(!alloc_is_busy(fs, m, 1));       /* which carries any revoke  */
	ref_unmount(fs);
	hw_close(d);
}

/*
 * Busy ranges that touch join: 64 blocks freed one by one from the last
 * (as a truncate frees a file mapped a block a record) are one range, not
 * 64 inserted at the front of the list; every other block freed first
 * stays apart until the blocks between join them.  Every freed block is
 * busy, and nothing else is, until the freeing commit.
 */
TEST(busy_ranges_that_touch_join_and_stay_exact)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:8m", 512, &d);
	uint64_t s, l;

	CHECK(fs);
	CHECK_OK(alloc_data(fs, fs->data, 64, &s, &l));
	CHECK_EQ(l, 64);
	CHECK_OK(tx_commit(fs));
	for (unsigned i = 64; i-- > 0;) {
		CHECK_OK(alloc_free(fs, s + i, 1));
		CHECK_EQ(fs->busy.n, 1);
		CHECK_EQ(fs->busy.units, 64 - i);
	}
	CHECK(alloc_is_busy(fs, s, 64));
	CHECK(!alloc_is_busy(fs, s - 1, 1) && !alloc_is_busy(fs, s + 64, 1));
	CHECK_OK(tx_commit(fs));
	CHECK(!alloc_is_busy(fs, s, 64));

	CHECK_OK(alloc_data(fs, s, 64, &s, &l));
	CHECK_EQ(l, 64);
	CHECK_OK(tx_commit(fs));
	for (unsigned i = 0; i < 64; i += 2)            /* 0, 2, 4, ... */
		CHECK_OK(alloc_free(fs, s + i, 1));
	CHECK_EQ(fs->busy.n, 32);
	for (unsigned i = 0; i < 64; i++)
		CHECK_EQ(alloc_is_busy(fs, s + i, 1), i % 2 == 0);
	for (int i = 63; i >= 1; i -= 2)                /* 63, 61, ... 1 */
		CHECK_OK(alloc_free(fs, s + (uint64_t)i, 1));
	CHECK_EQ(fs->busy.n, 1);
	CHECK_EQ(fs->busy.units, 64);
	CHECK(alloc_is_busy(fs, s, 64));
	CHECK(!alloc_is_busy(fs, s + 64, 1));
	CHECK_OK(tx_commit(fs));
	CHECK_EQ(fs->busy.n, 0);
	CHECK_OK(ref_audit(fs, quiet, NULL));
	ref_unmount(fs);
	hw_close(d);
}

TEST(groups_are_initialised_lazily_and_in_order)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:8m", 512, &d);
	uint64_t s, l, total = 0;

	CHECK(fs);
	CHECK_EQ(fs->bpb, BPB);
	CHECK_EQ(fs->bminit, 0);               /* mkfs wrote no bitmap block */
	CHECK_OK(alloc_data(fs, fs->data, 1, &s, &l));
	CHECK_EQ(fs->bminit, 1);
	/* fill group 0; the next allocation must open group 1 */
	while (total < BPB - 1) {
		CHECK_OK(alloc_data(fs, fs->data, BPB, &s, &l));
		CHECK(s + l <= fs->data + BPB);    /* extents never cross groups */
		total += l;
	}
	CHECK_EQ(fs->bminit, 1);
	CHECK_OK(alloc_data(fs, fs->data, 8, &s, &l));
	CHECK_EQ(fs->bminit, 2);
	CHECK_EQ(s, fs->data + BPB);
	CHECK_OK(tx_commit(fs));
	CHECK_OK(ref_unmount(fs));
	/* and the superblock remembers it */
	CHECK_OK(ref_mount(d, NULL, &fs));
	CHECK_EQ(fs->bminit, 2);
	CHECK_EQ(fs->free_blocks, fs->total - fs->data - BPB - 8);
	ref_unmount(fs);
	hw_close(d);
}

TEST(full_device_says_enospc_and_keeps_a_metadata_reserve)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:1m", 512, &d);
	uint64_t s, l, got = 0;
	int err;

	CHECK(fs);
	while ((err = alloc_data(fs, fs->data, 1000, &s, &l)) == 0)
		got += l;
	CHECK_EQ(err, -ENOSPC);
	CHECK(fs->free_blocks > 0 && fs->free_blocks <= 2 * BT_MAX_LEVELS + 8);
	CHECK_OK(alloc_extent(fs, fs->data, 1, &s, &l)); /* metadata still fits */
	CHECK_EQ(got + 1 + fs->free_blocks, fs->total - fs->data);
	ref_unmount(fs);
	hw_close(d);
}

/*
 * statfs's avail is what file data can still get: the metadata reserve
 * is not in it (free blocks are), on a fresh filesystem and on one whose
 * data filled it; meta_avail, what metadata can get, keeps the reserve.
 */
TEST(statfs_avail_leaves_out_the_metadata_reserve)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:1m", 512, &d);
	struct ref_statfs st;
	uint64_t s, l;

	CHECK(fs);
	CHECK_OK(ref_statfs(fs, &st));
	CHECK_EQ(st.free_blocks, fs->free_blocks);
	CHECK_EQ(st.avail_blocks, fs->free_blocks - (2 * BT_MAX_LEVELS + 8));
	CHECK_EQ(st.meta_avail_blocks, fs->free_blocks);
	while (alloc_data(fs, fs->data, 1000, &s, &l) == 0)
		;
	CHECK_OK(ref_statfs(fs, &st));
	CHECK(st.free_blocks > 0);
	CHECK_EQ(st.avail_blocks, 0);
	CHECK_EQ(st.meta_avail_blocks, st.free_blocks); /* the reserve: its */
	ref_unmount(fs);
	hw_close(d);
}

TEST(freeing_a_free_block_is_corruption_not_a_crash)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:8m", 512, &d);
	uint64_t s, l, free0;

	CHECK(fs);
	fs->msg = quiet;
	CHECK_OK(alloc_data(fs, fs->data, 2, &s, &l));
	CHECK_OK(alloc_free(fs, s + 1, 1));
	free0 = fs->free_blocks;
	/* s is allocated, s+1 is not: nothing may change */
	CHECK_EQ(alloc_free(fs, s, 2), -EFSCORRUPTED);
	CHECK_EQ(fs->free_blocks, free0);
	CHECK(!alloc_is_busy(fs, s, 1));
	CHECK_EQ(alloc_free(fs, fs->total - 1, 5), -EFSCORRUPTED);
	CHECK_EQ(alloc_free(fs, 0, 1), -EFSCORRUPTED);
	ref_abandon(fs);
	hw_close(d);
}

static void collect(void *arg, const char *line)
{
	size_t n = strlen(arg);

	snprintf((char *)arg + n, 2048 - n, "%s\n", line);
}

/*
 * Set bits the references do not account for, in the first word, a later
 * word and the last bit of a group that ends mid-word: the audit must
 * count each, name the first, and count the free bits without them.
 */
TEST(audit_counts_and_names_bitmap_bits_that_disagree)
{
	static const uint64_t at[3][2] = { { 5, 130 }, { 64, 0 }, { 0, 0 } };
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:1m", 512, &d);
	uint64_t s, l, glen;
	char msgs[2048], want[160];
	struct rbuf *b;

	CHECK(fs);
	glen = fs->total - fs->data;
	CHECK(glen < BPB && glen % 64 != 0);  /* one group, ending mid-word */
	CHECK_OK(alloc_data(fs, fs->data, 1, &s, &l));
	CHECK_OK(alloc_free(fs, s, l));
	CHECK_OK(tx_commit(fs));
	CHECK_OK(ref_audit(fs, quiet, NULL));
	for (unsigned t = 0; t < 3; t++) {
		/* the last case: the group's last bit */
		uint64_t bits[2] = { t == 2 ? glen - 1 : at[t][0], at[t][1] };
		unsigned nbits = bits[1] ? 2 : 1;

		CHECK_OK(buf_read(fs, fs->dspace.bmstart, 0, &b));
		for (unsigned i = 0; i < nbits; i++)
			b->data[BM_HDR_SIZE + bits[i] / 8] ^= (uint8_t)(1u << (bits[i] % 8));
		msgs[0] = 0;
		CHECK_EQ(ref_audit(fs, collect, msgs), -EFSCORRUPTED);
		snprintf(want, sizeof(want), "%u blocks disagree with the references "
			 "found (first: block %llu is unreferenced but allocated)",
			 nbits, (unsigned long long)(fs->data + bits[0]));
		CHECK_MSG(strstr(msgs, want), "expected '%s' in:\n%s", want, msgs);
		snprintf(want, sizeof(want), "bits say %llu",
			 (unsigned long long)(glen - nbits));
		CHECK_MSG(strstr(msgs, want), "expected '%s' in:\n%s", want, msgs);
		for (unsigned i = 0; i < nbits; i++)
			b->data[BM_HDR_SIZE + bits[i] / 8] ^= (uint8_t)(1u << (bits[i] % 8));
		buf_put(fs, b);
		CHECK_OK(ref_audit(fs, quiet, NULL));
	}
	ref_abandon(fs);
	hw_close(d);
}

/*
 * The audit holds every inode slot to its in-memory inode: a byte changed
 * in a file's slot (a field, and the padding past its name), in a
 * never-used slot of the same block, and in a block of never-used slots
 * is each named; put back, the audit passes again.
 */
TEST(audit_names_an_inode_slot_that_differs_from_memory)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:8m", 1024, &d); /* 3 slots a block */
	uint64_t ino, at[4] = { 0 };
	size_t off[4] = { DI_SIZE, 200, 0, 255 };
	char msgs[2048], want[96];
	struct rbuf *b;

	CHECK(fs);
	CHECK_OK(ref_create(fs, "f", &ino));
	CHECK_OK(ref_sync(fs));
	CHECK_OK(ref_audit(fs, quiet, NULL));
	at[0] = at[1] = ino;
	for (uint32_t k = 0; k < fs->ninodes; k++) {
		const struct ref_inode *ip = &fs->inodes[k];

		if (ip->ino == ino || !inode_encodes_zero(ip))
			continue;
		if (inode_blkno(fs, ip->ino) == inode_blkno(fs, ino) && !at[2])
			at[2] = ip->ino;       /* beside the file's */
		if (inode_blkno(fs, ip->ino) != inode_blkno(fs, ino))
			at[3] = ip->ino;       /* the last, in a free block */
	}
	CHECK(at[2] != 0 && at[3] != 0);
	for (unsigned t = 0; t < 4; t++) {
		CHECK_OK(buf_read(fs, inode_blkno(fs, at[t]), 0, &b));
		b->data[inode_slot_off(fs, at[t]) + off[t]] ^= 0x40;
		msgs[0] = 0;
		CHECK_EQ(ref_audit(fs, collect, msgs), -EFSCORRUPTED);
		snprintf(want, sizeof(want), "inode %llu: in-memory inode "
			 "differs from its slot", (unsigned long long)at[t]);
		CHECK_MSG(strstr(msgs, want), "expected '%s' in:\n%s", want, msgs);
		b->data[inode_slot_off(fs, at[t]) + off[t]] ^= 0x40;
		buf_put(fs, b);
		CHECK_OK(ref_audit(fs, quiet, NULL));
	}
	ref_abandon(fs);
	hw_close(d);
}

/*
 * Mount reads every slot of the inode table: a slot written with a name
 * a file already has, and one of an unknown type in a later table block,
 * each make the mount fail as corruption, naming the inode.
 */
TEST(mount_names_a_bad_slot_in_any_inode_table_block)
{
	static const char *const why[2] = { "name 'f' used twice",
					    "unknown inode type" };
	uint64_t ino;

	for (unsigned t = 0; t < 2; t++) {
		struct hw_dev *d;
		struct ref_fs *fs = mount_new("mem:8m", 1024, &d);
		struct ref_mount_opts mo = { 0 };
		char msgs[2048] = "", want[96];
		uint64_t bad;
		struct rbuf *b;
		uint8_t *slot;

		CHECK(fs);
		CHECK_OK(ref_create(fs, "f", &ino));
		CHECK_OK(ref_sync(fs));
		/* beside the file, or the table's last slot */
		bad = t == 0 ? ino + 1 : fs->ninodes;
		CHECK(t == 0 || inode_blkno(fs, bad) != inode_blkno(fs, ino));
		CHECK_OK(buf_read(fs, inode_blkno(fs, bad), 0, &b));
		slot = b->data + inode_slot_off(fs, bad);
		if (t == 0)
			inode_encode(&fs->inodes[ino - 1], slot);
		else
			slot[DI_TYPE] = 7;
		buf_dirty(fs, b);
		buf_put(fs, b);
		CHECK_OK(tx_commit(fs));
		CHECK_OK(ref_unmount(fs));
		mo.msg = collect;
		mo.msg_arg = msgs;
		CHECK_EQ(ref_mount(d, &mo, &fs), -EFSCORRUPTED);
		snprintf(want, sizeof(want), "inode %llu", (unsigned long long)bad);
		CHECK_MSG(strstr(msgs, want) && strstr(msgs, why[t]),
			  "expected '%s' and '%s' in:\n%s", want, why[t], msgs);
		hw_close(d);
	}
}

/*
 * Two references to one block, made far apart in the audit's list (six
 * files of forty records each, and a block past 65,536 so that its
 * number spans three bytes, with a block equal to it in the two low
 * bytes referenced between them): sorted by start, they meet, and the
 * audit names the block.
 */
TEST(audit_names_a_block_two_far_apart_references_share)
{
	static uint8_t blk[512];
	struct hw_dev *d;
	struct ref_fs *fs = mount_new("mem:64m", 512, &d);
	struct ref_extent e0, last;
	struct ref_inode *ip0, *ip3, *ip5;
	uint64_t ino[6], far;
	char msgs[2048], want[96];

	CHECK(fs);
	for (unsigned f = 0; f < 6; f++) {
		char name[8];

		snprintf(name, sizeof(name), "f%u", f);
		CHECK_OK(ref_create(fs, name, &ino[f]));
		for (unsigned b = 0; b < 40; b++)   /* every other block */
			CHECK_EQ(ref_pwrite(fs, ino[f], blk, 512, 1024ull * b),
				 512);
	}
	CHECK_OK(ref_sync(fs));
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(inode_get(fs, ino[0], &ip0));
	CHECK_OK(inode_get(fs, ino[5], &ip5));
	CHECK_EQ(ip0->nextents, 40);
	CHECK_OK(bmap_lookup(fs, ip0, 0, &e0));
	/* the last file maps f0's first block past its own end */
	e0.fileoff = 200;
	CHECK_OK(bmap_map(fs, ip5, &e0));
	msgs[0] = 0;
	CHECK_EQ(ref_audit(fs, collect, msgs), -EFSCORRUPTED);
	snprintf(want, sizeof(want), "block %llu is referenced twice",
		 (unsigned long long)e0.startblk);
	CHECK_MSG(strstr(msgs, want), "expected '%s' in:\n%s", want, msgs);
	CHECK_OK(bmap_unmap(fs, ip5, 200, 1, false));
	CHECK_OK(ref_audit(fs, quiet, NULL));
	/* a block far up the device (free in the bitmap, which the audit
	 * says too), mapped by f0 and by f5, and between them in the list
	 * f3's block 65,536 below it: equal in their two low bytes */
	far = fs->total - 16;
	CHECK(far > 65536 + fs->data + 1000);
	last = (struct ref_extent){ 300, far - 65536, 1, 0 };
	CHECK_OK(inode_get(fs, ino[3], &ip3));
	CHECK_OK(bmap_map(fs, ip3, &last));
	last = (struct ref_extent){ 300, far, 1, 0 };
	CHECK_OK(bmap_map(fs, ip0, &last));
	last.fileoff = 400;
	CHECK_OK(bmap_map(fs, ip5, &last));
	msgs[0] = 0;
	CHECK_EQ(ref_audit(fs, collect, msgs), -EFSCORRUPTED);
	snprintf(want, sizeof(want), "block %llu is referenced twice",
		 (unsigned long long)far);
	CHECK_MSG(strstr(msgs, want), "expected '%s' in:\n%s", want, msgs);
	ref_abandon(fs);
	hw_close(d);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
