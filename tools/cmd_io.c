/*
 * cmd_io.c - `fsoracle io`: xfs_io's commands against the engine.
 *
 * Commands are the op language's text form (harness/text.h), so anything
 * typed here can be pasted into an op log and back; inspection commands
 * that are not ops (stat, bmap, counters, statfs, help) live here.  Ops
 * reach the engine through the engine target, the same path the checker
 * and the fuzzers use.  Output follows xfs_io where a script may read it:
 * `pread -v` prints xfs_io's hex dump, `stat` prints `stat.size = N`.
 *
 * Every -c command is parsed before any runs, so a typo changes nothing.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/target.h"
#include "harness/text.h"
#include "tools/cmds.h"
#include "tools/common.h"

static const char usage[] =
"usage: fsoracle io [-o MOUNTOPTS] [-m MKFSOPTS] [-r RTDEV] DEV -c CMD ...\n"
"\n"
"Run xfs_io-style commands against the engine on DEV.  A mem: or null:\n"
"device is formatted first (with -m MKFSOPTS, see `fsoracle mkfs --help`)\n"
"and lives for this invocation only; a file: device must hold a\n"
"filesystem (`fsoracle mkfs`) and keeps its contents across invocations.\n"
"Commands act on the current file, f0 until `open` says otherwise.\n"
"\n"
"Commands (sizes take k/m/g/t suffixes or 0x hex):\n"
"  open [-f] NAME          make NAME current (-f: create it if missing)\n"
"  close                   close the current file (it stays current)\n"
"  file NAME               make NAME current without opening it\n"
"  unlink NAME             remove NAME\n"
"  pwrite [-S 0xNN] [-b BS] OFF LEN\n"
"                          write LEN bytes at OFF: the byte 0xNN, or\n"
"                          generated data naming the command that wrote it\n"
"  pread [-v] [-b BS] OFF LEN\n"
"                          read; -v dumps the bytes as xfs_io does\n"
"  truncate SIZE           set the size (down frees blocks, up adds zeros)\n"
"  falloc [-k] OFF LEN     preallocate unwritten blocks (-k: keep the size)\n"
"  fpunch OFF LEN          punch a hole (size unchanged)\n"
"  fzero [-k] OFF LEN      zero a range (-k: keep the size)\n"
"  fcollapse OFF LEN       remove a block-aligned range, shifting the rest\n"
"  finsert OFF LEN         insert a block-aligned hole, shifting the rest\n"
"  copy_range -s SRCOFF -d DSTOFF -l LEN SRCFILE\n"
"                          copy bytes from SRCFILE into the current file\n"
"  exchangerange -s SRCOFF -d DSTOFF -l LEN SRCFILE\n"
"                          swap [SRCOFF, +LEN) of SRCFILE with [DSTOFF,\n"
"                          +LEN) of the current file, mappings as they\n"
"                          are, atomically; sizes stay.  Offsets aligned\n"
"                          to the block (the rt extent of realtime files),\n"
"                          LEN too unless both ranges end at their EOF;\n"
"                          both ranges inside their files\n"
"  chattr +r | chattr -r   make the current file realtime or not (only\n"
"                          while it has no blocks; needs -r)\n"
"  chattr +c | chattr -c   compress the file's data at writeback (or not),\n"
"                          whatever -o compress= says; +j journal its\n"
"                          data, +o always copy on write (reflink=1)\n"
"  fsync | fdatasync | sync    commit the journal\n"
"  writeback | drop_caches write dirty pages back / evict clean pages\n"
"                          (leaving shadow entries) of the page cache\n"
"  remount                 unmount and mount again\n"
"  crash                   drop the engine's memory without writing, mount\n"
"                          again: the journal is recovered\n"
"  naive PATHS | fallback PATHS\n"
"                          set the seed-path switches from here on, as\n"
"                          -o naive=/fallback= (PATHS as there)\n"
"  stat                    size, blocks, extents (stat.size = N lines)\n"
"  bmap [-c] [-v]          the data-fork extent list, xfs_io style, in\n"
"                          512-byte units; unwritten and compressed\n"
"                          extents are flagged (a compressed one's block\n"
"                          range is what it holds on the device),\n"
"                          a realtime file's in realtime device blocks;\n"
"                          -c: the COW fork's staging extents instead\n"
"                          (unwritten: allocated, not yet written; needs\n"
"                          mkfs reflink=1)\n"
"  statfs                  filesystem-wide block and inode counts; f_bavail\n"
"                          and f_rtbavail: what new data may still get\n"
"                          (less delayed allocations; on a zoned rt\n"
"                          device only what zones can still take)\n"
"  counters                the engine's work counters\n"
"\n"
"  -o OPTS  mount options: ro, norecovery, cache=N, pagecache=N (pages,\n"
"           0: none), data=ordered|journal|writeback, delalloc (writes\n"
"           into holes allocate at writeback), compress=zstd[:LEVEL]\n"
"           (compressed writeback; implies delalloc), nopagedata (pages\n"
"           keep no bytes: counting only, on null: devices), naive=PATHS and\n"
"           fallback=PATHS (PATHS: all, none, or rt_truncate,\n"
"           pagecache_truncate, cow_end, forget, delalloc_cap joined by\n"
"           ',' or '+'; naive= picks those paths' naive twins, fallback=\n"
"           forces their optimized versions to fall back)\n"
"  -m OPTS  mkfs options for mem:/null: devices: bs=4k,maxrecs=4,...\n"
"           (rtextsize=64k with -r)\n"
"  -r RTDEV the realtime device (formatted with DEV, or the one the\n"
"           file: image was made with)\n"
"\n"
"Exit status: 0 all commands succeeded, 1 a command failed (it says why\n"
"and the rest still run), 2 bad usage or a command that does not parse,\n"
"4 the image is corrupted or not an fsoracle filesystem.\n";

#define CHUNK (1u << 20)

struct io {
	struct target *t;
	struct op_seq seq;
	struct op_parser parser;
	uint8_t *buf;
	uint64_t opno;
	int failed;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xfs_io's human sizes: "1 MiB", "4 KiB", "20.000000 bytes". */
