/*
 * test_hw.c - unit tests for the device layer: size and spec parsing,
 * argument checks and counters in the wrappers, and each backend (null,
 * mem, file) against hand-written bytes or an independent model.
 */
#include "hw/hw.h"
#include "hw/hw_internal.h"
#include "tests/test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KiB (1024ULL)
#define MiB (1024ULL * KiB)
#define GiB (1024ULL * MiB)
#define TiB (1024ULL * GiB)

/* Open spec into d or fail the test with hw_open's own message. */
#define OPEN(spec, d)                                                     \
	do {                                                              \
		char e_[256];                                             \
		int r_ = hw_open((spec), &(d), e_, sizeof(e_));           \
		CHECK_MSG(r_ == 0, "hw_open(\"%s\") = %d: %s", (spec),    \
			  r_, e_);                                        \
	} while (0)

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return rng_next(s) % n;
}

/* Random bytes, none zero, so a lost write never reads back as right. */
static void fill_random(uint8_t *p, size_t len, uint64_t *s)
{
	uint64_t r = 0;

	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			r = rng_next(s);
		p[i] = (uint8_t)(r | 1);
		r >>= 8;
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Resident set size of this process, in bytes. */
static uint64_t rss_bytes(void)
{
	unsigned long long total = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &total, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* A scratch directory holding one image path, removed by tmp_done(). */
struct tmp {
	char dir[64];
	char path[96];
	char spec[160];
};

static bool tmp_init_in(struct tmp *t, const char *base)
{
	snprintf(t->dir, sizeof(t->dir), "%s/fsoracle-hw-XXXXXX", base);
	if (!mkdtemp(t->dir))
		return false;
	snprintf(t->path, sizeof(t->path), "%s/img", t->dir);
	return true;
}

static bool tmp_init(struct tmp *t)
{
	return tmp_init_in(t, "/tmp");
}

static void tmp_done(struct tmp *t)
{
	unlink(t->path);
	rmdir(t->dir);
}

static long long file_bytes(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long long)st.st_size;
}

/*
 * A toy backend over a caller's buffer that counts the calls reaching
 * it and has no zero_out or discard, so the generic fallbacks run.
 */
struct toy {
	struct hw_dev dev;
	uint8_t *buf;
	int reads, writes, flushes;
};

static int toy_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	struct toy *t = (struct toy *)dev;

	t->reads++;
	memcpy(buf, t->buf + off, len);
	return 0;
}

static int toy_write(struct hw_dev *dev, uint64_t off, const void *buf,
		     size_t len, unsigned flags)
{
	struct toy *t = (struct toy *)dev;

	t->writes++;
	memcpy(t->buf + off, buf, len);
	return 0;
}

static int toy_flush(struct hw_dev *dev)
{
	((struct toy *)dev)->flushes++;
	return 0;
}

static const struct hw_ops toy_ops = {
	.name = "toy",
	.read = toy_read,
	.write = toy_write,
	.flush = toy_flush,
};

static void toy_init(struct toy *t, uint8_t *buf, uint64_t size)
{
	memset(t, 0, sizeof(*t));
	t->dev.ops = &toy_ops;
	t->dev.geo.size = size;
	t->buf = buf;
}

/* ---- sizes ---------------------------------------------------------- */

TEST(parse_size_accepts_decimal_hex_and_binary_suffixes)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "0", 0 },
		{ "4096", 4096 },
		{ "007", 7 },                  /* decimal, not octal */
		{ "0x1000", 4096 },
		{ "0X1f", 31 },
		{ "0xFFFFFFFFFFFFFFFF", UINT64_MAX },
		{ "18446744073709551615", UINT64_MAX },
		{ "1k", 1024 },
		{ "1K", 1024 },
		{ "64m", 64ULL << 20 },
		{ "64M", 64ULL << 20 },
		{ "1g", 1ULL << 30 },
		{ "3G", 3ULL << 30 },
		{ "64t", 64ULL << 40 },
		{ "64T", 64ULL << 40 },
		{ "0x10k", 16384 },
		{ "16777215t", 0xFFFFFF0000000000ULL },
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t v = 12345;

		CHECK_MSG(hw_parse_size(good[i].s, &v) == 0,
			  "\"%s\" rejected", good[i].s);
		CHECK_MSG(v == good[i].v, "\"%s\" = %llu, want %llu", good[i].s,
			  (unsigned long long)v,
			  (unsigned long long)good[i].v);
	}
}

TEST(parse_size_rejects_garbage_overflow_and_empty)
{
	static const char *const bad[] = {
		"", "0x", "0X", "12q", "k", "-1", "+1", " 1", "1 ", "1kb",
		"1.5g", "1e3", "1p", "0xg", "x10", "1kk",
		"16777216t",                   /* 2^64 */
		"18446744073709551616",        /* 2^64 */
		"0x10000000000000000",         /* 2^64 */
		"99999999999999999999999",
		"17179869184g",                /* 2^64 */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 777;

		CHECK_MSG(hw_parse_size(bad[i], &v) == -EINVAL,
			  "\"%s\" accepted", bad[i]);
		CHECK_MSG(v == 777, "\"%s\" changed the output", bad[i]);
	}
	CHECK_EQ(hw_parse_size(NULL, &(uint64_t){ 0 }), -EINVAL);
	CHECK_EQ(hw_parse_size("1", NULL), -EINVAL);
}

/* ---- specs ---------------------------------------------------------- */

TEST(spec_rejects_unknown_kind)
{
	struct hw_dev *d = (struct hw_dev *)&d;   /* must be reset to NULL */
	char err[256] = "stale";

	CHECK_EQ(hw_open("foo:1g", &d, err, sizeof(err)), -EINVAL);
	CHECK(d == NULL);
	CHECK_MSG(strstr(err, "'foo'") && strstr(err, "null, mem, file"),
		  "message: %s", err);
}

