/*
 * devtrack.c - zero a reused device cheaply between inputs (devtrack.h).
 *
 *   dev->ops ---> dt->ops (a copy of the backend's vtable with write,
 *                 |        zero_out and discard replaced)
 *                 +--> dt->orig (the backend's own vtable)
 *
 * struct devtrack starts with its struct hw_ops, so a wrapper finds its
 * state from dev->ops alone.  Pages are DT_PAGE bytes; a bitmap says
 * which are dirty and a list holds them for the restore.
 */
#include "fuzz/devtrack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DT_PAGE 4096u

/* Pages of every tracked device that hold memory (written since their
 * device was last released whole). */
static uint64_t resident_total;

struct devtrack {
	struct hw_ops ops;           /* first: dev->ops points here          */
	const struct hw_ops *orig;
	struct hw_dev *dev;
	const uint8_t *baseline;     /* starting bytes, or NULL for zeros    */
	uint8_t **kept;              /* or per page: its starting bytes, NULL
					for zeros (devtrack_keep)            */
	uint64_t npages;
	uint64_t *dirty;             /* bitmap, one bit per page             */
	uint64_t *list;              /* dirty page numbers                   */
	uint64_t nlist;
	uint64_t *touched;           /* written since the last release       */
	uint64_t resident;           /* bits set in touched                  */
};

static const uint8_t zeros[DT_PAGE];

static struct devtrack *dt_of(struct hw_dev *dev)
{
	return (struct devtrack *)dev->ops;
}

static int dt_dirty(const struct devtrack *dt, uint64_t p)
{
	return (dt->dirty[p / 64] >> (p % 64)) & 1;
}

static int dt_test_and_set(uint64_t *map, uint64_t p)
{
	uint64_t bit = 1ull << (p % 64);
	int was = (map[p / 64] & bit) != 0;

	map[p / 64] |= bit;
	return was;
}

static void dt_mark(struct devtrack *dt, uint64_t off, uint64_t len)
{
	if (!len)
		return;
	for (uint64_t p = off / DT_PAGE; p <= (off + len - 1) / DT_PAGE; p++) {
		if (!dt_test_and_set(dt->dirty, p))
			dt->list[dt->nlist++] = p;
		/* No branch on these: they depend on earlier inputs. */
		uint64_t fresh = !(dt->touched[p / 64] & (1ull << (p % 64)));

		dt->resident += fresh;
		resident_total += fresh;
		dt->touched[p / 64] |= 1ull << (p % 64);
	}
}

static int dt_write(struct hw_dev *dev, uint64_t off, const void *buf,
		    size_t len, unsigned flags)
{
	struct devtrack *dt = dt_of(dev);

	dt_mark(dt, off, len);
	return dt->orig->write(dev, off, buf, len, flags);
}

/*
 * Zeros over [off, off + len).  Clean pages of a zero baseline already
 * are; the rest get zeros written (and become dirty).
 */
static int dt_zero(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	struct devtrack *dt = dt_of(dev);
	uint64_t end = off + len;

	while (off < end) {
		uint64_t p = off / DT_PAGE;
		uint64_t stop = (p + 1) * DT_PAGE < end ? (p + 1) * DT_PAGE : end;
		int ret;

		if (dt->baseline || (dt->kept && dt->kept[p]) ||
		    dt_dirty(dt, p)) {
			dt_mark(dt, off, stop - off);
			ret = dt->orig->write(dev, off, zeros, (size_t)(stop - off), 0);
			if (ret)
				return ret;
		}
		off = stop;
	}
	return 0;
}

static int dt_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
		       unsigned flags)
{
	return dt_zero(dev, off, len);
}

static int dt_discard(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	return dt_zero(dev, off, len);
}

int devtrack_attach(struct hw_dev *dev, const uint8_t *baseline,
		    struct devtrack **out)
{
	struct devtrack *dt = calloc(1, sizeof(*dt));

	if (!dt)
		return -ENOMEM;
	dt->npages = (hw_size(dev) + DT_PAGE - 1) / DT_PAGE;
	dt->dirty = calloc((size_t)(dt->npages + 63) / 64, sizeof(uint64_t));
	dt->touched = calloc((size_t)(dt->npages + 63) / 64, sizeof(uint64_t));
	dt->list = malloc((size_t)dt->npages * sizeof(uint64_t));
	if (!dt->dirty || !dt->touched || !dt->list) {
		free(dt->dirty);
		free(dt->touched);
		free(dt->list);
		free(dt);
		return -ENOMEM;
	}
	dt->orig = dev->ops;
	dt->dev = dev;
	dt->baseline = baseline;
	dt->ops = *dev->ops;
	dt->ops.write = dt_write;
	/* Without the backend's own zero-out or discard, hw.c falls back to
	 * writes, which we see anyway. */
	if (dt->orig->zero_out)
		dt->ops.zero_out = dt_zero_out;
	if (dt->orig->discard)
		dt->ops.discard = dt_discard;
	dev->ops = &dt->ops;
	*out = dt;
	return 0;
}

