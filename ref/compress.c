/*
 * compress.c - compressed extents: delalloc runs written as zstd frames,
 * read back by decoding, and rewritten plain before any partial change;
 * and the compression workers (mount workers=N).
 *
 * Writeback of a compressed file's delalloc run (delalloc_cap.c's
 * write_run, after the cap) comes here: async chunks of 512 KiB, each
 * cut into pieces of at most 128 KiB of input; a piece that compresses
 * by at least one block becomes one compressed extent
 * (REF_EXT_COMPRESSED, its frame in plen device blocks), any other goes
 * the uncompressed way (compress_fallbacks).  With workers, the chunks
 * are compressed on hw/'s worker pool while the calling thread submits
 * the frames in file order; allocation, the image and every counter are
 * those of the in-line loop.
 *
 * A compressed extent is never changed in part.  Before anything touches
 * part of one (an overwrite, a truncate, punch, zero, collapse or insert
 * range), compr_expand rewrites it plain: its bytes decompressed, new
 * blocks allocated and written, then in one transaction the compressed
 * record goes (its blocks freed) and the plain mapping comes.  Inodes
 * that ever held one carry REF_IF_CEXT so that others pay nothing.
 */
#include "ref/delalloc_internal.h"

#include <stdlib.h>

bool compress_available(void)
{
	return HAVE_ZSTD;
}

bool compr_applies(const struct ref_fs *fs, const struct ref_inode *ip)
{
	return HAVE_ZSTD && !fs->rl &&
	       (fs->compress != REF_COMPRESS_NONE || (ip->flags & REF_IF_COMPRESS));
}

void compr_stop_workers(struct delalloc *da)
{
	hw_workers_stop(da->pool);
	for (unsigned i = 0; i < da->nslots; i++) {
		struct da_slot *s = &da->slots[i];

		free(s->in);
		free(s->out);
		free(s->pc);
	}
	free(da->slots);
#if HAVE_ZSTD
	for (unsigned i = 0; i < da->nwctx; i++)
		ZSTD_freeCCtx(da->wctx[i]);
	free(da->wctx);
#endif
}

void compr_free_scratch(struct delalloc *da)
{
	free(da->zbuf);
	free(da->cbuf);
#if HAVE_ZSTD
	ZSTD_freeCCtx(da->cctx);
	ZSTD_freeDCtx(da->dctx);
#endif
}

/* ---- compressing and decoding ---- */

#if HAVE_ZSTD
/* Compress n bytes of src; 0 when it does not pay (or cannot be done). */
static size_t compress_piece(struct ref_fs *fs, struct delalloc *da,
			     const uint8_t *src, size_t n)
{
	size_t bound = ZSTD_compressBound(n), r;

	if (!da->cctx) {
		da->cctx = ZSTD_createCCtx();
		if (!da->cctx)
			return 0;
	}
	if (da->zcap < bound) {
		uint8_t *nb = realloc(da->zbuf, bound + fs->bs);

		if (!nb)
			return 0;
		da->zbuf = nb;
		da->zcap = bound;
	}
	r = ZSTD_compressCCtx(da->cctx, da->zbuf, da->zcap, src, n,
			      fs->zlevel ? fs->zlevel : ZSTD_CLEVEL_DEFAULT);
	return ZSTD_isError(r) ? 0 : r;
}
#endif

/*
 * The frame of compressed extent e, its plen device blocks, in da->buf.
 * A record no writer makes (ext_compressed_shape_ok, the audit's rule,
 * which also keeps the frame within DA_BUF) is damage, reported before
 * its frame is read or its bytes are made room for.
 */
_Static_assert(DA_PIECE_BYTES <= DA_BUF, "a whole frame fits in da->buf");

static int read_frame(struct ref_fs *fs, const struct ref_inode *ip,
		      const struct ref_extent *e, struct delalloc *da)
{
	uint64_t plen = ext_plen(e);
	int err;

	if (!ext_compressed_shape_ok(fs, e)) {
		ref_report(fs, "inode %llu: compressed extent at file block %llu: "
			   "%llu device blocks for %llu", (unsigned long long)ip->ino,
			   (unsigned long long)e->fileoff, (unsigned long long)plen,
			   (unsigned long long)e->len);
		return -EFSCORRUPTED;
	}
	err = fdata_read(fs, ip, e->startblk << fs->bshift, da->buf,
			 plen << fs->bshift);
	if (!err)
		fs->ctr.data_bytes_read += plen << fs->bshift;
	return err;
}

