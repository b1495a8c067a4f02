/*
 * null.c - "null:SIZE", a device that stores no data.
 *
 * For metadata-only scale runs: format and mount a 64 TiB filesystem
 * without 64 TiB of anything.  Ordinary writes vanish and read back as
 * zeros; writes tagged HW_META are kept, so the engine can read back
 * what it formatted.  Kept data lives in a hash map from 4 KiB page
 * index to a 4 KiB page, so memory follows the metadata written, never
 * the device size.
 *
 * Rules, per 4 KiB page:
 *   - a META write stores the page (zero-filled, then the written bytes);
 *   - any write to a page already stored updates it, so a stored page
 *     behaves like real storage; other writes are dropped;
 *   - zero-out and discard free whole pages and zero partial ones.
 *
 * The map is open addressing with linear probing; deletion shifts later
 * entries back (no tombstones), which keeps lookups short after the
 * mass deletions of a whole-device discard.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NULL_PAGE 4096u

struct null_slot {
	uint64_t idx;          /* page index; meaningful when page != NULL */
	uint8_t *page;
};

struct null_dev {
	struct hw_dev dev;
	struct null_slot *slot;
	size_t cap;            /* power of two, or 0 before the first page */
	size_t count;
};

static struct null_dev *to_null(struct hw_dev *dev)
{
	return (struct null_dev *)dev;
}

/* Page indices are often sequential; mix them so probes stay short. */
static size_t null_hash(uint64_t idx)
{
	idx ^= idx >> 33;
	idx *= 0xff51afd7ed558ccdULL;
	idx ^= idx >> 33;
	return (size_t)idx;
}

/* The slot holding idx, or the empty slot where it would go. */
static size_t null_probe(const struct null_dev *nd, uint64_t idx)
{
	size_t mask = nd->cap - 1, i = null_hash(idx) & mask;

	while (nd->slot[i].page && nd->slot[i].idx != idx)
		i = (i + 1) & mask;
	return i;
}

static uint8_t *null_lookup(const struct null_dev *nd, uint64_t idx)
{
	if (nd->count == 0)
		return NULL;
	return nd->slot[null_probe(nd, idx)].page;
}

static int null_grow(struct null_dev *nd)
{
	size_t ncap = nd->cap ? nd->cap * 2 : 64;
	struct null_slot *old = nd->slot;
	size_t ocap = nd->cap;

	nd->slot = calloc(ncap, sizeof(*nd->slot));
	if (!nd->slot) {
		nd->slot = old;
		return -ENOMEM;
	}
	nd->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].page)
			nd->slot[null_probe(nd, old[i].idx)] = old[i];
	free(old);
	return 0;
}

/* The stored page idx, created zero-filled if absent. */
static int null_get(struct null_dev *nd, uint64_t idx, uint8_t **page)
{
	size_t i;
	int rc;

	if (nd->count && (*page = nd->slot[null_probe(nd, idx)].page))
		return 0;
	/* Keep the load under 3/4 so probe runs stay short. */
	if ((nd->count + 1) * 4 > nd->cap * 3) {
		rc = null_grow(nd);
		if (rc)
			return rc;
	}
	*page = calloc(1, NULL_PAGE);
	if (!*page)
		return -ENOMEM;
	i = null_probe(nd, idx);
	nd->slot[i].idx = idx;
	nd->slot[i].page = *page;
	nd->count++;
	return 0;
}

/*
 * Free slot i and close the gap: walk the run after it and move back
 * each entry whose home slot does not lie cyclically in (i, j], i.e.
 * whose probe sequence passes through the hole.
 *
 *     before:  [A][X][B][C][ ]     X removed; B's home is X's slot,
 *     after:   [A][B][C][ ][ ]     C's home is B's: both move back
 */
static void null_remove_at(struct null_dev *nd, size_t i)
{
	size_t mask = nd->cap - 1, j = i, home;

	free(nd->slot[i].page);
	nd->slot[i].page = NULL;
	for (;;) {
		j = (j + 1) & mask;
		if (!nd->slot[j].page)
			break;
		home = null_hash(nd->slot[j].idx) & mask;
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		nd->slot[i] = nd->slot[j];
		nd->slot[j].page = NULL;
		i = j;
	}
	nd->count--;
}

/*
 * Drop every stored page with index in [first, end).  A short range is
 * looked up page by page; a long one (a whole-device discard of 64 TiB)
 * is swept slot by slot instead.  During the sweep, removal may shift a
 * later entry into slot i, so slot i is looked at again; entries only
 * ever move toward the hole, so none is skipped.
 */
