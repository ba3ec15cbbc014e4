/* The plumbing every db_*.c file uses: SQLite errors as ft_status, the statements prepared once
 * per connection, and write transactions. */
#include "db_columns.h"
#include "db_internal.h"

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

/* Column n of a device is result column n: id comes first. */
#define DEVICE_SELECT "SELECT id, " FT_DB_COLS(FT_DEVICE_COLUMNS, ) " FROM devices"

/* The rows read_best_row (db_records.c) reads. */
#define EACH_BEST_SELECT                                                                        \
  "SELECT b.device_id, b.problem_id, p.m, p.n, p.k, p.layout, p.math, p.epilogue,"              \
  " p.epilogue_hash, d.name, b.strategy, b.variant, b.config, b.source_hash, b.median_ms,"      \
  " b.rel_err, b.max_abs_err, b.gemm_ratio"                                                         \
  " FROM best AS b JOIN problems AS p ON p.id = b.problem_id"                                   \
  " JOIN devices AS d ON d.id = b.device_id"

static const char *const k_sql[FT_ST_COUNT] = {
    [FT_ST_BEGIN] = "BEGIN IMMEDIATE",
    [FT_ST_COMMIT] = "COMMIT",
    [FT_ST_ROLLBACK] = "ROLLBACK",
    /* A device seen again keeps its first_seen; everything else is replaced (the fingerprint
     * by itself: it is the conflict). */
    [FT_ST_DEVICE_UPSERT] = FT_DB_INSERT(devices, FT_DEVICE_COLUMNS)
        " ON CONFLICT (fingerprint)" FT_DB_UPSERT_SET(FT_DEVICE_COLUMNS),
    [FT_ST_DEVICE_ID] = "SELECT id FROM devices WHERE fingerprint = ?1",
    [FT_ST_DEVICE_BY_FP] = DEVICE_SELECT " WHERE fingerprint = ?1",
    [FT_ST_DEVICE_BY_NAME] =
        DEVICE_SELECT " WHERE name = ?1 ORDER BY last_seen DESC, fingerprint LIMIT 1",
    [FT_ST_PROBLEM_INSERT] = FT_DB_INSERT(problems, FT_PROBLEM_COLUMNS) " ON CONFLICT DO NOTHING",
    [FT_ST_PROBLEM_ID] = "SELECT id, epilogue FROM problems WHERE " FT_DB_PROBLEM_KEY_WHERE,
    /* ended and outcome stay NULL until ft_db_end_run. */
    [FT_ST_RUN_INSERT] = FT_DB_INSERT(runs, FT_RUN_COLUMNS),
    [FT_ST_RUN_END] = "UPDATE runs SET ended = " FT_DB_NOW ", outcome = ?2 WHERE id = ?1",
    [FT_ST_RESULT_INSERT] = FT_DB_INSERT(results, FT_RESULT_COLUMNS),
    /* The whole lookup in one statement (one read transaction, one step): the problem by its
     * unique key, the best by the view's rule and order written out (one seek in
     * results_best_rank), the latest eager baseline by one seek in results_eager. */
    [FT_ST_BEST] =
        "SELECT p.id, p.epilogue, r.strategy, r.variant, r.config, r.source_hash, r.median_ms,"
        " d.name, (SELECT " FT_DB_EAGER_AT_BEST("r.median_ms", "r.gemm_ratio") " FROM results AS e WHERE e.device_id = ?1"
        "  AND e.problem_id = p.id AND e.status = 'ok' AND e.strategy = 'eager'"
        "  AND e.median_ms IS NOT NULL ORDER BY e.created DESC, e.uuid DESC LIMIT 1),"
        " r.rel_err, r.max_abs_err, r.gemm_ratio"
        " FROM problems AS p"
        " LEFT JOIN results AS r ON r.id = (SELECT r2.id FROM results AS r2"
        "  WHERE r2.device_id = ?1 AND r2.problem_id = p.id AND " FT_DB_BEST_WHERE
        "  ORDER BY " FT_DB_BEST_ORDER("r2") " LIMIT 1)"
        " LEFT JOIN devices AS d ON d.id = r.device_id"
        " WHERE p.m = ?2 AND p.n = ?3 AND p.k = ?4 AND p.layout = ?5 AND p.math = ?6"
        " AND p.epilogue_hash = ?7",
    [FT_ST_EAGER] =
        "SELECT " FT_DB_EAGER_AT_BEST("?3", "?4") " FROM results AS e WHERE device_id = ?1 AND problem_id = ?2"
        " AND status = 'ok' AND strategy = 'eager' AND median_ms IS NOT NULL"
        " ORDER BY created DESC, uuid DESC LIMIT 1",
    [FT_ST_EACH_BEST_EPI] =
        EACH_BEST_SELECT " WHERE b.device_id = ?1 AND p.epilogue_hash = ?2 AND p.math = ?3"
        " ORDER BY p.m, p.n, p.k, p.layout",
    [FT_ST_EACH_BEST] =
        EACH_BEST_SELECT
        " ORDER BY d.fingerprint, p.m, p.n, p.k, p.layout, p.math, p.epilogue_hash",
    /* Every launchable correct result of one problem, best first (the best's order: by rank). */
    [FT_ST_EACH_CANDIDATE] =
        "SELECT strategy, variant, config, source_hash, median_ms, (SELECT name FROM devices WHERE id = ?1),"
        " rel_err, max_abs_err, gemm_ratio FROM results AS r WHERE device_id = ?1 AND problem_id = ?2 AND " FT_DB_BEST_WHERE
        " ORDER BY " FT_DB_BEST_ORDER("r"),
    [FT_ST_HAS_RESULT] =
        "SELECT COUNT(*), MIN(CASE WHEN status = 'ok' THEN median_ms END),"
        " MIN(CASE WHEN status = 'ok' THEN " FT_DB_RANK("r") " END),"
        " MIN(CASE WHEN status = 'wrong_result' THEN rel_err END) FROM results AS r"
        " WHERE device_id = ?1 AND problem_id = ?2 AND strategy = ?3 AND source_hash = ?4 AND config = ?5"
        /* ?6 >= 0: only results of runs timed so (runs.options' "graph_calls", the last key; none: 0) */
        " AND (?6 < 0 OR IFNULL((SELECT CASE WHEN instr(u.options, '\"graph_calls\":') = 0 THEN 0 ELSE"
        " CAST(substr(u.options, instr(u.options, '\"graph_calls\":') + 14) AS INTEGER) END"
        " FROM runs AS u WHERE u.id = r.run_id), 0) = ?6)",
    [FT_ST_CUBIN_GET] =
        "SELECT data FROM cubins WHERE source_hash = ?1 AND arch = ?2 AND nvrtc_version = ?3"
        " AND options = ?4",
    [FT_ST_CUBIN_PUT] = FT_DB_INSERT(cubins, FT_CUBIN_COLUMNS) " ON CONFLICT DO NOTHING",
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

ft_status ft__db_step_done(ft_db *db, sqlite3_stmt *st, const char *doing, ft_err *err) {
  int rc = sqlite3_step(st);
  ft_status s = (rc == SQLITE_DONE || rc == SQLITE_ROW) ? FT_OK : ft__db_error(db, err, rc, doing);
  sqlite3_reset(st);
  return s;
}

ft_status ft__db_exec(ft_db *db, const char *sql, const char *doing, ft_err *err) {
  int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? FT_OK : ft__db_error(db, err, rc, doing);
}

ft_status ft__db_need(ft_err *err, int ok, const char *what) {
  return ok ? FT_OK : ft__fail(err, FT_ERR_INVALID_ARG, "%s", what);
}

ft_status ft__db_begin_write(ft_db *db, const char *doing, ft_err *err) {
  if (db->readonly)
    return ft__fail(err, FT_ERR_DB, "database %s: %s: the database is open read-only", db->path,
                    doing);
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_BEGIN, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  return ft__db_step_done(db, st, doing, err);
}

ft_status ft__db_finish(ft_db *db, ft_status s, const char *doing, ft_err *err) {
  if (sqlite3_get_autocommit(db->h)) return s; /* SQLite already rolled back (e.g. on IOERR) */
  if (s == FT_OK) {
    sqlite3_stmt *st = ft__db_stmt(db, FT_ST_COMMIT, err);
    s = st ? ft__db_step_done(db, st, doing, err) : (err ? err->status : FT_ERR_DB);
    if (s == FT_OK || sqlite3_get_autocommit(db->h)) return s;
  }
  /* Keep the first error's message: the rollback is cleanup, not news. */
  sqlite3_stmt *rb = ft__db_stmt(db, FT_ST_ROLLBACK, NULL);
  if (rb) ft__db_step_done(db, rb, "rolling back", NULL);
  return s;
}

ft_status ft__db_begin_read(ft_db *db, const char *doing, ft_err *err) {
  int rc = sqlite3_exec(db->h, "BEGIN", NULL, NULL, NULL);
  return rc == SQLITE_OK ? FT_OK : ft__db_error(db, err, rc, doing);
}

void ft__db_end_read(ft_db *db) {
  if (!sqlite3_get_autocommit(db->h)) sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
}
