/*
 * test_btree.c - the B+tree checked against a sorted array.
 *
 * The tree runs on an array-backed bt_store that is stricter than the
 * engine's: it hands out the lowest free block, poisons freed and freshly
 * allocated blocks, fails the k-th alloc or get on demand, and records
 * API misuse (double free, a get of a free block, a block held twice, a
 * handle never put).  The expectation for contents is always an
 * independent sorted array of records kept by the test itself; for shape
 * and counters it is arithmetic from the layout in btree.h.
 *
 * Geometry is tiny (maxrecs 4, 512-byte blocks) so a few hundred keys
 * give trees of five or more levels, except where a test says otherwise.
 */
#include "ref/btree.h"
#include "ref/ondisk.h"
#include "test.h"
#include "bt_mstore.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>

#define REC_SIZE 24     /* u64 key, u64 value, u64 extra: an extent record */
#define OWNER    77

/* ---- the record type ---- */

static uint64_t rec_key(const void *rec)
{
	return get64(rec);
}

static void rec_print(const void *rec, char *buf, size_t len)
{
	const uint8_t *r = rec;

	snprintf(buf, len, "%llu=%llu", (unsigned long long)get64(r),
		 (unsigned long long)get64(r + 8));
}

static const struct bt_type ext_type = {
	.name = "ext",
	.magic = MAGIC_BMBT,
	.rec_size = REC_SIZE,
	.rec_key = rec_key,
	.rec_print = rec_print,
};

static void mkrec(uint8_t *rec, uint64_t key, uint64_t val, uint64_t extra)
{
	put64(rec, key);
	put64(rec + 8, val);
	put64(rec + 16, extra);
}

/* ---- array-backed store: tests/bt_mstore.h ---- */

/* ---- the independent expectation: a sorted array ---- */

struct rrec {
	uint64_t key, val, extra;
};

struct ref {
	struct rrec *v;
	size_t n, cap;
};

static size_t ref_lb(const struct ref *r, uint64_t key)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool ref_has(const struct ref *r, uint64_t key)
{
	size_t i = ref_lb(r, key);

	return i < r->n && r->v[i].key == key;
}

static void ref_put(struct ref *r, struct rrec x)
{
	size_t i = ref_lb(r, x.key);

	if (i < r->n && r->v[i].key == x.key) {
		r->v[i] = x;
		return;
	}
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 256;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		if (!r->v)
			abort();
	}
	memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(*r->v));
	r->v[i] = x;
	r->n++;
}

static void ref_del(struct ref *r, uint64_t key)
{
	size_t i = ref_lb(r, key);

	if (i < r->n && r->v[i].key == key) {
		memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(*r->v));
		r->n--;
	}
}

/* ---- fixture ---- */

struct fx {
	struct mstore ms;
	struct bt_store store;
	struct bt_root root;
	struct bt_stats st;
	struct bt_tree t;
	unsigned root_changes;
	struct ref ref;
};

static void fx_root_changed(struct bt_tree *t)
{
	struct fx *f = t->priv;

	f->root_changes++;
}

static void fx_init(struct fx *f, uint32_t bs, uint32_t maxrecs,
		    uint64_t nblocks)
{
	memset(f, 0, sizeof(*f));
	ms_init(&f->ms, bs, nblocks);
	f->store = (struct bt_store){ ms_get, ms_put, ms_alloc, ms_free,
				      &f->ms };
	f->t = (struct bt_tree){
		.type = &ext_type, .store = &f->store, .root = &f->root,
		.blocksize = bs, .maxrecs = maxrecs, .owner = OWNER,
		.stats = &f->st, .root_changed = fx_root_changed, .priv = f,
	};
}

static void fx_fini(struct fx *f)
{
	ms_fini(&f->ms);
	free(f->ref.v);
}

/* Values derived from the key, so a misplaced record shows. */
static struct rrec rr(uint64_t key)
{
	return (struct rrec){ key, key * 7 + 1, ~key };
}

static int fx_insert(struct fx *f, struct rrec x)
{
	uint8_t rec[REC_SIZE];
	int err;

	mkrec(rec, x.key, x.val, x.extra);
	err = bt_insert(&f->t, rec);
	if (err == 0)
		ref_put(&f->ref, x);
	return err;
}

static int fx_delete(struct fx *f, uint64_t key)
{
	int err = bt_delete(&f->t, key);

	if (err == 0)
		ref_del(&f->ref, key);
	return err;
}

static int count_block(void *arg, uint64_t blk)
{
	(*(uint64_t *)arg)++;
	return 0;
}

/* Audit passes, counts match the reference and the store, no misuse. */
static int fx_audit(struct fx *f)
{
	uint64_t nrecs = ~0ull, blocks = 0;
	char why[256];
	int err;

	err = bt_check(&f->t, count_block, &blocks, &nrecs, why, sizeof(why));
	HCHECK(err == 0, "bt_check: %d (%s)", err, why);
	HCHECK(nrecs == f->ref.n, "tree has %llu records, reference %zu",
	       (unsigned long long)nrecs, f->ref.n);
	HCHECK(blocks == f->ms.in_use, "tree reaches %llu blocks, %llu in use",
	       (unsigned long long)blocks, (unsigned long long)f->ms.in_use);
	HCHECK(f->ms.nheld == 0, "%llu handles never put",
	       (unsigned long long)f->ms.nheld);
	HCHECK(f->ms.bugs == 0, "store misuse: %s", f->ms.bug);
	return 0;
}

struct collect {
	struct rrec *v;
	size_t n, cap;
	size_t stop_after;      /* return 1 after this many, 0: never */
	size_t fail_at;         /* return -EIO on this call (1-based)  */
};

static int collect_cb(void *arg, const void *rec)
{
	struct collect *c = arg;
	const uint8_t *r = rec;

	if (c->fail_at && c->n + 1 == c->fail_at)
		return -EIO;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		if (!c->v)
			abort();
	}
	c->v[c->n++] = (struct rrec){ get64(r), get64(r + 8), get64(r + 16) };
	return c->stop_after && c->n == c->stop_after;
}

/* fx_audit, plus every record read back in order equals the reference. */
static int fx_verify(struct fx *f)
{
	struct collect c = { 0 }, cr = { 0 };
	int err;

	if (fx_audit(f))
		return -1;
	err = bt_iterate(&f->t, 0, collect_cb, &c);
	if (err)
		free(c.v);
	HCHECK(err == 0, "bt_iterate: %d", err);
	/* the audit's one walk hands over what a walk after it reads */
	err = bt_check_recs(&f->t, NULL, collect_cb, &cr, NULL, NULL, 0);
	if (!err && cr.n != c.n)
		err = -ERANGE;
	for (size_t i = 0; !err && i < c.n; i++)
		if (memcmp(&cr.v[i], &c.v[i], sizeof(c.v[i])))
			err = -ERANGE;
	free(cr.v);
	if (err)
		free(c.v);
	HCHECK(err == 0, "bt_check_recs: %d, %zu records, %zu iterated", err,
	       cr.n, c.n);
	for (size_t i = 0; i < c.n && i < f->ref.n; i++) {
		struct rrec a = c.v[i], b = f->ref.v[i];

		if (a.key != b.key || a.val != b.val || a.extra != b.extra) {
			free(c.v);
			HCHECK(0, "record %zu: tree %llu=%llu, reference %llu=%llu",
			       i, (unsigned long long)a.key,
			       (unsigned long long)a.val,
			       (unsigned long long)b.key,
			       (unsigned long long)b.val);
		}
	}
	free(c.v);
	HCHECK(c.n == f->ref.n, "iterate saw %zu records, reference %zu", c.n,
	       f->ref.n);
	HCHECK(f->ms.nheld == 0, "iterate left %llu handles",
	       (unsigned long long)f->ms.nheld);
	return 0;
}

/* ---- deterministic randomness ---- */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return rng_next(s) % n;
}

static void shuffle(uint64_t *a, size_t n, uint64_t *s)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rng_below(s, i);
		uint64_t tmp = a[i - 1];

		a[i - 1] = a[j];
		a[j] = tmp;
	}
}

static uint64_t *keys_step(size_t n, uint64_t first, uint64_t step)
{
	uint64_t *k = malloc(n * sizeof(*k));

	if (!k)
		abort();
	for (size_t i = 0; i < n; i++)
		k[i] = first + i * step;
	return k;
}

/* ---- image snapshots: "unchanged" means byte-identical in-use blocks ---- */

struct snap {
	uint8_t *mem, *used, *fresh;
	struct bt_root root;
	uint64_t in_use;
	unsigned root_changes;
};

