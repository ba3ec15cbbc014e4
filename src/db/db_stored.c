/* Every stored result read back whole, failures included, grouped by (device, problem) with the
 * devices and the runs they belong to: what a report draws (ft_stored_load). One read
 * transaction, so a concurrent tune cannot make the groups disagree. The device columns come
 * from db_columns.h; the best is marked by the best view's rule (FT_DB_BEST_WHERE and its order). */
#include <stdlib.h>
#include <string.h>

#include "db_columns.h"
#include "db_internal.h"
#include "fusedtune_tool.h"

/* What loading keeps beside the public arrays: each problem's row ids, each run's row id. */
typedef struct row_ids {
  int64_t device, problem;
} row_ids;

typedef struct loader {
  ft_db *db;
  ft_err *err;
  ft_stored *s;
  int cap_devices, cap_device_ids, cap_problems, cap_problem_ids;
  int64_t *device_ids; /* per device */
  row_ids *ids;        /* per problem */
  int cap_rows;        /* of the array each_row is filling */
  int64_t *run_ids;    /* the row ids of the current problem's runs */
  int cap_run_ids;
} loader;

static ft_status nomem(ft_err *err) { return ft__fail(err, FT_ERR_NOMEM, "out of memory reading the results"); }

/* Grows *arr (elements of size) to hold n + 1; 0 when out of memory. */
static int grow(void **arr, int *cap, int n, size_t size) {
  if (n < *cap) return 1;
  int c = *cap ? *cap * 2 : 8;
  void *p = realloc(*arr, (size_t)c * size);
  if (!p) return 0;
  *arr = p;
  *cap = c;
  return 1;
}

/* Column i as text into dst[cap]; FT_ERR_DB when it does not fit (the structs hold what the
 * import and the C API accept). NULL reads as "". */
static ft_status text_col(loader *l, sqlite3_stmt *st, int i, char *dst, size_t cap, const char *what) {
  const unsigned char *t = sqlite3_column_text(st, i);
  size_t n = t ? (size_t)sqlite3_column_bytes(st, i) : 0;
  if (n >= cap || (t && memchr(t, 0, n)))
    return ft__fail(l->err, FT_ERR_DB, "database %s: a stored %s does not fit (%zu bytes)", l->db->path, what, n);
  if (n) memcpy(dst, t, n);
  dst[n] = '\0';
  return FT_OK;
}

/* Column i as free text that may be long (a message): head and tail kept around "...". */
static void fit_col(sqlite3_stmt *st, int i, char *dst, size_t cap) {
  const char *t = (const char *)sqlite3_column_text(st, i);
  ft__fit_text(dst, cap, t ? t : "", t ? (size_t)sqlite3_column_bytes(st, i) : 0);
}

/* A measurement column: NULL is "not measured", -1. */
static double measure_col(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? -1.0 : sqlite3_column_double(st, i);
}

static ft_status step_error(loader *l, int rc, const char *doing) {
  return rc == SQLITE_DONE ? FT_OK : ft__db_error(l->db, l->err, rc, doing);
}

static ft_status prepare(loader *l, const char *sql, sqlite3_stmt **st) {
  int rc = sqlite3_prepare_v2(l->db->h, sql, -1, st, NULL);
  return rc == SQLITE_OK ? FT_OK : ft__db_error(l->db, l->err, rc, "preparing to read the results");
}

/* ---- devices ---- */

#define DEV(col) (FT_COL(devices, col) - 1)

static ft_status read_device(loader *l, int64_t id, ft_stored_device *d) {
  static const char sql[] = "SELECT " FT_DB_COLS(FT_DEVICE_COLUMNS, ) " FROM devices WHERE id = ?1";
  sqlite3_stmt *st = NULL;
  FT_TRY(prepare(l, sql, &st));
  sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st);
  ft_status s = FT_OK;
  memset(d, 0, sizeof *d);
  if (rc == SQLITE_ROW) {
    s = text_col(l, st, DEV(fingerprint), d->fingerprint, sizeof d->fingerprint, "fingerprint");
    if (s == FT_OK) s = text_col(l, st, DEV(name), d->name, sizeof d->name, "device name");
    if (s == FT_OK) s = text_col(l, st, DEV(first_seen), d->first_seen, sizeof d->first_seen, "time");
    if (s == FT_OK) s = text_col(l, st, DEV(last_seen), d->last_seen, sizeof d->last_seen, "time");
    d->cc_major = sqlite3_column_int(st, DEV(cc_major));
    d->cc_minor = sqlite3_column_int(st, DEV(cc_minor));
    d->sm_count = sqlite3_column_int(st, DEV(sm_count));
    d->mem_bytes = sqlite3_column_int64(st, DEV(mem_bytes));
    d->driver_version = sqlite3_column_int(st, DEV(driver_version));
    d->runtime_version = sqlite3_column_int(st, DEV(runtime_version));
    d->nvrtc_version = sqlite3_column_int(st, DEV(nvrtc_version));
    d->cublas_version = sqlite3_column_int(st, DEV(cublas_version));
  } else {
    s = rc == SQLITE_DONE ? ft__fail(l->err, FT_ERR_DB, "database %s: a result names a missing device", l->db->path)
                          : ft__db_error(l->db, l->err, rc, "reading a device");
  }
  sqlite3_finalize(st);
  return s;
}

