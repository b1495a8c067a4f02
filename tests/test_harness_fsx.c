/*
 * test_harness_fsx.c - .fsxops import and export: fsx's words map to the
 * right ops, what fsx can express survives IR -> .fsxops -> IR, what it
 * cannot is refused or left as a comment, and malformed logs fail with
 * the line and column.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fsx.h"
#include "harness/load.h"
#include "harness/rng.h"
#include "harness/text.h"
#include "tests/test.h"

static const char sample[] =
	"# a comment\n"
	"write 0x0 0x1000 0x0\n"
	"read 0x10 0x20 0x1000\n"
	"mapwrite 0x1000 0x1000 0x1000 close_open\n"
	"mapread 0x0 0x2000 0x2000 *\n"
	"truncate 0x0 0x1800 0x2000\n"
	"fallocate 0x0 0x4000 0x1800 keep_size\n"
	"punch_hole 0x100 0x100 0x1800\n"
	"zero_range 0x0 0x10 0x1800 keep_size\n"
	"collapse_range 0x0 0x1000 0x1800\n"
	"insert_range 0x0 0x1000 0x800\n"
	"copy_range 0x0 0x100 0x4000 0x1800\n"
	"clone_range 0x0 0x1000 0x8000 0x4100\n"
	"dedupe_range 0x0 0x1000 0x1000 0x9000\n"
	"exchange_range 0x0 0x1000 0x2000 0x9000\n"
	"skip punch_hole 0x0 0x0 0x9000\n"
	"fsync 0x0 0x0 0x9000\n"
	"fallocate 0x0 0x1000 0x9000 unshare\n";

TEST(fsx_import_maps_every_op)
{
	static const struct op want[] = {
		{ .kind = OP_PWRITE, .off = 0, .len = 0x1000 },
		{ .kind = OP_PREAD, .off = 0x10, .len = 0x20 },
		{ .kind = OP_PWRITE, .off = 0x1000, .len = 0x1000 },
		{ .kind = OP_CLOSE },
		{ .kind = OP_PREAD, .off = 0, .len = 0x2000 },
		{ .kind = OP_TRUNCATE, .arg = 0x1800 },
		{ .kind = OP_FALLOC, .off = 0, .len = 0x4000, .flags = OP_FL_KEEP_SIZE },
		{ .kind = OP_FPUNCH, .off = 0x100, .len = 0x100 },
		{ .kind = OP_FZERO, .off = 0, .len = 0x10, .flags = OP_FL_KEEP_SIZE },
		{ .kind = OP_FCOLLAPSE, .off = 0, .len = 0x1000 },
		{ .kind = OP_FINSERT, .off = 0, .len = 0x1000 },
		{ .kind = OP_COPY_RANGE, .off = 0, .len = 0x100, .arg = 0x4000 },
		{ .kind = OP_CLONE_RANGE, .off = 0, .len = 0x1000, .arg = 0x8000 },
		{ .kind = OP_DEDUPE_RANGE, .off = 0, .len = 0x1000, .arg = 0x1000 },
		{ .kind = OP_EXCHANGE_RANGE, .off = 0, .len = 0x1000, .arg = 0x2000 },
		{ .kind = OP_FSYNC },
		{ .kind = OP_FALLOC, .off = 0, .len = 0x1000, .flags = OP_FL_UNSHARE },
	};
	struct op_fsx_stats st;
	struct op_seq seq;
	char err[200];

	CHECK(op_fsx_detect(sample, strlen(sample)));
	op_seq_init(&seq);
	CHECK_OK(op_fsx_import(sample, strlen(sample), &seq, &st, err,
			       sizeof(err)));
	CHECK_EQ(st.skipped, 1);
	CHECK_EQ(seq.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < seq.n; i++)
		CHECK_MSG(op_equal(&seq.ops[i], &want[i]), "op %zu (%s)", i,
			  op_kind_name(seq.ops[i].kind));
	op_seq_free(&seq);
}

TEST(fsx_detection_tells_fsx_from_text)
{
	static const char *const text[] = {
		"truncate 4k\n", "pwrite 0 4k\n", "# only comments\n", "fsync\n",
	};
	static const char *const fsx[] = {
		"truncate 0x0 0x1000 0x0\n", "\n# c\nskip write 0x0 0x0 0x0\n",
		"fsync 0 0 0\n",
	};

	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		CHECK_MSG(!op_fsx_detect(text[i], strlen(text[i])), "%s", text[i]);
	for (size_t i = 0; i < sizeof(fsx) / sizeof(fsx[0]); i++)
		CHECK_MSG(op_fsx_detect(fsx[i], strlen(fsx[i])), "%s", fsx[i]);
}

TEST(fsx_truncated_or_bad_lines_fail_with_line_and_column)
{
	static const struct { const char *t, *msg; } bad[] = {
		{ "write 0x0 0x1000 0x0\nwrite 0x1000 0x", "line 2, col 14: bad number" },
		{ "write 0x0 0x1000\n", "line 1, col 17: write wants 3 numbers, got 2" },
		{ "read 0x0 0x10 0x0 sideways\n", "line 1, col 19: unknown flag" },
		{ "wirte 0x0 0x10 0x0\n", "line 1, col 1: unknown fsx op" },
		{ "copy_range 0x0 0x10 0x0\n", "copy_range wants 4 numbers" },
		{ "skip\n", "'skip' without an op" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct op_seq seq;
		char err[200] = "";
		int r;

		op_seq_init(&seq);
		r = op_fsx_import(bad[i].t, strlen(bad[i].t), &seq, NULL, err,
				  sizeof(err));
		op_seq_free(&seq);
		CHECK_MSG(r == -EINVAL, "case %zu imported", i);
		CHECK_MSG(strstr(err, bad[i].msg), "case %zu: '%s'", i, err);
	}
}

/* Random ops fsx can express exactly, single file, valid here. */
static void fsx_subset(struct rng *r, struct op_seq *seq, size_t n)
{
	uint64_t size = 0;

	while (seq->n < n) {
		struct op op = { 0 };
		uint64_t bs = 4096;

		switch (rng_below(r, 9)) {
		case 0:
			op.kind = OP_PWRITE;
			op.off = rng_below(r, 1 << 18);
			op.len = 1 + rng_below(r, 1 << 16);
			break;
		case 1:
			if (!size)
				continue;
			op.kind = OP_PREAD;
			op.off = rng_below(r, size);
			op.len = 1 + rng_below(r, size - op.off);
			break;
		case 2:
			op.kind = OP_TRUNCATE;
			op.arg = rng_below(r, 1 << 18);
			break;
		case 3:
			op.kind = rng_below(r, 2) ? OP_FALLOC : OP_FZERO;
			op.off = rng_below(r, 1 << 18);
			op.len = 1 + rng_below(r, 1 << 16);
			op.flags = rng_below(r, 2) ? OP_FL_KEEP_SIZE : 0;
			break;
		case 4:
			if (!size)
				continue;
			op.kind = OP_FPUNCH;
			op.off = rng_below(r, size);
			op.len = 1 + rng_below(r, size - op.off);
			break;
		case 5:
			if (size < 2 * bs)
				continue;
			op.kind = OP_FCOLLAPSE;
			op.off = bs * rng_below(r, size / bs - 1);
			op.len = bs;
			if (op.off + op.len >= size)
				continue;
			break;
		case 6:
			if (!size)
				continue;
			op.kind = OP_FINSERT;
			op.off = bs * rng_below(r, (size - 1) / bs + 1);
			op.len = bs;
			break;
		case 7:
			op.kind = OP_FSYNC;
			break;
		default:
			op.kind = OP_CLOSE;
			if (!seq->n || seq->ops[seq->n - 1].kind == OP_CLOSE)
				continue;
			break;
		}
		op_normalize(&op);
		op_seq_push(seq, &op);
		/* Track the size as the model will. */
		switch (op.kind) {
		case OP_PWRITE:
			size = op.off + op.len > size ? op.off + op.len : size;
			break;
		case OP_TRUNCATE:
			size = op.arg;
			break;
		case OP_FALLOC:
		case OP_FZERO:
			if (!(op.flags & OP_FL_KEEP_SIZE) && op.off + op.len > size)
				size = op.off + op.len;
			break;
		case OP_FCOLLAPSE:
			size -= op.len;
			break;
		case OP_FINSERT:
			size += op.len;
			break;
		default:
			break;
		}
	}
}

