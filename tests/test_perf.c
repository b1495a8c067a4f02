/*
 * test_perf.c - the performance oracle: its statistics on samples whose
 * answers are known, its JSON and SVG as a reader sees them, and the
 * seed arithmetic of the scenarios on small null: runs, computed here
 * independently of the scenario code.  Nothing here is timed: the only
 * timings are synthetic samples.
 */
#include "tests/test.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/poison.h"
#include "harness/rng.h"
#include "perf/perf_internal.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

/* ---- order statistics ---- */

TEST(median_and_quartiles_interpolate_between_order_statistics)
{
	const double odd[] = { 5, 1, 4, 2, 3 };
	const double even[] = { 4, 1, 3, 2 };
	const double nine[] = { 9, 8, 7, 6, 5, 4, 3, 2, 1 };
	struct perf_summary s;

	perf_summarize(odd, 5, &s);
	CHECK(NEAR(s.median, 3) && NEAR(s.min, 1) && NEAR(s.max, 5));
	CHECK(NEAR(s.q1, 2) && NEAR(s.q3, 4));
	perf_summarize(even, 4, &s);
	CHECK(NEAR(s.median, 2.5));
	/* type 7: h = q (n - 1) = 0.75 -> 1 + 0.75 (2 - 1) */
	CHECK(NEAR(s.q1, 1.75) && NEAR(s.q3, 3.25));
	perf_summarize(nine, 9, &s);
	CHECK(NEAR(s.q1, 3) && NEAR(s.median, 5) && NEAR(s.q3, 7));
	CHECK(NEAR(perf_quantile(nine, 9, 0.9), 8.2));
	CHECK_EQ(s.n, 9);
	/* the input is left alone */
	CHECK(nine[0] == 9 && odd[0] == 5);
	perf_summarize(odd, 0, &s);
	CHECK_EQ(s.n, 0);
}

/* ---- tests with known p-values ---- */

TEST(sign_test_p_values_are_exact_binomial_tails)
{
	CHECK(NEAR(perf_sign_test(0, 8), 2.0 / 256));
	CHECK(NEAR(perf_sign_test(8, 8), 2.0 / 256));
	CHECK(NEAR(perf_sign_test(1, 6), 2.0 * (1 + 6) / 64));
	CHECK(NEAR(perf_sign_test(4, 8), 1));
	CHECK(NEAR(perf_sign_test(0, 0), 1));
	/* n = 5 can never reach 0.05 two-sided: 2/32 */
	CHECK(NEAR(perf_sign_test(0, 5), 0.0625));
}

TEST(mann_whitney_exact_for_small_untied_samples)
{
	const double a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 };
	const double c[] = { 1, 2, 3, 4 }, d[] = { 5, 6, 7, 8 };
	const double e[] = { 1, 3, 5 }, g[] = { 2, 4, 6 };

	/* complete separation: 1 of C(6,3) = 20 orderings each way */
	CHECK(NEAR(perf_mann_whitney(a, 3, b, 3), 2.0 / 20));
	CHECK(NEAR(perf_mann_whitney(b, 3, a, 3), 2.0 / 20));
	CHECK(NEAR(perf_mann_whitney(c, 4, d, 4), 2.0 / 70));
	/* interleaved: U = 3 of 9; P(U <= 3) = 7/20 (counted by hand:
	 * U = 0,1,2,3 have 1,1,2,3 orderings) */
	CHECK(NEAR(perf_mann_whitney(e, 3, g, 3), 2.0 * 7 / 20));
	/* identical samples (all ties): no evidence at all */
	CHECK(perf_mann_whitney(a, 3, a, 3) > 0.9);
}

/* ---- bootstrap intervals and verdicts ---- */

TEST(paired_bootstrap_is_deterministic_and_brackets_the_median)
{
	const double a[] = { 1, 1, 1, 1, 1 };
	const double b[] = { 1, 2, 3, 4, 5 };
	struct perf_cmp_opts o = { .seed = 42 };
	struct perf_cmp c1, c2;

	perf_compare_paired(a, b, 5, &o, &c1);
	perf_compare_paired(a, b, 5, &o, &c2);
	CHECK(NEAR(c1.ratio, 3));
	CHECK(c1.lo == c2.lo && c1.hi == c2.hi);
	CHECK(c1.lo >= 1 && c1.lo <= 3 && c1.hi >= 3 && c1.hi <= 5);
	CHECK(c1.lo < c1.hi);
	/* the first pair is a tie and drops out: 4 of 4 slower, p = 2/16 */
	CHECK(NEAR(c1.p, 0.125));
	CHECK_EQ(c1.verdict, PERF_NO_DIFFERENCE);
}

TEST(constant_ratio_gives_a_degenerate_interval)
{
	double a[8], b[8];
	struct perf_cmp c;

	for (int i = 0; i < 8; i++) {
		a[i] = 10 + i;
		b[i] = a[i] / 2;
	}
	perf_compare_paired(a, b, 8, NULL, &c);
	CHECK(NEAR(c.ratio, 0.5) && NEAR(c.lo, 0.5) && NEAR(c.hi, 0.5));
	CHECK(NEAR(c.p, 2.0 / 256));
	CHECK_EQ(c.verdict, PERF_FASTER);
	CHECK(strcmp(perf_verdict_name(c.verdict), "faster") == 0);
}

