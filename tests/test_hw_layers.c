/*
 * test_hw_layers.c - the stacking layers: crash (cuts against an
 * independent model of which writes survive), faulty (errors reach the
 * caller, once or sticky), log (replay to each mark rebuilds each state),
 * and the layer spec grammar.
 */
#include "base/park.h"
#include "base/poison.h"
#include "hw/hw.h"
#include "hw/hw_internal.h"
#include "tests/test.h"
#include "tests/test_hw_util.h"

#include <stdlib.h>

#define DEV     (64 * KiB)
#define IMG     (16 * KiB)     /* the part the crash tests compare */

static uint8_t tmp[64 * 1024], got[64 * 1024];

/* A write of pattern `tag`; the model applies it to a plain buffer. */
struct w {
	uint64_t off;
	uint32_t len;
	unsigned tag;
	unsigned flags;
};

static void model_apply(uint8_t *img, const struct w *w)
{
	for (uint32_t i = 0; i < w->len; i++)
		img[w->off + i] = pat(w->tag, i);
}

static int dev_apply(struct hw_dev *d, const struct w *w)
{
	fill_pat(tmp, w->len, w->tag);
	return hw_write(d, w->off, tmp, w->len, w->flags);
}

/* Four overlapping writes over a flushed base, none durable. */
static const struct w base = { 0, IMG, 9, 0 };
static const struct w four[4] = {
	{ 0, 4096, 1, 0 },
	{ 2048, 4096, 2, 0 },
	{ 8192, 1000, 3, 0 },
	{ 100, 50, 4, 0 },
};

/* crash:mem with the base flushed and the four writes pending. */
static int crash_setup(struct hw_dev **d)
{
	char e[256];
	int rc = hw_open("crash:mem:64k", d, e, sizeof(e));

	if (rc || (rc = dev_apply(*d, &base)) || (rc = hw_flush(*d)))
		return rc;
	for (int i = 0; i < 4; i++)
		if ((rc = dev_apply(*d, &four[i])))
			return rc;
	return 0;
}

/* The model: base, then the writes of `four` whose bit is in keep. */
static void model_subset(uint8_t *img, unsigned keep)
{
	model_apply(img, &base);
	for (int i = 0; i < 4; i++)
		if (keep >> i & 1)
			model_apply(img, &four[i]);
}

/* ---- crash ----------------------------------------------------------- */

/* cut, over the base and the four writes, leaves the writes in keep. */
static void expect_cut(const struct hw_cut *cut, unsigned keep,
		       const char *what)
{
	static uint8_t want[IMG];
	struct hw_dev *d;

	CHECK_OK(crash_setup(&d));
	CHECK_EQ(hw_crash_pending(d), 4);
	CHECK_OK(hw_crash_cut(d, cut));
	CHECK_EQ(hw_crash_pending(d), 0);
	model_subset(want, keep);
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MSG(memcmp(got, want, IMG) == 0, "%s", what);
	hw_close(d);
}

TEST(crash_prefix_n_keeps_exactly_the_first_n_pending_writes)
{
	char what[32];

	for (unsigned n = 0; n <= 4; n++) {
		snprintf(what, sizeof(what), "prefix %u", n);
		expect_cut(&(struct hw_cut){ .kind = HW_CUT_PREFIX, .n = n },
			   (1u << n) - 1, what);
	}
}

TEST(crash_drop_all_and_keep_all_are_the_extremes)
{
	expect_cut(NULL, 0, "zero cut: drop all");
	expect_cut(&(struct hw_cut){ .kind = HW_CUT_KEEP_ALL }, 15, "keep all");
}

TEST(crash_mask_keeps_the_chosen_writes_in_issue_order)
{
	static const uint8_t mask[1] = { 0x0a };        /* writes 1 and 3 */
	struct hw_cut cut = { .kind = HW_CUT_MASK, .mask = mask, .mask_bits = 4 };

	expect_cut(&cut, 0x0a, "mask 1010");
	cut.mask_bits = 2;                      /* bits past it count as 0 */
	expect_cut(&cut, 0x02, "mask 10 of 1010");
}

/*
 * A record keeps the bytes its write replaced and reads what it wrote
 * back from the device at the cut (hw/crash.c): every subset of the
 * four overlapping writes comes out right, while the records held only
 * the replaced bytes.
 */
TEST(crash_records_hold_the_bytes_replaced_and_every_subset_survives)
{
	uint64_t wrote = 0;

	for (int i = 0; i < 4; i++)
		wrote += four[i].len;
	for (unsigned keep = 0; keep < 16; keep++) {
		const uint8_t mask[1] = { (uint8_t)keep };
		struct hw_cut cut = { .kind = HW_CUT_MASK, .mask = mask,
				      .mask_bits = 4 };
		static uint8_t want[IMG];
		struct hw_crash_info ci;
		struct hw_dev *d;

		CHECK_OK(crash_setup(&d));
		CHECK_OK(hw_crash_info(d, &ci));
		CHECK_EQ(ci.held_bytes, wrote);
		CHECK_OK(hw_crash_cut(d, &cut));
		CHECK_OK(hw_crash_info(d, &ci));
		CHECK_EQ(ci.held_bytes, 0);
		model_subset(want, keep);
		CHECK_OK(hw_read(d, 0, got, IMG));
		CHECK_MSG(memcmp(got, want, IMG) == 0, "keep mask %x", keep);
		hw_close(d);
	}
}

TEST(crash_random_cuts_are_subsets_repeatable_and_varied)
{
	static uint8_t want[IMG], first[IMG];
	unsigned seen = 0;

	for (uint64_t seed = 1; seed <= 24; seed++) {
		struct hw_cut cut = { .kind = HW_CUT_RANDOM, .seed = seed };
		unsigned match = 16;
		struct hw_dev *d;

		for (int again = 0; again < 2; again++) {
			CHECK_OK(crash_setup(&d));
			CHECK_OK(hw_crash_cut(d, &cut));
			CHECK_OK(hw_read(d, 0, again ? got : first, IMG));
			hw_close(d);
		}
		CHECK_MSG(memcmp(first, got, IMG) == 0, "seed %d not repeatable",
			  (int)seed);
		for (unsigned k = 0; k < 16 && match == 16; k++) {
			model_subset(want, k);
			if (memcmp(got, want, IMG) == 0)
				match = k;
		}
		CHECK_MSG(match < 16, "seed %d: no subset of the writes",
			  (int)seed);
		seen |= 1u << match;
	}
	CHECK(__builtin_popcount(seen) >= 6);
}

TEST(crash_mark_keeps_writes_issued_before_it)
{
	static uint8_t want[IMG];
	struct hw_cut cut = { .kind = HW_CUT_MARK };
	struct hw_dev *d;
	int64_t m;

	CHECK_OK(crash_setup(&d));     /* writes 0..3 pending */
	m = hw_crash_mark(d);
	CHECK(m >= 4);
	CHECK_OK(dev_apply(d, &(struct w){ 4096, 4096, 5, 0 }));
	cut.n = (uint64_t)m;
	CHECK_OK(hw_crash_cut(d, &cut));
	model_subset(want, 15);
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);
	/* A mark from the future is refused. */
	cut.n = (uint64_t)hw_crash_mark(d) + 1;
	CHECK_EQ(hw_crash_cut(d, &cut), -EINVAL);
	hw_close(d);
}

