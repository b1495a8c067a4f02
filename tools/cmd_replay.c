/*
 * cmd_replay.c - `fsoracle replay`: run op logs (text, binary or .fsxops)
 * on several targets in lock step and report the first disagreement.
 * This is how a failure found anywhere (the soak, a fuzzer, fsx on a real
 * kernel) is reproduced, and how corpus/regressions is run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "harness/load.h"
#include "harness/runopts.h"
#include "harness/target.h"
#include "tools/cmds.h"
#include "tools/common.h"
#include "tools/runargs.h"

static const char usage_head[] =
"usage: fsoracle replay [OPTIONS] FILE...\n"
"\n"
"Replay each op log on the targets in lock step, comparing every op's\n"
"result, every read's bytes, sizes after size-changing ops, and every\n"
"file after remount and crash, every --verify-every ops and at the end;\n"
"engines are audited (fsck) after fsync, fdatasync, sync, remount and\n"
"crash too.  After a crash, files made durable (fsync, sync, remount) and\n"
"untouched since must read back exactly; the others take the state the\n"
"engine recovered.  The form of each FILE is detected:\n"
"text (xfs_io words), .fsxops (fsx's --record-ops log), or an fsoracle\n"
"binary file (from `fsoracle encode`); raw fuzzer bytes need\n"
"--format binary.  Ops a target cannot do are skipped on every target\n"
"and listed, never silently dropped.\n"
"\n"
"Options:\n";

static const char usage_tail[] =
"  --log OUT            where a failure's op log goes (default:\n"
"                       FILE.fail.ops in the current directory; - = none)\n"
"  -q                   print only failures and the summary\n"
"\n";

static const char usage_exit[] =
"\n"
"Exit status: 0 every file agreed on every target; on the first failure\n"
"the checker's class: 10 data mismatch, 11 size mismatch (or a file on\n"
"one target only), 12 audit (fsck) failure, 13 result mismatch (an\n"
"unexpected errno or byte count, a failed mount after a crash), 14\n"
"checker error, 15 twin state mismatch (the engine targets' extents, free\n"
"space or refcounts differ where the header's check=twins=PARTS asks);\n"
"16 out of memory, which is no finding (an allocation failed under this\n"
"process's memory limit: replay with more memory); 2 bad usage, an\n"
"unreadable or malformed FILE, targets that cannot be compared (one keeps\n"
"no bytes) or a --keep-image image holding other files; 3 a target could\n"
"not be opened.\n";

static void print_usage(FILE *f)
{
	fputs(usage_head, f);
	fputs(runopts_help, f);
	fputs(usage_tail, f);
	fputs(target_list_help, f);
	fputs(usage_exit, f);
}

static int replay_one(const char *path, const struct runopts *o,
		      const char *log, int quiet)
{
	struct target *t[TARGET_MAX];
	struct target_env env;
	struct op_load_info info;
	struct checker *c = NULL;
	struct check_cfg cfg = o->check;
	struct op_seq seq;
	const char *targets;
	char err[512], skip[512], logbuf[256];
	int n = 0, rc, ret;

	op_seq_init(&seq);
	ret = op_load_file(path, o->form, &o->geom, &seq, &info, err,
			   sizeof(err));
	if (ret) {
		errmsg("%s", err);
		rc = EXIT_USAGE;
		goto out;
	}
	runopts_resolve(o, &seq, &env, &targets);
	rc = runargs_open(targets, &env, t, &n, path);
	if (rc)
		goto out;
	/* The failure log's header records what this run used. */
	runopts_record_env(&env, &seq);
	if (!log) /* FILE.fail.ops here, so a corpus stays untouched */
		runargs_local_name(path, ".fail.ops", logbuf, sizeof(logbuf));
	cfg.log_path = log ? (strcmp(log, "-") ? log : NULL) : logbuf;
	cfg.targets = targets;
	ret = check_new(t, n, &cfg, &seq, &c);
	if (ret) {
		rc = runargs_start_failed(t, n, ret, path);
		goto out;
	}
	rc = check_run(c, &seq);
	check_skip_summary(c, skip, sizeof(skip));
	if (rc == CHECK_NOMEM) {
		printf("%s: stopped at op %llu of %zu: out of memory, no "
		       "finding (exit %d); replay it with more memory\n", path,
		       (unsigned long long)check_failure(c)->opno, seq.n, rc);
	} else if (rc) {
		printf("%s: FAILED (%s, exit %d) at op %llu of %zu\n", path,
		       check_status_name(rc), rc,
		       (unsigned long long)check_failure(c)->opno, seq.n);
	} else if (check_stalled(c)) {
		/* not a failure: nothing after the stall could be compared */
		printf("%s: ok up to op %llu of %zu on %s; then the targets ran "
		       "out of space or inodes unevenly and could not be "
		       "brought back in step, so the rest was not compared\n",
		       path,
		       (unsigned long long)check_log(c)->n, seq.n, targets);
	} else if (!quiet || skip[0]) {
		const struct check_stats *st = check_stats(c);
		char full[320] = "";
		size_t used = 0;

		if (st->enospc)
			used = (size_t)snprintf(full, sizeof(full), "; %llu ENOSPC "
						"accepted (too little room left)",
						(unsigned long long)st->enospc);
		if (st->twins_apart && used < sizeof(full))
			snprintf(full + used, sizeof(full) - used, "; twins' trees "
				 "came apart, and in the last %llu op(s), from the "
				 "first where their blocks lay elsewhere, they were "
				 "compared by size and block count only",
				 (unsigned long long)st->twins_apart_ops);
		printf("%s: ok, %zu ops (%s) agree on %s%s%s%s\n", path, seq.n,
		       op_form_name(info.form), targets, full,
		       skip[0] ? "; " : "", skip);
	}
	if (info.fsx_skipped)
		printf("%s: %zu fsx `skip` lines not imported (fsx did not run "
		       "them either)\n", path, info.fsx_skipped);
