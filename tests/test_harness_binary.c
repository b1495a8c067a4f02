/*
 * test_harness_binary.c - the binary form: decoding is total and clamps
 * into the geometry, zeros are the empty sequence, encoding is the exact
 * inverse on decoded sequences, and a small byte change is a small op
 * change.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness/binary.h"
#include "harness/rng.h"
#include "ref/ref.h"
#include "tests/test.h"

static void random_bytes(struct rng *r, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng_next(r);
}

static int same_ops(const struct op_seq *a, const struct op_seq *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (!op_equal(&a->ops[i], &b->ops[i]))
			return 0;
	return 1;
}

TEST(binary_all_zero_decodes_to_the_empty_sequence)
{
	uint8_t zero[256] = { 0 };
	struct op_seq s;

	for (size_t n = 0; n <= sizeof(zero); n += 17) {
		op_seq_init(&s);
		CHECK_OK(op_bin_decode(zero, n, NULL, &s));
		CHECK_EQ(s.n, 0);
		op_seq_free(&s);
	}
}

TEST(binary_a_zero_kind_byte_ends_the_sequence)
{
	uint8_t b[64];
	struct op_seq s;

	memset(b, 0x41, sizeof(b));
	b[32] = 0;
	op_seq_init(&s);
	CHECK_OK(op_bin_decode(b, sizeof(b), NULL, &s));
	CHECK_EQ(s.n, 2);
	op_seq_free(&s);
}

TEST(binary_decoding_is_total_and_clamped)
{
	struct rng r;
	uint8_t buf[16 * 64 + 15];

	rng_seed(&r, 1);
	for (int round = 0; round < 3000; round++) {
		struct op_geom g = {
			.max_file = (1 + rng_below(&r, 1 << 20)) * 512,
			.nfiles = 1 + (uint32_t)rng_below(&r, 8),
		};
		size_t n = rng_below(&r, sizeof(buf) + 1);
		struct op_seq s;

		random_bytes(&r, buf, n);
		op_seq_init(&s);
		CHECK_OK(op_bin_decode(buf, n, &g, &s));
		CHECK(s.n <= (n + 15) / 16);
		for (size_t i = 0; i < s.n; i++) {
			const struct op *op = &s.ops[i];
			const struct op_kind_info *ki = op_kind_info(op->kind);

			CHECK(op->kind >= 1 && op->kind <= OP_KIND_MAX);
			CHECK(op->file < g.nfiles && op->file2 < g.nfiles);
			CHECK(op->off <= g.max_file);
			if (ki->uses & OP_USE_LEN)
				CHECK(op->off + op->len <= g.max_file);
			if (ki->uses & OP_USE_ARG) {
				CHECK(op->arg <= g.max_file);
				if (ki->uses & OP_USE_LEN)
					CHECK(op->arg + op->len <= g.max_file);
			}
			CHECK((op->flags & ~ki->flags) == 0);
		}
		op_seq_free(&s);
	}
}

/*
 * decode(encode(decode(b))) == decode(b), encode is exact on it, and
 * encoding twice gives the same (canonical) bytes.
 */
TEST(binary_roundtrip_is_canonical)
{
	struct rng r;
	uint8_t buf[16 * 50 + 7], enc[16 * 60], enc2[16 * 60];

	rng_seed(&r, 2);
	for (int round = 0; round < 3000; round++) {
		struct op_geom g = {
			.max_file = rng_below(&r, 4) ? (1 + rng_below(&r, 1 << 16)) * 512
						      : 0,
			.nfiles = (uint32_t)rng_below(&r, 9),
		};
		size_t n = rng_below(&r, sizeof(buf) + 1), len, len2, lossy = 1;
		struct op_seq a, b;

		random_bytes(&r, buf, n);
		op_seq_init(&a);
		op_seq_init(&b);
		CHECK_OK(op_bin_decode(buf, n, &g, &a));
		len = op_bin_encode(&a, &g, round & 1, enc, sizeof(enc), &lossy);
		CHECK_EQ(lossy, 0);
		CHECK_EQ(len, a.n * 16 + ((round & 1) ? OP_BIN_MAGIC_LEN : 0));
		CHECK_OK(op_bin_decode(enc, len, &g, &b));
		CHECK_MSG(same_ops(&a, &b), "round %d", round);
		len2 = op_bin_encode(&b, &g, round & 1, enc2, sizeof(enc2), NULL);
		CHECK_EQ(len2, len);
		CHECK_MEM(enc, enc2, len);
		op_seq_free(&a);
		op_seq_free(&b);
	}
}

/* The switch ops keep their path mask raw, as chattr keeps its bits. */
TEST(binary_switch_ops_roundtrip_their_path_masks)
{
	struct op_seq a, b;
	uint8_t enc[16 * 8];
	size_t len, lossy = 1;

	op_seq_init(&a);
	op_seq_init(&b);
	for (unsigned m = 0; m < 6; m++) {
		struct op op = { .kind = m & 1 ? OP_FALLBACK : OP_NAIVE,
				 .arg = (0x13u * m) & REF_PATHS_ALL };

		CHECK_OK(op_seq_push(&a, &op));
	}
	len = op_bin_encode(&a, NULL, 0, enc, sizeof(enc), &lossy);
	CHECK_EQ(lossy, 0);
	CHECK_EQ(len, a.n * OP_BIN_RECORD);
	CHECK_EQ(enc[0], OP_NAIVE);
	CHECK_EQ(enc[16 + 12], 0x13);   /* arg bytes, not a scaled value */
	CHECK_OK(op_bin_decode(enc, len, NULL, &b));
	CHECK(same_ops(&a, &b));
	/* bits past the last path are dropped on decoding */
	enc[12] = 0xff;
	op_seq_clear(&b);
	CHECK_OK(op_bin_decode(enc, 16, NULL, &b));
	CHECK_EQ(b.ops[0].arg, REF_PATHS_ALL);
	op_seq_free(&a);
	op_seq_free(&b);
}

