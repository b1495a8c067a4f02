/*
 * suite_forget.c - seed path (d): forgetting freed blocks in the journal
 * (shared/SEED-PATHS.md (d)), the naive twin against the optimized one
 * and its fallback, across power cuts.
 *
 * A trial is one op log over three files of a tiny filesystem (512
 * blocks of 1 KiB, 4 records a B+tree node, a 256-block log: a
 * checkpoint only every few commits, so logged copies live long), small
 * enough that file data soon reuses freed B+tree nodes (which sit in the
 * middle of the data region) and other files' blocks: pwrites, truncates,
 * fpunches, fcollapses, unlinks, fsyncs, syncs and chattr +j / -j (maybe
 * each followed by a sync), in data=ordered (maybe with f0 journaling its
 * data from its creation on: chattr +j before the write that makes it)
 * or data=journal, then a power cut:
 *
 *     crash       every write issued survives (the simplest: recovery
 *                 still replays the log)
 *     cut 0 0     only what was durable survives
 *     cut 0 S     a subset of the writes since the last durability point
 *                 drawn from S survives, the dropped ones torn by coin
 *
 * (the script language these properties had before cut a drawn prefix
 * of the pending writes; the op language's cut keeps a seeded subset).
 * The targets are naive, engine and fallback: the naive twin (naive=all;
 * the other seed paths' naive twins write as their optimized ones, the
 * image comparison below holds them to it), the optimized path and its
 * forced fallback (fallback=all), each on its own crash-layered device.
 * A pwrite fills with one byte whose top bit and file bits say whose it
 * is (no metadata block starts that way: magics are "FSO?").
 *
 * A counterexample is printed as that op log (`fsoracle prop --logs`
 * writes it).  The checker compares the twins' results (and what they
 * read after the cut) for both properties; the twins property's header
 * asks it for check=twins=image too (the device images after every op,
 * and right after recovery's mount, whose commit is the last write
 * recovery makes: an unmount after it only checkpoints what that commit
 * logged), so `fsoracle replay` fails the same way.  The audit after
 * recovery and the stale check are the properties' own, run on each
 * target as it recovered (the checker's `recovered` call, before it makes
 * the twins take the first one's files): a replay runs the ops and the
 * checker's comparisons.
 *
 * Properties:
 *   forget_twins_agree_across_cuts     the twins return the same results,
 *                                      leave byte-identical images after
 *                                      every op (so before the cut) and
 *                                      after recovery (the checker's
 *                                      twins=image), and recovery passes
 *                                      the audit
 *   forget_revoke_prevents_stale_replay after any cut, every byte of every
 *                                      file is zero or that file's own:
 *                                      no logged copy of a freed block
 *                                      (a B+tree node, another file's
 *                                      journaled data) is replayed over
 *                                      the block's next owner
 */
#include "props/props.h"

#include <stdio.h>
#include <stdlib.h>

#include "harness/op.h"
#include "ref/ref.h"

#define BSZ     1024u
#define NFILES  3
#define MAXSTEPS 24
#define MAXOFF  160             /* blocks */
#define MAXLEN  64

enum step_kind { S_WRITE, S_TRUNCATE, S_PUNCH, S_COLLAPSE, S_UNLINK,
		 S_FSYNC, S_SYNC, S_JFLAG, S_KINDS };

/* Kinds by weight: writes and the steps that free blocks come often. */
static const uint8_t kind_pick[] = {
	S_WRITE, S_WRITE, S_WRITE, S_WRITE, S_UNLINK, S_UNLINK, S_TRUNCATE,
	S_PUNCH, S_COLLAPSE, S_JFLAG, S_JFLAG, S_FSYNC, S_SYNC,
};

/* What the log header asks of the checker, per property. */
struct forget_env {
	const char *check;
};
static const struct forget_env twins_env = { .check = "twins=image" };
static const struct forget_env stale_env = { .check = "" };

/* Byte of every pwrite of step k to file f: its top bit and file bits say
 * whose it is. */
static uint8_t dbyte(unsigned f, size_t k)
{
	return (uint8_t)(0x80u | f << 4 | (k & 15u));
}

static int whose(uint8_t b) { return b & 0x80 ? (b >> 4) & 7 : -1; }

/* The files as the log leaves them, for chattr's toggle and f0's +j. */
struct files {
	uint8_t exists, jdata;  /* bit per file */
	int j0;                 /* ordered: f0 is made with chattr +j */
};

