/*
 * test_harness_model.c - the model against hand-written expectations:
 * each test states the bytes and size Linux gives for a short sequence
 * and checks the model gives exactly those.  Also the shared fill
 * function's layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "harness/rng.h"
#include "harness/target.h"
#include "harness/text.h"
#include "tests/test.h"

#define MAXF (64 * 1024)

struct fixture {
	struct target *m;
	struct op_seq seq;
	uint8_t buf[MAXF];
	int64_t last;         /* the last op's result */
};

/* Run text on a fresh model (block size 4096); results of each op kept. */
static int run(struct fixture *fx, const char *text)
{
	char err[200];
	int ret;

	op_seq_init(&fx->seq);
	ret = op_text_parse(text, strlen(text), &fx->seq, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "parse: %s\n", err);
		return ret;
	}
	ret = model_target_new(4096, &fx->m);
	if (ret)
		return ret;
	for (size_t i = 0; i < fx->seq.n; i++)
		fx->last = target_apply(fx->m, &fx->seq.ops[i], i + 1, fx->buf,
					sizeof(fx->buf));
	return 0;
}

static void done(struct fixture *fx)
{
	fx->m->ops->destroy(fx->m);
	op_seq_free(&fx->seq);
}

static int64_t size_of(struct fixture *fx, unsigned f)
{
	return fx->m->ops->size(fx->m, f);
}

/* Bytes [off, off + n) of file f, into fx->buf. */
static const uint8_t *bytes(struct fixture *fx, unsigned f, uint64_t off,
			    size_t n)
{
	int64_t r = fx->m->ops->read(fx->m, f, off, fx->buf, n);

	return r == (int64_t)n ? fx->buf : NULL;
}

static int all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

TEST(model_truncate_down_then_up_reads_zeros)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0xaa 0 8k\ntruncate 5000\ntruncate 8k\n"));
	CHECK_EQ(size_of(&fx, 0), 8192);
	CHECK(all(bytes(&fx, 0, 0, 5000), 5000, 0xaa));
	CHECK(all(bytes(&fx, 0, 5000, 8192 - 5000), 8192 - 5000, 0));
	done(&fx);
}

TEST(model_write_past_eof_leaves_a_zero_gap)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0x11 0 100\npwrite -S 0x22 1000 10\n"));
	CHECK_EQ(size_of(&fx, 0), 1010);
	CHECK(all(bytes(&fx, 0, 0, 100), 100, 0x11));
	CHECK(all(bytes(&fx, 0, 100, 900), 900, 0));
	CHECK(all(bytes(&fx, 0, 1000, 10), 10, 0x22));
	done(&fx);
}

TEST(model_read_past_eof_is_short)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0x11 0 100\npread 50 100\n"));
	CHECK_EQ(fx.last, 50);
	done(&fx);
	CHECK_OK(run(&fx, "pwrite -S 0x11 0 100\npread 100 1\n"));
	CHECK_EQ(fx.last, 0);
	done(&fx);
}

TEST(model_punch_zeroes_and_keeps_size)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0x33 0 16k\nfpunch 4k 4097\nfpunch 15k 8k\n"));
	CHECK_EQ(size_of(&fx, 0), 16384);
	CHECK(all(bytes(&fx, 0, 0, 4096), 4096, 0x33));
	CHECK(all(bytes(&fx, 0, 4096, 4097), 4097, 0));
	CHECK(all(bytes(&fx, 0, 8193, 15360 - 8193), 15360 - 8193, 0x33));
	CHECK(all(bytes(&fx, 0, 15360, 1024), 1024, 0));
	done(&fx);
}

TEST(model_zero_range_keep_size_does_not_grow)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0x44 0 8k\nfzero -k 6k 8k\n"));
	CHECK_EQ(size_of(&fx, 0), 8192);
	CHECK(all(bytes(&fx, 0, 0, 6144), 6144, 0x44));
	CHECK(all(bytes(&fx, 0, 6144, 2048), 2048, 0));
	done(&fx);
}

