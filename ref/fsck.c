/*
 * fsck.c - the audit: recompute everything from scratch and compare.
 *
 * It rebuilds, from the inode table and every extent B+tree, which data
 * blocks and which realtime blocks are referenced (each exactly once,
 * B+tree nodes included) and compares that with both bitmaps and all free
 * counts.  Per file it checks record order, overlap, lengths, canonical
 * merging, block and record counts, that no written block lies past the
 * EOF tail and (on devices that store data) that the tail's written bytes
 * past EOF read as zero.  A realtime file must map every rt extent it
 * touches whole, onto one aligned rt extent of the realtime device.  The
 * reference lists are sorted runs, so the audit costs what the files map,
 * not what the devices hold.  It runs on a mounted filesystem (ref_audit)
 * or on an image (ref_fsck: a read-only mount, recovering the log in
 * memory only).
 */
#include "ref/ref_internal.h"

#include "base/park.h"
#include "base/radix.h"
#include "ref/pcache.h"
#include "ref/reflink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One referenced run of device blocks, and who referenced it. */
struct ref_run {
	uint64_t start, len;
	uint64_t ino;
	const char *what;
};

/* Every reference found on one device (sparse: a 64 TiB device costs
 * what its files map). */
struct run_list {
	const char *device;     /* "data region", "realtime device" */
	const char *unit;       /* "block", "rt block" */
	uint64_t first, end;    /* valid blocks */
	struct ref_run *v;
	size_t n, cap;          /* cap: bytes (park_grow) */
};

/*
 * The audit's arrays come from the park (park_grow) and go back to it at
 * the end: an audit runs after every sync and remount of a fuzz input,
 * and malloc'ing its lists each time was most of an input's mallocs.
 */
struct scratch {
	void *p;
	size_t cap;             /* bytes */
};

/* Room for n elements of size sz in s (its bytes are not kept). */
static int scratch_room(struct scratch *s, size_t n, size_t sz)
{
	if (n > SIZE_MAX / sz)
		return -ENOMEM;
	return park_grow(&s->p, &s->cap, 0, (n ? n : 1) * sz);
}

static void scratch_free(struct scratch *s)
{
	park_free(s->p, s->cap);
	*s = (struct scratch){ 0 };
}

struct audit {
	struct ref_fs *fs;
	struct run_list data, rt;
	struct run_list shared; /* reflink: plain files' data, many owners */
	int bad;
	/* per-file walk state */
	struct ref_inode *ip;
	struct ref_extent prev;
	bool have_prev;
	uint64_t nrecs, nblocks;
	uint64_t rt_next;       /* realtime: the file block the next record
				   must start at (UINT64_MAX: an rt extent
				   boundary), and its rt block */
	uint64_t rt_next_blk;
	/* the records of the file's tree, kept as its check walks it */
	struct ref_extent *recs;
	size_t nkept, keptcap;  /* keptcap: bytes (park_grow) */
	/* check_bitmap's: the starts, their order, the runs in order */
	struct scratch start, ord, runs;
};

/* One more element of size sz in the array *v, which holds n of them in
 * *cap bytes. */
static int room_for_one(void **v, size_t *cap, size_t n, size_t sz)
{
	return park_grow(v, cap, n * sz, (n + 1) * sz);
}

static int mark_used(struct audit *a, struct run_list *l, uint64_t blk,
		     uint64_t len, const char *what)
{
	if (blk < l->first || blk + len > l->end || blk + len < blk) {
		ref_report(a->fs, "inode %llu: %s %llu+%llu outside the %s",
			   (unsigned long long)(a->ip ? a->ip->ino : 0), what,
			   (unsigned long long)blk, (unsigned long long)len,
			   l->device);
		a->bad = 1;
		return 0;
	}
	void *v = l->v;

	if (room_for_one(&v, &l->cap, l->n, sizeof(*l->v)))
		return -ENOMEM;
	l->v = v;
	l->v[l->n++] = (struct ref_run){ blk, len, a->ip ? a->ip->ino : 0, what };
	return 0;
}

