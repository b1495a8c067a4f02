/*
 * target_engine.c - the reference engine (ref.h) as a target: a data
 * device and, when the environment names one, a realtime device; mkfs at
 * open and reset, files f0..f7 by name in the engine's flat namespace,
 * remount = unmount + mount, crash = abandon + mount (the engine loses
 * whatever it had not committed and recovers its journal).
 *
 * Ops ref.h does not offer yet return -EOPNOTSUPP and are listed in the
 * target's unsupported mask, so the checker skips and reports them:
 * clone and dedupe range on a filesystem made without reflink (mkfs
 * option reflink=1).  writeback and
 * drop_caches reach the engine's page cache (ref_writeback of every
 * file, ref_drop_caches): nothing a reader sees changes.
 *
 * chattr (set_flag) reaches the engine: +r/-r set or clear the realtime
 * flag, +j/-j the journal-data flag, +o/-o always-COW, +c/-c compression
 * at writeback.  Flags change where data lives, never what a reader sees, so the
 * model accepts every chattr and ignores it; this target answers as the
 * model does when the engine declines one for a reason of layout (-EINVAL:
 * the file has blocks or there is no realtime device, as XFS; -EOPNOTSUPP:
 * an attribute the engine does not have yet), and passes any other error
 * on.  The engine's own answers are what tests/test_rt.c checks.
 *
 * The seed-path switches: `engine` mounts with the --mount options
 * (default: every path optimized), `naive` adds naive=all.  The ops
 * `naive PATHS` and `fallback PATHS` set them on the mounted engine
 * (ref_set_paths) and in the options later remounts use, until the next
 * reset restores the mount's; the `naive` target keeps every path naive
 * whatever a `naive` op says, so it stays the all-naive twin a mix is
 * compared with; the `fallback` target keeps fallback=all whatever a
 * `fallback` op says (every optimized path forced to its fallback: the
 * third twin of the path suites).
 *
 * Power cuts (target_env.power_cuts): the data device and the realtime
 * device each get a crash layer ("crash:" + the spec, unless the spec
 * has one), joined into one power domain (hw_crash_join): one machine,
 * one power supply, so a plan fails the power of both at the point it
 * names, counted over both devices' flushes and FUA writes in issue
 * order, and one cut rebuilds both (a realtime device that ran on after
 * the data device's power failed is a state no machine reaches):
 *
 *   data  crash:mem:64m   --+
 *                           +-- one domain: one plan, one cut
 *   rt    crash:zoned:mem --+
 *
 * On the emulated zone model (zoned:mem, zoned:file) the cut rewinds
 * write pointers and undoes the zone resets and finishes issued after
 * the failure.  No cuts when either device is null: or zoned:null
 * (their data is gone anyway) or zbd: (real zoned hardware, whose write
 * pointers cannot be moved back): cut is then unsupported.  `cut` ops
 * go through the domain as harness/cut.h says: the point arms a plan,
 * the seed picks the cut, and the cut the checker asks for after the
 * failure is abandon, cut, mount.  `crash` keeps every write issued (a
 * cut that keeps all).
 *
 * With a realtime device, collapse and insert must be rt-extent-aligned
 * on realtime files (as XFS); the model has one alignment unit for all
 * files, so the target reports the rt extent size as its blocksize and
 * asks that alignment of every file.
 */
#include "harness/target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cut.h"
#include "hw/hw.h"
#include "ref/ref.h"

struct engine {
	struct target t;
	struct hw_dev *dev;
	struct hw_dev *rtdev;        /* NULL: no realtime device              */
	struct ref_fs *fs;           /* NULL after a failed (re)mount         */
	int gone;                    /* why fs is NULL: the failed mount's or
				        unmount's -errno (0 while mounted)   */
	struct ref_mkfs_opts mkfs;
	struct ref_mount_opts mnt;
	uint64_t ino[OP_MAX_FILES];
	uint32_t known;              /* bit i: ino[i] is cached_name[i]'s     */
	char cached_name[OP_MAX_FILES][OP_NAME_MAX + 1];
	int keep;                    /* persistent image kept: no mkfs        */
	enum engine_pin pin;         /* naive=all or fallback=all pinned      */
	uint32_t base_naive;         /* the mount's switches, for reset       */
	uint32_t base_fallback;
	char own_mkfs[OP_HDR_STR];   /* the options the target was made with */
	char own_mount[OP_HDR_STR];
	int cuts;                    /* a crash layer: cut ops cut (see top)  */
	int formatted;               /* the devices hold a fresh mkfs's image:
				        the next reset only mounts (target.h) */
	int armed;                   /* a cut's plan waits for its point      */
	char msg[200];               /* the engine's last message line        */
	char *audit_msg;             /* where audit() collects its first line */
	size_t audit_len;
};

