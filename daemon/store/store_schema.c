/*
 * store_schema: the tables, their migrations and the check of a file before
 * anything is written to it. Schema version 8:
 *
 *   strings(id, name BLOB UNIQUE)     frame names, comms and cgroup paths
 *   stacks(id, frames BLOB UNIQUE)    LEB128 varints of strings.id, root first;
 *                                     waker chains too (x'': no frames)
 *   series(id, tgid, pid, comm_id, kind, state, ustack_id, kstack_id,
 *          chain_id, cgroup_id, ns_pid) UNIQUE
 *                                     cgroup_id 0: no path known (no
 *                                     string); ns_pid 0: tgid or not known
 *   windows(id, start_ms, end_ms, capture_id, n_stacks, n_samples, bytes,
 *           kind, targets)  a capture's kind and targets; NULL: continuous
 *   samples(window_id, series_id, sum_ns, count, bytes)
 *                                     WITHOUT ROWID, clustered by window
 *   hist(window_id, tgid, type, comm_id, buckets)
 *                                     WITHOUT ROWID, key (window_id, tgid,
 *                                     type); buckets: (bucket, count)
 *                                     LEB128 pairs, buckets ascending
 *   heat_cells(window_id, tgid, pid, comm_id, state, kind, sum_ns)
 *                                     WITHOUT ROWID: the heatmap's index,
 *                                     a continuous window's time by thread,
 *                                     state and kind (store_heatmap.c)
 *   heat_windows(window_id)           the windows indexed there
 *
 * Version 1 had no chain_id and no hist; its series all get the empty chain.
 * Until version 4 the heatmap made its index itself, at its first query, and
 * the daemon after each window: version 4 writes it with the window. Until
 * version 5 hist had a row per bucket. Until version 6 series had no
 * cgroup_id and ns_pid; its series get 0 for both. Until version 8 windows
 * had no kind and targets; its windows keep NULL in both.
 *
 * Everything but the values is interned, down to the series (a thread of a
 * kind in a state at a pair of stacks and a waker chain, in a cgroup),
 * which recurs from window to window: a sample row is about 20 bytes, and
 * merging windows groups by one integer. Histogram rows are not interned (a
 * handful of small integers each) but are clustered by window like the
 * samples.
 *
 * Strings are BLOBs so any byte but NUL survives without encoding rules.
 * There are no foreign keys: a window is deleted with its samples, and the
 * series, stacks and strings nothing refers to are collected in batches
 * (store__gc), because finding them means scanning every sample.
 */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hashtab.h"
#include "store_internal.h"

/* PRAGMA application_id: tells our file from someone else's database. */
#define STORE_APPLICATION_ID 0x4f435055 /* "OCPU" */

static const char schema_v1[] =
	"CREATE TABLE strings (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	name BLOB NOT NULL UNIQUE\n"
	");\n"
	"CREATE TABLE stacks (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	frames BLOB NOT NULL UNIQUE\n"
	");\n"
	"CREATE TABLE series (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	tgid INTEGER NOT NULL,\n"
	"	pid INTEGER NOT NULL,\n"
	"	comm_id INTEGER NOT NULL,\n"
	"	kind INTEGER NOT NULL,\n"
	"	state INTEGER NOT NULL,\n"
	"	ustack_id INTEGER NOT NULL,\n"
	"	kstack_id INTEGER NOT NULL,\n"
	"	UNIQUE (tgid, pid, comm_id, kind, state, ustack_id, kstack_id)\n"
	");\n"
	"CREATE TABLE windows (\n"
	"	id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"	start_ms INTEGER NOT NULL,\n"
	"	end_ms INTEGER NOT NULL,\n"
	"	capture_id INTEGER NOT NULL,\n"
	"	n_stacks INTEGER NOT NULL,\n"
	"	n_samples INTEGER NOT NULL,\n"
	"	bytes INTEGER NOT NULL\n"
	");\n"
	"CREATE INDEX windows_by_capture_start ON windows (capture_id, start_ms);\n"
	"CREATE TABLE samples (\n"
	"	window_id INTEGER NOT NULL,\n"
	"	series_id INTEGER NOT NULL,\n"
	"	sum_ns INTEGER NOT NULL,\n"
	"	count INTEGER NOT NULL,\n"
	"	PRIMARY KEY (window_id, series_id)\n"
	") WITHOUT ROWID;\n";

static int migrate_to_1(sqlite3 *db)
{
	return sqlite3_exec(db, schema_v1, NULL, NULL, NULL);
}

/*
 * The chain joins the series' identity. SQLite cannot alter a UNIQUE
 * constraint, so series is rebuilt: a new table, the rows copied with their
 * ids (samples refer to them) and the empty chain, the old one dropped and
 * the new one renamed. Its only index is the constraint's own, which comes
 * with the new table. The empty stack is added only if some series needs it,
 * else store__gc would have to collect it.
 */
