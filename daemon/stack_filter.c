/* stack_filter: see stack_filter.h. */
#include "stack_filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compile(regex_t *re, bool *has, const char *pattern, const char *what, char *err,
		   size_t err_size)
{
	char msg[256];
	int r;

	*has = false;
	if (!pattern || !*pattern)
		return 0;
	r = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
	if (r) {
		regerror(r, re, msg, sizeof(msg));
		snprintf(err, err_size, "bad %s pattern '%s': %s", what, pattern, msg);
		return -EINVAL;
	}
	*has = true;
	return 0;
}

int stack_filter_init(struct stack_filter *f, const char *grep, const char *exclude, char *err,
		      size_t err_size)
{
	int r;

	r = compile(&f->grep, &f->has_grep, grep, "grep", err, err_size);
	if (r < 0)
		return r;
	r = compile(&f->exclude, &f->has_exclude, exclude, "exclude", err, err_size);
	if (r < 0 && f->has_grep) {
		regfree(&f->grep);
		f->has_grep = false;
	}
	return r;
}

void stack_filter_done(struct stack_filter *f)
{
	if (f->has_grep)
		regfree(&f->grep);
	if (f->has_exclude)
		regfree(&f->exclude);
	f->has_grep = f->has_exclude = false;
}

/* True if re matches any frame of the ';'-joined list. */
static bool any_frame(const regex_t *re, const char *frames)
{
	char buf[1024];

	while (*frames) {
		size_t len = strcspn(frames, ";");
		bool hit;

		if (len < sizeof(buf)) {
			memcpy(buf, frames, len);
			buf[len] = '\0';
			hit = !regexec(re, buf, 0, NULL, 0);
		} else { /* a frame name this long is rare: allocate */
			char *big = strndup(frames, len);

			hit = big && !regexec(re, big, 0, NULL, 0);
			free(big);
		}
		if (hit)
			return true;
		frames += len + (frames[len] == ';');
	}
	return false;
}

static bool stack_matches(const regex_t *re, const char *comm, const char *ustack,
			  const char *kstack)
{
	return !regexec(re, comm, 0, NULL, 0) || any_frame(re, ustack) || any_frame(re, kstack);
}

bool stack_filter_keep(const struct stack_filter *f, const char *comm, const char *ustack,
		       const char *kstack)
{
	if (f->has_grep && !stack_matches(&f->grep, comm, ustack, kstack))
		return false;
	return !(f->has_exclude && stack_matches(&f->exclude, comm, ustack, kstack));
}
