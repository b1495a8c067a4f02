/*
 * zoned.c - the realtime device on zoned storage, as XFS does it.
 *
 * When the realtime device has sequential-write-required zones
 * (HW_CAP_ZONED), realtime data is only ever appended:
 *
 *   zone:  start            wp                     start+cap   start+size
 *          | live | dead |li | free (appendable)    | never written |
 *
 *   - every allocation is made at the write pointer of the one open zone
 *     and is written at once, with one zone append (HW zone append
 *     returns where the data landed; it must be where the allocator put
 *     it).  An allocation is capped at the device's append limit, at what
 *     the open zone has left below its capacity, and at 1 MiB;
 *   - an overwrite of realtime data never writes in place: the rt extents
 *     it touches are written anew at the write pointer (their unchanged
 *     blocks read and written back: read-modify-write) and remapped in
 *     the same transaction (bmap_unmap frees the old ones, bmap_map maps
 *     the new ones with the same written/unwritten state per block);
 *     zeroing written bytes (truncate's tail, punch and zero-range ends)
 *     is such a rewrite too.  fallocate's unwritten extents are appended
 *     as zeroes, so the write pointer never runs ahead of the data;
 *   - a freed rt extent below a write pointer is dead: free in the rt
 *     bitmap, but unallocatable until its zone is reset.  The audit
 *     accepts that, since the bitmap is the free-space truth and the
 *     write pointer only says what may be allocated;
 *   - reclaim: when the open zone is full and only the reserve zone is
 *     empty, the zone with the most dead space (whose live data fits in
 *     the room left) gives up its live rt extents: owners are found by
 *     scanning every realtime file's extent map (there is no reverse
 *     map), each rt extent is rewritten at the open zone and remapped, the
 *     moves are committed (in one transaction when the log can hold them,
 *     so a cut keeps all or none), and then the zone is reset.  One empty
 *     zone is kept in reserve for that: ordinary allocations never take
 *     the last one, so a reclaim always has somewhere to move live data;
 *   - one zone is open at a time: a zone is finished when it is full (if
 *     its capacity is not a whole number of rt extents, the device would
 *     not call it full on its own), so no open or active limit is ever
 *     reached by this engine;
 *   - conventional zones of the realtime device are left out: they are
 *     never allocated (random-write space there would need the in-place
 *     write path beside this one for no gain in the tests); the audit
 *     reports any allocation found in them.  Read-only and offline zones
 *     are never allocated either.
 *
 * In-memory zone state (write pointer, live rt extents per zone, the open
 * zone) is never stored: mount rebuilds it from report_zones (the write
 * pointers are the device's truth) and the rt bitmap (what committed
 * metadata references).  Blocks written past what committed metadata
 * references, by a transaction a crash lost, are dead.  A writable mount
 * resets every zone that holds no live data and finishes every partly
 * written zone but the one with the most room, which becomes the open
 * zone (when a torn append left its write pointer inside an rt extent,
 * that extent is padded with zeroes first, so the next append lands on
 * an rt extent boundary).  If a crash cut a reclaim short, no zone may be
 * empty: the mount finishes that reclaim (zoned_recover) to bring the
 * reserve back, into the open zone's room.
 *
 * Metadata stays on the data device.  The commit that maps appended data
 * flushes the realtime device first, in every data mode (data=writeback
 * too, whose other commits flush nothing): mount trusts the write
 * pointers, so no mapped rt extent may lie at or above one after a cut.
 */
#include "ref/ref_internal.h"

#include <stdlib.h>

#define NO_ZONE    UINT64_MAX
#define CHUNK_MAX  (1u << 20)   /* bytes in one allocation, at most      */
#define RESERVE    1            /* empty zones ordinary allocations leave */

enum zone_kind {
	ZK_SEQ = 0,   /* sequential, writable: ours to allocate             */
	ZK_CONV,      /* conventional: left out                             */
	ZK_UNUSABLE,  /* read-only or offline                               */
};

struct zone_info {
	uint64_t wp;     /* rt extents written from the zone's start        */
	uint64_t live;   /* rt extents allocated in the rt bitmap           */
	uint64_t above;  /* ... of them at or above the write pointer (audit) */
	uint8_t kind;    /* enum zone_kind                                  */
	uint32_t ragged; /* bytes from the device's write pointer, left inside
			    an rt extent by a torn append, to that extent's
			    end; 0 when it is on an rt extent boundary       */
};

struct zoned_state {
	struct zone_info *z;
	uint64_t nzones;
	uint64_t zext;        /* rt extents per zone (zone size)             */
	uint64_t usable;      /* rt extents below a zone's capacity          */
	uint64_t chunk;       /* rt extents one allocation may take          */
	uint64_t open;        /* the zone taking appends, or NO_ZONE         */
	uint64_t nempty;      /* empty ZK_SEQ zones                          */
	uint32_t xbytes;      /* bytes per rt extent                         */
	bool in_reclaim;
	const uint8_t *feed;  /* what the next allocation appends (NULL: 0s) */
	uint8_t *zeros;       /* chunk bytes of zeroes                       */
};

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/*
 * The zoned geometry the engine needs, for mkfs and mount: zones hold
 * whole rt extents of whole sectors, an rt extent fits one append and a
 * zone's capacity, and there are at least two sequential zones (one to
 * write, one in reserve for reclaim).  Returns 0 or -EINVAL with the
 * reason in *why.
 */