TEST(spec_rejects_malformed_specs_with_one_line_message)
{
	static const char *const bad[] = {
		"", "nocolon", ":1g", "NULL:1g", "nul:1g", "mem",
		"null:", "null:12q", "null:0", "null:1000", "null:4097",
		"null:16777216t", "null:1g,", "null:1g,size=1g",
		"mem:", "mem:0x", "mem:64m,size=64m", "mem:1g,,",
		"file:", "file:,size=1m",
		"file:/tmp/fsoracle-none,size",
		"file:/tmp/fsoracle-none,size=",
		"file:/tmp/fsoracle-none,=4k",
		"file:/tmp/fsoracle-none,size=12q",
		"file:/tmp/fsoracle-none,size=0",
		"file:/tmp/fsoracle-none,size=1000",
		"file:/tmp/fsoracle-none,bogus=1",
		"file:/tmp/fsoracle-none,size=1m,size=2m",
		"file:/tmp/fsoracle-none,,size=4k",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hw_dev *d = (struct hw_dev *)&d;
		char err[256] = "";
		int rc = hw_open(bad[i], &d, err, sizeof(err));

		CHECK_MSG(rc == -EINVAL, "\"%s\" gave %d", bad[i], rc);
		CHECK_MSG(d == NULL, "\"%s\" left a device", bad[i]);
		CHECK_MSG(strncmp(err, "hw: ", 4) == 0 && strlen(err) > 10,
			  "\"%s\" message: '%s'", bad[i], err);
		CHECK_MSG(!strchr(err, '\n'), "\"%s\" message has a newline",
			  bad[i]);
	}
	CHECK_EQ(access("/tmp/fsoracle-none", F_OK), -1);
}

TEST(spec_errors_name_what_is_wrong)
{
	static const struct { const char *spec, *a, *b; } cases[] = {
		{ "null:12q", "'12q'", "null:12q" },
		{ "mem:", "missing size", "mem:SIZE" },
		{ "null:1000", "'1000'", "multiple of 4096" },
		{ "null:0", "'0'", "greater than 0" },
		{ "null:1g,size=1g", "'size'", "no options" },
		{ "file:/x,bogus=1", "'bogus'", "accepts: size" },
		{ "file:/x,size=1m,size=2m", "'size'", "twice" },
		{ "file:/x,size", "'size'", "key=value" },
		{ "file:,size=1m", "missing path", "file:PATH[,size=SIZE]" },
		{ "nocolon", "'nocolon'", "KIND" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hw_dev *d;
		char err[256] = "";

		CHECK(hw_open(cases[i].spec, &d, err, sizeof(err)) < 0);
		CHECK_MSG(strstr(err, cases[i].a) && strstr(err, cases[i].b),
			  "\"%s\": '%s' lacks '%s' or '%s'", cases[i].spec,
			  err, cases[i].a, cases[i].b);
	}
}

TEST(spec_errors_in_options_create_no_file)
{
	static const char *const opts[] = {
		",size=1m,bogus=1", ",size=12q", ",size=1000", ",size=1m,size=1m",
		",size=0", ",size",
	};
	struct tmp t;

	CHECK(tmp_init(&t));
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		struct hw_dev *d;
		char err[256];

		snprintf(t.spec, sizeof(t.spec), "file:%s%s", t.path, opts[i]);
		CHECK_EQ(hw_open(t.spec, &d, err, sizeof(err)), -EINVAL);
		CHECK_MSG(access(t.path, F_OK) == -1, "\"%s\" created the file",
			  t.spec);
	}
	tmp_done(&t);
}

TEST(open_error_line_is_cut_to_errlen)
{
	struct hw_dev *d;
	char err[8] = "xxxxxxx";

	CHECK_EQ(hw_open("foo:1g", &d, err, sizeof(err)), -EINVAL);
	CHECK_MEM(err, "hw: unk", 8);          /* 7 chars and the NUL */
	err[0] = 'x';
	CHECK_EQ(hw_open("foo:1g", &d, err, 1), -EINVAL);
	CHECK_EQ(err[0], '\0');
	CHECK_EQ(hw_open("foo:1g", &d, NULL, 0), -EINVAL);
	CHECK_EQ(hw_open(NULL, &d, NULL, 0), -EINVAL);
	CHECK_EQ(hw_open("mem:1m", NULL, NULL, 0), -EINVAL);
}

TEST(spec_is_recorded_and_cut_to_the_field)
{
	struct hw_dev *d;
	char spec[320];

	OPEN("mem:1m", d);
	CHECK(strcmp(hw_spec(d), "mem:1m") == 0);
	hw_close(d);

	/* 300 leading zeros: a valid size, a spec longer than the field. */
	memcpy(spec, "null:", 5);
	memset(spec + 5, '0', 300);
	memcpy(spec + 305, "1m", 3);
	OPEN(spec, d);
	CHECK_EQ(hw_size(d), MiB);
	CHECK_EQ(strlen(hw_spec(d)), sizeof(d->spec) - 1);
	CHECK_MEM(hw_spec(d), spec, sizeof(d->spec) - 1);
	hw_close(d);
}

TEST(spec_longer_than_the_limit_is_rejected)
{
	static char spec[HW_SPEC_MAX + 64];
	struct hw_dev *d;
	char err[256] = "";

	memcpy(spec, "null:", 5);
	memset(spec + 5, '0', HW_SPEC_MAX);
	memcpy(spec + 5 + HW_SPEC_MAX, "1m", 3);
	CHECK_EQ(hw_open(spec, &d, err, sizeof(err)), -ENAMETOOLONG);
	CHECK(d == NULL);
	CHECK(strncmp(err, "hw: ", 4) == 0);
}

