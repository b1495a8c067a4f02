/*
 * test_exchange.c - exchange range against hand-worked expectations: the
 * mappings swap as they are (written, unwritten, holes), the rules refuse
 * what XFS refuses, shared blocks keep their owner counts, COW staging
 * over the ranges is cancelled, dirty and cached pages follow, realtime
 * files swap whole rt extents; a power cut at every write of a long
 * exchange leaves the files all swapped or not at all, the intent in the
 * superblock being what mount finishes; and the audit catches the
 * states a broken step would leave.
 */
#include "test.h"
#include "test_crash_util.h"
#include "test_extents.h"

#include "hw/hw.h"
#include "ref/ref.h"
#include "ref/ref_internal.h"

#define BS 4096u
#define NB 48u             /* blocks of each file in the power-cut test */

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

struct fsx { struct hw_dev *dev, *rtdev; struct ref_fs *fs; };

static int mk(struct fsx *x, uint32_t reflink, uint32_t rtextsize,
	      uint32_t pagecache)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .inodes = 16,
				   .journal_blocks = 64, .reflink = reflink,
				   .rtextsize = rtextsize };
	struct ref_mount_opts m = { .pagecache = pagecache };

	memset(x, 0, sizeof(*x));
	if (hw_open("mem:8m", &x->dev, NULL, 0) ||
	    (rtextsize && hw_open("mem:4m", &x->rtdev, NULL, 0)))
		return -1;
	o.rtdev = m.rtdev = x->rtdev;
	if (ref_mkfs(x->dev, &o))
		return -1;
	return ref_mount(x->dev, &m, &x->fs);
}

static int remount(struct fsx *x)
{
	struct ref_mount_opts m = { .rtdev = x->rtdev };

	if (ref_unmount(x->fs))
		return -1;
	return ref_mount(x->dev, &m, &x->fs);
}

/* The audit passes; unmount; fsck of the image passes too. */
static void finish(struct fsx *x)
{
	struct ref_mount_opts m = { .rtdev = x->rtdev, .msg = quiet };

	CHECK_OK(ref_audit(x->fs, quiet, NULL));
	CHECK_OK(ref_unmount(x->fs));
	CHECK_OK(ref_fsck_opts(x->dev, &m));
	hw_close(x->dev);
	if (x->rtdev)
		hw_close(x->rtdev);
}

static int same_list(const struct extlist *a, const struct extlist *b)
{
	return a->n == b->n && same_extents(a->e, b->e, a->n);
}

static void fill(uint8_t *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 13 + seed) | 1;
}

/* A file and what it must read as (kept apart from the engine). */
struct shadow { uint64_t ino, size; uint8_t b[64 * BS]; };

static int sh_write(struct ref_fs *fs, struct shadow *s, uint64_t off,
		    uint64_t len, uint8_t seed)
{
	fill(s->b + off, len, seed);
	if (off + len > s->size)
		s->size = off + len;
	return ref_pwrite(fs, s->ino, s->b + off, len, off) == (int64_t)len ? 0 : -1;
}

/* What an exchange must leave: the bytes swapped, sizes as they were. */
static void sh_swap(struct shadow *a, uint64_t aoff, struct shadow *b,
		    uint64_t boff, uint64_t len)
{
	static uint8_t tmp[64 * BS];

	memcpy(tmp, a->b + aoff, len);
	memmove(a->b + aoff, b->b + boff, len);
	memcpy(b->b + boff, tmp, len);
}

static int sh_same(struct ref_fs *fs, const struct shadow *s)
{
	static uint8_t out[64 * BS];
	struct ref_stat st;

	if (ref_stat(fs, s->ino, &st) || st.size != s->size)
		return 0;
	return ref_pread(fs, s->ino, out, s->size, 0) == (int64_t)s->size &&
	       !memcmp(out, s->b, s->size);
}

static uint64_t free_blocks(struct ref_fs *fs)
{
	struct ref_statfs st;

	return ref_statfs(fs, &st) ? 0 : st.free_blocks;
}

static struct shadow sa, sb; /* big: not on the stack */

static void two_files(struct ref_fs *fs)
{
	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	CHECK_OK(ref_create(fs, "a", &sa.ino));
	CHECK_OK(ref_create(fs, "b", &sb.ino));
}

