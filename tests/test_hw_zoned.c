/*
 * test_hw_zoned.c - the zone rules, each against hand-written
 * expectations, and the zoned, zbd and zone-wrapper specs.
 *
 * Each rule is one body (ZONE_RULE) run against zoned:mem and
 * zoned:file with the same geometry, and written only in terms of that
 * geometry, so that it runs unchanged on a real device: with
 * FSO_ZONED_SPEC=SPEC in the environment (e.g. zbd:/dev/nullb0, or a
 * zoned:mem spec of another shape) this program runs only the rules, as
 * zoned_dev_NAME, on SPEC, and says "skip" with the reason for each rule
 * the device's geometry does not allow (hw/lab runs it so on null_blk).
 * A body resets every sequential zone first, which a real device needs
 * and an emulated one does not mind.  The rules need 512-byte sectors,
 * two sequential zones and a capacity of at least 12 KiB; what a rule
 * needs beyond that is written next to its name.
 */
#include "hw/hw.h"
#include "hw/hw_internal.h"
#include "tests/test.h"
#include "tests/test_hw_util.h"
#include "harness/rng.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>

#define SHAPE "size=128k,zone=16k,cap=12k,conv=1,append_max=4k,max_open=2,max_active=3"

/* The geometry a rule body works in. */
struct zg {
	uint64_t zs, cap;
	uint64_t app;           /* the device's append limit               */
	uint64_t step;          /* append size the rules fill zones with   */
	uint64_t S;             /* the first sequential zone (= nconv)     */
	uint64_t nseq;          /* sequential zones                        */
	uint32_t mo, ma;        /* max open / max active, 0 = none         */
	bool ro_off;            /* the last two zones: read-only, offline  */
	uint8_t fill;           /* what unwritten sectors read as          */
};

static uint64_t zstart(const struct zg *g, uint64_t i)
{
	return i * g->zs;
}

/* Buffers for whole zones: at least 64 KiB, grown by zgeo(). */
static uint8_t *wbuf, *rbuf;
static size_t bufsz;

static bool zbufs(size_t n)
{
	uint8_t *w, *r;

	if (n <= bufsz)
		return true;
	w = realloc(wbuf, n);
	if (w)
		wbuf = w;
	r = realloc(rbuf, n);
	if (r)
		rbuf = r;
	if (!w || !r)
		return false;
	bufsz = n;
	return true;
}

/* d's geometry in g, or the reason the rules cannot run on d. */
static const char *zgeo(struct hw_dev *d, struct zg *g)
{
	const struct hw_geometry *geo = &d->geo;

	if (!(geo->caps & HW_CAP_ZONED))
		return "not a zoned device";
	if (geo->sector_size != 512)
		return "the rules are written for 512-byte sectors";
	if (geo->nr_zones < (uint64_t)geo->nr_conv + 2)
		return "fewer than 2 sequential zones";
	g->zs = geo->zone_size;
	g->S = geo->nr_conv;
	g->nseq = geo->nr_zones - geo->nr_conv;
	g->cap = zone_at(d, g->S).capacity;
	g->app = geo->max_append;
	g->mo = geo->max_open;
	g->ma = geo->max_active;
	g->step = g->app < g->cap / 3 ? g->app : g->cap / 3 / 512 * 512;
	g->ro_off = zone_at(d, geo->nr_zones - 1).cond == HW_ZC_OFFLINE &&
		    zone_at(d, geo->nr_zones - 2).cond == HW_ZC_READONLY;
	if (g->cap < 12 * KiB || g->cap > g->zs || g->cap % 512)
		return "zone capacity below 12 KiB";
	if (g->app < 2048 || g->app % 512)
		return "append limit below 2 KiB or not in whole sectors";
	if (g->zs > SIZE_MAX / 2 || !zbufs(2 * g->zs))
		return "no memory for buffers of two zones";
	return NULL;
}

static bool all_byte(const uint8_t *p, size_t len, uint8_t b)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != b)
			return false;
	return true;
}

/*
 * The rules' geometry; resets the sequential zones.  Unwritten sectors
 * read as zeros on the emulation; a real device picks its own fill
 * (ZBC and ZNS allow either; null_blk's is 0xff), but one byte, never
 * what was there before a reset.
 */
static bool zshape(struct hw_dev *d, struct zg *g)
{
	const char *why = zgeo(d, g);
	uint8_t sec[512];

	if (why) {
		test_fail(__FILE__, __LINE__, "'%s': %s", hw_spec(d), why);
		return false;
	}
	for (uint64_t i = g->S; i < d->geo.nr_zones; i++) {
		uint8_t c = zone_at(d, i).cond;

		if (c != HW_ZC_EMPTY && c != HW_ZC_READONLY &&
		    c != HW_ZC_OFFLINE && hw_zone_mgmt(d, HW_ZONE_RESET, i))
			return false;
	}
	if (hw_read(d, zstart(g, g->S), sec, sizeof(sec)))
		return false;
	g->fill = sec[0];
	if (!all_byte(sec, sizeof(sec), g->fill) ||
	    (g->fill && strcmp(d->ops->name, "zbd") != 0)) {
		test_fail(__FILE__, __LINE__,
			  "'%s': an empty zone does not read as one fill byte (0 on emulation)",
			  hw_spec(d));
		return false;
	}
	hw_reset_counters(d);   /* the rules count from here */
	return true;
}

#define ZOPEN(spec, d, g)                                                 \
	do {                                                              \
		OPEN(spec, d);                                            \
		CHECK_MSG(zshape(d, &(g)), "'%s' is not the rules' shape", \
			  (spec));                                        \
	} while (0)

/* Zone i is in condition c with its write pointer at start + wp_rel. */
#define ZSTATE(d, g, i, c, wp_rel)                                        \
	do {                                                              \
		struct hw_zone z_ = zone_at((d), (i));                       \
		CHECK_MSG(z_.cond == (c) &&                               \
			  z_.wp == zstart(&(g), (i)) + (wp_rel),          \
			  "zone %d: cond %u wp +%lld, want cond %u wp +%lld", \
			  (int)(i), z_.cond,                              \
			  (long long)(z_.wp - zstart(&(g), (i))),         \
			  (unsigned)(c), (long long)(wp_rel));            \
	} while (0)

typedef void (*zone_rule)(const char *spec);
typedef bool (*zone_need)(const struct zg *g);

/* Run a rule on zoned:mem or, in a scratch directory, zoned:file. */
static void run_rule(zone_rule rule, bool file, const char *shape)
{
	char spec[256];
	struct hw_tmp t;

	if (!file) {
		snprintf(spec, sizeof(spec), "zoned:mem,%s", shape);
		rule(spec);
		return;
	}
	if (!hw_tmp_init(&t)) {
		test_fail(__FILE__, __LINE__, "mkdtemp failed");
		return;
	}
	snprintf(spec, sizeof(spec), "zoned:file,path=%s,%s", t.path, shape);
	rule(spec);
	hw_tmp_done(&t);
}

/* Every rule, for FSO_ZONED_SPEC runs. */
struct zone_rule_def {
	const char *name;       /* zoned_dev_NAME                          */
	test_fn dev_test;       /* the rule on dev_spec                    */
	zone_need need;         /* what the rule needs of the geometry     */
	const char *why;        /* ... as written                          */
	const char *shape;      /* the emulated shape it runs on           */
};