TEST(fsx_export_import_roundtrip_on_what_fsx_can_say)
{
	struct rng r;

	rng_seed(&r, 5);
	for (int round = 0; round < 50; round++) {
		struct op_fsx_stats st;
		struct op_seq a, b;
		char err[200], *buf = NULL;
		size_t len = 0;
		FILE *f;

		op_seq_init(&a);
		op_seq_init(&b);
		fsx_subset(&r, &a, 200);
		f = open_memstream(&buf, &len);
		CHECK(f);
		CHECK_MSG(op_fsx_export(&a, f, 4096, &st, err, sizeof(err)) == 0,
			  "%s", err);
		fclose(f);
		CHECK_EQ(st.omitted, 0);
		CHECK_EQ(st.adjusted, 0);
		CHECK_OK(op_fsx_import(buf, len, &b, NULL, err, sizeof(err)));
		/* fsyncs go out as comments (fsx wants -i LOGDEV for them) */
		for (size_t i = 0, j = 0; i < a.n; i++) {
			if (a.ops[i].kind == OP_FSYNC) {
				st.fsyncs--;
				continue;
			}
			/* a close after one rides on its #fsync line */
			if (a.ops[i].kind == OP_CLOSE && i &&
			    a.ops[i - 1].kind == OP_FSYNC)
				continue;
			CHECK_MSG(j < b.n && op_equal(&a.ops[i], &b.ops[j]),
				  "round %d op %zu", round, i);
			j++;
		}
		CHECK_EQ(st.fsyncs, 0);
		{
			size_t lines = 0;

			for (size_t i = 0; i < a.n; i++)
				lines += a.ops[i].kind != OP_FSYNC &&
					 a.ops[i].kind != OP_CLOSE;
			CHECK_EQ(st.written, lines); /* fsx -N */
		}
		free(buf);
		op_seq_free(&a);
		op_seq_free(&b);
	}
}

