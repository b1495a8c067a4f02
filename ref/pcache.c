/*
 * pcache.c - the page cache for buffered file I/O: pages, the LRU and
 * shadow entries, the audit, and the hooks the engine calls.  Seed path
 * (b), truncating its pages and shadow entries, is pcache_truncate.c's.
 *
 * Each file has a radix index (pcache_index.c) of pages and shadow
 * entries.  Pages live on one global LRU of `capacity` pages; evicting
 * one leaves a shadow (value) entry holding the eviction clock, and a
 * read that finds a shadow where it needs a page counts a refault
 * (workingset).  Leaves that hold only shadows sit on the shadow-node
 * list; when it grows past its bound, the oldest such leaf is reclaimed.
 *
 * Writes of written blocks are write-back: the page is marked dirty and
 * reaches the device at writeback (ref_writeback, fsync, sync, unmount,
 * eviction).  Writes that allocate or convert blocks go to the device at
 * once, as before, and leave a clean page: file.c's rule 1 (data before
 * the commit that maps it) then holds without the commit knowing about
 * the cache.  A dirty page therefore only ever covers a written block
 * inside EOF, and every operation that unmaps, converts or moves blocks
 * drops their pages first (pcache_truncate and _discard, in
 * pcache_truncate.c; pcache_shift).  A crash loses dirty pages, as Linux
 * loses unwritten page-cache data.
 *
 * Counters (ref.h): pc_node_visits counts nodes entered on a walk (and,
 * for the batched truncate's cursor, one per entry stepped over);
 * pc_mark_clears counts mark-bit clear operations; pc_lock_acquisitions
 * counts rounds of the index lock taken to modify it.
 */
#include "ref/pcache_internal.h"

#include "base/park.h"
#include "base/poison.h"
#include "base/zeros.h"

#include <stdio.h>
#include <stdlib.h>

int pc_new(uint32_t bs, uint64_t capacity, size_t nmaps,
	   struct ref_counters *ctr, struct pcache **out)
{
	struct pcache *pc = park_zalloc(sizeof(*pc));

	if (!pc)
		return -ENOMEM;
	pc->maps = park_calloc(nmaps ? nmaps : 1, sizeof(*pc->maps));
	if (!pc->maps) {
		park_free(pc, sizeof(*pc));
		return -ENOMEM;
	}
	pc->bs = bs;
	pc->fshift = PC_SHIFT;
	pc->capacity = capacity ? capacity : 1;
	pc->nmaps = nmaps;
	/* Shadows of up to 16 x capacity pages (dense leaves) are kept. */
	pc->shadow_node_max = pc->capacity / 4 + 4;
	pc->ctr = ctr;
	link_init(&pc->lru);
	link_init(&pc->shadow_nodes);
	for (size_t i = 0; i < nmaps; i++)
		pc->maps[i].id = i + 1;
	*out = pc;
	return 0;
}

struct pc_map *pc_map_of(struct pcache *pc, uint64_t id)
{
	return id >= 1 && id <= pc->nmaps ? &pc->maps[id - 1] : NULL;
}

static size_t page_bytes(const struct pcache *pc)
{
	return sizeof(struct pc_page) + (pc->nodata ? 0 : pc->bs);
}

/*
 * Pages come and go at every eviction: a page leaving the cache is kept
 * (up to PC_SPARE_MAX of them) for the next one to come, not freed, poisoned
 * while it waits (base/poison.h), so the sanitizers still see a use of
 * it as one after free.
 */
static struct pc_page *page_alloc(struct pcache *pc)
{
	struct pc_page *p;

	if (!pc->nspare)
		return park_alloc(page_bytes(pc));
	p = pc->spare[--pc->nspare];
	mem_reuse(p, page_bytes(pc));
	return p;
}

void pc_page_release(struct pcache *pc, struct pc_page *p)
{
	if (pc->nspare == PC_SPARE_MAX) {
		park_free(p, page_bytes(pc));
		return;
	}
	mem_idle(p, page_bytes(pc));
	pc->spare[pc->nspare++] = p;
}

/* Free a page leaving the index: its delalloc reservation goes too. */
void pc_page_free(struct pcache *pc, struct pc_page *p)
{
	if (p->delalloc)
		pc->ndelalloc[p->delalloc - 1]--;
	pc_page_release(pc, p);
}

static void free_subtree(struct pcache *pc, struct pc_node *n)
{
	for (unsigned i = 0; i < FSLOTS(pc); i++) {
		uintptr_t e = n->slots[i];

		if (pc_is_node(e))
			free_subtree(pc, pc_node_of(e));
		else if (pc_is_page(e))
			pc_page_free(pc, to_page(e));
	}
	park_free(n, sizeof(*n));
}

void pc_free(struct pcache *pc)
{
	if (!pc)
		return;
	for (size_t i = 0; i < pc->nmaps; i++)
		if (pc->maps[i].root)
			free_subtree(pc, pc->maps[i].root);
	while (pc->nspare)
		park_free(pc->spare[--pc->nspare], page_bytes(pc));
	if (pc->look)
		park_free(pc->look, page_bytes(pc));
	park_cfree(pc->maps, pc->nmaps ? pc->nmaps : 1, sizeof(*pc->maps));
	park_free(pc, sizeof(*pc));
}

/* ---- pages and the LRU ---- */

