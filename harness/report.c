/*
 * report.c - explain a checker failure: which targets disagreed, at which
 * op, the first differing bytes as an OFFSET/GOOD/BAD table, the op that
 * last wrote there, what the bad bytes look like, and the op log written
 * to a file that `fsoracle replay` takes as is.
 *
 * The last writer is found by walking the log backwards from the failure
 * rather than by tracking writers per byte as ops run: the soak pays
 * nothing for it, and a failure is rare.  Collapse and insert move bytes,
 * so the walk follows the byte back to where it was before each of them.
 */
#include "harness/check_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "harness/text.h"

#define TABLE_ROWS 16

static int in_range(uint64_t x, uint64_t off, uint64_t len)
{
	return x >= off && x - off < len;
}

uint64_t check_last_writer(const struct checker *c, uint64_t upto,
			   unsigned file, uint64_t off)
{
	if (upto > c->log.n)
		upto = c->log.n;
	for (uint64_t i = upto; i-- > 0;) {
		const struct op *op = &c->log.ops[i];
		int64_t r = c->res[i];

		if (r == CHECK_RES_SKIPPED || (r < 0 && op->kind != OP_PWRITE))
			continue;
		if (op->kind == OP_CRASH ||
		    (op->kind == OP_CUT && !OP_CUT_POINT(op->arg))) {
			if ((uint64_t)r & (1u << file))
				return i + 1; /* recovered state was adopted */
			continue;
		}
		if (op->file != file &&
		    !(op->kind == OP_EXCHANGE_RANGE && op->file2 == file))
			continue;
		switch (op->kind) {
		case OP_PWRITE:
			if (r > 0 && in_range(off, op->off, (uint64_t)r))
				return i + 1;
			break;
		case OP_TRUNCATE:
			if (off >= op->arg)
				return i + 1; /* cut off here, zero since */
			break;
		case OP_FPUNCH:
		case OP_FZERO:
			if (in_range(off, op->off, op->len))
				return i + 1;
			break;
		case OP_FCOLLAPSE:
			if (off >= op->off)
				off += op->len; /* it came from further right */
			break;
		case OP_FINSERT:
			if (in_range(off, op->off, op->len))
				return i + 1;
			if (off >= op->off + op->len)
				off -= op->len;
			break;
		case OP_COPY_RANGE:
			if (r > 0 && in_range(off, op->arg, (uint64_t)r))
				return i + 1;
			break;
		case OP_CLONE_RANGE:
			if (in_range(off, op->arg, op->len ? op->len : UINT64_MAX))
				return i + 1;
			break;
		case OP_EXCHANGE_RANGE:
			if ((op->file == file && in_range(off, op->arg, op->len)) ||
			    (op->file2 == file && in_range(off, op->off, op->len)))
				return i + 1;
			break;
		case OP_UNLINK:
			return i + 1;
		default:
			break;
		}
	}
	return 0;
}

static void op_line(const struct checker *c, uint64_t opno, char *buf,
		    size_t len)
{
	const struct op *op = &c->log.ops[opno - 1];
	char text[256];

	op_format(op, &c->log, text, sizeof(text));
	if (op_kind_info(op->kind)->uses & OP_USE_FILE &&
	    op->kind != OP_OPEN && op->kind != OP_UNLINK)
		snprintf(buf, len, "#%llu %s   [file %s]",
			 (unsigned long long)opno, text,
			 op_file_name(&c->log, op->file));
	else
		snprintf(buf, len, "#%llu %s", (unsigned long long)opno, text);
}

/* The latest generated pwrite to file whose tag is b: who wrote bad data. */
static uint64_t tag_owner(const struct checker *c, unsigned file, uint8_t b)
{
	for (uint64_t i = c->log.n; i-- > 0;) {
		const struct op *op = &c->log.ops[i];

		if (op->kind == OP_PWRITE && op->file == file &&
		    !(op->flags & OP_FL_PATTERN) && op_fill_tag(i + 1) == b &&
		    c->res[i] != CHECK_RES_SKIPPED)
			return i + 1;
	}
	return 0;
}

