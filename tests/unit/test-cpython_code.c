/*
 * Unit test of symbols/cpython_code.c: names the code objects of live
 * CPython processes, one for each interpreter installed, running
 * cpython_code_target.py, which prints what each name should be (see its
 * docstring). Needs root (process_vm_readv of a child is allowed anyway, but
 * the daemon's case is root). Exits 77 if no interpreter is installed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_writev, pipe2 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/types.h>

#include "check.h"
#include "cpython_code.h"
#include "frame.h"
#include "offcpu.h"

#ifndef TEST_SOURCE_DIR
#define TEST_SOURCE_DIR "tests/unit"
#endif

#define NAME_SIZE   1024
#define INSTR_MAX   OFFCPU_FRAME_PYTHON_INSTR_MAX
#define CODES_MAX   16
#define FAKES_MAX   64
#define REPORTS_MAX 3 /* mismatches reported in full, per code object */

static const struct {
	const char *path;
	unsigned minor;
} pythons[] = {
	{ "/root/.pyenv/versions/3.10.13/bin/python3.10", 10 },
	{ "/root/.pyenv/versions/3.11.7/bin/python3.11", 11 },
	{ "/root/.pyenv/versions/3.12.1/bin/python3.12", 12 },
	{ "/root/.pyenv/versions/3.13.0/bin/python3.13", 13 },
	{ "/usr/bin/python3.11", 11 }, /* Debian's */
};

struct code_range {
	uint32_t start, end; /* byte offsets */
	int line;	     /* 0: None */
};

struct target_code {
	char *tag, *qualname, *file;
	uint64_t addr;
	int firstlineno;
	struct code_range *ranges;
	size_t n;
};

struct target_fake {
	char *tag, *kind, *text; /* kind: exact, prefix or reject */
	uint64_t addr;
};

struct target {
	pid_t pid;
	int in_fd; /* its stdin: closing it ends it */
	FILE *out;
	unsigned minor;
	struct target_code codes[CODES_MAX];
	size_t n_codes;
	struct target_fake fakes[FAKES_MAX];
	size_t n_fakes;
	uint64_t garbage_int, garbage_str, after_str;
	uint64_t *many; /* <lambda> code objects, more than the cache holds */
	size_t n_many;
};

static uint64_t frame_of(uint64_t addr, uint32_t units)
{
	if (units > INSTR_MAX)
		units = INSTR_MAX;
	return OFFCPU_FRAME_PYTHON | (uint64_t)units << OFFCPU_FRAME_PYTHON_INSTR_SHIFT | addr;
}

/* A walk's error code in the code field (cpython_code.h). */
static uint64_t frame_err(unsigned err)
{
	return OFFCPU_FRAME_PYTHON | (uint64_t)err << 4;
}

