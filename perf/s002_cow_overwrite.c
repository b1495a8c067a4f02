/*
 * s002_cow_overwrite.c - scenario 002, seed path (c): random 4k
 * overwrites of an always-COW file.
 *
 * The seed's experiment: fio randwrite, 4k blocks, on a 1 GiB always_cow
 * file: 262,144 one-block COW extents per pass, each ended (remapped into
 * the data fork) when its write completes.  Here every block of the file
 * is overwritten once, in a fixed random order, one 4k write at a time.
 * The naive twin unmaps the old range and maps the new blocks in as a
 * deferred step: one intent and one transaction roll per COW extent.  The
 * optimized one rewrites the data-fork record in place: no intent, no
 * roll.  Record operations are what they are; the seed's table has them
 * equal for an overwrite inside a big extent and lower for the optimized
 * twin on a fully fragmented file, and a random pass crosses from the one
 * to the other.
 *
 * Built only against an engine with reflink and the always-COW flag.
 */
#include "perf/perf_internal.h"

#include <stdlib.h>
#include <string.h>

#include "harness/rng.h"

#define BS      4096u
#define FILL_SZ (1u << 20)

static const uint64_t params_quick[] = { 1ull << 20, 4ull << 20 };
static const uint64_t params_full[] = {
	4ull << 20, 64ull << 20, 1ull << 30,
};

static const struct perf_counter_spec counters[] = {
	{ "intents", "cow_intents", 1 },
	{ "tx_rolls", "cow_tx_rolls", 1 },
	{ "records",
	  "cow_record_inserts+cow_record_deletes+cow_record_updates", 0 },
	{ "cow_remaps", "cow_remaps", 0 },
	{ "fallbacks", "cow_fallbacks", 0 },
};
enum { C_INTENTS, C_ROLLS, C_RECORDS, C_REMAPS, C_FALLBACKS };

#ifdef REF_FLAG_COW

static int probe(char *why, size_t len)
{
	return perf_probe_engine(why, len, "reflink=1", NULL,
				 "cow_intents+cow_tx_rolls",
				 "path (c) end-COW is not implemented in the "
				 "engine yet (no reflink or cow_* counters)");
}

static int setup(struct perf_world *w, const struct perf_job *j, char *err,
		 size_t len)
{
	uint64_t size = j->param;
	int rc;

	/* the file, its COW staging, the B+trees: 3x the file is plenty */
	rc = perf_world_open_job(w, j, 3 * size + (64u << 20), 0, "reflink=1",
				 NULL, err, len);
	if (rc)
		return rc;
	rc = perf_add_file(w, "cow", 0);
	if (!rc)
		rc = perf_fill(w, w->ino[0], size, FILL_SZ, 0x3c);
	if (!rc)
		rc = ref_set_flags(w->fs, w->ino[0], REF_FLAG_COW, 0);
	return perf_setup_end(w, rc, "writing the file", err, len);
}

/* Every block once, in an order fixed by the seed: a Fisher-Yates
 * shuffle of the block numbers. */
static int op(struct perf_world *w, const struct perf_job *j)
{
	uint64_t blocks = j->param / BS;
	uint32_t *order = malloc(blocks * sizeof(*order));
	uint8_t buf[BS];
	struct rng g;
	int rc = 0;

	if (!order)
		return -ENOMEM;
	for (uint64_t i = 0; i < blocks; i++)
		order[i] = (uint32_t)i;
	rng_seed(&g, 0xc0e);
	for (uint64_t i = blocks - 1; i > 0; i--) {
		uint64_t k = rng_below(&g, i + 1);
		uint32_t t = order[i];

		order[i] = order[k];
		order[k] = t;
	}
	memset(buf, 0xc5, sizeof(buf));
	for (uint64_t i = 0; i < blocks && !rc; i++)
		rc = perf_io_ok(ref_pwrite(w->fs, w->ino[0], buf, BS,
					   (uint64_t)order[i] * BS), BS);
	free(order);
	return rc ? rc : ref_sync(w->fs);
}

/*
 * The seed's count: one one-block COW extent per overwritten block
 * (262,144 for 1 GiB); the naive twin takes one intent and one roll for
 * each, the optimized one none (no fallback on a fully written file).
 */
static unsigned seed(const struct perf_job *j, struct perf_check *c,
		     unsigned max)
{
	uint64_t blocks = j->param / BS;
	unsigned n = 0;

	for (int t = 0; t < 2; t++)
		perf_check_add(c, &n, max, C_REMAPS, t, blocks, 0,
			       "%s ends %llu one-block COW extents",
			       t ? "optimized" : "naive",
			       (unsigned long long)blocks);
	perf_check_add(c, &n, max, C_INTENTS, 0, blocks, 0,
		       "naive: one map intent per COW extent");
	perf_check_add(c, &n, max, C_ROLLS, 0, blocks, 0,
		       "naive: one roll per COW extent");
	perf_check_add(c, &n, max, C_INTENTS, 1, 0, 0,
		       "optimized: no intents");
	perf_check_add(c, &n, max, C_ROLLS, 1, 0, 0, "optimized: no rolls");
	perf_check_add(c, &n, max, C_FALLBACKS, 1, 0, 0,
		       "optimized never falls back (G always written)");
	return n;
}

#else /* an engine without reflink */

static int probe(char *why, size_t len)
{
	return perf_fail(why, len, -ENOSYS,
			 "path (c) end-COW is not implemented in the engine "
			 "yet (no always-COW flag in ref.h)");
}
#define setup NULL
#define op NULL
#define seed NULL

#endif

const struct perf_scenario perf_s002 = {
	.id = "002", .name = "cow-overwrite",
	.title = "always-COW file, every 4k block overwritten once at random",
	.path = REF_PATH_COW_END, .path_label = "(c) end-COW",
	.param_name = "filesize", .param_bytes = 1,
	PERF_PARAMS(params_quick, params_full),
	.time_max_param = 4ull << 20,
	PERF_COUNTERS(counters),
	.scale_doc = { "1m and 4m files on null:",
		       "4m..1g files on null: (the seed's 1 GiB: 262,144 "
		       "COW extents)" },
	.time_doc = "1m and 4m files on mem:, the whole random pass",
	.probe = probe,
	.setup = setup,
	.op = op,
	.seed = seed,
};
