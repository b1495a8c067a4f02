/*
 * zoned.c - fuzz target `zoned`: zone operations straight against hw/'s
 * emulated zoned device ("zoned:mem,...") and against the plain model of
 * the same rules (harness/zone_rules.h), in lock step.  After every operation
 * the result codes, the bytes read, an append's location and every
 * zone's condition and write pointer must agree; anything else is a
 * crash.  No filesystem is involved.
 *
 *   input = header (the device) + zone op records (16 bytes, fuzz.h)
 *
 * Header bytes (all zero: two 4k zones, sequential, no limits):
 *   0   zones: 2 + b % 15
 *   1   bits 0-1 zone size 4k << v; bits 2-3 capacity = size - v * 4k
 *       (at least 4k)
 *   2   conventional zones: b % zones (at least one stays sequential)
 *   3   bits 0-3 max_open, bits 4-7 max_active (0 = none)
 *   4   append_max: (b % 64) * 512 bytes, 0 = the capacity
 *   5   bits 0-1 read-only zones, bits 2-3 offline zones (the last ones)
 *
 * Op records:
 *   byte 0      kind: 0 ends; else 1 + (b - 1) % 8: write, append, read,
 *               reset, open, close, finish, flush
 *   byte 1      zone (% zones)
 *   byte 2      bit 0: FUA
 *   byte 3      data seed
 *   bytes 4-7   where (le32): bits 0-15 sectors, bits 16-17 mode: at the
 *               write pointer, write pointer + sectors, zone start +
 *               sectors, zone start + sectors + (bits 20-28) bytes
 *   bytes 8-11  length (le32): bits 0-9 sectors, plus bits 16-24 bytes
 *               when bit 15 is set; may run into the next zones
 *
 * The device is opened per input (a few hundred KiB of RAM, sparse).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "harness/zone_rules.h"
#include "hw/hw.h"
#ifdef FSO_PLANTED
#include "fuzz/plant.h"

static const char *planted; /* FSO_PLANT's zoned bug, or NULL */
#endif

#define ZOPS_MAX 256

enum { Z_WRITE = 1, Z_APPEND, Z_READ, Z_RESET, Z_OPEN, Z_CLOSE, Z_FINISH,
       Z_FLUSH, Z_KINDS = Z_FLUSH };

static const char *const znames[] = { "?", "write", "append", "read", "reset",
				      "open", "close", "finish", "flush" };

static uint8_t *buf_a, *buf_b, *buf_w;  /* the largest device + 4k */
static size_t buf_len;

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/*
 * The bytes op opno writes: a function of the op and the offset alone, so
 * a read shows which write put each byte there.  Byte k is base + 7k +
 * k / 512 (mod 256); 7 * 512 is 0 mod 256, so each sector is c + 7i, c
 * its own start's value, and since 7 * 183 is 1 mod 256 that is 7(i + d)
 * with d = 183c: every sector is a copy out of one row of 7x, at d.
 * Copies, not a store a byte: under ASan each store is checked, and the
 * loop a byte was two thirds of the target.  Left out of the coverage
 * instrumentation (fuzz/coverage-ignore.txt): no branch in it depends on
 * the device.  Out of line, so that the list's entry names all of it.
 */
__attribute__((noinline))
static void zoned_fill(uint8_t *buf, uint64_t len, uint8_t base)
{
	static uint8_t row[256 + 512];

	if (row[1] == 0)
		for (size_t x = 0; x < sizeof(row); x++)
			row[x] = (uint8_t)(7 * x);
	for (uint64_t s = 0; s < len; s += 512) {
		uint8_t c = (uint8_t)(base + (s >> 9));
		size_t n = len - s < 512 ? (size_t)(len - s) : 512;

		memcpy(buf + s, row + (uint8_t)(183 * c), n);
	}
}

