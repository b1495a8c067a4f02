/*
 * op.c - the op IR: the table of kinds, normalization, sequences and the
 * shared fill function for generated write data.
 */
#include "harness/op.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/prefault.h"
#include "ref/ref.h"

#define U_F   OP_USE_FILE
#define U_OL  (OP_USE_FILE | OP_USE_OFF | OP_USE_LEN)
#define U_RNG (OP_USE_FILE | OP_USE_OFF | OP_USE_LEN | OP_USE_ARG | OP_USE_FILE2)

#define D_SD  (OP_DOES_SIZE | OP_DOES_DATA)

/* One row per kind, indexed by enum op_kind. */
static const struct op_kind_info kinds[OP_KIND_COUNT] = {
	[OP_NONE]           = { "?", 0, 0, 0 },
	[OP_OPEN]           = { "open", U_F, OP_FL_CREATE, OP_DOES_NS },
	[OP_CLOSE]          = { "close", U_F, 0, 0 },
	[OP_UNLINK]         = { "unlink", U_F, 0, OP_DOES_NS | D_SD },
	[OP_PWRITE]         = { "pwrite", U_OL, OP_FL_PATTERN, D_SD },
	[OP_PREAD]          = { "pread", U_OL, OP_FL_VERBOSE, OP_DOES_READ },
	[OP_TRUNCATE]       = { "truncate", U_F | OP_USE_ARG, 0, D_SD },
	[OP_FALLOC]         = { "falloc", U_OL, OP_FL_KEEP_SIZE | OP_FL_UNSHARE,
				D_SD },
	[OP_FPUNCH]         = { "fpunch", U_OL, 0, OP_DOES_DATA },
	[OP_FZERO]          = { "fzero", U_OL, OP_FL_KEEP_SIZE, D_SD },
	[OP_FCOLLAPSE]      = { "fcollapse", U_OL, 0, D_SD },
	[OP_FINSERT]        = { "finsert", U_OL, 0, D_SD },
	[OP_COPY_RANGE]     = { "copy_range", U_RNG, 0, D_SD },
	[OP_CLONE_RANGE]    = { "reflink", U_RNG, 0, D_SD },
	[OP_DEDUPE_RANGE]   = { "dedupe", U_RNG, 0, 0 },
	[OP_EXCHANGE_RANGE] = { "exchangerange", U_RNG, 0, OP_DOES_DATA },
	[OP_FSYNC]          = { "fsync", U_F, 0, OP_DOES_DURABLE },
	[OP_FDATASYNC]      = { "fdatasync", U_F, 0, OP_DOES_DURABLE },
	[OP_SYNC]           = { "sync", 0, 0, OP_DOES_DURABLE },
	[OP_WRITEBACK]      = { "writeback", 0, 0, 0 },
	[OP_DROP_CACHES]    = { "drop_caches", 0, 0, 0 },
	[OP_REMOUNT]        = { "remount", 0, 0, OP_DOES_DURABLE },
	[OP_CRASH]          = { "crash", 0, 0, 0 },
	[OP_SET_FLAG]       = { "chattr", U_F | OP_USE_ATTR, OP_FL_CLEAR, 0 },
	[OP_NAIVE]          = { "naive", OP_USE_PATHS, 0, 0 },
	[OP_FALLBACK]       = { "fallback", OP_USE_PATHS, 0, 0 },
	[OP_CUT]            = { "cut", OP_USE_CUT, 0, 0 },
};

const struct op_kind_info *op_kind_info(unsigned kind)
{
	if (kind >= OP_KIND_COUNT)
		kind = OP_NONE;
	return &kinds[kind];
}

const char *op_kind_name(unsigned kind)
{
	return op_kind_info(kind)->name;
}

unsigned op_kind_by_name(const char *name)
{
	for (unsigned k = 1; k < OP_KIND_COUNT; k++)
		if (strcmp(kinds[k].name, name) == 0)
			return k;
	return OP_NONE;
}

void op_normalize(struct op *op)
{
	const struct op_kind_info *ki = op_kind_info(op->kind);

	if (op->kind >= OP_KIND_COUNT)
		op->kind = OP_NONE;
	if (!(ki->uses & OP_USE_FILE))
		op->file = 0;
	if (!(ki->uses & OP_USE_FILE2))
		op->file2 = 0;
	if (!(ki->uses & OP_USE_OFF))
		op->off = 0;
	if (!(ki->uses & OP_USE_LEN))
		op->len = 0;
	if (!(ki->uses & (OP_USE_ARG | OP_USE_ATTR | OP_USE_PATHS | OP_USE_CUT)))
		op->arg = 0;
	if (ki->uses & OP_USE_CUT)
		op->arg &= OP_CUT_ARG(OP_CUT_MAX, OP_CUT_MAX);
	if (ki->uses & OP_USE_ATTR)
		op->arg &= OP_ATTR_ALL;
	if (ki->uses & OP_USE_PATHS)
		op->arg &= REF_PATHS_ALL;
	op->flags &= ki->flags;
	if (!(op->flags & OP_FL_PATTERN))
		op->pattern = 0;
	if (op->kind != OP_PWRITE && op->kind != OP_PREAD)
		op->bsize = 0;
	if (op->file >= OP_MAX_FILES)
		op->file %= OP_MAX_FILES;
	if (op->file2 >= OP_MAX_FILES)
		op->file2 %= OP_MAX_FILES;
}

