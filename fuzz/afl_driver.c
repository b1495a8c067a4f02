/*
 * afl_driver.c - our AFL++ driver: persistent mode with the test case in
 * shared memory and a deferred fork server, around the same
 * LLVMFuzzerTestOneInput every target defines.  Built with afl-clang-fast
 * (the __AFL_* macros come from it); libFuzzer's driver is not used.
 *
 *   LLVMFuzzerInitialize     expensive one-time setup and a warm-up input
 *   __AFL_INIT()             the fork server starts here
 *   while (__AFL_LOOP(N))    up to N inputs per forked child
 *
 * The input is copied into a heap buffer of its exact size, so a
 * sanitizer build sees an over-read at the end of the input (the shared
 * memory buffer itself is much larger).  Run by hand, outside afl-fuzz,
 * it reads one input from stdin, or from the files named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz/fuzz.h"

#define PERSIST_ITERATIONS 10000

__AFL_FUZZ_INIT();

/* Outside afl-fuzz: the files on the command line, one input each. */
static int run_files(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		static uint8_t buf[1 << 20];
		size_t n;

		if (!f) {
			fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[i]);
			return 2;
		}
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned char *shm;

	LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1 && !getenv("__AFL_SHM_ID"))
		return run_files(argc, argv);
	__AFL_INIT();
	shm = __AFL_FUZZ_TESTCASE_BUF;
	while (__AFL_LOOP(PERSIST_ITERATIONS)) {
		size_t len = (size_t)__AFL_FUZZ_TESTCASE_LEN;
		uint8_t *copy = malloc(len ? len : 1);

		if (!copy)
			abort();
		memcpy(copy, shm, len);
		LLVMFuzzerTestOneInput(copy, len);
		free(copy);
	}
	return 0;
}
