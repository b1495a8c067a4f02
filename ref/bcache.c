/*
 * bcache.c - the metadata buffer cache.
 *
 * Every metadata block the engine touches lives here while in use, and so
 * does every file data block written through the journal (data=journal,
 * or a file flagged journal-data): a "raw" buffer, without a block header,
 * whose only up-to-date copy may be here or in the log until the
 * checkpoint writes it home.  A buffer is in one of three states:
 *
 *   clean   matches the device; evictable (LRU) once unreferenced
 *   dirty   modified in the running transaction; pinned in memory
 *   logged  committed to the journal, not yet written in place; pinned
 *           until the next checkpoint writes it home
 *
 * Buffers are verified (magic, self-address, CRC) when read from the
 * device, so corruption surfaces as -EFSCORRUPTED at the first read, and
 * their CRC is recomputed when they are committed.  Nothing here writes in
 * place except buf_write_inplace(), called by the checkpoint.
 */
#include "ref/ref_internal.h"

#include "base/park.h"
#include "base/poison.h"

#include <stdlib.h>

static size_t hash_blk(const struct ref_fs *fs, uint64_t blkno)
{
	return (size_t)((blkno * 0x9E3779B97F4A7C15ull) >> 17) & (fs->hsize - 1);
}

static void lru_del(struct ref_fs *fs, struct rbuf *b)
{
	if (!b->lru_next)
		return;
	b->lru_prev->lru_next = b->lru_next;
	b->lru_next->lru_prev = b->lru_prev;
	b->lru_next = b->lru_prev = NULL;
	fs->nclean--;
}

static void lru_add(struct ref_fs *fs, struct rbuf *b)
{
	b->lru_next = &fs->lru;
	b->lru_prev = fs->lru.lru_prev;
	fs->lru.lru_prev->lru_next = b;
	fs->lru.lru_prev = b;
	fs->nclean++;
}

static void hash_del(struct ref_fs *fs, struct rbuf *b)
{
	struct rbuf **pp = &fs->htab[hash_blk(fs, b->blkno)];

	while (*pp && *pp != b)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = b->hnext;
	fs->nbufs--;
	if (b->raw)
		fs->nraw--;
}

static void set_raw(struct ref_fs *fs, struct rbuf *b, bool raw)
{
	if (b->raw == raw)
		return;
	b->raw = raw;
	if (raw)
		fs->nraw++;
	else
		fs->nraw--;
}

/* A buffer's memory, to the park for the next mount's (base/park.h). */
static void buf_release(struct ref_fs *fs, struct rbuf *b)
{
	park_free(b->data, fs->bs);
	park_free(b, sizeof(*b));
}

static void buf_free(struct ref_fs *fs, struct rbuf *b)
{
	lru_del(fs, b);
	hash_del(fs, b);
	buf_release(fs, b);
}

static int hash_grow(struct ref_fs *fs)
{
	size_t nsize = fs->hsize * 2;
	struct rbuf **nt = park_calloc(nsize, sizeof(*nt));
	struct rbuf **old = fs->htab;
	size_t osize = fs->hsize;

	if (!nt)
		return -ENOMEM;
	fs->htab = nt;
	fs->hsize = nsize;
	for (size_t i = 0; i < osize; i++) {
		struct rbuf *b = old[i];

		while (b) {
			struct rbuf *next = b->hnext;
			size_t h = hash_blk(fs, b->blkno);

			b->hnext = nt[h];
			nt[h] = b;
			b = next;
		}
	}
	park_cfree(old, osize, sizeof(*old));
	return 0;
}

int bcache_init(struct ref_fs *fs, size_t cache_max)
{
	/* small: it doubles as buffers come (cache_insert), and a mount of
	 * a fuzz input holds a few dozen */
	fs->hsize = 64;
	fs->htab = park_calloc(fs->hsize, sizeof(*fs->htab));
	if (!fs->htab)
		return -ENOMEM;
	fs->lru.lru_next = fs->lru.lru_prev = &fs->lru;
	fs->cache_max = cache_max ? cache_max : 4096;
	return 0;
}

void bcache_destroy(struct ref_fs *fs)
{
	for (size_t i = 0; fs->htab && i < fs->hsize; i++) {
		struct rbuf *b = fs->htab[i];

		while (b) {
			struct rbuf *next = b->hnext;

			buf_release(fs, b);
			b = next;
		}
	}
	park_cfree(fs->htab, fs->hsize, sizeof(*fs->htab));
	fs->htab = NULL;
	park_free(fs->tx, fs->txcap * sizeof(*fs->tx));
	park_free(fs->ckpt, fs->ckptcap * sizeof(*fs->ckpt));
	free(fs->revoke);
	fs->tx = fs->ckpt = NULL;
	fs->revoke = NULL;
}

