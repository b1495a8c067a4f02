/*
 * alloc.c - the free-space allocators: bitmaps over the data region and
 * over the realtime device.
 *
 * Both are one kind of space (struct alloc_space), counted in units:
 * blocks of the data region, or rt extents of the realtime device.
 * Bitmap block g covers units [base + g*bpb, base + (g+1)*bpb); a set bit
 * is an allocated unit.  Each bitmap block carries its own free count,
 * and the superblock records how many bitmap blocks have been initialised
 * (SB_BMINIT, SB_RTBMINIT): groups past it are wholly free and have never
 * been written, so formatting a 64 TiB null: device costs nothing.
 * Groups are initialised in order, on first use.  Both bitmaps live on the
 * data device and are journaled like all metadata:
 *
 *     ... | inode table | rt bitmap | data bitmap | data region ...
 *
 * Freed units are "busy" until the transaction that freed them commits:
 * before that, a crash brings the old owner back, and its bytes must
 * still be there.  After it, a block the log still holds a copy of
 * (metadata, or journaled file data) is safe to reuse because that
 * commit carries its revoke record (forget.c), so replay never writes the
 * old copy over the block's next owner.  Realtime extents only ever hold
 * file data, and never go through the journal.
 *
 * Data allocations, realtime ones included, leave a small reserve of data
 * blocks so a B+tree split that follows one always finds its blocks.
 *
 * Who must hear of a freed block before it comes back here (the refcount
 * tree, the journal's forget) is free_blocks.c's policy.
 */
#include "ref/ref_internal.h"

#include "base/park.h"
#include "ref/pcache.h"

#include <stdlib.h>

#define META_RESERVE (2 * BT_MAX_LEVELS + 8)
/* What the B+tree insert after one data allocation may need at most: a
 * node per level and a new root. */
#define MAP_FLOOR (BT_MAX_LEVELS + 1)

static uint64_t group_len(const struct ref_fs *fs, const struct alloc_space *s,
			  uint32_t g)
{
	uint64_t first = s->base + (uint64_t)g * fs->bpb;
	uint64_t left = first < s->end ? s->end - first : 0;

	return left < fs->bpb ? left : fs->bpb;
}

static void spaces_setup(struct ref_fs *fs)
{
	fs->dspace = (struct alloc_space){
		.name = "bitmap", .unit = "block", .magic = MAGIC_BITMAP,
		.sb_init = SB_BMINIT, .base = fs->data, .end = fs->total,
		.bmstart = fs->bmap, .bmlen = fs->bmaplen,
		.bminit = &fs->bminit, .grp_free = &fs->grp_free,
		.nfree = &fs->free_blocks, .busy = &fs->busy,
	};
	fs->rtspace = (struct alloc_space){
		.name = "rt bitmap", .unit = "rt extent", .magic = MAGIC_RTBITMAP,
		.sb_init = SB_RTBMINIT, .base = 0, .end = fs->rtextents,
		.bmstart = fs->rtbmap, .bmlen = fs->rtbmaplen,
		.bminit = &fs->rt_bminit, .grp_free = &fs->rt_grp_free,
		.nfree = &fs->rt_free, .busy = &fs->rt_busy,
	};
}

static int space_mount(struct ref_fs *fs, struct alloc_space *s,
		       const uint8_t *sb)
{
	uint32_t *grp;

	*s->bminit = get32(sb + s->sb_init);
	if (*s->bminit > s->bmlen) {
		ref_report(fs, "superblock: %u %s blocks initialised, only %u "
			   "exist", *s->bminit, s->name, s->bmlen);
		return -EFSCORRUPTED;
	}
	grp = park_calloc(s->bmlen ? s->bmlen : 1, sizeof(*grp));
	if (!grp)
		return -ENOMEM;
	*s->grp_free = grp;
	*s->nfree = 0;
	for (uint32_t g = 0; g < s->bmlen; g++) {
		uint64_t glen = group_len(fs, s, g);
		struct rbuf *b;
		uint32_t nfree;
		int err;

		if (g >= *s->bminit) {
			grp[g] = (uint32_t)glen;
			*s->nfree += glen;
			continue;
		}
		err = buf_read(fs, s->bmstart + g, s->magic, &b);
		if (err)
			return err;
		nfree = get32(b->data + BLKHDR_SIZE);
		buf_put(fs, b);
		if (nfree > glen) {
			ref_report(fs, "%s block %u: free count %u exceeds group "
				   "size %llu", s->name, g, nfree,
				   (unsigned long long)glen);
			return -EFSCORRUPTED;
		}
		grp[g] = nfree;
		*s->nfree += nfree;
	}
	return 0;
}