/* The parser later backends (zoned:, pmem:) will use, driven directly. */
TEST(opts_parser_splits_first_field_and_declared_keys)
{
	static const char *const keys[] = { "zone", "cap", "conv", NULL };
	static const struct hw_backend be = {
		.kind = "zoned", .usage = "zoned:BACKING,...", .keys = keys,
	};
	static struct hw_opts o;
	char err[256] = "";
	uint64_t v = 0;

	CHECK_OK(hw_opts_parse(&o, &be, "zoned:mem,zone=64m,cap=48m,conv=2",
			       "mem,zone=64m,cap=48m,conv=2", err, sizeof(err)));
	CHECK(strcmp(o.first, "mem") == 0);
	CHECK_EQ(o.nopts, 3);
	CHECK(strcmp(hw_opts_get(&o, "zone"), "64m") == 0);
	CHECK(strcmp(hw_opts_get(&o, "cap"), "48m") == 0);
	CHECK(strcmp(hw_opts_get(&o, "conv"), "2") == 0);
	CHECK(hw_opts_get(&o, "size") == NULL);
	CHECK_OK(hw_opts_dev_size(&o, "zone", hw_opts_get(&o, "zone"), &v,
				  err, sizeof(err)));
	CHECK_EQ(v, 64 * MiB);
	CHECK_OK(hw_opts_number(&o, "conv", hw_opts_get(&o, "conv"), &v,
				err, sizeof(err)));
	CHECK_EQ(v, 2);
	CHECK_EQ(hw_opts_dev_size(&o, "conv", "2", &v, err, sizeof(err)),
		 -EINVAL);

	CHECK_OK(hw_opts_parse(&o, &be, "zoned:", "", err, sizeof(err)));
	CHECK(strcmp(o.first, "") == 0);
	CHECK_EQ(o.nopts, 0);
	CHECK_EQ(hw_opts_parse(&o, &be, "s", "mem,zone=1m,zone=2m", err,
			       sizeof(err)), -EINVAL);
	CHECK_EQ(hw_opts_parse(&o, &be, "s", "mem,size=1m", err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "zone, cap, conv"));
}

TEST(devices_report_block_geometry_and_caps)
{
	struct hw_dev *d;
	struct tmp t;

	OPEN("null:1g", d);
	CHECK_EQ(hw_size(d), GiB);
	CHECK_EQ(hw_caps(d), 0);
	CHECK_EQ(d->geo.sector_size, 512);
	CHECK_EQ(d->geo.atomic_write, 512);
	hw_close(d);

	OPEN("mem:0x10000", d);
	CHECK_EQ(hw_size(d), 65536);
	CHECK_EQ(hw_caps(d), HW_CAP_STORES_DATA | HW_CAP_ZERO_FREES);
	CHECK_EQ(d->geo.sector_size, 512);
	CHECK_EQ(d->geo.atomic_write, 512);
	hw_close(d);

	/* a layer's zero-out is its own: mem:'s handing back is not passed on */
	OPEN("crash:mem:64k", d);
	CHECK_EQ(hw_caps(d), HW_CAP_STORES_DATA);
	hw_close(d);
	OPEN("faulty[write=3]:mem:64k", d);
	CHECK_EQ(hw_caps(d), HW_CAP_STORES_DATA);
	hw_close(d);

	CHECK(tmp_init(&t));
	snprintf(t.spec, sizeof(t.spec), "file:%s,size=64k", t.path);
	OPEN(t.spec, d);
	CHECK_EQ(hw_size(d), 64 * KiB);
	CHECK_EQ(hw_caps(d), HW_CAP_STORES_DATA | HW_CAP_PERSISTENT |
			     HW_CAP_VOLATILE | HW_CAP_DISCARD);
	CHECK_EQ(d->geo.sector_size, 512);
	CHECK_EQ(d->geo.atomic_write, 512);
	hw_close(d);
	tmp_done(&t);
}

/* ---- wrappers: ranges, counters, fallbacks --------------------------- */

TEST(io_outside_the_device_is_rejected_before_the_backend)
{
	static uint8_t store[8192], buf[16];
	const uint64_t size = sizeof(store);
	struct toy t;

	toy_init(&t, store, size);
	CHECK_EQ(hw_read(&t.dev, size - 1, buf, 2), -EINVAL);
	CHECK_EQ(hw_write(&t.dev, size, buf, 1, 0), -EINVAL);
	CHECK_EQ(hw_read(&t.dev, UINT64_MAX, buf, 2), -EINVAL);
	CHECK_EQ(hw_write(&t.dev, UINT64_MAX - 1, buf, 4, 0), -EINVAL);
	CHECK_EQ(hw_read(&t.dev, 1, buf, SIZE_MAX), -EINVAL);
	CHECK_EQ(hw_write(&t.dev, 4096, buf, SIZE_MAX - 4000, 0), -EINVAL);
	CHECK_EQ(hw_zero_out(&t.dev, 1, UINT64_MAX, 0), -EINVAL);
	CHECK_EQ(hw_zero_out(&t.dev, size, 1, 0), -EINVAL);
	CHECK_EQ(hw_discard(&t.dev, UINT64_MAX - 1, 4), -EINVAL);
	CHECK_EQ(hw_discard(&t.dev, 0, size + 1), -EINVAL);
	CHECK_EQ(hw_read(&t.dev, 0, NULL, 1), -EINVAL);
	CHECK_EQ(hw_write(&t.dev, 0, NULL, 1, 0), -EINVAL);
	CHECK_EQ(hw_write(&t.dev, 0, buf, 1, 1u << 7), -EINVAL);
	CHECK_EQ(hw_zero_out(&t.dev, 0, 1, 1u << 7), -EINVAL);
	CHECK_EQ(hw_read(NULL, 0, buf, 1), -EINVAL);
	CHECK_EQ(t.reads + t.writes + t.flushes, 0);

	/* The last byte and the whole device are inside. */
	CHECK_OK(hw_read(&t.dev, size - 1, buf, 1));
	CHECK_OK(hw_write(&t.dev, size - 16, buf, 16, 0));
	CHECK_OK(hw_zero_out(&t.dev, 0, size, 0));
	CHECK_EQ(t.reads, 1);
	CHECK_EQ(t.dev.ctr.reads, 1);
	CHECK_EQ(t.dev.ctr.writes, 1);
	CHECK_EQ(t.dev.ctr.zeroouts, 1);
	CHECK_EQ(t.dev.ctr.discards, 0);
}

