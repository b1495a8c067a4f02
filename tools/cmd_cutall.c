/*
 * cmd_cutall.c - `fsoracle cutall`: a power cut at every durability
 * point of every op log in the corpus, on a block device and on pmem,
 * with many random subsets per point (harness/cutall.h).  The unit test
 * tests/test_corpus_cuts.c runs the same with one subset per point; this
 * is the long form.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/cutall.h"
#include "harness/load.h"
#include "harness/runopts.h"
#include "tools/cmds.h"
#include "tools/common.h"

static const char usage_text[] =
"usage: fsoracle cutall [FILE|DIR...] [OPTIONS]\n"
"\n"
"Cut the power at every durability point of op logs and check recovery.\n"
"Each log (default: the .ops files of corpus/regressions and fuzz/seeds,\n"
"from the current directory; a DIR means its .ops files) runs on the\n"
"engine over a crash layer, against the model; a first run counts the\n"
"durability points after mkfs (flushes and FUA writes on a block device,\n"
"persists on pmem).  Then for every point, fresh runs fail the power\n"
"there and cut: once exactly after the point (only what is durable\n"
"survives), and N times instead of it, keeping a random subset of the\n"
"writes since the point before and tearing the rest in atomic units\n"
"(512-byte sectors; 8-byte words on pmem).  After each cut the engine\n"
"recovers (mount, journal replay); the mount must succeed, the audit\n"
"(fsck) be clean, and every file fsynced, synced or remounted and not\n"
"changed since read back exactly; then a remount and the same checks.\n"
"A `crash` op inside a log keeps only what is durable.  Logs for a\n"
"realtime device, or a device other than mem:, are not cut (said so).\n"
"\n"
"Options:\n"
"  --corpus DIR     add DIR's .ops files (as a DIR argument)\n"
"  --device D       mem (a block device in RAM: crash:mem:SIZE), pmem\n"
"                   (crash:pmem: on a temporary file through libpmem2;\n"
"                   emulated persistence on an ordinary file), or all\n"
"                   (default: all; mem alone in builds without libpmem2)\n"
"  --pmem-dir DIR   where pmem's temporary file goes (default $TMPDIR,\n"
"                   else /dev/shm, else /tmp)\n"
"  --subsets N      random-subset cuts per point (default 8; 0: only the\n"
"                   exact cut)\n"
"  --seed S         seed of the subsets (default 1); a failure names its\n"
"                   point and subset: --point K with the same seed and\n"
"                   --subsets repeats it\n"
"  --whole          subsets keep or drop whole writes, tearing none\n"
"  --max-points N   cut at most N points per log, spread evenly, first\n"
"                   and last included (default: every point)\n"
"  --point K        cut at point K alone (reproduce a failure; one log)\n"
"  --lie-sync N     a broken device, to see the check fail: every\n"
"                   durability point of the Nth fsync/fdatasync/sync op\n"
"                   of each log is acknowledged without persisting\n"
"  --log-dir DIR    write each log's first failure as an op log there\n"
"                   too (NAME-cutK.ops)\n"
"  --progress       a character per crash state: . passed, F failed\n"
"  -q               failures and the summary only\n"
"\n"
"Output: a line per log and device (points, points cut, states checked,\n"
"failures, seconds), a line per failure (the point, the op it fell in,\n"
"the cut, what the checker found), and a summary.  A log's first\n"
"failure is printed as an op log too: its ops up to the one the power\n"
"failed in, with the cut as a `cut POINT SEED` op before that one (the\n"
"power cut of `fsoracle run`, see its --help), so `fsoracle replay`\n"
"repeats it and `fsoracle minimize` shrinks it (not with --whole or\n"
"--lie-sync, which the op cannot say).\n"
"\n"
"On pmem, subsets tear in 8-byte words (the device's atomic unit), on\n"
"mem: in 512-byte sectors; --whole keeps or drops whole writes instead.\n"
"\n"
"Exit status: 0 every state recovered; 1 some failed; 2 bad usage or an\n"
"unreadable log; 3 a run could not be set up (e.g. pmem unavailable).\n";

struct paths {
	char **p;
	size_t n, cap;
};

static int add_path(struct paths *ps, const char *path)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 32;
		char **p = realloc(ps->p, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		ps->p = p;
		ps->cap = cap;
	}
	ps->p[ps->n] = strdup(path);
	return ps->p[ps->n++] ? 0 : -ENOMEM;
}

static int is_ops(const struct dirent *e)
{
	size_t l = strlen(e->d_name);

	return l > 4 && !strcmp(e->d_name + l - 4, ".ops");
}

/* A file, or a directory's .ops files in name order. */
static int add_arg(struct paths *ps, const char *arg)
{
	struct dirent **list;
	struct stat st;
	int n, ret = 0;

	if (stat(arg, &st)) {
		errmsg("%s: %s", arg, strerror(errno));
		return -ENOENT;
	}
	if (!S_ISDIR(st.st_mode))
		return add_path(ps, arg);
	n = scandir(arg, &list, is_ops, alphasort);
	if (n < 0) {
		errmsg("%s: %s", arg, strerror(errno));
		return -ENOENT;
	}
	if (n == 0) { /* else no log at all would run the default corpus */
		free(list);
		errmsg("%s: a directory without .ops files", arg);
		return -ENOENT;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", arg, list[i]->d_name);
		if (!ret)
			ret = add_path(ps, path);
		free(list[i]);
	}
	free(list);
	return ret;
}

