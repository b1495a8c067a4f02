/*
 * refcount.c - the refcount B+tree: shared ranges and their owner counts
 * (refcount.h has the model and the record layout).
 *
 * An adjustment rewrites only the records it must.  It gathers the
 * records touching [start, end) (those ending at start or beginning at
 * end too, since the result may merge with them), lays the range out as
 * segments of equal owner count, applies the delta inside the range,
 * merges equal neighbours, and then turns old records into new ones with
 * the fewest tree operations: a record whose start survives is updated in
 * place (or left alone when unchanged), the rest are deleted or inserted.
 *
 *   before   [100,4,2]      [106,6,3]
 *   +1 on         [102 ............. 110)
 *   segments [100,2,2][102,2,3][104,2,2][106,4,4][110,2,3]
 *   records  update 100: len 2; insert 102: 3 (2 blocks); insert 104: 2;
 *            update 106: 4 blocks count 4; insert 110: 3
 */
#include "ref/refcount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ondisk.h"

static uint64_t rec_key(const void *rec)
{
	return get64(rec);
}

static void rec_print(const void *rec, char *buf, size_t len)
{
	const uint8_t *r = rec;

	snprintf(buf, len, "[%llu+%u]x%u", (unsigned long long)get64(r),
		 get32(r + 8), get32(r + 12));
}

const struct bt_type refcount_bt_type = {
	.name = "refcount",
	.magic = MAGIC_REFCBT,
	.rec_size = REFC_REC_SIZE,
	.rec_key = rec_key,
	.rec_print = rec_print,
};

static void rec_decode(const void *raw, struct refc_rec *r)
{
	const uint8_t *p = raw;

	r->start = get64(p);
	r->len = get32(p + 8);
	r->count = get32(p + 12);
}

static void rec_encode(const struct refc_rec *r, void *raw)
{
	uint8_t *p = raw;

	put64(p, r->start);
	put32(p + 8, r->len);
	put32(p + 12, r->count);
}

static uint64_t rec_end(const struct refc_rec *r)
{
	return r->start + r->len;
}

/*
 * The arrays below hold their first elements in place: an adjustment
 * touches a record or two, and three mallocs an adjustment were most of
 * a reflink input's (every clone and COW end adjusts).
 */
#define IN_PLACE 16

/*
 * Room for element n of the array *v (room for *cap; 0: none yet), whose
 * storage is inl (IN_PLACE elements of sz bytes) until it outgrows it.
 */
static int room_one(void **v, size_t n, size_t *cap, void *inl, size_t sz)
{
	size_t c = *cap * 2;
	void *p;

	if (n < *cap)
		return 0;
	if (!*cap) {
		*v = inl;
		*cap = IN_PLACE;
		return 0;
	}
	p = *v == inl ? malloc(c * sz) : realloc(*v, c * sz);
	if (!p)
		return -ENOMEM;
	if (*v == inl)
		memcpy(p, inl, n * sz);
	*v = p;
	*cap = c;
	return 0;
}

/* A growable array of records. */
struct recs {
	struct refc_rec *v;
	size_t n, cap;
	struct refc_rec inl[IN_PLACE];
};

static int recs_push(struct recs *a, const struct refc_rec *r)
{
	void *v = a->v;

	if (room_one(&v, a->n, &a->cap, a->inl, sizeof(*r)))
		return -ENOMEM;
	a->v = v;
	a->v[a->n++] = *r;
	return 0;
}

/* ---- gathering the records that touch [start, end] ---- */

struct gather {
	struct recs *out;
	uint64_t end;
	int err;
};

static int gather_one(void *arg, const void *raw)
{
	struct gather *g = arg;
	struct refc_rec r;

	rec_decode(raw, &r);
	if (r.start > g->end)
		return 1;
	g->err = recs_push(g->out, &r);
	return g->err ? -ENOMEM : 0;
}

static int gather(struct bt_tree *t, uint64_t start, uint64_t end,
		  struct recs *out)
{
	uint8_t raw[REFC_REC_SIZE];
	struct gather g = { out, end, 0 };
	uint64_t from = start;
	/* the record before start, which may end at start and merge */
	int err = bt_lookup_le(t, start ? start - 1 : 0, raw);

	if (err == 0) {
		struct refc_rec r;

		rec_decode(raw, &r);
		if (rec_end(&r) >= start)
			from = r.start;
	} else if (err != -ENOENT) {
		return err;
	}
	err = bt_iterate(t, from, gather_one, &g);
	return err ? err : g.err;
}

/* ---- segments: the span laid out by owner count ---- */

