/*
 * pusher: see pusher.h. A target's thread: find the next window (its
 * cursor's, else one asked for by hand), read its rows on the thread's own
 * store connection, encode them for the target's API, post, and move the
 * cursor by what the server said. Everything a status request reads is
 * under the pusher's lock; the rest belongs to the thread.
 */
#define _GNU_SOURCE
#include "pusher.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "otlp_request.h"
#include "profile.h"
#include "push_http.h"
#include "push_request.h"
#include "pyroscope.pb-c.h"
#include "store.h"
#include "store_jobs.h"
#include "store_push.h"

#define BACKOFF_FIRST_MS   1000
#define BACKOFF_MAX_MS	   (5 * 60 * 1000)
#define IDLE_RECHECK_MS	   5000	 /* a missed notification costs at most this */
#define REOPEN_MS	   10000 /* between tries to open the database */
#define PUSH_NICE	   10	 /* the threads' nice value */
/* A server's Retry-After is honoured up to this: a bad one cannot park a
 * target for days. */
#define RETRY_AFTER_MAX_MS (60 * 60 * 1000)

static const char *const api_names[] = {
	[CONFIG_PUSH_PYROSCOPE] = "pyroscope",
	[CONFIG_PUSH_PYROSCOPE_INGEST] = "pyroscope-ingest",
	[CONFIG_PUSH_OTLP] = "otlp",
};

/* Windows asked for by hand, by start time. */
struct range {
	int64_t from_ms, to_ms;
};

struct target {
	struct pusher *p;
	struct config_push_target cfg;
	struct push_label labels[PUSH_LABELS_MAX];
	char labels_buf[sizeof(((struct config_push_target *)0)->labels)];
	size_t n_labels;
	pthread_t thread;
	bool started;
	unsigned seed; /* the jitter's */

	/* Under p->lock: */
	struct pusher_status st; /* lag_ms computed from the two below */
	/* The oldest window not sent (0: none known) and the newest stored, as
	 * of the last look at the database and the windows stored since: the
	 * lag stays true while the thread waits on a server. */
	int64_t lag_next_start_ms, lag_newest_end_ms;
	struct range *ranges; /* asked for, not yet listed */
	size_t n_ranges;

	/* The thread's: */
	struct store_window *manual; /* listed windows asked for by hand */
	size_t n_manual, manual_at;
};

struct pusher {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* a window, a stop, a backfill, room in flight */
	bool stop;	     /* under lock; also read unlocked by transfers (volatile copy) */
	volatile bool stopping;
	uint64_t generation; /* of windows stored: pusher_notify() counts */
	uint64_t in_flight, max_in_flight;
	char host[256];
	char database[256];
	uint32_t profile_kinds;
	void (*log)(void *arg, bool warning, const char *msg);
	void *log_arg;
	struct target *targets;
	size_t n_targets;
};

static int64_t now_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(struct target *t, bool warning, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(struct target *t, bool warning, const char *fmt, ...)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "push target %s: ", t->cfg.name);
	va_list ap;

	if (!t->p->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	va_end(ap);
	t->p->log(t->p->log_arg, warning, msg);
}

int64_t pusher_backoff_ms(unsigned failures, double r)
{
	int64_t d = BACKOFF_FIRST_MS;

	for (unsigned i = 1; i < failures && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > BACKOFF_MAX_MS)
		d = BACKOFF_MAX_MS;
	/* "Equal jitter": between half and all of it, so targets that failed
	 * together do not come back together. */
	return d - (int64_t)(d / 2 * r);
}

/* Waits on the lock (held) until the monotonic deadline, a stop, or (if
 * gen is not NULL) a notification after *gen was read. Returns whether
 * stopping. */
