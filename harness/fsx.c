/*
 * fsx.c - .fsxops import and export (fsx.h).
 *
 * Export runs the sequence through a model as it goes: fsx wants each
 * op's pre-op file size on its line, and whether an op would fail (or be
 * trimmed by fsx's replay) decides whether fsx can express it.
 */
#include "harness/fsx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "harness/target.h"
#include "harness/text.h"

struct fsx_name {
	const char *name;
	unsigned kind;
	int nargs;
};

/* fsx's op_names, and the kind each imports as. */
static const struct fsx_name names[] = {
	{ "read", OP_PREAD, 3 },
	{ "read_dontcache", OP_PREAD, 3 },
	{ "mapread", OP_PREAD, 3 },
	{ "write", OP_PWRITE, 3 },
	{ "write_dontcache", OP_PWRITE, 3 },
	{ "write_atomic", OP_PWRITE, 3 },
	{ "mapwrite", OP_PWRITE, 3 },
	{ "truncate", OP_TRUNCATE, 3 },
	{ "fallocate", OP_FALLOC, 3 },
	{ "punch_hole", OP_FPUNCH, 3 },
	{ "zero_range", OP_FZERO, 3 },
	{ "collapse_range", OP_FCOLLAPSE, 3 },
	{ "insert_range", OP_FINSERT, 3 },
	{ "copy_range", OP_COPY_RANGE, 4 },
	{ "clone_range", OP_CLONE_RANGE, 4 },
	{ "dedupe_range", OP_DEDUPE_RANGE, 4 },
	{ "exchange_range", OP_EXCHANGE_RANGE, 4 },
	{ "fsync", OP_FSYNC, 3 },
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

struct tok {
	const char *s;
	size_t len;
	unsigned col;
};

static int split(const char *line, size_t len, struct tok *t, int max)
{
	int n = 0;
	size_t i = 0;

	while (i < len) {
		if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
			i++;
			continue;
		}
		if (n == max)
			return n + 1;
		t[n].s = line + i;
		t[n].col = (unsigned)i + 1;
		while (i < len && line[i] != ' ' && line[i] != '\t' &&
		       line[i] != '\r')
			i++;
		t[n].len = (size_t)(line + i - t[n].s);
		n++;
	}
	return n;
}

static int tok_is(const struct tok *t, const char *s)
{
	return t->len == strlen(s) && memcmp(t->s, s, t->len) == 0;
}

static const struct fsx_name *lookup(const struct tok *t)
{
	for (size_t i = 0; i < NNAMES; i++)
		if (tok_is(t, names[i].name))
			return &names[i];
	return NULL;
}

/* fsx reads numbers with strtoul(s, &end, 0): decimal, 0x hex, 0 octal. */
static int number(const struct tok *t, uint64_t *v)
{
	char buf[32], *end;

	if (t->len == 0 || t->len >= sizeof(buf) || t->s[0] == '-' ||
	    t->s[0] == '+')
		return -EINVAL;
	memcpy(buf, t->s, t->len);
	buf[t->len] = 0;
	errno = 0;
	*v = strtoull(buf, &end, 0);
	if (*end || errno || end == buf || *v > (uint64_t)INT64_MAX)
		return -EINVAL;
	return 0;
}

static int fail(char *err, size_t errlen, unsigned line, unsigned col,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(char *err, size_t errlen, unsigned line, unsigned col,
		const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "line %u, col %u: ", line, col);

	if (n > 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int op_fsx_detect(const char *text, size_t len)
{
	size_t pos = 0;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (text + pos)) : len - pos;
		struct tok t[8];
		int n = split(text + pos, l, t, 8), i = 0;
		uint64_t v;

		pos += l + 1;
		if (n == 0 || t[0].s[0] == '#')
			continue;
		if (n > 8)
			return 0;
		if (tok_is(&t[0], "skip"))
			i = 1;
		if (n < i + 4 || !lookup(&t[i]))
			return 0;
		for (int a = i + 1; a < i + 4; a++)
			if (number(&t[a], &v))
				return 0;
		return 1;
	}
	return 0;
}

