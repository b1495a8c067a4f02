/*
 * exchange.c - exchange range, as XFS's: swap the mappings of two
 * equal-length ranges of two files (or of one file), copying no data and
 * changing no block's owner count, so that each file reads what the
 * other held there.  Sizes stay as they are.
 *
 * The swap goes mapping by mapping.  A step takes the next n blocks of
 * both ranges, n no longer than the mapping (record or hole) at the start
 * of either range, so each side of a step is one record at most (for a
 * realtime file, n is whole rt extents, which may hold a record per run
 * of block states):
 *
 *   range 1   | A A A | B B |   hole    |
 *   range 2   |  hole | C C C C C C C C |
 *   step 1:   n = 3   A A A <-> hole
 *   step 2:   n = 2   B B   <-> C C
 *   step 3:   n = 6   hole  <-> C C C C C C
 *   after     range 1 | hole | C C C C C C C C |, range 2 | A A A | B B | hole |
 *
 * A step unmaps both pieces keeping their blocks (bmap_unmap_keep), maps
 * each into the other file (bmap_map merges it with its neighbours, so
 * the record lists stay canonical), and advances the intent in the
 * superblock, all in one transaction; the transaction commits only
 * between steps.  The intent (the two inodes, the next block of each
 * range, the blocks left) goes in with the first step and is cleared by
 * the last, so after a cut the log holds either no intent (nothing
 * swapped, or all of it) or one saying where to go on, and mount
 * finishes it (exchange_recover) before anything can read the files: the
 * swap is atomic as the user sees it, as XFS's exchange intent makes it.
 * A half-swapped image is consistent in itself (every block owned as
 * often as before, every rt extent whole), so fsck of one is clean.
 *
 * Before the first step: dirty pages of both files are written,
 * compressed extents in the ranges are expanded (a step may cut any
 * record), journaled data, the expanded copies included, is sent home
 * (the blocks are about to change files), the page cache drops both
 * ranges, and the COW forks over them are finished and cancelled, as XFS
 * cancels the COW preallocations of the ranges.
 */
#include "ref/reflink.h"
#include "ref/pcache.h"

#include <stdlib.h>

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The intent: the two inodes, the next block of each range, blocks left. */
struct xintent {
	uint64_t ino1, ino2, fb1, fb2, left;
};

static int intent_put(struct ref_fs *fs, const struct xintent *x)
{
	struct rbuf *b;
	int err = buf_read(fs, 0, MAGIC_SUPER, &b);

	if (err)
		return err;
	put64(b->data + SB_XCHG_INO1, x->left ? x->ino1 : 0);
	put64(b->data + SB_XCHG_INO2, x->left ? x->ino2 : 0);
	put64(b->data + SB_XCHG_FB1, x->left ? x->fb1 : 0);
	put64(b->data + SB_XCHG_FB2, x->left ? x->fb2 : 0);
	put64(b->data + SB_XCHG_LEFT, x->left);
	buf_dirty(fs, b);
	buf_put(fs, b);
	return 0;
}

static int intent_get(struct ref_fs *fs, struct xintent *x)
{
	struct rbuf *b;
	int err = buf_read(fs, 0, MAGIC_SUPER, &b);

	if (err)
		return err;
	x->ino1 = get64(b->data + SB_XCHG_INO1);
	x->ino2 = get64(b->data + SB_XCHG_INO2);
	x->fb1 = get64(b->data + SB_XCHG_FB1);
	x->fb2 = get64(b->data + SB_XCHG_FB2);
	x->left = get64(b->data + SB_XCHG_LEFT);
	buf_put(fs, b);
	return 0;
}

/* The mapped pieces of one side of a step, file offsets relative to it. */
struct pieces {
	struct ref_extent *v;
	size_t n, cap;
};