/*
 *   W0 pending   [0 ........ 4096)
 *   W1 FUA            [2048 ........ 6144)
 *   drop all:    base  W1 ..........
 */
TEST(crash_fua_write_survives_the_drop_of_an_older_write_under_it)
{
	static uint8_t want[IMG];
	struct w w0 = { 0, 4096, 1, 0 }, w1 = { 2048, 4096, 2, HW_FUA };
	struct hw_dev *d;

	OPEN("crash:mem:64k", d);
	CHECK_OK(dev_apply(d, &base));
	CHECK_OK(hw_flush(d));
	CHECK_OK(dev_apply(d, &w0));
	CHECK_OK(dev_apply(d, &w1));
	CHECK_EQ(hw_crash_pending(d), 1);
	CHECK_OK(hw_crash_cut(d, NULL));
	model_apply(want, &base);
	model_apply(want, &w1);
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);
	hw_close(d);
}

TEST(crash_tears_block_writes_in_whole_sectors)
{
	static uint8_t want[IMG];
	struct hw_cut cut = { .tear = HW_TEAR_UNITS, .units = 3 };
	struct w w0 = { 0, 4096, 1, 0 }, w1 = { 100, 1000, 2, 0 };
	int mixed = 0;
	struct hw_dev *d;

	OPEN("crash:mem:64k", d);
	CHECK_EQ(d->geo.atomic_write, 512);
	CHECK_OK(dev_apply(d, &base));
	CHECK_OK(hw_flush(d));
	CHECK_OK(dev_apply(d, &w0));
	CHECK_OK(hw_crash_cut(d, &cut));
	model_apply(want, &base);
	model_apply(want, &(struct w){ 0, 1536, 1, 0 });
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);

	/* Unaligned: the first unit is [100, 512). */
	cut.units = 1;
	CHECK_OK(dev_apply(d, &w1));
	CHECK_OK(hw_crash_cut(d, &cut));
	model_apply(want, &(struct w){ 100, 412, 2, 0 });
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);

	/* Seeded: each sector wholly old or wholly new. */
	cut.tear = HW_TEAR_SEED;
	for (uint64_t seed = 1; seed <= 16; seed++) {
		int news = 0;

		CHECK_OK(dev_apply(d, &(struct w){ 0, 4096, 9, HW_FUA }));
		CHECK_OK(dev_apply(d, &w0));
		cut.seed = seed;
		CHECK_OK(hw_crash_cut(d, &cut));
		CHECK_OK(hw_read(d, 0, got, 4096));
		for (int s = 0; s < 8; s++) {
			int same = 0;

			for (int b = 0; b < 512; b++)
				same += got[s * 512 + b] == pat(1, (uint64_t)(s * 512 + b));
			CHECK_MSG(same == 0 || same == 512, "seed %d sector %d torn",
				  (int)seed, s);
			news += same == 512;
		}
		mixed += news > 0 && news < 8;
	}
	CHECK(mixed >= 12);
	hw_close(d);
}

TEST(crash_prefix_tears_only_the_write_in_flight)
{
	static uint8_t want[IMG];
	struct hw_cut cut = { .kind = HW_CUT_PREFIX, .n = 1,
			      .tear = HW_TEAR_UNITS, .units = 2 };
	struct hw_dev *d;

	CHECK_OK(crash_setup(&d));
	CHECK_OK(hw_crash_cut(d, &cut));
	/* Write 0 whole, write 1's first two sectors, nothing else. */
	model_subset(want, 1);
	model_apply(want, &(struct w){ 2048, 1024, 2, 0 });
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);
	hw_close(d);
}

TEST(crash_zero_out_and_discard_are_undone_like_writes)
{
	static uint8_t want[IMG];
	struct hw_cut keep = { .kind = HW_CUT_KEEP_ALL };
	struct hw_dev *d;

	OPEN("crash:mem:64k", d);
	CHECK_OK(dev_apply(d, &base));
	CHECK_OK(hw_flush(d));
	CHECK_OK(hw_zero_out(d, 1000, 3000, 0));
	CHECK_OK(hw_discard(d, 8192, 4096));
	CHECK_EQ(hw_crash_pending(d), 2);
	CHECK_OK(hw_crash_cut(d, NULL));
	model_apply(want, &base);
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);

	CHECK_OK(hw_zero_out(d, 1000, 3000, 0));
	CHECK_OK(hw_discard(d, 8192, 4096));
	CHECK_OK(hw_crash_cut(d, &keep));
	memset(want + 1000, 0, 3000);
	memset(want + 8192, 0, 4096);           /* mem: discards to zeros */
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);
	hw_close(d);
}

TEST(crash_info_counts_pending_writes_and_durability_points)
{
	struct hw_crash_info ci;
	struct hw_dev *d;

	OPEN("crash[atomic=4096]:mem:64k", d);
	CHECK_EQ(d->geo.atomic_write, 4096);
	CHECK_OK(hw_write(d, 0, tmp, 100, 0));
	CHECK_OK(hw_write(d, 200, tmp, 50, HW_FUA));
	CHECK_OK(hw_write(d, 4096, tmp, 10, 0));
	CHECK_OK(hw_crash_info(d, &ci));
	CHECK_EQ(ci.pending, 2);
	CHECK_EQ(ci.pending_bytes, 110);
	CHECK_EQ(ci.next_mark, 3);
	CHECK_EQ(ci.durable_points, 1);
	CHECK_EQ(ci.cuts, 0);
	CHECK_EQ(ci.atomic, 4096);
	CHECK_OK(hw_flush(d));
	CHECK_OK(hw_crash_cut(d, NULL));
	CHECK_OK(hw_crash_info(d, &ci));
	CHECK_EQ(ci.pending, 0);
	CHECK_EQ(ci.durable_points, 2);
	CHECK_EQ(ci.cuts, 1);
	hw_close(d);
}

/*
 * hw_crash_trim gives the bytes the layer keeps for its records back to
 * the park, and only with nothing pending; the writes after it are
 * recorded and cut as before.
 */
TEST(crash_trim_gives_back_record_memory_only_with_nothing_pending)
{
	static uint8_t want[IMG];
	struct park_stats st;
	struct hw_dev *d;

	park_drain();
	CHECK_OK(crash_setup(&d));
	CHECK_EQ(hw_crash_trim(d), -EBUSY);
	CHECK_EQ(hw_crash_pending(d), 4);
	CHECK_OK(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_KEEP_ALL }));
	park_stats(&st);
	CHECK_EQ(st.blocks, 0);
	CHECK_OK(hw_crash_trim(d));
	park_stats(&st);
	CHECK_EQ(st.blocks, 1); /* the arena's block, parked */
	CHECK_OK(hw_crash_trim(d)); /* nothing left: still fine */
	/* recorded again after the trim: a write dropped by a cut */
	CHECK_OK(dev_apply(d, &four[0]));
	park_stats(&st);
	CHECK_EQ(st.blocks, 0); /* taken back */
	CHECK_EQ(hw_crash_pending(d), 1);
	CHECK_OK(hw_crash_cut(d, NULL));
	model_subset(want, 15);
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);
	hw_close(d);
	park_drain();
	OPEN("mem:64k", d);
	CHECK_EQ(hw_crash_trim(d), -EINVAL);
	hw_close(d);
}

