/*
 * manager_internal: what the manager's files share. manager.c dispatches
 * requests and runs the life cycle; manager_drain.c schedules drains and
 * routes their rows; manager_continuous.c starts the continuous profile's
 * slots and manager_window.c keeps its windows; manager_capture.c runs
 * captures (program groups, slots, request probes); manager_blocked.c
 * answers "blocked"; manager_latency.c the Intel PT sessions;
 * manager_status.c answers status. Everything runs on the event loop thread but the work
 * functions given to uv_queue_work() (drain_work_cb, probe_attach_cb,
 * load_work_cb, pt_work_cb), which run on the libuv pool. Logs.
 */
#ifndef MANAGER_INTERNAL_H
#define MANAGER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "access.h"
#include "capture.h"
#include "collector.h"
#include "config.h"
#include "drain.h"
#include "proto.h"
#include "pt_capture.h"
#include "request.h"
#include "sampling.h"
#include "store.h"
#include "store_jobs.h"

#define PROC_ROOT "/proc"

struct cgroup_paths;

/* A cgroup the kernel said was made (manager_cgroups.c). */
struct made_cgroup {
	uint64_t id;
	uint32_t level;
	char *path;
};

/* Drains (manager_drain.c): one at a time, on a worker thread. */
struct manager_drain {
	uv_timer_t drain_timer;
	uv_work_t drain_work;
	struct drain_result drain_result;
	struct drain_names *kept_names; /* names kept from one drain to the next */
	uint32_t drain_tgids[OFFCPU_MAX_SLOTS * PROTO_MAX_IDS]; /* targets to prime */
	size_t n_drain_tgids;
	int drain_error;
	int banks_error; /* collector_batch.banks_error of the last drain */
	bool draining;
	bool drain_again; /* a capture ended during a drain: run another at once */
	uint64_t drains_started;
	/* The in-progress pass before this drain (collector_pass_in_progress()):
	 * the window closes with it (rotate), it counts the continuous slots'
	 * open blocks (progress: rotate, or the final drain) and the captures
	 * that end with it (final_slots), up to pass_now_ns. */
	bool rotate, progress;
	uint32_t final_slots;
	uint32_t stop_slots; /* stopping: the continuous slots go off after the pass too */
	uint64_t pass_now_ns;
	int64_t pass_realtime_ms; /* the same time, CLOCK_REALTIME: the window's end */
	int pass_error;
	/* Sampled groups no drain's sample stood for yet: the worker's during a
	 * drain, the loop's between drains (carry_settle()). */
	struct sampling_carry carry;
	/* Cgroups made since the last drain, while captures follow a unit or
	 * container: noted by the worker, used on the loop after it. */
	struct made_cgroup *made;
	size_t n_made, cap_made;
};

/* The always-on captures (manager_continuous.c): a slot per kind, whose rows
 * fill the window, and how the store took the windows written. */
struct manager_windows {
	bool continuous;
	uint32_t continuous_slots; /* mask of slots */
	struct profile *window;
	struct hashtab *window_hists;		      /* struct offcpu_hist_key (slot 0) -> count */
	struct sampling_summary window_sampling;      /* the open window's, continuous slots' */
	struct sampling_summary last_window_sampling; /* the last closed window's */
	int64_t window_start_ms, window_close_ms;     /* CLOCK_REALTIME */
	uint64_t windows_written, windows_failed;
	struct store_stats store_stats; /* as of the last window write */
	bool disk_full;			/* the last write found no space */
	char store_error[256];		/* of the last write; "" if it worked */
};

/* Captures and their slots (manager_capture.c). */
struct manager_captures {
	uint64_t next_capture_id;
	struct capture *captures[OFFCPU_MAX_SLOTS];	  /* by slot */
	struct request_probes requests[OFFCPU_MAX_SLOTS]; /* of request-synchronous slots */
	unsigned probe_works;				  /* attaching or detaching */
	unsigned load_works;				  /* captures loading program groups */
	unsigned reply_works;				  /* finished captures being formatted */
};

/* The PT session (manager_latency.c). */
struct manager_latency {
	struct pt_work *pt_work; /* the PT session running, if any */
	atomic_bool pt_stop;	 /* ends it early: shutting down */
};

/* offcpuctl blocked's requests (manager_blocked.c): waiting for the next
 * drain, and the ones its thread answers. */
