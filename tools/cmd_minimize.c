/*
 * cmd_minimize.c - `fsoracle minimize`: shrink a failing op log to a
 * minimal one that fails the same way, for a person to read and for
 * corpus/regressions to keep.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "harness/load.h"
#include "harness/minimize.h"
#include "harness/runopts.h"
#include "harness/target.h"
#include "tools/cmds.h"
#include "tools/common.h"
#include "tools/runargs.h"

static const char usage_head[] =
"usage: fsoracle minimize [OPTIONS] FILE\n"
"\n"
"Replay FILE (text, .fsxops or binary, as `fsoracle replay`) and, if it\n"
"fails, shrink it by delta debugging to a minimal op log that fails with\n"
"the same class (data, size, audit or result mismatch): cut what follows\n"
"the failing op, remove chunks, then single ops, then shrink offsets,\n"
"lengths, sizes and flags.  Each try replays from a fresh filesystem.\n"
"The result is a text op log with the failure as a comment, ready for\n"
"`fsoracle replay` and corpus/regressions.\n"
"\n"
"Options:\n"
"  -o OUT               write the minimal log here (default FILE.min.ops\n"
"                       in the current directory; - = stdout)\n"
"  --max-runs N         stop shrinking after N replays (default 20000)\n"
"  -q                   no progress lines\n";

static const char usage_exit[] =
"\n"
"Exit status: 0 a minimal failing log was written; 1 FILE does not fail\n"
"on these targets, or its replay ran out of memory (nothing to\n"
"minimize); 2 bad usage, an unreadable or malformed FILE, targets that\n"
"cannot be compared or a --keep-image image holding other files; 3 a\n"
"target could not be opened or OUT not written.\n";

static void print_usage(FILE *f)
{
	fputs(usage_head, f);
	fputs(runopts_help, f);
	fputs("\n", f);
	fputs(target_list_help, f);
	fputs(usage_exit, f);
}

static void progress(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "%s: %s\n", prog_cmd, line);
}

/* minimize's own arguments: -o, --max-runs, -q and the file. */
struct minimize_args {
	const char *file, *out;
	uint32_t max_runs;
	int quiet;
};

static int minimize_arg(void *ctx, int argc, char **argv, int *i)
{
	struct minimize_args *a = ctx;
	const char *v;
	int bad = 0;

	if ((v = runopts_value("-o", argc, argv, i, &bad)) != NULL) {
		a->out = v;
	} else if ((v = runopts_value("--max-runs", argc, argv, i,
				      &bad)) != NULL) {
		char *end;
		unsigned long m = strtoul(v, &end, 10);

		if (*end || end == v || !m || m > 100000000ul) {
			errmsg("--max-runs: bad count '%s'", v);
			return EXIT_USAGE;
		}
		a->max_runs = (uint32_t)m;
	} else {
		int rc = runargs_rest(argv, *i, bad, &a->quiet);

		if (rc != RUNARGS_OPERAND)
			return rc;
		if (a->file) {
			errmsg("one FILE at a time (got '%s' and '%s')",
			       a->file, argv[*i]);
			return EXIT_USAGE;
		}
		a->file = argv[*i];
	}
	return 0;
}

/*
 * One more run writes the log with its failure comment and prints the
 * report of the minimal failure, on fresh targets as `replay` would:
 * devices the tries used can hold, where a cut drops a write, the same
 * bytes an earlier try made durable there.  The checker is left in *c
 * and the targets in t for the caller to free.  0, EXIT_IO, or EXIT_USAGE
 * when a target refused to start (runargs_start_failed).
 */
