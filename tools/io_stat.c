/*
 * io_stat.c - the inode words of `fsoracle io`: stat and statx, lsattr
 * and chattr in xfs_io's letters, statfs and the engine's counters.
 *
 * xfs_io's flag letters, in its order:  r p i a s A d t P n e E f S x C X
 * The engine knows r (realtime) and p (prealloc: here, the file has
 * unwritten extents); the others are never set and chattr refuses them.
 * Its own flags have letters xfs_io does not use: j (journal data),
 * o (always copy on write), c (compress); lsattr -v and stat -v name
 * them, the 17-letter string has no place for them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tools/io.h"

static const char letters[] = "rpiasAdtPneEfSxCX";
static const char *const long_names[] = {
	"realtime", "prealloc", "immutable", "append-only", "sync", "no-atime",
	"no-dump", "rt-inherit", "proj-inherit", "nosymlinks", "extsize",
	"extsz-inherit", "no-defrag", "filestream", "dax", "cowextsize",
	"has-xattr",
};
/* the xflags bit of each letter (FS_XFLAG_*) */
static const uint32_t xbits[] = {
	0x1, 0x2, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100, 0x200, 0x400, 0x800,
	0x1000, 0x2000, 0x4000, 0x8000, 0x10000, 0x80000000u,
};

static const struct {
	char letter;
	uint32_t flag;
	const char *name;
} own[] = {
	{ 'j', REF_FLAG_JOURNAL_DATA, "journal-data" },
	{ 'o', REF_FLAG_COW, "always-cow" },
	{ 'c', REF_FLAG_COMPRESS, "compress" },
};
#define NOWN (sizeof(own) / sizeof(own[0]))

static int has_unwritten(void *arg, const struct ref_extent *e)
{
	if (!(e->state & REF_EXT_UNWRITTEN))
		return 0;
	*(int *)arg = 1;
	return 1; /* stops the walk */
}

struct inode_info {
	struct ref_stat st;
	uint32_t xflags;
};

static int inode_info(struct io *io, struct inode_info *ii)
{
	struct ref_fs *fs = engine_target_fs(io->t);
	uint64_t ino;
	int err = io_cur_ino(io, &ino), unwritten = 0;

	if (!err)
		err = ref_stat(fs, ino, &ii->st);
	if (!err)
		err = ref_bmap(fs, ino, has_unwritten, &unwritten);
	if (err)
		return err;
	ii->xflags = ((ii->st.flags & REF_FLAG_REALTIME) ? 0x1 : 0) |
		     (unwritten ? 0x2 : 0);
	return 0;
}

/* "-p--------------X" or "[prealloc, journal-data]" */
static void flag_text(const struct inode_info *ii, int verbose, char *buf,
		      size_t len)
{
	size_t n = 0;

	if (!verbose) {
		for (size_t i = 0; i < sizeof(xbits) / sizeof(xbits[0]); i++)
			buf[n++] = (ii->xflags & xbits[i]) ? letters[i] : '-';
		buf[n] = 0;
		return;
	}
	n = (size_t)snprintf(buf, len, "[");
	for (size_t i = 0; i < sizeof(xbits) / sizeof(xbits[0]); i++)
		if (ii->xflags & xbits[i])
			n += (size_t)snprintf(buf + n, len - n, "%s%s",
					      n > 1 ? ", " : "", long_names[i]);
	for (size_t i = 0; i < NOWN; i++)
		if (ii->st.flags & own[i].flag)
			n += (size_t)snprintf(buf + n, len - n, "%s%s",
					      n > 1 ? ", " : "", own[i].name);
	snprintf(buf + n, len - n, "]");
}

/*
 * stat [-v] and statx [-v] [-r] [-m MASK]: xfs_io's lines.  The engine
 * keeps no times, so -v adds none (it names the flags in full, as
 * xfs_io's -v does).
 */
int io_stat(struct io *io, int argc, char **argv)
{
	struct inode_info ii;
	struct io_opts o;
	const char *arg;
	char fl[256];
	int c, verbose = 0, err;

	io_opts_init(&o, argc, argv,
		     !strcmp(argv[0], "statx") ? "vm:FD" : "v");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		if (c == 'v')
			verbose = 1;
		else if (c == 0) {
			fprintf(stderr, "%s: extra argument '%s'\n", argv[0], arg);
			return IO_BAD;
		} else if (c == '?')
			return IO_BAD;
	}
	err = inode_info(io, &ii);
	if (err)
		return io_fail(argv[0], err);
	flag_text(&ii, verbose, fl, sizeof(fl));
	printf("fd.path = \"%s\"\n", io_cur_name(io));
	printf("fd.flags = non-sync,%s,read-write\n",
	       io->direct ? "direct" : "non-direct");
	printf("stat.ino = %" PRIu64 "\n", ii.st.ino);
	printf("stat.type = regular file\n");
	printf("stat.size = %" PRIu64 "\n", ii.st.size);
	printf("stat.blocks = %" PRIu64 "\n",
	       ii.st.blocks * (ii.st.blocksize / 512));
	printf("fsxattr.xflags = 0x%x %s%s%s\n", ii.xflags, verbose ? "" : "[",
	       fl, verbose ? "" : "]");
	printf("fsxattr.projid = 0\n");
	printf("fsxattr.extsize = 0\n");
	printf("fsxattr.cowextsize = 0\n");
	printf("fsxattr.nextents = %" PRIu64 "\n", ii.st.nextents);
	printf("fsxattr.naextents = 0\n");
	/* O_DIRECT on a file that shares blocks (or always copies on
	 * write) goes by whole blocks, as XFS's */
	{
		int cow = io_file_shared(io);
		uint32_t unit = cow > 0 || (ii.st.flags & REF_FLAG_COW) ?
				ii.st.blocksize : 512;

		printf("dioattr.mem = 0x200\n");
		printf("dioattr.miniosz = %u\n", unit);
		printf("dioattr.maxiosz = %u\n", 2147483647u & ~(unit - 1));
	}
	return IO_OK;
}