static int pieces_push(struct pieces *p, const struct ref_extent *e)
{
	if (p->n == p->cap) {
		size_t c = p->cap ? p->cap * 2 : 8;
		struct ref_extent *v = realloc(p->v, c * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = c;
	}
	p->v[p->n++] = *e;
	return 0;
}

/*
 * The records of [fb, fb+n) of ip, clipped to it.  A compressed extent
 * moves only whole (the ranges were expanded, so none is cut here).
 * With p NULL, only count them (*count).
 */
static int gather(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		  uint64_t n, struct pieces *p, uint64_t *count)
{
	uint64_t at = fb;

	if (p)
		p->n = 0;
	while (at < fb + n) {
		struct ref_extent e, piece;
		uint64_t k;
		int err = bmap_lookup(fs, ip, at, &e);

		if (err)
			return err;
		k = min64(e.fileoff + e.len - at, fb + n - at);
		if (e.state != BMAP_HOLE && ext_compressed(&e) &&
		    (e.fileoff != at || k != e.len)) {
			ref_report(fs, "inode %llu: exchange range would cut the "
				   "compressed extent at file block %llu",
				   (unsigned long long)ip->ino,
				   (unsigned long long)e.fileoff);
			return -EFSCORRUPTED;
		}
		piece = (struct ref_extent){ at - fb,
					     ext_compressed(&e) ? e.startblk :
					     e.startblk + (at - e.fileoff),
					     k, e.state };
		if (e.state != BMAP_HOLE && p)
			err = pieces_push(p, &piece);
		if (err)
			return err;
		if (e.state != BMAP_HOLE && count)
			(*count)++;
		at += k;
	}
	return 0;
}

/*
 * The next step's length: no longer than the mapping at the start of
 * either range nor than what is left; whole allocation units.
 */
static int step_len(struct ref_fs *fs, struct ref_inode *ip1,
		    struct ref_inode *ip2, const struct xintent *x, uint64_t *n)
{
	uint64_t unit = file_unit(fs, ip1);
	struct ref_extent e1, e2;
	int err = bmap_lookup(fs, ip1, x->fb1, &e1);

	if (!err)
		err = bmap_lookup(fs, ip2, x->fb2, &e2);
	if (err)
		return err;
	*n = min64(min64(e1.fileoff + e1.len - x->fb1,
			 e2.fileoff + e2.len - x->fb2), x->left);
	if (unit > 1)
		*n = *n >= unit ? round_down(*n, unit) : unit;
	return 0;
}

/* Map the pieces p (taken from elsewhere) at file block fb of ip. */
static int map_pieces(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		      const struct pieces *p)
{
	int err = 0;

	for (size_t i = 0; i < p->n && !err; i++) {
		struct ref_extent m = p->v[i];

		m.fileoff += fb;
		err = bmap_map(fs, ip, &m);
	}
	return err;
}

/*
 * Metadata blocks a step may take at most: the pieces of both sides
 * (whole allocation units of one record each, or a record per block
 * state run in an rt extent) and a cut at each end of both ranges, each
 * an insert splitting every level of the deepest tree there can be.
 */
static uint64_t step_room(struct ref_fs *fs, struct ref_inode *ip)
{
	return 2 * (file_unit(fs, ip) + 2) * (BT_MAX_LEVELS + 1);
}

/* Swap what x says is left, one step per mapping. */
static int swap_all(struct ref_fs *fs, struct ref_inode *ip1,
		    struct ref_inode *ip2, struct xintent *x)
{
	struct pieces p1 = { 0 }, p2 = { 0 };
	int err = 0;

	while (!err && x->left) {
		uint64_t n;

		err = step_len(fs, ip1, ip2, x, &n);
		if (!err)
			err = gather(fs, ip1, x->fb1, n, &p1, NULL);
		if (!err)
			err = gather(fs, ip2, x->fb2, n, &p2, NULL);
		if (!err && p1.n)
			err = bmap_unmap_keep(fs, ip1, x->fb1, n);
		if (!err && p2.n)
			err = bmap_unmap_keep(fs, ip2, x->fb2, n);
		if (!err)
			err = map_pieces(fs, ip2, x->fb2, &p1);
		if (!err)
			err = map_pieces(fs, ip1, x->fb1, &p2);
		if (err)
			break;
		x->fb1 += n;
		x->fb2 += n;
		x->left -= n;
		err = intent_put(fs, x);
		if (!err)
			err = inode_log(fs, ip1);
		if (!err && ip2 != ip1)
			err = inode_log(fs, ip2);
		if (!err)
			err = tx_roll_for(fs, step_room(fs, ip1));
	}
	free(p1.v);
	free(p2.v);
	return err;
}

/*
 * xfs_exchange_range_checks without the to-EOF flag (ref.h), in the
 * files' allocation unit; *nb: the blocks to swap (the EOF units whole).
 */
static int exchange_checks(struct ref_fs *fs, struct ref_inode *ip1,
			   uint64_t off1, struct ref_inode *ip2, uint64_t off2,
			   uint64_t len, uint64_t *nb)
{
	uint64_t ub, blen;

	if (fs->rdonly)
		return -EROFS;
	if (inode_is_rt(ip1) != inode_is_rt(ip2))
		return -EINVAL; /* the mappings are of different devices */
	ub = file_unit(fs, ip1) << fs->bshift;
	if (off1 > ip1->size || off2 > ip2->size)
		return -EINVAL;
	if (off1 % ub || off2 % ub)
		return -EINVAL;
	if (off1 + len < off1 || off2 + len < off2)
		return -EINVAL;
	if (off1 + len > ip1->size || off2 + len > ip2->size)
		return -EINVAL;
	if (len % ub && (off1 + len != ip1->size || off2 + len != ip2->size))
		return -EINVAL;
	blen = round_up(len, ub);
	if (ip1 == ip2 && off1 < off2 + blen && off2 < off1 + blen)
		return -EINVAL;
	*nb = blen >> fs->bshift;
	return 0;
}

/*
 * The blocks tree t may grow by while it takes in records: it never
 * holds more than it has now, all it takes in and a cut at each end of
 * a range (merges and the records given away only lower that), and with
 * every node holding what bt_check asks, a tree of r records has at
 * most bt_nodes_most(r) nodes.  UINT64_MAX when its nodes do not.
 */
static int tree_growth(struct ref_fs *fs, struct ref_inode *ip,
		       uint64_t takes, uint64_t *grow)
{
	struct bt_tree t;
	struct bt_shape sh;
	uint64_t most;
	int err;

	bmap_tree(fs, ip, &t);
	err = bt_shape(&t, fs->total, &sh);    /* no more nodes than blocks */
	if (err)
		return err;
	most = bt_nodes_most(&t, sh.recs + takes + 4);
	if (!sh.filled || most == UINT64_MAX)
		*grow = UINT64_MAX;
	else
		*grow = most > sh.nodes ? most - sh.nodes : 0;
	return 0;
}

/*
 * Room for the swap's metadata, or -ENOSPC before anything changed.
 * Each record mapped into a file is an insert that may split every level
 * of its tree: the records of both ranges and the cuts, (levels + 1)
 * blocks each, are room enough for any swap.  On files mapped a block a
 * record that asks for far more than the trees can grow by: then what
 * they may grow by (tree_growth), and a step's worst case on top, is
 * enough, since freed nodes stay busy only until swap_all commits, which
 * it does before a step would find less than that (step_room).
 */
static int meta_room_for(struct ref_fs *fs, struct ref_inode *ip1,
			 uint64_t c1, struct ref_inode *ip2, uint64_t c2)
{
	uint64_t room = alloc_meta_room(fs), g1, g2 = 0;
	int err;

	if (bmap_can_insert(fs, ip1->root.levels >= ip2->root.levels ?
			    ip1 : ip2, (unsigned)min64(c1 + c2 + 4, 1u << 30)))
		return 0;
	err = tree_growth(fs, ip1, ip1 == ip2 ? c1 + c2 : c2, &g1);
	if (!err && ip2 != ip1)
		err = tree_growth(fs, ip2, c1, &g2);
	if (err)
		return err;
	if (g1 == UINT64_MAX || g2 == UINT64_MAX ||
	    room < g1 + g2 + step_room(fs, ip1))
		return -ENOSPC;
	return 0;
}

/* Everything but the mappings, before the first step (see the top). */
static int exchange_prepare(struct ref_fs *fs, struct ref_inode *ip1,
			    uint64_t fb1, struct ref_inode *ip2, uint64_t fb2,
			    uint64_t nb)
{
	uint64_t c1 = 0, c2 = 0;
	int err = remap_settle(fs, ip1, ip2);

	if (!err)
		err = compr_expand(fs, ip1, fb1, fb1 + nb);
	if (!err)
		err = compr_expand(fs, ip2, fb2, fb2 + nb);
	/* a journaled file's plain copies went through the journal: they
	 * must be home too before their blocks change files */
	if (!err)
		err = remap_settle(fs, ip1, ip2);
	if (!err)
		err = cow_cancel(fs, ip1, fb1, nb);
	if (!err)
		err = cow_cancel(fs, ip2, fb2, nb);
	if (!err)
		err = pcache_discard(fs, ip1, fb1, fb1 + nb);
	if (!err)
		err = pcache_discard(fs, ip2, fb2, fb2 + nb);
	if (!err)
		err = gather(fs, ip1, fb1, nb, NULL, &c1);
	if (!err)
		err = gather(fs, ip2, fb2, nb, NULL, &c2);
	if (!err)
		err = meta_room_for(fs, ip1, c1, ip2, c2);
	return err;
}

static int exchange_range_call(struct ref_fs *fs, uint64_t ino1, uint64_t off1,
			       uint64_t ino2, uint64_t off2, uint64_t len)
{
	struct ref_inode *ip1, *ip2;
	struct xintent x = { ino1, ino2, off1 >> fs->bshift, off2 >> fs->bshift,
			     0 };
	int err = inode_get(fs, ino1, &ip1);

	if (!err)
		err = inode_get(fs, ino2, &ip2);
	if (!err)
		err = exchange_checks(fs, ip1, off1, ip2, off2, len, &x.left);
	if (err || len == 0)
		return err;
	err = exchange_prepare(fs, ip1, x.fb1, ip2, x.fb2, x.left);
	if (!err)
		err = intent_put(fs, &x);
	if (!err)
		err = swap_all(fs, ip1, ip2, &x);
	return err;
}

int ref_exchange_range(struct ref_fs *fs, uint64_t ino1, uint64_t off1,
		       uint64_t ino2, uint64_t off2, uint64_t len)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, exchange_range_call(fs, ino1, off1,
								ino2, off2,
								len));
}

