/* Shared by the db_*.c files: db_sql.c (errors, statements, transactions), db_open.c,
 * db_records.c, db_cubin.c, db_export.c and db_import*.c. Not part of the interface other
 * modules use: that is db.h. */
#ifndef FT_DB_INTERNAL_H
#define FT_DB_INTERNAL_H

#include <sqlite3.h>
#include <sys/types.h>

#include "db.h"

/* Statements prepared once per connection and kept: the lookup path must not re-parse SQL. */
typedef enum ft_db_stmt_id {
  FT_ST_BEGIN,
  FT_ST_COMMIT,
  FT_ST_ROLLBACK,
  FT_ST_DEVICE_UPSERT,
  FT_ST_DEVICE_ID,
  FT_ST_DEVICE_BY_FP,
  FT_ST_DEVICE_BY_NAME,
  FT_ST_PROBLEM_INSERT,
  FT_ST_PROBLEM_ID,
  FT_ST_RUN_INSERT,
  FT_ST_RUN_END,
  FT_ST_RESULT_INSERT,
  FT_ST_BEST,
  FT_ST_EAGER,
  FT_ST_EACH_BEST_EPI,
  FT_ST_EACH_BEST,
  FT_ST_HAS_RESULT,
  FT_ST_EACH_CANDIDATE,
  FT_ST_CUBIN_GET,
  FT_ST_CUBIN_PUT,
  FT_ST_COUNT
} ft_db_stmt_id;

struct ft_db {
  sqlite3 *h;
  char *path;    /* as given, for messages */
  int readonly;  /* FT_DB_READONLY: query_only is set as well */
  int immutable; /* opened with ?immutable=1 (read-only WAL database in a read-only place) */
  int listed;            /* in the list of open databases (db_open.c), by dev and ino */
  dev_t dev;
  ino_t ino;
  struct ft_db *next_open;
  sqlite3_stmt *stmt[FT_ST_COUNT];
};

/* The cached statement id, prepared on first use; bindings cleared. Callers sqlite3_reset() it
 * when done so no read transaction stays open. NULL (err filled) on failure. */
sqlite3_stmt *ft__db_stmt(ft_db *db, ft_db_stmt_id id, ft_err *err);

/* Records "database PATH: DOING: <sqlite message>" with a status mapped from rc. */
ft_status ft__db_error(ft_db *db, ft_err *err, int rc, const char *doing);

/* Runs a cached statement that returns no rows (or whose row is not wanted), then resets it. */
ft_status ft__db_step_done(ft_db *db, sqlite3_stmt *st, const char *doing, ft_err *err);

/* sqlite3_exec of constant SQL text. */
ft_status ft__db_exec(ft_db *db, const char *sql, const char *doing, ft_err *err);

/* FT_OK when ok, else FT_ERR_INVALID_ARG with the message what: argument checks. */
ft_status ft__db_need(ft_err *err, int ok, const char *what);

/* Write transactions: BEGIN IMMEDIATE takes the write lock up front (waiting up to the busy
 * timeout), so a concurrent writer makes us wait instead of failing halfway. ft__db_finish
 * commits when s is FT_OK and rolls back otherwise, returning the final status. */
ft_status ft__db_begin_write(ft_db *db, const char *doing, ft_err *err);
ft_status ft__db_finish(ft_db *db, ft_status s, const char *doing, ft_err *err);

/* A read transaction (readers that take several statements and must see one state of the
 * database); ft__db_end_read ends it, if one is open. */
ft_status ft__db_begin_read(ft_db *db, const char *doing, ft_err *err);
void ft__db_end_read(ft_db *db);

/* A fresh random RFC 4122 version-4 uuid, lowercase, from /dev/urandom (never from a PRNG state
 * that fork() could have duplicated). */
void ft__db_uuid(char out[37]);

/* Applies the migration steps to db in one write transaction. steps[i] takes user_version i + 1
 * to i + 2; the steps from the database's current version up to n_steps + 1 run, nothing else.
 * ft_db_open calls it with the built-in list; tests pass their own to exercise the runner. */
ft_status ft__db_migrate(ft_db *db, const char *const *steps, int n_steps, ft_err *err);

/* Base64 of p[0..n) as a JSON string (quoted) on f. */
void ft__db_base64_write(FILE *f, const unsigned char *p, size_t n);
/* Decodes s[0..len) into a malloc'd *out; 0 when not canonical base64 or out of memory
 * (*nomem tells which). */
int ft__db_base64_decode(const char *s, size_t len, unsigned char **out, size_t *out_len,
                         int *nomem);

#define FT_DB_EXPORT_FORMAT "fusedtune-export" /* the export's "format" */
#define FT_DB_EXPORT_VERSION 2                 /* the newest export version written and read */

#define FT_DB_MESSAGE_MAX (1 << 20) /* longest message / options text, bytes */
/* How long a connection waits for another writer before SQLITE_BUSY. */
#define FT_DB_BUSY_TIMEOUT_MS 10000
#define FT_DB_APPLICATION_ID 1179931982 /* 'FTUN' */
#define FT_DB_NOW "strftime('%Y-%m-%dT%H:%M:%fZ','now')"
/* The rule that makes a result a candidate for best; kept textually identical to the partial
 * index results_best_rank and the view (the migration to version 2 in db_open.c) so SQLite uses
 * the index. */
#define FT_DB_BEST_WHERE \
  "status = 'ok' AND strategy IN ('fused', 'cublas+epilogue') AND median_ms IS NOT NULL"
/* A result's rank (lower is faster): gemm_ratio, the median over its timed rounds of its time
 * over that of cuBLAS's GEMM alone in the same round, so results timed minutes apart compare
 * under one clock state (the clock changes state within one tune; docs/BENCHMARKS.md, "Why the
 * search space is what it is"). NULL for a result without one (schema version 1, an export of version
 * 1, a tune with --flush-l2), which the best's order puts after every ranked one. */
#define FT_DB_RANK(r) r ".gemm_ratio"
/* The latest eager baseline's median e.median_ms at the clock of a best of median med and
 * ratio ratio (SQL text): med * e.gemm_ratio / ratio, so that eager_ms / median_ms is the ratio
 * of the two ratios, each measured against the cuBLAS GEMM beside it (e.median_ms where either
 * ratio is NULL). */
#define FT_DB_EAGER_AT_BEST(med, ratio) "IFNULL(" med " * e.gemm_ratio / " ratio ", e.median_ms)"
/* The best's order: by rank (results with none after every ranked one), then by median, then
 * the earlier created, then the smaller uuid, so every copy of the same data agrees. Kept
 * textually identical to the index results_best_rank (the migration to version 2, db_open.c),
 * so that a lookup is one seek. */
#define FT_DB_BEST_ORDER_KEY(r) "IFNULL(" r "gemm_ratio, 1e308), " r "median_ms, " r "created, " r "uuid"
#define FT_DB_BEST_ORDER(r) FT_DB_BEST_ORDER_KEY(r ".")

#endif
