/* cgroup_identity: see cgroup_identity.h. */
#include "cgroup_identity.h"

#include <ctype.h>
#include <string.h>

#define CONTAINER_ID_LEN 64

/* What a segment is to the one below it: the cgroupfs shapes name a bare
 * ID, a pod or a QoS class by where it is. */
enum segment_kind {
	SEGMENT_OTHER,
	SEGMENT_DOCKER,	  /* "docker" */
	SEGMENT_KUBEPODS, /* "kubepods" */
	SEGMENT_QOS,	  /* "burstable" or "besteffort" in kubepods */
	SEGMENT_POD,	  /* a pod's cgroup, either driver */
};

struct segment {
	const char *s;
	size_t n;
};

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_hex(s[i]))
			return false;
	return true;
}

static bool equals(struct segment seg, const char *lit)
{
	size_t n = strlen(lit);

	return seg.n == n && !memcmp(seg.s, lit, n);
}

static bool starts_with(struct segment seg, const char *lit)
{
	size_t n = strlen(lit);

	return seg.n >= n && !memcmp(seg.s, lit, n);
}

static bool ends_with(struct segment seg, const char *lit)
{
	size_t n = strlen(lit);

	return seg.n >= n && !memcmp(seg.s + seg.n - n, lit, n);
}

/* seg less n bytes at the start and m at the end (n + m <= seg.n). */
static struct segment trim(struct segment seg, size_t n, size_t m)
{
	return (struct segment){ seg.s + n, seg.n - n - m };
}

/* A pod UID with sep between its UUID's groups, or a static pod's 32 hex. */
static bool pod_uid_valid(struct segment uid, char sep)
{
	if (uid.n == 32)
		return all_hex(uid.s, uid.n);
	if (uid.n != 36)
		return false;
	for (size_t i = 0; i < uid.n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? uid.s[i] != sep : !is_hex(uid.s[i]))
			return false;
	}
	return true;
}

static bool is_unit(struct segment seg)
{
	static const char *const suffixes[] = { ".service", ".scope", ".socket", ".mount",
						".swap" };

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (ends_with(seg, suffixes[i]) && seg.n > strlen(suffixes[i]))
			return true;
	return false;
}

/* The systemd driver's pod slice, PREFIX-podUID.slice, where PREFIX ends in
 * kubepods, kubepods-burstable or kubepods-besteffort (kind's cgroup root
 * makes it kubelet-kubepods...). Sets *uid. */
static bool pod_slice(struct segment seg, struct segment *uid)
{
	static const char *const classes[] = { "kubepods", "kubepods-burstable",
					       "kubepods-besteffort" };
	struct segment name, prefix;
	size_t dash;

	if (!ends_with(seg, ".slice"))
		return false;
	name = trim(seg, 0, strlen(".slice"));
	for (dash = name.n; dash > 0 && name.s[dash - 1] != '-'; dash--)
		;
	if (!dash)
		return false;
	*uid = trim(name, dash, 0);
	if (!starts_with(*uid, "pod"))
		return false;
	*uid = trim(*uid, strlen("pod"), 0);
	if (!pod_uid_valid(*uid, '_'))
		return false;
	prefix = trim(name, 0, name.n - dash + 1);
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		size_t n = strlen(classes[i]);

		if (ends_with(prefix, classes[i]) &&
		    (prefix.n == n || prefix.s[prefix.n - n - 1] == '-'))
			return true;
	}
	return false;
}

/* The cgroupfs driver's pod directory, podUID in kubepods or in its QoS
 * class. Sets *uid. */
static bool pod_dir(struct segment seg, enum segment_kind parent, struct segment *uid)
{
	if ((parent != SEGMENT_KUBEPODS && parent != SEGMENT_QOS) || !starts_with(seg, "pod"))
		return false;
	*uid = trim(seg, strlen("pod"), 0);
	return pod_uid_valid(*uid, '-');
}

/* A container's own cgroup: PREFIX-ID[.scope], or a bare ID named by its
 * parent. Sets *id, *runtime and *conmon. */
static bool container_segment(struct segment seg, enum segment_kind parent, struct segment *id,
			      enum cgroup_runtime *runtime, bool *conmon)
{
	static const struct {
		const char *prefix;
		enum cgroup_runtime runtime;
		bool conmon;
	} prefixes[] = {
		{ "docker-", CGROUP_RUNTIME_DOCKER, false },
		{ "cri-containerd-", CGROUP_RUNTIME_CONTAINERD, false },
		{ "crio-conmon-", CGROUP_RUNTIME_CRIO, true },
		{ "crio-", CGROUP_RUNTIME_CRIO, false },
		{ "libpod-conmon-", CGROUP_RUNTIME_PODMAN, true },
		{ "libpod-", CGROUP_RUNTIME_PODMAN, false },
	};
	struct segment body = seg;

