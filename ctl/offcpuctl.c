/*
 * offcpuctl: the command-line client of offcpud. Subcommands are dispatched
 * from a table; every one has a --json mode whose output (errors included)
 * is JSON. Exit codes are listed in usage() and proto/PROTOCOL.md.
 */
#include "ctl.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "help.h"

const char *socket_path;
bool json_output;
volatile int stop_requested;

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "status", cmd_status },
	{ "capture", cmd_capture },
	{ "blocked", cmd_blocked },
	{ "windows", cmd_windows },
	{ "export", cmd_export },
	{ "hist", cmd_hist },
	{ "push", cmd_push },
	{ "flamegraph", cmd_flamegraph },
	{ "latency", cmd_latency },
	{ "diff", cmd_diff },
	{ "help", cmd_help },
	{ "serve", cmd_serve },
};

/* Takes --json out of a command's arguments (argv[1..argc)), up to a "--":
 * it is a global option, given before the command or after it. Returns the
 * new argc. */
static int take_json(int argc, char **argv)
{
	int n = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				argv[n++] = argv[i++];
			break;
		}
		if (!strcmp(argv[i], "--json"))
			json_output = true;
		else
			argv[n++] = argv[i];
	}
	argv[n] = NULL;
	return n;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int opt;

	socket_path = getenv("OFFCPUD_SOCKET");
	if (!socket_path || !*socket_path)
		socket_path = DEFAULT_SOCKET;
	/* '+': stop at the command; its options are its own. */
	while ((opt = getopt_long(argc, argv, "+s:jhV", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			socket_path = optarg;
			break;
		case 'j':
			json_output = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("offcpuctl %s\n", OFFCPU_VERSION);
			return EXIT_OK;
		default:
			fprintf(stderr, "Try 'offcpuctl help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		int n;

		if (strcmp(argv[optind], commands[i].name))
			continue;
		n = take_json(argc - optind, argv + optind);
		return help_requested(n, argv + optind) ? command_help(argv[optind])
							: commands[i].fn(n, argv + optind);
	}
	return usage_error("unknown command '%s'", argv[optind]);
}
