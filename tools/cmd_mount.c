/*
 * cmd_mount.c - `fsoracle mount`: the engine as a FUSE filesystem, so
 * fio, xfs_io, fsx and small C benchmarks run on it unchanged.
 *
 * The engine is opened exactly as `fsoracle io` opens it (the engine
 * target: the same device specs, mkfs of a new RAM device, mount
 * options), then served through libfuse3's path-based API by one thread
 * (the engine is not thread-safe).  The engine's flat namespace is the
 * root directory; a hidden directory holds the control files:
 *
 *   MNT/                    the engine's files, nothing else in readdir
 *   MNT/.fsoracle/counters  the work counters, `name = value` lines as
 *                           `fsoracle io -c counters` prints them (a
 *                           snapshot taken at open)
 *   MNT/.fsoracle/reset     any write sets every counter to zero
 *   MNT/.fsoracle/paths     the seed-path switches, `naive=... fallback=...`
 *
 * File flags (chattr +r/+j/+c/+o of `fsoracle io`) travel as the
 * extended attribute user.fsoracle.flags: set "+o" or "-j+c", read back
 * the set ones ("+o"); chattr(1)'s +j and +c and xfs_io's chattr +r
 * reach them too, through the inode-flag ioctls.  O_DIRECT opens bypass
 * the kernel's page cache (FUSE direct_io), so a direct write reaches the
 * engine as the caller made it.  The kernel
 * page cache of a file is dropped at every open (no kernel_cache), so a
 * read after reopening reaches the engine.
 *
 * SIGTERM, SIGINT or `fusermount3 -u` end the loop; the engine then
 * unmounts (a file: image is committed and marked clean).  A SIGKILL
 * leaves the image as a power cut would: the next mount recovers it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/target.h"
#include "tools/cmds.h"
#include "tools/common.h"

static const char usage[] =
"usage: fsoracle mount [-f] [-o MOUNTOPTS] [-m MKFSOPTS] [-r|--rtdev RTDEV]\n"
"                      DEV MOUNTPOINT\n"
"\n"
"Serve the engine on DEV as a FUSE filesystem at MOUNTPOINT (libfuse3).\n"
"A mem: or null: device is formatted first (-m MKFSOPTS, see `fsoracle\n"
"mkfs --help`) and lives as long as the mount; a file: device must hold a\n"
"filesystem (`fsoracle mkfs`).  Without -f the command returns once the\n"
"mount is live and the filesystem is served from the background.\n"
"`fusermount3 -u MOUNTPOINT` or SIGTERM unmounts: the engine commits and\n"
"a file: image is left clean (the server exits just after the unmount\n"
"returns: wait for it before reading the image).  After a SIGKILL, run\n"
"`fusermount3 -u MOUNTPOINT` and mount again: the journal is recovered.\n"
"\n"
"The engine's flat namespace is the root directory: create, open, read,\n"
"write (O_DIRECT: straight to the engine), truncate, unlink, rename,\n"
"stat, statfs, fsync, fdatasync, fallocate (allocate, keep-size, punch,\n"
"zero range), copy_file_range (a clone on a reflink=1 filesystem when\n"
"the range is block-aligned), lseek SEEK_DATA/SEEK_HOLE, the inode-flag\n"
"ioctls (chattr +j +c, xfs_io chattr +r).  FUSE passes no collapse,\n"
"insert or unshare range, FICLONE, dedupe or FIEMAP (EOPNOTSUPP); other\n"
"ioctls: ENOTTY; directories, links, device nodes: EPERM; chmod, chown:\n"
"EPERM (no owners or modes are kept); times are the mount's.\n"
"\n"
"  MOUNTPOINT/.fsoracle/counters  the work counters (name = value lines)\n"
"  MOUNTPOINT/.fsoracle/reset     write anything: counters back to zero\n"
"  MOUNTPOINT/.fsoracle/paths     the seed-path switches; write\n"
"                                 'naive=PATHS fallback=PATHS' to set them\n"
"  xattr user.fsoracle.flags      file flags: +r realtime, +j journal\n"
"                                 data, +c compress, +o always COW\n"
"                                 (reflink=1); set '+o' or '-j', read\n"
"                                 back the set ones (+o only here; the\n"
"                                 others also by chattr and xfs_io)\n"
"\n"
"  -f        stay in the foreground\n"
"  -o OPTS   engine mount options, as `fsoracle io -o`: ro, cache=N,\n"
"            pagecache=N, data=ordered|journal|writeback, delalloc,\n"
"            compress=zstd[:LEVEL], naive=PATHS, fallback=PATHS, ...\n"
"  -m OPTS   mkfs options for mem:/null: devices (reflink=1, bs=4k, ...)\n"
"  -r, --rtdev RTDEV   the realtime device\n"
"\n"
"Exit status: 0 mounted (and, with -f, cleanly unmounted), 2 bad usage,\n"
"a bad mount option, or a mount point that is missing or busy, 3 no FUSE\n"
"(no /dev/fuse, or a build without libfuse3) or the mount failed, 4 the\n"
"image is corrupted or not an fsoracle filesystem.\n";

#if !defined(FSO_HAVE_FUSE) || defined(FSO_NO_EXTERNAL_LIBS)

int cmd_mount(int argc, char **argv)
{
	prog_cmd = "fsoracle mount";
	if (wants_help(argc, argv)) {
		fputs(usage, stdout);
		puts("\nThis build has no FUSE support (built without libfuse3).");
		return 0;
	}
	errmsg("this build has no FUSE support (built without external "
	       "libraries or without libfuse3-dev): mount is unavailable");
	return EXIT_IO;
}

#else

#define FUSE_USE_VERSION 35
#include <fuse.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <time.h>

#include "tools/mount_ctl.h"

struct mnt {
	struct target *t;
	struct ref_fs *fs;
	struct timespec t0;         /* every file's times: the mount's */
	uid_t uid;
	gid_t gid;
};

