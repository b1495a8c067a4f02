/*
 * test_zoned_rt.c - the realtime device on zoned storage: data appended
 * at write pointers, overwrites out of place, allocations capped at the
 * append limit and zone capacity, reclaim under pressure, zone limits,
 * mount rebuilding zone state after a crash, and the audit.
 *
 * Expectations are independent of the engine: a byte array the test
 * keeps beside every file (what a reader must see), counts worked out by
 * hand from the geometry, and the emulated device itself, which returns
 * an error for any write off the write pointer, past a capacity, over an
 * append limit or over the open/active limits, so any zone rule the
 * engine broke would fail the operation.
 *
 * Geometry unless said otherwise: 4 KiB blocks, one-block rt extents, a
 * 16 MiB data device, a zoned realtime device of 32 KiB zones (8 blocks).
 */
#include "test_engine_util.h"

/* Every device block of the file's records. */
struct blocks { uint64_t v[1024]; int n; };
static int collect_blocks(void *arg, const struct ref_extent *e)
{
	struct blocks *b = arg;

	for (uint64_t i = 0; i < e->len && b->n < 1024; i++)
		b->v[b->n++] = e->startblk + i;
	return 0;
}

#define ZDEV(extra) "zoned:mem,size=1m,zone=32k," extra

/*
 * A mixed sequence on a realtime file with tiny zones and tiny append
 * limits: every read agrees with the shadow, the audit passes after
 * every step, overwrites went out of place, and a remount reads the same.
 */
TEST(zoned_rt_writes_overwrites_truncates_read_back_as_written)
{
	static const uint32_t rtx[] = { BS, 2 * BS };

	for (int k = 0; k < 2; k++) {
		struct efs z;
		struct shadow s = { .b = calloc(1, SHADOW_MAX) };

		CHECK_OK(e_new(&z, "mem:16m",
			       ZDEV("append_max=8k,max_open=1,max_active=1"),
			       rtx[k]));
		CHECK_OK(e_file(&z, "f", &s.ino));
		CHECK_OK(sh_write(z.fs, &s, 1, 0, 40000));
		CHECK_OK(audit(z.fs));
		CHECK(sh_matches(z.fs, &s));
		CHECK_OK(sh_write(z.fs, &s, 2, 5000, 3000));   /* inside a block */
		CHECK_OK(sh_write(z.fs, &s, 3, 12288, 8192));  /* whole blocks   */
		CHECK_OK(sh_write(z.fs, &s, 4, 39000, 20000)); /* across EOF     */
		CHECK(sh_matches(z.fs, &s));
		CHECK_OK(audit(z.fs));
		CHECK_OK(sh_truncate(z.fs, &s, 21000));        /* tail zeroed    */
		CHECK_OK(sh_write(z.fs, &s, 5, 30000, 100));   /* reads 0s between */
		CHECK(sh_matches(z.fs, &s));
		CHECK_OK(sh_punch(z.fs, &s, 2000, 9000));
		CHECK_OK(ref_fallocate(z.fs, s.ino, 0, 30100, 20000));
		s.size = 50100;
		CHECK_OK(sh_write(z.fs, &s, 6, 45000, 1000));  /* into unwritten */
		CHECK(sh_matches(z.fs, &s));
		CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
		CHECK(ctr(z.fs, "rt_overwrites_out_of_place") >= 4);
		CHECK(ctr(z.fs, "zone_appends") > 0);
		CHECK_OK(e_cycle(&z, &s));
		e_close(&z);
		free(s.b);
	}
}

/*
 * 128 KiB written at once in 8 KiB rt extents, with append_max=24k (3 rt
 * extents) into 64 KiB zones of capacity 44k (5 whole rt extents of 8):
 * allocations of 3 + 2 rt extents per zone, four zones, the last taking
 * one: 7 appends, exactly.  No block lies past a zone's capacity, and the
 * three zones the engine filled and left were finished (44k is not a
 * whole number of rt extents, so the device would not call them full).
 */
