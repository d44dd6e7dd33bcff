/*
 * cgroup_paths: the cgroup v2 hierarchy's ids (offcpu_key.cgroup) named by
 * their paths, and the paths, units and containers a user names turned
 * into the subtrees a capture's kernel filter takes.
 *
 * Where the hierarchy is: cgroup v2 alone (a cgroup2 mount at
 * /sys/fs/cgroup), hybrid (cgroup2 at /sys/fs/cgroup/unified beside v1
 * controllers), or none (v1 only, or no cgroups): then every id is the
 * root's, nothing is named and every lookup says why.
 *
 * An id is named once and remembered after its cgroup is removed: from the
 * kernel's cgroup_mkdir/rename/rmdir events (cgroup_paths_event()), which
 * come when a cgroup is made, else at its first lookup from the "0::" line
 * of /proc/TGID/cgroup of a thread in it (checked against the directory's
 * inode, which is the id), else from a walk of the hierarchy (at most one
 * per CGROUP_PATHS_SCAN_INTERVAL_MS), else it stays unnamed and counted.
 * Paths are relative to the hierarchy's root, as /proc/PID/cgroup gives
 * them ("/system.slice/nginx.service"; the root is "/"), byte for byte:
 * spaces, UTF-8 and 4 KiB paths included.
 *
 * At most CGROUP_PATHS_MAX ids are kept; past that, the longest removed go
 * first. Thread-safe (one mutex). Does not log.
 */
#ifndef CGROUP_PATHS_H
#define CGROUP_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CGROUP_PATHS_MAX	     65536
#define CGROUP_PATHS_SCAN_INTERVAL_MS 1000

enum cgroup_hierarchy {
	CGROUP_HIERARCHY_NONE,	 /* no cgroup2 mount: v1 only, or no cgroups at all */
	CGROUP_HIERARCHY_V2,	 /* cgroup2 alone (no v1 controller mounted) */
	CGROUP_HIERARCHY_HYBRID, /* cgroup2 beside v1 controllers (systemd's "unified") */
};

struct cgroup_paths;

/* A cgroup a filter names: its id and depth (struct collector_cgroup's). */
struct cgroup_ref {
	uint64_t id;
	uint32_t level; /* 0: the root; /a/b is 2 */
};

struct cgroup_paths_stats {
	uint64_t known;	  /* ids named (removed ones included) */
	uint64_t removed; /* of those, cgroups gone */
	uint64_t events;  /* kernel events taken */
	uint64_t from_proc, scans; /* ids named from /proc; walks of the hierarchy */
	uint64_t failures; /* lookups of ids that could not be named */
};

/*
 * Finds the hierarchy from mountinfo (NULL: /proc/self/mountinfo) and walks
 * it once; proc_root (NULL: "/proc") is where /proc/TGID/cgroup is read.
 * Tests pass their own files. Returns 0 (also where there is no v2
 * hierarchy: cgroup_paths_hierarchy() says so) or -ENOMEM.
 */
int cgroup_paths_new(const char *mountinfo, const char *proc_root, struct cgroup_paths **ret);
void cgroup_paths_free(struct cgroup_paths *cp); /* NULL-safe */

/* Which hierarchy; *ret_mount (may be NULL) its mount point ("" for NONE);
 * *ret_why (may be NULL) for NONE, why there is none, a sentence. */
enum cgroup_hierarchy cgroup_paths_hierarchy(const struct cgroup_paths *cp, const char **ret_mount,
					     const char **ret_why);
/* "v2", "hybrid" or "none". */
const char *cgroup_hierarchy_name(enum cgroup_hierarchy h);

/* A kernel event: id was made or renamed at path, or removed (path may then
 * be NULL: the name it had is kept). Returns 0 or -ENOMEM. */
int cgroup_paths_event(struct cgroup_paths *cp, uint64_t id, const char *path, bool removed);

/*
 * The path of id into buf (NUL-terminated; truncated where it does not
 * fit), trying tgid's /proc/TGID/cgroup first where tgid is nonzero and the
 * id is not known yet. Returns 0; -ENOENT if it cannot be named (counted in
 * failures); -EOPNOTSUPP with no v2 hierarchy, or id 0.
 */
int cgroup_paths_name(struct cgroup_paths *cp, uint64_t id, uint32_t tgid, char *buf,
		      size_t size);

/*
 * The cgroup at path, which exists now: relative to the hierarchy's root
 * ("/a/b", as outputs write it) or the same under the mount point
 * ("/sys/fs/cgroup/a/b"). Returns 0; -ENOENT, with err naming the closest
 * known paths; -EOPNOTSUPP with no v2 hierarchy, with err saying why.
 */
int cgroup_paths_find(struct cgroup_paths *cp, const char *path, struct cgroup_ref *ret, char *err,
		      size_t err_size);

/*
 * The cgroups, existing now, of systemd unit unit ("nginx.service"; a name
 * without a suffix matches name.service) or of the container whose id
 * starts with container (a unique prefix: the runtimes' 64 hex digits, or
 * fewer): the outermost cgroup of each subtree whose cgroup_identity is
 * that, at most max into ret. Exactly one of unit and container is given.
 * Returns how many (>= 1); -ENOENT, with err naming the closest units or
 * containers known; -EEXIST for a container prefix that matches several
 * containers, with err naming them; -E2BIG past max; -EOPNOTSUPP as above.
 */
int cgroup_paths_find_identity(struct cgroup_paths *cp, const char *unit, const char *container,
			       struct cgroup_ref *ret, size_t max, char *err, size_t err_size);

void cgroup_paths_stats(struct cgroup_paths *cp, struct cgroup_paths_stats *ret);

#endif
