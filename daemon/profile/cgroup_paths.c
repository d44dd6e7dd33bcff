/* cgroup_paths: see cgroup_paths.h. An id is a cgroup directory's inode
 * number (kernfs's id); the table maps it to its path, removed ids being
 * queued in the order they went so the oldest is evicted first. */
#define _GNU_SOURCE /* O_PATH, vasprintf, memrchr */
#include "cgroup_paths.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "cgroup_identity.h"
#include "clock.h"
#include "hashtab.h"

#define WALK_DEPTH_MAX	 128 /* each level holds a directory open */
#define SUGGEST_MAX	 5
#define EXISTS_MAX	 8  /* containers an ambiguous prefix lists */
#define EDIT_MAX	 64 /* longer names get no edit distance (its cost) */
#define SHORT_ID_LEN	 12
#define CONTAINER_ID_LEN 64
#define DELETED_SUFFIX	 " (deleted)"

struct entry {
	char *path;	      /* malloc'd, relative to the root */
	uint64_t removed_seq; /* 0: live; else its place in the removal order */
	uint64_t seen_gen;    /* the last walk that found it */
};

struct removal {
	uint64_t id, seq;
};

struct cgroup_paths {
	enum cgroup_hierarchy hierarchy;
	char *mount; /* "" for NONE */
	char *why;   /* NONE's reason; NULL otherwise */
	char *proc_root;
	int mount_fd; /* O_PATH; -1 for NONE */
	dev_t mount_dev;

	pthread_mutex_t lock; /* guards everything below */
	struct hashtab *ids;  /* uint64_t id -> struct entry */
	uint64_t removed;     /* entries with removed_seq */
	uint64_t removal_seq;
	/* Removals oldest first from head; an item is stale where its entry
	 * is gone or was seen alive again (its removed_seq differs). */
	struct removal *removals;
	size_t removals_head, removals_len, removals_cap;
	uint64_t gen; /* walks made */
	uint64_t last_scan_ns;
	struct cgroup_paths_stats stats; /* known and removed: computed */
};

/* Appends to a caller's error buffer, truncating; size 0: no buffer. */
struct msg {
	char *buf;
	size_t size, len;
};

static struct msg msg_init(char *buf, size_t size)
{
	if (buf && size)
		buf[0] = '\0';
	return (struct msg){ buf, buf ? size : 0, 0 };
}

