/*
 * rig.c - one set of targets and a checker per filesystem preset, made
 * once and reset between inputs (rig.h).
 */
#include "fuzz/rig.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "fuzz/devtrack.h"
#include "fuzz/fuzz.h"
#include "ref/ref.h"
#ifdef FSO_PLANTED
#include "fuzz/plant.h"
#endif

/* Pending writes the crash layer has room for from the start. */
#define RIG_CRASH_RECORDS 4096u
/*
 * Device pages the rigs may keep in memory between inputs (devtrack.h).
 * Past it, the rigs used longest ago give theirs back and make their
 * filesystems again: a process fuzzing every preset stays within its
 * budget, and the presets in use take no page faults.
 */
#define RIG_RESIDENT_BYTES (96ull << 20)

static struct rig rigs[2 * GEOM_PRESETS];
static unsigned nrigs;
static struct op_seq input_seq; /* the current input's ops, cleared each time */
static uint64_t inputs;         /* inputs run, for the rigs' last_used */
#ifdef FSO_PLANTED
static const char *planted_model; /* FSO_PLANT's model bug, or NULL */

/*
 * A planted build with a model bug runs planted:BUG beside the model,
 * before it (the model stays last: the checker compares with it).
 */
static void plant_targets(char *list, size_t len)
{
	size_t n = strlen(list), m = strlen(",model");
	char tail[16];

	if (!planted_model || n < m || strcmp(list + n - m, ",model"))
		return;
	snprintf(tail, sizeof(tail), "%s", list + n - m);
	snprintf(list + n - m, len - (n - m), ",planted:%s%s", planted_model,
		 tail);
	if (strlen(list) + 1 >= len)
		fuzz_die("planted target list too long: %s", list);
}
#endif

/*
 * The crash layer keeps its array of pending writes at the largest size
 * it has needed; grow it now to more than an input makes between two
 * flushes, so growing it is not a code path that depends on earlier
 * inputs.  (Zeros over the first page, which the next reset zeroes
 * again anyway.)
 */
static int crash_layer_warm(struct hw_dev *dev)
{
	static const uint8_t zero[1];
	int ret = 0;

	/* One-byte writes: the layer copies what each one replaced. */
	for (unsigned i = 0; i < RIG_CRASH_RECORDS && !ret; i++)
		ret = hw_write(dev, i % 4096, zero, sizeof(zero), 0);
	return ret ? ret : hw_flush(dev);
}

/*
 * Track target i's devices (dev, with its crash layer for GEOM_CRASH; rt
 * or NULL) from all zeros.  Nothing written yet may survive: only mkfs
 * and mount have written, and only the metadata at the start of the
 * device (rig_format checks); a crash layer would copy all it replaced,
 * so zeroing the whole device is not cheap.  The filesystem mounted on
 * it is abandoned by the next format, writing nothing.  0 or -errno.
 */
static int rig_track(struct rig *r, int i, struct hw_dev *dev,
		     struct hw_dev *rt)
{
	bool crash = r->kind == GEOM_CRASH;
	int ret = hw_zero_out(dev, 0, r->p.meta_bytes, 0);

	if (!ret && crash)
		ret = hw_flush(dev);
	/* crash: track below the layer, whose hw_crash_* calls (the engine
	 * target's at cut and crash ops) must find it */
	r->cut[i] = crash ? dev : NULL;
	if (!ret)
		ret = devtrack_attach(crash ? hw_layer_lower(dev) : dev, NULL,
				      &r->dt[i]);
	if (!ret && crash)
		ret = crash_layer_warm(dev);
	/* mkfs writes nothing to a realtime device: it is all zeros. */
	if (!ret && rt)
		ret = devtrack_attach(rt, NULL, &r->rtdt[i]);
	return ret;
}

/*
 * Make target i's filesystem once, tracked, and keep the pages mkfs wrote
 * as they are (devtrack_keep): every restore puts them back, and every
 * reset then only mounts the filesystem (engine_target_formatted),
 * instead of making the same one again for every input.  Dies on error.
 */
static void rig_format(struct rig *r, int i)
{
	const char *name = r->t[i]->name;
	int ret = engine_target_format(r->t[i]);

	/* the crash layer forgets mkfs's writes: durable, as after a reset */
	if (!ret && r->cut[i])
		ret = hw_flush(r->cut[i]);
	if (ret)
		fuzz_die("%s: mkfs failed: %d", name, ret);
	if (devtrack_dirty_end(r->dt[i]) > r->p.meta_bytes)
		fuzz_die("%s: mkfs wrote past byte %llu, where fuzz/geom.c says "
			 "metadata ends; update it", name,
			 (unsigned long long)r->p.meta_bytes);
	if (r->rtdt[i] && devtrack_dirty_end(r->rtdt[i]))
		fuzz_die("%s: mkfs wrote on the realtime device, which the rig "
			 "keeps as zeros; give it a baseline", name);
	ret = devtrack_keep(r->dt[i]);
	if (ret)
		fuzz_die("%s: cannot keep its image: %d", name, ret);
	engine_target_formatted(r->t[i]);
}

