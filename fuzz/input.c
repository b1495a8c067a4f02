/*
 * input.c - the input layout every target shares (fuzz.h) and the one way
 * a target reports a finding.
 */
#include "fuzz/fuzz.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#ifdef FUZZ_ASAN
#include <pthread.h>
#include <sanitizer/allocator_interface.h>
#include <time.h>
#include <unistd.h>
#endif

void fuzz_split(const uint8_t *data, size_t size, struct fuzz_input *in)
{
	size_t n = size < FUZZ_HDR_LEN ? size : FUZZ_HDR_LEN;

	memset(in->hdr, 0, sizeof(in->hdr));
	if (n)
		memcpy(in->hdr, data, n);
	in->ops = data + n;
	in->ops_len = size - n;
}

void fuzz_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("fsoracle fuzz: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}

#ifdef FUZZ_ASAN
static FILE *heap_log;
static unsigned heap_every;

static void *heap_logger(void *arg)
{
	struct timespec t0, now;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		fprintf(heap_log, "%lld %zu\n", (long long)(now.tv_sec - t0.tv_sec),
			__sanitizer_get_current_allocated_bytes());
		fflush(heap_log);
		sleep(heap_every);
	}
	return NULL;
}
#endif

void fuzz_heap_log_start(void)
{
#ifdef FUZZ_ASAN
	const char *path = getenv("FSO_HEAP_LOG");
	const char *every = getenv("FSO_HEAP_EVERY");
	pthread_t th;
	char *end;

	if (!path || !path[0] || heap_log)
		return;
	heap_every = 10;
	if (every) {
		unsigned long v = strtoul(every, &end, 10);

		if (!every[0] || *end || v == 0 || v > 86400)
			fuzz_die("FSO_HEAP_EVERY=%s: seconds, 1 to 86400", every);
		heap_every = (unsigned)v;
	}
	heap_log = fopen(path, "a");
	if (!heap_log)
		fuzz_die("FSO_HEAP_LOG=%s: cannot open it", path);
	if (pthread_create(&th, NULL, heap_logger, NULL))
		fuzz_die("FSO_HEAP_LOG: cannot start the logging thread");
	pthread_detach(th);
#endif
}