/* Room for want bytes in da->cbuf. */
static int cbuf_room(struct delalloc *da, uint64_t want)
{
	if (da->ccap < want) {
		uint8_t *nb = realloc(da->cbuf, want);

		if (!nb)
			return -ENOMEM;
		da->cbuf = nb;
		da->ccap = want;
	}
	return 0;
}

/* The frame in da->buf decoded into da->cbuf: e's len blocks exactly. */
static int decode_frame(struct ref_fs *fs, const struct ref_inode *ip,
			const struct ref_extent *e, struct delalloc *da)
{
	uint64_t want = e->len << fs->bshift;

	if (cbuf_room(da, want))
		return -ENOMEM;
#if HAVE_ZSTD
	{
		size_t fsz = ZSTD_findFrameCompressedSize(da->buf,
							  ext_plen(e) << fs->bshift);
		size_t r = 0;

		if (!da->dctx)
			da->dctx = ZSTD_createDCtx();
		if (!da->dctx)
			return -ENOMEM;
		da->decodes++;
		if (!ZSTD_isError(fsz))
			r = ZSTD_decompressDCtx(da->dctx, da->cbuf, want, da->buf,
						fsz);
		if (ZSTD_isError(fsz) || ZSTD_isError(r) || r != want) {
			ref_report(fs, "inode %llu: compressed extent at file "
				   "block %llu (device block %llu) does not "
				   "decode to its %llu bytes",
				   (unsigned long long)ip->ino,
				   (unsigned long long)e->fileoff,
				   (unsigned long long)e->startblk,
				   (unsigned long long)want);
			return -EFSCORRUPTED;
		}
	}
	return 0;
#else
	(void)da;
	ref_report(fs, "inode %llu: a compressed extent, and this build has no "
		   "compression library", (unsigned long long)ip->ino);
	return -EOPNOTSUPP;
#endif
}

static struct da_checked *checked_slot(struct delalloc *da, uint64_t blk)
{
	/* the top bits of a Fibonacci hash */
	return &da->checked[(blk * 0x9e3779b97f4a7c15ull) >>
			    (64 - DA_CHECKED_SHIFT)];
}

/* Has the frame in da->buf (e's) decoded to e's length before? */
static bool checked_before(const struct ref_fs *fs, struct delalloc *da,
			   const struct ref_extent *e)
{
	const struct da_checked *k;
	size_t bytes = (size_t)(ext_plen(e) << fs->bshift);

	if (!da->checked)
		return false;
	k = checked_slot(da, e->startblk);
	return k->bytes == bytes && k->want == e->len << fs->bshift &&
	       memcmp(k->frame, da->buf, bytes) == 0;
}

/*
 * The bytes the frame in da->buf (e's, checked_before) decoded to, into
 * da->cbuf: true, or false when its slot kept none.
 */
static bool decoded_before(const struct ref_fs *fs, struct delalloc *da,
			   const struct ref_extent *e)
{
	const struct da_checked *k = checked_slot(da, e->startblk);
	uint64_t want = e->len << fs->bshift;

	if (!k->has_decoded || cbuf_room(da, want))
		return false;
	memcpy(da->cbuf, k->decoded, (size_t)want);
	return true;
}

/*
 * A copy of n bytes of src in *p (room *cap), while the copies of its
 * kind (*used of room in all) fit budget: true, or false with none kept.
 */
static bool keep_copy(uint8_t **p, size_t *cap, size_t *used, size_t budget,
		      const uint8_t *src, size_t n)
{
	if (*cap < n) {
		uint8_t *nb = NULL;

		if (*used - *cap + n <= budget)
			nb = realloc(*p, n);
		if (!nb)
			return false;
		*used += n - *cap;
		*p = nb;
		*cap = n;
	}
	memcpy(*p, src, n);
	return true;
}

/* Keep a copy of the frame in da->buf, just decoded to e's length (with
 * no memory or room for it, the next audit decodes it again), and of
 * what it decoded to (da->cbuf: for reads, within its own budget). */
