/*
 * mount_ctl.h - what `fsoracle mount` adds to the engine's namespace, kept
 * apart from libfuse so every build has it: the control files under
 * MOUNTPOINT/.fsoracle (counters, reset, paths) and the file-flag words
 * of the user.fsoracle.flags extended attribute.
 */
#ifndef FSORACLE_TOOLS_MOUNT_CTL_H
#define FSORACLE_TOOLS_MOUNT_CTL_H

#include <stddef.h>
#include <stdint.h>

#include "ref/ref.h"

#define CTL_DIR     ".fsoracle"
#define FLAGS_XATTR "user.fsoracle.flags"
#define FLAGS_USER  (REF_FLAG_REALTIME | REF_FLAG_JOURNAL_DATA | \
		     REF_FLAG_COW | REF_FLAG_COMPRESS)

/* One control file: its text (show) and what a write does (store). */
struct ctl {
	const char *name;
	unsigned mode;    /* permission bits: 0444 read-only, 0200 write-only */
	int (*show)(struct ref_fs *fs, char **text, size_t *len); /* malloc'd */
	int (*store)(struct ref_fs *fs, const char *buf, size_t len);
};

const struct ctl *ctl_find(const char *name);   /* NULL: no such file */
const struct ctl *ctl_first(void);
const struct ctl *ctl_next(const struct ctl *c); /* NULL after the last */
/* The length the file's text has now (0 for a write-only one). */
uint64_t ctl_size(struct ref_fs *fs, const struct ctl *c);

/* An open control file: its text as it was at open. */
struct ctl_snap;
/* accmode: O_RDONLY, O_WRONLY or O_RDWR; -EACCES where the mode forbids. */
int ctl_open(struct ref_fs *fs, const struct ctl *c, int accmode,
	     struct ctl_snap **out);
uint64_t ctl_snap_len(const struct ctl_snap *s);
int ctl_read(struct ctl_snap *s, char *buf, size_t len, uint64_t off);
/* Each write is one command to the file; returns len or -errno. */
int ctl_write(struct ref_fs *fs, struct ctl_snap *s, const char *buf,
	      size_t len);
void ctl_close(struct ctl_snap *s);

/*
 * File-flag words, as `fsoracle io`'s chattr takes them: +r realtime,
 * +j journal data, +c compress, +o always COW, '-' to clear; several
 * in one value ("+o-j", "+rj"), spaces and commas between ignored.
 * -EINVAL for anything else or nothing at all.
 */
int flags_parse(const char *v, size_t len, uint32_t *set, uint32_t *clear);
/* The set flags as one '+' word ("+jo", "" for none); returns the length. */
size_t flags_format(uint32_t flags, char *buf, size_t len);

#endif
