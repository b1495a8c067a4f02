/*
 * round_plan.h - how `fsoracle run` hands out its rounds (tools/run_jobs.h
 * runs them in worker processes).
 *
 * A round's ops depend on the seed and the round's number alone
 * (gen_goto_round), so it does not matter who runs a round or when.
 * The plan carves --ops into rounds of --round ops, numbered from 1
 * (the last one shorter); a worker claims the next, runs it on targets
 * of its own and claims again.  A round that stalls (the targets ran out
 * of space unevenly) gives back the ops it did not run, and once the
 * carved rounds are gone they make further rounds, numbered on (how many
 * ops each of those gets depends on when the stalls came: only the
 * carved rounds are the same whoever runs them).  Without --ops, rounds
 * are whole and numbered on until the deadline.
 *
 *   plan (shared)   next 1 2 3 ... planned | extra planned+1 ... (leftover)
 *   worker A        claim 1, run, claim 3, run, ...
 *   worker B        claim 2, run (stalls: leftover += the rest), claim 4
 *
 * Its counters are lock-free atomics, so a plan in memory shared by
 * processes (MAP_SHARED) serves them all.
 */
#ifndef FSORACLE_HARNESS_ROUND_PLAN_H
#define FSORACLE_HARNESS_ROUND_PLAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct run_plan {
	uint64_t max_ops;          /* 0: no limit (a deadline ends the run) */
	uint64_t round_ops;        /* ops a round runs at most              */
	uint64_t planned;          /* rounds max_ops is carved into
				      (UINT64_MAX without a limit)          */
	atomic_uint_fast64_t next;     /* the next carved round to hand out */
	atomic_uint_fast64_t leftover; /* ops stalled rounds did not run    */
	atomic_uint_fast64_t extra;    /* the number of the next round made
					  of leftover                       */
	atomic_uint_fast64_t done;     /* ops run, every worker (progress)  */
	atomic_int stop;               /* a worker failed: no more ops      */
	atomic_uint failures;          /* failure logs named so far         */
	atomic_int printing;           /* a worker writes its report        */
};

void run_plan_init(struct run_plan *p, uint64_t max_ops, uint64_t round_ops);
/* The rounds max_ops is carved into (UINT64_MAX without a limit). */
uint64_t run_plan_rounds(const struct run_plan *p);
/*
 * The next round to run, *round, and the ops it may run, *ops: false
 * when there is none (every op handed out, or a worker failed).
 */
bool run_plan_claim(struct run_plan *p, uint64_t *round, uint64_t *ops);
/* A round stalled with unused ops left: later rounds run them. */
void run_plan_give_back(struct run_plan *p, uint64_t unused);
/*
 * The --ops that runs round `round` up to its op `in_round` again, with
 * any number of jobs: a carved round's ops come after as many as carve
 * the rounds before it, whatever ran.  0 for a round made of leftover.
 */
uint64_t run_plan_upto(const struct run_plan *p, uint64_t round,
		       uint64_t in_round);

#endif
