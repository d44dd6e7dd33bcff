/* Unit test of daemon/profile/cgroup_paths.c: fake mountinfo files (v2,
 * hybrid as systemd mounts it, v1 only, none; mount points with \040
 * escapes) over a temporary tree shaped like real hierarchies (systemd
 * units, Docker, a Kubernetes pod's containers, CRI-O's monitor, spaces,
 * UTF-8, a path past 4 KiB), ids being its directories' inodes, and a fake
 * /proc. Checks the walk's names, events, the /proc fallback with its
 * inode check and " (deleted)", the rescan's rate limit, eviction, find()
 * and its suggestions, find_identity() (units, container prefixes,
 * ambiguity, outermost cgroups), the NONE hierarchy and the statistics;
 * then, as root where cgroup2 is mounted, a real cgroup made, named,
 * entered and removed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_paths.h"
#include "check.h"

#define ID_A   "4f3b2c1d0e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c"
#define ID_B   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_C   "0123fedcba9876543210fedcba9876543210fedcba9876543210fedcba987654"
#define ID_D   "d00dfeed0000111122223333444455556666777788889999aaaabbbbccccdddd"
#define UID_SD "0f3e2c1a_5b6d_4e7f_8a9b_0c1d2e3f4a5b"
#define POD    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_SD ".slice"
#define DOCKER "/system.slice/docker-" ID_A ".scope"
#define UTF8   "/system.slice/f\xc3\xb6\xc3\xb6.service"

_Static_assert(sizeof(ID_A) == 65 && sizeof(ID_B) == 65 && sizeof(ID_C) == 65 && sizeof(ID_D) == 65,
	       "container ids are 64 hex digits");

/* The fake hierarchy, every directory in it. */
static const char *const tree[] = {
	"/system.slice",
	"/system.slice/nginx.service",
	"/system.slice/nginx.service/worker",
	"/system.slice/foo.service",
	"/system.slice/foo bar.service",
	UTF8,
	DOCKER,
	DOCKER "/system.slice",
	DOCKER "/system.slice/nginx.service",
	"/system.slice/crio-conmon-" ID_D ".scope",
	"/system.slice/crio-" ID_D ".scope",
	"/foo.slice",
	"/odd (deleted)",
	"/kubepods.slice",
	"/kubepods.slice/kubepods-burstable.slice",
	POD,
	POD "/cri-containerd-" ID_B ".scope",
	POD "/cri-containerd-" ID_C ".scope",
};
#define NTREE (sizeof(tree) / sizeof(tree[0]))

#define DEEP_LEVELS 45 /* of 100 bytes: a path past PATH_MAX */

static char base[] = "/tmp/test-cgroup_paths.XXXXXX";
static char mount_dir[256]; /* base/cg root\b: escaped in mountinfo */
static char empty_dir[256]; /* a hierarchy with only its root */
static char proc_dir[256];
static char deep[DEEP_LEVELS * 100 + 1];
static uint64_t deep_id;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void write_file(const char *path, const char *fmt, ...)
{
	FILE *f = fopen(path, "w");
	va_list ap;

	if (!f)
		die(path);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	if (fclose(f))
		die(path);
}

static uint64_t ino_at(const char *dir, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", dir, rel);
	if (stat(path, &st) < 0)
		die(path);
	return st.st_ino;
}

static uint64_t ino(const char *rel)
{
	return ino_at(mount_dir, rel);
}

static uint64_t mk(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s%s", mount_dir, rel);
	if (mkdir(path, 0755) < 0)
		die(path);
	return ino(rel);
}

/* /deep/ then levels of 100 bytes, made with mkdirat: past PATH_MAX. */
static void make_deep(void)
{
	int fd = open(mount_dir, O_RDONLY | O_DIRECTORY);
	size_t n = 0;
	struct stat st;

	for (int i = 0; i < DEEP_LEVELS; i++) {
		char name[100];
		int sub;

		snprintf(name, sizeof(name), "level-%02d-%090d", i, 0); /* 99 bytes */
		if (mkdirat(fd, name, 0755) < 0 || (sub = openat(fd, name, O_RDONLY)) < 0)
			die("deep");
		close(fd);
		fd = sub;
		deep[n++] = '/';
		memcpy(deep + n, name, 99);
		n += 99;
	}
	deep[n] = '\0';
	if (fstat(fd, &st) < 0)
		die("deep");
	deep_id = st.st_ino;
	close(fd);
}

/* mountinfo's escape of a mount point: octal for space, tab, newline, \. */
static void escape(const char *s, char *out)
{
	for (; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\')
			out += sprintf(out, "\\%03o", (unsigned char)*s);
		else
			*out++ = *s;
	}
	*out = '\0';
}

/* A mountinfo file named name: lines, with %M for the escaped fake
 * mount, %E for the empty one. */
