/*
 * test_crash_group.c - power domains (hw_crash_join): a data device and
 * a realtime device lose power together, and plans on the zone model,
 * where a zone reset or finish issued after the failure must be undone.
 *
 * Every test writes one byte per 512-byte sector, tagged by the write,
 * and compares what a cut leaves with the bytes its durable prefix
 * must hold, written out by hand:
 *
 *   a (data)   A1 ---flush---  A2 ----------- A3     flush (void)
 *   b (rt)          B1 ----------- flush! B2
 *   points         1                2 = fail_at: the power fails here
 *   after the cut: a holds A1, b holds B1; A2, A3, B2 are gone
 */
#include "hw/hw.h"
#include "tests/test.h"
#include "tests/test_hw_util.h"

/* Sector s of d holds tag (one byte; the rest of the sector is zero). */
static int put(struct hw_dev *d, unsigned s, uint8_t tag, unsigned flags)
{
	uint8_t sec[512] = { tag };

	return hw_write(d, (uint64_t)s * 512, sec, sizeof(sec), flags);
}

/* The tag in sector s of d, or 0xff if it cannot be read. */
static uint8_t at(struct hw_dev *d, unsigned s)
{
	uint8_t sec[512];

	return hw_read(d, (uint64_t)s * 512, sec, sizeof(sec)) ? 0xff : sec[0];
}

/* Two joined crash:mem devices, their base durable. */
static void open_pair(struct hw_dev **a, struct hw_dev **b)
{
	OPEN("crash:mem:64k", *a);
	OPEN("crash:mem:64k", *b);
	CHECK_OK(hw_crash_join(*a, *b));
}

TEST(crash_group_plan_on_one_device_fails_the_power_on_both)
{
	struct hw_crash_plan p = { .fail_at = 2 };
	struct hw_crash_info ia, ib;
	struct hw_dev *a, *b, *plain;
	uint64_t lost = 99;

	open_pair(&a, &b);
	CHECK_EQ(hw_crash_power_off(a, &lost), 0);
	CHECK_EQ(lost, 0);
	OPEN("mem:64k", plain);
	CHECK_EQ(hw_crash_power_off(plain, &lost), -EINVAL);
	hw_close(plain);
	CHECK_OK(hw_crash_set_plan(a, &p));
	CHECK_OK(put(a, 0, 0xa1, 0));
	CHECK_OK(hw_flush(a));                  /* point 1: A1 durable */
	CHECK_OK(put(b, 0, 0xb1, 0));
	CHECK_OK(put(a, 1, 0xa2, 0));
	CHECK_OK(hw_flush(b));                  /* point 2: B1, then dark */
	CHECK_OK(hw_crash_info(a, &ia));
	CHECK_OK(hw_crash_info(b, &ib));
	CHECK(ia.power_off && ib.power_off);
	CHECK_EQ(ia.plan_points, 2);
	CHECK_EQ(ia.devices, 2);
	CHECK_EQ(hw_crash_power_off(a, &lost), 1);
	CHECK_EQ(lost, 0);
	CHECK_OK(put(b, 1, 0xb2, HW_FUA));      /* lost, FUA or not */
	CHECK_OK(put(a, 2, 0xa3, 0));
	CHECK_OK(hw_flush(a));                  /* does nothing */
	/* the quick question says what the records' count says */
	CHECK_OK(hw_crash_info(b, &ib));
	CHECK_EQ(hw_crash_power_off(b, &lost), 1);
	CHECK_EQ(lost, ib.lost);
	CHECK_EQ(lost, 3);
	CHECK_EQ(hw_crash_power_off(a, NULL), 1);
	CHECK_EQ(hw_crash_set_plan(b, NULL), -EBUSY);
	/* the device still answers until the cut */
	CHECK_EQ(at(b, 1), 0xb2);
	CHECK_OK(hw_crash_cut(b, NULL));        /* one cut, both devices */
	CHECK_EQ(at(a, 0), 0xa1);
	CHECK_EQ(at(a, 1), 0);
	CHECK_EQ(at(a, 2), 0);
	CHECK_EQ(at(b, 0), 0xb1);
	CHECK_EQ(at(b, 1), 0);
	CHECK_OK(hw_crash_info(a, &ia));
	CHECK(!ia.power_off && ia.lost == 0 && ia.cuts == 1);
	CHECK_EQ(hw_crash_power_off(a, &lost), 0);
	CHECK_EQ(lost, 0);
	CHECK_OK(hw_crash_info(b, &ib));
	CHECK_EQ(ib.cuts, 1);
	hw_close(a);
	hw_close(b);
}

