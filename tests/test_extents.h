/*
 * test_extents.h - a file's extent map as the engine tests read it back:
 * collect_extent, the callback of ref_bmap and ref_cow_bmap, keeps the
 * first 64 extents in a struct extlist, and same_extents compares runs of
 * them field by field (offset, start block, length, state).
 */
#ifndef FSORACLE_TEST_EXTENTS_H
#define FSORACLE_TEST_EXTENTS_H

#include "ref/ref.h"

struct extlist { struct ref_extent e[64]; int n; };

static inline int collect_extent(void *arg, const struct ref_extent *e)
{
	struct extlist *l = arg;

	if (l->n < 64)
		l->e[l->n++] = *e;
	return 0;
}

/* True if the first n extents of a and b are the same. */
static inline int same_extents(const struct ref_extent *a,
			       const struct ref_extent *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i].fileoff != b[i].fileoff ||
		    a[i].startblk != b[i].startblk || a[i].len != b[i].len ||
		    a[i].state != b[i].state)
			return 0;
	return 1;
}

#endif
