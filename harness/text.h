/*
 * text.h - the text form of the op IR: one op per line in xfs_io's words,
 * for people and for the corpus.
 *
 *   #! fsoracle dev=mem:64m mkfs=bs=4k,maxrecs=4 targets=engine,model
 *   # comments start with '#'; blank lines are ignored
 *   open -f f0                 create f0 if missing, make it current
 *   pwrite -S 0x5a -b 4k 0 64k without -S: generated data (op.h, op_fill)
 *   pread -v 0 64k
 *   truncate 4k
 *   falloc -k 0 1m             -k keep size, -u unshare (funshare = falloc -u)
 *   fpunch 0 4k  |  fzero -k 0 4k  |  fcollapse 4k 4k  |  finsert 4k 4k
 *   copy_range -s SRCOFF -d DSTOFF -l LEN SRCFILE
 *   reflink SRCFILE SRCOFF DSTOFF LEN
 *   dedupe SRCFILE SRCOFF DSTOFF LEN
 *   exchangerange -s SRCOFF -d DSTOFF -l LEN SRCFILE
 *   fsync | fdatasync | sync | writeback | drop_caches | remount | crash
 *   chattr +r | -r | +ojc      r realtime, o always_cow, j journal_data,
 *                              c compress
 *   naive PATHS | fallback PATHS   the engine's seed-path switches from
 *                              here on: all, none, or names joined by
 *                              '+' (rt_truncate+forget; ',' is read too)
 *   close | unlink NAME
 *   file NAME                  make NAME current (no op)
 *
 * Ops act on the current file (range ops: the destination), as in xfs_io;
 * the current file starts as f0.  Numbers are decimal or 0x hex with an
 * optional k/m/g/t/p suffix (powers of 1024).  Names are up to 63 bytes
 * of printable ASCII without '/'; a sequence has at most 8.
 *
 * Differences from xfs_io, on purpose: pwrite without -S writes the
 * generated fsx-style data, not 0xcd; `file` takes a name, not an index;
 * `unlink`, `writeback`, `drop_caches`, `remount`, `crash`, `naive` and
 * `fallback` are ours.
 *
 * The canonical text (what op_text_write prints) round-trips exactly:
 * parse(print(seq)) == seq and print(parse(text)) == text.
 */
#ifndef FSORACLE_HARNESS_TEXT_H
#define FSORACLE_HARNESS_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "harness/op.h"

/* Parse state across lines: the current file; names live in the seq. */
struct op_parser {
	struct op_seq *seq;
	unsigned cur;
	unsigned hdr_seen;   /* a bit per header key given so far */
};

void op_parser_init(struct op_parser *p, struct op_seq *seq);

/*
 * Parse one line (NUL-terminated; a trailing newline is fine).  Returns 1
 * and fills *out (if non-NULL) for an op, 0 for a line without one (blank, comment,
 * header, `file` directive), or -EINVAL with "col N: what" in err.
 */
int op_parse_line(struct op_parser *p, const char *line, struct op *out,
		  char *err, size_t errlen);

/*
 * Parse a whole text into seq (appending).  0, or -EINVAL with
 * "line L, col C: what" in err, or -ENOMEM.
 */
int op_text_parse(const char *text, size_t len, struct op_seq *seq,
		  char *err, size_t errlen);

/*
 * Format one op as its text line (no newline; the file it acts on is
 * implied, as in the text form).  Returns the length snprintf would.
 */
int op_format(const struct op *op, const struct op_seq *seq, char *buf,
	      size_t len);

/* Format a number canonically: "0", "4k", "1m", "4097". */
void op_format_num(uint64_t v, char *buf, size_t len);

/* Print the header line (if any field is set) and every op.  0 or -EIO. */
int op_text_write(const struct op_seq *seq, FILE *f);
/* The ops alone (with `file` lines where the current file changes). */
int op_text_write_ops(const struct op_seq *seq, FILE *f);
/* The header line alone (nothing if empty). */
void op_text_write_header(const struct op_header *hdr, FILE *f);

#endif
