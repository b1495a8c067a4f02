/*
 * test_props_zoned.c - the `zoned` property suite can fail, and the plain
 * zone rules (harness/zone_rules.h) it holds the device against say what
 * the standards say.
 *
 * The suite's planted twins (props/suite_zoned.c, suite `zoned_planted`)
 * run its results property with a deliberate mismatch outside hw/; each
 * must fail and shrink to its known minimum:
 *
 *   zoned_planted_append_location  a device wrapper adds a sector to an
 *       append's location once the zone holds data: two ops in one zone,
 *       the second a one-sector append.  One op cannot show it: the
 *       first write or append of a zone lands at its start, which the
 *       wrapper reports truly.
 *   zoned_planted_model_capacity   the model takes the zone size for the
 *       capacity: a device whose capacity is below its zone size, and
 *       ops in one zone that the device refuses and the model takes.
 *       One write or append crossing the capacity is the minimum; the
 *       shrinker never lengthens an op, so from ops that first fill the
 *       zone it may stop at two or three (fill, then one more).
 *
 * The rules' own tests check hand-worked cases from the rules' text
 * (hw.h, zone_model.c's header), never the device's output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/zone_rules.h"
#include "props/props.h"
#include "tests/test.h"

/* A planted property's cfg, quiet, with a seed. */
static int planted_cfg(const char *name, uint64_t seed, struct props_cfg *cfg)
{
	const struct props_suite *s = NULL;
	const struct props_prop *p = props_prop_find(name, &s);

	if (!p || !s->planted)
		return -ENOENT;
	*cfg = p->cfg;
	cfg->name = p->name;
	cfg->seed = seed;
	cfg->quiet = 1;
	return 0;
}

/* The counterexample's lines below "arg 0 (zoned):": its device line
 * into dev, its op lines into ops (up to max); returns the op count. */
static int cex_case(const struct props_report *rep, char *dev, size_t devlen,
		    char ops[][96], int max)
{
	const char *p = rep->cex ? strstr(rep->cex, "arg 0 (zoned):\n") : NULL;
	int n = 0;

	if (!p)
		return -1;
	dev[0] = 0;
	p = strchr(p, '\n') + 1;
	while (!strncmp(p, "    ", 4)) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p - 4) : strlen(p + 4);

		if (!strncmp(p + 4, "device ", 7))
			snprintf(dev, devlen, "%.*s", (int)len, p + 4);
		else if (strncmp(p + 4, "(no ops)", 8) && n++ < max)
			snprintf(ops[n - 1], 96, "%.*s", (int)len, p + 4);
		if (!eol)
			break;
		p = eol + 1;
	}
	return n;
}

/* A number after key= in a device line, or -1. */
static long long spec_num(const char *dev, const char *key)
{
	const char *p = strstr(dev, key);

	return p ? atoll(p + strlen(key)) : -1;
}

/* The zone an op line names ("write zone 3 at ..."), or -1. */
static int zone_of(const char *op)
{
	const char *p = strstr(op, "zone ");

	return p ? atoi(p + 5) : -1;
}

TEST(zoned_planted_append_location_shrinks_to_two_ops)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct props_cfg cfg;
		struct props_report rep;
		char dev[256], ops[4][96];
		int n;

		CHECK_OK(planted_cfg("zoned_planted_append_location", seed, &cfg));
		CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
		n = cex_case(&rep, dev, sizeof(dev), ops, 4);
		CHECK_MSG(n == 2, "seed %llu: %d ops:\n%s",
			  (unsigned long long)seed, n, rep.cex);
		/* "write zone Z at wp+0 len L" or "append zone Z len L", then
		 * "append zone Z len 512" */
		CHECK_MSG(!strncmp(ops[1], "append zone ", 12) &&
			  !strcmp(strstr(ops[1], " len "), " len 512"),
			  "seed %llu:\n%s", (unsigned long long)seed, rep.cex);
		CHECK_MSG((!strncmp(ops[0], "write zone ", 11) ||
			   !strncmp(ops[0], "append zone ", 12)) &&
			  zone_of(ops[0]) == zone_of(ops[1]), "%s", rep.cex);
		CHECK(strstr(rep.cex, "on the device, +512 by the rules"));
		CHECK(!rep.shrink_halted);
		props_report_free(&rep);
	}
}

