/*
 * proto_json: the JSON readers that proto.c and proto_samples.c share. Private
 * to proto/ (the only code that touches JSON).
 */
#ifndef PROTO_JSON_H
#define PROTO_JSON_H

#include <stdint.h>

#include <cjson/cJSON.h>

/* A non-negative integral number. Values at or past 2^64 saturate: a daemon
 * printing UINT64_MAX as a double sends exactly 2^64. 0 or -EINVAL. */
int proto__number_u64(const cJSON *item, uint64_t *ret);

/* A string item for s (NULL: ""), bytes that are not UTF-8 replaced with
 * U+FFFD. NULL on ENOMEM. */
cJSON *proto__string(const char *s);

#endif