static struct mnt *mnt(void)
{
	return fuse_get_context()->private_data;
}

/* What a path names: the root, the control directory, a control file or
 * an engine file (name points past the '/'). */
enum node { N_ROOT, N_CTLDIR, N_CTL, N_FILE, N_NONE };

static enum node classify(const char *path, const char **name)
{
	const char *p = path + 1;
	size_t cl = strlen(CTL_DIR);

	*name = p;
	if (!*p)
		return N_ROOT;
	if (!strncmp(p, CTL_DIR, cl) && (p[cl] == 0 || p[cl] == '/')) {
		if (!p[cl])
			return N_CTLDIR;
		*name = p + cl + 1;
		return ctl_find(*name) ? N_CTL : N_NONE;
	}
	return strchr(p, '/') ? N_NONE : N_FILE;
}

static int lookup(const char *path, uint64_t *ino)
{
	const char *name;
	enum node n = classify(path, &name);

	if (n == N_FILE)
		return ref_lookup(mnt()->fs, name, ino);
	return n == N_NONE ? -ENOENT : -EISDIR;
}

/* The file's inode: from its open handle, else by name. */
static int ino_of(const char *path, struct fuse_file_info *fi, uint64_t *ino)
{
	if (fi && fi->fh) {
		*ino = fi->fh;
		return 0;
	}
	return path ? lookup(path, ino) : -EBADF;
}

static void fill_times(struct stat *st)
{
	st->st_atim = st->st_mtim = st->st_ctim = mnt()->t0;
	st->st_uid = mnt()->uid;
	st->st_gid = mnt()->gid;
}

static int op_getattr(const char *path, struct stat *st,
		      struct fuse_file_info *fi)
{
	struct ref_stat rs;
	const char *name;
	enum node n = classify(path, &name);
	uint64_t ino;
	int err;

