/*
 * journal.c - the write-ahead log: commit, revoke, checkpoint, recovery.
 *
 * The log is a linear area of J blocks after the journal header.  Each
 * commit appends one transaction:
 *
 *   pos:  h        h+1 .. h+n1     h+n1+1 ...                   last
 *        +--------+--------------+--------+--------+  +--------+--------+
 *        | desc   | n1 images    | desc   | images |..| revoke | commit |
 *        | seq s  | (full blocks)| seq s  |        |  | seq s  | seq s  |
 *        +--------+--------------+--------+--------+  +--------+--------+
 *
 * A descriptor lists the home block numbers of the images that follow it
 * (bit 63 set: a file data image, which has no block header); revoke
 * blocks list blocks freed in this transaction whose older images the log
 * still holds.  The commit block carries the transaction's block count
 * and a CRC over its descriptors, its revoke blocks and the checksums of
 * its images (each metadata image carries its own; a data image's is
 * computed), so a torn transaction is recognised and ignored at replay.
 * The header records the sequence number expected at log position 0.
 *
 * Replay takes two passes, as jbd2's does: the first finds the committed
 * transactions and collects every revoke with the latest sequence that
 * revoked it; the second installs each image unless its block was revoked
 * by a transaction at or after its own.  So a block freed (and revoked),
 * reused as file data written in place, and never logged again keeps its
 * new contents: no older logged copy is written over it.
 *
 *   txn 5: image of B    txn 7: revoke B    (B reused as data)    crash
 *   replay: B's image from txn 5 is skipped, 5 <= 7
 *   txn 9: image of B again (reused as metadata): installed, 9 > 7
 *
 * Policy, chosen so no buffer ever needs a frozen copy:
 *   - buffers are written in place only at checkpoint, which happens right
 *     after a commit, when no buffer is dirty: everything in memory is
 *     then committed, so in-place content is always committed content;
 *   - a checkpoint writes all logged buffers home, flushes, and rewrites
 *     the header with the next sequence number: the log is empty again;
 *   - the running transaction is kept below J/4 blocks by rolling it
 *     (tx_maybe_roll) at safe points, and a checkpoint is taken whenever
 *     less than J/2 blocks remain, so a commit always fits.
 * File data (ref.h's data modes): in ordered mode it is written to the
 * device before the commit that maps it, as a flush of the data and
 * realtime devices precedes every commit block (and makes the
 * transaction's log blocks durable too); in journal mode it is logged in
 * raw buffers (jdata.c) like metadata; in writeback mode only a commit
 * for fsync/sync flushes first, the others write their log blocks FUA.
 */
#include "ref/ref_internal.h"

#include "base/park.h"

#include <stdlib.h>

#define JD_RAW (1ull << 63) /* descriptor target: a file data image */

/* Targets per descriptor, and blocks per revoke block (same layout). */
static uint32_t desc_capacity(const struct ref_fs *fs)
{
	return (fs->bs - JD_TARGETS) / 8;
}

/* The checksum a commit chains for one image. */
static uint32_t image_crc(const struct ref_fs *fs, const uint8_t *img, bool raw)
{
	return raw ? crc32c(0, img, fs->bs) : get32(img + BLKHDR_CRC);
}

/* Make room for element n of the array *p of *cap elements of elem bytes. */
static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *np;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/*
 * Record that freed block blkno has a copy in the log: the running
 * transaction's commit will carry a revoke record for it.
 */
int journal_revoke(struct ref_fs *fs, uint64_t blkno)
{
	int err = grow((void **)&fs->revoke, &fs->revcap, fs->nrevoke,
		       sizeof(*fs->revoke));

	if (!err)
		fs->revoke[fs->nrevoke++] = blkno;
	return err;
}

/*
 * Log blocks a running transaction may fill before it rolls: a quarter
 * of the log, or, while fs->tx_whole is set, what is left of it less
 * room for its descriptors, revoke blocks and commit block.  A step that
 * must not be split by a cut (a zone reclaim: all its moves or none)
 * starts with tx_begin_whole.
 */
size_t tx_roll_limit(const struct ref_fs *fs)
{
	uint32_t left = fs->jlen - fs->jhead;

	if (!fs->tx_whole)
		return fs->jlen / 4;
	return left > 16 + left / 8 ? left - 16 - left / 8 : 1;
}

