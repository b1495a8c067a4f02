/*
 * hw.c - the front door of every device: the spec parser that picks a
 * backend, and the I/O wrappers that check arguments and keep counters
 * before calling into the vtable.
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
#include <string.h>

static const struct hw_backend *const backends[] = {
	&hw_null_backend,
	&hw_mem_backend,
	&hw_file_backend,
};

#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

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

static bool key_accepted(const struct hw_backend *be, const char *key)
{
	for (const char *const *k = be->keys; k && *k; k++)
		if (strcmp(*k, key) == 0)
			return true;
	return false;
}

/* "size, zone" for the error line of an unknown key. */
static void list_keys(const struct hw_backend *be, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (const char *const *k = be->keys; k && *k; k++) {
		int n = snprintf(buf + used, len - used, "%s%s",
				 used ? ", " : "", *k);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
}

static int opts_add(struct hw_opts *o, const struct hw_backend *be,
		    char *field, char *err, size_t errlen)
{
	char *eq = strchr(field, '=');
	char keys[256];

	if (*field == '\0')
		return hw_errf(err, errlen, -EINVAL,
			       "empty option in '%s' (usage: %s)",
			       o->spec, o->usage);
	if (!eq)
		return hw_errf(err, errlen, -EINVAL,
			       "option '%s' in '%s' is not key=value",
			       field, o->spec);
	*eq = '\0';
	if (*field == '\0' || eq[1] == '\0')
		return hw_errf(err, errlen, -EINVAL,
			       "option '%s=%s' in '%s' has an empty %s",
			       field, eq + 1, o->spec,
			       *field ? "value" : "key");
	if (!key_accepted(be, field)) {
		list_keys(be, keys, sizeof(keys));
		if (keys[0] == '\0')
			return hw_errf(err, errlen, -EINVAL,
				       "unknown option '%s' in '%s' (%s takes no options)",
				       field, o->spec, be->kind);
		return hw_errf(err, errlen, -EINVAL,
			       "unknown option '%s' in '%s' (%s accepts: %s)",
			       field, o->spec, be->kind, keys);
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
	o->opt[o->nopts].val = eq + 1;
	o->nopts++;
	return 0;
}

int hw_opts_parse(struct hw_opts *o, const struct hw_backend *be,
		  const char *spec, const char *body, char *err, size_t errlen)
{
	char *field, *comma;
	size_t len = strlen(body);
	int rc;

	memset(o, 0, offsetof(struct hw_opts, buf));
	o->spec = spec;
	o->usage = be->usage;
	if (len >= sizeof(o->buf))
		return hw_errf(err, errlen, -ENAMETOOLONG,
			       "spec for %s is longer than %d bytes",
			       be->kind, HW_SPEC_MAX - 1);
	memcpy(o->buf, body, len + 1);

	comma = strchr(o->buf, ',');
	if (comma)
		*comma = '\0';
	o->first = o->buf;
	while (comma) {
		field = comma + 1;
		comma = strchr(field, ',');
		if (comma)
			*comma = '\0';
		rc = opts_add(o, be, field, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
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
	for (size_t i = 0; i < NBACKENDS; i++) {
		int n = snprintf(buf + used, len - used, "%s%s",
				 i ? ", " : "", backends[i]->kind);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
}

int hw_open(const char *spec, struct hw_dev **out, char *err, size_t errlen)
{
	const struct hw_backend *be = NULL;
	struct hw_opts o;
	const char *colon;
	char kinds[128];
	size_t klen;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return hw_errf(err, errlen, -EINVAL, "no place to return the device");
	*out = NULL;
	if (!spec)
		return hw_errf(err, errlen, -EINVAL, "no device spec");

	kind_list(kinds, sizeof(kinds));
	colon = strchr(spec, ':');
	if (!colon || colon == spec)
		return hw_errf(err, errlen, -EINVAL,
			       "no device kind in '%s' (expected KIND:..., KIND one of %s)",
			       spec, kinds);
	klen = (size_t)(colon - spec);
	for (size_t i = 0; i < NBACKENDS; i++)
		if (strlen(backends[i]->kind) == klen &&
		    memcmp(backends[i]->kind, spec, klen) == 0)
			be = backends[i];
	if (!be)
		return hw_errf(err, errlen, -EINVAL,
			       "unknown device kind '%.*s' in '%s' (expected %s)",
			       (int)klen, spec, spec, kinds);

	rc = hw_opts_parse(&o, be, spec, colon + 1, err, errlen);
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

int hw_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	int rc;

	if (!dev)
		return -EINVAL;
	if (len == 0)
		return 0;
	if (!buf || !in_range(dev, off, len))
		return -EINVAL;
	rc = dev->ops->read(dev, off, buf, len);
	if (rc < 0)
		return rc;
	dev->ctr.reads++;
	dev->ctr.bytes_read += len;
	return 0;
}

int hw_write(struct hw_dev *dev, uint64_t off, const void *buf, size_t len,
	     unsigned flags)
{
	int rc;

	if (!dev || (flags & ~HW_IO_FLAGS))
		return -EINVAL;
	if (len == 0)
		return 0;
	if (!buf || !in_range(dev, off, len))
		return -EINVAL;
	rc = dev->ops->write(dev, off, buf, len, flags);
	if (rc < 0)
		return rc;
	/* META and FUA writes are also counted as writes. */
	dev->ctr.writes++;
	dev->ctr.bytes_written += len;
	if (flags & HW_META) {
		dev->ctr.meta_writes++;
		dev->ctr.meta_bytes_written += len;
	}
	if (flags & HW_FUA)
		dev->ctr.fua_writes++;
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
	int rc;

	if (!dev || (flags & ~HW_IO_FLAGS))
		return -EINVAL;
	if (len == 0)
		return 0;
	if (!in_range(dev, off, len))
		return -EINVAL;
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
	int rc = 0;

	if (!dev)
		return -EINVAL;
	if (len == 0)
		return 0;
	if (!in_range(dev, off, len))
		return -EINVAL;
	/* Discarded data is undefined, so doing nothing is a valid discard. */
	if (dev->ops->discard)
		rc = dev->ops->discard(dev, off, len);
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
