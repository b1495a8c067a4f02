/*
 * log.c - "log:SPEC", a record of everything that reached the device,
 * in order, with marks (dm-log-writes, in memory).
 *
 *   entries:  W(0,4k) W(8k,4k) FLUSH  MARK"a"  W(0,512,FUA) Z(64k,64k) ...
 *   replay to mark "a" (number 0): the first three entries, on any
 *   device at least as large
 *
 * Only completed I/Os are recorded (what failed never happened).  A
 * write keeps a copy of its data; a zone append is recorded as the write
 * it became, at the place the device chose, so that replaying it onto an
 * empty zone of a like device lands in the same place.  Replay goes
 * through the public calls, so the target counts and checks it all, and
 * can itself be a layer: replaying to each mark onto a crash device,
 * then cutting, gives the crash states of any prefix of the log.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum log_kind { L_WRITE, L_ZERO, L_DISCARD, L_FLUSH, L_PERSIST, L_ZONE,
		L_MARK };

struct log_entry {
	uint8_t kind;          /* enum log_kind                        */
	uint8_t zop;           /* L_ZONE: enum hw_zone_op              */
	unsigned flags;        /* L_WRITE, L_ZERO: HW_FUA, HW_META     */
	uint64_t off, len;     /* L_ZONE: off is the zone number       */
	uint8_t *data;         /* L_WRITE                              */
	char *label;           /* L_MARK, may be NULL                  */
};

struct log_dev {
	struct hw_layer l;
	struct log_entry *e;
	size_t n, cap;
	uint64_t marks, bytes;
};

static const struct hw_ops log_ops;

static struct log_dev *to_log(struct hw_dev *dev)
{
	return (struct log_dev *)dev;
}

static int add(struct log_dev *ld, const struct log_entry *e)
{
	struct log_entry *p = hw_grow(ld->e, &ld->cap, ld->n, sizeof(*e));

	if (!p)
		return -ENOMEM;
	ld->e = p;
	ld->e[ld->n++] = *e;
	return 0;
}

/* Record a completed I/O (rc 0) and pass rc on. */
static int note(struct log_dev *ld, int rc, enum log_kind kind, uint64_t off,
		uint64_t len, unsigned flags, const void *data)
{
	struct log_entry e = { .kind = (uint8_t)kind, .flags = flags,
			       .off = off, .len = len };

	if (rc)
		return rc;
	if (data) {
		e.data = malloc((size_t)len);
		if (!e.data)
			return -ENOMEM;
		memcpy(e.data, data, (size_t)len);
		ld->bytes += len;
	}
	rc = add(ld, &e);
	if (rc)
		free(e.data);
	return rc;
}

static int log_write(struct hw_dev *dev, uint64_t off, const void *buf,
		     size_t len, unsigned flags)
{
	return note(to_log(dev), hw_layer_write(dev, off, buf, len, flags),
		    L_WRITE, off, len, flags, buf);
}

static int log_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
			unsigned flags)
{
	return note(to_log(dev), hw_layer_zero_out(dev, off, len, flags),
		    L_ZERO, off, len, flags, NULL);
}

static int log_discard(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	return note(to_log(dev), hw_layer_discard(dev, off, len), L_DISCARD,
		    off, len, 0, NULL);
}

static int log_flush(struct hw_dev *dev)
{
	return note(to_log(dev), hw_layer_flush(dev), L_FLUSH, 0, 0, 0, NULL);
}

static int log_persist(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	return note(to_log(dev), hw_layer_persist(dev, off, len), L_PERSIST,
		    off, len, 0, NULL);
}

static int log_zone_mgmt(struct hw_dev *dev, enum hw_zone_op op, uint64_t zone)
{
	struct log_dev *ld = to_log(dev);
	int rc = note(ld, hw_layer_zone_mgmt(dev, op, zone), L_ZONE, zone, 0,
		      0, NULL);

	if (!rc)
		ld->e[ld->n - 1].zop = (uint8_t)op;
	return rc;
}

static int log_zone_append(struct hw_dev *dev, uint64_t zone, const void *buf,
			   size_t len, unsigned flags, uint64_t *written_off)
{
	int rc = hw_layer_zone_append(dev, zone, buf, len, flags, written_off);

	return note(to_log(dev), rc, L_WRITE, rc ? 0 : *written_off, len,
		    flags, buf);
}

