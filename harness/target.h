/*
 * target.h - things that apply ops, behind one small vtable: the engine
 * (ref.h on an hw device), the model (byte arrays and sizes), a host
 * directory (real syscalls), and a planted-bug wrapper around the model
 * that proves the checker can fail.
 *
 * Target lists (what --targets takes), comma-separated:
 *
 *   model[:BS]        the model; BS is the block size its collapse/insert
 *                     alignment rule uses (default: the first other
 *                     target's, else 4096)
 *   engine[:DEV]      the engine (optimized paths) on device spec DEV
 *                     (default: the log header's dev=, else mem:64m)
 *   naive[:DEV]       the engine with every seed path's naive twin
 *                     (naive=all; `naive` ops leave it so, `fallback`
 *                     ops apply)
 *   host[:DIR]        files in DIR (default: a fresh directory under
 *                     $TMPDIR or /tmp, removed afterwards)
 *   planted:BUG       the model with one planted bug (target_planted.c):
 *                     trunc_tail, punch_short, zero_keep_size, collapse_eio,
 *                     audit_unlink, enospc_room, enfile_room
 *
 * After a ':' a comma splits only where a target kind follows, so device
 * specs keep their commas: "engine:file:img,size=1g,model" is two targets.
 *
 * Ops a target cannot do are in its `unsupported` mask (bit per kind);
 * the checker skips such ops on all targets and reports them, and
 * apply() returns -EOPNOTSUPP for them when called directly.
 */
#ifndef FSORACLE_HARNESS_TARGET_H
#define FSORACLE_HARNESS_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/op.h"

#define TARGET_MAX 8

/* Capabilities (struct target.caps). */
#define TARGET_MODEL    (1u << 0) /* the model (or a wrapper of it)        */
#define TARGET_CRASHES  (1u << 1) /* crash really loses non-durable state  */
#define TARGET_AUDITS   (1u << 2) /* audit() checks internal consistency   */
#define TARGET_NO_DATA  (1u << 3) /* keeps no file bytes, reads zeros (a
				     null: device, pages without bytes):
				     comparable only with targets alike    */

struct target;

#define TARGET_POWER_ON     0
#define TARGET_POWER_FAILED 1
#define TARGET_POWER_LOST   2

/* One mapped range of a file (target_ops.ranges), in bytes. */
#define TARGET_RANGE_DATA      0u  /* written: its bytes are the file's   */
#define TARGET_RANGE_UNWRITTEN 1u  /* preallocated, reads as zeros        */
struct target_range {
	uint64_t off, len;
	unsigned kind;            /* TARGET_RANGE_*                          */
};
typedef int (*target_range_fn)(void *arg, const struct target_range *r);
/* The bytes of a view (target_ops.view): n of them at file offset off,
 * at p (NULL: zeros). */
typedef void (*target_view_fn)(void *arg, uint64_t off, const uint8_t *p,
			       size_t n);

/* Room for new data (target_ops.space), in bytes. */
struct target_space {
	uint64_t avail;           /* what new data of the file may still get
				     (statfs's f_bavail on its device)      */
	uint64_t meta_avail;      /* what metadata may still get (the device
				     holding extent maps and the journal)   */
	uint64_t capacity;        /* the data space of the file's device     */
	uint32_t unit;            /* the file's allocation unit              */
	uint32_t map_insert;      /* metadata blocks one more mapping record
				     of the file may take (a split of every
				     level of its extent tree, and a new
				     root); 0: none or unknown              */
	uint32_t meta_block;      /* the size of those blocks, in bytes      */
	uint64_t free_inodes;     /* files it may still create; UINT64_MAX:
				     no limit it can tell                  */
};

/*
 * What twin engines (engine, naive, fallback: the same ops, another path)
 * are compared on after every op when a check asks for it (check_cfg.twins,
 * the log header's check=twins:...), a bit per part:
 *
 *   stat      each file's size and allocated blocks
 *   free      free blocks of the data device (every file's extent B+tree
 *             blocks counted as free: twins may build trees of other
 *             shapes) and of the realtime device
 *   extents   each file's data-fork mappings, merged where contiguous in
 *             file, device and state (device blocks included)
 *   cowfork   each file's COW fork, merged the same way
 *   refcount  the refcount records
 *   image     the data device's contents, every write issued (durable
 *             or not: what a power cut starts from); equal only for
 *             twins whose paths write alike by design (the forget
 *             twins: only what the engine looks up differs); at a cut
 *             or crash also compared right after recovery, before the
 *             checker adopts anything (check_twin.c)
 */
