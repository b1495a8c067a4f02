/*
 * crc32c.c - table-driven CRC32C (reflected polynomial 0x82F63B78).
 *
 * Slicing-by-8 keeps checksumming off the profile: every metadata block is
 * checksummed once per journal commit and once per read from the device.
 * The tables are computed on first use from the polynomial alone.
 */
#include "ref/crc32c.h"

#include <string.h>

#define CRC32C_POLY 0x82F63B78u

static uint32_t tab[8][256];
static int tab_ready;

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
	tab_ready = 1;
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	if (!tab_ready)
		crc32c_init();
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
