/*
 * pcache_truncate.c - seed path (b): removing a range of a file's page
 * cache, its pages and its shadow entries (shared/SEED-PATHS.md (b),
 * seeds/001).  Truncate, hole punch, zero range, collapse and insert
 * range, exchange range and reflink come here; the cache around it is
 * pcache.c's, the radix index pcache_index.c's.
 *
 * Both twins remove every entry of [start, end) from map m and leave the
 * same tree: no page or shadow in the range, each node's count and
 * nr_values equal to its slots, no empty node, the root shrunk while it
 * uses only slot 0, a leaf on the shadow-node list iff it holds only
 * shadows (pc_audit checks it all).  They differ in the work, counted in
 * pc_node_visits, pc_mark_clears and pc_lock_acquisitions:
 *
 *   naive    per entry: a walk from the root, one lock round, a store of
 *            NULL that re-initialises the slot's three marks (three
 *            clears, on a shadow too) - XArray's xas_store(NULL) after
 *            the radix tree gave way to it;
 *   batched  one walk to the first entry, then one cursor in index order
 *            (a visit per entry and per node entered), PC_BATCH entries
 *            per lock round, the known entry replaced with no reload and
 *            no mark re-initialisation, nodes freed as they empty.
 *
 * The batched clear of [2, end) in a tree of 4-way nodes
 * (pagecache_shift=2); P a page, P* a dirty one, v a shadow, . empty;
 * marks[DIRTY] under each node, one bit a slot:
 *
 *   before         root [ A  | B  | .  | .  ]  DIRTY 1 0 0 0
 *                         |     \
 *            A [ P  | v  | P* | v  ]     B [ v  | P  | .  | .  ]
 *              DIRTY 0 0 1 0               DIRTY 0 0 0 0
 *                          ^ the cursor's first entry (one walk: 2 visits)
 *
 *   the cursor   A[2] P*: its DIRTY bit cleared (one clear; A's mask is
 *                now 0, so root's bit for A goes in the same clear),
 *                slot emptied; A[3] v: slot emptied, nothing to clear;
 *                A done: up to root, down into B (a visit); B[0], B[1]
 *                emptied; B empty: freed, back up in root at slot 2;
 *                nothing left: done, then the root shrinks:
 *
 *   after            A [ P  | v  | .  | .  ]   (A is the root now)
 *                      DIRTY 0 0 0 0
 *
 *   counted      naive: 8 visits (2 per entry), 12 mark clears, 4 locks;
 *                batched: 7 visits, 1 mark clear, 1 lock.
 *
 * The batched twin skips the mark re-initialisation on the premise that
 * no value entry carries a mark (eviction clears a page's marks before
 * its shadow takes the slot).  The fallback knob breaks that premise on
 * purpose: see pcache_sync_knob beside the dispatcher.
 */
#include "ref/pcache_internal.h"
#include "ref/plant.h"

/* Drop what entry e of slot off in leaf n holds (not the slot itself). */
static void drop_entry(struct pcache *pc, uintptr_t e)
{
	if (pc_is_page(e)) {
		link_del(&to_page(e)->lru);
		pc->npages--;
		pc_page_free(pc, to_page(e));
	}
	pc->ctr->pc_entries_removed++;
}

/*
 * The naive twin: find the next entry with a walk from the root, take the
 * lock, load it, store NULL re-initialising all three marks of its slot
 * (pci_leaf_set with init), free the leaf and shrink the root when that
 * emptied it; again from the next index.
 */
int pc_truncate_naive(struct pcache *pc, struct pc_map *m, uint64_t start,
		      uint64_t end)
{
	uint64_t idx = start;
	struct pc_node *leaf;
	unsigned off;

	while (idx < end && pci_find_first(pc, m, idx, -1, &leaf, &off)) {
		uintptr_t e;

		idx = leaf->base + off;
		if (idx >= end)
			break;
		pc->ctr->pc_lock_acquisitions++;
		/* load, compare, store NULL with the marks re-initialised */
		e = leaf->slots[off];
		if (!e)
			return -EFSCORRUPTED;
		pci_leaf_set(pc, leaf, off, 0, true);
		drop_entry(pc, e);
		if (!leaf->count) {
			pci_delete_empty(pc, m, leaf);
			pci_shrink(pc, m);
		}
		idx++;
	}
	return 0;
}

/*
 * The optimized twin: one cursor from the first entry at or after start,
 * slot by slot, up when a node is done and down into the next child; a
 * lock round every PC_BATCH entries; a page's set marks cleared one by
 * one, a shadow's left alone unless the knob marked it (then the slow
 * clear for that entry, counted in pc_fallbacks); a node freed the moment
 * it empties, the root shrunk once at the end.
 */
