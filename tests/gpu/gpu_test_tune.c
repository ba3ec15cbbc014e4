/* GPU: tune end to end on small problems; a deliberately wrong candidate (test hook) is caught
 * and never chosen; a repeated tune compiles nothing and skips what it measured; a tiny budget
 * ends every search with a best that is a safe strategy (cuBLAS + epilogue pass) or faster, having
 * measured fused candidates only until one gave a time (the search's fused floor, past the budget). */
#include <math.h>
#include <sqlite3.h>
#include <unistd.h>

#include "ft_test.h"
#include "search.h"
#include "space.h"
#include "tuner.h"

/* Tunes problem (m, n, k, epi, fp32) with req's options, the epilogue parsed here as the API
 * parses it before a tune. */
static ft_status tune_req(ft_db *db, int64_t m, int64_t n, int64_t k, const char *epi, ft_tune_req *req,
                          ft_tune_summary *s, ft_err *e) {
  ft_epilogue *ep = NULL;
  FT_TRY(ft_ep_parse(epi, &ep, e));
  const ft_tune_problem p = {.m = m, .n = n, .k = k, .math = FT_MATH_FP32, .ep = ep, .epilogue = epi};
  req->problem = &p;
  const ft_status st = ft_tune_run(db, req, s, e);
  req->problem = NULL;
  ft_ep_free(ep);
  return st;
}

static ft_status tune(ft_db *db, ft_gpu *g, int64_t m, int64_t n, int64_t k, const char *epi, int retune,
                      ft_tune_summary *s, ft_err *e) {
  (void)g;
  ft_tune_req req = {.search = "exhaustive", .budget_s = 120, .repeats = 20, .retune = retune, .seed = 7,
                     .max_candidates = 48, .worker_exe = getenv("FT_WORKER"), .job_timeout_s = 8};
  return tune_req(db, m, n, k, epi, &req, s, e);
}

/* A result's rank, as the stored best is chosen (docs/FORMAT.md): its median over the cuBLAS
 * GEMM timed in the same rounds. Every result of a tune without --flush-l2 has that reference. */
static double rank_of(const ft_tune_entry *e) {
  return e->status == FT_RESULT_OK && e->gemm_ratio > 0 ? e->gemm_ratio : INFINITY;
}

/* The best-ranked correct cuBLAS + epilogue-pass result of the run (INFINITY: none). */
static double safe_best(const ft_tune_summary *s) {
  double b = INFINITY;
  for (int i = 0; i < s->nentries; i++)
    if (s->entries[i].strategy == FT_STRATEGY_CUBLAS_EPILOGUE && rank_of(&s->entries[i]) < b)
      b = rank_of(&s->entries[i]);
  return b;
}

/* The rank of the run's result that is the stored best (its variant and median; INFINITY: none). */
static double best_rank(const ft_tune_summary *s) {
  for (int i = 0; i < s->nentries; i++)
    if (!strcmp(s->entries[i].variant, s->best.variant) && s->entries[i].median_ms == s->best.median_ms)
      return rank_of(&s->entries[i]);
  return INFINITY;
}

/* A budget that ends the tune before (0.01 s) or among (3 s) the fused kernels, in each search:
 * every safe candidate was measured, and the stored best is one of them or faster. The shapes
 * are new to the database, so the best is this run's. */
/* The epilogue passes the search's space holds for the shape and epilogue (src/family/space.h's scopes). */
static int passes_in_space(const char *search, int64_t m, int64_t n, int64_t k, const char *epilogue) {
  ft_search_kind kind = FT_SEARCH_FAST;
  ft_device_limits lim;
  ft_variant *vs = NULL;
  int nv = 0;
  ft_err e;
  ASSERT_TRUE(ft_search_parse(search, &kind));
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_ep_parse(epilogue, &ep, &e));
  ASSERT_OK(ft_space_enumerate_ep(FT_VK_EPILOGUE, m, n, k, FT_MATH_FP32,
                                  ft_search_takes_full_space(kind) ? FT_SPACE_FULL : FT_SPACE_PRUNED, ep, &lim, &vs,
                                  NULL, &nv, &e));
  free(vs);
  ft_ep_free(ep);
  return nv;
}

