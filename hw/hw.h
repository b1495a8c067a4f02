/*
 * hw.h - the device interface of fsoracle.
 *
 * Every storage backend (null, mem, file, pmem, zoned, zbd) and every
 * stacking layer (crash, faulty, log) is an hw_dev behind one vtable.
 * The engine (ref/) sees nothing else of its environment.  hw/ knows nothing
 * of filesystems: it moves bytes, flushes caches and reports geometry.
 *
 * Conventions:
 *   - offsets and lengths are in bytes; every call returns 0 or a negative
 *     errno (-EINVAL, -EIO, -ENOSPC, ...), never -1;
 *   - a write is volatile until a flush (or a write with HW_FUA) returns;
 *     backends without a volatile cache simply have nothing to do at flush;
 *   - HW_META tags metadata I/O (Linux's REQ_META): the null backend keeps
 *     META writes so a metadata-only run can mount what it formatted, and
 *     drops everything else.
 */
#ifndef FSORACLE_HW_H
#define FSORACLE_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hw_dev;

/* Write flags. */
#define HW_FUA   (1u << 0) /* durable when the call returns (write + flush) */
#define HW_META  (1u << 1) /* metadata I/O (kept by null:, priority hint)   */

/* Capability flags, from hw_caps(). */
#define HW_CAP_STORES_DATA (1u << 0) /* reads return what was written      */
#define HW_CAP_PERSISTENT  (1u << 1) /* contents outlive the process       */
#define HW_CAP_VOLATILE    (1u << 2) /* has a write cache: flush matters   */
#define HW_CAP_BYTE_ADDR   (1u << 3) /* pmem: byte-addressable persist     */
#define HW_CAP_ZONED       (1u << 4) /* has sequential-write zones         */
#define HW_CAP_DISCARD     (1u << 5) /* discard is meaningful              */
#define HW_CAP_ZERO_FREES  (1u << 6) /* zero-out hands the memory back     */
                                     /* (mem:'s madvise; never a layer's)  */

struct hw_geometry {
	uint64_t size;          /* bytes                                      */
	uint32_t sector_size;   /* smallest addressable unit, bytes (512)     */
	uint32_t atomic_write;  /* bytes written atomically at a power cut    */
	uint32_t caps;          /* HW_CAP_*                                   */
	/* zoned devices only (HW_CAP_ZONED), else 0 */
	uint64_t zone_size;     /* bytes per zone (all zones alike)           */
	uint64_t nr_zones;
	uint32_t nr_conv;       /* conventional zones, numbered first         */
	uint32_t max_open;      /* open zone limit, 0 = none                  */
	uint32_t max_active;    /* active (open + closed) limit, 0 = none     */
	uint32_t max_append;    /* largest zone append, bytes                 */
};

/*
 * Zones, with the semantics of ZBC/ZAC and NVMe ZNS.  Conventional zones
 * take writes anywhere; sequential-write-required zones only at the write
 * pointer, up to the zone's capacity (which may be below its size).
 */
enum hw_zone_type { HW_ZONE_CONV = 1, HW_ZONE_SEQ = 2 };
enum hw_zone_cond {
	HW_ZC_NOT_WP = 0,   /* conventional                                */
	HW_ZC_EMPTY,
	HW_ZC_IMP_OPEN,     /* opened by a write                           */
	HW_ZC_EXP_OPEN,     /* opened by HW_ZONE_OPEN                      */
	HW_ZC_CLOSED,
	HW_ZC_FULL,
	HW_ZC_READONLY,
	HW_ZC_OFFLINE,
};
enum hw_zone_op { HW_ZONE_RESET = 1, HW_ZONE_OPEN, HW_ZONE_CLOSE,
		  HW_ZONE_FINISH };

struct hw_zone {
	uint64_t start;     /* bytes */
	uint64_t len;       /* zone size, bytes */
	uint64_t capacity;  /* writable bytes from start */
	uint64_t wp;        /* write pointer, absolute bytes (start..start+cap) */
	uint8_t  type;      /* enum hw_zone_type */
	uint8_t  cond;      /* enum hw_zone_cond */
};

