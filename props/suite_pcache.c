/*
 * suite_pcache.c - seed path (b): the page cache's two truncate twins
 * (ref/pcache.h) from random index states.
 *
 * A case is a sequence of steps on one file's index (add a page, evict
 * one, dirty one, erase an entry) spread over clusters of indexes far
 * enough apart to give trees of height 1 to 4, through a cache small
 * enough that adding evicts, with the fallback knob (marks left on
 * shadows) on or off; then a range [start, end) to truncate.  The same
 * steps build two caches; one is truncated by the naive twin, the other
 * by the batched one.
 *
 * Properties:
 *   pcache_truncate_twins_agree      both leave the same entries, the
 *                                    range empty, the rest untouched,
 *                                    both audits clean
 *   pcache_truncate_batched_is_cheaper  no more lock rounds or mark
 *                                    clears than the naive twin, node
 *                                    visits at most 2 x height more
 *
 * And the data the cache serves, on the engine against the model through
 * the checker with a verify of every file after every op: writes,
 * reads, truncates to any byte (a cached partial EOF page must read
 * zeros past the new size, also after it grows again), punches,
 * writeback and drop_caches, fsync and remount, through a page cache of
 * 4 pages on 512-byte blocks, so nearly every op evicts and refaults:
 *
 *   pcache_contents_match_model      every byte read, after every op,
 *                                    is the model's
 *   pcache_delalloc_contents_match_model  the same with delalloc: dirty
 *                                    pages wait for writeback or eviction
 *                                    before they have blocks
 */
#include "props/props.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ref/pcache.h"

#define MAX_STEPS 256
#define PAGE 16

enum { ST_ADD, ST_EVICT, ST_DIRTY, ST_ERASE, ST_KINDS };

struct pcs_step { uint8_t kind; uint32_t index; };
struct pcs_case {
	uint32_t n, capacity;
	int knob;
	uint64_t start, end;
	struct pcs_step s[MAX_STEPS];
};

/* Clusters: heights 1 (0..), 2 (64..), 3 (4096..), 4 (262144..). */
static const uint32_t cluster[] = { 0, 60, 4090, 262100 };

static int case_alloc(struct props_trial *t, void *env, void **out)
{
	struct pcs_case *c = calloc(1, sizeof(*c));
	struct props_many m = PROPS_MANY(0, MAX_STEPS, 48);

	if (!c)
		return PROPS_ERROR;
	c->capacity = (uint32_t)props_int(t, 1, 64);
	c->knob = props_bool(t);
	while (props_more(t, &m) && c->n < MAX_STEPS) {
		struct pcs_step *s = &c->s[c->n++];

		s->kind = (uint8_t)props_below(t, ST_KINDS);
		s->index = cluster[props_below(t, 4)] +
			   (uint32_t)props_below(t, 200);
	}
	c->start = props_int(t, 0, 262400);
	c->end = c->start + props_int(t, 0, 262400);
	*out = c;
	return PROPS_PASS;
}

static void case_print(FILE *f, const void *inst, void *env)
{
	const struct pcs_case *c = inst;
	static const char *names[] = { "add", "evict", "dirty", "erase" };

	fprintf(f, "capacity %u, knob %d, truncate [%llu, %llu):", c->capacity,
		c->knob, (unsigned long long)c->start,
		(unsigned long long)c->end);
	for (uint32_t i = 0; i < c->n; i++)
		fprintf(f, " %s %u", names[c->s[i].kind], c->s[i].index);
	fputc('\n', f);
}

static const struct props_type case_type = {
	.name = "pcache-case", .alloc = case_alloc, .print = case_print,
};

/* Writeback for eviction: the page is clean from then on. */
static int clean_page(void *arg, struct pc_page *p)
{
	pc_page_clear_mark(arg, p, PC_DIRTY);
	return 0;
}

struct twin {
	struct ref_counters ctr;
	struct pcache *pc;
	struct pc_map *m;
};

static int build(struct twin *w, const struct pcs_case *c)
{
	memset(w, 0, sizeof(*w));
	if (pc_new(PAGE, c->capacity, 1, &w->ctr, &w->pc))
		return -ENOMEM;
	w->m = pc_map_of(w->pc, 1);
	w->pc->writepage = clean_page;
	w->pc->wp_arg = w->pc;
	w->pc->mark_values = c->knob;
	for (uint32_t i = 0; i < c->n; i++) {
		const struct pcs_step *s = &c->s[i];
		uintptr_t e = pc_load(w->pc, w->m, s->index);
		struct pc_page *p;
		int err = 0;

		switch (s->kind) {
		case ST_ADD:
			if (pc_is_page(e))
				break;
			err = pc_add_page(w->pc, w->m, s->index, &p);
			if (!err)
				memset(p->data, (int)(s->index * 7 + i), PAGE);
			break;
		case ST_EVICT:
			if (pc_is_page(e))
				pc_evict(w->pc, (struct pc_page *)e);
			break;
		case ST_DIRTY:
			if (pc_is_page(e))
				err = pc_set_mark(w->pc, w->m, s->index, PC_DIRTY);
			break;
		default:
			err = pc_store(w->pc, w->m, s->index, 0);
			break;
		}
		if (err)
			return err;
	}
	return 0;
}

