/* The results database: schema, migrations, results and best, concurrency, read-only use,
 * hostile files (export and import: test_db_io.c). GPU-free. */
#define _POSIX_C_SOURCE 200809L

#include "db_fixture.h"
#include "embedded.h"


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
  ASSERT_EQ_INT(ft_db_schema_version(), 2);
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 2);
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
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 2);
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
             "database %s has schema version 7, this fusedtune reads up to 2: upgrade fusedtune", p);
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
  /* The runner applies exactly the steps past the database's version, in one transaction. A new
   * database is at this build's version 2; step 0 (1 -> 2) is never run again. */
  static const char *const steps[] = {
      "THIS IS NOT SQL;",
      "CREATE TABLE extra (x); INSERT INTO meta (key, value) VALUES ('step3', 'done');",
      "ALTER TABLE extra ADD COLUMN y; INSERT INTO meta (key, value) VALUES ('step4', 'done');"};
  const char *p = tmp_path("migrate.db");
  ft_db *db = open_ok(p, FT_DB_CREATE);
  fixture fx = setup(db, "00000000000000aa", 128);
  ASSERT_OK(add(db, &fx, "fused", "v", "ok", 1.0));
  ft_err err;
  ASSERT_OK(ft__db_migrate(db, steps, 1, &err)); /* already at 2: nothing runs */
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 2);
  ASSERT_OK(ft__db_migrate(db, steps, 2, &err)); /* 2 -> 3 */
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 3);
  ASSERT_OK(ft__db_migrate(db, steps, 2, &err)); /* already there: nothing runs again */
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM meta WHERE key = 'step3'"), 1);
  ASSERT_OK(ft__db_migrate(db, steps, 3, &err)); /* 3 -> 4 only */
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 4);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM meta WHERE key LIKE 'step%'"), 2);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM results"), 1);
  ft_db_close(db);
  /* This build reads up to version 2: the migrated file is now "newer". */
  ASSERT_EQ_INT(ft_db_open(p, 0, &db, &err), FT_ERR_VERSION);
  ft_db_remove_files(p);

  /* A failing step rolls back every step of the migration. */
  static const char *const broken[] = {"SELECT 1;", "CREATE TABLE extra (x);", "THIS IS NOT SQL;"};
  p = tmp_path("migrate_fail.db");
  db = open_ok(p, FT_DB_CREATE);
  ASSERT_EQ_INT(ft__db_migrate(db, broken, 3, &err), FT_ERR_DB);
  ASSERT_CONTAINS(err.msg, "migrating the schema from version 3 to 4");
  ft_db_close(db);
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 2);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM sqlite_master WHERE name = 'extra'"), 0);
  ft_db_remove_files(p);
}

/* A version-1 database (db/schema.sql alone, as fusedtune before gemm_ratio made it) with a tune's
 * rows is migrated on its first writable open: gemm_ratio is added (NULL in the old rows), the best
 * is unchanged, and a read-only open before that is refused without a write. */
