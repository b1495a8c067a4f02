/*
 * image.c - fuzz target `image`: a small valid filesystem image with
 * damaged metadata must give a clean error, never a crash, hang, leak or
 * sanitizer report; and an image that fsck calls clean must stay clean
 * through mount, a few ops and unmount.
 *
 * Templates are made once at start-up (mkfs + a few ops on a mem:
 * device, read back whole) and every input starts from one of them
 * (devtrack.h puts back the pages an input wrote when it ends):
 *
 *   0  bs 512,  fan-out 4                    cleanly unmounted
 *   1  bs 4096, fan-out 4                    cleanly unmounted
 *   2  bs 1024, fan-out 5                    cut after fsync: the log
 *                                            holds transactions to replay
 *   3  bs 2048, fan-out 8, extents <= 2      cut mid-truncate: log, and an
 *                                            unclean image to finish
 *
 * Header bytes (fuzz.h's 16):
 *
 *   0      bits 0-1 template; bit 2 recompute the checksums of the
 *          damaged blocks (so validation past the CRC is reached); bit 3
 *          mount read-only
 *   1..15  three damages of 5 bytes: block, offset low, offset high,
 *          value, shape
 *            block   the (b % n)-th metadata block of the template (any
 *                    block starting with one of ondisk.h's magics: the
 *                    superblock, journal header, descriptors, logged
 *                    images and commits, inode table, bitmap, B+tree)
 *            offset  (low | high << 8) % block size
 *            value   0 = no damage
 *            shape   bits 0-2: 1 + n bytes; bits 3-4: xor, set, add,
 *                    set to 0xff
 *
 * Then: ref_fsck; ref_mount; up to IMAGE_MAX_OPS ops from the op records
 * (results ignored: errors are fine); ref_unmount; and if the first fsck
 * passed, no op met -EFSCORRUPTED or -EIO and the unmount succeeded,
 * ref_fsck again, which must pass.
 *
 * Recomputing checksums follows the on-disk rules (ondisk.h, format.c):
 * a CRC32C of the block with the crc field zeroed, over the first 512
 * bytes for the superblock and journal header, the whole block
 * otherwise.  The journal's commit block also chains the checksums of
 * its transaction's blocks, in a layout private to ref/; that chain is
 * not recomputed, so a damaged logged block ends the log cleanly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/devtrack.h"
#include "fuzz/fuzz.h"
#include "harness/binary.h"
#include "hw/hw.h"
#include "base/crc32c.h"
#include "ref/ondisk.h"
#include "ref/ref.h"

#define IMAGE_TEMPLATES 4
#define IMAGE_DAMAGES 3
#define IMAGE_MAX_OPS 16
#define IMAGE_MAX_FILE (256u << 10)
#define IMAGE_HDR_SECTOR 512

struct template {
	const char *what;
	struct ref_mkfs_opts mkfs;
	uint64_t dev_bytes;
	int cut;                     /* 0 clean, 1 after fsync, 2 mid-way  */
	struct hw_dev *dev;
	struct devtrack *dt;
	uint8_t *image;              /* the template's bytes               */
	uint64_t *meta;              /* metadata block numbers             */
	uint32_t nmeta;
};

static struct template tpl[IMAGE_TEMPLATES] = {
	{ .what = "bs 512, fan-out 4, clean",
	  .mkfs = { .blocksize = 512, .btree_maxrecs = 4, .inodes = 16,
		    .journal_blocks = 64 },
	  .dev_bytes = 512 << 10, .cut = 0 },
	{ .what = "bs 4096, fan-out 4, clean",
	  .mkfs = { .blocksize = 4096, .btree_maxrecs = 4, .inodes = 16,
		    .journal_blocks = 64 },
	  .dev_bytes = 1 << 20, .cut = 0 },
	{ .what = "bs 1024, fan-out 5, log to replay",
	  .mkfs = { .blocksize = 1024, .btree_maxrecs = 5, .inodes = 16,
		    .journal_blocks = 64 },
	  .dev_bytes = 512 << 10, .cut = 1 },
	{ .what = "bs 2048, fan-out 8, extents <= 2, log and unclean",
	  .mkfs = { .blocksize = 2048, .btree_maxrecs = 8, .inodes = 16,
		    .journal_blocks = 64, .max_extlen = 2 },
	  .dev_bytes = 1 << 20, .cut = 2 },
};

