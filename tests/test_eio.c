/*
 * test_eio.c - an I/O error at each device I/O of a sequence.
 *
 * For n = 1, 2, ... the sequence runs on a fresh filesystem over
 * "faulty:mem:" with a fault armed to fail the nth write or flush (once,
 * or from then on: a device that died).  The sequence stops at the first
 * operation that fails.  Then:
 *
 *   - if the fault fired, some operation must have returned an error (an
 *     I/O error never vanishes silently);
 *   - the engine is abandoned (as after a power cut: nothing more is
 *     written), the fault disarmed, and the image must mount, replay its
 *     log, pass the audit and fsck, and the file fsynced before the
 *     sequence must read back exactly as written.
 *
 * n grows until the sequence completes without reaching the nth I/O.
 */
#include "tests/test_engine_util.h"

#define KEEP_LEN (64 * 1024)

/* The sequence: writes, overwrites, truncates, punches, fsyncs, unlink. */
static int sequence(struct efs *z, struct shadow *w)
{
	uint64_t ino2;

	if (sh_write(z->fs, w, 2, 0, 40000) ||
	    ref_fsync(z->fs, w->ino) ||
	    sh_write(z->fs, w, 3, 12000, 30000) ||
	    sh_truncate(z->fs, w, 20000) ||
	    sh_punch(z->fs, w, 4096, 8192) ||
	    ref_fdatasync(z->fs, w->ino) ||
	    ref_create(z->fs, "tmp", &ino2) ||
	    ref_pwrite(z->fs, ino2, w->b, 9000, 0) != 9000 ||
	    ref_unlink(z->fs, "tmp") ||
	    sh_write(z->fs, w, 4, 100000, 5000) ||
	    ref_sync(z->fs))
		return -1;
	return 0;
}

/* One run with the fault at the nth write or flush; 1 when the sequence
 * completed without the fault firing (n is past its last I/O). */
static int run_nth(uint64_t n, bool sticky, int *bad)
{
	struct efs z = { 0 };
	struct shadow keep = { .b = calloc(1, SHADOW_MAX) };
	struct shadow work = { .b = calloc(1, SHADOW_MAX) };
	struct hw_fault f = { .ops = HW_FAULT_WRITE | HW_FAULT_FLUSH,
			      .nth = n, .sticky = sticky };
	int failed, done = 0;

	*bad = 1;
	if (!keep.b || !work.b || e_new(&z, "faulty:mem:8m", NULL, 0))
		goto out;
	if (ref_create(z.fs, "keep", &keep.ino) ||
	    sh_write(z.fs, &keep, 1, 0, KEEP_LEN) ||
	    ref_fsync(z.fs, keep.ino) || ref_create(z.fs, "work", &work.ino))
		goto out;
	if (hw_fault_arm(z.dev, &f) < 0)
		goto out;
	failed = sequence(&z, &work);
	if (hw_fault_fired(z.dev) == 0) {
		done = 1;
		if (failed) {
			fprintf(stderr, "    n=%llu: an op failed with no fault\n",
				(unsigned long long)n);
			goto out;
		}
	} else if (!failed) {
		fprintf(stderr, "    n=%llu%s: the fault fired but every op "
			"succeeded\n", (unsigned long long)n,
			sticky ? " sticky" : "");
		goto out;
	}
	hw_fault_disarm(z.dev, -1);
	ref_abandon(z.fs);
	z.fs = NULL;
	if (e_mount(&z)) {
		fprintf(stderr, "    n=%llu: mount after the error: %s",
			(unsigned long long)n, msgs);
		goto out;
	}
	if (audit(z.fs)) {
		fprintf(stderr, "    n=%llu: audit: %s", (unsigned long long)n,
			msgs);
		goto out;
	}
	if (!sh_matches(z.fs, &keep)) {
		fprintf(stderr, "    n=%llu: the fsynced file changed\n",
			(unsigned long long)n);
		goto out;
	}
	if (e_cycle(&z, &keep)) {
		fprintf(stderr, "    n=%llu: unmount/fsck/mount: %s",
			(unsigned long long)n, msgs);
		goto out;
	}
	*bad = 0;
out:
	e_close(&z);
	free(keep.b);
	free(work.b);
	return done;
}

