/*
 * proto: the offcpud socket protocol, version 1 (spec: proto/PROTOCOL.md).
 * The only module that touches JSON. Used by the daemon (parse requests,
 * format replies) and by offcpuctl (format requests, parse replies).
 * Each request's fields are described once, in a table
 * (proto_request_table.c) that drives both parsing and validation; unknown
 * fields are rejected. Does not log.
 * Framing: one JSON object per line, '\n' terminated, both directions.
 */
#ifndef PROTO_H
#define PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kind.h" /* enum proto_kind, proto_palette, proto_metric */

#define PROTO_VERSION	1
#define PROTO_MAX_IDS	256  /* pids or tids in one capture or export request */
#define PROTO_COMM_MAX	63   /* bytes of a comm filter, without the NUL */
#define PROTO_REGEX_MAX 1023 /* bytes of a grep or exclude filter, without the NUL */

#define PROTO_PID_MAX	      4194304 /* PID_MAX_LIMIT on 64-bit kernels */
#define PROTO_SECONDS_MAX     86400   /* of a capture or a latency recording */
#define PROTO_SECONDS_DEFAULT 10

/* A limit as a string literal, for messages that quote it:
 * PROTO_STR(PROTO_SECONDS_MAX) is "86400". */
#define PROTO_STR(x)  PROTO__STR(x)
#define PROTO__STR(x) #x

/* Render options' limits; strings in bytes, without the NUL. */
#define PROTO_TITLE_MAX	       127 /* title, subtitle */
#define PROTO_COUNTNAME_MAX    31
#define PROTO_MINWIDTH_MAX     31
#define PROTO_WIDTH_MIN	       200 /* px; 0 asks for the renderer's default */
#define PROTO_WIDTH_MAX	       100000
#define PROTO_FRAME_HEIGHT_MIN 4 /* px; 0 asks for the renderer's default */
#define PROTO_FRAME_HEIGHT_MAX 200

#define PROTO_CHAIN_DEPTH_DEFAULT 3   /* waker levels of a chain capture */
#define PROTO_CHAIN_DEPTH_MAX	  8   /* OFFCPU_MAX_CHAIN */
#define PROTO_MAX_SAMPLE_PERIOD_US 1000000 /* OFFCPU_MAX_SAMPLE_PERIOD_NS / 1000 */
#define PROTO_HIST_BUCKETS	  32  /* log2 of microseconds; OFFCPU_HIST_BUCKETS */
#define PROTO_MAX_REQUESTS	  8   /* request symbols of a capture; OFFCPU_MAX_REQUESTS */
#define PROTO_REQUEST_SPEC_MAX	  511 /* bytes of one "SYMBOL[@BINARY]", without the NUL */

/*
 * Who a request is about, beside pids: a cgroup v2 subtree, a systemd unit
 * or a container (at most one of them). A capture decides it in the kernel;
 * export and hist on the stored rows' cgroup paths.
 */
#define PROTO_CGROUP_MAX    4095 /* bytes of a cgroup path, without the NUL */
#define PROTO_UNIT_MAX	    255	 /* a unit name (NAME_MAX) */
#define PROTO_CONTAINER_MAX 64	 /* hex digits of a container id */

struct proto_cgroup_filter {
	char cgroup[PROTO_CGROUP_MAX + 1];	 /* "/a/b": that cgroup and below; "": any */
	char unit[PROTO_UNIT_MAX + 1];		 /* "nginx.service" ("nginx" too); "": any */
	char container[PROTO_CONTAINER_MAX + 1]; /* a unique prefix of its id; "": any */
};

/* What the root frame of folded stacks and flame graphs is. */
enum proto_group_by {
	PROTO_GROUP_BY_COMM,	  /* the thread's name (and nothing above it) */
	PROTO_GROUP_BY_PROCESS,	  /* "name [pid]", then the thread's name */
	PROTO_GROUP_BY_UNIT,	  /* the systemd unit, then the thread's name */
	PROTO_GROUP_BY_CONTAINER, /* "runtime:id12", then the thread's name */
	PROTO_GROUP_BY_CGROUP,	  /* the cgroup path, then the thread's name */
};

/* The root frame of rows that have no such identity. */
#define PROTO_NO_UNIT	   "[no unit]"
#define PROTO_NO_CONTAINER "[no container]"
#define PROTO_NO_CGROUP	   "[no cgroup]"

enum proto_cmd {
	PROTO_CMD_STATUS,
	PROTO_CMD_CAPTURE,
	PROTO_CMD_STOP,	   /* ends this connection's running capture early */
	PROTO_CMD_WINDOWS, /* lists the stored windows */
	PROTO_CMD_EXPORT,  /* merges stored windows into one profile */
	PROTO_CMD_HIST,	   /* per-process log2 histograms of stored windows */
	PROTO_CMD_LATENCY, /* Intel PT function latency of one process */
	PROTO_CMD_HEATMAP, /* per-window totals of stored windows (proto_heatmap.h) */
	PROTO_CMD_BLOCKED, /* the threads off the CPU now, longest first */
	PROTO_CMD_PUSH,	   /* sends stored windows to push targets again (backfill) */
};

enum proto_stacks {
	PROTO_STACKS_BOTH,
	PROTO_STACKS_USER,
	PROTO_STACKS_KERNEL,
};

