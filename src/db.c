/* The SQLite results database: opening (recognition, version check, read-only fallback),
 * schema creation and migrations, and the records tune and lookup need. Export and import are
 * in db_export.c. See docs/FORMAT.md for the tables. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "db_internal.h"
#include "embedded.h"
#include "json.h"

/* Schema migrations, oldest first: entry i takes user_version i + 1 to i + 2. schema.sql always
 * creates version 1 and new databases are brought forward by these same steps, so every
 * database of a given version has the same schema whatever its history. Append, never edit. */
static const char *const k_migrations[] = {
    /* 1 -> 2 goes here. */
    NULL};
#define N_MIGRATIONS ((int)(sizeof k_migrations / sizeof k_migrations[0]) - 1)

#define BUSY_TIMEOUT_MS 10000

int ft_db_schema_version(void) { return 1 + N_MIGRATIONS; }

/* ---------------------------------------------------------------------------------------------
 * Errors and statements */

static ft_status status_of(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOMEM: return FT_ERR_NOMEM;
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN: return FT_ERR_IO;
    default: return FT_ERR_DB;
  }
}

ft_status ft__db_error(ft_db *db, ft_err *err, int rc, const char *doing) {
  /* The handle's message describes rc only if rc is the handle's last error code. */
  const char *msg = db->h && sqlite3_extended_errcode(db->h) == rc ? sqlite3_errmsg(db->h)
                                                                   : sqlite3_errstr(rc);
  return ft__fail(err, status_of(rc), "database %s: %s: %s", db->path, doing, msg);
}

static const char *const k_sql[FT_ST_COUNT] = {
    [FT_ST_BEGIN] = "BEGIN IMMEDIATE",
    [FT_ST_COMMIT] = "COMMIT",
    [FT_ST_ROLLBACK] = "ROLLBACK",
    [FT_ST_DEVICE_UPSERT] =
        "INSERT INTO devices (fingerprint, name, cc_major, cc_minor, sm_count, mem_bytes,"
        " driver_version, runtime_version, nvrtc_version, cublas_version, first_seen, last_seen)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, " FT_DB_NOW ", " FT_DB_NOW ")"
        " ON CONFLICT (fingerprint) DO UPDATE SET name = excluded.name,"
        " cc_major = excluded.cc_major, cc_minor = excluded.cc_minor,"
        " sm_count = excluded.sm_count, mem_bytes = excluded.mem_bytes,"
        " driver_version = excluded.driver_version, runtime_version = excluded.runtime_version,"
        " nvrtc_version = excluded.nvrtc_version, cublas_version = excluded.cublas_version,"
        " last_seen = excluded.last_seen",
    [FT_ST_DEVICE_ID] = "SELECT id FROM devices WHERE fingerprint = ?1",
    [FT_ST_DEVICE_BY_FP] =
        "SELECT id, fingerprint, name, cc_major, cc_minor, sm_count, mem_bytes, driver_version,"
        " runtime_version, nvrtc_version, cublas_version FROM devices WHERE fingerprint = ?1",
    [FT_ST_DEVICE_BY_NAME] =
        "SELECT id, fingerprint, name, cc_major, cc_minor, sm_count, mem_bytes, driver_version,"
        " runtime_version, nvrtc_version, cublas_version FROM devices WHERE name = ?1"
        " ORDER BY last_seen DESC, fingerprint LIMIT 1",
    [FT_ST_PROBLEM_INSERT] =
        "INSERT INTO problems (m, n, k, layout, math, epilogue, epilogue_hash)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
    [FT_ST_PROBLEM_ID] =
        "SELECT id, epilogue FROM problems WHERE m = ?1 AND n = ?2 AND k = ?3 AND layout = ?4"
        " AND math = ?5 AND epilogue_hash = ?6",
    [FT_ST_RUN_INSERT] =
        "INSERT INTO runs (uuid, device_id, started, tool_version, options, budget_s)"
        " VALUES (?1, ?2, " FT_DB_NOW ", ?3, ?4, ?5)",
    [FT_ST_RUN_END] = "UPDATE runs SET ended = " FT_DB_NOW ", outcome = ?2 WHERE id = ?1",
    [FT_ST_RESULT_INSERT] =
        "INSERT INTO results (uuid, run_id, device_id, problem_id, strategy, variant, config,"
        " status, median_ms, min_ms, iqr_ms, repeats, rel_err, max_abs_err, source_hash,"
        " fusedtune_version, message, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
        " ?11, ?12, ?13, ?14, ?15, ?16, ?17, " FT_DB_NOW ")",
    /* The whole lookup in one statement (one read transaction, one step): the problem by its
     * unique key, the best by the view's rule and order written out so that it is one seek in
     * results_best, the latest eager baseline by one seek in results_eager. */
    [FT_ST_BEST] =
        "SELECT p.id, p.epilogue, r.strategy, r.variant, r.config, r.source_hash, r.median_ms,"
        " d.name, (SELECT e.median_ms FROM results AS e WHERE e.device_id = ?1"
        "  AND e.problem_id = p.id AND e.status = 'ok' AND e.strategy = 'eager'"
        "  AND e.median_ms IS NOT NULL ORDER BY e.created DESC, e.uuid DESC LIMIT 1)"
        " FROM problems AS p"
        " LEFT JOIN results AS r ON r.id = (SELECT r2.id FROM results AS r2"
        "  WHERE r2.device_id = ?1 AND r2.problem_id = p.id AND " FT_DB_BEST_WHERE
        "  ORDER BY r2.median_ms, r2.created, r2.uuid LIMIT 1)"
        " LEFT JOIN devices AS d ON d.id = r.device_id"
        " WHERE p.m = ?2 AND p.n = ?3 AND p.k = ?4 AND p.layout = ?5 AND p.math = ?6"
        " AND p.epilogue_hash = ?7",
    [FT_ST_EAGER] =
        "SELECT median_ms FROM results WHERE device_id = ?1 AND problem_id = ?2"
        " AND status = 'ok' AND strategy = 'eager' AND median_ms IS NOT NULL"
        " ORDER BY created DESC, uuid DESC LIMIT 1",
    [FT_ST_EACH_BEST_EPI] =
        "SELECT b.device_id, b.problem_id, p.m, p.n, p.k, p.layout, p.math, p.epilogue,"
        " p.epilogue_hash, d.name, b.strategy, b.variant, b.config, b.source_hash, b.median_ms"
        " FROM best AS b JOIN problems AS p ON p.id = b.problem_id"
        " JOIN devices AS d ON d.id = b.device_id"
        " WHERE b.device_id = ?1 AND p.epilogue_hash = ?2 AND p.math = ?3"
        " ORDER BY p.m, p.n, p.k, p.layout",
    [FT_ST_EACH_BEST] =
        "SELECT b.device_id, b.problem_id, p.m, p.n, p.k, p.layout, p.math, p.epilogue,"
        " p.epilogue_hash, d.name, b.strategy, b.variant, b.config, b.source_hash, b.median_ms"
        " FROM best AS b JOIN problems AS p ON p.id = b.problem_id"
        " JOIN devices AS d ON d.id = b.device_id"
        " ORDER BY d.fingerprint, p.m, p.n, p.k, p.layout, p.math, p.epilogue_hash",
    /* Every launchable correct result of one problem, fastest first (the best's order). */
    [FT_ST_EACH_CANDIDATE] =
        "SELECT strategy, variant, config, source_hash, median_ms, (SELECT name FROM devices WHERE id = ?1)"
        " FROM results WHERE device_id = ?1 AND problem_id = ?2 AND " FT_DB_BEST_WHERE
        " ORDER BY median_ms, created, uuid",
    [FT_ST_HAS_RESULT] =
        "SELECT 1 FROM results WHERE device_id = ?1 AND problem_id = ?2 AND strategy = ?3"
        " AND source_hash = ?4 AND config = ?5 LIMIT 1",
    [FT_ST_CUBIN_GET] =
        "SELECT data FROM cubins WHERE source_hash = ?1 AND arch = ?2 AND nvrtc_version = ?3"
        " AND options = ?4",
    [FT_ST_CUBIN_PUT] =
        "INSERT INTO cubins (source_hash, arch, nvrtc_version, options, data, size, created)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, " FT_DB_NOW ") ON CONFLICT DO NOTHING",
};

