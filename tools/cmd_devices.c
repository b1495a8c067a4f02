/*
 * cmd_devices.c - `fsoracle devices [SPEC...]`: the device grammar, and a
 * description of given specs (what is real, what is emulated here).
 */
#include <stdio.h>
#include <string.h>

#include "hw/hw.h"
#include "tools/cmds.h"

int cmd_devices(int argc, char **argv)
{
	int rc = 0;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: fsoracle devices [SPEC...]\n"
		       "\n"
		       "Without arguments, print the device and layer grammar every\n"
		       "command takes.  With specs, open each (creating nothing that\n"
		       "the spec does not ask for) and say what it is on this machine:\n"
		       "backend, size, geometry, and what is real and what emulated.\n"
		       "Exit 0, or 2 when a spec is bad or cannot be opened.\n");
		return 0;
	}
	if (argc < 2) {
		fputs(hw_devices_help(), stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		struct hw_dev *dev;
		char err[256], line[512];
		int e = hw_open(argv[i], &dev, err, sizeof(err));

		if (e) {
			fprintf(stderr, "fsoracle devices: %s: %s\n", argv[i],
				err[0] ? err : strerror(-e));
			rc = EXIT_USAGE;
			continue;
		}
		if (hw_describe(dev, line, sizeof(line)))
			snprintf(line, sizeof(line), "(no description)");
		printf("%s: %s\n", argv[i], line);
		hw_close(dev);
	}
	return rc;
}