static bool wait_until(struct target *t, int64_t deadline, const uint64_t *gen)
{
	struct pusher *p = t->p;

	while (!p->stop && (!gen || *gen == p->generation)) {
		int64_t left = deadline - now_ms(CLOCK_MONOTONIC);
		struct timespec ts;

		if (left <= 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (left % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&p->wake, &p->lock, &ts);
	}
	return p->stop;
}

/* ---- a window's rows ---- */

struct rows {
	struct profile *profile;
	uint32_t kinds;
};

static int add_row(void *arg, const struct store_sample *s)
{
	struct rows *r = arg;
	struct profile_row row;

	if (s->kind >= 32 || !(r->kinds & (1u << s->kind)))
		return 0;
	store_jobs_row(s, &row);
	/* As an export without --lines has them: what a server is compared with. */
	return profile_add_row_without_lines(r->profile, &row);
}

/* The rows of window w that target t sends, as push_request.h takes them;
 * their strings are the profile's (*ret_profile, freed after them). */
static int window_rows(struct target *t, struct store *store, const struct store_window *w,
		       struct profile **ret_profile, struct proto_sample **ret, size_t *ret_n,
		       char *msg, size_t msg_size)
{
	struct store_query q = { .window_id = w->id };
	struct rows rows = { .kinds = t->cfg.kinds ? t->cfg.kinds : t->p->profile_kinds };
	int r = profile_new(&rows.profile);

	/* A split offcpu profile keeps its run-queue part as runq rows. */
	if (rows.kinds & (1u << PROTO_KIND_OFFCPU))
		rows.kinds |= 1u << PROTO_KIND_RUNQ;
	if (r < 0)
		return r;
	r = store_query(store, &q, add_row, &rows, NULL, msg, msg_size);
	if (r >= 0)
		r = profile_samples(rows.profile, ret, ret_n);
	if (r < 0) {
		profile_free(rows.profile);
		return r;
	}
	*ret_profile = rows.profile;
	return 0;
}

/* ---- sending ---- */

/* Percent-encodes s (RFC 3986 unreserved kept) into buf; false if it does
 * not fit. */
static bool url_escape(const char *s, char *buf, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			     (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.' ||
			     *c == '~';

		if (n + 4 > size)
			return false;
		if (plain) {
			buf[n++] = *c;
		} else {
			buf[n++] = '%';
			buf[n++] = hex[*c >> 4];
			buf[n++] = hex[*c & 15];
		}
	}
	buf[n] = '\0';
	return true;
}

/* Waits for room for len bytes in flight (always room when nothing is:
 * a body bigger than the cap goes alone). False if stopping. */
static bool take_room(struct target *t, size_t len)
{
	struct pusher *p = t->p;
	bool ok;

	pthread_mutex_lock(&p->lock);
	while (!p->stop && p->in_flight && p->in_flight + len > p->max_in_flight)
		pthread_cond_wait(&p->wake, &p->lock);
	ok = !p->stop;
	if (ok)
		p->in_flight += len;
	pthread_mutex_unlock(&p->lock);
	return ok;
}

static void give_room(struct target *t, size_t len)
{
	pthread_mutex_lock(&t->p->lock);
	t->p->in_flight -= len;
	pthread_cond_broadcast(&t->p->wake);
	pthread_mutex_unlock(&t->p->lock);
}

static int post(struct target *t, struct push_http *http, const char *path,
		const char *content_type, const uint8_t *body, size_t len,
		struct push_http_result *res)
{
	int r;

	if (!take_room(t, len)) {
		res->verdict = PUSH_HTTP_STOPPED;
		return 0;
	}
	r = push_http_post(http, path, content_type, body, len, &t->p->stopping, res);
	give_room(t, len);
	if (r < 0 && !res->message[0])
		snprintf(res->message, sizeof(res->message), "cannot post: %s", strerror(-r));
	if (r < 0)
		res->verdict = PUSH_HTTP_RETRY;
	pthread_mutex_lock(&t->p->lock);
	t->st.bytes_sent += res->bytes_sent;
	pthread_mutex_unlock(&t->p->lock);
	return 0;
}

/* The legacy API: each profile of the push request alone, its series'
 * labels in the name ("SERVICE{host=...,kind=...}"). It has no ids: a
 * window retried after a part went through sends that part twice. */
static int post_ingest(struct target *t, struct push_http *http, const struct push_window *w,
		       const uint8_t *body, size_t len, struct push_http_result *res)
{
	Push__V1__PushRequest *req = push__v1__push_request__unpack(NULL, len, body);
	int r = 0;

	if (!req)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_series && res->verdict == PUSH_HTTP_OK; i++) {
		const Push__V1__RawProfileSeries *s = req->series[i];
		char name[4096], escaped[12288], path[12800];
		const char *service = "";
		size_t n = 0;

		for (size_t k = 0; k < s->n_labels; k++)
			if (!strcmp(s->labels[k]->name, "service_name"))
				service = s->labels[k]->value;
		n = snprintf(name, sizeof(name), "%s{", service);
		for (size_t k = 0; k < s->n_labels && n < sizeof(name); k++) {
			const char *ln = s->labels[k]->name;

			if (!strcmp(ln, "service_name") || !strcmp(ln, "__name__"))
				continue;
			n += snprintf(name + n, sizeof(name) - n, "%s%s=%s",
				      name[n - 1] == '{' ? "" : ",", ln, s->labels[k]->value);
		}
		if (n + 2 > sizeof(name) ||
		    !url_escape((strcat(name, "}"), name), escaped, sizeof(escaped))) {
			snprintf(res->message, sizeof(res->message), "a series' name is too long");
			res->verdict = PUSH_HTTP_REFUSED;
			break;
		}
		snprintf(path, sizeof(path),
			 "/ingest?name=%s&from=%" PRId64 "&until=%" PRId64
			 "&format=pprof&spyName=offcpud",
			 escaped, w->start_ms / 1000, (w->end_ms + 999) / 1000);
		for (size_t k = 0; k < s->n_samples && res->verdict == PUSH_HTTP_OK; k++) {
			r = post(t, http, path, "application/octet-stream",
				 s->samples[k]->raw_profile.data, s->samples[k]->raw_profile.len,
				 res);
			if (r < 0)
				break;
		}
	}
	push__v1__push_request__free_unpacked(req, NULL);
	return r;
}