/* Both files read as their shadows, and again after a remount; finish. */
static void finish_after_remount(struct fsx *x)
{
	CHECK(sh_same(x->fs, &sa));
	CHECK(sh_same(x->fs, &sb));
	CHECK_OK(remount(x));
	CHECK(sh_same(x->fs, &sa));
	CHECK(sh_same(x->fs, &sb));
	finish(x);
}

TEST(exchange_swaps_written_unwritten_and_holes_as_they_are)
{
	struct fsx x;
	struct extlist a0 = { .n = 0 }, b0 = { .n = 0 }, a1 = { .n = 0 },
		    b1 = { .n = 0 };
	uint64_t before;

	CHECK_OK(mk(&x, 0, 0, 0));
	two_files(x.fs);
	/* a: | A A A A | hole hole | unwritten x2 |   b: | B x8 | */
	CHECK_OK(sh_write(x.fs, &sa, 0, 4 * BS, 1));
	CHECK_OK(ref_fallocate(x.fs, sa.ino, 0, 6 * BS, 2 * BS));
	sa.size = 8 * BS;
	CHECK_OK(sh_write(x.fs, &sb, 0, 8 * BS, 2));
	CHECK_OK(ref_fallocate(x.fs, sb.ino, REF_FALLOC_KEEP_SIZE |
			       REF_FALLOC_PUNCH_HOLE, 2 * BS, BS));
	memset(sb.b + 2 * BS, 0, BS);
	CHECK_OK(ref_bmap(x.fs, sa.ino, collect_extent, &a0));
	CHECK_OK(ref_bmap(x.fs, sb.ino, collect_extent, &b0));
	CHECK_EQ(a0.n, 2);
	CHECK_EQ(b0.n, 2);
	before = free_blocks(x.fs);
	/* the whole files: each takes the other's record list as it was */
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 0, sb.ino, 0, 8 * BS));
	sh_swap(&sa, 0, &sb, 0, 8 * BS);
	CHECK_OK(ref_bmap(x.fs, sa.ino, collect_extent, &a1));
	CHECK_OK(ref_bmap(x.fs, sb.ino, collect_extent, &b1));
	CHECK(same_list(&a1, &b0));
	CHECK(same_list(&b1, &a0));
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	CHECK_EQ(free_blocks(x.fs), before);
	/* pieces of records: a's blocks 1..3 with b's 5..7, then back */
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, BS, sb.ino, 5 * BS, 3 * BS));
	sh_swap(&sa, BS, &sb, 5 * BS, 3 * BS);
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, BS, sb.ino, 5 * BS, 3 * BS));
	sh_swap(&sa, BS, &sb, 5 * BS, 3 * BS);
	a1.n = b1.n = 0;
	CHECK_OK(ref_bmap(x.fs, sa.ino, collect_extent, &a1));
	CHECK_OK(ref_bmap(x.fs, sb.ino, collect_extent, &b1));
	CHECK(same_list(&a1, &b0)); /* merged back into the same records */
	CHECK(same_list(&b1, &a0));
	/* inside one file, ranges apart */
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 0, sa.ino, 4 * BS, 3 * BS));
	sh_swap(&sa, 0, &sa, 4 * BS, 3 * BS);
	CHECK(sh_same(x.fs, &sa));
	CHECK_EQ(free_blocks(x.fs), before);
	CHECK_OK(remount(&x));
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	finish(&x);
}

TEST(exchange_refuses_what_xfs_refuses)
{
	struct fsx x;
	uint64_t a, b;

	CHECK_OK(mk(&x, 0, 0, 0));
	two_files(x.fs);
	a = sa.ino;
	b = sb.ino;
	CHECK_OK(sh_write(x.fs, &sa, 0, 4 * BS + 100, 3));
	CHECK_OK(sh_write(x.fs, &sb, 0, 6 * BS + 100, 4));
	CHECK_EQ(ref_exchange_range(x.fs, a, 512, b, 0, BS), -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, a, 0, b, 512, BS), -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, a, 0, b, 0, 5 * BS), -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, a, 8 * BS, b, 0, 0), -EINVAL);
	/* a partial block only when both ranges end at their EOF */
	CHECK_EQ(ref_exchange_range(x.fs, a, 0, b, 0, 100), -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, a, 4 * BS, b, 0, 100), -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, a, 0, a, 2 * BS, 3 * BS), -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, a, 0, a, 4 * BS, 100), -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, a, 0, b, UINT64_MAX & ~(uint64_t)4095,
				    BS), -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, a, 0, b, 0, 0), 0);
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	/* the EOF blocks swap whole, bytes past EOF zero in both */
	CHECK_OK(ref_exchange_range(x.fs, a, 4 * BS, b, 6 * BS, 100));
	sh_swap(&sa, 4 * BS, &sb, 6 * BS, 100);
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	CHECK_OK(ref_truncate(x.fs, a, 5 * BS));
	sa.size = 5 * BS;
	CHECK(sh_same(x.fs, &sa));
	finish(&x);
}

