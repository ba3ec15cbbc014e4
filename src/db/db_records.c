/* The records tune and lookup need: devices, problems, runs and results (insert and query) and
 * the best results derived from them. Parameters are bound at the numbers db_columns.h gives
 * each column. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db_columns.h"
#include "fusedtune_tool.h"
#include "db_internal.h"
#include "json.h"

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
 * Devices, problems, runs */

static ft_status check_json(const char *s, const char *what, ft_err *err);

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
  sqlite3_bind_text(st, FT_COL(devices, fingerprint), dev->fingerprint, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, FT_COL(devices, name), dev->name, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, FT_COL(devices, cc_major), dev->cc_major);
  sqlite3_bind_int(st, FT_COL(devices, cc_minor), dev->cc_minor);
  sqlite3_bind_int(st, FT_COL(devices, sm_count), dev->sm_count);
  sqlite3_bind_int64(st, FT_COL(devices, mem_bytes), dev->mem_bytes);
  sqlite3_bind_int(st, FT_COL(devices, driver_version), dev->driver_version);
  sqlite3_bind_int(st, FT_COL(devices, runtime_version), dev->runtime_version);
  sqlite3_bind_int(st, FT_COL(devices, nvrtc_version), dev->nvrtc_version);
  sqlite3_bind_int(st, FT_COL(devices, cublas_version), dev->cublas_version);
  FT_TRY(ft__db_step_done(db, st, "recording the device", err));
  st = ft__db_stmt(db, FT_ST_DEVICE_ID, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_text(st, 1, dev->fingerprint, -1, SQLITE_STATIC);
  return select_id(db, st, id, "reading the device id", err);
}

ft_status ft_db_upsert_device(ft_db *db, const ft_device_info *dev, int64_t *device_id, ft_err *err) {
  FT_TRY(ft__db_need(err, db && dev && device_id, "ft_db_upsert_device: NULL argument"));
  FT_TRY(ft__db_need(err,
                     dev->fingerprint[0] && memchr(dev->fingerprint, 0, sizeof dev->fingerprint),
                     "ft_db_upsert_device: empty fingerprint"));
  FT_TRY(ft__db_need(err, memchr(dev->name, 0, sizeof dev->name) != NULL,
                     "ft_db_upsert_device: name not terminated"));
  FT_TRY(ft__db_begin_write(db, "recording the device", err));
  return ft__db_finish(db, insert_device(db, dev, device_id, err), "recording the device", err);
}

/* A row of FT_ST_DEVICE_BY_*: id, then the device's columns at their numbers. */
static void read_device(sqlite3_stmt *st, ft_device_info *out, int64_t *id) {
  memset(out, 0, sizeof *out);
  *id = sqlite3_column_int64(st, 0);
  /* Both are bounded by what upsert accepted; truncation here would only shorten a name. */
  snprintf(out->fingerprint, sizeof out->fingerprint, "%s",
           (const char *)sqlite3_column_text(st, FT_COL(devices, fingerprint)));
  snprintf(out->name, sizeof out->name, "%s",
           (const char *)sqlite3_column_text(st, FT_COL(devices, name)));
  out->cc_major = sqlite3_column_int(st, FT_COL(devices, cc_major));
  out->cc_minor = sqlite3_column_int(st, FT_COL(devices, cc_minor));
  out->sm_count = sqlite3_column_int(st, FT_COL(devices, sm_count));
  out->mem_bytes = sqlite3_column_int64(st, FT_COL(devices, mem_bytes));
  out->driver_version = sqlite3_column_int(st, FT_COL(devices, driver_version));
  out->runtime_version = sqlite3_column_int(st, FT_COL(devices, runtime_version));
  out->nvrtc_version = sqlite3_column_int(st, FT_COL(devices, nvrtc_version));
  out->cublas_version = sqlite3_column_int(st, FT_COL(devices, cublas_version));
}

/* What to say after "no device named NAME": the stored name that differs only in ASCII case, or
 * the stored names (a few), or that none is stored. Empty when the database cannot say. */
