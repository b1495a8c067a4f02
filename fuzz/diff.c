/*
 * diff.c - fuzz target `diff`: one op sequence through the optimized
 * engine, the naive engine and the model in lock step (check.h); any
 * disagreement, audit (fsck) failure or sanitizer report is a crash.
 *
 *   input = header (geom.h: filesystem preset - block size, B+tree
 *           fan-out, journal, longest extent, cache - files, largest
 *           file, naive mix)
 *         + op records (binary.h), clamped to that geometry
 *
 * The targets of each preset are made once (rig.h) and put back to
 * exactly what fresh ones hold after each input, so nothing of one input
 * reaches the next.  The checker's report goes to stderr before the abort.  A
 * crash replays as a text op log: `replay/diff --describe CRASH` prints
 * the `#! fsoracle` line and the decode options, `fsoracle decode` the
 * ops (ci/fuzz does both).
 */
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "fuzz/geom.h"
#include "fuzz/rig.h"
#include "harness/check.h"

/* Reused across inputs: cleared before each, so it carries no state. */
static struct op_seq seq;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t warm[FUZZ_HDR_LEN + 2 * OP_BIN_RECORD] = {
		[FUZZ_HDR_LEN] = OP_PWRITE, [FUZZ_HDR_LEN + 9] = 1,
		[FUZZ_HDR_LEN + OP_BIN_RECORD] = OP_SYNC,
	};

	/* One-time setup (every rig, CRC tables, notes printed once)
	 * happens here, before AFL++'s fork server starts; the op array
	 * gets its final size now, not at the first long input. */
	op_seq_init(&seq);
	for (unsigned i = 0; i < 4096; i++)
		if (op_seq_push(&seq, &(struct op){ .kind = OP_CLOSE }))
			fuzz_die("out of memory");
	rig_init_all(GEOM_DIFF);
	LLVMFuzzerTestOneInput(warm, sizeof(warm));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in;
	struct fuzz_geom g;
	struct rig *r;
	int ret;

	fuzz_split(data, size, &in);
	geom_from_header(GEOM_DIFF, in.hdr, &g);
	op_seq_clear(&seq);
	if (op_bin_decode(in.ops, in.ops_len, &g.op, &seq))
		fuzz_die("out of memory decoding %zu bytes", in.ops_len);
	r = rig_get(g.preset);
	ret = check_run(r->c, &seq);
	if (ret) {
		char line[512];

		geom_header_line(&g, "engine,naive,model", line, sizeof(line));
		fuzz_die("diff: %s after %zu ops; replay with\n%s\n"
			 "(and the ops: fsoracle decode --files %u --max-file %llu)",
			 check_status_name(ret), check_log(r->c)->n, line,
			 g.op.nfiles, (unsigned long long)g.op.max_file);
	}
	rig_put(r);
	return 0;
}

int fuzz_describe(const uint8_t *data, size_t size, FILE *out)
{
	struct fuzz_input in;
	struct fuzz_geom g;
	char line[512];

	fuzz_split(data, size, &in);
	geom_from_header(GEOM_DIFF, in.hdr, &g);
	geom_header_line(&g, "engine,naive,model", line, sizeof(line));
	fprintf(out, "%s\n", line);
	fprintf(out, "# diff input: preset %u (block size %u, B+tree fan-out "
		"%u, journal %u blocks, longest extent %u blocks%s, metadata "
		"cache %u%s), %u file(s) of at most %lluk, naive mix 0x%02x\n",
		g.preset, g.p.bs, g.p.maxrecs, g.p.journal,
		g.p.maxext ? g.p.maxext : (1u << 21) - 1,
		g.p.maxext ? "" : " (default)", g.p.cache,
		g.p.cache ? "" : " (default)", g.op.nfiles,
		(unsigned long long)(g.op.max_file >> 10), g.naive_mix);
	fprintf(out, "#decode --files %u --max-file %llu\n", g.op.nfiles,
		(unsigned long long)g.op.max_file);
	return 0;
}
