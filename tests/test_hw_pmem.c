/*
 * test_hw_pmem.c - the pmem: backend on a /tmp file (or one under
 * $FSO_HW_TMPDIR) through libpmem2, and its persist path through the
 * crash layer: a store not covered by a persist is lost at a cut, a
 * persisted one survives, and a cut tears stores in 8-byte words.  Plus
 * hw_persist()'s fallback to flush on devices without persistence of
 * their own.
 */
#include "hw/hw.h"
#include "tests/test.h"
#include "tests/test_hw_util.h"

#include <fcntl.h>

TEST(persist_on_a_block_device_is_a_counted_flush)
{
	struct hw_dev *d;

	OPEN("mem:64k", d);
	CHECK_OK(hw_persist(d, 4096, 100));
	CHECK_EQ(d->ctr.persists, 1);
	CHECK_EQ(d->ctr.bytes_persisted, 100);
	CHECK_EQ(d->ctr.flushes, 1);
	CHECK_OK(hw_persist(d, 0, 0));                  /* nothing: no count */
	CHECK_EQ(hw_persist(d, 60 * KiB, 8 * KiB), -EINVAL);
	CHECK_EQ(hw_persist(d, UINT64_MAX, 2), -EINVAL);
	CHECK_EQ(hw_persist(NULL, 0, 1), -EINVAL);
	CHECK_EQ(d->ctr.persists, 1);
	hw_close(d);

	/* Under a crash layer the flush makes everything durable. */
	OPEN("crash:mem:64k", d);
	CHECK_OK(hw_write(d, 0, "abc", 3, 0));
	CHECK_OK(hw_write(d, 8192, "def", 3, 0));
	CHECK_EQ(hw_crash_pending(d), 2);
	CHECK_OK(hw_persist(d, 0, 3));
	CHECK_EQ(hw_crash_pending(d), 0);
	hw_close(d);
}

#ifdef FSO_NO_EXTERNAL_LIBS

TEST(pmem_fails_clearly_in_a_build_without_libpmem2)
{
	OPEN_FAILS("pmem:/tmp/fsoracle-nowhere,size=64k", -EOPNOTSUPP,
		   "built without libpmem2 (MSan build)");
}

#else

static uint8_t wbuf[64 * 1024], rbuf[64 * 1024];

/* "pmem:DIR/img,size=64k" (or crash: over it) in a scratch directory. */
static void pmem_spec(char *spec, size_t len, const struct hw_tmp *t,
		      const char *layer, const char *size)
{
	snprintf(spec, len, "%spmem:%s%s%s", layer, t->path,
		 size ? ",size=" : "", size ? size : "");
}

TEST(pmem_is_byte_addressable_with_8_byte_atomic_stores)
{
	char spec[160], desc[256];
	struct hw_dev *d;
	struct hw_tmp t;

	CHECK(hw_tmp_init(&t));
	pmem_spec(spec, sizeof(spec), &t, "", "64k");
	OPEN(spec, d);
	CHECK_EQ(hw_size(d), 64 * KiB);
	CHECK_EQ(hw_caps(d), HW_CAP_BYTE_ADDR | HW_CAP_STORES_DATA |
			     HW_CAP_PERSISTENT | HW_CAP_VOLATILE);
	CHECK_EQ(d->geo.atomic_write, 8);
	CHECK_OK(hw_describe(d, desc, sizeof(desc)));
	CHECK_MSG(strstr(desc, "pmem (libpmem2): 65536 bytes, store granularity ") &&
		  (strstr(desc, "granularity page (an ordinary file") ||
		   strstr(desc, "granularity cache line (real") ||
		   strstr(desc, "granularity byte (real")), "%s", desc);
	/* FSO_PMEM_DAX=1 (hw/lab, scratch files on ext4 -o dax over
	 * /dev/pmem0): the kernel must have given real persistent memory. */
	if (getenv("FSO_PMEM_DAX"))
		CHECK_MSG(!strstr(desc, "granularity page"),
			  "on DAX, yet: %s", desc);
	CHECK_EQ(file_size_of(t.path), 64 * KiB);
	hw_close(d);
	hw_tmp_done(&t);
}

