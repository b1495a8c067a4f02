/*
 * pmem.c - "pmem:PATH[,size=SIZE]", persistent memory through libpmem2.
 *
 * PATH is mapped with pmem2_map_new() and the device is the mapping:
 *
 *   write        a store: pmem2 memcpy with PMEM2_F_MEM_NOFLUSH, visible
 *                at once, durable only once a persist covers it
 *   HW_FUA write the same memcpy with flush + drain (durable on return)
 *   persist      the map's persist function (flush + drain) on the range
 *   flush        persist of every byte stored since the last flush
 *   zero-out     pmem2 memset, with the same flags as a write
 *
 * Stores are atomic in aligned 8-byte words (geo.atomic_write = 8), the
 * unit the crash layer tears at.  libpmem2 picks how it persists from
 * what PATH is, and reports it as the store granularity:
 *
 *   byte        DAX on a platform with eADR: caches are persistent, a
 *               persist is a fence (real persistent memory)
 *   cache line  DAX: persist = clwb/clflushopt + sfence (real)
 *   page        an ordinary file: persist = msync of the pages, i.e.
 *               the page cache stands in for the CPU caches (emulated:
 *               the API and ordering are real, the medium is not)
 *
 * The device asks for PMEM2_GRANULARITY_PAGE, the weakest, so every kind
 * of PATH maps; hw_describe() says which one it got.  Without size= the
 * file's size (rounded down to 4 KiB) is the device size; with size= a
 * missing file is created and a smaller one grown, as file: does.
 *
 * Builds that cannot link libpmem2 (MSan: the library is not
 * instrumented) define FSO_NO_EXTERNAL_LIBS and get a backend that only
 * says so.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <stdio.h>

#ifdef FSO_NO_EXTERNAL_LIBS

static int pmem_open(const struct hw_opts *o, struct hw_dev **out,
		     char *err, size_t errlen)
{
	return hw_errf(err, errlen, -EOPNOTSUPP,
		       "cannot open '%s': built without libpmem2 (MSan build)",
		       o->spec);
}

#else

#include <fcntl.h>
#include <libpmem2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pmem_dev {
	struct hw_dev dev;
	int fd;
	struct pmem2_map *map;
	uint8_t *base;
	pmem2_persist_fn persist;
	pmem2_memcpy_fn memcpy_fn;
	pmem2_memset_fn memset_fn;
	enum pmem2_granularity gran;
	uint64_t dirty_lo, dirty_hi;   /* stored since the last flush */
};

static struct pmem_dev *to_pmem(struct hw_dev *dev)
{
	return (struct pmem_dev *)dev;
}

static void note_store(struct pmem_dev *p, uint64_t off, uint64_t len)
{
	if (p->dirty_hi == p->dirty_lo) {
		p->dirty_lo = off;
		p->dirty_hi = off + len;
		return;
	}
	if (off < p->dirty_lo)
		p->dirty_lo = off;
	if (off + len > p->dirty_hi)
		p->dirty_hi = off + len;
}

/* FUA: flush and drain inside the copy; otherwise plain stores. */
static unsigned store_flags(unsigned flags)
{
	return (flags & HW_FUA) ? 0 : PMEM2_F_MEM_NOFLUSH;
}

static int pmem_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	memcpy(buf, to_pmem(dev)->base + off, len);
	return 0;
}

static int pmem_write(struct hw_dev *dev, uint64_t off, const void *buf,
		      size_t len, unsigned flags)
{
	struct pmem_dev *p = to_pmem(dev);

	p->memcpy_fn(p->base + off, buf, len, store_flags(flags));
	if (!(flags & HW_FUA))
		note_store(p, off, len);
	return 0;
}

static int pmem_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
			 unsigned flags)
{
	struct pmem_dev *p = to_pmem(dev);

	p->memset_fn(p->base + off, 0, (size_t)len, store_flags(flags));
	if (!(flags & HW_FUA))
		note_store(p, off, len);
	return 0;
}

static int pmem_persist(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	struct pmem_dev *p = to_pmem(dev);

	p->persist(p->base + off, (size_t)len);
	return 0;
}

static int pmem_flush(struct hw_dev *dev)
{
	struct pmem_dev *p = to_pmem(dev);

	if (p->dirty_hi > p->dirty_lo)
		p->persist(p->base + p->dirty_lo,
			   (size_t)(p->dirty_hi - p->dirty_lo));
	p->dirty_lo = p->dirty_hi = 0;
	return 0;
}

static const char *gran_name(enum pmem2_granularity g)
{
	switch (g) {
	case PMEM2_GRANULARITY_BYTE:
		return "byte (real persistent memory, persistent caches)";
	case PMEM2_GRANULARITY_CACHE_LINE:
		return "cache line (real persistent memory, flush + fence)";
	case PMEM2_GRANULARITY_PAGE:
		break;
	}
	return "page (an ordinary file: persistence emulated with msync)";
}

static int pmem_describe(struct hw_dev *dev, char *buf, size_t len)
{
	struct pmem_dev *p = to_pmem(dev);

	snprintf(buf, len, "pmem (libpmem2): %llu bytes, store granularity %s",
		 (unsigned long long)dev->geo.size, gran_name(p->gran));
	return 0;
}

static void pmem_destroy(struct hw_dev *dev)
{
	struct pmem_dev *p = to_pmem(dev);

	pmem_flush(dev);
	pmem2_map_delete(&p->map);
	close(p->fd);
	free(p);
}

