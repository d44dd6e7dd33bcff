/*
 * serve: `offcpuctl serve`, a web page and HTTP API over the daemon's stored
 * windows (libmicrohttpd). Serves the page embedded at build time (ctl/web/)
 * and hands /api/ requests to serve_api. Listens on loopback unless told
 * otherwise. Prints its address and errors on stderr.
 */
#ifndef SERVE_H
#define SERVE_H

/* Runs until SIGINT or SIGTERM; returns offcpuctl's exit code. argv[0] is
 * "serve". */
int serve_run(const char *socket_path, int argc, char **argv);

#endif
