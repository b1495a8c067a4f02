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
		else
			FAIL("mkfs options: unknown option '%s' (bs, maxrecs, "
			     "inodes, journal, maxext, rtextsize)", key);
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
		} else
			FAIL("mount options: unknown option '%s' (ro, norecovery, "
			     "cache=N)", key);
	}
	return 0;
}