static void keep_checked(const struct ref_fs *fs, struct delalloc *da,
			 const struct ref_extent *e)
{
	struct da_checked *k;
	size_t bytes = (size_t)(ext_plen(e) << fs->bshift);

	if (!da->checked) {
		da->checked = calloc(DA_CHECKED, sizeof(*da->checked));
		if (!da->checked)
			return;
	}
	k = checked_slot(da, e->startblk);
	k->bytes = 0;
	k->has_decoded = false;
	if (!keep_copy(&k->frame, &k->cap, &da->checked_bytes,
		       DA_CHECKED_BYTES, da->buf, bytes))
		return;
	k->want = e->len << fs->bshift;
	k->bytes = bytes;
	k->has_decoded = keep_copy(&k->decoded, &k->dcap, &da->decoded_bytes,
				   DA_DECODED_BYTES, da->cbuf,
				   (size_t)k->want);
}

uint64_t compr_decodes(const struct ref_fs *fs)
{
	return fs->da ? fs->da->decodes : 0;
}

size_t compr_kept_bytes(const struct ref_fs *fs)
{
	return fs->da ? fs->da->checked_bytes : 0;
}

void compr_forget_checked(struct delalloc *da)
{
	for (unsigned i = 0; da->checked && i < DA_CHECKED; i++) {
		free(da->checked[i].frame);
		free(da->checked[i].decoded);
	}
	free(da->checked);
	da->checked = NULL;
	da->checked_bytes = 0;
	da->decoded_bytes = 0;
}

/*
 * The bytes of compressed extent e, decoded into da->cbuf; for the
 * audit (audit), only whether they decode: a frame whose very bytes
 * decoded to this length before (checked_before) is not decoded again,
 * and a read of it takes the bytes its slot kept (decoded_before).
 */
static int decode_extent(struct ref_fs *fs, const struct ref_inode *ip,
			 const struct ref_extent *e, bool audit)
{
	struct delalloc *da;
	bool checked;
	int err = da_get(fs, &da);

	if (err)
		return err;
	/* the bytes decoded last serve a read; the audit reads the frame */
	if (!audit && da->c_valid && da->c_ino == ip->ino &&
	    da->c_off == e->fileoff && da->c_blk == e->startblk &&
	    da->c_state == e->state)
		return 0;
	err = read_frame(fs, ip, e, da);
	if (err)
		return err;
	checked = checked_before(fs, da, e);
	if (audit && checked)
		return 0;
	/* a read of bytes decoded before takes them from their slot */
	if (!checked || !decoded_before(fs, da, e)) {
		da->c_valid = false;
		err = decode_frame(fs, ip, e, da);
		if (err)
			return err;
		keep_checked(fs, da, e);
	}
	da->c_ino = ip->ino;
	da->c_off = e->fileoff;
	da->c_blk = e->startblk;
	da->c_state = e->state;
	da->c_valid = true;
	return 0;
}

int compr_read_block(struct ref_fs *fs, const struct ref_inode *ip,
		     const struct ref_extent *e, uint64_t fb, uint8_t *out)
{
	int err = decode_extent(fs, ip, e, false);

	if (!err)
		memcpy(out, fs->da->cbuf + ((fb - e->fileoff) << fs->bshift),
		       fs->bs);
	return err;
}

int compr_check(struct ref_fs *fs, const struct ref_inode *ip,
		const struct ref_extent *e)
{
	return decode_extent(fs, ip, e, true);
}

int compr_partial(struct ref_fs *fs, const struct ref_inode *ip,
		  uint64_t fb, const char *what)
{
	ref_report(fs, "inode %llu: %s part of a compressed extent at file "
		   "block %llu", (unsigned long long)ip->ino, what,
		   (unsigned long long)fb);
	return -EFSCORRUPTED;
}

/* A compressed extent's record went (freed or moved): forget its bytes. */
void compr_forget(struct ref_fs *fs)
{
	if (fs->da)
		fs->da->c_valid = false;
}

#if HAVE_ZSTD
/*
 * Allocate and write n blocks of data for ip, contiguous on the device:
 * *blk, or -ENOSPC-like failure with nothing left allocated.  *got < n
 * means the space was not contiguous (what was taken is given back).
 */