/* Synthetic paired timings: pair i shares a base of 100 plus up to 20%
 * (the machine's state, when paired), b is factor times it; each sample
 * has its own relative noise, uniform in [-spread, spread]. */
static void synth(struct rng *g, double *a, double *b, unsigned n,
		  double factor, double spread, int paired)
{
	for (unsigned i = 0; i < n; i++) {
		double base = 100 * (1 + (paired ? 0.2 : 0) *
				     (rng_below(g, 1000) / 1000.0));
		double na = (rng_below(g, 2001) / 1000.0 - 1) * spread;
		double nb = (rng_below(g, 2001) / 1000.0 - 1) * spread;

		a[i] = base * (1 + na);
		b[i] = base * factor * (1 + nb);
	}
}

TEST(verdicts_tell_real_differences_from_noise)
{
	struct rng g;
	double a[12], b[12];
	struct perf_cmp c;
	struct perf_cmp_opts o = { .seed = 7 };

	rng_seed(&g, 1);
	synth(&g, a, b, 12, 0.8, 0.03, 1);
	perf_compare_paired(a, b, 12, &o, &c);
	CHECK_EQ(c.verdict, PERF_FASTER);
	CHECK(c.hi < 1 && c.lo < 0.85);
	synth(&g, a, b, 12, 1.25, 0.03, 1);
	perf_compare_paired(a, b, 12, &o, &c);
	CHECK_EQ(c.verdict, PERF_SLOWER);
	CHECK(c.lo > 1);
	/* a consistent 1% gain is significant, but below a 2% floor */
	synth(&g, a, b, 12, 0.99, 0.001, 1);
	perf_compare_paired(a, b, 12, &o, &c);
	CHECK_EQ(c.verdict, PERF_FASTER);
	o.min_effect = 0.02;
	perf_compare_paired(a, b, 12, &o, &c);
	CHECK_EQ(c.verdict, PERF_NO_DIFFERENCE);
}

TEST(no_difference_false_alarms_stay_below_alpha)
{
	struct rng g;
	double a[8], b[8];
	unsigned alarms_paired = 0, alarms_unpaired = 0, trials = 400;

	rng_seed(&g, 2);
	for (unsigned t = 0; t < trials; t++) {
		struct perf_cmp c;
		struct perf_cmp_opts o = { .seed = t + 1, .resamples = 200 };

		synth(&g, a, b, 8, 1.0, 0.05, t % 2);
		perf_compare_paired(a, b, 8, &o, &c);
		alarms_paired += c.verdict != PERF_NO_DIFFERENCE;
		perf_compare_unpaired(a, 8, b, 8, &o, &c);
		alarms_unpaired += c.verdict != PERF_NO_DIFFERENCE;
	}
	CHECK_MSG(alarms_paired <= trials / 20, "paired: %u alarms of %u",
		  alarms_paired, trials);
	CHECK_MSG(alarms_unpaired <= trials / 20, "unpaired: %u alarms of %u",
		  alarms_unpaired, trials);
}

TEST(a_planted_five_percent_is_found_unpaired)
{
	struct rng g;
	double a[15], b[15], x[15];
	struct perf_cmp c;
	struct perf_cmp_opts o = { .seed = 3, .min_effect = 0.02 };

	rng_seed(&g, 4);
	/* two separate runs of the same work, +-1% noise; the second 5% slower */
	synth(&g, a, x, 15, 1.0, 0.01, 0);
	synth(&g, x, b, 15, 1.05, 0.01, 0);
	perf_compare_unpaired(a, 15, b, 15, &o, &c);
	CHECK_EQ(c.verdict, PERF_SLOWER);
	CHECK(c.lo > 1 && c.ratio > 1.02 && c.ratio < 1.08);
}

/* ---- counters by name ---- */

TEST(counter_sums_are_looked_up_by_name)
{
	struct ref_counters c;
	uint64_t v = 0;

	memset(&c, 0, sizeof(c));
	c.bt.rec_inserts = 3;
	c.bt.rec_updates = 4;
	c.bytes_zeroed = 4096;
	CHECK_OK(perf_counter_get(&c, "rec_inserts+rec_updates", &v));
	CHECK_EQ(v, 7);
	CHECK_OK(perf_counter_get(&c, "bytes_zeroed", &v));
	CHECK_EQ(v, 4096);
	CHECK_EQ(perf_counter_get(&c, "bytes_zeroed+no_such", &v), -ENOENT);
	CHECK_EQ(perf_counter_get(&c, "bytes", &v), -ENOENT);
	CHECK(perf_counter_known("rt_extents_freed"));
	CHECK(!perf_counter_known("no_such_counter"));
}

/* ---- JSON ---- */

/* JSON tests need the library; builds without it say so and skip them. */
#define NEED_JSON()                                                       \
	do {                                                              \
		if (!json_available()) {                                  \
			printf("  skipped: no JSON library in this build\n"); \
			return;                                           \
		}                                                         \
	} while (0)

