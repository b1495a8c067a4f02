/*
 * delalloc_internal.h - what delayed allocation's three files share:
 * delalloc.c (reserving delalloc pages, the writeback helpers),
 * delalloc_cap.c (seed path (e): how much one writeback call collects,
 * and the cap on each allocation) and compress.c (compressed extents and
 * the compression workers).  Only those files include it.
 */
#ifndef FSORACLE_REF_DELALLOC_INTERNAL_H
#define FSORACLE_REF_DELALLOC_INTERNAL_H

#include "ref/ref_internal.h"
#include "ref/pcache.h"

#ifndef FSO_NO_EXTERNAL_LIBS
#include <zstd.h>
#define HAVE_ZSTD 1
#else
#define HAVE_ZSTD 0
#endif

#define DA_CHUNK     (512u << 10)  /* bytes in one async chunk            */
#define DA_PIECE     DA_PIECE_BYTES /* input bytes of a compressed extent */
#define DA_BUF       (1u << 20)    /* bytes written through in one piece  */

/* One piece of a chunk in flight: where it is, where its frame goes. */
struct da_piece {
	uint64_t fb, n;              /* file blocks                       */
	size_t off, bytes;           /* its input in the slot             */
	size_t ooff, ocap;           /* its frame's room in the slot      */
	size_t csize;                /* 0: does not pay, or not tried     */
	bool want;                   /* over a hole: try compressing      */
};

/*
 * One chunk handed to a compression worker (workers > 0): its pieces'
 * input gathered on the calling thread, compressed by the worker into
 * the slot's own frames with the slot's own context, submitted in order
 * afterwards by the calling thread.
 */
struct da_slot {
	uint8_t *in;                 /* DA_CHUNK: the chunk's bytes       */
	uint8_t *out;                /* the frames, one after another     */
	size_t outcap;
	struct da_piece *pc;
	unsigned npieces, pcap;
	int level;
};

/*
 * A frame found decoding to its extent's length (by a read or the audit,
 * compr_check), kept as a copy of its bytes: the decode is a function of
 * those bytes and that length alone, so the same bytes met again give
 * the same answer without decoding.  A table of DA_CHECKED slots, one by
 * device block, made at the first frame kept; the copies hold at most
 * DA_CHECKED_BYTES together (a frame past that is not kept).  Presets
 * with short extents make hundreds of frames: over 300 `diff` inputs the
 * audit's decodes cost 761 million instructions with 32 slots, 440 with
 * 128, 134 with 512 and 122 with 1,024.
 *
 * A slot keeps what its frame decoded to as well, while all such copies
 * fit in DA_DECODED_BYTES: a read of the frame met again takes the bytes
 * from there instead of decoding.  A read decodes a whole frame for one
 * block, and the decoded extent a read keeps (c_valid) goes whenever a
 * compressed record does; over the slowest `diff` inputs two reads in
 * five decoded a frame whose very bytes had decoded before, and decoding
 * was a third of their instructions.
 */
#define DA_CHECKED_SHIFT 10
#define DA_CHECKED       (1u << DA_CHECKED_SHIFT)
#define DA_CHECKED_BYTES (4u << 20)
#define DA_DECODED_BYTES (8u << 20)
struct da_checked {
	uint64_t want;               /* the bytes it decoded to           */
	size_t bytes, cap;           /* its length; frame's room          */
	uint8_t *frame;
	uint8_t *decoded;            /* its want bytes when has_decoded   */
	size_t dcap;                 /* decoded's room                    */
	bool has_decoded;
};

/* A set of slots in flight, and the workers' contexts (one each). */
struct da_batch {
	struct da_slot *set;
#ifndef FSO_NO_EXTERNAL_LIBS
	ZSTD_CCtx **wctx;
#endif
};

struct delalloc {
	uint8_t *buf;        /* DA_BUF: a piece's bytes                    */
	uint8_t *zbuf;       /* compressed frame of one piece              */
	size_t zcap;
	/* the last compressed extent decoded (reads of one extent) */
	uint64_t c_ino, c_off, c_blk;
	uint32_t c_state;
	bool c_valid;
	uint8_t *cbuf;       /* DA_PIECE or more: its bytes                */
	size_t ccap;
	/* this mount's frames known to decode (reads, compr_check) */
	struct da_checked *checked;  /* DA_CHECKED slots, or NULL          */
	size_t checked_bytes;        /* their frames' room                 */
	size_t decoded_bytes;        /* their decoded copies' room         */
	uint64_t decodes;            /* frames decoded this mount          */
#if HAVE_ZSTD
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
#endif
	struct hw_workers *pool;     /* NULL: the jobs run in line         */
	struct da_slot *slots;       /* two sets of 2 x workers chunks     */
	unsigned nslots;
	struct da_batch batch[2];    /* one per set                        */
#if HAVE_ZSTD
	ZSTD_CCtx **wctx;            /* a context per worker               */
	unsigned nwctx;
#endif
};

static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ---- delalloc.c ---- */

/* fs->da, made on first use with its DA_BUF buffer (or a parked one). */
int  da_get(struct ref_fs *fs, struct delalloc **out);
/* States unmount parked for the next mounts in the process (the tests). */
unsigned da_parked(void);
/* Copy pages [index, index+n) into buf (zeroes for pages with no bytes). */
void da_gather(struct ref_fs *fs, struct pc_map *m, uint64_t index,
	       uint64_t n, uint8_t *buf);
/* Write file blocks [fb, fb+n) from buf the direct way (inside EOF). */
int  da_write_plain(struct ref_fs *fs, struct ref_inode *ip, uint64_t fb,
		    uint64_t n, const uint8_t *buf);

/* ---- delalloc_cap.c: seed path (e) ---- */

/* The longest allocation one extent of ip may be: seed (e)'s cap. */
uint64_t da_max_extent(const struct ref_fs *fs, const struct ref_inode *ip);
/* The fallback: a write of a delalloc file made the direct-I/O way. */
int  da_write_direct(struct ref_fs *fs, struct ref_inode *ip, uint64_t pos,
		     uint64_t *end, const uint8_t *src);

/* ---- compress.c ---- */

/* Does ip's data go through compression (the mount's or its flag)? */
bool compr_applies(const struct ref_fs *fs, const struct ref_inode *ip);
/* Write locked delalloc pages [fb, fb+n) of ip compressed: async chunks
 * cut into pieces of at most piece blocks (in line, or on the workers). */
int  compr_write_run(struct ref_fs *fs, struct ref_inode *ip,
		     struct pc_map *m, uint64_t fb, uint64_t n,
		     uint64_t piece);
/* Free the compression workers of da: the pool, their slots and
 * contexts (da's own scratch stays). */
void compr_stop_workers(struct delalloc *da);
/* Free the copies of decoded frames and their table (at unmount). */
void compr_forget_checked(struct delalloc *da);
/* Free da's own compression scratch: the frame and decode buffers and
 * the contexts. */
void compr_free_scratch(struct delalloc *da);

#endif
