/*
 * crash.c - "crash[atomic=N]:SPEC", power cuts on demand (SQLite's crash
 * VFS, test6.c, for block devices and pmem).
 *
 * Every I/O goes to the lower device at once, so reads see what was
 * written.  Each write, zero-out or discard is also recorded, with the
 * bytes it replaced, until it is durable:
 *
 *   rec[0] rec[1] ... rec[n-1]      issue order; durable ones stay in
 *                                   the list while an older pending one
 *                                   could still be undone under them
 *
 *   flush            every record durable (the list empties)
 *   HW_FUA write     that record durable
 *   persist(off,len) the bytes in range durable: records are split at
 *                    the range's edges (pmem: flush + fence of lines)
 *
 * A cut (hw_crash_cut) decides for each pending record: kept, dropped or
 * torn (kept in whole atomic units chosen by the cut), then rebuilds the
 * lower device as power would have left it:
 *
 *   undo:  write back every record's old bytes, newest first
 *          -> the durable image before the first record
 *   redo:  write every kept record's bytes (the kept units of a torn
 *          one), oldest first
 *
 * A record keeps the bytes it replaced, not the bytes it wrote: those
 * are on the lower device until a later write replaces them, and that
 * write's record keeps them as its old bytes.  So the undo, going
 * newest first, finds each record's written bytes on the device just
 * before it puts that record's old bytes back (the device is then as
 * the write left it), and reads them there for the redo.  A write
 * costs one copy for the record, not two, and a record that becomes
 * durable before any cut never had its written bytes copied at all.
 * The undo reads every record's, kept or not: a cut that fails part
 * way forgets nothing, and the next one, which may keep a record the
 * first dropped, finds its range undone already.
 *
 * then flushes the lower device and forgets the records.  Sequential
 * zones cannot be written backwards, so there the cut rewinds instead:
 * a zone keeps its records in order up to the first one lost (and the
 * kept leading units of a torn one), its write pointer moves back to
 * that point and open zones close, as after a power cycle (this needs
 * the zone model at the bottom of the stack: real zoned hardware cannot
 * be rewound, and a cut that would have to is -EOPNOTSUPP).  In a
 * sequential zone a durable record makes the zone's earlier records
 * durable (a zone has no holes below its write pointer); zone finish
 * makes the whole zone durable and reset forgets its records, both
 * being durable on return.
 *
 * The old bytes are read through the lower device, so a faulty layer
 * should sit above this one ("faulty:crash:..."), not below.
 *
 * A plan (hw_crash_set_plan) numbers the durability points as they are
 * issued and fails the power at one of them, or lies at some:
 *
 *   I/O      W  F   W  FUA   W  F   W  W  F ...
 *   point       1      2        3         4
 *                               ^ fail_at = 3: the power fails right
 *                                 after this flush (fail_before:
 *                                 instead of it)
 *   the writes after it are lost: every cut drops them whole
 *
 * After the failure the device still answers (reads see every write),
 * so the caller's operation runs to its end, but nothing it does is
 * durable any more; the next cut restores the power.  A lying point is
 * acknowledged and does nothing: a flush forgets no record, a FUA write
 * stays pending, a persist marks nothing.
 *
 * On zones, what runs on after the failure can reset or finish a zone,
 * which the zone model does at once and no cut could rewind.  So these
 * become lost records too: a finish as a lost write of the zone's rest,
 * a reset as one holding the bytes it threw away, which the cut writes
 * back (hw_zoned_restore) before it rewinds.  Real zoned hardware has no
 * such undo: a plan there is -EOPNOTSUPP.
 *
 * Power domains (hw_crash_join): the crash layers of devices that share
 * a power supply, a filesystem's data and realtime devices, form one
 * group.  Each device keeps its records, but the group numbers the
 * writes of all of them in one sequence and owns the plan:
 *
 *   data   W1      F          W4   F(void)
 *   rt         W2     W3  F!           W5
 *   seq     1  2      3   .    4       5
 *   point              1  2 = fail_at: both devices go dark
 *
 * so a point counts flushes of either device, a failure on one is a
 * failure on both, and a cut decides the pending writes of both in
 * issue order (PREFIX and MASK count them so, RANDOM's coins are keyed
 * by the distance from the group's oldest pending write) and rebuilds
 * every device of the group.  A device alone is a group of one.
 *
 * Settled (hw_crash_settle): a caller that knows no cut will come, or
 * only one keeping every write (the rest of a fuzz input after its last
 * cut, a soak round whose ops hold none), says so; the group's pending
 * records are forgotten, and from then on its I/O goes straight through,
 * unrecorded and unnumbered, until the caller unsettles it.
 */
#include "hw/hw_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct crash_rec {
	uint64_t off, len;
	uint64_t seq;          /* the write's number: marks and coins      */
	uint8_t *old;          /* bytes replaced; NULL in sequential zones */
	uint8_t *data;         /* bytes written, read back by a cut's undo
				  (see the top); or a lost reset's zone
				  bytes                                     */
	bool zeros;            /* a zero-out: the bytes written are zeros  */
	bool durable;
	bool seqzone;
	bool lost;             /* written after the power failed: dropped */
	bool reset;            /* a lost zone reset: data is the zone's
				  bytes before it, [off, off + len)        */
	uint8_t fate;          /* enum fate, at a cut                      */
	bool done;             /* its zone was rewound, at a cut           */
	uint8_t arena;         /* REC_*_ARENA: old, data in the arena      */
};

#define REC_OLD_ARENA  1u
#define REC_DATA_ARENA 2u