static void rig_open(enum geom_kind kind, unsigned preset, struct rig *r)
{
	struct check_cfg cfg = { .chunk = 64 << 10 };
	struct target_env env;
	char err[256];
	int ret;

	r->kind = kind;
	geom_preset(kind, preset, &r->p);
#ifdef FSO_PLANTED
	plant_targets(r->p.targets, sizeof(r->p.targets));
#endif
	geom_env(&r->p, &env);
	ret = target_list_open(r->p.targets, &env, r->t, &r->n, err, sizeof(err));
	if (ret)
		fuzz_die("cannot open targets %s: %s", r->p.targets, err);
	{
		/* a pmem file (geom.h) lives as long as its mapping */
		size_t off, len;
		char path[192];

		if (hw_spec_path(r->p.dev, &off, &len)) {
			snprintf(path, sizeof(path), "%.*s", (int)len,
				 r->p.dev + off);
			unlink(path);
		}
	}
	for (int i = 0; i < r->n; i++) {
		struct ref_fs *fs;

		if (!(r->t[i]->caps & TARGET_CRASHES))
			continue; /* the model: nothing on a device */
		fs = engine_target_fs(r->t[i]);
		if (!fs)
			fuzz_die("%s: not mounted after open", r->t[i]->name);
		ret = rig_track(r, i, ref_device(fs), ref_rtdevice(fs));
		if (ret)
			fuzz_die("%s: cannot track its device: %d", r->t[i]->name, ret);
		rig_format(r, i);
	}
	op_seq_init(&r->meta);
	snprintf(r->meta.hdr.dev, sizeof(r->meta.hdr.dev), "%s", r->p.dev);
	snprintf(r->meta.hdr.rtdev, sizeof(r->meta.hdr.rtdev), "%s", r->p.rtdev);
	snprintf(r->meta.hdr.mkfs, sizeof(r->meta.hdr.mkfs), "%s", r->p.mkfs);
	snprintf(r->meta.hdr.mount, sizeof(r->meta.hdr.mount), "%s", r->p.mount);
	snprintf(r->meta.hdr.targets, sizeof(r->meta.hdr.targets), "%s",
		 kind == GEOM_CRASH ? "engine,model" : "engine,naive,model");
#ifdef FSO_PLANTED
	plant_targets(r->meta.hdr.targets, sizeof(r->meta.hdr.targets));
#endif
	cfg.targets = r->meta.hdr.targets;
	ret = check_new(r->t, r->n, &cfg, &r->meta, &r->c);
	if (ret)
		fuzz_die("checker for %s: %d", r->p.targets, ret);
	/* check_new mounted the filesystem, tracked: where it wrote is
	 * metadata too. */
	for (int i = 0; i < r->n; i++)
		if (r->dt[i] && devtrack_dirty_end(r->dt[i]) > r->p.meta_bytes)
			fuzz_die("%s: mount wrote past byte %llu, where "
				 "fuzz/geom.c says metadata ends; update it",
				 r->t[i]->name, (unsigned long long)r->p.meta_bytes);
}

/*
 * Run cheap ops once, so the checker's op log and result arrays have
 * room for more ops than a fuzz input holds (64; a replayed file may
 * have more) before fuzzing starts: growing them later would be a code
 * path that depends on earlier inputs.
 */
static void rig_warm(struct rig *r)
{
	struct op close = { .kind = OP_CLOSE };
	int ret = 0;

	/* (The model's chunks come from the process's park, base/park.h,
	 * whose branches are left out of coverage: no pool to fill.) */
	for (unsigned i = 0; i < 256 && !ret; i++)
		ret = check_op(r->c, &close);
	if (ret)
		fuzz_die("%s: warm-up failed: %s", r->p.targets,
			 check_status_name(ret));
	rig_put(r);
}

void rig_init_all(enum geom_kind kind, const uint8_t *warm, size_t len)
{
	if (nrigs)
		return;
#ifdef FSO_PLANTED
	{
		const char *bug;

		if (plant_setup(kind == GEOM_CRASH ? "crash" : "diff", &bug) ==
		    PLANT_MODEL)
			planted_model = bug;
	}
#endif
#ifdef __GLIBC__
	/*
	 * Each reset frees a mount's worth of buffers and pages, which glibc
	 * would hand back to the kernel (heap top past 128k free; blocks of
	 * 128k and more are mappings of their own), so the next input paid a
	 * page fault for every page the last one had used.  Keep the heap at
	 * its high-water mark.  Sanitizer allocators ignore this.
	 */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_TOP_PAD, 16 << 20);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
	/* The op array gets its final size now, not at a long input. */
	op_seq_init(&input_seq);
	for (unsigned i = 0; i < 4096; i++)
		if (op_seq_push(&input_seq, &(struct op){ .kind = OP_CLOSE }))
			fuzz_die("out of memory");
	for (unsigned i = 0; i < geom_presets(kind); i++) {
		rig_open(kind, i, &rigs[i]);
		rig_warm(&rigs[i]);
	}
	nrigs = geom_presets(kind);
	LLVMFuzzerTestOneInput(warm, len);
}

