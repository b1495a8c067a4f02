/*
 * suite_btree.c - the generic B+tree (ref/btree.h) against a sorted
 * array, as a state machine: insert, delete, update, lookup_le,
 * lookup_ge and iterate, on a tree of fan-out 4 over 512-byte blocks so
 * that a few dozen keys make four levels.
 *
 * The tree runs on a small array-backed bt_store of its own that hands
 * out the lowest free block, fills fresh and freed blocks with garbage,
 * and counts misuse (a get of a free block, a double free, a block held
 * twice, a handle never put), so the properties see store bugs too.
 *
 * Properties:
 *   btree_ops_match_sorted_array      every result equals the array's
 *   btree_check_clean_after_every_op  bt_check passes, counts the array's
 *                                     records, and the store saw no misuse
 *   btree_destroy_frees_every_node    inserts and deletes, then bt_destroy
 *                                     leaves no block allocated
 *   btree_height_within_fill_bound    levels <= max(1, log2(records)),
 *                                     from btree.h's minimum fill
 */
#include "props/props.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ref/btree.h"

#define BS       512
#define NBLOCKS  1024           /* block 0 is never handed out */
#define MAXRECS  4
#define MAXKEYS  160
#define KEYSPACE 400            /* keys drawn from [0, KEYSPACE) */
#define OWNER    7
#define REC_SIZE 16             /* u64 key, u64 value */

/* ---- the store ---- */

struct store {
	uint8_t mem[NBLOCKS][BS];
	uint8_t used[NBLOCKS];
	uint8_t held[NBLOCKS];
	uint32_t in_use, nheld, misuse;
};

static int st_get(void *ctx, uint64_t blk, int write, void **data,
		  void **handle)
{
	struct store *s = ctx;

	(void)write;
	if (blk == 0 || blk >= NBLOCKS)
		return -EIO;
	if (!s->used[blk] || s->held[blk])
		s->misuse++;
	if (!s->used[blk])
		return -EIO;
	s->held[blk]++;
	s->nheld++;
	*data = s->mem[blk];
	*handle = &s->held[blk];
	return 0;
}

static void st_put(void *ctx, void *handle)
{
	struct store *s = ctx;
	uint8_t *h = handle;

	if (h < s->held || h >= s->held + NBLOCKS || *h == 0) {
		s->misuse++;
		return;
	}
	(*h)--;
	s->nheld--;
}

static int st_alloc(void *ctx, uint64_t near, uint64_t *blk)
{
	struct store *s = ctx;

	(void)near;
	for (uint64_t b = 1; b < NBLOCKS; b++) {
		if (s->used[b])
			continue;
		s->used[b] = 1;
		memset(s->mem[b], 0xa5, BS);    /* must be written before read */
		s->in_use++;
		*blk = b;
		return 0;
	}
	return -ENOSPC;
}

static int st_free(void *ctx, uint64_t blk)
{
	struct store *s = ctx;

	if (blk == 0 || blk >= NBLOCKS || !s->used[blk] || s->held[blk]) {
		s->misuse++;
		return -EINVAL;
	}
	s->used[blk] = 0;
	memset(s->mem[blk], 0xdb, BS);          /* use after free shows */
	s->in_use--;
	return 0;
}

/* ---- records ---- */

static uint64_t get_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint64_t rec_key(const void *rec)
{
	return get_u64(rec);
}

static const struct bt_type rec_type = {
	.name = "props",
	.magic = 0x50524f50u,   /* 'PROP' */
	.rec_size = REC_SIZE,
	.rec_key = rec_key,
};

static void mkrec(uint8_t *rec, uint64_t key, uint64_t val)
{
	memcpy(rec, &key, 8);
	memcpy(rec + 8, &val, 8);
}

/* ---- the system under test ---- */

struct sut {
	struct store st;
	struct bt_store ops;
	struct bt_root root;
	struct bt_tree tree;
};

