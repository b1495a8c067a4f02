/*
 * mount.c - mount and unmount: read and check the superblock, recover the
 * journal, load the allocator and the inode table, finish orphans.
 *
 * Every geometry field of the superblock is checked against the device
 * and against the others before anything else is read, so a damaged
 * superblock is a clear error rather than a wild read.
 */
#include "ref/ref_internal.h"
#include "ref/pcache.h"
#include "ref/reflink.h"

#include "base/park.h"

#include <stdlib.h>

/*
 * The realtime geometry, and the device given for it: an rt filesystem
 * mounts only with its rt device (-ENODEV without one), a plain one only
 * without (-EINVAL), and the device must hold exactly the rt extents the
 * superblock records (nothing on it says which filesystem it belongs to:
 * its size is all there is to check, as on XFS).
 */
static int check_rt(struct ref_fs *fs, const uint8_t *sb, uint64_t bpb)
{
	bool rt = get64(sb + SB_FEATURES) & FEAT_REALTIME;
	const char *why = NULL;
	uint64_t have;

	fs->rtblocks = get64(sb + SB_RTBLOCKS);
	fs->rtextents = get64(sb + SB_RTEXTENTS);
	fs->rtbmap = get64(sb + SB_RTBMAP);
	fs->rtbmaplen = get32(sb + SB_RTBMAPLEN);
	fs->rtx = rt ? get32(sb + SB_RTEXTSIZE) : 1;
	if (!rt && (fs->rtblocks || fs->rtextents || fs->rtbmap ||
		    fs->rtbmaplen || get32(sb + SB_RTEXTSIZE) ||
		    get32(sb + SB_RTBMINIT)))
		why = "realtime fields set without a realtime device";
	else if (rt && (fs->rtx == 0 || fs->rtx > fs->maxext ||
			fs->rtextents == 0 ||
			fs->rtextents > UINT64_MAX / fs->rtx ||
			fs->rtblocks != fs->rtextents * fs->rtx))
		why = "bad realtime geometry";
	else if (rt && (fs->rtbmap != fs->itab + fs->itablen ||
			fs->rtbmaplen != (fs->rtextents + bpb - 1) / bpb))
		why = "bad realtime bitmap geometry";
	if (why) {
		ref_report(fs, "superblock: %s", why);
		return -EFSCORRUPTED;
	}
	if (rt && !fs->rtdev) {
		ref_report(fs, "filesystem has a realtime device (%llu blocks): "
			   "mount it with that device",
			   (unsigned long long)fs->rtblocks);
		return -ENODEV;
	}
	if (!rt && fs->rtdev) {
		ref_report(fs, "realtime device %s given, but the filesystem has "
			   "none", hw_spec(fs->rtdev));
		return -EINVAL;
	}
	if (!rt)
		return 0;
	have = hw_size(fs->rtdev) / fs->bs / fs->rtx;
	if (have != fs->rtextents) {
		ref_report(fs, "realtime device %s holds %llu rt extents of %u "
			   "blocks, the filesystem has %llu: not its device",
			   hw_spec(fs->rtdev), (unsigned long long)have, fs->rtx,
			   (unsigned long long)fs->rtextents);
		return -EINVAL;
	}
	return 0;
}

