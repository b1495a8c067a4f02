/*
 * op.h - the operation IR: the one language every driver of the engine
 * speaks (fuzzers, property tests, corpus replay, the soak, the perf
 * oracle).
 *
 * An op is a fixed-size record: a kind, the file it acts on (an index into
 * the sequence's name table, f0..f7 by default), an offset, a length, an
 * argument whose meaning depends on the kind, a second file for range ops,
 * flags and a data pattern.  A sequence is an array of ops plus the name
 * table and the header (devices, mkfs/mount options) it was written for.
 *
 * Three external forms map onto it: text (text.h, xfs_io's words), binary
 * (binary.h, for fuzzers) and fsx's .fsxops (fsx.h).  Targets (target.h)
 * apply ops; the checker (check.h) runs them on several targets in lock
 * step.
 *
 * Field use by kind (unused fields are zero in a normalized op):
 *
 *   kind            file  off      len   arg            file2  flags
 *   open            yes                                        CREATE
 *   close           yes
 *   unlink          yes
 *   pwrite          yes   off      len   -              -      PATTERN (+pattern, bsize)
 *   pread           yes   off      len                         VERBOSE (+bsize)
 *   truncate        yes                  new size
 *   falloc          yes   off      len                         KEEP_SIZE, UNSHARE
 *   fpunch, fcollapse, finsert   yes off len
 *   fzero           yes   off      len                         KEEP_SIZE
 *   copy/clone/dedupe/exchange  yes (dest)  src off  len  dest off  src
 *   fsync, fdatasync yes
 *   sync, writeback, drop_caches, remount, crash   (no file)
 *   set_flag        yes                  OP_ATTR_* bits        CLEAR
 *   naive, fallback (no file)            REF_PATH_* bits
 *   cut             (no file)            OP_CUT_ARG(point, seed)
 *
 * naive and fallback set the engine's seed-path switches (ref.h: which
 * paths take their naive twin, which are forced to their fallback), from
 * this op on; targets with one semantics (the model, a host directory)
 * accept them and change nothing, since no switch may change what a
 * reader sees.
 *
 * cut (text `cut POINT [SEED]`) is a power cut on every target that
 * can crash (harness/cut.h has the model): the power fails at the
 * POINT-th durability point (flush, FUA write, persist) the engine
 * issues from here, inside whatever op issues it (0: now, before the
 * next op), and right after that op the checker cuts and recovers as
 * at `crash`.  SEED 0 keeps only what was durable; another SEED fails
 * the power instead of the point and keeps a subset, drawn from the
 * seed, of the writes since the point before, tearing the dropped ones
 * in the device's atomic units.  `crash` is the gentler failure: every
 * write issued survives and the engine loses only what it held in
 * memory.  Targets without a power cut to take (the model) accept cut
 * and change nothing.
 *
 * Every file an op names exists from its first use (as fsx's file does):
 * an op on a missing file creates it empty first, except open without
 * CREATE and unlink, which fail with -ENOENT.
 */
#ifndef FSORACLE_HARNESS_OP_H
#define FSORACLE_HARNESS_OP_H

#include <stddef.h>
#include <stdint.h>

#define OP_MAX_FILES 8          /* files per sequence: f0..f7          */
#define OP_NAME_MAX  63         /* bytes in a file name (as ref.h)     */

/* A cut's arg: the point (0..65535) and the seed (0..65535). */
#define OP_CUT_ARG(point, seed) ((uint64_t)((point) & 0xffffu) | \
				 (uint64_t)((seed) & 0xffffu) << 16)
#define OP_CUT_POINT(arg) ((unsigned)((arg) & 0xffffu))
#define OP_CUT_SEED(arg)  ((unsigned)(((arg) >> 16) & 0xffffu))
#define OP_CUT_MAX 0xffffu

