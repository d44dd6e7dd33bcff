/* push_labels: see push_labels.h. */
#include "push_labels.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

bool push_label_name_ok(const char *name, size_t len)
{
	static const char *const own[] = { "service_name", "host", "kind" };

	if (!len || (len >= 2 && !strncmp(name, "__", 2)))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (i && c >= '0' && c <= '9')))
			return false;
	}
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (strlen(own[i]) == len && !memcmp(own[i], name, len))
			return false;
	return true;
}

/* s[0, *len) without blanks at either end. */
static char *trim(char *s, size_t *len)
{
	while (*len && isspace((unsigned char)*s))
		s++, (*len)--;
	while (*len && isspace((unsigned char)s[*len - 1]))
		(*len)--;
	s[*len] = '\0';
	return s;
}

static bool value_ok(const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] < ' ' || v[i] == 0x7f || v[i] == '=')
			return false;
	return len > 0;
}

int push_labels_parse(const char *text, char *buf, size_t buf_size, struct push_label *ret,
		      size_t max, size_t *ret_n)
{
	size_t n = 0, len = strlen(text);
	char *s = buf;

	if (len >= buf_size)
		return -EINVAL;
	memcpy(buf, text, len + 1);
	*ret_n = 0;
	if (!len)
		return 0;
	for (;;) {
		char *comma = strchr(s, ','), *eq, *name, *value;
		size_t name_len, value_len;

		if (comma)
			*comma = '\0';
		eq = strchr(s, '=');
		if (!eq || n == max)
			return -EINVAL;
		*eq = '\0';
		name_len = eq - s;
		value_len = strlen(eq + 1);
		name = trim(s, &name_len);
		value = trim(eq + 1, &value_len);
		if (!push_label_name_ok(name, name_len) || !value_ok(value, value_len))
			return -EINVAL;
		for (size_t i = 0; i < n; i++)
			if (!strcmp(ret[i].name, name))
				return -EINVAL;
		ret[n++] = (struct push_label){ name, value };
		*ret_n = n;
		if (!comma)
			return 0;
		s = comma + 1;
	}
}