int alloc_mount(struct ref_fs *fs)
{
	struct rbuf *sb;
	int err;

	spaces_setup(fs);
	err = buf_read(fs, 0, MAGIC_SUPER, &sb);
	if (err)
		return err;
	err = space_mount(fs, &fs->dspace, sb->data);
	if (!err)
		err = space_mount(fs, &fs->rtspace, sb->data);
	buf_put(fs, sb);
	return err;
}

void alloc_unmount(struct ref_fs *fs)
{
	park_cfree(fs->grp_free, fs->bmaplen ? fs->bmaplen : 1,
		   sizeof(*fs->grp_free));
	park_cfree(fs->rt_grp_free, fs->rtbmaplen ? fs->rtbmaplen : 1,
		   sizeof(*fs->rt_grp_free));
	free(fs->busy.v);
	free(fs->rt_busy.v);
	fs->grp_free = fs->rt_grp_free = NULL;
	fs->busy = fs->rt_busy = (struct busy_list){ 0 };
}

/* ---- busy extents: a sorted array of disjoint ranges ---- */

/* Index of the first busy extent ending after u. */
static size_t busy_search(const struct busy_list *l, uint64_t u)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (l->v[mid].start + l->v[mid].len <= u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool alloc_is_busy(const struct ref_fs *fs, uint64_t start, uint64_t len)
{
	size_t i = busy_search(&fs->busy, start);

	return i < fs->busy.n && fs->busy.v[i].start < start + len;
}

/*
 * A range that touches a neighbour joins it: a file freed from its end
 * (truncate, unlink) frees its extents in descending order, and inserting
 * each at the front moved the whole array every time (quadratic in the
 * extents of a file mapped a block a record).  The ranges stay disjoint,
 * so nothing that asks about them can tell.
 */
static int busy_add(struct busy_list *l, uint64_t start, uint64_t len)
{
	size_t i = busy_search(l, start);
	bool left = i > 0 && l->v[i - 1].start + l->v[i - 1].len == start;
	bool right = i < l->n && l->v[i].start == start + len;

	if (left || right) {
		if (left && right) {
			l->v[i - 1].len += len + l->v[i].len;
			memmove(&l->v[i], &l->v[i + 1],
				(l->n - i - 1) * sizeof(*l->v));
			l->n--;
		} else if (left) {
			l->v[i - 1].len += len;
		} else {
			l->v[i].start = start;
			l->v[i].len += len;
		}
		l->units += len;
		return 0;
	}
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		struct busy_ext *nb = realloc(l->v, ncap * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		l->v = nb;
		l->cap = ncap;
	}
	memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof(*l->v));
	l->v[i] = (struct busy_ext){ start, len };
	l->n++;
	l->units += len;
	return 0;
}

/* The freeing transaction committed: every busy unit is free again. */
void alloc_release_busy(struct ref_fs *fs)
{
	fs->busy.n = fs->rt_busy.n = 0;
	fs->busy.units = fs->rt_busy.units = 0;
}

/* ---- bitmap access ---- */

static int bm_get(struct ref_fs *fs, struct alloc_space *s, uint32_t g,
		  struct rbuf **out)
{
	struct rbuf *b, *sb;
	int err;

	if (g < *s->bminit)
		return buf_read(fs, s->bmstart + g, s->magic, out);
	/* First use of group g (groups are initialised in order). */
	err = buf_read(fs, 0, MAGIC_SUPER, &sb);
	if (err)
		return err;
	err = buf_get_new(fs, s->bmstart + g, &b);
	if (err) {
		buf_put(fs, sb);
		return err;
	}
	blk_init(b->data, s->magic, s->bmstart + g, 0);
	put32(b->data + BLKHDR_SIZE, (uint32_t)group_len(fs, s, g));
	buf_dirty(fs, b);
	*s->bminit = g + 1;
	put32(sb->data + s->sb_init, *s->bminit);
	buf_dirty(fs, sb);
	buf_put(fs, sb);
	*out = b;
	return 0;
}

