/*
 * check.c - run ops on several targets in lock step and compare (check.h).
 *
 * Cost per op is what the targets do plus a few compares: buffers are
 * allocated once, reads are compared piece by piece as they come, sizes
 * only after ops that may change them, and whole files only at
 * checkpoints.
 */
#include "harness/check_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/prefault.h"

#define DEFAULT_CHUNK ((size_t)1 << 20)
#define VERIFY_PIECE ((size_t)64 << 10)
#define DEFAULT_EVERY 1000u

const char *check_status_name(int status)
{
	switch (status) {
	case CHECK_OK: return "ok";
	case CHECK_DATA: return "data mismatch";
	case CHECK_SIZE: return "size mismatch";
	case CHECK_AUDIT: return "audit failure";
	case CHECK_ERRNO: return "result mismatch (unexpected errno)";
	case CHECK_INTERNAL: return "checker error";
	case CHECK_TWIN: return "twin state mismatch";
	case CHECK_NOMEM: return "out of memory (not a finding)";
	default: return "unknown";
	}
}

/* Can an allocation fail for want of memory here (check_cfg)? */
static int memory_limited(int cfg)
{
	struct rlimit as, data;
	char mode = 0;
	FILE *f;

	if (cfg)
		return cfg > 0;
	if ((getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) ||
	    (getrlimit(RLIMIT_DATA, &data) == 0 &&
	     data.rlim_cur != RLIM_INFINITY))
		return 1;
	/* strict overcommit: malloc fails past the commit limit */
	f = fopen("/proc/sys/vm/overcommit_memory", "r");
	if (f) {
		if (fread(&mode, 1, 1, f) != 1)
			mode = 0;
		fclose(f);
	}
	return mode == '2';
}

int check_new(struct target **t, int n, const struct check_cfg *cfg,
	      const struct op_seq *meta, struct checker **out)
{
	struct checker *c;
	int ret = -ENOMEM;

	if (n < 1 || n > TARGET_MAX)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	op_seq_init(&c->log);
	if (cfg)
		c->cfg = *cfg;
	/* what the log asks (check_cfg_parse) */
	if (meta && meta->hdr.check[0] &&
	    check_cfg_parse(meta->hdr.check, &c->cfg, c->fail.what,
			    sizeof(c->fail.what))) {
		check_free(c);
		return -EINVAL;
	}
	if (!c->cfg.verify_every)
		c->cfg.verify_every = DEFAULT_EVERY;
	/* Given, audit_every alone says when (with remount, crash, end);
	 * by default every durability point audits too (check.h). */
	c->audit_at_sync = !c->cfg.audit_every;
	c->mem_limited = memory_limited(c->cfg.memory_limited);
	if (!c->cfg.audit_every)
		c->cfg.audit_every = DEFAULT_EVERY;
	if (!c->cfg.out)
		c->cfg.out = stderr;
	c->chunk = c->cfg.chunk ? c->cfg.chunk : DEFAULT_CHUNK;
	if (c->chunk < 8192)
		c->chunk = 8192;
	c->n = n;
	c->ref = 0;
	for (int i = n - 1; i >= 0; i--) {
		c->t[i] = t[i];
		c->unsupported |= t[i]->unsupported;
		if (t[i]->caps & TARGET_MODEL)
			c->ref = i;
	}
	c->wbuf = malloc(c->chunk);
	if (!c->wbuf)
		goto out_error;
	for (int i = 0; i < n; i++) {
		c->rbuf[i] = malloc(c->chunk);
		if (!c->rbuf[i])
			goto out_error;
	}
	if (meta)
		op_seq_copy_meta(&c->log, meta);
	/* a failure's log asks its replay for the same checks */
	check_cfg_format(&c->cfg, c->log.hdr.check, sizeof(c->log.hdr.check));
	memcpy(c->own_mkfs, c->log.hdr.mkfs, sizeof(c->own_mkfs));
	memcpy(c->own_mount, c->log.hdr.mount, sizeof(c->own_mount));
	for (int i = 0; i < n; i++)
		target_set_names(t[i], &c->log);
	ret = check_reset(c);
	if (ret)
		goto out_error;
	*out = c;
	return 0;
out_error:
	check_free(c);
	return ret;
}

void check_free(struct checker *c)
{
	if (!c)
		return;
	free(c->wbuf);
	for (int i = 0; i < TARGET_MAX; i++)
		free(c->rbuf[i]);
	free(c->res);
	op_seq_free(&c->log);
	free(c);
}

int check_reset(struct checker *c)
{
	for (int i = 0; i < c->n; i++) {
		int ret = c->t[i]->ops->reset(c->t[i]);

		if (ret)
			return ret;
	}
	/* Statistics keep counting across resets (a soak's rounds). */
	op_seq_clear(&c->log);
	memset(&c->fail, 0, sizeof(c->fail));
	c->status = CHECK_OK;
	c->stalled = 0;
	c->dirty = c->touched = c->exists = c->matched = 0;
	c->cut_armed = 0;
	c->nomem_op = 0;
	c->twin_adopted = 0;
	c->trees_apart = 0;
	c->twins_apart = 0;
	return 0;
}

int check_release(struct checker *c)
{
	for (int i = 0; i < c->n; i++) {
		int ret = c->t[i]->ops->release ?
			  c->t[i]->ops->release(c->t[i]) : 0;

		if (ret)
			return ret;
	}
	return 0;
}

const struct check_stats *check_stats(const struct checker *c)
{
	return &c->st;
}

static int set_rounds(struct checker *c, const char *mkfs, const char *mount)
{
	for (int i = 0; i < c->n; i++) {
		int ret;

		if (!c->t[i]->ops->set_round)
			continue;
		ret = c->t[i]->ops->set_round(c->t[i], mkfs, mount);
		if (ret)
			return ret;
	}
	return 0;
}

/* Whether the comma-separated list has the option tok[0..n). */
static bool has_opt(const char *list, const char *tok, size_t n)
{
	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ",");

		if (l == n && !memcmp(p, tok, n))
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

/* "extra,own" into a header field (own wins, being later; an option of
 * extra that own repeats word for word is written once); 0 or -E2BIG
 * when it does not fit (the header could not record it). */
