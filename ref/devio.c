/*
 * devio.c - metadata writes to the data device, by what the device is.
 *
 * The journal and the checkpoint need two things from the device: "this
 * block is durable when the call returns" (the commit block, the journal
 * header) and "everything written before is durable now" (before a commit
 * block, before the header that empties the log).  A block device says
 * that with FUA writes and cache flushes; persistent memory with stores
 * and persists (flush of the cache lines + fence), and only for the bytes
 * the persist covers:
 *
 *                  block device               persistent memory
 *                  (no HW_CAP_BYTE_ADDR)      (HW_CAP_BYTE_ADDR)
 *   meta_write     write                      store; its block joins the
 *                                             pending range
 *   ... durable    write + FUA                store + persist of the block
 *   meta_barrier   flush (all writes)         persist of the pending range
 *                                             of metadata; a flush only if
 *                                             file data was stored since
 *                                             the last barrier
 *
 * File data reaches the data device elsewhere (file.c), as plain writes;
 * on persistent memory those are stores a barrier must persist too
 * (ordered mode).  Rather than track their ranges, the barrier compares
 * the device's write count with the metadata writes made here: any other
 * write since the last barrier was file data, and a flush (on pmem, a
 * persist of everything stored) covers it.  The counter meta_persists
 * counts the persists issued here.
 */
#include "ref/ref_internal.h"

static bool byte_addr(const struct ref_fs *fs)
{
	return hw_caps(fs->dev) & HW_CAP_BYTE_ADDR;
}

static uint64_t dev_writes(const struct ref_fs *fs)
{
	return fs->dev->ctr.writes + fs->dev->ctr.zeroouts;
}

static int persist(struct ref_fs *fs, uint64_t off, uint64_t len)
{
	fs->ctr.meta_persists++;
	return hw_persist(fs->dev, off, len);
}

/* Write metadata block blk; with durable, durable when this returns. */
int meta_write(struct ref_fs *fs, uint64_t blk, const void *data, bool durable)
{
	uint64_t off = blk << fs->bshift;
	struct devio *d = &fs->dio;
	int err;

	if (!byte_addr(fs))
		return hw_write(fs->dev, off, data, fs->bs,
				HW_META | (durable ? HW_FUA : 0));
	err = hw_write(fs->dev, off, data, fs->bs, HW_META);
	if (err)
		return err;
	d->metas++;
	if (durable)
		return persist(fs, off, fs->bs);
	if (d->hi == d->lo) {
		d->lo = off;
		d->hi = off + fs->bs;
	} else {
		d->lo = off < d->lo ? off : d->lo;
		d->hi = off + fs->bs > d->hi ? off + fs->bs : d->hi;
	}
	return 0;
}

/* Everything written to the data device so far becomes durable. */
int meta_barrier(struct ref_fs *fs)
{
	struct devio *d = &fs->dio;
	uint64_t now;
	int err = 0;

	if (!byte_addr(fs))
		return hw_flush(fs->dev);
	now = dev_writes(fs);
	if (d->hi > d->lo)
		err = persist(fs, d->lo, d->hi - d->lo);
	/* anything else written since the last barrier was file data */
	if (!err && (now < d->seen || now - d->seen != d->metas))
		err = hw_flush(fs->dev);
	if (err)
		return err;
	d->lo = d->hi = 0;
	d->metas = 0;
	d->seen = now;
	return 0;
}
