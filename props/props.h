/*
 * props.h - fsoracle's property-testing engine: properties over generated
 * arguments, integrated shrinking, fork isolation, a seed database and
 * model-based (state-machine) testing.  Written here from the concepts of
 * theft, RapidCheck and Hypothesis (shared/notes/fuzz-and-props.md), not
 * from their code.
 *
 * A property is a function over 1..PROPS_MAX_ARGS generated arguments
 * that returns PROPS_PASS, PROPS_FAIL or PROPS_SKIP.  A run calls it on
 * `trials` argument tuples; the first failure is shrunk to a minimal
 * counterexample and printed with the trial seed that reproduces it.
 *
 * Generation reads a recorded pool of random bits.  Every request a
 * generator makes (props_bits, props_int, props_below, ...) becomes one
 * pool entry: its value and its width.  The contract every generator
 * keeps, and the one thing shrinking relies on:
 *
 *   smaller entries give simpler values, all-zero entries the minimal one,
 *   and reading past the end of the pool reads zeros.
 *
 * So shrinking never needs to know a type: it edits the pool (deletes
 * spans of entries, then makes single entries smaller), regenerates the
 * arguments from it and keeps the candidate if the property still fails.
 * Every candidate is a value the generator could have made.
 *
 *   search:   trial seed --rng--> entries --generators--> args --> property
 *   shrink:   edited entries -----------------^ (past the end: zeros)
 *   fuzz:     fuzzer bytes, ceil(width/8) little-endian bytes per entry -^
 *
 * A pool serializes to exactly the bytes a fuzzer would have to supply to
 * produce it, so props_run_bytes() serves as a libFuzzer entry point over
 * the same property, and a minimal counterexample's bytes replay it.
 *
 * Collections mark each element as a span (props_more); the shrinker
 * deletes runs of sibling spans (elements, state-machine steps) before it
 * touches single entries, as Hypothesis and RapidCheck shrink sequences.
 *
 * Errors are negative errno (-EINVAL bad config, -ENOMEM); results of a
 * run or trial are enum props_result.
 */
#ifndef FSORACLE_PROPS_H
#define FSORACLE_PROPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/check.h"
#include "harness/op.h"
#include "harness/target.h"

#define PROPS_MAX_ARGS 7

/* What a trial, a generator or a whole run came to. */
enum props_result {
	PROPS_PASS = 0,
	PROPS_FAIL = 1,
	PROPS_SKIP = 2,   /* the arguments do not apply (a trial); every
			     trial skipped or duplicate (a run)            */
	PROPS_DUP = 3,    /* these arguments were already tried           */
	PROPS_ERROR = 4,  /* stop the run: the property or a hook broke   */
};

/* The runner handle a generator and the property get. */
struct props_trial;

/* ---- generation: reading the pool ---- */

/* `width` random bits (0..64) as one entry; all zero when minimal. */
uint64_t props_bits(struct props_trial *t, unsigned width);
/* A choice in [0, n): 0 is the simplest.  n == 0 gives 0. */
uint64_t props_below(struct props_trial *t, uint64_t n);
/* A fair coin; 0 (false) is simpler. */
int props_bool(struct props_trial *t);
/*
 * An integer in [lo, hi], shrinking toward lo.  Log-uniform magnitude
 * (as many small values as large), biased toward the boundaries: lo,
 * lo+1, hi, hi-1 and 2^k-1 come up far more often than uniform would
 * make them.  Two entries: the magnitude, then the value at it.
 */
uint64_t props_int(struct props_trial *t, uint64_t lo, uint64_t hi);
/* Signed, shrinking toward 0 (or the end of [lo, hi] nearest to it). */
int64_t props_sint(struct props_trial *t, int64_t lo, int64_t hi);
/*
 * Element loop for collections: returns 1 while another element should
 * be made.  Between min and max elements, `avg` on average (geometric).
 * Each element is a span: call props_more until it returns 0, and it
 * closes the previous element's span itself.
 *
 *   struct props_many m = PROPS_MANY(0, 100, 8);
 *   while (props_more(t, &m)) push(gen_element(t));
 */
