/*
 * io_map.c - the block-map words of `fsoracle io`: bmap, fiemap and
 * seek, printed as xfs_io prints them.
 *
 * All three read one list of rows built from the engine's extent map:
 * holes between extents and up to EOF, and each extent cut where its
 * blocks start or stop being shared (the refcount tree says which), as
 * XFS reports a mapping shared or not as a whole:
 *
 *   extents   [0..15] blocks 100..115        refcount: 104..107 shared
 *   rows      [0..3]   100..103
 *             [4..7]   104..107  shared
 *             [8..15]  108..115
 *
 * Offsets and block numbers are in 512-byte units, as xfs_io's.  The
 * data fork's dirty pages are written back first, so that delayed
 * allocations show as the blocks they get (xfs_io's bmap and fiemap
 * flush as well; seek on XFS reads the page cache instead).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/io.h"

struct row {
	uint64_t off, end;        /* file range, 512-byte units, end excl. */
	uint64_t blk, bend;       /* device range (compressed: what it holds) */
	int hole;
	uint32_t state;           /* REF_EXT_* */
	int shared;
};

struct shared_rec {
	uint64_t start, len;      /* fs blocks */
};

struct rows {
	struct row *r;
	size_t n, cap;
	struct shared_rec *sh;
	size_t nsh, capsh;
	uint64_t next;            /* next expected file block */
	uint32_t u;               /* 512-byte units per block */
	int err;
};

static int push(struct rows *rs, const struct row *r)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		struct row *nr = realloc(rs->r, cap * sizeof(*nr));

		if (!nr)
			return rs->err = -ENOMEM;
		rs->r = nr;
		rs->cap = cap;
	}
	rs->r[rs->n++] = *r;
	return 0;
}

static int shared_one(void *arg, uint64_t start, uint64_t len, uint32_t count)
{
	struct rows *rs = arg;

	(void)count; /* shared is shared: XFS reports no count */
	if (rs->nsh && rs->sh[rs->nsh - 1].start + rs->sh[rs->nsh - 1].len == start) {
		rs->sh[rs->nsh - 1].len += len;
		return 0;
	}
	if (rs->nsh == rs->capsh) {
		size_t cap = rs->capsh ? rs->capsh * 2 : 16;
		struct shared_rec *ns = realloc(rs->sh, cap * sizeof(*ns));

		if (!ns)
			return rs->err = -ENOMEM;
		rs->sh = ns;
		rs->capsh = cap;
	}
	rs->sh[rs->nsh].start = start;
	rs->sh[rs->nsh++].len = len;
	return 0;
}

static void hole_to(struct rows *rs, uint64_t fileblk)
{
	struct row h = { .hole = 1 };

	if (fileblk <= rs->next)
		return;
	h.off = rs->next * rs->u;
	h.end = fileblk * rs->u;
	push(rs, &h);
	rs->next = fileblk;
}

/* One extent: pieces split where sharing starts or stops. */
static int extent_one(void *arg, const struct ref_extent *e)
{
	struct rows *rs = arg;
	uint64_t u = rs->u, pos = e->startblk, end = e->startblk + e->len;

	hole_to(rs, e->fileoff);
	if (e->state & REF_EXT_COMPRESSED) {
		struct row r = { .off = e->fileoff * u,
				 .end = (e->fileoff + e->len) * u,
				 .blk = e->startblk * u,
				 .bend = (e->startblk + REF_EXT_PLEN(e->state)) * u,
				 .state = e->state };

		push(rs, &r);
		rs->next = e->fileoff + e->len;
		return rs->err;
	}
	while (pos < end) {
		uint64_t stop = end;
		int shared = 0;

		for (size_t i = 0; i < rs->nsh; i++) {
			const struct shared_rec *s = &rs->sh[i];

			if (s->start <= pos && pos < s->start + s->len) {
				shared = 1;
				stop = s->start + s->len < end ? s->start + s->len : end;
				break;
			}
			if (s->start > pos && s->start < stop)
				stop = s->start;
		}
		{
			struct row r = { .off = (e->fileoff + pos - e->startblk) * u,
					 .end = (e->fileoff + stop - e->startblk) * u,
					 .blk = pos * u, .bend = stop * u,
					 .state = e->state, .shared = shared };

			push(rs, &r);
		}
		pos = stop;
	}
	rs->next = e->fileoff + e->len;
	return rs->err;
}

