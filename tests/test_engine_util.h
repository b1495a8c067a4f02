/*
 * test_engine_util.h - what the engine-on-devices tests (test_zoned_rt.c,
 * test_pmem_engine.c) share: a filesystem on a data device and an
 * optional realtime device, a byte array beside each file that says what
 * a reader must see (the expectation, kept independently of the engine),
 * named work counters, and the crash test: a short sequence cut at every
 * write of one device, then mount, audit, fsck and fsynced data checked.
 */
#ifndef FSORACLE_TEST_ENGINE_UTIL_H
#define FSORACLE_TEST_ENGINE_UTIL_H

#include "tests/test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/check.h"
#include "harness/gen.h"
#include "harness/target.h"
#include "hw/hw.h"
#include "ref/ref.h"

#define BS 4096

static char msgs[4096];
static inline void collect_msg(void *arg, const char *line)
{
	size_t n = strlen(msgs);

	(void)arg;
	snprintf(msgs + n, sizeof(msgs) - n, "%s\n", line);
}

struct efs {
	struct hw_dev *dev, *rtdev;  /* rtdev NULL: none */
	struct ref_fs *fs;
};

static inline int e_mount(struct efs *z)
{
	struct ref_mount_opts mo = { .rtdev = z->rtdev, .msg = collect_msg };

	msgs[0] = 0;
	return ref_mount(z->dev, &mo, &z->fs);
}

/* mkfs (tiny B+trees, log and inode table) and mount; rtdev may be NULL. */
static inline int e_new(struct efs *z, const char *dev, const char *rtdev,
			uint32_t rtextsize)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .journal_blocks = 64,
				   .inodes = 64, .rtextsize = rtextsize };
	char err[256];

	memset(z, 0, sizeof(*z));
	if (hw_open(dev, &z->dev, err, sizeof(err)) ||
	    (rtdev && hw_open(rtdev, &z->rtdev, err, sizeof(err)))) {
		fprintf(stderr, "    %s\n", err);
		return -1;
	}
	o.rtdev = z->rtdev;
	if (ref_mkfs(z->dev, &o))
		return -1;
	return e_mount(z);
}

static inline void e_close(struct efs *z)
{
	if (z->fs)
		ref_unmount(z->fs);
	hw_close(z->dev);
	if (z->rtdev)
		hw_close(z->rtdev);
}

static inline int audit(struct ref_fs *fs)
{
	msgs[0] = 0;
	return ref_audit(fs, collect_msg, NULL);
}

static inline int fsck(struct efs *z)
{
	struct ref_mount_opts mo = { .rtdev = z->rtdev, .msg = collect_msg };

	msgs[0] = 0;
	return ref_fsck_opts(z->dev, &mo);
}

/* A new file, realtime when the filesystem has a realtime device. */
static inline int e_file(struct efs *z, const char *name, uint64_t *ino)
{
	int err = ref_create(z->fs, name, ino);

	if (err || !z->rtdev)
		return err;
	return ref_set_flags(z->fs, *ino, REF_FLAG_REALTIME, 0);
}

/* A file and what it must read as. */
struct shadow {
	uint64_t ino;
	uint64_t size;     /* UINT64_MAX: an op on it failed part way */
	uint8_t *b;        /* SHADOW_MAX bytes */
};
#define SHADOW_MAX (128 * 1024)

static inline uint8_t pat(unsigned tag, uint64_t i)
{
	return (uint8_t)(((i * 131 + tag * 17) % 251) + 1);
}

static inline int sh_write(struct ref_fs *fs, struct shadow *s, unsigned tag,
			   uint64_t off, uint64_t len)
{
	uint8_t *buf = malloc(len);
	int64_t r;

	for (uint64_t i = 0; i < len; i++)
		buf[i] = pat(tag, off + i);
	r = ref_pwrite(fs, s->ino, buf, len, off);
	if (r != (int64_t)len)
		s->size = UINT64_MAX; /* partly written: no longer known */
	if (r == (int64_t)len) {
		memcpy(s->b + off, buf, len);
		if (off + len > s->size)
			s->size = off + len;
	}
	free(buf);
	return r == (int64_t)len ? 0 : -1;
}

