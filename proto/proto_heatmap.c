/* proto_heatmap: see proto_heatmap.h. */
#include "proto_heatmap.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_json.h"

const char *proto_heatmap_rows_name(enum proto_heatmap_rows rows)
{
	static const char *const names[] = {
		[PROTO_HEATMAP_ROWS_PROCESS] = "process",
		[PROTO_HEATMAP_ROWS_THREAD] = "thread",
		[PROTO_HEATMAP_ROWS_STATE] = "state",
	};

	return (unsigned)rows < sizeof(names) / sizeof(names[0]) ? names[rows] : NULL;
}

/* Growing text for the number arrays, which cJSON would make one item per
 * number of (hundreds of thousands of them). */
struct text {
	char *p;
	size_t len, cap;
	bool failed;
};

static void text_printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_printf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	if (t->cap - t->len < 64) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		char *p = realloc(t->p, cap);

		if (!p) {
			t->failed = true;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
	va_start(ap, fmt);
	n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= t->cap - t->len)
		t->failed = true; /* numbers only: never longer than 64 bytes */
	else
		t->len += n;
}

/* Adds name: a raw array built in t (consumed). */
static bool add_raw(cJSON *obj, const char *name, struct text *t)
{
	text_printf(t, "]");
	if (t->failed) {
		free(t->p);
		return false;
	}
	bool ok = cJSON_AddRawToObject(obj, name, t->p) != NULL;

	free(t->p);
	return ok;
}

static bool add_times(cJSON *obj, const char *name, const int64_t *ms, size_t n)
{
	struct text t = { 0 };

	text_printf(&t, "[");
	for (size_t i = 0; i < n; i++)
		text_printf(&t, "%s%" PRId64, i ? "," : "", ms[i]);
	return add_raw(obj, name, &t);
}

/* Integers as raw text: cJSON would print them as doubles, rounded. */
static bool add_u64(cJSON *obj, const char *name, uint64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRIu64, v);
	return cJSON_AddRawToObject(obj, name, text) != NULL;
}

static bool add_i64(cJSON *obj, const char *name, int64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, v);
	return cJSON_AddRawToObject(obj, name, text) != NULL;
}

static bool add_row(cJSON *list, const struct proto_heatmap_row *row, size_t n_windows)
{
	cJSON *o = cJSON_CreateObject(), *label = proto__string(row->label);
	struct text t = { 0 };
	bool first = true;

	if (!o || !label || !cJSON_AddItemToArray(list, o)) {
		cJSON_Delete(o);
		cJSON_Delete(label);
		return false;
	}
	if (!cJSON_AddItemToObject(o, "label", label)) {
		cJSON_Delete(label);
		return false;
	}
	if (!add_u64(o, "key", row->key) || !cJSON_AddBoolToObject(o, "other", row->other) ||
	    !add_u64(o, "total_ns", row->total_ns))
		return false;
	/* Sparse: [column, ns, column, ns, ...] for the nonzero cells. */
	text_printf(&t, "[");
	for (size_t i = 0; i < n_windows; i++) {
		if (!row->cells[i])
			continue;
		text_printf(&t, "%s%zu,%" PRIu64, first ? "" : ",", i, row->cells[i]);
		first = false;
	}
	return add_raw(o, "cells", &t);
}

char *proto_reply_heatmap(const struct proto_heatmap_result *r)
{
	cJSON *root = cJSON_CreateObject(), *body, *list;
	char *line = NULL, *grown;
	size_t len;

	if (!root || !cJSON_AddNumberToObject(root, "v", PROTO_VERSION) ||
	    !cJSON_AddBoolToObject(root, "ok", true) ||
	    !cJSON_AddStringToObject(root, "cmd", "heatmap") ||
	    !(body = cJSON_AddObjectToObject(root, "heatmap")))
		goto out;
	if (!cJSON_AddStringToObject(body, "kind", proto_kind_name(r->req->kind)) ||
	    !cJSON_AddBoolToObject(body, "oncpu", r->req->oncpu) ||
	    !cJSON_AddStringToObject(body, "rows", proto_heatmap_rows_name(r->req->rows)) ||
	    !add_i64(body, "from_ms", r->from_ms) || !add_i64(body, "to_ms", r->to_ms) ||
	    !add_times(body, "start_ms", r->start_ms, r->n_windows) ||
	    !add_times(body, "end_ms", r->end_ms, r->n_windows) ||
	    !(list = cJSON_AddArrayToObject(body, "series")))
		goto out;
	for (size_t i = 0; i < r->n_rows; i++)
		if (!add_row(list, &r->rows[i], r->n_windows))
			goto out;
	line = cJSON_PrintUnformatted(root);
	if (!line)
		goto out;
	len = strlen(line);
	grown = realloc(line, len + 2);
	if (!grown) {
		free(line);
		line = NULL;
		goto out;
	}
	line = grown;
	line[len] = '\n';
	line[len + 1] = '\0';
out:
	cJSON_Delete(root);
	return line;
}

bool proto_heatmap_reply_ok(const char *line, size_t len)
{
	static const char prefix[] = "{\"v\":1,\"ok\":true,\"cmd\":\"heatmap\",\"heatmap\":{";

	return len >= sizeof(prefix) - 1 && !memcmp(line, prefix, sizeof(prefix) - 1) &&
	       line[len - 1] == '}';
}
