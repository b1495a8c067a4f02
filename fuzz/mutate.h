/*
 * mutate.h - structure-aware mutation of fuzz inputs (fuzz.h's layout:
 * a 16-byte header, then 16-byte op records), shared by the libFuzzer
 * hooks (mutator_libfuzzer.c) and the AFL++ custom mutator library
 * (mutator_afl.c).
 *
 * Byte-level mutation of op records mostly produces ops the clamping
 * decoder folds into the same few shapes; these mutations keep records
 * whole and meaningful:
 *
 *   insert     a new op (a kind, files, flags the kind takes, and
 *              offsets/lengths from a table of block-edge values)
 *   delete     one op or a short run
 *   duplicate  an op, to a random place (a write twice, a sync again)
 *   swap       two ops
 *   splice     a run of ops copied elsewhere (or, in a crossover, from
 *              another input)
 *   tweak      one field of one op: the kind, a file, a flag, the
 *              pattern, or off/len/arg set to an edge value, nudged by a
 *              block or a byte, doubled or halved, or lined up with
 *              another op's range (same offset, or just past its end)
 *   header     one header byte (geometry, corruption choices, the
 *              swarm draw of swarm.h), or the largest file (geom.h)
 *              one step larger or smaller
 *   bytes      the fuzzer's own byte mutation, when it offers one
 *
 * New ops and kind tweaks take their kind from the input's swarm draw
 * (swarm.h: the last header byte), so an input keeps to its own subset
 * of kinds, as a swarm round does.  Records after the first with kind 0
 * are never run, so they are dropped first.  Every mutation is a pure function of (input, seed).
 */
#ifndef FSORACLE_FUZZ_MUTATE_H
#define FSORACLE_FUZZ_MUTATE_H

#include <stddef.h>
#include <stdint.h>

/* The fuzzer's byte mutator (libFuzzer's LLVMFuzzerMutate), or NULL. */
typedef size_t (*mut_bytes_fn)(uint8_t *data, size_t size, size_t max);

/* Mutate data in place (room for max bytes); returns the new size. */
size_t mut_mutate(uint8_t *data, size_t size, size_t max, uint32_t seed,
		  mut_bytes_fn bytes);

/* Cross a with b into out (room for max); returns the size. */
size_t mut_crossover(const uint8_t *a, size_t asize, const uint8_t *b,
		     size_t bsize, uint8_t *out, size_t max, uint32_t seed);

#endif