struct props_many {
	uint32_t min, max, avg;
	uint32_t count;           /* elements so far                      */
	int open;                 /* an element span is open              */
};
#define PROPS_MANY(mn, mx, av) { .min = (mn), .max = (mx), .avg = (av) }
int props_more(struct props_trial *t, struct props_many *m);
/* Random bytes: a length in [min, max] (avg on average), then one entry
 * per byte inside its own span.  Returns the length. */
size_t props_fill(struct props_trial *t, uint8_t *buf, size_t min,
		  size_t max, size_t avg);

/* Spans group entries for the shrinker (deleted as one); they nest. */
void props_span_begin(struct props_trial *t);
void props_span_end(struct props_trial *t);

/* The property's env (cfg.env); a note printed with the counterexample
 * (kept only for the minimal one, as RapidCheck's RC_LOG). */
void *props_env(struct props_trial *t);
void props_note(struct props_trial *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- types: how to make, free and print an argument ---- */

/*
 * A custom shrink tactic edits the pool entries of its own argument
 * through these calls and returns PROPS_SHRINK_OK when it made a
 * candidate, PROPS_SHRINK_DEAD_END when tactic number `tactic` has
 * nothing to offer for this instance, PROPS_SHRINK_NO_MORE_TACTICS past
 * its last one.  The engine tries tactics in order after its own passes;
 * a candidate that still fails and is smaller restarts at tactic 0, so
 * put the big steps first.  Tactics must be deterministic.
 */
struct props_edit;
enum { PROPS_SHRINK_OK, PROPS_SHRINK_DEAD_END, PROPS_SHRINK_NO_MORE_TACTICS };
size_t props_edit_count(const struct props_edit *e);
uint64_t props_edit_get(const struct props_edit *e, size_t i);
void props_edit_set(struct props_edit *e, size_t i, uint64_t v);
/* Remove entries [i, i + n) of the argument. */
void props_edit_delete(struct props_edit *e, size_t i, size_t n);

struct props_type {
	const char *name;
	/* Make an instance from the trial's bits.  PROPS_PASS (made),
	 * PROPS_SKIP (no instance for these bits) or PROPS_ERROR. */
	int (*alloc)(struct props_trial *t, void *env, void **out);
	void (*free)(void *inst, void *env);              /* NULL: free() */
	/* NULL: the argument's pool entries are printed */
	void (*print)(FILE *f, const void *inst, void *env);
	/* optional, see above */
	int (*shrink)(const void *inst, struct props_edit *e, uint32_t tactic,
		      void *env);
	void *env;
};

/* Built-in types.  Their env points at a const config. */
struct props_int_env { uint64_t lo, hi; };        /* inst: uint64_t *  */
struct props_sint_env { int64_t lo, hi; };        /* inst: int64_t *   */
struct props_buf_env { size_t min, max, avg; };   /* inst: props_buf * */
struct props_buf { size_t len; uint8_t data[]; };
int props_int_alloc(struct props_trial *t, void *env, void **out);
void props_int_print(FILE *f, const void *inst, void *env);
int props_sint_alloc(struct props_trial *t, void *env, void **out);
void props_sint_print(FILE *f, const void *inst, void *env);
int props_buf_alloc(struct props_trial *t, void *env, void **out);
void props_buf_print(FILE *f, const void *inst, void *env);
#define PROPS_INT_TYPE(envp) { .name = "int", .alloc = props_int_alloc,      \
	.print = props_int_print, .env = (void *)(envp) }
#define PROPS_SINT_TYPE(envp) { .name = "sint", .alloc = props_sint_alloc,   \
	.print = props_sint_print, .env = (void *)(envp) }
#define PROPS_BUF_TYPE(envp) { .name = "bytes", .alloc = props_buf_alloc,    \
	.print = props_buf_print, .env = (void *)(envp) }

/* ---- hooks ---- */

