/*
 * runopts.h - the options every command that runs op sequences on
 * targets shares (replay, minimize, run; later the fuzz and property
 * drivers): which targets, on which devices with which mkfs/mount
 * options, how the binary form is clamped, how often to verify.
 *
 * Precedence: a command-line option, else the log's `#! fsoracle` header,
 * else the default.
 */
#ifndef FSORACLE_HARNESS_RUNOPTS_H
#define FSORACLE_HARNESS_RUNOPTS_H

#include <stddef.h>

#include "harness/binary.h"
#include "harness/check.h"
#include "harness/load.h"
#include "harness/op.h"
#include "harness/target.h"

#define RUNOPTS_DEFAULT_TARGETS "engine,model"
#define RUNOPTS_DEFAULT_DEV "mem:64m"

struct runopts {
	const char *targets;     /* NULL: header, else the default          */
	const char *dev, *rtdev, *mkfs, *mount;
	int keep_image;          /* --keep-image                              */
	enum op_form form;
	struct op_geom geom;     /* binary decoding                          */
	struct check_cfg check;
};

/* The help text for these options. */
extern const char runopts_help[];

void runopts_init(struct runopts *o);

/*
 * If argv[*i] is one of ours, consume it (and its value) and return 1;
 * return 0 if it is not ours; -EINVAL with err for a bad value.
 * Accepts "--opt VALUE" and "--opt=VALUE".
 */
int runopts_parse(struct runopts *o, int argc, char **argv, int *i,
		  char *err, size_t errlen);

/*
 * Fill env and the target list for a sequence (its header supplies what
 * the command line did not).  The strings point into o or seq.
 */
void runopts_resolve(const struct runopts *o, const struct op_seq *seq,
		     struct target_env *env, const char **targets);

/*
 * Record in seq's header what a run really used (devices, mkfs and mount
 * options from env), so a failure log written from seq replays the same
 * way.  env's strings may point into seq->hdr itself.
 */
void runopts_record_env(const struct target_env *env, struct op_seq *seq);

/* "--opt VALUE" / "--opt=VALUE" matching for a command's own options:
 * returns the value (consuming it) or NULL.  When argv[*i] is this
 * option, *bad says whether its value is missing; otherwise *bad is left
 * as it was, so a chain of calls (callers start it at 0) ends with *bad
 * set if any option in it lacked its value. */
const char *runopts_value(const char *name, int argc, char **argv, int *i,
			  int *bad);

#endif