static void test_migrate_v1(void) {
  const char *p = tmp_path("v1.db");
  size_t len;
  const char *schema = ft__embedded("db/schema.sql", &len);
  ASSERT_TRUE(schema != NULL);
  raw_exec(p, schema);
  raw_exec(p,
           "INSERT INTO devices VALUES (1, '00000000000000aa', 'NVIDIA H200', 9, 0, 132, 1, 1, 1, 1, 1,"
           " '2026-11-29T08:00:00.000Z', '2026-11-29T08:00:00.000Z');"
           "INSERT INTO problems VALUES (1, 128, 256, 512, 'xrow_wrow', 'fp32', 'relu(x)', 'ca47f1151711f396');"
           "INSERT INTO results (uuid, device_id, problem_id, strategy, variant, config, status, median_ms, repeats,"
           " source_hash, fusedtune_version, message, created) VALUES"
           " ('00000000-0000-4000-8000-000000000001', 1, 1, 'cublas_gemm', 'g', '{}', 'ok', 1.0, 30, '', '0.1', '',"
           "  '2026-11-29T08:00:01.000Z'),"
           " ('00000000-0000-4000-8000-000000000002', 1, 1, 'fused', 'slow', '{}', 'ok', 1.2, 30, '', '0.1', '',"
           "  '2026-11-29T08:00:02.000Z'),"
           " ('00000000-0000-4000-8000-000000000003', 1, 1, 'cublas+epilogue', 'fast', '{}', 'ok', 1.1, 30, '',"
           "  '0.1', '', '2026-11-29T08:00:03.000Z');");
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 1);
  ft_db *db = NULL;
  ft_err err;
  ASSERT_EQ_INT(ft_db_open(p, FT_DB_READONLY, &db, &err), FT_ERR_DB);
  ASSERT_CONTAINS(err.msg, "open it once with write access");
  db = open_ok(p, 0);
  ft_db_close(db);
  ASSERT_EQ_INT(count(p, "PRAGMA user_version"), 2);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM results WHERE gemm_ratio IS NULL"), 3);
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM best WHERE variant = 'fast'"), 1);
  /* The new column's CHECK holds: a reference is positive or NULL. */
  sqlite3 *h;
  ASSERT_OK(sqlite3_open(p, &h));
  ASSERT_TRUE(sqlite3_exec(h, "UPDATE results SET gemm_ratio = 0", NULL, NULL, NULL) == SQLITE_CONSTRAINT);
  sqlite3_close(h);
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
  ASSERT_EQ_STR(b.key.epilogue, "min(x + bias, c) - c where c = 2");
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
  ft_problem_key k2 = pkey(1024, 16384, 16384, "min(x + bias, c) - c where c = 2");
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
  ft_result_row bad = {fx.run, fx.dev, fx.prob, "fused", "x", "{bm:1}", "ok", 1, 1, 1, 30, 0, 0, "", "", -1};
  ASSERT_EQ_INT(ft_db_insert_result(db, &bad, &err), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(err.msg, "not JSON");
  ASSERT_OK(ft_db_end_run(db, fx.run, "ok", &err));
  ASSERT_EQ_INT(ft_db_end_run(db, 999999, "ok", &err), FT_ERR_NOT_FOUND);
  ft_db_close(db);
  ft_db_remove_files(p);
}

/* ---------------------------------------------------------------------------------------------
 * Export / import */

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

static double g_eager_seen;
static int collect_eager(void *user, const ft_best *b) {
  g_eager_seen = b->eager_ms;
  return collect(user, b);
}

/* The best is the lowest time over the cuBLAS GEMM timed beside it (gemm_ratio), not the lowest
 * median: a GPU whose clock drifted during a tune times a later candidate slower. */