#define MAP_COW     1  /* the COW fork */
#define MAP_NOFLUSH 2  /* do not write back first */

/* The rows of the current file's data fork (or COW fork). */
static int build(struct io *io, int how, struct rows *rs, struct ref_stat *st)
{
	int cow = how & MAP_COW;
	struct ref_fs *fs = engine_target_fs(io->t);
	uint64_t ino;
	int err = io_cur_ino(io, &ino);

	memset(rs, 0, sizeof(*rs));
	rs->u = ref_blocksize(fs) / 512;
	if (!err && !(how & (MAP_COW | MAP_NOFLUSH))) {
		/* delayed allocations get their blocks first (XFS's bmap
		 * flushes the file too): the map then shows them */
		struct op wb = { .kind = OP_WRITEBACK };
		int64_t r = target_apply(io->t, &wb, ++io->opno, io->buf, 0);

		err = r < 0 ? (int)r : 0;
	}
	if (!err)
		err = ref_stat(fs, ino, st);
	if (err)
		return err;
	if (!(st->flags & REF_FLAG_REALTIME)) {
		err = ref_refcount_walk(fs, shared_one, rs);
		if (err && err != -EOPNOTSUPP)
			return err;
	}
	err = cow ? ref_cow_bmap(fs, ino, extent_one, rs) :
		    ref_bmap(fs, ino, extent_one, rs);
	if (!err && !cow) { /* the hole up to EOF, in whole blocks */
		uint64_t bs = ref_blocksize(fs);

		hole_to(rs, (st->size + bs - 1) / bs);
	}
	return err ? err : rs->err;
}

static void rows_free(struct rows *rs)
{
	free(rs->r);
	free(rs->sh);
}

static int numlen(uint64_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static int maxi(int a, int b)
{
	return a > b ? a : b;
}

/* The "[a..b]:" column (a row's file range) and "a..b" (its blocks). */
static int foff(char *buf, size_t len, const struct row *r)
{
	return snprintf(buf, len, "[%" PRIu64 "..%" PRIu64 "]:", r->off,
			r->end - 1);
}

static int brange(char *buf, size_t len, const struct row *r)
{
	return snprintf(buf, len, "%" PRIu64 "..%" PRIu64, r->blk, r->bend - 1);
}

/* xfs_io's column widths: at least 16 for the ranges (the AG offset,
 * "(a..b)", two more than the longest block range), 5 for TOTAL. */
static void widths(const struct rows *rs, int *fw, int *bw, int *aw, int *tw)
{
	char a[64];
	int longest = 0;

	*fw = 16;
	*tw = 5;
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *r = &rs->r[i];

		*fw = maxi(*fw, foff(a, sizeof(a), r));
		*tw = maxi(*tw, numlen(r->end - r->off));
		if (!r->hole)
			longest = maxi(longest, brange(a, sizeof(a), r));
	}
	*bw = maxi(16, longest);
	*aw = maxi(16, longest + 2);
}

#define FLG_SHARED 0100000
#define FLG_PRE    0010000

/* xfs_io's plain list: "\tN: [a..b]: x..y" (-l: "N blocks" after). */
static void print_plain(const struct rows *rs, int lengths)
{
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *r = &rs->r[i];

		printf("\t%zu: [%" PRIu64 "..%" PRIu64 "]: ", i, r->off, r->end - 1);
		if (r->hole)
			printf("hole");
		else
			printf("%" PRIu64 "..%" PRIu64, r->blk, r->bend - 1);
		if (lengths)
			printf(" %" PRIu64 " blocks", r->end - r->off);
		putchar('\n');
	}
}

/*
 * bmap [-c] [-v] [-p]: xfs_io's columns.  FLAGS (octal: 0100000 shared,
 * 0010000 unwritten) follow the total on every row with -p, and on a
 * shared row without it; the header names them only with -p (as
 * xfs_io does).  A realtime file
 * has no AG columns.  Compressed rows (ours; no xfs_io flag means it)
 * end in "compressed".
 */
