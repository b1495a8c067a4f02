/* runargs.c - the option loop and target opening of replay, minimize and
 * run (see runargs.h). */
#include "tools/runargs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/cmds.h"
#include "tools/common.h"

int runargs_parse(struct runopts *o, int argc, char **argv,
		  runargs_own_fn own, void *ctx)
{
	char err[512];

	for (int i = 1; i < argc; i++) {
		int r = runopts_parse(o, argc, argv, &i, err, sizeof(err));

		if (r < 0) {
			errmsg("%s", err);
			return EXIT_USAGE;
		}
		if (!r && (r = own(ctx, argc, argv, &i)) != 0)
			return r;
	}
	return 0;
}

int runargs_open(const char *targets, const struct target_env *env,
		 struct target **t, int *n, const char *prefix)
{
	char err[512];
	int ret = target_list_open(targets, env, t, n, err, sizeof(err));

	if (!ret)
		return 0;
	if (prefix)
		errmsg("%s: %s", prefix, err);
	else
		errmsg("%s", err);
	return ret == -EINVAL ? EXIT_USAGE : EXIT_IO;
}

int runargs_start_failed(struct target *const *t, int n, int ret,
			 const char *prefix)
{
	const char *why = NULL;

	for (int i = 0; i < n && !why; i++)
		if (t[i]->why[0])
			why = t[i]->why;
	errmsg("%s%scannot start the checker: %s", prefix ? prefix : "",
	       prefix ? ": " : "", why ? why : strerror(-ret));
	/* an image the run cannot use is bad input, not a failed device */
	return ret == -ENOTEMPTY ? EXIT_USAGE : EXIT_IO;
}

void runargs_local_name(const char *path, const char *suffix, char *out,
			size_t len)
{
	const char *base = strrchr(path, '/');

	snprintf(out, len, "%.200s%s", base ? base + 1 : path, suffix);
}

int runargs_rest(char **argv, int i, int bad, int *quiet)
{
	if (bad) {
		errmsg("%s needs a value", argv[i]);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[i], "-q")) {
		*quiet = 1;
		return 0;
	}
	if (argv[i][0] == '-' && argv[i][1]) {
		errmsg("unknown option '%s' (see --help)", argv[i]);
		return EXIT_USAGE;
	}
	return RUNARGS_OPERAND;
}
