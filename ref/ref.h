/*
 * ref.h - the public interface of the fsoracle reference engine.
 *
 * A small journaling filesystem over hw/ devices, written to be read: an
 * on-disk format with a checksummed superblock, an inode table, per-inode
 * extent maps in on-disk B+trees, a free-space bitmap allocator and a
 * write-ahead metadata journal recovered at mount, and an optional
 * realtime device for files flagged realtime (zoned or not), a page cache
 * with shadow entries, data journaling modes with revoke records, and
 * reflink with a refcount tree and a COW fork, and delayed allocation
 * with compressed writeback.  All five seed paths have a naive twin and
 * an optimized version here, switchable per mount and at run time (enum
 * ref_path).
 *
 * Files live in one flat namespace and are addressed by inode number once
 * created or looked up.  Every call returns 0 (or a byte count) or a
 * negative errno; -EFSCORRUPTED means the image is damaged and says where
 * through the message callback.  Nothing here aborts on bad on-disk data.
 */
#ifndef FSORACLE_REF_H
#define FSORACLE_REF_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/hw.h"
#include "ref/btree.h"

#ifndef EFSCORRUPTED
#define EFSCORRUPTED EUCLEAN
#endif

#define REF_NAME_MAX 63          /* bytes in a file name, excluding NUL */

/* The fsoracle release: `fsoracle --version` and every report say it. */
#define FSORACLE_VERSION "0.9.0"

struct ref_fs;

/*
 * The smallest block size on persistent memory.  The superblock and the
 * journal header are rewritten in place, and pmem promises 8-byte atomic
 * stores only: the engine first persists a copy of the header sector in
 * the block's second sector, so that a torn rewrite leaves one of the
 * two whole (devio.c).  A 512-byte block has no second sector, so a cut
 * in the middle of its rewrite would leave no valid superblock.
 */
#define REF_PMEM_MIN_BLOCKSIZE 1024

/* mkfs geometry; zero in any field means "default". */
struct ref_mkfs_opts {
	uint32_t blocksize;      /* 512..65536, power of two; default 4096;
				    at least REF_PMEM_MIN_BLOCKSIZE where a
				    cut tears sectors (pmem, a device of a
				    smaller atomic unit)                    */
	uint32_t btree_maxrecs;  /* records per B+tree node; 0 = fill block  */
	uint32_t inodes;         /* inode table size; default 1024           */
	uint32_t journal_blocks; /* log size; default max(64, size/64) <=8192 */
	uint32_t max_extlen;     /* longest extent record, blocks; 2^21-1    */
	/*
	 * The realtime device (NULL = none): it holds only the data of files
	 * flagged REF_FLAG_REALTIME, allocated in whole rt extents of
	 * rtextsize bytes (a multiple of the block size, at most maxext
	 * blocks; default one block).  Its free space is a bitmap on the
	 * data device; nothing is written to it at mkfs.
	 */
	struct hw_dev *rtdev;
	uint32_t rtextsize;      /* bytes; 0 = one block                     */
	/*
	 * 1: blocks may be shared between files (clone, dedupe, copy on
	 * write): a refcount B+tree and a tree of COW staging extents, their
	 * roots in the superblock.  Not with a realtime device.
	 */
	uint32_t reflink;
};

/*
 * The five seed paths (shared/SEED-PATHS.md), each with a naive twin and an
 * optimized version, switchable per mount and at run time.  A path's bit
 * in `naive` selects its naive twin; its bit in `fallback` forces the
 * optimized version's fallback (the fault knob: "the split cannot reserve
 * its blocks", "the remap is longer than one transaction", ...), so the
 * fallback is as reachable as the fast path.  Default: all optimized.
 */
