/* Unit test of daemon/profile/cgroup_identity.c: a table of cgroup v2 paths
 * (systemd units, Docker, containerd, CRI-O and Podman under either cgroup
 * driver, Kubernetes pods, nesting, bad input) and the unit, container, pod
 * UID and runtime each names; every path, each of its prefixes, paths over
 * 4096 bytes and random ones parsed from a buffer of exactly their length
 * (no NUL: ASan sees any read past it), the answers always inside it; the
 * pod UID's canonical form and the runtimes' names. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_identity.h"
#include "check.h"

#define ID_A	   "4f3b2c1d0e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c"
#define ID_B	   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_63	   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"
#define ID_65	   ID_B "0"
#define ID_UPPER   "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"
#define UID	   "0f3e2c1a-5b6d-4e7f-8a9b-0c1d2e3f4a5b"
#define UID_SD	   "0f3e2c1a_5b6d_4e7f_8a9b_0c1d2e3f4a5b" /* the systemd driver's */
#define UID_STATIC "6b3e4f1a2c9d8e7f6a5b4c3d2e1f0a9b"	  /* a static pod's: 32 hex */
#define USER	   "/user.slice/user-1000.slice/user@1000.service"

/* path's expected identities; NULL: none. */
struct want {
	const char *path;
	const char *unit, *container, *pod_uid; /* pod_uid: canonical */
	enum cgroup_runtime runtime;
	bool conmon;
};

/* The table's rows, by what they name. */
/* clang-format off */
#define NOTHING(path) { path, NULL, NULL, NULL, CGROUP_RUNTIME_NONE, false }
#define UNIT(path, unit) { path, unit, NULL, NULL, CGROUP_RUNTIME_NONE, false }
#define POD(path, uid) { path, NULL, NULL, uid, CGROUP_RUNTIME_NONE, false }
#define CT(path, unit, id, uid, runtime) { path, unit, id, uid, runtime, false }
#define CONMON(path, unit, id, uid, runtime) { path, unit, id, uid, runtime, true }
/* clang-format on */