TEST(io_of_zero_length_is_a_noop_anywhere)
{
	static uint8_t store[4096];
	struct toy t;
	static const struct hw_counters none;

	toy_init(&t, store, sizeof(store));
	CHECK_EQ(hw_read(&t.dev, UINT64_MAX, NULL, 0), 0);
	CHECK_EQ(hw_write(&t.dev, 1ULL << 40, NULL, 0, HW_FUA), 0);
	CHECK_EQ(hw_zero_out(&t.dev, 5000, 0, 0), 0);
	CHECK_EQ(hw_discard(&t.dev, 5000, 0), 0);
	CHECK_EQ(t.reads + t.writes + t.flushes, 0);
	CHECK_MEM(&t.dev.ctr, &none, sizeof(none));
}

TEST(counters_follow_a_known_sequence)
{
	struct hw_counters want = { 0 };
	static const struct hw_counters none;
	static uint8_t buf[8192];
	struct hw_dev *d;

	OPEN("mem:1m", d);
	CHECK_OK(hw_write(d, 0, buf, 4096, 0));
	CHECK_OK(hw_write(d, 8192, buf, 100, HW_META));
	CHECK_OK(hw_write(d, 9000, buf, 512, HW_META | HW_FUA));
	CHECK_OK(hw_write(d, 20000, buf, 3, HW_FUA));
	CHECK_OK(hw_read(d, 0, buf, 8192));
	CHECK_OK(hw_read(d, 1, buf, 10));
	CHECK_OK(hw_flush(d));
	CHECK_OK(hw_flush(d));
	CHECK_OK(hw_zero_out(d, 100, 10000, 0));
	CHECK_OK(hw_discard(d, 4096, 8192));
	CHECK_EQ(hw_read(d, MiB, buf, 1), -EINVAL);      /* not counted */

	want.writes = 4;
	want.bytes_written = 4096 + 100 + 512 + 3;
	want.meta_writes = 2;
	want.meta_bytes_written = 612;
	want.fua_writes = 2;
	want.reads = 2;
	want.bytes_read = 8202;
	want.flushes = 2;
	want.zeroouts = 1;
	want.bytes_zeroed = 10000;
	want.discards = 1;
	want.bytes_discarded = 8192;
	CHECK_MEM(&d->ctr, &want, sizeof(want));

	hw_reset_counters(d);
	CHECK_MEM(&d->ctr, &none, sizeof(none));
	hw_close(d);
}

TEST(zero_out_without_backend_support_writes_zeros)
{
	static uint8_t store[MiB], want[MiB];
	struct toy t;

	memset(store, 0xab, sizeof(store));
	memset(want, 0xab, sizeof(want));
	memset(want + 5000, 0, 200000);
	toy_init(&t, store, sizeof(store));

	CHECK_OK(hw_zero_out(&t.dev, 5000, 200000, 0));
	CHECK_MEM(store, want, sizeof(want));
	CHECK_EQ(t.writes, 4);                 /* 64 KiB chunks */
	CHECK_EQ(t.flushes, 0);
	CHECK_EQ(t.dev.ctr.zeroouts, 1);
	CHECK_EQ(t.dev.ctr.bytes_zeroed, 200000);
	CHECK_EQ(t.dev.ctr.writes, 0);

	CHECK_OK(hw_zero_out(&t.dev, sizeof(store) - 1, 1, HW_FUA));
	want[sizeof(want) - 1] = 0;
	CHECK_MEM(store, want, sizeof(want));
	CHECK_EQ(t.flushes, 1);
}

TEST(discard_without_backend_support_is_a_counted_noop)
{
	static uint8_t store[16384], want[16384];
	struct toy t;

	memset(store, 0x5c, sizeof(store));
	memset(want, 0x5c, sizeof(want));
	toy_init(&t, store, sizeof(store));
	CHECK_OK(hw_discard(&t.dev, 4096, 8192));
	CHECK_MEM(store, want, sizeof(want));
	CHECK_EQ(t.writes, 0);
	CHECK_EQ(t.dev.ctr.discards, 1);
	CHECK_EQ(t.dev.ctr.bytes_discarded, 8192);
}

/* ---- mem ------------------------------------------------------------ */

TEST(mem_zero_out_unaligned_keeps_neighbours)
{
	static uint8_t got[16384], want[16384];
	struct hw_dev *d;

	OPEN("mem:16k", d);
	memset(want, 0xcc, sizeof(want));
	CHECK_OK(hw_write(d, 0, want, sizeof(want), 0));

	/* Ragged at both ends, and covering page 1 entirely. */
	CHECK_OK(hw_zero_out(d, 4095, 4098, 0));
	memset(want + 4095, 0, 4098);
	/* Inside one page. */
	CHECK_OK(hw_zero_out(d, 12000, 7, 0));
	memset(want + 12000, 0, 7);
	CHECK_OK(hw_discard(d, 16383, 1));
	want[16383] = 0;

	CHECK_OK(hw_read(d, 0, got, sizeof(got)));
	CHECK_MEM(got, want, sizeof(want));
	CHECK_EQ(got[4094], 0xcc);
	CHECK_EQ(got[8193], 0xcc);
	hw_close(d);
}

/*
 * A closed mem: device's mapping serves the next open of its size or a
 * smaller one (hw/mem.c): whatever the last device wrote, a new device
 * reads zeros everywhere, up to its last byte.
 */
TEST(mem_reopened_device_reads_zeros_where_the_last_one_wrote)
{
	static const char *const specs[] = { "mem:1m", "mem:1m", "mem:700k",
					     "mem:64k", "mem:1m" };
	static uint8_t got[1 << 20], pat[1 << 20];
	uint64_t seed = 11;
	struct hw_dev *d;

	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(rng_next(&seed) | 1);
	for (unsigned n = 0; n < sizeof(specs) / sizeof(specs[0]); n++) {
		uint64_t size;

		OPEN(specs[n], d);
		size = hw_size(d);
		CHECK_OK(hw_read(d, 0, got, (size_t)size));
		for (uint64_t i = 0; i < size; i++)
			if (got[i]) {
				CHECK_MSG(0, "%s (open %u): byte %llu reads 0x%02x "
					  "after the last device wrote it", specs[n],
					  n, (unsigned long long)i, got[i]);
				break;
			}
		/* every byte, a hole punched by zero-out, the last byte */
		CHECK_OK(hw_write(d, 0, pat, (size_t)size, 0));
		CHECK_OK(hw_zero_out(d, 8192, 12288, 0));
		CHECK_OK(hw_write(d, 9000, pat, 100, 0));
		CHECK_OK(hw_write(d, size - 1, pat, 1, 0));
		hw_close(d);
	}
}