	memset(st, 0, sizeof(*st));
	fill_times(st);
	switch (n) {
	case N_ROOT:
	case N_CTLDIR:
		st->st_mode = S_IFDIR | (n == N_ROOT ? 0755 : 0555);
		st->st_nlink = 2;
		return 0;
	case N_CTL:
		st->st_mode = S_IFREG | ctl_find(name)->mode;
		st->st_nlink = 1;
		st->st_size = (off_t)ctl_size(mnt()->fs, ctl_find(name));
		return 0;
	case N_NONE:
		return -ENOENT;
	case N_FILE:
		break;
	}
	err = ino_of(path, fi, &ino);
	if (!err)
		err = ref_stat(mnt()->fs, ino, &rs);
	if (err)
		return err;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_ino = rs.ino;
	st->st_size = (off_t)rs.size;
	st->st_blocks = (blkcnt_t)(rs.blocks * (rs.blocksize / 512));
	st->st_blksize = (blksize_t)rs.blocksize;
	return 0;
}

struct dir_fill {
	void *buf;
	fuse_fill_dir_t filler;
};

static int dir_one(void *arg, const char *name, uint64_t ino)
{
	struct dir_fill *d = arg;

	(void)ino;
	return d->filler(d->buf, name, NULL, 0, 0) ? 1 : 0;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	struct dir_fill d = { buf, filler };
	const char *name;
	enum node n = classify(path, &name);

	(void)off, (void)fi, (void)flags;
	if (n != N_ROOT && n != N_CTLDIR)
		return n == N_NONE ? -ENOENT : -ENOTDIR;
	filler(buf, ".", NULL, 0, 0);
	filler(buf, "..", NULL, 0, 0);
	if (n == N_CTLDIR) {
		for (const struct ctl *c = ctl_first(); c; c = ctl_next(c))
			filler(buf, c->name, NULL, 0, 0);
		return 0;
	}
	return ref_readdir(mnt()->fs, dir_one, &d);
}

static void open_flags(struct fuse_file_info *fi, uint64_t ino)
{
	fi->fh = ino;
	fi->direct_io = (fi->flags & O_DIRECT) ? 1 : 0;
	fi->keep_cache = 0;
}

static int open_ctl(const char *name, struct fuse_file_info *fi)
{
	struct ctl_snap *s;
	int err = ctl_open(mnt()->fs, ctl_find(name), fi->flags & O_ACCMODE, &s);

	if (err)
		return err;
	fi->fh = (uint64_t)(uintptr_t)s;
	fi->direct_io = 1; /* sizes change under the kernel's feet */
	return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	const char *name;
	enum node n = classify(path, &name);
	uint64_t ino;
	int err;

	if (n == N_CTL)
		return open_ctl(name, fi);
	err = lookup(path, &ino);
	if (!err)
		open_flags(fi, ino);
	return err;
}

/* A new file: create, or open what is there unless O_EXCL. */
static int make_file(const char *path, mode_t mode, uint64_t *ino, int excl)
{
	const char *name;
	enum node n = classify(path, &name);
	int err;

	if (!S_ISREG(mode))
		return -EPERM;
	if (n != N_FILE)
		return n == N_NONE ? -ENOENT : -EEXIST;
	err = ref_create(mnt()->fs, name, ino);
	if (err == -EEXIST && !excl)
		err = ref_lookup(mnt()->fs, name, ino);
	return err == -ENFILE ? -ENOSPC : err; /* the inode table is full */
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	uint64_t ino;
	int err = make_file(path, S_IFREG | (mode & 07777), &ino,
			    !!(fi->flags & O_EXCL));

	if (!err)
		open_flags(fi, ino);
	return err;
}

static int op_mknod(const char *path, mode_t mode, dev_t rdev)
{
	uint64_t ino;

	(void)rdev;
	return make_file(path, mode, &ino, 1);
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	const char *name;

	if (path && classify(path, &name) == N_CTL)
		ctl_close((struct ctl_snap *)(uintptr_t)fi->fh);
	return 0;
}

