/*
 * proto_heatmap: the reply to "heatmap" (PROTOCOL.md): the off-CPU time of
 * each stored window by row, sparse, as compact arrays, since a day of 10 s
 * windows is 8,640 columns. The request is parsed with the others in
 * proto_request.c. Used by the daemon (history.c); offcpuctl serve passes the reply
 * to the browser as it is. Does not log.
 */
#ifndef PROTO_HEATMAP_H
#define PROTO_HEATMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct proto_heatmap_row {
	uint64_t key;	       /* tgid, tid, or the state's index; 0 for "other" */
	const char *label;     /* comm, or the state's letter */
	bool other;	       /* the rows past max_rows, summed */
	uint64_t total_ns;     /* over all windows */
	const uint64_t *cells; /* n_windows values (ns), dense */
};

struct proto_heatmap_result {
	const struct proto_heatmap_request *req; /* kind, oncpu, rows, as asked */
	int64_t from_ms, to_ms;			 /* to_ms resolved */
	size_t n_windows;
	const int64_t *start_ms, *end_ms;
	const struct proto_heatmap_row *rows;
	size_t n_rows;
};

/* The reply line, '\n'-terminated and malloc'd; NULL on ENOMEM. */
char *proto_reply_heatmap(const struct proto_heatmap_result *r);

/* True if line is a heatmap success reply as the daemon writes it (its
 * first members, in its order), so that offcpuctl serve can pass a reply
 * of megabytes on without parsing it; false means "parse it" (an error, or
 * another writer's member order). */
bool proto_heatmap_reply_ok(const char *line, size_t len);

/* The name of a heatmap's rows ("process", "thread", "state"); NULL if
 * out of range. */
const char *proto_heatmap_rows_name(enum proto_heatmap_rows rows);

#endif
