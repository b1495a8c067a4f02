/*
 * alloc.c - the free-space allocator: a bitmap over the data region.
 *
 * Bitmap block g covers data blocks [data + g*bpb, data + (g+1)*bpb); a
 * set bit is an allocated block.  Each bitmap block carries its own free
 * count, and the superblock records how many bitmap blocks have been
 * initialised (SB_BMINIT): groups past it are wholly free and have never
 * been written, so formatting a 64 TiB null: device costs nothing.
 * Groups are initialised in order, on first use.
 *
 * Freed blocks are "busy" until they are safe to reuse: file data until
 * the transaction that freed it commits (before that, a crash brings the
 * old mapping back, and the old bytes must still be there), metadata until
 * the next checkpoint (its images may still be in the log, and replay
 * would write them over the block's next owner).
 *
 * Data allocations leave a small reserve so a B+tree split that follows a
 * data allocation always finds its blocks.
 */
#include "ref/ref_internal.h"

#include <stdlib.h>

#define META_RESERVE (2 * BT_MAX_LEVELS + 8)

static uint64_t group_len(const struct ref_fs *fs, uint32_t g)
{
	uint64_t first = fs->data + (uint64_t)g * fs->bpb;
	uint64_t left = first < fs->total ? fs->total - first : 0;

	return left < fs->bpb ? left : fs->bpb;
}

int alloc_mount(struct ref_fs *fs)
{
	struct rbuf *sb;
	int err;

	err = buf_read(fs, 0, MAGIC_SUPER, &sb);
	if (err)
		return err;
	fs->bminit = get32(sb->data + SB_BMINIT);
	buf_put(fs, sb);
	if (fs->bminit > fs->bmaplen) {
		ref_report(fs, "superblock: %u bitmap blocks initialised, only %u exist",
			   fs->bminit, fs->bmaplen);
		return -EFSCORRUPTED;
	}
	fs->grp_free = calloc(fs->bmaplen ? fs->bmaplen : 1, sizeof(*fs->grp_free));
	if (!fs->grp_free)
		return -ENOMEM;
	fs->free_blocks = 0;
	for (uint32_t g = 0; g < fs->bmaplen; g++) {
		uint64_t glen = group_len(fs, g);
		struct rbuf *b;
		uint32_t nfree;

		if (g >= fs->bminit) {
			fs->grp_free[g] = (uint32_t)glen;
			fs->free_blocks += glen;
			continue;
		}
		err = buf_read(fs, fs->bmap + g, MAGIC_BITMAP, &b);
		if (err)
			return err;
		nfree = get32(b->data + BLKHDR_SIZE);
		buf_put(fs, b);
		if (nfree > glen) {
			ref_report(fs, "bitmap block %u: free count %u exceeds group "
				   "size %llu", g, nfree, (unsigned long long)glen);
			return -EFSCORRUPTED;
		}
		fs->grp_free[g] = nfree;
		fs->free_blocks += nfree;
	}
	return 0;
}

void alloc_unmount(struct ref_fs *fs)
{
	free(fs->grp_free);
	free(fs->busy);
	fs->grp_free = NULL;
	fs->busy = NULL;
	fs->nbusy = fs->busycap = 0;
}

/* ---- busy extents: a sorted array of disjoint ranges ---- */