TEST(zoned_planted_model_capacity_shrinks_to_ops_past_capacity)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct props_cfg cfg;
		struct props_report rep;
		char dev[256], ops[4][96];
		int n;

		CHECK_OK(planted_cfg("zoned_planted_model_capacity", seed, &cfg));
		CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
		n = cex_case(&rep, dev, sizeof(dev), ops, 4);
		CHECK_MSG(n >= 1 && n <= 3, "seed %llu: %d ops:\n%s",
			  (unsigned long long)seed, n, rep.cex);
		for (int i = 0; i < n; i++)
			CHECK_MSG(zone_of(ops[i]) == zone_of(ops[0]),
				  "seed %llu: not one zone:\n%s",
				  (unsigned long long)seed, rep.cex);
		CHECK_MSG(spec_num(dev, ",cap=") > 0 &&
			  spec_num(dev, ",cap=") < spec_num(dev, ",zone="),
			  "capacity not below the zone size: %s", dev);
		/* the device refuses, the model takes it */
		CHECK_MSG(strstr(rep.cex, "the rules 0\n"), "%s", rep.cex);
		CHECK(!rep.shrink_halted);
		props_report_free(&rep);
	}
}

/* The minimal counterexample's bytes fail again, with the same text;
 * the same seed finds the same counterexample. */
TEST(zoned_planted_counterexample_replays)
{
	struct props_cfg cfg;
	struct props_report a, b, again;

	CHECK_OK(planted_cfg("zoned_planted_append_location", 3, &cfg));
	CHECK_EQ(props_run(&cfg, &a), PROPS_FAIL);
	CHECK_EQ(props_run(&cfg, &b), PROPS_FAIL);
	CHECK(!strcmp(a.cex, b.cex));
	CHECK(a.cex_len > 0);
	CHECK_EQ(props_run_bytes(&cfg, a.cex_bytes, a.cex_len, 0, &again),
		 PROPS_FAIL);
	CHECK(!strcmp(a.cex, again.cex));
	props_report_free(&a);
	props_report_free(&b);
	props_report_free(&again);
}

/* Without the plant, the same property holds on the same seeds. */
TEST(zoned_results_hold_where_the_planted_twins_fail)
{
	const struct props_prop *p = props_prop_find("zoned_results_match_rules",
						     NULL);

	CHECK(p);
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct props_override o = { .have_seed = 1, .seed = seed,
					    .quiet = 1 };
		struct props_report rep;
		int r = props_prop_run(p, &o, &rep);

		CHECK_MSG(r == PROPS_PASS, "seed %llu: %s\n%s",
			  (unsigned long long)seed, props_result_name(r),
			  rep.cex ? rep.cex : "");
		props_report_free(&rep);
	}
}

/* ---- the rules themselves ---- */

#define KB 1024u

static uint8_t pat[64 * KB];

static void fill(void)
{
	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 13 + 1);
}

/* zones of 8k, capacity 4k, one conventional zone, then five */
static const struct zrules_cfg six = {
	.nr_zones = 6, .nr_conv = 1, .zone_size = 8 * KB, .capacity = 4 * KB,
};

TEST(zone_rules_refuse_impossible_devices)
{
	struct zrules m;
	struct zrules_cfg c = six;

	c.nr_conv = 6;                  /* no sequential zone */
	CHECK_EQ(zrules_init(&m, &c), -EINVAL);
	c = six;
	c.capacity = 12 * KB;           /* above the zone size */
	CHECK_EQ(zrules_init(&m, &c), -EINVAL);
	c = six;
	c.nr_zones = ZRULES_MAX_ZONES + 1;
	CHECK_EQ(zrules_init(&m, &c), -EINVAL);
	c = six;
	c.nr_readonly = 3;
	c.nr_offline = 3;               /* six of five sequential zones */
	CHECK_EQ(zrules_init(&m, &c), -EINVAL);
}

