/*
 * suite_cow.c - seed path (c), end-COW remap: the naive twin, the
 * optimized version and its forced fallback side by side on three
 * reflink filesystems that get the same generated case (block size,
 * maximum extent length, a sequence of writes, clones, dedupes, zeroed
 * ranges and always-COW flags over two files).
 *
 *     data fork   |<------ G ------>|        naive     unmap, map C
 *     COW fork         |<- C ->|             optimized rewrite G in place
 *                                            fallback  as naive (forced)
 *
 * Properties:
 *   cow_twins_agree      after every step the three return the same,
 *                        and have the same bytes, sizes, block counts,
 *                        free space (counting the data-fork B+tree nodes
 *                        each allocated as free: delete + insert and an
 *                        update in place may leave trees of different
 *                        shapes), refcount records, COW forks and
 *                        canonical (fully merged) data-fork lists; every
 *                        audit passes (the soak, `fsoracle run --mkfs
 *                        reflink=1`, checks the bytes against the model)
 *   cow_staging_is_sane  no written staging is left after a step, no
 *                        block of unwritten staging is mapped by a data
 *                        fork (never remapped); the naive twin counts one
 *                        intent and roll per remap, the fallback counts
 *                        every remap as a fallback, the optimized one an
 *                        intent only for a fallback it took
 */
#include "props/props.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw.h"
#include "ref/ref.h"

#define MAXSTEPS 8
#define SPAN 24                /* files reach SPAN blocks              */
#define DEVSPEC "mem:2m"
#define COWP (1u << REF_PATH_COW_END)
#define MAXEXT 64              /* extents a listing keeps              */

enum { W_NAIVE, W_OPT, W_FALLBACK, NWAYS };
static const char *const way_name[NWAYS] = { "naive", "optimized",
					     "fallback" };
enum { ST_WRITE, ST_CLONE, ST_DEDUPE, ST_ZERO, ST_COWFLAG, NSTEPKINDS };
static const char *const step_name[NSTEPKINDS] = {
	"pwrite", "reflink", "dedupe", "fzero", "chattr +o" };

struct cow_step { unsigned kind, file, src; uint64_t off, len, soff; };

struct cow_case {
	uint32_t bs, maxext;
	struct cow_step step[MAXSTEPS];
	unsigned nsteps;
};

static int case_alloc(struct props_trial *t, void *env, void **out)
{
	struct cow_case *c = calloc(1, sizeof(*c));
	struct props_many m = PROPS_MANY(1, MAXSTEPS, 5);

	(void)env;
	if (!c)
		return PROPS_ERROR;
	c->bs = 512u << props_below(t, 2);
	c->maxext = props_below(t, 2) ? 0 : 2 + (uint32_t)props_below(t, 7);
	while (props_more(t, &m)) {
		struct cow_step *st = &c->step[c->nsteps++];
		uint64_t max = (uint64_t)SPAN * c->bs;

		st->kind = (unsigned)props_below(t, NSTEPKINDS);
		st->file = (unsigned)props_below(t, 2);
		st->src = (unsigned)props_below(t, 2);
		if (st->kind == ST_CLONE || st->kind == ST_DEDUPE) {
			/* block-aligned, as the remap rules want */
			st->soff = props_below(t, SPAN) * c->bs;
			st->off = props_below(t, SPAN) * c->bs;
			st->len = (1 + props_below(t, SPAN / 2)) * c->bs;
		} else {
			st->off = props_below(t, max);
			st->len = 1 + props_below(t, max - st->off);
		}
	}
	*out = c;
	return PROPS_PASS;
}

static void case_print(FILE *f, const void *inst, void *env)
{
	const struct cow_case *c = inst;

	(void)env;
	fprintf(f, "mkfs reflink=1,bs=%u,maxext=%u, files f0 f1:\n", c->bs,
		c->maxext);
	for (unsigned i = 0; i < c->nsteps; i++) {
		const struct cow_step *s = &c->step[i];

		if (s->kind == ST_CLONE || s->kind == ST_DEDUPE)
			fprintf(f, "  %s f%u %llu <- f%u %llu, %llu bytes\n",
				step_name[s->kind], s->file,
				(unsigned long long)s->off, s->src,
				(unsigned long long)s->soff,
				(unsigned long long)s->len);
		else
			fprintf(f, "  %s f%u %llu %llu\n", step_name[s->kind],
				s->file, (unsigned long long)s->off,
				(unsigned long long)s->len);
	}
}