TEST(zoned_rt_allocations_stop_at_the_append_limit_and_zone_capacity)
{
	struct efs z;
	struct shadow s = { .b = calloc(1, SHADOW_MAX) };
	struct blocks b = { .n = 0 };

	CHECK_OK(e_new(&z, "mem:16m",
		       "zoned:mem,size=1m,zone=64k,cap=44k,append_max=24k",
		       2 * BS));
	CHECK_OK(e_file(&z, "f", &s.ino));
	hw_reset_counters(z.rtdev);
	ref_counters_reset(z.fs);
	CHECK_OK(sh_write(z.fs, &s, 1, 0, 131072));
	CHECK_EQ(ctr(z.fs, "zone_appends"), 7);
	CHECK_EQ(z.rtdev->ctr.zone_appends, 7);
	CHECK_EQ(z.rtdev->ctr.bytes_written, 131072);
	CHECK_EQ(z.rtdev->ctr.zone_finishes, 3);
	CHECK_OK(ref_bmap(z.fs, s.ino, collect_blocks, &b));
	CHECK_EQ(b.n, 32);
	for (int i = 0; i < b.n; i++)
		CHECK_MSG(b.v[i] % 16 < 10, "block %llu past its zone's capacity",
			  (unsigned long long)b.v[i]);
	CHECK(sh_matches(z.fs, &s));
	CHECK_OK(audit(z.fs));
	e_close(&z);
	free(s.b);
}

/* mkfs refuses zones that do not hold whole rt extents, or an rt extent
 * larger than the append limit. */
TEST(zoned_rt_mkfs_checks_the_zone_geometry)
{
	struct ref_mkfs_opts o = { .rtextsize = 3 * BS };
	struct hw_dev *dev, *rt;

	CHECK_OK(hw_open("mem:16m", &dev, NULL, 0));
	CHECK_OK(hw_open(ZDEV("append_max=8k"), &rt, NULL, 0));
	o.rtdev = rt;
	CHECK_EQ(ref_mkfs(dev, &o), -EINVAL); /* 32k zones, 12k rt extents */
	o.rtextsize = 4 * BS;
	CHECK_EQ(ref_mkfs(dev, &o), -EINVAL); /* 16k > append_max 8k */
	o.rtextsize = 2 * BS;
	CHECK_OK(ref_mkfs(dev, &o));
	hw_close(rt);
	hw_close(dev);
}

/*
 * A 96 KiB file on a 256 KiB device of eight 32 KiB zones, overwritten
 * in pieces over and over: far more is written than the device holds, so
 * zones must be reclaimed (live data moved, zone reset); the data stays
 * exactly as written and the audit passes throughout.
 */
TEST(zoned_rt_reclaim_under_pressure_keeps_data)
{
	struct efs z;
	struct shadow s = { .b = calloc(1, SHADOW_MAX) };
	uint64_t rng = 7;

	CHECK_OK(e_new(&z, "mem:16m",
		       "zoned:mem,size=256k,zone=32k,append_max=8k,max_open=1,"
		       "max_active=1", 0));
	CHECK_OK(e_file(&z, "f", &s.ino));
	CHECK_OK(sh_write(z.fs, &s, 1, 0, 98304));
	for (int i = 0; i < 300; i++) {
		uint64_t off, len;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		off = (rng >> 33) % 90000;
		len = 1 + (rng >> 20) % 12000;
		if (off + len > 98304)
			len = 98304 - off;
		CHECK_OK(sh_write(z.fs, &s, (unsigned)i + 2, off, len));
		if (i % 50 == 0)
			CHECK_OK(ref_fsync(z.fs, s.ino));
		if (i % 25 == 0)
			CHECK_MSG(audit(z.fs) == 0, "step %d: %s", i, msgs);
	}
	CHECK(sh_matches(z.fs, &s));
	CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
	CHECK(ctr(z.fs, "zone_resets") > 0);
	CHECK(ctr(z.fs, "reclaim_moves") > 0);
	CHECK(z.rtdev->ctr.zone_resets > 0);
	CHECK_OK(e_cycle(&z, &s));
	e_close(&z);
	free(s.b);
}

