/*
 * target_twin.c - the state twin engines are compared on (target.h's
 * enum target_twin_part), as digests: what the engine target answers
 * to target_ops.twin.
 *
 * Each part is walked through ref.h's inspection calls and folded into a
 * 64-bit FNV-1a digest per file (a filesystem-wide part in slot 0), so
 * the checker compares a few words per target and op and still names
 * the part and the file that differ (the image: the data device's
 * bytes, in slot 0).  Mappings are merged where they are
 * contiguous in file, device and state before they are folded: twins may
 * split a record where the other did not, and only where data lives is
 * compared.
 */
#include "harness/target.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32c.h"
#include "hw/hw.h"
#include "ref/ref.h"

const char *const target_twin_names[TWIN_NPARTS] = {
	[TWIN_STAT] = "stat", [TWIN_FREE] = "free", [TWIN_EXTENTS] = "extents",
	[TWIN_COWFORK] = "cowfork", [TWIN_REFCOUNT] = "refcount",
	[TWIN_IMAGE] = "image",
};

#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static void fold(uint64_t *h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		*h ^= (v >> (8 * i)) & 0xff;
		*h *= FNV_PRIME;
	}
}

/*
 * A mapping list merged as it is walked: the run so far, then fold.
 * placeless: merged and folded without device blocks (where in the file
 * data lies, not where on the device).  h NULL: not asked for.
 */
struct merged {
	uint64_t *h;
	struct ref_extent run;
	int have, placeless;
};

static void fold_run(struct merged *m)
{
	if (!m->have)
		return;
	fold(m->h, m->run.fileoff);
	if (!m->placeless)
		fold(m->h, m->run.startblk);
	fold(m->h, m->run.len);
	fold(m->h, m->run.state);
	m->have = 0;
}

static void merge_into(struct merged *m, const struct ref_extent *e)
{
	struct ref_extent *r = &m->run;

	if (!m->h)
		return;
	/* a compressed extent's state holds its length on the device */
	if (m->have && r->fileoff + r->len == e->fileoff &&
	    (m->placeless || r->startblk + r->len == e->startblk) &&
	    r->state == e->state && !(e->state & REF_EXT_COMPRESSED)) {
		r->len += e->len;
		return;
	}
	fold_run(m);
	*r = *e;
	m->have = 1;
}

/* Both lists of one walk: [0] with device blocks, [1] without. */
static int merge_one(void *arg, const struct ref_extent *e)
{
	struct merged *m = arg;

	merge_into(&m[0], e);
	merge_into(&m[1], e);
	return 0;
}

/* A fork's mappings folded into h, and without their device blocks into
 * placeless, in one walk (either may be NULL). */
static int walk_merged(struct ref_fs *fs, uint64_t ino, int cow, uint64_t *h,
		       uint64_t *placeless)
{
	struct merged m[2] = { { .h = h }, { .h = placeless, .placeless = 1 } };
	int err = cow ? ref_cow_bmap(fs, ino, merge_one, m) :
			ref_bmap(fs, ino, merge_one, m);

	if (err == -EOPNOTSUPP && cow)
		err = 0; /* no reflink: no COW forks */
	fold_run(&m[0]);
	fold_run(&m[1]);
	return err;
}

static int refc_one(void *arg, uint64_t start, uint64_t len, uint32_t count)
{
	uint64_t *h = arg;

	fold(h, start);
	fold(h, len);
	fold(h, count);
	return 0;
}

/*
 * The device's contents as the engine issued them (the crash layer
 * answers reads with every write, durable or not): a CRC32C per 4 KiB
 * chunk, folded with its place, so a difference anywhere shows.
 */
#define IMAGE_CHUNK 4096u
#define IMAGE_READ  (256u * IMAGE_CHUNK)

static int image_digest(struct hw_dev *dev, uint64_t *h)
{
	uint64_t size = hw_size(dev);
	uint8_t *buf = malloc(IMAGE_READ);
	int err = buf ? 0 : -ENOMEM;

	for (uint64_t off = 0; off < size && !err; off += IMAGE_READ) {
		size_t n = size - off < IMAGE_READ ? (size_t)(size - off) :
			   IMAGE_READ;

		err = hw_read(dev, off, buf, n);
		for (size_t i = 0; i < n && !err; i += IMAGE_CHUNK) {
			size_t k = n - i < IMAGE_CHUNK ? n - i : IMAGE_CHUNK;

			fold(h, off + i);
			fold(h, crc32c(0, buf + i, k));
		}
	}
	free(buf);
	return err;
}

/* One file's parts, and its tree blocks (TWIN_PLACED: the free part,
 * and whether the twins' trees came apart). */
static int file_parts(struct ref_fs *fs, uint64_t ino, uint32_t parts,
		      struct target_twin *out, unsigned f, uint64_t *tree)
{
	struct ref_stat st;
	int err = ref_stat(fs, ino, &st);

	if (!err && (parts & (1u << TWIN_STAT))) {
		fold(&out->h[TWIN_STAT][f], st.size);
		fold(&out->h[TWIN_STAT][f], st.blocks);
	}
	/* the data fork once, for the extents and the records (TWIN_PLACED
	 * holds TWIN_EXTENTS) */
	if (!err && (parts & TWIN_PLACED)) {
		fold(&out->records, f);
		err = walk_merged(fs, ino, 0, (parts & (1u << TWIN_EXTENTS)) ?
				  &out->h[TWIN_EXTENTS][f] : NULL,
				  &out->records);
	}
	if (!err && (parts & (1u << TWIN_COWFORK)))
		err = walk_merged(fs, ino, 1, &out->h[TWIN_COWFORK][f], NULL);
	if (!err && (parts & TWIN_PLACED))
		err = ref_tree_blocks(fs, ino, tree);
	return err;
}

int engine_twin_state(struct target *t, uint32_t parts,
		      struct target_twin *out)
{
	struct ref_fs *fs = engine_target_fs(t);
	struct ref_statfs sf;
	uint64_t trees = 0;
	int err = 0;

	if (!fs)
		return -EIO;
	out->tree_blocks = 0;
	out->records = FNV_BASIS;
	for (int p = 0; p < TWIN_NPARTS; p++)
		for (unsigned f = 0; f < OP_MAX_FILES; f++)
			out->h[p][f] = FNV_BASIS;
	for (unsigned f = 0; f < OP_MAX_FILES && !err; f++) {
		uint64_t ino, tree = 0;

		err = ref_lookup(fs, t->names[f], &ino);
		if (err == -ENOENT) { /* no file: the digests stay the basis */
			err = 0;
			continue;
		}
		if (!err)
			err = file_parts(fs, ino, parts, out, f, &tree);
		trees += tree;
	}
	out->tree_blocks = trees;
	if (!err && (parts & (1u << TWIN_FREE)))
		err = ref_statfs(fs, &sf);
	if (!err && (parts & (1u << TWIN_FREE))) {
		fold(&out->h[TWIN_FREE][0], sf.free_blocks + trees);
		fold(&out->h[TWIN_FREE][0], sf.rt_free_blocks);
	}
	if (!err && (parts & (1u << TWIN_IMAGE)))
		err = image_digest(engine_target_dev(t), &out->h[TWIN_IMAGE][0]);
	if (!err && (parts & (1u << TWIN_REFCOUNT))) {
		err = ref_refcount_walk(fs, refc_one, &out->h[TWIN_REFCOUNT][0]);
		if (err == -EOPNOTSUPP)
			err = 0;
	}
	return err;
}
