/*
 * test_devtrack.c - fuzz/devtrack.h, the fuzz rigs' way back to a fresh
 * device: a restore puts back what each written page started as (zeros,
 * or the bytes devtrack_keep kept), a zero-out reaches kept pages that
 * were not written since, and a release frees the device's memory but
 * writes the kept pages back.
 */
#include "fuzz/devtrack.h"
#include "hw/hw.h"
#include "tests/test.h"

#include <errno.h>
#include <string.h>

#define PG 4096u
#define DEV_PAGES 16u

static uint8_t buf[PG], got[PG];

/* A 64 KiB mem: device, tracked from zeros; 0 or -errno. */
static int open_tracked(struct hw_dev **d, struct devtrack **dt)
{
	char e[128];
	int ret = hw_open("mem:64k", d, e, sizeof(e));

	return ret ? ret : devtrack_attach(*d, NULL, dt);
}

static void close_tracked(struct hw_dev *d, struct devtrack *dt)
{
	devtrack_detach(dt);
	hw_close(d);
}

/* Page p of d holds len bytes of tag (tag 0: zeros) from off on and
 * zeros elsewhere. */
static int page_is(struct hw_dev *d, unsigned p, unsigned off, unsigned len,
		   unsigned tag)
{
	memset(buf, 0, sizeof(buf));
	for (unsigned i = 0; i < len; i++)
		buf[off + i] = (uint8_t)(tag * 37 + i);
	if (hw_read(d, (uint64_t)p * PG, got, PG))
		return 0;
	return memcmp(buf, got, PG) == 0;
}

static int write_tag(struct hw_dev *d, unsigned p, unsigned off,
		     unsigned len, unsigned tag)
{
	for (unsigned i = 0; i < len; i++)
		buf[i] = (uint8_t)(tag * 37 + i);
	return hw_write(d, (uint64_t)p * PG + off, buf, len, 0);
}

TEST(restore_puts_back_kept_pages_and_zeros_the_rest)
{
	struct hw_dev *d = NULL;
	struct devtrack *dt = NULL;

	CHECK_OK(open_tracked(&d, &dt));
	/* what "mkfs" writes: all of page 0, part of page 3 */
	CHECK_OK(write_tag(d, 0, 0, PG, 1));
	CHECK_OK(write_tag(d, 3, 100, 200, 2));
	CHECK_OK(devtrack_keep(dt));
	CHECK_EQ(devtrack_dirty_end(dt), 0);
	/* an input: over both kept pages, and a page never kept */
	CHECK_OK(write_tag(d, 0, 10, 50, 3));
	CHECK_OK(write_tag(d, 3, 0, PG, 4));
	CHECK_OK(write_tag(d, 9, 7, 9, 5));
	CHECK_EQ(devtrack_dirty_end(dt), 10 * PG);
	CHECK_OK(devtrack_restore(dt));
	CHECK(page_is(d, 0, 0, PG, 1));
	CHECK(page_is(d, 3, 100, 200, 2));
	CHECK(page_is(d, 9, 0, 0, 0));
	CHECK_EQ(devtrack_dirty_end(dt), 0);
	close_tracked(d, dt);
}

TEST(zero_out_reaches_kept_pages_and_restore_brings_them_back)
{
	struct hw_dev *d = NULL;
	struct devtrack *dt = NULL;

	CHECK_OK(open_tracked(&d, &dt));
	CHECK_OK(write_tag(d, 2, 0, PG, 6));
	CHECK_OK(devtrack_keep(dt));
	/* clean since the keep, but not zeros: the zero-out must happen */
	CHECK_OK(hw_zero_out(d, 2 * PG, 2 * PG, 0));
	CHECK(page_is(d, 2, 0, 0, 0));
	CHECK(page_is(d, 3, 0, 0, 0));
	CHECK_EQ(devtrack_dirty_end(dt), 3 * PG);
	CHECK_OK(devtrack_restore(dt));
	CHECK(page_is(d, 2, 0, PG, 6));
	close_tracked(d, dt);
}

TEST(release_frees_the_rest_and_writes_the_kept_pages_back)
{
	struct hw_dev *d = NULL;
	struct devtrack *dt = NULL;
	uint64_t before = devtrack_resident_bytes();

	CHECK_OK(open_tracked(&d, &dt));
	CHECK_OK(write_tag(d, 1, 0, PG, 7));
	CHECK_OK(devtrack_keep(dt));
	CHECK_OK(write_tag(d, 1, 0, 10, 8));
	for (unsigned p = 4; p < DEV_PAGES; p++)
		CHECK_OK(write_tag(d, p, 0, PG, 9));
	CHECK_EQ(devtrack_resident_bytes() - before, (DEV_PAGES - 3) * PG);
	CHECK_OK(devtrack_release(dt));
	/* the kept page alone stays in memory, and holds its bytes */
	CHECK_EQ(devtrack_resident_bytes() - before, PG);
	CHECK(page_is(d, 1, 0, PG, 7));
	for (unsigned p = 4; p < DEV_PAGES; p++)
		CHECK(page_is(d, p, 0, 0, 0));
	CHECK_EQ(devtrack_dirty_end(dt), 0);
	devtrack_detach(dt);
	CHECK_EQ(devtrack_resident_bytes(), before);
	hw_close(d);
}

TEST(a_device_with_a_baseline_keeps_nothing)
{
	static uint8_t base[64 * 1024];
	struct hw_dev *d = NULL;
	struct devtrack *dt = NULL;
	char e[128];

	CHECK_OK(hw_open("mem:64k", &d, e, sizeof(e)));
	CHECK_OK(hw_write(d, 0, base, sizeof(base), 0));
	CHECK_OK(devtrack_attach(d, base, &dt));
	CHECK_EQ(devtrack_keep(dt), -EINVAL);
	devtrack_detach(dt);
	hw_close(d);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