TEST(model_zero_range_without_keep_size_grows)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0x44 0 8k\nfzero 6k 8k\n"));
	CHECK_EQ(size_of(&fx, 0), 14336);
	CHECK(all(bytes(&fx, 0, 6144, 8192), 8192, 0));
	done(&fx);
}

TEST(model_falloc_only_moves_the_size)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0x55 0 4k\nfalloc -k 0 1m\n"));
	CHECK_EQ(size_of(&fx, 0), 4096);
	CHECK(all(bytes(&fx, 0, 0, 4096), 4096, 0x55));
	done(&fx);
	CHECK_OK(run(&fx, "pwrite -S 0x55 0 4k\nfalloc 0 1m\n"));
	CHECK_EQ(size_of(&fx, 0), 1 << 20);
	CHECK(all(bytes(&fx, 0, 0, 4096), 4096, 0x55));
	CHECK(all(bytes(&fx, 0, 4096, 8192), 8192, 0));
	done(&fx);
	CHECK_OK(run(&fx, "falloc 0 0\n"));
	CHECK_EQ(fx.last, -EINVAL);
	done(&fx);
}

/* 4 blocks A B C D; collapse B -> A C D, size 12k. */
TEST(model_collapse_shifts_the_tail_left)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0xa 0 4k\npwrite -S 0xb 4k 4k\n"
		     "pwrite -S 0xc 8k 4k\npwrite -S 0xd 12k 4k\n"
		     "fcollapse 4k 4k\n"));
	CHECK_EQ(fx.last, 0);
	CHECK_EQ(size_of(&fx, 0), 12288);
	CHECK(all(bytes(&fx, 0, 0, 4096), 4096, 0xa));
	CHECK(all(bytes(&fx, 0, 4096, 4096), 4096, 0xc));
	CHECK(all(bytes(&fx, 0, 8192, 4096), 4096, 0xd));
	/* Growing again shows zeros where D was, not D. */
	done(&fx);
	CHECK_OK(run(&fx, "pwrite -S 0xd 0 16k\nfcollapse 0 4k\ntruncate 16k\n"));
	CHECK(all(bytes(&fx, 0, 12288, 4096), 4096, 0));
	done(&fx);
}

TEST(model_collapse_rejects_misaligned_and_eof_ranges)
{
	static const char *const bad[] = {
		"pwrite 0 16k\nfcollapse 1 4k\n",
		"pwrite 0 16k\nfcollapse 0 4097\n",
		"pwrite 0 16k\nfcollapse 12k 4k\n",   /* reaches EOF */
		"pwrite 0 16k\nfcollapse 12k 8k\n",   /* past EOF */
		"pwrite 0 16k\nfcollapse 4k 0\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fixture fx;

		CHECK_OK(run(&fx, bad[i]));
		CHECK_MSG(fx.last == -EINVAL, "case %zu: %lld", i,
			  (long long)fx.last);
		CHECK_EQ(size_of(&fx, 0), 16384);
		done(&fx);
	}
}

/* A B; insert 8k at 4k -> A hole hole B, size 16k. */
TEST(model_insert_shifts_the_tail_right)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0xa 0 4k\npwrite -S 0xb 4k 4k\n"
		     "finsert 4k 8k\n"));
	CHECK_EQ(fx.last, 0);
	CHECK_EQ(size_of(&fx, 0), 16384);
	CHECK(all(bytes(&fx, 0, 0, 4096), 4096, 0xa));
	CHECK(all(bytes(&fx, 0, 4096, 8192), 8192, 0));
	CHECK(all(bytes(&fx, 0, 12288, 4096), 4096, 0xb));
	done(&fx);
	CHECK_OK(run(&fx, "pwrite 0 8k\nfinsert 8k 4k\n"));   /* at EOF */
	CHECK_EQ(fx.last, -EINVAL);
	done(&fx);
}