static int geometry_ok(const struct hw_dev *rtdev, uint32_t xbytes,
		       const char **why)
{
	const struct hw_geometry *g = &rtdev->geo;

	*why = NULL;
	if (g->zone_size % xbytes)
		*why = "the zone size is not a whole number of rt extents";
	else if (g->sector_size && xbytes % g->sector_size)
		*why = "an rt extent is not a whole number of the device's "
		       "sectors (its appends and the mount's padding are)";
	else if (g->max_append < xbytes)
		*why = "an rt extent is larger than the zone append limit";
	else if (g->nr_zones < (uint64_t)g->nr_conv + 1 + RESERVE)
		*why = "fewer than two sequential zones";
	return *why ? -EINVAL : 0;
}

static uint64_t zone_capacity(struct hw_dev *rtdev, uint64_t zone)
{
	struct hw_zone z;
	unsigned nr = 1;

	if (hw_report_zones(rtdev, zone, &z, &nr) || nr != 1)
		return 0;
	return z.capacity;
}

/*
 * mkfs on a zoned realtime device: check the geometry and reset every
 * sequential zone, so the new filesystem starts with empty zones.
 */
int zoned_mkfs(struct hw_dev *rtdev, uint32_t bs, uint32_t rtx)
{
	const char *why;
	int err;

	if (!(hw_caps(rtdev) & HW_CAP_ZONED))
		return 0;
	err = geometry_ok(rtdev, bs * rtx, &why);
	if (err)
		return err;
	if (zone_capacity(rtdev, rtdev->geo.nr_conv) < (uint64_t)bs * rtx)
		return -EINVAL;
	for (uint64_t i = rtdev->geo.nr_conv; i < rtdev->geo.nr_zones; i++) {
		struct hw_zone z;
		unsigned nr = 1;

		err = hw_report_zones(rtdev, i, &z, &nr);
		if (err)
			return err;
		if (z.cond == HW_ZC_READONLY || z.cond == HW_ZC_OFFLINE ||
		    z.cond == HW_ZC_EMPTY)
			continue;
		err = hw_zone_mgmt(rtdev, HW_ZONE_RESET, i);
		if (err)
			return err;
	}
	return 0;
}

/* ---- zone state ---- */

static uint64_t zone_of_ext(const struct zoned_state *zs, uint64_t ext)
{
	return ext / zs->zext;
}

static bool zone_empty(const struct zone_info *z)
{
	return z->kind == ZK_SEQ && z->wp == 0;
}

/* Count set bits [from, to) of a bitmap block's bits. */
static uint64_t count_bits(const uint8_t *bits, uint64_t from, uint64_t to)
{
	uint64_t n = 0;

	for (uint64_t i = from; i < to; i++)
		n += (bits[i >> 3] >> (i & 7)) & 1u;
	return n;
}

/* live (and above) from the rt bitmap: allocated rt extents per zone. */
static int count_live(struct ref_fs *fs, struct zoned_state *zs)
{
	for (uint32_t g = 0; g < fs->rt_bminit; g++) {
		uint64_t first = (uint64_t)g * fs->bpb;
		uint64_t end = min64(first + fs->bpb, fs->rtextents);
		struct rbuf *b;
		int err = buf_read(fs, fs->rtbmap + g, MAGIC_RTBITMAP, &b);

		if (err)
			return err;
		for (uint64_t e = first; e < end;) {
			uint64_t zone = zone_of_ext(zs, e);
			uint64_t stop = min64(end, (zone + 1) * zs->zext);

			uint64_t wp = zone * zs->zext + zs->z[zone].wp;
			uint64_t mid = wp < e ? e : wp < stop ? wp : stop;
			const uint8_t *bits = b->data + BM_HDR_SIZE;
			uint64_t above = count_bits(bits, mid - first, stop - first);

			zs->z[zone].live += above +
					    count_bits(bits, e - first, mid - first);
			zs->z[zone].above += above;
			e = stop;
		}
		buf_put(fs, b);
	}
	return 0;
}

static int zone_reset(struct ref_fs *fs, uint64_t zone)
{
	struct zoned_state *zs = fs->zoned;
	int err = hw_zone_mgmt(fs->rtdev, HW_ZONE_RESET, zone);

	if (err)
		return err;
	zs->z[zone].wp = 0;
	zs->nempty++;
	fs->ctr.zone_resets++;
	return 0;
}

/* The zone holds all it can: finish it unless the device already did. */
static int zone_full(struct ref_fs *fs, uint64_t zone)
{
	struct zoned_state *zs = fs->zoned;
	struct hw_zone z;
	unsigned nr = 1;
	int err = hw_report_zones(fs->rtdev, zone, &z, &nr);

	zs->z[zone].wp = zs->usable;
	if (zs->open == zone)
		zs->open = NO_ZONE;
	if (err)
		return err;
	if (z.cond == HW_ZC_FULL)
		return 0;
	return hw_zone_mgmt(fs->rtdev, HW_ZONE_FINISH, zone);
}

/*
 * Mount: build the zone table from report_zones and the rt bitmap, then
 * (writable mounts) reset zones without live data and keep one partly
 * written zone open, finishing the others.
 */