TEST(pmem_stores_reach_the_file_and_come_back_after_reopen)
{
	char spec[160];
	struct hw_dev *d;
	struct hw_tmp t;
	int fd;

	CHECK(hw_tmp_init(&t));
	pmem_spec(spec, sizeof(spec), &t, "", "64k");
	OPEN(spec, d);
	fill_pat(wbuf, 10000, 1);
	CHECK_OK(hw_write(d, 12345, wbuf, 10000, 0));
	CHECK_OK(hw_persist(d, 12345, 10000));
	CHECK_OK(hw_write(d, 65530, "abcdef", 6, HW_FUA));
	CHECK_OK(hw_zero_out(d, 12345 + 100, 50, 0));
	CHECK_OK(hw_flush(d));
	CHECK_EQ(d->ctr.persists, 1);
	CHECK_EQ(d->ctr.bytes_persisted, 10000);
	CHECK_EQ(d->ctr.flushes, 1);
	CHECK_EQ(d->ctr.fua_writes, 1);
	hw_close(d);

	memset(wbuf + 100, 0, 50);
	fd = open(t.path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, rbuf, 10000, 12345), 10000);
	close(fd);
	CHECK_MEM(rbuf, wbuf, 10000);

	pmem_spec(spec, sizeof(spec), &t, "", NULL);
	OPEN(spec, d);
	CHECK_EQ(hw_size(d), 64 * KiB);
	CHECK_OK(hw_read(d, 12345, rbuf, 10000));
	CHECK_MEM(rbuf, wbuf, 10000);
	CHECK_OK(hw_read(d, 65530, rbuf, 6));
	CHECK_MEM(rbuf, "abcdef", 6);
	hw_close(d);
	hw_tmp_done(&t);
}

TEST(pmem_store_not_persisted_is_lost_at_a_cut_persisted_one_survives)
{
	char spec[160];
	struct hw_dev *d;
	struct hw_tmp t;

	CHECK(hw_tmp_init(&t));
	pmem_spec(spec, sizeof(spec), &t, "crash:", "64k");
	OPEN(spec, d);
	CHECK_EQ(d->geo.atomic_write, 8);
	fill_pat(wbuf, 4096, 2);
	CHECK_OK(hw_write(d, 0, wbuf, 64, 0));          /* A: persisted  */
	CHECK_OK(hw_persist(d, 0, 64));
	CHECK_OK(hw_write(d, 4096, wbuf + 64, 64, 0));  /* B: not        */
	CHECK_OK(hw_write(d, 8192, wbuf + 128, 64, HW_FUA)); /* C: FUA   */
	CHECK_EQ(hw_crash_pending(d), 1);
	/* Visible before the cut... */
	CHECK_OK(hw_read(d, 4096, rbuf, 64));
	CHECK_MEM(rbuf, wbuf + 64, 64);
	CHECK_OK(hw_crash_cut(d, NULL));
	/* ...gone after it. */
	CHECK_OK(hw_read(d, 4096, rbuf, 64));
	CHECK(all_zero(rbuf, 64));
	CHECK_OK(hw_read(d, 0, rbuf, 64));
	CHECK_MEM(rbuf, wbuf, 64);
	CHECK_OK(hw_read(d, 8192, rbuf, 64));
	CHECK_MEM(rbuf, wbuf + 128, 64);
	hw_close(d);

	/* The crash image is what the file holds now. */
	pmem_spec(spec, sizeof(spec), &t, "", NULL);
	OPEN(spec, d);
	CHECK_OK(hw_read(d, 0, rbuf, 64));
	CHECK_MEM(rbuf, wbuf, 64);
	CHECK_OK(hw_read(d, 4096, rbuf, 64));
	CHECK(all_zero(rbuf, 64));
	hw_close(d);
	hw_tmp_done(&t);
}

/*
 *   store      [0 ........................ 256)
 *   persist          [64 ..... 128)
 *   after cut  old   new       old
 */
TEST(pmem_persist_of_part_of_a_store_keeps_only_that_part)
{
	char spec[160];
	struct hw_dev *d;
	struct hw_tmp t;

	CHECK(hw_tmp_init(&t));
	pmem_spec(spec, sizeof(spec), &t, "crash:", "64k");
	OPEN(spec, d);
	fill_pat(wbuf, 256, 3);
	CHECK_OK(hw_write(d, 0, wbuf, 256, 0));
	CHECK_OK(hw_persist(d, 64, 64));
	CHECK_EQ(hw_crash_pending(d), 2);               /* before and after */
	CHECK_OK(hw_crash_cut(d, NULL));
	CHECK_OK(hw_read(d, 0, rbuf, 256));
	CHECK(all_zero(rbuf, 64));
	CHECK_MEM(rbuf + 64, wbuf + 64, 64);
	CHECK(all_zero(rbuf + 128, 128));
	hw_close(d);
	hw_tmp_done(&t);
}

/*
 * Many persists in a row, each building the layer's record array anew
 * (in the array the persist before last left, grown when it is short):
 * rounds of 40 stores, a third persisted whole, a third in their middle
 * words, a third not at all, then a cut keeps exactly the persisted
 * bytes of every round.
 */
