/*
 * zone_model.c - the rules of a zoned device (ZBC/ZAC, NVMe ZNS) over a
 * plain byte store, for zoned:mem and zoned:file (zoned.c builds the
 * store and keeps the state of a file across runs).
 *
 * Layout: nr_conv conventional zones first, then sequential-write-
 * required zones, all zone_size bytes; a sequential zone takes writes
 * only at its write pointer and only up to its capacity:
 *
 *   start                  wp              start+cap       start+size
 *     | written (readable) | reads as zeros |  never writable  |
 *
 * Conditions and what moves a zone between them (null_blk's rules, which
 * follow the standards where they are specific):
 *
 *   EMPTY --write--> IMP_OPEN --write to capacity--> FULL
 *   EMPTY/IMP_OPEN/CLOSED --open--> EXP_OPEN
 *   IMP_OPEN/EXP_OPEN --close--> CLOSED (EMPTY if nothing was written)
 *   CLOSED --write--> IMP_OPEN;   any of them --finish--> FULL
 *   any of them --reset--> EMPTY; READONLY and OFFLINE never change
 *
 * Open zones are IMP_OPEN + EXP_OPEN, active zones open + CLOSED.  A zone
 * that must open (a write to an EMPTY or CLOSED zone, an explicit open,
 * a finish of an EMPTY or CLOSED zone) needs an active slot if it was
 * EMPTY, then an open slot; when the open slots are taken, the oldest
 * implicitly open zone is closed to make room, and if there is none the
 * command fails.  As in null_blk, an implicitly open zone is closed only
 * while an active slot is free, even for a CLOSED zone that reopens
 * (which needs none); at the active limit that command fails.
 *
 * Errors, as the kernel returns them for null_blk:
 *   -EIO     a write (or append) not at the write pointer, past the
 *            capacity, into a FULL, READONLY or OFFLINE zone, or over
 *            the open / active limits; an append to a conventional zone;
 *            zone management of a conventional, READONLY or OFFLINE zone;
 *            open or close of a FULL zone, close of an EMPTY one; a read
 *            of an OFFLINE zone.  (The block layer's own codes for the
 *            two limits, -ETOOMANYREFS and -EOVERFLOW, are folded into
 *            -EIO as hw.h promises.)
 *   -EINVAL  a write into a sequential zone whose offset or length is
 *            not a multiple of 512 (direct I/O's rule); an append over
 *            max_append (checked in hw.c; the block layer says -EIO).
 * Writes that cross zones are split per zone, as the block layer splits
 * bios, and stop at the first piece that fails.
 *
 * Invariant: the store below a write pointer holds what was written
 * there; above it, it may hold anything (a cut or a killed process can
 * leave old bytes), so reads above it are zero-filled and a finish
 * zeroes [wp, capacity) before it moves the pointer.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZM_SECTOR 512u
#define ZM_APPEND_CEIL (UINT32_MAX / ZM_SECTOR * ZM_SECTOR)

struct zoned_dev {
	struct hw_dev dev;
	struct hw_dev *store;
	struct hw_zone_cfg cfg;
	struct hw_zone_state *st;   /* per zone: what a power cycle keeps   */
	uint64_t *opened;           /* when each zone was implicitly opened */
	uint8_t *dirty;             /* st[i] changed since the last save    */
	uint8_t *one;               /* all zero: a mask for saving one zone */
	uint64_t ndirty;
	uint64_t nr_zones;
	uint32_t nr_imp, nr_exp, nr_closed;
	uint64_t clock;
	hw_zone_save_fn save;
	void (*release)(void *arg);
	void *arg;
	char what[160];
};

static const struct hw_ops zoned_ops;

static struct zoned_dev *to_zd(struct hw_dev *dev)
{
	return (struct zoned_dev *)dev;
}

static uint64_t zstart(const struct zoned_dev *zd, uint64_t i)
{
	return i * zd->cfg.zone_size;
}

static uint64_t zend(const struct zoned_dev *zd, uint64_t i)
{
	return zstart(zd, i) + zd->cfg.capacity;
}

