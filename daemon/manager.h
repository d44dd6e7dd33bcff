/*
 * manager: the daemon's state and the meaning of requests. Owns the collector,
 * the symbolizer, the socket server and the captures; schedules drains (one
 * at a time, on a libuv worker thread) every drain interval and whenever a
 * capture ends; dispatches protocol requests. Called by main(). Logs.
 */
#ifndef MANAGER_H
#define MANAGER_H

#include <uv.h>

#include "config.h"

struct manager;

/* Loads the BPF programs and starts listening. Returns 0 or -errno (logged). */
int manager_new(uv_loop_t *loop, const struct config *cfg, struct manager **ret);

/* Stops: tells running captures' clients, detaches the programs, removes the
 * socket — at once, or when the drain under way has finished. The loop must
 * run on until it has no more handles. */
void manager_shutdown(struct manager *m);

#endif