/* The index of device row id in s->devices, read on first sight. */
static ft_status device_index(loader *l, int64_t id, int *out) {
  ft_stored *s = l->s;
  for (int i = 0; i < s->n_devices; i++)
    if (l->device_ids[i] == id) return *out = i, FT_OK;
  if (!grow((void **)&s->devices, &l->cap_devices, s->n_devices, sizeof *s->devices) ||
      !grow((void **)&l->device_ids, &l->cap_device_ids, s->n_devices, sizeof *l->device_ids))
    return nomem(l->err);
  FT_TRY(read_device(l, id, &s->devices[s->n_devices]));
  l->device_ids[s->n_devices] = id;
  *out = s->n_devices++;
  return FT_OK;
}

/* ---- problems ---- */

/* The modes in FT_MATH_MAP's order: " WHEN 'fp32' THEN 0 ...". */
#define MATH_ORDER_(name, value, text) " WHEN '" text "' THEN " #value
/* The (device, problem) pairs that have results, in ft_stored's order (so devices are met in
 * fingerprint order too). ?1..?7 are the problem key's numbers (FT_PROBLEM_COLUMNS); ?1 NULL:
 * every problem; ?5 NULL: every math mode. */
static const char k_problems_sql[] =
    "SELECT r.device_id, p.id, p.m, p.n, p.k, p.layout, p.math, p.epilogue, p.epilogue_hash"
    " FROM results AS r JOIN problems AS p ON p.id = r.problem_id JOIN devices AS d ON d.id = r.device_id"
    " WHERE ?1 IS NULL OR (p.m = ?1 AND p.n = ?2 AND p.k = ?3 AND p.layout = ?4"
    "  AND (?5 IS NULL OR p.math = ?5) AND p.epilogue_hash = ?7)"
    " GROUP BY r.device_id, p.id"
    " ORDER BY d.fingerprint, p.m, p.n, p.k, p.epilogue_hash, CASE p.math" FT_MATH_MAP(MATH_ORDER_) " END";

static ft_status add_problem(loader *l, sqlite3_stmt *st) {
  ft_stored *s = l->s;
  if (!grow((void **)&s->problems, &l->cap_problems, s->n_problems, sizeof *s->problems) ||
      !grow((void **)&l->ids, &l->cap_problem_ids, s->n_problems, sizeof *l->ids))
    return nomem(l->err);
  ft_stored_problem *p = &s->problems[s->n_problems];
  memset(p, 0, sizeof *p);
  row_ids *ids = &l->ids[s->n_problems];
  ids->device = sqlite3_column_int64(st, 0);
  ids->problem = sqlite3_column_int64(st, 1);
  s->n_problems++; /* counted now, so that a failure below frees what it holds */
  p->m = sqlite3_column_int64(st, 2);
  p->n = sqlite3_column_int64(st, 3);
  p->k = sqlite3_column_int64(st, 4);
  char math[16];
  FT_TRY(text_col(l, st, 5, p->layout, sizeof p->layout, "layout"));
  FT_TRY(text_col(l, st, 6, math, sizeof math, "math mode"));
  FT_TRY(text_col(l, st, 7, p->epilogue, sizeof p->epilogue, "epilogue"));
  FT_TRY(text_col(l, st, 8, p->epilogue_hash, sizeof p->epilogue_hash, "epilogue hash"));
  if (!ft_math_from_name(math, &p->math))
    return ft__fail(l->err, FT_ERR_DB, "database %s: unknown math mode \"%s\"", l->db->path, math);
  return device_index(l, ids->device, &p->device);
}

