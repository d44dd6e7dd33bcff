/* A reply's notes: see result_notes.h. */
#define _GNU_SOURCE /* vasprintf */
#include "result_notes.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drain.h"
#include "proto.h"
#include "thread_state.h"

int result_notes_add(struct result_notes *notes, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	if (notes->n == RESULT_NOTES_MAX)
		return 0;
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	notes->v[notes->n++] = s;
	return 0;
}

void result_notes_free(struct result_notes *notes)
{
	for (size_t i = 0; i < notes->n; i++)
		free(notes->v[i]);
	notes->n = 0;
}

char *result_notes_no_data(const struct result_notes *notes)
{
	char msg[2048] = "nothing to draw";

	for (size_t i = 0; i < notes->n; i++)
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s%s", i ? "; " : ": ",
			 notes->v[i]);
	return proto_reply_error(PROTO_ERR_NO_DATA, msg);
}

static int add_frame_share(void *arg, const struct profile_row *row)
{
	struct result_frame_shares *s = arg;
	size_t len = strlen(DRAIN_TRUNCATED_FRAME);

	s->total_ns += row->sum_ns;
	if (strstr(row->ustack, RESULT_NOTES_ANONYMOUS_FRAME))
		s->anonymous_ns += row->sum_ns;
	if (!strncmp(row->ustack, DRAIN_TRUNCATED_FRAME, len) &&
	    (row->ustack[len] == ';' || !row->ustack[len]))
		s->truncated_ns += row->sum_ns;
	return 0;
}

void result_frame_shares(const struct profile *p, struct result_frame_shares *ret)
{
	*ret = (struct result_frame_shares){ 0 };
	profile_foreach(p, add_frame_share, ret);
}

/* Whether part is a noticeable share of total. */
static bool noticeable(uint64_t part, uint64_t total)
{
	return part && (double)part * 100 >= (double)total * RESULT_NOTES_FRAME_SHARE_PCT;
}

int result_notes_frames(struct result_notes *notes, const struct result_frame_shares *s)
{
	int r = 0;

	if (noticeable(s->anonymous_ns, s->total_ns))
		r = result_notes_add(
			notes,
			"%.0f%% of the time is in frames " RESULT_NOTES_ANONYMOUS_FRAME
			": code in anonymous memory (a JIT) that no perf map names; have the "
			"runtime write /tmp/perf-PID.map (Node: --perf-basic-prof; the JVM: "
			"jcmd PID Compiler.perfmap) and capture again (docs/SYMBOLS.md, JIT code)",
			100.0 * s->anonymous_ns / s->total_ns);
	if (r == 0 && noticeable(s->truncated_ns, s->total_ns))
		r = result_notes_add(
			notes,
			"%.0f%% of the time has user stacks with the root frame [truncated]: the "
			"walk stopped before the thread's first frame (a new process's first "
			"blocks before its unwind tables were read, depth limit, a DWARF "
			"expression it does not evaluate, unreadable stack memory, data where a "
			"frame-pointer walk looked for a return address), so callers "
			"are missing above it; offcpuctl status shows the unwinder's "
			"state (docs/UNWINDING.md, Truncated stacks)",
			100.0 * s->truncated_ns / s->total_ns);
	return r;
}

/* Appends " --flag value" to buf, value quoted for a shell where needed. */
static void append_flag(char *buf, size_t size, const char *flag, const char *value)
{
	size_t len = strlen(buf);
	bool plain = *value && strspn(value, "abcdefghijklmnopqrstuvwxyz"
					     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/@+=-") ==
				       strlen(value);

	if (len >= size)
		return;
	snprintf(buf + len, size - len, plain ? "%s%s %s" : "%s%s '%s'", len ? " " : "", flag,
		 value);
}

void result_notes_filters(char *buf, size_t size, const uint32_t *pids, size_t n_pids,
			  uint32_t state_mask, const char *comm, const char *grep,
			  const char *exclude, const char *cgroup, const char *unit,
			  const char *container)
{
	char list[64] = "";

	if (!size)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < n_pids; i++) {
		size_t len = strlen(list);

		if (len + 12 >= sizeof(list)) {
			snprintf(list + len, sizeof(list) - len, ",...");
			break;
		}
		snprintf(list + len, sizeof(list) - len, "%s%u", i ? "," : "", pids[i]);
	}
	if (*list)
		append_flag(buf, size, "--pid", list);
	if ((state_mask & THREAD_STATE_ALL) != THREAD_STATE_ALL) {
		list[0] = '\0';
		for (unsigned s = 0; s < THREAD_STATE_COUNT; s++)
			if (state_mask & (1u << s))
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 *list ? "," : "", thread_state_name(s));
		append_flag(buf, size, "--state", list);
	}
	if (comm && *comm)
		append_flag(buf, size, "--comm", comm);
	if (grep && *grep)
		append_flag(buf, size, "--grep", grep);
	if (exclude && *exclude)
		append_flag(buf, size, "--exclude", exclude);
	if (cgroup && *cgroup)
		append_flag(buf, size, "--cgroup", cgroup);
	if (unit && *unit)
		append_flag(buf, size, "--unit", unit);
	if (container && *container)
		append_flag(buf, size, "--container", container);
}

bool result_notes_thread_of(const char *proc_root, uint32_t tid, uint32_t *ret_tgid)
{
	char path[256], line[256];
	unsigned long tgid = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u/status", proc_root, tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "Tgid: %lu", &tgid) == 1;
	fclose(f);
	if (!found || !tgid || tgid == tid)
		return false;
	*ret_tgid = (uint32_t)tgid;
	return true;
}
