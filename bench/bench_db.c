/* Timing of the database lookup path, kept out of the unit tests (a loaded or instrumented
 * machine is slower, not wrong): registered with CTest, label bench, only when
 * FUSEDTUNE_BENCH_TESTS=ON. Fails when a warm ft_db_best takes 10 us or more. */
#define _POSIX_C_SOURCE 200809L

#include <time.h>
#include <unistd.h>

#include "db.h"
#include "ft_test.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
  const char *tmp = getenv("FT_TEST_TMP");
  char path[1024];
  snprintf(path, sizeof path, "%s/bench_db_%ld.db", tmp && tmp[0] ? tmp : "/tmp", (long)getpid());
  ft_db_remove_files(path);
  ft_db *db = NULL;
  ft_err err;
  if (ft_db_open(path, FT_DB_CREATE, &db, &err) != FT_OK) RETURN_FAIL("open %s: %s", path, err.msg);

  ft_device_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.fingerprint, sizeof d.fingerprint, "00000000000000aa");
  snprintf(d.name, sizeof d.name, "NVIDIA H200");
  d.cc_major = 9;
  d.sm_count = 132;
  ft_problem_key key;
  memset(&key, 0, sizeof key);
  key.m = 128, key.n = 16384, key.k = 16384;
  snprintf(key.layout, sizeof key.layout, "xrow_wrow");
  snprintf(key.math, sizeof key.math, "fp32");
  snprintf(key.epilogue, sizeof key.epilogue, "min(x + bias, c) - c");
  ft__hash_hex(key.epilogue, strlen(key.epilogue), key.epilogue_hash);
  int64_t dev = 0, prob = 0, run = 0;
  ASSERT_OK(ft_db_upsert_device(db, &d, &dev, &err));
  ASSERT_OK(ft_db_upsert_problem(db, &key, &prob, &err));
  ASSERT_OK(ft_db_begin_run(db, dev, "{}", 10, &run, &err));
  /* A few competing results, so the lookup has rows to choose among. */
  for (int i = 0; i < 8; i++) {
    char variant[32];
    snprintf(variant, sizeof variant, "v%d", i);
    ft_result_row r = {run, dev, prob, "fused", variant, "{\"bm\":64}", "ok", 1.0 + i, 0.9 + i, 0.01, 30,
                       1e-7, 2e-6, "0123456789abcdef", "", -1};
    ASSERT_OK(ft_db_insert_result(db, &r, &err));
  }

  /* The lookup path: a few index seeks on cached statements. Best of 5 rounds. */
  ft_best b;
  ASSERT_OK(ft_db_best(db, dev, &key, &b, &err));
  double best_us = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    const int n = 20000;
    const double t0 = now_s();
    for (int i = 0; i < n; i++) ft_db_best(db, dev, &key, &b, &err);
    const double us = (now_s() - t0) / n * 1e6;
    if (us < best_us) best_us = us;
  }
  printf("BENCH ft_db_best warm: %.2f us per call\n", best_us);
  ASSERT_TRUE(best_us < 10.0);
  ft_db_close(db);
  ft_db_remove_files(path);
  return FT_TEST_DONE();
}
