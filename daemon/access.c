/* access: see access.h. */
#define _GNU_SOURCE /* struct ucred, SO_PEERGROUPS */
#include "access.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

_Static_assert(ACCESS_MAX_IDS >= CONFIG_MAX_NAMES, "a config list fits the policy");

/* A name or a numeric id; -1 if no such user or group. */
static long lookup(const char *name, bool group)
{
	char *end;
	long id = strtol(name, &end, 10);

	if (*name && !*end)
		return id;
	if (group) {
		struct group *g = getgrnam(name);

		return g ? (long)g->gr_gid : -1;
	}
	struct passwd *pw = getpwnam(name);

	return pw ? (long)pw->pw_uid : -1;
}

/* Parses a comma-separated list (checked by config) into ids. */
static size_t resolve(const char *list, bool group, unsigned *ids, const char *key, char *warn,
		      size_t warn_size)
{
	char buf[512], *save, *w;
	size_t n = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	for (w = strtok_r(buf, ", \t", &save); w && n < ACCESS_MAX_IDS;
	     w = strtok_r(NULL, ", \t", &save)) {
		long id = lookup(w, group);

		if (id < 0) {
			if (!*warn)
				snprintf(warn, warn_size, "%s: no %s '%s' on this system: left out",
					 key, group ? "group" : "user", w);
			continue;
		}
		ids[n++] = (unsigned)id;
	}
	return n;
}

void access_policy_init(struct access_policy *p, const struct config *cfg, char *warn,
			size_t warn_size)
{
	*warn = '\0';
	memset(p, 0, sizeof(*p));
	p->n_users = resolve(cfg->allowed_users, false, p->users, "allowed_users", warn, warn_size);
	p->n_groups =
		resolve(cfg->allowed_groups, true, p->groups, "allowed_groups", warn, warn_size);
	p->n_capture_users = resolve(cfg->capture_users, false, p->capture_users, "capture_users",
				     warn, warn_size);
	p->n_capture_groups = resolve(cfg->capture_groups, true, p->capture_groups,
				      "capture_groups", warn, warn_size);
}

void access_client_from_socket(int fd, struct access_client *ret)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t groups[256];

	memset(ret, 0, sizeof(*ret));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return;
	ret->uid = cred.uid;
	ret->gid = cred.gid;
	ret->pid = cred.pid;
	ret->known = true;
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
		ret->n_groups = len / sizeof(gid_t);
		if (ret->n_groups > ACCESS_MAX_IDS)
			ret->n_groups = ACCESS_MAX_IDS;
		memcpy(ret->groups, groups, ret->n_groups * sizeof(gid_t));
	}
}

static bool has_id(const unsigned *ids, size_t n, unsigned id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* Whether the client's primary or a supplementary group is in groups. */
static bool in_groups(const struct access_client *c, const gid_t *groups, size_t n)
{
	if (has_id(groups, n, c->gid))
		return true;
	for (size_t i = 0; i < c->n_groups; i++)
		if (has_id(groups, n, c->groups[i]))
			return true;
	return false;
}

bool access_may_connect(const struct access_policy *p, const struct access_client *c, char *why,
			size_t why_size)
{
	if (!c->known) {
		snprintf(why, why_size, "the client's credentials are unknown");
		return false;
	}
	if (c->uid == 0 || has_id(p->users, p->n_users, c->uid) ||
	    has_id(p->capture_users, p->n_capture_users, c->uid) ||
	    in_groups(c, p->groups, p->n_groups) ||
	    in_groups(c, p->capture_groups, p->n_capture_groups))
		return true;
	snprintf(why, why_size,
		 "uid %u is not root and not in allowed_users, allowed_groups, capture_users or "
		 "capture_groups of offcpud.conf",
		 (unsigned)c->uid);
	return false;
}

/* The real uid owning /proc/ID, or -1 if it is gone. */
static long owner(const char *proc_root, unsigned id)
{
	char path[128], line[256];
	long uid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u/status", proc_root, id);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %ld", &uid) == 1)
			break;
	fclose(f);
	return uid;
}

/* The first of ids (a process or thread list) that c does not own, or 0. */
static unsigned not_owned(const struct access_client *c, const uint32_t *ids, size_t n,
			  const char *proc_root, long *ret_owner)
{
	for (size_t i = 0; i < n; i++) {
		long uid = owner(proc_root, ids[i]);

		if (uid >= 0 && uid != (long)c->uid) {
			*ret_owner = uid;
			return ids[i];
		}
	}
	return 0;
}

int access_check_capture(const struct access_policy *p, const struct access_client *c,
			 const struct proto_capture_request *req, const char *proc_root, char *why,
			 size_t why_size)
{
	const char *rule = "needs root, or capture_users or capture_groups in offcpud.conf "
			   "(allowed clients capture only their own processes)";
	unsigned id;
	long uid;

	if (c->uid == 0 || has_id(p->capture_users, p->n_capture_users, c->uid) ||
	    in_groups(c, p->capture_groups, p->n_capture_groups))
		return 0;
	if (!req->n_pids && !req->n_tids) {
		snprintf(why, why_size, "capturing every process %s", rule);
		return -EPERM;
	}
	/* A child followed may exec a setuid program: not the client's. */
	if (req->follow_children) {
		snprintf(why, why_size, "following children (capture -- CMD) %s", rule);
		return -EPERM;
	}
	id = not_owned(c, req->pids, req->n_pids, proc_root, &uid);
	if (!id)
		id = not_owned(c, req->tids, req->n_tids, proc_root, &uid);
	if (id) {
		snprintf(why, why_size, "capturing %u, owned by uid %ld, %s", id, uid, rule);
		return -EPERM;
	}
	return 0;
}
