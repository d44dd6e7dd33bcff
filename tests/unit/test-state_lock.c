/* Unit test of daemon/state_lock.c: a second process is refused with the
 * holder's pid, the file holds the pid as text, the lock goes with its
 * holder (kill -9 included), and a name too long is refused. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "state_lock.h"

int main(void)
{
	char dir[] = "/tmp/offcpu-test-state_lock-XXXXXX", db[128], lock[160], text[32] = "";
	char longname[5000];
	int ready[2], fd;
	pid_t child, holder = -1;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(db, sizeof(db), "%s/offcpu.db", dir);
	CHECK(state_lock_path(db, lock, sizeof(lock)) == 0);
	CHECK(!strcmp(lock + strlen(lock) - 8, ".db.lock"));
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK(state_lock_acquire(longname, &holder) == -ENAMETOOLONG);

	/* Another process holds it (POSIX locks do not conflict in one process). */
	CHECK(pipe(ready) == 0);
	child = fork();
	if (child == 0) {
		pid_t h;
		int cfd = state_lock_acquire(db, &h);

		if (write(ready[1], cfd >= 0 ? "y" : "n", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(read(ready[0], text, 1) == 1 && text[0] == 'y');
	CHECK(state_lock_acquire(db, &holder) == -EBUSY);
	CHECK(holder == child);
	f = fopen(lock, "r");
	CHECK(f && fgets(text, sizeof(text), f));
	if (f)
		fclose(f);
	CHECK(atol(text) == child);

	/* Its holder killed: the kernel dropped the lock; now ours. */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	fd = state_lock_acquire(db, &holder);
	CHECK(fd >= 0);
	f = fopen(lock, "r");
	CHECK(f && fgets(text, sizeof(text), f));
	if (f)
		fclose(f);
	CHECK(atol(text) == getpid());
	state_lock_release(fd);
	state_lock_release(-1);

	CHECK(unlink(lock) == 0 && rmdir(dir) == 0);
	return CHECK_DONE();
}