static struct rbuf *cache_find(struct ref_fs *fs, uint64_t blkno)
{
	struct rbuf *b = fs->htab[hash_blk(fs, blkno)];

	while (b && b->blkno != blkno)
		b = b->hnext;
	return b;
}

static void evict(struct ref_fs *fs)
{
	while (fs->nclean > fs->cache_max) {
		struct rbuf *b = fs->lru.lru_next;

		buf_free(fs, b);
	}
}

/*
 * Room for need pointers in the array *arr, which holds n of them in room
 * for *cap: a block of the park's (park_grow), given back by
 * park_free(*arr, *cap * sizeof(**arr)).
 */
static int ptr_room(struct rbuf ***arr, size_t n, size_t *cap, size_t need)
{
	size_t bytes = *cap * sizeof(**arr);
	void *p = *arr;
	int err;

	if (need > SIZE_MAX / sizeof(**arr))
		return -ENOMEM;
	err = park_grow(&p, &bytes, n * sizeof(**arr), need * sizeof(**arr));
	if (!err) {
		*arr = p;
		*cap = bytes / sizeof(**arr);
	}
	return err;
}

/*
 * Room in the running transaction's array for n buffers.  A buffer joins
 * the transaction once (buf_dirty) and only while cached, so with room
 * for every cached buffer, made before one is cached, joining cannot
 * fail for want of memory.
 */
static int tx_room(struct ref_fs *fs, size_t n)
{
	return ptr_room(&fs->tx, fs->ntx, &fs->txcap, n);
}

static int cache_insert(struct ref_fs *fs, uint64_t blkno, struct rbuf **out)
{
	struct rbuf *b;
	size_t h;

	if (fs->nbufs >= fs->hsize * 2 && hash_grow(fs))
		return -ENOMEM;
	if (tx_room(fs, fs->nbufs + 1))
		return -ENOMEM;
	b = park_zalloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->data = park_alloc(fs->bs);
	if (!b->data) {
		park_free(b, sizeof(*b));
		return -ENOMEM;
	}
	b->blkno = blkno;
	h = hash_blk(fs, blkno);
	b->hnext = fs->htab[h];
	fs->htab[h] = b;
	fs->nbufs++;
	*out = b;
	return 0;
}

static void buf_hold(struct ref_fs *fs, struct rbuf *b)
{
	if (b->refs++ == 0)
		lru_del(fs, b);
}

/*
 * Read a metadata block.  magic 0 accepts any type (the caller checks);
 * self-address and checksum are always verified on a device read.
 */
int buf_read(struct ref_fs *fs, uint64_t blkno, uint32_t magic,
	     struct rbuf **out)
{
	struct rbuf *b;
	int err;

	fs->ctr.bcache_lookups++;
	if (blkno >= fs->total) {
		ref_report(fs, "metadata block %llu beyond the device (%llu blocks)",
			   (unsigned long long)blkno, (unsigned long long)fs->total);
		return -EFSCORRUPTED;
	}
	b = cache_find(fs, blkno);
	if (b && b->raw) {
		ref_report(fs, "block %llu: read as metadata, cached as file data",
			   (unsigned long long)blkno);
		return -EFSCORRUPTED;
	}
	if (b) {
		if (magic && get32(b->data + BLKHDR_MAGIC) != magic) {
			ref_report(fs, "block %llu: expected magic %08x, cached %08x",
				   (unsigned long long)blkno, magic,
				   get32(b->data + BLKHDR_MAGIC));
			return -EFSCORRUPTED;
		}
		buf_hold(fs, b);
		*out = b;
		return 0;
	}
	fs->ctr.bcache_misses++;
	err = cache_insert(fs, blkno, &b);
	if (err)
		return err;
	err = hw_read(fs->dev, blkno << fs->bshift, b->data, fs->bs);
	if (err)
		goto fail;
	{
		uint32_t m = magic ? magic : get32(b->data + BLKHDR_MAGIC);

		/* a header torn where a cut tears sectors: its copy
		 * (devio.c) */
		if (m == MAGIC_SUPER || m == MAGIC_JHDR)
			hdr_repair(b->data, fs->bs < HDR_SECTOR ? fs->bs :
				   HDR_SECTOR, fs->bs, m, blkno);
		if (blk_verify_full(b->data, blk_crc_span(fs, b->data), fs->bs,
				    m, blkno)) {
			ref_report(fs, "block %llu: bad checksum, magic or address "
				   "(magic %08x, expected %08x)",
				   (unsigned long long)blkno,
				   get32(b->data + BLKHDR_MAGIC), m);
			err = -EFSCORRUPTED;
			goto fail;
		}
	}
	b->refs = 1;
	*out = b;
	return 0;
fail:
	fs->meta_err = true;
	hash_del(fs, b);
	buf_release(fs, b);
	return err;
}

