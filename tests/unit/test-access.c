/* Unit test of daemon/access.c: the policy from the config's names and
 * ids (an unknown name left out with a warning), who may connect, and
 * whose processes a client may capture, reading owners from a proc root of
 * our own. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "check.h"

/* <root>/<pid>/status with real uid uid, as the kernel writes it. */
static void fake_process(const char *root, unsigned pid, unsigned uid)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/%u/status", root, pid);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "Name:\tapp\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t%u\t%u\t%u\t%u\n", uid,
		uid, uid, uid);
	fclose(f);
}

static void test_policy(struct access_policy *p)
{
	struct config cfg = { 0 };
	char warn[256];

	/* "root" and group "root" exist everywhere; the other name nowhere. */
	snprintf(cfg.allowed_users, sizeof(cfg.allowed_users), "1000, no-such-user-offcpu");
	snprintf(cfg.allowed_groups, sizeof(cfg.allowed_groups), "2000");
	snprintf(cfg.capture_users, sizeof(cfg.capture_users), "root,3000");
	snprintf(cfg.capture_groups, sizeof(cfg.capture_groups), "root");
	access_policy_init(p, &cfg, warn, sizeof(warn));
	CHECK_STR(warn, "allowed_users: no user 'no-such-user-offcpu' on this system: left out");
	CHECK(p->n_users == 1 && p->users[0] == 1000);
	CHECK(p->n_groups == 1 && p->groups[0] == 2000);
	CHECK(p->n_capture_users == 2 && p->capture_users[0] == 0 && p->capture_users[1] == 3000);
	CHECK(p->n_capture_groups == 1 && p->capture_groups[0] == 0);
}

static void test_connect(const struct access_policy *p)
{
	struct access_client c = { .known = true, .uid = 1000, .gid = 1000 };
	char why[256] = "";

	CHECK(access_may_connect(p, &c, why, sizeof(why)));
	c.uid = 4000;
	c.gid = 4000;
	CHECK(!access_may_connect(p, &c, why, sizeof(why)));
	CHECK(strstr(why, "uid 4000 is not root") != NULL);
	/* A supplementary group is enough. */
	c.groups[0] = 2000;
	c.n_groups = 1;
	CHECK(access_may_connect(p, &c, why, sizeof(why)));
	/* No credentials: nobody, even with uid 0 in the struct. */
	memset(&c, 0, sizeof(c));
	CHECK(!access_may_connect(p, &c, why, sizeof(why)));
	CHECK_STR(why, "the client's credentials are unknown");
}

static void test_capture(const struct access_policy *p)
{
	char root[] = "/tmp/offcpu-test-access-XXXXXX", why[256] = "", cmd[128];
	struct access_client c = { .known = true, .uid = 1000, .gid = 1000 };
	struct proto_capture_request req = { 0 };

	CHECK(mkdtemp(root) != NULL);
	fake_process(root, 100, 1000);
	fake_process(root, 200, 1001);

	CHECK(access_check_capture(p, &c, &req, root, why, sizeof(why)) == -EPERM);
	CHECK(strstr(why, "capturing every process needs root") != NULL);
	req.pids[0] = 100;
	req.n_pids = 1;
	CHECK(access_check_capture(p, &c, &req, root, why, sizeof(why)) == 0);
	/* Its own process, but a child may exec a setuid program. */
	req.follow_children = 1;
	CHECK(access_check_capture(p, &c, &req, root, why, sizeof(why)) == -EPERM);
	CHECK(strstr(why, "following children (capture -- CMD) needs root") != NULL);
	req.follow_children = 0;
	/* A pid that does not exist passes: the capture's own check names it. */
	req.pids[1] = 999;
	req.n_pids = 2;
	CHECK(access_check_capture(p, &c, &req, root, why, sizeof(why)) == 0);
	req.tids[0] = 200;
	req.n_tids = 1;
	CHECK(access_check_capture(p, &c, &req, root, why, sizeof(why)) == -EPERM);
	CHECK(strstr(why, "capturing 200, owned by uid 1001") != NULL);
	/* Capture users may capture anything. */
	c.uid = 3000;
	CHECK(access_check_capture(p, &c, &req, root, why, sizeof(why)) == 0);
	memset(&req, 0, sizeof(req));
	CHECK(access_check_capture(p, &c, &req, root, why, sizeof(why)) == 0);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CHECK(system(cmd) == 0);
}

int main(void)
{
	struct access_policy p;

	test_policy(&p);
	test_connect(&p);
	test_capture(&p);
	return CHECK_DONE();
}