static void *sut_new(void *env)
{
	struct sut *s = calloc(1, sizeof(*s));

	(void)env;
	if (!s)
		return NULL;
	s->ops = (struct bt_store){ st_get, st_put, st_alloc, st_free, &s->st };
	s->tree = (struct bt_tree){ .type = &rec_type, .store = &s->ops,
				    .root = &s->root, .blocksize = BS,
				    .maxrecs = MAXRECS, .owner = OWNER };
	return s;
}

static void sut_free(void *sut, void *env)
{
	(void)env;
	free(sut);
}

/* ---- the model: a sorted array ---- */

struct model {
	uint32_t n;
	uint64_t key[MAXKEYS], val[MAXKEYS];
};

/* Index of the first key >= k. */
static uint32_t lower_bound(const struct model *m, uint64_t k)
{
	uint32_t lo = 0, hi = m->n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (m->key[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int model_has(const struct model *m, uint64_t k)
{
	uint32_t i = lower_bound(m, k);

	return i < m->n && m->key[i] == k;
}

struct args {
	uint64_t key, val;
};

/* A key: often one the model holds (so deletes and updates hit). */
static void gen_key(struct props_trial *t, const void *model, void *args,
		    void *env)
{
	const struct model *m = model;
	struct args *a = args;

	(void)env;
	if (m->n && props_bool(t))
		a->key = m->key[props_below(t, m->n)];
	else
		a->key = props_int(t, 0, KEYSPACE - 1);
	a->val = props_int(t, 0, UINT32_MAX);
}

static int room(const void *model, void *env)
{
	(void)env;
	return ((const struct model *)model)->n < MAXKEYS;
}

static void next_insert(void *model, const void *args, void *env)
{
	struct model *m = model;
	const struct args *a = args;
	uint32_t i = lower_bound(m, a->key);

	(void)env;
	if (i < m->n && m->key[i] == a->key)
		return;
	memmove(&m->key[i + 1], &m->key[i], (m->n - i) * sizeof(m->key[0]));
	memmove(&m->val[i + 1], &m->val[i], (m->n - i) * sizeof(m->val[0]));
	m->key[i] = a->key;
	m->val[i] = a->val;
	m->n++;
}

static void next_delete(void *model, const void *args, void *env)
{
	struct model *m = model;
	uint32_t i = lower_bound(m, ((const struct args *)args)->key);

	(void)env;
	if (i >= m->n || m->key[i] != ((const struct args *)args)->key)
		return;
	memmove(&m->key[i], &m->key[i + 1], (m->n - i - 1) * sizeof(m->key[0]));
	memmove(&m->val[i], &m->val[i + 1], (m->n - i - 1) * sizeof(m->val[0]));
	m->n--;
}

static void next_update(void *model, const void *args, void *env)
{
	struct model *m = model;
	const struct args *a = args;
	uint32_t i = lower_bound(m, a->key);

	(void)env;
	if (i < m->n && m->key[i] == a->key)
		m->val[i] = a->val;
}

static int expect(struct props_trial *t, const char *what, int got, int want)
{
	if (got == want)
		return PROPS_PASS;
	props_note(t, "%s returned %d, the sorted array says %d", what, got,
		   want);
	return PROPS_FAIL;
}

static int run_insert(struct props_trial *t, void *sut, const void *model,
		      const void *args, void *env)
{
	const struct args *a = args;
	uint8_t rec[REC_SIZE];

	(void)env;
	mkrec(rec, a->key, a->val);
	return expect(t, "bt_insert", bt_insert(&((struct sut *)sut)->tree, rec),
		      model_has(model, a->key) ? -EEXIST : 0);
}

static int run_delete(struct props_trial *t, void *sut, const void *model,
		      const void *args, void *env)
{
	const struct args *a = args;

	(void)env;
	return expect(t, "bt_delete",
		      bt_delete(&((struct sut *)sut)->tree, a->key),
		      model_has(model, a->key) ? 0 : -ENOENT);
}

static int run_update(struct props_trial *t, void *sut, const void *model,
		      const void *args, void *env)
{
	const struct args *a = args;
	uint8_t rec[REC_SIZE];

	(void)env;
	mkrec(rec, a->key, a->val);
	return expect(t, "bt_update", bt_update(&((struct sut *)sut)->tree, rec),
		      model_has(model, a->key) ? 0 : -ENOENT);
}

/* A lookup's record against the array's answer (index or -1). */
static int check_found(struct props_trial *t, const char *what, int r,
		       const uint8_t *rec, const struct model *m, long i)
{
	if (i < 0)
		return expect(t, what, r, -ENOENT);
	if (expect(t, what, r, 0) != PROPS_PASS)
		return PROPS_FAIL;
	if (get_u64(rec) == m->key[i] && get_u64(rec + 8) == m->val[i])
		return PROPS_PASS;
	props_note(t, "%s found %llu=%llu, the sorted array says %llu=%llu",
		   what, (unsigned long long)get_u64(rec),
		   (unsigned long long)get_u64(rec + 8),
		   (unsigned long long)m->key[i], (unsigned long long)m->val[i]);
	return PROPS_FAIL;
}

static int run_lookup_le(struct props_trial *t, void *sut, const void *model,
			 const void *args, void *env)
{
	const struct model *m = model;
	uint64_t k = ((const struct args *)args)->key;
	uint32_t i = lower_bound(m, k);
	uint8_t rec[REC_SIZE];
	long want = i < m->n && m->key[i] == k ? (long)i : (long)i - 1;

	(void)env;
	return check_found(t, "bt_lookup_le",
			   bt_lookup_le(&((struct sut *)sut)->tree, k, rec),
			   rec, m, want);
}

static int run_lookup_ge(struct props_trial *t, void *sut, const void *model,
			 const void *args, void *env)
{
	const struct model *m = model;
	uint64_t k = ((const struct args *)args)->key;
	uint32_t i = lower_bound(m, k);
	uint8_t rec[REC_SIZE];

	(void)env;
	return check_found(t, "bt_lookup_ge",
			   bt_lookup_ge(&((struct sut *)sut)->tree, k, rec),
			   rec, m, i < m->n ? (long)i : -1);
}

struct walk {
	const struct model *m;
	uint32_t next;          /* the array index expected next */
	int bad;
};

static int walk_visit(void *arg, const void *rec)
{
	struct walk *w = arg;

	if (w->next >= w->m->n || get_u64(rec) != w->m->key[w->next] ||
	    get_u64((const uint8_t *)rec + 8) != w->m->val[w->next]) {
		w->bad = 1;
		return 1;
	}
	w->next++;
	return 0;
}

static int run_iterate(struct props_trial *t, void *sut, const void *model,
		       const void *args, void *env)
{
	const struct model *m = model;
	uint64_t k = ((const struct args *)args)->key;
	struct walk w = { m, lower_bound(m, k), 0 };
	int r = bt_iterate(&((struct sut *)sut)->tree, k, walk_visit, &w);

	(void)env;
	if (expect(t, "bt_iterate", r, 0) != PROPS_PASS)
		return PROPS_FAIL;
	if (!w.bad && w.next == m->n)
		return PROPS_PASS;
	props_note(t, "bt_iterate from %llu: record %u of the array's suffix "
		   "differs or is missing", (unsigned long long)k, w.next);
	return PROPS_FAIL;
}

static void print_kv(FILE *f, const char *name, const void *args)
{
	const struct args *a = args;

	fprintf(f, "%s %llu %llu", name, (unsigned long long)a->key,
		(unsigned long long)a->val);
}

static void print_k(FILE *f, const char *name, const void *args)
{
	fprintf(f, "%s %llu", name,
		(unsigned long long)((const struct args *)args)->key);
}

#define PRINTER(fn, how, word)                                  \
	static void fn(FILE *f, const void *a, void *env)       \
	{                                                       \
		(void)env;                                      \
		how(f, word, a);                                \
	}
PRINTER(p_insert, print_kv, "insert")
PRINTER(p_update, print_kv, "update")
PRINTER(p_delete, print_k, "delete")
PRINTER(p_le, print_k, "lookup_le")
PRINTER(p_ge, print_k, "lookup_ge")
PRINTER(p_iter, print_k, "iterate")

/* Inserts first in the list: the all-zero step is an insert. */
static const struct props_cmd cmds[] = {
	{ "insert", room, gen_key, NULL, next_insert, run_insert, p_insert },
	{ "delete", NULL, gen_key, NULL, next_delete, run_delete, p_delete },
	{ "update", NULL, gen_key, NULL, next_update, run_update, p_update },
	{ "lookup_le", NULL, gen_key, NULL, NULL, run_lookup_le, p_le },
	{ "lookup_ge", NULL, gen_key, NULL, NULL, run_lookup_ge, p_ge },
	{ "iterate", NULL, gen_key, NULL, NULL, run_iterate, p_iter },
};

/* After every step: the tree's own audit, its record count, the store. */
static int audit(struct props_trial *t, void *sut, const void *model,
		 void *env)
{
	struct sut *s = sut;
	uint64_t nrecs = 0;
	char why[160] = "";
	int r = bt_check(&s->tree, NULL, NULL, &nrecs, why, sizeof(why));

	(void)env;
	if (r) {
		props_note(t, "bt_check: %s", why);
		return PROPS_FAIL;
	}
	if (nrecs != ((const struct model *)model)->n) {
		props_note(t, "bt_check counts %llu records, the array %u",
			   (unsigned long long)nrecs,
			   ((const struct model *)model)->n);
		return PROPS_FAIL;
	}
	if (s->st.misuse || s->st.nheld) {
		props_note(t, "store misuse %u, blocks still held %u",
			   s->st.misuse, s->st.nheld);
		return PROPS_FAIL;
	}
	return PROPS_PASS;
}

static const struct props_sm sm_results = {
	.name = "btree", .model_size = sizeof(struct model),
	.args_size = sizeof(struct args), .sut_new = sut_new,
	.sut_free = sut_free, .cmds = cmds,
	.ncmds = sizeof(cmds) / sizeof(cmds[0]),
	.max_steps = 300, .avg_steps = 60,
};

static const struct props_sm sm_audited = {
	.name = "btree", .model_size = sizeof(struct model),
	.args_size = sizeof(struct args), .sut_new = sut_new,
	.sut_free = sut_free, .invariant = audit, .cmds = cmds,
	.ncmds = sizeof(cmds) / sizeof(cmds[0]),
	.max_steps = 300, .avg_steps = 60,
};

static const struct props_type steps_results = PROPS_SM_TYPE(&sm_results);
static const struct props_type steps_audited = PROPS_SM_TYPE(&sm_audited);

/* ---- bulk properties over key lists ---- */

/* Keys as 16-bit values: two bytes each, KEYSPACE-folded. */
static const struct props_buf_env keybytes = { .min = 0, .max = 2 * MAXKEYS,
					       .avg = 80 };
static const struct props_type keys_type = PROPS_BUF_TYPE(&keybytes);
static const struct props_buf_env maskbytes = { .min = 0, .max = MAXKEYS,
						.avg = 40 };
static const struct props_type mask_type = PROPS_BUF_TYPE(&maskbytes);

static uint64_t nth_key(const struct props_buf *b, size_t i)
{
	return ((uint64_t)b->data[2 * i] | (uint64_t)b->data[2 * i + 1] << 8) %
	       KEYSPACE;
}

static int destroy_frees_all(struct props_trial *t, void *keys, void *mask)
{
	const struct props_buf *k = keys, *m = mask;
	struct sut *s = sut_new(NULL);
	uint8_t rec[REC_SIZE];
	int r, res = PROPS_PASS;

	if (!s)
		return PROPS_ERROR;
	for (size_t i = 0; i < k->len / 2; i++) {
		mkrec(rec, nth_key(k, i), i);
		r = bt_insert(&s->tree, rec);
		if (r && r != -EEXIST) {
			props_note(t, "bt_insert: %d", r);
			res = PROPS_FAIL;
			goto out;
		}
	}
	/* delete the keys a mask byte marks (odd) */
	for (size_t i = 0; i < k->len / 2 && i < m->len; i++)
		if (m->data[i] & 1)
			bt_delete(&s->tree, nth_key(k, i));
	r = bt_destroy(&s->tree);
	if (r || s->st.in_use || s->root.blk || s->root.levels ||
	    s->st.misuse) {
		props_note(t, "bt_destroy %d left %u blocks allocated, root %llu "
			   "levels %u, store misuse %u", r, s->st.in_use,
			   (unsigned long long)s->root.blk, s->root.levels,
			   s->st.misuse);
		res = PROPS_FAIL;
	}
out:
	sut_free(s, NULL);
	return res;
}

static unsigned floor_log2(uint64_t n)
{
	return n ? 63u - (unsigned)__builtin_clzll(n) : 0u;
}

static int height_bounded(struct props_trial *t, void *keys, void *mask)
{
	const struct props_buf *k = keys, *m = mask;
	struct sut *s = sut_new(NULL);
	uint8_t rec[REC_SIZE];
	uint64_t nrecs = 0;
	unsigned bound;
	char why[160];
	int res = PROPS_PASS;

	if (!s)
		return PROPS_ERROR;
	for (size_t i = 0; i < k->len / 2; i++) {
		mkrec(rec, nth_key(k, i), i);
		bt_insert(&s->tree, rec);
	}
	for (size_t i = 0; i < k->len / 2 && i < m->len; i++)
		if (m->data[i] & 1)
			bt_delete(&s->tree, nth_key(k, i));
	if (bt_check(&s->tree, NULL, NULL, &nrecs, why, sizeof(why))) {
		props_note(t, "bt_check: %s", why);
		res = PROPS_FAIL;
	} else {
		/*
		 * Every non-root node holds >= MAXRECS/2 = 2 entries and an
		 * interior root >= 2, so L levels need >= 2^L records.
		 */
		bound = nrecs < 2 ? 1 : floor_log2(nrecs);
		if (s->root.levels > bound) {
			props_note(t, "%llu records in %u levels; at most %u "
				   "fit the minimum fill",
				   (unsigned long long)nrecs, s->root.levels,
				   bound);
			res = PROPS_FAIL;
		}
	}
	sut_free(s, NULL);
	return res;
}

static const struct props_prop props[] = {
	{
		.name = "btree_ops_match_sorted_array",
		.doc = "insert, delete, update, lookups and iteration return "
		       "what a sorted array says",
		.cfg = { .prop1 = props_sm_check, .types = { &steps_results } },
	},
	{
		.name = "btree_check_clean_after_every_op",
		.doc = "after every op bt_check passes, counts the array's "
		       "records, and the store saw no misuse",
		.cfg = { .prop1 = props_sm_check, .types = { &steps_audited } },
	},
	{
		.name = "btree_destroy_frees_every_node",
		.doc = "after inserts and deletes, bt_destroy frees every block",
		.cfg = { .prop2 = destroy_frees_all,
			 .types = { &keys_type, &mask_type } },
	},
	{
		.name = "btree_height_within_fill_bound",
		.doc = "a tree of n records has at most max(1, log2 n) levels "
		       "(minimum fill 2 at fan-out 4)",
		.cfg = { .prop2 = height_bounded,
			 .types = { &keys_type, &mask_type } },
	},
};

const struct props_suite props_suite_btree = {
	.name = "btree",
	.doc = "the B+tree against a sorted array (fan-out 4)",
	PROPS_LIST(props),
};
