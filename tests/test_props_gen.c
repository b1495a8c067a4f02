/*
 * test_props_gen.c - the generators keep the pool contract (zero entries
 * give the minimal value; values stay in range whatever the bytes; the
 * search favours boundaries), every op sequence the binary form carries
 * can be generated, and state machines shrink whole command ranges and
 * never run a command whose precondition fails.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/binary.h"
#include "harness/op.h"
#include "harness/rng.h"
#include "props/props.h"
#include "tests/test.h"

/* What the last property call saw. */
static uint64_t seen_u;
static int64_t seen_s[3];
static size_t seen_len, seen_steps;
static struct op_seq seen_seq;

static const struct props_int_env r10_1000 = { 10, 1000 };
static const struct props_sint_env s_mixed = { -5, 5 };
static const struct props_sint_env s_pos = { 3, 9 };
static const struct props_sint_env s_neg = { -9, -3 };
static const struct props_buf_env b3 = { .min = 3, .max = 10, .avg = 5 };
static const struct props_type t_int = PROPS_INT_TYPE(&r10_1000);
static const struct props_type t_mixed = PROPS_SINT_TYPE(&s_mixed);
static const struct props_type t_pos = PROPS_SINT_TYPE(&s_pos);
static const struct props_type t_neg = PROPS_SINT_TYPE(&s_neg);
static const struct props_type t_buf = PROPS_BUF_TYPE(&b3);

static int record_all(struct props_trial *t, void *const *a, unsigned n)
{
	(void)t;
	(void)n;
	seen_u = *(uint64_t *)a[0];
	seen_s[0] = *(int64_t *)a[1];
	seen_s[1] = *(int64_t *)a[2];
	seen_s[2] = *(int64_t *)a[3];
	seen_len = ((struct props_buf *)a[4])->len;
	return seen_u < 10 || seen_u > 1000 || seen_s[0] < -5 || seen_s[0] > 5 ||
	       seen_s[1] < 3 || seen_s[1] > 9 || seen_s[2] < -9 ||
	       seen_s[2] > -3 || seen_len < 3 || seen_len > 10 ?
	       PROPS_FAIL : PROPS_PASS;
}

static const struct props_cfg all_cfg = {
	.name = "ranges", .propv = record_all,
	.types = { &t_int, &t_mixed, &t_pos, &t_neg, &t_buf }, .quiet = 1,
};

TEST(props_zero_bits_give_the_minimal_values)
{
	const uint8_t zeros[64] = { 0 };

	CHECK_EQ(props_run_bytes(&all_cfg, NULL, 0, 0, NULL), PROPS_PASS);
	CHECK_EQ(seen_u, 10);
	CHECK_EQ(seen_s[0], 0);
	CHECK_EQ(seen_s[1], 3);
	CHECK_EQ(seen_s[2], -3);    /* the end nearest to zero */
	CHECK_EQ(seen_len, 3);
	CHECK_EQ(props_run_bytes(&all_cfg, zeros, sizeof(zeros), 0, NULL),
		 PROPS_PASS);
	CHECK_EQ(seen_u, 10);
	CHECK_EQ(seen_len, 3);
}

TEST(props_values_stay_in_range_for_any_bytes)
{
	struct rng r;
	uint8_t buf[96];

	rng_seed(&r, 99);
	for (int i = 0; i < 20000; i++) {
		size_t n = rng_below(&r, sizeof(buf) + 1);

		for (size_t j = 0; j < n; j++)
			buf[j] = (uint8_t)rng_next(&r);
		/* record_all fails on anything out of range */
		CHECK_EQ(props_run_bytes(&all_cfg, buf, n, 0, NULL), PROPS_PASS);
	}
}

static unsigned hits_lo, hits_lo1, hits_hi, hits_hi1, hits_total;

static int count_bounds(struct props_trial *t, void *x)
{
	uint64_t v = *(uint64_t *)x;

	(void)t;
	hits_total++;
	hits_lo += v == 10;
	hits_lo1 += v == 11;
	hits_hi += v == 1000;
	hits_hi1 += v == 999;
	return PROPS_PASS;
}

TEST(props_search_favours_the_boundaries)
{
	struct props_cfg cfg = { .name = "bounds", .prop1 = count_bounds,
				 .types = { &t_int }, .trials = 20000,
				 .seed = 3, .quiet = 1 };

	hits_lo = hits_lo1 = hits_hi = hits_hi1 = hits_total = 0;
	CHECK_EQ(props_run(&cfg, NULL), PROPS_PASS);
	/* uniform would give each about 1 in 991 trials; duplicates of a
	 * pool are run once, so count distinct pools, not trials */
	CHECK(hits_hi >= 1 && hits_hi1 >= 1 && hits_lo >= 1 && hits_lo1 >= 1);
	CHECK_MSG(hits_total < 20000, "every trial distinct: %u", hits_total);
}

/* ---- op sequences ---- */

static int record_seq(struct props_trial *t, void *seq)
{
	(void)t;
	op_seq_clear(&seen_seq);
	op_seq_copy(&seen_seq, seq);
	return PROPS_PASS;
}

