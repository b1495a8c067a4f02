/*
 * runopts.c - the shared run options (runopts.h).
 */
#include "harness/runopts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw.h"

const char runopts_help[] =
"  --targets LIST       targets to compare (default: the log's targets=,\n"
"                       else " RUNOPTS_DEFAULT_TARGETS "); see below\n"
"  --dev DEV            device for engine targets given without one\n"
"                       (default: the log's dev=, else " RUNOPTS_DEFAULT_DEV ")\n"
"  --rtdev DEV          realtime device for engine targets (default: the\n"
"                       log's rt=, else none); files get it by chattr +r\n"
"  --mkfs OPTS          engine mkfs options, bs=4k,maxrecs=4,inodes=N,\n"
"                       journal=N,maxext=N,rtextsize=64k,reflink=1\n"
"                       (clone, dedupe, chattr +o; default: the\n"
"                       log's mkfs=)\n"
"  --mount OPTS         engine mount options, cache=N, pagecache=N,\n"
"                       pagecache_shift=N (radix nodes of 2^N slots),\n"
"                       data=MODE, delalloc, compress=zstd[:N],\n"
"                       naive=PATHS, fallback=PATHS (seed-path switches:\n"
"                       all, none, rt_truncate+forget...; see `fsoracle\n"
"                       io --help`) (default: mount=)\n"
"  --keep-image         engines on file: devices mount the image as it is\n"
"                       (made by `fsoracle mkfs`) instead of formatting\n"
"                       it, and start over by unlinking their files\n"
"                       (an image holding other files is refused)\n"
"  --format F           auto (default), text, binary or fsx\n"
"  --files N            binary form: files f0..f(N-1) (default 4)\n"
"  --max-file SIZE      binary form: offsets and ends clamp here (16m)\n"
"  --verify-every N     verify every file every N ops (default 1000)\n"
"  --audit-every N      audit engines every N ops, and after remount,\n"
"                       crash and at the end (default: every 1000 ops\n"
"                       and after every fsync, fdatasync and sync too)\n"
"  -X                   verify every file after every op (fsx -X)\n"
"  --check SPEC         what the checker does beyond that, as a log's\n"
"                       check= header asks it (a failure's log records\n"
"                       it): each (verify and audit after every op),\n"
"                       twins=PARTS (compare the engine targets' state\n"
"                       after every op: stat, free, extents, cowfork,\n"
"                       refcount, image (the device's bytes, also right\n"
"                       after a crash's recovery) joined by +, or all\n"
"                       (every part but image); once the twins' extent\n"
"                       trees held the same records in other blocks,\n"
"                       a part that says where blocks lie may differ:\n"
"                       only stat from then to the next round),\n"
"                       comma-separated\n";

void runopts_init(struct runopts *o)
{
	memset(o, 0, sizeof(*o));
}

const char *runopts_value(const char *name, int argc, char **argv, int *i,
			  int *bad)
{
	const char *a = argv[*i];
	size_t l = strlen(name);

	if (strncmp(a, name, l) || (a[l] && a[l] != '='))
		return NULL; /* not this option: *bad as it was */
	*bad = !a[l] && *i + 1 >= argc;
	if (a[l] == '=')
		return a + l + 1;
	return *bad ? NULL : argv[++*i];
}

static int count(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s || *end || v == 0 || v > UINT32_MAX || s[0] == '-')
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/*
 * The value of runopts_parse's option number which (its place in the
 * names there), called name.  1 (used), or -EINVAL with err set.
 */
