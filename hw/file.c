/*
 * file.c - "file:PATH[,size=SIZE]", a device backed by an image file
 * (or a block device) through the host's page cache.
 *
 * The page cache is the device's volatile write cache: a write is
 * durable only after fdatasync, which is what flush and HW_FUA do.
 * Without size= the file must exist and its size, rounded down to 4 KiB,
 * is the device size.  With size= the file is created if missing and
 * grown (sparsely) if smaller; a larger file is used in part and never
 * shrunk, so pointing a small device at a big image loses nothing.
 *
 * Zero-out asks the filesystem to zero or punch the range and writes
 * zeros only where neither is supported; discard punches or does
 * nothing.  What a filesystem does not support is remembered, so an
 * unsupported fallocate costs one failed call per device, not per I/O.
 * A block device zeroes and punches whole logical blocks only (fallocate
 * says -EINVAL to anything else), so there the partial blocks at either
 * end of a zero-out are written and those of a discard are kept.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

struct file_dev {
	struct hw_dev dev;
	int fd;
	bool no_zero_range;    /* FALLOC_FL_ZERO_RANGE: EOPNOTSUPP seen */
	bool no_punch;         /* FALLOC_FL_PUNCH_HOLE: EOPNOTSUPP seen */
	uint32_t lbs;          /* a block device's logical block size; 0
				  for a regular file                    */
};

static struct file_dev *to_file(struct hw_dev *dev)
{
	return (struct file_dev *)dev;
}

static int file_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	struct file_dev *f = to_file(dev);
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = pread(f->fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;    /* the file was truncated under us */
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int file_sync(struct file_dev *f)
{
	while (fdatasync(f->fd)) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static int file_write(struct hw_dev *dev, uint64_t off, const void *buf,
		      size_t len, unsigned flags)
{
	struct file_dev *f = to_file(dev);
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = pwrite(f->fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;    /* no progress and no error: give up */
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return (flags & HW_FUA) ? file_sync(f) : 0;
}

static int file_flush(struct hw_dev *dev)
{
	return file_sync(to_file(dev));
}

/*
 * fallocate(mode), retried on EINTR.  An unsupported mode sets *off_flag
 * and returns -EOPNOTSUPP, now and on every later call.
 */
static int file_fallocate(struct file_dev *f, int mode, bool *off_flag,
			  uint64_t off, uint64_t len)
{
	if (*off_flag)
		return -EOPNOTSUPP;
	while (fallocate(f->fd, mode, (off_t)off, (off_t)len)) {
		if (errno == EINTR)
			continue;
		if (errno == EOPNOTSUPP || errno == ENOSYS) {
			*off_flag = true;
			return -EOPNOTSUPP;
		}
		return -errno;
	}
	return 0;
}

/* The whole logical blocks [*a, *b) of [off, off + len); *a >= *b if none. */
static void whole_blocks(const struct file_dev *f, uint64_t off, uint64_t len,
			 uint64_t *a, uint64_t *b)
{
	*a = (off + f->lbs - 1) / f->lbs * f->lbs;
	*b = (off + len) / f->lbs * f->lbs;
}

static int file_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
			 unsigned flags)
{
	struct file_dev *f = to_file(dev);
	uint64_t a, b;
	int rc;

	if (f->lbs && (off % f->lbs || len % f->lbs)) {
		whole_blocks(f, off, len, &a, &b);
		if (a >= b)
			return hw_zero_out_by_writes(dev, off, len, flags);
		rc = hw_zero_out_by_writes(dev, off, a - off, 0);
		if (!rc)
			rc = hw_zero_out_by_writes(dev, b, off + len - b, 0);
		return rc ? rc : file_zero_out(dev, a, b - a, flags);
	}
	rc = file_fallocate(f, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
			    &f->no_zero_range, off, len);
	if (rc == -EOPNOTSUPP)
		rc = file_fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				    &f->no_punch, off, len);
	if (rc == -EOPNOTSUPP)
		return hw_zero_out_by_writes(dev, off, len, flags);
	if (rc == 0 && (flags & HW_FUA))
		rc = file_sync(f);
	return rc;
}

static int file_discard(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	struct file_dev *f = to_file(dev);
	uint64_t a, b;
	int rc;

	if (f->lbs) {
		whole_blocks(f, off, len, &a, &b);
		if (a >= b)
			return 0;
		off = a;
		len = b - a;
	}
	rc = file_fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			    &f->no_punch, off, len);
	/* Discard is a hint; a filesystem that cannot punch keeps the data. */
	return rc == -EOPNOTSUPP ? 0 : rc;
}