static void tiny_budgets(ft_db *db) {
  static const char *const searches[] = {"fast", "exhaustive", "random", "halving"};
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 4; i++) {
      ft_tune_req req = {.search = searches[i], .budget_s = b ? 3.0 : 0.01, .repeats = 20, .seed = 7,
                         .worker_exe = getenv("FT_WORKER"), .job_timeout_s = 8};
      ft_tune_summary s;
      ft_err e;
      ft__err_clear(&e);
      const int64_t m = 96 + 32 * (4 * b + i), n = 1024, k = 512;
      ft_status st = tune_req(db, m, n, k, "biasrelu", &req, &s, &e);
      if (st != FT_OK) fprintf(stderr, "tune %s budget %.2f: %s\n", searches[i], req.budget_s, e.msg);
      ASSERT_OK(st);
      ASSERT_TRUE(s.has_best);
      if (b == 0) ASSERT_TRUE(s.budget_exhausted);
      const double safe = safe_best(&s);
      int n_safe = 0, n_fused = 0;
      for (int j = 0; j < s.nentries; j++) {
        n_safe += s.entries[j].strategy == FT_STRATEGY_CUBLAS_EPILOGUE;
        n_fused += s.entries[j].strategy == FT_STRATEGY_FUSED;
      }
      const double best = best_rank(&s);
      fprintf(stderr, "budget %.2f s, %s: %d safe and %d fused measured, best %s %s %.4f ms at %.3f of cuBLAS, "
              "safe best %.3f of cuBLAS\n", req.budget_s, searches[i], n_safe, n_fused, s.best.strategy, s.best.variant,
              s.best.median_ms, best, safe);
      ASSERT_TRUE(isfinite(safe) && isfinite(best));
      ASSERT_TRUE(best <= safe);
      if (b == 0) ASSERT_TRUE(n_fused >= 1 && n_fused <= 3); /* the fused floor: until one gives a time, <= 3 */
      /* every epilogue pass of the search's space (the default 9 after cuBLAS and 9 after cuBLASLt's bias
       * GEMM, the full one 36 of each), whatever the budget */
      ASSERT_TRUE(n_safe >= passes_in_space(searches[i], m, n, k, "biasrelu"));
      ft_tune_summary_free(&s);
    }
}

/* Whether the planted candidate `what` ("wrong", "fault", "hang") ended with status. */
static int find_injected(const ft_tune_summary *s, const char *what, ft_result_status status) {
  char suffix[32];
  snprintf(suffix, sizeof suffix, "_injected_%s", what);
  for (int i = 0; i < s->nentries; i++)
    if (strstr(s->entries[i].variant, suffix) && s->entries[i].status == status) return 1;
  return 0;
}

/* The problem at 129×257×515 is far below FT_TIMING_GRAPH_BELOW_US: the run says it timed as
 * CUDA graphs, and every correct result, fused kernels, cuBLAS + pass and the baselines alike,
 * was captured (none fell back to the stream, which its message would say). */
