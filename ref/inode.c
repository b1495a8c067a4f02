/*
 * inode.c - the inode table and the flat namespace.
 *
 * Inodes are INODE_SIZE-byte slots in the inode table; slot 0 of each
 * table block is taken by the block header, so a 4096-byte block holds 15
 * inodes.  The whole table is decoded into memory at mount (the name hash
 * is built from it) and every change is written through to its slot in a
 * logged buffer by inode_log(), so the journal sees each update.
 *
 * Orphans: an inode whose truncate or unlink did not finish carries
 * REF_IF_ORPHAN (and REF_IF_UNLINKED for unlink).  Long frees run in
 * several transactions; if power is cut between them, mount finishes the
 * job before anyone can see blocks past EOF.
 */
#include "ref/ref_internal.h"
#include "ref/pcache.h"

#include "base/park.h"

#include <stdio.h>
#include <stdlib.h>

uint64_t inode_blkno(const struct ref_fs *fs, uint64_t ino)
{
	return fs->itab + (ino - 1) / fs->ipb;
}

size_t inode_slot_off(const struct ref_fs *fs, uint64_t ino)
{
	if (fs->bs / INODE_SIZE < 2) /* 512-byte blocks: header, then 1 slot */
		return BLKHDR_SIZE + 8;
	return INODE_SIZE * (size_t)(1 + (ino - 1) % fs->ipb);
}

static size_t name_hash(const struct ref_fs *fs, const char *name)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 1099511628211ull;
	return (size_t)(h & (fs->nhsize - 1));
}

static void hash_insert(struct ref_fs *fs, struct ref_inode *ip)
{
	size_t h = name_hash(fs, ip->name);

	ip->hnext = fs->nhash[h];
	fs->nhash[h] = ip;
}

void inode_hash_remove(struct ref_fs *fs, struct ref_inode *ip)
{
	struct ref_inode **pp = &fs->nhash[name_hash(fs, ip->name)];

	while (*pp && *pp != ip)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = ip->hnext;
	ip->hnext = NULL;
}

static struct ref_inode *hash_find(struct ref_fs *fs, const char *name)
{
	struct ref_inode *ip = fs->nhash[name_hash(fs, name)];

	while (ip && strcmp(ip->name, name) != 0)
		ip = ip->hnext;
	return ip;
}

void inode_encode(const struct ref_inode *ip, uint8_t *slot)
{
	memset(slot, 0, INODE_SIZE);
	put16(slot + DI_TYPE, ip->type);
	put32(slot + DI_FLAGS, ip->flags);
	put64(slot + DI_SIZE, ip->size);
	put64(slot + DI_NBLOCKS, ip->nblocks);
	put64(slot + DI_NEXTENTS, ip->nextents);
	put64(slot + DI_ROOT, ip->root.blk);
	put32(slot + DI_LEVELS, ip->root.levels);
	put32(slot + DI_GEN, ip->gen);
	memcpy(slot + DI_NAME, ip->name, strlen(ip->name));
}

/* Whether inode_encode(ip) is all zeros: a slot never used. */
bool inode_encodes_zero(const struct ref_inode *ip)
{
	return !ip->type && !ip->flags && !ip->size && !ip->nblocks &&
	       !ip->nextents && !ip->root.blk && !ip->root.levels &&
	       !ip->gen && !ip->name[0];
}

/* Decode and sanity-check one slot; -EFSCORRUPTED names what is wrong. */
int inode_decode(struct ref_fs *fs, uint64_t ino, const uint8_t *slot,
		 struct ref_inode *ip)
{
	const char *why = NULL;

	memset(ip, 0, sizeof(*ip));
	ip->ino = ino;
	ip->type = get16(slot + DI_TYPE);
	ip->flags = get32(slot + DI_FLAGS);
	ip->size = get64(slot + DI_SIZE);
	ip->nblocks = get64(slot + DI_NBLOCKS);
	ip->nextents = get64(slot + DI_NEXTENTS);
	ip->root.blk = get64(slot + DI_ROOT);
	ip->root.levels = get32(slot + DI_LEVELS);
	ip->gen = get32(slot + DI_GEN);
	memcpy(ip->name, slot + DI_NAME, REF_NAME_MAX);
	ip->name[REF_NAME_MAX] = 0;

