/*
 * target_planted.c - the model with one planted bug.  A checker that has
 * never failed proves nothing; these wrappers differ from the model in
 * exactly one way each, and the tests expect the checker to catch every
 * one with the right exit code and the minimizer to shrink it.
 *
 *   trunc_tail      a truncate down to an unaligned size leaves the rest
 *                   of the last block as it was, and a later truncate up
 *                   or write past EOF exposes those stale bytes (the
 *                   classic post-EOF zeroing bug)                 -> data
 *   punch_short     fpunch zeroes one byte less than asked          -> data
 *   zero_keep_size  fzero -k grows the file anyway                  -> size
 *   collapse_eio    fcollapse fails with EIO                        -> errno
 *   audit_unlink    unlinking a non-empty file "leaks its blocks":
 *                   every audit afterwards fails                    -> audit
 *   enospc_room     a write or an exchange of 64 KiB or more fails
 *                   with ENOSPC while the target says 1 GiB is
 *                   available, for data and for its extent trees (the
 *                   checker's space rule must call that a bug)      -> errno
 *   enfile_room     creating a third file (f2 and on) fails with ENFILE
 *                   while the target says 1000 inodes are free (the
 *                   checker's inode rule must call that a bug)      -> errno
 *
 * The wrapper drives the inner model only through its vtable, so the
 * model itself stays untouched.
 */
#include "harness/target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum bug {
	TRUNC_TAIL, PUNCH_SHORT, ZERO_KEEP_SIZE, COLLAPSE_EIO, AUDIT_UNLINK,
	ENOSPC_ROOM, ENFILE_ROOM,
};

static const char *const bug_names[] = {
	"trunc_tail", "punch_short", "zero_keep_size", "collapse_eio",
	"audit_unlink", "enospc_room", "enfile_room",
};

#define ROOM_CLAIMED ((uint64_t)1 << 30) /* enospc_room's avail */
#define ROOM_WRITE   ((uint64_t)64 << 10) /* ... and the writes it fails */
#define INODES_CLAIMED 1000u              /* enfile_room's free inodes   */

#define STALE_MAX 65536

struct stale {
	int valid;
	uint64_t off;             /* the size the truncate left          */
	uint64_t len;             /* bytes kept past it                  */
	uint8_t *bytes;
};

struct planted {
	struct target t;
	struct target *in;        /* the model                           */
	enum bug bug;
	struct stale st[OP_MAX_FILES];
	int leaked;               /* audit_unlink: a non-empty unlink seen */
};

static struct planted *to_planted(struct target *t)
{
	return (struct planted *)t;
}

static int64_t inner_size(struct planted *p, unsigned f)
{
	int64_t s = p->in->ops->size(p->in, f);

	return s < 0 ? 0 : s;
}

/* trunc_tail: put back stale bytes in [s0, end) when the file grew. */
static void expose_stale(struct planted *p, unsigned f, uint64_t s0,
			 uint64_t end)
{
	struct stale *st = &p->st[f];
	struct op w = { .kind = OP_PWRITE, .file = (uint8_t)f };
	uint64_t stop = st->off + st->len;

	if (!st->valid || st->off != s0)
		return;
	if (end < stop)
		stop = end;
	if (stop > s0) {
		w.off = s0;
		w.len = stop - s0;
		p->in->ops->apply(p->in, &w, st->bytes, NULL);
	}
}

static int64_t planted_apply(struct target *t, const struct op *op,
			     const void *wbuf, void *rbuf)
{
	struct planted *p = to_planted(t);
	unsigned f = op->file % OP_MAX_FILES;
	const struct op_kind_info *ki = op_kind_info(op->kind);
	uint64_t s0 = inner_size(p, f);
	int64_t r;

	if (!t->blocksize)
		t->blocksize = 4096;
	p->in->blocksize = t->blocksize;
	switch (p->bug) {
	case TRUNC_TAIL:
		if (op->kind == OP_TRUNCATE && op->arg < s0 &&
		    op->arg % t->blocksize) {
			uint64_t end = (op->arg / t->blocksize + 1) * t->blocksize;
			struct stale *st = &p->st[f];

			if (end > s0)
				end = s0;
			st->off = op->arg;
			st->len = end - op->arg;
			r = p->in->ops->read(p->in, f, st->off, st->bytes, st->len);
			st->valid = r == (int64_t)st->len;
			return p->in->ops->apply(p->in, op, wbuf, rbuf);
		}
		r = p->in->ops->apply(p->in, op, wbuf, rbuf);
		if (r >= 0 && (ki->does & OP_DOES_SIZE)) {
			uint64_t s1 = inner_size(p, f);

			/* A truncate up or a write past EOF reads the gap. */
			if (op->kind == OP_TRUNCATE && s1 > s0)
				expose_stale(p, f, s0, s1);
			else if (op->kind == OP_PWRITE && op->off > s0)
				expose_stale(p, f, s0, op->off);
			if (s1 != s0 || op->kind == OP_UNLINK)
				p->st[f].valid = 0;
		}
		return r;
	case PUNCH_SHORT:
		if (op->kind == OP_FPUNCH && op->len > 1) {
			struct op o = *op;

			o.len--;
			return p->in->ops->apply(p->in, &o, wbuf, rbuf);
		}
		break;
	case ZERO_KEEP_SIZE:
		if (op->kind == OP_FZERO && (op->flags & OP_FL_KEEP_SIZE)) {
			struct op o = *op;

			o.flags &= (uint8_t)~OP_FL_KEEP_SIZE;
			return p->in->ops->apply(p->in, &o, wbuf, rbuf);
		}
		break;
	case COLLAPSE_EIO:
		if (op->kind == OP_FCOLLAPSE)
			return -EIO;
		break;
	case AUDIT_UNLINK:
		if (op->kind == OP_UNLINK && s0 > 0)
			p->leaked = 1;
		break;
	case ENOSPC_ROOM:
		if ((op->kind == OP_PWRITE || op->kind == OP_EXCHANGE_RANGE) &&
		    op->len >= ROOM_WRITE)
			return -ENOSPC;
		break;
	case ENFILE_ROOM:
		/* an op that would create a third file */
		if (f >= 2 && (ki->uses & OP_USE_FILE) && op_creates(op) &&
		    p->in->ops->size(p->in, f) < 0)
			return -ENFILE;
		break;
	}
	return p->in->ops->apply(p->in, op, wbuf, rbuf);
}