enum proto_format {
	PROTO_FORMAT_FOLDED,
	PROTO_FORMAT_JSON,
	PROTO_FORMAT_SVG,	 /* a flame graph, rendered by the daemon */
	PROTO_FORMAT_SPEEDSCOPE, /* speedscope's JSON file format */
};

/* How an svg is drawn; speedscope uses only title (as the profile's name),
 * folded and json none of it. */
struct proto_render {
	char title[PROTO_TITLE_MAX + 1];	 /* "": the daemon picks one */
	char subtitle[PROTO_TITLE_MAX + 1];	 /* "": none */
	char countname[PROTO_COUNTNAME_MAX + 1]; /* unit of the values; "": "us" */
	uint32_t width;				 /* px; 0: default 1200 */
	uint32_t frame_height;			 /* px; 0: default 16 */
	char minwidth[PROTO_MINWIDTH_MAX + 1];	 /* "0.1" px, "0.5%" of total; "": default */
	uint32_t inverted;			 /* bool: icicle, root at the top */
	uint32_t reverse;			 /* bool: the leaf as the root */
	uint32_t flamechart;			 /* bool: keep input order */
	enum proto_palette palette;		 /* default PROTO_PALETTE_AUTO */
};

struct proto_capture_request {
	uint32_t pids[PROTO_MAX_IDS]; /* tgids; empty: every process */
	size_t n_pids;
	uint32_t tids[PROTO_MAX_IDS]; /* threads; empty: every thread */
	size_t n_tids;
	uint32_t seconds;      /* 0: until stop, at most the daemon's max_capture_seconds */
	uint32_t state_mask;   /* thread_state bits; default: all */
	uint64_t min_block_us; /* default 0 */
	uint64_t max_block_us; /* 0: no upper bound */
	/* Stack filters (common/stack_filter.h), which the daemon applies to
	 * the result; the kernel applies pids, tids and states. */
	char comm[PROTO_COMM_MAX + 1];	   /* exact thread name; "": all */
	char grep[PROTO_REGEX_MAX + 1];	   /* POSIX ERE, per frame; "": no filter */
	char exclude[PROTO_REGEX_MAX + 1]; /* POSIX ERE, per frame; "": no filter */
	enum proto_stacks stacks;
	enum proto_format format;
	struct proto_render render;
	enum proto_kind kind;	  /* default PROTO_KIND_OFFCPU */
	enum proto_metric metric; /* default PROTO_METRIC_TIME; BYTES: I/O kinds only */
	uint32_t split_runq;	  /* bool, kind OFFCPU only: run-queue wait as RUNQ rows */
	uint32_t sampled;	  /* bool, kinds OFFCPU and RUNQ: stacks sampled in proportion
				     to time (bpf/sampling.h), not every block's */
	uint32_t sample_period_us; /* with sampled: T; 0: the daemon's sample_period_us */
	uint32_t with_filename;	  /* bool, kind FILEIO only: the file's name as the leaf frame */
	uint32_t oncpu;		  /* bool, kind OFFCPU only: on-CPU samples beside (hot/cold) */
	uint32_t chain_depth;	  /* 1..PROTO_CHAIN_DEPTH_MAX; default 3; given only for CHAIN */
	/* Request-synchronous: only off-CPU time inside these functions counts. */
	char requests[PROTO_MAX_REQUESTS][PROTO_REQUEST_SPEC_MAX + 1]; /* "SYMBOL[@BINARY]" */
	size_t n_requests;
	uint32_t lines; /* bool: frames keep their source lines (common/frame.h) */
	struct proto_cgroup_filter who;
	enum proto_group_by group_by;
	uint32_t follow_children; /* bool, with pids: processes they fork join the filter */
	uint32_t notify_started;  /* bool: a "started" line once the capture counts */
};

/* Times are CLOCK_REALTIME in unix milliseconds; requests take 0..2^53. */
struct proto_windows_request {
	int64_t since_ms; /* windows that start at or after this; default 0: all */
};

/*
 * Exactly one of a range (from_ms > 0) or a capture_id is set: the profile,
 * B. At most one of diff_from_ms > 0 or diff_capture is: the baseline, A,
 * which makes the export differential (format folded or svg only; the
 * normalize ... negate bools need a baseline).
 */
struct proto_export_request {
	int64_t from_ms;	      /* windows with from_ms <= start < to_ms */
	int64_t to_ms;		      /* 0: now */
	uint64_t capture_id;	      /* nonzero: that capture's window; from_ms, to_ms 0 */
	uint32_t pids[PROTO_MAX_IDS]; /* tgids; empty: every process */
	size_t n_pids;
	char comm[PROTO_COMM_MAX + 1];	   /* exact thread name; "": all */
	uint32_t state_mask;		   /* thread_state bits; default: all */
	char grep[PROTO_REGEX_MAX + 1];	   /* POSIX ERE, per frame; "": no filter */
	char exclude[PROTO_REGEX_MAX + 1]; /* POSIX ERE, per frame; "": no filter */
	enum proto_format format;
	struct proto_render render;
	int64_t diff_from_ms, diff_to_ms; /* the baseline's range; diff_to_ms 0: now */
	uint64_t diff_capture;		  /* nonzero: the baseline is that capture's window */
	uint32_t normalize;		  /* bool: scale A to B's total */
	uint32_t strip_hex;		  /* bool: addresses -> 0x... */
	uint32_t diff_widths_from_old;	  /* bool: widths from A (the reverse view) */
	uint32_t negate;		  /* bool: swap red and blue */
	enum proto_kind kind;		  /* default PROTO_KIND_OFFCPU; A and B alike */
	uint32_t oncpu;			  /* bool, kind OFFCPU only: ONCPU rows too (hot/cold) */
	uint32_t lines;			  /* bool: frames keep their source lines */
	enum proto_metric metric;	  /* default PROTO_METRIC_TIME; BYTES: I/O kinds only */
	struct proto_cgroup_filter who;	  /* A and B alike */
	enum proto_group_by group_by;
	/* Not a field of its own: whether the request named kind. An export
	 * of a capture without one takes the capture's kind. */
	uint32_t kind_given;
};