static bool is_conv(const struct zoned_dev *zd, uint64_t i)
{
	return i < zd->cfg.nr_conv;
}

static uint32_t *cond_counter(struct zoned_dev *zd, uint8_t cond)
{
	switch (cond) {
	case HW_ZC_IMP_OPEN: return &zd->nr_imp;
	case HW_ZC_EXP_OPEN: return &zd->nr_exp;
	case HW_ZC_CLOSED:   return &zd->nr_closed;
	}
	return NULL;
}

static void mark_dirty(struct zoned_dev *zd, uint64_t i)
{
	if (!zd->dirty[i]) {
		zd->dirty[i] = 1;
		zd->ndirty++;
	}
}

/* Every change of condition goes through here, to keep the counts. */
static void set_cond(struct zoned_dev *zd, uint64_t i, uint8_t cond)
{
	uint32_t *c = cond_counter(zd, zd->st[i].cond);

	if (c)
		(*c)--;
	c = cond_counter(zd, cond);
	if (c)
		(*c)++;
	if (cond == HW_ZC_IMP_OPEN)
		zd->opened[i] = ++zd->clock;
	zd->st[i].cond = cond;
	mark_dirty(zd, i);
}

/* Close an open zone: CLOSED, or EMPTY if nothing was written. */
static void close_zone(struct zoned_dev *zd, uint64_t i)
{
	set_cond(zd, i, zd->st[i].wp > zstart(zd, i) ? HW_ZC_CLOSED
						      : HW_ZC_EMPTY);
}

/* Make every changed zone's state durable (the store is synced). */
static int save(struct zoned_dev *zd)
{
	int rc;

	if (!zd->save || zd->ndirty == 0)
		return 0;
	rc = zd->save(zd->arg, zd->st, zd->dirty, zd->nr_zones);
	if (rc)
		return rc;
	memset(zd->dirty, 0, zd->nr_zones);
	zd->ndirty = 0;
	return 0;
}

/*
 * Make zone i's state durable, and only its: other zones may hold
 * writes the store has not synced, whose write pointers must not
 * become durable before their data.
 */
static int save_zone(struct zoned_dev *zd, uint64_t i)
{
	int rc;

	if (!zd->save || !zd->dirty[i])
		return 0;
	zd->one[i] = 1;
	rc = zd->save(zd->arg, zd->st, zd->one, zd->nr_zones);
	zd->one[i] = 0;
	if (rc)
		return rc;
	zd->dirty[i] = 0;
	zd->ndirty--;
	return 0;
}

/*
 * Zone i (EMPTY or CLOSED) is about to open: find it an active slot
 * and an open slot, closing the oldest implicitly open zone if needed.
 */
static int take_open_slot(struct zoned_dev *zd, uint64_t i)
{
	const struct hw_zone_cfg *c = &zd->cfg;
	uint64_t oldest = UINT64_MAX;

	if (zd->st[i].cond == HW_ZC_EMPTY && c->max_active &&
	    zd->nr_imp + zd->nr_exp + zd->nr_closed >= c->max_active)
		return -EIO;
	if (!c->max_open || zd->nr_imp + zd->nr_exp < c->max_open)
		return 0;
	if (c->max_active &&
	    zd->nr_imp + zd->nr_exp + zd->nr_closed >= c->max_active)
		return -EIO;
	for (uint64_t j = c->nr_conv; j < zd->nr_zones; j++)
		if (zd->st[j].cond == HW_ZC_IMP_OPEN &&
		    (oldest == UINT64_MAX || zd->opened[j] < zd->opened[oldest]))
			oldest = j;
	if (oldest == UINT64_MAX)
		return -EIO;
	close_zone(zd, oldest);
	return 0;
}