struct blocked_work;
struct manager_blocked {
	struct blocked_work *pending, *running;
	uint64_t loaded_ns; /* when the programs were loaded (CLOCK_MONOTONIC) */
};

/* What status reports (manager_status.c), sampled at each drain. */
struct manager_stats {
	uint64_t started_ns;
	uint64_t counters[OFFCPU_CNT_MAX]; /* as of the last drain */
	uint64_t counters_prev[OFFCPU_CNT_MAX];
	uint64_t counters_ns, counters_prev_ns;
	/* Self-accounting (times as counters_ns). */
	struct collector_program programs[COLLECTOR_MAX_PROGRAMS],
		programs_prev[COLLECTOR_MAX_PROGRAMS];
	size_t n_programs;
	uint64_t cpu_ns, cpu_prev_ns; /* the daemon's user + system time */
	size_t drained_rows, drained_stacks, drained_chains, drained_hists;
};

/* sampled_walk = auto: how deferred walks meet the return to user mode
 * (walk_return.h), chosen again at each drain. */
struct manager_walk_return {
	bool switchable;     /* auto, the collector can wait for rseq_update, and its
				attach has not failed */
	bool rseq;	     /* deferred walks wait for rseq_update now */
	double task_work_ns; /* the last measured mean time to schedule a task work */
	char why[256];	     /* status's walk_return_reason with auto; else "" */
};

struct manager {
	uv_loop_t *loop;
	struct config cfg;
	struct access_policy access;
	struct collector *collector;
	struct symbolizer *symbolizer;
	struct cpython_code *cpython;  /* CPython frames' names (drain worker only) */
	struct unwinder *unwinder;     /* NULL: user stacks by frame pointers only */
	struct proc_files *proc_files; /* exited processes' maps and files, for names */
	struct file_ids *file_ids;     /* the files user frames are recorded by */
	struct cgroup_paths *cgroups;  /* cgroup ids' paths (manager_cgroups.c) */
	struct server *server;
	uv_timer_t watchdog_timer;
	struct store *store;
	int state_lock_fd;     /* held for life: one daemon per database (state_lock.h) */
	char tracefs_why[256]; /* "" or why tracefs is missing (fileio's status) */
	struct store_queue *store_queue;
	struct pusher *pusher; /* NULL: no push target (manager_push.c) */
	bool stopping;	       /* free once the drain under way and the store jobs are done */
	unsigned handles_open; /* timers still closing at the end */
	struct manager_drain drain;
	struct manager_windows windows;
	struct manager_captures cap;
	struct manager_latency pt;
	struct manager_stats stats;
	struct manager_walk_return walk_return;
	struct manager_blocked blocked;
};

struct pt_work {
	uv_work_t work;
	struct manager *m;
	struct server_conn *conn;
	struct proto_latency_request req;
	struct proto_pt_trace_result result;
	int error;
	char err[512];
	char path[4200];
};

/* manager.c */
void manager_reply_error(struct server_conn *conn, const char *code, const char *message);
void manager_shutdown_continue(struct manager *m);

/* manager_push.c */
struct pusher_status;
/* Starts the pusher if the configuration has push targets. 0 or -errno
 * (logged). */
int manager_push_start(struct manager *m);
void manager_push_stop(struct manager *m); /* joins its threads */
void manager_handle_push(struct manager *m, struct server_conn *conn,
			 const struct proto_push_request *req);
/* The targets' states into ret[0, max), st[0, max) holding the strings. */
size_t manager_push_status(struct manager *m, struct pusher_status *st,
			   struct proto_push_status *ret, size_t max);

/* manager_drain.c */
void manager_drain_start(struct manager *m);
void manager_drain_timer_cb(uv_timer_t *t);

/* manager_window.c */
/* Where a window that starts at now_ms closes: the next multiple of the
 * window length, so windows line up with the clock (…:00, …:10, …:20).
 * window_seconds > 0 (config checks it). */
int64_t manager_window_close_ms(int64_t now_ms, uint32_t window_seconds);
/* Starts a window at now_ms, to close on the clock's window boundary. */
int manager_window_open(struct manager *m, int64_t now_ms);
/* A window's (or stored capture's) write is done: its outcome, for status. */
void manager_window_written(void *arg, const struct store_window *w, int r, const char *msg,
			    const struct store_stats *stats);
