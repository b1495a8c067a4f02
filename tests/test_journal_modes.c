/*
 * test_journal_modes.c - journal data modes (ordered, journal, writeback),
 * the journal-data flag, revoke records, and seed path (d): forgetting
 * freed blocks, naive twin against optimized.
 *
 * Expectations are independent of the engine: block counts from the
 * geometry by hand (60 GiB / 4 KiB = 15,728,640), contents from patterns
 * only the test writes, crash images built write by write by a recording
 * device (tests/test_crash_util.h) or cut by the crash layer (hw.h).
 */
#include "test.h"

#include <stdlib.h>

#include "hw/hw.h"
#include "ref/ref_internal.h"
#include "tests/test_crash_util.h"

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

#define BS 4096u

/* The three ways to run the forget path. */
struct twin { const char *name; uint32_t naive, fallback; };
static const struct twin twins[] = {
	{ "naive", 1u << REF_PATH_FORGET, 0 },
	{ "optimized", 0, 0 },
	{ "fallback", 0, 1u << REF_PATH_FORGET },
};
#define NTWINS (sizeof(twins) / sizeof(twins[0]))

/* Byte i of file data tagged tag: top bit set (no metadata block starts
 * like that: every magic is "FSO?"), tag in bits 4-6, never 0. */
static uint8_t dbyte(unsigned tag, uint64_t i)
{
	return (uint8_t)(0x80u | (tag & 7u) << 4 | ((i / BS + i / 7) & 15u));
}

static uint8_t *pattern(unsigned tag, uint64_t off, size_t len)
{
	uint8_t *p = malloc(len);

	for (size_t i = 0; i < len; i++)
		p[i] = dbyte(tag, off + i);
	return p;
}

static int put(struct ref_fs *fs, uint64_t ino, unsigned tag, uint64_t off,
	       size_t len)
{
	uint8_t *p = pattern(tag, off, len);
	int64_t r = ref_pwrite(fs, ino, p, len, off);

	free(p);
	return r == (int64_t)len ? 0 : (r < 0 ? (int)r : -EIO);
}

/*
 * Every block of the file reads either all zeroes (not written, or its
 * mapping lost at the cut) or exactly tag's pattern: never another
 * file's bytes, never a metadata block's.  Returns the first bad block
 * (UINT64_MAX: none); *zero counts all-zero blocks.
 */
static uint64_t bad_block(struct ref_fs *fs, uint64_t ino, unsigned tag,
			  uint64_t *zero)
{
	struct ref_stat st;
	uint8_t buf[BS];

	*zero = 0;
	if (ref_stat(fs, ino, &st))
		return 0;
	for (uint64_t off = 0; off < st.size; off += BS) {
		size_t n = st.size - off < BS ? (size_t)(st.size - off) : BS;
		bool all0 = true, same = true;

		if (ref_pread(fs, ino, buf, n, off) != (int64_t)n)
			return off / BS;
		for (size_t i = 0; i < n; i++) {
			all0 &= buf[i] == 0;
			same &= buf[i] == dbyte(tag, off + i);
		}
		if (all0)
			++*zero;
		else if (!same)
			return off / BS;
	}
	return UINT64_MAX;
}

static struct ref_fs *mount_with(struct hw_dev *d, uint32_t naive,
				 uint32_t fallback, uint32_t mode)
{
	struct ref_mount_opts mo = { .naive = naive, .fallback = fallback,
				     .data_mode = mode, .msg = quiet };
	struct ref_fs *fs = NULL;

	return ref_mount(d, &mo, &fs) ? NULL : fs;
}

/* ---- the seed's arithmetic ---- */

static int unlink_60g(const struct twin *tw, struct ref_counters *c)
{
	struct hw_dev *d = NULL;
	struct ref_fs *fs = NULL;
	uint64_t ino;
	int err = hw_open("null:64g", &d, NULL, 0);

	if (!err)
		err = ref_mkfs(d, NULL);
	if (!err)
		err = (fs = mount_with(d, tw->naive, tw->fallback, 0)) ? 0 : -EIO;
	if (!err)
		err = ref_create(fs, "big", &ino);
	if (!err)
		err = ref_fallocate(fs, ino, 0, 0, 60ull << 30);
	if (!err)
		err = ref_sync(fs);
	if (!err) {
		ref_counters_reset(fs);
		err = ref_unlink(fs, "big");
	}
	if (!err)
		err = ref_sync(fs);
	if (!err)
		*c = *ref_counters(fs);
	if (fs && ref_unmount(fs) && !err)
		err = -EIO;
	if (d)
		hw_close(d);
	return err;
}

