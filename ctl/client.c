/* client: see client.h. */
#include "client.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct client {
	int fd;
	char *buf;
	size_t len, cap;
};

int client_connect(const char *path, struct client **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct client *c;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		client_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

void client_free(struct client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free(c);
}

int client_send(struct client *c, const char *line)
{
	size_t len = strlen(line), off = 0;

	while (off < len) {
		ssize_t n = send(c->fd, line + off, len - off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += n;
	}
	return 0;
}

int client_read_line(struct client *c, char **ret_line, size_t *ret_len, void (*tick)(void *),
		     void *arg, volatile int *stop_flag, const char *stop_line)
{
	int stop_sent = 0;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		ssize_t n;
		int r;

		if (nl) {
			size_t len = nl - c->buf;
			char *line = malloc(len + 1);

			if (!line)
				return -ENOMEM;
			memcpy(line, c->buf, len);
			line[len] = '\0';
			memmove(c->buf, nl + 1, c->len - len - 1);
			c->len -= len + 1;
			*ret_line = line;
			*ret_len = len;
			return 0;
		}
		if (stop_flag && *stop_flag && !stop_sent && stop_line) {
			stop_sent = 1;
			r = client_send(c, stop_line);
			if (r < 0)
				return r;
		}
		r = poll(&pfd, 1, 1000);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0) {
			if (tick)
				tick(arg);
			continue;
		}
		if (c->cap - c->len < 65536) {
			size_t cap = c->cap ? c->cap * 2 : 65536;
			char *b = realloc(c->buf, cap);

			if (!b)
				return -ENOMEM;
			c->buf = b;
			c->cap = cap;
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		if (n > 0)
			c->len += n;
	}
}
