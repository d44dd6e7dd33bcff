/* pid_ns: see pid_ns.h. */
#define _GNU_SOURCE
#include "pid_ns.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NS_LINK_MAX 64 /* "pid:[4026531836]" */

/* The pid namespace of the process `who` names under proc_root, as its
 * ns/pid link reads, into buf; -errno if it cannot be read. */
static int ns_link(const char *proc_root, const char *who, char *buf)
{
	char path[64 + 4096];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s/ns/pid", proc_root, who);
	n = readlink(path, buf, NS_LINK_MAX - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* The daemon's own, read once for /proc; "" if it cannot be. */
static char proc_own_ns[NS_LINK_MAX];
static pthread_once_t proc_own_once = PTHREAD_ONCE_INIT;

static void proc_own_read(void)
{
	if (ns_link("/proc", "self", proc_own_ns) < 0)
		proc_own_ns[0] = '\0';
}

/* 1 if tgid is in our own pid namespace (its pid there is tgid), 0 if not,
 * -errno if it is gone, -ENOTSUP if ns links cannot tell (a fake proc_root). */
static int in_own_ns(const char *proc_root, uint32_t tgid)
{
	char own_buf[NS_LINK_MAX], theirs[NS_LINK_MAX], who[16];
	const char *own = own_buf;
	int r;

	if (!strcmp(proc_root, "/proc")) {
		pthread_once(&proc_own_once, proc_own_read);
		own = proc_own_ns;
	} else if (ns_link(proc_root, "self", own_buf) < 0) {
		own_buf[0] = '\0';
	}
	if (!own[0])
		return -ENOTSUP;
	snprintf(who, sizeof(who), "%u", tgid);
	r = ns_link(proc_root, who, theirs);
	if (r < 0)
		return r == -ENOENT || r == -ESRCH ? -ENOENT : -ENOTSUP;
	return !strcmp(own, theirs);
}

int pid_ns_innermost(const char *proc_root, uint32_t tgid, uint32_t *ret)
{
	char path[64 + 4096], line[512];
	unsigned long last = 0;
	bool found = false;
	FILE *f;
	int own;

	/* Most processes share ours: one readlink instead of the kernel
	 * formatting the whole status file (2 against 13 us; under process
	 * churn this ran for every new process and every process drained). */
	own = in_own_ns(proc_root, tgid);
	if (own == 1) {
		*ret = 0;
		return 0;
	}
	if (own == -ENOENT)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%u/status", proc_root, tgid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = line + strlen("NSpid:"), *end;

		if (strncmp(line, "NSpid:", strlen("NSpid:")))
			continue;
		found = true;
		for (;;) {
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			last = v;
			p = end;
		}
	}
	fclose(f);
	if (!found || last > UINT32_MAX)
		return -ENOENT;
	*ret = last == tgid ? 0 : (uint32_t)last;
	return 0;
}
