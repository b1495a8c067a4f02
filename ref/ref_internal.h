/*
 * ref_internal.h - the engine's private structures and the prototypes its
 * files share.  Nothing outside ref/ includes this.
 *
 * On-disk layout of the data device (block numbers):
 *
 *   0                superblock (one header sector: crc over 512 bytes)
 *   1                journal header (one header sector)
 *   2 .. 2+J         journal log, J blocks
 *   itab .. +I       inode table, INODE_SIZE-byte slots, slot 0 = header
 *   rtbmap .. +RB    free-space bitmap of the realtime device, one bit per
 *                    rt extent, lazily inited (RB = 0 without one)
 *   bmap .. +B       free-space bitmap for the data region, lazily inited
 *   data .. total    data region: file data and B+tree nodes
 *
 * The realtime device holds nothing but the data of realtime files: its
 * blocks 0 .. rtblocks are rtextents whole rt extents of rtx blocks each.
 *
 * Metadata goes through the buffer cache (bcache.c) and the journal
 * (journal.c): a modified buffer joins the running transaction and stays
 * in memory until that transaction is committed to the log; it is written
 * in place only at checkpoint, after which the log is reset.  File data is
 * written straight to the device, before the commit that maps it (ordered
 * mode), so a committed mapping never points at unwritten bytes; in
 * data=journal mode (or for a journal-data file) it goes through raw
 * buffers and the log like metadata (jdata.c), in data=writeback the
 * commits that are not fsyncs do not wait for it.  A freed block the log
 * holds a copy of is revoked in the freeing commit (forget.c).
 */
#ifndef FSORACLE_REF_INTERNAL_H
#define FSORACLE_REF_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>

#include "ref/ref.h"
#include "ref/ondisk.h"
#include "base/crc32c.h"

#define REF_VERSION        1
#define HDR_SECTOR         512      /* crc span of header-sector blocks  */
#define INODE_SIZE         256
#define BM_HDR_SIZE        32       /* bitmap block: blkhdr + u32 free   */
#define DEFAULT_MAX_EXTLEN ((1u << 21) - 1)

/* ---- superblock (block 0), offsets within the first 512 bytes ---- */
#define SB_VERSION      24  /* u32 */
#define SB_BLOCKSIZE    28  /* u32 */
#define SB_TOTAL        32  /* u64 total blocks */
#define SB_JSTART       40  /* u64 journal log start */
#define SB_JLEN         48  /* u32 journal log blocks */
#define SB_NINODES      52  /* u32 */
#define SB_ITAB         56  /* u64 inode table start */
#define SB_ITABLEN      64  /* u32 inode table blocks */
#define SB_MAXRECS      68  /* u32 B+tree records per node, 0 = fill */
#define SB_BMAP         72  /* u64 bitmap start */
#define SB_BMAPLEN      80  /* u32 bitmap blocks */
#define SB_MAXEXT       84  /* u32 max extent length in blocks */
#define SB_DATA         88  /* u64 data region start */
#define SB_BMINIT       96  /* u32 bitmap blocks initialised so far */
#define SB_FEATURES    104  /* u64 feature bits: FEAT_* */
#define SB_CLEAN       112  /* u32: 1 = cleanly unmounted, 0 = in use */
/* the realtime device, with FEAT_REALTIME (all zero without it) */
#define SB_RTBLOCKS    120  /* u64 rt device blocks in use: rtextents * rtx */
#define SB_RTEXTENTS   128  /* u64 rt extents */
#define SB_RTBMAP      136  /* u64 rt bitmap start (itab + itablen) */
#define SB_RTBMAPLEN   144  /* u32 rt bitmap blocks */
#define SB_RTEXTSIZE   148  /* u32 rt extent size in blocks */
#define SB_RTBMINIT    152  /* u32 rt bitmap blocks initialised so far */
/* shared blocks, with FEAT_REFLINK (all zero without it): reflink.h */
#define SB_REFC_ROOT   160  /* u64 refcount B+tree root, 0 = empty */
#define SB_REFC_LEVELS 168  /* u32 */
#define SB_COWS_ROOT   176  /* u64 COW staging B+tree root, 0 = empty */
#define SB_COWS_LEVELS 184  /* u32 */
/* an exchange range in progress (exchange.c), all zero when none */
#define SB_XCHG_INO1   192  /* u64 the two inodes                     */
#define SB_XCHG_INO2   200  /* u64                                    */
#define SB_XCHG_FB1    208  /* u64 next file block to swap in ino1 ... */
#define SB_XCHG_FB2    216  /* u64 ... and in ino2                     */
#define SB_XCHG_LEFT   224  /* u64 blocks still to swap; 0 = none     */
#define SB_END         232