static void snap_take(struct fx *f, struct snap *s)
{
	size_t sz = (size_t)f->ms.nblocks * f->ms.bs;

	s->mem = malloc(sz);
	s->used = malloc(f->ms.nblocks);
	s->fresh = malloc(f->ms.nblocks);
	if (!s->mem || !s->used || !s->fresh)
		abort();
	memcpy(s->mem, f->ms.mem, sz);
	memcpy(s->used, f->ms.used, f->ms.nblocks);
	memcpy(s->fresh, f->ms.fresh, f->ms.nblocks);
	s->root = f->root;
	s->in_use = f->ms.in_use;
	s->root_changes = f->root_changes;
}

static void snap_restore(struct fx *f, const struct snap *s)
{
	memcpy(f->ms.mem, s->mem, (size_t)f->ms.nblocks * f->ms.bs);
	memcpy(f->ms.used, s->used, f->ms.nblocks);
	memcpy(f->ms.fresh, s->fresh, f->ms.nblocks);
	memset(f->ms.held, 0, f->ms.nblocks * sizeof(*f->ms.held));
	f->ms.nheld = 0;
	f->ms.bugs = 0;
	f->root = s->root;
	f->ms.in_use = s->in_use;
}

static int snap_same(struct fx *f, const struct snap *s)
{
	HCHECK(f->root.blk == s->root.blk && f->root.levels == s->root.levels,
	       "root moved: %llu/%u -> %llu/%u",
	       (unsigned long long)s->root.blk, s->root.levels,
	       (unsigned long long)f->root.blk, f->root.levels);
	HCHECK(f->root_changes == s->root_changes, "root_changed was called");
	HCHECK(f->ms.in_use == s->in_use, "blocks in use %llu -> %llu",
	       (unsigned long long)s->in_use, (unsigned long long)f->ms.in_use);
	for (uint64_t b = 0; b < f->ms.nblocks; b++) {
		HCHECK(f->ms.used[b] == s->used[b], "block %llu allocation changed",
		       (unsigned long long)b);
		if (!s->used[b])
			continue;
		HCHECK(!memcmp(ms_blk(&f->ms, b), s->mem + b * f->ms.bs,
			       f->ms.bs),
		       "block %llu contents changed", (unsigned long long)b);
	}
	return 0;
}

static void snap_free(struct snap *s)
{
	free(s->mem);
	free(s->used);
	free(s->fresh);
}

/* ---- raw node access for shape checks and corruption ---- */

static uint8_t *raw(struct fx *f, uint64_t blk)
{
	return ms_blk(&f->ms, blk);
}

static unsigned raw_level(const uint8_t *d) { return get16(d + 24); }
static unsigned raw_nrecs(const uint8_t *d) { return get16(d + 26); }
static uint8_t *raw_ptr(uint8_t *d, unsigned i) { return d + 32 + 16 * i; }
static uint8_t *raw_rec(uint8_t *d, unsigned i) { return d + 32 + REC_SIZE * i; }

/* ================= tests ================= */

/* What lookup_le/ge must return, by brute force over the reference. */
static int expect_le(const struct ref *r, uint64_t q, struct rrec *out)
{
	for (size_t i = r->n; i-- > 0;)
		if (r->v[i].key <= q) {
			*out = r->v[i];
			return 0;
		}
	return -ENOENT;
}

static int expect_ge(const struct ref *r, uint64_t q, struct rrec *out)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].key >= q) {
			*out = r->v[i];
			return 0;
		}
	return -ENOENT;
}

/* bt_lookup_around(q): le(q - 1) and ge(q) of the reference. */
static int probe_around(struct fx *f, uint64_t q)
{
	uint8_t lo[REC_SIZE], hi[REC_SIZE];
	struct rrec wl = { 0 }, wh = { 0 };
	bool hl, hh;
	int el = q ? expect_le(&f->ref, q - 1, &wl) : -ENOENT;
	int eh = expect_ge(&f->ref, q, &wh);
	int got = bt_lookup_around(&f->t, q, lo, &hl, hi, &hh);

	HCHECK(got == 0, "around(%llu) = %d", (unsigned long long)q, got);
	HCHECK(hl == !el && hh == !eh, "around(%llu): lo %d hi %d, want %d %d",
	       (unsigned long long)q, hl, hh, !el, !eh);
	HCHECK(!hl || (get64(lo) == wl.key && get64(lo + 8) == wl.val),
	       "around(%llu): lo key %llu, want %llu", (unsigned long long)q,
	       (unsigned long long)get64(lo), (unsigned long long)wl.key);
	HCHECK(!hh || (get64(hi) == wh.key && get64(hi + 8) == wh.val),
	       "around(%llu): hi key %llu, want %llu", (unsigned long long)q,
	       (unsigned long long)get64(hi), (unsigned long long)wh.key);
	return 0;
}

TEST(empty_tree_lookups_return_enoent)
{
	struct fx f;
	struct collect c = { 0 };
	uint8_t rec[REC_SIZE];
	uint64_t nrecs = 99;
	char why[128];

	fx_init(&f, 512, 4, 64);
	CHECK_EQ(bt_lookup_le(&f.t, 0, rec), -ENOENT);
	CHECK_EQ(bt_lookup_le(&f.t, UINT64_MAX, rec), -ENOENT);
	CHECK_EQ(bt_lookup_ge(&f.t, 0, rec), -ENOENT);
	CHECK_EQ(bt_lookup_ge(&f.t, UINT64_MAX, rec), -ENOENT);
	CHECK(probe_around(&f, 0) == 0);
	CHECK(probe_around(&f, 7) == 0);
	mkrec(rec, 5, 1, 2);
	CHECK_EQ(bt_update(&f.t, rec), -ENOENT);
	CHECK_EQ(bt_delete(&f.t, 5), -ENOENT);
	CHECK_EQ(bt_iterate(&f.t, 0, collect_cb, &c), 0);
	CHECK_EQ(c.n, 0);
	CHECK_EQ(bt_check(&f.t, NULL, NULL, &nrecs, why, sizeof(why)), 0);
	CHECK_EQ(nrecs, 0);
	CHECK_EQ(bt_destroy(&f.t), 0);
	CHECK_EQ(f.ms.in_use, 0);
	CHECK_EQ(f.ms.allocs, 0);
	CHECK_EQ(f.st.node_visits, 0);
	CHECK_EQ(f.root_changes, 0);
	CHECK_EQ(f.ms.nheld, 0);
	fx_fini(&f);
}

TEST(capacity_is_maxrecs_capped_by_block_size)
{
	struct fx f;
	uint8_t rec[REC_SIZE];

	fx_init(&f, 4096, 0, 4);
	/* (4096 - 32) / 24 records, (4096 - 32) / 16 pointers */
	CHECK_EQ(bt_leaf_max(&f.t), 169);
	CHECK_EQ(bt_node_max(&f.t), 254);
	f.t.maxrecs = 4;
	CHECK_EQ(bt_leaf_max(&f.t), 4);
	CHECK_EQ(bt_node_max(&f.t), 4);
	f.t.maxrecs = 1;                /* below 4 behaves as 4 */
	CHECK_EQ(bt_leaf_max(&f.t), 4);
	CHECK_EQ(bt_node_max(&f.t), 4);
	f.t.maxrecs = 200;
	CHECK_EQ(bt_leaf_max(&f.t), 169);
	CHECK_EQ(bt_node_max(&f.t), 200);
	f.t.maxrecs = 0;
	f.t.blocksize = 512;
	CHECK_EQ(bt_leaf_max(&f.t), 20);
	CHECK_EQ(bt_node_max(&f.t), 30);
	/* A block that cannot hold 4 records is refused, not mis-used. */
	f.t.blocksize = 120;
	mkrec(rec, 1, 1, 1);
	CHECK_EQ(bt_insert(&f.t, rec), -EINVAL);
	CHECK_EQ(f.ms.allocs, 0);
	fx_fini(&f);
}

static void insert_order_case(uint64_t *keys, size_t n, unsigned min_levels)
{
	struct fx f;
	uint8_t rec[REC_SIZE];

	fx_init(&f, 512, 4, 4096);
	for (size_t i = 0; i < n; i++) {
		CHECK_OK(fx_insert(&f, rr(keys[i])));
		if (i % 37 == 0)
			CHECK(fx_verify(&f) == 0);
	}
	CHECK(fx_verify(&f) == 0);
	CHECK_MSG(f.root.levels >= min_levels, "only %u levels", f.root.levels);
	/* The root node's own level agrees with the root descriptor. */
	CHECK_EQ(raw_level(raw(&f, f.root.blk)) + 1, f.root.levels);
	for (size_t i = 0; i < n; i++) {
		CHECK_OK(bt_lookup_ge(&f.t, keys[i], rec));
		CHECK_EQ(get64(rec), keys[i]);
		CHECK_EQ(get64(rec + 8), rr(keys[i]).val);
	}
	CHECK_EQ(f.st.rec_inserts, n);
	CHECK_EQ(f.ms.in_use, f.st.node_allocs - f.st.node_frees);
	fx_fini(&f);
}

