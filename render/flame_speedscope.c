/*
 * flame_speedscope: see flame.h. Writes the merged tree as speedscope's
 * "sampled" profile: one sample per node with self > 0 (its path, root
 * excluded), weighted by self; frames shared by name. JSON is written by
 * hand: the JSON library belongs to proto/.
 */
#include "flame.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"

/* Buffered output; the first write error sticks. */
struct out {
	FILE *f;
	size_t n;
	int err;
	char buf[64 * 1024];
};

static void out_flush(struct out *o)
{
	if (o->n && !o->err && fwrite(o->buf, 1, o->n, o->f) != o->n)
		o->err = errno ? -errno : -EIO;
	o->n = 0;
}

static void out_mem(struct out *o, const void *p, size_t len)
{
	if (o->n + len > sizeof(o->buf)) {
		out_flush(o);
		if (len > sizeof(o->buf)) {
			if (!o->err && fwrite(p, 1, len, o->f) != len)
				o->err = errno ? -errno : -EIO;
			return;
		}
	}
	memcpy(o->buf + o->n, p, len);
	o->n += len;
}

static void out_str(struct out *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

static void out_u32(struct out *o, uint32_t v)
{
	char b[10];
	size_t i = sizeof(b);

	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	out_mem(o, b + i, sizeof(b) - i);
}

/* A JSON number: integers (the usual counts) without a fraction, others
 * in the fewest digits that read back the same. */
static void out_number(struct out *o, double v)
{
	char b[32];
	int n;

	if (!isfinite(v)) {
		if (!o->err)
			o->err = -ERANGE;
		return;
	}
	if (v == floor(v) && fabs(v) < 1e15) {
		n = snprintf(b, sizeof(b), "%.0f", v);
	} else {
		n = snprintf(b, sizeof(b), "%.15g", v);
		if (strtod(b, NULL) != v)
			n = snprintf(b, sizeof(b), "%.17g", v);
	}
	out_mem(o, b, (size_t)n);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* s as a JSON string; each byte not part of valid UTF-8 becomes U+FFFD. */
static void out_json_str(struct out *o, const char *str)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), run = 0;

	out_mem(o, "\"", 1);
	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(s + i, n - i);
		char esc[6] = { '\\', 'u', '0', '0' };

		if (len && s[i] >= 0x20 && s[i] != '"' && s[i] != '\\') {
			i += len;
			run += len;
			continue;
		}
		out_mem(o, s + i - run, run);
		run = 0;
		if (!len) {
			out_mem(o, "\xef\xbf\xbd", 3);
		} else if (s[i] == '"' || s[i] == '\\') {
			esc[1] = (char)s[i];
			out_mem(o, esc, 2);
		} else if (s[i] == '\n') {
			out_mem(o, "\\n", 2);
		} else if (s[i] == '\t') {
			out_mem(o, "\\t", 2);
		} else {
			esc[4] = hex[s[i] >> 4];
			esc[5] = hex[s[i] & 0xf];
			out_mem(o, esc, 6);
		}
		i++;
	}
	out_mem(o, s + n - run, run);
	out_mem(o, "\"", 1);
}

/* Frame index by name. */
struct frames {
	const char **names; /* by index */
	uint32_t n, cap;
	uint32_t *slots; /* index + 1, 0 empty */
	size_t mask;
};

/* Eight bytes a step: every node's name is hashed once. */
static uint64_t hash_str(const char *s)
{
	size_t n = strlen(s);
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0x9fb21c651e98df25ULL;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 32);
}

static int frames_rehash(struct frames *fr, size_t n_slots)
{
	uint32_t *slots = calloc(n_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < fr->n; i++) {
		size_t j = hash_str(fr->names[i]) & (n_slots - 1);

		while (slots[j])
			j = (j + 1) & (n_slots - 1);
		slots[j] = i + 1;
	}
	free(fr->slots);
	fr->slots = slots;
	fr->mask = n_slots - 1;
	return 0;
}

/* Index of name, added if new; -ENOMEM. */
static int64_t frames_index(struct frames *fr, const char *name)
{
	size_t j;

	if (fr->slots) {
		/* Names are usually interned: compare pointers first. */
		for (j = hash_str(name) & fr->mask; fr->slots[j]; j = (j + 1) & fr->mask) {
			const char *s = fr->names[fr->slots[j] - 1];

			if (s == name || !strcmp(s, name))
				return fr->slots[j] - 1;
		}
	}
	if (fr->n >= UINT32_MAX / 2)
		return -ENOMEM;
	if (!fr->slots || (size_t)(fr->n + 1) * 2 > fr->mask + 1) {
		if (frames_rehash(fr, fr->slots ? (fr->mask + 1) * 2 : 1024) < 0)
			return -ENOMEM;
	}
	if (fr->n == fr->cap) {
		uint32_t cap = fr->cap ? fr->cap * 2 : 1024;
		const char **names = reallocarray(fr->names, cap, sizeof(*names));

		if (!names)
			return -ENOMEM;
		fr->names = names;
		fr->cap = cap;
	}
	for (j = hash_str(name) & fr->mask; fr->slots[j];)
		j = (j + 1) & fr->mask;
	fr->slots[j] = fr->n + 1;
	fr->names[fr->n] = name;
	return fr->n++;
}

