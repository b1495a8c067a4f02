/*
 * test_harness_host.c - the host-directory target agrees with the model on
 * this machine's own filesystem: a seeded run of the POSIX-visible ops
 * (pwrite, pread, truncate, the fallocate modes the kernel has here,
 * copy_file_range, fsync, open/close/unlink), and the ops it cannot do are
 * reported as such.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "harness/gen.h"
#include "harness/target.h"
#include "tests/test.h"

TEST(host_agrees_with_model_on_a_seeded_run)
{
	struct target *t[2];
	struct checker *c;
	struct check_cfg cfg = { .out = stderr };
	struct gen_cfg gc = { .seed = 2024 };
	struct gen g;
	char err[256];
	int n, r = 0;

	CHECK_OK(target_list_open("model,host", NULL, t, &n, err, sizeof(err)));
	CHECK_OK(check_new(t, n, &cfg, NULL, &c));
	gc.exclude = check_unsupported(c);
	gc.blocksize = t[1]->blocksize;
	/* Real fsyncs cost milliseconds: keep a few, not fsx's share. */
	CHECK_OK(gen_parse_weights(&gc, "fsync=1,fdatasync=1,sync=1", err,
				   sizeof(err)));
	CHECK_OK(gen_init(&g, &gc));
	for (int i = 0; i < 20000 && !r; i++) {
		struct op op;

		gen_next(&g, &op);
		r = check_op(c, &op);
	}
	if (!r)
		r = check_finish(c);
	CHECK_EQ(r, CHECK_OK);
	CHECK(check_stats(c)->checked > 19000);
	check_free(c);
	target_list_close(t, n);
}

TEST(host_reports_what_it_cannot_do)
{
	struct target *t;
	char err[256], kinds[256];

	CHECK_OK(host_target_new(NULL, &t, err, sizeof(err)));
	CHECK(t->unsupported & (1ull << OP_CRASH));
	CHECK(strstr(t->note, "no power cut"));
	target_kinds_str(t->unsupported, kinds, sizeof(kinds));
	CHECK(strstr(kinds, "crash"));
	{
		struct op crash = { .kind = OP_CRASH };

		CHECK_EQ(t->ops->apply(t, &crash, NULL, NULL), -EOPNOTSUPP);
	}
	t->ops->destroy(t);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
