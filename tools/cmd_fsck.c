/*
 * cmd_fsck.c - `fsoracle fsck DEV`: audit an image without writing to it.
 * The journal is replayed in memory only; every problem found is printed.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cmds.h"
#include "tools/common.h"

static const char usage[] =
"usage: fsoracle fsck DEV\n"
"\n"
"Check the filesystem on DEV from scratch: superblock geometry, journal,\n"
"inode table, every extent B+tree (shape, keys, checksums), every extent\n"
"(order, overlap, merging, lengths, nothing written past EOF, zeroes past\n"
"EOF in the EOF block) and the free-space bitmap against the blocks\n"
"actually referenced.  A journal left by a crash is replayed in memory;\n"
"nothing is ever written to DEV.\n"
"\n"
"Exit status: 0 clean, 4 corrupted (each problem printed on stderr),\n"
"2 bad usage or device spec, 3 I/O error.\n";

int cmd_fsck(int argc, char **argv)
{
	struct hw_dev *dev;
	int rc;

	prog_cmd = "fsoracle fsck";
	if (wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		errmsg("expected exactly one device (see --help)");
		return EXIT_USAGE;
	}
	dev = open_dev(argv[1]);
	if (!dev)
		return EXIT_USAGE;
	rc = ref_fsck(dev, msg_stderr, NULL);
	hw_close(dev);
	if (rc) {
		errmsg("%s: %s", argv[1], ref_strerror(rc));
		return exit_for(rc);
	}
	printf("%s: clean\n", argv[1]);
	return 0;
}
