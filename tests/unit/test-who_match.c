/*
 * Unit test of daemon/profile/who_match.c: a cgroup, unit or container
 * filter decided on rows' paths, and the errors that name what the rows had.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "who_match.h"

#define ID_A "4d1f7a6c0123456789abcdef0123456789abcdef0123456789abcdef89abcdef"
#define ID_B "4d1f99990123456789abcdef0123456789abcdef0123456789abcdef89abcdef"

static const char *const rows[] = {
	"/system.slice/nginx.service",
	"/system.slice/nginx.service/worker",
	"/system.slice/docker-" ID_A ".scope",
	"/kubepods.slice/kubepods-pod1234.slice/cri-containerd-" ID_B ".scope",
	"/user.slice/user-1000.slice/user@1000.service/app.slice/my app \xe2\x98\x83.scope",
	"/",
	"",
	NULL,
};

/* Runs the filter over rows; returns which were kept as a bit mask. */
static unsigned run(struct who_match *w)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (who_match_keep(w, rows[i]))
			kept |= 1u << i;
	return kept;
}

static struct who_match *make(const char *cgroup, const char *unit, const char *container)
{
	struct proto_cgroup_filter who = { 0 };
	struct who_match *w = NULL;

	snprintf(who.cgroup, sizeof(who.cgroup), "%s", cgroup);
	snprintf(who.unit, sizeof(who.unit), "%s", unit);
	snprintf(who.container, sizeof(who.container), "%s", container);
	CHECK(who_given(&who) == (*cgroup || *unit || *container));
	CHECK(who_match_new(&who, &w) == 0);
	return w;
}

static void expect(const char *cgroup, const char *unit, const char *container, unsigned want,
		   int verdict, const char *err_has)
{
	struct who_match *w = make(cgroup, unit, container);
	char err[1024] = "";
	unsigned got;

	if (!w)
		return;
	got = run(w);
	CHECK_MSG(got == want, "(%s%s%s: kept 0x%x, want 0x%x)", cgroup, unit, container, got, want);
	CHECK_MSG(who_match_verdict(w, err, sizeof(err)) == verdict, "(%s%s%s: %s)", cgroup, unit,
		  container, err);
	if (err_has)
		CHECK_MSG(strstr(err, err_has) != NULL, "(%s lacks '%s')", err, err_has);
	who_match_free(w);
}

int main(void)
{
	struct proto_cgroup_filter none = { 0 };

	CHECK(!who_given(&none));
	/* A subtree: the cgroup and below, not a sibling that shares its start. */
	expect("/system.slice/nginx.service", "", "", 0x3, 0, NULL);
	expect("/system.slice/nginx", "", "", 0, -ENOENT, "closest there: /system.slice/nginx.service");
	expect("/", "", "", 0x3f, 0, NULL);
	expect("/user.slice/user-1000.slice/user@1000.service/app.slice/my app \xe2\x98\x83.scope",
	       "", "", 0x10, 0, NULL);
	/* A unit with and without its suffix; its sub-cgroups are in it. */
	expect("", "nginx.service", "", 0x3, 0, NULL);
	expect("", "nginx", "", 0x3, 0, NULL);
	expect("", "my app \xe2\x98\x83.scope", "", 0x10, 0, NULL);
	expect("", "ngnix", "", 0, -ENOENT, "unit 'ngnix'");
	expect("", "ngnix.service", "", 0, -ENOENT, "nginx.service");
	/* Containers by a unique prefix, any case; a prefix of two is an error
	 * naming both; one of none names those there. */
	expect("", "", "4d1f7a", 0x4, 0, NULL);
	expect("", "", "4D1F99", 0x8, 0, NULL);
	expect("", "", "4d1f", 0xc, -EEXIST, "docker:" ID_A);
	expect("", "", "4d1f", 0xc, -EEXIST, "containerd:" ID_B);
	expect("", "", "ffff", 0, -ENOENT, "closest there: ");
	/* Rows with no cgroup at all. */
	{
		struct who_match *w = make("", "nginx", "");
		char err[256];

		CHECK(!who_match_keep(w, "") && !who_match_keep(w, NULL));
		CHECK(who_match_verdict(w, err, sizeof(err)) == -ENOENT);
		CHECK_MSG(strstr(err, "name no unit") != NULL, "(%s)", err);
		/* A small buffer: truncated, still terminated. */
		CHECK(who_match_verdict(w, err, 10) == -ENOENT && strlen(err) == 9);
		who_match_free(w);
	}
	who_match_free(NULL);
	/* The outermost cgroup of a subtree who names: a capture follows it. */
	{
		struct proto_cgroup_filter unit = { .unit = "nginx" }, cont = { .container = "4d1f7a" },
					   path = { .cgroup = "/system.slice/nginx.service" };

		CHECK(who_names_subtree(&unit, rows[0]));
		CHECK(!who_names_subtree(&unit, rows[1])); /* inside it */
		CHECK(!who_names_subtree(&unit, rows[2]));
		CHECK(who_names_subtree(&cont, rows[2]));
		CHECK(!who_names_subtree(&cont, rows[3]));
		CHECK(who_names_subtree(&path, rows[0]) && !who_names_subtree(&path, rows[1]));
		CHECK(!who_names_subtree(&none, rows[0]) && !who_names_subtree(&unit, "/"));
	}
	return check_failures ? 1 : 0;
}