static int join_hdr(char dst[OP_HDR_STR], const char *extra, const char *own)
{
	size_t len = 0, b = strlen(own);

	for (const char *p = extra; *p;) {
		size_t l = strcspn(p, ",");

		if (l && !has_opt(own, p, l)) {
			if (len + !!len + l >= OP_HDR_STR)
				return -E2BIG;
			if (len)
				dst[len++] = ',';
			memcpy(dst + len, p, l);
			len += l;
		}
		p += l + (p[l] == ',');
	}
	if (len + !!(len && b) + b >= OP_HDR_STR)
		return -E2BIG;
	if (len && b)
		dst[len++] = ',';
	memcpy(dst + len, own, b + 1);
	return 0;
}

int check_new_round(struct checker *c, const char *mkfs, const char *mount,
		    int *used)
{
	char mk[OP_HDR_STR], mn[OP_HDR_STR];
	int ret;

	mkfs = mkfs ? mkfs : "";
	mount = mount ? mount : "";
	ret = join_hdr(mk, mkfs, c->own_mkfs);
	if (!ret)
		ret = join_hdr(mn, mount, c->own_mount);
	if (!ret)
		ret = set_rounds(c, mkfs, mount);
	if (!ret)
		ret = check_reset(c);
	if (ret && (mkfs[0] || mount[0])) {
		mkfs = mount = "";
		memcpy(mk, c->own_mkfs, sizeof(mk));
		memcpy(mn, c->own_mount, sizeof(mn));
		ret = set_rounds(c, "", "");
		if (!ret)
			ret = check_reset(c);
	}
	memcpy(c->log.hdr.mkfs, mk, sizeof(mk));
	memcpy(c->log.hdr.mount, mn, sizeof(mn));
	if (used)
		*used = mkfs[0] || mount[0];
	return ret;
}

void check_set_note(struct checker *c, const char *note)
{
	snprintf(c->note, sizeof(c->note), "%s", note ? note : "");
}

int check_stalled(const struct checker *c)
{
	return c->stalled;
}

const struct check_failure *check_failure(const struct checker *c)
{
	return &c->fail;
}

const struct op_seq *check_log(const struct checker *c)
{
	return &c->log;
}

uint64_t check_unsupported(const struct checker *c)
{
	return c->unsupported;
}

const char *check_errstr(int64_t r, char *buf, size_t len)
{
	if (r >= 0)
		snprintf(buf, len, "%lld", (long long)r);
	else
		snprintf(buf, len, "-%s", strerrorname_np((int)-r) ?
			 strerrorname_np((int)-r) : "E?");
	return buf;
}

/*
 * A call of the checker (check_op, check_verify) clears errno as it
 * begins, so that ENOMEM in it at a report means an allocation failed
 * during the call; as it ends, ENOMEM is kept as the op at which an
 * allocation failed in this round (check.h, running out of memory).
 */
static void call_ends(struct checker *c)
{
	if (errno == ENOMEM && !c->nomem_op)
		c->nomem_op = c->log.n ? c->log.n : 1;
}

/* Compare every target's result with the reference's. */
static int compare_results(struct checker *c, const int64_t *r, unsigned file)
{
	int nomem = -1;

	/* one out of memory is named first: it explains the others */
	for (int i = 0; i < c->n && nomem < 0; i++)
		if (r[i] != r[c->ref] && r[i] == -ENOMEM)
			nomem = i;
	for (int k = 0; k < c->n; k++) {
		int i = nomem < 0 ? k : (nomem + k) % c->n;
		char a[32], b[32];

		if (r[i] == r[c->ref])
			continue;
		/* Two different byte counts usually mean two different sizes. */
		if (r[i] >= 0 && r[c->ref] >= 0 &&
		    c->t[i]->ops->size(c->t[i], file) !=
		    c->t[c->ref]->ops->size(c->t[c->ref], file))
			return check_fail(c, CHECK_SIZE, i, file, NULL, NULL, 0, 0,
					  "returned %s on %s but %s on %s "
					  "(the file sizes differ)",
					  check_errstr(r[c->ref], a, sizeof(a)),
					  c->t[c->ref]->name,
					  check_errstr(r[i], b, sizeof(b)),
					  c->t[i]->name);
		return check_fail(c, CHECK_ERRNO, i, file, NULL, NULL, 0, 0,
				  "returned %s on %s but %s on %s",
				  check_errstr(r[c->ref], a, sizeof(a)),
				  c->t[c->ref]->name,
				  check_errstr(r[i], b, sizeof(b)),
				  c->t[i]->name);
	}
	return 0;
}

/* Compare n bytes read at off by every target with the reference's. */
static int compare_bytes(struct checker *c, unsigned file, uint64_t off,
			 size_t n, const char *what)
{
	c->st.bytes_compared += n;
	for (int i = 0; i < c->n; i++) {
		if (i == c->ref || memcmp(c->rbuf[c->ref], c->rbuf[i], n) == 0)
			continue;
		return check_fail(c, CHECK_DATA, i, file, c->rbuf[c->ref],
				  c->rbuf[i], off, n, "%s: bytes differ", what);
	}
	return 0;
}

static int compare_size(struct checker *c, unsigned file, int64_t *sizep)
{
	int64_t s[TARGET_MAX];

	for (int i = 0; i < c->n; i++)
		s[i] = c->t[i]->ops->size(c->t[i], file);
	for (int i = 0; i < c->n; i++) {
		char a[32], b[32];

		if (s[i] == s[c->ref])
			continue;
		return check_fail(c, CHECK_SIZE, i, file, NULL, NULL, 0, 0,
				  "%s: size %s on %s but %s on %s",
				  op_file_name(&c->log, file),
				  check_errstr(s[c->ref], a, sizeof(a)),
				  c->t[c->ref]->name,
				  check_errstr(s[i], b, sizeof(b)),
				  c->t[i]->name);
	}
	if (sizep)
		*sizep = s[c->ref];
	return 0;
}

/*
 * The bytes a verify or a crash's comparison reads from each target at a
 * time: pieces that stay in the processor's cache between the read and
 * the compare.  A read changes nothing in a target, so its size is the
 * checker's to pick (an op's pieces are c->chunk, which the engines see).
 * buf: a buffer split in two for src's and dst's piece, else one.
 */
static size_t compare_span(const struct checker *c, bool split)
{
	size_t piece = (split ? 2 : 1) * VERIFY_PIECE;

	return c->chunk < piece ? c->chunk : piece;
}

/*
 * Every target's n bytes at off, but those in viewed (compared already),
 * in its rbuf against the reference's bytes in place (its peek): true
 * when all agree.  A difference is reported by the caller, from a copy,
 * as any other.
 */
