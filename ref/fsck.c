/*
 * fsck.c - the audit: recompute everything from scratch and compare.
 *
 * It rebuilds, from the inode table and every extent B+tree, which data
 * blocks are referenced (each exactly once, B+tree nodes included) and
 * compares that with the bitmap and all free counts.  Per file it checks
 * record order, overlap, lengths, canonical merging, block and record
 * counts, that no written block lies wholly past EOF and (on devices that
 * store data) that the EOF block's bytes past EOF read as zero.  It runs
 * on a mounted filesystem (ref_audit) or on an image (ref_fsck: a
 * read-only mount, recovering the log in memory only).
 */
#include "ref/ref_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* One referenced run of device blocks, and who referenced it. */
struct ref_run {
	uint64_t start, len;
	uint64_t ino;
	const char *what;
};

struct audit {
	struct ref_fs *fs;
	struct ref_run *runs;   /* every reference found (sparse: a 64 TiB */
	size_t nruns, cap;      /* device costs what its files map)        */
	int bad;
	/* per-file walk state */
	struct ref_inode *ip;
	struct ref_extent prev;
	bool have_prev;
	uint64_t nrecs, nblocks;
};

static int mark_used(struct audit *a, uint64_t blk, uint64_t len,
		     const char *what)
{
	struct ref_fs *fs = a->fs;

	if (blk < fs->data || blk + len > fs->total || blk + len < blk) {
		ref_report(fs, "inode %llu: %s %llu+%llu outside the data region",
			   (unsigned long long)a->ip->ino, what,
			   (unsigned long long)blk, (unsigned long long)len);
		a->bad = 1;
		return 0;
	}
	if (a->nruns == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 256;
		struct ref_run *n = realloc(a->runs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		a->runs = n;
		a->cap = ncap;
	}
	a->runs[a->nruns++] = (struct ref_run){ blk, len, a->ip->ino, what };
	return 0;
}

static int run_cmp(const void *x, const void *y)
{
	const struct ref_run *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* Sort the references; any overlap is a block referenced twice. */
static void check_overlaps(struct audit *a)
{
	qsort(a->runs, a->nruns, sizeof(*a->runs), run_cmp);
	for (size_t i = 1; i < a->nruns; i++) {
		const struct ref_run *p = &a->runs[i - 1], *r = &a->runs[i];

		if (p->start + p->len > r->start) {
			ref_report(a->fs, "block %llu is referenced twice: %s of "
				   "inode %llu and %s of inode %llu",
				   (unsigned long long)r->start, p->what,
				   (unsigned long long)p->ino, r->what,
				   (unsigned long long)r->ino);
			a->bad = 1;
		}
	}
}

static int node_block(void *arg, uint64_t blk)
{
	return mark_used(arg, blk, 1, "B+tree node");
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

static int visit_extent(void *arg, const void *rec)
{
	struct audit *a = arg;
	struct ref_fs *fs = a->fs;
	struct ref_extent e;
	uint64_t eofb = fs_blocks_roundup(fs, a->ip->size);

	xrec_decode(rec, &e);
	a->nrecs++;
	a->nblocks += e.len;
	if (e.len == 0 || e.len > fs->maxext)
		bad_file(a, "record at file block %llu has length %llu (max %u)",
			 (unsigned long long)e.fileoff, (unsigned long long)e.len,
			 fs->maxext);
	if (e.state & ~REF_EXT_UNWRITTEN)
		bad_file(a, "record at file block %llu has unknown state %u",
			 (unsigned long long)e.fileoff, e.state);
	if (a->have_prev) {
		const struct ref_extent *p = &a->prev;

		if (p->fileoff + p->len > e.fileoff)
			bad_file(a, "records at file blocks %llu and %llu overlap",
				 (unsigned long long)p->fileoff,
				 (unsigned long long)e.fileoff);
		else if (p->fileoff + p->len == e.fileoff &&
			 p->startblk + p->len == e.startblk &&
			 p->state == e.state && p->len + e.len <= fs->maxext)
			bad_file(a, "records at file blocks %llu and %llu should "
				 "have been merged", (unsigned long long)p->fileoff,
				 (unsigned long long)e.fileoff);
	}
	if (e.state == 0 && e.fileoff + e.len > eofb &&
	    !(a->ip->flags & REF_IF_ORPHAN))
		bad_file(a, "written blocks %llu..%llu lie past EOF (size %llu)",
			 (unsigned long long)(e.fileoff > eofb ? e.fileoff : eofb),
			 (unsigned long long)(e.fileoff + e.len - 1),
			 (unsigned long long)a->ip->size);
	mark_used(a, e.startblk, e.len, "data");
	a->prev = e;
	a->have_prev = true;
	return 0;
}

/* Bytes of the EOF block past EOF must read as zero on the device. */
static int check_eof_tail(struct audit *a)
{
	struct ref_fs *fs = a->fs;
	uint64_t size = a->ip->size, tail = size & (fs->bs - 1);
	struct ref_extent e;
	int err;

	/* A read-only check of a crashed image cannot expect it yet: mount
	 * restores it (file_zero_eof_tails). */
	if (!tail || !(hw_caps(fs->dev) & HW_CAP_STORES_DATA) ||
	    (fs->unclean && fs->rdonly))
		return 0;
	err = bmap_lookup(fs, a->ip, size >> fs->bshift, &e);
	if (err)
		return err;
	if (e.state != 0)
		return 0;
	err = hw_read(fs->dev, ((e.startblk + ((size >> fs->bshift) - e.fileoff))
				<< fs->bshift) + tail, fs->scratch, fs->bs - tail);
	if (err)
		return err;
	for (uint64_t i = 0; i < fs->bs - tail; i++) {
		if (fs->scratch[i]) {
			bad_file(a, "byte %llu past EOF (size %llu) is 0x%02x, "
				 "not zero", (unsigned long long)(size + i),
				 (unsigned long long)size, fs->scratch[i]);
			break;
		}
	}
	return 0;
}

/*
 * The in-core inode must match its slot in the table byte for byte (the
 * slot's own sanity was checked by inode_decode when it was loaded, and
 * every later change went through inode_log).
 */
static int check_slot(struct audit *a, struct ref_inode *ip)
{
	struct ref_fs *fs = a->fs;
	uint8_t want[INODE_SIZE];
	struct rbuf *b;
	int err;

	err = buf_read(fs, inode_blkno(fs, ip->ino), MAGIC_INODES, &b);
	if (err)
		return err;
	inode_encode(ip, want);
	if (memcmp(want, b->data + inode_slot_off(fs, ip->ino), INODE_SIZE)) {
		ref_report(fs, "inode %llu: in-memory inode differs from its slot",
			   (unsigned long long)ip->ino);
		a->bad = 1;
	}
	buf_put(fs, b);
	return 0;
}

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
	err = check_slot(a, ip);
	if (err)
		return err;
	if (ip->type != ITYPE_FILE)
		return 0;
	bmap_tree(fs, ip, &t);
	err = bt_check(&t, node_block, a, &nrecs, why, sizeof(why));
	if (err == -EFSCORRUPTED) {
		bad_file(a, "extent B+tree: %s", why);
		return 0;
	}
	if (err)
		return err;
	err = bt_iterate(&t, 0, visit_extent, a);
	if (err)
		return err;
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

int fsck_run(struct ref_fs *fs)
{
	struct audit a = { .fs = fs };
	int err = 0;

	for (uint32_t i = 0; i < fs->ninodes && !err; i++)
		err = audit_file(&a, &fs->inodes[i]);
	if (!err) {
		struct alloc_run *runs = NULL;

		check_overlaps(&a);
		runs = malloc((a.nruns ? a.nruns : 1) * sizeof(*runs));
		if (!runs)
			err = -ENOMEM;
		for (size_t i = 0; !err && i < a.nruns; i++)
			runs[i] = (struct alloc_run){ a.runs[i].start, a.runs[i].len };
		if (!err)
			err = alloc_check(fs, runs, a.nruns);
		free(runs);
		if (err == -EFSCORRUPTED) {
			a.bad = 1;
			err = 0;
		}
	}
	free(a.runs);
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

	fs->msg = msg;
	fs->msg_arg = arg;
	err = fsck_run(fs);
	fs->msg = saved;
	fs->msg_arg = saved_arg;
	fs->ctr = saved_ctr;
	return err;
}

int ref_fsck(struct hw_dev *dev, ref_msg_fn msg, void *arg)
{
	struct ref_mount_opts o = { .flags = REF_MOUNT_RDONLY, .msg = msg,
				    .msg_arg = arg };
	struct ref_fs *fs;
	int err = ref_mount(dev, &o, &fs);

	if (err)
		return err;
	err = fsck_run(fs);
	ref_abandon(fs);
	return err;
}