int op_equal(const struct op *a, const struct op *b)
{
	return a->kind == b->kind && a->file == b->file &&
	       a->file2 == b->file2 && a->flags == b->flags &&
	       a->pattern == b->pattern && a->bsize == b->bsize &&
	       a->off == b->off && a->len == b->len && a->arg == b->arg;
}

void op_seq_init(struct op_seq *seq)
{
	memset(seq, 0, sizeof(*seq));
}

void op_seq_free(struct op_seq *seq)
{
	free(seq->ops);
	op_seq_init(seq);
}

void op_seq_clear(struct op_seq *seq)
{
	seq->n = 0;
}

int op_seq_push(struct op_seq *seq, const struct op *op)
{
	if (seq->n == seq->cap) {
		size_t cap = seq->cap ? seq->cap * 2 : 64;
		/* a soak's log grows by megabytes (base/prefault.h) */
		struct op *ops = mem_grow(seq->ops, seq->n * sizeof(*ops),
					  cap * sizeof(*ops));

		if (!ops)
			return -ENOMEM;
		seq->ops = ops;
		seq->cap = cap;
	}
	seq->ops[seq->n++] = *op;
	return 0;
}

void op_seq_copy_meta(struct op_seq *dst, const struct op_seq *src)
{
	memcpy(dst->names, src->names, sizeof(dst->names));
	dst->hdr = src->hdr;
}

int op_seq_copy(struct op_seq *dst, const struct op_seq *src)
{
	op_seq_clear(dst);
	op_seq_copy_meta(dst, src);
	for (size_t i = 0; i < src->n; i++) {
		int err = op_seq_push(dst, &src->ops[i]);

		if (err)
			return err;
	}
	return 0;
}

const char *op_file_name(const struct op_seq *seq, unsigned i)
{
	/* Default names live in a static table so callers may keep them. */
	static const char *const defaults[OP_MAX_FILES] = {
		"f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7",
	};

	i %= OP_MAX_FILES;
	if (seq && seq->names[i][0])
		return seq->names[i];
	return defaults[i];
}

/*
 * One index byte as stored: b % 255 + 1, never 0, so a byte wrongly
 * zeroed is always caught (small files have zeros in their high index
 * bytes).
 */
static inline uint64_t nz(uint32_t b)
{
	return b % 255 + 1;
}

/* Bytes of ix, made non-zero, in the odd bytes of a word: ix0 -> byte 1. */
static inline uint64_t spread(uint32_t ix)
{
	return nz(ix & 0xff) << 8 | nz((ix >> 8) & 0xff) << 24 |
	       nz((ix >> 16) & 0xff) << 40 | nz(ix >> 24) << 56;
}

/*
 * The 8 bytes of generated data for aligned word index w, as a number
 * whose little-endian bytes are [tag, ix0, tag, ix1, tag, ix2, tag, ix3]
 * (index bytes through nz()).
 */
static inline uint64_t fill_word(uint8_t tag, uint64_t w)
{
	return (uint64_t)tag * 0x0001000100010001ull | spread((uint32_t)w);
}

void op_fill(const struct op *op, uint64_t opno, uint64_t off, void *buf,
	     size_t len)
{
	uint8_t *p = buf;
	uint8_t tag = op_fill_tag(opno);

	if (op->flags & OP_FL_PATTERN) {
		memset(buf, op->pattern, len);
		return;
	}
	/* Head: bytes up to the next 8-byte file boundary. */
	while (len && (off & 7)) {
		*p++ = (uint8_t)(fill_word(tag, off >> 3) >> ((off & 7) * 8));
		off++;
		len--;
	}
	/*
	 * Body: whole words.  Within a run of 256 words only the index's low
	 * byte changes: byte 1 is ix0 + 1 (nz), one more each word, but for
	 * ix0 = 255, whose 1 is stored after the run (a loop of adds only,
	 * which the compiler vectorises).
	 */
	while (len >= 8) {
		uint32_t ix = (uint32_t)(off >> 3);
		/* The run's word with byte 1 (ix0's place) left empty. */
		uint64_t base = fill_word(tag, ix) & ~(uint64_t)0xff00;
		uint64_t first = base | (uint64_t)((ix & 0xff) + 1) << 8;
		size_t nw = len / 8, lo = ix & 0xff;

		if (nw > 256 - lo)
			nw = 256 - lo;
		for (size_t k = 0; k < nw; k++)
			put64(p + 8 * k, first + ((uint64_t)k << 8));
		if (lo + nw == 256) /* ix0 = 255: nz gives 1 */
			put64(p + 8 * (nw - 1), base | nz(255) << 8);
		p += 8 * nw;
		off += 8 * nw;
		len -= 8 * nw;
	}
	/* Tail. */
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(fill_word(tag, off >> 3) >> (i * 8));
}