static int op_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	const char *name;
	uint64_t ino;
	int64_t r;
	int err;

	if (classify(path, &name) == N_CTL)
		return ctl_read((struct ctl_snap *)(uintptr_t)fi->fh, buf, size,
				(uint64_t)off);
	err = ino_of(path, fi, &ino);
	if (err)
		return err;
	r = ref_pread(mnt()->fs, ino, buf, size, (uint64_t)off);
	return (int)r;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	const char *name;
	uint64_t ino, done = 0;
	int err;

	if (classify(path, &name) == N_CTL)
		return ctl_write(mnt()->fs, (struct ctl_snap *)(uintptr_t)fi->fh,
				 buf, size);
	err = ino_of(path, fi, &ino);
	if (err)
		return err;
	/* a short engine write is retried, which says why it stopped */
	while (done < size) {
		int64_t r = ref_pwrite(mnt()->fs, ino, buf + done, size - done,
				       (uint64_t)off + done);

		if (r <= 0)
			return done ? (int)done : (int)(r ? r : -EIO);
		done += (uint64_t)r;
	}
	return (int)done;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	const char *name;
	uint64_t ino;
	int err;

	if (classify(path, &name) == N_CTL) /* `echo 1 > reset` truncates */
		return (ctl_find(name)->mode & 0200) ? 0 : -EACCES;
	if (size < 0)
		return -EINVAL;
	err = ino_of(path, fi, &ino);
	return err ? err : ref_truncate(mnt()->fs, ino, (uint64_t)size);
}

static int op_unlink(const char *path)
{
	const char *name;
	enum node n = classify(path, &name);

	if (n != N_FILE)
		return n == N_NONE ? -ENOENT : -EPERM;
	return ref_unlink(mnt()->fs, name);
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	const char *a, *b;
	uint64_t ino;

	if (classify(from, &a) != N_FILE || classify(to, &b) != N_FILE)
		return -EPERM;
	if (flags & ~(unsigned)RENAME_NOREPLACE)
		return -EINVAL; /* RENAME_EXCHANGE, RENAME_WHITEOUT */
	if ((flags & RENAME_NOREPLACE) && !ref_lookup(mnt()->fs, b, &ino))
		return -EEXIST;
	return ref_rename(mnt()->fs, a, b);
}

static int op_statfs(const char *path, struct statvfs *sv)
{
	struct ref_statfs st;
	int err = ref_statfs(mnt()->fs, &st);

	(void)path;
	if (err)
		return err;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = sv->f_frsize = st.blocksize;
	sv->f_blocks = st.total_blocks;
	sv->f_bfree = st.free_blocks;
	sv->f_bavail = st.avail_blocks;
	sv->f_files = st.inodes;
	sv->f_ffree = sv->f_favail = st.free_inodes;
	sv->f_namemax = REF_NAME_MAX;
	return 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	const char *name;
	uint64_t ino;
	int err;

	if (classify(path, &name) != N_FILE)
		return 0;
	err = ino_of(path, fi, &ino);
	if (err)
		return err;
	return datasync ? ref_fdatasync(mnt()->fs, ino) :
			  ref_fsync(mnt()->fs, ino);
}

static int op_fsyncdir(const char *path, int datasync,
		       struct fuse_file_info *fi)
{
	(void)path, (void)datasync, (void)fi;
	return ref_sync(mnt()->fs);
}

static int op_fallocate(const char *path, int mode, off_t off, off_t len,
			struct fuse_file_info *fi)
{
	unsigned m = 0;
	uint64_t ino;
	int err;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
		     FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if (off < 0 || len <= 0)
		return -EINVAL;
	if (mode & FALLOC_FL_KEEP_SIZE)
		m |= REF_FALLOC_KEEP_SIZE;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		m |= REF_FALLOC_PUNCH_HOLE;
	if (mode & FALLOC_FL_ZERO_RANGE)
		m |= REF_FALLOC_ZERO_RANGE;
	err = ino_of(path, fi, &ino);
	return err ? err : ref_fallocate(mnt()->fs, ino, m, (uint64_t)off,
					 (uint64_t)len);
}