#define MAX_RULES 32
static struct zone_rule_def rules[MAX_RULES];
static int nrules;
static const char *dev_spec;

static void add_rule(const struct zone_rule_def *r)
{
	if (nrules == MAX_RULES) {
		fprintf(stderr, "test_hw_zoned: more than %d rules\n", MAX_RULES);
		exit(2);
	}
	rules[nrules++] = *r;
}

/*
 * A rule: TEST(zoned_mem_NAME) and TEST(zoned_file_NAME) on the given
 * shape, and zoned_dev_NAME for FSO_ZONED_SPEC.  NEED is an expression
 * on `const struct zg *g`.
 */
#define ZONE_RULE_SHAPE(name, shape, need)                                \
	static void rule_##name(const char *spec);                        \
	static bool need_##name(const struct zg *g) { return (need); }    \
	static void dev_##name(void) { rule_##name(dev_spec); }           \
	TEST(zoned_mem_##name) { run_rule(rule_##name, false, shape); }   \
	TEST(zoned_file_##name) { run_rule(rule_##name, true, shape); }   \
	__attribute__((constructor)) static void def_##name(void)         \
	{                                                                 \
		struct zone_rule_def r_ = { "zoned_dev_" #name, dev_##name, \
					    need_##name, #need, shape };  \
		add_rule(&r_);                                            \
	}                                                                 \
	static void rule_##name(const char *spec)

#define ZONE_RULE(name, need) ZONE_RULE_SHAPE(name, SHAPE, need)
#define ANY true

/* ---- the rules ------------------------------------------------------ */

ZONE_RULE(report_shows_layout_conditions_and_capacity, ANY)
{
	struct hw_zone z[16];
	uint64_t nz;
	unsigned nr;
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	nz = d->geo.nr_zones;
	/* In batches of 16, as a caller with a small array would. */
	for (uint64_t at = 0; at < nz; at += nr) {
		nr = 16;
		CHECK_OK(hw_report_zones(d, at, z, &nr));
		CHECK_EQ(nr, nz - at < 16 ? nz - at : 16);
		for (unsigned k = 0; k < nr; k++) {
			uint64_t i = at + k;

			CHECK_EQ(z[k].start, i * g.zs);
			CHECK_EQ(z[k].len, g.zs);
			if (i < g.S) {
				/* Conventional: no write pointer, reported
				 * at the zone's end. */
				CHECK_EQ(z[k].type, HW_ZONE_CONV);
				CHECK_EQ(z[k].cond, HW_ZC_NOT_WP);
				CHECK_EQ(z[k].capacity, g.zs);
				CHECK_EQ(z[k].wp, (i + 1) * g.zs);
				continue;
			}
			CHECK_EQ(z[k].type, HW_ZONE_SEQ);
			CHECK_EQ(z[k].cond, HW_ZC_EMPTY);
			CHECK_EQ(z[k].capacity, g.cap);
			CHECK_EQ(z[k].wp, i * g.zs);
		}
	}
	/* From the middle, clipped to the end. */
	nr = 16;
	CHECK_OK(hw_report_zones(d, nz - 2, z, &nr));
	CHECK_EQ(nr, 2);
	CHECK_EQ(z[1].start, (nz - 1) * g.zs);
	hw_close(d);
}

ZONE_RULE(write_at_write_pointer_advances_it_and_opens_implicitly, ANY)
{
	uint64_t s;
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	s = zstart(&g, g.S);
	fill_pat(wbuf, 8192, 1);
	CHECK_OK(hw_write(d, s, wbuf, 4096, 0));
	ZSTATE(d, g, g.S, HW_ZC_IMP_OPEN, 4096);
	CHECK_OK(hw_write(d, s + 4096, wbuf + 4096, 4096, 0));
	ZSTATE(d, g, g.S, HW_ZC_IMP_OPEN, 8192);
	CHECK_OK(hw_read(d, s, rbuf, 8192));
	CHECK_MEM(rbuf, wbuf, 8192);
	hw_close(d);
}

ZONE_RULE(write_not_at_write_pointer_is_eio_and_changes_nothing, ANY)
{
	uint64_t s;
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	s = zstart(&g, g.S);
	fill_pat(wbuf, 4096, 2);
	CHECK_EQ(hw_write(d, s + 4096, wbuf, 4096, 0), -EIO);   /* ahead */
	ZSTATE(d, g, g.S, HW_ZC_EMPTY, 0);
	CHECK_OK(hw_write(d, s, wbuf, 4096, 0));
	CHECK_EQ(hw_write(d, s, wbuf, 4096, 0), -EIO);          /* behind */
	CHECK_EQ(hw_write(d, s + 512, wbuf, 512, 0), -EIO);
	ZSTATE(d, g, g.S, HW_ZC_IMP_OPEN, 4096);
	CHECK_EQ(d->ctr.writes, 1);
	/* Sector-unaligned offset or length: -EINVAL, as direct I/O says. */
	CHECK_EQ(hw_write(d, s + 4096, wbuf, 100, 0), -EINVAL);
	CHECK_EQ(hw_write(d, s + 4096 + 1, wbuf, 512, 0), -EINVAL);
	ZSTATE(d, g, g.S, HW_ZC_IMP_OPEN, 4096);
	hw_close(d);
}

ZONE_RULE(write_past_capacity_is_eio_and_filling_it_makes_the_zone_full, ANY)
{
	uint64_t s;
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	s = zstart(&g, g.S);
	fill_pat(wbuf, g.zs, 3);
	CHECK_OK(hw_write(d, s, wbuf, g.cap - 4096, 0));
	/* Crossing the capacity, even inside the zone's size: -EIO.  (With
	 * capacity = size that write is at the next zone's write pointer
	 * from its middle on, and a real device splits it there.) */
	if (g.cap < g.zs) {
		CHECK_EQ(hw_write(d, s + g.cap - 4096, wbuf, 8192, 0), -EIO);
		ZSTATE(d, g, g.S, HW_ZC_IMP_OPEN, g.cap - 4096);
	}
	CHECK_OK(hw_write(d, s + g.cap - 4096, wbuf, 4096, 0));
	ZSTATE(d, g, g.S, HW_ZC_FULL, g.cap);
	CHECK_EQ(hw_write(d, s + g.cap - 512, wbuf, 512, 0), -EIO);
	if (g.cap < g.zs) {
		CHECK_EQ(hw_write(d, s + g.cap, wbuf, 512, 0), -EIO);
		/* Between capacity and size: never written, reads zeros. */
		memset(rbuf, 0xee, g.zs - g.cap);
		CHECK_OK(hw_read(d, s + g.cap, rbuf, g.zs - g.cap));
		CHECK(all_byte(rbuf, g.zs - g.cap, g.fill));
	}
	hw_close(d);
}

ZONE_RULE(append_returns_where_it_wrote_and_keeps_its_limits, ANY)
{
	uint64_t s, a, at = 1;
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	s = zstart(&g, g.S);
	a = g.step;
	fill_pat(wbuf, g.app + 2048, 4);
	CHECK_OK(hw_zone_append(d, g.S, wbuf, 2048, 0, &at));
	CHECK_EQ(at, s);
	CHECK_OK(hw_zone_append(d, g.S, wbuf + 2048, a, 0, &at));
	CHECK_EQ(at, s + 2048);
	ZSTATE(d, g, g.S, HW_ZC_IMP_OPEN, 2048 + a);
	CHECK_OK(hw_read(d, s, rbuf, 2048 + a));
	CHECK_MEM(rbuf, wbuf, 2048 + a);
	CHECK_EQ(d->ctr.zone_appends, 2);

	/* Over the append limit: -EINVAL; not a whole sector: -EINVAL. */
	CHECK_EQ(hw_zone_append(d, g.S, wbuf, g.app + 512, 0, &at), -EINVAL);
	CHECK_EQ(hw_zone_append(d, g.S, wbuf, 100, 0, &at), -EINVAL);
	/* A conventional zone has no write pointer to append at. */
	if (g.S > 0)
		CHECK_EQ(hw_zone_append(d, 0, wbuf, 512, 0, &at), -EIO);
	ZSTATE(d, g, g.S, HW_ZC_IMP_OPEN, 2048 + a);
	CHECK_EQ(d->ctr.zone_appends, 2);

	/* Up to the capacity: past it -EIO, at it FULL, then -EIO. */
	for (uint64_t wp = 2048 + a;; wp += a) {
		uint64_t rem = g.cap - wp;

		if (rem <= a) {
			if (rem + 512 <= g.app)
				CHECK_EQ(hw_zone_append(d, g.S, wbuf, rem + 512,
							0, &at), -EIO);
			CHECK_OK(hw_zone_append(d, g.S, wbuf, rem, 0, &at));
			CHECK_EQ(at, s + wp);
			break;
		}
		CHECK_OK(hw_zone_append(d, g.S, wbuf, a, 0, &at));
		CHECK_EQ(at, s + wp);
	}
	ZSTATE(d, g, g.S, HW_ZC_FULL, g.cap);
	CHECK_EQ(hw_zone_append(d, g.S, wbuf, 512, 0, &at), -EIO);

	/* Exactly the limit, into the next zone. */
	CHECK_OK(hw_zone_append(d, g.S + 1, wbuf, g.app, 0, &at));
	CHECK_EQ(at, zstart(&g, g.S + 1));
	ZSTATE(d, g, g.S + 1, g.app == g.cap ? HW_ZC_FULL : HW_ZC_IMP_OPEN,
	       g.app);
	CHECK_OK(hw_read(d, zstart(&g, g.S + 1), rbuf, g.app));
	CHECK_MEM(rbuf, wbuf, g.app);
	hw_close(d);
}

ZONE_RULE(reads_beyond_the_write_pointer_return_zeros, ANY)
{
	uint64_t s;
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	s = zstart(&g, g.S);
	fill_pat(wbuf, g.cap, 5);
	CHECK_OK(hw_write(d, s, wbuf, 4096, 0));
	memset(rbuf, 0xee, g.zs);
	CHECK_OK(hw_read(d, s, rbuf, g.zs));
	CHECK_MEM(rbuf, wbuf, 4096);
	CHECK(all_byte(rbuf + 4096, g.zs - 4096, g.fill));
	/* From the conventional zone below it, across its write pointer. */
	if (g.S > 0) {
		CHECK_OK(hw_write(d, s - 512, wbuf, 512, 0));
		memset(rbuf, 0xee, 1024 + 4096);
		CHECK_OK(hw_read(d, s - 512, rbuf, 1024 + 4096));
		CHECK_MEM(rbuf, wbuf, 512);
		CHECK_MEM(rbuf + 512, wbuf, 4096);
		CHECK(all_byte(rbuf + 512 + 4096, 512, g.fill));
	}
	/* Across a boundary into an empty zone. */
	CHECK_OK(hw_write(d, s + 4096, wbuf, g.cap - 4096, 0));
	memset(rbuf, 0xee, g.zs + 4096);
	CHECK_OK(hw_read(d, s, rbuf, g.zs + 4096));
	CHECK_MEM(rbuf, wbuf, 4096);
	CHECK_MEM(rbuf + 4096, wbuf, g.cap - 4096);
	CHECK(all_byte(rbuf + g.cap, g.zs - g.cap + 4096, g.fill));
	hw_close(d);
}

ZONE_RULE(conventional_zones_take_writes_anywhere_and_no_zone_commands,
	  g->S >= 1)
{
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	/* Out of order and overlapping, in whole sectors (a real device's
	 * rule; the emulation takes any byte). */
	fill_pat(wbuf, 8192, 6);
	CHECK_OK(hw_write(d, 8192, wbuf, 2048, 0));
	CHECK_OK(hw_write(d, 1024, wbuf + 2048, 4096, 0));
	CHECK_OK(hw_write(d, 8192 + 512, wbuf + 6144, 512, 0));
	CHECK_OK(hw_read(d, 1024, rbuf, 4096));
	CHECK_MEM(rbuf, wbuf + 2048, 4096);
	CHECK_OK(hw_read(d, 8192, rbuf, 2048));
	CHECK_MEM(rbuf, wbuf, 512);
	CHECK_MEM(rbuf + 512, wbuf + 6144, 512);
	CHECK_MEM(rbuf + 1024, wbuf + 1024, 1024);
	for (int op = HW_ZONE_RESET; op <= HW_ZONE_FINISH; op++)
		CHECK_EQ(hw_zone_mgmt(d, (enum hw_zone_op)op, 0), -EIO);
	CHECK_EQ(zone_at(d, 0).cond, HW_ZC_NOT_WP);
	hw_close(d);
}

/*
 * Which implicitly open zone makes room is the device's choice (the
 * emulation closes the oldest, null_blk the next in turn), so the rule
 * finds out which one it was and goes on from there.
 */
ZONE_RULE(open_limit_closes_an_implicit_zone_active_limit_fails,
	  g->mo == 2 && g->ma == 3 && g->nseq >= 4)
{
	uint64_t S, c, o, k, m;
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	S = g.S;
	fill_pat(wbuf, 4096, 7);
	CHECK_OK(hw_write(d, zstart(&g, S), wbuf, 512, 0));
	CHECK_OK(hw_write(d, zstart(&g, S + 1), wbuf, 512, 0));
	/* Third implicit open: one implicitly open zone closes. */
	CHECK_OK(hw_write(d, zstart(&g, S + 2), wbuf, 512, 0));
	c = zone_at(d, S).cond == HW_ZC_CLOSED ? S : S + 1;
	o = c == S ? S + 1 : S;
	ZSTATE(d, g, c, HW_ZC_CLOSED, 512);
	ZSTATE(d, g, o, HW_ZC_IMP_OPEN, 512);
	ZSTATE(d, g, S + 2, HW_ZC_IMP_OPEN, 512);
	/* Three active (2 open + 1 closed): a fourth zone cannot start. */
	CHECK_EQ(hw_write(d, zstart(&g, S + 3), wbuf, 512, 0), -EIO);
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_OPEN, S + 3), -EIO);
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_FINISH, S + 3), -EIO);
	ZSTATE(d, g, S + 3, HW_ZC_EMPTY, 0);
	/* Nor does the closed zone reopen: that would close an implicitly
	 * open zone, which null_blk does only with an active slot to spare
	 * (the emulation's regression test for what the lab found). */
	CHECK_EQ(hw_write(d, zstart(&g, c) + 512, wbuf, 512, 0), -EIO);
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_OPEN, c), -EIO);
	ZSTATE(d, g, c, HW_ZC_CLOSED, 512);
	/* Finishing one frees an open and an active slot: the closed zone
	 * reopens, and a new zone starts by closing an implicit one. */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, o));
	ZSTATE(d, g, o, HW_ZC_FULL, g.cap);
	CHECK_OK(hw_write(d, zstart(&g, c) + 512, wbuf, 512, 0));
	ZSTATE(d, g, c, HW_ZC_IMP_OPEN, 1024);
	CHECK_OK(hw_write(d, zstart(&g, S + 3), wbuf, 512, 0));
	ZSTATE(d, g, S + 3, HW_ZC_IMP_OPEN, 512);
	k = zone_at(d, c).cond == HW_ZC_CLOSED ? c : S + 2;
	m = k == c ? S + 2 : c;
	CHECK_EQ(zone_at(d, k).cond, HW_ZC_CLOSED);
	CHECK_EQ(zone_at(d, m).cond, HW_ZC_IMP_OPEN);
	/* Explicit opens of open zones take no slot; with both open zones
	 * explicit, nothing can be closed to make room. */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_OPEN, S + 3));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_OPEN, m));
	CHECK_EQ(zone_at(d, m).cond, HW_ZC_EXP_OPEN);
	CHECK_EQ(hw_write(d, zone_at(d, k).wp, wbuf, 512, 0), -EIO);
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_OPEN, k), -EIO);
	/* Closing an explicit zone makes room. */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_CLOSE, S + 3));
	ZSTATE(d, g, S + 3, HW_ZC_CLOSED, 512);
	CHECK_OK(hw_write(d, zone_at(d, k).wp, wbuf, 512, 0));
	CHECK_EQ(zone_at(d, k).cond, HW_ZC_IMP_OPEN);
	hw_close(d);
}