static int alloc_write(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		       const uint8_t *data, uint64_t n, uint64_t *blk,
		       uint64_t *got)
{
	int err;

	if (file_zoned(fs, ip)) /* appended with the allocation */
		err = zoned_append(fs, data, n, blk, got);
	else
		err = file_alloc_blocks(fs, ip, fb, n, true, blk, got);
	if (err)
		return err;
	if (*got < n)
		return file_unalloc(fs, ip, *blk, *got);
	if (file_zoned(fs, ip))
		return 0;
	fs->ctr.data_bytes_written += n << fs->bshift;
	return fdata_write(fs, ip, *blk << fs->bshift, data, n << fs->bshift);
}
#endif

/*
 * Blocks [blk, blk+n) were allocated for file block fb of an expansion:
 * record them in piece[] (so that they go back if anything fails before
 * the remap) and write their bytes.  New blocks, reached only by the
 * remap that commits after them: written in place even for a
 * journal-data file, whose log may be smaller than the extent.
 */
static int put_piece(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t blk, uint64_t n, const uint8_t *bytes,
		     struct ref_extent *piece, unsigned *np)
{
	piece[(*np)++] = (struct ref_extent){ fb, blk, n, 0 };
	fs->ctr.data_bytes_written += n << fs->bshift;
	return hw_write(file_dev(fs, ip), blk << fs->bshift, bytes,
			n << fs->bshift, 0);
}

/*
 * Rewrite compressed extent e plain: new blocks written first, then the
 * old record out and the new mapping in, in one transaction step.
 */
static int expand_one(struct ref_fs *fs, struct ref_inode *ip,
		      const struct ref_extent *e)
{
	struct ref_extent piece[64];
	unsigned np = 0;
	uint64_t done = 0;
	uint8_t *bytes;
	int err = decode_extent(fs, ip, e, false);

	if (err)
		return err;
	bytes = malloc(e->len << fs->bshift);
	if (!bytes)
		return -ENOMEM;
	memcpy(bytes, fs->da->cbuf, e->len << fs->bshift);
	/*
	 * No commit may fall between the first allocation and the remap (a
	 * cut would leak the blocks, and a reclaim would find blocks no file
	 * maps), so the allocator's commit retry is not used: one run, or
	 * pieces from the allocator, or on a zoned file appends, once a
	 * reclaim made room for them all (none can come between them then).
	 * One run is tried first, wherever free space has one: the first
	 * fit's pieces near the goal can be more than a step takes where
	 * free space is fragmented (ENOSPC with room left).
	 */
	if (file_zoned(fs, ip)) {
		err = zoned_make_room(fs, e->len);
	} else {
		uint64_t blk;

		err = file_alloc_whole(fs, ip, e->fileoff, e->len, &blk);
		if (!err) {
			done = e->len;
			err = put_piece(fs, ip, e->fileoff, blk, e->len, bytes,
					piece, &np);
		} else if (err == -ENOSPC) {
			err = 0;
		}
	}
	while (!err && done < e->len) {
		uint64_t blk, got = 0;
		uint64_t want = min64(e->len - done, da_max_extent(fs, ip));

		if (np == sizeof(piece) / sizeof(piece[0])) {
			err = -ENOSPC; /* too fragmented to do in one step */
			break;
		}
		if (file_zoned(fs, ip)) { /* appended with the allocation */
			err = zoned_append(fs, bytes + (done << fs->bshift),
					   want, &blk, &got);
			if (!err)
				piece[np++] = (struct ref_extent){
					e->fileoff + done, blk, got, 0 };
		} else {
			err = file_alloc_blocks(fs, ip, e->fileoff + done, want,
						false, &blk, &got);
			if (!err)
				err = put_piece(fs, ip, e->fileoff + done, blk,
						got, bytes + (done << fs->bshift),
						piece, &np);
		}
		done += got;
	}
	free(bytes);
	if (err) { /* nothing remapped yet: the pieces go back */
		for (unsigned i = 0; i < np; i++)
			(void)file_unalloc(fs, ip, piece[i].startblk,
					   piece[i].len);
		return err;
	}
	err = bmap_unmap_step(fs, ip, e->fileoff, e->len);
	for (unsigned i = 0; !err && i < np; i++)
		err = bmap_map(fs, ip, &piece[i]);
	if (err)
		return err;
	fs->ctr.compressed_expands++;
	err = inode_log(fs, ip);
	return err ? err : tx_maybe_roll(fs);
}

