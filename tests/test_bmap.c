/*
 * test_bmap.c - the extent map's lookups for readers and writers, on a
 * filesystem whose records hold one block each (maxext=1), placed by hand
 * through ref/bmap.c's internal interface.
 *
 * The expectation for a run (bmap_lookup_run) is bmap_lookup's answer for
 * every block the run covers: the same state, and the block the run's
 * arithmetic gives is the block the record says.
 */
#include "test.h"

#include "hw/hw.h"
#include "ref/ref_internal.h"

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

static struct ref_fs *mount_maxext1(struct hw_dev **d)
{
	struct ref_mkfs_opts o = { .blocksize = 512, .inodes = 16,
				   .journal_blocks = 64, .max_extlen = 1,
				   .btree_maxrecs = 4 };
	struct ref_fs *fs = NULL;

	if (hw_open("mem:8m", d, NULL, 0) || ref_mkfs(*d, &o) ||
	    ref_mount(*d, NULL, &fs))
		return NULL;
	return fs;
}

/* The run at fb up to upto agrees with bmap_lookup at every block in it. */
static int run_agrees(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		      uint64_t upto, struct ref_extent *r)
{
	struct ref_extent one;
	int err = bmap_lookup_run(fs, ip, fb, upto, r);

	HCHECK(err == 0, "run(%llu) = %d", (unsigned long long)fb, err);
	err = bmap_lookup(fs, ip, fb, &one);
	HCHECK(err == 0, "lookup(%llu) = %d", (unsigned long long)fb, err);
	if (one.state == BMAP_HOLE || r->state == BMAP_HOLE) {
		HCHECK(one.fileoff == r->fileoff && one.len == r->len &&
		       one.startblk == r->startblk && one.state == r->state,
		       "run(%llu): %llu+%llu "
		       "state %u, lookup %llu+%llu state %u",
		       (unsigned long long)fb, (unsigned long long)r->fileoff,
		       (unsigned long long)r->len, r->state,
		       (unsigned long long)one.fileoff,
		       (unsigned long long)one.len, one.state);
		return 0;
	}
	HCHECK(r->fileoff == one.fileoff && r->len >= one.len,
	       "run(%llu) is %llu+%llu, the record %llu+%llu",
	       (unsigned long long)fb, (unsigned long long)r->fileoff,
	       (unsigned long long)r->len, (unsigned long long)one.fileoff,
	       (unsigned long long)one.len);
	for (uint64_t b = fb; b < r->fileoff + r->len; b++) {
		uint64_t by_run = r->startblk + (b - r->fileoff);

		err = bmap_lookup(fs, ip, b, &one);
		HCHECK(err == 0, "lookup(%llu) = %d", (unsigned long long)b,
		       err);
		HCHECK(one.state == r->state &&
		       one.startblk + (b - one.fileoff) == by_run,
		       "run(%llu) maps block %llu to %llu (state %u), its "
		       "record to %llu (state %u)", (unsigned long long)fb,
		       (unsigned long long)b, (unsigned long long)by_run,
		       r->state,
		       (unsigned long long)(one.startblk + (b - one.fileoff)),
		       one.state);
	}
	return 0;
}

/*
 * File f mapped by hand over n fresh blocks in a row on the device, one
 * record a block (maxext=1), written: the blocks are all taken before the
 * first record goes in, so no B+tree node lands between two of them (a
 * write through the engine places the tree's nodes among its data).
 */
static int map_in_a_row(struct ref_fs *fs, const char *name, unsigned n,
			struct ref_inode **ipp)
{
	uint64_t ino, first = 0;
	int err = ref_create(fs, name, &ino);

	HCHECK(err == 0, "create: %d", err);
	err = inode_get(fs, ino, ipp);
	HCHECK(err == 0, "inode_get: %d", err);
	for (unsigned i = 0; i < n; i++) {
		uint64_t at, got;

		err = alloc_data(fs, first + i, 1, &at, &got);
		HCHECK(err == 0 && got == 1, "alloc: %d", err);
		if (i == 0)
			first = at;
		HCHECK(at == first + i, "block %u at %llu, not %llu", i,
		       (unsigned long long)at,
		       (unsigned long long)(first + i));
	}
	for (unsigned i = 0; i < n; i++) {
		struct ref_extent e = { i, first + i, 1, 0 };

		err = bmap_map(fs, *ipp, &e);
		if (!err)
			err = tx_maybe_roll(fs);
		HCHECK(err == 0, "map %u: %d", i, err);
	}
	(*ipp)->size = (uint64_t)n << fs->bshift;
	err = inode_log(fs, *ipp);
	HCHECK(err == 0, "inode_log: %d", err);
	return 0;
}