static const struct want cases[] = {
	/* systemd */
	UNIT("/system.slice/nginx.service", "nginx.service"),
	UNIT("/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service"),
	UNIT("/user.slice/user-1000.slice/session-3.scope", "session-3.scope"),
	UNIT(USER, "user@1000.service"),
	UNIT(USER "/app.slice/app-gnome-firefox-1234.scope", "app-gnome-firefox-1234.scope"),
	UNIT(USER "/app.slice/foo.service", "foo.service"),
	UNIT(USER "/init.scope", "init.scope"),
	UNIT("/system.slice/foo.service/worker", "foo.service"),
	UNIT("/system.slice/foo.service/a/b.d", "foo.service"),
	UNIT("/init.scope", "init.scope"),
	UNIT("/system.slice/dev-sdb1.swap", "dev-sdb1.swap"),
	UNIT("/system.slice/mnt-data.mount", "mnt-data.mount"),
	UNIT("/system.slice/sshd.socket", "sshd.socket"),
	UNIT("/system.slice/system-foo\\x2dbar.slice/foo\\x2dbar@a\\x20b.service",
	     "foo\\x2dbar@a\\x20b.service"),
	UNIT("/system.slice/foo bar.service", "foo bar.service"),
	UNIT("/system.slice/f\xc3\xb6\xc3\xb6.service", "f\xc3\xb6\xc3\xb6.service"),
	NOTHING("/"),
	NOTHING("/system.slice"),
	NOTHING("/user.slice/user-1000.slice"),
	NOTHING("/system.slice/.service"),	  /* no name */
	NOTHING("/system.slice/nginx.services"),  /* not a unit's suffix */
	NOTHING("/system.slice/nginx.service.d"), /* nor here */
	UNIT("/system.slice/foo.service/.scope", "foo.service"),

	/* Docker */
	CT("/system.slice/docker-" ID_A ".scope", "docker-" ID_A ".scope", ID_A, NULL,
	   CGROUP_RUNTIME_DOCKER),
	CT("/docker/" ID_A, NULL, ID_A, NULL, CGROUP_RUNTIME_DOCKER),
	CT("/docker/" ID_A "/docker/" ID_B, NULL, ID_B, NULL, CGROUP_RUNTIME_DOCKER),
	CT("/docker/" ID_A "/init.scope", "init.scope", ID_A, NULL, CGROUP_RUNTIME_DOCKER),
	NOTHING("/docker"),
	NOTHING("/docker/" ID_63),
	NOTHING("/docker/" ID_65),
	NOTHING("/docker/" ID_UPPER),
	UNIT("/system.slice/docker-" ID_63 ".scope", "docker-" ID_63 ".scope"),
	UNIT("/system.slice/docker-" ID_65 ".scope", "docker-" ID_65 ".scope"),
	UNIT("/system.slice/docker-" ID_UPPER ".scope", "docker-" ID_UPPER ".scope"),
	UNIT("/system.slice/docker.service", "docker.service"),
	UNIT("/system.slice/docker-.scope", "docker-.scope"),
	/* docker --cgroup-parent, ECS...: an ID, by whom the path does not say */
	CT("/ecs/task/" ID_A, NULL, ID_A, NULL, CGROUP_RUNTIME_UNKNOWN),

	/* Kubernetes, systemd driver */
	CT("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_SD
	   ".slice/cri-containerd-" ID_A ".scope",
	   "cri-containerd-" ID_A ".scope", ID_A, UID, CGROUP_RUNTIME_CONTAINERD),
	CT("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_SD
	   ".slice/cri-containerd-" ID_B ".scope",
	   "cri-containerd-" ID_B ".scope", ID_B, UID, CGROUP_RUNTIME_CONTAINERD),
	CT("/kubepods.slice/kubepods-pod" UID_SD ".slice/cri-containerd-" ID_A ".scope",
	   "cri-containerd-" ID_A ".scope", ID_A, UID, CGROUP_RUNTIME_CONTAINERD),
	CT("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_STATIC
	   ".slice/cri-containerd-" ID_A ".scope",
	   "cri-containerd-" ID_A ".scope", ID_A, UID_STATIC, CGROUP_RUNTIME_CONTAINERD),
	CT("/kubepods.slice/kubepods-pod" UID_SD ".slice/docker-" ID_A ".scope",
	   "docker-" ID_A ".scope", ID_A, UID, CGROUP_RUNTIME_DOCKER),
	/* the pod's own cgroup */
	POD("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_SD ".slice", UID),
	NOTHING("/kubepods.slice/kubepods-burstable.slice"),
	NOTHING("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID ".slice"),
	NOTHING("/kubepods.slice/kubepods-guaranteed-pod" UID_SD ".slice"),
	NOTHING("/system.slice/mykubepods-pod" UID_SD ".slice"),
	NOTHING("/kubepods.slice/kubepods-pod" UID_SD "0.slice"),

	/* Kubernetes, cgroupfs driver: the runtime is not in the path */
	CT("/kubepods/burstable/pod" UID "/" ID_A, NULL, ID_A, UID, CGROUP_RUNTIME_KUBEPODS),
	CT("/kubepods/besteffort/pod" UID "/" ID_A, NULL, ID_A, UID, CGROUP_RUNTIME_KUBEPODS),
	CT("/kubepods/pod" UID "/" ID_A, NULL, ID_A, UID, CGROUP_RUNTIME_KUBEPODS),
	CT("/kubepods/pod" UID_STATIC "/" ID_A, NULL, ID_A, UID_STATIC, CGROUP_RUNTIME_KUBEPODS),
	POD("/kubepods/burstable/pod" UID, UID),
	POD("/kubepods/pod" UID, UID),
	NOTHING("/kubepods/burstable"),
	NOTHING("/kubepods/burstable/pod" UID_SD),
	NOTHING("/kubepods/guaranteed/pod" UID),
	NOTHING("/other/pod" UID),
	POD("/kubepods/pod" UID "/" ID_63, UID),

	/* CRI-O */
	CT("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_SD
	   ".slice/crio-" ID_A ".scope",
	   "crio-" ID_A ".scope", ID_A, UID, CGROUP_RUNTIME_CRIO),
	CONMON("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_SD
	       ".slice/crio-conmon-" ID_A ".scope",
	       "crio-conmon-" ID_A ".scope", ID_A, UID, CGROUP_RUNTIME_CRIO),
	CT("/kubepods/burstable/pod" UID "/crio-" ID_A, NULL, ID_A, UID, CGROUP_RUNTIME_CRIO),
	CONMON("/kubepods/burstable/pod" UID "/crio-conmon-" ID_A, NULL, ID_A, UID,
	       CGROUP_RUNTIME_CRIO),
	UNIT("/kubepods.slice/crio-conmon-" ID_63 ".scope", "crio-conmon-" ID_63 ".scope"),

	/* Podman */
	CT("/machine.slice/libpod-" ID_A ".scope", "libpod-" ID_A ".scope", ID_A, NULL,
	   CGROUP_RUNTIME_PODMAN),
	CT("/machine.slice/libpod-" ID_A ".scope/container", "libpod-" ID_A ".scope", ID_A, NULL,
	   CGROUP_RUNTIME_PODMAN),
	CT(USER "/user.slice/libpod-" ID_A ".scope/container", "libpod-" ID_A ".scope", ID_A, NULL,
	   CGROUP_RUNTIME_PODMAN),
	CONMON("/machine.slice/libpod-conmon-" ID_A ".scope", "libpod-conmon-" ID_A ".scope", ID_A,
	       NULL, CGROUP_RUNTIME_PODMAN),
	CONMON(USER "/user.slice/libpod-conmon-" ID_A ".scope", "libpod-conmon-" ID_A ".scope",
	       ID_A, NULL, CGROUP_RUNTIME_PODMAN),
	CT("/libpod_parent/libpod-" ID_A, NULL, ID_A, NULL, CGROUP_RUNTIME_PODMAN),
	/* systemd in the container: both */
	CT("/machine.slice/libpod-" ID_A ".scope/container/system.slice/nginx.service",
	   "nginx.service", ID_A, NULL, CGROUP_RUNTIME_PODMAN),

	/* kind, k3s: the innermost container and its pod; conmon's mark is
	 * the innermost container's */
	CT("/docker/" ID_A "/kubepods/besteffort/pod" UID "/" ID_B, NULL, ID_B, UID,
	   CGROUP_RUNTIME_KUBEPODS),
	CT("/docker/" ID_A "/kubepods/besteffort/pod" UID, NULL, ID_A, UID, CGROUP_RUNTIME_DOCKER),
	CT("/system.slice/docker-" ID_A ".scope/kubelet.slice/kubelet-kubepods.slice/"
	   "kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" UID_SD
	   ".slice/cri-containerd-" ID_B ".scope",
	   "cri-containerd-" ID_B ".scope", ID_B, UID, CGROUP_RUNTIME_CONTAINERD),
	CT("/system.slice/docker-" ID_A ".scope/kubepods/pod" UID "/" ID_B, "docker-" ID_A ".scope",
	   ID_B, UID, CGROUP_RUNTIME_KUBEPODS),
	CT("/machine.slice/libpod-conmon-" ID_A ".scope/docker/" ID_B,
	   "libpod-conmon-" ID_A ".scope", ID_B, NULL, CGROUP_RUNTIME_DOCKER),

	/* Not paths the kernel writes: nothing at all */
	NOTHING(""),
	NOTHING("system.slice/nginx.service"),
	NOTHING("docker/" ID_A),
	NOTHING("/system.slice/nginx.service/"),
	NOTHING("/docker/" ID_A "/"),
	NOTHING("//system.slice/nginx.service"),
	NOTHING("/system.slice//nginx.service"),
	NOTHING("/docker//" ID_A),
	NOTHING("/system.slice/./nginx.service"),
	NOTHING("/system.slice/../nginx.service"),
	NOTHING("//"),
	NOTHING("."),
	NOTHING("nginx.service"),
};

/* A copy of s[0, n) in a buffer of exactly n bytes. */
static char *exact(const char *s, size_t n)
{
	char *p = malloc(n ? n : 1);

	if (!p) {
		perror("malloc");
		exit(1);
	}
	memcpy(p, s, n);
	return p;
}

/* Each span is none (NULL, 0) or inside path[0, len); a runtime with a
 * container and only then. */
static void check_inside(const char *path, size_t len, const struct cgroup_identity *id,
			 const char *what)
{
	const struct {
		const char *s;
		size_t n;
	} spans[] = { { id->unit, id->unit_len },
		      { id->container, id->container_len },
		      { id->pod_uid, id->pod_uid_len } };

	for (size_t i = 0; i < 3; i++) {
		if (!spans[i].n) {
			CHECK_MSG(!spans[i].s, "%s: span %zu", what, i);
			continue;
		}
		CHECK_MSG(spans[i].s >= path && spans[i].n <= len &&
				  (size_t)(spans[i].s - path) <= len - spans[i].n,
			  "%s: span %zu", what, i);
	}
	CHECK_MSG((id->container_len == 0) == (id->runtime == CGROUP_RUNTIME_NONE), "%s", what);
	CHECK_MSG(id->container_len || !id->conmon, "%s", what);
	CHECK_MSG(!id->container_len || id->container_len == 64, "%s", what);
}

static void check_span(int line, const char *path, const char *got, size_t n, const char *want,
		       const char *field)
{
	if (!want)
		CHECK_AT(__FILE__, line, !n && !got, "%s of %s: got \"%.*s\", want none", field,
			 path, (int)n, got ? got : "");
	else
		CHECK_AT(__FILE__, line, n == strlen(want) && got && !memcmp(got, want, n),
			 "%s of %s: got \"%.*s\", want \"%s\"", field, path, (int)n, got ? got : "",
			 want);
}

static void test_table(void)
{
	CHECK(strlen(ID_A) == 64 && strlen(ID_B) == 64 && strlen(ID_UPPER) == 64);
	CHECK(strlen(ID_63) == 63 && strlen(ID_65) == 65);
	CHECK(strlen(UID) == 36 && strlen(UID_SD) == 36 && strlen(UID_STATIC) == 32);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct want *w = &cases[i];
		size_t len = strlen(w->path);
		char *path = exact(w->path, len), uid[CGROUP_POD_UID_SIZE];
		struct cgroup_identity id;
		int line = __LINE__;

		memset(&id, 0xa5, sizeof(id)); /* all written */
		cgroup_identity_parse(path, len, &id);
		check_inside(path, len, &id, w->path);
		check_span(line, w->path, id.unit, id.unit_len, w->unit, "unit");
		check_span(line, w->path, id.container, id.container_len, w->container,
			   "container");
		if (cgroup_identity_pod_uid(&id, uid, sizeof(uid)))
			CHECK_MSG(w->pod_uid && !strcmp(uid, w->pod_uid), "pod of %s: got %s",
				  w->path, uid);
		else
			CHECK_MSG(!w->pod_uid, "pod of %s: none, want %s", w->path, w->pod_uid);
		CHECK_MSG(id.runtime == w->runtime, "runtime of %s: got \"%s\", want \"%s\"",
			  w->path, cgroup_identity_runtime_name(id.runtime),
			  cgroup_identity_runtime_name(w->runtime));
		CHECK_MSG(id.conmon == w->conmon, "conmon of %s", w->path);
		free(path);
	}
}

/* Every prefix of every path, the table's last byte cut off first: never a
 * read past it, the answers inside it. */
static void test_prefixes(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = strlen(cases[i].path);

		for (size_t n = 0; n <= len; n++) {
			char *path = exact(cases[i].path, n);
			struct cgroup_identity id;

			cgroup_identity_parse(path, n, &id);
			check_inside(path, n, &id, cases[i].path);
			free(path);
		}
	}
	/* Cut before the end, a container's ID is too short. */
	const char *p = "/docker/" ID_A;
	struct cgroup_identity id;

	cgroup_identity_parse(p, strlen(p) - 1, &id);
	CHECK(!id.container && id.runtime == CGROUP_RUNTIME_NONE);
	/* A NUL inside: not a path. */
	cgroup_identity_parse("/system.slice/a\0b.service", 25, &id);
	CHECK(!id.unit);
}