static void every_io(bool sticky)
{
	uint64_t n;
	int bad = 0;

	for (n = 1; n < 100000 && !bad; n++)
		if (run_nth(n, sticky, &bad))
			break;
	CHECK_MSG(!bad, "fault at I/O %llu%s", (unsigned long long)n,
		  sticky ? " (sticky)" : "");
	CHECK(n > 10);   /* the sequence did I/O and every point was tried */
	if (getenv("FSO_EIO_VERBOSE"))
		fprintf(stderr, "    %llu I/O points tried\n", (unsigned long long)n);
}

TEST(eio_once_at_each_io_reaches_the_caller_and_loses_nothing_fsynced)
{
	every_io(false);
}

TEST(device_dying_at_each_io_reaches_the_caller_and_loses_nothing_fsynced)
{
	every_io(true);
}

/*
 * A writeback that fails part way (the nth page's write) leaves the
 * filesystem whole while it is still mounted: the audit of the live
 * engine passes (the pages not written are dirty again, none left tagged
 * towrite), and once the device is well the same fsync writes them all.
 */
static void failed_writeback_at(uint64_t n, int *bad)
{
	struct efs z = { 0 };
	struct shadow w = { .b = calloc(1, SHADOW_MAX) };
	struct hw_fault f = { .ops = HW_FAULT_WRITE, .nth = n };
	const char *what;

	*bad = 1;
	if (!w.b || e_new(&z, "faulty:mem:8m", NULL, 0) ||
	    ref_create(z.fs, "f", &w.ino))
		goto out;
	for (unsigned i = 0; i < 6; i++) /* six blocks, apart */
		if (sh_write(z.fs, &w, 1 + i, 2 * i * BS, BS))
			goto out;
	if (ref_fsync(z.fs, w.ino))
		goto out;
	for (unsigned i = 0; i < 6; i++) /* overwritten: six dirty pages */
		if (sh_write(z.fs, &w, 7 + i, 2 * i * BS, BS))
			goto out;
	if (hw_fault_arm(z.dev, &f) < 0)
		goto out;
	if (ref_fsync(z.fs, w.ino) == 0 && hw_fault_fired(z.dev)) {
		fprintf(stderr, "    n=%llu: the fault fired, fsync passed\n",
			(unsigned long long)n);
		goto out;
	}
	what = "audit after the failed fsync";
	if (audit(z.fs) == 0) {
		hw_fault_disarm(z.dev, -1);
		what = "fsync again, audit, remount";
		*bad = ref_fsync(z.fs, w.ino) || audit(z.fs) || e_cycle(&z, &w);
	}
	if (*bad)
		fprintf(stderr, "    n=%llu: %s: %s", (unsigned long long)n, what,
			msgs);
out:
	e_close(&z);
	free(w.b);
}

TEST(failed_writeback_leaves_pages_dirty_and_the_live_audit_clean)
{
	int bad = 0;

	for (uint64_t n = 1; n <= 6 && !bad; n++)
		failed_writeback_at(n, &bad);
	CHECK(!bad);
}

/*
 * A write that commits on its way does not count a step whose commit
 * failed: it is short (or fails; a failed commit shuts the engine down,
 * and then it fails), never its whole length once a fault has fired
 * inside it.  A
 * journaled-data file's writes fill the 64-block log and roll its
 * transaction; the lengths tried are the shortest that roll once and
 * twice, whose last step is the roll (the step whose error a write could
 * drop).  n runs over every write and flush the write does.
 */
#define ROLL_MAX_BLOCKS 200

/* The write of blocks blocks with a fault at its nth write or flush
 * (n 0: none); 1 when the fault did not fire.  *rolls: the write's. */
