/*
 * offcpud: the off-CPU profiler daemon. Parses the command line, loads the
 * configuration, runs the manager on a libuv loop until SIGTERM or SIGINT.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <uv.h>

#include "config.h"
#include "log.h"
#include "manager.h"

/* Blocks from this size up are mapped on their own (see main()). */
#define MMAP_THRESHOLD_BYTES (256 << 10)

static struct manager *manager;
static uv_signal_t sig_term, sig_int;

static void usage(FILE *out)
{
	fprintf(out, "Usage: offcpud [--config FILE] [--socket PATH]\n"
		     "\n"
		     "Off-CPU profiler daemon: keeps BPF programs attached to the scheduler and\n"
		     "answers offcpuctl on a Unix socket. Runs in the foreground.\n"
		     "\n"
		     "  -c, --config FILE  configuration file (default " OFFCPU_DEFAULT_CONFIG
		     "; built-in defaults if absent)\n"
		     "  -s, --socket PATH  listen here instead of the configured socket_path\n"
		     "  -h, --help         show this help\n"
		     "  -V, --version      show the version\n");
}

static void signal_cb(uv_signal_t *s, int signum)
{
	log_info("%s received, stopping", strsignal(signum));
	sd_notify(0, "STOPPING=1");
	manager_shutdown(manager);
	manager = NULL;
	uv_close((uv_handle_t *)&sig_term, NULL);
	uv_close((uv_handle_t *)&sig_int, NULL);
	(void)s;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *config_path = NULL, *socket_path = NULL;
	struct config cfg;
	char err[512];
	uv_loop_t *loop;
	int opt, r;

	/* libdw would fetch missing debug files over the network while a drain
	 * runs (a login shell sets this on Debian): symbols stay local. Before
	 * any thread starts, as setenv must be. */
	unsetenv("DEBUGINFOD_URLS");
	/* A fixed threshold: glibc raises its own to the size of each large
	 * block freed, up to 32 MiB, so that a drain's or an export's large
	 * arrays came from the threads' arenas afterwards, and their memory,
	 * freed, stayed in the daemon's RSS (up to 70 MiB under process churn,
	 * bench/churn.py). Mapped blocks go back to the kernel when freed. */
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
	log_to_journal = getenv("JOURNAL_STREAM") != NULL;
	while ((opt = getopt_long(argc, argv, "c:s:hV", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config_path = optarg;
			break;
		case 's':
			socket_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("offcpud %s\n", OFFCPU_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}

	config_init(&cfg);
	r = config_load(&cfg, config_path ? config_path : OFFCPU_DEFAULT_CONFIG, err, sizeof(err));
	if (r == -ENOENT && !config_path) {
		log_info("no %s, using built-in defaults", OFFCPU_DEFAULT_CONFIG);
	} else if (r < 0) {
		log_error("%s", err);
		return 1;
	}
	if (socket_path) {
		if (socket_path[0] != '/' || strlen(socket_path) >= sizeof(cfg.socket_path)) {
			log_error("--socket needs an absolute path shorter than %zu bytes",
				  sizeof(cfg.socket_path));
			return 2;
		}
		strcpy(cfg.socket_path, socket_path);
	}

	signal(SIGPIPE, SIG_IGN); /* a client that hangs up is seen as EPIPE */
	loop = uv_default_loop();
	r = manager_new(loop, &cfg, &manager);
	if (r < 0)
		return 1;
	uv_signal_init(loop, &sig_term);
	uv_signal_start(&sig_term, signal_cb, SIGTERM);
	uv_signal_init(loop, &sig_int);
	uv_signal_start(&sig_int, signal_cb, SIGINT);
	sd_notify(0, "READY=1\nSTATUS=attached; 0 captures running");

	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	log_info("stopped");
	return 0;
}
