/*
 * hw.c - the front door of every device: the spec parser that picks a
 * backend (or a layer and, recursively, what it stacks on), and the I/O
 * wrappers that check arguments and keep counters before calling into
 * the vtable.
 *
 * Backends may therefore assume a sane call: a non-NULL buffer, len > 0,
 * off + len <= size, and only known flags.  Counters count completed
 * calls (a failed or rejected call counts nothing), so two runs of the
 * same operations report the same numbers.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct hw_backend *const backends[] = {
	&hw_null_backend,
	&hw_mem_backend,
	&hw_file_backend,
	&hw_pmem_backend,
	&hw_zoned_backend,
	&hw_zbd_backend,
};

static const struct hw_layer_kind *const layers[] = {
	&hw_crash_layer,
	&hw_faulty_layer,
	&hw_log_layer,
};

#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))
#define NLAYERS   (sizeof(layers) / sizeof(layers[0]))
#define LAYERS_MAX 8     /* deepest stack hw_open() builds */

struct hw_dev *hw_layer_lower(struct hw_dev *dev)
{
	for (size_t i = 0; dev && i < NLAYERS; i++)
		if (dev->ops == layers[i]->ops)
			return ((struct hw_layer *)dev)->lower;
	return NULL;
}

struct hw_dev *hw_layer_find(struct hw_dev *dev, const struct hw_ops *ops)
{
	for (; dev; dev = hw_layer_lower(dev))
		if (dev->ops == ops)
			return dev;
	return NULL;
}

int hw_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || errlen == 0)
		return rc;
	n = snprintf(err, errlen, "hw: ");
	if (n < 0 || (size_t)n >= errlen)
		return rc;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * Sizes and offsets: "4096", "0x1000", "64m", "1G".  Written by hand
 * rather than with strtoull, which would accept leading blanks, signs
 * ("-1" wraps to 2^64 - 1) and treat "010" as octal.
 */
static int digit_value(char c, unsigned base)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hw_parse_size(const char *s, uint64_t *out)
{
	unsigned base = 10, shift = 0;
	uint64_t v = 0;
	const char *p;
	int d;

	if (!s || !out)
		return -EINVAL;
	p = s;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (digit_value(*p, base) < 0)
		return -EINVAL;           /* "", "0x", "k", "-1", " 1" */
	for (; (d = digit_value(*p, base)) >= 0; p++) {
		if (v > (UINT64_MAX - (unsigned)d) / base)
			return -EINVAL;
		v = v * base + (unsigned)d;
	}
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	case 't': case 'T': shift = 40; p++; break;
	}
	if (*p != '\0')
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

/* What the option parser needs to know of a backend or a layer. */
struct opt_rules {
	const char *kind;
	const char *const *keys;
	bool bare;              /* layers: "sticky" means "sticky=" */
};

static bool key_accepted(const struct opt_rules *r, const char *key)
{
	for (const char *const *k = r->keys; k && *k; k++)
		if (strcmp(*k, key) == 0)
			return true;
	return false;
}

