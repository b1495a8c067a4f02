/*
 * cmd_io.c - `fsoracle io`: xfs_io's commands against the engine.
 *
 * Commands run one at a time, in order, as xfs_io runs its -c list: a
 * word that is unknown or does not parse is reported and the rest still
 * run (the exit status says so at the end).  Ops are the op language's
 * text form (harness/text.h), reached through the engine target, the
 * path the checker and the fuzzers use; xfs_io's own spellings (pwrite
 * -w/-W/-D/-V, copy_range without -s/-d/-l, reflink of a whole file,
 * open -d, sync_range, fadvise) are turned into ops here.  The words
 * that are not ops live in io_map.c (bmap, fiemap, seek) and io_stat.c
 * (stat, statx, lsattr, chattr, statfs, counters).  Output is xfs_io's
 * text, errors on stderr named by the call that failed, so a script
 * written for xfs_io reads the same lines.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cmds.h"
#include "tools/common.h"
#include "tools/io.h"

static const char usage[] =
"usage: fsoracle io [-o MOUNTOPTS] [-m MKFSOPTS] [-r RTDEV] DEV -c CMD ...\n"
"\n"
"Run xfs_io's commands against the engine on DEV.  A mem: or null:\n"
"device is formatted first (with -m MKFSOPTS, see `fsoracle mkfs --help`)\n"
"and lives for this invocation only; a file: device must hold a\n"
"filesystem (`fsoracle mkfs`) and keeps its contents across invocations.\n"
"Commands act on the current file, f0 until `open` says otherwise.  They\n"
"run in order, as xfs_io runs its -c list: one that fails or does not\n"
"parse says why on stderr and the rest still run.  `help` lists the\n"
"commands, `help CMD` says more about one.\n"
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
"Exit status: 0 all commands succeeded, 1 a command failed, 2 bad usage\n"
"or a command that is unknown or does not parse (the others still ran),\n"
"3 an I/O error of the device (at the mount, or at a crash's or remount's\n"
"mount, which left no filesystem to audit at the end; or a metadata read\n"
"or a commit that failed in the middle of an update, which shut the\n"
"filesystem down: every later command fails, nothing more is written,\n"
"the next mount recovers the last commit), 4 the image is corrupted or\n"
"not an fsoracle filesystem (found by any mount, by a command, which\n"
"shuts the filesystem down as above, or by the audit at the end).\n";

#define CHUNK (1u << 20)
#define XFS_IO_BS 4096u   /* xfs_io's default -b */
#define OFF_ARG "non-numeric offset argument"
#define LEN_ARG "non-numeric length argument"

struct word {
	const char *name, *args, *desc;
	int (*fn)(struct io *io, int argc, char **argv);
	const char *more;        /* help CMD: what differs from xfs_io */
};

static const struct word words[];

/* --- shared helpers (io.h) --------------------------------------------- */

const char *io_cur_name(struct io *io)
{
	return op_file_name(&io->seq, io->parser.cur);
}

int io_cur_ino(struct io *io, uint64_t *ino)
{
	return ref_lookup(engine_target_fs(io->t), io_cur_name(io), ino);
}

int io_fail(const char *what, int err)
{
	fprintf(stderr, "%s: %s\n", what, strerror(-err));
	return IO_FAILED;
}

void io_opts_init(struct io_opts *o, int argc, char **argv, const char *opts)
{
	o->argc = argc;
	o->argv = argv;
	o->opts = opts;
	o->i = 1;
	o->j = 0;
}

int io_opts_next(struct io_opts *o, const char **arg)
{
	const char *a, *spec;
	char c;

	if (o->i >= o->argc)
		return -1;
	a = o->argv[o->i];
	if (o->j == 0) {
		/* "-" alone, "-5" and "+r" are positionals */
		if (a[0] != '-' || !a[1] || isdigit((unsigned char)a[1])) {
			*arg = a;
			o->i++;
			return 0;
		}
		o->j = 1;
	}
	c = a[o->j++];
	spec = c != ':' ? strchr(o->opts, c) : NULL;
	if (!spec) {
		fprintf(stderr, "%s: invalid option -- '%c'\n", o->argv[0], c);
		return '?';
	}
	if (spec[1] == ':') {
		if (a[o->j]) {
			*arg = a + o->j;
		} else if (o->i + 1 < o->argc) {
			*arg = o->argv[++o->i];
		} else {
			fprintf(stderr, "%s: option requires an argument -- '%c'\n",
				o->argv[0], c);
			return '?';
		}
		o->i++;
		o->j = 0;
		return c;
	}
	if (!a[o->j]) {
		o->i++;
		o->j = 0;
	}
	return c;
}

