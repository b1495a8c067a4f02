/*
 * test_refcount.c - the refcount tree against a plain array of owner
 * counts, one per block.
 *
 * The expectation never looks at records: after every adjustment the
 * tree must give each block the array's count (refcount_get), hand
 * exactly the blocks that reached zero to the free callback, and pass
 * refcount_check (canonical: no mergeable neighbours).  Canonical form
 * also means the records are a pure function of the counts, which the
 * test checks by rebuilding the records from the array.
 */
#include "base/bytes.h"
#include "ref/refcount.h"
#include "test.h"
#include "bt_mstore.h"

#define NBLK   256      /* blocks whose counts the tests move */
#define OWNER  5

struct fx {
	struct mstore ms;
	struct bt_store store;
	struct bt_root root;
	struct bt_stats st;
	struct bt_tree t;
	uint32_t owners[NBLK];   /* the expectation; 0 = free */
	uint8_t freed[NBLK];     /* blocks the callback handed back */
	uint64_t free_calls, last_free_end;
	int order_bug;
};

static void fx_init(struct fx *f, uint32_t maxrecs)
{
	memset(f, 0, sizeof(*f));
	ms_init(&f->ms, 512, 4096);
	f->store = (struct bt_store){ ms_get, ms_put, ms_alloc, ms_free,
				      &f->ms };
	f->t = (struct bt_tree){
		.type = &refcount_bt_type, .store = &f->store,
		.root = &f->root, .blocksize = 512, .maxrecs = maxrecs,
		.owner = OWNER, .stats = &f->st,
	};
}

static int on_free(void *arg, uint64_t start, uint64_t len)
{
	struct fx *f = arg;

	if (f->free_calls && start <= f->last_free_end)
		f->order_bug = 1;   /* not ascending, or not coalesced */
	f->free_calls++;
	f->last_free_end = start + len;
	for (uint64_t b = start; b < start + len && b < NBLK; b++)
		f->freed[b]++;
	return 0;
}

/* Adjust both the tree and the array; the range must be allocated. */
static int adjust(struct fx *f, uint64_t start, uint64_t len, int delta)
{
	memset(f->freed, 0, sizeof(f->freed));
	f->free_calls = 0;
	for (uint64_t b = start; b < start + len; b++)
		f->owners[b] += (uint32_t)delta;
	return refcount_adjust(&f->t, start, len, delta, on_free, f);
}

/* Every block's count, the audit and the store agree with the array. */
static int agree(struct fx *f)
{
	char why[200];
	uint32_t c;

	if (refcount_check(&f->t, NBLK, NULL, NULL, why, sizeof(why))) {
		test_fail(__FILE__, __LINE__, "check: %s", why);
		return 0;
	}
	for (uint64_t b = 0; b < NBLK; b++) {
		uint32_t want = f->owners[b] ? f->owners[b] : 1;

		if (refcount_get(&f->t, b, &c) || c != want) {
			test_fail(__FILE__, __LINE__, "block %llu: %u owners, "
				  "want %u", (unsigned long long)b, c, want);
			return 0;
		}
	}
	if (f->ms.bugs || f->ms.nheld || f->order_bug) {
		test_fail(__FILE__, __LINE__, "store: %s (held %llu) order %d",
			  f->ms.bug, (unsigned long long)f->ms.nheld,
			  f->order_bug);
		return 0;
	}
	return 1;
}

/* The last adjustment freed exactly the blocks of [first, first+n). */
static int freed_exactly(const struct fx *f, uint64_t first, uint64_t n)
{
	for (uint64_t b = 0; b < NBLK; b++) {
		int want = b >= first && b < first + n;

		if (f->freed[b] != want) {
			test_fail(__FILE__, __LINE__, "block %llu freed %u "
				  "times, want %d", (unsigned long long)b,
				  f->freed[b], want);
			return 0;
		}
	}
	return 1;
}

/* Count the records the tree holds. */
static int count_one(void *arg, const struct refc_rec *r)
{
	(void)r;
	(*(uint64_t *)arg)++;
	return 0;
}

static uint64_t nrecs(struct fx *f)
{
	uint64_t n = 0;
	char why[200];

	if (refcount_check(&f->t, NBLK, count_one, &n, why, sizeof(why)))
		return UINT64_MAX;
	return n;
}

/* Records a canonical tree must have: runs of equal counts >= 2. */
static uint64_t canonical_recs(const struct fx *f)
{
	uint64_t n = 0;

	for (uint64_t b = 0; b < NBLK; b++)
		if (f->owners[b] >= 2 &&
		    (b == 0 || f->owners[b - 1] != f->owners[b]))
			n++;
	return n;
}