/* The op's numbers, the nargs words after t[i].  0 or -EINVAL (err). */
static int fsx_numbers(const struct tok *t, int n, int i,
		       const struct fsx_name *fn, uint64_t *a, unsigned lineno,
		       char *err, size_t errlen)
{
	for (int k = 0; k < fn->nargs; k++) {
		int at = i + 1 + k;

		if (at >= n)
			return fail(err, errlen, lineno,
				    (unsigned)(t[n - 1].col + t[n - 1].len),
				    "%s wants %d numbers, got %d (truncated "
				    "line?)", fn->name, fn->nargs, k);
		if (number(&t[at], &a[k]))
			return fail(err, errlen, lineno, t[at].col,
				    "bad number '%.*s'",
				    (int)(t[at].len > 40 ? 40 : t[at].len),
				    t[at].s);
	}
	return 0;
}

/* The flags after the numbers, from t[from].  0 or -EINVAL (err). */
static int fsx_flags(const struct tok *t, int n, int from, struct op *op,
		     int *close_open, unsigned lineno, char *err,
		     size_t errlen)
{
	for (int k = from; k < n; k++) {
		if (tok_is(&t[k], "keep_size"))
			op->flags |= OP_FL_KEEP_SIZE;
		else if (tok_is(&t[k], "unshare"))
			op->flags |= OP_FL_UNSHARE;
		else if (tok_is(&t[k], "close_open"))
			*close_open = 1;
		else if (!tok_is(&t[k], "*"))
			return fail(err, errlen, lineno, t[k].col,
				    "unknown flag '%.*s' (keep_size, "
				    "close_open, unshare, *)",
				    (int)(t[k].len > 40 ? 40 : t[k].len),
				    t[k].s);
	}
	return 0;
}

/* fsx's numbers into the op: OFF LEN [DEST] (truncate: its new size). */
static void fsx_to_op(const struct fsx_name *fn, const uint64_t a[4],
		      struct op *op)
{
	op->kind = (uint8_t)fn->kind;
	switch (fn->kind) {
	case OP_TRUNCATE:
		op->arg = a[1];
		break;
	case OP_COPY_RANGE:
	case OP_CLONE_RANGE:
	case OP_DEDUPE_RANGE:
	case OP_EXCHANGE_RANGE:
		op->off = a[0];
		op->len = a[1];
		op->arg = a[2];
		break;
	default:
		op->off = a[0];
		op->len = a[1];
		break;
	}
	op_normalize(op);
}

int op_fsx_import(const char *text, size_t len, struct op_seq *seq,
		  struct op_fsx_stats *st, char *err, size_t errlen)
{
	size_t pos = 0;
	unsigned lineno = 0;
	struct op_fsx_stats local;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	while (pos < len) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - line) : len - pos;
		struct tok t[12];
		const struct fsx_name *fn;
		uint64_t a[4] = { 0 };
		struct op op;
		int n, i = 0, skip = 0, close_open = 0, ret;

		lineno++;
		pos += l + (nl ? 1 : 0);
		if (memchr(line, 0, l))
			return fail(err, errlen, lineno,
				    (unsigned)((const char *)memchr(line, 0, l) -
					       line) + 1, "NUL byte (not text)");
		n = split(line, l, t, 12);
		if (n == 0 || t[0].s[0] == '#')
			continue;
		if (n > 12)
			return fail(err, errlen, lineno, 1, "too many words");
		if (tok_is(&t[0], "skip")) {
			skip = 1;
			i = 1;
			if (n < 2)
				return fail(err, errlen, lineno, t[0].col + 4,
					    "'skip' without an op");
		}
		fn = lookup(&t[i]);
		if (!fn)
			return fail(err, errlen, lineno, t[i].col,
				    "unknown fsx op '%.*s'",
				    (int)(t[i].len > 40 ? 40 : t[i].len), t[i].s);
		ret = fsx_numbers(t, n, i, fn, a, lineno, err, errlen);
		if (ret)
			return ret;
		memset(&op, 0, sizeof(op));
		ret = fsx_flags(t, n, i + 1 + fn->nargs, &op, &close_open, lineno,
				err, errlen);
		if (ret)
			return ret;
		st->lines++;
		if (skip) {
			st->skipped++;
			continue;
		}
		fsx_to_op(fn, a, &op);
		if (op_seq_push(seq, &op))
			goto out_nomem;
		if (close_open) {
			struct op c = { .kind = OP_CLOSE };

			if (op_seq_push(seq, &c))
				goto out_nomem;
		}
	}
	return 0;
out_nomem:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The files seq's ops act on (bits). */
uint32_t op_fsx_files(const struct op_seq *seq)
{
	uint32_t used = 0;

	for (size_t i = 0; i < seq->n; i++) {
		const struct op *op = &seq->ops[i];
		unsigned uses = op_kind_info(op->kind)->uses;

		if (uses & OP_USE_FILE)
			used |= 1u << op->file;
		if (uses & OP_USE_FILE2)
			used |= 1u << op->file2;
	}
	return used;
}