enum ref_path {
	REF_PATH_RT_TRUNCATE,        /* (a) realtime truncate-down           */
	REF_PATH_PAGECACHE_TRUNCATE, /* (b) page-cache shadow truncate       */
	REF_PATH_COW_END,            /* (c) end-COW remap                    */
	REF_PATH_FORGET,             /* (d) journal forget at free           */
	REF_PATH_DELALLOC_CAP,       /* (e) delalloc cap on zoned devices    */
	REF_PATH_COUNT
};
#define REF_PATHS_ALL ((1u << REF_PATH_COUNT) - 1)
/* "rt_truncate", "pagecache_truncate", "cow_end", "forget", "delalloc_cap" */
const char *ref_path_name(unsigned path);
/*
 * Parse a path list: "all", "none", or names joined by ',' or '+'
 * ("rt_truncate+forget").  -EINVAL with a line in err for an unknown name.
 */
int ref_parse_paths(const char *s, uint32_t *mask, char *err, size_t errlen);
/* Format mask as a '+'-joined list ("none" / "all" when so). */
void ref_format_paths(uint32_t mask, char *buf, size_t len);

/*
 * Journal data modes (mount option data=), as ext4 has them:
 *   ordered    file data reaches the device before the commit that maps
 *              it (the default): a committed mapping never exposes old
 *              bytes;
 *   journal    file data goes through the journal like metadata: logged
 *              at commit, written home at checkpoint, replayed at mount
 *              (realtime files excepted: their data is always ordered);
 *   writeback  commits do not wait for file data: after a crash a
 *              committed mapping may expose what its blocks held before
 *              (zeroes, or a freed file's bytes) where the new data had
 *              not reached the device (but on a zoned realtime device,
 *              whose write pointers mount trusts: commits flush it; and
 *              a commit that maps a compressed frame flushes first, as
 *              old bytes there would not decode).
 *              Metadata is as consistent as in the other modes, and
 *              fsync/fdatasync/sync still make the file's data durable
 *              before they return.
 * A file flagged REF_FLAG_JOURNAL_DATA journals its data in any mode.
 */
enum ref_data_mode {
	REF_DATA_ORDERED = 0,
	REF_DATA_JOURNAL,
	REF_DATA_WRITEBACK,
	REF_DATA_MODES
};
/* "ordered", "journal", "writeback" */
const char *ref_data_mode_name(unsigned mode);

#define REF_MOUNT_RDONLY      (1u << 0) /* never write the device          */
#define REF_MOUNT_NORECOVERY  (1u << 1) /* fail instead of replaying a log */
/*
 * Delayed allocation (seed path (e)): a buffered write into a hole of a
 * file whose allocation unit is one block (plain files, and realtime
 * files when rtextsize is the block size), that neither journals its data
 * nor always copies on write, only reserves space and dirties page-cache
 * pages; writeback (fsync, sync, writeback, unmount, dirty pages over
 * the limit) finds each run of such pages, allocates and writes it.  Needs
 * the page cache.  A crash loses what was not written back, as it loses
 * any dirty page.
 */
#define REF_MOUNT_DELALLOC    (1u << 2)
/*
 * Page-cache pages keep no bytes: reads of cached pages give zeroes and
 * writes only count.  For measuring work at sizes this machine cannot
 * hold, on null: devices that keep no data either; never for a file
 * system whose contents matter.
 */
#define REF_MOUNT_NOPAGEDATA  (1u << 3)
#define REF_PAGECACHE_OFF     UINT32_MAX  /* ref_mount_opts.pagecache       */
#define REF_WORKERS_MAX       64          /* ref_mount_opts.workers         */

enum ref_compress { REF_COMPRESS_NONE = 0, REF_COMPRESS_ZSTD };