static int commit_fault_at(uint64_t blocks, uint64_t n, uint64_t *rolls,
			   int *bad)
{
	struct efs z = { 0 };
	uint64_t len = blocks * BS, ino;
	uint8_t *buf = malloc(len);
	struct hw_fault f = { .ops = HW_FAULT_WRITE | HW_FAULT_FLUSH,
			      .nth = n };
	int64_t r;
	int done = 0;

	*bad = 1;
	if (!buf || e_new(&z, "faulty:mem:8m", NULL, 0) ||
	    ref_create(z.fs, "j", &ino) ||
	    ref_set_flags(z.fs, ino, REF_FLAG_JOURNAL_DATA, 0) ||
	    (n && hw_fault_arm(z.dev, &f) < 0))
		goto out;
	memset(buf, 0x5a, len);
	*rolls = ref_counters(z.fs)->tx_rolls;
	r = ref_pwrite(z.fs, ino, buf, len, 0);
	*rolls = ref_counters(z.fs)->tx_rolls - *rolls;
	if (!n || hw_fault_fired(z.dev) == 0) {
		done = 1;
		*bad = r != (int64_t)len;
		if (*bad)
			fprintf(stderr, "    %llu blocks, n=%llu: no fault, the "
				"write returned %lld\n", (unsigned long long)blocks,
				(unsigned long long)n, (long long)r);
	} else if (r == (int64_t)len) {
		fprintf(stderr, "    %llu blocks, n=%llu: the fault fired, the "
			"write returned its whole length\n",
			(unsigned long long)blocks, (unsigned long long)n);
	} else {
		*bad = 0;
	}
	hw_fault_disarm(z.dev, -1);
	/* what the engine holds still adds up, or a failed commit shut it
	 * down (ref.h) */
	if (!*bad && !ref_shutdown_error(z.fs) && audit(z.fs)) {
		fprintf(stderr, "    %llu blocks, n=%llu: audit after the "
			"write: %s", (unsigned long long)blocks,
			(unsigned long long)n, msgs);
		*bad = 1;
	}
	ref_abandon(z.fs);
	z.fs = NULL;
out:
	e_close(&z);
	free(buf);
	return done;
}

TEST(a_write_never_counts_a_step_whose_commit_failed)
{
	uint64_t blocks, rolls = 0, want = 1;
	int bad = 0;

	for (blocks = 1; blocks <= ROLL_MAX_BLOCKS && want <= 2 && !bad;
	     blocks++) {
		uint64_t n;

		commit_fault_at(blocks, 0, &rolls, &bad);
		if (bad || rolls < want)
			continue;
		want = rolls + 1;
		for (n = 1; n < 10000; n++)
			if (commit_fault_at(blocks, n, &rolls, &bad) || bad)
				break;
		CHECK_MSG(!bad, "%llu blocks, fault at I/O %llu",
			  (unsigned long long)blocks, (unsigned long long)n);
		CHECK(n > blocks); /* every data and log write was tried */
	}
	CHECK(!bad);
	CHECK_EQ(want, 3); /* writes that roll once and twice were tried */
}

/*
 * A data error after a piece already written is a short write, as POSIX
 * has it, on the delayed path too: block 0 (written, so overwritten in
 * the cache) counts, block 1 (unwritten, written on the device) fails.
 */
TEST(a_data_error_after_a_written_piece_is_a_short_write)
{
	struct efs z = { 0 };
	struct ref_mount_opts mo = { .msg = collect_msg };
	struct hw_fault f = { .ops = HW_FAULT_WRITE, .nth = 1 };
	static uint8_t buf[2 * BS];
	uint64_t ino;

	memset(buf, 0x3c, sizeof(buf));
	CHECK_OK(e_new(&z, "faulty:mem:8m", NULL, 0));
	CHECK_OK(ref_unmount(z.fs));
	z.fs = NULL;
	CHECK_OK(ref_parse_mount_opts("delalloc,pagecache=64", &mo, NULL, 0));
	CHECK_OK(ref_mount(z.dev, &mo, &z.fs));
	CHECK_OK(ref_create(z.fs, "f", &ino));
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, BS, 0), BS);
	CHECK_OK(ref_fsync(z.fs, ino));
	CHECK_OK(ref_fallocate(z.fs, ino, REF_FALLOC_KEEP_SIZE, BS, BS));
	CHECK_OK(ref_fsync(z.fs, ino));
	CHECK(hw_fault_arm(z.dev, &f) >= 0);
	CHECK_EQ(ref_pwrite(z.fs, ino, buf, sizeof(buf), 0), BS);
	CHECK_EQ(hw_fault_fired(z.dev), 1);
	hw_fault_disarm(z.dev, -1);
	CHECK_OK(audit(z.fs));
	e_close(&z);
}