TEST(pmem_persists_in_a_row_keep_exactly_what_each_made_durable)
{
	enum { ROUNDS = 6, STORES = 40, LEN = 16, STRIDE = 128 };
	char spec[160];
	struct hw_dev *d;
	struct hw_tmp t;

	CHECK(hw_tmp_init(&t));
	pmem_spec(spec, sizeof(spec), &t, "crash:", "64k");
	OPEN(spec, d);
	fill_pat(wbuf, ROUNDS * STORES * LEN, 6);
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < STORES; k++) {
			uint64_t off = (uint64_t)k * STRIDE + (uint64_t)r * LEN;

			CHECK_OK(hw_write(d, off, wbuf + (r * STORES + k) * LEN,
					  LEN, 0));
		}
		for (int k = 0; k < STORES; k++) {
			uint64_t off = (uint64_t)k * STRIDE + (uint64_t)r * LEN;

			if (k % 3 == 0)
				CHECK_OK(hw_persist(d, off, LEN));
			else if (k % 3 == 1)
				CHECK_OK(hw_persist(d, off + 4, 8));
		}
	}
	CHECK_OK(hw_crash_cut(d, NULL));
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < STORES; k++) {
			const uint8_t *w = wbuf + (r * STORES + k) * LEN;

			CHECK_OK(hw_read(d, (uint64_t)k * STRIDE +
					 (uint64_t)r * LEN, rbuf, LEN));
			if (k % 3 == 0) {
				CHECK_MEM(rbuf, w, LEN);
			} else if (k % 3 == 1) {
				CHECK(all_zero(rbuf, 4));
				CHECK_MEM(rbuf + 4, w + 4, 8);
				CHECK(all_zero(rbuf + 12, 4));
			} else {
				CHECK(all_zero(rbuf, LEN));
			}
		}
	}
	hw_close(d);
	hw_tmp_done(&t);
}

/* A store of 64 bytes at offset 4 spans words [0,8) .. [64,72). */
TEST(pmem_cut_tears_stores_in_whole_8_byte_words)
{
	struct hw_cut cut = { .tear = HW_TEAR_UNITS, .units = 3 };
	char spec[160];
	int mixed = 0;
	struct hw_dev *d;
	struct hw_tmp t;

	CHECK(hw_tmp_init(&t));
	pmem_spec(spec, sizeof(spec), &t, "crash:", "64k");
	OPEN(spec, d);
	fill_pat(wbuf, 64, 4);
	CHECK_OK(hw_write(d, 4, wbuf, 64, 0));
	CHECK_OK(hw_crash_cut(d, &cut));
	/* Units kept: [4,8) [8,16) [16,24); the rest is old. */
	CHECK_OK(hw_read(d, 0, rbuf, 80));
	CHECK(all_zero(rbuf, 4));
	CHECK_MEM(rbuf + 4, wbuf, 20);
	CHECK(all_zero(rbuf + 24, 56));

	/* Seeded tears: every aligned word is all old or all new. */
	cut.tear = HW_TEAR_SEED;
	for (uint64_t seed = 1; seed <= 32; seed++) {
		int kept = 0;

		CHECK_OK(hw_zero_out(d, 0, 4096, HW_FUA));
		CHECK_OK(hw_write(d, 4, wbuf, 64, 0));
		cut.seed = seed;
		CHECK_OK(hw_crash_cut(d, &cut));
		CHECK_OK(hw_read(d, 0, rbuf, 80));
		for (int w = 0; w < 9; w++) {
			int lo = w == 0 ? 4 : 0, hi = w == 8 ? 4 : 8, news = 0;

			for (int b = lo; b < hi; b++)
				news += rbuf[w * 8 + b] == wbuf[w * 8 + b - 4];
			CHECK_MSG(news == 0 || news == hi - lo,
				  "seed %d word %d torn inside", (int)seed, w);
			kept += news != 0;
		}
		mixed += kept > 0 && kept < 9;
	}
	CHECK(mixed > 16);
	hw_close(d);
	hw_tmp_done(&t);
}

TEST(pmem_spec_errors_say_what_is_wrong)
{
	char spec[160];
	struct hw_tmp t;
	FILE *f;

	OPEN_FAILS("pmem:", -EINVAL, "missing path in 'pmem:'");
	OPEN_FAILS("pmem:/nonexistent/dir/p", -ENOENT, "add ,size=SIZE to create it");
	OPEN_FAILS("pmem:/nonexistent/dir/p,size=64k", -ENOENT,
		   "cannot open '/nonexistent/dir/p'");
	OPEN_FAILS("pmem:/tmp/p,size=1000", -EINVAL, "not a multiple of 4096");
	OPEN_FAILS("pmem:/tmp/p,sz=1m", -EINVAL, "unknown option 'sz'");
	CHECK(hw_tmp_init(&t));
	f = fopen(t.path, "w");
	CHECK(f != NULL);
	fputs("tiny", f);
	fclose(f);
	pmem_spec(spec, sizeof(spec), &t, "", NULL);
	OPEN_FAILS(spec, -EINVAL, "less than one 4096-byte block");
	CHECK_EQ(file_size_of(t.path), 4);
	hw_tmp_done(&t);
	/* A failed open with size= leaves no file behind. */
	CHECK(hw_tmp_init(&t));
	snprintf(spec, sizeof(spec), "pmem:%s/sub/p,size=64k", t.dir);
	OPEN_FAILS(spec, -ENOENT, "cannot open");
	hw_tmp_done(&t);
}

#endif /* FSO_NO_EXTERNAL_LIBS */

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
