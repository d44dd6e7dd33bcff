/*
 * state_lock: one daemon per database. offcpud holds a POSIX write lock on
 * a lock file beside its database ("DATABASE.lock", which also holds its
 * pid as text) for the whole life of the process, so a second offcpud
 * configured with the same database fails at once, naming the holder, and
 * the first one never notices. The kernel drops the lock when the process
 * ends, kill -9 included. Called by the manager before the store opens.
 * Does not log.
 */
#ifndef STATE_LOCK_H
#define STATE_LOCK_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Locks db_path's lock file. Returns the lock's fd (>= 0), to keep open
 * until exit; -EBUSY when another process holds it (*ret_holder: its pid,
 * 0 if it is not visible from here); another -errno if the file cannot be
 * opened or locked. *ret_holder is written only for -EBUSY.
 */
int state_lock_acquire(const char *db_path, pid_t *ret_holder);

/* Unlocks and closes; a negative fd is ignored. */
void state_lock_release(int fd);

/* The lock file's name for db_path ("DB.lock"); -ENAMETOOLONG if too long. */
int state_lock_path(const char *db_path, char *buf, size_t size);

#endif