TEST(fsx_export_refuses_what_fsx_cannot_do)
{
	static const struct { const char *text, *msg; } cases[] = {
		{ "pwrite 0 4k\nopen -f g\npwrite 0 1\n", "fsx works on one file" },
		{ "pwrite 0 4k\nunlink f0\n", "op #2 (unlink f0): fsx has no" },
		{ "crash\n", "fsx has no equivalent" },
		{ "open -f g\nreflink f0 0 0 4k\n", "ties f0 to g" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct op_seq seq;
		char err[200] = "";
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		op_seq_init(&seq);
		CHECK_OK(op_text_parse(cases[i].text, strlen(cases[i].text), &seq,
				       err, sizeof(err)));
		CHECK_EQ(op_fsx_export(&seq, f, 4096, NULL, err, sizeof(err)),
			 -EINVAL);
		fclose(f);
		CHECK_MSG(strstr(err, cases[i].msg), "case %zu: '%s'", i, err);
		CHECK_EQ(len, 0);   /* nothing written */
		free(buf);
		op_seq_free(&seq);
	}
}

TEST(fsx_export_comments_out_what_fsx_would_change)
{
	static const char text[] =
		"pwrite 0 4k\npread 8k 1k\nremount\nfpunch 10k 1k\nsync\n"
		"pwrite -S 0x11 0 1\nfcollapse 0 4k\nnaive rt_truncate\n";
	struct op_fsx_stats st;
	struct op_seq seq;
	char err[200], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	op_seq_init(&seq);
	CHECK_OK(op_text_parse(text, strlen(text), &seq, err, sizeof(err)));
	CHECK_OK(op_fsx_export(&seq, f, 4096, &st, err, sizeof(err)));
	fclose(f);
	CHECK_EQ(st.omitted, 5);    /* pread past EOF, remount, punch past EOF,
				       collapse reaching EOF, a path switch */
	CHECK_EQ(st.adjusted, 2);   /* sync -> fsync, -S dropped */
	CHECK(strstr(buf, "write 0x0 0x1000 0x0\n"));
	CHECK(strstr(buf, "\n#fsync 0x0 0x0 0x1000\n"));
	CHECK(strstr(buf, "# #3 remount"));
	CHECK(strstr(buf, "# #8 naive rt_truncate: an engine path switch"));
	CHECK(strstr(buf, "fsx -q -N 2 -l 4096 -o 4096 --replay-ops"));
	CHECK(strstr(buf, "add -i LOGDEV"));
	free(buf);
	op_seq_free(&seq);
}

TEST(fsx_export_file_writes_each_independent_file_alone)
{
	static const char text[] =
		"open -f a\npwrite 0 8k\nopen -f b\npwrite 0 4k\ntruncate 100\n"
		"file a\npread 0 8k\nunlink c\n";
	static const char *const want[2] = {
		"write 0x0 0x2000 0x0\nread 0x0 0x2000 0x2000\n",
		"write 0x0 0x1000 0x0\ntruncate 0x0 0x64 0x1000\n",
	};
	struct op_seq seq;
	char err[300];

	op_seq_init(&seq);
	CHECK_OK(op_text_parse(text, strlen(text), &seq, err, sizeof(err)));
	CHECK_EQ(op_fsx_files(&seq), 7);
	CHECK_EQ(op_fsx_export(&seq, NULL, 4096, NULL, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "uses file b"));
	for (unsigned i = 0; i < 2; i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		CHECK_MSG(op_fsx_export_file(&seq, i, f, 4096, NULL, err,
					     sizeof(err)) == 0, "%s", err);
		fclose(f);
		CHECK_MSG(strstr(buf, want[i]), "file %u:\n%s", i, buf);
		free(buf);
	}
	/* c is unlinked: fsx's file never goes away */
	CHECK_EQ(op_fsx_check_file(&seq, 2, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "unlink c"));
	op_seq_free(&seq);

	/* a range op between two files ties them: neither goes out alone */
	op_seq_init(&seq);
	{
		static const char two[] = "open -f g\npwrite 0 4k\nfile f0\n"
					  "copy_range -s 0 -d 0 -l 1 g\n";

		CHECK_OK(op_text_parse(two, strlen(two), &seq, err, sizeof(err)));
	}
	CHECK_EQ(op_fsx_check_file(&seq, 0, err, sizeof(err)), -EINVAL);
	CHECK_MSG(strstr(err, "ties g to f0"), "%s", err);
	CHECK_EQ(op_fsx_check_file(&seq, 1, err, sizeof(err)), -EINVAL);
	op_seq_free(&seq);
}

/*
 * fsx's grammar and limits, from its documentation (not from the
 * exporter): a name fsx knows, 3 numbers (4 for the range ops) in 0x
 * hex, the flags each op takes; the third (fourth) number is the size
 * the file has before the op, tracked here as fsx's model would; no op
 * is longer than -o or reaches past -l; reads and punches start inside
 * the file (fsx would wrap them); -N counts the op lines; an fsync runs
 * only with -i.
 */
#define GRAMMAR(cond, ...)                                                \
	do {                                                              \
		if (!(cond)) {                                            \
			snprintf(why, whylen, __VA_ARGS__);               \
			return why;                                       \
		}                                                         \
	} while (0)

/* NULL if log keeps to the grammar, else what is wrong (in why). */
static const char *fsx_grammar_error(const char *log, char *why,
				     size_t whylen)
{
	static const struct { const char *name; int nargs; const char *flags; }
	ops[] = {
		{ "read", 3, "" }, { "write", 3, "" },
		{ "truncate", 3, "" }, { "fallocate", 3, "keep_size unshare" },
		{ "punch_hole", 3, "" }, { "zero_range", 3, "keep_size" },
		{ "collapse_range", 3, "" }, { "insert_range", 3, "" },
		{ "copy_range", 4, "" }, { "clone_range", 4, "" },
		{ "dedupe_range", 4, "" }, { "exchange_range", 4, "" },
		{ "fsync", 3, "" },
	};
	unsigned long long lmax = 0, omax = 0, size = 0;
	unsigned nmax = 0, lines = 0;
	int logdev = 0;
	const char *p = log, *hdr = strstr(log, "# replay: fsx -q -N ");

	GRAMMAR(hdr, "no replay line");
	GRAMMAR(sscanf(hdr, "# replay: fsx -q -N %u -l %llu -o %llu", &nmax,
		       &lmax, &omax) == 3, "replay line without -N, -l, -o");
	logdev = strstr(hdr, " -i ") && strstr(hdr, " -i ") < strchr(hdr, '\n');
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		char line[512], name[32];
		unsigned long long a[4] = { 0 };
		int n, k, ni = -1;

		snprintf(line, sizeof(line), "%.*s", (int)l, p);
		p += l + (nl ? 1 : 0);
		if (line[0] == '#' || !line[0])
			continue;
		lines++;
		n = sscanf(line, "%31s 0x%llx 0x%llx 0x%llx 0x%llx", name, &a[0],
			   &a[1], &a[2], &a[3]);
		for (k = 0; k < (int)(sizeof(ops) / sizeof(ops[0])); k++)
			if (!strcmp(name, ops[k].name))
				ni = k;
		GRAMMAR(ni >= 0, "not an fsx op: %s", line);
		GRAMMAR(n >= 1 + ops[ni].nargs, "too few numbers: %s", line);
		{
			/* the words after the numbers: flags this op takes */
			const char *q = line;
			char w[64];
			int used = 0;

			for (k = 0; k <= ops[ni].nargs; k++) {
				q += strspn(q, " ");
				q += strcspn(q, " ");
			}
			while (sscanf(q, "%63s%n", w, &used) == 1) {
				q += used;
				GRAMMAR(!strcmp(w, "close_open") ||
					(strstr(ops[ni].flags, w) &&
					 strlen(w) > 5), "flag %s on %s", w,
					line);
			}
		}
		GRAMMAR(!strcmp(name, "fsync") ? logdev : 1,
			  "an fsync without -i: %s", line);
		GRAMMAR(a[ops[ni].nargs - 1] == size, "size %llu, want %llu: %s",
			  a[ops[ni].nargs - 1], size, line);
		GRAMMAR(a[1] <= omax, "longer than -o %llu: %s", omax, line);
		if (!strcmp(name, "truncate")) {
			GRAMMAR(a[1] <= lmax, "past -l: %s", line);
			size = a[1];
			continue;
		}
		if (!strcmp(name, "read") || !strcmp(name, "punch_hole"))
			GRAMMAR(a[0] < size && a[0] + a[1] <= size,
				  "fsx would wrap: %s", line);
		if (ops[ni].nargs == 4) {
			GRAMMAR(a[0] + a[1] <= size, "source past EOF: %s", line);
			GRAMMAR(a[2] + a[1] <= lmax, "past -l: %s", line);
			if (strcmp(name, "dedupe_range") && a[2] + a[1] > size)
				size = a[2] + a[1];
			continue;
		}
		GRAMMAR(a[0] + a[1] <= lmax, "past -l: %s", line);
		if (!strcmp(name, "collapse_range"))
			size -= a[1];
		else if (!strcmp(name, "insert_range"))
			size += a[1];
		else if ((!strcmp(name, "write") || !strcmp(name, "fallocate") ||
			  !strcmp(name, "zero_range")) &&
			 !strstr(line, "keep_size") && a[0] + a[1] > size)
			size = a[0] + a[1];
	}
	GRAMMAR(lines == nmax, "%u op lines, -N %u", lines, nmax);
	return NULL;
}

