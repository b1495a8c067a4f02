/*
 * test_props_suites.c - every property of every suite holds with a fixed
 * budget (100 trials, a fixed seed, in process), every planted property
 * fails, and the suites are well formed: unique property names, a doc
 * line each, no suite empty.  A property marked known_bug may fail (the
 * bug is written down where it was found); it is reported, and reported
 * again when it starts to pass so the mark can go.
 *
 * `fsoracle prop` runs the same properties with a larger budget and a
 * fresh seed each time.
 */
#include <stdio.h>
#include <string.h>

#include "props/props.h"
#include "tests/test.h"

#define TRIALS 100
#define SEED 42

TEST(props_suites_are_well_formed)
{
	CHECK(props_nsuites > 0);
	for (size_t i = 0; i < props_nsuites; i++) {
		const struct props_suite *s = props_suites[i];

		CHECK_MSG(s->nprops > 0 && s->doc, "suite %s", s->name);
		CHECK(props_suite_find(s->name) == s);
		for (size_t j = 0; j < s->nprops; j++) {
			const struct props_suite *found = NULL;

			CHECK_MSG(s->props[j].doc && s->props[j].doc[0],
				  "%s has no doc line", s->props[j].name);
			/* names are unique across suites */
			CHECK(props_prop_find(s->props[j].name, &found) ==
			      &s->props[j]);
			CHECK(found == s);
		}
	}
}

/* trials 0: the property's own budget (planted ones need their own) */
static int run_quiet(const struct props_prop *p, uint32_t trials,
		     struct props_report *rep)
{
	struct props_override o = { .trials = trials, .have_seed = 1,
				    .seed = SEED, .quiet = 1 };

	return props_prop_run(p, &o, rep);
}

TEST(props_every_suite_property_holds)
{
	for (size_t i = 0; i < props_nsuites; i++) {
		const struct props_suite *s = props_suites[i];

		if (s->planted)
			continue;
		for (size_t j = 0; j < s->nprops; j++) {
			const struct props_prop *p = &s->props[j];
			struct props_report rep;
			int r = run_quiet(p, TRIALS, &rep);

			if (p->known_bug && r == PROPS_FAIL) {
				printf("     %s: known bug: %s\n", p->name,
				       p->known_bug);
			} else if (p->known_bug && r == PROPS_PASS) {
				printf("     %s: passes now; drop its known_bug "
				       "if it is fixed\n", p->name);
			} else {
				CHECK_MSG(r == PROPS_PASS, "%s: %s\n%s", p->name,
					  props_result_name(r),
					  rep.cex ? rep.cex : "");
				CHECK_MSG(rep.pass > TRIALS / 2, "%s: only %u of "
					  "%u trials ran (%u dup, %u skip)",
					  p->name, rep.pass, rep.trials, rep.dup,
					  rep.skip);
			}
			props_report_free(&rep);
		}
	}
}

/* The fork-mode ones (a crash, a hang) are test_props.c's, with tight
 * timeouts; forking is slow under the sanitizers. */
TEST(props_every_planted_property_fails)
{
	const struct props_suite *s = props_suite_find("planted");

	CHECK(s && s->planted);
	for (size_t j = 0; j < s->nprops; j++) {
		struct props_report rep;

		if (s->props[j].cfg.fork.enable)
			continue;
		CHECK_MSG(run_quiet(&s->props[j], 0, &rep) == PROPS_FAIL, "%s",
			  s->props[j].name);
		props_report_free(&rep);
	}
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