int compr_expand(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb0,
		 uint64_t fb1)
{
	uint64_t fb = fb0;

	if (!(ip->flags & REF_IF_CEXT))
		return 0;
	while (fb < fb1) {
		struct ref_extent e;
		int err = bmap_lookup(fs, ip, fb, &e);

		if (err)
			return err;
		if (e.state == BMAP_HOLE && e.fileoff + e.len >= UINT64_MAX - 1)
			return 0;
		if (ext_compressed(&e)) {
			err = expand_one(fs, ip, &e);
			if (err)
				return err;
		}
		fb = e.fileoff + e.len;
	}
	return 0;
}

/* ---- writing a run compressed ---- */

/* Is piece [fb, fb+n) worth compressing: 2 blocks or more, all a hole? */
static int piece_wants(struct ref_fs *fs, struct ref_inode *ip,
		       uint64_t fb, uint64_t n, bool *want)
{
	struct ref_extent e;
	int err = bmap_lookup(fs, ip, fb, &e);

	*want = !err && n >= 2 && e.state == BMAP_HOLE &&
		e.fileoff + e.len >= fb + n;
	return err;
}

/*
 * Submit one piece: its frame zbuf of csize bytes (room for whole
 * blocks) as one compressed extent if it pays and fits, else buf plain.
 */
static int submit_piece(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
			uint64_t n, const uint8_t *buf, uint8_t *zbuf,
			size_t csize)
{
#if HAVE_ZSTD
	struct ref_extent e;
	uint64_t plen, blk, got;
	int err;

	plen = (csize + fs->bs - 1) >> fs->bshift;
	if (csize && plen < n && plen <= da_max_extent(fs, ip)) {
		memset(zbuf + csize, 0, (plen << fs->bshift) - csize);
		err = alloc_write(fs, ip, fb, zbuf, plen, &blk, &got);
		if (err)
			return err;
		if (got == plen) {
			e = (struct ref_extent){ fb, blk, n,
				REF_EXT_COMPRESSED | (uint32_t)(plen << REF_EXT_PLEN_SHIFT) };
			err = bmap_map(fs, ip, &e);
			ip->flags |= REF_IF_CEXT;
			fs->tx_frames = true;
			if (!err)
				err = inode_log(fs, ip);
			if (!err)
				err = tx_maybe_roll(fs);
			fs->ctr.compressed_extents++;
			return err;
		}
	}
#else
	(void)zbuf;
	(void)csize;
#endif
	fs->ctr.compress_fallbacks++;
	return da_write_plain(fs, ip, fb, n, buf);
}

/* One piece of a chunk, in line: compressed if it pays and fits. */
static int write_piece(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		       uint64_t n, const uint8_t *buf)
{
	struct delalloc *da = fs->da;
	size_t csize = 0;
	bool want;
	int err = piece_wants(fs, ip, fb, n, &want);

	if (err)
		return err;
#if HAVE_ZSTD
	if (want)
		csize = compress_piece(fs, da, buf, n << fs->bshift);
#endif
	return submit_piece(fs, ip, fb, n, buf, da->zbuf, csize);
}

/* ---- compression workers (workers > 0) ---- */

#if HAVE_ZSTD
/*
 * A worker's job: compress the wanted pieces of slot i into the slot's
 * own frames with the worker's own context (kept warm in its cache).  It
 * touches nothing else, so the calling thread may read the results once
 * the batch is waited for.
 */
static void compress_chunk(void *arg, unsigned i, unsigned worker)
{
	struct da_batch *b = arg;
	struct da_slot *s = &b->set[i];
	ZSTD_CCtx *cctx = b->wctx[worker];

	for (unsigned k = 0; k < s->npieces; k++) {
		struct da_piece *p = &s->pc[k];
		size_t r;

		p->csize = 0;
		if (!p->want)
			continue;
		r = ZSTD_compressCCtx(cctx, s->out + p->ooff, p->ocap,
				      s->in + p->off, p->bytes, s->level);
		p->csize = ZSTD_isError(r) ? 0 : r;
	}
}

