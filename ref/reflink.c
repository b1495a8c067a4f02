/*
 * reflink.c - shared blocks: the refcount and COW staging trees on the
 * journaled buffer cache, freeing through the refcount, the audit of
 * both, and clone and dedupe range (reflink.h has the model).
 *
 * Freeing a data-fork block of a plain file drops one owner: blocks that
 * other files still map stay allocated, the rest go back to the
 * allocator.  Cloning adds one owner to every written source block and
 * maps it into the destination, after punching the destination range:
 *
 *   src  | A  A  A |  hole  | B  B |        refcount: A, B  2 owners
 *   dst  | a  a |  x  x  x  x  x  | c |   ->
 *   dst  | a  a |  A  A  A |  hole  | B  B |  (x freed, c past the range)
 *
 * The superblock holds both roots; every change to a tree logs them in
 * the same transaction (reflink_log_roots), so a cut never separates a
 * tree from its root.
 */
#include "ref/reflink.h"

#include "base/radix.h"
#include "ref/refcount.h"
#include "ref/pcache.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ---- the trees ---- */

#define STAGE_REC_SIZE 16   /* u64 start, u32 len, u32 pad */

static uint64_t stage_key(const void *rec)
{
	return get64(rec);
}

static void stage_print(const void *rec, char *buf, size_t len)
{
	const uint8_t *r = rec;

	snprintf(buf, len, "[%llu+%u]", (unsigned long long)get64(r),
		 get32(r + 8));
}

static const struct bt_type stage_bt_type = {
	.name = "cow staging",
	.magic = MAGIC_COWSBT,
	.rec_size = STAGE_REC_SIZE,
	.rec_key = stage_key,
	.rec_print = stage_print,
};

static void fs_tree(struct ref_fs *fs, struct bt_tree *t,
		    const struct bt_type *type, struct bt_root *root)
{
	memset(t, 0, sizeof(*t));
	t->type = type;
	t->store = &fs->bt_store;
	t->root = root;
	t->blocksize = fs->bs;
	t->maxrecs = fs->maxrecs;
	t->owner = 0;
	t->stats = &fs->rl->tree_stats;
}

void refc_tree(struct ref_fs *fs, struct bt_tree *t)
{
	fs_tree(fs, t, &refcount_bt_type, &fs->rl->refc);
}

void stage_tree(struct ref_fs *fs, struct bt_tree *t)
{
	fs_tree(fs, t, &stage_bt_type, &fs->rl->stage);
}

static bool root_eq(const struct bt_root *a, const struct bt_root *b)
{
	return a->blk == b->blk && a->levels == b->levels;
}

int reflink_log_roots(struct ref_fs *fs)
{
	struct reflink *rl = fs->rl;
	struct rbuf *b;
	int err;

	if (root_eq(&rl->refc, &rl->refc_sb) && root_eq(&rl->stage, &rl->stage_sb))
		return 0;
	err = buf_read(fs, 0, MAGIC_SUPER, &b);
	if (err)
		return err;
	put64(b->data + SB_REFC_ROOT, rl->refc.blk);
	put32(b->data + SB_REFC_LEVELS, rl->refc.levels);
	put64(b->data + SB_COWS_ROOT, rl->stage.blk);
	put32(b->data + SB_COWS_LEVELS, rl->stage.levels);
	buf_dirty(fs, b);
	buf_put(fs, b);
	rl->refc_sb = rl->refc;
	rl->stage_sb = rl->stage;
	return 0;
}

/* ---- mount and unmount ---- */

static int root_ok(const struct ref_fs *fs, const struct bt_root *r)
{
	if (!r->blk)
		return r->levels == 0;
	return r->blk >= fs->data && r->blk < fs->total && r->levels >= 1 &&
	       r->levels <= BT_MAX_LEVELS;
}

