/*
 * pcache.h - the page cache: a per-file radix index (pcache_index.c) of
 * 64-way nodes (by default: the fan-out is a run-time parameter,
 * pc_set_fanout) holding pages and shadow entries, with marks; one global
 * LRU of pages, and the hooks file.c, truncate.c and mount.c call
 * (pcache.c); seed path (b), the truncate twins (pcache_truncate.c).
 *
 * The index is usable on its own (tests/test_pcache.c, props/suite_pcache.c
 * drive it without a filesystem): pc_new() gives a cache of `capacity`
 * pages of `bs` bytes over `nmaps` indexes (map ids 1..nmaps).
 *
 * Entries are tagged words:
 *
 *   0            empty
 *   ...1         value entry (a shadow): the eviction clock, shifted up
 *   ..10         internal node
 *   ..00         page (struct pc_page *)
 *
 * Only leaves (shift 0) hold pages and values; internal nodes hold nodes.
 * A node's count and nr_values count its non-empty and value slots; an
 * internal node's mark bit for a slot is set iff that child holds the
 * mark anywhere.  The tree is canonical between operations: no empty
 * node, and a root with shift > 0 has a slot other than 0 in use.
 */
#ifndef FSORACLE_REF_PCACHE_H
#define FSORACLE_REF_PCACHE_H

#include "ref/ref_internal.h"

/* The fan-out: a node has 1 << shift slots, shift 1..PC_SHIFT; PC_SHIFT
 * is the default and the largest (slots[] and the 64-bit marks hold it).
 * Slots at and past a smaller fan-out stay empty. */
#define PC_SHIFT 6
#define PC_SLOTS (1u << PC_SHIFT)
#define PC_BATCH 31            /* entries per lock round (folio batch) */
#define PC_DEFAULT_PAGES 1024  /* pagecache= default                   */
#define PC_SPARE_MAX 32        /* evicted pages kept for the next ones  */

enum pc_mark { PC_DIRTY, PC_WRITEBACK, PC_TOWRITE, PC_NMARKS };

struct pc_link { struct pc_link *prev, *next; };

struct pc_map;
struct pc_node;

struct pc_page {
	struct pc_link lru;        /* first: the LRU links             */
	struct pc_map *map;
	struct pc_node *leaf;      /* stable while the page is indexed */
	uint64_t index;
	/* delalloc (delalloc.c): dirty over a hole, space reserved on the
	 * data (1) or realtime (2) device; never evicted */
	uint8_t delalloc;
	/*
	 * The page's bytes: own, or zeros_block()'s (base/zeros.h) while
	 * the page holds what a hole reads and nothing has written it, as
	 * a page of anonymous memory maps the kernel's zero page until its
	 * first write.  Whatever writes a page's bytes takes it with
	 * pc_page_bytes() first.  NULL with pcache.nodata.
	 */
	uint8_t *data;
	uint8_t own[];             /* none with pcache.nodata          */
};

struct pc_node {
	struct pc_link shadow;     /* on the shadow-node list          */
	struct pc_node *parent;
	struct pc_map *map;
	uint64_t base;             /* index of slot 0's first entry    */
	uint64_t marks[PC_NMARKS];
	uint64_t used;             /* bit i: slots[i] is not 0         */
	uint8_t shift, offset, count, nr_values;
	bool on_shadow_list;
	uintptr_t slots[PC_SLOTS];
};

struct pc_map {
	struct pc_node *root;
	uint64_t id;
	uint64_t nrpages, nrshadows;
	struct pc_node *hint;        /* the leaf the last page lookup reached
					(pci_walk_hinted); NULL once freed  */
};