struct ref_mount_opts {
	uint32_t flags;           /* REF_MOUNT_*                              */
	uint32_t cache_blocks;    /* clean metadata buffers kept; 0 = 4096    */
	uint32_t naive;           /* REF_PATH_* bits taking the naive twin    */
	uint32_t fallback;        /* REF_PATH_* bits forced to fall back      */
	uint32_t data_mode;       /* enum ref_data_mode; 0 = ordered          */
	/* Page-cache capacity in pages: 0 = default (1024), REF_PAGECACHE_OFF
	 * = none (every read and write goes to the device). */
	uint32_t pagecache;
	/* Page-cache fan-out: radix nodes of 1 << N slots, N 1..6; 0 = 6
	 * (64-way).  A tiny fan-out grows deep trees from a few pages. */
	uint32_t pagecache_shift;
	/*
	 * Compression at writeback (implies REF_MOUNT_DELALLOC): every
	 * delalloc run is cut into async chunks of 512 KiB, each compressed
	 * into extents of at most 128 KiB of input; a piece that does not
	 * shrink by a block is written uncompressed.  Files flagged
	 * REF_FLAG_COMPRESS are compressed whatever this says.  Not on a
	 * reflink filesystem.  compress_level 0 = the library's default.
	 */
	uint32_t compress;        /* enum ref_compress                        */
	int32_t compress_level;
	/*
	 * Compression workers: 0 = every chunk compressed in line, one at a
	 * time (deterministic replay, the fuzzers); N > 0 = the chunks of up
	 * to 2N at a time handed to N worker threads (hw_workers_*), their
	 * results submitted in order on the calling thread.  The image, the
	 * bytes and every counter are the same either way.
	 */
	uint32_t workers;
	/* The realtime device the filesystem was made with (NULL = none).
	 * Mount fails if it is missing, unexpected or of another size. */
	struct hw_dev *rtdev;
	/* message sink for corruption reports (may be NULL) */
	void (*msg)(void *arg, const char *line);
	void *msg_arg;
};

int ref_mkfs(struct hw_dev *dev, const struct ref_mkfs_opts *opts);
int ref_mount(struct hw_dev *dev, const struct ref_mount_opts *opts,
	      struct ref_fs **out);
/* Commit, checkpoint, mark the image clean, free the handle. */
int ref_unmount(struct ref_fs *fs);
/* Free the handle writing nothing more: a power cut as the engine sees it. */
void ref_abandon(struct ref_fs *fs);
/*
 * Shutdown.  A metadata read that fails, metadata found damaged, or a
 * commit that fails (a log write or flush, or the checkpoint after it),
 * in a call that may change the filesystem, can leave an update half
 * made: the engine has no undo for what the call changed before.  So it
 * shuts down, as XFS does when it cancels a dirty transaction or its log
 * cannot be written: that call fails
 * (-EIO when it would have said success), every later call fails with
 * -EIO (ref_audit too, saying why), and ref_unmount writes nothing and
 * returns -EIO.  The image holds the last commit, which the next mount
 * recovers from the log.  Data I/O errors (a page's writeback, a read of
 * file data) do not shut down: the calls that meet them undo their own
 * steps and the filesystem goes on.  A read-only mount never shuts down.
 * ref_shutdown_error is 0, or the error that shut the filesystem down.
 */
int ref_shutdown_error(const struct ref_fs *fs);
/* Change the path switches of a mounted filesystem (the op language's
 * "naive" and "fallback" ops); takes effect at the next operation. */
void ref_set_paths(struct ref_fs *fs, uint32_t naive, uint32_t fallback);
void ref_get_paths(const struct ref_fs *fs, uint32_t *naive,
		   uint32_t *fallback);

/* Namespace. */
int ref_create(struct ref_fs *fs, const char *name, uint64_t *ino);
int ref_lookup(struct ref_fs *fs, const char *name, uint64_t *ino);
int ref_unlink(struct ref_fs *fs, const char *name);
/* rename(2) without flags: a file already called `to` is replaced, in the
 * same transaction that moves the name. */
int ref_rename(struct ref_fs *fs, const char *from, const char *to);
typedef int (*ref_dirent_fn)(void *arg, const char *name, uint64_t ino);
int ref_readdir(struct ref_fs *fs, ref_dirent_fn fn, void *arg);