/*
 * A metadata read that fails inside an op: the op fails, and the engine
 * goes on whole.  With a one-buffer metadata cache every B+tree walk
 * reads its nodes from the device, so for n = 1, 2, ... the nth device
 * read fails (once) somewhere in the middle of an update: a punch, a
 * collapse or insert, a zero range, a truncate, a create, an unlink, a
 * rename, a copy, an exchange, a clone.  Every op runs whatever the ones
 * before returned, as a program that is told of an error and goes on.
 * Then the audit of the live engine must pass (what it holds in memory
 * still adds up), and after unmount the image must pass fsck and the file
 * the sequence never touches must read back as fsynced.  Or, when the
 * error left an update half made, the engine shut down (ref.h): every
 * later call fails with -EIO, unmount writes nothing, and the image
 * mounts, passes fsck and holds the untouched file as fsynced.
 */
struct rf_cfg {
	const char *what;
	uint32_t reflink, data_mode, flags;
	const char *rtdev;      /* every file realtime on it (NULL: none) */
	bool fault_rt;          /* the fault on the rt device, not the data's */
	bool pmem;              /* the data device on persistent memory */
};

/* The data device of a pmem configuration (every_point makes it). */
static struct scratch rf_pmem;

/* A call of the sequence that failed (or wrote or copied short). */
#define RF(n, call, want) ((n) += (int64_t)(call) != (int64_t)(want))

/* The number of calls that failed. */
static unsigned rf_sequence(struct efs *z, const struct rf_cfg *c,
			    uint64_t work, uint64_t other, const uint8_t *buf)
{
	struct ref_fs *fs = z->fs;
	uint64_t ino;
	const unsigned ph = REF_FALLOC_PUNCH_HOLE | REF_FALLOC_KEEP_SIZE;
	static uint8_t rbuf[8 * BS];
	unsigned n = 0;

	RF(n, ref_fallocate(fs, work, ph, 7 * BS, 3 * BS), 0);
	RF(n, ref_pwrite(fs, work, buf, 3 * BS, 5 * BS), 3 * BS);
	/* a partial block into a hole */
	RF(n, ref_pwrite(fs, other, buf, BS + 100, 20 * BS), BS + 100);
	RF(n, ref_sync(fs), 0); /* what the log holds goes home, and is
				   read from the device again when next
				   needed */
	RF(n, ref_fallocate(fs, work, REF_FALLOC_COLLAPSE_RANGE, 8 * BS,
			    4 * BS), 0);
	RF(n, ref_fallocate(fs, work, REF_FALLOC_INSERT_RANGE, 2 * BS, 2 * BS),
	   0);
	RF(n, ref_fallocate(fs, work, REF_FALLOC_ZERO_RANGE, 10 * BS, 5 * BS),
	   0);
	RF(n, ref_fallocate(fs, work, 0, 60 * BS, 8 * BS), 0);
	RF(n, ref_sync(fs), 0);
	RF(n, ref_truncate(fs, work, 30 * BS + 100), 0);
	RF(n, ref_writeback(fs, 0), 0);
	RF(n, ref_drop_caches(fs), 0);
	RF(n, ref_pread(fs, work, rbuf, 8 * BS, 4 * BS), 8 * BS);
	RF(n, ref_fsync(fs, work), 0);
	if (RF(n, e_file(z, "new", &ino), 0) == 0) {
		RF(n, ref_pwrite(fs, ino, buf, 9 * BS, 0), 9 * BS);
		RF(n, ref_fallocate(fs, ino, ph, 2 * BS, BS), 0);
		RF(n, ref_copy_range(fs, ino, 12 * BS, work, 0, 6 * BS), 6 * BS);
		RF(n, ref_exchange_range(fs, ino, 0, other, 0, 4 * BS), 0);
		if (c->reflink) {
			RF(n, ref_clone_range(fs, ino, 20 * BS, work, 0, 8 * BS),
			   0);
			RF(n, ref_pwrite(fs, ino, buf, BS, 21 * BS), BS);
			RF(n, ref_pwrite(fs, work, buf, 2 * BS, 3 * BS), 2 * BS);
			/* both blocks hold buf's bytes: shared */
			RF(n, ref_dedupe_range(fs, ino, 21 * BS, work, 3 * BS,
					       BS), BS);
		}
	}
	RF(n, ref_sync(fs), 0);
	RF(n, ref_rename(fs, "new", "moved"), 0);
	RF(n, ref_unlink(fs, "other2"), 0);
	RF(n, ref_truncate(fs, other, 3 * BS), 0);
	RF(n, ref_sync(fs), 0);
	return n;
}

