/*
 * minimize.h - delta debugging for op sequences: shrink a failing
 * sequence to a minimal one that fails the same way (the same
 * check_status class), as ddmin does.
 *
 *   1. cut everything after the op that failed;
 *   2. remove chunks (halves, quarters, ... as in ddmin) while it fails;
 *   3. remove single ops, repeatedly, until no single removal keeps it
 *      failing (1-minimal);
 *   4. shrink values: offsets, lengths and sizes toward 0, halves, block
 *      and sector multiples; flags and -S patterns away.
 *
 * Every test is a fresh run: the targets are reset and a new checker
 * replays the candidate from scratch.
 */
#ifndef FSORACLE_HARNESS_MINIMIZE_H
#define FSORACLE_HARNESS_MINIMIZE_H

#include <stdint.h>

#include "harness/check.h"
#include "harness/op.h"
#include "harness/target.h"

struct min_cfg {
	uint32_t max_runs;      /* give up after this many runs (default 20000) */
	/* Progress lines ("42 ops, 17 runs"); may be NULL. */
	void (*progress)(void *arg, const char *line);
	void *progress_arg;
};

struct min_stats {
	int status;             /* the failure class kept (0: seq passes)    */
	size_t ops_before, ops_after;
	uint32_t runs;
	int gave_up;            /* max_runs reached before step 4 finished   */
};

/*
 * Minimize seq in place.  ccfg is used for every run (quiet is forced,
 * log_path ignored).  Returns 0 (see st->status) or -errno.
 */
int minimize(struct target **t, int n, const struct check_cfg *ccfg,
	     const struct min_cfg *mcfg, struct op_seq *seq,
	     struct min_stats *st);

#endif