/*
 * Can file's ops go to an fsx log of their own?  Ops on other files are
 * left out, so nothing may tie file to them: a range op between two
 * files, an unlink of file (fsx's file never goes away), a crash (it
 * hits every file at once) or a chattr.
 */
int op_fsx_check_file(const struct op_seq *seq, unsigned file, char *err,
		      size_t errlen)
{
	for (size_t i = 0; i < seq->n; i++) {
		const struct op *op = &seq->ops[i];
		unsigned uses = op_kind_info(op->kind)->uses;
		int mine = (uses & OP_USE_FILE) && op->file == file;
		int theirs = (uses & OP_USE_FILE2) && op->file2 == file;
		char text[256];

		op_format(op, seq, text, sizeof(text));
		if ((mine || theirs) && (uses & OP_USE_FILE2) &&
		    op->file != op->file2) {
			snprintf(err, errlen, "op #%zu (%s) ties %s to %s: fsx "
				 "works on one file, and the files' ops are not "
				 "independent", i + 1, text,
				 op_file_name(seq, op->file2),
				 op_file_name(seq, op->file));
			return -EINVAL;
		}
		if ((mine && (op->kind == OP_UNLINK || op->kind == OP_SET_FLAG)) ||
		    op->kind == OP_CRASH || op->kind == OP_CUT) {
			snprintf(err, errlen, "op #%zu (%s): fsx has no "
				 "equivalent", i + 1, text);
			return -EINVAL;
		}
	}
	return 0;
}

int op_fsx_export(const struct op_seq *seq, FILE *f, uint32_t blocksize,
		  struct op_fsx_stats *st, char *err, size_t errlen)
{
	uint32_t used = op_fsx_files(seq);
	unsigned file = 0;

	if (used & (used - 1)) {
		for (size_t i = 0; i < seq->n; i++) {
			const struct op *op = &seq->ops[i];
			unsigned uses = op_kind_info(op->kind)->uses;
			unsigned g = (uses & OP_USE_FILE) ? op->file : op->file2;
			char text[256];

			if (!(uses & (OP_USE_FILE | OP_USE_FILE2)) ||
			    g == (unsigned)__builtin_ctz(used))
				continue;
			op_format(op, seq, text, sizeof(text));
			snprintf(err, errlen, "op #%zu (%s) uses file %s: fsx "
				 "works on one file (decode --to fsx -o OUT writes "
				 "one log per file)", i + 1, text,
				 op_file_name(seq, g));
			return -EINVAL;
		}
	}
	if (used)
		file = (unsigned)__builtin_ctz(used);
	return op_fsx_export_file(seq, file, f, blocksize, st, err, errlen);
}

/* How one op of the file reads in fsx's log, or why it cannot. */
struct fsx_line {
	const char *name, *why;  /* fsx's op name; why it is a comment */
	struct op e;             /* the op as fsx will run it */
	int adjusted, four, fsync;
};

/*
 * The fsx line for op, given its result r on the model and the file's
 * size before it: the name, the op as adjusted to what fsx does, or why
 * fsx cannot express it.  Counts fsyncs and the file's largest size.
 * One case per op kind, read as a table of what fsx can say: it stays
 * in one piece.
 */