static int write_minimal(const char *targets, struct target_env *env,
			 struct target **t, int *n, const struct check_cfg *check,
			 struct op_seq *seq, const char *out,
			 const struct min_stats *st, struct checker **c)
{
	struct check_cfg cfg = *check;
	int status, ret;

	target_list_close(t, *n);
	*n = 0;
	if (runargs_open(targets, env, t, n, NULL))
		return EXIT_IO;
	cfg.log_path = NULL; /* written here, where a failure is seen */
	cfg.quiet = 0;
	ret = check_new(t, *n, &cfg, seq, c);
	if (ret)
		return runargs_start_failed(t, *n, ret, NULL);
	status = check_run(*c, seq);
	ret = check_write_log(*c, strcmp(out, "-") ? out : "/dev/stdout");
	if (ret) {
		/* the result is not lost: it goes to stdout instead */
		errmsg("cannot write the minimal log to %s: %s; here it is",
		       out, strerror(-ret));
		check_write_log(*c, "/dev/stdout");
		return EXIT_IO;
	}
	if (status != st->status)
		errmsg("warning: the minimal log now fails with %s, not %s "
		       "(a flaky target?)", check_status_name(status),
		       check_status_name(st->status));
	errmsg("%zu -> %zu ops, still %s (exit %d), %u runs%s; written to %s",
	       st->ops_before, st->ops_after, check_status_name(st->status),
	       st->status, st->runs, st->gave_up ? " (run budget spent: may "
	       "not be minimal)" : "", strcmp(out, "-") ? out : "stdout");
	return 0;
}

int cmd_minimize(int argc, char **argv)
{
	struct target *t[TARGET_MAX];
	struct target_env env;
	struct runopts o;
	struct minimize_args a = { 0 };
	struct min_cfg mcfg = { 0 };
	struct min_stats st;
	struct op_seq seq;
	struct checker *c = NULL;
	const char *file, *out, *targets;
	char err[512], outbuf[256];
	int n = 0, rc = 0, ret;

	prog_cmd = "fsoracle minimize";
	if (wants_help(argc, argv)) {
		print_usage(stdout);
		return 0;
	}
	runopts_init(&o);
	op_seq_init(&seq);
	rc = runargs_parse(&o, argc, argv, minimize_arg, &a);
	if (rc)
		return rc;
	file = a.file;
	out = a.out;
	mcfg.max_runs = a.max_runs;
	if (!file) {
		errmsg("no op log given (see --help)");
		return EXIT_USAGE;
	}
	if (op_load_file(file, o.form, &o.geom, &seq, NULL, err, sizeof(err))) {
		errmsg("%s", err);
		rc = EXIT_USAGE;
		goto out;
	}
	if (!out) {
		runargs_local_name(file, ".min.ops", outbuf, sizeof(outbuf));
		out = outbuf;
	}
	/* before the replays, which can take long: OUT must be writable */
	if (strcmp(out, "-") && !path_writable(out)) {
		errmsg("cannot write %s: %s", out, strerror(errno));
		rc = EXIT_IO;
		goto out;
	}
	runopts_resolve(&o, &seq, &env, &targets);
	rc = runargs_open(targets, &env, t, &n, NULL);
	if (rc)
		goto out;
	runopts_record_env(&env, &seq);
	if (!a.quiet)
		mcfg.progress = progress;
	o.check.targets = targets;
	ret = minimize(t, n, &o.check, &mcfg, &seq, &st);
	if (ret == -ENOTEMPTY) { /* the first reset refused the image */
		rc = runargs_start_failed(t, n, ret, file);
		goto out;
	}
	if (ret) {
		errmsg("minimizing failed: %s", strerror(-ret));
		rc = EXIT_IO;
		goto out;
	}
	if (!st.status) {
		errmsg("%s does not fail on %s (%u run): nothing to minimize", file,
		       targets, st.runs);
		rc = EXIT_CHECK;
		goto out;
	}
	if (st.status == CHECK_NOMEM) {
		errmsg("%s: the process ran out of memory replaying it (exit "
		       "%d), which is no finding: nothing to minimize; give it "
		       "more memory", file, CHECK_NOMEM);
		rc = EXIT_CHECK;
		goto out;
	}
	rc = write_minimal(targets, &env, t, &n, &o.check, &seq, out, &st, &c);
out:
	check_free(c);
	target_list_close(t, n);
	op_seq_free(&seq);
	return rc;
}
