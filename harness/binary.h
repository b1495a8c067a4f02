/*
 * binary.h - the binary form of the op IR, for fuzzers.
 *
 * A sequence is an array of fixed 16-byte records; a record whose first
 * byte is 0 ends it (so all-zero input is the empty sequence, and a
 * shrinking fuzzer that zeroes bytes shortens it).  A file written by
 * `fsoracle encode` starts with the 8-byte OP_BIN_MAGIC; raw fuzzer input
 * has none, and a leading magic is skipped when present.
 *
 *   byte  0      kind: 0 = end; else 1 + (b - 1) % OP_KIND_MAX
 *   byte  1      low nibble: file, high nibble: file2 (each % nfiles)
 *   byte  2      flags (OP_FL_*, masked to what the kind accepts)
 *   byte  3      pattern (kept only with OP_FL_PATTERN)
 *   bytes 4..7   off  }  little-endian u32 "scaled" values:
 *   bytes 8..11  len  }    bits 31..4: 512-byte units
 *   bytes 12..15 arg  }    bits 3..0:  index into 16 sub-512 tails
 *                             0 1 2 3 7 100 200 255 256 257 312 412
 *                             505 509 510 511
 *                          set_flag's arg is OP_ATTR_* bits, naive's
 *                          and fallback's REF_PATH_* bits, cut's point
 *                          (bits 15..0) and seed (bits 31..16), unscaled.
 *
 * Kinds count from 1 in enum order, and kind bytes past the last kind
 * wrap, so a new kind changes what the bytes past the old last kind
 * mean.  When cut (26) came, no input of corpus/ held a kind byte above
 * 25 (the seeds are encoded, and encoding writes the kind itself), so
 * every input kept its meaning; check the same before adding a kind.
 *
 * Decoding is total: every byte string decodes.  Values are clamped to
 * the geometry (off and arg <= max_file, off + len and arg + len <=
 * max_file), never rejected; fields a kind does not use are zeroed.  The
 * tail table is symmetric (t and 512 - t), so every clamped value is
 * representable again: decode(encode(decode(b))) == decode(b), and
 * encode(decode(b)) is the canonical form of b.  A byte change moves one
 * field of one op; a low-byte change moves it a little.
 *
 * Not carried: names (always f0..f7), the header, and pwrite/pread -b.
 */
#ifndef FSORACLE_HARNESS_BINARY_H
#define FSORACLE_HARNESS_BINARY_H

#include <stddef.h>
#include <stdint.h>

#include "harness/op.h"

#define OP_BIN_RECORD 16
#define OP_BIN_MAGIC "\x89" "FSOP\r\n\x1a"
#define OP_BIN_MAGIC_LEN 8
#define OP_BIN_MAX_OPS (1u << 20) /* decoding stops after this many */

/* Clamping geometry; zero fields mean the defaults. */
struct op_geom {
	uint64_t max_file;  /* bytes; rounded down to 512; default 16 MiB,
			       at most (2^28 - 1) * 512                      */
	uint32_t nfiles;    /* 1..OP_MAX_FILES; default 4                     */
};

/* Fill in defaults and round into range. */
void op_geom_normalize(struct op_geom *g);

/* Decode buf into seq (appending).  0 or -ENOMEM.  Total otherwise. */
int op_bin_decode(const void *buf, size_t len, const struct op_geom *g,
		  struct op_seq *seq);

/*
 * Encode seq.  Writes OP_BIN_MAGIC first if magic != 0, then one record
 * per op, no terminator.  Returns the bytes written, or the bytes needed
 * if cap is too small (nothing partial is useful).  *lossy (if non-NULL)
 * counts ops that the binary form cannot carry exactly (bsize, values out
 * of the geometry or between representable values); they are encoded as
 * the nearest smaller representable op.
 */
size_t op_bin_encode(const struct op_seq *seq, const struct op_geom *g,
		     int magic, void *out, size_t cap, size_t *lossy);

/* Decode a scaled u32 field / encode bytes into one (exact or lower). */
uint64_t op_bin_unscale(uint32_t v);
uint32_t op_bin_scale(uint64_t bytes, int *exact);

#endif
