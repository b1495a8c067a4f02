/*
 * target_model.c - the model: per file a byte array and a size, nothing
 * else.  It is the oracle every other target is compared with, so it is
 * written to be obviously correct by reading, not to be fast:
 *
 *   - every op is a few lines over five primitives (read, write, zero,
 *     move bytes, shift a file's tail) on one file's array;
 *   - one invariant: bytes at and beyond the size are zero, so growing a
 *     file (truncate up, a write past EOF) exposes zeros with no work;
 *   - errors follow Linux (vfs_fallocate, generic_copy_file_checks,
 *     generic_remap_checks) where the op has a Linux counterpart.
 *
 * The array is stored in 4 KiB chunks allocated on first write, found
 * through a directory of leaves of 512 chunk pointers (2 MiB of file a
 * leaf), so a sparse 16 GiB file costs nothing until written; a chunk
 * that is not there reads as zeros.  Collapse and insert on chunk edges
 * move chunk pointers instead of bytes (mf_shift_tail).  Those are the
 * only concessions to size and speed.
 *
 * Durability (fsync, crash) is not the model's business: the checker
 * tracks which files are durable and, after a crash, loads each
 * non-durable file's recovered state from the engine (check.c).
 */
#include "harness/target.h"

#include "base/park.h"
#include "base/zeros.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SHIFT 12
#define CHUNK ((uint64_t)1 << CHUNK_SHIFT)
#define LEAF_SHIFT 9
#define LEAF ((uint64_t)1 << LEAF_SHIFT)   /* chunk pointers in a leaf    */
#define LEAF_BYTES (LEAF * CHUNK)           /* bytes of file a leaf holds  */
#define EXCH_PIECE ((uint64_t)64 << 10)    /* bytes an exchange swaps a go */
/* Largest file size (like s_maxbytes); beyond it writes get -EFBIG. */
#define MODEL_MAXBYTES ((uint64_t)1 << 43)

struct mfile {
	uint8_t ***leaf;   /* leaf[i][j] holds chunk (i << LEAF_SHIFT) + j,
			      [that * CHUNK, (that + 1) * CHUNK) of the file */
	uint64_t nleaf;    /* entries in the directory                        */
	uint64_t size;
	int exists;
};

struct model {
	struct target t;
	struct mfile f[OP_MAX_FILES];
	uint8_t *bounce;   /* EXCH_PIECE bytes each: an exchange swaps        */
	uint8_t *bounce2;  /* through these two                               */
};

