/* The worker executable (fusedtune-worker) and how the library finds it, through the public
 * library as a program linked to it sees them: built beside libfusedtune in the build tree, the
 * library finds it there with no $FUSEDTUNE_WORKER (installed, in libexec/fusedtune/: .ci/run);
 * a named worker that is not there is an error naming it and $FUSEDTUNE_WORKER, never a quiet
 * run in this process; run by hand, the worker says what it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fusedtune.h"
#include "ft_test.h"

static char path[512];
static char preparing[10000];

static void on_progress(void *user, const ft_tune_progress *u) {
  (void)user;
  if (!strcmp(u->phase, "preparing")) snprintf(preparing, sizeof preparing, "%s", u->message ? u->message : "");
}

static ft_status tune(ft_ctx *ctx, const char *worker_exe) {
  ft_problem p = {64, 64, 64, "relu", FT_MATH_FP32};
  ft_tune_options opt = FT_TUNE_OPTIONS_INIT;
  opt.worker_exe = worker_exe;
  opt.quiet = 0;
  opt.progress = on_progress;
  opt.max_candidates = 1;
  opt.budget_s = 5;
  ft_config cfg;
  preparing[0] = '\0';
  return ft_tune(ctx, &p, &opt, &cfg);
}

/* A worker named but not there: FT_ERR_IO naming it and $FUSEDTUNE_WORKER, before any device. */
static void test_missing(ft_ctx *ctx) {
  ASSERT_EQ_INT(tune(ctx, "/nonexistent/fusedtune-worker"), FT_ERR_IO);
  ASSERT_CONTAINS(ft_errmsg(ctx), "worker executable /nonexistent/fusedtune-worker cannot be run");
  ASSERT_CONTAINS(ft_errmsg(ctx), "$FUSEDTUNE_WORKER");
  char env[600];
  snprintf(env, sizeof env, "%s.no-such-worker", path);
  setenv("FUSEDTUNE_WORKER", env, 1);
  ASSERT_EQ_INT(tune(ctx, NULL), FT_ERR_IO);
  ASSERT_CONTAINS(ft_errmsg(ctx), env);
  ASSERT_CONTAINS(ft_errmsg(ctx), "$FUSEDTUNE_WORKER");
  /* The library's own, found beside it in this build tree, is named too. */
  ASSERT_CONTAINS(ft_errmsg(ctx), "/fusedtune-worker");
  unsetenv("FUSEDTUNE_WORKER");
}

/* No $FUSEDTUNE_WORKER: the build tree's worker beside the library runs; without a GPU it reports
 * that there is no device (a tune on a GPU machine is gpu_test_tune's). */
static void test_found(ft_ctx *ctx) {
  if (ft_test_have_gpu()) {
    fprintf(stderr, "note: a GPU is present: the no-device run of the worker does not apply here\n");
    return;
  }
  unsetenv("FUSEDTUNE_WORKER");
  ASSERT_EQ_INT(tune(ctx, NULL), FT_ERR_NO_DEVICE);
  ASSERT_CONTAINS(preparing, "in a worker process");
}

/* Run by hand, it says what it is and exits 2. */
static void test_by_hand(void) {
  const char *worker = getenv("FT_WORKER");
  ASSERT_TRUE(worker != NULL);
  if (!worker) return;
  char cmd[1200], out[2000];
  const char *args[] = {"", "__worker", "__worker x", "5"};
  for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 </dev/null", worker, args[i]);
    FILE *p = popen(cmd, "r");
    ASSERT_TRUE(p != NULL);
    if (!p) return;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    ASSERT_CONTAINS(out, "the tuner's worker process");
    ASSERT_CONTAINS(out, "not for running by hand");
  }
}

int main(void) {
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(path, sizeof path, "%s/test_worker_%ld.db", tmp ? tmp : "/tmp", (long)getpid());
  unlink(path);
  ft_ctx *ctx = NULL;
  ASSERT_OK(ft_open(path, FT_OPEN_CREATE, &ctx));
  if (ctx) {
    test_missing(ctx);
    test_found(ctx);
    ft_close(ctx);
  }
  test_by_hand();
  char side[600];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
  return FT_TEST_DONE();
}