static bool same_as_peek(struct checker *c, unsigned file, uint64_t off,
			 size_t n, uint32_t viewed)
{
	struct target *ref = c->t[c->ref];

	for (int i = 0; i < c->n; i++)
		if (i != c->ref && !(viewed & (1u << i)) &&
		    !target_peek_same(ref, file, off, c->rbuf[i], n))
			return false;
	c->st.bytes_compared += n;
	return true;
}

/*
 * Every target's n bytes of file at off, result in r[]: the reference
 * (with a peek: nothing to read) gives n; a target with a view is
 * compared through it with the reference's bytes in place, without a
 * copy (its bit in *viewed, and in *differ where it differs); any other
 * is looked at into its rbuf (target_look).  A target in seen (its bytes
 * of the file were compared with the reference's just now, c->matched)
 * counts as viewed and the same, unread: should another differ,
 * read_viewed reads it for the report as any viewed target.
 */
static void read_piece(struct checker *c, unsigned file, uint64_t off,
		       size_t n, bool peek, uint32_t seen, int64_t *r,
		       uint32_t *viewed, uint32_t *differ)
{
	*viewed = *differ = 0;
	for (int i = 0; i < c->n; i++) {
		struct target *t = c->t[i];
		int same;

		if (peek && (i == c->ref || (seen & (1u << i)))) {
			r[i] = (int64_t)n;
			*viewed |= (uint32_t)(i != c->ref) << i;
			continue;
		}
		if (peek) {
			r[i] = target_view_same(t, file, off, n, NULL,
						c->t[c->ref], &same);
			if (r[i] != -EOPNOTSUPP) {
				*viewed |= 1u << i;
				*differ |= same ? 0 : 1u << i;
				continue;
			}
		}
		r[i] = target_look(t, file, off, c->rbuf[i], n);
	}
}

/*
 * A piece that differs somewhere: the viewed targets read into their rbuf
 * too, for the report.  A read that says other than its view did (a device
 * that fails at random) is what is judged.
 */
static int read_viewed(struct checker *c, unsigned file, uint64_t off,
		       size_t n, uint32_t viewed, int64_t *r)
{
	bool moved = false;

	for (int i = 0; i < c->n; i++) {
		int64_t k;

		if (!(viewed & (1u << i)))
			continue;
		k = c->t[i]->ops->read(c->t[i], file, off, c->rbuf[i], n);
		moved = moved || k != r[i];
		r[i] = k;
	}
	return moved ? compare_results(c, r, file) : 0;
}

/* Targets in differ viewed other bytes than they read: our own bug. */
static int view_lied(struct checker *c, unsigned file, uint64_t off, size_t n,
		     uint32_t differ)
{
	int i = 0;

	while (!(differ & (1u << i)))
		i++;
	return check_fail(c, CHECK_INTERNAL, i, file, NULL, NULL, 0, 0,
			  "verify: %s's view of bytes %llu-%llu differs from "
			  "what it reads there", c->t[i]->name,
			  (unsigned long long)off,
			  (unsigned long long)(off + n - 1));
}

/*
 * Existence, size and every byte of one file on every target.  A
 * reference with a peek (the model) is not copied out: the others are
 * compared with its bytes where they are, those with a view (an engine)
 * without being copied out either, and only a difference reads them into
 * their buffers for the report.
 */
static int verify_file(struct checker *c, unsigned file, uint32_t seen)
{
	struct target *ref = c->t[c->ref];
	bool peek = ref->ops->peek != NULL;
	int64_t size, r[TARGET_MAX];
	uint64_t off = 0;
	int ret;

	c->verifying++;
	ret = compare_size(c, file, &size);
	if (ret || size < 0)
		goto out;
	if (!peek)
		seen = 0;
	else if (seen == (((1u << c->n) - 1) & ~(1u << c->ref)))
		goto out; /* every other target's bytes: compared just now */
	while (off < (uint64_t)size) {
		size_t piece = compare_span(c, false);
		size_t n = (uint64_t)size - off < piece ?
			   (size_t)((uint64_t)size - off) : piece;
		uint32_t viewed, differ;

		read_piece(c, file, off, n, peek, seen, r, &viewed, &differ);
		ret = compare_results(c, r, file);
		if (ret || r[c->ref] <= 0)
			break;
		if (peek && !differ && same_as_peek(c, file, off, n, viewed)) {
			off += n;
			continue;
		}
		ret = read_viewed(c, file, off, n, viewed, r);
		if (ret)
			break;
		if (peek && ref->ops->read(ref, file, off, c->rbuf[c->ref], n) !=
			    (int64_t)n) {
			ret = check_fail(c, CHECK_INTERNAL, c->ref, file, NULL,
					 NULL, 0, 0, "%s: read back short",
					 ref->name);
			break;
		}
		ret = compare_bytes(c, file, off, (size_t)r[c->ref], "verify");
		if (!ret && differ) /* every read agrees: a view did not */
			ret = view_lied(c, file, off, n, differ);
		if (ret)
			break;
		off += (uint64_t)r[c->ref];
	}
out:
	c->verifying--;
	return ret;
}

static int audit_all(struct checker *c)
{
	int ret = 0;

	c->verifying++;
	for (int i = 0; i < c->n && !ret; i++) {
		char msg[256] = "", eb[32];

		if (!c->t[i]->ops->audit)
			continue;
		c->st.audits++;
		ret = c->t[i]->ops->audit(c->t[i], msg, sizeof(msg));
		if (ret == -ENOMEM) /* it could not run to its end */
			ret = check_fail(c, CHECK_AUDIT, i, 0, NULL, NULL, 0, 0,
					 "audit of %s failed: %s: %s",
					 c->t[i]->name,
					 check_errstr(ret, eb, sizeof(eb)),
					 msg[0] ? msg : "(no message)");
		else if (ret)
			ret = check_fail(c, CHECK_AUDIT, i, 0, NULL, NULL, 0, 0,
					 "audit of %s failed: %s", c->t[i]->name,
					 msg[0] ? msg : "(no message)");
	}
	c->verifying--;
	return ret;
}

/*
 * Every file of every target: sizes, then bytes against the reference's.
 * The files a crash's adoption has just compared on its source (matched)
 * are compared on the others only.
 */
