/*
 * thread_state: names of the thread-state classes a capture filters on, and
 * their masks (bit numbers are enum offcpu_state in bpf/offcpu.h). Shared by
 * the protocol, the daemon and offcpuctl so every place spells them alike.
 * Does not log.
 *
 *   R  running:   preempted, still runnable (involuntary switch)
 *   S  sleeping:  interruptible sleep (TASK_INTERRUPTIBLE)
 *   D  disk:      uninterruptible sleep (TASK_UNINTERRUPTIBLE)
 *   O  other:     idle kernel threads (TASK_IDLE), stopped, traced, ...
 */
#ifndef THREAD_STATE_H
#define THREAD_STATE_H

#include <stddef.h>
#include <stdint.h>

#define THREAD_STATE_COUNT 4
#define THREAD_STATE_ALL   0xfu

/* Short name ("R", "S", "D", "O") of a class; "?" if out of range. */
const char *thread_state_name(unsigned state);

/* Mask bit of one name: a letter or a long name (running, preempted,
 * sleeping, interruptible, disk, uninterruptible, other), case-insensitive.
 * Returns the bit number, or -EINVAL. */
int thread_state_parse(const char *name);

/* Mask of a comma-separated list such as "S,D" or "running,disk". Returns
 * -EINVAL on an unknown or empty name; *ret_mask is written only on success. */
int thread_state_mask_parse(const char *list, uint32_t *ret_mask);

#endif
