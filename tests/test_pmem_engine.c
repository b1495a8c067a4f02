/*
 * test_pmem_engine.c - the engine on persistent memory: metadata goes
 * through the device's persist path (stores + flush/fence of the range)
 * where a block device would use FUA writes and cache flushes, and a
 * power cut at any write, with the unpersisted stores dropped, kept, or
 * torn in 8-byte words, loses nothing that was fsynced.
 *
 * The device is a pmem: file in a scratch directory in /dev/shm, else
 * /tmp (libpmem2 persists an ordinary file with msync; on tmpfs that
 * costs no disk flush); builds without libpmem2 (MSan) cannot open pmem:
 * at all and skip these tests, saying so.
 */
#include "test_engine_util.h"

#include <unistd.h>

/*
 * On pmem the journal persists: commits and checkpoints issue persists
 * and no FUA write at all reaches the device, and data fsynced before a
 * cut that drops every unpersisted store reads back after recovery.  On
 * a block device the same work uses FUA writes and no persist.
 */
TEST(pmem_metadata_goes_through_persist_not_fua)
{
	struct hw_cut cut = { .kind = HW_CUT_DROP_ALL };
	struct scratch t;
	struct efs z, b;
	struct shadow s = { .b = calloc(1, SHADOW_MAX) };
	struct shadow u = { .b = calloc(1, SHADOW_MAX) };

	if (!pmem_spec(&t, "crash:", "8m")) {
		free(s.b);
		free(u.b);
		return;
	}
	CHECK_OK(e_new(&z, t.spec, NULL, 0));
	hw_reset_counters(z.dev);
	ref_counters_reset(z.fs);
	CHECK_OK(e_file(&z, "f", &s.ino));
	CHECK_OK(sh_write(z.fs, &s, 1, 0, 40000));
	CHECK_OK(ref_fsync(z.fs, s.ino));
	CHECK(ctr(z.fs, "meta_persists") >= 2); /* log range, commit block */
	CHECK(z.dev->ctr.persists >= 2);
	CHECK_EQ(z.dev->ctr.fua_writes, 0);
	CHECK_OK(e_file(&z, "g", &u.ino));     /* never fsynced */
	CHECK_OK(sh_write(z.fs, &s, 2, 1000, 5000));
	ref_abandon(z.fs);
	z.fs = NULL;
	CHECK_OK(hw_crash_cut(z.dev, &cut));
	CHECK_MSG(fsck(&z) == 0, "%s", msgs);
	CHECK_OK(e_mount(&z));
	s.size = 40000;
	for (uint64_t i = 0; i < 40000; i++)
		s.b[i] = pat(1, i);
	CHECK(sh_matches(z.fs, &s));
	CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
	e_close(&z);
	scratch_done(&t);

	/* the block device twin: FUA and flushes, no persist */
	CHECK_OK(e_new(&b, "mem:8m", NULL, 0));
	hw_reset_counters(b.dev);
	ref_counters_reset(b.fs);
	CHECK_OK(e_file(&b, "f", &u.ino));
	CHECK_OK(sh_write(b.fs, &u, 1, 0, 40000));
	CHECK_OK(ref_fsync(b.fs, u.ino));
	CHECK_EQ(ctr(b.fs, "meta_persists"), 0);
	CHECK(b.dev->ctr.fua_writes >= 1);
	e_close(&b);
	free(s.b);
	free(u.b);
}

/*
 * The superblock and the journal header are rewritten in place under a
 * checksum over their first sector, which pmem may tear (8-byte stores):
 * on pmem a copy goes first into the sector after it, and mount takes it
 * when the header is damaged.  A block device keeps no copy (a sector is
 * written whole), so the same damage there is a corrupted image.
 */
