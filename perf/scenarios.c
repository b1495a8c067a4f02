/*
 * scenarios.c - the list of scenarios, one per seed experiment, and what
 * they share: a world of devices and a mounted engine, built the same way
 * for both twins so their inputs are identical.
 *
 * Scenario 004 (zoned compressed delalloc, seed path e) is listed with
 * everything the report needs, but the engine has no delalloc or
 * compression yet: its probe says so and the driver skips it.  It is
 * wired in when the engine gains those calls.
 */
#include "perf/perf_internal.h"

#include <stdarg.h>
#include <stdio.h>
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

/* ---- 004: buffered compressed write on a zoned rt device (path e) ---- */

static int probe_delalloc(char *why, size_t len)
{
	return perf_fail(why, len, -ENOSYS,
			 "path (e) zoned delalloc cap is not implemented in "
			 "the engine yet (no delalloc, compression or zoned "
			 "realtime allocation in ref.h)");
}

static const uint64_t dac_params_quick[] = { 65536, 688128, 1048576 };
static const uint64_t dac_params_full[] = { 688128 };
static const struct perf_counter_spec dac_counters[] = {
	{ "delalloc_calls", "delalloc_calls", 1 },
	{ "async_chunks", "async_chunks", 1 },
	{ "compressed_extents", "compressed_extents", 0 },
};

static const struct perf_scenario s004 = {
	.id = "004", .name = "zoned-compress",
	.title = "buffered compressed write on a zoned rt device, then sync",
	.path = REF_PATH_DELALLOC_CAP, .path_label = "(e) delalloc cap",
	.param_name = "append_max", .param_bytes = 1,
	PERF_PARAMS(dac_params_quick, dac_params_full),
	PERF_COUNTERS(dac_counters),
	.scale_doc = { "a small compressed write, append_max swept",
		       "16 GiB compressed write, append_max 672k" },
	.time_doc = "the sync that runs the delalloc",
	.probe = probe_delalloc,
};

const struct perf_scenario *const perf_scenarios[] = {
	&perf_s000, &perf_s001, &perf_s002, &perf_s003, &s004,
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