/* Write len bytes of buf (zeros if NULL) at off in sequential zone i. */
static int seq_write(struct zoned_dev *zd, uint64_t i, uint64_t off,
		     const void *buf, uint64_t len, unsigned flags)
{
	struct hw_zone_state *z = &zd->st[i];
	uint64_t end = zend(zd, i);
	int rc;

	if (off % ZM_SECTOR || len % ZM_SECTOR)
		return -EINVAL;
	switch (z->cond) {
	case HW_ZC_FULL:
	case HW_ZC_READONLY:
	case HW_ZC_OFFLINE:
		return -EIO;
	}
	if (off != z->wp || len > end - off)
		return -EIO;
	if (z->cond == HW_ZC_EMPTY || z->cond == HW_ZC_CLOSED) {
		rc = take_open_slot(zd, i);
		if (rc)
			return rc;
		set_cond(zd, i, HW_ZC_IMP_OPEN);
	}
	if (buf)
		rc = hw_write(zd->store, off, buf, (size_t)len, flags);
	else
		rc = hw_zero_out(zd->store, off, len, flags);
	if (rc)
		return rc;
	z->wp += len;
	mark_dirty(zd, i);
	if (z->wp == end)
		set_cond(zd, i, HW_ZC_FULL);
	return (flags & HW_FUA) ? save(zd) : 0;
}

/* The piece of [off, off + len) inside the zone holding off. */
static uint64_t piece(const struct zoned_dev *zd, uint64_t off, uint64_t len,
		      uint64_t *zone)
{
	uint64_t i = off / zd->cfg.zone_size;
	uint64_t room = zstart(zd, i) + zd->cfg.zone_size - off;

	*zone = i;
	return len < room ? len : room;
}

static int zm_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	struct zoned_dev *zd = to_zd(dev);
	uint8_t *p = buf;
	uint64_t i, n, valid, wp;
	int rc;

	for (; len; off += n, p += n, len -= (size_t)n) {
		n = piece(zd, off, len, &i);
		valid = n;
		if (!is_conv(zd, i) && zd->st[i].cond == HW_ZC_OFFLINE)
			return -EIO;
		if (!is_conv(zd, i) && zd->st[i].cond != HW_ZC_READONLY) {
			wp = zd->st[i].wp;
			valid = wp <= off ? 0 : wp - off < n ? wp - off : n;
		}
		if (valid) {
			rc = hw_read(zd->store, off, p, (size_t)valid);
			if (rc)
				return rc;
		}
		memset(p + valid, 0, (size_t)(n - valid));
	}
	return 0;
}

/* A write, or with buf NULL a zero-out, split per zone. */
static int zm_store(struct zoned_dev *zd, uint64_t off, const uint8_t *buf,
		    uint64_t len, unsigned flags)
{
	uint64_t i, n;
	int rc;

	for (; len; off += n, len -= n, buf = buf ? buf + n : NULL) {
		n = piece(zd, off, len, &i);
		if (!is_conv(zd, i))
			rc = seq_write(zd, i, off, buf, n, flags);
		else if (buf)
			rc = hw_write(zd->store, off, buf, (size_t)n, flags);
		else
			rc = hw_zero_out(zd->store, off, n, flags);
		if (rc)
			return rc;
	}
	return 0;
}

static int zm_write(struct hw_dev *dev, uint64_t off, const void *buf,
		    size_t len, unsigned flags)
{
	return zm_store(to_zd(dev), off, buf, len, flags);
}

static int zm_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
		       unsigned flags)
{
	return zm_store(to_zd(dev), off, NULL, len, flags);
}

/* Discard reaches conventional zones only; reset is how zones are freed. */
static int zm_discard(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	struct zoned_dev *zd = to_zd(dev);
	uint64_t conv_end = zstart(zd, zd->cfg.nr_conv);

	if (off >= conv_end)
		return 0;
	return hw_discard(zd->store, off, len < conv_end - off ? len
							: conv_end - off);
}

static int zm_flush(struct hw_dev *dev)
{
	struct zoned_dev *zd = to_zd(dev);
	int rc = hw_flush(zd->store);

	return rc ? rc : save(zd);
}

static int zm_report_zones(struct hw_dev *dev, uint64_t first,
			   struct hw_zone *zones, unsigned *nr)
{
	struct zoned_dev *zd = to_zd(dev);