static int push(struct op_seq *seq, unsigned kind, unsigned f, uint8_t flags,
		uint64_t off, uint64_t len, uint64_t arg)
{
	struct op op = { .kind = (uint8_t)kind, .file = (uint8_t)f,
			 .flags = flags, .off = off, .len = len, .arg = arg };

	return op_seq_push(seq, &op);
}

/*
 * Step k of the script as ops.  A step names a file, and only a write
 * makes it (f0 with chattr +j first when j0); any other step on a file
 * that does not exist is left out (the op language would make the file:
 * a truncate or chattr there would leave f0 without its +j), as every
 * step but a write failed with ENOENT in the suite's step language.
 */
static int step_ops(struct op_seq *seq, struct files *fl, size_t k,
		    unsigned kind, unsigned f, uint64_t off, uint64_t len)
{
	struct op w = { .kind = OP_PWRITE, .file = (uint8_t)f,
			.flags = OP_FL_PATTERN, .pattern = dbyte(f, k) };
	uint8_t bit = (uint8_t)(1u << f);
	int err = 0;

	if (!(fl->exists & bit) && kind != S_WRITE)
		return 0;
	if (!(fl->exists & bit)) {
		fl->exists |= bit;
		if (fl->j0 && !f) {
			fl->jdata |= bit;
			err = push(seq, OP_SET_FLAG, f, 0, 0, 0,
				   OP_ATTR_JOURNAL_DATA);
		}
	}
	off *= BSZ;
	if (err)
		return err;
	switch (kind) {
	case S_WRITE:
		/* odd offsets in a block too: partial blocks, EOF tails */
		w.off = off + (len & 1 ? 100 : 0);
		w.len = len * BSZ;
		return op_seq_push(seq, &w);
	case S_TRUNCATE:
		return push(seq, OP_TRUNCATE, f, 0, 0, 0,
			    off + (len & 1 ? 300 : 0));
	case S_PUNCH:
		return push(seq, OP_FPUNCH, f, 0, off, len * BSZ, 0);
	case S_COLLAPSE:
		return push(seq, OP_FCOLLAPSE, f, 0, off, len * BSZ, 0);
	case S_UNLINK:
		fl->exists &= (uint8_t)~bit;
		fl->jdata &= (uint8_t)~bit;
		return push(seq, OP_UNLINK, f, 0, 0, 0, 0);
	case S_FSYNC:
		return push(seq, OP_FSYNC, f, 0, 0, 0, 0);
	case S_SYNC:
		return push(seq, OP_SYNC, 0, 0, 0, 0, 0);
	default: /* the journal-data flag toggled */
		fl->jdata ^= bit;
		return push(seq, OP_SET_FLAG, f,
			    fl->jdata & bit ? 0 : OP_FL_CLEAR, 0, 0,
			    OP_ATTR_JOURNAL_DATA);
	}
}

static int script_alloc(struct props_trial *t, void *env, void **out)
{
	const struct forget_env *fe = env;
	struct op_seq *seq = malloc(sizeof(*seq));
	struct props_many m = PROPS_MANY(1, MAXSTEPS, 10);
	struct files fl = { 0 };
	const char *mode = "ordered";
	int sync_each, tear, err = 0;
	uint64_t cut;
	size_t k = 0;

	if (!seq)
		return PROPS_ERROR;
	op_seq_init(seq);
	switch (props_below(t, 3)) {
	case 0: break;
	case 1: fl.j0 = 1; break;
	default: mode = "journal"; break;
	}
	sync_each = !props_bool(t);
	while (props_more(t, &m)) {
		unsigned kind = kind_pick[props_below(t, sizeof(kind_pick))];
		unsigned f = (unsigned)props_below(t, NFILES);
		uint64_t off = props_int(t, 0, MAXOFF);
		uint64_t len = props_int(t, 1, MAXLEN);

		if (!err)
			err = step_ops(seq, &fl, k++, kind, f, off, len);
		if (!err && sync_each)
			err = push(seq, OP_SYNC, 0, 0, 0, 0, 0);
	}
	/* none lost (crash), all pending lost (seed 0), a seeded subset */
	cut = props_bits(t, 16);
	tear = props_bool(t);
	if (!err && !cut)
		err = push(seq, OP_CRASH, 0, 0, 0, 0, 0);
	else if (!err)
		err = push(seq, OP_CUT, 0, 0, 0, 0,
			   OP_CUT_ARG(0, tear ? cut : 0));
	if (err) {
		props_ops_free(seq, NULL);
		return PROPS_ERROR;
	}
	snprintf(seq->hdr.dev, sizeof(seq->hdr.dev), "mem:512k");
	snprintf(seq->hdr.mkfs, sizeof(seq->hdr.mkfs),
		 "bs=%u,maxrecs=4,inodes=16,journal=256", BSZ);
	snprintf(seq->hdr.mount, sizeof(seq->hdr.mount), "data=%s", mode);
	snprintf(seq->hdr.targets, sizeof(seq->hdr.targets),
		 "naive,engine,fallback");
	snprintf(seq->hdr.check, sizeof(seq->hdr.check), "%s", fe->check);
	*out = seq;
	return PROPS_PASS;
}