static const struct hw_ops pmem_ops = {
	.name = "pmem",
	.read = pmem_read,
	.write = pmem_write,
	.flush = pmem_flush,
	.zero_out = pmem_zero_out,
	.destroy = pmem_destroy,
	.persist = pmem_persist,
	.describe = pmem_describe,
};

/* libpmem2's codes are -errno or its own; keep errnos, map the rest. */
static int pmem2_fail(int ret, const char *what, const struct hw_opts *o,
		      char *err, size_t errlen)
{
	int rc = ret < 0 && ret > -4096 ? ret : -EIO;

	return hw_errf(err, errlen, rc, "%s for '%s' failed: %s", what,
		       o->spec, pmem2_errormsg());
}

/*
 * Map the first *size bytes of p->fd (all of it if *size is 0: a devdax
 * device, whose size only libpmem2 knows); fills p's map, base and
 * functions, and *size with the device size.
 */
static int pmem_map(struct pmem_dev *p, uint64_t *size, const struct hw_opts *o,
		    char *err, size_t errlen)
{
	struct pmem2_config *cfg = NULL;
	struct pmem2_source *src = NULL;
	int ret;

	ret = pmem2_config_new(&cfg);
	if (ret)
		return pmem2_fail(ret, "pmem2_config_new", o, err, errlen);
	ret = pmem2_config_set_required_store_granularity(cfg,
						PMEM2_GRANULARITY_PAGE);
	if (!ret && *size)
		ret = pmem2_config_set_length(cfg, (size_t)*size);
	if (ret) {
		ret = pmem2_fail(ret, "pmem2_config", o, err, errlen);
		goto out;
	}
	ret = pmem2_source_from_fd(&src, p->fd);
	if (ret) {
		ret = pmem2_fail(ret, "pmem2_source_from_fd", o, err, errlen);
		goto out;
	}
	ret = pmem2_map_new(&p->map, cfg, src);
	if (ret) {
		ret = pmem2_fail(ret, "pmem2_map_new", o, err, errlen);
		goto out;
	}
	p->base = pmem2_map_get_address(p->map);
	p->gran = pmem2_map_get_store_granularity(p->map);
	p->persist = pmem2_get_persist_fn(p->map);
	p->memcpy_fn = pmem2_get_memcpy_fn(p->map);
	p->memset_fn = pmem2_get_memset_fn(p->map);
	if (*size == 0)
		*size = pmem2_map_get_size(p->map) / HW_BLOCK * HW_BLOCK;
	if (*size == 0 || pmem2_map_get_size(p->map) < *size) {
		pmem2_map_delete(&p->map);
		ret = hw_errf(err, errlen, -EIO,
			      "libpmem2 mapped less of '%s' than one block or than asked",
			      o->spec);
	}
out:
	pmem2_source_delete(&src);
	pmem2_config_delete(&cfg);
	return ret;
}

static int pmem_open(const struct hw_opts *o, struct hw_dev **out,
		     char *err, size_t errlen)
{
	const char *path = o->first, *want_s = hw_opts_get(o, "size");
	uint64_t want = 0, size;
	struct pmem_dev *p = NULL;
	bool created = false;
	struct stat st;
	int fd, rc;

	if (*path == '\0')
		return hw_errf(err, errlen, -EINVAL,
			       "missing path in '%s' (usage: %s)", o->spec,
			       o->usage);
	if (want_s) {
		rc = hw_opts_dev_size(o, "size", want_s, &want, err, errlen);
		if (rc)
			return rc;
		if (want > SIZE_MAX || want > INT64_MAX)
			return hw_errf(err, errlen, -EFBIG,
				       "size '%s' in '%s' cannot be mapped",
				       want_s, o->spec);
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && want_s) {
		fd = open(path, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0644);
		created = fd >= 0;
	}
	if (fd < 0) {
		rc = -errno;
		return hw_errf(err, errlen, rc, "cannot open '%s': %s%s", path,
			       strerror(-rc),
			       rc == -ENOENT ? " (add ,size=SIZE to create it)"
					     : "");
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		hw_errf(err, errlen, rc, "cannot stat '%s': %s", path,
			strerror(-rc));
		goto out_error;
	}
	size = want_s ? want : (uint64_t)st.st_size / HW_BLOCK * HW_BLOCK;
	if (size == 0 && S_ISREG(st.st_mode)) {
		rc = hw_errf(err, errlen, -EINVAL,
			     "'%s' holds less than one %u-byte block (give ,size=SIZE to grow it)",
			     path, HW_BLOCK);
		goto out_error;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < size &&
	    ftruncate(fd, (off_t)size)) {
		rc = -errno;
		hw_errf(err, errlen, rc, "cannot grow '%s' to %s: %s", path,
			want_s, strerror(-rc));
		goto out_error;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		rc = hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			     o->spec);
		goto out_error;
	}
	p->fd = fd;
	rc = pmem_map(p, &size, o, err, errlen);
	if (rc)
		goto out_error;
	hw_dev_init(&p->dev, &pmem_ops, size,
		    HW_CAP_BYTE_ADDR | HW_CAP_STORES_DATA | HW_CAP_PERSISTENT |
		    HW_CAP_VOLATILE);
	p->dev.geo.atomic_write = 8;
	*out = &p->dev;
	return 0;

out_error:
	free(p);
	close(fd);
	if (created)
		unlink(path);
	return rc;
}

#endif /* FSO_NO_EXTERNAL_LIBS */

static const char *const pmem_keys[] = { "size", NULL };

const struct hw_backend hw_pmem_backend = {
	.kind = "pmem",
	.usage = "pmem:PATH[,size=SIZE]",
	.keys = pmem_keys,
	.open = pmem_open,
};