static const char *const names[4] = { "f0", "f1", "f2", "f3" };
static uint8_t *wbuf;                /* pwrite data, IMAGE_MAX_FILE bytes  */
static uint8_t *rbuf;
static struct op_seq seq;

static int is_magic(uint32_t m)
{
	switch (m) {
	case MAGIC_SUPER: case MAGIC_JHDR: case MAGIC_JDESC: case MAGIC_JCOMMIT:
	case MAGIC_INODES: case MAGIC_BITMAP: case MAGIC_BMBT:
		return 1;
	default:
		return 0;
	}
}

/* The few ops that give each template extents, tree levels and a log. */
static int populate(struct template *t)
{
	struct ref_fs *fs;
	uint64_t ino[4], bs = t->mkfs.blocksize;
	int ret = ref_mount(t->dev, NULL, &fs);

	for (unsigned i = 0; i < 4 && !ret; i++)
		ret = ref_create(fs, names[i], &ino[i]);
	memset(wbuf, 0x5a, IMAGE_MAX_FILE);
	/* f0: every other block, so each is its own extent: tree levels */
	for (uint64_t b = 0; b < 48 && !ret; b += 2)
		if (ref_pwrite(fs, ino[0], wbuf, bs, b * bs) < 0)
			ret = -EIO;
	/* f1: a written run, then preallocated (unwritten) blocks */
	if (!ret && ref_pwrite(fs, ino[1], wbuf, 3 * bs + 100, 0) < 0)
		ret = -EIO;
	if (!ret)
		ret = ref_fallocate(fs, ino[1], REF_FALLOC_KEEP_SIZE, 8 * bs, 6 * bs);
	/* f2: grown, then cut to a partial block; f3 gone again */
	if (!ret && ref_pwrite(fs, ino[2], wbuf, 5 * bs, 0) < 0)
		ret = -EIO;
	if (!ret)
		ret = ref_truncate(fs, ino[2], 2 * bs + 7);
	if (!ret)
		ret = ref_unlink(fs, names[3]);
	if (ret) {
		ref_abandon(fs);
		return ret;
	}
	if (t->cut == 0)
		return ref_unmount(fs);
	ret = ref_sync(fs);
	if (!ret && ref_pwrite(fs, ino[1], wbuf, bs, 20 * bs) < 0)
		ret = -EIO;
	if (!ret)
		ret = ref_fsync(fs, ino[1]);
	if (!ret && t->cut == 2) {
		ret = ref_fallocate(fs, ino[0], REF_FALLOC_KEEP_SIZE |
				    REF_FALLOC_PUNCH_HOLE, 4 * bs, 20 * bs);
		if (!ret)
			ret = ref_fsync(fs, ino[0]);
		if (!ret)
			ret = ref_truncate(fs, ino[0], 9 * bs + 1);
	}
	ref_abandon(fs);
	return ret;
}

static void template_init(struct template *t)
{
	char spec[64], err[200];
	uint64_t nblocks, bs = t->mkfs.blocksize;
	int ret;

	snprintf(spec, sizeof(spec), "mem:%lluk",
		 (unsigned long long)(t->dev_bytes >> 10));
	ret = hw_open(spec, &t->dev, err, sizeof(err));
	if (ret)
		fuzz_die("image: %s: %s", spec, err);
	ret = ref_mkfs(t->dev, &t->mkfs);
	if (!ret)
		ret = populate(t);
	if (ret)
		fuzz_die("image: making template '%s': %s", t->what,
			 ref_strerror(ret));
	t->image = malloc(t->dev_bytes);
	nblocks = t->dev_bytes / bs;
	t->meta = malloc(nblocks * sizeof(*t->meta));
	if (!t->image || !t->meta)
		fuzz_die("image: out of memory");
	ret = hw_read(t->dev, 0, t->image, t->dev_bytes);
	if (ret)
		fuzz_die("image: reading template: %d", ret);
	for (uint64_t b = 0; b < nblocks; b++)
		if (is_magic(get32(t->image + b * bs)))
			t->meta[t->nmeta++] = b;
	ret = devtrack_attach(t->dev, t->image, &t->dt);
	if (ret)
		fuzz_die("image: tracking the template device: %d", ret);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t warm[FUZZ_HDR_LEN + OP_BIN_RECORD] = {
		[FUZZ_HDR_LEN] = OP_PWRITE, [FUZZ_HDR_LEN + 9] = 1,
	};

	fuzz_heap_log_start();
	if (wbuf)
		return 0;
	wbuf = malloc(IMAGE_MAX_FILE);
	rbuf = malloc(IMAGE_MAX_FILE);
	if (!wbuf || !rbuf)
		fuzz_die("image: out of memory");
	op_seq_init(&seq);
	for (unsigned i = 0; i < 1024; i++)
		if (op_seq_push(&seq, &(struct op){ .kind = OP_CLOSE }))
			fuzz_die("image: out of memory");
	for (unsigned i = 0; i < IMAGE_TEMPLATES; i++)
		template_init(&tpl[i]);
	for (uint8_t i = 0; i < IMAGE_TEMPLATES; i++) {
		uint8_t w[sizeof(warm)];

		memcpy(w, warm, sizeof(w));
		w[0] = i;
		LLVMFuzzerTestOneInput(w, sizeof(w));
	}
	return 0;
}