static const char migration_v2[] =
	"CREATE TABLE series_v2 (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	tgid INTEGER NOT NULL,\n"
	"	pid INTEGER NOT NULL,\n"
	"	comm_id INTEGER NOT NULL,\n"
	"	kind INTEGER NOT NULL,\n"
	"	state INTEGER NOT NULL,\n"
	"	ustack_id INTEGER NOT NULL,\n"
	"	kstack_id INTEGER NOT NULL,\n"
	"	chain_id INTEGER NOT NULL,\n"
	"	UNIQUE (tgid, pid, comm_id, kind, state, ustack_id, kstack_id, chain_id)\n"
	");\n"
	"INSERT INTO stacks (frames) SELECT x'' WHERE EXISTS (SELECT 1 FROM series) AND\n"
	"	NOT EXISTS (SELECT 1 FROM stacks WHERE frames = x'');\n"
	"INSERT INTO series_v2 (id, tgid, pid, comm_id, kind, state, ustack_id, kstack_id,\n"
	"	chain_id) SELECT id, tgid, pid, comm_id, kind, state, ustack_id, kstack_id,\n"
	"	(SELECT id FROM stacks WHERE frames = x'') FROM series ORDER BY id;\n"
	"DROP TABLE series;\n"
	"ALTER TABLE series_v2 RENAME TO series;\n"
	"CREATE TABLE hist (\n"
	"	window_id INTEGER NOT NULL,\n"
	"	tgid INTEGER NOT NULL,\n"
	"	comm_id INTEGER NOT NULL,\n"
	"	type INTEGER NOT NULL,\n"
	"	bucket INTEGER NOT NULL,\n"
	"	count INTEGER NOT NULL,\n"
	"	PRIMARY KEY (window_id, tgid, type, bucket)\n"
	") WITHOUT ROWID;\n";

static int migrate_to_2(sqlite3 *db)
{
	return sqlite3_exec(db, migration_v2, NULL, NULL, NULL);
}

/* I/O kinds count bytes too; older windows read back as 0 bytes. */
static int migrate_to_3(sqlite3 *db)
{
	return sqlite3_exec(db, "ALTER TABLE samples ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0",
			    NULL, NULL, NULL);
}

/*
 * The heatmap's index joins the schema, written with each continuous window
 * and deleted with it. An older offcpud made the tables at its first heatmap
 * and left an evicted window's rows until its next index write: those go.
 * Windows not indexed yet stay so; the first heatmap over them indexes them.
 */
static const char migration_v4[] =
	"CREATE TABLE IF NOT EXISTS heat_cells (\n"
	"	window_id INTEGER NOT NULL,\n"
	"	tgid INTEGER NOT NULL,\n"
	"	pid INTEGER NOT NULL,\n"
	"	comm_id INTEGER NOT NULL,\n"
	"	state INTEGER NOT NULL,\n"
	"	kind INTEGER NOT NULL,\n"
	"	sum_ns INTEGER NOT NULL,\n"
	"	PRIMARY KEY (window_id, tgid, pid, comm_id, state, kind)\n"
	") WITHOUT ROWID;\n"
	"CREATE TABLE IF NOT EXISTS heat_windows (window_id INTEGER PRIMARY KEY);\n"
	"DELETE FROM heat_cells WHERE window_id NOT IN (SELECT id FROM windows);\n"
	"DELETE FROM heat_windows WHERE window_id NOT IN (SELECT id FROM windows);\n";

static int migrate_to_4(sqlite3 *db)
{
	return sqlite3_exec(db, migration_v4, NULL, NULL, NULL);
}

/*
 * Histograms: a row per window, process and type, its buckets in one blob,
 * not a row per bucket. Under process churn a window had more histogram
 * rows than samples, and each cost an insert (bench/store_replay). A row's
 * comm is its lowest bucket's, the one a query took already: rows of one
 * process and type in a window all had the same comm but where two of its
 * threads' comms differed, of which the drain kept the first per bucket.
 */