static int verify_all(struct checker *c)
{
	uint32_t mask[TARGET_MAX], all = c->touched, matched = c->matched;
	int src = c->matched_src;

	c->matched = 0;
	c->st.verifies++;
	for (int i = 0; i < c->n; i++) {
		int ret = c->t[i]->ops->list(c->t[i], &mask[i]);

		if (ret) {
			char eb[32];

			c->verifying++;
			ret = check_fail(c, CHECK_ERRNO, i, 0, NULL, NULL, 0, 0,
					 "listing the files of %s failed: %s",
					 c->t[i]->name,
					 check_errstr(ret, eb, sizeof(eb)));
			c->verifying--;
			return ret;
		}
		all |= mask[i];
	}
	for (unsigned f = 0; f < OP_MAX_FILES; f++) {
		int ret;

		if (!(all & (1u << f)))
			continue;
		ret = verify_file(c, f, (matched >> f & 1) ? 1u << src : 0);
		if (ret)
			return ret;
	}
	return 0;
}

int check_verify(struct checker *c)
{
	int ret;

	if (c->status || c->stalled)
		return c->status;
	errno = 0; /* call_ends */
	ret = verify_all(c);
	if (!ret)
		ret = audit_all(c);
	if (!ret && c->cfg.twins)
		ret = check_twins(c);
	call_ends(c);
	return ret;
}

static int judge_full(struct checker *c, int i, const struct op *op,
		      int64_t r, uint64_t want, unsigned file);

/*
 * Target i ran out of space taking file f as target src has it.  With
 * too little room left that is no bug, but the targets are out of step
 * for good: stall (check_stalled) and return 1.  With room left, fail
 * (status set) and return 1; 0 when it cannot be judged.
 */
static int stall_if_full(struct checker *c, int i, int src, unsigned f)
{
	int64_t size = c->t[src]->ops->size(c->t[src], f);
	struct op w = { .kind = OP_PWRITE, .file = (uint8_t)f,
			.len = size > 0 ? (uint64_t)size : 0 };
	int ret = judge_full(c, i, &w, -ENOSPC, 0, f);

	if (ret == 1)
		return 0;
	if (ret == 0) {
		c->stalled = 1;
		c->st.stalls++;
	}
	return 1;
}

/* How another target takes a file from target src (take_files). */
enum take_step {
	TAKE_CLEAR,     /* emptied (target_clear_file)                      */
	TAKE_COPY,      /* copied whole (target_copy_file_n)                */
	TAKE_MATCH,     /* written only where it differs (target_match_file) */
};

/*
 * Target src's file f taken by every other target but those whose bit f
 * of keep[] says they hold it already (keep NULL: none does): 0, or the
 * error and in *who the target that failed.  A copy reads src once for
 * all of them (target_copy_file_n).
 */
/* The targets but src and those whose bit f of keep[] is set (keep NULL:
 * none), in dst[] with their indexes in idx[]; returns how many. */
static int other_targets(const struct checker *c, int src,
			 const uint32_t *keep, unsigned f,
			 struct target **dst, int *idx)
{
	int n = 0;

	for (int i = 0; i < c->n; i++) {
		if (i == src || (keep && (keep[i] & (1u << f))))
			continue;
		idx[n] = i;
		dst[n++] = c->t[i];
	}
	return n;
}

/*
 * The bytes of file f that an op which ran out of space on some targets
 * may have left different between them, as [*from, *to): the range it
 * writes in f; from there to the end for a shift (collapse, insert), an
 * exchange (whose last unit may pass the length) and a clone or dedupe
 * of length 0 (to the source's EOF); the whole file for any other op,
 * and for a range op within one file.  The targets agreed
 * on the rest before the op (or differ there by a bug the next verify
 * reports), and an op that fails or comes up short changes nothing
 * outside its range: so an accepted ENOSPC takes that span only, never
 * a difference elsewhere that it would hide.
 */
static void op_span(const struct op *op, unsigned f, uint64_t *from,
		    uint64_t *to)
{
	uint64_t off = op->off;

	*from = 0;
	*to = UINT64_MAX;
	switch (op->kind) {
	case OP_PWRITE:
	case OP_FALLOC:
	case OP_FPUNCH:
	case OP_FZERO:
		break;
	case OP_COPY_RANGE:
	case OP_CLONE_RANGE:
	case OP_DEDUPE_RANGE:
		if (op->file == op->file2 || f != op->file)
			return;
		off = op->arg; /* the destination's range */
		if (op->len == 0 && op->kind != OP_COPY_RANGE) {
			*from = off; /* a remap of length 0: to the source's EOF */
			return;
		}
		break;
	case OP_EXCHANGE_RANGE:
		if (op->file != op->file2)
			*from = f == op->file ? op->arg : op->off;
		return;
	case OP_FCOLLAPSE:
	case OP_FINSERT:
		*from = op->off;
		return;
	default:
		return;
	}
	*from = off;
	*to = op->len > UINT64_MAX - off ? UINT64_MAX : off + op->len;
}

/* op: the op that ran out of space (TAKE_MATCH: its span, op_span). */
static int take_one(struct checker *c, int src, unsigned f,
		    enum take_step step, const struct op *op,
		    const uint32_t *keep, int *who)
{
	struct target *dst[TARGET_MAX], *from = c->t[src];
	int idx[TARGET_MAX], failed = 0, ret = 0;
	int n = other_targets(c, src, keep, f, dst, idx);

	if (step == TAKE_COPY && n) {
		ret = target_copy_file_n(dst, n, from, f, c->wbuf, c->chunk,
					 &failed);
	} else {
		uint64_t lo = 0, hi = UINT64_MAX;

		if (op)
			op_span(op, f, &lo, &hi);
		for (int k = 0; k < n && !ret; k++) {
			ret = step == TAKE_CLEAR ? target_clear_file(dst[k], f) :
			      target_match_file(dst[k], from, f, lo, hi,
						c->wbuf, c->chunk);
			failed = k;
		}
	}
	*who = n ? idx[failed] : src;
	return ret;
}

/*
 * One step of every other target taking the files in mask from target
 * src (but what keep[] says a target holds already; NULL: nothing; a
 * match takes only what op_span says op may have changed).  A
 * target that runs out of room is judged (stall_if_full).  0 when every
 * step went through; else *stop is set and the return is what the
 * caller returns: 0 if the checker stalled, else the status of the
 * failure, said as "VERB SRC's FILE WHY failed: ERROR".
 */
