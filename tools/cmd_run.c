/*
 * cmd_run.c - `fsoracle run`: the seeded fsx-like soak.  Random ops from
 * the generator go through the checker on every target (by default the
 * optimized engine, the naive engine and the model) until the op count or
 * the time runs out or they disagree.  The seed is printed first, so any
 * run can be repeated exactly; a failure leaves a replayable op log.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fdio.h"
#include "harness/check.h"
#include "harness/fsx.h"
#include "harness/gen.h"
#include "harness/runopts.h"
#include "harness/rng.h"
#include "harness/target.h"
#include "hw/hw.h"
#include "tools/cmds.h"
#include "tools/common.h"
#include "tools/run_jobs.h"
#include "tools/runargs.h"

#define RUN_DEFAULT_TARGETS "engine,naive,model"
#define RUN_SWARM_ROUND 10000u   /* ops per round: swarm draws per round */
#define RUN_FIXED_ROUND 100000u
#define RUN_INODES_PER_FILE 16u  /* inode slots a file, without inodes= */
#define RUN_MIN_INODES 64u
#define RUN_DEFAULT_JOBS 16      /* workers without --jobs, at most */

static const char usage_head[] =
"usage: fsoracle run [OPTIONS]\n"
"\n"
"A seeded fsx-like soak: generate random ops (pwrite, pread, truncate,\n"
"falloc, fpunch, fzero, fcollapse, finsert, range ops, fsync, sync,\n"
"remount, crash, ...) over several files and check them on every target\n"
"in lock step, as `fsoracle replay` does.  Now and then the ops `naive\n"
"PATHS` and `fallback PATHS` switch the engine's seed paths to a random\n"
"mix (the `naive` target stays all naive, the model ignores them), so\n"
"every mix meets the naive twin and the model.  Kinds some target cannot\n"
"do are not generated (the run says which).  The seed is printed first;\n"
"the same seed, options and targets give the same ops.  Progress goes to\n"
"stderr about once a second.  Every --round ops the targets start over on\n"
"a fresh filesystem (the op log of a failure covers its round only); the\n"
"rounds run side by side in --jobs worker processes.\n"
"\n"
"Swarm rounds (the default): each round draws its own mix, so rare states\n"
"build up where one tuned mix never gets: every kind but pwrite is left\n"
"out with chance 1/2 and the rest get random weights (chattr included,\n"
"whose fixed weight is 0); the largest file is drawn log-uniformly from\n"
"16k to --max-file (default 16m) and the longest op from 4k to --max-op\n"
"(default 1m); chattr takes a random subset of +j, +c, +r (with a\n"
"realtime device) and +o (with reflink); and the round's mkfs and mount\n"
"options add, now and then, maxrecs=4..8, data=journal or writeback,\n"
"delalloc and compress=zstd (never one that --mkfs or --mount sets; a\n"
"combination the filesystem refuses is dropped for the round).  The seed\n"
"reproduces every draw; a failure's op log records the round's options\n"
"in its header and its draw in a comment, and replays as is.  --weights or\n"
"--no-swarm give the fixed mix of earlier versions (4 files of 256k, ops\n"
"of 64k, rounds of 100000 ops).  An ENOSPC where the model succeeds is\n"
"judged by the engine's free space: with less room than the op may need\n"
"and a margin, it is accepted and the others take the file's size and\n"
"the op's range as the full engine left them; with more, it is a bug.\n"
"\n"
"Power cuts: `crash` keeps every write the engine issued (it loses only\n"
"what it held in memory); `cut POINT SEED` fails the power at the\n"
"POINT-th durability point from there, inside whatever op reaches it,\n"
"and right after that op every engine is cut and recovers (SEED 0: only\n"
"what was durable survives; else a seeded subset of the writes since the\n"
"point before, the dropped ones torn in the device's atomic unit).\n"
"Which devices cut where (each engine stacks a crash layer on its data\n"
"device and on its realtime device, one power domain: a point counts\n"
"the flushes of both, the power fails on both, one cut rebuilds both):\n"
"  mem:, file:      points are flushes and FUA writes; tears in 512-byte\n"
"                   sectors\n"
"  pmem:            points are persists (hw/pmem.c's flush + drain); a\n"
"                   store never persisted is lost or torn in 8-byte words\n"
"  zoned:mem,       as mem:, and in sequential zones the write pointer\n"
"  zoned:file       rewinds to what survived; zone resets and finishes\n"
"                   made after the failure are undone\n"
"  crash[...]:DEV   as DEV, with the layer given\n"
"  zbd:, null:,     no cut (cut ops are not generated) when the data or\n"
"  zoned:null       the realtime device is one: real zoned hardware\n"
"                   cannot rewind, and the others keep no data\n"
"The checker's rule after a cut is the crash rule: every file fsynced\n"
"and unchanged since reads back exactly, the others take the state the\n"
"first engine recovered, and the audit passes.  A failure's log holds\n"
"the cut op, so `fsoracle replay` repeats the cut and `fsoracle\n"
"minimize` shrinks around it.  --weights cut=0 leaves cuts out (and the\n"
"crash layer off).\n"
"\n"
"Options:\n"
"  --seed S             the seed (default: from the clock, printed)\n"
"  --ops N              stop after N ops (default 1000000, or no limit\n"
"                       with --minutes or --seconds)\n"
"  --minutes M          stop after M minutes (fractions allowed)\n"
"  --seconds S          stop after S seconds\n"
"  --round N            ops per fresh filesystem (default 10000 with\n"
"                       swarm rounds, 100000 with the fixed mix)\n"
"  --no-swarm           one fixed mix for every round (the defaults of\n"
"                       harness/gen.c, or --weights)\n"
"  --max-op SIZE        longest read/write/range (default 1m in swarm\n"
"                       rounds, 64k in the fixed mix)\n"
"  --weights LIST       kind weights, e.g. pwrite=300,crash=0,naive=0,\n"
"                       fallback=0 (defaults: see harness/gen.c); a\n"
"                       fixed mix, as --no-swarm\n"
"  --jobs N             worker processes running rounds side by side,\n"
"                       each on targets of its own (default: one a CPU\n"
"                       this process may use, at most 16); never more\n"
"                       than the rounds --ops makes.  A round is the same\n"
"                       whoever runs it (its ops depend on the seed and\n"
"                       its number), so one seed checks the same ops with\n"
"                       any --jobs, but for rounds made of what stalled\n"
"                       rounds left and rounds a deadline cut short.  One\n"
"                       job only (more is refused) with --export-fsx, an\n"
"                       engine on a persistent device (file:, pmem:, zbd:,\n"
"                       zoned:file, under any layers) or with a faulty\n"
"                       layer, and a host target in a given directory.\n"
"                       The first failure stops the other workers; its\n"
"                       log takes --log's name, one found meanwhile the\n"
"                       name with -2, -3, ...; a worker killed by signal\n"
"                       S ends the run with exit status 128+S\n"
"  --log OUT            a failure's op log (default fsoracle-run-SEED.ops)\n"
"  --export-fsx OUT     write every op run (passing or not) as an fsx\n"
"                       .fsxops log; implies --files 1 and no unlink,\n"
"                       crash or chattr (fsx has none); a new round is a\n"
"                       truncate to 0.  Its first lines give the fsx\n"
"                       command that replays it\n"
"  -q                   no progress lines\n"
"\n"
"Shared options (--files and --max-file shape the generated files: 4\n"
"files, of at most 16m in swarm rounds and 256k in the fixed mix, unless\n"
"given; without inodes= in --mkfs the engines' inode table holds 16\n"
"slots a file, at least 64, and the log's mkfs= records it):\n";