static inline int sh_truncate(struct ref_fs *fs, struct shadow *s,
			      uint64_t size)
{
	if (ref_truncate(fs, s->ino, size)) {
		s->size = UINT64_MAX;
		return -1;
	}
	if (size < s->size)
		memset(s->b + size, 0, s->size - size);
	s->size = size;
	return 0;
}

static inline int sh_punch(struct ref_fs *fs, struct shadow *s, uint64_t off,
			   uint64_t len)
{
	if (ref_fallocate(fs, s->ino, REF_FALLOC_PUNCH_HOLE | REF_FALLOC_KEEP_SIZE,
			  off, len)) {
		s->size = UINT64_MAX;
		return -1;
	}
	if (off < s->size)
		memset(s->b + off, 0, (off + len < s->size ? off + len : s->size) - off);
	return 0;
}

/* 1 when the file reads exactly as its shadow. */
static inline int sh_matches(struct ref_fs *fs, const struct shadow *s)
{
	struct ref_stat st;
	uint8_t *got = malloc(s->size + 1);
	int ok = ref_stat(fs, s->ino, &st) == 0 && st.size == s->size &&
		 ref_pread(fs, s->ino, got, s->size, 0) == (int64_t)s->size &&
		 memcmp(got, s->b, s->size) == 0;

	if (!ok)
		fprintf(stderr, "    inode %llu: size %llu (want %llu)\n",
			(unsigned long long)s->ino, (unsigned long long)st.size,
			(unsigned long long)s->size);
	free(got);
	return ok;
}

/* Unmount, fsck the image, mount again: 0 when that all passes and s
 * reads back as before. */
static inline int e_cycle(struct efs *z, const struct shadow *s)
{
	int err = ref_unmount(z->fs);

	z->fs = NULL;
	if (err)
		return err;
	if (fsck(z)) {
		fprintf(stderr, "    fsck: %s", msgs);
		return -EFSCORRUPTED;
	}
	err = e_mount(z);
	if (err)
		return err;
	return sh_matches(z->fs, s) ? 0 : -EIO;
}

/*
 * ops generated ops (gc's seed, weights as `fsoracle run --weights`)
 * through the checker on targets "engine,model" in env; after each op,
 * each(fs, arg) (if non-NULL) sees the engine.  Returns the checker's
 * verdict, CHECK_OK when they agreed throughout.
 */
static inline int soak(const struct target_env *env, struct gen_cfg *gc,
		       const char *weights, int ops,
		       void (*each)(struct ref_fs *fs, void *arg), void *arg)
{
	struct target *t[2];
	struct checker *c;
	struct check_cfg cfg = { .out = stderr };
	struct gen g;
	char err[256];
	int n, r = 0;

	if (target_list_open("engine,model", env, t, &n, err, sizeof(err))) {
		fprintf(stderr, "    %s\n", err);
		return -1;
	}
	if (check_new(t, n, &cfg, NULL, &c)) {
		target_list_close(t, n);
		return -1;
	}
	gc->exclude = check_unsupported(c);
	gc->blocksize = t[0]->blocksize;
	if ((weights && gen_parse_weights(gc, weights, err, sizeof(err))) ||
	    gen_init(&g, gc))
		r = -1;
	for (int i = 0; i < ops && !r; i++) {
		struct op op;

		gen_next(&g, &op);
		r = check_op(c, &op);
		if (each && engine_target_fs(t[0]))
			each(engine_target_fs(t[0]), arg);
	}
	if (!r)
		r = check_finish(c);
	check_free(c);
	target_list_close(t, n);
	return r;
}

struct ctr_find { const char *name; uint64_t v; };
static inline void ctr_visit(void *arg, const char *name, uint64_t v)
{
	struct ctr_find *f = arg;

	if (!strcmp(f->name, name))
		f->v = v;
}

