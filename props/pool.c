/*
 * pool.c - the trial handle: where a generator's bits come from, how
 * each request is recorded as a pool entry, spans, notes, and the pool's
 * order, hash and byte form.
 *
 * A request reads one entry whichever mode the trial is in:
 *
 *   SRC_RNG    a fresh random value (or the generator's suggestion),
 *   SRC_POOL   entry i of the given pool, masked to the width and
 *              clamped to the limit; 0 past the end,
 *   SRC_BYTES  the next ceil(width/8) bytes, little-endian; 0 past the end,
 *
 * and records {value, width}.  The record of a run is its canonical
 * pool: replaying it reads back exactly the same values, and so do its
 * bytes (pool_bytes) in SRC_BYTES mode.
 */
#include "props/props_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t props_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- pools ---- */

int pool_push(struct props_pool *p, struct props_entry e)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct props_entry *ne = realloc(p->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		p->e = ne;
		p->cap = cap;
	}
	p->e[p->n++] = e;
	return 0;
}

int pool_copy(struct props_pool *dst, const struct props_entry *e, size_t n)
{
	if (dst->cap < n) {
		struct props_entry *ne = realloc(dst->e, (n ? n : 1) * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		dst->e = ne;
		dst->cap = n;
	}
	if (n)
		memmove(dst->e, e, n * sizeof(*e));
	dst->n = n;
	return 0;
}

void pool_free(struct props_pool *p)
{
	free(p->e);
	memset(p, 0, sizeof(*p));
}

int pool_cmp(const struct props_entry *a, size_t na,
	     const struct props_entry *b, size_t nb)
{
	if (na != nb)
		return na < nb ? -1 : 1;
	for (size_t i = 0; i < na; i++)
		if (a[i].v != b[i].v)
			return a[i].v < b[i].v ? -1 : 1;
	return 0;
}

/* FNV-1a over each entry's value and width: the pool's identity. */
uint64_t pool_hash(const struct props_entry *e, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		uint64_t v = e[i].v;

		for (int b = 0; b < 8; b++) {
			h ^= (uint8_t)(v >> (8 * b));
			h *= 0x100000001b3ull;
		}
		h ^= e[i].w;
		h *= 0x100000001b3ull;
	}
	h ^= n;
	h *= 0x100000001b3ull;
	return h;
}

