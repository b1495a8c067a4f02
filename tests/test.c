/* test.c - registry and runner for tests/test.h. */
#include "test.h"

#include <stdarg.h>
#include <time.h>

#define MAX_TESTS 1024

static struct test_case tests[MAX_TESTS];
static int ntests;
int test_failed_current;

void test_register(const char *name, test_fn fn)
{
	if (ntests == MAX_TESTS) {
		fprintf(stderr, "test: too many tests (max %d)\n", MAX_TESTS);
		exit(2);
	}
	tests[ntests].name = name;
	tests[ntests].fn = fn;
	ntests++;
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "  %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	test_failed_current = 1;
}

static int selected(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

int test_main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	if (argc == 2 && strcmp(argv[1], "-l") == 0) {
		for (int i = 0; i < ntests; i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	for (int i = 0; i < ntests; i++) {
		struct timespec a, b;

		if (!selected(argc, argv, tests[i].name))
			continue;
		test_failed_current = 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		tests[i].fn();
		clock_gettime(CLOCK_MONOTONIC, &b);
		double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 +
			    (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		printf("%-4s %s (%.0f ms)\n", test_failed_current ? "FAIL" : "ok",
		       tests[i].name, ms);
		if (test_failed_current)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
