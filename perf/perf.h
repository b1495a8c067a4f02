/*
 * perf.h - the performance oracle: each seed's experiment run twice on the
 * engine, once through a path's naive twin and once through its optimized
 * version, on identical inputs.
 *
 * Two questions, two kinds of evidence:
 *   "does the optimized path really do less work, and how much less?"
 *       deterministic work counters (ref_counters), exact, measured at the
 *       seed's own scale on null: devices that store no data;
 *   "is it faster, or is that noise?"
 *       wall time of the same operation on mem: devices at a quick scale,
 *       the twins run side by side (A B A B ..., a warm-up pair discarded),
 *       a paired sign test for the verdict and a bootstrap confidence
 *       interval for the ratio.
 *
 * A scenario whose path the engine does not implement yet says so and is
 * skipped; nothing is ever estimated in its place.
 */
#ifndef FSORACLE_PERF_H
#define FSORACLE_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hw/hw.h"
#include "ref/ref.h"

/* ---- statistics (stats.c) ----------------------------------------- */

struct perf_summary {
	unsigned n;
	double min, q1, median, q3, max;  /* quartiles: linear interpolation */
};

/* Summary of x[0..n) (x is not modified); all zero when n == 0. */
void perf_summarize(const double *x, unsigned n, struct perf_summary *s);
/* The q-quantile (0..1) of x[0..n), linear between order statistics. */
double perf_quantile(const double *x, unsigned n, double q);

enum perf_verdict {
	PERF_NO_DATA = 0,
	PERF_NO_DIFFERENCE,      /* "no significant difference"               */
	PERF_FASTER,             /* the second sample is faster               */
	PERF_SLOWER,             /* the second sample is slower               */
};
const char *perf_verdict_name(enum perf_verdict v);

/*
 * A comparison of two timing samples, b against a: ratio is b/a (below 1:
 * b is faster).  Paired (perf_compare_paired): a[i] and b[i] were measured
 * side by side; ratio is the median of the pair ratios, ci its percentile
 * bootstrap interval over pairs, p the two-sided exact sign test.
 * Unpaired (perf_compare_unpaired): ratio is median(b)/median(a), ci the
 * bootstrap over both samples independently, p the two-sided Mann-Whitney
 * U test (normal approximation with tie correction).
 *
 * The verdict is "faster" or "slower" only when p < alpha AND the interval
 * excludes 1 AND the effect is at least min_effect (0.01 = 1%); else "no
 * significant difference".  Under no difference, the test alone keeps
 * false alarms at or below alpha; the other two conditions only lower it.
 */
struct perf_cmp_opts {
	double alpha;            /* 0 = 0.05                              */
	double level;            /* CI level; 0 = 0.95                     */
	unsigned resamples;      /* bootstrap resamples; 0 = 2000          */
	double min_effect;       /* 0 = none                               */
	uint64_t seed;           /* bootstrap RNG seed (deterministic)     */
};
struct perf_cmp {
	unsigned n;              /* pairs, or min(na, nb) when unpaired    */
	double ratio, lo, hi;
	double p;
	enum perf_verdict verdict;
};
void perf_compare_paired(const double *a, const double *b, unsigned n,
			 const struct perf_cmp_opts *o, struct perf_cmp *out);
void perf_compare_unpaired(const double *a, unsigned na, const double *b,
			   unsigned nb, const struct perf_cmp_opts *o,
			   struct perf_cmp *out);
/* Two-sided exact sign test: k of n pairs one way (ties dropped). */
double perf_sign_test(unsigned k, unsigned n);
/* Two-sided Mann-Whitney U test of a against b. */
double perf_mann_whitney(const double *a, unsigned na, const double *b,
			 unsigned nb);

/* ---- the sequential test (seq.c) ------------------------------------ */

/*
 * One comparison sampled until it is decided: values x_i = log(tB/tA) of
 * one round each (paired), or log times of the new run against a saved
 * reference (two-sample, perf_seq_set_reference).  At looks n = 10, 14,
 * 20, 28, ... (perf_seq_look_at) the Hodges-Lehmann shift gets an
 * interval of level 1 - alpha x the look's share (perf_seq_look_share:
 * falling, the first about half; signed-rank or Mann-Whitney inversion); the comparison stops "slower" when the ratio's
 * interval lies above 1, "faster" below 1, "same" inside 1 ± min_effect.
 * The chance of any false "slower"/"faster" over all looks is at most
 * alpha.  perf_seq_stop() (the budget is out) takes one last look.
 * With max_looks = 1 it is a fixed-sample test: the one look comes at
 * perf_seq_stop().
 */
