/*
 * format.c - block headers, checksums, mkfs, messages and error strings.
 *
 * Two checksum spans exist.  Ordinary metadata blocks are checksummed
 * whole: a torn in-place write is repaired by journal replay.  The
 * superblock and the journal header are "header sector" blocks: all their
 * fields live in the first 512 bytes and only those are checksummed, so a
 * sector-atomic device can never leave them half-written.
 */
#include "ref/ref_internal.h"

#include "base/zeros.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void blk_init(void *data, uint32_t magic, uint64_t blkno, uint64_t owner)
{
	uint8_t *p = data;

	put32(p + BLKHDR_MAGIC, magic);
	put32(p + BLKHDR_CRC, 0);
	put64(p + BLKHDR_BLKNO, blkno);
	put64(p + BLKHDR_OWNER, owner);
}

static uint32_t blk_crc(const void *data, size_t span)
{
	static const uint8_t zero[4];
	const uint8_t *p = data;
	uint32_t c = crc32c(0, p, BLKHDR_CRC);

	c = crc32c(c, zero, 4);
	return crc32c(c, p + BLKHDR_CRC + 4, span - BLKHDR_CRC - 4);
}

void blk_set_crc(void *data, size_t span)
{
	put32((uint8_t *)data + BLKHDR_CRC, blk_crc(data, span));
}

/* 0, or -EFSCORRUPTED when magic, self-address or checksum disagree. */
int blk_verify(const void *data, size_t span, uint32_t magic, uint64_t blkno)
{
	const uint8_t *p = data;

	if (get32(p + BLKHDR_MAGIC) != magic)
		return -EFSCORRUPTED;
	if (get64(p + BLKHDR_BLKNO) != blkno)
		return -EFSCORRUPTED;
	if (get32(p + BLKHDR_CRC) != blk_crc(data, span))
		return -EFSCORRUPTED;
	return 0;
}

/*
 * A header-sector block's bytes past the checksummed sector are zero,
 * except the sector right after it on persistent memory, where a copy of
 * the header is written first (its own stores can tear: devio.c) and may
 * itself be torn by a cut while the header is whole; checking the rest
 * makes a flipped byte anywhere in it detectable.
 */
int blk_verify_full(const void *data, size_t span, size_t bs, uint32_t magic,
		    uint64_t blkno)
{
	const uint8_t *p = data;
	size_t from = span;

	if (span < bs && 2 * span <= bs)
		from = 2 * span; /* the copy's sector */
	if (from < bs && !zeros_all(p + from, bs - from))
		return -EFSCORRUPTED;
	return blk_verify(data, span, magic, blkno);
}

int hdr_repair(void *data, size_t span, size_t bs, uint32_t magic,
	       uint64_t blkno)
{
	uint8_t *p = data;

	if (blk_verify(p, span, magic, blkno) == 0)
		return 0;
	if (span >= bs || 2 * span > bs ||
	    blk_verify(p + span, span, magic, blkno))
		return -EFSCORRUPTED;
	memcpy(p, p + span, span);
	return 0;
}

size_t blk_crc_span(const struct ref_fs *fs, const void *data)
{
	uint32_t magic = get32((const uint8_t *)data + BLKHDR_MAGIC);

	if (magic == MAGIC_SUPER || magic == MAGIC_JHDR)
		return HDR_SECTOR < fs->bs ? HDR_SECTOR : fs->bs;
	return fs->bs;
}

void ref_report(struct ref_fs *fs, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (fs)
		fs->meta_err = true; /* damage, or an update that cannot go on */
	if (fs && fs->msg)
		fs->msg(fs->msg_arg, line);
}

const char *ref_strerror(int err)
{
	switch (-err) {
	case 0:            return "success";
	case EFSCORRUPTED: return "filesystem corrupted";
	case ENOSPC:       return "no space left on device";
	case ENOENT:       return "no such file";
	case EEXIST:       return "file exists";
	case EINVAL:       return "invalid argument";
	case EIO:          return "input/output error";
	case EROFS:        return "read-only filesystem";
	case ENOMEM:       return "out of memory";
	case EFBIG:        return "file too large";
	case ENAMETOOLONG: return "file name too long";
	case EOPNOTSUPP:   return "operation not supported";
	case ENFILE:       return "inode table full";
	case EMEDIUMTYPE:  return "not an fsoracle image";
	case ENODEV:       return "realtime device missing";
	default:           return "unknown error";
	}
}