int io_bmap(struct io *io, int argc, char **argv)
{
	struct io_opts o;
	struct rows rs;
	struct ref_stat st;
	const char *arg;
	int c, verbose = 0, cow = 0, pflag = 0, err, rt;
	int fw, bw, aw, tw;
	char a[64], b[64];

	io_opts_init(&o, argc, argv, "cvp");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		if (c == 'v')
			verbose = 1;
		else if (c == 'c')
			cow = 1;
		else if (c == 'p')
			pflag = 1;
		else {
			if (c == 0)
				fprintf(stderr, "bmap: extra argument '%s'\n", arg);
			return IO_BAD;
		}
	}
	err = build(io, cow ? MAP_COW : 0, &rs, &st);
	if (err) {
		rows_free(&rs);
		return io_fail("bmap", err);
	}
	rt = !!(st.flags & REF_FLAG_REALTIME);
	if (rs.n == 0) {
		printf("%s: no extents\n", io_cur_name(io));
		rows_free(&rs);
		return IO_OK;
	}
	printf("%s:\n", io_cur_name(io));
	if (!verbose) {
		print_plain(&rs, 0);
		rows_free(&rs);
		return IO_OK;
	}
	widths(&rs, &fw, &bw, &aw, &tw);
	if (rt)
		printf(" EXT: %-*s %-*s %*s%s\n", fw, "FILE-OFFSET", bw,
		       "RT-BLOCK-RANGE", tw, "TOTAL", pflag ? " FLAGS" : "");
	else
		printf(" EXT: %-*s %-*s %*s %-*s %*s%s\n", fw, "FILE-OFFSET", bw,
		       "BLOCK-RANGE", 2, "AG", aw, "AG-OFFSET", tw, "TOTAL",
		       pflag ? " FLAGS" : "");
	for (size_t i = 0; i < rs.n; i++) {
		const struct row *r = &rs.r[i];
		char ag[80];

		foff(a, sizeof(a), r);
		if (r->hole) {
			printf("%4zu: %-*s %-*s %*" PRIu64 "\n", i, fw, a,
			       rt ? bw : bw + 1 + 2 + 1 + aw, "hole", tw,
			       r->end - r->off);
			continue;
		}
		brange(b, sizeof(b), r);
		if (rt) {
			printf("%4zu: %-*s %-*s %*" PRIu64, i, fw, a, bw, b, tw,
			       r->bend - r->blk);
		} else {
			snprintf(ag, sizeof(ag), "(%s)", b);
			printf("%4zu: %-*s %-*s %*d %-*s %*" PRIu64, i, fw, a, bw, b,
			       2, 0, aw, ag, tw, r->bend - r->blk);
		}
		if (pflag || r->shared)
			printf(" %06o", (r->shared ? FLG_SHARED : 0) |
			       ((r->state & REF_EXT_UNWRITTEN) ? FLG_PRE : 0));
		if (r->state & REF_EXT_COMPRESSED)
			printf(" compressed");
		putchar('\n');
	}
	rows_free(&rs);
	return IO_OK;
}

#define FIEMAP_LAST      0x1
#define FIEMAP_ENCODED   0x8
#define FIEMAP_UNWRITTEN 0x800
#define FIEMAP_SHARED    0x2000

/* fiemap's options: -v, -l and up to two numbers.  IO_OK or IO_BAD. */
static int fiemap_args(int argc, char **argv, uint64_t pos[2], int *verbose,
		       int *lengths)
{
	struct io_opts o;
	const char *arg;
	int c, npos = 0;

	io_opts_init(&o, argc, argv, "vl");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		if (c == 'v')
			*verbose = 1;
		else if (c == 'l')
			*lengths = 1;
		else if (c == 0 && npos < 2) {
			if (io_size(npos ? "non-numeric length argument" :
				    "non-numeric offset argument", arg, &pos[npos]))
				return IO_BAD;
			npos++;
		} else {
			if (c == 0)
				fprintf(stderr, "fiemap: extra argument '%s'\n", arg);
			return IO_BAD;
		}
	}
	if (npos == 2)
		pos[1] = pos[0] + pos[1] < pos[0] ? UINT64_MAX : pos[0] + pos[1];
	return IO_OK;
}