/*
 * copy_file_range: cut at the source's EOF, then a clone where the
 * engine takes one (reflink=1 and FICLONERANGE's alignment), else a copy.
 * Both leave the same bytes; only the blocks differ.
 */
static ssize_t op_copy_file_range(const char *pin, struct fuse_file_info *fin,
				  off_t oin, const char *pout,
				  struct fuse_file_info *fout, off_t oout,
				  size_t len, int flags)
{
	struct ref_fs *fs = mnt()->fs;
	struct ref_stat src, dst;
	uint64_t in, out;
	int err;

	if (flags)
		return -EINVAL;
	err = ino_of(pin, fin, &in);
	if (!err)
		err = ino_of(pout, fout, &out);
	if (!err)
		err = ref_stat(fs, in, &src);
	if (!err)
		err = ref_stat(fs, out, &dst);
	if (err)
		return err;
	if ((uint64_t)oin >= src.size)
		return 0;
	if (len > src.size - (uint64_t)oin)
		len = src.size - (uint64_t)oin;
	if ((uint64_t)oin % src.blocksize == 0 &&
	    (uint64_t)oout % src.blocksize == 0 &&
	    (len % src.blocksize == 0 ||
	     ((uint64_t)oin + len == src.size &&
	      (uint64_t)oout + len >= dst.size))) {
		err = ref_clone_range(fs, out, (uint64_t)oout, in, (uint64_t)oin,
				      len);
		if (!err)
			return (ssize_t)len;
		if (err != -EOPNOTSUPP && err != -EINVAL)
			return err;
	}
	return ref_copy_range(fs, out, (uint64_t)oout, in, (uint64_t)oin, len);
}

struct seek_state {
	uint64_t pos;      /* in: the offset; out: the answer       */
	uint32_t bs;
	int hole;          /* SEEK_HOLE: skip mapped ranges         */
	int found;
};

static int seek_one(void *arg, const struct ref_extent *e)
{
	struct seek_state *s = arg;
	uint64_t a = e->fileoff * s->bs, b = (e->fileoff + e->len) * s->bs;

	if (b <= s->pos)
		return 0;
	if (s->hole) {
		if (a > s->pos)
			return 1; /* a hole starts at pos */
		s->pos = b;
		return 0;
	}
	if (a > s->pos)
		s->pos = a;
	s->found = 1;
	return 1;
}

/*
 * SEEK_DATA and SEEK_HOLE from the data fork.  Delayed pages are written
 * back first so their data has blocks to show; unwritten extents count
 * as data (allowed, and what a reader cannot tell from zeros anyway).
 */
static off_t op_lseek(const char *path, off_t off, int whence,
		      struct fuse_file_info *fi)
{
	struct seek_state s = { .pos = (uint64_t)off, .hole = whence == SEEK_HOLE };
	struct ref_stat st;
	uint64_t ino;
	int err;

	const char *name;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (classify(path, &name) == N_CTL) { /* all data */
		uint64_t len = ctl_snap_len((struct ctl_snap *)(uintptr_t)fi->fh);

		if (off < 0 || (uint64_t)off >= len)
			return -ENXIO;
		return whence == SEEK_DATA ? off : (off_t)len;
	}
	err = ino_of(path, fi, &ino);
	if (!err)
		err = ref_writeback(mnt()->fs, ino);
	if (!err)
		err = ref_stat(mnt()->fs, ino, &st);
	if (err)
		return err;
	if (off < 0 || (uint64_t)off >= st.size)
		return -ENXIO;
	s.bs = st.blocksize;
	err = ref_bmap(mnt()->fs, ino, seek_one, &s);
	if (err < 0)
		return err;
	if (!s.hole && !s.found)
		return -ENXIO;
	return (off_t)(s.pos < st.size ? s.pos : st.size);
}