struct crash_dev;

/*
 * A power domain: the crash layers that lose power together (one per
 * device until hw_crash_join() puts several in one).  It numbers the
 * writes of all its devices in one sequence and holds the one plan.
 */
struct crash_group {
	struct crash_dev **dev;  /* its devices, in joining order          */
	size_t n;
	uint64_t next_seq;
	struct hw_crash_plan plan;
	uint64_t plan_points;  /* durability points issued under the plan */
	bool power_off;        /* the plan's failure happened              */
	uint64_t lost;         /* I/Os since (none reached the media)      */
	uint64_t key_base;     /* the oldest pending write's seq, at a cut */
	bool settled;          /* hw_crash_settle: no cut but keep-all will
				  come, nothing is recorded                */
	bool cut_unfinished;   /* a cut failed part way: the devices hold
				  neither the image before it nor after   */
};

struct crash_dev {
	struct hw_layer l;
	struct crash_group *g;
	struct crash_rec *rec;
	size_t nrec, cap;
	/* pmem: the array a persist built the last one but one in, kept for
	 * the next persist (which builds a new array every time) */
	struct crash_rec *spare;
	size_t spare_cap;
	uint64_t points, cuts;
	uint32_t atomic;
	uint64_t seq_start;    /* first byte of the sequential zones, or ~0 */
	struct hw_arena arena; /* the records' bytes, reset when none is left */
};

enum fate { KEEP, DROP, TEAR };

/* What a durability point does under the plan. */
enum point { POINT_REAL, POINT_LIE, POINT_FAIL };

static const struct hw_ops crash_ops;

static struct crash_dev *to_crash(struct hw_dev *dev)
{
	return (struct crash_dev *)dev;
}

static struct hw_dev *lower(struct crash_dev *cd)
{
	return cd->l.lower;
}

static uint64_t zone_of(const struct crash_dev *cd, uint64_t off)
{
	return off / cd->l.dev.geo.zone_size;
}

static void rec_free(struct crash_rec *r)
{
	if (!(r->arena & REC_OLD_ARENA))
		free(r->old);
	if (!(r->arena & REC_DATA_ARENA))
		free(r->data);
}

/*
 * len bytes for a record to keep, from the device's arena (or malloc
 * past its limit): bit is set in *arena when they came from the arena.
 */
static uint8_t *rec_bytes(struct crash_dev *cd, uint64_t len, uint8_t *arena,
			  uint8_t bit)
{
	uint8_t *p = hw_arena_alloc(&cd->arena, (size_t)len);

	if (p) {
		*arena |= bit;
		return p;
	}
	*arena &= (uint8_t)~bit;
	return malloc(len ? (size_t)len : 1);
}

/* No record left: their bytes go all at once. */
static void rec_none_left(struct crash_dev *cd)
{
	if (cd->nrec == 0)
		hw_arena_reset(&cd->arena);
}

static int rec_push(struct crash_dev *cd, const struct crash_rec *r)
{
	struct crash_rec *p = hw_grow(cd->rec, &cd->cap, cd->nrec, sizeof(*r));

	if (!p)
		return -ENOMEM;
	cd->rec = p;
	cd->rec[cd->nrec++] = *r;
	return 0;
}

static void forget_all(struct crash_dev *cd)
{
	for (size_t i = 0; i < cd->nrec; i++)
		rec_free(&cd->rec[i]);
	cd->nrec = 0;
	rec_none_left(cd);
}

/* Durable records at the head can never be undone: drop them. */
static void trim_head(struct crash_dev *cd)
{
	size_t k = 0;

	while (k < cd->nrec && cd->rec[k].durable)
		rec_free(&cd->rec[k++]);
	if (k == 0)
		return; /* nothing to drop (and rec may still be NULL) */
	memmove(cd->rec, cd->rec + k, (cd->nrec - k) * sizeof(*cd->rec));
	cd->nrec -= k;
	rec_none_left(cd);
}

/* A copy of p's len bytes for a record (NULL for NULL). */
static uint8_t *dup_bytes(struct crash_dev *cd, const uint8_t *p,
			  uint64_t len, uint8_t *arena, uint8_t bit)
{
	uint8_t *d;

	if (!p)
		return NULL;
	d = rec_bytes(cd, len, arena, bit);
	if (d)
		memcpy(d, p, (size_t)len);
	return d;
}

/* Every record of zone z durable (a durable write or finish there). */
static void zone_durable(struct crash_dev *cd, uint64_t z)
{
	for (size_t i = 0; i < cd->nrec; i++)
		if (cd->rec[i].seqzone && zone_of(cd, cd->rec[i].off) == z)
			cd->rec[i].durable = true;
}

/*
 * Record [off, off + len) after the lower device completed it: zeros
 * when it was a zero-out, old what it replaced (NULL in sequential
 * zones; its REC_OLD_ARENA bit in arena), the record's from here on.
 * What it wrote stays on the device (see the top).
 */
static int record(struct crash_dev *cd, uint64_t off, uint64_t len,
		  uint8_t *old, uint8_t arena, bool zeros, bool durable,
		  uint64_t seq)
{
	struct crash_rec r = {
		.off = off, .len = len, .seq = seq, .old = old, .zeros = zeros,
		.durable = durable, .seqzone = off >= cd->seq_start,
		.lost = cd->g->power_off, .arena = arena & REC_OLD_ARENA,
	};
	int rc = rec_push(cd, &r);

	if (rc) {
		rec_free(&r);
		return rc;
	}
	if (durable && r.seqzone)
		zone_durable(cd, zone_of(cd, off));
	return 0;
}

