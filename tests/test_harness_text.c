/*
 * test_harness_text.c - the text form: canonical text round-trips exactly,
 * every xfs_io word parses, numbers and names mean what they say, and bad
 * input fails with the line and column of the problem.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/binary.h"
#include "harness/check.h"
#include "harness/rng.h"
#include "harness/text.h"
#include "ref/ref.h"
#include "tests/test.h"

/* Print seq's canonical text into a malloc'd string. */
static char *print_seq(const struct op_seq *seq)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	op_text_write(seq, f);
	fclose(f);
	return buf;
}

static int parse(const char *text, struct op_seq *seq, char *err, size_t n)
{
	op_seq_init(seq);
	return op_text_parse(text, strlen(text), seq, err, n);
}

static const char canonical[] =
	"#! fsoracle dev=mem:64m mkfs=bs=4k,maxrecs=4 targets=engine,model\n"
	"open -f f0\n"
	"pwrite -S 0x5a -b 4k 0 64k\n"
	"pwrite 4097 1m\n"
	"pread -v 0 64k\n"
	"pread -b 512 3 7\n"
	"truncate 4k\n"
	"falloc -k 0 1m\n"
	"falloc -u 8k 4k\n"
	"falloc -k -u 8k 4k\n"
	"fpunch 0 4k\n"
	"fzero -k 0 4k\n"
	"fzero 12k 1\n"
	"fcollapse 4k 4k\n"
	"finsert 4k 8k\n"
	"open -f data\n"
	"copy_range -s 0 -d 8k -l 4k f0\n"
	"reflink f0 0 4k 4k\n"
	"dedupe f0 0 4k 4k\n"
	"exchangerange -s 0 -d 4k -l 4k f0\n"
	"fsync\n"
	"fdatasync\n"
	"sync\n"
	"writeback\n"
	"drop_caches\n"
	"remount\n"
	"crash\n"
	"chattr +r\n"
	"chattr -ojc\n"
	"close\n"
	"unlink f0\n"
	"file f0\n"
	"truncate 16g\n"
	"pwrite 1t 3\n"
	"naive rt_truncate+forget\n"
	"fallback all\n"
	"naive none\n";

TEST(text_canonical_roundtrip_is_exact)
{
	struct op_seq seq;
	char err[200];
	char *out;

	CHECK_OK(parse(canonical, &seq, err, sizeof(err)));
	CHECK_EQ(seq.n, 35);
	out = print_seq(&seq);
	CHECK(out);
	CHECK_MSG(strcmp(out, canonical) == 0, "printed:\n%s", out);
	free(out);
	op_seq_free(&seq);
}

TEST(text_ops_mean_what_they_say)
{
	struct op_seq seq;
	char err[200];
	const struct op *o;

	CHECK_OK(parse("pwrite -S 0x5a -b 4k 0x1000 64k\n"
		       "open -f data\n"
		       "reflink f0 1k 2k 3k\n"
		       "copy_range -d 8k -l 4k -s 5 f0\n"
		       "falloc -k 0 1m\n"
		       "chattr -rc\n"
		       "truncate 0x10\n", &seq, err, sizeof(err)));
	CHECK_EQ(seq.n, 7);
	o = &seq.ops[0];
	CHECK_EQ(o->kind, OP_PWRITE);
	CHECK_EQ(o->file, 0);
	CHECK_EQ(o->off, 4096);
	CHECK_EQ(o->len, 65536);
	CHECK_EQ(o->bsize, 4096);
	CHECK_EQ(o->flags, OP_FL_PATTERN);
	CHECK_EQ(o->pattern, 0x5a);
	CHECK(strcmp(op_file_name(&seq, 0), "f0") == 0);
	o = &seq.ops[1];
	CHECK_EQ(o->kind, OP_OPEN);
	CHECK_EQ(o->flags, OP_FL_CREATE);
	CHECK_EQ(o->file, 1);
	CHECK(strcmp(op_file_name(&seq, 1), "data") == 0);
	o = &seq.ops[2];
	CHECK_EQ(o->kind, OP_CLONE_RANGE);
	CHECK_EQ(o->file, 1);   /* the current file is the destination */
	CHECK_EQ(o->file2, 0);
	CHECK_EQ(o->off, 1024);
	CHECK_EQ(o->arg, 2048);
	CHECK_EQ(o->len, 3072);
	o = &seq.ops[3];
	CHECK_EQ(o->kind, OP_COPY_RANGE);
	CHECK_EQ(o->off, 5);
	CHECK_EQ(o->arg, 8192);
	CHECK_EQ(o->len, 4096);
	o = &seq.ops[4];
	CHECK_EQ(o->flags, OP_FL_KEEP_SIZE);
	CHECK_EQ(o->len, 1 << 20);
	o = &seq.ops[5];
	CHECK_EQ(o->kind, OP_SET_FLAG);
	CHECK_EQ(o->arg, OP_ATTR_REALTIME | OP_ATTR_COMPRESS);
	CHECK_EQ(o->flags, OP_FL_CLEAR);
	CHECK_EQ(seq.ops[6].arg, 16);
	op_seq_free(&seq);
}

