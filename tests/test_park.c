/*
 * test_park.c - base/park.h: a freed block comes back for the next
 * allocation of its size and no other, the park keeps no more than its
 * bounds, a parked block is poisoned under ASan, threads may share it,
 * park_grow keeps an array's bytes in blocks of a few sizes, an engine's
 * unmount leaves its cache blocks for the next mount, and an audit takes
 * its arrays from the park and gives them all back.
 */
#include "test.h"

#include <pthread.h>

#include "base/park.h"
#include "base/poison.h"
#include "hw/hw.h"
#include "ref/ref.h"
#include "test_engine_util.h"

static struct park_stats now(void)
{
	struct park_stats st;

	park_stats(&st);
	return st;
}

TEST(a_freed_block_serves_the_next_allocation_of_its_size_only)
{
	void *a, *b, *c;
	uint8_t *c2;
	struct park_stats st;

	park_drain();
	a = park_alloc(100);
	b = park_alloc(200);
	CHECK(a != NULL && b != NULL);
	park_free(a, 100);
	park_free(b, 200);
	st = now();
	CHECK_EQ(st.blocks, 2);
	CHECK_EQ(st.bytes, 300);
	c = park_alloc(300); /* no shelf of 300: a new block */
	CHECK(c != a && c != b);
	CHECK(park_alloc(200) == b);
	CHECK(park_alloc(100) == a);
	CHECK_EQ(now().blocks, 0);
	CHECK_EQ(now().reused, st.reused + 2);
	memset(a, 0xaa, 100); /* handed out: usable again */
	memset(b, 0xbb, 200);
	c2 = park_zalloc(64);
	CHECK(c2 != NULL && c2[0] == 0 && c2[63] == 0);
	park_free(c2, 64);
	park_free(a, 100);
	park_free(b, 200);
	park_free(c, 300);
	park_free(NULL, 8);
	CHECK_EQ(now().blocks, 4);
	park_drain();
	CHECK_EQ(now().blocks, 0);
	CHECK_EQ(now().bytes, 0);
}

TEST(the_park_keeps_no_more_than_its_bounds)
{
	enum { MANY = PARK_PER_SIZE + 10 };
	static void *v[MANY];
	size_t big = PARK_BYTES / 8 + 1;

	park_drain();
	for (int i = 0; i < MANY; i++)
		CHECK((v[i] = park_alloc(48)) != NULL);
	for (int i = 0; i < MANY; i++)
		park_free(v[i], 48);
	CHECK_EQ(now().blocks, PARK_PER_SIZE); /* the rest were freed */
	park_drain();
	/* bytes: seven blocks of an eighth of the budget fit, the eighth not */
	for (int i = 0; i < 8; i++)
		CHECK((v[i] = park_alloc(big)) != NULL);
	for (int i = 0; i < 8; i++)
		park_free(v[i], big);
	CHECK_EQ(now().blocks, 7);
	CHECK(now().bytes <= PARK_BYTES);
	park_drain();
	/* sizes: one block each of PARK_SIZES + 1 sizes, one is not kept */
	for (int i = 0; i <= PARK_SIZES; i++)
		CHECK((v[i] = park_alloc(16 + 8 * (size_t)i)) != NULL);
	for (int i = 0; i <= PARK_SIZES; i++)
		park_free(v[i], 16 + 8 * (size_t)i);
	CHECK_EQ(now().blocks, PARK_SIZES);
	/* a shelf given up when it empties takes a new size */
	v[1] = park_alloc(16);
	CHECK(v[1] != NULL);
	free(v[1]);
	v[0] = park_alloc(1000);
	park_free(v[0], 1000);
	CHECK(park_alloc(1000) == v[0]);
	park_free(v[0], 1000);
	park_drain();
}

TEST(a_parked_block_is_poisoned_under_asan)
{
	uint8_t *p;

	park_drain();
	p = park_alloc(256);
	CHECK(p != NULL);
	p[0] = 1;
	park_free(p, 256);
#ifdef FSO_POISON_ASAN
	CHECK(__asan_address_is_poisoned(p));
	CHECK(__asan_address_is_poisoned(p + 255));
#endif
	CHECK(park_alloc(256) == p);
#ifdef FSO_POISON_ASAN
	CHECK(!__asan_address_is_poisoned(p));
	CHECK(!__asan_address_is_poisoned(p + 255));
#endif
	p[255] = 2;
	park_free(p, 256);
	park_drain();
}

TEST(park_grow_keeps_the_bytes_in_power_of_two_blocks)
{
	void *p = NULL, *first;
	size_t cap = 0;
	uint8_t *b;

	park_drain();
	CHECK_OK(park_grow(&p, &cap, 0, 10));
	CHECK(p != NULL);
	CHECK_EQ(cap, PARK_GROW_MIN);
	first = p;
	CHECK_OK(park_grow(&p, &cap, 0, PARK_GROW_MIN)); /* room already */
	CHECK(p == first);
	CHECK_EQ(cap, PARK_GROW_MIN);
	b = p;
	for (int i = 0; i < 100; i++)
		b[i] = (uint8_t)(i * 3 + 1);
	CHECK_OK(park_grow(&p, &cap, 100, 3 * PARK_GROW_MIN));
	CHECK_EQ(cap, 4 * PARK_GROW_MIN);
	b = p;
	for (int i = 0; i < 100; i++)
		CHECK_EQ(b[i], (uint8_t)(i * 3 + 1));
	CHECK_EQ(now().blocks, 1); /* the first block, parked */
	CHECK(park_alloc(PARK_GROW_MIN) == first);
	park_free(first, PARK_GROW_MIN);
	/* more than memory holds: refused, the array as it was */
	CHECK_EQ(park_grow(&p, &cap, 100, SIZE_MAX - 5), -ENOMEM);
	CHECK(p == b);
	CHECK_EQ(cap, 4 * PARK_GROW_MIN);
	park_free(p, cap);
	park_drain();
}