/* Data.  Byte-granular; reads of holes, unwritten extents, past EOF: 0s. */
int64_t ref_pwrite(struct ref_fs *fs, uint64_t ino, const void *buf,
		   uint64_t len, uint64_t off);
int64_t ref_pread(struct ref_fs *fs, uint64_t ino, void *buf, uint64_t len,
		  uint64_t off);
/*
 * ref_pread without the copy and without a trace in the page cache, for
 * a caller that only looks at the bytes (a checker comparing them): each
 * page's bytes are handed to fn (p: valid during the call only; NULL:
 * zeros) in file order, those of a block in the cache from its page,
 * which keeps its place on the LRU, any other's where the device holds
 * it (hw_view) or read from the device into a page that never enters the
 * cache.  No page is read in, evicted or moved, so the page cache holds
 * next what it would have held unlooked at (the metadata the lookups read
 * enters the metadata cache as for any read); the device sees the reads
 * of the blocks not in the cache.  Returns what ref_pread would, fn
 * having seen that many bytes.  -EOPNOTSUPP on a mount without a page
 * cache, whose reads go to the device directly (read instead).
 */
typedef void (*ref_view_fn)(void *arg, uint64_t off, const uint8_t *p,
			    size_t n);
int64_t ref_pview(struct ref_fs *fs, uint64_t ino, uint64_t len, uint64_t off,
		  ref_view_fn fn, void *arg);
int ref_truncate(struct ref_fs *fs, uint64_t ino, uint64_t size);

#define REF_FALLOC_KEEP_SIZE  (1u << 0)
#define REF_FALLOC_PUNCH_HOLE (1u << 1) /* requires KEEP_SIZE, as Linux   */
#define REF_FALLOC_ZERO_RANGE (1u << 2)
#define REF_FALLOC_COLLAPSE_RANGE (1u << 3) /* remove [off, off+len), shift down */
#define REF_FALLOC_INSERT_RANGE   (1u << 4) /* open a hole at off, shift up      */
/*
 * Collapse and insert take block-aligned off and len, as Linux does
 * (rt-extent-aligned for a realtime file, as XFS); a collapse must end
 * before EOF and an insert start before it (-EINVAL).
 * They shift extents in several transactions, so a cut in the middle
 * leaves a consistent but half-shifted file, as on XFS.
 */
int ref_fallocate(struct ref_fs *fs, uint64_t ino, unsigned mode,
		  uint64_t off, uint64_t len);

/*
 * copy_file_range: copy [soff, soff+len) of src to doff of dst, by reading
 * and writing (no sharing).  Shortened at the source's EOF; ranges that
 * overlap in one file are -EINVAL.  Returns the bytes copied.
 */
int64_t ref_copy_range(struct ref_fs *fs, uint64_t dst, uint64_t doff,
		       uint64_t src, uint64_t soff, uint64_t len);

#define REF_MAX_BYTES ((uint64_t)1 << 43)  /* largest file size: 8 TiB */

/*
 * Shared blocks (a filesystem made with reflink; else -EOPNOTSUPP, and
 * for realtime files).  The rules are FICLONERANGE's: block-aligned
 * offsets; len 0 means "to the source's EOF"; a length that is not a
 * multiple of the block size must end at the source's EOF and reach or
 * pass the destination's; ranges inside one file must not overlap
 * (-EINVAL).  Clone maps the source's written blocks into dst (holes and
 * unwritten blocks of the source become holes), growing dst to doff+len
 * when that is past its size; it returns 0.  Dedupe shares the range only
 * if both read the same bytes (both ranges inside their files) and
 * returns the bytes it shared (0: they differ).
 */
int ref_clone_range(struct ref_fs *fs, uint64_t dst, uint64_t doff,
		    uint64_t src, uint64_t soff, uint64_t len);
int64_t ref_dedupe_range(struct ref_fs *fs, uint64_t dst, uint64_t doff,
			 uint64_t src, uint64_t soff, uint64_t len);