TEST(crash_calls_check_their_arguments)
{
	static const uint8_t mask[1] = { 1 };
	struct hw_crash_info ci;
	struct hw_dev *d;

	OPEN("mem:64k", d);
	CHECK_EQ(hw_crash_cut(d, NULL), -EINVAL);
	CHECK_EQ(hw_crash_pending(d), -EINVAL);
	CHECK_EQ(hw_crash_mark(d), -EINVAL);
	CHECK_EQ(hw_crash_info(d, &ci), -EINVAL);
	CHECK_EQ(hw_crash_pending(NULL), -EINVAL);
	hw_close(d);

	CHECK_OK(crash_setup(&d));
	CHECK_EQ(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_PREFIX, .n = 5 }),
		 -EINVAL);
	CHECK_EQ(hw_crash_cut(d, &(struct hw_cut){ .kind = (enum hw_cut_kind)9 }),
		 -EINVAL);
	CHECK_EQ(hw_crash_cut(d, &(struct hw_cut){ .tear = (enum hw_tear)7 }),
		 -EINVAL);
	CHECK_EQ(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_MASK,
						   .mask_bits = 3 }), -EINVAL);
	CHECK_EQ(hw_crash_info(d, NULL), -EINVAL);
	/* Nothing changed: the four writes are still pending. */
	CHECK_EQ(hw_crash_pending(d), 4);
	CHECK_OK(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_MASK,
						   .mask = mask, .mask_bits = 1 }));
	hw_close(d);
}

TEST(crash_over_a_file_leaves_the_crash_image_in_the_file)
{
	static uint8_t want[IMG];
	char spec[160];
	struct hw_dev *d;
	struct hw_tmp t;

	CHECK(hw_tmp_init(&t));
	snprintf(spec, sizeof(spec), "crash:file:%s,size=64k", t.path);
	OPEN(spec, d);
	CHECK_OK(dev_apply(d, &base));
	CHECK_OK(hw_flush(d));
	for (int i = 0; i < 4; i++)
		CHECK_OK(dev_apply(d, &four[i]));
	CHECK_OK(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_PREFIX, .n = 2 }));
	hw_close(d);
	snprintf(spec, sizeof(spec), "file:%s", t.path);
	OPEN(spec, d);
	model_subset(want, 3);
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);
	hw_close(d);
	hw_tmp_done(&t);
}

/* ---- crash over zones ----------------------------------------------- */

#define ZSPEC "crash:zoned:mem,size=128k,zone=16k,cap=12k,conv=1,append_max=4k"

static int append(struct hw_dev *d, uint64_t zone, size_t len, unsigned tag,
		  unsigned flags)
{
	uint64_t at;

	fill_pat(tmp, len, tag);
	return hw_zone_append(d, zone, tmp, len, flags, &at);
}

TEST(crash_in_a_sequential_zone_rewinds_its_write_pointer)
{
	struct hw_cut prefix = { .kind = HW_CUT_PREFIX, .n = 1 };
	const uint64_t z1 = 16 * KiB;
	struct hw_dev *d;

	OPEN(ZSPEC, d);
	CHECK_OK(append(d, 1, 4096, 1, 0));
	CHECK_OK(hw_flush(d));
	CHECK_OK(append(d, 1, 4096, 2, 0));
	CHECK_OK(append(d, 1, 2048, 3, 0));
	CHECK_OK(hw_write(d, 0, tmp, 512, 0));          /* conventional */
	CHECK_EQ(hw_crash_pending(d), 3);
	CHECK_OK(hw_crash_cut(d, &prefix));             /* keeps B only */
	CHECK_EQ(zone_at(d, 1).wp, z1 + 8192);
	CHECK_EQ(zone_at(d, 1).cond, HW_ZC_CLOSED);     /* power cycled */
	CHECK_OK(hw_read(d, z1 + 4096, got, 8192));
	fill_pat(tmp, 4096, 2);
	CHECK_MEM(got, tmp, 4096);
	CHECK(all_zero(got + 4096, 4096));
	CHECK_OK(hw_read(d, 0, got, 512));
	CHECK(all_zero(got, 512));                      /* undone */

	/* The zone goes on from the rewound write pointer. */
	CHECK_OK(append(d, 1, 512, 4, 0));
	CHECK_EQ(zone_at(d, 1).wp, z1 + 8192 + 512);
	/* A torn append keeps its leading sectors only. */
	CHECK_OK(append(d, 1, 2048, 5, 0));
	CHECK_OK(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_PREFIX, .n = 1,
						   .tear = HW_TEAR_UNITS,
						   .units = 3 }));
	CHECK_EQ(zone_at(d, 1).wp, z1 + 8192 + 512 + 1536);
	hw_close(d);
}

TEST(crash_in_a_zone_durable_write_makes_earlier_ones_durable)
{
	const uint64_t z1 = 16 * KiB, z2 = 32 * KiB, z3 = 48 * KiB;
	struct hw_dev *d;

	OPEN(ZSPEC, d);
	CHECK_OK(append(d, 1, 4096, 1, 0));
	CHECK_OK(append(d, 1, 512, 2, HW_FUA));
	CHECK_EQ(hw_crash_pending(d), 0);
	/* Finish makes its zone durable; reset forgets its writes. */
	CHECK_OK(append(d, 2, 4096, 3, 0));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, 2));
	CHECK_OK(append(d, 3, 4096, 4, 0));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, 3));
	CHECK_EQ(hw_crash_pending(d), 0);
	/* An explicitly open, empty zone closes to EMPTY at the cut. */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_OPEN, 4));
	CHECK_OK(hw_crash_cut(d, NULL));
	CHECK_EQ(zone_at(d, 1).wp, z1 + 4608);
	CHECK_EQ(zone_at(d, 2).wp, z2 + 12 * KiB);
	CHECK_EQ(zone_at(d, 2).cond, HW_ZC_FULL);
	CHECK_EQ(zone_at(d, 3).wp, z3);
	CHECK_EQ(zone_at(d, 3).cond, HW_ZC_EMPTY);
	CHECK_EQ(zone_at(d, 4).cond, HW_ZC_EMPTY);
	hw_close(d);
}