/*
 * Pending writes are numbered across the group in issue order, so a
 * prefix or a mask chooses among both devices' writes as one sequence.
 */
TEST(crash_group_cut_counts_pending_writes_in_issue_order)
{
	static const uint8_t mask[1] = { 0x5 };    /* writes 0 and 2 */
	struct hw_cut prefix = { .kind = HW_CUT_PREFIX, .n = 3 };
	struct hw_cut pick = { .kind = HW_CUT_MASK, .mask = mask,
			       .mask_bits = 4 };
	struct hw_dev *a, *b;

	for (int k = 0; k < 2; k++) {
		open_pair(&a, &b);
		CHECK_OK(put(a, 0, 1, 0));      /* pending write 0 */
		CHECK_OK(put(b, 0, 2, 0));      /* 1 */
		CHECK_OK(put(b, 1, 3, 0));      /* 2 */
		CHECK_OK(put(a, 1, 4, 0));      /* 3 */
		CHECK_EQ(hw_crash_pending(a), 2);
		CHECK_OK(hw_crash_cut(a, k == 0 ? &prefix : &pick));
		CHECK_EQ(at(a, 0), 1);
		CHECK_EQ(at(b, 0), k == 0 ? 2 : 0);
		CHECK_EQ(at(b, 1), 3);
		CHECK_EQ(at(a, 1), 0);
		hw_close(a);
		hw_close(b);
	}
	/* a prefix longer than the group's pending writes is refused */
	open_pair(&a, &b);
	CHECK_OK(put(b, 0, 2, 0));
	prefix.n = 2;
	CHECK_EQ(hw_crash_cut(a, &prefix), -EINVAL);
	hw_close(a);
	hw_close(b);
}

/*
 * Relative coins: the same writes after a different history on fresh
 * devices cut alike, so a log replays to the same cut.
 */
TEST(crash_group_random_cut_repeats_on_fresh_devices)
{
	unsigned first = 0, seen = 0;

	for (uint64_t seed = 1; seed <= 16; seed++) {
		struct hw_cut cut = { .kind = HW_CUT_RANDOM, .seed = seed,
				      .relative = true };
		unsigned img[2] = { 0, 0 };

		for (int run = 0; run < 2; run++) {
			struct hw_dev *a, *b;

			open_pair(&a, &b);
			for (int h = 0; h < run * 3; h++) {    /* history */
				CHECK_OK(put(b, 9, 7, 0));
				CHECK_OK(put(a, 9, 7, HW_FUA));
				CHECK_OK(hw_flush(b));
			}
			for (unsigned s = 0; s < 4; s++)
				CHECK_OK(put(s % 2 ? b : a, s, (uint8_t)(s + 1), 0));
			CHECK_OK(hw_crash_cut(b, &cut));
			for (unsigned s = 0; s < 4; s++)
				img[run] |= (at(s % 2 ? b : a, s) == s + 1) << s;
			hw_close(a);
			hw_close(b);
		}
		CHECK_EQ(img[0], img[1]);
		first |= img[0];
		seen |= 1u << img[0];
	}
	CHECK_EQ(first, 0xf);      /* every write kept by some seed */
	CHECK(__builtin_popcount(seen) >= 4);   /* and the seeds differ */
}

