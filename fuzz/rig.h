/*
 * rig.h - the targets and checker of one filesystem preset (geom.h),
 * made once per process and reset after each input.
 *
 * Opening an engine per input costs about 100 us (mmap, page faults,
 * munmap with a TLB shootdown); the reset is devtrack_restore (the pages
 * the input wrote put back to a fresh filesystem's: the pages mkfs wrote,
 * kept when the rig is made, and zeros elsewhere) plus
 * check_reset, which mounts that filesystem (engine_target_formatted:
 * no mkfs).
 *
 * Every rig is made in rig_init_all(), before AFL++'s fork server starts,
 * and the clean-up of an input (freeing its filesystem's buffers, zeroing
 * the pages it wrote, the model's arrays) runs at the end of that same
 * input, so what a run covers depends on its own input alone: AFL++'s
 * stability stays at 100% and every input starts from exactly what a
 * fresh process gives it.
 */
#ifndef FSORACLE_FUZZ_RIG_H
#define FSORACLE_FUZZ_RIG_H

#include "fuzz/geom.h"
#include "harness/check.h"
#include "harness/target.h"

struct rig {
	enum geom_kind kind;
	struct geom_preset p;
	struct target *t[TARGET_MAX];
	int n;
	struct checker *c;
	struct devtrack *dt[TARGET_MAX];
	struct devtrack *rtdt[TARGET_MAX]; /* realtime devices (or NULL)   */
	struct hw_dev *cut[TARGET_MAX]; /* crash: the crash layer, over the
					   device dt tracks (its cuts and
					   the engine's go through it)     */
	struct op_seq meta;           /* header for failure logs            */
	uint64_t last_used;           /* input count when it last ran one   */
};

/*
 * Make every preset's rig for targets of this kind, and run warm (an
 * input) once, so one-time setup (CRC tables, notes printed once, array
 * sizes) happens before AFL++'s fork server starts.  Dies on error.
 */
void rig_init_all(enum geom_kind kind, const uint8_t *warm, size_t len);
/* The rig of a preset: fresh targets, ready for a sequence. */
struct rig *rig_get(unsigned preset);
/*
 * An input of kind: its geometry in *g, its ops in *seq (valid until the
 * next call; geom_prefix_ops first), and the rig to run them on.
 */
struct rig *rig_input(enum geom_kind kind, const uint8_t *data, size_t size,
		      struct fuzz_geom *g, const struct op_seq **seq);
/* The engine's crash layer (GEOM_CRASH), for hw_crash_* calls between
 * rig_device_begin and rig_device_end; the tracking shim sits below it,
 * so what a cut writes is tracked too. */
struct hw_dev *rig_device_begin(struct rig *r);
void rig_device_end(struct rig *r);
/* After a sequence that passed: its devices back to a fresh filesystem
 * (the next input's rig_input mounts it anew). */
void rig_put(struct rig *r);

#endif