ZONE_RULE(finish_reset_open_close_move_zones_between_conditions, ANY)
{
	uint64_t S, s;
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	S = g.S;
	s = zstart(&g, S);
	fill_pat(wbuf, g.zs, 8);

	/* EMPTY -open-> EXP_OPEN -close-> EMPTY (nothing written). */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_OPEN, S));
	ZSTATE(d, g, S, HW_ZC_EXP_OPEN, 0);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_OPEN, S));      /* no-op */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_CLOSE, S));
	ZSTATE(d, g, S, HW_ZC_EMPTY, 0);
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_CLOSE, S), -EIO);

	/* A write keeps an explicit open explicit; close -> CLOSED. */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_OPEN, S));
	CHECK_OK(hw_write(d, s, wbuf, 4096, 0));
	ZSTATE(d, g, S, HW_ZC_EXP_OPEN, 4096);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_CLOSE, S));
	ZSTATE(d, g, S, HW_ZC_CLOSED, 4096);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_CLOSE, S));     /* no-op */
	CHECK_OK(hw_write(d, s + 4096, wbuf + 4096, 4096, 0));
	ZSTATE(d, g, S, HW_ZC_IMP_OPEN, 8192);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_OPEN, S));      /* IMP -> EXP */
	ZSTATE(d, g, S, HW_ZC_EXP_OPEN, 8192);

	/* Filling an explicit zone makes it FULL; finish is then a no-op. */
	CHECK_OK(hw_write(d, s + 8192, wbuf + 8192, g.cap - 8192, 0));
	ZSTATE(d, g, S, HW_ZC_FULL, g.cap);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, S));
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_OPEN, S), -EIO);
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_CLOSE, S), -EIO);

	/* Reset: EMPTY, data gone; reset of an empty zone is a no-op. */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, S));
	ZSTATE(d, g, S, HW_ZC_EMPTY, 0);
	CHECK_OK(hw_read(d, s, rbuf, g.zs));
	CHECK(all_byte(rbuf, g.zs, g.fill));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, S));

	/* Finish of a partly written zone: FULL; what it skipped reads as
	 * one byte, zeros or the fill (null_blk: zeros, memory that was
	 * never written), never old data. */
	CHECK_OK(hw_write(d, s, wbuf, 4096, 0));
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, S));
	ZSTATE(d, g, S, HW_ZC_FULL, g.cap);
	CHECK_OK(hw_read(d, s, rbuf, g.zs));
	CHECK_MEM(rbuf, wbuf, 4096);
	CHECK(all_byte(rbuf + 4096, g.zs - 4096, 0) ||
	      all_byte(rbuf + 4096, g.zs - 4096, g.fill));
	/* Finish of an empty zone. */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, S + 1));
	ZSTATE(d, g, S + 1, HW_ZC_FULL, g.cap);
	CHECK_EQ(d->ctr.zone_finishes, 3);
	CHECK_EQ(d->ctr.zone_resets, 2);
	hw_close(d);
}

