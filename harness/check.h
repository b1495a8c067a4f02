/*
 * check.h - the checker: run one op sequence on several targets in lock
 * step and compare what a user can observe.
 *
 *   - every op's result (byte count or errno) on every target;
 *   - every pread's bytes;
 *   - the file's size (and existence) after every op that may change it;
 *   - a full verify of every file (existence, size, all bytes, as fsx -X)
 *     after remount and crash, every verify_every ops, at the end, and
 *     after every op with verify_each_op;
 *   - the audit (fsck) of every target that has one after remount and
 *     crash, every audit_every ops and at the end; by default (no
 *     audit_every given) after fsync, fdatasync and sync too, and every
 *     1000 ops;
 *   - durability across crash: the checker knows which files were made
 *     durable (fsync/fdatasync of the file, sync, remount) and unchanged
 *     since; after a crash those must read back exactly.  The others may
 *     legitimately hold any state the engine recovered, so every target
 *     adopts, for each of them, the state of the first target that can
 *     crash (a later issue narrows what is acceptable).
 *
 *   - running out of space: a target that answers -ENOSPC (or writes
 *     or copies short) where another succeeds is asked how much room it
 *     has (target_ops.space: statfs's avail on the file's device).  With
 *     at least what the op may need plus a margin (16 allocation units
 *     and 1/32 of the device) still available, and 1 MiB (or 64 blocks,
 *     if more) on the device of the extent maps, the ENOSPC is a bug: a
 *     result mismatch.  With less it is accepted: every other target takes the op's range of
 *     that file (to its end for a shift or an exchange, all of it for
 *     another op) and its size as the full target left them (the one
 *     that wrote least, when several ran out), writing only where they
 *     differ, and the run goes on from there.  Outside that span the
 *     targets agreed before the op and an op that fails changes nothing
 *     there: a difference the next verify finds there is a bug, never
 *     taken over.  Should a target legitimately lack the room even for that,
 *     the targets cannot be brought back in step: the checker stalls
 *     (check_stalled), checks nothing more until a reset, and says so;
 *     the soak starts a new round.  A target without the space call (a
 *     host directory) cannot be judged: its ENOSPC stays a mismatch.
 *
 *   - running out of memory: under a memory limit (a finite RLIMIT_AS
 *     or RLIMIT_DATA, or strict overcommit: where malloc can return
 *     NULL) a target's allocation can fail, and what it does then (an
 *     -ENOMEM, a read or write cut short, a layout of its fallback, a
 *     state its error path left) is no finding: a replay with more
 *     memory decides.  The checker clears errno as each of its calls
 *     (check_op, check_verify) begins and reads it as it ends: ENOMEM
 *     means an allocation failed in the call (malloc, mmap, the
 *     compression library's).  Under a limit, a failure reported in
 *     such a call, or later in the same round, stops the run with
 *     CHECK_NOMEM, its log written for that replay.  Without a limit
 *     (and under one, with no allocation failed) every failure is a
 *     finding: an -ENOMEM no limit explains, or one out of nothing, is a
 *     result mismatch as before.
 *
 * The reference is the first model in the list, else the first target;
 * every other target is compared with it.  Ops any target cannot do are
 * skipped on all of them, counted and reported, never silently dropped.
 *
 * A failure stops the run and returns its class, which the commands use
 * as their exit status:
 */
#ifndef FSORACLE_HARNESS_CHECK_H
#define FSORACLE_HARNESS_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "harness/op.h"
#include "harness/target.h"

enum check_status {
	CHECK_OK = 0,
	CHECK_DATA = 10,   /* bytes differ (a pread, a verify)               */
	CHECK_SIZE = 11,   /* a size differs, or a file exists on one only   */
	CHECK_AUDIT = 12,  /* a target's audit (fsck) failed                 */
	CHECK_ERRNO = 13,  /* an op's result differs: unexpected errno, short
			      count, a failed mount after a crash            */
	CHECK_INTERNAL = 14, /* the checker itself failed (its reference read
				back short)                              */
	CHECK_TWIN = 15,   /* twin engines' state differs (check_cfg.twins)  */
	CHECK_NOMEM = 16,  /* no finding: an allocation failed under a
			      memory limit, in the op or before it in the
			      round (check_fail)                            */
};

/* Zero means the default for every field. */
struct check_cfg {
	uint32_t verify_every;   /* full verify every N ops (1000; ~0u never)  */
	uint32_t audit_every;    /* audit every N ops (~0u never); 0: every
				    1000 and at every fsync/fdatasync/sync  */
	int verify_each_op;      /* full verify after every op (fsx -X)        */
	size_t chunk;            /* bytes per read/write piece (1 MiB)         */
	const char *log_path;    /* on failure write the op log here           */
	/*
	 * Where to write it instead, asked when a failure is found and
	 * log_path is set (NULL: log_path; a NULL answer: nowhere):
	 * `fsoracle run --jobs` names the log of the first worker that fails
	 * log_path, a later one's beside it.
	 */
	const char *(*log_name)(void *arg);
	void *log_name_arg;
	FILE *out;               /* the failure report (stderr); NULL + quiet  */
	int quiet;               /* no report (the minimizer's runs)           */
	const char *targets;     /* the list, for the log header and hints     */
	uint32_t twins;          /* bit per target_twin_part: the engine
				    targets' state compared after every op
				    and at the end (0: never)              */
	/*
	 * Called after a crash or a power cut, once every target has
	 * recovered and before the checker makes any target take another's
	 * files (check_crash_adopt): each target as it recovered alone.
	 * A caller's own check (a property suite's); a log header cannot
	 * ask for it.  NULL: none.
	 */
	void (*recovered)(void *arg, struct target **t, int n);
	void *recovered_arg;
	int memory_limited;      /* can allocations fail for want of memory?
				    0: as this process finds (a finite
				    RLIMIT_AS or RLIMIT_DATA, or strict
				    overcommit); 1 yes, -1 no (tests)      */
};

