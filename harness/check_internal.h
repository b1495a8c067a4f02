/*
 * check_internal.h - the checker's state, shared by check.c (running and
 * comparing) and report.c (explaining a failure).
 */
#ifndef FSORACLE_HARNESS_CHECK_INTERNAL_H
#define FSORACLE_HARNESS_CHECK_INTERNAL_H

#include "harness/check.h"

/* Result recorded for an op no target applied. */
#define CHECK_RES_SKIPPED INT64_MIN

struct checker {
	struct target *t[TARGET_MAX];
	int n;
	int ref;                     /* index of the reference target         */
	struct check_cfg cfg;
	size_t chunk;
	uint8_t *wbuf;               /* pwrite data, chunk bytes               */
	uint8_t *rbuf[TARGET_MAX];   /* per target read buffers, chunk bytes   */
	struct op_seq log;           /* ops seen, with names and header        */
	int64_t *res;                /* reference result per logged op         */
	size_t rescap;
	uint64_t unsupported;        /* union of the targets' masks            */
	uint32_t dirty;              /* files changed since their durable point */
	uint32_t touched;            /* files any op named                     */
	uint32_t matched;            /* files the reference was just made to
					hold as target matched_src does, in
					one pass over its bytes (adopt_files):
					the verify that follows compares them
					there no more; cleared by every op   */
	int matched_src;             /* ... the crash's source target         */
	uint32_t exists;             /* files that exist, as the checker knows */
	struct check_stats st;
	struct check_failure fail;
	int status;
	int stalled;                 /* out of step for lack of space (check.h) */
	int audit_at_sync;           /* audit at fsync/fdatasync/sync too      */
	int verifying;               /* inside a verify or audit (for reports) */
	char own_mkfs[OP_HDR_STR];   /* the header's options at check_new      */
	char own_mount[OP_HDR_STR];
	char note[1024];             /* check_set_note                         */
	int cut_armed;               /* a cut op waits for its point           */
	unsigned cut_seed;           /* ... and cuts with this seed            */
	int mem_limited;             /* allocations can fail here (check.h) */
	uint64_t nomem_op;           /* the op at which an allocation failed
					in this round (call_ends in check.c), 0 */
	uint32_t twin_adopted;       /* files the checker copied from one
					engine to the others: their layouts
					are the copy's, not the twins' own;
					bit 31: a filesystem-wide part too    */
	int trees_apart;             /* the twins' extent trees held the same
					records in other blocks at an op of
					this round (check_twin.c)            */
	uint64_t twins_apart;        /* the op from which where blocks lie is
					compared no more (check_twin.c), 0   */
};

/*
 * Record a failure (status, the target that disagreed with the reference,
 * one line), print the report unless quiet and write the log if asked.
 * For data mismatches pass the two buffers holding file bytes from
 * base_off; otherwise good = bad = NULL.
 */
int check_fail(struct checker *c, int status, int bad, unsigned file,
	       const uint8_t *good, const uint8_t *badbuf, uint64_t base_off,
	       size_t n, const char *fmt, ...)
	__attribute__((format(printf, 9, 10)));

/* A target's answer r for a report: the count, or the errno's name
 * ("-ENOSPC") in buf. */
const char *check_errstr(int64_t r, char *buf, size_t len);

/*
 * The op (1-based number, 0 = none) that last changed byte off of file
 * in the first upto logged ops, walking back through shifts by collapse
 * and insert.
 */
uint64_t check_last_writer(const struct checker *c, uint64_t upto,
			   unsigned file, uint64_t off);

/*
 * After a crash or a power cut on the targets that crash: adopt the
 * recovered state of the first of them for every file not durable
 * (check.c).  *result: the files adopted.  0 or a check status.
 */
int check_crash_adopt(struct checker *c, int64_t *result);

/*
 * Power cuts (check_cut.c): a cut op (*cut: it cut now), and the check
 * after every other op of whether the power failed in it (before: the
 * dirty files before the op; *cut: it did, everything was cut and
 * recovered).  0 or a check status.
 */
int check_cut_op(struct checker *c, const struct op *op, int64_t *result,
		 int *cut);
int check_cut_after(struct checker *c, const struct op *op, uint32_t before,
		    int64_t *result, int *cut);

/* Twin engines compared (check_twin.c, check_cfg.twins): 0 or a check
 * status. */
int check_twins(struct checker *c);
/* The same for the parts compared right after a crash's recovery too
 * (the image: target.h), before the checker adopts files. */
int check_twins_recovered(struct checker *c);

#endif