/*
 * Start a transaction to be kept whole: commit what runs and empty the
 * log when less than half of it is left, then set fs->tx_whole (the
 * caller clears it).
 */
int tx_begin_whole(struct ref_fs *fs)
{
	int err = 0;

	if (fs->jhead > fs->jlen / 2) {
		err = tx_commit(fs);
		if (!err)
			err = journal_checkpoint(fs);
	}
	if (!err)
		fs->tx_whole = true;
	return err;
}

static int log_write(struct ref_fs *fs, uint32_t pos, const void *data,
		     unsigned flags)
{
	fs->ctr.journal_blocks_written++;
	return meta_write(fs, fs->jstart + pos, data, flags & HW_FUA);
}

static int write_jhdr(struct ref_fs *fs, uint64_t seq)
{
	uint8_t *b = fs->scratch;

	memset(b, 0, fs->bs);
	blk_init(b, MAGIC_JHDR, 1, 0);
	put64(b + JH_SEQ, seq);
	blk_set_crc(b, blk_crc_span(fs, b));
	return meta_write(fs, 1, b, true);
}

static int checkpoint_steps(struct ref_fs *fs)
{
	int err = 0;

	for (size_t i = 0; i < fs->nckpt; i++) {
		err = buf_write_inplace(fs, fs->ckpt[i]);
		if (err)
			return err;
	}
	err = meta_barrier(fs); /* flush, or persist on pmem (devio.c) */
	return err ? err : write_jhdr(fs, fs->jseq);
}

int journal_checkpoint(struct ref_fs *fs)
{
	int err;

	if (fs->rdonly)
		return 0;
	if (fs->ntx || fs->nrevoke)
		return -EINVAL; /* callers commit first; see the policy above */
	err = checkpoint_steps(fs);
	if (err) { /* as a failed commit (commit below) */
		fs->meta_err = true;
		return err;
	}
	for (size_t i = 0; i < fs->nckpt; i++)
		buf_unpin(fs, fs->ckpt[i]);
	fs->nckpt = 0;
	fs->jhead = 0;
	fs->ctr.checkpoints++;
	return 0;
}

/*
 * Commit and checkpoint: nothing of the past is left in the log, every
 * buffer is clean, and file data buffers leave the cache (ext4 flushes
 * its journal like this before a file's journal-data flag changes).
 */
int journal_flush(struct ref_fs *fs)
{
	int err = tx_commit(fs);

	if (!err)
		err = journal_checkpoint(fs);
	if (!err)
		bcache_drop_raw(fs);
	return err;
}

static int flush_devices(struct ref_fs *fs)
{
	int err = meta_barrier(fs);

	if (!err && fs->rtdev)
		err = hw_flush(fs->rtdev);
	return err;
}

/*
 * What a lazy writeback commit flushes before its commit block: nothing,
 * but a zoned realtime device.  Mount trusts its write pointers, so
 * every rt extent a commit maps must lie below one, durable; a cut that
 * lost an append the log maps would leave the mapping above the write
 * pointer, where the next append lands on it.
 */
static int flush_lazy(struct ref_fs *fs)
{
	return fs->zoned ? hw_flush(fs->rtdev) : 0;
}