static void cfg_from_header(const uint8_t *h, struct zrules_cfg *c)
{
	uint32_t nr_seq;

	memset(c, 0, sizeof(*c));
	c->nr_zones = 2 + h[0] % 15;
	c->zone_size = 4096u << (h[1] & 3);
	c->capacity = c->zone_size - 4096u * ((h[1] >> 2) & 3);
	if (c->capacity < 4096 || c->capacity > c->zone_size)
		c->capacity = 4096;
	c->nr_conv = h[2] % c->nr_zones;
	c->max_open = h[3] & 15;
	c->max_active = h[3] >> 4;
	c->max_append = (h[4] % 64) * 512u;
	nr_seq = c->nr_zones - c->nr_conv;
	c->nr_readonly = h[5] & 3;
	c->nr_offline = (h[5] >> 2) & 3;
	if (c->nr_readonly > nr_seq)
		c->nr_readonly = nr_seq;
	if (c->nr_offline > nr_seq - c->nr_readonly)
		c->nr_offline = nr_seq - c->nr_readonly;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t warm[FUZZ_HDR_LEN + OP_BIN_RECORD] = {
		[FUZZ_HDR_LEN] = Z_WRITE, [FUZZ_HDR_LEN + 8] = 1,
	};

	fuzz_heap_log_start();
	if (buf_a)
		return 0;
#ifdef FSO_PLANTED
	plant_setup("zoned", &planted);
#endif
	buf_len = ZRULES_MAX_ZONES * (32u << 10) + 4096;
	buf_a = malloc(buf_len);
	buf_b = malloc(buf_len);
	buf_w = malloc(buf_len);
	if (!buf_a || !buf_b || !buf_w)
		fuzz_die("zoned: out of memory");
	LLVMFuzzerTestOneInput(warm, sizeof(warm));
	return 0;
}