TEST(forget_unlinking_a_60g_fallocated_file_looks_up_every_block_naive_none_optimized)
{
	const uint64_t blocks = (60ull << 30) / BS;
	struct ref_counters n, o, f;

	CHECK_EQ(blocks, 15728640);
	CHECK_OK(unlink_60g(&twins[0], &n));
	CHECK_OK(unlink_60g(&twins[1], &o));
	CHECK_OK(unlink_60g(&twins[2], &f));
	/* Both free the same blocks: the data and the B+tree nodes. */
	CHECK_EQ(n.blocks_freed, blocks + n.bt.node_frees);
	CHECK_EQ(o.blocks_freed, n.blocks_freed);
	CHECK_EQ(o.bt.node_frees, n.bt.node_frees);
	CHECK(o.bt.node_frees > 0);
	/* Naive: one lookup per freed block; optimized: metadata only. */
	CHECK_EQ(n.forget_lookups, blocks + n.bt.node_frees);
	CHECK_EQ(o.forget_lookups, o.bt.node_frees);
	CHECK_EQ(n.forget_lookups - o.forget_lookups, 15728640);
	CHECK_EQ(n.bcache_lookups - o.bcache_lookups, 15728640);
	/* The fallback takes the naive path, lookups and all. */
	CHECK_EQ(f.forget_lookups, n.forget_lookups);
	/* Same buffers dropped, same revokes: ordered data has none. */
	CHECK_EQ(n.forgets, o.forgets);
	CHECK_EQ(n.revokes, o.revokes);
	CHECK_EQ(f.revokes, o.revokes);
}

/* ---- the data= option ---- */

TEST(data_mode_option_parses_and_mount_rejects_an_unknown_mode)
{
	struct ref_mount_opts o = { 0 };
	struct hw_dev *d;
	struct ref_fs *fs = NULL;
	char err[200] = "";

	CHECK_EQ(o.data_mode, REF_DATA_ORDERED);
	CHECK_OK(ref_parse_mount_opts("data=journal,naive=forget", &o, err,
				      sizeof(err)));
	CHECK_EQ(o.data_mode, REF_DATA_JOURNAL);
	CHECK_EQ(o.naive, 1u << REF_PATH_FORGET);
	CHECK_OK(ref_parse_mount_opts("data=writeback", &o, err, sizeof(err)));
	CHECK_EQ(o.data_mode, REF_DATA_WRITEBACK);
	CHECK_OK(ref_parse_mount_opts("data=ordered", &o, err, sizeof(err)));
	CHECK_EQ(o.data_mode, REF_DATA_ORDERED);
	CHECK_EQ(ref_parse_mount_opts("data=fast", &o, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "data") && strstr(err, "fast"));
	CHECK(!strcmp(ref_data_mode_name(REF_DATA_WRITEBACK), "writeback"));

	CHECK_OK(hw_open("mem:4m", &d, NULL, 0));
	CHECK_OK(ref_mkfs(d, NULL));
	o = (struct ref_mount_opts){ .data_mode = REF_DATA_MODES, .msg = quiet };
	CHECK_EQ(ref_mount(d, &o, &fs), -EINVAL);
	hw_close(d);
}

/* ---- data=journal ---- */

static uint64_t first_devblk(struct ref_fs *fs, uint64_t ino)
{
	struct ref_extent e;
	struct ref_inode *ip;

	if (inode_get(fs, ino, &ip) || bmap_lookup(fs, ip, 0, &e) ||
	    e.state != 0)
		return 0;
	return e.startblk;
}