/* Sends window w: 0 with res's verdict, or -errno if it could not be
 * encoded (then it is set aside: encoding it again would fail again). */
static int send_window(struct target *t, struct store *store, struct push_http *http,
		       const struct store_window *w, struct push_http_result *res)
{
	struct proto_sample *rows = NULL;
	struct profile *profile = NULL;
	size_t n_rows = 0, len = 0;
	uint8_t *body = NULL;
	struct push_window pw = { .id = w->id, .start_ms = w->start_ms, .end_ms = w->end_ms };
	struct push_request_opts o = {
		.host = t->p->host,
		.labels = t->labels,
		.n_labels = t->n_labels,
		.service_by = t->cfg.service_by == CONFIG_PUSH_SERVICE_PROCESS
				      ? PUSH_SERVICE_BY_PROCESS
				      : PUSH_SERVICE_BY_WHO,
	};
	int r;

	memset(res, 0, sizeof(*res));
	res->verdict = PUSH_HTTP_OK;
	r = window_rows(t, store, w, &profile, &rows, &n_rows, res->message, sizeof(res->message));
	if (r < 0) {
		res->verdict = PUSH_HTTP_RETRY; /* the store may be busy: again later */
		if (!res->message[0])
			snprintf(res->message, sizeof(res->message),
				 "cannot read window %" PRIu64 ": %s", w->id, strerror(-r));
		return 0;
	}
	pw.rows = rows;
	pw.n_rows = n_rows;
	r = t->cfg.api == CONFIG_PUSH_OTLP ? otlp_request_build(&pw, &o, &body, &len)
					   : push_request_build(&pw, &o, &body, &len);
	profile_samples_free(rows, n_rows);
	profile_free(profile);
	if (r < 0) {
		snprintf(res->message, sizeof(res->message), "cannot encode window %" PRIu64 ": %s",
			 w->id, strerror(-r));
		return r;
	}
	if (!body) /* nothing of the target's kinds: nothing to send */
		return 0;
	switch (t->cfg.api) {
	case CONFIG_PUSH_PYROSCOPE:
		r = post(t, http, "/push.v1.PusherService/Push", "application/proto", body, len,
			 res);
		break;
	case CONFIG_PUSH_PYROSCOPE_INGEST:
		r = post_ingest(t, http, &pw, body, len, res);
		break;
	default:
		r = post(t, http, "/v1development/profiles", "application/x-protobuf", body, len,
			 res);
		break;
	}
	free(body);
	/* A window's rows and request take megabytes of this thread's malloc
	 * arena; glibc keeps them otherwise (RSS stayed up after a backlog). */
	malloc_trim(0);
	return r;
}

/* ---- the thread ---- */

