/*
 * test_perf_seq.c - the sequential test of the performance oracle on
 * synthetic samples from a seeded generator (never timed): its interval
 * against the published signed-rank table and a brute-force count, its
 * false-alarm rate on simulated A/A streams, its power on a simulated 5%
 * cost, and an honest "inconclusive" where the noise is too large.
 */
#include <math.h>

#include "harness/rng.h"
#include "perf/perf.h"
#include "tests/test.h"

static double uniform(struct rng *g)
{
	return (rng_next(g) >> 11) * (1.0 / 9007199254740992.0);
}

/* A standard normal (Box-Muller). */
static double normal(struct rng *g)
{
	double u = uniform(g), v = uniform(g);

	return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

/*
 * One round's log ratio as a shared machine makes it: the true shift,
 * normal noise of relative size sigma, and with stalls one round in ten
 * hit by a stall of up to +60% on one side (A or B at random: the long
 * tail); without, the spread a quiet machine's CPU clock gives.
 */
static double round_value(struct rng *g, double shift, double sigma,
			  int stalls)
{
	double x = log(shift) + sigma * normal(g);

	if (stalls && rng_below(g, 10) == 0)
		x += (rng_below(g, 2) ? 1 : -1) * log(1 + 0.6 * uniform(g));
	return x;
}

/*
 * Run one stream to a decision or max_rounds (then the budget stop);
 * two-sample against ref[0..nref) when nref is not 0.
 */
static enum perf_seq_state stream_ref(struct rng *g, double shift,
				      double sigma, int stalls,
				      unsigned max_rounds, double alpha,
				      const double *ref, unsigned nref,
				      struct perf_seq *s)
{
	struct perf_seq_opts o = { .alpha = alpha, .min_effect = 0.05 };

	perf_seq_init(s, &o);
	if (nref && perf_seq_set_reference(s, ref, nref))
		return PERF_SEQ_INCONCLUSIVE;
	for (unsigned i = 0; i < max_rounds; i++)
		if (perf_seq_add(s, round_value(g, shift, sigma, stalls)) !=
		    PERF_SEQ_RUNNING)
			return s->state;
	return perf_seq_stop(s);
}

static enum perf_seq_state stream(struct rng *g, double shift, double sigma,
				  unsigned max_rounds, double alpha,
				  struct perf_seq *s)
{
	return stream_ref(g, shift, sigma, 1, max_rounds, alpha, NULL, 0, s);
}

static enum perf_seq_state quiet_stream(struct rng *g, double shift,
					double sigma, unsigned max_rounds,
					double alpha, struct perf_seq *s)
{
	return stream_ref(g, shift, sigma, 0, max_rounds, alpha, NULL, 0, s);
}

TEST(looks_come_at_ten_rounds_times_root_two)
{
	static const unsigned want[] = { 10, 14, 20, 28, 40, 57, 80, 113,
					 160, 226, 320, 453 };

	for (unsigned k = 0; k < 12; k++)
		CHECK_EQ(perf_seq_look_at(k), want[k]);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The looks' shares of alpha fall as k^-1.5 and add up to 1. */
TEST(looks_spend_falling_shares_of_alpha_that_add_up_to_one)
{
	double sum = 0;

	for (unsigned k = 0; k < PERF_SEQ_LOOKS; k++) {
		double sh = perf_seq_look_share(k, 0);

		CHECK(sh > 0);
		if (k)
			CHECK(sh < perf_seq_look_share(k - 1, 0));
		CHECK(fabs(sh / perf_seq_look_share(0, 0) - pow(k + 1, -1.5)) <
		      1e-12);
		sum += sh;
	}
	CHECK(fabs(sum - 1) < 1e-12);
	CHECK(perf_seq_look_share(0, 0) > 0.45 &&
	      perf_seq_look_share(0, 0) < 0.5);
	CHECK(perf_seq_look_share(PERF_SEQ_LOOKS, 0) == 0);
	CHECK(perf_seq_look_share(0, 1) == 1);
}

/*
 * n = 10 at a look whose two-sided level is 5% (alpha = 5% over the first
 * look's share): the
 * published signed-rank table gives the critical value 8 (P(T <= 8) =
 * 0.0244, P(T <= 9) = 0.0322), so the interval runs from the 9th smallest
 * to the 9th largest of the 55 Walsh averages.  The probabilities are
 * counted here over all 1024 sign patterns as well.
 */
TEST(first_look_interval_is_the_signed_rank_inversion)
{
	static const double x[10] = { 0.03, -0.01, 0.07, 0.02, 0.05, -0.04,
				      0.08, 0.01, 0.06, 0.04 };
	struct perf_seq_opts o = { .alpha = 0.05 / perf_seq_look_share(0, 0),
				   .min_effect = 0.5 };
	struct perf_seq s;
	double w[55];
	unsigned t = 0, le8 = 0, le9 = 0;

	for (unsigned m = 0; m < 1024; m++) {
		unsigned sum = 0;

		for (unsigned r = 1; r <= 10; r++)
			sum += (m >> (r - 1) & 1) ? r : 0;
		le8 += sum <= 8;
		le9 += sum <= 9;
	}
	CHECK_EQ(le8, 25u);   /* 25/1024 = 0.0244 <= 0.025 */
	CHECK_EQ(le9, 33u);   /* 33/1024 = 0.0322 >  0.025 */
	for (unsigned i = 0; i < 10; i++)
		for (unsigned j = i; j < 10; j++)
			w[t++] = (x[i] + x[j]) / 2;
	qsort(w, 55, sizeof(w[0]), cmp_d);
	perf_seq_init(&s, &o);
	for (unsigned i = 0; i < 10; i++)
		perf_seq_add(&s, x[i]);
	CHECK_EQ(s.looks, 1u);
	CHECK(fabs(s.lo - w[8]) < 1e-12);
	CHECK(fabs(s.hi - w[46]) < 1e-12);
	CHECK(fabs(s.est - w[27]) < 1e-12);
	/* it lies above 0: slower, by exp(lo)-1 .. exp(hi)-1 */
	CHECK(s.lo > 0);
	CHECK_EQ(s.state, PERF_SEQ_SLOWER);
	perf_seq_free(&s);
}

TEST(aa_streams_false_alarm_at_most_alpha)
{
	struct rng g;
	unsigned alarms = 0, same = 0, trials = 1000;

	rng_seed(&g, 19);
	for (unsigned t = 0; t < trials; t++) {
		struct perf_seq s;
		enum perf_seq_state st = stream(&g, 1.0, 0.10, 400, 0.05, &s);

		alarms += st == PERF_SEQ_SLOWER || st == PERF_SEQ_FASTER;
		same += st == PERF_SEQ_SAME;
		perf_seq_free(&s);
	}
	CHECK_MSG(alarms <= trials / 20, "%u false alarms in %u", alarms,
		  trials);
	/* and the honest answer is nearly always reached */
	CHECK_MSG(same >= trials * 9 / 10, "%u of %u said no change", same,
		  trials);
}

/* The same at a corrected share (10 comparisons: 0.5% each). */
TEST(aa_streams_at_a_corrected_alpha_stay_under_it)
{
	struct rng g;
	unsigned alarms = 0, trials = 2000;

	rng_seed(&g, 20);
	for (unsigned t = 0; t < trials; t++) {
		struct perf_seq s;
		enum perf_seq_state st = stream(&g, 1.0, 0.05, 200, 0.005, &s);

		alarms += st == PERF_SEQ_SLOWER || st == PERF_SEQ_FASTER;
		perf_seq_free(&s);
	}
	CHECK_MSG(alarms <= trials / 200, "%u false alarms in %u", alarms,
		  trials);
}

TEST(a_planted_five_percent_is_found_in_95_percent_of_streams)
{
	struct rng g;
	unsigned found = 0, bracket = 0, trials = 400;
	unsigned long rounds = 0;

	rng_seed(&g, 21);
	for (unsigned t = 0; t < trials; t++) {
		struct perf_seq s;
		enum perf_seq_state st = stream(&g, 1.05, 0.10, 460, 0.005, &s);

		found += st == PERF_SEQ_SLOWER;
		bracket += st == PERF_SEQ_SLOWER && s.lo < log(1.05) &&
			   s.hi > log(1.05);
		rounds += s.n;
		perf_seq_free(&s);
	}
	CHECK_MSG(found >= trials * 95 / 100, "found %u of %u", found,
		  trials);
	/* the reported range holds the truth (it may miss at most alpha) */
	CHECK_MSG(bracket >= found * 95 / 100, "%u of %u ranges hold 5%%",
		  bracket, found);
	CHECK_MSG(rounds / trials < 400, "mean %lu rounds", rounds / trials);
}

/*
 * A run of three scenarios (six comparisons, 0.83% each): 10 rounds of a
 * clear 5% with ±1% noise decide at the first look.  An equal twelfth of
 * 0.83% per look could not: below 2/1024 no signed-rank interval at 10
 * rounds is finite.
 */
TEST(a_clear_five_percent_is_decided_at_the_first_look_of_six_comparisons)
{
	struct rng g;

	rng_seed(&g, 25);
	for (unsigned t = 0; t < 200; t++) {
		struct perf_seq s;
		enum perf_seq_state st = quiet_stream(&g, 1.05, 0.01, 10,
						      0.05 / 6, &s);

		CHECK_EQ(s.looks, 1u);
		CHECK_EQ(st, PERF_SEQ_SLOWER);
		CHECK(s.lo > 0 && s.lo < log(1.05) && s.hi > log(1.05));
		perf_seq_free(&s);
	}
}

/*
 * The same run at ±3% per round: a planted 5% is found within the 20
 * rounds a minute buys in 95% of the streams, and A/A streams stay under
 * the comparison's 0.83%.
 */
TEST(a_planted_five_percent_at_three_percent_noise_is_found_in_20_rounds)
{
	struct rng g;
	unsigned found = 0, alarms = 0, trials = 1000;

	rng_seed(&g, 26);
	for (unsigned t = 0; t < trials; t++) {
		struct perf_seq s;
		enum perf_seq_state st;

		found += quiet_stream(&g, 1.05, 0.03, 20, 0.05 / 6, &s) ==
			 PERF_SEQ_SLOWER;
		perf_seq_free(&s);
		st = quiet_stream(&g, 1.0, 0.03, 20, 0.05 / 6, &s);
		alarms += st == PERF_SEQ_SLOWER || st == PERF_SEQ_FASTER;
		perf_seq_free(&s);
	}
	CHECK_MSG(found >= trials * 95 / 100, "found %u of %u", found, trials);
	CHECK_MSG(alarms <= trials * 5 / 600 + 3, "%u false alarms in %u",
		  alarms, trials);
}

TEST(a_faster_build_is_faster)
{
	struct rng g;
	struct perf_seq s;

	rng_seed(&g, 22);
	CHECK_EQ(stream(&g, 0.8, 0.05, 400, 0.05, &s), PERF_SEQ_FASTER);
	CHECK(s.hi < 0 && s.lo > log(0.7));
	perf_seq_free(&s);
}

TEST(noise_beyond_the_budget_is_inconclusive_and_says_how_much)
{
	struct rng g;
	struct perf_seq s;
	char text[96];
	double h;

	rng_seed(&g, 23);
	/* +-40% per round, 30 rounds: no interval narrows to 5% */
	CHECK_EQ(stream(&g, 1.0, 0.40, 30, 0.05, &s), PERF_SEQ_INCONCLUSIVE);
	CHECK_EQ(s.n, 30u);
	CHECK_EQ(s.looks, 5u);  /* 10, 14, 20, 28, and the budget's last */
	h = 100 * (exp(s.hi) - exp(s.lo)) / 2;
	CHECK(h > 5);
	perf_seq_text(&s, 60, text, sizeof(text));
	{
		char want[96];

		snprintf(want, sizeof(want), "inconclusive: noise ±%.2g%% "
			 "after 60 s", h);
		CHECK_MSG(!strcmp(text, want), "'%s' against '%s'", text, want);
	}
	perf_seq_free(&s);
}

TEST(verdict_texts_say_which_way_and_how_much)
{
	struct perf_seq s;
	char t[96];

	perf_seq_init(&s, NULL);
	s.state = PERF_SEQ_SAME;
	perf_seq_text(&s, 3, t, sizeof(t));
	CHECK(!strcmp(t, "no change within ±5%"));
	s.state = PERF_SEQ_SLOWER;
	s.lo = log(1.06);
	s.hi = log(1.09);
	perf_seq_text(&s, 3, t, sizeof(t));
	CHECK_MSG(!strcmp(t, "slower by 6-9%"), "'%s'", t);
	s.state = PERF_SEQ_FASTER;
	s.lo = log(0.8);
	s.hi = log(0.9);
	perf_seq_text(&s, 3, t, sizeof(t));
	CHECK_MSG(!strcmp(t, "faster by 10-20%"), "'%s'", t);
	perf_seq_free(&s);
}

/* Two-sample form: a saved run as the reference (--baseline). */
TEST(two_sample_streams_find_five_percent_and_keep_alarms_low)
{
	struct rng g;
	unsigned alarms = 0, found = 0, trials = 300;

	rng_seed(&g, 24);
	for (unsigned t = 0; t < trials; t++) {
		double ref[60];

		for (int planted = 0; planted < 2; planted++) {
			struct perf_seq s;
			enum perf_seq_state st;

			for (unsigned i = 0; i < 60; i++)
				ref[i] = round_value(&g, 1.0, 0.03, 1);
			st = stream_ref(&g, planted ? 1.05 : 1.0, 0.03, 1, 200,
					0.05, ref, 60, &s);
			if (planted)
				found += st == PERF_SEQ_SLOWER;
			else
				alarms += st == PERF_SEQ_SLOWER ||
					  st == PERF_SEQ_FASTER;
			perf_seq_free(&s);
		}
	}
	CHECK_MSG(alarms <= trials / 20, "%u false alarms in %u", alarms,
		  trials);
	CHECK_MSG(found >= trials * 95 / 100, "found %u of %u", found, trials);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