uint8_t *pc_page_bytes(struct pcache *pc, struct pc_page *p, bool whole)
{
	if (p->data && p->data != p->own) { /* the zero block's, until now */
		if (!whole)
			memset(p->own, 0, pc->bs);
		p->data = p->own;
	}
	return p->data;
}

bool pc_page_mark(const struct pc_page *p, unsigned mark)
{
	return (p->leaf->marks[mark] >> (p->index - p->leaf->base)) & 1;
}

void pc_page_set_mark(struct pcache *pc, struct pc_page *p, unsigned mark)
{
	if (!pc_page_mark(p, mark))
		pci_mark_set(p->leaf, (unsigned)(p->index - p->leaf->base), mark);
}

void pc_page_clear_mark(struct pcache *pc, struct pc_page *p, unsigned mark)
{
	if (pc_page_mark(p, mark))
		pci_mark_clear(pc, p->leaf, (unsigned)(p->index - p->leaf->base), mark);
}

struct pc_page *pc_peek_page(struct pcache *pc, struct pc_map *m,
			     uint64_t index)
{
	uintptr_t e = pc_load(pc, m, index);

	return pc_is_page(e) ? to_page(e) : NULL;
}

void pc_page_undelalloc(struct pcache *pc, struct pc_page *p)
{
	if (p->delalloc)
		pc->ndelalloc[p->delalloc - 1]--;
	p->delalloc = 0;
}

struct pc_page *pc_find_page(struct pcache *pc, struct pc_map *m,
			     uint64_t index)
{
	struct pc_node *leaf;
	uintptr_t e;

	pci_walk_hinted(pc, m, index, false, &leaf);
	e = leaf ? leaf->slots[index - leaf->base] : 0;

	if (!pc_is_page(e))
		return NULL;
	link_del(&to_page(e)->lru);
	link_add(&pc->lru, &to_page(e)->lru);
	return to_page(e);
}

/* Take page p's slot out (replaced by e), the page off the LRU and freed. */
static void page_replace(struct pcache *pc, struct pc_page *p, uintptr_t e)
{
	struct pc_node *leaf = p->leaf;
	struct pc_map *m = p->map;

	pc->ctr->pc_lock_acquisitions++;
	link_del(&p->lru);
	pc->npages--;
	pci_leaf_set(pc, leaf, (unsigned)(p->index - leaf->base), e, false);
	pc_page_free(pc, p);
	if (!leaf->count) {
		pci_delete_empty(pc, m, leaf);
		pci_shrink(pc, m);
	}
}

/* Reclaim the oldest shadow-only leaf: its shadows are forgotten. */
static void reclaim_shadow_node(struct pcache *pc)
{
	struct pc_node *n = container_of(pc->shadow_nodes.next, struct pc_node,
					 shadow);
	struct pc_map *m = n->map;

	pc->ctr->pc_lock_acquisitions++;
	for (unsigned i = 0; i < FSLOTS(pc); i++)
		if (n->slots[i])
			pci_leaf_set(pc, n, i, 0, true);
	pci_delete_empty(pc, m, n);
	pci_shrink(pc, m);
}

void pc_evict(struct pcache *pc, struct pc_page *p)
{
	struct pc_node *leaf = p->leaf;
	unsigned off = (unsigned)(p->index - leaf->base);
	bool knob = pc->mark_values;

	for (unsigned k = 0; k < PC_NMARKS; k++)
		pc_page_clear_mark(pc, p, k);
	pc->clock++;
	pc->ctr->pc_evictions++;
	pc->ctr->pc_shadows++;
	page_replace(pc, p, pc_mk_value(pc->clock));
	if (knob) {
		/* the fallback's trigger: a mark left on a value entry */
		pci_mark_set(leaf, off, PC_TOWRITE);
		pc->nr_marked_values++;
	}
	while (pc->nshadow_nodes > pc->shadow_node_max)
		reclaim_shadow_node(pc);
}

void pc_remove_page(struct pcache *pc, struct pc_page *p)
{
	for (unsigned k = 0; k < PC_NMARKS; k++)
		pc_page_clear_mark(pc, p, k);
	page_replace(pc, p, 0);
}

int pc_add_page(struct pcache *pc, struct pc_map *m, uint64_t index,
		struct pc_page **out)
{
	struct pc_page *p;
	struct pc_node *leaf;
	uintptr_t old;
	int err;

	if (pc->npages >= pc->capacity) {
		struct pc_page *victim = container_of(pc->lru.prev,
						      struct pc_page, lru);
		uint64_t turns = 0;

		/* delalloc pages wait for writeback: rotate past them */
		while ((victim->delalloc || pc_page_mark(victim, PC_WRITEBACK)) &&
		       turns++ < pc->npages) {
			link_del(&victim->lru);
			link_add(&pc->lru, &victim->lru);
			victim = container_of(pc->lru.prev, struct pc_page, lru);
		}
		if (victim->delalloc || pc_page_mark(victim, PC_WRITEBACK))
			return -ENOSPC; /* every page is waiting for writeback */
		if (pc_page_mark(victim, PC_DIRTY)) {
			err = pc->writepage ? pc->writepage(pc->wp_arg, victim) :
			      -EBUSY;
			if (err)
				return err;
		}
		pc_evict(pc, victim);
	}
	p = page_alloc(pc);
	if (!p)
		return -ENOMEM;
	p->delalloc = 0;
	p->data = pc->nodata ? NULL : p->own;
	err = pci_walk_hinted(pc, m, index, true, &leaf);
	if (err) {
		pc_page_release(pc, p);
		return err;
	}
	old = leaf->slots[index - leaf->base];
	if (pc_is_page(old)) {
		pc_page_release(pc, p);
		return -EEXIST;
	}
	pc->ctr->pc_lock_acquisitions++;
	if (pc_is_value(old))
		pc->ctr->pc_refaults++;
	p->index = index;
	/* a refault re-initialises whatever marks the shadow's slot had */
	pci_leaf_set(pc, leaf, (unsigned)(index - leaf->base), (uintptr_t)p,
		     old != 0);
	link_add(&pc->lru, &p->lru);
	pc->npages++;
	*out = p;
	return 0;
}