static void cvtstr(double v, char *buf, size_t len)
{
	static const char *unit[] = { "KiB", "MiB", "GiB", "TiB" };
	int u = -1;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%f bytes", v);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.3f %s", v, unit[u]);
}

static void report_rate(uint64_t bytes, uint64_t ops, double secs)
{
	char s[64];

	cvtstr((double)bytes, s, sizeof(s));
	if (secs <= 0)
		secs = 1e-9;
	printf("%s, %" PRIu64 " ops; %.4f sec (%.3f MiB/sec and %.4f ops/sec)\n",
	       s, ops, secs, (double)bytes / secs / 1048576.0, (double)ops / secs);
}

/* xfs_io's dump: 16 bytes a line from the read offset, hex then ASCII. */
static void dump(uint64_t off, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		size_t k, m = n - i < 16 ? n - i : 16;

		printf("%08" PRIx64 ":  ", off + i);
		for (k = 0; k < m; k++)
			printf("%02x ", p[i + k]);
		printf(" ");
		for (k = 0; k < m; k++)
			putchar(isalnum(p[i + k]) ? p[i + k] : '.'); /* as xfs_io */
		putchar('\n');
	}
}

static const char *cur_name(struct io *io)
{
	return op_file_name(&io->seq, io->parser.cur);
}

static int cur_ino(struct io *io, uint64_t *ino)
{
	return ref_lookup(engine_target_fs(io->t), cur_name(io), ino);
}

static int do_pread(struct io *io, const struct op *op, int64_t got)
{
	uint64_t done = 0;

	if (op->flags & OP_FL_VERBOSE) {
		while (done < (uint64_t)got) {
			size_t n = (uint64_t)got - done < CHUNK ? (size_t)(got - done) : CHUNK;
			int64_t r = io->t->ops->read(io->t, io->parser.cur,
						     op->off + done, io->buf, n);

			if (r <= 0)
				break;
			dump(op->off + done, io->buf, (size_t)r);
			done += (uint64_t)r;
		}
	}
	printf("read %" PRId64 "/%" PRIu64 " bytes at offset %" PRIu64 "\n",
	       got, op->len, op->off);
	return 0;
}

