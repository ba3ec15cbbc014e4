/* The results database: schema, migrations, results and best, export/import, concurrency,
 * read-only use, hostile files. GPU-free. */
#define _POSIX_C_SOURCE 200809L

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
static const char *tmp_path(const char *name) {
  static char paths[64][1200];
  static int n;
  char *p = paths[n++ % 64];
  snprintf(p, 1200, "%s/test_db_%ld_%d_%s", g_dir, (long)getpid(), n, name);
  ft_db_remove_files(p);
  return p;
}


static int exists(const char *p) { return access(p, F_OK) == 0; }

static char *read_file(const char *path, size_t *len) {
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

static void write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  fwrite(data, 1, len, f);
  fclose(f);
}

static char *export_str(ft_db *db, int with_cubins, size_t *len) {
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

static ft_db *open_ok(const char *path, unsigned flags) {
  ft_db *db = NULL;
  ft_err err;
  ft_status s = ft_db_open(path, flags, &db, &err);
  if (s != FT_OK) FT_FAIL_AT_("open %s failed (%d): %s", path, (int)s, err.msg);
  return db;
}

static ft_device_info device(const char *fp, const char *name) {
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

static ft_problem_key pkey(int64_t m, int64_t n, int64_t k, const char *epi) {
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

static fixture setup(ft_db *db, const char *fp, int64_t m) {
  fixture fx;
  ft_err err;
  ft_device_info d = device(fp, "NVIDIA H200");
  fx.key = pkey(m, 16384, 16384, "min(x + bias, c) - c");
  ASSERT_OK(ft_db_upsert_device(db, &d, &fx.dev, &err));
  ASSERT_OK(ft_db_upsert_problem(db, &fx.key, &fx.prob, &err));
  ASSERT_OK(ft_db_begin_run(db, fx.dev, "{\"strategy\":\"exhaustive\"}", 170, &fx.run, &err));
  return fx;
}

static ft_status add(ft_db *db, const fixture *fx, const char *strategy, const char *variant,
                     const char *status, double median) {
  ft_result_row r = {fx->run, fx->dev, fx->prob, strategy, variant, "{\"bm\":64}", status,
                     median, median * 0.9, median * 0.01, 30, 1e-7, 2e-6, "0123456789abcdef", ""};
  ft_err err;
  ft_status s = ft_db_insert_result(db, &r, &err);
  if (s != FT_OK) fprintf(stderr, "insert: %s\n", err.msg);
  return s;
}

static int64_t count(const char *path, const char *sql) {
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

static void raw_exec(const char *path, const char *sql) {
  sqlite3 *h;
  char *msg = NULL;
  ASSERT_OK(sqlite3_open(path, &h));
  if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK) FT_FAIL_AT_("%s: %s", sql, msg);
  sqlite3_free(msg);
  sqlite3_close(h);
}

static void sleep_ms(long ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Schema, opening, hostile files */

static void test_create(void) {
  const char *p = tmp_path("create.db");
  ft_db *db = NULL;
  ft_err err;
  ASSERT_EQ_INT(ft_db_open(p, 0, &db, &err), FT_ERR_NOT_FOUND);
  ASSERT_CONTAINS(err.msg, "does not exist");
  ASSERT_TRUE(db == NULL && !exists(p));
  ASSERT_EQ_INT(ft_db_open(p, FT_DB_READONLY | FT_DB_CREATE, &db, &err), FT_ERR_NOT_FOUND);
  ASSERT_TRUE(!exists(p));
  ASSERT_EQ_INT(ft_db_open(p, 0x80, &db, &err), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_db_open(NULL, 0, &db, &err), FT_ERR_INVALID_ARG);

  db = open_ok(p, FT_DB_CREATE);
  ASSERT_TRUE(db != NULL);
  ASSERT_EQ_INT(ft_db_readonly(db), 0);
  ft_db_close(db);
  ASSERT_EQ_INT(ft_db_schema_version(), 1);
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 1);
  ASSERT_EQ_INT(count(p, "PRAGMA application_id"), FT_DB_APPLICATION_ID);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM meta WHERE key = 'application' AND value = 'fusedtune'"), 1);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM sqlite_master WHERE name IN ('devices','problems',"
                         "'runs','results','cubins','best')"), 6);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = 'best'"), 1);
  /* Reopening (with or without CREATE) keeps the schema and adds nothing. */
  db = open_ok(p, 0);
  ft_db_close(db);
  db = open_ok(p, FT_DB_CREATE);
  ft_db_close(db);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM meta"), 1);
  ft_db_close(NULL);
  ft_db_remove_files(p);

  db = open_ok(":memory:", FT_DB_CREATE);
  fixture fx = setup(db, "00000000000000aa", 128);
  ASSERT_OK(add(db, &fx, "fused", "v", "ok", 1.0));
  ft_db_close(db);
}

static void test_hostile_files(void) {
  ft_db *db = NULL;
  ft_err err;
  /* A directory. */
  ASSERT_EQ_INT(ft_db_open(g_dir, FT_DB_CREATE, &db, &err), FT_ERR_IO);
  ASSERT_CONTAINS(err.msg, "is a directory");
  ASSERT_TRUE(db == NULL);

  /* Random bytes, and an SQLite header followed by garbage: refused, untouched, no crash. */
  const char *p = tmp_path("random.db");
  unsigned char junk[8192];
  unsigned x = 12345;
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
  write_file(p, junk, sizeof junk);
  for (int ro = 0; ro < 2; ro++) {
    ft_status s = ft_db_open(p, ro ? FT_DB_READONLY : FT_DB_CREATE, &db, &err);
    ASSERT_EQ_INT(s, FT_ERR_DB);
    ASSERT_CONTAINS(err.msg, "not an SQLite database");
  }
  size_t len;
  char *after = read_file(p, &len);
  ASSERT_TRUE(len == sizeof junk && memcmp(after, junk, len) == 0);
  free(after);
  memcpy(junk, "SQLite format 3", 16);
  write_file(p, junk, sizeof junk);
  ft_status s = ft_db_open(p, 0, &db, &err);
  ASSERT_TRUE(s == FT_ERR_DB || s == FT_ERR_IO);
  ASSERT_CONTAINS(err.msg, p);
  ft_db_remove_files(p);

  /* An SQLite database of some other program. */
  p = tmp_path("other.db");
  raw_exec(p, "CREATE TABLE t (a); INSERT INTO t VALUES (1);");
  after = read_file(p, &len);
  ASSERT_EQ_INT(ft_db_open(p, FT_DB_CREATE, &db, &err), FT_ERR_DB);
  ASSERT_CONTAINS(err.msg, "not a fusedtune database");
  ASSERT_EQ_INT(ft_db_open(p, FT_DB_READONLY, &db, &err), FT_ERR_DB);
  size_t len2;
  char *after2 = read_file(p, &len2);
  ASSERT_TRUE(len == len2 && memcmp(after, after2, len) == 0);
  free(after);
  free(after2);
  ft_db_remove_files(p);

  /* An empty file is a new database when writable, nothing when read-only. */
  p = tmp_path("empty.db");
  write_file(p, "", 0);
  ASSERT_EQ_INT(ft_db_open(p, FT_DB_READONLY, &db, &err), FT_ERR_DB);
  ASSERT_CONTAINS(err.msg, "empty");
  db = open_ok(p, 0);
  ft_db_close(db);
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 1);
  ft_db_remove_files(p);
}