	if (ip->type != ITYPE_FREE && ip->type != ITYPE_FILE)
		why = "unknown inode type";
	else if (ip->type == ITYPE_FREE && (ip->root.blk || ip->nblocks || ip->size))
		why = "free inode with contents";
	else if (ip->type == ITYPE_FILE && ip->name[0] == 0 &&
		 !(ip->flags & REF_IF_UNLINKED))
		why = "file without a name";
	else if (slot[DI_NAME + REF_NAME_MAX] != 0)
		why = "name not terminated";
	else if (ip->flags & ~REF_IF_ALL)
		why = "unknown inode flags";
	else if ((ip->flags & REF_IF_REALTIME) && !fs->rtblocks)
		why = "realtime file on a filesystem without a realtime device";
	else if ((ip->flags & REF_IF_REALTIME) && (ip->flags & REF_IF_JDATA))
		why = "journal-data flag on a realtime file";
	else if ((ip->root.blk == 0) != (ip->root.levels == 0))
		why = "B+tree root and height disagree";
	else if (ip->root.levels > BT_MAX_LEVELS)
		why = "B+tree too tall";
	else if (ip->root.blk && (ip->root.blk < fs->data || ip->root.blk >= fs->total))
		why = "B+tree root outside the data region";
	else if (ip->size > ((uint64_t)1 << 62))
		why = "absurd file size";
	if (why) {
		ref_report(fs, "inode %llu: %s", (unsigned long long)ino, why);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* One slot at mount: decoded into fs->inodes, a live file's name hashed. */
static int mount_slot(struct ref_fs *fs, uint64_t ino, const uint8_t *slot)
{
	struct ref_inode *ip = &fs->inodes[ino - 1];
	int err = inode_decode(fs, ino, slot, ip);

	if (err)
		return err;
	if (ip->type != ITYPE_FILE || (ip->flags & REF_IF_UNLINKED))
		return 0;
	if (hash_find(fs, ip->name)) {
		ref_report(fs, "inode %llu: name '%s' used twice",
			   (unsigned long long)ino, ip->name);
		return -EFSCORRUPTED;
	}
	hash_insert(fs, ip);
	return 0;
}

/* Every slot of the table, one buffer lookup a table block. */
int inode_mount(struct ref_fs *fs)
{
	int err = 0;

	fs->inodes = park_calloc(fs->ninodes, sizeof(*fs->inodes));
	fs->nhsize = 64;
	while (fs->nhsize < fs->ninodes)
		fs->nhsize <<= 1;
	fs->nhash = park_calloc(fs->nhsize, sizeof(*fs->nhash));
	if (!fs->inodes || !fs->nhash)
		return -ENOMEM;
	for (uint64_t ino = 1; ino <= fs->ninodes && !err;) {
		uint64_t blk = inode_blkno(fs, ino);
		struct rbuf *b;

		err = buf_read(fs, blk, MAGIC_INODES, &b);
		if (err)
			return err;
		for (; !err && ino <= fs->ninodes && inode_blkno(fs, ino) == blk;
		     ino++)
			err = mount_slot(fs, ino, b->data + inode_slot_off(fs, ino));
		buf_put(fs, b);
	}
	return err;
}

void inode_unmount(struct ref_fs *fs)
{
	park_cfree(fs->inodes, fs->ninodes, sizeof(*fs->inodes));
	park_cfree(fs->nhash, fs->nhsize, sizeof(*fs->nhash));
	fs->inodes = NULL;
	fs->nhash = NULL;
}

int inode_get(struct ref_fs *fs, uint64_t ino, struct ref_inode **ip)
{
	if (ino == 0 || ino > fs->ninodes ||
	    fs->inodes[ino - 1].type != ITYPE_FILE ||
	    (fs->inodes[ino - 1].flags & REF_IF_UNLINKED))
		return -ENOENT;
	*ip = &fs->inodes[ino - 1];
	return 0;
}

/* Write the in-core inode through to its slot in the running transaction. */
int inode_log(struct ref_fs *fs, struct ref_inode *ip)
{
	struct rbuf *b;
	int err;

	if (fs->rdonly)
		return -EROFS;
	err = buf_read(fs, inode_blkno(fs, ip->ino), MAGIC_INODES, &b);
	if (err)
		return err;
	inode_encode(ip, b->data + inode_slot_off(fs, ip->ino));
	buf_dirty(fs, b);
	buf_put(fs, b);
	return 0;
}

static int check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || strchr(name, '/'))
		return -EINVAL;
	if (n > REF_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static int create_call(struct ref_fs *fs, const char *name, uint64_t *ino)
{
	struct ref_inode *ip = NULL;
	int err = check_name(name);

	if (err)
		return err;
	if (fs->rdonly)
		return -EROFS;
	if (hash_find(fs, name))
		return -EEXIST;
	for (uint32_t i = 0; i < fs->ninodes; i++) {
		if (fs->inodes[i].type == ITYPE_FREE) {
			ip = &fs->inodes[i];
			break;
		}
	}
	if (!ip)
		return -ENFILE;
	ip->type = ITYPE_FILE;
	ip->flags = 0;
	ip->size = ip->nblocks = ip->nextents = 0;
	ip->root = (struct bt_root){ 0, 0 };
	ip->gen++;
	memcpy(ip->name, name, strlen(name) + 1); /* check_name: it fits */
	err = inode_log(fs, ip);
	if (err) {
		ip->type = ITYPE_FREE;
		return err;
	}
	hash_insert(fs, ip);
	*ino = ip->ino;
	return tx_maybe_roll(fs);
}

int ref_create(struct ref_fs *fs, const char *name, uint64_t *ino)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, create_call(fs, name, ino));
}