/* Every entry in index order: (index, kind, value or first data byte). */
struct entry { uint64_t index, what; };
struct listing { struct entry *v; size_t n, cap; };

static int list_node(const struct pc_node *n, struct listing *l)
{
	for (unsigned i = 0; i < PC_SLOTS; i++) {
		uintptr_t e = n->slots[i];

		if (!e)
			continue;
		if (pc_is_node(e)) {
			if (list_node(pc_node_of(e), l))
				return -1;
			continue;
		}
		if (l->n == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 64;
			struct entry *v = realloc(l->v, cap * sizeof(*v));

			if (!v)
				return -1;
			l->v = v;
			l->cap = cap;
		}
		l->v[l->n++] = (struct entry){
			n->base + i, pc_is_value(e) ? (uint64_t)e :
			1000u + ((const struct pc_page *)e)->data[0] +
			256u * ((n->marks[PC_DIRTY] >> i) & 1) };
	}
	return 0;
}

static int listing(const struct pc_map *m, struct listing *l)
{
	memset(l, 0, sizeof(*l));
	return m->root ? list_node(m->root, l) : 0;
}

static int same(const struct listing *a, const struct listing *b)
{
	return a->n == b->n && (!a->n || !memcmp(a->v, b->v, a->n * sizeof(*a->v)));
}

/* Build both twins and truncate each by its own path. */
static int run_twins(struct props_trial *t, const struct pcs_case *c,
		     struct twin w[2], struct listing *before, unsigned *height)
{
	if (build(&w[0], c) || build(&w[1], c)) {
		props_note(t, "building the index failed");
		return PROPS_ERROR;
	}
	if (pc_audit(w[0].pc)) {
		props_note(t, "audit before the truncate: %s", w[0].pc->why);
		return PROPS_FAIL;
	}
	if (listing(w[0].m, before))
		return PROPS_ERROR;
	*height = pc_height(w[0].m);
	memset(&w[0].ctr, 0, sizeof(w[0].ctr));
	memset(&w[1].ctr, 0, sizeof(w[1].ctr));
	if (pc_truncate_naive(w[0].pc, w[0].m, c->start, c->end) ||
	    pc_truncate_batched(w[1].pc, w[1].m, c->start, c->end)) {
		props_note(t, "a truncate failed");
		return PROPS_FAIL;
	}
	for (int k = 0; k < 2; k++)
		if (pc_audit(w[k].pc)) {
			props_note(t, "%s audit after the truncate: %s",
				   k ? "batched" : "naive", w[k].pc->why);
			return PROPS_FAIL;
		}
	return PROPS_PASS;
}

static int twins_agree(struct props_trial *t, void *arg)
{
	const struct pcs_case *c = arg;
	struct twin w[2] = { 0 };
	struct listing before = { 0 }, after[2] = { { 0 } };
	unsigned h;
	int res = run_twins(t, c, w, &before, &h);
	size_t k = 0;

	if (res == PROPS_PASS && (listing(w[0].m, &after[0]) ||
				  listing(w[1].m, &after[1])))
		res = PROPS_ERROR;
	if (res == PROPS_PASS && !same(&after[0], &after[1])) {
		props_note(t, "naive keeps %zu entries, batched %zu",
			   after[0].n, after[1].n);
		res = PROPS_FAIL;
	}
	/* after = before without the range */
	for (size_t i = 0; res == PROPS_PASS && i < before.n; i++) {
		const struct entry *e = &before.v[i];

		if (e->index >= c->start && e->index < c->end)
			continue;
		if (k >= after[0].n || memcmp(e, &after[0].v[k], sizeof(*e))) {
			props_note(t, "index %llu outside the range changed",
				   (unsigned long long)e->index);
			res = PROPS_FAIL;
		}
		k++;
	}
	if (res == PROPS_PASS && k != after[0].n) {
		props_note(t, "%zu entries left, %zu expected", after[0].n, k);
		res = PROPS_FAIL;
	}
	if (res == PROPS_PASS &&
	    w[0].ctr.pc_entries_removed != w[1].ctr.pc_entries_removed) {
		props_note(t, "removed %llu vs %llu entries",
			   (unsigned long long)w[0].ctr.pc_entries_removed,
			   (unsigned long long)w[1].ctr.pc_entries_removed);
		res = PROPS_FAIL;
	}
	free(before.v);
	free(after[0].v);
	free(after[1].v);
	pc_free(w[0].pc);
	pc_free(w[1].pc);
	return res;
}

