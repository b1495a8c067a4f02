/*
 * text.c - parse and print the text form of the op IR (see text.h).
 *
 * A line is cut into tokens (with their columns, for error messages),
 * then the first token picks a command (by op_kind_info's names) and the
 * rest are options (-x VALUE) and positional arguments, in any order, as
 * xfs_io's getopt allows; a table of syntaxes says which options and
 * arguments each kind takes and where they go in the op.  Printing emits the canonical spelling: options in a fixed
 * order, numbers with the largest exact k/m/g/t/p suffix.
 */
#include "harness/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "harness/check.h"
#include "ref/ref.h"

#define MAX_TOKENS 16
#define MAX_LINE 4096

struct tok {
	const char *s;  /* not NUL-terminated */
	size_t len;
	unsigned col;   /* 1-based */
};

struct line {
	struct tok t[MAX_TOKENS];
	unsigned n;
	unsigned endcol; /* column just past the last token */
};

static int fail(char *err, size_t errlen, unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, unsigned col, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !errlen)
		return -EINVAL;
	n = snprintf(err, errlen, "col %u: ", col);
	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Quote a token for a message, bounded and with odd bytes made visible. */
static const char *show(const struct tok *t, char *buf, size_t len)
{
	size_t j = 0;

	for (size_t i = 0; i < t->len && j + 5 < len; i++) {
		unsigned char c = (unsigned char)t->s[i];

		if (c >= 0x20 && c < 0x7f) {
			buf[j++] = (char)c;
		} else {
			snprintf(buf + j, len - j, "\\x%02x", c);
			j += 4;
		}
		if (i == 40 && t->len > 44) {
			memcpy(buf + j, "...", 3);
			j += 3;
			break;
		}
	}
	buf[j] = 0;
	return buf;
}

static int tok_is(const struct tok *t, const char *s)
{
	return t->len == strlen(s) && memcmp(t->s, s, t->len) == 0;
}

/* Split a line into tokens; '#' at a token start ends the line. */
static int tokenize(const char *s, struct line *ln, char *err, size_t errlen)
{
	unsigned col = 1;
	const char *p = s;

	ln->n = 0;
	ln->endcol = 1;
	while (*p && *p != '\n') {
		if (*p == ' ' || *p == '\t' || *p == '\r') {
			p++;
			col++;
			continue;
		}
		if (*p == '#')
			break;
		if (ln->n == MAX_TOKENS)
			return fail(err, errlen, col, "too many words (max %d)",
				    MAX_TOKENS);
		struct tok *t = &ln->t[ln->n++];

		t->s = p;
		t->col = col;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n' &&
		       *p != '\r') {
			unsigned char c = (unsigned char)*p;

			if (c < 0x20 || c >= 0x7f)
				return fail(err, errlen, col,
					    "unexpected byte 0x%02x (not text?)",
					    c);
			p++;
			col++;
		}
		t->len = (size_t)(p - t->s);
		ln->endcol = col;
	}
	return 0;
}