int io_size(const char *what, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!isdigit((unsigned char)s[0]))
		goto bad;
	v = strtoull(s, &end, 0);
	switch (*end | 0x20) {
	case 'k': shift = 10; end++; break;
	case 'm': shift = 20; end++; break;
	case 'g': shift = 30; end++; break;
	case 't': shift = 40; end++; break;
	default: break;
	}
	if (*end || v > ((unsigned long long)INT64_MAX >> shift))
		goto bad;
	*out = (uint64_t)v << shift;
	return 0;
bad:
	printf("%s -- %s\n", what, s);  /* stdout, as xfs_io */
	return IO_BAD;
}

/* --- output as xfs_io prints it ---------------------------------------- */

/* xfs_io's sizes: "1000.000000 bytes", "3 KiB" (a whole number of bytes
 * prints without decimals, whatever the unit), "1.154 GiB". */
static void cvtstr(double v, char *buf, size_t len)
{
	static const char *unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	int precise = v * 1000 == (double)(int64_t)v * 1000, u = -1;
	double d = v;

	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%f bytes", v);
	else
		snprintf(buf, len, precise ? "%.0f %s" : "%.3f %s", d, unit[u]);
}

static void report_rate(uint64_t bytes, uint64_t ops, double secs)
{
	char s[64], r[64];

	if (secs <= 0)
		secs = 1e-9;
	cvtstr((double)bytes, s, sizeof(s));
	cvtstr((double)bytes / secs, r, sizeof(r));
	printf("%s, %" PRIu64 " ops; %.4f sec (%s/sec and %.4f ops/sec)\n", s,
	       ops, secs, r, (double)ops / secs);
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

/* The call xfs_io names when an op fails ("fallocate: Invalid argument"). */
static const char *call_name(unsigned kind)
{
	switch (kind) {
	case OP_TRUNCATE:       return "ftruncate";
	case OP_FALLOC:
	case OP_FPUNCH:
	case OP_FZERO:
	case OP_FCOLLAPSE:
	case OP_FINSERT:        return "fallocate";
	case OP_CLONE_RANGE:    return "XFS_IOC_CLONE_RANGE";
	case OP_DEDUPE_RANGE:   return "XFS_IOC_FILE_EXTENT_SAME";
	default:                return op_kind_name(kind);
	}
}

/* --- ops ---------------------------------------------------------------- */

/* Parse LINE (the op language) and apply it: its result, or IO_BAD's
 * negative twin when it does not parse (said on stderr). */
#define NOT_PARSED INT64_MIN

static int64_t apply_line(struct io *io, const char *line, struct op *op)
{
	char err[256];
	int e = op_parse_line(&io->parser, line, op, err, sizeof(err));

	if (e < 0) {
		errmsg("'%s': %s", line, err);
		return NOT_PARSED;
	}
	if (e == 0)
		return 0;  /* file NAME: no op */
	target_set_names(io->t, &io->seq); /* a name this line brought */
	io->opno++;
	return target_apply(io->t, op, io->opno, io->buf, CHUNK);
}

/* Apply and report a failure by the call's name. */
static int run_line(struct io *io, const char *line)
{
	struct op op = { 0 };
	int64_t r = apply_line(io, line, &op);

	if (r == NOT_PARSED)
		return IO_BAD;
	if (r < 0)
		return io_fail(call_name(op.kind), (int)r);
	return IO_OK;
}

/* The words after argv[0] joined back into one line. */
static void join(char *buf, size_t len, const char *first, int argc,
		 char **argv)
{
	size_t n = (size_t)snprintf(buf, len, "%s", first);

	for (int i = 1; i < argc && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, " %s", argv[i]);
}

static int w_op(struct io *io, int argc, char **argv)
{
	static const char *const ranges[] = { "falloc", "fpunch", "fzero",
		"fcollapse", "finsert", "funshare", "truncate" };
	char line[1024], num[IO_MAXARGS][24];
	int range = 0;

	for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++)
		range |= !strcmp(argv[0], ranges[k]);
	/* a range word's numbers as xfs_io reads them (0 octal, 0x hex),
	 * and its word for one that is not a number (on stdout) */
	for (int i = 1, npos = 0; range && i < argc; i++) {
		uint64_t v;

		if (argv[i][0] == '-')
			continue;
		if (io_size(!strcmp(argv[0], "truncate") ?
			    "non-numeric truncate argument" :
			    npos ? LEN_ARG : OFF_ARG, argv[i], &v))
			return IO_BAD;
		snprintf(num[i], sizeof(num[i]), "%" PRIu64, v);
		argv[i] = num[i];
		npos++;
	}
	join(line, sizeof(line), argv[0], argc, argv);
	return run_line(io, line);
}

static uint64_t ops_of(uint64_t bytes, uint64_t unit)
{
	return (bytes + unit - 1) / unit;
}

