/*
 * test_round_plan.c - how `fsoracle run` hands out its rounds
 * (harness/round_plan.h): --ops carved into numbered rounds, the ops a
 * stalled round gives back run by rounds numbered after those, never an
 * op more than --ops, a stop ends the handing out, and the --ops that
 * repeats a failure.
 */
#include "harness/round_plan.h"
#include "tests/test.h"

/* Claim every round left: their ops summed in *sum, how many in *n, the
 * last number seen in *last (each above the one before). */
static void claim_all(struct run_plan *p, uint64_t *last, unsigned *n,
		      uint64_t *sum)
{
	uint64_t round, ops;

	*n = 0;
	*sum = 0;
	while (run_plan_claim(p, &round, &ops)) {
		CHECK(round > *last);
		CHECK(ops > 0 && ops <= p->round_ops);
		*last = round;
		*sum += ops;
		++*n;
	}
}

TEST(ops_are_carved_into_numbered_rounds)
{
	struct run_plan p;
	uint64_t round, ops, last = 0, sum;
	unsigned n;

	run_plan_init(&p, 25000, 10000);
	CHECK_EQ(run_plan_rounds(&p), 3u);
	CHECK(run_plan_claim(&p, &round, &ops));
	CHECK_EQ(round, 1u);
	CHECK_EQ(ops, 10000u);
	CHECK(run_plan_claim(&p, &round, &ops));
	CHECK_EQ(round, 2u);
	CHECK_EQ(ops, 10000u);
	CHECK(run_plan_claim(&p, &round, &ops));
	CHECK_EQ(round, 3u);
	CHECK_EQ(ops, 5000u);          /* the last one shorter */
	CHECK(!run_plan_claim(&p, &round, &ops));
	claim_all(&p, &last, &n, &sum);
	CHECK_EQ(sum, 0u);
}

TEST(a_stalled_rounds_ops_make_rounds_numbered_on)
{
	struct run_plan p;
	uint64_t round, ops, last, sum;
	unsigned n;

	run_plan_init(&p, 30000, 10000);
	for (int i = 0; i < 3; i++)
		CHECK(run_plan_claim(&p, &round, &ops));
	run_plan_give_back(&p, 3000);   /* round 2 stalled 3000 short  */
	run_plan_give_back(&p, 12000);  /* round 3 stalled at once     */
	/* 15000 left: round 4 of 10000, round 5 of 5000 */
	CHECK(run_plan_claim(&p, &round, &ops));
	CHECK_EQ(round, 4u);
	CHECK_EQ(ops, 10000u);
	CHECK(run_plan_claim(&p, &round, &ops));
	CHECK_EQ(round, 5u);
	CHECK_EQ(ops, 5000u);
	CHECK(!run_plan_claim(&p, &round, &ops));
	last = 5;
	run_plan_give_back(&p, 700);    /* round 5 stalled too         */
	claim_all(&p, &last, &n, &sum);
	CHECK_EQ(sum, 700u);
	CHECK_EQ(n, 1u);
	CHECK_EQ(last, 6u);
}

/* Every op handed out once: claimed less given back is --ops exactly. */
TEST(no_op_more_than_asked)
{
	struct run_plan p;
	uint64_t round, ops, run = 0;
	unsigned k = 0;

	run_plan_init(&p, 123457, 1000);
	while (run_plan_claim(&p, &round, &ops)) {
		uint64_t stalled = (k++ % 7 == 3) ? ops / 3 : 0;

		run_plan_give_back(&p, stalled);
		run += ops - stalled;
	}
	CHECK_EQ(run, 123457u);
}

TEST(without_ops_rounds_are_whole_until_stopped)
{
	struct run_plan p;
	uint64_t round, ops;

	run_plan_init(&p, 0, 500);
	for (uint64_t r = 1; r <= 1000; r++) {
		CHECK(run_plan_claim(&p, &round, &ops));
		CHECK_EQ(round, r);
		CHECK_EQ(ops, 500u);
		run_plan_give_back(&p, 100); /* nothing to give back to */
	}
	CHECK_EQ(atomic_load(&p.leftover), 0u);
	atomic_store(&p.stop, 1);
	CHECK(!run_plan_claim(&p, &round, &ops));
}

TEST(a_stop_ends_the_handing_out)
{
	struct run_plan p;
	uint64_t round, ops;

	run_plan_init(&p, 100000, 1000);
	CHECK(run_plan_claim(&p, &round, &ops));
	atomic_store(&p.stop, 1);
	CHECK(!run_plan_claim(&p, &round, &ops));
}

TEST(upto_repeats_a_carved_round_not_a_leftover_one)
{
	struct run_plan p;

	run_plan_init(&p, 25000, 10000);
	CHECK_EQ(run_plan_upto(&p, 1, 17), 17u);
	CHECK_EQ(run_plan_upto(&p, 3, 17), 20017u);
	CHECK_EQ(run_plan_upto(&p, 4, 17), 0u);    /* made of leftover */
	run_plan_init(&p, 0, 10000);
	CHECK_EQ(run_plan_upto(&p, 12, 1), 110001u);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