static const struct props_ops_env ops_env = { .max_file = 1 << 20,
					      .nfiles = 2 };
static const struct props_type t_ops = PROPS_OPS_TYPE(&ops_env);

static unsigned bitlen(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

/* The pool opgen.c documents, as fuzzer bytes: one byte per request of
 * up to 8 bits, little-endian bytes for wider ones. */
struct bytes {
	uint8_t b[4096];
	size_t n;
};

static void put(struct bytes *o, uint64_t v, unsigned width)
{
	for (unsigned i = 0; i < (width + 7) / 8; i++)
		o->b[o->n++] = (uint8_t)(v >> (8 * i));
}

static void put_scaled(struct bytes *o, uint32_t scaled)
{
	uint64_t units = scaled >> 4;
	unsigned m = bitlen(units);

	put(o, m, 7);                   /* magnitude */
	put(o, units, m);               /* value */
	put(o, scaled & 15, 4);         /* tail index */
}

TEST(props_every_binary_op_sequence_is_generatable)
{
	struct op_geom g = { .max_file = 1 << 20, .nfiles = 2 };
	struct rng r;

	op_geom_normalize(&g);
	op_seq_init(&seen_seq);
	rng_seed(&r, 5);
	for (int round = 0; round < 500; round++) {
		uint8_t rec[8 * OP_BIN_RECORD];
		struct props_cfg cfg = { .name = "gen", .prop1 = record_seq,
					 .types = { &t_ops }, .quiet = 1 };
		struct op_seq want;
		struct bytes o = { .n = 0 };
		size_t nops = rng_below(&r, 9);

		for (size_t i = 0; i < sizeof(rec); i++)
			rec[i] = (uint8_t)rng_next(&r);
		for (size_t i = 0; i < nops; i++)   /* no early end marker */
			rec[i * OP_BIN_RECORD] |= 1;
		op_seq_init(&want);
		CHECK_OK(op_bin_decode(rec, nops * OP_BIN_RECORD, &g, &want));
		/* re-encode canonically so every field is in range */
		CHECK(op_bin_encode(&want, &g, 0, rec, sizeof(rec), NULL) ==
		      want.n * OP_BIN_RECORD);
		for (size_t i = 0; i < want.n; i++) {
			const uint8_t *p = rec + i * OP_BIN_RECORD;
			uint32_t v[3];

			memcpy(v, p + 4, sizeof(v));
			put(&o, 1, 1);                        /* one more */
			put(&o, p[0] - 1u, bitlen(OP_KIND_MAX - 1)); /* kind */
			put(&o, p[1] & 15, 1);                /* file */
			put(&o, p[1] >> 4, 1);                /* file2 */
			put(&o, p[2], 6);                     /* flags */
			put(&o, p[3], 8);                     /* pattern */
			for (int k = 0; k < 3; k++)
				put_scaled(&o, v[k]);
		}
		put(&o, 0, 1);                                /* the end */
		CHECK_EQ(props_run_bytes(&cfg, o.b, o.n, 0, NULL), PROPS_PASS);
		CHECK_EQ(seen_seq.n, want.n);
		for (size_t i = 0; i < want.n; i++)
			CHECK_MSG(op_equal(&seen_seq.ops[i], &want.ops[i]),
				  "round %d op %zu differs", round, i);
		op_seq_free(&want);
	}
	/* and no bytes at all: the empty sequence */
	{
		struct props_cfg cfg = { .name = "gen", .prop1 = record_seq,
					 .types = { &t_ops }, .quiet = 1 };

		CHECK_EQ(props_run_bytes(&cfg, NULL, 0, 0, NULL), PROPS_PASS);
		CHECK_EQ(seen_seq.n, 0);
	}
	op_seq_free(&seen_seq);
}

/* ---- state machines ---- */

/*
 * A counter with a planted bug: dec from 3 lands on 1.  Commands are
 * chosen among those enabled (dec needs a positive counter); add never
 * takes 7 (its precondition drops such a step).  A failing program from
 * which no step can be removed and no add lowered is: steps that bring
 * the counter to exactly 3 (inc, add N with N > 0), then dec, then read.
 * Which one a run ends at depends on where it started ("add 3, dec,
 * read" is the smallest pool; "inc, inc, inc, dec, read" also cannot be
 * shrunk one step at a time).
 */
struct counter { int64_t v; };
static unsigned pre_violations, sevens;

static void *c_new(void *env)
{
	(void)env;
	return calloc(1, sizeof(struct counter));
}

static void c_free(void *sut, void *env)
{
	(void)env;
	free(sut);
}

static int c_positive(const void *model, void *env)
{
	(void)env;
	return ((const struct counter *)model)->v > 0;
}

static void c_inc_next(void *model, const void *args, void *env)
{
	(void)args;
	(void)env;
	((struct counter *)model)->v++;
}

static void c_dec_next(void *model, const void *args, void *env)
{
	(void)args;
	(void)env;
	((struct counter *)model)->v--;
}

static void c_add_next(void *model, const void *args, void *env)
{
	(void)env;
	((struct counter *)model)->v += *(const int64_t *)args;
}

static int c_inc_run(struct props_trial *t, void *sut, const void *model,
		     const void *args, void *env)
{
	(void)t;
	(void)model;
	(void)args;
	(void)env;
	((struct counter *)sut)->v++;
	return PROPS_PASS;
}

static int c_dec_run(struct props_trial *t, void *sut, const void *model,
		     const void *args, void *env)
{
	struct counter *c = sut;

	(void)t;
	(void)args;
	(void)env;
	if (((const struct counter *)model)->v <= 0)
		pre_violations++;
	c->v = c->v == 3 ? 1 : c->v - 1;      /* the planted bug */
	return PROPS_PASS;
}

static void c_add_gen(struct props_trial *t, const void *model, void *args,
		      void *env)
{
	(void)model;
	(void)env;
	*(int64_t *)args = (int64_t)props_int(t, 0, 9);
}

static int c_add_pre(const void *model, const void *args, void *env)
{
	(void)model;
	(void)env;
	return *(const int64_t *)args != 7;   /* 7 is never allowed */
}

static int c_add_run(struct props_trial *t, void *sut, const void *model,
		     const void *args, void *env)
{
	(void)t;
	(void)model;
	(void)env;
	if (*(const int64_t *)args == 7)
		sevens++;
	((struct counter *)sut)->v += *(const int64_t *)args;
	return PROPS_PASS;
}

static int c_read_run(struct props_trial *t, void *sut, const void *model,
		      const void *args, void *env)
{
	int64_t got = ((struct counter *)sut)->v;
	int64_t want = ((const struct counter *)model)->v;

	(void)args;
	(void)env;
	if (got == want)
		return PROPS_PASS;
	props_note(t, "read %lld, the model says %lld", (long long)got,
		   (long long)want);
	return PROPS_FAIL;
}

static void c_add_print(FILE *f, const void *args, void *env)
{
	(void)env;
	fprintf(f, "add %lld", (long long)*(const int64_t *)args);
}

static const struct props_cmd counter_cmds[] = {
	{ .name = "inc", .next = c_inc_next, .run = c_inc_run },
	{ .name = "read", .run = c_read_run },
	{ .name = "dec", .enabled = c_positive, .next = c_dec_next,
	  .run = c_dec_run },
	{ .name = "add", .gen = c_add_gen, .pre = c_add_pre,
	  .next = c_add_next, .run = c_add_run, .print = c_add_print },
};

static const struct props_sm counter_sm = {
	.name = "counter", .model_size = sizeof(struct counter),
	.args_size = sizeof(int64_t), .sut_new = c_new, .sut_free = c_free,
	.cmds = counter_cmds, .ncmds = 4, .max_steps = 200, .avg_steps = 40,
};
static const struct props_type t_steps = PROPS_SM_TYPE(&counter_sm);

/* The printed steps: up to 3 raising the counter to exactly 3, dec, read. */
static int minimal_counter_program(const char *cex)
{
	const char *p = strstr(cex, " steps\n");
	char names[8][16];
	long args[8], sum = 0;
	int n = 0;

	if (!p)
		return 0;
	for (p += 7; n < 8 && sscanf(p, " %*d %15s", names[n]) == 1;) {
		args[n] = 0;
		sscanf(p, " %*d %*s %ld", &args[n]);
		n++;
		p = strchr(p, '\n');
		if (!p || !strncmp(++p, "  why", 5))
			break;
	}
	if (n < 3 || n > 5 || strcmp(names[n - 2], "dec") ||
	    strcmp(names[n - 1], "read"))
		return 0;
	for (int i = 0; i < n - 2; i++) {
		if (!strcmp(names[i], "inc"))
			sum++;
		else if (!strcmp(names[i], "add") && args[i] > 0)
			sum += args[i];
		else
			return 0;
	}
	return sum == 3;
}

TEST(props_state_machine_shrinks_to_a_minimal_program)
{
	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct props_cfg cfg = { .name = "counter",
					 .prop1 = props_sm_check,
					 .types = { &t_steps }, .seed = seed,
					 .trials = 1000, .quiet = 1 };
		struct props_report rep;

		pre_violations = sevens = 0;
		CHECK_EQ(props_run(&cfg, &rep), PROPS_FAIL);
		CHECK_MSG(minimal_counter_program(rep.cex), "seed %llu:\n%s",
			  (unsigned long long)seed, rep.cex);
		CHECK(strstr(rep.cex, "read 1, the model says 2"));
		/* shrinking rebuilt every candidate through the model */
		CHECK_EQ(pre_violations, 0);
		CHECK_EQ(sevens, 0);
		props_report_free(&rep);
	}
}

static int count_steps(struct props_trial *t, void *steps)
{
	(void)t;
	seen_steps = props_sm_steps(steps);
	return PROPS_PASS;
}

TEST(props_state_machine_zero_bits_give_no_steps)
{
	struct props_cfg cfg = { .name = "counter", .prop1 = count_steps,
				 .types = { &t_steps }, .quiet = 1 };

	seen_steps = 99;
	CHECK_EQ(props_run_bytes(&cfg, NULL, 0, 0, NULL), PROPS_PASS);
	CHECK_EQ(seen_steps, 0);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
