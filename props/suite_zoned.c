/*
 * suite_zoned.c - hw/'s emulated zoned device (zoned:mem, hw/zoned.c and
 * hw/zone_model.c) against the plain model of the zone rules
 * (harness/zone_rules.h), as the `zoned` fuzz target does, but from
 * generated cases that shrink.
 *
 * A case is a tiny random geometry and a sequence of zone operations:
 *
 *   device  2..8 zones of 4..16 KiB, capacity below the size or not,
 *           conventional zones first, max_open / max_active (0 = none),
 *           append_max (0 = the capacity), read-only and offline zones
 *   ops     write  at the write pointer, past it, at the zone start + n
 *                  sectors, or unaligned; lengths that cross zones
 *           append of n sectors, of exactly append_max, one sector over
 *                  it, or unaligned / empty
 *           read   anywhere, across zones; reset, open, close, finish of
 *                  any zone; report of any window (also past the end)
 *
 * All-zero bits give two empty 4 KiB sequential zones and no ops; a
 * zero op is a one-sector write at zone 0's write pointer.  The device
 * is opened fresh per trial; the same ops run on the model, and a write
 * pointer in an op means the model's.
 *
 * Properties:
 *   zoned_results_match_rules     every op returns what the rules say
 *                                 (errno), an append lands where they say,
 *                                 a report fills as many zones
 *   zoned_zones_match_rules       after every op every zone's type,
 *                                 condition, write pointer and capacity
 *                                 are the rules', in a whole report and
 *                                 in the op's report window
 *   zoned_data_matches_rules      every read, and every zone at the end,
 *                                 returns the rules' bytes
 *   zoned_engine_extents_within_device_append_limit
 *                                 the engine's realtime files on a zoned
 *                                 device (8 KiB appends, 32 KiB zones,
 *                                 reclaim) against the model through the
 *                                 checker, then every realtime extent
 *                                 walked from outside: none covers more
 *                                 than the device reports as its largest
 *                                 append (props_append_limit_held)
 *   zoned_zone_state_well_formed  without the model: open and active
 *                                 zones within the limits, write pointers
 *                                 within [start, start + capacity] and
 *                                 fitting the condition, an append lands
 *                                 at the write pointer before it, and
 *                                 bytes past a write pointer read zero
 *
 * The `zoned_planted` suite runs the first property with a deliberate
 * mismatch outside hw/ (a device wrapper that misreports an append's
 * location once its zone holds data; a model that takes the zone size
 * for its capacity): it must fail, and tests/test_props_zoned.c checks
 * what each shrinks to.  `fsoracle prop` runs it only when named.
 */
#include "props/props.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/zone_rules.h"
#include "hw/hw.h"

#define SECTOR    512u
#define BLOCK     4096u
#define MAX_ZONES 8
#define MAX_ZONE  (4 * BLOCK)
#define MAX_DEV   (MAX_ZONES * MAX_ZONE)
#define MAX_OPS   64
#define AVG_OPS   24

enum zkind { Z_WRITE, Z_APPEND, Z_READ, Z_RESET, Z_OPEN, Z_CLOSE, Z_FINISH,
	     Z_REPORT, Z_KINDS };
static const char *const kind_name[Z_KINDS] = {
	"write", "append", "read", "reset", "open", "close", "finish", "report",
};

/* Where a write or read starts: relative to the zone, resolved per run. */
enum zwhere { AT_WP, WP_PLUS, START_PLUS, START_UNALIGNED };

/* How often each comes up (the first is what zero bits give). */
static const uint8_t kind_weight[] = {
	Z_WRITE, Z_WRITE, Z_WRITE, Z_WRITE, Z_APPEND, Z_APPEND, Z_APPEND,
	Z_READ, Z_READ, Z_RESET, Z_OPEN, Z_OPEN, Z_CLOSE, Z_CLOSE, Z_FINISH,
	Z_REPORT,
};
static const uint8_t where_weight[] = {
	AT_WP, AT_WP, AT_WP, AT_WP, AT_WP, WP_PLUS, START_PLUS, START_UNALIGNED,
};

struct zop {
	uint8_t kind, zone, where;
	uint32_t sectors, bytes;  /* where: + sectors * 512 + bytes      */
	uint32_t len;             /* bytes (write, append, read)         */
	uint32_t first, nr;       /* report                              */
};