/* Exactly one of a range (from_ms > 0) or a capture_id is set, as for export. */
struct proto_hist_request {
	int64_t from_ms, to_ms;	      /* windows with from_ms <= start < to_ms; to_ms 0: now */
	uint64_t capture_id;	      /* nonzero: that capture's window; from_ms, to_ms 0 */
	uint32_t pids[PROTO_MAX_IDS]; /* tgids; empty: every process */
	size_t n_pids;
	/* Histograms are kept by process: a process is in if its samples in
	 * the windows are (a process that moved has both cgroups'). */
	struct proto_cgroup_filter who;
	enum proto_kind kind; /* PROTO_KIND_OFFCPU (default) or PROTO_KIND_RUNQ only */
};

/* What a heatmap's rows are: processes, threads or thread states. */
enum proto_heatmap_rows {
	PROTO_HEATMAP_ROWS_PROCESS,
	PROTO_HEATMAP_ROWS_THREAD,
	PROTO_HEATMAP_ROWS_STATE,
};

#define PROTO_HEATMAP_MAX_ROWS	   1000
#define PROTO_HEATMAP_ROWS_DEFAULT 50

/* Per-window totals of a range's continuous windows (from_ms > 0), by row. */
struct proto_heatmap_request {
	int64_t from_ms, to_ms;	      /* windows with from_ms <= start < to_ms; to_ms 0: now */
	uint32_t pids[PROTO_MAX_IDS]; /* tgids; empty: every process */
	size_t n_pids;
	char comm[PROTO_COMM_MAX + 1]; /* exact thread name; "": all */
	uint32_t state_mask;	       /* thread_state bits; default: all */
	enum proto_kind kind;	       /* default PROTO_KIND_OFFCPU */
	uint32_t oncpu;		       /* bool, kind OFFCPU only: ONCPU rows too (hot/cold) */
	enum proto_heatmap_rows rows;  /* default PROTO_HEATMAP_ROWS_PROCESS */
	uint32_t max_rows;	       /* the largest rows; the rest summed as "other" */
};

/* Intel PT function latency: calls of func in process pid for seconds. */
struct proto_latency_request {
	uint32_t pid;
	char func[PROTO_REQUEST_SPEC_MAX + 1]; /* "SYMBOL[@BINARY]" */
	uint32_t seconds;
	uint32_t snapshot; /* 1: flight recorder, the last trace at the end of seconds */
};

#define PROTO_BLOCKED_LIMIT_DEFAULT  50
#define PROTO_BLOCKED_LIMIT_MAX	     100000
/* S and D, (1 << 1) | (1 << 2) in common/thread_state.h's bits: asleep, not
 * preempted. */
#define PROTO_BLOCKED_STATES_DEFAULT 0x6u
/* The request carries min_ms; the most whose nanoseconds fit min_ns. */
#define PROTO_BLOCKED_MIN_MS_MAX     18446744073709 /* UINT64_MAX / 1000000 */

/*
 * The threads off the CPU now: blocked (by default states S and D) at least
 * min_ns, longest first. Reads the daemon's state: stops and signals
 * nothing.
 */
struct proto_blocked_request {
	uint32_t pids[PROTO_MAX_IDS]; /* tgids; empty: every process */
	size_t n_pids;
	uint32_t tids[PROTO_MAX_IDS]; /* thread ids; empty: every thread */
	size_t n_tids;
	uint32_t state_mask; /* thread_state bits; default S and D */
	uint64_t min_ns;     /* blocked at least this long; default 0 */
	uint32_t limit; /* the longest this many; 0: all; default PROTO_BLOCKED_LIMIT_DEFAULT */
};

#define PROTO_PUSH_TARGET_MAX 31 /* bytes of a push target's name: [a-z0-9_-] */

/*
 * Sends the continuous windows that start in [from_ms, to_ms) again to one
 * push target (daemon/push/), or to every one: a backfill by hand, which
 * leaves the targets' cursors where they are.
 */
struct proto_push_request {
	int64_t from_ms, to_ms;			/* from_ms > 0; to_ms 0: now */
	char target[PROTO_PUSH_TARGET_MAX + 1]; /* push.NAME; "": every target */
};