static const char usage_exit[] =
"\n"
"Default targets: " RUN_DEFAULT_TARGETS ".\n"
"\n"
"Exit status: 0 all ops agreed; 10 data mismatch, 11 size mismatch, 12\n"
"audit failure, 13 result mismatch (unexpected errno), 14 checker error,\n"
"15 twin state mismatch, 16 out of memory under a memory limit (no\n"
"finding: the run stops and writes its op log for a replay with more\n"
"memory; see `fsoracle replay --help`); 2 bad usage, targets that cannot\n"
"be compared (one keeps no bytes) or a --keep-image image holding other\n"
"files; 3 a target could not be opened; 128+S a --jobs worker was\n"
"killed by signal S.\n";

static void print_usage(FILE *f)
{
	fputs(usage_head, f);
	fputs(runopts_help, f);
	fputs("\n", f);
	fputs(target_list_help, f);
	fputs(usage_exit, f);
}

/* The command line that repeats this run: ours minus seed/ops/minutes. */
static void print_repro(int argc, char **argv, uint64_t seed, uint64_t ops)
{
	fprintf(stderr, "  reproduce: fsoracle run --seed %llu --ops %llu",
		(unsigned long long)seed, (unsigned long long)ops);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") || !strcmp(argv[i], "--ops") ||
		    !strcmp(argv[i], "--minutes") || !strcmp(argv[i], "--seconds")) {
			i++;
			continue;
		}
		if (!strncmp(argv[i], "--seed=", 7) || !strncmp(argv[i], "--ops=", 6) ||
		    !strncmp(argv[i], "--minutes=", 10) ||
		    !strncmp(argv[i], "--seconds=", 10) || !strcmp(argv[i], "-q"))
			continue;
		fprintf(stderr, " %s", argv[i]);
	}
	fputc('\n', stderr);
}