TEST(mem_matches_reference_buffer_under_random_io)
{
	enum { SIZE = 128 * 1024 };
	static uint8_t ref[SIZE], got[SIZE], buf[SIZE];
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	struct hw_dev *d;

	memset(ref, 0, sizeof(ref));
	OPEN("mem:128k", d);
	for (int op = 0; op < 1500; op++) {
		uint64_t off = rng_below(&seed, SIZE);
		uint64_t len = 1 + rng_below(&seed, SIZE - off);
		int kind = (int)rng_below(&seed, 4);

		if (rng_below(&seed, 4) == 0)          /* short ones too */
			len = 1 + rng_below(&seed, len < 64 ? len : 64);
		switch (kind) {
		case 0:
		case 1:
			fill_random(buf, len, &seed);
			CHECK_OK(hw_write(d, off, buf, len, 0));
			memcpy(ref + off, buf, len);
			break;
		case 2:
			CHECK_OK(hw_zero_out(d, off, len, 0));
			memset(ref + off, 0, len);
			break;
		case 3:
			CHECK_OK(hw_read(d, off, got, len));
			CHECK_MSG(memcmp(got, ref + off, len) == 0,
				  "op %d: read %llu+%llu differs", op,
				  (unsigned long long)off,
				  (unsigned long long)len);
			break;
		}
		if (op % 16 == 0) {
			CHECK_OK(hw_read(d, 0, got, SIZE));
			CHECK_MSG(memcmp(got, ref, SIZE) == 0,
				  "op %d: device differs", op);
		}
	}
	hw_close(d);
}

static long minor_faults(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_minflt;
}

/*
 * A page of mem: never written (or given back by zero-out) reads as
 * zeros without being touched: no fault, none of it resident.  Pages
 * written read back what was written, across the edges of the runs.
 */
TEST(mem_reads_pages_never_written_without_touching_them)
{
	enum { SIZE = 4 * 1024 * 1024, PG = 4096 };
	static uint8_t got[SIZE];
	uint8_t b[3] = { 0x11, 0x22, 0x33 };
	struct hw_dev *d;
	long f0;

	memset(got, 0xa5, sizeof(got));        /* faulted in here, not below */
	OPEN("mem:4m", d);
	f0 = minor_faults();
	CHECK_OK(hw_read(d, 0, got, SIZE));
	CHECK_MSG(minor_faults() - f0 < 64, "reading %d untouched pages took "
		  "%ld faults", SIZE / PG, minor_faults() - f0);
	for (size_t i = 0; i < SIZE; i++)
		CHECK_MSG(got[i] == 0, "byte %zu reads %#x", i, got[i]);
	/* one byte on each side of a page edge, one in the middle of a run */
	CHECK_OK(hw_write(d, 10 * PG - 1, b, 2, 0));
	CHECK_OK(hw_write(d, 700 * PG + 5, b + 2, 1, 0));
	memset(got, 0xa5, sizeof(got));
	CHECK_OK(hw_read(d, 9 * PG + 100, got, 700 * PG));
	CHECK_EQ(got[PG - 101], 0x11);
	CHECK_EQ(got[PG - 100], 0x22);
	CHECK_EQ(got[691 * PG - 95], 0x33);
	CHECK_EQ(got[0], 0);
	CHECK_EQ(got[PG - 102], 0);
	CHECK_EQ(got[PG - 99], 0);
	CHECK_EQ(got[700 * PG - 1], 0);
	/* given back whole, the pages read as never written again */
	CHECK_OK(hw_zero_out(d, 8 * PG, 8 * PG, 0));
	CHECK_OK(hw_zero_out(d, 512 * PG, 512 * PG, 0));
	f0 = minor_faults();
	CHECK_OK(hw_read(d, 0, got, SIZE));
	CHECK_MSG(minor_faults() - f0 < 64, "%ld faults", minor_faults() - f0);
	for (size_t i = 0; i < SIZE; i++)
		CHECK_MSG(got[i] == 0, "byte %zu reads %#x", i, got[i]);
	hw_close(d);
}

/*
 * Valgrind gives its client about 128 GiB of address space, never in
 * one 64 GiB piece; under it the test maps 16 GiB, still far more than
 * could be paid for in RAM, which is what the test is about.
 */
static bool under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

TEST(mem_64g_opens_instantly_and_untouched_pages_cost_nothing)
{
	bool vg = under_valgrind();
	const char *spec = vg ? "mem:16g" : "mem:64g";
	uint64_t before = rss_bytes(), size = (vg ? 16 : 64) * GiB;
	uint8_t b = 0x7e, got = 0;
	double t0 = now_ms();
	struct hw_dev *d;

	OPEN(spec, d);
	CHECK_MSG(now_ms() - t0 < 1000, "open took %.0f ms", now_ms() - t0);
	CHECK_EQ(hw_size(d), size);
	CHECK_OK(hw_write(d, size - 1, &b, 1, 0));
	CHECK_OK(hw_write(d, size / 2, &b, 1, 0));
	CHECK_OK(hw_read(d, size - 1, &got, 1));
	CHECK_EQ(got, 0x7e);
	CHECK_OK(hw_read(d, size - 2, &got, 1));
	CHECK_EQ(got, 0);
	CHECK_MSG(rss_bytes() < before + 64 * MiB, "rss grew %llu bytes",
		  (unsigned long long)(rss_bytes() - before));

	t0 = now_ms();
	CHECK_OK(hw_zero_out(d, 0, size, 0));
	CHECK_MSG(now_ms() - t0 < 1000, "zero-out took %.0f ms", now_ms() - t0);
	CHECK_OK(hw_read(d, size / 2, &got, 1));
	CHECK_EQ(got, 0);
	hw_close(d);
}