static void parse_ranges(struct target_code *code, char *text)
{
	char *save, *tok;

	for (tok = strtok_r(text, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		struct code_range r = { 0 };
		char line[16];
		void *p;

		if (sscanf(tok, "%" SCNu32 ":%" SCNu32 ":%15s", &r.start, &r.end, line) != 3)
			continue;
		r.line = strcmp(line, "-") ? atoi(line) : 0;
		p = reallocarray(code->ranges, code->n + 1, sizeof(*code->ranges));
		if (!p)
			abort();
		code->ranges = p;
		code->ranges[code->n++] = r;
	}
}

/* Parses one line of the target's; false at "ready". */
static bool parse_line(struct target *t, char *line)
{
	char *save, *kind = strtok_r(line, "\t\n", &save);
	char *f[6] = { 0 };

	if (!kind || !strcmp(kind, "ready"))
		return false;
	for (int i = 0; i < 6; i++)
		f[i] = strtok_r(NULL, i == 5 ? "\n" : "\t\n", &save);
	if (!strcmp(kind, "version") && f[0]) {
		t->minor = (unsigned)atoi(f[0]);
	} else if (!strcmp(kind, "code") && f[4] && t->n_codes < CODES_MAX) {
		struct target_code *c = &t->codes[t->n_codes++];

		c->tag = strdup(f[0]);
		c->addr = strtoull(f[1], NULL, 10);
		c->firstlineno = atoi(f[2]);
		c->qualname = strdup(f[3]);
		c->file = strdup(f[4]);
		if (f[5])
			parse_ranges(c, f[5]);
	} else if (!strcmp(kind, "garbage") && f[1]) {
		*(strcmp(f[0], "int") ? &t->garbage_str : &t->garbage_int) =
			strtoull(f[1], NULL, 10);
	} else if (!strcmp(kind, "str") && f[1]) {
		t->after_str = strtoull(f[1], NULL, 10);
	} else if (!strcmp(kind, "fake") && f[3] && t->n_fakes < FAKES_MAX) {
		struct target_fake *k = &t->fakes[t->n_fakes++];

		k->tag = strdup(f[0]);
		k->addr = strtoull(f[1], NULL, 10);
		k->kind = strdup(f[2]);
		k->text = strdup(f[3]);
	} else if (!strcmp(kind, "many") && f[0]) {
		char *s2, *tok;

		for (tok = strtok_r(f[0], " ", &s2); tok; tok = strtok_r(NULL, " ", &s2)) {
			void *p = reallocarray(t->many, t->n_many + 1, sizeof(*t->many));

			if (!p)
				abort();
			t->many = p;
			t->many[t->n_many++] = strtoull(tok, NULL, 10);
		}
	}
	return true;
}

/* Starts python on the target script and reads what it prints up to
 * "ready"; false if it did not get there. */
static bool target_start(const char *python, struct target *t)
{
	int in[2], out[2];
	char *line = NULL;
	size_t cap = 0;
	bool ready = false;

	memset(t, 0, sizeof(*t));
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return false;
	t->pid = fork();
	if (t->pid < 0)
		return false;
	if (t->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(python, python, "-I", TEST_SOURCE_DIR "/cpython_code_target.py",
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	t->in_fd = in[1];
	t->out = fdopen(out[0], "r");
	while (t->out && getline(&line, &cap, t->out) > 0)
		if (!parse_line(t, line)) {
			ready = true;
			break;
		}
	free(line);
	return ready;
}

/* Ends the target (stdin closed) and reaps it. */
static void target_stop(struct target *t)
{
	int status;

	if (t->in_fd >= 0)
		close(t->in_fd);
	t->in_fd = -1;
	if (t->pid > 0 && waitpid(t->pid, &status, 0) < 0)
		kill(t->pid, SIGKILL);
	if (t->out)
		fclose(t->out);
	t->out = NULL;
}

static void target_free(struct target *t)
{
	for (size_t i = 0; i < t->n_codes; i++) {
		free(t->codes[i].tag);
		free(t->codes[i].qualname);
		free(t->codes[i].file);
		free(t->codes[i].ranges);
	}
	for (size_t i = 0; i < t->n_fakes; i++) {
		free(t->fakes[i].tag);
		free(t->fakes[i].kind);
		free(t->fakes[i].text);
	}
	free(t->many);
}

static const struct target_code *code_by_tag(const struct target *t, const char *tag)
{
	for (size_t i = 0; i < t->n_codes; i++)
		if (!strcmp(t->codes[i].tag, tag))
			return &t->codes[i];
	return NULL;
}

static const struct target_fake *fake_by_tag(const struct target *t, const char *tag)
{
	for (size_t i = 0; i < t->n_fakes; i++)
		if (!strcmp(t->fakes[i].tag, tag))
			return &t->fakes[i];
	return NULL;
}

/* Checks name of frame is want (rc 0) or "[python: want]" (rc -ENOENT,
 * reason). */
#define CHECK_NAME(c, t, minor, frame, want)                                                       \
	check_name(__FILE__, __LINE__, c, (t)->pid, minor, frame, want, false)
#define CHECK_WHY(c, t, minor, frame, why)                                                         \
	check_name(__FILE__, __LINE__, c, (t)->pid, minor, frame, why, true)

static bool check_name(const char *file, int line, struct cpython_code *c, pid_t pid,
		       unsigned minor, uint64_t frame, const char *want, bool reason)
{
	char got[NAME_SIZE], expect[NAME_SIZE];
	int rc = cpython_code_name(c, (uint32_t)pid, minor, frame, got, sizeof(got));

	snprintf(expect, sizeof(expect), reason ? "[python: %s]" : "%s", want);
	CHECK_AT(file, line, rc == (reason ? -ENOENT : 0) && !strcmp(got, expect),
		 "frame %#" PRIx64 ": got \"%s\" (%d), want \"%s\"", frame, got, rc, expect);
	return rc == (reason ? -ENOENT : 0) && !strcmp(got, expect);
}

/* Every instruction of code is named QUALNAME (FILE:LINE) with co_lines()'
 * LINE (co_firstlineno where None); a saturated position with the last line,
 * one past the end with co_firstlineno. */
static void check_code(struct cpython_code *c, const struct target *t,
		       const struct target_code *code)
{
	char want[NAME_SIZE];
	size_t wrong = 0, checked = 0;
	int last = code->firstlineno;
	uint32_t end = 0;

	for (size_t i = 0; i < code->n; i++) {
		const struct code_range *r = &code->ranges[i];
		int line = r->line > 0 ? r->line : code->firstlineno;

		if (r->line > 0)
			last = r->line;
		if (r->end > end)
			end = r->end;
		frame_format(want, sizeof(want), code->qualname, false, code->file, (unsigned)line);
		for (uint32_t off = r->start; off < r->end && off / 2 < INSTR_MAX; off += 2) {
			/* the entry bit must not matter */
			uint64_t frame = frame_of(code->addr, off / 2) | (off & 2);

			checked++;
			if (check_name(__FILE__, __LINE__, c, t->pid, t->minor, frame, want, false))
				continue;
			if (++wrong >= REPORTS_MAX)
				goto out;
		}
	}
	frame_format(want, sizeof(want), code->qualname, false, code->file, (unsigned)last);
	CHECK_NAME(c, t, t->minor, frame_of(code->addr, INSTR_MAX), want);
	if (end / 2 + 3 < INSTR_MAX) {
		frame_format(want, sizeof(want), code->qualname, false, code->file,
			     (unsigned)code->firstlineno);
		CHECK_NAME(c, t, t->minor, frame_of(code->addr, end / 2 + 3), want);
	}
out:
	CHECK_MSG(checked > 0 && !wrong, "%s: %zu instructions checked, %zu wrong", code->tag,
		  checked, wrong);
}

/* Forged code objects: each named as the target says, random line tables
 * at every position. */
static void check_fakes(struct cpython_code *c, const struct target *t)
{
	char got[NAME_SIZE];

	for (size_t i = 0; i < t->n_fakes; i++) {
		const struct target_fake *k = &t->fakes[i];

		if (!strcmp(k->kind, "exact")) {
			CHECK_NAME(c, t, t->minor, frame_of(k->addr, 0), k->text);
		} else if (!strcmp(k->kind, "reject")) {
			CHECK_WHY(c, t, t->minor, frame_of(k->addr, 0), k->text);
		} else {
			size_t wrong = 0;

			for (uint32_t u = 0; u <= INSTR_MAX; u += u < 4096 ? 1 : 97) {
				int rc = cpython_code_name(c, (uint32_t)t->pid, t->minor,
							   frame_of(k->addr, u), got, sizeof(got));

				wrong += rc != 0 || strncmp(got, k->text, strlen(k->text)) ||
					 got[strlen(got) - 1] != ')';
			}
			CHECK_MSG(!wrong, "%s: %zu positions misnamed (last \"%s\")", k->tag, wrong,
				  got);
		}
	}
}

/* A code object changed in place (as if freed and its address reused) is
 * named by the old name until the next pass, then read again. */
static void check_recheck(struct cpython_code *c, struct target *t)
{
	const struct target_fake *swap = fake_by_tag(t, "swap");
	/* co_name, and co_qualname from 3.11 on: where the module reads them */
	static const unsigned name_offsets[][2] = {
		[10] = { 112, 112 }, [11] = { 120, 128 }, [12] = { 120, 128 }, [13] = { 120, 128 }
	};
	char want[NAME_SIZE];
	size_t count;

	CHECK(swap && t->after_str);
	if (!swap || !t->after_str)
		return;
	CHECK_NAME(c, t, t->minor, frame_of(swap->addr, 0), swap->text);
	count = cpython_code_count(c);
	for (int i = 0; i < 2; i++) {
		struct iovec local = { &t->after_str, sizeof(t->after_str) };
		struct iovec remote = { (void *)(uintptr_t)(swap->addr + name_offsets[t->minor][i]),
					sizeof(t->after_str) };

		CHECK(process_vm_writev(t->pid, &local, 1, &remote, 1, 0) ==
		      (ssize_t)sizeof(t->after_str));
	}
	CHECK_NAME(c, t, t->minor, frame_of(swap->addr, 0), swap->text); /* checked this pass */
	cpython_code_pass(c);
	snprintf(want, sizeof(want), "after_fn%s", strchr(swap->text, ' '));
	CHECK_NAME(c, t, t->minor, frame_of(swap->addr, 0), want);
	CHECK(cpython_code_count(c) == count);
}

/* More code objects than the cache holds, in one pass: each is named; the
 * cache stays within its bound. */
static void check_many(struct cpython_code *c, const struct target *t)
{
	char want[NAME_SIZE];
	size_t wrong = 0;

	CHECK(t->n_many > CPYTHON_CODE_ENTRIES_MAX);
	frame_format(want, sizeof(want), "<lambda>", false, "<string>", 1);
	cpython_code_pass(c);
	for (size_t i = 0; i < t->n_many && wrong < REPORTS_MAX; i++)
		wrong += !CHECK_NAME(c, t, t->minor, frame_of(t->many[i], 0), want);
	CHECK(cpython_code_count(c) <= CPYTHON_CODE_ENTRIES_MAX);
	CHECK(cpython_code_count(c) > 0);
	cpython_code_pass(c);
	for (size_t i = 0; i < 100 && i < t->n_many; i++)
		CHECK_NAME(c, t, t->minor, frame_of(t->many[i], 0), want);
}

static void check_errors(struct cpython_code *c, const struct target *t, uint64_t nap)
{
	char got[NAME_SIZE];
	int rc;

	/* objects that are not code objects */
	for (int i = 0; i < 2; i++) {
		uint64_t addr = i ? t->garbage_str : t->garbage_int;

		CHECK(addr);
		rc = cpython_code_name(c, (uint32_t)t->pid, t->minor, frame_of(addr, 0), got,
				       sizeof(got));
		CHECK_MSG(rc == -ENOENT && (!strcmp(got, "[python: not a code object]") ||
					    !strcmp(got, "[python: unreadable code]")),
			  "garbage %#" PRIx64 ": \"%s\"", addr, got);
	}
	CHECK_WHY(c, t, t->minor, frame_of(0x1000, 0), "unreadable code");
	CHECK_WHY(c, t, t->minor, frame_of(0x7ffffffff000ull, 3), "unreadable code");
	CHECK_WHY(c, t, t->minor, frame_err(OFFCPU_PYTHON_ERR_READ), "unreadable frame");
	CHECK_WHY(c, t, t->minor, frame_err(OFFCPU_PYTHON_ERR_DEPTH) | 1, "deeper than the stack");
	CHECK_WHY(c, t, t->minor, frame_err(OFFCPU_PYTHON_ERR_LOOP), "frame chain loops");
	CHECK_WHY(c, t, t->minor, frame_err(0), "not a code object");
	CHECK_WHY(c, t, t->minor, frame_err(4), "not a code object");
	CHECK_WHY(c, t, t->minor, frame_of(nap, 0) | OFFCPU_FRAME_FILE, "not a code object");
	CHECK_WHY(c, t, 9, frame_of(nap, 0), "unknown version");
	CHECK_WHY(c, t, 14, frame_of(nap, 0), "unknown version");
	rc = cpython_code_name(c, 0x7ffffff0u, t->minor, frame_of(nap, 0), got, sizeof(got));
	CHECK(rc == -ENOENT);
	CHECK_STR(got, "[python: exited]");
	/* truncated, always terminated */
	rc = cpython_code_name(c, (uint32_t)t->pid, t->minor, frame_of(nap, 0), got, 4);
	CHECK(rc == 0 && !strcmp(got, "nap"));
	rc = cpython_code_name(c, (uint32_t)t->pid, t->minor, frame_of(0x1000, 0), got, 5);
	CHECK(rc == -ENOENT && !strcmp(got, "[pyt"));
}

/* The name of code's first instruction. */
static void first_name(const struct target_code *code, char *want)
{
	int line = code->n && code->ranges[0].line > 0 ? code->ranges[0].line : code->firstlineno;

	frame_format(want, NAME_SIZE, code->qualname, false, code->file, (unsigned)line);
}

/* After the process exits, its entries name as last read, also after
 * the next pass and with its version no longer known (minor 0); forget()
 * drops them, and then its frames are "exited". */
static void check_exit(struct cpython_code *c, struct target *t)
{
	const struct target_code *nap = code_by_tag(t, "nap"), *lambda = code_by_tag(t, "lambda");
	char want[NAME_SIZE];
	size_t count;

	if (!nap || !lambda)
		return;
	/* each read in one pass, nap checked again in the next */
	cpython_code_pass(c);
	first_name(lambda, want);
	CHECK_NAME(c, t, t->minor, frame_of(lambda->addr, 0), want);
	first_name(nap, want);
	CHECK_NAME(c, t, t->minor, frame_of(nap->addr, 0), want);
	cpython_code_pass(c);
	CHECK_NAME(c, t, t->minor, frame_of(nap->addr, 0), want);
	target_stop(t);
	CHECK_NAME(c, t, t->minor, frame_of(nap->addr, 0), want);
	cpython_code_pass(c);
	CHECK_NAME(c, t, t->minor, frame_of(nap->addr, 0), want);
	CHECK_NAME(c, t, 0, frame_of(nap->addr, 0), want);
	first_name(lambda, want);
	CHECK_NAME(c, t, t->minor, frame_of(lambda->addr, 0), want);
	CHECK_WHY(c, t, t->minor, frame_of(lambda->addr + 4096, 0), "exited"); /* never read */

	count = cpython_code_count(c);
	CHECK(count > 0);
	cpython_code_forget(c, (uint32_t)t->pid + 1);
	CHECK(cpython_code_count(c) == count);
	cpython_code_forget(c, (uint32_t)t->pid);
	CHECK(cpython_code_count(c) == 0);
	CHECK_WHY(c, t, 0, frame_of(nap->addr, 0), "exited");
}

static void check_python(const char *python, unsigned minor)
{
	struct cpython_code *c = NULL;
	const struct target_code *nap;
	struct target t;
	int before = check_failures;

	if (!target_start(python, &t)) {
		CHECK_MSG(false, "%s: no \"ready\" from the target", python);
		target_stop(&t);
		target_free(&t);
		return;
	}
	CHECK(t.minor == minor);
	nap = code_by_tag(&t, "nap");
	CHECK(t.n_codes == 9 && nap);
	CHECK(cpython_code_new(&c) == 0);
	if (!c || !nap || t.minor != minor) {
		target_stop(&t);
		target_free(&t);
		cpython_code_free(c);
		return;
	}
	for (size_t i = 0; i < t.n_codes; i++)
		check_code(c, &t, &t.codes[i]);
	CHECK(cpython_code_count(c) == t.n_codes);
	check_errors(c, &t, nap->addr);
	CHECK(t.n_fakes > 16);
	check_fakes(c, &t);
	check_recheck(c, &t);
	check_many(c, &t);
	check_exit(c, &t);
	cpython_code_free(c);
	target_free(&t);
	fprintf(stderr, "%s: %s\n", python, check_failures == before ? "ok" : "FAILED");
}

int main(void)
{
	size_t found = 0;

	cpython_code_free(NULL);
	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++) {
		if (access(pythons[i].path, X_OK) < 0) {
			fprintf(stderr, "skipped: %s not found\n", pythons[i].path);
			continue;
		}
		found++;
		check_python(pythons[i].path, pythons[i].minor);
	}
	if (!found)
		return 77;
	return CHECK_DONE();
}
