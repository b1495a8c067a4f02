/* cmd_mkfs.c - `fsoracle mkfs [-m OPTS] [-r RTDEV] DEV`: format a device. */
#include <stdio.h>
#include <string.h>

#include "tools/cmds.h"
#include "tools/common.h"

static const char usage[] =
"usage: fsoracle mkfs [-m MKFSOPTS] [-r RTDEV] DEV\n"
"\n"
"Format DEV with an empty fsoracle filesystem.\n"
"\n"
"  -r RTDEV  a realtime device: it holds the data of files flagged\n"
"            realtime (`chattr +r` while empty), allocated in whole rt\n"
"            extents; the filesystem then mounts only with it\n"
"  -m OPTS   comma-separated geometry, every key optional:\n"
"              bs=4k        block size, a power of two in 512..64k\n"
"              maxrecs=N    records per B+tree node (>= 4; default: fill\n"
"                           the block). Tiny values make deep trees.\n"
"              inodes=N     inode table size (default 1024)\n"
"              journal=N    journal blocks (default size/64, 256..8192)\n"
"              maxext=N     longest extent record in blocks (2097151)\n"
"              rtextsize=S  rt extent size in bytes, a multiple of the\n"
"                           block size, at most maxext blocks (default\n"
"                           one block; needs -r)\n"
"              reflink=1    shared blocks: clone, dedupe, copy on write\n"
"                           (not with -r)\n"
"\n"
"DEV is a device spec: mem:SIZE, null:SIZE, file:PATH[,size=SIZE].\n"
"A mem: or null: device lives only as long as the process, so formatting\n"
"one here checks the geometry and nothing more; `fsoracle io` formats\n"
"those itself.\n";

int cmd_mkfs(int argc, char **argv)
{
	struct ref_mkfs_opts o = { 0 };
	const char *spec = NULL, *mopts = NULL, *rtspec = NULL;
	struct hw_dev *dev, *rtdev = NULL;
	char err[256];
	int rc, fits;

	prog_cmd = "fsoracle mkfs";
	if (wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-m") && i + 1 < argc)
			mopts = argv[++i];
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			rtspec = argv[++i];
		else if (argv[i][0] == '-' || spec) {
			errmsg("unexpected argument '%s' (see --help)", argv[i]);
			return EXIT_USAGE;
		} else
			spec = argv[i];
	}
	if (!spec) {
		errmsg("no device given (see --help)");
		return EXIT_USAGE;
	}
	if (ref_parse_mkfs_opts(mopts, &o, err, sizeof(err))) {
		errmsg("%s", err);
		return EXIT_USAGE;
	}
	if (o.rtextsize && !rtspec) {
		errmsg("rtextsize needs a realtime device (-r RTDEV)");
		return EXIT_USAGE;
	}
	if (rtspec && !(rtdev = open_dev(rtspec)))
		return EXIT_USAGE;
	dev = open_dev(spec);
	if (!dev) {
		if (rtdev)
			hw_close(rtdev);
		return EXIT_USAGE;
	}
	o.rtdev = rtdev;
	if ((rtdev && hw_spec_apart(spec, rtspec, err, sizeof(err))) ||
	    ref_mkfs_check(&o, dev, rtdev, err, sizeof(err))) {
		errmsg("%s", err);
		hw_close(dev);
		hw_close(rtdev);
		return EXIT_USAGE;
	}
	/* a layout that does not fit is bad input, said in numbers */
	rc = ref_mkfs_fits(dev, &o, err, sizeof(err));
	fits = rc == 0;
	if (fits)
		rc = ref_mkfs(dev, &o);
	if (rc)
		errmsg("cannot format %s%s%s: %s", spec, rtdev ? " with realtime "
		       "device " : "", rtdev ? rtspec : "",
		       fits ? ref_strerror(rc) : err);
	hw_close(dev);
	if (rtdev)
		hw_close(rtdev);
	return !rc ? 0 : fits ? exit_for(rc) : EXIT_USAGE;
}