TEST(journal_mode_logs_file_data_and_recovery_writes_it_home)
{
	struct hw_dev *d;
	struct ref_fs *fs;
	uint64_t ino, blk;
	uint8_t *want = pattern(1, 0, 3 * BS), *got = malloc(3 * BS);

	CHECK_OK(hw_open("mem:8m", &d, NULL, 0));
	CHECK_OK(ref_mkfs(d, &(struct ref_mkfs_opts){ .journal_blocks = 256 }));
	fs = mount_with(d, 0, 0, REF_DATA_JOURNAL);
	CHECK(fs);
	CHECK_OK(ref_create(fs, "j", &ino));
	CHECK_OK(put(fs, ino, 1, 0, 3 * BS));
	CHECK_OK(ref_fsync(fs, ino));
	CHECK_EQ(ref_counters(fs)->data_blocks_logged, 3);
	blk = first_devblk(fs, ino);
	CHECK(blk);
	/* Committed to the log, not yet home: the device still reads 0. */
	CHECK_OK(hw_read(d, blk * BS, got, 3 * BS));
	for (size_t i = 0; i < 3 * BS; i++)
		CHECK_MSG(got[i] == 0, "byte %zu home before the checkpoint", i);
	CHECK_EQ(ref_pread(fs, ino, got, 3 * BS, 0), 3 * BS);
	CHECK_MEM(got, want, 3 * BS);
	ref_abandon(fs);                     /* the power cut */
	/* fsck replays in memory only: data images too, nothing written */
	CHECK_OK(ref_fsck(d, quiet, NULL));
	CHECK_OK(hw_read(d, blk * BS, got, BS));
	CHECK(got[0] == 0 && got[BS - 1] == 0);

	fs = mount_with(d, 0, 0, REF_DATA_ORDERED);
	CHECK(fs);
	CHECK(ref_counters(fs)->recovered_txns > 0);
	CHECK_OK(ref_lookup(fs, "j", &ino));
	CHECK_EQ(ref_pread(fs, ino, got, 3 * BS, 0), 3 * BS);
	CHECK_MEM(got, want, 3 * BS);
	CHECK_OK(hw_read(d, blk * BS, got, 3 * BS));
	CHECK_MEM(got, want, 3 * BS);        /* replayed and written home */
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
	free(want);
	free(got);
}