#define ENGINE_UNSUPPORTED \
	((1ull << OP_CLONE_RANGE) | (1ull << OP_DEDUPE_RANGE))

static struct engine *to_engine(struct target *t)
{
	return (struct engine *)t;
}

static void engine_msg(void *arg, const char *line)
{
	struct engine *e = arg;

	snprintf(e->msg, sizeof(e->msg), "%s", line);
}

/* Clone and dedupe need a filesystem made with reflink (ref.h): the
 * refcount walk answers -EOPNOTSUPP without. */
#define REMAP_OPS ((1ull << OP_CLONE_RANGE) | (1ull << OP_DEDUPE_RANGE))
static int stop_walk(void *arg, uint64_t start, uint64_t len, uint32_t count)
{
	(void)arg, (void)start, (void)len, (void)count;
	return 1;
}

/* The mounted filesystem dropped, writing nothing. */
static void drop_fs(struct engine *e)
{
	if (e->fs) {
		ref_abandon(e->fs);
		e->fs = NULL;
	}
}

static int do_mount(struct engine *e)
{
	struct ref_statfs st;
	int ret;

	e->known = 0;
	e->mnt.msg = engine_msg;
	e->mnt.msg_arg = e;
	e->mnt.rtdev = e->rtdev;
	ret = ref_mount(e->dev, &e->mnt, &e->fs);
	if (!ret)
		ret = ref_statfs(e->fs, &st);
	e->gone = ret;
	if (ret) {
		drop_fs(e);
		return ret;
	}
	if (ref_refcount_walk(e->fs, stop_walk, NULL) == -EOPNOTSUPP)
		e->t.unsupported |= REMAP_OPS;
	else
		e->t.unsupported &= ~REMAP_OPS;
	/* collapse/insert alignment: the rt extent (see the top) */
	e->t.blocksize = st.rtextsize > st.blocksize ? st.rtextsize : st.blocksize;
	return 0;
}

/* chattr: the engine's flag change, with its layout refusals answered as
 * the model answers (see the top). */
static int set_flag(struct engine *e, uint64_t ino, const struct op *op)
{
	uint32_t f = ((op->arg & OP_ATTR_REALTIME) ? REF_FLAG_REALTIME : 0) |
		     ((op->arg & OP_ATTR_JOURNAL_DATA) ? REF_FLAG_JOURNAL_DATA : 0) |
		     ((op->arg & OP_ATTR_ALWAYS_COW) ? REF_FLAG_COW : 0) |
		     ((op->arg & OP_ATTR_COMPRESS) ? REF_FLAG_COMPRESS : 0);
	int ret = 0;

	if (op->arg & ~(uint64_t)(OP_ATTR_REALTIME | OP_ATTR_JOURNAL_DATA |
				  OP_ATTR_ALWAYS_COW | OP_ATTR_COMPRESS))
		ret = -EOPNOTSUPP;
	else if (f)
		ret = ref_set_flags(e->fs, ino, (op->flags & OP_FL_CLEAR) ? 0 : f,
				    (op->flags & OP_FL_CLEAR) ? f : 0);
	return ret == -EINVAL || ret == -EOPNOTSUPP ? 0 : ret;
}

/* naive/fallback ops: the switches from now on, remounts included. */
static int set_paths(struct engine *e, const struct op *op)
{
	uint32_t mask = (uint32_t)op->arg & REF_PATHS_ALL;

	if (op->kind == OP_NAIVE)
		e->mnt.naive = e->pin == ENGINE_NAIVE ? REF_PATHS_ALL : mask;
	else
		e->mnt.fallback = e->pin == ENGINE_FALLBACK ? REF_PATHS_ALL :
				  mask;
	if (e->fs)
		ref_set_paths(e->fs, e->mnt.naive, e->mnt.fallback);
	return 0;
}

/* Collapse and insert ask the target's alignment unit of every file. */
static int shift_aligned(const struct engine *e, const struct op *op)
{
	return op->off % e->t.blocksize == 0 && op->len % e->t.blocksize == 0;
}

/* A fresh filesystem: made and mounted, or only mounted when the caller
 * said the devices hold one made and untouched (engine_target_formatted). */
static int do_mkfs_mount(struct engine *e)
{
	int ret = 0;

	drop_fs(e);
	if (!e->formatted)
		ret = ref_mkfs(e->dev, &e->mkfs);
	e->formatted = 0;
	if (!ret)
		ret = do_mount(e);
	/* a cut never reaches back past a fresh filesystem */
	if (!ret && e->cuts)
		ret = hw_flush(e->dev);
	if (!ret && e->cuts && e->rtdev)
		ret = hw_flush(e->rtdev);
	return ret;
}

