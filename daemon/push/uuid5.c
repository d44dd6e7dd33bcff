/*
 * uuid5: see uuid5.h. SHA-1 after FIPS 180-4, one block at a time; names
 * are a few hundred bytes, so nothing is done for speed.
 */
#include "uuid5.h"

#include <stdio.h>
#include <string.h>

static uint32_t rol32(uint32_t x, unsigned n)
{
	return x << n | x >> (32 - n);
}

static void sha1_block(struct uuid5 *s)
{
	uint32_t w[80], a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)s->block[4 * i] << 24 | (uint32_t)s->block[4 * i + 1] << 16 |
		       (uint32_t)s->block[4 * i + 2] << 8 | s->block[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k, t;

		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = rol32(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol32(b, 30);
		b = a;
		a = t;
	}
	s->h[0] += a;
	s->h[1] += b;
	s->h[2] += c;
	s->h[3] += d;
	s->h[4] += e;
}

static void sha1_init(struct uuid5 *s)
{
	*s = (struct uuid5){ .h = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 } };
}

static void sha1_update(struct uuid5 *s, const void *p, size_t len)
{
	const uint8_t *b = p;

	s->total += len;
	while (len) {
		size_t take = sizeof(s->block) - s->n < len ? sizeof(s->block) - s->n : len;

		memcpy(s->block + s->n, b, take);
		s->n += take;
		b += take;
		len -= take;
		if (s->n == sizeof(s->block)) {
			sha1_block(s);
			s->n = 0;
		}
	}
}

/* 0x80, zeros to 56 mod 64, then the length in bits, big-endian. */
static void sha1_final(struct uuid5 *s, uint8_t ret[20])
{
	uint64_t bits = s->total * 8;
	uint8_t pad = 0x80, zero = 0, len[8];

	sha1_update(s, &pad, 1);
	while (s->n != 56)
		sha1_update(s, &zero, 1);
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha1_update(s, len, sizeof(len));
	for (int i = 0; i < 20; i++)
		ret[i] = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}

void uuid5_sha1(const void *p, size_t len, uint8_t ret[20])
{
	struct uuid5 s;

	sha1_init(&s);
	sha1_update(&s, p, len);
	sha1_final(&s, ret);
}

void uuid5_init(struct uuid5 *u, const uint8_t ns[16])
{
	sha1_init(u);
	sha1_update(u, ns, 16);
}

void uuid5_add(struct uuid5 *u, const void *p, size_t len)
{
	sha1_update(u, p, len);
}

void uuid5_end(struct uuid5 *u, char ret[UUID5_STR_SIZE])
{
	uint8_t d[20];
	char *o = ret;

	sha1_final(u, d);
	/* RFC 4122 4.3: the first 16 bytes, version 5, variant 10x. */
	d[6] = (uint8_t)((d[6] & 0x0f) | 0x50);
	d[8] = (uint8_t)((d[8] & 0x3f) | 0x80);
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*o++ = '-';
		o += sprintf(o, "%02x", d[i]);
	}
}

void uuid5_make(const uint8_t ns[16], const void *name, size_t len, char ret[UUID5_STR_SIZE])
{
	struct uuid5 u;

	uuid5_init(&u, ns);
	uuid5_add(&u, name, len);
	uuid5_end(&u, ret);
}