/* Per-device I/O counters; deterministic, reset by hw_reset_counters(). */
struct hw_counters {
	uint64_t reads, bytes_read;
	uint64_t writes, bytes_written;
	uint64_t meta_writes, meta_bytes_written;
	uint64_t flushes, fua_writes;
	uint64_t zeroouts, bytes_zeroed;
	uint64_t discards, bytes_discarded;
	uint64_t persists, bytes_persisted;
	uint64_t zone_appends, zone_resets, zone_finishes;
};

/*
 * The vtable.  Backends and layers fill what they support; hw.c checks
 * ranges and alignment before calling in, so implementations may assume
 * off + len <= size.  NULL zero_out/discard fall back to generic code.
 */
struct hw_ops {
	const char *name;
	int  (*read)(struct hw_dev *dev, uint64_t off, void *buf, size_t len);
	/* hw_view: the bytes in place, or NULL to be read instead */
	const void *(*view)(struct hw_dev *dev, uint64_t off, size_t len);
	int  (*write)(struct hw_dev *dev, uint64_t off, const void *buf,
		      size_t len, unsigned flags);
	int  (*flush)(struct hw_dev *dev);
	int  (*zero_out)(struct hw_dev *dev, uint64_t off, uint64_t len,
			 unsigned flags);
	int  (*discard)(struct hw_dev *dev, uint64_t off, uint64_t len);
	void (*destroy)(struct hw_dev *dev);

	/*
	 * Byte-addressable persistence (HW_CAP_BYTE_ADDR devices; NULL
	 * elsewhere, where hw_persist() falls back to flush).  A write to
	 * such a device is a store: visible at once, durable only once a
	 * persist covering it returns (flush of the range + fence).  Stores
	 * are atomic only at geo.atomic_write granularity (8 for pmem).
	 */
	int  (*persist)(struct hw_dev *dev, uint64_t off, uint64_t len);

	/* Zoned devices (HW_CAP_ZONED; NULL elsewhere: -EOPNOTSUPP). */
	int  (*report_zones)(struct hw_dev *dev, uint64_t first_zone,
			     struct hw_zone *zones, unsigned *nr);
	int  (*zone_mgmt)(struct hw_dev *dev, enum hw_zone_op op,
			  uint64_t zone);
	int  (*zone_append)(struct hw_dev *dev, uint64_t zone,
			    const void *buf, size_t len, unsigned flags,
			    uint64_t *written_off);

	/*
	 * One line on what the device really is, for --help style output
	 * and logs (pmem: the store granularity libpmem2 gave, and whether
	 * persistence is real or emulated).  NULL: hw_describe() writes the
	 * backend name and size.
	 */
	int  (*describe)(struct hw_dev *dev, char *buf, size_t len);
	void *reserved[3];
};

/* The common head of every device; backends embed it first. */
struct hw_dev {
	const struct hw_ops *ops;
	struct hw_geometry geo;
	struct hw_counters ctr;
	char spec[256];          /* the spec string it was opened with */
};

/*
 * Open a device from a spec string:
 *   null:SIZE                       stores META writes only, reads zeros
 *   mem:SIZE                        RAM (sparse: untouched pages cost nothing)
 *   file:PATH[,size=SIZE]           an image file; size= creates or grows it
 *   pmem:PATH[,size=SIZE]           PATH mapped with libpmem2: writes are
 *                                   stores, hw_persist() makes them durable
 *   zoned:mem,size=SIZE[,ZONEOPTS]  emulated zoned device in RAM
 *   zoned:null,size=SIZE[,ZONEOPTS] the same zone rules over null: (data
 *                                   dropped, reads zeros): counting runs
 *   zoned:file,path=PATH[,size=SIZE][,ZONEOPTS]
 *                                   emulated zoned device in an image file,
 *                                   zone state kept in PATH.zones
 *   zbd:PATH                        a real zoned block device (libzbd)
 * ZONEOPTS (null_blk's names): zone=SIZE (default 256m), cap=SIZE (zone
 * capacity, default zone), conv=N, append_max=SIZE, max_open=N,
 * max_active=N (0 = no limit), readonly=N, offline=N (the last zones).
 *
 * Layers stack on any spec, options in brackets:
 *   crash[atomic=N]:SPEC            keeps writes not yet durable so that
 *                                   hw_crash_cut() can drop or tear them
 *   faulty[read=N,write=N,flush=N,zone=N,off=OFF,len=LEN,sticky]:SPEC
 *                                   fails chosen I/Os with -EIO
 *   log:SPEC                        records writes, flushes and marks for
 *                                   hw_log_replay()
 * e.g. "log:crash:pmem:/tmp/p,size=64m", "faulty[write=5,sticky]:mem:1m".
 * SIZE takes k/m/g/t suffixes (powers of 1024) and must be a multiple of
 * 4096.  On error returns -errno and writes one line to err (if non-NULL).
 */
