/*
 * park.h - blocks the engine's caches are done with, kept in the process
 * for the next block of the same size instead of freed.
 *
 * A fuzz input mounts two engines on a fresh filesystem, and each mount
 * fills its page cache and buffer cache block by block and frees them
 * all at unmount: thousands of mallocs and frees an input, which under
 * ASan each take its allocator, its fill of new memory and its
 * quarantine.  park_alloc() hands back a parked block of the exact size
 * asked when there is one, else mallocs; park_free() parks the block, or
 * frees it when its size's shelf or the park is full.  A parked block is
 * poisoned (base/poison.h): under ASan a use of it is an error, as a use
 * after free would be, and under MSan it comes back uninitialised.
 *
 * Bounded: PARK_SIZES distinct sizes, PARK_PER_SIZE blocks of each, and
 * PARK_BYTES in all.  Safe from any thread (one spin lock, held for a
 * few loads and stores) that park_threads() counted before it started;
 * while no such thread runs, the park takes no lock.  What is parked at
 * exit is still reachable: no leak.
 */
#ifndef FSORACLE_BASE_PARK_H
#define FSORACLE_BASE_PARK_H

#include <stddef.h>
#include <stdint.h>

#define PARK_SIZES 16
#define PARK_PER_SIZE 2048
#define PARK_BYTES ((size_t)16 << 20)

/* A block of size bytes, parked or new (NULL when malloc fails). */
void *park_alloc(size_t size);
/* The same, zeroed. */
void *park_zalloc(size_t size);
/* Done with p, of size bytes (NULL is ignored). */
void park_free(void *p, size_t size);
/* Free every parked block. */
void park_drain(void);
/*
 * n more threads may use the park (call before starting them), or with
 * n < 0 that many have been joined.  The lock is an atomic exchange on
 * every call, a few percent of a fuzz input's time, and a process that
 * never counts a thread here (the fuzz targets, a soak without workers)
 * takes it never: only its one thread can reach the park.  Every thread
 * that uses the park but the first must be counted (hw/workers.c counts
 * its workers); ThreadSanitizer reports one that is not.
 */
void park_threads(int n);

struct park_stats {
	size_t blocks, bytes;     /* parked now                           */
	uint64_t reused;          /* park_alloc calls a parked block served */
	uint64_t parked;          /* park_free calls that parked            */
	int threads;              /* counted by park_threads(): 0, no lock  */
};
void park_stats(struct park_stats *st);

#endif