TEST(share_then_unshare_leaves_nothing)
{
	struct fx f;

	fx_init(&f, 4);
	for (int b = 10; b < 30; b++)
		f.owners[b] = 1;
	CHECK_OK(adjust(&f, 10, 20, +1));
	CHECK(agree(&f) && freed_exactly(&f, 0, 0));
	CHECK_EQ(nrecs(&f), 1);
	CHECK_OK(adjust(&f, 10, 20, -1));
	CHECK(agree(&f) && freed_exactly(&f, 0, 0));
	CHECK_EQ(nrecs(&f), 0);
	CHECK_EQ(f.root.levels, 0);
	CHECK_OK(adjust(&f, 10, 20, -1));   /* last owner: freed */
	CHECK(agree(&f) && freed_exactly(&f, 10, 20));
	CHECK_EQ(f.free_calls, 1);
	ms_fini(&f.ms);
}

TEST(overlapping_shares_split_and_merge_back)
{
	struct fx f;

	fx_init(&f, 4);
	for (int b = 0; b < 64; b++)
		f.owners[b] = 1;
	CHECK_OK(adjust(&f, 4, 8, +1));     /* [4,12) x2        */
	CHECK_OK(adjust(&f, 8, 8, +1));     /* [8,12) x3 [12,16) x2 */
	CHECK(agree(&f) && freed_exactly(&f, 0, 0));
	CHECK_EQ(nrecs(&f), 3);
	CHECK_OK(adjust(&f, 8, 4, -1));     /* back to [4,16) x2 */
	CHECK(agree(&f) && freed_exactly(&f, 0, 0));
	CHECK_EQ(nrecs(&f), 1);             /* merged */
	CHECK_OK(adjust(&f, 16, 4, +1));    /* touching: merges */
	CHECK(agree(&f) && freed_exactly(&f, 0, 0));
	CHECK_EQ(nrecs(&f), 1);
	ms_fini(&f.ms);
}

TEST(free_callback_gets_coalesced_ascending_ranges)
{
	struct fx f;

	fx_init(&f, 4);
	for (int b = 0; b < 40; b++)
		f.owners[b] = 1;
	CHECK_OK(adjust(&f, 10, 2, +1));
	CHECK_OK(adjust(&f, 20, 2, +1));
	/* [0,40) -1: [0,10) [12,20) [22,40) freed, shared ones stay */
	memset(f.freed, 0, sizeof(f.freed));
	f.free_calls = 0;
	for (int b = 0; b < 40; b++)
		f.owners[b]--;
	CHECK_OK(refcount_adjust(&f.t, 0, 40, -1, on_free, &f));
	CHECK_EQ(f.free_calls, 3);
	CHECK(!f.order_bug);
	CHECK_EQ(f.freed[9], 1);
	CHECK_EQ(f.freed[10], 0);
	CHECK_EQ(f.freed[12], 1);
	CHECK_EQ(f.freed[21], 0);
	CHECK_EQ(f.freed[39], 1);
	CHECK_EQ(nrecs(&f), 0);
	ms_fini(&f.ms);
}

TEST(find_shared_clips_to_the_range)
{
	struct fx f;
	uint64_t s, l;

	fx_init(&f, 4);
	for (int b = 0; b < 64; b++)
		f.owners[b] = 1;
	CHECK_OK(adjust(&f, 20, 10, +1));
	CHECK_EQ(refcount_find_shared(&f.t, 0, 20, &s, &l), -ENOENT);
	CHECK_OK(refcount_find_shared(&f.t, 0, 25, &s, &l));
	CHECK_EQ(s, 20);
	CHECK_EQ(l, 5);
	CHECK_OK(refcount_find_shared(&f.t, 25, 100, &s, &l));
	CHECK_EQ(s, 25);
	CHECK_EQ(l, 5);
	CHECK_EQ(refcount_find_shared(&f.t, 30, 10, &s, &l), -ENOENT);
	ms_fini(&f.ms);
}

TEST(bad_arguments_change_nothing)
{
	struct fx f;

	fx_init(&f, 4);
	CHECK_EQ(refcount_adjust(&f.t, 0, 0, +1, NULL, NULL), -EINVAL);
	CHECK_EQ(refcount_adjust(&f.t, 0, 4, 2, NULL, NULL), -EINVAL);
	CHECK_EQ(refcount_adjust(&f.t, UINT64_MAX - 1, 4, 1, NULL, NULL),
		 -EINVAL);
	CHECK_EQ(f.root.levels, 0);
	ms_fini(&f.ms);
}

/* Random adjustments over allocated blocks, checked after each. */
TEST(random_adjustments_stay_canonical)
{
	struct fx f;
	uint64_t x = 0x1234567;

	fx_init(&f, 4);
	for (int b = 0; b < NBLK; b++)
		f.owners[b] = 1;
	for (int i = 0; i < 3000 && !test_failed_current; i++) {
		uint64_t start, len;
		int delta, ok = 1;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		start = (x >> 33) % NBLK;
		len = 1 + (x >> 20) % 24;
		if (start + len > NBLK)
			len = NBLK - start;
		delta = (x >> 12) & 1 ? +1 : -1;
		for (uint64_t b = start; b < start + len; b++)
			ok &= f.owners[b] > 0 && f.owners[b] < 6;
		if (!ok)
			continue;
		CHECK_OK(adjust(&f, start, len, delta));
		for (uint64_t b = 0; b < NBLK; b++)
			CHECK_EQ(f.freed[b], b >= start && b < start + len &&
					     f.owners[b] == 0);
		CHECK(agree(&f));
		CHECK_EQ(nrecs(&f), canonical_recs(&f));
		/* freed blocks are allocated again, to one owner */
		for (uint64_t b = start; b < start + len; b++)
			if (f.owners[b] == 0)
				f.owners[b] = 1;
	}
	ms_fini(&f.ms);
}

