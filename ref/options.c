/*
 * options.c - mkfs and mount option strings ("bs=4k,maxrecs=4", "ro").
 *
 * The CLI, the harness's op-log header and the fuzzers all configure the
 * engine through these two parsers, so an option means the same thing
 * wherever it is typed.
 */
#include "ref/ref_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Split the next "key[=value]" off *sp into key/val buffers. */
static int next_opt(const char **sp, char *key, size_t klen, char *val,
		    size_t vlen)
{
	const char *s = *sp, *end = strchr(s, ','), *eq;
	size_t n;

	if (!end)
		end = s + strlen(s);
	eq = memchr(s, '=', (size_t)(end - s));
	n = (size_t)((eq ? eq : end) - s);
	if (n == 0 || n >= klen)
		return -EINVAL;
	memcpy(key, s, n);
	key[n] = 0;
	val[0] = 0;
	if (eq) {
		n = (size_t)(end - eq - 1);
		if (n >= vlen)
			return -EINVAL;
		memcpy(val, eq + 1, n);
		val[n] = 0;
	}
	*sp = *end ? end + 1 : end;
	return 0;
}

static int num(const char *v, uint32_t *out)
{
	uint64_t x;

	if (!*v || hw_parse_size(v, &x) || x > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

#define FAIL(...) do { if (err) snprintf(err, errlen, __VA_ARGS__); \
		       return -EINVAL; } while (0)

int ref_parse_mkfs_opts(const char *s, struct ref_mkfs_opts *o, char *err,
			size_t errlen)
{
	char key[32], val[64];

	while (s && *s) {
		uint32_t *field;

		if (next_opt(&s, key, sizeof(key), val, sizeof(val)))
			FAIL("mkfs options: malformed option list");
		if (!strcmp(key, "bs"))
			field = &o->blocksize;
		else if (!strcmp(key, "maxrecs"))
			field = &o->btree_maxrecs;
		else if (!strcmp(key, "inodes"))
			field = &o->inodes;
		else if (!strcmp(key, "journal"))
			field = &o->journal_blocks;
		else if (!strcmp(key, "maxext"))
			field = &o->max_extlen;
		else if (!strcmp(key, "rtextsize"))
			field = &o->rtextsize;
		else if (!strcmp(key, "reflink"))
			field = &o->reflink;
		else
			FAIL("mkfs options: unknown option '%s' (bs, maxrecs, "
			     "inodes, journal, maxext, rtextsize, reflink)", key);
		if (num(val, field))
			FAIL("mkfs options: bad value '%s' for %s", val, key);
	}
	if (o->blocksize && (o->blocksize < 512 || o->blocksize > 65536 ||
			     (o->blocksize & (o->blocksize - 1))))
		FAIL("mkfs options: bs must be a power of two in 512..64k");
	if (o->btree_maxrecs && o->btree_maxrecs < 4)
		FAIL("mkfs options: maxrecs must be at least 4");
	if (o->max_extlen > DEFAULT_MAX_EXTLEN)
		FAIL("mkfs options: maxext is at most %u blocks", DEFAULT_MAX_EXTLEN);
	if (o->reflink > 1)
		FAIL("mkfs options: reflink is 0 or 1");
	if (o->journal_blocks && o->journal_blocks < 64)
		FAIL("mkfs options: journal needs at least 64 blocks");
	if (o->rtextsize % (o->blocksize ? o->blocksize : 4096))
		FAIL("mkfs options: rtextsize must be a multiple of the block "
		     "size (%u)", o->blocksize ? o->blocksize : 4096);
	if (o->rtextsize / (o->blocksize ? o->blocksize : 4096) >
	    (o->max_extlen ? o->max_extlen : DEFAULT_MAX_EXTLEN))
		FAIL("mkfs options: rtextsize is at most maxext blocks");
	return 0;
}

int ref_mkfs_check(const struct ref_mkfs_opts *o, struct hw_dev *dev,
		   struct hw_dev *rtdev, char *err, size_t errlen)
{
	uint32_t bs = o->blocksize ? o->blocksize : 4096;

	if (o->rtextsize && !rtdev)
		FAIL("mkfs option rtextsize needs a realtime device");
	if (o->reflink && rtdev)
		FAIL("mkfs option reflink cannot go with a realtime device "
		     "(shared blocks live on the data device only)");
	if (meta_sectors_tear(dev) && bs < REF_PMEM_MIN_BLOCKSIZE)
		FAIL("mkfs option bs=%u: %s%s%s needs blocks of at least %u "
		     "bytes (the header's torn-store copy lives in its second "
		     "sector)", bs, (hw_caps(dev) & HW_CAP_BYTE_ADDR) ?
		     "persistent memory " : "", hw_spec(dev),
		     (hw_caps(dev) & HW_CAP_BYTE_ADDR) ? "" :
		     ", whose writes tear in units smaller than a sector,",
		     REF_PMEM_MIN_BLOCKSIZE);
	return 0;
}

static const char *const path_names[REF_PATH_COUNT] = {
	[REF_PATH_RT_TRUNCATE] = "rt_truncate",
	[REF_PATH_PAGECACHE_TRUNCATE] = "pagecache_truncate",
	[REF_PATH_COW_END] = "cow_end",
	[REF_PATH_FORGET] = "forget",
	[REF_PATH_DELALLOC_CAP] = "delalloc_cap",
};

const char *ref_path_name(unsigned path)
{
	return path < REF_PATH_COUNT ? path_names[path] : "?";
}

/* The bit of one path name of length n, or 0. */
static uint32_t path_bit(const char *s, size_t n)
{
	for (unsigned p = 0; p < REF_PATH_COUNT; p++)
		if (strlen(path_names[p]) == n && !strncmp(s, path_names[p], n))
			return 1u << p;
	return 0;
}

int ref_parse_paths(const char *s, uint32_t *mask, char *err, size_t errlen)
{
	uint32_t m = 0;

	if (!s || !*s)
		FAIL("path list is empty (all, none, or names: rt_truncate, "
		     "pagecache_truncate, cow_end, forget, delalloc_cap)");
	while (*s) {
		size_t n = strcspn(s, ",+");
		uint32_t bit = path_bit(s, n);

		if (n == 3 && !strncmp(s, "all", 3))
			bit = REF_PATHS_ALL;
		else if (n == 4 && !strncmp(s, "none", 4))
			bit = 0;
		else if (!bit)
			FAIL("unknown path '%.*s' (all, none, rt_truncate, "
			     "pagecache_truncate, cow_end, forget, delalloc_cap)",
			     (int)n, s);
		m |= bit;
		s += n;
		if (*s && !*++s)
			FAIL("path list ends in a separator");
	}
	*mask = m;
	return 0;
}

void ref_format_paths(uint32_t mask, char *buf, size_t len)
{
	size_t used = 0;

	mask &= REF_PATHS_ALL;
	if (len)
		buf[0] = 0;
	if (mask == 0 || mask == REF_PATHS_ALL) {
		snprintf(buf, len, "%s", mask ? "all" : "none");
		return;
	}
	for (unsigned p = 0; p < REF_PATH_COUNT; p++) {
		int n;

		if (!(mask & (1u << p)) || used >= len)
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "",
			     path_names[p]);
		used += n > 0 ? (size_t)n : 0;
	}
}

