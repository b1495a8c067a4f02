/*
 * test_hw_util.h - what the device tests (test_hw_*.c) share: opening a
 * spec or expecting it to fail with a given line, scratch directories,
 * and patterned bytes that never read back right by accident.
 */
#ifndef FSORACLE_TEST_HW_UTIL_H
#define FSORACLE_TEST_HW_UTIL_H

#include "hw/hw.h"
#include "tests/test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KiB (1024ULL)
#define MiB (1024ULL * KiB)

/* Open spec into d or fail the test with hw_open's own message. */
#define OPEN(spec, d)                                                     \
	do {                                                              \
		char e_[512];                                             \
		int r_ = hw_open((spec), &(d), e_, sizeof(e_));           \
		CHECK_MSG(r_ == 0, "hw_open(\"%s\") = %d: %s", (spec),    \
			  r_, e_);                                        \
	} while (0)

/* hw_open(spec) must fail with rc and a line containing what. */
#define OPEN_FAILS(spec, rc, what)                                        \
	do {                                                              \
		char e_[512] = "";                                        \
		struct hw_dev *d_ = (struct hw_dev *)1;                   \
		int r_ = hw_open((spec), &d_, e_, sizeof(e_));            \
		CHECK_MSG(r_ == (rc) && d_ == NULL && strstr(e_, (what)), \
			  "hw_open(\"%s\") = %d, want %d with \"%s\": %s", \
			  (spec), r_, (rc), (what), e_);                  \
		CHECK_MSG(strchr(e_, '\n') == NULL, "two lines: %s", e_); \
	} while (0)

/* A scratch directory with an image path in it, under $FSO_HW_TMPDIR
 * if set (hw/lab points it at a DAX mount), else /tmp. */
struct hw_tmp {
	char dir[64];
	char path[96];
};

static inline bool hw_tmp_init(struct hw_tmp *t)
{
	const char *base = getenv("FSO_HW_TMPDIR");
	int n = snprintf(t->dir, sizeof(t->dir), "%s/fsoracle-hwx-XXXXXX",
			 base && *base ? base : "/tmp");

	if (n < 0 || (size_t)n >= sizeof(t->dir) || !mkdtemp(t->dir))
		return false;
	snprintf(t->path, sizeof(t->path), "%s/img", t->dir);
	return true;
}

/* Remove the image, its zone state, and the directory. */
static inline void hw_tmp_done(struct hw_tmp *t)
{
	char z[128];

	snprintf(z, sizeof(z), "%s.zones", t->path);
	unlink(z);
	unlink(t->path);
	rmdir(t->dir);
}

/* Byte i of pattern `tag`: never 0, differs between tags. */
static inline uint8_t pat(unsigned tag, uint64_t i)
{
	return (uint8_t)(((i * 131 + tag * 17) % 251) + 1);
}

static inline void fill_pat(uint8_t *p, size_t len, unsigned tag)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat(tag, i);
}

/* Zone i as reported, or a zone with condition 0xff if that fails. */
static inline struct hw_zone zone_at(struct hw_dev *d, uint64_t i)
{
	struct hw_zone z = { .cond = 0xff };
	unsigned nr = 1;

	if (hw_report_zones(d, i, &z, &nr) || nr != 1)
		z.cond = 0xff;
	return z;
}

static inline long long file_size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long long)st.st_size;
}

static inline bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

#endif