/* Keep the rows in [pos[0], pos[1]), cut to it (in 512-byte units), as XFS. */
static void fiemap_clip(struct rows *rs, const uint64_t pos[2])
{
	size_t out = 0;

	for (size_t i = 0; i < rs->n; i++) {
		struct row r = rs->r[i];
		uint64_t lo = pos[0] / 512, hi = (pos[1] + 511) / 512;

		if (pos[1] == UINT64_MAX)
			hi = UINT64_MAX;
		if (r.end <= lo || r.off >= hi)
			continue;
		if (r.off < lo && !(r.state & REF_EXT_COMPRESSED)) {
			r.blk += lo - r.off;
			r.off = lo;
		}
		if (r.end > hi && !(r.state & REF_EXT_COMPRESSED)) {
			r.bend -= r.end - hi;
			r.end = hi;
		}
		rs->r[out++] = r;
	}
	rs->n = out;
}

/* fiemap -v's table: the last extent that is not a hole carries LAST. */
static void fiemap_table(const struct rows *rs)
{
	int fw, bw, aw, tw, flw = 5;
	size_t last = SIZE_MAX;
	char a[64], b[64], f[16];

	for (size_t i = 0; i < rs->n; i++)
		if (!rs->r[i].hole)
			last = i;
	widths(rs, &fw, &bw, &aw, &tw);
	printf(" EXT: %-*s %-*s %*s %*s\n", fw, "FILE-OFFSET", bw, "BLOCK-RANGE",
	       tw, "TOTAL", flw, "FLAGS");
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *r = &rs->r[i];
		unsigned fl = (i == last ? FIEMAP_LAST : 0) |
			      (r->shared ? FIEMAP_SHARED : 0) |
			      ((r->state & REF_EXT_UNWRITTEN) ? FIEMAP_UNWRITTEN : 0) |
			      ((r->state & REF_EXT_COMPRESSED) ? FIEMAP_ENCODED : 0);

		foff(a, sizeof(a), r);
		if (r->hole) {
			printf("%4zu: %-*s %-*s %*" PRIu64 "\n", i, fw, a, bw, "hole",
			       tw, r->end - r->off);
			continue;
		}
		brange(b, sizeof(b), r);
		snprintf(f, sizeof(f), "0x%x", fl);
		printf("%4zu: %-*s %-*s %*" PRIu64 " %*s\n", i, fw, a, bw, b, tw,
		       r->end - r->off, flw, f);
	}
}

/* fiemap [-v] [-l] [OFF [LEN]]: rows that touch [OFF, OFF+LEN). */
int io_fiemap(struct io *io, int argc, char **argv)
{
	struct rows rs;
	struct ref_stat st;
	uint64_t pos[2] = { 0, UINT64_MAX };
	int verbose = 0, lengths = 0, err;

	if (fiemap_args(argc, argv, pos, &verbose, &lengths))
		return IO_BAD;
	err = build(io, 0, &rs, &st);
	if (err) {
		rows_free(&rs);
		return io_fail("fiemap", err);
	}
	fiemap_clip(&rs, pos);
	printf("%s:\n", io_cur_name(io));
	if (!verbose || !rs.n)
		print_plain(&rs, lengths);
	else
		fiemap_table(&rs);
	rows_free(&rs);
	return IO_OK;
}

/* What seek asks for: the offset, which kinds of region, how many. */
struct seek_req {
	uint64_t off;
	int want_d, want_h, all, start;
};