/* Bytes of page p: a whole page, but the device's last may be short. */
static size_t page_len(const struct devtrack *dt, uint64_t p)
{
	uint64_t off = p * DT_PAGE, size = hw_size(dt->dev);

	return (size_t)(size - off < DT_PAGE ? size - off : DT_PAGE);
}

/* Page p's starting bytes: NULL for zeros. */
static const uint8_t *start_of(const struct devtrack *dt, uint64_t p)
{
	if (dt->baseline)
		return dt->baseline + p * DT_PAGE;
	return dt->kept ? dt->kept[p] : NULL;
}

/* Page p as it started. */
static int put_page_back(struct devtrack *dt, uint64_t p)
{
	const uint8_t *from = start_of(dt, p);

	return dt->orig->write(dt->dev, p * DT_PAGE, from ? from : zeros,
			       page_len(dt, p), 0);
}

static void forget_dirty(struct devtrack *dt)
{
	for (uint64_t i = 0; i < dt->nlist; i++)
		dt->dirty[dt->list[i] / 64] = 0;
	dt->nlist = 0;
}

int devtrack_keep(struct devtrack *dt)
{
	int ret = 0;

	if (dt->baseline)
		return -EINVAL;
	if (!dt->kept) {
		dt->kept = calloc((size_t)dt->npages, sizeof(*dt->kept));
		if (!dt->kept)
			return -ENOMEM;
	}
	for (uint64_t i = 0; i < dt->nlist && !ret; i++) {
		uint64_t p = dt->list[i];

		if (!dt->kept[p])
			dt->kept[p] = calloc(1, DT_PAGE);
		ret = dt->kept[p] ? hw_read(dt->dev, p * DT_PAGE, dt->kept[p],
					    page_len(dt, p)) : -ENOMEM;
	}
	if (!ret)
		forget_dirty(dt);
	return ret;
}

/*
 * Zeros (or the baseline) over every page written since the last
 * restore, by writing them: the pages stay in memory, so the next input
 * that writes there takes no page fault (under a hypervisor a fault
 * costs microseconds, far more than clearing the page).  What that
 * holds in the end is bounded by the caller through devtrack_release.
 */
int devtrack_restore(struct devtrack *dt)
{
	int ret = 0;

	for (uint64_t i = 0; i < dt->nlist && !ret; i++)
		ret = put_page_back(dt, dt->list[i]);
	forget_dirty(dt);
	return ret;
}

int devtrack_release(struct devtrack *dt)
{
	int ret;

	/*
	 * Only a device whose zero-out hands pages back (mem:'s madvise)
	 * is zeroed whole.  On any other (a pmem file: its zero-out is a
	 * memset, which would make every page of the device resident
	 * while this count said none was) the written pages are zeroed as
	 * at a restore, and stay resident and counted.
	 */
	if (dt->baseline || !dt->orig->zero_out ||
	    !(hw_caps(dt->dev) & HW_CAP_ZERO_FREES))
		return devtrack_restore(dt);
	ret = dt->orig->zero_out(dt->dev, 0, hw_size(dt->dev), 0);
	forget_dirty(dt);
	memset(dt->touched, 0, (size_t)(dt->npages + 63) / 64 * 8);
	resident_total -= dt->resident;
	dt->resident = 0;
	/* the kept pages back: resident again, and clean */
	for (uint64_t p = 0; dt->kept && !ret && p < dt->npages; p++)
		if (dt->kept[p]) {
			dt->touched[p / 64] |= 1ull << (p % 64);
			dt->resident++;
			resident_total++;
			ret = put_page_back(dt, p);
		}
	return ret;
}

uint64_t devtrack_resident_bytes(void)
{
	return resident_total * DT_PAGE;
}

void devtrack_suspend(struct devtrack *dt)
{
	dt->dev->ops = dt->orig;
}

void devtrack_resume(struct devtrack *dt)
{
	dt->dev->ops = &dt->ops;
}

struct hw_dev *devtrack_device(struct devtrack *dt)
{
	return dt->dev;
}

uint64_t devtrack_dirty_end(const struct devtrack *dt)
{
	uint64_t end = 0;

	for (uint64_t i = 0; i < dt->nlist; i++)
		if ((dt->list[i] + 1) * DT_PAGE > end)
			end = (dt->list[i] + 1) * DT_PAGE;
	return end;
}

void devtrack_detach(struct devtrack *dt)
{
	if (!dt)
		return;
	dt->dev->ops = dt->orig;
	resident_total -= dt->resident;
	for (uint64_t p = 0; dt->kept && p < dt->npages; p++)
		free(dt->kept[p]);
	free(dt->kept);
	free(dt->dirty);
	free(dt->touched);
	free(dt->list);
	free(dt);
}