/*
 * A cut op: arm its plan (point > 0 on a device that takes one), or cut
 * now (point 0, or the cut the checker asks for once the power failed:
 * the armed seed).  A crash op cuts keeping all.
 */
static int engine_cut(struct engine *e, const struct op *op)
{
	struct hw_crash_plan plan;
	struct hw_cut cut;
	int ret;

	cut_model(op->kind == OP_CUT ? op->arg : 0, &plan, &cut);
	if (op->kind == OP_CRASH)
		cut.kind = HW_CUT_KEEP_ALL;
	if (op->kind == OP_CUT) {
		/* a new cut replaces an armed one (-EBUSY: it failed already) */
		int off = hw_crash_set_plan(e->dev, NULL) == -EBUSY;

		e->armed = 0;
		if (plan.fail_at && !off && !hw_crash_set_plan(e->dev, &plan)) {
			e->armed = 1;
			return 0;
		}
	}
	drop_fs(e);
	ret = hw_crash_cut(e->dev, &cut);
	return ret ? ret : do_mount(e);
}

static int engine_power(struct target *t)
{
	struct engine *e = to_engine(t);
	uint64_t lost;

	if (!e->armed || hw_crash_power_off(e->dev, &lost) != 1)
		return TARGET_POWER_ON;
	return lost ? TARGET_POWER_LOST : TARGET_POWER_FAILED;
}

static int64_t engine_injected(struct target *t)
{
	struct engine *e = to_engine(t);
	int64_t n = hw_fault_fired(e->dev), rt;

	n = n > 0 ? n : 0; /* -EINVAL: no faulty layer in its stack */
	rt = e->rtdev ? hw_fault_fired(e->rtdev) : 0;
	return n + (rt > 0 ? rt : 0);
}

/* The inode of file i; create it when asked and missing. */
static int get_ino(struct engine *e, unsigned i, int create, uint64_t *ino)
{
	int ret;

	if (!e->fs)
		return -EIO;
	/* Names can change under us (target_set_names): check the name. */
	if ((e->known & (1u << i)) && !strcmp(e->cached_name[i], e->t.names[i])) {
		*ino = e->ino[i];
		return 0;
	}
	ret = ref_lookup(e->fs, e->t.names[i], ino);
	if (ret == -ENOENT && create)
		ret = ref_create(e->fs, e->t.names[i], ino);
	if (ret)
		return ret;
	e->ino[i] = *ino;
	e->known |= 1u << i;
	memcpy(e->cached_name[i], e->t.names[i], sizeof(e->cached_name[i]));
	return 0;
}

/* Write all n bytes, or the error that stopped it: a short write is
 * retried from where it stopped, which says why (-ENOSPC, say). */
static int write_all(struct engine *e, uint64_t ino, const uint8_t *buf,
		     uint64_t n, uint64_t off)
{
	for (uint64_t done = 0; done < n;) {
		int64_t r = ref_pwrite(e->fs, ino, buf + done, n - done,
				       off + done);

		if (r <= 0)
			return r ? (int)r : -EIO;
		done += (uint64_t)r;
	}
	return 0;
}

/* Swap [aoff, +len) of a with [boff, +len) of b (two files) by bytes. */
static int swap_bytes(struct engine *e, uint64_t a, uint64_t aoff, uint64_t b,
		      uint64_t boff, uint64_t len)
{
	size_t chunk = 1u << 16;
	uint8_t *x = malloc(chunk), *y = malloc(chunk);
	int ret = x && y ? 0 : -ENOMEM;

	for (uint64_t done = 0; !ret && done < len; done += chunk) {
		uint64_t n = len - done < chunk ? len - done : chunk;
		int64_t r = ref_pread(e->fs, a, x, n, aoff + done);

		if (r == (int64_t)n)
			r = ref_pread(e->fs, b, y, n, boff + done);
		ret = r < 0 ? (int)r : r != (int64_t)n ? -EIO : 0;
		if (!ret)
			ret = write_all(e, a, y, n, aoff + done);
		if (!ret)
			ret = write_all(e, b, x, n, boff + done);
	}
	free(x);
	free(y);
	return ret;
}

/*
 * Exchange range: ino is the op's file (xfs_io's open file), the donor
 * is file2.  The engine aligns to each file's unit (the block; the rt
 * extent of a realtime file), the model to the target's blocksize for
 * every file: where the two differ, the model's rules go first.  The
 * engine refuses to swap between a realtime file and another, as XFS
 * does (the mappings are of two devices); the model has no realtime
 * files and swaps the bytes, and so does this target then, by reads and
 * writes (see the top: layout refusals answered as the model answers).
 */