int ref_lookup(struct ref_fs *fs, const char *name, uint64_t *ino)
{
	struct ref_inode *ip;
	int err = check_name(name);

	FS_LIVE(fs);
	if (err)
		return err;
	ip = hash_find(fs, name);
	if (!ip)
		return -ENOENT;
	*ino = ip->ino;
	return 0;
}

/* Free all blocks, then the inode: the tail of unlink and orphan recovery. */
static int inode_destroy(struct ref_fs *fs, struct ref_inode *ip)
{
	int err = file_truncate_blocks(fs, ip, 0);

	if (err)
		return err;
	ip->type = ITYPE_FREE;
	ip->flags = 0;
	ip->size = 0;
	memset(ip->name, 0, sizeof(ip->name));
	return inode_log(fs, ip);
}

static int unlink_call(struct ref_fs *fs, const char *name)
{
	struct ref_inode *ip;
	int err = check_name(name);

	if (err)
		return err;
	if (fs->rdonly)
		return -EROFS;
	ip = hash_find(fs, name);
	if (!ip)
		return -ENOENT;
	/* Step 1 (one transaction): the name goes, the inode becomes an orphan. */
	inode_hash_remove(fs, ip);
	ip->flags |= REF_IF_ORPHAN | REF_IF_UNLINKED;
	err = inode_log(fs, ip);
	if (err)
		return err;
	/* Step 2 (as many transactions as it takes): free everything. */
	err = inode_destroy(fs, ip);
	if (err)
		return err;
	return tx_maybe_roll(fs);
}

int ref_unlink(struct ref_fs *fs, const char *name)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, unlink_call(fs, name));
}

/*
 * Rename, as rename(2) without flags: a file already called `to` is
 * replaced.  One transaction moves the name and makes the replaced file an
 * unlinked orphan (a cut leaves either the old namespace or the new one);
 * freeing its blocks follows in as many as it takes, as in unlink.
 */
static int rename_call(struct ref_fs *fs, const char *from, const char *to)
{
	struct ref_inode *ip, *victim;
	int err = check_name(from);

	if (!err)
		err = check_name(to);
	if (err)
		return err;
	if (fs->rdonly)
		return -EROFS;
	ip = hash_find(fs, from);
	if (!ip)
		return -ENOENT;
	victim = hash_find(fs, to);
	if (victim == ip)
		return 0;
	if (victim) {
		inode_hash_remove(fs, victim);
		victim->flags |= REF_IF_ORPHAN | REF_IF_UNLINKED;
		err = inode_log(fs, victim);
		if (err)
			return err;
	}
	inode_hash_remove(fs, ip);
	snprintf(ip->name, sizeof(ip->name), "%s", to);
	hash_insert(fs, ip);
	err = inode_log(fs, ip);
	if (!err && victim)
		err = inode_destroy(fs, victim);
	return err ? err : tx_maybe_roll(fs);
}

