/*
 * check_cut.c - the checker's side of power cuts (the `cut` op, op.h;
 * the model, cut.h), apart from check.c's hot paths.
 *
 *   cut 0 S        every target that takes cuts cuts now and recovers;
 *                  then what `crash` does (check.c, check_crash_adopt):
 *                  durable files must read as before, the others take
 *                  what the first crashing target recovered
 *   cut N S        armed on those targets; after every op the checker
 *                  asks them whether the power failed in it, and once
 *                  one says so, every one cuts (those whose point has
 *                  not come yet: a cut now) and recovers, as above
 *
 * The op the power failed in ran to its end on a device that made
 * nothing more durable: when it issued I/O after the failure, what it
 * made durable is not (an fsync's file is dirty again), and the files
 * it names may hold anything it wrote (cutall.c judges its states the
 * same way).  The log keeps the cut op where it was, so a replay arms
 * it at the same place and the same op fails the same way.
 */
#include <errno.h>
#include <string.h>

#include "harness/check_internal.h"

/* Apply op to every target that takes cuts; 0 or a check status. */
static int cut_apply(struct checker *c, const struct op *op, const char *what)
{
	for (int i = 0; i < c->n; i++) {
		struct target *t = c->t[i];
		char eb[32];
		int64_t r;

		if (!(t->caps & TARGET_CRASHES) || !t->ops->power)
			continue;
		r = t->ops->apply(t, op, NULL, NULL);
		if (r)
			return check_fail(c, CHECK_ERRNO, i, 0, NULL, NULL, 0, 0,
					  "%s failed on %s: %s (%s)", what,
					  t->name, check_errstr(r, eb, sizeof(eb)),
					  strerror((int)-r));
	}
	return 0;
}

/* Cut now on every target, recover, adopt. */
static int cut_now(struct checker *c, unsigned seed, int64_t *result)
{
	struct op cut = { .kind = OP_CUT, .arg = OP_CUT_ARG(0, seed) };
	int ret;

	c->cut_armed = 0;
	ret = cut_apply(c, &cut, "the power cut and recovery");
	if (ret)
		return ret;
	return check_crash_adopt(c, result);
}

int check_cut_op(struct checker *c, const struct op *op, int64_t *result,
		 int *cut)
{
	int ret;

	*result = 0;
	*cut = !OP_CUT_POINT(op->arg);
	if (*cut)
		return cut_now(c, OP_CUT_SEED(op->arg), result);
	ret = cut_apply(c, op, "arming the power cut");
	c->cut_armed = !ret;
	c->cut_seed = OP_CUT_SEED(op->arg);
	return ret;
}

int check_cut_after(struct checker *c, const struct op *op, uint32_t before,
		    int64_t *result, int *cut)
{
	const struct op_kind_info *ki = op_kind_info(op->kind);
	int power = TARGET_POWER_ON;

	*cut = 0;
	if (!c->cut_armed)
		return 0;
	for (int i = 0; i < c->n; i++) {
		struct target *t = c->t[i];
		int p;

		if (!(t->caps & TARGET_CRASHES) || !t->ops->power)
			continue;
		p = t->ops->power(t);
		power = p > power ? p : power;
	}
	if (power == TARGET_POWER_ON)
		return 0;
	if (power == TARGET_POWER_LOST)
		c->dirty |= before |
			((ki->uses & OP_USE_FILE) ? 1u << op->file : 0) |
			((ki->uses & OP_USE_FILE2) ? 1u << op->file2 : 0);
	*cut = 1;
	return cut_now(c, c->cut_seed, result);
}