static int zones_load(struct ref_fs *fs, struct zoned_state *zs)
{
	struct hw_zone z;

	for (uint64_t i = 0; i < zs->nzones; i++) {
		unsigned nr = 1;
		int err = hw_report_zones(fs->rtdev, i, &z, &nr);

		if (err)
			return err;
		if (z.type == HW_ZONE_CONV) {
			zs->z[i].kind = ZK_CONV;
		} else if (z.cond == HW_ZC_READONLY || z.cond == HW_ZC_OFFLINE) {
			zs->z[i].kind = ZK_UNUSABLE;
		} else {
			/* a partly written rt extent at the top is dead too */
			uint64_t w = (z.wp - z.start + zs->xbytes - 1) / zs->xbytes;

			zs->z[i].kind = ZK_SEQ;
			zs->z[i].wp = z.cond == HW_ZC_FULL ? zs->usable :
				      min64(w, zs->usable);
			zs->z[i].ragged = z.cond == HW_ZC_FULL ||
					  w > zs->usable ? 0 :
					  (uint32_t)(w * zs->xbytes -
						     (z.wp - z.start));
		}
	}
	return 0;
}

/*
 * A torn append left the zone's write pointer inside an rt extent: append
 * zeroes to the extent's end (it is dead, as zones_load counted it), so
 * the zone takes rt extents again.
 */
static int zone_pad(struct ref_fs *fs, uint64_t zone)
{
	struct zoned_state *zs = fs->zoned;
	struct zone_info *z = &zs->z[zone];
	uint64_t where = 0, want = (zone * zs->zext + z->wp) * zs->xbytes;
	int err = hw_zone_append(fs->rtdev, zone, zs->zeros, z->ragged, 0,
				 &where);

	if (!err && where + z->ragged != want) {
		ref_report(fs, "zoned: zone %llu's padding landed at byte %llu, "
			   "expected %llu", (unsigned long long)zone,
			   (unsigned long long)where,
			   (unsigned long long)(want - z->ragged));
		err = -EIO;
	}
	if (err)
		return err;
	fs->ctr.zone_appends++;
	fs->ctr.bytes_zeroed += z->ragged;
	z->ragged = 0;
	return 0;
}

/*
 * A writable mount: reset every zone without live data, keep open the
 * partly written zone with the most room (padded to an rt extent
 * boundary when a torn append left it inside one), finish the others.
 * After a crash cut a reclaim short, the zone its moves went to is the
 * one with room; zoned_recover needs that room to finish the reclaim.
 */
static int zones_settle(struct ref_fs *fs, struct zoned_state *zs)
{
	int err = 0;

	for (uint64_t i = 0; i < zs->nzones; i++) {
		struct zone_info *z = &zs->z[i];

		if (z->kind == ZK_SEQ && z->wp && z->live && z->wp < zs->usable &&
		    (zs->open == NO_ZONE || z->wp < zs->z[zs->open].wp))
			zs->open = i;
	}
	for (uint64_t i = 0; i < zs->nzones && !err; i++) {
		struct zone_info *z = &zs->z[i];

		if (z->kind != ZK_SEQ || z->wp == 0 || i == zs->open)
			continue;
		if (z->live == 0)
			err = zone_reset(fs, i);
		else /* no zone stays active but the open one */
			err = zone_full(fs, i);
	}
	/* last: with the others closed, the append stays in the open limit */
	if (!err && zs->open != NO_ZONE && zs->z[zs->open].ragged)
		err = zone_pad(fs, zs->open);
	return err;
}

int zoned_mount(struct ref_fs *fs)
{
	struct zoned_state *zs;
	const char *why;
	uint64_t chunk;
	int err;

	if (!fs->rtdev || !(hw_caps(fs->rtdev) & HW_CAP_ZONED))
		return 0;
	zs = calloc(1, sizeof(*zs));
	if (!zs)
		return -ENOMEM;
	fs->zoned = zs;
	zs->xbytes = fs->bs * fs->rtx;
	err = geometry_ok(fs->rtdev, zs->xbytes, &why);
	if (err) {
		ref_report(fs, "zoned realtime device %s: %s",
			   hw_spec(fs->rtdev), why);
		return err;
	}
	zs->nzones = fs->rtdev->geo.nr_zones;
	zs->zext = fs->rtdev->geo.zone_size / zs->xbytes;
	zs->usable = zone_capacity(fs->rtdev, fs->rtdev->geo.nr_conv) /
		     zs->xbytes;
	if (zs->usable == 0 || zs->nzones * zs->zext != fs->rtextents) {
		ref_report(fs, "zoned realtime device %s: zones do not match the "
			   "filesystem's %llu rt extents", hw_spec(fs->rtdev),
			   (unsigned long long)fs->rtextents);
		return -EINVAL;
	}
	chunk = min64(fs->rtdev->geo.max_append, CHUNK_MAX) / zs->xbytes;
	zs->chunk = min64(chunk ? chunk : 1, zs->usable);
	zs->open = NO_ZONE;
	zs->z = calloc(zs->nzones, sizeof(*zs->z));
	zs->zeros = calloc(zs->chunk, zs->xbytes);
	if (!zs->z || !zs->zeros)
		return -ENOMEM;
	err = zones_load(fs, zs);
	if (!err)
		err = count_live(fs, zs);
	if (!err && !fs->rdonly)
		err = zones_settle(fs, zs);
	zs->nempty = 0;
	for (uint64_t i = 0; i < zs->nzones; i++)
		zs->nempty += zone_empty(&zs->z[i]);
	return err;
}

void zoned_unmount(struct ref_fs *fs)
{
	if (!fs->zoned)
		return;
	free(fs->zoned->z);
	free(fs->zoned->zeros);
	free(fs->zoned);
	fs->zoned = NULL;
}

/* ---- allocation ---- */

static int reclaim(struct ref_fs *fs);

/*
 * Make sure the open zone has room, opening an empty zone when it is
 * full (never the reserve, except for reclaim itself) and reclaiming
 * when only the reserve is left.
 */