static void set_state(struct target *t, const char *state)
{
	pthread_mutex_lock(&t->p->lock);
	t->st.state = state;
	pthread_mutex_unlock(&t->p->lock);
}

static void set_error(struct target *t, const char *msg)
{
	pthread_mutex_lock(&t->p->lock);
	snprintf(t->st.last_error, sizeof(t->st.last_error), "%s", msg);
	pthread_mutex_unlock(&t->p->lock);
}

/* Reads the cursor and counts back, and the lag; says when windows were
 * lost since the last look. */
static int refresh(struct target *t, struct store *store, struct store_push_cursor *c,
		   const struct store_window *next)
{
	uint64_t lost_before = c->lost, backlog = 0, cursor = c->cursor;
	int64_t newest_end = 0;
	char msg[256] = "";
	int r = store_push_target(store, t->cfg.name, c, msg, sizeof(msg));

	/* Ahead of the database where storing the cursor failed. */
	if (c->cursor < cursor)
		c->cursor = cursor;
	if (r >= 0)
		r = store_push_backlog(store, c->cursor, &backlog, &newest_end, msg, sizeof(msg));
	if (r < 0) {
		set_error(t, msg[0] ? msg : strerror(-r));
		return r;
	}
	if (c->lost > lost_before)
		say(t, true,
		    "%" PRIu64 " windows were evicted from the ring before they were sent "
		    "(%" PRIu64 " lost in all)",
		    c->lost - lost_before, c->lost);
	pthread_mutex_lock(&t->p->lock);
	t->st.sent = c->sent;
	t->st.set_aside = c->set_aside;
	t->st.lost = c->lost;
	t->st.last_success_ms = c->last_success_ms;
	t->st.lag_windows = backlog;
	t->lag_next_start_ms = next ? next->start_ms : 0;
	t->lag_newest_end_ms = newest_end;
	t->st.backfill_windows = t->n_manual - t->manual_at;
	pthread_mutex_unlock(&t->p->lock);
	return 0;
}

/* Lists the ranges asked for by hand into t->manual. */
static void take_ranges(struct target *t, struct store *store)
{
	for (;;) {
		struct store_window *list = NULL, *all;
		struct range rg;
		size_t n = 0, left;
		char msg[256] = "";

		pthread_mutex_lock(&t->p->lock);
		if (!t->n_ranges) {
			pthread_mutex_unlock(&t->p->lock);
			return;
		}
		rg = t->ranges[--t->n_ranges];
		pthread_mutex_unlock(&t->p->lock);
		if (store_push_range(store, rg.from_ms, rg.to_ms, &list, &n, msg, sizeof(msg)) <
		    0) {
			say(t, true, "cannot list the windows asked for: %s", msg);
			continue;
		}
		left = t->n_manual - t->manual_at;
		all = realloc(list, (n + left) * sizeof(*all) + 1);
		if (!all) {
			free(list);
			say(t, true, "out of memory listing the windows asked for");
			continue;
		}
		if (left) /* the ones not sent yet go after */
			memcpy(all + n, t->manual + t->manual_at, left * sizeof(*all));
		free(t->manual);
		t->manual = all;
		t->n_manual = n + left;
		t->manual_at = 0;
		say(t, false, "%zu windows asked for by hand", n);
	}
}

