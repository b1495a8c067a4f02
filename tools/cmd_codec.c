/*
 * cmd_codec.c - `fsoracle decode` and `fsoracle encode`: convert op
 * sequences between their forms.  decode turns fuzzer bytes into a text
 * log a person can read (or an .fsxops log fsx can replay); encode turns
 * a text or .fsxops log into the binary form fuzzers start from.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/binary.h"
#include "harness/fsx.h"
#include "harness/load.h"
#include "harness/text.h"
#include "hw/hw.h"
#include "tools/cmds.h"
#include "tools/common.h"

static const char decode_usage[] =
"usage: fsoracle decode [OPTIONS] FILE\n"
"\n"
"Decode a binary op sequence (raw fuzzer bytes, or a file from `fsoracle\n"
"encode`) and print it as a text op log, or as an .fsxops log with\n"
"--to fsx.  Decoding never fails: every byte string is some sequence\n"
"(values are clamped to the geometry, a zero kind byte ends it).\n"
"\n"
"Options:\n"
"  --format F       input form: binary (default), text, fsx or auto\n"
"  --to text|fsx    output form (default text)\n"
"  --files N        geometry: files f0..f(N-1) (default 4)\n"
"  --max-file SIZE  geometry: offsets and range ends clamp here (16m)\n"
"  --bs SIZE        block size fsx's collapse/insert use (--to fsx; 4096)\n"
"  -o OUT           write here instead of stdout\n"
"\n"
"fsx works on one file: a log whose ops use several files goes out as\n"
"one .fsxops log per file (--to fsx -o OUT.fsxops writes OUT.NAME.fsxops\n"
"for each file NAME), as long as no op ties two files together (a range\n"
"op between them, a crash).  Each log's first lines give the fsx command\n"
"that replays it (-l, -o and -N as the log needs; fsync lines are\n"
"comments, since fsx runs fsync only with -i LOGDEV).\n"
"\n"
"Exit status: 0 done; 2 bad usage, an unreadable or empty FILE, a\n"
"malformed text/fsx FILE, or (--to fsx) a sequence fsx cannot express.\n";

static const char encode_usage[] =
"usage: fsoracle encode [OPTIONS] FILE\n"
"\n"
"Encode a text op log or .fsxops log as a binary op sequence: 16 bytes\n"
"an op after an 8-byte magic (--raw: no magic, what a fuzzer corpus\n"
"holds).  Values the binary form cannot carry exactly (outside the\n"
"geometry, between its representable values, pwrite/pread -b) are\n"
"encoded as the nearest smaller op and counted in a warning; decode the\n"
"output to see the result.\n"
"\n"
"Options:\n"
"  --format F       input form: auto (default), text or fsx\n"
"  --files N        geometry: files f0..f(N-1) (default 4)\n"
"  --max-file SIZE  geometry: offsets and range ends clamp here (16m)\n"
"  --raw            no magic header\n"
"  -o OUT           write here (default: stdout, if it is not a terminal)\n"
"\n"
"Exit status: 0 done (even with a warning); 2 bad usage, an unreadable,\n"
"empty or malformed FILE, or binary output to a terminal.\n";

struct codec_opts {
	enum op_form form;
	int to_fsx, raw;
	uint32_t bs;
	struct op_geom geom;
	const char *out, *file;
};

static int parse(int argc, char **argv, struct codec_opts *o, int encode)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t sz;

		if (!strcmp(a, "--format") && v) {
			if (op_form_parse(v, &o->form) ||
			    (encode && o->form == OP_FORM_BINARY)) {
				errmsg("--format: '%s' is not %s", v, encode ?
				       "auto, text or fsx" : "auto, text, binary or fsx");
				return -EINVAL;
			}
			i++;
		} else if (!encode && !strcmp(a, "--to") && v) {
			if (strcmp(v, "text") && strcmp(v, "fsx")) {
				errmsg("--to: '%s' is not text or fsx", v);
				return -EINVAL;
			}
			o->to_fsx = !strcmp(v, "fsx");
			i++;
		} else if (!strcmp(a, "--files") && v) {
			char *end;
			unsigned long n = strtoul(v, &end, 10);

			if (*end || end == v || n < 1 || n > OP_MAX_FILES) {
				errmsg("--files: want 1..%d, got '%s'", OP_MAX_FILES, v);
				return -EINVAL;
			}
			o->geom.nfiles = (uint32_t)n;
			i++;
		} else if (!strcmp(a, "--max-file") && v) {
			if (hw_parse_size(v, &sz) || sz < 512) {
				errmsg("--max-file: bad size '%s'", v);
				return -EINVAL;
			}
			o->geom.max_file = sz;
			i++;
		} else if (!encode && !strcmp(a, "--bs") && v) {
			if (hw_parse_size(v, &sz) || sz < 512 || sz > 65536 ||
			    (sz & (sz - 1))) {
				errmsg("--bs: want a power of two in 512..64k, got '%s'",
				       v);
				return -EINVAL;
			}
			o->bs = (uint32_t)sz;
			i++;
		} else if (encode && !strcmp(a, "--raw")) {
			o->raw = 1;
		} else if (!strcmp(a, "-o") && v) {
			o->out = v;
			i++;
		} else if (a[0] == '-' && a[1]) {
			errmsg("unknown option or missing value '%s' (see --help)", a);
			return -EINVAL;
		} else if (o->file) {
			errmsg("one FILE at a time (got '%s' and '%s')", o->file, a);
			return -EINVAL;
		} else {
			o->file = a;
		}
	}
	if (!o->file) {
		errmsg("no FILE given (see --help)");
		return -EINVAL;
	}
	return 0;
}

static FILE *open_out(const char *path)
{
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return stdout;
	f = fopen(path, "wb");
	if (!f)
		errmsg("cannot write %s: %s", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *path)
{
	int bad = ferror(f);

	if (f == stdout)
		bad |= fflush(f) != 0;
	else
		bad |= fclose(f) != 0;
	if (bad) {
		errmsg("writing %s failed", path && strcmp(path, "-") ? path :
		       "stdout");
		return EXIT_IO;
	}
	return 0;
}

/*
 * A log over several files: one .fsxops per file, OUT.NAME.fsxops (OUT
 * without its .fsxops).  Every file is checked before any is written.
 */