TEST(journal_data_flag_flushes_the_journal_and_survives_remount)
{
	struct hw_dev *d;
	struct ref_fs *fs;
	struct ref_stat st;
	uint64_t ino, ckpt;

	CHECK_OK(hw_open("mem:4m", &d, NULL, 0));
	CHECK_OK(ref_mkfs(d, NULL));
	fs = mount_with(d, 0, 0, 0);
	CHECK(fs);
	CHECK_OK(ref_create(fs, "f", &ino));
	CHECK_OK(put(fs, ino, 2, 0, 2 * BS));
	ckpt = ref_counters(fs)->checkpoints;
	CHECK_OK(ref_set_flags(fs, ino, REF_FLAG_JOURNAL_DATA, 0));
	CHECK_EQ(ref_counters(fs)->checkpoints, ckpt + 1);
	CHECK_EQ(ref_set_flags(fs, ino, REF_FLAG_REALTIME, 0), -EINVAL);
	CHECK_EQ(ref_set_flags(fs, ino, 1u << 7, 0), -EOPNOTSUPP);
	CHECK_OK(put(fs, ino, 2, 2 * BS, BS));
	CHECK(fs->nraw > 0);                 /* its data goes through the cache */
	CHECK_OK(ref_unmount(fs));
	fs = mount_with(d, 0, 0, 0);
	CHECK(fs);
	CHECK_OK(ref_stat(fs, ino, &st));
	CHECK(st.flags & REF_FLAG_JOURNAL_DATA);
	CHECK_OK(ref_set_flags(fs, ino, 0, REF_FLAG_JOURNAL_DATA));
	CHECK_EQ(fs->nraw, 0);               /* data buffers left the cache */
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

/* ---- revokes: a cut at every write ---- */

/*
 * The scenario, for one twin: file "old" gets blocks the log holds copies
 * of (B+tree nodes, or journaled data with jdata), it is unlinked (its
 * blocks freed, revoked where logged), and "new" (ordered data) is
 * written over the region the freed blocks were in, so it reuses them.
 * Tree nodes sit in the middle of the data region: new then starts
 * before the unlink, so its own root is placed before old's nodes are
 * free, and its data runs from the bottom up over them.  Journaled data
 * sits at the bottom: new starts after the unlink and lands on it.
 * Returns the recording device with every write, or NULL.
 */
struct scenario {
	bool jdata;        /* old journals its data (else: its tree nodes) */
	bool toggle;       /* clear old's journal-data flag before unlink  */
	uint64_t reused;   /* a freed block new must now hold             */
	uint64_t revokes, lookups;
	size_t start;      /* writes before the first mount                */
};

static struct rec_dev *run_scenario(const struct twin *tw, struct scenario *sc)
{
	struct ref_mkfs_opts mo = { .btree_maxrecs = 4, .journal_blocks = 128,
				    .inodes = 16 };
	struct rec_dev *r = rec_open("mem:2m");
	struct ref_fs *fs;
	struct ref_statfs sf;
	struct ref_extent e;
	struct ref_inode *ip;
	uint64_t old, nw, first, nblk;
	int ok = 1;

	if (!r || ref_mkfs(&r->dev, &mo))
		return NULL;
	sc->start = r->n;
	fs = mount_with(&r->dev, tw->naive, tw->fallback, 0);
	ok = fs && !ref_statfs(fs, &sf) && !ref_create(fs, "old", &old);
	if (ok && sc->jdata)
		ok = !ref_set_flags(fs, old, REF_FLAG_JOURNAL_DATA, 0);
	/* Scattered blocks: with 4 records a node, a tree of many nodes. */
	for (uint64_t i = 0; ok && i < 24; i++)
		ok = !put(fs, old, 1, 2 * i * BS, BS);
	ok = ok && !ref_fsync(fs, old);
	if (ok && sc->toggle)
		ok = !ref_set_flags(fs, old, 0, REF_FLAG_JOURNAL_DATA);
	/* Where the freed blocks lie: old's first data block, or (nodes sit
	 * in the middle of the data region) the root. */
	ok = ok && !inode_get(fs, old, &ip) && !bmap_lookup(fs, ip, 0, &e);
	sc->reused = sc->jdata ? e.startblk : ip->root.blk;
	first = sf.total_blocks - sf.data_blocks;
	if (ok && !sc->jdata)
		ok = !ref_create(fs, "new", &nw) && !put(fs, nw, 2, 0, BS);
	ref_counters_reset(fs);
	ok = ok && !ref_unlink(fs, "old") && !ref_sync(fs);
	sc->revokes = ok ? ref_counters(fs)->revokes : 0;
	sc->lookups = ok ? ref_counters(fs)->forget_lookups : 0;
	ok = ok && ref_counters(fs)->checkpoints == 0;
	/* new, ordered, written from the data region's start past them */
	nblk = sc->reused - first + 8;
	if (ok && sc->jdata)
		ok = !ref_create(fs, "new", &nw);
	for (uint64_t b = sc->jdata ? 0 : 1; ok && b < nblk; b += 64)
		ok = !put(fs, nw, 2, b * BS, (size_t)(b + 64 <= nblk ? 64 : nblk - b) * BS);
	ok = ok && !ref_sync(fs);
	if (ok && !inode_get(fs, nw, &ip)) {
		/* the scenario happened: new holds a block old freed */
		bool found = false;

		for (uint64_t b = 0; b < nblk && !found; b++)
			found = !bmap_lookup(fs, ip, b, &e) && e.state == 0 &&
				e.startblk + (b - e.fileoff) == sc->reused;
		ok = found;
	}
	if (fs && ref_unmount(fs))
		ok = 0;
	if (!ok) {
		hw_close(&r->dev);
		return NULL;
	}
	return r;
}

/* Mount every cut image: clean audit, and new never reads old's bytes. */
static void cut_everywhere(const struct twin *tw, struct scenario *sc)
{
	struct rec_dev *r = run_scenario(tw, sc);

	CHECK_MSG(r, "%s: the scenario did not run as planned", tw->name);
	if (!r)
		return;
	for (size_t k = sc->start; k <= r->n; k++) {
		for (int t = 0; t < 2; t++) {
			struct hw_dev *d = rec_image_at(r, k, t ? 512 : 0);
			struct ref_fs *m = mount_with(d, tw->naive, tw->fallback, 0);
			uint64_t ino, zero, bad = UINT64_MAX;

			CHECK_MSG(m, "%s: cut %zu%s: mount failed", tw->name, k,
				  t ? " (torn)" : "");
			if (!m) {
				hw_close(d);
				continue;
			}
			CHECK_MSG(ref_audit(m, quiet, NULL) == 0,
				  "%s: cut %zu: audit failed", tw->name, k);
			if (!ref_lookup(m, "new", &ino))
				bad = bad_block(m, ino, 2, &zero);
			CHECK_MSG(bad == UINT64_MAX, "%s: cut %zu%s: new's block %llu "
				  "holds stale bytes (an old logged copy replayed)",
				  tw->name, k, t ? " (torn)" : "",
				  (unsigned long long)bad);
			CHECK_OK(ref_unmount(m));
			hw_close(d);
		}
	}
	hw_close(&r->dev);
}

TEST(revoke_keeps_a_freed_tree_node_reused_as_data_from_replay)
{
	for (size_t i = 0; i < NTWINS; i++) {
		struct scenario sc = { .jdata = false };

		cut_everywhere(&twins[i], &sc);
		CHECK_MSG(sc.revokes > 0, "%s: no revoke for logged nodes",
			  twins[i].name);
	}
}

TEST(revoke_keeps_freed_journaled_data_reused_by_an_ordered_file_from_replay)
{
	struct scenario sc[NTWINS];

	for (size_t i = 0; i < NTWINS; i++) {
		sc[i] = (struct scenario){ .jdata = true };
		cut_everywhere(&twins[i], &sc[i]);
	}
	/* 24 logged data blocks and the logged nodes: the same revokes and
	 * lookups whichever twin (the file journals its data). */
	CHECK(sc[1].revokes >= 24);
	CHECK_EQ(sc[0].revokes, sc[1].revokes);
	CHECK_EQ(sc[2].revokes, sc[1].revokes);
	CHECK_EQ(sc[0].lookups, sc[1].lookups);
}

TEST(clearing_the_journal_data_flag_between_write_and_unlink_loses_no_revoke)
{
	struct scenario sc[NTWINS];

	for (size_t i = 0; i < NTWINS; i++) {
		sc[i] = (struct scenario){ .jdata = true, .toggle = true };
		cut_everywhere(&twins[i], &sc[i]);
	}
	/* The flush at the flag change emptied the log: nothing to revoke
	 * for data, and the optimized twin looks up nodes only. */
	CHECK_EQ(sc[0].revokes, sc[1].revokes);
	CHECK(sc[0].lookups >= sc[1].lookups + 24);
}

/* ---- writeback ---- */

/*
 * Write scattered blocks until a commit happens that no checkpoint
 * followed (each commit of a writeback mount that is not an fsync leaves
 * the data before it unflushed), then cut: only durable writes survive.
 * Returns how many mapped, written blocks read as zeroes after recovery
 * (-1 on failure).  With fsync, fsync before the cut.
 */
static int64_t cut_after_lazy_commit(uint32_t mode, bool fsync)
{
	struct ref_mkfs_opts mo = { .btree_maxrecs = 4, .journal_blocks = 64 };
	struct hw_dev *d;
	struct ref_fs *fs;
	uint64_t ino, zero = 0, i, commits, ckpts;
	int64_t res = -1;

	if (hw_open("crash:mem:8m", &d, NULL, 0))
		return -1;
	if (ref_mkfs(d, &mo) || !(fs = mount_with(d, 0, 0, mode)) ||
	    ref_create(fs, "w", &ino) || ref_fsync(fs, ino))
		goto out;
	for (i = 0; i < 400; i++) {
		commits = ref_counters(fs)->tx_commits;
		ckpts = ref_counters(fs)->checkpoints;
		if (put(fs, ino, 3, 2 * i * BS, BS))
			goto out;
		if (i > 40 && ref_counters(fs)->tx_commits > commits &&
		    ref_counters(fs)->checkpoints == ckpts)
			break;
	}
	if (i == 400 || (fsync && ref_fsync(fs, ino)))
		goto out;
	ref_abandon(fs);
	if (hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_DROP_ALL }) ||
	    !(fs = mount_with(d, 0, 0, mode)))
		goto out;
	if (ref_audit(fs, quiet, NULL) == 0 &&
	    bad_block(fs, ino, 3, &zero) == UINT64_MAX) {
		/* the holes between the written blocks read zero too */
		struct ref_stat st;

		if (!ref_stat(fs, ino, &st))
			res = (int64_t)zero - (int64_t)(st.size / BS / 2);
	}
	ref_unmount(fs);
