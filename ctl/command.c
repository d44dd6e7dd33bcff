/* command: see command.h. */
#define _GNU_SOURCE /* pipe2 */
#include "command.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Whom the command runs as: the sudo caller, where offcpuctl is root
 * through sudo. */
struct command_user {
	bool drop;
	uid_t uid;
	gid_t gid;
	char name[256]; /* for initgroups(); "" if unknown */
};

struct command {
	pid_t pid;
	int go_fd;  /* a byte here lets it exec; closed unwritten, it exits */
	int err_fd; /* its exec's errno, or EOF once it has exec'd */
	bool reaped;
	int wstatus;
	struct sigaction old[5]; /* offcpuctl's, restored by command_free() */
};

/* The signals offcpuctl handles while a command runs, as old[] keeps them. */
static const int handled[5] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD };

/* For the handlers: there is one command at a time. */
static volatile pid_t running_pid;
static volatile int exited_flag;

static void on_chld(int sig)
{
	int saved = errno;

	(void)sig;
	exited_flag = 1;
	errno = saved;
}

/* SIGTERM and SIGHUP: the command's to handle; it is waited for. */
static void on_forward(int sig)
{
	int saved = errno;

	if (running_pid > 0)
		kill(running_pid, sig);
	errno = saved;
}

/* Under sudo as root, the caller's identity from SUDO_UID, SUDO_GID and
 * SUDO_USER (what sudo sets). Returns 0 or -ESRCH for an unusable one. */
static int command_user_get(struct command_user *ret)
{
	const char *uid_s = getenv("SUDO_UID"), *gid_s = getenv("SUDO_GID");
	const char *user = getenv("SUDO_USER");
	struct passwd *pw;
	unsigned long uid, gid;
	char *end;

	*ret = (struct command_user){ 0 };
	if (geteuid() != 0 || !uid_s || !*uid_s)
		return 0;
	errno = 0;
	uid = strtoul(uid_s, &end, 10);
	if (errno || *end || uid > (uid_t)-2)
		return -ESRCH;
	if (uid == 0)
		return 0; /* root called sudo */
	pw = getpwuid((uid_t)uid);
	if (gid_s && *gid_s) {
		errno = 0;
		gid = strtoul(gid_s, &end, 10);
		if (errno || *end || gid > (gid_t)-2)
			return -ESRCH;
	} else if (pw) {
		gid = pw->pw_gid;
	} else {
		return -ESRCH;
	}
	if (user && *user)
		snprintf(ret->name, sizeof(ret->name), "%s", user);
	else if (pw)
		snprintf(ret->name, sizeof(ret->name), "%s", pw->pw_name);
	ret->drop = true;
	ret->uid = (uid_t)uid;
	ret->gid = (gid_t)gid;
	return 0;
}

/* The child: becomes the user, waits to be let go, execs. Never returns. */
static void child_run(char *const argv[], const struct command_user *who, int go_fd, int err_fd)
{
	sigset_t none;
	char go;
	int e;

	/* What offcpuctl ignores or handles is the command's own again. */
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		signal(handled[i], SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (who->drop &&
	    (setgid(who->gid) < 0 ||
	     (*who->name ? initgroups(who->name, who->gid) : setgroups(1, &who->gid)) < 0 ||
	     setuid(who->uid) < 0)) {
		e = errno;
		if (write(err_fd, &e, sizeof(e)) < 0)
			_exit(126);
		_exit(126);
	}
	if (read(go_fd, &go, 1) != 1)
		_exit(127); /* offcpuctl gave up: never ran */
	execvp(argv[0], argv);
	e = errno;
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int command_spawn(char *const argv[], struct command **ret)
{
	struct command_user who;
	struct sigaction sa = { 0 };
	int go[2], err[2], r;
	struct command *c;

	r = command_user_get(&who);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (pipe2(go, O_CLOEXEC) < 0) {
		r = -errno;
		free(c);
		return r;
	}
	if (pipe2(err, O_CLOEXEC) < 0) {
		r = -errno;
		close(go[0]);
		close(go[1]);
		free(c);
		return r;
	}
	/* Handlers first: a SIGCHLD before they are in would be lost. */
	exited_flag = 0;
	sa.sa_handler = on_chld;
	sa.sa_flags = SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, &c->old[4]);
	sa.sa_handler = SIG_IGN;
	sa.sa_flags = 0;
	sigaction(SIGINT, &sa, &c->old[0]);
	sigaction(SIGQUIT, &sa, &c->old[1]);
	running_pid = 0;
	sa.sa_handler = on_forward;
	sigaction(SIGTERM, &sa, &c->old[2]);
	sigaction(SIGHUP, &sa, &c->old[3]);
	fflush(NULL); /* nothing buffered is written twice */
	c->pid = fork();
	if (c->pid == 0) {
		close(go[1]);
		close(err[0]);
		child_run(argv, &who, go[0], err[1]);
	}
	r = -errno;
	close(go[0]);
	close(err[1]);
	c->go_fd = go[1];
	c->err_fd = err[0];
	if (c->pid < 0) {
		c->reaped = true;
		command_free(c);
		return r;
	}
	running_pid = c->pid;
	if (!who.drop && geteuid() == 0)
		fprintf(stderr, "offcpuctl: note: the command runs as root (under sudo it runs as "
				"the user who called sudo)\n");
	*ret = c;
	return 0;
}

pid_t command_pid(const struct command *c)
{
	return c->pid;
}

volatile int *command_exit_flag(struct command *c)
{
	(void)c;
	return &exited_flag;
}

int command_release(struct command *c)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	ssize_t n, written;
	int e;

	/* A child that died held (Ctrl-C, or becoming the user failed) has
	 * closed the pipe: EPIPE then, not SIGPIPE. */
	sigaction(SIGPIPE, &ign, &old);
	do
		written = write(c->go_fd, "g", 1);
	while (written < 0 && errno == EINTR);
	sigaction(SIGPIPE, &old, NULL);
	close(c->go_fd);
	c->go_fd = -1;
	/* Its errno, or EOF: exec closed the pipe (O_CLOEXEC), or it died. */
	do
		n = read(c->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(e)) {
		command_wait(c);
		return -e;
	}
	return written == 1 ? 0 : -ECHILD;
}

int command_wait(struct command *c)
{
	pid_t r;

	while (!c->reaped) {
		r = waitpid(c->pid, &c->wstatus, 0);
		if (r == c->pid || (r < 0 && errno != EINTR))
			c->reaped = true;
	}
	running_pid = 0;
	return command_exit_code(c->wstatus);
}

void command_free(struct command *c)
{
	if (!c)
		return;
	if (c->go_fd >= 0)
		close(c->go_fd); /* a held command exits at this */
	if (c->err_fd >= 0)
		close(c->err_fd);
	command_wait(c);
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaction(handled[i], &c->old[i], NULL);
	free(c);
}

int command_exit_code(int wstatus)
{
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
}

int command_exec_exit_code(int r)
{
	return r == -ENOENT ? 127 : 126;
}