static int decode_fsx_per_file(const struct op_seq *seq,
			       const struct codec_opts *o, uint32_t used)
{
	char err[512], path[4096];
	size_t stem;
	int rc = 0;

	if (!o->out || !strcmp(o->out, "-")) {
		errmsg("%s: the ops use %d files and fsx works on one: give -o "
		       "OUT.fsxops for one log per file", o->file,
		       __builtin_popcount(used));
		return EXIT_USAGE;
	}
	for (unsigned i = 0; i < OP_MAX_FILES; i++)
		if ((used & (1u << i)) &&
		    op_fsx_check_file(seq, i, err, sizeof(err))) {
			errmsg("%s: file %s: %s", o->file, op_file_name(seq, i),
			       err);
			return EXIT_USAGE;
		}
	stem = strlen(o->out);
	if (stem > 7 && !strcmp(o->out + stem - 7, ".fsxops"))
		stem -= 7;
	for (unsigned i = 0; i < OP_MAX_FILES && !rc; i++) {
		struct op_fsx_stats st;
		FILE *f;

		if (!(used & (1u << i)))
			continue;
		snprintf(path, sizeof(path), "%.*s.%s.fsxops", (int)stem, o->out,
			 op_file_name(seq, i));
		f = open_out(path);
		if (!f)
			return EXIT_USAGE;
		if (op_fsx_export_file(seq, i, f, o->bs, &st, err, sizeof(err))) {
			errmsg("%s: %s", path, err);
			rc = EXIT_USAGE;
		}
		errmsg("%s: %zu op lines of %s (%zu adjusted, %zu left as "
		       "comments, %zu fsyncs as comments)", path, st.written,
		       op_file_name(seq, i), st.adjusted, st.omitted, st.fsyncs);
		if (close_out(f, path))
			rc = EXIT_IO;
	}
	return rc;
}