/* Write the revoke blocks of the running transaction from pos on. */
static int write_revokes(struct ref_fs *fs, uint32_t *pos, uint32_t *dcrc,
			 unsigned flags)
{
	uint32_t dcap = desc_capacity(fs);
	uint8_t *d = fs->scratch;

	for (size_t i = 0; i < fs->nrevoke; i += dcap) {
		size_t n = fs->nrevoke - i < dcap ? fs->nrevoke - i : dcap;
		int err;

		memset(d, 0, fs->bs);
		blk_init(d, MAGIC_JREVOKE, fs->jstart + *pos, fs->jseq);
		put32(d + JD_COUNT, (uint32_t)n);
		for (size_t k = 0; k < n; k++)
			put64(d + JD_TARGETS + 8 * k, fs->revoke[i + k]);
		blk_set_crc(d, fs->bs);
		*dcrc = crc32c(*dcrc, d, fs->bs);
		err = log_write(fs, (*pos)++, d, flags);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Commit the running transaction.  sync: the caller wants file data
 * durable too (fsync, sync, unmount, freeing space); only data=writeback
 * tells the two apart.  In ordered and journal mode every commit is
 * preceded by one flush of the data devices, which orders file data
 * before the commit and makes the log blocks durable.  A writeback
 * commit that is not sync writes its log blocks FUA and flushes nothing:
 * file data written before it may still be lost at a cut (see ref.h).
 * But not a compressed frame the transaction maps: old bytes there are
 * not stale data but an extent that does not decode (reads and mount
 * would call the filesystem corrupt), so that commit flushes as ordered
 * mode's do.
 */
static int commit_steps(struct ref_fs *fs, bool sync)
{
	uint32_t dcap = desc_capacity(fs), pos, ndesc, nrev, need;
	uint32_t dcrc = 0;
	uint8_t *d = fs->scratch;
	bool lazy = !sync && fs->data_mode == REF_DATA_WRITEBACK &&
		    !fs->tx_frames;
	unsigned lflags = lazy ? HW_FUA : 0;
	int err;

	if (fs->rdonly)
		return 0;
	if (fs->ntx == 0 && fs->nrevoke == 0) {
		/* nothing to log: fsync still makes the data durable */
		err = lazy ? 0 : flush_devices(fs);
		if (!err)
			alloc_release_busy(fs);
		return err;
	}
	ndesc = (uint32_t)((fs->ntx + dcap - 1) / dcap);
	nrev = (uint32_t)((fs->nrevoke + dcap - 1) / dcap);
	need = ndesc + (uint32_t)fs->ntx + nrev + 1;
	if (need > fs->jlen - fs->jhead) {
		ref_report(fs, "transaction of %u blocks does not fit the log "
			   "(%u of %u free)", need, fs->jlen - fs->jhead, fs->jlen);
		return -EFBIG;
	}
	pos = fs->jhead;
	for (size_t i = 0; i < fs->ntx; i += dcap) {
		size_t n = fs->ntx - i < dcap ? fs->ntx - i : dcap;

		memset(d, 0, fs->bs);
		blk_init(d, MAGIC_JDESC, fs->jstart + pos, fs->jseq);
		put32(d + JD_COUNT, (uint32_t)n);
		for (size_t k = 0; k < n; k++)
			put64(d + JD_TARGETS + 8 * k, fs->tx[i + k]->blkno |
			      (fs->tx[i + k]->raw ? JD_RAW : 0));
		blk_set_crc(d, fs->bs);
		dcrc = crc32c(dcrc, d, fs->bs);
		err = log_write(fs, pos++, d, lflags);
		if (err)
			return err;
		for (size_t k = 0; k < n; k++) {
			struct rbuf *b = fs->tx[i + k];
			uint32_t c;

			/* Each image is checksummed once; the commit chains
			 * those checksums (replay verifies every image too). */
			if (!b->raw)
				blk_set_crc(b->data, blk_crc_span(fs, b->data));
			else
				fs->ctr.data_blocks_logged++;
			c = image_crc(fs, b->data, b->raw);
			dcrc = crc32c(dcrc, &c, 4);
			err = log_write(fs, pos++, b->data, lflags);
			if (err)
				return err;
		}
	}
	err = write_revokes(fs, &pos, &dcrc, lflags);
	if (err)
		return err;
	/*
	 * One flush before the commit block makes durable both the data
	 * written so far, on either device (ordered mode), and this
	 * transaction's log blocks: a commit block may only follow what it
	 * vouches for (an FUA write makes itself durable, not what came
	 * before it).  A lazy writeback commit wrote each log block FUA.
	 */
	err = lazy ? flush_lazy(fs) : flush_devices(fs);
	if (err)
		return err;
	memset(d, 0, fs->bs);
	blk_init(d, MAGIC_JCOMMIT, fs->jstart + pos, fs->jseq);
	put32(d + JC_NBLOCKS, need - 1);
	put32(d + JC_DATACRC, dcrc);
	blk_set_crc(d, fs->bs);
	err = log_write(fs, pos++, d, HW_FUA);
	if (err)
		return err;

	for (size_t i = 0; i < fs->ntx; i++) {
		err = buf_mark_logged(fs, fs->tx[i]);
		if (err)
			return err;
	}
	fs->ntx = 0;
	fs->tx_frames = false;
	fs->ctr.revokes += fs->nrevoke;
	fs->nrevoke = 0;
	fs->jhead = pos;
	fs->jseq++;
	fs->ctr.tx_commits++;
	alloc_release_busy(fs);
	if (fs->jlen - fs->jhead < fs->jlen / 2)
		return journal_checkpoint(fs);
	return 0;
}

/*
 * A commit that fails (a log write, a flush, the checkpoint after it) is
 * a metadata error (ref.h's shutdown): the operation making it stops half
 * made, and a log that cannot be written cannot make anything durable.
 */
static int commit(struct ref_fs *fs, bool sync)
{
	int err = commit_steps(fs, sync);

	if (err)
		fs->meta_err = true;
	return err;
}

int tx_commit(struct ref_fs *fs)
{
	return commit(fs, true);
}

/*
 * At a safe point inside or between operations: commit when the running
 * transaction is large (its images and revoke records), or when
 * freed-but-busy blocks crowd the free space (a commit frees them all).
 */
int tx_maybe_roll(struct ref_fs *fs)
{
	return tx_roll_for(fs, 0);
}

/* ... or when busy blocks leave less than room blocks for metadata,
 * which the next step of the operation may need. */
int tx_roll_for(struct ref_fs *fs, uint64_t room)
{
	size_t rev = (fs->nrevoke + desc_capacity(fs) - 1) / desc_capacity(fs);

	if (fs->ntx + rev < tx_roll_limit(fs) && !alloc_busy_pressure(fs) &&
	    !(fs->busy.units && alloc_meta_room(fs) < room))
		return 0;
	fs->ctr.tx_rolls++;
	return commit(fs, false);
}

/* ---- recovery ---- */

/* One parsed transaction. */
struct replay {
	uint64_t *targets;  /* home blocks of this transaction's images */
	uint32_t *logpos;   /* where each image sits in the log          */
	size_t n, cap;
	uint64_t *revoked;  /* blocks this transaction revokes           */
	size_t nrev, revcap;
};

static int replay_push(struct replay *r, uint64_t target, uint32_t pos)
{
	size_t cap = r->cap;
	int err = grow((void **)&r->targets, &cap, r->n, sizeof(*r->targets));

	if (!err)
		err = grow((void **)&r->logpos, &r->cap, r->n, sizeof(*r->logpos));
	if (err)
		return err;
	r->targets[r->n] = target;
	r->logpos[r->n] = pos;
	r->n++;
	return 0;
}

static int log_read(struct ref_fs *fs, uint32_t pos, void *buf)
{
	return hw_read(fs->dev, (fs->jstart + pos) << fs->bshift, buf, fs->bs);
}

static bool target_ok(const struct ref_fs *fs, uint64_t t)
{
	/* Logged blocks are the superblock or live past the log; file data
	 * lives in the data region. */
	if (t & JD_RAW)
		return (t & ~JD_RAW) >= fs->data && (t & ~JD_RAW) < fs->total;
	return t == 0 || (t >= fs->itab && t < fs->total);
}

/* Verify the images of the descriptor in blk (count of them, at pos+1..)
 * and chain their checksums; 1 intact, 0 not, -errno. */
static int check_images(struct ref_fs *fs, struct replay *r, uint32_t pos,
			uint32_t count, uint32_t *dcrc)
{
	for (uint32_t k = 0; k < count; k++) {
		uint64_t t = r->targets[r->n - count + k];
		uint8_t *img = fs->scratch;
		uint32_t c;
		int err = log_read(fs, pos + 1 + k, img);

		if (err)
			return err;
		if (!(t & JD_RAW) &&
		    blk_verify_full(img, blk_crc_span(fs, img), fs->bs,
				    get32(img + BLKHDR_MAGIC), t))
			return 0;
		c = image_crc(fs, img, t & JD_RAW);
		*dcrc = crc32c(*dcrc, &c, 4);
	}
	return 1;
}

/*
 * Parse the transaction with sequence seq starting at pos: its images'
 * targets into r->targets, its revoked blocks into r->revoked.  Returns 1
 * and the next position when it is complete and intact, 0 when the log
 * ends here (nothing, a torn or stale transaction), -errno on I/O failure.
 */
static int parse_txn(struct ref_fs *fs, uint64_t seq, uint32_t pos,
		     struct replay *r, uint32_t *next, uint8_t *blk)
{
	uint32_t dcap = desc_capacity(fs), dcrc = 0, start = pos;
	int err;

	r->n = r->nrev = 0;
	for (;;) {
		uint32_t count, magic;

		if (pos >= fs->jlen)
			return 0;
		err = log_read(fs, pos, blk);
		if (err)
			return err;
		if (get64(blk + BLKHDR_OWNER) != seq)
			return 0;
		magic = get32(blk + BLKHDR_MAGIC);
		if (magic == MAGIC_JCOMMIT)
			break;
		if (magic != MAGIC_JDESC && magic != MAGIC_JREVOKE)
			return 0;
		if (blk_verify(blk, fs->bs, magic, fs->jstart + pos))
			return 0;
		/*
		 * A descriptor's count is the images that follow it in the log;
		 * a revoke block's is the block numbers inside it, which take
		 * no log blocks.  So only a descriptor's count is bounded by
		 * the room left in the log (below): a revoke block near the
		 * log's end listing more blocks than positions remain is
		 * intact, and judging it torn would drop a transaction whose
		 * commit block is durable, one a checkpoint may already have
		 * written home in part.
		 */
		count = get32(blk + JD_COUNT);
		if (count == 0 || count > dcap)
			return 0;
		dcrc = crc32c(dcrc, blk, fs->bs);
		if (magic == MAGIC_JREVOKE) {
			for (uint32_t k = 0; k < count; k++) {
				err = grow((void **)&r->revoked, &r->revcap,
					   r->nrev, sizeof(*r->revoked));
				if (err)
					return err;
				r->revoked[r->nrev++] = get64(blk + JD_TARGETS + 8 * k);
			}
			pos++;
			continue;
		}
		if (pos + 1 + count >= fs->jlen)
			return 0;
		for (uint32_t k = 0; k < count; k++) {
			err = replay_push(r, get64(blk + JD_TARGETS + 8 * k),
					  pos + 1 + k);
			if (err)
				return err;
		}
		/* Every image must be intact (a torn one ends the log here),
		 * and the chain of their checksums must match the commit's. */
		err = check_images(fs, r, pos, count, &dcrc);
		if (err <= 0)
			return err;
		pos += 1 + count;
	}
	if (blk_verify(blk, fs->bs, MAGIC_JCOMMIT, fs->jstart + pos))
		return 0;
	if (get32(blk + JC_NBLOCKS) != pos - start ||
	    get32(blk + JC_DATACRC) != dcrc || (r->n == 0 && r->nrev == 0))
		return 0;
	*next = pos + 1;
	return 1;
}

/* Install one replayed image in the cache as a logged (pinned) buffer. */
static int replay_image(struct ref_fs *fs, uint64_t target, const uint8_t *img)
{
	uint64_t blk = target & ~JD_RAW;
	struct rbuf *b, *old;
	bool logged;
	int err;

	if (!target_ok(fs, target) ||
	    (!(target & JD_RAW) &&
	     blk_verify_full(img, blk_crc_span(fs, img), fs->bs,
			     get32(img + BLKHDR_MAGIC), target))) {
		ref_report(fs, "journal: image for block %llu in a committed "
			   "transaction is damaged", (unsigned long long)blk);
		return -EFSCORRUPTED;
	}
	/* A block logged as metadata in one transaction and as file data
	 * in a later one (or the reverse): the later image replaces the
	 * earlier one's buffer. */
	old = buf_find(fs, blk);
	if (old && old->raw != !!(target & JD_RAW))
		buf_forget(fs, blk, &logged);
	err = (target & JD_RAW) ? buf_get_raw(fs, blk, false, &b) :
				  buf_get_new(fs, blk, &b);
	if (err)
		return err;
	memcpy(b->data, img, fs->bs);
	err = buf_mark_logged(fs, b);
	buf_put(fs, b);
	return err;
}

/* The revoke table: (block, latest revoking sequence), sorted by block. */
struct rev { uint64_t blk, seq; };
struct revtab {
	struct rev *v;
	size_t n, cap;
};

static int rev_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct rev *)a)->blk, y = ((const struct rev *)b)->blk;

	return x < y ? -1 : x > y;
}