static void test_rank(void) {
  const char *p = tmp_path("rank.db");
  ft_db *db = open_ok(p, FT_DB_CREATE);
  fixture fx = setup(db, "00000000000000aa", 128);
  ft_best b;
  ft_err err;
  /* Timed while the clock was high: fast medians, cuBLAS fast too. */
  ASSERT_OK(add_ref(db, &fx, "cublas_gemm", "gemm", "ok", 1.00, 1.00));
  ASSERT_OK(add_ref(db, &fx, "cublas+epilogue", "pass", "ok", 1.05, 1.05)); /* 1.05 of cuBLAS */
  /* Timed later at a lower clock: slower medians, yet 0.97 of the cuBLAS beside it. */
  ASSERT_OK(add_ref(db, &fx, "fused", "drifted", "ok", 1.16, 1.16 / 1.20)); /* cuBLAS beside it: 1.20 */
  ASSERT_OK(add_ref(db, &fx, "fused", "even", "ok", 1.10, 1.00));
  /* The eager chain, timed at yet another clock: 1.10 of the cuBLAS beside it. */
  ASSERT_OK(add_ref(db, &fx, "eager", "eager", "ok", 1.43, 1.10)); /* cuBLAS beside it: 1.30 */
  ASSERT_OK(ft_db_best(db, fx.dev, &fx.key, &b, &err));
  ASSERT_EQ_STR(b.variant, "drifted");
  ASSERT_NEAR(b.median_ms, 1.16, 0); /* what was measured, not a scaled time */
  /* eager at the best's clock: 1.16 * 1.10 / 0.967 = 1.32, a speed-up of 1.10 / 0.967 */
  ASSERT_NEAR(b.eager_ms, 1.16 * 1.10 / (1.16 / 1.20), 1e-12);
  ASSERT_NEAR(b.eager_ms / b.median_ms, 1.10 / (1.16 / 1.20), 1e-12);
  char vb[128];
  view_best_variant(p, fx.dev, fx.prob, vb);
  ASSERT_EQ_STR(vb, "drifted");
  collected c = {0};
  ASSERT_OK(ft_db_each_candidate(db, &b, collect, &c, &err));
  ASSERT_EQ_INT(c.n, 3);
  ASSERT_EQ_STR(c.variants[0], "drifted");
  /* each_best (list) reports the same eager as ft_db_best. */
  memset(&c, 0, sizeof c);
  ASSERT_OK(ft_db_each_best(db, collect_eager, &c, &err));
  ASSERT_EQ_INT(c.n, 1);
  ASSERT_NEAR(g_eager_seen, 1.16 * 1.10 / (1.16 / 1.20), 1e-12);
  memset(&c, 0, sizeof c);
  ASSERT_OK(ft_db_each_candidate(db, &b, collect, &c, &err));
  ASSERT_EQ_STR(c.variants[1], "even");
  ASSERT_EQ_STR(c.variants[2], "pass");
  /* The earlier search's view of a candidate: its fastest median and its lowest rank. */
  int found = 0;
  double ms = 0, rank = 0;
  ASSERT_OK(ft_db_prior_result(db, fx.dev, fx.prob, "fused", "{\"bm\":64}", "0123456789abcdef", 0, &found, &ms,
                               &rank, &err));
  ASSERT_EQ_INT(found, 1);
  ASSERT_NEAR(ms, 1.10, 0);
  ASSERT_NEAR(rank, 1.16 / 1.20, 1e-12);
  /* Timed on the stream (a run with no "graph_calls"): unknown to a tune that times as graphs,
   * known to one that asks for any timing. */
  ASSERT_OK(ft_db_prior_result(db, fx.dev, fx.prob, "fused", "{\"bm\":64}", "0123456789abcdef", 10, &found, &ms,
                               &rank, &err));
  ASSERT_EQ_INT(found, 0);
  ASSERT_OK(ft_db_prior_result(db, fx.dev, fx.prob, "fused", "{\"bm\":64}", "0123456789abcdef", -1, &found, NULL,
                               NULL, &err));
  ASSERT_EQ_INT(found, 1);
  /* The error rule's view (ft_db_prior_result_ex): the lowest rel_err of a candidate's wrong
   * results (a NaN output's is stored as NULL and counts as none); INFINITY where all were ok. */
  {
    double werr = 0;
    ASSERT_OK(ft_db_prior_result_ex(db, fx.dev, fx.prob, "fused", "{\"bm\":64}", "0123456789abcdef", -1, &found, &ms,
                                    &rank, &werr, &err));
    ASSERT_TRUE(found && isinf(werr));
    ft_result_row w = {fx.run, fx.dev, fx.prob, "fused", "near", "{\"bm\":128}", "wrong_result",
                       -1, -1, -1, 0, 3e-6, 1e-5, "0123456789abcdef", "rel_err 3e-06 > 2e-06", -1};
    ASSERT_OK(ft_db_insert_result(db, &w, &err));
    w.rel_err = INFINITY;
    ASSERT_OK(ft_db_insert_result(db, &w, &err));
    ASSERT_OK(ft_db_prior_result_ex(db, fx.dev, fx.prob, "fused", "{\"bm\":128}", "0123456789abcdef", -1, &found, &ms,
                                    &rank, &werr, &err));
    ASSERT_TRUE(found && isinf(ms) && isinf(rank));
    ASSERT_NEAR(werr, 3e-6, 0);
  }
  {
    const int64_t stream_run = fx.run;
    ASSERT_OK(ft_db_begin_run(db, fx.dev, "{\"search\":\"fast\",\"seed\":0,\"graph_calls\":10}", 10, &fx.run, &err));
    ASSERT_OK(add_ref(db, &fx, "fused", "as_graph", "ok", 1.02, 0.99));
    ASSERT_OK(ft_db_prior_result(db, fx.dev, fx.prob, "fused", "{\"bm\":64}", "0123456789abcdef", 10, &found, &ms,
                                 &rank, &err));
    ASSERT_EQ_INT(found, 1);
    ASSERT_NEAR(ms, 1.02, 0); /* the graph run's result alone */
    ASSERT_NEAR(rank, 0.99, 1e-12);
    ASSERT_OK(ft_db_prior_result(db, fx.dev, fx.prob, "fused", "{\"bm\":64}", "0123456789abcdef", 0, &found, &ms,
                                 &rank, &err));
    ASSERT_NEAR(ms, 1.10, 0); /* the stream run's alone */
    fx.run = stream_run;
  }

  /* A result with no reference of its own (an older tune, --flush-l2) has no rank: it comes
   * after every ranked one, however low its median (a tune that ranks measures it again). */
  ASSERT_OK(add(db, &fx, "fused", "unreferenced", "ok", 0.95));
  ASSERT_OK(ft_db_best(db, fx.dev, &fx.key, &b, &err));
  ASSERT_EQ_STR(b.variant, "drifted");
  view_best_variant(p, fx.dev, fx.prob, vb);
  ASSERT_EQ_STR(vb, "drifted");
  ASSERT_OK(ft_db_prior_result(db, fx.dev, fx.prob, "fused", "{\"bm\":64}", "0123456789abcdef", 0, &found, &ms,
                               &rank, &err));
  ASSERT_NEAR(ms, 0.95, 0);
  ASSERT_NEAR(rank, 1.16 / 1.20, 1e-12); /* the unreferenced one has none */
  /* The lookup is one seek in the rank's index (bench_db times it). */
  ASSERT_EQ_INT(count(p, "SELECT count(*) FROM sqlite_master WHERE name = 'results_best_rank'"), 1);
  ft_db_close(db);
  ft_db_remove_files(p);

  /* With no cuBLAS GEMM alone anywhere nothing has a rank: the lowest median wins, as before;
   * a ranked result still comes before every unranked one. */
  p = tmp_path("rank_none.db");
  db = open_ok(p, FT_DB_CREATE);
  fx = setup(db, "00000000000000aa", 128);
  ASSERT_OK(add(db, &fx, "fused", "a", "ok", 1.2));
  ASSERT_OK(add(db, &fx, "fused", "b", "ok", 1.1));
  ASSERT_OK(ft_db_best(db, fx.dev, &fx.key, &b, &err));
  ASSERT_EQ_STR(b.variant, "b");
  ASSERT_OK(add_ref(db, &fx, "fused", "ranked", "ok", 1.3, 1.3));
  ASSERT_OK(ft_db_best(db, fx.dev, &fx.key, &b, &err));
  ASSERT_EQ_STR(b.variant, "ranked");
  view_best_variant(p, fx.dev, fx.prob, vb);
  ASSERT_EQ_STR(vb, "ranked");
  ft_db_close(db);
  ft_db_remove_files(p);
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
  ft_problem_key key = pkey(128, 16384, 16384, "min(x + bias, c) - c where c = 2");
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
  fx.key = pkey(128, 16384, 16384, "min(x + bias, c) - c where c = 2");
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
  fixture_init();
  test_create();
  test_hostile_files();
  test_newer_version();
  test_migration();
  test_migrate_v1();
  test_best();
  test_rank();
  test_concurrent_writers();
  test_readonly();
  return FT_TEST_DONE();
}