TEST(insert_ascending_descending_random_matches_sorted_array)
{
	uint64_t seed = 0x5eed0001, *k = keys_step(600, 3, 5);

	insert_order_case(k, 600, 5);
	for (size_t i = 0; i < 300; i++) {
		uint64_t tmp = k[i];

		k[i] = k[599 - i];
		k[599 - i] = tmp;
	}
	insert_order_case(k, 600, 5);
	shuffle(k, 600, &seed);
	insert_order_case(k, 600, 5);
	free(k);
}

TEST(duplicate_insert_returns_eexist_and_changes_nothing)
{
	struct fx f;
	struct snap s;
	uint8_t rec[REC_SIZE];

	fx_init(&f, 512, 4, 256);
	for (uint64_t k = 1; k <= 40; k++)
		CHECK_OK(fx_insert(&f, rr(k * 2)));
	snap_take(&f, &s);
	for (uint64_t k = 1; k <= 40; k++) {
		mkrec(rec, k * 2, 12345, 6789);
		CHECK_EQ(bt_insert(&f.t, rec), -EEXIST);
		CHECK(snap_same(&f, &s) == 0);
	}
	snap_free(&s);
	CHECK(fx_verify(&f) == 0);
	CHECK_EQ(f.st.rec_inserts, 40);
	fx_fini(&f);
}

static int probe_all(struct fx *f, uint64_t qmax)
{
	uint8_t rec[REC_SIZE];
	struct rrec want = { 0 };

	for (uint64_t q = 0; q <= qmax + 1; q++) {
		uint64_t qq = q == qmax + 1 ? UINT64_MAX : q;
		int e = expect_le(&f->ref, qq, &want);
		int got = bt_lookup_le(&f->t, qq, rec);

		HCHECK(got == e, "le(%llu) = %d, want %d", (unsigned long long)qq,
		       got, e);
		HCHECK(e || (get64(rec) == want.key && get64(rec + 8) == want.val),
		       "le(%llu) gave key %llu, want %llu",
		       (unsigned long long)qq, (unsigned long long)get64(rec),
		       (unsigned long long)want.key);
		e = expect_ge(&f->ref, qq, &want);
		got = bt_lookup_ge(&f->t, qq, rec);
		HCHECK(got == e, "ge(%llu) = %d, want %d", (unsigned long long)qq,
		       got, e);
		HCHECK(e || (get64(rec) == want.key && get64(rec + 8) == want.val),
		       "ge(%llu) gave key %llu, want %llu",
		       (unsigned long long)qq, (unsigned long long)get64(rec),
		       (unsigned long long)want.key);
		HCHECK(probe_around(f, qq) == 0, "around(%llu)",
		       (unsigned long long)qq);
	}
	HCHECK(f->ms.nheld == 0, "lookups leaked handles");
	return 0;
}

TEST(lookup_le_ge_at_every_boundary)
{
	uint64_t seed = 0x5eed0002, *k = keys_step(150, 10, 10);
	struct fx f;

	fx_init(&f, 512, 4, 1024);
	shuffle(k, 150, &seed);
	for (size_t i = 0; i < 150; i++)
		CHECK_OK(fx_insert(&f, rr(k[i])));
	CHECK(probe_all(&f, 1520) == 0);
	/*
	 * Deleting first keys of leaves leaves separators stale-low: le of a
	 * key just above a separator must then step back one leaf.
	 */
	for (size_t i = 0; i < 150; i += 3)
		CHECK_OK(fx_delete(&f, k[i]));
	CHECK(fx_verify(&f) == 0);
	CHECK(probe_all(&f, 1520) == 0);
	free(k);
	fx_fini(&f);
}

TEST(delete_all_in_random_order_frees_every_node)
{
	uint64_t seed = 0x5eed0003, *k = keys_step(500, 1, 1);
	struct fx f;
	uint32_t prev_levels;

	fx_init(&f, 512, 4, 2048);
	shuffle(k, 500, &seed);
	for (size_t i = 0; i < 500; i++)
		CHECK_OK(fx_insert(&f, rr(k[i])));
	CHECK(f.root.levels >= 5);
	shuffle(k, 500, &seed);
	prev_levels = f.root.levels;
	for (size_t i = 0; i < 500; i++) {
		CHECK_OK(fx_delete(&f, k[i]));
		CHECK_EQ(bt_delete(&f.t, k[i]), -ENOENT);
		CHECK(fx_audit(&f) == 0);
		CHECK_MSG(f.root.levels <= prev_levels, "height grew on delete");
		prev_levels = f.root.levels;
	}
	CHECK_EQ(f.root.blk, 0);
	CHECK_EQ(f.root.levels, 0);
	CHECK_EQ(f.ms.in_use, 0);
	CHECK_EQ(f.st.node_frees, f.st.node_allocs);
	CHECK_EQ(f.st.rec_deletes, 500);
	CHECK(fx_verify(&f) == 0);
	free(k);
	fx_fini(&f);
}

TEST(update_changes_value_only)
{
	uint64_t seed = 0x5eed0004, *k = keys_step(300, 4, 4);
	struct fx f;
	uint8_t rec[REC_SIZE];
	uint64_t allocs;

	fx_init(&f, 512, 4, 1024);
	shuffle(k, 300, &seed);
	for (size_t i = 0; i < 300; i++)
		CHECK_OK(fx_insert(&f, rr(k[i])));
	allocs = f.st.node_allocs;
	for (size_t i = 0; i < 300; i++) {
		struct rrec x = { k[i], k[i] * 1000 + 3, k[i] + 5 };

		mkrec(rec, x.key, x.val, x.extra);
		CHECK_OK(bt_update(&f.t, rec));
		ref_put(&f.ref, x);
		mkrec(rec, k[i] + 1, 1, 1);     /* never inserted */
		CHECK_EQ(bt_update(&f.t, rec), -ENOENT);
	}
	CHECK(fx_verify(&f) == 0);
	CHECK_EQ(f.st.rec_updates, 300);
	CHECK_EQ(f.st.node_allocs, allocs);
	CHECK_EQ(f.st.rec_inserts, 300);
	free(k);
	fx_fini(&f);
}

TEST(iterate_from_middle_and_stop_early)
{
	struct fx f;
	struct collect c = { 0 };

	fx_init(&f, 512, 4, 512);
	for (uint64_t k = 10; k <= 1000; k += 10)
		CHECK_OK(fx_insert(&f, rr(k)));

	c.stop_after = 5;               /* stop: bt_iterate still returns 0 */
	CHECK_EQ(bt_iterate(&f.t, 455, collect_cb, &c), 0);
	CHECK_EQ(c.n, 5);
	for (size_t i = 0; i < 5; i++) {
		CHECK_EQ(c.v[i].key, 460 + 10 * i);
		CHECK_EQ(c.v[i].val, rr(460 + 10 * i).val);
	}
	CHECK_EQ(f.ms.nheld, 0);

	c.n = 0;
	c.stop_after = 0;
	CHECK_EQ(bt_iterate(&f.t, 1000, collect_cb, &c), 0);
	CHECK_EQ(c.n, 1);
	CHECK_EQ(c.v[0].key, 1000);
	c.n = 0;
	CHECK_EQ(bt_iterate(&f.t, 1001, collect_cb, &c), 0);
	CHECK_EQ(c.n, 0);
	CHECK_EQ(bt_iterate(&f.t, 0, collect_cb, &c), 0);
	CHECK_EQ(c.n, 100);

	c.n = 0;
	c.fail_at = 3;                  /* -errno aborts and is returned */
	CHECK_EQ(bt_iterate(&f.t, 0, collect_cb, &c), -EIO);
	CHECK_EQ(c.n, 2);
	CHECK_EQ(f.ms.nheld, 0);
	free(c.v);
	fx_fini(&f);
}