/* seek's options: -a|-d|-h, -r, -s and one offset.  IO_OK or IO_BAD. */
static int seek_args(int argc, char **argv, struct seek_req *q)
{
	struct io_opts o;
	const char *arg;
	int c, have_off = 0;

	io_opts_init(&o, argc, argv, "adhrs");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		if (c == 'a')
			q->want_d = q->want_h = 1;
		else if (c == 'd')
			q->want_d = 1;
		else if (c == 'h')
			q->want_h = 1;
		else if (c == 'r')
			q->all = 1;
		else if (c == 's')
			q->start = 1;
		else if (c == 0 && !have_off) {
			if (io_size("non-numeric offset argument", arg, &q->off))
				return IO_BAD;
			have_off = 1;
		} else {
			if (c == 0)
				fprintf(stderr, "seek: extra argument '%s'\n", arg);
			return IO_BAD;
		}
	}
	if (!have_off || (!q->want_d && !q->want_h)) {
		fprintf(stderr, "seek: usage: seek -a | -d | -h [-r] [-s] off\n");
		return IO_BAD;
	}
	return IO_OK;
}

/*
 * The region that holds pos: whether it is data (*in_data) and where
 * the next region starts (its end, at most size).
 */
static uint64_t seek_region(const struct rows *rs, uint64_t pos,
			    uint64_t size, int *in_data)
{
	uint64_t end = size;

	*in_data = 0;
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *r = &rs->r[i];
		int data = !r->hole && !(r->state & REF_EXT_UNWRITTEN);
		uint64_t b0 = r->off * 512, b1 = r->end * 512;

		if (b1 <= pos)
			continue;
		if (b0 <= pos) {
			*in_data = data;
			continue;
		}
		if (data != *in_data) {
			end = b0;
			break;
		}
	}
	return end > size ? size : end;
}

/* One line of the answer: kind, [-s: where the walk was,] the start. */
static void seek_line(const struct seek_req *q, const char *kind,
		      uint64_t prev, uint64_t pos)
{
	if (q->start)
		printf("%s\t%" PRIu64 "\t%" PRIu64 "\n", kind, prev, pos);
	else
		printf("%s\t%" PRIu64 "\n", kind, pos);
}

/*
 * seek -a|-d|-h [-r] [-s] OFF: SEEK_DATA and SEEK_HOLE over the map.
 * Data is what reads back from blocks: written (and compressed)
 * extents; unwritten extents and holes are holes, and EOF is one.  From
 * OFF the file is a run of alternating regions (the last data region is
 * followed by the hole at EOF); -d and -h print the first data or hole
 * region's start (EOF when there is none), -a the first two regions, -r
 * all of them.
 */
int io_seek(struct io *io, int argc, char **argv)
{
	struct seek_req q = { 0 };
	struct rows rs;
	struct ref_stat st;
	uint64_t pos, prev;
	int err, printed = 0, regions = 0, in_data;

	if (seek_args(argc, argv, &q))
		return IO_BAD;
	err = build(io, 0, &rs, &st);
	if (err) {
		rows_free(&rs);
		return io_fail("seek", err);
	}
	printf(q.start ? "Whence\tStart\tResult\n" : "Whence\tResult\n");
	/* walk the regions from off: [pos, next boundary) of one kind */
	prev = pos = q.off;
	while (pos < st.size) {
		uint64_t end = seek_region(&rs, pos, st.size, &in_data);

		if ((in_data && q.want_d) || (!in_data && q.want_h)) {
			seek_line(&q, in_data ? "DATA" : "HOLE", prev, pos);
			printed++;
		}
		regions++;
		prev = pos;
		pos = end;
		if (!q.all && (q.want_d && q.want_h ? regions == 2 : printed == 1))
			break;
		/* data up to EOF: the hole at EOF is the next region */
		if (in_data && pos == st.size && q.want_h) {
			seek_line(&q, "HOLE", prev, pos);
			printed++;
		}
	}
	if (!printed) {
		if (q.start)
			printf("%s\t%" PRIu64 "\tEOF\n", q.want_d ? "DATA" : "HOLE",
			       q.off);
		else
			printf("%s\tEOF\n", q.want_d ? "DATA" : "HOLE");
	}
	rows_free(&rs);
	return IO_OK;
}

/* Does the current file share blocks?  0 or 1, or -errno. */
int io_file_shared(struct io *io)
{
	struct rows rs;
	struct ref_stat st;
	int err = build(io, MAP_NOFLUSH, &rs, &st), shared = 0;

	for (size_t i = 0; !err && i < rs.n; i++)
		shared |= rs.r[i].shared;
	rows_free(&rs);
	return err ? err : shared;
}
