/*
 * cmd_perf_ab.h - what cmd_perf.c uses of cmd_perf_ab.c: the sequential
 * A/B of two builds (every timed sample a child process) and the
 * calibration that measures its false-alarm rate and power.
 */
#ifndef FSORACLE_TOOLS_CMD_PERF_AB_H
#define FSORACLE_TOOLS_CMD_PERF_AB_H

#include <stdio.h>

#include "perf/perf.h"

struct perf_ab_opts {
	const char *bin[2];      /* A (this binary), B                     */
	char plant[48];          /* B's --plant ID=PCT, "" for none        */
	unsigned warm;           /* rounds discarded first                 */
	double budget;           /* seconds per scenario                   */
	double min_effect;       /* 0.05 = ±5%                             */
	double alpha;            /* one comparison's share of the 5%       */
	enum perf_scale scale;
	enum perf_clock clock;   /* what the children measure              */
	unsigned reps;           /* runs per child sample, the fastest kept */
	int quiet;               /* no progress on stderr                  */
	FILE *out;               /* verdict lines; NULL: none              */
};

/* One scenario's two comparisons (naive twin, optimized twin). */
struct perf_ab_result {
	enum perf_seq_state state[2];
	double noise[2];         /* robust spread of one round, as a ratio */
	unsigned rounds[2];
	double secs[2];          /* when each was decided                 */
	int more;                /* B's counters higher somewhere          */
	int failed;              /* a child did not run                    */
};

/* The path of this very program, for the children; 0 or -errno. */
int perf_ab_self(char *buf, size_t len);
/* Run one scenario A against B until both twins are decided or the
 * budget is out. */
void perf_ab_scenario(const struct perf_ab_opts *o,
		      const struct perf_scenario *sc,
		      struct perf_ab_result *r);
/* --sample ID:VARIANT:PARAM:TWIN[,...], the child side: a line per sample,
 * in order. */
int perf_ab_sample(const char *specs, const struct perf_opts *o);

#endif