/*
 * When the live data fills what the device can hold, a write fails with
 * -ENOSPC instead of breaking a zone rule, and the filesystem stays
 * consistent and readable.
 */
TEST(zoned_rt_full_device_is_enospc_and_stays_consistent)
{
	struct efs z;
	struct shadow s = { .b = calloc(1, SHADOW_MAX) };
	uint8_t buf[8192];
	int64_t r = 0;

	CHECK_OK(e_new(&z, "mem:16m", "zoned:mem,size=128k,zone=32k", 0));
	CHECK_OK(e_file(&z, "f", &s.ino));
	memset(buf, 0x5a, sizeof(buf));
	for (uint64_t off = 0; off < SHADOW_MAX; off += sizeof(buf)) {
		r = ref_pwrite(z.fs, s.ino, buf, sizeof(buf), off);
		if (r != (int64_t)sizeof(buf))
			break;
		memset(s.b + off, 0x5a, sizeof(buf));
		s.size = off + sizeof(buf);
	}
	CHECK_EQ(r, -ENOSPC);
	/* three zones of four hold data; one stays in reserve */
	CHECK_EQ(s.size, 3 * 32768);
	CHECK(sh_matches(z.fs, &s));
	CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
	e_close(&z);
	free(s.b);
}

/*
 * A zoned data device: the filesystem spans its conventional zones only
 * (4 of 8 zones of 1 MiB here), so a file filling it runs out of space
 * there instead of writing in place into a sequential zone (-EIO); one
 * with no conventional zone cannot be formatted.
 */
TEST(zoned_data_device_spans_only_its_conventional_zones)
{
	struct efs z;
	struct ref_statfs st;
	struct hw_dev *d;
	struct ref_mkfs_opts o = { .journal_blocks = 64 };
	char err[256];
	uint8_t buf[BS];
	uint64_t ino;
	int64_t r = 0;

	CHECK_OK(e_new(&z, "zoned:mem,size=8m,zone=1m,conv=4", NULL, 0));
	CHECK_OK(ref_statfs(z.fs, &st));
	CHECK_EQ(st.total_blocks, (4u << 20) / BS);
	CHECK_OK(e_file(&z, "f", &ino));
	memset(buf, 0x5a, sizeof(buf));
	for (uint64_t off = 0; off < (8u << 20); off += sizeof(buf)) {
		r = ref_pwrite(z.fs, ino, buf, sizeof(buf), off);
		if (r != (int64_t)sizeof(buf))
			break;
	}
	CHECK_EQ(r, -ENOSPC);
	CHECK_OK(ref_fsync(z.fs, ino));
	CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	CHECK_MSG(fsck(&z) == 0, "%s", msgs);
	CHECK_OK(e_mount(&z));
	CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
	e_close(&z);

	CHECK_OK(hw_open("zoned:mem,size=8m,zone=1m", &d, err, sizeof(err)));
	CHECK(ref_mkfs(d, &o) != 0);
	hw_close(d);
}

/*
 * The audit is not blind to zones: resetting a zone that holds live data
 * behind the filesystem's back leaves allocated rt extents above its
 * write pointer, and fsck says so.
 */
TEST(zoned_rt_audit_catches_live_data_above_a_write_pointer)
{
	struct efs z;
	struct shadow s = { .b = calloc(1, SHADOW_MAX) };

	CHECK_OK(e_new(&z, "mem:16m", "zoned:mem,size=1m,zone=32k", 0));
	CHECK_OK(e_file(&z, "f", &s.ino));
	CHECK_OK(sh_write(z.fs, &s, 1, 0, 20000));
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	CHECK_OK(fsck(&z));
	CHECK_OK(hw_zone_mgmt(z.rtdev, HW_ZONE_RESET, 0));
	CHECK_EQ(fsck(&z), -EFSCORRUPTED);
	CHECK(strstr(msgs, "above the write pointer") != NULL);
	e_close(&z);
	free(s.b);
}