static int exchange(struct engine *e, uint64_t ino, const struct op *op)
{
	struct ref_stat s1, s2;
	uint64_t src;
	int ret = get_ino(e, op->file2 % OP_MAX_FILES, 1, &src);
	int rt1, rt2;

	if (!ret)
		ret = ref_stat(e->fs, ino, &s1);
	if (!ret)
		ret = ref_stat(e->fs, src, &s2);
	if (ret)
		return ret;
	rt1 = !!(s1.flags & REF_FLAG_REALTIME);
	rt2 = !!(s2.flags & REF_FLAG_REALTIME);
	if (rt1 != rt2 || (!rt1 && e->t.blocksize != s1.blocksize)) {
		ret = exchange_range_checks(op->arg, s1.size, op->off, s2.size,
					    op->len, e->t.blocksize, ino == src);
		if (ret || op->len == 0)
			return ret;
		if (rt1 != rt2)
			return swap_bytes(e, ino, op->arg, src, op->off, op->len);
	}
	return ref_exchange_range(e->fs, ino, op->arg, src, op->off, op->len);
}

struct ref_fs *engine_target_fs(struct target *t)
{
	return to_engine(t)->fs;
}

struct hw_dev *engine_target_dev(struct target *t)
{
	return to_engine(t)->dev;
}

int engine_target_format(struct target *t)
{
	struct engine *e = to_engine(t);

	if (e->keep) /* someone's image: never made again */
		return -EOPNOTSUPP;
	drop_fs(e);
	e->formatted = 0;
	return ref_mkfs(e->dev, &e->mkfs);
}

void engine_target_formatted(struct target *t)
{
	to_engine(t)->formatted = 1;
}

/*
 * One op on the engine: the path switches, cuts, namespace and
 * filesystem-wide ops first, then the file ops, one case per kind.  It
 * stays in one piece: it is the target's op table, each case a call or
 * two into ref/, read beside the model's and the host's (model_apply,
 * host_apply).
 */
static int64_t engine_apply(struct target *t, const struct op *op,
			    const void *wbuf, void *rbuf)
{
	struct engine *e = to_engine(t);
	unsigned f = op->file % OP_MAX_FILES;
	uint64_t ino;
	int ret;

	if (t->unsupported & (1ull << op->kind))
		return -EOPNOTSUPP;
	if (op->kind == OP_NAIVE || op->kind == OP_FALLBACK)
		return set_paths(e, op);
	if (op->kind == OP_CUT || (op->kind == OP_CRASH && e->cuts))
		return engine_cut(e, op);
	if (!e->fs && op->kind != OP_CRASH && op->kind != OP_REMOUNT)
		return -EIO; /* a failed mount left no filesystem */

	switch (op->kind) {
	case OP_OPEN:
		return get_ino(e, f, op->flags & OP_FL_CREATE, &ino);
	case OP_CLOSE:
		return 0;
	case OP_UNLINK:
		e->known &= ~(1u << f);
		return ref_unlink(e->fs, t->names[f]);
	case OP_SYNC:
		return ref_sync(e->fs);
	case OP_WRITEBACK:
		return ref_writeback(e->fs, 0);
	case OP_DROP_CACHES:
		return ref_drop_caches(e->fs);
	case OP_REMOUNT:
		if (e->fs) {
			ret = ref_unmount(e->fs);
			e->fs = NULL;
			e->gone = ret;
			if (ret)
				return ret;
		}
		return do_mount(e);
	case OP_CRASH:
		drop_fs(e);
		return do_mount(e);
	default:
		break;
	}

	ret = get_ino(e, f, 1, &ino);
	if (ret)
		return ret;
	switch (op->kind) {
	case OP_PWRITE:
		return ref_pwrite(e->fs, ino, wbuf, op->len, op->off);
	case OP_PREAD:
		return ref_pread(e->fs, ino, rbuf, op->len, op->off);
	case OP_TRUNCATE:
		return ref_truncate(e->fs, ino, op->arg);
	case OP_FALLOC:
		/* No shared extents exist before the COW issue, so unshare
		 * is a plain allocation. */
		return ref_fallocate(e->fs, ino, (op->flags & OP_FL_KEEP_SIZE) ?
				     REF_FALLOC_KEEP_SIZE : 0, op->off, op->len);
	case OP_FPUNCH:
		return ref_fallocate(e->fs, ino, REF_FALLOC_KEEP_SIZE |
				     REF_FALLOC_PUNCH_HOLE, op->off, op->len);
	case OP_FZERO:
		return ref_fallocate(e->fs, ino, REF_FALLOC_ZERO_RANGE |
				     ((op->flags & OP_FL_KEEP_SIZE) ?
				      REF_FALLOC_KEEP_SIZE : 0), op->off, op->len);
	case OP_FCOLLAPSE:
		if (!shift_aligned(e, op))
			return -EINVAL;
		return ref_fallocate(e->fs, ino, REF_FALLOC_COLLAPSE_RANGE,
				     op->off, op->len);
	case OP_FINSERT:
		if (!shift_aligned(e, op))
			return -EINVAL;
		return ref_fallocate(e->fs, ino, REF_FALLOC_INSERT_RANGE,
				     op->off, op->len);
	case OP_COPY_RANGE: {
		uint64_t src;

		ret = get_ino(e, op->file2 % OP_MAX_FILES, 1, &src);
		if (ret)
			return ret;
		return ref_copy_range(e->fs, ino, op->arg, src, op->off, op->len);
	}
	case OP_CLONE_RANGE:
	case OP_DEDUPE_RANGE: { /* reflink=1 only (else unsupported) */
		uint64_t src;
		int64_t r;

		ret = get_ino(e, op->file2 % OP_MAX_FILES, 1, &src);
		if (ret)
			return ret;
		r = op->kind == OP_CLONE_RANGE ?
		    ref_clone_range(e->fs, ino, op->arg, src, op->off, op->len) :
		    ref_dedupe_range(e->fs, ino, op->arg, src, op->off, op->len);
		return r > 0 ? 0 : r; /* as the model: 0, whatever was shared */
	}
	case OP_EXCHANGE_RANGE:
		return exchange(e, ino, op);
	case OP_FSYNC:
		return ref_fsync(e->fs, ino);
	case OP_FDATASYNC:
		return ref_fdatasync(e->fs, ino);
	case OP_SET_FLAG:
		return set_flag(e, ino, op);
	default:
		return -EOPNOTSUPP;
	}
}

