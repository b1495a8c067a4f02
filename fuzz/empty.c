/*
 * empty.c - fuzz target `empty`: does nothing with its input.  Built like
 * every other target, it measures the ceiling a fuzzer and its
 * instrumentation allow on this machine, printed beside every target's
 * exec/s by fuzz/bench.sh so the ratio is visible.  Not fuzzed by
 * ci/fuzz.
 */
#include "fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_heap_log_start();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return 0;
}

int fuzz_describe(const uint8_t *data, size_t size, FILE *out)
{
	fprintf(out, "# empty input of %zu bytes (the empty target ignores it)\n",
		size);
	return 0;
}