TEST(model_copy_range_copies_and_refuses_overlap)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0x66 0 4k\nopen -f g\n"
		     "copy_range -s 1k -d 10k -l 8k f0\n"));
	CHECK_EQ(fx.last, 3072);            /* shortened to the source EOF */
	CHECK_EQ(size_of(&fx, 1), 10240 + 3072);
	CHECK(all(bytes(&fx, 1, 0, 10240), 10240, 0));
	CHECK(all(bytes(&fx, 1, 10240, 3072), 3072, 0x66));
	done(&fx);
	CHECK_OK(run(&fx, "pwrite 0 8k\ncopy_range -s 0 -d 4k -l 8k f0\n"));
	CHECK_EQ(fx.last, -EINVAL);
	done(&fx);
	CHECK_OK(run(&fx, "pwrite 0 8k\ncopy_range -s 9k -d 0 -l 1k f0\n"));
	CHECK_EQ(fx.last, 0);               /* nothing past the source EOF */
	done(&fx);
}

TEST(model_reflink_follows_the_remap_rules)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0x77 0 10000\nopen -f g\n"
		     "reflink f0 0 8k 0\n"));    /* 0 = to the source EOF */
	CHECK_EQ(fx.last, 0);
	CHECK_EQ(size_of(&fx, 1), 8192 + 10000);
	CHECK(all(bytes(&fx, 1, 8192, 10000), 10000, 0x77));
	done(&fx);
	CHECK_OK(run(&fx, "pwrite 0 16k\nopen -f g\nreflink f0 1 0 4k\n"));
	CHECK_EQ(fx.last, -EINVAL);
	done(&fx);
	CHECK_OK(run(&fx, "pwrite 0 16k\nopen -f g\nreflink f0 0 0 100\n"));
	CHECK_EQ(fx.last, -EINVAL);         /* unaligned, not at EOF */
	done(&fx);
}

TEST(model_exchange_swaps_bytes)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 0x1 0 8k\nopen -f g\npwrite -S 0x2 0 8k\n"
		     "exchangerange -s 0 -d 4k -l 4k f0\n"));
	CHECK_EQ(fx.last, 0);
	CHECK(all(bytes(&fx, 1, 0, 4096), 4096, 0x2));
	CHECK(all(bytes(&fx, 1, 4096, 4096), 4096, 0x1));
	CHECK(all(bytes(&fx, 0, 0, 4096), 4096, 0x2));
	CHECK(all(bytes(&fx, 0, 4096, 4096), 4096, 0x1));
	done(&fx);
}

TEST(model_namespace_ops)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "open g\n"));
	CHECK_EQ(fx.last, -ENOENT);
	CHECK_EQ(size_of(&fx, 0), -ENOENT);
	done(&fx);
	CHECK_OK(run(&fx, "pwrite 0 1k\nunlink f0\n"));
	CHECK_EQ(fx.last, 0);
	CHECK_EQ(size_of(&fx, 0), -ENOENT);
	done(&fx);
	CHECK_OK(run(&fx, "unlink f0\n"));
	CHECK_EQ(fx.last, -ENOENT);
	done(&fx);
	/* Any other op creates the file it names, empty. */
	CHECK_OK(run(&fx, "pwrite 0 1k\nunlink f0\npread 0 1k\n"));
	CHECK_EQ(fx.last, 0);
	CHECK_EQ(size_of(&fx, 0), 0);
	done(&fx);
	CHECK_OK(run(&fx, "close\n"));
	CHECK_EQ(size_of(&fx, 0), -ENOENT);  /* close never creates */
	done(&fx);
}