sqlite3_stmt *ft__db_stmt(ft_db *db, ft_db_stmt_id id, ft_err *err) {
  sqlite3_stmt *st = db->stmt[id];
  if (st) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
  }
  int rc = sqlite3_prepare_v3(db->h, k_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
  if (rc != SQLITE_OK) {
    ft__db_error(db, err, rc, "preparing a statement");
    return NULL;
  }
  db->stmt[id] = st;
  return st;
}

/* Runs a statement that returns no rows, then resets it. */
static ft_status step_done(ft_db *db, sqlite3_stmt *st, const char *doing, ft_err *err) {
  int rc = sqlite3_step(st);
  ft_status s = (rc == SQLITE_DONE || rc == SQLITE_ROW) ? FT_OK : ft__db_error(db, err, rc, doing);
  sqlite3_reset(st);
  return s;
}

static ft_status exec_sql(ft_db *db, const char *sql, const char *doing, ft_err *err) {
  int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? FT_OK : ft__db_error(db, err, rc, doing);
}

ft_status ft__db_begin_write(ft_db *db, const char *doing, ft_err *err) {
  if (db->readonly)
    return ft__fail(err, FT_ERR_DB, "database %s: %s: the database is open read-only", db->path,
                    doing);
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_BEGIN, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  return step_done(db, st, doing, err);
}

ft_status ft__db_finish(ft_db *db, ft_status s, const char *doing, ft_err *err) {
  if (sqlite3_get_autocommit(db->h)) return s; /* SQLite already rolled back (e.g. on IOERR) */
  if (s == FT_OK) {
    sqlite3_stmt *st = ft__db_stmt(db, FT_ST_COMMIT, err);
    s = st ? step_done(db, st, doing, err) : (err ? err->status : FT_ERR_DB);
    if (s == FT_OK || sqlite3_get_autocommit(db->h)) return s;
  }
  /* Keep the first error's message: the rollback is cleanup, not news. */
  sqlite3_stmt *rb = ft__db_stmt(db, FT_ST_ROLLBACK, NULL);
  if (rb) step_done(db, rb, "rolling back", NULL);
  return s;
}

/* Copies src into dst[cap]; 0 when it does not fit (callers report it: a truncated config
 * would be a wrong configuration, not a shorter one). */
static int copy_text(char *dst, size_t cap, const unsigned char *src) {
  size_t n = src ? strlen((const char *)src) : 0;
  if (n >= cap) return 0;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
  return 1;
}

/* ---------------------------------------------------------------------------------------------
 * uuid */

static int read_urandom(unsigned char *buf, size_t n) {
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  return got == n;
}

void ft__db_uuid(char out[37]) {
  unsigned char b[16];
  if (!read_urandom(b, sizeof b)) {
    /* No /dev/urandom (a bare chroot): SQLite's PRNG, made distinct per process and call
     * because fork() copies its state. */
    static unsigned counter;
    sqlite3_randomness(sizeof b, b);
    unsigned long long mix = (unsigned long long)getpid() * 0x9E3779B97F4A7C15ULL ^
                             (unsigned long long)time(NULL) ^ ((unsigned long long)++counter << 32);
    for (int i = 0; i < 8; i++) b[i] ^= (unsigned char)(mix >> (8 * i));
  }
  b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
  snprintf(out, 37,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
}

/* ---------------------------------------------------------------------------------------------
 * Opening */

/* What a database file says about itself, read without writing anything. */
typedef struct db_probe {
  int user_version;
  int application_id;
  int n_objects;   /* rows of sqlite_master */
  int has_marker;  /* meta.application = 'fusedtune' */
} db_probe;

static ft_status probe(ft_db *db, db_probe *pr, int *rc_out, ft_err *err) {
  static const char sql[] =
      "SELECT (SELECT user_version FROM pragma_user_version),"
      " (SELECT application_id FROM pragma_application_id),"
      " (SELECT count(*) FROM sqlite_master),"
      " (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta')";
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  *rc_out = rc;
  if (rc != SQLITE_ROW) {
    ft_status s = ft__db_error(db, err, rc, "reading the schema");
    sqlite3_finalize(st);
    return s;
  }
  pr->user_version = sqlite3_column_int(st, 0);
  pr->application_id = sqlite3_column_int(st, 1);
  pr->n_objects = sqlite3_column_int(st, 2);
  int has_meta = sqlite3_column_int(st, 3);
  sqlite3_finalize(st);
  pr->has_marker = 0;
  if (!has_meta) return FT_OK;
  rc = sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = 'application'", -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const unsigned char *v = sqlite3_column_text(st, 0);
    pr->has_marker = v && strcmp((const char *)v, "fusedtune") == 0;
  }
  sqlite3_finalize(st);
  return FT_OK; /* an unreadable meta simply is no marker */
}

