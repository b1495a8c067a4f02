/*
 * target.c - what all targets share: parsing a target list, splitting big
 * reads and writes into pieces, copying a file from one target to
 * another (the checker's crash and ENOSPC adoption) in no more space than
 * the source holds, and naming op kinds in masks.
 */
#include "harness/target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/zeros.h"
#include "hw/hw.h"

const char target_list_help[] =
"Targets (comma-separated; the first model, else the first target, is the\n"
"reference every other target is compared with):\n"
"  model[:BS]      byte arrays and sizes; BS = block size for the\n"
"                  collapse/insert/clone alignment rule (default: the\n"
"                  first other target's block size, else 4096)\n"
"  engine[:DEV]    the reference engine on device DEV (default: the log\n"
"                  header's dev=, else mem:64m); --mkfs/--mount options\n"
"                  (naive=PATHS, fallback=PATHS: the seed-path switches,\n"
"                  also set from a log by the ops `naive PATHS` and\n"
"                  `fallback PATHS`; PATHS is all, none or rt_truncate+...)\n"
"  naive[:DEV]     the engine with every seed path's naive twin (mount\n"
"                  option naive=all, which `naive` ops do not change)\n"
"  fallback[:DEV]  the engine with every optimized path forced to take\n"
"                  its fallback (fallback=all, which `fallback` ops do\n"
"                  not change)\n"
"  host[:DIR]      real files in DIR (default: a new temp directory)\n"
"  planted:BUG     the model with one planted bug, to see the checker\n"
"                  fail: trunc_tail punch_short zero_keep_size\n"
"                  collapse_eio audit_unlink enospc_room enfile_room\n"
"A comma after a device spec splits only before a target kind, so specs\n"
"keep their commas:\n"
"  engine:file:/tmp/img,size=1g,model\n";

static const char *const kinds[] = { "model", "engine", "naive",
				     "fallback", "host", "planted" };

/* The engine kinds, indexed by enum engine_pin. */
static const char *const engine_kinds[] = { "engine", "naive", "fallback" };

/* Is s an engine kind followed by ':' or the end?  Its pin + 1, or 0. */
static int engine_kind(const char *s)
{
	for (unsigned i = 0; i < sizeof(engine_kinds) / sizeof(engine_kinds[0]);
	     i++) {
		size_t l = strlen(engine_kinds[i]);

		if (strncmp(s, engine_kinds[i], l) == 0 &&
		    (s[l] == ':' || s[l] == 0))
			return (int)i + 1;
	}
	return 0;
}

/* Does s start with a target kind followed by ':' ',' or the end? */
static int kind_at(const char *s)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t l = strlen(kinds[i]);

		if (strncmp(s, kinds[i], l) == 0 &&
		    (s[l] == ':' || s[l] == ',' || s[l] == 0))
			return 1;
	}
	return 0;
}

