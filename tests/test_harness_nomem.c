/*
 * test_harness_nomem.c - running out of memory, judged (check.h): under
 * a memory limit, a target that answers -ENOMEM, or reads or writes
 * short, while an allocation really failed stops the run as no finding
 * (CHECK_NOMEM), at an op, in the verify and in the audit, and so does
 * any failure later in the round; a new round starts clean.  One that
 * invents -ENOMEM (no allocation failed) is a result mismatch, and
 * without a limit every failed allocation is a finding (check_cfg's
 * memory_limited stands for the process's limit).
 *
 * The target here is the model with one change, driven through its
 * vtable: fsync answers -ENOMEM, after a real failed allocation (an
 * mmap larger than any address space: the kernel's own ENOMEM, which
 * no sanitizer turns into a report) or out of nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness/check.h"
#include "harness/target.h"
#include "harness/text.h"
#include "tests/test.h"

enum nomem_mode {
	REAL_AT_FSYNC,      /* fsync: an allocation fails, -ENOMEM       */
	INVENTED_AT_FSYNC,  /* fsync: -ENOMEM, nothing failed            */
	SURVIVED_THEN_INVENTED, /* pwrite: an allocation fails and the
				   write goes on; fsync: -ENOMEM invented */
	REAL_IN_READ,       /* reads (the final verify's): as the first */
	REAL_SHORT_READ,    /* reads: an allocation fails, half read     */
	REAL_IN_AUDIT,      /* the audit: as the first                  */
	REAL_SHORT_WRITE,   /* pwrite: an allocation fails, half written */
	INVENTED_SHORT_WRITE, /* pwrite: half written, nothing failed    */
};

struct nomem {
	struct target t;
	struct target *in;
	enum nomem_mode mode;
};

static struct nomem *to_nomem(struct target *t)
{
	return (struct nomem *)t;
}