static int take_files(struct checker *c, int src, uint32_t mask,
		      enum take_step step, const struct op *op,
		      const uint32_t *keep, const char *verb, const char *why,
		      int *stop)
{
	*stop = 1;
	for (unsigned f = 0; f < OP_MAX_FILES; f++) {
		char eb[32];
		int i, ret;

		if (!(mask & (1u << f)))
			continue;
		ret = take_one(c, src, f, step, op, keep, &i);
		if (ret == -ENOSPC && stall_if_full(c, i, src, f))
			return c->stalled ? 0 : c->status;
		if (ret)
			return check_fail(c, CHECK_ERRNO, i, f, NULL, NULL, 0, 0,
					  "%s %s's %s %s failed: %s", verb,
					  c->t[src]->name,
					  op_file_name(&c->log, f), why,
					  check_errstr(ret, eb, sizeof(eb)));
	}
	*stop = 0;
	return 0;
}

/*
 * A target that a crash's source is matched into in place (held_already):
 * one compared through its peek, whose ranges are not compared, with no
 * room to run out of (the model).  Any other is emptied and copied.
 */
static bool mends_in_place(const struct target *t)
{
	return t->ops->peek && !t->ops->ranges && !t->ops->space;
}

/*
 * In keep[i], the files of mask that target i already holds as src does
 * (target_same_file_n): a copy would leave them as they are.  A target
 * that mends in place is made to hold them so in the same pass over
 * src's bytes (target_mend_file_n), writing only where it differs.  A
 * target that cannot be read is left to the copy, which reports it.
 */
static void held_already(struct checker *c, int src, uint32_t mask,
			 uint32_t *keep)
{
	struct target *dst[TARGET_MAX];
	int idx[TARGET_MAX];
	int n = other_targets(c, src, NULL, 0, dst, idx);
	uint32_t mend = 0;

	for (int k = 0; k < n; k++)
		if (mends_in_place(dst[k]))
			mend |= 1u << k;
	memset(keep, 0, (size_t)c->n * sizeof(*keep));
	for (unsigned f = 0; f < OP_MAX_FILES; f++) {
		uint32_t same, mended;

		if (!(mask & (1u << f)) ||
		    target_mend_file_n(dst, n, c->t[src], f, c->wbuf,
				       compare_span(c, true), mend, &same,
				       &mended))
			continue;
		for (int k = 0; k < n; k++) {
			if (!(same & (1u << k)))
				continue;
			keep[idx[k]] |= 1u << f;
			if (mended & (1u << k))
				c->st.adopt_mended++;
			else
				c->st.adopt_kept++;
		}
	}
}

/*
 * Every other target takes the files in mask as target src has them:
 * those it does not hold as src does already (held_already) are all
 * emptied first, so no copy needs space another file's old contents
 * still hold, then copied (target_copy_file: no more space than src
 * uses).
 */
static int adopt_files(struct checker *c, int src, uint32_t mask,
		       const char *when)
{
	uint32_t keep[TARGET_MAX];
	int stop, ret;

	if (mask)
		c->twin_adopted |= mask | 1u << 31;
	held_already(c, src, mask, keep);
	ret = take_files(c, src, mask, TAKE_CLEAR, NULL, keep, "adopting",
			 when, &stop);
	if (!stop)
		ret = take_files(c, src, mask, TAKE_COPY, NULL, keep,
				 "adopting", when, &stop);
	/* The reference matched in place: src's bytes of those files were
	 * compared with it in that pass (held_already), and no op comes
	 * between (one_op clears it). */
	if (!ret && !stop && c->ref != src && mends_in_place(c->t[c->ref])) {
		c->matched = keep[c->ref];
		c->matched_src = src;
	}
	return ret;
}

/* The margin an ENOSPC is judged with (check.h): 16 units and 1/32. */
#define FULL_MARGIN_UNITS 16u
#define FULL_MARGIN_SHIFT 5
/* ... and the room extent maps and the log may need on their device:
 * 1 MiB, or 64 of its blocks where they are large (an engine keeps a
 * block count back for its trees' splits: at 64 KiB a block, 1 MiB is
 * only 16 of them). */
#define FULL_META_MARGIN ((uint64_t)1 << 20)
#define FULL_META_BLOCKS 64u
/* Bytes a partial change of a compressed extent may rewrite plain. */
#define COMPRESSED_PIECE ((uint64_t)128 << 10)

/*
 * New data space an op may need at most, beyond what it frees: its bytes
 * where it writes or preallocates, and at each end of the range a unit
 * rewritten out of place (zoned) or a compressed piece rewritten plain.
 */
static uint64_t op_need(const struct op *op, uint64_t len, uint32_t unit)
{
	uint64_t edges = 2 * ((uint64_t)unit + COMPRESSED_PIECE);

	switch (op->kind) {
	case OP_PWRITE:
	case OP_FALLOC:
	case OP_FZERO:
	case OP_COPY_RANGE:
		return len + edges;
	default:
		return edges;
	}
}

/*
 * Metadata an op may need beyond the margin: an exchange maps every
 * record of both ranges into the other file, and on files mapped a block
 * a record that is two records a block, each an insert that may split
 * every level of an extent tree (the engine reserves that much before
 * it swaps anything, as XFS does), and a cut at each end of both ranges.
 */
static uint64_t op_meta_need(const struct op *op, uint64_t len,
			     const struct target_space *sp)
{
	uint64_t recs;

	if (op->kind != OP_EXCHANGE_RANGE || !sp->meta_block)
		return 0;
	recs = 2 * ((len + sp->meta_block - 1) / sp->meta_block) + 4;
	return recs * sp->map_insert * sp->meta_block;
}

/* What a target's ENOSPC is, judged by its room for one file. */
enum full_verdict {
	FULL_OK,        /* legitimate: too little room left                 */
	FULL_UNKNOWN,   /* cannot be judged: no space call, or no answer    */
	FULL_ROOM,      /* room left: a bug (why says how much)            */
};

