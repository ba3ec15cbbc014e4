/* Opening a database: recognizing the file, checking its version, the read-only fallback for
 * WAL files in read-only places, WAL mode and the busy timeout, schema creation and
 * migrations; closing and removing. See docs/FORMAT.md for the tables. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_internal.h"
#include "embedded.h"

/* Schema migrations, oldest first: entry i takes user_version i + 1 to i + 2. schema.sql always
 * creates version 1 and new databases are brought forward by these same steps, so every
 * database of a given version has the same schema whatever its history. Append, never edit. */
static const char *const k_migrations[] = {
    /* 1 -> 2: results.gemm_ratio, and the best view ranks by it (FT_DB_RANK) through an index
     * in that order (so the lookup stays one seek). */
    "ALTER TABLE results ADD COLUMN gemm_ratio REAL CHECK (gemm_ratio IS NULL OR gemm_ratio > 0);"
    "DROP INDEX results_best;"
    "CREATE INDEX results_best_rank ON results (device_id, problem_id, " FT_DB_BEST_ORDER_KEY("")
    ") WHERE " FT_DB_BEST_WHERE ";"
    "DROP VIEW best;"
    "CREATE VIEW best AS"
    " SELECT r.id, r.uuid, r.run_id, g.device_id, g.problem_id, r.strategy, r.variant, r.config,"
    " r.status, r.median_ms, r.min_ms, r.iqr_ms, r.repeats, r.rel_err, r.max_abs_err,"
    " r.source_hash, r.fusedtune_version, r.message, r.created, r.gemm_ratio"
    " FROM (SELECT DISTINCT device_id, problem_id FROM results WHERE " FT_DB_BEST_WHERE ") AS g"
    " JOIN results AS r ON r.id = (SELECT r2.id FROM results AS r2"
    " WHERE r2.device_id = g.device_id AND r2.problem_id = g.problem_id AND " FT_DB_BEST_WHERE
    " ORDER BY " FT_DB_BEST_ORDER("r2") " LIMIT 1);",
    NULL};
#define N_MIGRATIONS ((int)(sizeof k_migrations / sizeof k_migrations[0]) - 1)

int ft_db_schema_version(void) { return 1 + N_MIGRATIONS; }

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
  rc = sqlite3_busy_timeout(db->h, FT_DB_BUSY_TIMEOUT_MS);
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

/* A new file's folder must exist: SQLite would say only "unable to open database file". */
static ft_status check_folder(const char *path, ft_err *err) {
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path) return FT_OK;
  char *d = ft__strdup(path);
  if (!d) return FT_OK; /* no verdict: SQLite's own message stands */
  d[slash - path] = 0;
  struct stat sb;
  ft_status s = FT_OK;
  if (stat(d, &sb) != 0 && errno == ENOENT)
    s = ft__fail(err, FT_ERR_IO, "database %s: its folder %s does not exist (a new database's folder must be "
                 "made first)", path, d);
  else if (s == FT_OK && stat(d, &sb) == 0 && !S_ISDIR(sb.st_mode))
    s = ft__fail(err, FT_ERR_IO, "database %s: %s is not a folder", path, d);
  free(d);
  return s;
}

/* Checks the file is there and is a file, before SQLite gets a chance to create it. */
static ft_status check_path(const char *path, unsigned flags, ft_err *err) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    if (errno == ENOENT && (!(flags & FT_DB_CREATE) || (flags & FT_DB_READONLY)))
      return ft__fail(err, FT_ERR_NOT_FOUND, "database %s does not exist", path);
    if (errno == ENOENT) return check_folder(path, err);
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
  return ft__db_exec(db, sql, "setting the schema version", err);
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
    s = ft__db_exec(db, steps[v - 1], doing, err);
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
    s = ft__db_exec(db, sql, "creating the schema", err);
    if (s == FT_OK && user_version(db, &rc) != 1)
      s = ft__fail(err, FT_ERR_INTERNAL, "db/schema.sql did not create schema version 1");
  }
  return ft__db_finish(db, s, "committing the new schema", err);
}

/* Pragmas and schema work of a writable connection, run only after recognize() accepted the
 * file: nothing is written to a database we refuse. */
static ft_status not_writable(const ft_db *db, ft_err *err) {
  return ft__fail(err, FT_ERR_DB,
                  "database %s is not writable (file or folder permissions): commands that only read it "
                  "(list, query, export; ft_open with FT_OPEN_READONLY) still work; to change it, make it "
                  "writable or work on a copy",
                  db->path);
}

/* Whether the folder that holds path may be written (where SQLite makes the -wal and -shm). */
static int folder_writable(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return access(".", W_OK) == 0;
  if (slash == path) return access("/", W_OK) == 0;
  char *d = ft__strdup(path);
  if (!d) return 1; /* no verdict: let SQLite's own message stand */
  d[slash - path] = 0;
  int ok = access(d, W_OK) == 0;
  free(d);
  return ok;
}