/* Percent-encodes path into an SQLite URI with ?immutable=1. NULL on allocation failure. */
static char *immutable_uri(const char *path) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(path);
  char *uri = malloc(3 * n + 32);
  if (!uri) return NULL;
  char *o = uri;
  o += sprintf(o, path[0] == '/' ? "file://" : "file:");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)path[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        strchr("-._~/", c)) {
      *o++ = (char)c;
    } else {
      *o++ = '%';
      *o++ = hex[c >> 4];
      *o++ = hex[c & 15];
    }
  }
  strcpy(o, "?immutable=1");
  return uri;
}

static void close_handle(ft_db *db) {
  for (int i = 0; i < FT_ST_COUNT; i++) {
    sqlite3_finalize(db->stmt[i]);
    db->stmt[i] = NULL;
  }
  sqlite3_close(db->h);
  db->h = NULL;
}

static ft_status connect(ft_db *db, const char *name, int flags, ft_err *err) {
  int rc = sqlite3_open_v2(name, &db->h, flags, NULL);
  if (rc != SQLITE_OK) {
    ft_status s = ft__db_error(db, err, rc, "opening");
    close_handle(db);
    return s;
  }
  sqlite3_extended_result_codes(db->h, 1);
  rc = sqlite3_busy_timeout(db->h, BUSY_TIMEOUT_MS);
  if (rc != SQLITE_OK) return ft__db_error(db, err, rc, "setting the busy timeout");
  return FT_OK;
}

/* Whether the file header says WAL (bytes 18 and 19 are 2) and its -wal file holds frames. */
static void wal_state(const char *path, int *is_wal, int *wal_has_frames) {
  unsigned char hdr[20] = {0};
  FILE *f = fopen(path, "rb");
  *is_wal = 0;
  *wal_has_frames = 0;
  if (f) {
    *is_wal = fread(hdr, 1, sizeof hdr, f) == sizeof hdr && hdr[18] == 2 && hdr[19] == 2;
    fclose(f);
  }
  size_t n = strlen(path);
  char *wal = malloc(n + 5);
  if (!wal) return;
  memcpy(wal, path, n);
  memcpy(wal + n, "-wal", 5);
  struct stat sb;
  *wal_has_frames = stat(wal, &sb) == 0 && sb.st_size > 0;
  free(wal);
}

/* A read-only reader of a WAL database needs a -shm file beside it; where it cannot create one
 * (a read-only directory) SQLite refuses. If the WAL is empty the main file alone is complete,
 * so it can be read as immutable. With frames in the WAL it cannot: reading without them could
 * see a half-checkpointed file. */
static ft_status readonly_fallback(ft_db *db, int rc, ft_status s, db_probe *pr, ft_err *err) {
  int is_wal, frames;
  int code = rc & 0xff;
  if (code != SQLITE_READONLY && code != SQLITE_CANTOPEN) return s;
  wal_state(db->path, &is_wal, &frames);
  if (!is_wal) return s;
  if (frames)
    return ft__fail(err, FT_ERR_DB,
                    "database %s: in WAL mode with unmerged changes in %s-wal, and no shared "
                    "memory file can be created beside it (read-only directory?): open it once "
                    "with write access, or copy the database somewhere writable",
                    db->path, db->path);
  char *uri = immutable_uri(db->path);
  if (!uri) return ft__fail(err, FT_ERR_NOMEM, "out of memory opening %s", db->path);
  close_handle(db);
  ft_status st = connect(db, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, err);
  free(uri);
  if (st != FT_OK) return st;
  db->immutable = 1;
  int rc2;
  return probe(db, pr, &rc2, err);
}

/* Checks the file is there and is a file, before SQLite gets a chance to create it. */
static ft_status check_path(const char *path, unsigned flags, ft_err *err) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    if (errno == ENOENT && (!(flags & FT_DB_CREATE) || (flags & FT_DB_READONLY)))
      return ft__fail(err, FT_ERR_NOT_FOUND, "database %s does not exist", path);
    if (errno == ENOENT) return FT_OK;
    return ft__fail(err, FT_ERR_IO, "database %s: cannot access it: %s", path, strerror(errno));
  }
  if (S_ISDIR(sb.st_mode))
    return ft__fail(err, FT_ERR_IO, "database %s is a directory, not a database file", path);
  if (!S_ISREG(sb.st_mode))
    return ft__fail(err, FT_ERR_IO, "database %s is not a regular file", path);
  return FT_OK;
}

/* Decides from the probe whether this is a fusedtune database we can use. *empty is set for a
 * database with no objects at all (a new file), which a writable open initializes. */
static ft_status recognize(ft_db *db, const db_probe *pr, int *empty, ft_err *err) {
  int current = ft_db_schema_version();
  int ours = pr->application_id == FT_DB_APPLICATION_ID || pr->has_marker;
  *empty = pr->n_objects == 0 && pr->user_version == 0 &&
           (pr->application_id == 0 || pr->application_id == FT_DB_APPLICATION_ID);
  if (*empty) {
    if (db->readonly)
      return ft__fail(err, FT_ERR_DB, "database %s is empty: not a fusedtune database", db->path);
    return FT_OK;
  }
  if (!ours)
    return ft__fail(err, FT_ERR_DB,
                    "%s is an SQLite database but not a fusedtune database (no fusedtune marker, "
                    "%d schema objects, user_version %d)",
                    db->path, pr->n_objects, pr->user_version);
  if (pr->user_version > current)
    return ft__fail(err, FT_ERR_VERSION,
                    "database %s has schema version %d, this fusedtune reads up to %d: upgrade "
                    "fusedtune",
                    db->path, pr->user_version, current);
  if (pr->user_version < 1)
    return ft__fail(err, FT_ERR_DB, "database %s has fusedtune's marker but no schema version",
                    db->path);
  if (pr->user_version < current && db->readonly)
    return ft__fail(err, FT_ERR_DB,
                    "database %s has schema version %d, older than this fusedtune's %d: open it "
                    "once with write access to upgrade it",
                    db->path, pr->user_version, current);
  return FT_OK;
}

static int user_version(ft_db *db, int *rc_out) {
  sqlite3_stmt *st = NULL;
  int v = -1;
  int rc = sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    v = sqlite3_column_int(st, 0);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  *rc_out = rc;
  return v;
}