struct proto_request {
	enum proto_cmd cmd;
	struct proto_capture_request capture; /* PROTO_CMD_CAPTURE */
	struct proto_windows_request windows; /* PROTO_CMD_WINDOWS */
	struct proto_export_request export;   /* PROTO_CMD_EXPORT */
	struct proto_hist_request hist;	      /* PROTO_CMD_HIST */
	struct proto_latency_request latency; /* PROTO_CMD_LATENCY */
	struct proto_heatmap_request heatmap; /* PROTO_CMD_HEATMAP */
	struct proto_blocked_request blocked; /* PROTO_CMD_BLOCKED */
	struct proto_push_request push;	      /* PROTO_CMD_PUSH */
};

/* Error codes carried in error replies ("code" field). */
#define PROTO_ERR_BAD_REQUEST "bad_request"
#define PROTO_ERR_TOO_LARGE   "too_large"
#define PROTO_ERR_NO_SUCH_PID "no_such_pid"
#define PROTO_ERR_BUSY	      "busy"
#define PROTO_ERR_PERMISSION  "permission_denied"
#define PROTO_ERR_INTERNAL    "internal"
#define PROTO_ERR_STORE	      "store_error"   /* the profile database failed, e.g. disk full */
#define PROTO_ERR_NO_DATA     "no_data"	      /* an svg or speedscope of nothing was asked for */
#define PROTO_ERR_UNSUPPORTED "unsupported"   /* this kernel or daemon setup cannot do it */
#define PROTO_ERR_ATTACH      "attach_failed" /* the kernel refused a probe; message says why */
#define PROTO_ERR_TIMEOUT     "timeout"	      /* the client took too long (client_timeout) */
#define PROTO_ERR_NO_SUCH_CGROUP "no_such_cgroup" /* no cgroup, unit or container of that name */
#define PROTO_ERR_NO_SUCH_TARGET "no_such_target" /* no such push target, or none at all */

/* A named counter, e.g. a drop reason. */
struct proto_counter {
	const char *name;
	uint64_t value;
};

struct proto_program {
	const char *name;
	bool attached;
	uint64_t run_cnt;     /* runs since load (kernel BPF stats; 0 where they are off) */
	uint64_t run_time_ns; /* their summed run time */
	double events_per_s;  /* runs per second over the last drain interval */
	bool loaded;	      /* false: its group loads on first use (true from older daemons) */
};

/* A group of BPF programs that loads when a capture first needs it. */
#define PROTO_MAX_GROUPS 8
struct proto_program_group {
	const char *name;   /* "oncpu", "requests", "bio", "fileio" */
	const char *state;  /* "loaded", "on_demand" or "unavailable" */
	const char *reason; /* "unavailable": why; else "" */
	uint64_t load_ms;   /* "loaded": how long loading and attaching took */
};

/* How full a kernel map was when last drained. */
struct proto_map_fill {
	const char *name;
	uint64_t entries;
	uint64_t max_entries;
	double fill_pct;
};

/* The window store, as of the last window write. */
struct proto_store_status {
	const char *path;
	uint64_t bytes;				  /* the database file plus its WAL */
	uint64_t windows;			  /* stored, captures' included */
	uint64_t windows_written, windows_failed; /* since start */
	bool disk_full;				  /* the last write failed for lack of space */
	const char *last_error;			  /* of the last write; "" if it worked */
};

/* How user stacks are walked, and the unwind tables loaded for it. */
struct proto_unwind_status {
	const char *mode;	    /* "dwarf" (tables, frame pointers elsewhere) or "fp" */
	uint64_t tables, processes; /* loaded files' tables; processes using them */
	uint64_t rows_used, rows_max, table_bytes;
	uint64_t builds; /* tables built since start */
	uint64_t build_ns_total, build_ns_max;
	const char *build_max_path; /* the longest build's file */
	uint64_t evictions;	    /* tables dropped to make room */
	uint64_t no_room;	    /* files left to frame pointers: rows full */
	uint64_t given_up;	    /* of those, files not built again for a while */
	uint64_t failed;	    /* files without usable CFI */
	uint64_t requests;	    /* process (re)loads asked for by the kernel side */
	/* User frames written [unknown: WHY] since start, by WHY; processes
	 * kept for naming after they exit, and the files held for them. */
	uint64_t unknown_exited, unknown_unmapped, unknown_anonymous;
	uint64_t kept_processes, kept_files;
	/* New processes' mappings built by the kernel side from their VMAs
	 * until user space reads them (a 6.7+ kernel with BPF task work). */
	bool from_vmas;
	bool loader_hook; /* ... and built when ld.so has mapped the libraries */
	/* Files user frames are recorded by (file and ELF address, the same in
	 * every process: bpf/offcpu.h OFFCPU_FRAME_FILE), retired ones kept for a
	 * while included; frames whose file id was forgotten ("[unknown: file
	 * forgotten]"). Absent (0) from older daemons. */
	uint64_t file_ids, unknown_forgotten;
	/* Mappings of processes read whose file was opened to find its table,
	 * and those recognized from their maps line alone. Absent (0) from
	 * older daemons. */
	uint64_t files_opened, files_known;
	/* Processes whose mappings the kernel side had found whole in their
	 * VMAs, taken without reading their maps. Absent (0) from older daemons. */
	uint64_t adopted;
	/* Reads of new processes (and dlopens) the loader hook asked for: how
	 * many, their wait from the ask to the read's start, and the reads'
	 * own time. Absent (0) from older daemons. */
	uint64_t loader_reads;
	uint64_t loader_wait_ns_total, loader_wait_ns_max;
	uint64_t loader_read_ns_total, loader_read_ns_max;
	int64_t unwinder_nice; /* the niceness of the thread that reads them */
	/* Large tables built by a thread of their own, off those reads; the
	 * longest wait there behind others. Absent (0) from older daemons. */
	uint64_t background_builds, background_wait_ns_max;
	/* CPython's frames (python_frames): on; CPython processes walked;
	 * CPython processes the walk does not know, seen since start, and the
	 * last one's version and why ("3.9: unknown version"). Absent (false,
	 * 0, NULL) from older daemons. */
	bool python_frames;
	uint64_t python_processes, python_unsupported;
	const char *python_unsupported_what;
};

