/* push_http: see push_http.h. */
#define _GNU_SOURCE
#include "push_http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define SECRET_MAX 4096 /* a token or "user:password" */
#define REPLY_MAX  2048 /* of a reply body kept for the message */

struct push_http {
	CURL *curl;
	struct config_push_target t;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

/* libcurl's global set-up is not thread-safe before 7.84; once, by whichever
 * pusher thread comes first. */
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int push_http_new(const struct config_push_target *t, struct push_http **ret)
{
	struct push_http *h = calloc(1, sizeof(*h));

	pthread_once(&curl_once, curl_init_once);
	if (!h)
		return -ENOMEM;
	h->t = *t;
	h->curl = curl_easy_init();
	if (!h->curl) {
		free(h);
		return -ENOMEM;
	}
	*ret = h;
	return 0;
}

void push_http_free(struct push_http *h)
{
	if (!h)
		return;
	curl_easy_cleanup(h->curl);
	free(h);
}

void push_http_safe_url(const char *url, char *buf, size_t size)
{
	const char *scheme_end = strstr(url, "://"), *host = scheme_end ? scheme_end + 3 : url;
	const char *at = host + strcspn(host, "@/?#");

	if (*at == '@') /* user information before the host */
		snprintf(buf, size, "%.*s%s", (int)(host - url), url, at + 1);
	else
		snprintf(buf, size, "%s", url);
}

/* A secret file's first line, without its line break; the buffer is wiped
 * by the caller. 0, or -errno with a message that names the file only. */
static int read_secret(const char *path, char *buf, size_t size, char *msg, size_t msg_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n;

	if (fd < 0) {
		int r = -errno;

		snprintf(msg, msg_size, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0) {
		int r = -errno;

		snprintf(msg, msg_size, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!buf[0]) {
		snprintf(msg, msg_size, "%s is empty", path);
		return -EINVAL;
	}
	return 0;
}

struct reply {
	char body[REPLY_MAX];
	size_t len;
	int64_t retry_after_ms;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n, room = sizeof(r->body) - 1 - r->len;

	memcpy(r->body + r->len, p, len < room ? len : room);
	r->len += len < room ? len : room;
	return len; /* the rest is dropped, not an error */
}

/* Retry-After: delay-seconds or an HTTP-date (RFC 9110 10.2.3). */
static int64_t retry_after_ms(const char *v)
{
	char *end;
	long long s = strtoll(v, &end, 10);
	struct tm tm = { 0 };

	while (isspace((unsigned char)*end))
		end++;
	if (end != v && !*end && s >= 0)
		return s > INT64_MAX / 1000 ? INT64_MAX : s * 1000;
	if (strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm)) {
		time_t at = timegm(&tm), now = time(NULL);

		return at > now ? (int64_t)(at - now) * 1000 : 0;
	}
	return -1;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n;
	char line[256];

	if (len < sizeof(line) && !strncasecmp(p, "Retry-After:", 12)) {
		memcpy(line, p + 12, len - 12);
		line[len - 12] = '\0';
		line[strcspn(line, "\r\n")] = '\0';
		r->retry_after_ms = retry_after_ms(line + strspn(line, " \t"));
	}
	return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	const volatile bool *stop = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return stop && *stop; /* nonzero aborts the transfer */
}

/* The server's words for the message: a Connect error's "message" if the
 * body is one, else the body's first line; printable bytes only. */
static void reply_message(const struct reply *r, long status, char *msg, size_t size)
{
	const char *text = r->body, *key = strstr(r->body, "\"message\"");
	char clean[sizeof(r->body)];
	size_t n = 0;

	if (key && (key = strchr(key + 9, '"')))
		text = key + 1;
	for (const char *c = text; *c && *c != '\n' && n < sizeof(clean) - 1; c++) {
		if (key && *c == '"')
			break;
		clean[n++] = (unsigned char)*c >= ' ' && (unsigned char)*c < 0x7f ? *c : '?';
	}
	clean[n] = '\0';
	snprintf(msg, size, "HTTP %ld%s%s", status, n ? ": " : "", clean);
}

/* body as gzip, for Content-Encoding: gzip; *ret malloc'd. 0 or -ENOMEM. */
static int gzip_body(const void *body, size_t len, uint8_t **ret, size_t *ret_len)
{
	z_stream z = { 0 };
	uLong bound;
	uint8_t *out;
	int rc;

	/* windowBits 15 + 16: a gzip header and trailer, not zlib's. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	bound = deflateBound(&z, len) + 32; /* and the gzip wrapper */
	out = malloc(bound);
	if (!out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)body;
	z.avail_in = len;
	z.next_out = out;
	z.avail_out = bound;
	rc = deflate(&z, Z_FINISH);
	*ret_len = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(out);
		return -ENOMEM;
	}
	*ret = out;
	return 0;
}

static enum push_http_verdict verdict_of(long status)
{
	if (status >= 200 && status < 300)
		return PUSH_HTTP_OK;
	if (status == 429)
		return PUSH_HTTP_THROTTLE;
	/* Credentials, rights or the URL: the target's problem, not the
	 * window's. Setting every window aside until someone fixes it would
	 * empty the outbox; they wait instead, and status says why. */
	if (status == 401 || status == 403 || status == 404 || status == 407)
		return PUSH_HTTP_RETRY;
	if (status >= 400 && status < 500 && status != 408)
		return PUSH_HTTP_REFUSED;
	return PUSH_HTTP_RETRY; /* 5xx, 408, and what makes no sense (1xx, 3xx) */
}

int push_http_post(struct push_http *h, const char *path, const char *content_type,
		   const void *body, size_t len, const volatile bool *stop,
		   struct push_http_result *res)
{
	const struct config_push_target *t = &h->t;
	struct curl_slist *headers = NULL, *more;
	struct reply reply = { .retry_after_ms = -1 };
	char *url = NULL, line[512], secret[SECRET_MAX] = "", errbuf[CURL_ERROR_SIZE] = "";
	uint8_t *gz = NULL;
	size_t base_len = strlen(t->url);
	CURLcode rc;
	int r = 0;