/* bt_lookup_le_run from q: what it handed over, against the reference. */
static int run_matches(struct fx *f, uint64_t q, size_t stop_after)
{
	struct rrec first;
	struct collect c = { .stop_after = stop_after };
	int want = expect_le(&f->ref, q, &first);
	int err = bt_lookup_le_run(&f->t, q, collect_cb, &c);
	size_t at = 0, n;

	if (!want)
		while (f->ref.v[at].key != first.key)
			at++;
	n = want ? 0 : f->ref.n - at;
	if (stop_after && n > stop_after)
		n = stop_after;
	if (err != want || c.n != n)
		free(c.v);
	HCHECK(err == want, "run(%llu) = %d, want %d", (unsigned long long)q,
	       err, want);
	HCHECK(c.n == n, "run(%llu) handed %zu records, want %zu",
	       (unsigned long long)q, c.n, n);
	for (size_t i = 0; i < n; i++) {
		struct rrec a = c.v[i], b = f->ref.v[at + i];

		if (a.key != b.key || a.val != b.val || a.extra != b.extra) {
			free(c.v);
			HCHECK(0, "run(%llu) record %zu: %llu, want %llu",
			       (unsigned long long)q, i,
			       (unsigned long long)a.key,
			       (unsigned long long)b.key);
		}
	}
	free(c.v);
	HCHECK(f->ms.nheld == 0, "run(%llu) left %llu handles",
	       (unsigned long long)q, (unsigned long long)f->ms.nheld);
	return 0;
}

/*
 * The answer of bt_lookup_le, then every record after it in order, from
 * every key (between records, on them, below the first, past the last,
 * after deletes leave separators stale-low), until the callback stops it
 * or fails; a whole run costs one descent and each node once, not a
 * descent a record.
 */
TEST(lookup_le_run_hands_the_answer_then_every_record_after)
{
	uint64_t seed = 0x5eed0009, *k = keys_step(150, 10, 10);
	struct collect c = { 0 };
	struct fx f;
	uint64_t v0;

	fx_init(&f, 512, 4, 1024);
	shuffle(k, 150, &seed);
	for (size_t i = 0; i < 150; i++)
		CHECK_OK(fx_insert(&f, rr(k[i])));
	CHECK(f.root.levels >= 4);
	for (uint64_t q = 0; q <= 1520; q += 5) {
		CHECK(run_matches(&f, q, 0) == 0);
		CHECK(run_matches(&f, q, 3) == 0);
	}
	CHECK(run_matches(&f, UINT64_MAX, 0) == 0);
	for (size_t i = 0; i < 150; i += 3)
		CHECK_OK(fx_delete(&f, k[i]));
	CHECK(fx_verify(&f) == 0);
	for (uint64_t q = 0; q <= 1520; q += 5)
		CHECK(run_matches(&f, q, 0) == 0);

	v0 = f.st.node_visits;
	CHECK_EQ(bt_lookup_le_run(&f.t, 10, collect_cb, &c), 0);
	CHECK_EQ(c.n, f.ref.n);
	CHECK_MSG(f.st.node_visits - v0 <= f.ms.in_use,
		  "a run of %zu records visited %llu nodes of %llu", c.n,
		  (unsigned long long)(f.st.node_visits - v0),
		  (unsigned long long)f.ms.in_use);
	c.n = 0;
	c.fail_at = 4;                  /* -errno ends it and is returned */
	CHECK_EQ(bt_lookup_le_run(&f.t, 500, collect_cb, &c), -EIO);
	CHECK_EQ(c.n, 3);
	CHECK_EQ(f.ms.nheld, 0);
	free(c.v);
	free(k);
	fx_fini(&f);
}

/* Visits an operation may cost in a tree of height h (see btree.c). */
static int visits_sane(const char *op, int err, uint64_t d, uint32_t h0,
		       uint32_t h1)
{
	uint32_t h = h0 > h1 ? h0 : h1;

	if (h0 == 0) {
		HCHECK(d == (err == 0 && !strcmp(op, "insert")), "%s on empty tree: %llu visits",
		       op, (unsigned long long)d);
		return 0;
	}
	HCHECK(d >= h0, "%s: %llu visits < height %u", op,
	       (unsigned long long)d, h0);
	HCHECK(d <= 2 * h + 1, "%s: %llu visits > 2*%u+1", op,
	       (unsigned long long)d, h);
	if (!strcmp(op, "update") || err == -EEXIST ||
	    (err == -ENOENT && !strcmp(op, "delete")))
		HCHECK(d == h0, "%s (%d): %llu visits, want %u", op, err,
		       (unsigned long long)d, h0);
	return 0;
}

TEST(randomized_mixed_ops_against_reference)
{
	uint64_t seed = 0x5eed0005;
	unsigned shrinks = 0;
	struct fx f;
	uint8_t rec[REC_SIZE];

	fx_init(&f, 512, 4, 4096);
	for (int op = 0; op < 10000; op++) {
		uint64_t key = rng_below(&seed, 600), v0 = f.st.node_visits;
		uint64_t r = rng_below(&seed, 100);
		/* Alternate growing and shrinking phases: splits and collapses. */
		bool shrink = (op / 2500) % 2;
		uint64_t ins = shrink ? 10 : 70;
		uint32_t h0 = f.root.levels;
		struct rrec want = { 0 };
		const char *name;
		int err, e;

		if (r < ins) {
			name = "insert";
			e = ref_has(&f.ref, key) ? -EEXIST : 0;
			err = fx_insert(&f, (struct rrec){ key, rng_next(&seed), op });
		} else if (r < 75) {
			/* While shrinking, mostly delete keys that exist. */
			if (shrink && f.ref.n && r % 4)
				key = f.ref.v[rng_below(&seed, f.ref.n)].key;
			name = "delete";
			e = ref_has(&f.ref, key) ? 0 : -ENOENT;
			err = fx_delete(&f, key);
		} else if (r < 85) {
			struct rrec x = { key, rng_next(&seed), op };

			name = "update";
			e = ref_has(&f.ref, key) ? 0 : -ENOENT;
			mkrec(rec, x.key, x.val, x.extra);
			err = bt_update(&f.t, rec);
			if (!err)
				ref_put(&f.ref, x);
		} else if (r < 93) {
			name = "lookup_le";
			e = expect_le(&f.ref, key, &want);
			err = bt_lookup_le(&f.t, key, rec);
			CHECK(err || (get64(rec) == want.key &&
				      get64(rec + 8) == want.val));
		} else {
			name = "lookup_ge";
			e = expect_ge(&f.ref, key, &want);
			err = bt_lookup_ge(&f.t, key, rec);
			CHECK(err || (get64(rec) == want.key &&
				      get64(rec + 8) == want.val));
		}
		CHECK_MSG(err == e, "op %d %s(%llu) = %d, want %d", op, name,
			  (unsigned long long)key, err, e);
		CHECK_MSG(fx_audit(&f) == 0, "after op %d %s(%llu)", op, name,
			  (unsigned long long)key);
		CHECK(visits_sane(name, err, f.st.node_visits - v0, h0,
				  f.root.levels) == 0);
		shrinks += f.root.levels < h0;
		if (op % 500 == 0)
			CHECK(fx_verify(&f) == 0);
	}
	CHECK(fx_verify(&f) == 0);
	CHECK(f.st.splits > 0 && f.st.merges > 0);
	CHECK_MSG(shrinks > 3, "height shrank only %u times", shrinks);
	fx_fini(&f);
}

TEST(enospc_during_split_leaves_tree_unchanged)
{
	uint64_t seed = 0x5eed0006, *k = keys_step(400, 2, 2);
	unsigned partial = 0, failed = 0;
	struct fx f;

	fx_init(&f, 512, 4, 512);
	shuffle(k, 400, &seed);
	for (size_t i = 0; i < 200; i++)
		CHECK_OK(fx_insert(&f, rr(k[i])));
	/* Fail the 1st, 2nd, ... alloc of each insert until one succeeds. */
	for (size_t i = 200; i < 400; i++) {
		struct snap s;
		int err;

		snap_take(&f, &s);
		for (uint64_t nth = 1;; nth++) {
			uint64_t a0 = f.ms.allocs;

			f.ms.fail_alloc_at = f.ms.allocs + nth;
			err = fx_insert(&f, rr(k[i]));
			f.ms.fail_alloc_at = 0;
			if (err == 0)
				break;
			CHECK_EQ(err, -ENOSPC);
			CHECK_EQ(f.ms.allocs - a0, nth);   /* stopped at the failure */
			CHECK(snap_same(&f, &s) == 0);
			CHECK(fx_verify(&f) == 0);
			failed++;
			partial += nth > 1;
		}
		snap_free(&s);
	}
	CHECK(fx_verify(&f) == 0);
	CHECK_MSG(partial > 0, "no multi-level split was interrupted");
	CHECK(failed > partial);
	free(k);
	fx_fini(&f);
}