#define PERF_SEQ_LOOKS 12

enum perf_seq_state {
	PERF_SEQ_RUNNING = 0,
	PERF_SEQ_SAME,           /* no change within ±min_effect           */
	PERF_SEQ_SLOWER,         /* B slower: the interval lies above 1    */
	PERF_SEQ_FASTER,
	PERF_SEQ_INCONCLUSIVE,   /* budget or looks out, or no memory      */
};
struct perf_seq_opts {
	double alpha;            /* this comparison's share; 0 = 0.05      */
	double min_effect;       /* 0 = 0.05                              */
	unsigned max_looks;      /* 0 = PERF_SEQ_LOOKS; 1: a fixed sample,
				    one look at perf_seq_stop() at level
				    1 - alpha                             */
};
struct perf_seq {
	double alpha, min_effect;
	double *x; unsigned n, cap;
	double *ref; unsigned nref;  /* two-sample: the saved run's values */
	unsigned looks, max_looks;
	double est, lo, hi;      /* log ratio and its interval (last look) */
	double noise;            /* 1.4826 MAD of one x (last look)        */
	enum perf_seq_state state;
};
void perf_seq_init(struct perf_seq *s, const struct perf_seq_opts *o);
void perf_seq_free(struct perf_seq *s);
int perf_seq_set_reference(struct perf_seq *s, const double *ref,
			   unsigned n);
/* Add one value; looks when n reaches the next look.  The state. */
enum perf_seq_state perf_seq_add(struct perf_seq *s, double x);
enum perf_seq_state perf_seq_stop(struct perf_seq *s);
/* Round count of look k (0-based). */
unsigned perf_seq_look_at(unsigned k);
/* The share of alpha that look k (0-based) of looks spends: k+1 to the
 * -1.5, over the sum of all of them (0 looks: PERF_SEQ_LOOKS). */
double perf_seq_look_share(unsigned k, unsigned looks);
/* "no change within ±5%", "slower by 6-9%", "inconclusive: noise ±12%
 * after 60 s". */
void perf_seq_text(const struct perf_seq *s, double secs, char *buf,
		   size_t len);

/* ---- scenarios (scenarios.c, s000_*.c, ...) -------------------------- */

enum perf_scale {
	PERF_QUICK = 0,          /* reduced counts, a short timed run      */
	PERF_FULL,               /* counters at the seed's own scale       */
};

/* Where a run happens: counters on null:, timing on mem:. */
enum perf_where { PERF_COUNT, PERF_TIME };

#define PERF_MAX_FILES 4096

/* A formatted filesystem, mounted, with the scenario's files in it. */
struct perf_world {
	struct hw_dev *dev, *rtdev;
	struct ref_fs *fs;
	uint64_t ino[PERF_MAX_FILES];
	unsigned nfiles;
};

/* One run of a scenario: which case, at which scale, through which twin. */
struct perf_job {
	unsigned variant;
	uint64_t param;
	enum perf_scale scale;
	enum perf_where where;
	uint32_t naive;          /* REF_PATH_* bits: the naive twin        */
};

/*
 * A counter the report shows: a sum of engine counters (by name, as
 * ref_counters_foreach() spells them, joined with '+').  A counter the
 * engine does not have yet is reported as missing, never as 0.  A
 * primary counter is the work the path exists to save: the optimized
 * twin must do strictly less of it (exactly as much where the case saves
 * nothing, see ->saves), or the run fails.
 */
struct perf_counter_spec {
	const char *name;
	const char *sum;
	int primary;
};

#define PERF_MAX_COUNTERS 8
#define PERF_MAX_PARAMS   12
#define PERF_MAX_VARIANTS 6
#define PERF_MAX_CHECKS   12

/* A figure from the seed's thread, scaled to the run and asserted. */
struct perf_check {
	char what[96];
	unsigned counter;        /* index into the scenario's counters     */
	int twin;                /* 0 naive, 1 optimized, 2 naive minus
				    optimized, 3 optimized minus naive    */
	uint64_t expect, got;
	unsigned tolerance_pct;  /* 0 = exact; the seed says "about"       */
	int have;                /* got is known (the counter exists)      */
};

