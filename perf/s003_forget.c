/*
 * s003_forget.c - scenario 003, seed path (d): unlinking (or truncating to
 * 0) a large fallocated file, in data=ordered and data=journal modes.
 *
 * The naive twin looks up every freed block in the buffer cache to forget
 * (and, for journalled data, revoke) it; the optimized one does that only
 * where the file's data goes through the journal.  The seed's figure: a
 * 60 GiB file is 60 x 2^30 / 4096 = 15,728,640 lookups against 0 in
 * ordered mode; in journal mode both twins forget every block.  Revoke
 * records are the same in both twins (none for ordered data, which never
 * reaches the log; the freed extent-map blocks are metadata and revoked
 * in both).
 */
#include "perf/perf_internal.h"

#define BS 4096u

static const uint64_t params_quick[] = {
	64ull << 20, 256ull << 20, 1ull << 30,
};
static const uint64_t params_full[] = {
	1ull << 30, 4ull << 30, 16ull << 30, 60ull << 30,
};

/* Variant v: data mode v / 2 (ordered, journal), unlink if v is even. */
static const char *const variants[] = {
	"ordered-unlink", "ordered-truncate", "journal-unlink",
	"journal-truncate",
};

static const struct perf_counter_spec counters[] = {
	{ "forget_lookups", "forget_lookups", 1 },
	{ "bcache_lookups", "bcache_lookups", 0 },
	{ "revokes", "revokes", 0 },
	{ "blocks_freed", "blocks_freed", 0 },
};
enum { C_FORGET, C_BCACHE, C_REVOKES, C_FREED };

static int journal_mode(const struct perf_job *j) { return j->variant >= 2; }

/* The engine has the path when it takes data= and counts forget lookups. */
static int probe(char *why, size_t len)
{
	return perf_probe_engine(why, len, NULL, "data=journal",
				 "forget_lookups",
				 "path (d) journal forget is not implemented "
				 "in the engine yet (no data= mount option or "
				 "forget_lookups counter)");
}

static int setup(struct perf_world *w, const struct perf_job *j, char *err,
		 size_t len)
{
	int rc;

	rc = perf_world_open_job(w, j, j->param + j->param / 16 + (64u << 20),
				 0, NULL, journal_mode(j) ? "data=journal" :
				 "data=ordered", err, len);
	if (rc)
		return rc;
	rc = perf_add_file(w, "big", 0);
	if (!rc)
		rc = ref_fallocate(w->fs, w->ino[0], 0, 0, j->param);
	return perf_setup_end(w, rc, "fallocating the file", err, len);
}

static int op(struct perf_world *w, const struct perf_job *j)
{
	int rc = j->variant % 2 ? ref_truncate(w->fs, w->ino[0], 0) :
				  ref_unlink(w->fs, "big");

	return rc ? rc : ref_sync(w->fs);
}

/* Only ordered data can skip the forget; journalled data cannot. */
static int saves(const struct perf_job *j) { return !journal_mode(j); }

/*
 * The seed counts the lookups for the file's data blocks: 15,728,640 for
 * 60 GiB against 0.  Both twins also forget the file's freed metadata
 * blocks (its extent-map nodes), so the seed's figure is the difference.
 */
static unsigned seed(const struct perf_job *j, struct perf_check *c,
		     unsigned max)
{
	uint64_t blocks = j->param / BS;
	unsigned n = 0;

	if (journal_mode(j))
		perf_check_add(c, &n, max, C_FORGET, 2, 0, 0,
			       "journalled data: both twins look up all "
			       "%llu blocks", (unsigned long long)blocks);
	else
		perf_check_add(c, &n, max, C_FORGET, 2, blocks, 0,
			       "naive looks up %llu data blocks more "
			       "(ordered)", (unsigned long long)blocks);
	perf_check_add(c, &n, max, C_REVOKES, 2, 0, 0,
		       "revoke records the same in both twins");
	return n;
}

const struct perf_scenario perf_s003 = {
	.id = "003", .name = "unlink-forget",
	.title = "unlink or truncate to 0 of a large fallocated file",
	.path = REF_PATH_FORGET, .path_label = "(d) journal forget",
	.param_name = "filesize", .param_bytes = 1,
	PERF_VARIANTS(variants),
	PERF_PARAMS(params_quick, params_full),
	.time_max_param = 1ull << 30,
	PERF_COUNTERS(counters),
	.scale_doc = { "one fallocated file of 64m..1g on null:",
		       "one fallocated file of 1g..60g on null: (the seed's "
		       "60 GiB)" },
	.time_doc = "the same file on mem: (sparse), up to 1 GiB",
	.probe = probe,
	.saves = saves,
	.setup = setup,
	.op = op,
	.seed = seed,
};
