/*
 * proto_request: requests parsed and formatted for the offcpud socket
 * protocol (see proto.h and PROTOCOL.md), as each command's field table
 * (proto_request_table.h) describes them.
 */
#include "proto.h"
#include "stack_filter.h"
#include "thread_state.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "proto_json.h"
#include "utf8.h"
#include "proto_request_table.h"

/* ---- small helpers ----------------------------------------------------- */

/* Integer members of 4 or 8 bytes, in host byte order; memcpy keeps this free
 * of aliasing questions for the enum members. */
static void proto__store(void *dst, size_t size, uint64_t v)
{
	assert(size == sizeof(uint32_t) || size == sizeof(uint64_t));
	if (size == sizeof(uint32_t)) {
		uint32_t v32 = v;

		memcpy(dst, &v32, sizeof(v32));
	} else {
		memcpy(dst, &v, sizeof(v));
	}
}

static uint64_t proto__load(const void *src, size_t size)
{
	assert(size == sizeof(uint32_t) || size == sizeof(uint64_t));
	if (size == sizeof(uint32_t)) {
		uint32_t v32;

		memcpy(&v32, src, sizeof(v32));
		return v32;
	} else {
		uint64_t v;

		memcpy(&v, src, sizeof(v));
		return v;
	}
}

/* What a UINT field's value is multiplied by in its struct. */
static uint64_t proto__unit(const struct proto__field *f)
{
	/* max in the request's unit must fit the struct's once multiplied. */
	assert(!f->unit || f->max <= UINT64_MAX / f->unit);
	return f->unit ? f->unit : 1;
}

/*
 * Reads an integral JSON number in [min, max], or with zero_ok also 0, into
 * *ret. what names the value in messages, e.g. "field 'seconds'".
 */
static int proto__get_uint(const cJSON *item, const char *what, uint64_t min, uint64_t max,
			   bool zero_ok, uint64_t *ret, char *err, size_t err_size)
{
	double d;

	if (!cJSON_IsNumber(item))
		return proto__fail(err, err_size, "%s must be an integer", what);
	d = item->valuedouble;
	/* Converting NaN, infinities or |d| >= 2^63 to an integer is undefined;
	 * those fail the range check instead. */
	if (d > -9.0e18 && d < 9.0e18 && d != (double)(int64_t)d)
		return proto__fail(err, err_size, "%s must be an integer", what);
	if (zero_ok && d == 0) {
		*ret = 0;
		return 0;
	}
	if (!(d >= (double)min && d <= (double)max))
		return proto__fail(err, err_size, "%s must be %sbetween %" PRIu64 " and %" PRIu64,
				   what, zero_ok ? "0 or " : "", min, max);
	*ret = (uint64_t)d;
	return 0;
}


/* ---- requests ---------------------------------------------------------- */

static void proto__defaults(const struct proto__command *c, void *args)
{
	for (size_t i = 0; i < c->n_fields; i++) {
		const struct proto__field *f = &c->fields[i];
		char *dst = (char *)args + f->offset;

		switch (f->kind) {
		case PROTO__KIND_IDS:
		case PROTO__KIND_STRINGS:
			memset(dst, 0, f->size);
			proto__store((char *)args + f->count_offset, sizeof(size_t), 0);
			break;
		case PROTO__KIND_STRING:
			memset(dst, 0, f->size);
			break;
		case PROTO__KIND_UINT:
			proto__store(dst, f->size, f->def * proto__unit(f));
			break;
		default:
			proto__store(dst, f->size, f->def);
		}
	}
}