/* "size, zone" for the error line of an unknown key. */
static void list_keys(const struct opt_rules *r, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (const char *const *k = r->keys; k && *k; k++) {
		int n = snprintf(buf + used, len - used, "%s%s",
				 used ? ", " : "", *k);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
}

static int opts_add(struct hw_opts *o, const struct opt_rules *r,
		    char *field, char *err, size_t errlen)
{
	char *eq = strchr(field, '=');
	const char *val;
	char keys[256];

	if (*field == '\0')
		return hw_errf(err, errlen, -EINVAL,
			       "empty option in '%s' (usage: %s)",
			       o->spec, o->usage);
	if (!eq && !r->bare)
		return hw_errf(err, errlen, -EINVAL,
			       "option '%s' in '%s' is not key=value",
			       field, o->spec);
	if (eq) {
		*eq = '\0';
		val = eq + 1;
		if (*field == '\0' || *val == '\0')
			return hw_errf(err, errlen, -EINVAL,
				       "option '%s=%s' in '%s' has an empty %s",
				       field, val, o->spec,
				       *field ? "value" : "key");
	} else {
		val = "";
	}
	if (!key_accepted(r, field)) {
		list_keys(r, keys, sizeof(keys));
		if (keys[0] == '\0')
			return hw_errf(err, errlen, -EINVAL,
				       "unknown option '%s' in '%s' (%s takes no options)",
				       field, o->spec, r->kind);
		return hw_errf(err, errlen, -EINVAL,
			       "unknown option '%s' in '%s' (%s accepts: %s)",
			       field, o->spec, r->kind, keys);
	}
	if (hw_opts_get(o, field))
		return hw_errf(err, errlen, -EINVAL,
			       "option '%s' given twice in '%s'",
			       field, o->spec);
	if (o->nopts == HW_OPTS_MAX)
		return hw_errf(err, errlen, -EINVAL,
			       "more than %d options in '%s'",
			       HW_OPTS_MAX, o->spec);
	o->opt[o->nopts].key = field;
	o->opt[o->nopts].val = val;
	o->nopts++;
	return 0;
}

/*
 * Split body ("FIRST,key=value,..." or, without a first field,
 * "key=value,...") into o.  An empty body has no options.
 */
static int opts_split(struct hw_opts *o, const struct opt_rules *r,
		      const char *usage, const char *spec, const char *body,
		      size_t len, bool has_first, char *err, size_t errlen)
{
	char *field, *comma;
	int rc;

	memset(o, 0, offsetof(struct hw_opts, buf));
	o->spec = spec;
	o->usage = usage;
	o->first = "";
	if (len >= sizeof(o->buf))
		return hw_errf(err, errlen, -ENAMETOOLONG,
			       "spec for %s is longer than %d bytes",
			       r->kind, HW_SPEC_MAX - 1);
	memcpy(o->buf, body, len);
	o->buf[len] = '\0';
	if (!has_first && len == 0)
		return 0;

	field = o->buf;
	if (has_first) {
		comma = strchr(o->buf, ',');
		if (comma)
			*comma = '\0';
		o->first = o->buf;
		if (!comma)
			return 0;
		field = comma + 1;
	}
	for (;;) {
		comma = strchr(field, ',');
		if (comma)
			*comma = '\0';
		rc = opts_add(o, r, field, err, errlen);
		if (rc || !comma)
			return rc;
		field = comma + 1;
	}
}

int hw_opts_parse(struct hw_opts *o, const struct hw_backend *be,
		  const char *spec, const char *body, char *err, size_t errlen)
{
	struct opt_rules r = { be->kind, be->keys, false };

	return opts_split(o, &r, be->usage, spec, body, strlen(body), true,
			  err, errlen);
}

const char *hw_opts_get(const struct hw_opts *o, const char *key)
{
	for (unsigned i = 0; i < o->nopts; i++)
		if (strcmp(o->opt[i].key, key) == 0)
			return o->opt[i].val;
	return NULL;
}

int hw_opts_number(const struct hw_opts *o, const char *what, const char *s,
		   uint64_t *out, char *err, size_t errlen)
{
	if (!s || *s == '\0')
		return hw_errf(err, errlen, -EINVAL,
			       "missing %s in '%s' (usage: %s)",
			       what, o->spec, o->usage);
	if (hw_parse_size(s, out))
		return hw_errf(err, errlen, -EINVAL,
			       "bad %s '%s' in '%s' (expected a number, 0x hex allowed, with optional k/m/g/t suffix, below 2^64)",
			       what, s, o->spec);
	return 0;
}

int hw_opts_dev_size(const struct hw_opts *o, const char *what, const char *s,
		     uint64_t *out, char *err, size_t errlen)
{
	int rc = hw_opts_number(o, what, s, out, err, errlen);

	if (rc)
		return rc;
	if (*out == 0)
		return hw_errf(err, errlen, -EINVAL,
			       "%s '%s' in '%s' must be greater than 0",
			       what, s, o->spec);
	if (*out % HW_BLOCK)
		return hw_errf(err, errlen, -EINVAL,
			       "%s '%s' in '%s' is not a multiple of %u",
			       what, s, o->spec, HW_BLOCK);
	return 0;
}

int hw_opts_u64(const struct hw_opts *o, const char *key, uint64_t def,
		uint64_t *out, char *err, size_t errlen)
{
	const char *s = hw_opts_get(o, key);

	*out = def;
	return s ? hw_opts_number(o, key, s, out, err, errlen) : 0;
}

int hw_opts_u32(const struct hw_opts *o, const char *key, uint32_t def,
		uint32_t *out, char *err, size_t errlen)
{
	uint64_t v;
	int rc = hw_opts_u64(o, key, def, &v, err, errlen);

	if (rc)
		return rc;
	if (v > UINT32_MAX)
		return hw_errf(err, errlen, -EINVAL,
			       "%s=%s in '%s' is above %u", key,
			       hw_opts_get(o, key), o->spec, UINT32_MAX);
	*out = (uint32_t)v;
	return 0;
}

void *hw_grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 64;
	void *p;

	if (n < *cap)
		return arr;
	if (ncap > SIZE_MAX / elem)
		return NULL;
	p = realloc(arr, ncap * elem);
	if (p)
		*cap = ncap;
	return p;
}