static void test_newer_version(void) {
  const char *p = tmp_path("newer.db");
  ft_db *db = open_ok(p, FT_DB_CREATE);
  fixture fx = setup(db, "00000000000000aa", 128);
  ASSERT_OK(add(db, &fx, "fused", "v", "ok", 1.0));
  ft_db_close(db);
  raw_exec(p, "PRAGMA journal_mode = DELETE; PRAGMA user_version = 7;");
  struct stat before, after;
  size_t len, len2;
  char *bytes = read_file(p, &len);
  ASSERT_OK(stat(p, &before));
  sleep_ms(20);
  static const unsigned modes[] = {0, FT_DB_CREATE, FT_DB_READONLY};
  for (int i = 0; i < 3; i++) {
    ft_err err;
    ASSERT_EQ_INT(ft_db_open(p, modes[i], &db, &err), FT_ERR_VERSION);
    ASSERT_TRUE(db == NULL);
    char want[1400];
    snprintf(want, sizeof want,
             "database %s has schema version 7, this fusedtune reads up to 1: upgrade fusedtune", p);
    ASSERT_EQ_STR(err.msg, want);
  }
  ASSERT_OK(stat(p, &after));
  char *bytes2 = read_file(p, &len2);
  ASSERT_TRUE(len == len2 && memcmp(bytes, bytes2, len) == 0);
  ASSERT_TRUE(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
              before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
  free(bytes);
  free(bytes2);
  ft_db_remove_files(p);
}

static void test_migration(void) {
  /* The runner applies exactly the steps past the database's version, in one transaction. */
  static const char *const steps[] = {
      "CREATE TABLE extra (x); INSERT INTO meta (key, value) VALUES ('step2', 'done');",
      "ALTER TABLE extra ADD COLUMN y; INSERT INTO meta (key, value) VALUES ('step3', 'done');"};
  const char *p = tmp_path("migrate.db");
  ft_db *db = open_ok(p, FT_DB_CREATE);
  fixture fx = setup(db, "00000000000000aa", 128);
  ASSERT_OK(add(db, &fx, "fused", "v", "ok", 1.0));
  ft_err err;
  ASSERT_OK(ft__db_migrate(db, steps, 1, &err)); /* 1 -> 2 */
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 2);
  ASSERT_OK(ft__db_migrate(db, steps, 1, &err)); /* already there: nothing runs again */
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM meta WHERE key = 'step2'"), 1);
  ASSERT_OK(ft__db_migrate(db, steps, 2, &err)); /* 2 -> 3 only */
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 3);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM meta WHERE key LIKE 'step%'"), 2);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM results"), 1);
  ft_db_close(db);
  /* This build reads up to version 1: the migrated file is now "newer". */
  ASSERT_EQ_INT(ft_db_open(p, 0, &db, &err), FT_ERR_VERSION);
  ft_db_remove_files(p);

  /* A failing step rolls back every step of the migration. */
  static const char *const broken[] = {"CREATE TABLE extra (x);", "THIS IS NOT SQL;"};
  p = tmp_path("migrate_fail.db");
  db = open_ok(p, FT_DB_CREATE);
  ASSERT_EQ_INT(ft__db_migrate(db, broken, 2, &err), FT_ERR_DB);
  ASSERT_CONTAINS(err.msg, "migrating the schema from version 2 to 3");
  ft_db_close(db);
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 1);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM sqlite_master WHERE name = 'extra'"), 0);
  ft_db_remove_files(p);
}

/* ---------------------------------------------------------------------------------------------
 * Results and best */

typedef struct collected {
  int n;
  char variants[8][128];
} collected;

static int collect(void *user, const ft_best *b) {
  collected *c = user;
  if (c->n < 8) snprintf(c->variants[c->n], 128, "%s", b->variant);
  c->n++;
  return 0;
}

