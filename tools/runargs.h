/*
 * runargs.h - what the commands that run op logs on targets (replay,
 * minimize, run) share around harness/runopts.h: one option loop that
 * takes the shared options and hands every other argument to the
 * command, and opening the target list with the exit status a failure
 * means.
 */
#ifndef FSORACLE_TOOLS_RUNARGS_H
#define FSORACLE_TOOLS_RUNARGS_H

#include "harness/runopts.h"
#include "harness/target.h"

/*
 * One argument of the command's own at argv[*i] (a value it takes moves
 * *i on, as runopts_value does): 0, or the exit status after printing
 * why it is wrong.
 */
typedef int (*runargs_own_fn)(void *ctx, int argc, char **argv, int *i);

/*
 * Parse argv[1..] in order: the shared options into o (from
 * runopts_init), every other argument through own.  0, or the exit
 * status of the first bad argument (its message printed).
 */
int runargs_parse(struct runopts *o, int argc, char **argv,
		  runargs_own_fn own, void *ctx);

/*
 * The end of a command's own-option function, after its options with
 * values: bad set (one of them lacked its value) says "ARG needs a
 * value", -q sets *quiet, any other option is unknown.  Returns
 * RUNARGS_OPERAND when argv[i] is an operand for the caller, 0 when it
 * was taken, or the exit status after printing why it is wrong.
 */
#define RUNARGS_OPERAND (-1)
int runargs_rest(char **argv, int i, int bad, int *quiet);

/*
 * target_list_open; on failure print why (after "PREFIX: " unless prefix
 * is NULL) and return the exit status: 2 for a bad list, 3 else.
 */
int runargs_open(const char *targets, const struct target_env *env,
		 struct target **t, int *n, const char *prefix);

/*
 * check_new failed with ret: print "PREFIX: cannot start the checker: "
 * and why (a target's own reason when it gave one); return exit 2 for a
 * kept image a target refused (-ENOTEMPTY), else 3.
 */
int runargs_start_failed(struct target *const *t, int n, int ret,
			 const char *prefix);

/*
 * OUT = PATH's last component (at most 200 bytes of it) and suffix: a
 * command's default output lands in the current directory, never beside
 * an input in a corpus.
 */
void runargs_local_name(const char *path, const char *suffix, char *out,
			size_t len);

#endif