enum target_twin_part {
	TWIN_STAT, TWIN_FREE, TWIN_EXTENTS, TWIN_COWFORK, TWIN_REFCOUNT,
	TWIN_IMAGE, TWIN_NPARTS
};
/* twins=all: the parts every seed path's twins must agree on (not the
 * image, which most paths write differently by design) */
#define TWIN_ALL ((1u << TWIN_IMAGE) - 1)
struct target_twin {
	/* a digest per part and file; a filesystem-wide part in [part][0] */
	uint64_t h[TWIN_NPARTS][OP_MAX_FILES];
	/* the blocks of every file's extent B+tree, when a part that says
	 * where blocks lie is asked (TWIN_PLACED): twins whose trees came
	 * apart took different blocks for their nodes, and their later
	 * allocations may find their room in different places */
	uint64_t tree_blocks;
	/* every file's data-fork mappings without their device blocks
	 * (merged where contiguous in file and state), with tree_blocks:
	 * the same records in trees of other sizes is trees come apart */
	uint64_t records;
};
/* The parts that name device blocks or count them: where data lands,
 * which the blocks tree nodes took decide too. */
#define TWIN_PLACED ((1u << TWIN_FREE) | (1u << TWIN_EXTENTS) | \
		     (1u << TWIN_COWFORK) | (1u << TWIN_REFCOUNT) | \
		     (1u << TWIN_IMAGE))
extern const char *const target_twin_names[TWIN_NPARTS];
/* The state of an engine target (engine_ops.twin; target_twin.c). */
int engine_twin_state(struct target *t, uint32_t parts,
		      struct target_twin *out);

struct target_ops {
	/*
	 * Apply one op.  pwrite takes its bytes from wbuf (op->len of them),
	 * pread puts them in rbuf (room for op->len).  Returns bytes for
	 * pread/pwrite/copy_range, else 0, or a negative errno.  Callers
	 * split big reads and writes into pieces (see target_apply).
	 */
	int64_t (*apply)(struct target *t, const struct op *op,
			 const void *wbuf, void *rbuf);
	/* Size of file i in bytes, or -ENOENT. */
	int64_t (*size)(struct target *t, unsigned file);
	/* Read without side effects (no create): bytes read or -errno. */
	int64_t (*read)(struct target *t, unsigned file, uint64_t off,
			void *buf, size_t len);
	/*
	 * The bytes of file i at off where the target keeps them, not
	 * copied: *p points at the next of them, at most len (NULL: they
	 * are zeros), and the return says how many, at least 1 below the
	 * size, 0 at or past it, or -errno.  What read would give, piece by
	 * piece.  NULL when the target has no such view (the model has one:
	 * a verify compares with its bytes in place).
	 */
	int64_t (*peek)(struct target *t, unsigned file, uint64_t off,
			size_t len, const uint8_t **p);
	/*
	 * read without the copy, for a checker that only compares: what
	 * read would return, with the bytes handed to fn in file order,
	 * piece by piece (p: valid during the call only; NULL: zeros),
	 * read the same way (an engine's page cache fills and evicts as for
	 * read).  -EOPNOTSUPP when the target cannot just now (read
	 * instead).  NULL when it never can.
	 */
	int64_t (*view)(struct target *t, unsigned file, uint64_t off,
			size_t len, target_view_fn fn, void *arg);
	/* Bit i set when file i exists.  0 or -errno. */
	int (*list)(struct target *t, uint32_t *mask);
	/* Internal consistency (fsck); NULL when there is none.  0 or
	 * -EFSCORRUPTED with the first problem in msg. */
	int (*audit)(struct target *t, char *msg, size_t msglen);
	/*
	 * The mapped ranges of file i in offset order, through fn (a non-zero
	 * return stops the walk): written and unwritten space as the target
	 * holds it.  What lies between reads as zeros unless cached data
	 * waits there for allocation.  NULL when the target cannot tell.
	 * 0 or -errno.
	 */
	int (*ranges)(struct target *t, unsigned file, target_range_fn fn,
		      void *arg);
	/* Room for new data of file i; NULL when the target has no limit
	 * (the model).  0 or -errno. */
	int (*space)(struct target *t, unsigned file, struct target_space *sp);
	/*
	 * mkfs and mount options for every reset from the next on, put
	 * before the target's own (which win over them): a swarm round's
	 * draw; "" for none.  NULL when the target takes none (the model).
	 * 0, -EINVAL for options that do not parse, -EOPNOTSUPP when the
	 * target cannot take them (a kept image is never formatted again).
	 */
	int (*set_round)(struct target *t, const char *mkfs, const char *mount);
	/*
	 * After a `cut` op (op.h) was applied: TARGET_POWER_ON while the
	 * power has not failed yet (or no cut is armed), TARGET_POWER_FAILED
	 * once it has, TARGET_POWER_LOST when I/O was issued after the
	 * failure too (the op in progress did not finish durably).  NULL:
	 * the power never fails.
	 */
	int (*power)(struct target *t);
	/*
	 * I/Os its devices have failed on purpose so far (a faulty layer
	 * anywhere in their specs, hw.h), for the report: an error that
	 * follows from one is no finding by itself.  NULL: none can.
	 */
	int64_t (*injected)(struct target *t);
	/*
	 * The state twin engines must agree on beyond what a reader sees
	 * (check_cfg.twins), as digests of the parts asked for; NULL when
	 * the target has no such state (the model, the host).  0 or -errno.
	 */
	int (*twin)(struct target *t, uint32_t parts, struct target_twin *out);
	/* Back to empty: no files, fresh filesystem.  0 or -errno. */
	int (*reset)(struct target *t);
	/*
	 * Drop the files and the filesystem's state now; only reset may
	 * follow (check_release).  NULL: nothing to drop early.  0 or
	 * -errno.
	 */
	int (*release)(struct target *t);
	void (*destroy)(struct target *t);
};

