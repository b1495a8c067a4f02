/*
 * s004_zoned_compress.c - scenario 004, seed path (e): a buffered write
 * to a realtime file on a zoned device with a zone-append limit of
 * 672 KiB, delayed-allocated, then one sync that writes it all back.
 *
 * Writeback finds a delalloc range, locks it and allocates it.  The naive
 * twin stops each range at the file's largest extent, which on a zoned
 * realtime file is the append limit; the optimized one collects up to
 * 128 MiB per call and caps each allocation inside its loop instead.
 * With compression every range is cut into 512 KiB async chunks and each
 * chunk into compressed extents of at most 128 KiB of input, so a range
 * of 672 KiB costs 2 chunks (512 + 160) and 6 extents (4 + 2):
 *
 *   file  |<------------- 128 MiB: one optimized call, 256 chunks -------->|
 *   naive |672K |672K |672K | ... one call each, 195.04 per 128 MiB
 *   chunk |512K|160K|512K|160K| ...
 *
 * For 16 GiB (the seed's run) that is 24,967 calls and 49,933 chunks
 * against 128 and 32,768, and 149,797 compressed extents against
 * 131,072.  Without compression there are no chunks: each range is
 * allocated in pieces of at most 672 KiB, so the naive twin makes
 * ceil(len / 672K) allocations and the optimized one ceil(128M / 672K)
 * per 128 MiB range, 196 where the naive twin has 195.04: the seed's
 * "same extent count" up to the cut at each 128 MiB boundary (and, in
 * both twins, one more wherever an allocation crosses an rt bitmap
 * group: see walk()).  The call count is what drops.  Two more variants
 * sweep append_max, compressed: 128k (one chunk per naive call) and 1m
 * (a whole number of chunks per call: only the calls drop).
 *
 * The realtime device has sequential zones larger than the file (four:
 * the engine keeps some in reserve), and the file goes into the first,
 * so no allocation is ever cut at a zone's end: every count here is the
 * delalloc path's and the allocator's alone.
 * Counting runs keep no data anywhere (null: data device, zoned:null
 * realtime device, page-cache pages without bytes: nopagedata), so the
 * seed's 16 GiB fits; timed runs store everything (mem:, zoned:mem).
 * Setup writes the file (not measured); the measured operation is the
 * sync that runs the delalloc, as the seed timed it.
 */
#include "perf/perf_internal.h"

#include <stdio.h>
#include <string.h>

#define BS        4096u
#define CHUNK     (512u << 10)   /* an async compression chunk          */
#define CEXT      (128u << 10)   /* input of one compressed extent, max */
#define GATHER    (128u << 20)   /* one optimized delalloc call, max    */
#define WRITE_SZ  (1u << 20)     /* bytes per buffered write            */
#define FILL      0x5e           /* compresses: never a fallback        */

static const uint64_t params_quick[] = {
	64ull << 20, 256ull << 20, 1ull << 30,
};
static const uint64_t params_full[] = {
	1ull << 30, 4ull << 30, 16ull << 30,
};

/*
 * The seed's case compressed and not, then append_max swept (compressed):
 * at 128k every naive call is one chunk and one extent; at 1m, a whole
 * number of chunks, the naive twin makes no more chunks or extents than
 * the optimized one and only the calls drop.  (The engine allocates at
 * most 1 MiB at a time.)
 */
static const char *const variants[] = {
	"zstd-672k", "plain-672k", "zstd-128k", "zstd-1m", "zstd-672k-w2",
};
static const uint32_t append_max[] = {
	672u << 10, 672u << 10, 128u << 10, 1u << 20, 672u << 10,
};
/*
 * The seed's case with its structure: compression chunks handed to two
 * worker threads (mount workers=2; up to 4 chunks in flight), submitted
 * in order.  The counters are the zstd-672k ones exactly; the time
 * shows what in-flight chunks buy each twin.
 */
static const unsigned workers[] = { 0, 0, 0, 0, 2 };

/* On the zoned realtime device every allocation is one zone append;
 * rt_extents_allocated counts 4k rt extents, i.e. blocks. */
static const struct perf_counter_spec counters[] = {
	{ "delalloc_calls", "delalloc_calls", 1 },
	{ "async_chunks", "async_chunks", 0 },
	{ "compressed_extents", "compressed_extents", 0 },
	{ "zone_appends", "zone_appends", 0 },
	{ "rt_blocks", "rt_extents_allocated", 0 },
	{ "fallbacks", "compress_fallbacks", 0 },
};
enum { C_CALLS, C_CHUNKS, C_CEXT, C_APPENDS, C_BLOCKS, C_FALLBACKS };

/*
 * mkfs: rt extents of one block (delalloc needs it), and a journal large
 * enough that one transaction step may take a whole 672 KiB allocation
 * (the default grows with the device, and a small one would cut each
 * allocation in two).
 */