static int migrate_to_5(sqlite3 *db)
{
	static const char create[] = "CREATE TABLE hist_v5 (\n"
				     "	window_id INTEGER NOT NULL,\n"
				     "	tgid INTEGER NOT NULL,\n"
				     "	type INTEGER NOT NULL,\n"
				     "	comm_id INTEGER NOT NULL,\n"
				     "	buckets BLOB NOT NULL,\n"
				     "	PRIMARY KEY (window_id, tgid, type)\n"
				     ") WITHOUT ROWID";
	sqlite3_stmt *rows = NULL, *insert = NULL;
	unsigned char blob[HIST_BLOB_MAX];
	int64_t window = 0, tgid = 0, type = 0, comm = 0;
	size_t len = 0;
	int rc;

	rc = sqlite3_exec(db, create, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(
			db,
			"SELECT window_id, tgid, type, bucket, count, comm_id FROM hist "
			"ORDER BY window_id, tgid, type, bucket",
			-1, &rows, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, "INSERT INTO hist_v5 VALUES (?1, ?2, ?3, ?4, ?5)", -1,
					&insert, NULL);
	/* One pass in key order: a row is written when the next starts. */
	for (bool more = rc == SQLITE_OK; more;) {
		int step = sqlite3_step(rows);
		bool same;

		more = step == SQLITE_ROW;
		if (!more && step != SQLITE_DONE) {
			rc = step;
			break;
		}
		same = more && len && sqlite3_column_int64(rows, 0) == window &&
		       sqlite3_column_int64(rows, 1) == tgid &&
		       sqlite3_column_int64(rows, 2) == type;
		if (len && !same) {
			sqlite3_bind_int64(insert, 1, window);
			sqlite3_bind_int64(insert, 2, tgid);
			sqlite3_bind_int64(insert, 3, type);
			sqlite3_bind_int64(insert, 4, comm);
			sqlite3_bind_blob(insert, 5, blob, (int)len, SQLITE_STATIC);
			rc = sqlite3_step(insert);
			sqlite3_reset(insert);
			if (rc != SQLITE_DONE)
				break;
			rc = SQLITE_OK;
			len = 0;
		}
		if (!more)
			break;
		if (!len) {
			window = sqlite3_column_int64(rows, 0);
			tgid = sqlite3_column_int64(rows, 1);
			type = sqlite3_column_int64(rows, 2);
			comm = sqlite3_column_int64(rows, 5); /* the lowest bucket's */
		}
		/* A bucket the key allows once; a count as its uint64 bits. */
		if (len + 20 > sizeof(blob)) {
			rc = SQLITE_CORRUPT;
			break;
		}
		len += store__hist_blob_put(blob + len, (uint64_t)sqlite3_column_int64(rows, 3),
					    (uint64_t)sqlite3_column_int64(rows, 4));
	}
	sqlite3_finalize(rows);
	sqlite3_finalize(insert);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "DROP TABLE hist; ALTER TABLE hist_v5 RENAME TO hist", NULL,
				  NULL, NULL);
	return rc;
}

/*
 * The thread's cgroup and its process's pid in its pid namespace join the
 * series' identity: series is rebuilt as in migration_v2, ids kept, and the
 * old series get 0 for both (not known). No string is made for the unknown
 * cgroup, so nothing is left for store__gc to collect.
 */
static const char migration_v6[] =
	"CREATE TABLE series_v6 (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	tgid INTEGER NOT NULL,\n"
	"	pid INTEGER NOT NULL,\n"
	"	comm_id INTEGER NOT NULL,\n"
	"	kind INTEGER NOT NULL,\n"
	"	state INTEGER NOT NULL,\n"
	"	ustack_id INTEGER NOT NULL,\n"
	"	kstack_id INTEGER NOT NULL,\n"
	"	chain_id INTEGER NOT NULL,\n"
	"	cgroup_id INTEGER NOT NULL,\n"
	"	ns_pid INTEGER NOT NULL,\n"
	"	UNIQUE (tgid, pid, comm_id, kind, state, ustack_id, kstack_id, chain_id,\n"
	"		cgroup_id, ns_pid)\n"
	");\n"
	"INSERT INTO series_v6 (id, tgid, pid, comm_id, kind, state, ustack_id, kstack_id,\n"
	"	chain_id, cgroup_id, ns_pid) SELECT id, tgid, pid, comm_id, kind, state,\n"
	"	ustack_id, kstack_id, chain_id, 0, 0 FROM series ORDER BY id;\n"
	"DROP TABLE series;\n"
	"ALTER TABLE series_v6 RENAME TO series;\n";

static int migrate_to_6(sqlite3 *db)
{
	return sqlite3_exec(db, migration_v6, NULL, NULL, NULL);
}

/*
 * The push outbox (store_push.h): per target, the cursor (the newest window
 * it has acknowledged or set aside; continuous windows after it are still
 * to send) and its counts; and the windows a target refused, with why.
 */
static const char migration_v7[] = "CREATE TABLE IF NOT EXISTS push_targets (\n"
				   "	name TEXT PRIMARY KEY,\n"
				   "	cursor INTEGER NOT NULL,\n"
				   "	sent INTEGER NOT NULL DEFAULT 0,\n"
				   "	set_aside INTEGER NOT NULL DEFAULT 0,\n"
				   "	lost INTEGER NOT NULL DEFAULT 0,\n"
				   "	last_success_ms INTEGER NOT NULL DEFAULT 0\n"
				   ");\n"
				   "CREATE TABLE IF NOT EXISTS push_set_aside (\n"
				   "	target TEXT NOT NULL,\n"
				   "	window_id INTEGER NOT NULL,\n"
				   "	at_ms INTEGER NOT NULL,\n"
				   "	status INTEGER NOT NULL,\n"
				   "	message TEXT NOT NULL,\n"
				   "	PRIMARY KEY (target, window_id)\n"
				   ");\n";