static const struct props_type case_type = {
	.name = "cow case", .alloc = case_alloc, .print = case_print,
};

/* ---- one filesystem per twin, and what is compared ---- */

struct listing {
	struct ref_extent e[MAXEXT];
	int n;
	int merged;                    /* 1: fully merged (canonical)      */
};

struct state {
	struct ref_stat st[2];
	uint64_t free;
	struct listing data[2], fork[2];
	uint64_t refs[MAXEXT][3];
	int nrefs;
};

struct twin {
	struct hw_dev *dev;
	struct ref_fs *fs;
	uint64_t ino[2];
	struct state s;
};

static int twin_open(struct twin *w, const struct cow_case *c, int way)
{
	struct ref_mkfs_opts mo = { .blocksize = c->bs, .inodes = 16,
				    .btree_maxrecs = 4, .reflink = 1,
				    .max_extlen = c->maxext };
	struct ref_mount_opts mnt = {
		.naive = way == W_NAIVE ? COWP : 0,
		.fallback = way == W_FALLBACK ? COWP : 0,
		.pagecache = REF_PAGECACHE_OFF,
	};
	int err;

	memset(w, 0, sizeof(*w));
	err = hw_open(DEVSPEC, &w->dev, NULL, 0);
	if (!err)
		err = ref_mkfs(w->dev, &mo);
	if (!err)
		err = ref_mount(w->dev, &mnt, &w->fs);
	if (!err)
		err = ref_create(w->fs, "f0", &w->ino[0]);
	if (!err)
		err = ref_create(w->fs, "f1", &w->ino[1]);
	return err;
}

static void twin_close(struct twin *w)
{
	if (w->fs)
		ref_abandon(w->fs);
	hw_close(w->dev);
}

/* Append, merging with the previous when contiguous (merged: no cap). */
static int list_one(void *arg, const struct ref_extent *e)
{
	struct listing *l = arg;
	struct ref_extent *p = l->n ? &l->e[l->n - 1] : NULL;

	if (l->merged && p && p->fileoff + p->len == e->fileoff &&
	    p->startblk + p->len == e->startblk && p->state == e->state) {
		p->len += e->len;
		return 0;
	}
	if (l->n == MAXEXT)
		return -ENOSPC;
	/* field by field: the padding stays as capture() zeroed it */
	l->e[l->n].fileoff = e->fileoff;
	l->e[l->n].startblk = e->startblk;
	l->e[l->n].len = e->len;
	l->e[l->n++].state = e->state;
	return 0;
}

static int ref_one(void *arg, uint64_t start, uint64_t len, uint32_t count)
{
	struct state *s = arg;

	if (s->nrefs == MAXEXT)
		return -ENOSPC;
	s->refs[s->nrefs][0] = start;
	s->refs[s->nrefs][1] = len;
	s->refs[s->nrefs++][2] = count;
	return 0;
}

static int capture(struct twin *w)
{
	struct ref_statfs sf;
	int err = ref_statfs(w->fs, &sf);

	const struct bt_stats *bt = &ref_counters(w->fs)->bt;

	memset(&w->s, 0, sizeof(w->s));
	/* data-fork B+tree nodes aside: the twins' record operations differ
	 * (delete + insert against update), so may their trees' shapes */
	w->s.free = sf.free_blocks + bt->node_allocs - bt->node_frees;
	for (int f = 0; f < 2 && !err; f++) {
		w->s.data[f].merged = 1;
		err = ref_stat(w->fs, w->ino[f], &w->s.st[f]);
		if (!err)
			err = ref_bmap(w->fs, w->ino[f], list_one, &w->s.data[f]);
		if (!err)
			err = ref_cow_bmap(w->fs, w->ino[f], list_one,
					   &w->s.fork[f]);
	}
	return err ? err : ref_refcount_walk(w->fs, ref_one, &w->s);
}

static void step_bytes(uint8_t *buf, uint64_t off, uint64_t len, unsigned i)
{
	for (uint64_t k = 0; k < len; k++)
		buf[k] = (uint8_t)((off + k) * 7 + i * 61) | 1;
}

