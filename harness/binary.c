/*
 * binary.c - decode and encode the binary form of the op IR (binary.h).
 *
 * The decoder never rejects: it reads whatever bytes there are, pads a
 * short last record with zeros, wraps the kind byte and clamps values.
 * The encoder is its inverse on everything the decoder can produce.
 */
#include "harness/binary.h"

#include <errno.h>
#include <string.h>

#define TAIL_BITS 4
#define OP_RAW_ARG (OP_USE_ATTR | OP_USE_PATHS | OP_USE_CUT) /* unscaled */
#define UNITS_MAX ((1u << (32 - TAIL_BITS)) - 1)

/* Sub-512 byte tails, symmetric under t -> 512 - t (see binary.h). */
static const uint16_t tails[16] = {
	0, 1, 2, 3, 7, 100, 200, 255, 256, 257, 312, 412, 505, 509, 510, 511,
};

void op_geom_normalize(struct op_geom *g)
{
	const uint64_t hi = (uint64_t)UNITS_MAX * 512;

	if (!g->max_file)
		g->max_file = 16u << 20;
	if (g->max_file > hi)
		g->max_file = hi;
	g->max_file &= ~(uint64_t)511;
	if (!g->nfiles)
		g->nfiles = 4;
	if (g->nfiles > OP_MAX_FILES)
		g->nfiles = OP_MAX_FILES;
}

uint64_t op_bin_unscale(uint32_t v)
{
	return (uint64_t)(v >> TAIL_BITS) * 512 + tails[v & 15];
}

uint32_t op_bin_scale(uint64_t bytes, int *exact)
{
	uint64_t units = bytes / 512;
	unsigned rem = (unsigned)(bytes % 512), idx = 0;

	*exact = 1;
	if (units > UNITS_MAX) {
		*exact = 0;
		return UNITS_MAX << TAIL_BITS | 15;
	}
	/* The largest tail <= rem: exact when rem is in the table. */
	for (unsigned i = 0; i < 16; i++)
		if (tails[i] <= rem)
			idx = i;
	if (tails[idx] != rem)
		*exact = 0;
	return (uint32_t)units << TAIL_BITS | idx;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * A length past the geometry wraps into it: its units modulo the room's,
 * shifted right by its top four bits, with its own tail.  Random bytes
 * (a fuzzer's havoc, a bit flip in a high byte) so give lengths spread
 * log-uniformly over 0..lim instead of lim itself almost every time: a
 * fuzzer buys executions with short ops, and the long ones stay as
 * reachable as before (every length up to lim decodes as itself).  The
 * result is representable, and at most lim: lim is a multiple of 512
 * less a tail, and the tail table is symmetric.
 *
 *   v = [ shift:4 | units:24 | tail:4 ]   (bits 31..28 | 27..4 | 3..0)
 */
static uint64_t fold_len(uint32_t v, uint64_t lim)
{
	uint64_t units = ((v >> TAIL_BITS) % (lim / 512 + 1)) >> (v >> 28);
	uint64_t len = units * 512 + tails[v & 15];

	return len <= lim ? len : units ? (units - 1) * 512 + tails[v & 15] : 0;
}

/* Decode one full record (already padded). */
static void decode_record(const uint8_t *r, const struct op_geom *g,
			  struct op *op)
{
	const struct op_kind_info *ki;

	memset(op, 0, sizeof(*op));
	op->kind = (uint8_t)(1 + (r[0] - 1) % OP_KIND_MAX);
	ki = op_kind_info(op->kind);
	op->file = (uint8_t)((r[1] & 15) % g->nfiles);
	op->file2 = (uint8_t)((r[1] >> 4) % g->nfiles);
	op->flags = r[2];
	op->pattern = r[3];
	op->off = op_bin_unscale(le32(r + 4));
	op->len = op_bin_unscale(le32(r + 8));
	op->arg = (ki->uses & OP_RAW_ARG) ? le32(r + 12) :
		  op_bin_unscale(le32(r + 12));
	op_normalize(op);

	/* Clamp into the geometry; see binary.h for why this stays exact. */
	op->off = min64(op->off, g->max_file);
	if (ki->uses & OP_USE_ARG)
		op->arg = min64(op->arg, g->max_file);
	if (ki->uses & OP_USE_LEN) {
		uint64_t lim = g->max_file - op->off;

		if (ki->uses & OP_USE_ARG)
			lim = min64(lim, g->max_file - op->arg);
		if (op->len > lim)
			op->len = fold_len(le32(r + 8), lim);
	}
}

int op_bin_decode(const void *buf, size_t len, const struct op_geom *geom,
		  struct op_seq *seq)
{
	const uint8_t *p = buf;
	struct op_geom g = geom ? *geom : (struct op_geom){ 0 };
	size_t pos = 0, count = 0;

	op_geom_normalize(&g);
	if (len >= OP_BIN_MAGIC_LEN &&
	    memcmp(p, OP_BIN_MAGIC, OP_BIN_MAGIC_LEN) == 0)
		pos = OP_BIN_MAGIC_LEN;
	while (pos < len && count < OP_BIN_MAX_OPS) {
		uint8_t rec[OP_BIN_RECORD] = { 0 };
		size_t n = len - pos < OP_BIN_RECORD ? len - pos : OP_BIN_RECORD;
		struct op op;

		memcpy(rec, p + pos, n);
		if (rec[0] == 0)
			break;
		decode_record(rec, &g, &op);
		if (op_seq_push(seq, &op))
			return -ENOMEM;
		pos += OP_BIN_RECORD;
		count++;
	}
	return 0;
}

static void encode_record(const struct op *in, const struct op_geom *g,
			  uint8_t *r, int *exact)
{
	struct op op = *in;
	const struct op_kind_info *ki;
	int ex;

	op_normalize(&op);
	ki = op_kind_info(op.kind);
	memset(r, 0, OP_BIN_RECORD);
	*exact = 1;
	r[0] = op.kind;
	r[1] = (uint8_t)((op.file % g->nfiles) | (op.file2 % g->nfiles) << 4);
	r[2] = op.flags;
	r[3] = op.pattern;
	put32(r + 4, op_bin_scale(op.off, &ex));
	put32(r + 8, op_bin_scale(op.len, &ex));
	if (ki->uses & OP_RAW_ARG)
		put32(r + 12, (uint32_t)op.arg);
	else
		put32(r + 12, op_bin_scale(op.arg, &ex));
	/* Exact means: decoding gives back what we were given. */
	{
		struct op back;

		decode_record(r, g, &back);
		if (!op_equal(&back, in))
			*exact = 0;
	}
}

size_t op_bin_encode(const struct op_seq *seq, const struct op_geom *geom,
		     int magic, void *out, size_t cap, size_t *lossy)
{
	struct op_geom g = geom ? *geom : (struct op_geom){ 0 };
	size_t need = (magic ? OP_BIN_MAGIC_LEN : 0) + seq->n * OP_BIN_RECORD;
	uint8_t *p = out;
	size_t nlossy = 0;

	op_geom_normalize(&g);
	if (lossy)
		*lossy = 0;
	if (cap < need)
		return need;
	if (magic) {
		memcpy(p, OP_BIN_MAGIC, OP_BIN_MAGIC_LEN);
		p += OP_BIN_MAGIC_LEN;
	}
	for (size_t i = 0; i < seq->n; i++) {
		int exact;

		encode_record(&seq->ops[i], &g, p, &exact);
		if (!exact)
			nlossy++;
		p += OP_BIN_RECORD;
	}
	if (lossy)
		*lossy = nlossy;
	return need;
}