/* --export-fsx: the ops run, one file, as fsx replays them. */
static int export_fsx(const struct op_seq *ops, const char *path,
		      uint32_t blocksize)
{
	struct op_fsx_stats st;
	char err[512];
	FILE *f = fopen(path, "w");
	int ret;

	if (!f) {
		errmsg("--export-fsx: cannot write %s: %s", path, strerror(errno));
		return EXIT_IO;
	}
	ret = op_fsx_export(ops, f, blocksize, &st, err, sizeof(err));
	if (fclose(f) || ret) {
		errmsg("--export-fsx: %s: %s", path, ret ? err : strerror(errno));
		return EXIT_IO;
	}
	fprintf(stderr, "  fsx log: %s, %zu op lines (%zu adjusted, %zu left as "
		"comments, %zu fsyncs as comments)\n", path, st.written,
		st.adjusted, st.omitted, st.fsyncs);
	return 0;
}

/* run's own arguments; --max-op and --weights go into gcfg. */
struct run_args {
	struct gen_cfg *gcfg;
	const char *log, *xfsx;
	uint64_t seed, max_ops, round;
	double minutes;
	int have_seed, quiet, no_swarm;
	int jobs;               /* --jobs (0: not given)            */
	char mkfs[OP_HDR_STR];  /* --mkfs with the inode table sized */
	struct target **t;      /* the targets, for start_round */
	int nt;
};

/*
 * The round g drew, on the targets: its options, its note for the log.
 * A round whose mix holds no `cut` settles the engines' crash layers
 * (engine_target_settle): its writes go straight to the devices, as no
 * cut will ask what each replaced.
 */
static int start_round(struct checker *c, const struct gen *g,
		       const struct run_args *a)
{
	char note[1024];
	int used = 0, ret;
	bool settled = !gen_round_makes(g, OP_CUT);

	ret = check_new_round(c, g->round.mkfs, g->round.mount, &used);
	for (int i = 0; i < a->nt && !ret; i++)
		ret = engine_target_settle(a->t[i], settled);
	gen_round_describe(g, note, sizeof(note));
	if (!used && (g->round.mkfs[0] || g->round.mount[0])) {
		size_t n = strlen(note);

		snprintf(note + n, sizeof(note) - n, " (not taken: a target "
			 "refused them)");
	}
	check_set_note(c, note);
	return ret;
}

/*
 * Without inodes= in --mkfs, the engines' inode table is sized to the
 * files: RUN_INODES_PER_FILE slots a file (a file and orphans of it: far
 * more than the ops can hold at once), not mkfs's 1024.  Every audit
 * compares each slot with its in-memory inode, so 1,020 free slots for
 * 4 files were a tenth of the soak's time.  The log's mkfs= records it.
 */
static void size_inode_table(struct run_args *a, struct runopts *o)
{
	unsigned slots = o->geom.nfiles * RUN_INODES_PER_FILE;
	int n;

	if (o->keep_image || gen_opts_given(o->mkfs, "inodes="))
		return;
	if (slots < RUN_MIN_INODES)
		slots = RUN_MIN_INODES;
	n = snprintf(a->mkfs, sizeof(a->mkfs), "%s%sinodes=%u",
		     o->mkfs ? o->mkfs : "", o->mkfs && o->mkfs[0] ? "," : "",
		     slots);
	if (n > 0 && (size_t)n < sizeof(a->mkfs))
		o->mkfs = a->mkfs;
}

static int run_arg(void *ctx, int argc, char **argv, int *i)
{
	struct run_args *a = ctx;
	const char *v;
	char err[512];
	int bad = 0;

	if ((v = runopts_value("--seed", argc, argv, i, &bad))) {
		if (arg_u64(v, &a->seed)) {
			errmsg("--seed: bad number '%s'", v);
			return EXIT_USAGE;
		}
		a->have_seed = 1;
	} else if ((v = runopts_value("--ops", argc, argv, i, &bad))) {
		if (arg_u64(v, &a->max_ops) || !a->max_ops) {
			errmsg("--ops: bad count '%s'", v);
			return EXIT_USAGE;
		}
	} else if ((v = runopts_value("--minutes", argc, argv, i, &bad))) {
		char *end;

		a->minutes = strtod(v, &end);
		if (*end || end == v || !(a->minutes > 0)) {
			errmsg("--minutes: bad number '%s'", v);
			return EXIT_USAGE;
		}
	} else if ((v = runopts_value("--seconds", argc, argv, i, &bad))) {
		char *end;

		a->minutes = strtod(v, &end) / 60;
		if (*end || end == v || !(a->minutes > 0)) {
			errmsg("--seconds: bad number '%s'", v);
			return EXIT_USAGE;
		}
	} else if ((v = runopts_value("--round", argc, argv, i, &bad))) {
		if (arg_u64(v, &a->round) || !a->round) {
			errmsg("--round: bad count '%s'", v);
			return EXIT_USAGE;
		}
	} else if ((v = runopts_value("--max-op", argc, argv, i, &bad))) {
		if (hw_parse_size(v, &a->gcfg->max_op) || !a->gcfg->max_op) {
			errmsg("--max-op: bad size '%s'", v);
			return EXIT_USAGE;
		}
	} else if ((v = runopts_value("--weights", argc, argv, i, &bad))) {
		if (gen_parse_weights(a->gcfg, v, err, sizeof(err))) {
			errmsg("--weights: %s", err);
			return EXIT_USAGE;
		}
		a->no_swarm = 1;
	} else if (!strcmp(argv[*i], "--no-swarm")) {
		a->no_swarm = 1;
	} else if ((v = runopts_value("--jobs", argc, argv, i, &bad))) {
		uint64_t j;

		if (arg_u64(v, &j) || !j || j > RUN_JOBS_MAX) {
			errmsg("--jobs: bad count '%s' (1 to %d)", v,
			       RUN_JOBS_MAX);
			return EXIT_USAGE;
		}
		a->jobs = (int)j;
	} else if ((v = runopts_value("--log", argc, argv, i, &bad))) {
		a->log = v;
	} else if ((v = runopts_value("--export-fsx", argc, argv, i, &bad))) {
		a->xfsx = v;
	} else if (bad) {
		errmsg("%s needs a value", argv[*i]);
		return EXIT_USAGE;
	} else if (!strcmp(argv[*i], "-q")) {
		a->quiet = 1;
	} else {
		errmsg("unexpected argument '%s' (see --help)", argv[*i]);
		return EXIT_USAGE;
	}
	return 0;
}

