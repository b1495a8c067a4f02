/*
 * park.c - the process's park of idle blocks (park.h).
 *
 * One shelf per size, a stack of block pointers: the block parked last
 * is the first handed out (still warm in the cache).  A shelf is claimed
 * by the first block of its size and given up when it empties, so sizes
 * come and go with the filesystems a process mounts.
 */
#include "base/park.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/poison.h"

/* The sizes and counts together, so finding a shelf reads one cache
 * line, not one a shelf. */
struct shelf {
	size_t size;              /* 0: free shelf */
	size_t n;
};

static struct shelf shelves[PARK_SIZES];
static void *blocks[PARK_SIZES][PARK_PER_SIZE];
static size_t parked_bytes;
static uint64_t n_reused, n_parked;
static atomic_flag lock = ATOMIC_FLAG_INIT;
/* Threads park_threads() counted: while 0, this one is the only user.
 * A thread reads it after its own calls changed it or after it was
 * started (which orders the count's change before it), so the relaxed
 * load sees every change that matters to it. */
static atomic_int others;

void park_threads(int n)
{
	atomic_fetch_add_explicit(&others, n, memory_order_relaxed);
}

/* Lock the park if another thread may use it; true when it did. */
static bool park_lock(void)
{
	if (!atomic_load_explicit(&others, memory_order_relaxed))
		return false;
	while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
		;
	return true;
}

static void park_unlock(bool locked)
{
	if (locked)
		atomic_flag_clear_explicit(&lock, memory_order_release);
}

static struct shelf *shelf_of(size_t size)
{
	for (unsigned i = 0; i < PARK_SIZES; i++)
		if (shelves[i].size == size)
			return &shelves[i];
	return NULL;
}

void *park_alloc(size_t size)
{
	struct shelf *s;
	void *p = NULL;
	bool locked = park_lock();
	s = shelf_of(size);
	if (s && s->n) {
		p = blocks[s - shelves][--s->n];
		if (!s->n)
			s->size = 0;
		parked_bytes -= size;
		n_reused++;
	}
	park_unlock(locked);
	if (!p)
		return malloc(size);
	mem_reuse(p, size);
	return p;
}

void *park_zalloc(size_t size)
{
	void *p = park_alloc(size);

	if (p)
		memset(p, 0, size);
	return p;
}

/* park_grow's block size for need bytes; 0 when there is none. */
static size_t grow_size(size_t need)
{
	size_t size = PARK_GROW_MIN;

	while (size < need) {
		if (size > SIZE_MAX / 2)
			return 0;
		size *= 2;
	}
	return size;
}

int park_grow(void **p, size_t *cap, size_t used, size_t need)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = grow_size(need);
	n = ncap ? park_alloc(ncap) : NULL;
	if (!n)
		return -ENOMEM;
	if (used)
		memcpy(n, *p, used);
	park_free(*p, *cap);
	*p = n;
	*cap = ncap;
	return 0;
}

void *park_calloc(size_t n, size_t size)
{
	size_t bytes, block;
	uint8_t *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	bytes = n * size;
	block = grow_size(bytes);
	p = block ? park_alloc(block) : NULL;
	if (!p)
		return NULL;
	memset(p, 0, bytes);
	mem_idle(p + bytes, block - bytes);
	return p;
}

void park_cfree(void *p, size_t n, size_t size)
{
	if (p)
		park_free(p, grow_size(n * size));
}

void park_free(void *p, size_t size)
{
	struct shelf *s;
	int kept = 0;
	bool locked;

	if (!p)
		return;
	if (!size) {
		free(p);
		return;
	}
	mem_idle(p, size);
	locked = park_lock();
	s = shelf_of(size);
	if (!s)
		s = shelf_of(0);
	if (s && s->n < PARK_PER_SIZE && parked_bytes + size <= PARK_BYTES) {
		s->size = size;
		blocks[s - shelves][s->n++] = p;
		parked_bytes += size;
		n_parked++;
		kept = 1;
	}
	park_unlock(locked);
	if (!kept) {
		mem_reuse(p, size);
		free(p);
	}
}

void park_drain(void)
{
	for (;;) {
		void *p = NULL;
		size_t size = 0;
		bool locked = park_lock();

		for (unsigned i = 0; i < PARK_SIZES && !p; i++) {
			struct shelf *s = &shelves[i];

			if (!s->n)
				continue;
			size = s->size;
			p = blocks[i][--s->n];
			if (!s->n)
				s->size = 0;
			parked_bytes -= size;
		}
		park_unlock(locked);
		if (!p)
			return;
		mem_reuse(p, size);
		free(p);
	}
}

void park_stats(struct park_stats *st)
{
	bool locked;

	memset(st, 0, sizeof(*st));
	locked = park_lock();
	for (unsigned i = 0; i < PARK_SIZES; i++)
		st->blocks += shelves[i].n;
	st->bytes = parked_bytes;
	st->reused = n_reused;
	st->parked = n_parked;
	park_unlock(locked);
	st->threads = atomic_load_explicit(&others, memory_order_relaxed);
}