/* ---- the audit ---- */

#define BAD(pc, ...) do {                                                  \
		snprintf((pc)->why, sizeof((pc)->why), __VA_ARGS__);        \
		return -EFSCORRUPTED;                                      \
	} while (0)

struct pc_tally {
	uint64_t pages, values, nodes, shadow_nodes, marked_values;
	bool hint_seen;              /* the map's lookup hint is a leaf of it */
};

/*
 * The slots of node n in use, as a mask (bit i: slot i; a fan-out of 64
 * fills the word).  Slots past the fan-out must be empty, and are.
 */
static int used_slots(struct pcache *pc, struct pc_map *m,
		      const struct pc_node *n, uint64_t *used)
{
	static const uintptr_t none[PC_SLOTS];
	unsigned fan = FSLOTS(pc);

	*used = 0;
	for (unsigned i = 0; i < fan; i++)
		*used |= (uint64_t)(n->slots[i] != 0) << i;
	/* past the fan-out: compared with zeros at once, then the culprit */
	if (fan < PC_SLOTS &&
	    memcmp(n->slots + fan, none, (PC_SLOTS - fan) * sizeof(*none)))
		for (unsigned i = fan; i < PC_SLOTS; i++)
			if (n->slots[i])
				BAD(pc, "map %llu: slot %u used in a %u-way "
				    "node at %llu", (unsigned long long)m->id, i,
				    fan, (unsigned long long)n->base);
	return 0;
}

/*
 * Each mark of n on used slots only and, above the leaves, on exactly
 * the slots whose child has that mark somewhere: a word per mark, not a
 * bit at a time.
 */
static int audit_marks(struct pcache *pc, struct pc_map *m,
		       const struct pc_node *n, uint64_t used)
{
	uint64_t child[PC_NMARKS] = { 0 };

	for (unsigned k = 0; k < PC_NMARKS; k++) {
		uint64_t stray = n->marks[k] & ~used;

		if (stray)
			BAD(pc, "map %llu: mark %u set on empty index %llu",
			    (unsigned long long)m->id, k,
			    (unsigned long long)(n->base +
			    ((uint64_t)__builtin_ctzll(stray) << n->shift)));
	}
	if (!n->shift)
		return 0;
	for (uint64_t u = used; u; u &= u - 1) {
		unsigned i = (unsigned)__builtin_ctzll(u);
		uintptr_t e = n->slots[i];

		if (!pc_is_node(e))
			BAD(pc, "map %llu: entry above the leaves at %llu",
			    (unsigned long long)m->id,
			    (unsigned long long)(n->base + ((uint64_t)i << n->shift)));
		for (unsigned k = 0; k < PC_NMARKS; k++)
			child[k] |= (uint64_t)(pc_node_of(e)->marks[k] != 0) << i;
	}
	for (unsigned k = 0; k < PC_NMARKS; k++) {
		uint64_t differ = n->marks[k] ^ child[k];

		if (differ)
			BAD(pc, "map %llu: mark %u of node slot %llu does not "
			    "match its child", (unsigned long long)m->id, k,
			    (unsigned long long)(n->base +
			    ((uint64_t)__builtin_ctzll(differ) << n->shift)));
	}
	return 0;
}

