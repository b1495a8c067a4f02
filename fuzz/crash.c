/*
 * crash.c - fuzz target `crash`: an op sequence on the engine over a
 * crash layer (hw.h: "crash:mem:..." for block semantics, 512-byte
 * atomic sectors; "crash:pmem:..." for persistent memory through its
 * real persist path, 8-byte atomic stores: geom.h), with every `cut` op
 * a power cut inside the op it falls in (harness/cut.h: the model every
 * loop shares, run by the checker) and every `crash` op a cut chosen by
 * the input's header:
 * pending (not yet durable) writes survive or vanish as the cut says,
 * and the one in flight may be torn.  Then recovery (mount), and the
 * checker's rules (check.h): every file made durable and not changed
 * since reads back exactly, the audit (fsck) passes, and the engine
 * agrees with the model from there on.
 *
 *   input = header (geom.h bytes 0-2: preset, files, largest file,
 *           bit 0 of byte 2 = pmem; bytes 3-14: four cuts)
 *         + op records (binary.h)
 *
 * A cut is 3 bytes, used in turn by the sequence's crash ops:
 *
 *   byte 0   bits 0-2 kind: drop all, keep all, prefix, random, pattern
 *            (5-7 are drop all again); bit 3: tear the writes dropped
 *            (keep their first `units` atomic units)
 *   byte 1   prefix: how many pending writes survive (mod pending + 1);
 *            random: the seed; pattern: 8 bits, repeated over the
 *            pending writes (bit i % 8 keeps write i)
 *   byte 2   units, for the tear
 *
 * All zero: every cut drops everything not durable, tears nothing.
 *
 * "random" and "pattern" are hw.h's mask cut with a mask made here:
 * hw.h's own random cut and seeded tear draw on each write's sequence
 * number since the device was opened, so the same input would cut
 * differently after different earlier inputs.
 *
 * The text form has no words for a header cut, so a finding at a crash
 * op is kept as this binary input (corpus/crash/); one at a cut op
 * replays from its text op log as is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "fuzz/geom.h"
#include "fuzz/rig.h"
#include "harness/check.h"
#include "hw/hw.h"

#define CRASH_CUTS 4

#define CUT_MASK_BITS (8u * 4096u)   /* pending writes a mask reaches */

struct cut_choice {
	struct hw_cut cut;
	const char *what;
};

