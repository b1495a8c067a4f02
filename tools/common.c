/* common.c - shared helpers of the fsoracle subcommands (see common.h). */
#include "tools/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "tools/cmds.h"

const char *prog_cmd = "fsoracle";

void errmsg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

struct hw_dev *open_dev(const char *spec)
{
	struct hw_dev *dev = NULL;
	char err[256] = "";
	int rc = hw_open(spec, &dev, err, sizeof(err));

	if (rc) {
		errmsg("%s", err[0] ? err : ref_strerror(rc));
		return NULL;
	}
	return dev;
}

void msg_stderr(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "%s: %s\n", prog_cmd, line);
}

int exit_for(int err)
{
	if (err == -EFSCORRUPTED || err == -EMEDIUMTYPE)
		return EXIT_CORRUPT;
	if (err == -EIO)
		return EXIT_IO;
	if (err == -EINVAL || err == -ENODEV)
		return EXIT_USAGE;
	return EXIT_CHECK;
}

int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

int arg_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

double mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void tune_heap(void)
{
#ifdef __GLIBC__
	/*
	 * A soak frees a page cache's worth of pages and buffers at every
	 * eviction, remount and crash, and glibc would hand the heap's top
	 * back to the kernel each time: the next allocations then paid a
	 * page fault per page (a fifth of a soak's time in a profile).  Keep
	 * the heap at its high-water mark; sanitizer allocators ignore this.
	 */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_TOP_PAD, 16 << 20);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
}

int path_writable(const char *path)
{
	struct stat st;
	int existed = !stat(path, &st);
	FILE *f = fopen(path, "a");

	if (!f)
		return 0;
	fclose(f);
	if (!existed)
		remove(path);
	return 1;
}
