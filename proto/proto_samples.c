/* proto_samples: see proto_samples.h. */
#include "proto_samples.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "proto_json.h"

struct proto__samples {
	struct proto_samples pub; /* first: the public pointer is this one */
	cJSON *root;
	struct proto_sample *rows;
	const char **frames; /* every row's ustack, kstack and chain, one after another */
};

static int proto__samples_u64(const cJSON *obj, const char *name, uint64_t *ret)
{
	return proto__number_u64(cJSON_GetObjectItemCaseSensitive(obj, name), ret);
}

static int proto__samples_u32(const cJSON *obj, const char *name, uint32_t *ret)
{
	uint64_t v;

	if (proto__samples_u64(obj, name, &v) < 0 || v > UINT32_MAX)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int proto__samples_str(const cJSON *obj, const char *name, const char **ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!cJSON_IsString(item))
		return -EINVAL;
	*ret = item->valuestring;
	return 0;
}

/* A string that may be absent (NULL then). */
static int proto__samples_optional(const cJSON *obj, const char *name, const char **ret)
{
	*ret = NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, name) ? proto__samples_str(obj, name, ret) : 0;
}

/* Fills r->rows from the array a; rows point into r->root. */
static int proto__samples_fill(struct proto__samples *r, const cJSON *a)
{
	size_t n_rows = cJSON_GetArraySize(a), n_frames = 0, i = 0, n;
	const char **next;
	const cJSON *o;

	r->rows = calloc(n_rows + 1, sizeof(*r->rows));
	if (!r->rows)
		return -ENOMEM;
	cJSON_ArrayForEach(o, a)
	{
		struct proto_sample *s = &r->rows[i++];

		if (!cJSON_IsObject(o) || proto__samples_str(o, "comm", &s->comm) < 0 ||
		    proto__samples_u32(o, "tgid", &s->tgid) < 0 ||
		    proto__samples_u32(o, "pid", &s->pid) < 0 ||
		    proto__samples_str(o, "state", &s->state) < 0 ||
		    proto__samples_u64(o, "value_ns", &s->value_ns) < 0 ||
		    proto__samples_u64(o, "count", &s->count) < 0 ||
		    proto__frames_len(o, "ustack", false, &s->n_ustack) < 0 ||
		    proto__frames_len(o, "kstack", false, &s->n_kstack) < 0 ||
		    proto__frames_len(o, "chain", true, &s->n_chain) < 0)
			return -EINVAL;
		/* Daemons from before kinds send no "kind": offcpu rows; the
		 * identities are sent only where known. */
		if ((cJSON_GetObjectItemCaseSensitive(o, "kind") &&
		     proto__samples_str(o, "kind", &s->kind) < 0) ||
		    proto__samples_optional(o, "cgroup", &s->cgroup) < 0 ||
		    proto__samples_optional(o, "unit", &s->unit) < 0 ||
		    proto__samples_optional(o, "container", &s->container) < 0 ||
		    proto__samples_optional(o, "runtime", &s->runtime) < 0 ||
		    proto__samples_optional(o, "pod", &s->pod) < 0 ||
		    (cJSON_GetObjectItemCaseSensitive(o, "ns_pid") &&
		     proto__samples_u32(o, "ns_pid", &s->ns_pid) < 0))
			return -EINVAL;
		n = s->n_ustack + s->n_kstack + s->n_chain;
		if (n > SIZE_MAX / sizeof(*r->frames) - n_frames - 1)
			return -ENOMEM;
		n_frames += n;
	}
	r->frames = calloc(n_frames + 1, sizeof(*r->frames));
	if (!r->frames)
		return -ENOMEM;
	next = r->frames;
	i = 0;
	cJSON_ArrayForEach(o, a)
	{
		struct proto_sample *s = &r->rows[i++];

		s->ustack = proto__frames_copy(o, "ustack", &next);
		s->kstack = proto__frames_copy(o, "kstack", &next);
		s->chain = s->n_chain ? proto__frames_copy(o, "chain", &next) : NULL;
	}
	r->pub.rows = r->rows;
	r->pub.n = n_rows;
	return 0;
}

int proto_samples_parse(const char *buf, size_t len, struct proto_samples **ret)
{
	const cJSON *body, *a;
	struct proto__samples *r;
	int e;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->root = cJSON_ParseWithLength(buf, len);
	if (!r->root) {
		free(r);
		return -EINVAL;
	}
	body = cJSON_GetObjectItemCaseSensitive(r->root, "capture");
	if (!body)
		body = cJSON_GetObjectItemCaseSensitive(r->root, "export");
	if (!cJSON_IsObject(body)) {
		proto_samples_free(&r->pub);
		return -EINVAL;
	}
	a = cJSON_GetObjectItemCaseSensitive(body, "samples");
	if (a && !cJSON_IsArray(a))
		e = -EINVAL;
	else
		e = a ? proto__samples_fill(r, a) : 0;
	if (e < 0) {
		proto_samples_free(&r->pub);
		return e;
	}
	*ret = &r->pub;
	return 0;
}

void proto_samples_free(struct proto_samples *s)
{
	struct proto__samples *r = (struct proto__samples *)s;

	if (!r)
		return;
	cJSON_Delete(r->root);
	free(r->rows);
	free(r->frames);
	free(r);
}