TEST(crash_random_cut_in_a_zone_keeps_a_prefix_of_its_writes)
{
	const uint64_t z1 = 16 * KiB;
	unsigned seen = 0;

	for (uint64_t seed = 1; seed <= 24; seed++) {
		struct hw_cut cut = { .kind = HW_CUT_RANDOM, .seed = seed };
		uint64_t wp, k;
		struct hw_dev *d;

		OPEN(ZSPEC, d);
		for (unsigned i = 0; i < 3; i++)
			CHECK_OK(append(d, 1, 2048, 10 + i, 0));
		CHECK_OK(hw_crash_cut(d, &cut));
		wp = zone_at(d, 1).wp - z1;
		CHECK_MSG(wp % 2048 == 0 && wp <= 6144, "wp +%llu",
			  (unsigned long long)wp);
		CHECK_OK(hw_read(d, z1, got, 6144));
		for (k = 0; k < wp / 2048; k++) {
			fill_pat(tmp, 2048, 10 + (unsigned)k);
			CHECK_MEM(got + k * 2048, tmp, 2048);
		}
		CHECK(all_zero(got + wp, 6144 - wp));
		seen |= 1u << (wp / 2048);
		hw_close(d);
	}
	CHECK(__builtin_popcount(seen) >= 3);
}

/*
 * A zoned device the crash layer cannot rewind (as real hardware): the
 * zone model behind a pass-through that is not a registered layer.
 */
static const struct hw_ops opaque_ops = {
	.name = "opaque",
	.read = hw_layer_read,
	.write = hw_layer_write,
	.flush = hw_layer_flush,
	.report_zones = hw_layer_report_zones,
	.zone_mgmt = hw_layer_zone_mgmt,
	.zone_append = hw_layer_zone_append,
	.destroy = hw_layer_destroy,
};

/* A crash layer over spec behind the pass-through above. */
static int crash_opaque(const char *spec, struct hw_dev **out)
{
	static struct hw_opts o = { .spec = "crash:opaque" };
	struct hw_layer *opaque = calloc(1, sizeof(*opaque));
	struct hw_dev *low;
	char e[256];
	int rc = opaque ? hw_open(spec, &low, e, sizeof(e)) : -ENOMEM;

	if (rc) {
		free(opaque);
		return rc;
	}
	hw_layer_init(opaque, &opaque_ops, low);
	rc = hw_crash_layer.open(&o, &opaque->dev, out, e, sizeof(e));
	if (rc)
		hw_close(&opaque->dev);
	return rc;
}

TEST(crash_cut_that_must_rewind_real_zones_fails_and_changes_nothing)
{
	static const uint8_t mask[1] = { 2 };           /* the append */
	struct hw_dev *d;

	CHECK_OK(crash_opaque("zoned:mem,size=64k,zone=16k,conv=1", &d));
	fill_pat(tmp, 512, 7);
	CHECK_OK(hw_write(d, 0, tmp, 512, 0));          /* conventional */
	CHECK_OK(append(d, 1, 1024, 1, 0));
	CHECK_EQ(hw_crash_pending(d), 2);
	/* nor can it undo a reset issued after a planned failure */
	CHECK_EQ(hw_crash_set_plan(d, &(struct hw_crash_plan){ .fail_at = 1 }),
		 -EOPNOTSUPP);
	CHECK_EQ(hw_crash_cut(d, NULL), -EOPNOTSUPP);
	CHECK_EQ(hw_crash_pending(d), 2);
	CHECK_EQ(zone_at(d, 1).wp, 16 * KiB + 1024);
	CHECK_OK(hw_read(d, 0, got, 512));
	fill_pat(tmp, 512, 7);
	CHECK_MEM(got, tmp, 512);
	CHECK_EQ(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_PREFIX }),
		 -EOPNOTSUPP);
	/* A cut that keeps the zone's write needs no rewind. */
	CHECK_OK(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_MASK,
						   .mask = mask, .mask_bits = 2 }));
	CHECK_EQ(zone_at(d, 1).wp, 16 * KiB + 1024);
	CHECK_OK(hw_read(d, 0, got, 512));
	CHECK(all_zero(got, 512));
	hw_close(d);
}

/*
 * A cut that fails part way forgets nothing, and the next cut may keep
 * what the first dropped.  Here the first rebuilds the plain device of
 * a power domain (dropping its write) and then fails on the other,
 * whose zones cannot be rewound; the second keeps both writes, so the
 * plain device's write must come back, though its range was undone.
 */
TEST(crash_cut_retried_after_a_failed_one_keeps_what_the_first_dropped)
{
	static const uint8_t mask[1] = { 3 };          /* both writes */
	struct hw_dev *d, *a;

	OPEN("crash:mem:64k", a);
	CHECK_OK(crash_opaque("zoned:mem,size=64k,zone=16k,conv=1", &d));
	CHECK_OK(hw_crash_join(a, d));
	fill_pat(tmp, 512, 5);
	CHECK_OK(hw_write(a, 0, tmp, 512, 0));
	CHECK_OK(append(d, 1, 1024, 1, 0));
	CHECK_EQ(hw_crash_cut(a, NULL), -EOPNOTSUPP);
	CHECK_OK(hw_crash_cut(a, &(struct hw_cut){ .kind = HW_CUT_MASK,
						   .mask = mask, .mask_bits = 2 }));
	CHECK_OK(hw_read(a, 0, got, 512));
	fill_pat(tmp, 512, 5);
	CHECK_MEM(got, tmp, 512);
	CHECK_EQ(zone_at(d, 1).wp, 16 * KiB + 1024);
	hw_close(d);
	hw_close(a);
}

/*
 * A cut whose read of a record's written bytes fails leaves that
 * record as it was, and the next cut reads them again: the fourth read
 * below the crash layer (the first two are the bytes the two writes
 * replaced, the third the newer write's, undone) is the cut's read of
 * the older write.  The next cut keeps every write, yet must redo them:
 * the device holds the newer one undone (the failed cut is unfinished).
 */
TEST(crash_cut_whose_read_back_fails_is_whole_when_tried_again)
{
	static uint8_t want[4096];
	struct hw_dev *d;

	OPEN("crash:faulty[read=4]:mem:64k", d);
	fill_pat(tmp, 4096, 1);
	CHECK_OK(hw_write(d, 0, tmp, 4096, 0));
	fill_pat(tmp, 1024, 2);
	CHECK_OK(hw_write(d, 1024, tmp, 1024, 0));
	/* a cut that drops the second write undoes it, then fails to read
	 * the first back: the device holds neither image */
	CHECK_EQ(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_PREFIX,
						   .n = 1 }), -EIO);
	/* keeping all now redoes what the failed cut may have undone */
	CHECK_OK(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_KEEP_ALL }));
	fill_pat(want, 4096, 1);
	fill_pat(want + 1024, 1024, 2);
	CHECK_OK(hw_read(d, 0, got, 4096));
	CHECK_MEM(got, want, 4096);
	hw_close(d);
}

/*
 * A cut that keeps every pending write (keep all, or a prefix of all of
 * them) finds the crash image on the device already: it reads and writes
 * nothing there, only flushes.  One that drops a write undoes.
 */