/* O_DIRECT (open -d): offsets and lengths in 512-byte sectors. */
static int direct_ok(struct io *io, const char *what, uint64_t off,
		     uint64_t len)
{
	if (io->direct && ((off | len) & 511)) {
		io_fail(what, -EINVAL);
		return 0;
	}
	return 1;
}

/* What pwrite asks for, from its options. */
struct pwrite_req {
	uint64_t seed, bs, vec, off, len;
	int sync, quiet;
	char bopt[48];  /* "-b BS " for the op line, when -b is given */
};

/* pwrite's options and its OFF and LEN.  IO_OK or IO_BAD (said why). */
static int pwrite_args(int argc, char **argv, struct pwrite_req *q)
{
	struct io_opts o;
	const char *arg, *pos[2] = { 0 };
	int c, npos = 0;

	io_opts_init(&o, argc, argv, "S:b:V:wWDqF");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		switch (c) {
		case 'S':
		case 'b':
		case 'V': {
			uint64_t v;

			if (io_size(c == 'S' ? "non-numeric seed" : c == 'b' ?
				    "non-numeric bsize" : "non-numeric vector count",
				    arg, &v))
				return IO_BAD;
			if (c == 'S')
				q->seed = v;
			else if (c == 'V')
				q->vec = v;
			else
				q->bs = v;
			if (c == 'b')
				snprintf(q->bopt, sizeof(q->bopt), "-b %" PRIu64 " ", v);
			break;
		}
		case 'w':
		case 'D':
			q->sync = q->sync == OP_FSYNC ? OP_FSYNC : OP_FDATASYNC;
			break;
		case 'W':
			q->sync = OP_FSYNC;
			break;
		case 'q':
			q->quiet = 1;
			break;
		case 'F': /* forwards: the default */
			break;
		case 0:
			if (npos < 2) {
				pos[npos++] = arg;
				break;
			}
			/* fall through */
		default:
			fprintf(stderr, "pwrite: usage: pwrite [-S seed] [-b bs] "
				"[-V N] [-wWDq] off len\n");
			return IO_BAD;
		}
	}
	if (npos < 2 || !q->bs || !q->vec || io_size(OFF_ARG, pos[0], &q->off) ||
	    io_size(LEN_ARG, pos[1], &q->len)) {
		if (npos < 2 || !q->bs || !q->vec)
			fprintf(stderr, "pwrite: usage: pwrite [-S seed] [-b bs] "
				"[-V N] [-wWDq] off len\n");
		return IO_BAD;
	}
	return IO_OK;
}

/*
 * pwrite [-S SEED] [-b BS] [-V N] [-w] [-W] [-D] [-q] OFF LEN: without -S
 * the bytes are 0xcd, as xfs_io's; -w fdatasyncs and -W fsyncs after the
 * write, -D (RWF_DSYNC) fdatasyncs; ops are counted per BS (x N with -V).
 */
static int w_pwrite(struct io *io, int argc, char **argv)
{
	struct pwrite_req q = { .seed = 0xcd, .bs = XFS_IO_BS, .vec = 1 };
	char line[256];
	struct op op = { 0 };
	double t0;
	int64_t r;

	if (pwrite_args(argc, argv, &q))
		return IO_BAD;
	if (!direct_ok(io, "pwrite", q.off, q.len))
		return IO_FAILED;
	/* the numbers as read here (0 octal and 0x hex, as xfs_io's) */
	snprintf(line, sizeof(line), "pwrite -S 0x%" PRIx64 " %s%" PRIu64 " %" PRIu64,
		 q.seed & 0xff, q.bopt, q.off, q.len);
	t0 = mono_seconds();
	r = apply_line(io, line, &op);
	if (r == NOT_PARSED)
		return IO_BAD;
	if (r >= 0 && io->direct) { /* the bytes go to the device now */
		struct op wb = { .kind = OP_WRITEBACK };

		r = target_apply(io->t, &wb, ++io->opno, io->buf, CHUNK) < 0 ? -EIO :
		    r;
	}
	if (r >= 0 && q.sync) {
		struct op s = { .kind = (uint8_t)q.sync, .file = op.file };
		int64_t e = target_apply(io->t, &s, ++io->opno, io->buf, CHUNK);

		if (e < 0)
			return io_fail(q.sync == OP_FSYNC ? "fsync" : "fdatasync",
				       (int)e);
	}
	if (r < 0)
		return io_fail("pwrite", (int)r);
	if (!q.quiet) {
		printf("wrote %" PRId64 "/%" PRIu64 " bytes at offset %" PRIu64 "\n",
		       r, q.len, q.off);
		report_rate((uint64_t)r, ops_of((uint64_t)r, q.bs * q.vec),
			    mono_seconds() - t0);
	}
	return IO_OK;
}