ZONE_RULE(write_from_a_conventional_zone_into_a_sequential_one_is_split,
	  g->S >= 1)
{
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	fill_pat(wbuf, 8192, 9);
	/* Into the empty first sequential zone at its write pointer: both
	 * pieces land. */
	CHECK_OK(hw_write(d, zstart(&g, g.S) - 4096, wbuf, 8192, 0));
	ZSTATE(d, g, g.S, HW_ZC_IMP_OPEN, 4096);
	CHECK_OK(hw_read(d, zstart(&g, g.S) - 4096, rbuf, 8192));
	CHECK_MEM(rbuf, wbuf, 8192);
	/* Now the second piece is behind the write pointer: -EIO, after
	 * the first piece was written, as a split bio would be. */
	fill_pat(wbuf, 8192, 10);
	CHECK_EQ(hw_write(d, zstart(&g, g.S) - 4096, wbuf, 8192, 0), -EIO);
	CHECK_OK(hw_read(d, zstart(&g, g.S) - 4096, rbuf, 4096));
	CHECK_MEM(rbuf, wbuf, 4096);
	ZSTATE(d, g, g.S, HW_ZC_IMP_OPEN, 4096);
	hw_close(d);
}

ZONE_RULE_SHAPE(read_only_and_offline_zones_refuse_what_they_must,
		SHAPE ",readonly=1,offline=1", g->ro_off)
{
	uint64_t ro, off, at;
	struct hw_dev *d;
	struct zg g;

	ZOPEN(spec, d, g);
	off = d->geo.nr_zones - 1;
	ro = off - 1;
	CHECK_EQ(zone_at(d, ro).cond, HW_ZC_READONLY);
	CHECK_EQ(zone_at(d, off).cond, HW_ZC_OFFLINE);
	CHECK_EQ(zone_at(d, ro - 1).cond, HW_ZC_EMPTY);
	fill_pat(wbuf, 4096, 11);

	/* Read-only: reads work, nothing else does. */
	memset(rbuf, 0xee, 4096);
	CHECK_OK(hw_read(d, zstart(&g, ro), rbuf, 4096));
	CHECK(all_byte(rbuf, 4096, g.fill));
	CHECK_EQ(hw_write(d, zstart(&g, ro), wbuf, 4096, 0), -EIO);
	CHECK_EQ(hw_zone_append(d, ro, wbuf, 512, 0, &at), -EIO);
	for (int op = HW_ZONE_RESET; op <= HW_ZONE_FINISH; op++)
		CHECK_EQ(hw_zone_mgmt(d, (enum hw_zone_op)op, ro), -EIO);
	/* Offline: not even reads, also when a read only passes through. */
	CHECK_EQ(hw_read(d, zstart(&g, off), rbuf, 4096), -EIO);
	CHECK_EQ(hw_read(d, zstart(&g, off) - 512, rbuf, 1024), -EIO);
	CHECK_EQ(hw_write(d, zstart(&g, off), wbuf, 4096, 0), -EIO);
	for (int op = HW_ZONE_RESET; op <= HW_ZONE_FINISH; op++)
		CHECK_EQ(hw_zone_mgmt(d, (enum hw_zone_op)op, off), -EIO);
	CHECK_EQ(zone_at(d, ro).cond, HW_ZC_READONLY);
	CHECK_EQ(zone_at(d, off).cond, HW_ZC_OFFLINE);
	/* They take no open or active slot. */
	CHECK_OK(hw_write(d, zstart(&g, g.S), wbuf, 512, 0));
	CHECK_OK(hw_write(d, zstart(&g, g.S + 1), wbuf, 512, 0));
	CHECK_OK(hw_write(d, zstart(&g, g.S + 2), wbuf, 512, 0));
	hw_close(d);
}