static int revtab_add(struct revtab *t, const uint64_t *blks, size_t n,
		      uint64_t seq)
{
	for (size_t i = 0; i < n; i++) {
		int err = grow((void **)&t->v, &t->cap, t->n, sizeof(*t->v));

		if (err)
			return err;
		t->v[t->n].blk = blks[i];
		t->v[t->n].seq = seq;
		t->n++;
	}
	return 0;
}

/* Sort by block and keep one entry per block, its latest sequence. */
static void revtab_finish(struct revtab *t)
{
	size_t k = 0;

	if (t->n == 0)
		return;
	qsort(t->v, t->n, sizeof(*t->v), rev_cmp);
	for (size_t i = 0; i < t->n; i++) {
		if (k && t->v[k - 1].blk == t->v[i].blk) {
			if (t->v[i].seq > t->v[k - 1].seq)
				t->v[k - 1].seq = t->v[i].seq;
			continue;
		}
		t->v[k++] = t->v[i];
	}
	t->n = k;
}

/* Was blk revoked by a transaction at or after seq? */
static bool revoked(const struct revtab *t, uint64_t blk, uint64_t seq)
{
	struct rev key = { blk, 0 };
	const struct rev *hit = t->n ? bsearch(&key, t->v, t->n, sizeof(*t->v),
					       rev_cmp) : NULL;

	return hit && hit->seq >= seq;
}