static void *churn(void *arg)
{
	size_t size = (size_t)(uintptr_t)arg;
	void *v[16];

	for (int round = 0; round < 5000; round++) {
		for (int i = 0; i < 16; i++) {
			v[i] = park_alloc(size);
			if (!v[i])
				return arg;
			memset(v[i], round & 0xff, size);
		}
		for (int i = 0; i < 16; i++)
			park_free(v[i], size);
	}
	return NULL;
}

TEST(threads_share_the_park)
{
	pthread_t th[4];
	void *ret;

	park_drain();
	park_threads(4);
	for (uintptr_t i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, churn,
					(void *)(64 + 32 * (i % 2))), 0);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(pthread_join(th[i], &ret), 0);
		CHECK(ret == NULL);
	}
	park_threads(-4);
	/* every block came back: of each size (64, 96 bytes) 16 to 32, as
	 * its two threads shared blocks or not */
	CHECK(now().blocks >= 32 && now().blocks <= 64);
	CHECK(now().bytes >= 16 * (64 + 96) && now().bytes <= 32 * (64 + 96));
	CHECK_EQ(now().bytes % 32, 0);
	park_drain();
}

/* A job for the workers below: a block of the park, used and back. */
static void use_the_park(void *arg, unsigned i, unsigned worker)
{
	uint8_t *p = park_alloc(256);

	(void)arg;
	(void)worker;
	if (p) {
		memset(p, (int)i, 256);
		park_free(p, 256);
	}
}

/* Workers count themselves while they run, so the park locks for them. */
TEST(workers_are_counted_while_they_run)
{
	struct hw_workers *w;

	CHECK_EQ(now().threads, 0);
	CHECK_OK(hw_workers_start(3, &w));
	CHECK_EQ(now().threads, 3);
	hw_workers_run(w, use_the_park, NULL, 64);
	hw_workers_stop(w);
	CHECK_EQ(now().threads, 0);
	park_drain();
}

/*
 * An unmount parks what its page cache and buffer cache held, and the
 * next mount's caches are made of those blocks: the file still reads
 * back whole, through caches built of reused memory.
 */
TEST(an_unmount_parks_the_cache_blocks_for_the_next_mount)
{
	enum { LEN = 256 * 1024 };
	static uint8_t buf[LEN], back[LEN];
	struct park_stats before, after;
	struct efs z;
	uint64_t ino;

	for (size_t i = 0; i < LEN; i++)
		buf[i] = (uint8_t)(i * 7 + i / 4096);
	CHECK_OK(e_new(&z, "mem:16m", NULL, 0));
	CHECK_OK(ref_create(z.fs, "f", &ino));
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, LEN, 0), LEN);
	CHECK_OK(ref_fsync(z.fs, ino));
	CHECK_EQ(ref_pread(z.fs, ino, back, LEN, 0), LEN); /* cached */
	park_drain();
	before = now();
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	after = now();
	CHECK(after.blocks > LEN / BS); /* at least the file's pages */
	CHECK_EQ(after.parked - before.parked, after.blocks);
	CHECK_OK(e_mount(&z));
	CHECK_EQ(ref_pread(z.fs, ino, back, LEN, 0), LEN);
	CHECK_MEM(back, buf, LEN);
	CHECK(now().reused - after.reused >= LEN / BS);
	CHECK_OK(audit(z.fs));
	e_close(&z);
	park_drain();
}

/*
 * The audit's lists (references, extent records, their order) and its
 * expected bitmap come from the park: a second audit reuses the blocks
 * the first gave back, and each audit leaves the park as it found it.
 */
TEST(an_audit_takes_its_arrays_from_the_park_and_gives_them_back)
{
	static uint8_t buf[64 * 1024];
	struct park_stats warm, again;
	struct efs z;
	uint64_t ino;

	memset(buf, 0x5a, sizeof(buf));
	CHECK_OK(e_new(&z, "mem:16m", NULL, 0));
	for (int f = 0; f < 8; f++) {
		char name[8];

		snprintf(name, sizeof(name), "f%d", f);
		CHECK_OK(ref_create(z.fs, name, &ino));
		/* every other block: many extents, many references */
		for (uint64_t off = 0; off < 64 * BS; off += 2 * BS)
			CHECK_EQ(ref_pwrite(z.fs, ino, buf, BS, off), BS);
	}
	CHECK_OK(ref_sync(z.fs));
	park_drain();
	CHECK_OK(audit(z.fs));
	warm = now();
	CHECK(warm.blocks >= 5); /* lists, records, order, runs, bitmap */
	CHECK_OK(audit(z.fs));
	again = now();
	CHECK_EQ(again.blocks, warm.blocks);
	CHECK_EQ(again.bytes, warm.bytes);
	CHECK(again.reused - warm.reused >= 5);
	e_close(&z);
	park_drain();
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
