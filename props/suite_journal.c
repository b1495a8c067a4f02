/*
 * suite_journal.c - journal recovery: what a remount or a crash (the
 * engine target's crash op: abandon the mount, mount again, replay the
 * log) must keep, on the engine against the model through the checker.
 *
 * The checker knows durability: after a crash, files made durable
 * (fsync, fdatasync, sync, remount) and untouched since must read back
 * exactly; the others may hold any state recovery produced.
 *
 * Properties:
 *   journal_remount_keeps_every_byte   remounts in the mix; after each
 *                                      every file equals the model's
 *   journal_crash_keeps_fsynced_data   crashes in the mix; fsynced data
 *                                      survives each, audit clean after
 *   journal_recovery_audit_clean       after the ops, one more crash:
 *                                      recovery leaves a clean image
 *   journal_recovery_is_idempotent     after the ops, crash, then crash
 *                                      again at once: the second recovery
 *                                      changes nothing a reader sees
 */
#include "props/props.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"

#define DATA_KINDS (PROPS_KINDS_DATA | PROPS_KIND(OP_UNLINK))
#define NFILES 3
#define MKFS "bs=4k,maxrecs=4,inodes=64,journal=64"
#define DEV "mem:8m"

static struct props_targets pt = {
	.list = "engine,model", .dev = DEV, .mkfs = MKFS,
};

#define OPS_ENV(extra) {                                                   \
	.max_file = 256 * 1024, .nfiles = NFILES,                          \
	.kinds = DATA_KINDS | PROPS_KINDS_DURABLE | (extra),               \
	.max_ops = 48, .avg_ops = 16,                                      \
	.dev = DEV, .mkfs = MKFS, .targets = "engine,model" }

static const struct props_ops_env remount_env = OPS_ENV(PROPS_KIND(OP_REMOUNT));
static const struct props_ops_env crash_env = OPS_ENV(PROPS_KIND(OP_CRASH));
static const struct props_type remount_ops = PROPS_OPS_TYPE(&remount_env);
static const struct props_type crash_ops = PROPS_OPS_TYPE(&crash_env);

static int checked(struct props_trial *t, void *seq)
{
	return props_check_ops(t, &pt, seq, NULL);
}

/* The engine's audit, one line of why in the note. */
static void audit_msg(void *arg, const char *line)
{
	struct props_trial *t = arg;

	props_note(t, "audit: %s", line);
}

static int crash_engine(struct props_trial *t, struct target *e)
{
	const struct op crash = { .kind = OP_CRASH };
	uint8_t scratch[4096];
	int64_t r = target_apply(e, &crash, 1, scratch, sizeof(scratch));

	if (r < 0 || !engine_target_fs(e)) {
		props_note(t, "recovery after the extra crash failed: %lld",
			   (long long)r);
		return PROPS_FAIL;
	}
	return PROPS_PASS;
}

static int recovery_audit_clean(struct props_trial *t, void *seq)
{
	int res = props_check_ops(t, &pt, seq, NULL);

	if (res != PROPS_PASS)
		return res;
	res = crash_engine(t, pt.t[0]);
	if (res == PROPS_PASS && ref_audit(engine_target_fs(pt.t[0]),
					   audit_msg, t)) {
		props_note(t, "(after the ops and one more crash)");
		res = PROPS_FAIL;
	}
	return res;
}

/* Every file's existence, size and bytes. */
struct snapshot {
	int64_t size[NFILES];
	uint8_t *data[NFILES];
};

static void snap_free(struct snapshot *s)
{
	for (unsigned f = 0; f < NFILES; f++)
		free(s->data[f]);
}

static int snap_take(struct target *e, struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned f = 0; f < NFILES; f++) {
		s->size[f] = e->ops->size(e, f);
		if (s->size[f] <= 0)
			continue;
		s->data[f] = malloc((size_t)s->size[f]);
		if (!s->data[f] || e->ops->read(e, f, 0, s->data[f],
						(size_t)s->size[f]) != s->size[f])
			return -EIO;
	}
	return 0;
}

static int recovery_idempotent(struct props_trial *t, void *seq)
{
	struct snapshot a = { 0 }, b = { 0 };
	int res = props_check_ops(t, &pt, seq, NULL);

	if (res != PROPS_PASS)
		return res;
	res = crash_engine(t, pt.t[0]);
	if (res != PROPS_PASS)
		return res;
	if (snap_take(pt.t[0], &a))
		res = PROPS_ERROR;
	if (res == PROPS_PASS)
		res = crash_engine(t, pt.t[0]);
	if (res == PROPS_PASS && snap_take(pt.t[0], &b))
		res = PROPS_ERROR;
	for (unsigned f = 0; f < NFILES && res == PROPS_PASS; f++) {
		if (a.size[f] != b.size[f] ||
		    (a.size[f] > 0 &&
		     memcmp(a.data[f], b.data[f], (size_t)a.size[f]))) {
			props_note(t, "after the ops: crash, then crash again: "
				   "%s changed (size %lld -> %lld)",
				   op_file_name(NULL, f), (long long)a.size[f],
				   (long long)b.size[f]);
			res = PROPS_FAIL;
		}
	}
	snap_free(&a);
	snap_free(&b);
	return res;
}

#define J_CFG(fn, type) PROPS_TARGETS_CFG(fn, &(type), &pt)

static const struct props_prop props[] = {
	{
		.name = "journal_remount_keeps_every_byte",
		.doc = "remounts in the mix; after each every file equals the "
		       "model's",
		.cfg = J_CFG(checked, remount_ops),
	},
	{
		.name = "journal_crash_keeps_fsynced_data",
		.doc = "crashes in the mix; fsynced data reads back after each, "
		       "and the audit passes",
		.cfg = J_CFG(checked, crash_ops),
	},
	{
		.name = "journal_recovery_audit_clean",
		.doc = "after the ops one more crash: recovery leaves a clean "
		       "image",
		.cfg = J_CFG(recovery_audit_clean, crash_ops),
	},
	{
		.name = "journal_recovery_is_idempotent",
		.doc = "after the ops, crash twice: the second recovery changes "
		       "nothing",
		.cfg = J_CFG(recovery_idempotent, crash_ops),
	},
};

const struct props_suite props_suite_journal = {
	.name = "journal",
	.doc = "remount and crash recovery of the engine against the model",
	PROPS_LIST(props),
};
