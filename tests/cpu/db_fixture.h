/* Helpers the database tests share (test_db.c, test_db_io.c): scratch paths, files, rows. */
#ifndef FT_TEST_DB_FIXTURE_H
#define FT_TEST_DB_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "db_internal.h"
#include "ft_test.h"

/* ---------------------------------------------------------------------------------------------
 * Helpers */

static char g_dir[1024];

/* A fresh path under $FT_TEST_TMP (or /tmp), unique per process and call, with no leftovers. */
static inline const char *tmp_path(const char *name) {
  static char paths[64][1200];
  static int n;
  char *p = paths[n++ % 64];
  snprintf(p, 1200, "%s/test_db_%ld_%d_%s", g_dir, (long)getpid(), n, name);
  ft_db_remove_files(p);
  return p;
}


static inline int exists(const char *p) { return access(p, F_OK) == 0; }

static inline char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  *len = fread(buf, 1, (size_t)n, f);
  buf[*len] = '\0';
  fclose(f);
  return buf;
}

static inline void write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  fwrite(data, 1, len, f);
  fclose(f);
}

static inline char *export_str(ft_db *db, int with_cubins, size_t *len) {
  FILE *f = tmpfile();
  ft_err err;
  ft_status s = ft_db_export_json(db, f, with_cubins, &err);
  if (s != FT_OK) FT_FAIL_AT_("export failed: %s", err.msg);
  long n = ftell(f);
  char *buf = malloc((size_t)n + 1);
  rewind(f);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = '\0';
  if (len) *len = got;
  fclose(f);
  return buf;
}

static inline ft_db *open_ok(const char *path, unsigned flags) {
  ft_db *db = NULL;
  ft_err err;
  ft_status s = ft_db_open(path, flags, &db, &err);
  if (s != FT_OK) FT_FAIL_AT_("open %s failed (%d): %s", path, (int)s, err.msg);
  return db;
}

static inline ft_device_info device(const char *fp, const char *name) {
  ft_device_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.fingerprint, sizeof d.fingerprint, "%s", fp);
  snprintf(d.name, sizeof d.name, "%s", name);
  d.cc_major = 9;
  d.sm_count = 132;
  d.mem_bytes = 150011101184LL;
  d.driver_version = 13000;
  d.runtime_version = 13000;
  d.nvrtc_version = 13000;
  d.cublas_version = 130000;
  return d;
}

static inline ft_problem_key pkey(int64_t m, int64_t n, int64_t k, const char *epi) {
  ft_problem_key key;
  memset(&key, 0, sizeof key);
  key.m = m;
  key.n = n;
  key.k = k;
  snprintf(key.layout, sizeof key.layout, "xrow_wrow");
  snprintf(key.math, sizeof key.math, "fp32");
  snprintf(key.epilogue, sizeof key.epilogue, "%s", epi);
  ft__hash_hex(epi, strlen(epi), key.epilogue_hash);
  return key;
}

typedef struct fixture {
  int64_t dev, prob, run;
  ft_problem_key key;
} fixture;

static inline fixture setup(ft_db *db, const char *fp, int64_t m) {
  fixture fx;
  ft_err err;
  ft_device_info d = device(fp, "NVIDIA H200");
  fx.key = pkey(m, 16384, 16384, "min(x + bias, c) - c where c = 2");
  ASSERT_OK(ft_db_upsert_device(db, &d, &fx.dev, &err));
  ASSERT_OK(ft_db_upsert_problem(db, &fx.key, &fx.prob, &err));
  ASSERT_OK(ft_db_begin_run(db, fx.dev, "{\"strategy\":\"exhaustive\"}", 170, &fx.run, &err));
  return fx;
}

/* A result timed beside cuBLAS's GEMM alone, at ratio to it (<= 0: not timed so). */
static inline ft_status add_ref(ft_db *db, const fixture *fx, const char *strategy, const char *variant,
                                const char *status, double median, double ratio) {
  ft_result_row r = {fx->run, fx->dev, fx->prob, strategy, variant, "{\"bm\":64}", status,
                     median, median * 0.9, median * 0.01, 30, 1e-7, 2e-6, "0123456789abcdef", "", ratio};
  ft_err err;
  ft_status s = ft_db_insert_result(db, &r, &err);
  if (s != FT_OK) fprintf(stderr, "insert: %s\n", err.msg);
  return s;
}

static inline ft_status add(ft_db *db, const fixture *fx, const char *strategy, const char *variant,
                            const char *status, double median) {
  return add_ref(db, fx, strategy, variant, status, median, -1);
}

static inline int64_t count(const char *path, const char *sql) {
  sqlite3 *h;
  sqlite3_stmt *st;
  int64_t n = -1;
  if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return n;
}

