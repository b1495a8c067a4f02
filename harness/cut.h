/*
 * cut.h - the one power-cut model every loop shares: the `cut` op of
 * the soak, replay and minimize (op.h), the `crash` fuzz target, the
 * `crash` property suite and the logs cutall writes for its failures.
 *
 * A cut is a point and a seed (OP_CUT_ARG).  Through the crash layer
 * (hw.h, "crash:SPEC") of the engine's device:
 *
 *   point 0        the power fails now: cut at once
 *   point N > 0    a plan fails the power at the N-th durability point
 *                  (flush, FUA write, persist) issued from here, inside
 *                  whatever op issues it; that op runs to its end on a
 *                  device that no longer makes anything durable, and
 *                  the cut follows it
 *
 *   seed 0         exact: the power fails right after point N and only
 *                  what was durable survives
 *   seed S > 0     the power fails instead of point N; each write since
 *                  the point before survives by a coin drawn from S, and
 *                  a dropped one is torn in the device's atomic units
 *                  (512-byte sectors; 8-byte words on pmem) by coin too
 *
 * An engine with a realtime device has one power domain over both
 * devices (hw_crash_join): points are counted over both, the failure
 * stops both, and one cut decides the writes of both.  The coins are
 * keyed by a write's place among the domain's pending ones
 * (hw_cut.relative), so a log replays to the same cut on fresh devices
 * whatever ran before it.  On zoned:mem and zoned:file the cut rewinds
 * write pointers and undoes the zone resets and finishes made after the
 * failure.  On pmem the writes are stores and the points
 * the persists of hw/pmem.c's real path, so a store the engine never
 * persisted is what a cut loses or tears.
 */
#ifndef FSORACLE_HARNESS_CUT_H
#define FSORACLE_HARNESS_CUT_H

#include <stdint.h>

#include "hw/hw.h"

/* The plan (fail_at 0 for point 0) and the cut of a cut op's arg. */
void cut_model(uint64_t arg, struct hw_crash_plan *plan, struct hw_cut *cut);

#endif
