/* proto_json: see proto_json.h. */
#include "proto.h"

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

int proto__fail(char *err, size_t err_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

int proto__fail(char *err, size_t err_size, const char *fmt, ...)
{
	va_list ap;

	if (err && err_size) {
		va_start(ap, fmt);
		vsnprintf(err, err_size, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}


/*
 * Offset of the first NUL in buf[0..len), raw or escaped as \u0000, or len.
 * cJSON strings are NUL-terminated, so either would silently cut a string
 * (or, raw, the whole input). In valid JSON every backslash starts an escape,
 * which makes a plain scan enough; in invalid JSON cJSON finds the error.
 */
size_t proto__find_nul(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (!buf[i])
			return i;
		if (buf[i] != '\\')
			continue;
		if (len - i >= 6 && !memcmp(buf + i + 1, "u0000", 5))
			return i;
		i++; /* the escaped character, which may be a backslash */
		if (i < len && !buf[i])
			return i;
	}
	return len;
}

/*
 * Parses buf[0..len) as exactly one JSON value, surrounded by optional
 * whitespace. Returns the tree, or NULL with *ret_offset set to the byte
 * offset of the first error. len is authoritative; a NUL is an error.
 */
cJSON *proto__parse_json(const char *buf, size_t len, size_t *ret_offset)
{
	const char *end = NULL;
	cJSON *root;
	size_t pos;

	*ret_offset = 0;
	if (!buf || !len)
		return NULL;
	pos = proto__find_nul(buf, len);
	if (pos < len) {
		*ret_offset = pos;
		return NULL;
	}
	root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	if (!root) {
		if (end && end >= buf && end <= buf + len)
			*ret_offset = end - buf;
		return NULL;
	}
	pos = end - buf;
	while (pos < len &&
	       (buf[pos] == ' ' || buf[pos] == '\t' || buf[pos] == '\r' || buf[pos] == '\n'))
		pos++;
	if (pos < len) {
		cJSON_Delete(root);
		*ret_offset = pos;
		return NULL;
	}
	return root;
}

int proto__name_index(const char *const *names, const char *name)
{
	for (int i = 0; name && names[i]; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -EINVAL;
}

/* ---- reply and request formatting -------------------------------------- */

/*
 * A JSON string item for s. cJSON escapes quotes and control characters but
 * copies other bytes as they are, and comm names, symbols and error messages
 * (which quote client input) may hold any bytes: cleaning them keeps every
 * line valid JSON. NULL becomes "".
 */
cJSON *proto__string(const char *s)
{
	cJSON *item;
	char *fixed;

	if (!s)
		s = "";
	if (utf8_valid(s))
		return cJSON_CreateString(s);
	fixed = utf8_fix(s);
	if (!fixed)
		return NULL;
	item = cJSON_CreateString(fixed);
	free(fixed);
	return item;
}

/* Adds item under name (cleaned like a string value: counter names come
 * from the caller; NULL becomes ""). Consumes item, also on failure. */
bool proto__add_item(cJSON *obj, const char *name, cJSON *item)
{
	char *fixed = NULL;
	bool ok;

	if (!item)
		return false;
	if (!name)
		name = "";
	if (!utf8_valid(name)) {
		fixed = utf8_fix(name);
		if (!fixed) {
			cJSON_Delete(item);
			return false;
		}
		name = fixed;
	}
	ok = cJSON_AddItemToObject(obj, name, item);
	if (!ok)
		cJSON_Delete(item);
	free(fixed);
	return ok;
}

bool proto__add_string(cJSON *obj, const char *name, const char *s)
{
	return proto__add_item(obj, name, proto__string(s));
}

/*
 * Integers go out as raw decimal text: cJSON prints doubles with 15
 * significant digits, which would round nanosecond totals past 10^15.
 */
cJSON *proto__u64(uint64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRIu64, v);
	return cJSON_CreateRaw(text);
}

bool proto__add_u64(cJSON *obj, const char *name, uint64_t v)
{
	return proto__add_item(obj, name, proto__u64(v));
}

bool proto__add_i64(cJSON *obj, const char *name, int64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, v);
	return proto__add_item(obj, name, cJSON_CreateRaw(text));
}

/* cJSON would print NaN and infinities as null; rates are never negative either. */
bool proto__add_rate(cJSON *obj, const char *name, double v)
{
	return proto__add_item(obj, name, cJSON_CreateNumber(isfinite(v) && v > 0 ? v : 0));
}

bool proto__add_bool(cJSON *obj, const char *name, bool v)
{
	return proto__add_item(obj, name, cJSON_CreateBool(v));
}

bool proto__add_counters(cJSON *obj, const char *name, const struct proto_counter *c,
				size_t n)
{
	cJSON *o = cJSON_CreateObject();

	for (size_t i = 0; o && c && i < n; i++) {
		if (!proto__add_u64(o, c[i].name, c[i].value)) {
			cJSON_Delete(o);
			return false;
		}
	}
	return proto__add_item(obj, name, o);
}

int proto__frames_len(const cJSON *obj, const char *name, bool optional, size_t *ret)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, name), *f;
	size_t n = 0;

	if (!a && optional) {
		*ret = 0;
		return 0;
	}
	if (!cJSON_IsArray(a))
		return -EINVAL;
	cJSON_ArrayForEach(f, a)
	{
		if (!cJSON_IsString(f))
			return -EINVAL;
		n++;
	}
	*ret = n;
	return 0;
}

const char *const *proto__frames_copy(const cJSON *obj, const char *name, const char ***next)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, name), *f;
	const char **start = *next;

	cJSON_ArrayForEach(f, a)
	{
		*(*next)++ = f->valuestring;
	}
	return start;
}

bool proto__add_frames(cJSON *obj, const char *name, const char *const *frames, size_t n)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && frames && i < n; i++) {
		cJSON *s = proto__string(frames[i]);

		if (!s || !cJSON_AddItemToArray(a, s)) {
			cJSON_Delete(s);
			cJSON_Delete(a);
			return false;
		}
	}
	return proto__add_item(obj, name, a);
}

/* A reply or request object with its "v" member. */
cJSON *proto__new_message(void)
{
	cJSON *root = cJSON_CreateObject();

	if (root && !proto__add_u64(root, "v", PROTO_VERSION)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* Prints root as one '\n'-terminated line and frees it; NULL on ENOMEM. */
char *proto__finish(cJSON *root)
{
	char *line, *grown;
	size_t len;

	if (!root)
		return NULL;
	line = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!line)
		return NULL;
	/* cJSON allocates with malloc (no hooks are installed), so realloc is fine. */
	len = strlen(line);
	grown = realloc(line, len + 2);
	if (!grown) {
		free(line);
		return NULL;
	}
	grown[len] = '\n';
	grown[len + 1] = '\0';
	return grown;
}

/* See proto_json.h. */
int proto__number_u64(const cJSON *item, uint64_t *ret)
{
	double d;

	if (!cJSON_IsNumber(item))
		return -EINVAL;
	d = item->valuedouble;
	if (!(d >= 0))
		return -EINVAL;
	if (d >= 18446744073709551616.0) {
		*ret = UINT64_MAX;
		return 0;
	}
	if (d != (double)(uint64_t)d)
		return -EINVAL;
	*ret = (uint64_t)d;
	return 0;
}