TEST(full_device_returns_enospc_and_keeps_every_record)
{
	uint64_t seed = 0x5eed0007;
	struct fx f;
	int err = 0, n = 0;

	fx_init(&f, 512, 4, 48);
	while (err == 0 && n++ < 100000)
		err = fx_insert(&f, rr(rng_below(&seed, 1u << 20)));
	CHECK_EQ(err, -ENOSPC);
	/* The failed insert needed more than the free blocks: <= levels + 1. */
	CHECK(f.ms.nblocks - 1 - f.ms.in_use <= f.root.levels);
	CHECK(fx_verify(&f) == 0);
	/* Space freed by deletes is usable again. */
	while (f.ref.n > 20)
		CHECK_OK(fx_delete(&f, f.ref.v[f.ref.n / 2].key));
	CHECK_OK(fx_insert(&f, rr((1u << 20) + 1)));
	CHECK(fx_verify(&f) == 0);
	fx_fini(&f);
}

/* Fail the 1st, 2nd, ... get of an op until it succeeds; -EIO = no change. */
static int op_under_get_faults(struct fx *f, bool insert, uint64_t key,
			       unsigned *late_failures)
{
	uint32_t h = f->root.levels;
	struct snap s;
	int err = 0;

	snap_take(f, &s);
	for (uint64_t nth = 1;; nth++) {
		f->ms.fail_get_at = f->ms.gets + nth;
		err = insert ? fx_insert(f, rr(key)) : fx_delete(f, key);
		f->ms.fail_get_at = 0;
		if (err == 0)
			break;
		if (err != -EIO) {
			test_fail(__FILE__, __LINE__, "get fault %llu: %d",
				  (unsigned long long)nth, err);
			break;
		}
		err = snap_same(f, &s) || fx_audit(f) ? -1 : 0;
		if (err)
			break;
		*late_failures += nth > h;      /* after the descent */
	}
	snap_free(&s);
	return err;
}

TEST(get_failure_in_insert_or_delete_leaves_tree_unchanged)
{
	uint64_t seed = 0x5eed0008, *k = keys_step(300, 1, 1);
	unsigned late = 0;
	struct fx f;

	fx_init(&f, 512, 4, 512);
	shuffle(k, 300, &seed);
	for (size_t i = 0; i < 300; i++)
		CHECK(op_under_get_faults(&f, true, k[i], &late) == 0);
	CHECK_MSG(late > 0, "no insert failed while taking write access");
	late = 0;
	shuffle(k, 300, &seed);
	for (size_t i = 0; i < 300; i++)
		CHECK(op_under_get_faults(&f, false, k[i], &late) == 0);
	CHECK_MSG(late > 0, "no delete failed while taking write access");
	CHECK_EQ(f.ms.in_use, 0);
	free(k);
	fx_fini(&f);
}

TEST(non_splitting_insert_costs_one_visit_per_level)
{
	uint64_t seed = 0x5eed0009, *k = keys_step(600, 0, 1);
	unsigned plain = 0;
	struct fx f;
	uint8_t rec[REC_SIZE];

	fx_init(&f, 512, 4, 2048);
	shuffle(k, 600, &seed);
	for (size_t i = 0; i < 600; i++)       /* even keys only */
		if (k[i] % 2 == 0)
			CHECK_OK(fx_insert(&f, rr(k[i])));
	for (size_t i = 0; i < 600; i++) {
		uint32_t h = f.root.levels;
		struct bt_stats b = f.st;

		CHECK_EQ(raw_level(raw(&f, f.root.blk)) + 1, h);
		if (k[i] % 2 == 0) {
			/* A hit in the leaf the descent reaches: exactly h. */
			CHECK_OK(bt_lookup_ge(&f.t, k[i], rec));
			CHECK_EQ(f.st.node_visits - b.node_visits, h);
			continue;
		}
		CHECK_OK(fx_insert(&f, rr(k[i])));
		if (f.st.splits != b.splits)
			continue;
		plain++;
		CHECK_EQ(f.st.node_visits - b.node_visits, h);
		CHECK_EQ(f.st.node_allocs, b.node_allocs);
		CHECK_EQ(f.root.levels, h);
	}
	CHECK(plain > 100);
	/* Deletes that neither borrow nor merge also cost exactly h. */
	plain = 0;
	for (size_t i = 0; i < 600; i += 2) {
		uint32_t h = f.root.levels;
		struct bt_stats b = f.st;

		CHECK_OK(fx_delete(&f, k[i]));
		if (f.st.merges != b.merges)
			continue;
		plain++;
		CHECK_EQ(f.st.node_visits - b.node_visits, h);
		CHECK_EQ(f.st.node_frees, b.node_frees);
	}
	CHECK(plain > 50);
	CHECK(fx_verify(&f) == 0);
	free(k);
	fx_fini(&f);
}

static void leaf_keys(struct fx *f, uint64_t blk, uint64_t *out, unsigned *n)
{
	uint8_t *d = raw(f, blk);

	*n = raw_nrecs(d);
	for (unsigned i = 0; i < *n && i < 4; i++)
		out[i] = get64(raw_rec(d, i));
}

TEST(split_borrow_merge_and_collapse_counted_exactly)
{
	struct fx f;
	uint64_t keys[4], left, right, visits;
	unsigned n;
	uint8_t *root;

	fx_init(&f, 512, 4, 64);
	for (uint64_t k = 10; k <= 40; k += 10)
		CHECK_OK(fx_insert(&f, rr(k)));
	/* One leaf, four records: one alloc, one visit per insert. */
	CHECK_EQ(f.root.levels, 1);
	CHECK_EQ(f.st.node_allocs, 1);
	CHECK_EQ(f.st.splits, 0);
	CHECK_EQ(f.st.node_visits, 4);
	CHECK_EQ(f.root_changes, 1);

	/* Fifth record splits the leaf 3 + 2 under a new root. */
	CHECK_OK(fx_insert(&f, rr(50)));
	CHECK_EQ(f.st.splits, 1);
	CHECK_EQ(f.st.node_allocs, 3);
	CHECK_EQ(f.st.node_visits, 4 + 3);     /* leaf, right, new root */
	CHECK_EQ(f.root.levels, 2);
	CHECK_EQ(f.root_changes, 2);
	root = raw(&f, f.root.blk);
	CHECK_EQ(raw_level(root), 1);
	CHECK_EQ(raw_nrecs(root), 2);
	left = get64(raw_ptr(root, 0) + 8);
	right = get64(raw_ptr(root, 1) + 8);
	leaf_keys(&f, left, keys, &n);
	CHECK_EQ(n, 3);
	CHECK(keys[0] == 10 && keys[1] == 20 && keys[2] == 30);
	leaf_keys(&f, right, keys, &n);
	CHECK_EQ(n, 2);
	CHECK(keys[0] == 40 && keys[1] == 50);
	CHECK_EQ(get64(raw_ptr(root, 0)), 10);
	CHECK_EQ(get64(raw_ptr(root, 1)), 40);
	CHECK(fx_verify(&f) == 0);

	/* Right leaf drops to 1 < 2: borrows 30 from the left. */
	visits = f.st.node_visits;
	CHECK_OK(fx_delete(&f, 50));
	CHECK_EQ(f.st.merges, 1);
	CHECK_EQ(f.st.node_frees, 0);
	CHECK_EQ(f.st.node_visits - visits, 3);    /* root, leaf, sibling */
	leaf_keys(&f, right, keys, &n);
	CHECK(n == 2 && keys[0] == 30 && keys[1] == 40);
	CHECK_EQ(get64(raw_ptr(root, 1)), 30);
	CHECK(fx_verify(&f) == 0);

	/* Again, but the left is at the minimum: merge, root collapses. */
	visits = f.st.node_visits;
	CHECK_OK(fx_delete(&f, 40));
	CHECK_EQ(f.st.node_visits - visits, 3);
	CHECK_EQ(f.st.merges, 2);
	CHECK_EQ(f.st.node_frees, 2);
	CHECK_EQ(f.root.levels, 1);
	CHECK_EQ(f.root.blk, left);
	CHECK_EQ(f.root_changes, 3);
	leaf_keys(&f, left, keys, &n);
	CHECK(n == 3 && keys[0] == 10 && keys[1] == 20 && keys[2] == 30);
	CHECK(fx_verify(&f) == 0);

	/* The last record frees the leaf root: the tree is empty. */
	CHECK_OK(fx_delete(&f, 10));
	CHECK_OK(fx_delete(&f, 20));
	CHECK_OK(fx_delete(&f, 30));
	CHECK_EQ(f.root.blk, 0);
	CHECK_EQ(f.root.levels, 0);
	CHECK_EQ(f.root_changes, 4);
	CHECK_EQ(f.st.node_frees, 3);
	CHECK_EQ(f.st.rec_deletes, 5);
	CHECK_EQ(f.ms.in_use, 0);
	fx_fini(&f);
}