void hw_dev_init(struct hw_dev *dev, const struct hw_ops *ops, uint64_t size,
		 uint32_t caps)
{
	memset(dev, 0, sizeof(*dev));
	dev->ops = ops;
	dev->geo.size = size;
	dev->geo.sector_size = 512;
	dev->geo.atomic_write = 512;
	dev->geo.caps = caps;
}

static void kind_list(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NBACKENDS + NLAYERS; i++) {
		const char *k = i < NBACKENDS ? backends[i]->kind
					      : layers[i - NBACKENDS]->kind;
		int n = snprintf(buf + used, len - used, "%s%s",
				 i ? ", " : "", k);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
}

static bool kind_is(const char *kind, const char *s, size_t len)
{
	return strlen(kind) == len && memcmp(kind, s, len) == 0;
}

static int open_spec(const char *spec, unsigned depth, struct hw_dev **out,
		     char *err, size_t errlen);

/*
 * "KIND[OPTIONS]:LOWER" at spec, KIND already matched to lk and p just
 * past it.  Options first, so a typo costs nothing; then the lower
 * device, then the layer around it.
 */
static int open_layer(const struct hw_layer_kind *lk, const char *spec,
		      const char *p, unsigned depth, struct hw_dev **out,
		      char *err, size_t errlen)
{
	struct opt_rules r = { lk->kind, lk->keys, true };
	const char *body = p, *close = p;
	struct hw_dev *lower;
	struct hw_opts o;
	int rc;

	if (*p == '[') {
		body = p + 1;
		close = strchr(body, ']');
		if (!close)
			return hw_errf(err, errlen, -EINVAL,
				       "unclosed '[' in '%s' (usage: %s)",
				       spec, lk->usage);
		p = close + 1;
	}
	if (*p != ':' || p[1] == '\0')
		return hw_errf(err, errlen, -EINVAL,
			       "%s layer without a device to stack on in '%s' (usage: %s)",
			       lk->kind, spec, lk->usage);
	if (depth >= LAYERS_MAX)
		return hw_errf(err, errlen, -EINVAL,
			       "more than %d layers in '%s'", LAYERS_MAX, spec);
	rc = opts_split(&o, &r, lk->usage, spec, body, (size_t)(close - body),
			false, err, errlen);
	if (rc)
		return rc;
	rc = open_spec(p + 1, depth + 1, &lower, err, errlen);
	if (rc)
		return rc;
	rc = lk->open(&o, lower, out, err, errlen);
	if (rc) {
		hw_close(lower);
		*out = NULL;
	}
	return rc;
}

static int open_spec(const char *spec, unsigned depth, struct hw_dev **out,
		     char *err, size_t errlen)
{
	const struct hw_backend *be = NULL;
	struct hw_opts o;
	char kinds[160];
	size_t klen;
	int rc;

	kind_list(kinds, sizeof(kinds));
	klen = strcspn(spec, ":[");
	if (spec[klen] == '\0' || klen == 0)
		return hw_errf(err, errlen, -EINVAL,
			       "no device kind in '%s' (expected KIND:..., KIND one of %s)",
			       spec, kinds);
	for (size_t i = 0; i < NLAYERS; i++) {
		if (!kind_is(layers[i]->kind, spec, klen))
			continue;
		rc = open_layer(layers[i], spec, spec + klen, depth, out,
				err, errlen);
		if (rc == 0)
			snprintf((*out)->spec, sizeof((*out)->spec), "%s", spec);
		return rc;
	}
	for (size_t i = 0; i < NBACKENDS; i++)
		if (kind_is(backends[i]->kind, spec, klen))
			be = backends[i];
	if (!be)
		return hw_errf(err, errlen, -EINVAL,
			       "unknown device kind '%.*s' in '%s' (expected %s)",
			       (int)klen, spec, spec, kinds);
	if (spec[klen] == '[')
		return hw_errf(err, errlen, -EINVAL,
			       "'%s' is a device, not a layer: its options go after commas in '%s' (usage: %s)",
			       be->kind, spec, be->usage);

	rc = hw_opts_parse(&o, be, spec, spec + klen + 1, err, errlen);
	if (rc)
		return rc;
	rc = be->open(&o, out, err, errlen);
	if (rc) {
		*out = NULL;
		return rc;
	}
	/* Truncated if longer than the field; it is only a label. */
	snprintf((*out)->spec, sizeof((*out)->spec), "%s", spec);
	return 0;
}

