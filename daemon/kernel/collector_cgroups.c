/*
 * collector_cgroups: the cgroup v2 events (bpf/cgroups.bpf.c), which are
 * extras: their programs attached where the kernel lets them, else the
 * reason kept, and their ring read for collector_cgroup_events().
 */
#include "collector_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* The programs of the tracepoint flavour loaded: mkdir, rename, rmdir. */
static void cgroup_progs(const struct collector *c, struct bpf_program *ret[3])
{
	ret[0] = c->raw_tp ? c->skel->progs.cgroup_mkdir_raw : c->skel->progs.cgroup_mkdir_btf;
	ret[1] = c->raw_tp ? c->skel->progs.cgroup_rename_raw : c->skel->progs.cgroup_rename_btf;
	ret[2] = c->raw_tp ? c->skel->progs.cgroup_rmdir_raw : c->skel->progs.cgroup_rmdir_btf;
}

/* The ring's callback: one event to the collector_cgroup_events() call. */
static int cgroup_event_cb(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;
	struct offcpu_cgroup_event ev;
	int r;

	if (size < sizeof(ev))
		return 0; /* not ours: the ring holds nothing else */
	/* A copy: the ring is mapped read-only, and the path must end. */
	memcpy(&ev, data, sizeof(ev));
	ev.path[sizeof(ev.path) - 1] = '\0';
	c->cgroup_n++;
	r = c->cgroup_fn(c->cgroup_arg, &ev);
	if (r) {
		c->cgroup_ret = r;
		return -ECANCELED; /* stops the consume; this event is taken */
	}
	return 0;
}

void collector_cgroup_events_detach(struct collector *c)
{
	for (unsigned i = 0; i < 3; i++) {
		bpf_link__destroy(c->cgroup_links[i]);
		c->cgroup_links[i] = NULL;
	}
	ring_buffer__free(c->cgroup_ring);
	c->cgroup_ring = NULL;
}

void collector_cgroup_events_attach(struct collector *c)
{
	struct bpf_program *progs[3];
	int r;

	if (c->no_cgroup_events_why)
		return; /* not loaded */
	cgroup_progs(c, progs);
	c->cgroup_ring = ring_buffer__new(bpf_map__fd(c->skel->maps.cgroup_events), cgroup_event_cb,
					  c, NULL);
	if (!c->cgroup_ring) {
		r = -errno;
		snprintf(c->cgroup_attach_why, sizeof(c->cgroup_attach_why),
			 "the cgroup_events ring could not be mapped: %s", strerror(-r));
		goto fail;
	}
	for (unsigned i = 0; i < 3; i++) {
		c->cgroup_links[i] = bpf_program__attach(progs[i]);
		if (!c->cgroup_links[i]) {
			r = -errno;
			snprintf(c->cgroup_attach_why, sizeof(c->cgroup_attach_why),
				 "the cgroup tracepoints did not attach (%s): %s",
				 bpf_program__section_name(progs[i]), strerror(-r));
			goto fail;
		}
	}
	return;
fail:
	collector_cgroup_events_detach(c);
	c->no_cgroup_events_why = c->cgroup_attach_why;
}

bool collector_cgroup_prog_attached(const struct collector *c, const struct bpf_program *prog)
{
	struct bpf_program *progs[3];

	cgroup_progs(c, progs);
	for (unsigned i = 0; i < 3; i++)
		if (prog == progs[i])
			return c->cgroup_links[i] != NULL;
	return true;
}

bool collector_cgroup_events_available(const struct collector *c, const char **ret_why)
{
	*ret_why = c->no_cgroup_events_why ? c->no_cgroup_events_why : "";
	return !c->no_cgroup_events_why;
}

int collector_cgroup_events(struct collector *c,
			    int (*fn)(void *arg, const struct offcpu_cgroup_event *ev), void *arg)
{
	int r;

	if (!c->cgroup_ring)
		return -EOPNOTSUPP;
	c->cgroup_fn = fn;
	c->cgroup_arg = arg;
	c->cgroup_n = 0;
	c->cgroup_ret = 0;
	r = ring_buffer__consume(c->cgroup_ring);
	if (c->cgroup_ret < 0)
		return c->cgroup_ret;
	if (r < 0 && r != -ECANCELED)
		return r;
	return c->cgroup_n;
}
