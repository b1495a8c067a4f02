/*
 * suite_forget.c - seed path (d): forgetting freed blocks in the journal
 * (shared/SEED-PATHS.md (d)), the naive twin against the optimized one
 * and its fallback, across power cuts.
 *
 * A trial is a short script over three files of a tiny filesystem
 * (512 blocks of 1 KiB, 4 records a B+tree node, a 256-block log: a
 * checkpoint only every few commits, so logged copies live long), small
 * enough that file data soon reuses freed B+tree nodes (which sit in the
 * middle of the data region) and other files' blocks: writes,
 * truncates, punches, collapses, unlinks, fsyncs, syncs and journal-data
 * flag toggles (maybe each followed by a commit), in data=ordered (maybe
 * with f0 journaling its data from the start) or data=journal, then a
 * power cut that
 * drops a drawn tail of the writes not yet durable (none, the simplest,
 * still leaves a log to replay; the first dropped one maybe torn).
 * Every twin runs the same script on its own crash-layered device.
 *
 * Properties:
 *   forget_twins_agree_across_cuts     the twins return the same results,
 *                                      leave byte-identical images before
 *                                      the cut and after recovery, and
 *                                      recovery passes the audit
 *   forget_revoke_prevents_stale_replay after any cut, every byte of every
 *                                      file is zero or that file's own:
 *                                      no logged copy of a freed block
 *                                      (a B+tree node, another file's
 *                                      journaled data) is replayed over
 *                                      the block's next owner
 */
#include "props/props.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw.h"
#include "ref/ref.h"

#define DEV     "crash:mem:512k"
#define DEVSIZE (512u << 10)
#define BSZ     1024u
#define NFILES  3
#define MAXSTEPS 24
#define MAXOFF  160             /* blocks */
#define MAXLEN  64

enum step_kind { S_WRITE, S_TRUNCATE, S_PUNCH, S_COLLAPSE, S_UNLINK,
		 S_FSYNC, S_SYNC, S_JFLAG, S_KINDS };
static const char *const kind_names[S_KINDS] = {
	"write", "truncate", "punch", "collapse", "unlink", "fsync", "sync",
	"chattr+-j",
};

struct step { uint8_t kind, file; uint16_t off, len; }; /* in blocks */

/* Kinds by weight: writes and the steps that free blocks come often. */
static const uint8_t kind_pick[] = {
	S_WRITE, S_WRITE, S_WRITE, S_WRITE, S_UNLINK, S_UNLINK, S_TRUNCATE,
	S_PUNCH, S_COLLAPSE, S_JFLAG, S_JFLAG, S_FSYNC, S_SYNC,
};

struct script {
	uint32_t mode;          /* REF_DATA_ORDERED or REF_DATA_JOURNAL */
	int j0;                 /* ordered: f0 is made with chattr +j */
	uint32_t cut;           /* of 65536: how much of the pending is lost */
	int tear;               /* the first dropped write survives in part */
	int sync_each;          /* commit after every step */
	size_t n;
	struct step s[MAXSTEPS];
};

static int script_alloc(struct props_trial *t, void *env, void **out)
{
	struct script *sc = calloc(1, sizeof(*sc));
	struct props_many m = PROPS_MANY(1, MAXSTEPS, 10);

	(void)env;
	if (!sc)
		return PROPS_ERROR;
	switch (props_below(t, 3)) {
	case 0: sc->mode = REF_DATA_ORDERED; break;
	case 1: sc->mode = REF_DATA_ORDERED; sc->j0 = 1; break;
	default: sc->mode = REF_DATA_JOURNAL; break;
	}
	sc->sync_each = !props_bool(t);
	while (props_more(t, &m)) {
		struct step *s = &sc->s[sc->n++];

		s->kind = (uint8_t)kind_pick[props_below(t, sizeof(kind_pick))];
		s->file = (uint8_t)props_below(t, NFILES);
		s->off = (uint16_t)props_int(t, 0, MAXOFF);
		s->len = (uint16_t)props_int(t, 1, MAXLEN);
	}
	sc->cut = (uint32_t)props_bits(t, 16);
	sc->tear = props_bool(t);
	*out = sc;
	return PROPS_PASS;
}