	memset(res, 0, sizeof(*res));
	res->retry_after_ms = -1;
	res->verdict = PUSH_HTTP_RETRY;
	/* One '/' between the base and the path, whichever has it. */
	while (base_len && t->url[base_len - 1] == '/')
		base_len--;
	if (asprintf(&url, "%.*s%s", (int)base_len, t->url, path) < 0)
		return -ENOMEM;

	/* OTLP's protobuf is text-heavy (names, attributes): gzip takes it to
	 * about a fifth, and collectors take it (OTLP/HTTP's one compression).
	 * The Pyroscope request is mostly gzipped profiles already. */
	if (t->api == CONFIG_PUSH_OTLP) {
		r = gzip_body(body, len, &gz, &len);
		if (r < 0)
			goto out;
		body = gz;
	}
	snprintf(line, sizeof(line), "Content-Type: %s", content_type);
	headers = curl_slist_append(headers, line);
	if (gz && headers)
		headers = curl_slist_append(headers, "Content-Encoding: gzip");
	if (t->api == CONFIG_PUSH_PYROSCOPE && headers) /* a Connect unary call */
		headers = curl_slist_append(headers, "Connect-Protocol-Version: 1");
	if (t->tenant[0] && headers) {
		snprintf(line, sizeof(line), "X-Scope-OrgID: %s", t->tenant);
		headers = curl_slist_append(headers, line);
	}
	if (headers && (more = curl_slist_append(headers, "Expect:"))) /* no 100-continue wait */
		headers = more;
	if (!headers) {
		r = -ENOMEM;
		goto out;
	}

	curl_easy_reset(h->curl);
	curl_easy_setopt(h->curl, CURLOPT_URL, url);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "offcpud/" OFFCPU_VERSION);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT, (long)t->timeout_s);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM */
	curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &reply);
	curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, &reply);
	curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, (void *)stop);
	if (t->max_bytes_per_second)
		curl_easy_setopt(h->curl, CURLOPT_MAX_SEND_SPEED_LARGE,
				 (curl_off_t)t->max_bytes_per_second);
	if (t->ca_file[0])
		curl_easy_setopt(h->curl, CURLOPT_CAINFO, t->ca_file);
	if (t->cert_file[0]) {
		curl_easy_setopt(h->curl, CURLOPT_SSLCERT, t->cert_file);
		curl_easy_setopt(h->curl, CURLOPT_SSLKEY,
				 t->key_file[0] ? t->key_file : t->cert_file);
	}
	if (t->basic_auth_file[0] || t->bearer_token_file[0]) {
		const char *file =
			t->basic_auth_file[0] ? t->basic_auth_file : t->bearer_token_file;

		r = read_secret(file, secret, sizeof(secret), res->message, sizeof(res->message));
		if (r < 0)
			goto out;
		if (t->basic_auth_file[0]) {
			char *colon = strchr(secret, ':');

			if (!colon) {
				snprintf(res->message, sizeof(res->message),
					 "%s: not USER:PASSWORD", file);
				r = -EINVAL;
				goto out;
			}
			*colon = '\0';
			curl_easy_setopt(h->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
			curl_easy_setopt(h->curl, CURLOPT_USERNAME, secret);
			curl_easy_setopt(h->curl, CURLOPT_PASSWORD, colon + 1);
		} else {
			curl_easy_setopt(h->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
			curl_easy_setopt(h->curl, CURLOPT_XOAUTH2_BEARER, secret);
		}
	}

	rc = curl_easy_perform(h->curl);
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		res->verdict = PUSH_HTTP_STOPPED;
		snprintf(res->message, sizeof(res->message), "stopped");
	} else if (rc != CURLE_OK) {
		/* The server never answered: try again. */
		snprintf(res->message, sizeof(res->message), "%s",
			 errbuf[0] ? errbuf : curl_easy_strerror(rc));
	} else {
		curl_off_t up = 0;

		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &res->status);
		curl_easy_getinfo(h->curl, CURLINFO_SIZE_UPLOAD_T, &up);
		res->bytes_sent = (uint64_t)up;
		res->verdict = verdict_of(res->status);
		res->retry_after_ms = reply.retry_after_ms;
		if (res->verdict != PUSH_HTTP_OK)
			reply_message(&reply, res->status, res->message, sizeof(res->message));
	}
out:
	/* The credentials leave no copy behind in this process's memory. */
	curl_easy_setopt(h->curl, CURLOPT_PASSWORD, NULL);
	curl_easy_setopt(h->curl, CURLOPT_XOAUTH2_BEARER, NULL);
	explicit_bzero(secret, sizeof(secret));
	curl_slist_free_all(headers);
	free(gz);
	free(url);
	return r;
}