TEST(crash_group_join_needs_quiet_devices_and_a_close_leaves_it)
{
	struct hw_crash_plan p = { .fail_at = 1 };
	struct hw_crash_info ci;
	struct hw_dev *a, *b, *m;

	OPEN("crash:mem:64k", a);
	OPEN("crash:mem:64k", b);
	OPEN("mem:64k", m);
	CHECK_EQ(hw_crash_join(a, m), -EINVAL);    /* no crash layer */
	CHECK_OK(put(b, 0, 1, 0));
	CHECK_EQ(hw_crash_join(a, b), -EBUSY);     /* b has a pending write */
	CHECK_OK(hw_flush(b));
	CHECK_OK(hw_crash_set_plan(a, &p));
	CHECK_EQ(hw_crash_join(a, b), -EBUSY);     /* a plan is set */
	CHECK_OK(hw_crash_set_plan(a, NULL));
	CHECK_OK(hw_crash_join(a, b));
	CHECK_OK(hw_crash_join(b, a));             /* already one */
	hw_close(b);
	CHECK_OK(hw_crash_info(a, &ci));
	CHECK_EQ(ci.devices, 1);
	CHECK_OK(hw_crash_set_plan(a, &p));
	CHECK_OK(put(a, 0, 1, 0));
	CHECK_OK(hw_flush(a));
	CHECK_OK(hw_crash_info(a, &ci));
	CHECK(ci.power_off);
	hw_close(a);
	hw_close(m);
}

/* ---- settled domains ------------------------------------------------ */

/*
 * Settled through one device, the whole domain forgets its pending
 * writes (as a keep-all cut would keep them) and records nothing more:
 * no pending write, no point, no bytes held; only a keep-all cut is
 * taken, and unsettled it records and drops again.
 *
 *   a   A1 (pending)  settle  A2  flush        unsettle  A3  cut: drop all
 *   b   B1 (pending)          B2                          B3
 *   after: A1 A2 B1 B2 stay, A3 and B3 are gone
 */
TEST(crash_settled_domain_records_nothing_and_takes_only_keep_all)
{
	static const struct hw_cut keep_all = { .kind = HW_CUT_KEEP_ALL };
	static const struct hw_cut drop_all = { .kind = HW_CUT_DROP_ALL };
	struct hw_crash_plan p = { .fail_at = 3 };
	struct hw_crash_info ci;
	struct hw_dev *a, *b, *c;

	open_pair(&a, &b);
	CHECK_OK(put(a, 0, 0xa1, 0));
	CHECK_OK(put(b, 0, 0xb1, 0));
	CHECK_EQ(hw_crash_pending(b), 1);
	CHECK_OK(hw_crash_settle(a, true));
	CHECK_EQ(hw_crash_pending(a), 0);
	CHECK_EQ(hw_crash_pending(b), 0);
	CHECK_OK(hw_crash_info(b, &ci));
	CHECK(ci.settled);
	CHECK_OK(put(a, 1, 0xa2, 0));
	CHECK_OK(put(b, 1, 0xb2, HW_FUA));
	CHECK_OK(hw_zero_out(a, 4096, 512, 0));
	CHECK_OK(hw_flush(a));
	CHECK_OK(hw_crash_info(a, &ci));
	CHECK_EQ(ci.pending, 0);
	CHECK_EQ(ci.held_bytes, 0);
	CHECK_EQ(ci.durable_points, 0);
	CHECK_EQ(hw_crash_cut(a, NULL), -EBUSY);
	CHECK_EQ(hw_crash_cut(b, &drop_all), -EBUSY);
	CHECK_EQ(hw_crash_set_plan(a, &p), -EBUSY);
	CHECK_OK(hw_crash_set_plan(a, NULL));
	CHECK_OK(hw_crash_cut(b, &keep_all));
	CHECK_EQ(at(a, 0), 0xa1);
	CHECK_EQ(at(a, 1), 0xa2);
	CHECK_EQ(at(b, 0), 0xb1);
	CHECK_EQ(at(b, 1), 0xb2);
	/* a settled domain joins nothing */
	OPEN("crash:mem:64k", c);
	CHECK_EQ(hw_crash_join(a, c), -EBUSY);
	hw_close(c);

	CHECK_OK(hw_crash_settle(b, false));
	CHECK_OK(hw_crash_info(a, &ci));
	CHECK(!ci.settled);
	CHECK_OK(put(a, 2, 0xa3, 0));
	CHECK_OK(put(b, 2, 0xb3, 0));
	CHECK_EQ(hw_crash_pending(a), 1);
	CHECK_OK(hw_crash_cut(a, NULL));
	CHECK_EQ(at(a, 2), 0);
	CHECK_EQ(at(b, 2), 0);
	CHECK_EQ(at(a, 1), 0xa2);
	CHECK_EQ(at(b, 1), 0xb2);
	hw_close(a);
	hw_close(b);
}

