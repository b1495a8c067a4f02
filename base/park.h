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

#define PARK_SIZES 24
#define PARK_PER_SIZE 2048
#define PARK_BYTES ((size_t)16 << 20)

/* A block of size bytes, parked or new (NULL when malloc fails). */
void *park_alloc(size_t size);
/* The same, zeroed. */
void *park_zalloc(size_t size);
/* Done with p, of size bytes (NULL is ignored). */
void park_free(void *p, size_t size);
/*
 * An array that lives in the park between uses (the audit's lists, kept
 * from one audit to the next by the park instead of malloc): *p holds
 * *cap bytes (0: *p is NULL), of which the first used matter.  Make it
 * hold at least need bytes: a power of two of at least PARK_GROW_MIN,
 * so the sizes of such arrays share a few shelves.  0, or -ENOMEM with
 * *p and *cap unchanged.  park_free(*p, *cap) gives it back.
 */
#define PARK_GROW_MIN 1024
int park_grow(void **p, size_t *cap, size_t used, size_t need);
/*
 * calloc's counterpart for an array that lives as long as a mount: n
 * elements of size bytes, zeroed, in a block of park_grow's sizes whose
 * bytes past the array are poisoned (under ASan an access past its end
 * is caught as it would be past calloc's).  NULL when n * size overflows
 * or memory runs out.  park_cfree(p, n, size), with the n and size it
 * was asked for, gives it back.
 */
void *park_calloc(size_t n, size_t size);
void park_cfree(void *p, size_t n, size_t size);
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
