/*
 * debuginfo: see debuginfo.h.
 *
 * One Dwfl session per file, holding that one module placed at its link-time
 * addresses, so module addresses are ELF virtual addresses plus the bias
 * libdwfl reports. libdwfl finds, opens and CRC-checks separate debug files
 * itself (dwfl_standard_find_debuginfo); only the search path is ours.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "debuginfo.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demangle.h"
#include "frame.h"

#define DEBUGINFO_NAME_MAX   512
#define DEBUGINFO_FRAMES_MAX 32 /* functions inlined into one another at one address */

struct debuginfo {
	Dwfl_Callbacks callbacks; /* referenced by dwfl: lives as long */
	char *search_path;	  /* "+:.debug:DEBUG_ROOT": CRC-checked debuglinks */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias; /* module address - ELF vaddr */
};

/* The executable and its DWARF are opened by us and by the standard
 * debuginfo search; finding the main ELF by name is never needed. */
static int debuginfo_no_find_elf(Dwfl_Module *mod, void **userdata, const char *name,
				 Dwarf_Addr base, char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)name, (void)base, (void)file_name, (void)elfp;
	return -1;
}

int debuginfo_open(int fd, const char *path, const char *debug_root, struct debuginfo **ret)
{
	struct debuginfo *d = calloc(1, sizeof(*d));
	GElf_Addr bias;

	if (!d || asprintf(&d->search_path, "+:.debug:%s", debug_root) < 0) {
		free(d);
		close(fd);
		return -ENOMEM;
	}
	d->callbacks = (Dwfl_Callbacks){
		.find_elf = debuginfo_no_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &d->search_path,
	};
	d->dwfl = dwfl_begin(&d->callbacks);
	if (!d->dwfl) {
		close(fd);
		debuginfo_free(d);
		return -ENOMEM;
	}
	/* Consumes fd on success only. */
	d->mod = dwfl_report_elf(d->dwfl, path, path, fd, 0, true);
	if (!d->mod) {
		close(fd);
		debuginfo_free(d);
		return -ENOEXEC;
	}
	dwfl_report_end(d->dwfl, NULL, NULL);
	if (!dwfl_module_getelf(d->mod, &bias)) {
		debuginfo_free(d);
		return -ENOEXEC;
	}
	d->bias = bias;
	*ret = d;
	return 0;
}

void debuginfo_free(struct debuginfo *d)
{
	if (!d)
		return;
	dwfl_end(d->dwfl);
	free(d->search_path);
	free(d);
}

/* A function DIE's name: its linkage name demangled (C++: with its scope
 * and parameters, as ELF symbols are shown), else its DW_AT_name; both may
 * come from the abstract origin of an inlined or out-of-line instance. */
static const char *debuginfo_die_name(Dwarf_Die *die, char *buf, size_t size)
{
	Dwarf_Attribute attr;
	const char *name = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (name && demangle_is_mangled(name)) {
		int err;
		char *d = demangle(name, &err);

		if (d) {
			snprintf(buf, size, "%s", d);
			free(d);
			return buf;
		}
	}
	if (!name && dwarf_attr_integrate(die, DW_AT_name, &attr))
		name = dwarf_formstring(&attr);
	return name;
}

static const char *debuginfo_basename(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

/* The call site of an inlined instance: where, in the function it was
 * inlined into, the call stands. */
static const char *debuginfo_call_site(Dwarf_Die *cu, Dwarf_Die *inlined, unsigned *ret_line)
{
	Dwarf_Attribute attr;
	Dwarf_Word file = 0, line = 0;
	Dwarf_Files *files;
	size_t n_files;

	*ret_line = 0;
	if (!dwarf_attr(inlined, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &file) ||
	    !dwarf_attr(inlined, DW_AT_call_line, &attr) || dwarf_formudata(&attr, &line))
		return NULL;
	if (dwarf_getsrcfiles(cu, &files, &n_files) || file >= n_files)
		return NULL;
	*ret_line = line;
	return dwarf_filesrc(files, file, NULL, NULL);
}

/* Appends frame to buf at *len (';'-joined) if it fits. */
static void debuginfo_append(char *buf, size_t size, size_t *len, const char *frame)
{
	size_t n = strlen(frame), sep = *len ? 1 : 0;

	if (*len + sep + n + 1 > size)
		return;
	if (sep)
		buf[(*len)++] = ';';
	memcpy(buf + *len, frame, n + 1);
	*len += n;
}

int debuginfo_frames(struct debuginfo *d, uint64_t vaddr, const char *outer_name, char *buf,
		     size_t size)
{
	Dwarf_Addr addr = vaddr + d->bias, cu_bias;
	Dwarf_Die *cu, *scopes = NULL;
	const char *file = NULL;
	unsigned line = 0;
	Dwfl_Line *src;
	int n_scopes, n_funcs = 0, first = -1;
	size_t len = 0;

	cu = dwfl_module_addrdie(d->mod, addr, &cu_bias);
	if (!cu)
		return 0;
	n_scopes = dwarf_getscopes(cu, addr - cu_bias, &scopes);
	/* The functions, innermost first, up to the out-of-line one. */
	for (int i = 0; i < n_scopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		if (first < 0)
			first = i;
		n_funcs++;
		if (tag == DW_TAG_subprogram)
			break;
	}
	if (!n_funcs) {
		free(scopes);
		return 0;
	}
	src = dwfl_module_getsrc(d->mod, addr);
	if (src) {
		int l = 0;

		file = dwfl_lineinfo(src, NULL, &l, NULL, NULL, NULL);
		line = l > 0 ? l : 0;
	}
	/* Walk innermost to outermost, keeping each frame's line; then write
	 * them root to leaf. */
	struct {
		const char *name;
		const char *file;
		unsigned line;
		bool inlined;
	} frames[DEBUGINFO_FRAMES_MAX];
	char names[DEBUGINFO_FRAMES_MAX][DEBUGINFO_NAME_MAX];
	int n = 0;

	for (int i = first; i < n_scopes && n < DEBUGINFO_FRAMES_MAX; i++) {
		int tag = dwarf_tag(&scopes[i]);
		const char *name;

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		if (tag == DW_TAG_subprogram && outer_name)
			name = outer_name;
		else
			name = debuginfo_die_name(&scopes[i], names[n], sizeof(names[n]));
		frames[n].name = name ? name : "[unknown]";
		frames[n].file = debuginfo_basename(file);
		frames[n].line = line;
		frames[n].inlined = tag == DW_TAG_inlined_subroutine;
		n++;
		if (tag == DW_TAG_subprogram)
			break;
		/* The next frame out stands at this instance's call site. */
		file = debuginfo_call_site(cu, &scopes[i], &line);
	}
	for (int k = n; k-- > 0;) {
		char frame[DEBUGINFO_NAME_MAX + 64];

		frame_format(frame, sizeof(frame), frames[k].name, frames[k].inlined,
			     frames[k].file, frames[k].line);
		debuginfo_append(buf, size, &len, frame);
	}
	free(scopes);
	return len ? n : 0;
}
