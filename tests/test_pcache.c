/*
 * test_pcache.c - the page cache (ref/pcache.c): the radix index on its
 * own (insert, lookup, erase, marks, shadows, LRU, refaults, shrinking),
 * seed path (b)'s two truncate twins with exact work counters on a
 * trunc-bench-like scenario, the fallback knob, write-back semantics
 * through the engine, and the audit catching each state a likely mistake
 * would leave.
 */
#include "tests/test.h"

#include <string.h>

#include "base/bytes.h"
#include "base/poison.h"
#include "base/zeros.h"
#include "ref/pcache.h"

/* ---- the index alone ---- */

struct ix {
	struct ref_counters ctr;
	struct pcache *pc;
	struct pc_map *m;
};

static int ix_open(struct ix *x, uint64_t capacity)
{
	memset(x, 0, sizeof(*x));
	if (pc_new(64, capacity, 2, &x->ctr, &x->pc))
		return -1;
	x->m = pc_map_of(x->pc, 1);
	return 0;
}

/* A page at index holding its index's low byte. */
static int add(struct ix *x, uint64_t index)
{
	struct pc_page *p;
	int err = pc_add_page(x->pc, x->m, index, &p);

	if (!err)
		memset(p->data, (int)(index & 0xff), 64);
	return err;
}

static int audit_ok(struct ix *x)
{
	if (pc_audit(x->pc) == 0)
		return 1;
	fprintf(stderr, "  audit: %s\n", x->pc->why);
	return 0;
}

TEST(pcache_index_stores_loads_and_erases_at_every_height)
{
	static const uint64_t idx[] = { 0, 1, 63, 64, 4095, 4096, 262143,
					262144, 1000000 };
	const size_t n = sizeof(idx) / sizeof(idx[0]);
	struct ix x;

	CHECK_OK(ix_open(&x, 16));
	CHECK_EQ(pc_height(x.m), 0);
	x.pc->clock = 100; /* stamps up to 100 are "evictions" */
	for (size_t i = 0; i < n; i++) {
		CHECK_OK(pc_store(x.pc, x.m, idx[i], pc_mk_value(i + 1)));
		CHECK(audit_ok(&x));
	}
	/* 1000000 needs 4 levels: 64^3 = 262144 <= 1000000 < 64^4 */
	CHECK_EQ(pc_height(x.m), 4);
	CHECK_EQ(x.m->nrshadows, n);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(pc_load(x.pc, x.m, idx[i]), pc_mk_value(i + 1));
	CHECK_EQ(pc_load(x.pc, x.m, 2), 0);
	CHECK_EQ(pc_load(x.pc, x.m, 5000000), 0);
	/* erasing from the top shrinks the tree level by level */
	for (size_t i = n; i-- > 0;) {
		uint64_t last = 0;

		CHECK_OK(pc_store(x.pc, x.m, idx[i], 0));
		CHECK(audit_ok(&x));
		CHECK_EQ(pc_load(x.pc, x.m, idx[i]), 0);
		if (i && pc_last_index(x.m, &last))
			CHECK_EQ(last, idx[i - 1]);
	}
	CHECK(x.m->root == NULL);
	CHECK_EQ(x.pc->nnodes, 0);
	pc_free(x.pc);
}

