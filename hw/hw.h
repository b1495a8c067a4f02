/*
 * hw.h - the device interface of fsoracle.
 *
 * Every storage backend (null, mem, file; later pmem, zoned, zbd) and every
 * stacking layer (later crash, faulty, log) is an hw_dev behind one vtable.
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
	void *reserved[4];
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
 * SIZE takes k/m/g/t suffixes (powers of 1024) and must be a multiple of
 * 4096.  On error returns -errno and writes one line to err (if non-NULL).
 */
int hw_open(const char *spec, struct hw_dev **out, char *err, size_t errlen);
void hw_close(struct hw_dev *dev);

int hw_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len);
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

#endif
