/*
 * xml_read: a small XML reader for the unit tests of the SVG renderers. It
 * fails on what is not well-formed: text or a second element outside the
 * root, unbalanced tags, unquoted or repeated attributes, a raw '<' in text
 * or values, a '&' that is not one of the five entities (the renderers
 * write no others), a comment, DOCTYPE or CDATA section. It keeps each
 * element's name, attributes and first non-blank text, unescaped.
 */
#ifndef XML_READ_H
#define XML_READ_H

#include <stdbool.h>
#include <stddef.h>

#define XML_ATTRS_MAX 8

struct xml_el {
	char name[16];
	int parent; /* index in els, -1 for the root */
	size_t n_attrs;
	char attr_names[XML_ATTRS_MAX][24];
	const char *attr_values[XML_ATTRS_MAX]; /* unescaped, in the document's copy */
	char *text;				/* its first non-blank text, unescaped (malloc'd) */
};

struct xml_doc {
	char *buf; /* a copy of the text, values unescaped in place */
	struct xml_el *els;
	size_t n, cap;
};

/* Parses text into d (released with xml_free): 0, or 1 + the offset in
 * text where it stopped being well-formed. */
size_t xml_parse(struct xml_doc *d, const char *text);
void xml_free(struct xml_doc *d);

/* Undoes the five escapes of len bytes at src into dst (cap > 0 bytes,
 * always terminated; dst may be src): false, where it stopped, at a raw
 * '<' or a '&' that does not start one of them. */
bool xml_unescape(char *dst, size_t cap, const char *src, size_t len);

const char *xml_attr(const struct xml_el *e, const char *name); /* NULL if absent */
double xml_num(const struct xml_el *e, const char *name);	/* NAN if absent */
bool xml_class_is(const struct xml_el *e, const char *class);
/* The index of the first element named name whose attribute attr is value,
 * or -1. */
int xml_find(const struct xml_doc *d, const char *name, const char *attr, const char *value);
/* The text of element e's first child named name, or "". */
const char *xml_child_text(const struct xml_doc *d, size_t e, const char *name);

#endif