/*
 * Exchange range, as XFS's: swap the mappings of [off2, off2+len) of ino2
 * (the donor; xfs_io's `exchangerange -s off2 -d off1 -l len ino2` run on
 * ino1) with [off1, off1+len) of ino1, blocks and holes and unwritten
 * extents as they are, without copying data; no block changes its owner
 * count, so no filesystem needs reflink for it.  Sizes do not change.
 * The rules are xfs_exchange_range_checks' without the to-EOF flag, in
 * the file's allocation unit (the rt extent for a realtime file; both
 * files realtime or neither): both ranges inside their files, both
 * offsets aligned, a length that is not a multiple of the unit only when
 * both ranges end at their files' EOF (the EOF blocks swap whole); no
 * overlap within one file, counted in whole units; all -EINVAL.  len 0
 * swaps nothing.  Atomic across a cut as the user sees it: an intent in
 * the superblock records the progress of the mapping-by-mapping swap
 * (each step in one transaction), and mount finishes what it records.
 */
int ref_exchange_range(struct ref_fs *fs, uint64_t ino1, uint64_t off1,
		       uint64_t ino2, uint64_t off2, uint64_t len);
/* The refcount tree's records in block order: blocks [start, start+len)
 * have count (>= 2) owners.  -EOPNOTSUPP without reflink. */
typedef int (*ref_refcount_fn)(void *arg, uint64_t start, uint64_t len,
			       uint32_t count);
int ref_refcount_walk(struct ref_fs *fs, ref_refcount_fn fn, void *arg);

int ref_fsync(struct ref_fs *fs, uint64_t ino);
int ref_fdatasync(struct ref_fs *fs, uint64_t ino);
int ref_sync(struct ref_fs *fs);

/*
 * The page cache.  Reads fill it; overwrites of written blocks of files
 * that do not journal their data only dirty it (fsync, sync, unmount and
 * eviction write them; a crash loses them).  ref_writeback writes the
 * dirty pages of ino (0: of every file) without committing anything;
 * ref_drop_caches evicts every clean page, leaving shadow entries.  Both
 * are no-ops without a page cache.
 */
int ref_writeback(struct ref_fs *fs, uint64_t ino);
int ref_drop_caches(struct ref_fs *fs);

/*
 * Inode flags a user may change.  A realtime file keeps its data on the
 * realtime device, in whole rt extents: every rt extent it touches is
 * mapped block for block (untouched blocks unwritten), and only whole rt
 * extents are ever freed.  As XFS requires, the realtime flag changes only
 * on a file without blocks (else -EINVAL), and only on a filesystem with a
 * realtime device; other bits are -EOPNOTSUPP.
 */
#define REF_FLAG_REALTIME (1u << 2)
/*
 * The journal-data flag (chattr +j): the file's data goes through the
 * journal whatever the mount's data mode.  Changing it commits and
 * checkpoints first, as ext4 flushes its journal, so no logged copy of
 * the file's data outlives the mode it was logged in.  Not on a realtime
 * file (-EINVAL either way round).
 */
#define REF_FLAG_JOURNAL_DATA (1u << 3)
/*
 * Always copy on write (needs reflink): every overwrite of a written
 * block goes to fresh staging blocks in the inode's COW fork and is
 * remapped into the data fork when it completes, as writes to shared
 * blocks always are.
 */
#define REF_FLAG_COW (1u << 4)
/*
 * Compress this file's data at writeback (chattr +c), whatever the mount
 * says; its writes are delayed-allocated when the file can be (see
 * REF_MOUNT_DELALLOC).  Not on a reflink filesystem (-EOPNOTSUPP), nor
 * in a build without a compression library.
 */
#define REF_FLAG_COMPRESS (1u << 5)
int ref_set_flags(struct ref_fs *fs, uint64_t ino, uint32_t set,
		  uint32_t clear);