/* The generator's configuration for this run's options and targets. */
static void gen_setup(struct gen_cfg *gcfg, const struct run_args *a,
		      const struct runopts *o, const struct target_env *env,
		      struct checker *c, struct target **t, int n)
{
	gcfg->seed = a->seed;
	gcfg->nfiles = o->geom.nfiles;
	gcfg->max_file = o->geom.max_file;
	gcfg->exclude = check_unsupported(c);
	if (a->xfsx)
		gcfg->exclude |= 1ull << OP_UNLINK | 1ull << OP_CRASH |
				 1ull << OP_CUT | 1ull << OP_SET_FLAG;
	gcfg->realtime = env->rtdev != NULL;
	gcfg->swarm = !a->no_swarm;
	/* chattr +o and mount compress=zstd: only with reflink, only without */
	gcfg->attrs = OP_ATTR_JOURNAL_DATA | OP_ATTR_COMPRESS |
		      (gcfg->realtime ? OP_ATTR_REALTIME : 0) |
		      (gcfg->exclude & (1ull << OP_CLONE_RANGE) ? 0 :
		       OP_ATTR_ALWAYS_COW);
	gcfg->swarm_compress = !(gcfg->attrs & OP_ATTR_ALWAYS_COW);
	gcfg->mkfs = o->mkfs;
	gcfg->mount = o->mount;
	for (int i = 0; i < n; i++)
		if (!(t[i]->caps & TARGET_MODEL)) {
			gcfg->blocksize = t[i]->blocksize;
			break;
		}
}

/* What the run will do, on stderr before it starts. */
static void print_start(const struct run_args *a, const struct gen *g,
			const char *targets, struct checker *c,
			struct target **t, int n, int jobs)
{
	char skip[512], mask[256];

	if (g->cfg.swarm)
		fprintf(stderr, "fsoracle run: seed %llu, targets %s, swarm "
			"rounds of %llu ops over %u files of at most %llu bytes, "
			"ops of at most %llu bytes (--no-swarm: one fixed mix)\n",
			(unsigned long long)a->seed, targets,
			(unsigned long long)a->round, g->cfg.nfiles,
			(unsigned long long)g->cfg.max_file,
			(unsigned long long)g->cfg.max_op);
	else
		fprintf(stderr, "fsoracle run: seed %llu, targets %s, %u files "
			"of at most %llu bytes, ops of at most %llu bytes\n",
			(unsigned long long)a->seed, targets, g->cfg.nfiles,
			(unsigned long long)g->cfg.max_file,
			(unsigned long long)g->cfg.max_op);
	if (jobs > 1)
		fprintf(stderr, "  %d jobs: worker processes run the rounds side "
			"by side, each on targets of its own (--jobs 1: one "
			"after another, here)\n", jobs);
	target_list_devnote(t, n, skip, sizeof(skip));
	if (skip[0])
		fprintf(stderr, "  %s\n", skip);
	target_kinds_str(check_unsupported(c), mask, sizeof(mask));
	if (mask[0])
		fprintf(stderr, "  not generated (a target cannot do them): %s\n",
			mask);
	if (a->xfsx)
		fprintf(stderr, "  --export-fsx: one file, and no unlink, crash, cut "
			"or chattr (fsx has none)\n");
}

/* The round a worker ran last, and the ops it ran in it. */
struct soak_pos {
	uint64_t round, in_round;
};

