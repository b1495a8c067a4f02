/*
 * rig.c - one set of targets and a checker per filesystem preset, made
 * once and reset between inputs (rig.h).
 */
#include "fuzz/rig.h"

#include <string.h>

#include "fuzz/devtrack.h"
#include "fuzz/fuzz.h"
#include "ref/ref.h"

static struct rig rigs[2 * GEOM_PRESETS];
static unsigned nrigs;

static void rig_open(enum geom_kind kind, unsigned preset, struct rig *r)
{
	struct check_cfg cfg = { .chunk = 64 << 10 };
	struct target_env env;
	char err[256];
	int ret;

	r->kind = kind;
	geom_preset(kind, preset, &r->p);
	geom_env(&r->p, &env);
	ret = target_list_open(r->p.targets, &env, r->t, &r->n, err, sizeof(err));
	if (ret)
		fuzz_die("cannot open targets %s: %s", r->p.targets, err);
	for (int i = 0; i < r->n; i++) {
		struct ref_fs *fs;

		if (!(r->t[i]->caps & TARGET_CRASHES))
			continue; /* the model: nothing on a device */
		fs = engine_target_fs(r->t[i]);
		if (!fs)
			fuzz_die("%s: not mounted after open", r->t[i]->name);
		/* Nothing written yet may survive: zeros, then track.  The
		 * filesystem mounted on it is abandoned by the next reset. */
		ret = hw_zero_out(ref_device(fs), 0, hw_size(ref_device(fs)), 0);
		if (!ret && kind == GEOM_CRASH)
			ret = hw_flush(ref_device(fs));
		if (!ret)
			ret = devtrack_attach(ref_device(fs), NULL, &r->dt[i]);
		if (ret)
			fuzz_die("%s: cannot track its device: %d", r->t[i]->name, ret);
	}
	op_seq_init(&r->meta);
	snprintf(r->meta.hdr.dev, sizeof(r->meta.hdr.dev), "%s", r->p.dev);
	snprintf(r->meta.hdr.mkfs, sizeof(r->meta.hdr.mkfs), "%s", r->p.mkfs);
	snprintf(r->meta.hdr.mount, sizeof(r->meta.hdr.mount), "%s", r->p.mount);
	snprintf(r->meta.hdr.targets, sizeof(r->meta.hdr.targets), "%s",
		 kind == GEOM_CRASH ? "engine,model" : "engine,naive,model");
	cfg.targets = r->meta.hdr.targets;
	ret = check_new(r->t, r->n, &cfg, &r->meta, &r->c);
	if (ret)
		fuzz_die("checker for %s: %d", r->p.targets, ret);
}

/*
 * Run a few cheap ops once, so the checker's op log and result arrays
 * are allocated (1024 entries, more than the 64 ops of a fuzz input)
 * before fuzzing starts: a first allocation would be a code path that
 * depends on earlier inputs.
 */
static void rig_warm(struct rig *r)
{
	struct op close = { .kind = OP_CLOSE };
	int ret = 0;

	for (unsigned i = 0; i < 8 && !ret; i++)
		ret = check_op(r->c, &close);
	if (ret)
		fuzz_die("%s: warm-up failed: %s", r->p.targets,
			 check_status_name(ret));
	rig_put(r);
}

void rig_init_all(enum geom_kind kind)
{
	if (nrigs)
		return;
	for (unsigned i = 0; i < geom_presets(kind); i++) {
		rig_open(kind, i, &rigs[i]);
		rig_warm(&rigs[i]);
	}
	nrigs = geom_presets(kind);
}

struct rig *rig_get(unsigned preset)
{
	if (!nrigs)
		fuzz_die("rig_get before rig_init_all");
	return &rigs[preset % nrigs];
}

struct hw_dev *rig_device_begin(struct rig *r)
{
	devtrack_suspend(r->dt[0]);
	return devtrack_device(r->dt[0]);
}

void rig_device_end(struct rig *r)
{
	devtrack_resume(r->dt[0]);
}

void rig_put(struct rig *r)
{
	int ret;

	for (int i = 0; i < r->n; i++) {
		if (!r->dt[i])
			continue;
		ret = devtrack_restore(r->dt[i]);
		/* A crash layer keeps what is not durable yet: the zeros too,
		 * unless made durable now, so no later cut can undo them. */
		if (!ret && r->kind == GEOM_CRASH)
			ret = hw_flush(devtrack_device(r->dt[i]));
		if (ret)
			fuzz_die("%s: restoring its device failed: %d",
				 r->t[i]->name, ret);
	}
	ret = check_reset(r->c);
	if (ret)
		fuzz_die("%s: reset failed: %d", r->p.targets, ret);
}