TEST(crash_cut_keeping_every_write_leaves_the_device_as_it_is)
{
	static uint8_t want[IMG];
	struct hw_dev *d, *low;
	struct hw_counters before;

	OPEN("crash:mem:64k", d);
	low = hw_layer_lower(d);
	fill_pat(tmp, 4096, 1);
	CHECK_OK(hw_write(d, 0, tmp, 4096, 0));
	CHECK_OK(hw_zero_out(d, 512, 512, 0));
	fill_pat(tmp, 1024, 2);
	CHECK_OK(hw_write(d, 2048, tmp, 1024, 0));
	before = low->ctr;
	CHECK_OK(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_KEEP_ALL }));
	CHECK_EQ(low->ctr.reads, before.reads);
	CHECK_EQ(low->ctr.writes, before.writes);
	CHECK_EQ(low->ctr.zeroouts, before.zeroouts);
	CHECK_EQ(low->ctr.flushes, before.flushes + 1);
	CHECK_EQ(hw_crash_pending(d), 0);
	fill_pat(want, 4096, 1);
	memset(want + 512, 0, 512);
	fill_pat(want + 2048, 1024, 2);
	CHECK_OK(hw_read(d, 0, got, 4096));
	CHECK_MEM(got, want, 4096);

	fill_pat(tmp, 512, 3);
	CHECK_OK(hw_write(d, 8192, tmp, 512, 0));
	before = low->ctr;
	CHECK_OK(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_PREFIX,
						   .n = 1 }));
	CHECK_EQ(low->ctr.writes, before.writes);
	CHECK_OK(hw_read(d, 8192, got, 512));
	CHECK_MEM(got, tmp, 512);

	CHECK_OK(hw_write(d, 0, tmp, 512, 0));
	before = low->ctr;
	CHECK_OK(hw_crash_cut(d, NULL));           /* drops it: undone */
	CHECK(low->ctr.writes > before.writes);
	CHECK_OK(hw_read(d, 0, got, 4096));
	CHECK_MEM(got, want, 4096);
	hw_close(d);
}

/*
 * A discard leaves the device whatever it leaves (here, the pass-through
 * has no discard and keeps the bytes), and a cut that keeps the discard
 * keeps that, not zeros: its bytes are read back like a write's.
 */
TEST(crash_keeps_what_a_discard_left_on_the_device)
{
	static uint8_t want[IMG];
	struct hw_dev *d;

	CHECK_OK(crash_opaque("mem:64k", &d));
	CHECK_OK(dev_apply(d, &base));
	CHECK_OK(hw_flush(d));
	CHECK_OK(hw_discard(d, 8192, 4096));
	CHECK_OK(dev_apply(d, &four[3]));        /* a write after it */
	CHECK_EQ(hw_crash_pending(d), 2);
	CHECK_OK(hw_crash_cut(d, &(struct hw_cut){ .kind = HW_CUT_KEEP_ALL }));
	model_apply(want, &base);
	model_apply(want, &four[3]);
	CHECK_OK(hw_read(d, 0, got, IMG));
	CHECK_MEM(got, want, IMG);
	hw_close(d);
}

/* ---- faulty ---------------------------------------------------------- */

TEST(faulty_nth_write_fails_once_and_changes_nothing)
{
	struct hw_dev *d;

	OPEN("faulty[write=3]:mem:64k", d);
	CHECK_OK(hw_write(d, 0, "a", 1, 0));
	CHECK_OK(hw_write(d, 1, "b", 1, 0));
	CHECK_EQ(hw_write(d, 2, "c", 1, 0), -EIO);
	CHECK_OK(hw_write(d, 3, "d", 1, 0));
	CHECK_OK(hw_read(d, 0, got, 4));
	CHECK_MEM(got, "ab\0d", 4);
	CHECK_EQ(hw_fault_fired(d), 1);
	CHECK_EQ(d->ctr.writes, 3);
	hw_close(d);
}

TEST(faulty_sticky_fails_every_later_match_and_nothing_else)
{
	struct hw_dev *d;

	OPEN("faulty[write=2,sticky]:mem:64k", d);
	CHECK_OK(hw_write(d, 0, "a", 1, 0));
	for (int i = 0; i < 5; i++)
		CHECK_EQ(hw_write(d, 1, "b", 1, 0), -EIO);
	CHECK_EQ(hw_zero_out(d, 0, 4096, 0), -EIO);     /* a write too */
	CHECK_OK(hw_read(d, 0, got, 2));
	CHECK_MEM(got, "a\0", 2);
	CHECK_OK(hw_flush(d));
	CHECK_EQ(hw_fault_fired(d), 6);
	hw_close(d);
}

TEST(faulty_reads_and_flushes_fail_on_their_own_count)
{
	struct hw_dev *d;

	OPEN("faulty[read=2,flush=1]:mem:64k", d);
	CHECK_OK(hw_read(d, 0, got, 1));
	CHECK_EQ(hw_read(d, 0, got, 1), -EIO);
	CHECK_OK(hw_read(d, 0, got, 1));
	CHECK_OK(hw_write(d, 0, "x", 1, 0));
	CHECK_EQ(hw_flush(d), -EIO);
	CHECK_OK(hw_flush(d));
	CHECK_EQ(d->ctr.flushes, 1);
	hw_close(d);

	OPEN("faulty[flush=2]:mem:64k", d);
	CHECK_OK(hw_flush(d));
	CHECK_EQ(hw_persist(d, 0, 10), -EIO);          /* a flush too */
	hw_close(d);
}

TEST(faulty_range_fails_io_touching_it)
{
	struct hw_dev *d;

	OPEN("faulty[off=8k,len=4k]:mem:64k", d);
	CHECK_OK(hw_write(d, 0, tmp, 8192, 0));
	CHECK_OK(hw_write(d, 12288, tmp, 100, 0));
	CHECK_EQ(hw_write(d, 7 * 1024, tmp, 2048, 0), -EIO);   /* first touch */
	CHECK_OK(hw_read(d, 8192, got, 10));                    /* one-shot */
	hw_close(d);

	OPEN("faulty[off=8k,len=4k,sticky]:mem:64k", d);
	CHECK_EQ(hw_read(d, 12287, got, 1), -EIO);
	CHECK_EQ(hw_write(d, 8192, tmp, 1, 0), -EIO);
	CHECK_OK(hw_read(d, 12288, got, 1));
	CHECK_OK(hw_write(d, 0, tmp, 8192, 0));
	CHECK_OK(hw_flush(d));                 /* flushes are not matched */
	hw_close(d);

	/* A range on a write fault: the nth write touching it. */
	OPEN("faulty[write=2,off=4k,len=4k]:mem:64k", d);
	CHECK_OK(hw_write(d, 4096, tmp, 1, 0));
	CHECK_OK(hw_write(d, 0, tmp, 1, 0));
	CHECK_EQ(hw_write(d, 8191, tmp, 1, 0), -EIO);
	hw_close(d);
}