static int migrate_to_7(sqlite3 *db)
{
	return sqlite3_exec(db, migration_v7, NULL, NULL, NULL);
}

/* A capture's window says what it recorded: its kind and its targets.
 * Older windows keep NULL in both: not known. SQLite has no ADD COLUMN IF
 * NOT EXISTS, and a file whose version was set back (as tests do) has
 * them already. */
static const char migration_v8[] = "ALTER TABLE windows ADD COLUMN kind INTEGER;\n"
				   "ALTER TABLE windows ADD COLUMN targets TEXT;\n";

static int migrate_to_8(sqlite3 *db)
{
	sqlite3_stmt *st;
	bool have = false;
	int rc;

	rc = sqlite3_prepare_v2(
		db, "SELECT count(*) FROM pragma_table_info('windows') WHERE name = 'kind'", -1,
		&st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		have = sqlite3_column_int64(st, 0) > 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return rc;
	return have ? SQLITE_OK : sqlite3_exec(db, migration_v8, NULL, NULL, NULL);
}

/* migrations[v] turns a version v database into version v + 1; the schema
 * version is the number of entries. Append only: never edit a shipped step. */
static int (*const migrations[])(sqlite3 *db) = {
	migrate_to_1, migrate_to_2, migrate_to_3, migrate_to_4,
	migrate_to_5, migrate_to_6, migrate_to_7, migrate_to_8,
};

#define STORE_SCHEMA_VERSION ((int64_t)(sizeof(migrations) / sizeof(migrations[0])))

/* Reads without writing: a file that is not ours stays as it was. */
int store__check(struct store *s, const char *path, int64_t *ret_version)
{
	sqlite3_stmt *st;
	int64_t version = 0, app_id, tables;
	char problem[256] = "";
	int rc, r;

	rc = sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			version = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_ROW)
		return store__fail(s, rc, "'%s' is not a usable SQLite database", path);
	r = store__pragma_read(s, "PRAGMA application_id", &app_id);
	if (r >= 0)
		r = store__pragma_read(s, "SELECT count(*) FROM sqlite_schema", &tables);
	if (r < 0)
		return r;

	if (tables) {
		rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW)
				snprintf(problem, sizeof(problem), "%s",
					 (const char *)sqlite3_column_text(st, 0));
			sqlite3_finalize(st);
		}
		if (rc != SQLITE_ROW)
			return store__fail(s, rc, "'%s' failed its integrity check", path);
		/* One line: the check's report spans several. */
		for (char *p = problem; *p; p++)
			if (*p == '\n')
				*p = ' ';
		if (strcmp(problem, "ok"))
			return store__error(s, -EIO, "'%s' failed its integrity check: %s", path,
					    problem);
	}
	if (tables && (version == 0 || app_id != STORE_APPLICATION_ID))
		return store__error(s, -EPROTO, "'%s' is a database of another program", path);
	if (version > STORE_SCHEMA_VERSION)
		return store__error(s, -EPROTO,
				    "'%s' has schema version %lld; this offcpud knows up to %lld",
				    path, (long long)version, (long long)STORE_SCHEMA_VERSION);
	*ret_version = version;
	return 0;
}

int store__schema_current(struct store *s, const char *path)
{
	int64_t version;
	int r = store__pragma_read(s, "PRAGMA user_version", &version);

	if (r >= 0 && version != STORE_SCHEMA_VERSION)
		r = store__error(s, -EPROTO, "'%s' has schema version %lld, not %lld", path,
				 (long long)version, (long long)STORE_SCHEMA_VERSION);
	return r;
}

int store__migrate(struct store *s, int64_t version)
{
	char sql[128];
	int rc, r;

	if (version == STORE_SCHEMA_VERSION)
		return 0;
	r = store__exec(s, "BEGIN IMMEDIATE", "cannot begin the migration");
	if (r < 0)
		return r;
	for (int64_t v = version; v < STORE_SCHEMA_VERSION; v++) {
		rc = migrations[v](s->db);
		if (rc != SQLITE_OK) {
			r = store__fail(s, rc, "cannot migrate the schema from version %lld",
					(long long)v);
			goto fail;
		}
	}
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %lld",
		 STORE_APPLICATION_ID, (long long)STORE_SCHEMA_VERSION);
	r = store__exec(s, sql, "cannot set the schema version");
	if (r >= 0)
		r = store__exec(s, "COMMIT", "cannot commit the migration");
	if (r >= 0)
		return 0;
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}
