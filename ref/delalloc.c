/*
 * delalloc.c - delayed allocation: buffered writes into holes reserve
 * delalloc pages instead of blocks, and writeback turns them into
 * extents.
 *
 * A buffered write into a hole of a file that can take it (da_applies)
 * allocates nothing: it reserves one block per new page and dirties the
 * page, flagged delalloc.  Writeback (pcache.c's writeback_map, for
 * fsync, sync, writeback, unmount, collapse/insert, and when delalloc
 * pages reach the dirty limit) hands each delalloc page it meets to
 * da_writeback_run, which finds the run of delalloc pages starting there
 * (btrfs's find_lock_delalloc_range), locks it (the writeback mark), and
 * writes it:
 *
 *   uncompressed   the direct write path (file_write_through) in pieces
 *                  of at most the file's max extent size and DA_BUF;
 *   compressed     async chunks of 512 KiB, each cut into pieces of at
 *                  most 128 KiB of input (compress.c).
 *
 * How long a run one call locks, and where the max extent size caps it,
 * is seed path (e): delalloc_cap.c, with da_writeback_run, its
 * dispatcher.  This file keeps the reservation side (da_write, the dirty
 * limit, the room left on each device), flushing a range, and the two
 * helpers every writer of a run uses (da_gather, da_write_plain).
 */
#include "ref/delalloc_internal.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "base/poison.h"

/*
 * A delalloc state's scratch (its DA_BUF piece buffer, the frame and
 * decode buffers, the compression contexts; not the frames the audit
 * found decoding, which are freed) outlives its mount: unmount parks the
 * state here and the next da_get of any filesystem in the process takes
 * it back.  A process that mounts for every input (the
 * fuzz targets: two engines each) would otherwise map, fault and unmap
 * a megabyte or more per input, which under ASan was a seventh of the
 * `diff` target's time.  Parked buffers are poisoned (base/poison.h), so
 * a use after unmount is still an error under ASan, and their bytes are
 * uninitialised again under MSan when they come back.
 */
#define DA_PARKED 4
static _Atomic(struct delalloc *) parked[DA_PARKED];

static void scratch_idle(struct delalloc *da, bool idle)
{
	void (*fn)(void *, size_t) = idle ? mem_idle : mem_reuse;

	if (da->buf)
		fn(da->buf, DA_BUF);
	if (da->zbuf)
		fn(da->zbuf, da->zcap);
	if (da->cbuf)
		fn(da->cbuf, da->ccap);
}

static struct delalloc *unpark(void)
{
	for (unsigned i = 0; i < DA_PARKED; i++) {
		struct delalloc *da = atomic_exchange(&parked[i], NULL);

		if (da) {
			scratch_idle(da, false);
			return da;
		}
	}
	return calloc(1, sizeof(struct delalloc));
}

/* Park da (its scratch idle): 1, or 0 with every slot taken. */
static int park(struct delalloc *da)
{
	for (unsigned i = 0; i < DA_PARKED; i++) {
		struct delalloc *none = NULL;

		if (atomic_compare_exchange_strong(&parked[i], &none, da))
			return 1;
	}
	return 0;
}

unsigned da_parked(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < DA_PARKED; i++)
		n += atomic_load(&parked[i]) != NULL;
	return n;
}

int da_get(struct ref_fs *fs, struct delalloc **out)
{
	struct delalloc *da = fs->da;

	if (!da) {
		da = unpark();
		if (!da)
			return -ENOMEM;
		fs->da = da;
	}
	if (!da->buf) {
		da->buf = malloc(DA_BUF);
		if (!da->buf)
			return -ENOMEM;
	}
	*out = da;
	return 0;
}

void da_unmount(struct ref_fs *fs)
{
	struct delalloc *da = fs->da;

	if (!da)
		return;
	fs->da = NULL;
	/* the workers go; da keeps only its scratch, all else as calloc
	 * left it, and is parked if a slot is free */
	compr_stop_workers(da);
	compr_forget_checked(da);
	*da = (struct delalloc){ .buf = da->buf, .zbuf = da->zbuf,
				 .zcap = da->zcap, .cbuf = da->cbuf,
				 .ccap = da->ccap,
#if HAVE_ZSTD
				 .cctx = da->cctx, .dctx = da->dctx,
#endif
			       };
	scratch_idle(da, true);
	if (park(da))
		return;
	scratch_idle(da, false);
	compr_free_scratch(da);
	free(da->buf);
	free(da);
}

/* Delalloc pages the cache may hold: all but an eighth (at least one). */
static uint64_t da_limit(const struct ref_fs *fs)
{
	uint64_t cap = fs->pc->capacity, keep = cap / 8 ? cap / 8 : 1;

	return cap > keep ? cap - keep : 0;
}