/*
 * The order of l's references by start, in a->ord: their places in l
 * (radix.h: stable, so equal starts keep their places' order).  qsort's
 * calls through a comparison pointer were a fortieth of a soak.
 */
static int run_order(struct audit *a, const struct run_list *l)
{
	size_t n = l->n;
	uint64_t *start;
	int err = scratch_room(&a->start, n, sizeof(*start));

	if (!err)
		err = scratch_room(&a->ord, n, sizeof(uint32_t));
	if (err)
		return err;
	start = a->start.p;
	for (size_t i = 0; i < n; i++)
		start[i] = l->v[i].start;
	err = radix_order_u64(start, n, a->ord.p);
	return err == -EOVERFLOW ? -ENOMEM : err;
}

/*
 * Compare one device's references with its bitmap, in order of start;
 * any overlap of two neighbours in that order is a block referenced
 * twice.
 */
static int check_bitmap(struct audit *a, struct run_list *l,
			int (*check)(struct ref_fs *, const struct alloc_run *,
				     size_t))
{
	const struct ref_run *p = NULL;
	struct alloc_run *runs;
	const uint32_t *ord;
	int err = run_order(a, l);

	if (!err)
		err = scratch_room(&a->runs, l->n, sizeof(*runs));
	if (err)
		return err;
	ord = a->ord.p;
	runs = a->runs.p;
	for (size_t i = 0; i < l->n; i++) {
		const struct ref_run *r = &l->v[ord[i]];

		if (p && p->start + p->len > r->start) {
			ref_report(a->fs, "%s %llu is referenced twice: %s of "
				   "inode %llu and %s of inode %llu", l->unit,
				   (unsigned long long)r->start, p->what,
				   (unsigned long long)p->ino, r->what,
				   (unsigned long long)r->ino);
			a->bad = 1;
		}
		runs[i] = (struct alloc_run){ r->start, r->len };
		p = r;
	}
	err = check(a->fs, runs, l->n);
	if (err == -EFSCORRUPTED) {
		a->bad = 1;
		err = 0;
	}
	return err;
}

static int node_block(void *arg, uint64_t blk)
{
	struct audit *a = arg;

	return mark_used(a, &a->data, blk, 1, "B+tree node");
}