int hw_spec_path(const char *spec, size_t *off, size_t *len)
{
	const char *p = spec, *q;
	size_t klen;
	bool layer = true;

	while (layer) {
		klen = strcspn(p, ":[");
		layer = false;
		for (size_t i = 0; i < NLAYERS; i++)
			if (kind_is(layers[i]->kind, p, klen))
				layer = true;
		if (!layer)
			break;
		p += klen;
		if (*p == '[' && (p = strchr(p, ']')) == NULL)
			return 0;
		if (*p == ']')
			p++;
		if (*p++ != ':')
			return 0;
	}
	if (p[klen] != ':')
		return 0;
	if (kind_is("zoned", p, klen)) {
		q = strstr(p, ",path=");
		if (!q)
			return 0;
		p = q + 6;
	} else if (kind_is("file", p, klen) || kind_is("pmem", p, klen) ||
		   kind_is("zbd", p, klen)) {
		p += klen + 1;
	} else {
		return 0;
	}
	*off = (size_t)(p - spec);
	*len = strcspn(p, ",");
	return *len > 0;
}

int hw_spec_apart(const char *dev, const char *rt, char *err, size_t errlen)
{
	size_t ao, al, bo, bl;
	char pa[4096], pb[4096];
	struct stat sa, sb;
	int same;

	if (!hw_spec_path(dev, &ao, &al) || !hw_spec_path(rt, &bo, &bl) ||
	    al >= sizeof(pa) || bl >= sizeof(pb))
		return 0;
	snprintf(pa, sizeof(pa), "%.*s", (int)al, dev + ao);
	snprintf(pb, sizeof(pb), "%.*s", (int)bl, rt + bo);
	if (!stat(pa, &sa) && !stat(pb, &sb))
		same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	else
		same = !strcmp(pa, pb);
	if (!same)
		return 0;
	if (err && errlen)
		snprintf(err, errlen, "the realtime device %.200s is the data "
			 "device's file too: give it one of its own", rt);
	return -EINVAL;
}

int hw_open(const char *spec, struct hw_dev **out, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return hw_errf(err, errlen, -EINVAL, "no place to return the device");
	*out = NULL;
	if (!spec)
		return hw_errf(err, errlen, -EINVAL, "no device spec");
	return open_spec(spec, 0, out, err, errlen);
}

void hw_close(struct hw_dev *dev)
{
	if (dev && dev->ops->destroy)
		dev->ops->destroy(dev);
}

/* off + len <= size, without letting off + len wrap. */
static bool in_range(const struct hw_dev *dev, uint64_t off, uint64_t len)
{
	return off <= dev->geo.size && len <= dev->geo.size - off;
}

/*
 * What every call on a byte range checks first: -EINVAL for no device,
 * unknown flags or a range past the end; 0 for an empty range, which is
 * done (and not counted) whatever its offset; 1 to go on.
 */
static int range_check(const struct hw_dev *dev, uint64_t off, uint64_t len,
		       unsigned flags)
{
	if (!dev || (flags & ~HW_IO_FLAGS))
		return -EINVAL;
	if (len == 0)
		return 0;
	return in_range(dev, off, len) ? 1 : -EINVAL;
}

int hw_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	int rc = range_check(dev, off, len, 0);

	if (rc <= 0)
		return rc;
	if (!buf)
		return -EINVAL;
	rc = dev->ops->read(dev, off, buf, len);
	if (rc < 0)
		return rc;
	dev->ctr.reads++;
	dev->ctr.bytes_read += len;
	return 0;
}