static int parse_bs(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (end == s)
		return -EINVAL;
	if (*end == 'k' || *end == 'K') {
		v <<= 10;
		end++;
	}
	if (*end || v < 512 || v > 65536 || (v & (v - 1)))
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int open_one(const char *spec, const struct target_env *env,
		    struct target **out, char *err, size_t errlen)
{
	const char *colon = strchr(spec, ':');
	size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *arg = colon ? colon + 1 : NULL;
	int ret;

	if (arg && !*arg)
		arg = NULL;
	if (klen == 5 && strncmp(spec, "model", 5) == 0) {
		uint32_t bs = 0;

		if (arg && parse_bs(arg, &bs)) {
			snprintf(err, errlen, "target '%s': bad block size "
				 "(512..64k, a power of two)", spec);
			return -EINVAL;
		}
		ret = model_target_new(bs, out);
		if (ret) {
			snprintf(err, errlen, "target '%s': out of memory", spec);
			return ret;
		}
		/* 0 = "adopt another target's" (see target_list_open). */
		if (!bs)
			(*out)->blocksize = 0;
		return 0;
	}
	if (klen == 4 && strncmp(spec, "host", 4) == 0)
		return host_target_new(arg, out, err, errlen);
	if (klen == 7 && strncmp(spec, "planted", 7) == 0) {
		if (!arg) {
			snprintf(err, errlen, "target 'planted' needs a bug: "
				 "planted:trunc_tail (or punch_short, "
				 "zero_keep_size, collapse_eio, audit_unlink, "
				 "enospc_room, enfile_room)");
			return -EINVAL;
		}
		return planted_target_new(arg, out, err, errlen);
	}
	snprintf(err, errlen, "unknown target '%.*s' (model, engine, naive, "
		 "fallback, host, planted)", (int)(klen > 40 ? 40 : klen), spec);
	return -EINVAL;
}

/*
 * Every engine target gets devices of its own.  The host paths claimed
 * so far (file:, pmem:, zoned:file, zbd:): a path given once, by --dev,
 * --rtdev or a log header, is suffixed for each engine target after the
 * first that takes it ("pm.img" -> "pm.img.naive2" for target 2), and
 * the target says so in its note; a path two targets name themselves is
 * refused, as is a suffix under --keep-image (no such image was made).
 */
#define DEV_SPEC_MAX 512

struct dev_claims {
	char path[2 * TARGET_MAX][DEV_SPEC_MAX];
	int n;
};

static int own_device(struct dev_claims *dc, const char *spec, int given,
		      const char *target, int idx, int keep, char *out,
		      size_t outlen, char *err, size_t errlen)
{
	size_t off, len, kl = strcspn(target, ":");
	char path[DEV_SPEC_MAX];
	int clash = 0;

	snprintf(out, outlen, "%s", spec);
	if (!hw_spec_path(spec, &off, &len))
		return 0;
	snprintf(path, sizeof(path), "%.*s", (int)len, spec + off);
	for (int i = 0; i < dc->n; i++)
		clash |= !strcmp(dc->path[i], path);
	if (clash && given) {
		snprintf(err, errlen, "target '%.60s': device file '%.200s' is "
			 "another engine target's too; give each engine "
			 "target its own", target, path);
		return -EINVAL;
	}
	if (clash && keep) {
		snprintf(err, errlen, "--keep-image: two engine targets on one "
			 "image '%.200s'; give each its own (engine:file:A,"
			 "naive:file:B)", path);
		return -EINVAL;
	}
	if (clash &&
	    ((size_t)snprintf(path, sizeof(path), "%.*s.%.*s%d", (int)len,
			      spec + off, (int)kl, target, idx) >= sizeof(path) ||
	     (size_t)snprintf(out, outlen, "%.*s%s%s", (int)off, spec, path,
			      spec + off + len) >= outlen)) {
		snprintf(err, errlen, "target '%.60s': device spec too long "
			 "for a suffix", target);
		return -ENAMETOOLONG;
	}
	if (dc->n < 2 * TARGET_MAX)
		snprintf(dc->path[dc->n++], DEV_SPEC_MAX, "%s", path);
	return clash;
}

/* An engine, naive or fallback target, its devices made its own
 * (dev_claims). */
static int open_engine(struct dev_claims *dc, const char *spec, int idx,
		       const struct target_env *env, struct target **out,
		       char *err, size_t errlen)
{
	const char *arg = strchr(spec, ':');
	struct target_env e = { 0 };
	char dev[DEV_SPEC_MAX], rt[DEV_SPEC_MAX];
	enum engine_pin pin = (enum engine_pin)(engine_kind(spec) - 1);
	int keep, s1, s2 = 0, ret;

	if (env)
		e = *env;
	keep = e.keep_image;
	arg = arg && arg[1] ? arg + 1 : NULL;
	s1 = own_device(dc, arg ? arg : e.dev && e.dev[0] ? e.dev : "mem:64m",
			arg != NULL, spec, idx, keep, dev, sizeof(dev), err,
			errlen);
	if (s1 >= 0 && e.rtdev && e.rtdev[0]) {
		s2 = own_device(dc, e.rtdev, 0, spec, idx, keep, rt, sizeof(rt),
				err, errlen);
		e.rtdev = rt;
	}
	if (s1 < 0 || s2 < 0)
		return s1 < 0 ? s1 : s2;
	ret = engine_target_new(dev, pin, &e, out, err, errlen);
	if (!ret && (s1 || s2))
		snprintf((*out)->devnote, sizeof((*out)->devnote), "%.90s%s%s%.90s",
			 s1 ? dev : "", s1 && s2 ? " and " : "", s2 ? "rt " : "",
			 s2 ? rt : "");
	return ret;
}

void target_list_devnote(struct target *const *t, int n, char *buf,
			 size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; i < n && used < len; i++)
		if (t[i]->devnote[0])
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 used ? ", " : "a device given "
						 "once, made each engine "
						 "target's own: ", t[i]->name);
}