#define FEAT_REALTIME  (1ull << 0) /* a realtime device belongs to the fs */
#define FEAT_REFLINK   (1ull << 1) /* shared blocks: refcount tree */
#define FEAT_ALL       (FEAT_REALTIME | FEAT_REFLINK)

/* ---- journal header (block 1) ---- */
#define JH_SEQ          24  /* u64 sequence expected at log position 0 */
#define JH_END          32
/* descriptor: blkhdr (owner = seq), u32 count, u32 pad, u64 targets[] */
#define JD_COUNT        24
#define JD_TARGETS      32
/* commit: blkhdr (owner = seq), u32 nblocks in txn, u32 crc of them */
#define JC_NBLOCKS      24
#define JC_DATACRC      28

/* ---- inode slot ---- */
#define DI_TYPE          0  /* u16: 0 free, 1 regular file */
#define DI_FLAGS         4  /* u32: REF_IF_* */
#define DI_SIZE          8  /* u64 bytes */
#define DI_NBLOCKS      16  /* u64 blocks mapped (data + B+tree nodes) */
#define DI_NEXTENTS     24  /* u64 data-fork records */
#define DI_ROOT         32  /* u64 data-fork B+tree root */
#define DI_LEVELS       40  /* u32 */
#define DI_GEN          44  /* u32 generation */
#define DI_NAME         64  /* char[64] NUL padded */

#define ITYPE_FREE 0
#define ITYPE_FILE 1

/* inode flags */
#define REF_IF_ORPHAN   (1u << 0) /* truncate/unlink in progress: finish at mount */
#define REF_IF_UNLINKED (1u << 1) /* with ORPHAN: free the inode when done */
#define REF_IF_REALTIME REF_FLAG_REALTIME /* data on the realtime device */
#define REF_IF_JDATA    REF_FLAG_JOURNAL_DATA /* data through the journal */
#define REF_IF_COW      REF_FLAG_COW /* always copy on write */
#define REF_IF_COMPRESS REF_FLAG_COMPRESS /* compress at writeback */
#define REF_IF_CEXT     (1u << 6) /* has held compressed extents */
#define REF_IF_ALL      (REF_IF_ORPHAN | REF_IF_UNLINKED | REF_IF_REALTIME | \
			 REF_IF_JDATA | REF_IF_COW | REF_IF_COMPRESS | \
			 REF_IF_CEXT)

/* ---- extent record in the data-fork B+tree (24 bytes) ---- */
#define XR_OFF   0  /* u64 file block */
#define XR_BLK   8  /* u64 device block */
#define XR_LEN  16  /* u32 blocks */
#define XR_FLAGS 20 /* u32 REF_EXT_UNWRITTEN, or REF_EXT_COMPRESSED | plen << 8 */
#define XR_SIZE 24

/* ---- in-core structures ---- */

struct rbuf {
	uint64_t blkno;
	uint8_t *data;
	uint32_t refs;
	uint8_t  dirty;    /* modified in the running transaction     */
	uint8_t  logged;   /* committed to the log, not yet in place   */
	uint8_t  dead;     /* freed while referenced: gone at last put */
	uint8_t  raw;      /* file data (journaled): no block header   */
	struct rbuf *hnext;             /* hash chain                  */
	struct rbuf *lru_prev, *lru_next; /* clean, unreferenced        */
};

struct ref_inode {
	uint64_t ino;
	uint16_t type;
	uint32_t flags;
	uint64_t size;
	uint64_t nblocks;
	uint64_t nextents;
	struct bt_root root;
	uint32_t gen;
	char name[REF_NAME_MAX + 1];
	struct ref_inode *hnext;        /* name hash chain */
};

/* Metadata stored on a byte-addressable data device, not yet persisted. */
struct devio {
	uint64_t lo, hi;        /* byte range of the pending metadata stores */
	uint64_t metas;         /* device writes made by devio.c since ...   */
	uint64_t seen;          /* ... the device's write count then         */
};

/* Freed blocks not yet reusable: until the freeing transaction commits
 * (with the revoke records of any of them the log holds a copy of). */
struct busy_ext { uint64_t start, len; };
struct busy_list {
	struct busy_ext *v;     /* sorted, disjoint */
	size_t n, cap;
	uint64_t units;         /* units in v[] */
};