static void view_best_variant(const char *path, int64_t dev, int64_t prob, char out[128]) {
  sqlite3 *h;
  sqlite3_stmt *st;
  out[0] = '\0';
  sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL);
  if (sqlite3_prepare_v2(h, "SELECT variant FROM best WHERE device_id = ?1 AND problem_id = ?2",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, dev);
    sqlite3_bind_int64(st, 2, prob);
    if (sqlite3_step(st) == SQLITE_ROW) snprintf(out, 128, "%s", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
}

static void test_best(void) {
  const char *p = tmp_path("best.db");
  ft_db *db = open_ok(p, FT_DB_CREATE);
  fixture fx = setup(db, "00000000000000aa", 128);
  ft_best b;
  ft_err err;
  ASSERT_EQ_INT(ft_db_best(db, fx.dev, &fx.key, &b, &err), FT_ERR_NOT_FOUND);
  ASSERT_OK(add(db, &fx, "fused", "wrong_fast", "wrong_result", 0.5));
  ASSERT_OK(add(db, &fx, "fused", "broken", "compile_error", -1));
  ASSERT_EQ_INT(ft_db_best(db, fx.dev, &fx.key, &b, &err), FT_ERR_NOT_FOUND);
  ASSERT_OK(add(db, &fx, "fused", "slow", "ok", 2.0));
  ASSERT_OK(add(db, &fx, "eager", "eager", "ok", 1.2));
  ASSERT_OK(add(db, &fx, "cublas_gemm", "gemm_only", "ok", 1.0));
  ASSERT_OK(add(db, &fx, "cublaslt", "lt", "ok", 0.9));
  ASSERT_OK(add(db, &fx, "cublas+epilogue", "cub_epi", "ok", 1.8));
  ASSERT_OK(add(db, &fx, "fused", "timeout", "timeout", 0.1));
  ASSERT_OK(ft_db_best(db, fx.dev, &fx.key, &b, &err));
  ASSERT_EQ_STR(b.variant, "cub_epi");
  ASSERT_EQ_STR(b.strategy, "cublas+epilogue");
  ASSERT_EQ_STR(b.config_json, "{\"bm\":64}");
  ASSERT_EQ_STR(b.source_hash, "0123456789abcdef");
  ASSERT_EQ_STR(b.device_name, "NVIDIA H200");
  ASSERT_EQ_STR(b.key.epilogue, "min(x + bias, c) - c");
  ASSERT_NEAR(b.median_ms, 1.8, 0);
  ASSERT_NEAR(b.eager_ms, 1.2, 0);
  ASSERT_EQ_INT(b.device_id, fx.dev);
  ASSERT_EQ_INT(b.problem_id, fx.prob);

  /* Lowest median wins; a tie goes to the earlier result; the view agrees with ft_db_best. */
  sleep_ms(3);
  ASSERT_OK(add(db, &fx, "fused", "fast", "ok", 1.5));
  sleep_ms(3);
  ASSERT_OK(add(db, &fx, "fused", "fast_tie_later", "ok", 1.5));
  ASSERT_OK(add(db, &fx, "eager", "eager2", "ok", 1.3)); /* the latest eager is reported */
  ASSERT_OK(ft_db_best(db, fx.dev, &fx.key, &b, &err));
  ASSERT_EQ_STR(b.variant, "fast");
  ASSERT_NEAR(b.eager_ms, 1.3, 0);
  char vb[128];
  view_best_variant(p, fx.dev, fx.prob, vb);
  ASSERT_EQ_STR(vb, "fast");
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM best"), 1);

  /* has_result: by strategy, config and source hash. */
  int found = -1;
  ASSERT_OK(ft_db_has_result(db, fx.dev, fx.prob, "fused", "{\"bm\":64}", "0123456789abcdef", &found, &err));
  ASSERT_EQ_INT(found, 1);
  ASSERT_OK(ft_db_has_result(db, fx.dev, fx.prob, "fused", "{\"bm\":128}", "0123456789abcdef", &found, &err));
  ASSERT_EQ_INT(found, 0);
  ASSERT_OK(ft_db_has_result(db, fx.dev, fx.prob, "fused", "{\"bm\":64}", "ffffffffffffffff", &found, &err));
  ASSERT_EQ_INT(found, 0);

  /* A second shape and a second device; iteration over bests. */
  ft_problem_key k2 = pkey(1024, 16384, 16384, "min(x + bias, c) - c");
  fixture fx2 = fx;
  fx2.key = k2;
  ASSERT_OK(ft_db_upsert_problem(db, &k2, &fx2.prob, &err));
  ASSERT_TRUE(fx2.prob != fx.prob);
  int64_t again;
  ASSERT_OK(ft_db_upsert_problem(db, &fx.key, &again, &err));
  ASSERT_EQ_INT(again, fx.prob);
  ASSERT_OK(add(db, &fx2, "fused", "big_m", "ok", 9.0));
  fixture fx3 = setup(db, "00000000000000bb", 128);
  ASSERT_OK(add(db, &fx3, "fused", "other_gpu", "ok", 3.0));
  collected c = {0};
  if (ft_db_each_best_for_epilogue(db, fx.dev, fx.key.epilogue_hash, "fp32", collect, &c, &err)) FT_FAIL_AT_("%s", err.msg);
  ASSERT_EQ_INT(c.n, 2);
  ASSERT_EQ_STR(c.variants[0], "fast");
  ASSERT_EQ_STR(c.variants[1], "big_m");
  memset(&c, 0, sizeof c);
  ASSERT_OK(ft_db_each_best(db, collect, &c, &err));
  ASSERT_EQ_INT(c.n, 3);
  ASSERT_EQ_STR(c.variants[2], "other_gpu");
  ft_device_info di;
  int64_t did;
  ASSERT_OK(ft_db_find_device(db, "00000000000000bb", NULL, &di, &did, &err));
  ASSERT_EQ_INT(did, fx3.dev);
  ASSERT_EQ_INT(di.sm_count, 132);
  ASSERT_OK(ft_db_find_device(db, NULL, "NVIDIA H200", &di, &did, &err));
  ASSERT_EQ_INT(ft_db_find_device(db, "nope", NULL, &di, &did, &err), FT_ERR_NOT_FOUND);

  /* Bad rows are refused before SQLite sees them. */
  ASSERT_EQ_INT(add(db, &fx, "fused", "x", "great", 1.0), FT_ERR_INVALID_ARG);
  ft_result_row bad = {fx.run, fx.dev, fx.prob, "fused", "x", "{bm:1}", "ok", 1, 1, 1, 30, 0, 0, "", ""};
  ASSERT_EQ_INT(ft_db_insert_result(db, &bad, &err), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(err.msg, "not JSON");
  ASSERT_OK(ft_db_end_run(db, fx.run, "ok", &err));
  ASSERT_EQ_INT(ft_db_end_run(db, 999999, "ok", &err), FT_ERR_NOT_FOUND);
  ft_db_close(db);
  ft_db_remove_files(p);
}

/* ---------------------------------------------------------------------------------------------
 * Export / import */

/* A database with two devices, problems, runs, every status, NULLs, odd text and cubins. */
static void populate(ft_db *db) {
  ft_err err;
  fixture a = setup(db, "00000000000000aa", 128);
  fixture b = setup(db, "00000000000000bb", 1024);
  ASSERT_OK(add(db, &a, "fused", "v1", "ok", 1.25));
  ASSERT_OK(add(db, &a, "fused", "v2", "wrong_result", 0.1));
  ASSERT_OK(add(db, &a, "eager", "eager", "ok", 1.656));
  ASSERT_OK(add(db, &b, "cublas+epilogue", "ce", "ok", 2.731));
  ASSERT_OK(add(db, &b, "fused", "v3", "launch_error", -1));
  ft_result_row odd = {0, b.dev, b.prob, "fused", "odd,\"name\"\n", "{\"s\":\"\\u00e9\\n\"}",
                       "compile_error", -1, -1, -1, 0, -1, -1, "",
                       "error: \"x\"\ttab\nline2 \xc3\xa9 bad\xff utf8, comma"};
  ASSERT_OK(ft_db_insert_result(db, &odd, &err));
  ASSERT_OK(ft_db_end_run(db, a.run, "finished", &err));
  unsigned char blob[1000];
  for (int i = 0; i < 1000; i++) blob[i] = (unsigned char)(i * 7 + 3);
  ASSERT_OK(ft_db_cubin_put(db, "0123456789abcdef", "sm_90", 13000, "-O3", blob, 1000, &err));
  ASSERT_OK(ft_db_cubin_put(db, "0123456789abcdef", "sm_90", 13000, "", blob, 1, &err));
  ASSERT_OK(ft_db_cubin_put(db, "0123456789abcdef", "sm_80", 13000, "", blob, 2, &err));
  ASSERT_OK(ft_db_cubin_put(db, "fedcba9876543210", "sm_90", 13000, "", "", 0, &err));
}

static void test_cubins(void) {
  ft_db *db = open_ok(":memory:", FT_DB_CREATE);
  ft_err err;
  unsigned char blob[4096];
  for (size_t i = 0; i < sizeof blob; i++) blob[i] = (unsigned char)(i ^ (i >> 3));
  ASSERT_OK(ft_db_cubin_put(db, "aaaa", "sm_90", 12080, "-lineinfo", blob, sizeof blob, &err));
  ASSERT_OK(ft_db_cubin_put(db, "aaaa", "sm_90", 12080, "-lineinfo", blob, sizeof blob, &err));
  void *data = NULL;
  size_t size = 0;
  ASSERT_OK(ft_db_cubin_get(db, "aaaa", "sm_90", 12080, "-lineinfo", &data, &size, &err));
  ASSERT_TRUE(size == sizeof blob && memcmp(data, blob, size) == 0);
  free(data);
  ASSERT_EQ_INT(ft_db_cubin_get(db, "aaaa", "sm_90", 12090, "-lineinfo", &data, &size, &err), FT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ft_db_cubin_get(db, "aaaa", "sm_80", 12080, "-lineinfo", &data, &size, &err), FT_ERR_NOT_FOUND);
  ASSERT_TRUE(data == NULL);
  ASSERT_OK(ft_db_cubin_put(db, "bbbb", "sm_90", 12080, NULL, "", 0, &err));
  ASSERT_OK(ft_db_cubin_get(db, "bbbb", "sm_90", 12080, NULL, &data, &size, &err));
  ASSERT_EQ_INT(size, 0);
  free(data);
  ft_db_close(db);
}

static void test_roundtrip(void) {
  ft_db *src = open_ok(":memory:", FT_DB_CREATE);
  populate(src);
  for (int with_cubins = 0; with_cubins < 2; with_cubins++) {
    size_t n1, n2, n3;
    char *e1 = export_str(src, with_cubins, &n1);
    ASSERT_CONTAINS(e1, "{\"format\":\"fusedtune-export\",\"version\":1,");
    ASSERT_TRUE((strstr(e1, "\"cubins\":[") != NULL) == with_cubins);
    ASSERT_TRUE(strstr(e1, "\"id\"") == NULL && strstr(e1, "_id\"") == NULL);
    ft_db *dst = open_ok(":memory:", FT_DB_CREATE);
    ft_import_stats st;
    ft_err err;
    ASSERT_OK(ft_db_import_json_stats(dst, e1, n1, &st, &err));
    ASSERT_EQ_INT(st.devices, 2);
    ASSERT_EQ_INT(st.problems, 2);
    ASSERT_EQ_INT(st.runs, 2);
    ASSERT_EQ_INT(st.results, 6);
    ASSERT_EQ_INT(st.cubins, with_cubins ? 4 : 0);
    char *e2 = export_str(dst, with_cubins, &n2);
    ASSERT_TRUE(n1 == n2 && strcmp(e1, e2) == 0);
    /* Importing again, into either database, adds nothing and changes nothing. */
    ASSERT_OK(ft_db_import_json_stats(dst, e1, n1, &st, &err));
    ASSERT_EQ_INT(st.devices + st.problems + st.runs + st.results + st.cubins, 0);
    ASSERT_EQ_INT(st.results_in, 6);
    ASSERT_OK(ft_db_import_json_stats(src, e2, n2, &st, &err));
    ASSERT_EQ_INT(st.devices + st.problems + st.runs + st.results + st.cubins, 0);
    char *e3 = export_str(dst, with_cubins, &n3);
    ASSERT_TRUE(n1 == n3 && strcmp(e1, e3) == 0);
    free(e1);
    free(e2);
    free(e3);
    ft_db_close(dst);
  }
  /* Merge: a third database with its own result gains the others', keeps its own. */
  ft_db *third = open_ok(":memory:", FT_DB_CREATE);
  fixture fx = setup(third, "00000000000000aa", 128);
  ASSERT_OK(add(third, &fx, "fused", "mine", "ok", 0.75));
  size_t n;
  char *e = export_str(src, 1, &n);
  ft_err err;
  ASSERT_OK(ft_db_import_json(third, e, n, &err));
  ft_best b;
  ASSERT_OK(ft_db_best(third, fx.dev, &fx.key, &b, &err));
  ASSERT_EQ_STR(b.variant, "mine");
  free(e);
  e = export_str(third, 0, &n);
  ASSERT_CONTAINS(e, "\"variant\":\"v1\"");
  ASSERT_CONTAINS(e, "\"variant\":\"mine\"");
  free(e);
  ft_db_close(third);

  /* CSV: header, one line per result, RFC 4180 quoting. */
  FILE *f = tmpfile();
  ASSERT_OK(ft_db_export_csv(src, f, &err));
  long len = ftell(f);
  char *csv = malloc((size_t)len + 1);
  rewind(f);
  csv[fread(csv, 1, (size_t)len, f)] = '\0';
  fclose(f);
  ASSERT_TRUE(strncmp(csv, "uuid,created,device,fingerprint,m,n,k,layout,math,epilogue,", 59) == 0);
  ASSERT_CONTAINS(csv, ",\"odd,\"\"name\"\"\n\",");
  ASSERT_CONTAINS(csv, ",\"min(x + bias, c) - c\",");
  ASSERT_CONTAINS(csv, ",1.25,1.125,");
  int lines = 0;
  for (char *q = csv; (q = strstr(q, "\r\n")) != NULL; q += 2) lines++;
  ASSERT_EQ_INT(lines, 7);
  free(csv);
  ft_db_close(src);
}

/* A valid small export, edited by the malformed cases below. */
static const char k_doc[] =
    "{\"format\":\"fusedtune-export\",\"version\":1,\n"
    "\"devices\":[{\"fingerprint\":\"00000000000000aa\",\"name\":\"H200\",\"cc_major\":9,"
    "\"cc_minor\":0,\"sm_count\":132,\"mem_bytes\":150011101184,\"driver_version\":13000,"
    "\"runtime_version\":13000,\"nvrtc_version\":13000,\"cublas_version\":130000,"
    "\"first_seen\":\"2026-11-29T08:00:00.000Z\",\"last_seen\":\"2026-11-29T09:00:00.000Z\"}],\n"
    "\"problems\":[{\"m\":128,\"n\":16384,\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\","
    "\"epilogue\":\"relu(x)\",\"epilogue_hash\":\"1111222233334444\"}],\n"
    "\"runs\":[{\"uuid\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
    "\"started\":\"2026-11-29T08:00:00.000Z\",\"ended\":null,\"tool_version\":\"0.1.0\","
    "\"options\":\"{}\",\"budget_s\":170,\"outcome\":null}],\n"
    "\"results\":[{\"uuid\":\"22222222-2222-4222-8222-222222222222\","
    "\"run\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
    "\"problem\":{\"m\":128,\"n\":16384,\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\","
    "\"epilogue_hash\":\"1111222233334444\"},\"strategy\":\"fused\",\"variant\":\"v\","
    "\"config\":\"{}\",\"status\":\"ok\",\"median_ms\":1.5,\"min_ms\":1.4,\"iqr_ms\":null,"
    "\"repeats\":30,\"rel_err\":1e-07,\"max_abs_err\":null,\"source_hash\":\"abcd\","
    "\"fusedtune_version\":\"0.1.0\",\"message\":\"\",\"created\":\"2026-11-29T08:00:01.000Z\"}],\n"
    "\"best\":[]\n}\n";

/* k_doc with the first occurrence of from replaced by to. */
static char *edit(const char *from, const char *to) {
  const char *hit = strstr(k_doc, from);
  if (!hit) {
    FT_FAIL_AT_("edit: \"%s\" not in the document", from);
    return NULL;
  }
  size_t a = (size_t)(hit - k_doc), fl = strlen(from), tl = strlen(to);
  char *out = malloc(sizeof k_doc + tl);
  memcpy(out, k_doc, a);
  memcpy(out + a, to, tl);
  strcpy(out + a + tl, hit + fl);
  return out;
}

typedef struct bad_case {
  const char *from, *to, *expect;
} bad_case;

static void test_malformed(void) {
  static const bad_case cases[] = {
      {"\"median_ms\":1.5", "\"median_ms\":\"1.5\"", "import: results[0].median_ms: expected a number or null, found a string"},
      {"\"median_ms\":1.5", "\"median_ms\":1e999", "out of range"},
      {"\"median_ms\":1.5", "\"median_ms\":-1", "results[0].median_ms: expected a non-negative"},
      {"\"repeats\":30", "\"repeats\":30.5", "results[0].repeats: expected an integer"},
      {"\"repeats\":30", "\"repeats\":99999999999999999999", "results[0].repeats: expected an integer"},
      {"\"m\":128,\"n\":16384,\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"",
       "\"m\":0,\"n\":16384,\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"",
       "problems[0].m: expected an integer in 1.."},
      {"\"status\":\"ok\"", "\"status\":\"great\"", "results[0].status: expected one of"},
      {"\"status\":\"ok\",", "", "results[0]: missing field \"status\""},
      {"\"status\":\"ok\"", "\"status\":\"ok\",\"status\":\"ok\"", "duplicate key \"status\""},
      {"\"status\":\"ok\"", "\"status\":\"ok\",\"extra\":1", "results[0]: unknown field \"extra\""},
      {"\"config\":\"{}\"", "\"config\":\"{bm:1}\"", "results[0].config: not valid JSON text"},
      {"\"config\":\"{}\"", "\"config\":{}", "results[0].config: expected a string, found an object"},
      {"\"device\":\"00000000000000aa\",\"problem\"", "\"device\":\"00000000000000ff\",\"problem\"",
       "results[0].device: no device with this fingerprint"},
      {"\"run\":\"11111111", "\"run\":\"31111111", "results[0].run: no run with this uuid"},
      {"\"epilogue_hash\":\"1111222233334444\"},\"strategy\"", "\"epilogue_hash\":\"9999222233334444\"},\"strategy\"",
       "results[0].problem: no such problem"},
      {"\"uuid\":\"22222222-2222-4222-8222-222222222222\"", "\"uuid\":\"not-a-uuid\"", "results[0].uuid: not a lowercase uuid"},
      {"\"created\":\"2026-11-29T08:00:01.000Z\"", "\"created\":\"yesterday\"", "results[0].created: not an ISO-8601"},
      {"\"version\":1", "\"version\":\"1\"", "import: version: expected a positive integer"},
      {"\"format\":\"fusedtune-export\"", "\"format\":\"other\"", "import: format: expected"},
      {"\"best\":[]", "\"best\":{}", "import: best: expected an array"},
      {"\"best\":[]", "\"best\":[1]", "import: best[0]: expected an object"},
      {"\"best\":[]", "\"cubins\":[{\"source_hash\":\"a\",\"arch\":\"sm_90\",\"nvrtc_version\":1,"
       "\"options\":\"\",\"size\":3,\"created\":\"2026-11-29T08:00:01Z\",\"data\":\"QUJD\"}]",
       "missing field \"best\""},
      {"\"best\":[]", "\"best\":[],\"cubins\":[{\"source_hash\":\"a\",\"arch\":\"sm_90\",\"nvrtc_version\":1,"
       "\"options\":\"\",\"size\":2,\"created\":\"2026-11-29T08:00:01Z\",\"data\":\"QUJD\"}]",
       "cubins[0].size: differs"},
      {"\"best\":[]", "\"best\":[],\"cubins\":[{\"source_hash\":\"a\",\"arch\":\"sm_90\",\"nvrtc_version\":1,"
       "\"options\":\"\",\"size\":3,\"created\":\"2026-11-29T08:00:01Z\",\"data\":\"QUJ!\"}]",
       "cubins[0].data: not canonical base64"},
      {"\"name\":\"H200\"", "\"name\":\"H\\u0000200\"", "devices[0].name: contains a NUL"},
      {"\"name\":\"H200\"", "\"name\":\"H\xff\"", "invalid UTF-8"},
      {"\"best\":[]\n}\n", "\"best\":[]\n} x", "unexpected text after the JSON value"},
      {"\"version\":1", "\"version\":2", "export version 2, this fusedtune reads up to 1"},
  };
  const char *p = tmp_path("malformed.db");
  ft_db *db = open_ok(p, FT_DB_CREATE);
  populate(db);
  size_t n0;
  char *before = export_str(db, 1, &n0);
  ft_err err;
  /* The template itself imports (into a scratch database). */
  ft_db *scratch = open_ok(":memory:", FT_DB_CREATE);
  ASSERT_OK(ft_db_import_json(scratch, k_doc, strlen(k_doc), &err));
  ft_db_close(scratch);

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *doc = edit(cases[i].from, cases[i].to);
    if (!doc) continue;
    ft_status s = ft_db_import_json(db, doc, strlen(doc), &err);
    if (s == FT_OK) FT_FAIL_AT_("case %zu accepted", i);
    ASSERT_TRUE(s == FT_ERR_FORMAT || (s == FT_ERR_VERSION && strstr(doc, "\"version\":2")));
    if (!strstr(err.msg, cases[i].expect))
      FT_FAIL_AT_("case %zu: message \"%s\" lacks \"%s\"", i, err.msg, cases[i].expect);
    free(doc);
  }
  /* Truncations of a real export at every 97th byte, deep nesting, wrong top level. */
  for (size_t cut = 0; cut < n0; cut += 97)
    ASSERT_EQ_INT(ft_db_import_json(db, before, cut, &err), FT_ERR_FORMAT);
  size_t depth = 10000;
  char *deep = malloc(2 * depth + 1);
  memset(deep, '[', depth);
  memset(deep + depth, ']', depth);
  ASSERT_EQ_INT(ft_db_import_json(db, deep, 2 * depth, &err), FT_ERR_FORMAT);
  ASSERT_CONTAINS(err.msg, "nesting deeper than 64");
  free(deep);
  ASSERT_EQ_INT(ft_db_import_json(db, "[]", 2, &err), FT_ERR_FORMAT);
  ASSERT_CONTAINS(err.msg, "import: top level: expected an object");
  ASSERT_EQ_INT(ft_db_import_json(db, "", 0, &err), FT_ERR_FORMAT);
  ASSERT_EQ_INT(ft_db_import_json(db, NULL, 0, &err), FT_ERR_FORMAT);

  /* Duplicate records within one file. */
  char *two = edit("\"results\":[{", "\"results\":[{\"uuid\":\"22222222-2222-4222-8222-222222222222\","
                   "\"run\":null,\"device\":\"00000000000000aa\",\"problem\":{\"m\":128,\"n\":16384,"
                   "\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue_hash\":"
                   "\"1111222233334444\"},\"strategy\":\"fused\",\"variant\":\"w\",\"config\":\"{}\","
                   "\"status\":\"ok\",\"median_ms\":1,\"min_ms\":1,\"iqr_ms\":null,\"repeats\":30,"
                   "\"rel_err\":null,\"max_abs_err\":null,\"source_hash\":\"\",\"fusedtune_version\":"
                   "\"0.1.0\",\"message\":\"\",\"created\":\"2026-11-29T08:00:01Z\"},{");
  ASSERT_EQ_INT(ft_db_import_json(db, two, strlen(two), &err), FT_ERR_FORMAT);
  ASSERT_CONTAINS(err.msg, "results[1]: same uuid as results[0]");
  free(two);

  size_t n1;
  char *after = export_str(db, 1, &n1);
  ASSERT_TRUE(n0 == n1 && strcmp(before, after) == 0);
  free(before);
  free(after);
  ft_db_close(db);
  ft_db_remove_files(p);
}

/* ---------------------------------------------------------------------------------------------
 * Concurrency and read-only use */

/* Child: opens path and inserts n results, one transaction each. Exit status 0 when all went in. */
static int writer_child(const char *path, unsigned flags, int n) {
  ft_db *db = NULL;
  ft_err err;
  if (ft_db_open(path, flags, &db, &err) != FT_OK) {
    fprintf(stderr, "child open: %s\n", err.msg);
    return 1;
  }
  fixture fx;
  ft_device_info d = device("00000000000000aa", "NVIDIA H200");
  fx.key = pkey(128, 16384, 16384, "relu(x)");
  if (ft_db_upsert_device(db, &d, &fx.dev, &err) != FT_OK ||
      ft_db_upsert_problem(db, &fx.key, &fx.prob, &err) != FT_OK ||
      ft_db_begin_run(db, fx.dev, "{}", 10, &fx.run, &err) != FT_OK) {
    fprintf(stderr, "child setup: %s\n", err.msg);
    return 2;
  }
  for (int i = 0; i < n; i++) {
    char variant[64];
    snprintf(variant, sizeof variant, "p%ld_%d", (long)getpid(), i);
    if (add(db, &fx, "fused", variant, "ok", 1.0 + i) != FT_OK) return 3;
  }
  ft_db_close(db);
  return 0;
}

static void run_writers(const char *path, unsigned flags) {
  pid_t kids[2];
  for (int i = 0; i < 2; i++) {
    kids[i] = fork();
    if (kids[i] == 0) _exit(writer_child(path, flags, 200));
  }
  for (int i = 0; i < 2; i++) {
    int status = 0;
    waitpid(kids[i], &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  ASSERT_EQ_INT(count(path, "SELECT count(*) FROM results"), 400);
  ASSERT_EQ_INT(count(path, "SELECT count(DISTINCT uuid) FROM results"), 400);
  ASSERT_EQ_INT(count(path, "SELECT count(*) FROM devices"), 1);
  ASSERT_EQ_INT(count(path, "SELECT count(*) FROM problems"), 1);
  ASSERT_EQ_INT(count(path, "SELECT count(*) FROM runs"), 2);
}

static void test_concurrent_writers(void) {
  const char *p = tmp_path("concurrent.db");
  ft_db *db = open_ok(p, FT_DB_CREATE);
  ft_db_close(db);
  run_writers(p, 0);
  ft_db_remove_files(p);
  /* Both processes creating the same new file at once. */
  p = tmp_path("concurrent_create.db");
  run_writers(p, FT_DB_CREATE);
  ft_db_remove_files(p);
}

/* Child of the read-only directory test: drops root if it has it, then reads. With
 * unmerged_wal the open must be refused (the WAL cannot be read without a -shm). */
static int readonly_child(const char *path, int unmerged_wal) {
  if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return 10;
  ft_db *db = NULL;
  ft_err err;
  ft_status s = ft_db_open(path, FT_DB_READONLY, &db, &err);
  if (unmerged_wal) {
    if (s == FT_ERR_DB && strstr(err.msg, "unmerged changes")) return 0;
    fprintf(stderr, "read-only child, unmerged WAL: status %d: %s\n", (int)s, err.msg);
    ft_db_close(db);
    return 4;
  }
  if (s != FT_OK) {
    fprintf(stderr, "read-only child: %s\n", err.msg);
    return 1;
  }
  if (!db->immutable) {
    fprintf(stderr, "read-only child: expected the immutable fallback\n");
    ft_db_close(db);
    return 3;
  }
  ft_problem_key key = pkey(128, 16384, 16384, "min(x + bias, c) - c");
  ft_device_info d;
  int64_t dev;
  ft_best b;
  int rc = 0;
  if (ft_db_find_device(db, "00000000000000aa", NULL, &d, &dev, &err) != FT_OK ||
      ft_db_best(db, dev, &key, &b, &err) != FT_OK || strcmp(b.variant, "v1") != 0) {
    fprintf(stderr, "read-only child query: %s\n", err.msg);
    rc = 2;
  }
  ft_db_close(db);
  return rc;
}

static void test_readonly(void) {
  const char *p = tmp_path("readonly.db");
  ft_db *db = open_ok(p, FT_DB_CREATE);
  populate(db);
  ft_db_close(db);
  ASSERT_OK(chmod(p, 0444));
  size_t len, len2;
  char *bytes = read_file(p, &len);
  ASSERT_TRUE(len > 100 && bytes[18] == 2 && bytes[19] == 2); /* the file is in WAL mode */
  db = open_ok(p, FT_DB_READONLY);
  ASSERT_EQ_INT(ft_db_readonly(db), 1);
  fixture fx;
  ft_err err;
  ft_device_info d;
  fx.key = pkey(128, 16384, 16384, "min(x + bias, c) - c");
  ASSERT_OK(ft_db_find_device(db, "00000000000000aa", NULL, &d, &fx.dev, &err));
  ft_best b;
  ASSERT_OK(ft_db_best(db, fx.dev, &fx.key, &b, &err));
  ASSERT_EQ_STR(b.variant, "v1");
  size_t n;
  free(export_str(db, 1, &n));
  /* Every write is refused before it reaches the file. */
  fx.prob = b.problem_id;
  fx.run = 0;
  ASSERT_EQ_INT(add(db, &fx, "fused", "x", "ok", 1.0), FT_ERR_DB);
  ft_device_info nd = device("00000000000000cc", "new");
  int64_t id;
  ASSERT_EQ_INT(ft_db_upsert_device(db, &nd, &id, &err), FT_ERR_DB);
  ASSERT_CONTAINS(err.msg, "read-only");
  ASSERT_EQ_INT(ft_db_cubin_put(db, "a", "sm_90", 1, "", "x", 1, &err), FT_ERR_DB);
  ASSERT_EQ_INT(ft_db_import_json(db, k_doc, strlen(k_doc), &err), FT_ERR_DB);
  ft_db_close(db);
  char *bytes2 = read_file(p, &len2);
  ASSERT_TRUE(len == len2 && memcmp(bytes, bytes2, len) == 0);
  free(bytes2);

  /* A read-only directory: no -shm can be created, so the open falls back to immutable. The
   * child drops root (root may write anywhere) to make the directory truly unwritable. */
  char dir[] = "/tmp/ft_test_rodir_XXXXXX";
  ASSERT_TRUE(mkdtemp(dir) != NULL);
  char ro[1200], walfull[1200], side[1300];
  snprintf(ro, sizeof ro, "%s/tuned.db", dir);
  write_file(ro, bytes, len);
  ASSERT_OK(chmod(ro, 0444));
  /* A copy taken while a writer had committed frames not yet checkpointed. */
  snprintf(walfull, sizeof walfull, "%s/walfull.db", dir);
  sqlite3 *h;
  ASSERT_OK(chmod(p, 0644));
  ASSERT_OK(sqlite3_open(p, &h));
  ASSERT_OK(sqlite3_exec(h, "PRAGMA wal_autocheckpoint = 0; "
                            "INSERT INTO meta (key, value) VALUES ('x', 'y');", NULL, NULL, NULL));
  size_t wl, ml;
  snprintf(side, sizeof side, "%s-wal", p);
  char *wal = read_file(side, &wl), *main_bytes = read_file(p, &ml);
  ASSERT_TRUE(wal && wl > 0);
  write_file(walfull, main_bytes, ml);
  snprintf(side, sizeof side, "%s-wal", walfull);
  write_file(side, wal, wl);
  free(wal);
  free(main_bytes);
  sqlite3_close(h);
  ASSERT_OK(chmod(dir, 0555));
  for (int unmerged = 0; unmerged < 2; unmerged++) {
    pid_t kid = fork();
    if (kid == 0) _exit(readonly_child(unmerged ? walfull : ro, unmerged));
    int status = 0;
    waitpid(kid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  snprintf(side, sizeof side, "%s-shm", ro);
  ASSERT_TRUE(!exists(side)); /* nothing was created beside it */
  bytes2 = read_file(ro, &len2);
  ASSERT_TRUE(len == len2 && memcmp(bytes, bytes2, len) == 0);
  free(bytes2);
  chmod(dir, 0755);
  ft_db_remove_files(ro);
  ft_db_remove_files(walfull);
  rmdir(dir);
  free(bytes);
  chmod(p, 0644);
  ft_db_remove_files(p);
}

int main(void) {
  const char *t = getenv("FT_TEST_TMP");
  snprintf(g_dir, sizeof g_dir, "%s", t && t[0] ? t : "/tmp");
  test_create();
  test_hostile_files();
  test_newer_version();
  test_migration();
  test_best();
  test_cubins();
  test_roundtrip();
  test_malformed();
  test_concurrent_writers();
  test_readonly();
  return FT_TEST_DONE();
}