/*
 * The soak proper: rounds claimed from plan p (run_jobs.h), each on a
 * fresh filesystem, its ops through the checker until it has run the ops
 * it was given, the targets stall (the rest goes back to the plan), the
 * deadline (0: none) passes, a worker fails or this one does.  Each round
 * is checked to its end (check_finish) before the next starts; the last
 * one is left to the caller.  *pos says which round ran last and how
 * far (round 0: none), where a failure was found.  With --export-fsx the
 * ops also go into xops.  *done counts the ops (p->done too); progress
 * is printed when asked.  Returns the checker's status, or EXIT_IO when
 * a reset failed.
 */
static int soak(struct checker *c, struct gen *g, const struct run_args *a,
		struct run_plan *p, double t0, double deadline, bool progress,
		struct op_seq *xops, uint64_t *done, struct soak_pos *pos)
{
	uint64_t round, budget, told = *done;
	double tlast = t0;
	bool late = false;
	int rc = 0;

	*pos = (struct soak_pos){ 0 };
	while (!late && run_plan_claim(p, &round, &budget)) {
		uint64_t in_round = 0;
		int ret;

		if (pos->round) {
			rc = check_finish(c);
			if (rc)
				break;
		}
		gen_goto_round(g, (unsigned)round);
		if (a->xfsx && pos->round) { /* a fresh filesystem: the file starts empty */
			struct op z = { .kind = OP_TRUNCATE };

			if (op_seq_push(xops, &z)) {
				rc = EXIT_IO;
				break;
			}
		}
		*pos = (struct soak_pos){ round, 0 };
		ret = start_round(c, g, a);
		if (ret) {
			errmsg("resetting the targets failed: %s", strerror(-ret));
			rc = EXIT_IO;
			break;
		}
		while (in_round < budget &&
		       !atomic_load_explicit(&p->stop, memory_order_relaxed)) {
			struct op op;

			gen_next(g, &op);
			if (a->xfsx && op_seq_push(xops, &op)) {
				errmsg("--export-fsx: out of memory");
				rc = EXIT_IO;
				break;
			}
			rc = check_op(c, &op);
			++*done;
			pos->in_round = ++in_round;
			if (rc || check_stalled(c))
				break;
			if ((*done & 255) == 0) {
				double tn = mono_seconds();

				atomic_fetch_add(&p->done, *done - told);
				told = *done;
				if (deadline && tn >= deadline) {
					late = true;
					break;
				}
				if (progress && !a->quiet && tn - tlast >= 1.0) {
					fprintf(stderr, "  %llu ops, %.0f ops/s\n",
						(unsigned long long)*done,
						(double)*done / (tn - t0));
					tlast = tn;
				}
			}
		}
		if (rc)
			break;
		if (check_stalled(c))
			run_plan_give_back(p, budget - in_round);
	}
	atomic_fetch_add(&p->done, *done - told);
	if (rc) /* the other workers stop at their next op */
		atomic_store(&p->stop, 1);
	return rc;
}

/* The word for a run's outcome in its summary. */
static const char *outcome(int rc)
{
	if (!rc)
		return "all agreed";
	if (rc == EXIT_IO)
		return "stopped: a target failed";
	if (rc > 128)
		return "stopped: a worker died";
	return check_status_name(rc);
}

/*
 * The run's outcome and how to repeat it, on stderr: stats s (every
 * worker's), skip (check_skip_summary's line), upto the --ops of the
 * repeat, or log, the op log that repeats a failure no --ops would.
 */
static void print_summary(const struct check_stats *s, const char *skip,
			  int rc, uint64_t seed, uint64_t done, double secs,
			  int jobs, uint64_t upto, const char *log, int argc,
			  char **argv)
{
	if (secs <= 0)
		secs = 1e-9;
	fprintf(stderr, "fsoracle run: seed %llu: %s after %llu ops in "
		"%.2f s: %.0f checked ops/s (%llu verifies, %llu audits, "
		"%llu crashes, %.0f MB compared", (unsigned long long)seed,
		outcome(rc), (unsigned long long)done, secs,
		(double)done / secs, (unsigned long long)s->verifies,
		(unsigned long long)s->audits,
		(unsigned long long)s->crashes,
		(double)s->bytes_compared / 1e6);
	if (jobs > 1)
		fprintf(stderr, "; %d jobs, %.0f ops/s each", jobs,
			(double)done / secs / jobs);
	fputs(")\n", stderr);
	if (s->enospc)
		fprintf(stderr, "  %llu times a target ran out of space "
			"with too little room left: accepted, the others "
			"took what it left in the op's range\n",
			(unsigned long long)s->enospc);
	if (s->twins_apart)
		fprintf(stderr, "  in %llu rounds the twins' extent trees came "
			"apart and their blocks then lay elsewhere: %llu ops, "
			"from the first such, compared them by size and block "
			"count only (check twins=)\n",
			(unsigned long long)s->twins_apart,
			(unsigned long long)s->twins_apart_ops);
	if (s->stalls)
		fprintf(stderr, "  %llu rounds ended early: out of space "
			"or inodes unevenly, the targets could not be "
			"brought back in step\n", (unsigned long long)s->stalls);
	if (skip[0])
		fprintf(stderr, "  %s\n", skip);
	if (log)
		fprintf(stderr, "  reproduce: fsoracle replay %s (its round was "
			"made of ops that stalled rounds left, as the workers' "
			"timing had it)\n", log);
	else
		print_repro(argc, argv, seed, upto);
}