/* Numbers: decimal or 0x hex, optional k/m/g/t/p suffix. */
static int parse_num(const struct tok *t, uint64_t *out, char *err,
		     size_t errlen)
{
	char sb[64];
	uint64_t v = 0;
	unsigned base = 10;
	size_t i = 0;
	int digits = 0;

	if (t->len > 2 && t->s[0] == '0' && (t->s[1] == 'x' || t->s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	for (; i < t->len; i++) {
		int c = t->s[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (v > (UINT64_MAX - (uint64_t)d) / base)
			return fail(err, errlen, t->col, "number too large '%s'",
				    show(t, sb, sizeof(sb)));
		v = v * base + (uint64_t)d;
		digits++;
	}
	if (!digits)
		return fail(err, errlen, t->col, "bad number '%s'",
			    show(t, sb, sizeof(sb)));
	if (i < t->len) {
		unsigned shift;

		switch (t->s[i] | 0x20) {
		case 'k': shift = 10; break;
		case 'm': shift = 20; break;
		case 'g': shift = 30; break;
		case 't': shift = 40; break;
		case 'p': shift = 50; break;
		default:
			return fail(err, errlen, t->col, "bad number '%s'",
				    show(t, sb, sizeof(sb)));
		}
		if (i + 1 != t->len)
			return fail(err, errlen, t->col, "bad number '%s'",
				    show(t, sb, sizeof(sb)));
		if (v > (UINT64_MAX >> shift))
			return fail(err, errlen, t->col, "number too large '%s'",
				    show(t, sb, sizeof(sb)));
		v <<= shift;
	}
	/* Offsets and sizes are signed in the kernel (loff_t). */
	if (v > (uint64_t)INT64_MAX)
		return fail(err, errlen, t->col, "number too large '%s'",
			    show(t, sb, sizeof(sb)));
	*out = v;
	return 0;
}

void op_format_num(uint64_t v, char *buf, size_t len)
{
	static const char sfx[] = "kmgtp";

	if (v) {
		for (int i = 4; i >= 0; i--) {
			unsigned shift = 10 * (unsigned)(i + 1);

			if ((v & ((1ull << shift) - 1)) == 0) {
				snprintf(buf, len, "%llu%c",
					 (unsigned long long)(v >> shift),
					 sfx[i]);
				return;
			}
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* A name: printable, no '/', not starting with '-', at most 63 bytes. */
static int name_index(struct op_parser *p, const struct tok *t,
		      unsigned *out, char *err, size_t errlen)
{
	struct op_seq *seq = p->seq;
	char sb[64];
	unsigned i;

	if (t->len > OP_NAME_MAX)
		return fail(err, errlen, t->col, "name too long (max %d)",
			    OP_NAME_MAX);
	if (t->s[0] == '-' || memchr(t->s, '/', t->len))
		return fail(err, errlen, t->col, "bad file name '%s'",
			    show(t, sb, sizeof(sb)));
	for (i = 0; i < OP_MAX_FILES; i++)
		if (seq->names[i][0] && strlen(seq->names[i]) == t->len &&
		    memcmp(seq->names[i], t->s, t->len) == 0) {
			*out = i;
			return 0;
		}
	/* A default name "f<i>" claims its own index when that is free;
	 * other names take the first free one. */
	if (t->len == 2 && t->s[0] == 'f' && t->s[1] >= '0' &&
	    t->s[1] < '0' + OP_MAX_FILES && !seq->names[t->s[1] - '0'][0]) {
		i = (unsigned)(t->s[1] - '0');
	} else {
		for (i = 0; i < OP_MAX_FILES && seq->names[i][0]; i++)
			;
		if (i == OP_MAX_FILES)
			return fail(err, errlen, t->col,
				    "too many files (at most %d names)",
				    OP_MAX_FILES);
	}
	memcpy(seq->names[i], t->s, t->len);
	seq->names[i][t->len] = 0;
	*out = i;
	return 0;
}

/* The current file gets its default name fixed the first time it is used. */
static unsigned current_file(struct op_parser *p)
{
	if (!p->seq->names[p->cur][0])
		snprintf(p->seq->names[p->cur], sizeof(p->seq->names[0]), "f%u",
			 p->cur);
	return p->cur;
}

void op_parser_init(struct op_parser *p, struct op_seq *seq)
{
	p->seq = seq;
	p->cur = 0;
	p->hdr_seen = 0;
}

/* The header's keys, in the order they are written, and their fields. */
static const struct hdr_key {
	const char *key, *alias; /* written as key; alias read too */
	size_t off;              /* char[OP_HDR_STR] in struct op_header */
} hdr_keys[] = {
	{ "dev", NULL, offsetof(struct op_header, dev) },
	{ "rt", "rtdev", offsetof(struct op_header, rtdev) },
	{ "mkfs", NULL, offsetof(struct op_header, mkfs) },
	{ "mount", "opts", offsetof(struct op_header, mount) },
	{ "targets", NULL, offsetof(struct op_header, targets) },
	{ "seed", NULL, offsetof(struct op_header, seed) },
	{ "check", NULL, offsetof(struct op_header, check) },
};
#define NHDR_KEYS (sizeof(hdr_keys) / sizeof(hdr_keys[0]))

/* The index in hdr_keys of the key named by key[0..klen), or -1. */
static int hdr_lookup(const char *key, size_t klen)
{
	for (size_t i = 0; i < NHDR_KEYS; i++) {
		const struct hdr_key *k = &hdr_keys[i];

		if ((klen == strlen(k->key) && !memcmp(key, k->key, klen)) ||
		    (k->alias && klen == strlen(k->alias) &&
		     !memcmp(key, k->alias, klen)))
			return (int)i;
	}
	return -1;
}

static int header_line(struct op_parser *p, const char *line, char *err,
		       size_t errlen)
{
	struct op_header *h = &p->seq->hdr;
	struct line ln;
	char sb[64];
	int ret;

	/* Tokenize what follows "#!"; the first word must be fsoracle. */
	ret = tokenize(line + 2, &ln, err, errlen);
	if (ret)
		return ret;
	if (ln.n == 0 || !tok_is(&ln.t[0], "fsoracle"))
		return 0; /* some other #! line: a comment */
	for (unsigned i = 1; i < ln.n; i++) {
		const struct tok *t = &ln.t[i];
		const char *eq = memchr(t->s, '=', t->len);
		size_t klen, vlen;
		char *dst;
		int key;

		if (!eq)
			return fail(err, errlen, t->col + 2,
				    "header wants key=value, got '%s'",
				    show(t, sb, sizeof(sb)));
		klen = (size_t)(eq - t->s);
		vlen = t->len - klen - 1;
		key = hdr_lookup(t->s, klen);
		if (key < 0)
			return fail(err, errlen, t->col + 2,
				    "unknown header key '%.*s' (dev, rt, mkfs, "
				    "mount, targets, seed, check)", (int)klen,
				    t->s);
		/* a second value would silently win over the first */
		if (p->hdr_seen & (1u << key))
			return fail(err, errlen, t->col + 2,
				    "header key '%s' given twice",
				    hdr_keys[key].key);
		p->hdr_seen |= 1u << key;
		dst = (char *)h + hdr_keys[key].off;
		if (vlen >= OP_HDR_STR)
			return fail(err, errlen, t->col + 2, "header value too long");
		memcpy(dst, eq + 1, vlen);
		dst[vlen] = 0;
		if (dst == h->check) {
			struct check_cfg cc = { 0 };
			char why[160];

			if (check_cfg_parse(h->check, &cc, why, sizeof(why)))
				return fail(err, errlen, t->col + 2, "%s", why);
		}
	}
	return 0;
}

struct parsed {
	uint64_t val[4];       /* positional numbers, in order            */
	const struct tok *pos[4];
	unsigned npos;
	unsigned seen;         /* bit per option letter index           */
	uint64_t optval[8];
};

/*
 * Split the tokens after the command into options and positionals.  opts
 * is a string of letters; a letter followed by ':' takes a value.
 */
static int split_args(const struct line *ln, const char *opts,
		      unsigned maxpos, struct parsed *ps,
		      const struct tok *vtoks[8], char *err, size_t errlen)
{
	char sb[64];
	const char *cmd = "";
	char cb[32];

	snprintf(cb, sizeof(cb), "%.*s", (int)ln->t[0].len, ln->t[0].s);
	cmd = cb;
	memset(ps, 0, sizeof(*ps));
	for (unsigned i = 1; i < ln->n; i++) {
		const struct tok *t = &ln->t[i];

		if (t->s[0] == '-' && t->len >= 2 &&
		    !(t->s[1] >= '0' && t->s[1] <= '9')) {
			/* One option per token ("-k", "-S 0x5a"). */
			const char *o = t->len == 2 ? strchr(opts, t->s[1]) : NULL;
			unsigned idx;

			if (!o || t->s[1] == ':')
				return fail(err, errlen, t->col,
					    "unknown option '%s' for %s",
					    show(t, sb, sizeof(sb)), cmd);
			idx = (unsigned)(o - opts);
			ps->seen |= 1u << idx;
			if (o[1] == ':') {
				if (i + 1 >= ln->n)
					return fail(err, errlen, ln->endcol,
						    "option %s needs a value",
						    show(t, sb, sizeof(sb)));
				vtoks[idx % 8] = &ln->t[++i];
			}
			continue;
		}
		if (ps->npos == maxpos)
			return fail(err, errlen, t->col, "extra argument '%s'",
				    show(t, sb, sizeof(sb)));
		ps->pos[ps->npos++] = t;
	}
	return 0;
}

static int want_pos(const struct line *ln, const struct parsed *ps,
		    unsigned n, const char *cmd, const char *args, char *err,
		    size_t errlen)
{
	if (ps->npos < n)
		return fail(err, errlen, ln->endcol,
			    "missing argument: usage: %s %s", cmd, args);
	return 0;
}

/* Letters of chattr in OP_ATTR_* bit order. */
static const char attr_letters[] = "rojc";

/*
 * How a command's arguments are written.  Which op fields a kind fills
 * is op_kind_info()'s `uses` (op_normalize zeroes the rest); the shape
 * says where the text puts them.
 */
enum text_shape {
	TS_BARE,        /* no arguments; the current file if the kind uses one */
	TS_NAME,        /* open, unlink: NAME                                 */
	TS_OFF_LEN,     /* pwrite, pread, falloc, ...: [options] OFF LEN       */
	TS_SIZE,        /* truncate SIZE                                      */
	TS_RANGE_OPTS,  /* copy_range, exchangerange: -s -d -l SRCFILE        */
	TS_RANGE_POS,   /* reflink, dedupe: SRCFILE SRCOFF DSTOFF LEN         */
	TS_ATTRS,       /* chattr +LETTERS|-LETTERS                           */
	TS_PATHS,       /* naive, fallback: PATHS                             */
	TS_CUT,         /* cut POINT [SEED]                                   */
};

struct text_syntax {
	uint8_t shape;          /* enum text_shape                           */
	uint8_t minpos, maxpos; /* positional arguments                      */
	const char *opts;       /* option letters (split_args); NULL: none   */
	const char *args;       /* the usage after the name, said when an
				   argument is missing                       */
};

/* Syntaxes several kinds share. */
#define OFF_LEN    { TS_OFF_LEN, 2, 2, NULL, "OFF LEN" }
#define RANGE_OPTS { TS_RANGE_OPTS, 1, 1, "s:d:l:", \
		     "-s SRCOFF -d DSTOFF -l LEN SRCFILE" }
#define RANGE_POS  { TS_RANGE_POS, 4, 4, NULL, "SRCFILE SRCOFF DSTOFF LEN" }
#define PATHS      { TS_PATHS, 1, 1, NULL, \
		     "PATHS (all, none, rt_truncate+...)" }

/* One row per kind, indexed by enum op_kind; the name is op_kind_info's. */
static const struct text_syntax syntax[OP_KIND_COUNT] = {
	[OP_OPEN]           = { TS_NAME, 1, 1, "f", "[-f] NAME" },
	[OP_UNLINK]         = { TS_NAME, 1, 1, NULL, "NAME" },
	[OP_PWRITE]         = { TS_OFF_LEN, 2, 2, "S:b:q",
				"[-S 0xNN] [-b BS] OFF LEN" },
	[OP_PREAD]          = { TS_OFF_LEN, 2, 2, "vb:q",
				"[-v] [-b BS] OFF LEN" },
	[OP_TRUNCATE]       = { TS_SIZE, 1, 1, NULL, "SIZE" },
	[OP_FALLOC]         = { TS_OFF_LEN, 2, 2, "ku", "[-k] [-u] OFF LEN" },
	[OP_FPUNCH]         = OFF_LEN,
	[OP_FZERO]          = { TS_OFF_LEN, 2, 2, "k", "[-k] OFF LEN" },
	[OP_FCOLLAPSE]      = OFF_LEN,
	[OP_FINSERT]        = OFF_LEN,
	[OP_COPY_RANGE]     = RANGE_OPTS,
	[OP_CLONE_RANGE]    = RANGE_POS,
	[OP_DEDUPE_RANGE]   = RANGE_POS,
	[OP_EXCHANGE_RANGE] = RANGE_OPTS,
	[OP_SET_FLAG]       = { TS_ATTRS, 1, 1, NULL,
				"+LETTERS|-LETTERS (r o j c)" },
	[OP_NAIVE]          = PATHS,
	[OP_FALLBACK]       = PATHS,
	[OP_CUT]            = { TS_CUT, 1, 2, NULL, "POINT [SEED]" },
	/* the rest (close, fsync, sync, ...): TS_BARE, no arguments */
};

/* xfs_io's funshare is falloc -u under a name of its own. */
static const struct text_syntax funshare_syntax = OFF_LEN;

/* A command line being parsed into an op. */
struct cmd {
	struct op_parser *p;
	const struct line *ln;
	const char *name;          /* the command word */
	const struct text_syntax *sx;
	struct parsed ps;
	const struct tok *vt[8];   /* option values, by letter index % 8 */
	struct op op;
	char *err;
	size_t errlen;
};

static int num(struct cmd *c, const struct tok *t, uint64_t *out)
{
	return parse_num(t, out, c->err, c->errlen);
}

/* The value options of pwrite: -S pattern and -b buffer size. */
static int value_option(struct cmd *c, char letter, const struct tok *t)
{
	char sb[64];
	uint64_t v;
	int ret = num(c, t, &v);

	if (ret)
		return ret;
	if (letter == 'S') {
		if (v > 0xffffffffull)
			return fail(c->err, c->errlen, t->col,
				    "pattern too large '%s'",
				    show(t, sb, sizeof(sb)));
		/* xfs_io fills with the seed's low byte, so do we. */
		c->op.flags |= OP_FL_PATTERN;
		c->op.pattern = (uint8_t)v;
		return 0;
	}
	if (v == 0 || v > 0xffffffffull)
		return fail(c->err, c->errlen, t->col, "bad buffer size '%s'",
			    show(t, sb, sizeof(sb)));
	c->op.bsize = (uint32_t)v;
	return 0;
}

/* The options given, in the order of the syntax's letters. */
static int apply_options(struct cmd *c)
{
	const char *opts = c->sx->opts ? c->sx->opts : "";

	for (unsigned i = 0; opts[i]; i++) {
		int ret = 0;

		if (opts[i] == ':' || !(c->ps.seen & (1u << i)))
			continue;
		switch (opts[i]) {
		case 'f': c->op.flags |= OP_FL_CREATE; break;
		case 'v': c->op.flags |= OP_FL_VERBOSE; break;
		case 'k': c->op.flags |= OP_FL_KEEP_SIZE; break;
		case 'u': c->op.flags |= OP_FL_UNSHARE; break;
		case 'S':
		case 'b': ret = value_option(c, opts[i], c->vt[i % 8]); break;
		default: break; /* -q: xfs_io's quiet, nothing to record */
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* open NAME makes NAME the current file; unlink NAME leaves it alone. */
static int args_name(struct cmd *c)
{
	unsigned f;
	int ret = name_index(c->p, c->ps.pos[0], &f, c->err, c->errlen);

	if (ret)
		return ret;
	if (c->op.kind == OP_OPEN)
		c->p->cur = f;
	c->op.file = (uint8_t)f;
	return apply_options(c);
}

static int args_off_len(struct cmd *c)
{
	int ret = num(c, c->ps.pos[0], &c->op.off);

	if (!ret)
		ret = num(c, c->ps.pos[1], &c->op.len);
	if (ret)
		return ret;
	c->op.file = (uint8_t)current_file(c->p);
	return apply_options(c);
}

static int args_size(struct cmd *c)
{
	int ret = num(c, c->ps.pos[0], &c->op.arg);

	if (ret)
		return ret;
	c->op.file = (uint8_t)current_file(c->p);
	return 0;
}

/*
 * The range ops' SRCOFF, DSTOFF and LEN (into off, arg and len) and
 * SRCFILE, checked in the order the command writes them: the source
 * file first (reflink, dedupe) or last (copy_range, exchangerange).
 */
static int range_args(struct cmd *c, const struct tok *const v[3],
		      const struct tok *src, int src_first)
{
	unsigned f = 0;
	int ret = src_first ? name_index(c->p, src, &f, c->err, c->errlen) : 0;

	if (!ret)
		ret = num(c, v[0], &c->op.off);
	if (!ret)
		ret = num(c, v[1], &c->op.arg);
	if (!ret)
		ret = num(c, v[2], &c->op.len);
	if (!ret && !src_first)
		ret = name_index(c->p, src, &f, c->err, c->errlen);
	if (ret)
		return ret;
	c->op.file2 = (uint8_t)f;
	c->op.file = (uint8_t)current_file(c->p);
	return 0;
}

/* copy_range, exchangerange: -s SRCOFF -d DSTOFF -l LEN, all required. */
static int args_range_opts(struct cmd *c)
{
	const struct tok *const v[3] = { c->vt[0], c->vt[2], c->vt[4] };

	if ((c->ps.seen & 0x15) != 0x15)
		return fail(c->err, c->errlen, c->ln->endcol,
			    "-s, -d and -l are required: usage: %s %s",
			    c->name, c->sx->args);
	return range_args(c, v, c->ps.pos[0], 0);
}

/* reflink, dedupe: SRCFILE SRCOFF DSTOFF LEN. */
static int args_range_pos(struct cmd *c)
{
	return range_args(c, &c->ps.pos[1], c->ps.pos[0], 1);
}

/* chattr takes the raw token: "-r" would look like an option. */
static int args_attrs(struct cmd *c)
{
	const struct line *ln = c->ln;
	const struct tok *t;
	char sb[64];

	if (ln->n < 2)
		return fail(c->err, c->errlen, ln->endcol,
			    "missing argument: usage: %s %s", c->name,
			    c->sx->args);
	if (ln->n > 2)
		return fail(c->err, c->errlen, ln->t[2].col, "extra argument");
	t = &ln->t[1];
	/* A bare sign sets nothing; the binary form can say that. */
	if (t->s[0] != '+' && t->s[0] != '-')
		return fail(c->err, c->errlen, t->col,
			    "chattr wants +LETTERS or -LETTERS, got '%s'",
			    show(t, sb, sizeof(sb)));
	for (size_t i = 1; i < t->len; i++) {
		const char *l = memchr(attr_letters, t->s[i],
				       sizeof(attr_letters) - 1);

		if (!l)
			return fail(c->err, c->errlen, t->col + (unsigned)i,
				    "unknown attribute '%c' (r realtime, o "
				    "always_cow, j journal_data, c compress)",
				    t->s[i]);
		c->op.arg |= 1u << (l - attr_letters);
	}
	if (t->s[0] == '-')
		c->op.flags |= OP_FL_CLEAR;
	c->op.file = (uint8_t)current_file(c->p);
	return 0;
}

static int args_paths(struct cmd *c)
{
	const struct tok *t = c->ps.pos[0];
	char list[128], perr[160];
	uint32_t mask;

	snprintf(list, sizeof(list), "%.*s", (int)t->len, t->s);
	if (t->len >= sizeof(list) ||
	    ref_parse_paths(list, &mask, perr, sizeof(perr)))
		return fail(c->err, c->errlen, t->col, "%s",
			    t->len >= sizeof(list) ? "path list too long" :
			    perr);
	c->op.arg = mask;
	return 0;
}

static int args_cut(struct cmd *c)
{
	uint64_t v[2] = { 0, 0 };

	for (unsigned i = 0; i < c->ps.npos; i++) {
		int ret = num(c, c->ps.pos[i], &v[i]);

		if (!ret && v[i] > OP_CUT_MAX)
			ret = fail(c->err, c->errlen, c->ps.pos[i]->col,
				   "%s above %u", i ? "seed" : "point",
				   OP_CUT_MAX);
		if (ret)
			return ret;
	}
	c->op.arg = OP_CUT_ARG(v[0], v[1]);
	return 0;
}

/* The arguments after the command word, by the command's shape. */
static int parse_args(struct cmd *c)
{
	int ret;

	if (c->sx->shape == TS_ATTRS)
		return args_attrs(c);
	ret = split_args(c->ln, c->sx->opts ? c->sx->opts : "", c->sx->maxpos,
			 &c->ps, c->vt, c->err, c->errlen);
	if (!ret)
		ret = want_pos(c->ln, &c->ps, c->sx->minpos, c->name,
			       c->sx->args, c->err, c->errlen);
	if (ret)
		return ret;
	switch (c->sx->shape) {
	case TS_NAME:       return args_name(c);
	case TS_OFF_LEN:    return args_off_len(c);
	case TS_SIZE:       return args_size(c);
	case TS_RANGE_OPTS: return args_range_opts(c);
	case TS_RANGE_POS:  return args_range_pos(c);
	case TS_PATHS:      return args_paths(c);
	case TS_CUT:        return args_cut(c);
	default:
		if (op_kind_info(c->op.kind)->uses & OP_USE_FILE)
			c->op.file = (uint8_t)current_file(c->p);
		return 0;
	}
}

int op_parse_line(struct op_parser *p, const char *line, struct op *out,
		  char *err, size_t errlen)
{
	struct line ln;
	struct cmd c = { .p = p, .ln = &ln, .err = err, .errlen = errlen };
	const struct tok *w;
	char sb[64];
	unsigned kind;
	int ret;

	if (err && errlen)
		err[0] = 0;
	/* Leading blanks, then a header "#!" or a comment. */
	{
		const char *q = line;

		while (*q == ' ' || *q == '\t')
			q++;
		if (q[0] == '#' && q[1] == '!' && q == line)
			return header_line(p, line, err, errlen) < 0 ? -EINVAL : 0;
	}
	ret = tokenize(line, &ln, err, errlen);
	if (ret)
		return ret;
	if (ln.n == 0)
		return 0;
	w = &ln.t[0];

	if (tok_is(w, "file")) {
		ret = split_args(&ln, "", 1, &c.ps, c.vt, err, errlen);
		if (!ret)
			ret = want_pos(&ln, &c.ps, 1, "file", "NAME", err,
				       errlen);
		if (!ret)
			ret = name_index(p, c.ps.pos[0], &p->cur, err, errlen);
		return ret;
	}
	if (tok_is(w, "funshare")) {
		kind = OP_FALLOC;
		c.op.flags = OP_FL_UNSHARE;
		c.name = "funshare";
		c.sx = &funshare_syntax;
	} else {
		char name[32];

		snprintf(name, sizeof(name), "%.*s", (int)w->len, w->s);
		kind = w->len < sizeof(name) ? op_kind_by_name(name) : OP_NONE;
		if (kind == OP_NONE)
			return fail(err, errlen, w->col, "unknown command '%s'",
				    show(w, sb, sizeof(sb)));
		c.name = op_kind_name(kind);
		c.sx = &syntax[kind];
	}
	c.op.kind = (uint8_t)kind;
	ret = parse_args(&c);
	if (ret)
		return ret;
	op_normalize(&c.op);
	if (out)
		*out = c.op;
	return 1;
}

int op_text_parse(const char *text, size_t len, struct op_seq *seq,
		  char *err, size_t errlen)
{
	struct op_parser p;
	char line[MAX_LINE + 2];
	size_t pos = 0;
	unsigned lineno = 0;

	op_parser_init(&p, seq);
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (text + pos)) : len - pos;
		const char *z = memchr(text + pos, 0, l);
		char lerr[200];
		struct op op;
		int ret;

		lineno++;
		if (z) {
			snprintf(err, errlen, "line %u, col %u: NUL byte (not text)",
				 lineno, (unsigned)(z - (text + pos)) + 1);
			return -EINVAL;
		}
		if (l > MAX_LINE) {
			snprintf(err, errlen, "line %u, col %u: line too long",
				 lineno, MAX_LINE + 1);
			return -EINVAL;
		}
		memcpy(line, text + pos, l);
		line[l] = 0;
		pos += l + (nl ? 1 : 0);
		ret = op_parse_line(&p, line, &op, lerr, sizeof(lerr));
		if (ret < 0) {
			snprintf(err, errlen, "line %u, %s", lineno, lerr);
			return ret;
		}
		if (ret == 1 && op_seq_push(seq, &op)) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}

int op_format(const struct op *op, const struct op_seq *seq, char *buf,
	      size_t len)
{
	char a[32], b[32], c[32], o[48] = "";
	const char *name = op_kind_name(op->kind);

	switch (op->kind) {
	case OP_OPEN:
		return snprintf(buf, len, "open %s%s",
				(op->flags & OP_FL_CREATE) ? "-f " : "",
				op_file_name(seq, op->file));
	case OP_UNLINK:
		return snprintf(buf, len, "unlink %s", op_file_name(seq, op->file));
	case OP_PWRITE:
	case OP_PREAD:
		if (op->flags & OP_FL_PATTERN)
			snprintf(o, sizeof(o), "-S 0x%02x ", op->pattern);
		if (op->flags & OP_FL_VERBOSE)
			snprintf(o, sizeof(o), "-v ");
		if (op->bsize) {
			op_format_num(op->bsize, a, sizeof(a));
			snprintf(o + strlen(o), sizeof(o) - strlen(o), "-b %s ", a);
		}
		op_format_num(op->off, a, sizeof(a));
		op_format_num(op->len, b, sizeof(b));
		return snprintf(buf, len, "%s %s%s %s", name, o, a, b);
	case OP_TRUNCATE:
		op_format_num(op->arg, a, sizeof(a));
		return snprintf(buf, len, "truncate %s", a);
	case OP_FALLOC:
	case OP_FPUNCH:
	case OP_FZERO:
	case OP_FCOLLAPSE:
	case OP_FINSERT:
		op_format_num(op->off, a, sizeof(a));
		op_format_num(op->len, b, sizeof(b));
		return snprintf(buf, len, "%s%s%s %s %s", name,
				(op->flags & OP_FL_KEEP_SIZE) ? " -k" : "",
				(op->flags & OP_FL_UNSHARE) ? " -u" : "", a, b);
	case OP_COPY_RANGE:
	case OP_EXCHANGE_RANGE:
		op_format_num(op->off, a, sizeof(a));
		op_format_num(op->arg, b, sizeof(b));
		op_format_num(op->len, c, sizeof(c));
		return snprintf(buf, len, "%s -s %s -d %s -l %s %s", name, a, b, c,
				op_file_name(seq, op->file2));
	case OP_CLONE_RANGE:
	case OP_DEDUPE_RANGE:
		op_format_num(op->off, a, sizeof(a));
		op_format_num(op->arg, b, sizeof(b));
		op_format_num(op->len, c, sizeof(c));
		return snprintf(buf, len, "%s %s %s %s %s", name,
				op_file_name(seq, op->file2), a, b, c);
	case OP_SET_FLAG: {
		char l[8];
		size_t n = 0;

		for (unsigned i = 0; i < sizeof(attr_letters) - 1; i++)
			if (op->arg & (1u << i))
				l[n++] = attr_letters[i];
		l[n] = 0;
		return snprintf(buf, len, "chattr %c%s",
				(op->flags & OP_FL_CLEAR) ? '-' : '+', l);
	}
	case OP_NAIVE:
	case OP_FALLBACK: {
		char list[128];

		ref_format_paths((uint32_t)op->arg, list, sizeof(list));
		return snprintf(buf, len, "%s %s", name, list);
	}
	case OP_CUT:
		return snprintf(buf, len, "cut %u %u", OP_CUT_POINT(op->arg),
				OP_CUT_SEED(op->arg));
	default:
		return snprintf(buf, len, "%s", name);
	}
}

void op_text_write_header(const struct op_header *h, FILE *f)
{
	int any = 0;

	for (size_t i = 0; i < NHDR_KEYS; i++) {
		const char *v = (const char *)h + hdr_keys[i].off;

		if (!v[0])
			continue;
		fprintf(f, "%s %s=%s", any ? "" : "#! fsoracle", hdr_keys[i].key,
			v);
		any = 1;
	}
	if (any)
		fputc('\n', f);
}

int op_text_write(const struct op_seq *seq, FILE *f)
{
	op_text_write_header(&seq->hdr, f);
	return op_text_write_ops(seq, f);
}

int op_text_write_ops(const struct op_seq *seq, FILE *f)
{
	unsigned cur = 0;
	char line[512];

	for (size_t i = 0; i < seq->n; i++) {
		const struct op *op = &seq->ops[i];
		unsigned uses = op_kind_info(op->kind)->uses;

		if (op->kind == OP_OPEN) {
			cur = op->file;
		} else if ((uses & OP_USE_FILE) && op->kind != OP_UNLINK &&
			   op->file != cur) {
			fprintf(f, "file %s\n", op_file_name(seq, op->file));
			cur = op->file;
		}
		op_format(op, seq, line, sizeof(line));
		fputs(line, f);
		fputc('\n', f);
	}
	return ferror(f) ? -EIO : 0;
}