/* One step on one twin; its result goes to *res (0 or -errno). */
static int apply(struct twin *w, const struct cow_step *s, unsigned i,
		 uint8_t *buf, int64_t *res)
{
	struct ref_fs *fs = w->fs;
	uint64_t f = w->ino[s->file], src = w->ino[s->src];

	switch (s->kind) {
	case ST_WRITE:
		step_bytes(buf, s->off, s->len, i);
		*res = ref_pwrite(fs, f, buf, s->len, s->off);
		break;
	case ST_CLONE:
		*res = ref_clone_range(fs, f, s->off, src, s->soff, s->len);
		break;
	case ST_DEDUPE:
		*res = ref_dedupe_range(fs, f, s->off, src, s->soff, s->len);
		break;
	case ST_ZERO:
		*res = ref_fallocate(fs, f, REF_FALLOC_ZERO_RANGE |
				     REF_FALLOC_KEEP_SIZE, s->off, s->len);
		break;
	default:
		*res = ref_set_flags(fs, f, REF_FLAG_COW, 0);
		break;
	}
	return *res < 0 && *res != -EINVAL ? (int)*res : 0;
}

struct cow_run {
	struct twin w[NWAYS];
	uint8_t *buf, *a, *b;
};

static void run_free(struct cow_run *r)
{
	for (int k = 0; k < NWAYS; k++)
		twin_close(&r->w[k]);
	free(r->buf);
	free(r->a);
	free(r->b);
}

static int same_state(struct props_trial *t, const struct state *x,
		      const struct state *y, const char *yname, unsigned step)
{
	const char *what = NULL;

	if (memcmp(x->st, y->st, sizeof(x->st)))
		what = "sizes or block counts";
	else if (x->free != y->free)
		what = "free blocks (data-fork B+tree nodes aside)";
	else if (memcmp(x->data, y->data, sizeof(x->data)))
		what = "canonical data-fork extents";
	else if (memcmp(x->fork, y->fork, sizeof(x->fork)))
		what = "COW forks";
	else if (x->nrefs != y->nrefs ||
		 memcmp(x->refs, y->refs, sizeof(x->refs)))
		what = "refcount records";
	if (what)
		props_note(t, "after step %u: %s differ between naive and %s",
			   step + 1, what, yname);
	return what ? PROPS_FAIL : PROPS_PASS;
}

/* Files' bytes equal across twins. */
static int same_bytes(struct props_trial *t, struct cow_run *r, unsigned step)
{
	uint64_t max = (uint64_t)SPAN * 2 * 4096;

	for (int f = 0; f < 2; f++) {
		int64_t n = ref_pread(r->w[0].fs, r->w[0].ino[f], r->a, max, 0);

		for (int k = 1; k < NWAYS; k++) {
			int64_t m = ref_pread(r->w[k].fs, r->w[k].ino[f], r->b,
					      max, 0);

			if (n < 0 || m != n || memcmp(r->a, r->b, (size_t)n)) {
				props_note(t, "after step %u: f%d reads "
					   "differently on %s", step + 1, f,
					   way_name[k]);
				return PROPS_FAIL;
			}
		}
	}
	return PROPS_PASS;
}

static int run_case(struct props_trial *t, const struct cow_case *c,
		    struct cow_run *r, int (*check)(struct props_trial *,
						    struct cow_run *, unsigned))
{
	int res = PROPS_ERROR;

	memset(r, 0, sizeof(*r));
	r->buf = malloc((size_t)SPAN * 4096);
	r->a = malloc((size_t)SPAN * 2 * 4096);
	r->b = malloc((size_t)SPAN * 2 * 4096);
	if (!r->buf || !r->a || !r->b)
		return PROPS_ERROR;
	for (int k = 0; k < NWAYS; k++)
		if (twin_open(&r->w[k], c, k))
			return PROPS_ERROR;
	for (unsigned i = 0; i < c->nsteps; i++) {
		int64_t res0 = 0, resk;

		for (int k = 0; k < NWAYS; k++) {
			if (apply(&r->w[k], &c->step[i], i, r->buf, &resk)) {
				props_note(t, "%s: step %u failed: %s",
					   way_name[k], i + 1,
					   ref_strerror((int)resk));
				return PROPS_FAIL;
			}
			if (k == 0)
				res0 = resk;
			else if (resk != res0) {
				props_note(t, "step %u returned %lld naive, "
					   "%lld %s", i + 1, (long long)res0,
					   (long long)resk, way_name[k]);
				return PROPS_FAIL;
			}
			if (ref_audit(r->w[k].fs, NULL, NULL)) {
				props_note(t, "%s: audit fails after step %u",
					   way_name[k], i + 1);
				return PROPS_FAIL;
			}
			if (capture(&r->w[k]))
				return PROPS_ERROR;
		}
		res = check(t, r, i);
		if (res != PROPS_PASS)
			return res;
	}
	return PROPS_PASS;
}