struct seg {
	uint64_t start, end;
	uint64_t owners;         /* 1 where there is no record */
};

struct segs {
	struct seg *v;
	size_t n, cap;
	struct seg inl[IN_PLACE];
};

/* Append, merging with the previous segment when the count matches. */
static int segs_add(struct segs *a, uint64_t start, uint64_t end,
		    uint64_t owners)
{
	if (start >= end)
		return 0;
	if (a->n && a->v[a->n - 1].end == start &&
	    a->v[a->n - 1].owners == owners) {
		a->v[a->n - 1].end = end;
		return 0;
	}
	void *v = a->v;

	if (room_one(&v, a->n, &a->cap, a->inl, sizeof(*a->v)))
		return -ENOMEM;
	a->v = v;
	a->v[a->n++] = (struct seg){ start, end, owners };
	return 0;
}

/* Owners after the delta inside [start, end), unchanged outside. */
static uint64_t apply(uint64_t owners, uint64_t a, uint64_t start,
		      uint64_t end, int delta)
{
	if (a < start || a >= end)
		return owners;
	return delta > 0 ? owners + 1 : owners - 1;
}

/*
 * Lay out [min(start, first record), max(end, last record end)) with the
 * delta applied, cutting at the range edges.  Blocks without a record
 * inside the range have one owner before the delta.
 */
static int layout(const struct recs *old, uint64_t start, uint64_t end,
		  int delta, struct segs *out)
{
	uint64_t p = start;
	int err = 0;

	if (old->n && old->v[0].start < p)
		p = old->v[0].start;
	for (size_t i = 0; i <= old->n && !err; i++) {
		uint64_t rs = i < old->n ? old->v[i].start : end;
		uint64_t re = i < old->n ? rec_end(&old->v[i]) : end;
		uint64_t cnt = i < old->n ? old->v[i].count : 1;
		uint64_t cuts[4] = { rs, start, end, re }, a = rs;

		if (i == old->n && p >= end)
			break;
		/* the gap before this record: one owner each */
		if (p < rs) {
			uint64_t gs = p, ge = rs < end ? rs : end;

			err = segs_add(out, gs, ge, apply(1, gs, start, end,
							  delta));
			if (err)
				break;
		}
		if (i == old->n)
			break;
		/* the record, cut at the range's edges */
		for (int k = 1; k < 4 && !err; k++) {
			uint64_t b = cuts[k];

			if (b <= a || b > re)
				continue;
			err = segs_add(out, a, b, apply(cnt, a, start, end,
							delta));
			a = b;
		}
		p = re;
	}
	return err;
}

/* The records of a segment list (owners >= 2), split at REFC_MAX_LEN. */
static int segs_to_recs(const struct segs *s, struct recs *out)
{
	for (size_t i = 0; i < s->n; i++) {
		uint64_t a = s->v[i].start;

		if (s->v[i].owners < 2)
			continue;
		while (a < s->v[i].end) {
			uint64_t n = s->v[i].end - a;
			struct refc_rec r;
			int err;

			if (n > REFC_MAX_LEN)
				n = REFC_MAX_LEN;
			r = (struct refc_rec){ a, (uint32_t)n,
					       (uint32_t)s->v[i].owners };
			err = recs_push(out, &r);
			if (err)
				return err;
			a += n;
		}
	}
	return 0;
}

