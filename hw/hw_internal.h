/*
 * hw_internal.h - what backends share with hw.c and nobody else needs:
 * the backend table entry, the spec option parser, and helpers for
 * error lines, device setup and the generic zero-out.
 *
 * A spec is "KIND:BODY".  hw.c splits off KIND, finds the backend, and
 * parses BODY as
 *
 *     FIRST[,key=value]...
 *
 * FIRST means what the backend says it means (a size for null: and mem:,
 * a path for file:, pmem: and zbd:, a backing kind for zoned:).  Keys are
 * checked against the backend's list, so a backend only ever sees options
 * it declared, each at most once.  Commas cannot appear inside FIRST or a
 * value; paths with commas are not supported.
 */
#ifndef FSORACLE_HW_INTERNAL_H
#define FSORACLE_HW_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/hw.h"

#define HW_BLOCK    4096u   /* device sizes are multiples of this      */
#define HW_SPEC_MAX 4096    /* longest spec hw_open() accepts, with NUL */
#define HW_OPTS_MAX 16      /* most key=value options in one spec      */

/* Every flag hw_write() and hw_zero_out() accept; the rest are -EINVAL. */
#define HW_IO_FLAGS (HW_FUA | HW_META)

struct hw_opt {
	const char *key;
	const char *val;
};

/* A parsed spec body.  All strings point into buf. */
struct hw_opts {
	const char *spec;      /* the whole spec, for error lines        */
	const char *usage;     /* the backend's grammar, e.g. "mem:SIZE" */
	const char *first;     /* the field before the first comma, or "" */
	unsigned nopts;
	struct hw_opt opt[HW_OPTS_MAX];
	char buf[HW_SPEC_MAX];
};

/*
 * One entry of hw.c's backend table.  open() builds the device, fills
 * ops and geo with hw_dev_init(), and on error writes one line to err;
 * hw.c records the spec afterwards.  Backends must honour HW_FUA in
 * write() themselves (the flag is passed through) so that layers can
 * model exactly which write became durable.
 */
struct hw_backend {
	const char *kind;               /* "mem"                          */
	const char *usage;              /* "mem:SIZE"                     */
	const char *const *keys;        /* accepted keys, NULL-terminated */
	int (*open)(const struct hw_opts *o, struct hw_dev **out,
		    char *err, size_t errlen);
};

extern const struct hw_backend hw_null_backend;
extern const struct hw_backend hw_mem_backend;
extern const struct hw_backend hw_file_backend;
extern const struct hw_backend hw_pmem_backend;
extern const struct hw_backend hw_zoned_backend;
extern const struct hw_backend hw_zbd_backend;

/* Write "hw: <message>" to err (if any room) and return rc. */
int hw_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Parse body ("FIRST,key=value,...") of spec for backend be into o.
 * Rejects empty options, options without '=', empty keys or values,
 * keys be does not accept, and repeated keys, with -EINVAL and a line
 * naming the option and the spec.
 */
int hw_opts_parse(struct hw_opts *o, const struct hw_backend *be,
		  const char *spec, const char *body, char *err, size_t errlen);

/* The value of key, or NULL if the spec did not give it. */
const char *hw_opts_get(const struct hw_opts *o, const char *key);

/*
 * Parse s (a size with optional k/m/g/t suffix) as the option called
 * what.  A NULL or empty s is reported as missing.
 */
int hw_opts_number(const struct hw_opts *o, const char *what, const char *s,
		   uint64_t *out, char *err, size_t errlen);

/* hw_opts_number(), and the result must be > 0 and a multiple of 4096. */
int hw_opts_dev_size(const struct hw_opts *o, const char *what, const char *s,
		     uint64_t *out, char *err, size_t errlen);

/* Fill the common head: block-device geometry, zero counters, no spec. */
void hw_dev_init(struct hw_dev *dev, const struct hw_ops *ops, uint64_t size,
		 uint32_t caps);