const void *hw_view(struct hw_dev *dev, uint64_t off, size_t len)
{
	const void *p;

	if (range_check(dev, off, len, 0) <= 0 || !dev->ops->view)
		return NULL;
	p = dev->ops->view(dev, off, len);
	if (p) {
		dev->ctr.reads++;
		dev->ctr.bytes_read += len;
	}
	return p;
}

/* META and FUA writes (and zone appends) are also counted as writes. */
static void count_write(struct hw_dev *dev, size_t len, unsigned flags)
{
	dev->ctr.writes++;
	dev->ctr.bytes_written += len;
	if (flags & HW_META) {
		dev->ctr.meta_writes++;
		dev->ctr.meta_bytes_written += len;
	}
	if (flags & HW_FUA)
		dev->ctr.fua_writes++;
}

int hw_write(struct hw_dev *dev, uint64_t off, const void *buf, size_t len,
	     unsigned flags)
{
	int rc = range_check(dev, off, len, flags);

	if (rc <= 0)
		return rc;
	if (!buf)
		return -EINVAL;
	rc = dev->ops->write(dev, off, buf, len, flags);
	if (rc < 0)
		return rc;
	count_write(dev, len, flags);
	return 0;
}

int hw_flush(struct hw_dev *dev)
{
	int rc = 0;

	if (!dev)
		return -EINVAL;
	if (dev->ops->flush)
		rc = dev->ops->flush(dev);
	if (rc < 0)
		return rc;
	dev->ctr.flushes++;
	return 0;
}

/* Zeros shared by every fallback zero-out; never written. */
static const uint8_t zero_chunk[64 * 1024];

int hw_zero_out_by_writes(struct hw_dev *dev, uint64_t off, uint64_t len,
			  unsigned flags)
{
	int rc;

	while (len) {
		size_t n = len < sizeof(zero_chunk) ? (size_t)len
						     : sizeof(zero_chunk);

		rc = dev->ops->write(dev, off, zero_chunk, n, flags & ~HW_FUA);
		if (rc < 0)
			return rc;
		off += n;
		len -= n;
	}
	if ((flags & HW_FUA) && dev->ops->flush)
		return dev->ops->flush(dev);
	return 0;
}

int hw_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len, unsigned flags)
{
	int rc = range_check(dev, off, len, flags);

	if (rc <= 0)
		return rc;
	if (dev->ops->zero_out)
		rc = dev->ops->zero_out(dev, off, len, flags);
	else
		rc = hw_zero_out_by_writes(dev, off, len, flags);
	if (rc < 0)
		return rc;
	dev->ctr.zeroouts++;
	dev->ctr.bytes_zeroed += len;
	return 0;
}

int hw_discard(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	int rc = range_check(dev, off, len, 0);

	if (rc <= 0)
		return rc;
	/* Discarded data is undefined, so doing nothing is a valid discard. */
	rc = dev->ops->discard ? dev->ops->discard(dev, off, len) : 0;
	if (rc < 0)
		return rc;
	dev->ctr.discards++;
	dev->ctr.bytes_discarded += len;
	return 0;
}

void hw_reset_counters(struct hw_dev *dev)
{
	if (dev)
		memset(&dev->ctr, 0, sizeof(dev->ctr));
}

/*
 * Persist: the device's own persist (pmem: flush + fence over the range)
 * or, on devices without one, a whole flush, which is counted as both.
 */
int hw_persist(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	bool fallback;
	int rc = range_check(dev, off, len, 0);

	if (rc <= 0)
		return rc;
	fallback = !dev->ops->persist;
	if (!fallback)
		rc = dev->ops->persist(dev, off, len);
	else
		rc = dev->ops->flush ? dev->ops->flush(dev) : 0;
	if (rc < 0)
		return rc;
	dev->ctr.persists++;
	dev->ctr.bytes_persisted += len;
	if (fallback)
		dev->ctr.flushes++;
	return 0;
}

static bool zoned(const struct hw_dev *dev)
{
	return (dev->geo.caps & HW_CAP_ZONED) && dev->geo.nr_zones;
}

int hw_report_zones(struct hw_dev *dev, uint64_t first_zone,
		    struct hw_zone *zones, unsigned *nr)
{
	uint64_t left;