static int proto__parse_enum(const struct proto__field *f, const cJSON *item, void *dst,
			     const char *what, char *err, size_t err_size)
{
	char list[64] = "";

	for (size_t i = 0; f->names[i]; i++) {
		if (f->allowed && !(f->allowed & (UINT32_C(1) << i)))
			continue;
		if (cJSON_IsString(item) && !strcmp(item->valuestring, f->names[i])) {
			proto__store(dst, f->size, i);
			return 0;
		}
	}
	for (size_t i = 0; f->names[i]; i++) {
		if (f->allowed && !(f->allowed & (UINT32_C(1) << i)))
			continue;
		if (strlen(list) + strlen(f->names[i]) + 3 > sizeof(list))
			break;
		if (*list)
			strcat(list, ", ");
		strcat(list, f->names[i]);
	}
	return proto__fail(err, err_size, "%s must be one of: %s", what, list);
}

/* An array of ids into args (the command's struct), and its count. */
static int proto__parse_ids(const struct proto__field *f, const cJSON *item, void *args,
			    const char *what, char *err, size_t err_size)
{
	size_t cap = f->size / sizeof(uint32_t);
	uint32_t ids[PROTO_MAX_IDS];
	const cJSON *el;
	uint64_t v;
	size_t n;
	int r;

	if (!cJSON_IsArray(item))
		return proto__fail(err, err_size, "%s must be an array of integers", what);
	n = cJSON_GetArraySize(item);
	if (n > cap || n > PROTO_MAX_IDS)
		return proto__fail(err, err_size, "%s has %zu entries; at most %zu allowed", what,
				   n, cap);
	n = 0;
	cJSON_ArrayForEach(el, item)
	{
		char el_what[128];

		snprintf(el_what, sizeof(el_what), "%s[%zu]", what, n);
		r = proto__get_uint(el, el_what, f->min, f->max, false, &v, err, err_size);
		if (r < 0)
			return r;
		ids[n++] = v;
	}
	memcpy((char *)args + f->offset, ids, n * sizeof(ids[0]));
	proto__store((char *)args + f->count_offset, sizeof(size_t), n);
	return 0;
}

/* A list of thread states, as a mask. */
static int proto__parse_states(const struct proto__field *f, const cJSON *item, void *dst,
			       const char *what, char *err, size_t err_size)
{
	const cJSON *el;
	uint32_t mask = 0;

	if (!cJSON_IsArray(item))
		return proto__fail(err, err_size, "%s must be an array of strings", what);
	cJSON_ArrayForEach(el, item)
	{
		int bit;

		if (!cJSON_IsString(el))
			return proto__fail(err, err_size, "%s must be an array of strings", what);
		bit = thread_state_parse(el->valuestring);
		if (bit < 0)
			return proto__fail(err, err_size,
					   "%s: unknown thread state '%s' (expected R, S, D, O "
					   "or running, sleeping, disk, other)",
					   what, el->valuestring);
		mask |= 1u << bit;
	}
	/* An empty list would capture nothing; almost surely a client bug. */
	if (!mask)
		return proto__fail(err, err_size, "%s must not be empty", what);
	proto__store(dst, f->size, mask);
	return 0;
}

/* An array of strings into args (the command's struct), and its count. */
static int proto__parse_strings(const struct proto__field *f, const cJSON *item, void *args,
				const char *what, char *err, size_t err_size)
{
	char *dst = (char *)args + f->offset;
	size_t cap = f->size / (f->max + 1);
	const cJSON *el;
	size_t n;

	if (!cJSON_IsArray(item))
		return proto__fail(err, err_size, "%s must be an array of strings", what);
	n = cJSON_GetArraySize(item);
	if (n > cap)
		return proto__fail(err, err_size, "%s has %zu entries; at most %zu allowed", what,
				   n, cap);
	n = 0;
	cJSON_ArrayForEach(el, item)
	{
		size_t len;

		if (!cJSON_IsString(el) || !*el->valuestring)
			return proto__fail(err, err_size,
					   "%s must be an array of non-empty strings", what);
		len = strlen(el->valuestring);
		if (len > f->max)
			return proto__fail(err, err_size,
					   "%s[%zu] is %zu bytes long; at most %" PRIu64 " allowed",
					   what, n, len, f->max);
		if (!utf8_valid(el->valuestring))
			return proto__fail(err, err_size, "%s[%zu] must be valid UTF-8", what, n);
		memcpy(dst + n++ * (f->max + 1), el->valuestring, len + 1);
	}
	proto__store((char *)args + f->count_offset, sizeof(size_t), n);
	return 0;
}