/* An allocation that fails as an exhausted process's does: errno ENOMEM. */
static void failed_allocation(void)
{
	void *p = mmap(NULL, (size_t)1 << 62, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		munmap(p, (size_t)1 << 62);
}

static int64_t nomem_apply(struct target *t, const struct op *op,
			   const void *wbuf, void *rbuf)
{
	struct nomem *n = to_nomem(t);

	if (!t->blocksize)
		t->blocksize = 4096;
	n->in->blocksize = t->blocksize;
	if (op->kind == OP_FSYNC && n->mode == REAL_AT_FSYNC) {
		failed_allocation();
		return -ENOMEM;
	}
	if (op->kind == OP_FSYNC && (n->mode == INVENTED_AT_FSYNC ||
				     n->mode == SURVIVED_THEN_INVENTED))
		return -ENOMEM;
	if (op->kind == OP_PWRITE && n->mode == SURVIVED_THEN_INVENTED)
		failed_allocation();
	if (op->kind == OP_PWRITE && op->len > 1 &&
	    (n->mode == REAL_SHORT_WRITE || n->mode == INVENTED_SHORT_WRITE)) {
		struct op half = *op;

		if (n->mode == REAL_SHORT_WRITE)
			failed_allocation();
		half.len /= 2;
		return n->in->ops->apply(n->in, &half, wbuf, rbuf);
	}
	return n->in->ops->apply(n->in, op, wbuf, rbuf);
}

static int64_t nomem_size(struct target *t, unsigned file)
{
	struct target *in = to_nomem(t)->in;

	return in->ops->size(in, file);
}

static int64_t nomem_read(struct target *t, unsigned file, uint64_t off,
			  void *buf, size_t len)
{
	struct nomem *n = to_nomem(t);

	if (n->mode == REAL_IN_READ) {
		failed_allocation();
		return -ENOMEM;
	}
	if (n->mode == REAL_SHORT_READ && len > 1) {
		failed_allocation();
		len /= 2;
	}
	return n->in->ops->read(n->in, file, off, buf, len);
}

static int nomem_list(struct target *t, uint32_t *mask)
{
	struct target *in = to_nomem(t)->in;

	return in->ops->list(in, mask);
}

static int nomem_audit(struct target *t, char *msg, size_t msglen)
{
	if (to_nomem(t)->mode != REAL_IN_AUDIT)
		return 0;
	failed_allocation();
	snprintf(msg, msglen, "its list of blocks could not grow");
	return -ENOMEM;
}

/* a gigabyte free: a short write is no lack of room */
static int nomem_space(struct target *t, unsigned file,
		       struct target_space *sp)
{
	(void)file;
	sp->avail = sp->meta_avail = sp->capacity = (uint64_t)1 << 30;
	sp->unit = t->blocksize ? t->blocksize : 4096;
	sp->map_insert = 4;
	sp->meta_block = sp->unit;
	return 0;
}

static int nomem_reset(struct target *t)
{
	struct target *in = to_nomem(t)->in;

	return in->ops->reset(in);
}

static void nomem_destroy(struct target *t)
{
	struct nomem *n = to_nomem(t);

	if (n->in)
		n->in->ops->destroy(n->in);
	free(n);
}

static const struct target_ops nomem_ops = {
	.apply = nomem_apply,
	.size = nomem_size,
	.read = nomem_read,
	.list = nomem_list,
	.audit = nomem_audit,
	.space = nomem_space,
	.reset = nomem_reset,
	.destroy = nomem_destroy,
};

/*
 * text through the model and a nomem target in mode, under a memory limit
 * or not (check_cfg.memory_limited: 1, -1); the status, with the report
 * in *report (the caller frees it).  With mode2 >= 0 the same checker
 * then runs text again after a check_reset, the target in mode2: the
 * second status.
 */
static int run_nomem2(enum nomem_mode mode, int limited, const char *text,
		      int mode2, char **report)
{
	struct check_cfg cfg = { .memory_limited = limited };
	struct target *t[2] = { NULL, NULL };
	struct nomem *n = calloc(1, sizeof(*n)), *keep = n;
	struct checker *c = NULL;
	struct op_seq seq;
	size_t len = 0;
	char err[200];
	int r = -1;

	*report = NULL;
	op_seq_init(&seq);
	cfg.out = open_memstream(report, &len);
	if (!n || !cfg.out || model_target_new(0, &t[0]) ||
	    model_target_new(0, &n->in))
		goto out;
	n->t.ops = &nomem_ops;
	n->mode = mode;
	n->t.caps = mode == REAL_IN_AUDIT ? TARGET_AUDITS : 0;
	snprintf(n->t.name, sizeof(n->t.name), "nomem");
	target_set_names(&n->t, NULL);
	t[1] = &n->t;
	n = NULL;
	if (op_text_parse(text, strlen(text), &seq, err, sizeof(err)) ||
	    check_new(t, 2, &cfg, &seq, &c))
		goto out;
	r = check_run(c, &seq);
	if (mode2 >= 0) {
		keep->mode = (enum nomem_mode)mode2;
		r = check_reset(c) ? -1 : check_run(c, &seq);
	}
out:
	check_free(c);
	for (int i = 0; i < 2; i++)
		if (t[i])
			t[i]->ops->destroy(t[i]);
	if (n)
		nomem_destroy(&n->t);
	if (cfg.out)
		fclose(cfg.out);
	op_seq_free(&seq);
	return r;
}

static int run_nomem(enum nomem_mode mode, int limited, const char *text,
		     char **report)
{
	return run_nomem2(mode, limited, text, -1, report);
}

static const char write_sync[] = "pwrite 0 4k\nfsync\npwrite 4k 4k\n";

TEST(an_enomem_from_a_failed_allocation_under_a_limit_is_no_finding)
{
	char *report;

	CHECK_EQ(run_nomem(REAL_AT_FSYNC, 1, write_sync, &report), CHECK_NOMEM);
	CHECK_MSG(strstr(report, "fsoracle: out of memory (not a finding) "
			 "(exit 16)\n"), "%s", report);
	CHECK_MSG(strstr(report, "returned 0 on model but -ENOMEM on nomem"),
		  "%s", report);
	CHECK_MSG(strstr(report, "an allocation failed there, under this "
			 "process's memory limit"), "%s", report);
	free(report);
	/* no limit: an allocation that fails (an impossible size) is a bug */
	CHECK_EQ(run_nomem(REAL_AT_FSYNC, -1, write_sync, &report),
		 CHECK_ERRNO);
	free(report);
}

TEST(an_invented_enomem_is_a_result_mismatch)
{
	char *report;

	CHECK_EQ(run_nomem(INVENTED_AT_FSYNC, 1, write_sync, &report),
		 CHECK_ERRNO);
	CHECK_MSG(strstr(report, "returned 0 on model but -ENOMEM on nomem"),
		  "%s", report);
	free(report);
	CHECK_EQ(run_nomem(INVENTED_SHORT_WRITE, 1, write_sync, &report),
		 CHECK_ERRNO);
	CHECK_MSG(strstr(report, "result mismatch (unexpected errno) (exit 13)"),
		  "%s", report);
	free(report);
}

/* What follows a failed allocation in the round may be its consequence;
 * a new round (check_reset) starts clean. */
TEST(a_failed_allocation_covers_the_rest_of_its_round_only)
{
	char *report;

	CHECK_EQ(run_nomem(SURVIVED_THEN_INVENTED, 1, write_sync, &report),
		 CHECK_NOMEM);
	CHECK_MSG(strstr(report, "an allocation failed at op #1, under this "
			 "process's memory limit"), "%s", report);
	free(report);
	CHECK_EQ(run_nomem(SURVIVED_THEN_INVENTED, -1, write_sync, &report),
		 CHECK_ERRNO);
	free(report);
	/* the first round stops with 16; the second invents its ENOMEM */
	CHECK_EQ(run_nomem2(SURVIVED_THEN_INVENTED, 1, write_sync,
			    INVENTED_AT_FSYNC, &report), CHECK_ERRNO);
	free(report);
}

TEST(an_enomem_in_the_verify_or_the_audit_is_no_finding)
{
	char *report;

	CHECK_EQ(run_nomem(REAL_IN_READ, 1, write_sync, &report), CHECK_NOMEM);
	CHECK_MSG(strstr(report, "returned 8192 on model but -ENOMEM on "
			 "nomem"), "%s", report);
	free(report);
	CHECK_EQ(run_nomem(REAL_SHORT_READ, 1, write_sync, &report),
		 CHECK_NOMEM);
	CHECK_MSG(strstr(report, "returned 8192 on model but 4096 on nomem"),
		  "%s", report);
	free(report);
	CHECK_EQ(run_nomem(REAL_IN_AUDIT, 1, write_sync, &report), CHECK_NOMEM);
	CHECK_MSG(strstr(report, "audit of nomem failed: -ENOMEM: its list "
			 "of blocks could not grow"), "%s", report);
	free(report);
}

TEST(a_write_cut_short_by_a_failed_allocation_is_no_finding)
{
	char *report;

	CHECK_EQ(run_nomem(REAL_SHORT_WRITE, 1, write_sync, &report),
		 CHECK_NOMEM);
	CHECK_MSG(strstr(report, "returned 2048 on nomem with room left"),
		  "%s", report);
	free(report);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