static void file_destroy(struct hw_dev *dev)
{
	struct file_dev *f = to_file(dev);

	close(f->fd);
	free(f);
}

static const struct hw_ops file_ops = {
	.name = "file",
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.zero_out = file_zero_out,
	.discard = file_discard,
	.destroy = file_destroy,
};

/* The current size of what fd refers to: a regular file or a disk. */
static int file_size(int fd, const struct hw_opts *o, const char *path,
		     uint64_t *size, bool *regular, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (fstat(fd, &st)) {
		rc = -errno;
		return hw_errf(err, errlen, rc, "cannot stat '%s': %s", path,
			       strerror(-rc));
	}
	*regular = S_ISREG(st.st_mode);
	if (*regular) {
		*size = (uint64_t)st.st_size;
		return 0;
	}
	if (!S_ISBLK(st.st_mode))
		return hw_errf(err, errlen, -EINVAL,
			       "'%s' in '%s' is neither a regular file nor a block device",
			       path, o->spec);
	if (ioctl(fd, BLKGETSIZE64, size)) {
		rc = -errno;
		return hw_errf(err, errlen, rc, "cannot get the size of '%s': %s",
			       path, strerror(-rc));
	}
	return 0;
}

/*
 * Open path read-write.  If it is missing and create is set, create it
 * exclusively and say so in *created, so a later failure can remove
 * exactly what this call made.
 */
static int file_open_fd(const char *path, bool create, bool *created,
			char *err, size_t errlen)
{
	int fd, rc;

	*created = false;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		fd = open(path, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0644);
		*created = fd >= 0;
	}
	if (fd >= 0)
		return fd;
	rc = -errno;
	if (rc == -ENOENT && !create)
		return hw_errf(err, errlen, rc,
			       "cannot open '%s': %s (add ,size=SIZE to create it)",
			       path, strerror(-rc));
	return hw_errf(err, errlen, rc, "cannot open '%s': %s", path,
		       strerror(-rc));
}

static int file_open(const struct hw_opts *o, struct hw_dev **out,
		     char *err, size_t errlen)
{
	const char *path = o->first, *want_s = hw_opts_get(o, "size");
	uint64_t want = 0, have, size;
	bool created = false, regular;
	struct file_dev *f;
	int fd = -1, rc;

	if (*path == '\0')
		return hw_errf(err, errlen, -EINVAL, "missing path in '%s' (usage: %s)",
			       o->spec, o->usage);
	if (want_s) {
		rc = hw_opts_dev_size(o, "size", want_s, &want, err, errlen);
		if (rc)
			return rc;
		if (want > INT64_MAX)
			return hw_errf(err, errlen, -EFBIG,
				       "size '%s' in '%s' is beyond the largest file offset",
				       want_s, o->spec);
	}

	fd = file_open_fd(path, want_s != NULL, &created, err, errlen);
	if (fd < 0)
		return fd;
	rc = file_size(fd, o, path, &have, &regular, err, errlen);
	if (rc)
		goto out_error;
	if (want_s) {
		size = want;
		if (have < want && !regular) {
			rc = hw_errf(err, errlen, -ENOSPC,
				     "'%s' holds %llu bytes, less than size=%s",
				     path, (unsigned long long)have, want_s);
			goto out_error;
		}
		if (have < want && ftruncate(fd, (off_t)want)) {
			rc = -errno;
			hw_errf(err, errlen, rc, "cannot grow '%s' to %s: %s",
				path, want_s, strerror(-rc));
			goto out_error;
		}
	} else {
		size = have / HW_BLOCK * HW_BLOCK;
		if (size == 0) {
			rc = hw_errf(err, errlen, -EINVAL,
				     "'%s' holds %llu bytes, less than one %u-byte block (give ,size=SIZE to grow it)",
				     path, (unsigned long long)have, HW_BLOCK);
			goto out_error;
		}
	}

	f = calloc(1, sizeof(*f));
	if (!f) {
		rc = hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			     o->spec);
		goto out_error;
	}
	f->fd = fd;
	if (!regular) {
		int lbs = 0;

		f->lbs = ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0
			 ? (uint32_t)lbs : 512;
	}
	hw_dev_init(&f->dev, &file_ops, size,
		    HW_CAP_STORES_DATA | HW_CAP_PERSISTENT | HW_CAP_VOLATILE |
		    HW_CAP_DISCARD);
	*out = &f->dev;
	return 0;

out_error:
	close(fd);
	if (created)
		unlink(path);
	return rc;
}

static const char *const file_keys[] = { "size", NULL };

const struct hw_backend hw_file_backend = {
	.kind = "file",
	.usage = "file:PATH[,size=SIZE]",
	.keys = file_keys,
	.open = file_open,
};
