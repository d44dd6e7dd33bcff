/*
 * push_series: what the encoders of a pushed window share (push_request.c,
 * Pyroscope's push; otlp_request.c, OTLP's export): the window and the
 * options they take, the checks of both, and the split of the window's
 * rows into series, one per (service, kind), each in parts of at most
 * max_samples rows with a stable id. Pure apart from allocating. Does not
 * log.
 *
 * push_request_labels_check(), push_request_profile_name() and
 * push_request_id() live here but keep the names they were published under
 * in push_request.h, which includes this header.
 */
#ifndef PUSH_SERIES_H
#define PUSH_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "push_labels.h"
#include "uuid5.h"

/* Pyroscope's default limits (validation.*): labels per series, a label
 * name's and value's bytes, samples per profile. */
#define PUSH_LABELS_MAX		 30
#define PUSH_LABEL_NAME_MAX	 1024
#define PUSH_LABEL_VALUE_MAX	 2048
#define PUSH_PROFILE_SAMPLES_MAX 16000

/* The labels every series has; static labels may have at most the rest. */
#define PUSH_LABELS_OWN 4

/* How a row's service_name is chosen. */
enum push_service_by {
	/* The default: the container ("docker:0123456789ab", as --group-by
	 * container names it), else the systemd unit ("nginx.service"), else
	 * the process name. The container comes first because a container's
	 * cgroup is a unit too (docker-ID.scope, cri-containerd-ID.scope). */
	PUSH_SERVICE_BY_WHO,
	PUSH_SERVICE_BY_PROCESS, /* the process name only */
};

/* The process name of a row is its main thread's name (the row whose pid
 * is its tgid) where the window has one, else the least of its threads'
 * names: the same whatever order the rows come in. */

struct push_window {
	uint64_t id;		  /* the store's window id */
	int64_t start_ms, end_ms; /* unix milliseconds; 0 <= start_ms <= end_ms */
	/* Its rows, as profile_samples() gives them (kind, unit, container and
	 * runtime read; the rest as pprof_write() reads them). */
	const struct proto_sample *rows;
	size_t n_rows;
};

struct push_request_opts {
	const char *host;		 /* valid UTF-8, 1..PUSH_LABEL_VALUE_MAX bytes */
	const struct push_label *labels; /* static labels; push_request_labels_check() */
	size_t n_labels;
	enum push_service_by service_by;
	size_t max_samples; /* rows per profile; 0: PUSH_PROFILE_SAMPLES_MAX */
};

/*
 * Whether labels[0, n) may be a series' static labels: names as Prometheus
 * has them ([a-zA-Z_][a-zA-Z0-9_]*), not starting with "__" (reserved) and
 * none of service_name, host or kind, each once; values non-empty, valid
 * UTF-8; within Pyroscope's lengths. 0, -EINVAL, or -E2BIG (more than
 * PUSH_LABELS_MAX - PUSH_LABELS_OWN). For the configuration to check at load.
 */
int push_request_labels_check(const struct push_label *labels, size_t n);

/* The profile type (__name__) of kind (enum proto_kind); NULL out of range. */
const char *push_request_profile_name(unsigned kind);

/* The id of part `part` of the series (service, kind name) of window
 * (window_id, start_ms) from host, as the request carries it. */
void push_request_id(const char *host, uint64_t window_id, int64_t start_ms, const char *service,
		     const char *kind, size_t part, char ret[UUID5_STR_SIZE]);

/* One series: the rows of one (service, kind), in input order. */
struct push_series {
	const char *service; /* valid UTF-8, at most PUSH_LABEL_VALUE_MAX bytes */
	unsigned kind;	     /* enum proto_kind */
	const size_t *rows;  /* indices into the window's rows */
	size_t n_rows;	     /* >= 1 */
	size_t n_parts;	     /* its profiles: n_rows / max_samples, rounded up */
};

/* A window's rows as series, sorted by (service, kind). */
struct push_split {
	struct push_series *series;
	size_t n_series;
	size_t max_samples; /* rows per part: the option's, 0 made the default */
	size_t n_parts;	    /* of all series */
	size_t max_part;    /* rows in the largest part */
	/* The split's own: what series point into. */
	size_t *rows;
	char **services; /* by row */
	size_t n_rows;
};

/*
 * Checks w and o and splits the rows of w into *ret (n_series 0 for a
 * window without rows). 0; -EINVAL (bad host, service_by, labels, times:
 * pprof's and OTLP's are int64 nanoseconds, or a row of an unknown kind);
 * -E2BIG (more static labels than PUSH_LABELS_MAX leaves); -ENOMEM.
 * Whatever it returns, push_series_split_free() frees *ret.
 */
int push_series_split(const struct push_window *w, const struct push_request_opts *o,
		      struct push_split *ret);
void push_series_split_free(struct push_split *s);

/* The rows of part `part` of s, into *ret_rows and *ret_n. */
void push_series_part(const struct push_split *sp, const struct push_series *s, size_t part,
		      const size_t **ret_rows, size_t *ret_n);

/* An encoder's message msg packed into *ret (malloc'd) and *ret_len,
 * written only on success: 0, -ENOMEM or -EIO. */
struct ProtobufCMessage;
int push_series_pack(const struct ProtobufCMessage *msg, uint8_t **ret, size_t *ret_len);

#endif
