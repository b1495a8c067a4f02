/*
 * zbd.c - "zbd:PATH", a real zoned block device through libzbd.
 *
 * zbd_open() gives the fd (opened O_DIRECT: writes to sequential zones
 * must reach the device in order, which the page cache does not
 * promise) and the geometry; zbd_report_zones() and
 * zbd_zones_operation() do the zone work; data moves with pread and
 * pwrite through a page-aligned bounce buffer, in whole logical blocks.
 * The device's own rules apply, and its errors come back as they are,
 * but for the block layer's codes for the zone limits (-ETOOMANYREFS
 * open, -EOVERFLOW active), which become -EIO as hw.h has it.  Zone
 * conditions are libzbd's (ZBC's numbering) turned into hw.h's.
 *
 * Linux gives user space no zone append on a block device, so an append
 * is emulated: report the zone, write at its write pointer, return that
 * place; an append that does not fit below the zone's capacity is -EIO
 * (a plain write there would run on into the next zone).  Nothing else
 * may write the zone meanwhile.  Flush and FUA are fdatasync.  A full
 * zone's write pointer is reported at its capacity (devices differ),
 * and conventional zones must come first, as hw.h's geometry has it; a
 * device with conventional zones elsewhere is refused.  The append limit is the queue's zone_append_max_bytes from
 * sysfs when it can be read, else the zone capacity.
 *
 * Before libzbd is asked, PATH is checked so that the common mistakes
 * get a line that says what is wrong: a missing path, a regular file, a
 * block device that is not zoned.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <stdio.h>

#ifdef FSO_NO_EXTERNAL_LIBS

static int zbd_dev_open(const struct hw_opts *o, struct hw_dev **out,
			char *err, size_t errlen)
{
	return hw_errf(err, errlen, -EOPNOTSUPP,
		       "cannot open '%s': built without libzbd (MSan build)",
		       o->spec);
}

#else

#include <fcntl.h>
#include <libzbd/zbd.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define ZBD_BOUNCE (1u << 20)

struct zbd_dev {
	struct hw_dev dev;
	int fd;
	uint32_t lblock;
	uint8_t *bounce;              /* ZBD_BOUNCE bytes, page aligned */
	struct zbd_info info;
};

static struct zbd_dev *to_zbd(struct hw_dev *dev)
{
	return (struct zbd_dev *)dev;
}

/* Each libzbd call returns -1 and sets errno (or a -errno); make -errno. */
static int zbd_errno(int ret)
{
	if (ret >= 0)
		return 0;
	if (ret == -1)
		return errno ? -errno : -EIO;
	return ret;
}

/* hw.h's -EIO for the block layer's zone-limit codes; others as they are. */
static int zbd_limit_eio(int rc)
{
	return rc == -ETOOMANYREFS || rc == -EOVERFLOW ? -EIO : rc;
}