/* Every zone's condition and write pointer, device vs model. */
static void compare_zones(struct hw_dev *dev, const struct zrules *m,
			  unsigned opno, const char *what)
{
	struct hw_zone z[ZRULES_MAX_ZONES];
	unsigned nr = m->cfg.nr_zones;
	int ret = hw_report_zones(dev, 0, z, &nr);

	if (ret || nr != m->cfg.nr_zones)
		fuzz_die("zoned: op %u (%s): report_zones gave %d, %u zones",
			 opno, what, ret, nr);
	for (unsigned i = 0; i < nr; i++) {
		struct hw_zone w;

		zrules_zone(m, i, &w);
		if (z[i].type != w.type || z[i].cond != w.cond ||
		    z[i].start != w.start || z[i].len != w.len ||
		    z[i].wp != w.wp || z[i].capacity != w.capacity)
			fuzz_die("zoned: after op %u (%s), zone %u: device says type "
				 "%u cond %u wp +%llu cap %llu, the model type %u "
				 "cond %u wp +%llu cap %llu", opno, what, i,
				 z[i].type, z[i].cond,
				 (unsigned long long)(z[i].wp - z[i].start),
				 (unsigned long long)z[i].capacity, w.type, w.cond,
				 (unsigned long long)(w.wp - w.start),
				 (unsigned long long)w.capacity);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in;
	struct zrules_cfg cfg;
	struct zrules m;
	struct hw_dev *dev;
	char spec[256], err[256], what[96];
	uint64_t devsize;
	unsigned opno = 0;

	fuzz_split(data, size, &in);
	cfg_from_header(in.hdr, &cfg);
	zrules_spec(&cfg, spec, sizeof(spec));
	if (hw_open(spec, &dev, err, sizeof(err)))
		fuzz_die("zoned: cannot open %s: %s", spec, err);
#ifdef FSO_PLANTED
	/* planted model_capacity: the rules take the zone size for it */
	if (planted && !strcmp(planted, "model_capacity")) {
		struct zrules_cfg mc = cfg;

		mc.capacity = mc.zone_size;
		if (zrules_init(&m, &mc))
			fuzz_die("zoned: out of memory");
	} else
#endif
	if (zrules_init(&m, &cfg))
		fuzz_die("zoned: out of memory");
	devsize = (uint64_t)cfg.nr_zones * cfg.zone_size;
	compare_zones(dev, &m, 0, "open");

	for (size_t pos = 0; pos + 1 <= in.ops_len && opno < ZOPS_MAX;
	     pos += OP_BIN_RECORD) {
		uint8_t r[OP_BIN_RECORD] = { 0 };
		size_t n = in.ops_len - pos < OP_BIN_RECORD ? in.ops_len - pos :
			   OP_BIN_RECORD;
		unsigned kind, zone, mode;
		uint32_t wv, lv;
		uint64_t zs, off, len, at_dev = 0, at_mod = 0;
		int a, b;

		memcpy(r, in.ops + pos, n);
		if (!r[0])
			break;
		opno++;
		kind = 1 + (r[0] - 1) % Z_KINDS;
		zone = r[1] % cfg.nr_zones;
		zs = (uint64_t)zone * cfg.zone_size;
		wv = le32(r + 4);
		lv = le32(r + 8);
		mode = (wv >> 16) & 3;
		off = mode == 0 ? m.wp[zone] :
		      mode == 1 ? m.wp[zone] + (wv & 0xffff) * 512ull :
		      zs + (wv & 0xffff) * 512ull +
		      (mode == 3 ? (wv >> 20) & 511 : 0);
		len = (lv & 0x3ff) * 512ull + ((lv >> 15) & 1 ? (lv >> 16) & 511 : 0);
		/* Past the end is -EINVAL however far: stay near the device. */
		if (off > devsize)
			off = devsize;
		if (len > devsize + 4096)
			len = devsize + 4096;
		zoned_fill(buf_w, len, (uint8_t)(r[3] + opno));
		snprintf(what, sizeof(what), "%s zone %u off +%lld len %llu",
			 znames[kind], zone, (long long)(off - zs),
			 (unsigned long long)len);

		switch (kind) {
		case Z_WRITE:
			a = hw_write(dev, off, buf_w, (size_t)len, (r[2] & 1) ? HW_FUA : 0);
			b = zrules_write(&m, off, buf_w, (size_t)len);
			break;
		case Z_APPEND:
			a = hw_zone_append(dev, zone, buf_w, (size_t)len,
					   (r[2] & 1) ? HW_FUA : 0, &at_dev);
			b = zrules_append(&m, zone, buf_w, (size_t)len, &at_mod);
#ifdef FSO_PLANTED
			/* planted append_location: a sector late once the zone
			 * holds data */
			if (!a && planted && !strcmp(planted, "append_location") &&
			    at_dev != zs)
				at_dev += 512;
#endif
			if (!a && !b && at_dev != at_mod)
				fuzz_die("zoned: op %u (%s): appended at +%llu on "
					 "the device, +%llu in the model", opno, what,
					 (unsigned long long)(at_dev - zs),
					 (unsigned long long)(at_mod - zs));
			break;
		case Z_READ:
			a = hw_read(dev, off, buf_a, (size_t)len);
			b = zrules_read(&m, off, buf_b, (size_t)len);
			if (!a && !b && memcmp(buf_a, buf_b, (size_t)len))
				for (uint64_t k = 0; k < len; k++)
					if (buf_a[k] != buf_b[k])
						fuzz_die("zoned: op %u (%s): byte at "
							 "%llu is %02x on the device, "
							 "%02x in the model", opno, what,
							 (unsigned long long)(off + k),
							 buf_a[k], buf_b[k]);
			break;
		case Z_FLUSH:
			a = hw_flush(dev);
			b = 0;
			break;
		default:
			a = hw_zone_mgmt(dev, (enum hw_zone_op)(kind - Z_RESET +
								HW_ZONE_RESET), zone);
			b = zrules_mgmt(&m, (enum hw_zone_op)(kind - Z_RESET +
							    HW_ZONE_RESET), zone);
			break;
		}
		if (a != b)
			fuzz_die("zoned: op %u (%s) on %s: the device returned %d, "
				 "the model %d", opno, what, spec, a, b);
		compare_zones(dev, &m, opno, what);
	}
	zrules_free(&m);
	hw_close(dev);
	return 0;
}

int fuzz_describe(const uint8_t *data, size_t size, FILE *out)
{
	struct fuzz_input in;
	struct zrules_cfg cfg;
	char spec[256];

	fuzz_split(data, size, &in);
	cfg_from_header(in.hdr, &cfg);
	zrules_spec(&cfg, spec, sizeof(spec));
	fprintf(out, "# zoned input: %s, %zu zone op record(s)\n", spec,
		in.ops_len / OP_BIN_RECORD);
	return 0;
}
