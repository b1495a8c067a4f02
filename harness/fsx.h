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
 * Export writes one file's ops (op_fsx_export: a sequence on one file;
 * op_fsx_export_file: the ops of one file of many, when nothing ties it
 * to the others).  Ops fsx cannot express (unlink, crash, chattr, a
 * range op between two files) make it fail with the op named; ops with
 * no effect a reader could see that fsx has no word for (open of f0,
 * writeback, drop_caches, remount, the engine's naive and fallback
 * switches: fsx has no escape for them) and ops fsx would replay
 * differently (zero-length ops, reads and punches past EOF, invalid
 * collapse/insert ranges, which fsx would wrap or trim) become `#`
 * comments; sync and fdatasync become fsync; a close after an op becomes
 * its close_open.  fsync lines are written as `#fsync ...` comments:
 * fsx runs fsync only with -i LOGDEV (it marks a dm-log-writes device,
 * and exits 211 without one).
 *
 * The first lines give the fsx command that replays the log: -l and -o
 * cover the largest file and the longest op (fsx's buffers are -o bytes
 * and it overruns them on a longer op; its defaults are 256k and 64k),
 * -N the number of op lines.
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
	uint64_t maxoplen;   /* export: the -o fsx needs                     */
	size_t fsyncs;       /* export: fsyncs written as `#fsync` comments  */
	size_t written;      /* export: op lines written (fsx -N)            */
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

/* Export the ops of file `file` of seq (see above); ops on other files
 * are left out, and must be independent of it. */
int op_fsx_export_file(const struct op_seq *seq, unsigned file, FILE *f,
		       uint32_t blocksize, struct op_fsx_stats *st, char *err,
		       size_t errlen);

/* Can file's ops go out alone?  0, or -EINVAL with err naming the op
 * that ties it to another file or that fsx cannot express. */
int op_fsx_check_file(const struct op_seq *seq, unsigned file, char *err,
		      size_t errlen);

/* The files seq's ops use (bit i: file i). */
uint32_t op_fsx_files(const struct op_seq *seq);

/* Does the text look like an .fsxops log (first op line is an fsx op)? */
int op_fsx_detect(const char *text, size_t len);

#endif