/*
 * An overwrite cut short by a power cut: mount rebuilds the zone state
 * from the device's write pointers and the rt bitmap (the appended but
 * uncommitted copies are dead), the audit passes, every block reads as
 * before or as after the overwrite (it is committed in whole rt extent
 * steps, never half a block), and writing resumes at the device's write
 * pointer (any mismatch would be a zone error).
 */
TEST(zoned_rt_mount_after_a_cut_rebuilds_zone_state_and_resumes)
{
	struct efs z;
	struct shadow s = { .b = calloc(1, SHADOW_MAX) };
	struct shadow after;
	uint8_t *got = malloc(50000);

	CHECK_OK(e_new(&z, "mem:16m", ZDEV("max_open=1,max_active=1"), 0));
	CHECK_OK(e_file(&z, "f", &s.ino));
	CHECK_OK(sh_write(z.fs, &s, 1, 0, 50000));
	CHECK_OK(ref_fsync(z.fs, s.ino));
	after = s;
	after.b = malloc(SHADOW_MAX);
	memcpy(after.b, s.b, SHADOW_MAX);
	CHECK_OK(sh_write(z.fs, &after, 2, 10000, 30000));
	ref_abandon(z.fs);
	z.fs = NULL;
	CHECK_MSG(fsck(&z) == 0, "%s", msgs);
	CHECK_OK(e_mount(&z));
	CHECK_EQ(ref_pread(z.fs, s.ino, got, 50000, 0), 50000);
	for (uint64_t b = 0; b < 50000; b += BS) {
		uint64_t n = 50000 - b < BS ? 50000 - b : BS;

		CHECK_MSG(!memcmp(got + b, s.b + b, n) ||
			  !memcmp(got + b, after.b + b, n),
			  "block at %llu is neither before nor after",
			  (unsigned long long)b);
	}
	memcpy(s.b, got, 50000);
	CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
	CHECK_OK(sh_write(z.fs, &s, 3, 20000, 30000));
	CHECK(sh_matches(z.fs, &s));
	CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
	e_close(&z);
	free(s.b);
	free(after.b);
	free(got);
}

#define CRASH_DEV   "faulty:crash:mem:4m"
#define CRASH_RTDEV "faulty:crash:zoned:mem,size=256k,zone=32k,append_max=8k," \
		    "max_open=1,max_active=1"

/*
 * The crash test (test_engine_util.h) on realtime files of a small zoned
 * device, which the sequence makes reclaim: cut at every write of the
 * data device and at every write of the realtime device, dropping every
 * write not yet durable, keeping them all, or keeping a seeded half and
 * tearing the rest in sectors, by turns.
 */
TEST(zoned_rt_cut_at_every_device_write_recovers_fsynced_data)
{
	static const struct hw_cut cuts[] = {
		{ .kind = HW_CUT_DROP_ALL },
		{ .kind = HW_CUT_KEEP_ALL },
		{ .kind = HW_CUT_RANDOM, .seed = 5, .tear = HW_TEAR_SEED },
	};
	uint64_t total = 0;

	for (int which = 0; which < 2; which++) {
		uint64_t n = cut_everywhere(CRASH_DEV, CRASH_RTDEV, which, cuts, 3);

		CHECK(n > 0);
		total += n;
	}
	CHECK(total > 100);
}

/*
 * One cut inside a zone reclaim: four zones of 8 blocks, three filled
 * and fsynced (a, b, c), one block of a punched; the next write finds
 * only the reserve zone empty and reclaims a's zone, moving its 7 live
 * blocks into the reserve.  Device `which` (0 data, 1 rt) fails from its
 * k-th write on, during that write and its fsync; the writes not yet
 * durable are dropped.  A cut must leave the reclaim's moves all
 * committed or none: some moved and the rest not would leave the
 * reserve zone partly written and the victim still live, and the 7th
 * block could then find no room (the mount's zoned_recover could not
 * finish the reclaim when the lost moves left dead blocks in the
 * reserve).  So after the mount an empty zone is there again, the audit
 * passes and what a, b and c held reads back.  0 when everything held;
 * *done when the fault never fired.
 */