static int audit_node(struct pcache *pc, struct pc_map *m,
		      const struct pc_node *n, struct pc_tally *t)
{
	unsigned count = 0, values = 0;
	uint64_t used;
	int err;

	t->nodes++;
	if (n == m->hint && n->shift == 0)
		t->hint_seen = true;
	if (n->map != m)
		BAD(pc, "map %llu: node at base %llu names another map",
		    (unsigned long long)m->id, (unsigned long long)n->base);
	err = used_slots(pc, m, n, &used);
	if (!err)
		err = audit_marks(pc, m, n, used);
	if (err)
		return err;
	for (uint64_t u = used; u; u &= u - 1) {
		unsigned i = (unsigned)__builtin_ctzll(u);
		uintptr_t e = n->slots[i];
		uint64_t idx = n->base + ((uint64_t)i << n->shift);

		count++;
		if (n->shift) {
			const struct pc_node *c = pc_node_of(e);

			if (c->parent != n || c->offset != i ||
			    c->shift + pc->fshift != n->shift || c->base != idx)
				BAD(pc, "map %llu: node at %llu is misplaced",
				    (unsigned long long)m->id,
				    (unsigned long long)idx);
			err = audit_node(pc, m, c, t);
			if (err)
				return err;
		} else if (pc_is_value(e)) {
			values++;
			t->values++;
			if (pci_slot_marked(n, i))
				t->marked_values++;
			if (pc_value(e) == 0 || pc_value(e) > pc->clock)
				BAD(pc, "map %llu: shadow at %llu has stamp %llu, "
				    "never an eviction (clock %llu)",
				    (unsigned long long)m->id,
				    (unsigned long long)idx,
				    (unsigned long long)pc_value(e),
				    (unsigned long long)pc->clock);
		} else if (pc_is_page(e)) {
			const struct pc_page *p = to_page(e);

			t->pages++;
			if (p->index != idx || p->leaf != n || p->map != m)
				BAD(pc, "map %llu: page at %llu thinks it is at %llu",
				    (unsigned long long)m->id,
				    (unsigned long long)idx,
				    (unsigned long long)p->index);
		} else {
			BAD(pc, "map %llu: node pointer in a leaf at %llu",
			    (unsigned long long)m->id, (unsigned long long)idx);
		}
	}
	if (count == 0)
		BAD(pc, "map %llu: empty node at base %llu",
		    (unsigned long long)m->id, (unsigned long long)n->base);
	if (used != n->used)
		BAD(pc, "map %llu: node at base %llu says slots %#llx are used; "
		    "its slots hold %#llx", (unsigned long long)m->id,
		    (unsigned long long)n->base, (unsigned long long)n->used,
		    (unsigned long long)used);
	if (count != n->count || values != n->nr_values)
		BAD(pc, "map %llu: node at base %llu counts %u entries, %u values; "
		    "its slots hold %u, %u", (unsigned long long)m->id,
		    (unsigned long long)n->base, n->count, n->nr_values, count,
		    values);
	if (n->on_shadow_list != (n->shift == 0 && count == values))
		BAD(pc, "map %llu: node at base %llu is %son the shadow list",
		    (unsigned long long)m->id, (unsigned long long)n->base,
		    n->on_shadow_list ? "" : "not ");
	t->shadow_nodes += n->on_shadow_list;
	return 0;
}

int pc_audit(struct pcache *pc)
{
	struct pc_tally t = { 0 };
	uint64_t lru = 0, listed = 0;

	pc->why[0] = 0;
	for (size_t i = 0; i < pc->nmaps; i++) {
		struct pc_map *m = &pc->maps[i];
		struct pc_tally mt = { 0 };
		const struct pc_node *r = m->root;
		int err;

		if (!r) {
			if (m->nrpages || m->nrshadows)
				BAD(pc, "map %llu: empty but counts %llu pages",
				    (unsigned long long)m->id,
				    (unsigned long long)m->nrpages);
			if (m->hint)
				BAD(pc, "map %llu: empty but its lookup hint "
				    "names a leaf", (unsigned long long)m->id);
			continue;
		}
		if (r->parent || r->base)
			BAD(pc, "map %llu: root is not a root",
			    (unsigned long long)m->id);
		if (r->shift && r->count == 1 && r->slots[0])
			BAD(pc, "map %llu: root of height %u uses only slot 0 "
			    "(not shrunk)", (unsigned long long)m->id,
			    pc_height(m));
		err = audit_node(pc, m, r, &mt);
		if (err)
			return err;
		if (m->hint && !mt.hint_seen)
			BAD(pc, "map %llu: its lookup hint names no leaf of it",
			    (unsigned long long)m->id);
		if (mt.pages != m->nrpages || mt.values != m->nrshadows)
			BAD(pc, "map %llu: counts %llu pages, %llu shadows; holds "
			    "%llu, %llu", (unsigned long long)m->id,
			    (unsigned long long)m->nrpages,
			    (unsigned long long)m->nrshadows,
			    (unsigned long long)mt.pages,
			    (unsigned long long)mt.values);
		t.pages += mt.pages;
		t.values += mt.values;
		t.nodes += mt.nodes;
		t.shadow_nodes += mt.shadow_nodes;
		t.marked_values += mt.marked_values;
	}
	for (const struct pc_link *l = pc->lru.next; l != &pc->lru; l = l->next)
		if (++lru > t.pages)
			break;
	for (const struct pc_link *l = pc->shadow_nodes.next;
	     l != &pc->shadow_nodes; l = l->next)
		if (++listed > t.shadow_nodes)
			break;
	if (lru != t.pages || pc->npages != t.pages)
		BAD(pc, "%llu pages indexed, %llu on the LRU, %llu counted",
		    (unsigned long long)t.pages, (unsigned long long)lru,
		    (unsigned long long)pc->npages);
	if (t.pages > pc->capacity)
		BAD(pc, "%llu pages cached, capacity %llu",
		    (unsigned long long)t.pages, (unsigned long long)pc->capacity);
	if (t.nodes != pc->nnodes)
		BAD(pc, "%llu nodes in the trees, %llu allocated",
		    (unsigned long long)t.nodes, (unsigned long long)pc->nnodes);
	if (listed != t.shadow_nodes || listed != pc->nshadow_nodes)
		BAD(pc, "%llu shadow-only leaves, %llu on the list, %llu counted",
		    (unsigned long long)t.shadow_nodes,
		    (unsigned long long)listed,
		    (unsigned long long)pc->nshadow_nodes);
	/* Precondition of the batched truncate: no value entry carries a
	 * mark, except those the fallback knob placed (and counted). */
	if (t.marked_values != pc->nr_marked_values)
		BAD(pc, "%llu value entries carry a mark, %llu were placed by "
		    "the fallback knob", (unsigned long long)t.marked_values,
		    (unsigned long long)pc->nr_marked_values);
	return 0;
}

