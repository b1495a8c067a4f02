/*
 * gen.c - the seeded fsx-like op generator (gen.h).
 */
#include "harness/gen.h"

#include <errno.h>
#include <stdbool.h>
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
	[OP_FALLBACK] = 3,      [OP_CUT] = 1,
};

/* Swarm sizes when the caller gives no bound. */
#define SWARM_MAX_FILE ((uint64_t)16 << 20)
#define SWARM_MAX_OP   ((uint64_t)1 << 20)
#define SWARM_MIN_FILE ((uint64_t)16 << 10)
#define SWARM_MIN_OP   ((uint64_t)4 << 10)
/* The weight a swarm round draws around for kinds whose default is 0. */
#define SWARM_RARE_WEIGHT 20u

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The cumulative table of the round's weights, less excluded kinds. */
static void round_weights(struct gen *g)
{
	g->total = 0;
	for (unsigned k = 1; k < OP_KIND_COUNT; k++) {
		if (!(g->cfg.exclude & (1ull << k)))
			g->total += g->round.weight[k];
		g->cum[k] = g->total;
	}
}

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
		g->cfg.max_file = g->cfg.swarm ? SWARM_MAX_FILE : 256 << 10;
	if (!g->cfg.max_op)
		g->cfg.max_op = g->cfg.swarm ? SWARM_MAX_OP : 64 << 10;
	if (!g->cfg.blocksize)
		g->cfg.blocksize = 4096;
	if (!g->cfg.attrs)
		g->cfg.attrs = OP_ATTR_JOURNAL_DATA | OP_ATTR_COMPRESS |
			       (g->cfg.realtime ? OP_ATTR_REALTIME : 0);
	if (!g->cfg.realtime)
		g->cfg.attrs &= ~OP_ATTR_REALTIME;
	for (unsigned k = 1; k < OP_KIND_COUNT; k++)
		if (g->cfg.weight[k])
			any = 1;
	if (!any)
		memcpy(g->cfg.weight, gen_default_weight, sizeof(g->cfg.weight));
	memcpy(g->round.weight, g->cfg.weight, sizeof(g->round.weight));
	round_weights(g);
	if (!g->total)
		return -EINVAL;
	gen_goto_round(g, 1);
	return 0;
}

void gen_reset_sizes(struct gen *g)
{
	memset(g->size, 0, sizeof(g->size));
	g->fresh = (1u << g->cfg.nfiles) - 1;
	g->pending.kind = OP_NONE;
}

/* Log-uniform in [lo, hi] (hi when lo >= hi). */
static uint64_t log_uniform(struct rng *r, uint64_t lo, uint64_t hi)
{
	unsigned a = 0, b = 0, e;
	uint64_t base;

	if (lo >= hi)
		return hi;
	while (a < 63 && (2ull << a) <= lo)
		a++;
	while (b < 63 && (2ull << b) <= hi)
		b++;
	e = a + (unsigned)rng_below(r, b - a + 1);
	base = 1ull << e;
	base += rng_below(r, base);
	return base < lo ? lo : base > hi ? hi : base;
}

/* A random subset of the set bits of mask, each kept with chance 1/2. */
static uint32_t some_bits(struct rng *r, uint32_t mask)
{
	uint32_t out = 0;

	for (unsigned b = 0; b < 32; b++)
		if ((mask & (1u << b)) && rng_below(r, 2))
			out |= 1u << b;
	return out;
}

/* Append ",opt" (or "opt") to buf. */
static void add_opt(char *buf, size_t len, const char *opt)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s", used ? "," : "", opt);
}