/* ---- null ----------------------------------------------------------- */

TEST(null_reads_zeros_but_keeps_meta_writes)
{
	static uint8_t got[16384], want[16384], data[300];
	struct hw_dev *d;

	OPEN("null:16k", d);
	memset(data, 0xaa, sizeof(data));
	CHECK_OK(hw_write(d, 0, data, sizeof(data), 0));
	CHECK_OK(hw_write(d, 5000, data, sizeof(data), HW_FUA));
	memset(data, 0x55, sizeof(data));
	CHECK_OK(hw_write(d, 8192 + 100, data, 200, HW_META));

	memset(want, 0, sizeof(want));
	memset(want + 8292, 0x55, 200);
	CHECK_OK(hw_read(d, 0, got, sizeof(got)));
	CHECK_MEM(got, want, sizeof(want));
	/* An unaligned read of the kept bytes alone. */
	CHECK_OK(hw_read(d, 8291, got, 3));
	CHECK_MEM(got, "\0\x55\x55", 3);
	hw_close(d);
}

TEST(null_meta_writes_merge_within_a_page_and_span_pages)
{
	static uint8_t got[12288], want[12288];
	struct hw_dev *d;

	OPEN("null:12k", d);
	CHECK_OK(hw_write(d, 4093, "hello", 5, HW_META));   /* pages 0, 1 */
	CHECK_OK(hw_write(d, 10, "ab", 2, HW_META));
	CHECK_OK(hw_write(d, 4097, "XY", 2, HW_META | HW_FUA));

	memset(want, 0, sizeof(want));
	memcpy(want + 10, "ab", 2);
	memcpy(want + 4093, "hellXY", 6);
	CHECK_OK(hw_read(d, 0, got, sizeof(got)));
	CHECK_MEM(got, want, sizeof(want));
	hw_close(d);
}

TEST(null_plain_writes_update_only_pages_already_kept)
{
	static uint8_t got[12288], want[12288], data[12288];
	struct hw_dev *d;

	OPEN("null:12k", d);
	memset(data, 0x11, 4096);
	CHECK_OK(hw_write(d, 4096, data, 4096, HW_META));
	memset(data, 0x22, sizeof(data));
	CHECK_OK(hw_write(d, 4000, data, 12288 - 4000, 0));

	memset(want, 0, sizeof(want));
	memset(want + 4096, 0x22, 4096);
	CHECK_OK(hw_read(d, 0, got, sizeof(got)));
	CHECK_MEM(got, want, sizeof(want));
	hw_close(d);
}

/*
 * Whole pages are dropped, partial ones zeroed but kept: a later plain
 * write shows which is which (kept pages take it, dropped ones do not).
 */
TEST(null_zero_out_and_discard_drop_meta_pages)
{
	static uint8_t got[16384], want[16384], data[16384];
	struct hw_dev *d;

	OPEN("null:16k", d);
	memset(data, 0x5a, sizeof(data));
	CHECK_OK(hw_write(d, 0, data, sizeof(data), HW_META));
	CHECK_OK(hw_zero_out(d, 100, 8192, 0));   /* [100, 8292) */
	CHECK_OK(hw_discard(d, 12288, 4096));     /* page 3 */

	memset(want, 0x5a, sizeof(want));
	memset(want + 100, 0, 8192);
	memset(want + 12288, 0, 4096);
	CHECK_OK(hw_read(d, 0, got, sizeof(got)));
	CHECK_MEM(got, want, sizeof(want));

	/* Pages 0 and 2 are still kept, 1 and 3 are gone. */
	memset(data, 0x33, sizeof(data));
	CHECK_OK(hw_write(d, 0, data, sizeof(data), 0));
	memset(want, 0, sizeof(want));
	memset(want, 0x33, 4096);
	memset(want + 8192, 0x33, 4096);
	CHECK_OK(hw_read(d, 0, got, sizeof(got)));
	CHECK_MEM(got, want, sizeof(want));
	hw_close(d);
}

TEST(null_64t_opens_instantly_and_keeps_far_meta)
{
	const uint64_t size = 64 * TiB, far = 17 * TiB + 12345;
	uint64_t before = rss_bytes();
	uint8_t got[8];
	double t0 = now_ms();
	struct hw_dev *d;

	OPEN("null:64t", d);
	CHECK_MSG(now_ms() - t0 < 100, "open took %.0f ms", now_ms() - t0);
	CHECK_EQ(hw_size(d), size);
	CHECK_MSG(rss_bytes() < before + MiB, "rss grew %llu bytes",
		  (unsigned long long)(rss_bytes() - before));

	CHECK_OK(hw_write(d, 0, "first", 5, HW_META));
	CHECK_OK(hw_write(d, far, "middle", 6, HW_META));
	CHECK_OK(hw_write(d, size - 4, "last", 4, HW_META));
	CHECK_OK(hw_read(d, far - 1, got, 8));
	CHECK_MEM(got, "\0middle\0", 8);

	/* Everything but the first and last page: swept, not looped. */
	t0 = now_ms();
	CHECK_OK(hw_zero_out(d, 4096, size - 8192, 0));
	CHECK_MSG(now_ms() - t0 < 1000, "zero-out took %.0f ms", now_ms() - t0);
	CHECK_OK(hw_read(d, far - 1, got, 8));
	CHECK_MEM(got, "\0\0\0\0\0\0\0\0", 8);
	CHECK_OK(hw_read(d, 0, got, 5));
	CHECK_MEM(got, "first", 5);
	CHECK_OK(hw_read(d, size - 4, got, 4));
	CHECK_MEM(got, "last", 4);

	CHECK_OK(hw_discard(d, 0, size));
	CHECK_OK(hw_read(d, size - 4, got, 4));
	CHECK_MEM(got, "\0\0\0\0", 4);
	CHECK_OK(hw_read(d, 0, got, 5));
	CHECK_MEM(got, "\0\0\0\0\0", 5);
	hw_close(d);
}