/* pread [-v] [-b BS] [-q] OFF LEN: ops counted per BS, as xfs_io's. */
static int w_pread(struct io *io, int argc, char **argv)
{
	struct io_opts o;
	const char *arg, *pos[2] = { 0 };
	char line[256], bopt[48] = "";
	uint64_t bs = XFS_IO_BS, off, len, done = 0;
	int c, npos = 0, verbose = 0, quiet = 0;
	struct op op = { 0 };
	double t0;
	int64_t r;

	io_opts_init(&o, argc, argv, "b:vqF");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		if (c == 'b') {
			if (io_size("non-numeric bsize", arg, &bs))
				return IO_BAD;
			snprintf(bopt, sizeof(bopt), "-b %" PRIu64 " ", bs);
		} else if (c == 'v') {
			verbose = 1;
		} else if (c == 'q') {
			quiet = 1;
		} else if (c == 'F') {
			continue;
		} else if (c == 0 && npos < 2) {
			pos[npos++] = arg;
		} else {
			fprintf(stderr, "pread: usage: pread [-b bs] [-qv] off len\n");
			return IO_BAD;
		}
	}
	if (npos < 2 || !bs) {
		fprintf(stderr, "pread: usage: pread [-b bs] [-qv] off len\n");
		return IO_BAD;
	}
	if (io_size(OFF_ARG, pos[0], &off) || io_size(LEN_ARG, pos[1], &len))
		return IO_BAD;
	if (!direct_ok(io, "pread", off, len))
		return IO_FAILED;
	snprintf(line, sizeof(line), "pread %s%" PRIu64 " %" PRIu64, bopt, off, len);
	t0 = mono_seconds();
	r = apply_line(io, line, &op);
	if (r == NOT_PARSED)
		return IO_BAD;
	if (r < 0)
		return io_fail("pread", (int)r);
	while (verbose && done < (uint64_t)r) {
		size_t n = (uint64_t)r - done < CHUNK ? (size_t)((uint64_t)r - done) :
			   CHUNK;
		int64_t got = io->t->ops->read(io->t, op.file, off + done, io->buf,
					       n);

		if (got <= 0)
			break;
		dump(off + done, io->buf, (size_t)got);
		done += (uint64_t)got;
	}
	if (!quiet) {
		printf("read %" PRId64 "/%" PRIu64 " bytes at offset %" PRIu64 "\n",
		       r, len, off);
		report_rate((uint64_t)r, ops_of((uint64_t)r, bs),
			    mono_seconds() - t0);
	}
	return IO_OK;
}

/* open [-f] [-d] NAME: -d is O_DIRECT (sector-aligned I/O that goes to
 * the device at once). */
static int w_open(struct io *io, int argc, char **argv)
{
	struct io_opts o;
	const char *arg, *name = NULL;
	char line[256];
	int c, create = 0, direct = 0, ret;

	io_opts_init(&o, argc, argv, "fd");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		if (c == 'f')
			create = 1;
		else if (c == 'd')
			direct = 1;
		else if (c == 0 && !name)
			name = arg;
		else {
			fprintf(stderr, "open: usage: open [-fd] NAME\n");
			return IO_BAD;
		}
	}
	if (!name) {
		fprintf(stderr, "open: usage: open [-fd] NAME\n");
		return IO_BAD;
	}
	snprintf(line, sizeof(line), "open %s%s", create ? "-f " : "", name);
	{
		struct op op = { 0 };
		unsigned was = io->parser.cur;
		bool named = false;
		int64_t r;

		for (unsigned i = 0; i < OP_MAX_FILES; i++)
			named |= strcmp(io->seq.names[i], name) == 0;
		r = apply_line(io, line, &op);
		if (r == NOT_PARSED)
			return IO_BAD;
		ret = r < 0 ? io_fail(name, (int)r) : IO_OK;
		/* as xfs_io: a failed open leaves the open file as it was (the
		 * next write went to NAME and created it), and a name it
		 * brought gives its slot back (8 failed opens filled them) */
		if (r < 0) {
			io->parser.cur = was;
			if (!named)
				io->seq.names[op.file][0] = 0;
		}
	}
	if (ret == IO_OK)
		io->direct = direct;
	return ret;
}

static int src_size(struct io *io, const char *name, uint64_t *size)
{
	struct ref_fs *fs = engine_target_fs(io->t);
	struct ref_stat st;
	uint64_t ino;
	int err = ref_lookup(fs, name, &ino);

	if (!err)
		err = ref_stat(fs, ino, &st);
	if (err)
		return err;
	*size = st.size;
	return 0;
}