static void damage(struct hw_dev *d, uint64_t blk, bool both)
{
	uint8_t junk[16];

	memset(junk, 0x5a, sizeof(junk));
	CHECK_OK(hw_write(d, blk * 4096 + 100, junk, sizeof(junk), 0));
	if (both)
		CHECK_OK(hw_write(d, blk * 4096 + 512 + 100, junk, sizeof(junk), 0));
	CHECK_OK(hw_flush(d));
}

/* On spec, each header damaged alone is taken from its copy; both
 * damaged, the image is corrupted. */
static void header_taken_from_its_copy(const char *spec)
{
	struct efs z;
	uint64_t ino;

	for (uint64_t blk = 0; blk < 2; blk++) {
		CHECK_OK(e_new(&z, spec, NULL, 0));
		CHECK_OK(e_file(&z, "f", &ino));
		CHECK_OK(ref_unmount(z.fs)); /* checkpoint: both headers written */
		z.fs = NULL;
		damage(z.dev, blk, false);
		CHECK_MSG(fsck(&z) == 0, "block %llu: %s", (unsigned long long)blk,
			  msgs);
		CHECK_OK(e_mount(&z));
		CHECK_OK(ref_lookup(z.fs, "f", &ino));
		CHECK_OK(ref_unmount(z.fs)); /* and writes a whole header again */
		z.fs = NULL;
		damage(z.dev, blk, true);    /* header and copy: nothing to take */
		CHECK_EQ(fsck(&z), -EFSCORRUPTED);
		e_close(&z);
	}
}

TEST(pmem_torn_header_is_taken_from_its_copy)
{
	struct scratch t;
	struct efs b;

	if (!pmem_spec(&t, "", "8m"))
		return;
	header_taken_from_its_copy(t.spec);
	scratch_done(&t);

	CHECK_OK(e_new(&b, "mem:8m", NULL, 0));
	CHECK_OK(ref_unmount(b.fs));
	b.fs = NULL;
	damage(b.dev, 0, false);
	CHECK_EQ(fsck(&b), -EFSCORRUPTED);
	e_close(&b);
}

/*
 * A block device whose cuts tear sectors (crash[atomic=8]:mem, as the
 * crash fuzz target's pmem presets run without libpmem2) gets the same
 * copy: a header damaged in its checksummed sector is taken from it, and
 * both damaged is a corrupted image.  Without the copy, a cut there left
 * the superblock or the journal header torn (EUCLEAN at the next mount).
 */
TEST(a_block_device_that_tears_sectors_keeps_a_header_copy)
{
	header_taken_from_its_copy("crash[atomic=8]:mem:8m");
}

/*
 * The crash test (test_engine_util.h) on pmem: cut at every write of the
 * data device, dropping every store not persisted, keeping them all, or
 * keeping a seeded half and tearing the rest in 8-byte words, by turns.
 */
TEST(pmem_cut_at_every_write_recovers_fsynced_data)
{
	static const struct hw_cut cuts[] = {
		{ .kind = HW_CUT_DROP_ALL },
		{ .kind = HW_CUT_KEEP_ALL },
		{ .kind = HW_CUT_RANDOM, .seed = 3, .tear = HW_TEAR_SEED },
	};
	struct scratch t;

	if (!pmem_spec(&t, "faulty:crash:", "2m"))
		return;
	CHECK(cut_everywhere(t.spec, NULL, 0, cuts, 3) > 50);
	scratch_done(&t);
}

/* The checker's soak with the engine on a pmem: device: engine and model
 * agree through writes, truncates, fsyncs, remounts and crashes. */
TEST(pmem_soak_through_the_checker_agrees_with_the_model)
{
	struct scratch t;
	struct target_env env = { .mkfs = "maxrecs=4" };
	struct gen_cfg gc = { .seed = 9 };

	if (!pmem_spec(&t, "", "32m"))
		return;
	env.dev = t.spec;
	CHECK_EQ(soak(&env, &gc, NULL, 10000, NULL, NULL), CHECK_OK);
	scratch_done(&t);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