/*
 * The model: per page, "kept" or not, and the bytes of kept pages.
 * Meta writes are short and zero-outs frequent, so only tens of pages
 * are kept at a time: the map stays small and crowded (runs wrap past
 * its end), long zero-outs sweep it and short ones look pages up.
 */
TEST(null_matches_page_model_under_random_io)
{
	enum { PAGES = 1024, PG = 4096, SIZE = PAGES * PG, MAXIO = 64 * PG };
	static uint8_t ref[SIZE], got[SIZE], buf[MAXIO];
	static bool kept[PAGES];
	uint64_t seed = 0x243f6a8885a308d3ULL;
	struct hw_dev *d;

	memset(ref, 0, sizeof(ref));
	memset(kept, 0, sizeof(kept));
	OPEN("null:4m", d);
	for (int op = 0; op < 4000; op++) {
		uint64_t r = rng_below(&seed, 100);
		uint64_t off = rng_below(&seed, SIZE), room = SIZE - off;
		uint64_t max = r < 30 ? 2 * PG : r < 45 ? MAXIO : room;
		uint64_t len, end, p;

		if (r >= 45 && r < 75 && rng_below(&seed, 2))
			max = 3 * PG;                  /* short zero-outs */
		len = 1 + rng_below(&seed, max < room ? max : room);
		end = off + len;
		if (r < 45) {                          /* meta or plain write */
			fill_random(buf, len, &seed);
			CHECK_OK(hw_write(d, off, buf, len, r < 30 ? HW_META : 0));
			for (uint64_t i = off; i < end; i++) {
				if (r < 30)
					kept[i / PG] = true;
				if (kept[i / PG])
					ref[i] = buf[i - off];
			}
		} else if (r < 75) {                   /* zero-out, discard */
			if (r < 60)
				CHECK_OK(hw_zero_out(d, off, len, 0));
			else
				CHECK_OK(hw_discard(d, off, len));
			memset(ref + off, 0, len);
			for (p = off / PG; p * PG < end; p++)
				if (p * PG >= off && (p + 1) * PG <= end)
					kept[p] = false;
		} else {
			CHECK_OK(hw_read(d, off, got, len));
			CHECK_MSG(memcmp(got, ref + off, len) == 0,
				  "op %d: read %llu+%llu differs", op,
				  (unsigned long long)off,
				  (unsigned long long)len);
		}
		if (op % 64 == 0) {
			CHECK_OK(hw_read(d, 0, got, SIZE));
			CHECK_MSG(memcmp(got, ref, SIZE) == 0,
				  "op %d: device differs", op);
		}
	}
	CHECK_OK(hw_read(d, 0, got, SIZE));
	CHECK_MEM(got, ref, SIZE);
	hw_close(d);
}

/* ---- file ----------------------------------------------------------- */

TEST(file_device_persists_across_reopen)
{
	char path[] = "/tmp/fsoracle-hw-persist-XXXXXX", spec[64];
	static uint8_t data[10000], got[10000];
	struct hw_dev *d;
	int fd;

	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);

	snprintf(spec, sizeof(spec), "file:%s,size=64k", path);
	OPEN(spec, d);
	CHECK_OK(hw_write(d, 12345, data, sizeof(data), 0));
	CHECK_OK(hw_write(d, 65535, "z", 1, HW_FUA));
	CHECK_OK(hw_flush(d));
	hw_close(d);

	/* The bytes are in the file where a plain pread finds them. */
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, got, sizeof(got), 12345), (long long)sizeof(got));
	close(fd);
	CHECK_MEM(got, data, sizeof(data));

	/* Reopened without size=: the file's own size, same contents. */
	snprintf(spec, sizeof(spec), "file:%s", path);
	OPEN(spec, d);
	CHECK_EQ(hw_size(d), 64 * KiB);
	memset(got, 0, sizeof(got));
	CHECK_OK(hw_read(d, 12345, got, sizeof(got)));
	CHECK_MEM(got, data, sizeof(data));
	CHECK_OK(hw_read(d, 65534, got, 2));
	CHECK_MEM(got, "\0z", 2);
	hw_close(d);
	unlink(path);
}

TEST(file_size_option_creates_a_missing_file)
{
	static uint8_t got[4096];
	struct hw_dev *d;
	struct tmp t;

	CHECK(tmp_init(&t));
	snprintf(t.spec, sizeof(t.spec), "file:%s,size=1m", t.path);
	OPEN(t.spec, d);
	CHECK_EQ(file_bytes(t.path), (long long)MiB);
	CHECK_EQ(hw_size(d), MiB);
	memset(got, 0xff, sizeof(got));
	CHECK_OK(hw_read(d, MiB - sizeof(got), got, sizeof(got)));
	CHECK(all_bytes(got, sizeof(got), 0));
	hw_close(d);
	tmp_done(&t);
}

TEST(file_size_option_grows_but_never_shrinks)
{
	static uint8_t got[100];
	struct hw_dev *d;
	struct tmp t;
	int fd;

	CHECK(tmp_init(&t));
	fd = open(t.path, O_RDWR | O_CREAT, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, "keep me", 7, 8000), 7);   /* an 8007-byte file */
	close(fd);

	snprintf(t.spec, sizeof(t.spec), "file:%s,size=64k", t.path);
	OPEN(t.spec, d);
	CHECK_EQ(file_bytes(t.path), 64 * 1024);
	CHECK_OK(hw_read(d, 7999, got, 9));
	CHECK_MEM(got, "\0keep me\0", 9);
	hw_close(d);

	snprintf(t.spec, sizeof(t.spec), "file:%s,size=4k", t.path);
	OPEN(t.spec, d);
	CHECK_EQ(hw_size(d), 4096);
	CHECK_EQ(file_bytes(t.path), 64 * 1024);
	CHECK_EQ(hw_read(d, 8000, got, 1), -EINVAL);
	hw_close(d);

	snprintf(t.spec, sizeof(t.spec), "file:%s", t.path);
	OPEN(t.spec, d);
	CHECK_OK(hw_read(d, 8000, got, 7));
	CHECK_MEM(got, "keep me", 7);
	hw_close(d);
	tmp_done(&t);
}

