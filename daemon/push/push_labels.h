/*
 * push_labels: a push target's static labels, "env=prod, region=eu-west"
 * (push.NAME.labels), split into pairs and checked by one rule, for the
 * configuration (at load, to name the line) and the pusher (at start).
 * Plain C, no protobuf: daemon/config.c links it alone. Does not log.
 */
#ifndef PUSH_LABELS_H
#define PUSH_LABELS_H

#include <stdbool.h>
#include <stddef.h>

struct push_label {
	const char *name;
	const char *value;
};

/* Whether name[0, len) may be a static label's: a Prometheus label name
 * ([a-zA-Z_][a-zA-Z0-9_]*), not reserved ("__" prefix) and none of the
 * labels every pushed series has (service_name, host, kind). */
bool push_label_name_ok(const char *name, size_t len);

/*
 * Splits text (NAME=VALUE pairs separated by commas, blanks around names
 * and values allowed; "" has none) into ret[0, *ret_n), the strings in buf
 * (buf_size > strlen(text)). Each name push_label_name_ok() and given once;
 * each value non-empty, printable, without '='. 0, or -EINVAL (also for
 * more than max pairs, or buf too small).
 */
int push_labels_parse(const char *text, char *buf, size_t buf_size, struct push_label *ret,
		      size_t max, size_t *ret_n);

#endif