static char *mountinfo(const char *name, const char *lines)
{
	static char paths[16][300];
	static int used;
	char esc[1024], esc_empty[1024], *text = malloc(strlen(lines) * 4 + 2048), *w = text;
	char *path = paths[used++ % 16];

	escape(mount_dir, esc);
	escape(empty_dir, esc_empty);
	for (const char *r = lines; *r; r++) {
		if (r[0] == '%' && (r[1] == 'M' || r[1] == 'E')) {
			w = stpcpy(w, r[1] == 'M' ? esc : esc_empty);
			r++;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	snprintf(path, 300, "%s/%s", base, name);
	write_file(path, "%s", text);
	free(text);
	return path;
}

#define MI_BASE                                                                                    \
	"22 27 0:21 / /proc rw,relatime - proc proc rw\n"                                          \
	"23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n"                                         \
	"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
#define MI_V2 MI_BASE "41 23 0:38 / %M rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
/* This host's: v1 controllers, systemd's named hierarchy, cgroup2 beside. */
#define MI_HYBRID                                                                                  \
	MI_BASE "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"              \
		"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"             \
		"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"       \
		"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup "                 \
		"rw,name=systemd\n"                                                                \
		"41 31 0:38 / %M rw,relatime - cgroup2 cgroup2 rw\n"
#define MI_EMPTY MI_BASE "41 23 0:38 / %E rw - cgroup2 cgroup2 rw\n"
#define MI_V1                                                                                      \
	MI_BASE "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"              \
		"32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"      \
		"40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"

static void make_proc(uint32_t tgid, const char *content)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%u", proc_dir, tgid);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die(path);
	snprintf(path, sizeof(path), "%s/%u/cgroup", proc_dir, tgid);
	write_file(path, "%s", content);
}

static struct cgroup_paths *open_v2(void)
{
	static char *mi;
	struct cgroup_paths *cp;

	if (!mi)
		mi = mountinfo("mountinfo-v2", MI_V2);
	if (cgroup_paths_new(mi, proc_dir, &cp) < 0)
		die("cgroup_paths_new");
	return cp;
}

static void check_name_at(const char *file, int line, struct cgroup_paths *cp, uint64_t id,
			  uint32_t tgid, const char *want)
{
	static char buf[8192];
	int r = cgroup_paths_name(cp, id, tgid, buf, sizeof(buf));

	CHECK_AT(file, line, r == 0 && !strcmp(buf, want),
		 "id %llu: %d \"%.200s\", want \"%.200s\"", (unsigned long long)id, r, r ? "" : buf,
		 want);
}
#define CHECK_NAME(cp, id, tgid, want) check_name_at(__FILE__, __LINE__, cp, id, tgid, want)

static int name_r(struct cgroup_paths *cp, uint64_t id, uint32_t tgid)
{
	char buf[8192];

	return cgroup_paths_name(cp, id, tgid, buf, sizeof(buf));
}

static struct cgroup_paths_stats stats(struct cgroup_paths *cp)
{
	struct cgroup_paths_stats s;

	cgroup_paths_stats(cp, &s);
	return s;
}

/* Removes dir (fd-relative: deep paths) and everything in it. */
static void rm_rf_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	DIR *d;
	struct dirent *de;

	if (fd < 0) {
		unlinkat(parent, name, 0);
		return;
	}
	d = fdopendir(fd);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rm_rf_at(dirfd(d), de->d_name);
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

static void test_hierarchy(void)
{
	struct cgroup_paths *cp;
	const char *mount, *why;
	char err[512];
	struct cgroup_ref ref;

	CHECK_STR(cgroup_hierarchy_name(CGROUP_HIERARCHY_V2), "v2");
	CHECK_STR(cgroup_hierarchy_name(CGROUP_HIERARCHY_HYBRID), "hybrid");
	CHECK_STR(cgroup_hierarchy_name(CGROUP_HIERARCHY_NONE), "none");

	cp = open_v2();
	CHECK(cgroup_paths_hierarchy(cp, &mount, &why) == CGROUP_HIERARCHY_V2);
	CHECK_STR(mount, mount_dir); /* \040 and \134 decoded */
	CHECK(!why);
	cgroup_paths_free(cp);

	CHECK(!cgroup_paths_new(mountinfo("mountinfo-hybrid", MI_HYBRID), proc_dir, &cp));
	CHECK(cgroup_paths_hierarchy(cp, &mount, NULL) == CGROUP_HIERARCHY_HYBRID);
	CHECK_STR(mount, mount_dir);
	cgroup_paths_free(cp);

	/* systemd's named v1 hierarchy controls nothing: still v2 alone. */
	CHECK(!cgroup_paths_new(mountinfo("mountinfo-named", MI_V2
					  "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup "
					  "rw,xattr,name=systemd\n"),
				proc_dir, &cp));
	CHECK(cgroup_paths_hierarchy(cp, NULL, NULL) == CGROUP_HIERARCHY_V2);
	cgroup_paths_free(cp);

	/* Two cgroup2 mounts elsewhere: the first. */
	CHECK(!cgroup_paths_new(mountinfo("mountinfo-two", MI_V2
					  "50 23 0:38 / /nonexistent rw - cgroup2 cgroup2 rw\n"),
				proc_dir, &cp));
	CHECK(cgroup_paths_hierarchy(cp, &mount, NULL) == CGROUP_HIERARCHY_V2);
	CHECK_STR(mount, mount_dir);
	cgroup_paths_free(cp);
	/* systemd's hybrid place is preferred to any other (the real one
	 * here, or where it cannot be opened, NONE naming it). */
	CHECK(!cgroup_paths_new(
		mountinfo("mountinfo-unified",
			  MI_V2 "50 23 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"),
		proc_dir, &cp));
	cgroup_paths_hierarchy(cp, &mount, &why);
	CHECK(strstr(why ? why : mount, "/sys/fs/cgroup/unified"));
	cgroup_paths_free(cp);

	/* v1 only */
	CHECK(!cgroup_paths_new(mountinfo("mountinfo-v1", MI_V1), proc_dir, &cp));
	CHECK(cgroup_paths_hierarchy(cp, &mount, &why) == CGROUP_HIERARCHY_NONE);
	CHECK_STR(mount, "");
	CHECK_STR(why, "no cgroup2 hierarchy is mounted (cgroup v1 only): samples carry no "
		       "cgroup; mount one (mount -t cgroup2 none /sys/fs/cgroup/unified) to use "
		       "cgroups");
	CHECK(name_r(cp, 5, 0) == -EOPNOTSUPP && name_r(cp, 5, 1) == -EOPNOTSUPP);
	CHECK(cgroup_paths_find(cp, "/system.slice", &ref, err, sizeof(err)) == -EOPNOTSUPP);
	CHECK_STR(err, why);
	CHECK(cgroup_paths_find_identity(cp, "nginx", NULL, &ref, 1, err, sizeof(err)) ==
	      -EOPNOTSUPP);
	CHECK_STR(err, why);
	CHECK(cgroup_paths_find_identity(cp, NULL, "0123", &ref, 1, err, sizeof(err)) ==
	      -EOPNOTSUPP);
	CHECK_STR(err, why);
	CHECK(cgroup_paths_event(cp, 5, "/a", false) == 0);
	CHECK(name_r(cp, 5, 0) == -EOPNOTSUPP);
	CHECK(stats(cp).known == 0 && stats(cp).scans == 0 && stats(cp).failures == 0);
	cgroup_paths_free(cp);

	/* no cgroups at all; no mountinfo; a cgroup2 mount that is not there */
	CHECK(!cgroup_paths_new(mountinfo("mountinfo-none", MI_BASE), proc_dir, &cp));
	CHECK(cgroup_paths_hierarchy(cp, NULL, &why) == CGROUP_HIERARCHY_NONE);
	CHECK(why && strstr(why, "no cgroup hierarchy is mounted"));
	cgroup_paths_free(cp);
	CHECK(!cgroup_paths_new("/nonexistent/mountinfo", proc_dir, &cp));
	CHECK(cgroup_paths_hierarchy(cp, NULL, &why) == CGROUP_HIERARCHY_NONE);
	CHECK(why && strstr(why, "cannot read /nonexistent/mountinfo"));
	cgroup_paths_free(cp);
	CHECK(!cgroup_paths_new(mountinfo("mountinfo-gone", MI_BASE
					  "41 23 0:38 / /nonexistent rw - cgroup2 cgroup2 rw\n"),
				proc_dir, &cp));
	CHECK(cgroup_paths_hierarchy(cp, NULL, &why) == CGROUP_HIERARCHY_NONE);
	CHECK(why && strstr(why, "/nonexistent"));
	CHECK(cgroup_paths_find(cp, "/", &ref, err, sizeof(err)) == -EOPNOTSUPP);
	cgroup_paths_free(cp);
	cgroup_paths_free(NULL);
}

static void test_walk(void)
{
	struct cgroup_paths *cp = open_v2();
	struct cgroup_paths_stats s;
	char small[8];

	for (size_t i = 0; i < NTREE; i++)
		CHECK_NAME(cp, ino(tree[i]), 0, tree[i]);
	CHECK_NAME(cp, ino(""), 0, "/");
	CHECK_NAME(cp, deep_id, 0, deep); /* 4500 bytes, byte for byte */
	CHECK(strlen(deep) > PATH_MAX);
	/* Truncated to the buffer; nothing written to none. */
	CHECK(!cgroup_paths_name(cp, ino("/system.slice"), 0, small, sizeof(small)));
	CHECK_STR(small, "/system");
	CHECK(!cgroup_paths_name(cp, ino("/system.slice"), 0, small, 0));
	CHECK(name_r(cp, 0, 0) == -EOPNOTSUPP);

	s = stats(cp);
	CHECK(s.known == NTREE + 1 + DEEP_LEVELS && s.removed == 0 && s.scans == 1);
	CHECK(s.events == 0 && s.from_proc == 0 && s.failures == 0);
	/* Unknown, and the walk was just made: not again. */
	CHECK(name_r(cp, 123456789012ull, 0) == -ENOENT);
	s = stats(cp);
	CHECK(s.failures == 1 && s.scans == 1);
	cgroup_paths_free(cp);
}

static void test_events(void)
{
	struct cgroup_paths *cp = open_v2();
	uint64_t known = stats(cp).known;
	uint64_t id = 1ull << 40;

	CHECK(!cgroup_paths_event(cp, id, "/system.slice/new.service", false));
	CHECK_NAME(cp, id, 0, "/system.slice/new.service");
	CHECK(!cgroup_paths_event(cp, id, "/system.slice/renamed.service", false));
	CHECK_NAME(cp, id, 0, "/system.slice/renamed.service");
	/* Removed: still named, as it was. */
	CHECK(!cgroup_paths_event(cp, id, NULL, true));
	CHECK_NAME(cp, id, 0, "/system.slice/renamed.service");
	CHECK(stats(cp).removed == 1 && stats(cp).known == known + 1);
	/* Removed twice, and an unknown id removed without a path: no change. */
	CHECK(!cgroup_paths_event(cp, id, NULL, true));
	CHECK(!cgroup_paths_event(cp, id + 1, NULL, true));
	CHECK(stats(cp).removed == 1 && stats(cp).known == known + 1);
	/* An unknown id removed with its path: named, as removed. */
	CHECK(!cgroup_paths_event(cp, id + 2, "/gone/\xff\x01 x", true));
	CHECK_NAME(cp, id + 2, 0, "/gone/\xff\x01 x");
	CHECK(stats(cp).removed == 2 && stats(cp).known == known + 2);
	/* Made again (never by the kernel, but consistent). */
	CHECK(!cgroup_paths_event(cp, id + 2, "/back", false));
	CHECK_NAME(cp, id + 2, 0, "/back");
	CHECK(stats(cp).removed == 1 && stats(cp).events == 7);
	CHECK(stats(cp).failures == 0);
	cgroup_paths_free(cp);
}

/* A complete walk marks as removed the cgroups it no longer finds. */
static void test_walk_removes(void)
{
	struct cgroup_paths *cp = open_v2();
	uint64_t gone = mk("/system.slice/gone.service");
	char path[PATH_MAX], err[256];
	struct cgroup_ref ref[4];

	CHECK(!cgroup_paths_event(cp, gone, "/system.slice/gone.service", false));
	snprintf(path, sizeof(path), "%s/system.slice/gone.service", mount_dir);
	if (rmdir(path) < 0)
		die(path);
	CHECK(stats(cp).removed == 0);
	/* find_identity() walks afresh */
	CHECK(cgroup_paths_find_identity(cp, "nginx", NULL, ref, 4, err, sizeof(err)) == 2);
	CHECK(stats(cp).removed == 1 && stats(cp).scans == 2);
	CHECK_NAME(cp, gone, 0, "/system.slice/gone.service");
	cgroup_paths_free(cp);
}

static void test_proc(void)
{
	struct cgroup_paths *cp = open_v2();
	uint64_t fresh = mk("/system.slice/fresh.service");
	uint64_t other = 1ull << 43; /* no directory's: a walk would not find it either */
	uint64_t removed = 1ull << 41;
	struct cgroup_paths_stats s;

	/* As a hybrid host writes it: v1 lines, then 0::. */
	make_proc(100, "9:name=systemd:/\n4:memory:/x\n0::/system.slice/fresh.service\n");
	CHECK_NAME(cp, fresh, 100, "/system.slice/fresh.service");
	CHECK(stats(cp).from_proc == 1);
	/* Known now: /proc is not read again (it says otherwise here). */
	make_proc(100, "0::/system.slice/foo.service\n");
	CHECK_NAME(cp, fresh, 100, "/system.slice/fresh.service");
	CHECK(stats(cp).from_proc == 1);
	/* The thread moved: /proc's cgroup is not the id's. */
	CHECK(name_r(cp, other, 100) == -ENOENT);
	/* No such process, no 0:: line, a relative path. */
	CHECK(name_r(cp, other, 99999) == -ENOENT);
	make_proc(101, "1:cpu:/system.slice/other.service\n");
	CHECK(name_r(cp, other, 101) == -ENOENT);
	make_proc(102, "0::system.slice/other.service\n");
	CHECK(name_r(cp, other, 102) == -ENOENT);
	s = stats(cp);
	CHECK(s.failures == 4 && s.from_proc == 1);

	/* A removed cgroup: its path taken unchecked, as removed. */
	make_proc(103, "0::/system.slice/exited.service (deleted)\n");
	CHECK_NAME(cp, removed, 103, "/system.slice/exited.service");
	CHECK(stats(cp).removed == 1);
	CHECK_NAME(cp, removed, 0, "/system.slice/exited.service");
	/* A live cgroup named so (made after the walk: unknown): its name. */
	{
		uint64_t odd = mk("/odd2 (deleted)");

		make_proc(104, "0::/odd2 (deleted)\n");
		CHECK_NAME(cp, odd, 104, "/odd2 (deleted)");
		CHECK(stats(cp).removed == 1 && stats(cp).from_proc == 3);
	}
	/* " (deleted)" alone is no path. */
	make_proc(106, "0:: (deleted)\n");
	CHECK(name_r(cp, removed + 1, 106) == -ENOENT);
	cgroup_paths_free(cp);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void test_rescan(void)
{
	struct cgroup_paths *cp = open_v2();
	uint64_t a = mk("/system.slice/later-a.service"), b;

	/* Within the interval of new()'s walk: not found, counted. */
	CHECK(name_r(cp, a, 0) == -ENOENT);
	CHECK(stats(cp).scans == 1 && stats(cp).failures == 1);
	sleep_ms(CGROUP_PATHS_SCAN_INTERVAL_MS + 100);
	CHECK_NAME(cp, a, 0, "/system.slice/later-a.service");
	CHECK(stats(cp).scans == 2 && stats(cp).failures == 1);
	/* That walk just happened: the next one waits. */
	b = mk("/system.slice/later-b.service");
	CHECK(name_r(cp, b, 0) == -ENOENT);
	CHECK(name_r(cp, b, 0) == -ENOENT);
	CHECK(stats(cp).scans == 2 && stats(cp).failures == 3);
	cgroup_paths_free(cp);
}

static void check_find_at(const char *file, int line, struct cgroup_paths *cp, const char *path,
			  const char *rel, uint32_t level)
{
	struct cgroup_ref ref = { 0 };
	char err[512] = "";
	int r = cgroup_paths_find(cp, path, &ref, err, sizeof(err));

	CHECK_AT(file, line, r == 0 && ref.id == ino(rel) && ref.level == level,
		 "'%s': %d, id %llu level %u; %s", path, r, (unsigned long long)ref.id, ref.level,
		 err);
}
#define CHECK_FIND(cp, path, rel, level) check_find_at(__FILE__, __LINE__, cp, path, rel, level)

static void check_find_err_at(const char *file, int line, struct cgroup_paths *cp, const char *path,
			      int want, const char *want_err)
{
	struct cgroup_ref ref = { 0 };
	char err[1024] = "", expect[1024];
	int r = cgroup_paths_find(cp, path, &ref, err, sizeof(err));

	snprintf(expect, sizeof(expect), want_err, mount_dir);
	CHECK_AT(file, line, r == want && !strcmp(err, expect), "'%s': %d\n  got  %s\n  want %s",
		 path, r, err, expect);
}
#define CHECK_FIND_ERR(cp, path, want, err)                                                        \
	check_find_err_at(__FILE__, __LINE__, cp, path, want, err)

static void test_find(void)
{
	struct cgroup_paths *cp = open_v2();
	char path[PATH_MAX * 2], err[64], big[1024];
	struct cgroup_ref ref;
	uint64_t made;

	CHECK_FIND(cp, "/system.slice/nginx.service", "/system.slice/nginx.service", 2);
	snprintf(path, sizeof(path), "%s/system.slice/nginx.service", mount_dir);
	CHECK_FIND(cp, path, "/system.slice/nginx.service", 2);
	CHECK_FIND(cp, "system.slice/nginx.service", "/system.slice/nginx.service", 2);
	CHECK_FIND(cp, "//system.slice///nginx.service/", "/system.slice/nginx.service", 2);
	CHECK_FIND(cp, "/", "", 0);
	CHECK_FIND(cp, mount_dir, "", 0);
	snprintf(path, sizeof(path), "%s/", mount_dir);
	CHECK_FIND(cp, path, "", 0);
	CHECK_FIND(cp, UTF8, UTF8, 2);
	CHECK_FIND(cp, "/system.slice/foo bar.service", "/system.slice/foo bar.service", 2);
	CHECK_FIND(cp, POD "/cri-containerd-" ID_B ".scope", POD "/cri-containerd-" ID_B ".scope",
		   4);
	/* Made since the walk: found, and named from then on. */
	made = mk("/system.slice/since.service");
	CHECK_FIND(cp, "/system.slice/since.service", "/system.slice/since.service", 2);
	CHECK_NAME(cp, made, 0, "/system.slice/since.service");

	CHECK_FIND_ERR(cp, "/foo", -ENOENT,
		       "no cgroup '/foo' under %s; closest: /foo.slice, /system.slice/foo.service, "
		       "/system.slice/foo bar.service");
	/* A few edits away first, then the same parent's. */
	snprintf(path, sizeof(path), "%s/system.slice/ngnix.service", mount_dir);
	CHECK(cgroup_paths_find(cp, path, &ref, big, sizeof(big)) == -ENOENT);
	snprintf(path, sizeof(path),
		 "no cgroup '/system.slice/ngnix.service' under %s; closest: "
		 "/system.slice/nginx.service, " DOCKER
		 "/system.slice/nginx.service, /system.slice/",
		 mount_dir);
	CHECK_MSG(!strncmp(big, path, strlen(path)), "%s", big);
	CHECK_FIND_ERR(cp, "/qqqqzzzz", -ENOENT,
		       "no cgroup '/qqqqzzzz' under %s; no known cgroup has a name like it");
	CHECK_FIND_ERR(cp, "/system.slice/../etc", -ENOENT,
		       "cgroup path '/system.slice/../etc' has '.' or '..' in it: give it from "
		       "the root");
	CHECK_FIND_ERR(cp, "", -ENOENT, "an empty cgroup path");
	/* Not a directory */
	snprintf(path, sizeof(path), "%s/system.slice/cgroup.procs", mount_dir);
	write_file(path, "");
	CHECK(cgroup_paths_find(cp, "/system.slice/cgroup.procs", &ref, NULL, 0) == -ENOENT);
	/* Past PATH_MAX: the kernel's limit. */
	CHECK(cgroup_paths_find(cp, deep, &ref, err, sizeof(err)) == -ENOENT);
	CHECK(!strncmp(err, "cannot look up cgroup '/level-00", 32));
	CHECK(strlen(err) == sizeof(err) - 1); /* truncated */
	cgroup_paths_free(cp);
}

static uint32_t level_of(const char *path)
{
	uint32_t n = 0;

	for (; *path; path++)
		n += *path == '/';
	return n;
}

static void check_identity_at(const char *file, int line, struct cgroup_paths *cp, const char *unit,
			      const char *container, const char *const *want, size_t nwant)
{
	struct cgroup_ref ref[8];
	char err[1024] = "";
	int r = cgroup_paths_find_identity(cp, unit, container, ref, 8, err, sizeof(err));

	CHECK_AT(file, line, r == (int)nwant, "%s: %d, want %zu: %s", unit ? unit : container, r,
		 nwant, err);
	for (int i = 0; i < r && i < (int)nwant; i++)
		CHECK_AT(file, line, ref[i].id == ino(want[i]) && ref[i].level == level_of(want[i]),
			 "%s: [%d] %s", unit ? unit : container, i, want[i]);
}
#define CHECK_IDENTITY(cp, unit, container, ...)                                                   \
	do {                                                                                       \
		const char *const want_[] = { __VA_ARGS__ };                                       \
		check_identity_at(__FILE__, __LINE__, cp, unit, container, want_,                  \
				  sizeof(want_) / sizeof(want_[0]));                               \
	} while (0)

static void check_identity_err_at(const char *file, int line, struct cgroup_paths *cp,
				  const char *unit, const char *container, int want,
				  const char *want_err)
{
	struct cgroup_ref ref[8];
	char err[1024] = "";
	int r = cgroup_paths_find_identity(cp, unit, container, ref, 8, err, sizeof(err));

	CHECK_AT(file, line, r == want && !strcmp(err, want_err), "%s: %d\n  got  %s\n  want %s",
		 unit ? unit : container, r, err, want_err);
}
#define CHECK_IDENTITY_ERR(cp, unit, container, want, err)                                         \
	check_identity_err_at(__FILE__, __LINE__, cp, unit, container, want, err)

#define NGINY                                                                                      \
	"no cgroup of unit 'nginy' (nor 'nginy.service'); closest known units: nginx.service, "

static void test_identity(void)
{
	struct cgroup_paths *cp = open_v2(), *empty;
	struct cgroup_ref ref[8];
	char err[256];

	/* The unit's outermost cgroups (not its worker), host's and the
	 * container's, by path. */
	CHECK_IDENTITY(cp, "nginx.service", NULL, DOCKER "/system.slice/nginx.service",
		       "/system.slice/nginx.service");
	CHECK_IDENTITY(cp, "nginx", NULL, DOCKER "/system.slice/nginx.service",
		       "/system.slice/nginx.service");
	CHECK(cgroup_paths_find_identity(cp, "nginx", NULL, ref, 8, err, sizeof(err)) == 2);
	CHECK(ref[0].level == 4 && ref[1].level == 2);
	CHECK_IDENTITY(cp, "foo", NULL, "/system.slice/foo.service"); /* not "foo bar" */
	CHECK_IDENTITY(cp, "foo bar.service", NULL, "/system.slice/foo bar.service");
	CHECK_IDENTITY(cp, "f\xc3\xb6\xc3\xb6", NULL, UTF8);
	CHECK_IDENTITY(cp, "docker-" ID_A ".scope", NULL, DOCKER);
	CHECK_IDENTITY_ERR(cp, "nginx.socket", NULL, -ENOENT,
			   "no cgroup of unit 'nginx.socket'; closest known units: nginx.service, "
			   "since.service, foo.service, fresh.service, f\xc3\xb6\xc3\xb6.service");
	CHECK(cgroup_paths_find_identity(cp, "nginy", NULL, ref, 8, err, sizeof(err)) == -ENOENT);
	CHECK_MSG(!strncmp(err, NGINY, strlen(NGINY)), "%s", err);
	CHECK(cgroup_paths_find_identity(cp, "nginx", NULL, ref, 1, err, sizeof(err)) == -E2BIG);
	CHECK_STR(err, "2 cgroups match, more than 1");

	/* Containers: a prefix, any case; only the outermost of each. */
	CHECK_IDENTITY(cp, NULL, "4F3B2C1D0E9A", DOCKER);
	CHECK_IDENTITY(cp, NULL, ID_A, DOCKER);
	CHECK_IDENTITY(cp, NULL, "01234", POD "/cri-containerd-" ID_B ".scope");
	CHECK_IDENTITY(cp, NULL, "0123f", POD "/cri-containerd-" ID_C ".scope");
	/* CRI-O's monitor runs beside its container: not in it. */
	CHECK_IDENTITY(cp, NULL, "d00d", "/system.slice/crio-" ID_D ".scope");
	CHECK_IDENTITY_ERR(cp, NULL, "0123", -EEXIST,
			   "container id prefix '0123' matches 2 containers: 0123456789ab "
			   "(containerd), 0123fedcba98 (containerd); give more of its digits");
	CHECK_IDENTITY_ERR(cp, NULL, "0", -EEXIST,
			   "container id prefix '0' matches 2 containers: 0123456789ab "
			   "(containerd), 0123fedcba98 (containerd); give more of its digits");
	CHECK_IDENTITY_ERR(cp, NULL, "4f3c", -ENOENT,
			   "no container's id starts with '4f3c'; closest known containers: "
			   "4f3b2c1d0e9a (docker), 0123456789ab (containerd), 0123fedcba98 "
			   "(containerd), d00dfeed0000 (cri-o)");
	CHECK_IDENTITY_ERR(
		cp, NULL, "nginx", -ENOENT,
		"'nginx' is not a container id prefix (1 to 64 hex digits); closest "
		"known containers: 0123456789ab (containerd), 0123fedcba98 (containerd), "
		"4f3b2c1d0e9a (docker), d00dfeed0000 (cri-o)");
	CHECK(cgroup_paths_find_identity(cp, NULL, "", ref, 8, err, sizeof(err)) == -ENOENT);
	CHECK(cgroup_paths_find_identity(cp, NULL, ID_A "0", ref, 8, err, sizeof(err)) == -ENOENT);
	cgroup_paths_free(cp);

	/* A hierarchy with nothing in it. */
	CHECK(!cgroup_paths_new(mountinfo("mountinfo-empty", MI_EMPTY), proc_dir, &empty));
	CHECK_IDENTITY_ERR(empty, "nginx", NULL, -ENOENT,
			   "no cgroup of unit 'nginx' (nor 'nginx.service'); no units are known");
	CHECK_IDENTITY_ERR(empty, NULL, "abc", -ENOENT,
			   "no container's id starts with 'abc'; no containers are known");
	cgroup_paths_free(empty);
}

/* Past CGROUP_PATHS_MAX: the longest removed go first; where none is
 * removed, a new id is not kept. */
static void test_eviction(void)
{
	struct cgroup_paths *cp;
	const uint64_t first = 1ull << 42;
	uint64_t n, root;
	char path[64];

	if (cgroup_paths_new(mountinfo("mountinfo-evict", MI_EMPTY), proc_dir, &cp) < 0)
		die("cgroup_paths_new");
	root = ino_at(empty_dir, "");
	n = CGROUP_PATHS_MAX - 1; /* and the root */
	for (uint64_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/c%llu", (unsigned long long)i);
		CHECK(!cgroup_paths_event(cp, first + i, path, false));
	}
	for (uint64_t i = 0; i < n; i++) /* removed in order */
		CHECK(!cgroup_paths_event(cp, first + i, NULL, true));
	CHECK(stats(cp).known == CGROUP_PATHS_MAX && stats(cp).removed == n);
	/* c1 comes back: its removal no longer counts. */
	CHECK(!cgroup_paths_event(cp, first + 1, "/c1", false));
	CHECK(!cgroup_paths_event(cp, first + n, "/new0", false));
	CHECK(!cgroup_paths_event(cp, first + n + 1, "/new1", false));
	CHECK(stats(cp).known == CGROUP_PATHS_MAX && stats(cp).removed == n - 3);
	CHECK_NAME(cp, first + 1, 0, "/c1");
	CHECK_NAME(cp, first + 3, 0, "/c3");
	CHECK_NAME(cp, first + n + 1, 0, "/new1");
	CHECK_NAME(cp, root, 0, "/");
	/* All live: a new one is not kept (the root was not evicted). */
	for (uint64_t i = 3; i < n; i++) {
		snprintf(path, sizeof(path), "/c%llu", (unsigned long long)i);
		CHECK(!cgroup_paths_event(cp, first + i, path, false));
	}
	CHECK(stats(cp).removed == 0);
	CHECK(!cgroup_paths_event(cp, first + n + 2, "/new2", false));
	CHECK(stats(cp).known == CGROUP_PATHS_MAX);
	CHECK_NAME(cp, root, 0, "/");
	/* Last: a lookup that misses may walk, which finds none of these. */
	CHECK(name_r(cp, first, 0) == -ENOENT);
	CHECK(name_r(cp, first + 2, 0) == -ENOENT);
	CHECK(name_r(cp, first + n + 2, 0) == -ENOENT);
	cgroup_paths_free(cp);
}

/* Events and lookups from several threads (ASan sees the table). */
struct hammer {
	struct cgroup_paths *cp;
	uint64_t base_id;
};

static void *hammer(void *arg)
{
	struct cgroup_paths *cp = ((struct hammer *)arg)->cp;
	uint64_t base_id = ((struct hammer *)arg)->base_id;
	char path[64], buf[64];

	for (uint64_t i = 0; i < 2000; i++) {
		snprintf(path, sizeof(path), "/t/%llu", (unsigned long long)i);
		cgroup_paths_event(cp, base_id + i, path, false);
		if (cgroup_paths_name(cp, base_id + i, 0, buf, sizeof(buf)) || strcmp(buf, path))
			return (void *)1;
		cgroup_paths_event(cp, base_id + i, NULL, true);
	}
	return NULL;
}

static void test_threads(void)
{
	struct cgroup_paths *cp = open_v2();
	pthread_t t[4];
	struct hammer h[4];
	void *ret;

	for (int i = 0; i < 4; i++) {
		h[i] = (struct hammer){ cp, (uint64_t)(i + 1) << 40 };
		if (pthread_create(&t[i], NULL, hammer, &h[i]))
			die("pthread_create");
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &ret);
		CHECK(!ret);
	}
	CHECK(stats(cp).events == 4 * 2000 * 2 && stats(cp).removed == 4 * 2000);
	cgroup_paths_free(cp);
}

/* "0::" of /proc/self/cgroup, malloc'd, or NULL. */
static char *self_cgroup(void)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char *line = NULL, *path = NULL;
	size_t cap = 0;

	if (!f)
		return NULL;
	while (getline(&line, &cap, f) > 0)
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			path = strdup(line + 3);
			break;
		}
	free(line);
	fclose(f);
	return path;
}