static void script_print(FILE *f, const void *inst, void *env)
{
	const struct script *sc = inst;

	(void)env;
	fprintf(f, "data=%s, %s%slose %u/65536 of the pending%s:",
		ref_data_mode_name(sc->mode), sc->j0 ? "f0 +j, " : "",
		sc->sync_each ? "sync each, " : "",
		sc->cut, sc->tear ? ", torn" : "");
	for (size_t i = 0; i < sc->n; i++)
		fprintf(f, " %s f%u %u+%u;", kind_names[sc->s[i].kind],
			sc->s[i].file, sc->s[i].off, sc->s[i].len);
	fputc('\n', f);
}

static const struct props_type script_type = {
	.name = "forget script", .alloc = script_alloc, .print = script_print,
};

/* Byte i of data written by step k to file f: its top bit and file bits
 * say whose it is (no metadata block starts that way: magics are "FSO?"). */
static uint8_t dbyte(unsigned f, size_t k, uint64_t i)
{
	return (uint8_t)(0x80u | f << 4 | ((k + i / 5) & 15u));
}

static int whose(uint8_t b) { return b & 0x80 ? (b >> 4) & 7 : -1; }

/* One twin's run: its device and filesystem, and what it saw. */
struct run {
	const char *name;
	uint32_t naive, fallback;
	struct hw_dev *dev;
	struct ref_fs *fs;
	int64_t res[MAXSTEPS];
	uint8_t *img;
};

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

static int mount_run(struct run *r, uint32_t mode)
{
	struct ref_mount_opts mo = { .naive = r->naive, .fallback = r->fallback,
				     .data_mode = mode, .msg = quiet };

	return ref_mount(r->dev, &mo, &r->fs);
}

/* File f's inode; create: make it if missing (f0 +j with j0). */
static int64_t file_ino(struct ref_fs *fs, unsigned f, int create, int j0,
			uint64_t *ino)
{
	char name[8];
	int err;

	snprintf(name, sizeof(name), "f%u", f);
	err = ref_lookup(fs, name, ino);
	if (err != -ENOENT || !create)
		return err;
	err = ref_create(fs, name, ino);
	if (!err && j0 && f == 0)
		err = ref_set_flags(fs, *ino, REF_FLAG_JOURNAL_DATA, 0);
	return err;
}

static int64_t do_step(struct ref_fs *fs, const struct script *sc, size_t k)
{
	const struct step *s = &sc->s[k];
	static uint8_t buf[MAXLEN * BSZ];
	uint64_t off = (uint64_t)s->off * BSZ, len = (uint64_t)s->len * BSZ;
	struct ref_stat st;
	uint64_t ino;
	char name[8];
	int64_t err = file_ino(fs, s->file, s->kind == S_WRITE, sc->j0, &ino);

	if (err)
		return err;
	switch (s->kind) {
	case S_WRITE:
		/* odd offsets in a block too: partial blocks, EOF tails */
		off += s->len & 1 ? 100 : 0;
		for (uint64_t i = 0; i < len; i++)
			buf[i] = dbyte(s->file, k, off + i);
		return ref_pwrite(fs, ino, buf, len, off);
	case S_TRUNCATE:
		return ref_truncate(fs, ino, off + (s->len & 1 ? 300 : 0));
	case S_PUNCH:
		return ref_fallocate(fs, ino, REF_FALLOC_PUNCH_HOLE |
				     REF_FALLOC_KEEP_SIZE, off, len);
	case S_COLLAPSE:
		return ref_fallocate(fs, ino, REF_FALLOC_COLLAPSE_RANGE, off, len);
	case S_UNLINK:
		snprintf(name, sizeof(name), "f%u", s->file);
		return ref_unlink(fs, name);
	case S_FSYNC:
		return ref_fsync(fs, ino);
	case S_SYNC:
		return ref_sync(fs);
	default:
		err = ref_stat(fs, ino, &st);
		if (!err)
			err = ref_set_flags(fs, ino, st.flags & REF_FLAG_JOURNAL_DATA ?
					    0 : REF_FLAG_JOURNAL_DATA,
					    st.flags & REF_FLAG_JOURNAL_DATA ?
					    REF_FLAG_JOURNAL_DATA : 0);
		return err;
	}
}