/* op_fill: [tag, ix0, tag, ix1, tag, ix2, tag, ix3] per aligned word. */
TEST(fill_names_the_op_and_the_offset)
{
	struct op w = { .kind = OP_PWRITE };
	uint8_t b[24];

	/* Word 0x30201 (file offset 0x181008), from its byte 5 on; index
	 * bytes are stored plus one (b % 255 + 1). */
	op_fill(&w, 3, 0x30201 * 8 + 5, b, sizeof(b));
	CHECK_EQ(op_fill_tag(3), 4);
	CHECK_EQ(b[0], 0x04);   /* byte 5: ix2 = 3 */
	CHECK_EQ(b[1], 4);      /* byte 6: the tag */
	CHECK_EQ(b[2], 0x01);   /* byte 7: ix3 = 0 */
	CHECK_EQ(b[3], 4);      /* word 0x30202 byte 0: the tag */
	CHECK_EQ(b[4], 0x03);   /* ix0 = 2 */
	CHECK_EQ(b[5], 4);
	CHECK_EQ(b[6], 0x03);   /* ix1 = 2 */
	CHECK_EQ(b[8], 0x04);   /* ix2 = 3 */
	/* No generated byte is zero, whatever the offset. */
	{
		uint8_t big[70000];

		op_fill(&w, 255, 0xff * 8 - 3, big, sizeof(big));
		for (size_t i = 0; i < sizeof(big); i++)
			CHECK_MSG(big[i], "zero at %zu", i);
		/* and every byte is the layout above: odd bytes the word
		 * index's bytes b as b % 255 + 1, even ones the tag (runs
		 * of 256 words crossed, ix0 = 255 among them) */
		for (size_t i = 0; i < sizeof(big); i++) {
			uint64_t at = 0xff * 8 - 3 + i, ix = at >> 3;
			unsigned j = (unsigned)(at & 7);
			uint8_t want = j & 1 ? (uint8_t)((ix >> (8 * (j / 2))) %
							 256 % 255 + 1) :
				       op_fill_tag(255);

			CHECK_MSG(big[i] == want, "byte %zu: %u, want %u", i,
				  big[i], want);
		}
	}
	CHECK_EQ(op_fill_tag(254), 255);
	CHECK_EQ(op_fill_tag(255), 1);       /* never 0 */
	/* Any split of a range fills the same bytes. */
	{
		uint8_t whole[5000], parts[5000];

		op_fill(&w, 77, 12345, whole, sizeof(whole));
		op_fill(&w, 77, 12345, parts, 1);
		op_fill(&w, 77, 12346, parts + 1, 2047);
		op_fill(&w, 77, 12345 + 2048, parts + 2048, 5000 - 2048);
		CHECK_MEM(whole, parts, sizeof(whole));
	}
	w.flags = OP_FL_PATTERN;
	w.pattern = 0x5a;
	op_fill(&w, 3, 1, b, 3);
	CHECK(b[0] == 0x5a && b[1] == 0x5a && b[2] == 0x5a);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}

/*
 * The moves behind collapse, insert and copy_range, against a flat copy:
 * files of many of the model's 4 KiB chunks, sparse ones included,
 * ranges at odd offsets that cross chunk edges on the source side, the
 * destination side or both, overlapping forward and backward in one
 * file; collapse and insert on chunk edges (whole chunks change places)
 * and, with blocks of 512 bytes, off them (bytes move).  Before each op
 * the test does the op on its own flat copy of the files, and after it
 * compares every byte and the size.  Writes past the end of a file
 * expose what a collapse or insert left past the size or in the hole.
 */
#define FLAT_MAX (6u << 20)

static uint8_t flat[2][FLAT_MAX], got[FLAT_MAX];

static void flat_move(uint8_t *d, const uint8_t *s, uint64_t n)
{
	memmove(d, s, (size_t)n);
}

/* ops random ops with block size bs over offsets below span (files up
 * to twice that), the write lengths up to maxw; the ops that moved
 * bytes (all but writes) are counted in *moves. */
