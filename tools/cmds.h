/*
 * cmds.h - the subcommands of the fsoracle program.  Each lives in its own
 * tools/cmd_<name>.c, takes (argc, argv) with argv[0] = the subcommand name,
 * prints its own --help, and returns the process exit status.
 *
 * Exit statuses shared by every command:
 *   0 success, 1 check failed (see the command), 2 usage error or bad input,
 *   3 device or I/O error, 4 corrupted image.
 */
#ifndef FSORACLE_TOOLS_CMDS_H
#define FSORACLE_TOOLS_CMDS_H

#define EXIT_CHECK   1
#define EXIT_USAGE   2
#define EXIT_IO      3
#define EXIT_CORRUPT 4

int cmd_mkfs(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_io(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_encode(int argc, char **argv);
int cmd_minimize(int argc, char **argv);
int cmd_prop(int argc, char **argv);
int cmd_cutall(int argc, char **argv);
int cmd_perf(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_mount(int argc, char **argv);

#endif
