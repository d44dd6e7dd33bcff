/*
 * Unit test of symbols/file_ids.c: ids handed out in order, what each
 * stands for, retired ids kept and then forgotten, the id space wrapping
 * past ids still known, and serials that tell a reused id from its old
 * file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "file_ids.h"

static struct file_id_info file(uint64_t ino, const char *path)
{
	struct file_id_info f = { .dev = 8, .ino = ino, .tgid = 42 };

	snprintf(f.path, sizeof(f.path), "%s", path);
	return f;
}

static void test_add_get(void)
{
	struct file_id_info a = file(1, "/usr/bin/a"), b = file(2, "/usr/lib/libb.so"), got;
	struct file_ids *ids;
	uint32_t ia, ib;

	CHECK(file_ids_new(100, 60, &ids) == 0);
	memcpy(b.build_id, "\x01\x02\x03", 3);
	b.build_id_len = 3;
	ia = file_ids_add(ids, &a);
	ib = file_ids_add(ids, &b);
	CHECK(ia == 1 && ib == 2);
	CHECK(file_ids_get(ids, ia, &got) == 0);
	CHECK(got.ino == 1 && got.dev == 8 && got.tgid == 42 && !got.build_id_len);
	CHECK_STR(got.path, "/usr/bin/a");
	CHECK(got.serial && got.serial == file_ids_serial(ids, ia));
	CHECK(file_ids_get(ids, ib, &got) == 0);
	CHECK(got.build_id_len == 3 && !memcmp(got.build_id, "\x01\x02\x03", 3));
	CHECK_STR(got.path, "/usr/lib/libb.so");
	CHECK(file_ids_serial(ids, ib) != file_ids_serial(ids, ia));
	CHECK(file_ids_get(ids, 3, &got) == -ENOENT && !file_ids_serial(ids, 3));
	CHECK(file_ids_get(ids, 0, &got) == -ENOENT);
	/* A retired id is still known while it is kept. */
	file_ids_retire(ids, ia);
	CHECK(file_ids_add(ids, &b) == 3);
	CHECK(file_ids_get(ids, ia, &got) == 0 && got.ino == 1);
	CHECK(file_ids_count(ids) == 3);
	file_ids_free(ids);
}

static void test_forget_and_wrap(void)
{
	struct file_id_info f = file(7, "/x"), got;
	struct file_ids *ids;
	uint64_t old;

	CHECK(file_ids_new(3, 0, &ids) == 0); /* ids 1 to 3, retired ones forgotten at once */
	CHECK(file_ids_add(ids, &f) == 1);
	CHECK(file_ids_add(ids, &f) == 2);
	CHECK(file_ids_add(ids, &f) == 3);
	CHECK(file_ids_add(ids, &f) == 0); /* all in use: none to give */
	old = file_ids_serial(ids, 2);
	file_ids_retire(ids, 2);
	CHECK(file_ids_get(ids, 2, &got) == 0); /* until the next add */
	f.ino = 8;
	CHECK(file_ids_add(ids, &f) == 2); /* wrapped past 1 and 3, still in use */
	CHECK(file_ids_get(ids, 2, &got) == 0 && got.ino == 8);
	CHECK(file_ids_serial(ids, 2) != old); /* the same id, another file */
	CHECK(file_ids_count(ids) == 3);
	file_ids_free(ids);
	file_ids_free(NULL);
}

int main(void)
{
	test_add_get();
	test_forget_and_wrap();
	return CHECK_DONE();
}
