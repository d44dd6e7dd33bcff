/*
 * Unit test of symbols/proc_files.c on the real /proc: a child running a
 * copy of this test's own executable is noted, its executable deleted, the
 * child killed (a zombie, then reaped); its mappings and its deleted file
 * are still there, the file readable through its own descriptor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "proc_files.h"
#include "proc_maps.h"

static char dir[] = "/tmp/test-proc_files.XXXXXX";
static char exe[64];

struct found {
	int lines;
	struct proc_map exe_map; /* the first mapping of exe */
	char exe_path[sizeof(exe)];
};

static int find_exe(void *arg, char *line)
{
	struct found *f = arg;
	struct proc_map m;

	f->lines++;
	CHECK(proc_maps_parse(line, &m) && proc_map_exec(&m));
	if (!f->exe_path[0] && !strcmp(m.path, exe)) {
		f->exe_map = m;
		snprintf(f->exe_path, sizeof(f->exe_path), "%s", m.path);
	}
	return 0;
}

static int stop_at_first(void *arg, char *line)
{
	(void)line;
	++*(int *)arg;
	return -EINTR;
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0700);
	ssize_t n;

	CHECK(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		CHECK(write(out, buf, n) == n);
	close(in);
	close(out);
}

/* The /proc/PID/maps lines of pid's executable mappings, as the unwinder
 * hands them over (malloc'd, *len bytes; "" if it has none); *first the
 * first of them with a file, if first is not NULL. */
static char *exec_lines(pid_t pid, size_t *len, struct proc_map *first)
{
	char path[64], line[4096], parsed[sizeof(line)], *lines = NULL;
	FILE *maps, *mem = open_memstream(&lines, len);
	struct proc_map m;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	maps = fopen(path, "re");
	CHECK(mem != NULL);
	while (maps && fgets(line, sizeof(line), maps)) {
		memcpy(parsed, line, sizeof(line));
		if (!proc_maps_parse(parsed, &m) || !proc_map_exec(&m))
			continue;
		if (first && !first->ino && m.path[0] == '/')
			*first = m;
		fputs(line, mem);
	}
	if (maps)
		fclose(maps);
	CHECK(fclose(mem) == 0);
	return lines;
}

/* proc_files_note() of the executable mappings pid has now. */
static int note(struct proc_files *pf, pid_t pid)
{
	size_t len;
	char *lines = exec_lines(pid, &len, NULL);
	int r = proc_files_note(pf, pid, lines, len);

	free(lines);
	return r;
}

/* The maps line of m, the executable's mapping, as proc_files_keep() takes it. */
static void keep_line(char *buf, size_t size, const struct proc_map *m)
{
	snprintf(buf, size, "%llx-%llx r-xp %08llx %02x:%02x %llu %s\n",
		 (unsigned long long)m->start, (unsigned long long)m->end,
		 (unsigned long long)m->pgoff, major(m->dev), minor(m->dev),
		 (unsigned long long)m->ino, exe);
}