int hw_open(const char *spec, struct hw_dev **out, char *err, size_t errlen);
/*
 * Where spec names a host path (file:PATH, pmem:PATH, zbd:PATH,
 * zoned:file,path=PATH, under any layers): 1 with the path's place in
 * spec at [*off, *off + *len), else 0 (mem:, null:, zoned:mem, ...).
 * Two engines given one such spec would share the device.
 */
int hw_spec_path(const char *spec, size_t *off, size_t *len);
/*
 * 0 when a realtime device spec rt names another host file than the data
 * device spec dev (hw_spec_path's paths: the same file once they exist,
 * else the same path), else -EINVAL with one line in err: a filesystem
 * whose realtime device is its data device's file writes one over the
 * other.
 */
int hw_spec_apart(const char *dev, const char *rt, char *err, size_t errlen);
/* The device a layer stacks on; NULL when dev is a backend. */
struct hw_dev *hw_layer_lower(struct hw_dev *dev);
void hw_close(struct hw_dev *dev);

int hw_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len);
/*
 * A read without the copy: the device's bytes of [off, off + len) where
 * they are (a mapping), valid until the next call that writes, zeroes,
 * discards or resets any of the device, counted as a read; NULL when the
 * device cannot show them in place (a backend without a mapping, a layer
 * that must see each read, like faulty:, or a range not all written),
 * and the caller reads them instead.
 */
const void *hw_view(struct hw_dev *dev, uint64_t off, size_t len);
int hw_write(struct hw_dev *dev, uint64_t off, const void *buf, size_t len,
	     unsigned flags);
int hw_flush(struct hw_dev *dev);
int hw_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len, unsigned flags);
int hw_discard(struct hw_dev *dev, uint64_t off, uint64_t len);

static inline uint64_t hw_size(const struct hw_dev *dev) { return dev->geo.size; }
static inline uint32_t hw_caps(const struct hw_dev *dev) { return dev->geo.caps; }
static inline const char *hw_spec(const struct hw_dev *dev) { return dev->spec; }
void hw_reset_counters(struct hw_dev *dev);

/* Persistence: durable [off, off+len) (pmem: flush + drain; else flush). */
int hw_persist(struct hw_dev *dev, uint64_t off, uint64_t len);

/*
 * Zone operations (-EOPNOTSUPP on devices without zones).  Errors follow
 * the kernel's: a write not at the write pointer, past the capacity, into
 * a full/read-only/offline zone, or over the open/active limits is -EIO
 * (unaligned or out-of-range arguments -EINVAL); an append longer than
 * max_append is -EINVAL.  report fills up to *nr zones from first_zone and
 * sets *nr to how many it filled.
 */
int hw_report_zones(struct hw_dev *dev, uint64_t first_zone,
		    struct hw_zone *zones, unsigned *nr);
int hw_zone_mgmt(struct hw_dev *dev, enum hw_zone_op op, uint64_t zone);
int hw_zone_append(struct hw_dev *dev, uint64_t zone, const void *buf,
		   size_t len, unsigned flags, uint64_t *written_off);