static int open_zone_with_room(struct ref_fs *fs)
{
	struct zoned_state *zs = fs->zoned;

	for (;;) {
		int err;

		if (zs->open != NO_ZONE && zs->z[zs->open].wp < zs->usable)
			return 0;
		if (zs->open != NO_ZONE) {
			err = zone_full(fs, zs->open);
			if (err)
				return err;
		}
		if (zs->nempty > RESERVE || (zs->in_reclaim && zs->nempty)) {
			for (uint64_t i = 0; i < zs->nzones; i++) {
				if (zone_empty(&zs->z[i])) {
					zs->open = i;
					zs->nempty--;
					return 0;
				}
			}
			return -EFSCORRUPTED; /* nempty is wrong */
		}
		if (zs->in_reclaim)
			return -ENOSPC;
		err = reclaim(fs);
		if (err)
			return err;
	}
}

/*
 * rtalloc_blocks' first half on a zoned device: where the allocation of
 * up to *n rt extents must be (*goal, in rt blocks: the open zone's write
 * pointer) and how many it may take.
 */
int zoned_alloc_begin(struct ref_fs *fs, uint64_t *goal, uint64_t *n)
{
	struct zoned_state *zs = fs->zoned;
	const uint8_t *feed = zs->feed;
	struct zone_info *z;
	int err;

	err = open_zone_with_room(fs);
	zs->feed = feed; /* a reclaim in between used its own */
	if (err)
		return err;
	z = &zs->z[zs->open];
	*n = min64(min64(*n, zs->chunk), zs->usable - z->wp);
	*goal = (zs->open * zs->zext + z->wp) * fs->rtx;
	return 0;
}

/*
 * The second half: rt extents [at, at+n) were taken from the bitmap.
 * They must sit at the write pointer; append their data there (the
 * caller's feed, or zeroes) and move the pointer.  On failure the
 * extents are freed again and the zone is finished: whatever part of
 * the append reached the device is dead.
 */
int zoned_alloc_end(struct ref_fs *fs, uint64_t at, uint64_t n)
{
	struct zoned_state *zs = fs->zoned;
	uint64_t zone = zone_of_ext(zs, at), want, where = 0;
	struct zone_info *z = &zs->z[zone];
	const uint8_t *data = zs->feed ? zs->feed : zs->zeros;
	int err;

	want = zone * zs->zext + z->wp;
	zs->feed = NULL;
	z->live += n;
	if (zone != zs->open || at != want) {
		ref_report(fs, "zoned: rt extent %llu allocated, but the write "
			   "pointer is at rt extent %llu",
			   (unsigned long long)at, (unsigned long long)want);
		err = -EFSCORRUPTED;
		goto fail;
	}
	err = hw_zone_append(fs->rtdev, zone, data, n * zs->xbytes, 0, &where);
	if (!err && where != at * zs->xbytes) {
		ref_report(fs, "zoned: append landed at byte %llu, expected %llu",
			   (unsigned long long)where,
			   (unsigned long long)(at * zs->xbytes));
		err = -EIO;
	}
	if (err)
		goto fail;
	fs->ctr.zone_appends++;
	if (data == zs->zeros)
		fs->ctr.bytes_zeroed += n * zs->xbytes;
	else
		fs->ctr.data_bytes_written += n * zs->xbytes;
	z->wp += n;
	return 0;
fail:
	rtalloc_free(fs, at * fs->rtx, n * fs->rtx);
	if (zone == zs->open)
		zone_full(fs, zone);
	return err;
}

int zoned_append(struct ref_fs *fs, const uint8_t *data, uint64_t n,
		 uint64_t *start, uint64_t *got)
{
	struct zoned_state *zs = fs->zoned;
	int err;

	zs->feed = data;
	err = rtalloc_blocks(fs, 0, n, start, got);
	zs->feed = NULL;
	return err;
}

bool zoned_reclaiming(const struct ref_fs *fs)
{
	return fs->zoned && fs->zoned->in_reclaim;
}

uint64_t zoned_max_alloc(const struct ref_fs *fs)
{
	return fs->zoned ? fs->zoned->chunk * fs->rtx : fs->maxext;
}

/*
 * rt blocks new data may still be given: below the capacity of the
 * writable sequential zones, not live, less the reclaim reserve (dead
 * space is won back by reclaim).
 */
uint64_t zoned_free_blocks(const struct ref_fs *fs)
{
	const struct zoned_state *zs = fs->zoned;
	uint64_t room = 0, keep = RESERVE * zs->usable;

	for (uint64_t i = 0; i < zs->nzones; i++)
		if (zs->z[i].kind == ZK_SEQ && zs->z[i].live < zs->usable)
			room += zs->usable - zs->z[i].live;
	return room > keep ? (room - keep) * fs->rtx : 0;
}

/* rt extents [ext, ext+n) were freed: dead until their zone is reset. */
void zoned_freed(struct ref_fs *fs, uint64_t ext, uint64_t n)
{
	struct zoned_state *zs = fs->zoned;

	while (n) {
		uint64_t zone = zone_of_ext(zs, ext);
		uint64_t k = min64(n, (zone + 1) * zs->zext - ext);

		zs->z[zone].live -= k;
		ext += k;
		n -= k;
	}
}

/* ---- out-of-place rewrites ---- */

/*
 * What a rewrite lays over the old contents: file bytes [pos, end)
 * become src (NULL: zeroes).  A write makes every block it touches
 * written; zeroing keeps each block's state.
 */
struct overlay {
	uint64_t pos, end;
	const uint8_t *src;
	bool write;
};