TEST(faulty_faults_are_armed_and_disarmed_by_the_api)
{
	struct hw_fault f = { .ops = HW_FAULT_WRITE, .nth = 2, .error = -ENOSPC };
	struct hw_dev *d;
	int id;

	OPEN("faulty:mem:64k", d);
	CHECK_OK(hw_write(d, 0, tmp, 1, 0));
	id = hw_fault_arm(d, &f);
	CHECK(id >= 0);
	CHECK_OK(hw_write(d, 0, tmp, 1, 0));
	CHECK_EQ(hw_write(d, 0, tmp, 1, 0), -ENOSPC);
	CHECK_OK(hw_fault_disarm(d, id));
	CHECK_EQ(hw_fault_disarm(d, id), -EINVAL);
	f.sticky = true;
	f.nth = 0;                                  /* the next one */
	CHECK(hw_fault_arm(d, &f) >= 0);
	CHECK_EQ(hw_write(d, 0, tmp, 1, 0), -ENOSPC);
	CHECK_OK(hw_fault_disarm(d, -1));
	CHECK_OK(hw_write(d, 0, tmp, 1, 0));
	for (int i = 0; i < HW_FAULTS_MAX; i++)
		CHECK(hw_fault_arm(d, &f) >= 0);
	CHECK_EQ(hw_fault_arm(d, &f), -ENOSPC);
	CHECK_OK(hw_fault_disarm(d, -1));
	/* Bad faults, and a device without the layer. */
	CHECK_EQ(hw_fault_arm(d, &(struct hw_fault){ .ops = 16 }), -EINVAL);
	CHECK_EQ(hw_fault_arm(d, &(struct hw_fault){ .error = EIO }), -EINVAL);
	CHECK_EQ(hw_fault_arm(d, &(struct hw_fault){ .off = DEV, .len = 1 }),
		 -EINVAL);
	CHECK_EQ(hw_fault_arm(d, NULL), -EINVAL);
	CHECK_EQ(hw_fault_disarm(d, HW_FAULTS_MAX), -EINVAL);
	CHECK_EQ(hw_fault_fired(d), 2);
	hw_close(d);
	OPEN("mem:64k", d);
	CHECK_EQ(hw_fault_arm(d, &f), -EINVAL);
	CHECK_EQ(hw_fault_fired(d), -EINVAL);
	hw_close(d);
}

TEST(faulty_error_reaches_the_caller_through_a_stack)
{
	struct hw_dev *d;

	OPEN("log:faulty[write=1]:crash:mem:64k", d);
	CHECK_EQ(hw_write(d, 0, tmp, 512, 0), -EIO);
	CHECK_EQ(hw_crash_pending(d), 0);      /* it never reached crash */
	CHECK_OK(hw_write(d, 0, tmp, 512, 0));
	CHECK_EQ(hw_crash_pending(d), 1);
	CHECK_EQ(hw_fault_fired(d), 1);
	hw_close(d);

	/* Zone appends are writes. */
	OPEN("faulty[write=1]:zoned:mem,size=64k,zone=16k", d);
	CHECK_EQ(append(d, 1, 512, 1, 0), -EIO);
	CHECK_EQ(zone_at(d, 1).cond, HW_ZC_EMPTY);
	CHECK_OK(append(d, 1, 512, 1, 0));
	hw_close(d);
}

/*
 * hw_view shows a mem device's written bytes in place, through the crash
 * and log layers, counted as a read on each device of the stack; NULL
 * where a page of the range was never written (it reads as zeros), out
 * of range, through faulty: (whose every read must be counted and may
 * fail) and on a device without a mapping (file:).
 */
TEST(view_shows_written_bytes_in_place_where_a_read_would_find_them)
{
	static const char *const specs[] = { "mem:64k", "crash:mem:64k",
					     "log:crash:mem:64k" };
	struct hw_dev *d;
	struct hw_tmp t;

	for (unsigned k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		const uint8_t *v;

		OPEN(specs[k], d);
		CHECK(hw_view(d, 8192, 4096) == NULL);  /* never written */
		fill_pat(tmp, 4096, 7);
		CHECK_OK(hw_write(d, 8192, tmp, 4096, 0));
		for (struct hw_dev *l = d; l; l = hw_layer_lower(l))
			hw_reset_counters(l);
		v = hw_view(d, 8192 + 100, 512);
		CHECK_MSG(v != NULL, "%s", specs[k]);
		CHECK(!memcmp(v, tmp + 100, 512));
		for (struct hw_dev *l = d; l; l = hw_layer_lower(l)) {
			CHECK_EQ(l->ctr.reads, 1);
			CHECK_EQ(l->ctr.bytes_read, 512);
		}
		/* in place: the next write shows through the same bytes */
		fill_pat(tmp, 4096, 8);
		CHECK_OK(hw_write(d, 8192, tmp, 4096, 0));
		CHECK(!memcmp(v, tmp + 100, 512));
		/* a range into a page never written, or past the end */
		CHECK(hw_view(d, 8192 + 4000, 200) == NULL);
		CHECK(hw_view(d, 64 * KiB - 512, 1024) == NULL);
		CHECK_EQ(d->ctr.reads, 1);
		hw_close(d);
	}
	OPEN("faulty[read=5]:mem:64k", d);
	CHECK_OK(hw_write(d, 0, tmp, 4096, 0));
	CHECK(hw_view(d, 0, 512) == NULL);
	CHECK(hw_view(hw_layer_lower(d), 0, 512) != NULL);
	hw_close(d);
	if (hw_tmp_init(&t)) {
		char spec[160];

		snprintf(spec, sizeof(spec), "file:%s,size=64k", t.path);
		OPEN(spec, d);
		CHECK_OK(hw_write(d, 0, tmp, 4096, 0));
		CHECK(hw_view(d, 0, 512) == NULL);
		hw_close(d);
		hw_tmp_done(&t);
	}
}

/* Zone management fails only for a fault that names it (zone=N), and a
 * failed finish leaves the zone as it was. */
TEST(faulty_zone_management_fails_on_its_own_count)
{
	struct hw_dev *d;

	OPEN("faulty[write=2]:zoned:mem,size=64k,zone=16k", d);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, 0));  /* not a write */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, 0));
	CHECK_EQ(hw_fault_fired(d), 0);
	hw_close(d);

	OPEN("faulty[zone=2]:zoned:mem,size=64k,zone=16k", d);
	CHECK_OK(append(d, 1, 512, 1, 0));
	CHECK_OK(append(d, 2, 512, 1, 0));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, 1));
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_FINISH, 2), -EIO);
	CHECK_EQ(zone_at(d, 2).cond, HW_ZC_IMP_OPEN);
	CHECK_EQ(zone_at(d, 2).wp - zone_at(d, 2).start, 512);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, 2));  /* one-shot */
	CHECK_EQ(zone_at(d, 2).cond, HW_ZC_FULL);
	CHECK_EQ(hw_fault_fired(d), 1);
	hw_close(d);

	/* a range names zones: only zone 3's management counts */
	OPEN("faulty[zone=1,off=48k,len=16k]:zoned:mem,size=64k,zone=16k", d);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, 2));
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_OPEN, 3), -EIO);
	CHECK_EQ(zone_at(d, 3).cond, HW_ZC_EMPTY);
	hw_close(d);
	CHECK_EQ(hw_open("faulty[zone=0]:zoned:mem,size=64k,zone=16k", &d,
			 NULL, 0), -EINVAL);
}