#define MKFS "rtextsize=4k,journal=2048"

#define COUNTERS "delalloc_calls+async_chunks+compressed_extents+" \
		 "compress_fallbacks"

static int compressed(const struct perf_job *j) { return j->variant != 1; }

/*
 * The engine has path (e) when it takes the options and counts the work,
 * and a small compressed write to a zoned realtime file goes through the
 * delalloc path at sync.  A build without a compression library says so
 * at mount (-EOPNOTSUPP): that is "not available" too.  Any other failure
 * is the engine's, and is returned as it is.
 */
static int probe(char *why, size_t len)
{
	struct perf_world w;
	uint64_t calls = 0, cext = 0;
	char mounted[256];
	int rc;

	rc = perf_probe_engine(why, len, MKFS,
			       "compress=zstd,nopagedata,naive=delalloc_cap",
			       COUNTERS,
			       "this engine has no path (e) zoned delalloc "
			       "cap (no compress= or nopagedata mount option, "
			       "or no delalloc_calls, async_chunks, "
			       "compressed_extents counters)");
	if (rc)
		return rc;
	rc = perf_world_open(&w, "mem:16m", "zoned:mem,size=16m,zone=4m",
			     MKFS, "compress=zstd,pagecache=256", 0,
			     mounted, sizeof(mounted));
	if (rc == -EOPNOTSUPP)
		return perf_fail(why, len, -ENOSYS, "path (e): no compression "
				 "in this build (%s)", mounted);
	if (rc)
		return perf_fail(why, len, rc, "probe of path (e): %s",
				 mounted);
	rc = perf_add_file(&w, "probe", REF_FLAG_REALTIME);
	if (!rc)
		rc = perf_fill(&w, w.ino[0], 256u << 10, 256u << 10, FILL);
	if (!rc)
		rc = ref_sync(w.fs);
	if (!rc) {
		perf_counter_get(ref_counters(w.fs), "delalloc_calls", &calls);
		perf_counter_get(ref_counters(w.fs), "compressed_extents",
				 &cext);
	}
	perf_world_close(&w);
	if (rc)
		return perf_fail(why, len, rc, "probe of path (e): %s",
				 ref_strerror(rc));
	if (!calls || !cext)
		return perf_fail(why, len, -ENOSYS, "this engine has no path "
				 "(e) zoned delalloc cap (a "
				 "compressed realtime write made %llu delalloc "
				 "calls, %llu compressed extents)",
				 (unsigned long long)calls,
				 (unsigned long long)cext);
	return 0;
}

static int setup(struct perf_world *w, const struct perf_job *j, char *err,
		 size_t len)
{
	uint64_t size = j->param, calls = 0;
	uint64_t zone = (size >> 20 << 20) + (17u << 20); /* > size, in MiB */
	char dev[48], rtdev[96], mount[128];
	int rc;

	snprintf(rtdev, sizeof(rtdev), "zoned:%s,size=%llu,zone=%llu,"
		 "append_max=%u", perf_store(j), 4 * (unsigned long long)zone,
		 (unsigned long long)zone, append_max[j->variant]);
	/*
	 * The cache holds the whole write below its dirty limit (7/8 of
	 * it): one sync, one delalloc range.
	 */
	snprintf(mount, sizeof(mount), "%s,pagecache=%llu,workers=%u%s",
		 compressed(j) ? "compress=zstd" : "delalloc",
		 (unsigned long long)(size / BS / 4 * 5 + 1024),
		 workers[j->variant],
		 j->where == PERF_COUNT ? ",nopagedata" : "");
	/*
	 * Metadata: up to one extent record per 128 KiB, never merged; a
	 * delalloc page reserves 1/16 of a block for it on the data device.
	 */
	snprintf(dev, sizeof(dev), "%s:%llu", perf_store(j),
		 (unsigned long long)((256u << 20) + (size >> 23 << 20)));
	rc = perf_world_open(w, dev, rtdev, MKFS, mount, j->naive,
			     err, len);
	if (rc)
		return rc;
	rc = perf_add_file(w, "data", REF_FLAG_REALTIME);
	rc = perf_setup_end(w, rc, "creating the file", err, len);
	if (rc)
		return rc;
	/* buffered: it stays in the page cache, delalloc, until the sync */
	rc = perf_fill(w, w->ino[0], size, WRITE_SZ, FILL);
	if (rc)
		return perf_fail(err, len, rc, "writing the file: %s",
				 ref_strerror(rc));
	if (perf_counter_get(ref_counters(w->fs), "delalloc_calls", &calls) ||
	    calls)
		return perf_fail(err, len, -EPROTO, "the write was written "
				 "back before the sync (%llu delalloc calls)",
				 (unsigned long long)calls);
	return 0;
}

static int op(struct perf_world *w, const struct perf_job *j)
{
	(void)j;
	return ref_sync(w->fs);
}