static const char *const data_mode_names[REF_DATA_MODES] = {
	[REF_DATA_ORDERED] = "ordered",
	[REF_DATA_JOURNAL] = "journal",
	[REF_DATA_WRITEBACK] = "writeback",
};

const char *ref_data_mode_name(unsigned mode)
{
	return mode < REF_DATA_MODES ? data_mode_names[mode] : "?";
}

static int data_mode_opt(const char *val, uint32_t *mode)
{
	for (unsigned m = 0; m < REF_DATA_MODES; m++) {
		if (!strcmp(val, data_mode_names[m])) {
			*mode = m;
			return 0;
		}
	}
	return -EINVAL;
}

/* compress=zstd, zstd:LEVEL (1..19) or none; compression implies delalloc */
static int compress_opt(const char *val, struct ref_mount_opts *o)
{
	char *end;
	long level = 0;

	if (!strcmp(val, "none")) {
		o->compress = REF_COMPRESS_NONE;
		o->compress_level = 0;
		return 0;
	}
	if (strncmp(val, "zstd", 4) || (val[4] && val[4] != ':'))
		return -EINVAL;
	if (val[4] == ':') {
		level = strtol(val + 5, &end, 10);
		if (end == val + 5 || *end || level < 1 || level > 19)
			return -EINVAL;
	}
	o->compress = REF_COMPRESS_ZSTD;
	o->compress_level = (int32_t)level;
	o->flags |= REF_MOUNT_DELALLOC;
	return 0;
}