static int check_super(struct ref_fs *fs, const uint8_t *sb)
{
	uint64_t bpb, devblocks;
	uint32_t bs = get32(sb + SB_BLOCKSIZE);
	/* the rt bitmap sits between the inode table and the data bitmap */
	uint32_t rtbmaplen = (get64(sb + SB_FEATURES) & FEAT_REALTIME) ?
			     get32(sb + SB_RTBMAPLEN) : 0;
	const char *why = NULL;

	if (get32(sb + BLKHDR_MAGIC) != MAGIC_SUPER) {
		ref_report(fs, "no fsoracle superblock on %s (bad magic %08x)",
			   hw_spec(fs->dev), get32(sb + BLKHDR_MAGIC));
		return -EMEDIUMTYPE;
	}
	if (bs < 512 || bs > 65536 || (bs & (bs - 1))) {
		ref_report(fs, "superblock: bad block size %u", bs);
		return -EFSCORRUPTED;
	}
	if (meta_sectors_tear(fs->dev) && bs < REF_PMEM_MIN_BLOCKSIZE) {
		bool pm = hw_caps(fs->dev) & HW_CAP_BYTE_ADDR;

		ref_report(fs, "block size %u on %s%s%s: at least %u is needed, "
			   "for the torn-store copy of the header", bs,
			   pm ? "persistent memory " : "", hw_spec(fs->dev),
			   pm ? "" : ", whose writes tear in units smaller "
			   "than a sector", REF_PMEM_MIN_BLOCKSIZE);
		return -EINVAL;
	}
	fs->bs = bs;
	if (blk_verify(sb, blk_crc_span(fs, sb), MAGIC_SUPER, 0)) {
		ref_report(fs, "superblock: checksum mismatch");
		return -EFSCORRUPTED;
	}
	if (get32(sb + SB_VERSION) != REF_VERSION) {
		ref_report(fs, "superblock: format version %u, this engine reads %u",
			   get32(sb + SB_VERSION), REF_VERSION);
		return -EFSCORRUPTED;
	}
	fs->bshift = (uint32_t)__builtin_ctz(bs);
	fs->total = get64(sb + SB_TOTAL);
	fs->jstart = get64(sb + SB_JSTART);
	fs->jlen = get32(sb + SB_JLEN);
	fs->ninodes = get32(sb + SB_NINODES);
	fs->itab = get64(sb + SB_ITAB);
	fs->itablen = get32(sb + SB_ITABLEN);
	fs->maxrecs = get32(sb + SB_MAXRECS);
	fs->bmap = get64(sb + SB_BMAP);
	fs->bmaplen = get32(sb + SB_BMAPLEN);
	fs->maxext = get32(sb + SB_MAXEXT);
	fs->data = get64(sb + SB_DATA);
	fs->ipb = bs / INODE_SIZE - 1;
	if (fs->ipb == 0)
		fs->ipb = 1;
	bpb = (uint64_t)(bs - BM_HDR_SIZE) * 8;
	fs->bpb = bpb;
	devblocks = data_dev_bytes(fs->dev) / bs;

	if (fs->total > devblocks)
		why = hw_caps(fs->dev) & HW_CAP_ZONED ?
		      "filesystem larger than the device's conventional zones" :
		      "filesystem larger than the device";
	else if (fs->jstart != 2 || fs->jlen < 64 || fs->itab != 2 + (uint64_t)fs->jlen)
		why = "bad journal geometry";
	else if (fs->ninodes == 0 ||
		 fs->itablen != ((uint64_t)fs->ninodes + fs->ipb - 1) / fs->ipb)
		why = "bad inode table geometry";
	else if (fs->bmap != fs->itab + fs->itablen + rtbmaplen)
		why = "bad bitmap location";
	else if (fs->bmap >= fs->total ||
		 fs->bmaplen != bitmap_blocks(fs->total - fs->bmap, bpb))
		why = "bad bitmap size";
	else if (fs->data != fs->bmap + fs->bmaplen || fs->data + 16 > fs->total)
		why = "bad data region";
	else if (fs->maxrecs != 0 && fs->maxrecs < 4)
		why = "bad B+tree fan-out";
	else if (fs->maxext == 0 || fs->maxext > DEFAULT_MAX_EXTLEN)
		why = "bad maximum extent length";
	else if (get64(sb + SB_FEATURES) & ~FEAT_ALL)
		why = "unknown feature bits";
	if (why) {
		ref_report(fs, "superblock: %s", why);
		return -EFSCORRUPTED;
	}
	return check_rt(fs, sb, bpb);
}

static int mount_state(struct ref_fs *fs);
static int set_clean(struct ref_fs *fs, uint32_t clean);

/* What mkfs wrote and nothing changes after it: the geometry
 * check_super reads, and the feature bits. */
