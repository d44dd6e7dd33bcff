/*
 * collector_follow: the programs through which a capture's tgid filter
 * follows the processes its members fork (bpf/follow.bpf.c), attached from
 * the start where the kernel lets them, else the reason kept: a capture
 * that asks for them is then refused, not run with its children missing.
 */
#include "collector_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

/* The programs of the tracepoint flavour loaded: fork, exit. */
static void follow_progs(const struct collector *c, struct bpf_program *ret[2])
{
	ret[0] = c->raw_tp ? c->skel->progs.follow_fork_raw : c->skel->progs.follow_fork_btf;
	ret[1] = c->raw_tp ? c->skel->progs.follow_exit_raw : c->skel->progs.follow_exit_btf;
}

void collector_follow_detach(struct collector *c)
{
	for (unsigned i = 0; i < 2; i++) {
		bpf_link__destroy(c->follow_links[i]);
		c->follow_links[i] = NULL;
	}
}

void collector_follow_attach(struct collector *c)
{
	struct bpf_program *progs[2];

	follow_progs(c, progs);
	for (unsigned i = 0; i < 2; i++) {
		c->follow_links[i] = bpf_program__attach(progs[i]);
		if (!c->follow_links[i]) {
			snprintf(c->follow_attach_why, sizeof(c->follow_attach_why),
				 "the tracepoint %s did not attach: %s",
				 bpf_program__section_name(progs[i]), strerror(errno));
			collector_follow_detach(c);
			c->no_follow_why = c->follow_attach_why;
			return;
		}
	}
}

bool collector_follow_prog_attached(const struct collector *c, const struct bpf_program *prog)
{
	struct bpf_program *progs[2];

	follow_progs(c, progs);
	for (unsigned i = 0; i < 2; i++)
		if (prog == progs[i])
			return c->follow_links[i] != NULL;
	return true;
}

bool collector_follow_available(const struct collector *c, const char **ret_why)
{
	*ret_why = c->no_follow_why ? c->no_follow_why : "";
	return !c->no_follow_why;
}