static inline void raw_exec(const char *path, const char *sql) {
  sqlite3 *h;
  char *msg = NULL;
  ASSERT_OK(sqlite3_open(path, &h));
  if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK) FT_FAIL_AT_("%s: %s", sql, msg);
  sqlite3_free(msg);
  sqlite3_close(h);
}

static inline void sleep_ms(long ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Schema, opening, hostile files */

/* A database with two devices, problems, runs, every status, NULLs, odd text and cubins. */
static inline void populate(ft_db *db) {
  ft_err err;
  fixture a = setup(db, "00000000000000aa", 128);
  fixture b = setup(db, "00000000000000bb", 1024);
  ASSERT_OK(add_ref(db, &a, "fused", "v1", "ok", 1.25, 0.95));
  ASSERT_OK(add(db, &a, "fused", "v2", "wrong_result", 0.1));
  ASSERT_OK(add(db, &a, "eager", "eager", "ok", 1.656));
  ASSERT_OK(add(db, &b, "cublas+epilogue", "ce", "ok", 2.731));
  ASSERT_OK(add(db, &b, "fused", "v3", "launch_error", -1));
  ft_result_row odd = {0, b.dev, b.prob, "fused", "odd,\"name\"\n", "{\"s\":\"\\u00e9\\n\"}",
                       "compile_error", -1, -1, -1, 0, -1, -1, "",
                       "error: \"x\"\ttab\nline2 \xc3\xa9 bad\xff utf8, comma", -1};
  ASSERT_OK(ft_db_insert_result(db, &odd, &err));
  ASSERT_OK(ft_db_end_run(db, a.run, "finished", &err));
  unsigned char blob[1000];
  for (int i = 0; i < 1000; i++) blob[i] = (unsigned char)(i * 7 + 3);
  ASSERT_OK(ft_db_cubin_put(db, "0123456789abcdef", "sm_90", 13000, "-O3", blob, 1000, &err));
  ASSERT_OK(ft_db_cubin_put(db, "0123456789abcdef", "sm_90", 13000, "", blob, 1, &err));
  ASSERT_OK(ft_db_cubin_put(db, "0123456789abcdef", "sm_80", 13000, "", blob, 2, &err));
  ASSERT_OK(ft_db_cubin_put(db, "fedcba9876543210", "sm_90", 13000, "", "", 0, &err));
}

/* A valid small export, edited by the malformed cases below. */
static const char k_doc[] =
    "{\"format\":\"fusedtune-export\",\"version\":1,\n"
    "\"devices\":[{\"fingerprint\":\"00000000000000aa\",\"name\":\"H200\",\"cc_major\":9,"
    "\"cc_minor\":0,\"sm_count\":132,\"mem_bytes\":150011101184,\"driver_version\":13000,"
    "\"runtime_version\":13000,\"nvrtc_version\":13000,\"cublas_version\":130000,"
    "\"first_seen\":\"2026-11-29T08:00:00.000Z\",\"last_seen\":\"2026-11-29T09:00:00.000Z\"}],\n"
    "\"problems\":[{\"m\":128,\"n\":16384,\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\","
    "\"epilogue\":\"relu(x)\",\"epilogue_hash\":\"ca47f1151711f396\"}],\n"
    "\"runs\":[{\"uuid\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
    "\"started\":\"2026-11-29T08:00:00.000Z\",\"ended\":null,\"tool_version\":\"0.1.0\","
    "\"options\":\"{}\",\"budget_s\":170,\"outcome\":null}],\n"
    "\"results\":[{\"uuid\":\"22222222-2222-4222-8222-222222222222\","
    "\"run\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
    "\"problem\":{\"m\":128,\"n\":16384,\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\","
    "\"epilogue_hash\":\"ca47f1151711f396\"},\"strategy\":\"fused\",\"variant\":\"v\","
    "\"config\":\"{}\",\"status\":\"ok\",\"median_ms\":1.5,\"min_ms\":1.4,\"iqr_ms\":null,"
    "\"repeats\":30,\"rel_err\":1e-07,\"max_abs_err\":null,\"source_hash\":\"abcd\","
    "\"fusedtune_version\":\"0.1.0\",\"message\":\"\",\"created\":\"2026-11-29T08:00:01.000Z\"}],\n"
    "\"best\":[]\n}\n";

/* Points the scratch paths at $FT_TEST_TMP (or /tmp). */
static inline void fixture_init(void) {
  const char *t = getenv("FT_TEST_TMP");
  snprintf(g_dir, sizeof g_dir, "%s", t && t[0] ? t : "/tmp");
}

#endif