/* One extent a block: a B+tree of several levels at fan-out 4. */
static int punch_every_other(struct ref_fs *fs, uint64_t ino, uint64_t blocks)
{
	for (uint64_t b = 1; b < blocks; b += 2)
		if (ref_fallocate(fs, ino, REF_FALLOC_PUNCH_HOLE |
				  REF_FALLOC_KEEP_SIZE, b * BS, BS))
			return -1;
	return 0;
}

/*
 * After errors that left the engine whole: a new file written and synced
 * gets blocks the sequence freed or gave back, and must read back as
 * written after the remount (a block given back with a buffer of its
 * old owner left in the journal would not).
 */
static int sync_fresh_file(struct efs *z, struct shadow *s)
{
	int err = e_file(z, "fresh", &s->ino);

	if (!err)
		err = sh_write(z->fs, s, 9, 0, 24 * BS);
	return err ? err : ref_sync(z->fs);
}

/* What z's devices were asked to store so far. */
static uint64_t stores(const struct efs *z)
{
	uint64_t n = 0;

	for (int i = 0; i < 2; i++) {
		const struct hw_dev *d = i ? z->rtdev : z->dev;

		if (d)
			n += d->ctr.writes + d->ctr.zone_appends +
			     d->ctr.zeroouts + d->ctr.persists;
	}
	return n;
}

/* A shut-down engine refuses every call and writes nothing at unmount. */
static int shut_down_for_good(struct efs *z, uint64_t work)
{
	static const uint8_t b[BS];
	uint64_t writes = stores(z);
	struct ref_stat st;
	int err;

	if (ref_pwrite(z->fs, work, b, BS, 0) != -EIO ||
	    ref_sync(z->fs) != -EIO || ref_stat(z->fs, work, &st) != -EIO ||
	    audit(z->fs) != -EIO) {
		fprintf(stderr, "    a call after the shutdown did not fail "
			"with -EIO\n");
		return -1;
	}
	err = ref_unmount(z->fs);
	z->fs = NULL;
	writes = stores(z) - writes;
	if (err != -EIO || writes) {
		fprintf(stderr, "    unmount after the shutdown: %d, %llu "
			"writes\n", err, (unsigned long long)writes);
		return -1;
	}
	return 0;
}

