/*
 * cmd_serve: offcpuctl serve.
 */
#include "ctl.h"

#include "serve.h"

int cmd_serve(int argc, char **argv)
{
	return serve_run(socket_path, argc, argv);
}