static void run_close(struct run *r)
{
	if (r->fs)
		ref_abandon(r->fs);
	if (r->dev)
		hw_close(r->dev);
	free(r->img);
	r->fs = NULL;
	r->dev = NULL;
	r->img = NULL;
}

/* mkfs, mount, the script, the device image (pending writes included). */
static int run_script(struct props_trial *t, struct run *r,
		      const struct script *sc)
{
	struct ref_mkfs_opts mo = { .blocksize = BSZ, .btree_maxrecs = 4,
				    .inodes = 16, .journal_blocks = 256 };
	int err = hw_open(DEV, &r->dev, NULL, 0);

	if (!err)
		err = ref_mkfs(r->dev, &mo);
	if (!err)
		err = mount_run(r, sc->mode);
	if (err) {
		props_note(t, "%s: mkfs or mount failed: %d", r->name, err);
		return PROPS_ERROR;
	}
	for (size_t k = 0; k < sc->n; k++) {
		r->res[k] = do_step(r->fs, sc, k);
		if (sc->sync_each && ref_sync(r->fs))
			r->res[k] = INT64_MIN; /* shows up as a disagreement */
	}
	r->img = malloc(DEVSIZE);
	if (!r->img || hw_read(r->dev, 0, r->img, DEVSIZE))
		return PROPS_ERROR;
	return PROPS_PASS;
}

/* The cut, the same for every twin, then recovery and the audit. */
static int cut_and_recover(struct props_trial *t, struct run *r,
			   const struct script *sc)
{
	int64_t pending = hw_crash_pending(r->dev);
	struct hw_cut cut = { .kind = HW_CUT_PREFIX,
			      .tear = sc->tear ? HW_TEAR_UNITS : HW_TEAR_NONE,
			      .units = 1 };
	int err;

	if (pending < 0)
		return PROPS_ERROR;
	cut.n = (uint64_t)pending - ((uint64_t)pending * sc->cut >> 16);
	ref_abandon(r->fs);
	r->fs = NULL;
	err = hw_crash_cut(r->dev, &cut);
	if (!err)
		err = mount_run(r, sc->mode);
	if (err) {
		props_note(t, "%s: mount after the cut (%llu of %lld pending "
			   "writes kept) failed: %s", r->name,
			   (unsigned long long)cut.n, (long long)pending,
			   ref_strerror(err));
		return PROPS_FAIL;
	}
	if (ref_audit(r->fs, quiet, NULL)) {
		props_note(t, "%s: the audit fails after recovery", r->name);
		return PROPS_FAIL;
	}
	return PROPS_PASS;
}

/* Every byte of every file is zero or the file's own. */
static int no_stale_bytes(struct props_trial *t, struct run *r)
{
	uint8_t buf[BSZ];

	for (unsigned f = 0; f < NFILES; f++) {
		struct ref_stat st;
		uint64_t ino;

		if (file_ino(r->fs, f, 0, 0, &ino) || ref_stat(r->fs, ino, &st))
			continue;
		for (uint64_t off = 0; off < st.size; off += BSZ) {
			int64_t n = ref_pread(r->fs, ino, buf, BSZ, off);

			for (int64_t i = 0; i < n; i++) {
				if (buf[i] && whose(buf[i]) != (int)f) {
					props_note(t, "%s: f%u byte %llu is 0x%02x, "
						   "not its own: a stale copy "
						   "replayed", r->name, f,
						   (unsigned long long)off +
						   (unsigned long long)i, buf[i]);
					return PROPS_FAIL;
				}
			}
		}
	}
	return PROPS_PASS;
}

