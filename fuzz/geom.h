/*
 * geom.h - the engine geometry an input's header chooses, for the targets
 * that run op sequences on fresh filesystems (diff, crash).
 *
 * Header bytes (every value is valid; all zero is the least geometry):
 *
 *   0      filesystem preset, b % GEOM_PRESETS (below)
 *   1      bits 0-1 files 1 + v (f0..f3);
 *          bits 2-4 largest file 4k << v (4k..512k)
 *   2      diff: the engine target's paths, bit p for ref.h's REF_PATH_p:
 *          set = its naive twin, clear = the optimized version;
 *          crash: bit 0 = persistent memory: pmem: on a file in
 *          /dev/shm (or $TMPDIR) through libpmem2, its real persist
 *          path, 8-byte atomic stores; builds without libpmem2 (MSan,
 *          OSS-Fuzz) a mem: device that tears in 8-byte units instead
 *   3      diff: bit p set = path p's optimized version is forced to
 *          take its fallback (only for a path byte 2 leaves optimized)
 *   4..14  the target's own (crash, from 3: its cut choices; diff:
 *          reserved)
 *   15     the swarm draw (swarm.h): the op kinds the mutator makes, and
 *          mount options and chattr attributes every file takes before
 *          the ops (`chattr` ops after the mix's; 0: none of them)
 *
 * The diff target's sequence starts with the op-language ops that set
 * this mix, `naive PATHS` and `fallback PATHS` (op.h; left out when
 * zero), so the optimized engine runs the input's mix of naive twins,
 * optimized paths and forced fallbacks, and is compared with the `naive`
 * target (every path naive, whatever a `naive` op says) and the model.
 * All zero is the first comparison of all: every path optimized against
 * every path naive.  Being ops, the mix is in the text op log of a
 * finding, which replays it exactly; the mutator may add more of them
 * later in a sequence.
 *
 * A preset fixes what mkfs and mount take, so its engines can be made
 * once and reset between inputs (rig.h):
 *
 *   block size      512 << (p & 3)                    512..4096
 *                   (1024 for 512 on persistent memory: ref.h)
 *   B+tree fan-out  4 + (p >> 2) % 13                 maxrecs 4..16
 *   journal         64, 128, 256 blocks               by p % 3
 *   longest extent  default, 1, 2, 16 blocks          by (p / 5) % 4
 *   metadata cache  default, 2, 8, 64 buffers         by (p / 7) % 4
 *   page cache      default (1024), 8, 16, 64 pages   by (p / 3) % 4
 *   radix node      default (64), 2, 4, 8 slots       by (p / 17) % 4
 *   delalloc        off, on                            by (p / 13) % 2
 *   realtime device none; rt extents of 1, 3, 4       by (p / 11) % 4
 *                   blocks (at most the longest extent; diff only)
 *   reflink         presets 44..54 (the second run     p / 11 == 4
 *                   without a realtime device): clone,
 *                   dedupe and always-COW files, so
 *                   copy-on-write and end-COW (seed
 *                   path (c)) run; diff and crash
 *
 * The different moduli mix the choices, so the 64 presets cover every
 * block size with every fan-out and most pairs of the rest.  The devices
 * are sized so that no sequence can run out of space (the model has no
 * ENOSPC): three times four files of the largest size, for data, B+tree
 * nodes and freed blocks not yet reusable, plus the journal, the inode
 * table, the bitmaps and slack; the realtime device likewise in whole rt
 * extents.  A file is realtime after a `chattr +r` op (set_flag, arg 1)
 * while it is empty, as XFS has it.
 */
#ifndef FSORACLE_FUZZ_GEOM_H
#define FSORACLE_FUZZ_GEOM_H

#include <stdint.h>

#include "fuzz/swarm.h"
#include "harness/binary.h"
#include "harness/target.h"

#define GEOM_PRESETS 64
#define GEOM_INODES 16
/* Header byte 1, bits 2-4: the largest file, 4k << v. */
#define GEOM_MAXFILE_BYTE  1
#define GEOM_MAXFILE_SHIFT 2
#define GEOM_MAXFILE_MASK  7u

/* Which targets a preset's rig holds (rig.h). */
enum geom_kind {
	GEOM_DIFF,    /* engine, naive engine and model on mem: devices     */
	GEOM_CRASH,   /* engine on a crash layer over mem:, and the model;
			 presets GEOM_PRESETS.. are the pmem ones (geom.h) */
};
#define GEOM_MAX_FILES 4
#define GEOM_MAX_FILE (512u << 10)

/* One filesystem preset: what a rig's engines are made with. */
struct geom_preset {
	uint32_t bs, maxrecs, journal, maxext, cache;
	uint32_t pcache, pcshift;     /* pagecache=, pagecache_shift=; 0:
					 the mount's default                */
	uint32_t rtext;               /* rt extent, blocks; 0: no rt device */
	uint32_t reflink;             /* 1: mkfs reflink=1 (clone, dedupe,
					 always-COW files: seed path (c))   */
	uint64_t dev_bytes, rt_bytes;
	uint64_t meta_bytes;          /* what mkfs and mount write: superblock,
					 journal, inode table, bitmaps (and
					 slack), rounded up to 4k            */
	char dev[192];                /* "mem:12544k", "crash:mem:12544k",
					 "crash:pmem:/dev/shm/fso-..."      */
	char rtdev[32];               /* "mem:6272k", or "" for none        */
	char mkfs[128];               /* "bs=512,maxrecs=4,inodes=16,..."   */
	char mount[80];               /* "cache=8,delalloc,pagecache=16,
					 pagecache_shift=2" or ""           */
	char targets[416];            /* engine:DEV,naive:DEV,model         */
};

/* What one input asks for. */
struct fuzz_geom {
	unsigned preset;              /* index of the rig (rig_get)          */
	struct geom_preset p;
	struct op_geom op;            /* op_bin_decode's clamping           */
	uint32_t naive, fallback;     /* diff: the engine target's paths,
					 REF_PATH_* bits (op.h's OP_NAIVE,
					 OP_FALLBACK)                       */
	struct fuzz_swarm swarm;      /* byte 15's draw, fitted to the preset:
					 +r only with a realtime device, +o
					 and no compression with reflink    */
};

/* The most ops geom_prefix_ops gives: the mix, a chattr per file and
 * attribute. */
#define GEOM_PREFIX_MAX (2 + GEOM_MAX_FILES * 4)

/* Presets of a kind: GEOM_PRESETS, twice that for GEOM_CRASH. */
unsigned geom_presets(enum geom_kind kind);
/* Preset number preset of kind (made at the first call, copied after). */
void geom_preset(enum geom_kind kind, unsigned preset, struct geom_preset *p);
void geom_from_header(enum geom_kind kind, const uint8_t *hdr,
		      struct fuzz_geom *g);
/* target_env pointing into p's strings. */
void geom_env(const struct geom_preset *p, struct target_env *env);
/*
 * The ops that start g's sequence (the diff target's mix: `naive`, then
 * `fallback`, each only when not zero; then the swarm draw's chattr of
 * every file) into ops[GEOM_PREFIX_MAX]; returns how many.
 */
unsigned geom_prefix_ops(const struct fuzz_geom *g,
			 struct op ops[GEOM_PREFIX_MAX]);
/* The `#! fsoracle` header line (no newline) replaying g's input. */
void geom_header_line(const struct fuzz_geom *g, const char *targets,
		      char *buf, size_t len);

#endif