#define ST_WRITTEN   0
#define ST_UNWRITTEN 1
#define ST_HOLE      2

/* Read rt blocks [blk, blk+n) into buf, unless n is 0. */
static int read_blocks(struct ref_fs *fs, uint64_t blk, uint64_t n, uint8_t *buf)
{
	if (n == 0)
		return 0;
	fs->ctr.data_bytes_read += n << fs->bshift;
	return hw_read(fs->rtdev, blk << fs->bshift, buf, n << fs->bshift);
}

/*
 * Read file blocks [fb, fb+n): contents (zeroes unless written) and
 * states.  Blocks a write covers whole [c0, c1) need no read.
 */
static int read_old(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		    uint64_t n, uint64_t c0, uint64_t c1, uint8_t *buf,
		    uint8_t *state)
{
	for (uint64_t i = 0; i < n;) {
		struct ref_extent e;
		uint64_t k, s, t, blk;
		uint8_t *p = buf + (i << fs->bshift);
		int err = bmap_lookup(fs, ip, fb + i, &e);

		if (err)
			return err;
		if (ext_compressed(&e))
			return compr_partial(fs, ip, e.fileoff, "rewriting");
		k = min64(n - i, e.fileoff + e.len - (fb + i));
		memset(state + i, e.state == 0 ? ST_WRITTEN :
		       e.state == BMAP_HOLE ? ST_HOLE : ST_UNWRITTEN, k);
		memset(p, 0, k << fs->bshift);
		if (e.state == 0) {
			/* [fb+i, s) and [t, fb+i+k) lie outside [c0, c1) */
			s = c0 > fb + i ? min64(c0, fb + i + k) : fb + i;
			t = c1 > s ? min64(c1, fb + i + k) : s;
			if (c0 >= c1)
				s = t = fb + i + k;
			blk = e.startblk + (fb + i - e.fileoff);
			err = read_blocks(fs, blk, s - (fb + i), p);
			if (!err)
				err = read_blocks(fs, blk + (t - (fb + i)),
						  fb + i + k - t,
						  p + ((t - (fb + i)) << fs->bshift));
			if (err)
				return err;
		}
		i += k;
	}
	return 0;
}

/* Lay ov over blocks [fb, fb+n) read into buf; fix the new states. */
static void apply_overlay(struct ref_fs *fs, const struct overlay *ov,
			  uint64_t fb, uint64_t n, uint8_t *buf, uint8_t *state)
{
	uint64_t lo = fb << fs->bshift, hi = (fb + n) << fs->bshift;
	uint64_t a = ov ? (ov->pos > lo ? ov->pos : lo) : hi;
	uint64_t b = ov ? min64(ov->end, hi) : hi;

	if (a < b) {
		if (ov->src)
			memcpy(buf + (a - lo), ov->src + (a - ov->pos), b - a);
		else
			memset(buf + (a - lo), 0, b - a);
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t bl = (fb + i) << fs->bshift;
		bool touched = a < b && bl < b && bl + fs->bs > a;

		if (touched && ov->write)
			state[i] = ST_WRITTEN;
		else if (state[i] == ST_HOLE)
			state[i] = ST_UNWRITTEN; /* padding of a new rt extent */
	}
}

/*
 * A step may commit inside bmap_unmap (it rolls between rt extents when
 * the transaction is large or busy blocks crowd the data device's free
 * space; freed rt extents never do here, see alloc_busy_pressure), which
 * would leave the range unmapped if a crash followed.  So a step starts
 * with the running transaction committed whenever what it could add
 * might reach the roll limit, and is sized so that the blocks it dirties
 * cannot trigger a roll on their own: about STEP_BLOCKS for the B+tree
 * paths, bitmaps and inode, plus two per rt extent.  (A tree so deep
 * that one rt extent alone fills a quarter of the log could still roll;
 * the state committed then is consistent, the range a hole, as a crash
 * in the middle of a punch would leave it.)  Nothing else commits, and a
 * zone reclaim keeps its transaction whole (tx_whole: the limit is most
 * of the log, the steps a quarter as long), so its moves are committed
 * all at once unless they could overflow the log: a cut keeps all of
 * them or none.
 */
#define STEP_BLOCKS(ip) (2 * (uint64_t)(ip)->root.levels + 6)

static int step_guard(struct ref_fs *fs, struct ref_inode *ip, uint64_t *n)
{
	uint64_t limit = tx_roll_limit(fs), fixed = STEP_BLOCKS(ip);
	uint64_t cap = fixed + 2 < limit ? (limit - fixed) / 2 : 1;
	bool meta;
	int err;

	if (fs->tx_whole) /* small steps, so that many fit before a roll */
		cap = cap / 4 ? cap / 4 : 1;
	*n = min64(*n, cap);
	meta = (fs->busy.units + fixed) * 4 > fs->free_blocks;
	if (fs->ntx + fixed + 2 * *n < limit && !meta)
		return 0;
	if (!fs->ntx && !alloc_has_busy(fs))
		return 0;
	err = tx_commit(fs);
	if (!err && meta && alloc_has_busy(fs))
		err = journal_checkpoint(fs);
	return err;
}

/* Map new blocks [fb, fb+n) at rt block blk, runs of equal state. */
static int map_states(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		      uint64_t blk, uint64_t n, const uint8_t *state)
{
	for (uint64_t i = 0; i < n;) {
		uint64_t k = 1;
		struct ref_extent e;
		int err;

		while (i + k < n && state[i + k] == state[i])
			k++;
		e = (struct ref_extent){ fb + i, blk + i, k,
					 state[i] == ST_WRITTEN ? 0 : REF_EXT_UNWRITTEN };
		err = bmap_map(fs, ip, &e);
		if (err)
			return err;
		i += k;
	}
	return 0;
}