static void moves_match(uint32_t bs, uint64_t span, uint64_t maxw,
			int ops, uint64_t seed, unsigned *moves)
{
	struct target *m;
	struct rng r;
	int64_t size[2] = { 0, 0 };

	CHECK(2 * span <= FLAT_MAX);
	memset(flat, 0, sizeof(flat));
	rng_seed(&r, seed);
	CHECK_OK(model_target_new(bs, &m));
	*moves = 0;
	for (int i = 0; i < ops; i++) {
		unsigned f = rng_next(&r) % 2, g = rng_next(&r) % 2;
		uint64_t pick = rng_next(&r) % 10;
		struct op op = { .file = (uint8_t)f, .file2 = (uint8_t)g };
		int64_t want;

		if (pick < 4) {         /* a write, sometimes of zeros */
			op.kind = OP_PWRITE;
			op.off = rng_next(&r) % span;
			op.len = 1 + rng_next(&r) % maxw;
			op.flags = OP_FL_PATTERN;
			op.pattern = (uint8_t)(rng_next(&r) % 3 ? 1 + i % 250 : 0);
			memset(flat[f] + op.off, op.pattern, (size_t)op.len);
			if ((int64_t)(op.off + op.len) > size[f])
				size[f] = (int64_t)(op.off + op.len);
			want = (int64_t)op.len;
		} else if (pick < 6) {  /* collapse: the tail moves left */
			op.kind = OP_FCOLLAPSE;
			if (size[f] < 3 * (int64_t)bs)
				continue;
			op.off = bs * (rng_next(&r) % ((uint64_t)size[f] / bs - 1));
			op.len = bs * (1 + rng_next(&r) % (((uint64_t)size[f] - op.off) / bs));
			if (op.off + op.len >= (uint64_t)size[f])
				continue;
			flat_move(flat[f] + op.off, flat[f] + op.off + op.len,
				  (uint64_t)size[f] - op.off - op.len);
			size[f] -= (int64_t)op.len;
			memset(flat[f] + size[f], 0, (size_t)op.len);
			want = 0;
		} else if (pick < 8) {  /* insert: the tail moves right */
			op.kind = OP_FINSERT;
			if (size[f] < (int64_t)bs)
				continue;
			op.off = bs * (rng_next(&r) % ((uint64_t)size[f] / bs));
			op.len = bs * (1 + rng_next(&r) % (span / 10 / bs));
			if ((uint64_t)size[f] + op.len > 2 * span)
				continue;
			flat_move(flat[f] + op.off + op.len, flat[f] + op.off,
				  (uint64_t)size[f] - op.off);
			memset(flat[f] + op.off, 0, (size_t)op.len);
			size[f] += (int64_t)op.len;
			want = 0;
		} else {                /* copy_range from g to f */
			uint64_t n;

			op.kind = OP_COPY_RANGE;
			op.off = rng_next(&r) % span;
			op.len = 1 + rng_next(&r) % (2 * maxw);
			op.arg = rng_next(&r) % span;
			n = op.off >= (uint64_t)size[g] ? 0 :
			    (uint64_t)size[g] - op.off < op.len ?
			    (uint64_t)size[g] - op.off : op.len;
			if (n == 0 || (f == g && op.off < op.arg + n &&
				       op.arg < op.off + n))
				continue;
			flat_move(flat[f] + op.arg, flat[g] + op.off, n);
			if ((int64_t)(op.arg + n) > size[f])
				size[f] = (int64_t)(op.arg + n);
			want = (int64_t)n;
		}
		CHECK_MSG(target_apply(m, &op, (uint64_t)i + 1, got,
				       sizeof(got)) == want,
			  "op %d kind %u", i, op.kind);
		*moves += op.kind != OP_PWRITE;
		for (unsigned k = 0; k < 2; k++) {
			if (!size[k])       /* not written yet */
				continue;
			CHECK_EQ(m->ops->size(m, k), size[k]);
			CHECK_EQ(m->ops->read(m, k, 0, got, (size_t)size[k]), size[k]);
			CHECK_MSG(memcmp(got, flat[k], (size_t)size[k]) == 0,
				  "op %d kind %u: file %u differs", i, op.kind, k);
			CHECK(target_peek_same(m, k, 0, flat[k], (size_t)size[k]));
		}
	}
	m->ops->destroy(m);
}

