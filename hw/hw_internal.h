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
 * Zero [off, off + len) by writing zero buffers through dev->ops->write,
 * then flush if flags has HW_FUA.  The fallback for backends without a
 * cheaper way; bypasses the counters (the caller counts one zero-out).
 */
int hw_zero_out_by_writes(struct hw_dev *dev, uint64_t off, uint64_t len,
			  unsigned flags);

#endif