/* ---- log ------------------------------------------------------------- */

TEST(log_replay_to_each_mark_rebuilds_that_state)
{
	static uint8_t want[3][IMG];
	struct w a = { 0, 4096, 1, 0 }, b = { 4096, 4096, 2, 0 },
		 c = { 1000, 100, 3, HW_FUA };
	struct hw_dev *d, *t;

	OPEN("log:mem:64k", d);
	CHECK_OK(dev_apply(d, &a));
	CHECK_EQ(hw_log_mark(d, "one"), 0);
	CHECK_OK(dev_apply(d, &b));
	CHECK_OK(hw_flush(d));
	CHECK_EQ(hw_log_mark(d, "two"), 1);
	CHECK_OK(hw_zero_out(d, 2048, 4096, 0));
	CHECK_OK(dev_apply(d, &c));
	model_apply(want[0], &a);
	memcpy(want[1], want[0], IMG);
	model_apply(want[1], &b);
	memcpy(want[2], want[1], IMG);
	memset(want[2] + 2048, 0, 4096);
	model_apply(want[2], &c);

	for (int m = 0; m < 3; m++) {
		OPEN("mem:64k", t);
		CHECK_OK(hw_log_replay(d, t, m == 2 ? HW_LOG_END : (uint64_t)m));
		CHECK_OK(hw_read(t, 0, got, IMG));
		CHECK_MSG(memcmp(got, want[m], IMG) == 0, "mark %d", m);
		CHECK_EQ(t->ctr.flushes, m >= 1);
		CHECK_EQ(t->ctr.fua_writes, m == 2);
		CHECK_EQ(t->ctr.zeroouts, m == 2);
		hw_close(t);
	}
	hw_close(d);
}

TEST(log_marks_are_found_by_label_and_counted)
{
	struct hw_log_info li;
	struct hw_dev *d;

	OPEN("log:mem:64k", d);
	CHECK_OK(hw_write(d, 0, tmp, 100, 0));
	CHECK_EQ(hw_log_mark(d, "x"), 0);
	CHECK_EQ(hw_log_mark(d, NULL), 1);
	CHECK_EQ(hw_log_mark(d, "y"), 2);
	CHECK_OK(hw_flush(d));
	CHECK_EQ(hw_write(d, DEV - 1, tmp, 2, 0), -EINVAL);   /* not logged */
	CHECK_EQ(hw_log_find(d, "y"), 2);
	CHECK_EQ(hw_log_find(d, "x"), 0);
	CHECK_EQ(hw_log_find(d, "z"), -ENOENT);
	CHECK_OK(hw_log_info(d, &li));
	CHECK_EQ(li.entries, 2);
	CHECK_EQ(li.marks, 3);
	CHECK_EQ(li.bytes, 100);
	hw_close(d);
}

TEST(log_replay_refuses_what_cannot_work)
{
	struct hw_dev *d, *t;

	OPEN("log:mem:64k", d);
	CHECK_EQ(hw_log_mark(d, "m"), 0);
	OPEN("mem:32k", t);
	CHECK_EQ(hw_log_replay(d, t, HW_LOG_END), -EINVAL);   /* too small */
	hw_close(t);
	OPEN("mem:64k", t);
	CHECK_EQ(hw_log_replay(d, t, 1), -EINVAL);            /* no mark 1 */
	CHECK_EQ(hw_log_replay(t, d, 0), -EINVAL);            /* not a log */
	CHECK_EQ(hw_log_replay(d, d, 0), -EINVAL);            /* itself */
	CHECK_EQ(hw_log_replay(d, NULL, 0), -EINVAL);
	CHECK_EQ(hw_log_mark(t, "m"), -EINVAL);
	CHECK_EQ(hw_log_find(t, "m"), -EINVAL);
	hw_close(t);
	hw_close(d);
}

TEST(log_of_a_zoned_device_replays_onto_a_like_one)
{
	const char *zs = "zoned:mem,size=64k,zone=16k,cap=12k";
	char spec[96];
	struct hw_dev *d, *t;

	snprintf(spec, sizeof(spec), "log:%s", zs);
	OPEN(spec, d);
	CHECK_OK(append(d, 1, 4096, 1, 0));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, 1));
	CHECK_OK(append(d, 1, 2048, 2, 0));
	CHECK_OK(append(d, 2, 512, 3, 0));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, 2));
	OPEN(zs, t);
	CHECK_OK(hw_log_replay(d, t, HW_LOG_END));
	for (uint64_t i = 1; i < 4; i++) {
		CHECK_EQ(zone_at(t, i).wp, zone_at(d, i).wp);
		CHECK_EQ(zone_at(t, i).cond, zone_at(d, i).cond);
	}
	CHECK_OK(hw_read(t, 16 * KiB, got, 2048));
	fill_pat(tmp, 2048, 2);
	CHECK_MEM(got, tmp, 2048);
	hw_close(t);
	hw_close(d);
}

/* The dm-log-writes way to a crash state: replay to a mark, then cut. */
TEST(log_replay_onto_a_crash_device_then_a_cut)
{
	static uint8_t want[IMG];
	struct w a = { 0, 4096, 1, 0 }, b = { 4096, 4096, 2, 0 };
	struct hw_dev *d, *t;

	OPEN("log:mem:64k", d);
	CHECK_OK(dev_apply(d, &a));
	CHECK_OK(hw_flush(d));
	CHECK_OK(dev_apply(d, &b));
	CHECK_EQ(hw_log_mark(d, "after b"), 0);
	OPEN("crash:mem:64k", t);
	CHECK_OK(hw_log_replay(d, t, 0));
	CHECK_EQ(hw_crash_pending(t), 1);
	CHECK_OK(hw_crash_cut(t, NULL));
	model_apply(want, &a);
	CHECK_OK(hw_read(t, 0, got, IMG));
	CHECK_MEM(got, want, IMG);
	hw_close(t);
	hw_close(d);
}

/* ---- the layer grammar ----------------------------------------------- */

TEST(layers_stack_and_keep_their_specs)
{
	char desc[512];
	struct hw_dev *d;

	OPEN("log:crash[]:faulty[sticky]:mem:64k", d);
	CHECK(strcmp(hw_spec(d), "log:crash[]:faulty[sticky]:mem:64k") == 0);
	CHECK_EQ(hw_size(d), DEV);
	CHECK_OK(hw_describe(d, desc, sizeof(desc)));
	CHECK_MSG(strcmp(desc, "log over crash over faulty over mem: 65536 bytes") == 0,
		  "%s", desc);
	CHECK_OK(hw_write(d, 0, "x", 1, 0));
	CHECK_EQ(hw_crash_pending(d), 1);
	hw_close(d);
}