/* Index of the first busy extent ending after blk. */
static size_t busy_search(const struct ref_fs *fs, uint64_t blk)
{
	size_t lo = 0, hi = fs->nbusy;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (fs->busy[mid].start + fs->busy[mid].len <= blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool alloc_is_busy(const struct ref_fs *fs, uint64_t start, uint64_t len)
{
	size_t i = busy_search(fs, start);

	return i < fs->nbusy && fs->busy[i].start < start + len;
}

static int busy_add(struct ref_fs *fs, uint64_t start, uint64_t len, bool meta)
{
	size_t i = busy_search(fs, start);

	if (fs->nbusy == fs->busycap) {
		size_t ncap = fs->busycap ? fs->busycap * 2 : 64;
		struct busy_ext *nb = realloc(fs->busy, ncap * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		fs->busy = nb;
		fs->busycap = ncap;
	}
	memmove(&fs->busy[i + 1], &fs->busy[i], (fs->nbusy - i) * sizeof(*fs->busy));
	fs->busy[i] = (struct busy_ext){ start, len, meta };
	fs->nbusy++;
	fs->busy_blocks += len;
	return 0;
}

void alloc_release_busy(struct ref_fs *fs, bool checkpoint)
{
	size_t k = 0;

	fs->busy_blocks = 0;
	for (size_t i = 0; i < fs->nbusy; i++) {
		if (fs->busy[i].meta && !checkpoint) {
			fs->busy_blocks += fs->busy[i].len;
			fs->busy[k++] = fs->busy[i];
		}
	}
	fs->nbusy = k;
}

/* ---- bitmap access ---- */

static int bm_get(struct ref_fs *fs, uint32_t g, struct rbuf **out)
{
	struct rbuf *b, *sb;
	int err;

	if (g < fs->bminit)
		return buf_read(fs, fs->bmap + g, MAGIC_BITMAP, out);
	/* First use of group g (groups are initialised in order). */
	err = buf_read(fs, 0, MAGIC_SUPER, &sb);
	if (err)
		return err;
	err = buf_get_new(fs, fs->bmap + g, &b);
	if (err) {
		buf_put(fs, sb);
		return err;
	}
	blk_init(b->data, MAGIC_BITMAP, fs->bmap + g, 0);
	put32(b->data + BLKHDR_SIZE, (uint32_t)group_len(fs, g));
	buf_dirty(fs, b);
	fs->bminit = g + 1;
	put32(sb->data + SB_BMINIT, fs->bminit);
	buf_dirty(fs, sb);
	buf_put(fs, sb);
	*out = b;
	return 0;
}

static bool bit_test(const uint8_t *bits, uint64_t i)
{
	return bits[i >> 3] & (1u << (i & 7));
}

static void bits_set(uint8_t *bits, uint64_t from, uint64_t n, bool on)
{
	for (uint64_t i = from; i < from + n; i++) {
		if (on)
			bits[i >> 3] |= (uint8_t)(1u << (i & 7));
		else
			bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
	}
}

/* First clear bit at or after i in [i, end), or end. */
static uint64_t find_clear(const uint8_t *bits, uint64_t i, uint64_t end)
{
	while (i < end && (i & 63)) {
		if (!bit_test(bits, i))
			return i;
		i++;
	}
	while (i + 64 <= end) {
		uint64_t w;

		memcpy(&w, bits + (i >> 3), 8);
		if (w != ~0ull)
			return i + (uint64_t)__builtin_ctzll(~w);
		i += 64;
	}
	while (i < end && bit_test(bits, i))
		i++;
	return i;
}

/*
 * Find a free, non-busy run in group g starting at or after bit `from`.
 * Returns its length (0 = none) and its first bit in *at.
 */
static uint64_t group_find(struct ref_fs *fs, const uint8_t *bits, uint32_t g,
			   uint64_t from, uint64_t maxlen, uint64_t *at)
{
	uint64_t glen = group_len(fs, g);
	uint64_t base = fs->data + (uint64_t)g * fs->bpb;
	uint64_t i = from;

	while (i < glen) {
		uint64_t s = find_clear(bits, i, glen), e;
		size_t bi;

		if (s >= glen)
			return 0;
		e = s;
		while (e < glen && e - s < maxlen && !bit_test(bits, e))
			e++;
		/* trim at the first busy extent overlapping [s, e) */
		bi = busy_search(fs, base + s);
		if (bi < fs->nbusy && fs->busy[bi].start < base + e) {
			if (fs->busy[bi].start > base + s) {
				e = fs->busy[bi].start - base;
			} else {
				i = fs->busy[bi].start + fs->busy[bi].len - base;
				continue;
			}
		}
		*at = s;
		return e - s;
	}
	return 0;
}

static int alloc_common(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
			bool data, uint64_t *start, uint64_t *len)
{
	uint32_t g0, g;
	uint64_t from;
	int err;

	fs->ctr.alloc_calls++;
	if (fs->rdonly)
		return -EROFS;
	if (data) {
		/* Busy blocks are free but not usable: the reserve for B+tree
		 * nodes must be made of blocks that really are. */
		uint64_t usable = fs->free_blocks - fs->busy_blocks;

		if (usable <= META_RESERVE)
			return -ENOSPC;
		if (maxlen > usable - META_RESERVE)
			maxlen = usable - META_RESERVE;
	}
	if (maxlen > fs->maxext)
		maxlen = fs->maxext;
	if (goal < fs->data || goal >= fs->total)
		goal = fs->data;
	g0 = (uint32_t)((goal - fs->data) / fs->bpb);
	from = (goal - fs->data) % fs->bpb;
	for (uint32_t k = 0; k <= fs->bmaplen; k++) {
		struct rbuf *b;
		uint64_t at, n;

		g = (g0 + k) % fs->bmaplen;
		if (k == fs->bmaplen) /* wrapped: the start of g0 */
			from = 0;
		else if (k > 0)
			from = 0;
		if (fs->grp_free[g] == 0 || g > fs->bminit)
			continue;
		err = bm_get(fs, g, &b);
		if (err)
			return err;
		n = group_find(fs, b->data + BM_HDR_SIZE, g, from, maxlen, &at);
		if (n == 0) {
			buf_put(fs, b);
			continue;
		}
		bits_set(b->data + BM_HDR_SIZE, at, n, true);
		put32(b->data + BLKHDR_SIZE, get32(b->data + BLKHDR_SIZE) - (uint32_t)n);
		buf_dirty(fs, b);
		buf_put(fs, b);
		fs->grp_free[g] -= (uint32_t)n;
		fs->free_blocks -= n;
		*start = fs->data + (uint64_t)g * fs->bpb + at;
		*len = n;
		fs->ctr.extents_allocated++;
		fs->ctr.blocks_allocated += n;
		return 0;
	}
	return -ENOSPC;
}

/* Metadata (B+tree nodes): may use the reserve. */
int alloc_extent(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
		 uint64_t *start, uint64_t *len)
{
	return alloc_common(fs, goal, maxlen, false, start, len);
}

/* File data: up to maxlen blocks, first fit at or after goal. */
int alloc_data(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
	       uint64_t *start, uint64_t *len)
{
	return alloc_common(fs, goal, maxlen, true, start, len);
}

bool alloc_has_busy(const struct ref_fs *fs)
{
	return fs->nbusy != 0;
}

/*
 * True when busy blocks are a large share of the free space: time to
 * commit (and checkpoint) so they can be reused, before an allocation in
 * the middle of a B+tree change finds nothing.
 */
bool alloc_busy_pressure(const struct ref_fs *fs)
{
	return fs->busy_blocks * 4 > fs->free_blocks;
}

/*
 * Walk the bitmap groups covering [start, start+len): first only checking
 * that every block is allocated (a double free is corruption, and nothing
 * may change before that is known), then clearing.
 */
static int free_walk(struct ref_fs *fs, uint64_t start, uint64_t len,
		     bool clear)
{
	while (len) {
		uint32_t g = (uint32_t)((start - fs->data) / fs->bpb);
		uint64_t at = (start - fs->data) % fs->bpb;
		uint64_t n = group_len(fs, g) - at;
		struct rbuf *b;
		int err;

		if (n > len)
			n = len;
		if (g >= fs->bminit) {
			ref_report(fs, "freeing block %llu in a never-used group",
				   (unsigned long long)start);
			return -EFSCORRUPTED;
		}
		err = bm_get(fs, g, &b);
		if (err)
			return err;
		for (uint64_t i = at; !clear && i < at + n; i++) {
			if (!bit_test(b->data + BM_HDR_SIZE, i)) {
				buf_put(fs, b);
				ref_report(fs, "freeing free block %llu",
					   (unsigned long long)(fs->data + g * fs->bpb + i));
				return -EFSCORRUPTED;
			}
		}
		if (clear) {
			bits_set(b->data + BM_HDR_SIZE, at, n, false);
			put32(b->data + BLKHDR_SIZE,
			      get32(b->data + BLKHDR_SIZE) + (uint32_t)n);
			buf_dirty(fs, b);
			fs->grp_free[g] += (uint32_t)n;
			fs->free_blocks += n;
			fs->ctr.blocks_freed += n;
		}
		buf_put(fs, b);
		start += n;
		len -= n;
	}
	return 0;
}

static int free_common(struct ref_fs *fs, uint64_t start, uint64_t len,
		       bool meta)
{
	int err;

	if (start < fs->data || start + len > fs->total || start + len < start) {
		ref_report(fs, "freeing blocks %llu+%llu outside the data region",
			   (unsigned long long)start, (unsigned long long)len);
		return -EFSCORRUPTED;
	}
	err = free_walk(fs, start, len, false);
	if (!err)
		err = busy_add(fs, start, len, meta);
	if (!err)
		err = free_walk(fs, start, len, true);
	return err;
}

int alloc_free(struct ref_fs *fs, uint64_t start, uint64_t len)
{
	return free_common(fs, start, len, false);
}

int alloc_free_meta(struct ref_fs *fs, uint64_t blk)
{
	return free_common(fs, blk, 1, true);
}

/*
 * The audit's half: compare the on-disk bitmap with `runs`, every
 * reference the audit found, sorted by start.  Initialised groups are
 * compared bit for bit with an expected bitmap built from the runs;
 * never-used groups must hold no reference at all.
 */
int alloc_check(struct ref_fs *fs, const struct alloc_run *runs, size_t n)
{
	size_t bytes = fs->bs - BM_HDR_SIZE, r = 0;
	uint64_t total_free = 0;
	uint8_t *want = malloc(bytes);
	int bad = 0, err = 0;

	if (!want)
		return -ENOMEM;
	for (uint32_t g = 0; g < fs->bmaplen; g++) {
		uint64_t glen = group_len(fs, g);
		uint64_t gs = fs->data + (uint64_t)g * fs->bpb, ge = gs + glen;
		uint64_t nfree = 0, mism = 0, first = 0;
		const uint8_t *have;
		struct rbuf *b;

		while (r < n && runs[r].start + runs[r].len <= gs)
			r++;
		if (g >= fs->bminit) {
			if (r < n && runs[r].start < ge) {
				ref_report(fs, "block %llu is referenced but lies in "
					   "never-used bitmap group %u",
					   (unsigned long long)(runs[r].start > gs ?
								runs[r].start : gs), g);
				bad = 1;
			}
			if (fs->grp_free[g] != glen) {
				ref_report(fs, "bitmap group %u (unused): in-core free "
					   "count %u, expected %llu", g,
					   fs->grp_free[g], (unsigned long long)glen);
				bad = 1;
			}
			total_free += glen;
			continue;
		}
		memset(want, 0, bytes);
		for (size_t k = r; k < n && runs[k].start < ge; k++) {
			uint64_t a = runs[k].start > gs ? runs[k].start : gs;
			uint64_t e = runs[k].start + runs[k].len < ge ?
				     runs[k].start + runs[k].len : ge;

			bits_set(want, a - gs, e - a, true);
		}
		err = buf_read(fs, fs->bmap + g, MAGIC_BITMAP, &b);
		if (err)
			break;
		have = b->data + BM_HDR_SIZE;
		for (uint64_t i = 0; i < glen; i++) {
			bool set = bit_test(have, i);

			if (!set)
				nfree++;
			if (set != bit_test(want, i) && mism++ == 0)
				first = i;
		}
		if (mism) {
			ref_report(fs, "bitmap group %u: %llu blocks disagree with the "
				   "references found (first: block %llu is %s but %s)", g,
				   (unsigned long long)mism,
				   (unsigned long long)(gs + first),
				   bit_test(want, first) ? "referenced" : "unreferenced",
				   bit_test(want, first) ? "free" : "allocated");
			bad = 1;
		}
		if (get32(b->data + BLKHDR_SIZE) != nfree) {
			ref_report(fs, "bitmap group %u: header says %u free, bits say %llu",
				   g, get32(b->data + BLKHDR_SIZE), (unsigned long long)nfree);
			bad = 1;
		}
		if (fs->grp_free[g] != nfree) {
			ref_report(fs, "bitmap group %u: in-core free count %u, bits say %llu",
				   g, fs->grp_free[g], (unsigned long long)nfree);
			bad = 1;
		}
		buf_put(fs, b);
		total_free += nfree;
	}
	free(want);
	if (err)
		return err;
	if (total_free != fs->free_blocks) {
		ref_report(fs, "free blocks: in-core %llu, bitmap %llu",
			   (unsigned long long)fs->free_blocks,
			   (unsigned long long)total_free);
		bad = 1;
	}
	return bad ? -EFSCORRUPTED : 0;
}