bool da_applies(const struct ref_fs *fs, const struct ref_inode *ip)
{
	return fs->pc && (fs->delalloc || compr_applies(fs, ip)) &&
	       !inode_journals_data(fs, ip) && !(ip->flags & REF_IF_COW) &&
	       file_unit(fs, ip) == 1 && da_limit(fs) > 0;
}

/*
 * The extent-map blocks that reserved delalloc pages (and one more) may
 * need when written back: each may become a record of its own (pages
 * apart, or extents of a block), and a tree of that many records has at
 * most bt_nodes_most nodes; never less than a sixteenth.
 */
static uint64_t da_map_margin(struct ref_fs *fs, struct ref_inode *ip,
			      uint64_t reserved)
{
	uint64_t most = bmap_nodes_most(fs, ip, reserved + 1);
	uint64_t least = 16 + reserved / 16;

	return most < UINT64_MAX - 16 && most + 16 > least ? most + 16 : least;
}

/* Blocks a new delalloc page of ip may still reserve. */
static uint64_t da_room(struct ref_fs *fs, struct ref_inode *ip)
{
	uint64_t have, reserved = fs->pc->ndelalloc[inode_is_rt(ip)];
	uint64_t margin = da_map_margin(fs, ip, reserved);

	if (inode_is_rt(ip)) {
		have = alloc_rt_usable(fs);
		/* the extent maps of rt files live on the data device */
		if (alloc_data_usable(fs) < margin)
			return 0;
		margin = 0;
	} else {
		/* what a data allocation may take: not the B+tree reserve */
		have = alloc_data_usable(fs);
	}
	return have > reserved + margin ? have - reserved - margin : 0;
}

/*
 * A buffered write of [pos, *end) (inside one hole of ip) made delalloc:
 * pages reserved and dirtied.  *end comes back as far as it got; equal to
 * pos means "look the mapping up again" (writeback ran to make room).
 */
int da_write(struct ref_fs *fs, struct ref_inode *ip, uint64_t pos,
	     uint64_t *end, const uint8_t *src)
{
	uint64_t fb = pos >> fs->bshift, last = (*end - 1) >> fs->bshift;
	uint64_t n = last - fb + 1, used, room;
	int err;

	/* seed path (e)'s fallback trigger (delalloc_cap.c) */
	if (PATH_FALLBACK(fs, REF_PATH_DELALLOC_CAP))
		return da_write_direct(fs, ip, pos, end, src);
	used = fs->pc->ndelalloc[0] + fs->pc->ndelalloc[1];
	room = da_limit(fs) > used ? da_limit(fs) - used : 0;
	room = min64(room, da_room(fs, ip));
	if (room == 0) {
		/* over the dirty limit, or short of space: write back first */
		if (!used)
			return -ENOSPC;
		err = pcache_writeback(fs, NULL);
		if (!err)
			err = tx_commit(fs);
		*end = pos;
		return err;
	}
	n = min64(n, room);
	*end = min64(*end, (fb + n) << fs->bshift);
	return pcache_delalloc(fs, ip, pos, *end, src);
}

/* Copy pages [index, index+n) into buf (zeroes for pages with no bytes). */
void da_gather(struct ref_fs *fs, struct pc_map *m, uint64_t index,
	       uint64_t n, uint8_t *buf)
{
	for (uint64_t i = 0; i < n; i++) {
		struct pc_page *p = pc_peek_page(fs->pc, m, index + i);
		uint8_t *to = buf + (i << fs->bshift);

		if (fs->pc->nodata || !p)
			memset(to, 0, fs->bs);
		else
			memcpy(to, p->data, fs->bs);
	}
}

/* Write file blocks [fb, fb+n) from buf the direct way (inside EOF). */
int da_write_plain(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		   uint64_t n, const uint8_t *buf)
{
	uint64_t start = fb << fs->bshift, off = start;
	uint64_t end = min64((fb + n) << fs->bshift, ip->size);

	/* a short write is retried from where it stopped, which says why
	 * (-ENOSPC when the space ran out) */
	while (off < end) {
		int64_t r = file_write_through(fs, ip, buf + (off - start),
					       end - off, off, true);

		if (r <= 0)
			return r ? (int)r : -EIO;
		off += (uint64_t)r;
	}
	return 0;
}

int da_flush_range(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb0,
		   uint64_t fb1)
{
	struct pc_map *m;
	uint64_t idx = fb0;

	if (!fs->pc || !(fs->pc->ndelalloc[0] | fs->pc->ndelalloc[1]))
		return 0;
	m = pc_map_of(fs->pc, ip->ino);
	while (idx < fb1 && pc_find_marked(fs->pc, m, &idx, PC_DIRTY) &&
	       idx < fb1) {
		struct pc_page *p = pc_peek_page(fs->pc, m, idx);
		uint64_t next = idx + 1;

		if (p && p->delalloc) {
			int err = da_writeback_run(fs, ip, idx, &next);

			if (err)
				return err;
		}
		idx = next;
	}
	return 0;
}