struct zcase {
	struct zrules_cfg cfg;
	uint32_t n;
	struct zop ops[MAX_OPS];
};

/* ---- generation ---- */

static uint32_t append_max(const struct zrules_cfg *c)
{
	return c->max_append && c->max_append <= c->capacity ?
	       c->max_append : (uint32_t)c->capacity;
}

/*
 * A choice in [0, n), n <= 16, that always takes one entry of the same
 * width: a choice whose range depends on the geometry must not vanish
 * (props_below(1) draws nothing) or the entries after it would change
 * meaning whenever the shrinker makes the geometry smaller.
 */
static uint32_t pick(struct props_trial *t, uint32_t n)
{
	return (uint32_t)(props_below(t, 16) % n);
}

static void gen_cfg(struct props_trial *t, struct zrules_cfg *c)
{
	uint32_t nr_seq, blocks;

	memset(c, 0, sizeof(*c));
	c->nr_zones = 2 + pick(t, MAX_ZONES - 1);
	blocks = 1 + pick(t, MAX_ZONE / BLOCK);
	c->zone_size = (uint64_t)blocks * BLOCK;
	c->capacity = c->zone_size - BLOCK * pick(t, blocks);
	/* few conventional zones: the rules are in the others */
	c->nr_conv = pick(t, 3);
	if (c->nr_conv >= c->nr_zones)
		c->nr_conv = c->nr_zones - 1;
	nr_seq = c->nr_zones - c->nr_conv;
	c->max_open = pick(t, nr_seq + 1);
	c->max_active = pick(t, nr_seq + 1);
	if (props_bool(t))
		c->max_append = SECTOR * (uint32_t)props_int(t, 1,
							     c->capacity / SECTOR);
	/* read-only and offline zones now and then: they take zones away */
	if (props_below(t, 8) == 7) {
		c->nr_readonly = pick(t, nr_seq + 1);
		c->nr_offline = pick(t, nr_seq - c->nr_readonly + 1);
	}
}

/* A length in sectors, one time in eight with a ragged byte tail. */
static uint32_t gen_len(struct props_trial *t, uint64_t max_sectors)
{
	uint32_t len = SECTOR * (uint32_t)props_int(t, 1, max_sectors);

	if (props_below(t, 8) == 7)
		len += (uint32_t)props_int(t, 1, SECTOR - 1);
	return len;
}

static void gen_op(struct props_trial *t, const struct zrules_cfg *c,
		   struct zop *o)
{
	uint64_t zsec = c->zone_size / SECTOR;
	uint32_t am = append_max(c);

	memset(o, 0, sizeof(*o));
	o->kind = kind_weight[props_below(t, sizeof(kind_weight))];
	if (o->kind == Z_REPORT) {
		o->first = pick(t, c->nr_zones + 2);
		o->nr = pick(t, c->nr_zones + 2);
		return;
	}
	/*
	 * Counted from the first sequential zone, round to the conventional
	 * ones: 0 is the simplest zone that has rules, and one value names
	 * one zone however many conventional zones the shrinker leaves.
	 */
	o->zone = (uint8_t)((c->nr_conv + props_below(t, MAX_ZONES)) %
			    c->nr_zones);
	switch (o->kind) {
	case Z_WRITE:
	case Z_READ:
		/* writes mostly at the write pointer; a read does not care */
		o->where = o->kind == Z_READ ?
			   START_PLUS + (uint8_t)props_below(t, 2) :
			   where_weight[props_below(t, sizeof(where_weight))];
		if (o->where == WP_PLUS)
			o->sectors = (uint32_t)props_int(t, 1, zsec);
		if (o->where >= START_PLUS)
			o->sectors = (uint32_t)props_int(t, 0, zsec);
		if (o->where == START_UNALIGNED)
			o->bytes = (uint32_t)props_int(t, 1, SECTOR - 1);
		/* within a zone mostly, now and then across the next */
		o->len = gen_len(t, props_below(t, 4) < 3 ? zsec : 2 * zsec);
		break;
	case Z_APPEND:
		switch (props_below(t, 8)) {
		default: o->len = SECTOR * (1 + (uint32_t)props_int(t, 0,
						MAX_ZONE / SECTOR) % (am / SECTOR));
			break;
		case 5: o->len = am; break;
		case 6: o->len = am + SECTOR; break;
		case 7: o->len = (uint32_t)props_int(t, 0, SECTOR - 1); break;
		}
		break;
	default:
		break;
	}
}