/* (json-c's strict mode still reads "1." as a number, 'a' as a string and
 * a lone surrogate escape, so they are not listed: fsoracle writes none.) */
TEST(json_parser_accepts_valid_and_rejects_invalid_text)
{
	static const char *const bad[] = {
		"", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "[01]",
		"[NaN]", "\"abc", "[\"\\x\"]", "[1] 2", "[tru]",
		"[-]", "[1e]", "[\"\xff\"]", "// c\n{}",
	};
	char err[128];
	struct json *j;

	NEED_JSON();

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = json_parse(bad[i], err, sizeof(err));
		CHECK_MSG(!j, "accepted '%s'", bad[i]);
		CHECK_MSG(strstr(err, "line 1 col") != NULL ||
			  strstr(err, "NaN") != NULL, "'%s': %s", bad[i], err);
	}
	j = json_parse(" {\"a\": [1, -2.5e3, true, false, null],\n"
		       "  \"s\": \"q\\\"\\\\\\n\\u00e9\\ud83d\\ude00\", "
		       "\"big\": 18446744073709551615, \"e\": {}} ",
		       err, sizeof(err));
	CHECK_MSG(j != NULL, "%s", err);
	CHECK_EQ(json_len(json_get(j, "a")), 5);
	CHECK(NEAR(json_at(json_get(j, "a"), 1)->num, -2500));
	CHECK_EQ(json_at(json_get(j, "a"), 2)->type, JSON_BOOL);
	CHECK_EQ(json_at(json_get(j, "a"), 4)->type, JSON_NULL);
	CHECK(strcmp(json_get(j, "s")->str,
		     "q\"\\\n\xc3\xa9\xf0\x9f\x98\x80") == 0);
	CHECK(json_u64(json_get(j, "big")) == UINT64_MAX);
	CHECK_EQ(json_len(json_get(j, "e")), 0);
	CHECK(json_get(j, "missing") == NULL);
	json_free(j);
}

TEST(json_strings_round_trip)
{
	const char *s = "tab\tquote\"back\\slash\nctl\x01 end";
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	struct json *j;

	NEED_JSON();
	f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	json_put_string(f, s);
	fclose(f);
	j = json_parse(buf, NULL, 0);
	free(buf);
	CHECK(j && j->type == JSON_STRING);
	CHECK(strcmp(j->str, s) == 0);
	json_free(j);
}

/* A hand-made result of a made-up scenario: the report writers only. */
static const struct perf_counter_spec fake_counters[] = {
	{ "work", "bytes_zeroed", 1 },
	{ "other", "rt_extents_freed", 0 },
};
static const char *const fake_variants[] = { "v\"1" };
static const uint64_t fake_params[] = { 8192, 1048576 };
static const struct perf_scenario fake = {
	.id = "900", .name = "fake", .title = "a <test> & \"scenario\"",
	.path = REF_PATH_RT_TRUNCATE, .path_label = "(a)",
	.param_name = "size", .param_bytes = 1,
	.variants = fake_variants, .nvariants = 1,
	.params = { fake_params, fake_params }, .nparams = { 2, 2 },
	.counters = fake_counters, .ncounters = 2,
	.time_doc = "nothing",
};

static double fake_tn[2][3] = { { 0.002, 0.0021, 0.0019 },
				{ 0.004, 0.0041, 0.0039 } };
static double fake_to[2][3] = { { 0.001, 0.0011, 0.0009 },
				{ 0.001, 0.0012, 0.0008 } };

static void fake_result(struct perf_result *r)
{
	memset(r, 0, sizeof(*r));
	r->sc = &fake;
	r->npts = 2;
	for (unsigned i = 0; i < 2; i++) {
		struct perf_point *pt = &r->pts[i];

		pt->param = fake_params[i];
		pt->counted = 1;
		pt->naive.have = pt->opt.have = i ? 3 : 1; /* "other" missing */
		pt->naive.v[0] = 15728640123456789ull + i;
		pt->opt.v[0] = i;
		pt->naive.v[1] = pt->opt.v[1] = 1023;
		pt->nchecks = 1;
		snprintf(pt->checks[0].what, sizeof(pt->checks[0].what),
			 "work is \"big\"");
		pt->checks[0].expect = 15728640123456789ull;
		pt->checks[0].got = pt->naive.v[0];
		pt->checks[0].have = 1;
		pt->timed = 1;
		pt->nsamples = 3;
		pt->tnaive = fake_tn[i];
		pt->topt = fake_to[i];
		perf_summarize(pt->tnaive, 3, &pt->sn);
		perf_summarize(pt->topt, 3, &pt->so);
		perf_compare_paired(pt->tnaive, pt->topt, 3, NULL, &pt->cmp);
	}
}