/* Slots for two sets of 2 x workers chunks, a context per worker, and
 * the pool; the pool is optional (NULL: the jobs run in line). */
static int slots_get(struct ref_fs *fs, struct delalloc *da)
{
	unsigned want = 4 * fs->workers;

	if (da->nslots >= want)
		return 0;
	if (!da->pool)
		(void)hw_workers_start(fs->workers, &da->pool);
	if (!da->slots)
		da->slots = calloc(want, sizeof(*da->slots));
	if (!da->wctx)
		da->wctx = calloc(fs->workers, sizeof(*da->wctx));
	if (!da->slots || !da->wctx)
		return -ENOMEM;
	for (; da->nwctx < fs->workers; da->nwctx++) {
		da->wctx[da->nwctx] = ZSTD_createCCtx();
		if (!da->wctx[da->nwctx])
			return -ENOMEM;
	}
	for (; da->nslots < want; da->nslots++) {
		da->slots[da->nslots].in = malloc(DA_CHUNK);
		if (!da->slots[da->nslots].in)
			return -ENOMEM;
	}
	for (unsigned k = 0; k < 2; k++)
		da->batch[k] = (struct da_batch){ da->slots + k * want / 2,
						  da->wctx };
	return 0;
}

/* Room for piece k of slot sl, and frame room up to need bytes. */
static int slot_room(struct da_slot *sl, unsigned k, size_t need)
{
	if (k >= sl->pcap) {
		unsigned c = sl->pcap ? 2 * sl->pcap : 8;
		struct da_piece *np = realloc(sl->pc, c * sizeof(*np));

		if (!np)
			return -ENOMEM;
		sl->pc = np;
		sl->pcap = c;
	}
	if (need > sl->outcap) {
		uint8_t *no = realloc(sl->out, need);

		if (!no)
			return -ENOMEM;
		sl->out = no;
		sl->outcap = need;
	}
	return 0;
}

/*
 * Fill slot sl with the chunk at fb of c blocks: its pieces (cut as the
 * in-line loop cuts them), their bytes, and room for each frame (its bound and a block of
 * padding: submit_piece pads a frame to whole blocks).
 */
static int slot_fill(struct ref_fs *fs, struct pc_map *m,
		     struct da_slot *sl, uint64_t fb, uint64_t c,
		     uint64_t piece)
{
	uint64_t in = 0;
	size_t out = 0;
	int err = 0;

	sl->npieces = 0;
	sl->level = fs->zlevel ? fs->zlevel : ZSTD_CLEVEL_DEFAULT;
	while (!err && in < c) {
		uint64_t n = min64(c - in, piece);
		size_t bytes = (size_t)(n << fs->bshift);
		size_t bound = ZSTD_compressBound(bytes);
		struct da_piece *p;

		err = slot_room(sl, sl->npieces, out + bound + fs->bs);
		if (err)
			break;
		p = &sl->pc[sl->npieces++];
		*p = (struct da_piece){ .fb = fb + in, .n = n,
					.off = (size_t)(in << fs->bshift),
					.bytes = bytes, .ooff = out,
					.ocap = bound };
		out += bound + fs->bs;
		/* whether it is over a hole is asked at submission, where
		 * the in-line loop asks it (the same lookups, the same
		 * counters); delalloc pages are over holes, so nearly every
		 * piece of 2 blocks or more is compressed */
		p->want = n >= 2;
		da_gather(fs, m, fb + in, n, sl->in + p->off);
		in += n;
	}
	return err;
}

/*
 * Fill the set of slots at set[0..max) with the chunks from block *at of
 * the run [fb, fb+n); *at moves past them.  The number filled.
 */
static unsigned fill_set(struct ref_fs *fs, struct pc_map *m,
			 struct da_slot *set, unsigned max, uint64_t fb,
			 uint64_t n, uint64_t *at, uint64_t chunk,
			 uint64_t piece, int *err)
{
	unsigned ns = 0;

	while (!*err && ns < max && *at < n) {
		uint64_t c = min64(n - *at, chunk);

		*err = slot_fill(fs, m, &set[ns++], fb + *at, c, piece);
		*at += c;
	}
	return ns;
}