TEST(smaller_key_lowers_first_separators_on_the_way_down)
{
	struct fx f;
	uint8_t rec[REC_SIZE];

	fx_init(&f, 512, 4, 1024);
	for (uint64_t k = 1000; k < 1400; k += 4)
		CHECK_OK(fx_insert(&f, rr(k)));
	CHECK(f.root.levels >= 3);
	/* Each new minimum goes in front of every first separator. */
	for (uint64_t k = 999; k > 900; k--) {
		CHECK_OK(fx_insert(&f, rr(k)));
		CHECK_EQ(get64(raw_ptr(raw(&f, f.root.blk), 0)), k);
		CHECK_OK(bt_lookup_le(&f.t, k, rec));
		CHECK_EQ(get64(rec), k);
		CHECK(fx_audit(&f) == 0);
	}
	CHECK(fx_verify(&f) == 0);
	fx_fini(&f);
}

TEST(destroy_frees_every_node_children_first)
{
	uint64_t seed = 0x5eed000a, *k = keys_step(300, 1, 3);
	struct fx f;

	fx_init(&f, 512, 4, 1024);
	shuffle(k, 300, &seed);
	for (size_t i = 0; i < 300; i++)
		CHECK_OK(fx_insert(&f, rr(k[i])));
	f.ms.check_postorder = true;
	CHECK_OK(bt_destroy(&f.t));
	CHECK_EQ(f.ms.bugs, 0);
	CHECK_EQ(f.ms.in_use, 0);
	CHECK_EQ(f.st.node_frees, f.st.node_allocs);
	CHECK_EQ(f.root.blk, 0);
	CHECK_EQ(f.root.levels, 0);
	CHECK_EQ(f.ms.nheld, 0);
	f.ref.n = 0;
	CHECK(fx_verify(&f) == 0);
	/* An emptied tree is usable again. */
	CHECK_OK(fx_insert(&f, rr(5)));
	CHECK(fx_verify(&f) == 0);
	free(k);
	fx_fini(&f);
}

static int reject_block(void *arg, uint64_t blk)
{
	return blk == *(uint64_t *)arg ? -EUCLEAN : 0;
}

TEST(check_reports_every_block_once_and_honours_block_fn)
{
	struct fx f;
	uint64_t blocks = 0, victim;
	char why[128];

	fx_init(&f, 512, 4, 1024);
	for (uint64_t k = 0; k < 200; k++)
		CHECK_OK(fx_insert(&f, rr(k * 7)));
	CHECK_OK(bt_check(&f.t, count_block, &blocks, NULL, why, sizeof(why)));
	CHECK_EQ(blocks, f.ms.in_use);
	victim = get64(raw_ptr(raw(&f, f.root.blk), 1) + 8);
	CHECK_EQ(bt_check(&f.t, reject_block, &victim, NULL, why, sizeof(why)),
		 -EUCLEAN);
	CHECK(why[0] != '\0');
	CHECK_EQ(f.ms.nheld, 0);
	fx_fini(&f);
}

TEST(check_recs_hands_records_in_order_and_stops_at_an_error)
{
	struct fx f;
	struct collect c = { 0 };
	uint64_t nrecs = 0;
	char why[128];

	fx_init(&f, 512, 4, 1024);
	for (uint64_t k = 0; k < 300; k++)
		CHECK_OK(fx_insert(&f, rr((k * 37) % 300 * 3)));
	CHECK(f.root.levels >= 3);
	CHECK_OK(bt_check_recs(&f.t, NULL, collect_cb, &c, &nrecs, why,
			       sizeof(why)));
	CHECK_EQ(nrecs, 300);
	CHECK_EQ(c.n, 300);
	for (size_t i = 0; i < c.n; i++)
		CHECK_EQ(c.v[i].key, i * 3);
	free(c.v);
	c = (struct collect){ .fail_at = 123 };
	CHECK_EQ(bt_check_recs(&f.t, NULL, collect_cb, &c, &nrecs, why,
			       sizeof(why)), -EIO);
	CHECK_EQ(c.n, 122);
	CHECK_EQ(f.ms.nheld, 0);
	free(c.v);
	fx_fini(&f);
}

TEST(dump_shows_every_node_and_key)
{
	struct fx f;
	char *buf = NULL, word[32];
	size_t len = 0;
	FILE *mf;

	fx_init(&f, 512, 4, 64);
	for (uint64_t k = 10; k <= 120; k += 10)
		CHECK_OK(fx_insert(&f, rr(k)));
	mf = open_memstream(&buf, &len);
	CHECK(mf != NULL);
	bt_dump(&f.t, mf);
	fclose(mf);
	for (uint64_t k = 10; k <= 120; k += 10) {
		snprintf(word, sizeof(word), "[%llu=%llu]", (unsigned long long)k,
			 (unsigned long long)rr(k).val);
		CHECK_MSG(strstr(buf, word), "dump lacks %s:\n%s", word, buf);
	}
	snprintf(word, sizeof(word), "L%u blk %llu", f.root.levels - 1,
		 (unsigned long long)f.root.blk);
	CHECK_MSG(strstr(buf, word), "dump lacks root %s:\n%s", word, buf);
	CHECK_EQ(f.ms.nheld, 0);
	free(buf);
	fx_fini(&f);
}

/* ---- corruption ---- */

/* A path that avoids the leftmost edge: slot 1 (or 0) at every level. */
struct victims {
	uint64_t l1;            /* the level-1 node on the path */
	uint64_t leaf;          /* its child at slot 1          */
	uint64_t probe;         /* a key stored in that leaf    */
};

static void find_victims(struct fx *f, struct victims *v)
{
	uint64_t blk = f->root.blk;

	for (unsigned l = f->root.levels - 1; l > 0; l--) {
		uint8_t *d = raw(f, blk);
		unsigned slot = raw_nrecs(d) > 1 ? 1 : 0;

		if (l == 1)
			v->l1 = blk;
		blk = get64(raw_ptr(d, slot) + 8);
	}
	v->leaf = blk;
	v->probe = get64(raw_rec(raw(f, blk), 0));
}

struct corruption {
	const char *name;
	void (*apply)(struct fx *f, const struct victims *v);
	bool lookups_fail;      /* ops on the probe key must return an error */
	bool iterate_fails;     /* a full iteration must return -EUCLEAN     */
	int check_err;          /* what bt_check must return                 */
};

static void c_leaf_swap(struct fx *f, const struct victims *v)
{
	uint8_t tmp[REC_SIZE], *d = raw(f, v->leaf);

	memcpy(tmp, raw_rec(d, 0), REC_SIZE);
	memcpy(raw_rec(d, 0), raw_rec(d, 1), REC_SIZE);
	memcpy(raw_rec(d, 1), tmp, REC_SIZE);
}
static void c_leaf_dupkey(struct fx *f, const struct victims *v)
{
	uint8_t *d = raw(f, v->leaf);

	put64(raw_rec(d, 1), get64(raw_rec(d, 0)));
}
static void c_leaf_magic(struct fx *f, const struct victims *v)
{
	put32(raw(f, v->leaf), MAGIC_BMBT ^ 0x100);
}
static void c_leaf_owner(struct fx *f, const struct victims *v)
{
	put64(raw(f, v->leaf) + BLKHDR_OWNER, OWNER + 1);
}
static void c_leaf_blkno(struct fx *f, const struct victims *v)
{
	put64(raw(f, v->leaf) + BLKHDR_BLKNO, v->leaf + 1);
}
static void c_leaf_level(struct fx *f, const struct victims *v)
{
	put16(raw(f, v->leaf) + 24, 1);
}
static void c_leaf_nrecs_big(struct fx *f, const struct victims *v)
{
	put16(raw(f, v->leaf) + 26, 5);
}
static void c_leaf_nrecs_huge(struct fx *f, const struct victims *v)
{
	put16(raw(f, v->leaf) + 26, 0xffff);
}
static void c_leaf_nrecs_zero(struct fx *f, const struct victims *v)
{
	put16(raw(f, v->leaf) + 26, 0);
}
static void c_leaf_underfull(struct fx *f, const struct victims *v)
{
	put16(raw(f, v->leaf) + 26, 1);
}
/* Still sorted within the leaf and globally, but below the separator. */
static void c_leaf_below_bound(struct fx *f, const struct victims *v)
{
	uint64_t sep = get64(raw_ptr(raw(f, v->l1), 1));

	put64(raw_rec(raw(f, v->leaf), 0), sep - 1);
}
static void c_node_level(struct fx *f, const struct victims *v)
{
	put16(raw(f, v->l1) + 24, 2);
}
static void c_node_nrecs_zero(struct fx *f, const struct victims *v)
{
	put16(raw(f, v->l1) + 26, 0);
}
static void c_node_nrecs_big(struct fx *f, const struct victims *v)
{
	put16(raw(f, v->l1) + 26, 9);
}
static void c_node_keys_swapped(struct fx *f, const struct victims *v)
{
	uint8_t *d = raw(f, v->l1);
	uint64_t k0 = get64(raw_ptr(d, 0));

	put64(raw_ptr(d, 0), get64(raw_ptr(d, 1)));
	put64(raw_ptr(d, 1), k0);
}
static void c_child_ancestor(struct fx *f, const struct victims *v)
{
	put64(raw_ptr(raw(f, v->l1), 1) + 8, f->root.blk);
}
static void c_child_self(struct fx *f, const struct victims *v)
{
	put64(raw_ptr(raw(f, v->l1), 1) + 8, v->l1);
}
static void c_child_shared(struct fx *f, const struct victims *v)
{
	uint8_t *d = raw(f, v->l1);

	put64(raw_ptr(d, 1) + 8, get64(raw_ptr(d, 0) + 8));
}
static void c_child_null(struct fx *f, const struct victims *v)
{
	put64(raw_ptr(raw(f, v->l1), 1) + 8, 0);
}
static void c_child_off_device(struct fx *f, const struct victims *v)
{
	put64(raw_ptr(raw(f, v->l1), 1) + 8, 1ull << 40);
}
static void c_root_too_tall(struct fx *f, const struct victims *v)
{
	f->root.levels = BT_MAX_LEVELS + 1;
}
static void c_root_levels_plus(struct fx *f, const struct victims *v)
{
	f->root.levels++;
}
static void c_root_levels_minus(struct fx *f, const struct victims *v)
{
	f->root.levels--;
}
static void c_root_blk_zero(struct fx *f, const struct victims *v)
{
	f->root.blk = 0;
}