/*
 * One step of a rewrite: whole rt extents from file block fb (aligned),
 * up to want blocks, written anew at the write pointer with ov laid
 * over them, and remapped in the running transaction.  *done is how many
 * blocks moved.
 *
 *   before:  file  | A | B | C |          rt dev  ..|A|B|C|......|
 *   after:   file  | A'| B'| C'|          rt dev  ..|x|x|x|..|A'B'C'|
 *                                                   dead     at the wp
 */
static int rewrite_step(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
			uint64_t want, const struct overlay *ov, uint64_t *done)
{
	struct zoned_state *zs = fs->zoned;
	uint64_t n = min64(want / fs->rtx, zs->chunk), start, len, mapped = 0;
	uint64_t c0, c1;
	uint8_t *buf, *state;
	int err;

	if (fb % fs->rtx || n == 0)
		return -EINVAL;
	err = step_guard(fs, ip, &n);
	if (err)
		return err;
	want = n * fs->rtx;
	buf = malloc(want << fs->bshift);
	state = malloc(want);
	err = -ENOMEM;
	if (!buf || !state)
		goto out;
	c0 = c1 = 0;
	if (ov && ov->src) { /* blocks the write covers whole */
		c0 = fs_blocks_roundup(fs, ov->pos);
		c1 = ov->end >> fs->bshift;
	}
	err = read_old(fs, ip, fb, want, c0, c1, buf, state);
	if (err)
		goto out;
	for (uint64_t i = 0; i < want; i += fs->rtx)
		mapped += state[i] != ST_HOLE; /* holes are whole rt extents */
	apply_overlay(fs, ov, fb, want, buf, state);
	zs->feed = buf;
	err = rtalloc_blocks(fs, 0, want, &start, &len);
	if (err == -ENOSPC && ov && alloc_has_busy(fs)) {
		/* dead blocks freed in the running transaction keep their
		 * zones from reclaim until it commits (this step has changed
		 * nothing yet): commit, then try once more */
		zs->feed = NULL;
		err = tx_commit(fs);
		if (!err && alloc_has_busy(fs))
			err = journal_checkpoint(fs);
		zs->feed = buf;
		if (!err)
			err = rtalloc_blocks(fs, 0, want, &start, &len);
	}
	zs->feed = NULL;
	if (err)
		goto out;
	err = bmap_unmap(fs, ip, fb, len, true);
	if (!err)
		err = map_states(fs, ip, fb, start, len, state);
	if (err)
		goto out;
	*done = len;
	if (ov)
		fs->ctr.rt_overwrites_out_of_place +=
			min64(mapped, len / fs->rtx);
	else
		fs->ctr.reclaim_moves += len;
out:
	free(buf);
	free(state);
	return err;
}

/* ---- the file operations ---- */

int64_t zoned_pwrite(struct ref_fs *fs, struct ref_inode *ip, const void *buf,
		     uint64_t len, uint64_t off)
{
	struct overlay ov = { off, off + len, buf, true };
	uint64_t pos = off, end = off + len;
	int err = 0;

	while (pos < end) {
		uint64_t fb = round_down(pos >> fs->bshift, fs->rtx);
		uint64_t last = round_up(((end - 1) >> fs->bshift) + 1, fs->rtx);
		uint64_t done = 0;

		err = rewrite_step(fs, ip, fb, last - fb, &ov, &done);
		if (err)
			break;
		pos = min64(end, (fb + done) << fs->bshift);
		if (pos > ip->size)
			ip->size = pos;
		err = inode_log(fs, ip);
		if (!err)
			err = tx_maybe_roll(fs);
		if (err)
			break;
	}
	if (pos > off)
		return (int64_t)(pos - off);
	return err;
}

/* 1 when some block of [fb, fb+n) is written. */
static int any_written(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		       uint64_t n, bool *yes)
{
	*yes = false;
	for (uint64_t i = 0; i < n && !*yes;) {
		struct ref_extent e;
		int err = bmap_lookup(fs, ip, fb + i, &e);

		if (err)
			return err;
		*yes = e.state == 0;
		i += min64(n - i, e.fileoff + e.len - (fb + i));
	}
	return 0;
}

/*
 * Zero the written bytes of [from, to): every rt extent holding some is
 * rewritten with them zeroed (states unchanged); the others are left be.
 */
int zoned_zero_written(struct ref_fs *fs, struct ref_inode *ip, uint64_t from,
		       uint64_t to, uint64_t *reached)
{
	struct overlay ov = { from, to, NULL, false };
	uint64_t fb, last, at = from;

	if (!reached)
		reached = &at;
	*reached = from;
	if (from >= to)
		return 0;
	fb = round_down(from >> fs->bshift, fs->rtx);
	last = round_up(((to - 1) >> fs->bshift) + 1, fs->rtx);
	while (fb < last) {
		uint64_t done = fs->rtx;
		bool w;
		int err = any_written(fs, ip, fb, fs->rtx, &w);

		if (!err && w)
			err = rewrite_step(fs, ip, fb, fs->rtx, &ov, &done);
		if (!err && w)
			err = inode_log(fs, ip);
		if (err)
			return err;
		fb += done;
		*reached = min64(to, fb << fs->bshift > from ? fb << fs->bshift : from);
	}
	return 0;
}

/* ---- reclaim ---- */

