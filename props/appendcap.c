/*
 * appendcap.c - the zoned append limit as the device reports it
 * (props.h, props_append_limit_held): the zoned and delalloc suites ask
 * it of the engines after their op sequences.
 *
 * The engine keeps its own copy of the limit (ref/zoned.c) and its
 * audit checks extents against that copy; this check asks the device
 * itself (hw.h's geometry, max_append) and walks the data fork from
 * outside, so an engine that cached a wrong limit cannot pass it:
 *
 *   realtime extent       device blocks it covers (a compressed one:
 *   [fileoff, len, plen]  plen)  x block size  <=  device max_append
 */
#include "props/props.h"

#include <stdio.h>

#include "hw/hw.h"
#include "ref/ref.h"

struct cap_walk {
	uint64_t bs, limit;
	struct ref_extent worst;
	uint64_t worst_bytes;
};

static int cap_one(void *arg, const struct ref_extent *x)
{
	struct cap_walk *w = arg;
	uint64_t blocks = (x->state & REF_EXT_COMPRESSED) ? x->state >> 8 :
			  x->len;

	if (blocks * w->bs > w->worst_bytes) {
		w->worst_bytes = blocks * w->bs;
		w->worst = *x;
	}
	return 0;
}

int props_append_limit_held(struct props_trial *t, struct target *e,
			    unsigned nfiles)
{
	struct ref_fs *fs = engine_target_fs(e);
	struct hw_dev *rt = fs ? ref_rtdevice(fs) : NULL;
	struct cap_walk w = { 0 };

	if (!fs) {
		props_note(t, "%s: not mounted after the ops", e->name);
		return PROPS_FAIL;
	}
	if (!rt || !rt->geo.max_append)
		return PROPS_PASS; /* no zoned realtime device: no limit */
	w.bs = ref_blocksize(fs);
	w.limit = rt->geo.max_append;
	for (unsigned f = 0; f < nfiles; f++) {
		struct ref_stat st;
		uint64_t ino;

		if (ref_lookup(fs, op_file_name(NULL, f), &ino))
			continue;
		if (ref_stat(fs, ino, &st) || !(st.flags & REF_FLAG_REALTIME))
			continue;
		if (ref_bmap(fs, ino, cap_one, &w)) {
			props_note(t, "%s: bmap of %s failed", e->name,
				   op_file_name(NULL, f));
			return PROPS_ERROR;
		}
		if (w.worst_bytes > w.limit) {
			props_note(t, "%s: %s has an extent of %llu bytes on the "
				   "device at file block %llu (device block "
				   "%llu), over the %llu bytes the device "
				   "reports as its largest append", e->name,
				   op_file_name(NULL, f),
				   (unsigned long long)w.worst_bytes,
				   (unsigned long long)w.worst.fileoff,
				   (unsigned long long)w.worst.startblk,
				   (unsigned long long)w.limit);
			return PROPS_FAIL;
		}
	}
	return PROPS_PASS;
}
