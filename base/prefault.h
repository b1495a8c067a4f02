/*
 * prefault.h - fault in the pages of memory about to be written with one
 * call (MADV_POPULATE_WRITE, Linux 5.14) rather than a trap into the
 * kernel a page, which a virtual machine makes dear (the zeroing of each
 * page stays).  Only the whole pages inside [p, p + len) are asked for;
 * a kernel without it answers EINVAL, headers without it leave it out,
 * and the writes then fault the pages in as before.  mem_grow is realloc
 * for arrays that grow by megabytes (the checker's op log).
 */
#ifndef FSO_BASE_PREFAULT_H
#define FSO_BASE_PREFAULT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static inline void mem_prefault(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t a, b;

	if (page <= 0)
		return;
	a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	b = ((uintptr_t)p + len) & ~((uintptr_t)page - 1);
	if (a < b)
		(void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#else
	(void)p;
	(void)len;
#endif
}

/* Blocks mem_grow faults in at once: this size and up. */
#define MEM_GROW_PREFAULT ((size_t)256 << 10)

/*
 * realloc of p (its first `used` bytes kept) to size bytes; from
 * MEM_GROW_PREFAULT on, the new block is faulted in before the copy (a
 * realloc that moves a block faults its pages in one at a time as it
 * copies).
 */
static inline void *mem_grow(void *p, size_t used, size_t size)
{
	void *n;

	if (size < MEM_GROW_PREFAULT)
		return realloc(p, size);
	n = malloc(size);
	if (!n)
		return NULL;
	mem_prefault(n, size);
	if (used)
		memcpy(n, p, used);
	free(p);
	return n;
}

#endif
