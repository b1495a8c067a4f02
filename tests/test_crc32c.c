/*
 * test_crc32c.c - the metadata checksum: crc32c() (the CPU's crc32
 * instruction where there is one) and the table version both equal a
 * bit-at-a-time CRC32C written from the polynomial, for every length and
 * alignment a block checksum meets, alone and chained.
 */
#include "test.h"

#include "base/crc32c.h"

/* The definition itself: one bit at a time, reflected 0x82F63B78. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static uint8_t buf[4096 + 16];

static void fill(uint32_t seed)
{
	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
}

TEST(crc32c_check_value_is_the_published_one)
{
	/* RFC 3720 (iSCSI) B.4: CRC32C of "123456789" is 0xE3069283. */
	CHECK_EQ(crc32c(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ(crc32c_portable(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ(crc_bitwise(0, (const uint8_t *)"123456789", 9), 0xE3069283u);
}

TEST(crc32c_every_length_and_alignment_matches_the_bitwise_definition)
{
	fill(7);
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len <= 80; len++) {
			uint32_t want = crc_bitwise(0, buf + off, len);

			CHECK_MSG(crc32c(0, buf + off, len) == want,
				  "crc32c at offset %zu, %zu bytes", off, len);
			CHECK_MSG(crc32c_portable(0, buf + off, len) == want,
				  "table crc at offset %zu, %zu bytes", off, len);
		}
	/* The block sizes the engine checksums, whole and minus a header. */
	for (size_t len = 512; len <= 4096; len *= 2) {
		fill((uint32_t)len);
		CHECK_EQ(crc32c(0, buf, len), crc_bitwise(0, buf, len));
		CHECK_EQ(crc32c(0, buf + 3, len - 36),
			 crc_bitwise(0, buf + 3, len - 36));
	}
}

/* crc32c() runs three lanes of 128 bytes at once from 384 bytes on: every
 * length across several of those steps, and the tail after them. */
TEST(crc32c_lengths_across_the_three_lane_steps_match_the_tables)
{
	fill(3);
	for (size_t off = 0; off < 3; off++)
		for (size_t len = 300; len <= 4096; len++) {
			uint32_t want = crc32c_portable(0x1234u, buf + off, len);

			CHECK_MSG(crc32c(0x1234u, buf + off, len) == want,
				  "crc32c at offset %zu, %zu bytes", off, len);
		}
	/* and against the definition at the step edges */
	for (size_t len = 383; len <= 1153; len += 385)
		CHECK_EQ(crc32c(0, buf, len), crc_bitwise(0, buf, len));
	CHECK_EQ(crc32c(0, buf, 768), crc_bitwise(0, buf, 768));
	CHECK_EQ(crc32c(0, buf, 4096), crc_bitwise(0, buf, 4096));
}

TEST(crc32c_chained_pieces_equal_one_pass)
{
	fill(99);
	for (size_t cut = 0; cut <= 64; cut++) {
		uint32_t whole = crc_bitwise(0, buf, 1024);
		uint32_t part = crc32c(crc32c(0, buf, cut), buf + cut, 1024 - cut);

		CHECK_MSG(part == whole, "split at %zu: %08x != %08x", cut,
			  part, whole);
		part = crc32c_portable(crc32c(0, buf, cut), buf + cut, 1024 - cut);
		CHECK_MSG(part == whole, "mixed split at %zu", cut);
	}
	printf("  (crc32c uses the %s)\n", crc32c_accelerated() ?
	       "CPU's crc32 instruction" : "tables");
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