struct pcache {
	uint32_t bs;
	uint8_t fshift;              /* fan-out: 1 << fshift slots a node  */
	uint64_t capacity, npages, nnodes;
	uint64_t clock;              /* evictions so far: shadows' stamp   */
	struct pc_link lru;          /* next: most recently used           */
	struct pc_link shadow_nodes; /* next: oldest shadow-only leaf      */
	uint64_t nshadow_nodes, shadow_node_max;
	uint64_t nr_marked_values;   /* value entries carrying a mark      */
	bool mark_values;            /* fallback knob: evictions leave the
					towrite mark on the shadow        */
	bool nodata;                 /* pages keep no bytes (nopagedata)   */
	struct pc_page *spare[PC_SPARE_MAX]; /* pages out of the cache,
						for reuse (pc_page_release) */
	unsigned nspare;
	uint64_t ndelalloc[2];       /* delalloc pages: data, rt device    */
	struct pc_page *look;        /* a view's block not in the cache
					(pcache_view): never indexed      */
	struct ref_counters *ctr;
	struct pc_map *maps;
	size_t nmaps;
	/* write a dirty page before it is evicted (NULL: none may be) */
	int (*writepage)(void *arg, struct pc_page *p);
	void *wp_arg;
	char why[160];               /* the audit's first finding          */
};

/* ---- the index ---- */

static inline bool pc_is_value(uintptr_t e) { return e & 1; }
static inline bool pc_is_node(uintptr_t e) { return (e & 3) == 2; }
static inline bool pc_is_page(uintptr_t e) { return e && !(e & 3); }
static inline uintptr_t pc_mk_value(uint64_t v) { return (uintptr_t)(v << 1) | 1; }
static inline uint64_t pc_value(uintptr_t e) { return (uint64_t)e >> 1; }
static inline struct pc_node *pc_node_of(uintptr_t e)
{
	return (struct pc_node *)(e - 2);
}

/* A page out of the index, to the spares (no delalloc accounting). */
void pc_page_release(struct pcache *pc, struct pc_page *p);
int  pc_new(uint32_t bs, uint64_t capacity, size_t nmaps,
	    struct ref_counters *ctr, struct pcache **out);
void pc_free(struct pcache *pc);
/* Nodes of 1 << shift slots (1..PC_SHIFT) from now on: -EINVAL outside
 * that range, -EBUSY once any index holds an entry. */
int  pc_set_fanout(struct pcache *pc, unsigned shift);
struct pc_map *pc_map_of(struct pcache *pc, uint64_t id);

uintptr_t pc_load(struct pcache *pc, struct pc_map *m, uint64_t index);
/* Store e (0 erases) at index, re-initialising the slot's marks. */
int  pc_store(struct pcache *pc, struct pc_map *m, uint64_t index,
	      uintptr_t e);
bool pc_get_mark(struct pcache *pc, struct pc_map *m, uint64_t index,
		 unsigned mark);
/* Set or clear a mark on a present entry (-ENOENT if none). */
int  pc_set_mark(struct pcache *pc, struct pc_map *m, uint64_t index,
		 unsigned mark);
int  pc_clear_mark(struct pcache *pc, struct pc_map *m, uint64_t index,
		   unsigned mark);
/* First index >= *index holding mark (a page or not); false: none. */
bool pc_find_marked(struct pcache *pc, struct pc_map *m, uint64_t *index,
		    unsigned mark);
/* Height of the tree (0: empty). */
unsigned pc_height(const struct pc_map *m);

/* ---- pages ---- */

/* The page at index (NULL: none), the LRU left as it is. */
struct pc_page *pc_peek_page(struct pcache *pc, struct pc_map *m,
			     uint64_t index);
/* The page is no longer delalloc (written, or its block mapped). */
void pc_page_undelalloc(struct pcache *pc, struct pc_page *p);
/* The page at index (NULL: none), moved to the LRU's head. */
struct pc_page *pc_find_page(struct pcache *pc, struct pc_map *m,
			     uint64_t index);
/*
 * A new page at index (none must be there): evicts the least recently
 * used page first when full (writing it if dirty), counts a refault when
 * a shadow held the slot.  Its data is its own, left for the caller to
 * fill (or pointed at the zero block, for a hole).
 */
int  pc_add_page(struct pcache *pc, struct pc_map *m, uint64_t index,
		 struct pc_page **out);
/* Evict a clean page: it leaves a shadow entry. */
void pc_evict(struct pcache *pc, struct pc_page *p);
/* Remove a page leaving nothing (a failed fill). */
void pc_remove_page(struct pcache *pc, struct pc_page *p);
/*
 * The page's bytes, to be written: its own, zeroed first when it held
 * the zero block's, unless the caller writes the whole page (whole)
 * (pcache.nodata: NULL).
 */
