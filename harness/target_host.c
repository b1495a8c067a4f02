/*
 * target_host.c - a directory on this machine's own filesystem as a
 * target: real pwrite, pread, ftruncate, fallocate (KEEP_SIZE, PUNCH_HOLE,
 * ZERO_RANGE, COLLAPSE_RANGE, INSERT_RANGE, UNSHARE_RANGE),
 * copy_file_range, FICLONERANGE, fsync, fdatasync, syncfs.
 *
 * What the host filesystem supports is probed once at open, on scratch
 * files: unsupported fallocate modes and ioctls go into the unsupported
 * mask (the checker skips those ops everywhere and says so).  A kernel
 * that refuses FALLOC_FL_UNSHARE_RANGE has no shared extents to unshare,
 * so there `falloc -u` is a plain allocation, as in the engine.  There is no
 * device to cut power to, so crash is unsupported; remount closes every
 * file descriptor (a reader sees the same files), which is the part of a
 * remount a directory can do.  dedupe, exchange range and inode flags are
 * not driven here.
 */
#include "harness/target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

struct host {
	struct target t;
	char dir[512];
	int dfd;
	int owned;                  /* we made dir: remove it at destroy */
	int fd[OP_MAX_FILES];       /* -1 = not open                     */
	int no_unshare;             /* kernel refuses FALLOC_FL_UNSHARE  */
};

static const struct target_ops host_ops;

static struct host *to_host(struct target *t)
{
	return (struct host *)t;
}

const char *host_target_alone(const struct target *t)
{
	if (t->ops != &host_ops || ((const struct host *)t)->owned)
		return NULL;
	return "works in a directory it was given, which every worker would "
	       "share";
}

static int fd_of(struct host *h, unsigned i, int create)
{
	if (h->fd[i] >= 0)
		return h->fd[i];
	h->fd[i] = openat(h->dfd, h->t.names[i],
			  O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
	return h->fd[i] >= 0 ? h->fd[i] : -errno;
}

static void close_fd(struct host *h, unsigned i)
{
	if (h->fd[i] >= 0)
		close(h->fd[i]);
	h->fd[i] = -1;
}

/*
 * [off, off + len) written from wp, or read into rp (the other NULL),
 * call after call until done or a call does nothing: the bytes done, or
 * -errno when the first call fails.
 */
static int64_t do_io(int fd, const uint8_t *wp, uint8_t *rp, uint64_t len,
		     uint64_t off)
{
	uint64_t done = 0;

	while (done < len) {
		off_t at = (off_t)(off + done);
		ssize_t r = wp ? pwrite(fd, wp + done, len - done, at) :
				 pread(fd, rp + done, len - done, at);

		if (r < 0)
			return done ? (int64_t)done : -errno;
		if (r == 0)
			break;
		done += (uint64_t)r;
	}
	return (int64_t)done;
}

static int64_t do_pwrite(int fd, const uint8_t *p, uint64_t len, uint64_t off)
{
	return do_io(fd, p, NULL, len, off);
}

static int64_t do_pread(int fd, uint8_t *p, uint64_t len, uint64_t off)
{
	return do_io(fd, NULL, p, len, off);
}

static int sys_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
	return fallocate(fd, mode, (off_t)off, (off_t)len) ? -errno : 0;
}

static int64_t do_copy(int in, uint64_t off_in, int out, uint64_t off_out,
		       uint64_t len)
{
	loff_t a = (loff_t)off_in, b = (loff_t)off_out;
	uint64_t done = 0;
	struct stat st;

	/*
	 * The kernel may copy less than asked; keep going, but only up to
	 * the source EOF as it was when we started (one copy_file_range call
	 * would stop there; a second one would see the file it just grew).
	 */
	if (fstat(in, &st))
		return -errno;
	if (off_in >= (uint64_t)st.st_size)
		len = 0;
	else if (len > (uint64_t)st.st_size - off_in)
		len = (uint64_t)st.st_size - off_in;
	if (len == 0)
		return copy_file_range(in, &a, out, &b, 0, 0) < 0 ? -errno : 0;
	while (done < len) {
		ssize_t r = copy_file_range(in, &a, out, &b, len - done, 0);

		if (r < 0)
			return done ? (int64_t)done : -errno;
		if (r == 0)
			break;
		done += (uint64_t)r;
	}
	return (int64_t)done;
}

/*
 * One op on real files: the namespace and filesystem-wide ops first,
 * then the file ops on the file's descriptor, one case per kind.  It
 * stays in one piece: it is the target's op table, each case a syscall
 * or two, read beside the engine's and the model's (engine_apply,
 * model_apply).
 */