/*
 * Files mapped a block a record (max_extlen 1), a: 64 records, b: a
 * hole of 32 blocks then 32 records, and a filler file written until
 * the metadata room is at most `leave` blocks, or data finds none.
 */
static void fragmented(struct fsx *x, uint64_t leave)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .inodes = 16,
				   .journal_blocks = 64, .max_extlen = 1 };
	static const uint8_t blk[BS];
	uint64_t filler, off = 0;

	memset(x, 0, sizeof(*x));
	CHECK_OK(hw_open("mem:8m", &x->dev, NULL, 0));
	CHECK_OK(ref_mkfs(x->dev, &o));
	CHECK_OK(ref_mount(x->dev, &(struct ref_mount_opts){ 0 }, &x->fs));
	two_files(x->fs);
	CHECK_OK(sh_write(x->fs, &sa, 0, 64 * BS, 5));
	CHECK_OK(sh_write(x->fs, &sb, 32 * BS, 32 * BS, 6));
	CHECK_OK(ref_create(x->fs, "filler", &filler));
	/* (data keeps a reserve back for metadata: it may stop short) */
	while (alloc_meta_room(x->fs) > leave &&
	       ref_pwrite(x->fs, filler, blk, BS, off) == (int64_t)BS)
		off += BS;
}

/*
 * The old reservation, a split of every level for each record of both
 * ranges, refused this exchange with most of the device free.  Now the
 * trees' growth bounds it too: from plenty of room down to none, each
 * exchange swaps all or refuses with -ENOSPC having changed nothing, and
 * some that the old bound refused go through.
 */
TEST(exchange_of_files_mapped_a_block_a_record_reserves_what_the_trees_can_grow_by)
{
	unsigned passed_below_old = 0, refused = 0;

	for (uint64_t leave = 640;; leave -= 16) {
		struct ref_stat st1, st2;
		uint64_t before, room, old_need;
		struct fsx x;
		int err;

		fragmented(&x, leave);
		CHECK_OK(ref_stat(x.fs, sa.ino, &st1));
		CHECK_OK(ref_stat(x.fs, sb.ino, &st2));
		CHECK_EQ(st1.nextents, 64);
		CHECK_EQ(st2.nextents, 32);
		room = alloc_meta_room(x.fs);
		old_need = (64 + 32 + 4) * ((st1.map_levels > st2.map_levels ?
					     st1.map_levels : st2.map_levels) + 1);
		before = free_blocks(x.fs);
		err = ref_exchange_range(x.fs, sa.ino, 0, sb.ino, 0, 64 * BS);
		CHECK_MSG(err == 0 || err == -ENOSPC, "room %llu: %d",
			  (unsigned long long)room, err);
		if (err == 0) {
			sh_swap(&sa, 0, &sb, 0, 64 * BS);
			passed_below_old += room < old_need;
		} else {
			refused++;
			CHECK_EQ(free_blocks(x.fs), before);
		}
		/* swapped whole, or not at all; the trees audit clean */
		CHECK_MSG(sh_same(x.fs, &sa) && sh_same(x.fs, &sb),
			  "room %llu, exchange %d: the files read neither "
			  "as before nor swapped", (unsigned long long)room, err);
		finish(&x);
		if (leave < 16)
			break;
	}
	CHECK_MSG(passed_below_old > 0, "no exchange the old bound refused "
		  "went through");
	CHECK_MSG(refused > 0, "no exchange was refused, down to no room");
}

struct refs { uint64_t v[32][3]; int n; };
static int collect_refs(void *arg, uint64_t start, uint64_t len, uint32_t count)
{
	struct refs *r = arg;

	if (r->n < 32) {
		r->v[r->n][0] = start;
		r->v[r->n][1] = len;
		r->v[r->n++][2] = count;
	}
	return 0;
}

