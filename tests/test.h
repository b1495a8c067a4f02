/*
 * test.h - the unit-test harness: named tests, checks that say what and
 * where, one summary line per program.
 *
 *   TEST(btree_split_keeps_order) { ... CHECK(x == 3); CHECK_EQ(a, b); }
 *   int main(int argc, char **argv) { return test_main(argc, argv); }
 *
 * Tests register themselves (constructor attribute) and run in file order.
 * `prog -l` lists them, `prog NAME...` runs only those.  The last line is
 * "N passed, M failed" so CI runners can read it.
 */
#ifndef FSORACLE_TEST_H
#define FSORACLE_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*test_fn)(void);
struct test_case { const char *name; test_fn fn; };

void test_register(const char *name, test_fn fn);
int test_main(int argc, char **argv);
void test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
extern int test_failed_current;

#define TEST(name)                                                        \
	static void test_##name(void);                                    \
	__attribute__((constructor)) static void test_reg_##name(void)    \
	{ test_register(#name, test_##name); }                            \
	static void test_##name(void)

/* A failed CHECK records the failure and returns from the test. */
#define CHECK(cond)                                                       \
	do {                                                              \
		if (!(cond)) {                                            \
			test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);\
			return;                                           \
		}                                                         \
	} while (0)

#define CHECK_MSG(cond, ...)                                              \
	do {                                                              \
		if (!(cond)) {                                            \
			test_fail(__FILE__, __LINE__, __VA_ARGS__);       \
			return;                                           \
		}                                                         \
	} while (0)

/* Helpers (functions a test calls) report like CHECK_MSG and return -1. */
#define HCHECK(cond, ...)                                                 \
	do {                                                              \
		if (!(cond)) {                                            \
			test_fail(__FILE__, __LINE__, __VA_ARGS__);       \
			return -1;                                        \
		}                                                         \
	} while (0)

#define CHECK_EQ(a, b)                                                    \
	do {                                                              \
		long long va_ = (long long)(a), vb_ = (long long)(b);     \
		if (va_ != vb_) {                                         \
			test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld",\
				  #a, #b, va_, vb_);                      \
			return;                                           \
		}                                                         \
	} while (0)

#define CHECK_OK(expr)                                                    \
	do {                                                              \
		long long r_ = (long long)(expr);                         \
		if (r_ < 0) {                                             \
			test_fail(__FILE__, __LINE__, "%s returned %lld",  \
				  #expr, r_);                             \
			return;                                           \
		}                                                         \
	} while (0)

#define CHECK_MEM(a, b, n)                                                \
	do {                                                              \
		if (memcmp((a), (b), (n)) != 0) {                         \
			test_fail(__FILE__, __LINE__, "memcmp(%s, %s, %s)",\
				  #a, #b, #n);                            \
			return;                                           \
		}                                                         \
	} while (0)

/* Sanitizer builds (ASan, MSan) run 3-10 times slower: tests that
 * bound their work by time or size scale it down under TEST_SANITIZED. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif

#endif