TEST(zone_rules_write_only_at_wp_and_below_capacity)
{
	struct zrules m;
	uint64_t z1 = 8 * KB;
	uint8_t got[8 * KB];
	struct hw_zone z;

	fill();
	CHECK_OK(zrules_init(&m, &six));
	/* conventional zone 0: anywhere, any alignment */
	CHECK_EQ(zrules_write(&m, 100, pat, 7), 0);
	CHECK_EQ(zrules_write(&m, z1 + 512, pat, 512), -EIO);   /* past wp */
	CHECK_EQ(zrules_write(&m, z1, pat, 100), -EINVAL);      /* unaligned */
	CHECK_EQ(zrules_write(&m, z1, pat, 1024), 0);
	zrules_zone(&m, 1, &z);
	CHECK_EQ(z.cond, HW_ZC_IMP_OPEN);
	CHECK_EQ(z.wp, z1 + 1024);
	/* to the capacity, not the size: 3k more fills it */
	CHECK_EQ(zrules_write(&m, z1 + 1024, pat, 3584), -EIO);
	CHECK_EQ(zrules_write(&m, z1 + 1024, pat, 3072), 0);
	zrules_zone(&m, 1, &z);
	CHECK_EQ(z.cond, HW_ZC_FULL);
	CHECK_EQ(z.wp, z1 + 4 * KB);
	CHECK_EQ(z.capacity, 4 * KB);
	CHECK_EQ(zrules_write(&m, z1 + 4 * KB, pat, 512), -EIO);
	/* reads: what was written, zeros from the wp on */
	CHECK_EQ(zrules_read(&m, z1, got, sizeof(got)), 0);
	CHECK_MEM(got, pat, 1024);
	CHECK_MEM(got + 1024, pat, 3072);
	for (size_t i = 4 * KB; i < sizeof(got); i++)
		CHECK_EQ(got[i], 0);
	/* a conventional zone reports no write pointer: its end */
	zrules_zone(&m, 0, &z);
	CHECK_EQ(z.type, HW_ZONE_CONV);
	CHECK_EQ(z.wp, 8 * KB);
	zrules_free(&m);
}

TEST(zone_rules_append_lands_at_wp_within_append_max)
{
	struct zrules_cfg c = six;
	struct zrules m;
	uint64_t at = 0, z2 = 16 * KB;

	fill();
	c.max_append = 2 * KB;
	CHECK_OK(zrules_init(&m, &c));
	CHECK_EQ(zrules_append(&m, 2, pat, 2 * KB + 512, &at), -EINVAL);
	CHECK_EQ(zrules_append(&m, 2, pat, 0, &at), -EINVAL);
	CHECK_EQ(zrules_append(&m, 2, pat, 100, &at), -EINVAL);
	CHECK_EQ(zrules_append(&m, 0, pat, 512, &at), -EIO);    /* conv */
	CHECK_EQ(zrules_append(&m, 2, pat, 2 * KB, &at), 0);
	CHECK_EQ(at, z2);
	CHECK_EQ(zrules_append(&m, 2, pat, 512, &at), 0);
	CHECK_EQ(at, z2 + 2 * KB);
	CHECK_EQ(m.wp[2], z2 + 2 * KB + 512);
	/* 1.5k left of the 4k capacity */
	CHECK_EQ(zrules_append(&m, 2, pat, 2 * KB, &at), -EIO);
	zrules_free(&m);
}