/* ---- the engine's hooks ---- */

struct pc_map *pcache_inode_map(struct ref_fs *fs,
				const struct ref_inode *ip)
{
	return pc_map_of(fs->pc, ip->ino);
}

/*
 * Block fb of the file as the device has it, into page p (holes,
 * unwritten: zeros, the zero block's when it is mapped; look: a written
 * block's bytes where the device holds them, when it can show them:
 * fdata_view).  *e is the caller's mapping of the blocks before, looked
 * up again (as a run up to block upto, the end of what the caller reads)
 * when it does not cover fb.
 */
static int read_block(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		      uint64_t upto, struct ref_extent *e, struct pc_page *p,
		      bool look)
{
	uint64_t devoff;
	uint8_t *out = p->data;
	int err = 0;

	if (!(e->len && fb >= e->fileoff && fb - e->fileoff < e->len))
		err = bmap_lookup_read(fs, ip, fb, upto, e);
	if (err)
		return err;
	if (fs->pc->nodata)
		return 0;
	if (ext_compressed(e))
		return compr_read_block(fs, ip, e, fb, out);
	if (e->state != 0) {
		const uint8_t *z = zeros_block();

		if (z)
			p->data = (uint8_t *)z; /* read-only: pc_page_bytes */
		else
			memset(out, 0, fs->bs);
		return 0;
	}
	fs->ctr.data_bytes_read += fs->bs;
	devoff = (e->startblk + (fb - e->fileoff)) << fs->bshift;
	if (look) {
		const uint8_t *in_place = fdata_view(fs, ip, devoff, fs->bs);

		if (in_place) {
			p->data = (uint8_t *)in_place; /* read-only, as zeros */
			return 0;
		}
	}
	return fdata_read(fs, ip, devoff, out, fs->bs);
}

/* Write one dirty page to its block: writeback set, dirty and towrite
 * cleared, the block written, writeback cleared. */
static int writepage(void *arg, struct pc_page *p)
{
	struct ref_fs *fs = arg;
	struct ref_inode *ip;
	struct ref_extent e;
	int err = inode_get(fs, p->map->id, &ip);

	if (!err)
		err = bmap_lookup(fs, ip, p->index, &e);
	if (err)
		return err;
	if (p->delalloc) {
		ref_report(fs, "inode %llu: delalloc page %llu written alone, "
			   "outside a delalloc run", (unsigned long long)ip->ino,
			   (unsigned long long)p->index);
		return -EFSCORRUPTED;
	}
	if (e.state != 0) {
		ref_report(fs, "inode %llu: dirty page %llu over a block that is "
			   "not written", (unsigned long long)ip->ino,
			   (unsigned long long)p->index);
		return -EFSCORRUPTED;
	}
	pc_page_set_mark(fs->pc, p, PC_WRITEBACK);
	pc_page_clear_mark(fs->pc, p, PC_DIRTY);
	pc_page_clear_mark(fs->pc, p, PC_TOWRITE);
	fs->ctr.data_bytes_written += fs->bs;
	fs->ctr.pc_pages_written++;
	err = fdata_write(fs, ip, (e.startblk + (p->index - e.fileoff)) <<
			  fs->bshift, fs->pc->nodata ? fs->zeroblk : p->data,
			  fs->bs);
	if (err) {
		pc_page_set_mark(fs->pc, p, PC_DIRTY); /* try again later */
		pc_page_clear_mark(fs->pc, p, PC_WRITEBACK);
		return err;
	}
	pc_page_clear_mark(fs->pc, p, PC_WRITEBACK);
	return 0;
}

int pcache_mount(struct ref_fs *fs, uint32_t pages, unsigned shift)
{
	int err;

	if (!pages)
		return 0;
	err = pc_new(fs->bs, pages, fs->ninodes, &fs->ctr, &fs->pc);
	if (!err && shift)
		err = pc_set_fanout(fs->pc, shift);
	if (err)
		return err;
	fs->pc->writepage = writepage;
	fs->pc->wp_arg = fs;
	return 0;
}

void pcache_unmount(struct ref_fs *fs)
{
	pc_free(fs->pc);
	fs->pc = NULL;
}

/* The page at block fb, read in when missing (fill; the caller reads on
 * up to block upto, read_block), or made for a caller that writes every
 * byte of it next (!fill: neither read nor zeroed). */
static int get_page(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		    uint64_t upto, struct ref_extent *e, bool fill,
		    struct pc_page **out)
{
	struct pcache *pc = fs->pc;
	struct pc_map *m = pcache_inode_map(fs, ip);
	int err;

	*out = pc_find_page(pc, m, fb);
	if (*out) {
		fs->ctr.pc_hits++;
		return 0;
	}
	fs->ctr.pc_misses++;
	err = pc_add_page(pc, m, fb, out);
	if (err)
		return err;
	if (!fill) /* cache_write copies the whole block over it */
		return 0;
	err = read_block(fs, ip, fb, upto, e, *out, false);
	if (err) {
		pc_remove_page(pc, *out);
		*out = NULL;
	}
	return err;
}

/*
 * Block fb, which is not in the cache, as a view sees it, the cache left
 * as it was (pcache_view): the block in place on the device or read into
 * pc->look.
 */
