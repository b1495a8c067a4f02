/*
 * test_rename.c - ref_rename: the name moves with its inode and data, a
 * file it replaces is freed, and a power cut leaves either the old
 * namespace or the new one, never both names nor neither.
 */
#include "test.h"

#include "hw/hw.h"
#include "ref/ref.h"

static void quiet(void *arg, const char *line) { (void)arg; (void)line; }

static struct ref_fs *mounted(struct hw_dev *d)
{
	struct ref_fs *fs = NULL;

	return ref_mount(d, NULL, &fs) ? NULL : fs;
}

/* a holds 8 KiB of 0xaa, b 1 MiB of 0xbb; both committed. */
static struct ref_fs *two_files(struct hw_dev **d)
{
	static uint8_t buf[1 << 20];
	struct ref_fs *fs;
	uint64_t a, b;

	*d = NULL;
	if (hw_open("mem:16m", d, NULL, 0) || ref_mkfs(*d, NULL))
		return NULL;
	fs = mounted(*d);
	if (!fs || ref_create(fs, "a", &a) || ref_create(fs, "b", &b))
		return NULL;
	memset(buf, 0xaa, 8192);
	if (ref_pwrite(fs, a, buf, 8192, 0) != 8192)
		return NULL;
	memset(buf, 0xbb, sizeof(buf));
	if (ref_pwrite(fs, b, buf, sizeof(buf), 0) != sizeof(buf) || ref_sync(fs))
		return NULL;
	return fs;
}

/* The file called name: its size and first byte, or the lookup error. */
static int probe(struct ref_fs *fs, const char *name, uint64_t *size,
		 uint8_t *first)
{
	struct ref_stat st;
	uint64_t ino;
	int err = ref_lookup(fs, name, &ino);

	if (!err)
		err = ref_stat(fs, ino, &st);
	if (err)
		return err;
	*size = st.size;
	return ref_pread(fs, ino, first, 1, 0) == 1 ? 0 : -EIO;
}

TEST(rename_moves_the_name_and_keeps_the_data)
{
	struct hw_dev *d;
	struct ref_fs *fs = two_files(&d);
	uint64_t size = 0;
	uint8_t c = 0;

	CHECK(fs);
	CHECK_OK(ref_rename(fs, "a", "c"));
	CHECK_EQ(probe(fs, "a", &size, &c), -ENOENT);
	CHECK_OK(probe(fs, "c", &size, &c));
	CHECK_EQ(size, 8192);
	CHECK_EQ(c, 0xaa);
	CHECK_EQ(ref_rename(fs, "a", "d"), -ENOENT);
	CHECK_EQ(ref_rename(fs, "c", ""), -EINVAL);
	CHECK_OK(ref_rename(fs, "c", "c"));
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	fs = mounted(d);
	CHECK(fs);
	CHECK_OK(probe(fs, "c", &size, &c));
	CHECK_EQ(c, 0xaa);
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

TEST(rename_over_a_file_frees_the_replaced_one)
{
	struct hw_dev *d;
	struct ref_fs *fs = two_files(&d);
	struct ref_statfs before, after;
	uint64_t size = 0;
	uint8_t c = 0;

	CHECK(fs);
	CHECK_OK(ref_statfs(fs, &before));
	CHECK_OK(ref_rename(fs, "a", "b"));
	CHECK_OK(ref_statfs(fs, &after));
	/* b's 1 MiB of 4 KiB blocks come back (its map may have cost more) */
	CHECK(after.free_blocks >= before.free_blocks + 256);
	CHECK_EQ(probe(fs, "a", &size, &c), -ENOENT);
	CHECK_OK(probe(fs, "b", &size, &c));
	CHECK_EQ(size, 8192);
	CHECK_EQ(c, 0xaa);
	CHECK_OK(ref_audit(fs, quiet, NULL));
	CHECK_OK(ref_unmount(fs));
	hw_close(d);
}

TEST(rename_is_all_or_nothing_across_a_cut)
{
	for (int synced = 0; synced < 2; synced++) {
		struct hw_dev *d;
		struct ref_fs *fs = two_files(&d);
		uint64_t size = 0;
		uint8_t c = 0;

		CHECK(fs);
		CHECK_OK(ref_rename(fs, "a", "b"));
		if (synced)
			CHECK_OK(ref_sync(fs));
		ref_abandon(fs);
		fs = mounted(d);
		CHECK(fs);
		CHECK_OK(probe(fs, "b", &size, &c));
		if (synced) { /* the new namespace: a's data under b */
			CHECK_EQ(probe(fs, "a", &size, &c), -ENOENT);
			CHECK_OK(probe(fs, "b", &size, &c));
			CHECK_EQ(size, 8192);
			CHECK_EQ(c, 0xaa);
		} else { /* nothing committed it: the old one, whole */
			CHECK_EQ(size, 1 << 20);
			CHECK_EQ(c, 0xbb);
			CHECK_OK(probe(fs, "a", &size, &c));
			CHECK_EQ(c, 0xaa);
		}
		CHECK_OK(ref_audit(fs, quiet, NULL));
		CHECK_OK(ref_unmount(fs));
		hw_close(d);
	}
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