int cmd_decode(int argc, char **argv)
{
	struct codec_opts o = { .form = OP_FORM_BINARY };
	struct op_seq seq;
	char err[512];
	FILE *out;
	int rc = 0;

	prog_cmd = "fsoracle decode";
	if (wants_help(argc, argv)) {
		fputs(decode_usage, stdout);
		return 0;
	}
	if (parse(argc, argv, &o, 0))
		return EXIT_USAGE;
	op_seq_init(&seq);
	if (op_load_file(o.file, o.form, &o.geom, &seq, NULL, err, sizeof(err))) {
		errmsg("%s", err);
		rc = EXIT_USAGE;
		goto out;
	}
	if (o.to_fsx) {
		uint32_t used = op_fsx_files(&seq);

		if (used & (used - 1)) {
			rc = decode_fsx_per_file(&seq, &o, used);
			goto out;
		}
	}
	out = open_out(o.out);
	if (!out) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (o.to_fsx) {
		struct op_fsx_stats st;

		if (op_fsx_export(&seq, out, o.bs, &st, err, sizeof(err))) {
			errmsg("%s: %s", o.file, err);
			rc = EXIT_USAGE;
		} else if (st.adjusted || st.omitted) {
			errmsg("note: %zu ops adjusted for fsx, %zu left as comments "
			       "(see the log's first lines)", st.adjusted, st.omitted);
		}
	} else {
		op_text_write(&seq, out);
	}
	{
		int r = close_out(out, o.out);

		if (!rc)
			rc = r;
	}
out:
	op_seq_free(&seq);
	return rc;
}

int cmd_encode(int argc, char **argv)
{
	struct codec_opts o = { .form = OP_FORM_AUTO };
	struct op_seq seq;
	struct op_load_info info;
	char err[512];
	uint8_t *buf = NULL;
	size_t need, lossy = 0;
	FILE *out;
	int rc = 0;

	prog_cmd = "fsoracle encode";
	if (wants_help(argc, argv)) {
		fputs(encode_usage, stdout);
		return 0;
	}
	if (parse(argc, argv, &o, 1))
		return EXIT_USAGE;
	if ((!o.out || !strcmp(o.out, "-")) && isatty(STDOUT_FILENO)) {
		errmsg("binary output to a terminal: give -o OUT or redirect");
		return EXIT_USAGE;
	}
	op_seq_init(&seq);
	if (op_load_file(o.file, o.form, &o.geom, &seq, &info, err,
			 sizeof(err))) {
		errmsg("%s", err);
		rc = EXIT_USAGE;
		goto out;
	}
	need = op_bin_encode(&seq, &o.geom, !o.raw, NULL, 0, NULL);
	buf = malloc(need ? need : 1);
	if (!buf) {
		errmsg("out of memory");
		rc = EXIT_IO;
		goto out;
	}
	op_bin_encode(&seq, &o.geom, !o.raw, buf, need, &lossy);
	out = open_out(o.out);
	if (!out) {
		rc = EXIT_USAGE;
		goto out;
	}
	fwrite(buf, 1, need, out);
	rc = close_out(out, o.out);
	if (lossy)
		errmsg("warning: %zu of %zu ops changed by encoding (outside the "
		       "geometry, between representable values, or -b); decode "
		       "the output to see them", lossy, seq.n);
	if (info.fsx_skipped)
		errmsg("note: %zu fsx `skip` lines not encoded (fsx did not run "
		       "them)", info.fsx_skipped);
out:
	free(buf);
	op_seq_free(&seq);
	return rc;
}
