/*
 * mutator_afl.c - the structure-aware mutator (mutate.h) as an AFL++
 * custom mutator library (docs/custom_mutators.md, AFL++ 4.04c):
 *
 *   AFL_CUSTOM_MUTATOR_LIBRARY=out/fuzz/afl/mutator.so afl-fuzz ...
 *
 * afl_custom_fuzz gets a test case and, sometimes, a second one from the
 * queue to splice with; the result lives in a buffer we own (grown with
 * realloc, never afl_realloc).  Without AFL_CUSTOM_MUTATOR_ONLY, AFL++
 * keeps its own havoc stages too, which do the byte-level work.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz/mutate.h"

struct mut_state {
	uint32_t seed;
	uint8_t *buf;
	size_t cap;
};

void *afl_custom_init(void *afl, unsigned int seed);
size_t afl_custom_fuzz(void *data, uint8_t *buf, size_t buf_size,
		       uint8_t **out_buf, uint8_t *add_buf, size_t add_buf_size,
		       size_t max_size);
const char *afl_custom_describe(void *data, size_t max_description_len);
void afl_custom_deinit(void *data);

void *afl_custom_init(void *afl, unsigned int seed)
{
	struct mut_state *st = calloc(1, sizeof(*st));

	if (st)
		st->seed = seed;
	return st;
}

size_t afl_custom_fuzz(void *data, uint8_t *buf, size_t buf_size,
		       uint8_t **out_buf, uint8_t *add_buf, size_t add_buf_size,
		       size_t max_size)
{
	struct mut_state *st = data;
	uint32_t seed = st->seed = st->seed * 1103515245u + 12345u;
	size_t need = max_size ? max_size : 1;

	if (buf_size > max_size)
		buf_size = max_size;
	if (need > st->cap) {
		uint8_t *nb = realloc(st->buf, need);

		if (!nb) {
			*out_buf = buf;
			return buf_size;
		}
		st->buf = nb;
		st->cap = need;
	}
	if (add_buf && add_buf_size && (seed >> 16) % 8 == 0) {
		*out_buf = st->buf;
		return mut_crossover(buf, buf_size, add_buf, add_buf_size, st->buf,
				     max_size, seed);
	}
	memcpy(st->buf, buf, buf_size);
	*out_buf = st->buf;
	return mut_mutate(st->buf, buf_size, max_size, seed, NULL);
}

const char *afl_custom_describe(void *data, size_t max_description_len)
{
	return "fsoracle-ops";
}

void afl_custom_deinit(void *data)
{
	struct mut_state *st = data;

	if (st)
		free(st->buf);
	free(st);
}
