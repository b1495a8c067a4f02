/*
 * run_jobs.h - how `fsoracle run` hands out its rounds: to itself, one
 * after another, or (--jobs N) to N worker processes side by side.
 *
 * A round's ops depend on the seed and the round's number alone
 * (gen_goto_round), so it does not matter who runs a round or when.
 * The plan carves --ops into rounds of --round ops, numbered from 1
 * (the last one shorter); a worker claims the next, runs it on targets
 * of its own and claims again.  A round that stalls (the targets ran out
 * of space unevenly) gives back the ops it did not run, and once the
 * carved rounds are gone they make further rounds, numbered on.  Without
 * --ops, rounds are whole and numbered on until the deadline.
 *
 *   plan (shared)   next 1 2 3 ... planned | extra planned+1 ... (leftover)
 *   worker A        claim 1, run, claim 3, run, ...
 *   worker B        claim 2, run (stalls: leftover += the rest), claim 4
 *
 * With one job the plan lives in this process and every round runs here,
 * in order.  With more, it lives in a shared mapping: each worker is a
 * child process (fork) with its own targets, checker and generator,
 * and sends its counts back through a pipe when it ends.  A worker that
 * finds a failure stops the others at their next op.
 */
#ifndef FSORACLE_TOOLS_RUN_JOBS_H
#define FSORACLE_TOOLS_RUN_JOBS_H

#include "harness/check.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define RUN_JOBS_MAX 256

struct run_plan {
	uint64_t max_ops;          /* 0: no limit (a deadline ends the run) */
	uint64_t round_ops;        /* ops a round runs at most              */
	uint64_t planned;          /* rounds max_ops is carved into         */
	atomic_uint_fast64_t next;     /* the next carved round to hand out */
	atomic_uint_fast64_t leftover; /* ops stalled rounds did not run    */
	atomic_uint_fast64_t extra;    /* the number of the next round made
					  of leftover                       */
	atomic_uint_fast64_t done;     /* ops run, every worker (progress)  */
	atomic_int stop;               /* a worker failed: no more ops      */
	atomic_uint failures;          /* failure logs named so far         */
};

/* A plan in this process's memory (one job). */
void run_plan_init(struct run_plan *p, uint64_t max_ops, uint64_t round_ops);
/* One in a mapping the workers share (run_plan_init'ed), or NULL. */
struct run_plan *run_plan_shared(uint64_t max_ops, uint64_t round_ops);
void run_plan_unmap(struct run_plan *p);
/* The rounds max_ops is carved into (UINT64_MAX without a limit). */
uint64_t run_plan_rounds(const struct run_plan *p);

/*
 * The next round to run, *round, and the ops it may run, *ops: false
 * when there is none (every op handed out, or a worker failed).
 */
bool run_plan_claim(struct run_plan *p, uint64_t *round, uint64_t *ops);
/* A round stalled with unused ops left: later rounds run them. */
void run_plan_give_back(struct run_plan *p, uint64_t unused);

/* What a worker sends back when it ends. */
struct run_result {
	int rc;                    /* its exit status (0: all agreed)       */
	int failure;               /* its failure log's index (run_plan's
				      failures), -1: it wrote none          */
	int signal;                /* set by run_jobs: the signal that
				      killed it (no result then)           */
	uint64_t done;             /* ops it ran                            */
	uint64_t upto;             /* its failure: the --ops that repeats it
				      (0: none to give)                    */
	struct check_stats st;
};

/* One worker: job is 0..n-1.  Fills *res (rc, failure, done, st). */
typedef void (*run_worker_fn)(void *arg, int job, struct run_result *res);

/*
 * Run fn in n worker processes over plan p (run_plan_shared), printing
 * "  N ops, X ops/s" about once a second on stderr unless quiet (t0: the
 * run's start, mono_seconds), and wait for them all.  res[0..n-1] gets
 * what each sent, or its signal.  0, or -errno when a worker could not be
 * started (those started are stopped and waited for).
 */
int run_jobs(int n, run_worker_fn fn, void *arg, struct run_plan *p,
	     bool quiet, double t0, struct run_result *res);

/* CPUs this process may run on (its affinity mask), at least 1. */
int run_jobs_cpus(void);

#endif