static const struct { uint16_t from, to; } sb_fixed[] = {
	{ SB_VERSION, SB_BMINIT },
	{ SB_FEATURES, SB_FEATURES + 8 },
	{ SB_RTBLOCKS, SB_RTBMINIT },
};

/*
 * The log may hold a newer image of the superblock, which the replay
 * has put in place; the geometry read from the home copy before it
 * (which everything since was built on) must be the logged copy's too.
 * If they differ, one of the two is damaged and which cannot be told,
 * so the mount fails before the replay writes anything home.  Without
 * this check, a damaged home copy that passed check_super
 * (a larger fan-out, say) was used until unmount and left trees the
 * logged copy's geometry calls overfull.
 */
int super_check_replayed(struct ref_fs *fs, const uint8_t *home)
{
	struct rbuf *b;
	int err = buf_read(fs, 0, MAGIC_SUPER, &b);

	if (err)
		return err;
	for (size_t i = 0; i < sizeof(sb_fixed) / sizeof(sb_fixed[0]); i++) {
		unsigned from = sb_fixed[i].from, to = sb_fixed[i].to;

		if (memcmp(b->data + from, home + from, to - from)) {
			ref_report(fs, "superblock: the copy in the log has "
				   "another geometry than the one in place "
				   "(bytes %u..%u)", from, to - 1);
			err = -EFSCORRUPTED;
			break;
		}
	}
	buf_put(fs, b);
	return err;
}

static void fs_free(struct ref_fs *fs)
{
	pcache_unmount(fs); /* dirty pages are lost: a cut, or written */
	da_unmount(fs);
	reflink_unmount(fs);
	zoned_unmount(fs);
	inode_unmount(fs);
	alloc_unmount(fs);
	bcache_destroy(fs);
	park_free(fs->zeroblk, fs->bs);
	park_free(fs->scratch, fs->bs);
	free(fs->copybuf);
	park_free(fs, sizeof(*fs));
}

int ref_mount(struct hw_dev *dev, const struct ref_mount_opts *opts,
	      struct ref_fs **out)
{
	/* the park's (base/park.h): a fuzz input mounts a few times */
	struct ref_fs *fs = park_zalloc(sizeof(*fs));
	uint8_t *sb = NULL, home[SB_END];
	size_t sbsize = 2 * HDR_SECTOR;
	int err;