/* Kinds.  The numbers are part of the binary form: append, never reorder. */
enum op_kind {
	OP_NONE = 0,            /* not an op (end of a binary sequence) */
	OP_OPEN,
	OP_CLOSE,
	OP_UNLINK,
	OP_PWRITE,
	OP_PREAD,
	OP_TRUNCATE,
	OP_FALLOC,
	OP_FPUNCH,
	OP_FZERO,
	OP_FCOLLAPSE,
	OP_FINSERT,
	OP_COPY_RANGE,
	OP_CLONE_RANGE,
	OP_DEDUPE_RANGE,
	OP_EXCHANGE_RANGE,
	OP_FSYNC,
	OP_FDATASYNC,
	OP_SYNC,
	OP_WRITEBACK,
	OP_DROP_CACHES,
	OP_REMOUNT,
	OP_CRASH,
	OP_SET_FLAG,
	OP_NAIVE,
	OP_FALLBACK,
	OP_CUT,                 /* a power cut at a durability point to come */
	OP_KIND_COUNT           /* one past the last kind */
};
#define OP_KIND_MAX (OP_KIND_COUNT - 1)

/* Flags (struct op.flags); each kind allows only some. */
#define OP_FL_KEEP_SIZE (1u << 0) /* falloc -k, fzero -k                  */
#define OP_FL_CREATE    (1u << 1) /* open -f                              */
#define OP_FL_UNSHARE   (1u << 2) /* falloc -u (funshare)                 */
#define OP_FL_CLEAR     (1u << 3) /* chattr -X (else +X)                  */
#define OP_FL_VERBOSE   (1u << 4) /* pread -v                             */
#define OP_FL_PATTERN   (1u << 5) /* pwrite -S: fill with op.pattern      */

/* Inode attributes for set_flag (chattr letters in text form). */
#define OP_ATTR_REALTIME     (1u << 0) /* r */
#define OP_ATTR_ALWAYS_COW   (1u << 1) /* o */
#define OP_ATTR_JOURNAL_DATA (1u << 2) /* j */
#define OP_ATTR_COMPRESS     (1u << 3) /* c */
#define OP_ATTR_ALL          0xfu

struct op {
	uint8_t  kind;          /* enum op_kind                              */
	uint8_t  file;          /* the file acted on (range ops: the dest)   */
	uint8_t  file2;         /* range ops: the source file                */
	uint8_t  flags;         /* OP_FL_*                                   */
	uint8_t  pattern;       /* pwrite with OP_FL_PATTERN: the fill byte  */
	uint32_t bsize;         /* pwrite/pread -b: bytes per call; 0 = one  */
	uint64_t off;           /* offset (range ops: source offset)         */
	uint64_t len;           /* length                                    */
	uint64_t arg;           /* truncate size, range dest offset, attrs   */
};

/* What a kind uses and does; see op_kind_info(). */
#define OP_USE_FILE    (1u << 0)
#define OP_USE_OFF     (1u << 1)
#define OP_USE_LEN     (1u << 2)
#define OP_USE_ARG     (1u << 3)  /* arg is a byte offset or size      */
#define OP_USE_FILE2   (1u << 4)
#define OP_USE_ATTR    (1u << 5)  /* arg holds OP_ATTR_* bits          */
#define OP_USE_PATHS   (1u << 6)  /* arg holds REF_PATH_* bits (ref.h)  */
#define OP_USE_CUT     (1u << 7)  /* arg holds a cut's point and seed  */

#define OP_DOES_SIZE   (1u << 0)  /* may change the file's size        */
#define OP_DOES_DATA   (1u << 1)  /* may change the file's bytes       */
#define OP_DOES_NS     (1u << 2)  /* may create or remove the file     */
#define OP_DOES_DURABLE (1u << 3) /* makes something durable           */
#define OP_DOES_READ   (1u << 4)  /* returns data to compare           */

