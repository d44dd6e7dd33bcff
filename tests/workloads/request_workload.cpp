/*
 * request_workload.cpp: the request function of request_workload_cpp is a C++ member
 * function, app::Server::handle_request(app::Request&), so that a request probe must name a
 * mangled symbol: _ZN3app6Server14handle_requestERNS_7RequestE.
 *
 * Everything else is request_workload.c, compiled as C with -DREQUEST_IN_CXX: its workers
 * call cxx_handle_request(), which calls the member function, which blocks in the C
 * block_in_backend_read(). Same contract as handle_request() there.
 */
#include <cerrno>
#include <cstdint>
#include <unistd.h>

#if defined(__has_attribute)
#if __has_attribute(noipa)
#define WORKLOAD_FRAME __attribute__((noipa))
#endif
#endif
#ifndef WORKLOAD_FRAME
#define WORKLOAD_FRAME __attribute__((noinline))
#endif

extern "C" {
int block_in_backend_read(int fd, uint64_t *ret_blocked_ns); /* request_workload.c */
int cxx_handle_request(int fd_req, int fd_resp, uint64_t *ret_blocked_ns);
}

namespace app
{

struct Request {
	int fd_req;
	int fd_resp;
	uint64_t blocked_ns;
};

struct Server {
	int handle_request(Request &req);
};

WORKLOAD_FRAME int Server::handle_request(Request &req)
{
	uint64_t blocked_ns;
	int r;

	if (write(req.fd_req, "q", 1) != 1)
		return -errno;
	/* Not a tail call: this frame stays on the stack while the worker blocks. */
	r = block_in_backend_read(req.fd_resp, &blocked_ns);
	if (r < 0)
		return r;
	req.blocked_ns = blocked_ns;
	return 0;
}

} // namespace app

WORKLOAD_FRAME int cxx_handle_request(int fd_req, int fd_resp, uint64_t *ret_blocked_ns)
{
	app::Server server;
	app::Request req = { fd_req, fd_resp, 0 };
	int r = server.handle_request(req);

	if (r < 0)
		return r;
	*ret_blocked_ns = req.blocked_ns;
	return 0;
}