static void device_hint(ft_db *db, const char *name, char *out, size_t cap) {
  static const char *const sql[] = {
      "SELECT name FROM devices WHERE name = ?1 COLLATE NOCASE ORDER BY last_seen DESC LIMIT 1",
      "SELECT group_concat('\"' || name || '\"', ', '), count(*) FROM (SELECT DISTINCT name FROM devices "
      "ORDER BY name LIMIT 6)"};
  out[0] = 0;
  for (int i = 0; i < 2 && !out[0]; i++) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, sql[i], -1, &st, NULL) != SQLITE_OK) {
      sqlite3_finalize(st);
      return;
    }
    if (i == 0) sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
      const char *t = (const char *)sqlite3_column_text(st, 0);
      if (i == 0 && t) snprintf(out, cap, " (did you mean \"%s\"?)", t);
      else if (i == 1 && sqlite3_column_int(st, 1) == 0) snprintf(out, cap, " (no device is stored)");
      else if (i == 1 && t) snprintf(out, cap, " (stored: %s%s)", t, sqlite3_column_int(st, 1) >= 6 ? ", ..." : "");
    }
    sqlite3_finalize(st);
  }
}

ft_status ft_db_find_device(ft_db *db, const char *fingerprint, const char *name,
                            ft_device_info *out, int64_t *device_id, ft_err *err) {
  FT_TRY(ft__db_need(err, db && (fingerprint || name) && out && device_id,
                     "ft_db_find_device: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, fingerprint ? FT_ST_DEVICE_BY_FP : FT_ST_DEVICE_BY_NAME, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_text(st, 1, fingerprint ? fingerprint : name, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  ft_status s = FT_OK;
  if (rc == SQLITE_ROW)
    read_device(st, out, device_id);
  else if (rc == SQLITE_DONE && name) {
    sqlite3_reset(st);
    char hint[600];
    device_hint(db, name, hint, sizeof hint);
    return ft__fail(err, FT_ERR_NOT_FOUND, "database %s: no device named \"%.*s%s\"%s", db->path, 80, name,
                    strlen(name) > 80 ? "..." : "", hint);
  } else if (rc == SQLITE_DONE)
    s = ft__fail(err, FT_ERR_NOT_FOUND, "database %s: no device with fingerprint \"%s\"", db->path, fingerprint);
  else
    s = ft__db_error(db, err, rc, "looking up the device");
  sqlite3_reset(st);
  return s;
}

/* The key's columns, at the same numbers in the insert and in FT_DB_PROBLEM_KEY_WHERE. */
static void bind_problem_key(sqlite3_stmt *st, const ft_problem_key *key) {
  sqlite3_bind_int64(st, FT_COL(problems, m), key->m);
  sqlite3_bind_int64(st, FT_COL(problems, n), key->n);
  sqlite3_bind_int64(st, FT_COL(problems, k), key->k);
  sqlite3_bind_text(st, FT_COL(problems, layout), key->layout, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, FT_COL(problems, math), key->math, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, FT_COL(problems, epilogue_hash), key->epilogue_hash, -1, SQLITE_STATIC);
}

static ft_status check_key(const ft_problem_key *key, ft_err *err) {
  FT_TRY(ft__db_need(err, key->m > 0 && key->n > 0 && key->k > 0,
                     "problem key: m, n, k must be > 0"));
  FT_TRY(ft__db_need(err,
                     memchr(key->layout, 0, sizeof key->layout) &&
                         memchr(key->math, 0, sizeof key->math) &&
                         memchr(key->epilogue, 0, sizeof key->epilogue) &&
                         memchr(key->epilogue_hash, 0, sizeof key->epilogue_hash),
                     "problem key: a text field is not NUL-terminated"));
  return ft__db_need(err, key->layout[0] && key->math[0] && key->epilogue_hash[0],
                     "problem key: layout, math and epilogue_hash must be set");
}

static ft_status insert_problem(ft_db *db, const ft_problem_key *key, int64_t *id, ft_err *err) {
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_PROBLEM_INSERT, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  bind_problem_key(st, key);
  sqlite3_bind_text(st, FT_COL(problems, epilogue), key->epilogue, -1, SQLITE_STATIC);
  FT_TRY(ft__db_step_done(db, st, "recording the problem", err));
  st = ft__db_stmt(db, FT_ST_PROBLEM_ID, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  bind_problem_key(st, key);
  return select_id(db, st, id, "reading the problem id", err);
}

ft_status ft_db_upsert_problem(ft_db *db, const ft_problem_key *key, int64_t *problem_id, ft_err *err) {
  FT_TRY(ft__db_need(err, db && key && problem_id, "ft_db_upsert_problem: NULL argument"));
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
  sqlite3_bind_text(st, FT_COL(runs, uuid), uuid, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, FT_COL(runs, device_id), device_id);
  sqlite3_bind_text(st, FT_COL(runs, tool_version), ft_version_string(), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, FT_COL(runs, options), options_json ? options_json : "{}", -1,
                    SQLITE_STATIC);
  sqlite3_bind_double(st, FT_COL(runs, budget_s), isfinite(budget_s) ? budget_s : 0.0);
  FT_TRY(ft__db_step_done(db, st, "recording the run", err));
  *run_id = sqlite3_last_insert_rowid(db->h);
  return FT_OK;
}

ft_status ft_db_begin_run(ft_db *db, int64_t device_id, const char *options_json, double budget_s,
                          int64_t *run_id, ft_err *err) {
  FT_TRY(ft__db_need(err, db && run_id, "ft_db_begin_run: NULL argument"));
  if (options_json) {
    FT_TRY(ft__db_need(err, strlen(options_json) <= FT_DB_MESSAGE_MAX,
                       "ft_db_begin_run: options longer than 1 MiB"));
    FT_TRY(check_json(options_json, "ft_db_begin_run: options_json", err));
  }
  FT_TRY(ft__db_begin_write(db, "recording the run", err));
  ft_status s = insert_run(db, device_id, options_json, budget_s, run_id, err);
  return ft__db_finish(db, s, "recording the run", err);
}

ft_status ft_db_end_run(ft_db *db, int64_t run_id, const char *outcome, ft_err *err) {
  FT_TRY(ft__db_need(err, db && outcome, "ft_db_end_run: NULL argument"));
  FT_TRY(ft__db_need(err, strlen(outcome) <= 4096,
                     "ft_db_end_run: outcome longer than 4096 bytes"));
  FT_TRY(ft__db_begin_write(db, "ending the run", err));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_RUN_END, err);
  ft_status s = st ? FT_OK : (err ? err->status : FT_ERR_DB);
  if (s == FT_OK) {
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, outcome, -1, SQLITE_STATIC);
    s = ft__db_step_done(db, st, "ending the run", err);
  }
  if (s == FT_OK && sqlite3_changes(db->h) != 1)
    s = ft__fail(err, FT_ERR_NOT_FOUND, "database %s: no run with id %lld", db->path,
                 (long long)run_id);
  return ft__db_finish(db, s, "ending the run", err);
}

/* ---------------------------------------------------------------------------------------------
 * Results */

/* A status of FT_RESULT_STATUS_MAP that is stored (UNAVAILABLE never is). */
static int known_status(const char *s) {
  ft_result_status st;
  return ft_result_status_from_name(s, &st) && st != FT_RESULT_UNAVAILABLE;
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
  FT_TRY(ft__db_need(err, r->strategy && r->variant && r->config_json && r->status,
                     "ft_db_insert_result: strategy, variant, config_json and status must be set"));
  if (!known_status(r->status))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_db_insert_result: unknown status \"%s\"",
                    r->status);
  FT_TRY(ft__db_need(err, r->strategy[0] && strlen(r->strategy) <= FT_DB_STRATEGY_MAX,
                     "ft_db_insert_result: strategy must be 1..31 bytes"));
  FT_TRY(ft__db_need(err, strlen(r->variant) <= FT_DB_VARIANT_MAX,
                     "ft_db_insert_result: variant longer than 127 bytes"));
  FT_TRY(ft__db_need(err, strlen(r->config_json) <= FT_DB_CONFIG_MAX,
                     "ft_db_insert_result: config_json longer than 511 bytes"));
  FT_TRY(ft__db_need(err, !r->source_hash || strlen(r->source_hash) <= FT_DB_HASH_MAX,
                     "ft_db_insert_result: source_hash longer than 16 bytes"));
  FT_TRY(ft__db_need(err, !r->message || strlen(r->message) <= FT_DB_MESSAGE_MAX,
                     "ft_db_insert_result: message longer than 1 MiB"));
  FT_TRY(ft__db_need(err, r->repeats >= 0, "ft_db_insert_result: repeats must be >= 0"));
  return check_json(r->config_json, "ft_db_insert_result: config_json", err);
}