	if (!fs)
		return -ENOMEM;
	fs->dev = dev;
	bcache_bt_store_init(fs);
	fs->rtdev = opts ? opts->rtdev : NULL;
	fs->rdonly = opts && (opts->flags & REF_MOUNT_RDONLY);
	fs->naive = opts ? opts->naive & REF_PATHS_ALL : 0;
	fs->fallback = opts ? opts->fallback & REF_PATHS_ALL : 0;
	fs->data_mode = opts ? opts->data_mode : REF_DATA_ORDERED;
	fs->delalloc = opts && (opts->flags & REF_MOUNT_DELALLOC);
	fs->compress = opts ? opts->compress : REF_COMPRESS_NONE;
	fs->zlevel = opts ? opts->compress_level : 0;
	fs->workers = opts && opts->workers <= REF_WORKERS_MAX ?
		      opts->workers : 0;
	fs->msg = opts ? opts->msg : NULL;
	fs->msg_arg = opts ? opts->msg_arg : NULL;
	if (fs->data_mode >= REF_DATA_MODES) {
		ref_report(fs, "unknown data mode %u", fs->data_mode);
		err = -EINVAL;
		goto fail;
	}
	if (fs->compress > REF_COMPRESS_ZSTD) {
		ref_report(fs, "unknown compression %u", fs->compress);
		err = -EINVAL;
		goto fail;
	}
	if (fs->compress && !compress_available()) {
		ref_report(fs, "compress=zstd: this build has no compression "
			   "library");
		err = -EOPNOTSUPP;
		goto fail;
	}
	if (hw_size(dev) < 4096) {
		ref_report(fs, "device %s is too small to hold a filesystem",
			   hw_spec(dev));
		err = -EMEDIUMTYPE;
		goto fail;
	}
	sb = park_alloc(sbsize);
	err = -ENOMEM;
	if (!sb)
		goto fail;
	err = hw_read(dev, 0, sb, sbsize);
	if (err)
		goto fail;
	/* torn where a cut tears sectors: the copy after it (devio.c) */
	hdr_repair(sb, HDR_SECTOR, 2 * HDR_SECTOR, MAGIC_SUPER, 0);
	err = check_super(fs, sb);
	if (err)
		goto fail;
	/* the whole block: bytes past the header sector must be zero */
	park_free(sb, sbsize);
	sbsize = fs->bs;
	sb = park_alloc(sbsize);
	err = -ENOMEM;
	if (!sb)
		goto fail;
	err = hw_read(dev, 0, sb, fs->bs);
	if (err)
		goto fail;
	hdr_repair(sb, blk_crc_span(fs, sb), fs->bs, MAGIC_SUPER, 0);
	if (blk_verify_full(sb, blk_crc_span(fs, sb), fs->bs, MAGIC_SUPER, 0)) {
		ref_report(fs, "superblock: bytes past its header sector are not zero");
		err = -EFSCORRUPTED;
		goto fail;
	}
	memcpy(home, sb, sizeof(home));
	park_free(sb, sbsize);
	sb = NULL;
	fs->zeroblk = park_zalloc(fs->bs);
	fs->scratch = park_alloc(fs->bs);
	err = -ENOMEM;
	if (!fs->zeroblk || !fs->scratch)
		goto fail;
	err = bcache_init(fs, opts ? opts->cache_blocks : 0);
	if (err)
		goto fail;
	err = journal_recover(fs, opts && (opts->flags & REF_MOUNT_NORECOVERY),
			      home);
	if (err)
		goto fail;
	err = alloc_mount(fs);
	if (err)
		goto fail;
	err = inode_mount(fs);
	if (err)
		goto fail;
	err = reflink_mount(fs); /* shared blocks: the tree roots */
	if (err)
		goto fail;
	if (fs->compress && fs->rl) {
		ref_report(fs, "compress= needs a filesystem made without reflink");
		err = -EINVAL;
		goto fail;
	}
	err = zoned_mount(fs); /* zone state from the device + rt bitmap */
	if (err)
		goto fail;
	/* pagecache: 0 = the default, REF_PAGECACHE_OFF = none; the
	 * fan-out shift: 0 = the default (PC_SHIFT) */
	if (opts && opts->pagecache_shift > PC_SHIFT) {
		ref_report(fs, "pagecache_shift=%u: the fan-out shift is 1..%u",
			   opts->pagecache_shift, PC_SHIFT);
		err = -EINVAL;
		goto fail;
	}
	err = pcache_mount(fs, !opts || !opts->pagecache ? PC_DEFAULT_PAGES :
			   opts->pagecache == REF_PAGECACHE_OFF ? 0 :
			   opts->pagecache, opts ? opts->pagecache_shift : 0);
	if (err)
		goto fail;
	if (fs->pc && opts && (opts->flags & REF_MOUNT_NOPAGEDATA))
		fs->pc->nodata = true;
	err = mount_state(fs);
	if (err)
		goto fail;
	*out = fs;
	return 0;
fail:
	park_free(sb, sbsize);
	fs_free(fs);
	return err;
}

/*
 * Set the superblock's clean flag (journaled like any change).  Only the
 * metadata of the running transaction, not file data, is lost at a cut.
 */
static int set_clean(struct ref_fs *fs, uint32_t clean)
{
	struct rbuf *b;
	int err = buf_read(fs, 0, MAGIC_SUPER, &b);

	if (err)
		return err;
	put32(b->data + SB_CLEAN, clean);
	buf_dirty(fs, b);
	buf_put(fs, b);
	return 0;
}

