/* pt_session: Intel PT recording of one process (see pt_session.h). */
#define _GNU_SOURCE
#include "pt_session.h"

#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "elf_build_id.h"
#include "proc_maps.h"

/* Sideband ring per thread: 16 data pages hold a few thousand switches. */
#define PT_SIDEBAND_PAGES 16

struct pt_thread {
	uint32_t tid;
	int fd;
	struct perf_event_mmap_page *page; /* the ring's control page */
	size_t ring_size;		   /* data pages' bytes */
	uint8_t *aux;
	struct pt_trace_stream stream; /* data: the trace read so far */
	size_t cap;
};

struct pt_session {
	struct pt_session_opts o;
	long page_size;
	struct pt_thread **threads;
	size_t n_threads, cap_threads;
	struct pt_trace trace; /* meta, maps, switches */
	struct pt_perf_sink sink;
	struct pt_session_stats stats;
	uint8_t *scratch; /* a ring's records, unwrapped */
	size_t scratch_cap;
	uint8_t *vdso;
	size_t vdso_size;
	int build_id_attr; /* attr.build_id accepted (Linux 5.12+) */
};

static int perf_event_open(struct perf_event_attr *a, pid_t tid)
{
	return (int)syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void thread_free(struct pt_session *s, struct pt_thread *t)
{
	if (t->aux)
		munmap(t->aux, s->o.aux_bytes);
	if (t->page)
		munmap(t->page, t->ring_size + s->page_size);
	if (t->fd >= 0)
		close(t->fd);
	free(t->stream.data);
	free(t);
}

static int thread_open_event(struct pt_session *s, uint32_t tid)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = s->o.event_type,
		.config = s->o.event_config,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.sample_id_all = 1,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.mmap = 1, /* the kernel counts MMAP listeners by this bit alone */
		.mmap2 = 1,
		.comm = 1,
		.task = 1,
		.context_switch = 1,
		.build_id = s->build_id_attr,
		/* full mode: wake at a quarter, so draining keeps up */
		.aux_watermark = s->o.aux && !s->o.snapshot ? (uint32_t)(s->o.aux_bytes / 4) : 0,
	};
	int fd = perf_event_open(&a, (pid_t)tid);

	if (fd < 0 && errno == EINVAL && s->build_id_attr) {
		s->build_id_attr = 0; /* before Linux 5.12: build-ids from the files */
		a.build_id = 0;
		fd = perf_event_open(&a, (pid_t)tid);
	}
	return fd < 0 ? -errno : fd;
}

/* The perf clock's TSC conversion, the same for every event: the kernel
 * fills it in an enabled event's page, where sched_clock is the TSC
 * (not in most VMs: kvm-clock). */
static void session_time_conversion(struct pt_session *s, const struct pt_thread *t)
{
	if (s->trace.meta.time_mult || !t->page->cap_user_time_zero)
		return;
	s->trace.meta.time_zero = t->page->time_zero;
	s->trace.meta.time_mult = t->page->time_mult;
	s->trace.meta.time_shift = t->page->time_shift;
}

