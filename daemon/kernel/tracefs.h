/*
 * tracefs: the syscall tracepoints (--kind fileio) are attached through
 * tracefs, which libbpf finds at /sys/kernel/tracing or
 * /sys/kernel/debug/tracing. systemd mounts it at boot
 * (sys-kernel-tracing.mount); where nothing did, offcpud mounts it the
 * same way before loading its programs. Called by the manager at start.
 * Does not log.
 */
#ifndef TRACEFS_H
#define TRACEFS_H

#include <stddef.h>

#define TRACEFS_DIR	  "/sys/kernel/tracing"
#define TRACEFS_DEBUG_DIR "/sys/kernel/debug/tracing"

/*
 * Makes sure tracefs is reachable: 0 if it was mounted already, 1 if this
 * call mounted it on dir (TRACEFS_DIR, or another directory in tests),
 * or -errno if it is not mounted and mounting failed; then why says
 * exactly that ("tracefs is not mounted at DIR (mounting it failed: ...)").
 */
int tracefs_ensure(const char *dir, char *why, size_t why_size);

#endif