static ft_status set_user_version(ft_db *db, int v, ft_err *err) {
  char sql[64]; /* PRAGMA takes no parameters; v is our own integer, not user text */
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v);
  return exec_sql(db, sql, "setting the schema version", err);
}

ft_status ft__db_migrate(ft_db *db, const char *const *steps, int n_steps, ft_err *err) {
  FT_TRY(ft__db_begin_write(db, "migrating the schema", err));
  int rc;
  int v = user_version(db, &rc); /* again inside the lock: another process may have done it */
  ft_status s = rc == SQLITE_OK ? FT_OK : ft__db_error(db, err, rc, "reading the schema version");
  if (s == FT_OK && (v < 1 || v > n_steps + 1))
    s = ft__fail(err, FT_ERR_VERSION, "database %s: cannot migrate schema version %d to %d",
                 db->path, v, n_steps + 1);
  for (; s == FT_OK && v <= n_steps; v++) {
    char doing[64];
    snprintf(doing, sizeof doing, "migrating the schema from version %d to %d", v, v + 1);
    s = exec_sql(db, steps[v - 1], doing, err);
    if (s == FT_OK) s = set_user_version(db, v + 1, err);
  }
  return ft__db_finish(db, s, "committing the schema migration", err);
}

/* Runs schema.sql on an empty database, in one transaction (re-checked under the write lock:
 * two processes may create the same file at once). */
static ft_status create_schema(ft_db *db, ft_err *err) {
  size_t len;
  const char *sql = ft__embedded("db/schema.sql", &len);
  if (!sql) return ft__fail(err, FT_ERR_INTERNAL, "the embedded db/schema.sql is missing");
  FT_TRY(ft__db_begin_write(db, "creating the schema", err));
  int rc;
  int v = user_version(db, &rc);
  ft_status s = rc == SQLITE_OK ? FT_OK : ft__db_error(db, err, rc, "reading the schema version");
  if (s == FT_OK && v == 0) {
    s = exec_sql(db, sql, "creating the schema", err);
    if (s == FT_OK && user_version(db, &rc) != 1)
      s = ft__fail(err, FT_ERR_INTERNAL, "db/schema.sql did not create schema version 1");
  }
  return ft__db_finish(db, s, "committing the new schema", err);
}

/* Pragmas and schema work of a writable connection, run only after recognize() accepted the
 * file: nothing is written to a database we refuse. */
