/*
 * faulty.c - "faulty[read=N,write=N,flush=N,zone=N,off=OFF,len=LEN,sticky]:SPEC",
 * I/O errors on chosen I/Os (as dm-flakey and null_blk's badblocks do).
 *
 * Up to HW_FAULTS_MAX faults are armed at a time, from the spec or with
 * hw_fault_arm().  Each fault counts the I/Os it matches (kind, and a
 * byte range if it has one) from the moment it is armed, and fails the
 * nth; a sticky fault fails every later match too:
 *
 *   write=3          writes 1 2 [3] 4 5 ...       [n] = -EIO
 *   write=3,sticky   writes 1 2 [3] [4] [5] ...
 *
 * A failed I/O never reaches the lower device, so a failed write changes
 * nothing there.  Reads are reads; writes are writes, zero-outs and zone
 * appends; flushes are flushes and persists (a persist matches a range,
 * a flush every range); zone management (open, close, finish, reset of
 * one zone, which matches the zone's range) only for a fault that names
 * it, as a real device can fail a finish.  Discards are never failed.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FAULT_OPS (HW_FAULT_READ | HW_FAULT_WRITE | HW_FAULT_FLUSH | \
		   HW_FAULT_ZONE)

struct fault_slot {
	struct hw_fault f;
	bool armed;
	uint64_t seen;          /* matching I/Os since armed */
};

struct faulty_dev {
	struct hw_layer l;
	struct fault_slot slot[HW_FAULTS_MAX];
	uint64_t fired;
};

static const struct hw_ops faulty_ops;

static struct faulty_dev *to_faulty(struct hw_dev *dev)
{
	return (struct faulty_dev *)dev;
}

/*
 * Count the I/O against every armed fault and return the error of the
 * first that fires, or 0.  ranged: the I/O has a range (a flush has
 * none and matches every fault of its kind).
 */
static int inject(struct faulty_dev *fd, unsigned op, uint64_t off,
		  uint64_t len, bool ranged)
{
	int rc = 0;

	for (int i = 0; i < HW_FAULTS_MAX; i++) {
		struct fault_slot *s = &fd->slot[i];
		unsigned ops = s->f.ops ? s->f.ops : HW_FAULT_READ | HW_FAULT_WRITE;
		uint64_t nth = s->f.nth ? s->f.nth : 1;

		if (!s->armed || !(ops & op))
			continue;
		if (ranged && s->f.len &&
		    (off >= s->f.off + s->f.len || s->f.off >= off + len))
			continue;
		s->seen++;
		if (rc == 0 && (s->seen == nth || (s->f.sticky && s->seen > nth)))
			rc = s->f.error ? s->f.error : -EIO;
	}
	if (rc)
		fd->fired++;
	return rc;
}

static int faulty_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	int rc = inject(to_faulty(dev), HW_FAULT_READ, off, len, true);

	return rc ? rc : hw_layer_read(dev, off, buf, len);
}

static int faulty_write(struct hw_dev *dev, uint64_t off, const void *buf,
			size_t len, unsigned flags)
{
	int rc = inject(to_faulty(dev), HW_FAULT_WRITE, off, len, true);

	return rc ? rc : hw_layer_write(dev, off, buf, len, flags);
}

static int faulty_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
			   unsigned flags)
{
	int rc = inject(to_faulty(dev), HW_FAULT_WRITE, off, len, true);

	return rc ? rc : hw_layer_zero_out(dev, off, len, flags);
}

static int faulty_flush(struct hw_dev *dev)
{
	int rc = inject(to_faulty(dev), HW_FAULT_FLUSH, 0, 0, false);

	return rc ? rc : hw_layer_flush(dev);
}

static int faulty_persist(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	int rc = inject(to_faulty(dev), HW_FAULT_FLUSH, off, len, true);

	return rc ? rc : hw_layer_persist(dev, off, len);
}

/* The zone is known, the place is not: it matches the whole zone. */
static int faulty_zone_append(struct hw_dev *dev, uint64_t zone,
			      const void *buf, size_t len, unsigned flags,
			      uint64_t *written_off)
{
	uint64_t zs = dev->geo.zone_size;
	int rc = inject(to_faulty(dev), HW_FAULT_WRITE, zone * zs, zs, true);

	return rc ? rc : hw_layer_zone_append(dev, zone, buf, len, flags,
					      written_off);
}

static int faulty_zone_mgmt(struct hw_dev *dev, enum hw_zone_op op,
			    uint64_t zone)
{
	uint64_t zs = dev->geo.zone_size;
	int rc = zs ? inject(to_faulty(dev), HW_FAULT_ZONE, zone * zs, zs, true) :
		 0;

	return rc ? rc : hw_layer_zone_mgmt(dev, op, zone);
}

static const struct hw_ops faulty_ops = {
	.name = "faulty",
	.read = faulty_read,
	.write = faulty_write,
	.flush = faulty_flush,
	.zero_out = faulty_zero_out,
	.discard = hw_layer_discard,
	.destroy = hw_layer_destroy,
	.persist = faulty_persist,
	.report_zones = hw_layer_report_zones,
	.zone_mgmt = faulty_zone_mgmt,
	.zone_append = faulty_zone_append,
	.describe = hw_layer_describe,
};

