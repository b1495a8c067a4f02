/*
 * plant.c - the run-time choice of a planted bug (plant.h).  Compiled
 * into every build, empty of code without -DFSO_PLANTED.
 */
#include "ref/plant.h"
#include "ref/ref.h"

#ifdef FSO_PLANTED
#include <errno.h>
#include <stdio.h>
#include <string.h>

unsigned ref_planted;

int ref_plant(const char *path, char *err, size_t errlen)
{
	if (!strcmp(path, "none")) {
		ref_planted = 0;
		return 0;
	}
	for (unsigned p = 0; p < REF_PATH_COUNT; p++)
		if (!strcmp(path, ref_path_name(p))) {
			ref_planted = p + 1;
			return 0;
		}
	if (!strcmp(path, "pmem_fence")) {
		ref_planted = REF_PLANT_PMEM_FENCE + 1;
		return 0;
	}
	snprintf(err, errlen, "no planted bug in path '%.40s' (none, "
		 "rt_truncate, pagecache_truncate, cow_end, forget, "
		 "delalloc_cap, pmem_fence)", path);
	return -EINVAL;
}
#endif