/* Adds a drained histogram row of a continuous slot to the open window. */
void manager_window_hist_add(struct manager *m, const struct collector_hist *h);
/* Hands the current window to the store and, with reopen, opens the next
 * one, which starts where this one ends (now_ms: where the in-progress pass
 * counted open blocks up to): every drained row lands in exactly one. */
void manager_window_rotate(struct manager *m, bool reopen, int64_t now_ms);
/* Whether the open window's close time has come: the next drain rotates. */
bool manager_window_due(const struct manager *m, int64_t now_ms);
/* Frees the open window, unstored (the daemon is gone). */
void manager_window_free(struct manager *m);
/* What an export's notes say about the always-on profile's setup. */
void manager_window_export_setup(const struct manager *m, struct store_jobs_export_setup *ret);

/* manager_continuous.c */
int manager_continuous_start(struct manager *m);

/* manager_cgroups.c */
int manager_cgroups_start(struct manager *m);
/* The kernel's cgroup events since the last call, from the drain's thread. */
void manager_cgroups_take_events(struct manager *m);
/* After the drain, on the loop: the cgroups made since the last one that a
 * running capture's unit, container or path names join its kernel filter
 * (a unit or container restarted while it runs). */
void manager_cgroups_follow(struct manager *m);
void manager_cgroups_free(struct manager *m); /* at the end */
/* drain_lookup's cgroup_path and ns_pid (arg: the manager). An id that
 * cannot be named is "[cgroup ID]". */
int manager_cgroup_path(void *arg, uint64_t id, uint32_t tgid, char *buf, size_t size);
uint32_t manager_ns_pid(void *arg, uint32_t tgid);
/* The subtrees who names, into ret (at most max): 0 with *ret_n (0: who
 * names none), or -errno with *ret_code and a message in err. */
int manager_cgroups_resolve(struct manager *m, const struct proto_cgroup_filter *who,
			    struct collector_cgroup *ret, size_t max, size_t *ret_n,
			    const char **ret_code, char *err, size_t err_size);
void manager_cgroups_status(struct manager *m, struct proto_cgroup_status *ret);
/* Readies who for a filter: a path under the mount point is made one from
 * the hierarchy's root, as rows name theirs. Replies and returns false
 * where there is no v2 hierarchy to filter by. */
bool manager_cgroups_ready(struct manager *m, struct server_conn *conn,
			    struct proto_cgroup_filter *who);

/* manager_capture.c */
unsigned manager_captures_running(const struct manager *m);
void manager_capture_free_cb(uv_handle_t *h);
void manager_capture_finish(struct manager *m, struct capture *c);
void manager_capture_end(struct manager *m, struct capture *c);
const char *manager_group_unavailable(struct manager *m, unsigned group, char *buf, size_t size);
const char *manager_request_error_code(int r);
bool manager_recording_allowed(struct manager *m, struct server_conn *conn,
			       const struct proto_capture_request *req, uint32_t seconds);
void manager_log_groups_loaded(struct manager *m, uint32_t groups);
void manager_handle_capture(struct manager *m, struct server_conn *conn,
			    const struct proto_capture_request *req);

/* manager_latency.c */
void manager_pt_limits(const struct config *cfg, struct pt_capture_limits *ret);
void manager_handle_latency(struct manager *m, struct server_conn *conn,
			    const struct proto_latency_request *req);

/* manager_blocked.c: a request, then at the drain: taken at its start, run
 * on its thread (named through lk), replied to when it is in; dropped (with
 * an error reply) at shutdown. */
struct drain_lookup;
void manager_handle_blocked(struct manager *m, struct server_conn *conn,
			    const struct proto_blocked_request *req);
void manager_blocked_take(struct manager *m);
void manager_blocked_run(struct manager *m, const struct drain_lookup *lk);
void manager_blocked_reply(struct manager *m);
void manager_blocked_drop(struct manager *m);

/* manager_status.c */
void manager_notify_status(struct manager *m);
void manager_handle_status(struct manager *m, struct server_conn *conn);
double manager_counter_rate(const struct manager *m,
			    unsigned idx); /* per second, last drain interval */
double
manager_task_work_mean_ns(const struct manager *m); /* ... per task work scheduled; 0: none */

#endif