	for (unsigned k = 0; k < *nr; k++) {
		uint64_t i = first + k;
		struct hw_zone *z = &zones[k];

		z->start = zstart(zd, i);
		z->len = zd->cfg.zone_size;
		if (is_conv(zd, i)) {
			/* No write pointer: reported at the end, as Linux does. */
			z->capacity = z->len;
			z->wp = z->start + z->len;
			z->type = HW_ZONE_CONV;
		} else {
			z->capacity = zd->cfg.capacity;
			z->wp = zd->st[i].wp;
			z->type = HW_ZONE_SEQ;
		}
		z->cond = zd->st[i].cond;
	}
	return 0;
}

static int zone_reset(struct zoned_dev *zd, uint64_t i)
{
	int rc;

	if (zd->st[i].cond == HW_ZC_EMPTY)
		return 0;
	set_cond(zd, i, HW_ZC_EMPTY);
	zd->st[i].wp = zstart(zd, i);
	rc = save_zone(zd, i);
	/* The old bytes stay in the store: the invariant (above) lets the
	 * store hold anything above the write pointer, and the writes that
	 * refill the zone overwrite them.  A discard here gave a mem store's
	 * pages back to the kernel only for the next appends to fault them
	 * in again: a quarter of a soak whose zones are reclaimed and reset
	 * all the time.  A reset zone's memory (or file blocks) stays as a
	 * written zone's does. */
	return rc;
}

/* Open, explicitly or to finish it: a zone not open yet needs a slot. */
static int open_slot_if_needed(struct zoned_dev *zd, uint64_t i)
{
	uint8_t c = zd->st[i].cond;

	return c == HW_ZC_EMPTY || c == HW_ZC_CLOSED ? take_open_slot(zd, i) : 0;
}

static int zone_open(struct zoned_dev *zd, uint64_t i)
{
	int rc;

	if (zd->st[i].cond == HW_ZC_EXP_OPEN)
		return 0;
	if (zd->st[i].cond == HW_ZC_FULL)
		return -EIO;
	rc = open_slot_if_needed(zd, i);
	if (rc)
		return rc;
	set_cond(zd, i, HW_ZC_EXP_OPEN);
	return 0;
}

static int zone_close(struct zoned_dev *zd, uint64_t i)
{
	switch (zd->st[i].cond) {
	case HW_ZC_CLOSED:
		return 0;
	case HW_ZC_IMP_OPEN:
	case HW_ZC_EXP_OPEN:
		close_zone(zd, i);
		return 0;
	}
	return -EIO;
}

static int zone_finish(struct zoned_dev *zd, uint64_t i)
{
	struct hw_zone_state *z = &zd->st[i];
	uint64_t end = zend(zd, i);
	int rc;

	if (z->cond == HW_ZC_FULL)
		return 0;
	rc = open_slot_if_needed(zd, i);
	if (rc)
		return rc;
	if (z->wp < end) {
		rc = hw_zero_out(zd->store, z->wp, end - z->wp, 0);
		if (rc)
			return rc;
	}
	z->wp = end;
	set_cond(zd, i, HW_ZC_FULL);
	return save_zone(zd, i);
}

static int zm_zone_mgmt(struct hw_dev *dev, enum hw_zone_op op, uint64_t i)
{
	struct zoned_dev *zd = to_zd(dev);

	if (is_conv(zd, i) || zd->st[i].cond == HW_ZC_READONLY ||
	    zd->st[i].cond == HW_ZC_OFFLINE)
		return -EIO;
	switch (op) {
	case HW_ZONE_RESET:  return zone_reset(zd, i);
	case HW_ZONE_OPEN:   return zone_open(zd, i);
	case HW_ZONE_CLOSE:  return zone_close(zd, i);
	case HW_ZONE_FINISH: return zone_finish(zd, i);
	}
	return -EINVAL;
}

static int zm_zone_append(struct hw_dev *dev, uint64_t i, const void *buf,
			  size_t len, unsigned flags, uint64_t *written_off)
{
	struct zoned_dev *zd = to_zd(dev);
	uint64_t at = zd->st[i].wp;
	int rc;

	if (is_conv(zd, i))
		return -EIO;
	rc = seq_write(zd, i, at, buf, len, flags);
	if (rc)
		return rc;
	*written_off = at;
	return 0;
}