struct rig *rig_input(enum geom_kind kind, const uint8_t *data, size_t size,
		      struct fuzz_geom *g, const struct op_seq **out)
{
	struct fuzz_input in;
	struct op prefix[GEOM_PREFIX_MAX];
	struct rig *r;
	unsigned n;

	fuzz_split(data, size, &in);
	geom_from_header(kind, in.hdr, g);
	r = rig_get(g->preset);
	r->last_used = ++inputs;
	/*
	 * The fresh filesystem the devices hold (rig_put) mounted anew with
	 * the swarm draw's mount options: every input, the same way (the
	 * options parsed, one mount), whatever the last input was.  Doing it
	 * only when the options changed ran the option parser and a second
	 * reset on some runs of an input and not on others: coverage that
	 * depended on the input before (AFL++'s stability).
	 */
	{
		int used = 0;

		if (check_new_round(r->c, "", g->swarm.mount, &used))
			fuzz_die("resetting the rig for mount options '%s' failed",
				 g->swarm.mount);
		if (!used) /* refused: the input runs without them */
			g->swarm.mount[0] = 0;
	}
	op_seq_clear(&input_seq);
	n = geom_prefix_ops(g, prefix);
	for (unsigned i = 0; i < n; i++)
		if (op_seq_push(&input_seq, &prefix[i]))
			fuzz_die("out of memory");
	if (op_bin_decode(in.ops, in.ops_len, &g->op, &input_seq))
		fuzz_die("out of memory decoding %zu bytes", in.ops_len);
	*out = &input_seq;
	return r;
}

struct rig *rig_get(unsigned preset)
{
	if (!nrigs)
		fuzz_die("rig_get before rig_init_all");
	return &rigs[preset % nrigs];
}

struct hw_dev *rig_device_begin(struct rig *r)
{
	return r->cut[0];
}

void rig_device_end(struct rig *r)
{
	(void)r;
}

/* Each device of r through fn (devtrack_restore or _release), below its
 * crash layer, whose records are then forgotten. */
static void rig_devices(struct rig *r, int (*fn)(struct devtrack *))
{
	static const struct hw_cut keep_all = { .kind = HW_CUT_KEEP_ALL };
	int ret;

	for (int i = 0; i < r->n; i++) {
		if (!r->dt[i])
			continue;
		/* recording again (the crash target settles the layer after
		 * an input's last cut); a cut armed and not reached: off,
		 * the power back on */
		ret = r->cut[i] ? hw_crash_settle(r->cut[i], false) : 0;
		if (!ret && r->cut[i] &&
		    hw_crash_set_plan(r->cut[i], NULL) == -EBUSY)
			ret = hw_crash_cut(r->cut[i], &keep_all);
		if (!ret && r->rtdt[i])
			ret = fn(r->rtdt[i]);
		if (!ret)
			ret = fn(r->dt[i]);
		/* A crash layer keeps what is not durable yet: forget it now
		 * (the restore went below it), so no later cut undoes it. */
		if (!ret && r->cut[i])
			ret = hw_flush(r->cut[i]);
		/* and the bytes it kept for its records go back to the
		 * process, shared by every rig, not kept by each */
		if (!ret && r->cut[i])
			ret = hw_crash_trim(r->cut[i]);
		if (ret)
			fuzz_die("%s: restoring its device failed: %d",
				 r->t[i]->name, ret);
		/* as mkfs left it: the next reset only mounts */
		engine_target_formatted(r->t[i]);
	}
}

/* The rig other than r that ran an input longest ago, or NULL. */
static struct rig *rig_oldest(const struct rig *r)
{
	struct rig *old = NULL;

	for (unsigned i = 0; i < nrigs; i++)
		if (&rigs[i] != r && rigs[i].last_used &&
		    (!old || rigs[i].last_used < old->last_used))
			old = &rigs[i];
	return old;
}

void rig_put(struct rig *r)
{
	struct rig *old;

	/*
	 * This input's files and filesystem dropped now, so that tearing
	 * them down is this input's coverage, not the next one's; the next
	 * input mounts the filesystem anew (rig_input), on a device as fresh
	 * as mkfs left it.
	 */
	if (check_release(r->c))
		fuzz_die("%s: releasing the targets failed", r->p.targets);
	rig_devices(r, devtrack_restore);
	/* Over budget: the oldest rigs give their memory back, all but
	 * their filesystem's image (their next input sees no difference). */
	while (devtrack_resident_bytes() > RIG_RESIDENT_BYTES &&
	       (old = rig_oldest(r))) {
		rig_devices(old, devtrack_release);
		old->last_used = 0;
	}
}