static int zbd_rw(struct zbd_dev *z, uint64_t off, uint8_t *buf, size_t len,
		  bool write)
{
	if (off % z->lblock || len % z->lblock)
		return -EINVAL;
	while (len) {
		size_t n = len < ZBD_BOUNCE ? len : ZBD_BOUNCE;
		ssize_t r;

		if (write)
			memcpy(z->bounce, buf, n);
		r = write ? pwrite(z->fd, z->bounce, n, (off_t)off)
			  : pread(z->fd, z->bounce, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return zbd_limit_eio(-errno);
		if (r == 0 || (size_t)r % z->lblock)
			return -EIO;
		if (!write)
			memcpy(buf, z->bounce, (size_t)r);
		buf += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

static int zbd_sync(struct zbd_dev *z)
{
	while (fdatasync(z->fd))
		if (errno != EINTR)
			return -errno;
	return 0;
}

/*
 * Reads take any byte range, as on the emulated devices (the engine
 * reads byte ranges; the lab's soak failed with -EINVAL before): the
 * logical blocks around the range go through the bounce buffer.
 */
static int zbd_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	struct zbd_dev *z = to_zbd(dev);
	uint8_t *p = buf;

	if (off % z->lblock == 0 && len % z->lblock == 0)
		return zbd_rw(z, off, buf, len, false);
	while (len) {
		uint64_t at = off / z->lblock * z->lblock;
		size_t skip = (size_t)(off - at);
		size_t n = len < ZBD_BOUNCE / 2 ? len : ZBD_BOUNCE / 2;
		size_t span = (skip + n + z->lblock - 1) / z->lblock * z->lblock;
		ssize_t r = pread(z->fd, z->bounce, span, (off_t)at);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if ((size_t)r < skip + n)
			return -EIO;
		memcpy(p, z->bounce + skip, n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int zbd_write(struct hw_dev *dev, uint64_t off, const void *buf,
		     size_t len, unsigned flags)
{
	struct zbd_dev *z = to_zbd(dev);
	int rc = zbd_rw(z, off, (uint8_t *)buf, len, true);

	return rc || !(flags & HW_FUA) ? rc : zbd_sync(z);
}

static int zbd_flush(struct hw_dev *dev)
{
	return zbd_sync(to_zbd(dev));
}

static uint8_t zbd_cond(unsigned int c)
{
	switch (c) {
	case ZBD_ZONE_COND_EMPTY:	return HW_ZC_EMPTY;
	case ZBD_ZONE_COND_IMP_OPEN:	return HW_ZC_IMP_OPEN;
	case ZBD_ZONE_COND_EXP_OPEN:	return HW_ZC_EXP_OPEN;
	case ZBD_ZONE_COND_CLOSED:	return HW_ZC_CLOSED;
	case ZBD_ZONE_COND_FULL:	return HW_ZC_FULL;
	case ZBD_ZONE_COND_READONLY:	return HW_ZC_READONLY;
	case ZBD_ZONE_COND_OFFLINE:	return HW_ZC_OFFLINE;
	default:			return HW_ZC_NOT_WP;
	}
}

static int zbd_report_zones_op(struct hw_dev *dev, uint64_t first,
			       struct hw_zone *zones, unsigned *nr)
{
	struct zbd_dev *z = to_zbd(dev);
	struct zbd_zone *zz = calloc(*nr, sizeof(*zz));
	unsigned got = *nr;
	int rc;

	if (!zz)
		return -ENOMEM;
	rc = zbd_errno(zbd_report_zones(z->fd,
					(off_t)(first * dev->geo.zone_size), 0,
					ZBD_RO_ALL, zz, &got));
	if (rc)
		goto out;
	for (unsigned k = 0; k < got; k++) {
		zones[k].start = zz[k].start;
		zones[k].len = zz[k].len;
		zones[k].capacity = zz[k].capacity;
		zones[k].wp = zz[k].wp;
		zones[k].type = zz[k].type == ZBD_ZONE_TYPE_CNV ? HW_ZONE_CONV
								: HW_ZONE_SEQ;
		zones[k].cond = zbd_cond(zz[k].cond);
		if (zz[k].cond == ZBD_ZONE_COND_FULL)
			zones[k].wp = zz[k].start + zz[k].capacity;
	}
	*nr = got;
out:
	free(zz);
	return rc;
}

static int zbd_zone_mgmt_op(struct hw_dev *dev, enum hw_zone_op op,
			    uint64_t zone)
{
	static const enum zbd_zone_op ops[] = {
		[HW_ZONE_RESET] = ZBD_OP_RESET,
		[HW_ZONE_OPEN] = ZBD_OP_OPEN,
		[HW_ZONE_CLOSE] = ZBD_OP_CLOSE,
		[HW_ZONE_FINISH] = ZBD_OP_FINISH,
	};
	uint64_t zs = dev->geo.zone_size;

	return zbd_limit_eio(zbd_errno(zbd_zones_operation(to_zbd(dev)->fd,
					ops[op], (off_t)(zone * zs), (off_t)zs)));
}

static int zbd_zone_append_op(struct hw_dev *dev, uint64_t zone,
			      const void *buf, size_t len, unsigned flags,
			      uint64_t *written_off)
{
	struct hw_zone zi;
	unsigned nr = 1;
	int rc;

	rc = zbd_report_zones_op(dev, zone, &zi, &nr);
	if (rc)
		return rc;
	if (nr != 1 || zi.type != HW_ZONE_SEQ || zi.cond == HW_ZC_FULL ||
	    zi.cond == HW_ZC_READONLY || zi.cond == HW_ZC_OFFLINE ||
	    len > zi.start + zi.capacity - zi.wp)
		return -EIO;
	rc = zbd_write(dev, zi.wp, buf, len, flags);
	if (rc)
		return rc;
	*written_off = zi.wp;
	return 0;
}

static int zbd_describe(struct hw_dev *dev, char *buf, size_t len)
{
	struct zbd_dev *z = to_zbd(dev);

	snprintf(buf, len,
		 "zbd (real zoned block device, libzbd): %.32s, %s, %llu zones of %llu bytes, %u conventional, max_open %u, max_active %u, zone append emulated by writes",
		 z->info.vendor_id,
		 z->info.model == ZBD_DM_HOST_AWARE ? "host-aware"
						     : "host-managed",
		 (unsigned long long)dev->geo.nr_zones,
		 (unsigned long long)dev->geo.zone_size, dev->geo.nr_conv,
		 dev->geo.max_open, dev->geo.max_active);
	return 0;
}

static void zbd_destroy(struct hw_dev *dev)
{
	struct zbd_dev *z = to_zbd(dev);

	zbd_close(z->fd);
	free(z->bounce);
	free(z);
}

static const struct hw_ops zbd_ops = {
	.name = "zbd",
	.read = zbd_read,
	.write = zbd_write,
	.flush = zbd_flush,
	.destroy = zbd_destroy,
	.report_zones = zbd_report_zones_op,
	.zone_mgmt = zbd_zone_mgmt_op,
	.zone_append = zbd_zone_append_op,
	.describe = zbd_describe,
};

/* What PATH is, in one line, before libzbd is asked about it. */
static int zbd_check_path(const char *path, const struct hw_opts *o,
			  char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (*path == '\0')
		return hw_errf(err, errlen, -EINVAL,
			       "missing path in '%s' (usage: %s)", o->spec,
			       o->usage);
	if (stat(path, &st)) {
		rc = -errno;
		return hw_errf(err, errlen, rc, "cannot open '%s': %s", path,
			       strerror(-rc));
	}
	if (!S_ISBLK(st.st_mode))
		return hw_errf(err, errlen, -ENOTBLK,
			       "'%s' is not a block device, so not a zoned one (for an emulated zoned device use zoned:file,path=%s,size=SIZE)",
			       path, path);
	rc = zbd_device_is_zoned(path);
	if (rc < 0)
		return hw_errf(err, errlen, zbd_errno(rc),
			       "cannot tell whether '%s' is zoned: %s", path,
			       strerror(-zbd_errno(rc)));
	if (rc == 0)
		return hw_errf(err, errlen, -ENXIO,
			       "'%s' is a block device but not a zoned one (for an emulated zoned device use zoned:mem or zoned:file)",
			       path);
	return 0;
}

/* /sys/dev/block/MAJ:MIN/queue/zone_append_max_bytes, or 0. */
static uint64_t sysfs_append_max(int fd)
{
	unsigned long long v = 0;
	char p[96];
	struct stat st;
	FILE *f;

	if (fstat(fd, &st))
		return 0;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/queue/zone_append_max_bytes",
		 major(st.st_rdev), minor(st.st_rdev));
	f = fopen(p, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* Leading conventional zones; -EOPNOTSUPP if any comes later. */
static int count_conv(struct zbd_dev *z, uint64_t nr_zones, uint32_t *nr_conv,
		      uint64_t *capacity)
{
	struct zbd_zone *zz = calloc(nr_zones, sizeof(*zz));
	unsigned got = (unsigned)nr_zones;
	uint64_t k;
	int rc;

	if (!zz)
		return -ENOMEM;
	rc = zbd_errno(zbd_report_zones(z->fd, 0, 0, ZBD_RO_ALL, zz, &got));
	if (rc)
		goto out;
	for (k = 0; k < got && zz[k].type == ZBD_ZONE_TYPE_CNV; k++)
		;
	*nr_conv = (uint32_t)k;
	*capacity = k < got ? zz[k].capacity : 0;
	for (; k < got; k++)
		if (zz[k].type == ZBD_ZONE_TYPE_CNV)
			rc = -EOPNOTSUPP;
out:
	free(zz);
	return rc;
}

static int zbd_dev_open(const struct hw_opts *o, struct hw_dev **out,
			char *err, size_t errlen)
{
	const char *path = o->first;
	struct zbd_dev *z;
	uint64_t cap = 0, append;
	uint32_t nr_conv = 0;
	int rc;

	rc = zbd_check_path(path, o, err, errlen);
	if (rc)
		return rc;
	z = calloc(1, sizeof(*z));
	if (!z)
		return hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			       o->spec);
	errno = 0;
	z->fd = zbd_open(path, O_RDWR | O_DIRECT | O_CLOEXEC, &z->info);
	if (z->fd < 0) {
		rc = zbd_errno(z->fd);
		free(z);
		return hw_errf(err, errlen, rc, "zbd_open('%s') failed: %s",
			       path, strerror(-rc));
	}
	z->lblock = z->info.lblock_size ? z->info.lblock_size : 512;
	rc = posix_memalign((void **)&z->bounce, 4096, ZBD_BOUNCE);
	if (rc) {
		z->bounce = NULL;
		rc = hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			     o->spec);
		goto out_error;
	}
	rc = count_conv(z, z->info.nr_zones, &nr_conv, &cap);
	if (rc) {
		hw_errf(err, errlen, rc, "cannot use the zones of '%s': %s",
			path, rc == -EOPNOTSUPP
			? "conventional zones after sequential ones"
			: strerror(-rc));
		goto out_error;
	}
	append = sysfs_append_max(z->fd);
	if (append == 0 || append > cap)
		append = cap;
	hw_dev_init(&z->dev, &zbd_ops, z->info.nr_sectors * 512,
		    HW_CAP_STORES_DATA | HW_CAP_PERSISTENT | HW_CAP_VOLATILE |
		    HW_CAP_ZONED);
	z->dev.geo.sector_size = z->lblock;
	z->dev.geo.atomic_write = z->lblock;
	z->dev.geo.zone_size = z->info.zone_size;
	z->dev.geo.nr_zones = z->info.nr_zones;
	z->dev.geo.nr_conv = nr_conv;
	z->dev.geo.max_open = z->info.max_nr_open_zones == UINT_MAX
			      ? 0 : z->info.max_nr_open_zones;
	z->dev.geo.max_active = z->info.max_nr_active_zones == UINT_MAX
				? 0 : z->info.max_nr_active_zones;
	z->dev.geo.max_append = (uint32_t)(append < UINT32_MAX ? append
							       : UINT32_MAX & ~511u);
	*out = &z->dev;
	return 0;

out_error:
	zbd_close(z->fd);
	free(z->bounce);
	free(z);
	return rc;
}

#endif /* FSO_NO_EXTERNAL_LIBS */

static const char *const zbd_keys[] = { NULL };

const struct hw_backend hw_zbd_backend = {
	.kind = "zbd",
	.usage = "zbd:PATH",
	.keys = zbd_keys,
	.open = zbd_dev_open,
};