/*
 * What the options leave to the run: --export-fsx keeps to one file, no
 * --seed draws one from the clock, neither --ops nor --minutes means a
 * million ops, no --targets the default list.  0, EXIT_USAGE or EXIT_IO
 * (an --export-fsx path that cannot be written).
 */
static int settle_args(struct run_args *a, struct runopts *o)
{
	if (a->xfsx && o->geom.nfiles > 1) {
		errmsg("--export-fsx: fsx works on one file (--files 1)");
		return EXIT_USAGE;
	}
	if (a->xfsx)
		o->geom.nfiles = 1;
	/* written when the soak ends: a path it cannot take fails now */
	if (a->xfsx && !path_writable(a->xfsx)) {
		errmsg("--export-fsx: cannot write %s: %s", a->xfsx,
		       strerror(errno));
		return EXIT_IO;
	}
	if (!a->have_seed) {
		uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);

		a->seed = rng_splitmix64(&x) % 1000000000ull;
	}
	if (!a->max_ops && !a->minutes)
		a->max_ops = 1000000;
	if (!o->targets)
		o->targets = RUN_DEFAULT_TARGETS;
	size_inode_table(a, o);
	return 0;
}

/*
 * The targets, opened with power cuts unless --weights leaves cut out
 * (see --help).  0 or runargs_open's exit status.
 */
static int open_targets(struct runopts *o, const struct gen_cfg *gcfg,
			struct target_env *env, const char **targets,
			struct target **t, int *n)
{
	runopts_resolve(o, NULL, env, targets);
	env->power_cuts = 1;
	for (unsigned k = 1; k < OP_KIND_COUNT; k++)
		if (gcfg->weight[k])
			env->power_cuts = gcfg->weight[OP_CUT] != 0;
	return runargs_open(*targets, env, t, n, NULL);
}

/* What every worker of a run starts from (run_worker). */
struct run_ctx {
	const struct run_args *a;
	const struct runopts *o;
	const struct target_env *env;
	const char *targets;
	const struct op_seq *meta;
	const struct gen_cfg *gcfg;
	struct run_plan *plan;
	double t0, deadline;
	int failure;            /* this worker's failure log, -1: none */
	char name[4352];        /* a later failure's log: --log-N.ops */
};

/*
 * Where a worker's failure log goes (check_cfg.log_name): the first
 * failure of the run takes --log's name, one found meanwhile by another
 * worker the same with -2, -3, ... before its .ops.
 */
static const char *worker_log_name(void *arg)
{
	struct run_ctx *x = arg;
	const char *log = x->a->log;
	unsigned k = atomic_fetch_add(&x->plan->failures, 1);
	size_t len = strlen(log);

	x->failure = (int)k;
	if (k == 0)
		return log;
	if (len > 4 && !strcmp(log + len - 4, ".ops"))
		len -= 4;
	snprintf(x->name, sizeof(x->name), "%.*s-%u.ops", (int)len, log, k + 1);
	return x->name;
}

/*
 * Bytes of a memory stream on stderr, one worker's at a time (a report
 * may pass what one write keeps whole); a worker killed while writing
 * holds the turn for no more than a second.
 */
static void put_report(struct run_plan *p, const char *buf, size_t len)
{
	double until = mono_seconds() + 1.0;
	int free_turn = 0;
	bool mine;

	while (!(mine = atomic_compare_exchange_weak(&p->printing, &free_turn,
						     1))) {
		struct timespec ts = { 0, 1000000 };

		free_turn = 0;
		if (mono_seconds() > until)
			break;
		nanosleep(&ts, NULL);
	}
	(void)fd_write_all(STDERR_FILENO, buf, len);
	if (mine)
		atomic_store(&p->printing, 0);
}

/*
 * One worker of --jobs, in its own process (run_jobs): targets, checker
 * and generator of its own, the rounds it claims.  A failure's report
 * is gathered and written at the end in one piece, so two workers' do
 * not interleave.
 */