/* copy_range [-s SRCOFF] [-d DSTOFF] [-l LEN] SRC: 0, 0 and the rest of
 * SRC from SRCOFF unless given, as xfs_io's. */
static int w_copy_range(struct io *io, int argc, char **argv)
{
	struct io_opts o;
	const char *arg, *src = NULL;
	uint64_t v[3] = { 0, 0, 0 };
	int c, have_len = 0;
	char line[512];

	io_opts_init(&o, argc, argv, "s:d:l:");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		static const char *const what[] = { "invalid source offset",
			"invalid destination offset", "invalid length" };
		int k = c == 's' ? 0 : c == 'd' ? 1 : c == 'l' ? 2 : -1;

		if (k >= 0) {
			if (io_size(what[k], arg, &v[k]))
				return IO_BAD;
			have_len |= k == 2;
		} else if (c == 0 && !src) {
			src = arg;
		} else {
			fprintf(stderr, "copy_range: usage: copy_range [-s src_off] "
				"[-d dst_off] [-l len] src_file\n");
			return IO_BAD;
		}
	}
	if (!src) {
		fprintf(stderr, "copy_range: usage: copy_range [-s src_off] "
			"[-d dst_off] [-l len] src_file\n");
		return IO_BAD;
	}
	if (!have_len) {
		uint64_t size;
		int err = src_size(io, src, &size);

		if (err)
			return io_fail(src, err);
		v[2] = size > v[0] ? size - v[0] : 0;
	}
	snprintf(line, sizeof(line), "copy_range -s %" PRIu64 " -d %" PRIu64
		 " -l %" PRIu64 " %s", v[0], v[1], v[2], src);
	return run_line(io, line);
}

/* reflink SRC [SRCOFF DSTOFF LEN] and dedupe SRC SRCOFF DSTOFF LEN. */
static int w_remap(struct io *io, int argc, char **argv)
{
	int dedupe = !strcmp(argv[0], "dedupe");
	uint64_t soff = 0, doff = 0, len = 0;
	double t0 = mono_seconds();
	int64_t r;

	if (argc != 5 && (dedupe || argc != 2)) {
		fprintf(stderr, "%s: usage: %s\n", argv[0], dedupe ?
			"dedupe infile src_off dst_off len" :
			"reflink infile [src_off dst_off len]");
		return IO_BAD;
	}
	if (argc == 5 && (io_size("non-numeric src offset argument", argv[2], &soff) ||
			  io_size("non-numeric dst offset argument", argv[3], &doff) ||
			  io_size(LEN_ARG, argv[4], &len)))
		return IO_BAD;
	if (dedupe) {
		/* straight to the engine: it says how many bytes it shared */
		struct ref_fs *fs = engine_target_fs(io->t);
		uint64_t src, dst;
		int err = ref_lookup(fs, argv[1], &src);

		if (err)
			return io_fail(argv[1], err);
		err = io_cur_ino(io, &dst);
		if (err == -ENOENT)
			err = ref_create(fs, io_cur_name(io), &dst);
		if (err)
			return io_fail("XFS_IOC_FILE_EXTENT_SAME", err);
		r = ref_dedupe_range(fs, dst, doff, src, soff, len);
		if (r < 0)
			return io_fail("XFS_IOC_FILE_EXTENT_SAME", (int)r);
		if (r == 0 && len) {
			fprintf(stderr, "XFS_IOC_FILE_EXTENT_SAME: Extents did not "
				"match.\n");
			return IO_FAILED;
		}
		printf("deduped %" PRId64 "/%" PRIu64 " bytes at offset %" PRIu64
		       "\n", r, len, doff);
	} else {
		char line[512];

		snprintf(line, sizeof(line), "reflink %s %" PRIu64 " %" PRIu64
			 " %" PRIu64, argv[1], soff, doff, len);
		r = run_line(io, line);
		if (r != IO_OK)
			return (int)r;
		/* a whole-file reflink (FICLONE) reports 0 bytes, as xfs_io */
		printf("linked %" PRIu64 "/%" PRIu64 " bytes at offset %" PRIu64
		       "\n", len, len, doff);
		r = (int64_t)len;
	}
	report_rate((uint64_t)r, 1, mono_seconds() - t0);
	return IO_OK;
}

/* sync_range [-a] [-b] [-w] OFF LEN: writeback (of every dirty page). */
static int w_sync_range(struct io *io, int argc, char **argv)
{
	struct io_opts o;
	const char *arg;
	uint64_t v;
	int c, npos = 0;

	io_opts_init(&o, argc, argv, "abw");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		if (c == 0 && npos < 2) {
			if (io_size(npos ? LEN_ARG : OFF_ARG, arg, &v))
				return IO_BAD;
			npos++;
		} else if (c == 0 || c == '?') {
			fprintf(stderr, "sync_range: usage: sync_range [-abw] off len\n");
			return IO_BAD;
		}
	}
	if (npos != 2) {
		fprintf(stderr, "sync_range: usage: sync_range [-abw] off len\n");
		return IO_BAD;
	}
	return run_line(io, "writeback");
}