/*
 * A log header's check= value (what a suite asked of the checker, so the
 * log replays to the same failure), applied over cfg where it asks more:
 * comma-separated words
 *   each          verify every file and audit every target after every op
 *   twins=PARTS   compare the engine targets' state (target.h) after
 *                 every op: PARTS is all or names joined by '+' (stat,
 *                 free, extents, cowfork, refcount, image; all is every
 *                 one but image)
 * 0, or -EINVAL with one line in err.
 */
int check_cfg_parse(const char *s, struct check_cfg *cfg, char *err,
		    size_t errlen);
/* What of that cfg asks, as a check= value ("" for nothing). */
void check_cfg_format(const struct check_cfg *cfg, char *buf, size_t len);

struct check_stats {
	uint64_t ops;                       /* ops seen                       */
	uint64_t checked;                   /* ops applied and compared       */
	uint64_t skipped[OP_KIND_COUNT];    /* per kind, not applied          */
	uint64_t skipped_total;
	uint64_t verifies, audits, crashes; /* audits: per target audited */
	uint64_t bytes_compared;
	uint64_t enospc;                    /* ENOSPCs judged legitimate      */
	uint64_t stalls;                    /* sequences stalled (check_stalled) */
	uint64_t adopt_kept;                /* files a target already held as
					       a crash's source did: no copy */
	uint64_t adopt_mended;              /* files a target was matched
					       into in place (the model): no
					       copy either */
	uint64_t twins_apart;               /* rounds in which the twins'
					       extent trees came apart (where
					       blocks lie compared no more) */
	uint64_t twins_apart_ops;           /* ops of those rounds from the
					       one where blocks first lay
					       elsewhere on                  */
};

/* What the last failure was (valid when status != CHECK_OK). */
struct check_failure {
	int status;
	uint64_t opno;           /* 1-based; ops applied when it was found     */
	int at_verify;           /* found by a verify/audit after that op      */
	unsigned file;
	uint64_t offset;         /* first differing byte (data)                */
	char good[128], bad[128];/* target names                               */
	char what[512];          /* one line                                   */
};

struct checker;

/*
 * Targets stay owned by the caller.  meta supplies file names and the
 * header for the failure log (NULL: defaults).  check_new resets every
 * target.  0 or -errno.
 */
int check_new(struct target **t, int n, const struct check_cfg *cfg,
	      const struct op_seq *meta, struct checker **out);
void check_free(struct checker *c);

/* Apply one op everywhere and compare.  Returns enum check_status; after
 * a failure every call returns it again without doing anything. */
int check_op(struct checker *c, const struct op *op);
/* Full verify and audit now. */
int check_verify(struct checker *c);
/* The end of a sequence: a final full verify and audit. */
int check_finish(struct checker *c);
/* check_op for each op, then check_finish. */
int check_run(struct checker *c, const struct op_seq *seq);
/* Start over: reset targets, empty the log, clear the failure (the
 * statistics keep counting). */
int check_reset(struct checker *c);
/*
 * Drop what the targets hold now (every file, and each engine's mounted
 * filesystem state) without making anything anew: the next call must be
 * check_reset or check_new_round.  A caller that resets before every
 * sequence (the fuzz targets' rigs) releases after each one, so tearing
 * down a sequence's state is part of that sequence, never of the next.
 * 0 or -errno.
 */
int check_release(struct checker *c);
/*
 * Start a round with mkfs and mount options added to the targets' own
 * (target_ops.set_round; the given options of the command line win): a
 * swarm round's draw.  When a target cannot take them, or the engines
 * cannot be made or mounted with them (a combination the filesystem
 * refuses, a build without compression), the round goes without them.
 * Either way the log's header records what the round really used, so a
 * failure's op log replays as is; *used (when not NULL) says whether the
 * options were taken.  Then as check_reset.  0 or -errno.
 */
int check_new_round(struct checker *c, const char *mkfs, const char *mount,
		    int *used);
/* A comment for the failure log, after its header (what the round drew);
 * NULL or "" for none.  Kept across resets until set again. */
void check_set_note(struct checker *c, const char *note);

/* True when the targets ran out of space (or inodes) unevenly and could
 * not be made to agree again (see the top): check_op, check_verify and
 * check_finish do nothing and return 0 until check_reset. */
int check_stalled(const struct checker *c);

const struct check_stats *check_stats(const struct checker *c);
const struct check_failure *check_failure(const struct checker *c);
/* The ops applied so far (the failing op last), with names and header. */
const struct op_seq *check_log(const struct checker *c);
/* Union of the targets' unsupported masks: what a generator should avoid. */
uint64_t check_unsupported(const struct checker *c);
/* "skipped 5 of 90 ops: fcollapse x3 (engine:mem:64m), ..." or "". */
void check_skip_summary(const struct checker *c, char *buf, size_t len);
/* The same of stats st, gathered on targets t[0..n-1] (several runs'). */
void check_skip_summary_of(const struct check_stats *st,
			   struct target *const *t, int n, char *buf,
			   size_t len);
/* Add st's counts to sum's (the runs of `fsoracle run --jobs`). */
void check_stats_add(struct check_stats *sum, const struct check_stats *st);
/* Name of a status: "data mismatch", "size mismatch", ... */
const char *check_status_name(int status);

/* Write the op log (header, failure comment, ops) to path.  0 or -errno. */
int check_write_log(const struct checker *c, const char *path);

#endif
