/*
 * test_zeros.c - base/zeros.h: the process's block of zeros is one
 * mapping, reads zeros, says exactly which ranges lie inside it, and
 * kills the process that stores into it; zeros_all tells zeros from
 * anything else.
 */
#include "test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/zeros.h"

TEST(zeros_block_is_one_mapping_of_zeros)
{
	const uint8_t *z = zeros_block();
	size_t nonzero = 0;

	CHECK(z != NULL);
	CHECK(zeros_block() == z);
	for (size_t i = 0; i < ZEROS_BYTES; i++)
		nonzero += z[i] != 0;
	CHECK_EQ(nonzero, 0);
}

TEST(zeros_hold_only_ranges_inside_the_block)
{
	const uint8_t *z = zeros_block();
	uint8_t *own = calloc(1, ZEROS_BYTES);

	CHECK(z != NULL && own != NULL);
	CHECK(zeros_hold(z, ZEROS_BYTES));
	CHECK(zeros_hold(z, 0));
	CHECK(zeros_hold(z + 4096, 4096));
	CHECK(zeros_hold(z + ZEROS_BYTES - 1, 1));
	CHECK(zeros_hold(z + ZEROS_BYTES, 0));
	CHECK(!zeros_hold(z, ZEROS_BYTES + 1));
	CHECK(!zeros_hold(z + 1, ZEROS_BYTES));
	CHECK(!zeros_hold(z + ZEROS_BYTES, 1));
	CHECK(!zeros_hold(z + 100, SIZE_MAX));
	CHECK(!zeros_hold((const uint8_t *)z - 1, 1));
	CHECK(!zeros_hold(own, ZEROS_BYTES)); /* zeros, but writable */
	CHECK(!zeros_hold(NULL, 0));
	free(own);
}

/* A child that stores one byte into the block and, if it lives, exits
 * 42. */
static int store_into_the_block(size_t at)
{
	const uint8_t *z = zeros_block();
	int status;
	pid_t pid;

	if (!z)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		volatile uint8_t *w = (volatile uint8_t *)(uintptr_t)z;

		if (null >= 0)
			dup2(null, 2); /* a sanitizer's report of the fault */
		w[at] = 1;
		_exit(42);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

TEST(a_store_into_the_zeros_block_kills_the_process)
{
	static const size_t at[] = { 0, 4095, ZEROS_BYTES - 1 };

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		int st = store_into_the_block(at[i]);

		CHECK_MSG(st != -1, "fork or wait failed");
		/* killed by SIGSEGV, or a sanitizer's handler exited non-zero */
		CHECK_MSG(WIFSIGNALED(st) ||
			  (WIFEXITED(st) && WEXITSTATUS(st) != 42 &&
			   WEXITSTATUS(st) != 0),
			  "a store at byte %zu was allowed (status %#x)", at[i],
			  st);
	}
	CHECK(zeros_block()[0] == 0 && zeros_block()[ZEROS_BYTES - 1] == 0);
}

TEST(zeros_all_finds_one_set_bit_anywhere)
{
	enum { N = 4099 };
	uint8_t *buf = calloc(1, N);

	CHECK(buf != NULL);
	CHECK(zeros_all(buf, N));
	CHECK(zeros_all(buf, 0));
	CHECK(zeros_all(buf + 1, 0));
	CHECK(zeros_all(zeros_block(), ZEROS_BYTES));
	/* each position, each bit, every length that covers it or not */
	for (size_t at = 0; at < N; at += at < 70 ? 1 : 61) {
		for (unsigned bit = 0; bit < 8; bit += 7) {
			buf[at] = (uint8_t)(1u << bit);
			CHECK_MSG(!zeros_all(buf, N), "byte %zu bit %u", at, bit);
			CHECK(!zeros_all(buf + at, 1));
			CHECK(!zeros_all(buf + at, N - at));
			CHECK(zeros_all(buf, at));
			CHECK(at + 1 == N || zeros_all(buf + at + 1, N - at - 1));
			buf[at] = 0;
		}
	}
	free(buf);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