/*
 * One bitmap-managed space (alloc.c): the data region in blocks, or the
 * realtime device in rt extents.  Geometry is copied from the superblock;
 * the state it points at lives in struct ref_fs.
 */
struct alloc_space {
	const char *name;       /* "bitmap", "rt bitmap": for messages       */
	const char *unit;       /* "block", "rt extent"                      */
	uint32_t magic;         /* of its bitmap blocks                      */
	uint32_t sb_init;       /* superblock offset of the inited count     */
	uint64_t base, end;     /* units [base, end) are managed             */
	uint64_t bmstart;       /* first bitmap block (data device)          */
	uint32_t bmlen;         /* bitmap blocks, bpb units each             */
	uint32_t *bminit;       /* bitmap blocks initialised so far          */
	uint32_t **grp_free;    /* free units per bitmap block               */
	uint64_t *nfree;        /* free units, busy ones included            */
	struct busy_list *busy;
};

/* The path switches (ref.h): is path p naive / forced to fall back? */
#define PATH_NAIVE(fs, p)    (((fs)->naive >> (p)) & 1u)
#define PATH_FALLBACK(fs, p) (((fs)->fallback >> (p)) & 1u)

struct ref_fs {
	struct hw_dev *dev;
	uint32_t bs;            /* block size */
	uint32_t bshift;
	bool rdonly;
	bool unclean;           /* mounted from an image not cleanly unmounted */
	/*
	 * Shut down (ref.h): a metadata read failed, metadata was found
	 * damaged, or a commit failed, in a call that may change the
	 * filesystem.  Its changes since the last commit are half made, so
	 * none of them is written: every later call fails with -EIO and
	 * unmount writes nothing.
	 */
	int shutdown;           /* 0, or the error that shut it down        */
	bool meta_err;          /* a metadata error in the running call     */
	unsigned calls;         /* public calls in progress (they nest)     */
	uint64_t dirtied;       /* buf_dirty calls, ever                    */
	uint64_t call_dirtied;  /* ... when the running call began          */
	uint32_t naive;         /* REF_PATH_* bits: take the naive twin */
	uint32_t fallback;      /* REF_PATH_* bits: force the fallback  */
	uint32_t data_mode;     /* enum ref_data_mode */
	bool delalloc;          /* delayed allocation (REF_MOUNT_DELALLOC) */
	uint32_t compress;      /* enum ref_compress for every file */
	int32_t zlevel;         /* its level (0: the library's default) */
	uint32_t workers;       /* compression workers (0: in line)     */
	ref_msg_fn msg;
	void *msg_arg;

	/* geometry from the superblock */
	uint64_t total, jstart, itab, bmap, data;
	uint32_t jlen, ninodes, itablen, bmaplen, maxrecs, maxext, ipb;
	uint64_t bpb;           /* units covered per bitmap block */

	/* the realtime device (rtdev NULL and the rest 0 without one) */
	struct hw_dev *rtdev;
	uint64_t rtblocks, rtextents, rtbmap;
	uint32_t rtx, rtbmaplen; /* rt extent size in blocks (1 without one) */

	/* buffer cache */
	struct rbuf **htab;
	size_t hsize, nbufs;
	struct rbuf lru;        /* sentinel */
	size_t nclean, cache_max;
	size_t nraw;            /* raw (file data) buffers in the cache */

	/* journal */
	struct rbuf **tx;       /* buffers dirty in the running transaction */
	size_t ntx, txcap;
	bool tx_frames;         /* ... which maps a compressed frame: its
				   commit orders data first, in every mode */
	struct rbuf **ckpt;     /* logged, awaiting checkpoint */
	size_t nckpt, ckptcap;
	uint64_t *revoke;       /* blocks revoked in the running transaction */
	size_t nrevoke, revcap;
	uint64_t jseq;          /* sequence of the next commit */
	uint32_t jhead;         /* next free log position */
	bool tx_whole;          /* keep the running transaction whole: roll
				 * only when the log could take no more
				 * (a zone reclaim, see tx_roll_limit) */

	/* allocator: the data region, in blocks */
	uint32_t *grp_free;     /* free blocks per bitmap block (inited ones) */
	uint32_t bminit;
	uint64_t free_blocks;
	struct busy_list busy;  /* freed, not yet reusable */
	/* ... and the realtime device, in rt extents */
	uint32_t *rt_grp_free;
	uint32_t rt_bminit;
	uint64_t rt_free;
	struct busy_list rt_busy;
	struct alloc_space dspace, rtspace;
	struct zoned_state *zoned;    /* zoned realtime device (zoned.c), or NULL */
	struct reflink *rl;           /* shared blocks (reflink.h), or NULL */
	struct devio dio;             /* metadata stores to persist (devio.c) */
	struct bt_store bt_store;     /* B+tree nodes through the cache (bcache.c) */