static int64_t engine_size(struct target *t, unsigned file)
{
	struct engine *e = to_engine(t);
	struct ref_stat st;
	uint64_t ino;
	int ret = get_ino(e, file % OP_MAX_FILES, 0, &ino);

	if (!ret)
		ret = ref_stat(e->fs, ino, &st);
	return ret ? ret : (int64_t)st.size;
}

static int64_t engine_read(struct target *t, unsigned file, uint64_t off,
			   void *buf, size_t len)
{
	struct engine *e = to_engine(t);
	uint64_t ino;
	int ret = get_ino(e, file % OP_MAX_FILES, 0, &ino);

	if (ret)
		return ret;
	return ref_pread(e->fs, ino, buf, len, off);
}

/* The read above, its bytes handed to fn where the page cache holds them. */
static int64_t engine_view(struct target *t, unsigned file, uint64_t off,
			   size_t len, target_view_fn fn, void *arg)
{
	struct engine *e = to_engine(t);
	uint64_t ino;
	int ret = get_ino(e, file % OP_MAX_FILES, 0, &ino);

	if (ret)
		return ret;
	return ref_pview(e->fs, ino, len, off, fn, arg);
}

struct ranges_ctx {
	target_range_fn fn;
	void *arg;
	uint32_t bs;
};

static int range_one(void *arg, const struct ref_extent *x)
{
	struct ranges_ctx *rc = arg;
	struct target_range r = {
		.off = x->fileoff * rc->bs, .len = x->len * rc->bs,
		.kind = (x->state & REF_EXT_UNWRITTEN) ? TARGET_RANGE_UNWRITTEN :
							  TARGET_RANGE_DATA,
	};

	return rc->fn(rc->arg, &r);
}

/* The data fork's records; delalloc pages are holes there (cached data). */
static int engine_ranges(struct target *t, unsigned file, target_range_fn fn,
			 void *arg)
{
	struct engine *e = to_engine(t);
	struct ranges_ctx rc = { fn, arg, 0 };
	uint64_t ino;
	int ret = get_ino(e, file % OP_MAX_FILES, 0, &ino);

	if (ret)
		return ret;
	rc.bs = ref_blocksize(e->fs);
	return ref_bmap(e->fs, ino, range_one, &rc);
}

/* statfs's avail counts, of the device the file's data goes to. */
static int engine_space(struct target *t, unsigned file,
			struct target_space *sp)
{
	struct engine *e = to_engine(t);
	struct ref_statfs sf;
	struct ref_stat st = { 0 };
	uint64_t ino;
	int ret = e->fs ? ref_statfs(e->fs, &sf) : -EIO;