/* A file limit below size= makes the grow fail after the create. */
TEST(file_that_cannot_grow_is_not_left_behind)
{
	struct rlimit old, small;
	struct hw_dev *d;
	char err[256] = "";
	void (*old_sig)(int);
	struct tmp t;
	int rc;

	CHECK(tmp_init(&t));
	CHECK_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
	small = old;
	small.rlim_cur = 32 * 1024;
	old_sig = signal(SIGXFSZ, SIG_IGN);
	CHECK_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
	snprintf(t.spec, sizeof(t.spec), "file:%s,size=64k", t.path);
	rc = hw_open(t.spec, &d, err, sizeof(err));
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, old_sig);

	CHECK_EQ(rc, -EFBIG);
	CHECK(d == NULL);
	CHECK_MSG(strstr(err, t.path) && strstr(err, strerror(EFBIG)),
		  "message: %s", err);
	CHECK_EQ(access(t.path, F_OK), -1);
	tmp_done(&t);
}

TEST(file_without_size_takes_file_size_rounded_down)
{
	struct hw_dev *d;
	struct tmp t;
	int fd;

	CHECK(tmp_init(&t));
	fd = open(t.path, O_RDWR | O_CREAT, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, 10000), 0);
	close(fd);
	snprintf(t.spec, sizeof(t.spec), "file:%s", t.path);
	OPEN(t.spec, d);
	CHECK_EQ(hw_size(d), 8192);
	hw_close(d);
	CHECK_EQ(file_bytes(t.path), 10000);
	tmp_done(&t);
}

TEST(file_without_size_on_missing_path_fails_clearly)
{
	struct hw_dev *d;
	char err[256] = "";
	struct tmp t;

	CHECK(tmp_init(&t));
	snprintf(t.spec, sizeof(t.spec), "file:%s", t.path);
	CHECK_EQ(hw_open(t.spec, &d, err, sizeof(err)), -ENOENT);
	CHECK(d == NULL);
	CHECK_MSG(strstr(err, t.path) && strstr(err, strerror(ENOENT)),
		  "message: %s", err);
	CHECK_EQ(access(t.path, F_OK), -1);
	tmp_done(&t);
}

TEST(file_smaller_than_one_block_without_size_fails)
{
	struct hw_dev *d;
	char err[256] = "";
	struct tmp t;
	int fd;

	CHECK(tmp_init(&t));
	fd = open(t.path, O_RDWR | O_CREAT, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "tiny", 4), 4);
	close(fd);
	snprintf(t.spec, sizeof(t.spec), "file:%s", t.path);
	CHECK_EQ(hw_open(t.spec, &d, err, sizeof(err)), -EINVAL);
	CHECK_MSG(strstr(err, t.path), "message: %s", err);
	CHECK_EQ(file_bytes(t.path), 4);
	tmp_done(&t);
}

TEST(file_on_a_directory_fails_naming_it)
{
	struct hw_dev *d;
	char err[256] = "", spec[128];
	struct tmp t;

	CHECK(tmp_init(&t));
	snprintf(spec, sizeof(spec), "file:%s", t.dir);
	CHECK(hw_open(spec, &d, err, sizeof(err)) < 0);
	CHECK(d == NULL);
	CHECK_MSG(strstr(err, t.dir), "message: %s", err);
	tmp_done(&t);
}

/*
 * Zero-out and discard through whichever fallocate modes the filesystem
 * has: ext4 and xfs zero ranges, tmpfs only punches holes.
 */
static void check_file_zero_out_discard_and_fua(const char *base)
{
	enum { SIZE = 256 * 1024 };
	static uint8_t ref[SIZE], got[SIZE];
	struct hw_dev *d;
	struct tmp t;
	int fd;

	CHECK(tmp_init_in(&t, base));
	for (size_t i = 0; i < SIZE; i++)
		ref[i] = (uint8_t)(i % 251 + 1);
	snprintf(t.spec, sizeof(t.spec), "file:%s,size=256k", t.path);
	OPEN(t.spec, d);
	CHECK_OK(hw_write(d, 0, ref, SIZE, HW_FUA));

	CHECK_OK(hw_zero_out(d, 1000, 20000, 0));
	memset(ref + 1000, 0, 20000);
	CHECK_OK(hw_zero_out(d, 70001, 3, HW_FUA));
	memset(ref + 70001, 0, 3);
	CHECK_OK(hw_zero_out(d, 200000, 12288, HW_META));
	memset(ref + 200000, 0, 12288);
	CHECK_OK(hw_discard(d, 128 * 1024, 64 * 1024));
	memset(ref + 128 * 1024, 0, 64 * 1024);
	CHECK_OK(hw_flush(d));

	CHECK_OK(hw_read(d, 0, got, SIZE));
	CHECK_MEM(got, ref, SIZE);
	CHECK_EQ(d->ctr.fua_writes, 1);
	CHECK_EQ(d->ctr.zeroouts, 3);
	CHECK_EQ(d->ctr.discards, 1);
	hw_close(d);

	/* And the file itself agrees, read past the device layer. */
	fd = open(t.path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, got, SIZE, 0), SIZE);
	close(fd);
	CHECK_MEM(got, ref, SIZE);
	CHECK_EQ(file_bytes(t.path), SIZE);
	tmp_done(&t);
}

TEST(file_zero_out_discard_and_fua_match_reference)
{
	check_file_zero_out_discard_and_fua("/tmp");
}

TEST(file_zero_out_on_tmpfs_falls_back_to_punching_holes)
{
	/* /dev/shm is tmpfs wherever there is one; elsewhere, nothing to do. */
	if (access("/dev/shm", W_OK) == 0)
		check_file_zero_out_discard_and_fua("/dev/shm");
}

int main(int argc, char **argv) { return test_main(argc, argv); }