__attribute__((format(printf, 2, 3))) static void msg_add(struct msg *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!m->size || m->len >= m->size - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(m->buf + m->len, m->size - m->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		m->len = m->len + (size_t)n < m->size ? m->len + (size_t)n : m->size - 1;
}

static char *memdup_str(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static void copy_out(const char *path, char *buf, size_t size)
{
	size_t n = strlen(path);

	if (!size)
		return;
	if (n >= size)
		n = size - 1;
	memcpy(buf, path, n);
	buf[n] = '\0';
}

/* Components in a normalized path: "/" is 0, "/a/b" 2. */
static uint32_t path_level(const char *path)
{
	uint32_t level = 0;

	if (!strcmp(path, "/"))
		return 0;
	for (; *path; path++)
		level += *path == '/';
	return level;
}

static char ascii_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* --- the hierarchy ------------------------------------------------------ */

/* v1 is frozen: no controller will join this list. A v1 mount with none of
 * them (systemd's name=systemd) controls nothing, so it is not "hybrid". */
static bool v1_has_controller(const char *superopts)
{
	static const char *const controllers[] = {
		"cpu",	   "cpuacct", "cpuset",	  "memory", "devices",
		"freezer", "net_cls", "net_prio", "blkio",  "perf_event",
		"hugetlb", "pids",    "rdma",	  "misc",   "debug",
	};

	for (const char *o = superopts; *o;) {
		size_t n = strcspn(o, ",");

		for (size_t i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++)
			if (strlen(controllers[i]) == n && !memcmp(o, controllers[i], n))
				return true;
		o += n + (o[n] == ',');
	}
	return false;
}

/* Decodes mountinfo's octal escapes (\040 for a space), in place. */
static void mountinfo_unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

/* Where cgroup2 is mounted: /sys/fs/cgroup first (v2 alone, or hybrid's
 * layout turned around), then systemd's hybrid place, then the first. */
static int mount_rank(const char *mount)
{
	if (!strcmp(mount, "/sys/fs/cgroup"))
		return 0;
	if (!strcmp(mount, "/sys/fs/cgroup/unified"))
		return 1;
	return 2;
}

static int set_none(struct cgroup_paths *cp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int set_none(struct cgroup_paths *cp, const char *fmt, ...)
{
	va_list ap;
	char *why;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&why, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	free(cp->why);
	free(cp->mount);
	cp->why = why;
	cp->hierarchy = CGROUP_HIERARCHY_NONE;
	cp->mount = strdup("");
	return cp->mount ? 0 : -ENOMEM;
}

/* Sets hierarchy, mount and why from mountinfo. 0 or -ENOMEM. */
static int hierarchy_detect(struct cgroup_paths *cp, const char *mountinfo)
{
	FILE *f = fopen(mountinfo, "re");
	char *line = NULL, *best = NULL;
	size_t cap = 0;
	int best_rank = 3, r = 0;
	bool v1 = false, v1_controllers = false;

	if (!f)
		return set_none(cp, "cannot read %s (%s): cgroups cannot be named", mountinfo,
				strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		char *fields[64], *save = NULL, *tok;
		size_t n = 0, dash = 0;

		line[strcspn(line, "\n")] = '\0';
		for (tok = strtok_r(line, " ", &save); tok && n < 64;
		     tok = strtok_r(NULL, " ", &save))
			fields[n++] = tok;
		/* ID PARENT DEV ROOT MOUNT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
		for (size_t i = 6; i < n && !dash; i++)
			if (!strcmp(fields[i], "-"))
				dash = i;
		if (!dash || dash + 1 >= n)
			continue;
		if (!strcmp(fields[dash + 1], "cgroup")) {
			v1 = true;
			if (dash + 3 < n && v1_has_controller(fields[dash + 3]))
				v1_controllers = true;
		} else if (!strcmp(fields[dash + 1], "cgroup2")) {
			mountinfo_unescape(fields[4]);
			if (mount_rank(fields[4]) < best_rank) {
				free(best);
				best = strdup(fields[4]);
				if (!best) {
					r = -ENOMEM;
					break;
				}
				best_rank = mount_rank(fields[4]);
			}
		}
	}
	free(line);
	fclose(f);
	if (r < 0)
		return r;
	if (!best) {
		if (v1)
			return set_none(cp, "no cgroup2 hierarchy is mounted (cgroup v1 only): "
					    "samples carry no cgroup; mount one (mount -t cgroup2 "
					    "none /sys/fs/cgroup/unified) to use cgroups");
		return set_none(cp,
				"no cgroup hierarchy is mounted: samples carry no cgroup; "
				"mount one (mount -t cgroup2 none /sys/fs/cgroup) to use cgroups");
	}
	free(cp->mount);
	cp->mount = best;
	cp->hierarchy = v1_controllers ? CGROUP_HIERARCHY_HYBRID : CGROUP_HIERARCHY_V2;
	return 0;
}

/* --- the table ---------------------------------------------------------- */

/* Room for one more removal; drops what is consumed or stale first. */
static int removals_reserve(struct cgroup_paths *cp)
{
	if (cp->removals_head && cp->removals_head * 2 >= cp->removals_len) {
		memmove(cp->removals, cp->removals + cp->removals_head,
			(cp->removals_len - cp->removals_head) * sizeof(*cp->removals));
		cp->removals_len -= cp->removals_head;
		cp->removals_head = 0;
	}
	/* Stale items pile up only where ids come back to life: rare. */
	if (cp->removals_len - cp->removals_head >= 2 * (size_t)CGROUP_PATHS_MAX) {
		size_t w = 0;

		for (size_t i = cp->removals_head; i < cp->removals_len; i++) {
			struct entry *e = hashtab_get(cp->ids, &cp->removals[i].id);

			if (e && e->removed_seq == cp->removals[i].seq)
				cp->removals[w++] = cp->removals[i];
		}
		cp->removals_head = 0;
		cp->removals_len = w;
	}
	return array_grow(&cp->removals, &cp->removals_cap, cp->removals_len + 1,
			  sizeof(*cp->removals), 0);
}

/* Marks e (id's) removed or alive again. 0 or -ENOMEM (e unchanged). */
static int entry_set_removed(struct cgroup_paths *cp, uint64_t id, struct entry *e, bool removed)
{
	int r;

	if (removed == !!e->removed_seq)
		return 0;
	if (!removed) {
		e->removed_seq = 0; /* its queue item goes stale */
		cp->removed--;
		return 0;
	}
	r = removals_reserve(cp);
	if (r < 0)
		return r;
	e->removed_seq = ++cp->removal_seq;
	cp->removals[cp->removals_len++] = (struct removal){ id, e->removed_seq };
	cp->removed++;
	return 0;
}

/* Frees the longest-removed entry; false if none is removed. */
static bool evict_oldest(struct cgroup_paths *cp)
{
	while (cp->removals_head < cp->removals_len) {
		struct removal rm = cp->removals[cp->removals_head++];
		struct entry *e = hashtab_get(cp->ids, &rm.id);

		if (e && e->removed_seq == rm.seq) {
			free(e->path);
			hashtab_remove(cp->ids, &rm.id);
			cp->removed--;
			return true;
		}
	}
	return false;
}

/*
 * Names id path[0, len), alive or removed; *ret (may be NULL) its entry,
 * valid until the next insertion. Returns 0; -ENOSPC where the table is
 * full of live cgroups (not kept); -ENOMEM.
 */
static int remember(struct cgroup_paths *cp, uint64_t id, const char *path, size_t len,
		    bool removed, struct entry **ret)
{
	struct entry *e = hashtab_get(cp->ids, &id);
	char *copy = NULL;
	int r;

	if (removed && (!e || !e->removed_seq)) {
		r = removals_reserve(cp); /* so that marking it cannot fail below */
		if (r < 0)
			return r;
	}
	if (!e || strlen(e->path) != len || memcmp(e->path, path, len)) {
		copy = memdup_str(path, len);
		if (!copy)
			return -ENOMEM;
	}
	if (!e) {
		if (hashtab_count(cp->ids) >= CGROUP_PATHS_MAX && !evict_oldest(cp)) {
			free(copy);
			return -ENOSPC;
		}
		e = hashtab_put(cp->ids, &id, NULL);
		if (!e) {
			free(copy);
			return -ENOMEM;
		}
	} else if (copy) {
		free(e->path);
	}
	if (copy)
		e->path = copy;
	entry_set_removed(cp, id, e, removed);
	if (ret)
		*ret = e;
	return 0;
}

/* --- the walk ----------------------------------------------------------- */

struct walk {
	struct cgroup_paths *cp;
	char *path; /* relative to the root, "" for the root */
	size_t len, cap;
	uint64_t want;
	char *want_path; /* want's path where the walk found it */
	bool incomplete; /* some directory was not read: removals unknown */
	int err;	 /* -ENOMEM */
};

static void walk_found(struct walk *w, uint64_t id)
{
	const char *path = w->len ? w->path : "/";
	size_t len = w->len ? w->len : 1;
	struct entry *e;
	int r;

	if (id == w->want && !w->want_path) {
		w->want_path = memdup_str(path, len);
		if (!w->want_path)
			w->err = -ENOMEM;
	}
	r = remember(w->cp, id, path, len, false, &e);
	if (r == -ENOMEM)
		w->err = r;
	else if (!r)
		e->seen_gen = w->cp->gen;
}

/* Names fd's subdirectories and theirs; closes fd. */
static void walk_dir(struct walk *w, int fd, unsigned depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		w->incomplete = true;
		return;
	}
	for (errno = 0; !w->err && (de = readdir(d)); errno = 0) {
		size_t len = w->len, n = strlen(de->d_name);
		struct stat st;
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		/* (cgroupfs has no symlinks; a test tree must not lead out) */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT) /* ENOENT: removed meanwhile */
				w->incomplete = true;
			continue;
		}
		if (!S_ISDIR(st.st_mode) || st.st_dev != w->cp->mount_dev)
			continue;
		if (array_grow(&w->path, &w->cap, len + n + 2, 1, 256) < 0) {
			w->err = -ENOMEM;
			break;
		}
		w->path[len] = '/';
		memcpy(w->path + len + 1, de->d_name, n + 1);
		w->len = len + 1 + n;
		walk_found(w, st.st_ino);
		if (depth + 1 >= WALK_DEPTH_MAX) {
			w->incomplete = true;
		} else {
			sub = openat(dirfd(d), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				walk_dir(w, sub, depth + 1);
			else if (errno != ENOENT)
				w->incomplete = true;
		}
		w->len = len;
		w->path[len] = '\0';
	}
	if (errno && !w->err)
		w->incomplete = true;
	closedir(d);
}

/*
 * Walks the hierarchy, naming every cgroup in it; a complete walk also
 * marks the live ids it did not find removed (their events were missed).
 * want's path, where found, into *ret_want (malloc'd; may be NULL).
 * Returns 0 or -ENOMEM; a directory it cannot read is skipped.
 */
static int scan(struct cgroup_paths *cp, uint64_t want, char **ret_want)
{
	struct walk w = { .cp = cp, .want = want };
	struct stat st;
	int fd;

	cp->stats.scans++;
	cp->last_scan_ns = clock_monotonic_ns();
	cp->gen++;
	fd = openat(cp->mount_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	walk_found(&w, st.st_ino);
	if (!w.err)
		walk_dir(&w, fd, 0);
	else
		close(fd);
	if (!w.err && !w.incomplete) {
		size_t pos = 0;
		const void *key;
		void *value;

		while (hashtab_next(cp->ids, &pos, &key, &value)) {
			struct entry *e = value;
			uint64_t id;

			memcpy(&id, key, sizeof(id));
			if (!e->removed_seq && e->seen_gen != cp->gen &&
			    entry_set_removed(cp, id, e, true) < 0)
				break;
		}
	}
	free(w.path);
	if (w.err) {
		free(w.want_path);
		return w.err;
	}
	if (ret_want)
		*ret_want = w.want_path;
	else
		free(w.want_path);
	return 0;
}

/* --- /proc -------------------------------------------------------------- */

/* stat of path (relative to the root) under the mount: a cgroup there?
 * If not, errno says why (ENOTDIR: something else is). */
static bool cgroup_stat(const struct cgroup_paths *cp, const char *path, struct stat *st)
{
	const char *rel = path[0] == '/' && path[1] ? path + 1 : ".";

	if (path[0] != '/') {
		errno = ENOENT;
		return false;
	}
	if (fstatat(cp->mount_fd, rel, st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (!S_ISDIR(st->st_mode) || st->st_dev != cp->mount_dev) {
		errno = ENOTDIR;
		return false;
	}
	return true;
}

static bool cgroup_is(const struct cgroup_paths *cp, const char *path, uint64_t id)
{
	struct stat st;

	return cgroup_stat(cp, path, &st) && st.st_ino == id;
}

/* The v2 path in proc_root/TGID/cgroup ("0::PATH"), malloc'd; NULL if
 * none (gone, no such line, or ENOMEM). */
static char *proc_cgroup_path(const struct cgroup_paths *cp, uint32_t tgid)
{
	char file[4096], *line = NULL, *path = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	snprintf(file, sizeof(file), "%s/%u/cgroup", cp->proc_root, tgid);
	f = fopen(file, "re");
	if (!f)
		return NULL;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (!strncmp(line, "0::", 3) && line[3] == '/') {
			path = memdup_str(line + 3, (size_t)n - 3);
			break;
		}
	}
	free(line);
	fclose(f);
	return path;
}

/*
 * id's name from tgid's /proc/TGID/cgroup, remembered; 0 or -ENOENT. A
 * live path counts only where its directory is id (the thread may have
 * moved since). The kernel writes " (deleted)" after a removed cgroup,
 * whose inode is gone: that path is taken unchecked, since a thread shows
 * a removed cgroup only once it exited there (rmdir refuses a populated
 * cgroup), and an exited thread moves no more.
 */
static int name_from_proc(struct cgroup_paths *cp, uint64_t id, uint32_t tgid, char *buf,
			  size_t size)
{
	char *path = proc_cgroup_path(cp, tgid);
	size_t len, suffix = strlen(DELETED_SUFFIX);
	bool removed = false;

	if (!path)
		return -ENOENT;
	len = strlen(path);
	if (!cgroup_is(cp, path, id)) {
		/* A live cgroup may itself be named "x (deleted)": tried first. */
		if (len <= suffix + 1 || strcmp(path + len - suffix, DELETED_SUFFIX)) {
			free(path);
			return -ENOENT;
		}
		len -= suffix;
		path[len] = '\0';
		removed = true;
	}
	(void)remember(cp, id, path, len, removed, NULL); /* named even if not kept */
	cp->stats.from_proc++;
	copy_out(path, buf, size);
	free(path);
	return 0;
}

/* --- the API ------------------------------------------------------------ */

int cgroup_paths_new(const char *mountinfo, const char *proc_root, struct cgroup_paths **ret)
{
	struct cgroup_paths *cp = calloc(1, sizeof(*cp));
	struct stat st;
	int r;

	if (!cp)
		return -ENOMEM;
	cp->mount_fd = -1;
	pthread_mutex_init(&cp->lock, NULL);
	cp->proc_root = strdup(proc_root ? proc_root : "/proc");
	r = cp->proc_root ? hashtab_new(sizeof(uint64_t), sizeof(struct entry), &cp->ids) : -ENOMEM;
	if (r < 0)
		goto fail;
	r = hierarchy_detect(cp, mountinfo ? mountinfo : "/proc/self/mountinfo");
	if (r < 0)
		goto fail;
	if (cp->hierarchy != CGROUP_HIERARCHY_NONE) {
		cp->mount_fd = open(cp->mount, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (cp->mount_fd < 0 || fstat(cp->mount_fd, &st) < 0) {
			char *mount = cp->mount;
			int e = errno;

			if (cp->mount_fd >= 0)
				close(cp->mount_fd);
			cp->mount_fd = -1;
			cp->mount = NULL;
			errno = e;
			r = set_none(cp,
				     "cannot open the cgroup2 hierarchy at %s (%s): cgroups "
				     "cannot be named",
				     mount, strerror(errno));
			free(mount);
			if (r < 0)
				goto fail;
		} else {
			cp->mount_dev = st.st_dev;
			r = scan(cp, 0, NULL);
			if (r < 0)
				goto fail;
		}
	}
	*ret = cp;
	return 0;
fail:
	cgroup_paths_free(cp);
	return r;
}

void cgroup_paths_free(struct cgroup_paths *cp)
{
	size_t pos = 0;
	void *value;

	if (!cp)
		return;
	if (cp->ids) {
		while (hashtab_next(cp->ids, &pos, NULL, &value))
			free(((struct entry *)value)->path);
		hashtab_free(cp->ids);
	}
	if (cp->mount_fd >= 0)
		close(cp->mount_fd);
	pthread_mutex_destroy(&cp->lock);
	free(cp->removals);
	free(cp->proc_root);
	free(cp->mount);
	free(cp->why);
	free(cp);
}

enum cgroup_hierarchy cgroup_paths_hierarchy(const struct cgroup_paths *cp, const char **ret_mount,
					     const char **ret_why)
{
	if (ret_mount)
		*ret_mount = cp->mount;
	if (ret_why)
		*ret_why = cp->why;
	return cp->hierarchy;
}

const char *cgroup_hierarchy_name(enum cgroup_hierarchy h)
{
	switch (h) {
	case CGROUP_HIERARCHY_V2:
		return "v2";
	case CGROUP_HIERARCHY_HYBRID:
		return "hybrid";
	case CGROUP_HIERARCHY_NONE:
		break;
	}
	return "none";
}

/* v2 cannot rename (kernfs's rename is v1's), so a rename here moves only
 * id, not the cgroups below it. */
int cgroup_paths_event(struct cgroup_paths *cp, uint64_t id, const char *path, bool removed)
{
	int r = 0;

	assert(path || removed);
	if (cp->hierarchy == CGROUP_HIERARCHY_NONE)
		return 0;
	pthread_mutex_lock(&cp->lock);
	cp->stats.events++;
	if (path) {
		r = remember(cp, id, path, strlen(path), removed, NULL);
	} else {
		struct entry *e = hashtab_get(cp->ids, &id);

		if (e)
			r = entry_set_removed(cp, id, e, true);
	}
	pthread_mutex_unlock(&cp->lock);
	return r == -ENOSPC ? 0 : r; /* full of live cgroups: a later lookup names it */
}

int cgroup_paths_name(struct cgroup_paths *cp, uint64_t id, uint32_t tgid, char *buf, size_t size)
{
	struct entry *e;
	char *found = NULL;
	int r = -ENOENT;

	if (cp->hierarchy == CGROUP_HIERARCHY_NONE || !id)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&cp->lock);
	e = hashtab_get(cp->ids, &id);
	if (e) {
		copy_out(e->path, buf, size);
		r = 0;
	} else if (tgid && !name_from_proc(cp, id, tgid, buf, size)) {
		r = 0;
	} else if (clock_monotonic_ns() - cp->last_scan_ns >=
			   CGROUP_PATHS_SCAN_INTERVAL_MS * 1000000ULL &&
		   !scan(cp, id, &found) && found) {
		copy_out(found, buf, size);
		free(found);
		r = 0;
	}
	if (r < 0)
		cp->stats.failures++;
	pthread_mutex_unlock(&cp->lock);
	return r;
}

/* --- suggestions -------------------------------------------------------- */

/* A candidate for "closest": lower rank first, then longer shared prefix,
 * smaller edit distance, shorter text, bytes. */
struct suggestion {
	const char *text; /* points into an entry's path */
	size_t len;
	int rank;
	size_t prefix, dist;
	enum cgroup_runtime runtime; /* containers' */
};

static int suggestion_cmp(const struct suggestion *a, const struct suggestion *b)
{
	int c;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->prefix != b->prefix)
		return a->prefix > b->prefix ? -1 : 1;
	if (a->dist != b->dist)
		return a->dist < b->dist ? -1 : 1;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	c = memcmp(a->text, b->text, a->len);
	return c < 0 ? -1 : c > 0;
}

/* Keeps the best SUGGEST_MAX of s in top (sorted), one per text. */
static void suggest(struct suggestion *top, size_t *n, const struct suggestion *s)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (top[i].len == s->len && !memcmp(top[i].text, s->text, s->len))
			return;
	for (i = *n; i > 0 && suggestion_cmp(s, &top[i - 1]) < 0; i--)
		if (i < SUGGEST_MAX)
			top[i] = top[i - 1];
	if (i < SUGGEST_MAX) {
		top[i] = *s;
		if (*n < SUGGEST_MAX)
			(*n)++;
	}
}

/* ASCII case-insensitive: is needle in hay? */
static bool contains(const char *hay, size_t hn, const char *needle, size_t nn)
{
	if (!nn || nn > hn)
		return false;
	for (size_t i = 0; i + nn <= hn; i++) {
		size_t j = 0;

		while (j < nn && ascii_lower(hay[i + j]) == ascii_lower(needle[j]))
			j++;
		if (j == nn)
			return true;
	}
	return false;
}

/* Levenshtein distance (ASCII case-insensitive); SIZE_MAX past EDIT_MAX. */
static size_t edit_distance(const char *a, size_t an, const char *b, size_t bn)
{
	size_t row[EDIT_MAX + 1];

	if (an > EDIT_MAX || bn > EDIT_MAX)
		return SIZE_MAX;
	for (size_t j = 0; j <= bn; j++)
		row[j] = j;
	for (size_t i = 1; i <= an; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= bn; j++) {
			size_t up = row[j];
			size_t best = diag + (ascii_lower(a[i - 1]) != ascii_lower(b[j - 1]));

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[bn];
}

static size_t common_prefix(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i = 0;

	while (i < an && i < bn && a[i] == b[i])
		i++;
	return i;
}

/* How close name q is to c: 0 one in the other, 1 a few edits apart, 2
 * neither; *dist the edit distance. */
static int name_rank(const char *q, size_t qn, const char *c, size_t cn, size_t *dist)
{
	size_t limit = qn / 3 > 1 ? qn / 3 : 1;

	*dist = SIZE_MAX;
	if ((qn > cn ? qn - cn : cn - qn) <= limit)
		*dist = edit_distance(q, qn, c, cn);
	if (contains(c, cn, q, qn) || contains(q, qn, c, cn))
		return 0;
	return *dist <= limit ? 1 : 2;
}

static const char *last_component(const char *path, size_t *len)
{
	const char *slash = strrchr(path, '/');

	*len = strlen(slash + 1);
	return slash + 1;
}

/* Live paths like rel: its last name in theirs or a few edits from it,
 * or its siblings. */
static void find_suggest(struct cgroup_paths *cp, const char *rel, struct msg *m)
{
	struct suggestion top[SUGGEST_MAX];
	size_t n = 0, pos = 0, qn, parent;
	const char *q = last_component(rel, &qn);
	void *value;

	parent = (size_t)(q - rel); /* "/a/" of "/a/b": siblings share it */
	while (hashtab_next(cp->ids, &pos, NULL, &value)) {
		const struct entry *e = value;
		struct suggestion s = { .text = e->path, .len = strlen(e->path) };
		size_t cn;
		const char *c;

		if (e->removed_seq)
			continue;
		c = last_component(e->path, &cn);
		s.rank = name_rank(q, qn, c, cn, &s.dist);
		if (s.rank == 2 && !(parent > 1 && (size_t)(c - e->path) == parent &&
				     !memcmp(e->path, rel, parent)))
			continue;
		s.prefix = common_prefix(rel, strlen(rel), s.text, s.len);
		suggest(top, &n, &s);
	}
	if (!n) {
		msg_add(m, "; no known cgroup has a name like it");
		return;
	}
	msg_add(m, "; closest:");
	for (size_t i = 0; i < n; i++)
		msg_add(m, "%s %.*s", i ? "," : "", (int)top[i].len, top[i].text);
}

/*
 * path as a cgroup's path relative to the root, malloc'd: the mount
 * point's prefix dropped, doubled and trailing slashes gone; a path
 * without a leading slash is relative to the root too. NULL for "." or
 * ".." in it (it would leave the hierarchy) or ENOMEM (*ret_nomem).
 */
static char *normalize(const struct cgroup_paths *cp, const char *path, bool *ret_nomem)
{
	size_t mlen = strlen(cp->mount), w = 0;
	char *out;

	*ret_nomem = false;
	if (strcmp(cp->mount, "/") && !strncmp(path, cp->mount, mlen) &&
	    (path[mlen] == '/' || !path[mlen]))
		path += mlen;
	out = malloc(strlen(path) + 2);
	if (!out) {
		*ret_nomem = true;
		return NULL;
	}
	for (const char *p = path; *p;) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			free(out);
			return NULL;
		}
		out[w++] = '/';
		memcpy(out + w, p, n);
		w += n;
		p += n;
	}
	if (!w)
		out[w++] = '/';
	out[w] = '\0';
	return out;
}

int cgroup_paths_find(struct cgroup_paths *cp, const char *path, struct cgroup_ref *ret, char *err,
		      size_t err_size)
{
	struct msg m = msg_init(err, err_size);
	struct stat st;
	bool nomem;
	char *rel;

	if (cp->hierarchy == CGROUP_HIERARCHY_NONE) {
		msg_add(&m, "%s", cp->why);
		return -EOPNOTSUPP;
	}
	if (!*path) {
		msg_add(&m, "an empty cgroup path");
		return -ENOENT;
	}
	rel = normalize(cp, path, &nomem);
	if (!rel) {
		if (nomem) {
			msg_add(&m, "out of memory");
			return -ENOMEM;
		}
		msg_add(&m, "cgroup path '%s' has '.' or '..' in it: give it from the root", path);
		return -ENOENT;
	}
	pthread_mutex_lock(&cp->lock);
	if (!cgroup_stat(cp, rel, &st)) {
		if (errno == ENOENT || errno == ENOTDIR) {
			msg_add(&m, "no cgroup '%s' under %s", rel, cp->mount);
			find_suggest(cp, rel, &m);
		} else {
			msg_add(&m, "cannot look up cgroup '%s' under %s: %s", rel, cp->mount,
				strerror(errno));
		}
		pthread_mutex_unlock(&cp->lock);
		free(rel);
		return -ENOENT;
	}
	(void)remember(cp, st.st_ino, rel, strlen(rel), false, NULL);
	pthread_mutex_unlock(&cp->lock);
	*ret = (struct cgroup_ref){ .id = st.st_ino, .level = path_level(rel) };
	free(rel);
	return 0;
}

/* --- identities --------------------------------------------------------- */

struct match {
	const char *path;
	uint64_t id;
	struct cgroup_identity identity;
};

/* span as a string in buf; false if it does not fit (then it is no name). */
static bool span_str(char *buf, size_t size, const char *span, size_t len)
{
	if (len >= size)
		return false;
	memcpy(buf, span, len);
	buf[len] = '\0';
	return true;
}

/* Does identity match the query (prefix: valid hex)? The rules are
 * cgroup_identity.h's, so that filters on paths and on ids agree. */
static bool identity_matches(const struct cgroup_identity *identity, const char *unit,
			     const char *prefix)
{
	char name[CGROUP_UNIT_SIZE], id[CGROUP_CONTAINER_SIZE];

	if (prefix) /* a monitor (conmon) runs beside the container, not in it */
		return identity->container && !identity->conmon &&
		       span_str(id, sizeof(id), identity->container, identity->container_len) &&
		       cgroup_container_matches(id, prefix);
	return identity->unit && span_str(name, sizeof(name), identity->unit, identity->unit_len) &&
	       cgroup_unit_matches(name, unit);
}

/* Is path's parent in the same match (the same unit or container)? */
static bool parent_matches(const struct match *mt, const char *unit, const char *prefix)
{
	const char *slash = strrchr(mt->path, '/');
	struct cgroup_identity parent;

	if (slash == mt->path)
		return false;
	cgroup_identity_parse(mt->path, (size_t)(slash - mt->path), &parent);
	if (!identity_matches(&parent, unit, prefix))
		return false;
	if (prefix)
		return parent.container_len == mt->identity.container_len &&
		       !memcmp(parent.container, mt->identity.container, parent.container_len);
	return parent.unit_len == mt->identity.unit_len &&
	       !memcmp(parent.unit, mt->identity.unit, parent.unit_len);
}

static int match_cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct match *)a)->path, ((const struct match *)b)->path);
}