static void bad_file(struct audit *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void bad_file(struct audit *a, const char *fmt, ...)
{
	char line[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ref_report(a->fs, "inode %llu (%s): %s", (unsigned long long)a->ip->ino,
		   a->ip->name, line);
	a->bad = 1;
}

/*
 * A realtime file's records, in order, must tile each rt extent they
 * touch: a record starts an rt extent (aligned in the file and on the
 * device) or continues the previous record exactly, and the last record
 * of an rt extent ends it.
 */
static void check_rt_tiling(struct audit *a, const struct ref_extent *e)
{
	uint64_t R = a->fs->rtx;

	if (a->rt_next != UINT64_MAX &&
	    (e->fileoff != a->rt_next || e->startblk != a->rt_next_blk))
		bad_file(a, "rt extent at file block %llu is only partly mapped "
			 "(next record at file block %llu, rt block %llu)",
			 (unsigned long long)round_down(a->rt_next, R),
			 (unsigned long long)e->fileoff,
			 (unsigned long long)e->startblk);
	else if (a->rt_next == UINT64_MAX && (e->fileoff % R || e->startblk % R))
		bad_file(a, "record at file block %llu (rt block %llu) starts "
			 "inside an rt extent of %llu blocks: partly mapped",
			 (unsigned long long)e->fileoff,
			 (unsigned long long)e->startblk, (unsigned long long)R);
	a->rt_next = (e->fileoff + e->len) % R ? e->fileoff + e->len : UINT64_MAX;
	a->rt_next_blk = e->startblk + e->len;
}

/* One record of a file's sound tree, in key order. */
static int visit_extent(struct audit *a, const struct ref_extent *rec)
{
	struct ref_fs *fs = a->fs;
	struct ref_extent e = *rec;
	uint64_t tail = file_tail_end(fs, a->ip);
	bool rt = inode_is_rt(a->ip);

	a->nrecs++;
	if (e.len == 0 || e.len > file_maxext(fs, a->ip))
		bad_file(a, "record at file block %llu has length %llu (max "
			 "%llu%s)", (unsigned long long)e.fileoff,
			 (unsigned long long)e.len,
			 (unsigned long long)file_maxext(fs, a->ip),
			 file_zoned(fs, a->ip) ? ": the zone-append limit" : "");
	if (ext_compressed(&e)) {
		uint64_t plen = ext_plen(&e);

		if (!ext_compressed_shape_ok(fs, &e) ||
		    (e.state & ((1u << REF_EXT_PLEN_SHIFT) - 1)) !=
		    REF_EXT_COMPRESSED || !(a->ip->flags & REF_IF_CEXT) || fs->rl)
			bad_file(a, "compressed record at file block %llu: %llu "
				 "device blocks for %llu file blocks (state %#x)",
				 (unsigned long long)e.fileoff,
				 (unsigned long long)plen,
				 (unsigned long long)e.len, e.state);
		else if (hw_caps(file_dev(fs, a->ip)) & HW_CAP_STORES_DATA) {
			int err = compr_check(fs, a->ip, &e);

			if (err == -EFSCORRUPTED)
				a->bad = 1;
			else if (err)
				return err;
		}
	} else if (e.state & ~REF_EXT_UNWRITTEN) {
		bad_file(a, "record at file block %llu has unknown state %u",
			 (unsigned long long)e.fileoff, e.state);
	}
	a->nblocks += ext_plen(&e);
	if (a->have_prev) {
		const struct ref_extent *p = &a->prev;

		if (p->fileoff + p->len > e.fileoff)
			bad_file(a, "records at file blocks %llu and %llu overlap",
				 (unsigned long long)p->fileoff,
				 (unsigned long long)e.fileoff);
		else if (p->fileoff + p->len == e.fileoff &&
			 p->startblk + p->len == e.startblk &&
			 p->state == e.state && !ext_compressed(&e) &&
			 p->len + e.len <= file_maxext(fs, a->ip))
			bad_file(a, "records at file blocks %llu and %llu should "
				 "have been merged", (unsigned long long)p->fileoff,
				 (unsigned long long)e.fileoff);
	}
	if ((e.state == 0 || ext_compressed(&e)) && e.fileoff + e.len > tail &&
	    !(a->ip->flags & REF_IF_ORPHAN))
		bad_file(a, "written blocks %llu..%llu lie past EOF (size %llu)%s",
			 (unsigned long long)(e.fileoff > tail ? e.fileoff : tail),
			 (unsigned long long)(e.fileoff + e.len - 1),
			 (unsigned long long)a->ip->size,
			 rt ? " and its rt extent" : "");
	if (rt)
		check_rt_tiling(a, &e);
	a->prev = e;
	a->have_prev = true;
	return mark_used(a, rt ? &a->rt : fs->rl ? &a->shared : &a->data,
			 e.startblk, ext_plen(&e), rt ? "realtime data" : "data");
}

/* The tail's written bytes past EOF must read as zero on the device. */
static int check_eof_tail(struct audit *a)
{
	struct ref_fs *fs = a->fs;
	struct tail_bad bad;
	int err;

	/* A read-only check of a crashed image cannot expect it yet: mount
	 * restores it (file_zero_eof_tails). */
	if (!(hw_caps(file_dev(fs, a->ip)) & HW_CAP_STORES_DATA) ||
	    (fs->unclean && fs->rdonly))
		return 0;
	err = file_scan_eof_tail(fs, a->ip, false, &bad);
	if (!err && bad.off != UINT64_MAX)
		bad_file(a, "byte %llu past EOF (size %llu) is 0x%02x, not zero",
			 (unsigned long long)bad.off,
			 (unsigned long long)a->ip->size, bad.byte);
	return err;
}

/*
 * The in-core inode must match its slot in the table byte for byte (the
 * slot's own sanity was checked by inode_decode when it was loaded, and
 * every later change went through inode_log).
 */
/*
 * Every slot of one inode-table block against the in-memory inodes it
 * holds, from fs->inodes[*i] on (*i advanced past the block): one
 * buffer lookup a block, not one a slot, since a table of 1024 mostly
 * free slots was most of an audit's time.
 */
static int check_slots(struct audit *a, uint32_t *i)
{
	static const uint8_t zero_slot[INODE_SIZE];
	struct ref_fs *fs = a->fs;
	uint64_t blk = inode_blkno(fs, fs->inodes[*i].ino);
	uint8_t want[INODE_SIZE];
	struct rbuf *b;
	int err;

	err = buf_read(fs, blk, MAGIC_INODES, &b);
	if (err)
		return err;
	for (; *i < fs->ninodes && inode_blkno(fs, fs->inodes[*i].ino) == blk;
	     (*i)++) {
		const struct ref_inode *ip = &fs->inodes[*i];
		const uint8_t *expect = zero_slot;

		/* most slots were never used: all zeros, nothing to encode */
		if (!inode_encodes_zero(ip)) {
			inode_encode(ip, want);
			expect = want;
		}
		if (memcmp(expect, b->data + inode_slot_off(fs, ip->ino),
			   INODE_SIZE)) {
			ref_report(fs, "inode %llu: in-memory inode differs from "
				   "its slot", (unsigned long long)ip->ino);
			a->bad = 1;
		}
	}
	buf_put(fs, b);
	return 0;
}

/* bt_check_recs' callback: keep the record for visit_extent. */
static int keep_extent(void *arg, const void *rec)
{
	struct audit *a = arg;

	void *v = a->recs;

	if (room_for_one(&v, &a->keptcap, a->nkept, sizeof(*a->recs)))
		return -ENOMEM;
	a->recs = v;
	xrec_decode(rec, &a->recs[a->nkept++]);
	return 0;
}

/*
 * A file's extent tree, checked and read in one walk: its records are
 * judged (visit_extent) only once the whole tree has passed, in key
 * order, as a walk of a sound tree after its check would give them.
 */
static int audit_file(struct audit *a, struct ref_inode *ip)
{
	struct ref_fs *fs = a->fs;
	struct bt_tree t;
	char why[200] = "";
	uint64_t nrecs = 0;
	int err;

	a->ip = ip;
	a->have_prev = false;
	a->nrecs = a->nblocks = 0;
	a->rt_next = UINT64_MAX;
	if (ip->type != ITYPE_FILE)
		return 0;
	bmap_tree(fs, ip, &t);
	a->nkept = 0;
	err = bt_check_recs(&t, node_block, keep_extent, a, &nrecs, why,
			    sizeof(why));
	if (err == -EFSCORRUPTED) {
		bad_file(a, "extent B+tree: %s", why);
		return 0;
	}
	for (size_t i = 0; !err && i < a->nkept; i++)
		err = visit_extent(a, &a->recs[i]);
	if (err)
		return err;
	if (a->rt_next != UINT64_MAX)
		bad_file(a, "rt extent at file block %llu is only partly mapped "
			 "(its records end at file block %llu)",
			 (unsigned long long)round_down(a->rt_next, fs->rtx),
			 (unsigned long long)a->rt_next);
	if (a->nrecs != ip->nextents || a->nrecs != nrecs)
		bad_file(a, "%llu extent records, inode says %llu",
			 (unsigned long long)a->nrecs,
			 (unsigned long long)ip->nextents);
	if (a->nblocks != ip->nblocks)
		bad_file(a, "%llu blocks mapped, inode says %llu",
			 (unsigned long long)a->nblocks,
			 (unsigned long long)ip->nblocks);
	return check_eof_tail(a);
}

/*
 * Reflink: a data block may have several owners.  reflink.c checks the
 * owner counts against the refcount tree and hands back every block
 * once, with the refcount and COW staging trees' blocks and the staging
 * extents, for the bitmap check.
 */
static int audit_shared(struct audit *a)
{
	struct run_list *l = &a->shared;
	struct alloc_run *runs, *uni = NULL;
	size_t nuni = 0;
	int err = scratch_room(&a->runs, l->n, sizeof(*runs));

	if (err)
		return err;
	runs = a->runs.p;
	for (size_t i = 0; i < l->n; i++)
		runs[i] = (struct alloc_run){ l->v[i].start, l->v[i].len };
	err = reflink_audit(a->fs, runs, l->n, &uni, &nuni);
	if (err == -EFSCORRUPTED) {
		a->bad = 1;
		err = 0;
	}
	a->ip = NULL;
	for (size_t i = 0; !err && i < nuni; i++)
		err = mark_used(a, &a->data, uni[i].start, uni[i].len,
				"shared data or reflink metadata");
	free(uni);
	return err;
}

int fsck_run(struct ref_fs *fs)
{
	struct audit a = {
		.fs = fs,
		.data = { .device = "data region", .unit = "block",
			  .first = fs->data, .end = fs->total },
		.rt = { .device = "realtime device", .unit = "rt block",
			.first = 0, .end = fs->rtblocks },
		.shared = { .device = "data region", .unit = "block",
			    .first = fs->data, .end = fs->total },
	};
	int err = 0;

	/* the slots of each table block, then its files' extent trees */
	for (uint32_t i = 0, next = 0; i < fs->ninodes && !err;) {
		err = check_slots(&a, &next);
		for (; i < next && !err; i++)
			err = audit_file(&a, &fs->inodes[i]);
	}
	if (!err && fs->rl)
		err = audit_shared(&a);
	if (!err)
		err = check_bitmap(&a, &a.data, alloc_check);
	if (!err)
		err = check_bitmap(&a, &a.rt, alloc_check_rt);
	if (!err && fs->zoned) { /* zones agree with the rt bitmap */
		err = zoned_check(fs);
		a.bad |= err == -EFSCORRUPTED;
		err = err == -EFSCORRUPTED ? 0 : err;
	}
	park_free(a.data.v, a.data.cap);
	park_free(a.rt.v, a.rt.cap);
	park_free(a.shared.v, a.shared.cap);
	park_free(a.recs, a.keptcap);
	scratch_free(&a.start);
	scratch_free(&a.ord);
	scratch_free(&a.runs);
	if (err)
		return err;
	return a.bad ? -EFSCORRUPTED : 0;
}

/* The audit is not engine work: it leaves the work counters as it found them. */
int ref_audit(struct ref_fs *fs, ref_msg_fn msg, void *arg)
{
	struct ref_counters saved_ctr = fs->ctr;
	ref_msg_fn saved = fs->msg;
	void *saved_arg = fs->msg_arg;
	int err;

	if (fs->shutdown) {
		if (msg)
			msg(arg, "the filesystem is shut down (a metadata error "
			    "in the middle of an update): what it held in "
			    "memory is not audited; the next mount recovers "
			    "the last commit");
		return -EIO;
	}
	fs->msg = msg;
	fs->msg_arg = arg;
	err = fsck_run(fs);
	if (!err)
		err = pcache_audit(fs); /* the page cache's index and pages */
	fs->msg = saved;
	fs->msg_arg = saved_arg;
	fs->ctr = saved_ctr;
	return err;
}

int ref_fsck_opts(struct hw_dev *dev, const struct ref_mount_opts *opts)
{
	struct ref_mount_opts o = { 0 };
	struct ref_fs *fs;
	int err;

	if (opts)
		o = *opts;
	o.flags |= REF_MOUNT_RDONLY;
	err = ref_mount(dev, &o, &fs);
	if (err)
		return err;
	err = fsck_run(fs);
	ref_abandon(fs);
	return err;
}

int ref_fsck(struct hw_dev *dev, ref_msg_fn msg, void *arg)
{
	struct ref_mount_opts o = { .msg = msg, .msg_arg = arg };

	return ref_fsck_opts(dev, &o);
}