#define RES(col) FT_COL(results, col)

static void bind_result(sqlite3_stmt *st, const ft_result_row *r, const char *uuid) {
  sqlite3_bind_text(st, RES(uuid), uuid, -1, SQLITE_STATIC);
  if (r->run_id > 0) sqlite3_bind_int64(st, RES(run_id), r->run_id);
  sqlite3_bind_int64(st, RES(device_id), r->device_id);
  sqlite3_bind_int64(st, RES(problem_id), r->problem_id);
  sqlite3_bind_text(st, RES(strategy), r->strategy, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, RES(variant), r->variant, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, RES(config), r->config_json, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, RES(status), r->status, -1, SQLITE_STATIC);
  bind_measure(st, RES(median_ms), r->median_ms);
  bind_measure(st, RES(min_ms), r->min_ms);
  bind_measure(st, RES(iqr_ms), r->iqr_ms);
  sqlite3_bind_int(st, RES(repeats), r->repeats);
  bind_measure(st, RES(rel_err), r->rel_err);
  bind_measure(st, RES(max_abs_err), r->max_abs_err);
  sqlite3_bind_text(st, RES(source_hash), r->source_hash ? r->source_hash : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, RES(fusedtune_version), ft_version_string(), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, RES(message), r->message ? r->message : "", -1, SQLITE_STATIC);
  bind_measure(st, RES(gemm_ratio), r->gemm_ratio > 0 ? r->gemm_ratio : -1); /* the column takes > 0 or NULL */
}