static int reclaim_cut(int which, uint64_t k, bool *done)
{
	struct efs z;
	struct shadow s[4];
	struct hw_fault fault = { .ops = HW_FAULT_WRITE, .nth = k, .sticky = true };
	struct hw_cut drop = { .kind = HW_CUT_DROP_ALL };
	struct hw_zone zn[4];
	unsigned nr = 4, empty = 0;
	int rc = -1;

	for (int f = 0; f < 4; f++)
		s[f] = (struct shadow){ .b = calloc(1, SHADOW_MAX) };
	if (e_new(&z, "faulty:crash:mem:16m",
		  "faulty:crash:zoned:mem,size=128k,zone=32k", 0))
		goto out;
	for (int f = 0; f < 3; f++) {
		char name[2] = { (char)('a' + f), 0 };

		if (e_file(&z, name, &s[f].ino) ||
		    sh_write(z.fs, &s[f], 1 + f, 0, 32768))
			goto out;
	}
	if (sh_punch(z.fs, &s[0], 8192, 4096) || e_file(&z, "d", &s[3].ino) ||
	    ref_sync(z.fs) || ctr(z.fs, "zone_resets") != 0)
		goto out;
	if (hw_fault_arm(which ? z.rtdev : z.dev, &fault) < 0)
		goto out;
	*done = sh_write(z.fs, &s[3], 9, 0, 4096) == 0 &&
		ref_fsync(z.fs, s[3].ino) == 0 &&
		hw_fault_fired(which ? z.rtdev : z.dev) == 0;
	if (*done && ctr(z.fs, "reclaim_moves") != 7) {
		fprintf(stderr, "    the write moved %llu blocks, not 7\n",
			(unsigned long long)ctr(z.fs, "reclaim_moves"));
		goto out;
	}
	ref_abandon(z.fs);
	z.fs = NULL;
	hw_fault_disarm(z.dev, -1);
	hw_fault_disarm(z.rtdev, -1);
	if (hw_crash_cut(z.dev, &drop) || hw_crash_cut(z.rtdev, &drop) ||
	    e_mount(&z)) {
		fprintf(stderr, "    mount after the cut: %s", msgs);
		goto out;
	}
	if (hw_report_zones(z.rtdev, 0, zn, &nr) || nr != 4)
		goto out;
	for (unsigned i = 0; i < nr; i++)
		empty += zn[i].cond == HW_ZC_EMPTY;
	if (!empty) {
		fprintf(stderr, "    no empty zone after the mount (write "
			"pointers %llu %llu %llu %llu of 32k)\n",
			(unsigned long long)(zn[0].wp - zn[0].start),
			(unsigned long long)(zn[1].wp - zn[1].start),
			(unsigned long long)(zn[2].wp - zn[2].start),
			(unsigned long long)(zn[3].wp - zn[3].start));
		goto out;
	}
	if (audit(z.fs)) {
		fprintf(stderr, "    audit: %s", msgs);
		goto out;
	}
	rc = sh_matches(z.fs, &s[0]) && sh_matches(z.fs, &s[1]) &&
	     sh_matches(z.fs, &s[2]) ? 0 : -1;
out:
	e_close(&z);
	for (int f = 0; f < 4; f++)
		free(s[f].b);
	return rc;
}

TEST(zoned_rt_cut_inside_a_reclaim_keeps_all_its_moves_or_none)
{
	for (int which = 0; which < 2; which++) {
		bool done = false;
		uint64_t k;

		for (k = 1; !done && k < 1000; k++) {
			CHECK_MSG(reclaim_cut(which, k, &done) == 0,
				  "%s device, cut at write %llu",
				  which ? "rt" : "data", (unsigned long long)k);
		}
		CHECK(done);
		CHECK(k > 3);
	}
}

/*
 * A torn append leaves a zone's write pointer inside an rt extent.  The
 * mount pads that extent with zeroes and keeps the zone open: finishing
 * it instead threw away the rest of the zone, and when a crash tore the
 * moves of a reclaim, the zone they went to was the only room left
 * (zoned_recover then had nowhere to finish the reclaim, and every dead
 * rt extent stayed dead).  Zones of 8 blocks: a's 3 blocks fsynced, b's
 * append of 2 blocks torn after 3 sectors of 512 bytes.
 */
