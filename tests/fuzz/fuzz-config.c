/*
 * fuzz-config: config_parse() on any text, as offcpud reads offcpud.conf.
 * The input is cut at its first NUL (config_load() refuses a file with one
 * before calling config_parse()). Properties checked (abort() if not): a
 * refused file leaves the config as it was and says why, naming the file;
 * an accepted one leaves every string terminated and every path absolute.
 * Build and run: scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define FUZZ_NAME "fuzz.conf"

static void fuzz_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz-config: property violated: %s\n", what);
		abort();
	}
}

#define FUZZ_TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c, before;
	char err[512];
	char *text = malloc(size + 1);

	fuzz_check(text != NULL, "out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	config_init(&c);
	before = c;
	memset(err, 'x', sizeof(err));
	if (config_parse(&c, FUZZ_NAME, text, err, sizeof(err)) < 0) {
		fuzz_check(!memcmp(&c, &before, sizeof(c)), "a refused file changed the config");
		fuzz_check(FUZZ_TERMINATED(err), "reason not terminated");
		fuzz_check(!strncmp(err, FUZZ_NAME ":", strlen(FUZZ_NAME ":")),
			   "reason does not name the file");
	} else {
		fuzz_check(err[0] == '\0', "accepted with a message");
		fuzz_check(FUZZ_TERMINATED(c.socket_path) && c.socket_path[0] == '/',
			   "socket_path");
		fuzz_check(FUZZ_TERMINATED(c.database) && c.database[0] == '/', "database");
		fuzz_check(FUZZ_TERMINATED(c.socket_group), "socket_group");
		fuzz_check(FUZZ_TERMINATED(c.continuous_requests), "continuous_requests");
		fuzz_check(c.socket_mode <= 0777, "socket_mode");
		fuzz_check(c.tracepoint <= CONFIG_TRACEPOINT_RAW_TP, "tracepoint");
		fuzz_check(c.continuous_kinds != 0, "continuous_kinds empty");
		fuzz_check(c.continuous_states != 0, "continuous_states empty");
	}
	free(text);
	return 0;
}