/* A durability point is being issued (the power is on): number it. */
static enum point point_begin(struct crash_dev *cd)
{
	struct crash_group *g = cd->g;
	uint64_t n = ++g->plan_points;

	if (n == g->plan.fail_at && g->plan.fail_before)
		return POINT_FAIL;
	if (g->plan.lie_count && n >= g->plan.lie_from &&
	    n - g->plan.lie_from < g->plan.lie_count)
		return POINT_LIE;
	return POINT_REAL;
}

static void power_fail(struct crash_dev *cd)
{
	cd->g->power_off = true;
	cd->g->lost++;
}

/* A point completed (or was lied about): the power fails now if planned. */
static void point_end(struct crash_dev *cd)
{
	struct crash_group *g = cd->g;

	if (g->plan_points == g->plan.fail_at && !g->plan.fail_before)
		g->power_off = true;
}

/*
 * A flush or persist about to happen: true if it must do nothing (the
 * power is off, fails now, or the point is a lie).
 */
static bool point_void(struct crash_dev *cd)
{
	enum point pt;

	if (cd->g->power_off) {
		cd->g->lost++;
		return true;
	}
	pt = point_begin(cd);
	if (pt == POINT_FAIL)
		power_fail(cd);
	else if (pt == POINT_LIE)
		point_end(cd);
	return pt != POINT_REAL;
}

/*
 * A write (plain, zero-out, discard or zone append) about to be issued
 * with *flags: after a power failure nothing is durable, and a planned
 * FUA point that fails or lies goes down as a plain write.
 */
static enum point write_begin(struct crash_dev *cd, unsigned *flags)
{
	enum point pt = POINT_REAL;

	if (cd->g->power_off)
		cd->g->lost++;
	else if (*flags & HW_FUA)
		pt = point_begin(cd);
	if (cd->g->power_off || pt != POINT_REAL)
		*flags &= ~HW_FUA;
	return pt;
}

/* The write is recorded: count its point, fail the power if planned. */
static void write_end(struct crash_dev *cd, enum point pt, bool fua)
{
	if (fua)
		cd->points++;
	if (pt == POINT_FAIL)
		power_fail(cd);      /* after recording: in flight, not lost */
	else if (fua || pt == POINT_LIE)
		point_end(cd);
	trim_head(cd);
}

enum io_kind { IO_WRITE, IO_ZERO, IO_DISCARD };

/* The I/O itself, on the device below. */
static int pass_down(struct crash_dev *cd, enum io_kind kind, uint64_t off,
		     const uint8_t *buf, uint64_t len, unsigned flags)
{
	return kind == IO_WRITE ? hw_write(lower(cd), off, buf, (size_t)len, flags)
	     : kind == IO_ZERO  ? hw_zero_out(lower(cd), off, len, flags)
	     : hw_discard(lower(cd), off, len);
}

/*
 * A write, zero-out or discard: read what it will replace outside the
 * sequential zones, do it, record it.  A discard changes nothing in a
 * sequential zone (the zone model ignores it there).
 */
static int crash_io(struct crash_dev *cd, enum io_kind kind, uint64_t off,
		    const uint8_t *buf, uint64_t len, unsigned flags)
{
	uint64_t plain = off >= cd->seq_start ? 0
		       : cd->seq_start - off < len ? cd->seq_start - off : len;
	uint64_t seq;
	enum point pt;
	bool fua;
	uint8_t *old = NULL, arena = 0;
	int rc;

	if (cd->g->settled) /* straight through: no cut will undo it */
		return pass_down(cd, kind, off, buf, len, flags);
	seq = cd->g->next_seq++;
	pt = write_begin(cd, &flags);
	fua = flags & HW_FUA;
	if (plain) {
		old = rec_bytes(cd, plain, &arena, REC_OLD_ARENA);
		if (!old)
			return -ENOMEM;
		rc = hw_read(lower(cd), off, old, (size_t)plain);
		if (rc)
			goto out_error;
	}
	rc = pass_down(cd, kind, off, buf, len, flags);
	if (rc)
		goto out_error;
	if (plain) {
		rc = record(cd, off, plain, old, arena, kind == IO_ZERO, fua,
			    seq);
		old = NULL;
	}
	/* Sequential zones: one record per zone, never one across two. */
	for (uint64_t at = off + plain, n; !rc && at < off + len &&
	     kind != IO_DISCARD; at += n) {
		uint64_t zend = (zone_of(cd, at) + 1) * cd->l.dev.geo.zone_size;

		n = off + len - at < zend - at ? off + len - at : zend - at;
		rc = record(cd, at, n, NULL, 0, kind == IO_ZERO, fua, seq);
	}
	write_end(cd, pt, fua);
	return rc;

out_error:
	if (!(arena & REC_OLD_ARENA))
		free(old);
	return rc;
}

static int crash_write(struct hw_dev *dev, uint64_t off, const void *buf,
		       size_t len, unsigned flags)
{
	return crash_io(to_crash(dev), IO_WRITE, off, buf, len, flags);
}

static int crash_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
			  unsigned flags)
{
	return crash_io(to_crash(dev), IO_ZERO, off, NULL, len, flags);
}

static int crash_discard(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	return crash_io(to_crash(dev), IO_DISCARD, off, NULL, len, 0);
}

