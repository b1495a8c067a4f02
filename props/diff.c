/*
 * diff.c - the differential property over op sequences: the same ops on
 * several targets (engine, naive engine, model, planted bugs) in lock
 * step through the checker, and any observable difference is a failure.
 *
 * props_check_ops: targets are opened once per run and reset by the
 * checker for every trial (a fresh mkfs on the same RAM device), because
 * opening a device per trial would cost more than most trials.
 * props_check_log: the targets a trial's own log header names, opened
 * for the trial, exactly as `fsoracle replay` opens them for the printed
 * counterexample (suites whose sequences draw their own geometry: block
 * size, extent cap; small RAM devices keep it cheap).
 */
#include "props/props_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int props_targets_get(struct props_targets *pt, char *err, size_t errlen)
{
	struct target_env env = { .dev = pt->dev, .mkfs = pt->mkfs,
				  .mount = pt->mount, .rtdev = pt->rtdev };
	int r;

	if (pt->open)
		return 0;
	r = target_list_open(pt->list, &env, pt->t, &pt->n, err, errlen);
	if (r)
		return r;
	pt->open = 1;
	return 0;
}

void props_targets_close(struct props_targets *pt)
{
	if (!pt->open)
		return;
	target_list_close(pt->t, pt->n);
	pt->n = 0;
	pt->open = 0;
}

int props_targets_open_hook(const struct props_info *info, void *env)
{
	char err[256];

	(void)info;
	if (props_targets_get(env, err, sizeof(err))) {
		fprintf(stderr, "props: targets %s: %s\n",
			((struct props_targets *)env)->list, err);
		return PROPS_HOOK_ERROR;
	}
	return PROPS_HOOK_CONTINUE;
}

int props_targets_close_hook(const struct props_info *info, void *env)
{
	(void)info;
	props_targets_close(env);
	return PROPS_HOOK_CONTINUE;
}

/* The checker's finding as the trial's note; the property's verdict. */
static int note_failure(struct props_trial *t, struct checker *c, int st)
{
	const struct check_failure *f = check_failure(c);

	props_note(t, "%s after op %llu%s: %s (good %s, bad %s)",
		   check_status_name(st), (unsigned long long)f->opno,
		   f->at_verify ? " (verify)" : "", f->what, f->good, f->bad);
	/* the checker's own trouble or the process short of memory: no
	 * verdict on the property */
	return st == CHECK_INTERNAL || st == CHECK_NOMEM ? PROPS_ERROR :
	       PROPS_FAIL;
}

int props_check_ops(struct props_trial *t, struct props_targets *pt,
		    const struct op_seq *seq, const struct check_cfg *cc)
{
	struct check_cfg cfg = { 0 };
	struct checker *c;
	char err[256];
	int st, res;

	if (props_targets_get(pt, err, sizeof(err))) {
		props_note(t, "targets %s: %s", pt->list, err);
		return PROPS_ERROR;
	}
	if (cc)
		cfg = *cc;
	/* small files: small buffers (the checker allocates them per run) */
	if (!cfg.chunk)
		cfg.chunk = 64 * 1024;
	cfg.quiet = 1;
	cfg.out = NULL;
	cfg.log_path = NULL;
	if (check_new(pt->t, pt->n, &cfg, seq, &c)) {
		props_note(t, "checker: could not reset the targets");
		return PROPS_ERROR;
	}
	st = check_run(c, seq);
	res = st == CHECK_OK ? PROPS_PASS : note_failure(t, c, st);
	check_free(c);
	return res;
}

int props_check_log(struct props_trial *t, const struct op_seq *seq,
		    const struct check_cfg *cc, props_op_hook hook, void *arg)
{
	const struct op_header *h = &seq->hdr;
	struct target_env env = {
		.dev = h->dev[0] ? h->dev : "mem:64m", .rtdev = h->rtdev,
		.mkfs = h->mkfs, .mount = h->mount,
	};
	const char *list = h->targets[0] ? h->targets : "engine,model";
	struct check_cfg cfg = { 0 };
	struct target *tg[TARGET_MAX];
	struct checker *c = NULL;
	char err[256];
	int n = 0, st = 0, res = PROPS_PASS;

	/* a log with cuts gets engines that take them, as in a replay */
	for (size_t i = 0; i < seq->n; i++)
		if (seq->ops[i].kind == OP_CUT)
			env.power_cuts = 1;
	if (target_list_open(list, &env, tg, &n, err, sizeof(err))) {
		props_note(t, "targets %s: %s", list, err);
		return PROPS_ERROR;
	}
	if (cc)
		cfg = *cc;
	cfg.quiet = 1;
	cfg.out = NULL;
	cfg.log_path = NULL;
	if (!cfg.chunk)
		cfg.chunk = 64 * 1024;
	if (check_new(tg, n, &cfg, seq, &c)) {
		props_note(t, "checker: could not start on %s", list);
		target_list_close(tg, n);
		return PROPS_ERROR;
	}
	for (size_t i = 0; i <= seq->n && !st && res == PROPS_PASS; i++) {
		st = i < seq->n ? check_op(c, &seq->ops[i]) : check_finish(c);
		if (!st && hook && !check_stalled(c))
			res = hook(t, tg, n, i < seq->n ? i + 1 : 0, arg);
	}
	if (st)
		res = note_failure(t, c, st);
	check_free(c);
	target_list_close(tg, n);
	return res;
}
