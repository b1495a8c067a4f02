/*
 * draw.c - the built-in generators (integers, choices, collections, byte
 * buffers) and the ready-made types over them.
 *
 * Every generator keeps the pool contract: zero entries give the minimal
 * value, smaller entries simpler ones.  Bias lives only in what the search
 * suggests (props_draw's `want`), so it never changes what an entry means
 * and the shrinker is free to undo it.
 *
 * An integer in [lo, hi] is two entries, a magnitude m and a value of m
 * bits:
 *
 *     entry 0: m in [0, w]        (w = bits of hi - lo)
 *     entry 1: r < 2^m            (r <= hi - lo when m == w)
 *     value:   lo + r
 *
 * Drawing m uniformly makes the value log-uniform: 1..2 as likely as
 * 2^30..2^31.  The search also suggests boundaries about one time in
 * four: hi, hi - 1, lo + 1 and all-ones values (2^k - 1).  Shrinking
 * lowers m (dropping high bits) and r (binary search) independently.
 */
#include "props/props_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static unsigned bitlen(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

uint64_t props_below(struct props_trial *t, uint64_t n)
{
	if (n <= 1)
		return 0;
	return props_draw(t, bitlen(n - 1), n - 1, NULL);
}

int props_bool(struct props_trial *t)
{
	return (int)props_draw(t, 1, 1, NULL);
}

uint64_t props_int(struct props_trial *t, uint64_t lo, uint64_t hi)
{
	uint64_t span, m, r, lim, want_m = 0, want_r = 0;
	const uint64_t *pm = NULL, *pr = NULL;
	unsigned w;

	if (hi <= lo)
		return lo;
	span = hi - lo;
	w = bitlen(span);
	if (props_searching(t)) {
		switch (props_policy(t, 16)) {
		case 0:                         /* hi */
			want_m = w;
			want_r = span;
			pm = &want_m;
			pr = &want_r;
			break;
		case 1:                         /* hi - 1 */
			want_m = w;
			want_r = span - 1;
			pm = &want_m;
			pr = &want_r;
			break;
		case 2:                         /* lo + 1 */
			want_m = 1;
			want_r = 1;
			pm = &want_m;
			pr = &want_r;
			break;
		case 3:                         /* 2^k - 1 */
			pr = &want_r;           /* set once m is known */
			break;
		default:
			break;
		}
	}
	m = props_draw(t, 7, w, pm);
	lim = m >= w ? span : (1ull << m) - 1;
	if (pr == &want_r && !pm)
		want_r = lim;
	r = props_draw(t, (unsigned)m, lim, pr);
	return lo + r;
}

int64_t props_sint(struct props_trial *t, int64_t lo, int64_t hi)
{
	uint64_t neg_span;

	if (hi <= lo)
		return lo;
	if (lo >= 0)
		return (int64_t)((uint64_t)lo + props_int(t, 0, (uint64_t)hi - (uint64_t)lo));
	if (hi <= 0)
		return (int64_t)((uint64_t)hi - props_int(t, 0, (uint64_t)hi - (uint64_t)lo));
	/* 0 inside: a sign entry (0 = non-negative), then the magnitude. */
	neg_span = 0 - (uint64_t)lo;
	if (props_draw(t, 1, 1, NULL))
		return (int64_t)(0 - props_int(t, 1, neg_span));
	return (int64_t)props_int(t, 0, (uint64_t)hi);
}

/*
 * The element marker is inside the element's span, so deleting a span
 * removes the element and its "more" entry together and the entries after
 * it stay aligned.  A zero marker ends the collection: shrinking a marker
 * to zero cuts everything after it.
 */
int props_more(struct props_trial *t, struct props_many *m)
{
	uint64_t want, extra;

	if (m->open) {
		props_span_end(t);
		m->open = 0;
	}
	if (m->count >= m->max)
		return 0;
	props_span_begin(t);
	if (m->count >= m->min) {
		extra = m->avg > m->min ? m->avg - m->min : 1;
		/* geometric: `extra` more elements on average */
		want = props_policy(t, extra + 1) < extra;
		if (!props_draw(t, 1, 1, &want)) {
			props_span_end(t);
			return 0;
		}
	}
	m->count++;
	m->open = 1;
	return 1;
}

size_t props_fill(struct props_trial *t, uint8_t *buf, size_t min,
		  size_t max, size_t avg)
{
	struct props_many m = PROPS_MANY((uint32_t)min, (uint32_t)max,
					 (uint32_t)avg);
	size_t n = 0;

	while (props_more(t, &m))
		buf[n++] = (uint8_t)props_bits(t, 8);
	return n;
}

/* ---- types ---- */

int props_int_alloc(struct props_trial *t, void *env, void **out)
{
	const struct props_int_env *e = env;
	uint64_t *v = malloc(sizeof(*v));

	if (!v)
		return PROPS_ERROR;
	*v = props_int(t, e ? e->lo : 0, e ? e->hi : UINT64_MAX);
	*out = v;
	return PROPS_PASS;
}

void props_int_print(FILE *f, const void *inst, void *env)
{
	(void)env;
	fprintf(f, "%" PRIu64, *(const uint64_t *)inst);
}

int props_sint_alloc(struct props_trial *t, void *env, void **out)
{
	const struct props_sint_env *e = env;
	int64_t *v = malloc(sizeof(*v));

	if (!v)
		return PROPS_ERROR;
	*v = props_sint(t, e ? e->lo : INT64_MIN, e ? e->hi : INT64_MAX);
	*out = v;
	return PROPS_PASS;
}

void props_sint_print(FILE *f, const void *inst, void *env)
{
	(void)env;
	fprintf(f, "%" PRId64, *(const int64_t *)inst);
}

int props_buf_alloc(struct props_trial *t, void *env, void **out)
{
	const struct props_buf_env *e = env;
	size_t max = e && e->max ? e->max : 64;
	size_t min = e ? e->min : 0;
	size_t avg = e && e->avg ? e->avg : 8;
	struct props_buf *b;

	if (min > max)
		return PROPS_ERROR;
	b = malloc(sizeof(*b) + max);
	if (!b)
		return PROPS_ERROR;
	b->len = props_fill(t, b->data, min, max, avg);
	*out = b;
	return PROPS_PASS;
}

void props_buf_print(FILE *f, const void *inst, void *env)
{
	const struct props_buf *b = inst;

	(void)env;
	fprintf(f, "%zu bytes:", b->len);
	for (size_t i = 0; i < b->len; i++)
		fprintf(f, " %02x", b->data[i]);
}