/*
 * After the log is replayed: was the image cleanly unmounted?  If not,
 * finish interrupted truncates and unlinks, and re-establish "bytes past
 * EOF in the EOF block are zero": an overwrite of the EOF block may have
 * reached the device while the size that covered it did not.  Then mark
 * the image in use until the next clean unmount.
 */
static int mount_state(struct ref_fs *fs)
{
	struct rbuf *b;
	uint32_t clean;
	int err = buf_read(fs, 0, MAGIC_SUPER, &b);

	if (err)
		return err;
	clean = get32(b->data + SB_CLEAN);
	buf_put(fs, b);
	if (clean > 1) {
		ref_report(fs, "superblock: bad clean flag %u", clean);
		return -EFSCORRUPTED;
	}
	fs->unclean = !clean;
	if (fs->rdonly)
		return 0;
	err = inode_finish_orphans(fs);
	if (!err) /* an exchange range a cut interrupted */
		err = exchange_recover(fs);
	if (!err) /* COW staging a cut left behind */
		err = reflink_recover(fs);
	if (!err) /* a reclaim a cut interrupted: the reserve zone */
		err = zoned_recover(fs);
	if (!err && fs->unclean)
		err = file_zero_eof_tails(fs);
	if (!err && clean)
		err = set_clean(fs, 0);
	if (!err)
		err = tx_commit(fs);
	return err;
}

int fs_enter(struct ref_fs *fs)
{
	if (fs->shutdown)
		return -EIO;
	if (!fs->calls++) {
		fs->meta_err = false;
		fs->call_dirtied = fs->dirtied;
	}
	return 0;
}

static void shut_down(struct ref_fs *fs, int err)
{
	fs->shutdown = err;
	ref_report(fs, "shut down: a metadata error (%s) in the middle of an "
		   "update; nothing more is written, and the next mount "
		   "recovers the last commit", ref_strerror(err));
}

/* What shut it down: the call's error when it is the device's or the
 * image's, else -EIO (a call may report damage and return -EINVAL). */
static int shutdown_cause(int64_t ret)
{
	return ret == -EFSCORRUPTED ? -EFSCORRUPTED : -EIO;
}

/* The outermost call ends: does it shut the filesystem down?  A read only
 * when it dirtied metadata on its way. */
static bool leave_shuts_down(struct ref_fs *fs, int64_t ret, bool read)
{
	if (--fs->calls || !fs->meta_err || fs->rdonly ||
	    (read && fs->dirtied == fs->call_dirtied))
		return false;
	shut_down(fs, shutdown_cause(ret));
	return true;
}

int64_t fs_leave(struct ref_fs *fs, int64_t ret)
{
	return leave_shuts_down(fs, ret, false) && ret >= 0 ? -EIO : ret;
}

int64_t fs_leave_read(struct ref_fs *fs, int64_t ret)
{
	(void)leave_shuts_down(fs, ret, true);
	return ret;
}

int ref_shutdown_error(const struct ref_fs *fs)
{
	return fs->shutdown;
}

int ref_unmount(struct ref_fs *fs)
{
	int err = fs->shutdown ? -EIO : 0;

	if (!fs->rdonly && !fs->shutdown) {
		err = pcache_writeback(fs, NULL);
		if (!err) /* unused COW preallocations */
			err = reflink_unmount_flush(fs);
		if (!err)
			err = set_clean(fs, 1);
		if (!err)
			err = tx_commit(fs);
		if (!err)
			err = journal_checkpoint(fs);
	}
	fs_free(fs);
	return err;
}

void ref_abandon(struct ref_fs *fs)
{
	fs_free(fs);
}

void ref_set_paths(struct ref_fs *fs, uint32_t naive, uint32_t fallback)
{
	fs->naive = naive & REF_PATHS_ALL;
	fs->fallback = fallback & REF_PATHS_ALL;
}

void ref_get_paths(const struct ref_fs *fs, uint32_t *naive,
		   uint32_t *fallback)
{
	if (naive)
		*naive = fs->naive;
	if (fallback)
		*fallback = fs->fallback;
}