/* Appends s to buf at *at (room: the caller's). */
static void put(char *buf, size_t *at, const char *s)
{
	memcpy(buf + *at, s, strlen(s));
	*at += strlen(s);
}

static void test_long(void)
{
	size_t size = 64 * 1024, n = 0;
	char *buf = malloc(size), *path;
	struct cgroup_identity id;

	if (!buf) {
		perror("malloc");
		exit(1);
	}
	/* 3000 levels, then a unit */
	for (int i = 0; i < 3000; i++)
		put(buf, &n, "/a");
	put(buf, &n, "/nginx.service");
	path = exact(buf, n);
	cgroup_identity_parse(path, n, &id);
	check_inside(path, n, &id, "deep");
	CHECK(id.unit == path + n - strlen("nginx.service") &&
	      id.unit_len == strlen("nginx.service"));
	free(path);

	/* One segment of 5000 bytes, a unit's; then 8000 with a trailing slash. */
	n = 0;
	put(buf, &n, "/system.slice/");
	memset(buf + n, 'x', 5000);
	n += 5000;
	put(buf, &n, ".service");
	path = exact(buf, n);
	cgroup_identity_parse(path, n, &id);
	check_inside(path, n, &id, "wide");
	CHECK(id.unit == path + strlen("/system.slice/") && id.unit_len == 5008);
	free(path);
	memset(buf + n, 'y', 8000);
	n += 8000;
	buf[n++] = '/';
	path = exact(buf, n);
	cgroup_identity_parse(path, n, &id);
	CHECK(!id.unit && !id.container && !id.pod_uid);
	free(path);

	/* docker in docker 100 times: the innermost. */
	n = 0;
	for (int i = 0; i < 100; i++)
		put(buf, &n, i % 2 ? "/docker/" ID_B : "/docker/" ID_A);
	path = exact(buf, n);
	cgroup_identity_parse(path, n, &id);
	check_inside(path, n, &id, "docker in docker");
	CHECK(id.container == path + n - 64 && id.container_len == 64 &&
	      !memcmp(id.container, ID_B, 64) && id.runtime == CGROUP_RUNTIME_DOCKER);
	free(path);
	free(buf);
}