static int64_t host_apply(struct target *t, const struct op *op,
			  const void *wbuf, void *rbuf)
{
	struct host *h = to_host(t);
	unsigned f = op->file % OP_MAX_FILES, f2 = op->file2 % OP_MAX_FILES;
	int fd, fd2 = -1, keep = (op->flags & OP_FL_KEEP_SIZE) ?
		FALLOC_FL_KEEP_SIZE : 0;

	if (t->unsupported & (1ull << op->kind))
		return -EOPNOTSUPP;
	switch (op->kind) {
	case OP_OPEN:
		fd = fd_of(h, f, op->flags & OP_FL_CREATE);
		return fd < 0 ? fd : 0;
	case OP_CLOSE:
		close_fd(h, f);
		return 0;
	case OP_UNLINK:
		close_fd(h, f);
		return unlinkat(h->dfd, t->names[f], 0) ? -errno : 0;
	case OP_SYNC:
		return syncfs(h->dfd) ? -errno : 0;
	case OP_NAIVE:
	case OP_FALLBACK:
		return 0; /* the engine's switches; a kernel has none to set */
	case OP_REMOUNT:
		for (unsigned i = 0; i < OP_MAX_FILES; i++)
			close_fd(h, i);
		return syncfs(h->dfd) ? -errno : 0;
	case OP_WRITEBACK:
		for (unsigned i = 0; i < OP_MAX_FILES; i++)
			if (h->fd[i] >= 0 &&
			    sync_file_range(h->fd[i], 0, 0, SYNC_FILE_RANGE_WRITE))
				return -errno;
		return 0;
	case OP_DROP_CACHES:
		/* Per file, not the global knob: only our pages go. */
		for (unsigned i = 0; i < OP_MAX_FILES; i++)
			if (h->fd[i] >= 0) {
				int r = posix_fadvise(h->fd[i], 0, 0,
						      POSIX_FADV_DONTNEED);

				if (r)
					return -r;
			}
		return 0;
	default:
		break;
	}
	fd = fd_of(h, f, 1);
	if (fd < 0)
		return fd;
	if (op_kind_info(op->kind)->uses & OP_USE_FILE2) {
		fd2 = fd_of(h, f2, 1);
		if (fd2 < 0)
			return fd2;
	}
	switch (op->kind) {
	case OP_PWRITE:
		return do_pwrite(fd, wbuf, op->len, op->off);
	case OP_PREAD:
		return do_pread(fd, rbuf, op->len, op->off);
	case OP_TRUNCATE:
		return ftruncate(fd, (off_t)op->arg) ? -errno : 0;
	case OP_FALLOC:
		/* Without reflink there is nothing to unshare: allocate. */
		return sys_fallocate(fd, keep | ((op->flags & OP_FL_UNSHARE) &&
						 !h->no_unshare ?
					  FALLOC_FL_UNSHARE_RANGE : 0),
				     op->off, op->len);
	case OP_FPUNCH:
		return sys_fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				     op->off, op->len);
	case OP_FZERO:
		return sys_fallocate(fd, FALLOC_FL_ZERO_RANGE | keep, op->off,
				     op->len);
	case OP_FCOLLAPSE:
		return sys_fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, op->off, op->len);
	case OP_FINSERT:
		return sys_fallocate(fd, FALLOC_FL_INSERT_RANGE, op->off, op->len);
	case OP_COPY_RANGE:
		return do_copy(fd2, op->off, fd, op->arg, op->len);
	case OP_CLONE_RANGE: {
		struct file_clone_range r = {
			.src_fd = fd2, .src_offset = op->off,
			.src_length = op->len, .dest_offset = op->arg,
		};

		return ioctl(fd, FICLONERANGE, &r) ? -errno : 0;
	}
	case OP_FSYNC:
		return fsync(fd) ? -errno : 0;
	case OP_FDATASYNC:
		return fdatasync(fd) ? -errno : 0;
	default:
		return -EOPNOTSUPP;
	}
}

static int64_t host_size(struct target *t, unsigned file)
{
	struct host *h = to_host(t);
	struct stat st;

	if (fstatat(h->dfd, t->names[file % OP_MAX_FILES], &st, 0))
		return -errno;
	return (int64_t)st.st_size;
}

static int64_t host_read(struct target *t, unsigned file, uint64_t off,
			 void *buf, size_t len)
{
	struct host *h = to_host(t);
	int fd = fd_of(h, file % OP_MAX_FILES, 0);

	if (fd < 0)
		return fd;
	return do_pread(fd, buf, len, off);
}

static int host_list(struct target *t, uint32_t *mask)
{
	struct host *h = to_host(t);

	*mask = 0;
	for (unsigned i = 0; i < OP_MAX_FILES; i++) {
		struct stat st;

		if (fstatat(h->dfd, t->names[i], &st, 0) == 0)
			*mask |= 1u << i;
		else if (errno != ENOENT)
			return -errno;
	}
	return 0;
}

static int host_reset(struct target *t)
{
	struct host *h = to_host(t);

	for (unsigned i = 0; i < OP_MAX_FILES; i++) {
		close_fd(h, i);
		if (unlinkat(h->dfd, t->names[i], 0) && errno != ENOENT)
			return -errno;
	}
	return 0;
}

static void host_destroy(struct target *t)
{
	struct host *h = to_host(t);

	if (h->dfd >= 0) {
		host_reset(t);
		close(h->dfd);
		if (h->owned)
			rmdir(h->dir);
	}
	free(h);
}

