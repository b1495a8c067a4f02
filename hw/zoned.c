/*
 * zoned.c - "zoned:mem,...", "zoned:null,..." and "zoned:file,...":
 * emulated zoned devices.  The rules live in zone_model.c; this file turns
 * a spec into a zone geometry and a byte store, and keeps a file's zone
 * state across runs.
 *
 *   zoned:mem,size=1g,zone=64m,cap=48m,conv=2,append_max=672k,max_open=14,max_active=14
 *   zoned:null,size=32g,zone=16g,append_max=672k   (stores no data)
 *   zoned:file,path=img,size=1g,zone=64m,...
 *
 * Option names are null_blk's where it has one: zone (zone_size), cap
 * (zone_capacity), conv (zone_nr_conv), max_open (zone_max_open),
 * max_active (zone_max_active), append_max (zone_append_max_sectors,
 * here in bytes); readonly=N and offline=N make the last zones read-only
 * or offline, for tests.  Sizes are bytes with k/m/g/t; zone defaults to
 * 256m as in null_blk, cap to zone, append_max to cap.
 *
 * zoned:file keeps the data in PATH (a plain image: zone i at byte
 * i * zone) and the zone state in PATH.zones:
 *
 *   0      header: "FSOZONES", version, crc32c, the geometry    (4 KiB)
 *   4096   one 16-byte entry per zone: wp (u64), condition (u8),
 *          3 zero bytes, crc32c of the rest and the zone number
 *
 * all little-endian.  An entry never straddles a 512-byte sector, so a
 * sector-atomic disk never tears one.  Entries are rewritten in place,
 * only for zones that changed, and synced: all of them once the image is
 * synced (every flush, every FUA write, close), one zone at its reset or
 * finish.  So a write pointer is never more durable than the data below
 * it.  A process killed between flushes comes
 * back with the write pointers of the last flush, and the bytes written
 * since then, still in PATH, read as zeros above them (lost writes, as a
 * power cut would lose them).  Open zones come back closed.  The first
 * open needs size=; later opens take the geometry from PATH.zones, and
 * options given again must agree with it.
 */
#include "hw/hw_internal.h"

#include "base/bytes.h"
#include "base/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZF_MAGIC   "FSOZONES"
#define ZF_VERSION 1u
#define ZF_HEADER  4096u
#define ZF_ENTRY   16u

struct zfile {
	int fd;
	char path[PATH_MAX + 8];
	uint8_t *buf;               /* encoded entries, nr_zones of them */
};

static uint32_t entry_crc(const uint8_t *e, uint64_t zone)
{
	uint8_t z[8];

	put64(z, zone);
	return crc32c(crc32c(0, e, 12), z, sizeof(z));
}

static void encode_entry(uint8_t *e, const struct hw_zone_state *st,
			 uint64_t zone)
{
	memset(e, 0, ZF_ENTRY);
	put64(e, st->wp);
	e[8] = st->cond;
	put32(e + 12, entry_crc(e, zone));
}

/* The geometry fields of the header, in order, after magic and crc. */
static void encode_header(uint8_t *h, const struct hw_zone_cfg *c)
{
	memset(h, 0, ZF_HEADER);
	memcpy(h, ZF_MAGIC, 8);
	put32(h + 8, ZF_VERSION);
	put64(h + 16, c->size);
	put64(h + 24, c->zone_size);
	put64(h + 32, c->capacity);
	put32(h + 40, c->nr_conv);
	put32(h + 44, c->max_open);
	put32(h + 48, c->max_active);
	put32(h + 52, c->max_append);
	put32(h + 56, c->nr_readonly);
	put32(h + 60, c->nr_offline);
	put32(h + 12, crc32c(0, h, ZF_HEADER));
}

static int decode_header(const uint8_t *raw, struct hw_zone_cfg *c,
			 const char *path, char *err, size_t errlen)
{
	uint8_t h[ZF_HEADER];

	memcpy(h, raw, ZF_HEADER);
	put32(h + 12, 0);
	if (memcmp(h, ZF_MAGIC, 8) || get32(h + 8) != ZF_VERSION ||
	    crc32c(0, h, ZF_HEADER) != get32(raw + 12))
		return hw_errf(err, errlen, -EUCLEAN,
			       "'%s' is not a zone state file of version %u, or its header is corrupt",
			       path, ZF_VERSION);
	c->size = get64(h + 16);
	c->zone_size = get64(h + 24);
	c->capacity = get64(h + 32);
	c->nr_conv = get32(h + 40);
	c->max_open = get32(h + 44);
	c->max_active = get32(h + 48);
	c->max_append = get32(h + 52);
	c->nr_readonly = get32(h + 56);
	c->nr_offline = get32(h + 60);
	return 0;
}

