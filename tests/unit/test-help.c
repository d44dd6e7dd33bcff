/* help: a command's help cut from a usage text shaped as offcpuctl's. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "help.h"

static const char usage[] =
	"Usage: offcpuctl [--socket PATH] [--json] COMMAND [OPTIONS]\n"
	"\n"
	"Commands:\n"
	"  status [--verbose]          each kind, and why; store,\n"
	"                              slots\n"
	"      -v, --verbose           also the programs\n"
	"  windows [--since T]         list the stored windows\n"
	"  capture [OPTIONS]           capture stacks\n"
	"      -p, --pid PID           processes\n"
	"          --state LIST        states\n"
	"      plus the who options, stack filters and output options below\n"
	"  push RANGE [--target NAME]  send windows again\n"
	"      RANGE is --window lastNx, or --from T [--to T]\n"
	"          --target NAME       only to NAME\n"
	"  blocked [OPTIONS]           the threads off the CPU now, longest first: for\n"
	"                              how long, where each waits, its kernel and user\n"
	"                              stacks and who woke it; stops nothing\n"
	"  help [COMMAND]              this text\n"
	"\n"
	"Who options of capture:\n"
	"  --unit NAME                 only this unit\n"
	"\n"
	"Stack filters of capture:\n"
	"  --comm NAME                 only threads named NAME\n"
	"\n"
	"Output options of capture:\n"
	"  -o, --output FILE           write to FILE\n"
	"\n"
	"Times T: unix seconds or RFC 3339.\n"
	"\n"
	"Global options:\n"
	"  -s, --socket PATH  daemon socket\n"
	"\n"
	"Exit codes: 0 ok, 2 bad arguments.\n"
	"\n"
	"Examples of status:\n"
	"  offcpuctl status\n"
	"  offcpuctl status --verbose\n"
	"\n"
	"Examples of capture:\n"
	"  offcpuctl capture -p 1\n";

static bool ends_with(const char *s, const char *end)
{
	return strlen(s) >= strlen(end) && !strcmp(s + strlen(s) - strlen(end), end);
}

static char *help(const char *cmd, int *ret)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	*ret = help_command(usage, cmd, f);
	fclose(f);
	return text;
}

int main(void)
{
	char *argv_help[] = { "capture", "--pid", "1", "--help" };
	char *argv_dashdash[] = { "flamegraph", "--", "-h" };
	char *argv_none[] = { "capture", "--pid", "1" };
	char *t;
	int r;

	t = help("status", &r);
	CHECK(r == 0);
	CHECK_STR(t, "Usage: offcpuctl [--socket PATH] [--json] status [--verbose]\n"
		     "\n"
		     "each kind, and why; store, slots\n"
		     "\n"
		     "  -v, --verbose           also the programs\n"
		     "\n"
		     "Global options:\n"
		     "  -s, --socket PATH  daemon socket\n"
		     "\n"
		     "Exit codes: 0 ok, 2 bad arguments.\n"
		     "\n"
		     "Examples:\n"
		     "  offcpuctl status\n"
		     "  offcpuctl status --verbose\n");
	free(t);

	t = help("capture", &r); /* its examples last, as the text's last paragraph */
	CHECK(r == 0);
	CHECK(ends_with(t, "arguments.\n\nExamples:\n  offcpuctl capture -p 1\n"));
	free(t);

	t = help("capture", &r);
	CHECK(r == 0);
	CHECK(strstr(t, "] capture [OPTIONS]\n\ncapture stacks\n\n  -p, --pid PID") != NULL);
	CHECK(strstr(t, "\n      --state LIST        states\n") != NULL);
	CHECK(strstr(t, "Stack filters of capture:\n  --comm NAME") != NULL);
	CHECK(strstr(t, "Who options of capture:\n") != NULL);
	CHECK(strstr(t, "Output options of capture:\n") != NULL);
	CHECK(strstr(t, "Times T") == NULL);
	CHECK(strstr(t, "windows") == NULL);
	free(t);

	t = help("windows", &r); /* no option lines; T: the times paragraph */
	CHECK(r == 0);
	CHECK(strstr(t, "list the stored windows\n\nTimes T: unix seconds") != NULL);
	CHECK(strstr(t, "Stack filters") == NULL);
	free(t);

	t = help("push", &r); /* RANGE: the times paragraph; no filters */
	CHECK(r == 0);
	CHECK_STR(t, "Usage: offcpuctl [--socket PATH] [--json] push RANGE [--target NAME]\n"
		     "\n"
		     "send windows again\n"
		     "\n"
		     "  RANGE is --window lastNx, or --from T [--to T]\n"
		     "      --target NAME       only to NAME\n"
		     "\n"
		     "Times T: unix seconds or RFC 3339.\n"
		     "\n"
		     "Global options:\n"
		     "  -s, --socket PATH  daemon socket\n"
		     "\n"
		     "Exit codes: 0 ok, 2 bad arguments.\n");
	free(t);

	t = help("blocked", &r); /* the description in lines of 79 columns at most */
	CHECK(r == 0);
	CHECK_STR(t, "Usage: offcpuctl [--socket PATH] [--json] blocked [OPTIONS]\n"
		     "\n"
		     "the threads off the CPU now, longest first: for how long, where each waits, "
		     "its\n"
		     "kernel and user stacks and who woke it; stops nothing\n"
		     "\n"
		     "Global options:\n"
		     "  -s, --socket PATH  daemon socket\n"
		     "\n"
		     "Exit codes: 0 ok, 2 bad arguments.\n");
	free(t);

	t = help("stat", &r); /* a prefix is not a command */
	CHECK(r == -ENOENT);
	free(t);
	t = help("--comm", &r); /* nor a line outside Commands: */
	CHECK(r == -ENOENT);
	free(t);

	CHECK(help_requested(4, argv_help));
	CHECK(!help_requested(3, argv_dashdash));
	CHECK(!help_requested(3, argv_none));
	return CHECK_DONE();
}