/* A run of a file's blocks living in the victim zone (or, with state
 * set, one compressed extent, moved whole). */
struct move { uint64_t ino, fb, len; uint32_t state; };

struct victim_scan {
	struct ref_fs *fs;
	uint64_t ino;
	uint64_t b0, b1;          /* the victim's rt blocks */
	struct move *v;
	size_t n, cap;
	int err;
};

static int scan_extent(void *arg, const struct ref_extent *e)
{
	struct victim_scan *s = arg;
	uint64_t a = e->startblk > s->b0 ? e->startblk : s->b0;
	uint64_t b = min64(e->startblk + ext_plen(e), s->b1);
	uint64_t fb;

	if (a >= b)
		return 0;
	fb = e->fileoff + (a - e->startblk);
	if (ext_compressed(e))
		fb = e->fileoff;
	if (!ext_compressed(e) && s->n && s->v[s->n - 1].ino == s->ino &&
	    !s->v[s->n - 1].state &&
	    s->v[s->n - 1].fb + s->v[s->n - 1].len == fb) {
		s->v[s->n - 1].len += b - a;
		return 0;
	}
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		struct move *nv = realloc(s->v, ncap * sizeof(*nv));

		if (!nv) {
			s->err = -ENOMEM;
			return 1;
		}
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = ext_compressed(e) ?
		(struct move){ s->ino, fb, e->len, e->state } :
		(struct move){ s->ino, fb, b - a, 0 };
	return 0;
}

/* Move compressed extent [fb, fb+len) of ip whole: read, append, remap. */
static int move_compressed(struct ref_fs *fs, struct ref_inode *ip,
			   uint64_t fb)
{
	struct ref_extent e;
	uint64_t plen, start, got;
	uint8_t *buf;
	int err = bmap_lookup(fs, ip, fb, &e);

	if (err || !ext_compressed(&e))
		return err ? err : -EFSCORRUPTED;
	plen = ext_plen(&e);
	err = step_guard(fs, ip, &plen);
	if (err)
		return err;
	plen = ext_plen(&e);
	buf = malloc(plen << fs->bshift);
	if (!buf)
		return -ENOMEM;
	err = read_blocks(fs, e.startblk, plen, buf);
	/* one append, whole: when the open zone's tail is too short, what
	 * it took is dead and the next zone is tried (pick_victim left the
	 * room for that) */
	for (int tries = 0; !err && tries < 2; tries++) {
		err = zoned_append(fs, buf, plen, &start, &got);
		if (!err && got == plen)
			break;
		if (!err)
			err = rtalloc_free(fs, start, got);
		if (!err && tries)
			err = -ENOSPC;
	}
	free(buf);
	if (!err)
		err = bmap_unmap_step(fs, ip, e.fileoff, e.len);
	if (!err) {
		e.startblk = start;
		err = bmap_map(fs, ip, &e);
	}
	if (!err)
		fs->ctr.reclaim_moves += plen;
	return err;
}

/* Every realtime file's blocks in zone `zone`, by scanning extent maps. */
static int find_owners(struct ref_fs *fs, uint64_t zone, struct victim_scan *s)
{
	struct zoned_state *zs = fs->zoned;

	*s = (struct victim_scan){ .fs = fs,
				   .b0 = zone * zs->zext * fs->rtx,
				   .b1 = (zone + 1) * zs->zext * fs->rtx };
	for (uint32_t i = 0; i < fs->ninodes; i++) {
		struct ref_inode *ip = &fs->inodes[i];
		int err;

		if (ip->type != ITYPE_FILE || !inode_is_rt(ip))
			continue;
		s->ino = ip->ino;
		err = ref_bmap(fs, ip->ino, scan_extent, s);
		if (!err)
			err = s->err;
		if (err)
			return err;
	}
	return 0;
}

/*
 * The victim: the zone with the most dead space whose live data fits in
 * the room the open zone and the empty zones have left.  A compressed
 * extent moves whole, so when the moves go on into an empty zone, the
 * open zone's tail counts less the longest one: that much of it may go
 * dead when the next does not fit.  Live data that fits in the open
 * zone's tail alone never changes zones and needs no such margin (after
 * a crash cut a reclaim short, the open zone may be the only room left).
 */
static uint64_t pick_victim(const struct ref_fs *fs,
			    const struct zoned_state *zs)
{
	uint64_t best = NO_ZONE, tail = 0, room;
	uint64_t whole = round_up(DA_PIECE_BYTES >> fs->bshift, fs->rtx) /
			 fs->rtx;

	if (zs->open != NO_ZONE)
		tail = zs->usable - zs->z[zs->open].wp;
	room = zs->nempty * zs->usable + (tail > whole ? tail - whole : 0);
	if (room < tail)
		room = tail;
	for (uint64_t i = 0; i < zs->nzones; i++) {
		const struct zone_info *z = &zs->z[i];

		if (z->kind != ZK_SEQ || i == zs->open || z->wp <= z->live ||
		    z->live > room)
			continue;
		if (best == NO_ZONE ||
		    z->wp - z->live > zs->z[best].wp - zs->z[best].live)
			best = i;
	}
	return best;
}