/* The switch ops carry a path mask and touch no file. */
TEST(text_switch_ops_carry_path_masks)
{
	struct op_seq seq;
	char err[200];

	CHECK_OK(parse("file f2\nnaive rt_truncate,forget\nfallback all\n"
		       "naive none\n", &seq, err, sizeof(err)));
	CHECK_EQ(seq.n, 3);
	CHECK_EQ(seq.ops[0].kind, OP_NAIVE);
	CHECK_EQ(seq.ops[0].arg, (1u << REF_PATH_RT_TRUNCATE) |
				 (1u << REF_PATH_FORGET));
	CHECK_EQ(seq.ops[0].file, 0);
	CHECK_EQ(seq.ops[1].kind, OP_FALLBACK);
	CHECK_EQ(seq.ops[1].arg, REF_PATHS_ALL);
	CHECK_EQ(seq.ops[2].arg, 0);
	op_seq_free(&seq);
}

TEST(text_parse_line_takes_every_xfs_io_word)
{
	static const char *const lines[] = {
		"open f1", "open -f f1", "close", "unlink f1",
		"pwrite 0 4k", "pwrite -S 0xcdcdcdcd 0 4k", "pwrite -q -b 1m 0 1g",
		"pread 0 1", "pread -v 0 1", "truncate 0", "falloc 0 1",
		"falloc -k 0 1", "funshare 0 4k", "fpunch 0 1", "fzero 0 1",
		"fzero -k 0 1", "fcollapse 0 4k", "finsert 0 4k",
		"copy_range -s 0 -d 0 -l 1 f1", "reflink f1 0 0 4k",
		"dedupe f1 0 0 4k", "exchangerange -s 0 -d 0 -l 1 f1",
		"fsync", "fdatasync", "sync", "writeback", "drop_caches",
		"remount", "crash", "chattr +r", "chattr -o", "chattr +jc",
		"naive all", "naive rt_truncate,forget", "fallback none",
		"  pwrite\t0   4k  # trailing comment",
	};
	struct op_seq seq;
	struct op_parser p;
	char err[200];

	op_seq_init(&seq);
	op_parser_init(&p, &seq);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct op op;
		int r = op_parse_line(&p, lines[i], &op, err, sizeof(err));

		CHECK_MSG(r == 1, "'%s' -> %d (%s)", lines[i], r, err);
	}
	CHECK_EQ(op_parse_line(&p, "# just a comment", NULL, err, sizeof(err)), 0);
	CHECK_EQ(op_parse_line(&p, "   ", NULL, err, sizeof(err)), 0);
	CHECK_EQ(op_parse_line(&p, "file f3", NULL, err, sizeof(err)), 0);
	CHECK_EQ(p.cur, 3);
	op_seq_free(&seq);
}

struct bad_case {
	const char *text;
	const char *msg;  /* the error must contain this */
};

