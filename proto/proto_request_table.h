/*
 * proto_request_table: each request command described once, by a table of
 * its fields (proto__commands[] names the table and where the command's
 * struct sits in struct proto_request), which drives defaults, parsing,
 * validation (proto_request.c) and proto_request_format(). Private to
 * proto/.
 */
#ifndef PROTO_REQUEST_TABLE_H
#define PROTO_REQUEST_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* Largest integer a JSON number (an IEEE double) carries exactly. */
#define PROTO__JSON_INT_MAX    (UINT64_C(1) << 53)

#define PROTO__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the requests' fields ---------------------------------------------- */

enum proto__kind {
	/* integer in [min, max], stored in a uint32_t, uint64_t or int64_t
	 * (min >= 0, so the int64_t bits are the uint64_t's) */
	PROTO__KIND_UINT,
	PROTO__KIND_IDS,    /* array of integers in [min, max], stored as uint32_t[] + count */
	PROTO__KIND_STATES, /* non-empty array of thread_state names, stored as a mask */
	PROTO__KIND_ENUM,   /* one of names[], stored as its index (the enum value) */
	PROTO__KIND_STRING, /* string of at most max bytes (< size), stored NUL-terminated */
	/* non-empty strings of at most max bytes each, stored as char[][max + 1] + count */
	PROTO__KIND_STRINGS,
	PROTO__KIND_BOOL, /* true or false (not a number), stored as a uint32_t 0 or 1 */
};

struct proto__field {
	const char *name;
	enum proto__kind kind;
	size_t offset;		  /* of the value in the command's struct */
	size_t size;		  /* of the value; for IDS, of the whole array */
	size_t count_offset;	  /* IDS: of the element count */
	uint64_t min;		  /* UINT, IDS (per element) */
	uint64_t max;		  /* UINT, IDS (per element); STRING: bytes */
	/* UINT: the struct holds the value times this (a request's "min_ms"
	 * into min_ns), with min, max and def in the request's unit; 0 is 1. A
	 * request is formatted rounded down to that unit. */
	uint64_t unit;
	uint64_t def;		  /* UINT: value; STATES: mask; ENUM: index; BOOL: 0 or 1;
				     STRING: "" */
	bool zero_ok;		  /* UINT: 0 (the default) is valid too, below min */
	const char *const *names; /* ENUM: NULL-terminated, indexed by enum value */
	uint32_t allowed;	  /* ENUM: bit per value this field takes; 0: all of names */
	/* STRING: the syntax a value other than "" must have, and its words for
	 * "field 'x' must be ..." */
	bool (*valid)(const char *s);
	const char *expect;
	bool regex; /* STRING: a pattern that must compile as a stack filter's */
};

struct proto__command;

/* Rules that span fields, checked once all fields are in. given: bit i set
 * if the request named the command's field i (see proto__given()). */
typedef int proto__check_fn(const void *args, const struct proto__command *c, uint64_t given,
			    char *err, size_t err_size);
proto__check_fn proto__capture_check, proto__export_check, proto__hist_check,
	proto__latency_check, proto__heatmap_check;

struct proto__command {
	const char *name;
	enum proto_cmd cmd;
	size_t offset;			   /* of the command's struct in struct proto_request */
	const struct proto__field *fields; /* NULL: the command takes no fields */
	size_t n_fields;
	proto__check_fn *check; /* NULL: none */
};

extern const struct proto__command proto__commands[];
extern const size_t proto__n_commands;
#define PROTO__N_COMMANDS proto__n_commands

/* NULL-terminated, indexed by the enum's values. */
extern const char *const proto__stacks_names[];
extern const char *const proto__format_names[];
extern const char *const proto__palette_names[];
extern const char *const proto__metric_names[];
extern const char *const proto__group_by_names[];

const struct proto__field *proto__find_field(const struct proto__command *c, const char *name,
					     size_t *ret_index);
/* Whether the request named field name of command c; given as for checks. */
bool proto__given(const struct proto__command *c, uint64_t given, const char *name);

#endif
