/*
 * test_bytes.c - base/bytes.h: each accessor reads and writes exactly its
 * width, least significant byte first, at any alignment, compared with
 * byte images written out by hand.
 */
#include "test.h"

#include "base/bytes.h"

static uint8_t buf[32];

TEST(get_reads_little_endian_at_every_alignment)
{
	static const uint8_t img[8] = { 0x01, 0x23, 0x45, 0x67,
					0x89, 0xab, 0xcd, 0xef };

	for (size_t at = 0; at < 8; at++) {
		memset(buf, 0xff, sizeof(buf));
		memcpy(buf + at, img, sizeof(img));
		CHECK_EQ(get16(buf + at), 0x2301u);
		CHECK_EQ(get32(buf + at), 0x67452301u);
		CHECK_EQ(get64(buf + at), 0xefcdab8967452301ull);
	}
}

TEST(put_writes_its_width_and_nothing_else)
{
	static const uint8_t want16[4] = { 0xee, 0x34, 0x12, 0xee };
	static const uint8_t want32[6] = { 0xee, 0x78, 0x56, 0x34, 0x12, 0xee };
	static const uint8_t want64[10] = { 0xee, 0xf0, 0xde, 0xbc, 0x9a,
					    0x78, 0x56, 0x34, 0x12, 0xee };

	for (size_t at = 0; at < 8; at++) {
		memset(buf, 0xee, sizeof(buf));
		put16(buf + at + 1, 0x1234);
		CHECK_MEM(buf + at, want16, sizeof(want16));
		memset(buf, 0xee, sizeof(buf));
		put32(buf + at + 1, 0x12345678u);
		CHECK_MEM(buf + at, want32, sizeof(want32));
		memset(buf, 0xee, sizeof(buf));
		put64(buf + at + 1, 0x123456789abcdef0ull);
		CHECK_MEM(buf + at, want64, sizeof(want64));
	}
}

TEST(put_then_get_round_trips_the_extremes)
{
	static const uint64_t v[] = { 0, 1, 0x80, 0xff, 0x8000, 0xffff,
				      0x80000000u, 0xffffffffu,
				      0x8000000000000000ull, ~0ull };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		put16(buf + 3, (uint16_t)v[i]);
		CHECK_EQ(get16(buf + 3), (uint16_t)v[i]);
		put32(buf + 5, (uint32_t)v[i]);
		CHECK_EQ(get32(buf + 5), (uint32_t)v[i]);
		put64(buf + 7, v[i]);
		CHECK_EQ(get64(buf + 7), v[i]);
	}
}

/* Every length 0..40 at every alignment 0..7, one non-zero byte at
 * every place (and none): the first is found, never a later one. */
TEST(first_nonzero_finds_the_first_at_every_place_and_alignment)
{
	uint8_t b[48];

	for (size_t a = 0; a < 8; a++)
		for (size_t n = 0; n + a <= 40; n++)
			for (size_t at = 0; at <= n; at++) {
				memset(b, 0, sizeof(b));
				if (at < n)
					b[a + at] = (uint8_t)(1 + at);
				b[a + n] = 0xff; /* past the end: never seen */
				if (at + 1 < n)
					b[a + n - 1] = 0x80; /* a later one */
				CHECK_MSG(bytes_first_nonzero(b + a, n) == at,
					  "align %zu, %zu bytes, non-zero at %zu: %zu",
					  a, n, at, bytes_first_nonzero(b + a, n));
			}
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