/* A string, with its field's checks (format, regex). */
static int proto__parse_string(const struct proto__field *f, const cJSON *item, void *dst,
			       const char *what, char *err, size_t err_size)
{
	size_t n;

	assert(f->max < f->size);
	if (!cJSON_IsString(item))
		return proto__fail(err, err_size, "%s must be a string", what);
	/* No NUL can hide in it: proto__parse_json() refuses them. */
	n = strlen(item->valuestring);
	if (n > f->max)
		return proto__fail(err, err_size,
				   "%s is %zu bytes long; at most %" PRIu64 " allowed", what, n,
				   f->max);
	/* Formatting would replace invalid bytes, so such a value could
	 * not mean what it says. */
	if (!utf8_valid(item->valuestring))
		return proto__fail(err, err_size, "%s must be valid UTF-8", what);
	if (n && f->valid && !f->valid(item->valuestring))
		return proto__fail(err, err_size, "%s must be %s, not '%s'", what, f->expect,
				   item->valuestring);
	if (n && f->regex) {
		char why[128];

		if (!stack_filter_regex_valid(item->valuestring, why, sizeof(why)))
			return proto__fail(err, err_size, "%s is not a POSIX extended regex: %s",
					   what, why);
	}
	memcpy(dst, item->valuestring, n + 1);
	return 0;
}

/* args: the command's struct. */
static int proto__parse_field(const struct proto__field *f, const cJSON *item, void *args,
			      char *err, size_t err_size)
{
	char *dst = (char *)args + f->offset;
	char what[96];
	uint64_t v;
	int r;

	snprintf(what, sizeof(what), "field '%s'", f->name);

	switch (f->kind) {
	case PROTO__KIND_UINT:
		r = proto__get_uint(item, what, f->min, f->max, f->zero_ok, &v, err, err_size);
		if (r < 0)
			return r;
		proto__store(dst, f->size, v * proto__unit(f));
		return 0;
	case PROTO__KIND_IDS:
		return proto__parse_ids(f, item, args, what, err, err_size);
	case PROTO__KIND_STATES:
		return proto__parse_states(f, item, dst, what, err, err_size);
	case PROTO__KIND_ENUM:
		return proto__parse_enum(f, item, dst, what, err, err_size);
	case PROTO__KIND_STRINGS:
		return proto__parse_strings(f, item, args, what, err, err_size);
	case PROTO__KIND_STRING:
		return proto__parse_string(f, item, dst, what, err, err_size);
	case PROTO__KIND_BOOL:
		/* 0 and 1 are refused: a client sending them has another type in mind. */
		if (!cJSON_IsBool(item))
			return proto__fail(err, err_size, "%s must be true or false", what);
		proto__store(dst, f->size, cJSON_IsTrue(item));
		return 0;
	}
	return proto__fail(err, err_size, "%s: internal error", what);
}