static struct model *to_model(struct target *t)
{
	return (struct model *)t;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* --- where the chunks are --- */

/* The slot of chunk ci when its leaf is there, else NULL. */
static uint8_t **chunk_slot(const struct mfile *f, uint64_t ci)
{
	uint64_t li = ci >> LEAF_SHIFT;

	return li < f->nleaf && f->leaf[li] ? &f->leaf[li][ci & (LEAF - 1)]
					    : NULL;
}

/* Chunk ci, NULL when it is not there (zeros). */
static uint8_t *chunk_at(const struct mfile *f, uint64_t ci)
{
	uint8_t **slot = chunk_slot(f, ci);

	return slot ? *slot : NULL;
}

/*
 * The slot of chunk ci, its leaf (and a directory long enough) made
 * when not there yet.  NULL when memory ran out.
 */
static uint8_t **chunk_slot_new(struct mfile *f, uint64_t ci)
{
	uint64_t li = ci >> LEAF_SHIFT;

	if (li >= f->nleaf) {
		uint64_t want = f->nleaf ? f->nleaf : 4;
		uint8_t ***dir;

		while (want <= li)
			want *= 2;
		dir = realloc(f->leaf, want * sizeof(*dir));
		if (!dir)
			return NULL;
		memset(dir + f->nleaf, 0, (want - f->nleaf) * sizeof(*dir));
		f->leaf = dir;
		f->nleaf = want;
	}
	if (!f->leaf[li])
		f->leaf[li] = park_zalloc(LEAF * sizeof(**f->leaf));
	return f->leaf[li] ? &f->leaf[li][ci & (LEAF - 1)] : NULL;
}

/* Chunk ci is zeros from now on: not there. */
static void chunk_drop(struct mfile *f, uint64_t ci)
{
	uint8_t **slot = chunk_slot(f, ci);

	if (slot && *slot) {
		park_free(*slot, CHUNK);
		*slot = NULL;
	}
}

/* Whether the leaf of chunk ci is there: if not, all its chunks read as
 * zeros. */
static int leaf_there(const struct mfile *f, uint64_t ci)
{
	return chunk_slot(f, ci) != NULL;
}

/* Chunks from ci to its leaf's edge: to the end (up) or the start. */
static uint64_t leaf_rest(uint64_t ci, int up)
{
	return up ? LEAF - (ci & (LEAF - 1)) : (ci & (LEAF - 1)) + 1;
}

/* Leaf li with every chunk in it goes: all of its 2 MiB read as zeros. */
static void leaf_drop(struct mfile *f, uint64_t li)
{
	uint8_t **slot = f->leaf[li];
	const uint64_t span = 32;

	/* Most of a small file's leaf is empty slots: runs of them are
	 * skipped by zeros_all (a loop over each is traced by the fuzzers'
	 * coverage at every slot). */
	for (uint64_t j = 0; j < LEAF; j += span)
		if (!zeros_all(slot + j, span * sizeof(*slot)))
			for (uint64_t k = j; k < j + span; k++)
				park_free(slot[k], CHUNK);
	park_free(f->leaf[li], LEAF * sizeof(**f->leaf));
	f->leaf[li] = NULL;
}

/* --- the primitives over one file's bytes (sizes untouched) --- */

static void mf_read(const struct mfile *f, uint64_t off, void *buf,
		    uint64_t len)
{
	uint8_t *p = buf;

	while (len) {
		uint64_t ci = off >> CHUNK_SHIFT, co = off & (CHUNK - 1);
		uint64_t n = min64(len, CHUNK - co);
		const uint8_t *c = chunk_at(f, ci);

		if (c)
			memcpy(p, c + co, n);
		else
			memset(p, 0, n);
		p += n;
		off += n;
		len -= n;
	}
}

/*
 * A chunk, from the process's park of freed blocks (base/park.h: no
 * malloc churn, and no path here that depends on what earlier models
 * freed), zero outside [co, co + n): the caller writes that range at
 * once, so zeroing the whole chunk first would be wasted.
 */
static uint8_t *chunk_new(uint64_t co, uint64_t n)
{
	uint8_t *c = park_alloc(CHUNK);

	if (c) {
		memset(c, 0, (size_t)co);
		memset(c + co + n, 0, (size_t)(CHUNK - co - n));
	}
	return c;
}

/*
 * Chunk ci of f for writing [co, co + n) of it: allocated (zero outside
 * that range) when it is not there yet.  NULL when memory ran out.
 */
static uint8_t *mf_chunk_for(struct mfile *f, uint64_t ci, uint64_t co,
			     uint64_t n)
{
	uint8_t **slot = chunk_slot_new(f, ci);

	if (!slot)
		return NULL;
	if (!*slot)
		*slot = chunk_new(co, n);
	return *slot;
}

/* Write bytes; zeros landing where no chunk exists allocate nothing. */
static int mf_write(struct mfile *f, uint64_t off, const void *buf,
		    uint64_t len)
{
	const uint8_t *p = buf;

	while (len) {
		uint64_t ci = off >> CHUNK_SHIFT, co = off & (CHUNK - 1);
		uint64_t n = min64(len, CHUNK - co);
		uint8_t *c = chunk_at(f, ci);

		if (!c && zeros_all(p, (size_t)n)) {
			p += n;
			off += n;
			len -= n;
			continue;
		}
		if (!c)
			c = mf_chunk_for(f, ci, co, n);
		if (!c)
			return -ENOMEM;
		memcpy(c + co, p, n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static void mf_zero(struct mfile *f, uint64_t off, uint64_t len)
{
	while (len) {
		uint64_t ci = off >> CHUNK_SHIFT, co = off & (CHUNK - 1);
		uint64_t n = min64(len, CHUNK - co);
		uint64_t li = ci >> LEAF_SHIFT;

		if (li >= f->nleaf)
			return;
		if (!f->leaf[li]) {     /* a leaf not there is zeros: skip it */
			n = min64(len, LEAF_BYTES - (off & (LEAF_BYTES - 1)));
		} else if (!(off & (LEAF_BYTES - 1)) && len >= LEAF_BYTES) {
			n = LEAF_BYTES; /* the whole leaf */
			leaf_drop(f, li);
		} else if (n == CHUNK) { /* a chunk not there is zeros */
			chunk_drop(f, ci);
		} else if (f->leaf[li][ci & (LEAF - 1)]) {
			memset(f->leaf[li][ci & (LEAF - 1)] + co, 0, n);
		}
		off += n;
		len -= n;
	}
}

/*
 * Copy len bytes from (sf, soff) to (df, doff), as memmove: when source
 * and destination overlap in one file, walk in the direction that reads
 * each byte before it is overwritten.  Chunk to chunk, in pieces that
 * cross no chunk edge on either side; a source chunk that is not there
 * zeroes its piece of the destination.
 */
static int mf_move(struct mfile *df, uint64_t doff, const struct mfile *sf,
		   uint64_t soff, uint64_t len)
{
	int backward = df == sf && doff > soff;

	while (len) {
		/* the piece: the last one of the range going backward */
		uint64_t s = backward ? soff + len - 1 : soff;
		uint64_t d = backward ? doff + len - 1 : doff;
		uint64_t sci = s >> CHUNK_SHIFT, dci = d >> CHUNK_SHIFT;
		uint64_t n = backward ?
			min64(len, min64((s & (CHUNK - 1)) + 1, (d & (CHUNK - 1)) + 1)) :
			min64(len, min64(CHUNK - (s & (CHUNK - 1)), CHUNK - (d & (CHUNK - 1))));
		uint64_t sat, dat, dco;
		uint8_t *const *slot = chunk_slot(sf, sci);
		const uint8_t *src = slot ? *slot : NULL;

		/* a source leaf not there: zeros as far as its edge, in one go
		 * (what of the source is still to be read lies beyond that) */
		if (!slot)
			n = min64(len, backward ? (s & (LEAF_BYTES - 1)) + 1 :
				    LEAF_BYTES - (s & (LEAF_BYTES - 1)));
		sat = backward ? soff + len - n : soff;
		dat = backward ? doff + len - n : doff;
		dco = dat & (CHUNK - 1);
		if (src) {
			uint8_t *dst = mf_chunk_for(df, dci, dco, n);

			if (!dst)
				return -ENOMEM;
			memmove(dst + dco, src + (sat & (CHUNK - 1)), n);
		} else {
			mf_zero(df, dat, n);
		}
		if (!backward) {
			soff += n;
			doff += n;
		}
		len -= n;
	}
	return 0;
}

/*
 * Move f's tail [from, size) to start at `to`, as mf_move does; then
 * the bytes from the moved tail's end to the old size (a collapse) or
 * from `from` to `to` (an insert) are zeros.  The size is the caller's.
 * With both offsets on chunk edges whole chunks change places, their
 * bytes untouched (the tail's last chunk is zero past the size, as
 * everything past the size is), and the chunks the tail leaves are not
 * there; else byte by byte.
 */
static int mf_shift_tail(struct mfile *f, uint64_t from, uint64_t to)
{
	uint64_t len = f->size - from;
	uint64_t first = from >> CHUNK_SHIFT, dfirst = to >> CHUNK_SHIFT;
	uint64_t nch = (len + CHUNK - 1) >> CHUNK_SHIFT;
	int backward = to > from;

	if (from >= f->size || from == to)
		return 0;
	if ((from | to) & (CHUNK - 1)) {
		int err = mf_move(f, to, f, from, len);

		if (err)
			return err;
	} else {
		/* the leaves the tail's chunks land in, first: a failure
		 * changes nothing */
		for (uint64_t i = 0; i < nch; i++) {
			if (!leaf_there(f, first + i))
				i += leaf_rest(first + i, 1) - 1;
			else if (chunk_at(f, first + i) &&
				 !chunk_slot_new(f, dfirst + i))
				return -ENOMEM;
		}
		for (uint64_t k = 0; k < nch;) {
			uint64_t i = backward ? nch - 1 - k : k, run;
			uint8_t **src = chunk_slot(f, first + i), *c;

			if (!src) { /* a leaf not there: zeros where it lands */
				run = min64(backward ? i + 1 : nch - i,
					    leaf_rest(first + i, !backward));
				mf_zero(f, (dfirst + (backward ? i + 1 - run : i))
					   << CHUNK_SHIFT, run << CHUNK_SHIFT);
				k += run;
				continue;
			}
			c = *src;
			*src = NULL;
			/* what the tail covers goes, unless taken already */
			chunk_drop(f, dfirst + i);
			if (c)
				*chunk_slot(f, dfirst + i) = c;
			k++;
		}
	}
	if (backward)
		mf_zero(f, from, to - from);
	else
		mf_zero(f, to + len, f->size - (to + len));
	return 0;
}

/* Drop a file's bytes; its chunks and leaves go to the park. */
static void mf_free(struct mfile *f)
{
	for (uint64_t li = 0; li < f->nleaf; li++)
		if (f->leaf[li])
			leaf_drop(f, li);
	free(f->leaf);
	memset(f, 0, sizeof(*f));
}

/* Change the size, keeping the invariant: bytes past the size are zero. */
static void mf_set_size(struct mfile *f, uint64_t size)
{
	if (size < f->size)
		mf_zero(f, size, f->size - size);
	f->size = size;
}

/* --- ops --- */

static void ensure(struct mfile *f)
{
	if (!f->exists) {
		f->exists = 1;
		f->size = 0;
	}
}

static int aligned(uint64_t v, uint32_t bs)
{
	return v % bs == 0;
}

/* Same file and [a, a+len) overlaps [b, b+len)? */
static int overlaps(const struct op *op, uint64_t len)
{
	return op->file == op->file2 && op->off < op->arg + len &&
	       op->arg < op->off + len;
}

static int64_t m_pwrite(struct model *m, struct mfile *f, const struct op *op,
		       const void *wbuf)
{
	uint64_t len = op->len;
	int err;

	if (len == 0)
		return 0;
	if (op->off >= MODEL_MAXBYTES)
		return -EFBIG;
	len = min64(len, MODEL_MAXBYTES - op->off); /* a short write, as Linux */
	err = mf_write(f, op->off, wbuf, len);
	if (err)
		return err;
	if (op->off + len > f->size)
		f->size = op->off + len;
	return (int64_t)len;
}

static int64_t m_pread(const struct mfile *f, const struct op *op, void *rbuf)
{
	uint64_t n;

	if (op->off >= f->size)
		return 0;
	n = min64(op->len, f->size - op->off);
	mf_read(f, op->off, rbuf, n);
	return (int64_t)n;
}

/* vfs_fallocate's common checks. */
static int falloc_checks(const struct op *op)
{
	if (op->len == 0)
		return -EINVAL;
	if (op->off + op->len > MODEL_MAXBYTES || op->off + op->len < op->off)
		return -EFBIG;
	return 0;
}

static int64_t m_collapse(struct model *m, struct mfile *f, const struct op *op)
{
	uint64_t end = op->off + op->len, old = f->size;
	int err = falloc_checks(op);

	if (err)
		return err;
	if (!aligned(op->off, m->t.blocksize) || !aligned(op->len, m->t.blocksize))
		return -EINVAL;
	if (end >= f->size)
		return -EINVAL; /* would reach EOF: that is a truncate */
	/*
	 *   before: | A  | gone |  B  |       after: | A |  B  |
	 *           0   off    end   size            0  off   size-len
	 */
	err = mf_shift_tail(f, end, op->off);
	if (err)
		return err;
	f->size = old - op->len; /* past it: zeroed by the shift */
	return 0;
}

static int64_t m_insert(struct model *m, struct mfile *f, const struct op *op)
{
	uint64_t old = f->size;
	int err = falloc_checks(op);

	if (err)
		return err;
	if (!aligned(op->off, m->t.blocksize) || !aligned(op->len, m->t.blocksize))
		return -EINVAL;
	if (op->off >= f->size)
		return -EINVAL;
	if (old + op->len > MODEL_MAXBYTES)
		return -EFBIG;
	/*
	 *   before: | A  |  B  |          after: | A  | hole |  B  |
	 *           0   off   size               0   off  off+len  size+len
	 */
	err = mf_shift_tail(f, op->off, op->off + op->len);
	if (err)
		return err;
	f->size = old + op->len; /* the hole: zeroed by the shift */
	return 0;
}

static int64_t m_copy(struct model *m, struct mfile *df, struct mfile *sf,
		      const struct op *op)
{
	uint64_t n;
	int err;

	/* generic_copy_file_checks: shorten to the source EOF first. */
	n = op->off >= sf->size ? 0 : min64(op->len, sf->size - op->off);
	if (op->arg >= MODEL_MAXBYTES)
		return -EFBIG;
	n = min64(n, MODEL_MAXBYTES - op->arg);
	if (overlaps(op, n))
		return -EINVAL;
	if (n == 0)
		return 0;
	err = mf_move(df, op->arg, sf, op->off, n);
	if (err)
		return err;
	if (op->arg + n > df->size)
		df->size = op->arg + n;
	return (int64_t)n;
}

/*
 * The remap rules clone and dedupe share (generic_remap_checks): block
 * aligned offsets; a length that is aligned or ends at the source EOF;
 * a partial last block may not land inside the destination; ranges
 * within the files (dedupe: both, clone: the source).
 */
static int remap_checks(struct model *m, struct mfile *df, struct mfile *sf,
			const struct op *op, uint64_t *lenp, int dedupe)
{
	uint32_t bs = m->t.blocksize;
	uint64_t len = op->len;

	if (op->off > sf->size || (dedupe && op->arg > df->size))
		return -EINVAL;
	if (len == 0)
		len = sf->size - op->off; /* 0 means "to the source EOF" */
	if (op->off + len > sf->size)
		return -EINVAL;
	if (dedupe && op->arg + len > df->size)
		return -EINVAL;
	if (op->arg + len > MODEL_MAXBYTES)
		return -EFBIG;
	if (!aligned(op->off, bs) || !aligned(op->arg, bs))
		return -EINVAL;
	if (!aligned(len, bs)) {
		if (op->off + len != sf->size)
			return -EINVAL;
		if (op->arg + len < df->size)
			return -EINVAL;
	}
	if (overlaps(op, len))
		return -EINVAL;
	*lenp = len;
	return 0;
}

static int64_t m_clone(struct model *m, struct mfile *df, struct mfile *sf,
		       const struct op *op)
{
	uint64_t len;
	int err = remap_checks(m, df, sf, op, &len, 0);

	if (err || len == 0)
		return err;
	err = mf_move(df, op->arg, sf, op->off, len);
	if (err)
		return err;
	if (op->arg + len > df->size)
		df->size = op->arg + len;
	return 0;
}

int exchange_range_checks(uint64_t off1, uint64_t size1, uint64_t off2,
			  uint64_t size2, uint64_t len, uint32_t unit, int same)
{
	uint64_t blen;

	if (off1 > size1 || off2 > size2)
		return -EINVAL;
	if (!aligned(off1, unit) || !aligned(off2, unit))
		return -EINVAL;
	if (off1 + len < off1 || off2 + len < off2)
		return -EINVAL;
	if (off1 + len > size1 || off2 + len > size2)
		return -EINVAL;
	/* a partial last unit: the EOF units of both swap whole */
	if (!aligned(len, unit) && (off1 + len != size1 || off2 + len != size2))
		return -EINVAL;
	blen = (len + unit - 1) / unit * unit;
	if (same && off1 < off2 + blen && off2 < off1 + blen)
		return -EINVAL;
	return 0;
}

static int64_t m_exchange(struct model *m, struct mfile *df, struct mfile *sf,
			  const struct op *op)
{
	uint64_t done = 0;
	int err = exchange_range_checks(op->arg, df->size, op->off, sf->size,
					op->len, m->t.blocksize,
					op->file == op->file2);

	if (err)
		return err;
	while (done < op->len) {
		uint64_t n = min64(op->len - done, EXCH_PIECE);

		mf_read(sf, op->off + done, m->bounce, n);
		mf_read(df, op->arg + done, m->bounce2, n);
		err = mf_write(sf, op->off + done, m->bounce2, n);
		if (!err)
			err = mf_write(df, op->arg + done, m->bounce, n);
		if (err)
			return err;
		done += n;
	}
	return 0;
}

/*
 * One op on the model's byte arrays: the namespace ops and those a
 * reader cannot see first, then the file ops, one case per kind.  It
 * stays in one piece: it is the model's op table, the semantics every
 * target is held to, read beside the engine's and the host's
 * (engine_apply, host_apply).
 */
static int64_t model_apply(struct target *t, const struct op *op,
			   const void *wbuf, void *rbuf)
{
	struct model *m = to_model(t);
	struct mfile *f = &m->f[op->file % OP_MAX_FILES];
	struct mfile *f2 = &m->f[op->file2 % OP_MAX_FILES];
	int err;

	switch (op->kind) {
	case OP_OPEN:
		if (!f->exists && !(op->flags & OP_FL_CREATE))
			return -ENOENT;
		ensure(f);
		return 0;
	case OP_CLOSE:
		return 0; /* never creates */
	case OP_UNLINK:
		if (!f->exists)
			return -ENOENT;
		mf_free(f);
		return 0;
	case OP_SYNC:
	case OP_WRITEBACK:
	case OP_DROP_CACHES:
	case OP_REMOUNT:
	case OP_CRASH:
		return 0; /* nothing a reader could see; see check.c for crash */
	case OP_NAIVE:
	case OP_FALLBACK:
		return 0; /* the model has one semantics: switches change nothing */
	default:
		break;
	}
	/* Every other op creates the files it names, as fsx's file exists. */
	ensure(f);
	if (op_kind_info(op->kind)->uses & OP_USE_FILE2)
		ensure(f2);

	switch (op->kind) {
	case OP_PWRITE:
		return m_pwrite(m, f, op, wbuf);
	case OP_PREAD:
		return m_pread(f, op, rbuf);
	case OP_TRUNCATE:
		if (op->arg > MODEL_MAXBYTES)
			return -EFBIG;
		mf_set_size(f, op->arg);
		return 0;
	case OP_FALLOC:
		err = falloc_checks(op);
		if (err)
			return err;
		/* Allocation is invisible to readers; only the size can move. */
		if (!(op->flags & OP_FL_KEEP_SIZE) && op->off + op->len > f->size)
			f->size = op->off + op->len;
		return 0;
	case OP_FPUNCH:
		err = falloc_checks(op);
		if (err)
			return err;
		if (op->off < f->size)
			mf_zero(f, op->off, min64(op->len, f->size - op->off));
		return 0;
	case OP_FZERO:
		err = falloc_checks(op);
		if (err)
			return err;
		if (op->off < f->size)
			mf_zero(f, op->off, min64(op->len, f->size - op->off));
		if (!(op->flags & OP_FL_KEEP_SIZE) && op->off + op->len > f->size)
			f->size = op->off + op->len;
		return 0;
	case OP_FCOLLAPSE:
		return m_collapse(m, f, op);
	case OP_FINSERT:
		return m_insert(m, f, op);
	case OP_COPY_RANGE:
		return m_copy(m, f, f2, op);
	case OP_CLONE_RANGE:
		return m_clone(m, f, f2, op);
	case OP_DEDUPE_RANGE: {
		uint64_t len;

		/* Sharing identical blocks changes nothing a reader sees. */
		return remap_checks(m, f, f2, op, &len, 1);
	}
	case OP_EXCHANGE_RANGE:
		return m_exchange(m, f, f2, op);
	case OP_FSYNC:
	case OP_FDATASYNC:
	case OP_SET_FLAG:
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static int64_t model_size(struct target *t, unsigned file)
{
	struct mfile *f = &to_model(t)->f[file % OP_MAX_FILES];

	return f->exists ? (int64_t)f->size : -ENOENT;
}

static int64_t model_read(struct target *t, unsigned file, uint64_t off,
			  void *buf, size_t len)
{
	struct mfile *f = &to_model(t)->f[file % OP_MAX_FILES];
	uint64_t n;

	if (!f->exists)
		return -ENOENT;
	if (off >= f->size)
		return 0;
	n = min64(len, f->size - off);
	mf_read(f, off, buf, n);
	return (int64_t)n;
}

static int64_t model_peek(struct target *t, unsigned file, uint64_t off,
			  size_t len, const uint8_t **p)
{
	const struct mfile *f = &to_model(t)->f[file % OP_MAX_FILES];
	uint64_t ci = off >> CHUNK_SHIFT, co = off & (CHUNK - 1);
	uint64_t n, end, next;
	const uint8_t *c;

	if (!f->exists)
		return -ENOENT;
	if (off >= f->size)
		return 0;
	end = off + min64(len, f->size - off);
	c = chunk_at(f, ci);
	n = CHUNK - co;
	/* zeros: as far as the chunks that are not there go */
	for (next = ci + 1; !c && off + n < end && !chunk_at(f, next); next++)
		n += CHUNK;
	*p = c ? c + co : NULL;
	return (int64_t)min64(n, end - off);
}

static int model_list(struct target *t, uint32_t *mask)
{
	struct model *m = to_model(t);

	*mask = 0;
	for (unsigned i = 0; i < OP_MAX_FILES; i++)
		if (m->f[i].exists)
			*mask |= 1u << i;
	return 0;
}

static int model_reset(struct target *t)
{
	struct model *m = to_model(t);

	for (unsigned i = 0; i < OP_MAX_FILES; i++)
		mf_free(&m->f[i]);
	return 0;
}

static void model_destroy(struct target *t)
{
	struct model *m = to_model(t);

	model_reset(t);
	free(m->bounce);
	free(m->bounce2);
	free(m);
}

static const struct target_ops model_ops = {
	.apply = model_apply,
	.size = model_size,
	.read = model_read,
	.peek = model_peek,
	.list = model_list,
	.audit = NULL,
	.reset = model_reset,
	.release = model_reset,
	.destroy = model_destroy,
};

int model_target_new(uint32_t blocksize, struct target **out)
{
	struct model *m = calloc(1, sizeof(*m));

	if (!m)
		goto out_nomem;
	m->bounce = malloc(EXCH_PIECE);
	m->bounce2 = malloc(EXCH_PIECE);
	if (!m->bounce || !m->bounce2)
		goto out_nomem;
	m->t.ops = &model_ops;
	snprintf(m->t.name, sizeof(m->t.name), "model");
	m->t.blocksize = blocksize ? blocksize : 4096;
	m->t.caps = TARGET_MODEL;
	target_set_names(&m->t, NULL);
	*out = &m->t;
	return 0;
out_nomem:
	if (m) {
		free(m->bounce);
		free(m->bounce2);
		free(m);
	}
	return -ENOMEM;
}