TEST(json_report_parses_back_with_exact_counters)
{
	struct perf_result r[2];
	struct perf_opts o = { .repeats = 3, .warmup = 1, .seed = 9 };
	char *buf = NULL, err[128];
	size_t len = 0;
	FILE *f;
	struct json *j;
	const struct json *sc, *pt, *ctr;

	NEED_JSON();
	f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	fake_result(&r[0]);
	memset(&r[1], 0, sizeof(r[1]));
	r[1].sc = perf_scenario_find("002");
	r[1].status = PERF_SKIPPED;
	snprintf(r[1].reason, sizeof(r[1].reason), "path (c) \"missing\"");
	CHECK_OK(perf_write_json(f, &o, r, 2));
	fclose(f);
	j = json_parse(buf, err, sizeof(err));
	CHECK_MSG(j != NULL, "%s in:\n%s", err, buf);
	/* the same report cut short: an error that says so, never a tree */
	buf[len / 2] = 0;
	CHECK(json_parse(buf, err, sizeof(err)) == NULL);
	CHECK_MSG(strstr(err, "truncated") != NULL, "%s", err);
	free(buf);
	CHECK(strcmp(json_get(j, "schema")->str, "fsoracle-perf/1") == 0);
	CHECK(strcmp(json_get(j, "fsoracle_version")->str,
		     FSORACLE_VERSION) == 0);
	CHECK_EQ(json_len(json_get(j, "scenarios")), 2);
	sc = json_at(json_get(j, "scenarios"), 0);
	CHECK(strcmp(json_get(sc, "status")->str, "ok") == 0);
	CHECK(strcmp(json_get(sc, "title")->str, fake.title) == 0);
	pt = json_at(json_get(sc, "points"), 0);
	CHECK(strcmp(json_get(pt, "variant")->str, "v\"1") == 0);
	CHECK(json_u64(json_get(pt, "param")) == 8192);
	ctr = json_get(json_get(pt, "counters"), "work");
	CHECK(json_u64(json_get(ctr, "naive")) == 15728640123456789ull);
	CHECK(json_get(ctr, "primary")->boolean);
	CHECK_EQ(json_get(json_get(pt, "counters"), "other")->type, JSON_NULL);
	CHECK(json_get(json_at(json_get(pt, "checks"), 0), "matches")->boolean);
	CHECK_EQ(json_len(json_get(json_get(pt, "time"), "naive")), 3);
	CHECK(NEAR(json_get(json_get(pt, "time"), "naive_median")->num,
		   0.002));
	sc = json_at(json_get(j, "scenarios"), 1);
	CHECK(strcmp(json_get(sc, "status")->str, "skipped") == 0);
	CHECK(strstr(json_get(sc, "reason")->str, "\"missing\"") != NULL);
	CHECK_EQ(json_u64(json_get(json_get(j, "summary"), "skipped")), 1);
	json_free(j);
}

/*
 * Well-formed XML, checked the way a reader would fail on it: every tag
 * closes in order, attribute values are quoted, text has no raw '<' and
 * every '&' starts an entity.
 */
static int xml_well_formed(const char *s, char *why, size_t len)
{
	char stack[64][32];
	int depth = 0;

	if (strncmp(s, "<?xml", 5) == 0) {
		s = strstr(s, "?>");
		if (!s)
			return snprintf(why, len, "bad declaration"), 0;
		s += 2;
	}
	while (*s) {
		if (*s == '&') {
			const char *e = strchr(s, ';');

			if (!e || e - s > 6)
				return snprintf(why, len, "bare &"), 0;
			s = e + 1;
			continue;
		}
		if (*s != '<') {
			s++;
			continue;
		}
		if (s[1] == '/') {
			size_t n = strcspn(s + 2, ">");

			if (!depth || strlen(stack[depth - 1]) != n ||
			    strncmp(stack[depth - 1], s + 2, n))
				return snprintf(why, len, "bad close tag"), 0;
			depth--;
			s += n + 3;
			continue;
		}
		{
			size_t n = strcspn(s + 1, " />");
			const char *p = s + 1 + n;
			char q;

			if (n == 0 || n >= sizeof(stack[0]) || depth == 64)
				return snprintf(why, len, "bad tag name"), 0;
			while (*p && *p != '>' && !(p[0] == '/' && p[1] == '>')) {
				if (*p == '=') {
					q = p[1];
					if (q != '"' && q != '\'')
						return snprintf(why, len,
							"unquoted attribute"), 0;
					p = strchr(p + 2, q);
					if (!p)
						return snprintf(why, len,
							"open attribute"), 0;
				} else if (*p == '<') {
					return snprintf(why, len, "< in tag"), 0;
				}
				p++;
			}
			if (!*p)
				return snprintf(why, len, "open tag"), 0;
			if (*p == '>') {
				memcpy(stack[depth], s + 1, n);
				stack[depth++][n] = 0;
				s = p + 1;
			} else {
				s = p + 2;
			}
		}
	}
	if (depth)
		return snprintf(why, len, "%d tags left open", depth), 0;
	return 1;
}

static unsigned count_of(const char *s, const char *what)
{
	unsigned n = 0;

	for (s = strstr(s, what); s; s = strstr(s + 1, what))
		n++;
	return n;
}

