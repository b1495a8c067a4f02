/*
 * fsx.h - import and export of fsx's .fsxops op logs (xfstests ltp/fsx.c
 * --record-ops / --replay-ops), so a sequence found here replays with fsx
 * on a real kernel filesystem, and an fsx log replays here.
 *
 * A line is `[skip ]NAME 0xA 0xB 0xC[ 0xD] [keep_size] [close_open]
 * [unshare] [*]`: offset, length, file size before the op (truncate:
 * 0, new size, old size; the range ops: source offset, length, dest
 * offset, file size).  `#` starts a comment.
 *
 * Import maps read/mapread/read_dontcache to pread, write/mapwrite/
 * write_dontcache/write_atomic to pwrite (our generated data; fsx's
 * random data is its own business), truncate, fallocate (keep_size,
 * unshare), punch_hole, zero_range, collapse_range, insert_range,
 * copy_range, clone_range, dedupe_range, exchange_range and fsync, all
 * on file f0; close_open adds a `close` after the op; `skip` lines (ops
 * fsx logged but did not run) are counted, not imported.  Ops our
 * targets cannot do are not dropped here: the checker skips and reports
 * them.
 *
 * Export needs a single-file sequence.  Ops fsx cannot express (unlink,
 * crash, chattr, other files) make it fail with the op named; ops with
 * no effect a reader could see that fsx has no word for (open of f0,
 * writeback, drop_caches, remount, the engine's naive and fallback
 * switches: fsx has no escape for them) and ops fsx would replay
 * differently (zero-length ops, reads and punches past EOF, invalid
 * collapse/insert ranges, which fsx would wrap or trim) become `#`
 * comments; sync and fdatasync become fsync; a close after an op becomes its close_open.
 * The first lines say how to replay it with fsx.
 */
#ifndef FSORACLE_HARNESS_FSX_H
#define FSORACLE_HARNESS_FSX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/op.h"

struct op_fsx_stats {
	size_t lines;        /* op lines read                                */
	size_t skipped;      /* `skip` lines (not run by fsx, not imported)  */
	size_t adjusted;     /* export: ops changed (sync -> fsync, -S dropped) */
	size_t omitted;      /* export: ops written as comments              */
	uint64_t maxfilelen; /* export: the -l fsx needs                     */
};

/* Import; appends to seq.  0, -EINVAL with "line L, col C: what". */
int op_fsx_import(const char *text, size_t len, struct op_seq *seq,
		  struct op_fsx_stats *st, char *err, size_t errlen);

/*
 * Export seq to f.  blocksize is the alignment fsx's collapse/insert use
 * (the file system's st_blksize).  0, or -EINVAL with err naming the op.
 */
int op_fsx_export(const struct op_seq *seq, FILE *f, uint32_t blocksize,
		  struct op_fsx_stats *st, char *err, size_t errlen);

/* Does the text look like an .fsxops log (first op line is an fsx op)? */
int op_fsx_detect(const char *text, size_t len);

#endif
