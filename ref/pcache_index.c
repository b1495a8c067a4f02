/*
 * pcache_index.c - the page cache's radix index: one tree per file
 * mapping page indexes to entries (pages, shadow values), with three
 * marks per slot summarised up the tree, and the walks over it.
 *
 * pcache.h has the entry encoding.  A node has 1 << fshift slots (64 by
 * default; pc_set_fanout, mount option pagecache_shift=, makes them as
 * small as 2-way, so short runs build deep trees):
 *
 *   map->root (shift 2 x fshift)
 *   +----+----+----+-- ... --+
 *   | n0 | n1 |  0 |         |      internal: marks = OR of the child's
 *   +-|--+-|--+----+-- ... --+
 *     v    v
 *   +---+---+---+--   +---+---+--
 *   | P | P | v |     | v | 0 |     leaves (shift 0): pages (P),
 *   +---+---+---+--   +---+---+--     shadows (v)
 *
 * A node at shift s covers 1 << (s + fshift) indexes from its base; the
 * tree is canonical between operations (no empty node, no root using
 * only slot 0).  The leaf that holds only shadows is kept on the cache's
 * shadow-node list here (pci_shadow_update), as its counts change; the
 * LRU, eviction and what the list is for are pcache.c's.
 *
 * Counters (ref.h): pc_node_visits counts nodes entered on a walk;
 * pc_mark_clears counts mark-bit clear operations; pc_lock_acquisitions
 * counts rounds of the index lock taken to modify it.
 */
#include "ref/pcache_internal.h"

#include "base/park.h"

#include <stdlib.h>

/* The largest index a node of this shift can root. */
static uint64_t span_max(const struct pcache *pc, unsigned shift)
{
	return shift + pc->fshift >= 64 ? UINT64_MAX :
	       ((uint64_t)1 << (shift + pc->fshift)) - 1;
}

/* Levels from the root down its first used slots (the tree has no empty
 * node, so every internal node leads to a leaf; in a damaged tree, which
 * the audit measures too, the walk stops at an entry that is no node). */
unsigned pc_height(const struct pc_map *m)
{
	const struct pc_node *n = m->root;
	unsigned h = 0;

	while (n) {
		unsigned i = 0;

		h++;
		if (n->shift == 0)
			break;
		while (i < PC_SLOTS && !n->slots[i])
			i++;
		n = i < PC_SLOTS && pc_is_node(n->slots[i]) ?
		    pc_node_of(n->slots[i]) : NULL;
	}
	return h;
}

int pc_set_fanout(struct pcache *pc, unsigned shift)
{
	if (shift < 1 || shift > PC_SHIFT)
		return -EINVAL;
	for (size_t i = 0; i < pc->nmaps; i++)
		if (pc->maps[i].root)
			return -EBUSY;
	pc->fshift = (uint8_t)shift;
	return 0;
}

/* ---- nodes and marks ---- */

static struct pc_node *node_new(struct pcache *pc, struct pc_map *m,
				struct pc_node *parent, unsigned offset,
				unsigned shift, uint64_t base)
{
	struct pc_node *n = park_zalloc(sizeof(*n));

	if (!n)
		return NULL;
	link_init(&n->shadow);
	n->parent = parent;
	n->map = m;
	n->offset = (uint8_t)offset;
	n->shift = (uint8_t)shift;
	n->base = base;
	pc->nnodes++;
	return n;
}

void pci_shadow_update(struct pcache *pc, struct pc_node *n)
{
	bool want = n->shift == 0 && n->count && n->count == n->nr_values;

	if (want == n->on_shadow_list)
		return;
	if (want) {
		link_add(pc->shadow_nodes.prev, &n->shadow); /* at the tail */
		pc->nshadow_nodes++;
	} else {
		link_del(&n->shadow);
		pc->nshadow_nodes--;
	}
	n->on_shadow_list = want;
}

