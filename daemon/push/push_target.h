/*
 * push_target: one fleet store the always-on windows are pushed to, as the
 * configuration gives it (keys "push.NAME.KEY": daemon/config.c parses them,
 * etc/offcpud.conf documents them). Plain data, shared by the configuration
 * and the pusher.
 */
#ifndef PUSH_TARGET_H
#define PUSH_TARGET_H

#include <stdint.h>

/* The wire format of a push target. */
enum config_push_api {
	CONFIG_PUSH_PYROSCOPE,	      /* POST /push.v1.PusherService/Push (Connect) */
	CONFIG_PUSH_PYROSCOPE_INGEST, /* POST /ingest?name=...: servers before the push API */
	CONFIG_PUSH_OTLP,	      /* POST /v1development/profiles (OTLP/HTTP protobuf) */
};

/* How a pushed row's service is named (enum push_service_by). */
enum config_push_service {
	CONFIG_PUSH_SERVICE_WHO,     /* container, else systemd unit, else process */
	CONFIG_PUSH_SERVICE_PROCESS, /* the process name only */
};

#define CONFIG_MAX_PUSH_TARGETS 8
#define CONFIG_PUSH_NAME_MAX	32 /* a target's name: [a-z0-9_-], shorter than this */

struct config_push_target {
	char name[CONFIG_PUSH_NAME_MAX];
	unsigned api;		       /* enum config_push_api */
	char url[1024];		       /* http:// or https://, the server's base */
	char tenant[256];	       /* X-Scope-OrgID; "": none */
	char basic_auth_file[256];     /* "USER:PASSWORD" in a file; "": none */
	char bearer_token_file[256];   /* a token in a file; "": none */
	char ca_file[256];	       /* TLS: the CA bundle; "": the system's */
	char cert_file[256];	       /* TLS client certificate (PEM); "": none */
	char key_file[256];	       /* its key; "": in cert_file */
	char labels[2048];	       /* "NAME=VALUE,..." static labels; "": none */
	uint32_t kinds;		       /* 1 << enum proto_kind; 0: all the profile records */
	unsigned service_by;	       /* enum config_push_service */
	uint64_t timeout_s;	       /* one request, connecting included */
	uint64_t max_bytes_per_second; /* upload bandwidth; 0: no limit */
	unsigned line;		       /* where the target was first named */
};

#endif