/*
 * Parse an optional count or size option (a number with optional
 * k/m/g/t suffix): *out = def if the spec does not give key.
 */
int hw_opts_u32(const struct hw_opts *o, const char *key, uint32_t def,
		uint32_t *out, char *err, size_t errlen);
int hw_opts_u64(const struct hw_opts *o, const char *key, uint64_t def,
		uint64_t *out, char *err, size_t errlen);

/*
 * The array arr of *cap elements of elem bytes with room for element n:
 * arr itself, or a copy twice as large (from 64), or NULL when out of
 * memory (arr untouched).
 */
void *hw_grow(void *arr, size_t *cap, size_t n, size_t elem);

/*
 * An arena of byte buffers that are all freed at once (arena.c): the
 * crash layer's record bytes.  Zeroed it is empty.  hw_arena_alloc
 * returns NULL when memory or the arena's limit (HW_ARENA_MAX bytes of
 * blocks) runs out: malloc instead; hw_arena_reset drops every
 * allocation (keeping one block), hw_arena_free everything.
 */
#define HW_ARENA_MAX ((size_t)32 << 20)
struct hw_arena_block;
struct hw_arena {
	struct hw_arena_block *head;   /* the block allocations come from */
	size_t total;                  /* bytes in all blocks             */
};
void *hw_arena_alloc(struct hw_arena *a, size_t len);
void hw_arena_reset(struct hw_arena *a);
void hw_arena_free(struct hw_arena *a);

/*
 * Zero [off, off + len) by writing zero buffers through dev->ops->write,
 * then flush if flags has HW_FUA.  The fallback for backends without a
 * cheaper way; bypasses the counters (the caller counts one zero-out).
 */
int hw_zero_out_by_writes(struct hw_dev *dev, uint64_t off, uint64_t len,
			  unsigned flags);

/*
 * ---- Layers ---------------------------------------------------------
 *
 * A layer spec is "KIND[OPTIONS]:LOWER".  hw.c opens LOWER with
 * hw_open() (its commas and colons untouched), parses OPTIONS against
 * the layer's keys (a bare key, e.g. "sticky", reads as ""), and hands
 * both to open(), which wraps the lower device and owns it from then on
 * (on error hw.c closes it).  Every layer embeds struct hw_layer first;
 * layer.c has pass-through ops a layer uses for what it leaves alone.
 */
struct hw_layer {
	struct hw_dev dev;
	struct hw_dev *lower;
};

struct hw_layer_kind {
	const char *kind;               /* "crash"                        */
	const char *usage;              /* "crash[atomic=N]:SPEC"         */
	const char *const *keys;        /* accepted keys, NULL-terminated */
	const struct hw_ops *ops;       /* identifies the layer in a stack */
	int (*open)(const struct hw_opts *o, struct hw_dev *lower,
		    struct hw_dev **out, char *err, size_t errlen);
};

extern const struct hw_layer_kind hw_crash_layer;
extern const struct hw_layer_kind hw_faulty_layer;
extern const struct hw_layer_kind hw_log_layer;

/* The topmost device in dev's stack whose ops are ops, or NULL. */
struct hw_dev *hw_layer_find(struct hw_dev *dev, const struct hw_ops *ops);
/* Fill the head of a layer: ops, the lower device's geometry. */
void hw_layer_init(struct hw_layer *l, const struct hw_ops *ops,
		   struct hw_dev *lower);

/* Pass-through ops: each forwards to the lower device's public call. */
int hw_layer_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len);
const void *hw_layer_view(struct hw_dev *dev, uint64_t off, size_t len);
int hw_layer_write(struct hw_dev *dev, uint64_t off, const void *buf,
		   size_t len, unsigned flags);
int hw_layer_flush(struct hw_dev *dev);
int hw_layer_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
		      unsigned flags);
int hw_layer_discard(struct hw_dev *dev, uint64_t off, uint64_t len);
int hw_layer_persist(struct hw_dev *dev, uint64_t off, uint64_t len);
int hw_layer_report_zones(struct hw_dev *dev, uint64_t first_zone,
			  struct hw_zone *zones, unsigned *nr);