/*
 * 64 records of a block, one after another on the device.  A run joins
 * them up to (and past, by less than a record) what it was asked for,
 * and stops where the device placement, the state or a hole breaks the
 * sequence.
 */
TEST(lookup_run_joins_the_records_that_continue_on_the_device)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	struct ref_inode *ip;
	struct ref_extent r, far;
	uint64_t longest = 0;

	CHECK(fs);
	CHECK(map_in_a_row(fs, "f", 64, &ip) == 0);
	CHECK_EQ(ip->nextents, 64);

	CHECK(run_agrees(fs, ip, 5, 64, &r) == 0);
	CHECK_EQ(r.fileoff, 5);
	CHECK_EQ(r.len, 59);
	CHECK(run_agrees(fs, ip, 5, 20, &r) == 0);
	CHECK_EQ(r.len, 15);
	CHECK(run_agrees(fs, ip, 5, 6, &r) == 0);
	CHECK_EQ(r.len, 1);

	/* block 30 moved elsewhere on the device, 40 unwritten, 50 a hole */
	CHECK_OK(bmap_lookup(fs, ip, 30, &far));
	CHECK_OK(bmap_unmap(fs, ip, 30, 1, true));
	CHECK_OK(alloc_data(fs, far.startblk + 1000, 1, &far.startblk, &far.len));
	CHECK_OK(bmap_map(fs, ip, &far));
	CHECK_OK(bmap_convert(fs, ip, 40, 1, REF_EXT_UNWRITTEN, false));
	CHECK_OK(bmap_unmap(fs, ip, 50, 1, true));
	CHECK(run_agrees(fs, ip, 5, 64, &r) == 0);
	CHECK_EQ(r.len, 25);                    /* up to block 30 */
	CHECK(run_agrees(fs, ip, 30, 64, &r) == 0);
	CHECK_EQ(r.len, 1);                     /* 31 is not after it */
	CHECK(run_agrees(fs, ip, 31, 64, &r) == 0);
	CHECK_EQ(r.len, 9);                     /* up to block 40 */
	CHECK(run_agrees(fs, ip, 40, 64, &r) == 0);
	CHECK_EQ(r.state, REF_EXT_UNWRITTEN);
	CHECK_EQ(r.len, 1);
	CHECK(run_agrees(fs, ip, 50, 64, &r) == 0);
	CHECK_EQ(r.state, BMAP_HOLE);
	CHECK_EQ(r.len, 1);
	CHECK(run_agrees(fs, ip, 64, 100, &r) == 0);
	CHECK_EQ(r.state, BMAP_HOLE);           /* past the last record */

	/* every start, every reach: each run agrees block for block */
	for (uint64_t fb = 0; fb < 70; fb++) {
		const uint64_t reach[] = { fb + 1, fb + 3, fb + 8, 80 };

		for (unsigned i = 0; i < 4; i++) {
			CHECK(run_agrees(fs, ip, fb, reach[i], &r) == 0);
			if (r.state != BMAP_HOLE && r.len > longest)
				longest = r.len;
		}
	}
	CHECK_EQ(longest, 30);                  /* blocks 0..29 */
	CHECK_OK(ref_audit(fs, quiet, NULL));
	ref_abandon(fs);
	hw_close(d);
}

/* Every block of [0, n) has the state st[] says (BMAP_HOLE: a hole). */
static int states_are(struct ref_fs *fs, struct ref_inode *ip,
		      const uint32_t *st, unsigned n)
{
	for (unsigned b = 0; b < n; b++) {
		struct ref_extent e;
		int err = bmap_lookup(fs, ip, b, &e);

		HCHECK(err == 0, "lookup(%u) = %d", b, err);
		HCHECK(e.state == st[b], "block %u: state %u, want %u", b,
		       e.state, st[b]);
	}
	return 0;
}

/*
 * bmap_convert walks the records that need nothing (holes, and records
 * already in the state asked) in one descent, not a lookup each: over
 * 200 one-block records with holes and unwritten records among them,
 * each conversion leaves every block as a block-by-block model says, and
 * converting a range already in its state visits fewer B+tree nodes than
 * it has records.
 */
