/*
 * test_paths.c - the seed-path switches: naive=/fallback= mount options,
 * the path-list parser and formatter, and switching on a mounted engine.
 */
#include "tests/test.h"

#include <string.h>

#include "ref/ref.h"

#define RT  (1u << REF_PATH_RT_TRUNCATE)
#define PC  (1u << REF_PATH_PAGECACHE_TRUNCATE)
#define COW (1u << REF_PATH_COW_END)
#define FGT (1u << REF_PATH_FORGET)
#define DAC (1u << REF_PATH_DELALLOC_CAP)

TEST(path_names_round_trip)
{
	for (unsigned p = 0; p < REF_PATH_COUNT; p++) {
		uint32_t m = 0;
		char buf[128];

		CHECK_OK(ref_parse_paths(ref_path_name(p), &m, NULL, 0));
		CHECK_EQ(m, 1u << p);
		ref_format_paths(m, buf, sizeof(buf));
		CHECK(strcmp(buf, ref_path_name(p)) == 0);
	}
	CHECK(strcmp(ref_path_name(REF_PATH_COUNT), "?") == 0);
}

TEST(path_lists_all_none_and_mixes)
{
	uint32_t m = 123;
	char buf[128];

	CHECK_OK(ref_parse_paths("all", &m, NULL, 0));
	CHECK_EQ(m, REF_PATHS_ALL);
	CHECK_OK(ref_parse_paths("none", &m, NULL, 0));
	CHECK_EQ(m, 0);
	CHECK_OK(ref_parse_paths("rt_truncate+forget", &m, NULL, 0));
	CHECK_EQ(m, RT | FGT);
	CHECK_OK(ref_parse_paths("cow_end,delalloc_cap", &m, NULL, 0));
	CHECK_EQ(m, COW | DAC);
	ref_format_paths(RT | PC, buf, sizeof(buf));
	CHECK(strcmp(buf, "rt_truncate+pagecache_truncate") == 0);
	ref_format_paths(REF_PATHS_ALL, buf, sizeof(buf));
	CHECK(strcmp(buf, "all") == 0);
	ref_format_paths(0, buf, sizeof(buf));
	CHECK(strcmp(buf, "none") == 0);
}

TEST(path_list_errors_say_what)
{
	uint32_t m = 7;
	char err[200] = "";

	CHECK_EQ(ref_parse_paths("rt_truncate+bogus", &m, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "bogus") != NULL);
	CHECK_EQ(m, 7);
	CHECK_EQ(ref_parse_paths("", &m, err, sizeof(err)), -EINVAL);
	CHECK_EQ(ref_parse_paths("forget+", &m, err, sizeof(err)), -EINVAL);
	CHECK_EQ(ref_parse_paths(NULL, &m, err, sizeof(err)), -EINVAL);
}

TEST(mount_options_take_following_path_names)
{
	struct ref_mount_opts o = { 0 };
	char err[200] = "";

	CHECK_OK(ref_parse_mount_opts("naive=rt_truncate,forget,ro,"
				      "fallback=cow_end+delalloc_cap,cache=8",
				      &o, err, sizeof(err)));
	CHECK_EQ(o.naive, RT | FGT);
	CHECK_EQ(o.fallback, COW | DAC);
	CHECK(o.flags & REF_MOUNT_RDONLY);
	CHECK_EQ(o.cache_blocks, 8);

	memset(&o, 0, sizeof(o));
	CHECK_OK(ref_parse_mount_opts("naive=all", &o, err, sizeof(err)));
	CHECK_EQ(o.naive, REF_PATHS_ALL);
	CHECK_EQ(ref_parse_mount_opts("naive=rt_truncate,nosuch", &o, err,
				      sizeof(err)), -EINVAL);
	CHECK(strstr(err, "nosuch") != NULL);
	CHECK_EQ(ref_parse_mount_opts("naive=", &o, err, sizeof(err)), -EINVAL);
}

TEST(switches_follow_mount_and_change_at_run_time)
{
	struct hw_dev *dev;
	struct ref_fs *fs;
	struct ref_mount_opts o = { .naive = RT | PC, .fallback = FGT };
	uint32_t n, f;

	CHECK_OK(hw_open("mem:4m", &dev, NULL, 0));
	CHECK_OK(ref_mkfs(dev, NULL));
	CHECK_OK(ref_mount(dev, &o, &fs));
	ref_get_paths(fs, &n, &f);
	CHECK_EQ(n, RT | PC);
	CHECK_EQ(f, FGT);
	ref_set_paths(fs, 0xffffffffu, 0);
	ref_get_paths(fs, &n, &f);
	CHECK_EQ(n, REF_PATHS_ALL);
	CHECK_EQ(f, 0);
	CHECK_OK(ref_unmount(fs));
	hw_close(dev);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv);
}
