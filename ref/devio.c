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
 * The superblock and the journal header go behind a copy of their first
 * sector wherever a cut may tear a sector: on persistent memory, and on
 * a block device whose atomic unit is smaller (meta_sectors_tear).
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
#include "ref/plant.h"

#include <stdlib.h>

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

bool meta_sectors_tear(struct hw_dev *dev)
{
	return (hw_caps(dev) & HW_CAP_BYTE_ADDR) ||
	       dev->geo.atomic_write < HDR_SECTOR;
}

/*
 * The superblock and the journal header are rewritten in place under a
 * checksum over their first sector.  A block device writes a sector
 * whole; persistent memory promises 8 bytes (and a device may say it
 * tears sectors too: crash[atomic=8]:mem), so a cut in the middle of
 * the stores would leave neither the old header nor the new one.  There
 * the header first goes, persisted, into the sector after it (bytes the
 * format otherwise keeps zero), then into place with the copy beside it:
 * at any cut one of the two is whole, and a reader that finds the first
 * damaged takes the copy (hdr_repair).
 *
 * That holds only while the header in place is whole when the copy is
 * overwritten.  A reader repairs in memory: after a cut that tore the
 * header in place, the device keeps the torn one and a whole copy, and
 * a copy-first write torn by the next cut would leave both torn (the
 * journal header unreadable at the next mount).  So when the header in
 * place does not verify, the new one goes there first, persisted, and
 * the copy after it.
 */
static int header_in_place_whole(struct ref_fs *fs, uint64_t off,
				 const void *data, bool *whole)
{
	uint8_t sec[HDR_SECTOR];
	const uint8_t *d = data;
	int err = hw_read(fs->dev, off, sec, HDR_SECTOR);

	if (err)
		fs->meta_err = true;
	else
		*whole = blk_verify(sec, HDR_SECTOR, get32(d + BLKHDR_MAGIC),
				    get64(d + BLKHDR_BLKNO)) == 0;
	return err;
}

static int header_copy_first(struct ref_fs *fs, uint64_t off,
			     const void *data, uint8_t **whole)
{
	uint64_t first = off + HDR_SECTOR;
	bool in_place_whole = true;
	int err;

	*whole = malloc(fs->bs);
	if (!*whole)
		return -ENOMEM;
	memcpy(*whole, data, fs->bs);
	memcpy(*whole + HDR_SECTOR, data, HDR_SECTOR);
	err = header_in_place_whole(fs, off, data, &in_place_whole);
	if (!err && !in_place_whole)
		first = off;
	if (!err)
		err = hw_write(fs->dev, first, data, HDR_SECTOR, HW_META);
	if (!err) {
		fs->dio.metas++;
		err = persist(fs, first, HDR_SECTOR);
	}
	return err;
}

/*
 * Write metadata block blk at off: a header (blk 0 or 1, where a cut may
 * tear a sector) behind its copy, any other block as it is.
 */
static int write_block(struct ref_fs *fs, uint64_t blk, uint64_t off,
		       const void *data, unsigned flags)
{
	uint8_t *whole = NULL;
	int err;

	if (blk > 1 || fs->bs < 2 * HDR_SECTOR || !meta_sectors_tear(fs->dev))
		return hw_write(fs->dev, off, data, fs->bs, flags);
	err = header_copy_first(fs, off, data, &whole);
	if (!err)
		err = hw_write(fs->dev, off, whole, fs->bs, flags);
	free(whole);
	return err;
}

/* Write metadata block blk; with durable, durable when this returns. */
int meta_write(struct ref_fs *fs, uint64_t blk, const void *data, bool durable)
{
	uint64_t off = blk << fs->bshift;
	struct devio *d = &fs->dio;
	int err;

	if (!byte_addr(fs))
		return write_block(fs, blk, off, data,
				   HW_META | (durable ? HW_FUA : 0));
	err = write_block(fs, blk, off, data, HW_META);
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
#ifdef FSO_PLANTED
	if (PLANTED(REF_PLANT_PMEM_FENCE))
		return 0; /* ref/plant.h: the missing fence */
#endif
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
