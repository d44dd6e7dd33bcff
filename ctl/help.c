/* help: see help.h. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "help.h"

/* The next line of text from *p: its start and length (without '\n'). */
static bool next_line(const char **p, const char **ret, size_t *ret_len)
{
	const char *nl;

	if (!**p)
		return false;
	nl = strchr(*p, '\n');
	*ret = *p;
	*ret_len = nl ? (size_t)(nl - *p) : strlen(*p);
	*p = nl ? nl + 1 : *p + *ret_len;
	return true;
}

static size_t indent(const char *line, size_t len)
{
	size_t n = 0;

	while (n < len && line[n] == ' ')
		n++;
	return n;
}

/* The paragraph (up to a blank line) that starts with title, or NULL. */
static const char *paragraph(const char *usage, const char *title, size_t *ret_len)
{
	const char *p = usage, *line, *start = NULL;
	size_t len;
	bool blank_before = true;

	while (next_line(&p, &line, &len)) {
		if (start && !len) {
			*ret_len = line - start;
			return start;
		}
		if (!start && blank_before && !strncmp(line, title, strlen(title)))
			start = line;
		blank_before = !len;
	}
	if (start)
		*ret_len = strlen(start);
	return start;
}

static void put_paragraph(const char *usage, const char *title, FILE *out)
{
	size_t len;
	const char *text = paragraph(usage, title, &len);

	if (text)
		fprintf(out, "\n%.*s", (int)len, text);
}

/* The paragraph "Examples of CMD:", under the heading "Examples:". */
static void put_examples(const char *usage, const char *cmd, FILE *out)
{
	char title[64];
	const char *text, *body;
	size_t len;

	snprintf(title, sizeof(title), "Examples of %s:", cmd);
	text = paragraph(usage, title, &len);
	if (!text)
		return;
	body = memchr(text, '\n', len);
	if (body)
		fprintf(out, "\nExamples:%.*s", (int)(text + len - body), body);
}

/* text[0..len) in lines of at most 79 columns, broken at spaces (a longer
 * word on a line of its own). */
static void put_wrapped(const char *text, size_t len, FILE *out)
{
	const size_t width = 79;

	while (len > width) {
		size_t cut = width;

		while (cut > 0 && text[cut] != ' ')
			cut--;
		if (cut == 0)
			for (cut = width; cut < len && text[cut] != ' '; cut++)
				;
		fprintf(out, "%.*s\n", (int)cut, text);
		for (text += cut, len -= cut; len && *text == ' '; text++, len--)
			;
	}
	if (len)
		fprintf(out, "%.*s\n", (int)len, text);
}

/* Whether a word (letters, digits, '-') equal to word is in text[0..len). */
static bool has_word(const char *text, size_t len, const char *word)
{
	size_t wlen = strlen(word);

	for (const char *s = text; s + wlen <= text + len; s++) {
		bool left = s == text || !(s[-1] == '-' || (s[-1] >= 'A' && s[-1] <= 'Z') ||
					   (s[-1] >= 'a' && s[-1] <= 'z'));
		bool right = s + wlen == text + len ||
			     !(s[wlen] == '-' || (s[wlen] >= 'A' && s[wlen] <= 'Z') ||
			       (s[wlen] >= 'a' && s[wlen] <= 'z'));

		if (left && right && !strncmp(s, word, wlen))
			return true;
	}
	return false;
}

int help_command(const char *usage, const char *cmd, FILE *out)
{
	const char *p = usage, *line, *entry = NULL, *first = NULL, *opts = NULL;
	size_t len, first_len = 0, entry_len = 0, clen = strlen(cmd), syn;
	bool in_commands = false;
	char desc[1024];

	while (next_line(&p, &line, &len)) {
		if (!in_commands) {
			in_commands = len == 9 && !strncmp(line, "Commands:", 9);
			continue;
		}
		if (!len)
			break; /* the end of the command list */
		if (entry && indent(line, len) > 2) {
			entry_len = line + len - entry;
			continue;
		}
		if (entry)
			break;
		if (indent(line, len) == 2 && len >= 2 + clen && !strncmp(line + 2, cmd, clen) &&
		    (len == 2 + clen || line[2 + clen] == ' ')) {
			first = line + 2;
			first_len = len - 2;
			entry = p; /* the lines after the first */
		}
	}
	if (!first)
		return -ENOENT;
	/* "capture [OPTIONS]           what it does": synopsis, 2+ spaces, text,
	 * which goes on in the lines indented to its column */
	for (syn = 0; syn < first_len && strncmp(first + syn, "  ", 2); syn++)
		;
	fprintf(out, "Usage: offcpuctl [--socket PATH] [--json] %.*s\n\n", (int)syn, first);
	while (syn < first_len && first[syn] == ' ')
		syn++;
	snprintf(desc, sizeof(desc), "%.*s", (int)(first_len - syn), first + syn);
	for (p = entry; p < entry + entry_len; opts = NULL) {
		opts = p;
		next_line(&p, &line, &len);
		if (indent(line, len) != 2 + syn)
			break;
		snprintf(desc + strlen(desc), sizeof(desc) - strlen(desc), "%s%.*s",
			 *desc ? " " : "", (int)(len - 2 - syn), line + 2 + syn);
	}
	if (*desc)
		put_wrapped(desc, strlen(desc), out);
	if (opts) {
		/* the options, indented 6 in the list: 2 here */
		fputc('\n', out);
		for (const char *q = opts; q < entry + entry_len && next_line(&q, &line, &len);) {
			size_t cut = indent(line, len) >= 4 ? 4 : indent(line, len);

			fprintf(out, "%.*s\n", (int)(len - cut), line + cut);
		}
	}
	/* "the who options", not "who woke it" */
	if (memmem(entry, entry_len, "who options", 11))
		put_paragraph(usage, "Who options", out);
	if (has_word(entry, entry_len, "filters"))
		put_paragraph(usage, "Stack filters", out);
	if (has_word(entry, entry_len, "output"))
		put_paragraph(usage, "Output options", out);
	if (has_word(first, first_len, "T") || has_word(entry, entry_len, "T") ||
	    has_word(entry, entry_len, "RANGE"))
		put_paragraph(usage, "Times T", out);
	put_paragraph(usage, "Global options", out);
	put_paragraph(usage, "Exit codes", out);
	put_examples(usage, cmd, out);
	return 0;
}

int help_requested(int argc, char **args)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(args[i], "--"))
			return 0;
		if (!strcmp(args[i], "--help") || !strcmp(args[i], "-h"))
			return 1;
	}
	return 0;
}