/* A device that failed I/O on purpose (its faulty layer) says so: what
 * follows from an injected error is no finding by itself. */
static void injected_note(const struct checker *c, FILE *out)
{
	for (int i = 0; i < c->n; i++) {
		struct target *t = c->t[i];
		int64_t n = t->ops->injected ? t->ops->injected(t) : 0;

		if (n > 0)
			fprintf(out, "  %s: its device failed %lld I/O%s on "
				"purpose (the faulty layer);\n  what follows from "
				"an injected error is no finding by itself\n",
				t->name, (long long)n, n == 1 ? "" : "s");
	}
}

static void data_table(const struct checker *c, FILE *out, unsigned file,
		       const uint8_t *good, const uint8_t *bad, uint64_t base,
		       size_t n)
{
	size_t first = n, last = 0, count = 0, rows = 0;
	char line[400];
	uint64_t w;

	for (size_t i = 0; i < n; i++)
		if (good[i] != bad[i]) {
			if (first == n)
				first = i;
			last = i;
			count++;
		}
	if (first == n)
		return;
	fprintf(out, "  %s: %zu bytes differ in 0x%llx..0x%llx\n",
		op_file_name(&c->log, file), count,
		(unsigned long long)(base + first),
		(unsigned long long)(base + last));
	fprintf(out, "    OFFSET        GOOD  BAD\n");
	for (size_t i = first; i <= last && rows < TABLE_ROWS; i++) {
		if (good[i] == bad[i])
			continue;
		fprintf(out, "    0x%010llx  0x%02x  0x%02x\n",
			(unsigned long long)(base + i), good[i], bad[i]);
		rows++;
	}
	w = check_last_writer(c, c->log.n, file, base + first);
	if (w) {
		op_line(c, w, line, sizeof(line));
		fprintf(out, "  the op that last wrote 0x%llx: %s\n",
			(unsigned long long)(base + first), line);
	} else {
		fprintf(out, "  no op wrote 0x%llx since the file was created "
			"(it should read as zero)\n",
			(unsigned long long)(base + first));
	}
	/* Generated data names its op in the even bytes (op_fill). */
	{
		size_t e = first + ((base + first) & 1);

		if (e <= last && bad[e] == 0) {
			fprintf(out, "  the bad bytes are zeros: data lost, or a "
				"hole where data was expected\n");
		} else if (e <= last) {
			uint64_t owner = tag_owner(c, file, bad[e]);

			if (owner) {
				op_line(c, owner, line, sizeof(line));
				fprintf(out, "  the bad bytes look like data of %s\n",
					line);
			} else {
				fprintf(out, "  the bad bytes match no generated "
					"write to this file (op # mod 255 would be "
					"%u)\n", (unsigned)(bad[e] - 1));
			}
		}
	}
}