static void check_graph_timing(const char *path) {
  sqlite3 *h = NULL;
  ASSERT_EQ_INT(sqlite3_open(path, &h), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  ASSERT_EQ_INT(sqlite3_prepare_v2(h,
                                   "SELECT (SELECT count(*) FROM runs WHERE options LIKE '%\"graph_calls\":10%'),"
                                   " (SELECT count(*) FROM results WHERE status = 'ok'),"
                                   " (SELECT count(*) FROM results WHERE message LIKE 'timed on the stream%')",
                                   -1, &st, NULL),
                SQLITE_OK);
  ASSERT_EQ_INT(sqlite3_step(st), SQLITE_ROW);
  const int graph_runs = sqlite3_column_int(st, 0), ok = sqlite3_column_int(st, 1), fell = sqlite3_column_int(st, 2);
  fprintf(stderr, "graph timing: %d run(s) as graphs, %d ok results, %d timed on the stream instead\n", graph_runs,
          ok, fell);
  ASSERT_TRUE(graph_runs >= 1 && ok > 0);
  ASSERT_EQ_INT(fell, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
}

int main(void) {
  ft_err e;
  ft__err_clear(&e);
  ft_gpu *g = NULL;
  ft_status st = ft_gpu_open(0, &g, &e);
  if (st == FT_ERR_NO_DEVICE) RETURN_SKIP(e.msg);
  /* Every check here needs the planted candidates. */
  if (!ft_tune_test_hooks()) RETURN_SKIP("linked without the tuner's test hook: no planted candidates");
  ASSERT_OK(st);
  char path[512];
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(path, sizeof path, "%s/gpu_tune_%ld.db", tmp ? tmp : "/tmp", (long)getpid());
  unlink(path);
  ft_db *db = NULL;
  ASSERT_OK(ft_db_open(path, FT_DB_CREATE, &db, &e));
  setenv("FUSEDTUNE_GRAPH_TIMING", "1", 0); /* small problems timed as graphs (check_graph_timing) */

  setenv(FT_TEST_INJECT_ENV, "wrong", 1);
  ft_tune_summary s;
  st = tune(db, g, 129, 257, 515, "minsub", 0, &s, &e);
  if (st != FT_OK) fprintf(stderr, "tune: %s\n", e.msg);
  ASSERT_OK(st);
  ASSERT_TRUE(s.has_best);
  ASSERT_TRUE(s.eager_ms > 0);
  ASSERT_TRUE(s.n_ok > 0);
  ASSERT_TRUE(find_injected(&s, "wrong", FT_RESULT_WRONG_RESULT));
  ASSERT_TRUE(strstr(s.best.variant, "injected") == NULL);
  ASSERT_TRUE(!strcmp(s.best.strategy, "fused") || !strcmp(s.best.strategy, "cublas+epilogue"));
  fprintf(stderr, "first tune: %d candidates, %d ok, %d wrong, %d compile errors, compiled %d in %.1fs, total %.1fs; "
          "best %s %.4f ms (eager %.4f ms)\n", s.n_candidates, s.n_ok, s.n_wrong, s.n_compile_error, s.n_compiled,
          s.compile_s, s.total_s, s.best.variant, s.best.median_ms, s.eager_ms);
  ASSERT_EQ_INT(s.n_wrong, 1); /* only the planted one */
  ft_tune_summary_free(&s);
  unsetenv(FT_TEST_INJECT_ENV);
  check_graph_timing(path);

  /* a faulting and a hanging candidate: each costs one result and a worker restart */
  if (getenv("FT_WORKER")) {
    setenv(FT_TEST_INJECT_ENV, "fault,hang", 1);
    st = tune(db, g, 64, 96, 128, "biasrelu", 0, &s, &e);
    unsetenv(FT_TEST_INJECT_ENV);
    if (st != FT_OK) fprintf(stderr, "tune with planted fault and hang: %s\n", e.msg);
    ASSERT_OK(st);
    ASSERT_TRUE(find_injected(&s, "fault", FT_RESULT_LAUNCH_ERROR));
    ASSERT_TRUE(find_injected(&s, "hang", FT_RESULT_TIMEOUT));
    /* Workers restart lazily, when the next job comes: the hang is the last candidate. */
    ASSERT_TRUE(s.worker_restarts >= 1);
    ASSERT_TRUE(s.has_best);
    ASSERT_TRUE(strstr(s.best.variant, "injected") == NULL);
    ASSERT_TRUE(s.n_ok > 0);
    fprintf(stderr, "planted fault + hang: %d ok, %d launch_error, %d restarts, %.1fs\n", s.n_ok, s.n_launch_error,
            s.worker_restarts, s.total_s);
    ft_tune_summary_free(&s);
  } else {
    FT_FAIL_AT_("FT_WORKER (fusedtune-worker) is not set (run through ctest): fault and hang isolation untested");
  }

  /* again: every candidate known, nothing compiled */
  st = tune(db, g, 129, 257, 515, "minsub", 0, &s, &e);
  ASSERT_OK(st);
  ASSERT_EQ_INT(s.n_compiled, 0);
  ASSERT_TRUE(s.n_skipped_known > 0);
  ft_tune_summary_free(&s);
  /* --retune: measured again, cubins from the cache */
  st = tune(db, g, 129, 257, 515, "minsub", 1, &s, &e);
  ASSERT_OK(st);
  ASSERT_EQ_INT(s.n_compiled, 0);
  ASSERT_TRUE(s.n_cached > 0);
  fprintf(stderr, "retune: %d from cache, total %.1fs\n", s.n_cached, s.total_s);
  ft_tune_summary_free(&s);

  /* Results with no cuBLAS reference, as a version-1 database holds them: the next tune measures
   * their candidates again (they would rank after any new result), and then knows them. */
  sqlite3 *h = NULL;
  ASSERT_EQ_INT(sqlite3_open(path, &h), SQLITE_OK);
  ASSERT_EQ_INT(sqlite3_exec(h, "UPDATE results SET gemm_ratio = NULL", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(h);
  st = tune(db, g, 129, 257, 515, "minsub", 0, &s, &e);
  ASSERT_OK(st);
  ASSERT_TRUE(s.has_best);
  int n_ranked = 0;
  for (int i = 0; i < s.nentries; i++) n_ranked += rank_of(&s.entries[i]) < INFINITY;
  fprintf(stderr, "unreferenced results: %d known, %d measured again, %d of them ranked\n", s.n_skipped_known,
          s.n_measured, n_ranked);
  ASSERT_TRUE(s.n_measured > 0 && n_ranked > 0);
  ASSERT_TRUE(isfinite(best_rank(&s))); /* the best is one of the results measured again */
  ft_tune_summary_free(&s);
  st = tune(db, g, 129, 257, 515, "minsub", 0, &s, &e);
  ASSERT_OK(st);
  ASSERT_TRUE(s.n_skipped_known > 0);
  ASSERT_EQ_INT(s.n_compiled, 0);
  ft_tune_summary_free(&s);

  tiny_budgets(db);

  /* other epilogues and a tiny shape */
  const char *epis[] = {"biasrelu", "x + 2*sigmoid(x)", "gelu(x + bias)"};
  for (size_t i = 0; i < sizeof epis / sizeof epis[0]; i++) {
    st = tune(db, g, 17, 33, 65, epis[i], 0, &s, &e);
    if (st != FT_OK) fprintf(stderr, "tune %s: %s\n", epis[i], e.msg);
    ASSERT_OK(st);
    ASSERT_TRUE(s.has_best);
    ASSERT_EQ_INT(s.n_wrong, 0);
    ft_tune_summary_free(&s);
  }
  ft_db_close(db);
  ft_gpu_close(g);
  unlink(path);
  return FT_TEST_DONE();
}
