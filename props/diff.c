/*
 * diff.c - the differential property over op sequences: the same ops on
 * several targets (engine, naive engine, model, planted bugs) in lock
 * step through the checker, and any observable difference is a failure.
 *
 * Targets are opened once per run and reset by the checker for every
 * trial (a fresh mkfs on the same RAM device), because opening a device
 * per trial would cost more than most trials.
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

int props_check_ops(struct props_trial *t, struct props_targets *pt,
		    const struct op_seq *seq, const struct check_cfg *cc)
{
	struct check_cfg cfg = { 0 };
	const struct check_failure *f;
	struct checker *c;
	char err[256];
	int st;

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
	if (st == CHECK_OK) {
		check_free(c);
		return PROPS_PASS;
	}
	f = check_failure(c);
	props_note(t, "%s after op %llu%s: %s (good %s, bad %s)",
		   check_status_name(st), (unsigned long long)f->opno,
		   f->at_verify ? " (verify)" : "", f->what, f->good, f->bad);
	check_free(c);
	return st == CHECK_INTERNAL ? PROPS_ERROR : PROPS_FAIL;
}