struct perf_scenario {
	const char *id;          /* "000"                                 */
	const char *name;        /* "rt-truncate"                         */
	const char *title;       /* one line                              */
	unsigned path;           /* enum ref_path                         */
	const char *path_label;  /* "(a) rt truncate"                     */
	const char *param_name;  /* the swept parameter                   */
	int param_bytes;         /* print the parameter as a size         */
	const char *const *variants; unsigned nvariants;
	const uint64_t *params[2]; unsigned nparams[2]; /* by scale       */
	uint64_t time_max_param; /* no timing above it (0: no limit)      */
	const struct perf_counter_spec *counters; unsigned ncounters;
	/* What each run does, one line per scale (for --list). */
	const char *scale_doc[2];
	const char *time_doc;
	/*
	 * 0 if the engine implements the path, else -ENOSYS with the
	 * reason in why ("path (c) end-COW is not implemented in the engine
	 * yet"): the scenario is skipped.  Any other error is the engine
	 * failing the probe: the scenario is an error.  NULL: always
	 * available.
	 */
	int (*probe)(char *why, size_t len);
	/* Format and mount w with j->naive and fill it (not measured). */
	int (*setup)(struct perf_world *w, const struct perf_job *j,
		     char *err, size_t len);
	/*
	 * Does this job's case save work at all?  (Journalled data must be
	 * forgotten block by block in both twins.)  Where it does not, the
	 * primary counters must be equal instead of lower.  NULL: always.
	 */
	int (*saves)(const struct perf_job *j);
	/* The measured operation. */
	int (*op)(struct perf_world *w, const struct perf_job *j);
	/*
	 * The seed's figures scaled to this job (j->naive is unset): fills
	 * up to max checks (what, counter, twin, expect, tolerance) and
	 * returns how many.  The driver fills got and have.  NULL: none.
	 */
	unsigned (*seed)(const struct perf_job *j, struct perf_check *out,
			 unsigned max);
};

extern const struct perf_scenario *const perf_scenarios[];
extern const unsigned perf_nscenarios;
const struct perf_scenario *perf_scenario_find(const char *id_or_name);

/* World helpers for scenarios: devices by spec, mkfs, mount with naive. */
int perf_world_open(struct perf_world *w, const char *dev, const char *rtdev,
		    const char *mkfs, const char *mount, uint32_t naive,
		    char *err, size_t len);
void perf_world_close(struct perf_world *w);
/* Set err to a formatted line and return rc. */
int perf_fail(char *err, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- the driver (run.c) -------------------------------------------- */

/* What a timed run measures (perf_sample_clock). */
enum perf_clock { PERF_CLOCK_WALL = 0, PERF_CLOCK_CPU };

struct perf_opts {
	enum perf_scale scale;
	unsigned repeats;        /* timed pairs kept; 0: perf_repeats()    */
	unsigned warmup;         /* discarded pairs first; default 1       */
	int counters_only, time_only;
	uint64_t seed;           /* bootstrap seed; 0 = fixed default      */
	int quiet;               /* no progress on stderr                  */
	/*
	 * The planted cost knob, for validating the A/B verdict: the
	 * optimized twin of scenario plant_id gets plant_pct percent extra
	 * wall time (a busy wait after its operation, proportional to the
	 * operation's own time).  Never touches the engine's counters.
	 */
	const char *plant_id;
	double plant_pct;
	enum perf_clock clock;   /* --sample: what to measure              */
	unsigned sample_reps;    /* --sample: runs, the fastest kept; 0: 1 */
};

/* Timed pairs kept by default: 12 quick, 20 full (with 12 pairs the sign
 * test still finds a difference when 2 pairs go the other way). */
unsigned perf_repeats(const struct perf_opts *o);

struct perf_counts { uint64_t v[PERF_MAX_COUNTERS]; uint32_t have; };

struct perf_point {
	unsigned variant;
	uint64_t param;
	int counted;
	struct perf_counts naive, opt;
	int saves;               /* the case saves work (see ->saves)      */
	uint32_t less_fail;      /* primary counters failing that, by bit  */
	struct perf_check checks[PERF_MAX_CHECKS];
	unsigned nchecks;
	int timed;
	unsigned nsamples;
	double *tnaive, *topt;   /* seconds, malloc'ed, nsamples each      */
	struct perf_summary sn, so;
	struct perf_cmp cmp;     /* optimized against naive               */
};

enum perf_status { PERF_OK = 0, PERF_SKIPPED, PERF_ERROR };

struct perf_result {
	const struct perf_scenario *sc;
	enum perf_status status;
	char reason[256];
	struct perf_point pts[PERF_MAX_VARIANTS * PERF_MAX_PARAMS];
	unsigned npts;
	unsigned seed_checks, seed_mismatches, less_work_failures;
};

/*
 * One run of job j: set up (not measured), run the operation, and take
 * its counters (cnt non-NULL) and its time in seconds (secs non-NULL).
 * The planted cost, when asked, is a busy wait of plant_pct percent of the
 * operation's own time, after it.  0 or -errno with a line in err.
 */
int perf_sample(const struct perf_scenario *sc, const struct perf_job *j,
		struct perf_counts *cnt, double *secs, double plant_pct,
		char *err, size_t len);
/*
 * Pin this process (and the children it starts) to the CPU it runs on,
 * so A and B, and both twins, share one core's caches; 0, or -errno when
 * the system does not allow it (a line in what either way).
 */
int perf_pin_cpu(char *what, size_t len);
/*
 * Keep the memory the engine frees in this process (glibc: no trim of the
 * heap, mmap only past 32 MiB), so a timed operation that frees pages
 * does not also pay the kernel for taking them back and giving them again.
 */
void perf_hold_memory(void);
/*
 * The same on a chosen clock: wall time (CLOCK_MONOTONIC), or the
 * process's CPU time (every thread's; the time the machine gave to other
 * work does not count, so a shared machine's noise mostly drops out).
 * The planted cost is a busy wait on the same clock.
 */
int perf_sample_clock(const struct perf_scenario *sc,
		      const struct perf_job *j, struct perf_counts *cnt,
		      double *secs, double plant_pct, enum perf_clock clock,
		      char *err, size_t len);
/* Run one scenario; progress lines go to progress (NULL: none). */
void perf_run(const struct perf_scenario *sc, const struct perf_opts *o,
	      struct perf_result *r, FILE *progress);
void perf_result_free(struct perf_result *r);
/* Does check c hold (exactly, or within its tolerance)? */
int perf_check_holds(const struct perf_check *c);

/* ---- reports (report.c, svg.c) ------------------------------------- */

void perf_format_param(const struct perf_scenario *sc, uint64_t v, char *buf,
		       size_t len);
void perf_print_table(FILE *f, const struct perf_result *r, unsigned n);
int perf_write_json(FILE *f, const struct perf_opts *o,
		    const struct perf_result *r, unsigned n);
/* One SVG per scenario and variant, DIR/<id>-<name>[-<variant>].svg. */
int perf_write_svgs(const char *dir, const struct perf_result *r, unsigned n,
		    char *err, size_t len);
int perf_write_svg(FILE *f, const struct perf_result *r, unsigned variant);

/* ---- JSON (json.c) and A/B comparison (compare.c) ------------------ */

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY,
		 JSON_OBJECT };