	if (!dev || !nr)
		return -EINVAL;
	if (!zoned(dev) || !dev->ops->report_zones)
		return -EOPNOTSUPP;
	if (first_zone > dev->geo.nr_zones || (*nr && !zones))
		return -EINVAL;
	left = dev->geo.nr_zones - first_zone;
	if (*nr > left)
		*nr = (unsigned)left;
	if (*nr == 0)
		return 0;
	return dev->ops->report_zones(dev, first_zone, zones, nr);
}

int hw_zone_mgmt(struct hw_dev *dev, enum hw_zone_op op, uint64_t zone)
{
	int rc;

	if (!dev)
		return -EINVAL;
	if (!zoned(dev) || !dev->ops->zone_mgmt)
		return -EOPNOTSUPP;
	if (op < HW_ZONE_RESET || op > HW_ZONE_FINISH ||
	    zone >= dev->geo.nr_zones)
		return -EINVAL;
	rc = dev->ops->zone_mgmt(dev, op, zone);
	if (rc < 0)
		return rc;
	if (op == HW_ZONE_RESET)
		dev->ctr.zone_resets++;
	if (op == HW_ZONE_FINISH)
		dev->ctr.zone_finishes++;
	return 0;
}

/* An append is a write too: it counts as one, and as an append. */
int hw_zone_append(struct hw_dev *dev, uint64_t zone, const void *buf,
		   size_t len, unsigned flags, uint64_t *written_off)
{
	uint64_t where = 0;
	int rc;

	if (!dev || (flags & ~HW_IO_FLAGS))
		return -EINVAL;
	if (!zoned(dev) || !dev->ops->zone_append)
		return -EOPNOTSUPP;
	if (zone >= dev->geo.nr_zones || !buf || len == 0 ||
	    len > dev->geo.max_append || len % dev->geo.sector_size)
		return -EINVAL;
	rc = dev->ops->zone_append(dev, zone, buf, len, flags, &where);
	if (rc < 0)
		return rc;
	if (written_off)
		*written_off = where;
	dev->ctr.zone_appends++;
	count_write(dev, len, flags);
	return 0;
}

int hw_describe(struct hw_dev *dev, char *buf, size_t len)
{
	if (!dev || !buf || len == 0)
		return -EINVAL;
	if (dev->ops->describe)
		return dev->ops->describe(dev, buf, len);
	snprintf(buf, len, "%s: %llu bytes", dev->ops->name,
		 (unsigned long long)dev->geo.size);
	return 0;
}

const char *hw_devices_help(void)
{
	return
"Devices (SIZE takes k/m/g/t):\n"
"  mem:SIZE                RAM for the life of the process (sparse)\n"
"  file:PATH[,size=SIZE]   an image file or block device; flush = fdatasync\n"
"  null:SIZE               keeps metadata writes only, reads zeros\n"
"  pmem:PATH[,size=SIZE]   PATH mapped with libpmem2; writes are stores,\n"
"                          persist = flush + fence.  Real persistent memory\n"
"                          on a DAX file (store granularity byte or cache\n"
"                          line); on an ordinary file libpmem2 persists with\n"
"                          msync (granularity page): emulated, not pmem\n"
"  zoned:mem,size=SIZE[,ZONEOPTS]\n"
"  zoned:null,size=SIZE[,ZONEOPTS]\n"
"  zoned:file,path=PATH[,size=SIZE][,ZONEOPTS]\n"
"                          an emulated zoned device (ZBC/ZNS rules); the file\n"
"                          form keeps zone state in PATH.zones, the null\n"
"                          form stores no data (reads zeros), as null: does\n"
"    ZONEOPTS: zone=SIZE (256m) cap=SIZE (zone capacity) conv=N\n"
"              append_max=SIZE max_open=N max_active=N readonly=N offline=N\n"
"  zbd:PATH                a real zoned block device through libzbd (zone\n"
"                          append emulated by a write at the write pointer)\n"
"Layers, stacked on any device:\n"
"  crash[atomic=N]:DEV     keeps writes not yet durable; a cut drops or tears\n"
"                          them\n"
"  faulty[read=N,write=N,flush=N,zone=N,off=OFF,len=LEN,sticky]:DEV\n"
"                          fails the chosen I/Os (zone=N: zone open, close,\n"
"                          finish or reset) with EIO\n"
"  log:DEV                 records writes, flushes and marks for replay\n";
}