/* Random paths from the shapes' pieces: never a read past them, the answers
 * inside them. */
static void test_random(void)
{
	static const char *const pieces[] = {
		"/",
		"//",
		"docker",
		"docker-",
		ID_A,
		ID_63,
		"0",
		".scope",
		".slice",
		".service",
		"kubepods",
		"-pod",
		"pod",
		UID,
		UID_SD,
		"crio-",
		"conmon-",
		"libpod-",
		"cri-containerd-",
		"burstable",
		"besteffort",
		".",
		"..",
		"\\x2d",
		"\xff",
		"_",
		"-",
		"\0",
	};
	size_t npieces = sizeof(pieces) / sizeof(pieces[0]);
	uint64_t state = 0x9e3779b97f4a7c15ull;
	char buf[1024];
	int found = 0;

	for (int iter = 0; iter < 20000; iter++) {
		size_t n = 0;
		int k;
		char *path;
		struct cgroup_identity id;

		state = state * 6364136223846793005ull + 1442695040888963407ull;
		k = (int)(state >> 59); /* 0..31 pieces */
		for (int j = 0; j < k; j++) {
			const char *piece;
			size_t len;

			state = state * 6364136223846793005ull + 1442695040888963407ull;
			piece = pieces[(state >> 33) % npieces];
			len = piece[0] ? strlen(piece) : 1; /* "\0": one NUL */
			memcpy(buf + n, piece, len);
			n += len;
		}
		path = exact(buf, n);
		cgroup_identity_parse(path, n, &id);
		check_inside(path, n, &id, "random");
		found += id.container_len || id.pod_uid_len || id.unit_len;
		free(path);
	}
	CHECK(found > 0); /* the pieces do make identities */
}

