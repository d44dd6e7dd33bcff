/*
 * access: who may talk to offcpud, and what they may ask (docs/SECURITY.md).
 *
 * Clients are known by their socket credentials (SO_PEERCRED and
 * SO_PEERGROUPS, which the kernel fills in; a client cannot forge them).
 * Three levels:
 *  - root (uid 0): everything;
 *  - capture users (capture_users, capture_groups): everything an allowed
 *    client may do, and capture any process: system-wide, other users'
 *    processes, request probes in them;
 *  - allowed clients (allowed_users, allowed_groups): status, the stored
 *    profiles (windows, export, hist: these hold every process's stacks),
 *    and captures of their own processes (same real uid), request probes
 *    included.
 * Anyone else is refused at connect time. Does not log.
 */
#ifndef ACCESS_H
#define ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "proto.h"

#define ACCESS_MAX_IDS CONFIG_MAX_NAMES /* users or groups in one list */

struct access_policy {
	uid_t users[ACCESS_MAX_IDS], capture_users[ACCESS_MAX_IDS];
	gid_t groups[ACCESS_MAX_IDS], capture_groups[ACCESS_MAX_IDS];
	size_t n_users, n_capture_users, n_groups, n_capture_groups;
};

/* A client's credentials, as the kernel gave them at connect time. */
struct access_client {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t groups[ACCESS_MAX_IDS]; /* supplementary groups (the first ones) */
	size_t n_groups;
	bool known; /* false if the kernel gave none: treated as nobody */
};

/*
 * Resolves the config's user and group names (or numeric ids). A name that
 * does not exist is left out and reported in warn (one message per call,
 * "" if none), so a missing group fails closed rather than stopping the
 * daemon.
 */
void access_policy_init(struct access_policy *p, const struct config *cfg, char *warn,
			size_t warn_size);

/* Reads the credentials of a connected Unix socket. */
void access_client_from_socket(int fd, struct access_client *ret);

/* Whether c may connect at all; if not, why (naming the rule). */
bool access_may_connect(const struct access_policy *p, const struct access_client *c, char *why,
			size_t why_size);

/*
 * Whether c may run this capture, reading owners under proc_root. 0, or
 * -EPERM with the rule in why ("capturing every process needs root or
 * capture_users/capture_groups in offcpud.conf"). A pid that does not exist
 * passes: the capture's own check reports it.
 */
int access_check_capture(const struct access_policy *p, const struct access_client *c,
			 const struct proto_capture_request *req, const char *proc_root, char *why,
			 size_t why_size);

#endif
