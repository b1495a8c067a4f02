/*
 * perf_internal.h - what the files of perf/ share and nothing else sees:
 * the scenario definitions the list in scenarios.c points at.
 */
#ifndef FSORACLE_PERF_INTERNAL_H
#define FSORACLE_PERF_INTERNAL_H

#include "perf/perf.h"

extern const struct perf_scenario perf_s000; /* s000_rt_truncate.c */
extern const struct perf_scenario perf_s001; /* s001_pcache_truncate.c */
extern const struct perf_scenario perf_s002; /* s002_cow_overwrite.c */
extern const struct perf_scenario perf_s003; /* s003_forget.c */
extern const struct perf_scenario perf_s004; /* s004_zoned_compress.c */

/*
 * The value of a counter sum ("rec_inserts+rec_updates") from c, by the
 * names ref_counters_foreach() gives; -ENOENT if a name is not there.
 */
int perf_counter_get(const struct ref_counters *c, const char *sum,
		     uint64_t *out);
/* Does the engine have a counter of this name? */
int perf_counter_known(const char *name);

/* Scenario tables: the quick and full parameter lists, the counters. */
#define PERF_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PERF_PARAMS(quick, full) \
	.params = { quick, full }, .nparams = { PERF_LEN(quick), PERF_LEN(full) }
#define PERF_COUNTERS(c) .counters = c, .ncounters = PERF_LEN(c)
#define PERF_VARIANTS(v) .variants = v, .nvariants = PERF_LEN(v)

/*
 * The world most scenarios want: a data device of dev_bytes and, if
 * rt_bytes is not 0, a realtime device of rt_bytes, both "mem:" when the
 * job is timed (real data) and "null:" when it is counted (nothing
 * stored); then perf_world_open() with the job's naive bits.
 */
int perf_world_open_job(struct perf_world *w, const struct perf_job *j,
			uint64_t dev_bytes, uint64_t rt_bytes,
			const char *mkfs, const char *mount, char *err,
			size_t len);
/* The store a job runs on: "mem" when timed, "null" when counted. */
const char *perf_store(const struct perf_job *j);
/*
 * The probe most scenarios need: 0 if the engine takes these mkfs and
 * mount options (NULL: none) and has every counter of the '+' list
 * counters, else -ENOSYS with "<unavailable>" in why.
 */
int perf_probe_engine(char *why, size_t len, const char *mkfs,
		      const char *mount, const char *counters,
		      const char *unavailable);
/*
 * Create file name in w as its next file (w->ino[w->nfiles], nfiles
 * counts it), with flags set if not 0.  -ENOSPC past PERF_MAX_FILES.
 */
int perf_add_file(struct perf_world *w, const char *name, uint32_t flags);
/*
 * Write [0, size) of ino, chunk bytes per ref_pwrite (the last one
 * shorter), every byte fill.
 */
int perf_fill(struct perf_world *w, uint64_t ino, uint64_t size,
	      uint64_t chunk, uint8_t fill);
/* Truncate every file of w to size, then commit. */
int perf_truncate_all(struct perf_world *w, uint64_t size);
/* 0 if an I/O call returned all want bytes, else its error (-EIO short). */
int perf_io_ok(int64_t got, uint64_t want);
/* End of a setup: commit if rc is 0; an error says what was being done. */
int perf_setup_end(struct perf_world *w, int rc, const char *doing,
		   char *err, size_t len);
/*
 * Append a seed check (if there is room in c[max]): counter index,
 * twin (0 naive, 1 optimized, 2 naive - optimized, 3 the other way),
 * expected value, tolerance in percent (0: exact), what it says.
 */
void perf_check_add(struct perf_check *c, unsigned *n, unsigned max,
		    unsigned counter, int twin, uint64_t expect,
		    unsigned tolerance_pct, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

#endif
