/*
 * proto_samples: the "samples" rows of a capture or export reply, read for
 * the formats offcpuctl encodes itself (--format pprof). proto_reply_parse()
 * leaves the rows out (offcpuctl's --json mode prints the raw line and
 * needs none of them); this reads them from the same line. Part of proto/
 * because the JSON library stays there. Does not log.
 */
#ifndef PROTO_SAMPLES_H
#define PROTO_SAMPLES_H

#include <stddef.h>

#include "proto.h"

struct proto_samples {
	const struct proto_sample *rows; /* strings live as long as this */
	size_t n;
};

/*
 * Reads the rows of a success reply line of cmd "capture" or "export" made
 * with "format":"json" (a reply without "samples" has none). Rows are
 * checked as the protocol describes them: a row that lacks a field or has
 * one of the wrong type makes the whole reply unreadable. Returns 0 and
 * *ret to free with proto_samples_free(), -EINVAL (ret untouched), or
 * -ENOMEM.
 */
int proto_samples_parse(const char *buf, size_t len, struct proto_samples **ret);
void proto_samples_free(struct proto_samples *s); /* NULL-safe */

#endif