static enum full_verdict judge_one(struct checker *c, int i,
				   const struct op *op, int64_t r,
				   uint64_t want, unsigned file, char *why,
				   size_t whylen)
{
	struct target *t = c->t[i];
	struct target_space sp = { 0 };
	uint64_t len, need, margin, meta_margin;

	/* no answer (-EOPNOTSUPP: no limit to tell; -EIO: no filesystem
	 * mounted any more) leaves the plain mismatch to report */
	if (!t->ops->space || t->ops->space(t, file, &sp))
		return FULL_UNKNOWN;
	len = want ? want - (uint64_t)(r > 0 ? r : 0) : op->len;
	need = op_need(op, len, sp.unit);
	margin = FULL_MARGIN_UNITS * (uint64_t)sp.unit +
		 (sp.capacity >> FULL_MARGIN_SHIFT);
	meta_margin = FULL_META_BLOCKS * (uint64_t)sp.meta_block;
	if (meta_margin < FULL_META_MARGIN)
		meta_margin = FULL_META_MARGIN;
	if (sp.avail < need + margin ||
	    sp.meta_avail < meta_margin + op_meta_need(op, len, &sp))
		return FULL_OK;
	snprintf(why, whylen, "%s: %llu bytes available, the op needs at most "
		 "%llu (+ margin %llu)", op_file_name(&c->log, file),
		 (unsigned long long)sp.avail, (unsigned long long)need,
		 (unsigned long long)margin);
	return FULL_ROOM;
}

/*
 * Is target i's ENOSPC (or short write: wrote r of want) legitimate?
 * An op on two files is, when either file's device is short of room.
 * 0 when it is, 1 when it cannot be judged (a plain mismatch), else the
 * failure's status.
 */
static int judge_full(struct checker *c, int i, const struct op *op,
		      int64_t r, uint64_t want, unsigned file)
{
	const struct op_kind_info *ki = op_kind_info(op->kind);
	char why[2][200] = { "", "" }, eb[32];
	enum full_verdict v = judge_one(c, i, op, r, want, file, why[0],
					sizeof(why[0]));

	if (v == FULL_ROOM && (ki->uses & OP_USE_FILE2) && op->file2 != file)
		v = judge_one(c, i, op, r, want, op->file2, why[1],
			      sizeof(why[1]));
	if (v == FULL_OK)
		return 0;
	if (v == FULL_UNKNOWN)
		return 1;
	return check_fail(c, CHECK_ERRNO, i, file, NULL, NULL, 0, 0,
			  "returned %s on %s with room left: %s%s%s",
			  check_errstr(r, eb, sizeof(eb)), c->t[i]->name, why[0],
			  why[1][0] ? "; " : "", why[1]);
}

/*
 * After op ran out of space: every other target's files in mask made to
 * read as src's where op may have left them different (op_span),
 * writing only where they differ (target_match_file).  A target that
 * runs out of room for that too, legitimately, leaves the targets out of
 * step for good: the checker stalls (check_stalled).
 */
static int match_files(struct checker *c, int src, const struct op *op,
		       uint32_t mask)
{
	int stop;

	return take_files(c, src, mask, TAKE_MATCH, op, NULL, "taking",
			  "after it ran out of space", &stop);
}

/*
 * Results that differ only because some targets ran out of space: judge
 * each of those (judge_full); when all are legitimate the others take
 * the file as the one that wrote least left it (match_files), and r[]
 * becomes its result everywhere.  counts: the op returns a byte count
 * (pwrite, copy_range), and one short of the others' counts as running
 * out.  0 when settled or nothing to settle
 * (compare_results then sees what is left), else a failure's status.
 */
static int settle_full(struct checker *c, const struct op *op, int64_t *r,
		       int counts)
{
	int full[TARGET_MAX] = { 0 }, nfull = 0, src = -1;
	int64_t other = 0;
	uint64_t want = 0;
	int have_other = 0, ret;
	uint32_t mask;

	/* a byte count below the others' is running out too */
	for (int i = 0; i < c->n && counts; i++)
		if (r[i] > 0 && (uint64_t)r[i] > want)
			want = (uint64_t)r[i];
	for (int i = 0; i < c->n; i++) {
		if (r[i] == -ENOSPC ||
		    (want && r[i] >= 0 && (uint64_t)r[i] < want)) {
			full[i] = 1;
			nfull++;
			if (src < 0 || r[i] < r[src])
				src = i;
		} else if (!have_other) {
			other = r[i];
			have_other = 1;
		} else if (r[i] != other) {
			return 0; /* they differ otherwise too */
		}
	}
	if (!nfull || !have_other || other < 0)
		return 0; /* all ran out alike, or the others failed otherwise */
	for (int i = 0; i < c->n; i++) {
		if (!full[i])
			continue;
		ret = judge_full(c, i, op, r[i], want, op->file);
		if (ret == 1)
			return 0;
		if (ret)
			return ret;
	}
	mask = 1u << op->file;
	if (op->kind == OP_EXCHANGE_RANGE)
		mask |= 1u << op->file2;
	ret = match_files(c, src, op, mask);
	if (ret)
		return ret;
	c->st.enospc++;
	c->dirty |= mask;
	for (int i = 0; i < c->n; i++)
		r[i] = r[src];
	return 0;
}

/*
 * Some targets could not create a file (ENFILE) where others did: no bug
 * when each of them has no free inode left (a small inode table, mkfs
 * inodes=N), but the targets are out of step for good: stall.  With
 * inodes free it is a failure.  0 when nothing to settle or stalled.
 */
static int settle_nofiles(struct checker *c, const struct op *op,
			  const int64_t *r)
{
	int nfull = 0, other = 0;
	char eb[32];

	for (int i = 0; i < c->n; i++)
		if (r[i] == -ENFILE)
			nfull++;
		else
			other = 1;
	if (!nfull || !other)
		return 0;
	for (int i = 0; i < c->n; i++) {
		struct target_space sp = { .free_inodes = UINT64_MAX };
		struct target *t = c->t[i];

		if (r[i] != -ENFILE)
			continue;
		if (!t->ops->space || t->ops->space(t, op->file, &sp) ||
		    sp.free_inodes == UINT64_MAX)
			return 0; /* cannot be judged: the plain mismatch */
		if (sp.free_inodes)
			return check_fail(c, CHECK_ERRNO, i, op->file, NULL,
					  NULL, 0, 0, "returned %s on %s with "
					  "%llu free inodes",
					  check_errstr(r[i], eb, sizeof(eb)),
					  t->name,
					  (unsigned long long)sp.free_inodes);
	}
	c->stalled = 1;
	c->st.stalls++;
	return 0;
}

