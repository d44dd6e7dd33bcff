/* xml_read: see xml_read.h. */
#include "xml_read.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define XML_DEPTH_MAX 16

void xml_free(struct xml_doc *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->els[i].text);
	free(d->els);
	free(d->buf);
	memset(d, 0, sizeof(*d));
}

bool xml_unescape(char *dst, size_t cap, const char *src, size_t len)
{
	static const struct {
		const char *ent;
		char c;
	} ents[] = { { "&amp;", '&' },
		     { "&lt;", '<' },
		     { "&gt;", '>' },
		     { "&quot;", '"' },
		     { "&apos;", '\'' } };
	size_t o = 0, i = 0;
	bool ok = true;

	while (ok && i < len && o + 1 < cap) {
		size_t k;

		if (src[i] != '&') {
			ok = src[i] != '<';
			dst[o++] = src[i++];
			continue;
		}
		for (k = 0; k < sizeof(ents) / sizeof(ents[0]); k++) {
			size_t el = strlen(ents[k].ent);

			if (len - i >= el && !memcmp(src + i, ents[k].ent, el)) {
				dst[o++] = ents[k].c;
				i += el;
				break;
			}
		}
		ok = k < sizeof(ents) / sizeof(ents[0]);
	}
	dst[o] = '\0';
	return ok;
}

static bool xml_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == ':' || c == '.';
}

/* Copies the name at *p into dst (cap bytes) and moves *p past it. */
static bool xml_name(char **p, char *dst, size_t cap)
{
	size_t n = 0;

	while (xml_name_char((*p)[n]))
		n++;
	if (!n || n >= cap)
		return false;
	memcpy(dst, *p, n);
	dst[n] = '\0';
	*p += n;
	return true;
}

static void xml_space(char **p)
{
	while (**p == ' ' || **p == '\n' || **p == '\t' || **p == '\r')
		(*p)++;
}

/* A start tag after its '<'; pushes it unless it closes itself. */
static bool xml_start(struct xml_doc *d, char **p, int *stack, size_t *depth)
{
	struct xml_el *e;

	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 256;
		d->els = realloc(d->els, d->cap * sizeof(*d->els));
	}
	e = &d->els[d->n];
	memset(e, 0, sizeof(*e));
	e->parent = *depth ? stack[*depth - 1] : -1;
	if (!xml_name(p, e->name, sizeof(e->name)))
		return false;
	for (;;) {
		char *v, *q;

		xml_space(p);
		if (**p == '>' || (**p == '/' && (*p)[1] == '>'))
			break;
		if (e->n_attrs == XML_ATTRS_MAX ||
		    !xml_name(p, e->attr_names[e->n_attrs], sizeof(e->attr_names[0])))
			return false;
		for (size_t i = 0; i < e->n_attrs; i++)
			if (!strcmp(e->attr_names[i], e->attr_names[e->n_attrs]))
				return false; /* twice */
		if (**p != '=' || ((*p)[1] != '"' && (*p)[1] != '\''))
			return false;
		v = *p + 2;
		q = strchr(v, (*p)[1]);
		if (!q || !xml_unescape(v, q - v + 1, v, q - v))
			return false;
		e->attr_values[e->n_attrs++] = v;
		*p = q + 1;
	}
	d->n++;
	if (**p == '/') {
		*p += 2;
		return *depth > 0 || d->n == 1;
	}
	(*p)++;
	if (*depth == XML_DEPTH_MAX)
		return false;
	stack[(*depth)++] = (int)(d->n - 1);
	return true;
}

/* 1 + the offset of p in d's text. */
static size_t xml_at(const struct xml_doc *d, const char *p)
{
	return (size_t)(p - d->buf) + 1;
}

size_t xml_parse(struct xml_doc *d, const char *text)
{
	int stack[XML_DEPTH_MAX];
	size_t depth = 0, roots = 0;
	char *p;

	memset(d, 0, sizeof(*d));
	d->buf = strdup(text);
	p = d->buf;
	if (!strncmp(p, "<?xml ", 6)) {
		p = strstr(p, "?>");
		if (!p)
			return 1;
		p += 2;
	}
	while (*p) {
		if (*p == '<' && p[1] == '/') {
			char name[16];

			p += 2;
			if (!depth || !xml_name(&p, name, sizeof(name)) ||
			    strcmp(name, d->els[stack[depth - 1]].name))
				return xml_at(d, p);
			xml_space(&p);
			if (*p != '>')
				return xml_at(d, p);
			p++;
			depth--;
		} else if (*p == '<') {
			if (!depth && roots++)
				return xml_at(d, p); /* a second root */
			p++;
			if (!xml_start(d, &p, stack, &depth))
				return xml_at(d, p);
		} else {
			char *end = strchr(p, '<'), *t;
			size_t len = end ? (size_t)(end - p) : strlen(p);
			bool blank = strspn(p, " \n\t\r") >= len;

			if (!blank && !depth)
				return xml_at(d, p); /* text outside the root */
			t = malloc(len + 1);
			if (!xml_unescape(t, len + 1, p, len)) {
				free(t);
				return xml_at(d, p);
			}
			if (!blank && !d->els[stack[depth - 1]].text)
				d->els[stack[depth - 1]].text = t;
			else
				free(t);
			p += len;
		}
	}
	return depth || roots != 1 ? xml_at(d, p) : 0;
}

const char *xml_attr(const struct xml_el *e, const char *name)
{
	for (size_t i = 0; i < e->n_attrs; i++)
		if (!strcmp(e->attr_names[i], name))
			return e->attr_values[i];
	return NULL;
}

double xml_num(const struct xml_el *e, const char *name)
{
	const char *v = xml_attr(e, name);

	return v ? strtod(v, NULL) : NAN;
}

int xml_find(const struct xml_doc *d, const char *name, const char *attr, const char *value)
{
	for (size_t i = 0; i < d->n; i++) {
		const char *v = xml_attr(&d->els[i], attr);

		if (!strcmp(d->els[i].name, name) && v && !strcmp(v, value))
			return (int)i;
	}
	return -1;
}

const char *xml_child_text(const struct xml_doc *d, size_t e, const char *name)
{
	for (size_t i = e + 1; i < d->n && d->els[i].parent >= (int)e; i++)
		if (d->els[i].parent == (int)e && !strcmp(d->els[i].name, name))
			return d->els[i].text ? d->els[i].text : "";
	return "";
}

bool xml_class_is(const struct xml_el *e, const char *class)
{
	const char *v = xml_attr(e, "class");

	return v && !strcmp(v, class);
}