bool gen_opts_given(const char *opts, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = opts ? opts : ""; *p;) {
		size_t l = strcspn(p, ",");

		if (key[k - 1] == '=' ? l >= k && !memcmp(p, key, k) :
		    l == k && !memcmp(p, key, k))
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

static void swarm_draw(struct gen *g)
{
	struct gen_round *rd = &g->round;
	struct rng *r = &g->rng;
	unsigned data;

	do {
		for (unsigned k = 1; k < OP_KIND_COUNT; k++) {
			uint32_t w = gen_default_weight[k] ? gen_default_weight[k] :
				     SWARM_RARE_WEIGHT;

			rd->weight[k] = 0;
			if (k == OP_PWRITE || rng_below(r, 2))
				rd->weight[k] = 1 + (uint32_t)rng_below(r, 2 * w);
		}
		rd->attrs = some_bits(r, g->cfg.attrs);
		if (!rd->attrs)
			rd->weight[OP_SET_FLAG] = 0;
		round_weights(g);
	} while (!g->total);
	rd->max_file = log_uniform(r, min64(SWARM_MIN_FILE, g->cfg.max_file),
				   g->cfg.max_file);
	rd->max_op = log_uniform(r, min64(SWARM_MIN_OP, g->cfg.max_op),
				 g->cfg.max_op);
	rd->rt_share = g->cfg.realtime ? (unsigned)rng_below(r, 5) : 0;
	rd->mkfs[0] = rd->mount[0] = 0;
	/* every draw is made (the seed's sequence stays the same), and
	 * kept only where the given options leave the choice open */
	if (rng_below(r, 3) == 0) {
		char opt[24];

		snprintf(opt, sizeof(opt), "maxrecs=%u",
			 4 + (unsigned)rng_below(r, 5));
		if (!gen_opts_given(g->cfg.mkfs, "maxrecs="))
			add_opt(rd->mkfs, sizeof(rd->mkfs), opt);
	}
	data = (unsigned)rng_below(r, 10);
	if (gen_opts_given(g->cfg.mount, "data="))
		data = 10;
	if (data < 2)
		add_opt(rd->mount, sizeof(rd->mount), "data=journal");
	else if (data == 2)
		add_opt(rd->mount, sizeof(rd->mount), "data=writeback");
	if (rng_below(r, 2) && !gen_opts_given(g->cfg.mount, "delalloc") &&
	    !gen_opts_given(g->cfg.mount, "nodelalloc"))
		add_opt(rd->mount, sizeof(rd->mount), "delalloc");
	if (g->cfg.swarm_compress && rng_below(r, 5) == 0 &&
	    !gen_opts_given(g->cfg.mount, "compress="))
		add_opt(rd->mount, sizeof(rd->mount), "compress=zstd");
}

/*
 * The seed of round n's stream: the run's seed itself for the first (so a
 * run of one round draws what it always drew), one drawn from it and n
 * for the others.  A round's ops depend on the seed and its number only,
 * never on the rounds before it: `fsoracle run --jobs` runs rounds side
 * by side and each is the round a run of one job has.
 */
static uint64_t round_seed(uint64_t seed, unsigned n)
{
	uint64_t x = seed ^ ((uint64_t)n * 0xd1b54a32d192ed03ull);

	return n == 1 ? seed : rng_splitmix64(&x);
}

void gen_new_round(struct gen *g)
{
	gen_goto_round(g, g->round.number + 1);
}

void gen_goto_round(struct gen *g, unsigned n)
{
	struct gen_round *rd = &g->round;

	rd->number = n ? n : 1;
	rng_seed(&g->rng, round_seed(g->cfg.seed, rd->number));
	g->cur = 0;
	if (g->cfg.swarm) {
		swarm_draw(g);
	} else {
		rd->max_file = g->cfg.max_file;
		rd->max_op = g->cfg.max_op;
		rd->attrs = g->cfg.attrs;
		rd->rt_share = 3;
	}
	gen_reset_sizes(g);
}

bool gen_round_makes(const struct gen *g, enum op_kind k)
{
	return !(g->cfg.exclude & (1ull << k)) && g->round.weight[k];
}

void gen_round_describe(const struct gen *g, char *buf, size_t len)
{
	const struct gen_round *rd = &g->round;
	size_t used;

	used = (size_t)snprintf(buf, len, "%s round %u: kinds",
				g->cfg.swarm ? "swarm" : "fixed-mix", rd->number);
	for (unsigned k = 1; k < OP_KIND_COUNT && used < len; k++)
		if (!(g->cfg.exclude & (1ull << k)) && rd->weight[k])
			used += (size_t)snprintf(buf + used, len - used, " %s=%u",
						 op_kind_name(k), rd->weight[k]);
	if (used < len)
		used += (size_t)snprintf(buf + used, len - used, "; files up to "
					 "%llu, ops up to %llu bytes; chattr",
					 (unsigned long long)rd->max_file,
					 (unsigned long long)rd->max_op);
	for (unsigned b = 0; b < 4 && used < len; b++)
		if (rd->attrs & (1u << b))
			used += (size_t)snprintf(buf + used, len - used, " +%c",
						 "rojc"[b]);
	if (used < len)
		snprintf(buf + used, len - used, "; new files realtime %u in 4; "
			 "mkfs %s; mount %s", g->cfg.realtime ? rd->rt_share : 0,
			 rd->mkfs[0] ? rd->mkfs : "as given",
			 rd->mount[0] ? rd->mount : "as given");
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
	if (g->cfg.swarm ? rng_below(&g->rng, 4) >= g->round.rt_share :
			   rng_below(&g->rng, 4) == 0)
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
				   (g->cfg.exclude & (1ull << k)) ||
				   !g->round.weight[k]))
		k++;
	return k;
}