enum props_hook_result {
	PROPS_HOOK_CONTINUE = 0,
	PROPS_HOOK_HALT,          /* trial_pre, shrink_pre, shrink_post     */
	PROPS_HOOK_REPEAT,        /* trial_post: run the same args again    */
	PROPS_HOOK_REPEAT_ONCE,   /* trial_post: again, once                */
	PROPS_HOOK_ERROR,         /* any: stop the run with PROPS_ERROR     */
};

/* shrink_post's state */
enum { PROPS_SHRINK_SHRUNK = 1, PROPS_SHRINK_FAILED, PROPS_SHRINK_DUP };

struct props_report;

/* What a hook is told.  Fields not meaningful for a hook are zero. */
struct props_info {
	const char *name;
	uint64_t run_seed, trial_seed;
	uint32_t trial;                 /* 0-based; regression seeds first */
	int result;                     /* trial_post, shrink_post         */
	int repeat;                     /* trial_post: 1 on a repeated call */
	void *const *args;              /* trial_post, counterexample      */
	unsigned nargs;
	const struct props_report *report; /* counts so far                */
	uint32_t shrink_attempts, shrinks; /* shrink hooks                 */
	int shrink_state;               /* shrink_post: PROPS_SHRINK_*     */
	const char *notes;              /* trial_post, counterexample      */
};

typedef int (*props_hook_fn)(const struct props_info *info, void *env);

struct props_hooks {
	props_hook_fn run_pre, run_post;
	props_hook_fn trial_pre;        /* HALT stops before the trial      */
	props_hook_fn trial_post;       /* REPEAT, REPEAT_ONCE              */
	props_hook_fn shrink_pre;       /* HALT keeps what is shrunk so far */
	props_hook_fn shrink_post;      /* HALT likewise                    */
	props_hook_fn counterexample;   /* NULL: the default print          */
	void (*fork_post)(const struct props_info *info, void *env); /* child */
	void *env;
};

/* ---- a run ---- */

typedef int (*props_prop1_fn)(struct props_trial *t, void *a);
typedef int (*props_prop2_fn)(struct props_trial *t, void *a, void *b);
typedef int (*props_prop3_fn)(struct props_trial *t, void *a, void *b,
			      void *c);
typedef int (*props_propv_fn)(struct props_trial *t, void *const *args,
			      unsigned nargs);

/* Zero (or NULL) means the default in every field. */
struct props_cfg {
	const char *name;
	/* exactly one of these; its arity must match `types` */
	props_prop1_fn prop1;
	props_prop2_fn prop2;
	props_prop3_fn prop3;
	props_propv_fn propv;
	const struct props_type *types[PROPS_MAX_ARGS]; /* NULL ends them */
	void *env;                      /* props_env()                     */

	uint32_t trials;                /* random trials; 100              */
	uint64_t seed;                  /* the run seed = the first trial's */
	const uint64_t *always_seeds;   /* regression seeds, run first     */
	size_t nalways;
	uint32_t max_entries;           /* pool entries per trial; 65536   */

	struct {
		int enable;             /* each trial in a child process   */
		uint32_t timeout_ms;    /* 10000; a hang is a failure      */
		int signal;             /* sent at the timeout; SIGTERM    */
		uint32_t exit_timeout_ms; /* then SIGKILL after this; 100  */
		int verbose;            /* keep the children's stdout/err
					   (else only the final replay's)  */
	} fork;

	struct {
		int disable;
		uint32_t max_attempts;  /* candidates tried; 20000         */
		uint32_t max_ms;        /* wall clock; 30000               */
	} shrink;

	struct props_hooks hooks;
	const char *db;                 /* seed database dir; NULL: none   */
	FILE *out;                      /* stdout                          */
	int quiet;                      /* print nothing                   */
	int terse;                      /* print only a failure            */
	int progress;                   /* a '.' per trial ('d' dup, 's'
					   skip, 'F' fail), as theft       */
};