/* "64m" for 64 MiB, the largest suffix that divides v. */
static void fmt_size(char *buf, size_t len, uint64_t v)
{
	static const char sfx[] = "kmgt";
	int k = -1;

	while (v && v % 1024 == 0 && k < 3) {
		v /= 1024;
		k++;
	}
	if (k < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, sfx[k]);
}

static int zm_describe(struct hw_dev *dev, char *buf, size_t len)
{
	struct zoned_dev *zd = to_zd(dev);
	const struct hw_zone_cfg *c = &zd->cfg;
	char zs[24], cap[24], app[24];

	fmt_size(zs, sizeof(zs), c->zone_size);
	fmt_size(cap, sizeof(cap), c->capacity);
	fmt_size(app, sizeof(app), c->max_append);
	snprintf(buf, len,
		 "zoned (emulated: ZBC/ZNS rules in software) over %s: %llu zones of %s, capacity %s, %u conventional, max_open %u, max_active %u (0 = none), append_max %s",
		 zd->what, (unsigned long long)zd->nr_zones, zs, cap,
		 c->nr_conv, c->max_open, c->max_active, app);
	return 0;
}

static void zm_free(struct zoned_dev *zd)
{
	if (zd->release)
		zd->release(zd->arg);
	hw_close(zd->store);
	free(zd->st);
	free(zd->opened);
	free(zd->dirty);
	free(zd->one);
	free(zd);
}

static void zm_destroy(struct hw_dev *dev)
{
	struct zoned_dev *zd = to_zd(dev);

	/* A clean close keeps what was written, as closing file: does. */
	if (zd->save && zd->ndirty && hw_flush(zd->store) == 0)
		save(zd);
	zm_free(zd);
}

static const struct hw_ops zoned_ops = {
	.name = "zoned",
	.read = zm_read,
	.write = zm_write,
	.flush = zm_flush,
	.zero_out = zm_zero_out,
	.discard = zm_discard,
	.destroy = zm_destroy,
	.report_zones = zm_report_zones,
	.zone_mgmt = zm_zone_mgmt,
	.zone_append = zm_zone_append,
	.describe = zm_describe,
};

int hw_zone_cfg_check(struct hw_zone_cfg *c, const char *spec,
		      char *err, size_t errlen)
{
	uint64_t nr_zones, nr_seq;

	if (c->zone_size == 0 || c->zone_size % HW_BLOCK)
		return hw_errf(err, errlen, -EINVAL,
			       "zone size %llu in '%s' is not a positive multiple of %u",
			       (unsigned long long)c->zone_size, spec, HW_BLOCK);
	if (c->size < c->zone_size || c->size % c->zone_size)
		return hw_errf(err, errlen, -EINVAL,
			       "size %llu in '%s' is not a whole number of %llu-byte zones",
			       (unsigned long long)c->size, spec,
			       (unsigned long long)c->zone_size);
	if (c->capacity == 0)
		c->capacity = c->zone_size;
	if (c->capacity > c->zone_size || c->capacity % HW_BLOCK)
		return hw_errf(err, errlen, -EINVAL,
			       "zone capacity %llu in '%s' must be a multiple of %u no larger than the zone size %llu",
			       (unsigned long long)c->capacity, spec, HW_BLOCK,
			       (unsigned long long)c->zone_size);
	nr_zones = c->size / c->zone_size;
	if (c->nr_conv >= nr_zones)
		return hw_errf(err, errlen, -EINVAL,
			       "%u conventional zones in '%s' leave none of the %llu zones sequential",
			       c->nr_conv, spec, (unsigned long long)nr_zones);
	nr_seq = nr_zones - c->nr_conv;
	if ((uint64_t)c->nr_readonly + c->nr_offline > nr_seq)
		return hw_errf(err, errlen, -EINVAL,
			       "%u read-only and %u offline zones in '%s' are more than the %llu sequential zones",
			       c->nr_readonly, c->nr_offline, spec,
			       (unsigned long long)nr_seq);
	if (c->max_append % ZM_SECTOR)
		return hw_errf(err, errlen, -EINVAL,
			       "append_max %u in '%s' is not a multiple of %u",
			       c->max_append, spec, ZM_SECTOR);
	if (c->max_append == 0 || c->max_append > c->capacity)
		c->max_append = (uint32_t)(c->capacity < ZM_APPEND_CEIL
					   ? c->capacity : ZM_APPEND_CEIL);
	if (c->max_active >= nr_seq)
		c->max_active = 0;
	if (c->max_open >= nr_seq)
		c->max_open = 0;
	if (c->max_active && c->max_open > c->max_active)
		c->max_open = c->max_active;
	return 0;
}

