/*
 * pcache_internal.h - what the page cache's three files share: the index
 * (pcache_index.c), the cache around it (pcache.c: LRU, shadows, audit,
 * the engine's hooks) and seed path (b)'s truncate twins
 * (pcache_truncate.c).  Only ref/pcache*.c include it.
 */
#ifndef FSORACLE_REF_PCACHE_INTERNAL_H
#define FSORACLE_REF_PCACHE_INTERNAL_H

#include <stddef.h>

#include "ref/pcache.h"

/* The fan-out of pc's nodes: slots and the mask of a slot's index bits. */
#define FSLOTS(pc) (1u << (pc)->fshift)
#define FMASK(pc)  (FSLOTS(pc) - 1u)
#define container_of(p, type, member) \
	((type *)(void *)((char *)(p) - offsetof(type, member)))

static inline uintptr_t mk_node(struct pc_node *n)
{
	return (uintptr_t)n + 2;
}

static inline struct pc_page *to_page(uintptr_t e)
{
	return (struct pc_page *)e;
}

static inline void link_init(struct pc_link *l) { l->prev = l->next = l; }

static inline void link_del(struct pc_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = l;
}

/* Insert l after head. */
static inline void link_add(struct pc_link *head, struct pc_link *l)
{
	l->next = head->next;
	l->prev = head;
	head->next->prev = l;
	head->next = l;
}

/* ---- the index's inner calls (pcache_index.c) ---- */

/* The first slot of n at or after from that holds an entry (its used
 * word), or fan when none below fan does. */
static inline unsigned pci_next_used(const struct pc_node *n, unsigned from,
				     unsigned fan)
{
	uint64_t w = from >= 64 ? 0 : n->used & (~0ull << from);
	unsigned b = w ? (unsigned)__builtin_ctzll(w) : 64;

	return b < fan ? b : fan;
}

/* The leaf of index, creating the path when create (else *leaf NULL). */
int  pci_walk(struct pcache *pc, struct pc_map *m, uint64_t index,
	      bool create, struct pc_node **leaf);
/* The same for page lookups: the leaf of the map's last one, when it
 * holds index, without a walk (one node entered); else pci_walk. */
int  pci_walk_hinted(struct pcache *pc, struct pc_map *m, uint64_t index,
		     bool create, struct pc_node **leaf);
/* Put e in slot off of leaf n: counts, the map's totals, the shadow-node
 * list; init re-initialises the slot's marks.  The caller frees a node
 * this empties. */
void pci_leaf_set(struct pcache *pc, struct pc_node *n, unsigned off,
		  uintptr_t e, bool init);
/* Set mark on slot off of n and on every ancestor's path to it. */
void pci_mark_set(struct pc_node *n, unsigned off, unsigned mark);
/* One mark-bit clear: the slot's bit, and upward while nodes go unmarked. */
void pci_mark_clear(struct pcache *pc, struct pc_node *n, unsigned off,
		    unsigned mark);
/* Any mark on slot off of n. */
bool pci_slot_marked(const struct pc_node *n, unsigned off);
/* Free n and every ancestor it leaves empty; the nearest survivor. */
struct pc_node *pci_delete_empty(struct pcache *pc, struct pc_map *m,
				 struct pc_node *n);
/* Make the tree canonical: a root using only slot 0 gives way to it. */
void pci_shrink(struct pcache *pc, struct pc_map *m);
/* n on the shadow-node list iff it is a leaf holding only shadows. */
void pci_shadow_update(struct pcache *pc, struct pc_node *n);
/* The first leaf slot at or after idx holding an entry (mark < 0) or
 * carrying mark; false: none. */
bool pci_find_first(struct pcache *pc, struct pc_map *m, uint64_t idx,
		    int mark, struct pc_node **leaf, unsigned *slot);

/* ---- the cache's inner calls (pcache.c) ---- */

/* Free a page leaving the index: its delalloc reservation goes too. */
void pc_page_free(struct pcache *pc, struct pc_page *p);
/* The index of file ip. */
struct pc_map *pcache_inode_map(struct ref_fs *fs,
				const struct ref_inode *ip);

/* ---- seed path (b) (pcache_truncate.c) ---- */

/* The fallback trigger: the knob follows the mount's switch. */
void pcache_sync_knob(struct ref_fs *fs);
/* The dispatcher: [start, end) of m cleared by the twin the switch picks. */
int  pcache_truncate_range(struct ref_fs *fs, struct pc_map *m,
			   uint64_t start, uint64_t end);

#endif