static uint8_t cut_mask[CUT_MASK_BITS / 8];

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Cut choice b (3 bytes) for `pending` writes; fills cut_mask if needed. */
static void cut_of(const uint8_t *b, int64_t pending, struct cut_choice *cc)
{
	uint64_t s = b[1];

	memset(cc, 0, sizeof(*cc));
	cc->cut.kind = HW_CUT_DROP_ALL;
	cc->what = "drop all";
	switch (b[0] & 7) {
	case 1:
		cc->cut.kind = HW_CUT_KEEP_ALL;
		cc->what = "keep all";
		break;
	case 2:
		cc->cut.kind = HW_CUT_PREFIX;
		cc->cut.n = pending >= 0 ? b[1] % ((uint64_t)pending + 1) : 0;
		cc->what = "prefix";
		break;
	case 3:
		for (size_t i = 0; i < sizeof(cut_mask); i += 8) {
			uint64_t v = splitmix(&s);

			memcpy(cut_mask + i, &v, 8);
		}
		cc->cut.kind = HW_CUT_MASK;
		cc->what = "random";
		break;
	case 4:
		memset(cut_mask, b[1], sizeof(cut_mask));
		cc->cut.kind = HW_CUT_MASK;
		cc->what = "pattern";
		break;
	default:
		break;
	}
	if (cc->cut.kind == HW_CUT_MASK) {
		cc->cut.mask = cut_mask;
		cc->cut.mask_bits = CUT_MASK_BITS;
	}
	if (b[0] & 8) {
		cc->cut.tear = HW_TEAR_UNITS;
		cc->cut.units = b[2];
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t warm[FUZZ_HDR_LEN + 3 * OP_BIN_RECORD] = {
		[FUZZ_HDR_LEN] = OP_PWRITE, [FUZZ_HDR_LEN + 9] = 1,
		[FUZZ_HDR_LEN + OP_BIN_RECORD] = OP_CRASH,
		[FUZZ_HDR_LEN + 2 * OP_BIN_RECORD] = OP_SYNC,
	};

	fuzz_heap_log_start();
	rig_init_all(GEOM_CRASH, warm, sizeof(warm));
	return 0;
}

/*
 * Past its last `crash` and `cut` op an input cuts no more: its crash
 * layer settles (hw.h: hw_crash_settle), and the writes from there to
 * the end go straight to the device, no longer each read back and kept
 * for a cut that cannot come.  A `cut` armed and not yet reached keeps
 * the layer recording (-EBUSY) until the checker has cut.  rig_put
 * unsettles it for the next input.  True once settled.
 */
static bool settle(struct rig *r)
{
	struct hw_dev *dev = rig_device_begin(r);
	int rc = hw_crash_settle(dev, true);

	rig_device_end(r);
	if (rc && rc != -EBUSY)
		fuzz_die("crash: hw_crash_settle failed: %d", rc);
	return rc == 0;
}

/* The index after seq's last op that may cut, 0 for none. */
static size_t cuts_end(const struct op_seq *seq)
{
	size_t end = 0;

	for (size_t i = 0; i < seq->n; i++)
		if (seq->ops[i].kind == OP_CRASH || seq->ops[i].kind == OP_CUT)
			end = i + 1;
	return end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct op_seq *seq;
	struct fuzz_input in;
	struct fuzz_geom g;
	struct rig *r = rig_input(GEOM_CRASH, data, size, &g, &seq);
	size_t quiet_from = cuts_end(seq);
	bool settled = false;
	unsigned ncut = 0;
	int ret = 0;

	fuzz_split(data, size, &in); /* for the cut choices */
	for (size_t i = 0; i < seq->n && !ret; i++) {
		if (!settled && i >= quiet_from)
			settled = settle(r);
		if (seq->ops[i].kind == OP_CRASH) {
			struct hw_dev *dev = rig_device_begin(r);
			struct cut_choice cc;
			int64_t pending = hw_crash_pending(dev);
			int rc;

			cut_of(in.hdr + 3 + 3 * (ncut++ % CRASH_CUTS), pending, &cc);
			rc = hw_crash_cut(dev, &cc.cut);
			rig_device_end(r);
			if (rc)
				fuzz_die("crash: hw_crash_cut (%s, %lld pending) "
					 "failed: %d", cc.what, (long long)pending, rc);
		}
		ret = check_op(r->c, &seq->ops[i]);
	}
	if (!ret && !settled)
		settled = settle(r);
	if (!ret)
		ret = check_finish(r->c);
	if (ret)
		fuzz_die("crash: %s after %zu ops (dev=%s mkfs=%s mount=%s); "
			 "`replay/crash --describe` shows the cuts",
			 check_status_name(ret), check_log(r->c)->n, g.p.dev,
			 g.p.mkfs, check_log(r->c)->hdr.mount);
	rig_put(r);
	return 0;
}

int fuzz_describe(const uint8_t *data, size_t size, FILE *out)
{
	struct fuzz_input in;
	struct fuzz_geom g;

	fuzz_split(data, size, &in);
	geom_from_header(GEOM_CRASH, in.hdr, &g);
	fprintf(out, "# crash input: dev=%s mkfs=%s%s%s targets=engine,model; "
		"%u file(s) of at most %lluk\n", g.p.dev, g.p.mkfs,
		g.p.mount[0] ? " mount=" : "", g.p.mount, g.op.nfiles,
		(unsigned long long)(g.op.max_file >> 10));
	if (g.swarm.mount[0] || g.swarm.attrs)
		fprintf(out, "# swarm draw %u: mount %s%s%s, chattr%s%s%s%s of "
			"every file before the ops\n", in.hdr[FUZZ_SWARM_BYTE],
			g.swarm.mount, g.swarm.mount[0] && g.p.mount[0] ? "," : "",
			g.p.mount,
			g.swarm.attrs & OP_ATTR_REALTIME ? " +r" : "",
			g.swarm.attrs & OP_ATTR_ALWAYS_COW ? " +o" : "",
			g.swarm.attrs & OP_ATTR_JOURNAL_DATA ? " +j" : "",
			g.swarm.attrs & OP_ATTR_COMPRESS ? " +c" : "");
	for (unsigned i = 0; i < CRASH_CUTS; i++) {
		struct cut_choice cc;
		const uint8_t *b = in.hdr + 3 + 3 * i;

		cut_of(b, 255, &cc);
		fprintf(out, "# cut %u (crash ops %u, %u, ...): %s", i, i + 1,
			i + 1 + CRASH_CUTS, cc.what);
		if (cc.cut.kind == HW_CUT_PREFIX)
			fprintf(out, " %u of the pending writes", b[1]);
		if ((b[0] & 7) == 3)
			fprintf(out, " (seed %u)", b[1]);
		if ((b[0] & 7) == 4)
			fprintf(out, " (0x%02x)", b[1]);
		if (cc.cut.tear == HW_TEAR_UNITS)
			fprintf(out, ", dropped writes torn to %u units", b[2]);
		fputc('\n', out);
	}
	fprintf(out, "#decode --files %u --max-file %llu\n", g.op.nfiles,
		(unsigned long long)g.op.max_file);
	return 0;
}