static void fsx_translate(const struct op *op, int64_t r, uint64_t size0,
			  struct fsx_line *x, struct op_fsx_stats *st)
{
	memset(x, 0, sizeof(*x));
	x->e = *op;
	switch (op->kind) {
	case OP_PREAD:
	case OP_FPUNCH: /* fsx wraps one that starts past EOF, trims one across */
		x->name = op->kind == OP_PREAD ? "read" : "punch_hole";
		if (op->kind == OP_PREAD && (op->len == 0 || op->off >= size0))
			x->why = "a read past EOF (fsx would wrap it)";
		else if (op->kind == OP_FPUNCH &&
			 (op->len == 0 || op->off >= size0 || r < 0))
			x->why = "a punch past EOF or failing (fsx would wrap it)";
		else if (op->off + op->len > size0) {
			x->e.len = size0 - op->off;
			x->adjusted = 1;
		}
		break;
	case OP_PWRITE:
		x->name = "write";
		if (op->len == 0)
			x->why = "a zero-length write";
		x->adjusted = (op->flags & OP_FL_PATTERN) || op->bsize;
		st->maxfilelen = max64(st->maxfilelen, op->off + op->len);
		break;
	case OP_TRUNCATE:
		x->name = "truncate";
		x->e.off = 0;
		x->e.len = op->arg;
		break;
	case OP_FALLOC:
	case OP_FZERO:
		x->name = op->kind == OP_FALLOC ? "fallocate" : "zero_range";
		if (op->len == 0 || r < 0)
			x->why = "fails here";
		st->maxfilelen = max64(st->maxfilelen, op->off + op->len);
		break;
	case OP_FCOLLAPSE:
		x->name = "collapse_range";
		if (r < 0)
			x->why = "an invalid collapse (fsx would trim it)";
		break;
	case OP_FINSERT:
		x->name = "insert_range";
		if (r < 0)
			x->why = "an invalid insert (fsx would trim it)";
		break;
	case OP_COPY_RANGE:
		x->name = "copy_range";
		x->four = 1;
		if (r <= 0)
			x->why = "copies nothing or fails here";
		else if ((uint64_t)r < op->len) {
			x->e.len = (uint64_t)r;
			x->adjusted = 1;
		}
		break;
	case OP_CLONE_RANGE:
	case OP_DEDUPE_RANGE:
	case OP_EXCHANGE_RANGE:
		x->name = op->kind == OP_CLONE_RANGE ? "clone_range" :
			  op->kind == OP_DEDUPE_RANGE ? "dedupe_range" :
			  "exchange_range";
		x->four = 1;
		if (r < 0 || op->len == 0)
			x->why = "fails or is empty here";
		break;
	case OP_FSYNC:
	case OP_FDATASYNC:
	case OP_SYNC:
		/* fsx's fsync marks a dm-log-writes device (-i LOGDEV)
		 * and exits 211 without one: a comment fsx skips, the
		 * line ready for a run with -i. */
		x->name = "fsync";
		x->e.off = x->e.len = 0;
		x->adjusted = op->kind != OP_FSYNC;
		x->fsync = 1;
		st->fsyncs++;
		break;
	case OP_CLOSE:
		x->why = "a close with no op before it";
		break;
	case OP_NAIVE:
	case OP_FALLBACK:
		x->why = "an engine path switch, nothing fsx can see";
		break;
	default:
		x->why = "nothing fsx can see";
		break;
	}
}

/*
 * The export's lines, collected before anything is written (the header
 * needs the largest size), and the pending one: the last op's, which a
 * close that follows can still append close_open to.
 */
struct fsx_out {
	char *lines, *pending;
	size_t used, cap, plen;
};

/* Move the pending line (if any) to the collected lines; a new, empty one. */
static int fsx_out_next(struct fsx_out *o)
{
	if (o->pending) {
		size_t l = strlen(o->pending);

		if (o->used + l + 2 > o->cap) {
			size_t ncap = o->cap ? o->cap * 2 : 4096;
			char *nl;

			while (ncap < o->used + l + 2)
				ncap *= 2;
			nl = realloc(o->lines, ncap);
			if (!nl)
				return -ENOMEM;
			o->lines = nl;
			o->cap = ncap;
		}
		memcpy(o->lines + o->used, o->pending, l);
		o->lines[o->used + l] = '\n';
		o->used += l + 1;
		o->pending[0] = 0;
	}
	if (!o->pending) {
		o->plen = 512;
		o->pending = malloc(o->plen);
		if (!o->pending)
			return -ENOMEM;
		o->pending[0] = 0;
	}
	return 0;
}

/* An fsx line: NAME OFF LEN [ARG] SIZE0 and its flags (fsyncs as #fsync). */
static void fsx_format(char *out, size_t len, const struct op *op,
		       const struct fsx_line *x, uint64_t size0)
{
	if (x->four)
		snprintf(out, len, "%s 0x%llx 0x%llx 0x%llx 0x%llx", x->name,
			 (unsigned long long)x->e.off, (unsigned long long)x->e.len,
			 (unsigned long long)x->e.arg, (unsigned long long)size0);
	else
		snprintf(out, len, "%s%s 0x%llx 0x%llx 0x%llx",
			 x->fsync ? "#" : "", x->name,
			 (unsigned long long)x->e.off, (unsigned long long)x->e.len,
			 (unsigned long long)size0);
	if (op->flags & OP_FL_KEEP_SIZE)
		strcat(out, " keep_size");
	if (op->flags & OP_FL_UNSHARE)
		strcat(out, " unshare");
}