static void null_drop_pages(struct null_dev *nd, uint64_t first, uint64_t end)
{
	size_t i;

	if (nd->count == 0)
		return;
	if (end - first <= nd->cap) {
		for (uint64_t idx = first; idx < end && nd->count; idx++) {
			i = null_probe(nd, idx);
			if (nd->slot[i].page)
				null_remove_at(nd, i);
		}
		return;
	}
	for (i = 0; i < nd->cap && nd->count; ) {
		struct null_slot *s = &nd->slot[i];

		if (s->page && s->idx >= first && s->idx < end)
			null_remove_at(nd, i);
		else
			i++;
	}
}

static int null_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	struct null_dev *nd = to_null(dev);
	uint8_t *p = buf;

	memset(buf, 0, len);
	while (len && nd->count) {
		size_t in = off % NULL_PAGE;
		size_t n = NULL_PAGE - in < len ? NULL_PAGE - in : len;
		uint8_t *page = null_lookup(nd, off / NULL_PAGE);

		if (page)
			memcpy(p, page + in, n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int null_write(struct hw_dev *dev, uint64_t off, const void *buf,
		      size_t len, unsigned flags)
{
	struct null_dev *nd = to_null(dev);
	const uint8_t *p = buf;
	bool keep = flags & HW_META;
	int rc;

	while (len && (keep || nd->count)) {
		size_t in = off % NULL_PAGE;
		size_t n = NULL_PAGE - in < len ? NULL_PAGE - in : len;
		uint8_t *page = NULL;

		if (keep) {
			rc = null_get(nd, off / NULL_PAGE, &page);
			if (rc)
				return rc;
		} else {
			page = null_lookup(nd, off / NULL_PAGE);
		}
		if (page)
			memcpy(page + in, p, n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* Zero the part of a stored page that [off, off + len) covers. */
static void null_zero_partial(struct null_dev *nd, uint64_t off, uint64_t len)
{
	uint8_t *page = null_lookup(nd, off / NULL_PAGE);

	if (page)
		memset(page + off % NULL_PAGE, 0, (size_t)len);
}

/*
 *    off                                       off + len
 *     |  head  |   whole pages: dropped   |  tail  |
 *  ---+--------+---------+---------+------+--------+---
 *     partial: zeroed in place            partial: zeroed in place
 */
static int null_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
			 unsigned flags)
{
	struct null_dev *nd = to_null(dev);
	uint64_t end = off + len;
	uint64_t first = (off + NULL_PAGE - 1) / NULL_PAGE;
	uint64_t last = end / NULL_PAGE;   /* whole pages are [first, last) */

	if (first >= last) {
		/* Inside one page, or straddling one boundary. */
		uint64_t mid = first * NULL_PAGE;

		if (mid <= off || mid >= end) {
			null_zero_partial(nd, off, len);
		} else {
			null_zero_partial(nd, off, mid - off);
			null_zero_partial(nd, mid, end - mid);
		}
		return 0;
	}
	if (off < first * NULL_PAGE)
		null_zero_partial(nd, off, first * NULL_PAGE - off);
	if (end > last * NULL_PAGE)
		null_zero_partial(nd, last * NULL_PAGE, end - last * NULL_PAGE);
	null_drop_pages(nd, first, last);
	return 0;
}

static int null_discard(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	return null_zero_out(dev, off, len, 0);
}

static int null_flush(struct hw_dev *dev)
{
	return 0;
}

static void null_destroy(struct hw_dev *dev)
{
	struct null_dev *nd = to_null(dev);

	for (size_t i = 0; i < nd->cap; i++)
		free(nd->slot[i].page);
	free(nd->slot);
	free(nd);
}

static const struct hw_ops null_ops = {
	.name = "null",
	.read = null_read,
	.write = null_write,
	.flush = null_flush,
	.zero_out = null_zero_out,
	.discard = null_discard,
	.destroy = null_destroy,
};

static int null_open(const struct hw_opts *o, struct hw_dev **out,
		     char *err, size_t errlen)
{
	struct null_dev *nd;
	uint64_t size;
	int rc;

	rc = hw_opts_dev_size(o, "size", o->first, &size, err, errlen);
	if (rc)
		return rc;
	nd = calloc(1, sizeof(*nd));
	if (!nd)
		return hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			       o->spec);
	hw_dev_init(&nd->dev, &null_ops, size, 0);
	*out = &nd->dev;
	return 0;
}

static const char *const null_keys[] = { NULL };

const struct hw_backend hw_null_backend = {
	.kind = "null",
	.usage = "null:SIZE",
	.keys = null_keys,
	.open = null_open,
};