static int crash_flush(struct hw_dev *dev)
{
	struct crash_dev *cd = to_crash(dev);
	int rc;

	if (cd->g->settled)
		return hw_flush(lower(cd));
	if (point_void(cd))
		return 0;
	rc = hw_flush(lower(cd));
	if (rc)
		return rc;
	forget_all(cd);
	cd->points++;
	point_end(cd);
	return 0;
}

/* The part [a, b) of r, as a record of its own. */
static int rec_slice(struct crash_dev *cd, const struct crash_rec *r,
		     uint64_t a, uint64_t b, bool durable,
		     struct crash_rec *out)
{
	*out = *r;
	out->off = a;
	out->len = b - a;
	out->durable = durable;
	out->arena = 0;
	out->old = r->old ? dup_bytes(cd, r->old + (a - r->off), b - a,
				      &out->arena, REC_OLD_ARENA) : NULL;
	out->data = r->data ? dup_bytes(cd, r->data + (a - r->off), b - a,
					&out->arena, REC_DATA_ARENA) : NULL;
	if ((r->old && !out->old) || (r->data && !out->data)) {
		rec_free(out);
		return -ENOMEM;
	}
	return 0;
}

/*
 * persist(off, len) on pmem: the pending bytes inside the range become
 * durable.  A record that straddles an edge is split, before / inside /
 * after:
 *
 *   record    |-----pending-----|
 *   persist        [=====]
 *   result    |pend|durab|pend--|
 *
 * Below a device that is not byte-addressable, hw_persist() is a flush
 * and makes everything durable.
 */