/* ---- mkfs ---- */

/*
 * Bitmap blocks for the n blocks after the bitmap's start: the fewest B
 * with B * bpb >= n - B (each bitmap block covers bpb data blocks and
 * takes one block itself), i.e. B = ceil(n / (bpb + 1)).
 */
uint64_t bitmap_blocks(uint64_t n, uint64_t bpb)
{
	return (n + bpb) / (bpb + 1);
}

struct layout {
	uint32_t bs, jlen, ninodes, itablen, bmaplen, maxrecs, maxext;
	uint64_t total, itab, bmap, data;
	uint32_t rtx, rtbmaplen;
	uint64_t rtblocks, rtextents, rtbmap;
};

/* err, with why (when given) saying what it is. */
static int layout_why(int err, char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int layout_why(int err, char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* -ENOSPC: the layout up to what, need blocks, is more than the device. */
static int too_small(const struct layout *l, const char *what, uint64_t need,
		     char *why, size_t whylen)
{
	return layout_why(-ENOSPC, why, whylen, "the filesystem needs %llu "
			  "blocks of %u bytes up to %s (a journal of %u blocks), "
			  "more than the device's %llu%s", (unsigned long long)need,
			  l->bs, what, l->jlen, (unsigned long long)l->total,
			  l->jlen > 64 ? ": a smaller journal (journal=N, at least "
			  "64) or larger device" : ": a larger device");
}

/*
 * The realtime device: whole rt extents of rtx blocks (rtx <= maxext, so
 * one rt extent always fits an extent record), one bitmap bit each.
 */
static int rt_layout(const struct ref_mkfs_opts *o, uint64_t bpb,
		     struct layout *l, char *why, size_t whylen)
{
	uint64_t n;

	l->rtx = 1;
	l->rtbmaplen = 0;
	l->rtblocks = l->rtextents = 0;
	if (!o || !o->rtdev)
		return o && o->rtextsize ? -EINVAL : 0;
	if (o->rtextsize % l->bs || o->rtextsize / l->bs > l->maxext)
		return -EINVAL;
	l->rtx = o->rtextsize ? o->rtextsize / l->bs : 1;
	l->rtextents = hw_size(o->rtdev) / l->bs / l->rtx;
	if (l->rtextents == 0)
		return layout_why(-ENOSPC, why, whylen, "the realtime device "
				  "(%llu bytes) holds no whole rt extent of %llu "
				  "bytes", (unsigned long long)hw_size(o->rtdev),
				  (unsigned long long)l->rtx * l->bs);
	l->rtblocks = l->rtextents * l->rtx;
	n = (l->rtextents + bpb - 1) / bpb;
	if (n > UINT32_MAX)
		return -EFBIG;
	l->rtbmaplen = (uint32_t)n;
	return 0;
}

static int mkfs_layout(struct hw_dev *dev, const struct ref_mkfs_opts *o,
		       struct layout *l, char *why, size_t whylen)
{
	uint32_t ipb;
	uint64_t bpb, itablen, n;
	int err;

	l->bs = o && o->blocksize ? o->blocksize : 4096;
	if (l->bs < 512 || l->bs > 65536 || (l->bs & (l->bs - 1)))
		return -EINVAL;
	/* rtextsize without, reflink with a realtime device; pmem blocks */
	if (o && ref_mkfs_check(o, dev, o->rtdev, NULL, 0))
		return -EINVAL;
	l->total = data_dev_bytes(dev) / l->bs;
	l->ninodes = o && o->inodes ? o->inodes : 1024;
	l->maxrecs = o ? o->btree_maxrecs : 0;
	if (l->maxrecs && l->maxrecs < 4)
		return -EINVAL;
	l->maxext = o && o->max_extlen ? o->max_extlen : DEFAULT_MAX_EXTLEN;
	if (l->maxext > DEFAULT_MAX_EXTLEN)
		return -EINVAL;
	if (o && o->reflink > 1)
		return -EINVAL;
	if (o && o->journal_blocks) {
		l->jlen = o->journal_blocks;
	} else {
		uint64_t j = l->total / 64;

		l->jlen = (uint32_t)(j < 256 ? 256 : j > 8192 ? 8192 : j);
	}
	if (l->jlen < 64)
		return layout_why(-EINVAL, why, whylen, "a journal of %u blocks: "
				  "it needs at least 64", l->jlen);
	ipb = l->bs / INODE_SIZE - 1;
	if (ipb == 0)
		ipb = 1; /* 512-byte blocks: one inode after the header */
	/* in 64 bits: near UINT32_MAX inodes the sum wraps to a tiny table */
	itablen = ((uint64_t)l->ninodes + ipb - 1) / ipb;
	l->itab = 2 + (uint64_t)l->jlen;
	if (itablen >= l->total)
		return too_small(l, "the inode table", itablen, why, whylen);
	l->itablen = (uint32_t)itablen;
	bpb = (uint64_t)(l->bs - BM_HDR_SIZE) * 8;
	err = rt_layout(o, bpb, l, why, whylen);
	if (err)
		return err;
	l->rtbmap = l->itab + l->itablen;
	l->bmap = l->rtbmap + l->rtbmaplen;
	if (l->bmap >= l->total)
		return too_small(l, l->rtbmaplen ? "the realtime bitmap" :
				 "the inode table", l->bmap + 1, why, whylen);
	/* SB_BMAPLEN is 32 bits: a larger bitmap wrapped, leaving most of
	 * a huge device untracked */
	n = bitmap_blocks(l->total - l->bmap, bpb);
	if (n > UINT32_MAX)
		return layout_why(-EFBIG, why, whylen, "the free-space bitmap of "
				  "%llu blocks of %u bytes would need more than "
				  "2^32 blocks: larger blocks (bs=N) or a smaller "
				  "device", (unsigned long long)(l->total - l->bmap),
				  l->bs);
	l->bmaplen = (uint32_t)n;
	l->data = l->bmap + l->bmaplen;
	if (l->data + 16 > l->total)
		return too_small(l, "16 data blocks", l->data + 16, why, whylen);
	return 0;
}

int ref_mkfs_fits(struct hw_dev *dev, const struct ref_mkfs_opts *opts,
		  char *why, size_t whylen)
{
	struct layout l;

	if (why && whylen)
		why[0] = 0;
	return mkfs_layout(dev, opts, &l, why, whylen);
}

int ref_mkfs(struct hw_dev *dev, const struct ref_mkfs_opts *opts)
{
	struct layout l;
	uint8_t *blk = NULL;
	int err;

	err = mkfs_layout(dev, opts, &l, NULL, 0);
	if (err)
		return err;
	if (opts && opts->rtdev) { /* zoned: check zones, start them empty */
		err = zoned_mkfs(opts->rtdev, l.bs, l.rtx);
		if (err)
			return err;
	}
	blk = calloc(1, l.bs);
	if (!blk)
		return -ENOMEM;

	/* Invalidate the superblock first, so a cut mkfs is never mountable. */
	err = hw_write(dev, 0, blk, l.bs, HW_META | HW_FUA);
	if (err)
		goto out;
	/* A zeroed log cannot replay anything left by an earlier image. */
	err = hw_zero_out(dev, 2 * (uint64_t)l.bs, (uint64_t)l.jlen * l.bs, HW_META);
	if (err)
		goto out;

	memset(blk, 0, l.bs);
	blk_init(blk, MAGIC_JHDR, 1, 0);
	put64(blk + JH_SEQ, 1);
	blk_set_crc(blk, l.bs < HDR_SECTOR ? l.bs : HDR_SECTOR);
	err = hw_write(dev, l.bs, blk, l.bs, HW_META);
	if (err)
		goto out;

	for (uint32_t i = 0; i < l.itablen; i++) {
		memset(blk, 0, l.bs);
		blk_init(blk, MAGIC_INODES, l.itab + i, 0);
		blk_set_crc(blk, l.bs);
		err = hw_write(dev, (l.itab + i) * l.bs, blk, l.bs, HW_META);
		if (err)
			goto out;
	}
	err = hw_flush(dev);
	if (err)
		goto out;

	memset(blk, 0, l.bs);
	blk_init(blk, MAGIC_SUPER, 0, 0);
	put32(blk + SB_VERSION, REF_VERSION);
	put32(blk + SB_BLOCKSIZE, l.bs);
	put64(blk + SB_TOTAL, l.total);
	put64(blk + SB_JSTART, 2);
	put32(blk + SB_JLEN, l.jlen);
	put32(blk + SB_NINODES, l.ninodes);
	put64(blk + SB_ITAB, l.itab);
	put32(blk + SB_ITABLEN, l.itablen);
	put32(blk + SB_MAXRECS, l.maxrecs);
	put64(blk + SB_BMAP, l.bmap);
	put32(blk + SB_BMAPLEN, l.bmaplen);
	put32(blk + SB_MAXEXT, l.maxext);
	put64(blk + SB_DATA, l.data);
	put32(blk + SB_BMINIT, 0);
	put64(blk + SB_FEATURES, (l.rtblocks ? FEAT_REALTIME : 0) |
	      (opts && opts->reflink ? FEAT_REFLINK : 0));
	put32(blk + SB_CLEAN, 1);
	if (l.rtblocks) { /* else all zero */
		put64(blk + SB_RTBLOCKS, l.rtblocks);
		put64(blk + SB_RTEXTENTS, l.rtextents);
		put64(blk + SB_RTBMAP, l.rtbmap);
		put32(blk + SB_RTBMAPLEN, l.rtbmaplen);
		put32(blk + SB_RTEXTSIZE, l.rtx);
	}
	blk_set_crc(blk, l.bs < HDR_SECTOR ? l.bs : HDR_SECTOR);
	err = hw_write(dev, 0, blk, l.bs, HW_META | HW_FUA);
out:
	free(blk);
	return err;
}

/* ---- counters ---- */

#define C(field) { #field, offsetof(struct ref_counters, field) }
#define CB(field) { #field, offsetof(struct ref_counters, bt) + \
			    offsetof(struct bt_stats, field) }
static const struct { const char *name; size_t off; } counter_tab[] = {
	CB(node_visits), CB(rec_inserts), CB(rec_deletes), CB(rec_updates),
	CB(splits), CB(merges), CB(node_allocs), CB(node_frees),
	C(bytes_zeroed), C(data_bytes_written), C(data_bytes_read),
	C(alloc_calls), C(extents_allocated), C(blocks_allocated),
	C(blocks_freed), C(tx_commits), C(tx_rolls),
	C(journal_blocks_written), C(checkpoints), C(bcache_lookups),
	C(bcache_misses), C(meta_blocks_written), C(recovered_txns),
	C(rt_extents_allocated), C(rt_extents_freed),
	C(zone_appends), C(zone_resets), C(reclaim_moves),
	C(rt_overwrites_out_of_place), C(meta_persists),
	C(forget_lookups), C(forgets), C(revokes), C(replay_revoked),
	C(data_blocks_logged),
	C(rt_truncate_fallbacks),
	C(pc_hits), C(pc_misses), C(pc_evictions), C(pc_shadows),
	C(pc_refaults), C(pc_pages_written), C(pc_entries_removed),
	C(pc_node_visits), C(pc_mark_clears), C(pc_lock_acquisitions),
	C(pc_fallbacks),
	C(cow_blocks_staged), C(cow_remaps), C(cow_record_inserts),
	C(cow_record_deletes), C(cow_record_updates), C(cow_intents),
	C(cow_tx_rolls), C(cow_fallbacks),
	C(delalloc_pages), C(delalloc_calls), C(async_chunks),
	C(compressed_extents), C(compress_fallbacks), C(compressed_expands),
	C(delalloc_direct),
};
#undef C
#undef CB

void ref_counters_foreach(const struct ref_counters *c, ref_counter_fn fn,
			  void *arg)
{
	for (size_t i = 0; i < sizeof(counter_tab) / sizeof(counter_tab[0]); i++) {
		uint64_t v;

		memcpy(&v, (const char *)c + counter_tab[i].off, sizeof(v));
		fn(arg, counter_tab[i].name, v);
	}
}

const struct ref_counters *ref_counters(const struct ref_fs *fs)
{
	return &fs->ctr;
}

void ref_counters_reset(struct ref_fs *fs)
{
	memset(&fs->ctr, 0, sizeof(fs->ctr));
}

uint32_t ref_blocksize(const struct ref_fs *fs) { return fs->bs; }
struct hw_dev *ref_device(const struct ref_fs *fs) { return fs->dev; }
struct hw_dev *ref_rtdevice(const struct ref_fs *fs) { return fs->rtdev; }