/* ---- the wrappers --------------------------------------------------- */

TEST(zone_calls_on_a_device_without_zones_are_eopnotsupp)
{
	struct hw_zone z;
	unsigned nr = 1;
	uint64_t at;
	struct hw_dev *d;

	OPEN("mem:64k", d);
	CHECK_EQ(hw_report_zones(d, 0, &z, &nr), -EOPNOTSUPP);
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_RESET, 0), -EOPNOTSUPP);
	CHECK_EQ(hw_zone_append(d, 0, "x", 1, 0, &at), -EOPNOTSUPP);
	CHECK_EQ(d->geo.nr_zones, 0);
	hw_close(d);
}

TEST(zone_call_arguments_are_checked_before_the_device)
{
	struct hw_zone z[4];
	unsigned nr;
	uint64_t at;
	struct hw_dev *d;

	OPEN("zoned:mem," SHAPE, d);
	nr = 1;
	CHECK_EQ(hw_report_zones(d, 9, z, &nr), -EINVAL);
	nr = 1;
	CHECK_EQ(hw_report_zones(d, 0, NULL, &nr), -EINVAL);
	CHECK_EQ(hw_report_zones(d, 0, z, NULL), -EINVAL);
	nr = 4;
	CHECK_OK(hw_report_zones(d, 8, z, &nr));
	CHECK_EQ(nr, 0);
	CHECK_EQ(hw_zone_mgmt(d, HW_ZONE_RESET, 8), -EINVAL);
	CHECK_EQ(hw_zone_mgmt(d, (enum hw_zone_op)0, 1), -EINVAL);
	CHECK_EQ(hw_zone_mgmt(d, (enum hw_zone_op)5, 1), -EINVAL);
	CHECK_EQ(hw_zone_append(d, 8, wbuf, 512, 0, &at), -EINVAL);
	CHECK_EQ(hw_zone_append(d, 1, NULL, 512, 0, &at), -EINVAL);
	CHECK_EQ(hw_zone_append(d, 1, wbuf, 0, 0, &at), -EINVAL);
	CHECK_EQ(hw_zone_append(d, 1, wbuf, 512, 0x80, &at), -EINVAL);
	/* A counted append that does not want the place back. */
	CHECK_OK(hw_zone_append(d, 1, wbuf, 512, HW_FUA | HW_META, NULL));
	CHECK_EQ(d->ctr.zone_appends, 1);
	CHECK_EQ(d->ctr.writes, 1);
	CHECK_EQ(d->ctr.fua_writes, 1);
	CHECK_EQ(d->ctr.meta_writes, 1);
	CHECK_EQ(d->ctr.bytes_written, 512);
	hw_close(d);
}

/* ---- zoned: specs ---------------------------------------------------- */

TEST(zoned_spec_geometry_defaults_follow_null_blk)
{
	char desc[256];
	struct hw_dev *d;

	OPEN("zoned:mem,size=1g", d);
	CHECK_EQ(d->geo.zone_size, 256 * MiB);
	CHECK_EQ(d->geo.nr_zones, 4);
	CHECK_EQ(d->geo.nr_conv, 0);
	CHECK_EQ(d->geo.max_open, 0);
	CHECK_EQ(d->geo.max_active, 0);
	CHECK_EQ(d->geo.max_append, 256 * MiB);    /* the capacity */
	CHECK(d->geo.caps & HW_CAP_ZONED);
	CHECK(d->geo.caps & HW_CAP_STORES_DATA);
	CHECK(!(d->geo.caps & HW_CAP_ZERO_FREES)); /* zones have rules */
	CHECK_EQ(zone_at(d, 0).capacity, 256 * MiB);
	CHECK_OK(hw_describe(d, desc, sizeof(desc)));
	CHECK_MSG(strcmp(desc, "zoned (emulated: ZBC/ZNS rules in software) over mem: 4 zones of 256m, capacity 256m, 0 conventional, max_open 0, max_active 0 (0 = none), append_max 256m") == 0,
		  "%s", desc);
	hw_close(d);

	/* The example, as typed. */
	OPEN("zoned:mem,size=1g,zone=64m,cap=48m,conv=2,append_max=672k,max_open=14,max_active=14", d);
	CHECK_EQ(d->geo.nr_zones, 16);
	CHECK_EQ(d->geo.nr_conv, 2);
	CHECK_EQ(d->geo.max_open, 0);      /* 14 of 14 sequential: no limit */
	CHECK_EQ(d->geo.max_active, 0);
	CHECK_EQ(d->geo.max_append, 672 * KiB);
	CHECK_EQ(zone_at(d, 2).capacity, 48 * MiB);
	CHECK_EQ(zone_at(d, 1).type, HW_ZONE_CONV);
	hw_close(d);

	/* max_open above max_active is lowered; append_max capped at cap. */
	OPEN("zoned:mem,size=128k,zone=16k,cap=8k,max_open=5,max_active=3,append_max=1m", d);
	CHECK_EQ(d->geo.max_open, 3);
	CHECK_EQ(d->geo.max_active, 3);
	CHECK_EQ(d->geo.max_append, 8 * KiB);
	hw_close(d);
}

TEST(zoned_spec_errors_say_what_is_wrong)
{
	OPEN_FAILS("zoned:", -EINVAL, "must say where the zones live");
	OPEN_FAILS("zoned:disk,size=1m", -EINVAL, "zoned:mem,size=SIZE");
	OPEN_FAILS("zoned:mem", -EINVAL, "missing size");
	OPEN_FAILS("zoned:mem,zone=16k", -EINVAL, "missing size");
	OPEN_FAILS("zoned:mem,size=100k,zone=16k", -EINVAL,
		   "not a whole number of 16384-byte zones");
	OPEN_FAILS("zoned:mem,size=8k,zone=16k", -EINVAL, "not a whole number");
	OPEN_FAILS("zoned:mem,size=64k,zone=6000", -EINVAL,
		   "not a positive multiple of 4096");
	OPEN_FAILS("zoned:mem,size=64k,zone=0", -EINVAL, "zone size 0");
	OPEN_FAILS("zoned:mem,size=64k,zone=16k,cap=20k", -EINVAL,
		   "no larger than the zone size");
	OPEN_FAILS("zoned:mem,size=64k,zone=16k,cap=5000", -EINVAL,
		   "zone capacity 5000");
	OPEN_FAILS("zoned:mem,size=64k,zone=16k,conv=4", -EINVAL,
		   "leave none of the 4 zones sequential");
	OPEN_FAILS("zoned:mem,size=64k,zone=16k,append_max=1000", -EINVAL,
		   "append_max 1000");
	OPEN_FAILS("zoned:mem,size=64k,zone=16k,readonly=3,offline=2", -EINVAL,
		   "more than the 4 sequential zones");
	OPEN_FAILS("zoned:mem,size=64k,zone=16k,max_open=x", -EINVAL,
		   "bad max_open 'x'");
	OPEN_FAILS("zoned:mem,size=64k,conv=5000000000", -EINVAL,
		   "is above 4294967295");
	OPEN_FAILS("zoned:mem,size=64k,zone=16k,path=/tmp/x", -EINVAL,
		   "is for zoned:file");
	OPEN_FAILS("zoned:mem,size=64k,zones=4", -EINVAL,
		   "unknown option 'zones'");
	OPEN_FAILS("zoned:file,size=64k", -EINVAL, "missing path=");
}

