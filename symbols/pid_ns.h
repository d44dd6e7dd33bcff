/*
 * pid_ns: the pid a process has in its own pid namespace, the one its
 * owners know it by (a container's main process is often 1 there). Read
 * from the last field of the NSpid line of /proc/TGID/status, which lists
 * the process's pid in each namespace from the reader's down to its own;
 * where its ns/pid link is the reader's own, it is the pid itself, and
 * the status file is not read. Does not log.
 */
#ifndef PID_NS_H
#define PID_NS_H

#include <stdint.h>

/* tgid's pid in its innermost pid namespace, read under proc_root, into
 * *ret: 0 where that is tgid itself (no namespace of its own). Returns 0,
 * or -errno where it cannot be read (the process is gone; -ENOENT also
 * for a kernel before 4.1, without NSpid). */
int pid_ns_innermost(const char *proc_root, uint32_t tgid, uint32_t *ret);

#endif