/* fadvise [-d|-n|-r|-s|-w] [OFF LEN]: -d (DONTNEED) writes back and
 * drops clean pages (of the whole cache); the rest only advise. */
static int w_fadvise(struct io *io, int argc, char **argv)
{
	struct io_opts o;
	const char *arg;
	uint64_t v;
	int c, npos = 0, dontneed = 0;

	io_opts_init(&o, argc, argv, "dnrsw");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		if (c == 'd')
			dontneed = 1;
		else if (c == 0 && npos < 2) {
			if (io_size(npos ? LEN_ARG : OFF_ARG, arg, &v))
				return IO_BAD;
			npos++;
		} else if (c == 0 || c == '?') {
			fprintf(stderr, "fadvise: usage: fadvise [-dnrsw] [off len]\n");
			return IO_BAD;
		}
	}
	if (npos == 1) {
		fprintf(stderr, "fadvise: usage: fadvise [-dnrsw] [off len]\n");
		return IO_BAD;
	}
	if (!dontneed)
		return IO_OK;
	c = run_line(io, "writeback");
	return c != IO_OK ? c : run_line(io, "drop_caches");
}

static int w_help(struct io *io, int argc, char **argv);

static int w_quit(struct io *io, int argc, char **argv)
{
	(void)io, (void)argc, (void)argv;
	return IO_OK;
}