int check_fail(struct checker *c, int status, int bad, unsigned file,
	       const uint8_t *good, const uint8_t *badbuf, uint64_t base_off,
	       size_t n, const char *fmt, ...)
{
	struct check_failure *f = &c->fail;
	FILE *out = c->cfg.out;
	char line[400], skip[512];
	const char *path;
	int nomem_now = errno == ENOMEM; /* before anything here sets it */
	va_list ap;

	/* under a memory limit, after an allocation failed (check.h) */
	if (c->mem_limited && (nomem_now || c->nomem_op))
		status = CHECK_NOMEM;
	memset(f, 0, sizeof(*f));
	f->status = status;
	f->opno = c->log.n;
	f->at_verify = c->verifying > 0;
	f->file = file;
	snprintf(f->good, sizeof(f->good), "%s", c->t[c->ref]->name);
	snprintf(f->bad, sizeof(f->bad), "%s", c->t[bad]->name);
	va_start(ap, fmt);
	vsnprintf(f->what, sizeof(f->what), fmt, ap);
	va_end(ap);
	if (good && badbuf) {
		for (size_t i = 0; i < n; i++)
			if (good[i] != badbuf[i]) {
				f->offset = base_off + i;
				break;
			}
	}
	c->status = status;

	if (!c->cfg.quiet && out) {
		if (status == CHECK_NOMEM) /* the line below says who */
			fprintf(out, "fsoracle: %s (exit %d)\n",
				check_status_name(status), status);
		else if (status == CHECK_AUDIT || status == CHECK_INTERNAL)
			fprintf(out, "fsoracle: %s (exit %d) on %s\n",
				check_status_name(status), status, f->bad);
		else
			fprintf(out, "fsoracle: %s (exit %d) between %s (good) "
				"and %s (bad)\n", check_status_name(status),
				status, f->good, f->bad);
		if (f->opno) {
			op_line(c, f->opno, line, sizeof(line));
			fprintf(out, "  %s %s\n", f->at_verify ?
				"found by the verify/audit after op" : "at op", line);
		} else {
			fprintf(out, "  before any op\n");
		}
		fprintf(out, "  %s\n", f->what);
		if (status == CHECK_NOMEM && nomem_now)
			fprintf(out, "  an allocation failed there, under this "
				"process's memory limit: no finding;\n"
				"  replay the log with more memory\n");
		else if (status == CHECK_NOMEM)
			fprintf(out, "  an allocation failed at op #%llu, under "
				"this process's memory limit, and the\n"
				"  targets went on: this may follow from it, no "
				"finding; replay the log with\n  more memory\n",
				(unsigned long long)c->nomem_op);
		injected_note(c, out);
		if (good && badbuf)
			data_table(c, out, file, good, badbuf, base_off, n);
		check_skip_summary(c, skip, sizeof(skip));
		if (skip[0])
			fprintf(out, "  %s\n", skip);
	}
	path = c->cfg.log_path && c->cfg.log_name ?
	       c->cfg.log_name(c->cfg.log_name_arg) : c->cfg.log_path;
	if (path) {
		int ret = check_write_log(c, path);

		if (!c->cfg.quiet && out) {
			if (ret)
				fprintf(out, "  could not write the op log to %s: "
					"%s\n", path, strerror(-ret));
			else if (status == CHECK_NOMEM)
				fprintf(out, "  op log (%zu ops) written to %s\n"
					"  replay: fsoracle replay %s\n",
					c->log.n, path, path);
			else
				fprintf(out, "  op log (%zu ops) written to %s\n"
					"  replay: fsoracle replay %s\n"
					"  shrink: fsoracle minimize %s\n",
					c->log.n, path, path, path);
		}
	}
	return status;
}

int check_write_log(const struct checker *c, const char *path)
{
	struct op_header h = c->log.hdr;
	FILE *f = fopen(path, "w");
	char line[400];
	int ret;

	if (!f)
		return -errno;
	if (c->cfg.targets)
		snprintf(h.targets, sizeof(h.targets), "%s", c->cfg.targets);
	op_text_write_header(&h, f);
	if (c->note[0])
		fprintf(f, "# %s\n", c->note);
	target_list_devnote(c->t, c->n, line, sizeof(line));
	if (line[0])
		fprintf(f, "# %s\n", line);
	if (c->status) {
		fprintf(f, "# fsoracle: %s (exit %d) between %s and %s\n",
			check_status_name(c->status), c->status, c->fail.good,
			c->fail.bad);
		if (c->fail.opno) {
			op_line(c, c->fail.opno, line, sizeof(line));
			fprintf(f, "# at op %s\n", line);
		}
		fprintf(f, "# %s\n", c->fail.what);
	}
	ret = op_text_write_ops(&c->log, f);
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}
