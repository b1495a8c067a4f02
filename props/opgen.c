/*
 * opgen.c - op sequences as generated arguments, through the spine's
 * binary decoder (harness/binary.h).
 *
 * Each op is one span of seven requests, packed into the 16-byte binary
 * record and decoded with op_bin_decode:
 *
 *   request                      record bytes   all-zero means
 *   kind: index into `kinds`     0  (kind)      the first allowed kind
 *   file, file2: below(nfiles)   1  (f | f2<<4) f0
 *   flags: 6 bits                2              none
 *   pattern: 8 bits              3              0x00
 *   off, len, arg: 512-byte      4..15          0; an aligned value
 *     units (props_int, log-uniform) and a 4-bit index into the decoder's
 *     sub-512 tails (0 1 2 3 7 100 200 ... 511)
 *
 * The decoder clamps to the geometry and zeroes what a kind does not
 * use, so every record decodes and every sequence the binary form can
 * carry can be generated.  The search makes most values aligned and most
 * flags empty; the shrinker deletes whole ops first (span deletion), then
 * lowers the kind, the files and the values.
 */
#include "props/props_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/binary.h"
#include "harness/op.h"
#include "harness/text.h"

static void put32le(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A scaled u32 (binary.h): units of 512 bytes, then a tail index. */
static uint32_t gen_scaled(struct props_trial *t, uint64_t max_units)
{
	uint64_t units = props_int(t, 0, max_units);
	uint64_t want = 0;
	uint64_t tail;

	/* three values in four aligned */
	if (props_searching(t) && props_policy(t, 4) == 0)
		want = 1 + props_policy(t, 15);
	tail = props_draw(t, 4, 15, &want);
	return (uint32_t)(units << 4 | tail);
}

int props_ops_gen(struct props_trial *t, const struct props_ops_env *env,
		  struct op_seq *seq)
{
	struct props_ops_env d = { 0 };
	struct op_geom g;
	uint8_t kinds[OP_KIND_COUNT];
	unsigned nkinds = 0;
	uint8_t *buf;
	size_t n = 0;
	int ret;

	if (env)
		d = *env;
	g.max_file = d.max_file ? d.max_file : 1u << 20;
	g.nfiles = d.nfiles ? d.nfiles : 2;
	op_geom_normalize(&g);
	for (unsigned k = 1; k < OP_KIND_COUNT; k++)
		if (!d.kinds || (d.kinds & (1ull << k)))
			kinds[nkinds++] = (uint8_t)k;
	if (!nkinds)
		return -EINVAL;
	if (!d.max_ops)
		d.max_ops = 64;
	if (!d.avg_ops)
		d.avg_ops = 8;
	struct props_many m = PROPS_MANY(0, d.max_ops, d.avg_ops);

	buf = malloc((size_t)d.max_ops * OP_BIN_RECORD);
	if (!buf)
		return -ENOMEM;
	while (props_more(t, &m)) {
		uint8_t *rec = buf + n * OP_BIN_RECORD;
		uint64_t max_units = g.max_file / 512;
		uint64_t want_flags = 0;
		unsigned f, f2;

		rec[0] = kinds[props_below(t, nkinds)];
		f = (unsigned)props_below(t, g.nfiles);
		f2 = (unsigned)props_below(t, g.nfiles);
		rec[1] = (uint8_t)(f | f2 << 4);
		if (props_searching(t) && props_policy(t, 2))
			want_flags = props_policy(t, 64);
		rec[2] = (uint8_t)props_draw(t, 6, 63, &want_flags);
		rec[3] = (uint8_t)props_bits(t, 8);
		put32le(rec + 4, gen_scaled(t, max_units));
		put32le(rec + 8, gen_scaled(t, max_units));
		put32le(rec + 12, gen_scaled(t, max_units));
		n++;
	}
	ret = op_bin_decode(buf, n * OP_BIN_RECORD, &g, seq);
	free(buf);
	if (!ret && env) {
		if (env->dev)
			snprintf(seq->hdr.dev, sizeof(seq->hdr.dev), "%s", env->dev);
		if (env->mkfs)
			snprintf(seq->hdr.mkfs, sizeof(seq->hdr.mkfs), "%s",
				 env->mkfs);
		if (env->targets)
			snprintf(seq->hdr.targets, sizeof(seq->hdr.targets), "%s",
				 env->targets);
	}
	return ret;
}

int props_ops_alloc(struct props_trial *t, void *env, void **out)
{
	struct op_seq *seq = malloc(sizeof(*seq));

	if (!seq)
		return PROPS_ERROR;
	op_seq_init(seq);
	if (props_ops_gen(t, env, seq)) {
		op_seq_free(seq);
		free(seq);
		return PROPS_ERROR;
	}
	*out = seq;
	return PROPS_PASS;
}

void props_ops_free(void *inst, void *env)
{
	(void)env;
	if (!inst)
		return;
	op_seq_free(inst);
	free(inst);
}

void props_ops_print(FILE *f, const void *inst, void *env)
{
	const struct op_seq *seq = inst;

	(void)env;
	if (seq->n == 0)
		fprintf(f, "# (no ops)\n");
	op_text_write(seq, f);
}