	if (ends_with(seg, ".scope"))
		body = trim(seg, 0, strlen(".scope"));
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (!starts_with(body, prefixes[i].prefix))
			continue;
		*id = trim(body, strlen(prefixes[i].prefix), 0);
		if (id->n != CONTAINER_ID_LEN || !all_hex(id->s, id->n))
			return false;
		*runtime = prefixes[i].runtime;
		*conmon = prefixes[i].conmon;
		return true;
	}
	if (seg.n != CONTAINER_ID_LEN || !all_hex(seg.s, seg.n))
		return false;
	*id = seg;
	*runtime = parent == SEGMENT_DOCKER ? CGROUP_RUNTIME_DOCKER
		   : parent == SEGMENT_POD  ? CGROUP_RUNTIME_KUBEPODS
					    : CGROUP_RUNTIME_UNKNOWN;
	*conmon = false;
	return true;
}

/* Notes what seg names in *id; returns what it is to the next segment. */
static enum segment_kind segment_parse(struct segment seg, enum segment_kind parent,
				       struct cgroup_identity *id)
{
	struct segment found;
	enum cgroup_runtime runtime;
	bool conmon;

	if (is_unit(seg)) {
		id->unit = seg.s;
		id->unit_len = seg.n;
	}
	if (pod_slice(seg, &found) || pod_dir(seg, parent, &found)) {
		id->pod_uid = found.s;
		id->pod_uid_len = found.n;
		return SEGMENT_POD;
	}
	if (container_segment(seg, parent, &found, &runtime, &conmon)) {
		id->container = found.s;
		id->container_len = found.n;
		id->runtime = runtime;
		id->conmon = conmon;
		return SEGMENT_OTHER;
	}
	if (equals(seg, "docker"))
		return SEGMENT_DOCKER;
	if (equals(seg, "kubepods"))
		return SEGMENT_KUBEPODS;
	if (parent == SEGMENT_KUBEPODS && (equals(seg, "burstable") || equals(seg, "besteffort")))
		return SEGMENT_QOS;
	return SEGMENT_OTHER;
}

void cgroup_identity_parse(const char *path, size_t len, struct cgroup_identity *ret)
{
	struct cgroup_identity id = { 0 };
	enum segment_kind parent = SEGMENT_OTHER;

	*ret = id;
	if (!len || path[0] != '/' || memchr(path, '\0', len))
		return;
	if (len == 1)
		return; /* the root */
	for (size_t at = 1; at <= len;) {
		const char *slash = memchr(path + at, '/', len - at);
		struct segment seg = { path + at, slash ? (size_t)(slash - path) - at : len - at };

		if (!seg.n || equals(seg, ".") || equals(seg, ".."))
			return;
		parent = segment_parse(seg, parent, &id);
		at += seg.n + 1;
	}
	*ret = id;
}

size_t cgroup_identity_pod_uid(const struct cgroup_identity *id, char *buf, size_t size)
{
	size_t n = id->pod_uid_len;

	if (!n || n >= size)
		return 0;
	for (size_t i = 0; i < n; i++)
		buf[i] = id->pod_uid[i] == '_' ? '-' : id->pod_uid[i];
	buf[n] = '\0';
	return n;
}

const char *cgroup_identity_runtime_name(enum cgroup_runtime runtime)
{
	switch (runtime) {
	case CGROUP_RUNTIME_DOCKER:
		return "docker";
	case CGROUP_RUNTIME_CONTAINERD:
		return "containerd";
	case CGROUP_RUNTIME_CRIO:
		return "cri-o";
	case CGROUP_RUNTIME_PODMAN:
		return "podman";
	case CGROUP_RUNTIME_KUBEPODS:
		return "kubepods";
	case CGROUP_RUNTIME_UNKNOWN:
		return "unknown";
	case CGROUP_RUNTIME_NONE:
		break;
	}
	return "";
}

static void span_copy(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		len = 0; /* longer than any name: not one */
	if (len) /* src is NULL where there is none */
		memcpy(dst, src, len);
	dst[len] = '\0';
}

void cgroup_identity_names(const char *path, struct cgroup_identity_names *ret)
{
	struct cgroup_identity id;

	cgroup_identity_parse(path ? path : "", path ? strlen(path) : 0, &id);
	span_copy(ret->unit, sizeof(ret->unit), id.unit, id.unit_len);
	span_copy(ret->container, sizeof(ret->container), id.container, id.container_len);
	if (!cgroup_identity_pod_uid(&id, ret->pod, sizeof(ret->pod)))
		ret->pod[0] = '\0';
	ret->runtime = cgroup_identity_runtime_name(id.runtime);
}

bool cgroup_path_within(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!strcmp(prefix, "/"))
		return path[0] == '/';
	return !strncmp(path, prefix, n) && (path[n] == '\0' || path[n] == '/');
}

bool cgroup_unit_matches(const char *name, const char *unit)
{
	size_t n = strlen(unit);

	if (!strcmp(name, unit))
		return true;
	return !strchr(unit, '.') && !strncmp(name, unit, n) && !strcmp(name + n, ".service");
}

bool cgroup_container_matches(const char *container, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!*container || n > strlen(container))
		return false;
	for (size_t i = 0; i < n; i++)
		if (tolower((unsigned char)container[i]) != tolower((unsigned char)prefix[i]))
			return false;
	return true;
}