/* One kind of recording as status reports it (daemon/profile/kind_status.h). */
struct proto_kind_status {
	const char *name;   /* "offcpu", ..., "fileio", "hotcold", "request", "latency" */
	const char *state;  /* "ready", "in use" or "unavailable" */
	const char *detail; /* what traces it, what uses it, or why it is unavailable */
};

/* Sampled stacks of the continuous profile (bpf/sampling.h). */
struct proto_sampling_status {
	const char *stacks;	  /* "sampled" or "exact"; NULL/"": not reported */
	uint64_t period_us;	  /* T */
	const char *walk;	  /* where user stacks of samples are walked: "deferred" or
				     "switch-out" */
	const char *walk_reason;  /* why not "deferred"; "" if it is */
	const char *walk_return;  /* how a deferred walk meets the thread's return to user
				     mode: "rseq_update" (else task work) or "task work" */
	const char *walk_return_reason; /* sampled_walk = auto: why this one; why not
					   "rseq_update" where it was asked for; else "" */
	double blocks_per_s;	  /* blocks the sampled slots counted (all, exactly) */
	double samples_per_s;	  /* of them, blocks whose stacks were taken */
	double user_walks_per_s;  /* user and kernel stack walks, every kind and path */
	double kernel_walks_per_s;
	double task_works_per_s;  /* BPF task works scheduled (each a self-IPI) */
	double task_work_us;	  /* the mean time a switch spent scheduling one, us */
	uint64_t samples_lost;	  /* since start: deferred walks never done (time kept) */
	/* The last stored window of the continuous profile: */
	uint64_t window_blocks, window_samples;
	double window_error_pct; /* relative standard error of a stack holding 1 % of
				    the window's time, % (0: nothing estimated) */
	double window_unsampled_pct; /* of the window's time, % no sample stood for */
};

/* Intel PT recording (latency --pid) on this host. */
struct proto_pt_status {
	const char *event;	    /* what a session records: "intel_pt" or "sideband" */
	bool available;		    /* it can record here */
	const char *reason;	    /* !available: why not */
	uint32_t address_ranges;    /* address filters the PMU offers (0: none) */
	uint32_t recording_pid;	    /* the process being recorded; 0: none */
};

/* The cgroup v2 hierarchy that samples are named by (cgroup_paths.h). */
struct proto_cgroup_status {
	const char *hierarchy; /* "v2", "hybrid" or "none" */
	const char *mount;     /* its mount point; "" for none */
	const char *reason;    /* "none": why, and that cgroup filters are refused; else "" */
	/* Where new cgroups' paths come from: the kernel's cgroup_mkdir
	 * tracepoints (events true), else /proc and walks; events_reason why not. */
	bool events;
	const char *events_reason;
	uint64_t known, removed; /* cgroups named, of which gone (remembered) */
	uint64_t from_proc, scans, failures; /* see struct cgroup_paths_stats */
};

/* A push target (daemon/push/pusher.h), as of the status request. */
struct proto_push_status {
	const char *name;	 /* the configuration's push.NAME */
	const char *api;	 /* "pyroscope", "pyroscope-ingest" or "otlp" */
	const char *url;	 /* the server, without credentials */
	const char *state;	 /* "starting", "idle" (nothing to send), "sending", "retrying"
				    (waiting after an error), "failed" (cannot run: last_error
				    says why) */
	int64_t last_success_ms; /* unix ms; 0: never */
	uint64_t lag_windows;	 /* windows stored and not yet acknowledged */
	uint64_t lag_ms;	 /* the newest window's end minus the last acknowledged one's */
	uint64_t sent, set_aside, lost; /* windows, since the target was first configured
					   (persisted) */
	uint64_t retries;		/* failed tries since the daemon started */
	uint64_t bytes_sent;		/* request bytes since the daemon started */
	int64_t next_try_ms;		/* "retrying": when the next try is due; else 0 */
	uint64_t backfill_windows;	/* windows asked for by "push" still to send */
	const char *last_error;		/* "" if none: the last failure (HTTP status and the
					   server's message, or the connection error) */
};

