/*
 * json.c - just enough JSON for the oracle's reports: a writer for
 * strings and doubles, and a strict parser (RFC 8259: no trailing commas,
 * no comments, no NaN) that reads a saved report back for --compare and
 * lets the tests check that what was written is well-formed.
 *
 * Numbers keep their text as well as their double, so 64-bit counters
 * survive a round trip exactly.
 */
#include "perf/perf.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void json_put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':  fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void json_put_double(FILE *f, double v)
{
	if (!isfinite(v))
		fputs("null", f);
	else
		fprintf(f, "%.9g", v);
}

/* ---- parser ---- */

struct parser {
	const char *s, *p;
	char *err;
	size_t errlen;
	int depth;
};

#define MAX_DEPTH 64

static struct json *fail(struct parser *ps, const char *what)
{
	if (ps->err && ps->errlen && !ps->err[0]) {
		unsigned line = 1, col = 1;

		for (const char *q = ps->s; q < ps->p; q++) {
			if (*q == '\n')
				line++, col = 1;
			else
				col++;
		}
		snprintf(ps->err, ps->errlen, "line %u col %u: %s", line, col,
			 what);
	}
	return NULL;
}

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
	       *ps->p == '\r')
		ps->p++;
}

static struct json *node(enum json_type t)
{
	struct json *j = calloc(1, sizeof(*j));

	if (j)
		j->type = t;
	return j;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Append code point cp as UTF-8. */
static size_t utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string literal at ps->p (the opening quote); malloc'ed result. */
static char *parse_string(struct parser *ps)
{
	const char *q = ps->p + 1;
	char *out, *o;

	/* the decoded string is never longer than the literal */
	for (const char *e = q; *e != '"'; e++) {
		if (!*e)
			return (fail(ps, "unterminated string"), NULL);
		if (*e == '\\' && e[1])
			e++;
	}
	out = o = malloc(strlen(q) + 1);
	if (!out)
		return (fail(ps, "out of memory"), NULL);
	while (*q != '"') {
		unsigned char c = (unsigned char)*q;

		if (c < 0x20) {
			ps->p = q;
			free(out);
			return (fail(ps, "control character in string"), NULL);
		}
		if (c != '\\') {
			*o++ = (char)c;
			q++;
			continue;
		}
		q++;
		switch (*q) {
		case '"': case '\\': case '/': *o++ = *q; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			unsigned cp, lo;

			if (hex4(q + 1, &cp))
				goto bad_escape;
			q += 4;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (q[1] != '\\' || q[2] != 'u' ||
				    hex4(q + 3, &lo) || lo < 0xdc00 ||
				    lo >= 0xe000)
					goto bad_escape;
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				     (lo - 0xdc00);
				q += 6;
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				goto bad_escape;
			}
			o += utf8(o, cp);
			break;
		}
		default:
			goto bad_escape;
		}
		q++;
	}
	*o = 0;
	ps->p = q + 1;
	return out;
bad_escape:
	ps->p = q;
	free(out);
	return (fail(ps, "bad escape in string"), NULL);
}

static struct json *parse_value(struct parser *ps);

static struct json *parse_number(struct parser *ps)
{
	const char *start = ps->p, *q = ps->p;
	struct json *j;

	if (*q == '-')
		q++;
	if (*q == '0')
		q++;
	else if (*q >= '1' && *q <= '9')
		while (*q >= '0' && *q <= '9')
			q++;
	else
		return fail(ps, "bad number");
	if (*q == '.') {
		q++;
		if (!(*q >= '0' && *q <= '9'))
			return (ps->p = q, fail(ps, "bad fraction"));
		while (*q >= '0' && *q <= '9')
			q++;
	}
	if (*q == 'e' || *q == 'E') {
		q++;
		if (*q == '+' || *q == '-')
			q++;
		if (!(*q >= '0' && *q <= '9'))
			return (ps->p = q, fail(ps, "bad exponent"));
		while (*q >= '0' && *q <= '9')
			q++;
	}
	j = node(JSON_NUMBER);
	if (!j)
		return fail(ps, "out of memory");
	j->str = strndup(start, (size_t)(q - start));
	if (!j->str) {
		free(j);
		return fail(ps, "out of memory");
	}
	j->num = strtod(j->str, NULL);
	ps->p = q;
	return j;
}

