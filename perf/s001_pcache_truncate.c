/*
 * s001_pcache_truncate.c - scenario 001, seed path (b): trunc-bench on the
 * page cache.
 *
 * The seed's experiment: files totalling twice the page-cache capacity
 * are each extended with ftruncate and read through the cache in 1 MiB
 * reads, so the pages of the files read first are evicted and leave
 * shadow entries: about half of all entries end as shadows.  Then each
 * file is truncated to 0, and that is what is measured.  The naive twin
 * walks from the root, clears the three marks and takes the lock for
 * every entry; the optimized one advances one cursor under one lock per
 * batch and clears nothing.
 *
 * Scale.  The seed had 64 files of 1 GiB and 32 GiB of RAM: 2^18 entries
 * per file (three levels of 64-way nodes), 16,777,216 in all.  The
 * engine's cache holds real pages, so here the files are smaller (16 of
 * them, a sweep of sizes) and the cache is half their total; the seed's
 * figures are per entry and are checked per entry (see seed() below).
 * Its 67M naive node visits are 4 per entry, a walk of 4 levels (24
 * index bits); a file of 2^18 pages has 3, and the check takes the
 * height of the files at hand.
 */
#include "perf/perf_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FILES    16u
#define BS       4096u
#define READ_SZ  (1u << 20)   /* trunc-bench's read size */

static const uint64_t params_quick[] = { 1ull << 20, 4ull << 20 };
static const uint64_t params_full[] = {
	1ull << 20, 4ull << 20, 16ull << 20, 32ull << 20,
};

static const struct perf_counter_spec counters[] = {
	{ "node_visits", "pc_node_visits", 1 },
	{ "mark_clears", "pc_mark_clears", 1 },
	{ "lock_acquisitions", "pc_lock_acquisitions", 1 },
	{ "entries_removed", "pc_entries_removed", 0 },
	{ "fallbacks", "pc_fallbacks", 0 },
};
enum { C_VISITS, C_CLEARS, C_LOCKS, C_ENTRIES, C_FALLBACKS };

static int probe(char *why, size_t len)
{
	return perf_probe_engine(why, len, NULL, "pagecache=16",
				 "pc_node_visits+pc_mark_clears+"
				 "pc_lock_acquisitions",
				 "path (b) page-cache truncate is not "
				 "implemented in the engine yet (no page cache "
				 "or pc_* counters)");
}

static int setup(struct perf_world *w, const struct perf_job *j, char *err,
		 size_t len)
{
	uint64_t size = j->param, pages = FILES * size / BS / 2;
	char mount[48], *buf;
	int rc;

	snprintf(mount, sizeof(mount), "pagecache=%llu",
		 (unsigned long long)pages);
	/* the files are sparse: the device holds metadata only */
	rc = perf_world_open_job(w, j, j->where == PERF_TIME ? 64ull << 20 :
				 1ull << 30, 0, NULL, mount, err, len);
	if (rc)
		return rc;
	buf = malloc(READ_SZ);
	if (!buf)
		return perf_fail(err, len, -ENOMEM, "out of memory");
	for (unsigned f = 0; f < FILES && !rc; f++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", f);
		rc = perf_add_file(w, name, 0);
		if (!rc)
			rc = ref_truncate(w->fs, w->ino[f], size);
		for (uint64_t off = 0; off < size && !rc; off += READ_SZ) {
			uint64_t n = size - off < READ_SZ ? size - off : READ_SZ;

			rc = perf_io_ok(ref_pread(w->fs, w->ino[f], buf, n,
						  off), n);
		}
	}
	free(buf);
	rc = perf_setup_end(w, rc, "reading the files", err, len);
	if (!rc) {
		/* the experiment needs about half the entries as shadows */
		uint64_t entries = FILES * (size / BS), shadows = 0;

		if (perf_counter_get(ref_counters(w->fs), "pc_shadows",
				     &shadows) ||
		    shadows < entries * 4 / 10 || shadows > entries * 6 / 10)
			rc = perf_fail(err, len, -EPROTO, "the reads left %llu "
				       "shadows of %llu entries, not about "
				       "half", (unsigned long long)shadows,
				       (unsigned long long)entries);
	}
	return rc;
}

static int op(struct perf_world *w, const struct perf_job *j)
{
	(void)j;
	return perf_truncate_all(w, 0);
}

/* Levels of 64-way nodes an index of `pages` entries needs. */
static unsigned height(uint64_t pages)
{
	unsigned h = 1;

	for (uint64_t span = 64; span < pages; span *= 64)
		h++;
	return h;
}

/*
 * The seed's cost model, per entry:
 *   naive      a walk from the root (one visit per level: the seed's 67M
 *              is 4 per entry, for 24 index bits), 3 mark clears (50M)
 *              and one lock round, for every entry;
 *   optimized  about 1 visit per entry plus 1 per 64 (17M), no clears,
 *              one lock round per batch of 31 entries (per file).
 */
static unsigned seed(const struct perf_job *j, struct perf_check *c,
		     unsigned max)
{
	uint64_t per_file = j->param / BS, entries = FILES * per_file;
	unsigned n = 0, h = height(per_file);

	perf_check_add(c, &n, max, C_ENTRIES, 0, entries, 0,
		       "both twins remove every entry: %llu",
		       (unsigned long long)entries);
	perf_check_add(c, &n, max, C_VISITS, 0, h * entries, 0,
		       "naive walks from the root: %u visits per entry", h);
	perf_check_add(c, &n, max, C_VISITS, 1, entries + entries / 64, 5,
		       "optimized: about 1 visit per entry + 1 per 64");
	perf_check_add(c, &n, max, C_CLEARS, 0, 3 * entries, 0,
		       "naive clears 3 marks per entry");
	perf_check_add(c, &n, max, C_CLEARS, 1, 0, 0,
		       "optimized clears no marks");
	perf_check_add(c, &n, max, C_LOCKS, 0, entries, 0,
		       "naive locks per entry");
	perf_check_add(c, &n, max, C_LOCKS, 1, FILES * ((per_file + 30) / 31),
		       0, "optimized locks per batch of 31");
	/* no mark is ever set on a shadow here: nothing to slow-clear */
	perf_check_add(c, &n, max, C_FALLBACKS, 1, 0, 0,
		       "optimized never falls back (no marked shadows)");
	return n;
}

const struct perf_scenario perf_s001 = {
	.id = "001", .name = "trunc-bench",
	.title = "files of twice the page cache read, then truncated to 0",
	.path = REF_PATH_PAGECACHE_TRUNCATE,
	.path_label = "(b) page-cache truncate",
	.param_name = "filesize", .param_bytes = 1,
	PERF_PARAMS(params_quick, params_full),
	.time_max_param = 4ull << 20,
	PERF_COUNTERS(counters),
	.scale_doc = { "16 files of 1m and 4m, cache half their total, null:",
		       "16 files of 1m..32m (cache up to 256 MiB), null:" },
	.time_doc = "16 files of 1m and 4m on mem:, cache half their total",
	.probe = probe,
	.setup = setup,
	.op = op,
	.seed = seed,
};