/*
 * The log: its head (what it is, fsx's replay line with the -l and -o
 * every op fits, what the fsyncs are), then the lines.  0 or -EIO.
 */
static int fsx_write(FILE *f, const struct op_seq *seq, unsigned file,
		     struct op_fsx_stats *st, const struct fsx_out *o)
{
	/* fsx's buffers hold -o bytes and its model -l: both must fit every
	 * op, or it overruns them (its -o default is 64k, -l 256k). */
	if (!st->maxoplen)
		st->maxoplen = 1;
	st->maxfilelen = max64(max64(st->maxfilelen, st->maxoplen), 1);
	fprintf(f, "# fsx op log exported by fsoracle: the ops of %s in a log "
		"of %zu (%zu adjusted, %zu left as comments)\n",
		op_file_name(seq, file), seq->n, st->adjusted, st->omitted);
	fprintf(f, "# replay: fsx -q -N %zu -l %llu -o %llu --replay-ops "
		"THIS_FILE /mnt/scratch/testfile\n", st->written,
		(unsigned long long)st->maxfilelen,
		(unsigned long long)st->maxoplen);
	if (st->fsyncs)
		fprintf(f, "# %zu fsyncs are comments (#fsync): fsx runs fsync "
			"only with -i LOGDEV, a dm-log-writes device it marks; to "
			"replay them, remove the '#' and add -i LOGDEV\n",
			st->fsyncs);
	if (o->lines)
		fwrite(o->lines, 1, o->used, f);
	if (o->pending && o->pending[0])
		fprintf(f, "%s\n", o->pending);
	return ferror(f) ? -EIO : 0;
}

int op_fsx_export_file(const struct op_seq *seq, unsigned file, FILE *f,
		       uint32_t blocksize, struct op_fsx_stats *st, char *err,
		       size_t errlen)
{
	struct op_fsx_stats local;
	struct target *m = NULL;
	struct fsx_out o = { 0 };
	uint8_t *buf = NULL;
	int ret = 0;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	/* Everything must be exportable before anything is written. */
	ret = op_fsx_check_file(seq, file, err, errlen);
	if (ret)
		return ret;
	ret = model_target_new(blocksize ? blocksize : 4096, &m);
	buf = malloc(1 << 20);
	if (ret || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	/* Lines are collected first: the header needs the largest size. */
	for (size_t i = 0; i < seq->n; i++) {
		const struct op *op = &seq->ops[i];
		int64_t s0 = m->ops->size(m, file), r;
		uint64_t size0 = s0 < 0 ? 0 : (uint64_t)s0;
		struct fsx_line x;
		char line[256], text[256];

		/* Another file's ops: independent (op_fsx_check_file saw to it). */
		if ((op_kind_info(op->kind)->uses & OP_USE_FILE) &&
		    op->file != file)
			continue;
		r = target_apply(m, op, i + 1, buf, 1 << 20);
		st->maxfilelen = max64(st->maxfilelen,
				       (uint64_t)max64(0, m->ops->size(m, file)));
		op_format(op, seq, text, sizeof(text));
		if (op->kind == OP_CLOSE && o.pending && o.pending[0] &&
		    (o.pending[0] != '#' || !strncmp(o.pending, "#fsync ", 7)) &&
		    !strstr(o.pending, " close_open")) {
			/* The op before ends with close_open (a #fsync
			 * line too: it comes back with the fsync). */
			snprintf(line, sizeof(line), "%s close_open", o.pending);
			snprintf(o.pending, o.plen, "%s", line);
			continue;
		}
		fsx_translate(op, r, size0, &x, st);
		/* Flush the previous line now that nothing can append to it. */
		ret = fsx_out_next(&o);
		if (ret)
			goto out;
		if (x.why) {
			st->omitted++;
			snprintf(o.pending, o.plen, "# #%zu %s: %s", i + 1, text,
				 x.why);
			continue;
		}
		if (x.adjusted)
			st->adjusted++;
		st->maxoplen = max64(st->maxoplen, x.e.len);
		st->written += !x.fsync;
		fsx_format(o.pending, o.plen, op, &x, size0);
	}
	ret = fsx_write(f, seq, file, st, &o);
out:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(o.pending);
	free(o.lines);
	free(buf);
	if (m)
		m->ops->destroy(m);
	return ret;
}