struct json {
	enum json_type type;
	double num;
	int boolean;
	char *str;               /* STRING; NUMBER: its text (exact u64)  */
	char *key;               /* member name inside an object          */
	struct json *child, *next;
};
/* Parse text; NULL on error with "line L col C: what" in err. */
struct json *json_parse(const char *text, char *err, size_t len);
void json_free(struct json *j);
const struct json *json_get(const struct json *obj, const char *key);
const struct json *json_at(const struct json *arr, unsigned i);
unsigned json_len(const struct json *arr);
uint64_t json_u64(const struct json *j);
/* Write s as a JSON string literal (quotes and escapes). */
void json_put_string(FILE *f, const char *s);
/* Write a double as JSON (finite; NaN and inf become null). */
void json_put_double(FILE *f, double v);
/*
 * Check that text is one JSON value and write it to f, indented; -EINVAL
 * with "line L col C: what" in err when it is not.
 */
int json_reformat(FILE *f, const char *text, char *err, size_t len);
/* 1 when this build reads and writes JSON (0 without external libraries:
 * every JSON function then fails, saying so). */
int json_available(void);

/*
 * More rounds of the current build for --baseline: round() runs every
 * point pts[0..n) (points of the new report) of twin tw (0 naive, 1
 * optimized) of scenario id once and gives the mean of the log times;
 * 0 or -errno.  budget: seconds per scenario twin.
 */
struct perf_more {
	int (*round)(void *arg, const char *id, unsigned tw,
		     const struct json *const *pts, unsigned n, double *x);
	void *arg;
	double budget;
};

/*
 * Compare two saved runs (perf_write_json output): counters first (exact:
 * any change in a counter is more or less work), then time, one
 * comparison per scenario twin pooled over its points (the two-sample
 * sequential test, seq.c; more rounds from more while undecided, NULL:
 * the saved samples only).  Returns the number of regressions (more
 * work, or slower), or -errno with a line in err when a file is not a
 * perf report.
 */
int perf_compare_reports(FILE *f, const struct json *old,
			 const struct json *cur, const struct perf_cmp_opts *o,
			 const struct perf_more *more, char *err, size_t len);

#endif