/* Opens, maps and enables one thread's event. */
static int thread_start(struct pt_session *s, uint32_t tid, char *err, size_t err_size)
{
	struct pt_thread *t;
	int r;

	for (size_t i = 0; i < s->n_threads; i++)
		if (s->threads[i]->tid == tid)
			return 0;
	if (s->n_threads >= s->o.max_threads) {
		snprintf(err, err_size, "process %u has more than %u threads (pt_max_threads)",
			 s->o.pid, s->o.max_threads);
		return -E2BIG;
	}
	if (s->n_threads == s->cap_threads) {
		size_t cap = s->cap_threads ? 2 * s->cap_threads : 16;
		struct pt_thread **n = realloc(s->threads, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->threads = n;
		s->cap_threads = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->tid = t->stream.tid = tid;
	t->fd = thread_open_event(s, tid);
	if (t->fd < 0) {
		r = t->fd;
		t->fd = -1;
		snprintf(err, err_size, "perf_event_open for thread %u: %s", tid, strerror(-r));
		goto fail;
	}
	t->ring_size = (size_t)PT_SIDEBAND_PAGES * s->page_size;
	t->page = mmap(NULL, t->ring_size + s->page_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       t->fd, 0);
	if (t->page == MAP_FAILED) {
		r = -errno;
		t->page = NULL;
		snprintf(err, err_size, "mapping thread %u's perf ring: %s", tid, strerror(-r));
		goto fail;
	}
	if (s->o.aux) {
		t->page->aux_offset = t->ring_size + s->page_size;
		t->page->aux_size = s->o.aux_bytes;
		/* read-only: the kernel overwrites the oldest trace */
		t->aux = mmap(NULL, s->o.aux_bytes, PROT_READ | (s->o.snapshot ? 0 : PROT_WRITE),
			      MAP_SHARED, t->fd, (off_t)t->page->aux_offset);
		if (t->aux == MAP_FAILED) {
			r = -errno;
			t->aux = NULL;
			snprintf(err, err_size,
				 "mapping thread %u's %zu KiB AUX area: %s (perf_event_mlock_kb)",
				 tid, s->o.aux_bytes >> 10, strerror(-r));
			goto fail;
		}
	}
	if (s->o.filter[0] && ioctl(t->fd, PERF_EVENT_IOC_SET_FILTER, s->o.filter) < 0) {
		r = -errno;
		snprintf(err, err_size, "address filter '%s': %s", s->o.filter, strerror(-r));
		goto fail;
	}
	if (ioctl(t->fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
		r = -errno;
		snprintf(err, err_size, "enabling thread %u's event: %s", tid, strerror(-r));
		goto fail;
	}
	session_time_conversion(s, t);
	s->threads[s->n_threads++] = t;
	return 0;
fail:
	thread_free(s, t);
	return r;
}

/* FORK of a thread of the process: trace it too. A thread that has
 * already gone, or one over the limit, is counted, not an error. */
static int session_new_thread(void *ctx, uint32_t tid)
{
	struct pt_session *s = ctx;
	char err[256];
	int r = thread_start(s, tid, err, sizeof(err));

	if (r == -ENOMEM)
		return r;
	if (r < 0)
		s->stats.threads_lost++;
	return 0;
}

/* Opens events for the threads in /proc/PID/task not yet traced. */
static int session_scan_threads(struct pt_session *s, char *err, size_t err_size)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", s->o.pid);
	dir = opendir(path);
	if (!dir) {
		snprintf(err, err_size, "no process %u", s->o.pid);
		return -ESRCH;
	}
	while (!r && (d = readdir(dir))) {
		char *end;
		unsigned long tid = strtoul(d->d_name, &end, 10);

		if (d->d_name[0] < '0' || d->d_name[0] > '9' || *end)
			continue;
		r = thread_start(s, (uint32_t)tid, err, err_size);
		if (r == -ESRCH) { /* the thread exited meanwhile */
			s->stats.threads_lost++;
			r = 0;
		}
	}
	closedir(dir);
	return r;
}

/* The CPU as libipt's pt_cpu and pt_config want it (CPUID leaves 0, 1, 0x15). */
static void session_cpu(struct pt_trace_meta *m)
{
	unsigned eax, ebx, ecx, edx, max_leaf;
	char vendor[13];

	if (!__get_cpuid(0, &max_leaf, &ebx, &ecx, &edx))
		return;
	memcpy(vendor, &ebx, 4);
	memcpy(vendor + 4, &edx, 4);
	memcpy(vendor + 8, &ecx, 4);
	vendor[12] = 0;
	m->cpu_vendor = !strcmp(vendor, "GenuineIntel");
	if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
		m->cpu_family = (eax >> 8) & 0xf;
		m->cpu_model = (eax >> 4) & 0xf;
		if (m->cpu_family == 0xf)
			m->cpu_family += (eax >> 20) & 0xff;
		if (m->cpu_family == 6 || m->cpu_family >= 0xf)
			m->cpu_model += ((eax >> 16) & 0xf) << 4;
		m->cpu_stepping = eax & 0xf;
	}
	if (max_leaf >= 0x15 && __get_cpuid_count(0x15, 0, &eax, &ebx, &ecx, &edx)) {
		m->cpuid_0x15_eax = eax;
		m->cpuid_0x15_ebx = ebx;
	}
}

/* The hex build-id of the file behind a mapping ("" if none): through
 * map_files, which reaches the process's own file (another mount
 * namespace, a deleted binary). */
static void session_build_id(uint32_t pid, uint64_t start, uint64_t end, char *hex, size_t size)
{
	uint8_t id[ELF_BUILD_ID_MAX];
	char path[96];
	struct stat st;
	size_t phnum, n = 0;
	Elf *elf;
	int fd;

	hex[0] = 0;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	elf = fstat(fd, &st) == 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (elf && elf_getphdrnum(elf, &phnum) == 0)
		n = elf_build_id(elf, phnum, (uint64_t)st.st_size, id);
	if (2 * n < size)
		pt_trace_build_id_hex(id, n, hex);
	elf_end(elf);
	close(fd);
}

/* The [vdso]'s bytes, read from the process. */
static void session_save_vdso(struct pt_session *s, uint64_t start, uint64_t end)
{
	char path[64];
	int fd;

	if (s->vdso || end <= start || end - start > (1u << 20))
		return;
	snprintf(path, sizeof(path), "/proc/%u/mem", s->o.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	s->vdso = fd >= 0 ? malloc(end - start) : NULL;
	if (s->vdso && pread(fd, s->vdso, end - start, (off_t)start) == (ssize_t)(end - start))
		s->vdso_size = end - start;
	else {
		free(s->vdso);
		s->vdso = NULL;
	}
	if (fd >= 0)
		close(fd);
}

/* The executable mappings at the start; MMAP2 records add later ones. */
static int session_read_maps(struct pt_session *s, char *err, size_t err_size)
{
	char path[64], line[4096 + 128], build_id[2 * ELF_BUILD_ID_MAX + 1];
	struct proc_map m;
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", s->o.pid);
	f = fopen(path, "re");
	if (!f) {
		snprintf(err, err_size, "no process %u", s->o.pid);
		return -ESRCH;
	}
	while (!r && fgets(line, sizeof(line), f)) {
		if (!proc_maps_parse(line, &m) || !proc_map_exec(&m))
			continue;
		if (!strcmp(m.path, "[vdso]"))
			session_save_vdso(s, m.start, m.end);
		else if (m.path[0] != '/')
			continue;
		session_build_id(s->o.pid, m.start, m.end, build_id, sizeof(build_id));
		r = pt_trace_add_map(&s->trace, m.start, m.end, m.pgoff, m.path, build_id);
	}
	fclose(f);
	return r;
}

int pt_session_start(const struct pt_session_opts *o, struct pt_session **ret, char *err,
		     size_t err_size)
{
	struct pt_session *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->page_size = sysconf(_SC_PAGESIZE);
	s->build_id_attr = 1;
	s->trace.meta.pid = o->pid;
	s->trace.meta.perf_config = o->event_config;
	s->trace.meta.mtc_freq = o->mtc_freq;
	s->trace.meta.nom_freq = o->nom_freq;
	session_cpu(&s->trace.meta);
	s->sink = (struct pt_perf_sink){
		.trace = &s->trace, .pid = o->pid, .new_thread = session_new_thread, .ctx = s
	};
	r = session_read_maps(s, err, err_size);
	/* twice: a thread created while the first scan opened events was
	 * announced to an event not yet enabled */
	if (!r)
		r = session_scan_threads(s, err, err_size);
	if (!r)
		r = session_scan_threads(s, err, err_size);
	if (r < 0) {
		if (r == -ENOMEM)
			snprintf(err, err_size, "out of memory starting the PT session");
		pt_session_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* Copies n bytes at offset off of a ring of size bytes into dst. */
static void ring_copy(uint8_t *dst, const uint8_t *ring, size_t size, uint64_t off, size_t n)
{
	size_t at = (size_t)(off % size), first = n < size - at ? n : size - at;

	memcpy(dst, ring + at, first);
	memcpy(dst + first, ring, n - first);
}

static int session_read_sideband(struct pt_session *s, struct pt_thread *t)
{
	uint64_t head = __atomic_load_n(&t->page->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = t->page->data_tail;
	size_t n = (size_t)(head - tail);
	long used;

	if (head - tail > t->ring_size) { /* not what the kernel writes */
		s->sink.counts.malformed++;
		__atomic_store_n(&t->page->data_tail, head, __ATOMIC_RELEASE);
		return 0;
	}
	if (!n)
		return 0;
	if (n > s->scratch_cap) {
		uint8_t *b = realloc(s->scratch, t->ring_size);

		if (!b)
			return -ENOMEM;
		s->scratch = b;
		s->scratch_cap = t->ring_size;
	}
	ring_copy(s->scratch, (const uint8_t *)t->page + s->page_size, t->ring_size, tail, n);
	used = pt_perf_parse(&s->sink, &t->stream, s->scratch, n);
	if (used < 0)
		return (int)used;
	__atomic_store_n(&t->page->data_tail, tail + (uint64_t)used, __ATOMIC_RELEASE);
	return 0;
}

/* Appends n bytes of the AUX ring at off to the thread's stream; what is
 * over max_bytes is dropped and the stream marked truncated. */
static int thread_keep_aux(struct pt_session *s, struct pt_thread *t, uint64_t off, size_t n)
{
	struct pt_trace_stream *st = &t->stream;

	if (st->size + n > s->o.max_bytes) {
		st->truncated = 1;
		n = s->o.max_bytes - st->size;
	}
	if (st->size + n > t->cap) {
		size_t cap = t->cap ? t->cap : s->o.aux_bytes;
		uint8_t *d;

		while (cap < st->size + n)
			cap *= 2;
		d = realloc(st->data, cap);
		if (!d)
			return -ENOMEM;
		st->data = d;
		t->cap = cap;
	}
	ring_copy(st->data + st->size, t->aux, s->o.aux_bytes, off, n);
	st->size += n;
	s->stats.aux_bytes += n;
	return 0;
}

/* Full mode: the trace written since the last read. */
static int session_drain_aux(struct pt_session *s, struct pt_thread *t)
{
	uint64_t head = __atomic_load_n(&t->page->aux_head, __ATOMIC_ACQUIRE);
	uint64_t tail = t->page->aux_tail;
	int r = 0;

	if (head - tail > s->o.aux_bytes) /* overwritten before it was read */
		t->stream.truncated = 1;
	else if (head != tail)
		r = thread_keep_aux(s, t, tail, (size_t)(head - tail));
	__atomic_store_n(&t->page->aux_tail, head, __ATOMIC_RELEASE);
	return r;
}

/* Snapshot mode: the flight recorder's contents, oldest first. */
static int session_read_snapshot(struct pt_session *s, struct pt_thread *t)
{
	uint64_t head = __atomic_load_n(&t->page->aux_head, __ATOMIC_ACQUIRE);
	size_t size = s->o.aux_bytes;

	if (head <= size)
		return head ? thread_keep_aux(s, t, 0, (size_t)head) : 0;
	return thread_keep_aux(s, t, head, size); /* from head: the ring wrapped */
}

int pt_session_poll(struct pt_session *s)
{
	/* by index: reading a FORK adds threads */
	for (size_t i = 0; i < s->n_threads; i++) {
		int r = session_read_sideband(s, s->threads[i]);

		if (!r && s->o.aux && !s->o.snapshot)
			r = session_drain_aux(s, s->threads[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int pt_session_stop(struct pt_session *s, struct pt_trace *ret, uint8_t **vdso,
		    size_t *vdso_size)
{
	int r = 0;

	for (size_t i = 0; i < s->n_threads; i++)
		ioctl(s->threads[i]->fd, PERF_EVENT_IOC_DISABLE, 0);
	/* no FORK opens an event now: the process is no longer followed */
	s->sink.new_thread = NULL;
	r = pt_session_poll(s);
	for (size_t i = 0; !r && i < s->n_threads; i++) {
		struct pt_thread *t = s->threads[i];

		if (s->o.aux && s->o.snapshot)
			r = session_read_snapshot(s, t);
		if (!r && (t->stream.size || t->stream.truncated || t->stream.lost)) {
			r = pt_trace_add_stream(&s->trace, t->tid, t->stream.data, t->stream.size);
			if (!r) {
				s->trace.streams[s->trace.n_streams - 1].truncated =
					t->stream.truncated;
				s->trace.streams[s->trace.n_streams - 1].lost = t->stream.lost;
			}
		}
	}
	if (r < 0)
		return r;
	s->stats.threads = (uint32_t)s->n_threads;
	s->stats.sideband = s->sink.counts;
	pt_trace_sort_switches(&s->trace);
	*ret = s->trace;
	memset(&s->trace, 0, sizeof(s->trace));
	*vdso = s->vdso;
	*vdso_size = s->vdso_size;
	s->vdso = NULL;
	return 0;
}

const struct pt_session_stats *pt_session_stats(const struct pt_session *s)
{
	return &s->stats;
}

void pt_session_free(struct pt_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_threads; i++)
		thread_free(s, s->threads[i]);
	free(s->threads);
	pt_trace_clear(&s->trace);
	free(s->scratch);
	free(s->vdso);
	free(s);
}