static ft_status load_problems(loader *l, const ft_problem_key *filter, int any_math) {
  sqlite3_stmt *st = NULL;
  FT_TRY(prepare(l, k_problems_sql, &st));
  if (filter) {
    sqlite3_bind_int64(st, FT_COL(problems, m), filter->m);
    sqlite3_bind_int64(st, FT_COL(problems, n), filter->n);
    sqlite3_bind_int64(st, FT_COL(problems, k), filter->k);
    sqlite3_bind_text(st, FT_COL(problems, layout), filter->layout, -1, SQLITE_STATIC);
    if (!any_math) sqlite3_bind_text(st, FT_COL(problems, math), filter->math, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, FT_COL(problems, epilogue_hash), filter->epilogue_hash, -1, SQLITE_STATIC);
  }
  ft_status s = FT_OK;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW && (s = add_problem(l, st)) == FT_OK) {
  }
  if (s == FT_OK) s = step_error(l, rc, "listing the problems");
  sqlite3_finalize(st);
  return s;
}

/* ---- runs ---- */

static const char k_runs_sql[] =
    "SELECT ru.id, ru.uuid, ru.started, ru.ended, ru.tool_version, ru.options, ru.budget_s, ru.outcome"
    " FROM runs AS ru WHERE ru.id IN (SELECT run_id FROM results WHERE device_id = ?1 AND problem_id = ?2)"
    " ORDER BY ru.started, ru.uuid";

static ft_status read_run(loader *l, sqlite3_stmt *st, ft_stored_run *r) {
  FT_TRY(text_col(l, st, 1, r->uuid, sizeof r->uuid, "run uuid"));
  FT_TRY(text_col(l, st, 2, r->started, sizeof r->started, "time"));
  FT_TRY(text_col(l, st, 3, r->ended, sizeof r->ended, "time"));
  FT_TRY(text_col(l, st, 4, r->tool_version, sizeof r->tool_version, "version"));
  const char *opt = (const char *)sqlite3_column_text(st, 5);
  if (!(r->options = ft__strdup(opt ? opt : "{}"))) return nomem(l->err);
  r->budget_s = sqlite3_column_double(st, 6);
  fit_col(st, 7, r->outcome, sizeof r->outcome);
  return FT_OK;
}

/* A row of a problem's runs: the run, and its row id in the loader's run_ids to number results. */
static ft_status add_run(loader *l, sqlite3_stmt *st, ft_stored_problem *p) {
  if (!grow((void **)&p->runs, &l->cap_rows, p->n_runs, sizeof *p->runs) ||
      !grow((void **)&l->run_ids, &l->cap_run_ids, p->n_runs, sizeof *l->run_ids))
    return nomem(l->err);
  ft_stored_run *r = &p->runs[p->n_runs++];
  memset(r, 0, sizeof *r);
  l->run_ids[p->n_runs - 1] = sqlite3_column_int64(st, 0);
  return read_run(l, st, r);
}

/* ---- results ---- */

static const char k_results_sql[] =
    "SELECT r.strategy, r.variant, r.config, r.status, r.median_ms, r.min_ms, r.iqr_ms, r.repeats,"
    " r.rel_err, r.max_abs_err, r.source_hash, r.fusedtune_version, r.message, r.created, r.run_id,"
    " r.id IS (SELECT r2.id FROM results AS r2 WHERE r2.device_id = ?1 AND r2.problem_id = ?2 AND "
    FT_DB_BEST_WHERE " ORDER BY " FT_DB_BEST_ORDER("r2") " LIMIT 1),"
    " r.gemm_ratio"
    " FROM results AS r WHERE r.device_id = ?1 AND r.problem_id = ?2"
    " ORDER BY r.strategy, r.median_ms IS NULL, " FT_DB_BEST_ORDER("r");