static const struct props_type twins_log =
	PROPS_LOG_TYPE("forget log", script_alloc, &twins_env);
static const struct props_type stale_log =
	PROPS_LOG_TYPE("forget log", script_alloc, &stale_env);

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

/* What the recovered call found, for the hook after the op. */
struct recovery {
	struct props_trial *t;
	int stale;              /* check every byte too */
	int res;
};

/* Every byte of every file is zero or the file's own. */
static int no_stale_bytes(struct props_trial *t, struct target *tg,
			  struct ref_fs *fs)
{
	uint8_t buf[BSZ];

	for (unsigned f = 0; f < NFILES; f++) {
		struct ref_stat st;
		uint64_t ino;

		if (ref_lookup(fs, tg->names[f], &ino) || ref_stat(fs, ino, &st))
			continue;
		for (uint64_t off = 0; off < st.size; off += BSZ) {
			int64_t n = ref_pread(fs, ino, buf, BSZ, off);

			for (int64_t i = 0; i < n; i++) {
				if (buf[i] && whose(buf[i]) != (int)f) {
					props_note(t, "%s: f%u byte %llu is 0x%02x, "
						   "not its own: a stale copy "
						   "replayed", tg->name, f,
						   (unsigned long long)off +
						   (unsigned long long)i, buf[i]);
					return PROPS_FAIL;
				}
			}
		}
	}
	return PROPS_PASS;
}

/* Each engine as it recovered: the audit, and the stale check. */
static void recovered(void *arg, struct target **tg, int n)
{
	struct recovery *r = arg;

	for (int i = 0; i < n && r->res == PROPS_PASS; i++) {
		struct ref_fs *fs;

		if (engine_target_pin(tg[i]) < 0)
			continue;
		fs = engine_target_fs(tg[i]);
		if (!fs)
			continue; /* the checker reports the failed mount */
		if (ref_audit(fs, quiet, NULL)) {
			props_note(r->t, "%s: the audit fails after recovery",
				   tg[i]->name);
			r->res = PROPS_FAIL;
		} else if (r->stale) {
			r->res = no_stale_bytes(r->t, tg[i], fs);
		}
	}
}

static int after_op(struct props_trial *t, struct target **tg, int n,
		    uint64_t opno, void *arg)
{
	(void)t, (void)tg, (void)n, (void)opno;
	return ((struct recovery *)arg)->res;
}

static int run_log(struct props_trial *t, const struct op_seq *seq,
		   int stale)
{
	struct recovery r = { .t = t, .stale = stale, .res = PROPS_PASS };
	struct check_cfg cc = { .recovered = recovered, .recovered_arg = &r };
	int res = props_check_log(t, seq, &cc, after_op, &r);

	return r.res != PROPS_PASS ? r.res : res;
}

static int twins_agree(struct props_trial *t, void *seq)
{
	return run_log(t, seq, 0);
}

static int no_stale_replay(struct props_trial *t, void *seq)
{
	return run_log(t, seq, 1);
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
		.cfg = { .prop1 = twins_agree, .types = { &twins_log },
			 .always_seeds = twin_seeds, .nalways = 1 },
	},
	{
		.name = "forget_revoke_prevents_stale_replay",
		.doc = "after any cut every file byte is zero or the file's "
		       "own: no freed block's logged copy is replayed",
		.cfg = { .prop1 = no_stale_replay, .types = { &stale_log },
			 .always_seeds = stale_seeds, .nalways = 1 },
	},
};

const struct props_suite props_suite_forget = {
	.name = "forget",
	.doc = "seed path (d): journal forget and revoke at free, naive "
	       "against optimized, across power cuts",
	PROPS_LIST(props),
};