/* A plan set, or the power off under it: no settling until it is cut. */
TEST(crash_settle_waits_for_a_plan_to_end)
{
	struct hw_crash_plan p = { .fail_at = 1 };
	struct hw_dev *d;

	OPEN("crash:mem:64k", d);
	CHECK_EQ(hw_crash_settle(d, true), 0);
	CHECK_OK(hw_crash_settle(d, false));
	CHECK_OK(hw_crash_set_plan(d, &p));
	CHECK_EQ(hw_crash_settle(d, true), -EBUSY);
	CHECK_OK(put(d, 0, 1, 0));
	CHECK_OK(hw_flush(d));                     /* the power fails */
	CHECK_EQ(hw_crash_settle(d, true), -EBUSY);
	CHECK_OK(put(d, 1, 2, 0));                 /* lost */
	CHECK_OK(hw_crash_cut(d, NULL));
	CHECK_OK(hw_crash_settle(d, true));
	CHECK_EQ(at(d, 0), 1);
	CHECK_EQ(at(d, 1), 0);
	hw_close(d);
	OPEN("mem:64k", d);
	CHECK_EQ(hw_crash_settle(d, true), -EINVAL);
	hw_close(d);
}

/* ---- plans on the zone model ----------------------------------------- */

#define ZSPEC "crash:zoned:mem,size=128k,zone=16k,cap=12k,conv=1,append_max=4k"

static int append(struct hw_dev *d, uint64_t zone, unsigned n, uint8_t tag,
		  unsigned flags)
{
	uint8_t buf[4096];
	uint64_t where;

	memset(buf, tag, sizeof(buf));
	return hw_zone_append(d, zone, buf, (size_t)n * 512, flags, &where);
}

/*
 * After the failure the engine resets and refills a zone and finishes
 * another: none of it reached the media, so the cut puts back the
 * reset zone's bytes and write pointer and un-finishes the other.
 *
 *   zone 1   |1111|                 durable, then reset + |99| (lost)
 *   zone 2   |22|33|                22 durable at the FUA append (point
 *                                   1, the failure), 33 lost, finish lost
 *   zone 3   |44|                   pending before the failure, dropped
 */