/* ---- zoned:null: the rules without the data ------------------------- */

/* Every zone of a and b reported alike (start, capacity, wp, condition). */
static bool same_zones(struct hw_dev *a, struct hw_dev *b, char *why,
		       size_t len)
{
	for (uint64_t i = 0; i < a->geo.nr_zones; i++) {
		struct hw_zone x = zone_at(a, i), y = zone_at(b, i);

		if (x.start != y.start || x.len != y.len ||
		    x.capacity != y.capacity || x.wp != y.wp ||
		    x.type != y.type || x.cond != y.cond) {
			snprintf(why, len, "zone %llu: cond %u wp %llu on "
				 "mem, cond %u wp %llu on null",
				 (unsigned long long)i, x.cond,
				 (unsigned long long)x.wp, y.cond,
				 (unsigned long long)y.wp);
			return false;
		}
	}
	return true;
}

/*
 * A seeded random mix of writes (at the write pointer and off it, over
 * the capacity, unaligned), appends (over append_max too), zone commands,
 * flushes and reads, run on zoned:mem and zoned:null of one shape side by
 * side: every call returns the same on both, appends land at the same
 * place, the zones report the same after each step, and the I/O counters
 * agree.  What differs is the data: zoned:null reads zeros wherever
 * zoned:mem reads what was written.
 */
TEST(zoned_null_follows_the_zone_rules_and_reads_zeros)
{
	struct hw_dev *m, *n;
	struct rng r;
	char why[160];
	uint64_t zs, nz, seen_data = 0, rejected = 0;
	unsigned steps = 3000;

	OPEN("zoned:mem," SHAPE, m);
	OPEN("zoned:null," SHAPE, n);
	CHECK(n->geo.caps & HW_CAP_ZONED);
	CHECK(!(n->geo.caps & HW_CAP_STORES_DATA));
	CHECK(m->geo.caps & HW_CAP_STORES_DATA);
	zs = m->geo.zone_size;
	nz = m->geo.nr_zones;
	CHECK_EQ(n->geo.zone_size, zs);
	CHECK_EQ(n->geo.nr_zones, nz);
	CHECK_EQ(n->geo.max_append, m->geo.max_append);
	rng_seed(&r, 0x2011);
	for (unsigned s = 0; s < steps; s++) {
		uint64_t z = rng_below(&r, nz), wp = zone_at(m, z).wp;
		uint64_t len = 512 * (1 + rng_below(&r, 16)), off, am, an;
		unsigned flags = rng_below(&r, 4) ? 0 : HW_FUA;
		int rm = 0, rn = 0;

		fill_pat(wbuf, (size_t)len, s);
		switch (rng_below(&r, 8)) {
		case 0: case 1: case 2:   /* a write, usually at the wp */
			off = rng_below(&r, 4) ? wp : z * zs +
			      rng_below(&r, zs / 512) * 512;
			if (rng_below(&r, 16) == 0)
				len -= 100;         /* not whole sectors */
			if (off + len > nz * zs)
				break;
			rm = hw_write(m, off, wbuf, (size_t)len, flags);
			rn = hw_write(n, off, wbuf, (size_t)len, flags);
			break;
		case 3: case 4:           /* an append, some over the max */
			am = an = UINT64_MAX;
			rm = hw_zone_append(m, z, wbuf, (size_t)len, flags, &am);
			rn = hw_zone_append(n, z, wbuf, (size_t)len, flags, &an);
			CHECK_MSG(rm || am == an, "step %u: append at %llu on "
				  "mem, %llu on null", s,
				  (unsigned long long)am, (unsigned long long)an);
			break;
		case 5: {                 /* reset, open, close, finish */
			enum hw_zone_op op = (enum hw_zone_op)
					     (1 + rng_below(&r, 4));

			rm = hw_zone_mgmt(m, op, z);
			rn = hw_zone_mgmt(n, op, z);
			break;
		}
		case 6:
			rm = hw_flush(m);
			rn = hw_flush(n);
			break;
		default:                  /* a read of the zone's start */
			off = z * zs;
			rm = hw_read(m, off, rbuf, (size_t)zs);
			if (!rm && !all_zero(rbuf, (size_t)zs))
				seen_data++;
			memset(rbuf, 0xee, (size_t)zs);
			rn = hw_read(n, off, rbuf, (size_t)zs);
			CHECK_MSG(rn || all_zero(rbuf, (size_t)zs),
				  "step %u: zoned:null read data in zone %llu",
				  s, (unsigned long long)z);
			break;
		}
		rejected += rm != 0;
		CHECK_MSG(rm == rn, "step %u: %d on mem, %d on null", s, rm, rn);
		CHECK_MSG(same_zones(m, n, why, sizeof(why)), "step %u: %s", s,
			  why);
	}
	/* the mix reached both sides of the rules */
	CHECK_MSG(seen_data > 50 && rejected > 100,
		  "%llu reads saw data, %llu calls rejected",
		  (unsigned long long)seen_data, (unsigned long long)rejected);
	CHECK(memcmp(&m->ctr, &n->ctr, sizeof(m->ctr)) == 0);
	hw_close(m);
	hw_close(n);
}

TEST(zoned_null_spec_opens_any_size_and_says_what_it_is)
{
	char desc[256];
	struct hw_dev *d;

	/* 64 TiB of zones: nothing is allocated for the data */
	OPEN("zoned:null,size=64t,zone=1g,append_max=672k", d);
	CHECK_EQ(d->geo.nr_zones, 65536);
	CHECK_EQ(d->geo.max_append, 672 * KiB);
	CHECK_OK(hw_describe(d, desc, sizeof(desc)));
	CHECK_MSG(strstr(desc, "over null (data dropped, reads zeros)") != NULL,
		  "%s", desc);
	hw_close(d);
	OPEN_FAILS("zoned:null", -EINVAL, "missing size");
	OPEN_FAILS("zoned:null,size=64k,zone=16k,path=/tmp/x", -EINVAL,
		   "is for zoned:file");
}

/* ---- zoned:file across runs ----------------------------------------- */

