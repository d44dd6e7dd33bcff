/*
 * Unit test of symbols/pid_ns.c: NSpid lines of status files in a fake
 * /proc, then this process's own in the real one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "pid_ns.h"

static char root[] = "/tmp/test-pid_ns.XXXXXX";

static void status(unsigned pid, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/%u/status", root, pid);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static const char *path_of(unsigned pid, const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/%u/%s", root, pid, name);
	return path;
}

/* A self/ns/pid link, and the ns directories of 127 and 128. */
static void ns_links(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/self", root);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/self/ns", root);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/self/ns/pid", root);
	CHECK(symlink("pid:[4026531836]", path) == 0);
}

int main(void)
{
	uint32_t ns_pid = 99;

	CHECK(mkdtemp(root));
	/* Two levels down: the innermost is the last field. */
	status(123, "Name:\tapp\nTgid:\t123\nNSpid:\t123\t7\t1\nNSsid:\t1\n");
	CHECK(pid_ns_innermost(root, 123, &ns_pid) == 0 && ns_pid == 1);
	/* Its own pid namespace is ours: none to tell. */
	status(124, "Name:\tapp\nNSpid:\t124\n");
	CHECK(pid_ns_innermost(root, 124, &ns_pid) == 0 && ns_pid == 0);
	/* A kernel without NSpid, and a process gone. */
	status(125, "Name:\told\nTgid:\t125\n");
	CHECK(pid_ns_innermost(root, 125, &ns_pid) == -ENOENT);
	CHECK(pid_ns_innermost(root, 126, &ns_pid) == -ENOENT);
	/* ns/pid links: one like ours is our namespace, whatever its status
	 * says; another is read from its status. */
	ns_links();
	status(127, "Name:\tapp\nNSpid:\t127\t5\n");
	CHECK(mkdir(path_of(127, "ns"), 0755) == 0);
	CHECK(symlink("pid:[4026531836]", path_of(127, "ns/pid")) == 0);
	CHECK(pid_ns_innermost(root, 127, &ns_pid) == 0 && ns_pid == 0);
	status(128, "Name:\tapp\nNSpid:\t128\t5\n");
	CHECK(mkdir(path_of(128, "ns"), 0755) == 0);
	CHECK(symlink("pid:[4026532999]", path_of(128, "ns/pid")) == 0);
	CHECK(pid_ns_innermost(root, 128, &ns_pid) == 0 && ns_pid == 5);
	CHECK(pid_ns_innermost(root, 129, &ns_pid) == -ENOENT);
	/* The real one: this test runs in its own namespace or the host's. */
	CHECK(pid_ns_innermost("/proc", getpid(), &ns_pid) == 0);
	CHECK(ns_pid == 0 || ns_pid != (uint32_t)getpid());
	for (unsigned pid = 123; pid <= 125; pid++) {
		char path[128];

		snprintf(path, sizeof(path), "%s/%u/status", root, pid);
		CHECK(unlink(path) == 0);
		snprintf(path, sizeof(path), "%s/%u", root, pid);
		CHECK(rmdir(path) == 0);
	}
	for (unsigned pid = 127; pid <= 128; pid++) {
		CHECK(unlink(path_of(pid, "ns/pid")) == 0);
		CHECK(rmdir(path_of(pid, "ns")) == 0);
		CHECK(unlink(path_of(pid, "status")) == 0);
		CHECK(rmdir(path_of(pid, "")) == 0);
	}
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/self/ns/pid", root);
		CHECK(unlink(path) == 0);
		snprintf(path, sizeof(path), "%s/self/ns", root);
		CHECK(rmdir(path) == 0);
		snprintf(path, sizeof(path), "%s/self", root);
		CHECK(rmdir(path) == 0);
	}
	CHECK(rmdir(root) == 0);
	return check_failures ? 1 : 0;
}