/* What a run did. */
struct props_report {
	uint32_t pass, fail, skip, dup;
	uint32_t trials;                /* pass + fail + skip + dup        */
	uint64_t fail_seed;             /* the failing trial's seed        */
	uint32_t fail_trial;
	uint32_t shrink_attempts;       /* candidates run                  */
	uint32_t shrinks;               /* ... that were kept              */
	uint32_t shrink_dups;           /* ... skipped as already tried    */
	int shrink_halted;              /* a budget or hook ended shrinking */
	double shrink_ms, run_ms;
	uint32_t db_replayed;           /* seeds from the database run     */
	/* The minimal counterexample (after a failure; malloc'd, freed by
	 * props_report_free): the printed arguments and notes, and the
	 * pool's bytes (props_run_bytes replays them). */
	char *cex;
	uint8_t *cex_bytes;
	size_t cex_len;
	/* The first argument that is an op sequence (props_ops_print), as
	 * the op log `fsoracle replay` takes; NULL when there is none. */
	char *cex_log;
};

/*
 * Run a property.  Returns enum props_result (PROPS_PASS, PROPS_FAIL,
 * PROPS_SKIP when no trial passed but none failed, PROPS_ERROR) or a
 * negative errno for a bad config (-EINVAL) or -ENOMEM.  rep may be NULL;
 * else free it with props_report_free.
 */
int props_run(const struct props_cfg *cfg, struct props_report *rep);
void props_report_free(struct props_report *rep);

/*
 * Run a property once on bytes as its pool (ceil(width/8) little-endian
 * bytes per request; zeros past the end), in process, without shrinking
 * unless shrink is set.  For fuzzers:
 *
 *   int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
 *   {
 *           if (props_run_bytes(&cfg, d, n, 0, NULL) == PROPS_FAIL)
 *                   abort();
 *           return 0;
 *   }
 *
 * Prints the counterexample on failure (unless cfg->quiet).
 */
int props_run_bytes(const struct props_cfg *cfg, const uint8_t *data,
		    size_t len, int shrink, struct props_report *rep);

/* "pass", "fail", ... */
const char *props_result_name(int result);

/* ---- model-based (state-machine) testing ---- */

/*
 * A state machine tests a real system (the SUT) against a model.  The
 * argument is a sequence of steps built by the model alone: at each step
 * a command is chosen among those `enabled` in the current model state,
 * its arguments generated (they may look at the model), its precondition
 * `pre` checked (a step whose precondition fails is dropped), and the
 * model advanced with `next`.  The property then runs the steps on a
 * fresh SUT: `run` acts and checks the postcondition against the model
 * state before the step, then `next` advances a model copy and
 * `invariant` checks the whole SUT against it.
 *
 * Shrinking deletes runs of steps first (each step is a span), then
 * shrinks single steps' arguments; every candidate is rebuilt through
 * the model, so preconditions are checked again and steps that no longer
 * apply are dropped.  The model is plain data (model_size bytes, copied
 * with memcpy), and so are a command's arguments (args_size bytes).
 */
struct props_cmd {
	const char *name;
	/* may this command be chosen now?  NULL: always */
	int (*enabled)(const void *model, void *env);
	/* make the arguments from bits (may read the model); NULL: none */
	void (*gen)(struct props_trial *t, const void *model, void *args,
		    void *env);
	/* do these arguments apply?  NULL: yes */
	int (*pre)(const void *model, const void *args, void *env);
	/* the model transition; NULL: the model does not change */
	void (*next)(void *model, const void *args, void *env);
	/* act on the SUT and check the result: PROPS_PASS or PROPS_FAIL */
	int (*run)(struct props_trial *t, void *sut, const void *model,
		   const void *args, void *env);
	/* print the step (one line, no newline); NULL: the name */
	void (*print)(FILE *f, const void *args, void *env);
};

