/*
 * test_harness_gen.c - the op generator's swarm rounds: every kind is
 * reachable at the defaults, rounds really leave kinds out and vary the
 * sizes and options, the seed reproduces every draw, a round is the
 * same however it is reached, and --no-swarm's fixed mix is what it was.
 */
#include <string.h>

#include "harness/gen.h"
#include "tests/test.h"

#define ROUNDS 64
#define OPS_PER_ROUND 2000

struct tally {
	uint64_t kind[OP_KIND_COUNT];
	unsigned rounds_without_pread, rounds_without_fsync;
	unsigned rounds_with_mount, rounds_with_mkfs, rounds_with_attrs;
	uint64_t smallest_file, largest_file;
	uint32_t attrs_seen;              /* in chattr ops (raw ones: any bits) */
	uint32_t round_attrs;             /* what rounds drew                  */
};

static void swarm_tally(const struct gen_cfg *cfg, struct tally *t)
{
	struct gen g;

	memset(t, 0, sizeof(*t));
	t->smallest_file = UINT64_MAX;
	if (gen_init(&g, cfg))
		return;
	for (unsigned r = 0; r < ROUNDS; r++) {
		uint64_t k[OP_KIND_COUNT] = { 0 };

		if (r)
			gen_new_round(&g);
		for (unsigned i = 0; i < OPS_PER_ROUND; i++) {
			struct op op;

			gen_next(&g, &op);
			k[op.kind]++;
			t->kind[op.kind]++;
			if (op.kind == OP_SET_FLAG)
				t->attrs_seen |= (uint32_t)op.arg;
		}
		/* raw ops (one in 32) may still name any kind; shaped ones
		 * of a kind left out never come */
		t->rounds_without_pread += !g.round.weight[OP_PREAD];
		t->rounds_without_fsync += !g.round.weight[OP_FSYNC];
		t->rounds_with_mount += g.round.mount[0] != 0;
		t->rounds_with_mkfs += g.round.mkfs[0] != 0;
		t->rounds_with_attrs += g.round.attrs != 0;
		t->round_attrs |= g.round.attrs;
		if (g.round.max_file < t->smallest_file)
			t->smallest_file = g.round.max_file;
		if (g.round.max_file > t->largest_file)
			t->largest_file = g.round.max_file;
		if (!g.round.weight[OP_PREAD])
			CHECK_MSG(k[OP_PREAD] < OPS_PER_ROUND / 16,
				  "round %u: %llu preads with pread left out", r,
				  (unsigned long long)k[OP_PREAD]);
	}
}

TEST(swarm_reaches_every_kind_and_varies_each_round)
{
	struct gen_cfg cfg = { .seed = 7, .swarm = 1, .realtime = 1,
			       .attrs = OP_ATTR_ALL, .swarm_compress = 1 };
	struct tally t;

	swarm_tally(&cfg, &t);
	for (unsigned k = 1; k < OP_KIND_COUNT; k++)
		CHECK_MSG(t.kind[k] > 0, "kind %s never generated",
			  op_kind_name(k));
	CHECK(t.rounds_without_pread > ROUNDS / 8);
	CHECK(t.rounds_without_fsync > ROUNDS / 8);
	CHECK(t.rounds_with_mount > ROUNDS / 8);
	CHECK(t.rounds_with_mkfs > ROUNDS / 8);
	CHECK(t.rounds_with_attrs > ROUNDS / 2);
	CHECK_EQ(t.attrs_seen & OP_ATTR_ALL, OP_ATTR_ALL);
	CHECK_EQ(t.round_attrs, OP_ATTR_ALL);
	CHECK(t.smallest_file < (64u << 10));
	CHECK(t.largest_file > (4u << 20));
	CHECK(t.largest_file <= (16u << 20));
}

TEST(swarm_keeps_given_bounds_and_exclusions)
{
	struct gen_cfg cfg = { .seed = 3, .swarm = 1, .max_file = 1 << 20,
			       .exclude = 1ull << OP_CRASH };
	struct tally t;

	swarm_tally(&cfg, &t);
	CHECK(t.largest_file <= (1u << 20));
	CHECK_EQ(t.kind[OP_CRASH], 0);
	/* no realtime device, no reflink: rounds draw only +j and +c */
	CHECK_EQ(t.round_attrs, OP_ATTR_JOURNAL_DATA | OP_ATTR_COMPRESS);
}