static int case_alloc(struct props_trial *t, void *env, void **out)
{
	struct zcase *c = calloc(1, sizeof(*c));
	struct props_many m = PROPS_MANY(0, MAX_OPS, AVG_OPS);

	(void)env;
	if (!c)
		return PROPS_ERROR;
	gen_cfg(t, &c->cfg);
	while (props_more(t, &m) && c->n < MAX_OPS)
		gen_op(t, &c->cfg, &c->ops[c->n++]);
	*out = c;
	return PROPS_PASS;
}

static void op_text(const struct zop *o, char *buf, size_t len)
{
	int n;

	if (o->kind == Z_REPORT) {
		snprintf(buf, len, "report from zone %u, %u zones", o->first,
			 o->nr);
		return;
	}
	n = snprintf(buf, len, "%s zone %u", kind_name[o->kind], o->zone);
	if (n < 0 || (size_t)n >= len)
		return;
	if (o->kind == Z_WRITE || o->kind == Z_READ)
		n += snprintf(buf + n, len - (size_t)n, " at %s+%u",
			      o->where <= WP_PLUS ? "wp" : "start",
			      o->sectors * SECTOR + o->bytes);
	if ((o->kind == Z_WRITE || o->kind == Z_READ || o->kind == Z_APPEND) &&
	    n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " len %u", o->len);
}

static void case_print(FILE *f, const void *inst, void *env)
{
	const struct zcase *c = inst;
	char spec[256], op[96];

	(void)env;
	zrules_spec(&c->cfg, spec, sizeof(spec));
	fprintf(f, "device %s\n", spec);
	if (!c->n)
		fprintf(f, "(no ops)\n");
	for (uint32_t i = 0; i < c->n; i++) {
		op_text(&c->ops[i], op, sizeof(op));
		fprintf(f, "%s\n", op);
	}
}

static const struct props_type case_type = {
	.name = "zoned", .alloc = case_alloc, .print = case_print,
};

/* ---- running a case ---- */

enum { CK_RESULTS = 1, CK_ZONES = 2, CK_DATA = 4, CK_WELL_FORMED = 8 };

/* Deliberate mismatches, for the planted suite only. */
enum zperturb {
	PERTURB_NONE,
	PERTURB_APPEND_LOCATION,   /* the device's append location + 1 sector
				      once the zone holds data              */
	PERTURB_MODEL_CAPACITY,    /* the model's capacity is the zone size */
};

struct zprop {
	unsigned checks;
	enum zperturb perturb;
};

struct zrun {
	struct props_trial *t;
	const struct zprop *p;
	const struct zrules_cfg *cfg;
	struct hw_dev *dev;
	struct zrules m;
	uint32_t opno;
	char what[128];          /* "op N (write zone ...)", "after open" */
};

static uint8_t wbuf[MAX_DEV + BLOCK], rbuf_dev[MAX_DEV + BLOCK],
	       rbuf_rules[MAX_DEV + BLOCK];

static int fail(struct zrun *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct zrun *r, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	props_note(r->t, "%s: %s", r->what, msg);
	return PROPS_FAIL;
}

static const char *cond_name(unsigned c)
{
	static const char *const names[] = {
		"not_wp", "empty", "imp_open", "exp_open", "closed", "full",
		"readonly", "offline",
	};

	return c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

static int zone_differs(const struct hw_zone *a, const struct hw_zone *b)
{
	return a->start != b->start || a->len != b->len ||
	       a->capacity != b->capacity || a->wp != b->wp ||
	       a->type != b->type || a->cond != b->cond;
}

/* Zones [first, first + n) of the device and the rules, one by one. */
static int zones_agree(struct zrun *r, uint64_t first,
		       const struct hw_zone *d, const struct hw_zone *w,
		       unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		if (!zone_differs(&d[k], &w[k]))
			continue;
		return fail(r, "zone %llu: the device reports type %u %s wp +%lld "
			    "cap %llu, the rules type %u %s wp +%lld cap %llu",
			    (unsigned long long)(first + k), d[k].type,
			    cond_name(d[k].cond),
			    (long long)(d[k].wp - d[k].start),
			    (unsigned long long)d[k].capacity, w[k].type,
			    cond_name(w[k].cond),
			    (long long)(w[k].wp - w[k].start),
			    (unsigned long long)w[k].capacity);
	}
	return PROPS_PASS;
}