TEST(pcache_height_shrinks_when_the_high_entries_go)
{
	struct ix x;

	CHECK_OK(ix_open(&x, 16));
	CHECK_OK(add(&x, 3));
	CHECK_EQ(pc_height(x.m), 1);
	CHECK_OK(add(&x, 70000));              /* 64^2 < 70000 < 64^3 */
	CHECK_EQ(pc_height(x.m), 3);
	CHECK_EQ(x.pc->nnodes, 5);             /* root, 2 mids, 2 leaves */
	CHECK_OK(pc_store(x.pc, x.m, 70000, 0));
	CHECK_EQ(pc_height(x.m), 1);
	CHECK_EQ(x.pc->nnodes, 1);
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

TEST(pcache_marks_propagate_up_and_clear_down_to_nothing)
{
	struct ix x;
	uint64_t at = 0;

	CHECK_OK(ix_open(&x, 16));
	CHECK_OK(add(&x, 5));
	CHECK_OK(add(&x, 5000));
	CHECK_OK(pc_set_mark(x.pc, x.m, 5000, PC_DIRTY));
	CHECK(audit_ok(&x));
	CHECK(pc_get_mark(x.pc, x.m, 5000, PC_DIRTY));
	CHECK(!pc_get_mark(x.pc, x.m, 5, PC_DIRTY));
	/* root slot 1 (indexes 4096..8191) carries the mark, slot 0 not */
	CHECK_EQ(x.m->root->marks[PC_DIRTY], 1u << 1);
	CHECK(pc_find_marked(x.pc, x.m, &at, PC_DIRTY));
	CHECK_EQ(at, 5000);
	at = 5001;
	CHECK(!pc_find_marked(x.pc, x.m, &at, PC_DIRTY));
	CHECK_EQ(pc_set_mark(x.pc, x.m, 6, PC_DIRTY), -ENOENT);
	CHECK_OK(pc_clear_mark(x.pc, x.m, 5000, PC_DIRTY));
	CHECK_EQ(x.m->root->marks[PC_DIRTY], 0);
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

/* The audit of the index alone says what (pc_audit, its why). */
static int ix_audit_says(struct ix *x, const char *what)
{
	if (pc_audit(x->pc) != -EFSCORRUPTED)
		return 0;
	if (strstr(x->pc->why, what))
		return 1;
	fprintf(stderr, "  audit said: %s\n", x->pc->why);
	return 0;
}

/* A child whose offset names another slot of its parent is misplaced:
 * marks and frees climb by that offset. */
TEST(pcache_audit_catches_a_child_at_the_wrong_offset)
{
	struct ix x;
	struct pc_node *mid;

	CHECK_OK(ix_open(&x, 16));
	CHECK_OK(add(&x, 5));
	CHECK_OK(add(&x, 5000));
	CHECK_EQ(pc_height(x.m), 3);
	mid = pc_node_of(x.m->root->slots[1]);
	CHECK(mid->offset == 1 && mid->base == 4096);
	mid->offset = 2;
	CHECK(ix_audit_says(&x, "node at 4096 is misplaced"));
	mid->offset = 1;
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

/* A page that names another leaf than the one holding it is caught:
 * its removal would clear a slot of that other leaf. */
TEST(pcache_audit_catches_a_page_naming_another_leaf)
{
	struct ix x;
	struct pc_page *p, *q;
	struct pc_node *own;

	CHECK_OK(ix_open(&x, 16));
	CHECK_OK(add(&x, 3));
	CHECK_OK(add(&x, 70));                 /* two leaves: 0.., 64.. */
	p = pc_peek_page(x.pc, x.m, 3);
	q = pc_peek_page(x.pc, x.m, 70);
	CHECK(p && q && p->leaf != q->leaf);
	own = p->leaf;
	p->leaf = q->leaf;
	CHECK(ix_audit_says(&x, "page at 3 thinks it is at 3"));
	p->leaf = own;
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

/* A leaf's place on the shadow-node list follows what it holds, even
 * when the list and its count agree with the flags. */
TEST(pcache_audit_catches_the_wrong_leaf_on_the_shadow_list)
{
	struct ix x;
	struct pc_node *only, *mixed;

	CHECK_OK(ix_open(&x, 16));
	x.pc->clock = 100;
	CHECK_OK(pc_store(x.pc, x.m, 3, pc_mk_value(7)));
	CHECK_OK(add(&x, 64));
	CHECK_OK(pc_store(x.pc, x.m, 65, pc_mk_value(8)));
	only = pc_node_of(x.m->root->slots[0]);
	mixed = pc_node_of(x.m->root->slots[1]);
	CHECK(only->on_shadow_list && !mixed->on_shadow_list);
	CHECK_EQ(x.pc->nshadow_nodes, 1);
	CHECK(audit_ok(&x));
	/* the flags swapped: one flagged, one listed, one counted */
	only->on_shadow_list = false;
	mixed->on_shadow_list = true;
	CHECK(ix_audit_says(&x, "on the shadow list"));
	only->on_shadow_list = true;
	mixed->on_shadow_list = false;
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

/* Every node allocated is in a tree: one more counted is a leak. */
TEST(pcache_audit_catches_a_node_count_off_the_trees)
{
	struct ix x;

	CHECK_OK(ix_open(&x, 16));
	CHECK_OK(add(&x, 3));
	CHECK_OK(add(&x, 70));
	CHECK_EQ(x.pc->nnodes, 3);
	x.pc->nnodes++;
	CHECK(ix_audit_says(&x, "3 nodes in the trees, 4 allocated"));
	x.pc->nnodes--;
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

/* A value entry with two marks counts once among the marked values, until
 * its last mark goes. */
TEST(pcache_value_with_two_marks_counts_once)
{
	struct ix x;

	CHECK_OK(ix_open(&x, 16));
	x.pc->clock = 10; /* stamp 3 is an eviction */
	CHECK_OK(pc_store(x.pc, x.m, 7, pc_mk_value(3)));
	CHECK_OK(pc_set_mark(x.pc, x.m, 7, PC_TOWRITE));
	CHECK_EQ(x.pc->nr_marked_values, 1);
	CHECK_OK(pc_set_mark(x.pc, x.m, 7, PC_DIRTY));
	CHECK_EQ(x.pc->nr_marked_values, 1);
	CHECK(audit_ok(&x));
	CHECK_OK(pc_clear_mark(x.pc, x.m, 7, PC_TOWRITE));
	CHECK_EQ(x.pc->nr_marked_values, 1);
	CHECK(audit_ok(&x));
	CHECK_OK(pc_clear_mark(x.pc, x.m, 7, PC_DIRTY));
	CHECK_EQ(x.pc->nr_marked_values, 0);
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

/* A hinted lookup costs one visit for every slot of the hinted leaf, its
 * last one too; an index past the leaf walks from the root. */
TEST(pcache_hint_covers_its_leaf_to_the_last_slot)
{
	struct ix x;
	struct pc_page *p;

	CHECK_OK(ix_open(&x, 16));
	CHECK_OK(add(&x, 0));
	CHECK_OK(add(&x, 63));
	CHECK_OK(add(&x, 64));                 /* root over two leaves */
	CHECK_EQ(pc_height(x.m), 2);
	CHECK(pc_find_page(x.pc, x.m, 0) != NULL);
	CHECK(x.m->hint && x.m->hint->base == 0);
	x.ctr.pc_node_visits = 0;
	p = pc_find_page(x.pc, x.m, 63);
	CHECK(p && p->index == 63);
	CHECK_EQ(x.ctr.pc_node_visits, 1);
	x.ctr.pc_node_visits = 0;
	p = pc_find_page(x.pc, x.m, 64);
	CHECK(p && p->index == 64);
	CHECK_EQ(x.ctr.pc_node_visits, 2);
	CHECK(x.m->hint && x.m->hint->base == 64);
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

TEST(pcache_lru_evicts_the_oldest_to_shadows_and_counts_refaults)
{
	struct ix x;

	CHECK_OK(ix_open(&x, 4));
	for (uint64_t i = 0; i < 6; i++)
		CHECK_OK(add(&x, i));
	/* pages 0 and 1 went first, stamped 1 and 2 */
	CHECK_EQ(x.pc->npages, 4);
	CHECK_EQ(pc_load(x.pc, x.m, 0), pc_mk_value(1));
	CHECK_EQ(pc_load(x.pc, x.m, 1), pc_mk_value(2));
	CHECK_EQ(x.ctr.pc_evictions, 2);
	CHECK_EQ(x.m->nrshadows, 2);
	/* touching 2 makes 3 the oldest */
	CHECK(pc_find_page(x.pc, x.m, 2) != NULL);
	CHECK_OK(add(&x, 0));
	CHECK_EQ(x.ctr.pc_refaults, 1);
	CHECK(pc_is_page(pc_load(x.pc, x.m, 0)));
	CHECK(pc_is_page(pc_load(x.pc, x.m, 2)));
	CHECK_EQ(pc_load(x.pc, x.m, 3), pc_mk_value(3));
	CHECK(audit_ok(&x));
	/* a dirty page cannot be evicted without a way to write it */
	for (uint64_t i = 0; i < 6; i++)
		if (pc_is_page(pc_load(x.pc, x.m, i)))
			CHECK_OK(pc_set_mark(x.pc, x.m, i, PC_DIRTY));
	CHECK_EQ(add(&x, 9), -EBUSY);
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

/*
 * A page out of the cache is kept for the next one in (no malloc per
 * eviction), at most PC_SPARE_MAX of them, and while kept it is poisoned:
 * under ASan an access to it is an error, as after free.
 */
TEST(pcache_pages_out_of_the_cache_are_reused_and_poisoned_meanwhile)
{
	struct pc_page *p, *q;
	struct ix x;

	CHECK_OK(ix_open(&x, 4));
	for (uint64_t i = 0; i < 4; i++)
		CHECK_OK(add(&x, i));
	p = pc_find_page(x.pc, x.m, 2);
	CHECK(p != NULL);
	pc_remove_page(x.pc, p);
	CHECK_EQ(x.pc->nspare, 1);
#ifdef FSO_POISON_ASAN
	CHECK(__asan_address_is_poisoned(p->own));
	CHECK(__asan_address_is_poisoned(&p->index));
#endif
	CHECK_OK(pc_add_page(x.pc, x.m, 7, &q));
	CHECK(q == p);                      /* the kept page, reused */
	CHECK_EQ(x.pc->nspare, 0);
#ifdef FSO_POISON_ASAN
	CHECK(q->data == q->own);
	CHECK(!__asan_address_is_poisoned(q->own + 63));
#endif
	memset(q->data, 7, 64);
	/* an eviction hands its page straight to the page coming in */
	CHECK_OK(add(&x, 8));
	CHECK_EQ(x.pc->npages, 4);
	CHECK_EQ(x.pc->nspare, 0);
	/* all of them kept when the cache empties (capacity 4) */
	for (uint64_t i = 0; i < 9; i++)
		if (pc_is_page(pc_load(x.pc, x.m, i)))
			pc_remove_page(x.pc, pc_find_page(x.pc, x.m, i));
	CHECK_EQ(x.pc->npages, 0);
	CHECK_EQ(x.pc->nspare, 4);
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

TEST(pcache_leaves_of_only_shadows_are_listed_and_reclaimed_oldest_first)
{
	struct ix x;

	CHECK_OK(ix_open(&x, 1));
	x.pc->shadow_node_max = 2;
	/* one page at a time: each new page evicts the last, so leaves
	 * 0, 1, 2 fill with shadows */
	for (uint64_t i = 0; i < 3 * 64; i += 64)
		CHECK_OK(add(&x, i));
	CHECK_OK(add(&x, 1000000)); /* leaf 2's page goes too */
	CHECK_EQ(x.pc->nshadow_nodes, 2);
	CHECK_EQ(pc_load(x.pc, x.m, 0), 0);      /* the oldest: reclaimed */
	CHECK(pc_is_value(pc_load(x.pc, x.m, 64)));
	CHECK(pc_is_value(pc_load(x.pc, x.m, 128)));
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

/* ---- the truncate twins on the index ---- */

static struct pc_page *page_at(struct ix *x, uint64_t index)
{
	uintptr_t e = pc_load(x->pc, x->m, index);

	return pc_is_page(e) ? (struct pc_page *)e : NULL;
}

/* n dense pages from 0, the first `shadows` of them evicted. */
static int dense(struct ix *x, uint64_t n, uint64_t shadows)
{
	if (ix_open(x, n))
		return -1;
	for (uint64_t i = 0; i < n; i++)
		if (add(x, i))
			return -1;
	for (uint64_t i = 0; i < shadows; i++)
		pc_evict(x->pc, page_at(x, i));
	return 0;
}

TEST(pcache_truncate_twins_remove_a_middle_range_alike)
{
	for (int twin = 0; twin < 2; twin++) {
		struct ix x;

		CHECK_OK(dense(&x, 300, 100));
		CHECK_OK(pc_set_mark(x.pc, x.m, 150, PC_DIRTY));
		CHECK_OK((twin ? pc_truncate_batched :
			  pc_truncate_naive)(x.pc, x.m, 50, 200));
		CHECK(audit_ok(&x));
		for (uint64_t i = 0; i < 300; i++) {
			uintptr_t e = pc_load(x.pc, x.m, i);

			if (i >= 50 && i < 200)
				CHECK_MSG(e == 0, "twin %d: index %llu left", twin,
					  (unsigned long long)i);
			else
				CHECK(i < 100 ? pc_is_value(e) : pc_is_page(e));
		}
		CHECK_EQ(x.m->nrpages, 100);
		CHECK_EQ(x.m->nrshadows, 50);
		CHECK_EQ(x.ctr.pc_entries_removed, 150);
		pc_free(x.pc);
	}
}

/*
 * With nodes of 2, 4 and 8 slots (as radix-tree's test harness shrinks
 * its chunk shift) 64 entries make full trees of 6, 3 and 2 levels: the
 * heights and node counts below are worked out from the fan-out alone.
 * Every operation keeps the audit clean, marks find the right entries
 * across levels, and both truncate twins empty the tree alike.
 */
TEST(pcache_tiny_fanout_builds_deep_trees_from_few_entries)
{
	static const struct { unsigned shift, height, nodes; } g[] = {
		{ 1, 6, 32 + 16 + 8 + 4 + 2 + 1 },
		{ 2, 3, 16 + 4 + 1 },
		{ 3, 2, 8 + 1 },
	};

	for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
		for (int twin = 0; twin < 2; twin++) {
			struct ix x;
			uint64_t at = 0;

			CHECK_OK(ix_open(&x, 16));
			CHECK_OK(pc_set_fanout(x.pc, g[k].shift));
			x.pc->clock = 100;
			for (uint64_t i = 0; i < 64; i++)
				CHECK_OK(pc_store(x.pc, x.m, i, pc_mk_value(i + 1)));
			CHECK(audit_ok(&x));
			CHECK_EQ(pc_height(x.m), g[k].height);
			CHECK_EQ(x.pc->nnodes, g[k].nodes);
			CHECK_EQ(pc_set_fanout(x.pc, 6), -EBUSY);
			for (uint64_t i = 0; i < 64; i++)
				CHECK_EQ(pc_load(x.pc, x.m, i), pc_mk_value(i + 1));
			/* one more level for index 64 and up */
			CHECK_OK(pc_store(x.pc, x.m, 64, pc_mk_value(65)));
			CHECK_EQ(pc_height(x.m), g[k].height + 1);
			CHECK(audit_ok(&x));
			CHECK_OK(pc_store(x.pc, x.m, 64, 0));
			CHECK_EQ(pc_height(x.m), g[k].height);
			/* marks: set on 5 and 37, found from 0, 6 and 38 */
			CHECK_OK(pc_set_mark(x.pc, x.m, 5, PC_TOWRITE));
			CHECK_OK(pc_set_mark(x.pc, x.m, 37, PC_TOWRITE));
			x.pc->nr_marked_values = 2;
			CHECK(pc_find_marked(x.pc, x.m, &at, PC_TOWRITE));
			CHECK_EQ(at, 5);
			at = 6;
			CHECK(pc_find_marked(x.pc, x.m, &at, PC_TOWRITE));
			CHECK_EQ(at, 37);
			at = 38;
			CHECK(!pc_find_marked(x.pc, x.m, &at, PC_TOWRITE));
			CHECK_OK(pc_clear_mark(x.pc, x.m, 5, PC_TOWRITE));
			CHECK_OK(pc_clear_mark(x.pc, x.m, 37, PC_TOWRITE));
			x.pc->nr_marked_values = 0;
			CHECK(audit_ok(&x));
			/* a middle range, then the rest */
			CHECK_OK(twin ? pc_truncate_batched(x.pc, x.m, 10, 50) :
					pc_truncate_naive(x.pc, x.m, 10, 50));
			CHECK(audit_ok(&x));
			CHECK_EQ(x.m->nrshadows, 64 - 40);
			CHECK_EQ(pc_load(x.pc, x.m, 9), pc_mk_value(10));
			CHECK_EQ(pc_load(x.pc, x.m, 10), 0);
			CHECK_EQ(pc_load(x.pc, x.m, 50), pc_mk_value(51));
			CHECK_OK(twin ? pc_truncate_batched(x.pc, x.m, 0, UINT64_MAX) :
					pc_truncate_naive(x.pc, x.m, 0, UINT64_MAX));
			CHECK(x.m->root == NULL);
			CHECK_EQ(x.pc->nnodes, 0);
			pc_free(x.pc);
		}
	}
}

TEST(pcache_fanout_is_set_only_in_range_and_while_empty)
{
	struct ix x;

	CHECK_OK(ix_open(&x, 4));
	CHECK_EQ(pc_set_fanout(x.pc, 0), -EINVAL);
	CHECK_EQ(pc_set_fanout(x.pc, PC_SHIFT + 1), -EINVAL);
	CHECK_OK(pc_set_fanout(x.pc, 2));
	CHECK_OK(add(&x, 100));
	CHECK_EQ(pc_set_fanout(x.pc, 1), -EBUSY);
	/* 100 < 4^4: four levels of 4-way nodes */
	CHECK_EQ(pc_height(x.m), 4);
	CHECK(audit_ok(&x));
	pc_free(x.pc);
}

/* ---- through the engine ---- */

#define BS 512

struct eng {
	struct hw_dev *d;
	struct ref_fs *fs;
};

static int eng_open(struct eng *g, const char *mount)
{
	struct ref_mkfs_opts mo = { .blocksize = BS, .inodes = 16,
				    .journal_blocks = 256 };
	struct ref_mount_opts o = { 0 };

	memset(g, 0, sizeof(*g));
	if (hw_open("mem:8m", &g->d, NULL, 0) || ref_mkfs(g->d, &mo) ||
	    ref_parse_mount_opts(mount, &o, NULL, 0))
		return -1;
	return ref_mount(g->d, &o, &g->fs);
}

static void eng_close(struct eng *g)
{
	if (g->fs)
		ref_abandon(g->fs);
	hw_close(g->d);
}

static void say(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "  audit: %s\n", line);
}

/*
 * trunc-bench in small: 4 files of 256 blocks (sparse, as the benchmark
 * makes them with ftruncate) read through a cache of 512 pages: twice
 * the cache, so files 0 and 1 end as shadows and 2 and 3 as pages.
 */
#define TB_FILES 4
#define TB_BLOCKS 256
#define TB_CAP 512

static int trunc_bench_setup(struct eng *g, const char *mount, uint64_t *ino)
{
	static uint8_t buf[64 * BS];

	if (eng_open(g, mount))
		return -1;
	for (int f = 0; f < TB_FILES; f++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", f);
		if (ref_create(g->fs, name, &ino[f]) ||
		    ref_truncate(g->fs, ino[f], TB_BLOCKS * BS))
			return -1;
		for (uint64_t off = 0; off < TB_BLOCKS * BS; off += sizeof(buf))
			if (ref_pread(g->fs, ino[f], buf, sizeof(buf), off) !=
			    (int64_t)sizeof(buf))
				return -1;
	}
	return 0;
}

static void trunc_bench(const char *mount, uint64_t visits, uint64_t clears,
			uint64_t locks)
{
	struct eng g;
	uint64_t ino[TB_FILES];
	const struct ref_counters *c;

	CHECK_OK(trunc_bench_setup(&g, mount, ino));
	c = ref_counters(g.fs);
	CHECK_EQ(c->pc_misses, TB_FILES * TB_BLOCKS);
	CHECK_EQ(c->pc_evictions, TB_FILES * TB_BLOCKS - TB_CAP);
	CHECK_EQ(g.fs->pc->npages, TB_CAP);
	for (int f = 0; f < TB_FILES; f++) {
		struct pc_map *m = pc_map_of(g.fs->pc, ino[f]);

		CHECK_EQ(m->nrshadows, f < 2 ? TB_BLOCKS : 0);
		CHECK_EQ(m->nrpages, f < 2 ? 0 : TB_BLOCKS);
		CHECK_EQ(pc_height(m), 2);
	}
	CHECK_OK(ref_audit(g.fs, say, NULL));
	ref_counters_reset(g.fs);
	for (int f = 0; f < TB_FILES; f++)
		CHECK_OK(ref_truncate(g.fs, ino[f], 0));
	c = ref_counters(g.fs);
	CHECK_EQ(c->pc_entries_removed, TB_FILES * TB_BLOCKS);
	CHECK_EQ(c->pc_node_visits, visits);
	CHECK_EQ(c->pc_mark_clears, clears);
	CHECK_EQ(c->pc_lock_acquisitions, locks);
	CHECK_EQ(g.fs->pc->npages, 0);
	CHECK_EQ(g.fs->pc->nnodes, 0);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	eng_close(&g);
}

/*
 * Naive: per entry a walk of the 2 levels, the 3 marks re-initialised,
 * one lock round: 1024 x 2 visits, 1024 x 3 clears, 1024 locks.
 */
TEST(pcache_truncate_naive_walks_from_the_root_per_entry)
{
	trunc_bench("pagecache=512,naive=pagecache_truncate",
		    TB_FILES * TB_BLOCKS * 2, TB_FILES * TB_BLOCKS * 3,
		    TB_FILES * TB_BLOCKS);
}

/*
 * Batched: per file one visit per entry plus the 5 nodes entered (root
 * and 4 leaves), no mark clears, ceil(256 / 31) = 9 lock rounds.
 */
TEST(pcache_truncate_batched_steps_one_cursor_per_batch)
{
	trunc_bench("pagecache=512", TB_FILES * (TB_BLOCKS + 5), 0,
		    TB_FILES * 9);
}

/*
 * The knob: evictions leave a towrite mark on the shadow; the batched
 * twin must take the slow clear for exactly those entries.
 */
TEST(pcache_fallback_knob_sends_marked_shadows_to_the_slow_clear)
{
	struct eng g;
	uint64_t ino[TB_FILES];
	const struct ref_counters *c;
	const uint64_t shadows = TB_FILES * TB_BLOCKS - TB_CAP;

	CHECK_OK(trunc_bench_setup(&g, "pagecache=512,fallback=pagecache_truncate",
				   ino));
	CHECK_EQ(g.fs->pc->nr_marked_values, shadows);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	ref_counters_reset(g.fs);
	for (int f = 0; f < TB_FILES; f++)
		CHECK_OK(ref_truncate(g.fs, ino[f], 0));
	c = ref_counters(g.fs);
	CHECK_EQ(c->pc_fallbacks, shadows);
	CHECK_EQ(c->pc_mark_clears, shadows * 3);
	CHECK_EQ(g.fs->pc->nr_marked_values, 0);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	eng_close(&g);
}

static int pattern_at(uint64_t off) { return (int)((off * 7 + 3) & 0xff); }

static int put(struct ref_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
	       int salt)
{
	uint8_t buf[8 * BS];

	for (uint64_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(pattern_at(off + i) ^ salt);
	return ref_pwrite(fs, ino, buf, len, off) == (int64_t)len ? 0 : -1;
}

static int has(struct ref_fs *fs, uint64_t ino, uint64_t off, uint64_t len,
	       int salt)
{
	uint8_t buf[8 * BS];

	if (ref_pread(fs, ino, buf, len, off) != (int64_t)len)
		return 0;
	for (uint64_t i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(pattern_at(off + i) ^ salt))
			return 0;
	return 1;
}

static int remount_after_cut(struct eng *g, const char *mount)
{
	struct ref_mount_opts o = { 0 };

	ref_abandon(g->fs);
	g->fs = NULL;
	if (ref_parse_mount_opts(mount, &o, NULL, 0))
		return -1;
	return ref_mount(g->d, &o, &g->fs);
}

TEST(pcache_overwrites_stay_in_the_cache_until_writeback_or_fsync)
{
	struct eng g;
	uint64_t ino;

	CHECK_OK(eng_open(&g, "pagecache=8"));
	CHECK_OK(ref_create(g.fs, "a", &ino));
	CHECK_OK(put(g.fs, ino, 0, 4 * BS, 0));   /* allocating: on disk */
	CHECK_OK(ref_fsync(g.fs, ino));
	CHECK_OK(put(g.fs, ino, 100, 2 * BS, 0x55)); /* overwrite: dirty */
	CHECK_EQ(ref_counters(g.fs)->pc_pages_written, 0);
	CHECK(has(g.fs, ino, 100, 2 * BS, 0x55));
	CHECK_OK(ref_audit(g.fs, say, NULL));
	/* a cut loses the dirty pages: the fsynced bytes come back */
	CHECK_OK(remount_after_cut(&g, "pagecache=8"));
	CHECK(has(g.fs, ino, 0, 4 * BS, 0));
	/* writeback writes them (3 blocks touched), fsync commits */
	CHECK_OK(put(g.fs, ino, 100, 2 * BS, 0x55));
	CHECK_OK(ref_writeback(g.fs, 0));
	CHECK_EQ(ref_counters(g.fs)->pc_pages_written, 3);
	CHECK_OK(ref_writeback(g.fs, ino));
	CHECK_EQ(ref_counters(g.fs)->pc_pages_written, 3);
	CHECK_OK(put(g.fs, ino, 3 * BS, 10, 0x77));
	CHECK_OK(ref_fsync(g.fs, ino));
	CHECK_OK(remount_after_cut(&g, "pagecache=8"));
	CHECK(has(g.fs, ino, 0, 100, 0));
	CHECK(has(g.fs, ino, 100, 2 * BS, 0x55));
	CHECK(has(g.fs, ino, 3 * BS, 10, 0x77));
	CHECK_OK(ref_audit(g.fs, say, NULL));
	eng_close(&g);
}

TEST(pcache_eviction_writes_dirty_pages_and_drop_caches_keeps_them)
{
	struct eng g;
	uint64_t ino;

	CHECK_OK(eng_open(&g, "pagecache=2"));
	CHECK_OK(ref_create(g.fs, "a", &ino));
	CHECK_OK(put(g.fs, ino, 0, 4 * BS, 0));
	CHECK_OK(ref_sync(g.fs));
	CHECK_OK(put(g.fs, ino, 0, 10, 1));        /* block 0 dirty */
	CHECK_OK(put(g.fs, ino, BS, 10, 2));       /* block 1 dirty */
	CHECK_OK(ref_drop_caches(g.fs));           /* both stay */
	CHECK_EQ(g.fs->pc->npages, 2);
	CHECK_EQ(ref_counters(g.fs)->pc_pages_written, 0);
	CHECK(has(g.fs, ino, 2 * BS, BS, 0));      /* evicts block 0 */
	CHECK_EQ(ref_counters(g.fs)->pc_pages_written, 1);
	CHECK_OK(ref_drop_caches(g.fs));           /* block 2: clean */
	CHECK_EQ(g.fs->pc->npages, 1);
	CHECK(has(g.fs, ino, 0, 10, 1));           /* a refault */
	CHECK_EQ(ref_counters(g.fs)->pc_refaults, 1);
	CHECK(has(g.fs, ino, BS, 10, 2));
	CHECK_OK(ref_audit(g.fs, say, NULL));
	eng_close(&g);
}

TEST(pcache_truncate_punch_and_collapse_read_back_as_written)
{
	const char *mounts[] = { "pagecache=4", "pagecache=4,naive=all",
				 "pagecache=0" };

	for (int k = 0; k < 3; k++) {
		struct eng g;
		uint64_t ino;
		uint8_t z[BS];

		CHECK_OK(eng_open(&g, mounts[k]));
		CHECK((g.fs->pc != NULL) == (k < 2));
		CHECK_OK(ref_create(g.fs, "a", &ino));
		CHECK_OK(put(g.fs, ino, 0, 4 * BS, 0));
		CHECK_OK(put(g.fs, ino, 4 * BS, 4 * BS, 0));
		CHECK_OK(put(g.fs, ino, 10, 7 * BS, 9));  /* overwrites */
		/* truncate mid-block: the cached tail past EOF reads 0 after
		 * the file grows again */
		CHECK_OK(ref_truncate(g.fs, ino, 5 * BS + 7));
		CHECK_OK(ref_audit(g.fs, say, NULL));
		CHECK_OK(ref_truncate(g.fs, ino, 6 * BS));
		CHECK_EQ(ref_pread(g.fs, ino, z, BS, 5 * BS), BS);
		CHECK(has(g.fs, ino, 5 * BS, 7, 9));
		for (int i = 7; i < BS; i++)
			CHECK_MSG(z[i] == 0, "%s: byte %d past the old EOF",
				  mounts[k], i);
		/* punch block 1 and half of block 2 */
		CHECK_OK(ref_fallocate(g.fs, ino, REF_FALLOC_PUNCH_HOLE |
				       REF_FALLOC_KEEP_SIZE, BS, BS + BS / 2));
		CHECK_EQ(ref_pread(g.fs, ino, z, BS, BS), BS);
		for (int i = 0; i < BS; i++)
			CHECK(z[i] == 0);
		CHECK(has(g.fs, ino, 2 * BS + BS / 2, BS / 2, 9));
		/* collapse block 0: everything moves down one block */
		CHECK_OK(ref_fallocate(g.fs, ino, REF_FALLOC_COLLAPSE_RANGE, 0,
				       BS));
		CHECK_EQ(ref_pread(g.fs, ino, z, BS, 0), BS);  /* the hole */
		for (int i = 0; i < BS; i++)
			CHECK(z[i] == 0);
		CHECK_EQ(ref_pread(g.fs, ino, z, 8, 3 * BS), 8);
		for (int i = 0; i < 8; i++)
			CHECK(z[i] == (uint8_t)(pattern_at(4 * BS + i) ^ 9));
		CHECK_OK(ref_audit(g.fs, say, NULL));
		CHECK_OK(ref_unmount(g.fs));
		g.fs = NULL;
		eng_close(&g);
	}
}

/* What a view hands over: the pieces must come in file order from off on. */
struct seen {
	uint8_t bytes[24 * BS];
	uint64_t off, next;
	int out_of_order;
	unsigned pieces, zero_pieces;   /* handed over, of them NULL */
};

static void see(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct seen *s = arg;

	if (off != s->next || off + n - s->off > sizeof(s->bytes)) {
		s->out_of_order = 1;
		return;
	}
	if (p)
		memcpy(s->bytes + (off - s->off), p, n);
	else
		memset(s->bytes + (off - s->off), 0, n);
	s->next = off + n;
	s->pieces++;
	s->zero_pieces += !p;
}

/* Whether a and b hold the same pages in the same LRU order, with the
 * same marks: the cache as the next op meets it. */
static int same_cache(const struct pcache *a, const struct pcache *b)
{
	const struct pc_link *x = a->lru.next, *y = b->lru.next;

	if (a->npages != b->npages || a->nnodes != b->nnodes ||
	    a->clock != b->clock)
		return 0;
	for (; x != &a->lru && y != &b->lru; x = x->next, y = y->next) {
		const struct pc_page *p = (const struct pc_page *)x;
		const struct pc_page *q = (const struct pc_page *)y;

		if (p->map->id != q->map->id || p->index != q->index ||
		    p->delalloc != q->delalloc)
			return 0;
		for (unsigned k = 0; k < PC_NMARKS; k++)
			if (pc_page_mark(p, k) != pc_page_mark(q, k))
				return 0;
	}
	return x == &a->lru && y == &b->lru;
}

/* The counters less those a look moves: its lookups of the file's map
 * and the device reads of the blocks not in the cache. */
static struct ref_counters work_but_looking(const struct ref_fs *fs)
{
	struct ref_counters c = *ref_counters(fs);

	memset(&c.bt, 0, sizeof(c.bt));
	c.data_bytes_read = c.bcache_lookups = c.bcache_misses = 0;
	c.pc_node_visits = 0;
	return c;
}

/*
 * ref_pview sees what ref_pread reads and leaves no trace in the page
 * cache: three engines given the same writes, truncates, punches and
 * syncs, at the read steps one read, one viewed and one left alone.  The
 * viewed one sees the read one's bytes, in file order, and its cache is
 * the untouched one's after every step (the same pages in the same LRU
 * order with the same marks, the same page-cache and write counters),
 * so every later op does the same work: through a cache smaller than
 * the file, with a 2-way radix, with every path naive, with delayed
 * allocation (dirty pages over holes seen in place), journaling data
 * (blocks whose newest bytes are in the journal's buffers seen there,
 * not on the device: fdata_view), and without page data (zeros).  A
 * mount without a page cache has no view.
 */
TEST(pcache_view_sees_what_a_read_reads_and_leaves_the_cache_as_it_was)
{
	static const char *const mounts[] = {
		"pagecache=4", "pagecache=6,pagecache_shift=1",
		"pagecache=5,naive=all", "pagecache=4,delalloc",
		"pagecache=4,data=journal", "pagecache=4,nopagedata",
	};
	static struct seen s;
	static uint8_t buf[24 * BS];

	for (unsigned k = 0; k < sizeof(mounts) / sizeof(mounts[0]); k++) {
		struct eng a, b, c;
		uint64_t ia, ib, ic, x = 12345 + k;
		unsigned views = 0, misses = 0;

		CHECK_OK(eng_open(&a, mounts[k]));
		CHECK_OK(eng_open(&b, mounts[k]));
		CHECK_OK(eng_open(&c, mounts[k]));
		CHECK_OK(ref_create(a.fs, "a", &ia));
		CHECK_OK(ref_create(b.fs, "a", &ib));
		CHECK_OK(ref_create(c.fs, "a", &ic));
		for (int round = 0; round < 300; round++) {
			struct ref_counters wb, wc;
			uint64_t off, len, read0;
			int64_t ra, rb;

			x = x * 6364136223846793005ull + 1442695040888963407ull;
			off = (x >> 33) % (20 * BS);
			len = 1 + (x >> 17) % (8 * BS - 1);
			switch ((x >> 60) % 8) {
			case 0:
				CHECK_OK(ref_truncate(a.fs, ia, off));
				CHECK_OK(ref_truncate(b.fs, ib, off));
				CHECK_OK(ref_truncate(c.fs, ic, off));
				break;
			case 1:
				CHECK_OK(ref_fallocate(a.fs, ia,
					REF_FALLOC_PUNCH_HOLE | REF_FALLOC_KEEP_SIZE,
					off, len));
				CHECK_OK(ref_fallocate(b.fs, ib,
					REF_FALLOC_PUNCH_HOLE | REF_FALLOC_KEEP_SIZE,
					off, len));
				CHECK_OK(ref_fallocate(c.fs, ic,
					REF_FALLOC_PUNCH_HOLE | REF_FALLOC_KEEP_SIZE,
					off, len));
				break;
			case 2:
			case 3:
				CHECK_OK(put(a.fs, ia, off, len, round & 0xff));
				CHECK_OK(put(b.fs, ib, off, len, round & 0xff));
				CHECK_OK(put(c.fs, ic, off, len, round & 0xff));
				break;
			case 4:
				CHECK_OK(ref_sync(a.fs));
				CHECK_OK(ref_sync(b.fs));
				CHECK_OK(ref_sync(c.fs));
				break;
			default:
				len = 1 + (x >> 7) % (sizeof(buf) - 1);
				ra = ref_pread(a.fs, ia, buf, len, off);
				s.off = s.next = off;
				s.out_of_order = 0;
				read0 = ref_counters(b.fs)->data_bytes_read;
				rb = ref_pview(b.fs, ib, len, off, see, &s);
				CHECK_EQ(rb, ra);
				CHECK(!s.out_of_order);
				CHECK_EQ(s.next - off, ra > 0 ? (uint64_t)ra : 0);
				CHECK(ra <= 0 || !memcmp(buf, s.bytes, (size_t)ra));
				views++;
				misses += ref_counters(b.fs)->data_bytes_read != read0;
				break;
			}
			wb = work_but_looking(b.fs);
			wc = work_but_looking(c.fs);
			CHECK_MSG(!memcmp(&wb, &wc, sizeof(wb)),
				  "%s: the work differs after step %d",
				  mounts[k], round);
			CHECK_MSG(same_cache(b.fs->pc, c.fs->pc),
				  "%s: the cache differs after step %d",
				  mounts[k], round);
		}
		/* the views met blocks out of the cache, on the device */
		CHECK(views > 50);
		CHECK(strstr(mounts[k], "nopagedata") || misses > 10);
		CHECK_OK(ref_audit(b.fs, say, NULL));
		eng_close(&a);
		eng_close(&b);
		eng_close(&c);
	}
	{
		struct eng g;
		uint64_t ino;

		CHECK_OK(eng_open(&g, "pagecache=0"));
		CHECK_OK(ref_create(g.fs, "a", &ino));
		CHECK_OK(put(g.fs, ino, 0, BS, 1));
		CHECK_EQ(ref_pview(g.fs, ino, BS, 0, see, &s), -EOPNOTSUPP);
		eng_close(&g);
	}
}

/*
 * A view hands the blocks out of the cache over as runs, not block by
 * block: written blocks that lie together on the device as one piece in
 * place, a hole as one piece of zeros (NULL); a page in the cache ends a
 * run and is handed over alone.  The bytes are a read's.
 */
TEST(a_view_hands_runs_out_of_the_cache_as_one_piece)
{
	static struct seen s;
	static uint8_t buf[24 * BS];
	unsigned cached = 0;
	struct eng g;
	uint64_t ino;

	CHECK_OK(eng_open(&g, "pagecache=4"));
	CHECK_OK(ref_create(g.fs, "a", &ino));
	/* blocks 0-7 and 16-23 written, 8-15 a hole */
	CHECK_OK(put(g.fs, ino, 16 * BS, 8 * BS, 2));
	CHECK_OK(put(g.fs, ino, 0, 8 * BS, 1));
	CHECK_OK(ref_sync(g.fs));
	CHECK_EQ(ref_pread(g.fs, ino, buf, sizeof(buf), 0), (int64_t)sizeof(buf));
	/* the cache: the last blocks read, and a page of the hole */
	CHECK_EQ(ref_pread(g.fs, ino, buf + 12 * BS, BS, 12 * BS), BS);
	for (uint64_t fb = 0; fb < 24; fb++)
		cached += pc_peek_page(g.fs->pc, pc_map_of(g.fs->pc, ino),
				       fb) != NULL;
	CHECK(cached >= 1 && cached <= 4);
	memset(&s, 0, sizeof(s));
	CHECK_EQ(ref_pview(g.fs, ino, sizeof(buf), 0, see, &s),
		 (int64_t)sizeof(buf));
	CHECK(!s.out_of_order);
	CHECK_MEM(s.bytes, buf, sizeof(buf));
	/* three runs, each cached page splitting one and handed alone */
	CHECK(s.pieces <= 3 + 2 * cached);
	CHECK(s.zero_pieces >= 1);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	eng_close(&g);
}

/* Whether file bytes [off, off + len) read as zeros. */
static int zeros_at(struct ref_fs *fs, uint64_t ino, uint64_t off,
		    uint64_t len)
{
	uint8_t buf[8 * BS];

	if (ref_pread(fs, ino, buf, len, off) != (int64_t)len)
		return 0;
	return bytes_first_nonzero(buf, len) == len;
}

/* Whether the cached page of block fb holds the zero block's bytes. */
static int on_zeros(struct ref_fs *fs, uint64_t ino, uint64_t fb)
{
	struct pc_page *p = pc_peek_page(fs->pc, pc_map_of(fs->pc, ino), fb);

	return p && zeros_hold(p->data, BS);
}

/*
 * A page read over a hole (or an unwritten extent) holds the read-only
 * zero block's bytes (base/zeros.h) until it is written: a partial write
 * takes it back zeroed, bytes the page held before its eviction included,
 * a full one without a read, and zeroing a range of it writes nothing.
 * The naive twin and a delalloc mount do the same.
 */
TEST(pcache_hole_pages_share_the_zero_block_until_written)
{
	static const char *const mounts[] = {
		"pagecache=8", "pagecache=8,naive=all", "pagecache=8,delalloc",
	};

	for (unsigned k = 0; k < sizeof(mounts) / sizeof(mounts[0]); k++) {
		struct eng g;
		uint64_t ino;

		CHECK_OK(eng_open(&g, mounts[k]));
		CHECK_OK(ref_create(g.fs, "a", &ino));
		/* pages that held data go out to the spares, that data in them */
		CHECK_OK(put(g.fs, ino, 0, 6 * BS, 0x3c));
		CHECK_OK(ref_fsync(g.fs, ino));
		CHECK(has(g.fs, ino, 0, 6 * BS, 0x3c));
		CHECK_OK(ref_fallocate(g.fs, ino, REF_FALLOC_PUNCH_HOLE |
				       REF_FALLOC_KEEP_SIZE, 0, 4 * BS));
		CHECK_OK(ref_fallocate(g.fs, ino, REF_FALLOC_KEEP_SIZE,
				       8 * BS, 2 * BS)); /* unwritten */
		CHECK_OK(ref_truncate(g.fs, ino, 10 * BS));
		CHECK(zeros_at(g.fs, ino, 0, 4 * BS));
		CHECK(zeros_at(g.fs, ino, 6 * BS, 4 * BS));
		for (uint64_t fb = 0; fb < 10; fb++)
			CHECK_MSG(on_zeros(g.fs, ino, fb) == (fb < 4 || fb >= 6),
				  "%s: block %llu", mounts[k],
				  (unsigned long long)fb);
		/* a partial write: the rest of the block reads zeros */
		CHECK_OK(put(g.fs, ino, BS + 100, 10, 0x11));
		CHECK(!on_zeros(g.fs, ino, 1));
		CHECK(zeros_at(g.fs, ino, BS, 100));
		CHECK(has(g.fs, ino, BS + 100, 10, 0x11));
		CHECK(zeros_at(g.fs, ino, BS + 110, BS - 110));
		/* a whole block: written over, no read */
		CHECK_OK(put(g.fs, ino, 2 * BS, BS, 0x22));
		CHECK(!on_zeros(g.fs, ino, 2));
		/* zeroing part of a page on the zero block leaves it there */
		CHECK_OK(ref_fallocate(g.fs, ino, REF_FALLOC_ZERO_RANGE |
				       REF_FALLOC_KEEP_SIZE, 3 * BS + 7, 100));
		CHECK(zeros_at(g.fs, ino, 3 * BS, BS));
		/* an unwritten block written in part */
		CHECK_OK(put(g.fs, ino, 8 * BS + 1, 3, 0x33));
		CHECK(!on_zeros(g.fs, ino, 8));
		CHECK(zeros_at(g.fs, ino, 8 * BS + 4, BS - 4));
		CHECK_OK(ref_audit(g.fs, say, NULL));
		/* on the device as read: after a cut and a remount */
		CHECK_OK(ref_sync(g.fs));
		CHECK_OK(remount_after_cut(&g, mounts[k]));
		CHECK(zeros_at(g.fs, ino, 0, BS + 100));
		CHECK(has(g.fs, ino, BS + 100, 10, 0x11));
		CHECK(zeros_at(g.fs, ino, BS + 110, BS - 110));
		CHECK(has(g.fs, ino, 2 * BS, BS, 0x22));
		CHECK(zeros_at(g.fs, ino, 3 * BS, BS));
		CHECK(has(g.fs, ino, 4 * BS, 2 * BS, 0x3c));
		CHECK(zeros_at(g.fs, ino, 6 * BS, 2 * BS + 1));
		CHECK(has(g.fs, ino, 8 * BS + 1, 3, 0x33));
		CHECK(zeros_at(g.fs, ino, 8 * BS + 4, 2 * BS - 4));
		CHECK_OK(ref_audit(g.fs, say, NULL));
		eng_close(&g);
	}
}

TEST(pcache_mount_option_parses_and_rejects)
{
	struct ref_mount_opts o = { 0 };
	char err[160];

	CHECK_OK(ref_parse_mount_opts("pagecache=64", &o, err, sizeof(err)));
	CHECK_EQ(o.pagecache, 64);
	CHECK_OK(ref_parse_mount_opts("pagecache=0", &o, err, sizeof(err)));
	CHECK_EQ(o.pagecache, REF_PAGECACHE_OFF);
	CHECK_EQ(ref_parse_mount_opts("pagecache=lots", &o, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "pagecache") != NULL);
	CHECK_OK(ref_parse_mount_opts("pagecache_shift=2", &o, err, sizeof(err)));
	CHECK_EQ(o.pagecache_shift, 2);
	CHECK_EQ(ref_parse_mount_opts("pagecache_shift=7", &o, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "pagecache_shift") != NULL);
	CHECK_EQ(ref_parse_mount_opts("pagecache_shift=0", &o, err, sizeof(err)),
		 -EINVAL);
}

/* Through the engine with 2-way nodes: 40 blocks of a file make a
 * six-level index (32 <= 39 < 64), and everything reads back. */
TEST(pcache_engine_with_a_two_way_fanout_reads_back_and_audits_clean)
{
	struct eng g;
	uint64_t ino;

	CHECK_OK(eng_open(&g, "pagecache=64,pagecache_shift=1"));
	CHECK_EQ(g.fs->pc->fshift, 1);
	CHECK_OK(ref_create(g.fs, "a", &ino));
	for (uint64_t b = 0; b < 40; b += 8)   /* put and has: 8 blocks a call */
		CHECK_OK(put(g.fs, ino, b * BS, 8 * BS, 3));
	CHECK_OK(put(g.fs, ino, 7 * BS + 5, 3 * BS, 4)); /* overwrite: dirty */
	CHECK(has(g.fs, ino, 0, 7 * BS + 5, 3));
	CHECK(has(g.fs, ino, 7 * BS + 5, 3 * BS, 4));
	for (uint64_t b = 10; b < 40; b += 6)
		CHECK(has(g.fs, ino, b * BS + 5, 6 * BS - 5, 3));
	CHECK_EQ(pc_height(pc_map_of(g.fs->pc, ino)), 6);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	CHECK_OK(ref_truncate(g.fs, ino, 9 * BS));
	CHECK(has(g.fs, ino, 7 * BS + 5, 2 * BS - 5, 4));
	CHECK_OK(ref_audit(g.fs, say, NULL));
	eng_close(&g);
}

/* ---- the audit catches what each mistake would leave ---- */

/* The audit fails, and says what. */
static int audit_says(struct ref_fs *fs, const char *what)
{
	if (ref_audit(fs, NULL, NULL) != -EFSCORRUPTED)
		return 0;
	if (strstr(fs->pc->why, what))
		return 1;
	fprintf(stderr, "  audit said: %s\n", fs->pc->why);
	return 0;
}

/* A file of 8 blocks read through a 4-page cache: shadows at 0..3,
 * pages at 4..7. */
static int small_state(struct eng *g, uint64_t *ino)
{
	uint8_t buf[8 * BS];

	if (eng_open(g, "pagecache=4") || ref_create(g->fs, "a", ino) ||
	    put(g->fs, *ino, 0, 4 * BS, 0) || put(g->fs, *ino, 4 * BS, 4 * BS, 0) ||
	    ref_pread(g->fs, *ino, buf, sizeof(buf), 0) != (int64_t)sizeof(buf) ||
	    ref_audit(g->fs, NULL, NULL))
		return -1;
	return 0;
}

TEST(pcache_audit_catches_a_shadow_left_past_eof)
{
	struct eng g;
	uint64_t ino;

	CHECK_OK(small_state(&g, &ino));
	CHECK_OK(ref_truncate(g.fs, ino, 2 * BS));
	CHECK_OK(ref_audit(g.fs, say, NULL));
	/* what a truncate that stopped one entry short would leave */
	CHECK_OK(pc_store(g.fs->pc, pc_map_of(g.fs->pc, ino), 5, pc_mk_value(1)));
	CHECK(audit_says(g.fs, "past EOF"));
	eng_close(&g);
}

TEST(pcache_audit_catches_a_mark_on_a_value_entry_nobody_placed)
{
	struct eng g;
	uint64_t ino;
	struct pc_node *leaf;

	CHECK_OK(small_state(&g, &ino));
	leaf = pc_map_of(g.fs->pc, ino)->root;
	CHECK(pc_is_value(leaf->slots[0]));
	leaf->marks[PC_TOWRITE] |= 1; /* no propagation needed: a leaf root */
	CHECK(audit_says(g.fs, "carry a mark"));
	eng_close(&g);
}

TEST(pcache_audit_catches_a_mark_left_on_an_emptied_slot)
{
	struct eng g;
	uint64_t ino;
	struct pc_node *leaf;

	CHECK_OK(small_state(&g, &ino));
	CHECK_OK(ref_truncate(g.fs, ino, 4 * BS));
	leaf = pc_map_of(g.fs->pc, ino)->root;
	CHECK(leaf->slots[6] == 0);
	leaf->marks[PC_DIRTY] |= 1ull << 6;
	CHECK(audit_says(g.fs, "mark 0 set on empty index 6"));
	eng_close(&g);
}

/* The audit walks only the slots a node's fan-out has; what lies past
 * them (an entry, a mark) is still caught, and so are a node slot's mark
 * that disagrees with its child and a value above the leaves. */
TEST(pcache_audit_catches_entries_and_marks_past_a_small_fanout)
{
	struct eng g;
	uint64_t ino;
	uint8_t buf[8 * BS];
	struct pc_node *root, *leaf;

	CHECK_OK(eng_open(&g, "pagecache=4,pagecache_shift=2"));
	CHECK_OK(ref_create(g.fs, "a", &ino));
	CHECK_OK(put(g.fs, ino, 0, 8 * BS, 0));
	CHECK_EQ(ref_pread(g.fs, ino, buf, sizeof(buf), 0), (int64_t)sizeof(buf));
	CHECK_OK(ref_audit(g.fs, say, NULL));
	root = pc_map_of(g.fs->pc, ino)->root;
	CHECK_EQ(root->shift, 2);
	leaf = pc_node_of(root->slots[1]);
	CHECK(leaf->shift == 0 && leaf->base == 4);
	root->marks[PC_TOWRITE] |= 1ull << 9;
	CHECK(audit_says(g.fs, "mark 2 set on empty index 36"));
	root->marks[PC_TOWRITE] &= ~(1ull << 9);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	leaf->slots[63] = leaf->slots[0];
	CHECK(audit_says(g.fs, "slot 63 used in a 4-way node at 4"));
	leaf->slots[63] = 0;
	CHECK_OK(ref_audit(g.fs, say, NULL));
	/* a node slot's mark says whether its child has that mark: set
	 * with none below, and missing with one below */
	CHECK(!(leaf->marks[PC_TOWRITE]) && !(root->marks[PC_TOWRITE] & 2));
	root->marks[PC_TOWRITE] |= 2;
	CHECK(audit_says(g.fs, "mark 2 of node slot 4 does not match its child"));
	root->marks[PC_TOWRITE] &= ~2ull;
	leaf->marks[PC_TOWRITE] |= 1;
	CHECK(audit_says(g.fs, "mark 2 of node slot 4 does not match its child"));
	leaf->marks[PC_TOWRITE] &= ~1ull;
	CHECK_OK(ref_audit(g.fs, say, NULL));
	/* the used word the walks skip empty slots by says what the slots
	 * hold: a bit lost would hide an entry from them */
	CHECK_EQ(leaf->used, 0xfull);
	leaf->used &= ~2ull;
	CHECK(audit_says(g.fs, "node at base 4 says slots 0xd are used; its "
			 "slots hold 0xf"));
	leaf->used |= 2ull;
	CHECK_OK(ref_audit(g.fs, say, NULL));
	/* above the leaves only nodes */
	root->slots[2] = pc_mk_value(1);
	CHECK(audit_says(g.fs, "entry above the leaves at 8"));
	root->slots[2] = 0;
	CHECK_OK(ref_audit(g.fs, say, NULL));
	/* a root that counts one entry, a value in its slot 0: the audit
	 * measures the tree's height without following the value */
	{
		uintptr_t first = root->slots[0];
		uint8_t count = root->count;

		root->slots[0] = pc_mk_value(1);
		root->count = 1;
		CHECK(audit_says(g.fs, "root of height 1 uses only slot 0"));
		root->slots[0] = first;
		root->count = count;
		CHECK_OK(ref_audit(g.fs, say, NULL));
	}
	eng_close(&g);
}

/*
 * A page lookup starts at the leaf its map's last one reached (the hint):
 * the hint is the leaf of the last page read, a freed leaf is forgotten,
 * and the audit finds a hint that names no leaf of its map.  4-slot nodes:
 * pages 0..7 in two leaves.
 */
TEST(pcache_lookup_hint_follows_its_leaf)
{
	struct eng g;
	uint64_t a, b;
	uint8_t buf[8 * BS];
	struct pc_map *ma, *mb;

	CHECK_OK(eng_open(&g, "pagecache=16,pagecache_shift=2"));
	CHECK_OK(ref_create(g.fs, "a", &a));
	CHECK_OK(ref_create(g.fs, "b", &b));
	CHECK_OK(put(g.fs, a, 0, 8 * BS, 0));
	CHECK_OK(put(g.fs, b, 0, 8 * BS, 0));
	CHECK_OK(ref_fsync(g.fs, a));
	CHECK_OK(ref_fsync(g.fs, b));
	CHECK_EQ(ref_pread(g.fs, a, buf, BS, 5 * BS), BS);
	ma = pc_map_of(g.fs->pc, a);
	mb = pc_map_of(g.fs->pc, b);
	CHECK(ma->hint && ma->hint->shift == 0 && ma->hint->base == 4);
	CHECK_EQ(ref_pread(g.fs, a, buf, BS, 1 * BS), BS);
	CHECK(ma->hint && ma->hint->base == 0);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	/* the leaf of pages 0..3 is freed: the hint goes with it */
	CHECK_OK(ref_truncate(g.fs, a, 0));
	CHECK(ma->hint == NULL);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	/* a hint naming another map's leaf is caught */
	CHECK_EQ(ref_pread(g.fs, b, buf, BS, 0), BS);
	CHECK_EQ(ref_pread(g.fs, a, buf, BS, 0), 0);
	CHECK_OK(put(g.fs, a, 0, 8 * BS, 0));
	CHECK_EQ(ref_pread(g.fs, a, buf, BS, 0), BS);
	CHECK(ma->hint && mb->hint && ma->hint != mb->hint);
	ma->hint = mb->hint;
	CHECK(audit_says(g.fs, "lookup hint names no leaf of it"));
	ma->hint = NULL;
	CHECK_OK(ref_audit(g.fs, say, NULL));
	eng_close(&g);
}

/* The cached tail page past EOF reads as zero: a byte there is caught,
 * the first one, wherever it lies in the page. */
TEST(pcache_audit_catches_a_cached_byte_past_eof)
{
	struct eng g;
	uint64_t ino;
	uint8_t buf[BS];
	struct pc_map *m;
	struct pc_page *p;
	char want[96];

	CHECK_OK(eng_open(&g, "pagecache=16"));
	CHECK_OK(ref_create(g.fs, "a", &ino));
	CHECK_OK(put(g.fs, ino, 0, BS + 100, 0));
	CHECK_EQ(ref_pread(g.fs, ino, buf, BS, BS), 100);
	m = pc_map_of(g.fs->pc, ino);
	p = pc_find_page(g.fs->pc, m, 1);
	CHECK(p != NULL);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	for (unsigned at = 100; at < BS; at += 397) {
		p->data[BS - 1] = 0x11; /* a later one, not named */
		p->data[at] = 0x5a;
		snprintf(want, sizeof(want), "cached byte %u past EOF is 0x5a",
			 BS + at);
		CHECK_MSG(audit_says(g.fs, want), "byte %u planted", at);
		p->data[at] = 0;
		p->data[BS - 1] = 0;
	}
	CHECK_OK(ref_audit(g.fs, say, NULL));
	eng_close(&g);
}

TEST(pcache_audit_catches_wrong_entry_and_value_counts)
{
	struct eng g;
	uint64_t ino;
	struct pc_node *leaf;
	struct pc_map *m;

	CHECK_OK(small_state(&g, &ino));
	m = pc_map_of(g.fs->pc, ino);
	leaf = m->root;
	leaf->nr_values--;
	CHECK(audit_says(g.fs, "counts"));
	leaf->nr_values++;
	CHECK_OK(ref_audit(g.fs, say, NULL));
	/* grown for index 100 and shrunk back when it goes */
	CHECK_OK(pc_store(g.fs->pc, m, 100, pc_mk_value(1)));
	CHECK_EQ(pc_height(m), 2);
	CHECK_OK(pc_store(g.fs->pc, m, 100, 0));
	CHECK_EQ(pc_height(m), 1);
	CHECK_OK(ref_audit(g.fs, say, NULL));
	m->root->count--; /* what a lost entry count leaves */
	CHECK(audit_says(g.fs, "counts"));
	m->root->count++;
	eng_close(&g);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
