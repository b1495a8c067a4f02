/*
 * plant.c - FSO_PLANT for the planted builds of the fuzz targets
 * (plant.h).  Built only into `make fuzz-planted`.
 */
#include "fuzz/plant.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "harness/target.h"
#include "ref/plant.h"

#ifndef FSO_PLANTED
#error "fuzz/plant.c is for -DFSO_PLANTED builds only (make fuzz-planted)"
#endif

static const char *const zoned_bugs[] = { "append_location", "model_capacity" };

enum plant_kind plant_setup(const char *who, const char **bug)
{
	const char *name = getenv("FSO_PLANT");
	int rigged = strcmp(who, "zoned") != 0; /* diff, crash: rig.h */
	struct target *t;
	char err[256];

	*bug = NULL;
	if (!name || !*name || !strcmp(name, "none"))
		return PLANT_NONE;
	*bug = name;
	for (size_t i = 0; i < sizeof(zoned_bugs) / sizeof(zoned_bugs[0]); i++)
		if (!strcmp(name, zoned_bugs[i])) {
			if (rigged)
				break;
			return PLANT_ZONED;
		}
	if (rigged && ref_plant(name, err, sizeof(err)) == 0)
		return PLANT_ENGINE;
	if (rigged && planted_target_new(name, &t, err, sizeof(err)) == 0) {
		t->ops->destroy(t);
		return PLANT_MODEL;
	}
	fuzz_die("%s: FSO_PLANT=%s is no planted bug of this target (%s)", who,
		 name, rigged ? "rt_truncate, pagecache_truncate, cow_end, "
		 "forget, delalloc_cap, pmem_fence; trunc_tail, punch_short, "
		 "zero_keep_size, collapse_eio, audit_unlink" :
		 "append_location, model_capacity");
}