/*
 * naive=/fallback= take the path names that follow as their list:
 * "naive=rt_truncate,forget,ro" is naive={rt_truncate,forget} and ro.
 */
static int path_opt(const char **sp, const char *val, uint32_t *mask,
		    char *err, size_t errlen)
{
	char list[256];
	size_t n = strlen(val);

	if (n >= sizeof(list))
		FAIL("mount options: path list too long");
	memcpy(list, val, n + 1);
	for (;;) {
		const char *s = *sp;
		size_t k = strcspn(s, ",");

		if (!k || memchr(s, '=', k) || !path_bit(s, k) ||
		    n + 1 + k >= sizeof(list))
			break;
		list[n++] = '+';
		memcpy(list + n, s, k);
		n += k;
		list[n] = 0;
		*sp = s[k] ? s + k + 1 : s + k;
	}
	return ref_parse_paths(list, mask, err, errlen);
}

int ref_parse_mount_opts(const char *s, struct ref_mount_opts *o, char *err,
			 size_t errlen)
{
	char key[32], val[64];

	while (s && *s) {
		if (next_opt(&s, key, sizeof(key), val, sizeof(val)))
			FAIL("mount options: malformed option list");
		if (!strcmp(key, "ro") && !*val)
			o->flags |= REF_MOUNT_RDONLY;
		else if (!strcmp(key, "norecovery") && !*val)
			o->flags |= REF_MOUNT_NORECOVERY;
		else if (!strcmp(key, "cache")) {
			if (num(val, &o->cache_blocks))
				FAIL("mount options: bad value '%s' for cache", val);
		} else if (!strcmp(key, "pagecache")) {
			if (num(val, &o->pagecache) || o->pagecache == UINT32_MAX)
				FAIL("mount options: bad value '%s' for pagecache "
				     "(pages; 0: none)", val);
			if (!o->pagecache)
				o->pagecache = REF_PAGECACHE_OFF;
		} else if (!strcmp(key, "pagecache_shift")) {
			if (num(val, &o->pagecache_shift) ||
			    o->pagecache_shift < 1 || o->pagecache_shift > 6)
				FAIL("mount options: bad value '%s' for "
				     "pagecache_shift (1..6: nodes of 2..64 slots)",
				     val);
		} else if (!strcmp(key, "naive")) {
			if (path_opt(&s, val, &o->naive, err, errlen))
				return -EINVAL;
		} else if (!strcmp(key, "fallback")) {
			if (path_opt(&s, val, &o->fallback, err, errlen))
				return -EINVAL;
		} else if (!strcmp(key, "data")) {
			if (data_mode_opt(val, &o->data_mode))
				FAIL("mount options: bad value '%s' for data "
				     "(ordered, journal, writeback)", val);
		} else if (!strcmp(key, "delalloc") && !*val) {
			o->flags |= REF_MOUNT_DELALLOC;
		} else if (!strcmp(key, "nodelalloc") && !*val) {
			o->flags &= ~REF_MOUNT_DELALLOC;
		} else if (!strcmp(key, "nopagedata") && !*val) {
			o->flags |= REF_MOUNT_NOPAGEDATA;
		} else if (!strcmp(key, "workers")) {
			if (num(val, &o->workers) || o->workers > REF_WORKERS_MAX)
				FAIL("mount options: bad value '%s' for workers "
				     "(0..%u; 0: compress in line)", val,
				     REF_WORKERS_MAX);
		} else if (!strcmp(key, "compress")) {
			if (compress_opt(val, o))
				FAIL("mount options: bad value '%s' for compress "
				     "(zstd, zstd:LEVEL with LEVEL 1..19, none)",
				     val);
		} else
			FAIL("mount options: unknown option '%s' (ro, norecovery, "
			     "cache=N, pagecache=N, pagecache_shift=N, naive=PATHS, "
			     "fallback=PATHS, data=MODE, delalloc, nodelalloc, "
			     "compress=zstd[:N], workers=N, nopagedata)",
			     key);
	}
	return 0;
}