static int op_setxattr(const char *path, const char *name, const char *value,
		       size_t size, int flags)
{
	uint32_t set, clear;
	uint64_t ino;
	int err;

	(void)flags;
	err = lookup(path, &ino);
	if (err || strcmp(name, FLAGS_XATTR))
		return err && err != -EISDIR ? err : -EOPNOTSUPP;
	if (!err)
		err = flags_parse(value, size, &set, &clear);
	return err ? err : ref_set_flags(mnt()->fs, ino, set, clear);
}

static int op_getxattr(const char *path, const char *name, char *value,
		       size_t size)
{
	struct ref_stat st;
	char s[16];
	uint64_t ino;
	size_t n;
	int err = lookup(path, &ino);

	if (err || strcmp(name, FLAGS_XATTR))
		return err && err != -EISDIR ? err : -ENODATA;
	err = ref_stat(mnt()->fs, ino, &st);
	if (err)
		return err;
	n = flags_format(st.flags, s, sizeof(s));
	if (size == 0)
		return (int)n;
	if (size < n)
		return -ERANGE;
	memcpy(value, s, n);
	return (int)n;
}

static int op_listxattr(const char *path, char *list, size_t size)
{
	uint64_t ino;
	int err = lookup(path, &ino);

	if (err)
		return err == -EISDIR ? 0 : err;
	if (size == 0)
		return sizeof(FLAGS_XATTR);
	if (size < sizeof(FLAGS_XATTR))
		return -ERANGE;
	memcpy(list, FLAGS_XATTR, sizeof(FLAGS_XATTR));
	return sizeof(FLAGS_XATTR);
}

static int op_removexattr(const char *path, const char *name)
{
	uint64_t ino;
	int err = lookup(path, &ino);

	if (err || strcmp(name, FLAGS_XATTR))
		return err && err != -EISDIR ? err : -ENODATA;
	return ref_set_flags(mnt()->fs, ino, 0, FLAGS_USER);
}

static int op_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	uint64_t ino;
	const char *name;

	(void)tv;
	if (classify(path, &name) != N_FILE)
		return 0;
	return ino_of(path, fi, &ino); /* times are not kept */
}

static int op_eperm_mode(const char *path, mode_t mode,
			 struct fuse_file_info *fi)
{
	(void)path, (void)mode, (void)fi;
	return -EPERM;
}

static int op_eperm_own(const char *path, uid_t uid, gid_t gid,
			struct fuse_file_info *fi)
{
	(void)path, (void)uid, (void)gid, (void)fi;
	return -EPERM;
}

static int op_eperm_mkdir(const char *path, mode_t mode)
{
	(void)path, (void)mode;
	return -EPERM;
}

static int op_eperm_link(const char *a, const char *b)
{
	(void)a, (void)b;
	return -EPERM;
}

static int op_rmdir(const char *path)
{
	const char *name;

	return classify(path, &name) == N_FILE ? -ENOTDIR : -EPERM;
}

/*
 * The inode-flag ioctls the kernel turns chattr and xfs_io's chattr into
 * (FS_IOC_[GS]ETFLAGS, FS_IOC_FS[GS]ETXATTR): +j and +c are ext4's
 * journal-data and compress flags, xfs_io's +t (realtime) is XFS's;
 * always-COW has no such flag and lives in the xattr only.  Bits that
 * one ioctl cannot express are left as they are; any other bit asked
 * for is -EOPNOTSUPP.  Every other ioctl: -ENOTTY.
 */
#define FSFLAGS_OURS (FS_JOURNAL_DATA_FL | FS_COMPR_FL)

static uint32_t ref_from_fsflags(unsigned f)
{
	return ((f & FS_JOURNAL_DATA_FL) ? REF_FLAG_JOURNAL_DATA : 0) |
	       ((f & FS_COMPR_FL) ? REF_FLAG_COMPRESS : 0);
}

