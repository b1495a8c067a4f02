/*
 * cutall.h - a power cut at every durability point of an op sequence.
 *
 * The sequence runs on the engine over a crash layer ("crash:mem:SIZE",
 * or "crash:pmem:PATH,size=SIZE" for persistent memory) in lock step
 * with the model, under the checker (check.h).  A first run counts the
 * durability points the engine issues after mkfs: flushes and FUA
 * writes on a block device, persists (flush + drain) on pmem.  Then, for
 * each point k, fresh runs from mkfs fail the power there (hw.h,
 * hw_crash_set_plan) and cut:
 *
 *   exact      right after point k: only what is durable survives (the
 *              prefix of the run up to k, nothing issued later)
 *   subset s   instead of point k: each write since the point before
 *              survives or not by a seeded coin, and what is dropped is
 *              torn in the device's atomic units (sectors; 8-byte
 *              words on pmem), also by coin
 *
 * and then recover: the crash op (abandon, mount: the journal replays),
 * after which the checker's rules hold or the state fails: the mount
 * succeeds, every file fsynced (or synced, or remounted) and unchanged
 * since reads back exactly, size and bytes, the audit (fsck) is clean;
 * then a remount and a final verify and audit.  The files an op changed
 * while the power failed are not durable (the op did not finish before
 * the cut); an op whose last I/O was the failing point did finish.
 *
 * A `crash` op inside the sequence is a cut of its own that keeps only
 * what is durable.  The header's dev= gives the size (mkfs= and mount=
 * are used; targets= is not: always the engine and the model).  Sequences that need a realtime device, or whose
 * header names a device other than mem:, are not cut (-EOPNOTSUPP).
 */
#ifndef FSORACLE_HARNESS_CUTALL_H
#define FSORACLE_HARNESS_CUTALL_H

#include <stdint.h>
#include <stdio.h>

#include "harness/op.h"

enum cutall_dev { CUTALL_MEM = 0, CUTALL_PMEM };

/* Zero fields: the defaults noted. */
struct cutall_cfg {
	const char *name;       /* the sequence, for messages               */
	enum cutall_dev dev;
	const char *pmem_dir;   /* where the pmem file goes ($TMPDIR, /tmp) */
	unsigned subsets;       /* subset cuts per point, besides the exact */
	int whole;              /* subsets keep or drop whole writes: no
				   tearing in atomic units                  */
	uint64_t seed;          /* of the subsets' coins                    */
	uint64_t max_points;    /* cut at most this many points, spread
				   evenly, the first and last always (all)  */
	uint64_t only_point;    /* cut at this point alone (0: every one)   */
	/*
	 * A deliberately broken device, to show the check fails: every
	 * point of the lie_sync-th fsync/fdatasync/sync op of the sequence
	 * (1-based) is acknowledged without making anything durable.
	 */
	unsigned lie_sync;
	FILE *out;              /* one line per failure, and the first as an
				   op log (NULL: none)                      */
	const char *log_dir;    /* the first failure's op log goes here too,
				   as NAME-cutK.ops (NULL: printed only)    */
	FILE *progress;         /* one character per state (NULL: none)     */
};

struct cutall_stats {
	uint64_t points;        /* durability points of the sequence        */
	uint64_t cut_points;    /* points cut at                            */
	uint64_t states;        /* crash states recovered and checked       */
	uint64_t failures;
	uint64_t skipped_ops;   /* ops the engine cannot do, skipped        */
	char skipped[200];      /* which: "skipped 1 of 13 ops: reflink x1 ..." */
	char first[600];        /* the first failure, one line              */
};

/*
 * Cut seq at its durability points; st accumulates (zero it first).
 * Returns 0 (failures are counted in st, not returned), -EOPNOTSUPP for
 * a sequence that cannot be cut here, or -errno for a run that could
 * not be set up; err says why.
 */
int cutall_run(const struct op_seq *seq, const struct cutall_cfg *cfg,
	       struct cutall_stats *st, char *err, size_t errlen);

/* Add one's counts to sum (and its first failure, if sum has none). */
void cutall_stats_add(struct cutall_stats *sum, const struct cutall_stats *one);

#endif
