/*
 * cmd_fsck.c - `fsoracle fsck DEV`: audit an image without writing to it.
 * The journal is replayed in memory only; every problem found is printed.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cmds.h"
#include "tools/common.h"

static const char usage[] =
"usage: fsoracle fsck [-r RTDEV] DEV\n"
"\n"
"Check the filesystem on DEV from scratch: superblock geometry, journal,\n"
"inode table, every extent B+tree (shape, keys, checksums), every extent\n"
"(order, overlap, merging, lengths, nothing written past EOF, zeroes past\n"
"EOF in the EOF block) and the free-space bitmap against the blocks\n"
"actually referenced.  A journal left by a crash is replayed in memory;\n"
"nothing is ever written to DEV.  A filesystem with a realtime device\n"
"needs it given with -r (the rt bitmap and every rt extent are checked).\n"
"\n"
"Exit status: 0 clean, 4 corrupted (each problem printed on stderr),\n"
"2 bad usage or device spec, 3 I/O error.\n";

int cmd_fsck(int argc, char **argv)
{
	struct ref_mount_opts o = { .flags = REF_MOUNT_RDONLY, .msg = msg_stderr };
	const char *spec = NULL, *rtspec = NULL;
	struct hw_dev *dev, *rt = NULL;
	char err[256];
	int rc;

	prog_cmd = "fsoracle fsck";
	if (wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-r") && i + 1 < argc)
			rtspec = argv[++i];
		else if (argv[i][0] == '-' || spec) {
			errmsg("unexpected argument '%s' (see --help)", argv[i]);
			return EXIT_USAGE;
		} else
			spec = argv[i];
	}
	if (!spec) {
		errmsg("expected a device (see --help)");
		return EXIT_USAGE;
	}
	dev = open_dev(spec);
	if (!dev)
		return EXIT_USAGE;
	if (rtspec) {
		rt = open_dev(rtspec);
		if (!rt) {
			hw_close(dev);
			return EXIT_USAGE;
		}
		o.rtdev = rt;
		if (hw_spec_apart(spec, rtspec, err, sizeof(err))) {
			errmsg("%s", err);
			hw_close(dev);
			hw_close(rt);
			return EXIT_USAGE;
		}
	}
	rc = ref_fsck_opts(dev, &o);
	hw_close(dev);
	if (rt)
		hw_close(rt);
	if (rc) {
		errmsg("%s: %s", spec, ref_strerror(rc));
		return exit_for(rc);
	}
	printf("%s: clean\n", spec);
	return 0;
}
