/*
 * crc32c.c - CRC32C (reflected polynomial 0x82F63B78), the one copy: the
 * engine's metadata blocks and hw/zoned.c's zone state file use it.
 *
 * Every metadata block is checksummed once per journal commit and once
 * per read from the device, which made this the engine's hottest leaf
 * (a fifth of a fuzz run's time with tables alone).  Two ways to the
 * same bits:
 *
 *   crc32c_portable   slicing-by-8 tables, computed on first use from
 *                     the polynomial alone; any CPU
 *   hw_crc            the crc32 instruction x86-64 has had since SSE4.2,
 *                     which computes exactly this polynomial, 8 bytes a
 *                     step; used when the CPU says it has it
 *
 * The instruction takes three cycles to give its result and can start
 * one a cycle, so one chain of it runs at a third of its speed.  hw_crc
 * runs three chains over three adjacent lanes of LANE bytes and joins
 * them: the CRC register is linear, so the register after lanes A then B
 * is the one after A moved on by LANE zero bytes, xor the one after B
 * alone; moving a register on by LANE zero bytes is a multiplication by
 * a constant, done with four tables of 256 made from the byte table.
 *
 * Not an environment switch (the engine stays blind to where it runs):
 * both give the same result for every input, and tests/test_crc32c.c
 * holds them to a bitwise reference and to each other.
 */
#include "base/crc32c.h"

#include <string.h>
#include <threads.h>

#define CRC32C_POLY 0x82F63B78u
#define LANE 128                /* bytes a lane of hw_crc's three */

static uint32_t tab[8][256];
/* shift[k][b]: the register b << 8k moved on by LANE zero bytes */
static uint32_t shift[4][256];
static once_flag tables_once = ONCE_FLAG_INIT;

static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int s = 1; s < 8; s++)
			tab[s][i] = (tab[s - 1][i] >> 8) ^ tab[0][tab[s - 1][i] & 0xff];
	for (unsigned k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t v = b << (8 * k);

			for (int n = 0; n < LANE; n++)
				v = (v >> 8) ^ tab[0][v & 0xff];
			shift[k][b] = v;
		}
}

uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	call_once(&tables_once, crc32c_init);
	crc = ~crc;
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		v ^= crc;
		crc = tab[7][v & 0xff] ^ tab[6][(v >> 8) & 0xff] ^
		      tab[5][(v >> 16) & 0xff] ^ tab[4][(v >> 24) & 0xff] ^
		      tab[3][(v >> 32) & 0xff] ^ tab[2][(v >> 40) & 0xff] ^
		      tab[1][(v >> 48) & 0xff] ^ tab[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ tab[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* The register v moved on by LANE zero bytes. */
static inline uint32_t shift_lane(uint32_t v)
{
	return shift[0][v & 0xff] ^ shift[1][(v >> 8) & 0xff] ^
	       shift[2][(v >> 16) & 0xff] ^ shift[3][v >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t hw_crc(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = ~crc;
	uint32_t c32;

	/* three chains at once, joined (the top of the file) */
	for (; len >= 3 * LANE; p += 3 * LANE, len -= 3 * LANE) {
		uint64_t a = c, b = 0, d = 0;

		for (size_t i = 0; i < LANE; i += 8) {
			uint64_t x, y, z;

			memcpy(&x, p + i, 8);
			memcpy(&y, p + LANE + i, 8);
			memcpy(&z, p + 2 * LANE + i, 8);
			a = __builtin_ia32_crc32di(a, x);
			b = __builtin_ia32_crc32di(b, y);
			d = __builtin_ia32_crc32di(d, z);
		}
		c = shift_lane(shift_lane((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)d;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	c32 = (uint32_t)c;
	while (len--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return ~c32;
}

/* CPUID leaf 1, ECX bit 20: SSE4.2; asked once, with the tables made. */
static int have_hw;
static once_flag hw_once = ONCE_FLAG_INIT;

static void hw_init(void)
{
	unsigned a, b, c, d;

	call_once(&tables_once, crc32c_init);
	have_hw = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}

static int hw_usable(void)
{
	call_once(&hw_once, hw_init);
	return have_hw;
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	return hw_usable() ? hw_crc(crc, buf, len) :
	       crc32c_portable(crc, buf, len);
}

int crc32c_accelerated(void)
{
	return hw_usable();
}
#else
uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_portable(crc, buf, len);
}

int crc32c_accelerated(void)
{
	return 0;
}
#endif