static struct json *parse_container(struct parser *ps, int object)
{
	struct json *j = node(object ? JSON_OBJECT : JSON_ARRAY), **tail;
	char close = object ? '}' : ']';

	if (!j)
		return fail(ps, "out of memory");
	if (++ps->depth > MAX_DEPTH) {
		free(j);
		return fail(ps, "nested too deeply");
	}
	tail = &j->child;
	ps->p++;
	skip_ws(ps);
	if (*ps->p == close) {
		ps->p++;
		ps->depth--;
		return j;
	}
	for (;;) {
		char *key = NULL;
		struct json *v;

		skip_ws(ps);
		if (object) {
			if (*ps->p != '"')
				goto bad;
			key = parse_string(ps);
			if (!key)
				goto bad;
			skip_ws(ps);
			if (*ps->p != ':') {
				free(key);
				fail(ps, "expected ':'");
				goto bad;
			}
			ps->p++;
		}
		v = parse_value(ps);
		if (!v) {
			free(key);
			goto bad;
		}
		v->key = key;
		*tail = v;
		tail = &v->next;
		skip_ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			break;
		}
		fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
		goto bad;
	}
	ps->depth--;
	return j;
bad:
	fail(ps, object ? "bad object" : "bad array");
	json_free(j);
	return NULL;
}

static struct json *parse_value(struct parser *ps)
{
	struct json *j;

	skip_ws(ps);
	switch (*ps->p) {
	case '{':
		return parse_container(ps, 1);
	case '[':
		return parse_container(ps, 0);
	case '"': {
		char *s = parse_string(ps);

		if (!s)
			return NULL;
		j = node(JSON_STRING);
		if (!j) {
			free(s);
			return fail(ps, "out of memory");
		}
		j->str = s;
		return j;
	}
	case 't':
	case 'f':
	case 'n': {
		static const char *const words[] = { "true", "false", "null" };

		for (int i = 0; i < 3; i++) {
			size_t n = strlen(words[i]);

			if (strncmp(ps->p, words[i], n))
				continue;
			j = node(i == 2 ? JSON_NULL : JSON_BOOL);
			if (!j)
				return fail(ps, "out of memory");
			j->boolean = i == 0;
			ps->p += n;
			return j;
		}
		return fail(ps, "unknown word");
	}
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
			return parse_number(ps);
		return fail(ps, *ps->p ? "unexpected character" :
				       "unexpected end of input");
	}
}

struct json *json_parse(const char *text, char *err, size_t len)
{
	struct parser ps = { text, text, err, len, 0 };
	struct json *j;

	if (err && len)
		err[0] = 0;
	j = parse_value(&ps);
	if (!j)
		return NULL;
	skip_ws(&ps);
	if (*ps.p) {
		json_free(j);
		return fail(&ps, "trailing characters after the value");
	}
	return j;
}

void json_free(struct json *j)
{
	while (j) {
		struct json *next = j->next;

		json_free(j->child);
		free(j->str);
		free(j->key);
		free(j);
		j = next;
	}
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (const struct json *c = obj->child; c; c = c->next)
		if (c->key && !strcmp(c->key, key))
			return c;
	return NULL;
}

const struct json *json_at(const struct json *arr, unsigned i)
{
	const struct json *c;

	if (!arr || (arr->type != JSON_ARRAY && arr->type != JSON_OBJECT))
		return NULL;
	for (c = arr->child; c && i; c = c->next)
		i--;
	return c;
}

unsigned json_len(const struct json *arr)
{
	unsigned n = 0;

	if (arr && (arr->type == JSON_ARRAY || arr->type == JSON_OBJECT))
		for (const struct json *c = arr->child; c; c = c->next)
			n++;
	return n;
}

uint64_t json_u64(const struct json *j)
{
	if (!j || j->type != JSON_NUMBER || !j->str || j->str[0] == '-')
		return 0;
	return strtoull(j->str, NULL, 10);
}