struct ref_stat {
	uint64_t ino;
	uint64_t size;       /* bytes                                      */
	uint64_t blocks;     /* allocated fs blocks (written + unwritten),
				realtime device blocks for a realtime file */
	uint64_t nextents;   /* data-fork extent records                   */
	uint32_t flags;      /* inode flags: REF_FLAG_REALTIME, ...        */
	uint32_t blocksize;
	uint32_t map_levels; /* levels of the extent B+tree (0: no records) */
};
int ref_stat(struct ref_fs *fs, uint64_t ino, struct ref_stat *st);

/*
 * One data-fork mapping, in fs blocks (of the realtime device for a
 * realtime file: see ref_stat's flags).  A compressed extent maps len
 * file blocks onto the REF_EXT_PLEN(state) device blocks from startblk
 * that hold one compressed frame of their bytes; it is always written,
 * never merged with a neighbour, and only ever mapped, moved or freed
 * whole.
 */
#define REF_EXT_UNWRITTEN 1u
#define REF_EXT_COMPRESSED 2u
#define REF_EXT_PLEN_SHIFT 8
#define REF_EXT_PLEN(state) ((state) >> REF_EXT_PLEN_SHIFT)
struct ref_extent {
	uint64_t fileoff;   /* first file block                 */
	uint64_t startblk;  /* first device block               */
	uint64_t len;       /* blocks                           */
	uint32_t state;     /* 0 = written, REF_EXT_UNWRITTEN,
			       REF_EXT_COMPRESSED | plen << 8   */
};
typedef int (*ref_extent_fn)(void *arg, const struct ref_extent *ext);
int ref_bmap(struct ref_fs *fs, uint64_t ino, ref_extent_fn fn, void *arg);
/* The inode's COW fork: staging extents (REF_EXT_UNWRITTEN: allocated,
 * not written), as ref_bmap gives the data fork. */
int ref_cow_bmap(struct ref_fs *fs, uint64_t ino, ref_extent_fn fn, void *arg);
/* Blocks of the inode's data-fork extent B+tree (its node blocks; 0
 * while the records fit in the root), counted by a walk. */
int ref_tree_blocks(struct ref_fs *fs, uint64_t ino, uint64_t *blocks);

/*
 * Filesystem-wide numbers.  The avail counts are what new data may still
 * be given (statfs's f_bavail): free blocks less the delayed allocations
 * already promised, on the data device less the reserve kept for B+tree
 * nodes (data never gets it) and, on a zoned realtime device, less what
 * no zone can take any more (capacity below the zone size, the reclaim
 * reserve); dead space below a write pointer counts, since reclaim wins
 * it back.  meta_avail is what metadata may still be given: the data
 * device's free blocks less the promised ones, the reserve included.  A
 * write that fails with -ENOSPC while it needs well under avail (or a
 * metadata change under meta_avail) is a bug (the harness's checker
 * judges ENOSPC by them).
 */
struct ref_statfs {
	uint32_t blocksize;
	uint64_t total_blocks, free_blocks, data_blocks;
	uint64_t avail_blocks;           /* data device, for data          */
	uint64_t meta_avail_blocks;      /* data device, for metadata (the
					    B+tree reserve is its own)     */
	uint64_t inodes, free_inodes;
	/* the realtime device, all 0 without one */
	uint32_t rtextsize;              /* bytes                          */
	uint64_t rt_blocks, rt_free_blocks; /* whole rt extents, in blocks */
	uint64_t rt_avail_blocks;        /* whole rt extents, in blocks    */
};
int ref_statfs(struct ref_fs *fs, struct ref_statfs *st);
/* True when this build compresses (mount option compress=zstd, chattr
 * +c): not in builds without external libraries. */
int ref_compress_available(void);

/*
 * Work counters: deterministic, per engine instance, reset by
 * ref_counters_reset().  ref_counters_foreach() visits them by name in a
 * stable order (for the CLI and reports).
 */