TEST(convert_walks_the_records_that_need_nothing_at_once)
{
	static const struct {
		uint64_t fb, len;
		uint32_t state;
	} cv[] = {
		{ 0, 200, REF_EXT_UNWRITTEN }, { 10, 50, 0 }, { 0, 7, 0 },
		{ 150, 100, REF_EXT_UNWRITTEN }, { 60, 1, 0 }, { 3, 190, 0 },
		{ 96, 3, REF_EXT_UNWRITTEN }, { 0, 1000, 0 },
	};
	uint32_t st[256];
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	struct ref_inode *ip;
	uint64_t v0, visits;

	CHECK(fs);
	CHECK(map_in_a_row(fs, "f", 200, &ip) == 0);
	for (unsigned b = 0; b < 256; b++)
		st[b] = b < 200 ? 0 : BMAP_HOLE;
	for (unsigned b = 0; b < 200; b++) {
		if (b % 17 == 3) {
			CHECK_OK(bmap_unmap(fs, ip, b, 1, true));
			st[b] = BMAP_HOLE;
		} else if (b % 5 == 0) {
			CHECK_OK(bmap_convert(fs, ip, b, 1, REF_EXT_UNWRITTEN,
					      true));
			st[b] = REF_EXT_UNWRITTEN;
		}
		CHECK_OK(tx_maybe_roll(fs));
	}
	CHECK(states_are(fs, ip, st, 256) == 0);
	for (size_t i = 0; i < sizeof(cv) / sizeof(cv[0]); i++) {
		CHECK_OK(bmap_convert(fs, ip, cv[i].fb, cv[i].len, cv[i].state,
				      true));
		for (uint64_t b = cv[i].fb; b < cv[i].fb + cv[i].len && b < 256; b++)
			if (st[b] != BMAP_HOLE)
				st[b] = cv[i].state;
		CHECK_MSG(states_are(fs, ip, st, 256) == 0, "after conversion %zu",
			  i);
	}
	/* all written now: converting to written again needs nothing */
	v0 = ref_counters(fs)->bt.node_visits;
	CHECK_OK(bmap_convert(fs, ip, 0, 200, 0, true));
	visits = ref_counters(fs)->bt.node_visits - v0;
	CHECK_MSG(visits < 200, "converting 200 settled records visited %llu "
		  "nodes", (unsigned long long)visits);
	CHECK(states_are(fs, ip, st, 256) == 0);
	CHECK_OK(ref_audit(fs, quiet, NULL));
	ref_abandon(fs);
	hw_close(d);
}

/*
 * n one-block records in a row (map_in_a_row) written with buf's n
 * blocks, then an unmount and a mount (nothing cached): the file's inode
 * number, and the height its tree had.
 */
static int written_in_a_row(struct hw_dev *d, struct ref_fs **fs,
			    const uint8_t *buf, unsigned n, uint64_t *ino,
			    unsigned *levels)
{
	struct ref_inode *ip;
	int64_t want = (int64_t)n * 512;
	int err;

	if (map_in_a_row(*fs, "f", n, &ip))
		return -1;
	*levels = ip->root.levels;
	HCHECK(ref_pwrite(*fs, ip->ino, buf, (uint64_t)want, 0) == want,
	       "pwrite of %u blocks", n);
	err = ref_unmount(*fs);
	HCHECK(err == 0, "unmount: %d", err);
	err = ref_mount(d, NULL, fs);
	HCHECK(err == 0, "mount: %d", err);
	err = ref_lookup(*fs, "f", ino);
	HCHECK(err == 0, "lookup: %d", err);
	return 0;
}

/*
 * Blocks 0..n-1 of ip each mapped in state, by records of want_len blocks
 * (0: any length), on device blocks that rise one by one: no gap.
 */
static int in_one_row(struct ref_fs *fs, struct ref_inode *ip, uint64_t n,
		      uint32_t state, uint64_t want_len)
{
	uint64_t prev = 0, gaps = 0;

	for (uint64_t b = 0; b < n; b++) {
		struct ref_extent e;
		int err = bmap_lookup(fs, ip, b, &e);

		HCHECK(err == 0, "lookup(%llu) = %d", (unsigned long long)b, err);
		HCHECK(e.state == state, "block %llu: state %u, want %u",
		       (unsigned long long)b, e.state, state);
		HCHECK(!want_len || e.len == want_len, "block %llu: a record of "
		       "%llu blocks", (unsigned long long)b,
		       (unsigned long long)e.len);
		HCHECK(b == 0 || e.startblk > prev, "block %llu at %llu, not "
		       "after %llu", (unsigned long long)b,
		       (unsigned long long)e.startblk, (unsigned long long)prev);
		gaps += b > 0 && e.startblk != prev + 1;
		prev = e.startblk;
	}
	HCHECK(gaps == 0, "%llu gaps", (unsigned long long)gaps);
	return 0;
}