/* A round draws no option the user gave: theirs apply, the header says so. */
TEST(swarm_draws_no_option_the_user_gave)
{
	struct gen_cfg cfg = { .seed = 5, .swarm = 1, .swarm_compress = 1,
			       .mkfs = "maxrecs=4",
			       .mount = "pagecache=16,delalloc,data=journal" };
	struct gen_cfg open_cfg = cfg;
	unsigned with_mount = 0, with_mkfs = 0;
	struct gen g;

	CHECK_OK(gen_init(&g, &cfg));
	for (unsigned r = 0; r < ROUNDS; r++, gen_new_round(&g)) {
		CHECK_MSG(!strstr(g.round.mount, "delalloc") &&
			  !strstr(g.round.mount, "data="), "round %u: %s", r,
			  g.round.mount);
		CHECK_MSG(!g.round.mkfs[0], "round %u: %s", r, g.round.mkfs);
		with_mount += g.round.mount[0] != 0; /* compress=zstd is open */
	}
	CHECK(with_mount > 0);
	/* without them, the same seed draws those options */
	open_cfg.mkfs = open_cfg.mount = NULL;
	with_mount = 0;
	CHECK_OK(gen_init(&g, &open_cfg));
	for (unsigned r = 0; r < ROUNDS; r++, gen_new_round(&g)) {
		with_mount += strstr(g.round.mount, "delalloc") != NULL;
		with_mkfs += g.round.mkfs[0] != 0;
	}
	CHECK(with_mount > 0);
	CHECK(with_mkfs > 0);
}

static int same_stream(const struct gen_cfg *a, const struct gen_cfg *b,
		       unsigned rounds)
{
	struct gen x, y;

	if (gen_init(&x, a) || gen_init(&y, b))
		return 0;
	for (unsigned r = 0; r < rounds; r++) {
		if (r) {
			gen_new_round(&x);
			gen_new_round(&y);
		}
		if (memcmp(&x.round, &y.round, sizeof(x.round)))
			return 0;
		for (unsigned i = 0; i < 500; i++) {
			struct op p, q;

			gen_next(&x, &p);
			gen_next(&y, &q);
			if (memcmp(&p, &q, sizeof(p)))
				return 0;
		}
	}
	return 1;
}

TEST(swarm_seed_reproduces_every_draw)
{
	struct gen_cfg a = { .seed = 11, .swarm = 1, .realtime = 1 };
	struct gen_cfg b = a;

	CHECK(same_stream(&a, &b, 20));
	b.seed = 12;
	CHECK(!same_stream(&a, &b, 20));
}

/* Two draws alike (the option strings up to their ends). */
static int same_round(const struct gen_round *x, const struct gen_round *y)
{
	return x->number == y->number &&
	       !memcmp(x->weight, y->weight, sizeof(x->weight)) &&
	       x->max_file == y->max_file && x->max_op == y->max_op &&
	       x->attrs == y->attrs && x->rt_share == y->rt_share &&
	       !strcmp(x->mkfs, y->mkfs) && !strcmp(x->mount, y->mount);
}

/* The first ops of round n, after gen_new_round or gen_goto_round. */
static void round_ops(struct gen *g, struct op *ops, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		gen_next(g, &ops[i]);
}

/*
 * A round's draw and ops depend on the seed and its number alone: the
 * same whether the rounds before it ran (and however many of their ops
 * were drawn) or not, as `fsoracle run --jobs` needs; and rounds differ.
 */
TEST(a_round_is_the_same_reached_in_any_order)
{
	struct gen_cfg cfg = { .seed = 21, .swarm = 1, .realtime = 1 };
	struct op seq[300], jump[300], other[300];
	struct gen a, b;
	struct gen_round want;

	CHECK_OK(gen_init(&a, &cfg));
	for (unsigned r = 2; r <= 6; r++) {
		round_ops(&a, seq, 1 + r * 37); /* a different count each */
		gen_new_round(&a);
	}
	CHECK_EQ(a.round.number, 6u);
	want = a.round;
	round_ops(&a, seq, 300);

	CHECK_OK(gen_init(&b, &cfg));
	round_ops(&b, other, 300); /* round 1's ops: not round 6's */
	CHECK(memcmp(other, seq, sizeof(seq)) != 0);
	gen_goto_round(&b, 6);
	CHECK(same_round(&b.round, &want));
	round_ops(&b, jump, 300);
	CHECK(!memcmp(jump, seq, sizeof(seq)));

	/* round 1 is the seed's own stream, as before rounds had numbers:
	 * its first ops are what this seed always drew */
	gen_goto_round(&b, 1);
	round_ops(&b, jump, 300);
	CHECK(!memcmp(jump, other, sizeof(other)));
	CHECK_EQ(jump[0].kind, OP_SET_FLAG);
	CHECK_EQ(jump[1].kind, OP_PWRITE);
	CHECK_EQ(jump[1].off, 283576u);
	CHECK_EQ(jump[1].len, 9u);
	CHECK_EQ(jump[2].kind, OP_PWRITE);
	CHECK_EQ(jump[2].off, 416508u);
	CHECK_EQ(jump[2].len, 244u);
}

TEST(fixed_mix_rounds_keep_the_default_weights)
{
	struct gen_cfg cfg = { .seed = 5 };
	struct gen g;

	CHECK_OK(gen_init(&g, &cfg));
	for (unsigned r = 0; r < 3; r++) {
		if (r)
			gen_new_round(&g);
		CHECK(!memcmp(g.round.weight, gen_default_weight,
			      sizeof(g.round.weight)));
		CHECK_EQ(g.round.max_file, 256u << 10);
		CHECK_EQ(g.round.max_op, 64u << 10);
		CHECK(!g.round.mount[0] && !g.round.mkfs[0]);
	}
	CHECK_EQ(g.round.weight[OP_SET_FLAG], 0);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