TEST(fsx_export_lines_keep_to_fsx_grammar_and_limits)
{
	struct rng r;

	rng_seed(&r, 21);
	for (int round = 0; round < 30; round++) {
		struct op_seq a;
		char err[200], *buf = NULL;
		size_t len = 0;
		FILE *f;

		op_seq_init(&a);
		fsx_subset(&r, &a, 100);
		/* and ops past fsx's defaults: longer than 64k, files past
		 * 256k, range ops within the file, syncs */
		for (int k = 0; k < 40; k++) {
			struct op op = { 0 };

			switch (rng_below(&r, 5)) {
			case 0:
				op.kind = OP_PWRITE;
				op.off = rng_below(&r, 4 << 20);
				op.len = 1 + rng_below(&r, 1 << 20);
				break;
			case 1:
				op.kind = OP_PREAD;
				op.off = rng_below(&r, 4 << 20);
				op.len = 1 + rng_below(&r, 1 << 20);
				break;
			case 2:
				op.kind = (uint8_t)(OP_COPY_RANGE + rng_below(&r, 3));
				op.off = 4096 * rng_below(&r, 64);
				op.len = 4096 * (1 + rng_below(&r, 64));
				op.arg = 4096 * rng_below(&r, 256);
				break;
			case 3:
				op.kind = (uint8_t)(OP_FSYNC + rng_below(&r, 3));
				break;
			default:
				op.kind = OP_FZERO;
				op.off = rng_below(&r, 2 << 20);
				op.len = 1 + rng_below(&r, 1 << 20);
				break;
			}
			op_normalize(&op);
			CHECK_OK(op_seq_push(&a, &op));
		}
		f = open_memstream(&buf, &len);
		CHECK(f);
		CHECK_MSG(op_fsx_export(&a, f, 4096, NULL, err, sizeof(err)) == 0,
			  "%s", err);
		fclose(f);
		{
			char why[600];

			CHECK_MSG(!fsx_grammar_error(buf, why, sizeof(why)),
				  "round %d: %s", round, why);
		}
		free(buf);
		op_seq_free(&a);
	}
}

