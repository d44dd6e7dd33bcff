/*
 * cmd_serve: offcpuctl serve.
 */
#include "ctl.h"

#include "serve.h"

/* serve: the web page and its API (ctl/serve.c). */
int cmd_serve(int argc, char **argv)
{
	return serve_run(socket_path, argc, argv);
}
