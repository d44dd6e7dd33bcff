/* pt_capture: a PT recording run and stored (see pt_capture.h). */
#define _GNU_SOURCE
#include "pt_capture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "elf_funcs.h"
#include "pt_pmu.h"
#include "pt_session.h"

/* Often: a thread started meanwhile is traced once its FORK is read. */
#define PT_CAPTURE_POLL_NS 20000000ULL

/* The event to record with, and the address filter for func. */
static int pt_capture_setup(const struct pt_capture_opts *o, struct pt_session_opts *so, char *err,
			    size_t err_size)
{
	char sym[PROTO_REQUEST_SPEC_MAX + 1], bin[PROTO_REQUEST_SPEC_MAX + 1];
	const struct pt_capture_limits *limits = o->limits;
	struct elf_func *funcs;
	struct pt_pmu pmu = { 0 };
	char *path;
	long page = sysconf(_SC_PAGESIZE);
	int n;

	*so = (struct pt_session_opts){
		.pid = o->req->pid,
		.snapshot = o->req->snapshot,
		.max_bytes = limits->max_bytes,
		.max_threads = limits->max_threads,
	};
	if (limits->sideband_only) {
		so->event_type = PERF_TYPE_SOFTWARE;
		so->event_config = PERF_COUNT_SW_DUMMY;
	} else {
		n = pt_pmu_probe("/sys", &pmu, err, err_size);
		if (n < 0)
			return n;
		so->event_type = pmu.type;
		so->event_config = pmu.config;
		so->aux = 1;
		so->mtc_freq = pmu.mtc_freq;
		so->nom_freq = pmu.nom_freq;
		/* the kernel wants a power of two of pages */
		so->aux_bytes = (size_t)page;
		while (so->aux_bytes * 2 <= limits->buffer_bytes)
			so->aux_bytes *= 2;
	}
	/* The function must exist in the process even without a filter:
	 * the analysis needs it, and the user learns of a typo now. */
	if (elf_funcs_split_spec(o->req->func, sym, sizeof(sym), bin, sizeof(bin)) < 0) {
		snprintf(err, err_size, "bad function '%s': SYMBOL[@BINARY]", o->req->func);
		return -EINVAL;
	}
	n = elf_funcs_resolve((int)o->req->pid, bin, sym, &path, &funcs, err, err_size);
	if (n < 0)
		return n;
	if (so->aux && pmu.ip_filtering && pmu.num_address_ranges && funcs[0].size)
		snprintf(so->filter, sizeof(so->filter), "filter 0x%" PRIx64 "/0x%" PRIx64 "@%s",
			 funcs[0].offset, funcs[0].size, path);
	elf_funcs_free(funcs, (size_t)n);
	free(path);
	return 0;
}

/* Lets socket_group read what it may ask for; failing to is harmless
 * (root still can). */
static void pt_capture_share(const struct pt_capture_limits *limits, const char *path, mode_t mode)
{
	struct group *g = limits->share_group[0] ? getgrnam(limits->share_group) : NULL;

	if (g && chown(path, (uid_t)-1, g->gr_gid) < 0)
		return;
	chmod(path, mode);
}

/* Removes the oldest traces (by modification time: names sort by time
 * only per pid) beyond pt_keep. */
static void pt_capture_rotate(const struct pt_capture_limits *limits)
{
	struct dirent **names;
	struct {
		char name[256];
		time_t mtime;
	} * list;
	size_t n_list = 0;
	int n = scandir(limits->dir, &names, NULL, alphasort);

	if (n < 0)
		return;
	list = calloc((size_t)n, sizeof(*list));
	for (int i = 0; i < n; i++) {
		size_t len = strlen(names[i]->d_name);
		char path[512];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", limits->dir, names[i]->d_name);
		if (list && len > 3 && !strcmp(names[i]->d_name + len - 3, ".pt") &&
		    stat(path, &st) == 0) {
			snprintf(list[n_list].name, sizeof(list[n_list].name), "%s",
				 names[i]->d_name);
			list[n_list++].mtime = st.st_mtime;
		}
		free(names[i]);
	}
	free(names);
	while (list && n_list > limits->keep) {
		size_t oldest = 0;
		char path[512];

		for (size_t i = 1; i < n_list; i++)
			if (list[i].mtime < list[oldest].mtime)
				oldest = i;
		snprintf(path, sizeof(path), "%s/%s", limits->dir, list[oldest].name);
		unlink(path);
		strncat(path, ".vdso", sizeof(path) - strlen(path) - 1);
		unlink(path);
		list[oldest] = list[--n_list];
	}
	free(list);
}