static int64_t planted_size(struct target *t, unsigned file)
{
	struct planted *p = to_planted(t);

	return p->in->ops->size(p->in, file);
}

static int64_t planted_read(struct target *t, unsigned file, uint64_t off,
			    void *buf, size_t len)
{
	struct planted *p = to_planted(t);

	return p->in->ops->read(p->in, file, off, buf, len);
}

static int planted_list(struct target *t, uint32_t *mask)
{
	struct planted *p = to_planted(t);

	return p->in->ops->list(p->in, mask);
}

static int planted_audit(struct target *t, char *msg, size_t msglen)
{
	struct planted *p = to_planted(t);

	if (p->bug != AUDIT_UNLINK || !p->leaked)
		return 0;
	snprintf(msg, msglen, "planted: blocks of an unlinked file were never "
		 "freed");
	return -EUCLEAN;
}

/* Only enospc_room and enfile_room have limits to claim; the rest are the
 * model. */
static int planted_space(struct target *t, unsigned file,
			 struct target_space *sp)
{
	enum bug bug = to_planted(t)->bug;

	(void)file;
	if (bug != ENOSPC_ROOM && bug != ENFILE_ROOM)
		return -EOPNOTSUPP;
	if (bug == ENFILE_ROOM)
		sp->free_inodes = INODES_CLAIMED;
	sp->avail = sp->meta_avail = sp->capacity = ROOM_CLAIMED;
	sp->unit = t->blocksize ? t->blocksize : 4096;
	sp->map_insert = 4;     /* as a tree of three levels would */
	sp->meta_block = sp->unit;
	return 0;
}

static int planted_reset(struct target *t)
{
	struct planted *p = to_planted(t);

	for (unsigned i = 0; i < OP_MAX_FILES; i++)
		p->st[i].valid = 0;
	p->leaked = 0;
	return p->in->ops->reset(p->in);
}

static int planted_release(struct target *t)
{
	struct planted *p = to_planted(t);

	return p->in->ops->release ? p->in->ops->release(p->in) : 0;
}

static void planted_destroy(struct target *t)
{
	struct planted *p = to_planted(t);

	if (p->in)
		p->in->ops->destroy(p->in);
	for (unsigned i = 0; i < OP_MAX_FILES; i++)
		free(p->st[i].bytes);
	free(p);
}

static const struct target_ops planted_ops = {
	.apply = planted_apply,
	.size = planted_size,
	.read = planted_read,
	.list = planted_list,
	.space = planted_space,
	.audit = planted_audit,
	.reset = planted_reset,
	.release = planted_release,
	.destroy = planted_destroy,
};

int planted_target_new(const char *bug, struct target **out, char *err,
		       size_t errlen)
{
	struct planted *p;
	int b = -1, ret;

	for (int i = 0; i < (int)(sizeof(bug_names) / sizeof(bug_names[0])); i++)
		if (strcmp(bug, bug_names[i]) == 0)
			b = i;
	if (b < 0) {
		snprintf(err, errlen, "unknown planted bug '%.40s' (trunc_tail, "
			 "punch_short, zero_keep_size, collapse_eio, "
			 "audit_unlink, enospc_room, enfile_room)", bug);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		goto out_nomem;
	for (unsigned i = 0; i < OP_MAX_FILES; i++) {
		p->st[i].bytes = malloc(STALE_MAX);
		if (!p->st[i].bytes)
			goto out_nomem;
	}
	ret = model_target_new(0, &p->in);
	if (ret)
		goto out_nomem;
	p->t.ops = &planted_ops;
	p->bug = (enum bug)b;
	p->t.blocksize = 0;   /* follow the other targets, as a model does */
	p->t.caps = b == AUDIT_UNLINK ? TARGET_AUDITS : 0;
	snprintf(p->t.name, sizeof(p->t.name), "planted:%s", bug_names[b]);
	target_set_names(&p->t, NULL);
	*out = &p->t;
	return 0;
out_nomem:
	snprintf(err, errlen, "out of memory");
	if (p)
		planted_destroy(&p->t);
	return -ENOMEM;
}
