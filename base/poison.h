/*
 * poison.h - memory a layer keeps for reuse instead of freeing it, told
 * to the sanitizers so they check it as if it had been freed and
 * allocated again:
 *
 *   mem_idle(p, n)    kept, not in use: under ASan any access is an error
 *                     (use-after-poison), as a use after free would be
 *   mem_reuse(p, n)   handed out again: accessible, and under MSan its
 *                     bytes are uninitialised, as malloc's are
 *
 * Both do nothing in other builds.
 */
#ifndef FSO_BASE_POISON_H
#define FSO_BASE_POISON_H

#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FSO_POISON_ASAN 1
#endif
#if __has_feature(memory_sanitizer)
#define FSO_POISON_MSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FSO_POISON_ASAN)
#define FSO_POISON_ASAN 1
#endif

#ifdef FSO_POISON_ASAN
#include <sanitizer/asan_interface.h>
#endif
#ifdef FSO_POISON_MSAN
#include <sanitizer/msan_interface.h>
#endif

static inline void mem_idle(void *p, size_t n)
{
#ifdef FSO_POISON_ASAN
	__asan_poison_memory_region(p, n);
#endif
	(void)p;
	(void)n;
}

static inline void mem_reuse(void *p, size_t n)
{
#ifdef FSO_POISON_ASAN
	__asan_unpoison_memory_region(p, n);
#endif
#ifdef FSO_POISON_MSAN
	__msan_allocated_memory(p, n);
#endif
	(void)p;
	(void)n;
}

#endif /* FSO_BASE_POISON_H */