static int proto__parse_request(const cJSON *root, struct proto_request *req, char *err,
				size_t err_size)
{
	const struct proto__command *c = NULL;
	const cJSON *v, *cmd, *item;
	const char *cmd_name;
	uint64_t seen = 0;
	void *args;
	int r;

	if (!cJSON_IsObject(root))
		return proto__fail(err, err_size, "request must be a JSON object");

	/* The version comes first: another version may use another shape. */
	v = cJSON_GetObjectItemCaseSensitive(root, "v");
	if (!v)
		return proto__fail(err, err_size, "missing field 'v' (protocol version)");
	if (!cJSON_IsNumber(v))
		return proto__fail(err, err_size, "field 'v' must be an integer");
	if (v->valuedouble != PROTO_VERSION)
		return proto__fail(err, err_size,
				   "unsupported protocol version %g; this daemon speaks %d",
				   v->valuedouble, PROTO_VERSION);

	cmd = cJSON_GetObjectItemCaseSensitive(root, "cmd");
	if (!cmd)
		return proto__fail(err, err_size, "missing field 'cmd'");
	if (!cJSON_IsString(cmd))
		return proto__fail(err, err_size, "field 'cmd' must be a string");
	cmd_name = cmd->valuestring;
	for (size_t i = 0; i < PROTO__N_COMMANDS; i++) {
		if (!strcmp(cmd_name, proto__commands[i].name)) {
			c = &proto__commands[i];
			break;
		}
	}
	if (!c)
		return proto__fail(err, err_size, "unknown command '%s'", cmd_name);
	req->cmd = c->cmd;
	args = (char *)req + c->offset;
	proto__defaults(c, args);

	cJSON_ArrayForEach(item, root)
	{
		const struct proto__field *f;
		const char *name = item->string;
		size_t index;

		if (!strcmp(name, "v") || !strcmp(name, "cmd")) {
			/* cJSON keeps duplicate keys; the lookups above saw the first. */
			if (item != v && item != cmd)
				return proto__fail(err, err_size, "duplicate field '%s'", name);
			continue;
		}
		f = proto__find_field(c, name, &index);
		if (!f)
			return proto__fail(err, err_size, "unknown field '%s' for command '%s'",
					   name, cmd_name);
		if (seen & (UINT64_C(1) << index))
			return proto__fail(err, err_size, "duplicate field '%s'", name);
		seen |= UINT64_C(1) << index;
		r = proto__parse_field(f, item, args, err, err_size);
		if (r < 0)
			return r;
	}
	if (c->cmd == PROTO_CMD_EXPORT)
		req->export.kind_given = proto__given(c, seen, "kind");
	return c->check ? c->check(args, c, seen, err, err_size) : 0;
}

int proto_request_parse(const char *buf, size_t len, struct proto_request *ret, char *err,
			size_t err_size)
{
	size_t offset;
	cJSON *root;
	int r;

	if (err && err_size)
		err[0] = '\0';
	if (!buf || !len)
		return proto__fail(err, err_size, "empty request");
	root = proto__parse_json(buf, len, &offset);
	if (!root)
		return proto__fail(err, err_size, "malformed JSON at byte %zu", offset);
	memset(ret, 0, sizeof(*ret));
	r = proto__parse_request(root, ret, err, err_size);
	cJSON_Delete(root);
	return r;
}

int proto_format_from_name(const char *name)
{
	return proto__name_index(proto__format_names, name);
}

int proto_palette_from_name(const char *name)
{
	return proto__name_index(proto__palette_names, name);
}

int proto_kind_from_name(const char *name)
{
	return proto__name_index(proto_kind_names, name);
}

/* By hand, not strtod(): that one follows LC_NUMERIC and takes "1e3", " 1",
 * "inf" and hex floats. */
int proto_minwidth_parse(const char *s, double *ret_value, bool *ret_percent)
{
	const char *p = s;
	double v = 0, scale = 1;
	bool percent;

	if (!s || strlen(s) > PROTO_MINWIDTH_MAX || *p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -EINVAL;
		for (p++; *p >= '0' && *p <= '9'; p++) {
			scale /= 10;
			v += (*p - '0') * scale;
		}
	}
	percent = *p == '%';
	if (percent)
		p++;
	if (*p || (percent && v > 100))
		return -EINVAL;
	*ret_value = v;
	*ret_percent = percent;
	return 0;
}

int proto_metric_from_name(const char *name)
{
	return proto__name_index(proto__metric_names, name);
}

int proto_group_by_from_name(const char *name)
{
	return proto__name_index(proto__group_by_names, name);
}

