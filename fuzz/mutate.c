/*
 * mutate.c - structure-aware mutations over the fuzz input layout
 * (mutate.h).
 *
 *   [ header 16 ][ op 0 ][ op 1 ] ... [ op n-1 ]
 *                 \____ records of OP_BIN_RECORD bytes (binary.h):
 *                       kind, files, flags, pattern, off, len, arg
 */
#include "fuzz/mutate.h"

#include <string.h>

#include "fuzz/fuzz.h"
#include "fuzz/geom.h"
#include "fuzz/swarm.h"
#include "harness/binary.h"
#include "harness/op.h"
#include "ref/ref.h"

#define REC OP_BIN_RECORD

struct rng {
	uint64_t s;
};

static uint32_t rnd(struct rng *r)
{
	/* splitmix64: tiny, and every seed is good */
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static uint32_t below(struct rng *r, uint32_t n)
{
	return n ? rnd(r) % n : 0;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Edge values in 512-byte units: block and B+tree-node boundaries. */
static const uint32_t edge_units[] = {
	0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 63, 64, 65, 127,
	128, 129, 255, 256, 257, 511, 512, 1023, 1024, 2047, 2048,
};
#define NEDGE (sizeof(edge_units) / sizeof(edge_units[0]))

/*
 * A scaled value (binary.h): units << 4 | tail index.  Off the edges,
 * log-uniform up to 1 MiB: short ops are cheap executions, and every
 * size class is drawn as often as the next.
 */
static uint32_t edge_value(struct rng *r)
{
	uint32_t units = below(r, 4) ? edge_units[below(r, NEDGE)] :
			 below(r, 1u << below(r, 12));
	uint32_t tail = below(r, 2) ? 0 : below(r, 16);

	return units << 4 | tail;
}

static uint64_t field_bytes(const uint8_t *rec, unsigned at)
{
	return op_bin_unscale(get_le32(rec + at));
}

static void set_field_bytes(uint8_t *rec, unsigned at, uint64_t bytes)
{
	int exact;

	put_le32(rec + at, op_bin_scale(bytes, &exact));
}

/* A random flag set among those the kind takes. */
static uint8_t some_flags(struct rng *r, unsigned kind)
{
	return (uint8_t)(rnd(r) & op_kind_info(kind)->flags);
}

/* A kind of the input's swarm draw (swarm.h): kinds mask, never empty. */
static unsigned swarm_kind(struct rng *r, uint64_t kinds)
{
	unsigned kind;

	do
		kind = 1 + below(r, OP_KIND_MAX);
	while (!(kinds & (1ull << kind)));
	return kind;
}

static void random_record(struct rng *r, uint8_t *rec, uint64_t kinds)
{
	unsigned kind = swarm_kind(r, kinds);
	const struct op_kind_info *ki = op_kind_info(kind);

	memset(rec, 0, REC);
	rec[0] = (uint8_t)kind;
	rec[1] = (uint8_t)(below(r, 4) | below(r, 4) << 4);
	rec[2] = some_flags(r, kind);
	rec[3] = (rec[2] & OP_FL_PATTERN) ? (uint8_t)rnd(r) : 0;
	if (ki->uses & OP_USE_OFF)
		put_le32(rec + 4, edge_value(r));
	if (ki->uses & OP_USE_LEN)
		put_le32(rec + 8, edge_value(r));
	if (ki->uses & OP_USE_ATTR)
		put_le32(rec + 12, rnd(r) & OP_ATTR_ALL);
	else if (ki->uses & OP_USE_PATHS)
		put_le32(rec + 12, rnd(r) & REF_PATHS_ALL);
	else if (ki->uses & OP_USE_CUT) /* an early point, any seed */
		put_le32(rec + 12, (uint32_t)OP_CUT_ARG(below(r, 16), rnd(r)));
	else if (ki->uses & OP_USE_ARG)
		put_le32(rec + 12, edge_value(r));
}

/* Number of live records: those before the first with kind 0. */
static size_t live_records(const uint8_t *data, size_t size)
{
	size_t n = size > FUZZ_HDR_LEN ? (size - FUZZ_HDR_LEN) / REC : 0;

	for (size_t i = 0; i < n; i++)
		if (data[FUZZ_HDR_LEN + i * REC] == 0)
			return i;
	return n;
}

static uint8_t *recp(uint8_t *data, size_t i)
{
	return data + FUZZ_HDR_LEN + i * REC;
}

/* One field of one record; other is a second record to line up with. */
static void tweak(struct rng *r, uint8_t *rec, const uint8_t *other,
		  uint64_t kinds)
{
	static const unsigned fields[3] = { 4, 8, 12 };
	unsigned at = fields[below(r, 3)];
	uint64_t v;

	switch (below(r, 10)) {
	case 0:
		rec[0] = (uint8_t)swarm_kind(r, kinds);
		break;
	case 1:
		rec[1] ^= (uint8_t)(1u << below(r, 8));
		break;
	case 2:
		rec[2] ^= (uint8_t)(1u << below(r, 6));
		rec[3] = (uint8_t)rnd(r);
		break;
	case 3:
		put_le32(rec + at, edge_value(r));
		break;
	case 4: /* a block (of any size up to 4k) more or less */
		v = field_bytes(rec, at);
		v = below(r, 2) ? v + (512u << below(r, 4)) :
		    v - (v < 512 ? v : (512u << below(r, 4)) % (v + 1));
		set_field_bytes(rec, at, v);
		break;
	case 5: /* one tail step: a byte or so off a block edge */
		put_le32(rec + at, get_le32(rec + at) ^ (1u << below(r, 4)));
		break;
	case 6:
		v = field_bytes(rec, at);
		set_field_bytes(rec, at, below(r, 2) ? v * 2 : v / 2);
		break;
	case 7: /* start where the other op starts */
		memcpy(rec + 4, other + 4, 4);
		break;
	case 8: /* start just past the other op's end */
		set_field_bytes(rec, 4, field_bytes(other, 4) + field_bytes(other, 8));
		break;
	default: /* same range as the other op, different kind or file */
		memcpy(rec + 4, other + 4, 8);
		break;
	}
	if (rec[0] == 0)
		rec[0] = 1;
}

/*
 * The largest file one step larger or smaller (geom.h): its ops keep
 * their offsets and lengths and fold into the new room.  An input's cost
 * is the bytes its ops write and its verifies read back, which the
 * largest file bounds, so the search moves between file sizes as it
 * does between presets, not only by the rare random header byte.
 */
static void step_max_file(struct rng *r, uint8_t *hdr)
{
	uint8_t *b = &hdr[GEOM_MAXFILE_BYTE];
	unsigned v = (unsigned)(*b >> GEOM_MAXFILE_SHIFT) & GEOM_MAXFILE_MASK;

	if (below(r, 2) ? v < GEOM_MAXFILE_MASK : v == 0)
		v++;
	else
		v--;
	*b = (uint8_t)((*b & ~(GEOM_MAXFILE_MASK << GEOM_MAXFILE_SHIFT)) |
		       v << GEOM_MAXFILE_SHIFT);
}

size_t mut_mutate(uint8_t *data, size_t size, size_t max, uint32_t seed,
		  mut_bytes_fn bytes)
{
	struct rng r = { seed };
	struct fuzz_swarm sw;
	size_t n, cap;

	if (max < FUZZ_HDR_LEN + REC)
		return bytes ? bytes(data, size, max) : size;
	if (size < FUZZ_HDR_LEN) {
		memset(data + size, 0, FUZZ_HDR_LEN - size);
		size = FUZZ_HDR_LEN;
	}
	fuzz_swarm_draw(data[FUZZ_SWARM_BYTE], 0, &sw);
	n = live_records(data, size);
	cap = (max - FUZZ_HDR_LEN) / REC;
	size = FUZZ_HDR_LEN + n * REC;

	switch (below(&r, 20)) {
	case 0: case 1: case 2: case 3: /* insert */
		if (n < cap) {
			size_t at = below(&r, (uint32_t)n + 1);

			memmove(recp(data, at + 1), recp(data, at), (n - at) * REC);
			random_record(&r, recp(data, at), sw.kinds);
			n++;
		}
		break;
	case 4: case 5: case 6: /* delete one or a short run */
		if (n) {
			size_t at = below(&r, (uint32_t)n);
			size_t k = 1 + below(&r, below(&r, 4) ? 1 : 4);

			if (k > n - at)
				k = n - at;
			memmove(recp(data, at), recp(data, at + k), (n - at - k) * REC);
			n -= k;
		}
		break;
	case 7: case 8: /* duplicate */
		if (n && n < cap) {
			uint8_t tmp[REC];
			size_t from = below(&r, (uint32_t)n), at = below(&r, (uint32_t)n + 1);

			memcpy(tmp, recp(data, from), REC);
			memmove(recp(data, at + 1), recp(data, at), (n - at) * REC);
			memcpy(recp(data, at), tmp, REC);
			n++;
		}
		break;
	case 9: /* swap */
		if (n >= 2) {
			uint8_t tmp[REC];
			size_t a = below(&r, (uint32_t)n), b = below(&r, (uint32_t)n);

			memcpy(tmp, recp(data, a), REC);
			memcpy(recp(data, a), recp(data, b), REC);
			memcpy(recp(data, b), tmp, REC);
		}
		break;
	case 10: /* splice a run of our own ops elsewhere */
		if (n && n < cap) {
			size_t from = below(&r, (uint32_t)n);
			size_t k = 1 + below(&r, (uint32_t)(n - from));
			size_t at = below(&r, (uint32_t)n + 1);
			uint8_t run[16 * REC];

			if (k > 16)
				k = 16;
			if (k > cap - n)
				k = cap - n;
			memcpy(run, recp(data, from), k * REC);
			memmove(recp(data, at + k), recp(data, at), (n - at) * REC);
			memcpy(recp(data, at), run, k * REC);
			n += k;
		}
		break;
	case 11: case 12: case 13: case 14: case 15: case 16: /* tweak */
		if (n) {
			size_t i = below(&r, (uint32_t)n);

			tweak(&r, recp(data, i), recp(data, below(&r, (uint32_t)n)),
			      sw.kinds);
		} else if (cap) {
			random_record(&r, recp(data, 0), sw.kinds);
			n = 1;
		}
		break;
	case 17: /* one header byte; the swarm draw and the largest file
		  * often (swarm.h, geom.h) */
		if (below(&r, 4) == 0)
			data[FUZZ_SWARM_BYTE] = (uint8_t)rnd(&r);
		else if (below(&r, 3) == 0)
			step_max_file(&r, data);
		else if (below(&r, 2))
			data[below(&r, FUZZ_HDR_LEN)] = (uint8_t)rnd(&r);
		else
			data[below(&r, 4)] += below(&r, 2) ? 1 : 0xff;
		break;
	default: /* the fuzzer's own byte mutations */
		size = FUZZ_HDR_LEN + n * REC;
		if (bytes)
			return bytes(data, size, max);
		if (size)
			data[below(&r, (uint32_t)size)] ^= (uint8_t)(1u << below(&r, 8));
		return size;
	}
	return FUZZ_HDR_LEN + n * REC;
}

size_t mut_crossover(const uint8_t *a, size_t asize, const uint8_t *b,
		     size_t bsize, uint8_t *out, size_t max, uint32_t seed)
{
	struct rng r = { seed };
	uint8_t hdr_a[FUZZ_HDR_LEN] = { 0 }, hdr_b[FUZZ_HDR_LEN] = { 0 };
	size_t na = live_records(a, asize), nb = live_records(b, bsize);
	size_t cap, ka, kb, from;

	if (max < FUZZ_HDR_LEN)
		return 0;
	memcpy(hdr_a, a, asize < FUZZ_HDR_LEN ? asize : FUZZ_HDR_LEN);
	memcpy(hdr_b, b, bsize < FUZZ_HDR_LEN ? bsize : FUZZ_HDR_LEN);
	memcpy(out, below(&r, 4) ? hdr_a : hdr_b, FUZZ_HDR_LEN);
	cap = (max - FUZZ_HDR_LEN) / REC;
	/* a's first ka ops, then a run of b's ops, then the rest of a's. */
	ka = below(&r, (uint32_t)na + 1);
	from = below(&r, (uint32_t)nb + 1);
	kb = nb - from ? 1 + below(&r, (uint32_t)(nb - from)) : 0;
	if (ka > cap)
		ka = cap;
	if (kb > cap - ka)
		kb = cap - ka;
	if (ka)
		memcpy(out + FUZZ_HDR_LEN, a + FUZZ_HDR_LEN, ka * REC);
	if (kb)
		memcpy(out + FUZZ_HDR_LEN + ka * REC, b + FUZZ_HDR_LEN + from * REC,
		       kb * REC);
	if (below(&r, 2) && ka < na) {
		size_t rest = na - ka < cap - ka - kb ? na - ka : cap - ka - kb;

		if (rest)
			memcpy(out + FUZZ_HDR_LEN + (ka + kb) * REC,
			       a + FUZZ_HDR_LEN + ka * REC, rest * REC);
		return FUZZ_HDR_LEN + (ka + kb + rest) * REC;
	}
	return FUZZ_HDR_LEN + (ka + kb) * REC;
}