struct proto_status {
	const char *version;
	uint64_t uptime_s;
	uint32_t pid;
	const char *tracepoint; /* "tp_btf" or "raw_tp" */
	/* Where a block's run-queue part comes from: "sched_info" (the wait
	 * the scheduler itself counts, read at switch-in) or "sched_waking"
	 * (from the wakeup on); "" from older daemons. */
	const char *runq_clock;
	/* The kernel's BPF run-time stats are on (config bpf_stats): programs'
	 * run_cnt and run_time_ns count. */
	bool bpf_stats;
	/* Exact kernel stacks come from the verified cache where a thread
	 * blocks again where it did (bpf/stack_cache.bpf.c); if not, why ("" from
	 * older daemons, which have none). */
	bool kstack_cache;
	const char *kstack_cache_reason;
	bool in_progress; /* blocks still open counted where windows and captures end */
	const char *in_progress_reason;
	bool sched_frames; /* __sched frames put back into stacks read off the CPU */
	const char *sched_frames_reason;
	/* What each I/O kind is traced with; "" if it is unavailable here. */
	const char *bio_tracepoints;
	const char *fileio_tracepoints;
	const struct proto_program *programs;
	size_t n_programs;
	struct proto_program_group groups[PROTO_MAX_GROUPS]; /* none from older daemons */
	size_t n_groups;
	uint32_t slots_active;
	uint32_t slots_max;
	uint32_t captures_running;
	double switches_per_s; /* sched_switch events/s over the last drain interval */
	double recorded_per_s; /* blocks aggregated/s over the last drain interval */
	const struct proto_counter *counters; /* totals since start */
	size_t n_counters;
	const struct proto_request_stats *requests; /* continuous_requests since start */
	size_t n_requests;
	const struct proto_map_fill *maps;
	size_t n_maps;
	struct proto_store_status store;
	double cpu_pct;	    /* the daemon's CPU time over the last drain interval, % of one CPU */
	uint64_t rss_bytes; /* the daemon's resident memory */
	/* Its heap (malloc's: in use, and free but held), and what its caches
	 * hold of it: the store writer's ids, the symbolizer's tables and
	 * names. All 0 from older daemons. */
	uint64_t heap_in_use_bytes, heap_free_bytes;
	uint64_t store_cache_bytes, symbol_cache_bytes;
	struct proto_unwind_status unwind; /* mode NULL/"": not reported (older daemons) */
	struct proto_pt_status pt;	   /* event NULL/"": not reported (older daemons) */
	struct proto_sampling_status sampling; /* stacks NULL/"": not reported */
	const struct proto_kind_status *kinds; /* none from older daemons */
	size_t n_kinds;
	struct proto_cgroup_status cgroups; /* hierarchy NULL/"": not reported */
	/* The push targets, in the configuration's order; push_configured
	 * false: none is configured, pushing is off. A parsed reply from a
	 * daemon without a pusher has push NULL (not reported). */
	const struct proto_push_status *push;
	size_t n_push;
	bool push_configured;
};

/* One aggregated row; ustack and kstack are ordered root -> leaf. */
/* The leaf frame of a capture's block still open at its end: the part of
 * it inside the capture. A sample that ends with it has "in_progress": true. */
#define PROTO_IN_PROGRESS_FRAME "[in progress]"

struct proto_sample {
	const char *comm;
	uint32_t tgid;
	uint32_t pid;
	const char *state; /* thread_state_name() */
	uint64_t value_ns;
	uint64_t count;
	const char *const *ustack;
	size_t n_ustack;
	const char *const *kstack;
	size_t n_kstack;
	const char *kind;	  /* proto_kind_name(); NULL: "offcpu" */
	const char *const *chain; /* wakeup, offwake, chain: the waker part's frames in
				     folded order, "-" and "--" separators included */
	size_t n_chain;
	const char *cgroup;    /* the thread's cgroup v2 path; NULL or "": not known */
	const char *unit;      /* the systemd unit its path names; NULL: none */
	const char *container; /* the container id its path names; NULL: none */
	const char *runtime;   /* who named the container ("docker", ...); NULL: none */
	const char *pod;       /* the Kubernetes pod UID; NULL: none */
	uint32_t ns_pid;       /* the process's pid in its own pid namespace; 0: tgid */
	void *identity;	       /* the producer's copy of the strings above; not sent */
};

/* A function a request symbol was found as. */
struct proto_request_function {
	const char *name;   /* as in the symbol table */
	const char *binary; /* the file it is in */
};

/* One request symbol's latency: the requests that returned while counted. */
struct proto_request_stats {
	const char *symbol; /* as requested: "SYMBOL[@BINARY]" */
	const struct proto_request_function *functions;
	size_t n_functions;
	uint64_t count;
	uint64_t calls;				  /* calls entered while counted (older daemons: 0) */
	const char *warning;			  /* why the count may be wrong; NULL: none */
	uint64_t wall_ns;			  /* sum of entry-to-return times */
	uint64_t offcpu_ns;			  /* the off-CPU part of it */
	uint64_t wall_hist[PROTO_HIST_BUCKETS];	  /* log2(us) buckets, as in hist */
	uint64_t offcpu_hist[PROTO_HIST_BUCKETS]; /* of each request's off-CPU part */
};

/* Off-CPU time by how its user stack was walked (rows without one: none). */
struct proto_user_stacks {
	uint64_t complete_ns;	   /* unwind tables, up to the thread's first frame */
	uint64_t truncated_ns;	   /* unwind tables, stopped early (marked "[truncated]") */
	uint64_t frame_pointer_ns; /* frame pointers: where it ended is not known */
};