static int image_of(struct run *r)
{
	free(r->img);
	r->img = NULL;
	if (ref_unmount(r->fs)) {
		r->fs = NULL;
		return -EIO;
	}
	r->fs = NULL;
	r->img = malloc(DEVSIZE);
	return r->img ? hw_read(r->dev, 0, r->img, DEVSIZE) : -ENOMEM;
}

#define NRUNS 3

static int forget_trial(struct props_trial *t, const struct script *sc,
			bool compare)
{
	struct run runs[NRUNS] = {
		{ .name = "naive", .naive = 1u << REF_PATH_FORGET },
		{ .name = "optimized" },
		{ .name = "fallback", .fallback = 1u << REF_PATH_FORGET },
	};
	int res = PROPS_PASS;

	for (int i = 0; i < NRUNS && res == PROPS_PASS; i++)
		res = run_script(t, &runs[i], sc);
	for (int i = 1; compare && i < NRUNS && res == PROPS_PASS; i++) {
		for (size_t k = 0; k < sc->n && res == PROPS_PASS; k++) {
			if (runs[i].res[k] != runs[0].res[k]) {
				props_note(t, "step %zu (%s): naive returned %lld, "
					   "%s %lld", k, kind_names[sc->s[k].kind],
					   (long long)runs[0].res[k], runs[i].name,
					   (long long)runs[i].res[k]);
				res = PROPS_FAIL;
			}
		}
		if (res == PROPS_PASS && memcmp(runs[i].img, runs[0].img, DEVSIZE)) {
			props_note(t, "naive and %s images differ before the cut",
				   runs[i].name);
			res = PROPS_FAIL;
		}
	}
	for (int i = 0; i < NRUNS && res == PROPS_PASS; i++) {
		res = cut_and_recover(t, &runs[i], sc);
		if (res == PROPS_PASS && !compare)
			res = no_stale_bytes(t, &runs[i]);
		if (res == PROPS_PASS && compare && image_of(&runs[i]))
			res = PROPS_ERROR;
	}
	for (int i = 1; compare && i < NRUNS && res == PROPS_PASS; i++) {
		if (memcmp(runs[i].img, runs[0].img, DEVSIZE)) {
			props_note(t, "naive and %s recover to different images",
				   runs[i].name);
			res = PROPS_FAIL;
		}
	}
	for (int i = 0; i < NRUNS; i++)
		run_close(&runs[i]);
	return res;
}

static int twins_agree(struct props_trial *t, void *sc)
{
	return forget_trial(t, sc, true);
}

static int no_stale_replay(struct props_trial *t, void *sc)
{
	return forget_trial(t, sc, false);
}

/*
 * Regression seeds, run first: trial seeds whose scripts show a missing
 * revoke (write a +j file, unlink it, commit, write another file over
 * its blocks: replay must not bring the first file's bytes back) and a
 * forget skipped for a journaled file (naive and optimized images part).
 */
static const uint64_t stale_seeds[] = { 0x7f58235e13ecb8e5ull };
static const uint64_t twin_seeds[] = { 0xb27a48e29a233673ull };

static const struct props_prop props[] = {
	{
		.name = "forget_twins_agree_across_cuts",
		.doc = "naive, optimized and fallback forget: same results, "
		       "identical images before a cut and after recovery",
		.cfg = { .prop1 = twins_agree, .types = { &script_type },
			 .always_seeds = twin_seeds, .nalways = 1 },
	},
	{
		.name = "forget_revoke_prevents_stale_replay",
		.doc = "after any cut every file byte is zero or the file's "
		       "own: no freed block's logged copy is replayed",
		.cfg = { .prop1 = no_stale_replay, .types = { &script_type },
			 .always_seeds = stale_seeds, .nalways = 1 },
	},
};

const struct props_suite props_suite_forget = {
	.name = "forget",
	.doc = "seed path (d): journal forget and revoke at free, naive "
	       "against optimized, across power cuts",
	PROPS_LIST(props),
};