TEST(zoned_rt_mount_pads_a_zone_a_torn_append_left_inside_an_rt_extent)
{
	struct efs z;
	struct shadow a = { .b = calloc(1, SHADOW_MAX) };
	struct shadow b = { .b = calloc(1, SHADOW_MAX) };
	struct shadow c = { .b = calloc(1, SHADOW_MAX) };
	struct hw_cut drop = { .kind = HW_CUT_DROP_ALL };
	struct hw_cut tear = { .kind = HW_CUT_PREFIX, .n = 0,
			       .tear = HW_TEAR_UNITS, .units = 3 };
	struct blocks got = { .n = 0 };
	struct hw_zone zn;
	unsigned nr = 1;

	CHECK_OK(e_new(&z, "crash:mem:16m", "crash:zoned:mem,size=128k,zone=32k",
		       0));
	CHECK_OK(e_file(&z, "a", &a.ino));
	CHECK_OK(sh_write(z.fs, &a, 1, 0, 3 * BS));
	CHECK_OK(ref_fsync(z.fs, a.ino));
	CHECK_OK(e_file(&z, "b", &b.ino));
	CHECK_OK(sh_write(z.fs, &b, 2, 0, 2 * BS));
	ref_abandon(z.fs);
	z.fs = NULL;
	CHECK_OK(hw_crash_cut(z.dev, &drop));
	CHECK_OK(hw_crash_cut(z.rtdev, &tear));
	CHECK_OK(hw_report_zones(z.rtdev, 0, &zn, &nr));
	CHECK_EQ(zn.wp - zn.start, 3 * BS + 3 * 512);  /* torn as planned */
	CHECK_MSG(e_mount(&z) == 0, "%s", msgs);
	CHECK_OK(hw_report_zones(z.rtdev, 0, &zn, &nr));
	CHECK_MSG(zn.cond != HW_ZC_FULL && zn.wp - zn.start == 4 * BS,
		  "zone 0 after the mount: condition %d, write pointer %llu",
		  (int)zn.cond, (unsigned long long)(zn.wp - zn.start));
	/* the next allocation goes on in zone 0, past the padded extent */
	CHECK_OK(e_file(&z, "c", &c.ino));
	CHECK_OK(sh_write(z.fs, &c, 3, 0, BS));
	CHECK_OK(ref_fsync(z.fs, c.ino));
	CHECK_OK(ref_bmap(z.fs, c.ino, collect_blocks, &got));
	CHECK_EQ(got.n, 1);
	CHECK_EQ(got.v[0], 4);
	CHECK(sh_matches(z.fs, &a));
	CHECK(sh_matches(z.fs, &c));
	CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
	e_close(&z);
	free(a.b);
	free(b.b);
	free(c.b);
}

/*
 * Two zones partly written and holding live data at a mount: the mount
 * keeps open the one with the most room and finishes the other.  Only
 * a failed finish leaves two (the engine finishes a zone before it
 * opens the next): here an append to zone 0 fails and so does the
 * finish after it, so zone 0 keeps 2 of its 4 rt extents of 2 blocks,
 * and the next file goes to zone 1 (1 rt extent).  After the remount the
 * next allocation goes on in zone 1, at rt extent 5 (blocks 10-11).
 */