/* A saved state that breaks no rule, with open zones closed. */
static int load_state(struct zoned_dev *zd, const struct hw_zone_state *saved,
		      char *err, size_t errlen)
{
	for (uint64_t i = 0; i < zd->nr_zones; i++) {
		uint64_t start = zstart(zd, i), end = zend(zd, i);
		uint64_t wp = saved[i].wp;
		uint8_t cond = saved[i].cond;
		bool ok;

		if (is_conv(zd, i)) {
			ok = cond == HW_ZC_NOT_WP;
		} else {
			switch (cond) {
			case HW_ZC_EMPTY:    ok = wp == start; break;
			case HW_ZC_IMP_OPEN:
			case HW_ZC_EXP_OPEN: ok = wp >= start && wp < end; break;
			case HW_ZC_CLOSED:   ok = wp > start && wp < end; break;
			case HW_ZC_FULL:     ok = wp == end; break;
			case HW_ZC_READONLY:
			case HW_ZC_OFFLINE:  ok = wp >= start && wp <= end; break;
			default:             ok = false; break;
			}
			ok = ok && wp % ZM_SECTOR == 0;
		}
		if (!ok)
			return hw_errf(err, errlen, -EUCLEAN,
				       "zone %llu of %s: condition %u with write pointer %llu breaks the zone rules (zone at %llu, capacity %llu)",
				       (unsigned long long)i, zd->what, cond,
				       (unsigned long long)wp,
				       (unsigned long long)start,
				       (unsigned long long)zd->cfg.capacity);
		if (cond == HW_ZC_IMP_OPEN || cond == HW_ZC_EXP_OPEN) {
			cond = wp > start ? HW_ZC_CLOSED : HW_ZC_EMPTY;
			mark_dirty(zd, i);
		}
		zd->st[i].wp = wp;
		zd->st[i].cond = cond;
		if (cond_counter(zd, cond))
			(*cond_counter(zd, cond))++;
	}
	return 0;
}

static void fresh_state(struct zoned_dev *zd)
{
	const struct hw_zone_cfg *c = &zd->cfg;
	uint64_t offline_from = zd->nr_zones - c->nr_offline;
	uint64_t readonly_from = offline_from - c->nr_readonly;

	for (uint64_t i = 0; i < zd->nr_zones; i++) {
		zd->st[i].wp = zstart(zd, i);
		zd->st[i].cond = is_conv(zd, i) ? HW_ZC_NOT_WP
			       : i >= offline_from ? HW_ZC_OFFLINE
			       : i >= readonly_from ? HW_ZC_READONLY
			       : HW_ZC_EMPTY;
		mark_dirty(zd, i);
	}
}

int hw_zoned_new(const struct hw_zone_cfg *cfg, struct hw_dev *store,
		 const struct hw_zone_state *saved, const char *what,
		 hw_zone_save_fn save_fn, void (*release)(void *arg), void *arg,
		 struct hw_dev **out, char *err, size_t errlen)
{
	uint64_t nr = cfg->size / cfg->zone_size;
	struct zoned_dev *zd = calloc(1, sizeof(*zd));
	int rc;

