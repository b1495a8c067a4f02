/*
 * fsoracle.c - the command-line program: one binary, many subcommands.
 * Each subcommand lives in tools/cmd_<name>.c and documents itself with
 * --help; this file only dispatches.
 *
 * A build with -DFSO_PLANTED (`make planted`: out-planted/fsoracle,
 * never ./build.sh) plants the engine bug FSO_PLANT names (ref/plant.h)
 * before any command runs, so the soak and the property suites can show
 * they find it; no other build reads FSO_PLANT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/plant.h"
#include "ref/ref.h"
#include "tools/cmds.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
};

static const struct command commands[] = {
	{ "mkfs",     cmd_mkfs,     "format a device" },
	{ "fsck",     cmd_fsck,     "audit an image from scratch, writing nothing" },
	{ "io",       cmd_io,       "run xfs_io-style commands on the engine" },
	{ "run",      cmd_run,      "seeded random soak: engine vs naive twin vs model" },
	{ "replay",   cmd_replay,   "replay op logs (text, binary or .fsxops) on targets" },
	{ "minimize", cmd_minimize, "shrink a failing op log to a minimal one" },
	{ "decode",   cmd_decode,   "binary op sequence -> text op log" },
	{ "encode",   cmd_encode,   "text op log -> binary op sequence" },
	{ "prop",     cmd_prop,     "property tests: suites, shrinking, seeds (props/)" },
	{ "cutall",   cmd_cutall,   "power cut at every durability point of the corpus" },
	{ "perf",     cmd_perf,     "performance oracle: naive vs optimized, counters and time" },
	{ "mount",    cmd_mount,    "serve the engine as a FUSE filesystem (fio, xfs_io, ...)" },
	{ "devices",  cmd_devices,  "device specs and layers (mem:, file:, pmem:, zoned:, ...)" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fsoracle COMMAND [ARGS...]\n"
		"\n"
		"fsoracle keeps filesystem fast paths honest: a reference engine with\n"
		"naive and optimized twins of each path, a model, an op language,\n"
		"and checkers that compare them.\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].what);
	fprintf(f,
		"\n"
		"Devices are spec strings: mem:64m, null:64t, file:img,size=1g;\n"
		"`fsoracle devices` lists every backend and layer.\n"
		"`fsoracle help COMMAND` (or `fsoracle COMMAND --help`) describes\n"
		"each command; `fsoracle --version` prints the release.\n"
		"\n"
		"Exit status: 0 success, 2 usage error or bad input, 3 device or\n"
		"I/O error, 4 corrupted image; a failed check is 1, or the\n"
		"checker's class for run and replay (10 data, 11 size, 12 audit,\n"
		"13 result, 14 checker, 15 twin state, 16 out of memory: no\n"
		"finding); each command's help says which of these it uses.\n");
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* `fsoracle help [COMMAND]`: the command's own --help, or the list */
static int help(int argc, char **argv)
{
	const struct command *c;
	char *hargv[] = { NULL, "--help", NULL };

	if (argc < 3) {
		usage(stdout);
		return 0;
	}
	c = find(argv[2]);
	if (!c || argc > 3) {
		fprintf(stderr, "fsoracle: help: %s '%s'\n\n", c ?
			"one command at a time, not" : "unknown command",
			argv[c ? 3 : 2]);
		usage(stderr);
		return EXIT_USAGE;
	}
	hargv[0] = (char *)c->name;
	return c->fn(2, hargv);
}

int main(int argc, char **argv)
{
	const struct command *c;

#ifdef FSO_PLANTED
	const char *bug = getenv("FSO_PLANT");
	char err[200];

	if (bug && *bug && ref_plant(bug, err, sizeof(err))) {
		fprintf(stderr, "fsoracle: FSO_PLANT: %s\n", err);
		return EXIT_USAGE;
	}
	if (bug && *bug)
		fprintf(stderr, "fsoracle: planted bug %s\n", bug);
#endif
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("fsoracle %s\n", FSORACLE_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "help"))
		return help(argc, argv);
	c = find(argv[1]);
	if (c)
		return c->fn(argc - 1, argv + 1);
	fprintf(stderr, "fsoracle: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