static int crash_persist(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	struct crash_dev *cd = to_crash(dev);
	struct crash_rec *old = cd->rec, *nv = NULL;
	bool bytes = lower(cd)->geo.caps & HW_CAP_BYTE_ADDR;
	uint64_t end = off + len;
	size_t n = cd->nrec, k = 0;
	/* no smaller than the array it replaces: pushes after it need not
	 * grow it back */
	size_t ncap = n ? 3 * n : 1;
	int rc;

	if (cd->g->settled)
		return hw_persist(lower(cd), off, len);
	if (ncap < cd->cap)
		ncap = cd->cap;
	/* A record splits into three at most: room for all of them first,
	 * so that no record can be lost to a failed push below. */
	if (bytes && cd->spare_cap < ncap) {
		nv = realloc(cd->spare, ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		cd->spare = nv;
		cd->spare_cap = ncap;
	}
	nv = cd->spare;
	ncap = cd->spare_cap;
	if (point_void(cd))
		return 0;
	rc = hw_persist(lower(cd), off, len);
	if (!rc) {
		cd->points++;
		point_end(cd);
	}
	if (rc || !bytes) {
		if (!rc)
			forget_all(cd);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct crash_rec *r = &old[i], piece[3];
		uint64_t r_end = r->off + r->len;
		uint64_t a = r->off > off ? r->off : off;
		uint64_t b = r_end < end ? r_end : end;
		uint64_t edge[4] = { r->off, a, b, r_end };
		int np = 0, err = 0;

		if (!rc && !r->durable && a < b && (a > r->off || b < r_end)) {
			for (int e = 0; e < 3 && !err; e++) {
				if (edge[e] == edge[e + 1])
					continue;
				err = rec_slice(cd, r, edge[e], edge[e + 1],
						e == 1, &piece[np]);
				if (!err)
					np++;
			}
			if (!err) {
				for (int p = 0; p < np; p++)
					nv[k++] = piece[p];
				continue;    /* r's own bytes are freed below */
			}
			/* out of memory: r stays whole and pending, and so
			 * does every record after it */
			while (np > 0)
				rec_free(&piece[--np]);
			rc = err;
		} else if (!rc) {
			r->durable = r->durable || a < b;
		}
		nv[k++] = *r;                /* moved, not copied */
		r->old = r->data = NULL;
	}
	for (size_t i = 0; i < n; i++)
		rec_free(&old[i]);
	cd->spare = old;
	cd->spare_cap = cd->cap;
	cd->rec = nv;
	cd->nrec = k;
	cd->cap = ncap;
	trim_head(cd);
	return rc;
}

static int crash_zone_append(struct hw_dev *dev, uint64_t zone,
			     const void *buf, size_t len, unsigned flags,
			     uint64_t *written_off)
{
	struct crash_dev *cd = to_crash(dev);
	uint64_t seq;
	enum point pt;
	int rc;

	if (cd->g->settled)
		return hw_zone_append(lower(cd), zone, buf, len, flags,
				      written_off);
	seq = cd->g->next_seq++;
	pt = write_begin(cd, &flags);
	rc = hw_zone_append(lower(cd), zone, buf, len, flags, written_off);
	if (!rc)
		rc = record(cd, *written_off, len, NULL, 0, false,
			    flags & HW_FUA, seq);
	write_end(cd, pt, !rc && (flags & HW_FUA));
	return rc;
}

/*
 * Zone reset and finish after the power failed reach the zone model
 * (the engine goes on writing there) but not the media, so the cut
 * must undo them.  A finish is recorded as a lost write of the rest of
 * the zone, which the cut's rewind drops; a reset as a lost record that
 * keeps the zone's bytes from before it, which the cut writes back:
 *
 *   before     |written.......|wp            the failure came earlier
 *   reset      |wp                           lost: the record keeps
 *                                            [start, wp) and its bytes
 *   writes     |new...|wp                    lost
 *   cut        |written.......|wp, then the zone's records before the
 *                                 reset decide how far it rewinds
 */
static int lost_zone_op(struct crash_dev *cd, enum hw_zone_op op,
			uint64_t zone)
{
	struct hw_zone z;
	unsigned nr = 1;
	struct crash_rec r = { .seq = cd->g->next_seq++, .seqzone = true,
			       .lost = true, .reset = op == HW_ZONE_RESET };
	int rc = hw_report_zones(lower(cd), zone, &z, &nr);

	if (rc || nr != 1)
		return rc ? rc : -EIO;
	if (z.type != HW_ZONE_SEQ || z.cond == HW_ZC_READONLY ||
	    z.cond == HW_ZC_OFFLINE ||
	    z.cond == (r.reset ? HW_ZC_EMPTY : HW_ZC_FULL))
		return 0; /* the lower device refuses it or it changes nothing */
	cd->g->lost++;
	r.off = r.reset ? z.start : z.wp;
	r.len = r.reset ? z.wp - z.start : z.start + z.capacity - z.wp;
	if (r.reset) {
		r.data = rec_bytes(cd, r.len, &r.arena, REC_DATA_ARENA);
		if (!r.data)
			return -ENOMEM;
		rc = hw_read(lower(cd), r.off, r.data, (size_t)r.len);
	}
	if (!rc)
		rc = rec_push(cd, &r);
	if (rc)
		rec_free(&r);
	return rc;
}

static int crash_zone_mgmt(struct hw_dev *dev, enum hw_zone_op op,
			   uint64_t zone)
{
	struct crash_dev *cd = to_crash(dev);
	size_t k = 0;
	int rc = 0;

	if (cd->g->settled)
		return hw_zone_mgmt(lower(cd), op, zone);
	if (cd->g->power_off && (op == HW_ZONE_RESET || op == HW_ZONE_FINISH))
		rc = lost_zone_op(cd, op, zone);
	if (!rc)
		rc = hw_zone_mgmt(lower(cd), op, zone);
	if (rc || cd->g->power_off)
		return rc;
	if (op == HW_ZONE_FINISH)
		zone_durable(cd, zone);
	if (op == HW_ZONE_RESET) {
		for (size_t i = 0; i < cd->nrec; i++) {
			struct crash_rec *r = &cd->rec[i];

			if (r->seqzone && zone_of(cd, r->off) == zone)
				rec_free(r);
			else
				cd->rec[k++] = *r;
		}
		cd->nrec = k;
	}
	trim_head(cd);
	return 0;
}

/* ---- the cut ------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static bool coin(uint64_t seed, uint64_t a, uint64_t b)
{
	return mix(seed ^ mix(a ^ mix(b))) & 1;
}

/*
 * The write a coin is keyed by: its number since the device opened, or
 * with cut.relative its distance from the oldest pending write, which
 * the same ops give on any device, whatever ran before them.
 */
static uint64_t key(const struct crash_group *g, const struct hw_cut *c,
		    const struct crash_rec *r)
{
	return c->relative ? r->seq - g->key_base : r->seq;
}

/* Does unit k (ordinal in r) of absolute index u survive a tear? */
static bool unit_kept(const struct crash_dev *cd, const struct hw_cut *c,
		      const struct crash_rec *r, uint64_t k, uint64_t u)
{
	if (c->tear == HW_TEAR_UNITS)
		return k < c->units;
	return coin(c->seed, key(cd->g, c, r), u);
}

/*
 * The atomic units of r, in order, clipped to r:
 *
 *   unit     |.......|.......|.......|
 *   record      [=================]
 *   pieces      [====][======][===]     k = 0, 1, 2
 */
struct unit_iter {
	uint64_t a, b;      /* this piece            */
	uint64_t k, u;      /* ordinal, absolute index */
};

static bool unit_next(const struct crash_rec *r, uint32_t atomic,
		      struct unit_iter *it, bool first)
{
	uint64_t end = r->off + r->len;

	if (first) {
		it->a = r->off;
		it->k = 0;
	} else {
		it->a = it->b;
		it->k++;
	}
	if (it->a >= end)
		return false;
	it->u = it->a / atomic;
	it->b = (it->u + 1) * atomic;
	if (it->b > end)
		it->b = end;
	return true;
}

static int cut_check(const struct crash_group *g, const struct hw_cut *c,
		     uint64_t pending)
{
	if (c->kind < HW_CUT_DROP_ALL || c->kind > HW_CUT_MASK ||
	    c->tear < HW_TEAR_NONE || c->tear > HW_TEAR_UNITS)
		return -EINVAL;
	if (c->kind == HW_CUT_PREFIX && c->n > pending)
		return -EINVAL;
	if (c->kind == HW_CUT_MARK && c->n > g->next_seq)
		return -EINVAL;
	if (c->kind == HW_CUT_MASK && c->mask_bits && !c->mask)
		return -EINVAL;
	return 0;
}

/*
 * The group's next record in issue order after the cursors pos[] (one
 * per device), or false when none is left; ties keep joining order.
 */
static bool next_rec(const struct crash_group *g, size_t *pos,
		     struct crash_rec **out)
{
	size_t best = g->n;

	for (size_t m = 0; m < g->n; m++) {
		const struct crash_dev *cd = g->dev[m];

		if (pos[m] < cd->nrec && (best == g->n ||
		    cd->rec[pos[m]].seq <
		    g->dev[best]->rec[pos[best]].seq))
			best = m;
	}
	if (best == g->n)
		return false;
	*out = &g->dev[best]->rec[pos[best]++];
	return true;
}

/*
 * The fate of every record of the group under cut c: pending writes
 * are numbered in the group's issue order, whatever device took them.
 */
static int decide(struct crash_group *g, const struct hw_cut *c)
{
	size_t *pos = calloc(g->n, sizeof(*pos));
	struct crash_rec *r;
	bool torn_one = false;
	uint64_t pi = 0;

	if (!pos)
		return -ENOMEM;
	while (next_rec(g, pos, &r)) {
		bool keep;

		r->done = false;
		if (r->durable || r->lost) {
			r->fate = r->durable ? KEEP : DROP;
			continue;
		}
		switch (c->kind) {
		case HW_CUT_KEEP_ALL: keep = true; break;
		case HW_CUT_PREFIX:   keep = pi < c->n; break;
		case HW_CUT_MARK:     keep = r->seq < c->n; break;
		case HW_CUT_RANDOM:
			keep = coin(c->seed, key(g, c, r), UINT64_MAX);
			break;
		case HW_CUT_MASK:
			keep = pi < c->mask_bits &&
			       (c->mask[pi / 8] >> (pi % 8) & 1);
			break;
		default:              keep = false; break;
		}
		pi++;
		r->fate = keep ? KEEP : DROP;
		if (keep || c->tear == HW_TEAR_NONE)
			continue;
		if (c->kind == HW_CUT_PREFIX || c->kind == HW_CUT_MARK) {
			if (torn_one)
				continue;
			torn_one = true;
		}
		r->fate = TEAR;
	}
	free(pos);
	return 0;
}

/*
 * Sequential zones: walk each zone's records in order; the write
 * pointer ends where the first lost byte would have gone.  A lost
 * reset first puts back the zone it found (lost_zone_op); what came
 * after it in that zone is lost with it.
 */
static int cut_zones(struct crash_dev *cd, const struct hw_cut *c)
{
	struct unit_iter it;
	int rc;

	for (size_t i = 0; i < cd->nrec; i++) {
		const struct crash_rec *reset = NULL;
		uint64_t z, wp, end;
		bool lost = false;

		if (!cd->rec[i].seqzone || cd->rec[i].done)
			continue;
		z = zone_of(cd, cd->rec[i].off);
		wp = cd->rec[i].off;
		end = wp;
		for (size_t j = i; j < cd->nrec; j++) {
			struct crash_rec *r = &cd->rec[j];

			if (!r->seqzone || zone_of(cd, r->off) != z)
				continue;
			r->done = true;
			if (reset)
				continue;
			end = r->off + r->len;
			if (r->reset) {
				reset = r;
				wp = lost ? wp : end;
				continue;
			}
			if (lost)
				continue;
			if (r->fate == KEEP) {
				wp = end;
				continue;
			}
			lost = true;
			for (bool f = true; r->fate == TEAR &&
			     unit_next(r, cd->atomic, &it, f) &&
			     unit_kept(cd, c, r, it.k, it.u); f = false)
				wp = it.b;
		}
		if (reset && (rc = hw_zoned_restore(lower(cd), z, reset->data,
						    reset->len)))
			return rc;
		if (wp < end) {
			rc = hw_zoned_rewind(lower(cd), z, wp);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int put_bytes(struct crash_dev *cd, uint64_t off, const uint8_t *data,
		     uint64_t len)
{
	if (data)
		return hw_write(lower(cd), off, data, (size_t)len, 0);
	return hw_zero_out(lower(cd), off, len, 0);
}

/*
 * Undo one record, newest first: the device holds what r wrote, so it
 * is read first (a zero-out's are zeros), whatever this cut decided for
 * r.  A cut that fails after some undo forgets nothing, and the next
 * cut, which may keep r, finds r's range undone already: what r wrote
 * must have been read by then.  r->data is set only once it holds it.
 */
static int undo(struct crash_dev *cd, struct crash_rec *r)
{
	if (!r->zeros && !r->data) {
		uint8_t arena = r->arena;
		uint8_t *d = rec_bytes(cd, r->len, &arena, REC_DATA_ARENA);
		int rc;

		if (!d)
			return -ENOMEM;
		rc = hw_read(lower(cd), r->off, d, (size_t)r->len);
		if (rc) {
			if (!(arena & REC_DATA_ARENA))
				free(d);
			return rc;
		}
		r->data = d;
		r->arena = arena;
	}
	return put_bytes(cd, r->off, r->old, r->len);
}

/* Everything else: undo newest first, redo what survives oldest first. */
static int cut_plain(struct crash_dev *cd, const struct hw_cut *c)
{
	struct unit_iter it;
	int rc;

	for (size_t i = cd->nrec; i-- > 0;)
		if (!cd->rec[i].seqzone && (rc = undo(cd, &cd->rec[i])))
			return rc;
	for (size_t i = 0; i < cd->nrec; i++) {
		const struct crash_rec *r = &cd->rec[i];

		if (r->seqzone || r->fate == DROP)
			continue;
		if (r->fate == KEEP) {
			rc = put_bytes(cd, r->off, r->data, r->len);
			if (rc)
				return rc;
			continue;
		}
		for (bool f = true; unit_next(r, cd->atomic, &it, f); f = false) {
			if (!unit_kept(cd, c, r, it.k, it.u))
				continue;
			rc = put_bytes(cd, it.a,
				       r->data ? r->data + (it.a - r->off) : NULL,
				       it.b - it.a);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int64_t pending_count(const struct crash_dev *cd, uint64_t *bytes)
{
	int64_t n = 0;

	if (bytes)
		*bytes = 0;
	for (size_t i = 0; i < cd->nrec; i++) {
		if (cd->rec[i].durable || cd->rec[i].lost)
			continue;
		n++;
		if (bytes)
			*bytes += cd->rec[i].len;
	}
	return n;
}

static uint64_t group_pending(const struct crash_group *g)
{
	uint64_t n = 0;

	for (size_t m = 0; m < g->n; m++)
		n += (uint64_t)pending_count(g->dev[m], NULL);
	return n;
}

static struct crash_dev *find(struct hw_dev *dev)
{
	return (struct crash_dev *)hw_layer_find(dev, &crash_ops);
}

/*
 * Whether the decided cut keeps every record of the group as it is: no
 * write dropped, torn or lost, and no cut left the devices half undone.
 * The devices then hold the crash image already, and undoing every
 * record to redo every one would write back the very bytes there.
 */
static bool keeps_everything(const struct crash_group *g)
{
	if (g->cut_unfinished)
		return false;
	for (size_t m = 0; m < g->n; m++)
		for (size_t i = 0; i < g->dev[m]->nrec; i++)
			if (g->dev[m]->rec[i].fate != KEEP)
				return false;
	return true;
}

/* Put one device of the group back as the decided cut leaves it (as it
 * is, when the cut keeps everything). */
static int cut_dev(struct crash_dev *cd, const struct hw_cut *cut, bool as_is)
{
	/* Zones first: a device that cannot rewind fails before any change. */
	int rc = as_is ? 0 : cut_zones(cd, cut);

	if (!rc && !as_is)
		rc = cut_plain(cd, cut);
	if (!rc)
		rc = hw_flush(lower(cd));
	if (!rc && (rc = hw_zoned_power_cycle(lower(cd))) == -EOPNOTSUPP)
		rc = 0;
	return rc;
}

int hw_crash_cut(struct hw_dev *dev, const struct hw_cut *cut)
{
	static const struct hw_cut drop_all;
	struct crash_dev *cd = find(dev);
	struct crash_group *g;
	bool as_is;
	int rc;

	if (!cd)
		return -EINVAL;
	g = cd->g;
	if (!cut)
		cut = &drop_all;
	/* settled: what was written since is not recorded, so only a cut
	 * that keeps it all can say what the device holds */
	if (g->settled && cut->kind != HW_CUT_KEEP_ALL)
		return -EBUSY;
	rc = cut_check(g, cut, group_pending(g));
	if (rc)
		return rc;
	g->key_base = g->next_seq;
	for (size_t m = 0; m < g->n; m++)
		for (size_t i = 0; i < g->dev[m]->nrec; i++) {
			const struct crash_rec *r = &g->dev[m]->rec[i];

			if (!r->durable && r->seq < g->key_base)
				g->key_base = r->seq;
		}
	rc = decide(g, cut);
	if (rc)
		return rc;
	as_is = keeps_everything(g);
	g->cut_unfinished = !as_is;
	for (size_t m = 0; m < g->n && !rc; m++)
		rc = cut_dev(g->dev[m], cut, as_is);
	if (rc)
		return rc;
	g->cut_unfinished = false;
	for (size_t m = 0; m < g->n; m++) {
		forget_all(g->dev[m]);
		g->dev[m]->cuts++;
	}
	if (g->power_off) {  /* the power is back; the plan is done */
		memset(&g->plan, 0, sizeof(g->plan));
		g->power_off = false;
		g->lost = 0;
	}
	return 0;
}

int64_t hw_crash_pending(struct hw_dev *dev)
{
	struct crash_dev *cd = find(dev);

	return cd ? pending_count(cd, NULL) : -EINVAL;
}

int hw_crash_trim(struct hw_dev *dev)
{
	struct crash_dev *cd = find(dev);

	if (!cd)
		return -EINVAL;
	if (cd->nrec)
		return -EBUSY;
	hw_arena_free(&cd->arena);
	return 0;
}

int64_t hw_crash_mark(struct hw_dev *dev)
{
	struct crash_dev *cd = find(dev);

	return cd ? (int64_t)cd->g->next_seq : -EINVAL;
}

int hw_crash_info(struct hw_dev *dev, struct hw_crash_info *out)
{
	struct crash_dev *cd = find(dev);

	if (!cd || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->pending = (uint64_t)pending_count(cd, &out->pending_bytes);
	out->next_mark = cd->g->next_seq;
	out->durable_points = cd->points;
	out->cuts = cd->cuts;
	out->atomic = cd->atomic;
	out->plan_points = cd->g->plan_points;
	out->power_off = cd->g->power_off;
	out->lost = cd->g->lost;
	out->devices = (uint32_t)cd->g->n;
	out->settled = cd->g->settled;
	for (size_t i = 0; i < cd->nrec; i++)
		out->held_bytes += (cd->rec[i].old ? cd->rec[i].len : 0) +
				   (cd->rec[i].data ? cd->rec[i].len : 0);
	return 0;
}

int hw_crash_power_off(struct hw_dev *dev, uint64_t *lost)
{
	struct crash_dev *cd = find(dev);

	if (!cd)
		return -EINVAL;
	if (lost)
		*lost = cd->g->lost;
	return cd->g->power_off;
}

int hw_crash_set_plan(struct hw_dev *dev, const struct hw_crash_plan *plan)
{
	struct crash_dev *cd = find(dev);
	struct crash_group *g;

	if (!cd)
		return -EINVAL;
	g = cd->g;
	/* after a failure, a zone reset must be undone: the model only */
	for (size_t m = 0; m < g->n; m++)
		if (g->dev[m]->seq_start != UINT64_MAX &&
		    !hw_zoned_emulated(lower(g->dev[m])))
			return -EOPNOTSUPP;
	if (g->power_off || (plan && g->settled))
		return -EBUSY;   /* cut first; no plan while settled */
	memset(&g->plan, 0, sizeof(g->plan));
	if (plan)
		g->plan = *plan;
	g->plan_points = 0;
	return 0;
}

int hw_crash_settle(struct hw_dev *dev, bool settled)
{
	struct crash_dev *cd = find(dev);
	struct crash_group *g;

	if (!cd)
		return -EINVAL;
	g = cd->g;
	if (settled && (g->power_off || g->plan.fail_at || g->plan.lie_count))
		return -EBUSY;
	/* settling: every pending write of the domain stays as it is, as
	 * the only cut still allowed (keep all) would leave it */
	if (settled)
		for (size_t m = 0; m < g->n; m++)
			forget_all(g->dev[m]);
	g->settled = settled;
	return 0;
}

/* Leave cd's group; the last one out frees it. */
static void group_leave(struct crash_dev *cd)
{
	struct crash_group *g = cd->g;
	size_t k = 0;

	for (size_t m = 0; m < g->n; m++)
		if (g->dev[m] != cd)
			g->dev[k++] = g->dev[m];
	g->n = k;
	cd->g = NULL;
	if (k == 0) {
		free(g->dev);
		free(g);
	}
}

static struct crash_group *group_new(struct crash_dev *cd)
{
	struct crash_group *g = calloc(1, sizeof(*g));

	if (g)
		g->dev = calloc(1, sizeof(*g->dev));
	if (!g || !g->dev) {
		free(g);
		return NULL;
	}
	g->dev[g->n++] = cd;
	cd->g = g;
	return g;
}

static bool quiet(const struct crash_group *g)
{
	for (size_t m = 0; m < g->n; m++)
		if (g->dev[m]->nrec)
			return false;
	return !g->power_off && !g->plan.fail_at && !g->plan.lie_count;
}

int hw_crash_join(struct hw_dev *a, struct hw_dev *b)
{
	struct crash_dev *ca = find(a), *cb = find(b);
	struct crash_group *ga, *gb;
	struct crash_dev **p;

	if (!ca || !cb)
		return -EINVAL;
	ga = ca->g;
	gb = cb->g;
	if (ga == gb)
		return 0;
	if (!quiet(ga) || !quiet(gb) || ga->settled || gb->settled)
		return -EBUSY;
	p = realloc(ga->dev, (ga->n + gb->n) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	ga->dev = p;
	if (gb->next_seq > ga->next_seq)
		ga->next_seq = gb->next_seq;
	for (size_t m = 0; m < gb->n; m++) {
		gb->dev[m]->g = ga;
		ga->dev[ga->n++] = gb->dev[m];
	}
	free(gb->dev);
	free(gb);
	return 0;
}

static void crash_destroy(struct hw_dev *dev)
{
	struct crash_dev *cd = to_crash(dev);

	forget_all(cd);
	hw_arena_free(&cd->arena);
	free(cd->rec);
	free(cd->spare);
	group_leave(cd);
	hw_layer_destroy(dev);
}

static const struct hw_ops crash_ops = {
	.name = "crash",
	.read = hw_layer_read,
	.view = hw_layer_view,
	.write = crash_write,
	.flush = crash_flush,
	.zero_out = crash_zero_out,
	.discard = crash_discard,
	.destroy = crash_destroy,
	.persist = crash_persist,
	.report_zones = hw_layer_report_zones,
	.zone_mgmt = crash_zone_mgmt,
	.zone_append = crash_zone_append,
	.describe = hw_layer_describe,
};

static int crash_open(const struct hw_opts *o, struct hw_dev *low,
		      struct hw_dev **out, char *err, size_t errlen)
{
	struct crash_dev *cd;
	uint32_t atomic;
	int rc;

	rc = hw_opts_u32(o, "atomic", low->geo.atomic_write, &atomic, err,
			 errlen);
	if (rc)
		return rc;
	if (atomic == 0 || atomic > (1u << 20) || (atomic & (atomic - 1)))
		return hw_errf(err, errlen, -EINVAL,
			       "atomic=%u in '%s' must be a power of two from 1 to 1m",
			       atomic, o->spec);
	/* a cut rewinds a zone's write pointer to what survived, and write
	 * pointers move in sectors */
	if ((low->geo.caps & HW_CAP_ZONED) && atomic < low->geo.sector_size)
		return hw_errf(err, errlen, -EINVAL,
			       "atomic=%u in '%s': a zoned device tears in whole "
			       "sectors (%u bytes), since its write pointers "
			       "move in them", atomic, o->spec,
			       low->geo.sector_size);
	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			       o->spec);
	if (!group_new(cd)) {
		free(cd);
		return hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			       o->spec);
	}
	hw_layer_init(&cd->l, &crash_ops, low);
	cd->atomic = atomic;
	cd->l.dev.geo.atomic_write = atomic;
	cd->seq_start = (low->geo.caps & HW_CAP_ZONED)
			? low->geo.nr_conv * low->geo.zone_size : UINT64_MAX;
	*out = &cd->l.dev;
	return 0;
}

static const char *const crash_keys[] = { "atomic", NULL };

const struct hw_layer_kind hw_crash_layer = {
	.kind = "crash",
	.usage = "crash[atomic=N]:SPEC",
	.keys = crash_keys,
	.ops = &crash_ops,
	.open = crash_open,
};