ft_status ft_db_insert_result(ft_db *db, const ft_result_row *row, ft_err *err) {
  FT_TRY(ft__db_need(err, db && row, "ft_db_insert_result: NULL argument"));
  FT_TRY(check_row(row, err));
  FT_TRY(ft__db_begin_write(db, "recording a result", err));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_RESULT_INSERT, err);
  ft_status s = st ? FT_OK : (err ? err->status : FT_ERR_DB);
  if (s == FT_OK) {
    char uuid[37];
    ft__db_uuid(uuid);
    bind_result(st, row, uuid);
    s = ft__db_step_done(db, st, "recording a result", err);
  }
  return ft__db_finish(db, s, "recording a result", err);
}

/* ---------------------------------------------------------------------------------------------
 * Best */

static ft_status too_long(ft_db *db, ft_err *err, const char *what) {
  return ft__fail(err, FT_ERR_DB, "database %s: the best result's %s is longer than ft_best holds",
                  db->path, what);
}

/* The latest eager baseline at the clock of a best of median median_ms and ratio gemm_ratio
 * (0: none; FT_DB_EAGER_AT_BEST). */
static ft_status eager_ms(ft_db *db, int64_t device_id, int64_t problem_id, double median_ms, double gemm_ratio,
                          double *out, ft_err *err) {
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_EAGER, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_int64(st, 1, device_id);
  sqlite3_bind_int64(st, 2, problem_id);
  sqlite3_bind_double(st, 3, median_ms);
  if (gemm_ratio > 0) sqlite3_bind_double(st, 4, gemm_ratio); /* else NULL: unscaled */
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
  out->rel_err = sqlite3_column_double(st, 9);
  out->max_abs_err = sqlite3_column_double(st, 10);
  out->gemm_ratio = sqlite3_column_double(st, 11); /* NULL reads as 0: none */
  return FT_OK;
}

