/*
 * scenarios.c - the list of scenarios, one per seed experiment, and what
 * they share: a world of devices and a mounted engine, built the same way
 * for both twins so their inputs are identical, the files in it, and the
 * probe that asks the engine whether it has a path at all.
 */
#include "perf/perf_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int perf_fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int perf_world_open(struct perf_world *w, const char *dev, const char *rtdev,
		    const char *mkfs, const char *mount, uint32_t naive,
		    char *err, size_t len)
{
	struct ref_mkfs_opts mo = { 0 };
	struct ref_mount_opts mnt = { 0 };
	char why[256] = "";
	int rc;

	memset(w, 0, sizeof(*w));
	rc = hw_open(dev, &w->dev, why, sizeof(why));
	if (rc)
		return perf_fail(err, len, rc, "%s: %s", dev, why);
	if (rtdev) {
		rc = hw_open(rtdev, &w->rtdev, why, sizeof(why));
		if (rc) {
			rc = perf_fail(err, len, rc, "%s: %s", rtdev, why);
			goto fail;
		}
	}
	rc = ref_parse_mkfs_opts(mkfs, &mo, why, sizeof(why));
	if (rc) {
		rc = perf_fail(err, len, rc, "%s", why);
		goto fail;
	}
	mo.rtdev = w->rtdev;
	rc = ref_mkfs(w->dev, &mo);
	if (rc) {
		rc = perf_fail(err, len, rc, "mkfs %s: %s", mkfs ? mkfs : "",
			       ref_strerror(rc));
		goto fail;
	}
	rc = ref_parse_mount_opts(mount, &mnt, why, sizeof(why));
	if (rc) {
		rc = perf_fail(err, len, rc, "%s", why);
		goto fail;
	}
	mnt.naive = naive;
	mnt.rtdev = w->rtdev;
	rc = ref_mount(w->dev, &mnt, &w->fs);
	if (rc) {
		rc = perf_fail(err, len, rc, "mount %s: %s", mount ? mount : "",
			       ref_strerror(rc));
		goto fail;
	}
	return 0;
fail:
	perf_world_close(w);
	return rc;
}

const char *perf_store(const struct perf_job *j)
{
	return j->where == PERF_TIME ? "mem" : "null";
}

int perf_world_open_job(struct perf_world *w, const struct perf_job *j,
			uint64_t dev_bytes, uint64_t rt_bytes,
			const char *mkfs, const char *mount, char *err,
			size_t len)
{
	char dev[48], rtdev[48];

	snprintf(dev, sizeof(dev), "%s:%llu", perf_store(j),
		 (unsigned long long)dev_bytes);
	snprintf(rtdev, sizeof(rtdev), "%s:%llu", perf_store(j),
		 (unsigned long long)rt_bytes);
	return perf_world_open(w, dev, rt_bytes ? rtdev : NULL, mkfs, mount,
			       j->naive, err, len);
}

int perf_probe_engine(char *why, size_t len, const char *mkfs,
		      const char *mount, const char *counters,
		      const char *unavailable)
{
	struct ref_mkfs_opts mo = { 0 };
	struct ref_mount_opts o = { 0 };

	if ((mkfs && ref_parse_mkfs_opts(mkfs, &mo, NULL, 0)) ||
	    (mount && ref_parse_mount_opts(mount, &o, NULL, 0)) ||
	    !perf_counter_known(counters))
		return perf_fail(why, len, -ENOSYS, "%s", unavailable);
	return 0;
}

int perf_add_file(struct perf_world *w, const char *name, uint32_t flags)
{
	uint64_t *ino = &w->ino[w->nfiles];
	int rc;

	if (w->nfiles >= PERF_MAX_FILES)
		return -ENOSPC;
	rc = ref_create(w->fs, name, ino);
	if (rc)
		return rc;
	w->nfiles++;
	return flags ? ref_set_flags(w->fs, *ino, flags, 0) : 0;
}

int perf_fill(struct perf_world *w, uint64_t ino, uint64_t size,
	      uint64_t chunk, uint8_t fill)
{
	uint8_t *buf = malloc(chunk);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	memset(buf, fill, chunk);
	for (uint64_t off = 0; off < size && !rc; off += chunk) {
		uint64_t n = size - off < chunk ? size - off : chunk;

		rc = perf_io_ok(ref_pwrite(w->fs, ino, buf, n, off), n);
	}
	free(buf);
	return rc;
}

int perf_truncate_all(struct perf_world *w, uint64_t size)
{
	int rc = 0;

	for (unsigned f = 0; f < w->nfiles && !rc; f++)
		rc = ref_truncate(w->fs, w->ino[f], size);
	return rc ? rc : ref_sync(w->fs);
}

int perf_io_ok(int64_t got, uint64_t want)
{
	return got == (int64_t)want ? 0 : got < 0 ? (int)got : -EIO;
}

int perf_setup_end(struct perf_world *w, int rc, const char *doing,
		   char *err, size_t len)
{
	if (!rc)
		rc = ref_sync(w->fs);
	if (rc)
		return perf_fail(err, len, rc, "%s: %s", doing,
				 ref_strerror(rc));
	return 0;
}

void perf_check_add(struct perf_check *c, unsigned *n, unsigned max,
		    unsigned counter, int twin, uint64_t expect,
		    unsigned tolerance_pct, const char *fmt, ...)
{
	struct perf_check *k;
	va_list ap;

	if (*n >= max)
		return;
	k = &c[(*n)++];
	memset(k, 0, sizeof(*k));
	k->counter = counter;
	k->twin = twin;
	k->expect = expect;
	k->tolerance_pct = tolerance_pct;
	va_start(ap, fmt);
	vsnprintf(k->what, sizeof(k->what), fmt, ap);
	va_end(ap);
}

void perf_world_close(struct perf_world *w)
{
	if (w->fs)
		ref_abandon(w->fs);  /* the world is thrown away: write nothing */
	if (w->dev)
		hw_close(w->dev);
	if (w->rtdev)
		hw_close(w->rtdev);
	memset(w, 0, sizeof(*w));
}

const struct perf_scenario *const perf_scenarios[] = {
	&perf_s000, &perf_s001, &perf_s002, &perf_s003, &perf_s004,
};
const unsigned perf_nscenarios =
	sizeof(perf_scenarios) / sizeof(perf_scenarios[0]);

const struct perf_scenario *perf_scenario_find(const char *s)
{
	for (unsigned i = 0; i < perf_nscenarios; i++)
		if (!strcmp(s, perf_scenarios[i]->id) ||
		    !strcmp(s, perf_scenarios[i]->name))
			return perf_scenarios[i];
	return NULL;
}
