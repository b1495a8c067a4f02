/*
 * plant.h - which planted bug a planted build of a fuzz target runs with
 * (fuzz/selftest.sh --catch).  Only the `make fuzz-planted` flavour
 * (-DFSO_PLANTED) compiles fuzz/plant.c and calls this; no other build
 * reads FSO_PLANT or holds a planted bug.
 *
 * FSO_PLANT=NAME in the environment picks one bug for the process:
 *
 *   an engine bug    rt_truncate, pagecache_truncate, cow_end, forget,
 *                    delalloc_cap: a seed path's optimized twin
 *                    (ref/plant.h); diff and crash
 *   a model bug      trunc_tail, punch_short, zero_keep_size,
 *                    collapse_eio, audit_unlink: the rig runs the target
 *                    planted:NAME (harness/target_planted.c) beside the
 *                    model; diff and crash
 *   a zoned bug      append_location (the device's append location one
 *                    sector late once its zone holds data), model_capacity
 *                    (the zone rules take the zone size for its capacity):
 *                    the `zoned_planted` property suite's two mismatches
 *                    (props/suite_zoned.c); zoned
 *
 * Unset, empty or "none": no bug.  A name no bug of this target has is a
 * fatal error at start-up, so a misspelt selftest pair never passes.
 */
#ifndef FSORACLE_FUZZ_PLANT_H
#define FSORACLE_FUZZ_PLANT_H

enum plant_kind { PLANT_NONE, PLANT_ENGINE, PLANT_MODEL, PLANT_ZONED };

/*
 * Read FSO_PLANT for target `who` ("diff", "crash", "zoned"), plant an
 * engine bug, and say what kind it is; *bug is its name (NULL for none).
 */
enum plant_kind plant_setup(const char *who, const char **bug);

#endif