static int flags_ioctl(uint64_t ino, unsigned int cmd, void *data)
{
	struct ref_fs *fs = mnt()->fs;
	struct fsxattr *fx = data;
	unsigned *word = data;
	struct ref_stat st;
	uint32_t want, mask;
	int err = ref_stat(fs, ino, &st);

	if (err)
		return err;
	switch (cmd) {
	case FS_IOC_GETFLAGS:
		*word = ((st.flags & REF_FLAG_JOURNAL_DATA) ? FS_JOURNAL_DATA_FL : 0) |
			((st.flags & REF_FLAG_COMPRESS) ? FS_COMPR_FL : 0);
		return 0;
	case FS_IOC_FSGETXATTR:
		memset(fx, 0, sizeof(*fx));
		fx->fsx_xflags = (st.flags & REF_FLAG_REALTIME) ? FS_XFLAG_REALTIME : 0;
		fx->fsx_nextents = (uint32_t)st.nextents;
		return 0;
	case FS_IOC_SETFLAGS:
		if (*word & ~(unsigned)FSFLAGS_OURS)
			return -EOPNOTSUPP;
		want = ref_from_fsflags(*word);
		mask = REF_FLAG_JOURNAL_DATA | REF_FLAG_COMPRESS;
		break;
	case FS_IOC_FSSETXATTR:
		if (fx->fsx_xflags & ~(unsigned)FS_XFLAG_REALTIME)
			return -EOPNOTSUPP;
		want = (fx->fsx_xflags & FS_XFLAG_REALTIME) ? REF_FLAG_REALTIME : 0;
		mask = REF_FLAG_REALTIME;
		break;
	default:
		return -ENOTTY;
	}
	return ref_set_flags(fs, ino, want & ~st.flags & mask,
			     st.flags & ~want & mask);
}

static int op_ioctl(const char *path, unsigned int cmd, void *arg,
		    struct fuse_file_info *fi, unsigned int flags, void *data)
{
	uint64_t ino;
	int err;

	(void)arg;
	if (flags & FUSE_IOCTL_COMPAT)
		return -ENOTTY;
	if (cmd != FS_IOC_GETFLAGS && cmd != FS_IOC_SETFLAGS &&
	    cmd != FS_IOC_FSGETXATTR && cmd != FS_IOC_FSSETXATTR)
		return -ENOTTY;
	err = ino_of(path, fi, &ino);
	return err ? err : flags_ioctl(ino, cmd, data);
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Every change goes through this one server, but a size the engine
	 * sets (copy, fallocate) must never hide behind a cached one. */
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->kernel_cache = 0;
	cfg->use_ino = 0;
	cfg->hard_remove = 0; /* an open file unlinked is renamed, kept */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	return fuse_get_context()->private_data;
}

static const struct fuse_operations ops = {
	.init = op_init,
	.getattr = op_getattr,
	.readdir = op_readdir,
	.open = op_open,
	.create = op_create,
	.mknod = op_mknod,
	.release = op_release,
	.read = op_read,
	.write = op_write,
	.truncate = op_truncate,
	.unlink = op_unlink,
	.rename = op_rename,
	.statfs = op_statfs,
	.fsync = op_fsync,
	.fsyncdir = op_fsyncdir,
	.fallocate = op_fallocate,
	.copy_file_range = op_copy_file_range,
	.lseek = op_lseek,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.utimens = op_utimens,
	.chmod = op_eperm_mode,
	.chown = op_eperm_own,
	.mkdir = op_eperm_mkdir,
	.symlink = op_eperm_link,
	.link = op_eperm_link,
	.rmdir = op_rmdir,
	.ioctl = op_ioctl,
};

/* The mount point: a directory nobody has mounted on yet.  0 or exit status. */
static int check_mountpoint(const char *dir)
{
	char parent[4096];
	struct stat st, pst;

	if (stat(dir, &st)) {
		if (errno == ENOTCONN)
			errmsg("%s: a FUSE mount whose server is gone is still "
			       "there (fusermount3 -u %s first)", dir, dir);
		else
			errmsg("%s: %s", dir, strerror(errno));
		return EXIT_USAGE;
	}
	if (!S_ISDIR(st.st_mode)) {
		errmsg("%s: not a directory", dir);
		return EXIT_USAGE;
	}
	snprintf(parent, sizeof(parent), "%s/..", dir);
	if (stat(parent, &pst) == 0 &&
	    (st.st_dev != pst.st_dev || st.st_ino == pst.st_ino)) {
		errmsg("%s: busy: something is already mounted there", dir);
		return EXIT_USAGE;
	}
	return 0;
}