TEST(layer_spec_errors_say_what_is_wrong)
{
	char deep[256] = "";

	OPEN_FAILS("crash:", -EINVAL, "crash layer without a device to stack on");
	OPEN_FAILS("crash", -EINVAL, "no device kind in 'crash'");
	OPEN_FAILS("crash[]", -EINVAL, "without a device to stack on");
	OPEN_FAILS("faulty[write=1:mem:64k", -EINVAL, "unclosed '['");
	OPEN_FAILS("faulty[write=x]:mem:64k", -EINVAL, "bad write 'x'");
	OPEN_FAILS("faulty[write]:mem:64k", -EINVAL, "missing write");
	OPEN_FAILS("faulty[write=0]:mem:64k", -EINVAL, "counted from 1");
	OPEN_FAILS("faulty[bogus=1]:mem:64k", -EINVAL,
		   "unknown option 'bogus' in 'faulty[bogus=1]:mem:64k' (faulty accepts: read, write, flush, zone, off, len, sticky)");
	OPEN_FAILS("faulty[off=4k]:mem:64k", -EINVAL, "go together");
	OPEN_FAILS("faulty[off=64k,len=4k]:mem:64k", -EINVAL, "outside the device");
	OPEN_FAILS("faulty[sticky=1]:mem:64k", -EINVAL, "takes no value");
	OPEN_FAILS("faulty[write=1,write=2]:mem:64k", -EINVAL, "given twice");
	OPEN_FAILS("crash[atomic=3]:mem:64k", -EINVAL, "power of two");
	OPEN_FAILS("crash[atomic=2m]:mem:64k", -EINVAL, "power of two");
	/* a zone's write pointer is rewound at a cut, in whole sectors */
	OPEN_FAILS("crash[atomic=8]:zoned:mem,size=1m,zone=64k", -EINVAL,
		   "a zoned device tears in whole sectors (512 bytes)");
	OPEN_FAILS("log[x=1]:mem:64k", -EINVAL, "log takes no options");
	OPEN_FAILS("crash:nope:1", -EINVAL, "unknown device kind 'nope' in 'nope:1'");
	OPEN_FAILS("crash:mem:100", -EINVAL, "not a multiple of 4096");
	OPEN_FAILS("mem[x]:64k", -EINVAL, "'mem' is a device, not a layer");
	OPEN_FAILS("crush:mem:64k", -EINVAL, "expected null, mem, file, pmem, zoned, zbd, crash, faulty, log");
	for (int i = 0; i < 9; i++)
		strcat(deep, "log:");
	strcat(deep, "mem:64k");
	OPEN_FAILS(deep, -EINVAL, "more than 8 layers");
}

TEST(help_names_every_kind)
{
	const char *h = hw_devices_help();
	static const char *const kinds[] = {
		"mem:SIZE", "file:PATH", "null:SIZE", "pmem:PATH", "zoned:mem",
		"zoned:file", "zbd:PATH", "crash[", "faulty[", "log:DEV",
		"emulated", "store", "granularity",
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		CHECK_MSG(strstr(h, kinds[i]), "help lacks %s", kinds[i]);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}

/*
 * The crash layer's record bytes come from an arena (hw/arena.c):
 * allocations apart, with a poisoned redzone after each under ASan,
 * everything poisoned again at a reset, which keeps one block; a request
 * past the arena's limit is refused, for the caller to malloc.
 */
TEST(arena_hands_out_separate_bytes_and_resets_whole)
{
	struct hw_arena a = { 0 };
	uint8_t *p[40];

	for (int i = 0; i < 40; i++) {
		size_t len = 1 + (size_t)i * 9000;   /* some past a 1 MiB block */

		p[i] = hw_arena_alloc(&a, len);
		CHECK(p[i] != NULL);
		memset(p[i], i, len);
#ifdef FSO_POISON_ASAN
		CHECK(__asan_address_is_poisoned(p[i] + len));
#endif
	}
	for (int i = 0; i < 40; i++) {        /* nothing overwrote anything */
		size_t len = 1 + (size_t)i * 9000;

		for (size_t k = 0; k < len; k += 997)
			CHECK_EQ(p[i][k], i);
		CHECK_EQ(p[i][len - 1], i);
	}
	CHECK(a.total > ((size_t)1 << 20));   /* several blocks by now */
	hw_arena_reset(&a);
	CHECK(a.total >= ((size_t)1 << 20) && a.total < 2 * ((size_t)1 << 20));
#ifdef FSO_POISON_ASAN
	CHECK(__asan_address_is_poisoned(p[0]));
#endif
	CHECK(hw_arena_alloc(&a, HW_ARENA_MAX) == NULL);
	p[0] = hw_arena_alloc(&a, 100);
	CHECK(p[0] != NULL);
	/* a reset poisons what was handed out since the last; the rest of
	 * the block stayed poisoned from that one */
	p[1] = hw_arena_alloc(&a, 300000);
	CHECK(p[1] != NULL);
	memset(p[1], 1, 300000);
	hw_arena_reset(&a);
	CHECK(hw_arena_alloc(&a, 10) == p[0]); /* the kept block, from its start */
	hw_arena_reset(&a);
#ifdef FSO_POISON_ASAN
	for (size_t k = 0; k < ((size_t)1 << 20); k += 4099)
		CHECK_MSG(__asan_address_is_poisoned(p[0] + k),
			  "byte %zu of the kept block", k);
#endif
	hw_arena_free(&a);
	CHECK_EQ(a.total, 0);
}

/*
 * A device written again and again with no flush keeps every record's
 * bytes: past the arena's limit they come from malloc, and a cut still
 * undoes all of them (here 24 writes of 1 MiB, none durable: 48 MiB of
 * old and new bytes against the limit's 32).
 */
TEST(crash_records_past_the_arena_limit_still_undo)
{
	static uint8_t buf[1 << 20];
	struct hw_dev *d = NULL;
	char err[200];
	uint8_t back[16];

	CHECK_OK(hw_open("crash:mem:4m", &d, err, sizeof(err)));
	memset(buf, 0xa5, sizeof(buf));
	CHECK_OK(hw_write(d, 0, buf, sizeof(buf), 0));
	CHECK_OK(hw_flush(d));                /* 0xa5 is durable */
	for (int i = 0; i < 24; i++) {
		memset(buf, i, sizeof(buf));
		CHECK_OK(hw_write(d, (uint64_t)(i % 4) << 20, buf, sizeof(buf), 0));
	}
	CHECK(2 * 24 * sizeof(buf) > HW_ARENA_MAX);
	CHECK_EQ(hw_crash_pending(d), 24);
	CHECK_OK(hw_crash_cut(d, NULL));      /* drop them all */
	CHECK_OK(hw_read(d, 0, back, sizeof(back)));
	CHECK_EQ(back[0], 0xa5);
	CHECK_EQ(back[15], 0xa5);
	CHECK_OK(hw_read(d, 3u << 20, back, sizeof(back)));
	CHECK_EQ(back[0], 0);
	hw_close(d);
}