ft_status ft_db_best(ft_db *db, int64_t device_id, const ft_problem_key *key, ft_best *out,
                     ft_err *err) {
  FT_TRY(ft__db_need(err, db && key && out, "ft_db_best: NULL argument"));
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
  b->rel_err = sqlite3_column_double(st, 15);
  b->max_abs_err = sqlite3_column_double(st, 16);
  b->gemm_ratio = sqlite3_column_double(st, 17);
  return eager_ms(db, b->device_id, b->problem_id, b->median_ms, b->gemm_ratio, &b->eager_ms, err);
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
  FT_TRY(ft__db_need(err, db && epilogue_hash && math && cb,
                     "ft_db_each_best_for_epilogue: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_EACH_BEST_EPI, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_int64(st, 1, device_id);
  sqlite3_bind_text(st, 2, epilogue_hash, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, math, -1, SQLITE_STATIC);
  return each_best(db, st, cb, user, err);
}

ft_status ft_db_each_best(ft_db *db, ft_best_cb cb, void *user, ft_err *err) {
  FT_TRY(ft__db_need(err, db && cb, "ft_db_each_best: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_EACH_BEST, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  return each_best(db, st, cb, user, err);
}

ft_status ft_db_has_result(ft_db *db, int64_t device_id, int64_t problem_id, const char *strategy,
                           const char *config_json, const char *source_hash, int *found, ft_err *err) {
  return ft_db_prior_result(db, device_id, problem_id, strategy, config_json, source_hash, -1, found, NULL, NULL, err);
}

ft_status ft_db_prior_result(ft_db *db, int64_t device_id, int64_t problem_id, const char *strategy,
                             const char *config_json, const char *source_hash, int graph_calls, int *found,
                             double *best_ms, double *best_rank, ft_err *err) {
  return ft_db_prior_result_ex(db, device_id, problem_id, strategy, config_json, source_hash, graph_calls, found,
                               best_ms, best_rank, NULL, err);
}

ft_status ft_db_prior_result_ex(ft_db *db, int64_t device_id, int64_t problem_id, const char *strategy,
                                const char *config_json, const char *source_hash, int graph_calls, int *found,
                                double *best_ms, double *best_rank, double *wrong_err, ft_err *err) {
  FT_TRY(ft__db_need(err, db && strategy && config_json && found,
                     "ft_db_prior_result: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_HAS_RESULT, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_int64(st, 1, device_id);
  sqlite3_bind_int64(st, 2, problem_id);
  sqlite3_bind_text(st, 3, strategy, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, source_hash ? source_hash : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, config_json, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 6, graph_calls);
  int rc = sqlite3_step(st);
  *found = rc == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
  if (best_ms)
    *best_ms = rc == SQLITE_ROW && sqlite3_column_type(st, 1) != SQLITE_NULL ? sqlite3_column_double(st, 1) : INFINITY;
  if (best_rank)
    *best_rank = rc == SQLITE_ROW && sqlite3_column_type(st, 2) != SQLITE_NULL ? sqlite3_column_double(st, 2) : INFINITY;
  if (wrong_err)
    *wrong_err = rc == SQLITE_ROW && sqlite3_column_type(st, 3) != SQLITE_NULL ? sqlite3_column_double(st, 3) : INFINITY;
  ft_status s = (rc == SQLITE_ROW || rc == SQLITE_DONE)
                    ? FT_OK : ft__db_error(db, err, rc, "checking for an existing result");
  sqlite3_reset(st);
  return s;
}

void ft_problem_key_set(ft_problem_key *key, int64_t m, int64_t n, int64_t k, ft_math math, const char *epilogue,
                        const char *epilogue_hash) {
  memset(key, 0, sizeof *key);
  key->m = m;
  key->n = n;
  key->k = k;
  snprintf(key->layout, sizeof key->layout, "%s", FT_DB_LAYOUT);
  snprintf(key->math, sizeof key->math, "%s", ft_math_name(math));
  snprintf(key->epilogue, sizeof key->epilogue, "%s", epilogue);
  snprintf(key->epilogue_hash, sizeof key->epilogue_hash, "%s", epilogue_hash);
}

ft_status ft_db_each_candidate(ft_db *db, const ft_best *best, ft_best_cb cb, void *user, ft_err *err) {
  FT_TRY(ft__db_need(err, db && best && cb, "ft_db_each_candidate: NULL argument"));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_EACH_CANDIDATE, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  sqlite3_bind_int64(st, 1, best->device_id);
  sqlite3_bind_int64(st, 2, best->problem_id);
  ft_status s = FT_OK;
  int rc;
  ft_best row = *best;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    s = read_best_cols(db, st, 0, &row, err);
    row.rel_err = sqlite3_column_double(st, 6);
    row.max_abs_err = sqlite3_column_double(st, 7);
    row.gemm_ratio = sqlite3_column_double(st, 8);
    /* The eager baseline at this result's clock, by the rule ft_db_best applies (a second,
     * cached statement; the list is walked only when the best's kernel source is stale). */
    if (s == FT_OK) s = eager_ms(db, best->device_id, best->problem_id, row.median_ms, row.gemm_ratio, &row.eager_ms, err);
    if (s != FT_OK || cb(user, &row)) break;
  }
  if (s == FT_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) s = ft__db_error(db, err, rc, "listing the results");
  sqlite3_reset(st);
  return s;
}