/* A buffer for a block just allocated: zeroed, no device read. */
int buf_get_new(struct ref_fs *fs, uint64_t blkno, struct rbuf **out)
{
	struct rbuf *b = cache_find(fs, blkno);
	int err;

	fs->ctr.bcache_lookups++;
	if (!b) {
		err = cache_insert(fs, blkno, &b);
		if (err)
			return err;
	}
	buf_hold(fs, b);
	set_raw(fs, b, false);
	memset(b->data, 0, fs->bs);
	*out = b;
	return 0;
}

/*
 * A buffer for file data block blkno, written through the journal: the
 * cached copy if there is one (the device may be behind it), else read
 * from the device (read), or left for the caller, who writes every byte
 * of it before anything reads it (!read: under MSan the bytes are
 * uninitialised until then, so a read of what the buffer held before
 * is caught; zeroing them first cost a memset of every block a
 * journaled write or a replay logs, overwritten at once).
 */
int buf_get_raw(struct ref_fs *fs, uint64_t blkno, bool read,
		struct rbuf **out)
{
	struct rbuf *b = cache_find(fs, blkno);
	int err;

	fs->ctr.bcache_lookups++;
	if (b && !b->raw) {
		ref_report(fs, "block %llu: file data, cached as metadata",
			   (unsigned long long)blkno);
		return -EFSCORRUPTED;
	}
	if (!b) {
		fs->ctr.bcache_misses++;
		err = cache_insert(fs, blkno, &b);
		if (err)
			return err;
		set_raw(fs, b, true);
		err = read ? hw_read(fs->dev, blkno << fs->bshift, b->data, fs->bs)
			   : 0;
		if (!read)
			mem_reuse(b->data, fs->bs);
		if (err) {
			hash_del(fs, b);
			buf_release(fs, b);
			return err;
		}
	}
	buf_hold(fs, b);
	*out = b;
	return 0;
}

/* The cached buffer of blkno, or NULL; no reference taken. */
struct rbuf *buf_find(struct ref_fs *fs, uint64_t blkno)
{
	return cache_find(fs, blkno);
}

/*
 * Drop every clean, unreferenced file data buffer: after a checkpoint
 * wrote them home, when file data stops going through the journal (the
 * journal-data flag cleared, recovery done), so no stale copy is read
 * later.  Dirty or logged ones cannot exist then (callers checkpoint).
 */
void bcache_drop_raw(struct ref_fs *fs)
{
	for (size_t i = 0; fs->nraw && i < fs->hsize; i++) {
		struct rbuf *b = fs->htab[i];

		while (b) {
			struct rbuf *next = b->hnext;

			if (b->raw && !b->refs && !b->dirty && !b->logged)
				buf_free(fs, b);
			b = next;
		}
	}
}

static int ptr_push(struct rbuf ***arr, size_t *n, size_t *cap, struct rbuf *b)
{
	int err = ptr_room(arr, *n, cap, *n + 1);

	if (!err)
		(*arr)[(*n)++] = b;
	return err;
}

static void ptr_remove(struct rbuf **arr, size_t *n, struct rbuf *b)
{
	for (size_t i = 0; i < *n; i++) {
		if (arr[i] == b) {
			arr[i] = arr[--*n];
			return;
		}
	}
}

/*
 * Join the running transaction.  Its array has room for every cached
 * buffer (tx_room, before a buffer is cached), so this cannot fail.
 */
void buf_dirty(struct ref_fs *fs, struct rbuf *b)
{
	fs->dirtied++;
	if (b->dirty)
		return;
	if (ptr_push(&fs->tx, &fs->ntx, &fs->txcap, b)) {
		/* more buffers in the transaction than are cached: a broken
		 * cache, which the journal must not commit half of */
		abort();
	}
	b->dirty = 1;
}

/*
 * The count is tested as decremented, not read back: read back, it was
 * merged with the state bytes beside it into one wider load, which waits
 * for the narrower store before it (a store-forwarding stall, most of a
 * put's time; a put is as frequent as a B+tree node visit).
 */