	if (ret)
		return ret;
	if (!get_ino(e, file % OP_MAX_FILES, 0, &ino))
		ret = ref_stat(e->fs, ino, &st);
	if (ret)
		return ret;
	sp->meta_avail = sf.meta_avail_blocks * sf.blocksize;
	sp->free_inodes = sf.free_inodes;
	sp->map_insert = st.map_levels + 1;
	sp->meta_block = sf.blocksize;
	if (st.flags & REF_FLAG_REALTIME) {
		sp->avail = sf.rt_avail_blocks * sf.blocksize;
		sp->capacity = sf.rt_blocks * sf.blocksize;
		sp->unit = sf.rtextsize;
	} else {
		sp->avail = sf.avail_blocks * sf.blocksize;
		sp->capacity = sf.data_blocks * sf.blocksize;
		sp->unit = sf.blocksize;
	}
	return 0;
}

struct list_ctx {
	struct engine *e;
	uint32_t mask;
	int stray;     /* names that are none of ours */
};

static int list_one(void *arg, const char *name, uint64_t ino)
{
	struct list_ctx *lc = arg;

	for (unsigned i = 0; i < OP_MAX_FILES; i++)
		if (strcmp(lc->e->t.names[i], name) == 0) {
			lc->mask |= 1u << i;
			return 0;
		}
	lc->stray++;
	return 0;
}

static int engine_list(struct target *t, uint32_t *mask)
{
	struct engine *e = to_engine(t);
	struct list_ctx lc = { e, 0, 0 };
	int ret;

	if (!e->fs)
		return -EIO;
	ret = ref_readdir(e->fs, list_one, &lc);
	*mask = lc.mask;
	if (!ret && lc.stray)
		ret = -EUCLEAN; /* a name nobody created */
	return ret;
}

static void audit_msg(void *arg, const char *line)
{
	struct engine *e = arg;

	if (e->audit_msg && e->audit_len && !e->audit_msg[0])
		snprintf(e->audit_msg, e->audit_len, "%s", line);
}

static int engine_audit(struct target *t, char *msg, size_t msglen)
{
	struct engine *e = to_engine(t);
	int ret;

	if (!e->fs) {
		snprintf(msg, msglen, "no mounted filesystem (last message: %s)",
			 e->msg[0] ? e->msg : "none");
		return e->gone ? e->gone : -EIO;
	}
	if (msglen)
		msg[0] = 0;
	e->audit_msg = msg;
	e->audit_len = msglen;
	ret = ref_audit(e->fs, audit_msg, e);
	e->audit_msg = NULL;
	if (ret && msglen && !msg[0])
		snprintf(msg, msglen, "%s", ref_strerror(ret));
	return ret;
}

/* "extra,own" (own wins, being later), or either alone. */
static void join_opts(char *buf, size_t len, const char *extra,
		      const char *own)
{
	snprintf(buf, len, "%s%s%s", extra, extra[0] && own[0] ? "," : "", own);
}

/* Parse mkfs and mount options into the target: at open and per round. */
static int engine_options(struct engine *e, const char *mkfs,
			  const char *mount, char *err, size_t errlen)
{
	struct ref_mkfs_opts mk = { 0 };
	struct ref_mount_opts mn = { 0 };
	int ret = ref_parse_mkfs_opts(mkfs, &mk, err, errlen);

	if (!ret)
		ret = ref_parse_mount_opts(mount, &mn, err, errlen);
	if (ret)
		return ret;
	mk.rtdev = e->rtdev;
	if (e->pin == ENGINE_NAIVE)
		mn.naive = REF_PATHS_ALL;
	if (e->pin == ENGINE_FALLBACK)
		mn.fallback = REF_PATHS_ALL;
	e->mkfs = mk;
	e->mnt = mn;
	e->base_naive = mn.naive;
	e->base_fallback = mn.fallback;
	return 0;
}

static int engine_set_round(struct target *t, const char *mkfs,
			    const char *mount)
{
	struct engine *e = to_engine(t);
	char mk[2 * OP_HDR_STR], mn[2 * OP_HDR_STR], err[200];

	mkfs = mkfs ? mkfs : "";
	mount = mount ? mount : "";
	if (e->keep && (mkfs[0] || mount[0]))
		return -EOPNOTSUPP;
	if (mkfs[0]) /* another filesystem than the devices hold */
		e->formatted = 0;
	join_opts(mk, sizeof(mk), mkfs, e->own_mkfs);
	join_opts(mn, sizeof(mn), mount, e->own_mount);
	return engine_options(e, mk, mn, err, sizeof(err));
}

/* A round ends: no power failure carries over. */
static int engine_disarm(struct engine *e)
{
	if (!e->armed)
		return 0;
	e->armed = 0;
	hw_crash_set_plan(e->dev, NULL);
	return hw_crash_cut(e->dev, NULL);
}

