/*
 * plant.h - planted bugs in the seed paths' optimized twins, for the fuzz
 * targets' self-test only (fuzz/selftest.sh --catch): a build with
 * -DFSO_PLANTED can plant one bug, chosen at run time, that each target
 * must then find.  Without the flag this header declares nothing and the
 * planted code is not compiled: no normal build (./build.sh, `make fuzz`,
 * the OSS-Fuzz build) holds any of it.
 *
 *   rt_truncate         (a) truncate.c: the in-place unwrite of the EOF rt
 *                       extent's tail stops one block short, so its last
 *                       block keeps the bytes truncated away (a later
 *                       extension reads them; the audit sees them)
 *   pagecache_truncate  (b) pcache_truncate.c: the batched walk clears a
 *                       removed page's mark in its leaf only, so a parent
 *                       whose child lost its last marked slot keeps the
 *                       mark
 *   cow_end             (c) cow.c: the in-place remap gives the tail
 *                       remainder G's start + C's length as its first
 *                       block, right only when C starts at G's start
 *   forget              (d) forget.c: for a journal-data file the per-
 *                       block forget stops one block short of each freed
 *                       extent, whose last block keeps its logged buffer
 *                       and gets no revoke
 *   delalloc_cap        (e) delalloc_cap.c: the cap inside the allocation
 *                       loop lets a compressed piece be one block longer
 *                       than the longest extent (the naive twin caps the
 *                       run at the lock, so its pieces never reach it)
 *
 *   pmem_fence          devio.c: on persistent memory the barrier
 *                       before a commit block persists nothing (the
 *                       fence of the metadata stored since the last
 *                       one is missing), so a commit block can be
 *                       durable over a log the power cut lost or tore:
 *                       no seed path, found only by power cuts on the
 *                       pmem: persist path (`cut` ops, cutall)
 *
 * The choice is process-wide (every engine of the process), and the
 * naive twins are never touched, so the diff target's all-naive engine
 * stays the reference.
 */
#ifndef FSORACLE_REF_PLANT_H
#define FSORACLE_REF_PLANT_H

#ifdef FSO_PLANTED
#include <stddef.h>

/*
 * Plant the bug of seed path `path` (ref_path_name's names, or "none"):
 * 0, or -EINVAL with a message in err.
 */
int ref_plant(const char *path, char *err, size_t errlen);

/* Inside ref/: the path whose bug is planted, + 1 (0: none). */
extern unsigned ref_planted;
#define REF_PLANT_PMEM_FENCE REF_PATH_COUNT /* after the seed paths */
#define PLANTED(p) (ref_planted == (unsigned)(p) + 1u)
#endif

#endif