TEST(fsx_grammar_check_catches_a_bad_line)
{
	/* the checker above must be able to fail */
	static const char *const bad[] = {
		"# replay: fsx -q -N 1 -l 4096 -o 16\nwrite 0x0 0x20 0x0\n",
		"# replay: fsx -q -N 1 -l 16 -o 4096\nwrite 0x0 0x20 0x0\n",
		"# replay: fsx -q -N 1 -l 64 -o 64\nwrite 0x0 0x20 0x10\n",
		"# replay: fsx -q -N 1 -l 64 -o 64\nfsync 0x0 0x0 0x0\n",
		"# replay: fsx -q -N 1 -l 64 -o 64\nwrite 0x0 0x20 0x0 keep_size\n",
		"# replay: fsx -q -N 2 -l 64 -o 64\nwrite 0x0 0x20 0x0\n",
		"# replay: fsx -q -N 1 -l 64 -o 64\nread 0x0 0x20 0x0\n",
	};

	char why[600];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(fsx_grammar_error(bad[i], why, sizeof(why)),
			  "case %zu passed the grammar check", i);
}

TEST(fsx_garbage_files_fail_to_load)
{
	struct op_seq seq;
	char err[300];
	uint8_t junk[64];
	struct rng r;

	op_seq_init(&seq);
	CHECK_EQ(op_load_buf("", 0, OP_FORM_AUTO, NULL, &seq, NULL, err,
			     sizeof(err)), -EINVAL);
	CHECK(strstr(err, "empty file"));
	rng_seed(&r, 11);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rng_next(&r);
	junk[3] = 0;
	CHECK_EQ(op_load_buf(junk, sizeof(junk), OP_FORM_AUTO, NULL, &seq, NULL,
			     err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "--format binary"));
	/* Forced, the same bytes decode: the binary form is total. */
	CHECK_OK(op_load_buf(junk, sizeof(junk), OP_FORM_BINARY, NULL, &seq,
			     NULL, err, sizeof(err)));
	op_seq_free(&seq);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
