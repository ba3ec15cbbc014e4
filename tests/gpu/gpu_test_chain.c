/* GPU: the eager chain as a plan (family eager_chain). A default tune of a ragged bf16 softmax
 * stores the chain's result, verified against float64 (status ok); that stored configuration, and
 * the chain of each further epilogue and mode (elementwise, bias folded into cuBLASLt's GEMM,
 * groupnorm, batchnorm, logsumexp, a pool) on ragged shapes, is made a plan through the C API,
 * launched on NaN-poisoned output and checked against the float64 reference at the tune's
 * tolerance (the mode's rule, raised to the eager baseline's chain in 3xtf32), then captured into a
 * CUDA graph (global capture mode: no allocation or synchronization inside the launch) and
 * replayed on poisoned output, checked again. FT_TEST_QUICK=1 (compute-sanitizer: scripts/gpu/sanitize.sh)
 * leaves out the tune and the long rows: a step of each kind on a small shape, the 1024-thread row
 * reduction on 33 rows of 8196 (2049 vectors: two a thread and one over). */
#include <unistd.h>

#include "baseline.h"
#include "ft_test.h"
#include "gpu_quick.h"
#include "gpu_scratch_db.h"
#include "verify.h"

static const struct {
  int64_t m, n, k;
  const char *epilogue;
  ft_math math;
} k_cases[] = {
    {129, 257, 515, "relu(x) * 2 - x", FT_MATH_FP32},
    {77, 1000, 136, "min(x + bias, c) - c where c = 2.0", FT_MATH_BF16},
    {65, 1000, 64, "silu(groupnorm(x + bias, 8) * g + b) where col g, col b", FT_MATH_FP16},
    {33, 1024, 72, "logsumexp(x + bias)", FT_MATH_TF32},
    {100, 264, 256, "batchnorm(x * 2) * g where col g", FT_MATH_BF16},
    {65, 1001, 64, "groupnorm(x + bias, 143) * 2", FT_MATH_BF16}, /* 143 groups of 7: a team per group */
    /* Few long rows: the row reductions at 1024 threads a block (eager_..._r1024_...). */
    {128, 16384, 64, "softmax(x + bias)", FT_MATH_BF16},
    {100, 16388, 32, "rowsum(maxpool(x, 4)) * 2", FT_MATH_FP32},
    {50, 600, 128, "relu(maxpool(x + bias, 3)) * r where row r", FT_MATH_3XTF32},
};
/* FT_TEST_QUICK's stand-in for the two cases of long rows (n > 16000). */
static const ft_problem k_quick_long = {33, 8196, 32, "softmax(x + bias)", FT_MATH_FP32};

/* The tune's tolerance for p (src/tune/runner_engine.c: the rule, then the eager chain's error). */
static double tolerance(ft_gpu *g, ft_pdata *d, const ft_epilogue *ep) {
  double tol = 0, cublas_err = 0;
  ft_err e;
  ASSERT_OK(ft_pdata_tolerance(g, d, &tol, &cublas_err, &e));
  ft_baselines *bl = NULL;
  ASSERT_OK(ft_baselines_create(g, NULL, ep, d, &bl, &e));
  if (bl) ASSERT_OK(ft_baseline_chain_tolerance(bl, &tol, &e));
  ft_baselines_free(bl);
  return tol;
}

/* y on stream s against the float64 reference, poisoned before run. */
static void check_once(ft_pdata *d, double tol, const char *what, const char *name) {
  ft_err e;
  ft_check chk = {0, 0, 0};
  ASSERT_OK(ft_pdata_check(d, &chk, &e));
  if (chk.bad != 0 || !(chk.rel_err <= tol))
    FT_FAIL_AT_("%s %s: %lld non-finite element(s), rel_err %.3g > %.3g", name, what, (long long)chk.bad, chk.rel_err,
                tol);
  else
    printf("%-28s %-12s rel_err %.3g (tol %.3g)\n", name, what, chk.rel_err, tol);
}

/* The plan of cfg for p: a launch, then a CUDA graph of one launch replayed, each on poisoned y. */
static void check_plan(ft_ctx *ctx, ft_gpu *g, const ft_problem *p, const ft_config *cfg) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_ep_parse(p->epilogue, &ep, &e));
  ft_plan *plan = NULL;
  if (ft_plan_create(ctx, p, cfg, &plan) != FT_OK) {
    FT_FAIL_AT_("ft_plan_create %s: %s", cfg->name, ft_errmsg(ctx));
    ft_ep_free(ep);
    return;
  }
  ft_pdata *d = NULL;
  ASSERT_OK(ft_pdata_create(g, (int)p->m, (int)p->n, (int)p->k, ep, p->math, 53, &d, &e));
  const double tol = d ? tolerance(g, d, ep) : 0;
  cudaStream_t s = NULL;
  ASSERT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int round = 0; d && s && round < 2; round++) { /* twice: a plan launches again and again */
    ASSERT_OK(ft_pdata_poison(d, s, &e));
    if (ft_plan_launch_ptrs(plan, d->dX, d->dW, d->dY, d->args.v, d->args.s, s) != FT_OK)
      FT_FAIL_AT_("ft_plan_launch_ptrs %s: %s", cfg->name, ft_errmsg(ctx));
    ASSERT_OK(cudaStreamSynchronize(s));
    check_once(d, tol, "launch", cfg->name);
  }
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  if (d && s) {
    ASSERT_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    const ft_status st = ft_plan_launch_ptrs(plan, d->dX, d->dW, d->dY, d->args.v, d->args.s, s);
    const cudaError_t ce = cudaStreamEndCapture(s, &graph);
    if (st != FT_OK || ce != cudaSuccess)
      FT_FAIL_AT_("%s captured: %s / %s", cfg->name, ft_errmsg(ctx), cudaGetErrorString(ce));
    if (graph) ASSERT_OK(cudaGraphInstantiate(&exec, graph, 0));
  }
  for (int round = 0; exec && round < 2; round++) {
    ASSERT_OK(ft_pdata_poison(d, s, &e));
    ASSERT_OK(cudaGraphLaunch(exec, s));
    ASSERT_OK(cudaStreamSynchronize(s));
    check_once(d, tol, "graph replay", cfg->name);
  }
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  if (s) cudaStreamDestroy(s);
  ft_pdata_free(d);
  ft_plan_destroy(plan);
  ft_ep_free(ep);
}