TEST(exchange_keeps_the_owner_counts_of_shared_blocks)
{
	struct fsx x;
	struct shadow *sc = calloc(1, sizeof(*sc));
	struct refs r0 = { .n = 0 }, r1 = { .n = 0 };

	CHECK(sc);
	CHECK_OK(mk(&x, 1, 0, 0));
	two_files(x.fs);
	CHECK_OK(ref_create(x.fs, "c", &sc->ino));
	CHECK_OK(sh_write(x.fs, &sa, 0, 6 * BS, 5));
	CHECK_OK(sh_write(x.fs, &sb, 0, 6 * BS, 6));
	CHECK_OK(ref_clone_range(x.fs, sc->ino, 0, sa.ino, BS, 4 * BS));
	memcpy(sc->b, sa.b + BS, 4 * BS);
	sc->size = 4 * BS;
	CHECK_OK(ref_refcount_walk(x.fs, collect_refs, &r0));
	CHECK_EQ(r0.n, 1);
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 0, sb.ino, 2 * BS, 4 * BS));
	sh_swap(&sa, 0, &sb, 2 * BS, 4 * BS);
	CHECK_OK(ref_refcount_walk(x.fs, collect_refs, &r1));
	CHECK_EQ(r1.n, r0.n);
	CHECK_MEM(r1.v, r0.v, sizeof(r0.v));
	/* b now maps blocks c shares: a write there copies on write */
	ref_counters_reset(x.fs);
	CHECK_OK(sh_write(x.fs, &sb, 3 * BS, BS, 7));
	CHECK(ref_counters(x.fs)->cow_blocks_staged > 0);
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	CHECK(sh_same(x.fs, sc));
	free(sc);
	finish(&x);
}

TEST(exchange_cancels_cow_staging_over_the_ranges)
{
	struct fsx x;
	struct extlist c = { .n = 0 };
	uint64_t before;

	CHECK_OK(mk(&x, 1, 0, 0));
	two_files(x.fs);
	CHECK_OK(sh_write(x.fs, &sa, 0, 8 * BS, 8));
	CHECK_OK(sh_write(x.fs, &sb, 0, 8 * BS, 9));
	CHECK_OK(ref_set_flags(x.fs, sa.ino, REF_FLAG_COW, 0));
	CHECK_OK(sh_write(x.fs, &sa, 0, BS, 10));
	CHECK_OK(ref_cow_bmap(x.fs, sa.ino, collect_extent, &c));
	CHECK_EQ(c.n, 1); /* blocks 1..7 preallocated */
	CHECK_EQ(c.e[0].len, 7);
	before = free_blocks(x.fs);
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 0, sb.ino, 0, 8 * BS));
	sh_swap(&sa, 0, &sb, 0, 8 * BS);
	c.n = 0;
	CHECK_OK(ref_cow_bmap(x.fs, sa.ino, collect_extent, &c));
	CHECK_EQ(c.n, 0);
	CHECK_EQ(free_blocks(x.fs), before + 7 + 1); /* + the staging root */
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	finish(&x);
}

TEST(exchange_writes_dirty_pages_and_drops_cached_ones)
{
	struct fsx x;
	uint8_t out[BS];

	CHECK_OK(mk(&x, 0, 0, 64));
	two_files(x.fs);
	CHECK_OK(sh_write(x.fs, &sa, 0, 4 * BS, 11));
	CHECK_OK(sh_write(x.fs, &sb, 0, 4 * BS, 12));
	CHECK_OK(ref_sync(x.fs));
	/* an overwrite of a written block only dirties its page */
	CHECK_OK(sh_write(x.fs, &sa, BS + 7, 100, 13));
	CHECK_EQ(ref_pread(x.fs, sb.ino, out, BS, 2 * BS), BS); /* cached */
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 0, sb.ino, 0, 4 * BS));
	sh_swap(&sa, 0, &sb, 0, 4 * BS);
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	CHECK_OK(ref_drop_caches(x.fs));
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	finish(&x);
}

