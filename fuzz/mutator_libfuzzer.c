/*
 * mutator_libfuzzer.c - the structure-aware mutator (mutate.h) as
 * libFuzzer's custom mutator and crossover.  Linked into every libFuzzer
 * build of a target that reads op records; libFuzzer then calls these
 * instead of its own mutations, and mut_mutate hands part of the work
 * back to LLVMFuzzerMutate (bit flips, dictionary words, compare
 * operands), so nothing libFuzzer knows is lost.
 *
 * LLVMFuzzerMutate is weak: an engine without it (AFL++'s driver under
 * OSS-Fuzz) links too, and the mutator then flips bits itself.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz/mutate.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max)
	__attribute__((weak));
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1,
				 const uint8_t *d2, size_t s2, uint8_t *out,
				 size_t max, unsigned int seed);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed)
{
	return mut_mutate(data, size, max, seed,
			  LLVMFuzzerMutate ? LLVMFuzzerMutate : NULL);
}

size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1,
				 const uint8_t *d2, size_t s2, uint8_t *out,
				 size_t max, unsigned int seed)
{
	return mut_crossover(d1, s1, d2, s2, out, max, seed);
}