/* A sampled capture's stacks (bpf/sampling.h): how many blocks got them. */
struct proto_capture_sampling {
	uint64_t period_us; /* T; 0: every block's stacks (not sent) */
	uint64_t blocks, samples;
	double error_pct; /* relative standard error of a stack holding 1 % of the time */
	double unsampled_pct; /* of the time, % no sample stood for ([unsampled] rows) */
};

struct proto_capture_result {
	uint64_t id;
	uint64_t duration_ns;
	uint64_t total_ns; /* sum of all samples */
	uint64_t n_samples;
	bool target_exited;		   /* a requested pid/tid exited during the capture */
	const struct proto_counter *drops; /* drop counters' growth during the capture */
	size_t n_drops;
	const char *folded;			    /* set for PROTO_FORMAT_FOLDED, else NULL */
	const struct proto_sample *samples;	    /* set for PROTO_FORMAT_JSON */
	const char *output;			    /* set for PROTO_FORMAT_SVG and _SPEEDSCOPE */
	const struct proto_request_stats *requests; /* a request-synchronous capture's */
	size_t n_requests;
	struct proto_user_stacks user_stacks; /* all zero from older daemons */
	const char *loaded; /* program groups this capture loaded ("fileio"); NULL or "": none */
	uint64_t load_ms;   /* the time it waited for them */
	struct proto_capture_sampling sampling; /* period_us 0: exact stacks */
	/* Why the result is empty, and what to do about frames it could not
	 * name; one sentence each, for the user. */
	const char *const *notes;
	size_t n_notes;
};

/* The line a capture with notify_started sends once it counts. */
struct proto_capture_started {
	uint64_t id;
	uint32_t seconds; /* how long it runs at most (its seconds, or the daemon's limit) */
};

/* One stored window, as listed by "windows". */
struct proto_window_info {
	uint64_t id;
	int64_t start_ms, end_ms; /* unix milliseconds */
	uint64_t capture_id;	  /* 0: the continuous profile */
	uint64_t stacks;	  /* distinct stacks */
	uint64_t samples;	  /* rows */
	uint64_t bytes;		  /* estimated size in the database */
	const char *kind;	  /* a capture's kind; NULL: continuous, or stored before
				     captures' kinds were */
	const char *targets;	  /* a capture's targets ("pid 12, comm x"); "": every
				     thread; NULL as kind */
};

struct proto_export_result {
	int64_t from_ms, to_ms; /* the range queried, to_ms resolved */
	uint64_t capture_id;
	uint64_t windows; /* windows that matched */
	uint64_t total_ns;
	uint64_t n_samples;
	bool differential;		    /* a baseline was used */
	uint64_t diff_windows;		    /* windows in the baseline */
	const char *folded;		    /* set for PROTO_FORMAT_FOLDED, else NULL */
	const struct proto_sample *samples; /* set for PROTO_FORMAT_JSON */
	const char *output;		    /* set for PROTO_FORMAT_SVG and _SPEEDSCOPE */
	const char *kind;		    /* proto_kind_name() of the rows exported; NULL:
					       not reported (older daemons) */
	const char *const *notes;	    /* as a capture's */
	size_t n_notes;
};

/* One process's histogram: counts[b] blocks lasted [2^b, 2^(b+1))
 * microseconds (b = 0: [0, 2)); the last bucket also holds longer ones. */
struct proto_hist_process {
	uint32_t tgid;
	const char *comm;
	uint64_t counts[PROTO_HIST_BUCKETS];
};

struct proto_hist_result {
	const char *kind;	/* proto_kind_name(): "offcpu" or "runq"; NULL: "offcpu" */
	int64_t from_ms, to_ms; /* as in struct proto_export_result */
	uint64_t capture_id;
	uint64_t windows; /* windows that matched */
	const struct proto_hist_process *processes;
	size_t n_processes;
};

/* An Intel PT latency analysis (offcpuctl latency --json; see
 * pt/pt_latency.h for the meaning of each figure). */
#define PROTO_LATENCY_BUCKETS 64 /* log2 of ns: bucket i is [2^i, 2^(i+1)), 0 holds 0 too */

struct proto_latency_child {
	const char *name;
	uint64_t count, total_ns, off_cpu_ns;
};

struct proto_latency_call {
	uint32_t tid;
	uint64_t start_ns, latency_ns, off_cpu_ns;
};

struct proto_latency_result {
	const char *func;
	uint64_t calls, total_ns, min_ns, max_ns, off_cpu_ns;
	uint64_t out_of_range, incomplete, unmatched_returns, overflows, decode_errors;
	const uint64_t *hist; /* PROTO_LATENCY_BUCKETS counts */
	const struct proto_latency_child *children;
	size_t n_children;
	const struct proto_latency_call *timeline;
	size_t n_timeline;
};

/* What a PT session recorded (the daemon's reply to latency): the trace
 * file offcpuctl then analyses as with --from-trace. */
struct proto_pt_trace_result {
	const char *path;
	const char *event; /* "intel_pt" or "sideband" */
	bool snapshot;
	bool filtered;	     /* the address filter limited tracing to func */
	uint64_t bytes;	     /* trace */
	uint64_t threads;    /* traced */
	uint64_t threads_lost;
	uint64_t switches;   /* context switch records */
	uint64_t truncated;  /* streams with trace lost (full buffer, byte limit) */
	uint64_t lost;	     /* sideband records the kernel dropped */
};

