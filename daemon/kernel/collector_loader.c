/*
 * collector_loader: the system's dynamic loader, for unwind_loader_ready
 * (bpf/stack.bpf.c), which builds a new process's mappings when the loader
 * says it has mapped the libraries: where the loader is (this daemon's
 * PT_INTERP), its symbols, and the uprobe on its _dl_debug_state().
 */
#include "collector_internal.h"

#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "elf_symtab.h"

/* The dynamic loader this daemon runs under (its PT_INTERP), which is the
 * system's: the one dynamically linked programs here start in. */
static bool loader_path(char *buf, size_t size)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	bool found = false;
	size_t n;
	Elf *elf;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	for (size_t i = 0; elf && !elf_getphdrnum(elf, &n) && i < n && !found; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP &&
		    ph.p_filesz < size &&
		    pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz) {
			buf[ph.p_filesz] = '\0';
			found = buf[0] == '/';
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

struct loader_symbols {
	uint64_t debug_state, r_debug;
};

static int loader_symbol(void *arg, const GElf_Sym *sym, const char *name)
{
	struct loader_symbols *l = arg;

	if (!strcmp(name, "_dl_debug_state"))
		l->debug_state = sym->st_value;
	else if (!strcmp(name, "_r_debug"))
		l->r_debug = sym->st_value;
	return l->debug_state && l->r_debug;
}

bool collector_loader_symbols(uint64_t *debug_state, uint64_t *r_state)
{
	struct loader_symbols l = { 0 };
	char path[4096];
	Elf_Scn *scn = NULL;
	struct stat st;
	Elf *elf = NULL;
	int fd = -1;

	if (!loader_path(path, sizeof(path)) || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0 || !(elf = elf_begin(fd, ELF_C_READ, NULL)))
		goto out;
	while ((scn = elf_nextscn(elf, scn)) && !(l.debug_state && l.r_debug)) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB))
			elf_symtab_defined(elf, scn, (uint64_t)st.st_size, loader_symbol, &l);
	}
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	*debug_state = l.debug_state;
	*r_state = l.r_debug ? l.r_debug + offsetof(struct r_debug, r_state) : 0;
	return l.debug_state && l.r_debug;
}

struct bpf_link *collector_loader_attach(struct bpf_program *prog)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "_dl_debug_state");
	char path[4096];

	if (!loader_path(path, sizeof(path)))
		return NULL;
	return bpf_program__attach_uprobe_opts(prog, -1, path, 0, &opts);
}

bool collector_unwind_from_vmas(const struct collector *c)
{
	return c->unwind_from_vmas;
}

bool collector_unwind_loader_hook(const struct collector *c)
{
	return c->loader_link != NULL;
}