/* Move every live rt extent out of zone, commit, reset it. */
static int reclaim_zone(struct ref_fs *fs, uint64_t zone)
{
	struct zoned_state *zs = fs->zoned;
	struct victim_scan s;
	int err = find_owners(fs, zone, &s);

	for (size_t k = 0; !err && k < s.n; k++) {
		struct ref_inode *ip;
		uint64_t fb = s.v[k].fb, end = fb + s.v[k].len;

		err = inode_get(fs, s.v[k].ino, &ip);
		if (!err && s.v[k].state) {
			err = move_compressed(fs, ip, fb);
			if (!err)
				err = inode_log(fs, ip);
			continue;
		}
		while (!err && fb < end) {
			uint64_t done = 0;

			err = rewrite_step(fs, ip, fb, end - fb, NULL, &done);
			if (!err)
				err = inode_log(fs, ip);
			fb += done;
		}
	}
	free(s.v);
	/* The frees must be durable before the old copies go. */
	if (!err)
		err = tx_commit(fs);
	if (!err && alloc_has_busy(fs))
		err = journal_checkpoint(fs);
	if (!err && zs->z[zone].live) {
		ref_report(fs, "zoned: zone %llu still holds %llu allocated rt "
			   "extents that no file maps",
			   (unsigned long long)zone,
			   (unsigned long long)zs->z[zone].live);
		err = -EFSCORRUPTED;
	}
	return err ? err : zone_reset(fs, zone);
}

static int reclaim(struct ref_fs *fs)
{
	struct zoned_state *zs = fs->zoned;
	uint64_t victim = pick_victim(fs, zs);
	int err;

	if (victim == NO_ZONE)
		return -ENOSPC;
	err = tx_begin_whole(fs);
	if (err)
		return err;
	zs->in_reclaim = true;
	err = reclaim_zone(fs, victim);
	zs->in_reclaim = false;
	fs->tx_whole = false;
	return err;
}

/* rt extents appends can take without a reclaim. */
static uint64_t room_without_reclaim(const struct zoned_state *zs)
{
	uint64_t tail = 0;

	if (zs->open != NO_ZONE)
		tail = zs->usable - zs->z[zs->open].wp;
	return tail + (zs->nempty > RESERVE ? zs->nempty - RESERVE : 0) *
		      zs->usable;
}

int zoned_make_room(struct ref_fs *fs, uint64_t n)
{
	struct zoned_state *zs = fs->zoned;
	uint64_t want = (n + fs->rtx - 1) / fs->rtx;

	/* each reclaim wins back its victim's dead space (the victim with
	 * the most); the bound only guards against a reclaim that wins
	 * nothing */
	for (uint64_t i = 0; i <= zs->nzones; i++) {
		uint64_t had = room_without_reclaim(zs);
		int err;

		if (had >= want)
			return 0;
		err = reclaim(fs);
		if (err)
			return err;
		if (room_without_reclaim(zs) <= had)
			break;
	}
	return room_without_reclaim(zs) >= want ? 0 : -ENOSPC;
}

/*
 * A writable mount's last step on a zoned realtime device: bring the
 * reserve back.  A reclaim moves its victim's live data into the open
 * zone and then the reserve, commits, and resets the victim.  When its
 * moves could overflow the log, step_guard commits them in steps, and a
 * crash may keep some of them and lose the reset:
 *
 *   before the reclaim       after the crash and mount
 *   V  |live+dead    |full   V  |live'+dead   |full   (live' < live)
 *   R  |             |empty  R  |moved|room   |open
 *
 * No zone is empty then.  Once the open zone R fills, a reclaim has
 * nowhere to move live data, and every dead rt extent stays dead while
 * statfs counts it as room.  Finish the interrupted reclaim now, while
 * R still has room: V's live data left, or a zone whose live data fits
 * there, moves into R, and the zone it leaves is reset.
 */
int zoned_recover(struct ref_fs *fs)
{
	struct zoned_state *zs = fs->zoned;

	while (zs && !fs->rdonly && zs->nempty < RESERVE) {
		int err;

		if (pick_victim(fs, zs) == NO_ZONE)
			return 0; /* no dead space, or none that fits */
		err = reclaim(fs);
		if (err)
			return err;
	}
	return 0;
}

/* ---- the audit ---- */

/*
 * Recount what mount would rebuild and compare: live rt extents per zone
 * from the rt bitmap, write pointers from the device.  Allocated rt
 * extents must lie below the write pointer of a writable sequential
 * zone (or in a read-only one), never in a conventional zone.
 */
int zoned_check(struct ref_fs *fs)
{
	struct zoned_state *zs = fs->zoned, fresh = *zs;
	int err, bad = 0;

	fresh.z = calloc(zs->nzones, sizeof(*fresh.z));
	if (!fresh.z)
		return -ENOMEM;
	err = zones_load(fs, &fresh);
	if (!err)
		err = count_live(fs, &fresh);
	for (uint64_t i = 0; !err && i < zs->nzones; i++) {
		const struct zone_info *f = &fresh.z[i], *m = &zs->z[i];
		const char *why = NULL;

		if (f->kind == ZK_CONV && f->live)
			why = "rt extents allocated in a conventional zone";
		else if (f->kind == ZK_SEQ && f->above)
			why = "rt extents allocated at or above the write pointer";
		else if (f->live != m->live)
			why = "in-core live count differs from the rt bitmap";
		else if (f->kind == ZK_SEQ && f->wp != m->wp)
			why = "in-core write pointer differs from the device's";
		if (why) {
			ref_report(fs, "zone %llu: %s (bitmap %llu, in-core %llu "
				   "live; write pointer %llu, in-core %llu)",
				   (unsigned long long)i, why,
				   (unsigned long long)f->live,
				   (unsigned long long)m->live,
				   (unsigned long long)f->wp,
				   (unsigned long long)m->wp);
			bad = 1;
		}
	}
	free(fresh.z);
	if (err)
		return err;
	return bad ? -EFSCORRUPTED : 0;
}