static int batched_cheaper(struct props_trial *t, void *arg)
{
	const struct pcs_case *c = arg;
	struct twin w[2] = { 0 };
	struct listing before = { 0 };
	unsigned h = 0;
	int res = run_twins(t, c, w, &before, &h);
	const struct ref_counters *a = &w[0].ctr, *b = &w[1].ctr;

	free(before.v);
	if (res == PROPS_PASS &&
	    (b->pc_lock_acquisitions > a->pc_lock_acquisitions ||
	     b->pc_mark_clears > a->pc_mark_clears ||
	     b->pc_node_visits > a->pc_node_visits + 2 * h)) {
		props_note(t, "naive: %llu locks, %llu clears, %llu visits; "
			   "batched: %llu, %llu, %llu",
			   (unsigned long long)a->pc_lock_acquisitions,
			   (unsigned long long)a->pc_mark_clears,
			   (unsigned long long)a->pc_node_visits,
			   (unsigned long long)b->pc_lock_acquisitions,
			   (unsigned long long)b->pc_mark_clears,
			   (unsigned long long)b->pc_node_visits);
		res = PROPS_FAIL;
	}
	if (res == PROPS_PASS && !c->knob && b->pc_fallbacks) {
		props_note(t, "%llu fallbacks without the knob",
			   (unsigned long long)b->pc_fallbacks);
		res = PROPS_FAIL;
	}
	pc_free(w[0].pc);
	pc_free(w[1].pc);
	return res;
}

/* ---- contents through the cache, against the model ---- */

#define PC_MKFS "bs=512,maxrecs=4,inodes=64,journal=64"

static struct props_targets pc_plain = {
	.list = "engine,model", .dev = "mem:8m", .mkfs = PC_MKFS,
	.mount = "pagecache=4",
};
static struct props_targets pc_delalloc = {
	.list = "engine,model", .dev = "mem:8m", .mkfs = PC_MKFS,
	.mount = "pagecache=4,delalloc",
};

static const struct props_ops_env pc_env = {
	.max_file = 64 * 1024, .nfiles = 2,
	.kinds = PROPS_KINDS_DATA | PROPS_KIND(OP_WRITEBACK) |
		 PROPS_KIND(OP_DROP_CACHES) | PROPS_KIND(OP_FSYNC) |
		 PROPS_KIND(OP_REMOUNT),
	.max_ops = 48, .avg_ops = 16, .dev = "mem:8m", .mkfs = PC_MKFS,
	.targets = "engine,model",
};
static const struct props_type pc_ops = PROPS_OPS_TYPE(&pc_env);

static int contents_match(struct props_trial *t, struct props_targets *pt,
			  void *seq)
{
	const struct check_cfg cc = { .verify_each_op = 1 };

	return props_check_ops(t, pt, seq, &cc);
}

static int plain_contents(struct props_trial *t, void *seq)
{
	return contents_match(t, &pc_plain, seq);
}

static int delalloc_contents(struct props_trial *t, void *seq)
{
	return contents_match(t, &pc_delalloc, seq);
}

static const struct props_prop props[] = {
	{
		.name = "pcache_truncate_twins_agree",
		.doc = "naive and batched truncate leave the same index: the "
		       "range empty, the rest untouched, audits clean",
		.cfg = { .prop1 = twins_agree, .types = { &case_type } },
	},
	{
		.name = "pcache_truncate_batched_is_cheaper",
		.doc = "the batched truncate takes no more lock rounds or mark "
		       "clears than the naive twin, and about its node visits",
		.cfg = { .prop1 = batched_cheaper, .types = { &case_type } },
	},
	{
		.name = "pcache_contents_match_model",
		.doc = "through a 4-page cache (evict, refault, truncate of a "
		       "cached partial page, writeback, drop_caches) every "
		       "byte read after every op is the model's",
		.cfg = { .prop1 = plain_contents, .types = { &pc_ops },
			 .hooks = PROPS_TARGETS_HOOKS(&pc_plain), .trials = 300 },
	},
	{
		.name = "pcache_delalloc_contents_match_model",
		.doc = "the same with delalloc: dirty pages without blocks "
		       "until writeback or eviction",
		.cfg = { .prop1 = delalloc_contents, .types = { &pc_ops },
			 .hooks = PROPS_TARGETS_HOOKS(&pc_delalloc), .trials = 300 },
	},
};

const struct props_suite props_suite_pcache = {
	.name = "pcache",
	.doc = "seed path (b): page-cache truncate twins from random index "
	       "states",
	PROPS_LIST(props),
};