out:
	check_free(c);
	target_list_close(t, n);
	op_seq_free(&seq);
	return rc;
}

/* replay's own arguments: --log, -q and the files. */
struct replay_args {
	const char *log;
	int quiet, nfiles;
	char **files;     /* room for argc */
};

static int replay_arg(void *ctx, int argc, char **argv, int *i)
{
	struct replay_args *a = ctx;
	const char *v;
	int bad = 0, rc;

	if ((v = runopts_value("--log", argc, argv, i, &bad)) != NULL) {
		a->log = v;
		return 0;
	}
	rc = runargs_rest(argv, *i, bad, &a->quiet);
	if (rc == RUNARGS_OPERAND) {
		a->files[a->nfiles++] = argv[*i];
		rc = 0;
	}
	return rc;
}

int cmd_replay(int argc, char **argv)
{
	struct runopts o;
	struct replay_args a = { 0 };
	int rc;

	prog_cmd = "fsoracle replay";
	if (wants_help(argc, argv)) {
		print_usage(stdout);
		return 0;
	}
	a.files = calloc((size_t)argc, sizeof(*a.files));
	if (!a.files)
		return EXIT_IO;
	runopts_init(&o);
	rc = runargs_parse(&o, argc, argv, replay_arg, &a);
	if (rc)
		goto out;
	if (!a.nfiles) {
		errmsg("no op log given (see --help)");
		rc = EXIT_USAGE;
		goto out;
	}
	if (a.nfiles > 1 && a.log && strcmp(a.log, "-"))
		errmsg("note: with several files, --log %s keeps the last "
		       "failure only", a.log);
	for (int i = 0; i < a.nfiles; i++) {
		int r = replay_one(a.files[i], &o, a.log, a.quiet);

		if (r && !rc)
			rc = r;
		if (r && r != EXIT_USAGE && r != EXIT_IO)
			break; /* a real disagreement: stop here, as fsx does */
	}
out:
	free(a.files);
	return rc;
}