static int report_all(struct zrun *r, struct hw_zone *z)
{
	unsigned nr = r->cfg->nr_zones;
	int ret = hw_report_zones(r->dev, 0, z, &nr);

	if (ret || nr != r->cfg->nr_zones)
		return fail(r, "a whole report gave %d with %u of %u zones", ret,
			    nr, r->cfg->nr_zones);
	return PROPS_PASS;
}

static int every_zone_agrees(struct zrun *r)
{
	struct hw_zone d[MAX_ZONES], w[MAX_ZONES];
	unsigned nw = MAX_ZONES;

	if (report_all(r, d) != PROPS_PASS)
		return PROPS_FAIL;
	zrules_report(&r->m, 0, w, &nw);
	return zones_agree(r, 0, d, w, nw);
}

/* Bytes read from off, device vs rules. */
static int bytes_agree(struct zrun *r, uint64_t off, const uint8_t *d,
		       const uint8_t *w, size_t len)
{
	for (size_t k = 0; k < len; k++)
		if (d[k] != w[k])
			return fail(r, "byte %llu is 0x%02x on the device, 0x%02x "
				    "by the rules", (unsigned long long)(off + k),
				    d[k], w[k]);
	return PROPS_PASS;
}

static int every_zone_reads_alike(struct zrun *r)
{
	const struct zrules_cfg *c = r->cfg;

	for (uint32_t i = 0; i < c->nr_zones; i++) {
		uint64_t off = (uint64_t)i * c->zone_size;
		size_t len = (size_t)c->zone_size;
		int a = hw_read(r->dev, off, rbuf_dev, len);
		int b = zrules_read(&r->m, off, rbuf_rules, len);

		if (a != b)
			return fail(r, "reading zone %u gave %d on the device, %d "
				    "by the rules", i, a, b);
		if (!a && bytes_agree(r, off, rbuf_dev, rbuf_rules, len))
			return PROPS_FAIL;
	}
	return PROPS_PASS;
}

static int is_open(unsigned c)
{
	return c == HW_ZC_IMP_OPEN || c == HW_ZC_EXP_OPEN;
}

/* What a zone's condition says of its write pointer. */
static int wp_fits(const struct hw_zone *z)
{
	uint64_t end = z->start + z->capacity;

	switch (z->cond) {
	case HW_ZC_EMPTY:    return z->wp == z->start;
	case HW_ZC_IMP_OPEN:
	case HW_ZC_EXP_OPEN: return z->wp >= z->start && z->wp < end;
	case HW_ZC_CLOSED:   return z->wp > z->start && z->wp < end;
	case HW_ZC_FULL:     return z->wp == end;
	default:             return z->wp >= z->start && z->wp <= end;
	}
}

/* Zone z (device's report) reads zeros from its write pointer on. */
static int past_wp_reads_zero(struct zrun *r, const struct hw_zone *z)
{
	uint64_t end = z->start + z->len;
	int ret;

	if (z->type != HW_ZONE_SEQ || z->cond == HW_ZC_OFFLINE ||
	    z->wp >= end)
		return PROPS_PASS;
	ret = hw_read(r->dev, z->wp, rbuf_dev, (size_t)(end - z->wp));
	if (ret)
		return fail(r, "reading past zone %llu's write pointer gave %d",
			    (unsigned long long)(z->start / z->len), ret);
	for (uint64_t k = 0; k < end - z->wp; k++)
		if (rbuf_dev[k])
			return fail(r, "byte %llu, past zone %llu's write "
				    "pointer +%llu, reads 0x%02x",
				    (unsigned long long)(z->wp + k),
				    (unsigned long long)(z->start / z->len),
				    (unsigned long long)(z->wp - z->start),
				    rbuf_dev[k]);
	return PROPS_PASS;
}

/* The device's own report, without the model.  zone < 0: every zone's
 * bytes past its write pointer, else only that zone's. */
