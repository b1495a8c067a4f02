/*
 * diff.c - fuzz target `diff`: one op sequence through the optimized
 * engine, the naive engine and the model in lock step (check.h); any
 * disagreement, audit (fsck) failure or sanitizer report is a crash.
 *
 *   input = header (geom.h: filesystem preset - block size, B+tree
 *           fan-out, journal, longest extent, cache, realtime device
 *           and rt extent size - files, largest file, and the engine
 *           target's mix of naive twins, optimized paths and forced
 *           fallbacks, set by `naive`/`fallback` ops before the rest)
 *         + op records (binary.h), clamped to that geometry
 *
 * The targets of each preset are made once (rig.h) and put back to
 * exactly what fresh ones hold after each input, so nothing of one input
 * reaches the next.  The checker's report goes to stderr before the
 * abort.  A crash replays as a text op log: `replay/diff --describe
 * CRASH` prints the `#! fsoracle` line, the `#op` lines of the mix and
 * the decode options, `fsoracle decode` the ops (ci/fuzz does both).
 */
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "fuzz/geom.h"
#include "fuzz/rig.h"
#include "harness/check.h"
#include "harness/text.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t warm[FUZZ_HDR_LEN + 2 * OP_BIN_RECORD] = {
		[FUZZ_HDR_LEN] = OP_PWRITE, [FUZZ_HDR_LEN + 9] = 1,
		[FUZZ_HDR_LEN + OP_BIN_RECORD] = OP_SYNC,
	};

	fuzz_heap_log_start();
	rig_init_all(GEOM_DIFF, warm, sizeof(warm));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct op_seq *seq;
	struct fuzz_geom g;
	struct rig *r = rig_input(GEOM_DIFF, data, size, &g, &seq);
	int ret = check_run(r->c, seq);

	if (ret) {
		char line[512];

		geom_header_line(&g, "engine,naive,model", line, sizeof(line));
		fuzz_die("diff: %s after %zu ops; replay with\n%s\n(the "
			 "`#op` lines of --describe, and the ops: fsoracle "
			 "decode --files %u --max-file %llu)",
			 check_status_name(ret), check_log(r->c)->n, line,
			 g.op.nfiles, (unsigned long long)g.op.max_file);
	}
	rig_put(r);
	return 0;
}

/* The prefix ops as `#op` text lines: a chattr names its file (`file
 * fN`), and the decoded ops start on f0 again. */
static void describe_prefix(const struct op *prefix, unsigned n, FILE *out)
{
	char line[256];
	int moved = 0;

	for (unsigned i = 0; i < n; i++) {
		if (prefix[i].kind == OP_SET_FLAG) {
			fprintf(out, "#op file f%u\n", prefix[i].file);
			moved = 1;
		}
		op_format(&prefix[i], NULL, line, sizeof(line));
		fprintf(out, "#op %s\n", line);
	}
	if (moved)
		fprintf(out, "#op file f0\n");
}

int fuzz_describe(const uint8_t *data, size_t size, FILE *out)
{
	struct fuzz_input in;
	struct fuzz_geom g;
	struct op prefix[GEOM_PREFIX_MAX];
	char line[512];
	unsigned n;

	fuzz_split(data, size, &in);
	geom_from_header(GEOM_DIFF, in.hdr, &g);
	geom_header_line(&g, "engine,naive,model", line, sizeof(line));
	fprintf(out, "%s\n", line);
	fprintf(out, "# diff input: preset %u (block size %u, B+tree fan-out "
		"%u, journal %u blocks, longest extent %u blocks%s, metadata "
		"cache %u%s, ", g.preset, g.p.bs, g.p.maxrecs, g.p.journal,
		g.p.maxext ? g.p.maxext : (1u << 21) - 1,
		g.p.maxext ? "" : " (default)", g.p.cache,
		g.p.cache ? "" : " (default)");
	fprintf(out, "page cache %u pages%s of %u-slot radix nodes, ",
		g.p.pcache ? g.p.pcache : 1024, g.p.pcache ? "" : " (default)",
		1u << (g.p.pcshift ? g.p.pcshift : 6));
	if (g.p.rtext)
		fprintf(out, "realtime device with rt extents of %u blocks), ",
			g.p.rtext);
	else
		fprintf(out, "no realtime device), ");
	fprintf(out, "%u file(s) of at most %lluk\n", g.op.nfiles,
		(unsigned long long)(g.op.max_file >> 10));
	/* The mix: text ops to put before the decoded ones. */
	n = geom_prefix_ops(&g, prefix);
	if (g.swarm.mount[0] || g.swarm.attrs)
		fprintf(out, "# swarm draw %u: mount %s, chattr of every file "
			"before the ops (the mutator keeps to its op kinds)\n",
			in.hdr[FUZZ_SWARM_BYTE],
			g.swarm.mount[0] ? g.swarm.mount : "as the preset's");
	describe_prefix(prefix, n, out);
	fprintf(out, "#decode --files %u --max-file %llu\n", g.op.nfiles,
		(unsigned long long)g.op.max_file);
	return 0;
}