TEST(svg_is_well_formed_and_has_both_twins)
{
	struct perf_result r;
	char *buf = NULL, why[64] = "", want[96];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f != NULL);
	fake_result(&r);
	CHECK_OK(perf_write_svg(f, &r, 0));
	fclose(f);
	CHECK_MSG(xml_well_formed(buf, why, sizeof(why)), "%s", why);
	CHECK(strstr(buf, "<svg") && strstr(buf, "</svg>"));
	CHECK(strstr(buf, "naive") && strstr(buf, "optimized"));
	CHECK(strstr(buf, "&lt;test&gt; &amp; &quot;scenario&quot;"));
	CHECK(strstr(buf, "<polyline") != NULL);
	CHECK(strstr(buf, ">8k<") && strstr(buf, ">1m<"));
	/* every point of both twins is drawn, each its own marker */
	CHECK_EQ(count_of(buf, "<circle"), count_of(buf, "width=\"6\" height"));
	CHECK_EQ(count_of(buf, "<circle"), 1 + 2 + 1 + 2); /* legend, panels */
	/* "work" spans sixteen decades and has a zero: a log axis, a 0 floor;
	 * "other" is equal in both twins, and the title says so */
	CHECK(strstr(buf, ">count, log scale<") != NULL);
	CHECK(strstr(buf, ">0</text>") != NULL);
	CHECK(strstr(buf, ">other (twins equal)<") != NULL);
	/* units on both axes; the time panel's verdicts and intervals */
	CHECK(strstr(buf, ">size (bytes, log scale)<") != NULL);
	CHECK(strstr(buf, ">ms</text>") != NULL);
	snprintf(want, sizeof(want), ">%s (p %.2g)<",
		 perf_verdict_name(r.pts[1].cmp.verdict), r.pts[1].cmp.p);
	CHECK_MSG(strstr(buf, want) != NULL, "no %s", want);
	snprintf(want, sizeof(want), ">%.3g [%.3g - %.3g]<", r.pts[1].cmp.ratio,
		 r.pts[1].cmp.lo, r.pts[1].cmp.hi);
	CHECK_MSG(strstr(buf, want) != NULL, "no %s", want);
	/* the checker itself rejects what it must */
	CHECK(!xml_well_formed("<a><b></a></b>", why, sizeof(why)));
	CHECK(!xml_well_formed("<a x=1/>", why, sizeof(why)));
	CHECK(!xml_well_formed("<a>1 & 2</a>", why, sizeof(why)));
	free(buf);
}

/* ---- A/B comparison of saved runs ---- */

static struct json *report_with(uint64_t work, double t0, double step)
{
	char text[2048];
	char times[512] = "";
	size_t o = 0;

	for (int i = 0; i < 10; i++)
		o += (size_t)snprintf(times + o, sizeof(times) - o, "%s%.6f",
				      i ? ", " : "", t0 + step * (i % 5));
	snprintf(text, sizeof(text),
		 "{ \"schema\": \"fsoracle-perf/1\", \"scenarios\": [ "
		 "{ \"id\": \"000\", \"name\": \"x\", \"status\": \"ok\", "
		 "\"param\": \"p\", \"points\": [ { \"variant\": \"v\", "
		 "\"param\": 1, \"counters\": { \"work\": { \"naive\": 9, "
		 "\"optimized\": %llu } }, \"time\": { \"naive\": [%s], "
		 "\"optimized\": [%s] } } ] } ] }",
		 (unsigned long long)work, times, times);
	return json_parse(text, NULL, 0);
}

TEST(compare_flags_more_work_and_slower_time_only)
{
	struct json *a, *same, *more, *slow, *junk;
	struct perf_cmp_opts o = { .min_effect = 0.02 };
	char err[128];
	FILE *f;

	NEED_JSON();
	a = report_with(5, 1.0, 0.001);
	same = report_with(5, 1.0, 0.001);
	more = report_with(6, 1.0, 0.001);
	slow = report_with(5, 1.1, 0.001);
	junk = json_parse("{\"x\": 1}", NULL, 0);
	f = fopen("/dev/null", "w");
	CHECK(a && same && more && slow && junk && f);
	CHECK_EQ(perf_compare_reports(f, a, same, &o, NULL, err, sizeof(err)), 0);
	CHECK_EQ(perf_compare_reports(f, a, more, &o, NULL, err, sizeof(err)), 1);
	CHECK_EQ(perf_compare_reports(f, a, slow, &o, NULL, err, sizeof(err)), 1);
	CHECK_EQ(perf_compare_reports(f, slow, a, &o, NULL, err, sizeof(err)), 0);
	CHECK_EQ(perf_compare_reports(f, a, junk, &o, NULL, err, sizeof(err)),
		 -EINVAL);
	fclose(f);
	json_free(a);
	json_free(same);
	json_free(more);
	json_free(slow);
	json_free(junk);
}

/* ---- scenario 000 against the seed's arithmetic ---- */

struct counted { uint64_t zeroed, freed; };