int exchange_recover(struct ref_fs *fs)
{
	struct ref_inode *ip1 = NULL, *ip2 = NULL;
	struct xintent x;
	uint64_t unit, lim = REF_MAX_BYTES >> fs->bshift;
	int err = intent_get(fs, &x);

	if (err)
		return err;
	if (!x.left && !x.ino1 && !x.ino2 && !x.fb1 && !x.fb2)
		return 0;
	if (x.left && inode_get(fs, x.ino1, &ip1) == 0 &&
	    inode_get(fs, x.ino2, &ip2) == 0 &&
	    inode_is_rt(ip1) == inode_is_rt(ip2)) {
		unit = file_unit(fs, ip1);
		/* both ranges inside the largest file, the EOF unit whole */
		if (x.fb1 % unit == 0 && x.fb2 % unit == 0 && x.left % unit == 0 &&
		    x.fb1 <= lim + unit && x.fb2 <= lim + unit &&
		    x.left <= lim + unit - x.fb1 && x.left <= lim + unit - x.fb2)
			return swap_all(fs, ip1, ip2, &x);
	}
	ref_report(fs, "superblock: bad exchange intent: inodes %llu and %llu, "
		   "blocks %llu and %llu, %llu left", (unsigned long long)x.ino1,
		   (unsigned long long)x.ino2, (unsigned long long)x.fb1,
		   (unsigned long long)x.fb2, (unsigned long long)x.left);
	return -EFSCORRUPTED;
}
