/*
 * zeros.c - the process's read-only block of zeros (zeros.h).
 *
 * An anonymous private mapping without PROT_WRITE: the kernel fills it
 * with zeros and refuses every store to it, which a static const array
 * would not promise (the linker may place one in writable memory).
 */
#include "base/zeros.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

static _Atomic(const uint8_t *) block;

const uint8_t *zeros_block(void)
{
	const uint8_t *z = atomic_load_explicit(&block, memory_order_acquire);
	const uint8_t *none = NULL;
	void *m;

	if (z)
		return z;
	m = mmap(NULL, ZEROS_BYTES, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (m == MAP_FAILED)
		return NULL;
	if (atomic_compare_exchange_strong_explicit(&block, &none, m,
						    memory_order_acq_rel,
						    memory_order_acquire))
		return m;
	munmap(m, ZEROS_BYTES); /* another thread mapped it first */
	return none;
}

bool zeros_hold(const void *p, size_t n)
{
	uintptr_t z = (uintptr_t)atomic_load_explicit(&block,
						      memory_order_relaxed);
	uintptr_t a = (uintptr_t)p;

	return z && a >= z && n <= ZEROS_BYTES && a - z <= ZEROS_BYTES - n;
}

bool zeros_all(const void *p, size_t n)
{
	const uint8_t *b = p;

	if (n == 0 || zeros_hold(p, n)) /* read-only zeros: nothing to read */
		return true;
	return b[0] == 0 && memcmp(b, b + 1, n - 1) == 0;
}