/* lsattr [-a] [-v]: "LETTERS NAME " as xfs_io prints it. */
int io_lsattr(struct io *io, int argc, char **argv)
{
	struct inode_info ii;
	struct io_opts o;
	const char *arg;
	char fl[256];
	int c, verbose = 0, all = 0, err;

	io_opts_init(&o, argc, argv, "avRD");
	while ((c = io_opts_next(&o, &arg)) != -1) {
		if (c == 'v')
			verbose = 1;
		else if (c == 'a')
			all = 1;
		else if (c == 0) {
			fprintf(stderr, "lsattr: extra argument '%s'\n", arg);
			return IO_BAD;
		} else if (c == '?')
			return IO_BAD;
	}
	err = inode_info(io, &ii);
	if (err)
		return io_fail("lsattr", err);
	flag_text(&ii, verbose, fl, sizeof(fl));
	if (all && !verbose)
		printf("%s/%s %s \n", fl, letters, io_cur_name(io));
	else
		printf("%s %s \n", fl, io_cur_name(io));
	return IO_OK;
}

/*
 * chattr +LETTERS | -LETTERS: r (realtime), and the engine's j, o, c;
 * xfs_io's other letters name flags the engine does not have.
 */
int io_chattr(struct io *io, int argc, char **argv)
{
	struct ref_fs *fs = engine_target_fs(io->t);
	uint32_t set = 0;
	uint64_t ino;
	const char *a;
	int err;

	if (argc != 2 || (argv[1][0] != '+' && argv[1][0] != '-') || !argv[1][1]) {
		fprintf(stderr, "chattr: usage: chattr +LETTERS | -LETTERS\n");
		return IO_BAD;
	}
	a = argv[1];
	for (const char *p = a + 1; *p; p++) {
		size_t i;

		if (*p == 'r') {
			set |= REF_FLAG_REALTIME;
			continue;
		}
		for (i = 0; i < NOWN && own[i].letter != *p; i++)
			;
		if (i < NOWN) {
			set |= own[i].flag;
			continue;
		}
		if (!strchr(letters, *p) || *p == 'p' || *p == 'X') {
			fprintf(stderr, "chattr: unknown flag '%c'\n", *p);
			return IO_BAD;
		}
		fprintf(stderr, "chattr: cannot set flags on %s: the engine has "
			"no '%c' flag (%s)\n", io_cur_name(io), *p,
			long_names[strchr(letters, *p) - letters]);
		return IO_FAILED;
	}
	err = io_cur_ino(io, &ino);
	if (err == -ENOENT)
		err = ref_create(fs, io_cur_name(io), &ino);
	if (!err)
		err = ref_set_flags(fs, ino, a[0] == '+' ? set : 0,
				    a[0] == '-' ? set : 0);
	if (err) {
		fprintf(stderr, "chattr: cannot set flags on %s: %s\n",
			io_cur_name(io), strerror(-err));
		return IO_FAILED;
	}
	return IO_OK;
}

int io_statfs(struct io *io, int argc, char **argv)
{
	struct ref_statfs st;
	int err;

	if (argc > 1) {
		fprintf(stderr, "statfs: extra argument '%s'\n", argv[1]);
		return IO_BAD;
	}
	err = ref_statfs(engine_target_fs(io->t), &st);
	if (err)
		return io_fail("statfs", err);
	printf("statfs.f_bsize = %u\n", st.blocksize);
	printf("statfs.f_blocks = %" PRIu64 "\n", st.total_blocks);
	printf("statfs.f_bfree = %" PRIu64 "\n", st.free_blocks);
	printf("statfs.f_bavail = %" PRIu64 "\n", st.avail_blocks);
	printf("statfs.f_files = %" PRIu64 "\n", st.inodes);
	printf("statfs.f_ffree = %" PRIu64 "\n", st.free_inodes);
	if (st.rtextsize) {
		printf("statfs.f_rtblocks = %" PRIu64 "\n", st.rt_blocks);
		printf("statfs.f_rtbfree = %" PRIu64 "\n", st.rt_free_blocks);
		printf("statfs.f_rtbavail = %" PRIu64 "\n", st.rt_avail_blocks);
		printf("geom.rtextsize = %u\n", st.rtextsize / st.blocksize);
	}
	return IO_OK;
}

static void print_counter(void *arg, const char *name, uint64_t v)
{
	(void)arg;
	printf("%s = %" PRIu64 "\n", name, v);
}

int io_counters(struct io *io, int argc, char **argv)
{
	if (argc > 1) {
		fprintf(stderr, "counters: extra argument '%s'\n", argv[1]);
		return IO_BAD;
	}
	ref_counters_foreach(ref_counters(engine_target_fs(io->t)),
			     print_counter, NULL);
	return IO_OK;
}