static void node_free(struct pcache *pc, struct pc_node *n)
{
	if (n->map && n->map->hint == n)
		n->map->hint = NULL;
	if (n->on_shadow_list) {
		link_del(&n->shadow);
		pc->nshadow_nodes--;
	}
	pc->nnodes--;
	park_free(n, sizeof(*n));
}

/* Set mark on slot off of n and on every ancestor's path to it. */
void pci_mark_set(struct pc_node *n, unsigned off, unsigned mark)
{
	while (n && !(n->marks[mark] & (1ull << off))) {
		n->marks[mark] |= 1ull << off;
		off = n->offset;
		n = n->parent;
	}
}

/* One mark-bit clear: the slot's bit, and upward while nodes go unmarked. */
void pci_mark_clear(struct pcache *pc, struct pc_node *n, unsigned off,
		    unsigned mark)
{
	pc->ctr->pc_mark_clears++;
	/* up while a bit is cleared and leaves its node's mark empty: a
	 * bit already clear has left the ancestors' as they must be */
	while (n && (n->marks[mark] & (1ull << off))) {
		n->marks[mark] &= ~(1ull << off);
		if (n->marks[mark])
			break;
		off = n->offset;
		n = n->parent;
	}
}

bool pci_slot_marked(const struct pc_node *n, unsigned off)
{
	for (unsigned k = 0; k < PC_NMARKS; k++)
		if (n->marks[k] & (1ull << off))
			return true;
	return false;
}

/*
 * Free n and every ancestor it leaves empty; returns the nearest node
 * that survives (NULL: the map is empty).  No root shrinking here.
 */
struct pc_node *pci_delete_empty(struct pcache *pc, struct pc_map *m,
				 struct pc_node *n)
{
	while (n && n->count == 0) {
		struct pc_node *parent = n->parent;
		unsigned off = n->offset;

		node_free(pc, n);
		if (!parent) {
			m->root = NULL;
			return NULL;
		}
		parent->slots[off] = 0;
		parent->used &= ~(1ull << off);
		parent->count--;
		for (unsigned k = 0; k < PC_NMARKS; k++)
			if (parent->marks[k] & (1ull << off))
				pci_mark_clear(pc, parent, off, k);
		n = parent;
	}
	return n;
}

/* Make the tree canonical: a root using only slot 0 gives way to it. */
void pci_shrink(struct pcache *pc, struct pc_map *m)
{
	while (m->root && m->root->shift && m->root->count == 1 &&
	       pc_is_node(m->root->slots[0])) {
		struct pc_node *old = m->root, *child = pc_node_of(old->slots[0]);

		child->parent = NULL;
		child->offset = 0;
		m->root = child;
		node_free(pc, old);
	}
}

/*
 * Put e in slot off of leaf n: counts, the map's totals, the shadow-node
 * list.  init re-initialises the slot's three marks (three clears).  The
 * caller frees a node this empties.
 */
void pci_leaf_set(struct pcache *pc, struct pc_node *n, unsigned off,
		  uintptr_t e, bool init)
{
	uintptr_t old = n->slots[off];
	struct pc_map *m = n->map;

	if (init) {
		if (pc_is_value(old) && pci_slot_marked(n, off))
			pc->nr_marked_values--;
		for (unsigned k = 0; k < PC_NMARKS; k++)
			pci_mark_clear(pc, n, off, k);
	}
	n->count = (uint8_t)(n->count + (e != 0) - (old != 0));
	n->nr_values = (uint8_t)(n->nr_values + pc_is_value(e) - pc_is_value(old));
	m->nrpages += (uint64_t)pc_is_page(e) - pc_is_page(old);
	m->nrshadows += (uint64_t)pc_is_value(e) - pc_is_value(old);
	n->slots[off] = e;
	n->used = (n->used & ~(1ull << off)) | (uint64_t)(e != 0) << off;
	if (pc_is_page(e)) {
		to_page(e)->leaf = n;
		to_page(e)->map = m;
	}
	pci_shadow_update(pc, n);
}