static int well_formed(struct zrun *r, long zone)
{
	const struct zrules_cfg *c = r->cfg;
	struct hw_zone z[MAX_ZONES];
	uint32_t open = 0, active = 0;

	if (report_all(r, z) != PROPS_PASS)
		return PROPS_FAIL;
	for (uint32_t i = 0; i < c->nr_zones; i++) {
		int conv = i < c->nr_conv;

		if (z[i].type != (conv ? HW_ZONE_CONV : HW_ZONE_SEQ) ||
		    (conv != (z[i].cond == HW_ZC_NOT_WP)))
			return fail(r, "zone %u is type %u %s, but %s", i,
				    z[i].type, cond_name(z[i].cond),
				    conv ? "conventional" : "sequential");
		if (!conv && (z[i].capacity != c->capacity || !wp_fits(&z[i])))
			return fail(r, "zone %u is %s with wp +%lld and capacity "
				    "%llu of %llu", i, cond_name(z[i].cond),
				    (long long)(z[i].wp - z[i].start),
				    (unsigned long long)z[i].capacity,
				    (unsigned long long)c->capacity);
		open += is_open(z[i].cond);
		active += is_open(z[i].cond) || z[i].cond == HW_ZC_CLOSED;
		if ((zone < 0 || zone == (long)i) &&
		    past_wp_reads_zero(r, &z[i]) != PROPS_PASS)
			return PROPS_FAIL;
	}
	/* a limit at or above the sequential zones is none: still holds */
	if ((c->max_open && open > c->max_open) ||
	    (c->max_active && active > c->max_active))
		return fail(r, "%u zones open and %u active, the limits are %u "
			    "and %u", open, active, c->max_open, c->max_active);
	return PROPS_PASS;
}

/* The device's append, through the planted wrapper when asked. */
static int dev_append(struct zrun *r, uint64_t zone, size_t len,
		      uint64_t *at)
{
	int ret = hw_zone_append(r->dev, zone, wbuf, len, 0, at);

	if (!ret && r->p->perturb == PERTURB_APPEND_LOCATION &&
	    *at != zone * r->cfg->zone_size)
		*at += SECTOR;
	return ret;
}

static uint64_t op_offset(const struct zrun *r, const struct zop *o)
{
	uint64_t start = (uint64_t)o->zone * r->cfg->zone_size;
	uint64_t base = o->where <= WP_PLUS ? r->m.wp[o->zone] : start;

	return base + (uint64_t)o->sectors * SECTOR + o->bytes;
}