/* chattr straight to the engine: a script wants the engine's answer
 * (the engine target answers as the model does, for the checker). */
static int do_chattr(struct io *io, const struct op *op)
{
	struct ref_fs *fs = engine_target_fs(io->t);
	uint32_t f = ((op->arg & OP_ATTR_REALTIME) ? REF_FLAG_REALTIME : 0) |
		     ((op->arg & OP_ATTR_JOURNAL_DATA) ? REF_FLAG_JOURNAL_DATA : 0) |
		     ((op->arg & OP_ATTR_ALWAYS_COW) ? REF_FLAG_COW : 0) |
		     ((op->arg & OP_ATTR_COMPRESS) ? REF_FLAG_COMPRESS : 0);
	uint64_t ino;
	int err = cur_ino(io, &ino);

	if (err == -ENOENT)
		err = ref_create(fs, cur_name(io), &ino);
	if (err)
		return err;
	return ref_set_flags(fs, ino, (op->flags & OP_FL_CLEAR) ? 0 : f,
			     (op->flags & OP_FL_CLEAR) ? f : 0);
}

static int do_stat(struct io *io)
{
	struct ref_stat st;
	uint64_t ino;
	int err = cur_ino(io, &ino);

	if (!err)
		err = ref_stat(engine_target_fs(io->t), ino, &st);
	if (err)
		return err;
	printf("fd.path = \"%s\"\n", cur_name(io));
	printf("stat.ino = %" PRIu64 "\n", st.ino);
	printf("stat.type = regular file\n");
	printf("stat.size = %" PRIu64 "\n", st.size);
	printf("stat.blocks = %" PRIu64 "\n", st.blocks * (st.blocksize / 512));
	printf("fsoracle.extents = %" PRIu64 "\n", st.nextents);
	printf("fsoracle.flags = 0x%x\n", st.flags);
	return 0;
}

struct bmap_state {
	uint64_t next;     /* next expected file block */
	uint32_t bs512;    /* 512-byte units per block */
	int n, verbose, rt;
};

static int bmap_one(void *arg, const struct ref_extent *e)
{
	struct bmap_state *b = arg;
	uint64_t u = b->bs512;

	if (e->fileoff > b->next) {
		printf("%4d: [%" PRIu64 "..%" PRIu64 "]:%*shole", b->n++,
		       b->next * u, e->fileoff * u - 1, b->verbose ? 10 : 1, "");
		if (b->verbose)
			printf("%*s%" PRIu64, 24, "", (e->fileoff - b->next) * u);
		putchar('\n');
	}
	/* a compressed extent holds fewer device blocks than file blocks */
	uint64_t plen = (e->state & REF_EXT_COMPRESSED) ?
			REF_EXT_PLEN(e->state) : e->len;

	printf("%4d: [%" PRIu64 "..%" PRIu64 "]: %" PRIu64 "..%" PRIu64, b->n++,
	       e->fileoff * u, (e->fileoff + e->len) * u - 1, e->startblk * u,
	       (e->startblk + plen) * u - 1);
	if (b->verbose)
		printf("  %8" PRIu64 " %s%s", plen * u,
		       (e->state & REF_EXT_COMPRESSED) ? "000100 compressed" :
		       e->state ? "010000 unwritten" : "000000",
		       b->rt ? " rt" : "");
	else if (e->state & REF_EXT_COMPRESSED)
		printf(" (compressed)");
	else if (e->state)
		printf(" (unwritten)");
	putchar('\n');
	b->next = e->fileoff + e->len;
	return 0;
}

static int stop_walk(void *arg, const struct ref_extent *e)
{
	(void)arg, (void)e;
	return 1;
}