static void run_worker(void *arg, int job, struct run_result *res)
{
	struct run_ctx *x = arg;
	struct target *t[TARGET_MAX];
	struct check_cfg cfg = x->o->check;
	struct run_args a = *x->a;
	struct checker *c = NULL;
	char *rep = NULL;
	size_t replen = 0;
	struct soak_pos pos = { 0 };
	struct gen g;
	int n = 0, ret;

	(void)job;
	x->failure = -1;
	res->rc = runargs_open(x->targets, x->env, t, &n, NULL);
	if (res->rc)
		return;
	cfg.out = open_memstream(&rep, &replen);
	if (!cfg.out)
		cfg.out = stderr;
	cfg.log_name = worker_log_name;
	cfg.log_name_arg = x;
	ret = check_new(t, n, &cfg, x->meta, &c);
	if (ret) {
		res->rc = runargs_start_failed(t, n, ret, NULL);
	} else if (gen_init(&g, x->gcfg)) {
		res->rc = EXIT_USAGE; /* cmd_run's gen_init took the same cfg */
	} else {
		a.t = t;
		a.nt = n;
		res->rc = soak(c, &g, &a, x->plan, x->t0, x->deadline, false,
			       NULL, &res->done, &pos);
		if (!res->rc && pos.round)
			res->rc = check_finish(c);
		if (res->rc && pos.round)
			res->upto = run_plan_upto(x->plan, pos.round,
						  pos.in_round);
		if (res->rc)
			atomic_store(&x->plan->stop, 1);
		res->st = *check_stats(c);
	}
	res->failure = x->failure;
	check_free(c);
	target_list_close(t, n);
	if (cfg.out != stderr) {
		fclose(cfg.out);
		if (replen)
			put_report(x->plan, rep, replen);
		free(rep);
	}
}

/*
 * The run on jobs worker processes: their counts summed, and the status
 * of the first failure found (else of the first worker that stopped with
 * one).  tgt: copies of the targets as opened here, for the summary.
 */
static int run_workers(struct run_ctx *x, int jobs, struct target **tgt,
		       int n, int argc, char **argv)
{
	struct run_result *res = calloc((size_t)jobs, sizeof(*res));
	struct check_stats sum;
	uint64_t done = 0;
	char skip[512];
	int rc = 0, ret, first = -1;

	if (!res) {
		errmsg("out of memory");
		return EXIT_IO;
	}
	memset(&sum, 0, sizeof(sum));
	ret = run_jobs(jobs, run_worker, x, x->plan, x->a->quiet, x->t0, res);
	if (ret) {
		errmsg("cannot start %d workers: %s", jobs, strerror(-ret));
		rc = EXIT_IO;
	}
	for (int i = 0; i < jobs; i++) {
		if (res[i].signal)
			errmsg("worker %d (of %d) was killed by signal %d (%s): "
			       "its rounds' ops are not all counted; run with "
			       "--jobs 1 and the same seed to see where",
			       i + 1, jobs, res[i].signal,
			       strsignal(res[i].signal));
		check_stats_add(&sum, &res[i].st);
		done += res[i].done;
		if (res[i].rc && res[i].failure == 0)
			first = i;
	}
	if (first >= 0)
		rc = res[first].rc;
	for (int i = 0; i < jobs && !rc; i++)
		rc = res[i].rc;
	check_skip_summary_of(&sum, tgt, n, skip, sizeof(skip));
	/* a failure in a round of leftover ops, whose size depended on the
	 * workers' timing: its op log is what repeats it */
	print_summary(&sum, skip, rc, x->a->seed, done,
		      mono_seconds() - x->t0, jobs,
		      first >= 0 && res[first].upto ? res[first].upto : done,
		      first >= 0 && !res[first].upto ? x->a->log : NULL, argc,
		      argv);
	/* a deadline stops each worker in a round of its own: --ops
	 * carves one round short, so it repeats as many ops, not these */
	if (!rc && x->deadline && !x->a->max_ops)
		fprintf(stderr, "  (a deadline stopped the %d workers each in a "
			"round of its own: this runs as many ops of the same "
			"rounds, but cuts only its last one short)\n", jobs);
	free(res);
	return rc;
}

/*
 * How many workers: --jobs, else one a CPU (at most RUN_DEFAULT_JOBS),
 * never more than there are rounds; one for --export-fsx (one stream of
 * ops) and for targets that must stay in one process
 * (engine_target_alone), where asking for more is refused.  0, or
 * EXIT_USAGE.
 */
static int pick_jobs(const struct run_args *a, struct target **t, int n,
		     uint64_t rounds, int *jobs)
{
	const char *why = NULL, *who = NULL;

	for (int i = 0; i < n && !why; i++) {
		why = engine_target_alone(t[i]);
		if (!why)
			why = host_target_alone(t[i]);
		who = t[i]->name;
	}
	*jobs = 1;
	if (a->xfsx || why) {
		if (a->jobs <= 1)
			return 0;
		if (a->xfsx)
			errmsg("--jobs %d: --export-fsx writes one stream of "
			       "ops, from one job", a->jobs);
		else
			errmsg("--jobs %d: target %s %s: one job", a->jobs, who,
			       why);
		return EXIT_USAGE;
	}
	*jobs = a->jobs ? a->jobs : run_jobs_cpus();
	if (!a->jobs && *jobs > RUN_DEFAULT_JOBS)
		*jobs = RUN_DEFAULT_JOBS;
	if ((uint64_t)*jobs > rounds)
		*jobs = (int)rounds;
	return 0;
}

/*
 * The run in this process, from the first round to the summary, and the
 * fsx export of what ran.  The checker's status, else export_fsx's.
 */