/* Changing one byte changes at most one field of one op. */
TEST(binary_small_byte_change_is_a_small_op_change)
{
	struct rng r;
	uint8_t buf[16 * 20];

	rng_seed(&r, 3);
	for (int round = 0; round < 2000; round++) {
		struct op_geom g = { .max_file = 1ull << 30, .nfiles = 8 };
		struct op_seq a, b;
		size_t at;
		int diff = 0;

		random_bytes(&r, buf, sizeof(buf));
		for (size_t i = 0; i < sizeof(buf); i += 16)
			buf[i] |= 1;
		/* A low byte of off, len or arg: bump it by one (no wrap). */
		at = 16 * rng_below(&r, 20) + 4 + 4 * rng_below(&r, 3);
		if (buf[at] == 0xff)
			buf[at] = 0xfe;
		op_seq_init(&a);
		op_seq_init(&b);
		CHECK_OK(op_bin_decode(buf, sizeof(buf), &g, &a));
		buf[at]++;
		CHECK_OK(op_bin_decode(buf, sizeof(buf), &g, &b));
		CHECK_EQ(a.n, b.n);
		for (size_t i = 0; i < a.n; i++)
			if (!op_equal(&a.ops[i], &b.ops[i])) {
				const struct op *x = &a.ops[i], *y = &b.ops[i];
				uint64_t d = x->off != y->off ?
					(x->off > y->off ? x->off - y->off : y->off - x->off) :
					x->len != y->len ?
					(x->len > y->len ? x->len - y->len : y->len - x->len) :
					(x->arg > y->arg ? x->arg - y->arg : y->arg - x->arg);

				diff++;
				CHECK_EQ(i, at / 16);
				CHECK(x->kind == y->kind && x->file == y->file &&
				      x->flags == y->flags);
				/* One tail step or one 512-byte unit, at most. */
				CHECK_MSG(d <= 512 || x->kind == OP_SET_FLAG,
					  "moved by %llu", (unsigned long long)d);
			}
		CHECK(diff <= 1);
		op_seq_free(&a);
		op_seq_free(&b);
	}
}

TEST(binary_scaled_values_decode_as_documented)
{
	int exact;

	CHECK_EQ(op_bin_unscale(0), 0);
	CHECK_EQ(op_bin_unscale(1), 1);
	CHECK_EQ(op_bin_unscale(15), 511);
	CHECK_EQ(op_bin_unscale(1u << 4), 512);
	CHECK_EQ(op_bin_unscale(8u << 4 | 8), 8 * 512 + 256);
	CHECK_EQ(op_bin_scale(4096, &exact), 8u << 4);
	CHECK(exact);
	CHECK_EQ(op_bin_scale(4096 + 100, &exact), 8u << 4 | 5);
	CHECK(exact);
	op_bin_scale(4096 + 101, &exact);
	CHECK(!exact);
}

TEST(binary_encode_counts_what_it_cannot_carry)
{
	struct op_geom g = { .max_file = 1 << 20, .nfiles = 2 };
	struct op ops[] = {
		{ .kind = OP_PWRITE, .off = 4096, .len = 8192 },          /* ok   */
		{ .kind = OP_PWRITE, .off = 4096 + 5, .len = 1 },          /* tail */
		{ .kind = OP_PREAD, .file = 3, .off = 0, .len = 1 },       /* file */
		{ .kind = OP_TRUNCATE, .arg = 2 << 20 },                   /* geom */
		{ .kind = OP_PWRITE, .off = 0, .len = 512, .bsize = 512 }, /* -b   */
		{ .kind = OP_SET_FLAG, .arg = OP_ATTR_REALTIME },          /* ok   */
	};
	struct op_seq s = { .ops = ops, .n = 6, .cap = 6 };
	uint8_t out[16 * 6];
	size_t lossy;

	CHECK_EQ(op_bin_encode(&s, &g, 0, out, sizeof(out), &lossy), 96);
	CHECK_EQ(lossy, 4);
}

TEST(binary_leading_magic_is_skipped)
{
	uint8_t b[8 + 16] = OP_BIN_MAGIC;
	struct op_seq s;

	b[8] = OP_PWRITE;
	b[8 + 4] = 8 << 4;    /* off 4096 */
	b[8 + 8] = 2 << 4;    /* len 1024 */
	op_seq_init(&s);
	CHECK_OK(op_bin_decode(b, sizeof(b), NULL, &s));
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.ops[0].kind, OP_PWRITE);
	CHECK_EQ(s.ops[0].off, 4096);
	CHECK_EQ(s.ops[0].len, 1024);
	op_seq_free(&s);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