static int run_s000(uint64_t r, uint32_t naive, struct counted *out)
{
	const struct perf_scenario *sc = perf_scenario_find("000");
	struct perf_job j = { .param = r, .scale = PERF_QUICK,
			      .where = PERF_COUNT, .naive = naive };
	struct perf_world w;
	char err[256];
	int rc;

	memset(&w, 0, sizeof(w));
	rc = sc->setup(&w, &j, err, sizeof(err));
	if (!rc) {
		ref_counters_reset(w.fs);
		rc = sc->op(&w, &j);
	}
	if (!rc) {
		out->zeroed = ref_counters(w.fs)->bytes_zeroed;
		out->freed = ref_counters(w.fs)->rt_extents_freed;
	}
	perf_world_close(&w);
	return rc;
}

TEST(scenario_000_counters_equal_the_seed_formula)
{
	const struct perf_scenario *sc = perf_scenario_find("000");
	const uint64_t files = 16, exts = 1024, bs = 4096, s = 4096;
	char why[256];
	int optimized = sc->probe(why, sizeof(why)) == 0;

	CHECK(sc && sc->nparams[PERF_QUICK] == 6);
	for (uint64_t r = 8192; r <= 65536; r *= 2) {
		struct counted n, o;

		CHECK_OK(run_s000(r, 1u << REF_PATH_RT_TRUNCATE, &n));
		/* naive: the rest of the EOF rt extent, [S, roundup(S, R)) */
		CHECK_EQ(n.zeroed, files * ((s + r - 1) / r * r - s));
		CHECK_EQ(n.freed, files * (exts - 1));
		if (!optimized)
			continue;
		CHECK_OK(run_s000(r, 0, &o));
		/* optimized: the rest of the EOF block only */
		CHECK_EQ(o.zeroed, files * ((s + bs - 1) / bs * bs - s));
		CHECK_EQ(o.freed, n.freed);
	}
	if (!optimized)
		printf("  (optimized twin of path (a) not in the engine yet: "
		       "%s)\n", why);
}

/*
 * The benchmark check: on every scenario the engine can run, counters
 * only, the optimized twin does strictly less of the work its path exists
 * to save, and every seed figure holds at the quick scale.
 */
TEST(optimized_paths_do_less_work_than_their_naive_twins)
{
	struct perf_opts o = { .scale = PERF_QUICK, .counters_only = 1,
			       .quiet = 1 };
	unsigned ran = 0;

	for (unsigned i = 0; i < perf_nscenarios; i++) {
		struct perf_result *r = calloc(1, sizeof(*r));

		CHECK(r != NULL);
		perf_run(perf_scenarios[i], &o, r, NULL);
		if (r->status == PERF_SKIPPED) {
			printf("  %s: not available: %s\n",
			       perf_scenarios[i]->id, r->reason);
			free(r);
			continue;
		}
		ran++;
		CHECK_MSG(r->status == PERF_OK, "%s: %s",
			  perf_scenarios[i]->id, r->reason);
		CHECK_MSG(r->less_work_failures == 0, "%s: %u points where "
			  "the optimized twin does no less work",
			  perf_scenarios[i]->id, r->less_work_failures);
		CHECK_MSG(r->seed_mismatches == 0, "%s: %u of %u seed figures "
			  "differ", perf_scenarios[i]->id, r->seed_mismatches,
			  r->seed_checks);
		CHECK(r->seed_checks > 0);
		perf_result_free(r);
		free(r);
	}
	printf("  %u of %u scenarios available\n", ran, perf_nscenarios);
}

/* ---- scenario 004 against the seed's arithmetic ---- */

#define KIB 1024ull
#define MIB (1024 * KIB)

/*
 * The seed's cost model in closed form, for len bytes written back in
 * delalloc ranges of at most m bytes (append_max b naive, 128 MiB
 * optimized).  Uncompressed, each range is allocated in pieces of b from
 * its start, one zone append each, laid out from rt block 0; a piece that
 * crosses an rt bitmap group (a 4 KiB bitmap block less its 32-byte
 * header: 32,512 rt extents of 4k) is one append more.  A group boundary
 * is crossed unless a piece starts exactly on it.
 */
struct dac { uint64_t calls, chunks, cext, appends; };

static uint64_t up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static struct dac dac_formula(uint64_t len, uint64_t m, uint64_t b)
{
	uint64_t q = len / m, rem = len % m, c = 512 * KIB, x = 128 * KIB;
	uint64_t group = (4096 - 32) * 8 * 4096ull;
	struct dac d;

	d.calls = q + (rem != 0);
	/* a range of r: ceil(r / 512K) chunks; a whole chunk is 4
	 * compressed extents, a short one ceil(its length / 128K) */
	d.chunks = q * up(m, c) + up(rem, c);
	d.cext = q * (m / c * (c / x) + up(m % c, x)) +
		 rem / c * (c / x) + up(rem % c, x);
	d.appends = q * up(m, b) + up(rem, b);
	for (uint64_t g = group; g < len; g += group)
		d.appends += g % m % b != 0;
	return d;
}

