/* GPU: M buckets (issue 42) end to end. Tunes M bucket 64 at N = K = 256 in bf16 with a small
 * budget, then every M of 33..64 and M = 100 (beyond the last bucket) is looked up (bucket 64:
 * FT_MATCH_BUCKET, exact at 64), planned at its own M and launched, the result checked against
 * the float64 reference with the tuner's bf16 tolerance. */
#include <unistd.h>

#include "ft_test.h"
#include "verify.h"

static void check_m(ft_ctx *ctx, ft_gpu *g, const ft_epilogue *ep, int m) {
  ft_problem p = {m, 256, 256, "biasrelu", FT_MATH_BF16};
  ft_config cfg;
  ft_status st = ft_lookup(ctx, &p, 0, &cfg);
  if (st != FT_OK) {
    FT_FAIL_AT_("m=%d: ft_lookup: %s", m, ft_errmsg(ctx));
    return;
  }
  ASSERT_EQ_INT(cfg.exact, m == 64 ? FT_MATCH_EXACT : FT_MATCH_BUCKET);
  ASSERT_EQ_INT(cfg.tuned_m, 64);
  ASSERT_EQ_INT(cfg.tuned_n, 256);
  ASSERT_EQ_INT(cfg.math, FT_MATH_BF16);
  ft_plan *plan = NULL;
  if ((st = ft_plan_create(ctx, &p, &cfg, &plan)) != FT_OK) {
    FT_FAIL_AT_("m=%d: ft_plan_create %s: %s", m, cfg.name, ft_errmsg(ctx));
    return;
  }
  ft_err e;
  ft_pdata *d = NULL;
  double tol = 0, cublas_err = 0;
  st = ft_pdata_create(g, m, 256, 256, ep, FT_MATH_BF16, 1234 + (uint64_t)m, &d, &e);
  if (st == FT_OK) st = ft_pdata_tolerance(g, d, &tol, &cublas_err, &e);
  if (st == FT_OK) st = ft_pdata_poison(d, 0, &e);
  if (st != FT_OK) {
    FT_FAIL_AT_("m=%d: inputs: %s", m, e.msg);
  } else {
    ft_vec_arg vecs[1] = {{"bias", d->dvec[0]}};
    ft_args args = {d->dX, d->dW, d->dY, vecs, 1, NULL, 0, FT_DTYPE_BF16};
    st = ft_plan_launch(plan, &args, 0);
    if (st != FT_OK) FT_FAIL_AT_("m=%d: ft_plan_launch: %s", m, ft_errmsg(ctx));
    ASSERT_OK(cudaDeviceSynchronize());
    ft_check chk = {0, 0, 0};
    if (st == FT_OK) ASSERT_OK(ft_pdata_check(d, &chk, &e));
    printf("  m=%-4d %s M=%lld %-52s rel_err %.3g (tolerance %.3g)\n", m,
           cfg.exact == FT_MATCH_EXACT ? "exact " : "bucket", (long long)cfg.tuned_m, cfg.name, chk.rel_err, tol);
    if (chk.bad != 0 || !(chk.rel_err <= tol))
      FT_FAIL_AT_("m=%d: %s: %d bad elements, rel_err %.3g > %.3g", m, cfg.name, (int)chk.bad, chk.rel_err, tol);
  }
  ft_pdata_free(d);
  ft_plan_destroy(plan);
}

int main(void) {
  if (!ft_test_have_gpu()) RETURN_SKIP("no CUDA device");
  char path[512];
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(path, sizeof path, "%s/gpu_buckets_%ld.db", tmp ? tmp : "/tmp", (long)getpid());
  ft_remove_database(path);
  ft_ctx *ctx = NULL;
  ASSERT_OK(ft_open(path, FT_OPEN_CREATE, &ctx));
  ft_problem bucket = {64, 256, 256, "biasrelu", FT_MATH_BF16};
  ft_tune_options opt = FT_TUNE_OPTIONS_INIT;
  opt.budget_s = 60;
  opt.repeats = 20;
  opt.max_candidates = 12;
  opt.quiet = 1;
  ft_config best;
  ft_status st = ft_tune(ctx, &bucket, &opt, &best);
  if (st != FT_OK) {
    fprintf(stderr, "ft_tune: %s\n", ft_errmsg(ctx));
    ft_close(ctx);
    ft_remove_database(path);
    RETURN_FAIL("tuning bucket 64 failed");
  }
  printf("bucket 64x256x256 bf16: %s (%s) %.4f ms\n", best.name, best.strategy, best.median_ms);
  ft_err e;
  ft_gpu *g = NULL;
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_gpu_open(0, &g, &e));
  ASSERT_OK(ft_ep_parse(bucket.epilogue, &ep, &e));
  if (g && ep) {
    for (int m = 33; m <= 64; m++) check_m(ctx, g, ep, m);
    check_m(ctx, g, ep, 100); /* beyond the last bucket: still 64's */
  }
  /* the exact key only: 40 was not tuned */
  ft_problem p40 = {40, 256, 256, "biasrelu", FT_MATH_BF16};
  ft_config cfg;
  ASSERT_EQ_INT(ft_lookup(ctx, &p40, FT_LOOKUP_EXACT, &cfg), FT_ERR_NOT_FOUND);
  ft_ep_free(ep);
  ft_gpu_close(g);
  ft_close(ctx);
  ft_remove_database(path);
  return FT_TEST_DONE();
}
