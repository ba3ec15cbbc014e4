/* Export (JSON, CSV) and import (JSON) of the results database; docs/FORMAT.md is the contract.
 *
 * Export writes rows in natural-key order with references by natural key, never local row ids,
 * so two databases holding the same measurements export the same bytes. Import validates the
 * whole file into memory first, then merges in one transaction: a bad file changes nothing. */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "json.h"

#define EXPORT_FORMAT "fusedtune-export"
#define EXPORT_VERSION 1

/* ---------------------------------------------------------------------------------------------
 * Base64 (RFC 4648, padded). Decoding accepts only the canonical encoding, so export -> import
 * -> export is byte-identical. */

static const char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void write_base64(FILE *f, const unsigned char *p, size_t n) {
  putc('"', f);
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16;
    if (i + 1 < n) v |= (unsigned)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    char q[4] = {k_b64[v >> 18], k_b64[(v >> 12) & 63], i + 1 < n ? k_b64[(v >> 6) & 63] : '=',
                 i + 2 < n ? k_b64[v & 63] : '='};
    fwrite(q, 1, 4, f);
  }
  putc('"', f);
}

static int b64_value(char c) {
  const char *hit = c ? strchr(k_b64, c) : NULL;
  return hit ? (int)(hit - k_b64) : -1;
}

/* Decodes s[0..len) into a malloc'd buffer; 0 when not canonical base64 or out of memory
 * (*nomem tells which). */
static int decode_base64(const char *s, size_t len, unsigned char **out, size_t *out_len, int *nomem) {
  *nomem = 0;
  if (len % 4) return 0;
  size_t pad = (len && s[len - 1] == '=') + (len > 1 && s[len - 2] == '=');
  size_t n = len / 4 * 3 - pad;
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf) {
    *nomem = 1;
    return 0;
  }
  size_t o = 0;
  for (size_t i = 0; i < len; i += 4) {
    int last = i + 4 == len;
    int d[4];
    for (int j = 0; j < 4; j++) {
      int is_pad = last && s[i + j] == '=' && (size_t)j >= 4 - pad;
      d[j] = is_pad ? 0 : b64_value(s[i + j]);
      if (d[j] < 0) goto bad;
    }
    unsigned v = (unsigned)d[0] << 18 | (unsigned)d[1] << 12 | (unsigned)d[2] << 6 | (unsigned)d[3];
    /* Non-canonical: bits the padding discards must be zero. */
    if (last && ((pad == 1 && (v & 0xFF)) || (pad == 2 && (v & 0xFFFF)))) goto bad;
    unsigned char b[3] = {(unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v};
    size_t take = last ? 3 - pad : 3;
    memcpy(buf + o, b, take);
    o += take;
  }
  *out = buf;
  *out_len = n;
  return 1;
bad:
  free(buf);
  return 0;
}

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
      write_base64(f, sqlite3_column_blob(st, i), (size_t)sqlite3_column_bytes(st, i));
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
#define PROBLEM_KEYS "problem.m", "problem.n", "problem.k", "problem.layout", "problem.math", \
                     "problem.epilogue_hash"
#define PROBLEM_COLS "p.m, p.n, p.k, p.layout, p.math, p.epilogue_hash"
#define PROBLEM_ORDER "p.m, p.n, p.k, p.layout, p.math, p.epilogue_hash"

static const char *const k_device_keys[] = {
    "fingerprint", "name", "cc_major", "cc_minor", "sm_count", "mem_bytes", "driver_version",
    "runtime_version", "nvrtc_version", "cublas_version", "first_seen", "last_seen"};
static const char *const k_problem_keys[] = {"m", "n", "k", "layout", "math", "epilogue",
                                             "epilogue_hash"};
static const char *const k_run_keys[] = {"uuid", "device", "started", "ended", "tool_version",
                                         "options", "budget_s", "outcome"};
static const char *const k_result_keys[] = {
    "uuid", "run", "device", PROBLEM_KEYS, "strategy", "variant", "config", "status",
    "median_ms", "min_ms", "iqr_ms", "repeats", "rel_err", "max_abs_err", "source_hash",
    "fusedtune_version", "message", "created"};
static const char *const k_best_keys[] = {"device", PROBLEM_KEYS, "result", "strategy",
                                          "variant", "config", "source_hash", "median_ms"};
static const char *const k_cubin_keys[] = {"source_hash", "arch", "nvrtc_version", "options",
                                           "size", "created", "data"};

static const section k_sections[] = {
    {"devices",
     "SELECT fingerprint, name, cc_major, cc_minor, sm_count, mem_bytes, driver_version,"
     " runtime_version, nvrtc_version, cublas_version, first_seen, last_seen FROM devices"
     " ORDER BY fingerprint",
     k_device_keys, NKEYS(k_device_keys)},
    {"problems",
     "SELECT m, n, k, layout, math, epilogue, epilogue_hash FROM problems AS p"
     " ORDER BY " PROBLEM_ORDER,
     k_problem_keys, NKEYS(k_problem_keys)},
    {"runs",
     "SELECT r.uuid, d.fingerprint, r.started, r.ended, r.tool_version, r.options, r.budget_s,"
     " r.outcome FROM runs AS r JOIN devices AS d ON d.id = r.device_id ORDER BY r.uuid",
     k_run_keys, NKEYS(k_run_keys)},
    {"results",
     "SELECT r.uuid, ru.uuid, d.fingerprint, " PROBLEM_COLS ", r.strategy, r.variant, r.config,"
     " r.status, r.median_ms, r.min_ms, r.iqr_ms, r.repeats, r.rel_err, r.max_abs_err,"
     " r.source_hash, r.fusedtune_version, r.message, r.created"
     " FROM results AS r LEFT JOIN runs AS ru ON ru.id = r.run_id"
     " JOIN devices AS d ON d.id = r.device_id JOIN problems AS p ON p.id = r.problem_id"
     " ORDER BY r.uuid",
     k_result_keys, NKEYS(k_result_keys)},
    {"best",
     "SELECT d.fingerprint, " PROBLEM_COLS ", b.uuid, b.strategy, b.variant, b.config,"
     " b.source_hash, b.median_ms FROM best AS b JOIN devices AS d ON d.id = b.device_id"
     " JOIN problems AS p ON p.id = b.problem_id ORDER BY d.fingerprint, " PROBLEM_ORDER,
     k_best_keys, NKEYS(k_best_keys)},
    {"cubins",
     "SELECT source_hash, arch, nvrtc_version, options, size, created, data FROM cubins"
     " ORDER BY source_hash, arch, nvrtc_version, options",
     k_cubin_keys, NKEYS(k_cubin_keys)},
};
#define N_SECTIONS ((int)(sizeof k_sections / sizeof k_sections[0]))

