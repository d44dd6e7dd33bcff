/*
 * proto_json: the JSON readers and writers that the files of proto/ share.
 * Private to proto/ (the only code that touches JSON).
 */
#ifndef PROTO_JSON_H
#define PROTO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* A non-negative integral number. Values at or past 2^64 saturate: a daemon
 * printing UINT64_MAX as a double sends exactly 2^64. 0 or -EINVAL. */
int proto__number_u64(const cJSON *item, uint64_t *ret);

/* A string item for s (NULL: ""), bytes that are not UTF-8 replaced with
 * U+FFFD. NULL on ENOMEM. */
cJSON *proto__string(const char *s);

/* Writes the message into err (if any) and returns -EINVAL. */
int proto__fail(char *err, size_t err_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Offset of the first NUL in buf[0..len), raw or escaped as \u0000, or len. */
size_t proto__find_nul(const char *buf, size_t len);

/* buf[0..len) as exactly one JSON value, or NULL with *ret_offset at the
 * first error. */
cJSON *proto__parse_json(const char *buf, size_t len, size_t *ret_offset);

/* A frame array of obj (samples' and blocked threads' stacks): its length,
 * 0 if absent and optional, or -EINVAL if it is not an array of strings;
 * then, once checked, its strings copied to *next on (advanced), returning
 * where they start. */
int proto__frames_len(const cJSON *obj, const char *name, bool optional, size_t *ret);
const char *const *proto__frames_copy(const cJSON *obj, const char *name, const char ***next);

/* The index of name in the NULL-terminated names, or -EINVAL. */
int proto__name_index(const char *const *names, const char *name);

/* Adders of members to obj; each consumes what it adds, also on failure,
 * and returns false on ENOMEM. */
bool proto__add_item(cJSON *obj, const char *name, cJSON *item);
bool proto__add_string(cJSON *obj, const char *name, const char *s);
cJSON *proto__u64(uint64_t v);
bool proto__add_u64(cJSON *obj, const char *name, uint64_t v);
bool proto__add_i64(cJSON *obj, const char *name, int64_t v);
bool proto__add_rate(cJSON *obj, const char *name, double v);
bool proto__add_bool(cJSON *obj, const char *name, bool v);
struct proto_counter;
bool proto__add_counters(cJSON *obj, const char *name, const struct proto_counter *c, size_t n);
bool proto__add_frames(cJSON *obj, const char *name, const char *const *frames, size_t n);

/* A new message object with its "v"; NULL on ENOMEM. */
cJSON *proto__new_message(void);
/* Prints root as one '\n'-terminated line and frees it; NULL on ENOMEM. */
char *proto__finish(cJSON *root);

#endif