int reflink_mount(struct ref_fs *fs)
{
	struct bt_root refc, stage;
	struct rbuf *b;
	uint8_t *sb;
	bool on;
	int err = buf_read(fs, 0, MAGIC_SUPER, &b);

	if (err)
		return err;
	sb = b->data;
	refc = (struct bt_root){ get64(sb + SB_REFC_ROOT), get32(sb + SB_REFC_LEVELS) };
	stage = (struct bt_root){ get64(sb + SB_COWS_ROOT), get32(sb + SB_COWS_LEVELS) };
	on = get64(sb + SB_FEATURES) & FEAT_REFLINK;
	buf_put(fs, b);

	if (!on && (refc.blk || refc.levels || stage.blk || stage.levels)) {
		ref_report(fs, "superblock: refcount fields set without reflink");
		return -EFSCORRUPTED;
	}
	if (!on)
		return 0;
	if (!root_ok(fs, &refc) || !root_ok(fs, &stage)) {
		ref_report(fs, "superblock: bad refcount or COW staging tree root");
		return -EFSCORRUPTED;
	}
	if (fs->rtdev || (get64(sb + SB_FEATURES) & FEAT_REALTIME)) {
		ref_report(fs, "superblock: reflink with a realtime device");
		return -EFSCORRUPTED;
	}
	fs->rl = calloc(1, sizeof(*fs->rl));
	if (!fs->rl)
		return -ENOMEM;
	fs->rl->forks = calloc(fs->ninodes, sizeof(*fs->rl->forks));
	if (!fs->rl->forks) {
		free(fs->rl);
		fs->rl = NULL;
		return -ENOMEM;
	}
	fs->rl->refc = fs->rl->refc_sb = refc;
	fs->rl->stage = fs->rl->stage_sb = stage;
	return 0;
}

void reflink_unmount(struct ref_fs *fs)
{
	if (!fs->rl)
		return;
	for (uint32_t i = 0; i < fs->ninodes; i++)
		free(fs->rl->forks[i].v);
	free(fs->rl->forks);
	free(fs->rl->bounce);
	free(fs->rl);
	fs->rl = NULL;
}

/*
 * Free every staging extent the tree lists, each record in its own step:
 * at mount these are what a cut left behind (no fork is in memory yet);
 * at unmount, what the forks still hold.
 */
static int free_all_staging(struct ref_fs *fs)
{
	struct bt_tree t;
	uint8_t rec[STAGE_REC_SIZE];
	int err;

	stage_tree(fs, &t);
	while ((err = bt_lookup_ge(&t, 0, rec)) == 0) {
		uint64_t start = get64(rec), len = get32(rec + 8);

		err = bt_delete(&t, start);
		if (!err)
			err = alloc_free(fs, start, len);
		if (!err)
			err = reflink_log_roots(fs);
		if (!err)
			err = tx_maybe_roll(fs);
		if (err)
			return err;
	}
	if (err != -ENOENT)
		return err;
	for (uint32_t i = 0; i < fs->ninodes; i++)
		fs->rl->forks[i].n = 0;
	return 0;
}

int reflink_recover(struct ref_fs *fs)
{
	return fs->rl ? free_all_staging(fs) : 0;
}

int reflink_unmount_flush(struct ref_fs *fs)
{
	return fs->rl ? free_all_staging(fs) : 0;
}

/* ---- freeing and sharing ---- */

struct free_ctx {
	struct ref_fs *fs;
	const struct ref_inode *ip;
};

static int free_unowned(void *arg, uint64_t start, uint64_t len)
{
	struct free_ctx *c = arg;
	int err = forget_file_blocks(c->fs, c->ip, start, len);

	return err ? err : alloc_free(c->fs, start, len);
}

int reflink_free_file(struct ref_fs *fs, const struct ref_inode *ip,
		      uint64_t start, uint64_t len)
{
	struct free_ctx c = { fs, ip };
	struct bt_tree t;
	int err;

	refc_tree(fs, &t);
	err = refcount_adjust(&t, start, len, -1, free_unowned, &c);
	return err ? err : reflink_log_roots(fs);
}

