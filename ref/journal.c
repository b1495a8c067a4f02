/*
 * journal.c - the metadata write-ahead log: commit, checkpoint, recovery.
 *
 * The log is a linear area of J blocks after the journal header.  Each
 * commit appends one transaction:
 *
 *   pos:  h        h+1 .. h+n1     h+n1+1 ...          last
 *        +--------+--------------+--------+--------+  +--------+
 *        | desc   | n1 images    | desc   | images |..| commit |
 *        | seq s  | (full blocks)| seq s  |        |  | seq s  |
 *        +--------+--------------+--------+--------+  +--------+
 *
 * A descriptor lists the home block numbers of the images that follow it;
 * the commit block carries the transaction's block count and a CRC over
 * its descriptors and the checksums of its images (each image carries its
 * own), so a torn transaction is recognised and ignored at replay.  The header records the sequence number expected at
 * log position 0.
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
 * File data is written to the device before the commit that maps it: a
 * flush of the data and realtime devices precedes every commit block
 * (ordered mode), and makes the transaction's log blocks durable too.
 */
#include "ref/ref_internal.h"

#include <stdlib.h>

static uint32_t desc_capacity(const struct ref_fs *fs)
{
	return (fs->bs - JD_TARGETS) / 8;
}

size_t tx_roll_limit(const struct ref_fs *fs)
{
	return fs->jlen / 4;
}

static int log_write(struct ref_fs *fs, uint32_t pos, const void *data,
		     unsigned flags)
{
	fs->ctr.journal_blocks_written++;
	return hw_write(fs->dev, (fs->jstart + pos) << fs->bshift, data, fs->bs,
			HW_META | flags);
}

static int write_jhdr(struct ref_fs *fs, uint64_t seq)
{
	uint8_t *b = fs->scratch;

	memset(b, 0, fs->bs);
	blk_init(b, MAGIC_JHDR, 1, 0);
	put64(b + JH_SEQ, seq);
	blk_set_crc(b, blk_crc_span(fs, b));
	return hw_write(fs->dev, (uint64_t)1 << fs->bshift, b, fs->bs,
			HW_META | HW_FUA);
}

int journal_checkpoint(struct ref_fs *fs)
{
	int err = 0;

	if (fs->rdonly)
		return 0;
	if (fs->ntx)
		return -EINVAL; /* callers commit first; see the policy above */
	for (size_t i = 0; i < fs->nckpt; i++) {
		err = buf_write_inplace(fs, fs->ckpt[i]);
		if (err)
			return err;
	}
	err = hw_flush(fs->dev);
	if (err)
		return err;
	err = write_jhdr(fs, fs->jseq);
	if (err)
		return err;
	for (size_t i = 0; i < fs->nckpt; i++)
		buf_unpin(fs, fs->ckpt[i]);
	fs->nckpt = 0;
	fs->jhead = 0;
	fs->ctr.checkpoints++;
	alloc_release_busy(fs, true);
	return 0;
}

static int flush_devices(struct ref_fs *fs)
{
	int err = hw_flush(fs->dev);

	if (!err && fs->rtdev)
		err = hw_flush(fs->rtdev);
	return err;
}

int tx_commit(struct ref_fs *fs)
{
	uint32_t dcap = desc_capacity(fs), pos, ndesc, need;
	uint32_t dcrc = 0;
	uint8_t *d = fs->scratch;
	int err;

	if (fs->rdonly)
		return 0;
	if (fs->ntx == 0) {
		/* nothing to log: fsync still makes the data durable */
		err = flush_devices(fs);
		if (!err)
			alloc_release_busy(fs, false);
		return err;
	}
	ndesc = (uint32_t)((fs->ntx + dcap - 1) / dcap);
	need = ndesc + (uint32_t)fs->ntx + 1;
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
			put64(d + JD_TARGETS + 8 * k, fs->tx[i + k]->blkno);
		blk_set_crc(d, fs->bs);
		dcrc = crc32c(dcrc, d, fs->bs);
		err = log_write(fs, pos++, d, 0);
		if (err)
			return err;
		for (size_t k = 0; k < n; k++) {
			struct rbuf *b = fs->tx[i + k];

			/* Each image is checksummed once; the commit chains
			 * those checksums (replay verifies every image too). */
			blk_set_crc(b->data, blk_crc_span(fs, b->data));
			dcrc = crc32c(dcrc, b->data + BLKHDR_CRC, 4);
			err = log_write(fs, pos++, b->data, 0);
			if (err)
				return err;
		}
	}
	/*
	 * One flush before the commit block makes durable both the data
	 * written so far, on either device (ordered mode), and this
	 * transaction's log blocks: a commit block may only follow what it
	 * vouches for (an FUA write makes itself durable, not what came
	 * before it).
	 */
	err = flush_devices(fs);
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
	fs->jhead = pos;
	fs->jseq++;
	fs->ctr.tx_commits++;
	alloc_release_busy(fs, false);
	if (fs->jlen - fs->jhead < fs->jlen / 2)
		return journal_checkpoint(fs);
	return 0;
}

/*
 * At a safe point inside or between operations: commit when the running
 * transaction is large, or when freed-but-busy blocks crowd the free
 * space (a commit frees data, a checkpoint metadata).
 */
int tx_maybe_roll(struct ref_fs *fs)
{
	int err;

	if (fs->ntx < tx_roll_limit(fs) && !alloc_busy_pressure(fs))
		return 0;
	fs->ctr.tx_rolls++;
	err = tx_commit(fs);
	if (!err && alloc_busy_pressure(fs))
		err = journal_checkpoint(fs);
	return err;
}