TEST(text_parse_errors_name_line_and_column)
{
	static const struct bad_case cases[] = {
		{ "pwrite 0 4k\n\ntruncate x12\n", "line 3, col 10: bad number 'x12'" },
		{ "pwrtie 0 4k\n", "line 1, col 1: unknown command 'pwrtie'" },
		{ "pwrite 0\n", "line 1, col 9: missing argument" },
		{ "pwrite 0 4k 7\n", "line 1, col 13: extra argument '7'" },
		{ "pwrite -z 0 4k\n", "line 1, col 8: unknown option '-z'" },
		{ "pwrite 0 4q\n", "line 1, col 10: bad number '4q'" },
		{ "pwrite 0 99999999999999999999\n", "col 10: number too large" },
		{ "truncate 0x8000000000000000\n", "col 10: number too large" },
		{ "fsync\nchattr +x\n", "line 2, col 9: unknown attribute 'x'" },
		{ "open a/b\n", "line 1, col 6: bad file name" },
		{ "copy_range -s 0 -l 1 f0\n", "-s, -d and -l are required" },
		{ "#! fsoracle bogus=1\n", "line 1, col 13: unknown header key" },
		{ "#! fsoracle dev=mem:1m mkfs=bs=1k dev=mem:2m\n",
		  "line 1, col 35: header key 'dev' given twice" },
		{ "#! fsoracle opts=delalloc\n#! fsoracle mount=cache=2\n",
		  "line 2, col 13: header key 'mount' given twice" },
		{ "pwrite 0 4k\x01\n", "line 1, col 12: unexpected byte 0x01" },
		{ "naive rt_truncate+nosuch\n", "line 1, col 7: unknown path 'nosuch'" },
		{ "fallback\n", "line 1, col 9: missing argument: usage: fallback" },
		{ "naive all none\n", "line 1, col 11: extra argument 'none'" },
		{ "open f0\nopen f1\nopen f2\nopen f3\nopen f4\nopen f5\nopen f6\n"
		  "open f7\nopen f8\n", "line 9, col 6: too many files" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct op_seq seq;
		char err[200] = "";
		int r = parse(cases[i].text, &seq, err, sizeof(err));

		op_seq_free(&seq);
		CHECK_MSG(r == -EINVAL, "case %zu parsed (%d)", i, r);
		CHECK_MSG(strstr(err, cases[i].msg), "case %zu: got '%s', want '%s'",
			  i, err, cases[i].msg);
	}
}

TEST(text_nul_byte_is_an_error)
{
	struct op_seq seq;
	char err[200];

	op_seq_init(&seq);
	CHECK_EQ(op_text_parse("pwrite 0 4k\nfs\0ync\n", 18, &seq, err,
			       sizeof(err)), -EINVAL);
	CHECK(strstr(err, "line 2, col 3: NUL byte"));
	op_seq_free(&seq);
}

TEST(text_random_printable_garbage_fails_cleanly)
{
	struct rng r;
	char text[400];
	int failed = 0;

	rng_seed(&r, 7);
	for (int round = 0; round < 2000; round++) {
		struct op_seq seq;
		char err[200] = "";
		size_t n = 1 + rng_below(&r, sizeof(text) - 1);

		for (size_t i = 0; i < n; i++)
			text[i] = (char)(rng_below(&r, 10) == 0 ? '\n' :
					 0x20 + rng_below(&r, 0x5f));
		op_seq_init(&seq);
		if (op_text_parse(text, n, &seq, err, sizeof(err))) {
			failed++;
			CHECK_MSG(strncmp(err, "line ", 5) == 0, "error '%s'", err);
		}
		op_seq_free(&seq);
	}
	CHECK(failed > 1900);
}

TEST(text_header_fields_are_kept)
{
	struct op_seq seq;
	char err[200];

	CHECK_OK(parse("#! fsoracle dev=mem:1g rt=mem:64m mkfs=bs=1k mount=cache=8 "
		       "targets=engine,naive,model seed=42\n#! not ours\n", &seq,
		       err, sizeof(err)));
	CHECK(!strcmp(seq.hdr.dev, "mem:1g"));
	CHECK(!strcmp(seq.hdr.rtdev, "mem:64m"));
	CHECK(!strcmp(seq.hdr.mkfs, "bs=1k"));
	CHECK(!strcmp(seq.hdr.mount, "cache=8"));
	CHECK(!strcmp(seq.hdr.targets, "engine,naive,model"));
	CHECK(!strcmp(seq.hdr.seed, "42"));
	CHECK_EQ(seq.n, 0);
	op_seq_free(&seq);
}

TEST(text_header_check_asks_the_checker_and_is_validated)
{
	struct check_cfg cc = { 0 };
	struct op_seq seq;
	char err[200], back[OP_HDR_STR];

	CHECK_OK(parse("#! fsoracle targets=engine,fallback,model "
		       "check=each,twins=stat+refcount\n", &seq, err,
		       sizeof(err)));
	CHECK(!strcmp(seq.hdr.check, "each,twins=stat+refcount"));
	CHECK_OK(check_cfg_parse(seq.hdr.check, &cc, err, sizeof(err)));
	CHECK_EQ(cc.verify_each_op, 1);
	CHECK_EQ(cc.audit_every, 1);
	CHECK_EQ(cc.twins, (1u << TWIN_STAT) | (1u << TWIN_REFCOUNT));
	check_cfg_format(&cc, back, sizeof(back));
	CHECK(!strcmp(back, seq.hdr.check));
	op_seq_free(&seq);
	cc = (struct check_cfg){ 0 };
	CHECK_OK(check_cfg_parse("twins=all", &cc, err, sizeof(err)));
	CHECK_EQ(cc.twins, TWIN_ALL);
	/* all is what every path's twins share: not the image */
	CHECK(!(TWIN_ALL & (1u << TWIN_IMAGE)));
	cc = (struct check_cfg){ 0 };
	CHECK_OK(check_cfg_parse("twins=free+image", &cc, err, sizeof(err)));
	CHECK_EQ(cc.twins, (1u << TWIN_FREE) | (1u << TWIN_IMAGE));
	check_cfg_format(&cc, back, sizeof(back));
	CHECK(!strcmp(back, "twins=free+image"));
	CHECK(parse("#! fsoracle check=twins=bogus\n", &seq, err,
		    sizeof(err)) < 0);
	CHECK(strstr(err, "unknown twin part 'bogus'") != NULL);
	op_seq_free(&seq);
	CHECK(parse("#! fsoracle check=twins=stat+\n", &seq, err,
		    sizeof(err)) < 0);
	op_seq_free(&seq);
	CHECK(parse("#! fsoracle check=often\n", &seq, err, sizeof(err)) < 0);
	CHECK(strstr(err, "unknown word 'often'") != NULL);
	op_seq_free(&seq);
}

TEST(text_numbers_print_with_the_largest_exact_suffix)
{
	static const struct { uint64_t v; const char *s; } cases[] = {
		{ 0, "0" }, { 1, "1" }, { 1023, "1023" }, { 1024, "1k" },
		{ 6144, "6k" }, { 4097, "4097" }, { 1 << 20, "1m" },
		{ 3ull << 30, "3g" }, { 1ull << 40, "1t" }, { 5ull << 50, "5p" },
		{ (1ull << 30) + 1024, "1048577k" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char b[32];

		op_format_num(cases[i].v, b, sizeof(b));
		CHECK_MSG(!strcmp(b, cases[i].s), "%llu -> %s",
			  (unsigned long long)cases[i].v, b);
	}
}

/* IR from random binary -> text -> IR gives the same ops. */
TEST(text_ir_text_ir_roundtrip_random)
{
	struct rng r;
	uint8_t bytes[16 * 40];

	rng_seed(&r, 99);
	for (int round = 0; round < 500; round++) {
		struct op_geom g = { .max_file = 1ull << 34, .nfiles = 8 };
		struct op_seq a, b;
		char err[200], *text;

		for (size_t i = 0; i < sizeof(bytes); i++)
			bytes[i] = (uint8_t)rng_next(&r);
		for (size_t i = 0; i < sizeof(bytes); i += 16)
			if (!bytes[i])
				bytes[i] = 1;
		op_seq_init(&a);
		op_seq_init(&b);
		CHECK_OK(op_bin_decode(bytes, sizeof(bytes), &g, &a));
		text = print_seq(&a);
		CHECK(text);
		CHECK_MSG(op_text_parse(text, strlen(text), &b, err, sizeof(err)) == 0,
			  "%s\n%s", err, text);
		CHECK_EQ(a.n, b.n);
		for (size_t i = 0; i < a.n; i++)
			CHECK_MSG(op_equal(&a.ops[i], &b.ops[i]), "round %d op %zu",
				  round, i);
		free(text);
		op_seq_free(&a);
		op_seq_free(&b);
	}
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