/* 1 when the sequence ran with no fault firing (n is past its I/O). */
static int fault_at(const struct rf_cfg *c, const struct hw_fault *fault,
		    int *bad, unsigned *shut)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .journal_blocks = 64,
				   .inodes = 64, .reflink = c->reflink,
				   .rtextsize = c->rtdev ? 2 * BS : 0 };
	struct ref_mount_opts mo = { .cache_blocks = 1, .msg = collect_msg,
				     .data_mode = c->data_mode,
				     .flags = c->flags };
	struct hw_fault f = *fault;
	uint64_t n = f.nth;
	struct efs z = { 0 };
	struct hw_dev *fd;
	struct shadow keep = { .b = calloc(1, SHADOW_MAX) };
	struct shadow fresh = { .b = calloc(1, SHADOW_MAX) };
	static uint8_t buf[64 * BS];
	uint64_t work, other, o2;
	unsigned errs;
	int done = 0;

	*bad = 1;
	memset(buf, 0x6b, sizeof(buf));
	if (!keep.b || !fresh.b || hw_open(c->pmem ? rf_pmem.spec : "faulty:mem:8m", &z.dev,
				NULL, 0) ||
	    (c->rtdev && hw_open(c->rtdev, &z.rtdev, NULL, 0)))
		goto out;
	o.rtdev = mo.rtdev = z.rtdev;
	fd = c->fault_rt ? z.rtdev : z.dev;
	if (ref_mkfs(z.dev, &o) || ref_mount(z.dev, &mo, &z.fs) ||
	    e_file(&z, "keep", &keep.ino) ||
	    sh_write(z.fs, &keep, 1, 0, 24 * BS) ||
	    sh_punch(z.fs, &keep, 4 * BS, BS) ||
	    sh_punch(z.fs, &keep, 9 * BS, 2 * BS) ||
	    e_file(&z, "work", &work) ||
	    ref_pwrite(z.fs, work, buf, sizeof(buf), 0) != (int64_t)sizeof(buf) ||
	    punch_every_other(z.fs, work, sizeof(buf) / BS) ||
	    e_file(&z, "other", &other) ||
	    ref_pwrite(z.fs, other, buf, 8 * BS, 0) != 8 * BS ||
	    e_file(&z, "other2", &o2) || ref_unmount(z.fs))
		goto out;
	z.fs = NULL; /* mounted again: every node is read from the device */
	if (ref_mount(z.dev, &mo, &z.fs) || hw_fault_arm(fd, &f) < 0)
		goto out;
	errs = rf_sequence(&z, c, work, other, buf);
	done = hw_fault_fired(fd) == 0;
	hw_fault_disarm(fd, -1);
	/* No call fails where no fault fired.  (One that fired may fail
	 * none: copy_range reads again after a short read, and a page whose
	 * writeback failed is written by the next.) */
	if (done && errs) {
		fprintf(stderr, "    %s: %u calls failed with no fault\n",
			c->what, errs);
		goto out;
	}
	if (ref_shutdown_error(z.fs)) {
		*shut += 1;
		if (done || shut_down_for_good(&z, work))
			goto out;
		if (fsck(&z) || e_mount(&z) || !sh_matches(z.fs, &keep)) {
			fprintf(stderr, "    %s, I/O %llu failed: after the "
				"shutdown: %s", c->what, (unsigned long long)n,
				msgs);
			goto out;
		}
	} else if (audit(z.fs)) {
		fprintf(stderr, "    %s, I/O %llu failed: live audit: %s", c->what,
			(unsigned long long)n, msgs);
		goto out;
	} else if (sync_fresh_file(&z, &fresh) || e_cycle(&z, &keep) ||
		   !sh_matches(z.fs, &fresh)) {
		fprintf(stderr, "    %s, I/O %llu failed: a new file, unmount, "
			"fsck, mount: %s", c->what, (unsigned long long)n, msgs);
		goto out;
	}
	*bad = 0;
out:
	e_close(&z);
	free(keep.b);
	free(fresh.b);
	return done;
}

static const struct rf_cfg rf_cfgs[] = {
	{ "ordered", 0, REF_DATA_ORDERED, 0, NULL, false, false },
	{ "journaled data", 0, REF_DATA_JOURNAL, 0, NULL, false, false },
	{ "reflink", 1, REF_DATA_ORDERED, 0, NULL, false, false },
	{ "delalloc", 0, REF_DATA_ORDERED, REF_MOUNT_DELALLOC, NULL, false,
	  false },
	{ "realtime", 0, REF_DATA_ORDERED, 0, "faulty:mem:8m", false, false },
	{ "realtime, fault on it", 0, REF_DATA_ORDERED, 0, "faulty:mem:8m",
	  true, false },
	{ "zoned realtime, fault on it", 0, REF_DATA_ORDERED, 0,
	  "faulty:zoned:mem,size=8m,zone=256k", true, false },
	/* metadata as stores and persists (devio.c), no FUA write */
	{ "pmem", 0, REF_DATA_ORDERED, 0, NULL, false, true },
};
#define RF_CFGS (sizeof(rf_cfgs) / sizeof(rf_cfgs[0]))

/*
 * The sequence of each configuration with the fault of ops at its 1st,
 * 2nd, ... I/O: *failed counts the runs that broke a rule; ios[c] and
 * shut[c] are each configuration's I/O points and shutdowns.
 */