TEST(model_moves_match_a_flat_copy_across_chunk_edges)
{
	unsigned moves;

	moves_match(4096, 6 * 65536, 90000, 600, 20261204, &moves);
	CHECK(moves > 150);
}

TEST(model_moves_match_a_flat_copy_off_chunk_edges)
{
	unsigned moves;

	moves_match(512, 6 * 65536, 90000, 600, 20261206, &moves);
	CHECK(moves > 150);
}

/* The directory's leaves hold 2 MiB of file each: files of a few. */
TEST(model_moves_match_a_flat_copy_across_leaf_edges)
{
	unsigned moves;

	moves_match(4096, 5u << 19, 700000, 120, 20261207, &moves);
	CHECK(moves > 30);
}

/*
 * A collapse whose tail is shorter than the range it removes, and an
 * insert past a short tail: the chunks the tail leaves behind read as
 * zeros once the file grows over them again.
 */
TEST(model_shift_on_chunk_edges_leaves_zeros_behind)
{
	struct fixture fx;

	CHECK_OK(run(&fx, "pwrite -S 7 0 40960\n"
			  "pwrite -S 9 40960 100\n"
			  "fcollapse 0 32768\n"
			  "truncate 49152\n"));
	CHECK_EQ(size_of(&fx, 0), 49152);
	CHECK(all(bytes(&fx, 0, 0, 8192), 8192, 7));
	CHECK(all(bytes(&fx, 0, 8192, 100), 100, 9));
	CHECK(all(bytes(&fx, 0, 8292, 49152 - 8292), 49152 - 8292, 0));
	done(&fx);
	CHECK_OK(run(&fx, "pwrite -S 5 0 8192\n"
			  "finsert 4096 20480\n"
			  "pwrite -S 6 40960 1\n"));
	CHECK_EQ(size_of(&fx, 0), 40961);
	CHECK(all(bytes(&fx, 0, 0, 4096), 4096, 5));
	CHECK(all(bytes(&fx, 0, 4096, 20480), 20480, 0));
	CHECK(all(bytes(&fx, 0, 24576, 4096), 4096, 5));
	CHECK(all(bytes(&fx, 0, 28672, 12288), 12288, 0));
	CHECK(all(bytes(&fx, 0, 40960, 1), 1, 6));
	done(&fx);
}

/*
 * Collapse and insert on chunk edges in a sparse file of 1 TiB with 4 KiB
 * of data at each end: the work and the memory follow the data, not the
 * size (an earlier version made a leaf for every 2 MiB of the tail: 2 GiB
 * of them here).
 */
TEST(model_shift_of_a_huge_sparse_file_follows_its_data)
{
	struct fixture fx;
	struct rusage ru;

	CHECK_OK(run(&fx, "pwrite -S 7 0 4k\n"
			  "pwrite -S 9 1099511627776 4k\n"
			  "fcollapse 0 4k\n"
			  "finsert 4096 8k\n"));
	CHECK_EQ(fx.last, 0);
	CHECK_EQ(size_of(&fx, 0), 1099511627776 + 8192);
	CHECK(all(bytes(&fx, 0, 0, 16384), 16384, 0));
	CHECK(all(bytes(&fx, 0, 1099511627776 + 4096, 4096), 4096, 9));
	CHECK(all(bytes(&fx, 0, 1099511627776, 4096), 4096, 0));
	CHECK_OK(getrusage(RUSAGE_SELF, &ru));
	CHECK_MSG(ru.ru_maxrss < 256 * 1024, "peak rss %ld KiB", ru.ru_maxrss);
	done(&fx);
}