static struct faulty_dev *find(struct hw_dev *dev)
{
	return (struct faulty_dev *)hw_layer_find(dev, &faulty_ops);
}

static int arm(struct faulty_dev *fd, const struct hw_fault *f)
{
	if (!f || (f->ops & ~FAULT_OPS) || f->error > 0 || f->error <= -4096 ||
	    (f->len && (f->off >= fd->l.dev.geo.size ||
			f->len > fd->l.dev.geo.size - f->off)))
		return -EINVAL;
	for (int i = 0; i < HW_FAULTS_MAX; i++) {
		if (fd->slot[i].armed)
			continue;
		fd->slot[i].f = *f;
		fd->slot[i].seen = 0;
		fd->slot[i].armed = true;
		return i;
	}
	return -ENOSPC;
}

int hw_fault_arm(struct hw_dev *dev, const struct hw_fault *fault)
{
	struct faulty_dev *fd = find(dev);

	return fd ? arm(fd, fault) : -EINVAL;
}

int hw_fault_disarm(struct hw_dev *dev, int id)
{
	struct faulty_dev *fd = find(dev);

	if (!fd || id >= HW_FAULTS_MAX || (id >= 0 && !fd->slot[id].armed))
		return -EINVAL;
	for (int i = 0; i < HW_FAULTS_MAX; i++)
		if (id < 0 || i == id)
			fd->slot[i].armed = false;
	return 0;
}

int64_t hw_fault_fired(struct hw_dev *dev)
{
	struct faulty_dev *fd = find(dev);

	return fd ? (int64_t)fd->fired : -EINVAL;
}

/* Arm what the spec asks for: one fault per read=/write=/flush=/zone=. */
static int arm_from_spec(struct faulty_dev *fd, const struct hw_opts *o,
			 char *err, size_t errlen)
{
	static const struct { const char *key; unsigned op; } kinds[] = {
		{ "read", HW_FAULT_READ },
		{ "write", HW_FAULT_WRITE },
		{ "flush", HW_FAULT_FLUSH },
		{ "zone", HW_FAULT_ZONE },
	};
	struct hw_fault f = { .sticky = hw_opts_get(o, "sticky") != NULL };
	bool any = false;
	int rc;

	if (hw_opts_get(o, "sticky") && *hw_opts_get(o, "sticky"))
		return hw_errf(err, errlen, -EINVAL,
			       "sticky in '%s' takes no value", o->spec);
	if (!hw_opts_get(o, "off") != !hw_opts_get(o, "len"))
		return hw_errf(err, errlen, -EINVAL,
			       "off= and len= in '%s' go together", o->spec);
	if ((rc = hw_opts_u64(o, "off", 0, &f.off, err, errlen)) ||
	    (rc = hw_opts_u64(o, "len", 0, &f.len, err, errlen)))
		return rc;
	if (hw_opts_get(o, "len") && (f.len == 0 || f.off >= fd->l.dev.geo.size ||
				      f.len > fd->l.dev.geo.size - f.off))
		return hw_errf(err, errlen, -EINVAL,
			       "range off=%s,len=%s in '%s' is empty or outside the device",
			       hw_opts_get(o, "off"), hw_opts_get(o, "len"),
			       o->spec);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!hw_opts_get(o, kinds[i].key))
			continue;
		rc = hw_opts_u64(o, kinds[i].key, 0, &f.nth, err, errlen);
		if (rc)
			return rc;
		if (f.nth == 0)
			return hw_errf(err, errlen, -EINVAL,
				       "%s=0 in '%s': I/Os are counted from 1",
				       kinds[i].key, o->spec);
		f.ops = kinds[i].op;
		arm(fd, &f);
		any = true;
	}
	if (!any && f.len) {
		f.ops = HW_FAULT_READ | HW_FAULT_WRITE;
		f.nth = 1;
		arm(fd, &f);
	}
	return 0;
}

static int faulty_open(const struct hw_opts *o, struct hw_dev *low,
		       struct hw_dev **out, char *err, size_t errlen)
{
	struct faulty_dev *fd = calloc(1, sizeof(*fd));
	int rc;

	if (!fd)
		return hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			       o->spec);
	hw_layer_init(&fd->l, &faulty_ops, low);
	rc = arm_from_spec(fd, o, err, errlen);
	if (rc) {
		free(fd);
		return rc;
	}
	*out = &fd->l.dev;
	return 0;
}

static const char *const faulty_keys[] = {
	"read", "write", "flush", "zone", "off", "len", "sticky", NULL
};

const struct hw_layer_kind hw_faulty_layer = {
	.kind = "faulty",
	.usage = "faulty[read=N,write=N,flush=N,zone=N,off=OFF,len=LEN,sticky]:SPEC",
	.keys = faulty_keys,
	.ops = &faulty_ops,
	.open = faulty_open,
};