struct target {
	const struct target_ops *ops;
	char name[128];           /* as given in the list: "engine:mem:64m"  */
	uint64_t unsupported;     /* bit per enum op_kind                    */
	uint32_t blocksize;       /* alignment unit: collapse/insert/clone/xchg */
	uint32_t caps;            /* TARGET_*                                */
	char note[160];           /* why ops are unsupported (for reports)   */
	char devnote[200];        /* a device given once, made this target's
				     own: its spec (see target_list_open)   */
	char names[OP_MAX_FILES][OP_NAME_MAX + 1]; /* file names used       */
	char why[200];            /* why the last reset failed, when the
				     target can say more than its errno
				     ("" otherwise)                         */
};

/* Defaults the list parser fills in (from a log header or the CLI). */
struct target_env {
	const char *dev;          /* default device spec ("mem:64m")          */
	const char *rtdev;        /* realtime device spec, or NULL            */
	const char *mkfs;         /* "bs=4k,maxrecs=4,inodes=N,journal=N,maxext=N" */
	const char *mount;        /* "ro,norecovery,cache=N"                  */
	int keep_image;           /* engine on a persistent device (file:):
				     mount what is there instead of mkfs,
				     and reset by unlinking our files        */
	int power_cuts;           /* engines stack crash layers, one power
				     domain, on their data and realtime
				     devices (not null:, zoned:null, zbd:)
				     and take `cut` ops (harness/cut.h);
				     without it they list cut as
				     unsupported                            */
};

/* Constructors.  0 or -errno with one line in err. */
int model_target_new(uint32_t blocksize, struct target **out);
int host_target_new(const char *dir, struct target **out, char *err,
		    size_t errlen);
/*
 * The seed-path switch an engine target keeps whatever `naive` and
 * `fallback` ops say: none (`engine`), naive=all (`naive`, the twin a mix
 * is compared with) or fallback=all (`fallback`: every optimized path
 * forced to take its fallback).
 */
enum engine_pin { ENGINE_OPTIMIZED, ENGINE_NAIVE, ENGINE_FALLBACK };
int engine_target_new(const char *dev, enum engine_pin pin,
		      const struct target_env *env, struct target **out,
		      char *err, size_t errlen);
int planted_target_new(const char *bug, struct target **out, char *err,
		       size_t errlen);

