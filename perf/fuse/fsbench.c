/*
 * fsbench.c - two of the seeds' benchmarks as a plain program that runs
 * on any mounted filesystem (ci/bench-fuse runs it on `fsoracle mount`):
 *
 *   fsbench trunc [-d] DIR NFILES SIZE
 *       the 001 seed's trunc-bench shape: NFILES files of SIZE bytes
 *       made by ftruncate, each read whole in 1 MiB reads (filling the
 *       page cache, evicting, leaving shadows), then ftruncate to 0 of
 *       every file, timed.  -d reads with O_DIRECT: on a FUSE mount the
 *       kernel then keeps no second copy of what the server caches, and
 *       the timed truncate is the server's work alone;
 *   fsbench unlink DIR SIZE
 *       the 003 seed's shape: fallocate one file of SIZE bytes, fsync,
 *       sync, then unlink it, timed.
 *
 * Sizes take k/m/g suffixes.  When DIR is an fsoracle mount (it has
 * .fsoracle/reset), the engine's counters are reset just before the
 * timed phase and printed after it, so the figures are the phase's.
 * Output: key=value lines; exit 1 on any failed call, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int die(const char *what, const char *path)
{
	fprintf(stderr, "fsbench: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

static int parse_size(const char *s, unsigned long long *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'g': case 'G': v <<= 10; /* fall through */
	case 'm': case 'M': v <<= 10; /* fall through */
	case 'k': case 'K': v <<= 10; end++; break;
	default: break;
	}
	if (*end || end == s || *s == '-')
		return -1;
	*out = v;
	return 0;
}

/* Reset (reset=1) or print the engine's counters when DIR is a mount. */
static void counters(const char *dir, int reset)
{
	char path[4096], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/.fsoracle/%s", dir,
		 reset ? "reset" : "counters");
	f = fopen(path, reset ? "w" : "r");
	if (!f)
		return;
	if (reset)
		fputs("1\n", f);
	else
		while (fgets(line, sizeof(line), f))
			printf("counter.%s", line);
	fclose(f);
}

static int trunc_bench(const char *dir, unsigned long long n,
		       unsigned long long size, int direct)
{
	char path[4096];
	void *buf = NULL;
	double t0, t1;
	int *fds = calloc(n, sizeof(int));

	if (!fds || posix_memalign(&buf, 4096, CHUNK))
		return 1;
	t0 = now();
	for (unsigned long long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/trunc-bench.%llu", dir, i);
		fds[i] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fds[i] < 0 || ftruncate(fds[i], (off_t)size))
			return die("create", path);
		if (direct) {
			close(fds[i]);
			fds[i] = open(path, O_RDWR | O_DIRECT);
			if (fds[i] < 0)
				return die("open O_DIRECT", path);
		}
	}
	for (unsigned long long i = 0; i < n; i++)
		for (unsigned long long off = 0; off < size; off += CHUNK)
			if (pread(fds[i], buf, CHUNK, (off_t)off) < 0)
				return die("read", dir);
	t1 = now();
	printf("setup_seconds=%.6f\n", t1 - t0);
	counters(dir, 1);
	t0 = now();
	for (unsigned long long i = 0; i < n; i++)
		if (ftruncate(fds[i], 0))
			return die("truncate", dir);
	t1 = now();
	printf("truncate_seconds=%.6f\n", t1 - t0);
	counters(dir, 0);
	for (unsigned long long i = 0; i < n; i++) {
		close(fds[i]);
		snprintf(path, sizeof(path), "%s/trunc-bench.%llu", dir, i);
		unlink(path);
	}
	free(fds);
	free(buf);
	return 0;
}

static int unlink_bench(const char *dir, unsigned long long size)
{
	char path[4096];
	double t0, t1;
	int fd;

	snprintf(path, sizeof(path), "%s/unlink-bench", dir);
	t0 = now();
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || fallocate(fd, 0, 0, (off_t)size) || fsync(fd))
		return die("fallocate", path);
	close(fd);
	sync();
	t1 = now();
	printf("setup_seconds=%.6f\n", t1 - t0);
	counters(dir, 1);
	t0 = now();
	if (unlink(path))
		return die("unlink", path);
	t1 = now();
	printf("unlink_seconds=%.6f\n", t1 - t0);
	counters(dir, 0);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long n, size;
	int d = argc > 2 && !strcmp(argv[2], "-d");

	if (argc == 5 + d && !strcmp(argv[1], "trunc") &&
	    !parse_size(argv[3 + d], &n) && n > 0 &&
	    !parse_size(argv[4 + d], &size))
		return trunc_bench(argv[2 + d], n, size, d);
	if (argc == 4 && !strcmp(argv[1], "unlink") &&
	    !parse_size(argv[3], &size) && size > 0)
		return unlink_bench(argv[2], size);
	fprintf(stderr, "usage: fsbench trunc [-d] DIR NFILES SIZE\n"
			"       fsbench unlink DIR SIZE\n");
	return 2;
}