static int match_cmp_container(const void *a, const void *b)
{
	const struct match *x = a, *y = b; /* ids: 64 hex (cgroup_identity's) */

	return memcmp(x->identity.container, y->identity.container, CONTAINER_ID_LEN);
}

/* Units or containers of live cgroups closest to the query. */
static void identity_suggest(struct cgroup_paths *cp, const char *unit, const char *prefix,
			     struct msg *m)
{
	struct suggestion top[SUGGEST_MAX];
	size_t n = 0, pos = 0;
	void *value;

	while (hashtab_next(cp->ids, &pos, NULL, &value)) {
		const struct entry *e = value;
		struct cgroup_identity id;
		struct suggestion s = { 0 };

		if (e->removed_seq)
			continue;
		cgroup_identity_parse(e->path, strlen(e->path), &id);
		if (prefix && id.container && !id.conmon) {
			s.text = id.container;
			s.len = id.container_len;
			s.runtime = id.runtime;
			s.prefix = common_prefix(prefix, strlen(prefix), s.text, s.len);
		} else if (!prefix && id.unit) {
			size_t qn = strlen(unit), cn = id.unit_len;
			const char *dot = memrchr(id.unit, '.', id.unit_len);

			s.text = id.unit;
			s.len = id.unit_len;
			if (!strchr(unit, '.') && dot) /* "nginy" is near nginx.service */
				cn = (size_t)(dot - id.unit);
			s.rank = name_rank(unit, qn, s.text, cn, &s.dist);
			s.prefix = common_prefix(unit, qn, s.text, s.len);
		} else {
			continue;
		}
		suggest(top, &n, &s);
	}
	if (!n) {
		msg_add(m, prefix ? "; no containers are known" : "; no units are known");
		return;
	}
	msg_add(m, prefix ? "; closest known containers:" : "; closest known units:");
	for (size_t i = 0; i < n; i++) {
		if (prefix)
			msg_add(m, "%s %.*s (%s)", i ? "," : "", SHORT_ID_LEN, top[i].text,
				cgroup_identity_runtime_name(top[i].runtime));
		else
			msg_add(m, "%s %.*s", i ? "," : "", (int)top[i].len, top[i].text);
	}
}

