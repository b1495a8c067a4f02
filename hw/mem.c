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
 *
 * A closed device's mapping is kept for a later open of its size or a
 * smaller one (at most MEM_KEEP mappings of at most MEM_KEEP_MAX bytes,
 * the larger ones kept first), with the pages its writes dirtied zeroed
 * again, so a process that formats a fresh
 * device per trial (a perf sample, a property trial, a swarm round)
 * pays the first touch of each page once, not per device: on a virtual
 * machine a page fault costs more than zeroing the page.  A bitmap of
 * the pages written (one bit a host page) says what to zero; a page
 * never written is still the kernel's zero page or was given back by
 * zero-out, and reads as zeros either way.  A read of such a page is
 * answered with zeros without touching it: a read of untouched memory
 * takes a fault too (of the kernel's zero page), and the write that
 * usually follows takes another.
 *
 *   close:  keep (base, size, dirty bitmap)
 *   open:   the smallest kept one that is large enough?  memset each
 *           dirty page, clear the bitmap, use its first SIZE bytes
 *   read:   a run of pages not in the bitmap: zeros, the mapping unread
 */
#include "hw/hw_internal.h"

#include "base/prefault.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MEM_KEEP      4              /* data and realtime devices        */
#define MEM_KEEP_MAX  (512ull << 20) /* larger mappings are unmapped    */

/* A mapping and the pages its writes dirtied (bit p: page p). */
struct mem_map {
	uint8_t *base;
	size_t size;
	uint64_t *dirty;
};

struct mem_dev {
	struct hw_dev dev;
	struct mem_map map;
	size_t page;           /* the host's page size, for madvise */
};

static size_t dirty_words(uint64_t size, size_t page)
{
	return (size_t)(((size + page - 1) / page + 63) / 64);
}

static struct mem_map kept[MEM_KEEP];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static bool is_dirty(const struct mem_dev *md, uint64_t p)
{
	return md->map.dirty[p / 64] >> (p % 64) & 1;
}

static void mark_dirty(struct mem_dev *md, uint64_t off, uint64_t len)
{
	uint64_t first = off / md->page, last = (off + len - 1) / md->page;

	if (!len || !md->map.dirty)
		return;
	for (uint64_t p = first; p <= last; p++)
		md->map.dirty[p / 64] |= 1ull << (p % 64);
}

/*
 * A large write to pages not yet written: fault them in with one call
 * (base/prefault.h) rather than one fault a page, the whole pages the
 * write touches (the mapping is page aligned and ends on a page).
 */
static void populate(struct mem_dev *md, uint64_t off, size_t len)
{
	uint64_t a = off / md->page * md->page;
	uint64_t b = (off + len + md->page - 1) / md->page * md->page;

	if (len >= 16 * md->page && md->map.dirty &&
	    !is_dirty(md, off / md->page))
		mem_prefault(md->map.base + a, (size_t)(b - a));
}

/*
 * The smallest kept mapping of at least size bytes, its dirty pages
 * zeroed; 0 if none.  The device uses its first size bytes.
 */
static int take_kept(size_t size, size_t page, struct mem_map *m)
{
	int best = -1;

	pthread_mutex_lock(&kept_lock);
	for (int i = 0; i < MEM_KEEP; i++)
		if (kept[i].base && kept[i].size >= size &&
		    (best < 0 || kept[i].size < kept[best].size))
			best = i;
	if (best >= 0) {
		*m = kept[best];
		kept[best].base = NULL;
	}
	pthread_mutex_unlock(&kept_lock);
	if (best < 0)
		return 0;
	size = m->size;
	for (size_t w = 0; w < dirty_words(size, page); w++) {
		for (uint64_t bits = m->dirty[w]; bits; bits &= bits - 1) {
			size_t p = w * 64 + (size_t)__builtin_ctzll(bits);
			size_t n = (p + 1) * page > size ? size - p * page : page;

			memset(m->base + p * page, 0, n);
		}
		m->dirty[w] = 0;
	}
	return 1;
}

/*
 * Keep m for a later open, in a free slot or instead of the smallest
 * kept one if m is larger; unmap what is not kept.
 */
static void put_kept(struct mem_map *m)
{
	struct mem_map out = *m;
	int slot = -1;

	pthread_mutex_lock(&kept_lock);
	for (int i = 0; i < MEM_KEEP && m->dirty; i++) {
		if (!kept[i].base) {
			slot = i;
			break;
		}
		if (slot < 0 || kept[i].size < kept[slot].size)
			slot = i; /* the smallest kept so far */
	}
	if (slot >= 0 && (!kept[slot].base || kept[slot].size < m->size)) {
		out = kept[slot];
		kept[slot] = *m;
	}
	pthread_mutex_unlock(&kept_lock);
	if (out.base) {
		munmap(out.base, out.size);
		free(out.dirty);
	}
}

static struct mem_dev *to_mem(struct hw_dev *dev)
{
	return (struct mem_dev *)dev;
}

/* Runs of written pages are copied, runs of never-written ones zeroed. */
static int mem_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	struct mem_dev *md = to_mem(dev);
	uint8_t *out = buf;

	if (!md->map.dirty) {
		memcpy(out, md->map.base + off, len);
		return 0;
	}
	while (len) {
		uint64_t p = off / md->page;
		bool dirty = is_dirty(md, p);
		size_t n = (size_t)((p + 1) * md->page - off);

		while (n < len && is_dirty(md, ++p) == dirty)
			n += md->page;
		if (n > len)
			n = len;
		if (dirty)
			memcpy(out, md->map.base + off, n);
		else
			memset(out, 0, n);
		out += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* In place when every page of the range was written (the others read
 * as zeros: mem_read). */
static const void *mem_view(struct hw_dev *dev, uint64_t off, size_t len)
{
	struct mem_dev *md = to_mem(dev);

	if (md->map.dirty)
		for (uint64_t p = off / md->page; p <= (off + len - 1) / md->page;
		     p++)
			if (!is_dirty(md, p))
				return NULL;
	return md->map.base + off;
}

static int mem_write(struct hw_dev *dev, uint64_t off, const void *buf,
		     size_t len, unsigned flags)
{
	struct mem_dev *md = to_mem(dev);

	populate(md, off, len);
	memcpy(md->map.base + off, buf, len);
	mark_dirty(md, off, len);
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

	/* zeros written by memset: the pages count as dirty (harmless) */
	if (a >= b) {
		memset(md->map.base + off, 0, (size_t)len);
		mark_dirty(md, off, len);
		return 0;
	}
	memset(md->map.base + off, 0, (size_t)(a - off));
	memset(md->map.base + b, 0, (size_t)(end - b));
	mark_dirty(md, off, a - off);
	mark_dirty(md, b, end - b);
	/* Cannot fail on a range we mapped; memset is the safe answer anyway
	 * (its pages stay dirty).  Given back, they are as never written. */
	if (madvise(md->map.base + a, (size_t)(b - a), MADV_DONTNEED)) {
		memset(md->map.base + a, 0, (size_t)(b - a));
		mark_dirty(md, a, b - a);
	} else if (md->map.dirty) {
		for (uint64_t p = a / md->page; p < b / md->page; p++)
			md->map.dirty[p / 64] &= ~(1ull << (p % 64));
	}
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

	put_kept(&md->map);
	free(md);
}

static const struct hw_ops mem_ops = {
	.name = "mem",
	.read = mem_read,
	.view = mem_view,
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
	md = calloc(1, sizeof(*md));
	if (!md)
		return hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			       o->spec);
	md->page = page > 0 ? (size_t)page : HW_BLOCK;
	if (!take_kept((size_t)size, md->page, &md->map)) {
		base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (base == MAP_FAILED) {
			rc = -errno;
			free(md);
			return hw_errf(err, errlen, rc, "cannot map %llu bytes "
				       "for '%s': %s", (unsigned long long)size,
				       o->spec, strerror(-rc));
		}
		md->map.base = base;
		md->map.size = (size_t)size;
		/* no bitmap (a huge device): never kept */
		if (size <= MEM_KEEP_MAX)
			md->map.dirty = calloc(dirty_words(size, md->page),
					       sizeof(uint64_t));
	}
	hw_dev_init(&md->dev, &mem_ops, size,
		    HW_CAP_STORES_DATA | HW_CAP_ZERO_FREES);
	*out = &md->dev;
	return 0;
}

static const char *const mem_keys[] = { NULL };

const struct hw_backend hw_mem_backend = {
	.kind = "mem",
	.usage = "mem:SIZE",
	.keys = mem_keys,
	.open = mem_open,
};