struct ref_counters {
	struct bt_stats bt;            /* B+tree node visits and record ops */
	uint64_t bytes_zeroed;         /* zeroes written to the device      */
	uint64_t data_bytes_written;   /* file data written to the device   */
	uint64_t data_bytes_read;      /* file data read from the device    */
	uint64_t alloc_calls;
	uint64_t extents_allocated;
	uint64_t blocks_allocated;
	uint64_t blocks_freed;
	uint64_t tx_commits;           /* journal commits                   */
	uint64_t tx_rolls;             /* commits forced inside one op      */
	uint64_t journal_blocks_written;
	uint64_t checkpoints;
	uint64_t bcache_lookups;       /* metadata buffer lookups           */
	uint64_t bcache_misses;        /* ... that read the device          */
	uint64_t meta_blocks_written;  /* in-place metadata writes          */
	uint64_t recovered_txns;       /* transactions replayed at mount    */
	uint64_t rt_extents_allocated; /* realtime device allocations       */
	uint64_t rt_extents_freed;
	/* a zoned realtime device */
	uint64_t zone_appends;         /* zone appends (one per rt alloc)   */
	uint64_t zone_resets;          /* zones reset by mount or reclaim   */
	uint64_t reclaim_moves;        /* rt blocks moved by zone reclaim   */
	uint64_t rt_overwrites_out_of_place; /* mapped rt extents rewritten
					  at the write pointer              */
	uint64_t meta_persists;        /* metadata persists (pmem data dev) */
	/* seed path (a): realtime truncate-down */
	uint64_t rt_truncate_fallbacks; /* optimized truncates that zeroed the
					  EOF rt extent instead (forced, or
					  no blocks for the record split) */
	/* seed path (d): journal forget/revoke at free */
	uint64_t forget_lookups;       /* buffer lookups for freed blocks
					  (also in bcache_lookups)         */
	uint64_t forgets;              /* buffers of freed blocks dropped   */
	uint64_t revokes;              /* revoke records committed          */
	uint64_t replay_revoked;       /* logged images replay skipped      */
	uint64_t data_blocks_logged;   /* file data blocks through the log  */
	/* the page cache (ref_mount_opts.pagecache) and seed path (b) */
	uint64_t pc_hits;              /* reads and writes finding a page   */
	uint64_t pc_misses;            /* ... that had to add one           */
	uint64_t pc_evictions;         /* pages evicted (LRU, drop_caches)  */
	uint64_t pc_shadows;           /* shadow entries stored             */
	uint64_t pc_refaults;          /* pages added where a shadow was    */
	uint64_t pc_pages_written;     /* dirty pages written back          */
	uint64_t pc_entries_removed;   /* pages and shadows truncated       */
	uint64_t pc_node_visits;       /* index nodes entered (and entries
					  stepped by the truncate cursor)  */
	uint64_t pc_mark_clears;       /* mark-bit clears                   */
	uint64_t pc_lock_acquisitions; /* index lock rounds                 */
	uint64_t pc_fallbacks;         /* marked value entries slow-cleared */
	/* reflink and seed path (c): the COW fork and end-COW remap */
	uint64_t cow_blocks_staged;    /* staging blocks allocated          */
	uint64_t cow_remaps;           /* COW extents remapped at end-COW   */
	uint64_t cow_record_inserts;   /* data-fork records end-COW inserted */
	uint64_t cow_record_deletes;   /* ... deleted                       */
	uint64_t cow_record_updates;   /* ... rewrote in place              */
	uint64_t cow_intents;          /* deferred map intents (naive)      */
	uint64_t cow_tx_rolls;         /* rolls finishing them              */
	uint64_t cow_fallbacks;        /* optimized remaps done naively     */
	/* delayed allocation, compression and seed path (e) */
	uint64_t delalloc_pages;       /* pages a write left delalloc       */
	uint64_t delalloc_calls;       /* delalloc runs found by writeback  */
	uint64_t async_chunks;         /* compression chunks (512 KiB)      */
	uint64_t compressed_extents;   /* extents written compressed        */
	uint64_t compress_fallbacks;   /* pieces stored uncompressed        */
	uint64_t compressed_expands;   /* compressed extents rewritten
					  plain before a partial change     */
	uint64_t delalloc_direct;      /* writes the fallback sent around
					  the delalloc loop (direct I/O)    */
};
const struct ref_counters *ref_counters(const struct ref_fs *fs);
void ref_counters_reset(struct ref_fs *fs);
typedef void (*ref_counter_fn)(void *arg, const char *name, uint64_t value);
void ref_counters_foreach(const struct ref_counters *c, ref_counter_fn fn,
			  void *arg);