/* -EEXIST where the matches (sorted by container) hold several containers. */
static int distinct_containers(struct match *mt, size_t n, const char *query, struct msg *m)
{
	size_t distinct = 0, listed = 0;

	qsort(mt, n, sizeof(*mt), match_cmp_container);
	for (size_t i = 0; i < n; i++)
		distinct += !i || match_cmp_container(&mt[i - 1], &mt[i]);
	if (distinct < 2)
		return 0;
	msg_add(m, "container id prefix '%s' matches %zu containers:", query, distinct);
	for (size_t i = 0; i < n && listed < EXISTS_MAX; i++) {
		if (i && !match_cmp_container(&mt[i - 1], &mt[i]))
			continue;
		msg_add(m, "%s %.*s (%s)", listed ? "," : "", SHORT_ID_LEN,
			mt[i].identity.container,
			cgroup_identity_runtime_name(mt[i].identity.runtime));
		listed++;
	}
	if (distinct > listed)
		msg_add(m, " and %zu more", distinct - listed);
	msg_add(m, "; give more of its digits");
	return -EEXIST;
}

int cgroup_paths_find_identity(struct cgroup_paths *cp, const char *unit, const char *container,
			       struct cgroup_ref *ret, size_t max, char *err, size_t err_size)
{
	struct msg m = msg_init(err, err_size);
	char prefix[CONTAINER_ID_LEN + 1] = "";
	const char *want = NULL; /* the prefix, lowercase */
	struct match *mt = NULL;
	size_t n = 0, cap = 0, outer = 0, pos = 0;
	const void *key;
	void *value;
	int r;

