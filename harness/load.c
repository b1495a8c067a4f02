/*
 * load.c - read an op sequence from a file in whichever form it is in
 * (load.h).
 */
#include "harness/load.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fsx.h"
#include "harness/text.h"

#define MAX_FILE ((size_t)256 << 20)

int op_form_parse(const char *s, enum op_form *out)
{
	static const char *const n[] = { "auto", "text", "binary", "fsx" };

	for (int i = 0; i < 4; i++)
		if (!strcmp(s, n[i])) {
			*out = (enum op_form)i;
			return 0;
		}
	return -EINVAL;
}

const char *op_form_name(enum op_form f)
{
	switch (f) {
	case OP_FORM_TEXT: return "text";
	case OP_FORM_BINARY: return "binary";
	case OP_FORM_FSX: return "fsx";
	default: return "auto";
	}
}

/* Offset of the first byte no text file has, or len. */
static size_t first_nontext(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') ||
		    p[i] == 0x7f)
			return i;
	return len;
}

int op_load_buf(const void *buf, size_t len, enum op_form form,
		const struct op_geom *g, struct op_seq *seq,
		struct op_load_info *info, char *err, size_t errlen)
{
	const char *text = buf;
	struct op_load_info local;
	int ret;

	if (!info)
		info = &local;
	memset(info, 0, sizeof(*info));
	if (len == 0) {
		snprintf(err, errlen, "empty file: no ops, no header");
		return -EINVAL;
	}
	if (form == OP_FORM_AUTO) {
		size_t bad;

		if (len >= OP_BIN_MAGIC_LEN &&
		    !memcmp(buf, OP_BIN_MAGIC, OP_BIN_MAGIC_LEN)) {
			form = OP_FORM_BINARY;
		} else if ((bad = first_nontext(buf, len)) < len) {
			snprintf(err, errlen, "byte 0x%02x at offset %zu: not a text "
				 "op log, an .fsxops log or an fsoracle binary file "
				 "(no FSOP magic); for raw fuzzer bytes use "
				 "--format binary", ((const unsigned char *)buf)[bad],
				 bad);
			return -EINVAL;
		} else if (op_fsx_detect(text, len)) {
			form = OP_FORM_FSX;
		} else {
			form = OP_FORM_TEXT;
		}
	}
	info->form = form;
	switch (form) {
	case OP_FORM_BINARY:
		ret = op_bin_decode(buf, len, g, seq);
		if (ret)
			snprintf(err, errlen, "out of memory");
		return ret;
	case OP_FORM_FSX: {
		struct op_fsx_stats st;

		ret = op_fsx_import(text, len, seq, &st, err, errlen);
		info->fsx_skipped = st.skipped;
		return ret;
	}
	default:
		return op_text_parse(text, len, seq, err, errlen);
	}
}

int op_read_file(const char *path, char **bufp, size_t *lenp)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int ret = 0;

	if (!f)
		return -errno;
	for (;;) {
		size_t n;

		if (len == cap) {
			char *nb;

			if (cap >= MAX_FILE) {
				ret = -EFBIG;
				goto out;
			}
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		errno = 0;
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f)) /* say why: a directory is EISDIR */
				ret = errno ? -errno : -EIO;
			break;
		}
	}
out:
	fclose(f);
	if (ret) {
		free(buf);
		return ret;
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return -ENOMEM;
	}
	buf[len] = 0;
	*bufp = buf;
	*lenp = len;
	return 0;
}

int op_load_file(const char *path, enum op_form form, const struct op_geom *g,
		 struct op_seq *seq, struct op_load_info *info, char *err,
		 size_t errlen)
{
	char *buf = NULL, e[400];
	size_t len = 0;
	int ret = op_read_file(path, &buf, &len);

	if (ret) {
		snprintf(err, errlen, "%s: %s", path, ret == -EFBIG ?
			 "larger than 256 MiB" : strerror(-ret));
		return ret;
	}
	ret = op_load_buf(buf, len, form, g, seq, info, e, sizeof(e));
	if (ret)
		snprintf(err, errlen, "%s: %s", path, e);
	free(buf);
	return ret;
}