/*
 * The audit.  ref_audit() checks a mounted filesystem (committing nothing);
 * ref_fsck() mounts read-only (replaying the log in memory only), audits,
 * and unmounts without writing a byte.  Both recompute everything from
 * scratch (a compressed frame is read whole and compared, byte for byte,
 * with the copy kept of a frame that decoded to that length earlier in
 * the mount; only a frame not seen is decoded again) and return 0 or
 * -EFSCORRUPTED, one line per problem to msg.
 */
typedef void (*ref_msg_fn)(void *arg, const char *line);
int ref_audit(struct ref_fs *fs, ref_msg_fn msg, void *arg);
int ref_fsck(struct hw_dev *dev, ref_msg_fn msg, void *arg);
/* ref_fsck with mount options (opts->rtdev for a realtime filesystem;
 * the read-only flag is forced, msg comes from opts). */
int ref_fsck_opts(struct hw_dev *dev, const struct ref_mount_opts *opts);

/*
 * Option strings, as a user types them (comma-separated key=value):
 *   mkfs:  bs=4k,maxrecs=4,inodes=1024,journal=256,maxext=2097151,
 *          rtextsize=64k
 *   mount: ro,norecovery,cache=4096,naive=rt_truncate,forget,
 *          fallback=all,data=ordered|journal|writeback,pagecache=1024,
 *          delalloc,nodelalloc,compress=zstd[:LEVEL]|none,nopagedata,
 *          pagecache_shift=6
 * (pagecache=N: page-cache capacity in pages; pagecache=0: none;
 * pagecache_shift=N: radix nodes of 1 << N slots, N 1..6)
 * In naive= and fallback=, the path names following the key are the
 * list (commas or '+'), up to the next key=value option.
 * Sizes take k/m/g suffixes.  Unknown keys and bad values give -EINVAL
 * and one line in err.  NULL or "" leaves the defaults.
 */
/*
 * What parsing alone cannot tell: whether options o fit data device dev
 * and realtime device rtdev (NULL: none).  0, or -EINVAL with why in err.
 * ref_mkfs refuses the same cases with a bare -EINVAL.
 */
int ref_mkfs_check(const struct ref_mkfs_opts *o, struct hw_dev *dev,
		   struct hw_dev *rtdev, char *err, size_t errlen);
/*
 * Whether mkfs with opts fits dev (and opts->rtdev): 0, or the error
 * ref_mkfs would return (-ENOSPC, -EINVAL, -EFBIG) with why saying what
 * does not fit, in numbers.  Writes nothing.
 */
int ref_mkfs_fits(struct hw_dev *dev, const struct ref_mkfs_opts *opts,
		  char *why, size_t whylen);
int ref_parse_mkfs_opts(const char *s, struct ref_mkfs_opts *o, char *err,
			size_t errlen);
int ref_parse_mount_opts(const char *s, struct ref_mount_opts *o, char *err,
			 size_t errlen);

const char *ref_strerror(int err);
uint32_t ref_blocksize(const struct ref_fs *fs);
struct hw_dev *ref_device(const struct ref_fs *fs);
struct hw_dev *ref_rtdevice(const struct ref_fs *fs); /* NULL: none */

#endif
