/*
 * jdata.c - file data I/O: straight to the device, or through the journal.
 *
 * In data=ordered and data=writeback a file's data is written in place at
 * once and never enters the buffer cache.  A file whose data is journaled
 * (data=journal mounts, or the file's journal-data flag) writes each
 * block through a raw buffer instead: the block joins the running
 * transaction, is logged at commit and written home at checkpoint, like
 * a metadata block.  Until then the device may be behind the buffer, so
 * reads of such a block come from the cache.
 *
 *   ordered / writeback:   pwrite --------------------------> device
 *   journal:               pwrite -> raw buffer -> log -> checkpoint -> device
 *
 * Realtime files keep their data on the realtime device, which has no
 * journal: their data is always written in place (as in ordered mode).
 */
#include "ref/ref_internal.h"

bool inode_journals_data(const struct ref_fs *fs, const struct ref_inode *ip)
{
	return !inode_is_rt(ip) &&
	       (fs->data_mode == REF_DATA_JOURNAL || (ip->flags & REF_IF_JDATA));
}

/*
 * The most data blocks one step of a write may add to the running
 * transaction: a step's metadata and its data must fit in the room the
 * journal keeps above the roll limit (journal.c), so a journaled file
 * writes in steps of an eighth of that limit.
 */
uint64_t fdata_max_blocks(const struct ref_fs *fs, const struct ref_inode *ip)
{
	uint64_t n = tx_roll_limit(fs) / 8;

	if (!inode_journals_data(fs, ip))
		return UINT64_MAX;
	return n ? n : 1;
}

/* Copy len bytes (src NULL: zeroes) into the journaled blocks at devoff. */
static int through_journal(struct ref_fs *fs, uint64_t devoff, const void *src,
			   uint64_t len)
{
	const uint8_t *p = src;

	while (len) {
		uint64_t blk = devoff >> fs->bshift;
		uint32_t boff = (uint32_t)(devoff & (fs->bs - 1));
		uint32_t n = len < fs->bs - boff ? (uint32_t)len : fs->bs - boff;
		struct rbuf *b;
		int err = buf_get_raw(fs, blk, n < fs->bs, &b);

		if (err)
			return err;
		if (p)
			memcpy(b->data + boff, p, n);
		else
			memset(b->data + boff, 0, n);
		buf_dirty(fs, b);
		buf_put(fs, b);
		if (p)
			p += n;
		devoff += n;
		len -= n;
	}
	return 0;
}

int fdata_write(struct ref_fs *fs, const struct ref_inode *ip,
		uint64_t devoff, const void *buf, uint64_t len)
{
	if (inode_journals_data(fs, ip))
		return through_journal(fs, devoff, buf, len);
	return hw_write(file_dev(fs, ip), devoff, buf, len, 0);
}

int fdata_zero(struct ref_fs *fs, const struct ref_inode *ip,
	       uint64_t devoff, uint64_t len)
{
	if (inode_journals_data(fs, ip))
		return through_journal(fs, devoff, NULL, len);
	return hw_zero_out(file_dev(fs, ip), devoff, len, 0);
}

/* The newest bytes at devoff when its block has a raw buffer in the
 * cache (a journaled write not yet checkpointed), else NULL. */
static const uint8_t *raw_bytes(struct ref_fs *fs, uint64_t devoff)
{
	struct rbuf *b = buf_find(fs, devoff >> fs->bshift);

	fs->ctr.bcache_lookups++;
	return b && b->raw ? b->data + (devoff & (fs->bs - 1)) : NULL;
}

/*
 * Read file data: from the device, except blocks with a raw buffer in the
 * cache (only looked for while there are any: a mount that journals no
 * data never pays a lookup here).
 */
int fdata_read(struct ref_fs *fs, const struct ref_inode *ip,
	       uint64_t devoff, void *buf, uint64_t len)
{
	uint8_t *p = buf;

	if (fs->nraw == 0 || inode_is_rt(ip))
		return hw_read(file_dev(fs, ip), devoff, buf, len);
	while (len) {
		uint32_t boff = (uint32_t)(devoff & (fs->bs - 1));
		uint32_t n = len < fs->bs - boff ? (uint32_t)len : fs->bs - boff;
		const uint8_t *raw = raw_bytes(fs, devoff);
		int err = 0;

		if (raw)
			memcpy(p, raw, n);
		else
			err = hw_read(fs->dev, devoff, p, n);
		if (err)
			return err;
		p += n;
		devoff += n;
		len -= n;
	}
	return 0;
}

bool fdata_view_runs(const struct ref_fs *fs, const struct ref_inode *ip)
{
	return fs->nraw == 0 || inode_is_rt(ip);
}

const uint8_t *fdata_view(struct ref_fs *fs, const struct ref_inode *ip,
			  uint64_t devoff, uint64_t len)
{
	const uint8_t *raw;

	if (fdata_view_runs(fs, ip))
		return hw_view(file_dev(fs, ip), devoff, (size_t)len);
	if ((devoff & (fs->bs - 1)) + len > fs->bs)
		return NULL; /* more than one block: read it */
	raw = raw_bytes(fs, devoff);
	return raw ? raw : hw_view(fs->dev, devoff, (size_t)len);
}