/*
 * One adjustment across many records: its lists outgrow the few
 * elements refcount.c keeps in place and move to the heap mid-way (with
 * ASan, any element lost or read past in the move is caught).
 */
TEST(an_adjustment_across_many_records_keeps_them_all)
{
	struct fx f;
	enum { N = 60 };

	fx_init(&f, 4);
	for (int b = 0; b < 2 * N; b++)
		f.owners[b] = 1;
	/* every other block shared once: N records, N gaps */
	for (int b = 0; b < 2 * N; b += 2)
		CHECK_OK(adjust(&f, (uint64_t)b, 1, +1));
	CHECK_EQ(nrecs(&f), N);
	/* one more owner over all: N records of 3, N of 2, merged per
	 * owner count; then back */
	CHECK_OK(adjust(&f, 0, 2 * N, +1));
	CHECK(agree(&f));
	CHECK_EQ(nrecs(&f), canonical_recs(&f));
	CHECK_EQ(nrecs(&f), 2 * N);
	CHECK_OK(adjust(&f, 0, 2 * N, -1));
	CHECK(agree(&f));
	CHECK_EQ(nrecs(&f), N);
	ms_fini(&f.ms);
}

/* A record put in the tree as it is stored, bypassing refcount_adjust. */
static int put_rec(struct fx *f, uint64_t start, uint32_t len, uint32_t count)
{
	uint8_t raw[REFC_REC_SIZE];

	put64(raw, start);
	put32(raw + 8, len);
	put32(raw + 12, count);
	return bt_insert(&f->t, raw);
}

/* A record at the most owners refuses one more only inside the range:
 * the one ending where the range starts (gathered for a merge) is not
 * touched. */
TEST(a_full_count_next_to_the_range_does_not_refuse_a_share)
{
	struct fx f;
	char why[200];
	uint32_t c;

	fx_init(&f, 4);
	CHECK_OK(put_rec(&f, 0, 10, REFC_MAX_COUNT));
	CHECK_EQ(refcount_adjust(&f.t, 5, 10, +1, NULL, NULL), -ERANGE);
	CHECK_OK(refcount_adjust(&f.t, 10, 10, +1, NULL, NULL));
	CHECK_OK(refcount_get(&f.t, 9, &c));
	CHECK_EQ(c, REFC_MAX_COUNT);
	CHECK_OK(refcount_get(&f.t, 10, &c));
	CHECK_EQ(c, 2);
	CHECK_OK(refcount_check(&f.t, NBLK, NULL, NULL, why, sizeof(why)));
	ms_fini(&f.ms);
}

/* Adjacent records of one count are merged when the sum fits a record,
 * REFC_MAX_LEN included: the check says so; one block more and they
 * must stay two. */
TEST(check_wants_records_merged_up_to_the_longest_length)
{
	struct fx f;
	char why[200];

	fx_init(&f, 4);
	CHECK_OK(put_rec(&f, 0, 100, 2));
	CHECK_OK(put_rec(&f, 100, REFC_MAX_LEN - 100, 2));
	CHECK_EQ(refcount_check(&f.t, UINT64_MAX, NULL, NULL, why,
				sizeof(why)), -EUCLEAN);
	CHECK_MSG(strstr(why, "should have been merged"), "%s", why);
	ms_fini(&f.ms);
	fx_init(&f, 4);
	CHECK_OK(put_rec(&f, 0, 101, 2));
	CHECK_OK(put_rec(&f, 101, REFC_MAX_LEN - 100, 2));
	CHECK_OK(refcount_check(&f.t, UINT64_MAX, NULL, NULL, why,
				sizeof(why)));
	ms_fini(&f.ms);
}

/* A record reaching past the device's blocks is caught by the check. */
TEST(check_catches_a_record_past_the_limit)
{
	struct fx f;
	char why[200];

	fx_init(&f, 4);
	CHECK_OK(refcount_adjust(&f.t, 200, 10, +1, NULL, NULL));
	CHECK_OK(refcount_check(&f.t, 210, NULL, NULL, why, sizeof(why)));
	CHECK_EQ(refcount_check(&f.t, 209, NULL, NULL, why, sizeof(why)),
		 -EUCLEAN);
	CHECK_MSG(strstr(why, "inside 209 blocks"), "%s", why);
	ms_fini(&f.ms);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
