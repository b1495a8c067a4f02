/* mount_ctl.c - the control files and flag words of `fsoracle mount`
 * (see mount_ctl.h). */
#include "tools/mount_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ctl_snap {
	const struct ctl *c;
	char *text;
	size_t len;
};

static void counter_line(void *arg, const char *name, uint64_t v)
{
	fprintf(arg, "%s = %" PRIu64 "\n", name, v);
}

static int show_counters(struct ref_fs *fs, char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);

	if (!f)
		return -ENOMEM;
	ref_counters_foreach(ref_counters(fs), counter_line, f);
	return fclose(f) ? -ENOMEM : 0;
}

static int store_reset(struct ref_fs *fs, const char *buf, size_t len)
{
	(void)buf, (void)len;
	ref_counters_reset(fs);
	return 0;
}

static int show_paths(struct ref_fs *fs, char **text, size_t *len)
{
	char naive[128], fallback[128];
	uint32_t n, f;
	int r;

	ref_get_paths(fs, &n, &f);
	ref_format_paths(n, naive, sizeof(naive));
	ref_format_paths(f, fallback, sizeof(fallback));
	r = asprintf(text, "naive=%s fallback=%s\n", naive, fallback);
	if (r < 0)
		return -ENOMEM;
	*len = (size_t)r;
	return 0;
}

/* "naive=PATHS fallback=PATHS", either or both, in any order. */
static int store_paths(struct ref_fs *fs, const char *buf, size_t len)
{
	char line[256], *save = NULL, err[128];
	uint32_t n, f;
	int any = 0;

	if (len >= sizeof(line))
		return -EINVAL;
	memcpy(line, buf, len);
	line[len] = 0;
	ref_get_paths(fs, &n, &f);
	for (char *w = strtok_r(line, " \t\n", &save); w;
	     w = strtok_r(NULL, " \t\n", &save)) {
		uint32_t *to = !strncmp(w, "naive=", 6) ? &n :
			       !strncmp(w, "fallback=", 9) ? &f : NULL;

		if (!to || ref_parse_paths(strchr(w, '=') + 1, to, err,
					   sizeof(err)))
			return -EINVAL;
		any = 1;
	}
	if (!any)
		return -EINVAL;
	ref_set_paths(fs, n, f);
	return 0;
}

static const struct ctl ctls[] = {
	{ "counters", 0444, show_counters, NULL },
	{ "reset",    0200, NULL,          store_reset },
	{ "paths",    0644, show_paths,    store_paths },
};
#define NCTLS (sizeof(ctls) / sizeof(ctls[0]))

const struct ctl *ctl_find(const char *name)
{
	for (size_t i = 0; i < NCTLS; i++)
		if (!strcmp(ctls[i].name, name))
			return &ctls[i];
	return NULL;
}

const struct ctl *ctl_first(void)
{
	return &ctls[0];
}

const struct ctl *ctl_next(const struct ctl *c)
{
	return c + 1 < ctls + NCTLS ? c + 1 : NULL;
}

uint64_t ctl_size(struct ref_fs *fs, const struct ctl *c)
{
	char *text = NULL;
	size_t len = 0;

	if (!c->show || c->show(fs, &text, &len))
		len = 0;
	free(text);
	return len;
}

int ctl_open(struct ref_fs *fs, const struct ctl *c, int accmode,
	     struct ctl_snap **out)
{
	struct ctl_snap *s;
	int err = 0;

	if ((accmode != O_WRONLY && !c->show) ||
	    (accmode != O_RDONLY && !c->store))
		return -EACCES;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = c;
	if (c->show)
		err = c->show(fs, &s->text, &s->len);
	if (err) {
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

uint64_t ctl_snap_len(const struct ctl_snap *s)
{
	return s->len;
}

int ctl_read(struct ctl_snap *s, char *buf, size_t len, uint64_t off)
{
	if (!s->text || off >= s->len)
		return 0;
	if (len > s->len - off)
		len = s->len - (size_t)off;
	memcpy(buf, s->text + off, len);
	return (int)len;
}

int ctl_write(struct ref_fs *fs, struct ctl_snap *s, const char *buf,
	      size_t len)
{
	int err = s->c->store ? s->c->store(fs, buf, len) : -EACCES;

	return err ? err : (int)len;
}

void ctl_close(struct ctl_snap *s)
{
	if (s)
		free(s->text);
	free(s);
}

static const struct { char letter; uint32_t flag; } words[] = {
	{ 'r', REF_FLAG_REALTIME }, { 'j', REF_FLAG_JOURNAL_DATA },
	{ 'c', REF_FLAG_COMPRESS }, { 'o', REF_FLAG_COW },
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

int flags_parse(const char *v, size_t len, uint32_t *set, uint32_t *clear)
{
	uint32_t *to = NULL;
	int any = 0;

	*set = *clear = 0;
	for (size_t i = 0; i < len; i++) {
		char ch = v[i];
		size_t k;

		if (ch == '+' || ch == '-') {
			to = ch == '+' ? set : clear;
			continue;
		}
		if (ch == ' ' || ch == ',' || ch == '\n' || ch == 0) {
			to = NULL;
			continue;
		}
		for (k = 0; k < NWORDS && words[k].letter != ch; k++)
			;
		if (!to || k == NWORDS)
			return -EINVAL;
		*to |= words[k].flag;
		any = 1;
	}
	return any && !(*set & *clear) ? 0 : -EINVAL;
}

size_t flags_format(uint32_t flags, char *buf, size_t len)
{
	size_t n = 0;

	if (len < NWORDS + 2)
		return 0;
	for (size_t k = 0; k < NWORDS; k++)
		if (flags & words[k].flag) {
			if (!n)
				buf[n++] = '+';
			buf[n++] = words[k].letter;
		}
	buf[n] = 0;
	return n;
}