void buf_put(struct ref_fs *fs, struct rbuf *b)
{
	uint32_t refs = --b->refs;

	if (refs)
		return;
	if (b->dead)
		buf_release(fs, b);
	else if (!b->dirty && !b->logged) {
		lru_add(fs, b);
		evict(fs);
	}
}

/*
 * The block was freed: drop its buffer whatever its state, and say
 * whether there was one and whether the log holds a copy of it (logged:
 * logged buffers stay pinned until the checkpoint that empties the log,
 * so "logged" is exactly "the live log has an image of this block").  A
 * dirty or logged image of a dead block must never reach the device in
 * place; the caller revokes a logged one so replay cannot land it on the
 * block's next owner either.  A buffer still referenced leaves the hash
 * now and its memory goes at the last put.
 */
bool buf_forget(struct ref_fs *fs, uint64_t blkno, bool *logged)
{
	struct rbuf *b = cache_find(fs, blkno);

	*logged = false;
	if (!b)
		return false;
	*logged = b->logged;
	if (b->dirty)
		ptr_remove(fs->tx, &fs->ntx, b);
	if (b->logged)
		ptr_remove(fs->ckpt, &fs->nckpt, b);
	b->dirty = b->logged = 0;
	if (b->refs == 0) {
		buf_free(fs, b);
		return true;
	}
	hash_del(fs, b);
	b->dead = 1;
	return true;
}

/* Committed: the buffer waits for the checkpoint. */
int buf_mark_logged(struct ref_fs *fs, struct rbuf *b)
{
	b->dirty = 0;
	if (b->logged)
		return 0;
	b->logged = 1;
	return ptr_push(&fs->ckpt, &fs->nckpt, &fs->ckptcap, b);
}

int buf_write_inplace(struct ref_fs *fs, struct rbuf *b)
{
	if (b->raw)
		return hw_write(fs->dev, b->blkno << fs->bshift, b->data, fs->bs, 0);
	fs->ctr.meta_blocks_written++;
	return meta_write(fs, b->blkno, b->data, false);
}

/* Checkpointed: clean again, evictable once unreferenced. */
void buf_unpin(struct ref_fs *fs, struct rbuf *b)
{
	b->logged = 0;
	if (b->refs == 0 && !b->dirty) {
		lru_add(fs, b);
		evict(fs);
	}
}

/* ---- the engine's bt_store: B+tree nodes through the cache ---- */

static int store_get(void *ctx, uint64_t blk, int write, void **data,
		     void **handle)
{
	struct ref_fs *fs = ctx;
	struct rbuf *b;
	int err;

	if (write && fs->rdonly)
		return -EROFS;
	err = buf_read(fs, blk, 0, &b);
	if (err)
		return err;
	if (write)
		buf_dirty(fs, b);
	*data = b->data;
	*handle = b;
	return 0;
}

static void store_put(void *ctx, void *handle)
{
	buf_put(ctx, handle);
}

static int store_alloc(void *ctx, uint64_t near, uint64_t *blk)
{
	struct ref_fs *fs = ctx;
	struct rbuf *b;
	uint64_t len;
	int err;

	/* Without a neighbour to sit near, tree nodes aim at the middle of
	 * the last bitmap group in use, out of the way of file data growing
	 * from the bottom, so contiguous writes stay in one extent.  (The
	 * middle of the whole region would, on a device of several groups,
	 * be a group not initialised yet: groups are, in order, on first
	 * use, so the allocator would pass it over and take the first free
	 * block, among the data.) */
	if (near < fs->data) {
		uint64_t g = fs->bminit ? fs->bminit - 1 : 0;
		uint64_t lo = fs->data + g * fs->bpb;
		uint64_t hi = fs->total - lo < fs->bpb ? fs->total : lo + fs->bpb;

		near = lo + (hi - lo) / 2;
	}
	err = alloc_extent(fs, near, 1, blk, &len);
	if (err)
		return err;
	err = buf_get_new(fs, *blk, &b);
	if (err) {
		alloc_free(fs, *blk, 1);
		return err;
	}
	/* Stamp a valid header so a read before the tree writes it passes. */
	blk_init(b->data, 0, *blk, 0);
	buf_dirty(fs, b);
	buf_put(fs, b);
	return 0;
}

static int store_free(void *ctx, uint64_t blk)
{
	return alloc_free_meta(ctx, blk);
}

void bcache_bt_store_init(struct ref_fs *fs)
{
	fs->bt_store = (struct bt_store){
		.get = store_get,
		.put = store_put,
		.alloc = store_alloc,
		.free = store_free,
		.ctx = fs,
	};
}