int target_list_open(const char *list, const struct target_env *env,
		     struct target **out, int *n, char *err, size_t errlen)
{
	struct dev_claims dc = { .n = 0 };
	char buf[1024], *p;
	int count = 0, ret = 0;
	uint32_t bs = 0;

	*n = 0;
	if (!list || !*list) {
		snprintf(err, errlen, "empty target list");
		return -EINVAL;
	}
	if (strlen(list) >= sizeof(buf)) {
		snprintf(err, errlen, "target list too long");
		return -EINVAL;
	}
	strcpy(buf, list);
	p = buf;
	while (p) {
		char *q = p, *next = NULL;
		char one[256];

		/*
		 * The element ends at the first comma followed by a kind, or at
		 * any comma before its first ':' (a bare kind has no options).
		 */
		while ((q = strchr(q, ',')) != NULL) {
			const char *colon = strchr(p, ':');

			if (kind_at(q + 1) || !colon || colon > q) {
				*q = 0;
				next = q + 1;
				break;
			}
			q++;
		}
		if (!*p) {
			snprintf(err, errlen, "empty target in list '%s'", list);
			ret = -EINVAL;
			goto out_error;
		}
		if (count == TARGET_MAX) {
			snprintf(err, errlen, "too many targets (max %d)",
				 TARGET_MAX);
			ret = -EINVAL;
			goto out_error;
		}
		snprintf(one, sizeof(one), "%.250s", p);
		if (engine_kind(one))
			ret = open_engine(&dc, one, count, env, &out[count], err,
					  errlen);
		else
			ret = open_one(one, env, &out[count], err, errlen);
		if (ret)
			goto out_error;
		count++;
		p = next;
	}
	/* A target that keeps no bytes is compared with its like only. */
	for (int i = 0; i < count; i++) {
		if (!(out[i]->caps & TARGET_NO_DATA))
			continue;
		for (int j = 0; j < count; j++) {
			if (out[j]->caps & TARGET_NO_DATA)
				continue;
			snprintf(err, errlen, "%.100s keeps no file data (a "
				 "null: device, or mounted nopagedata) and reads "
				 "zeros, so %.100s cannot be compared with it: give "
				 "targets that keep none either "
				 "(engine:null:64m,naive:null:64m)",
				 out[i]->name, out[j]->name);
			ret = -EINVAL;
			goto out_error;
		}
	}
	/* Models without a block size follow the first other target. */
	for (int i = 0; i < count && !bs; i++)
		if (!(out[i]->caps & TARGET_MODEL) && out[i]->blocksize)
			bs = out[i]->blocksize;
	for (int i = 0; i < count; i++)
		if (!out[i]->blocksize)
			out[i]->blocksize = bs ? bs : 4096;
	*n = count;
	return 0;
out_error:
	target_list_close(out, count);
	return ret;
}

void target_list_close(struct target **t, int n)
{
	for (int i = 0; i < n; i++)
		if (t[i]) {
			t[i]->ops->destroy(t[i]);
			t[i] = NULL;
		}
}

void target_set_names(struct target *t, const struct op_seq *seq)
{
	for (unsigned i = 0; i < OP_MAX_FILES; i++) {
		const char *name = op_file_name(seq, i);

		/* the same names every round, as a rule: no copy then */
		if (strcmp(t->names[i], name))
			snprintf(t->names[i], sizeof(t->names[i]), "%s", name);
	}
}