TEST(exchange_of_realtime_files_swaps_whole_rt_extents)
{
	struct fsx x;
	uint64_t p;

	CHECK_OK(mk(&x, 0, 4 * BS, 0)); /* rt extents of 4 blocks */
	two_files(x.fs);
	CHECK_OK(ref_create(x.fs, "plain", &p));
	CHECK_OK(ref_set_flags(x.fs, sa.ino, REF_FLAG_REALTIME, 0));
	CHECK_OK(ref_set_flags(x.fs, sb.ino, REF_FLAG_REALTIME, 0));
	/* a: rt extent 0 half written (blocks 2, 3 unwritten), a hole, rt
	 * extent 2 preallocated; b: 10 blocks and a bit written */
	CHECK_OK(sh_write(x.fs, &sa, 0, 2 * BS, 14));
	CHECK_OK(ref_fallocate(x.fs, sa.ino, 0, 8 * BS, 4 * BS));
	sa.size = 12 * BS;
	CHECK_OK(sh_write(x.fs, &sb, 0, 10 * BS + 5, 15));
	CHECK_EQ(ref_pwrite(x.fs, p, sa.b, BS, 0), BS);
	CHECK_EQ(ref_exchange_range(x.fs, sa.ino, BS, sb.ino, BS, 4 * BS),
		 -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, sa.ino, 0, sb.ino, 0, BS), -EINVAL);
	CHECK_EQ(ref_exchange_range(x.fs, sa.ino, 0, p, 0, BS), -EINVAL);
	/* rt extent 0 of a (written and unwritten) <-> rt extent 1 of b */
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 0, sb.ino, 4 * BS, 4 * BS));
	sh_swap(&sa, 0, &sb, 4 * BS, 4 * BS);
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	CHECK_OK(ref_audit(x.fs, quiet, NULL));
	/* a hole and a preallocation <-> written rt extents */
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 4 * BS, sb.ino, 0, 8 * BS));
	sh_swap(&sa, 4 * BS, &sb, 0, 8 * BS);
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	CHECK_OK(ref_audit(x.fs, quiet, NULL));
	/* the EOF rt extents, ending at both EOFs */
	CHECK_OK(ref_truncate(x.fs, sa.ino, 10 * BS + 5));
	memset(sa.b + 10 * BS + 5, 0, 2 * BS - 5);
	sa.size = 10 * BS + 5;
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 8 * BS, sb.ino, 8 * BS,
				    2 * BS + 5));
	sh_swap(&sa, 8 * BS, &sb, 8 * BS, 2 * BS + 5);
	finish_after_remount(&x);
}

static int any_compressed(void *arg, const struct ref_extent *e)
{
	*(int *)arg |= !!(e->state & REF_EXT_COMPRESSED);
	return 0;
}

/*
 * On a compress=zstd filesystem: a, 32 blocks that compress, fsynced (so
 * held in compressed extents); b, 8 blocks written with seed.  *ready
 * says it is done; it stays 0 after a failed check, and in a build
 * without a compression library (x is then closed).
 */
static void compressed_pair(struct fsx *x, uint8_t seed, int *ready)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .inodes = 16 };
	struct ref_mount_opts m = { .compress = REF_COMPRESS_ZSTD };
	int comp = 0;

	*ready = 0;
	memset(x, 0, sizeof(*x));
	CHECK_OK(hw_open("mem:8m", &x->dev, NULL, 0));
	CHECK_OK(ref_mkfs(x->dev, &o));
	if (ref_mount(x->dev, &m, &x->fs) == -EOPNOTSUPP) {
		hw_close(x->dev);
		return;
	}
	CHECK(x->fs);
	two_files(x->fs);
	memset(sa.b, 'a', 32 * BS); /* compresses well */
	sa.size = 32 * BS;
	CHECK_EQ(ref_pwrite(x->fs, sa.ino, sa.b, 32 * BS, 0), 32 * BS);
	CHECK_OK(sh_write(x->fs, &sb, 0, 8 * BS, seed));
	CHECK_OK(ref_fsync(x->fs, sa.ino));
	CHECK_OK(ref_bmap(x->fs, sa.ino, any_compressed, &comp));
	CHECK(comp);
	*ready = 1;
}

TEST(exchange_expands_compressed_extents_it_would_cut)
{
	struct fsx x;
	int ready;

	compressed_pair(&x, 20, &ready);
	if (!ready)
		return; /* a failed check, or no compression library */
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 3 * BS, sb.ino, 2 * BS,
				    4 * BS));
	sh_swap(&sa, 3 * BS, &sb, 2 * BS, 4 * BS);
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	CHECK_OK(ref_audit(x.fs, quiet, NULL));
	CHECK_OK(ref_unmount(x.fs));
	CHECK_OK(ref_mount(x.dev, NULL, &x.fs));
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	finish(&x);
}

/*
 * The plain copy of a journaled file's compressed extent is written
 * through the journal; the exchange must send it home before its blocks
 * go to a file that writes in place, or the logged copy, written home
 * later, undoes that file's writes to them.
 */