static void *target_main(void *arg)
{
	struct target *t = arg;
	struct pusher *p = t->p;
	struct store *store = NULL;
	struct push_http *http = NULL;
	struct store_push_cursor c = { 0 };
	unsigned failures = 0;
	char msg[512];
	int r;

	/* Its name tells it apart in top and /proc; below the workloads' and
	 * the loop's priority, so a backlog (a full core while it lasts) takes
	 * what is spare. */
	pthread_setname_np(pthread_self(), "offcpud-push");
	setpriority(PRIO_PROCESS, (id_t)gettid(), PUSH_NICE);

	/* The manager's connection opened the database first; if this one
	 * cannot, keep trying: status says why meanwhile. */
	for (;;) {
		msg[0] = '\0';
		r = store_open_another(p->database, &store, msg, sizeof(msg));
		if (r >= 0)
			r = store_push_target(store, t->cfg.name, &c, msg, sizeof(msg));
		if (r >= 0)
			r = push_http_new(&t->cfg, &http);
		if (r >= 0)
			break;
		store_close(store);
		store = NULL;
		set_state(t, "failed");
		set_error(t, msg[0] ? msg : strerror(-r));
		pthread_mutex_lock(&p->lock);
		if (wait_until(t, now_ms(CLOCK_MONOTONIC) + REOPEN_MS, NULL)) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		pthread_mutex_unlock(&p->lock);
	}

	while (!p->stopping) {
		struct store_window w;
		struct push_http_result res = { .retry_after_ms = -1 };
		bool manual = false;
		uint64_t gen;
		int64_t delay;

		/* Read before looking, so a window stored meanwhile wakes the wait. */
		pthread_mutex_lock(&p->lock);
		gen = p->generation;
		pthread_mutex_unlock(&p->lock);
		take_ranges(t, store);
		r = store_push_next(store, c.cursor, &w, msg, sizeof(msg));
		refresh(t, store, &c, r >= 0 ? &w : NULL);
		if (r == -ENOENT && t->manual_at < t->n_manual) {
			w = t->manual[t->manual_at];
			manual = true;
		} else if (r == -ENOENT) {
			set_state(t, "idle");
			pthread_mutex_lock(&p->lock);
			wait_until(t, now_ms(CLOCK_MONOTONIC) + IDLE_RECHECK_MS, &gen);
			pthread_mutex_unlock(&p->lock);
			continue;
		} else if (r < 0) {
			res.verdict = PUSH_HTTP_RETRY;
			snprintf(res.message, sizeof(res.message), "%s", msg);
			goto failed;
		}

		set_state(t, "sending");
		r = send_window(t, store, http, &w, &res);
		if (res.verdict == PUSH_HTTP_STOPPED)
			break;
		if (r < 0 || res.verdict == PUSH_HTTP_REFUSED) {
			failures = 0;
			say(t, true, "window %" PRIu64 " set aside: %s", w.id, res.message);
			set_error(t, res.message);
			if (manual) {
				t->manual_at++;
				continue;
			}
			if (store_push_set_aside(store, t->cfg.name, w.id, now_ms(CLOCK_REALTIME),
						 (int)res.status, res.message, msg,
						 sizeof(msg)) < 0)
				say(t, true, "cannot record window %" PRIu64 " as set aside: %s",
				    w.id, msg);
			c.cursor = w.id;
			continue;
		}
		if (res.verdict == PUSH_HTTP_OK) {
			if (failures)
				say(t, false, "sending again after %u failed tries", failures);
			failures = 0;
			if (manual) {
				t->manual_at++;
				continue;
			}
			/* Not stored (a full disk): the cursor moves here all the same,
			 * and the next acknowledgement stores it; a restart before
			 * that sends this window again, with the same ids. */
			if (store_push_sent(store, t->cfg.name, w.id, now_ms(CLOCK_REALTIME), msg,
					    sizeof(msg)) < 0)
				set_error(t, msg);
			c.cursor = w.id;
			continue;
		}
	failed:
		failures++;
		delay = pusher_backoff_ms(failures,
					  (double)rand_r(&t->seed) / ((double)RAND_MAX + 1));
		if (res.verdict == PUSH_HTTP_THROTTLE && res.retry_after_ms >= 0)
			delay = res.retry_after_ms < RETRY_AFTER_MAX_MS ? res.retry_after_ms
									: RETRY_AFTER_MAX_MS;
		if (failures == 1)
			say(t, true, "%s; trying again", res.message);
		pthread_mutex_lock(&p->lock);
		t->st.retries++;
		t->st.state = "retrying";
		t->st.next_try_ms = now_ms(CLOCK_REALTIME) + delay;
		snprintf(t->st.last_error, sizeof(t->st.last_error), "%s", res.message);
		wait_until(t, now_ms(CLOCK_MONOTONIC) + delay, NULL);
		t->st.next_try_ms = 0;
		pthread_mutex_unlock(&p->lock);
	}
	set_state(t, "stopped");
	push_http_free(http);
	store_close(store);
	return NULL;
}

/* ---- the pusher ---- */

/* The configuration's labels (checked there already) into t->labels,
 * then as Pyroscope takes them. */
