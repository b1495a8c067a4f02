/*
 * gen.c - the seeded fsx-like op generator (gen.h).
 */
#include "harness/gen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"

const uint32_t gen_default_weight[OP_KIND_COUNT] = {
	[OP_OPEN] = 10,         [OP_CLOSE] = 15,        [OP_UNLINK] = 3,
	[OP_PWRITE] = 250,      [OP_PREAD] = 180,       [OP_TRUNCATE] = 50,
	[OP_FALLOC] = 40,       [OP_FPUNCH] = 40,       [OP_FZERO] = 40,
	[OP_FCOLLAPSE] = 25,    [OP_FINSERT] = 25,      [OP_COPY_RANGE] = 20,
	[OP_CLONE_RANGE] = 15,  [OP_DEDUPE_RANGE] = 10, [OP_EXCHANGE_RANGE] = 10,
	[OP_FSYNC] = 20,        [OP_FDATASYNC] = 10,    [OP_SYNC] = 5,
	[OP_WRITEBACK] = 5,     [OP_DROP_CACHES] = 5,   [OP_REMOUNT] = 2,
	[OP_CRASH] = 2,         [OP_SET_FLAG] = 0,      [OP_NAIVE] = 3,
	[OP_FALLBACK] = 3,
};

int gen_init(struct gen *g, const struct gen_cfg *cfg)
{
	int any = 0;

	memset(g, 0, sizeof(*g));
	if (cfg)
		g->cfg = *cfg;
	if (!g->cfg.nfiles)
		g->cfg.nfiles = 4;
	if (g->cfg.nfiles > OP_MAX_FILES)
		g->cfg.nfiles = OP_MAX_FILES;
	if (!g->cfg.max_file)
		g->cfg.max_file = 256 << 10;
	if (!g->cfg.max_op)
		g->cfg.max_op = 64 << 10;
	if (!g->cfg.blocksize)
		g->cfg.blocksize = 4096;
	for (unsigned k = 1; k < OP_KIND_COUNT; k++)
		if (g->cfg.weight[k])
			any = 1;
	if (!any)
		memcpy(g->cfg.weight, gen_default_weight, sizeof(g->cfg.weight));
	for (unsigned k = 1; k < OP_KIND_COUNT; k++) {
		if (!(g->cfg.exclude & (1ull << k)))
			g->total += g->cfg.weight[k];
		g->cum[k] = g->total;
	}
	if (!g->total)
		return -EINVAL;
	rng_seed(&g->rng, g->cfg.seed);
	gen_reset_sizes(g);
	return 0;
}

void gen_reset_sizes(struct gen *g)
{
	memset(g->size, 0, sizeof(g->size));
	g->fresh = (1u << g->cfg.nfiles) - 1;
	g->pending.kind = OP_NONE;
}

/* With a realtime device: make a new, empty file realtime, three times in
 * four (0 when there is no such file, or it stays plain). */
