/*
 * stack_filter: --grep and --exclude, one implementation for every place
 * that filters stacks. Each is a POSIX extended regex matched against every
 * frame name separately (the comm counts as a frame), so anchors work per
 * frame: '^do_command$'. A stack is kept if some frame matches grep (when
 * given) and no frame matches exclude (when given). Does not log.
 */
#ifndef STACK_FILTER_H
#define STACK_FILTER_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

struct stack_filter {
	regex_t grep, exclude;
	bool has_grep, has_exclude;
};

/* Compiles the patterns ("" or NULL: none). Returns 0, or -EINVAL with the
 * regex error in err (nothing to free then). */
int stack_filter_init(struct stack_filter *f, const char *grep, const char *exclude, char *err,
		      size_t err_size);
void stack_filter_done(struct stack_filter *f);

/* ustack and kstack are ';'-joined frame lists. */
bool stack_filter_keep(const struct stack_filter *f, const char *comm, const char *ustack,
		       const char *kstack);

#endif