static int run_here(struct checker *c, struct gen *g, const struct run_args *a,
		    struct run_plan *plan, double t0, double deadline,
		    const struct op_seq *meta, struct op_seq *xops,
		    uint32_t blocksize, int argc, char **argv)
{
	struct soak_pos pos;
	uint64_t done = 0, upto = 0;
	char skip[512];
	int rc, ret;

	rc = soak(c, g, a, plan, t0, deadline, true, xops, &done, &pos);
	if (!rc && pos.round)
		rc = check_finish(c);
	if (rc && pos.round)
		upto = run_plan_upto(plan, pos.round, pos.in_round);
	/* a round of leftover: this run, one job, repeats as it ran */
	if (rc && !upto && a->max_ops)
		upto = a->max_ops;
	check_skip_summary(c, skip, sizeof(skip));
	print_summary(check_stats(c), skip, rc, a->seed, done,
		      mono_seconds() - t0, 1, upto ? upto : done, NULL, argc,
		      argv);
	if (a->xfsx) {
		op_seq_copy_meta(xops, meta);
		ret = export_fsx(xops, a->xfsx, blocksize);
		if (!rc)
			rc = ret;
	}
	return rc;
}

int cmd_run(int argc, char **argv)
{
	struct target *t[TARGET_MAX], copy[TARGET_MAX], *tc[TARGET_MAX];
	struct target_env env;
	struct runopts o;
	struct gen_cfg gcfg = { 0 };
	struct run_args a = { .gcfg = &gcfg };
	struct run_plan here, *plan = &here;
	struct gen g;
	struct checker *c = NULL;
	struct op_seq meta, xops;
	struct run_ctx x;
	const char *targets;
	char logbuf[128];
	double t0, deadline = 0;
	int n = 0, nsaved, rc = 0, ret, jobs;

	prog_cmd = "fsoracle run";
	tune_heap();
	if (wants_help(argc, argv)) {
		print_usage(stdout);
		return 0;
	}
	runopts_init(&o);
	op_seq_init(&meta);
	op_seq_init(&xops);
	rc = runargs_parse(&o, argc, argv, run_arg, &a);
	if (rc)
		return rc;
	rc = settle_args(&a, &o);
	if (rc)
		return rc;
	rc = open_targets(&o, &gcfg, &env, &targets, t, &n);
	if (rc)
		return rc;
	runopts_record_env(&env, &meta);
	snprintf(meta.hdr.seed, sizeof(meta.hdr.seed), "%llu",
		 (unsigned long long)a.seed);
	if (!a.log) {
		snprintf(logbuf, sizeof(logbuf), "fsoracle-run-%llu.ops",
			 (unsigned long long)a.seed);
		a.log = logbuf;
	}
	o.check.log_path = a.log;
	o.check.targets = targets;
	ret = check_new(t, n, &o.check, &meta, &c);
	if (ret) {
		rc = runargs_start_failed(t, n, ret, NULL);
		goto out;
	}

	gen_setup(&gcfg, &a, &o, &env, c, t, n);
	if (!a.round)
		a.round = gcfg.swarm ? RUN_SWARM_ROUND : RUN_FIXED_ROUND;
	if (gen_init(&g, &gcfg)) {
		errmsg("every op kind is excluded or weighted 0: nothing to run");
		rc = EXIT_USAGE;
		goto out;
	}
	run_plan_init(&here, a.max_ops, a.round);
	rc = pick_jobs(&a, t, n, run_plan_rounds(&here), &jobs);
	if (rc)
		goto out;
	a.t = t;
	a.nt = n;
	print_start(&a, &g, targets, c, t, n, jobs);

	t0 = mono_seconds();
	if (a.minutes)
		deadline = t0 + a.minutes * 60;
	if (jobs == 1) {
		rc = run_here(c, &g, &a, plan, t0, deadline, &meta, &xops,
			      gcfg.blocksize, argc, argv);
		goto out;
	}
	/* the workers open targets of their own: these only name them */
	for (int i = 0; i < n; i++) {
		copy[i] = *t[i];
		tc[i] = &copy[i];
	}
	nsaved = n;
	check_free(c);
	c = NULL;
	target_list_close(t, n);
	n = 0;
	plan = run_plan_shared(a.max_ops, a.round);
	if (!plan) {
		errmsg("cannot share the plan between workers: %s",
		       strerror(errno));
		rc = EXIT_IO;
		goto out;
	}
	x = (struct run_ctx){ .a = &a, .o = &o, .env = &env,
			      .targets = targets, .meta = &meta, .gcfg = &gcfg,
			      .plan = plan, .t0 = t0, .deadline = deadline,
			      .failure = -1 };
	rc = run_workers(&x, jobs, tc, nsaved, argc, argv);
	run_plan_unmap(plan);
out:
	check_free(c);
	target_list_close(t, n);
	op_seq_free(&meta);
	op_seq_free(&xops);
	return rc;
}