/* Parse "64m", "1g", "4096", "0x1000" (k/m/g/t = 2^10..2^40). */
int hw_parse_size(const char *s, uint64_t *out);

/* One line describing dev (what is real, what is emulated). */
int hw_describe(struct hw_dev *dev, char *buf, size_t len);

/* The device and layer grammar, several lines, for a program's --help. */
const char *hw_devices_help(void);

/*
 * ---- The crash layer ------------------------------------------------
 *
 * "crash:SPEC" passes every I/O to SPEC at once and remembers each write
 * that is not durable yet, with the bytes it replaced.  A write becomes
 * durable at a flush (every write before it), as an HW_FUA write (that
 * write), or under hw_persist() (the bytes in the range: pmem's flush +
 * fence).  In a sequential zone a durable write makes the zone's earlier
 * writes durable too, and zone finish makes the whole zone durable;
 * zone reset and finish are durable when they return.
 *
 * hw_crash_cut() is the power cut: pending writes survive or vanish as
 * the cut chooses, and a write that is torn survives in part, in whole
 * atomic units (geo.atomic_write: 512-byte sectors on block devices,
 * 8-byte words on pmem; crash[atomic=N] overrides).  Afterwards the
 * device holds exactly the crash image (open zones closed, write
 * pointers rewound to what survived) and runs on from there, so the
 * caller remounts on the same handle.  The functions below find the
 * crash layer anywhere in a stack ("log:crash:mem:1m" works) and
 * return -EINVAL if there is none.
 */
enum hw_cut_kind {
	HW_CUT_DROP_ALL = 0, /* only durable writes survive (the default)    */
	HW_CUT_KEEP_ALL,     /* every write survives                         */
	HW_CUT_PREFIX,       /* the first n pending writes survive           */
	HW_CUT_MARK,         /* pending writes issued before mark n survive  */
	HW_CUT_RANDOM,       /* each pending write survives by a coin (seed) */
	HW_CUT_MASK,         /* pending write i survives iff mask bit i      */
};

enum hw_tear {
	HW_TEAR_NONE = 0,    /* a dropped write vanishes whole               */
	HW_TEAR_SEED,        /* each atomic unit survives by a coin (seed)   */
	HW_TEAR_UNITS,       /* the write's first `units` atomic units survive */
};

/*
 * A cut.  Zero is "drop everything not durable, tear nothing".  Tearing
 * applies to the writes the cut drops: for PREFIX and MARK only to the
 * first of them (the write in flight when the power failed), for the
 * other kinds to every one.  Pending writes are numbered 0.. in issue
 * order (hw_crash_pending() of them); mask bit i is byte i / 8, bit
 * i % 8, and bits at or past mask_bits count as 0.
 */
struct hw_cut {
	enum hw_cut_kind kind;
	uint64_t n;             /* PREFIX: how many; MARK: a hw_crash_mark() */
	uint64_t seed;          /* RANDOM and HW_TEAR_SEED                   */
	const uint8_t *mask;    /* MASK                                      */
	uint64_t mask_bits;
	enum hw_tear tear;
	uint64_t units;         /* HW_TEAR_UNITS                             */
	bool relative;          /* RANDOM and HW_TEAR_SEED draw by a write's
				   place from the oldest pending one, not its
				   number since the device opened: the same
				   ops cut alike on a fresh device           */
};

struct hw_crash_info {
	uint64_t pending;        /* writes a cut may drop                    */
	uint64_t pending_bytes;
	uint64_t next_mark;      /* what hw_crash_mark() returns now         */
	uint64_t durable_points; /* flushes, FUA writes and persists so far  */
	uint64_t cuts;
	uint32_t atomic;         /* bytes a power cut never tears            */
	uint64_t plan_points;    /* points issued since hw_crash_set_plan()  */
	bool power_off;          /* the plan's power failure has happened    */
	uint64_t lost;           /* I/Os issued since then (none reach media) */
	uint32_t devices;        /* in the power domain (hw_crash_join), >= 1 */
	bool settled;            /* under hw_crash_settle()                   */
	uint64_t held_bytes;     /* bytes the records keep: what each write
				    still recorded replaced, and what a cut
				    has read back of what it wrote (until
				    then that stays on the device)           */
};

