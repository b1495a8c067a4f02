/*
 * seeddb.c - failing trial seeds kept between runs, replayed first next
 * time (Hypothesis' example database, for seeds).
 *
 * One small text file per property, DIR/NAME.seeds, one seed a line:
 *
 *   # fsoracle prop: trial seeds that failed; replayed first
 *   0x5dcbf0e1a7c2b914
 *
 * It is a cache, not a record: a seed that passes again is dropped, a
 * line that does not parse is ignored, a file that cannot be read is no
 * seeds.  Writes go to a temporary file renamed over the old one, so an
 * interrupted run leaves the old list or the new one, never half.
 * Regressions meant to stay go in the property's always_seeds instead.
 */
#include "props/props_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SEEDS 64      /* more than this is a database, not a cache */

static int db_path(const char *dir, const char *name, const char *suffix,
		   char *out, size_t len)
{
	char clean[128];
	size_t i;
	int n;

	/* a property name is an identifier; anything else becomes '_' */
	for (i = 0; name[i] && i < sizeof(clean) - 1; i++) {
		char ch = name[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			 (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
			 ch == '.';

		clean[i] = ok && !(i == 0 && ch == '.') ? ch : '_';
	}
	clean[i] = 0;
	n = snprintf(out, len, "%s/%s.seeds%s", dir, clean, suffix);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int seeddb_load(const char *dir, const char *name, uint64_t **seeds,
		size_t *n)
{
	char path[4096], line[256];
	uint64_t *out;
	FILE *f;
	int r;

	*seeds = NULL;
	*n = 0;
	r = db_path(dir, name, "", path, sizeof(path));
	if (r)
		return r;
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	out = malloc(MAX_SEEDS * sizeof(*out));
	if (!out) {
		fclose(f);
		return -ENOMEM;
	}
	while (*n < MAX_SEEDS && fgets(line, sizeof(line), f)) {
		char *end;
		uint64_t v;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		errno = 0;
		v = strtoull(line, &end, 0);
		if (errno || end == line || (*end && *end != '\n'))
			continue;
		out[(*n)++] = v;
	}
	fclose(f);
	*seeds = out;
	return 0;
}

static int mkdir_p(const char *dir)
{
	char buf[4096];
	size_t len = strlen(dir);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, dir, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != 0)
			continue;
		buf[i] = 0;
		if (mkdir(buf, 0777) && errno != EEXIST)
			return -errno;
		buf[i] = dir[i];
	}
	return 0;
}

int seeddb_store(const char *dir, const char *name, const uint64_t *seeds,
		 size_t n)
{
	char path[4096], tmp[4096];
	FILE *f;
	int r;

	r = db_path(dir, name, "", path, sizeof(path));
	if (!r)
		r = db_path(dir, name, ".tmp", tmp, sizeof(tmp));
	if (r)
		return r;
	if (n == 0)
		return unlink(path) && errno != ENOENT ? -errno : 0;
	r = mkdir_p(dir);
	if (r)
		return r;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "# fsoracle prop: trial seeds that failed; replayed first\n");
	for (size_t i = 0; i < n && i < MAX_SEEDS; i++)
		fprintf(f, "0x%016" PRIx64 "\n", seeds[i]);
	if (fclose(f)) {
		unlink(tmp);
		return -EIO;
	}
	if (rename(tmp, path)) {
		r = -errno;
		unlink(tmp);
		return r;
	}
	return 0;
}