struct totals {
	struct cutall_stats st;
	unsigned runs, not_cut, errors, unreadable;
	unsigned bad;             /* errors of the log's or the options' */
};

static void cut_one(const char *path, enum cutall_dev dev,
		    struct cutall_cfg cfg, int quiet, struct totals *t)
{
	const char *dname = dev == CUTALL_PMEM ? "pmem" : "mem";
	struct cutall_stats st = { 0 };
	struct op_seq seq;
	char err[400] = "";
	double t0 = mono_seconds();
	int ret;

	cfg.name = path;
	cfg.dev = dev;
	cfg.out = stdout;
	op_seq_init(&seq);
	ret = op_load_file(path, OP_FORM_AUTO, NULL, &seq, NULL, err,
			   sizeof(err));
	if (ret) {
		errmsg("%s", err);
		t->unreadable++;
		op_seq_free(&seq);
		return;
	}
	if (cfg.progress && !quiet)
		printf("%s [%s]: ", path, dname);
	fflush(stdout);
	ret = cutall_run(&seq, &cfg, &st, err, sizeof(err));
	op_seq_free(&seq);
	if (cfg.progress && !quiet)
		printf("\n");
	t->runs++;
	cutall_stats_add(&t->st, &st);
	if (ret == -EOPNOTSUPP) {
		t->not_cut++;
		if (!quiet)
			printf("%s [%s]: not cut: %s\n", path, dname, err);
		return;
	}
	if (ret) {
		/* -EINVAL: options the log's header or --point asks for that
		 * cannot be, bad input as replay has it; else the run's */
		t->errors++;
		t->bad += ret == -EINVAL;
		errmsg("%s [%s]: %s", path, dname, err);
		return;
	}
	if (!quiet || st.failures)
		printf("%s [%s]: %" PRIu64 " points, %" PRIu64 " cut, %" PRIu64
		       " states, %" PRIu64 " failures%s%s (%.1f s)\n", path, dname,
		       st.points, st.cut_points, st.states, st.failures,
		       st.skipped[0] ? "; " : "", st.skipped, mono_seconds() - t0);
	fflush(stdout);
}

/* What the command line asks for. */
struct cutall_args {
	struct cutall_cfg cfg;
	struct paths ps;          /* the logs */
	int quiet, use_mem, use_pmem;
};