static const struct corruption corruptions[] = {
	{ "leaf records swapped", c_leaf_swap, false, true, -EUCLEAN },
	{ "leaf duplicate key", c_leaf_dupkey, false, true, -EUCLEAN },
	{ "leaf bad magic", c_leaf_magic, true, true, -EUCLEAN },
	{ "leaf wrong owner", c_leaf_owner, true, true, -EUCLEAN },
	{ "leaf wrong blkno", c_leaf_blkno, true, true, -EUCLEAN },
	{ "leaf wrong level", c_leaf_level, true, true, -EUCLEAN },
	{ "leaf nrecs over maxrecs", c_leaf_nrecs_big, true, true, -EUCLEAN },
	{ "leaf nrecs 0xffff", c_leaf_nrecs_huge, true, true, -EUCLEAN },
	{ "leaf nrecs zero", c_leaf_nrecs_zero, true, true, -EUCLEAN },
	{ "leaf underfull", c_leaf_underfull, false, false, -EUCLEAN },
	{ "leaf key below parent bound", c_leaf_below_bound, false, false,
	  -EUCLEAN },
	{ "interior wrong level", c_node_level, true, true, -EUCLEAN },
	{ "interior nrecs zero", c_node_nrecs_zero, true, true, -EUCLEAN },
	{ "interior nrecs over maxrecs", c_node_nrecs_big, true, true,
	  -EUCLEAN },
	{ "interior keys swapped", c_node_keys_swapped, false, false,
	  -EUCLEAN },
	{ "child points to the root", c_child_ancestor, true, true, -EUCLEAN },
	{ "child points to its parent", c_child_self, true, true, -EUCLEAN },
	{ "two slots share a child", c_child_shared, false, true, -EUCLEAN },
	{ "null child pointer", c_child_null, true, true, -EUCLEAN },
	{ "child pointer off the device", c_child_off_device, true, true,
	  -EIO },
	{ "root deeper than BT_MAX_LEVELS", c_root_too_tall, true, true,
	  -EUCLEAN },
	{ "root levels one too many", c_root_levels_plus, true, true,
	  -EUCLEAN },
	{ "root levels one too few", c_root_levels_minus, true, true,
	  -EUCLEAN },
	{ "root block zero", c_root_blk_zero, true, true, -EUCLEAN },
};

/* Every entry point on a damaged tree: errors as promised, no crash. */
static int run_on_corrupt(struct fx *f, const struct corruption *c,
			  const struct victims *v)
{
	uint8_t rec[REC_SIZE];
	struct collect col = { 0 };
	char why[256];
	FILE *null;
	int err;

	why[0] = 'x';
	err = bt_check(&f->t, NULL, NULL, NULL, why, sizeof(why));
	HCHECK(err == c->check_err, "%s: bt_check = %d, want %d (%s)", c->name,
	       err, c->check_err, why);
	HCHECK(why[0] != '\0' && why[0] != 'x', "%s: no reason given", c->name);
	HCHECK(f->ms.nheld == 0, "%s: check leaked handles", c->name);
	err = bt_check_recs(&f->t, NULL, collect_cb, &col, NULL, why,
			    sizeof(why));
	free(col.v);
	col = (struct collect){ 0 };
	HCHECK(err == c->check_err, "%s: bt_check_recs = %d, want %d",
	       c->name, err, c->check_err);
	HCHECK(f->ms.nheld == 0, "%s: check_recs leaked handles", c->name);

	err = bt_iterate(&f->t, 0, collect_cb, &col);
	free(col.v);
	HCHECK(!c->iterate_fails || err < 0, "%s: iterate = %d", c->name, err);
	HCHECK(f->ms.nheld == 0, "%s: iterate leaked handles", c->name);
	/* a run from the first key walks what a full iteration walks */
	col = (struct collect){ 0 };
	err = bt_lookup_le_run(&f->t, 10, collect_cb, &col);
	free(col.v);
	HCHECK(!c->iterate_fails || err < 0, "%s: run = %d", c->name, err);
	HCHECK(f->ms.nheld == 0, "%s: run leaked handles", c->name);

	int res[6];
	uint8_t rec2[REC_SIZE];
	bool h1, h2;

	res[5] = bt_lookup_around(&f->t, v->probe, rec, &h1, rec2, &h2);
	res[0] = bt_lookup_le(&f->t, v->probe, rec);
	res[1] = bt_lookup_ge(&f->t, v->probe, rec);
	mkrec(rec, v->probe, 1, 2);
	res[2] = bt_update(&f->t, rec);
	mkrec(rec, v->probe + 1, 1, 2);
	res[3] = bt_insert(&f->t, rec);
	res[4] = bt_delete(&f->t, v->probe);
	for (int i = 0; i < 6; i++) {
		HCHECK(!c->lookups_fail ||
		       (res[i] < 0 && res[i] != -ENOENT && res[i] != -EEXIST),
		       "%s: op %d on probe %llu = %d", c->name, i,
		       (unsigned long long)v->probe, res[i]);
	}
	HCHECK(f->ms.nheld == 0, "%s: ops leaked handles", c->name);

	null = fopen("/dev/null", "w");
	HCHECK(null, "cannot open /dev/null");
	bt_dump(&f->t, null);
	fclose(null);
	bt_destroy(&f->t);
	HCHECK(f->ms.nheld == 0, "%s: destroy leaked handles", c->name);
	return 0;
}

TEST(check_detects_corruption_and_ops_fail_cleanly)
{
	struct fx f;
	struct snap s;
	struct victims v;

	fx_init(&f, 512, 4, 1024);
	for (uint64_t k = 10; k <= 2000; k += 10)
		CHECK_OK(fx_insert(&f, rr(k)));
	CHECK(f.root.levels >= 4);
	CHECK(fx_verify(&f) == 0);
	find_victims(&f, &v);
	snap_take(&f, &s);
	for (size_t i = 0; i < sizeof(corruptions) / sizeof(corruptions[0]); i++) {
		snap_restore(&f, &s);
		corruptions[i].apply(&f, &v);
		CHECK(run_on_corrupt(&f, &corruptions[i], &v) == 0);
	}
	snap_restore(&f, &s);
	CHECK(fx_verify(&f) == 0);
	snap_free(&s);
	fx_fini(&f);
}

/*
 * On a leaf whose keys are out of order the binary search goes astray;
 * a lookup must then fail, never answer a record on the wrong side of
 * its key: bmap's unmap steps down from each answer below its end, and
 * an answer above it made it loop for ever (found by the image target).
 */
