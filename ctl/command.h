/*
 * command: the process of offcpuctl capture -- CMD. Forks it held before
 * its exec, so that nothing of it runs before the capture counts; under
 * sudo, as the user who called sudo. Let go, it runs in offcpuctl's process
 * group as from the terminal: offcpuctl ignores SIGINT and SIGQUIT meanwhile
 * and passes SIGTERM and SIGHUP on to it. Used by capture_command.c; prints
 * only the note that the command runs as root.
 */
#ifndef COMMAND_H
#define COMMAND_H

#include <stdbool.h>
#include <sys/types.h>

struct command;

/* Forks argv[0] (looked up in PATH) with argv, held. Returns 0, or -errno
 * (fork, pipe, or an unknown SUDO_UID's user: then -ESRCH). */
int command_spawn(char *const argv[], struct command **ret);

pid_t command_pid(const struct command *c);

/* Set nonzero (by a signal handler) once it has ended; it is reaped by
 * command_wait(). For client_read_line()'s stop_flag. */
volatile int *command_exit_flag(struct command *c);

/* Lets it exec. Returns 0 once it has, or the -errno its exec (or becoming
 * the sudo caller) failed with, the process then gone; -ECHILD if it had
 * already ended, held. */
int command_release(struct command *c);

/* Waits for it to end and returns the exit code a shell gives it: its exit
 * status, or 128 + N when signal N killed it. */
int command_wait(struct command *c);

/* Ends a command not let go (it exits without running), reaps it and frees
 * c; or frees c after command_wait(). NULL-safe. Restores offcpuctl's
 * signals. */
void command_free(struct command *c);

/* The exit code a shell gives a child of wait status wstatus. */
int command_exit_code(int wstatus);

/* A shell's exit code for a command whose exec failed with -errno r: 127
 * when it was not found, else 126. */
int command_exec_exit_code(int r);

#endif