int reflink_find_shared(struct ref_fs *fs, uint64_t start, uint64_t len,
			uint64_t *sstart, uint64_t *slen)
{
	struct bt_tree t;

	refc_tree(fs, &t);
	return refcount_find_shared(&t, start, len, sstart, slen);
}

/* ---- the audit ---- */

struct point {
	uint64_t at;
	int delta;
};

/*
 * The 2n ends of the runs as points in order of place, where a run ends
 * before one starts (-1 before +1): the starts and the ends sorted apart
 * (radix.h) and merged.  A qsort of the points through a comparison
 * pointer was a quarter of a reflink soak's time, at every audit.
 * 0 or -ENOMEM.
 */
static int sweep_points(const struct alloc_run *runs, size_t n,
			struct point *pts)
{
	uint64_t *st = malloc((2 * n + 1) * sizeof(*st)), *en = st + n;
	size_t i = 0, j = 0;
	int err;

	if (!st)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		st[k] = runs[k].start;
		en[k] = runs[k].start + runs[k].len;
	}
	err = radix_sort_u64(st, n);
	if (!err)
		err = radix_sort_u64(en, n);
	while (!err && (i < n || j < n)) {
		if (j < n && (i == n || en[j] <= st[i]))
			*pts++ = (struct point){ en[j++], -1 };
		else
			*pts++ = (struct point){ st[i++], 1 };
	}
	free(st);
	return err;
}