/* Depth-first walk without recursion: stacks may be deep. */
struct walk {
	const struct flame_node *node;
	size_t next_child;
	uint32_t frame;
};

static const char *speedscope_unit(const char *unit)
{
	static const struct {
		const char *in, *out;
	} map[] = {
		{ "us", "microseconds" },
		{ "ns", "nanoseconds" },
		{ "ms", "milliseconds" },
		{ "s", "seconds" },
		{ "B", "bytes" },
		{ "bytes", "bytes" },
		{ "microseconds", "microseconds" },
		{ "nanoseconds", "nanoseconds" },
		{ "milliseconds", "milliseconds" },
		{ "seconds", "seconds" },
	};

	for (size_t i = 0; unit && i < sizeof(map) / sizeof(map[0]); i++) {
		if (!strcmp(unit, map[i].in))
			return map[i].out;
	}
	return "none";
}

/* A double array that grows. */
struct weights {
	double *v;
	size_t n, cap;
};

/*
 * Writes the samples (paths of frame indices) of every node with self > 0,
 * indexing frames as they come, and collects the weights in the same order.
 */
static int write_samples(const struct flame_node *root, struct frames *fr, struct weights *wt,
			 struct out *o)
{
	struct walk *stack;
	size_t depth = 1, cap = 64;
	int r = 0;

	stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[0] = (struct walk){ root, 0, 0 };
	while (depth > 0) {
		struct walk *w = &stack[depth - 1];
		int64_t i;

		if (w->next_child == 0 && depth > 1 && flame_node_self(w->node) > 0) {
			if (wt->n == wt->cap) {
				size_t c = wt->cap ? wt->cap * 2 : 1024;
				double *v = reallocarray(wt->v, c, sizeof(*v));

				if (!v) {
					r = -ENOMEM;
					break;
				}
				wt->v = v;
				wt->cap = c;
			}
			wt->v[wt->n++] = flame_node_self(w->node);
			out_mem(o, wt->n > 1 ? ",[" : "[", wt->n > 1 ? 2 : 1);
			for (size_t d = 1; d < depth; d++) {
				if (d > 1)
					out_mem(o, ",", 1);
				out_u32(o, stack[d].frame);
			}
			out_mem(o, "]", 1);
		}
		if (w->next_child == w->node->n_children) {
			depth--;
			continue;
		}
		if (depth == cap) {
			struct walk *s = reallocarray(stack, cap * 2, sizeof(*s));

			if (!s) {
				r = -ENOMEM;
				break;
			}
			stack = s;
			cap *= 2;
			w = &stack[depth - 1];
		}
		i = frames_index(fr, w->node->children[w->next_child].name);
		if (i < 0) {
			r = -ENOMEM;
			break;
		}
		stack[depth++] =
			(struct walk){ &w->node->children[w->next_child++], 0, (uint32_t)i };
	}
	free(stack);
	return r;
}

int flame_speedscope(struct flame *f, const char *name, const char *unit, FILE *out)
{
	const struct flame_node *root = flame_root(f);
	struct frames fr = { 0 };
	struct weights wt = { 0 };
	struct out *o;
	int r = 0;

	if (!root && flame_stats(f)->lines > flame_stats(f)->invalid)
		return -ENOMEM;
	o = malloc(sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->f = out;
	o->n = 0;
	o->err = 0;
	if (!name)
		name = "";
	/* Object members in any order: the frames are known after the walk. */
	out_str(o, "{\"$schema\":\"" SCHEMA_URL "\",\"profiles\":[{\"type\":\"sampled\",\"name\":");
	out_json_str(o, name);
	out_str(o, ",\"unit\":\"");
	out_str(o, speedscope_unit(unit));
	out_str(o, "\",\"startValue\":0,\"endValue\":");
	out_number(o, root ? root->value : 0);
	out_str(o, ",\"samples\":[");
	if (root)
		r = write_samples(root, &fr, &wt, o);
	if (r < 0)
		goto out;
	out_str(o, "],\"weights\":[");
	for (size_t i = 0; i < wt.n; i++) {
		if (i)
			out_mem(o, ",", 1);
		out_number(o, wt.v[i]);
	}
	out_str(o, "]}],\"shared\":{\"frames\":[");
	for (uint32_t i = 0; i < fr.n; i++) {
		out_str(o, i ? ",{\"name\":" : "{\"name\":");
		out_json_str(o, fr.names[i]);
		out_mem(o, "}", 1);
	}
	out_str(o, "]},\"name\":");
	out_json_str(o, name);
	out_str(o, ",\"activeProfileIndex\":0,\"exporter\":\"offcpud\"}\n");
	out_flush(o);
	if (!o->err && fflush(out) == EOF)
		o->err = errno ? -errno : -EIO;
	r = o->err;
out:
	free(o);
	free(wt.v);
	free(fr.names);
	free(fr.slots);
	return r;
}