/* The leaf slot of index, creating the path when create (else NULL). */
int pci_walk(struct pcache *pc, struct pc_map *m, uint64_t index,
	     bool create, struct pc_node **leaf)
{
	struct pc_node *n = m->root;

	*leaf = NULL;
	if (!n) {
		unsigned shift = 0;

		if (!create)
			return 0;
		while (index > span_max(pc, shift))
			shift += pc->fshift;
		n = node_new(pc, m, NULL, 0, shift, 0);
		if (!n)
			return -ENOMEM;
		m->root = n;
	}
	while (index > span_max(pc, n->shift)) {
		struct pc_node *top;

		if (!create)
			return 0;
		top = node_new(pc, m, NULL, 0, n->shift + pc->fshift, 0);
		if (!top)
			return -ENOMEM;
		top->slots[0] = mk_node(n);
		top->used = 1;
		top->count = 1;
		for (unsigned k = 0; k < PC_NMARKS; k++)
			if (n->marks[k])
				top->marks[k] = 1;
		n->parent = top;
		n->offset = 0;
		m->root = n = top;
	}
	for (;;) {
		unsigned off = (unsigned)(index >> n->shift) & FMASK(pc);
		struct pc_node *child;

		pc->ctr->pc_node_visits++;
		if (n->shift == 0) {
			*leaf = n;
			return 0;
		}
		if (n->slots[off]) {
			n = pc_node_of(n->slots[off]);
			continue;
		}
		if (!create)
			return 0;
		child = node_new(pc, m, n, off, n->shift - pc->fshift,
				 n->base + ((uint64_t)off << n->shift));
		if (!child)
			return -ENOMEM;
		n->slots[off] = mk_node(child);
		n->used |= 1ull << off;
		n->count++;
		pci_shadow_update(pc, n);
		n = child;
	}
}

/*
 * A leaf's range never changes while it lives (a new root goes above the
 * old one, a shrink frees only nodes above), and node_free forgets a
 * freed leaf, so a hint that holds index is the leaf a walk would reach.
 */
int pci_walk_hinted(struct pcache *pc, struct pc_map *m, uint64_t index,
		    bool create, struct pc_node **leaf)
{
	struct pc_node *h = m->hint;
	int err;

	if (h && index - h->base <= FMASK(pc)) {
		pc->ctr->pc_node_visits++;
		*leaf = h;
		return 0;
	}
	err = pci_walk(pc, m, index, create, leaf);
	if (*leaf)
		m->hint = *leaf;
	return err;
}

uintptr_t pc_load(struct pcache *pc, struct pc_map *m, uint64_t index)
{
	struct pc_node *leaf;

	pci_walk(pc, m, index, false, &leaf);
	return leaf ? leaf->slots[index - leaf->base] : 0;
}

/* Store e at index with marks re-initialised; an erase frees and shrinks. */
int pc_store(struct pcache *pc, struct pc_map *m, uint64_t index, uintptr_t e)
{
	struct pc_node *leaf;
	uintptr_t old;
	int err = pci_walk(pc, m, index, e != 0, &leaf);

	if (err)
		return err;
	if (!leaf)
		return 0; /* erasing an absent index */
	old = leaf->slots[index - leaf->base];
	pc->ctr->pc_lock_acquisitions++;
	if (pc_is_page(old)) {
		link_del(&to_page(old)->lru);
		pc->npages--;
		pc_page_release(pc, to_page(old));
	}
	pci_leaf_set(pc, leaf, (unsigned)(index - leaf->base), e, true);
	if (pc_is_page(e)) {
		link_add(&pc->lru, &to_page(e)->lru);
		to_page(e)->index = index;
		pc->npages++;
	}
	if (!leaf->count) {
		pci_delete_empty(pc, m, leaf);
		pci_shrink(pc, m);
	}
	return 0;
}

bool pc_get_mark(struct pcache *pc, struct pc_map *m, uint64_t index,
		 unsigned mark)
{
	struct pc_node *leaf;

	pci_walk(pc, m, index, false, &leaf);
	return leaf && (leaf->marks[mark] >> (index - leaf->base)) & 1;
}