/* Waits until pid runs exe (its exec is done and its maps are up). */
static void wait_exec(pid_t pid)
{
	char link[64], target[sizeof(exe)];

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	for (int i = 0; i < 5000; i++) {
		ssize_t n = readlink(link, target, sizeof(target) - 1);

		if (n > 0 && (target[n] = '\0', !strcmp(target, exe)))
			return;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	CHECK(!"the child did not exec");
}

int main(int argc, char **argv)
{
	struct proc_files_stats st;
	struct proc_files *pf;
	struct found f = { 0 };
	char magic[4];
	struct stat sb;
	size_t lines_len = 0;
	int fd, stops = 0;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "--sleep")) {
		pause();
		return 0;
	}
	CHECK(mkdtemp(dir));
	snprintf(exe, sizeof(exe), "%s/exe", dir);
	copy_file("/proc/self/exe", exe);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		execl(exe, exe, "--sleep", (char *)NULL);
		_exit(127);
	}
	wait_exec(pid);

	CHECK(proc_files_new("/proc", &pf) == 0);
	CHECK(proc_files_maps(pf, pid, find_exe, &f) == -ENOENT);
	CHECK(note(pf, pid) == 0);
	CHECK(note(pf, pid) == 0); /* again: replaced, files held once */
	proc_files_stats(pf, &st);
	CHECK(st.processes == 1 && st.exited == 0);
	CHECK(st.files >= 2); /* exe and libc at least */
	{
		uint32_t ns_pid = 99;

		/* Read when noted: in our pid namespace, none of its own. */
		CHECK(proc_files_ns_pid(pf, pid, &ns_pid) == 0 && ns_pid == 0);
		CHECK(proc_files_ns_pid(pf, 4194304, &ns_pid) == -ENOENT);
	}
	CHECK(unlink(exe) == 0);

	/* A zombie's maps are empty: what was kept stays. */
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitid(P_PID, pid, &(siginfo_t){ 0 }, WEXITED | WNOWAIT) == 0);
	CHECK(note(pf, pid) == -ESRCH);
	CHECK(waitpid(pid, NULL, 0) == pid);
	CHECK(note(pf, pid) == -ESRCH);

	/* Gone, its executable deleted: its mappings and the file remain. */
	CHECK(proc_files_maps(pf, pid, find_exe, &f) == 0);
	CHECK(f.lines >= 2 && !strcmp(f.exe_path, exe));
	CHECK(proc_files_maps(pf, pid, stop_at_first, &stops) == -EINTR && stops == 1);
	fd = proc_files_open(pf, f.exe_map.dev, f.exe_map.ino);
	CHECK(fd >= 0);
	CHECK(fstat(fd, &sb) == 0 && sb.st_nlink == 0 && sb.st_ino == f.exe_map.ino);
	CHECK(pread(fd, magic, sizeof(magic), 0) == 4 && !memcmp(magic,
								 "\x7f"
								 "ELF",
								 4));
	close(fd);
	CHECK(proc_files_open(pf, f.exe_map.dev, f.exe_map.ino + 1) == -ENOENT);
	/* Its status without a path: the held, deleted inode. */
	CHECK(proc_files_stat(pf, f.exe_map.dev, f.exe_map.ino, &sb) == 0);
	CHECK(sb.st_ino == f.exe_map.ino && sb.st_nlink == 0 && S_ISREG(sb.st_mode));
	CHECK(proc_files_stat(pf, f.exe_map.dev, f.exe_map.ino + 1, &sb) == -ENOENT);
	proc_files_stats(pf, &st);
	CHECK(st.processes == 1);

	/* A process never read, kept from lines another source knew (the
	 * unwinder's kernel-built list): its mapping of the held file opens
	 * that file. */
	{
		char keep[256];
		struct found k = { 0 };
		pid_t other = 4194304; /* above pid_max: never a live process */

		keep_line(keep, sizeof(keep), &f.exe_map);
		CHECK(proc_files_keep(pf, other, keep, strlen(keep) - 1) == -EINVAL); /* no '\n' */
		CHECK(proc_files_keep(pf, other, keep, strlen(keep)) == 0);
		CHECK(proc_files_maps(pf, other, find_exe, &k) == 0);
		CHECK(k.lines == 1 && !strcmp(k.exe_path, exe) && k.exe_map.start == f.exe_map.start);
		fd = proc_files_open(pf, k.exe_map.dev, k.exe_map.ino);
		CHECK(fd >= 0);
		close(fd);
		proc_files_stats(pf, &st);
		CHECK(st.processes == 2 && st.exited >= 1); /* (the other one: once a sweep notices) */
	}
	/* A live process noted from lines its reader had just read (the
	 * unwinder's): kept as read, its files held. */
	{
		struct proc_map first = { 0 };
		struct found self = { 0 };
		char *lines = exec_lines(getpid(), &lines_len, &first);
		int n_exec = 0;

		for (size_t i = 0; i < lines_len; i++)
			n_exec += lines[i] == '\n';
		CHECK(n_exec >= 2 && first.ino);
		CHECK(proc_files_note(pf, getpid(), lines, 0) == -ESRCH);
		CHECK(proc_files_note(pf, getpid(), lines, lines_len - 1) == -EINVAL);
		CHECK(proc_files_note(pf, getpid(), lines, lines_len) == 0);
		CHECK(proc_files_maps(pf, getpid(), find_exe, &self) == 0 && self.lines == n_exec);
		CHECK(proc_files_stat(pf, first.dev, first.ino, &sb) == 0 && sb.st_ino == first.ino);
		proc_files_stats(pf, &st);
		CHECK(st.processes == 3);
		free(lines);
	}
	/* Full: the oldest sixteenth goes at once, exited processes first
	 * (the live one noted above stays, though older than them). */
	{
		char keep[256];
		struct found k = { 0 };
		uint32_t fake = 5000000; /* above pid_max */

		keep_line(keep, sizeof(keep), &f.exe_map);
		for (uint32_t i = 0; i <= PROC_FILES_PROCS_MAX - 3; i++)
			CHECK(proc_files_keep(pf, fake + i, keep, strlen(keep)) == 0);
		proc_files_stats(pf, &st);
		CHECK(st.processes == PROC_FILES_PROCS_MAX - PROC_FILES_PROCS_MAX / 16 + 1);
		CHECK(proc_files_maps(pf, 4194304, find_exe, &k) == -ENOENT);
		CHECK(proc_files_maps(pf, fake, find_exe, &k) == -ENOENT);
		/* (Whether the first process counts as exited depends on a sweep.) */
		CHECK(proc_files_maps(pf, fake + PROC_FILES_PROCS_MAX / 16 - 3, find_exe, &k) ==
		      -ENOENT);
		CHECK(proc_files_maps(pf, fake + PROC_FILES_PROCS_MAX / 16 - 1, find_exe, &k) == 0);
		CHECK(proc_files_maps(pf, getpid(), find_exe, &k) == 0);
	}
	proc_files_free(pf);
	CHECK(rmdir(dir) == 0);
	return check_failures ? 1 : 0;
}