/*
 * Pass one: the committed transactions from the header's sequence on, and
 * their revokes.  *ntx is how many there are.
 */
static int scan_log(struct ref_fs *fs, struct replay *r, struct revtab *rt,
		    uint8_t *blk, uint64_t *ntx)
{
	uint32_t pos = 0, next = 0;

	for (*ntx = 0;; (*ntx)++) {
		int got = parse_txn(fs, fs->jseq + *ntx, pos, r, &next, blk);

		if (got <= 0)
			return got;
		if (revtab_add(rt, r->revoked, r->nrev, fs->jseq + *ntx))
			return -ENOMEM;
		pos = next;
	}
}

/* Pass two: install every image no later transaction revoked. */
static int replay_log(struct ref_fs *fs, struct replay *r,
		      const struct revtab *rt, uint8_t *blk, uint64_t ntx)
{
	uint32_t pos = 0, next = 0;

	for (uint64_t t = 0; t < ntx; t++) {
		int got = parse_txn(fs, fs->jseq, pos, r, &next, blk);

		if (got < 0)
			return got;
		if (got == 0) {
			ref_report(fs, "journal: transaction %llu changed "
				   "between the two replay passes",
				   (unsigned long long)fs->jseq);
			return -EIO;
		}
		for (size_t i = 0; i < r->n; i++) {
			int err;

			if (revoked(rt, r->targets[i] & ~JD_RAW, fs->jseq)) {
				fs->ctr.replay_revoked++;
				continue;
			}
			err = log_read(fs, r->logpos[i], blk);
			if (!err)
				err = replay_image(fs, r->targets[i], blk);
			if (err)
				return err;
		}
		fs->ctr.recovered_txns++;
		fs->jseq++;
		pos = next;
	}
	return 0;
}