TEST(seed_004_figures_follow_from_the_formula)
{
	const struct perf_scenario *sc = perf_scenario_find("004");
	struct perf_job j = { .variant = 0, .param = 16ull << 30,
			      .scale = PERF_FULL };
	struct dac n = dac_formula(16ull << 30, 672 * KIB, 672 * KIB);
	struct dac o = dac_formula(16ull << 30, 128 * MIB, 672 * KIB);
	struct perf_check c[PERF_MAX_CHECKS];
	unsigned nc, found = 0;

	/* the seed's thread: 24,967 calls, 49,933 chunks (49,934 rounded up
	 * there), 149,797 extents; 128 calls, 32,768 chunks, 131,072 */
	CHECK_EQ(n.calls, 24967);
	CHECK_EQ(n.chunks, 49933);
	CHECK_EQ(n.cext, 149797);
	CHECK_EQ(o.calls, 128);
	CHECK_EQ(o.chunks, 32768);
	CHECK_EQ(o.cext, 131072);
	/* and the scenario asserts exactly those at its full size */
	CHECK(sc && sc->seed);
	nc = sc->seed(&j, c, PERF_MAX_CHECKS);
	for (unsigned i = 0; i < nc; i++) {
		const char *name = sc->counters[c[i].counter].name;
		uint64_t want = UINT64_MAX;

		if (!strcmp(name, "delalloc_calls"))
			want = c[i].twin ? o.calls : n.calls;
		else if (!strcmp(name, "async_chunks"))
			want = c[i].twin ? o.chunks : n.chunks;
		else if (!strcmp(name, "compressed_extents"))
			want = c[i].twin ? o.cext : n.cext;
		else
			continue;
		CHECK_MSG(c[i].twin <= 1 && c[i].tolerance_pct == 0 &&
			  c[i].expect == want, "%s: %s expects %llu, not %llu",
			  c[i].what, name, (unsigned long long)c[i].expect,
			  (unsigned long long)want);
		found++;
	}
	CHECK_EQ(found, 6);
}

/* Counter name of c, or UINT64_MAX if the engine has none of that name. */
static uint64_t counter(const struct ref_counters *c, const char *name)
{
	uint64_t v;

	return perf_counter_get(c, name, &v) ? UINT64_MAX : v;
}

/* One counted run of 004: variant v, len bytes, through one twin. */
static int run_s004(unsigned v, uint64_t len, uint32_t naive, struct dac *out,
		    uint64_t *fallbacks, char *err, size_t errlen)
{
	const struct perf_scenario *sc = perf_scenario_find("004");
	struct perf_job j = { .variant = v, .param = len, .scale = PERF_QUICK,
			      .where = PERF_COUNT, .naive = naive };
	const struct ref_counters *c;
	struct perf_world w;
	uint64_t blocks;
	int rc;

	memset(&w, 0, sizeof(w));
	rc = sc->setup(&w, &j, err, errlen);
	if (!rc) {
		ref_counters_reset(w.fs);
		rc = sc->op(&w, &j);
		if (rc)
			perf_fail(err, errlen, rc, "sync: %s", ref_strerror(rc));
	}
	if (!rc) {
		c = ref_counters(w.fs);
		out->calls = counter(c, "delalloc_calls");
		out->chunks = counter(c, "async_chunks");
		out->cext = counter(c, "compressed_extents");
		out->appends = counter(c, "zone_appends");
		*fallbacks = counter(c, "compress_fallbacks");
		/* every block once (uncompressed: variant 1), or one block
		 * a compressed extent (zeros: counting runs keep no bytes) */
		blocks = counter(c, "rt_extents_allocated");
		if (blocks != (v == 1 ? len / 4096 : out->cext))
			rc = perf_fail(err, errlen, -EPROTO, "%llu rt blocks "
				       "allocated", (unsigned long long)blocks);
	}
	perf_world_close(&w);
	return rc;
}

/* 004's variants as this test reads them: name, append_max, compressed. */
static const struct { const char *name; uint64_t append; int zstd; }
	s004_variants[] = {
	{ "zstd-672k", 672 * KIB, 1 }, { "plain-672k", 672 * KIB, 0 },
	{ "zstd-128k", 128 * KIB, 1 }, { "zstd-1m", 1 * MIB, 1 },
	{ "zstd-672k-w2", 672 * KIB, 1 },   /* two compression workers */
};
#define S004_VARIANTS (sizeof(s004_variants) / sizeof(s004_variants[0]))

/*
 * At reduced sizes (a ragged last range; one past a 128 MiB range, so
 * the optimized twin makes two calls, which crosses an rt bitmap group
 * too), counters only, every variant and both twins: compressed, the
 * seed's formula exactly, one zone append per compressed extent;
 * uncompressed, no chunks, and the appends of the model.  Skipped only
 * while the engine says it has no path (e).
 */