/* A kept image's first name that is none of the log's (stops there). */
struct other_name {
	const struct target *t;
	char name[OP_NAME_MAX + 1];
};

static int other_name(void *arg, const char *name, uint64_t ino)
{
	struct other_name *o = arg;

	(void)ino;
	for (unsigned i = 0; i < OP_MAX_FILES; i++)
		if (strcmp(o->t->names[i], name) == 0)
			return 0;
	snprintf(o->name, sizeof(o->name), "%s", name);
	return 1;
}

/*
 * Back to no files.  A kept image (target_env.keep_image) keeps its
 * format: its files go one by one, so a run tests the filesystem someone
 * made with `fsoracle mkfs`, not one we made.  A file there that the op
 * log never names would be a stray to every listing after it, so such an
 * image is refused (-ENOTEMPTY, the name in t->why).
 */
static int engine_reset(struct target *t)
{
	struct engine *e = to_engine(t);
	struct other_name other = { .t = t };
	int ret = 0;

	t->why[0] = 0;
	e->mnt.naive = e->base_naive;
	e->mnt.fallback = e->base_fallback;
	ret = engine_disarm(e);
	if (ret)
		return ret;
	if (!e->keep)
		return do_mkfs_mount(e);
	if (e->fs)
		ref_set_paths(e->fs, e->mnt.naive, e->mnt.fallback);
	if (!e->fs)
		ret = do_mount(e);
	/* refused before anything is unlinked: the image stays as it was */
	if (!ret)
		ret = ref_readdir(e->fs, other_name, &other);
	if (!ret && other.name[0]) {
		snprintf(t->why, sizeof(t->why), "the image holds '%s', a file "
			 "the op log does not name: --keep-image needs an image "
			 "holding no other files", other.name);
		return -ENOTEMPTY;
	}
	for (unsigned i = 0; i < OP_MAX_FILES && !ret; i++) {
		ret = ref_unlink(e->fs, t->names[i]);
		if (ret == -ENOENT)
			ret = 0;
	}
	e->known = 0;
	return ret ? ret : ref_sync(e->fs);
}

/* A cut armed and not reached undone, and a RAM filesystem dropped now
 * (a kept image keeps its filesystem for reset). */
static int engine_release(struct target *t)
{
	struct engine *e = to_engine(t);
	int ret = engine_disarm(e);

	if (ret)
		return ret;
	if (!e->keep)
		drop_fs(e);
	return 0;
}

static void engine_destroy(struct target *t)
{
	struct engine *e = to_engine(t);

	/* A persistent image is left clean (unmounted), a RAM one dropped. */
	if (e->fs && e->dev && (hw_caps(e->dev) & HW_CAP_PERSISTENT))
		ref_unmount(e->fs);
	else if (e->fs)
		ref_abandon(e->fs);
	if (e->dev)
		hw_close(e->dev);
	if (e->rtdev)
		hw_close(e->rtdev);
	free(e);
}

static const struct target_ops engine_ops = {
	.apply = engine_apply,
	.size = engine_size,
	.read = engine_read,
	.view = engine_view,
	.list = engine_list,
	.ranges = engine_ranges,
	.space = engine_space,
	.set_round = engine_set_round,
	.audit = engine_audit,
	.twin = engine_twin_state,
	.power = engine_power,
	.injected = engine_injected,
	.reset = engine_reset,
	.release = engine_release,
	.destroy = engine_destroy,
};

int engine_target_pin(const struct target *t)
{
	return t->ops == &engine_ops ? (int)to_engine((struct target *)t)->pin :
				       -1;
}

int engine_target_settle(struct target *t, bool settled)
{
	struct engine *e;

	if (t->ops != &engine_ops)
		return 0;
	e = to_engine(t);
	return e->cuts ? hw_crash_settle(e->dev, settled) : 0;
}

const char *engine_target_alone(const struct target *t)
{
	struct hw_dev *dev[2];

	if (t->ops != &engine_ops)
		return NULL;
	dev[0] = ((const struct engine *)t)->dev;
	dev[1] = ((const struct engine *)t)->rtdev;
	for (int i = 0; i < 2; i++) {
		if (!dev[i])
			continue;
		if (hw_caps(dev[i]) & HW_CAP_PERSISTENT)
			return "keeps its bytes on a persistent device, which "
			       "every worker would share";
		if (hw_fault_fired(dev[i]) >= 0)
			return "has a faulty layer, whose I/O counts run across "
			       "rounds: which round met a fault would depend on "
			       "the worker that ran it";
	}
	return NULL;
}

/*
 * Can spec take a crash layer (see the top)?  Not null: or zoned:null,
 * whose data is gone anyway, nor zbd:, real zoned hardware, whose write
 * pointers a cut cannot move back.
 */