TEST(zone_rules_open_limit_closes_oldest_implicit_open)
{
	struct zrules_cfg c = six;
	struct zrules m;
	uint64_t zs = 8 * KB;

	fill();
	c.max_open = 2;
	CHECK_OK(zrules_init(&m, &c));
	CHECK_EQ(zrules_write(&m, 1 * zs, pat, 512), 0);        /* opens 1 */
	CHECK_EQ(zrules_write(&m, 2 * zs, pat, 512), 0);        /* opens 2 */
	CHECK_EQ(zrules_write(&m, 3 * zs, pat, 512), 0);        /* closes 1 */
	CHECK_EQ(m.cond[1], HW_ZC_CLOSED);
	CHECK_EQ(m.cond[2], HW_ZC_IMP_OPEN);
	CHECK_EQ(m.cond[3], HW_ZC_IMP_OPEN);
	/* explicit opens are never closed for room */
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_OPEN, 4), 0);          /* closes 2 */
	CHECK_EQ(m.cond[2], HW_ZC_CLOSED);
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_OPEN, 5), 0);          /* closes 3 */
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_OPEN, 1), -EIO);       /* none left */
	CHECK_EQ(zrules_write(&m, 1 * zs + 512, pat, 512), -EIO);
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_CLOSE, 4), 0);
	CHECK_EQ(m.cond[4], HW_ZC_EMPTY);               /* nothing written */
	CHECK_EQ(zrules_write(&m, 1 * zs + 512, pat, 512), 0);
	CHECK_EQ(m.cond[1], HW_ZC_IMP_OPEN);
	zrules_free(&m);
}

TEST(zone_rules_active_limit_counts_closed_zones)
{
	struct zrules_cfg c = six;
	struct zrules m;
	uint64_t zs = 8 * KB;

	fill();
	c.max_active = 2;
	CHECK_OK(zrules_init(&m, &c));
	CHECK_EQ(zrules_write(&m, 1 * zs, pat, 512), 0);
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_CLOSE, 1), 0);
	CHECK_EQ(m.cond[1], HW_ZC_CLOSED);
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_OPEN, 2), 0);
	CHECK_EQ(zrules_write(&m, 3 * zs, pat, 512), -EIO);     /* 2 active */
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_FINISH, 3), -EIO);
	/* finishing a closed zone frees its slot; reset frees one too */
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_FINISH, 1), 0);
	CHECK_EQ(m.cond[1], HW_ZC_FULL);
	CHECK_EQ(zrules_write(&m, 3 * zs, pat, 512), 0);
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_RESET, 2), 0);
	CHECK_EQ(m.cond[2], HW_ZC_EMPTY);
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_OPEN, 4), 0);
	zrules_free(&m);
}

TEST(zone_rules_report_windows_and_mgmt_errors)
{
	struct zrules_cfg c = six;
	struct zrules m;
	struct hw_zone z[8];
	unsigned nr;

	c.nr_readonly = 1;
	c.nr_offline = 1;
	CHECK_OK(zrules_init(&m, &c));
	nr = 8;
	CHECK_EQ(zrules_report(&m, 2, z, &nr), 0);
	CHECK_EQ(nr, 4);
	CHECK_EQ(z[0].start, 16 * KB);
	CHECK_EQ(z[2].cond, HW_ZC_READONLY);
	CHECK_EQ(z[3].cond, HW_ZC_OFFLINE);
	nr = 3;
	CHECK_EQ(zrules_report(&m, 6, z, &nr), 0);
	CHECK_EQ(nr, 0);
	CHECK_EQ(zrules_report(&m, 7, z, &nr), -EINVAL);
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_RESET, 0), -EIO);      /* conv */
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_RESET, 4), -EIO);      /* readonly */
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_OPEN, 5), -EIO);       /* offline */
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_CLOSE, 1), -EIO);      /* empty */
	CHECK_EQ(zrules_mgmt(&m, HW_ZONE_RESET, 6), -EINVAL);
	CHECK_EQ(zrules_read(&m, 5 * 8 * KB, pat, 512), -EIO);  /* offline */
	zrules_free(&m);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