/* All of len, or -errno; a read that meets the end is -ENODATA. */
static int full_io(int fd, uint8_t *p, size_t len, uint64_t off, bool write)
{
	while (len) {
		ssize_t n = write ? pwrite(fd, p, len, (off_t)off)
				  : pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : write ? -EIO : -ENODATA;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int full_pwrite(int fd, const uint8_t *p, size_t len, uint64_t off)
{
	return full_io(fd, (uint8_t *)p, len, off, true);
}

static int full_pread(int fd, uint8_t *p, size_t len, uint64_t off)
{
	return full_io(fd, p, len, off, false);
}

static int sync_fd(int fd)
{
	while (fdatasync(fd))
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* hw_zone_save_fn: rewrite each run of entries asked for, then sync. */
static int zfile_save(void *arg, const struct hw_zone_state *st,
		      const uint8_t *which, uint64_t nr)
{
	struct zfile *zf = arg;
	uint64_t i = 0, j;
	int rc;

	while (i < nr) {
		if (!which[i]) {
			i++;
			continue;
		}
		for (j = i; j < nr && which[j]; j++)
			encode_entry(zf->buf + j * ZF_ENTRY, &st[j], j);
		rc = full_pwrite(zf->fd, zf->buf + i * ZF_ENTRY,
				 (size_t)((j - i) * ZF_ENTRY),
				 ZF_HEADER + i * ZF_ENTRY);
		if (rc)
			return rc;
		i = j;
	}
	return sync_fd(zf->fd);
}

static void zfile_release(void *arg)
{
	struct zfile *zf = arg;

	if (!zf)
		return;
	if (zf->fd >= 0)
		close(zf->fd);
	free(zf->buf);
	free(zf);
}

/* The saved zone states of zf (a file that passed decode_header). */
static int load_entries(struct zfile *zf, uint64_t nr,
			struct hw_zone_state *st, char *err, size_t errlen)
{
	int rc = full_pread(zf->fd, zf->buf, (size_t)(nr * ZF_ENTRY), ZF_HEADER);

	if (rc)
		return hw_errf(err, errlen, rc == -ENODATA ? -EUCLEAN : rc,
			       "cannot read %llu zone entries from '%s': %s",
			       (unsigned long long)nr, zf->path,
			       rc == -ENODATA ? "file too short" : strerror(-rc));
	for (uint64_t i = 0; i < nr; i++) {
		const uint8_t *e = zf->buf + i * ZF_ENTRY;

		if (get32(e + 12) != entry_crc(e, i) || e[9] || e[10] || e[11])
			return hw_errf(err, errlen, -EUCLEAN,
				       "zone %llu in '%s': corrupt entry (bad checksum)",
				       (unsigned long long)i, zf->path);
		st[i].wp = get64(e);
		st[i].cond = e[8];
	}
	return 0;
}

/* The geometry from the spec's options, starting from base. */
static int spec_cfg(const struct hw_opts *o, const struct hw_zone_cfg *base,
		    struct hw_zone_cfg *c, char *err, size_t errlen)
{
	uint32_t append = base->max_append;
	int rc;

	*c = *base;
	if ((rc = hw_opts_u64(o, "size", base->size, &c->size, err, errlen)) ||
	    (rc = hw_opts_u64(o, "zone", base->zone_size, &c->zone_size, err, errlen)) ||
	    (rc = hw_opts_u64(o, "cap", base->capacity, &c->capacity, err, errlen)) ||
	    (rc = hw_opts_u32(o, "conv", base->nr_conv, &c->nr_conv, err, errlen)) ||
	    (rc = hw_opts_u32(o, "append_max", append, &c->max_append, err, errlen)) ||
	    (rc = hw_opts_u32(o, "max_open", base->max_open, &c->max_open, err, errlen)) ||
	    (rc = hw_opts_u32(o, "max_active", base->max_active, &c->max_active, err, errlen)) ||
	    (rc = hw_opts_u32(o, "readonly", base->nr_readonly, &c->nr_readonly, err, errlen)) ||
	    (rc = hw_opts_u32(o, "offline", base->nr_offline, &c->nr_offline, err, errlen)))
		return rc;
	/* A zone given without cap gets cap = zone, not the old capacity. */
	if (hw_opts_get(o, "zone") && !hw_opts_get(o, "cap"))
		c->capacity = 0;
	if (c->size == 0)
		return hw_errf(err, errlen, -EINVAL,
			       "missing size in '%s' (usage: %s)", o->spec,
			       o->usage);
	return hw_zone_cfg_check(c, o->spec, err, errlen);
}

static const struct hw_zone_cfg default_cfg = {
	.zone_size = 256ull << 20,      /* null_blk's default */
};

/*
 * zoned:mem and zoned:null: the zone model over a store of that kind and
 * the spec's size.  Over null: the rules hold and the write pointers move
 * as on any zoned device, but data is dropped and reads return zeros
 * (HW_META writes are kept, as null: keeps them): counting runs of
 * devices larger than this machine's memory.
 */
static int zoned_store(const struct hw_opts *o, const char *kind,
		       struct hw_dev **out, char *err, size_t errlen)
{
	struct hw_zone_cfg c;
	struct hw_dev *store;
	char spec[64];
	int rc;

	if (hw_opts_get(o, "path"))
		return hw_errf(err, errlen, -EINVAL,
			       "path= in '%s' is for zoned:file", o->spec);
	rc = spec_cfg(o, &default_cfg, &c, err, errlen);
	if (rc)
		return rc;
	snprintf(spec, sizeof(spec), "%s:%llu", kind,
		 (unsigned long long)c.size);
	rc = hw_open(spec, &store, err, errlen);
	if (rc)
		return rc;
	return hw_zoned_new(&c, store, NULL,
			    strcmp(kind, "null") ? kind :
			    "null (data dropped, reads zeros)",
			    NULL, NULL, NULL, out, err, errlen);
}

/*
 * Open an existing PATH.zones: its geometry, checked against what the
 * spec says, and its entries.  *st is allocated.
 */
static int zfile_load(struct zfile *zf, const struct hw_opts *o,
		      struct hw_zone_cfg *c, struct hw_zone_state **st,
		      char *err, size_t errlen)
{
	uint8_t h[ZF_HEADER];
	struct hw_zone_cfg want;
	uint64_t nr;
	int rc;

	rc = full_pread(zf->fd, h, sizeof(h), 0);
	if (rc)
		return hw_errf(err, errlen, rc == -ENODATA ? -EUCLEAN : rc,
			       "cannot read the header of '%s': %s", zf->path,
			       rc == -ENODATA ? "file too short" : strerror(-rc));
	rc = decode_header(h, c, zf->path, err, errlen);
	if (rc)
		return rc;
	want = *c;
	rc = hw_zone_cfg_check(&want, zf->path, err, errlen);
	if (rc || memcmp(&want, c, sizeof(want)))
		return hw_errf(err, errlen, -EUCLEAN,
			       "'%s' holds a zone geometry that breaks the rules (corrupt)",
			       zf->path);
	rc = spec_cfg(o, c, &want, err, errlen);
	if (rc)
		return rc;
	if (memcmp(&want, c, sizeof(want)))
		return hw_errf(err, errlen, -EINVAL,
			       "options in '%s' differ from the zone geometry kept in '%s' (size %llu, zone %llu, cap %llu, conv %u, append_max %u, max_open %u, max_active %u, readonly %u, offline %u)",
			       o->spec, zf->path, (unsigned long long)c->size,
			       (unsigned long long)c->zone_size,
			       (unsigned long long)c->capacity, c->nr_conv,
			       c->max_append, c->max_open, c->max_active,
			       c->nr_readonly, c->nr_offline);
	nr = c->size / c->zone_size;
	zf->buf = malloc((size_t)(nr * ZF_ENTRY));
	*st = calloc(nr, sizeof(**st));
	if (!zf->buf || !*st)
		return hw_errf(err, errlen, -ENOMEM, "out of memory for '%s'",
			       zf->path);
	return load_entries(zf, nr, *st, err, errlen);
}

/* Create PATH.zones for geometry c: the header, synced; entries follow. */
static int zfile_create(struct zfile *zf, const struct hw_zone_cfg *c,
			char *err, size_t errlen)
{
	uint8_t h[ZF_HEADER];
	int rc;

	zf->buf = malloc((size_t)(c->size / c->zone_size * ZF_ENTRY));
	if (!zf->buf)
		return hw_errf(err, errlen, -ENOMEM, "out of memory for '%s'",
			       zf->path);
	encode_header(h, c);
	rc = full_pwrite(zf->fd, h, sizeof(h), 0);
	if (!rc)
		rc = sync_fd(zf->fd);
	if (rc)
		return hw_errf(err, errlen, rc, "cannot write '%s': %s",
			       zf->path, strerror(-rc));
	return 0;
}

static int zoned_file(const struct hw_opts *o, struct hw_dev **out,
		      char *err, size_t errlen)
{
	const char *path = hw_opts_get(o, "path");
	struct hw_zone_state *st = NULL;
	bool new_state = false, new_image;
	struct hw_zone_cfg c;
	struct hw_dev *store = NULL;
	struct zfile *zf;
	char spec[PATH_MAX + 48], what[PATH_MAX + 32], zpath[PATH_MAX + 8];
	int rc;

	if (!path)
		return hw_errf(err, errlen, -EINVAL,
			       "missing path= in '%s' (usage: %s)", o->spec,
			       o->usage);
	if ((size_t)snprintf(zpath, sizeof(zpath), "%s.zones", path) >=
	    sizeof(zpath))
		return hw_errf(err, errlen, -ENAMETOOLONG,
			       "path in '%s' is too long", o->spec);
	zf = calloc(1, sizeof(*zf));
	if (!zf)
		return hw_errf(err, errlen, -ENOMEM, "out of memory opening '%s'",
			       o->spec);
	memcpy(zf->path, zpath, sizeof(zpath));
	new_image = access(path, F_OK) != 0;
	zf->fd = open(zpath, O_RDWR | O_CLOEXEC);
	if (zf->fd < 0 && errno == ENOENT) {
		rc = spec_cfg(o, &default_cfg, &c, err, errlen);
		if (rc)
			goto out_error;
		zf->fd = open(zpath, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0644);
		new_state = zf->fd >= 0;
	}
	if (zf->fd < 0) {
		rc = -errno;
		hw_errf(err, errlen, rc, "cannot open '%s': %s", zpath,
			strerror(-rc));
		goto out_error;
	}
	if (new_state)
		rc = zfile_create(zf, &c, err, errlen);
	else if (new_image)
		rc = hw_errf(err, errlen, -ENOENT,
			     "'%s' is missing but its zone state '%s' exists",
			     path, zpath);
	else
		rc = zfile_load(zf, o, &c, &st, err, errlen);
	if (rc)
		goto out_error;

	/* A new device creates or grows the image; an old one must fit. */
	if (new_state)
		snprintf(spec, sizeof(spec), "file:%s,size=%llu", path,
			 (unsigned long long)c.size);
	else
		snprintf(spec, sizeof(spec), "file:%s", path);
	rc = hw_open(spec, &store, err, errlen);
	if (rc)
		goto out_error;
	if (hw_size(store) < c.size) {
		rc = hw_errf(err, errlen, -EUCLEAN,
			     "'%s' holds %llu bytes, less than the %llu of its zones",
			     path, (unsigned long long)hw_size(store),
			     (unsigned long long)c.size);
		goto out_error;
	}
	snprintf(what, sizeof(what), "file %s", path);
	rc = hw_zoned_new(&c, store, st, what, zfile_save, zfile_release, zf,
			  out, err, errlen);
	store = NULL;           /* both taken over, even on error */
	zf = NULL;
	if (rc)
		goto out_error;
	free(st);
	return 0;

out_error:
	hw_close(store);
	zfile_release(zf);
	free(st);
	if (new_state)
		unlink(zpath);
	if (new_state && new_image)
		unlink(path);
	return rc;
}

static int zoned_open(const struct hw_opts *o, struct hw_dev **out,
		      char *err, size_t errlen)
{
	if (strcmp(o->first, "mem") == 0 || strcmp(o->first, "null") == 0)
		return zoned_store(o, o->first, out, err, errlen);
	if (strcmp(o->first, "file") == 0)
		return zoned_file(o, out, err, errlen);
	return hw_errf(err, errlen, -EINVAL,
		       "'%s' must say where the zones live: zoned:mem,size=SIZE,..., zoned:null,size=SIZE,... or zoned:file,path=PATH,...",
		       o->spec);
}

static const char *const zoned_keys[] = {
	"path", "size", "zone", "cap", "conv", "append_max", "max_open",
	"max_active", "readonly", "offline", NULL
};

const struct hw_backend hw_zoned_backend = {
	.kind = "zoned",
	.usage = "zoned:{mem|null|file,path=PATH},size=SIZE[,zone=SIZE,cap=SIZE,conv=N,append_max=SIZE,max_open=N,max_active=N,readonly=N,offline=N]",
	.keys = zoned_keys,
	.open = zoned_open,
};