/* A work counter by name (UINT64_MAX: no such counter). */
static inline uint64_t ctr(struct ref_fs *fs, const char *name)
{
	struct ctr_find f = { name, UINT64_MAX };

	ref_counters_foreach(ref_counters(fs), ctr_visit, &f);
	return f.v;
}

/*
 * The crash test: a short sequence (writes, overwrites, fsyncs, a
 * truncate, a punch; on a small zoned device, reclaim) is cut at write k
 * of one device: from that write on, the device fails every write (the
 * faulty layer, above the crash layer), and the cut then decides what of
 * the writes not yet durable survives.  Mount must succeed, fsck be
 * clean before and after, every file fsynced before the cut and not
 * changed after read back as it was then, and a new file take a write.
 */
#define NFILES 2
struct seqstate {
	struct shadow cur[NFILES], synced[NFILES];
	bool have_synced[NFILES];
};

static inline int seq_fsync(struct ref_fs *fs, struct seqstate *q, int f)
{
	if (ref_fsync(fs, q->cur[f].ino))
		return -1;
	q->synced[f].ino = q->cur[f].ino;
	q->synced[f].size = q->cur[f].size;
	memcpy(q->synced[f].b, q->cur[f].b, SHADOW_MAX);
	q->have_synced[f] = true;
	return 0;
}

/* The sequence; stops at the first error (the cut). */
static inline int run_sequence(struct efs *z, struct seqstate *q)
{
	static const char *names[NFILES] = { "a", "b" };
	struct ref_fs *fs = z->fs;

	for (int f = 0; f < NFILES; f++)
		if (e_file(z, names[f], &q->cur[f].ino))
			return -1;
	if (sh_write(fs, &q->cur[0], 1, 0, 40000) || seq_fsync(fs, q, 0) ||
	    sh_write(fs, &q->cur[1], 2, 0, 20000) ||
	    sh_write(fs, &q->cur[0], 3, 8000, 12000) || seq_fsync(fs, q, 0) ||
	    sh_write(fs, &q->cur[1], 4, 15000, 30000) || seq_fsync(fs, q, 1) ||
	    sh_truncate(fs, &q->cur[0], 30000) ||
	    sh_punch(fs, &q->cur[1], 4096, 8192) || seq_fsync(fs, q, 1))
		return -1;
	for (int i = 0; i < 12; i++)
		if (sh_write(fs, &q->cur[i & 1], 10 + (unsigned)i,
			     (uint64_t)(i * 2500) % 20000, 7000))
			return -1;
	if (seq_fsync(fs, q, 0) || seq_fsync(fs, q, 1))
		return -1;
	return 0;
}

static inline void seq_init(struct seqstate *q)
{
	memset(q, 0, sizeof(*q));
	for (int f = 0; f < NFILES; f++) {
		q->cur[f].b = calloc(1, SHADOW_MAX);
		q->synced[f].b = calloc(1, SHADOW_MAX);
	}
}

static inline void seq_free(struct seqstate *q)
{
	for (int f = 0; f < NFILES; f++) {
		free(q->cur[f].b);
		free(q->synced[f].b);
	}
}

/*
 * One cut: on a fresh filesystem on dev (and rtdev, may be NULL), both
 * "faulty:crash:..." specs, device `which` (0 data, 1 rt) fails from its
 * k-th write on; *done says the sequence ran to its end without the fault
 * firing (k is past the last write).  0 when everything held.
 */