struct op_kind_info {
	const char *name;       /* canonical text word ("pwrite")            */
	uint8_t uses;           /* OP_USE_*                                  */
	uint8_t flags;          /* OP_FL_* the kind accepts                  */
	uint8_t does;           /* OP_DOES_*                                 */
};

/* Info for a kind; kinds out of range get a "?" entry that uses nothing. */
const struct op_kind_info *op_kind_info(unsigned kind);
const char *op_kind_name(unsigned kind);
/* Kind from its canonical text word, or OP_NONE. */
unsigned op_kind_by_name(const char *name);
/* Does the op create the files it names when they are missing?  Every
 * kind does but close, unlink and open without -f. */
static inline int op_creates(const struct op *op)
{
	return op->kind != OP_CLOSE && op->kind != OP_UNLINK &&
	       !(op->kind == OP_OPEN && !(op->flags & OP_FL_CREATE));
}

/* Zero the fields and flags the op's kind does not use. */
void op_normalize(struct op *op);
/* 1 if a and b are the same op field by field. */
int op_equal(const struct op *a, const struct op *b);

/*
 * The sequence header: what the sequence was written for.  Empty strings
 * mean "not given"; commands fall back to their defaults.
 */
#define OP_HDR_STR 192
struct op_header {
	char dev[OP_HDR_STR];     /* data device spec, e.g. "mem:64m"          */
	char rtdev[OP_HDR_STR];   /* realtime device spec                      */
	char mkfs[OP_HDR_STR];    /* mkfs options, "bs=4k,maxrecs=4"           */
	char mount[OP_HDR_STR];   /* mount options                             */
	char targets[OP_HDR_STR]; /* target list replay uses by default        */
	char seed[OP_HDR_STR];    /* informational: where the sequence came from */
	char check[OP_HDR_STR];   /* what the checker must do beyond its
				     defaults (check_cfg_parse): "each",
				     "twins=stat+free"                       */
};

/* A sequence of ops with its file names and header. */
struct op_seq {
	struct op *ops;
	size_t n, cap;
	char names[OP_MAX_FILES][OP_NAME_MAX + 1]; /* "" = default "f<i>"   */
	struct op_header hdr;
};

void op_seq_init(struct op_seq *seq);
void op_seq_free(struct op_seq *seq);
/* Empty the ops, keep names and header (and the allocation). */
void op_seq_clear(struct op_seq *seq);
/* Append (amortized growth).  0 or -ENOMEM. */
int op_seq_push(struct op_seq *seq, const struct op *op);
/* Copy names and header from src (not the ops). */
void op_seq_copy_meta(struct op_seq *dst, const struct op_seq *src);
/* Deep copy.  0 or -ENOMEM. */
int op_seq_copy(struct op_seq *dst, const struct op_seq *src);
/* The name of file i in seq (the default "f<i>" when unset); seq may be NULL. */
const char *op_file_name(const struct op_seq *seq, unsigned i);

/*
 * The data a pwrite without -S writes, shared by every target so they all
 * write the same bytes.  Like fsx, bytes name the op that wrote them: in
 * each aligned 8-byte word of the file, the even bytes are
 * op_fill_tag(opno) and the odd bytes are the word's index (file offset / 8,
 * little-endian, low 32 bits, each byte b stored as b % 255 + 1), so no
 * generated byte is ever 0 (a byte wrongly zeroed is always caught),
 * neighbouring bytes differ, data shifted to a wrong offset is caught, and
 * a wrong byte says which op (mod 255) and which offset it came from.
 * opno counts from 1.  With OP_FL_PATTERN the bytes are all op->pattern.
 * buf receives the bytes of file range [off, off + len).
 */
void op_fill(const struct op *op, uint64_t opno, uint64_t off, void *buf,
	     size_t len);
/* The even-byte tag of op number opno: 1..255, never 0. */
static inline uint8_t op_fill_tag(uint64_t opno)
{
	return (uint8_t)(opno % 255 + 1);
}

#endif
