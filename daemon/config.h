/*
 * config: offcpud's configuration file (etc/offcpud.conf documents every key).
 * Format: "key = value" lines; '#' starts a comment; blank lines ignored.
 * An unknown key or a bad value is an error naming file, line and key.
 * Called by main() once at start-up. Does not log: errors come back as text.
 */
#ifndef CONFIG_H
#define CONFIG_H

#include <linux/types.h> /* before offcpu.h, which the BPF side shares */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "offcpu.h"
#include "push_target.h"

struct config {
	char path[256];	       /* the file config_load() read; "": built-in defaults */
	char socket_path[108]; /* sun_path size */
	mode_t socket_mode;    /* octal in the file, e.g. 0660 */
	char socket_group[64]; /* "" keeps the daemon's group */
	/* Access (daemon/access.h): user and group names or ids, comma-separated. */
	char allowed_users[512];
	char allowed_groups[512];
	char capture_users[512];
	char capture_groups[512];
	uint32_t drain_interval_ms; /* how often the kernel maps are emptied */
	uint32_t max_capture_seconds;
	uint32_t max_request_bytes; /* longest accepted request line */
	uint32_t max_clients;	    /* concurrent connections */
	uint64_t client_timeout_s;  /* key client_timeout: see server_options.timeout_ms */
	uint32_t max_captures;	    /* concurrent ad-hoc captures */
	uint64_t max_reply_bytes;   /* longest reply line (an export, a capture) */
	uint32_t agg_map_entries;   /* per buffer; two buffers exist */
	uint32_t stack_map_entries; /* per buffer; two buffers exist */
	bool trace_self;	    /* include offcpud's own threads */
	bool bpf_stats;		    /* the kernel's BPF run-time stats on, for status */
	unsigned tracepoint;	    /* enum config_tracepoint */
	unsigned unwind;	    /* enum config_unwind: how user stacks are walked */
	uint32_t unwind_max_depth;  /* user frames walked with unwind tables */
	bool python_frames;	    /* CPython's frames read with them (bpf/python.bpf.h) */
	uint32_t unwind_rows;	    /* rows of all loaded unwind tables (16 bytes each) */
	uint32_t unwind_processes;  /* processes with unwind tables at once */
	bool stack_cache;	    /* exact kernel stacks from the verified cache */
	uint32_t stack_cache_audit; /* one hit in this many is walked and compared */

	/* The continuous profile and its store. */
	bool continuous;		  /* run the always-on capture of every process */
	uint32_t continuous_kinds;	  /* bit 1 << enum proto_kind per always-on slot;
					     chain at PROTO_CHAIN_DEPTH_DEFAULT; not 0 */
	bool continuous_split_runq;	  /* the offcpu slot keeps run-queue wait apart */
	uint32_t oncpu_frequency;	  /* on-CPU samples per second and CPU; 0: none */
	uint32_t continuous_states;	  /* thread_state mask (THREAD_STATE_ALL: all) */
	uint64_t continuous_min_block_us; /* its shortest block kept; 0: all */
	char continuous_requests[1024];	  /* "SYMBOL@/PATH ..."; "": not request-synchronous */
	unsigned continuous_stacks;	  /* enum config_stacks */
	uint32_t sample_period_us;	  /* T of sampled stacks (bpf/sampling.h) */
	unsigned sampled_walk;		  /* enum config_sampled_walk */
	uint32_t window_seconds;	  /* length of one stored window */
	char database[256];		  /* the SQLite file of the window ring */
	uint64_t max_db_bytes;		  /* database plus WAL; oldest windows go first */
	uint64_t max_age_s;		  /* key max_age: windows ended longer ago go */
	char debug_root[256];		  /* separate debug files: .build-id/, debuglink dirs */

	/* Intel PT sessions (offcpuctl latency --pid). */
	char pt_dir[256];	  /* recorded traces (history) */
	uint32_t pt_keep;	  /* traces kept there; the oldest go first */
	uint64_t pt_buffer_bytes; /* key pt_buffer: AUX area per thread */
	uint64_t pt_max_bytes;	  /* trace kept per thread in a --seconds session */
	uint32_t pt_max_threads;  /* threads of one traced process */
	unsigned pt_event;	  /* enum config_pt_event */

	/* Fleet stores the always-on windows are pushed to (daemon/push/):
	 * keys "push.NAME.KEY"; none by default. */
	struct config_push_target push[CONFIG_MAX_PUSH_TARGETS];
	uint32_t n_push;
	char push_host[256];		   /* the host label; "": the host name */
	uint64_t push_max_bytes_in_flight; /* requests held at once, all targets */
};

/* Which blocks get their stacks walked. */
enum config_stacks {
	CONFIG_STACKS_SAMPLED, /* in proportion to time (sample_period_us) */
	CONFIG_STACKS_EXACT,   /* every block */
};

/* Where sampled slots walk user stacks. */
enum config_sampled_walk {
	CONFIG_SAMPLED_WALK_AUTO,	/* when the thread is current again, if the kernel can: by
					   task work or at rseq_update, whichever costs less */
	CONFIG_SAMPLED_WALK_SWITCH_OUT, /* at every switch-out, as exact slots */
	CONFIG_SAMPLED_WALK_RSEQ,	/* as auto, the return to user mode seen at rseq_update */
	CONFIG_SAMPLED_WALK_TASK_WORK,	/* as auto, the return to user mode met by task work */
};

/* What a PT session records. */
enum config_pt_event {
	CONFIG_PT_EVENT_INTEL_PT, /* the trace, with its sideband */
	CONFIG_PT_EVENT_SIDEBAND, /* switches and mappings only: checks the
				     setup on a host without Intel PT */
};

/* continuous_requests takes at most OFFCPU_MAX_REQUESTS words (a slot's). */
#define CONFIG_MAX_NAMES    64 /* entries of allowed_users and the like */
#define CONFIG_MAX_CAPTURES (OFFCPU_MAX_SLOTS - 1) /* less the continuous profile's slot */

/* Which sched_switch program to attach. */
enum config_tracepoint {
	CONFIG_TRACEPOINT_AUTO, /* tp_btf, else raw_tp */
	CONFIG_TRACEPOINT_TP_BTF,
	CONFIG_TRACEPOINT_RAW_TP,
};

enum config_unwind {
	CONFIG_UNWIND_DWARF, /* .eh_frame tables, frame pointers where none cover a PC */
	CONFIG_UNWIND_FP,    /* frame pointers only (bpf_get_stack) */
};

/* Fills every field with its documented default. */
void config_init(struct config *c);

/*
 * Applies "key = value" lines from text to c (which holds defaults or earlier
 * values). name is used in messages ("NAME:LINE: ..."). Returns 0, or
 * -EINVAL with a message in err; c may then be partly updated.
 */
int config_parse(struct config *c, const char *name, const char *text, char *err, size_t err_size);

/* Reads path and applies it with config_parse(). Returns -errno (with a
 * message in err) if the file cannot be read, -EINVAL on a bad line. */
int config_load(struct config *c, const char *path, char *err, size_t err_size);

#endif