static const struct target_ops host_ops = {
	.apply = host_apply,
	.size = host_size,
	.read = host_read,
	.list = host_list,
	.audit = NULL,
	.reset = host_reset,
	.destroy = host_destroy,
};

static int unsupported_errno(int e)
{
	return e == EOPNOTSUPP || e == ENOTTY || e == ENOSYS || e == EXDEV ||
	       e == EINVAL;
}

/* Try each optional call on two scratch files; note what fails. */
static void probe(struct host *h)
{
	static const char *const a = ".fsoracle-probe-a";
	static const char *const b = ".fsoracle-probe-b";
	static const struct { unsigned kind; int mode; } modes[] = {
		{ OP_FPUNCH, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE },
		{ OP_FZERO, FALLOC_FL_ZERO_RANGE },
		{ OP_FCOLLAPSE, FALLOC_FL_COLLAPSE_RANGE },
		{ OP_FINSERT, FALLOC_FL_INSERT_RANGE },
	};
	uint8_t buf[65536];
	struct stat st;
	int fa, fb;
	char what[64] = "";

	memset(buf, 0x5a, sizeof(buf));
	fa = openat(h->dfd, a, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	fb = openat(h->dfd, b, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fa < 0 || fb < 0)
		goto out;
	if (fstat(fa, &st) == 0 && st.st_blksize >= 512 && st.st_blksize <= 65536)
		h->t.blocksize = (uint32_t)st.st_blksize;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		unsigned bs = h->t.blocksize;

		if (do_pwrite(fa, buf, sizeof(buf), 0) != sizeof(buf) ||
		    (fallocate(fa, modes[i].mode, bs, bs) &&
		     unsupported_errno(errno))) {
			h->t.unsupported |= 1ull << modes[i].kind;
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 " %s", op_kind_name(modes[i].kind));
		}
		if (ftruncate(fa, 0))
			break;
	}
	if (fallocate(fa, FALLOC_FL_UNSHARE_RANGE, 0, 4096) &&
	    unsupported_errno(errno))
		h->no_unshare = 1;
	if (do_pwrite(fa, buf, sizeof(buf), 0) == sizeof(buf)) {
		struct file_clone_range r = { .src_fd = fa, .src_offset = 0,
					      .src_length = 4096,
					      .dest_offset = 0 };

		if (ioctl(fb, FICLONERANGE, &r) && unsupported_errno(errno)) {
			h->t.unsupported |= 1ull << OP_CLONE_RANGE;
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 " reflink");
		}
		if (do_copy(fa, 0, fb, 0, 4096) < 0) {
			h->t.unsupported |= 1ull << OP_COPY_RANGE;
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 " copy_range");
		}
	}
out:
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	unlinkat(h->dfd, a, 0);
	unlinkat(h->dfd, b, 0);
	snprintf(h->t.note, sizeof(h->t.note), "host filesystem: no power cut, "
		 "dedupe, exchange or inode flags here%s%.60s",
		 what[0] ? "; kernel refused:" : "", what);
}

int host_target_new(const char *dir, struct target **out, char *err,
		    size_t errlen)
{
	struct host *h = calloc(1, sizeof(*h));
	int ret;

	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	h->dfd = -1;
	for (unsigned i = 0; i < OP_MAX_FILES; i++)
		h->fd[i] = -1;
	h->t.ops = &host_ops;
	h->t.blocksize = 4096;
	h->t.unsupported = (1ull << OP_CRASH) | (1ull << OP_DEDUPE_RANGE) |
			   (1ull << OP_EXCHANGE_RANGE) | (1ull << OP_SET_FLAG);
	target_set_names(&h->t, NULL);
	if (dir) {
		snprintf(h->dir, sizeof(h->dir), "%s", dir);
		if (mkdir(h->dir, 0755) == 0)
			h->owned = 1;
		else if (errno != EEXIST) {
			ret = -errno;
			snprintf(err, errlen, "host: cannot create %s: %s", h->dir,
				 strerror(errno));
			goto out_error;
		}
	} else {
		const char *tmp = getenv("TMPDIR");

		snprintf(h->dir, sizeof(h->dir), "%s/fsoracle-host-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(h->dir)) {
			ret = -errno;
			snprintf(err, errlen, "host: mkdtemp %s: %s", h->dir,
				 strerror(errno));
			goto out_error;
		}
		h->owned = 1;
	}
	h->dfd = open(h->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (h->dfd < 0) {
		ret = -errno;
		snprintf(err, errlen, "host: cannot open %s: %s", h->dir,
			 strerror(errno));
		goto out_error;
	}
	snprintf(h->t.name, sizeof(h->t.name), "host:%.120s", h->dir);
	probe(h);
	*out = &h->t;
	return 0;
out_error:
	if (h->owned)
		rmdir(h->dir);
	if (h->dfd >= 0)
		close(h->dfd);
	free(h);
	return ret;
}