static int cuttable(const char *spec)
{
	return strncmp(spec, "null:", 5) && strncmp(spec, "zbd:", 4) &&
	       strncmp(spec, "zoned:null", 10);
}

/* Open spec, under a crash layer when cuts is set and it has none. */
static int open_dev(const char *spec, int cuts, struct hw_dev **dev,
		    char *err, size_t errlen)
{
	char buf[600];

	if (cuts && !strstr(spec, "crash:") && !strstr(spec, "crash[") &&
	    (size_t)snprintf(buf, sizeof(buf), "crash:%s", spec) < sizeof(buf))
		spec = buf;
	return hw_open(spec, dev, err, errlen);
}

/*
 * The data device and the realtime device (rt: NULL for none), with
 * crash layers in one power domain for power cuts (see the top).
 */
static int open_devs(struct engine *e, const char *dev, const char *rt,
		     int cuts, char *err, size_t errlen)
{
	int ret;

	if (cuts && !(cuttable(dev) && (!rt || cuttable(rt)))) {
		size_t n = strlen(e->t.note);

		snprintf(e->t.note + n, sizeof(e->t.note) - n, "; no power cut "
			 "on zbd: (its zones cannot be rewound), null:, "
			 "zoned:null");
		cuts = 0;
	}
	ret = open_dev(dev, cuts, &e->dev, err, errlen);
	if (!ret && rt)
		ret = open_dev(rt, cuts, &e->rtdev, err, errlen);
	if (ret)
		return ret;
	if (rt && (ret = hw_spec_apart(dev, rt, err, errlen)))
		return ret;
	e->cuts = hw_crash_pending(e->dev) >= 0 &&
		  (!rt || (hw_crash_pending(e->rtdev) >= 0 &&
			   hw_crash_join(e->dev, e->rtdev) == 0));
	if (!e->cuts)
		e->t.unsupported |= 1ull << OP_CUT;
	return 0;
}

int engine_target_new(const char *dev, enum engine_pin pin,
		      const struct target_env *env, struct target **out,
		      char *err, size_t errlen)
{
	struct engine *e = calloc(1, sizeof(*e));
	int ret;

	if (!e) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->t.ops = &engine_ops;
	e->t.caps = TARGET_CRASHES | TARGET_AUDITS;
	e->t.unsupported = ENGINE_UNSUPPORTED;
	snprintf(e->t.note, sizeof(e->t.note), "clone and dedupe need mkfs "
		 "reflink=1");
	snprintf(e->t.name, sizeof(e->t.name), "%s:%s",
		 pin == ENGINE_NAIVE ? "naive" :
		 pin == ENGINE_FALLBACK ? "fallback" : "engine", dev);
	target_set_names(&e->t, NULL);
	e->pin = pin;
	snprintf(e->own_mkfs, sizeof(e->own_mkfs), "%s",
		 env && env->mkfs ? env->mkfs : "");
	snprintf(e->own_mount, sizeof(e->own_mount), "%s",
		 env && env->mount ? env->mount : "");
	ret = open_devs(e, dev, env && env->rtdev && env->rtdev[0] ?
			env->rtdev : NULL, env && env->power_cuts, err, errlen);
	if (!ret)
		ret = engine_options(e, e->own_mkfs, e->own_mount, err, errlen);
	if (ret)
		goto out_error;
	if (!(hw_caps(e->dev) & HW_CAP_STORES_DATA) ||
	    (e->rtdev && !(hw_caps(e->rtdev) & HW_CAP_STORES_DATA)) ||
	    (e->mnt.flags & REF_MOUNT_NOPAGEDATA))
		e->t.caps |= TARGET_NO_DATA;
	ret = ref_mkfs_check(&e->mkfs, e->dev, e->rtdev, err, errlen);
	if (ret)
		goto out_error;
	e->keep = env && env->keep_image &&
		  (hw_caps(e->dev) & HW_CAP_PERSISTENT);
	if (!e->keep) {
		char why[200];

		ret = ref_mkfs_fits(e->dev, &e->mkfs, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s: cannot format: %s", dev, why);
			goto out_error;
		}
	}
	if (e->keep)
		ret = do_mount(e);
	else
		ret = do_mkfs_mount(e);
	if (ret) {
		snprintf(err, errlen, "%s: %s failed: %s%s%.150s", dev,
			 env && env->keep_image ? "mount" : "mkfs/mount",
			 ref_strerror(ret), e->msg[0] ? ": " : "", e->msg);
		goto out_error;
	}
	*out = &e->t;
	return 0;
out_error:
	engine_destroy(&e->t);
	return ret;
}