int hw_layer_zone_mgmt(struct hw_dev *dev, enum hw_zone_op op, uint64_t zone);
int hw_layer_zone_append(struct hw_dev *dev, uint64_t zone, const void *buf,
			 size_t len, unsigned flags, uint64_t *written_off);
/* "NAME over <the lower device's description>". */
int hw_layer_describe(struct hw_dev *dev, char *buf, size_t len);
/* Close the lower device and free the layer (the struct it heads). */
void hw_layer_destroy(struct hw_dev *dev);

/*
 * ---- The zone model (zone_model.c) ----------------------------------
 *
 * ZBC / ZNS rules over a plain byte store (a mem: or file: device the
 * model owns).  zoned.c builds the store from a spec and, for files,
 * keeps the zone state across runs through save().
 */
struct hw_zone_cfg {
	uint64_t size;          /* bytes, a whole number of zones            */
	uint64_t zone_size;
	uint64_t capacity;      /* of every sequential zone, <= zone_size    */
	uint32_t nr_conv;
	uint32_t max_open;      /* 0 = no limit                              */
	uint32_t max_active;    /* 0 = no limit                              */
	uint32_t max_append;    /* bytes, 0 = the capacity                   */
	uint32_t nr_readonly;   /* read-only zones, before the offline ones  */
	uint32_t nr_offline;    /* offline zones, at the end of the device   */
};

/* What survives a power cycle of one zone. */
struct hw_zone_state {
	uint64_t wp;            /* absolute bytes                            */
	uint8_t cond;           /* enum hw_zone_cond                         */
};

/*
 * Make the state of the zones flagged in which[] durable.  Called for
 * every changed zone once the store is synced (flush, an HW_FUA write,
 * a cut, close), and for one zone at its reset or finish.
 */
typedef int (*hw_zone_save_fn)(void *arg, const struct hw_zone_state *st,
			       const uint8_t *which, uint64_t nr_zones);

/*
 * Check cfg and fill in its defaults (limits at or above the number of
 * sequential zones mean none, max_open is capped at max_active, and
 * max_append defaults to and is capped at the capacity, as null_blk
 * does).  -EINVAL with a line naming what is wrong.
 */
int hw_zone_cfg_check(struct hw_zone_cfg *cfg, const char *spec,
		      char *err, size_t errlen);

/*
 * Build the model over store (taken over, closed on error too).  saved
 * is the state of every zone from an earlier run, or NULL for a new
 * device; open zones in it come back closed, as after a power cycle,
 * and a state that breaks a zone rule is -EUCLEAN.  release(arg) runs
 * when the device is closed (or at once if this fails).
 */
int hw_zoned_new(const struct hw_zone_cfg *cfg, struct hw_dev *store,
		 const struct hw_zone_state *saved, const char *what,
		 hw_zone_save_fn save, void (*release)(void *arg), void *arg,
		 struct hw_dev **out, char *err, size_t errlen);

/*
 * For the crash layer, on the zone model at the bottom of dev's stack
 * (-EOPNOTSUPP elsewhere, real zoned hardware included): move a
 * sequential zone's write pointer back to wp (what survived a cut), and
 * close every open zone as a power cycle does.
 */
int hw_zoned_rewind(struct hw_dev *dev, uint64_t zone, uint64_t wp);
int hw_zoned_power_cycle(struct hw_dev *dev);
/*
 * Undo a zone reset the media never saw: sequential zone `zone` holds
 * len bytes of data from its start again, its write pointer after them,
 * closed (EMPTY with none, FULL at the capacity).  Below the open and
 * active limits: the state it restores held them before the reset.
 */
int hw_zoned_restore(struct hw_dev *dev, uint64_t zone, const void *data,
		     uint64_t len);
/* Is the zone model at the bottom of dev's stack (rewind and restore)? */
bool hw_zoned_emulated(struct hw_dev *dev);

#endif