/* bmap [-c] [-v]: the data fork, or the COW fork (staging extents). */
static int do_bmap(struct io *io, int verbose, int cow)
{
	struct ref_fs *fs = engine_target_fs(io->t);
	struct bmap_state b = { .bs512 = ref_blocksize(fs) / 512,
				.verbose = verbose };
	struct ref_stat st;
	uint64_t ino;
	int err = cur_ino(io, &ino);

	if (!err)
		err = ref_stat(fs, ino, &st);
	if (!err && cow) /* no COW fork without reflink: say so first */
		err = ref_cow_bmap(fs, ino, stop_walk, NULL);
	if (err)
		return err;
	b.rt = !!(st.flags & REF_FLAG_REALTIME);
	printf("%s:\n", cur_name(io));
	if (verbose)
		printf(" EXT: FILE-OFFSET      %sBLOCK-RANGE      %sTOTAL FLAGS\n",
		       b.rt ? "RT-" : "", b.rt ? "" : "   ");
	err = cow ? ref_cow_bmap(fs, ino, bmap_one, &b) :
		    ref_bmap(fs, ino, bmap_one, &b);
	if (!err && b.n == 0)
		printf("no extents\n");
	return err;
}

static void print_counter(void *arg, const char *name, uint64_t v)
{
	(void)arg;
	printf("%s = %" PRIu64 "\n", name, v);
}

static int do_statfs(struct io *io)
{
	struct ref_statfs st;
	int err = ref_statfs(engine_target_fs(io->t), &st);

	if (err)
		return err;
	printf("statfs.f_bsize = %u\n", st.blocksize);
	printf("statfs.f_blocks = %" PRIu64 "\n", st.total_blocks);
	printf("statfs.f_bfree = %" PRIu64 "\n", st.free_blocks);
	printf("statfs.f_bavail = %" PRIu64 "\n", st.avail_blocks);
	printf("statfs.f_files = %" PRIu64 "\n", st.inodes);
	printf("statfs.f_ffree = %" PRIu64 "\n", st.free_inodes);
	if (st.rtextsize) {
		printf("statfs.f_rtblocks = %" PRIu64 "\n", st.rt_blocks);
		printf("statfs.f_rtbfree = %" PRIu64 "\n", st.rt_free_blocks);
		printf("statfs.f_rtbavail = %" PRIu64 "\n", st.rt_avail_blocks);
		printf("geom.rtextsize = %u\n", st.rtextsize / st.blocksize);
	}
	return 0;
}

/* bmap's flags (-c, -v, -cv, -vc): -1 for anything else. */
static int bmap_flags(const char *a, int *verbose, int *cow)
{
	if (a[0] != '-' || !a[1])
		return -1;
	for (const char *p = a + 1; *p; p++) {
		if (*p == 'v')
			*verbose = 1;
		else if (*p == 'c')
			*cow = 1;
		else
			return -1;
	}
	return 0;
}

/* Inspection words that are not ops: 1 handled, 0 not one of them. */
static int inspect(struct io *io, const char *line, int run, int *err)
{
	char w[16] = "", a[8] = "", a2[8] = "", extra[8] = "";
	int n = sscanf(line, " %15s %7s %7s %7s", w, a, a2, extra);
	int verbose = 0, cow = 0;

	*err = 0;
	if (n < 1)
		return 0;
	if (!strcmp(w, "stat") || !strcmp(w, "statfs") ||
	    !strcmp(w, "counters") || !strcmp(w, "help")) {
		if (n > 1) {
			*err = -EINVAL;
			return 1;
		}
	} else if (!strcmp(w, "bmap")) {
		if (n > 3 || (n >= 2 && bmap_flags(a, &verbose, &cow)) ||
		    (n == 3 && bmap_flags(a2, &verbose, &cow))) {
			*err = -EINVAL;
			return 1;
		}
	} else {
		return 0;
	}
	if (!run)
		return 1;
	if (!strcmp(w, "stat"))
		*err = do_stat(io);
	else if (!strcmp(w, "statfs"))
		*err = do_statfs(io);
	else if (!strcmp(w, "counters"))
		ref_counters_foreach(ref_counters(engine_target_fs(io->t)),
				     print_counter, NULL);
	else if (!strcmp(w, "bmap"))
		*err = do_bmap(io, verbose, cow);
	else
		fputs(usage, stdout);
	return 1;
}