/* ---- recovery ---- */

struct replay {
	uint64_t *targets;  /* home blocks of this transaction's images */
	uint32_t *logpos;   /* where each image sits in the log          */
	size_t n, cap;
};

static int replay_push(struct replay *r, uint64_t target, uint32_t pos)
{
	if (r->n == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 64;
		uint64_t *t = realloc(r->targets, ncap * sizeof(*t));
		uint32_t *p;

		if (!t)
			return -ENOMEM;
		r->targets = t;
		p = realloc(r->logpos, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		r->logpos = p;
		r->cap = ncap;
	}
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
	/* Logged blocks are the superblock or live past the log. */
	return t == 0 || (t >= fs->itab && t < fs->total);
}

/*
 * Parse the transaction with sequence seq starting at pos.  Returns 1 and
 * the next position when it is complete and intact, 0 when the log ends
 * here (nothing, a torn or stale transaction), -errno on I/O failure.
 */
static int parse_txn(struct ref_fs *fs, uint64_t seq, uint32_t pos,
		     struct replay *r, uint32_t *next, uint8_t *blk)
{
	uint32_t dcap = desc_capacity(fs), dcrc = 0, start = pos;
	int err;

	r->n = 0;
	for (;;) {
		uint32_t count;

		if (pos >= fs->jlen)
			return 0;
		err = log_read(fs, pos, blk);
		if (err)
			return err;
		if (get64(blk + BLKHDR_OWNER) != seq)
			return 0;
		if (get32(blk + BLKHDR_MAGIC) == MAGIC_JCOMMIT)
			break;
		if (blk_verify(blk, fs->bs, MAGIC_JDESC, fs->jstart + pos))
			return 0;
		count = get32(blk + JD_COUNT);
		if (count == 0 || count > dcap || pos + 1 + count >= fs->jlen)
			return 0;
		dcrc = crc32c(dcrc, blk, fs->bs);
		for (uint32_t k = 0; k < count; k++) {
			err = replay_push(r, get64(blk + JD_TARGETS + 8 * k),
					  pos + 1 + k);
			if (err)
				return err;
		}
		/* Every image must be intact (a torn one ends the log here),
		 * and the chain of their checksums must match the commit's. */
		for (uint32_t k = 0; k < count; k++) {
			uint8_t *img = fs->scratch;

			err = log_read(fs, pos + 1 + k, img);
			if (err)
				return err;
			if (blk_verify_full(img, blk_crc_span(fs, img), fs->bs,
					    get32(img + BLKHDR_MAGIC),
					    r->targets[r->n - count + k]))
				return 0;
			dcrc = crc32c(dcrc, img + BLKHDR_CRC, 4);
		}
		pos += 1 + count;
	}
	if (blk_verify(blk, fs->bs, MAGIC_JCOMMIT, fs->jstart + pos))
		return 0;
	if (get32(blk + JC_NBLOCKS) != pos - start ||
	    get32(blk + JC_DATACRC) != dcrc || r->n == 0)
		return 0;
	*next = pos + 1;
	return 1;
}

/* Install one replayed image in the cache as a logged (pinned) buffer. */
static int replay_image(struct ref_fs *fs, uint64_t target, const uint8_t *img)
{
	struct rbuf *b;
	int err;

	if (!target_ok(fs, target) ||
	    blk_verify_full(img, blk_crc_span(fs, img), fs->bs,
			    get32(img + BLKHDR_MAGIC), target)) {
		ref_report(fs, "journal: image for block %llu in a committed "
			   "transaction is damaged", (unsigned long long)target);
		return -EFSCORRUPTED;
	}
	err = buf_get_new(fs, target, &b);
	if (err)
		return err;
	memcpy(b->data, img, fs->bs);
	err = buf_mark_logged(fs, b);
	buf_put(fs, b);
	return err;
}

int journal_recover(struct ref_fs *fs, bool norecovery)
{
	struct replay r = { 0 };
	struct rbuf *jh;
	uint8_t *blk = NULL;
	uint64_t seq;
	uint32_t pos = 0, next = 0;
	int err, got;

	err = buf_read(fs, 1, MAGIC_JHDR, &jh);
	if (err)
		return err;
	seq = get64(jh->data + JH_SEQ);
	buf_put(fs, jh);
	buf_forget(fs, 1);
	blk = malloc(fs->bs);
	if (!blk)
		return -ENOMEM;
	fs->jseq = seq;
	for (;;) {
		got = parse_txn(fs, fs->jseq, pos, &r, &next, blk);
		if (got < 0) {
			err = got;
			goto out;
		}
		if (got == 0)
			break;
		if (norecovery) {
			ref_report(fs, "journal holds committed transactions and "
				   "recovery is disabled");
			err = -EROFS;
			goto out;
		}
		for (size_t i = 0; i < r.n; i++) {
			err = log_read(fs, r.logpos[i], blk);
			if (err)
				goto out;
			err = replay_image(fs, r.targets[i], blk);
			if (err)
				goto out;
		}
		fs->ctr.recovered_txns++;
		fs->jseq++;
		pos = next;
	}
	/* A read-only mount keeps replayed images in memory, never at home. */
	fs->jhead = 0;
	err = fs->ctr.recovered_txns ? journal_checkpoint(fs) : 0;
out:
	free(r.targets);
	free(r.logpos);
	free(blk);
	return err;
}
