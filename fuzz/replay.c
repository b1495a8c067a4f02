/*
 * replay.c - the plain main() every fuzz target links when no fuzzer
 * drives it: run inputs from files and directories, for CI (replay the
 * seed corpus and the crashers), for people without a fuzzer, and for
 * triage.
 *
 *   replay/diff [-v] [--describe] [--bench N] [--slowest K] FILE|DIR...
 *
 * Each file is one input; a directory means every regular file in it
 * (sorted by name, not recursive).  A finding aborts the program, as
 * under a fuzzer; the input's name is printed first, so CI logs say which
 * one.  --describe prints what each input means instead of running it
 * (fuzz_describe); --bench N runs the inputs N times and prints exec/s;
 * --slowest K times each input and prints the K that took longest, with
 * their share of the whole (where a corpus spends its time).
 *
 * Exit status: 0 every input ran clean; 2 bad usage or an unreadable
 * file; a finding is SIGABRT (134 from a shell).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fuzz/fuzz.h"

static const char usage[] =
"usage: %s [-v] [--describe] [--bench N] [--slowest K] FILE|DIR...\n"
"\n"
"Run fuzz inputs (files, or every file of a directory) through this\n"
"target without a fuzzer.  A finding aborts with the target's report on\n"
"stderr.\n"
"\n"
"  -v           print each input's name before running it\n"
"  --describe   print what each input means (a text op log header and\n"
"               the `fsoracle decode` options for its op bytes)\n"
"  --bench N    run all inputs N times and print executions per second\n"
"  --slowest K  time each input (over the --bench rounds, if given) and\n"
"               print the K slowest with their share of the total time\n";

struct input {
	char *path;
	uint8_t *data;
	size_t len;
	double secs; /* time spent in the target, with --slowest */
};

static struct input *inputs;
static size_t ninputs, capinputs;
static const char *current; /* for the abort message */

static void on_abort(int sig)
{
	static const char pre[] = "fuzz replay: finding in ";
	ssize_t r = 0;

	if (current) {
		r += write(2, pre, sizeof(pre) - 1);
		r += write(2, current, strlen(current));
		r += write(2, "\n", 1);
	}
	(void)r;
	signal(sig, SIG_DFL);
	raise(sig);
}

static int read_file(const char *path, struct input *in)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);

	if (!f || !buf)
		goto out_error;
	for (;;) {
		size_t r;

		if (len == cap) {
			uint8_t *nb = realloc(buf, cap * 2);

			if (!nb)
				goto out_error;
			buf = nb;
			cap *= 2;
		}
		r = fread(buf + len, 1, cap - len, f);
		len += r;
		if (r == 0)
			break;
	}
	if (ferror(f))
		goto out_error;
	fclose(f);
	in->path = strdup(path);
	in->data = buf;
	in->len = len;
	in->secs = 0;
	return in->path ? 0 : -ENOMEM;
out_error:
	if (f)
		fclose(f);
	free(buf);
	return -EIO;
}

static int add_file(const char *path)
{
	if (ninputs == capinputs) {
		size_t cap = capinputs ? capinputs * 2 : 64;
		struct input *ni = realloc(inputs, cap * sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		inputs = ni;
		capinputs = cap;
	}
	if (read_file(path, &inputs[ninputs])) {
		fprintf(stderr, "fuzz replay: cannot read %s\n", path);
		return -EIO;
	}
	ninputs++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	if (!d) {
		fprintf(stderr, "fuzz replay: cannot open %s\n", dir);
		return -EIO;
	}
	while ((de = readdir(d))) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_name[0] == '.' || stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 64) *
					    sizeof(*nn));

			if (!nn) {
				ret = -ENOMEM;
				break;
			}
			names = nn;
		}
		names[n] = strdup(path);
		if (!names[n]) {
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (!ret && n)
		qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		if (!ret)
			ret = add_file(names[i]);
		free(names[i]);
	}
	free(names);
	return ret;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int by_time(const void *a, const void *b)
{
	double x = ((const struct input *)a)->secs;
	double y = ((const struct input *)b)->secs;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The K inputs that took longest, and how much of the time they took. */
static void print_slowest(long k, long rounds)
{
	double total = 0, top = 0;

	for (size_t i = 0; i < ninputs; i++)
		total += inputs[i].secs;
	qsort(inputs, ninputs, sizeof(*inputs), by_time);
	if ((size_t)k > ninputs)
		k = (long)ninputs;
	printf("%ld slowest of %zu inputs (ms per run, share of %.3f s):\n",
	       k, ninputs, total);
	for (long i = 0; i < k; i++) {
		top += inputs[i].secs;
		printf("%10.3f ms %5.1f%%  %s\n",
		       inputs[i].secs * 1e3 / (double)rounds,
		       total > 0 ? 100 * inputs[i].secs / total : 0.0,
		       inputs[i].path);
	}
	printf("together %.1f%% of the time\n", total > 0 ? 100 * top / total : 0.0);
}

int main(int argc, char **argv)
{
	int verbose = 0, describe = 0;
	long bench = 0, slowest = 0;
	double t0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		struct stat st;

		if (!strcmp(a, "-v")) {
			verbose = 1;
		} else if (!strcmp(a, "--describe")) {
			describe = 1;
		} else if (!strcmp(a, "--bench") && i + 1 < argc) {
			char *end;

			bench = strtol(argv[++i], &end, 10);
			if (*end || bench < 1)
				goto bad_usage;
		} else if (!strcmp(a, "--slowest") && i + 1 < argc) {
			char *end;

			slowest = strtol(argv[++i], &end, 10);
			if (*end || slowest < 1)
				goto bad_usage;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf(usage, argv[0]);
			return 0;
		} else if (a[0] == '-' && a[1]) {
			goto bad_usage;
		} else if (stat(a, &st)) {
			fprintf(stderr, "fuzz replay: cannot read %s\n", a);
			return 2;
		} else if ((S_ISDIR(st.st_mode) ? add_dir(a) : add_file(a))) {
			return 2;
		}
	}
	if (!ninputs && !describe && !bench) {
		fprintf(stderr, "fuzz replay: no inputs\n");
		goto bad_usage;
	}
	if (describe) {
		for (size_t i = 0; i < ninputs; i++) {
			if (ninputs > 1)
				printf("==> %s <==\n", inputs[i].path);
			fuzz_describe(inputs[i].data, inputs[i].len, stdout);
		}
		return 0;
	}
	signal(SIGABRT, on_abort);
	LLVMFuzzerInitialize(&argc, &argv);
	t0 = now();
	for (long round = 0; round < (bench ? bench : 1); round++) {
		for (size_t i = 0; i < ninputs; i++) {
			double t = slowest ? now() : 0;

			current = inputs[i].path;
			if (verbose && !bench)
				fprintf(stderr, "fuzz replay: %s\n", current);
			LLVMFuzzerTestOneInput(inputs[i].data, inputs[i].len);
			if (slowest)
				inputs[i].secs += now() - t;
		}
	}
	current = NULL;
	if (bench) {
		double dt = now() - t0;

		printf("%zu inputs x %ld: %.0f exec/s\n", ninputs, bench,
		       dt > 0 ? (double)ninputs * (double)bench / dt : 0.0);
	} else {
		fprintf(stderr, "fuzz replay: %zu input(s) ran clean\n", ninputs);
	}
	if (slowest)
		print_slowest(slowest, bench ? bench : 1);
	for (size_t i = 0; i < ninputs; i++) {
		free(inputs[i].path);
		free(inputs[i].data);
	}
	free(inputs);
	return 0;
bad_usage:
	fprintf(stderr, usage, argv[0]);
	return 2;
}
