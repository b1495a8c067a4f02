/*
 * cut.c - a cut op's arg as the crash layer's plan and cut (cut.h).
 */
#include "harness/cut.h"

#include <string.h>

#include "harness/op.h"

void cut_model(uint64_t arg, struct hw_crash_plan *plan, struct hw_cut *cut)
{
	unsigned seed = OP_CUT_SEED(arg);

	memset(plan, 0, sizeof(*plan));
	memset(cut, 0, sizeof(*cut));
	plan->fail_at = OP_CUT_POINT(arg);
	plan->fail_before = seed != 0;
	cut->kind = seed ? HW_CUT_RANDOM : HW_CUT_DROP_ALL;
	cut->tear = seed ? HW_TEAR_SEED : HW_TEAR_NONE;
	cut->seed = seed;
	cut->relative = true;
}
