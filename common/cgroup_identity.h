/*
 * cgroup_identity: what a cgroup v2 path says about the processes in it, the
 * identities a performance engineer filters and groups by: the systemd unit,
 * the container and its runtime, the Kubernetes pod. Pure: the path is one
 * the caller already has (relative to the hierarchy's root, as the "0::"
 * line of /proc/PID/cgroup gives it); each answer points into it, nothing is
 * copied or allocated. Does not log.
 *
 * The shapes it knows (ID: 64 lowercase hex, as the runtimes name it; UID:
 * the pod's, a UUID or, for static pods, 32 hex):
 *   systemd   /system.slice/nginx.service, .../user@1000.service/app.slice/
 *             app-gnome-firefox-1234.scope, /init.scope; a unit's own
 *             sub-cgroups (/system.slice/foo.service/worker) are still in it
 *   Docker    /system.slice/docker-ID.scope; cgroupfs driver: /docker/ID
 *   Kubernetes, systemd driver: [kubelet-]kubepods[-burstable|-besteffort]-
 *             podUID.slice (UID with underscores) holding cri-containerd-ID.scope,
 *             crio-ID.scope or docker-ID.scope; cgroupfs driver: kubepods/
 *             [burstable|besteffort/]podUID (UID with dashes) holding ID
 *   CRI-O     crio-ID.scope, crio-conmon-ID.scope; cgroupfs: crio-ID
 *   Podman    libpod-ID.scope[/container], libpod-conmon-ID.scope, rootful
 *             or rootless (under user@UID.service); cgroupfs: libpod-ID
 * Each identity is the innermost of its sort along the path, apart from the
 * others: docker in docker, kind's and k3s's pods inside a node's container
 * and systemd inside a container name what the process runs in.
 */
#ifndef CGROUP_IDENTITY_H
#define CGROUP_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

/* Who named the container's cgroup. */
enum cgroup_runtime {
	CGROUP_RUNTIME_NONE,	   /* no container */
	CGROUP_RUNTIME_DOCKER,	   /* docker-ID.scope; docker/ID */
	CGROUP_RUNTIME_CONTAINERD, /* cri-containerd-ID.scope (CRI, systemd driver) */
	CGROUP_RUNTIME_CRIO,	   /* crio-[conmon-]ID[.scope] */
	CGROUP_RUNTIME_PODMAN,	   /* libpod-[conmon-]ID[.scope] */
	/* A bare ID in a pod's cgroup (kubelet's cgroupfs driver): containerd
	 * or dockershim, the path does not say which. */
	CGROUP_RUNTIME_KUBEPODS,
	/* A bare ID anywhere else (docker --cgroup-parent, ECS...). */
	CGROUP_RUNTIME_UNKNOWN,
};

/* Each span points into the parsed path; len 0 (and NULL): none. */
struct cgroup_identity {
	/* The innermost systemd unit, as the path spells it (escaped: \x2d):
	 * a .service, .scope, .socket, .mount or .swap; slices are not. */
	const char *unit;
	size_t unit_len;
	const char *container; /* the innermost container's ID */
	size_t container_len;
	/* The innermost pod's UID as the path spells it; its canonical form:
	 * cgroup_identity_pod_uid(). */
	const char *pod_uid;
	size_t pod_uid_len;
	enum cgroup_runtime runtime; /* the container's; NONE without one */
	/* The cgroup is the container's monitor (crio-conmon-, libpod-conmon-):
	 * the container is the one it runs, the process is not in it. */
	bool conmon;
};

/* The longest pod UID and its NUL: the size of cgroup_identity_pod_uid()'s
 * buffer. */
#define CGROUP_POD_UID_SIZE 37

/* The identities in path[0, len) (no NUL needed; NULs in it are not a path).
 * A path the kernel does not write (empty, relative, an empty segment as of a
 * doubled or trailing slash, "." or "..") has none; so has "/". */
void cgroup_identity_parse(const char *path, size_t len, struct cgroup_identity *ret);

/* The pod UID in its canonical form (dashes: the systemd driver spells it
 * with underscores), with a NUL, in buf. Returns its length; 0: no pod, or
 * it does not fit (CGROUP_POD_UID_SIZE always does). */
size_t cgroup_identity_pod_uid(const struct cgroup_identity *id, char *buf, size_t size);

/* "docker", "containerd", "cri-o", "podman", "kubepods", "unknown"; "" for
 * CGROUP_RUNTIME_NONE and values out of range. */
const char *cgroup_identity_runtime_name(enum cgroup_runtime runtime);

/* A path's identities as strings, for outputs and filters. */
#define CGROUP_UNIT_SIZE      256 /* NAME_MAX and its NUL */
#define CGROUP_CONTAINER_SIZE 65  /* 64 hex digits and the NUL */

struct cgroup_identity_names {
	char unit[CGROUP_UNIT_SIZE];	       /* "": none */
	char container[CGROUP_CONTAINER_SIZE]; /* "": none */
	char pod[CGROUP_POD_UID_SIZE];	       /* canonical; "": none */
	const char *runtime;		       /* cgroup_identity_runtime_name(); "": none */
};

/* The identities of path, a NUL-terminated string (NULL: none), copied. */
void cgroup_identity_names(const char *path, struct cgroup_identity_names *ret);

/* Whether path is prefix or below it: "/a" holds "/a" and "/a/b", not
 * "/ab"; "/" holds every path. */
bool cgroup_path_within(const char *path, const char *prefix);

/* Whether unit, as a user names it, is name: the same, or name is
 * unit.service where unit has no suffix (no '.'). */
bool cgroup_unit_matches(const char *name, const char *unit);

/* Whether container, a full id, starts with prefix (hex, any case). */
bool cgroup_container_matches(const char *container, const char *prefix);

#endif
