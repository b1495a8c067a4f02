/*
 * suites.c - the list of property suites, lookup by name, and running one
 * named property with what a command line overrides.
 *
 * A suite is one file, props/suite_<name>.c, defining
 * `const struct props_suite props_suite_<name>`; adding one is that file
 * plus its name in SUITES below (a static library only links what
 * something references, so suites cannot register themselves).
 */
#include "props/props_internal.h"

#include <string.h>

#define SUITES(X)   \
	X(btree)    \
	X(extmap)   \
	X(journal)  \
	X(alloc)    \
	X(crash)    \
	X(forget)   \
	X(rt_truncate) \
	X(pcache)   \
	X(cow)      \
	X(delalloc) \
	X(exchange) \
	X(zoned)    \
	X(zoned_planted) \
	X(planted)

#define DECLARE(n) extern const struct props_suite props_suite_##n;
#define ADDRESS(n) &props_suite_##n,

SUITES(DECLARE)

const struct props_suite *const props_suites[] = { SUITES(ADDRESS) };
const size_t props_nsuites = sizeof(props_suites) / sizeof(props_suites[0]);

const struct props_suite *props_suite_find(const char *name)
{
	for (size_t i = 0; i < props_nsuites; i++)
		if (!strcmp(props_suites[i]->name, name))
			return props_suites[i];
	return NULL;
}

const struct props_prop *props_prop_find(const char *name,
					 const struct props_suite **suite)
{
	for (size_t i = 0; i < props_nsuites; i++) {
		const struct props_suite *s = props_suites[i];

		for (size_t j = 0; j < s->nprops; j++) {
			if (strcmp(s->props[j].name, name))
				continue;
			if (suite)
				*suite = s;
			return &s->props[j];
		}
	}
	return NULL;
}

int props_prop_run(const struct props_prop *p, const struct props_override *o,
		   struct props_report *rep)
{
	struct props_cfg cfg = p->cfg;

	cfg.name = p->name;
	if (o) {
		if (o->trials)
			cfg.trials = o->trials;
		if (o->have_seed)
			cfg.seed = o->seed;
		if (o->fork)
			cfg.fork.enable = 1;
		if (o->db)
			cfg.db = o->db;
		if (o->out)
			cfg.out = o->out;
		if (o->quiet)
			cfg.quiet = 1;
		if (o->terse)
			cfg.terse = 1;
		if (o->progress)
			cfg.progress = 1;
	}
	return props_run(&cfg, rep);
}