/* A default tune of p stores the chain, verified (ok): its configuration in *cfg. */
static int tuned_chain(ft_ctx *ctx, const ft_problem *p, ft_config *cfg) {
  ft_tune_options opt = FT_TUNE_OPTIONS_INIT;
  opt.budget_s = 60;
  opt.repeats = 20;
  ft_config best;
  if (ft_tune(ctx, p, &opt, &best) != FT_OK) {
    FT_FAIL_AT_("ft_tune: %s", ft_errmsg(ctx));
    return 0;
  }
  ft_stored *st = NULL;
  ASSERT_OK(ft_stored_load(ctx, p, 0, &st));
  int found = 0;
  for (int i = 0; st && i < st->n_problems; i++)
    for (int r = 0; r < st->problems[i].n_results; r++) {
      const ft_stored_result *res = &st->problems[i].results[r];
      if (strcmp(res->family, "eager_chain") != 0) continue;
      ASSERT_EQ_INT(res->strategy, FT_STRATEGY_CUBLAS_EPILOGUE);
      ASSERT_EQ_STR(ft_result_status_name(res->status), "ok");
      ASSERT_TRUE(res->median_ms > 0 && res->rel_err >= 0);
      printf("tuned: %s %.4f ms, rel_err %.3g (best %s %.4f ms)\n", res->variant, res->median_ms, res->rel_err,
             best.name, best.median_ms);
      memset(cfg, 0, sizeof *cfg);
      snprintf(cfg->strategy, sizeof cfg->strategy, "%s", ft_strategy_name(res->strategy));
      snprintf(cfg->name, sizeof cfg->name, "%s", res->variant);
      snprintf(cfg->config, sizeof cfg->config, "%s", res->config);
      cfg->math = p->math;
      found = 1;
    }
  ft_stored_free(st);
  ASSERT_TRUE(found);
  return found;
}

int main(void) {
  if (!ft_test_have_gpu()) RETURN_SKIP("no CUDA device");
  ft_gpu *g = NULL;
  FT_TEST_OPEN_GPU(g);
  char path[512];
  ft_ctx *ctx;
  gpu_scratch_db(path, sizeof path, "gpu_chain", &ctx);
  if (!ctx) return FT_TEST_DONE();
  const int quick = ft_test_quick();
  const ft_problem tuned = {77, 1000, 136, "gelu(softmax(x + bias))", FT_MATH_BF16};
  ft_config cfg;
  if (!quick && tuned_chain(ctx, &tuned, &cfg)) check_plan(ctx, g, &tuned, &cfg); /* a tune: too slow sanitized */
  const size_t n_cases = sizeof k_cases / sizeof k_cases[0];
  for (size_t c = 0; c < n_cases + (quick ? 1 : 0); c++) {
    const ft_problem p = c == n_cases ? k_quick_long
                                      : (ft_problem){k_cases[c].m, k_cases[c].n, k_cases[c].k, k_cases[c].epilogue,
                                                     k_cases[c].math};
    if (quick && p.n > 16000) continue;
    ft_variant_list *list = NULL;
    char msg[256];
    ASSERT_OK(ft_variants(&p, NULL, 0, &list, msg, sizeof msg));
    int found = 0;
    for (int i = 0; list && i < list->count; i++) {
      const ft_variant_info *v = &list->items[i];
      if (strncmp(v->name, "eager_s", 7) != 0) continue;
      memset(&cfg, 0, sizeof cfg);
      snprintf(cfg.strategy, sizeof cfg.strategy, "%s", ft_strategy_name(v->strategy));
      snprintf(cfg.name, sizeof cfg.name, "%s", v->name);
      snprintf(cfg.config, sizeof cfg.config, "%s", v->config);
      cfg.math = p.math;
      check_plan(ctx, g, &p, &cfg);
      found++;
    }
    if (found != 1) FT_FAIL_AT_("%s (%s): %d eager chain variants listed, not 1", p.epilogue, ft_math_name(p.math), found);
    ft_variant_list_free(list);
  }
  ft_close(ctx);
  ft_remove_database(path);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