static inline int cut_at(const char *dev, const char *rtdev, int which,
			 uint64_t k, const struct hw_cut *cut, bool *done)
{
	struct efs z;
	struct seqstate q;
	struct hw_fault fault = { .ops = HW_FAULT_WRITE, .nth = k, .sticky = true };
	struct hw_dev *victim;
	int rc = -1, seqrc;

	seq_init(&q);
	if (e_new(&z, dev, rtdev, 0))
		goto out;
	victim = which ? z.rtdev : z.dev;
	if (hw_fault_arm(victim, &fault) < 0)
		goto out;
	seqrc = run_sequence(&z, &q);
	*done = seqrc == 0 && hw_fault_fired(victim) == 0;
	ref_abandon(z.fs);
	z.fs = NULL;
	hw_fault_disarm(z.dev, -1);
	if (z.rtdev)
		hw_fault_disarm(z.rtdev, -1);
	if (hw_crash_cut(z.dev, cut) || (z.rtdev && hw_crash_cut(z.rtdev, cut)))
		goto out;
	if (fsck(&z)) {
		fprintf(stderr, "    fsck before mount: %s", msgs);
		goto out;
	}
	if (e_mount(&z)) {
		fprintf(stderr, "    mount: %s", msgs);
		goto out;
	}
	if (audit(z.fs)) {
		fprintf(stderr, "    audit: %s", msgs);
		goto out;
	}
	/* files fsynced and not changed since (one fsync commits all) */
	for (int f = 0; f < NFILES; f++)
		if (q.have_synced[f] && q.cur[f].size == q.synced[f].size &&
		    !memcmp(q.cur[f].b, q.synced[f].b, SHADOW_MAX) &&
		    !sh_matches(z.fs, &q.synced[f]))
			goto out;
	/* and the recovered filesystem takes new writes */
	q.cur[0] = (struct shadow){ .b = q.cur[0].b };
	if (e_file(&z, "after", &q.cur[0].ino) ||
	    sh_write(z.fs, &q.cur[0], 99, 0, 20000) ||
	    !sh_matches(z.fs, &q.cur[0]) || audit(z.fs)) {
		fprintf(stderr, "    writing after recovery: %s", msgs);
		goto out;
	}
	if (ref_unmount(z.fs))
		goto out;
	z.fs = NULL;
	rc = fsck(&z);
out:
	e_close(&z);
	seq_free(&q);
	return rc;
}

/*
 * cut_at for k = 1, 2, ... until the sequence runs past the last write,
 * the cut at k being cuts[k % ncuts]; returns the number of cuts, or 0
 * after reporting a failing one.
 */
static inline uint64_t cut_everywhere(const char *dev, const char *rtdev,
				      int which, const struct hw_cut *cuts,
				      size_t ncuts)
{
	bool done = false;
	uint64_t k;

	for (k = 1; !done; k++) {
		const struct hw_cut *cut = &cuts[k % ncuts];

		if (cut_at(dev, rtdev, which, k, cut, &done)) {
			fprintf(stderr, "    %s device, cut at write %llu "
				"(cut kind %d, tear %d)\n",
				which ? "rt" : "data", (unsigned long long)k,
				(int)cut->kind, (int)cut->tear);
			return 0;
		}
	}
	return k - 1;
}

struct scratch {
	char dir[64];
	char spec[160];
};

/*
 * A pmem: device in a scratch directory: LAYERS "pmem:DIR/img,size=SIZE"
 * in t->spec, DIR fresh under /dev/shm when there is one (msync there
 * costs no disk flush), else /tmp; false when this build has no pmem:
 * (MSan: no libpmem2), saying so.  scratch_done removes both.
 */
static inline bool pmem_spec(struct scratch *t, const char *layers,
			     const char *size)
{
	struct hw_dev *d;
	char probe[128];

	snprintf(t->dir, sizeof(t->dir), "%s/fsoracle-pmemeng-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(t->dir))
		return false;
	snprintf(probe, sizeof(probe), "pmem:%s/probe,size=64k", t->dir);
	if (hw_open(probe, &d, NULL, 0) == -EOPNOTSUPP) {
		fprintf(stderr, "    skipped: pmem: is not available in this build\n");
		rmdir(t->dir);
		return false;
	}
	hw_close(d);
	snprintf(probe, sizeof(probe), "%s/probe", t->dir);
	unlink(probe);
	snprintf(t->spec, sizeof(t->spec), "%spmem:%s/img,size=%s", layers,
		 t->dir, size);
	return true;
}

static inline void scratch_done(struct scratch *t)
{
	char img[96];

	snprintf(img, sizeof(img), "%s/img", t->dir);
	unlink(img);
	rmdir(t->dir);
}

#endif