/* libfuse prints its own line on failure; say ours after it.  An
 * engine mounted read-only is a read-only mount for the kernel too. */
static int serve(struct mnt *m, const char *dir, int foreground, int rdonly)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;
	struct fuse *f;
	int rc = 0;

	if (fuse_opt_add_arg(&args, "fsoracle-mount") ||
	    fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, rdonly ? "fsname=fsoracle,subtype=fsoracle,ro" :
					     "fsname=fsoracle,subtype=fsoracle")) {
		fuse_opt_free_args(&args);
		return EXIT_IO;
	}
	f = fuse_new(&args, &ops, sizeof(ops), m);
	fuse_opt_free_args(&args);
	if (!f) {
		errmsg("libfuse could not start a session");
		return EXIT_IO;
	}
	if (fuse_mount(f, dir)) {
		errmsg("%s: the FUSE mount failed", dir);
		fuse_destroy(f);
		return EXIT_IO;
	}
	se = fuse_get_session(f);
	if (fuse_set_signal_handlers(se) || fuse_daemonize(foreground)) {
		errmsg("could not set signal handlers or go to the background");
		rc = EXIT_IO;
	} else if (fuse_loop(f) < 0) {
		rc = EXIT_IO;
	}
	fuse_remove_signal_handlers(se);
	fuse_unmount(f);
	fuse_destroy(f);
	return rc;
}

int cmd_mount(int argc, char **argv)
{
	struct target_env env = { .dev = NULL, .keep_image = 1 };
	const char *spec = NULL, *dir = NULL;
	struct mnt m = { 0 };
	struct stat st;
	char err[256];
	int foreground = 0, rc, e;

	prog_cmd = "fsoracle mount";
	if (wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f"))
			foreground = 1;
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			env.mount = argv[++i];
		else if (!strcmp(argv[i], "-m") && i + 1 < argc)
			env.mkfs = argv[++i];
		else if ((!strcmp(argv[i], "-r") || !strcmp(argv[i], "--rtdev")) &&
			 i + 1 < argc)
			env.rtdev = argv[++i];
		else if (argv[i][0] == '-' || (spec && dir)) {
			errmsg("unexpected argument '%s' (see --help)", argv[i]);
			return EXIT_USAGE;
		} else if (!spec)
			spec = argv[i];
		else
			dir = argv[i];
	}
	if (!spec || !dir) {
		errmsg("need a device and a mount point (see --help)");
		return EXIT_USAGE;
	}
	rc = check_mountpoint(dir);
	if (rc)
		return rc;
	if (stat("/dev/fuse", &st) || !S_ISCHR(st.st_mode)) {
		errmsg("/dev/fuse: no FUSE device on this machine (load the "
		       "fuse module, or give the container /dev/fuse)");
		return EXIT_IO;
	}
	e = engine_target_new(spec, ENGINE_OPTIMIZED, &env, &m.t, err, sizeof(err));
	if (e) {
		errmsg("%s", err);
		return e == -EINVAL || e == -ENODEV ? EXIT_USAGE : exit_for(e);
	}
	m.fs = engine_target_fs(m.t);
	m.uid = getuid();
	m.gid = getgid();
	clock_gettime(CLOCK_REALTIME, &m.t0);
	{
		struct ref_mount_opts mo = { 0 };

		/* valid: the engine took it */
		ref_parse_mount_opts(env.mount, &mo, err, sizeof(err));
		rc = serve(&m, dir, foreground, !!(mo.flags & REF_MOUNT_RDONLY));
	}
	target_list_close(&m.t, 1); /* unmount: a file: image is left clean */
	return rc;
}

#endif