TEST(zoned_rt_mount_keeps_open_the_partly_written_zone_with_most_room)
{
	struct efs z;
	struct shadow a = { .b = calloc(1, SHADOW_MAX) };
	struct shadow c = { .b = calloc(1, SHADOW_MAX) };
	struct shadow d = { .b = calloc(1, SHADOW_MAX) };
	struct hw_fault append = { .ops = HW_FAULT_WRITE, .nth = 1 };
	struct hw_fault finish = { .ops = HW_FAULT_ZONE, .nth = 1 };
	struct blocks got = { .n = 0 };
	struct hw_zone zn[4];
	unsigned nr = 4;
	uint64_t b;
	uint8_t junk[2 * BS] = { 1 };

	CHECK_OK(e_new(&z, "mem:16m", "faulty:zoned:mem,size=128k,zone=32k",
		       2 * BS));
	CHECK_OK(e_file(&z, "a", &a.ino));
	CHECK_OK(sh_write(z.fs, &a, 1, 0, 4 * BS));
	CHECK_OK(ref_fsync(z.fs, a.ino));
	CHECK(hw_fault_arm(z.rtdev, &append) >= 0);
	CHECK(hw_fault_arm(z.rtdev, &finish) >= 0);
	CHECK_OK(ref_create(z.fs, "b", &b));
	CHECK_OK(ref_set_flags(z.fs, b, REF_FLAG_REALTIME, 0));
	CHECK(ref_pwrite(z.fs, b, junk, sizeof(junk), 0) < 0);
	CHECK_EQ(hw_fault_fired(z.rtdev), 2);
	CHECK_OK(hw_fault_disarm(z.rtdev, -1));
	CHECK_OK(e_file(&z, "c", &c.ino));
	CHECK_OK(sh_write(z.fs, &c, 3, 0, 2 * BS));
	CHECK_OK(ref_fsync(z.fs, c.ino));
	CHECK_OK(hw_report_zones(z.rtdev, 0, zn, &nr));
	CHECK_MSG(zn[0].cond != HW_ZC_FULL && zn[0].wp - zn[0].start == 4 * BS &&
		  zn[1].wp - zn[1].start == 2 * BS,
		  "write pointers %llu %llu before the remount",
		  (unsigned long long)(zn[0].wp - zn[0].start),
		  (unsigned long long)(zn[1].wp - zn[1].start));
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	CHECK_MSG(e_mount(&z) == 0, "%s", msgs);
	nr = 4;
	CHECK_OK(hw_report_zones(z.rtdev, 0, zn, &nr));
	CHECK_EQ(zn[0].cond, HW_ZC_FULL);
	CHECK(zn[1].cond != HW_ZC_FULL);
	CHECK_OK(e_file(&z, "d", &d.ino));
	CHECK_OK(sh_write(z.fs, &d, 4, 0, 2 * BS));
	CHECK_OK(ref_fsync(z.fs, d.ino));
	CHECK_OK(ref_bmap(z.fs, d.ino, collect_blocks, &got));
	CHECK_EQ(got.n, 2);
	CHECK_EQ(got.v[0], 10);
	CHECK(sh_matches(z.fs, &a));
	CHECK(sh_matches(z.fs, &c));
	CHECK(sh_matches(z.fs, &d));
	CHECK_MSG(audit(z.fs) == 0, "%s", msgs);
	e_close(&z);
	free(a.b);
	free(c.b);
	free(d.b);
}

/* The most reclaim work one mount of the engine did (crashes and
 * remounts start the counters over). */
struct reclaimed { uint64_t resets, moves; };
static void note_reclaim(struct ref_fs *fs, void *arg)
{
	struct reclaimed *r = arg;
	const struct ref_counters *c = ref_counters(fs);

	if (c->zone_resets > r->resets)
		r->resets = c->zone_resets;
	if (c->reclaim_moves > r->moves)
		r->moves = c->reclaim_moves;
}

/*
 * The checker's soak on a zoned realtime device with tiny zones and
 * open/active limits of one: engine and model agree through writes,
 * truncates, fallocates, fsyncs, remounts and crashes, and zones were
 * reclaimed with live data moved.
 */
TEST(zoned_rt_soak_through_the_checker_agrees_with_the_model)
{
	struct target_env env = {
		.dev = "mem:64m",
		.rtdev = "zoned:mem,size=1m,zone=64k,cap=48k,append_max=16k,"
			 "max_open=1,max_active=1",
		.mkfs = "maxrecs=4",
	};
	struct gen_cfg gc = { .seed = 11, .realtime = 1, .max_file = 128 * 1024 };
	struct reclaimed r = { 0, 0 };

	CHECK_EQ(soak(&env, &gc, "chattr=10", 10000, note_reclaim, &r), CHECK_OK);
	CHECK(r.resets > 0);
	CHECK(r.moves > 0);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