TEST(lookups_on_keys_out_of_order_fail_rather_than_cross_the_key)
{
	struct fx f;
	struct snap s;
	struct victims v;
	uint8_t rec[REC_SIZE];
	int refused = 0;

	fx_init(&f, 512, 4, 1024);
	for (uint64_t k = 10; k <= 2000; k += 10)
		CHECK_OK(fx_insert(&f, rr(k)));
	find_victims(&f, &v);
	snap_take(&f, &s);
	/* every damage of the order of keys, in a leaf or above it */
	for (size_t i = 0; i < sizeof(corruptions) / sizeof(corruptions[0]); i++) {
		if (corruptions[i].check_err != -EUCLEAN ||
		    corruptions[i].lookups_fail)
			continue;
		snap_restore(&f, &s);
		corruptions[i].apply(&f, &v);
		for (uint64_t q = 0; q <= 2010; q++) {
			int err = bt_lookup_le(&f.t, q, rec);

			CHECK_MSG(err == -EUCLEAN || err == -ENOENT ||
				  (err == 0 && rec_key(rec) <= q),
				  "%s: le %llu: %d, key %llu", corruptions[i].name,
				  (unsigned long long)q, err,
				  (unsigned long long)rec_key(rec));
			refused += err == -EUCLEAN;
			err = bt_lookup_ge(&f.t, q, rec);
			CHECK_MSG(err == -EUCLEAN || err == -ENOENT ||
				  (err == 0 && rec_key(rec) >= q),
				  "%s: ge %llu: %d, key %llu", corruptions[i].name,
				  (unsigned long long)q, err,
				  (unsigned long long)rec_key(rec));
			refused += err == -EUCLEAN;
		}
		CHECK_EQ(f.ms.nheld, 0);
	}
	CHECK(refused > 0);
	snap_restore(&f, &s);
	snap_free(&s);
	fx_fini(&f);
}

TEST(random_byte_flips_never_crash)
{
	uint64_t seed = 0x5eed000b;
	struct fx f;
	struct snap s;
	uint8_t rec[REC_SIZE];
	char why[256];

	fx_init(&f, 512, 4, 1024);
	for (uint64_t k = 0; k < 300; k++)
		CHECK_OK(fx_insert(&f, rr(k * 5)));
	snap_take(&f, &s);
	for (int round = 0; round < 600; round++) {
		struct collect col = { 0 };
		int flips = 1 + (int)rng_below(&seed, 3);

		snap_restore(&f, &s);
		for (int i = 0; i < flips; i++) {
			uint64_t b;

			do
				b = 1 + rng_below(&seed, f.ms.nblocks - 1);
			while (!f.ms.used[b]);
			/* header and the first four entries' worth of bytes */
			raw(&f, b)[rng_below(&seed, 32 + 4 * REC_SIZE)] ^=
				(uint8_t)(1 + rng_below(&seed, 255));
		}
		int err = bt_check(&f.t, NULL, NULL, NULL, why, sizeof(why));

		CHECK(err == 0 || err == -EUCLEAN || err == -EIO);
		CHECK(err == 0 || why[0] != '\0');
		bt_iterate(&f.t, 0, collect_cb, &col);
		free(col.v);
		for (int i = 0; i < 8; i++) {
			uint64_t key = rng_below(&seed, 1600);

			bt_lookup_le(&f.t, key, rec);
			bt_lookup_ge(&f.t, key, rec);
			mkrec(rec, key, 1, 1);
			bt_insert(&f.t, rec);
			bt_update(&f.t, rec);
			bt_delete(&f.t, rng_below(&seed, 1600));
		}
		bt_check(&f.t, NULL, NULL, NULL, why, sizeof(why));
		bt_destroy(&f.t);
		CHECK_EQ(f.ms.nheld, 0);
	}
	snap_restore(&f, &s);
	snap_free(&s);
	fx_fini(&f);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The reference rebuilt in one go: keys sorted, values from rr(). */
static void ref_from_keys(struct ref *r, const uint64_t *keys, size_t n)
{
	uint64_t *sorted = malloc(n * sizeof(*sorted));

	if (!sorted)
		abort();
	memcpy(sorted, keys, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_u64);
	r->n = 0;
	for (size_t i = 0; i < n; i++)
		ref_put(r, rr(sorted[i]));     /* appends: O(1) each */
	free(sorted);
}

TEST(large_tree_fills_4k_blocks_with_100k_records)
{
	enum { N = 100000 };
	uint64_t seed = 0x5eed000c, *k = keys_step(N, 3, 5);
	struct fx f;
	uint8_t rec[REC_SIZE];

	fx_init(&f, 4096, 0, 4096);
	shuffle(k, N, &seed);
	for (size_t i = 0; i < N; i++) {
		struct rrec x = rr(k[i]);

		mkrec(rec, x.key, x.val, x.extra);
		CHECK_OK(bt_insert(&f.t, rec));
	}
	ref_from_keys(&f.ref, k, N);
	/*
	 * Two levels hold at most 254 * 169 < 100k records; four would need
	 * at least 2 * 127 * 127 * 84 > 100k.  So exactly three.
	 */
	CHECK_EQ(f.root.levels, 3);
	CHECK(fx_verify(&f) == 0);
	for (size_t i = 0; i < N; i++) {
		CHECK_OK(bt_lookup_le(&f.t, k[i] + 4, rec));
		CHECK_EQ(get64(rec), k[i]);
		CHECK_OK(bt_lookup_ge(&f.t, k[i] - 2, rec));
		CHECK_EQ(get64(rec), k[i]);
	}
	/* Delete the first half of the shuffled order; keep the rest. */
	for (size_t i = 0; i < N / 2; i++)
		CHECK_OK(bt_delete(&f.t, k[i]));
	ref_from_keys(&f.ref, k + N / 2, N - N / 2);
	CHECK(fx_verify(&f) == 0);
	CHECK_OK(bt_destroy(&f.t));
	CHECK_EQ(f.ms.in_use, 0);
	free(k);
	fx_fini(&f);
}

/*
 * bt_shape counts what the store holds and what the reference holds, and
 * bt_nodes_most bounds the nodes of every tree the operations make:
 * ascending inserts (which leave leaves half full), random ones, and
 * deletes that merge.  A node emptied below its fill is told.
 */
TEST(shape_counts_every_node_and_nodes_most_bounds_every_tree)
{
	static const uint32_t fanouts[] = { 4, 5, 8 };

	for (size_t fi = 0; fi < sizeof(fanouts) / sizeof(fanouts[0]); fi++) {
		uint64_t seed = 0x5eed0100 + fi, most_seen = 0;
		struct bt_shape sh;
		struct fx f;

		fx_init(&f, 512, fanouts[fi], 8192);
		for (int op = 0; op < 3000; op++) {
			uint64_t key = op < 1000 ? (uint64_t)op * 3 :
				       rng_below(&seed, 4000);
			int err;

			if (op < 2000 || rng_below(&seed, 100) < 40)
				err = fx_insert(&f, rr(key));
			else if (f.ref.n)
				err = fx_delete(&f, f.ref.v[rng_below(&seed,
							f.ref.n)].key);
			else
				err = 0;
			CHECK(err == 0 || err == -EEXIST);
			CHECK_OK(bt_shape(&f.t, UINT64_MAX, &sh));
			CHECK_MSG(sh.nodes == f.ms.in_use && sh.recs == f.ref.n &&
				  sh.filled, "fan-out %u op %d: %llu nodes "
				  "(%llu in use), %llu records (%zu), filled %d",
				  fanouts[fi], op, (unsigned long long)sh.nodes,
				  (unsigned long long)f.ms.in_use,
				  (unsigned long long)sh.recs, f.ref.n,
				  sh.filled);
			CHECK_MSG(sh.nodes <= bt_nodes_most(&f.t, sh.recs),
				  "fan-out %u op %d: %llu nodes, at most %llu "
				  "for %llu records", fanouts[fi], op,
				  (unsigned long long)sh.nodes,
				  (unsigned long long)bt_nodes_most(&f.t, sh.recs),
				  (unsigned long long)sh.recs);
			if (bt_nodes_most(&f.t, sh.recs) == sh.nodes)
				most_seen++;
		}
		/* not a bound so loose that no tree meets it */
		CHECK_MSG(most_seen > 0, "fan-out %u: no tree had the most "
			  "nodes its records allow", fanouts[fi]);
		/* the walk stops past the nodes it is told a tree can have
		 * (a damaged one whose nodes share children walks each path) */
		CHECK_OK(bt_shape(&f.t, f.ms.in_use, &sh));
		CHECK_EQ(bt_shape(&f.t, f.ms.in_use - 1, &sh), -EUCLEAN);
		/* a leaf left with one record is below the fill */
		CHECK(f.root.levels >= 2);
		{
			uint8_t *root = raw(&f, f.root.blk);
			uint64_t blk = get64(raw_ptr(root, 0) + 8);

			while (raw_level(raw(&f, blk)) > 0)
				blk = get64(raw_ptr(raw(&f, blk), 0) + 8);
			put16(raw(&f, blk) + 26, 1);
			CHECK_OK(bt_shape(&f.t, UINT64_MAX, &sh));
			CHECK(!sh.filled);
		}
		fx_fini(&f);
	}
}

int main(int argc, char **argv) { return test_main(argc, argv); }