TEST(crash_plan_on_zones_undoes_a_lost_reset_and_finish)
{
	struct hw_crash_plan p = { .fail_at = 1 };
	const uint64_t z = 16 * KiB;
	struct hw_dev *d, *b;

	OPEN(ZSPEC, d);
	OPEN("crash:mem:64k", b);
	CHECK_OK(hw_crash_join(d, b));
	CHECK_OK(append(d, 1, 8, 0x11, 0));
	CHECK_OK(hw_flush(d));
	CHECK_OK(hw_crash_set_plan(b, &p));
	CHECK_OK(append(d, 3, 2, 0x44, 0));
	CHECK_OK(append(d, 2, 2, 0x22, HW_FUA));  /* point 1: then dark */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, 1));
	CHECK_EQ(zone_at(d, 1).wp, z);            /* the model did reset */
	CHECK_OK(append(d, 1, 2, 0x99, 0));
	CHECK_OK(append(d, 2, 2, 0x33, 0));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, 2));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, 3));
	CHECK_OK(put(b, 0, 5, 0));
	CHECK_OK(hw_crash_cut(b, NULL));
	CHECK_EQ(zone_at(d, 1).wp, z + 4096);
	CHECK_EQ(zone_at(d, 1).cond, HW_ZC_CLOSED);
	CHECK_EQ(at(d, 32), 0x11);
	CHECK_EQ(at(d, 39), 0x11);
	CHECK_EQ(zone_at(d, 2).wp, 2 * z + 1024);
	CHECK_EQ(zone_at(d, 2).cond, HW_ZC_CLOSED);
	CHECK_EQ(at(d, 64), 0x22);
	CHECK_EQ(at(d, 66), 0);
	CHECK_EQ(zone_at(d, 3).wp, 3 * z);
	CHECK_EQ(zone_at(d, 3).cond, HW_ZC_EMPTY);
	CHECK_EQ(at(b, 0), 0);
	/* the zones go on from there */
	CHECK_OK(append(d, 1, 1, 0x55, 0));
	CHECK_EQ(zone_at(d, 1).wp, z + 4608);
	hw_close(d);
	hw_close(b);
}

/* A full zone reset after the failure comes back full. */
TEST(crash_plan_on_zones_brings_back_a_full_zone)
{
	struct hw_crash_plan p = { .fail_at = 1 };
	struct hw_dev *d;

	OPEN(ZSPEC, d);
	for (int i = 0; i < 3; i++)
		CHECK_OK(append(d, 4, 8, (uint8_t)(0x60 + i), 0));
	CHECK_EQ(zone_at(d, 4).cond, HW_ZC_FULL);
	CHECK_OK(hw_crash_set_plan(d, &p));
	CHECK_OK(hw_flush(d));                     /* durable, then dark */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, 4));
	CHECK_OK(hw_crash_cut(d, NULL));
	CHECK_EQ(zone_at(d, 4).cond, HW_ZC_FULL);
	CHECK_EQ(zone_at(d, 4).wp, 4 * 16 * KiB + 12 * KiB);
	CHECK_EQ(at(d, 4 * 32 + 23), 0x62);
	hw_close(d);
}

/*
 * Settled over the zone model: appends and zone commands go straight
 * down, and a keep-all cut still power-cycles the zones (open ones
 * close) and keeps every byte.
 */
TEST(crash_settled_zones_take_appends_and_a_keep_all_cut)
{
	static const struct hw_cut keep_all = { .kind = HW_CUT_KEEP_ALL };
	const uint64_t z = 16 * KiB;
	struct hw_dev *d;

	OPEN(ZSPEC, d);
	CHECK_OK(append(d, 1, 2, 0x11, 0));
	CHECK_OK(hw_crash_settle(d, true));
	CHECK_OK(append(d, 1, 2, 0x22, 0));
	CHECK_OK(append(d, 2, 8, 0x33, HW_FUA));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, 2));
	CHECK_EQ(hw_crash_pending(d), 0);
	CHECK_EQ(zone_at(d, 1).cond, HW_ZC_IMP_OPEN);
	CHECK_OK(hw_crash_cut(d, &keep_all));
	CHECK_EQ(zone_at(d, 1).cond, HW_ZC_CLOSED);
	CHECK_EQ(zone_at(d, 1).wp, z + 2048);
	CHECK_EQ(at(d, 32), 0x11);
	CHECK_EQ(at(d, 34), 0x22);
	CHECK_EQ(zone_at(d, 2).cond, HW_ZC_FULL);
	CHECK_EQ(at(d, 64), 0x33);
	hw_close(d);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
