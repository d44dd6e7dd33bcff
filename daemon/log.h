/*
 * log: the daemon's messages, to stderr (the journal under systemd). Only
 * boundary code logs: main and the manager; modules return errors instead.
 * The "<N>" prefixes are sd-daemon priorities, shown as levels by journald.
 */
#ifndef LOG_H
#define LOG_H

#include <stdio.h>

extern int log_to_journal; /* set by main when stderr is the journal */

#define log_at(prio, word, fmt, ...)                                                               \
	fprintf(stderr, "%s%s" fmt "\n", log_to_journal ? prio : "", log_to_journal ? "" : word,   \
		##__VA_ARGS__)
#define log_error(fmt, ...)   log_at("<3>", "offcpud: error: ", fmt, ##__VA_ARGS__)
#define log_warning(fmt, ...) log_at("<4>", "offcpud: warning: ", fmt, ##__VA_ARGS__)
#define log_info(fmt, ...)    log_at("<6>", "offcpud: ", fmt, ##__VA_ARGS__)

#endif