/* A read transaction, so a concurrent writer cannot make the sections disagree. */
static ft_status begin_read(ft_db *db, ft_err *err) {
  int rc = sqlite3_exec(db->h, "BEGIN", NULL, NULL, NULL);
  return rc == SQLITE_OK ? FT_OK : ft__db_error(db, err, rc, "starting the export");
}

static void end_read(ft_db *db) {
  if (!sqlite3_get_autocommit(db->h)) sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
}

static ft_status check_written(ft_db *db, FILE *out, ft_err *err) {
  if (fflush(out) != 0 || ferror(out))
    return ft__fail(err, FT_ERR_IO, "exporting database %s: writing the output failed", db->path);
  return FT_OK;
}

ft_status ft_db_export_json(ft_db *db, FILE *out, int with_cubins, ft_err *err) {
  if (!db || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_db_export_json: NULL argument");
  FT_TRY(begin_read(db, err));
  fprintf(out, "{\"format\":\"%s\",\"version\":%d,\n", EXPORT_FORMAT, EXPORT_VERSION);
  ft_status s = FT_OK;
  for (int i = 0; i < N_SECTIONS && s == FT_OK; i++) {
    if (!with_cubins && strcmp(k_sections[i].name, "cubins") == 0) continue;
    if (i) fputs(",\n", out);
    s = write_section(db, out, &k_sections[i], err);
  }
  fputs("\n}\n", out);
  end_read(db);
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
  static const char header[] =
      "uuid,created,device,fingerprint,m,n,k,layout,math,epilogue,epilogue_hash,strategy,"
      "variant,status,median_ms,min_ms,iqr_ms,repeats,rel_err,max_abs_err,source_hash,config,"
      "message,run";
  static const char sql[] =
      "SELECT r.uuid, r.created, d.name, d.fingerprint, p.m, p.n, p.k, p.layout, p.math,"
      " p.epilogue, p.epilogue_hash, r.strategy, r.variant, r.status, r.median_ms, r.min_ms,"
      " r.iqr_ms, r.repeats, r.rel_err, r.max_abs_err, r.source_hash, r.config, r.message, ru.uuid"
      " FROM results AS r LEFT JOIN runs AS ru ON ru.id = r.run_id"
      " JOIN devices AS d ON d.id = r.device_id JOIN problems AS p ON p.id = r.problem_id"
      " ORDER BY d.fingerprint, " PROBLEM_ORDER ", r.strategy, r.median_ms IS NULL, r.median_ms,"
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

/* ---------------------------------------------------------------------------------------------
 * Import: records as validated from the file. Strings point into the JSON document. */

typedef struct imp_key {
  int64_t m, n, k;
  const char *layout, *math, *epilogue_hash;
} imp_key;

typedef struct imp_device {
  const char *fingerprint, *name, *first_seen, *last_seen;
  int64_t cc_major, cc_minor, sm_count, mem_bytes, driver, runtime, nvrtc, cublas;
  size_t idx;
  int64_t id; /* local row id, once merged */
} imp_device;

typedef struct imp_problem {
  imp_key key;
  const char *epilogue;
  size_t idx;
  int64_t id;
} imp_problem;

typedef struct imp_run {
  const char *uuid, *device, *started, *ended, *tool_version, *options, *outcome;
  double budget_s;
  size_t idx;
  imp_device *dev;
  int64_t id;
} imp_run;

typedef struct imp_result {
  const char *uuid, *run, *device, *strategy, *variant, *config, *status;
  const char *source_hash, *fusedtune_version, *message, *created;
  imp_key key;
  double median_ms, min_ms, iqr_ms, rel_err, max_abs_err; /* NAN: null */
  int64_t repeats;
  size_t idx;
  imp_device *dev;
  imp_problem *prob;
  imp_run *run_rec;
} imp_result;

typedef struct imp_cubin {
  const char *source_hash, *arch, *options, *created, *data_b64;
  int64_t nvrtc, size;
  unsigned char *data; /* decoded, owned */
  size_t data_len, idx;
} imp_cubin;

typedef struct imp_best { /* validated for shape, then ignored: best is derived */
  const char *device, *result, *strategy, *variant, *config, *source_hash;
  imp_key key;
  double median_ms;
} imp_best;

typedef struct import_set {
  imp_device *devices;
  imp_problem *problems;
  imp_run *runs;
  imp_result *results;
  imp_cubin *cubins;
  size_t n_devices, n_problems, n_runs, n_results, n_cubins;
  imp_device **dev_sorted; /* by fingerprint, for references */
  imp_problem **prob_sorted;
  imp_run **run_sorted;
} import_set;

static void import_set_free(import_set *s) {
  for (size_t i = 0; i < s->n_cubins; i++) free(s->cubins[i].data);
  free(s->devices);
  free(s->problems);
  free(s->runs);
  free(s->results);
  free(s->cubins);
  free(s->dev_sorted);
  free(s->prob_sorted);
  free(s->run_sorted);
}

static ft_status bad(ft_err *err, const char *where, const char *fmt, const char *detail) {
  char what[512];
  snprintf(what, sizeof what, fmt, detail);
  return ft__fail(err, FT_ERR_FORMAT, "import: %s: %s", where, what);
}

/* ---------------------------------------------------------------------------------------------
 * Import: table-driven field reading */

typedef enum fkind {
  K_STR,       /* string, length within [lo, hi] bytes */
  K_STR_NULL,  /* the same, or null */
  K_JSON,      /* string holding a JSON document (config, options) */
  K_UUID,      /* lowercase 8-4-4-4-12 hex */
  K_UUID_NULL, /* the same, or null */
  K_TIME,      /* ISO-8601 UTC, "YYYY-MM-DDTHH:MM:SS[.fff]Z" */
  K_TIME_NULL,
  K_INT,      /* integer within [lo, hi] */
  K_NUM,      /* finite number */
  K_NUM_NULL, /* non-negative number, or null (stored NAN) */
  K_KEY       /* a problem key object */
} fkind;

typedef struct field {
  const char *key;
  fkind kind;
  size_t off;
  int64_t lo, hi;
} field;

#define F(type, key, kind, member, lo, hi) {key, kind, offsetof(type, member), lo, hi}
#define INT_MAXV ((int64_t)2147483647)

static const field k_key_fields[] = {
    F(imp_key, "m", K_INT, m, 1, INT64_MAX),
    F(imp_key, "n", K_INT, n, 1, INT64_MAX),
    F(imp_key, "k", K_INT, k, 1, INT64_MAX),
    F(imp_key, "layout", K_STR, layout, 1, 15),
    F(imp_key, "math", K_STR, math, 1, 15),
    F(imp_key, "epilogue_hash", K_STR, epilogue_hash, 1, 16),
};

static const field k_device_fields[] = {
    F(imp_device, "fingerprint", K_STR, fingerprint, 1, 16),
    F(imp_device, "name", K_STR, name, 0, 255),
    F(imp_device, "cc_major", K_INT, cc_major, 0, INT_MAXV),
    F(imp_device, "cc_minor", K_INT, cc_minor, 0, INT_MAXV),
    F(imp_device, "sm_count", K_INT, sm_count, 0, INT_MAXV),
    F(imp_device, "mem_bytes", K_INT, mem_bytes, 0, INT64_MAX),
    F(imp_device, "driver_version", K_INT, driver, 0, INT_MAXV),
    F(imp_device, "runtime_version", K_INT, runtime, 0, INT_MAXV),
    F(imp_device, "nvrtc_version", K_INT, nvrtc, 0, INT_MAXV),
    F(imp_device, "cublas_version", K_INT, cublas, 0, INT_MAXV),
    F(imp_device, "first_seen", K_TIME, first_seen, 0, 0),
    F(imp_device, "last_seen", K_TIME, last_seen, 0, 0),
};

static const field k_problem_fields[] = {
    F(imp_problem, "m", K_INT, key.m, 1, INT64_MAX),
    F(imp_problem, "n", K_INT, key.n, 1, INT64_MAX),
    F(imp_problem, "k", K_INT, key.k, 1, INT64_MAX),
    F(imp_problem, "layout", K_STR, key.layout, 1, 15),
    F(imp_problem, "math", K_STR, key.math, 1, 15),
    F(imp_problem, "epilogue", K_STR, epilogue, 0, 4095),
    F(imp_problem, "epilogue_hash", K_STR, key.epilogue_hash, 1, 16),
};

static const field k_run_fields[] = {
    F(imp_run, "uuid", K_UUID, uuid, 0, 0),
    F(imp_run, "device", K_STR, device, 1, 16),
    F(imp_run, "started", K_TIME, started, 0, 0),
    F(imp_run, "ended", K_TIME_NULL, ended, 0, 0),
    F(imp_run, "tool_version", K_STR, tool_version, 0, 64),
    F(imp_run, "options", K_JSON, options, 0, FT_DB_MESSAGE_MAX),
    F(imp_run, "budget_s", K_NUM, budget_s, 0, 0),
    F(imp_run, "outcome", K_STR_NULL, outcome, 0, 4096),
};

static const field k_result_fields[] = {
    F(imp_result, "uuid", K_UUID, uuid, 0, 0),
    F(imp_result, "run", K_UUID_NULL, run, 0, 0),
    F(imp_result, "device", K_STR, device, 1, 16),
    F(imp_result, "problem", K_KEY, key, 0, 0),
    F(imp_result, "strategy", K_STR, strategy, 1, 31),
    F(imp_result, "variant", K_STR, variant, 0, 127),
    F(imp_result, "config", K_JSON, config, 0, 511),
    F(imp_result, "status", K_STR, status, 1, 32),
    F(imp_result, "median_ms", K_NUM_NULL, median_ms, 0, 0),
    F(imp_result, "min_ms", K_NUM_NULL, min_ms, 0, 0),
    F(imp_result, "iqr_ms", K_NUM_NULL, iqr_ms, 0, 0),
    F(imp_result, "repeats", K_INT, repeats, 0, INT_MAXV),
    F(imp_result, "rel_err", K_NUM_NULL, rel_err, 0, 0),
    F(imp_result, "max_abs_err", K_NUM_NULL, max_abs_err, 0, 0),
    F(imp_result, "source_hash", K_STR, source_hash, 0, 16),
    F(imp_result, "fusedtune_version", K_STR, fusedtune_version, 0, 64),
    F(imp_result, "message", K_STR, message, 0, FT_DB_MESSAGE_MAX),
    F(imp_result, "created", K_TIME, created, 0, 0),
};

static const field k_cubin_fields[] = {
    F(imp_cubin, "source_hash", K_STR, source_hash, 1, 16),
    F(imp_cubin, "arch", K_STR, arch, 1, 64),
    F(imp_cubin, "nvrtc_version", K_INT, nvrtc, 0, INT_MAXV),
    F(imp_cubin, "options", K_STR, options, 0, 1 << 16),
    F(imp_cubin, "size", K_INT, size, 0, INT_MAXV),
    F(imp_cubin, "created", K_TIME, created, 0, 0),
    F(imp_cubin, "data", K_STR, data_b64, 0, INT64_MAX),
};

static const field k_best_fields[] = {
    F(imp_best, "device", K_STR, device, 1, 16),
    F(imp_best, "problem", K_KEY, key, 0, 0),
    F(imp_best, "result", K_UUID, result, 0, 0),
    F(imp_best, "strategy", K_STR, strategy, 1, 31),
    F(imp_best, "variant", K_STR, variant, 0, 127),
    F(imp_best, "config", K_JSON, config, 0, 511),
    F(imp_best, "source_hash", K_STR, source_hash, 0, 16),
    F(imp_best, "median_ms", K_NUM, median_ms, 0, 0),
};

static int is_uuid(const char *s, size_t n) {
  if (n != 36) return 0;
  for (size_t i = 0; i < n; i++) {
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  }
  return 1;
}

static int is_timestamp(const char *s, size_t n) {
  static const char pat[] = "dddd-dd-ddTdd:dd:dd"; /* then optional .d+ then Z */
  size_t p = sizeof pat - 1;
  if (n < p + 1 || s[n - 1] != 'Z') return 0;
  for (size_t i = 0; i < p; i++)
    if (pat[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pat[i]) return 0;
  if (n == p + 1) return 1;
  if (s[p] != '.' || n < p + 3) return 0;
  for (size_t i = p + 1; i < n - 1; i++)
    if (!(s[i] >= '0' && s[i] <= '9')) return 0;
  return 1;
}

static ft_status read_fields(const ft_json *obj, const char *where, const field *fs, size_t nf,
                             void *rec, ft_err *err);

static ft_status read_string(const ft_json *v, const char *path, const field *fd, void *slot,
                             ft_err *err) {
  int nullable = fd->kind == K_STR_NULL || fd->kind == K_UUID_NULL || fd->kind == K_TIME_NULL;
  if (v->type == FT_JSON_NULL && nullable) {
    *(const char **)slot = NULL;
    return FT_OK;
  }
  if (v->type != FT_JSON_STRING)
    return bad(err, path, nullable ? "expected a string or null, found %s" : "expected a string, found %s",
               ft_json_type_name(v->type));
  if (strlen(v->str) != v->str_len) return bad(err, path, "contains a NUL character%s", "");
  if (fd->kind == K_UUID || fd->kind == K_UUID_NULL) {
    if (!is_uuid(v->str, v->str_len)) return bad(err, path, "not a lowercase uuid: \"%.60s\"", v->str);
  } else if (fd->kind == K_TIME || fd->kind == K_TIME_NULL) {
    if (!is_timestamp(v->str, v->str_len))
      return bad(err, path, "not an ISO-8601 UTC time (YYYY-MM-DDTHH:MM:SS.fffZ): \"%.60s\"", v->str);
  } else if ((int64_t)v->str_len < fd->lo || (int64_t)v->str_len > fd->hi) {
    char what[96];
    snprintf(what, sizeof what, "length %zu outside %" PRId64 "..%" PRId64 " bytes", v->str_len,
             fd->lo, fd->hi);
    return bad(err, path, "%s", what);
  }
  if (fd->kind == K_JSON) {
    ft_json_doc *doc = NULL;
    ft_err jerr;
    ft_status s = ft_json_parse(v->str, v->str_len, NULL, &doc, &jerr);
    ft_json_free(doc);
    if (s != FT_OK) return bad(err, path, "not valid JSON text: %.400s", jerr.msg);
  }
  *(const char **)slot = v->str;
  return FT_OK;
}

static ft_status read_number(const ft_json *v, const char *path, const field *fd, void *slot,
                             ft_err *err) {
  if (fd->kind == K_INT) {
    if (v->type != FT_JSON_NUMBER)
      return bad(err, path, "expected an integer, found %s", ft_json_type_name(v->type));
    if (!v->is_integer || v->integer < fd->lo || v->integer > fd->hi) {
      char what[96];
      snprintf(what, sizeof what, "expected an integer in %" PRId64 "..%" PRId64, fd->lo, fd->hi);
      return bad(err, path, "%s", what);
    }
    *(int64_t *)slot = v->integer;
    return FT_OK;
  }
  if (v->type == FT_JSON_NULL && fd->kind == K_NUM_NULL) {
    *(double *)slot = NAN;
    return FT_OK;
  }
  if (v->type != FT_JSON_NUMBER)
    return bad(err, path, fd->kind == K_NUM_NULL ? "expected a number or null, found %s"
                                                 : "expected a number, found %s",
               ft_json_type_name(v->type));
  if (fd->kind == K_NUM_NULL && v->number < 0)
    return bad(err, path, "expected a non-negative number or null%s", "");
  *(double *)slot = v->number;
  return FT_OK;
}

static ft_status read_field(const ft_json *v, const char *path, const field *fd, void *rec,
                            ft_err *err) {
  void *slot = (char *)rec + fd->off;
  switch (fd->kind) {
    case K_INT:
    case K_NUM:
    case K_NUM_NULL: return read_number(v, path, fd, slot, err);
    case K_KEY:
      return read_fields(v, path, k_key_fields, sizeof k_key_fields / sizeof k_key_fields[0], slot,
                         err);
    default: return read_string(v, path, fd, slot, err);
  }
}

/* Reads every field of fs from obj into rec; a missing or unknown field is an error (an export
 * of this version has exactly these). */
static ft_status read_fields(const ft_json *obj, const char *where, const field *fs, size_t nf,
                             void *rec, ft_err *err) {
  if (obj->type != FT_JSON_OBJECT)
    return bad(err, where, "expected an object, found %s", ft_json_type_name(obj->type));
  for (size_t i = 0; i < obj->count; i++) {
    size_t j = 0;
    while (j < nf && strcmp(fs[j].key, obj->members[i].key) != 0) j++;
    if (j == nf) return bad(err, where, "unknown field \"%.80s\"", obj->members[i].key);
  }
  for (size_t j = 0; j < nf; j++) {
    char path[256];
    snprintf(path, sizeof path, "%s.%s", where, fs[j].key);
    const ft_json *v = ft_json_get(obj, fs[j].key);
    if (!v) return bad(err, where, "missing field \"%s\"", fs[j].key);
    FT_TRY(read_field(v, path, &fs[j], rec, err));
  }
  return FT_OK;
}

/* Reads the array member name of root into a new array of records of size rec_size. */
static ft_status read_array(const ft_json *root, const char *name, int optional, const field *fs,
                            size_t nf, size_t rec_size, void **recs, size_t *n, ft_err *err) {
  const ft_json *arr = ft_json_get(root, name);
  *recs = NULL;
  *n = 0;
  if (!arr && optional) return FT_OK;
  if (!arr) return bad(err, "top level", "missing field \"%s\"", name);
  if (arr->type != FT_JSON_ARRAY)
    return bad(err, name, "expected an array, found %s", ft_json_type_name(arr->type));
  if (arr->count == 0) return FT_OK;
  *recs = calloc(arr->count, rec_size);
  if (!*recs) return ft__fail(err, FT_ERR_NOMEM, "import: out of memory reading %s", name);
  *n = arr->count;
  for (size_t i = 0; i < arr->count; i++) {
    char where[64];
    snprintf(where, sizeof where, "%s[%zu]", name, i);
    ft_status s = read_fields(arr->items[i], where, fs, nf, (char *)*recs + i * rec_size, err);
    if (s != FT_OK) {
      free(*recs);
      *recs = NULL;
      *n = 0;
      return s;
    }
  }
  return FT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Import: references and duplicates */

static int key_cmp(const imp_key *a, const imp_key *b) {
  if (a->m != b->m) return a->m < b->m ? -1 : 1;
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  if (a->k != b->k) return a->k < b->k ? -1 : 1;
  int c = strcmp(a->layout, b->layout);
  if (c) return c;
  c = strcmp(a->math, b->math);
  return c ? c : strcmp(a->epilogue_hash, b->epilogue_hash);
}

static int dev_cmp(const void *a, const void *b) {
  return strcmp((*(imp_device *const *)a)->fingerprint, (*(imp_device *const *)b)->fingerprint);
}
static int prob_cmp(const void *a, const void *b) {
  return key_cmp(&(*(imp_problem *const *)a)->key, &(*(imp_problem *const *)b)->key);
}
static int run_cmp(const void *a, const void *b) {
  return strcmp((*(imp_run *const *)a)->uuid, (*(imp_run *const *)b)->uuid);
}
static int result_cmp(const void *a, const void *b) {
  return strcmp((*(imp_result *const *)a)->uuid, (*(imp_result *const *)b)->uuid);
}
static int cubin_cmp(const void *a, const void *b) {
  const imp_cubin *x = *(imp_cubin *const *)a, *y = *(imp_cubin *const *)b;
  int c = strcmp(x->source_hash, y->source_hash);
  if (!c) c = strcmp(x->arch, y->arch);
  if (!c && x->nvrtc != y->nvrtc) c = x->nvrtc < y->nvrtc ? -1 : 1;
  return c ? c : strcmp(x->options, y->options);
}

/* Sorts pointers to recs[0..n) with cmp and refuses two equal neighbours. *sorted is malloc'd
 * (the caller keeps it for lookups or frees it). */
static ft_status sort_unique(void *recs, size_t n, size_t rec_size, size_t idx_off,
                             int (*cmp)(const void *, const void *), const char *name,
                             const char *keyname, void ***sorted, ft_err *err) {
  *sorted = NULL;
  if (n == 0) return FT_OK;
  void **p = malloc(n * sizeof *p);
  if (!p) return ft__fail(err, FT_ERR_NOMEM, "import: out of memory indexing %s", name);
  for (size_t i = 0; i < n; i++) {
    p[i] = (char *)recs + i * rec_size;
    *(size_t *)((char *)p[i] + idx_off) = i;
  }
  qsort(p, n, sizeof *p, cmp);
  for (size_t i = 1; i < n; i++) {
    if (cmp(&p[i - 1], &p[i]) == 0) {
      size_t a = *(size_t *)((char *)p[i - 1] + idx_off), b = *(size_t *)((char *)p[i] + idx_off);
      char where[64], what[96];
      snprintf(where, sizeof where, "%s[%zu]", name, a > b ? a : b);
      snprintf(what, sizeof what, "same %s as %s[%zu]", keyname, name, a < b ? a : b);
      free(p);
      return bad(err, where, "%s", what);
    }
  }
  *sorted = p;
  return FT_OK;
}

static imp_device *find_device(const import_set *s, const char *fp) {
  imp_device key = {.fingerprint = fp}, *kp = &key;
  imp_device **hit = s->n_devices ? bsearch(&kp, s->dev_sorted, s->n_devices, sizeof kp, dev_cmp) : NULL;
  return hit ? *hit : NULL;
}

static imp_problem *find_problem(const import_set *s, const imp_key *k) {
  imp_problem key = {.key = *k}, *kp = &key;
  imp_problem **hit =
      s->n_problems ? bsearch(&kp, s->prob_sorted, s->n_problems, sizeof kp, prob_cmp) : NULL;
  return hit ? *hit : NULL;
}

static imp_run *find_run(const import_set *s, const char *uuid) {
  imp_run key = {.uuid = uuid}, *kp = &key;
  imp_run **hit = s->n_runs ? bsearch(&kp, s->run_sorted, s->n_runs, sizeof kp, run_cmp) : NULL;
  return hit ? *hit : NULL;
}

static ft_status ref_error(ft_err *err, const char *section, size_t i, const char *field,
                           const char *what) {
  char where[80];
  snprintf(where, sizeof where, "%s[%zu].%s", section, i, field);
  return bad(err, where, "%s", what);
}

static ft_status resolve_results(import_set *s, ft_err *err) {
  static const char *const statuses[] = {"ok", "compile_error", "wrong_result", "launch_error",
                                         "timeout"};
  for (size_t i = 0; i < s->n_results; i++) {
    imp_result *r = &s->results[i];
    size_t j = 0;
    while (j < 5 && strcmp(r->status, statuses[j]) != 0) j++;
    if (j == 5)
      return ref_error(err, "results", i, "status",
                       "expected one of ok, compile_error, wrong_result, launch_error, timeout");
    if (!(r->dev = find_device(s, r->device)))
      return ref_error(err, "results", i, "device", "no device with this fingerprint in devices");
    if (!(r->prob = find_problem(s, &r->key)))
      return ref_error(err, "results", i, "problem", "no such problem in problems");
    if (r->run && !(r->run_rec = find_run(s, r->run)))
      return ref_error(err, "results", i, "run", "no run with this uuid in runs");
    if (r->run_rec && r->run_rec->dev != r->dev)
      return ref_error(err, "results", i, "device", "differs from the device of its run");
  }
  return FT_OK;
}

static ft_status decode_cubins(import_set *s, ft_err *err) {
  for (size_t i = 0; i < s->n_cubins; i++) {
    imp_cubin *c = &s->cubins[i];
    int nomem;
    if (!decode_base64(c->data_b64, strlen(c->data_b64), &c->data, &c->data_len, &nomem)) {
      if (nomem) return ft__fail(err, FT_ERR_NOMEM, "import: out of memory decoding cubins");
      return ref_error(err, "cubins", i, "data", "not canonical base64");
    }
    if ((int64_t)c->data_len != c->size)
      return ref_error(err, "cubins", i, "size", "differs from the length of data");
  }
  return FT_OK;
}

/* Checks references and duplicates across the sections. */
static ft_status resolve(import_set *s, ft_err *err) {
  void **tmp;
  FT_TRY(sort_unique(s->devices, s->n_devices, sizeof *s->devices, offsetof(imp_device, idx),
                     dev_cmp, "devices", "fingerprint", &tmp, err));
  s->dev_sorted = (imp_device **)tmp;
  FT_TRY(sort_unique(s->problems, s->n_problems, sizeof *s->problems, offsetof(imp_problem, idx),
                     prob_cmp, "problems", "key (m, n, k, layout, math, epilogue_hash)", &tmp, err));
  s->prob_sorted = (imp_problem **)tmp;
  FT_TRY(sort_unique(s->runs, s->n_runs, sizeof *s->runs, offsetof(imp_run, idx), run_cmp, "runs",
                     "uuid", &tmp, err));
  s->run_sorted = (imp_run **)tmp;
  for (size_t i = 0; i < s->n_runs; i++)
    if (!(s->runs[i].dev = find_device(s, s->runs[i].device)))
      return ref_error(err, "runs", i, "device", "no device with this fingerprint in devices");
  FT_TRY(sort_unique(s->results, s->n_results, sizeof *s->results, offsetof(imp_result, idx),
                     result_cmp, "results", "uuid", &tmp, err));
  free(tmp);
  FT_TRY(resolve_results(s, err));
  FT_TRY(sort_unique(s->cubins, s->n_cubins, sizeof *s->cubins, offsetof(imp_cubin, idx),
                     cubin_cmp, "cubins", "key (source_hash, arch, nvrtc_version, options)", &tmp,
                     err));
  free(tmp);
  return decode_cubins(s, err);
}

static ft_status read_header(const ft_json *root, ft_err *err) {
  static const char *const known[] = {"format", "version", "devices", "problems",
                                      "runs",   "results", "best",    "cubins"};
  if (root->type != FT_JSON_OBJECT)
    return bad(err, "top level", "expected an object, found %s", ft_json_type_name(root->type));
  const ft_json *fmt = ft_json_get(root, "format"), *ver = ft_json_get(root, "version");
  if (!fmt || fmt->type != FT_JSON_STRING || strcmp(fmt->str, EXPORT_FORMAT) != 0)
    return bad(err, "format", "expected \"%s\"", EXPORT_FORMAT);
  if (!ver || ver->type != FT_JSON_NUMBER || !ver->is_integer || ver->integer < 1)
    return bad(err, "version", "expected a positive integer%s", "");
  if (ver->integer > EXPORT_VERSION)
    return ft__fail(err, FT_ERR_VERSION,
                    "import: the file has export version %" PRId64 ", this fusedtune reads up to "
                    "%d: upgrade fusedtune",
                    ver->integer, EXPORT_VERSION);
  for (size_t i = 0; i < root->count; i++) {
    size_t j = 0;
    while (j < sizeof known / sizeof known[0] && strcmp(known[j], root->members[i].key) != 0) j++;
    if (j == sizeof known / sizeof known[0])
      return bad(err, "top level", "unknown field \"%.80s\"", root->members[i].key);
  }
  return FT_OK;
}

#define NF(a) (sizeof a / sizeof a[0])

/* Reads and checks the whole document into s; nothing is written. */
static ft_status validate(const ft_json *root, import_set *s, ft_err *err) {
  FT_TRY(read_header(root, err));
  void *p;
  FT_TRY(read_array(root, "devices", 0, k_device_fields, NF(k_device_fields), sizeof(imp_device),
                    &p, &s->n_devices, err));
  s->devices = p;
  FT_TRY(read_array(root, "problems", 0, k_problem_fields, NF(k_problem_fields),
                    sizeof(imp_problem), &p, &s->n_problems, err));
  s->problems = p;
  FT_TRY(read_array(root, "runs", 0, k_run_fields, NF(k_run_fields), sizeof(imp_run), &p,
                    &s->n_runs, err));
  s->runs = p;
  FT_TRY(read_array(root, "results", 0, k_result_fields, NF(k_result_fields), sizeof(imp_result),
                    &p, &s->n_results, err));
  s->results = p;
  size_t n_best;
  ft_status st = read_array(root, "best", 0, k_best_fields, NF(k_best_fields), sizeof(imp_best), &p,
                            &n_best, err);
  free(p); /* best is derived: its rows were only checked for shape */
  FT_TRY(st);
  FT_TRY(read_array(root, "cubins", 1, k_cubin_fields, NF(k_cubin_fields), sizeof(imp_cubin), &p,
                    &s->n_cubins, err));
  s->cubins = p;
  return resolve(s, err);
}

/* ---------------------------------------------------------------------------------------------
 * Import: merge */

enum { M_DEV_INS, M_DEV_ID, M_PROB_INS, M_PROB_ID, M_RUN_INS, M_RUN_ID, M_RES_INS, M_CUBIN_INS, M_N };

static const char *const k_merge_sql[M_N] = {
    [M_DEV_INS] =
        "INSERT INTO devices (fingerprint, name, cc_major, cc_minor, sm_count, mem_bytes,"
        " driver_version, runtime_version, nvrtc_version, cublas_version, first_seen, last_seen)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT DO NOTHING",
    [M_DEV_ID] = "SELECT id FROM devices WHERE fingerprint = ?1",
    [M_PROB_INS] =
        "INSERT INTO problems (m, n, k, layout, math, epilogue_hash, epilogue)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
    [M_PROB_ID] =
        "SELECT id FROM problems WHERE m = ?1 AND n = ?2 AND k = ?3 AND layout = ?4 AND math = ?5"
        " AND epilogue_hash = ?6",
    [M_RUN_INS] =
        "INSERT INTO runs (uuid, device_id, started, ended, tool_version, options, budget_s,"
        " outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
    [M_RUN_ID] = "SELECT id FROM runs WHERE uuid = ?1",
    [M_RES_INS] =
        "INSERT INTO results (uuid, run_id, device_id, problem_id, strategy, variant, config,"
        " status, median_ms, min_ms, iqr_ms, repeats, rel_err, max_abs_err, source_hash,"
        " fusedtune_version, message, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
        " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) ON CONFLICT DO NOTHING",
    [M_CUBIN_INS] =
        "INSERT INTO cubins (source_hash, arch, nvrtc_version, options, data, size, created)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
};

typedef struct merger {
  ft_db *db;
  sqlite3_stmt *st[M_N];
  ft_import_stats *stats;
  ft_err *err;
} merger;

static void bind_text(sqlite3_stmt *st, int i, const char *s) {
  if (s)
    sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, i);
}

static void bind_nullable(sqlite3_stmt *st, int i, double v) {
  if (isnan(v))
    sqlite3_bind_null(st, i);
  else
    sqlite3_bind_double(st, i, v);
}

/* Runs an insert; adds 1 to *added when it inserted a row (not an already present one). */
static ft_status run_insert(merger *m, int which, int64_t *added, const char *doing) {
  sqlite3_stmt *st = m->st[which];
  int rc = sqlite3_step(st);
  ft_status s = rc == SQLITE_DONE ? FT_OK : ft__db_error(m->db, m->err, rc, doing);
  if (s == FT_OK) *added += sqlite3_changes(m->db->h);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return s;
}

static ft_status run_select_id(merger *m, int which, int64_t *id, const char *doing) {
  sqlite3_stmt *st = m->st[which];
  int rc = sqlite3_step(st);
  ft_status s = FT_OK;
  if (rc == SQLITE_ROW)
    *id = sqlite3_column_int64(st, 0);
  else
    s = ft__db_error(m->db, m->err, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, doing);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return s;
}

static ft_status merge_device(merger *m, imp_device *d) {
  sqlite3_stmt *st = m->st[M_DEV_INS];
  bind_text(st, 1, d->fingerprint);
  bind_text(st, 2, d->name);
  int64_t v[8] = {d->cc_major, d->cc_minor, d->sm_count, d->mem_bytes,
                  d->driver,   d->runtime,  d->nvrtc,    d->cublas};
  for (int i = 0; i < 8; i++) sqlite3_bind_int64(st, 3 + i, v[i]);
  bind_text(st, 11, d->first_seen);
  bind_text(st, 12, d->last_seen);
  FT_TRY(run_insert(m, M_DEV_INS, &m->stats->devices, "importing a device"));
  bind_text(m->st[M_DEV_ID], 1, d->fingerprint);
  return run_select_id(m, M_DEV_ID, &d->id, "importing a device");
}

static void bind_key(sqlite3_stmt *st, const imp_key *k) {
  sqlite3_bind_int64(st, 1, k->m);
  sqlite3_bind_int64(st, 2, k->n);
  sqlite3_bind_int64(st, 3, k->k);
  bind_text(st, 4, k->layout);
  bind_text(st, 5, k->math);
  bind_text(st, 6, k->epilogue_hash);
}

static ft_status merge_problem(merger *m, imp_problem *p) {
  bind_key(m->st[M_PROB_INS], &p->key);
  bind_text(m->st[M_PROB_INS], 7, p->epilogue);
  FT_TRY(run_insert(m, M_PROB_INS, &m->stats->problems, "importing a problem"));
  bind_key(m->st[M_PROB_ID], &p->key);
  return run_select_id(m, M_PROB_ID, &p->id, "importing a problem");
}

static ft_status merge_run(merger *m, imp_run *r) {
  sqlite3_stmt *st = m->st[M_RUN_INS];
  bind_text(st, 1, r->uuid);
  sqlite3_bind_int64(st, 2, r->dev->id);
  bind_text(st, 3, r->started);
  bind_text(st, 4, r->ended);
  bind_text(st, 5, r->tool_version);
  bind_text(st, 6, r->options);
  sqlite3_bind_double(st, 7, r->budget_s);
  bind_text(st, 8, r->outcome);
  FT_TRY(run_insert(m, M_RUN_INS, &m->stats->runs, "importing a run"));
  bind_text(m->st[M_RUN_ID], 1, r->uuid);
  return run_select_id(m, M_RUN_ID, &r->id, "importing a run");
}

static ft_status merge_result(merger *m, const imp_result *r) {
  sqlite3_stmt *st = m->st[M_RES_INS];
  bind_text(st, 1, r->uuid);
  if (r->run_rec) sqlite3_bind_int64(st, 2, r->run_rec->id);
  sqlite3_bind_int64(st, 3, r->dev->id);
  sqlite3_bind_int64(st, 4, r->prob->id);
  bind_text(st, 5, r->strategy);
  bind_text(st, 6, r->variant);
  bind_text(st, 7, r->config);
  bind_text(st, 8, r->status);
  bind_nullable(st, 9, r->median_ms);
  bind_nullable(st, 10, r->min_ms);
  bind_nullable(st, 11, r->iqr_ms);
  sqlite3_bind_int64(st, 12, r->repeats);
  bind_nullable(st, 13, r->rel_err);
  bind_nullable(st, 14, r->max_abs_err);
  bind_text(st, 15, r->source_hash);
  bind_text(st, 16, r->fusedtune_version);
  bind_text(st, 17, r->message);
  bind_text(st, 18, r->created);
  return run_insert(m, M_RES_INS, &m->stats->results, "importing a result");
}

static ft_status merge_cubin(merger *m, const imp_cubin *c) {
  sqlite3_stmt *st = m->st[M_CUBIN_INS];
  bind_text(st, 1, c->source_hash);
  bind_text(st, 2, c->arch);
  sqlite3_bind_int64(st, 3, c->nvrtc);
  bind_text(st, 4, c->options);
  sqlite3_bind_blob64(st, 5, c->data_len ? (const void *)c->data : "", c->data_len, SQLITE_STATIC);
  sqlite3_bind_int64(st, 6, c->size);
  bind_text(st, 7, c->created);
  return run_insert(m, M_CUBIN_INS, &m->stats->cubins, "importing a cubin");
}

static ft_status merge_all(merger *m, import_set *s) {
  for (size_t i = 0; i < s->n_devices; i++) FT_TRY(merge_device(m, &s->devices[i]));
  for (size_t i = 0; i < s->n_problems; i++) FT_TRY(merge_problem(m, &s->problems[i]));
  for (size_t i = 0; i < s->n_runs; i++) FT_TRY(merge_run(m, &s->runs[i]));
  for (size_t i = 0; i < s->n_results; i++) FT_TRY(merge_result(m, &s->results[i]));
  for (size_t i = 0; i < s->n_cubins; i++) FT_TRY(merge_cubin(m, &s->cubins[i]));
  return FT_OK;
}

static ft_status merge(ft_db *db, import_set *s, ft_import_stats *stats, ft_err *err) {
  merger m = {.db = db, .stats = stats, .err = err};
  ft_status st = ft__db_begin_write(db, "importing", err);
  for (int i = 0; i < M_N && st == FT_OK; i++) {
    int rc = sqlite3_prepare_v2(db->h, k_merge_sql[i], -1, &m.st[i], NULL);
    if (rc != SQLITE_OK) st = ft__db_error(db, err, rc, "preparing the import");
  }
  if (st == FT_OK) st = merge_all(&m, s);
  for (int i = 0; i < M_N; i++) sqlite3_finalize(m.st[i]);
  return ft__db_finish(db, st, "importing", err);
}

ft_status ft_db_import_json_stats(ft_db *db, const char *text, size_t len, ft_import_stats *stats,
                                  ft_err *err) {
  if (!db || (!text && len))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_db_import_json: NULL argument");
  ft_import_stats local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  if (db->readonly)
    return ft__fail(err, FT_ERR_DB, "database %s: importing: the database is open read-only",
                    db->path);
  ft_json_doc *doc = NULL;
  ft_status s = ft_json_parse(text ? text : "", len, NULL, &doc, err);
  if (s != FT_OK) {
    if (err && s == FT_ERR_FORMAT) {
      char detail[sizeof err->msg];
      snprintf(detail, sizeof detail, "%s", err->msg);
      ft__fail(err, s, "import: not valid JSON: %.1900s", detail);
    }
    return s;
  }
  import_set set = {0};
  s = validate(ft_json_root(doc), &set, err);
  if (s == FT_OK) {
    stats->devices_in = (int64_t)set.n_devices;
    stats->problems_in = (int64_t)set.n_problems;
    stats->runs_in = (int64_t)set.n_runs;
    stats->results_in = (int64_t)set.n_results;
    stats->cubins_in = (int64_t)set.n_cubins;
    s = merge(db, &set, stats, err);
  }
  import_set_free(&set);
  ft_json_free(doc);
  return s;
}

ft_status ft_db_import_json(ft_db *db, const char *text, size_t len, ft_err *err) {
  return ft_db_import_json_stats(db, text, len, NULL, err);
}