/* The record of a (sorted by start) starting at start, or NULL. */
static const struct refc_rec *find_start(const struct recs *a, uint64_t start)
{
	size_t lo = 0, hi = a->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->v[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->n && a->v[lo].start == start ? &a->v[lo] : NULL;
}

/* Turn the old records into the new ones with the fewest operations. */
static int rewrite(struct bt_tree *t, const struct recs *old,
		   const struct recs *new)
{
	uint8_t raw[REFC_REC_SIZE];
	int err = 0;

	for (size_t i = 0; i < old->n && !err; i++)
		if (!find_start(new, old->v[i].start))
			err = bt_delete(t, old->v[i].start);
	for (size_t i = 0; i < new->n && !err; i++) {
		const struct refc_rec *o = find_start(old, new->v[i].start);

		if (o && o->len == new->v[i].len &&
		    o->count == new->v[i].count)
			continue;
		rec_encode(&new->v[i], raw);
		err = o ? bt_update(t, raw) : bt_insert(t, raw);
	}
	return err;
}

int refcount_adjust(struct bt_tree *t, uint64_t start, uint64_t len,
		    int delta, refc_free_fn free_fn, void *arg)
{
	struct recs old = { 0 }, new = { 0 };
	struct segs segs = { 0 };
	uint64_t end = start + len;
	int err;

	if ((delta != 1 && delta != -1) || len == 0 || end < start)
		return -EINVAL;
	err = gather(t, start, end, &old);
	for (size_t i = 0; !err && delta > 0 && i < old.n; i++)
		if (old.v[i].count == REFC_MAX_COUNT &&
		    old.v[i].start < end && rec_end(&old.v[i]) > start)
			err = -ERANGE;
	if (!err)
		err = layout(&old, start, end, delta, &segs);
	if (!err)
		err = segs_to_recs(&segs, &new);
	if (!err)
		err = rewrite(t, &old, &new);
	/* Blocks that lost their last owner, in order, coalesced by
	 * segs_add already. */
	for (size_t i = 0; !err && free_fn && i < segs.n; i++)
		if (segs.v[i].owners == 0)
			err = free_fn(arg, segs.v[i].start,
				      segs.v[i].end - segs.v[i].start);
	if (old.v != old.inl)
		free(old.v);
	if (new.v != new.inl)
		free(new.v);
	if (segs.v != segs.inl)
		free(segs.v);
	return err;
}

int refcount_find_shared(struct bt_tree *t, uint64_t start, uint64_t len,
			 uint64_t *sstart, uint64_t *slen)
{
	uint8_t raw[REFC_REC_SIZE];
	struct refc_rec r;
	uint64_t end = start + len;
	int err = bt_lookup_le(t, start, raw);

	if (err == 0) {
		rec_decode(raw, &r);
		if (rec_end(&r) <= start)
			err = -ENOENT;
	}
	if (err == -ENOENT) {
		err = bt_lookup_ge(t, start, raw);
		if (err)
			return err;
		rec_decode(raw, &r);
		if (r.start >= end)
			return -ENOENT;
	}
	if (err)
		return err;
	*sstart = r.start > start ? r.start : start;
	*slen = (rec_end(&r) < end ? rec_end(&r) : end) - *sstart;
	return 0;
}

int refcount_get(struct bt_tree *t, uint64_t blk, uint32_t *count)
{
	uint8_t raw[REFC_REC_SIZE];
	struct refc_rec r;
	int err = bt_lookup_le(t, blk, raw);

	*count = 1;
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	rec_decode(raw, &r);
	if (blk < rec_end(&r))
		*count = r.count;
	return 0;
}

struct check {
	uint64_t limit;
	struct refc_rec prev;
	int have_prev;
	int (*visit)(void *arg, const struct refc_rec *r);
	void *arg;
	char *why;
	size_t whylen;
};

static int check_one(void *arg, const void *raw)
{
	struct check *c = arg;
	struct refc_rec r;

	rec_decode(raw, &r);
	if (r.count < 2 || r.len == 0 || rec_end(&r) > c->limit ||
	    rec_end(&r) < r.start) {
		snprintf(c->why, c->whylen, "refcount record [%llu+%u]x%u is "
			 "invalid (count >= 2, length >= 1, inside %llu blocks)",
			 (unsigned long long)r.start, r.len, r.count,
			 (unsigned long long)c->limit);
		return -EUCLEAN;
	}
	if (c->have_prev && rec_end(&c->prev) > r.start) {
		snprintf(c->why, c->whylen, "refcount records at %llu and %llu "
			 "overlap", (unsigned long long)c->prev.start,
			 (unsigned long long)r.start);
		return -EUCLEAN;
	}
	if (c->have_prev && rec_end(&c->prev) == r.start &&
	    c->prev.count == r.count &&
	    (uint64_t)c->prev.len + r.len <= REFC_MAX_LEN) {
		snprintf(c->why, c->whylen, "refcount records at %llu and %llu "
			 "should have been merged",
			 (unsigned long long)c->prev.start,
			 (unsigned long long)r.start);
		return -EUCLEAN;
	}
	c->prev = r;
	c->have_prev = 1;
	return c->visit ? c->visit(c->arg, &r) : 0;
}

int refcount_check(struct bt_tree *t, uint64_t limit,
		   int (*visit)(void *arg, const struct refc_rec *r),
		   void *arg, char *why, size_t whylen)
{
	struct check c = { .limit = limit, .visit = visit, .arg = arg,
			   .why = why, .whylen = whylen };
	int err = bt_check(t, NULL, NULL, NULL, why, whylen);

	if (err)
		return err;
	if (whylen)
		why[0] = 0;
	return bt_iterate(t, 0, check_one, &c);
}