static int run_cmp(const void *x, const void *y)
{
	const struct alloc_run *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

struct runs {
	struct alloc_run *v;
	size_t n, cap;
};

static int runs_push(struct runs *r, uint64_t start, uint64_t len)
{
	if (r->n == r->cap) {
		size_t c = r->cap ? r->cap * 2 : 64;
		struct alloc_run *p = realloc(r->v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->v = p;
		r->cap = c;
	}
	r->v[r->n++] = (struct alloc_run){ start, len };
	return 0;
}

/* The records the refcount tree must hold: equal counts merged. */
struct want {
	struct refc_rec *v;
	size_t n, i;
	struct ref_fs *fs;
	bool bad;
};

static int want_push(struct want *w, size_t *cap, uint64_t start, uint64_t end,
		     uint64_t count)
{
	if (w->n && w->v[w->n - 1].start + w->v[w->n - 1].len == start &&
	    w->v[w->n - 1].count == count &&
	    w->v[w->n - 1].len + (end - start) <= REFC_MAX_LEN) {
		w->v[w->n - 1].len += (uint32_t)(end - start);
		return 0;
	}
	if (w->n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct refc_rec *p = realloc(w->v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		w->v = p;
		*cap = c;
	}
	w->v[w->n++] = (struct refc_rec){ start, (uint32_t)(end - start),
					  (uint32_t)count };
	return 0;
}

static void refc_mismatch(struct want *w, const struct refc_rec *have,
			  const struct refc_rec *need)
{
	if (have && need)
		ref_report(w->fs, "refcount: tree has [%llu+%u]x%u where the data "
			   "forks give [%llu+%u]x%u",
			   (unsigned long long)have->start, have->len, have->count,
			   (unsigned long long)need->start, need->len, need->count);
	else if (have)
		ref_report(w->fs, "refcount: tree has [%llu+%u]x%u, the data forks "
			   "share none of it", (unsigned long long)have->start,
			   have->len, have->count);
	else
		ref_report(w->fs, "refcount: blocks %llu+%u have %u owners, the "
			   "tree has no record", (unsigned long long)need->start,
			   need->len, need->count);
	w->bad = true;
}

static int visit_refc(void *arg, const struct refc_rec *r)
{
	struct want *w = arg;

	if (w->i >= w->n) {
		refc_mismatch(w, r, NULL);
		return 0;
	}
	if (memcmp(r, &w->v[w->i], sizeof(*r)))
		refc_mismatch(w, r, &w->v[w->i]);
	w->i++;
	return 0;
}

static int node_run(void *arg, uint64_t blk)
{
	return runs_push(arg, blk, 1);
}

struct stage_visit {
	struct runs *out, *recs;
};

static int visit_stage(void *arg, const void *rec)
{
	struct stage_visit *v = arg;
	int err = runs_push(v->out, get64(rec), get32((const uint8_t *)rec + 8));

	return err ? err : runs_push(v->recs, get64(rec),
				     get32((const uint8_t *)rec + 8));
}

/* Sort and merge touching runs in place (block sets compare equal). */
static void runs_canon(struct runs *r)
{
	size_t k = 0;

	if (r->n)
		qsort(r->v, r->n, sizeof(*r->v), run_cmp);
	for (size_t i = 0; i < r->n; i++) {
		if (k && r->v[k - 1].start + r->v[k - 1].len == r->v[i].start)
			r->v[k - 1].len += r->v[i].len;
		else
			r->v[k++] = r->v[i];
	}
	r->n = k;
}

/* The staging tree must list exactly the blocks the COW forks hold. */
static bool check_forks(struct ref_fs *fs, struct runs *recs, int *err)
{
	struct runs forks = { 0 };
	bool bad = false;

	*err = 0;
	for (uint32_t i = 0; i < fs->ninodes && !*err; i++)
		for (size_t j = 0; j < fs->rl->forks[i].n && !*err; j++)
			*err = runs_push(&forks, fs->rl->forks[i].v[j].startblk,
					 fs->rl->forks[i].v[j].len);
	if (*err) {
		free(forks.v);
		return false;
	}
	runs_canon(&forks);
	runs_canon(recs);
	if (forks.n != recs->n ||
	    (forks.n && memcmp(forks.v, recs->v, forks.n * sizeof(*forks.v)))) {
		ref_report(fs, "COW staging tree lists %zu runs of blocks, the COW "
			   "forks hold %zu other ones", recs->n, forks.n);
		bad = true;
	}
	free(forks.v);
	return bad;
}

int reflink_audit(struct ref_fs *fs, const struct alloc_run *runs, size_t n,
		  struct alloc_run **out, size_t *nout)
{
	struct point *pts = malloc((2 * n + 1) * sizeof(*pts));
	struct runs uni = { 0 }, recs = { 0 };
	struct want w = { .fs = fs };
	struct stage_visit sv = { &uni, &recs };
	size_t wcap = 0;
	int64_t depth = 0;
	struct bt_tree t;
	char why[200] = "";
	int err = 0;

	if (!pts)
		return -ENOMEM;
	err = sweep_points(runs, n, pts);
	if (err) {
		free(pts);
		return err;
	}
	/* Sweep: between two points the owner count is constant. */
	for (size_t i = 0; n && i + 1 < 2 * n && !err; i++) {
		uint64_t a = pts[i].at, b = pts[i + 1].at;

		depth += pts[i].delta;
		if (a == b || depth == 0)
			continue;
		if (uni.n && uni.v[uni.n - 1].start + uni.v[uni.n - 1].len == a)
			uni.v[uni.n - 1].len += b - a;
		else
			err = runs_push(&uni, a, b - a);
		if (!err && depth >= 2)
			err = want_push(&w, &wcap, a, b, (uint64_t)depth);
	}
	free(pts);
	refc_tree(fs, &t);
	if (!err)
		err = bt_check(&t, node_run, &uni, NULL, why, sizeof(why));
	if (!err)
		err = refcount_check(&t, fs->total, visit_refc, &w, why,
				     sizeof(why));
	if (!err)
		for (; w.i < w.n; w.i++)
			refc_mismatch(&w, NULL, &w.v[w.i]);
	if (err == -EFSCORRUPTED) {
		ref_report(fs, "refcount tree: %s", why);
		w.bad = true;
		err = 0;
	}
	stage_tree(fs, &t);
	if (!err)
		err = bt_check(&t, node_run, &uni, NULL, why, sizeof(why));
	if (!err)
		err = bt_iterate(&t, 0, visit_stage, &sv);
	if (err == -EFSCORRUPTED) {
		ref_report(fs, "COW staging tree: %s", why);
		w.bad = true;
		err = 0;
	}
	/* Read-only (fsck of an image): leftovers are the next mount's. */
	if (!err && !fs->rdonly)
		w.bad |= check_forks(fs, &recs, &err);
	free(w.v);
	free(recs.v);
	if (err) {
		free(uni.v);
		return err;
	}
	if (uni.n)
		qsort(uni.v, uni.n, sizeof(*uni.v), run_cmp);
	*out = uni.v;
	*nout = uni.n;
	return w.bad ? -EFSCORRUPTED : 0;
}

int ref_refcount_walk(struct ref_fs *fs, ref_refcount_fn fn, void *arg)
{
	uint8_t raw[REFC_REC_SIZE];
	struct bt_tree t;
	uint64_t at = 0;
	int err;

	FS_LIVE(fs);
	if (!fs->rl)
		return -EOPNOTSUPP;
	refc_tree(fs, &t);
	while ((err = bt_lookup_ge(&t, at, raw)) == 0) {
		uint64_t start = get64(raw), len = get32(raw + 8);

		err = fn(arg, start, len, get32(raw + 12));
		if (err)
			return err < 0 ? err : 0;
		at = start + len;
	}
	return err == -ENOENT ? 0 : err;
}

/* ---- clone and dedupe ---- */

/*
 * generic_remap_checks, as the model has them (harness/target_model.c):
 * the same answers in the same order, so the checker compares like with
 * like.  *lenp: the length, 0 resolved to the source's EOF.
 */
static int remap_checks(struct ref_fs *fs, struct ref_inode *dip, uint64_t doff,
			struct ref_inode *sip, uint64_t soff, uint64_t *lenp,
			bool dedupe)
{
	uint64_t len = *lenp, mask = fs->bs - 1;

	if (!fs->rl || inode_is_rt(dip) || inode_is_rt(sip))
		return -EOPNOTSUPP;
	if (fs->rdonly)
		return -EROFS;
	if (soff > sip->size || (dedupe && doff > dip->size))
		return -EINVAL;
	if (len == 0)
		len = sip->size - soff;
	if (soff + len > sip->size || soff + len < soff)
		return -EINVAL;
	if (dedupe && doff + len > dip->size)
		return -EINVAL;
	if (doff + len > REF_MAX_BYTES || doff + len < doff)
		return -EFBIG;
	if ((soff & mask) || (doff & mask))
		return -EINVAL;
	if ((len & mask) && (soff + len != sip->size || doff + len < dip->size))
		return -EINVAL;
	if (dip == sip && soff < doff + len && doff < soff + len)
		return -EINVAL;
	*lenp = len;
	return 0;
}

/*
 * Make the blocks' current bytes the device's before they are shared: a
 * dirty page must not later be written into a block another file maps,
 * and journaled data must be home, where the other file reads it.
 */
int remap_settle(struct ref_fs *fs, struct ref_inode *a, struct ref_inode *b)
{
	int err = pcache_writeback(fs, a);

	if (!err && b != a)
		err = pcache_writeback(fs, b);
	if (!err && (inode_journals_data(fs, a) || inode_journals_data(fs, b)))
		err = journal_flush(fs);
	return err;
}

/*
 * Map source blocks [sfb, sfb + nb) at dst block dfb, one source mapping
 * per step, after punching [dfb, dfb + nb) out of dst.  newsize: dst's
 * size once the range is in (set before anything is mapped, so no step
 * leaves a written block past EOF).
 */
static int share_blocks(struct ref_fs *fs, struct ref_inode *dip, uint64_t dfb,
			struct ref_inode *sip, uint64_t sfb, uint64_t nb,
			uint64_t newsize)
{
	uint64_t fb = sfb;
	struct bt_tree t;
	int err = pcache_discard(fs, dip, dfb, dfb + nb);

	if (!err)
		err = bmap_unmap(fs, dip, dfb, nb, true);
	if (!err && newsize > dip->size) {
		dip->size = newsize;
		err = inode_log(fs, dip);
	}
	refc_tree(fs, &t);
	while (!err && fb < sfb + nb) {
		struct ref_extent e;
		uint64_t n;

		err = bmap_lookup(fs, sip, fb, &e);
		if (err)
			break;
		n = min64(e.fileoff + e.len - fb, sfb + nb - fb);
		if (e.state == 0) {
			struct ref_extent m = { dfb + (fb - sfb),
						e.startblk + (fb - e.fileoff),
						n, 0 };

			err = refcount_adjust(&t, m.startblk, n, 1, NULL, NULL);
			if (err)
				break;
			err = reflink_log_roots(fs);
			if (!err)
				err = bmap_map(fs, dip, &m);
			if (err) {
				/* not shared after all (a map insert that
				 * found no room changes nothing): the owner
				 * counted goes back, and no block is freed,
				 * the source still owns them all */
				if (!refcount_adjust(&t, m.startblk, n, -1, NULL,
						     NULL))
					reflink_log_roots(fs);
				break;
			}
			err = inode_log(fs, dip);
			if (!err)
				err = tx_maybe_roll(fs);
		}
		fb += n;
	}
	return err;
}

/* Do [soff, +len) of src and [doff, +len) of dst read the same bytes? */
static int same_bytes(struct ref_fs *fs, uint64_t dst, uint64_t doff,
		      uint64_t src, uint64_t soff, uint64_t len)
{
	uint64_t chunk = fs->bs * 16ull, done = 0;
	uint8_t *a = malloc(chunk), *b = malloc(chunk);
	int ret = 1;

	if (!a || !b)
		ret = -ENOMEM;
	while (ret == 1 && done < len) {
		uint64_t n = min64(chunk, len - done);
		int64_t ra = ref_pread(fs, src, a, n, soff + done);
		int64_t rb = ref_pread(fs, dst, b, n, doff + done);

		if (ra < 0 || rb < 0)
			ret = (int)(ra < 0 ? ra : rb);
		else if ((uint64_t)ra != n || (uint64_t)rb != n || memcmp(a, b, n))
			ret = 0;
		done += n;
	}
	free(a);
	free(b);
	return ret;
}

/*
 * Clone, or dedupe (share only equal bytes): the bytes shared, 0 when
 * dedupe found them different.  A clone grows dst to doff + len.
 */
static int64_t remap_range(struct ref_fs *fs, uint64_t dst, uint64_t doff,
			   uint64_t src, uint64_t soff, uint64_t len,
			   bool dedupe)
{
	struct ref_inode *sip, *dip;
	int err = inode_get(fs, src, &sip);

	if (!err)
		err = inode_get(fs, dst, &dip);
	if (!err)
		err = remap_checks(fs, dip, doff, sip, soff, &len, dedupe);
	if (err || len == 0)
		return err;
	if (dedupe) {
		err = same_bytes(fs, dst, doff, src, soff, len);
		if (err <= 0)
			return err;
	}
	err = remap_settle(fs, sip, dip);
	if (!err)
		err = share_blocks(fs, dip, doff >> fs->bshift, sip,
				   soff >> fs->bshift, fs_blocks_roundup(fs, len),
				   dedupe ? 0 : doff + len);
	if (!err)
		err = tx_maybe_roll(fs);
	return err ? err : (int64_t)len;
}

int ref_clone_range(struct ref_fs *fs, uint64_t dst, uint64_t doff,
		    uint64_t src, uint64_t soff, uint64_t len)
{
	int64_t r = fs_enter(fs);

	if (!r)
		r = fs_leave(fs, remap_range(fs, dst, doff, src, soff, len,
					     false));
	return r < 0 ? (int)r : 0;
}

int64_t ref_dedupe_range(struct ref_fs *fs, uint64_t dst, uint64_t doff,
			 uint64_t src, uint64_t soff, uint64_t len)
{
	int err = fs_enter(fs);

	return err ? err : fs_leave(fs, remap_range(fs, dst, doff, src, soff,
						    len, true));
}