TEST(zoned_file_keeps_zone_state_and_data_across_reopen)
{
	char spec[256];
	struct hw_dev *d;
	struct hw_tmp t;
	struct zg g;

	CHECK(hw_tmp_init(&t));
	snprintf(spec, sizeof(spec), "zoned:file,path=%s," SHAPE, t.path);
	ZOPEN(spec, d, g);
	fill_pat(wbuf, 8192, 12);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, 4));            /* FULL */
	CHECK_OK(hw_write(d, zstart(&g, 1), wbuf, 4096, 0));     /* IMP  */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_OPEN, 2));              /* EXP, empty */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_OPEN, 3));              /* closes 1 */
	CHECK_OK(hw_write(d, zstart(&g, 3), wbuf, 8192, 0));     /* EXP  */
	CHECK_OK(hw_write(d, 100, wbuf, 300, 0));                /* conv */
	hw_close(d);

	/* Geometry from PATH.zones; open zones come back closed. */
	snprintf(spec, sizeof(spec), "zoned:file,path=%s", t.path);
	OPEN(spec, d);
	CHECK_EQ(d->geo.nr_zones, 8);
	CHECK_EQ(d->geo.zone_size, 16 * KiB);
	CHECK_EQ(d->geo.max_open, 2);
	CHECK_EQ(d->geo.max_append, 4 * KiB);
	ZSTATE(d, g, 1, HW_ZC_CLOSED, 4096);
	ZSTATE(d, g, 2, HW_ZC_EMPTY, 0);
	ZSTATE(d, g, 3, HW_ZC_CLOSED, 8192);
	ZSTATE(d, g, 4, HW_ZC_FULL, 12 * KiB);
	ZSTATE(d, g, 5, HW_ZC_EMPTY, 0);
	CHECK_OK(hw_read(d, zstart(&g, 3), rbuf, 8192));
	CHECK_MEM(rbuf, wbuf, 8192);
	CHECK_OK(hw_read(d, 100, rbuf, 300));
	CHECK_MEM(rbuf, wbuf, 300);
	/* The limits count the closed zones: 2 active, one more may start. */
	CHECK_OK(hw_write(d, zstart(&g, 5), wbuf, 512, 0));
	CHECK_EQ(hw_write(d, zstart(&g, 6), wbuf, 512, 0), -EIO);
	hw_close(d);

	/* The same options again are fine, different ones are not. */
	snprintf(spec, sizeof(spec), "zoned:file,path=%s," SHAPE, t.path);
	OPEN(spec, d);
	hw_close(d);
	snprintf(spec, sizeof(spec), "zoned:file,path=%s,zone=32k", t.path);
	OPEN_FAILS(spec, -EINVAL, "differ from the zone geometry kept in");
	hw_tmp_done(&t);
}

/* Run body in a child that then dies without closing anything. */
static bool in_child_killed(const char *spec, int body)
{
	struct hw_dev *d;
	int status;
	char e[256];
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		if (hw_open(spec, &d, e, sizeof(e)))
			_exit(1);
		if (body == 0 &&
		    (hw_write(d, 16 * KiB, wbuf, 4096, 0) || hw_flush(d) ||
		     hw_write(d, 16 * KiB + 4096, wbuf + 4096, 4096, 0)))
			_exit(1);
		if (body == 1 && hw_write(d, 32 * KiB, wbuf, 512, HW_FUA))
			_exit(1);
		_exit(0);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/*
 * A process that dies between flushes: the write pointers of the last
 * flush (or FUA write) come back, and what was written after it reads
 * as zeros.
 */
TEST(zoned_file_write_pointer_is_durable_at_flush_not_before)
{
	char spec[256];
	struct hw_dev *d;
	struct hw_tmp t;
	struct zg g;

	CHECK(hw_tmp_init(&t));
	snprintf(spec, sizeof(spec), "zoned:file,path=%s," SHAPE, t.path);
	ZOPEN(spec, d, g);
	hw_close(d);
	fill_pat(wbuf, 8192, 13);
	CHECK(in_child_killed(spec, 0));
	CHECK(in_child_killed(spec, 1));
	OPEN(spec, d);
	ZSTATE(d, g, 1, HW_ZC_CLOSED, 4096);
	ZSTATE(d, g, 2, HW_ZC_CLOSED, 512);
	memset(rbuf, 0xee, 8192);
	CHECK_OK(hw_read(d, zstart(&g, 1), rbuf, 8192));
	CHECK_MEM(rbuf, wbuf, 4096);
	CHECK(all_zero(rbuf + 4096, 4096));
	/* And the zone takes writes at the durable write pointer. */
	CHECK_OK(hw_write(d, zstart(&g, 1) + 4096, wbuf, 512, 0));
	/* The lost bytes are still in the image: finish must not show them. */
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_FINISH, 1));
	CHECK_OK(hw_read(d, zstart(&g, 1) + 4608, rbuf, 8192 - 4608));
	CHECK(all_zero(rbuf, 8192 - 4608));
	hw_close(d);
	hw_tmp_done(&t);
}

static int flip_byte(const char *path, off_t at)
{
	uint8_t b;
	int fd = open(path, O_RDWR);

	if (fd < 0 || pread(fd, &b, 1, at) != 1)
		return -1;
	b ^= 0x40;
	if (pwrite(fd, &b, 1, at) != 1)
		return -1;
	return close(fd);
}

TEST(zoned_file_corrupt_or_missing_state_is_an_error_not_a_crash)
{
	char spec[256], zpath[160];
	struct hw_dev *d;
	struct hw_tmp t;

	CHECK(hw_tmp_init(&t));
	snprintf(zpath, sizeof(zpath), "%s.zones", t.path);
	snprintf(spec, sizeof(spec), "zoned:file,path=%s", t.path);
	OPEN_FAILS(spec, -EINVAL, "missing size");
	CHECK(access(t.path, F_OK) != 0 && access(zpath, F_OK) != 0);

	snprintf(spec, sizeof(spec), "zoned:file,path=%s," SHAPE, t.path);
	OPEN(spec, d);
	CHECK_OK(hw_write(d, 16 * KiB, wbuf, 4096, HW_FUA));
	hw_close(d);

	/* A flipped bit in zone 1's entry, then in the header. */
	CHECK_OK(flip_byte(zpath, 4096 + 16 + 1));
	OPEN_FAILS(spec, -EUCLEAN, "zone 1 in");
	CHECK_OK(flip_byte(zpath, 4096 + 16 + 1));
	OPEN(spec, d);
	hw_close(d);
	CHECK_OK(flip_byte(zpath, 20));
	OPEN_FAILS(spec, -EUCLEAN, "header is corrupt");
	CHECK_OK(flip_byte(zpath, 20));

	/* A short state file; an image gone with its state left behind. */
	CHECK_OK(truncate(zpath, 4096 + 40));
	OPEN_FAILS(spec, -EUCLEAN, "file too short");
	CHECK_OK(unlink(t.path));
	OPEN_FAILS(spec, -ENOENT, "is missing but its zone state");
	hw_tmp_done(&t);
}

/* CRC-32C, written here from its definition, to forge entries. */
static uint32_t crc32c_ref(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return ~crc;
}

/* Zone `zone`'s 16-byte entry: wp, cond, 3 zeros, crc of those + zone. */
static int forge_entry(const char *zpath, uint64_t zone, uint64_t wp,
		       uint8_t cond)
{
	uint8_t e[16] = { 0 }, z[8];
	uint32_t crc;
	int fd, rc;

	for (int i = 0; i < 8; i++) {
		e[i] = (uint8_t)(wp >> (8 * i));
		z[i] = (uint8_t)(zone >> (8 * i));
	}
	e[8] = cond;
	crc = crc32c_ref(crc32c_ref(0, e, 12), z, 8);
	for (int i = 0; i < 4; i++)
		e[12 + i] = (uint8_t)(crc >> (8 * i));
	fd = open(zpath, O_RDWR);
	if (fd < 0)
		return -1;
	rc = pwrite(fd, e, 16, (off_t)(4096 + zone * 16)) == 16 ? 0 : -1;
	close(fd);
	return rc;
}

