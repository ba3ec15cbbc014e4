/* Export of the results database as JSON (with or without cubins) and CSV; docs/FORMAT.md is
 * the contract. Rows are written in natural-key order with references by natural key, never
 * local row ids, so two databases holding the same measurements export the same bytes. The
 * columns and keys come from db_columns.h. */
#include <inttypes.h>
#include <string.h>

#include "db_columns.h"
#include "db_internal.h"
#include "json.h"

/* ---------------------------------------------------------------------------------------------
 * Export JSON */

/* Keys of a row's columns, in column order. "problem.m" style keys nest consecutive columns in
 * one object ("problem":{"m":...}). */
typedef struct section {
  const char *name;
  const char *sql;
  const char *const *keys;
  int n_keys;
} section;

static void write_value(FILE *f, sqlite3_stmt *st, int i) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: fprintf(f, "%" PRId64, (int64_t)sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT: ft_json_write_double(f, sqlite3_column_double(st, i)); break;
    case SQLITE_TEXT:
      ft_json_write_string_n(f, (const char *)sqlite3_column_text(st, i),
                             (size_t)sqlite3_column_bytes(st, i));
      break;
    case SQLITE_BLOB:
      ft__db_base64_write(f, sqlite3_column_blob(st, i), (size_t)sqlite3_column_bytes(st, i));
      break;
    default: fputs("null", f); break;
  }
}

static void write_row(FILE *f, sqlite3_stmt *st, const section *sec) {
  const char *group = NULL; /* the open nested object's prefix, with its dot */
  size_t group_len = 0;
  putc('{', f);
  for (int i = 0; i < sec->n_keys; i++) {
    const char *key = sec->keys[i], *dot = strchr(key, '.');
    if (group && (!dot || (size_t)(dot - key + 1) != group_len || strncmp(key, group, group_len))) {
      putc('}', f);
      group = NULL;
    }
    if (i) putc(',', f);
    if (dot && !group) {
      fprintf(f, "\"%.*s\":{", (int)(dot - key), key);
      group = key;
      group_len = (size_t)(dot - key + 1);
    }
    fprintf(f, "\"%s\":", group ? key + group_len : key);
    write_value(f, st, i);
  }
  if (group) putc('}', f);
  putc('}', f);
}

static ft_status write_section(ft_db *db, FILE *f, const section *sec, ft_err *err) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db->h, sec->sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return ft__db_error(db, err, rc, "preparing the export");
  int cols = sqlite3_column_count(st);
  if (cols != sec->n_keys) { /* db_columns.h made the two from one list: cannot happen */
    sqlite3_finalize(st);
    return ft__fail(err, FT_ERR_INTERNAL, "export: %s selects %d columns for %d keys", sec->name,
                    cols, sec->n_keys);
  }
  fprintf(f, "\"%s\":[", sec->name);
  int n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    fputs(n++ ? ",\n" : "\n", f);
    write_row(f, st, sec);
  }
  fputs("]", f);
  ft_status s = rc == SQLITE_DONE ? FT_OK : ft__db_error(db, err, rc, "exporting");
  sqlite3_finalize(st);
  return s;
}

#define NKEYS(a) ((int)(sizeof a / sizeof a[0]))
#define PROBLEM_ORDER FT_DB_PROBLEM_KEY_COLS("p.")
/* A result with what it refers to (a result of no run keeps a NULL run uuid). */
#define RESULTS_FROM                                             \
  " FROM results AS r LEFT JOIN runs AS ru ON ru.id = r.run_id" \
  " JOIN devices AS d ON d.id = r.device_id JOIN problems AS p ON p.id = r.problem_id"

static const char *const k_device_keys[] = FT_DB_JSON_KEYS(FT_DEVICE_COLUMNS);
static const char *const k_problem_keys[] = FT_DB_JSON_KEYS(FT_PROBLEM_COLUMNS);
static const char *const k_run_keys[] = FT_DB_JSON_KEYS(FT_RUN_COLUMNS);
static const char *const k_result_keys[] = FT_DB_JSON_KEYS(FT_RESULT_COLUMNS);
static const char *const k_best_keys[] = FT_DB_JSON_KEYS(FT_BEST_COLUMNS);
static const char *const k_cubin_keys[] = FT_DB_JSON_KEYS(FT_CUBIN_COLUMNS);

/* The joins give the references' natural keys their aliases: d (devices), ru (runs), p
 * (problems); see FT__SEL in db_columns.h. */