static int look_page(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t upto, struct ref_extent *e, struct pc_page **out)
{
	struct pcache *pc = fs->pc;

	if (!pc->look) {
		pc->look = park_alloc(page_bytes(pc));
		if (!pc->look)
			return -ENOMEM;
	}
	*out = pc->look;
	(*out)->data = (*out)->own; /* read_block may lend it other bytes */
	return read_block(fs, ip, fb, upto, e, *out, true);
}

/* The index of m's first page at or after idx, or limit when there is
 * none below it (shadow entries are no pages). */
static uint64_t next_page(struct pcache *pc, struct pc_map *m, uint64_t idx,
			  uint64_t limit)
{
	struct pc_node *leaf;
	unsigned slot;

	if (!m->nrpages)
		return limit;
	while (idx < limit && pci_find_first(pc, m, idx, -1, &leaf, &slot)) {
		uint64_t at = leaf->base + slot;

		if (at >= limit)
			break;
		if (pc_is_page(leaf->slots[slot]))
			return at;
		idx = at + 1;
	}
	return limit;
}

/*
 * A view of the blocks from pos on while none is in the cache (block
 * pos's is not), handed to fn as one piece where they make one: a run of
 * holes and unwritten blocks as zeros (NULL), a run of written blocks
 * that lie together on the device as the device shows them in place.
 * Run through in pieces of a block, a view of a large sparse file was
 * most of a verify's time.  The run ends at the next page in the cache,
 * at the end of e's mapping (looked up as read_block does) or at end.
 * The bytes handed to fn; 0 when block pos is look_page's (a run of one
 * block, a compressed extent, bytes the device does not show in place).
 */
static int64_t view_run(struct ref_fs *fs, struct ref_inode *ip,
			struct pc_map *m, ref_view_fn fn, void *arg,
			uint64_t pos, uint64_t end, uint64_t upto,
			struct ref_extent *e)
{
	uint64_t fb = pos >> fs->bshift, stop, n;
	const uint8_t *data = NULL;

	if (fs->pc->nodata)
		return 0;
	if (!(e->len && fb >= e->fileoff && fb - e->fileoff < e->len)) {
		int err = bmap_lookup_read(fs, ip, fb, upto, e);

		if (err)
			return err;
	}
	/* a written run the device cannot show whole: no search for it */
	if (ext_compressed(e) || (e->state == 0 && !fdata_view_runs(fs, ip)))
		return 0;
	stop = e->fileoff + e->len < upto ? e->fileoff + e->len : upto;
	stop = next_page(fs->pc, m, fb + 1, stop);
	if (stop <= fb + 1)
		return 0;
	n = (end < stop << fs->bshift ? end : stop << fs->bshift) - pos;
	if (e->state == 0) {
		uint64_t blocks = stop - fb;

		data = fdata_view(fs, ip, (e->startblk + (fb - e->fileoff)) <<
				  fs->bshift, blocks << fs->bshift);
		if (!data)
			return 0;
		fs->ctr.data_bytes_read += blocks << fs->bshift;
		data += pos & (fs->bs - 1);
	}
	fn(arg, pos, data, (size_t)n);
	return (int64_t)n;
}

/*
 * A read of [off, end) through the cache: each page's bytes copied to out
 * (get_page: pages read in, found pages made the most recent), or when
 * out is NULL handed to fn (NULL: zeros) while the page is sure to stay,
 * the cache left as it was (look_page; view_run for the blocks not in
 * the cache).
 */
static int64_t pcache_walk(struct ref_fs *fs, struct ref_inode *ip,
			   uint8_t *out, ref_view_fn fn, void *arg,
			   uint64_t off, uint64_t end)
{
	struct ref_extent e = { 0 };
	struct pc_map *m = pcache_inode_map(fs, ip);
	uint64_t pos = off, upto = fs_blocks_roundup(fs, end);

	pcache_sync_knob(fs);
	while (pos < end) {
		uint64_t fb = pos >> fs->bshift, bo = pos & (fs->bs - 1);
		uint64_t n = end - pos < fs->bs - bo ? end - pos : fs->bs - bo;
		const uint8_t *data;
		struct pc_page *p = NULL;
		int err = 0;

		if (out) {
			err = get_page(fs, ip, fb, upto, &e, true, &p);
		} else {
			p = pc_peek_page(fs->pc, m, fb);
			if (!p) {
				int64_t r = view_run(fs, ip, m, fn, arg, pos,
						     end, upto, &e);

				if (r > 0) {
					pos += (uint64_t)r;
					continue;
				}
				err = (int)r;
				if (!err)
					err = look_page(fs, ip, fb, upto, &e,
							&p);
			}
		}

		if (err)
			return pos > off ? (int64_t)(pos - off) : err;
		data = fs->pc->nodata ? NULL : p->data + bo;
		if (!out)
			fn(arg, pos, data, (size_t)n);
		else if (data)
			memcpy(out + (pos - off), data, n);
		else
			memset(out + (pos - off), 0, n);
		pos += n;
	}
	return (int64_t)(end - off);
}

int64_t pcache_read(struct ref_fs *fs, struct ref_inode *ip, uint8_t *out,
		    uint64_t off, uint64_t end)
{
	return pcache_walk(fs, ip, out, NULL, NULL, off, end);
}

int64_t pcache_view(struct ref_fs *fs, struct ref_inode *ip, ref_view_fn fn,
		    void *arg, uint64_t off, uint64_t end)
{
	return pcache_walk(fs, ip, NULL, fn, arg, off, end);
}

enum { CW_THROUGH, CW_DIRTY, CW_DELALLOC };