out:
	hw_close(d);
	return res;
}

TEST(writeback_commits_do_not_wait_for_data_but_fsync_does)
{
	/* ordered: a committed mapping never reads zeroes */
	CHECK_EQ(cut_after_lazy_commit(REF_DATA_ORDERED, false), 0);
	/* writeback: some committed blocks lost their data at the cut */
	CHECK(cut_after_lazy_commit(REF_DATA_WRITEBACK, false) > 0);
	/* fsync makes the data durable in every mode */
	CHECK_EQ(cut_after_lazy_commit(REF_DATA_WRITEBACK, true), 0);
	CHECK_EQ(cut_after_lazy_commit(REF_DATA_JOURNAL, true), 0);
	CHECK_EQ(cut_after_lazy_commit(REF_DATA_ORDERED, true), 0);
}

/* ---- the twins agree ---- */

/* A mixed run; the image after unmount and the counters. */
static int mixed_run(const struct twin *tw, uint32_t mode, uint8_t *img,
		     size_t len, struct ref_counters *c)
{
	struct ref_mkfs_opts mo = { .btree_maxrecs = 4, .journal_blocks = 512,
				    .inodes = 16 };
	struct hw_dev *d;
	struct ref_fs *fs;
	uint64_t a, b, x;
	int err = hw_open("mem:4m", &d, NULL, 0);

	if (!err)
		err = ref_mkfs(d, &mo);
	if (!err)
		err = (fs = mount_with(d, tw->naive, tw->fallback, mode)) ? 0 : -EIO;
	if (err)
		goto out;
	err = ref_create(fs, "a", &a) || ref_create(fs, "b", &b) ||
	      ref_create(fs, "x", &x) ||
	      ref_set_flags(fs, b, REF_FLAG_JOURNAL_DATA, 0);
	for (uint64_t i = 0; !err && i < 30; i++)
		err = put(fs, a, 1, 3 * i * BS, 2 * BS) ||
		      put(fs, b, 2, 2 * i * BS + 100, 700) ||
		      put(fs, x, 3, i * BS, BS);
	err = err || ref_fsync(fs, a) ||
	      ref_fallocate(fs, a, REF_FALLOC_PUNCH_HOLE | REF_FALLOC_KEEP_SIZE,
			    5 * BS, 20 * BS) ||
	      ref_fallocate(fs, b, REF_FALLOC_COLLAPSE_RANGE, 4 * BS, 8 * BS) ||
	      ref_truncate(fs, x, 7 * BS + 5) || ref_truncate(fs, b, 9 * BS) ||
	      ref_unlink(fs, "a") || ref_sync(fs) ||
	      put(fs, x, 3, 0, 40 * BS) || ref_unlink(fs, "b");
	if (!err)
		*c = *ref_counters(fs);
	if (ref_unmount(fs) && !err)
		err = -EIO;
	if (!err)
		err = hw_read(d, 0, img, len);
out:
	hw_close(d);
	return err ? -EIO : 0;
}