int pc_truncate_batched(struct pcache *pc, struct pc_map *m, uint64_t start,
			uint64_t end)
{
	struct pc_node *n;
	unsigned off, inbatch = 0;

	if (!pci_find_first(pc, m, start, -1, &n, &off))
		return 0;
	for (;;) {
		uintptr_t e;
		uint64_t idx;

		/* step to the next entry: up when a node is done, down the
		 * first non-empty slot (each node entered is a visit) */
		off = pci_next_used(n, off, FSLOTS(pc));
		if (off == FSLOTS(pc)) {
			if (n->shift == 0)
				pci_shadow_update(pc, n);
			if (!n->parent)
				break;
			off = n->offset + 1u;
			n = n->parent;
			continue;
		}
		if (n->shift) {
			n = pc_node_of(n->slots[off]);
			off = 0;
			pc->ctr->pc_node_visits++;
			continue;
		}
		idx = n->base + off;
		if (idx >= end) {
			pci_shadow_update(pc, n);
			break;
		}
		if (inbatch == 0)
			pc->ctr->pc_lock_acquisitions++;
		inbatch = (inbatch + 1) % PC_BATCH;
		pc->ctr->pc_node_visits++;
		/* replace the known entry: no reload, no mark re-init */
		e = n->slots[off];
		if (pc_is_page(e)) {
#ifdef FSO_PLANTED
			/* planted (plant.h): the leaf's bits only */
			for (unsigned k = 0; PLANTED(REF_PATH_PAGECACHE_TRUNCATE) &&
			     k < PC_NMARKS; k++)
				if ((n->marks[k] >> off) & 1) {
					pc->ctr->pc_mark_clears++;
					n->marks[k] &= ~(1ull << off);
				}
#endif
			for (unsigned k = 0; k < PC_NMARKS; k++)
				if ((n->marks[k] >> off) & 1)
					pci_mark_clear(pc, n, off, k);
		} else if (pci_slot_marked(n, off)) {
			/* a marked value: the precondition fails, take the
			 * slow clear for this entry */
			pc->ctr->pc_fallbacks++;
			pc->nr_marked_values--;
			for (unsigned k = 0; k < PC_NMARKS; k++)
				pci_mark_clear(pc, n, off, k);
		}
		n->slots[off] = 0;
		n->used &= ~(1ull << off);
		n->count--;
		n->nr_values = (uint8_t)(n->nr_values - pc_is_value(e));
		m->nrpages -= pc_is_page(e);
		m->nrshadows -= pc_is_value(e);
		drop_entry(pc, e);
		if (n->count == 0) {
			struct pc_node *up = pci_delete_empty(pc, m, n);

			if (!up)
				break;
			n = up;
			off = (unsigned)((idx >> n->shift) & FMASK(pc)) + 1u;
			continue;
		}
		off++;
	}
	pci_shrink(pc, m);
	return 0;
}

/*
 * The fallback trigger, read from the mount's switch at every entry to
 * the cache: with PATH_FALLBACK set, an eviction leaves the towrite mark
 * on the shadow it makes (pc_evict, counted in nr_marked_values), which
 * is what the batched twin's premise rules out.  The batched twin then
 * meets marked values and takes the naive clear for each of them
 * (pc_fallbacks): the fuzzer reaches the slow path as often as the fast.
 */
void pcache_sync_knob(struct ref_fs *fs)
{
	fs->pc->mark_values = PATH_FALLBACK(fs, REF_PATH_PAGECACHE_TRUNCATE);
}

/* Seed path (b)'s switch: the naive twin or the batched walk. */
int pcache_truncate_range(struct ref_fs *fs, struct pc_map *m, uint64_t start,
			  uint64_t end)
{
	pc_truncate_fn *clear;

	pcache_sync_knob(fs);
	clear = PATH_NAIVE(fs, REF_PATH_PAGECACHE_TRUNCATE) ? pc_truncate_naive :
							      pc_truncate_batched;
	return clear(fs->pc, m, start, end);
}

int pcache_truncate(struct ref_fs *fs, struct ref_inode *ip, uint64_t from_fb)
{
	uint64_t eof = fs_blocks_roundup(fs, ip->size);

	if (!fs->pc)
		return 0;
	return pcache_truncate_range(fs, pcache_inode_map(fs, ip),
				     from_fb < eof ? from_fb : eof, UINT64_MAX);
}

int pcache_discard(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb0,
		   uint64_t fb1)
{
	if (!fs->pc || fb0 >= fb1)
		return 0;
	return pcache_truncate_range(fs, pcache_inode_map(fs, ip), fb0, fb1);
}