static int step(struct zrun *r, const struct zop *o)
{
	const unsigned ck = r->p->checks;
	uint64_t start = (uint64_t)o->zone * r->cfg->zone_size;
	uint64_t off = op_offset(r, o), at_dev = 0, at_rules = 0, wp_before = 0;
	struct hw_zone d[MAX_ZONES + 2], w[MAX_ZONES + 2];
	unsigned nd = o->nr, nw = o->nr;
	char text[96];
	int a, b;

	op_text(o, text, sizeof(text));
	snprintf(r->what, sizeof(r->what), "op %u (%s)", r->opno, text);
	for (uint32_t k = 0; k < o->len; k++)
		wbuf[k] = (uint8_t)(1 + r->opno * 29 + k * 7 + (k >> 9));
	if (ck & CK_WELL_FORMED) {
		if (report_all(r, d) != PROPS_PASS)
			return PROPS_FAIL;
		wp_before = d[o->zone].wp;
	}

	switch (o->kind) {
	case Z_WRITE:
		a = hw_write(r->dev, off, wbuf, o->len, 0);
		b = zrules_write(&r->m, off, wbuf, o->len);
		break;
	case Z_APPEND:
		a = dev_append(r, o->zone, o->len, &at_dev);
		b = zrules_append(&r->m, o->zone, wbuf, o->len, &at_rules);
		break;
	case Z_READ:
		a = hw_read(r->dev, off, rbuf_dev, o->len);
		b = zrules_read(&r->m, off, rbuf_rules, o->len);
		break;
	case Z_REPORT:
		a = hw_report_zones(r->dev, o->first, d, &nd);
		b = zrules_report(&r->m, o->first, w, &nw);
		break;
	default:
		a = hw_zone_mgmt(r->dev, (enum hw_zone_op)(HW_ZONE_RESET +
							   o->kind - Z_RESET),
				 o->zone);
		b = zrules_mgmt(&r->m, (enum hw_zone_op)(HW_ZONE_RESET +
							 o->kind - Z_RESET),
				o->zone);
		break;
	}

	if (ck & CK_RESULTS) {
		if (a != b)
			return fail(r, "the device returned %d, the rules %d", a, b);
		if (o->kind == Z_APPEND && !a && at_dev != at_rules)
			return fail(r, "appended at +%llu on the device, +%llu by "
				    "the rules", (unsigned long long)(at_dev - start),
				    (unsigned long long)(at_rules - start));
		if (o->kind == Z_REPORT && !a && nd != nw)
			return fail(r, "the device reported %u zones, the rules "
				    "%u", nd, nw);
	}
	if ((ck & CK_ZONES) && o->kind == Z_REPORT && !a && !b &&
	    zones_agree(r, o->first, d, w, nd < nw ? nd : nw) != PROPS_PASS)
		return PROPS_FAIL;
	if ((ck & CK_ZONES) && every_zone_agrees(r) != PROPS_PASS)
		return PROPS_FAIL;
	if ((ck & CK_DATA) && o->kind == Z_READ && !a && !b &&
	    bytes_agree(r, off, rbuf_dev, rbuf_rules, o->len) != PROPS_PASS)
		return PROPS_FAIL;
	if (ck & CK_WELL_FORMED) {
		if (o->kind == Z_APPEND && !a && at_dev != wp_before)
			return fail(r, "appended at +%llu, the write pointer was "
				    "at +%llu", (unsigned long long)(at_dev - start),
				    (unsigned long long)(wp_before - start));
		if (well_formed(r, o->kind == Z_REPORT ? -1 : o->zone) !=
		    PROPS_PASS)
			return PROPS_FAIL;
	}
	return PROPS_PASS;
}

static int run_case(struct props_trial *t, void *arg)
{
	const struct zcase *c = arg;
	struct zrun r = { .t = t, .p = props_env(t), .cfg = &c->cfg };
	struct zrules_cfg mcfg = c->cfg;
	char spec[256], err[256];
	int res = PROPS_PASS;

	if (r.p->perturb == PERTURB_MODEL_CAPACITY)
		mcfg.capacity = mcfg.zone_size;
	zrules_spec(&c->cfg, spec, sizeof(spec));
	if (hw_open(spec, &r.dev, err, sizeof(err))) {
		props_note(t, "cannot open %s: %s", spec, err);
		return PROPS_ERROR;
	}
	if (zrules_init(&r.m, &mcfg)) {
		hw_close(r.dev);
		props_note(t, "the rules refuse %s", spec);
		return PROPS_ERROR;
	}
	snprintf(r.what, sizeof(r.what), "after open");
	if (r.p->checks & CK_ZONES)
		res = every_zone_agrees(&r);
	if (res == PROPS_PASS && (r.p->checks & CK_WELL_FORMED))
		res = well_formed(&r, -1);
	for (uint32_t i = 0; i < c->n && res == PROPS_PASS; i++) {
		r.opno = i + 1;
		res = step(&r, &c->ops[i]);
	}
	if (res == PROPS_PASS && (r.p->checks & CK_DATA)) {
		snprintf(r.what, sizeof(r.what), "after the last op");
		res = every_zone_reads_alike(&r);
	}
	zrules_free(&r.m);
	hw_close(r.dev);
	return res;
}

/* ---- the engine on a zoned device: the append limit ---- */

#define ZE_NFILES 3
#define ZE_MKFS "bs=4k,maxrecs=4,inodes=64,journal=64"

static struct props_targets ze_pt = {
	.list = "engine,model", .dev = "mem:8m", .mkfs = ZE_MKFS,
	.rtdev = "zoned:mem,size=1m,zone=32k,append_max=8k,max_open=2,"
		 "max_active=2",
};
static const struct props_ops_env ze_env = {
	.max_file = 64 * 1024, .nfiles = ZE_NFILES,
	.kinds = PROPS_KINDS_DATA | PROPS_KINDS_DURABLE |
		 PROPS_KIND(OP_COPY_RANGE) | PROPS_KIND(OP_REMOUNT) |
		 PROPS_KIND(OP_CRASH),
	.max_ops = 48, .avg_ops = 16, .dev = "mem:8m", .mkfs = ZE_MKFS,
	.targets = "engine,model",
};
static const struct props_type ze_ops = PROPS_OPS_TYPE(&ze_env);