/*
 * What writeback does with len bytes, range by range: calls, chunks and
 * compressed extents; and uncompressed, the allocations (zone appends).
 * Those are pieces of at most append_max from each range's start, laid one
 * after the other from the device's first block, and cut again where
 * they cross from one rt bitmap group to the next: an allocation comes
 * from one bitmap block, whose 4 KiB less a 32-byte header cover 32,512
 * rt extents (127 MiB of 4k ones).  The seed's "same extent count" is
 * ceil(len / append_max) before both cuts.
 */
#define GROUP ((uint64_t)(BS - 32) * 8 * BS)

struct dac_work { uint64_t calls, chunks, cext, appends; };

static void walk(uint64_t len, uint64_t range_max, uint64_t append,
		 struct dac_work *k)
{
	for (uint64_t off = 0, r; off < len; off += r) {
		r = len - off < range_max ? len - off : range_max;
		k->calls++;
		for (uint64_t c = 0, n; c < r; c += n) {
			n = r - c < CHUNK ? r - c : CHUNK;
			k->chunks++;
			k->cext += (n + CEXT - 1) / CEXT;
		}
		for (uint64_t p = off, n; p < off + r; p += n) {
			n = off + r - p < append ? off + r - p : append;
			k->appends += 1 + (p + n - 1) / GROUP - p / GROUP;
		}
	}
}

/* Job j's work: k[0] through the naive twin, k[1] the optimized one. */
static void model(const struct perf_job *j, struct dac_work k[2])
{
	uint32_t append = append_max[j->variant];

	memset(k, 0, 2 * sizeof(*k));
	walk(j->param, append, append, &k[0]);
	walk(j->param, GATHER, append, &k[1]);
}

static int saves(const struct perf_job *j)
{
	struct dac_work k[2];

	model(j, k);
	return k[1].calls < k[0].calls;
}

/*
 * The seed's arithmetic for this size: delalloc calls, chunks and
 * compressed extents (compressed), or calls and allocations, each one
 * zone append (uncompressed).
 */
static unsigned seed(const struct perf_job *j, struct perf_check *c,
		     unsigned max)
{
	static const char *const twin[2] = { "naive", "optimized" };
	unsigned append_k = append_max[j->variant] >> 10, n = 0;
	struct dac_work k[2];

	model(j, k);
	perf_check_add(c, &n, max, C_CALLS, 0, k[0].calls, 0,
		       "naive: one call per %uK (append_max)", append_k);
	perf_check_add(c, &n, max, C_CALLS, 1, k[1].calls, 0,
		       "optimized: one call per 128 MiB");
	for (int t = 0; t < 2; t++) {
		if (!compressed(j)) {
			perf_check_add(c, &n, max, C_CHUNKS, t, 0, 0,
				       "%s: no async chunks uncompressed",
				       twin[t]);
			perf_check_add(c, &n, max, C_CEXT, t, 0, 0,
				       "%s: no compressed extents", twin[t]);
			perf_check_add(c, &n, max, C_APPENDS, t, k[t].appends,
				       0, "%s: ceil(range / %uK) appends per "
				       "range, + bitmap group cuts", twin[t],
				       append_k);
			perf_check_add(c, &n, max, C_BLOCKS, t, j->param / BS,
				       0, "%s: every 4k block allocated once",
				       twin[t]);
			continue;
		}
		perf_check_add(c, &n, max, C_CHUNKS, t, k[t].chunks, 0,
			       "%s: ceil(range / 512K) chunks per call",
			       twin[t]);
		perf_check_add(c, &n, max, C_CEXT, t, k[t].cext, 0,
			       "%s: ceil(chunk / 128K) extents per chunk",
			       twin[t]);
		perf_check_add(c, &n, max, C_FALLBACKS, t, 0, 0,
			       "%s: every piece shrinks (none stored plain)",
			       twin[t]);
	}
	return n;
}

const struct perf_scenario perf_s004 = {
	.id = "004", .name = "zoned-compress",
	.title = "buffered write to a zoned rt file, then sync; append_max "
		 "672k (the seed's), 128k, 1m",
	.path = REF_PATH_DELALLOC_CAP, .path_label = "(e) delalloc cap",
	.param_name = "size", .param_bytes = 1,
	PERF_VARIANTS(variants),
	PERF_PARAMS(params_quick, params_full),
	.time_max_param = 64ull << 20,
	PERF_COUNTERS(counters),
	.scale_doc = { "64m, 256m and 1g written on null: + zoned:null, "
		       "nopagedata",
		       "1g, 4g and 16g (the seed's) on null: + zoned:null, "
		       "nopagedata" },
	.time_doc = "the sync of 64m on mem: + zoned:mem (real data), "
		    "each variant",
	.probe = probe,
	.saves = saves,
	.setup = setup,
	.op = op,
	.seed = seed,
};