static int mark_op(struct pcache *pc, struct pc_map *m, uint64_t index,
		   unsigned mark, bool set)
{
	struct pc_node *leaf;
	unsigned off;

	if (mark >= PC_NMARKS)
		return -EINVAL;
	pci_walk(pc, m, index, false, &leaf);
	if (!leaf)
		return -ENOENT;
	off = (unsigned)(index - leaf->base);
	if (!leaf->slots[off])
		return -ENOENT;
	pc->ctr->pc_lock_acquisitions++;
	if (set == !!((leaf->marks[mark] >> off) & 1))
		return 0;
	if (pc_is_value(leaf->slots[off]) && set && !pci_slot_marked(leaf, off))
		pc->nr_marked_values++;
	if (set) {
		pci_mark_set(leaf, off, mark);
	} else {
		pci_mark_clear(pc, leaf, off, mark);
		if (pc_is_value(leaf->slots[off]) && !pci_slot_marked(leaf, off))
			pc->nr_marked_values--;
	}
	return 0;
}

int pc_set_mark(struct pcache *pc, struct pc_map *m, uint64_t index,
		unsigned mark)
{
	return mark_op(pc, m, index, mark, true);
}

int pc_clear_mark(struct pcache *pc, struct pc_map *m, uint64_t index,
		  unsigned mark)
{
	return mark_op(pc, m, index, mark, false);
}

/* First set bit of w at or after bit `from` (64: none). */
static unsigned next_bit(uint64_t w, unsigned from)
{
	if (from >= 64)
		return 64;
	w &= ~0ull << from;
	return w ? (unsigned)__builtin_ctzll(w) : 64;
}

/* Slots of n that hold an entry (mark < 0) or carry mark. */
static uint64_t slot_bits(const struct pc_node *n, int mark)
{
	return mark >= 0 ? n->marks[mark] : n->used;
}

/*
 * Walk from the root to the first leaf slot at or after idx that holds an
 * entry (mark < 0) or carries mark: internal marks say which subtrees to
 * enter.  Every node entered is a visit.
 */
bool pci_find_first(struct pcache *pc, struct pc_map *m, uint64_t idx,
		    int mark, struct pc_node **leaf, unsigned *slot)
{
	struct pc_node *n = m->root;
	unsigned off;

	if (!n || idx > span_max(pc, n->shift))
		return false;
	pc->ctr->pc_node_visits++;
	off = (unsigned)(idx >> n->shift) & FMASK(pc);
	for (;;) {
		unsigned b = next_bit(slot_bits(n, mark), off);

		if (b == 64) {
			if (!n->parent)
				return false;
			off = n->offset + 1u;
			n = n->parent;
			continue;
		}
		if (n->shift == 0) {
			*leaf = n;
			*slot = b;
			return true;
		}
		n = pc_node_of(n->slots[b]);
		pc->ctr->pc_node_visits++;
		/* off idx's path (past it): from the child's first slot */
		off = n->base >= idx ? 0 : (unsigned)(idx >> n->shift) & FMASK(pc);
	}
}

bool pc_find_marked(struct pcache *pc, struct pc_map *m, uint64_t *index,
		    unsigned mark)
{
	struct pc_node *leaf;
	unsigned slot;

	if (mark >= PC_NMARKS ||
	    !pci_find_first(pc, m, *index, (int)mark, &leaf, &slot))
		return false;
	*index = leaf->base + slot;
	return true;
}

bool pc_last_index(const struct pc_map *m, uint64_t *index)
{
	const struct pc_node *n = m->root;

	while (n) {
		unsigned i = PC_SLOTS;

		while (i > 0 && !n->slots[i - 1])
			i--;
		if (i == 0)
			return false; /* an empty node: the audit says so */
		if (n->shift == 0) {
			*index = n->base + i - 1;
			return true;
		}
		n = pc_node_of(n->slots[i - 1]);
	}
	return false;
}
