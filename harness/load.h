/*
 * load.h - read an op sequence from a file in any of its forms: text,
 * .fsxops or binary, told apart by content (or forced).
 *
 * Detection: a leading OP_BIN_MAGIC is binary; bytes no text has (NUL,
 * control characters other than tab/CR/LF) are an error, since raw
 * fuzzer bytes decode to *something* and replaying them by accident
 * would hide a mistake (force them with OP_FORM_BINARY); a first op line
 * in fsx's words with fsx's numbers is .fsxops; anything else is text.
 * An empty file is an error in every form.
 */
#ifndef FSORACLE_HARNESS_LOAD_H
#define FSORACLE_HARNESS_LOAD_H

#include <stddef.h>

#include "harness/binary.h"
#include "harness/op.h"

enum op_form {
	OP_FORM_AUTO = 0,
	OP_FORM_TEXT,
	OP_FORM_BINARY,
	OP_FORM_FSX,
};

/* "auto", "text", "binary", "fsx" -> form; -EINVAL for anything else. */
int op_form_parse(const char *s, enum op_form *out);
const char *op_form_name(enum op_form f);

/* What a load found. */
struct op_load_info {
	enum op_form form;      /* the form used                              */
	size_t fsx_skipped;     /* .fsxops `skip` lines (fsx did not run them) */
};

/*
 * Load buf (len bytes) into seq (appending).  info may be NULL.  g is the
 * binary geometry (NULL: defaults).  0, or -EINVAL / -ENOMEM with one
 * line in err (without the file name).
 */
int op_load_buf(const void *buf, size_t len, enum op_form form,
		const struct op_geom *g, struct op_seq *seq,
		struct op_load_info *info, char *err, size_t errlen);

/* The same for a file; err starts with the path. */
int op_load_file(const char *path, enum op_form form, const struct op_geom *g,
		 struct op_seq *seq, struct op_load_info *info, char *err,
		 size_t errlen);

/* Read a whole file (at most 256 MiB).  0 or -errno; free(*buf). */
int op_read_file(const char *path, char **buf, size_t *len);

#endif