	if (!zd) {
		if (release)
			release(arg);
		hw_close(store);
		return hw_errf(err, errlen, -ENOMEM, "out of memory for %s", what);
	}
	zd->store = store;
	zd->cfg = *cfg;
	zd->nr_zones = nr;
	zd->release = release;
	zd->arg = arg;
	snprintf(zd->what, sizeof(zd->what), "%s", what);
	zd->st = calloc(nr, sizeof(*zd->st));
	zd->opened = calloc(nr, sizeof(*zd->opened));
	zd->dirty = calloc(nr, 1);
	zd->one = calloc(nr, 1);
	if (!zd->st || !zd->opened || !zd->dirty || !zd->one) {
		rc = hw_errf(err, errlen, -ENOMEM,
			     "out of memory for %llu zones of %s",
			     (unsigned long long)nr, what);
		goto out_error;
	}
	if (saved) {
		rc = load_state(zd, saved, err, errlen);
		if (rc)
			goto out_error;
	} else {
		fresh_state(zd);
	}
	zd->save = save_fn;
	rc = save(zd);
	if (rc) {
		hw_errf(err, errlen, rc, "cannot save the zone state of %s: %s",
			what, strerror(-rc));
		goto out_error;
	}

	hw_dev_init(&zd->dev, &zoned_ops, cfg->size,
		    (store->geo.caps & ~HW_CAP_ZERO_FREES) | HW_CAP_ZONED);
	zd->dev.geo.zone_size = cfg->zone_size;
	zd->dev.geo.nr_zones = nr;
	zd->dev.geo.nr_conv = cfg->nr_conv;
	zd->dev.geo.max_open = cfg->max_open;
	zd->dev.geo.max_active = cfg->max_active;
	zd->dev.geo.max_append = cfg->max_append;
	*out = &zd->dev;
	return 0;

out_error:
	zm_free(zd);
	return rc;
}

/* The zone model at the bottom of dev's stack, or NULL. */
static struct zoned_dev *bottom_model(struct hw_dev *dev)
{
	struct hw_dev *d = hw_layer_find(dev, &zoned_ops);

	return d ? to_zd(d) : NULL;
}

int hw_zoned_rewind(struct hw_dev *dev, uint64_t i, uint64_t wp)
{
	struct zoned_dev *zd = bottom_model(dev);
	struct hw_zone_state *z;

	if (!zd)
		return -EOPNOTSUPP;
	if (i >= zd->nr_zones || is_conv(zd, i))
		return -EINVAL;
	z = &zd->st[i];
	if (z->cond == HW_ZC_READONLY || z->cond == HW_ZC_OFFLINE ||
	    wp < zstart(zd, i) || wp > z->wp || wp % ZM_SECTOR)
		return -EINVAL;
	if (wp == z->wp)
		return 0;
	z->wp = wp;
	mark_dirty(zd, i);
	close_zone(zd, i);
	return 0;
}

int hw_zoned_power_cycle(struct hw_dev *dev)
{
	struct zoned_dev *zd = bottom_model(dev);

	if (!zd)
		return -EOPNOTSUPP;
	for (uint64_t i = zd->cfg.nr_conv; i < zd->nr_zones; i++)
		if (zd->st[i].cond == HW_ZC_IMP_OPEN ||
		    zd->st[i].cond == HW_ZC_EXP_OPEN)
			close_zone(zd, i);
	return save(zd);
}

int hw_zoned_restore(struct hw_dev *dev, uint64_t i, const void *data,
		     uint64_t len)
{
	struct zoned_dev *zd = bottom_model(dev);
	int rc = 0;

	if (!zd)
		return -EOPNOTSUPP;
	if (i >= zd->nr_zones || is_conv(zd, i) || len > zd->cfg.capacity ||
	    len % ZM_SECTOR || zd->st[i].cond == HW_ZC_READONLY ||
	    zd->st[i].cond == HW_ZC_OFFLINE)
		return -EINVAL;
	if (len)
		rc = hw_write(zd->store, zstart(zd, i), data, (size_t)len, 0);
	if (rc)
		return rc;
	zd->st[i].wp = zstart(zd, i) + len;
	set_cond(zd, i, len == 0 ? HW_ZC_EMPTY
		      : len == zd->cfg.capacity ? HW_ZC_FULL : HW_ZC_CLOSED);
	return 0;
}

bool hw_zoned_emulated(struct hw_dev *dev)
{
	return bottom_model(dev) != NULL;
}
