/*
 * run_jobs.h - the rounds of `fsoracle run` (harness/round_plan.h) run
 * by --jobs N worker processes side by side.
 *
 * With one job the plan lives in this process and every round runs here,
 * in order.  With more, it lives in a shared mapping: each worker is a
 * child process (fork) with its own targets, checker and generator,
 * claiming rounds from the plan, and sends its counts back through a
 * pipe when it ends.  A worker that finds a failure stops the others at
 * their next op.  A worker ends with its parent (PR_SET_PDEATHSIG).
 */
#ifndef FSORACLE_TOOLS_RUN_JOBS_H
#define FSORACLE_TOOLS_RUN_JOBS_H

#include "harness/check.h"
#include "harness/round_plan.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define RUN_JOBS_MAX 256

/* A plan (run_plan_init'ed) in a mapping the workers share, or NULL. */
struct run_plan *run_plan_shared(uint64_t max_ops, uint64_t round_ops);
void run_plan_unmap(struct run_plan *p);

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