int ref_rename(struct ref_fs *fs, const char *from, const char *to)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs, rename_call(fs, from, to));
}

/*
 * Change user-visible inode flags.  The realtime flag moves a file's data
 * to another device, so, as XFS requires, it changes only while the file
 * has no blocks at all (-EINVAL otherwise, and without a realtime device).
 * The journal-data flag changes at any time, after a journal flush (as
 * ext4 does): the file's logged data is then home and out of the cache,
 * so neither twin of the forget path (forget.c) can miss a copy made
 * under the old mode.  The two flags exclude each other.
 */
static int set_flags_call(struct ref_fs *fs, uint64_t ino, uint32_t set,
			  uint32_t clear)
{
	const uint32_t user = REF_FLAG_REALTIME | REF_FLAG_JOURNAL_DATA |
			      REF_FLAG_COW | REF_FLAG_COMPRESS;
	struct ref_inode *ip;
	uint32_t nflags;
	int err = inode_get(fs, ino, &ip);

	if (err)
		return err;
	if (((set | clear) & ~user) ||
	    ((set & REF_FLAG_COW) && !fs->rl) || /* COW needs reflink */
	    ((set & REF_FLAG_COMPRESS) && (fs->rl || !compress_available())))
		return -EOPNOTSUPP;
	if (set & clear)
		return -EINVAL;
	if (fs->rdonly)
		return -EROFS;
	nflags = (ip->flags | set) & ~clear;
	if (nflags == ip->flags)
		return 0;
	if ((nflags & REF_IF_REALTIME) && (nflags & REF_IF_JDATA))
		return -EINVAL;
	if (((nflags ^ ip->flags) & REF_IF_REALTIME) &&
	    (((nflags & REF_IF_REALTIME) && !fs->rtdev) || ip->nblocks ||
	     ip->nextents))
		return -EINVAL;
	/* delayed pages are written under the flags they were made with */
	err = pcache_writeback(fs, ip);
	if (err)
		return err;
	if (((nflags ^ ip->flags) & REF_IF_REALTIME) && ip->nblocks)
		return -EINVAL;
	if ((nflags ^ ip->flags) & REF_IF_JDATA) {
		err = journal_flush(fs);
		if (err)
			return err;
	}
	/*
	 * From the flags as they are now, not nflags: the writeback above
	 * may have made compressed extents, and the REF_IF_CEXT it set must
	 * stay (without it compr_expand skips the file and the audit
	 * rejects its compressed records).
	 */
	ip->flags = (ip->flags | set) & ~clear;
	err = inode_log(fs, ip);
	return err ? err : tx_maybe_roll(fs);
}

int ref_set_flags(struct ref_fs *fs, uint64_t ino, uint32_t set,
		  uint32_t clear)
{
	int err = fs_enter(fs);

	return err ? err : (int)fs_leave(fs,
					 set_flags_call(fs, ino, set, clear));
}

int ref_readdir(struct ref_fs *fs, ref_dirent_fn fn, void *arg)
{
	FS_LIVE(fs);
	for (uint32_t i = 0; i < fs->ninodes; i++) {
		struct ref_inode *ip = &fs->inodes[i];
		int r;

		if (ip->type != ITYPE_FILE || (ip->flags & REF_IF_UNLINKED))
			continue;
		r = fn(arg, ip->name, ip->ino);
		if (r)
			return r < 0 ? r : 0;
	}
	return 0;
}

/* Mount: finish every truncate or unlink a power cut interrupted. */
int inode_finish_orphans(struct ref_fs *fs)
{
	for (uint32_t i = 0; i < fs->ninodes; i++) {
		struct ref_inode *ip = &fs->inodes[i];
		int err;

		if (ip->type != ITYPE_FILE || !(ip->flags & REF_IF_ORPHAN))
			continue;
		if (ip->flags & REF_IF_UNLINKED) {
			err = inode_destroy(fs, ip);
		} else {
			err = file_truncate_blocks(fs, ip, fs_blocks_roundup(fs, ip->size));
			if (!err) {
				ip->flags &= ~REF_IF_ORPHAN;
				err = inode_log(fs, ip);
			}
		}
		if (err)
			return err;
	}
	return 0;
}
