/*
 * state_lock: see state_lock.h. A separate lock file rather than the
 * database itself: SQLite takes POSIX locks on the database, and a POSIX
 * lock of ours there would be dropped whenever SQLite closed one of its
 * descriptors. A POSIX lock (not flock) so the kernel can tell a second
 * daemon the holder's pid (F_GETLK), even in another pid namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "state_lock.h"

int state_lock_path(const char *db_path, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s.lock", db_path);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int state_lock_acquire(const char *db_path, pid_t *ret_holder)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[4200], pid[32];
	int fd, r, n;

	r = state_lock_path(db_path, path, sizeof(path));
	if (r < 0)
		return r;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (fcntl(fd, F_SETLK, &lk) < 0) {
		r = -errno;
		if (r == -EAGAIN || r == -EACCES) {
			lk = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET };
			/* The holder may have just exited: then its pid is unknown (0). */
			*ret_holder = fcntl(fd, F_GETLK, &lk) == 0 && lk.l_type != F_UNLCK
					      ? lk.l_pid
					      : 0;
			r = -EBUSY;
		}
		close(fd);
		return r;
	}
	/* The pid as text, for people; the lock is what counts, so a full
	 * disk (the store copes with one) does not stop the start. */
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, n, 0) != n) {
		/* no pid then: F_GETLK still names the holder to a second daemon */
	}
	return fd;
}

void state_lock_release(int fd)
{
	if (fd >= 0)
		close(fd); /* closing drops the process's POSIX locks on the file */
}