static void log_destroy(struct hw_dev *dev)
{
	struct log_dev *ld = to_log(dev);

	for (size_t i = 0; i < ld->n; i++) {
		free(ld->e[i].data);
		free(ld->e[i].label);
	}
	free(ld->e);
	hw_layer_destroy(dev);
}

static const struct hw_ops log_ops = {
	.name = "log",
	.read = hw_layer_read,
	.view = hw_layer_view,
	.write = log_write,
	.flush = log_flush,
	.zero_out = log_zero_out,
	.discard = log_discard,
	.destroy = log_destroy,
	.persist = log_persist,
	.report_zones = hw_layer_report_zones,
	.zone_mgmt = log_zone_mgmt,
	.zone_append = log_zone_append,
	.describe = hw_layer_describe,
};

static struct log_dev *find(struct hw_dev *dev)
{
	return (struct log_dev *)hw_layer_find(dev, &log_ops);
}

int64_t hw_log_mark(struct hw_dev *dev, const char *label)
{
	struct log_dev *ld = find(dev);
	struct log_entry e = { .kind = L_MARK };
	int rc;

	if (!ld)
		return -EINVAL;
	if (label && !(e.label = strdup(label)))
		return -ENOMEM;
	rc = add(ld, &e);
	if (rc) {
		free(e.label);
		return rc;
	}
	return (int64_t)ld->marks++;
}

int64_t hw_log_find(struct hw_dev *dev, const char *label)
{
	struct log_dev *ld = find(dev);
	int64_t m = 0;

	if (!ld || !label)
		return -EINVAL;
	for (size_t i = 0; i < ld->n; i++) {
		if (ld->e[i].kind != L_MARK)
			continue;
		if (ld->e[i].label && strcmp(ld->e[i].label, label) == 0)
			return m;
		m++;
	}
	return -ENOENT;
}

static int replay_one(struct hw_dev *t, const struct log_entry *e)
{
	switch (e->kind) {
	case L_WRITE:   return hw_write(t, e->off, e->data, (size_t)e->len, e->flags);
	case L_ZERO:    return hw_zero_out(t, e->off, e->len, e->flags);
	case L_DISCARD: return hw_discard(t, e->off, e->len);
	case L_FLUSH:   return hw_flush(t);
	case L_PERSIST: return hw_persist(t, e->off, e->len);
	case L_ZONE:    return hw_zone_mgmt(t, (enum hw_zone_op)e->zop, e->off);
	}
	return 0;
}

int hw_log_replay(struct hw_dev *logdev, struct hw_dev *target, uint64_t mark)
{
	struct log_dev *ld = find(logdev);
	uint64_t m = 0;
	size_t n;
	int rc;

	/* A target stacked on this log would log its own replay. */
	if (!ld || !target || find(target) == ld ||
	    hw_size(target) < hw_size(&ld->l.dev) ||
	    (mark != HW_LOG_END && mark >= ld->marks))
		return -EINVAL;
	n = ld->n;
	for (size_t i = 0; i < n; i++) {
		if (ld->e[i].kind == L_MARK && m++ == mark)
			return 0;
		rc = replay_one(target, &ld->e[i]);
		if (rc)
			return rc;
	}
	return 0;
}

int hw_log_info(struct hw_dev *dev, struct hw_log_info *out)
{
	struct log_dev *ld = find(dev);

	if (!ld || !out)
		return -EINVAL;
	out->entries = ld->n - ld->marks;
	out->marks = ld->marks;
	out->bytes = ld->bytes;
	return 0;
}

static int log_open(const struct hw_opts *o, struct hw_dev *low,
		    struct hw_dev **out, char *err, size_t errlen)
{
	struct log_dev *ld = calloc(1, sizeof(*ld));

	if (!ld)
		return hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			       o->spec);
	hw_layer_init(&ld->l, &log_ops, low);
	*out = &ld->l.dev;
	return 0;
}

static const char *const log_keys[] = { NULL };

const struct hw_layer_kind hw_log_layer = {
	.kind = "log",
	.usage = "log:SPEC",
	.keys = log_keys,
	.ops = &log_ops,
	.open = log_open,
};