static bool enter(const char *mount, const char *cgroup)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s/cgroup.procs", mount, strcmp(cgroup, "/") ? cgroup : "");
	f = fopen(path, "w");
	if (!f)
		return false;
	fprintf(f, "%d\n", getpid());
	return fclose(f) == 0;
}

static void test_real(void)
{
	struct cgroup_paths *cp;
	const char *mount, *why;
	char dir[PATH_MAX], name[64], rel[80], *orig, err[256];
	struct cgroup_ref ref;
	struct stat st;

	if (cgroup_paths_new(NULL, NULL, &cp) < 0)
		die("cgroup_paths_new");
	if (cgroup_paths_hierarchy(cp, &mount, &why) == CGROUP_HIERARCHY_NONE) {
		printf("real hierarchy: skipped: %s\n", why);
		cgroup_paths_free(cp);
		return;
	}
	orig = self_cgroup();
	if (geteuid() || !orig) {
		printf("real hierarchy: skipped: %s\n", geteuid() ? "not root" : "no 0:: line");
		free(orig);
		cgroup_paths_free(cp);
		return;
	}
	snprintf(name, sizeof(name), "offcpu-test-cgroup_paths-%d", getpid());
	snprintf(rel, sizeof(rel), "/%s", name);
	snprintf(dir, sizeof(dir), "%s%s", mount, rel);
	if (mkdir(dir, 0755) < 0) {
		printf("real hierarchy: skipped: mkdir %s: %s\n", dir, strerror(errno));
		free(orig);
		cgroup_paths_free(cp);
		return;
	}
	printf("real hierarchy: %s at %s, made %s\n",
	       cgroup_hierarchy_name(cgroup_paths_hierarchy(cp, NULL, NULL)), mount, dir);
	if (stat(dir, &st) < 0)
		die(dir);
	/* Made after the walk: from /proc once the process is in it. */
	if (enter(mount, rel)) {
		CHECK_NAME(cp, st.st_ino, getpid(), rel);
		CHECK(stats(cp).from_proc == 1);
		CHECK(enter(mount, orig));
	} else {
		CHECK_MSG(false, "cannot enter %s: %s", dir, strerror(errno));
	}
	CHECK(cgroup_paths_find(cp, rel, &ref, err, sizeof(err)) == 0 && ref.id == st.st_ino &&
	      ref.level == 1);
	CHECK(cgroup_paths_find(cp, dir, &ref, err, sizeof(err)) == 0 && ref.id == st.st_ino);
	if (rmdir(dir) < 0)
		CHECK_MSG(false, "rmdir %s: %s", dir, strerror(errno));
	/* A fresh walk finds it gone; still named. */
	CHECK(cgroup_paths_find_identity(cp, "offcpu-no-such-unit", NULL, &ref, 1, err,
					 sizeof(err)) == -ENOENT);
	CHECK(stats(cp).removed >= 1);
	CHECK_NAME(cp, st.st_ino, 0, rel);
	{
		char *now = self_cgroup();

		CHECK_STR(now, orig); /* back where it was */
		free(now);
	}
	free(orig);
	cgroup_paths_free(cp);
}

int main(void)
{
	if (!mkdtemp(base))
		die("mkdtemp");
	snprintf(mount_dir, sizeof(mount_dir), "%s/cg root\\b", base);
	snprintf(empty_dir, sizeof(empty_dir), "%s/empty", base);
	snprintf(proc_dir, sizeof(proc_dir), "%s/proc", base);
	if (mkdir(mount_dir, 0755) < 0 || mkdir(empty_dir, 0755) < 0 || mkdir(proc_dir, 0755) < 0)
		die("mkdir");
	for (size_t i = 0; i < NTREE; i++)
		mk(tree[i]);
	make_deep();

	test_hierarchy();
	test_walk();
	test_events();
	test_proc();
	test_rescan();
	test_find();
	test_identity();
	test_walk_removes();
	test_eviction();
	test_threads();
	test_real();

	rm_rf_at(AT_FDCWD, base);
	return CHECK_DONE();
}
