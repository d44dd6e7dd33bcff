/*
 * request: the request functions of a request-synchronous slot ("the
 * do_command pattern"). Resolves each "SYMBOL[@BINARY]" spec to functions
 * (elf_funcs), attaches their probes to the slot (collector), and reads back
 * each spec's request latency. A spec is looked up in each target process
 * (its executable, then its mapped libraries) or, without processes, in the
 * named binary for every process that runs it. Does not log.
 */
#ifndef REQUEST_H
#define REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "elf_funcs.h"
#include "proto.h"

struct request_spec {
	char *spec;   /* as given */
	char *binary; /* where it was found first, as the process sees it */
	struct elf_func *funcs;
	size_t n_funcs;
};

struct request_probes {
	struct request_spec specs[OFFCPU_MAX_REQUESTS];
	size_t n_specs;
};

/*
 * Resolves specs (at most OFFCPU_MAX_REQUESTS) in the processes pids (none:
 * every process running the spec's binary, which must then be named) and
 * attaches their probes to slot, which must have been added with
 * filter.requests. Returns 0, or -errno with a user-facing message in err:
 * -ESRCH (no such symbol, with close matches), -ENOENT (no such binary),
 * -EINVAL (no binary and no pid), -E2BIG (too many functions or probes),
 * -EOPNOTSUPP (raw_tp fallback), or the kernel's error from attaching.
 * Probes attached before an error stay until the slot is released; call
 * request_probes_free() in every case.
 */
int request_probes_attach(struct request_probes *rp, struct collector *c, unsigned slot,
			  const char *const *specs, size_t n_specs, const uint32_t *pids,
			  size_t n_pids, char *err, size_t err_size);
void request_probes_free(struct request_probes *rp);

/*
 * Each spec's latency in slot so far, for a reply: ret[i] for spec i, its
 * functions in funcs (at most n_funcs_max in all, shared among the specs).
 * Strings point into rp. Returns the number of specs.
 */
size_t request_probes_stats(const struct request_probes *rp, struct collector *c, unsigned slot,
			    struct proto_request_stats ret[OFFCPU_MAX_REQUESTS],
			    struct proto_request_function *funcs, size_t n_funcs_max);

#endif