static int set_value(struct runopts *o, int which, const char *name,
		     const char *v, char *err, size_t errlen)
{
	switch (which) {
	case 0: o->targets = v; return 1;
	case 1: o->dev = v; return 1;
	case 2: o->mkfs = v; return 1;
	case 3: o->mount = v; return 1;
	case 9: o->rtdev = v; return 1;
	case 10:
		return check_cfg_parse(v, &o->check, err, errlen) ? -EINVAL : 1;
	case 4:
		if (op_form_parse(v, &o->form)) {
			snprintf(err, errlen, "--format: '%s' is not auto, text, "
				 "binary or fsx", v);
			return -EINVAL;
		}
		return 1;
	case 5:
		if (count(v, &o->geom.nfiles) || o->geom.nfiles > OP_MAX_FILES) {
			snprintf(err, errlen, "--files: want 1..%d, got '%s'",
				 OP_MAX_FILES, v);
			return -EINVAL;
		}
		return 1;
	case 6: {
		uint64_t sz;

		if (hw_parse_size(v, &sz) || sz < 512) {
			snprintf(err, errlen, "--max-file: bad size '%s'", v);
			return -EINVAL;
		}
		o->geom.max_file = sz;
		return 1;
	}
	case 7:
	case 8: {
		uint32_t n;

		if (count(v, &n)) {
			snprintf(err, errlen, "%s: want a positive count, got '%s'",
				 name, v);
			return -EINVAL;
		}
		if (which == 7)
			o->check.verify_every = n;
		else
			o->check.audit_every = n;
		return 1;
	}
	}
	return 0;
}

int runopts_parse(struct runopts *o, int argc, char **argv, int *i,
		  char *err, size_t errlen)
{
	static const char *const names[] = {
		"--targets", "--dev", "--mkfs", "--mount", "--format", "--files",
		"--max-file", "--verify-every", "--audit-every", "--rtdev",
		"--check",
	};
	const char *v = NULL;
	int which = -1, bad = 0;

	if (!strcmp(argv[*i], "-X") || !strcmp(argv[*i], "--verify-each-op")) {
		o->check.verify_each_op = 1;
		return 1;
	}
	if (!strcmp(argv[*i], "--keep-image")) {
		o->keep_image = 1;
		return 1;
	}
	for (int k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++) {
		v = runopts_value(names[k], argc, argv, i, &bad);
		if (v || bad) {
			which = k;
			break;
		}
	}
	if (which < 0)
		return 0;
	if (bad) {
		snprintf(err, errlen, "%s needs a value", names[which]);
		return -EINVAL;
	}
	return set_value(o, which, names[which], v, err, errlen);
}

void runopts_resolve(const struct runopts *o, const struct op_seq *seq,
		     struct target_env *env, const char **targets)
{
	const struct op_header *h = seq ? &seq->hdr : NULL;

	memset(env, 0, sizeof(*env));
	env->dev = o->dev ? o->dev : h && h->dev[0] ? h->dev :
		   RUNOPTS_DEFAULT_DEV;
	env->mkfs = o->mkfs ? o->mkfs : h && h->mkfs[0] ? h->mkfs : NULL;
	env->mount = o->mount ? o->mount : h && h->mount[0] ? h->mount : NULL;
	env->rtdev = o->rtdev ? o->rtdev : h && h->rtdev[0] ? h->rtdev : NULL;
	env->keep_image = o->keep_image;
	/* a log with cuts gets engines that take them (target.h) */
	for (size_t i = 0; seq && i < seq->n; i++)
		if (seq->ops[i].kind == OP_CUT)
			env->power_cuts = 1;
	*targets = o->targets ? o->targets : h && h->targets[0] ? h->targets :
		   RUNOPTS_DEFAULT_TARGETS;
}

void runopts_record_env(const struct target_env *env, struct op_seq *seq)
{
	struct op_header *h = &seq->hdr;

	if (env->dev && env->dev != h->dev)
		snprintf(h->dev, sizeof(h->dev), "%s", env->dev);
	if (env->rtdev && env->rtdev != h->rtdev)
		snprintf(h->rtdev, sizeof(h->rtdev), "%s", env->rtdev);
	if (env->mkfs && env->mkfs != h->mkfs)
		snprintf(h->mkfs, sizeof(h->mkfs), "%s", env->mkfs);
	if (env->mount && env->mount != h->mount)
		snprintf(h->mount, sizeof(h->mount), "%s", env->mount);
}