/* An offset and length inside [0, limit). */
static void range_in(struct gen *g, uint64_t limit, uint64_t *off,
		     uint64_t *len)
{
	*off = limit ? align_some(g, rng_below(&g->rng, limit)) : 0;
	*len = pick_len(g, min64(g->round.max_op, limit - *off));
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
	maxb = min64(n - *off / bs,
		     g->round.max_op / bs ? g->round.max_op / bs : 1);
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

/*
 * A copy, clone, dedupe or exchange: source range in the second file,
 * destination in the first; block-aligned but for copy_range, clones now
 * and then to the source's EOF, the destination kept below max_file.
 */
static void shape_remap(struct gen *g, struct op *op, unsigned kind,
			uint64_t size, uint64_t maxf)
{
	struct rng *r = &g->rng;
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
}

/*
 * A chattr: in swarm rounds one of the round's attributes; the realtime
 * flag, which only an empty file can change, as a truncate to 0 now and
 * the flag's change next (g->pending).
 */
static void shape_set_flag(struct gen *g, struct op *op)
{
	struct rng *r = &g->rng;

	if (g->cfg.swarm) {
		/* one of the round's attributes, at random */
		uint32_t a = g->round.attrs, pick;

		do
			pick = 1u << rng_below(r, 4);
		while (a && !(a & pick));
		if (pick != OP_ATTR_REALTIME) {
			op->arg = pick;
			if (rng_below(r, 2))
				op->flags = OP_FL_CLEAR;
			return;
		}
	}
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
		return;
	}
	op->arg = 1u << rng_below(r, 4);
	if (rng_below(r, 2))
		op->flags = OP_FL_CLEAR;
}

/*
 * The next op: a pending one first (the second half of a realtime flag
 * change), else a kind drawn from the round's weights and its arguments
 * shaped to it.  It stays in one piece: the switch is the generator's
 * distribution, one case per kind, and its draws from the random stream
 * must keep their order for a seed to reproduce its run.
 */
void gen_next(struct gen *g, struct op *op)
{
	struct rng *r = &g->rng;
	uint64_t maxf = g->round.max_file, maxop = g->round.max_op, size;
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
		op->len = rng_below(r, 2 * maxop + 1);
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
			op->arg = size - rng_below(r, min64(size, maxop) + 1);
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
	case OP_EXCHANGE_RANGE:
		shape_remap(g, op, kind, size, maxf);
		break;
	case OP_CUT: {
		/* mostly inside the next op or two; now and then at once,
		 * or further on; an exact cut (seed 0) one time in four */
		unsigned pt = rng_below(r, 8) ? 1 + (unsigned)rng_below(r, 8) :
			      (unsigned)rng_below(r, 65);

		op->arg = OP_CUT_ARG(pt, rng_below(r, 4) ?
				     1 + rng_below(r, OP_CUT_MAX) : 0);
		break;
	}
	case OP_NAIVE:
	case OP_FALLBACK:
		/* Mixes mostly; all or none now and then. */
		op->arg = rng_below(r, 4) ? rng_below(r, REF_PATHS_ALL + 1ull) :
			  rng_below(r, 2) ? REF_PATHS_ALL : 0;
		break;
	case OP_SET_FLAG:
		shape_set_flag(g, op);
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