TEST(exchange_sends_the_expanded_copy_of_a_journaled_file_home)
{
	struct fsx x;
	int ready;

	compressed_pair(&x, 21, &ready);
	if (!ready)
		return; /* a failed check, or no compression library */
	CHECK_OK(ref_set_flags(x.fs, sa.ino, REF_FLAG_JOURNAL_DATA, 0));
	CHECK_OK(ref_exchange_range(x.fs, sa.ino, 3 * BS, sb.ino, 2 * BS,
				    4 * BS));
	sh_swap(&sa, 3 * BS, &sb, 2 * BS, 4 * BS);
	/* b zeroes a byte of a block that came from a, in place */
	CHECK_OK(ref_fallocate(x.fs, sb.ino, REF_FALLOC_PUNCH_HOLE |
			       REF_FALLOC_KEEP_SIZE, 3 * BS, 1));
	sb.b[3 * BS] = 0;
	CHECK_OK(ref_sync(x.fs));
	CHECK_OK(ref_drop_caches(x.fs));
	finish_after_remount(&x);
}

/*
 * Two files of NB single-block records each (their blocks interleave on
 * the device), A and B, synced: the exchange of all of them takes many
 * transactions with maxrecs 4 and a 64-block log.
 */
static void fragmented_pair(struct ref_fs *fs)
{
	two_files(fs);
	for (uint32_t i = 0; i < NB; i++) {
		CHECK_OK(sh_write(fs, &sa, i * BS, BS, (uint8_t)(2 * i)));
		CHECK_OK(sh_write(fs, &sb, i * BS, BS, (uint8_t)(2 * i + 1)));
	}
	CHECK_OK(ref_sync(fs));
}

TEST(power_cut_at_every_write_of_an_exchange_swaps_all_or_nothing)
{
	struct rec_dev *r = rec_open("mem:4m");
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .inodes = 16,
				   .journal_blocks = 64 };
	static struct shadow a0, b0;
	struct ref_fs *fs = NULL;
	unsigned swapped = 0, unswapped = 0, finished_by_mount = 0;
	uint64_t rolls;
	size_t k0;

	CHECK(r);
	CHECK_OK(ref_mkfs(&r->dev, &o));
	CHECK_OK(ref_mount(&r->dev, NULL, &fs));
	fragmented_pair(fs);
	a0 = sa;
	b0 = sb;
	k0 = r->n;
	rolls = ref_counters(fs)->tx_rolls;
	CHECK_OK(ref_exchange_range(fs, sa.ino, 0, sb.ino, 0, NB * BS));
	CHECK(ref_counters(fs)->tx_rolls >= rolls + 2); /* several commits */
	CHECK_OK(ref_sync(fs));
	sh_swap(&sa, 0, &sb, 0, NB * BS);
	CHECK(sh_same(fs, &sa));
	CHECK(sh_same(fs, &sb));
	CHECK_OK(ref_unmount(fs));
	for (size_t k = k0; k <= r->n; k++) {
		struct hw_dev *img = rec_image_at(r, k, 0);
		struct ref_fs *m = NULL;
		uint64_t work;

		CHECK(img);
		CHECK_MSG(ref_fsck(img, quiet, NULL) == 0, "fsck before "
			  "recovery, cut after write %zu of %zu", k, r->n);
		CHECK_MSG(ref_mount(img, NULL, &m) == 0, "mount, cut %zu", k);
		work = ref_counters(m)->bt.rec_inserts;
		if (sh_same(m, &sa) && sh_same(m, &sb))
			swapped++;
		else
			CHECK_MSG(sh_same(m, &a0) && sh_same(m, &b0), "cut after "
				  "write %zu: neither swapped nor as before", k);
		if (!sh_same(m, &sa))
			unswapped++;
		finished_by_mount += work > 0;
		CHECK_MSG(ref_audit(m, quiet, NULL) == 0, "audit after "
			  "recovery, cut after write %zu", k);
		CHECK_OK(ref_unmount(m));
		CHECK_MSG(ref_fsck(img, quiet, NULL) == 0, "fsck, cut %zu", k);
		hw_close(img);
	}
	CHECK(swapped > 0 && unswapped > 0);
	CHECK(finished_by_mount > 0); /* the intent was what finished it */
	hw_close(&r->dev);
}

