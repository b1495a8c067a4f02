/*
 * io.h - the parts of `fsoracle io` (tools/cmd_io.c): the session every
 * command runs in, and the xfs_io words that are not ops (io_map.c: the
 * block maps, io_stat.c: stat and the inode flags).
 *
 * A word's function gets the command's words (argv[0] the command) and
 * returns IO_OK, IO_FAILED (it ran and failed, and said why on stderr,
 * as xfs_io does) or IO_BAD (it did not parse; said why).
 */
#ifndef FSORACLE_TOOLS_IO_H
#define FSORACLE_TOOLS_IO_H

#include <stdint.h>

#include "harness/target.h"
#include "harness/text.h"
#include "ref/ref.h"

#define IO_OK     0
#define IO_FAILED 1
#define IO_BAD    2

#define IO_MAXARGS 16

struct io {
	struct target *t;
	struct op_seq seq;
	struct op_parser parser;
	uint8_t *buf;
	uint64_t opno;
	int direct;              /* the current file was opened with -d */
};

const char *io_cur_name(struct io *io);
/* The current file's inode: 0 or -ENOENT (or another -errno). */
int io_cur_ino(struct io *io, uint64_t *ino);
/* "what: Invalid argument" on stderr, as xfs_io's perror; IO_FAILED. */
int io_fail(const char *what, int err);

/*
 * Options of a word, as getopt would take them (clusters such as -vp,
 * values as "-m X"), anywhere among the arguments.  opts as getopt's.
 * Returns the letter, 0 for the next positional (in *arg), -1 at the
 * end, '?' for a bad option (said on stderr).
 */
struct io_opts {
	int argc, i, j;
	char **argv;
	const char *opts;
};
void io_opts_init(struct io_opts *o, int argc, char **argv, const char *opts);
int io_opts_next(struct io_opts *o, const char **arg);
/* A size argument (k/m/g/t suffixes, 0x hex): 0, or IO_BAD with
 * "WHAT -- S" on stdout, as xfs_io says it ("non-numeric offset
 * argument -- x"). */
int io_size(const char *what, const char *s, uint64_t *out);

/* io_map.c */
int io_bmap(struct io *io, int argc, char **argv);
int io_fiemap(struct io *io, int argc, char **argv);
int io_seek(struct io *io, int argc, char **argv);
/* Does the current file share blocks (reflink)?  0, 1 or -errno. */
int io_file_shared(struct io *io);

/* io_stat.c */
int io_stat(struct io *io, int argc, char **argv);   /* stat, statx */
int io_lsattr(struct io *io, int argc, char **argv);
int io_chattr(struct io *io, int argc, char **argv);
int io_statfs(struct io *io, int argc, char **argv);
int io_counters(struct io *io, int argc, char **argv);

#endif