/* Writes the [vdso] copy and points the trace's [vdso] maps at it. */
static int pt_capture_store_vdso(struct pt_trace *t, const char *trace_path, const uint8_t *vdso,
				 size_t size)
{
	char path[4200];
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s.vdso", trace_path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (write(fd, vdso, size) != (ssize_t)size)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && !r)
		r = -errno;
	for (size_t i = 0; !r && i < t->n_maps; i++)
		if (!strcmp(t->maps[i].path, "[vdso]")) {
			char *p = strdup(path);

			if (!p)
				return -ENOMEM;
			free(t->maps[i].path);
			t->maps[i].path = p;
		}
	return r;
}

static int pt_capture_store(const struct pt_capture_limits *limits, uint32_t pid,
			    struct pt_trace *t, const uint8_t *vdso, size_t vdso_size, char *path,
			    size_t path_size, char *err, size_t err_size)
{
	struct timespec now;
	char stamp[32];
	struct tm tm;
	int r;

	if (mkdir(limits->dir, 0750) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, err_size, "cannot create %s: %s", limits->dir, strerror(-r));
		return r;
	}
	pt_capture_share(limits, limits->dir, 0750);
	clock_gettime(CLOCK_REALTIME, &now);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", gmtime_r(&now.tv_sec, &tm));
	/* milliseconds: two recordings of a process in one second both stay */
	snprintf(path, path_size, "%s/%u-%s.%03ld.pt", limits->dir, pid, stamp,
		 now.tv_nsec / 1000000);
	r = vdso ? pt_capture_store_vdso(t, path, vdso, vdso_size) : 0;
	if (!r)
		r = pt_trace_write(t, path);
	if (r < 0) {
		snprintf(err, err_size, "cannot write %s: %s", path, strerror(-r));
		return r;
	}
	pt_capture_share(limits, path, 0640);
	if (vdso) {
		char vpath[4200];

		snprintf(vpath, sizeof(vpath), "%s.vdso", path);
		pt_capture_share(limits, vpath, 0640);
	}
	pt_capture_rotate(limits);
	return 0;
}

int pt_capture_run(const struct pt_capture_opts *o, struct proto_pt_trace_result *ret,
		   char *path_buf, size_t path_size, char *err, size_t err_size)
{
	struct pt_session_opts so;
	const struct pt_session_stats *st;
	struct pt_session *s;
	struct pt_trace t = { 0 };
	uint8_t *vdso = NULL;
	size_t vdso_size = 0;
	uint64_t end;
	int r = pt_capture_setup(o, &so, err, err_size);

	if (r < 0)
		return r;
	r = pt_session_start(&so, &s, err, err_size);
	if (r < 0)
		return r;
	end = clock_monotonic_ns() + (uint64_t)o->req->seconds * 1000000000ULL;
	while (!r && !atomic_load(o->stop) && clock_monotonic_ns() < end) {
		struct timespec ts = { 0, PT_CAPTURE_POLL_NS };

		nanosleep(&ts, NULL);
		r = pt_session_poll(s);
	}
	if (!r)
		r = pt_session_stop(s, &t, &vdso, &vdso_size);
	if (r < 0)
		snprintf(err, err_size, "out of memory recording the trace");
	else
		r = pt_capture_store(o->limits, o->req->pid, &t, vdso, vdso_size, path_buf,
				     path_size, err, err_size);
	if (!r) {
		st = pt_session_stats(s);
		*ret = (struct proto_pt_trace_result){
			.path = path_buf,
			.event = so.aux ? "intel_pt" : "sideband",
			.snapshot = so.snapshot,
			.filtered = so.filter[0] != 0,
			.bytes = st->aux_bytes,
			.threads = st->threads,
			.threads_lost = st->threads_lost,
			.switches = t.n_switches,
			.lost = st->sideband.lost,
		};
		for (size_t i = 0; i < t.n_streams; i++)
			ret->truncated += t.streams[i].truncated;
	}
	free(vdso);
	pt_trace_clear(&t);
	pt_session_free(s);
	return r;
}

void pt_capture_status(const struct pt_capture_limits *limits, struct proto_pt_status *ret,
		       char *reason_buf, size_t reason_size)
{
	struct pt_pmu pmu;

	reason_buf[0] = '\0';
	*ret = (struct proto_pt_status){ .event = "sideband",
					 .available = true,
					 .reason = reason_buf };
	if (limits->sideband_only)
		return;
	ret->event = "intel_pt";
	ret->available = pt_pmu_probe("/sys", &pmu, reason_buf, reason_size) == 0;
	if (ret->available && pmu.ip_filtering)
		ret->address_ranges = pmu.num_address_ranges;
}