static ft_status prepare_writable(ft_db *db, int empty, ft_err *err) {
  if (sqlite3_db_readonly(db->h, "main") == 1) return not_writable(db, err);
  /* Two processes switching a new file to WAL at once can each hold the shared lock the other
   * must escalate past; SQLite then answers SQLITE_BUSY at once, without the busy handler
   * (that wait could deadlock). So retry here, for as long as the busy timeout. */
  int rc = SQLITE_BUSY;
  for (int waited = 0; (rc & 0xff) == SQLITE_BUSY && waited <= FT_DB_BUSY_TIMEOUT_MS; waited += 10) {
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
  FT_TRY(ft__db_exec(db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON",
                     "setting pragmas", err));
  if (empty) FT_TRY(create_schema(db, err));
  int v = user_version(db, &rc);
  if (rc != SQLITE_OK) return ft__db_error(db, err, rc, "reading the schema version");
  if (v < ft_db_schema_version()) FT_TRY(ft__db_migrate(db, k_migrations, N_MIGRATIONS, err));
  return FT_OK;
}

/* create: SQLite may create the file (check_path already refused a missing file otherwise, and
 * without SQLITE_OPEN_CREATE SQLite would refuse it again).
 * A reader (FT_DB_READONLY) is opened read-write all the same, with query_only set before it
 * runs anything but the probe: reading a WAL database makes the -wal and -shm files, and only a
 * connection that may write removes them again, when it is the last one to close (SQLite checks
 * that under an exclusive lock, so a writer's WAL is never removed from under it). Where the
 * file cannot be written SQLite opens it read-only by itself, as SQLITE_OPEN_READONLY would,
 * and readonly_fallback covers a folder where no -shm can be made. */
static ft_status open_connection(ft_db *db, int create, ft_err *err) {
  int flags = SQLITE_OPEN_READWRITE;
  if (!db->readonly && create) flags |= SQLITE_OPEN_CREATE;
  FT_TRY(connect(db, db->path, flags, err));
  db_probe pr;
  int rc;
  ft_status s = probe(db, &pr, &rc, err);
  if (s != FT_OK && db->readonly) s = readonly_fallback(db, rc, s, &pr, err);
  /* A writer that cannot make the -shm of a WAL file (read-only file and folder) fails already
   * in the probe, with SQLite's "attempt to write a readonly database". */
  if (s != FT_OK && !db->readonly && ((rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_CANTOPEN) &&
      (sqlite3_db_readonly(db->h, "main") == 1 || !folder_writable(db->path)))
    return not_writable(db, err);
  if (s != FT_OK) {
    if ((rc & 0xff) == SQLITE_NOTADB)
      s = ft__fail(err, FT_ERR_DB, "%s is not an SQLite database (%s)", db->path,
                   sqlite3_errstr(rc));
    return s;
  }
  int empty;
  FT_TRY(recognize(db, &pr, &empty, err));
  if (db->readonly) return ft__db_exec(db, "PRAGMA query_only = 1", "setting query_only", err);
  return prepare_writable(db, empty, err);
}

/* The databases open in this process, by file identity: ft_db_is_open (a database must not be
 * removed under a connection of its own process). */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static ft_db *open_head;

static void open_list_add(ft_db *db) {
  struct stat sb;
  if (stat(db->path, &sb) != 0) return;
  db->dev = sb.st_dev;
  db->ino = sb.st_ino;
  pthread_mutex_lock(&open_lock);
  db->next_open = open_head;
  open_head = db;
  db->listed = 1;
  pthread_mutex_unlock(&open_lock);
}

static void open_list_remove(ft_db *db) {
  if (!db->listed) return;
  pthread_mutex_lock(&open_lock);
  for (ft_db **p = &open_head; *p; p = &(*p)->next_open)
    if (*p == db) {
      *p = db->next_open;
      break;
    }
  pthread_mutex_unlock(&open_lock);
}

int ft_db_is_open(const char *path) {
  struct stat sb;
  if (!path || stat(path, &sb) != 0) return 0;
  int found = 0;
  pthread_mutex_lock(&open_lock);
  for (ft_db *d = open_head; d && !found; d = d->next_open) found = d->dev == sb.st_dev && d->ino == sb.st_ino;
  pthread_mutex_unlock(&open_lock);
  return found;
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
  int is_wal = 0, wal_frames = 0;
  if (!memory) wal_state(path, &is_wal, &wal_frames);
  ft_status s = open_connection(db, memory || (flags & FT_DB_CREATE), err);
  if (s != FT_OK) {
#ifdef SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE
    /* Leave a refused file exactly as it was, WAL included. Without frames in its WAL there is
     * nothing to merge, and the close may remove the -wal and -shm this open made. */
    if (db->h && wal_frames) sqlite3_db_config(db->h, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
#endif
    ft_db_close(db);
    return s;
  }
  if (!memory) open_list_add(db);
  *out = db;
  return FT_OK;
}

void ft_db_close(ft_db *db) {
  if (!db) return;
  open_list_remove(db);
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

const char *ft_db_path(const ft_db *db) { return db ? db->path : NULL; }