static void every_point(unsigned ops, bool sticky, unsigned *failed,
			uint64_t *ios, unsigned *shut)
{
	for (size_t i = 0; i < RF_CFGS; i++) {
		struct hw_fault f = { .ops = ops, .sticky = sticky };
		int bad = 0;

		shut[i] = 0;
		ios[i] = UINT64_MAX; /* skipped */
		if (rf_cfgs[i].pmem && !pmem_spec(&rf_pmem, "faulty:", "8m"))
			continue;
		for (f.nth = 1; f.nth < 100000; f.nth++) {
			int past = fault_at(&rf_cfgs[i], &f, &bad, &shut[i]);

			*failed += (unsigned)bad; /* the run with no fault too */
			if (past)
				break;
		}
		ios[i] = f.nth - 1;
		if (rf_cfgs[i].pmem)
			scratch_done(&rf_pmem);
		if (getenv("FSO_EIO_VERBOSE"))
			fprintf(stderr, "    %s%s: %llu I/O points, %u shut "
				"down\n", rf_cfgs[i].what, sticky ? ", sticky" : "",
				(unsigned long long)ios[i], shut[i]);
	}
}

/* The sequence did I/O where the fault was: on the data device, all its
 * metadata and most of its data; on a realtime device, its data. */
static void enough_points(const struct rf_cfg *c, uint64_t ios)
{
	if (ios == UINT64_MAX) /* skipped: no pmem: in this build */
		return;
	CHECK_MSG(ios > (c->fault_rt ? 1 : 50), "%s: only %llu I/O points",
		  c->what, (unsigned long long)ios);
}

TEST(a_metadata_read_failing_inside_an_op_leaves_the_engine_whole)
{
	uint64_t ios[RF_CFGS];
	unsigned failed = 0, shut[RF_CFGS];

	uint64_t whole = 0, down = 0;

	every_point(HW_FAULT_READ, false, &failed, ios, shut);
	CHECK_EQ(failed, 0);
	for (size_t i = 0; i < RF_CFGS; i++) {
		enough_points(&rf_cfgs[i], ios[i]);
		if (ios[i] == UINT64_MAX)
			continue;
		whole += ios[i] - shut[i];
		down += shut[i];
	}
	/* both ends were met: updates cut short (a metadata read's error),
	 * and errors that left the engine whole (a data read's) */
	CHECK(down > 100 && whole > 5);
}

/* A device that dies at a read: whole or shut down as above (the fault
 * is lifted before the checks). */
TEST(a_device_dying_at_each_read_leaves_the_engine_whole)
{
	uint64_t ios[RF_CFGS];
	unsigned failed = 0, shut[RF_CFGS];

	every_point(HW_FAULT_READ, true, &failed, ios, shut);
	CHECK_EQ(failed, 0);
	for (size_t i = 0; i < RF_CFGS; i++)
		enough_points(&rf_cfgs[i], ios[i]);
}

/*
 * A write or flush that fails inside an op, once or from then on: a data
 * write's step undoes itself (the blocks allocated for a hole go back to
 * the bitmap: they leaked before), a commit's is not counted, and the
 * engine goes on whole, or shuts down when a metadata read failed too.
 */
TEST(a_write_or_flush_failing_inside_an_op_leaves_the_engine_whole)
{
	uint64_t ios[RF_CFGS];
	unsigned failed = 0, shut[RF_CFGS];

	for (int sticky = 0; sticky < 2; sticky++) {
		every_point(HW_FAULT_WRITE | HW_FAULT_FLUSH, sticky, &failed,
			    ios, shut);
		for (size_t i = 0; i < RF_CFGS; i++)
			enough_points(&rf_cfgs[i], ios[i]);
	}
	CHECK_EQ(failed, 0);
}

/*
 * A journaled file's write into a hole that fails part way (the read of
 * its partial last block, or a write) after its first block went into
 * the running transaction as a buffer: the blocks go back to the bitmap
 * forgotten in the journal.  The next file to get them reads its own
 * bytes, at once, after a sync and after a remount (a buffer left behind
 * served its reads and the checkpoint wrote it over them).
 */
