/*
 * ctl: what every offcpuctl subcommand shares: the global options
 * (offcpuctl.c), the exit codes, errors reported in the output mode (text
 * or --json; transact.c), and each subcommand's entry point, one file each
 * (cmd_*.c, as perf's builtin-*.c). Shared parts have their own headers:
 * transact.h (one request to offcpud), options.h (option parsing),
 * output.h (writing results), offline.h (flamegraph and diff).
 */
#ifndef CTL_H
#define CTL_H

#include <stdbool.h>
#include <stdio.h>

#define DEFAULT_SOCKET "/run/offcpud/offcpud.sock"

enum exit_code {
	EXIT_OK = 0,
	EXIT_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_NOT_RUNNING = 3,
	EXIT_PERMISSION = 4,
	EXIT_NO_SUCH_PID = 5, /* also no such cgroup or push target */
	EXIT_BUSY = 6,
};

/* The global options (offcpuctl.c), and whether Ctrl-C asked to stop. */
extern const char *socket_path;
extern bool json_output;
extern volatile int stop_requested;

/* Reports an error in the current output mode and returns its exit code. */
int fail(int code, const char *json_code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Reports a bad argument (fmt quotes arg) and returns EXIT_USAGE. */
int usage_error(const char *fmt, const char *arg);

/* The usage text, and one command's part of it (ctl/help.c). */
void usage(FILE *out);
int command_help(const char *cmd);

/* The subcommands: argv[0] is the command's name, its options follow. */
int cmd_status(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_blocked(int argc, char **argv); /* the threads off the CPU now */
int cmd_windows(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_hist(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_serve(int argc, char **argv); /* the web page and its API (ctl/serve.c) */
int cmd_push(int argc, char **argv);  /* stored windows sent again to push targets */

#endif
