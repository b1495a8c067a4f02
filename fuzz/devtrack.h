/*
 * devtrack.h - put a device back to its starting state (all zeros, or a
 * template image) cheaply between fuzz inputs, by tracking which of its
 * pages were written.
 *
 * A fuzz target keeps its engines (and their mem: devices) for the whole
 * process: opening a device per input costs an mmap, page faults and an
 * munmap whose TLB shootdown dominated the profile.  Reusing a device
 * must not let one input see another's bytes, so before each input the
 * pages written since the last restore are put back: zeroed again, or
 * to the bytes kept for them.  The result is exactly what a fresh mem:
 * device holds (the fuzz rigs': what mkfs writes on one), which is also
 * what `fsoracle replay` starts from, so crashes reproduce there.
 *
 * hw/ has no snapshot layer, so this interposes on the device's vtable
 * (hw.h's struct hw_ops is public for backends and layers): writes are
 * recorded and forwarded; zero-out and discard of pages still clean are
 * skipped, of dirty pages done by writing zeros (mem:'s madvise costs a
 * TLB shootdown per call, and the page faults after it cost more).  The
 * restore writes zeros over the dirty pages, so they stay in memory for
 * the next input; devtrack_resident_bytes says how much that holds over
 * every tracked device, and the caller bounds it with devtrack_release,
 * which hands one whole device back (mem: frees its memory; on any other
 * device it is a restore, and what the device holds stays counted).
 *
 * With a baseline (the image target's template), the starting state is
 * the baseline's bytes: restore copies them back over the dirty pages.
 * devtrack_keep makes the pages written so far part of the starting
 * state instead (the fuzz rigs' freshly made filesystem).
 */
#ifndef FSORACLE_FUZZ_DEVTRACK_H
#define FSORACLE_FUZZ_DEVTRACK_H

#include "hw/hw.h"

struct devtrack;

/*
 * Start tracking dev, which must hold the starting state now: all zeros
 * (baseline NULL) or the hw_size(dev) bytes at baseline, which must stay
 * valid while tracked.  0 or -ENOMEM.
 */
int devtrack_attach(struct hw_dev *dev, const uint8_t *baseline,
		    struct devtrack **out);
/*
 * The pages written since the last restore start as they are now: their
 * bytes are kept (a copy of each page), every restore puts them back,
 * and nothing is dirty.  A device tracked with a baseline keeps none.
 * 0, -ENOMEM, -EINVAL (a baseline) or the read's -errno.
 */
int devtrack_keep(struct devtrack *dt);
/* Put back every page written since the last restore.  0 or -errno. */
int devtrack_restore(struct devtrack *dt);
/*
 * The same, by one zero-out of the whole device, so its memory is freed,
 * and the kept pages written back (with a baseline: a restore).  Only a
 * mem: device frees its memory so; any other is restored (the same
 * bytes) and its pages stay counted.  0 or -errno.
 */
int devtrack_release(struct devtrack *dt);
/* Bytes of pages written on all tracked devices and not released since. */
uint64_t devtrack_resident_bytes(void);
/*
 * Step aside while someone needs the device's own vtable (hw.c finds
 * layers by their ops pointer: hw_crash_cut() and friends); writes made
 * meanwhile are not tracked.
 */
void devtrack_suspend(struct devtrack *dt);
void devtrack_resume(struct devtrack *dt);
struct hw_dev *devtrack_device(struct devtrack *dt);
/* One past the last byte of the highest page written since the restore. */
uint64_t devtrack_dirty_end(const struct devtrack *dt);
/* Stop tracking (dev gets its own vtable back) and free dt. */
void devtrack_detach(struct devtrack *dt);

#endif