uint8_t *pc_page_bytes(struct pcache *pc, struct pc_page *p, bool whole);
bool pc_page_mark(const struct pc_page *p, unsigned mark);
void pc_page_set_mark(struct pcache *pc, struct pc_page *p, unsigned mark);
void pc_page_clear_mark(struct pcache *pc, struct pc_page *p, unsigned mark);

/*
 * Seed path (b) (pcache_truncate.c): remove every page and shadow entry
 * in [start, end).  Naive: per entry, a walk from the root, one lock
 * round, a store of NULL that re-initialises all three marks.  Batched:
 * one cursor in index order, PC_BATCH entries per lock round, the known
 * entry replaced with no reload and no mark re-initialisation, nodes
 * freed as they empty; a value entry that carries a mark (only the
 * fallback knob makes one) sends that entry to the slow clear.  The two
 * twins have one signature, pc_truncate_fn.
 */
typedef int pc_truncate_fn(struct pcache *pc, struct pc_map *m,
			   uint64_t start, uint64_t end);
int  pc_truncate_naive(struct pcache *pc, struct pc_map *m, uint64_t start,
		       uint64_t end);
int  pc_truncate_batched(struct pcache *pc, struct pc_map *m, uint64_t start,
			 uint64_t end);

/* Recount everything from scratch: 0, or -EFSCORRUPTED with pc->why. */
int  pc_audit(struct pcache *pc);
/* Last index in use in m, or false when m is empty. */
bool pc_last_index(const struct pc_map *m, uint64_t *index);

/* ---- the engine's hooks ---- */

int  pcache_mount(struct ref_fs *fs, uint32_t pages, unsigned shift);
void pcache_unmount(struct ref_fs *fs);
int64_t pcache_read(struct ref_fs *fs, struct ref_inode *ip, uint8_t *out,
		    uint64_t off, uint64_t end);
/*
 * pcache_read's bytes handed to fn instead of copied, and the cache left
 * as it was (ref_pview): a block in the cache is seen in its page, which
 * stays where it is on the LRU; any other is seen where the device holds
 * it (fdata_view) or read into a page of its own that never enters the
 * cache.  Of the page cache's counters only the walk's node visits count
 * it (and data_bytes_read the blocks it takes from the device).
 */
int64_t pcache_view(struct ref_fs *fs, struct ref_inode *ip, ref_view_fn fn,
		    void *arg, uint64_t off, uint64_t end);
/*
 * [pos, end) of the file now holds src.  dirty: an overwrite of written
 * blocks, made only in the cache (pages added, read first when partly
 * covered, and marked dirty).  Else the device has it already: pages
 * that are cached take the bytes.
 */
int  pcache_write(struct ref_fs *fs, struct ref_inode *ip, uint64_t pos,
		  uint64_t end, const uint8_t *src, bool dirty);
/* [pos, end) of a hole of ip now holds src, in delalloc pages only. */
int  pcache_delalloc(struct ref_fs *fs, struct ref_inode *ip, uint64_t pos,
		     uint64_t end, const uint8_t *src);
void pcache_zero(struct ref_fs *fs, struct ref_inode *ip, uint64_t from,
		 uint64_t to);
/* Drop pages and shadows from block from_fb on and past EOF. */
int  pcache_truncate(struct ref_fs *fs, struct ref_inode *ip,
		     uint64_t from_fb);
/* Drop pages and shadows of blocks [fb0, fb1), dirty or not. */
int  pcache_discard(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb0,
		    uint64_t fb1);
/* Before extents move (collapse, insert): write dirty pages from block
 * wb_fb on, then drop everything from block fb on. */
int  pcache_shift(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		  uint64_t wb_fb);
int  pcache_writeback(struct ref_fs *fs, struct ref_inode *ip);

/* Does an overwrite of a written block of ip only dirty its page?  Not
 * when the data goes through the journal or is appended (zoned). */
static inline bool pcache_dirties(const struct ref_fs *fs,
				  const struct ref_inode *ip)
{
	return fs->pc && !inode_journals_data(fs, ip) && !file_zoned(fs, ip);
}
int  pcache_audit(struct ref_fs *fs);

#endif