static int cache_write(struct ref_fs *fs, struct ref_inode *ip, uint64_t pos,
		       uint64_t end, const uint8_t *src, unsigned how)
{
	struct ref_extent e = { 0 };

	if (!fs->pc)
		return 0;
	pcache_sync_knob(fs);
	while (pos < end) {
		uint64_t fb = pos >> fs->bshift, bo = pos & (fs->bs - 1);
		uint64_t n = end - pos < fs->bs - bo ? end - pos : fs->bs - bo;
		struct pc_page *p;
		int err = 0;

		if (how != CW_THROUGH) /* a partial write reads the block first */
			err = get_page(fs, ip, fb, fb + 1, &e, n < fs->bs,
				       &p);
		else
			p = pc_find_page(fs->pc, pcache_inode_map(fs, ip), fb);
		if (err)
			return err;
		if (p && !fs->pc->nodata)
			memcpy(pc_page_bytes(fs->pc, p, n == fs->bs) + bo,
			       src, n);
		if (how != CW_THROUGH)
			pc_page_set_mark(fs->pc, p, PC_DIRTY);
		if (how == CW_DELALLOC && !p->delalloc) {
			p->delalloc = inode_is_rt(ip) ? 2 : 1;
			fs->pc->ndelalloc[p->delalloc - 1]++;
			fs->ctr.delalloc_pages++;
		}
		src += n;
		pos += n;
	}
	return 0;
}

int pcache_write(struct ref_fs *fs, struct ref_inode *ip, uint64_t pos,
		 uint64_t end, const uint8_t *src, bool dirty)
{
	return cache_write(fs, ip, pos, end, src, dirty ? CW_DIRTY : CW_THROUGH);
}

int pcache_delalloc(struct ref_fs *fs, struct ref_inode *ip, uint64_t pos,
		    uint64_t end, const uint8_t *src)
{
	return cache_write(fs, ip, pos, end, src, CW_DELALLOC);
}

void pcache_zero(struct ref_fs *fs, struct ref_inode *ip, uint64_t from,
		 uint64_t to)
{
	struct pc_map *m;

	if (!fs->pc || from >= to)
		return;
	m = pcache_inode_map(fs, ip);
	for (uint64_t fb = from >> fs->bshift; fb <= (to - 1) >> fs->bshift; fb++) {
		uintptr_t ent = pc_load(fs->pc, m, fb);
		uint64_t b0 = fb << fs->bshift, b1 = b0 + fs->bs;
		uint64_t z0 = from > b0 ? from : b0, z1 = to < b1 ? to : b1;

		/* a page on the zero block reads zeros already */
		if (pc_is_page(ent) && !fs->pc->nodata &&
		    to_page(ent)->data == to_page(ent)->own)
			memset(to_page(ent)->data + (z0 - b0), 0, z1 - z0);
		if (!m->root)
			break;
	}
}

/* A failed writeback leaves its pages from idx on dirty, not towrite
 * (the tag lives only inside one pass; shadows keep theirs, as the
 * knob's evictions leave them). */
static void untag_pages(struct pcache *pc, struct pc_map *m, uint64_t idx)
{
	for (; pc_find_marked(pc, m, &idx, PC_TOWRITE); idx++)
		if (pc_is_page(pc_load(pc, m, idx)))
			pc_page_clear_mark(pc, to_page(pc_load(pc, m, idx)),
					   PC_TOWRITE);
}

/* Write the dirty pages of m from index from on: tag them towrite, then
 * write each towrite page (marked iteration skips value entries). */
static int writeback_map(struct ref_fs *fs, struct pc_map *m, uint64_t from)
{
	struct pcache *pc = fs->pc;
	uint64_t idx = from;

	while (pc_find_marked(pc, m, &idx, PC_DIRTY)) {
		pc_set_mark(pc, m, idx, PC_TOWRITE);
		idx++;
	}
	idx = from;
	while (pc_find_marked(pc, m, &idx, PC_TOWRITE)) {
		uintptr_t e = pc_load(pc, m, idx);
		uint64_t next = idx + 1;

		if (pc_is_page(e)) {
			struct ref_inode *ip;
			int err = 0;

			if (to_page(e)->delalloc) { /* a run: delalloc_cap.c */
				err = inode_get(fs, m->id, &ip);
				if (!err)
					err = da_writeback_run(fs, ip, idx, &next);
			} else {
				err = writepage(fs, to_page(e));
			}
			if (err) {
				untag_pages(pc, m, idx);
				return err;
			}
		}
		idx = next;
	}
	return 0;
}

int pcache_shift(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		 uint64_t wb_fb)
{
	int err;

	if (!fs->pc)
		return 0;
	err = writeback_map(fs, pcache_inode_map(fs, ip), wb_fb);
	return err ? err : pcache_truncate_range(fs, pcache_inode_map(fs, ip),
						 fb, UINT64_MAX);
}

int pcache_writeback(struct ref_fs *fs, struct ref_inode *ip)
{
	if (!fs->pc)
		return 0;
	pcache_sync_knob(fs);
	if (ip)
		return writeback_map(fs, pcache_inode_map(fs, ip), 0);
	for (size_t i = 0; i < fs->pc->nmaps; i++) {
		int err = writeback_map(fs, &fs->pc->maps[i], 0);

		if (err)
			return err;
	}
	return 0;
}