/*
 * Parses one request line (without or with its '\n'). On success fills *ret
 * (defaults applied) and returns 0. On failure returns -EINVAL and writes a
 * human-readable reason into err (always NUL-terminated); *ret is then
 * unspecified.
 */
int proto_request_parse(const char *buf, size_t len, struct proto_request *ret, char *err,
			size_t err_size);

/* Formats a request as one '\n'-terminated line; malloc'd, NULL on ENOMEM. */
char *proto_request_format(const struct proto_request *req);

/* Reply lines, '\n'-terminated and malloc'd; NULL only on ENOMEM. */
char *proto_reply_error(const char *code, const char *message);
char *proto_reply_status(const struct proto_status *status);
char *proto_reply_capture(const struct proto_capture_result *result, size_t n_samples);
char *proto_reply_capture_started(const struct proto_capture_started *started);
/* One thread off the CPU now (PROTO_CMD_BLOCKED). */
struct proto_blocked_thread {
	const char *comm;
	uint32_t tgid;
	uint32_t pid;
	const char *state;   /* thread_state_name() */
	uint64_t blocked_ns; /* since it left the CPU; where since_ms is 0, at least this */
	int64_t since_ms;    /* when it left the CPU (CLOCK_REALTIME); 0: before offcpud started */
	uint64_t runq_ns;    /* of blocked_ns, the time since it was woken; 0: not woken yet */
	const char *cgroup;  /* its cgroup v2 path; NULL or "": not known */
	const char *waker_comm; /* who woke it, where known; NULL: not known */
	uint32_t waker_tgid, waker_pid;
	const char *const *ustack; /* root first, as samples' */
	size_t n_ustack;
	const char *const *kstack;
	size_t n_kstack;
};

struct proto_blocked_result {
	int64_t now_ms; /* when the threads were read (CLOCK_REALTIME) */
	const struct proto_blocked_thread *threads; /* longest first */
	size_t n_threads;
	size_t n_more; /* threads that matched beyond the request's limit */
};

char *proto_reply_blocked(const struct proto_blocked_result *r);
char *proto_reply_windows(const struct proto_window_info *w, size_t n); /* w: oldest first */
char *proto_reply_export(const struct proto_export_result *r, size_t n_samples);
char *proto_reply_hist(const struct proto_hist_result *r);
/* {"v":1,"ok":true,"cmd":"export","notes":[...]}: an export's notes alone,
 * for offcpuctl serve's web UI; '\n'-terminated, malloc'd, NULL on ENOMEM. */
char *proto_notes_json(const char *const *notes, size_t n);
char *proto_reply_latency(const struct proto_latency_result *r);
char *proto_reply_pt_trace(const struct proto_pt_trace_result *r);

/* What a push request queued (PROTO_CMD_PUSH). */
struct proto_push_result {
	int64_t from_ms, to_ms;	    /* the range, to_ms resolved */
	const char *const *targets; /* the targets that got it */
	size_t n_targets;
};

char *proto_reply_push(const struct proto_push_result *r);

/* The enum value that a request spells name ("svg", "hot", ...), or -EINVAL. */
int proto_format_from_name(const char *name);
int proto_palette_from_name(const char *name);

int proto_metric_from_name(const char *name);
int proto_group_by_from_name(const char *name);

/*
 * Reads a render minwidth: a non-negative decimal ("0.1", pixels), or one
 * followed by '%' ("0.5%", of the total; at most 100), at most
 * PROTO_MINWIDTH_MAX bytes. Returns 0 and sets *ret_value and *ret_percent,
 * or -EINVAL with both untouched (also for "", a request's "use the default").
 * Locale-independent.
 */
int proto_minwidth_parse(const char *s, double *ret_value, bool *ret_percent);

/* A parsed reply, for offcpuctl. Strings live as long as the reply. */
struct proto_reply {
	bool ok;
	enum proto_cmd cmd;
	const char *error_code;			 /* !ok */
	const char *error_message;		 /* !ok */
	struct proto_status status;		 /* cmd == STATUS */
	struct proto_capture_result capture;	 /* cmd == CAPTURE; samples and requests'
						    functions not parsed */
	bool has_started;			 /* cmd == CAPTURE: the "started" line, */
	struct proto_capture_started started;	 /* not the result */
	const struct proto_window_info *windows; /* cmd == WINDOWS */
	size_t n_windows;
	struct proto_export_result export;   /* cmd == EXPORT; samples not parsed */
	struct proto_hist_result hist;	     /* cmd == HIST; processes owned by the reply */
	struct proto_latency_result latency; /* cmd == LATENCY; figures only (proto_reply_parse.c) */
	bool has_trace;			     /* cmd == LATENCY from a PT session: */
	struct proto_pt_trace_result trace;  /* what it recorded (latency then empty) */
	struct proto_blocked_result blocked; /* cmd == BLOCKED; threads and their
						stacks owned by the reply */
	struct proto_push_result push;	     /* cmd == PUSH; targets owned by the reply */
};

/* Returns 0 and a reply to free with proto_reply_free(), or -EINVAL if the
 * line is not a well-formed version 1 reply (ret untouched). */
int proto_reply_parse(const char *buf, size_t len, struct proto_reply **ret);
void proto_reply_free(struct proto_reply *reply);

#endif