/*
 * A plan for the coming durability points (flushes, FUA writes and
 * persists, numbered 1, 2, ... from hw_crash_set_plan(); NULL clears it):
 *
 *   fail_at      the power fails at this point (0: never): right after it
 *                completes, or with fail_before instead of it (a FUA
 *                write is then in flight: written, pending, tearable).
 *                The device runs on for the caller, so the operation in
 *                progress finishes, but nothing more reaches the media:
 *                every later write is lost at the next cut whatever the
 *                cut keeps, and flushes and persists do nothing.  That
 *                cut ends the failure and the plan; cuts before fail_at
 *                leave the plan counting.
 *   lie_from,    points lie_from .. lie_from + lie_count - 1 are
 *   lie_count    acknowledged without making anything durable: a device
 *                that lies about its cache, for checks that must fail.
 *
 * On zoned devices only over the zone model (zoned:mem, zoned:file):
 * a zone reset or finish issued after the failure must be undone at the
 * cut, which real hardware (zbd:) cannot do (-EOPNOTSUPP).
 */
struct hw_crash_plan {
	uint64_t fail_at;
	bool fail_before;
	uint64_t lie_from, lie_count;
};

int hw_crash_cut(struct hw_dev *dev, const struct hw_cut *cut);
int hw_crash_set_plan(struct hw_dev *dev, const struct hw_crash_plan *plan);

/*
 * One power domain for the crash layers of a and b (a filesystem's data
 * and realtime devices: one machine, one power supply).  From then on
 * they share one plan and one numbering of writes and durability points
 * in issue order, whichever device takes them: a plan set through
 * either fails the power on both at the group's point, and a cut
 * through either decides every pending write of both (PREFIX, MARK and
 * MASK count them in that order, RANDOM's coins are keyed by it) and
 * rebuilds both devices.  hw_crash_pending() and hw_crash_info()'s
 * pending counts stay per device.  Join before any write is pending and
 * with no plan set (-EBUSY otherwise); a closed device leaves its group.
 */
int hw_crash_join(struct hw_dev *a, struct hw_dev *b);
/* Pending writes (>= 0), or -EINVAL without a crash layer. */
int64_t hw_crash_pending(struct hw_dev *dev);
/*
 * settled: the caller will cut dev's power domain no more, or only
 * keeping every write (HW_CUT_KEEP_ALL), until it says otherwise.  Every
 * pending write is then as durable as a keep-all cut would leave it (no
 * record is left) and from then on the layer records nothing and counts
 * no point: writes, flushes, persists and zone commands go straight to
 * the device below, which is most of the layer's cost spared (the bytes
 * each write replaced, read and kept).  A cut that could drop a write,
 * or a plan, is -EBUSY while settled; settling with a plan set or the
 * power off is -EBUSY.  !settled records again from the next write on.
 * Joined domains (hw_crash_join) must not be settled.  -EINVAL without a
 * crash layer.
 */
int hw_crash_settle(struct hw_dev *dev, bool settled);
/*
 * With no write pending, give back the memory the layer keeps for the
 * bytes of its records (the next write takes it again); -EBUSY with
 * writes pending, -EINVAL without a crash layer.
 */
int hw_crash_trim(struct hw_dev *dev);
/* A mark for HW_CUT_MARK: writes issued from now on come after it. */
int64_t hw_crash_mark(struct hw_dev *dev);
int hw_crash_info(struct hw_dev *dev, struct hw_crash_info *out);
/*
 * Whether the power of dev's domain has failed under its plan (1) or not
 * (0), and in *lost (unless NULL) the I/Os issued since; -EINVAL without
 * a crash layer.  hw_crash_info() says the same but walks the records to
 * count them; this does not, for a caller that asks after every op while
 * a plan is armed (the records of a long run without a flush are many).
 */
int hw_crash_power_off(struct hw_dev *dev, uint64_t *lost);

