/*
 * suite_planted.c - properties that must fail: the engine's self-test.
 * An engine that has never failed proves nothing, so each of these hides
 * a bug with a known minimal counterexample, and the engine's tests
 * (tests/test_props.c) and benchmark (bench.c) check that it is found and
 * shrunk to exactly that:
 *
 *   planted_int_below_1000   x < 1000 over [0, 2^32)     -> x = 1000
 *   planted_ops_trunc_tail   model vs planted:trunc_tail -> 3 ops: write,
 *                            truncate down unaligned, grow again
 *   planted_segfault         x >= 1000 crashes (fork)    -> x = 1000
 *   planted_hang             x >= 1000 hangs (fork, 200 ms timeout)
 *                                                        -> x = 1000
 *
 * `fsoracle prop` runs this suite only when asked by name.
 */
#include "props/props.h"

#include <unistd.h>

static const struct props_int_env u32_range = { 0, UINT32_MAX };
static const struct props_type u32_type = PROPS_INT_TYPE(&u32_range);

static int below_1000(struct props_trial *t, void *x)
{
	uint64_t v = *(const uint64_t *)x;

	if (v < 1000)
		return PROPS_PASS;
	props_note(t, "%llu is not below 1000", (unsigned long long)v);
	return PROPS_FAIL;
}

/* An address the compiler cannot see through: a real segfault, not UB
 * it may optimize away. */
static volatile uintptr_t unmapped = 16;

static int crash_from_1000(struct props_trial *t, void *x)
{
	(void)t;
	if (*(const uint64_t *)x >= 1000)
		*(volatile int *)unmapped = 1;
	return PROPS_PASS;
}

static int hang_from_1000(struct props_trial *t, void *x)
{
	(void)t;
	while (*(const uint64_t *)x >= 1000)
		usleep(1000);   /* never returns: the timeout must catch it */
	return PROPS_PASS;
}

/* Data ops the model does; the planted bug is in truncate. */
#define DATA_KINDS (PROPS_KINDS_DATA | PROPS_KIND(OP_FSYNC))

static const struct props_ops_env tt_ops = {
	.max_file = 256 * 1024,
	.nfiles = 2,
	.kinds = DATA_KINDS,
	.targets = "model,planted:trunc_tail",
};
static const struct props_type tt_type = PROPS_OPS_TYPE(&tt_ops);
static struct props_targets tt_targets = { .list = "model,planted:trunc_tail" };

static int trunc_tail_agrees(struct props_trial *t, void *seq)
{
	return props_check_ops(t, &tt_targets, seq, NULL);
}

static const struct props_prop planted[] = {
	{
		.name = "planted_int_below_1000",
		.doc = "x < 1000 for x in [0, 2^32): fails, minimum x = 1000",
		.cfg = { .prop1 = below_1000, .types = { &u32_type } },
	},
	{
		.name = "planted_ops_trunc_tail",
		.doc = "the model agrees with planted:trunc_tail: fails, minimum "
		       "3 ops",
		.cfg = {
			.prop1 = trunc_tail_agrees, .types = { &tt_type },
			.trials = 2000,
			.hooks = PROPS_TARGETS_HOOKS(&tt_targets),
		},
	},
	{
		.name = "planted_segfault",
		.doc = "x >= 1000 segfaults (fork mode): fails, minimum x = 1000",
		.cfg = { .prop1 = crash_from_1000, .types = { &u32_type },
			 .fork = { .enable = 1 } },
	},
	{
		.name = "planted_hang",
		.doc = "x >= 1000 hangs (fork mode, 200 ms timeout): fails, "
		       "minimum x = 1000",
		.cfg = { .prop1 = hang_from_1000, .types = { &u32_type },
			 .fork = { .enable = 1, .timeout_ms = 200 } },
	},
};

const struct props_suite props_suite_planted = {
	.name = "planted",
	.doc = "planted failures with known minimal counterexamples (must fail)",
	PROPS_LIST(planted),
	.planted = 1,
};