TEST(forget_twins_leave_identical_images_and_revokes)
{
	const size_t len = 4u << 20;
	uint32_t modes[] = { REF_DATA_ORDERED, REF_DATA_JOURNAL,
			     REF_DATA_WRITEBACK };

	for (size_t m = 0; m < 3; m++) {
		uint8_t *img[NTWINS];
		struct ref_counters c[NTWINS];

		for (size_t i = 0; i < NTWINS; i++) {
			img[i] = malloc(len);
			CHECK_MSG(mixed_run(&twins[i], modes[m], img[i], len,
					    &c[i]) == 0, "%s, data=%s: the run "
				  "failed", twins[i].name,
				  ref_data_mode_name(modes[m]));
		}
		for (size_t i = 1; i < NTWINS; i++) {
			CHECK_MSG(!memcmp(img[0], img[i], len), "data=%s: %s and "
				  "%s images differ", ref_data_mode_name(modes[m]),
				  twins[0].name, twins[i].name);
			CHECK_EQ(c[i].revokes, c[0].revokes);
			CHECK_EQ(c[i].forgets, c[0].forgets);
			CHECK_EQ(c[i].blocks_freed, c[0].blocks_freed);
		}
		CHECK_MSG(c[0].revokes > 0, "data=%s: no revoke",
			  ref_data_mode_name(modes[m]));
		CHECK_EQ(c[2].forget_lookups, c[0].forget_lookups);
		/* optimized skips exactly the ordered file's data blocks;
		 * under data=journal every file journals: no skip */
		if (modes[m] == REF_DATA_JOURNAL)
			CHECK_EQ(c[1].forget_lookups, c[0].forget_lookups);
		else
			CHECK(c[1].forget_lookups < c[0].forget_lookups);
		for (size_t i = 0; i < NTWINS; i++)
			free(img[i]);
	}
}

int main(int argc, char **argv) { return test_main(argc, argv); }