	assert(!unit != !container);
	if (cp->hierarchy == CGROUP_HIERARCHY_NONE) {
		msg_add(&m, "%s", cp->why);
		return -EOPNOTSUPP;
	}
	if (container) {
		size_t len = strlen(container);
		bool valid = len && len <= CONTAINER_ID_LEN;

		for (size_t i = 0; valid && i < len; i++) {
			prefix[i] = ascii_lower(container[i]);
			valid = (prefix[i] >= '0' && prefix[i] <= '9') ||
				(prefix[i] >= 'a' && prefix[i] <= 'f');
		}
		prefix[valid ? len : 0] = '\0';
		if (valid)
			want = prefix;
	}
	pthread_mutex_lock(&cp->lock);
	/* Asked for by a user, now: a fresh walk, whatever the last one. */
	r = scan(cp, 0, NULL);
	while (!r && (unit || want) && hashtab_next(cp->ids, &pos, &key, &value)) {
		const struct entry *e = value;
		struct cgroup_identity id;

		if (e->removed_seq)
			continue;
		cgroup_identity_parse(e->path, strlen(e->path), &id);
		if (!identity_matches(&id, unit, want))
			continue;
		r = array_grow(&mt, &cap, n + 1, sizeof(*mt), 0);
		if (!r) {
			mt[n] = (struct match){ .path = e->path, .identity = id };
			memcpy(&mt[n++].id, key, sizeof(uint64_t));
		}
	}
	if (r < 0) {
		msg_add(&m, "out of memory");
		goto out;
	}
	if (want && n) {
		r = distinct_containers(mt, n, container, &m);
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (!parent_matches(&mt[i], unit, want))
			mt[outer++] = mt[i];
	if (!outer) {
		if (unit && !strchr(unit, '.'))
			msg_add(&m, "no cgroup of unit '%s' (nor '%s.service')", unit, unit);
		else if (unit)
			msg_add(&m, "no cgroup of unit '%s'", unit);
		else if (want)
			msg_add(&m, "no container's id starts with '%s'", container);
		else
			msg_add(&m, "'%s' is not a container id prefix (1 to 64 hex digits)",
				container);
		identity_suggest(cp, unit, container ? prefix : NULL, &m);
		r = -ENOENT;
		goto out;
	}
	if (outer > max) {
		msg_add(&m, "%zu cgroups match, more than %zu", outer, max);
		r = -E2BIG;
		goto out;
	}
	qsort(mt, outer, sizeof(*mt), match_cmp_path);
	for (size_t i = 0; i < outer; i++)
		ret[i] = (struct cgroup_ref){ .id = mt[i].id, .level = path_level(mt[i].path) };
	r = (int)outer;
out:
	pthread_mutex_unlock(&cp->lock);
	free(mt);
	return r;
}

void cgroup_paths_stats(struct cgroup_paths *cp, struct cgroup_paths_stats *ret)
{
	pthread_mutex_lock(&cp->lock);
	*ret = cp->stats;
	ret->known = hashtab_count(cp->ids);
	ret->removed = cp->removed;
	pthread_mutex_unlock(&cp->lock);
}