static int parse_labels(struct target *t)
{
	int r = push_labels_parse(t->cfg.labels, t->labels_buf, sizeof(t->labels_buf), t->labels,
				  PUSH_LABELS_MAX, &t->n_labels);

	return r < 0 ? r : push_request_labels_check(t->labels, t->n_labels);
}

int pusher_start(const struct pusher_opts *o, struct pusher **ret, char *err, size_t err_size)
{
	struct pusher *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;
	int r;

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	snprintf(p->host, sizeof(p->host), "%s", o->host);
	snprintf(p->database, sizeof(p->database), "%s", o->database);
	p->max_in_flight = o->max_bytes_in_flight;
	p->profile_kinds = o->profile_kinds;
	p->log = o->log;
	p->log_arg = o->log_arg;
	p->targets = calloc(o->n_targets ? o->n_targets : 1, sizeof(*p->targets));
	if (!p->targets) {
		pusher_stop(p);
		return -ENOMEM;
	}
	p->n_targets = o->n_targets;
	for (size_t i = 0; i < o->n_targets; i++) {
		struct target *t = &p->targets[i];

		t->p = p;
		t->cfg = o->targets[i];
		t->seed = (unsigned)(now_ms(CLOCK_REALTIME) ^ (getpid() << 8) ^ i);
		snprintf(t->st.name, sizeof(t->st.name), "%s", t->cfg.name);
		t->st.api = t->cfg.api < 3 ? api_names[t->cfg.api] : "?";
		push_http_safe_url(t->cfg.url, t->st.url, sizeof(t->st.url));
		t->st.state = "starting";
		if (parse_labels(t) < 0) {
			snprintf(err, err_size,
				 "push target %s: its labels cannot be sent (at most %d, names "
				 "and values as Pyroscope takes them)",
				 t->cfg.name, PUSH_LABELS_MAX - PUSH_LABELS_OWN);
			pusher_stop(p);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < p->n_targets; i++) {
		r = pthread_create(&p->targets[i].thread, NULL, target_main, &p->targets[i]);
		if (r) {
			snprintf(err, err_size, "cannot start a pusher thread: %s", strerror(r));
			pusher_stop(p);
			return -r;
		}
		p->targets[i].started = true;
	}
	*ret = p;
	return 0;
}

void pusher_stop(struct pusher *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	p->stopping = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (size_t i = 0; i < p->n_targets; i++) {
		if (p->targets[i].started)
			pthread_join(p->targets[i].thread, NULL);
		free(p->targets[i].ranges);
		free(p->targets[i].manual);
	}
	free(p->targets);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void pusher_notify(struct pusher *p, int64_t start_ms, int64_t end_ms)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_targets; i++) {
		struct target *t = &p->targets[i];

		t->st.lag_windows++;
		if (!t->lag_next_start_ms)
			t->lag_next_start_ms = start_ms;
		t->lag_newest_end_ms = end_ms;
	}
	p->generation++;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

int pusher_backfill(struct pusher *p, const char *name, int64_t from_ms, int64_t to_ms,
		    const char **ret_names, size_t *ret_n)
{
	size_t n = 0;
	int r = 0;

	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_targets; i++) {
		struct target *t = &p->targets[i];
		struct range *more;

		if (name && *name && strcmp(name, t->cfg.name))
			continue;
		more = realloc(t->ranges, (t->n_ranges + 1) * sizeof(*more));
		if (!more) {
			r = -ENOMEM;
			break;
		}
		t->ranges = more;
		t->ranges[t->n_ranges++] = (struct range){ from_ms, to_ms };
		if (ret_names)
			ret_names[n] = t->cfg.name;
		n++;
	}
	p->generation++;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	*ret_n = n;
	return r < 0 ? r : n ? 0 : -ENOENT;
}

size_t pusher_status(struct pusher *p, struct pusher_status *ret, size_t max)
{
	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_targets && i < max; i++) {
		const struct target *t = &p->targets[i];

		ret[i] = t->st;
		ret[i].lag_ms = t->st.lag_windows && t->lag_next_start_ms &&
						t->lag_newest_end_ms > t->lag_next_start_ms
					? (uint64_t)(t->lag_newest_end_ms - t->lag_next_start_ms)
					: 0;
	}
	pthread_mutex_unlock(&p->lock);
	return p->n_targets;
}