/* pwrite and pread: piece by piece, all targets per piece. */
static int rw_op(struct checker *c, const struct op *op, uint64_t opno,
		 int64_t *result)
{
	uint64_t piece = c->chunk, done = 0, total = 0;
	int64_t r[TARGET_MAX];
	int ret;

	if (op->bsize && op->bsize < piece)
		piece = op->bsize;
	do {
		struct op sub = *op;
		uint64_t n = op->len - done < piece ? op->len - done : piece;

		sub.off = op->off + done;
		sub.len = n;
		if (op->kind == OP_PWRITE)
			op_fill(op, opno, sub.off, c->wbuf, n);
		for (int i = 0; i < c->n; i++)
			r[i] = c->t[i]->ops->apply(c->t[i], &sub, c->wbuf,
						   c->rbuf[i]);
		ret = settle_full(c, &sub, r, op->kind == OP_PWRITE);
		if (!ret && !c->stalled)
			ret = settle_nofiles(c, &sub, r);
		if (!ret && c->stalled) {
			*result = r[c->ref];
			return 0;
		}
		if (!ret)
			ret = compare_results(c, r, op->file);
		if (ret)
			return ret;
		if (op->kind == OP_PREAD && r[c->ref] > 0) {
			ret = compare_bytes(c, op->file, sub.off,
					    (size_t)r[c->ref], "pread");
			if (ret)
				return ret;
		}
		if (r[c->ref] < 0) {
			*result = total ? (int64_t)total : r[c->ref];
			return 0;
		}
		total += (uint64_t)r[c->ref];
		if ((uint64_t)r[c->ref] < n)
			break;
		done += n;
	} while (done < op->len);
	*result = (int64_t)total;
	return 0;
}

static int simple_op(struct checker *c, const struct op *op, int64_t *result)
{
	int64_t r[TARGET_MAX];
	int ret;

	for (int i = 0; i < c->n; i++)
		r[i] = c->t[i]->ops->apply(c->t[i], op, NULL, NULL);
	ret = op->kind == OP_CRASH ? 0 :
	      settle_full(c, op, r, op->kind == OP_COPY_RANGE);
	if (!ret && !c->stalled && op->kind != OP_CRASH)
		ret = settle_nofiles(c, op, r);
	if (!ret && !c->stalled)
		ret = compare_results(c, r, op->file);
	*result = r[c->ref];
	return ret;
}

/*
 * A crash: every target that can crash loses what it had not made
 * durable and recovers.  Durable files must come back as they were (the
 * verify after this checks it); every non-durable file takes, on every
 * other target, the state the first crashing target recovered.
 */
static int crash_op(struct checker *c, const struct op *op, int64_t *result)
{
	int ret = simple_op(c, op, result);

	return ret ? ret : check_crash_adopt(c, result);
}

int check_crash_adopt(struct checker *c, int64_t *result)
{
	int src = -1, ret;
	char eb[32];

	for (int i = 0; i < c->n && src < 0; i++)
		if (c->t[i]->caps & TARGET_CRASHES)
			src = i;
	c->st.crashes++;
	*result = 0;
	if (src < 0) {
		/* Only models: nothing is lost, everything is durable. */
		c->dirty = 0;
		return 0;
	}
	*result = c->dirty;
	/* what each recovered alone, before any takes another's files */
	if (c->cfg.recovered)
		c->cfg.recovered(c->cfg.recovered_arg, c->t, c->n);
	ret = check_twins_recovered(c);
	if (ret)
		return ret;
	ret = adopt_files(c, src, c->dirty, "after the crash");
	if (ret || c->stalled)
		return ret;
	/* What was adopted is now durable on the other crashing targets too. */
	for (int i = 0; i < c->n; i++) {
		struct op sync = { .kind = OP_SYNC };

		if (i == src || !(c->t[i]->caps & TARGET_CRASHES) || !c->dirty)
			continue;
		ret = (int)c->t[i]->ops->apply(c->t[i], &sync, NULL, NULL);
		if (ret)
			return check_fail(c, CHECK_ERRNO, i, 0, NULL, NULL, 0, 0,
					  "sync after adopting crash state "
					  "failed: %s",
					  check_errstr(ret, eb, sizeof(eb)));
	}
	c->dirty = 0;
	ret = c->t[c->ref]->ops->list(c->t[c->ref], &c->exists);
	if (ret)
		return check_fail(c, CHECK_ERRNO, c->ref, 0, NULL, NULL, 0, 0,
				  "listing the files of %s failed: %s",
				  c->t[c->ref]->name,
				  check_errstr(ret, eb, sizeof(eb)));
	return 0;
}

static int push_log(struct checker *c, const struct op *op)
{
	if (c->log.n == c->rescap) {
		size_t cap = c->rescap ? c->rescap * 2 : 1024;
		int64_t *res = mem_grow(c->res, c->rescap * sizeof(*res),
					cap * sizeof(*res));

		if (!res)
			return -ENOMEM;
		c->res = res;
		c->rescap = cap;
	}
	if (op_seq_push(&c->log, op))
		return -ENOMEM;
	c->res[c->log.n - 1] = CHECK_RES_SKIPPED;
	return 0;
}

/* The verify and audit of every verify_every / audit_every ops. */
static int periodic(struct checker *c, uint64_t opno)
{
	int ret = 0;

	if (c->cfg.verify_each_op ||
	    (c->cfg.verify_every != ~0u && opno % c->cfg.verify_every == 0))
		ret = verify_all(c);
	if (!ret && c->cfg.audit_every != ~0u && opno % c->cfg.audit_every == 0)
		ret = audit_all(c);
	return ret;
}

/* An op every target refused alike counts as skipped, any other as checked. */
static void count_result(struct checker *c, const struct op *op,
			 int64_t result)
{
	if (result == -EOPNOTSUPP) {
		c->st.skipped[op->kind]++;
		c->st.skipped_total++;
	} else {
		c->st.checked++;
		c->st.twins_apart_ops += c->twins_apart != 0;
	}
}

/* The sizes of the op's file (and of both files an exchange swaps). */
static int compare_sizes(struct checker *c, const struct op *op)
{
	int ret = compare_size(c, op->file, NULL);

	if (!ret && op->kind == OP_EXCHANGE_RANGE)
		ret = compare_size(c, op->file2, NULL);
	return ret;
}

/*
 * What the op does to the files it names: touched, dirty (changed since
 * their last fsync), existing.
 */
static void note_files(struct checker *c, const struct op *op,
		       const struct op_kind_info *ki, uint32_t fbit,
		       uint32_t f2bit)
{
	if (op->kind != OP_CLOSE)
		c->touched |= fbit | f2bit;
	if (ki->does & (OP_DOES_DATA | OP_DOES_SIZE | OP_DOES_NS))
		c->dirty |= fbit | (op->kind == OP_EXCHANGE_RANGE ? f2bit : 0);
	/* Creating a file it names is a namespace change. */
	if (op_creates(op)) {
		c->dirty |= (fbit | f2bit) & ~c->exists;
		c->exists |= fbit | f2bit;
	}
	if (op->kind == OP_UNLINK)
		c->exists &= ~fbit;
}

