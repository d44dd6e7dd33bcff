/*
 * help: one command's help (`offcpuctl COMMAND --help`, `offcpuctl help
 * COMMAND`), cut from offcpuctl's whole usage text, so each option is
 * described in one place: the command's entry under "Commands:" (its first
 * line indented by 2, the rest by more; its description rewrapped to 79
 * columns), then the paragraphs it refers to
 * (stack filters, output options, times), the global options, the exit
 * codes and last its paragraph "Examples of COMMAND:", headed "Examples:".
 * Pure text; does not print errors.
 */
#ifndef HELP_H
#define HELP_H

#include <stdio.h>

/* Writes cmd's help, cut from usage, to out. 0, or -ENOENT: no such command. */
int help_command(const char *usage, const char *cmd, FILE *out);

/* Whether a command's arguments (args[0] is the command) ask for its
 * help: "--help" or "-h" before any "--". */
int help_requested(int argc, char **args);

#endif