struct props_sm {
	const char *name;
	size_t model_size, args_size;   /* args_size: the largest command's */
	void (*model_init)(void *model, void *env);
	/* a fresh SUT; NULL on failure (an error for the run) */
	void *(*sut_new)(void *env);
	void (*sut_free)(void *sut, void *env);
	/* after every step: PROPS_PASS or PROPS_FAIL; NULL: none */
	int (*invariant)(struct props_trial *t, void *sut, const void *model,
			 void *env);
	const struct props_cmd *cmds;
	unsigned ncmds;
	uint32_t max_steps, avg_steps;  /* 100, 20                          */
	void *env;
};

int props_sm_alloc(struct props_trial *t, void *env, void **out);
void props_sm_free(void *inst, void *env);
void props_sm_print(FILE *f, const void *inst, void *env);
/* The property: run the steps on a fresh SUT (prop1). */
int props_sm_check(struct props_trial *t, void *steps);
#define PROPS_SM_TYPE(smp) { .name = "steps", .alloc = props_sm_alloc,       \
	.free = props_sm_free, .print = props_sm_print, .env = (void *)(smp) }
/* How many steps an instance has (for tests). */
size_t props_sm_steps(const void *inst);

/* ---- op sequences ---- */

/*
 * Op sequences through the spine's binary decoder: each op is a span of
 * requests (kind, files, flags, pattern, off, len, arg) assembled into a
 * 16-byte record and decoded by op_bin_decode, so every op log the
 * binary form can carry is generatable, all-zero bits give the empty
 * sequence, and shrinking deletes ops before it makes values smaller.
 * Printed as a text op log with a header that `fsoracle replay` takes as
 * is.  Instance: struct op_seq *.
 */
struct props_ops_env {
	uint64_t max_file;        /* binary geometry; 1 MiB                 */
	uint32_t nfiles;          /* 1..8; 2                                */
	uint64_t kinds;           /* bit per enum op_kind; 0: all           */
	uint32_t max_ops, avg_ops;/* 64, 8                                  */
	/* the printed log's header (NULL: none) */
	const char *dev, *mkfs, *targets;
};
/* Kind masks for props_ops_env.kinds. */
#define PROPS_KIND(k) (1ull << (k))
#define PROPS_KINDS_DATA (PROPS_KIND(OP_PWRITE) | PROPS_KIND(OP_PREAD) |     \
	PROPS_KIND(OP_TRUNCATE) | PROPS_KIND(OP_FALLOC) |                    \
	PROPS_KIND(OP_FPUNCH) | PROPS_KIND(OP_FZERO))
#define PROPS_KINDS_DURABLE (PROPS_KIND(OP_FSYNC) |                          \
	PROPS_KIND(OP_FDATASYNC) | PROPS_KIND(OP_SYNC))
int props_ops_alloc(struct props_trial *t, void *env, void **out);
void props_ops_free(void *inst, void *env);
void props_ops_print(FILE *f, const void *inst, void *env);
#define PROPS_OPS_TYPE(envp) { .name = "ops", .alloc = props_ops_alloc,      \
	.free = props_ops_free, .print = props_ops_print, .env = (void *)(envp) }
/* An op log a suite builds itself (its instance starts with the op_seq):
 * printed as the log, so `fsoracle prop --logs` writes it. */
#define PROPS_LOG_TYPE(nm, allocfn, envp) { .name = (nm),                    \
	.alloc = (allocfn), .free = props_ops_free, .print = props_ops_print, \
	.env = (void *)(envp) }
/* Generate one op sequence into seq (appended); 0 or -ENOMEM. */
int props_ops_gen(struct props_trial *t, const struct props_ops_env *env,
		  struct op_seq *seq);

/*
 * Targets for differential properties, opened on first use and kept for
 * the run.  The hooks take the props_targets as hooks.env: run_pre =
 * props_targets_open_hook opens them before the first trial (in fork
 * mode every child then inherits them instead of opening its own),
 * run_post = props_targets_close_hook closes them.  list is a target
 * list (target.h); dev and mkfs its defaults.
 */