static bool bit_test(const uint8_t *bits, uint64_t i)
{
	return bits[i >> 3] & (1u << (i & 7));
}

static void bit_put(uint8_t *bits, uint64_t i, bool on)
{
	if (on)
		bits[i >> 3] |= (uint8_t)(1u << (i & 7));
	else
		bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

static void bits_set(uint8_t *bits, uint64_t from, uint64_t n, bool on)
{
	uint64_t i = from, end = from + n;

	/* Ragged bits one at a time, whole bytes in between at once. */
	for (; i < end && ((i & 7) || end - i < 8); i++)
		bit_put(bits, i, on);
	if (end - i >= 8) {
		memset(bits + (i >> 3), on ? 0xff : 0, (size_t)((end - i) >> 3));
		i += (end - i) & ~(uint64_t)7;
	}
	for (; i < end; i++)
		bit_put(bits, i, on);
}

/* Bits [i, i + 64) of a bitmap (bit i of byte i / 8 first), zeros past n;
 * i a multiple of 8. */
static uint64_t bits_word(const uint8_t *bits, uint64_t i, uint64_t n)
{
	uint64_t v = 0, left = n - i;
	unsigned nb = left >= 64 ? 8 : (unsigned)((left + 7) >> 3);

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (nb == 8) { /* the common case: the word as it lies */
		memcpy(&v, bits + (i >> 3), 8);
		return v;
	}
#endif
	for (unsigned k = 0; k < nb; k++)
		v |= (uint64_t)bits[(i >> 3) + k] << (8 * k);
	return left >= 64 ? v : v & ((1ull << left) - 1);
}

/* Set bits of v, in a few instructions where __builtin_popcountll is a
 * call (x86-64 without -mpopcnt). */
static inline uint64_t ones(uint64_t v)
{
	v -= (v >> 1) & 0x5555555555555555ull;
	v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
	v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (v * 0x0101010101010101ull) >> 56;
}

/*
 * Over bits [0, n) of have and want (n a multiple of 8 or not): how many
 * are clear in have, how many differ, and the first that differs.  A
 * word at a time: the audit compares every bitmap group at every
 * checkpoint.
 */
static void bits_compare(const uint8_t *have, const uint8_t *want, uint64_t n,
			 uint64_t *nclear, uint64_t *ndiff, uint64_t *first)
{
	uint64_t set = 0, diff = 0;

	*first = 0;
	for (uint64_t i = 0; i < n; i += 64) {
		uint64_t h = bits_word(have, i, n), d = h ^ bits_word(want, i, n);

		set += ones(h);
		if (!d)
			continue;
		if (!diff)
			*first = i + (uint64_t)__builtin_ctzll(d);
		diff += ones(d);
	}
	*nclear = n - set;
	*ndiff = diff;
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
 * Find a free, non-busy run of at least minlen (up to maxlen) in group g
 * starting at or after bit `from`.  Returns its length (0 = none) and its
 * first bit in *at.
 */
static uint64_t group_find(struct ref_fs *fs, const struct alloc_space *s,
			   const uint8_t *bits, uint32_t g, uint64_t from,
			   uint64_t maxlen, uint64_t minlen, uint64_t *at)
{
	const struct busy_list *l = s->busy;
	uint64_t glen = group_len(fs, s, g);
	uint64_t base = s->base + (uint64_t)g * fs->bpb;
	uint64_t i = from;

	while (i < glen) {
		uint64_t st = find_clear(bits, i, glen), e;
		size_t bi;

		if (st >= glen)
			return 0;
		e = st;
		while (e < glen && e - st < maxlen && !bit_test(bits, e))
			e++;
		/* trim at the first busy extent overlapping [st, e) */
		bi = busy_search(l, base + st);
		if (bi < l->n && l->v[bi].start < base + e) {
			if (l->v[bi].start > base + st) {
				e = l->v[bi].start - base;
			} else {
				i = l->v[bi].start + l->v[bi].len - base;
				continue;
			}
		}
		if (e - st < minlen) { /* too short: on past it */
			i = e;
			continue;
		}
		*at = st;
		return e - st;
	}
	return 0;
}

/*
 * First fit of up to maxlen units at or after goal, wrapping around; a
 * run shorter than minlen does not fit.
 */
static int space_alloc(struct ref_fs *fs, struct alloc_space *s, uint64_t goal,
		       uint64_t maxlen, uint64_t minlen, uint64_t *start,
		       uint64_t *len)
{
	uint32_t g0, g;
	uint64_t from;
	int err;

	if (goal < s->base || goal >= s->end)
		goal = s->base;
	g0 = (uint32_t)((goal - s->base) / fs->bpb);
	from = (goal - s->base) % fs->bpb;
	for (uint32_t k = 0; k <= s->bmlen; k++) {
		struct rbuf *b;
		uint64_t at, n;

		g = (g0 + k) % s->bmlen;
		if (k > 0) /* the next groups, and at last the start of g0 */
			from = 0;
		if ((*s->grp_free)[g] == 0 || g > *s->bminit)
			continue;
		err = bm_get(fs, s, g, &b);
		if (err)
			return err;
		n = group_find(fs, s, b->data + BM_HDR_SIZE, g, from, maxlen,
			       minlen, &at);
		if (n == 0) {
			buf_put(fs, b);
			continue;
		}
		bits_set(b->data + BM_HDR_SIZE, at, n, true);
		put32(b->data + BLKHDR_SIZE, get32(b->data + BLKHDR_SIZE) - (uint32_t)n);
		buf_dirty(fs, b);
		buf_put(fs, b);
		(*s->grp_free)[g] -= (uint32_t)n;
		*s->nfree -= n;
		*start = s->base + (uint64_t)g * fs->bpb + at;
		*len = n;
		return 0;
	}
	return -ENOSPC;
}

/*
 * Data-device blocks a data allocation may take: busy blocks are free but
 * not usable, and the reserve for B+tree nodes must be made of blocks
 * that really are.  Delalloc writeback keeps a promise made when the
 * write was taken: B+tree blocks allocated since may have used the
 * reserve (alloc_common holds the promised blocks and MAP_FLOOR from
 * them, never more), so it may go down to MAP_FLOOR.
 */
uint64_t alloc_data_usable(const struct ref_fs *fs)
{
	uint64_t usable = fs->free_blocks - fs->busy.units;
	uint64_t floor = fs->da_spending ? MAP_FLOOR : META_RESERVE;

	return usable > floor ? usable - floor : 0;
}

/*
 * Free data blocks as statfs counts them available: not the B+tree
 * reserve, which file data never gets (XFS leaves its set-aside out of
 * statfs's free count too), nor the blocks delalloc pages were promised.
 * Busy blocks count: they are free, and come back at the commit.
 */
uint64_t alloc_data_avail(const struct ref_fs *fs)
{
	uint64_t hold = META_RESERVE + (fs->pc ? fs->pc->ndelalloc[0] : 0);

	return fs->free_blocks > hold ? fs->free_blocks - hold : 0;
}

/*
 * Blocks B+tree nodes may take: the reserve is theirs, but not the blocks
 * delalloc pages were promised, nor the floor their writeback's mappings
 * need (on this device for rt files too): a write taken must be written
 * back.  Checks before a change (bmap_can_insert) ask this too, so the
 * change fails before it starts.
 */
uint64_t alloc_meta_room(const struct ref_fs *fs)
{
	uint64_t have = fs->free_blocks >= fs->busy.units ?
			fs->free_blocks - fs->busy.units : 0;
	uint64_t hold = 0;

	if (fs->pc && !fs->da_spending &&
	    (fs->pc->ndelalloc[0] | fs->pc->ndelalloc[1]))
		hold = fs->pc->ndelalloc[0] + MAP_FLOOR;
	return have > hold ? have - hold : 0;
}

uint64_t alloc_rt_usable(const struct ref_fs *fs)
{
	if (fs->zoned)
		return zoned_free_blocks(fs);
	return fs->rt_free > fs->rt_busy.units ?
	       (fs->rt_free - fs->rt_busy.units) * fs->rtx : 0;
}

/* Blocks of device rt (0: data, 1: realtime) that delalloc pages hold
 * reserved: every allocation but their own writeback's leaves them (and
 * zone reclaim's, which moves live data and frees as much). */
static uint64_t promised(const struct ref_fs *fs, int rt)
{
	if (!fs->pc || fs->da_spending || (rt && zoned_reclaiming(fs)))
		return 0;
	return fs->pc->ndelalloc[rt];
}

/* Data blocks an allocation for file data may take. */
static uint64_t data_room(const struct ref_fs *fs)
{
	uint64_t usable = alloc_data_usable(fs), keep = promised(fs, 0);

	return usable > keep ? usable - keep : 0;
}

/* rt blocks an allocation for file data may take (whole rt extents). */
static uint64_t rt_room(const struct ref_fs *fs)
{
	uint64_t keep = promised(fs, 1), have;

	if (!keep)
		return UINT64_MAX;
	have = alloc_rt_usable(fs);
	return have > keep ? have - keep : 0;
}

static int alloc_common(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
			uint64_t minlen, bool data, uint64_t *start,
			uint64_t *len)
{
	int err;

	fs->ctr.alloc_calls++;
	if (fs->rdonly)
		return -EROFS;
	if (data) {
		uint64_t room = data_room(fs);

		if (room == 0)
			return -ENOSPC;
		if (maxlen > room)
			maxlen = room;
	} else {
		uint64_t room = alloc_meta_room(fs);

		if (room == 0)
			return -ENOSPC;
		if (maxlen > room)
			maxlen = room;
	}
	if (maxlen > fs->maxext)
		maxlen = fs->maxext;
	if (maxlen < minlen)
		return -ENOSPC;
	err = space_alloc(fs, &fs->dspace, goal, maxlen, minlen, start, len);
	if (!err) {
		fs->ctr.extents_allocated++;
		fs->ctr.blocks_allocated += *len;
	}
	return err;
}

/* Metadata (B+tree nodes): may use the reserve. */
int alloc_extent(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
		 uint64_t *start, uint64_t *len)
{
	return alloc_common(fs, goal, maxlen, 1, false, start, len);
}

/* File data: up to maxlen blocks, first fit at or after goal. */
int alloc_data(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
	       uint64_t *start, uint64_t *len)
{
	return alloc_common(fs, goal, maxlen, 1, true, start, len);
}

/* File data: exactly n blocks in one run, first fit at or after goal;
 * -ENOSPC when no free run is that long. */
int alloc_data_whole(struct ref_fs *fs, uint64_t goal, uint64_t n,
		     uint64_t *start)
{
	uint64_t len;

	return alloc_common(fs, goal, n, n, true, start, &len);
}

/*
 * Realtime data: up to maxlen blocks (a multiple of the rt extent size)
 * of whole rt extents, first fit at or after the rt extent holding rt
 * block goal.  The data device must still have room beyond its reserve,
 * as for a data allocation: the mapping that follows may split B+tree
 * nodes.  mkfs keeps rtx <= maxext, so one rt extent always fits a record.
 */
static int rtalloc_common(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
			  uint64_t minlen, uint64_t *start, uint64_t *len)
{
	uint64_t n = maxlen / fs->rtx, at, got, room;
	int err;

	if (fs->rdonly)
		return -EROFS;
	if (!fs->rtdev || n == 0)
		return -EINVAL;
	if (alloc_data_usable(fs) == 0)
		return -ENOSPC;
	room = rt_room(fs) / fs->rtx;
	if (n > room)
		n = room;
	if (n == 0)
		return -ENOSPC;
	if (n > fs->maxext / fs->rtx)
		n = fs->maxext / fs->rtx;
	if (n * fs->rtx < minlen)
		return -ENOSPC;
	/* zoned: only at the open zone's write pointer, appended at once */
	err = fs->zoned ? zoned_alloc_begin(fs, &goal, &n) : 0;
	if (!err)
		err = space_alloc(fs, &fs->rtspace, goal / fs->rtx, n,
				  (minlen + fs->rtx - 1) / fs->rtx, &at, &got);
	if (!err && fs->zoned)
		err = zoned_alloc_end(fs, at, got);
	if (err)
		return err;
	fs->ctr.rt_extents_allocated += got;
	*start = at * fs->rtx;
	*len = got * fs->rtx;
	return 0;
}

int rtalloc_blocks(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
		   uint64_t *start, uint64_t *len)
{
	return rtalloc_common(fs, goal, maxlen, 1, start, len);
}

int rtalloc_whole(struct ref_fs *fs, uint64_t goal, uint64_t n,
		  uint64_t *start)
{
	uint64_t len;

	if (fs->zoned) /* only ever at the write pointer */
		return -EINVAL;
	if (n % fs->rtx) /* not whole rt extents: no such run */
		return -ENOSPC;
	return rtalloc_common(fs, goal, n, n, start, &len);
}

bool alloc_has_busy(const struct ref_fs *fs)
{
	return fs->busy.n != 0 || fs->rt_busy.n != 0;
}

/*
 * True when busy units are a large share of the free space of either
 * device: time to commit so they can be reused, before
 * an allocation in the middle of a B+tree change finds nothing.  Not on
 * a zoned realtime device: an rt extent freed there is dead until its
 * zone is reset, committed or not, so a commit would free nothing (and
 * would split a zone reclaim that a cut must find all or nothing).
 */
bool alloc_busy_pressure(const struct ref_fs *fs)
{
	return fs->busy.units * 4 > fs->free_blocks ||
	       (!fs->zoned && fs->rt_busy.units * 4 > fs->rt_free);
}

/*
 * Walk the bitmap groups covering units [start, start+len): first only
 * checking that every unit is allocated (a double free is corruption,
 * and nothing may change before that is known), then clearing.
 */
static int free_walk(struct ref_fs *fs, struct alloc_space *s, uint64_t start,
		     uint64_t len, bool clear)
{
	while (len) {
		uint32_t g = (uint32_t)((start - s->base) / fs->bpb);
		uint64_t at = (start - s->base) % fs->bpb;
		uint64_t n = group_len(fs, s, g) - at;
		struct rbuf *b;
		int err;

		if (n > len)
			n = len;
		if (g >= *s->bminit) {
			ref_report(fs, "freeing %s %llu in a never-used group",
				   s->unit, (unsigned long long)start);
			return -EFSCORRUPTED;
		}
		err = bm_get(fs, s, g, &b);
		if (err)
			return err;
		for (uint64_t i = at; !clear && i < at + n; i++) {
			if (!bit_test(b->data + BM_HDR_SIZE, i)) {
				buf_put(fs, b);
				ref_report(fs, "freeing free %s %llu", s->unit,
					   (unsigned long long)(s->base +
								g * fs->bpb + i));
				return -EFSCORRUPTED;
			}
		}
		if (clear) {
			bits_set(b->data + BM_HDR_SIZE, at, n, false);
			put32(b->data + BLKHDR_SIZE,
			      get32(b->data + BLKHDR_SIZE) + (uint32_t)n);
			buf_dirty(fs, b);
			(*s->grp_free)[g] += (uint32_t)n;
			*s->nfree += n;
		}
		buf_put(fs, b);
		start += n;
		len -= n;
	}
	return 0;
}

static int space_free(struct ref_fs *fs, struct alloc_space *s, uint64_t start,
		      uint64_t len)
{
	int err;

	if (start < s->base || start + len > s->end || start + len < start) {
		ref_report(fs, "freeing %ss %llu+%llu outside the %s", s->unit,
			   (unsigned long long)start, (unsigned long long)len,
			   s == &fs->dspace ? "data region" : "realtime device");
		return -EFSCORRUPTED;
	}
	err = free_walk(fs, s, start, len, false);
	if (!err)
		err = busy_add(s->busy, start, len);
	if (!err)
		err = free_walk(fs, s, start, len, true);
	return err;
}

/* Free data-region blocks no journal copy can exist of (callers that
 * free a file's blocks or a B+tree node go through free_blocks.c). */
int alloc_free(struct ref_fs *fs, uint64_t start, uint64_t len)
{
	int err = space_free(fs, &fs->dspace, start, len);

	if (!err)
		fs->ctr.blocks_freed += len;
	return err;
}

/* Free rt blocks [start, start+len): whole, aligned rt extents only. */
int rtalloc_free(struct ref_fs *fs, uint64_t start, uint64_t len)
{
	int err;

	if (!fs->rtdev || start % fs->rtx || len % fs->rtx) {
		ref_report(fs, "freeing rt blocks %llu+%llu: not whole rt extents "
			   "of %u blocks", (unsigned long long)start,
			   (unsigned long long)len, fs->rtx);
		return -EFSCORRUPTED;
	}
	err = space_free(fs, &fs->rtspace, start / fs->rtx, len / fs->rtx);
	if (!err && fs->zoned)
		zoned_freed(fs, start / fs->rtx, len / fs->rtx);
	if (!err)
		fs->ctr.rt_extents_freed += len / fs->rtx;
	return err;
}

/*
 * The audit's half: compare the on-disk bitmap with `runs`, every
 * reference the audit found, in units, sorted by start.  Initialised
 * groups are compared bit for bit with an expected bitmap built from the
 * runs; never-used groups must hold no reference at all.
 */
static int space_check(struct ref_fs *fs, struct alloc_space *s,
		       const struct alloc_run *runs, size_t n)
{
	size_t bytes = fs->bs - BM_HDR_SIZE, r = 0;
	uint64_t total_free = 0;
	uint8_t *want = park_alloc(fs->bs); /* a block: the cache's shelf */
	int bad = 0, err = 0;

	if (!want)
		return -ENOMEM;
	for (uint32_t g = 0; g < s->bmlen; g++) {
		uint64_t glen = group_len(fs, s, g);
		uint64_t gs = s->base + (uint64_t)g * fs->bpb, ge = gs + glen;
		uint64_t nfree = 0, mism = 0, first = 0;
		uint32_t gfree = (*s->grp_free)[g];
		const uint8_t *have;
		struct rbuf *b;

		while (r < n && runs[r].start + runs[r].len <= gs)
			r++;
		if (g >= *s->bminit) {
			if (r < n && runs[r].start < ge) {
				ref_report(fs, "%s %llu is referenced but lies in "
					   "never-used %s group %u", s->unit,
					   (unsigned long long)(runs[r].start > gs ?
								runs[r].start : gs),
					   s->name, g);
				bad = 1;
			}
			if (gfree != glen) {
				ref_report(fs, "%s group %u (unused): in-core free "
					   "count %u, expected %llu", s->name, g,
					   gfree, (unsigned long long)glen);
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
		err = buf_read(fs, s->bmstart + g, s->magic, &b);
		if (err)
			break;
		have = b->data + BM_HDR_SIZE;
		bits_compare(have, want, glen, &nfree, &mism, &first);
		if (mism) {
			ref_report(fs, "%s group %u: %llu %ss disagree with the "
				   "references found (first: %s %llu is %s but %s)",
				   s->name, g, (unsigned long long)mism, s->unit,
				   s->unit, (unsigned long long)(gs + first),
				   bit_test(want, first) ? "referenced" : "unreferenced",
				   bit_test(want, first) ? "free" : "allocated");
			bad = 1;
		}
		if (get32(b->data + BLKHDR_SIZE) != nfree) {
			ref_report(fs, "%s group %u: header says %u free, bits "
				   "say %llu", s->name, g,
				   get32(b->data + BLKHDR_SIZE),
				   (unsigned long long)nfree);
			bad = 1;
		}
		if (gfree != nfree) {
			ref_report(fs, "%s group %u: in-core free count %u, bits "
				   "say %llu", s->name, g, gfree,
				   (unsigned long long)nfree);
			bad = 1;
		}
		buf_put(fs, b);
		total_free += nfree;
	}
	park_free(want, fs->bs);
	if (err)
		return err;
	if (total_free != *s->nfree) {
		ref_report(fs, "free %ss: in-core %llu, %s %llu", s->unit,
			   (unsigned long long)*s->nfree, s->name,
			   (unsigned long long)total_free);
		bad = 1;
	}
	return bad ? -EFSCORRUPTED : 0;
}

int alloc_check(struct ref_fs *fs, const struct alloc_run *runs, size_t n)
{
	return space_check(fs, &fs->dspace, runs, n);
}

/* Runs of rt blocks become runs of the rt extents they touch. */
int alloc_check_rt(struct ref_fs *fs, const struct alloc_run *runs, size_t n)
{
	struct alloc_run *ext;
	void *p = NULL;
	size_t k = 0, cap = 0;
	int err = n > SIZE_MAX / sizeof(*ext) ? -ENOMEM :
		  park_grow(&p, &cap, 0, (n ? n : 1) * sizeof(*ext));

	if (err)
		return err;
	ext = p;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = runs[i].start / fs->rtx;
		uint64_t e = round_up(runs[i].start + runs[i].len, fs->rtx) /
			     fs->rtx;

		if (k && ext[k - 1].start + ext[k - 1].len >= a) {
			if (a + (e - a) > ext[k - 1].start + ext[k - 1].len)
				ext[k - 1].len = e - ext[k - 1].start;
		} else {
			ext[k++] = (struct alloc_run){ a, e - a };
		}
	}
	err = space_check(fs, &fs->rtspace, ext, k);
	park_free(ext, cap);
	return err;
}
