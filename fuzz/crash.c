/*
 * crash.c - fuzz target `crash`: an op sequence on the engine over a
 * crash layer (hw.h: "crash:mem:..." for block semantics, 512-byte
 * atomic sectors; "crash[atomic=8]:mem:..." for pmem-like 8-byte atomic
 * stores), with every `crash` op in it a power cut chosen by the input:
 * pending (not yet durable) writes survive or vanish as the cut says,
 * and the one in flight may be torn.  Then recovery (mount), and the
 * checker's rules (check.h): every file made durable and not changed
 * since reads back exactly, the audit (fsck) passes, and the engine
 * agrees with the model from there on.
 *
 *   input = header (geom.h bytes 0-2: preset, files, largest file,
 *           bit 0 of byte 2 = pmem-like; bytes 3-14: four cuts)
 *         + op records (binary.h)
 *
 * A cut is 3 bytes, used in turn by the sequence's crash ops:
 *
 *   byte 0   bits 0-2 kind: drop all, keep all, prefix, random, mask
 *            (5-7 are drop all again); bits 3-4 tear: none, seeded,
 *            the first `units` atomic units
 *   byte 1   prefix: how many pending writes survive (mod pending + 1);
 *            random and seeded tear: the seed; mask: the mask of the
 *            first 8 pending writes
 *   byte 2   units, for the third tear
 *
 * All zero: every cut drops everything not durable, tears nothing.
 *
 * The text form has no words for a cut yet, so a finding here is kept
 * as this binary input (corpus/crash/), not as a text op log.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "fuzz/geom.h"
#include "fuzz/rig.h"
#include "harness/check.h"
#include "hw/hw.h"

#define CRASH_CUTS 4

static struct op_seq seq;

struct cut_choice {
	struct hw_cut cut;
	uint8_t mask;
};

static void cut_of(const uint8_t *b, int64_t pending, struct cut_choice *cc)
{
	static const enum hw_cut_kind kinds[8] = {
		HW_CUT_DROP_ALL, HW_CUT_KEEP_ALL, HW_CUT_PREFIX, HW_CUT_RANDOM,
		HW_CUT_MASK, HW_CUT_DROP_ALL, HW_CUT_DROP_ALL, HW_CUT_DROP_ALL,
	};
	static const enum hw_tear tears[4] = {
		HW_TEAR_NONE, HW_TEAR_SEED, HW_TEAR_UNITS, HW_TEAR_NONE,
	};

	memset(cc, 0, sizeof(*cc));
	cc->cut.kind = kinds[b[0] & 7];
	cc->cut.tear = tears[(b[0] >> 3) & 3];
	cc->cut.seed = b[1];
	cc->cut.units = b[2];
	cc->mask = b[1];
	if (cc->cut.kind == HW_CUT_PREFIX)
		cc->cut.n = pending >= 0 ? b[1] % ((uint64_t)pending + 1) : 0;
	if (cc->cut.kind == HW_CUT_MASK) {
		cc->cut.mask = &cc->mask;
		cc->cut.mask_bits = 8;
	}
}

static const char *const kind_names[] = {
	"drop all", "keep all", "prefix", "mark", "random", "mask",
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t warm[FUZZ_HDR_LEN + 3 * OP_BIN_RECORD] = {
		[FUZZ_HDR_LEN] = OP_PWRITE, [FUZZ_HDR_LEN + 9] = 1,
		[FUZZ_HDR_LEN + OP_BIN_RECORD] = OP_CRASH,
		[FUZZ_HDR_LEN + 2 * OP_BIN_RECORD] = OP_SYNC,
	};

	op_seq_init(&seq);
	for (unsigned i = 0; i < 4096; i++)
		if (op_seq_push(&seq, &(struct op){ .kind = OP_CLOSE }))
			fuzz_die("out of memory");
	rig_init_all(GEOM_CRASH);
	LLVMFuzzerTestOneInput(warm, sizeof(warm));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in;
	struct fuzz_geom g;
	struct rig *r;
	unsigned ncut = 0;
	int ret = 0;

	fuzz_split(data, size, &in);
	geom_from_header(GEOM_CRASH, in.hdr, &g);
	op_seq_clear(&seq);
	if (op_bin_decode(in.ops, in.ops_len, &g.op, &seq))
		fuzz_die("out of memory decoding %zu bytes", in.ops_len);
	r = rig_get(g.preset);
	for (size_t i = 0; i < seq.n && !ret; i++) {
		if (seq.ops[i].kind == OP_CRASH) {
			struct hw_dev *dev = rig_device_begin(r);
			struct cut_choice cc;
			int64_t pending = hw_crash_pending(dev);
			int rc;

			cut_of(in.hdr + 3 + 3 * (ncut++ % CRASH_CUTS), pending, &cc);
			rc = hw_crash_cut(dev, &cc.cut);
			rig_device_end(r);
			if (rc)
				fuzz_die("crash: hw_crash_cut (%s, %lld pending) "
					 "failed: %d", kind_names[cc.cut.kind],
					 (long long)pending, rc);
		}
		ret = check_op(r->c, &seq.ops[i]);
	}
	if (!ret)
		ret = check_finish(r->c);
	if (ret)
		fuzz_die("crash: %s after %zu ops (dev=%s mkfs=%s%s%s); "
			 "`replay/crash --describe` shows the cuts",
			 check_status_name(ret), check_log(r->c)->n, g.p.dev,
			 g.p.mkfs, g.p.mount[0] ? " mount=" : "", g.p.mount);
	rig_put(r);
	return 0;
}

int fuzz_describe(const uint8_t *data, size_t size, FILE *out)
{
	static const char *const tear_names[] = { "no tear", "seeded tear",
						  "tear to units" };
	struct fuzz_input in;
	struct fuzz_geom g;

	fuzz_split(data, size, &in);
	geom_from_header(GEOM_CRASH, in.hdr, &g);
	fprintf(out, "# crash input: dev=%s mkfs=%s%s%s targets=engine,model; "
		"%u file(s) of at most %lluk\n", g.p.dev, g.p.mkfs,
		g.p.mount[0] ? " mount=" : "", g.p.mount, g.op.nfiles,
		(unsigned long long)(g.op.max_file >> 10));
	for (unsigned i = 0; i < CRASH_CUTS; i++) {
		struct cut_choice cc;
		const uint8_t *b = in.hdr + 3 + 3 * i;

		cut_of(b, 255, &cc);
		fprintf(out, "# cut %u (crash ops %u, %u, ...): %s", i, i + 1,
			i + 1 + CRASH_CUTS, kind_names[cc.cut.kind]);
		if (cc.cut.kind == HW_CUT_PREFIX)
			fprintf(out, " %u of the pending writes", b[1]);
		if (cc.cut.kind == HW_CUT_RANDOM)
			fprintf(out, " (seed %u)", b[1]);
		if (cc.cut.kind == HW_CUT_MASK)
			fprintf(out, " (mask 0x%02x)", b[1]);
		fprintf(out, ", %s", tear_names[cc.cut.tear]);
		if (cc.cut.tear == HW_TEAR_UNITS)
			fprintf(out, " %u", b[2]);
		fputc('\n', out);
	}
	fprintf(out, "#decode --files %u --max-file %llu\n", g.op.nfiles,
		(unsigned long long)g.op.max_file);
	return 0;
}
