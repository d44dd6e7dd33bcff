/* Unit test of symbols/proc_maps.c: /proc/PID/maps lines as the kernel
 * writes them, and lines that are not mappings. */
#include <string.h>
#include <sys/sysmacros.h>

#include "check.h"
#include "proc_maps.h"

static void check_line(const char *text, uint64_t start, uint64_t end, const char *perms,
		       uint64_t pgoff, uint64_t ino, const char *path, bool deleted)
{
	char line[512];
	struct proc_map m;

	snprintf(line, sizeof(line), "%s", text);
	CHECK_AT(__FILE__, __LINE__,
		 proc_maps_parse(line, &m) && m.start == start && m.end == end &&
			 !strcmp(m.perms, perms) && m.pgoff == pgoff && m.ino == ino &&
			 !strcmp(m.path, path) && m.deleted == deleted,
		 "'%s'", text);
}

int main(void)
{
	static const char *const bad[] = {
		"",
		"garbage\n",
		"7f00-7e00 r-xp 00000000 08:01 1 /x\n", /* end before start */
		"7f00-8000 r-x 00000000 08:01 1 /x\n",	/* short perms */
		"7f00-8000 r-xp zz 08:01 1 /x\n",
		"7f00-8000 r-xp 00000000\n",
		"10000000000000000-10000000000000001 r-xp 0 08:01 1 /x\n", /* over 64 bits */
		"7f00-8000 r-xp 0 08:01 18446744073709551616 /x\n",	     /* inode too */
		"0x7f00-8000 r-xp 0 08:01 1 /x\n",
		" 7f00-8000 r-xp 0 08:01 1 /x\n",
		"7f00-+8000 r-xp 0 08:01 1 /x\n",
		"7f00-8000 r-xp 0 100000000:01 1 /x\n", /* a major no dev_t holds */
	};
	char line[96];
	struct proc_map m;

	check_line("55d0c4a00000-55d0c4a21000 r-xp 00002000 08:01 1835012    /usr/bin/cat\n",
		   0x55d0c4a00000, 0x55d0c4a21000, "r-xp", 0x2000, 1835012, "/usr/bin/cat", false);
	check_line("7f10-7f20 r-xp 00001000 08:01 42 /opt/my app/lib x.so (deleted)\n", 0x7f10,
		   0x7f20, "r-xp", 0x1000, 42, "/opt/my app/lib x.so", true);
	check_line("7ffd1000-7ffd3000 r-xp 00000000 00:00 0                  [vdso]", 0x7ffd1000,
		   0x7ffd3000, "r-xp", 0, 0, "[vdso]", false);
	check_line("7f00-8000 rw-p 00000000 00:00 0\n", 0x7f00, 0x8000, "rw-p", 0, 0, "", false);
	check_line("7f00-8000 rw-p 00000000 00:00 0", 0x7f00, 0x8000, "rw-p", 0, 0, "", false);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "%s", bad[i]);
		CHECK_AT(__FILE__, __LINE__, !proc_maps_parse(line, &m), "'%s' parsed", bad[i]);
	}
	strcpy(line, "1000-2000 r-xp 0 08:01 7 /bin/x\n");
	CHECK(proc_maps_parse(line, &m) && proc_map_exec(&m));
	CHECK(m.dev == makedev(8, 1));
	strcpy(line, "1000-2000 r-xp 0 103:0a 7 /bin/x\n"); /* hex, more than 2 digits */
	CHECK(proc_maps_parse(line, &m) && m.dev == makedev(0x103, 0xa));
	strcpy(line, "1000-2000 r-xp 0 0801 7 /bin/x\n");
	CHECK(!proc_maps_parse(line, &m));
	strcpy(line, "1000-2000 r--p 0 08:01 7 /bin/x\n");
	CHECK(!proc_maps_line_exec(line));
	CHECK(proc_maps_parse(line, &m) && !proc_map_exec(&m));
	/* The largest values, either case of hex digits. */
	check_line("ffffffffffff0000-FFFFFFFFFFFFFFFF r-xp fffffffffffff000 08:01 "
		   "18446744073709551615 /x",
		   0xffffffffffff0000, UINT64_MAX, "r-xp", 0xfffffffffffff000, UINT64_MAX, "/x",
		   false);
	/* The quick check agrees with the parse on whole lines, and is false
	 * for lines that end before their perms. */
	CHECK(proc_maps_line_exec("55d0c4a00000-55d0c4a21000 r-xp 00002000 08:01 1 /x\n"));
	CHECK(proc_maps_line_exec("7f00-8000 --xp 0 00:00 0\n"));
	CHECK(!proc_maps_line_exec("7f00-8000 rw-p 0 00:00 0\n"));
	CHECK(!proc_maps_line_exec("7f00-8000 r-"));
	CHECK(!proc_maps_line_exec("7f00-8000"));
	CHECK(!proc_maps_line_exec(""));
	return check_failures ? 1 : 0;
}