static int gen_fresh_rt(struct gen *g, struct op *op)
{
	unsigned f;

	if (!g->cfg.realtime || !g->fresh ||
	    (g->cfg.exclude & (1ull << OP_SET_FLAG)))
		return 0;
	f = (unsigned)__builtin_ctz(g->fresh);
	g->fresh &= ~(1u << f);
	if (rng_below(&g->rng, 4) == 0)
		return 0;
	memset(op, 0, sizeof(*op));
	op->kind = OP_SET_FLAG;
	op->file = (uint8_t)f;
	/* some realtime files compress their data at writeback too */
	op->arg = OP_ATTR_REALTIME |
		  (rng_below(&g->rng, 3) == 0 ? OP_ATTR_COMPRESS : 0);
	op_normalize(op);
	return 1;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Log-uniform in [1, max]: as many 1..16-byte ops as 32k..64k ones. */
static uint64_t pick_len(struct gen *g, uint64_t max)
{
	unsigned bits = 0;

	if (max == 0)
		return 0;
	while (bits < 63 && (1ull << bits) < max)
		bits++;
	return 1 + rng_below(&g->rng, min64(max, 1ull << rng_below(&g->rng,
								  bits + 1)));
}

/* Round down to byte, sector or block alignment, fsx's -r/-w flavours. */
static uint64_t align_some(struct gen *g, uint64_t v)
{
	switch (rng_below(&g->rng, 8)) {
	case 4:
	case 5:
		return v & ~(uint64_t)511;
	case 6:
	case 7:
		return v - v % g->cfg.blocksize;
	default:
		return v;
	}
}

static unsigned pick_kind(struct gen *g)
{
	uint64_t r = rng_below(&g->rng, g->total);
	unsigned k = 1;

	while (k < OP_KIND_MAX && (r >= g->cum[k] ||
				   (g->cfg.exclude & (1ull << k))))
		k++;
	return k;
}

/* An offset and length inside [0, limit). */
static void range_in(struct gen *g, uint64_t limit, uint64_t *off,
		     uint64_t *len)
{
	*off = limit ? align_some(g, rng_below(&g->rng, limit)) : 0;
	*len = pick_len(g, min64(g->cfg.max_op, limit - *off));
	if (*len == 0)
		*len = 1;
}

/* A block-aligned range inside [0, limit), or 0 when none fits. */
static int blocks_in(struct gen *g, uint64_t limit, uint64_t *off,
		     uint64_t *len)
{
	uint64_t bs = g->cfg.blocksize, n = limit / bs, maxb;

	if (n == 0)
		return 0;
	*off = bs * rng_below(&g->rng, n);
	maxb = min64(n - *off / bs, g->cfg.max_op / bs ? g->cfg.max_op / bs : 1);
	*len = bs * (1 + rng_below(&g->rng, maxb));
	return 1;
}

/* Keep the size estimate roughly what the model will have. */
static void track(struct gen *g, const struct op *op)
{
	uint64_t *s = &g->size[op->file], *s2 = &g->size[op->file2];
	uint64_t bs = g->cfg.blocksize, end = op->off + op->len;

	switch (op->kind) {
	case OP_PWRITE:
		if (op->len && end > *s)
			*s = end;
		break;
	case OP_TRUNCATE:
		*s = op->arg;
		break;
	case OP_FALLOC:
	case OP_FZERO:
		if (op->len && !(op->flags & OP_FL_KEEP_SIZE) && end > *s)
			*s = end;
		break;
	case OP_FCOLLAPSE:
		if (op->len && op->off % bs == 0 && op->len % bs == 0 && end < *s)
			*s -= op->len;
		break;
	case OP_FINSERT:
		if (op->len && op->off % bs == 0 && op->len % bs == 0 &&
		    op->off < *s)
			*s += op->len;
		break;
	case OP_COPY_RANGE:
		if (op->off < *s2) {
			uint64_t n = min64(op->len, *s2 - op->off);

			if (op->arg + n > *s)
				*s = op->arg + n;
		}
		break;
	case OP_CLONE_RANGE:
		if (op->off + op->len <= *s2 && op->arg + op->len > *s)
			*s = op->arg + op->len;
		break;
	case OP_UNLINK:
		*s = 0;
		break;
	default:
		break;
	}
}

void gen_next(struct gen *g, struct op *op)
{
	struct rng *r = &g->rng;
	uint64_t maxf = g->cfg.max_file, size;
	unsigned kind;

	if (g->pending.kind) {
		*op = g->pending;
		g->pending.kind = OP_NONE;
		return;
	}
	if (gen_fresh_rt(g, op))
		return;
	kind = pick_kind(g);
	memset(op, 0, sizeof(*op));
	op->kind = (uint8_t)kind;
	/* Stay on a file for a while, as fsx's one file does. */
	if (rng_below(r, 4) == 0)
		g->cur = (unsigned)rng_below(r, g->cfg.nfiles);
	op->file = (uint8_t)g->cur;
	op->file2 = (uint8_t)rng_below(r, g->cfg.nfiles);
	size = g->size[op->file];

	/* One op in 32 takes raw values: error paths must agree too. */
	if (rng_below(r, 32) == 0) {
		op->off = rng_below(r, 2 * maxf + 1);
		op->len = rng_below(r, 2 * g->cfg.max_op + 1);
		op->arg = rng_below(r, 2 * maxf + 1);
		op->flags = (uint8_t)rng_next(r);
		op->pattern = (uint8_t)rng_next(r);
		if (kind == OP_SET_FLAG)
			op->arg = rng_next(r);
		kind = OP_NONE; /* nothing more to shape below */
	}
	switch (kind) {
	case OP_OPEN:
		g->cur = (unsigned)rng_below(r, g->cfg.nfiles);
		op->file = (uint8_t)g->cur;
		if (rng_below(r, 10))
			op->flags = OP_FL_CREATE;
		break;
	case OP_UNLINK:
		op->file = (uint8_t)rng_below(r, g->cfg.nfiles);
		g->fresh |= 1u << op->file;
		break;
	case OP_PWRITE:
		range_in(g, maxf, &op->off, &op->len);
		if (rng_below(r, 16) == 0) {
			op->flags = OP_FL_PATTERN;
			op->pattern = (uint8_t)rng_next(r);
		}
		break;
	case OP_PREAD:
		/* Mostly inside the file, where there is something to check. */
		if (size && rng_below(r, 8))
			range_in(g, size, &op->off, &op->len);
		else
			range_in(g, maxf, &op->off, &op->len);
		break;
	case OP_TRUNCATE:
		/* fsx -s 1 style now and then: near the current size. */
		if (rng_below(r, 4) == 0 && size)
			op->arg = size - rng_below(r, min64(size, g->cfg.max_op) + 1);
		else
			op->arg = align_some(g, rng_below(r, maxf + 1));
		break;
	case OP_FALLOC:
	case OP_FZERO:
		range_in(g, maxf, &op->off, &op->len);
		if (rng_below(r, 2))
			op->flags |= OP_FL_KEEP_SIZE;
		if (kind == OP_FALLOC && rng_below(r, 8) == 0)
			op->flags |= OP_FL_UNSHARE;
		break;
	case OP_FPUNCH:
		range_in(g, size ? size : maxf, &op->off, &op->len);
		break;
	case OP_FCOLLAPSE:
		/* Must end before EOF: blocks of [0, size - 1). */
		if (!size || !blocks_in(g, size - 1, &op->off, &op->len))
			range_in(g, maxf, &op->off, &op->len);
		else if (op->off + op->len >= size)
			op->len -= g->cfg.blocksize;
		break;
	case OP_FINSERT:
		if (size && blocks_in(g, size + g->cfg.blocksize - 1, &op->off,
				      &op->len)) {
			while (op->len > g->cfg.blocksize && size + op->len > maxf)
				op->len -= g->cfg.blocksize;
		} else {
			range_in(g, maxf, &op->off, &op->len);
		}
		break;
	case OP_COPY_RANGE:
	case OP_CLONE_RANGE:
	case OP_DEDUPE_RANGE:
	case OP_EXCHANGE_RANGE: {
		uint64_t s2 = g->size[op->file2];
		int aligned = kind != OP_COPY_RANGE;

		if (aligned) {
			if (!s2 || !blocks_in(g, s2, &op->off, &op->len))
				range_in(g, maxf, &op->off, &op->len);
			if (kind == OP_CLONE_RANGE && rng_below(r, 4) == 0 &&
			    op->off < s2)
				op->len = s2 - op->off; /* to the source EOF */
			op->arg = g->cfg.blocksize *
				  rng_below(r, (kind == OP_CLONE_RANGE ? maxf :
					       (size ? size : maxf)) /
					    g->cfg.blocksize + 1);
		} else {
			range_in(g, s2 ? s2 : maxf, &op->off, &op->len);
			op->arg = align_some(g, rng_below(r, maxf));
		}
		if (op->arg + op->len > maxf)
			op->arg = maxf > op->len ? maxf - op->len : 0;
		break;
	}
	case OP_NAIVE:
	case OP_FALLBACK:
		/* Mixes mostly; all or none now and then. */
		op->arg = rng_below(r, 4) ? rng_below(r, REF_PATHS_ALL + 1ull) :
			  rng_below(r, 2) ? REF_PATHS_ALL : 0;
		break;
	case OP_SET_FLAG:
		if (g->cfg.realtime) {
			/* Only an empty file changes its realtime flag: empty
			 * it now, flip the flag next. */
			struct op *p = &g->pending;

			memset(p, 0, sizeof(*p));
			p->kind = OP_SET_FLAG;
			p->file = op->file;
			p->arg = OP_ATTR_REALTIME;
			p->flags = rng_below(r, 2) ? OP_FL_CLEAR : 0;
			op_normalize(p);
			op->kind = OP_TRUNCATE;
			break;
		}
		op->arg = 1u << rng_below(r, 4);
		if (rng_below(r, 2))
			op->flags = OP_FL_CLEAR;
		break;
	default:
		break;
	}
	op_normalize(op);
	track(g, op);
}

int gen_parse_weights(struct gen_cfg *cfg, const char *s, char *err,
		      size_t errlen)
{
	char buf[512], *save = NULL, *kv;
	int any = 0;

	for (unsigned k = 1; k < OP_KIND_COUNT; k++)
		any |= cfg->weight[k] != 0;
	if (!any)
		memcpy(cfg->weight, gen_default_weight, sizeof(cfg->weight));
	if (strlen(s) >= sizeof(buf)) {
		snprintf(err, errlen, "weight list too long");
		return -EINVAL;
	}
	strcpy(buf, s);
	for (kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), *end;
		unsigned long w;
		unsigned k;

		if (!eq) {
			snprintf(err, errlen, "bad weight '%.60s' (want KIND=N)", kv);
			return -EINVAL;
		}
		*eq = 0;
		k = op_kind_by_name(kv);
		if (!k && !strcmp(kv, "funshare"))
			k = OP_FALLOC;
		w = strtoul(eq + 1, &end, 10);
		if (!k || end == eq + 1 || *end || w > 1000000) {
			snprintf(err, errlen, "bad weight '%.30s=%.30s' (kinds are "
				 "the text words: pwrite, pread, truncate, ...)",
				 kv, eq + 1);
			return -EINVAL;
		}
		cfg->weight[k] = (uint32_t)w;
	}
	return 0;
}