/*
 * After the op: the audit at a sync, every file read back and the audit
 * after a remount, crash or cut, else the periodic checks; then the
 * engines' twin state when the log asks for it.
 */
static int checkpoint(struct checker *c, const struct op *op,
		      int64_t result, int cut, uint64_t opno)
{
	int ret;

	switch (cut ? OP_CRASH : op->kind) {
	case OP_FSYNC:
	case OP_FDATASYNC:
	case OP_SYNC:
		if (c->audit_at_sync) {
			ret = audit_all(c);
			break;
		}
		ret = periodic(c, opno);
		break;
	case OP_REMOUNT:
	case OP_CRASH:
		if (result >= 0)
			c->dirty = 0;
		ret = verify_all(c);
		if (!ret)
			ret = audit_all(c);
		break;
	default:
		ret = periodic(c, opno);
		break;
	}
	if (!ret && c->cfg.twins)
		ret = check_twins(c);
	return ret;
}

static int one_op(struct checker *c, const struct op *in)
{
	struct op op = *in;
	const struct op_kind_info *ki;
	uint32_t fbit, f2bit;
	uint64_t opno;
	int64_t result = 0;
	uint32_t before = c->dirty;
	int ret, cut = 0;

	op_normalize(&op);
	ki = op_kind_info(op.kind);
	c->matched = 0;
	if (op.kind == OP_NONE)
		return 0;
	if (push_log(c, &op))
		return check_fail(c, CHECK_NOMEM, c->ref, 0, NULL, NULL, 0, 0,
				  "the checker's op log could not grow");
	/* The op's number is its place in the log: what a replay of the log
	 * will use too (the fill data depends on it). */
	opno = c->log.n;
	c->st.ops++;
	if (c->unsupported & (1ull << op.kind)) {
		c->st.skipped[op.kind]++;
		c->st.skipped_total++;
		return 0;
	}
	fbit = (ki->uses & OP_USE_FILE) ? 1u << op.file : 0;
	f2bit = (ki->uses & OP_USE_FILE2) ? 1u << op.file2 : 0;
	note_files(c, &op, ki, fbit, f2bit);

	switch (op.kind) {
	case OP_PWRITE:
	case OP_PREAD:
		ret = rw_op(c, &op, opno, &result);
		break;
	case OP_CRASH:
		ret = crash_op(c, &op, &result);
		break;
	case OP_CUT:
		ret = check_cut_op(c, &op, &result, &cut);
		break;
	default:
		ret = simple_op(c, &op, &result);
		break;
	}
	c->res[c->log.n - 1] = result;
	if (ret || c->stalled)
		return ret;
	count_result(c, &op, result);
	if (ki->does & (OP_DOES_SIZE | OP_DOES_NS)) {
		ret = compare_sizes(c, &op);
		if (ret)
			return ret;
	}
	/*
	 * Checkpoints.  A sync changes nothing a reader sees, so it gets the
	 * audit only; remount and crash rebuild the engine's state from the
	 * device, so every file is read back too.
	 */
	if (op.kind == OP_FSYNC || op.kind == OP_FDATASYNC) {
		if (result == 0)
			c->dirty &= ~fbit;
	} else if (op.kind == OP_SYNC && result == 0) {
		c->dirty = 0;
	}
	if (!cut && op.kind != OP_CUT) {
		int64_t adopted;

		ret = check_cut_after(c, &op, before, &adopted, &cut);
		if (ret || c->stalled)
			return ret;
	}
	return checkpoint(c, &op, result, cut, opno);
}

int check_op(struct checker *c, const struct op *in)
{
	int ret;

	if (c->status)
		return c->status;
	if (c->stalled)
		return 0;
	errno = 0; /* call_ends */
	ret = one_op(c, in);
	call_ends(c);
	return ret;
}

int check_finish(struct checker *c)
{
	return check_verify(c);
}

int check_run(struct checker *c, const struct op_seq *seq)
{
	for (size_t i = 0; i < seq->n; i++) {
		int ret = check_op(c, &seq->ops[i]);

		if (ret)
			return ret;
	}
	return check_finish(c);
}

void check_skip_summary(const struct checker *c, char *buf, size_t len)
{
	check_skip_summary_of(&c->st, c->t, c->n, buf, len);
}

void check_skip_summary_of(const struct check_stats *st,
			   struct target *const *t, int n, char *buf,
			   size_t len)
{
	size_t used;

	buf[0] = 0;
	if (!st->skipped_total)
		return;
	used = (size_t)snprintf(buf, len, "skipped %llu of %llu ops:",
				(unsigned long long)st->skipped_total,
				(unsigned long long)st->ops);
	for (unsigned k = 1; k < OP_KIND_COUNT && used < len; k++) {
		const char *who = "every target refused it";

		if (!st->skipped[k])
			continue;
		for (int i = 0; i < n; i++)
			if (t[i]->unsupported & (1ull << k)) {
				who = t[i]->name;
				break;
			}
		used += (size_t)snprintf(buf + used, len - used, " %s x%llu (%s)",
					 op_kind_name(k),
					 (unsigned long long)st->skipped[k], who);
	}
}

/* A field added to check_stats is added here too: */
_Static_assert(sizeof(struct check_stats) ==
	       (13 + OP_KIND_COUNT) * sizeof(uint64_t),
	       "check_stats_add must add every field of check_stats");

void check_stats_add(struct check_stats *sum, const struct check_stats *st)
{
	sum->ops += st->ops;
	sum->checked += st->checked;
	for (unsigned k = 0; k < OP_KIND_COUNT; k++)
		sum->skipped[k] += st->skipped[k];
	sum->skipped_total += st->skipped_total;
	sum->verifies += st->verifies;
	sum->audits += st->audits;
	sum->crashes += st->crashes;
	sum->bytes_compared += st->bytes_compared;
	sum->enospc += st->enospc;
	sum->stalls += st->stalls;
	sum->adopt_kept += st->adopt_kept;
	sum->adopt_mended += st->adopt_mended;
	sum->twins_apart += st->twins_apart;
	sum->twins_apart_ops += st->twins_apart_ops;
}