static const section k_sections[] = {
    {"devices", "SELECT " FT_DB_COLS(FT_DEVICE_COLUMNS, ) " FROM devices ORDER BY fingerprint",
     k_device_keys, NKEYS(k_device_keys)},
    {"problems",
     "SELECT " FT_DB_COLS(FT_PROBLEM_COLUMNS, "p.") " FROM problems AS p ORDER BY " PROBLEM_ORDER,
     k_problem_keys, NKEYS(k_problem_keys)},
    {"runs",
     "SELECT " FT_DB_COLS(FT_RUN_COLUMNS, "r.")
     " FROM runs AS r JOIN devices AS d ON d.id = r.device_id ORDER BY r.uuid",
     k_run_keys, NKEYS(k_run_keys)},
    {"results",
     "SELECT " FT_DB_COLS(FT_RESULT_COLUMNS, "r.") RESULTS_FROM " ORDER BY r.uuid",
     k_result_keys, NKEYS(k_result_keys)},
    {"best",
     "SELECT " FT_DB_COLS(FT_BEST_COLUMNS, "b.")
     " FROM best AS b JOIN devices AS d ON d.id = b.device_id"
     " JOIN problems AS p ON p.id = b.problem_id ORDER BY d.fingerprint, " PROBLEM_ORDER,
     k_best_keys, NKEYS(k_best_keys)},
    {"cubins",
     "SELECT " FT_DB_COLS(FT_CUBIN_COLUMNS, )
     " FROM cubins ORDER BY source_hash, arch, nvrtc_version, options",
     k_cubin_keys, NKEYS(k_cubin_keys)},
};
#define N_SECTIONS ((int)(sizeof k_sections / sizeof k_sections[0]))

static ft_status check_written(ft_db *db, FILE *out, ft_err *err) {
  if (fflush(out) != 0 || ferror(out))
    return ft__fail(err, FT_ERR_IO, "exporting database %s: writing the output failed", db->path);
  return FT_OK;
}

ft_status ft_db_export_json(ft_db *db, FILE *out, int with_cubins, ft_err *err) {
  if (!db || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_db_export_json: NULL argument");
  /* One read transaction, so a concurrent writer cannot make the sections disagree. */
  FT_TRY(ft__db_begin_read(db, "starting the export", err));
  fprintf(out, "{\"format\":\"%s\",\"version\":%d,\n", FT_DB_EXPORT_FORMAT,
          FT_DB_EXPORT_VERSION);
  ft_status s = FT_OK;
  for (int i = 0; i < N_SECTIONS && s == FT_OK; i++) {
    if (!with_cubins && strcmp(k_sections[i].name, "cubins") == 0) continue;
    if (i) fputs(",\n", out);
    s = write_section(db, out, &k_sections[i], err);
  }
  fputs("\n}\n", out);
  ft__db_end_read(db);
  FT_TRY(s);
  return check_written(db, out, err);
}

/* ---------------------------------------------------------------------------------------------
 * Export CSV (RFC 4180: CRLF line ends, fields with ',', '"', CR or LF quoted, '"' doubled) */

static void csv_text(FILE *f, const char *s, size_t n) {
  if (!strpbrk(s, ",\"\r\n") && strlen(s) == n) {
    fwrite(s, 1, n, f);
    return;
  }
  putc('"', f);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"') putc('"', f);
    putc(s[i], f);
  }
  putc('"', f);
}

static void csv_value(FILE *f, sqlite3_stmt *st, int i) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: fprintf(f, "%" PRId64, (int64_t)sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT: ft_json_write_double(f, sqlite3_column_double(st, i)); break;
    case SQLITE_NULL: break;
    default:
      csv_text(f, (const char *)sqlite3_column_text(st, i), (size_t)sqlite3_column_bytes(st, i));
      break;
  }
}

ft_status ft_db_export_csv(ft_db *db, FILE *out, ft_err *err) {
  static const char header[] = FT_DB_CSV_HEADER;
  static const char sql[] =
      "SELECT " FT_DB_CSV_COLS RESULTS_FROM " ORDER BY d.fingerprint, " PROBLEM_ORDER ", r.strategy, r.median_ms IS NULL, r.median_ms,"
      " r.uuid";
  if (!db || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_db_export_csv: NULL argument");
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return ft__db_error(db, err, rc, "preparing the CSV export");
  fprintf(out, "%s\r\n", header);
  int cols = sqlite3_column_count(st);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < cols; i++) {
      if (i) putc(',', out);
      csv_value(out, st, i);
    }
    fputs("\r\n", out);
  }
  ft_status s = rc == SQLITE_DONE ? FT_OK : ft__db_error(db, err, rc, "exporting CSV");
  sqlite3_finalize(st);
  FT_TRY(s);
  return check_written(db, out, err);
}