/*
 * ---- The faulty layer -----------------------------------------------
 *
 * "faulty[...]:SPEC" fails chosen I/Os before they reach SPEC (a failed
 * write changes nothing).  Each armed fault counts the I/Os it matches
 * and fires at the nth one: once, or, if sticky, at that one and every
 * later one.  The spec's write=N, read=N, flush=N, zone=N arm one each;
 * off=,len= restrict them (alone they arm "first read or write
 * touching the range"); sticky applies to all of them.
 */
#define HW_FAULT_READ  (1u << 0)
#define HW_FAULT_WRITE (1u << 1) /* writes, zero-outs, zone appends       */
#define HW_FAULT_FLUSH (1u << 2) /* flushes and persists                  */
#define HW_FAULT_ZONE  (1u << 3) /* zone management: open, close, finish,
				    reset (never by ops 0)                */

struct hw_fault {
	unsigned ops;      /* HW_FAULT_*; 0 means reads and writes            */
	uint64_t nth;      /* fire at the nth matching I/O from arming (0 = 1) */
	uint64_t off, len; /* only I/Os touching [off, off+len); len 0 = any;
			      a flush matches every range                     */
	int error;         /* what the I/O returns; 0 means -EIO              */
	bool sticky;       /* also fail every later matching I/O              */
};

#define HW_FAULTS_MAX 8

/* Arm a fault: returns its id (>= 0), -ENOSPC when HW_FAULTS_MAX are armed. */
int hw_fault_arm(struct hw_dev *dev, const struct hw_fault *fault);
/* Disarm fault id, or every fault for id < 0. */
int hw_fault_disarm(struct hw_dev *dev, int id);
/* I/Os failed so far by the faulty layer (>= 0), or -EINVAL. */
int64_t hw_fault_fired(struct hw_dev *dev);

/*
 * ---- The log layer --------------------------------------------------
 *
 * "log:SPEC" records, in memory and in order, every write (with its data
 * and flags), zero-out, discard, flush, persist and zone reset / open /
 * close / finish that SPEC completed, and marks added by the caller, as
 * dm-log-writes does.  A zone append is recorded as the write it became.
 * hw_log_replay() applies the entries before mark `mark` (HW_LOG_END:
 * all of them) to target through the public calls, so target can be any
 * device at least as large, a crash layer included.
 */
#define HW_LOG_END UINT64_MAX

struct hw_log_info {
	uint64_t entries;  /* recorded I/Os, marks excluded */
	uint64_t marks;
	uint64_t bytes;    /* data held in memory            */
};

/* Add a mark (label may be NULL); returns its number, 0 for the first. */
int64_t hw_log_mark(struct hw_dev *dev, const char *label);
/* The number of the first mark labelled label, or -ENOENT. */
int64_t hw_log_find(struct hw_dev *dev, const char *label);
int hw_log_replay(struct hw_dev *logdev, struct hw_dev *target, uint64_t mark);
int hw_log_info(struct hw_dev *dev, struct hw_log_info *out);

/*
 * ---- Workers ----------------------------------------------------------
 *
 * A pool of n threads (1..64) that runs job(arg, i, worker) for every i
 * in [0, n), worker the thread's number (0..n-1), and returns when all
 * have returned (hw_workers_run; the jobs'
 * writes happen before it returns).  The engine's compressed writeback
 * hands it chunks to compress (ref_mount_opts.workers).
 */
struct hw_workers;

int hw_workers_start(unsigned n, struct hw_workers **out);
void hw_workers_run(struct hw_workers *w,
		    void (*job)(void *arg, unsigned i, unsigned worker),
		    void *arg, unsigned n);
/* The same in two halves: start the batch, return at once; wait for it.
 * A submit waits for the batch before it. */
void hw_workers_submit(struct hw_workers *w,
		       void (*job)(void *arg, unsigned i, unsigned worker),
		       void *arg, unsigned n);
void hw_workers_wait(struct hw_workers *w);
void hw_workers_stop(struct hw_workers *w);

#endif