int64_t target_apply(struct target *t, const struct op *op, uint64_t opno,
		     void *buf, size_t buflen)
{
	uint64_t piece = buflen, done = 0, total = 0;

	if (op->kind != OP_PWRITE && op->kind != OP_PREAD)
		return t->ops->apply(t, op, NULL, NULL);
	if (op->bsize && op->bsize < piece)
		piece = op->bsize;
	do {
		struct op sub = *op;
		uint64_t n = op->len - done < piece ? op->len - done : piece;
		int64_t r;

		sub.off = op->off + done;
		sub.len = n;
		if (op->kind == OP_PWRITE)
			op_fill(op, opno, sub.off, buf, n);
		r = t->ops->apply(t, &sub, buf, buf);
		if (r < 0)
			return total ? (int64_t)total : r;
		total += (uint64_t)r;
		if ((uint64_t)r < n)
			break;
		done += n;
	} while (done < op->len);
	return (int64_t)total;
}

/* Sectors: the finest unit a sparse copy leaves unwritten. */
#define COPY_SECTOR 512u

struct range_vec {
	struct target_range *v;
	size_t n, cap;
};

/* Collect src's ranges, adjacent ones of a kind joined. */
static int push_range(void *arg, const struct target_range *r)
{
	struct range_vec *rv = arg;
	struct target_range *last = rv->n ? &rv->v[rv->n - 1] : NULL;

	if (!r->len)
		return 0;
	if (last && last->kind == r->kind && last->off + last->len == r->off) {
		last->len += r->len;
		return 0;
	}
	if (rv->n == rv->cap) {
		size_t cap = rv->cap ? rv->cap * 2 : 16;
		struct target_range *v = realloc(rv->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rv->v = v;
		rv->cap = cap;
	}
	rv->v[rv->n++] = *r;
	return 0;
}

static int write_piece(struct target *dst, unsigned file, uint64_t off,
		       const void *buf, uint64_t n)
{
	struct op op = { .kind = OP_PWRITE, .file = (uint8_t)file,
			 .off = off, .len = n };
	int64_t r = dst->ops->apply(dst, &op, buf, NULL);

	if (r < 0)
		return (int)r;
	return (uint64_t)r < n ? -ENOSPC : 0; /* a short write: out of space */
}

/*
 * Write the runs of sectors of buf (file bytes [off, off+n)) that are
 * not zero, or with old (what dst holds there) that differ from it.
 */
static int write_runs(struct target *dst, unsigned file, uint64_t off,
		      const uint8_t *buf, const uint8_t *old, uint64_t n)
{
	uint64_t p = off, run = UINT64_MAX, end = off + n;

	while (p < end) {
		uint64_t q = (p / COPY_SECTOR + 1) * COPY_SECTOR;
		size_t k;

		if (q > end)
			q = end;
		k = (size_t)(q - p);
		if (old ? memcmp(buf + (p - off), old + (p - off), k) != 0 :
			  !zeros_all(buf + (p - off), k)) {
			if (run == UINT64_MAX)
				run = p;
		} else if (run != UINT64_MAX) {
			int ret = write_piece(dst, file, run, buf + (run - off),
					      p - run);

			if (ret)
				return ret;
			run = UINT64_MAX;
		}
		p = q;
	}
	if (run == UINT64_MAX)
		return 0;
	return write_piece(dst, file, run, buf + (run - off), end - run);
}

/* The targets a copy writes to; failed: the index of the one that failed
 * (0 when reading src did). */
struct copy_to {
	struct target *const *dst;
	int n;
	int *failed;
};

static int copy_failed(const struct copy_to *to, int i, int err)
{
	*to->failed = i;
	return err;
}

/* op on every target of to; an error other than fine stops it. */
static int apply_all(const struct copy_to *to, const struct op *op,
		     int64_t fine)
{
	for (int i = 0; i < to->n; i++) {
		int64_t r = to->dst[i]->ops->apply(to->dst[i], op, NULL, NULL);

		if (r < 0 && r != fine)
			return copy_failed(to, i, (int)r);
	}
	return 0;
}

/* Copy file bytes [off, end) from src to the targets of to, read once:
 * every byte, or (sparse) only the non-zero sectors. */
static int copy_span(const struct copy_to *to, struct target *src,
		     unsigned file, uint64_t off, uint64_t end, int sparse,
		     uint8_t *buf, size_t buflen)
{
	while (off < end) {
		uint64_t n = end - off < buflen ? end - off : buflen;
		int64_t r = target_look(src, file, off, buf, n);

		if (r < 0)
			return copy_failed(to, 0, (int)r);
		if (r == 0)
			break;
		n = (uint64_t)r;
		for (int i = 0; i < to->n; i++) {
			struct target *dst = to->dst[i];
			int ret = sparse ? write_runs(dst, file, off, buf, NULL, n) :
				  write_piece(dst, file, off, buf, n);

			if (ret)
				return copy_failed(to, i, ret);
		}
		off += n;
	}
	return 0;
}

int target_clear_file(struct target *dst, unsigned file)
{
	struct op op = { .kind = OP_TRUNCATE, .file = (uint8_t)file };
	int64_t size = dst->ops->size(dst, file), r;

	if (size == -ENOENT || size == 0)
		return 0;
	if (size < 0)
		return (int)size;
	r = dst->ops->apply(dst, &op, NULL, NULL);
	return r < 0 ? (int)r : 0;
}

int target_match_file(struct target *dst, struct target *src, unsigned file,
		      uint64_t from, uint64_t to, void *buf, size_t buflen)
{
	int64_t size = src->ops->size(src, file), dsize, r;
	struct op op = { .file = (uint8_t)file };
	size_t half = buflen / 2;
	uint8_t *want = buf, *have = want + half;
	uint64_t off = from, end;

	if (size < 0 && size != -ENOENT)
		return (int)size;
	dsize = dst->ops->size(dst, file);
	if (size == -ENOENT || dsize == -ENOENT)
		return target_copy_file(dst, src, file, buf, buflen);
	if (dsize < 0)
		return (int)dsize;
	op.kind = OP_TRUNCATE;
	if (dsize > size) { /* what goes first, so its room is free */
		op.arg = (uint64_t)size;
		r = dst->ops->apply(dst, &op, NULL, NULL);
		if (r < 0)
			return (int)r;
		dsize = size;
	}
	end = to < (uint64_t)dsize ? to : (uint64_t)dsize;
	while (off < end) {
		uint64_t n = end - off < half ? end - off : half;
		int64_t a = src->ops->read(src, file, off, want, n);
		int64_t b = dst->ops->read(dst, file, off, have, n);
		int ret;

		if (a < 0 || b < 0)
			return (int)(a < 0 ? a : b);
		if (a != b || a == 0)
			return -EIO; /* both hold dsize bytes here */
		ret = write_runs(dst, file, off, want, have, (uint64_t)a);
		if (ret)
			return ret;
		off += (uint64_t)a;
	}
	if (dsize < size) { /* the rest: zeros where src has them */
		int ret;

		op.arg = (uint64_t)size;
		r = dst->ops->apply(dst, &op, NULL, NULL);
		if (r < 0)
			return (int)r;
		ret = copy_span(&(struct copy_to){ &dst, 1, &(int){ 0 } }, src,
				file, (uint64_t)dsize, (uint64_t)size, 1, buf,
				buflen);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * A view's pieces compared with want, or with ref's bytes in place: the
 * span ref's last peek gave ([moff, moff + mlen) at mp, NULL: zeros) is
 * kept, so a view of small pages asks ref once a span, not once a page.
 */
struct view_cmp {
	const uint8_t *want;      /* the bytes from base on, or NULL: ref's */
	uint64_t base, end;
	struct target *ref;
	unsigned file;
	const uint8_t *mp;
	uint64_t moff, mlen;
	int differs;
};

/* p (NULL: zeros) and q (NULL: zeros), n bytes: the same? */
static int same_or_zero(const uint8_t *p, const uint8_t *q, size_t n)
{
	if (p && q)
		return memcmp(p, q, n) == 0;
	return p || q ? zeros_all(p ? p : q, n) : 1;
}

static int same_as_ref(struct view_cmp *v, uint64_t off, const uint8_t *p,
		       size_t n)
{
	while (n) {
		size_t k;

		if (off < v->moff || off - v->moff >= v->mlen) {
			int64_t got = v->ref->ops->peek(v->ref, v->file, off,
							(size_t)(v->end - off),
							&v->mp);

			if (got <= 0) {
				v->mlen = 0;
				return 0;
			}
			v->moff = off;
			v->mlen = (uint64_t)got;
		}
		k = v->moff + v->mlen - off < n ?
		    (size_t)(v->moff + v->mlen - off) : n;
		if (!same_or_zero(p, v->mp ? v->mp + (off - v->moff) : NULL, k))
			return 0;
		off += k;
		p = p ? p + k : NULL;
		n -= k;
	}
	return 1;
}

/* Whether t's n bytes of file at off are those of want, read in place
 * through its peek (a hole reads as zeros). */
int target_peek_same(struct target *t, unsigned file, uint64_t off,
		     const uint8_t *want, size_t n)
{
	struct view_cmp v = { .ref = t, .file = file, .end = off + n };

	return same_as_ref(&v, off, want, n);
}

static void view_cmp_piece(void *arg, uint64_t off, const uint8_t *p,
			   size_t n)
{
	struct view_cmp *v = arg;

	if (v->differs)
		return;
	v->differs = v->want ?
		     !same_or_zero(p, v->want + (off - v->base), n) :
		     !same_as_ref(v, off, p, n);
}

int64_t target_view_same(struct target *t, unsigned file, uint64_t off,
			 size_t n, const uint8_t *want, struct target *ref,
			 int *same)
{
	struct view_cmp v = { .want = want, .base = off, .end = off + n,
			      .ref = ref, .file = file };
	int64_t r;

	*same = 0;
	if (!t->ops->view)
		return -EOPNOTSUPP;
	r = t->ops->view(t, file, off, n, view_cmp_piece, &v);
	*same = r == (int64_t)n && !v.differs;
	return r;
}

/* A view's pieces copied into buf (target_look). */
struct view_copy {
	uint8_t *buf;
	uint64_t base;
};

static void copy_piece(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct view_copy *v = arg;
	uint8_t *to = v->buf + (off - v->base);

	if (p)
		memcpy(to, p, n);
	else
		memset(to, 0, n);
}

int64_t target_look(struct target *t, unsigned file, uint64_t off,
		    void *buf, size_t n)
{
	struct view_copy v = { .buf = buf, .base = off };
	int64_t r = t->ops->view ? t->ops->view(t, file, off, n, copy_piece, &v)
				 : -EOPNOTSUPP;

	return r != -EOPNOTSUPP ? r : t->ops->read(t, file, off, buf, n);
}

static int same_ranges(const struct range_vec *a, const struct range_vec *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].off != b->v[i].off || a->v[i].len != b->v[i].len ||
		    a->v[i].kind != b->v[i].kind)
			return 0;
	return 1;
}

/*
 * Write dst's sectors of file bytes [off, off + len) that differ from
 * want: what dst holds there is read into have first.
 */
static int mend_span(struct target *dst, unsigned file, uint64_t off,
		     const uint8_t *want, uint8_t *have, size_t len)
{
	int64_t k = dst->ops->read(dst, file, off, have, len);

	if (k < 0)
		return (int)k;
	if ((uint64_t)k != len)
		return -EIO; /* its size was made src's */
	return write_runs(dst, file, off, want, have, len);
}

/*
 * Whether d's len bytes of file at off are want's (*ok), compared through
 * its view or else read into have; d's read result.
 */
static int64_t holds_bytes(struct target *d, unsigned file, uint64_t off,
			   const uint8_t *want, uint8_t *have, size_t len,
			   int *ok)
{
	int64_t k = target_view_same(d, file, off, len, want, NULL, ok);

	if (k != -EOPNOTSUPP)
		return k;
	k = d->ops->read(d, file, off, have, len);
	*ok = k == (int64_t)len && !memcmp(want, have, len);
	return k;
}

/*
 * The one target of dst[] still in same, when it compares through a peek
 * (the model): src's bytes can then be viewed and compared with it, not
 * copied first.  -1 when there is none or more than one.
 */
static int sole_peek(struct target *const *dst, int n, uint32_t same)
{
	int one = -1;

	for (int i = 0; i < n; i++) {
		if (!(same & (1u << i)))
			continue;
		if (one >= 0)
			return -1;
		one = i;
	}
	return one >= 0 && dst[one]->ops->peek ? one : -1;
}

/*
 * The bits of *same whose dst[] holds src's bytes of file [0, size); a
 * target in mend (which has a peek) is written where it differs instead,
 * its bit kept and set in *mended.  With one target left and a peek, each
 * piece of src is first compared with it through src's view; only a piece
 * that differs is read into buf.
 */
static int same_bytes(struct target *const *dst, int n, struct target *src,
		      unsigned file, uint64_t size, uint8_t *buf,
		      size_t buflen, uint32_t mend, uint32_t *same,
		      uint32_t *mended)
{
	size_t half = buflen / 2;
	uint8_t *want = buf, *have = buf + half;

	for (uint64_t off = 0; off < size && *same;) {
		size_t len = size - off < half ? (size_t)(size - off) : half;
		int one = sole_peek(dst, n, *same), ok;
		int64_t r = one < 0 ? -EOPNOTSUPP :
			    target_view_same(src, file, off, len, NULL, dst[one],
					     &ok);

		if (r == -EOPNOTSUPP || (r == (int64_t)len && !ok))
			r = target_look(src, file, off, want, len);
		else if (r == (int64_t)len) { /* dst[one] holds these */
			off += len;
			continue;
		}
		if (r < 0)
			return (int)r;
		if ((uint64_t)r != len)
			return -EIO; /* it said it holds size bytes */
		for (int i = 0; i < n; i++) {
			struct target *d = dst[i];
			uint32_t bit = 1u << i;
			int64_t k;

			if (!(*same & bit))
				continue;
			if (d->ops->peek) {
				int ret;

				if (target_peek_same(d, file, off, want, len))
					continue;
				if (!(mend & bit)) {
					*same &= ~bit;
					continue;
				}
				ret = mend_span(d, file, off, want, have, len);
				if (ret)
					return ret;
				*mended |= bit;
				continue;
			}
			k = holds_bytes(d, file, off, want, have, len, &ok);
			if (k < 0)
				return (int)k;
			if (!ok)
				*same &= ~bit;
		}
		off += len;
	}
	return 0;
}

/* dst's file cut or extended to size (a target in mend whose size is not
 * src's). */
static int mend_size(struct target *dst, unsigned file, int64_t size)
{
	struct op op = { .kind = OP_TRUNCATE, .file = (uint8_t)file,
			 .arg = (uint64_t)size };
	int64_t r = dst->ops->apply(dst, &op, NULL, NULL);

	return r < 0 ? (int)r : 0;
}

int target_mend_file_n(struct target *const *dst, int n, struct target *src,
		       unsigned file, void *buf, size_t buflen, uint32_t mend,
		       uint32_t *same, uint32_t *mended)
{
	int64_t size = src->ops->size(src, file);
	struct range_vec want = { 0 }, have = { 0 };
	int ret = 0, listed = 0;

	*same = *mended = 0;
	if (size < 0 && size != -ENOENT)
		return (int)size;
	for (int i = 0; i < n && !ret; i++) {
		int64_t s = dst[i]->ops->size(dst[i], file);

		if (s < 0 && s != -ENOENT)
			ret = (int)s;
		else if (s == size)
			*same |= 1u << i;
		else if ((mend & (1u << i)) && s >= 0 && size >= 0 &&
			 !(ret = mend_size(dst[i], file, size))) {
			*same |= 1u << i;
			*mended |= 1u << i;
		}
	}
	if (ret || size == -ENOENT)
		goto out; /* the bits set: missing there too */
	for (int i = 0; i < n && *same && !ret; i++) {
		if (!(*same & (1u << i)) || !dst[i]->ops->ranges ||
		    !src->ops->ranges)
			continue;
		if (!listed++)
			ret = src->ops->ranges(src, file, push_range, &want);
		have.n = 0;
		if (!ret)
			ret = dst[i]->ops->ranges(dst[i], file, push_range,
						  &have);
		if (!ret && !same_ranges(&want, &have))
			*same &= ~(1u << i);
	}
	free(want.v);
	free(have.v);
	if (!ret && *same && size > 0)
		ret = same_bytes(dst, n, src, file, (uint64_t)size, buf, buflen,
				 mend & *same, same, mended);
out:
	if (ret)
		*same = 0;
	return ret;
}

int target_same_file_n(struct target *const *dst, int n, struct target *src,
		       unsigned file, void *buf, size_t buflen, uint32_t *same)
{
	uint32_t mended;

	return target_mend_file_n(dst, n, src, file, buf, buflen, 0, same,
				  &mended);
}

int target_copy_file_n(struct target *const *dst, int n, struct target *src,
		       unsigned file, void *buf, size_t buflen, int *failed)
{
	const struct copy_to to = { dst, n, failed };
	int64_t size = src->ops->size(src, file);
	struct op op = { .file = (uint8_t)file };
	struct range_vec rv = { 0 };
	uint64_t pos = 0;
	int ret;

	*failed = 0;
	if (size == -ENOENT) {
		op.kind = OP_UNLINK;
		return apply_all(&to, &op, -ENOENT);
	}
	if (size < 0)
		return (int)size;
	op.kind = OP_OPEN;
	op.flags = OP_FL_CREATE;
	ret = apply_all(&to, &op, 0);
	for (int i = 0; i < n && !ret; i++) {
		ret = target_clear_file(dst[i], file);
		if (ret)
			ret = copy_failed(&to, i, ret);
	}
	if (!ret && src->ops->ranges)
		ret = src->ops->ranges(src, file, push_range, &rv);
	for (size_t i = 0; i < rv.n && !ret; i++) {
		const struct target_range *g = &rv.v[i];
		uint64_t end = g->off + g->len;

		if (g->off > pos)
			ret = copy_span(&to, src, file, pos, g->off, 1, buf,
					buflen);
		if (ret)
			break;
		if (g->kind == TARGET_RANGE_UNWRITTEN) {
			struct op fa = { .kind = OP_FALLOC, .file = (uint8_t)file,
					 .off = g->off, .len = g->len,
					 .flags = OP_FL_KEEP_SIZE };

			ret = apply_all(&to, &fa, -EOPNOTSUPP);
		} else if (g->off < (uint64_t)size) {
			ret = copy_span(&to, src, file, g->off,
					end < (uint64_t)size ? end : (uint64_t)size,
					0, buf, buflen);
		}
		if (end > pos)
			pos = end;
	}
	free(rv.v);
	if (!ret && pos < (uint64_t)size)
		ret = copy_span(&to, src, file, pos, (uint64_t)size, 1, buf,
				buflen);
	if (ret)
		return ret;
	op.kind = OP_TRUNCATE;
	op.flags = 0;
	op.off = op.len = 0;
	op.arg = (uint64_t)size;
	return apply_all(&to, &op, 0);
}

int target_copy_file(struct target *dst, struct target *src, unsigned file,
		     void *buf, size_t buflen)
{
	int failed;

	return target_copy_file_n(&dst, 1, src, file, buf, buflen, &failed);
}

void target_kinds_str(uint64_t mask, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (unsigned k = 1; k < OP_KIND_COUNT && used + 1 < len; k++) {
		if (!(mask & (1ull << k)))
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? " " : "",
				 op_kind_name(k));

		if (w < 0)
			break;
		used += (size_t)w;
	}
}