uint8_t *pool_bytes(const struct props_entry *e, size_t n, size_t *len)
{
	size_t total = 0, pos = 0;
	uint8_t *out;

	for (size_t i = 0; i < n; i++)
		total += (e[i].w + 7u) / 8u;
	out = malloc(total ? total : 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (unsigned b = 0; b < (e[i].w + 7u) / 8u; b++)
			out[pos++] = (uint8_t)(e[i].v >> (8 * b));
	*len = total;
	return out;
}

/* ---- the trial handle ---- */

void trial_init(struct props_trial *t, const struct props_cfg *cfg,
		unsigned nargs)
{
	memset(t, 0, sizeof(*t));
	t->cfg = cfg;
	t->nargs = nargs;
	t->max_entries = cfg->max_entries ? cfg->max_entries : 65536;
}

void trial_reset(struct props_trial *t)
{
	t->rec.n = 0;
	t->nspans = 0;
	t->depth = 0;
	t->overflow = 0;
	t->oom = 0;
	t->bpos = 0;
	memset(t->argstart, 0, sizeof(t->argstart));
}

void trial_clear_notes(struct props_trial *t)
{
	t->nnotes = 0;
	if (t->notes)
		t->notes[0] = 0;
}

void trial_destroy(struct props_trial *t)
{
	trial_free_args(t);
	pool_free(&t->rec);
	free(t->spans);
	free(t->notes);
	memset(t, 0, sizeof(*t));
}

void trial_src_rng(struct props_trial *t, uint64_t seed)
{
	trial_reset(t);
	t->src = SRC_RNG;
	rng_seed(&t->rng, seed);
}

void trial_src_pool(struct props_trial *t, const struct props_entry *e,
		    size_t n)
{
	trial_reset(t);
	t->src = SRC_POOL;
	t->in = e;
	t->nin = n;
}

void trial_src_bytes(struct props_trial *t, const uint8_t *b, size_t n)
{
	trial_reset(t);
	t->src = SRC_BYTES;
	t->bytes = b;
	t->nbytes = n;
}

int props_searching(const struct props_trial *t)
{
	return t->src == SRC_RNG;
}

uint64_t props_policy(struct props_trial *t, uint64_t n)
{
	return t->src == SRC_RNG ? rng_below(&t->rng, n) : 0;
}

static uint64_t width_mask(unsigned w)
{
	return w >= 64 ? ~0ull : (1ull << w) - 1;
}

uint64_t props_draw(struct props_trial *t, unsigned width, uint64_t limit,
		    const uint64_t *want)
{
	uint64_t mask, v = 0;
	struct props_entry e;

	if (width > 64)
		width = 64;
	if (width == 0)
		return 0;
	mask = width_mask(width);
	if (limit > mask)
		limit = mask;
	/* A runaway generator gets zeros, the minimal value: every
	 * generator ends once its bits are all zero. */
	if (t->rec.n >= t->max_entries) {
		t->overflow = 1;
		return 0;
	}
	switch (t->src) {
	case SRC_RNG:
		if (want)
			v = *want;
		else if (limit == mask)
			v = rng_next(&t->rng) & mask;
		else
			v = rng_below(&t->rng, limit + 1);
		break;
	case SRC_POOL:
		if (t->rec.n < t->nin)
			v = t->in[t->rec.n].v & mask;
		break;
	case SRC_BYTES:
		for (unsigned b = 0; b < (width + 7) / 8; b++, t->bpos++)
			if (t->bpos < t->nbytes)
				v |= (uint64_t)t->bytes[t->bpos] << (8 * b);
		v &= mask;
		break;
	}
	if (v > limit)
		v = limit;
	e.v = v;
	e.w = (uint8_t)width;
	if (pool_push(&t->rec, e))
		t->oom = 1;
	return v;
}

uint64_t props_bits(struct props_trial *t, unsigned width)
{
	return props_draw(t, width, ~0ull, NULL);
}

/* ---- spans ---- */

void props_span_begin(struct props_trial *t)
{
	if (t->nspans == t->capspans) {
		size_t cap = t->capspans ? t->capspans * 2 : 64;
		struct props_span *ns = realloc(t->spans, cap * sizeof(*ns));

		if (!ns) {
			t->oom = 1;
			t->depth++;   /* keep begin/end balanced */
			return;
		}
		t->spans = ns;
		t->capspans = cap;
	}
	if (t->depth < PROPS_SPAN_STACK)
		t->stack[t->depth] = (uint32_t)t->nspans;
	t->spans[t->nspans].start = (uint32_t)t->rec.n;
	t->spans[t->nspans].end = (uint32_t)t->rec.n;
	t->spans[t->nspans].depth = t->depth;
	t->nspans++;
	t->depth++;
}

void props_span_end(struct props_trial *t)
{
	if (t->depth == 0)
		return;
	t->depth--;
	if (t->depth < PROPS_SPAN_STACK && !t->oom)
		t->spans[t->stack[t->depth]].end = (uint32_t)t->rec.n;
}

void trial_close_spans(struct props_trial *t, uint32_t depth)
{
	while (t->depth > depth)
		props_span_end(t);
}

/* ---- notes and env ---- */

void *props_env(struct props_trial *t)
{
	return t->cfg->env;
}

void props_note(struct props_trial *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (t->nnotes + (size_t)n + 2 > t->capnotes) {
		size_t cap = (t->nnotes + (size_t)n + 2) * 2;
		char *nn = realloc(t->notes, cap);

		if (!nn)
			return;
		t->notes = nn;
		t->capnotes = cap;
	}
	va_start(ap, fmt);
	vsnprintf(t->notes + t->nnotes, (size_t)n + 1, fmt, ap);
	va_end(ap);
	t->nnotes += (size_t)n;
	t->notes[t->nnotes++] = '\n';
	t->notes[t->nnotes] = 0;
}

/* ---- arguments ---- */

void trial_free_args(struct props_trial *t)
{
	for (unsigned i = 0; i < t->nargs; i++) {
		const struct props_type *ty = t->cfg->types[i];

		if (!t->args[i])
			continue;
		if (ty->free)
			ty->free(t->args[i], ty->env);
		else
			free(t->args[i]);
		t->args[i] = NULL;
	}
}

int trial_generate(struct props_trial *t)
{
	for (unsigned i = 0; i < t->nargs; i++) {
		const struct props_type *ty = t->cfg->types[i];
		uint32_t depth = t->depth;
		int r;

		t->argstart[i] = t->rec.n;
		t->args[i] = NULL;
		r = ty->alloc(t, ty->env, &t->args[i]);
		trial_close_spans(t, depth);
		if (r == PROPS_PASS && t->oom)
			r = PROPS_ERROR;
		if (r != PROPS_PASS) {
			/* trial_free_args frees a half-made instance too */
			trial_free_args(t);
			return r == PROPS_SKIP ? PROPS_SKIP : PROPS_ERROR;
		}
	}
	t->argstart[t->nargs] = t->rec.n;
	return PROPS_PASS;
}