struct damage {
	uint64_t blk;
	uint32_t off, n;
	uint8_t val, how;
};

static int damage_of(const struct template *t, const uint8_t *d,
		     struct damage *dm)
{
	uint32_t bs = t->mkfs.blocksize;

	dm->blk = t->meta[d[0] % t->nmeta];
	dm->off = (uint32_t)(d[1] | d[2] << 8) % bs;
	dm->val = d[3];
	dm->n = 1 + (d[4] & 7);
	if (dm->n > bs - dm->off)
		dm->n = bs - dm->off;
	dm->how = (d[4] >> 3) & 3;
	return dm->val != 0;
}

/* The checksum rule of ondisk.h, with format.c's header-sector span. */
static void fix_crc(const struct template *t, uint8_t *blk, uint64_t blkno)
{
	uint32_t bs = t->mkfs.blocksize, span = bs;
	uint32_t magic = get32(t->image + blkno * bs); /* what it was */
	static const uint8_t zero[4];
	uint32_t c;

	if ((magic == MAGIC_SUPER || magic == MAGIC_JHDR) && bs > IMAGE_HDR_SECTOR)
		span = IMAGE_HDR_SECTOR;
	c = crc32c(0, blk, BLKHDR_CRC);
	c = crc32c(c, zero, 4);
	c = crc32c(c, blk + BLKHDR_CRC + 4, span - BLKHDR_CRC - 4);
	put32(blk + BLKHDR_CRC, c);
}

static void apply_damage(struct template *t, const uint8_t *hdr)
{
	uint32_t bs = t->mkfs.blocksize;
	uint8_t *blk = rbuf;

	for (unsigned i = 0; i < IMAGE_DAMAGES; i++) {
		struct damage dm;

		if (!damage_of(t, hdr + 1 + 5 * i, &dm))
			continue;
		if (hw_read(t->dev, dm.blk * bs, blk, bs))
			fuzz_die("image: reading block %llu", (unsigned long long)dm.blk);
		for (uint32_t k = 0; k < dm.n; k++) {
			uint8_t *p = blk + dm.off + k;

			switch (dm.how) {
			case 0: *p ^= dm.val; break;
			case 1: *p = dm.val; break;
			case 2: *p = (uint8_t)(*p + dm.val); break;
			default: *p = 0xff; break;
			}
		}
		if (hdr[0] & 4)
			fix_crc(t, blk, dm.blk);
		if (hw_write(t->dev, dm.blk * bs, blk, bs, HW_META))
			fuzz_die("image: writing block %llu", (unsigned long long)dm.blk);
	}
}

