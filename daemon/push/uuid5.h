/*
 * uuid5: name-based UUIDs, version 5 of RFC 4122 (SHA-1 of a namespace and a
 * name), so that the same name always gives the same id: push_request.c
 * names each series it sends this way, and a retried push is the same push.
 * SHA-1 is written here (FIPS 180-4) because nothing offcpud links offers
 * one; it is used as RFC 4122 uses it, to spread names, not for security.
 * Pure. Does not log.
 */
#ifndef UUID5_H
#define UUID5_H

#include <stddef.h>
#include <stdint.h>

#define UUID5_STR_SIZE 37 /* "xxxxxxxx-xxxx-5xxx-yxxx-xxxxxxxxxxxx" and its NUL */

/* A name being hashed, given in pieces: uuid5_init(), uuid5_add()...,
 * uuid5_end(). On the caller's stack; nothing to free. */
struct uuid5 {
	uint32_t h[5];
	uint8_t block[64];
	size_t n;	/* bytes in block */
	uint64_t total; /* bytes hashed */
};

/* Starts the name of a UUID in namespace ns (16 bytes, network order). */
void uuid5_init(struct uuid5 *u, const uint8_t ns[16]);
void uuid5_add(struct uuid5 *u, const void *p, size_t len);
/* The UUID of the name added, in lowercase RFC 4122 form, into ret. */
void uuid5_end(struct uuid5 *u, char ret[UUID5_STR_SIZE]);

/* The same for a name in one piece, name[0, len). */
void uuid5_make(const uint8_t ns[16], const void *name, size_t len, char ret[UUID5_STR_SIZE]);

/* The 20-byte SHA-1 digest of p[0, len). */
void uuid5_sha1(const void *p, size_t len, uint8_t ret[20]);

#endif