TEST(zoned_file_state_breaking_a_zone_rule_is_corrupt)
{
	char spec[256], zpath[160];
	uint8_t e[16];
	struct hw_dev *d;
	struct hw_tmp t;
	int fd;

	CHECK(hw_tmp_init(&t));
	snprintf(zpath, sizeof(zpath), "%s.zones", t.path);
	snprintf(spec, sizeof(spec), "zoned:file,path=%s," SHAPE, t.path);
	OPEN(spec, d);
	CHECK_OK(hw_write(d, 2 * 16 * KiB, wbuf, 4096, 0));
	hw_close(d);

	/* The forger agrees with the device: an honest entry opens. */
	CHECK_OK(forge_entry(zpath, 1, 16 * KiB + 4096, HW_ZC_CLOSED));
	OPEN(spec, d);
	CHECK_EQ(zone_at(d, 1).cond, HW_ZC_CLOSED);
	CHECK_OK(hw_zone_mgmt(d, HW_ZONE_RESET, 1));
	hw_close(d);

	/* FULL below the capacity; EMPTY away from the start; a write
	 * pointer past the capacity; an unknown condition; a conventional
	 * zone with a condition. */
	CHECK_OK(forge_entry(zpath, 1, 16 * KiB + 4096, HW_ZC_FULL));
	OPEN_FAILS(spec, -EUCLEAN, "zone 1 of file");
	CHECK_OK(forge_entry(zpath, 1, 16 * KiB + 512, HW_ZC_EMPTY));
	OPEN_FAILS(spec, -EUCLEAN, "breaks the zone rules");
	CHECK_OK(forge_entry(zpath, 1, 16 * KiB + 13 * KiB, HW_ZC_CLOSED));
	OPEN_FAILS(spec, -EUCLEAN, "breaks the zone rules");
	CHECK_OK(forge_entry(zpath, 1, 16 * KiB, 9));
	OPEN_FAILS(spec, -EUCLEAN, "condition 9");
	CHECK_OK(forge_entry(zpath, 1, 16 * KiB, HW_ZC_EMPTY));
	CHECK_OK(forge_entry(zpath, 0, 0, HW_ZC_EMPTY));
	OPEN_FAILS(spec, -EUCLEAN, "zone 0 of file");
	CHECK_OK(forge_entry(zpath, 0, 0, HW_ZC_NOT_WP));

	/* Zone 2's valid entry copied over zone 1's: the checksum covers
	 * the zone number. */
	fd = open(zpath, O_RDWR);
	CHECK(fd >= 0);
	CHECK(pread(fd, e, 16, 4096 + 2 * 16) == 16);
	CHECK(pwrite(fd, e, 16, 4096 + 1 * 16) == 16);
	close(fd);
	OPEN_FAILS(spec, -EUCLEAN, "zone 1 in");
	hw_tmp_done(&t);
}

/* ---- zbd: ------------------------------------------------------------ */

#ifdef FSO_NO_EXTERNAL_LIBS
TEST(zbd_fails_clearly_in_a_build_without_libzbd)
{
	OPEN_FAILS("zbd:/dev/nullb0", -EOPNOTSUPP,
		   "built without libzbd (MSan build)");
}
#else
TEST(zbd_fails_clearly_on_a_missing_path)
{
	OPEN_FAILS("zbd:/nonexistent/nullb0", -ENOENT,
		   "cannot open '/nonexistent/nullb0': No such file");
	OPEN_FAILS("zbd:", -EINVAL, "missing path in 'zbd:'");
}

TEST(zbd_fails_clearly_on_a_regular_file_and_a_char_device)
{
	char spec[160];
	struct hw_tmp t;
	FILE *f;

	CHECK(hw_tmp_init(&t));
	f = fopen(t.path, "w");
	CHECK(f != NULL);
	fclose(f);
	snprintf(spec, sizeof(spec), "zbd:%s", t.path);
	OPEN_FAILS(spec, -ENOTBLK, "is not a block device, so not a zoned one");
	OPEN_FAILS(spec, -ENOTBLK, "use zoned:file,path=");
	hw_tmp_done(&t);
	OPEN_FAILS("zbd:/dev/null", -ENOTBLK, "'/dev/null' is not a block device");
}
#endif

TEST(zbd_takes_no_options)
{
	OPEN_FAILS("zbd:/dev/nullb0,size=1g", -EINVAL,
		   "unknown option 'size' in 'zbd:/dev/nullb0,size=1g' (zbd takes no options)");
}

/* ---- the rules on other devices -------------------------------------- */

/* Every rule's needs hold on the shape it runs on here, so none of them
 * is skipped by accident on the emulation. */
TEST(zone_rules_all_apply_to_their_emulated_shapes)
{
	char spec[256];
	struct hw_dev *d;
	struct zg g;

	CHECK(nrules >= 11);
	for (int i = 0; i < nrules; i++) {
		const char *why;

		snprintf(spec, sizeof(spec), "zoned:mem,%s", rules[i].shape);
		OPEN(spec, d);
		why = zgeo(d, &g);
		hw_close(d);
		CHECK_MSG(!why, "%s: %s", spec, why);
		CHECK_MSG(rules[i].need(&g), "%s does not meet %s (%s)",
			  spec, rules[i].why, rules[i].name);
	}
}

/*
 * FSO_ZONED_SPEC=SPEC: register the rules that SPEC's geometry allows
 * as zoned_dev_NAME and run those only (or those of them named in argv);
 * say why each other rule is skipped.  A device that does not open gets
 * every rule, so that each one fails with hw_open's message.
 */
static int run_on_device(int argc, char **argv)
{
	char **names = calloc((size_t)nrules + 1, sizeof(*names));
	const char *why = NULL;
	struct hw_dev *d = NULL;
	int n = 0, rc;
	char e[512];
	struct zg g;

	if (!names)
		return 2;
	names[n++] = argv[0];
	if (hw_open(dev_spec, &d, e, sizeof(e)) == 0) {
		why = zgeo(d, &g);
		hw_close(d);
		d = (struct hw_dev *)1;
	}
	if (why) {
		fprintf(stderr, "test_hw_zoned: the zone rules cannot run on '%s': %s\n",
			dev_spec, why);
		free(names);
		return 1;
	}
	for (int i = 0; i < nrules; i++) {
		if (d && !rules[i].need(&g)) {
			printf("skip %s: needs %s\n", rules[i].name, rules[i].why);
			continue;
		}
		test_register(rules[i].name, rules[i].dev_test);
		names[n++] = (char *)rules[i].name;
	}
	rc = argc > 1 ? test_main(argc, argv) : test_main(n, names);
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc;

	if (!zbufs(64 * KiB))
		return 2;
	dev_spec = getenv("FSO_ZONED_SPEC");
	rc = dev_spec && *dev_spec ? run_on_device(argc, argv)
				   : test_main(argc, argv);
	free(wbuf);
	free(rbuf);
	return rc;
}