int journal_recover(struct ref_fs *fs, bool norecovery, const uint8_t *home)
{
	struct replay r = { 0 };
	struct revtab rt = { 0 };
	struct rbuf *jh;
	bool logged;
	uint8_t *blk = NULL;
	uint64_t ntx = 0;
	int err;

	err = buf_read(fs, 1, MAGIC_JHDR, &jh);
	if (err)
		return err;
	fs->jseq = get64(jh->data + JH_SEQ);
	buf_put(fs, jh);
	buf_forget(fs, 1, &logged);
	blk = park_alloc(fs->bs);
	if (!blk)
		return -ENOMEM;
	err = scan_log(fs, &r, &rt, blk, &ntx);
	if (!err && ntx && norecovery) {
		ref_report(fs, "journal holds committed transactions and "
			   "recovery is disabled");
		err = -EROFS;
	}
	if (!err) {
		revtab_finish(&rt);
		err = replay_log(fs, &r, &rt, blk, ntx);
	}
	/* the replayed superblock, before anything is written home */
	if (!err && fs->ctr.recovered_txns && home)
		err = super_check_replayed(fs, home);
	/* A read-only mount keeps replayed images in memory, never at home;
	 * a writable one writes them home and drops the file data ones. */
	fs->jhead = 0;
	if (!err && fs->ctr.recovered_txns)
		err = journal_checkpoint(fs);
	if (!err && !fs->rdonly)
		bcache_drop_raw(fs);
	free(r.targets);
	free(r.logpos);
	free(r.revoked);
	free(rt.v);
	park_free(blk, fs->bs);
	return err;
}