/* One argument at argv[*i] (*i past a value taken): 0 or -EINVAL (said). */
static int cutall_arg(struct cutall_args *a, int argc, char **argv, int *i)
{
	struct cutall_cfg *cfg = &a->cfg;
	const char *v;
	uint64_t n;
	int bad = 0, ret = 0;

	if ((v = runopts_value("--corpus", argc, argv, i, &bad))) {
		ret = add_arg(&a->ps, v);
	} else if ((v = runopts_value("--device", argc, argv, i, &bad))) {
		a->use_mem = !strcmp(v, "mem") || !strcmp(v, "all");
		a->use_pmem = !strcmp(v, "pmem") || !strcmp(v, "all");
		if (!a->use_mem && !a->use_pmem) {
			errmsg("--device: mem, pmem or all, not '%s'", v);
			ret = -EINVAL;
		}
#ifdef FSO_NO_EXTERNAL_LIBS
		if (a->use_pmem && !strcmp(v, "pmem")) {
			errmsg("--device pmem: built without libpmem2");
			ret = -EINVAL;
		}
		a->use_pmem = 0;
#endif
	} else if ((v = runopts_value("--log-dir", argc, argv, i, &bad))) {
		cfg->log_dir = v;
	} else if ((v = runopts_value("--pmem-dir", argc, argv, i, &bad))) {
		cfg->pmem_dir = v;
	} else if ((v = runopts_value("--subsets", argc, argv, i, &bad))) {
		if (arg_u64(v, &n) || n > 1000000) {
			errmsg("--subsets: bad count '%s'", v);
			ret = -EINVAL;
		} else {
			cfg->subsets = (unsigned)n;
		}
	} else if ((v = runopts_value("--seed", argc, argv, i, &bad))) {
		if (arg_u64(v, &cfg->seed)) {
			errmsg("--seed: bad number '%s'", v);
			ret = -EINVAL;
		}
	} else if ((v = runopts_value("--max-points", argc, argv, i, &bad))) {
		if (arg_u64(v, &cfg->max_points) || !cfg->max_points) {
			errmsg("--max-points: bad count '%s'", v);
			ret = -EINVAL;
		}
	} else if ((v = runopts_value("--point", argc, argv, i, &bad))) {
		if (arg_u64(v, &cfg->only_point) || !cfg->only_point) {
			errmsg("--point: bad point '%s' (from 1)", v);
			ret = -EINVAL;
		}
	} else if ((v = runopts_value("--lie-sync", argc, argv, i, &bad))) {
		if (arg_u64(v, &n) || !n || n > 1000000) {
			errmsg("--lie-sync: bad number '%s' (from 1)", v);
			ret = -EINVAL;
		}
		cfg->lie_sync = (unsigned)n;
	} else if (bad) {
		errmsg("%s needs a value", argv[*i]);
		ret = -EINVAL;
	} else if (!strcmp(argv[*i], "--whole")) {
		cfg->whole = 1;
	} else if (!strcmp(argv[*i], "--progress")) {
		cfg->progress = stdout;
	} else if (!strcmp(argv[*i], "-q")) {
		a->quiet = 1;
	} else if (argv[*i][0] == '-') {
		errmsg("unknown option '%s' (see --help)", argv[*i]);
		ret = -EINVAL;
	} else {
		ret = add_arg(&a->ps, argv[*i]);
	}
	return ret;
}

int cmd_cutall(int argc, char **argv)
{
	struct cutall_args a = { .cfg = { .subsets = 8, .seed = 1 },
				 .use_mem = 1, .use_pmem = 1 };
	struct totals t = { 0 };
	int ret = 0;
	double t0 = mono_seconds();

	prog_cmd = "fsoracle cutall";
	if (wants_help(argc, argv)) {
		fputs(usage_text, stdout);
		return 0;
	}
#ifdef FSO_NO_EXTERNAL_LIBS
	a.use_pmem = 0;
#endif
	for (int i = 1; i < argc && !ret; i++)
		ret = cutall_arg(&a, argc, argv, &i);
	if (!ret && a.ps.n == 0) {
		ret = add_arg(&a.ps, "corpus/regressions");
		if (!ret)
			ret = add_arg(&a.ps, "fuzz/seeds");
	}
	if (!ret && a.cfg.only_point && a.ps.n != 1) {
		errmsg("--point needs exactly one log (%zu given)", a.ps.n);
		ret = -EINVAL;
	}
	if (ret)
		goto out;
	if (!a.quiet)
		printf("fsoracle cutall: %zu logs on %s%s%s; per point the exact "
		       "cut and %u subsets, seed 0x%" PRIx64 "%s\n", a.ps.n,
		       a.use_mem ? "mem" : "",
		       a.use_mem && a.use_pmem ? " and " : "",
		       a.use_pmem ? "pmem" : "", a.cfg.subsets, a.cfg.seed,
		       a.cfg.lie_sync ? "; the device LIES (this must fail)" :
		       "");
	for (size_t i = 0; i < a.ps.n; i++) {
		if (a.use_mem)
			cut_one(a.ps.p[i], CUTALL_MEM, a.cfg, a.quiet, &t);
		if (a.use_pmem)
			cut_one(a.ps.p[i], CUTALL_PMEM, a.cfg, a.quiet, &t);
	}
	printf("cutall: %u runs (%u not cut, %u errors), %" PRIu64 " points, %"
	       PRIu64 " cut, %" PRIu64 " crash states checked, %" PRIu64
	       " failures, %.1f s\n", t.runs - t.not_cut, t.not_cut, t.errors,
	       t.st.points, t.st.cut_points, t.st.states, t.st.failures,
	       mono_seconds() - t0);
	if (t.st.failures)
		printf("cutall: first failure: %s\n", t.st.first);
out:
	for (size_t i = 0; i < a.ps.n; i++)
		free(a.ps.p[i]);
	free(a.ps.p);
	if (ret)
		return EXIT_USAGE;
	if (t.st.failures)
		return EXIT_CHECK;
	if (t.unreadable || t.bad)
		return EXIT_USAGE;
	return t.errors ? EXIT_IO : 0;
}