TEST(scenario_004_counters_equal_the_seed_formula)
{
	const struct perf_scenario *sc = perf_scenario_find("004");
	const uint64_t sizes[] = { 16 * MIB + 64 * KIB, 128 * MIB + 672 * KIB };
	char why[256], err[256] = "";
	int rc;

	CHECK(sc && sc->probe);
	CHECK_EQ(sc->nvariants, S004_VARIANTS);
	for (unsigned v = 0; v < S004_VARIANTS; v++)
		CHECK(!strcmp(sc->variants[v], s004_variants[v].name));
	rc = sc->probe(why, sizeof(why));
	if (rc == -ENOSYS) {
		CHECK_MSG(strstr(why, "path (e)") != NULL, "%s", why);
		printf("  SKIPPED: %s\n", why);
		return;
	}
	CHECK_MSG(rc == 0, "probe: %d: %s", rc, why);
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (unsigned v = 0; v < S004_VARIANTS; v++) {
			uint64_t b = s004_variants[v].append;
			struct dac want[2] = {
				dac_formula(sizes[s], b, b),
				dac_formula(sizes[s], 128 * MIB, b),
			};

			for (int t = 0; t < 2; t++) {
				struct dac got;
				uint64_t fb = 0;

				rc = run_s004(v, sizes[s], t ? 0 :
					      1u << REF_PATH_DELALLOC_CAP,
					      &got, &fb, err, sizeof(err));
				CHECK_MSG(rc == 0, "%llu bytes, %s, twin %d: "
					  "%s", (unsigned long long)sizes[s],
					  s004_variants[v].name, t, err);
				CHECK_MSG(got.calls == want[t].calls,
					  "%llu bytes %s twin %d: %llu calls, "
					  "want %llu",
					  (unsigned long long)sizes[s],
					  s004_variants[v].name, t,
					  (unsigned long long)got.calls,
					  (unsigned long long)want[t].calls);
				if (!s004_variants[v].zstd) {
					CHECK_EQ(got.chunks, 0);
					CHECK_EQ(got.cext, 0);
					CHECK_EQ(got.appends,
						 want[t].appends);
					continue;
				}
				CHECK_EQ(got.chunks, want[t].chunks);
				CHECK_EQ(got.cext, want[t].cext);
				CHECK_EQ(got.appends, got.cext);
				CHECK_EQ(fb, 0);
			}
		}
}

/* ---- the driver's honesty ---- */

static unsigned fake_setups;
static int fake_probe_rc;

static int fake_probe(char *why, size_t len)
{
	return perf_fail(why, len, fake_probe_rc, "fake path is %s",
			 fake_probe_rc == -ENOSYS ? "missing" : "broken");
}

static int fake_setup(struct perf_world *w, const struct perf_job *j,
		      char *err, size_t len)
{
	fake_setups++;
	return -EIO;
}

static int fake_op(struct perf_world *w, const struct perf_job *j)
{
	return -EIO;
}

/* A path the engine lacks is skipped, never run or estimated; a probe
 * that fails otherwise is an error, not a skip. */
TEST(unimplemented_paths_are_skipped_never_faked)
{
	struct perf_scenario sc = fake;
	struct perf_opts o = { .quiet = 1 };
	struct perf_result *r = calloc(1, sizeof(*r));

	CHECK(r);
	sc.probe = fake_probe;
	sc.setup = fake_setup;
	sc.op = fake_op;
	fake_probe_rc = -ENOSYS;
	perf_run(&sc, &o, r, NULL);
	CHECK_EQ(r->status, PERF_SKIPPED);
	CHECK(strstr(r->reason, "fake path is missing") != NULL);
	CHECK_EQ(r->npts, 0);
	CHECK_EQ(fake_setups, 0);
	fake_probe_rc = -EIO;
	perf_run(&sc, &o, r, NULL);
	CHECK_EQ(r->status, PERF_ERROR);
	CHECK(strstr(r->reason, "fake path is broken") != NULL);
	CHECK_EQ(fake_setups, 0);
	fake_probe_rc = 0;
	perf_run(&sc, &o, r, NULL);
	CHECK_EQ(r->status, PERF_ERROR);
	CHECK_EQ(fake_setups, 1);
	perf_result_free(r);
	free(r);
}

/*
 * perf_hold_memory: what the engine frees stays in the process (the heap
 * is not trimmed), so a timed truncate does not pay the kernel to take
 * its pages back.  80 MiB of 4 KiB blocks, past the 64 MiB that glibc's
 * own trim threshold can grow to.  glibc only: the sanitizers' allocators
 * keep their memory their own way.
 */
TEST(perf_holds_freed_memory_in_the_process)
{
#if defined(__GLIBC__) && !defined(FSO_POISON_ASAN) && \
	!defined(FSO_POISON_MSAN)
	enum { N = 20480 };
	void **p = calloc(N, sizeof(*p));
	size_t held;

	CHECK(p != NULL);
	if (!p)
		return;
	perf_hold_memory();
	for (unsigned i = 0; i < N; i++) {
		p[i] = malloc(4096);
		CHECK(p[i] != NULL);
		if (p[i])
			memset(p[i], 0x5a, 4096);
	}
	held = mallinfo2().arena;
	CHECK(held >= (size_t)N * 4096);
	for (unsigned i = N; i-- > 0;)
		free(p[i]);
	CHECK_MSG(mallinfo2().arena >= held, "heap %zu bytes, was %zu",
		  mallinfo2().arena, held);
	free(p);
#else
	printf("    skipped: glibc's allocator only\n");
#endif
}

int main(int argc, char **argv) { return test_main(argc, argv); }