/* One op on the mounted image; returns its result (errors are fine). */
static int64_t apply_op(struct ref_fs *fs, const struct op *op, uint64_t opno)
{
	uint64_t ino;
	int64_t ret;

	if (op->kind == OP_SYNC)
		return ref_sync(fs);
	if (op->kind == OP_UNLINK)
		return ref_unlink(fs, names[op->file % 4]);
	ret = ref_lookup(fs, names[op->file % 4], &ino);
	if (ret == -ENOENT)
		ret = ref_create(fs, names[op->file % 4], &ino);
	if (ret)
		return ret;
	switch (op->kind) {
	case OP_PWRITE:
		op_fill(op, opno, op->off, wbuf, (size_t)op->len);
		return ref_pwrite(fs, ino, wbuf, op->len, op->off);
	case OP_PREAD:
		return ref_pread(fs, ino, rbuf, op->len, op->off);
	case OP_TRUNCATE:
		return ref_truncate(fs, ino, op->arg);
	case OP_FALLOC:
		return ref_fallocate(fs, ino, (op->flags & OP_FL_KEEP_SIZE) ?
				     REF_FALLOC_KEEP_SIZE : 0, op->off, op->len);
	case OP_FPUNCH:
		return ref_fallocate(fs, ino, REF_FALLOC_KEEP_SIZE |
				     REF_FALLOC_PUNCH_HOLE, op->off, op->len);
	case OP_FZERO:
		return ref_fallocate(fs, ino, REF_FALLOC_ZERO_RANGE |
				     ((op->flags & OP_FL_KEEP_SIZE) ?
				      REF_FALLOC_KEEP_SIZE : 0), op->off, op->len);
	case OP_FSYNC:
		return ref_fsync(fs, ino);
	case OP_FDATASYNC:
		return ref_fdatasync(fs, ino);
	default:
		return 0; /* the rest have no ref.h call (yet), or need none */
	}
}

static void first_line(void *arg, const char *line)
{
	char *msg = arg;

	if (!msg[0])
		snprintf(msg, 256, "%s", line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct op_geom geom = { .max_file = IMAGE_MAX_FILE, .nfiles = 4 };
	struct ref_mount_opts mo = { 0 };
	struct fuzz_input in;
	struct template *t;
	struct ref_fs *fs;
	int fsck1, ret, harmed = 0;
	char msg[256] = "";

	fuzz_split(data, size, &in);
	t = &tpl[in.hdr[0] & 3];
	apply_damage(t, in.hdr);
	op_seq_clear(&seq);
	if (op_bin_decode(in.ops, in.ops_len, &geom, &seq))
		fuzz_die("image: out of memory");
	if (seq.n > IMAGE_MAX_OPS)
		seq.n = IMAGE_MAX_OPS;

	fsck1 = ref_fsck(t->dev, NULL, NULL);
	if (in.hdr[0] & 8)
		mo.flags |= REF_MOUNT_RDONLY;
	ret = ref_mount(t->dev, &mo, &fs);
	if (ret)
		goto out;
	for (size_t i = 0; i < seq.n; i++) {
		int64_t r = apply_op(fs, &seq.ops[i], i + 1);

		if (r == -EFSCORRUPTED || r == -EIO)
			harmed = 1;
	}
	ret = ref_unmount(fs);
	if (fsck1 || harmed || ret)
		goto out;
	ret = ref_fsck(t->dev, first_line, msg);
	if (ret)
		fuzz_die("image: fsck passed the image (template %u, checksums %s), "
			 "but fails after mount, %zu op(s) and unmount: %s: %s",
			 in.hdr[0] & 3, (in.hdr[0] & 4) ? "recomputed" : "as damaged",
			 seq.n, ref_strerror(ret), msg);
out:
	/* Back to the template now, so the next input's run covers only
	 * what it does itself. */
	if (devtrack_restore(t->dt))
		fuzz_die("image: restoring the template failed");
	return 0;
}

int fuzz_describe(const uint8_t *data, size_t size, FILE *out)
{
	static const char *const hows[4] = { "xor", "set to", "add", "set to 0xff" };
	struct fuzz_input in;
	struct template *t;

	LLVMFuzzerInitialize(NULL, NULL);
	fuzz_split(data, size, &in);
	t = &tpl[in.hdr[0] & 3];
	fprintf(out, "# image input: template %u (%s), checksums %s%s\n",
		in.hdr[0] & 3, t->what,
		(in.hdr[0] & 4) ? "recomputed after the damage" : "left as damaged",
		(in.hdr[0] & 8) ? ", mounted read-only" : "");
	for (unsigned i = 0; i < IMAGE_DAMAGES; i++) {
		struct damage dm;

		if (!damage_of(t, in.hdr + 1 + 5 * i, &dm))
			continue;
		fprintf(out, "# damage: block %llu (magic %08x), bytes %u..%u %s "
			"0x%02x\n", (unsigned long long)dm.blk,
			get32(t->image + dm.blk * t->mkfs.blocksize), dm.off,
			dm.off + dm.n - 1, hows[dm.how], dm.how == 3 ? 0xff : dm.val);
	}
	fprintf(out, "# then up to %u ops from its op records; decode them with\n"
		"#decode --files 4 --max-file %u\n", IMAGE_MAX_OPS, IMAGE_MAX_FILE);
	return 0;
}