static void run_op(struct io *io, const char *line, const struct op *op)
{
	const char *word = op_kind_name(op->kind);
	double t0 = now();
	int64_t r;

	io->opno++;
	if (op->kind == OP_SET_FLAG)
		r = do_chattr(io, op);
	else
		r = target_apply(io->t, op, io->opno, io->buf, CHUNK);
	if (r < 0) {
		printf("%s: %s\n", word, ref_strerror((int)r));
		io->failed = 1;
		return;
	}
	if (op->kind == OP_PWRITE) {
		printf("wrote %" PRId64 "/%" PRIu64 " bytes at offset %" PRIu64 "\n",
		       r, op->len, op->off);
		report_rate((uint64_t)r, 1, now() - t0);
	} else if (op->kind == OP_PREAD) {
		do_pread(io, op, r);
		report_rate((uint64_t)r, 1, now() - t0);
	}
	(void)line;
}

int cmd_io(int argc, char **argv)
{
	struct target_env env = { .dev = NULL, .keep_image = 1 };
	const char *spec = NULL, **cmds;
	char err[256];
	struct io io = { 0 };
	int ncmds = 0, rc = 0;

	prog_cmd = "fsoracle io";
	if (wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	cmds = calloc((size_t)argc, sizeof(*cmds));
	if (!cmds)
		return EXIT_IO;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-c") && i + 1 < argc)
			cmds[ncmds++] = argv[++i];
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			env.mount = argv[++i];
		else if (!strcmp(argv[i], "-m") && i + 1 < argc)
			env.mkfs = argv[++i];
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			env.rtdev = argv[++i];
		else if (argv[i][0] == '-' || spec) {
			errmsg("unexpected argument '%s' (see --help)", argv[i]);
			rc = EXIT_USAGE;
			goto out;
		} else
			spec = argv[i];
	}
	if (!spec) {
		errmsg("no device given (see --help)");
		rc = EXIT_USAGE;
		goto out;
	}

	/* Parse everything first: a typo must not run half a script. */
	op_seq_init(&io.seq);
	op_parser_init(&io.parser, &io.seq);
	for (int i = 0; i < ncmds; i++) {
		struct op op;
		int e;

		if (inspect(&io, cmds[i], 0, &e)) {
			if (e) {
				errmsg("command %d '%s': bad arguments", i + 1, cmds[i]);
				rc = EXIT_USAGE;
				goto out_seq;
			}
			continue;
		}
		e = op_parse_line(&io.parser, cmds[i], &op, err, sizeof(err));
		if (e < 0) {
			errmsg("command %d '%s': %s", i + 1, cmds[i], err);
			rc = EXIT_USAGE;
			goto out_seq;
		}
	}

	io.buf = malloc(CHUNK);
	if (!io.buf) {
		rc = EXIT_IO;
		goto out_seq;
	}
	{
		int e = engine_target_new(spec, 0, &env, &io.t, err, sizeof(err));

		if (e) {
			errmsg("%s", err);
			/* a missing or unexpected -r is bad usage too */
			rc = e == -EINVAL || e == -ENODEV ? EXIT_USAGE :
			     exit_for(e);
			goto out_buf;
		}
	}
	target_set_names(io.t, &io.seq);

	/* Run: the parser replays the lines so `open` tracks the current file. */
	op_parser_init(&io.parser, &io.seq);
	for (int i = 0; i < ncmds; i++) {
		struct op op;
		int e;

		if (inspect(&io, cmds[i], 1, &e)) {
			if (e) {
				printf("%s: %s\n", cmds[i], ref_strerror(e));
				io.failed = 1;
			}
			continue;
		}
		if (op_parse_line(&io.parser, cmds[i], &op, err, sizeof(err)) == 1)
			run_op(&io, cmds[i], &op);
	}
	if (io.t->ops->audit) {
		char msg[256] = "";

		if (io.t->ops->audit(io.t, msg, sizeof(msg))) {
			errmsg("audit after the commands failed: %s", msg);
			rc = EXIT_CORRUPT;
		}
	}
	target_list_close(&io.t, 1);
	if (!rc && io.failed)
		rc = EXIT_CHECK;
out_buf:
	free(io.buf);
out_seq:
	op_seq_free(&io.seq);
out:
	free(cmds);
	return rc;
}