static ft_status prepare_writable(ft_db *db, int empty, ft_err *err) {
  if (sqlite3_db_readonly(db->h, "main") == 1)
    return ft__fail(err, FT_ERR_DB, "database %s is not writable: open it read-only", db->path);
  /* Two processes switching a new file to WAL at once can each hold the shared lock the other
   * must escalate past; SQLite then answers SQLITE_BUSY at once, without the busy handler
   * (that wait could deadlock). So retry here, for as long as the busy timeout. */
  int rc = SQLITE_BUSY;
  for (int waited = 0; (rc & 0xff) == SQLITE_BUSY && waited <= BUSY_TIMEOUT_MS; waited += 10) {
    if (waited) sqlite3_sleep(10);
    sqlite3_stmt *st = NULL;
    rc = sqlite3_prepare_v2(db->h, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    sqlite3_finalize(st);
  }
  /* Where WAL is impossible (a file system without shared memory) SQLite keeps the old mode and
   * says so in the row; that is still correct, only readers then wait for writers. */
  if (rc != SQLITE_ROW) return ft__db_error(db, err, rc, "switching to WAL journal mode");
  /* NORMAL is durable against a crash of the process in WAL mode; only power loss can drop the
   * last commits, which is an acceptable price for a measurement store. */
  FT_TRY(exec_sql(db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON",
                  "setting pragmas", err));
  if (empty) FT_TRY(create_schema(db, err));
  int v = user_version(db, &rc);
  if (rc != SQLITE_OK) return ft__db_error(db, err, rc, "reading the schema version");
  if (v < ft_db_schema_version()) FT_TRY(ft__db_migrate(db, k_migrations, N_MIGRATIONS, err));
  return FT_OK;
}

/* create: SQLite may create the file (check_path already refused a missing file otherwise, and
 * without SQLITE_OPEN_CREATE SQLite would refuse it again). */
static ft_status open_connection(ft_db *db, int create, ft_err *err) {
  int flags = db->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (!db->readonly && create) flags |= SQLITE_OPEN_CREATE;
  FT_TRY(connect(db, db->path, flags, err));
  db_probe pr;
  int rc;
  ft_status s = probe(db, &pr, &rc, err);
  if (s != FT_OK && db->readonly) s = readonly_fallback(db, rc, s, &pr, err);
  if (s != FT_OK) {
    if ((rc & 0xff) == SQLITE_NOTADB)
      s = ft__fail(err, FT_ERR_DB, "%s is not an SQLite database (%s)", db->path,
                   sqlite3_errstr(rc));
    return s;
  }
  int empty;
  FT_TRY(recognize(db, &pr, &empty, err));
  if (db->readonly) return exec_sql(db, "PRAGMA query_only = 1", "setting query_only", err);
  return prepare_writable(db, empty, err);
}

ft_status ft_db_open(const char *path, unsigned flags, ft_db **out, ft_err *err) {
  if (!out || !path || !path[0])
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_db_open: path and out must be given");
  *out = NULL;
  if (flags & ~(FT_DB_READONLY | FT_DB_CREATE))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_db_open: unknown flags 0x%x", flags);
  int memory = strcmp(path, ":memory:") == 0;
  if (!memory) FT_TRY(check_path(path, flags, err));
  ft_db *db = calloc(1, sizeof *db);
  if (!db || !(db->path = ft__strdup(path))) {
    free(db);
    return ft__fail(err, FT_ERR_NOMEM, "out of memory opening database %s", path);
  }
  db->readonly = (flags & FT_DB_READONLY) != 0;
  ft_status s = open_connection(db, memory || (flags & FT_DB_CREATE), err);
  if (s != FT_OK) {
#ifdef SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE
    /* Leave a refused file exactly as it was, WAL included. */
    if (db->h) sqlite3_db_config(db->h, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
#endif
    ft_db_close(db);
    return s;
  }
  *out = db;
  return FT_OK;
}

void ft_db_close(ft_db *db) {
  if (!db) return;
  close_handle(db);
  free(db->path);
  free(db);
}

void ft_db_remove_files(const char *path) {
  if (!path) return;
  const size_t n = strlen(path);
  char *side = malloc(n + 5);
  remove(path);
  if (!side) return;
  memcpy(side, path, n);
  memcpy(side + n, "-wal", 5);
  remove(side);
  memcpy(side + n, "-shm", 5);
  remove(side);
  free(side);
}

int ft_db_readonly(const ft_db *db) { return db ? db->readonly : 1; }

/* ---------------------------------------------------------------------------------------------
 * Devices, problems, runs */

static ft_status check_json(const char *s, const char *what, ft_err *err);

static ft_status need(ft_err *err, int ok, const char *what) {
  return ok ? FT_OK : ft__fail(err, FT_ERR_INVALID_ARG, "%s", what);
}

/* Reads one id from a statement whose bindings are set; FT_ERR_NOT_FOUND when no row. */
static ft_status select_id(ft_db *db, sqlite3_stmt *st, int64_t *id, const char *doing,
                           ft_err *err) {
  int rc = sqlite3_step(st);
  ft_status s = FT_OK;
  if (rc == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
  } else if (rc == SQLITE_DONE) {
    s = ft__fail(err, FT_ERR_NOT_FOUND, "database %s: %s: no such row", db->path, doing);
  } else {
    s = ft__db_error(db, err, rc, doing);
  }
  sqlite3_reset(st);
  return s;
}

static ft_status insert_device(ft_db *db, const ft_device_info *dev, int64_t *id, ft_err *err) {
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_DEVICE_UPSERT, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_text(st, 1, dev->fingerprint, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, dev->name, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 3, dev->cc_major);
  sqlite3_bind_int(st, 4, dev->cc_minor);
  sqlite3_bind_int(st, 5, dev->sm_count);
  sqlite3_bind_int64(st, 6, dev->mem_bytes);
  sqlite3_bind_int(st, 7, dev->driver_version);
  sqlite3_bind_int(st, 8, dev->runtime_version);
  sqlite3_bind_int(st, 9, dev->nvrtc_version);
  sqlite3_bind_int(st, 10, dev->cublas_version);
  FT_TRY(step_done(db, st, "recording the device", err));
  st = ft__db_stmt(db, FT_ST_DEVICE_ID, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_text(st, 1, dev->fingerprint, -1, SQLITE_STATIC);
  return select_id(db, st, id, "reading the device id", err);
}

ft_status ft_db_upsert_device(ft_db *db, const ft_device_info *dev, int64_t *device_id, ft_err *err) {
  FT_TRY(need(err, db && dev && device_id, "ft_db_upsert_device: NULL argument"));
  FT_TRY(need(err, dev->fingerprint[0] && memchr(dev->fingerprint, 0, sizeof dev->fingerprint),
              "ft_db_upsert_device: empty fingerprint"));
  FT_TRY(need(err, memchr(dev->name, 0, sizeof dev->name) != NULL,
              "ft_db_upsert_device: name not terminated"));
  FT_TRY(ft__db_begin_write(db, "recording the device", err));
  return ft__db_finish(db, insert_device(db, dev, device_id, err), "recording the device", err);
}

static void read_device(sqlite3_stmt *st, ft_device_info *out, int64_t *id) {
  memset(out, 0, sizeof *out);
  *id = sqlite3_column_int64(st, 0);
  /* Both are bounded by what upsert accepted; truncation here would only shorten a name. */
  snprintf(out->fingerprint, sizeof out->fingerprint, "%s", (const char *)sqlite3_column_text(st, 1));
  snprintf(out->name, sizeof out->name, "%s", (const char *)sqlite3_column_text(st, 2));
  out->cc_major = sqlite3_column_int(st, 3);
  out->cc_minor = sqlite3_column_int(st, 4);
  out->sm_count = sqlite3_column_int(st, 5);
  out->mem_bytes = sqlite3_column_int64(st, 6);
  out->driver_version = sqlite3_column_int(st, 7);
  out->runtime_version = sqlite3_column_int(st, 8);
  out->nvrtc_version = sqlite3_column_int(st, 9);
  out->cublas_version = sqlite3_column_int(st, 10);
}

ft_status ft_db_find_device(ft_db *db, const char *fingerprint, const char *name,
                            ft_device_info *out, int64_t *device_id, ft_err *err) {
  FT_TRY(need(err, db && (fingerprint || name) && out && device_id,
              "ft_db_find_device: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, fingerprint ? FT_ST_DEVICE_BY_FP : FT_ST_DEVICE_BY_NAME, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_text(st, 1, fingerprint ? fingerprint : name, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  ft_status s = FT_OK;
  if (rc == SQLITE_ROW)
    read_device(st, out, device_id);
  else if (rc == SQLITE_DONE)
    s = ft__fail(err, FT_ERR_NOT_FOUND, "database %s: no device %s \"%s\"", db->path,
                 fingerprint ? "with fingerprint" : "named", fingerprint ? fingerprint : name);
  else
    s = ft__db_error(db, err, rc, "looking up the device");
  sqlite3_reset(st);
  return s;
}

static void bind_problem_key(sqlite3_stmt *st, const ft_problem_key *key) {
  sqlite3_bind_int64(st, 1, key->m);
  sqlite3_bind_int64(st, 2, key->n);
  sqlite3_bind_int64(st, 3, key->k);
  sqlite3_bind_text(st, 4, key->layout, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, key->math, -1, SQLITE_STATIC);
}

static ft_status check_key(const ft_problem_key *key, ft_err *err) {
  FT_TRY(need(err, key->m > 0 && key->n > 0 && key->k > 0, "problem key: m, n, k must be > 0"));
  FT_TRY(need(err,
              memchr(key->layout, 0, sizeof key->layout) && memchr(key->math, 0, sizeof key->math) &&
                  memchr(key->epilogue, 0, sizeof key->epilogue) &&
                  memchr(key->epilogue_hash, 0, sizeof key->epilogue_hash),
              "problem key: a text field is not NUL-terminated"));
  return need(err, key->layout[0] && key->math[0] && key->epilogue_hash[0],
              "problem key: layout, math and epilogue_hash must be set");
}

static ft_status insert_problem(ft_db *db, const ft_problem_key *key, int64_t *id, ft_err *err) {
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_PROBLEM_INSERT, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  bind_problem_key(st, key);
  sqlite3_bind_text(st, 6, key->epilogue, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, key->epilogue_hash, -1, SQLITE_STATIC);
  FT_TRY(step_done(db, st, "recording the problem", err));
  st = ft__db_stmt(db, FT_ST_PROBLEM_ID, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  bind_problem_key(st, key);
  sqlite3_bind_text(st, 6, key->epilogue_hash, -1, SQLITE_STATIC);
  return select_id(db, st, id, "reading the problem id", err);
}

ft_status ft_db_upsert_problem(ft_db *db, const ft_problem_key *key, int64_t *problem_id, ft_err *err) {
  FT_TRY(need(err, db && key && problem_id, "ft_db_upsert_problem: NULL argument"));
  FT_TRY(check_key(key, err));
  FT_TRY(ft__db_begin_write(db, "recording the problem", err));
  return ft__db_finish(db, insert_problem(db, key, problem_id, err), "recording the problem", err);
}

static ft_status insert_run(ft_db *db, int64_t device_id, const char *options_json,
                            double budget_s, int64_t *run_id, ft_err *err) {
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_RUN_INSERT, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  char uuid[37];
  ft__db_uuid(uuid);
  sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, device_id);
  sqlite3_bind_text(st, 3, ft_version_string(), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, options_json ? options_json : "{}", -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 5, isfinite(budget_s) ? budget_s : 0.0);
  FT_TRY(step_done(db, st, "recording the run", err));
  *run_id = sqlite3_last_insert_rowid(db->h);
  return FT_OK;
}

ft_status ft_db_begin_run(ft_db *db, int64_t device_id, const char *options_json, double budget_s,
                          int64_t *run_id, ft_err *err) {
  FT_TRY(need(err, db && run_id, "ft_db_begin_run: NULL argument"));
  if (options_json) {
    FT_TRY(need(err, strlen(options_json) <= FT_DB_MESSAGE_MAX,
                "ft_db_begin_run: options longer than 1 MiB"));
    FT_TRY(check_json(options_json, "ft_db_begin_run: options_json", err));
  }
  FT_TRY(ft__db_begin_write(db, "recording the run", err));
  ft_status s = insert_run(db, device_id, options_json, budget_s, run_id, err);
  return ft__db_finish(db, s, "recording the run", err);
}

ft_status ft_db_end_run(ft_db *db, int64_t run_id, const char *outcome, ft_err *err) {
  FT_TRY(need(err, db && outcome, "ft_db_end_run: NULL argument"));
  FT_TRY(need(err, strlen(outcome) <= 4096, "ft_db_end_run: outcome longer than 4096 bytes"));
  FT_TRY(ft__db_begin_write(db, "ending the run", err));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_RUN_END, err);
  ft_status s = st ? FT_OK : (err ? err->status : FT_ERR_DB);
  if (s == FT_OK) {
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, outcome, -1, SQLITE_STATIC);
    s = step_done(db, st, "ending the run", err);
  }
  if (s == FT_OK && sqlite3_changes(db->h) != 1)
    s = ft__fail(err, FT_ERR_NOT_FOUND, "database %s: no run with id %lld", db->path,
                 (long long)run_id);
  return ft__db_finish(db, s, "ending the run", err);
}

/* ---------------------------------------------------------------------------------------------
 * Results */

static int known_status(const char *s) {
  static const char *const ok[] = {"ok", "compile_error", "wrong_result", "launch_error", "timeout"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (strcmp(s, ok[i]) == 0) return 1;
  return 0;
}

/* A measurement, or NULL for "not measured" (negative, NaN or infinite). */
static void bind_measure(sqlite3_stmt *st, int i, double v) {
  if (isfinite(v) && v >= 0)
    sqlite3_bind_double(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

/* Whether s is JSON text: config and options columns hold JSON, and import checks it, so the
 * C API must not store what an export could not carry back. */
static ft_status check_json(const char *s, const char *what, ft_err *err) {
  ft_json_doc *doc = NULL;
  ft_err jerr;
  ft_status st = ft_json_parse(s, strlen(s), NULL, &doc, &jerr);
  ft_json_free(doc);
  if (st == FT_ERR_NOMEM) return ft__fail(err, st, "%s", jerr.msg);
  if (st != FT_OK) return ft__fail(err, FT_ERR_INVALID_ARG, "%s is not JSON: %s", what, jerr.msg);
  return FT_OK;
}

/* The same bounds import enforces (docs/FORMAT.md), which are what ft_best/ft_config hold. */
static ft_status check_row(const ft_result_row *r, ft_err *err) {
  FT_TRY(need(err, r->strategy && r->variant && r->config_json && r->status,
              "ft_db_insert_result: strategy, variant, config_json and status must be set"));
  if (!known_status(r->status))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_db_insert_result: unknown status \"%s\"",
                    r->status);
  FT_TRY(need(err, r->strategy[0] && strlen(r->strategy) < 32,
              "ft_db_insert_result: strategy must be 1..31 bytes"));
  FT_TRY(need(err, strlen(r->variant) < 128, "ft_db_insert_result: variant longer than 127 bytes"));
  FT_TRY(need(err, strlen(r->config_json) < FT_CONFIG_JSON_MAX,
              "ft_db_insert_result: config_json longer than 511 bytes"));
  FT_TRY(need(err, !r->source_hash || strlen(r->source_hash) <= 16,
              "ft_db_insert_result: source_hash longer than 16 bytes"));
  FT_TRY(need(err, !r->message || strlen(r->message) <= FT_DB_MESSAGE_MAX,
              "ft_db_insert_result: message longer than 1 MiB"));
  FT_TRY(need(err, r->repeats >= 0, "ft_db_insert_result: repeats must be >= 0"));
  return check_json(r->config_json, "ft_db_insert_result: config_json", err);
}

static void bind_result(sqlite3_stmt *st, const ft_result_row *r, const char *uuid) {
  sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
  if (r->run_id > 0) sqlite3_bind_int64(st, 2, r->run_id);
  sqlite3_bind_int64(st, 3, r->device_id);
  sqlite3_bind_int64(st, 4, r->problem_id);
  sqlite3_bind_text(st, 5, r->strategy, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 6, r->variant, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, r->config_json, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 8, r->status, -1, SQLITE_STATIC);
  bind_measure(st, 9, r->median_ms);
  bind_measure(st, 10, r->min_ms);
  bind_measure(st, 11, r->iqr_ms);
  sqlite3_bind_int(st, 12, r->repeats);
  bind_measure(st, 13, r->rel_err);
  bind_measure(st, 14, r->max_abs_err);
  sqlite3_bind_text(st, 15, r->source_hash ? r->source_hash : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 16, ft_version_string(), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 17, r->message ? r->message : "", -1, SQLITE_STATIC);
}

ft_status ft_db_insert_result(ft_db *db, const ft_result_row *row, ft_err *err) {
  FT_TRY(need(err, db && row, "ft_db_insert_result: NULL argument"));
  FT_TRY(check_row(row, err));
  FT_TRY(ft__db_begin_write(db, "recording a result", err));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_RESULT_INSERT, err);
  ft_status s = st ? FT_OK : (err ? err->status : FT_ERR_DB);
  if (s == FT_OK) {
    char uuid[37];
    ft__db_uuid(uuid);
    bind_result(st, row, uuid);
    s = step_done(db, st, "recording a result", err);
  }
  return ft__db_finish(db, s, "recording a result", err);
}

/* ---------------------------------------------------------------------------------------------
 * Best */

static ft_status too_long(ft_db *db, ft_err *err, const char *what) {
  return ft__fail(err, FT_ERR_DB, "database %s: the best result's %s is longer than ft_best holds",
                  db->path, what);
}

static ft_status eager_ms(ft_db *db, int64_t device_id, int64_t problem_id, double *out,
                          ft_err *err) {
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_EAGER, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_int64(st, 1, device_id);
  sqlite3_bind_int64(st, 2, problem_id);
  int rc = sqlite3_step(st);
  *out = rc == SQLITE_ROW ? sqlite3_column_double(st, 0) : 0.0;
  ft_status s = (rc == SQLITE_ROW || rc == SQLITE_DONE)
                    ? FT_OK : ft__db_error(db, err, rc, "reading the eager baseline");
  sqlite3_reset(st);
  return s;
}

/* Fills the result part of out from columns first.. of st: strategy, variant, config,
 * source_hash, median_ms, device name. */
static ft_status read_best_cols(ft_db *db, sqlite3_stmt *st, int first, ft_best *out, ft_err *err) {
  if (!copy_text(out->strategy, sizeof out->strategy, sqlite3_column_text(st, first)))
    return too_long(db, err, "strategy");
  if (!copy_text(out->variant, sizeof out->variant, sqlite3_column_text(st, first + 1)))
    return too_long(db, err, "variant name");
  if (!copy_text(out->config_json, sizeof out->config_json, sqlite3_column_text(st, first + 2)))
    return too_long(db, err, "config");
  if (!copy_text(out->source_hash, sizeof out->source_hash, sqlite3_column_text(st, first + 3)))
    return too_long(db, err, "source hash");
  out->median_ms = sqlite3_column_double(st, first + 4);
  if (!copy_text(out->device_name, sizeof out->device_name, sqlite3_column_text(st, first + 5)))
    return too_long(db, err, "device name");
  return FT_OK;
}

static ft_status not_tuned(ft_db *db, const ft_problem_key *key, const char *why, ft_err *err) {
  return ft__fail(err, FT_ERR_NOT_FOUND, "database %s: problem %lldx%lldx%lld %s: %s", db->path,
                  (long long)key->m, (long long)key->n, (long long)key->k, key->math, why);
}

/* Reads the FT_ST_BEST row: problem id and epilogue, then the best columns from 2, then the
 * eager median (NULL when never measured). */
static ft_status read_best(ft_db *db, sqlite3_stmt *st, const ft_problem_key *key, ft_best *out,
                           ft_err *err) {
  out->key = *key;
  out->problem_id = sqlite3_column_int64(st, 0);
  if (!copy_text(out->key.epilogue, sizeof out->key.epilogue, sqlite3_column_text(st, 1)))
    return too_long(db, err, "epilogue");
  if (sqlite3_column_type(st, 2) == SQLITE_NULL)
    return not_tuned(db, key, "no correct result on this device", err);
  FT_TRY(read_best_cols(db, st, 2, out, err));
  out->eager_ms = sqlite3_column_double(st, 8); /* NULL reads as 0: "unknown" */
  return FT_OK;
}

ft_status ft_db_best(ft_db *db, int64_t device_id, const ft_problem_key *key, ft_best *out,
                     ft_err *err) {
  FT_TRY(need(err, db && key && out, "ft_db_best: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_BEST, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_int64(st, 1, device_id);
  sqlite3_bind_int64(st, 2, key->m);
  sqlite3_bind_int64(st, 3, key->n);
  sqlite3_bind_int64(st, 4, key->k);
  sqlite3_bind_text(st, 5, key->layout, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 6, key->math, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, key->epilogue_hash, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  ft_status s;
  if (rc == SQLITE_ROW)
    s = read_best(db, st, key, out, err);
  else if (rc == SQLITE_DONE)
    s = not_tuned(db, key, "not in the database", err);
  else
    s = ft__db_error(db, err, rc, "looking up the best result");
  sqlite3_reset(st);
  out->device_id = device_id;
  return s;
}

/* One row of FT_ST_EACH_BEST*: ids, problem key, then the best columns from 9. */
static ft_status read_best_row(ft_db *db, sqlite3_stmt *st, ft_best *b, ft_err *err) {
  memset(b, 0, sizeof *b);
  b->device_id = sqlite3_column_int64(st, 0);
  b->problem_id = sqlite3_column_int64(st, 1);
  b->key.m = sqlite3_column_int64(st, 2);
  b->key.n = sqlite3_column_int64(st, 3);
  b->key.k = sqlite3_column_int64(st, 4);
  if (!copy_text(b->key.layout, sizeof b->key.layout, sqlite3_column_text(st, 5)) ||
      !copy_text(b->key.math, sizeof b->key.math, sqlite3_column_text(st, 6)) ||
      !copy_text(b->key.epilogue, sizeof b->key.epilogue, sqlite3_column_text(st, 7)) ||
      !copy_text(b->key.epilogue_hash, sizeof b->key.epilogue_hash, sqlite3_column_text(st, 8)))
    return too_long(db, err, "problem key");
  if (!copy_text(b->device_name, sizeof b->device_name, sqlite3_column_text(st, 9)))
    return too_long(db, err, "device name");
  /* Columns 10.. are strategy, variant, config, source_hash, median_ms; the device name was
   * read above, so read_best_cols' sixth column is not used here. */
  if (!copy_text(b->strategy, sizeof b->strategy, sqlite3_column_text(st, 10)) ||
      !copy_text(b->variant, sizeof b->variant, sqlite3_column_text(st, 11)) ||
      !copy_text(b->config_json, sizeof b->config_json, sqlite3_column_text(st, 12)) ||
      !copy_text(b->source_hash, sizeof b->source_hash, sqlite3_column_text(st, 13)))
    return too_long(db, err, "configuration");
  b->median_ms = sqlite3_column_double(st, 14);
  return eager_ms(db, b->device_id, b->problem_id, &b->eager_ms, err);
}

static ft_status each_best(ft_db *db, sqlite3_stmt *st, ft_best_cb cb, void *user, ft_err *err) {
  ft_best *b = malloc(sizeof *b); /* ~5 KB: kept off the caller's stack */
  if (!b) {
    sqlite3_reset(st);
    return ft__fail(err, FT_ERR_NOMEM, "out of memory listing best results");
  }
  ft_status s = FT_OK;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    s = read_best_row(db, st, b, err);
    if (s != FT_OK || cb(user, b)) break;
  }
  if (s == FT_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
    s = ft__db_error(db, err, rc, "listing best results");
  sqlite3_reset(st);
  free(b);
  return s;
}

ft_status ft_db_each_best_for_epilogue(ft_db *db, int64_t device_id, const char *epilogue_hash,
                                       const char *math, ft_best_cb cb, void *user, ft_err *err) {
  FT_TRY(need(err, db && epilogue_hash && math && cb,
              "ft_db_each_best_for_epilogue: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_EACH_BEST_EPI, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_int64(st, 1, device_id);
  sqlite3_bind_text(st, 2, epilogue_hash, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, math, -1, SQLITE_STATIC);
  return each_best(db, st, cb, user, err);
}

ft_status ft_db_each_best(ft_db *db, ft_best_cb cb, void *user, ft_err *err) {
  FT_TRY(need(err, db && cb, "ft_db_each_best: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_EACH_BEST, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  return each_best(db, st, cb, user, err);
}

ft_status ft_db_has_result(ft_db *db, int64_t device_id, int64_t problem_id, const char *strategy,
                           const char *config_json, const char *source_hash, int *found, ft_err *err) {
  FT_TRY(need(err, db && strategy && config_json && found, "ft_db_has_result: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_HAS_RESULT, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_int64(st, 1, device_id);
  sqlite3_bind_int64(st, 2, problem_id);
  sqlite3_bind_text(st, 3, strategy, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, source_hash ? source_hash : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, config_json, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  *found = rc == SQLITE_ROW;
  ft_status s = (rc == SQLITE_ROW || rc == SQLITE_DONE)
                    ? FT_OK : ft__db_error(db, err, rc, "checking for an existing result");
  sqlite3_reset(st);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * Cubin cache */

static void bind_cubin_key(sqlite3_stmt *st, const char *source_hash, const char *arch,
                           int nvrtc_version, const char *options) {
  sqlite3_bind_text(st, 1, source_hash, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, arch, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 3, nvrtc_version);
  sqlite3_bind_text(st, 4, options ? options : "", -1, SQLITE_STATIC);
}

static ft_status copy_blob(ft_db *db, sqlite3_stmt *st, void **data, size_t *size, ft_err *err) {
  const void *blob = sqlite3_column_blob(st, 0);
  size_t n = (size_t)sqlite3_column_bytes(st, 0);
  if (!blob && n) return ft__db_error(db, err, sqlite3_errcode(db->h), "reading a cubin");
  void *copy = malloc(n ? n : 1);
  if (!copy) return ft__fail(err, FT_ERR_NOMEM, "out of memory reading a cubin of %zu bytes", n);
  if (n) memcpy(copy, blob, n);
  *data = copy;
  *size = n;
  return FT_OK;
}

ft_status ft_db_cubin_get(ft_db *db, const char *source_hash, const char *arch, int nvrtc_version,
                          const char *options, void **data, size_t *size, ft_err *err) {
  FT_TRY(need(err, db && source_hash && arch && data && size, "ft_db_cubin_get: NULL argument"));
  *data = NULL;
  *size = 0;
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_CUBIN_GET, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  bind_cubin_key(st, source_hash, arch, nvrtc_version, options);
  int rc = sqlite3_step(st);
  ft_status s;
  if (rc == SQLITE_ROW)
    s = copy_blob(db, st, data, size, err);
  else if (rc == SQLITE_DONE)
    s = ft__fail(err, FT_ERR_NOT_FOUND, "database %s: no cached cubin for %s on %s", db->path,
                 source_hash, arch);
  else
    s = ft__db_error(db, err, rc, "reading a cubin");
  sqlite3_reset(st);
  return s;
}

ft_status ft_db_cubin_put(ft_db *db, const char *source_hash, const char *arch, int nvrtc_version,
                          const char *options, const void *data, size_t size, ft_err *err) {
  FT_TRY(need(err, db && source_hash && arch && (data || !size), "ft_db_cubin_put: NULL argument"));
  FT_TRY(need(err, size <= (size_t)INT32_MAX, "ft_db_cubin_put: cubin larger than 2 GiB"));
  FT_TRY(ft__db_begin_write(db, "storing a cubin", err));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_CUBIN_PUT, err);
  ft_status s = st ? FT_OK : (err ? err->status : FT_ERR_DB);
  if (s == FT_OK) {
    bind_cubin_key(st, source_hash, arch, nvrtc_version, options);
    /* A zero-length blob must still be a BLOB, not NULL, for the NOT NULL column. */
    sqlite3_bind_blob64(st, 5, size ? data : "", (sqlite3_uint64)size, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)size);
    s = step_done(db, st, "storing a cubin", err);
  }
  return ft__db_finish(db, s, "storing a cubin", err);
}

void ft_problem_key_set(ft_problem_key *key, int64_t m, int64_t n, int64_t k, const char *epilogue,
                        const char *epilogue_hash) {
  memset(key, 0, sizeof *key);
  key->m = m;
  key->n = n;
  key->k = k;
  snprintf(key->layout, sizeof key->layout, "xrow_wrow");
  snprintf(key->math, sizeof key->math, "fp32");
  snprintf(key->epilogue, sizeof key->epilogue, "%s", epilogue);
  snprintf(key->epilogue_hash, sizeof key->epilogue_hash, "%s", epilogue_hash);
}

ft_status ft_db_each_candidate(ft_db *db, const ft_best *best, ft_best_cb cb, void *user, ft_err *err) {
  FT_TRY(need(err, db && best && cb, "ft_db_each_candidate: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_EACH_CANDIDATE, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_int64(st, 1, best->device_id);
  sqlite3_bind_int64(st, 2, best->problem_id);
  ft_status s = FT_OK;
  int rc;
  ft_best row = *best;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    s = read_best_cols(db, st, 0, &row, err);
    if (s != FT_OK || cb(user, &row)) break;
  }
  if (s == FT_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) s = ft__db_error(db, err, rc, "listing the results");
  sqlite3_reset(st);
  return s;
}