struct props_targets {
	const char *list, *dev, *mkfs;
	const char *mount, *rtdev;   /* NULL: the defaults, none            */
	struct target *t[TARGET_MAX];
	int n, open;
};
/* 0, or -errno with one line in err. */
int props_targets_get(struct props_targets *pt, char *err, size_t errlen);
void props_targets_close(struct props_targets *pt);
int props_targets_open_hook(const struct props_info *info, void *env);
int props_targets_close_hook(const struct props_info *info, void *env);
/* Both, as a props_cfg.hooks initializer, and a whole props_cfg for a
 * one-argument property over targets. */
#define PROPS_TARGETS_HOOKS(ptp) { .run_pre = props_targets_open_hook,     \
	.run_post = props_targets_close_hook, .env = (ptp) }
#define PROPS_TARGETS_CFG(fn, typep, ptp) { .prop1 = (fn),                 \
	.types = { (typep) }, .hooks = PROPS_TARGETS_HOOKS(ptp) }
/*
 * The differential property: run seq on every target of pt in lock step
 * through the checker (check.h; cc NULL: its defaults, quiet) and fail on
 * the first disagreement, with the checker's finding as the note.
 */
int props_check_ops(struct props_trial *t, struct props_targets *pt,
		    const struct op_seq *seq, const struct check_cfg *cc);
/*
 * The same as a replay of seq's printed log would do it: the targets of
 * its header (targets=, dev=, rt=, mkfs=, mount=; engine,model and
 * mem:64m when absent) opened for this trial, and the checker with the
 * header's check= (each, twins=) over cc.  When hook is not NULL it runs
 * after every op the checker passed (opno 1-based) and after the last
 * (opno 0): the property's own checks of the targets' state (counters,
 * invariants of one path) beyond what a replay checks; PROPS_PASS or a
 * failure with a note.
 */
typedef int (*props_op_hook)(struct props_trial *t, struct target **tg,
			     int n, uint64_t opno, void *arg);
int props_check_log(struct props_trial *t, const struct op_seq *seq,
		    const struct check_cfg *cc, props_op_hook hook, void *arg);
/*
 * Every realtime extent of files f0..f(nfiles-1) of engine target e
 * covers at most the append limit its zoned device reports (hw.h's
 * max_append), not the engine's own copy (props/appendcap.c).  PASS
 * without a zoned realtime device; FAIL with the extent in the note.
 */
int props_append_limit_held(struct props_trial *t, struct target *e,
			    unsigned nfiles);

/* ---- suites ---- */

/*
 * A named property with its configuration.  known_bug, when set, says
 * which engine bug the property finds today: runners report its failure
 * as known (not a test failure) and its passing as "fixed? drop the
 * known_bug line", so a found bug is written down where it is found
 * instead of the property being weakened until it passes.
 */
struct props_prop {
	const char *name;        /* what must hold: btree_delete_keeps_order */
	const char *doc;
	struct props_cfg cfg;
	const char *known_bug;
};

struct props_suite {
	const char *name;
	const char *doc;
	const struct props_prop *props;
	size_t nprops;
	int planted;             /* its properties must fail (self-test)  */
};
/* A suite's .props and .nprops, from one array (as perf's PERF_COUNTERS). */
#define PROPS_LIST(a) .props = (a), .nprops = sizeof(a) / sizeof((a)[0])

/* Every suite, in listing order, and lookup by name. */
extern const struct props_suite *const props_suites[];
extern const size_t props_nsuites;
const struct props_suite *props_suite_find(const char *name);
/* A property by name in any suite; *suite gets its suite. */
const struct props_prop *props_prop_find(const char *name,
					 const struct props_suite **suite);

/* What a command line overrides in a property's cfg (zero: keep). */
struct props_override {
	uint32_t trials;
	int have_seed;
	uint64_t seed;
	int fork;
	const char *db;
	FILE *out;
	int quiet, terse, progress;
};
/* Apply o to a copy of p->cfg (named p->name) and run it. */
int props_prop_run(const struct props_prop *p, const struct props_override *o,
		   struct props_report *rep);

/* The benchmark (`fsoracle prop --bench`): trials/s and shrink times. */
int props_bench(FILE *out);

#endif
