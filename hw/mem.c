/*
 * mem.c - "mem:SIZE", a device in RAM for the life of the process.
 *
 * The whole device is one private anonymous mapping made with
 * MAP_NORESERVE: the kernel hands out zero pages on first touch and
 * charges nothing up front, so mem:64g opens at once on a small machine
 * and costs only what is written.  Zero-out gives whole pages back with
 * MADV_DONTNEED (they read as zeros again and cost nothing) and clears
 * the ragged edges with memset.  There is no cache: flush has nothing
 * to do and FUA is free.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct mem_dev {
	struct hw_dev dev;
	uint8_t *base;
	size_t page;           /* the host's page size, for madvise */
};

static struct mem_dev *to_mem(struct hw_dev *dev)
{
	return (struct mem_dev *)dev;
}

static int mem_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	memcpy(buf, to_mem(dev)->base + off, len);
	return 0;
}

static int mem_write(struct hw_dev *dev, uint64_t off, const void *buf,
		     size_t len, unsigned flags)
{
	memcpy(to_mem(dev)->base + off, buf, len);
	return 0;
}

static int mem_flush(struct hw_dev *dev)
{
	return 0;
}

/*
 *  off        a (page aligned)             b (page aligned)    off + len
 *   | memset  |    MADV_DONTNEED: freed    |      memset       |
 */
static int mem_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
			unsigned flags)
{
	struct mem_dev *md = to_mem(dev);
	uint64_t end = off + len;
	uint64_t a = (off + md->page - 1) / md->page * md->page;
	uint64_t b = end / md->page * md->page;

	if (a >= b) {
		memset(md->base + off, 0, (size_t)len);
		return 0;
	}
	memset(md->base + off, 0, (size_t)(a - off));
	memset(md->base + b, 0, (size_t)(end - b));
	/* Cannot fail on a range we mapped; memset is the safe answer anyway. */
	if (madvise(md->base + a, (size_t)(b - a), MADV_DONTNEED))
		memset(md->base + a, 0, (size_t)(b - a));
	return 0;
}

/* Discarded data may read as anything; zeros are the cheapest anything. */
static int mem_discard(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	return mem_zero_out(dev, off, len, 0);
}

static void mem_destroy(struct hw_dev *dev)
{
	struct mem_dev *md = to_mem(dev);

	munmap(md->base, (size_t)md->dev.geo.size);
	free(md);
}

static const struct hw_ops mem_ops = {
	.name = "mem",
	.read = mem_read,
	.write = mem_write,
	.flush = mem_flush,
	.zero_out = mem_zero_out,
	.discard = mem_discard,
	.destroy = mem_destroy,
};

static int mem_open(const struct hw_opts *o, struct hw_dev **out,
		    char *err, size_t errlen)
{
	struct mem_dev *md = NULL;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t size;
	void *base;
	int rc;

	rc = hw_opts_dev_size(o, "size", o->first, &size, err, errlen);
	if (rc)
		return rc;
	if (size > SIZE_MAX)
		return hw_errf(err, errlen, -ENOMEM,
			       "'%s' does not fit in this address space",
			       o->spec);
	base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		rc = -errno;
		return hw_errf(err, errlen, rc, "cannot map %llu bytes for '%s': %s",
			       (unsigned long long)size, o->spec, strerror(-rc));
	}
	md = calloc(1, sizeof(*md));
	if (!md) {
		rc = hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			     o->spec);
		goto out_unmap;
	}
	md->base = base;
	md->page = page > 0 ? (size_t)page : HW_BLOCK;
	hw_dev_init(&md->dev, &mem_ops, size, HW_CAP_STORES_DATA);
	*out = &md->dev;
	return 0;

out_unmap:
	munmap(base, (size_t)size);
	return rc;
}

static const char *const mem_keys[] = { NULL };

const struct hw_backend hw_mem_backend = {
	.kind = "mem",
	.usage = "mem:SIZE",
	.keys = mem_keys,
	.open = mem_open,
};