	/* inodes */
	struct ref_inode *inodes;     /* [ninodes], index ino - 1 */
	struct ref_inode **nhash;
	size_t nhsize;

	struct ref_counters ctr;
	struct pcache *pc;            /* page cache (pcache.h); NULL: off */
	uint8_t *zeroblk;             /* one block of zeros */
	uint8_t *scratch;             /* one block of scratch */
	uint8_t *copybuf;             /* copy_range's bounce buffer (lazy) */
	struct delalloc *da;          /* writeback (delalloc_internal.h) */
	bool da_spending;             /* a delalloc run allocates: it may
					 take the blocks its pages reserved,
					 which every other allocation leaves */
};

/* errors and messages */
void ref_report(struct ref_fs *fs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * Around the body of every public call that may change the filesystem:
 * fs_enter fails with -EIO once it is shut down; fs_leave shuts it down
 * when a metadata error met on the way (fs->meta_err: a failed metadata
 * read, damage reported, a failed commit) may have left an update half
 * made, and then turns a result that says success into -EIO.  Calls nest
 * (one public call may make another): the outermost decides.
 */
int fs_enter(struct ref_fs *fs);
int64_t fs_leave(struct ref_fs *fs, int64_t ret);
/*
 * fs_leave for a read (which may write pages back on its way): it shuts
 * the filesystem down only when the call dirtied metadata, and leaves
 * its result as it is (a read that meets damage returns what it read
 * before it).
 */
int64_t fs_leave_read(struct ref_fs *fs, int64_t ret);
/* A public call that only looks: -EIO once the filesystem is shut down. */
#define FS_LIVE(fs)                                                 \
	do {                                                        \
		if ((fs)->shutdown)                                 \
			return -EIO;                                \
	} while (0)
#define CORRUPT_GOTO(fs, cond, err, label, ...)                     \
	do {                                                        \
		if (cond) {                                         \
			ref_report((fs), __VA_ARGS__);              \
			(err) = -EFSCORRUPTED;                      \
			goto label;                                 \
		}                                                   \
	} while (0)

/* block header helpers (format.c) */
void blk_init(void *data, uint32_t magic, uint64_t blkno, uint64_t owner);
void blk_set_crc(void *data, size_t span);
int  blk_verify(const void *data, size_t span, uint32_t magic, uint64_t blkno);
int  blk_verify_full(const void *data, size_t span, size_t bs, uint32_t magic,
		     uint64_t blkno);
size_t blk_crc_span(const struct ref_fs *fs, const void *data);
/* A header-sector block whose header is damaged but whose copy in the
 * next sector is whole gets the copy back in place: 0, or -EFSCORRUPTED
 * (the header sector is span bytes). */
int  hdr_repair(void *data, size_t span, size_t bs, uint32_t magic,
		uint64_t blkno);
uint64_t bitmap_blocks(uint64_t n, uint64_t bpb);

/* buffer cache (bcache.c) */
int  bcache_init(struct ref_fs *fs, size_t cache_max);
void bcache_destroy(struct ref_fs *fs);
int  buf_read(struct ref_fs *fs, uint64_t blkno, uint32_t magic,
	      struct rbuf **out);
int  buf_get_new(struct ref_fs *fs, uint64_t blkno, struct rbuf **out);
void buf_dirty(struct ref_fs *fs, struct rbuf *b);
void buf_put(struct ref_fs *fs, struct rbuf *b);
bool buf_forget(struct ref_fs *fs, uint64_t blkno, bool *logged);
int  buf_get_raw(struct ref_fs *fs, uint64_t blkno, bool read,
		 struct rbuf **out);
struct rbuf *buf_find(struct ref_fs *fs, uint64_t blkno);
void bcache_drop_raw(struct ref_fs *fs);
int  buf_mark_logged(struct ref_fs *fs, struct rbuf *b);
int  buf_write_inplace(struct ref_fs *fs, struct rbuf *b);
void buf_unpin(struct ref_fs *fs, struct rbuf *b);
/* Fill fs->bt_store: every tree of this fs reaches its nodes through it. */
void bcache_bt_store_init(struct ref_fs *fs);

/* journal (journal.c) */
int  journal_recover(struct ref_fs *fs, bool norecovery, const uint8_t *home);
int  super_check_replayed(struct ref_fs *fs, const uint8_t *home);
int  tx_commit(struct ref_fs *fs);
int  tx_maybe_roll(struct ref_fs *fs);
int  tx_roll_for(struct ref_fs *fs, uint64_t room);
int  journal_checkpoint(struct ref_fs *fs);
size_t tx_roll_limit(const struct ref_fs *fs);
int  tx_begin_whole(struct ref_fs *fs);
int  journal_revoke(struct ref_fs *fs, uint64_t blkno);
int  journal_flush(struct ref_fs *fs);

/* seed path (d), forget at free (forget.c) */
int  forget_meta(struct ref_fs *fs, uint64_t blkno);
int  forget_file_blocks(struct ref_fs *fs, const struct ref_inode *ip,
			uint64_t start, uint64_t len);

/* file data through the journal, or straight to the device (jdata.c) */
bool inode_journals_data(const struct ref_fs *fs, const struct ref_inode *ip);
uint64_t fdata_max_blocks(const struct ref_fs *fs, const struct ref_inode *ip);
int  fdata_write(struct ref_fs *fs, const struct ref_inode *ip,
		 uint64_t devoff, const void *buf, uint64_t len);
int  fdata_zero(struct ref_fs *fs, const struct ref_inode *ip,
		uint64_t devoff, uint64_t len);
int  fdata_read(struct ref_fs *fs, const struct ref_inode *ip,
		uint64_t devoff, void *buf, uint64_t len);
/* Whether fdata_view may show more than a block at once: no journaled
 * file data of ip's device in the way. */
bool fdata_view_runs(const struct ref_fs *fs, const struct ref_inode *ip);
/* fdata_read's bytes of one block where they are (hw_view), valid until
 * the next write; NULL: read them instead */
const uint8_t *fdata_view(struct ref_fs *fs, const struct ref_inode *ip,
			  uint64_t devoff, uint64_t len);

/* allocator (alloc.c) */
int  alloc_mount(struct ref_fs *fs);
void alloc_unmount(struct ref_fs *fs);
int  alloc_extent(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
		  uint64_t *start, uint64_t *len);
int  alloc_data(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
		uint64_t *start, uint64_t *len);
/* Exactly n blocks in one run (n at most maxext), first fit at or after
 * goal: -ENOSPC when free space has no run that long.  The rt one takes
 * whole rt extents (-ENOSPC when n is not), never on a zoned device
 * (-EINVAL). */
int  alloc_data_whole(struct ref_fs *fs, uint64_t goal, uint64_t n,
		      uint64_t *start);
int  rtalloc_whole(struct ref_fs *fs, uint64_t goal, uint64_t n,
		   uint64_t *start);
/* Data blocks file data may still take (free, not busy, past the
 * B+tree reserve), delalloc reservations included. */
uint64_t alloc_data_usable(const struct ref_fs *fs);
/* Data blocks statfs counts available (alloc.c). */
uint64_t alloc_data_avail(const struct ref_fs *fs);
/* Blocks B+tree nodes may take now (alloc.c). */
uint64_t alloc_meta_room(const struct ref_fs *fs);
/* rt blocks file data may still take (free, not busy; on a zoned device
 * not live, less the reclaim reserve), delalloc reservations included. */
uint64_t alloc_rt_usable(const struct ref_fs *fs);
bool alloc_has_busy(const struct ref_fs *fs);
bool alloc_busy_pressure(const struct ref_fs *fs);
int  alloc_free(struct ref_fs *fs, uint64_t start, uint64_t len);
/* freeing an owned block: refcounts, forget, then the bitmap
 * (free_blocks.c) */
int  alloc_free_file(struct ref_fs *fs, const struct ref_inode *ip,
		     uint64_t start, uint64_t len);
int  alloc_free_meta(struct ref_fs *fs, uint64_t blk);
void alloc_release_busy(struct ref_fs *fs);
bool alloc_is_busy(const struct ref_fs *fs, uint64_t start, uint64_t len);
/* The realtime device, in its blocks; whole, aligned rt extents only. */
int  rtalloc_blocks(struct ref_fs *fs, uint64_t goal, uint64_t maxlen,
		    uint64_t *start, uint64_t *len);
int  rtalloc_free(struct ref_fs *fs, uint64_t start, uint64_t len);
/* A referenced run of blocks, for the audit. */
struct alloc_run { uint64_t start, len; };
int  alloc_check(struct ref_fs *fs, const struct alloc_run *runs, size_t n);
/* The same for the realtime device: runs of rt blocks, sorted, disjoint,
 * covering whole rt extents (the audit checks that first). */
int  alloc_check_rt(struct ref_fs *fs, const struct alloc_run *runs, size_t n);

/* inodes (inode.c) */
int  inode_mount(struct ref_fs *fs);
void inode_unmount(struct ref_fs *fs);
int  inode_get(struct ref_fs *fs, uint64_t ino, struct ref_inode **ip);
int  inode_log(struct ref_fs *fs, struct ref_inode *ip);
void inode_encode(const struct ref_inode *ip, uint8_t *slot);
bool inode_encodes_zero(const struct ref_inode *ip);
int  inode_decode(struct ref_fs *fs, uint64_t ino, const uint8_t *slot,
		  struct ref_inode *ip);
void inode_hash_remove(struct ref_fs *fs, struct ref_inode *ip);
uint64_t inode_blkno(const struct ref_fs *fs, uint64_t ino);
size_t inode_slot_off(const struct ref_fs *fs, uint64_t ino);
int  inode_finish_orphans(struct ref_fs *fs);

/* data-fork extent map (bmap.c) */
#define BMAP_HOLE 0xffffffffu  /* state of a hole returned by bmap_lookup */
void bmap_tree(struct ref_fs *fs, struct ref_inode *ip, struct bt_tree *t);
int  bmap_lookup(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		 struct ref_extent *ext);
/* bmap_lookup, the written records continuing a written answer joined up
 * to upto (bmap.c). */
int  bmap_lookup_run(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t upto, struct ref_extent *ext);
/* The most nodes an extent tree of ip's geometry holds nrecs records in
 * (bt_nodes_most; bmap.c). */
uint64_t bmap_nodes_most(struct ref_fs *fs, struct ref_inode *ip,
			 uint64_t nrecs);
/* bmap_lookup_run for a reader of zeros: holes and unwritten records after
 * an answer that reads as zeros join it, wherever they lie (bmap.c). */
int  bmap_lookup_read(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		      uint64_t upto, struct ref_extent *ext);
int  bmap_map(struct ref_fs *fs, struct ref_inode *ip,
	      const struct ref_extent *ext);
int  bmap_unmap(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		uint64_t len, bool free_blocks);
/* Unmap and free [fb, fb+len) with no commit in between (one step). */
int  bmap_unmap_step(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t len);
/* Unmap [fb, fb+len) keeping the blocks, no commit in between (one step
 * of exchange range, which maps them into the other file). */
int  bmap_unmap_keep(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		     uint64_t len);
int  bmap_shift(struct ref_fs *fs, struct ref_inode *ip, uint64_t from,
		uint64_t delta, bool up);
int  bmap_convert(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		  uint64_t len, uint32_t state, bool roll);
bool bmap_can_insert(const struct ref_fs *fs, const struct ref_inode *ip,
		     unsigned n);
void xrec_decode(const void *rec, struct ref_extent *e);
void xrec_encode(void *rec, const struct ref_extent *e);

/* file data (file.c) */
int  file_zero_written(struct ref_fs *fs, struct ref_inode *ip, uint64_t from,
		       uint64_t to);
/* What a scan of the EOF tail found: the first non-zero byte past EOF. */
struct tail_bad { uint64_t off; uint8_t byte; };
int  file_scan_eof_tail(struct ref_fs *fs, struct ref_inode *ip, bool fix,
			struct tail_bad *bad);
int  file_zero_eof_tails(struct ref_fs *fs);

/* truncate (truncate.c) */
int  file_truncate_blocks(struct ref_fs *fs, struct ref_inode *ip,
			  uint64_t from_fb);

/* the audit (fsck.c) */
int  fsck_run(struct ref_fs *fs);

/* exchange range (exchange.c): finish one a cut interrupted, at mount */
int  exchange_recover(struct ref_fs *fs);

/* metadata writes: FUA and flush, or store and persist (devio.c) */
int  meta_write(struct ref_fs *fs, uint64_t blk, const void *data,
		bool durable);
int  meta_barrier(struct ref_fs *fs);
/* A cut may tear a sector of dev (persistent memory, or any device whose
 * atomic unit is smaller): the superblock and the journal header need
 * their torn-store copy, and blocks of REF_PMEM_MIN_BLOCKSIZE. */
bool meta_sectors_tear(struct hw_dev *dev);

/* delayed allocation and writeback (delalloc.c), seed path (e)'s
 * writeback twins (delalloc_cap.c), compressed extents (compress.c) */
bool da_applies(const struct ref_fs *fs, const struct ref_inode *ip);
int  da_write(struct ref_fs *fs, struct ref_inode *ip, uint64_t pos,
	      uint64_t *end, const uint8_t *src);
int  da_writeback_run(struct ref_fs *fs, struct ref_inode *ip, uint64_t index,
		      uint64_t *next);
/* Write back the delalloc runs that start in file blocks [fb0, fb1). */
int  da_flush_range(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb0,
		    uint64_t fb1);
void da_unmount(struct ref_fs *fs);
bool compress_available(void);
#define DA_PIECE_BYTES (128u << 10) /* input of one compressed extent, at most */
static inline bool ext_compressed(const struct ref_extent *e)
{
	return e->state != BMAP_HOLE && (e->state & REF_EXT_COMPRESSED);
}
/* Device blocks a mapped extent holds. */
static inline uint64_t ext_plen(const struct ref_extent *e)
{
	return ext_compressed(e) ? REF_EXT_PLEN(e->state) : e->len;
}
/* Whether compressed extent e has a shape a writer makes: fewer device
 * blocks than file blocks, at least one, and no more file blocks than one
 * compressed extent takes (DA_PIECE_BYTES).  The audit and the reads
 * both refuse any other. */
static inline bool ext_compressed_shape_ok(const struct ref_fs *fs,
					   const struct ref_extent *e)
{
	uint64_t plen = ext_plen(e);

	return plen && plen < e->len && e->len <= (DA_PIECE_BYTES >> fs->bshift);
}
/* Read file block fb of compressed extent e (decompressing it). */
int  compr_read_block(struct ref_fs *fs, const struct ref_inode *ip,
		      const struct ref_extent *e, uint64_t fb, uint8_t *out);
/* Rewrite every compressed extent overlapping file blocks [fb0, fb1)
 * uncompressed, so that a change to part of one can be made. */
int  compr_expand(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb0,
		  uint64_t fb1);
/* A change reached part of a compressed extent (a bug: callers expand
 * first): say so, -EFSCORRUPTED. */
int  compr_partial(struct ref_fs *fs, const struct ref_inode *ip,
		   uint64_t fb, const char *what);
/* A compressed record went or moved: drop the decoded copy. */
void compr_forget(struct ref_fs *fs);
/* Check one compressed extent decodes to its length (the audit): a
 * frame whose bytes decoded to that length before in this mount (a copy
 * of them kept, 4 MiB of copies at most) is not decoded again, the
 * answer being a function of those bytes. */
int  compr_check(struct ref_fs *fs, const struct ref_inode *ip,
		 const struct ref_extent *e);
/* Frames decoded in this mount, by reads and the audit, and the bytes
 * of the copies kept of them (the tests). */
uint64_t compr_decodes(const struct ref_fs *fs);
size_t compr_kept_bytes(const struct ref_fs *fs);
/* The direct write path (file.c), for writeback and the fallback. */
int64_t file_write_through(struct ref_fs *fs, struct ref_inode *ip,
			   const uint8_t *buf, uint64_t len, uint64_t off,
			   bool from_cache);
/* Allocate for file block fb: up to want blocks (may_commit: commit to
 * reuse busy space when short; never while blocks allocated earlier in
 * the same step are still unmapped). */
int  file_alloc_blocks(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		       uint64_t want, bool may_commit, uint64_t *blk,
		       uint64_t *got);
/* Exactly n blocks in one run for file block fb, near its goal, without a
 * commit: -ENOSPC when there is no such run. */
int  file_alloc_whole(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		      uint64_t n, uint64_t *blk);
/* Give back blocks allocated for ip that nothing maps yet (the write into
 * them failed): forgotten in the journal, then to the bitmap of their
 * device. */
int  file_unalloc(struct ref_fs *fs, const struct ref_inode *ip,
		  uint64_t start, uint64_t len);

/* the realtime device on zoned storage (zoned.c) */
int  zoned_mkfs(struct hw_dev *rtdev, uint32_t bs, uint32_t rtx);
int  zoned_mount(struct ref_fs *fs);
void zoned_unmount(struct ref_fs *fs);
int  zoned_alloc_begin(struct ref_fs *fs, uint64_t *goal, uint64_t *n);
int  zoned_alloc_end(struct ref_fs *fs, uint64_t at, uint64_t n);
void zoned_freed(struct ref_fs *fs, uint64_t ext, uint64_t n);
int64_t zoned_pwrite(struct ref_fs *fs, struct ref_inode *ip, const void *buf,
		     uint64_t len, uint64_t off);
/* Zero the written bytes of [from, to) out of place; *reached (if not
 * NULL) comes back as far as the device holds zeros, also on failure. */
int  zoned_zero_written(struct ref_fs *fs, struct ref_inode *ip, uint64_t from,
			uint64_t to, uint64_t *reached);
int  zoned_check(struct ref_fs *fs);
int  zoned_recover(struct ref_fs *fs);
/* Allocate up to n rt blocks at the write pointer and append data there
 * (the caller's n blocks); *got may be less (capped at the append limit). */
int  zoned_append(struct ref_fs *fs, const uint8_t *data, uint64_t n,
		  uint64_t *start, uint64_t *got);
/* Reclaim now, before anything is allocated, until n rt blocks fit in
 * the open zone's tail and the empty zones beyond the reserve: appends of
 * n blocks in pieces then need no reclaim (which commits) between them.
 * -ENOSPC when nothing left to reclaim gives that room. */
int  zoned_make_room(struct ref_fs *fs, uint64_t n);
/* Reclaim is moving live data (which no reservation holds back). */
bool zoned_reclaiming(const struct ref_fs *fs);
/* The longest allocation (rt blocks) one append may make. */
uint64_t zoned_max_alloc(const struct ref_fs *fs);
/* rt blocks new data may still be given (delalloc reservations). */
uint64_t zoned_free_blocks(const struct ref_fs *fs);

/* Bytes of a data device the filesystem may span: on a zoned device its
 * conventional zones only (metadata is written in place, and a
 * sequential zone takes writes only at its write pointer). */
static inline uint64_t data_dev_bytes(const struct hw_dev *dev)
{
	if (hw_caps(dev) & HW_CAP_ZONED)
		return (uint64_t)dev->geo.nr_conv * dev->geo.zone_size;
	return hw_size(dev);
}

static inline uint64_t fs_blocks_roundup(const struct ref_fs *fs, uint64_t bytes)
{
	return (bytes + fs->bs - 1) >> fs->bshift;
}

/* ---- realtime files ---- */

static inline bool inode_is_rt(const struct ref_inode *ip)
{
	return ip->flags & REF_IF_REALTIME;
}

/* A realtime file on a zoned realtime device: its data is only appended. */
static inline bool file_zoned(const struct ref_fs *fs,
			      const struct ref_inode *ip)
{
	return fs->zoned && inode_is_rt(ip);
}

/* Where a file's data lives. */
static inline struct hw_dev *file_dev(const struct ref_fs *fs,
				      const struct ref_inode *ip)
{
	return inode_is_rt(ip) ? fs->rtdev : fs->dev;
}

/* A file's allocation unit in blocks: the rt extent size, or 1. */
static inline uint64_t file_unit(const struct ref_fs *fs,
				 const struct ref_inode *ip)
{
	return inode_is_rt(ip) ? fs->rtx : 1;
}

static inline uint64_t round_up(uint64_t x, uint64_t unit)
{
	return unit == 1 ? x : (x + unit - 1) / unit * unit;
}

static inline uint64_t round_down(uint64_t x, uint64_t unit)
{
	return unit == 1 ? x : x / unit * unit;
}

/*
 * The longest record a file's data fork may hold, in blocks: maxext, and
 * on a zoned realtime device the append limit, so that every extent is
 * at most what one zone append wrote (seed path (e)'s invariant).
 */
static inline uint64_t file_maxext(const struct ref_fs *fs,
				   const struct ref_inode *ip)
{
	uint64_t z = file_zoned(fs, ip) ? zoned_max_alloc(fs) : fs->maxext;

	return z && z < fs->maxext ? z : fs->maxext;
}

/*
 * The end of the file's EOF tail in blocks: the first block past EOF that
 * starts an allocation unit.  Written blocks in [size, tail end) must read
 * as zeroes (extending the file exposes them without zeroing); no written
 * block lies at or past it.  For a plain file it is the EOF block's end.
 */
static inline uint64_t file_tail_end(const struct ref_fs *fs,
				     const struct ref_inode *ip)
{
	return round_up(fs_blocks_roundup(fs, ip->size), file_unit(fs, ip));
}

#endif