/* args: the command's struct. */
static bool proto__format_field(cJSON *obj, const struct proto__field *f, const void *args)
{
	const char *src = (const char *)args + f->offset;
	uint64_t v;
	cJSON *a;

	switch (f->kind) {
	case PROTO__KIND_UINT:
		v = proto__load(src, f->size) / proto__unit(f);
		return v == f->def || proto__add_u64(obj, f->name, v);

	case PROTO__KIND_IDS: {
		size_t n = proto__load((const char *)args + f->count_offset, sizeof(size_t));
		uint32_t id;

		/* The caller builds the request; more ids would not fit the struct. */
		assert(n <= f->size / sizeof(uint32_t));
		if (!n)
			return true;
		a = cJSON_CreateArray();
		for (size_t i = 0; a && i < n; i++) {
			memcpy(&id, src + i * sizeof(id), sizeof(id));
			if (!cJSON_AddItemToArray(a, proto__u64(id))) {
				cJSON_Delete(a);
				return false;
			}
		}
		return proto__add_item(obj, f->name, a);
	}

	case PROTO__KIND_STATES:
		v = proto__load(src, f->size);
		if (v == f->def)
			return true;
		a = cJSON_CreateArray();
		for (unsigned bit = 0; a && bit < 32; bit++) {
			/* Unknown bits are sent as "?" so the daemon rejects them. */
			if ((v & (UINT64_C(1) << bit)) &&
			    !cJSON_AddItemToArray(a, cJSON_CreateString(thread_state_name(bit)))) {
				cJSON_Delete(a);
				return false;
			}
		}
		return proto__add_item(obj, f->name, a);

	case PROTO__KIND_ENUM: {
		size_t n_names = 0;

		v = proto__load(src, f->size);
		while (f->names[n_names])
			n_names++;
		assert(v < n_names);
		return v == f->def || proto__add_string(obj, f->name, f->names[v]);
	}

	case PROTO__KIND_STRING:
		/* The caller fills a fixed buffer; it must stay terminated. */
		assert(memchr(src, '\0', f->size));
		return !*src || proto__add_string(obj, f->name, src);

	case PROTO__KIND_STRINGS: {
		size_t n = proto__load((const char *)args + f->count_offset, sizeof(size_t));

		assert(n <= f->size / (f->max + 1));
		if (!n)
			return true;
		a = cJSON_CreateArray();
		for (size_t i = 0; a && i < n; i++) {
			const char *str = src + i * (f->max + 1);

			assert(memchr(str, '\0', f->max + 1));
			if (!cJSON_AddItemToArray(a, cJSON_CreateString(str))) {
				cJSON_Delete(a);
				return false;
			}
		}
		return proto__add_item(obj, f->name, a);
	}

	case PROTO__KIND_BOOL:
		v = proto__load(src, f->size);
		return v == f->def || proto__add_bool(obj, f->name, v);
	}
	return false;
}

char *proto_request_format(const struct proto_request *req)
{
	cJSON *root = proto__new_message();
	const struct proto__command *c = NULL;
	const void *args;

	for (size_t i = 0; i < PROTO__N_COMMANDS; i++)
		if (proto__commands[i].cmd == req->cmd)
			c = &proto__commands[i];
	assert(c);
	args = (const char *)req + c->offset;
	if (!root || !proto__add_string(root, "cmd", c->name))
		goto fail;
	for (size_t i = 0; i < c->n_fields; i++)
		if (!proto__format_field(root, &c->fields[i], args))
			goto fail;
	/* A default kind said out loud: an export of a capture takes the
	 * capture's kind only where the request names none. */
	if (req->cmd == PROTO_CMD_EXPORT && req->export.kind_given &&
	    req->export.kind == PROTO_KIND_OFFCPU &&
	    !proto__add_string(root, "kind", proto_kind_name(PROTO_KIND_OFFCPU)))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}