/*
 * fallocate fills a hole of a file mapped a block a record a piece at a
 * time, each piece aimed at the device block after the one before: on a
 * fresh filesystem the 150 one-block records lie in one row on the
 * device, as a lookup of each piece's goal placed them.
 */
TEST(prealloc_places_each_piece_after_the_one_before)
{
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	struct ref_inode *ip;
	uint64_t ino;

	CHECK(fs);
	CHECK_OK(ref_create(fs, "f", &ino));
	CHECK_OK(ref_fallocate(fs, ino, 0, 0, 150 * 512));
	CHECK_OK(inode_get(fs, ino, &ip));
	CHECK_EQ(ip->nextents, 150);
	/* tree nodes keep out of the way of file data (below) */
	CHECK(in_one_row(fs, ip, 150, REF_EXT_UNWRITTEN, 1) == 0);
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

/*
 * A write into a hole of a file mapped a block a record takes it a piece
 * at a time, and each piece after the first neither looks the hole up
 * again nor its goal: 150 blocks written at once lie in one row on a
 * fresh device, read back as written, and the write visits fewer B+tree
 * nodes than three descents a block.
 */
TEST(a_write_into_a_hole_fills_it_piece_after_piece)
{
	static uint8_t buf[150 * 512], back[150 * 512];
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	struct ref_inode *ip;
	uint64_t ino, v0, visits;

	CHECK(fs);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 29 + 3);
	CHECK_OK(ref_create(fs, "f", &ino));
	CHECK_OK(inode_get(fs, ino, &ip));
	v0 = ref_counters(fs)->bt.node_visits;
	CHECK_EQ(ref_pwrite(fs, ino, buf, sizeof(buf), 0), (int64_t)sizeof(buf));
	visits = ref_counters(fs)->bt.node_visits - v0;
	CHECK_EQ(ip->nextents, 150);
	CHECK(in_one_row(fs, ip, 150, 0, 0) == 0);
	CHECK_MSG(visits < 3 * 150 * ip->root.levels, "%llu node visits for "
		  "150 pieces, tree of %u levels", (unsigned long long)visits,
		  ip->root.levels);
	CHECK_EQ(ref_pread(fs, ino, back, sizeof(back), 0), (int64_t)sizeof(back));
	CHECK_MEM(back, buf, sizeof(buf));
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

/*
 * bmap_lookup_read at fb up to upto: a written answer as bmap_lookup_run
 * gives it; an answer of zeros covers fb, every block in it reads as
 * zeros block by block, and it stops short of upto only at a written
 * block.
 */
static int read_agrees(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		       uint64_t upto, struct ref_extent *r)
{
	struct ref_extent run, one;
	uint64_t end;
	int err = bmap_lookup_read(fs, ip, fb, upto, r);

	HCHECK(err == 0, "read(%llu) = %d", (unsigned long long)fb, err);
	HCHECK(fb >= r->fileoff && fb - r->fileoff < r->len,
	       "read(%llu) gave %llu+%llu", (unsigned long long)fb,
	       (unsigned long long)r->fileoff, (unsigned long long)r->len);
	if (r->state == 0) {
		err = bmap_lookup_run(fs, ip, fb, upto, &run);
		HCHECK(err == 0 && run.fileoff == r->fileoff &&
		       run.len == r->len && run.startblk == r->startblk,
		       "read(%llu): a written answer not the run's",
		       (unsigned long long)fb);
		return 0;
	}
	end = r->fileoff + r->len;
	for (uint64_t b = fb; b < end && b < upto + 300; b++) {
		err = bmap_lookup(fs, ip, b, &one);
		HCHECK(err == 0 && one.state != 0, "read(%llu) reads block "
		       "%llu as zeros, its state %u", (unsigned long long)fb,
		       (unsigned long long)b, one.state);
	}
	if (end < upto) {
		err = bmap_lookup(fs, ip, end, &one);
		HCHECK(err == 0 && one.state == 0, "read(%llu) stops at %llu "
		       "(state %u) before %llu", (unsigned long long)fb,
		       (unsigned long long)end, one.state,
		       (unsigned long long)upto);
	}
	return 0;
}

/*
 * A reader of zeros looks up a long run of holes and unwritten one-block
 * records once: from every start and reach, bmap_lookup_read agrees with
 * the lookups block by block, and reading 120 unwritten blocks after a
 * remount visits fewer nodes than the blocks it reads.
 */
TEST(a_reader_of_zeros_takes_holes_and_unwritten_records_as_one_run)
{
	static uint8_t buf[200 * 512], back[200 * 512];
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	struct ref_inode *ip;
	struct ref_extent r;
	uint64_t ino, v0, visits, longest = 0;

	unsigned levels;

	CHECK(fs);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13 + 1);
	CHECK(written_in_a_row(d, &fs, buf, 200, &ino, &levels) == 0);
	CHECK_OK(inode_get(fs, ino, &ip));
	/* blocks 40..159 unwritten, with holes at 60, 61 and 100; 170 a hole */
	CHECK_OK(bmap_convert(fs, ip, 40, 120, REF_EXT_UNWRITTEN, true));
	CHECK_OK(bmap_unmap(fs, ip, 60, 2, true));
	CHECK_OK(bmap_unmap(fs, ip, 100, 1, true));
	CHECK_OK(bmap_unmap(fs, ip, 170, 1, true));
	CHECK_OK(inode_log(fs, ip));
	memset(buf + 40 * 512, 0, 120 * 512);
	memset(buf + 170 * 512, 0, 512);
	for (uint64_t fb = 0; fb < 210; fb++) {
		const uint64_t reach[] = { fb + 1, fb + 5, fb + 50, 400 };

		for (unsigned i = 0; i < 4; i++) {
			CHECK_MSG(read_agrees(fs, ip, fb, reach[i], &r) == 0,
				  "fb %llu reach %llu", (unsigned long long)fb,
				  (unsigned long long)reach[i]);
			if (r.state != 0 && r.fileoff + r.len - fb > longest &&
			    r.fileoff + r.len < 1000)
				longest = r.fileoff + r.len - fb;
		}
	}
	CHECK_EQ(longest, 120);                 /* blocks 40..159 */
	CHECK_OK(ref_unmount(fs));
	CHECK_OK(ref_mount(d, NULL, &fs));
	v0 = ref_counters(fs)->bt.node_visits;
	CHECK_EQ(ref_pread(fs, ino, back + 40 * 512, 120 * 512, 40 * 512),
		 120 * 512);
	visits = ref_counters(fs)->bt.node_visits - v0;
	CHECK_MSG(visits < 120, "a read of 120 unwritten one-block records "
		  "visited %llu nodes", (unsigned long long)visits);
	CHECK_EQ(ref_pread(fs, ino, back, 40 * 512, 0), 40 * 512);
	CHECK_EQ(ref_pread(fs, ino, back + 160 * 512, 40 * 512, 160 * 512),
		 40 * 512);
	CHECK_MEM(back, buf, sizeof(buf));
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

/*
 * File f on a one-block-a-record filesystem: blocks 0..4 written, a hole
 * at 5..9, a record of no blocks at 10 (damage), 11..14 unwritten.
 */
static struct ref_inode *with_an_empty_record(struct ref_fs *fs, uint64_t *ino)
{
	struct ref_extent z = { 10, 5000, 0, REF_EXT_UNWRITTEN };
	uint8_t rec[XR_SIZE];
	struct ref_inode *ip;
	struct bt_tree t;

	if (ref_create(fs, "f", ino) || inode_get(fs, *ino, &ip))
		return NULL;
	for (uint64_t b = 0; b < 15; b++) {
		struct ref_extent e = { b, 0, 1, b > 10 ? REF_EXT_UNWRITTEN : 0 };
		uint64_t got;

		if (b >= 5 && b <= 10)
			continue;
		if (alloc_data(fs, 0, 1, &e.startblk, &got) ||
		    bmap_map(fs, ip, &e))
			return NULL;
	}
	bmap_tree(fs, ip, &t);
	xrec_encode(rec, &z);
	if (bt_insert(&t, rec))
		return NULL;
	ip->nextents++;
	ip->size = 15 * 512;
	return inode_log(fs, ip) ? NULL : ip;
}

/*
 * A record of no blocks is damage wherever a walk meets it: a reader's
 * run of zeros and a convert's walk over the records that need nothing
 * stop before it, and the lookup of its block reports it, as a lookup a
 * record did (a read comes back short at the hole before it).
 */
TEST(walks_stop_at_a_record_of_no_blocks_and_its_lookup_reports_it)
{
	static uint8_t buf[15 * 512];
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	struct ref_inode *ip;
	struct ref_extent e;
	uint64_t ino;

	CHECK(fs);
	ip = with_an_empty_record(fs, &ino);
	CHECK(ip);
	CHECK_EQ(bmap_lookup(fs, ip, 10, &e), -EFSCORRUPTED);
	CHECK_EQ(bmap_lookup_run(fs, ip, 10, 15, &e), -EFSCORRUPTED);
	CHECK_EQ(bmap_lookup_read(fs, ip, 10, 15, &e), -EFSCORRUPTED);
	CHECK_OK(bmap_lookup_read(fs, ip, 6, 15, &e));
	CHECK(e.state == BMAP_HOLE && e.fileoff == 6 && e.len == 4);
	CHECK_EQ(ref_pread(fs, ino, buf, sizeof(buf), 0), 10 * 512);
	CHECK_EQ(bmap_convert(fs, ip, 5, 6, REF_EXT_UNWRITTEN, true),
		 -EFSCORRUPTED);
	CHECK_EQ(bmap_convert(fs, ip, 5, 10, 0, true), -EFSCORRUPTED);
	CHECK_OK(bmap_lookup(fs, ip, 11, &e));
	CHECK_EQ(e.state, REF_EXT_UNWRITTEN);   /* not converted past it */
	ref_abandon(fs);
	hw_close(d);
}

struct nodes {
	uint64_t blk[256];
	unsigned n;
};

static int note_node(void *arg, uint64_t blk)
{
	struct nodes *v = arg;

	if (v->n < 256)
		v->blk[v->n++] = blk;
	return 0;
}

/*
 * A leaf whose first key lies below its separator (K - 1 under K): a
 * lookup of K - 1 descends to the leaf before and reports it, and so do
 * the walks that step into that leaf from the one before (a convert
 * from the hole before it, a read of zeros over it), where they used
 * to take its records as they came.  Blocks b with b % 4 < 2 mapped
 * (unwritten), the rest holes, in trees of 4-record nodes.
 */
TEST(walks_report_a_leaf_key_below_its_separator)
{
	uint8_t node[512];
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	struct ref_inode *ip;
	struct nodes l = { .n = 0 };
	struct bt_tree t;
	char why[128];
	uint64_t ino;
	unsigned tried = 0;

	CHECK(fs);
	CHECK_OK(ref_create(fs, "f", &ino));
	CHECK_OK(inode_get(fs, ino, &ip));
	for (uint64_t b = 0; b < 64; b++) {
		struct ref_extent e = { b, 0, 1, REF_EXT_UNWRITTEN };
		uint64_t got;

		if (b % 4 >= 2)
			continue;
		CHECK_OK(alloc_data(fs, 0, 1, &e.startblk, &got));
		CHECK_OK(bmap_map(fs, ip, &e));
		CHECK_OK(tx_maybe_roll(fs));
	}
	ip->size = 64 * 512;
	CHECK_OK(inode_log(fs, ip));
	bmap_tree(fs, ip, &t);
	CHECK_OK(bt_check(&t, note_node, &l, NULL, why, sizeof(why)));
	CHECK_OK(ref_unmount(fs));
	for (unsigned i = 0; i < l.n; i++) {
		struct ref_extent e;
		uint64_t k;

		CHECK_OK(hw_read(d, l.blk[i] * 512, node, sizeof(node)));
		k = get64(node + 32 + XR_OFF);
		if (get16(node + 24) != 0 || k < 8 || k % 4)
			continue; /* a leaf, not the first, starting a pair */
		put64(node + 32 + XR_OFF, k - 1);
		blk_set_crc(node, 512);
		CHECK_OK(hw_write(d, l.blk[i] * 512, node, sizeof(node), 0));
		CHECK_OK(ref_mount(d, NULL, &fs));
		CHECK_OK(inode_get(fs, ino, &ip));
		CHECK_EQ(bmap_lookup(fs, ip, k - 1, &e), -EFSCORRUPTED);
		CHECK_MSG(bmap_convert(fs, ip, k - 2, 8, 0, true) == -EFSCORRUPTED,
			  "convert over the leaf at %llu", (unsigned long long)k);
		CHECK_OK(bmap_lookup_read(fs, ip, k - 2, k + 8, &e));
		CHECK_MSG(e.fileoff + e.len <= k - 1, "a read of zeros from %llu "
			  "reached %llu", (unsigned long long)(k - 2),
			  (unsigned long long)(e.fileoff + e.len));
		ref_abandon(fs);
		put64(node + 32 + XR_OFF, k);
		blk_set_crc(node, 512);
		CHECK_OK(hw_write(d, l.blk[i] * 512, node, sizeof(node), 0));
		tried++;
	}
	CHECK(tried >= 3);
	hw_close(d);
}

/*
 * Reading a file mapped a block a record costs a descent a run, not a
 * descent a block: after a remount (nothing cached), a read of 256
 * blocks in a row visits fewer B+tree nodes than there are blocks (a
 * descent a block, as before runs, was 256 times the tree's height), and
 * returns the bytes written.
 */
TEST(a_read_of_one_block_records_descends_once_a_run)
{
	static uint8_t buf[256 * 512], back[256 * 512];
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	uint64_t ino, v0, visits;
	unsigned levels;

	CHECK(fs);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + (i >> 9));
	CHECK(written_in_a_row(d, &fs, buf, 256, &ino, &levels) == 0);
	CHECK(levels >= 4);
	v0 = ref_counters(fs)->bt.node_visits;
	CHECK_EQ(ref_pread(fs, ino, back, sizeof(back), 0), (int64_t)sizeof(back));
	visits = ref_counters(fs)->bt.node_visits - v0;
	CHECK_MEM(back, buf, sizeof(buf));
	CHECK_MSG(visits < 256, "a read of 256 one-block records visited %llu "
		  "nodes", (unsigned long long)visits);
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

/*
 * Tree nodes keep out of the way of file data on a device of several
 * bitmap groups (512-byte blocks: 3,840 a group, four of them here): a
 * file written block by block in order lies in one run on the device, so
 * a read of it is one run.  (A tree's first node aimed at the middle of
 * the whole region, a group not yet initialised, which the allocator
 * passed over for the first free block: a node every two or three data
 * blocks.)
 */
TEST(nodes_keep_out_of_a_file_written_in_order)
{
	static uint8_t blk[512];
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	struct ref_inode *ip;
	struct ref_extent first, e, run;
	uint64_t ino;

	CHECK(fs);
	CHECK(fs->total - fs->data > 3 * fs->bpb);
	CHECK_OK(ref_create(fs, "f", &ino));
	for (uint64_t b = 0; b < 256; b++) {
		memset(blk, (int)b + 1, sizeof(blk));
		CHECK_EQ(ref_pwrite(fs, ino, blk, sizeof(blk), b * 512),
			 (int64_t)sizeof(blk));
	}
	CHECK_OK(ref_fsync(fs, ino));
	CHECK_OK(inode_get(fs, ino, &ip));
	CHECK(ip->root.levels >= 3);
	CHECK_OK(bmap_lookup(fs, ip, 0, &first));
	for (uint64_t b = 0; b < 256; b++) {
		CHECK_OK(bmap_lookup(fs, ip, b, &e));
		CHECK_MSG(e.state == 0 && e.len == 1 &&
			  e.startblk == first.startblk + b,
			  "block %llu at %llu, block 0 at %llu",
			  (unsigned long long)b, (unsigned long long)e.startblk,
			  (unsigned long long)first.startblk);
	}
	CHECK_OK(bmap_lookup_run(fs, ip, 0, 256, &run));
	CHECK_EQ(run.len, 256);
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

/*
 * The buffer cache's hash starts small and doubles as buffers come: a
 * read of 1,024 one-block records after a remount holds some 500
 * buffers (tree nodes, bitmaps, inode blocks), eight times the first
 * size, and every one is found (the bytes read back are the bytes
 * written).
 */
TEST(the_buffer_hash_grows_and_finds_every_node)
{
	static uint8_t buf[1024 * 512], back[1024 * 512];
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	uint64_t ino;
	unsigned levels;
	size_t first;

	CHECK(fs);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13 + (i >> 9));
	CHECK(written_in_a_row(d, &fs, buf, 1024, &ino, &levels) == 0);
	first = fs->hsize;
	CHECK_EQ(ref_pread(fs, ino, back, sizeof(back), 0), (int64_t)sizeof(back));
	CHECK_MEM(back, buf, sizeof(buf));
	CHECK_MSG(fs->hsize > first, "hash of %zu buckets for %zu buffers",
		  fs->hsize, fs->nbufs);
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

/*
 * A run stops, without an error, at a leaf it cannot read: the read gets
 * every block before that leaf's first record and its error at that block,
 * as a lookup a block gave them (a run that failed whole failed the read
 * at its first block).  The leaf is damaged on the device after an
 * unmount, so the remount reads it fresh.
 */
TEST(a_run_ends_at_a_damaged_leaf_and_the_read_before_it_stands)
{
	static uint8_t buf[64 * 512], back[64 * 512];
	uint8_t node[512];
	struct hw_dev *d;
	struct ref_fs *fs = mount_maxext1(&d);
	struct ref_inode *ip;
	struct nodes v = { .n = 0 };
	struct bt_tree t;
	uint64_t ino, leaf = 0, first = 0;
	char why[128];

	CHECK(fs);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 5 + (i >> 9));
	CHECK(map_in_a_row(fs, "f", 64, &ip) == 0);
	ino = ip->ino;
	CHECK_EQ(ref_pwrite(fs, ino, buf, sizeof(buf), 0), (int64_t)sizeof(buf));
	bmap_tree(fs, ip, &t);
	CHECK_OK(bt_check(&t, note_node, &v, NULL, why, sizeof(why)));
	CHECK_OK(ref_unmount(fs));
	/* a leaf whose records start in the middle of the file */
	for (unsigned i = 0; i < v.n && !leaf; i++) {
		CHECK_OK(hw_read(d, v.blk[i] * 512, node, sizeof(node)));
		if (get16(node + 24) == 0 && get64(node + 32 + XR_OFF) >= 16 &&
		    get64(node + 32 + XR_OFF) <= 48) {
			leaf = v.blk[i];
			first = get64(node + 32 + XR_OFF);
		}
	}
	CHECK_MSG(leaf, "no leaf starts between blocks 16 and 48");
	put32(node, get32(node) ^ 0x100);       /* its magic */
	CHECK_OK(hw_write(d, leaf * 512, node, sizeof(node), 0));

	CHECK_OK(ref_mount(d, NULL, &fs));
	CHECK_EQ(ref_pread(fs, ino, back, sizeof(back), 0),
		 (int64_t)(first * 512));
	CHECK_MEM(back, buf, first * 512);
	CHECK(ref_pread(fs, ino, back, 512, first * 512) < 0);
	ref_abandon(fs);
	hw_close(d);
}

/*
 * Overwriting a preallocated range converts it record by record, each
 * conversion in a transaction the log holds: 200 unwritten one-block
 * records written over at once with a 64-block log (joined into one run,
 * they made one transaction of 75 blocks, which the log refused, and the
 * filesystem could commit nothing after).  The bytes come back after a
 * remount and the audit is clean.
 */
TEST(an_overwrite_of_a_long_unwritten_range_fits_the_log)
{
	static uint8_t buf[200 * 4096], back[200 * 4096];
	struct ref_mkfs_opts o = { .blocksize = 4096, .inodes = 16,
				   .journal_blocks = 64, .max_extlen = 1,
				   .btree_maxrecs = 4 };
	struct hw_dev *d;
	struct ref_fs *fs = NULL;
	uint64_t ino;

	CHECK_OK(hw_open("mem:64m", &d, NULL, 0));
	CHECK_OK(ref_mkfs(d, &o));
	CHECK_OK(ref_mount(d, NULL, &fs));
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13 + (i >> 12));
	CHECK_OK(ref_create(fs, "f", &ino));
	CHECK_OK(ref_fallocate(fs, ino, 0, 0, sizeof(buf)));
	CHECK_EQ(ref_pwrite(fs, ino, buf, sizeof(buf), 0), (int64_t)sizeof(buf));
	CHECK_OK(ref_fsync(fs, ino));
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	CHECK_OK(ref_mount(d, NULL, &fs));
	CHECK_EQ(ref_pread(fs, ino, back, sizeof(back), 0), (int64_t)sizeof(back));
	CHECK_MEM(back, buf, sizeof(buf));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