static int writeback_call(struct ref_fs *fs, uint64_t ino)
{
	struct ref_inode *ip = NULL;
	int err = ino ? inode_get(fs, ino, &ip) : 0;

	return err ? err : pcache_writeback(fs, ip);
}

int ref_writeback(struct ref_fs *fs, uint64_t ino)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, writeback_call(fs, ino));
}

static int drop_caches_call(struct ref_fs *fs)
{
	struct pc_link *l;

	if (!fs->pc)
		return 0;
	pcache_sync_knob(fs);
	/* oldest first, as reclaim would; dirty pages stay */
	for (l = fs->pc->lru.prev; l != &fs->pc->lru;) {
		struct pc_page *p = container_of(l, struct pc_page, lru);

		l = l->prev;
		if (!pc_page_mark(p, PC_DIRTY) && !pc_page_mark(p, PC_WRITEBACK))
			pc_evict(fs->pc, p);
	}
	return 0;
}

int ref_drop_caches(struct ref_fs *fs)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, drop_caches_call(fs));
}

/* The engine's view: entries only inside EOF, zeros past EOF in the EOF
 * page, dirty pages only over written blocks, no marks left mid-flight. */
static int audit_file(struct ref_fs *fs, struct ref_inode *ip,
		      uint64_t counted[2])
{
	struct pcache *pc = fs->pc;
	struct pc_map *m = pcache_inode_map(fs, ip);
	uint64_t last, eof = fs_blocks_roundup(fs, ip->size), idx;
	uintptr_t e;

	if (!pc_last_index(m, &last))
		return 0;
	if (ip->type == ITYPE_FREE)
		BAD(pc, "inode %llu is free but has %llu pages, %llu shadows "
		    "cached", (unsigned long long)ip->ino,
		    (unsigned long long)m->nrpages,
		    (unsigned long long)m->nrshadows);
	if (last >= eof)
		BAD(pc, "inode %llu: %s at index %llu, past EOF (size %llu)",
		    (unsigned long long)ip->ino,
		    pc_is_value(pc_load(pc, m, last)) ? "shadow" : "page",
		    (unsigned long long)last, (unsigned long long)ip->size);
	e = pc_load(pc, m, eof - 1);
	if (pc_is_page(e) && (ip->size & (fs->bs - 1)) && !pc->nodata) {
		uint32_t bo = (uint32_t)(ip->size & (fs->bs - 1));
		uint32_t k = bo + (uint32_t)bytes_first_nonzero(
			to_page(e)->data + bo, fs->bs - bo);

		if (k < fs->bs)
			BAD(pc, "inode %llu: cached byte %llu past EOF is %#x",
			    (unsigned long long)ip->ino,
			    (unsigned long long)(ip->size - bo + k),
			    to_page(e)->data[k]);
	}
	for (unsigned k = PC_WRITEBACK; k < PC_NMARKS; k++)
		for (idx = 0; pc_find_marked(pc, m, &idx, k); idx++)
			if (pc_is_page(pc_load(pc, m, idx)))
				BAD(pc, "inode %llu: page %llu still marked %s",
				    (unsigned long long)ip->ino,
				    (unsigned long long)idx,
				    k == PC_WRITEBACK ? "writeback" : "towrite");
	for (idx = 0; pc_find_marked(pc, m, &idx, PC_DIRTY); idx++) {
		struct ref_extent x;
		uintptr_t ent = pc_load(pc, m, idx);
		int err = bmap_lookup(fs, ip, idx, &x);

		if (err)
			return err;
		if (pc_is_page(ent) && to_page(ent)->delalloc) {
			if (x.state != BMAP_HOLE)
				BAD(pc, "inode %llu: delalloc page %llu over a "
				    "mapped block", (unsigned long long)ip->ino,
				    (unsigned long long)idx);
			if (to_page(ent)->delalloc != 1u + inode_is_rt(ip))
				BAD(pc, "inode %llu: delalloc page %llu reserved "
				    "on the wrong device",
				    (unsigned long long)ip->ino,
				    (unsigned long long)idx);
			counted[to_page(ent)->delalloc - 1]++;
			continue;
		}
		if (!pc_is_page(ent) || x.state != 0)
			BAD(pc, "inode %llu: dirty %s at %llu over a block that "
			    "is not written", (unsigned long long)ip->ino,
			    pc_is_page(ent) ? "page" : "entry",
			    (unsigned long long)idx);
	}
	return 0;
}

int pcache_audit(struct ref_fs *fs)
{
	uint64_t counted[2] = { 0, 0 };
	int err;

	if (!fs->pc)
		return 0;
	err = pc_audit(fs->pc);
	for (uint32_t i = 0; i < fs->ninodes && !err; i++)
		err = audit_file(fs, &fs->inodes[i], counted);
	/* reservations balance: one per delalloc page, on its device */
	for (int d = 0; d < 2 && !err; d++)
		if (counted[d] != fs->pc->ndelalloc[d]) {
			snprintf(fs->pc->why, sizeof(fs->pc->why),
				 "%llu delalloc pages on the %s device, %llu "
				 "blocks reserved", (unsigned long long)counted[d],
				 d ? "realtime" : "data",
				 (unsigned long long)fs->pc->ndelalloc[d]);
			err = -EFSCORRUPTED;
		}
	if (err == -EFSCORRUPTED && fs->pc->why[0])
		ref_report(fs, "page cache: %s", fs->pc->why);
	return err;
}
