/*
 * stack_filter: which stacks to keep. The one implementation behind every
 * stack filter: a capture's reply and the window it stores
 * (daemon/profile/capture.c), exports (daemon/store/store_jobs.c; the store's SQL narrows
 * rows by the same pids, comm and states first, for speed) and offcpuctl's
 * offline flamegraph and diff (folded text). Does not log.
 *
 * A stack is kept if it passes every filter that is given:
 *   comm     the thread's name is exactly comm (bytes, case-sensitive)
 *   pids     its process (tgid) is one of pids
 *   states   its thread state at switch-out is in state_mask (thread_state.h:
 *            R running/preempted, S sleeping, D disk, O other)
 *   grep     some frame matches grep
 *   exclude  no frame matches exclude
 * grep and exclude are POSIX extended regexes (regcomp() with REG_EXTENDED),
 * unanchored, matched against every frame name separately, so '^' and '$'
 * anchor a whole frame: '^do_command$'. A frame with a source line
 * (common/frame.h, "f (file.c:12)") matches if either "f" or the whole
 * matches. The frames are those the stack's
 * folded line prints (common/folded_line.h), whichever part they are in: the
 * comm (the first frame), the user and kernel frames, the pseudo-frame that
 * ends a run-queue, on-CPU or block-queue row ("[runqueue]", "[on-cpu]",
 * "[queued]"), and the waker part of wakeup, offwake and chain rows (the
 * wakers' frames and names; a wakeup row prints only its comm and that
 * part). The delimiters "-" and "--" and empty names are not frames.
 *
 * Folded text records neither pids nor thread states: a filter made for it
 * (spec.folded) refuses them. There the comm is a line's first frame, as the
 * daemon writes it (a ';' or line break in a thread name becomes '_').
 */
#ifndef STACK_FILTER_H
#define STACK_FILTER_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How grep and exclude are compiled, wherever they are. */
#define STACK_FILTER_REGEX_FLAGS (REG_EXTENDED | REG_NOSUB)

/* A sample's tgid or state that was not recorded. */
#define STACK_FILTER_UNKNOWN UINT32_MAX

struct stack_filter;

struct stack_filter_spec {
	const char *comm;     /* exact thread name; NULL or "": any */
	const uint32_t *pids; /* process ids (tgids) */
	size_t n_pids;	      /* 0: any */
	uint32_t state_mask;  /* 1 << thread state; 0 or THREAD_STATE_ALL: any */
	const char *grep;     /* POSIX ERE per frame; NULL or "": none */
	const char *exclude;  /* POSIX ERE per frame; NULL or "": none */
	bool folded;	      /* for folded text: pids and states are refused */
};

/* One row to decide on. Strings are ';'-joined frame names; NULL is "". */
struct stack_filter_sample {
	const char *comm;
	uint32_t tgid;	    /* or STACK_FILTER_UNKNOWN */
	uint32_t state;	    /* thread state (enum offcpu_state), or STACK_FILTER_UNKNOWN */
	uint32_t kind;	    /* enum proto_kind: which parts its folded line prints */
	const char *ustack; /* root->leaf */
	const char *kstack; /* root->leaf */
	const char *chain;  /* the waker part, folded order, "-" and "--" included */
};

/*
 * Makes a filter of spec (copied: spec's strings and pids may go after).
 * Returns 0; -EINVAL with a message in err (a pattern that does not compile;
 * pids or states for folded text); or -ENOMEM. *ret is set only on success.
 */
int stack_filter_new(const struct stack_filter_spec *spec, struct stack_filter **ret, char *err,
		     size_t err_size);
void stack_filter_free(struct stack_filter *f); /* NULL-safe */

/* Whether f keeps s. A filter on a tgid or state that s does not record
 * (STACK_FILTER_UNKNOWN) drops it. */
bool stack_filter_keep(const struct stack_filter *f, const struct stack_filter_sample *s);

/* Whether f keeps the stack of a folded line: stack[0..len), frames joined
 * by ';', the counts already cut off; its first frame is the comm. */
bool stack_filter_keep_folded(const struct stack_filter *f, const char *stack, size_t len);

/*
 * Filters len bytes of folded text (flamegraph.pl's input, 2 or 3 columns)
 * in place and returns its new length. A dropped line leaves its '\n', so
 * line numbers stay; lines without a count (empty or invalid ones) stay,
 * for the reader to count. The stack is what stands before the last one or
 * two whitespace-separated counts, as flamegraph.pl reads it.
 */
size_t stack_filter_folded(const struct stack_filter *f, char *text, size_t len);

/*
 * Whether regcomp() and regexec() are cheap on pattern. glibc copies a
 * subexpression once per repetition an interval or '+' asks for, its work
 * grows fast with repetitions of repetitions, matching slows with the
 * square of the copies, and back-references make matching exponential:
 * regcomp() takes 45 s and 8 GiB for "a{0,32767}", a minute for
 * "((a?){1,255})+"; regexec() as long for "(a|aa)+\1c" on a long frame.
 * So refused: bounds above 255 (POSIX's RE_DUP_MAX), escapes in an
 * interval (glibc's "{1\,9}" and "{\0,9}"), repetitions nested
 * more than two deep, back-references, and patterns that would grow past
 * 1024 parts (a pattern of PROTO_REGEX_MAX bytes without repetitions fits).
 * If refused, the reason is in why. Only regcomp() tells whether the
 * pattern is valid.
 */
bool stack_filter_regex_cheap(const char *pattern, char *why, size_t why_size);

/* Whether pattern compiles as grep and exclude do, and cheaply (see
 * stack_filter_regex_cheap()); if not, the reason is in why. For early
 * checks: request parsing, offcpuctl's options. */
static inline bool stack_filter_regex_valid(const char *pattern, char *why, size_t why_size)
{
	regex_t re;
	int r;

	if (!stack_filter_regex_cheap(pattern, why, why_size))
		return false;
	r = regcomp(&re, pattern, STACK_FILTER_REGEX_FLAGS);
	if (r == 0) {
		regfree(&re);
		return true;
	}
	regerror(r, &re, why, why_size);
	return false;
}

#endif