/* xfs_io's words, then the engine's own; help prints them in this order. */
static const struct word words[] = {
	{ "bmap", "[-cpv]", "print block mapping for a file", io_bmap,
	  "-c: the COW fork (staging extents).  -v: xfs_io's columns (one AG,\n"
	  "numbered 0, whose offsets are the block numbers); FLAGS (0100000\n"
	  "shared, 0010000 unwritten) with -p or when a row is shared;\n"
	  "compressed rows end in 'compressed'.  A realtime file: RT-BLOCK-RANGE,\n"
	  "no AG columns.\n" },
	{ "chattr", "+/-rojc...", "change extended inode flags on the current file",
	  io_chattr,
	  "r realtime (an empty file, with -r RTDEV); the engine's own: j\n"
	  "journal its data, o always copy on write (reflink=1), c compress at\n"
	  "writeback.  xfs_io's other letters name flags the engine lacks.\n" },
	{ "close", "", "close the current file (it stays current)", w_op, NULL },
	{ "copy_range", "[-s src_off] [-d dst_off] [-l len] src_file",
	  "Copy a range of data between two files", w_copy_range,
	  "Without -s/-d/-l: offsets 0, the rest of src_file.\n" },
	{ "dedupe", "infile src_off dst_off len",
	  "dedupes a number of bytes at a specified offset", w_remap, NULL },
	{ "exchangerange", "-s src_off -d dst_off -l len src_file",
	  "swap ranges of two files' mappings, atomically", w_op, NULL },
	{ "fadvise", "[-dnrsw] [off len]",
	  "advisory commands for sections of a file", w_fadvise,
	  "-d writes back and drops clean pages (of every file); the others\n"
	  "change nothing here.\n" },
	{ "falloc", "[-k] [-u] off len",
	  "allocates space associated with part of a file via fallocate", w_op,
	  NULL },
	{ "fcollapse", "off len",
	  "de-allocates space and eliminates the hole by shifting extents", w_op,
	  NULL },
	{ "fdatasync", "", "calls fdatasync(2) to flush the files in-core data to disk",
	  w_op, NULL },
	{ "fiemap", "[-lv] [offset [len]]", "print block mapping for a file",
	  io_fiemap, "Rows that touch [offset, offset+len); ENCODED (0x8) flags a\n"
	  "compressed extent.\n" },
	{ "file", "NAME", "set the current file (a name, not xfs_io's index)",
	  w_op, NULL },
	{ "finsert", "off len",
	  "creates new space for writing within file by shifting extents", w_op,
	  NULL },
	{ "fpunch", "off len",
	  "de-allocates space associated with part of a file via fallocate", w_op,
	  NULL },
	{ "fsync", "", "calls fsync(2) to flush all in-core file state to disk",
	  w_op, NULL },
	{ "funshare", "off len", "unshares shared blocks within the range", w_op,
	  NULL },
	{ "fzero", "[-k] off len",
	  "zeroes space and eliminates holes by preallocating", w_op, NULL },
	{ "help", "[command]", "help for one or all commands", w_help, NULL },
	{ "lsattr", "[-a|-v]",
	  "list extended inode flags set on the currently open file", io_lsattr,
	  "p: the file has unwritten extents.  -v also names the engine's j, o,\n"
	  "c flags.\n" },
	{ "open", "[-fd] path", "open the file specified by path", w_open,
	  "-f creates it, -d is O_DIRECT: 512-byte aligned I/O, written to the\n"
	  "device at once.\n" },
	{ "pread", "[-b bs] [-qv] off len",
	  "reads a number of bytes at a specified offset", w_pread, NULL },
	{ "pwrite", "[-b bs] [-S seed] [-V N] [-wWDq] off len",
	  "writes a number of bytes at a specified offset", w_pwrite,
	  "Without -S the bytes are 0xcd.  -V N counts ops of N buffers (the\n"
	  "bytes are the same).\n" },
	{ "quit", "", "exit the program", w_quit, NULL },
	{ "reflink", "infile [src_off dst_off len]",
	  "reflinks an entire file, or a number of bytes at a specified offset",
	  w_remap, NULL },
	{ "seek", "-a | -d | -h [-r] [-s] off", "locate the next data and/or hole",
	  io_seek, "Unwritten extents are holes (the engine keeps no dirty pages\n"
	  "over them).\n" },
	{ "stat", "[-v]", "statistics on the currently open file", io_stat,
	  "No times: the engine keeps none.\n" },
	{ "statfs", "", "statistics on the filesystem", io_statfs, NULL },
	{ "statx", "[-v] [-m mask]", "extended statistics on the currently open file",
	  io_stat, "As stat.\n" },
	{ "sync", "", "calls sync(2) to flush all in-core filesystem state to disk",
	  w_op, NULL },
	{ "sync_range", "[-abw] off len", "Control writeback on a range of a file",
	  w_sync_range, "Writes back every dirty page, not only the range.\n" },
	{ "truncate", "off", "truncates the current file at the given offset",
	  w_op, NULL },
	{ "unlink", "NAME", "remove NAME (ours)", w_op, NULL },
	{ "counters", "", "the engine's work counters (ours)", io_counters, NULL },
	{ "crash", "", "drop the engine's memory, mount again: the journal is "
	  "recovered (ours)", w_op, NULL },
	{ "drop_caches", "", "evict clean pages, leaving shadow entries (ours)",
	  w_op, NULL },
	{ "fallback", "PATHS", "force the optimized paths to fall back (ours)",
	  w_op, NULL },
	{ "naive", "PATHS", "switch the seed paths to their naive twins (ours)",
	  w_op, NULL },
	{ "remount", "", "unmount and mount again (ours)", w_op, NULL },
	{ "writeback", "", "write dirty pages back (ours)", w_op, NULL },
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const struct word *lookup(const char *name)
{
	for (size_t i = 0; i < NWORDS; i++)
		if (!strcmp(words[i].name, name))
			return &words[i];
	return NULL;
}

static void print_usage(const struct word *w)
{
	printf("%s%s%s -- %s\n", w->name, w->args[0] ? " " : "", w->args,
	       w->desc);
}

static int w_help(struct io *io, int argc, char **argv)
{
	const struct word *w;

	(void)io;
	if (argc == 1) {
		for (size_t i = 0; i < NWORDS; i++)
			print_usage(&words[i]);
		printf("\nUse 'help commandname' for extended help.\n");
		return IO_OK;
	}
	if (argc > 2) {
		fprintf(stderr, "help: usage: help [command]\n");
		return IO_BAD;
	}
	w = lookup(argv[1]);
	if (!w) {
		fprintf(stderr, "command \"%s\" not found\n", argv[1]);
		return IO_BAD;
	}
	print_usage(w);
	if (w->more)
		printf("\n%s", w->more);
	return IO_OK;
}

/*
 * 1 for a word that needs no filesystem or reaches it only through the
 * target's ops, which answer -EIO when a crash or remount failed to
 * mount one again (and where crash and remount try again).  The other
 * words call the engine themselves and need one mounted.
 */
static int through_target(const struct word *w)
{
	return w->fn == w_op || w->fn == w_open || w->fn == w_pwrite ||
	       w->fn == w_pread || w->fn == w_sync_range ||
	       w->fn == w_fadvise || w->fn == w_help || w->fn == w_quit;
}

/* Run one -c command.  *quit set by `quit`. */
static int run_cmd(struct io *io, const char *cmd, int *quit)
{
	char copy[1024], *argv[IO_MAXARGS + 1], *save = NULL, *tok;
	const struct word *w;
	int argc = 0;

	if (strlen(cmd) >= sizeof(copy)) {
		errmsg("command too long (%zu bytes)", strlen(cmd));
		return IO_BAD;
	}
	strcpy(copy, cmd);
	for (tok = strtok_r(copy, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		if (argc == IO_MAXARGS) {
			errmsg("'%s': too many words (max %d)", cmd, IO_MAXARGS);
			return IO_BAD;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	if (!argc)
		return IO_OK;
	w = lookup(argv[0]);
	if (!w) {
		fprintf(stderr, "command \"%s\" not found\n", argv[0]);
		return IO_BAD;
	}
	if (w->fn == w_quit)
		*quit = 1;
	if (!engine_target_fs(io->t) && !through_target(w))
		return io_fail(w->name, -EIO);
	return w->fn(io, argc, argv);
}

/* io --help: the usage, then one line per command word. */
static void print_help(void)
{
	fputs(usage, stdout);
	printf("\nCommands (`help CMD` among them says what differs from "
	       "xfs_io):\n");
	for (size_t i = 0; i < NWORDS; i++) {
		fputs("  ", stdout);
		print_usage(&words[i]);
	}
}

/*
 * io's command line: the -c commands into cmds, -o, -m and -r into env,
 * the device into *spec.  0 or EXIT_USAGE (said why).
 */
static int io_args(int argc, char **argv, const char **cmds, int *ncmds,
		   struct target_env *env, const char **spec)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-c") && i + 1 < argc)
			cmds[(*ncmds)++] = argv[++i];
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			env->mount = argv[++i];
		else if (!strcmp(argv[i], "-m") && i + 1 < argc)
			env->mkfs = argv[++i];
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			env->rtdev = argv[++i];
		else if (argv[i][0] == '-' || *spec) {
			errmsg("unexpected argument '%s' (see --help)", argv[i]);
			return EXIT_USAGE;
		} else
			*spec = argv[i];
	}
	if (!*spec) {
		errmsg("no device given (see --help)");
		return EXIT_USAGE;
	}
	return 0;
}

/*
 * The commands in order, as xfs_io runs its -c list, until one quits:
 * EXIT_USAGE if one did not parse, else EXIT_CHECK if one failed, else 0.
 */
static int run_cmds(struct io *io, const char **cmds, int ncmds)
{
	int failed = 0, bad = 0, quit = 0;

	for (int i = 0; i < ncmds && !quit; i++) {
		int r;

		fflush(stdout); /* the order xfs_io's lines come in */
		r = run_cmd(io, cmds[i], &quit);
		bad |= r == IO_BAD;
		failed |= r == IO_FAILED;
		fflush(stdout);
	}
	return bad ? EXIT_USAGE : failed ? EXIT_CHECK : 0;
}

int cmd_io(int argc, char **argv)
{
	struct target_env env = { .dev = NULL, .keep_image = 1 };
	const char *spec = NULL, **cmds;
	char err[256];
	struct io io = { 0 };
	int ncmds = 0, rc = 0, status;

	prog_cmd = "fsoracle io";
	if (wants_help(argc, argv)) {
		print_help();
		return 0;
	}
	cmds = calloc((size_t)argc, sizeof(*cmds));
	if (!cmds)
		return EXIT_IO;
	rc = io_args(argc, argv, cmds, &ncmds, &env, &spec);
	if (rc)
		goto out;
	op_seq_init(&io.seq);
	op_parser_init(&io.parser, &io.seq);
	io.buf = malloc(CHUNK);
	if (!io.buf) {
		rc = EXIT_IO;
		goto out_seq;
	}
	{
		int e = engine_target_new(spec, ENGINE_OPTIMIZED, &env, &io.t, err, sizeof(err));

		if (e) {
			errmsg("%s", err);
			/* a missing or unexpected -r is bad usage too */
			rc = e == -EINVAL || e == -ENODEV ? EXIT_USAGE :
			     exit_for(e);
			goto out_buf;
		}
	}
	target_set_names(io.t, &io.seq);
	status = run_cmds(&io, cmds, ncmds);
	if (io.t->ops->audit) {
		char msg[256] = "";

		int e = io.t->ops->audit(io.t, msg, sizeof(msg));
		struct ref_fs *fs = engine_target_fs(io.t);
		int down = fs ? ref_shutdown_error(fs) : 0;

		/* no filesystem left (a crash or remount whose mount failed,
		 * which the commands' errors already said), or one shut down
		 * by a command: its error, EIO from the device or a
		 * corrupted image */
		if (e && (!fs || down)) {
			errmsg("no audit after the commands: %s", msg);
			rc = exit_for(down ? down : e);
		} else if (e) {
			errmsg("audit after the commands failed: %s", msg);
			rc = EXIT_CORRUPT;
		}
	}
	target_list_close(&io.t, 1);
	if (!rc)
		rc = status;
out_buf:
	free(io.buf);
out_seq:
	op_seq_free(&io.seq);
out:
	free(cmds);
	return rc;
}
