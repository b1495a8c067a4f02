/*
 * common.h - what every fsoracle subcommand shares: opening a device from
 * a spec with a clear error, mapping engine errors to exit statuses, and
 * printing engine messages.
 */
#ifndef FSORACLE_TOOLS_COMMON_H
#define FSORACLE_TOOLS_COMMON_H

#include "hw/hw.h"
#include "ref/ref.h"

extern const char *prog_cmd; /* "fsoracle io", for messages */

/* Print "fsoracle CMD: message" to stderr. */
void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Open a device spec; on failure print why and return NULL. */
struct hw_dev *open_dev(const char *spec);
/* Engine message sink that prints each line to stderr, prefixed. */
void msg_stderr(void *arg, const char *line);
/* Exit status for an engine error: 4 corrupted/not an image, 3 I/O,
 * 2 bad arguments or a missing device, 1 else. */
int exit_for(int err);
/* True if argv has -h or --help anywhere. */
int wants_help(int argc, char **argv);
/* A number option's value: decimal or 0x hex, no sign.  0 or -EINVAL. */
int arg_u64(const char *s, uint64_t *out);
/* 1 if a file can be written at path (made and removed again if it was
 * not there), else 0 with errno set: an output checked before long work. */
int path_writable(const char *path);
/* Seconds on the monotonic clock, for elapsed times. */
double mono_seconds(void);
/* Keep freed heap memory for reuse (soaks allocate and free in waves). */
void tune_heap(void);

#endif