/* Rewrite the intent fields of an unmounted image's superblock. */
static void poke_intent(struct hw_dev *d, uint64_t ino1, uint64_t ino2,
			uint64_t fb1, uint64_t fb2, uint64_t left)
{
	uint8_t sbk[BS];

	CHECK_OK(hw_read(d, 0, sbk, BS));
	put64(sbk + SB_XCHG_INO1, ino1);
	put64(sbk + SB_XCHG_INO2, ino2);
	put64(sbk + SB_XCHG_FB1, fb1);
	put64(sbk + SB_XCHG_FB2, fb2);
	put64(sbk + SB_XCHG_LEFT, left);
	blk_set_crc(sbk, HDR_SECTOR);
	CHECK_OK(hw_write(d, 0, sbk, BS, 0));
}

TEST(mount_finishes_exactly_what_the_intent_says)
{
	struct fsx x;

	CHECK_OK(mk(&x, 0, 0, 0));
	two_files(x.fs);
	CHECK_OK(sh_write(x.fs, &sa, 0, 6 * BS, 16));
	CHECK_OK(sh_write(x.fs, &sb, 0, 6 * BS, 17));
	CHECK_OK(ref_unmount(x.fs));
	/* as if a cut came after 2 of 5 blocks from a:1 <-> b:0 */
	poke_intent(x.dev, sa.ino, sb.ino, 3, 2, 3);
	CHECK_OK(ref_mount(x.dev, NULL, &x.fs));
	sh_swap(&sa, 3 * BS, &sb, 2 * BS, 3 * BS);
	CHECK(sh_same(x.fs, &sa));
	CHECK(sh_same(x.fs, &sb));
	CHECK_OK(remount(&x)); /* ... and cleared it */
	CHECK(sh_same(x.fs, &sa));
	CHECK_OK(ref_unmount(x.fs));
	poke_intent(x.dev, 9, sb.ino, 0, 0, 1); /* inode 9 is no file */
	CHECK_EQ(ref_mount(x.dev, NULL, &x.fs), -EFSCORRUPTED);
	poke_intent(x.dev, sa.ino, sb.ino, 0, 0, 0); /* fields without work */
	CHECK_EQ(ref_mount(x.dev, NULL, &x.fs), -EFSCORRUPTED);
	hw_close(x.dev);
}

/*
 * Point b's first record at a's first record's blocks on the image: what
 * a step that mapped a piece into one file without unmapping it from the
 * other leaves (one extent in both files).
 */
static void poke_both_files(struct fsx *x)
{
	struct ref_inode *ia, *ib;
	uint8_t node[BS];
	uint64_t ablk, aroot, broot;

	CHECK_OK(inode_get(x->fs, sa.ino, &ia));
	CHECK_OK(inode_get(x->fs, sb.ino, &ib));
	CHECK_EQ(ia->root.levels, 1);
	CHECK_EQ(ib->root.levels, 1);
	aroot = ia->root.blk;
	broot = ib->root.blk;
	CHECK_OK(ref_unmount(x->fs));
	CHECK_OK(hw_read(x->dev, aroot * BS, node, BS));
	ablk = get64(node + BT_HDR_SIZE + XR_BLK);
	CHECK_OK(hw_read(x->dev, broot * BS, node, BS));
	put64(node + BT_HDR_SIZE + XR_BLK, ablk);
	blk_set_crc(node, BS);
	CHECK_OK(hw_write(x->dev, broot * BS, node, BS, 0));
}

TEST(audit_catches_an_extent_left_in_both_files)
{
	for (uint32_t reflink = 0; reflink < 2; reflink++) {
		struct fsx x;

		CHECK_OK(mk(&x, reflink, 0, 0));
		two_files(x.fs);
		CHECK_OK(sh_write(x.fs, &sa, 0, 2 * BS, 18));
		CHECK_OK(sh_write(x.fs, &sb, 0, 2 * BS, 19));
		CHECK_OK(ref_exchange_range(x.fs, sa.ino, 0, sb.ino, 0, 2 * BS));
		CHECK_OK(ref_sync(x.fs));
		CHECK_OK(ref_audit(x.fs, quiet, NULL));
		poke_both_files(&x);
		/* plain: a block owned twice; reflink: 2 owners, no record */
		CHECK_EQ(ref_fsck(x.dev, quiet, NULL), -EFSCORRUPTED);
		hw_close(x.dev);
	}
}

int main(int argc, char **argv) { return test_main(argc, argv); }
