/*
 * json.c - the oracle's JSON, read and written through json-c (Debian's
 * libjson-c-dev): the report writers compose their fields with the two
 * put helpers, json_reformat() has json-c check the whole and write it
 * out, and json_parse() has json-c read a saved report back (strict
 * RFC 8259: no trailing commas, no comments, no NaN, valid UTF-8) for
 * --compare and for the tests.
 *
 * What the rest of perf/ reads is our own small tree (struct json in
 * perf.h), copied from json-c's objects, so the callers depend on no
 * library header.  Numbers keep their text as well as their double, so
 * 64-bit counters survive a round trip exactly.
 *
 * Builds without external libraries (-DFSO_NO_EXTERNAL_LIBS: the MSan and
 * OSS-Fuzz builds) have no JSON: json-c is not instrumented, and MSan
 * reports every byte it writes as uninitialized.  There every function
 * fails with a message saying so, and json_available() is 0.
 */
#include "perf/perf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef FSO_NO_EXTERNAL_LIBS
/* json-c names its type enum as perf.h does; here json-c's is renamed */
#define json_type jsonc_type
#include <json-c/json.h>
#undef json_type
#endif

#define NO_JSON_MSG "this build has no JSON library (built without external " \
	"libraries, as the MSan and OSS-Fuzz builds are)"

#ifdef FSO_NO_EXTERNAL_LIBS

int json_available(void)
{
	return 0;
}

void json_put_string(FILE *f, const char *s)
{
	fputs("null", f);
}

void json_put_double(FILE *f, double v)
{
	fputs("null", f);
}

struct json *json_parse(const char *text, char *err, size_t len)
{
	if (err && len)
		snprintf(err, len, "%s", NO_JSON_MSG);
	return NULL;
}

int json_reformat(FILE *f, const char *text, char *err, size_t len)
{
	if (err && len)
		snprintf(err, len, "%s", NO_JSON_MSG);
	return -ENOTSUP;
}

#else /* json-c */

/* Nesting json-c accepts; a report is 6 deep. */
#define MAX_DEPTH 64

int json_available(void)
{
	return 1;
}

/* Write a json-c object compactly (strings: only the escapes JSON needs). */
static void put_object(FILE *f, struct json_object *o)
{
	fputs(o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
			JSON_C_TO_STRING_NOSLASHESCAPE) : "null", f);
	json_object_put(o);
}

void json_put_string(FILE *f, const char *s)
{
	put_object(f, json_object_new_string(s));
}

void json_put_double(FILE *f, double v)
{
	char text[32];

	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	/* nine significant digits: what a timing or a ratio carries */
	snprintf(text, sizeof(text), "%.9g", v);
	put_object(f, json_object_new_double_s(v, text));
}

/* "line L col C: what" for the byte at offset off of text */
static void where(const char *text, size_t off, const char *what, char *err,
		  size_t len)
{
	unsigned line = 1, col = 1;

	if (!err || !len)
		return;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n')
			line++, col = 1;
		else
			col++;
	}
	snprintf(err, len, "line %u col %u: %s", line, col, what);
}

/*
 * json-c's strict parse of the whole of text; NULL with err set when it
 * is not one JSON value (garbage, truncated, or more after the value).
 */
static struct json_object *parse_strict(const char *text, char *err,
					size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(MAX_DEPTH);
	struct json_object *o;
	size_t n = strlen(text), end;
	enum json_tokener_error e;

	if (!tok) {
		if (err && len)
			snprintf(err, len, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
			       JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, text, (int)n);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o || e != json_tokener_success) {
		where(text, end, e == json_tokener_continue || n == 0 ?
		      "unexpected end of the text (truncated?)" :
		      json_tokener_error_desc(e), err, len);
		json_object_put(o);
		return NULL;
	}
	end += strspn(text + end, " \t\r\n");
	if (end < n) {
		where(text, end, "trailing characters after the value", err,
		      len);
		json_object_put(o);
		return NULL;
	}
	return o;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/*
 * Our tree for json-c's object o; NULL when out of memory, or with *nan
 * set on a NaN or an infinity (json-c reads those words even in strict
 * mode; JSON has no such numbers).
 */
static struct json *convert(struct json_object *o, int *nan)
{
	struct json *j = calloc(1, sizeof(*j)), **tail;

	if (!j)
		return NULL;
	switch (json_object_get_type(o)) {
	case json_type_null:
		j->type = JSON_NULL;
		break;
	case json_type_boolean:
		j->type = JSON_BOOL;
		j->boolean = json_object_get_boolean(o);
		break;
	case json_type_int:
	case json_type_double:
		/* the number's text as read (an integer's exact digits) */
		j->type = JSON_NUMBER;
		j->num = json_object_get_double(o);
		if (!isfinite(j->num)) {
			*nan = 1;
			goto fail;
		}
		j->str = dup_or_null(json_object_to_json_string_ext(o,
					JSON_C_TO_STRING_PLAIN));
		if (!j->str)
			goto fail;
		break;
	case json_type_string:
		j->type = JSON_STRING;
		j->str = dup_or_null(json_object_get_string(o));
		if (!j->str)
			goto fail;
		break;
	case json_type_array:
		j->type = JSON_ARRAY;
		tail = &j->child;
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			*tail = convert(json_object_array_get_idx(o, i), nan);
			if (!*tail)
				goto fail;
			tail = &(*tail)->next;
		}
		break;
	case json_type_object: {
		struct json_object_iterator it = json_object_iter_begin(o);
		struct json_object_iterator end = json_object_iter_end(o);

		j->type = JSON_OBJECT;
		tail = &j->child;
		for (; !json_object_iter_equal(&it, &end);
		     json_object_iter_next(&it)) {
			*tail = convert(json_object_iter_peek_value(&it), nan);
			if (!*tail)
				goto fail;
			(*tail)->key = strdup(json_object_iter_peek_name(&it));
			if (!(*tail)->key)
				goto fail;
			tail = &(*tail)->next;
		}
		break;
	}
	}
	return j;
fail:
	json_free(j);
	return NULL;
}

struct json *json_parse(const char *text, char *err, size_t len)
{
	struct json_object *o;
	struct json *j;
	int nan = 0;

	if (err && len)
		err[0] = 0;
	o = parse_strict(text, err, len);
	if (!o)
		return NULL;
	j = convert(o, &nan);
	json_object_put(o);
	if (!j && err && len)
		snprintf(err, len, "%s", nan ? "a number is NaN or Infinity "
			 "(not JSON numbers)" : "out of memory");
	return j;
}

int json_reformat(FILE *f, const char *text, char *err, size_t len)
{
	struct json_object *o = parse_strict(text, err, len);

	if (!o)
		return -EINVAL;
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
			JSON_C_TO_STRING_SPACED |
			JSON_C_TO_STRING_NOSLASHESCAPE), f);
	fputc('\n', f);
	json_object_put(o);
	return ferror(f) ? -EIO : 0;
}

#endif /* json-c */

/* ---- reading our tree (every build) ---- */

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