/*
 * Exchange range's rules as the model has them (XFS's
 * xfs_exchange_range_checks without the to-EOF flag): both ranges inside
 * their files, both offsets multiples of unit, a length that is not one
 * only when both ranges end at their EOF, no overlap within one file
 * (same) counted in whole units.  0 or -EINVAL.  The engine target asks
 * them too where its files' unit is not the model's (target_engine.c).
 */
int exchange_range_checks(uint64_t off1, uint64_t size1, uint64_t off2,
			  uint64_t size2, uint64_t len, uint32_t unit, int same);

/* An engine target's pin, or -1 when t is no engine target (the model,
 * the host, a planted bug). */
int engine_target_pin(const struct target *t);
/* The engine target's mounted filesystem (NULL after a failed mount), for
 * inspection commands; t must come from engine_target_new. */
struct ref_fs;
struct ref_fs *engine_target_fs(struct target *t);
/* Its data device (with the crash layer when it takes cuts). */
struct hw_dev;
struct hw_dev *engine_target_dev(struct target *t);
/*
 * A fresh filesystem without the mkfs, for a caller that puts its devices
 * back between runs (the fuzz rigs, fuzz/devtrack.h):
 *   engine_target_format     drops the mounted filesystem (writing
 *                            nothing) and makes the target's filesystem on
 *                            its devices, unmounted; 0 or -errno
 *                            (-EOPNOTSUPP for a kept image: keep_image)
 *   engine_target_formatted  the caller's word that the devices hold now
 *                            exactly what that mkfs left, nothing written
 *                            since: the next reset mounts them as they
 *                            are instead of making the filesystem again.
 *                            Once: set_round with mkfs options of its own
 *                            clears it, and any reset after makes it anew.
 */
int engine_target_format(struct target *t);
void engine_target_formatted(struct target *t);
/*
 * The caller's word that no `cut` op comes (settled, until it says
 * otherwise): the engine's crash layer settles (hw.h: hw_crash_settle)
 * and its writes go straight to the device, unrecorded; a `crash` op
 * still cuts, keeping every write.  Not with a cut armed (-EBUSY).  0
 * for a target that is no engine or takes no cuts.
 */
int engine_target_settle(struct target *t, bool settled);

/*
 * Why t must stay in one process, or NULL: `fsoracle run --jobs` runs
 * its rounds in workers that each open the targets, and a round must be
 * the same whoever runs it.  An engine on a persistent device (file:,
 * pmem:, zbd:, anything with hw.h's HW_CAP_PERSISTENT below its layers)
 * or a host target in a directory it was given would have every worker
 * work on the same bytes; an engine with a faulty layer counts its I/Os
 * across rounds, so which round meets a fault would depend on the worker.
 */
const char *engine_target_alone(const struct target *t);
const char *host_target_alone(const struct target *t);

/*
 * Parse and open a target list.  On success *n targets are in out[].
 * On error nothing is left open, -errno is returned and err holds one line.
 */
int target_list_open(const char *list, const struct target_env *env,
		     struct target **out, int *n, char *err, size_t errlen);
void target_list_close(struct target **t, int n);
/*
 * Engine targets given one device file (by --dev, --rtdev or a log
 * header) each get their own: the path gets a suffix for every engine
 * target after the first (".naive2": the kind and the target's place),
 * and an explicit device two targets both name is refused.  What was
 * suffixed, as one line for the log and the user ("" when nothing).
 */
void target_list_devnote(struct target *const *t, int n, char *buf,
			 size_t len);
/* The list syntax, for --help texts. */
extern const char target_list_help[];

/* Set file names (from a sequence) on a target; NULL = defaults. */
void target_set_names(struct target *t, const struct op_seq *seq);

/*
 * Apply a whole op, splitting pwrite/pread into pieces of at most buflen
 * (and op->bsize) bytes, generating pwrite data with op_fill (opno counts
 * from 1).  pread data is discarded.  Returns what apply would for the
 * whole op.  buf is scratch of buflen bytes.
 */
int64_t target_apply(struct target *t, const struct op *op, uint64_t opno,
		     void *buf, size_t buflen);