/* Every file realtime first (chattr +r), the ops, then the limit. */
static int engine_within_limit(struct props_trial *t, void *arg)
{
	const struct op_seq *seq = arg;
	struct op_seq s;
	int res = PROPS_ERROR;

	op_seq_init(&s);
	op_seq_copy_meta(&s, seq);
	for (unsigned f = 0; f < ZE_NFILES; f++) {
		struct op op = { .kind = OP_SET_FLAG, .file = (uint8_t)f,
				 .arg = OP_ATTR_REALTIME };

		if (op_seq_push(&s, &op))
			goto out;
	}
	for (size_t i = 0; i < seq->n; i++)
		if (op_seq_push(&s, &seq->ops[i]))
			goto out;
	res = props_check_ops(t, &ze_pt, &s, NULL);
	if (res == PROPS_PASS)
		res = props_append_limit_held(t, ze_pt.t[0], ZE_NFILES);
out:
	op_seq_free(&s);
	return res;
}

/* ---- the suites ---- */

static const struct zprop results = { CK_RESULTS, PERTURB_NONE };
static const struct zprop zones = { CK_ZONES, PERTURB_NONE };
static const struct zprop data = { CK_DATA, PERTURB_NONE };
static const struct zprop well = { CK_WELL_FORMED, PERTURB_NONE };
static const struct zprop append_location = { CK_RESULTS,
					       PERTURB_APPEND_LOCATION };
static const struct zprop model_capacity = { CK_RESULTS,
					     PERTURB_MODEL_CAPACITY };

#define Z_CFG(envp) { .prop1 = run_case, .types = { &case_type },            \
	.env = (void *)(envp) }

static const struct props_prop props[] = {
	{
		.name = "zoned_results_match_rules",
		.doc = "every zone op returns what the rules say, appends land "
		       "where they say, reports fill as many zones",
		.cfg = Z_CFG(&results),
	},
	{
		.name = "zoned_zones_match_rules",
		.doc = "after every op every zone's type, condition, write "
		       "pointer and capacity are the rules'",
		.cfg = Z_CFG(&zones),
	},
	{
		.name = "zoned_data_matches_rules",
		.doc = "every read, and every zone after the last op, returns "
		       "the rules' bytes",
		.cfg = Z_CFG(&data),
	},
	{
		.name = "zoned_zone_state_well_formed",
		.doc = "open/active zones within the limits, write pointers "
		       "fit capacity and condition, appends land at the write "
		       "pointer, bytes past it read zero (no model)",
		.cfg = Z_CFG(&well),
	},
	{
		.name = "zoned_engine_extents_within_device_append_limit",
		.doc = "engine vs model, realtime files on a zoned device: no "
		       "realtime extent covers more than the device's reported "
		       "append limit",
		.cfg = PROPS_TARGETS_CFG(engine_within_limit, &ze_ops, &ze_pt),
	},
};

const struct props_suite props_suite_zoned = {
	.name = "zoned",
	.doc = "zoned:mem against the plain zone rules (harness/zone_rules.h) "
	       "on tiny random geometries",
	PROPS_LIST(props),
};

static const struct props_prop planted[] = {
	{
		.name = "zoned_planted_append_location",
		.doc = "a wrapper misreports an append's location once the "
		       "zone holds data: fails, minimum 2 ops",
		.cfg = Z_CFG(&append_location),
	},
	{
		.name = "zoned_planted_model_capacity",
		.doc = "the model takes the zone size for the capacity: fails, "
		       "minimum 1 op past a capacity below the size (shrinking "
		       "may stop at 2-3: fill the zone, then one more)",
		.cfg = Z_CFG(&model_capacity),
	},
};

const struct props_suite props_suite_zoned_planted = {
	.name = "zoned_planted",
	.doc = "the zoned suite with planted mismatches (must fail)",
	PROPS_LIST(planted),
	.planted = 1,
};