static int jdata_hole_fault_at(uint32_t pagecache, unsigned ops, uint64_t n,
			       int *bad)
{
	struct ref_mkfs_opts o = { .btree_maxrecs = 4, .journal_blocks = 64,
				   .inodes = 16 };
	struct ref_mount_opts mo = { .msg = collect_msg,
				     .pagecache = pagecache };
	struct hw_fault f = { .ops = ops, .nth = n };
	static uint8_t x[2 * BS], y[2 * BS], got[2 * BS];
	struct efs z = { 0 };
	const char *what = "setup";
	uint64_t a, b;
	int done = 0;

	*bad = 1;
	memset(x, 0x11, sizeof(x));
	memset(y, 0x22, sizeof(y));
	if (hw_open("faulty:mem:8m", &z.dev, NULL, 0) || ref_mkfs(z.dev, &o) ||
	    ref_mount(z.dev, &mo, &z.fs) || ref_create(z.fs, "a", &a) ||
	    ref_create(z.fs, "b", &b) ||
	    ref_set_flags(z.fs, a, REF_FLAG_JOURNAL_DATA, 0) ||
	    ref_sync(z.fs) || hw_fault_arm(z.dev, &f) < 0)
		goto out;
	(void)ref_pwrite(z.fs, a, x, BS + 100, 0);
	done = hw_fault_fired(z.dev) == 0;
	hw_fault_disarm(z.dev, -1);
	if (ref_shutdown_error(z.fs)) { /* nothing more to see live */
		*bad = ref_unmount(z.fs) != -EIO;
		z.fs = NULL;
		goto out;
	}
	what = "b written (after a sync: the blocks a gave back are free "
	       "again) and read back";
	if (ref_sync(z.fs) ||
	    ref_pwrite(z.fs, b, y, sizeof(y), 0) != (int64_t)sizeof(y) ||
	    ref_pread(z.fs, b, got, sizeof(got), 0) != (int64_t)sizeof(got) ||
	    memcmp(got, y, sizeof(y)))
		goto out;
	what = "b after a sync";
	if (ref_sync(z.fs) || ref_drop_caches(z.fs) ||
	    ref_pread(z.fs, b, got, sizeof(got), 0) != (int64_t)sizeof(got) ||
	    memcmp(got, y, sizeof(y)))
		goto out;
	what = "the live audit";
	if (audit(z.fs))
		goto out;
	what = "b after unmount, fsck, mount";
	if (ref_unmount(z.fs)) {
		z.fs = NULL;
		goto out;
	}
	z.fs = NULL;
	if (fsck(&z) || ref_mount(z.dev, &mo, &z.fs) ||
	    ref_pread(z.fs, b, got, sizeof(got), 0) != (int64_t)sizeof(got) ||
	    memcmp(got, y, sizeof(y)))
		goto out;
	*bad = 0;
out:
	if (*bad)
		fprintf(stderr, "    pagecache %u, fault %#x at I/O %llu: %s "
			"failed%s%s", pagecache, ops, (unsigned long long)n, what,
			msgs[0] ? ": " : "\n", msgs);
	e_close(&z);
	return done;
}

TEST(a_failed_journaled_write_into_a_hole_leaves_nothing_of_it_in_the_blocks_given_back)
{
	static const uint32_t caches[] = { REF_PAGECACHE_OFF, 0 };
	static const unsigned faults[] = { HW_FAULT_READ,
					   HW_FAULT_WRITE | HW_FAULT_FLUSH };
	unsigned failed = 0, points = 0;

	for (size_t i = 0; i < 2; i++)
		for (size_t k = 0; k < 2; k++) {
			uint64_t n;
			int bad;

			for (n = 1; n < 1000; n++) {
				int past = jdata_hole_fault_at(caches[i],
							       faults[k], n,
							       &bad);

				failed += (unsigned)bad;
				if (past)
					break;
			}
			points += (unsigned)(n - 1);
		}
	CHECK_EQ(failed, 0);
	CHECK_MSG(points >= 2, "%u I/O points", points); /* the reads */
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