/*
 * Make file `file` of dst equal to that of src (existence, size, bytes),
 * through ordinary ops on dst, never asking dst for more space than src
 * holds: src's written ranges are copied, its unwritten ones
 * preallocated, and between them (or everywhere, when src cannot list its
 * ranges) only runs of non-zero 512-byte sectors are written, so holes
 * stay holes.  dst's old contents go first (truncate to 0).  buf is
 * scratch of buflen (>= 8192) bytes.  0 or -errno (-ENOSPC for a short
 * write).
 */
int target_copy_file(struct target *dst, struct target *src, unsigned file,
		     void *buf, size_t buflen);
/*
 * target_copy_file to the n targets dst[] at once, each of src's bytes
 * read once for all of them.  A failure stops the copy for all of them;
 * *failed is then the index in dst[] of the target that failed (0 when
 * reading src did).
 */
int target_copy_file_n(struct target *const *dst, int n, struct target *src,
		       unsigned file, void *buf, size_t buflen, int *failed);
/*
 * Which of the n targets dst[] already hold file `file` as a copy from
 * src (target_copy_file_n) would leave it, in *same (bit i for dst[i]):
 * missing on both, or the same size and bytes and, where both list
 * their ranges, the same written and unwritten ranges (adjacent ones of
 * a kind joined).  src is read once for all of them; a target with a
 * peek is compared in place, one with a view without being copied out.
 * buf is scratch of buflen (>= 8192) bytes, split in two.  0, or -errno
 * (then *same is 0).
 */
int target_same_file_n(struct target *const *dst, int n, struct target *src,
		       unsigned file, void *buf, size_t buflen, uint32_t *same);
/*
 * target_same_file_n, and in the same pass over src the targets in mend
 * (bits of dst[]; each must have a peek and list no ranges, and none is
 * out of room: the model) are made to hold src's file where they do not:
 * their size set first (when both exist), then the 512-byte sectors that
 * differ written.  A target so mended has its bit in *same and in
 * *mended.  On an error *same is 0, and a mended target may be left part
 * way: the caller then copies the file whole.
 */
int target_mend_file_n(struct target *const *dst, int n, struct target *src,
		       unsigned file, void *buf, size_t buflen, uint32_t mend,
		       uint32_t *same, uint32_t *mended);
/* 1 when t's n bytes of file `file` at off, seen through its peek (a
 * hole as zeros), are those of want; else 0. */
int target_peek_same(struct target *t, unsigned file, uint64_t off,
		     const uint8_t *want, size_t n);
/*
 * t's n bytes of file `file` at off compared, through its view (no copy),
 * with those of want (when not NULL) or else with ref's bytes seen
 * through ref's peek: *same is 1 when the view gave all n and every one
 * agreed.  Returns what t's read would (-EOPNOTSUPP: t has no view, or
 * none just now; read instead).
 */
int64_t target_view_same(struct target *t, unsigned file, uint64_t off,
			 size_t n, const uint8_t *want, struct target *ref,
			 int *same);
/*
 * A look at t's n bytes of file `file` at off, copied into buf: what its
 * read returns, taken through its view where it has one (an engine's
 * then leaves its page cache as it was: ref_pview), else its read.  For
 * the checker's own reads (copies and comparisons), never an op's.
 */
int64_t target_look(struct target *t, unsigned file, uint64_t off,
		    void *buf, size_t n);
/*
 * Make bytes [from, to) of file `file` of dst read as src's by writing
 * only where the two differ (runs of 512-byte sectors), after cutting
 * dst down to src's size when it is longer, and its size src's: what a
 * full device can still do, since dst keeps its layout.  Bytes outside
 * the span are left as they are (0, UINT64_MAX: the whole file).  A file
 * that exists on one of them only is copied whole.  buf is scratch of
 * buflen (>= 8192) bytes, split in two.  0 or -errno (-ENOSPC for a
 * short write).
 */
int target_match_file(struct target *dst, struct target *src, unsigned file,
		      uint64_t from, uint64_t to, void *buf, size_t buflen);
/* Empty file `file` of dst (truncate to 0) when it exists: what a copy
 * does first, for callers that free every file's space before copying
 * any.  0 or -errno. */
int target_clear_file(struct target *dst, unsigned file);

/* Names of the set bits of an unsupported mask, "fcollapse finsert ...". */
void target_kinds_str(uint64_t mask, char *buf, size_t len);

#endif