static ft_status read_result(loader *l, sqlite3_stmt *st, const int64_t *run_ids, int n_runs,
                             ft_stored_result *r) {
  char strategy[32], status[32];
  FT_TRY(text_col(l, st, 0, strategy, sizeof strategy, "strategy"));
  FT_TRY(text_col(l, st, 1, r->variant, sizeof r->variant, "variant name"));
  FT_TRY(text_col(l, st, 2, r->config, sizeof r->config, "config"));
  FT_TRY(text_col(l, st, 3, status, sizeof status, "status"));
  if (!ft_strategy_from_name(strategy, &r->strategy))
    return ft__fail(l->err, FT_ERR_DB, "database %s: unknown strategy \"%s\"", l->db->path, strategy);
  if (!ft_result_status_from_name(status, &r->status) || r->status == FT_RESULT_UNAVAILABLE)
    return ft__fail(l->err, FT_ERR_DB, "database %s: unknown status \"%s\"", l->db->path, status);
  r->median_ms = measure_col(st, 4);
  r->min_ms = measure_col(st, 5);
  r->iqr_ms = measure_col(st, 6);
  r->repeats = sqlite3_column_int(st, 7);
  r->rel_err = measure_col(st, 8);
  r->max_abs_err = measure_col(st, 9);
  FT_TRY(text_col(l, st, 10, r->source_hash, sizeof r->source_hash, "source hash"));
  FT_TRY(text_col(l, st, 11, r->fusedtune_version, sizeof r->fusedtune_version, "version"));
  fit_col(st, 12, r->message, sizeof r->message);
  FT_TRY(text_col(l, st, 13, r->created, sizeof r->created, "time"));
  r->run = -1;
  if (sqlite3_column_type(st, 14) != SQLITE_NULL)
    for (int i = 0; i < n_runs; i++)
      if (run_ids[i] == sqlite3_column_int64(st, 14)) r->run = i;
  r->is_best = sqlite3_column_int(st, 15);
  r->gemm_ratio = measure_col(st, 16);
  return FT_OK;
}

static ft_status add_result(loader *l, sqlite3_stmt *st, ft_stored_problem *p) {
  if (!grow((void **)&p->results, &l->cap_rows, p->n_results, sizeof *p->results)) return nomem(l->err);
  ft_stored_result *r = &p->results[p->n_results++];
  memset(r, 0, sizeof *r);
  return read_result(l, st, l->run_ids, p->n_runs, r);
}

/* Runs sql with ?1, ?2 the device and problem of problems[pi], adding each row to it with add. */
static ft_status each_row(loader *l, const char *sql, int pi,
                          ft_status (*add)(loader *, sqlite3_stmt *, ft_stored_problem *), const char *doing) {
  sqlite3_stmt *st = NULL;
  FT_TRY(prepare(l, sql, &st));
  sqlite3_bind_int64(st, 1, l->ids[pi].device);
  sqlite3_bind_int64(st, 2, l->ids[pi].problem);
  ft_status s = FT_OK;
  int rc;
  l->cap_rows = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW && (s = add(l, st, &l->s->problems[pi])) == FT_OK) {
  }
  if (s == FT_OK) s = step_error(l, rc, doing);
  sqlite3_finalize(st);
  return s;
}

/* ---- the whole ---- */

static ft_status load(loader *l, const ft_problem_key *filter, int any_math) {
  FT_TRY(load_problems(l, filter, any_math));
  for (int i = 0; i < l->s->n_problems; i++) {
    FT_TRY(each_row(l, k_runs_sql, i, add_run, "listing the runs"));
    FT_TRY(each_row(l, k_results_sql, i, add_result, "listing the results"));
  }
  return FT_OK;
}

void ft_db_stored_free(ft_stored *s) {
  if (!s) return;
  for (int i = 0; i < s->n_problems; i++) {
    ft_stored_problem *p = &s->problems[i];
    for (int j = 0; j < p->n_runs; j++) free(p->runs[j].options);
    free(p->runs);
    free(p->results);
  }
  free(s->problems);
  free(s->devices);
  free(s);
}

ft_status ft_db_load_stored(ft_db *db, const ft_problem_key *filter, int any_math, ft_stored **out, ft_err *err) {
  FT_TRY(ft__db_need(err, db && out, "ft_db_load_stored: NULL argument"));
  *out = NULL;
  loader l;
  memset(&l, 0, sizeof l);
  l.db = db;
  l.err = err;
  if (!(l.s = calloc(1, sizeof *l.s))) return nomem(err);
  ft_status s = ft__db_begin_read(db, "reading the results", err);
  if (s == FT_OK) {
    s = load(&l, filter, any_math);
    ft__db_end_read(db);
  }
  free(l.device_ids);
  free(l.ids);
  free(l.run_ids);
  if (s != FT_OK) {
    ft_db_stored_free(l.s);
    return s;
  }
  *out = l.s;
  return FT_OK;
}