static void test_pod_uid(void)
{
	const char *p = "/kubepods.slice/kubepods-pod" UID_SD ".slice";
	struct cgroup_identity id;
	char buf[64];

	cgroup_identity_parse(p, strlen(p), &id);
	CHECK(id.pod_uid_len == 36 && !memcmp(id.pod_uid, UID_SD, 36)); /* as spelt */
	CHECK(cgroup_identity_pod_uid(&id, buf, CGROUP_POD_UID_SIZE) == 36);
	CHECK_STR(buf, UID);
	memset(buf, 'z', sizeof(buf));
	CHECK(cgroup_identity_pod_uid(&id, buf, 36) == 0); /* no room for the NUL */
	CHECK(cgroup_identity_pod_uid(&id, buf, 0) == 0);
	CHECK(buf[0] == 'z'); /* not written */

	p = "/system.slice/nginx.service";
	cgroup_identity_parse(p, strlen(p), &id);
	CHECK(cgroup_identity_pod_uid(&id, buf, sizeof(buf)) == 0);
}

static void test_runtime_names(void)
{
	CHECK_STR(cgroup_identity_runtime_name(CGROUP_RUNTIME_NONE), "");
	CHECK_STR(cgroup_identity_runtime_name(CGROUP_RUNTIME_DOCKER), "docker");
	CHECK_STR(cgroup_identity_runtime_name(CGROUP_RUNTIME_CONTAINERD), "containerd");
	CHECK_STR(cgroup_identity_runtime_name(CGROUP_RUNTIME_CRIO), "cri-o");
	CHECK_STR(cgroup_identity_runtime_name(CGROUP_RUNTIME_PODMAN), "podman");
	CHECK_STR(cgroup_identity_runtime_name(CGROUP_RUNTIME_KUBEPODS), "kubepods");
	CHECK_STR(cgroup_identity_runtime_name(CGROUP_RUNTIME_UNKNOWN), "unknown");
	CHECK_STR(cgroup_identity_runtime_name((enum cgroup_runtime)99), "");
}

int main(void)
{
	test_table();
	test_prefixes();
	test_long();
	test_random();
	test_pod_uid();
	test_runtime_names();
	return CHECK_DONE();
}