static int agree_step(struct props_trial *t, struct cow_run *r, unsigned i)
{
	int res = same_bytes(t, r, i);

	for (int k = 1; k < NWAYS && res == PROPS_PASS; k++)
		res = same_state(t, &r->w[0].s, &r->w[k].s, way_name[k], i);
	return res;
}

static int twins_agree(struct props_trial *t, void *arg)
{
	struct cow_run r;
	int res = run_case(t, arg, &r, agree_step);

	run_free(&r);
	return res;
}

/* Is device block range [b, b+n) inside any extent of l? */
static int overlaps(const struct listing *l, uint64_t b, uint64_t n)
{
	for (int i = 0; i < l->n; i++)
		if (b < l->e[i].startblk + l->e[i].len && l->e[i].startblk < b + n)
			return 1;
	return 0;
}

static int staging_step(struct props_trial *t, struct cow_run *r, unsigned i)
{
	for (int k = 0; k < NWAYS; k++) {
		const struct state *s = &r->w[k].s;
		const struct ref_counters *c = ref_counters(r->w[k].fs);

		for (int f = 0; f < 2; f++)
			for (int j = 0; j < s->fork[f].n; j++) {
				const struct ref_extent *e = &s->fork[f].e[j];

				if (e->state != REF_EXT_UNWRITTEN) {
					props_note(t, "%s, step %u: written "
						   "staging left in f%d's COW "
						   "fork", way_name[k], i + 1, f);
					return PROPS_FAIL;
				}
				if (overlaps(&s->data[0], e->startblk, e->len) ||
				    overlaps(&s->data[1], e->startblk, e->len)) {
					props_note(t, "%s, step %u: unwritten "
						   "staging at block %llu is "
						   "mapped", way_name[k], i + 1,
						   (unsigned long long)e->startblk);
					return PROPS_FAIL;
				}
			}
		if ((k == W_NAIVE && (c->cow_intents != c->cow_remaps ||
				      c->cow_tx_rolls != c->cow_remaps ||
				      c->cow_fallbacks)) ||
		    (k == W_FALLBACK && c->cow_fallbacks != c->cow_remaps) ||
		    (k == W_OPT && c->cow_intents != c->cow_fallbacks)) {
			props_note(t, "%s, step %u: %llu remaps, %llu intents, "
				   "%llu rolls, %llu fallbacks", way_name[k],
				   i + 1, (unsigned long long)c->cow_remaps,
				   (unsigned long long)c->cow_intents,
				   (unsigned long long)c->cow_tx_rolls,
				   (unsigned long long)c->cow_fallbacks);
			return PROPS_FAIL;
		}
	}
	return PROPS_PASS;
}

static int staging_is_sane(struct props_trial *t, void *arg)
{
	struct cow_run r;
	int res = run_case(t, arg, &r, staging_step);

	run_free(&r);
	return res;
}

static const struct props_prop props[] = {
	{
		.name = "cow_twins_agree",
		.doc = "naive, optimized and fallback end-COW leave the same "
		       "bytes, sizes, block counts, free space, refcounts, COW "
		       "forks and canonical extent lists; audits pass",
		.cfg = { .prop1 = twins_agree, .types = { &case_type } },
	},
	{
		.name = "cow_staging_is_sane",
		.doc = "no written staging outlives a step, unwritten staging "
		       "is never mapped, and each twin counts its intents, "
		       "rolls and fallbacks as its path does",
		.cfg = { .prop1 = staging_is_sane, .types = { &case_type } },
	},
};

const struct props_suite props_suite_cow = {
	.name = "cow",
	.doc = "seed path (c): end-COW remap, naive vs optimized vs fallback",
	.props = props,
	.nprops = sizeof(props) / sizeof(props[0]),
};