/* Compress filled set k: on the pool (returns at once), else in line. */
static void start_set(struct delalloc *da, unsigned k, unsigned ns)
{
	if (da->pool)
		hw_workers_submit(da->pool, compress_chunk, &da->batch[k], ns);
	else
		for (unsigned i = 0; i < ns; i++)
			compress_chunk(&da->batch[k], i, 0);
}

/* Submit a compressed set in file order, at the write pointer. */
static int submit_set(struct ref_fs *fs, struct ref_inode *ip,
		      struct da_slot *set, unsigned ns)
{
	int err = 0;

	for (unsigned i = 0; i < ns && !err; i++) {
		struct da_slot *sl = &set[i];

		fs->ctr.async_chunks++;
		for (unsigned k = 0; k < sl->npieces && !err; k++) {
			struct da_piece *p = &sl->pc[k];
			bool want;

			err = piece_wants(fs, ip, p->fb, p->n, &want);
			if (!err)
				err = submit_piece(fs, ip, p->fb, p->n,
						   sl->in + p->off,
						   sl->out + p->ooff,
						   want ? p->csize : 0);
		}
	}
	return err;
}

/*
 * The compressed loop with workers: chunks in two sets of 2 x workers,
 * one set compressed by the pool while the calling thread submits the
 * other's frames in file order at the write pointer; allocation, the
 * image and every counter are exactly those of the in-line loop.
 *
 *   gather A | compress A                  | submit A
 *            |            gather B | compress B (workers) | submit B
 *
 * A call's first set has nothing to overlap with, and its chunks are
 * at most the run's: a writeback call of 672 KiB (2 chunks) waits for
 * its compression whole, a call of 128 MiB (256 chunks) keeps the
 * workers busy while it submits.
 */
static int write_run_workers(struct ref_fs *fs, struct ref_inode *ip,
			     struct pc_map *m, uint64_t fb, uint64_t n,
			     uint64_t chunk, uint64_t piece)
{
	struct delalloc *da = fs->da;
	uint64_t at = 0;
	unsigned half, ns, cur = 0;
	int err = slots_get(fs, da), serr = 0;

	if (err)
		return err;
	half = da->nslots / 2;
	ns = fill_set(fs, m, da->slots, half, fb, n, &at, chunk, piece, &err);
	if (!err)
		start_set(da, 0, ns);
	while (!err && ns) {
		struct da_slot *set = da->slots + cur * half;
		struct da_slot *other = da->slots + (1 - cur) * half;
		unsigned next = 0;

		if (da->pool)
			hw_workers_wait(da->pool);
		if (at < n) {
			next = fill_set(fs, m, other, half, fb, n, &at, chunk,
					piece, &err);
			if (err)
				break;
			start_set(da, 1 - cur, next);
		}
		serr = submit_set(fs, ip, set, ns);
		if (serr)
			break;
		cur = 1 - cur;
		ns = next;
	}
	if (da->pool)
		hw_workers_wait(da->pool);   /* nothing in flight on return */
	return err ? err : serr;
}
#endif

/*
 * Write locked delalloc pages [fb, fb+n) of ip compressed: async chunks
 * of DA_CHUNK, each cut into pieces of at most piece blocks (the caller's
 * cap, delalloc_cap.c) and DA_BUF; on the workers when there are any.
 */
int compr_write_run(struct ref_fs *fs, struct ref_inode *ip,
		    struct pc_map *m, uint64_t fb, uint64_t n, uint64_t piece)
{
	uint64_t bufb = DA_BUF >> fs->bshift, chunk = DA_CHUNK >> fs->bshift;
	uint64_t done = 0;
	int err = 0;

	chunk = chunk ? chunk : 1;
#if HAVE_ZSTD
	if (fs->workers && chunk <= DA_CHUNK >> fs->bshift)
		return write_run_workers(fs, ip, m, fb, n, chunk, piece);
#endif
	while (!err && done < n) {
		uint64_t c = min64(n - done, chunk), in = 0;

		fs->ctr.async_chunks++;
		while (!err && in < c) {
			uint64_t k = min64(min64(c - in, piece), bufb);

			da_gather(fs, m, fb + done + in, k, fs->da->buf);
			err = write_piece(fs, ip, fb + done + in, k, fs->da->buf);
			in += k;
		}
		done += c;
	}
	return err;
}
