/*
 * s000_rt_truncate.c - scenario 000, seed path (a): truncating realtime
 * files down to 4k.
 *
 * The seed's experiment: N files, each written as `dd bs=R count=1024`
 * (1024 rt extents of rtextsize R), then each truncated to 4k, R swept
 * from 8k to 1024k.  Both twins free the 1023 rt extents past the EOF
 * one; the naive twin also zeroes the rest of the EOF rt extent,
 * [4k, R), while the optimized one converts it to unwritten:
 *
 *      R:            8k     16k     32k    64k    256k    1024k
 *      zeroed/file   4 KiB  12 KiB  28 KiB 60 KiB 252 KiB 1020 KiB  (naive)
 *                    0      0       0      0      0       0         (opt.)
 *
 * Counters: bytes_zeroed (the saving), B+tree record operations (the
 * optimized twin's split of the EOF record costs one update and one
 * insert more per file), rt_extents_freed (equal), and the optimized
 * twin's fallbacks to zeroing (none: every split gets its blocks).
 */
#include "perf/perf_internal.h"

#include <stdio.h>

#define TRUNC_TO    4096u
#define SEED_FILES  1000u   /* the seed's run                    */
#define SEED_EXTS   1024u   /* dd count=1024                     */
#define QUICK_FILES 16u     /* counters, quick: same shape, fewer */
#define TIME_FILES  32u     /* timing on mem: (real data in RAM)  */
#define TIME_EXTS   4u

static const uint64_t params[] = {
	8192, 16384, 32768, 65536, 262144, 1048576,
};

static const struct perf_counter_spec counters[] = {
	{ "bytes_zeroed", "bytes_zeroed", 1 },
	{ "records", "rec_inserts+rec_deletes+rec_updates", 0 },
	{ "rt_extents_freed", "rt_extents_freed", 0 },
	{ "fallbacks", "rt_truncate_fallbacks", 0 },
};

static void shape(const struct perf_job *j, unsigned *files, unsigned *exts)
{
	if (j->where == PERF_TIME) {
		*files = TIME_FILES;
		*exts = TIME_EXTS;
	} else {
		*files = j->scale == PERF_FULL ? SEED_FILES : QUICK_FILES;
		*exts = SEED_EXTS;
	}
}

/*
 * The optimized twin leaves the blocks of the EOF rt extent past the new
 * EOF block unwritten; the naive twin leaves them written (zeroed).  So
 * the twin exists iff a truncate through it leaves an unwritten mapping
 * there.
 */
static int find_unwritten(void *arg, const struct ref_extent *e)
{
	if (e->state & REF_EXT_UNWRITTEN)
		*(int *)arg = 1;
	return 0;
}

static int probe(char *why, size_t len)
{
	static const char unavailable[] =
		"path (a) rt truncate's optimized twin is not implemented in "
		"the engine yet (truncate leaves no unwritten tail)";
	struct perf_world w;
	int rc, found = 0;

	rc = perf_world_open(&w, "mem:16m", "mem:4m", "rtextsize=16k", NULL,
			     0, why, len);
	if (rc)
		return rc;
	rc = perf_add_file(&w, "probe", REF_FLAG_REALTIME);
	if (!rc)
		rc = perf_fill(&w, w.ino[0], 32768, 32768, 0x5a);
	if (!rc)
		rc = ref_truncate(w.fs, w.ino[0], TRUNC_TO);
	if (!rc)
		rc = ref_bmap(w.fs, w.ino[0], find_unwritten, &found);
	perf_world_close(&w);
	if (rc)
		return perf_fail(why, len, rc, "probe of path (a): %s",
				 ref_strerror(rc));
	return found ? 0 : perf_fail(why, len, -ENOSYS, "%s", unavailable);
}

static int setup(struct perf_world *w, const struct perf_job *j, char *err,
		 size_t len)
{
	unsigned files, exts;
	char mkfs[48];
	uint64_t r = j->param;
	int rc;

	shape(j, &files, &exts);
	snprintf(mkfs, sizeof(mkfs), "rtextsize=%llu", (unsigned long long)r);
	rc = perf_world_open_job(w, j, j->where == PERF_TIME ? 64ull << 20 :
				 1ull << 30, (uint64_t)files * exts * r + 8 * r,
				 mkfs, NULL, err, len);
	if (rc)
		return rc;
	/* dd bs=R count=1024: one write per rt extent */
	for (unsigned f = 0; f < files && !rc; f++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", f);
		rc = perf_add_file(w, name, REF_FLAG_REALTIME);
		if (!rc)
			rc = perf_fill(w, w->ino[f], exts * r, r, 0x5a);
	}
	return perf_setup_end(w, rc, "writing the files", err, len);
}

static int op(struct perf_world *w, const struct perf_job *j)
{
	(void)j;
	return perf_truncate_all(w, TRUNC_TO);
}

/* The seed's table, per file, times the files of this run. */
static unsigned seed(const struct perf_job *j, struct perf_check *c,
		     unsigned max)
{
	unsigned files, exts, n = 0;
	uint64_t r = j->param;

	shape(j, &files, &exts);
	perf_check_add(c, &n, max, 0, 0, files * (r - TRUNC_TO), 0,
		       "naive zeroes R - 4k = %llu bytes per file",
		       (unsigned long long)(r - TRUNC_TO));
	perf_check_add(c, &n, max, 0, 1, 0, 0,
		       "optimized zeroes to the 4k block end: 0 bytes");
	for (int t = 0; t < 2; t++)
		perf_check_add(c, &n, max, 2, t, (uint64_t)files * (exts - 1),
			       0, "%s frees %u rt extents per file",
			       t ? "optimized" : "naive", exts - 1);
	/* the EOF extent's record: updated (written part) and one inserted
	 * (the unwritten tail), as the seed's bmbt_ops count */
	perf_check_add(c, &n, max, 1, 3, 2 * (uint64_t)files, 0,
		       "optimized splits the EOF record: 1 update + 1 insert "
		       "per file");
	/* every split finds its blocks here: the fallback never runs */
	perf_check_add(c, &n, max, 3, 1, 0, 0,
		       "optimized never falls back to zeroing");
	return n;
}

static const char *const variants[] = { "rt" };

const struct perf_scenario perf_s000 = {
	.id = "000", .name = "rt-truncate",
	.title = "realtime files of 1024 rt extents truncated to 4k",
	.path = REF_PATH_RT_TRUNCATE, .path_label = "(a) rt truncate",
	.param_name = "rtextsize", .param_bytes = 1,
	PERF_VARIANTS(variants),
	PERF_PARAMS(params, params),
	PERF_COUNTERS(counters),
	.scale_doc = { "16 files x 1024 rt extents on null:",
		       "1000 files x 1024 rt extents on null: (the seed's)" },
	.time_doc = "32 files x 4 rt extents on mem:, truncated to 4k",
	.probe = probe,
	.setup = setup,
	.op = op,
	.seed = seed,
};
