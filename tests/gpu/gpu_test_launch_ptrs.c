/* GPU: ft_plan_launch_ptrs, the pointer entry point, without a tune: for the first fused variant
 * and the first cuBLAS + epilogue-pass variant of a bf16 problem whose epilogue has a col and a row
 * vector and a scalar, a plan is made from the variant's configuration and launched both ways
 * (names, pointers in slot order); each result is checked against float64 and the two compared
 * bitwise. Then its argument checks, and the host cost per launch of either entry point (printed
 * as BENCH, recorded in docs/BENCHMARKS.md). */
#include <time.h>
#include <unistd.h>

#include "ft_test.h"
#include "gpu_scratch_db.h"
#include "verify.h"

#define PTRS_EPILOGUE "silu(x * g + bias) + r * s where col g, row r, scalar s"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Host microseconds per launch over 10 rounds of 200 (synchronized between rounds, so the
 * launch queue never fills): the median round. */
static double host_us(ft_plan *plan, const ft_pdata *d, const ft_args *args) {
  double t[10];
  for (int r = 0; r < 10; r++) {
    cudaDeviceSynchronize();
    const double t0 = now_s();
    for (int i = 0; i < 200; i++) {
      if (args)
        ft_plan_launch(plan, args, 0);
      else
        ft_plan_launch_ptrs(plan, d->dX, d->dW, d->dY, d->args.v, d->args.s, 0);
    }
    t[r] = (now_s() - t0) / 200 * 1e6;
  }
  cudaDeviceSynchronize();
  for (int i = 1; i < 10; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      const double x = t[j];
      t[j] = t[j - 1], t[j - 1] = x;
    }
  return 0.5 * (t[4] + t[5]);
}

static void check_variant(ft_ctx *ctx, ft_gpu *g, const ft_problem *p, const ft_epilogue *ep,
                          const ft_variant_info *v) {
  ft_config cfg;
  memset(&cfg, 0, sizeof cfg);
  snprintf(cfg.strategy, sizeof cfg.strategy, "%s", ft_strategy_name(v->strategy));
  snprintf(cfg.name, sizeof cfg.name, "%s", v->name);
  snprintf(cfg.config, sizeof cfg.config, "%s", v->config);
  cfg.math = p->math;
  ft_plan *plan = NULL;
  ft_status st = ft_plan_create(ctx, p, &cfg, &plan);
  if (st != FT_OK) {
    FT_FAIL_AT_("ft_plan_create %s: %s", v->name, ft_errmsg(ctx));
    return;
  }
  ft_err e;
  ft_pdata *d = NULL;
  double tol = 0, cublas_err = 0;
  ASSERT_OK(ft_pdata_create(g, (int)p->m, (int)p->n, (int)p->k, ep, p->math, 77, &d, &e));
  ASSERT_OK(ft_pdata_tolerance(g, d, &tol, &cublas_err, &e));
  const size_t ybytes = (size_t)p->m * (size_t)p->n * d->elem;
  void *by_name = malloc(ybytes), *by_ptr = malloc(ybytes);
  ASSERT_TRUE(by_name && by_ptr);

  /* By name (ft_plan_launch), then by slot (ft_plan_launch_ptrs), each on a NaN-poisoned y. */
  ft_vec_arg vecs[3] = {{"bias", NULL}, {"g", NULL}, {"r", NULL}};
  for (int i = 0; i < 3; i++)
    for (int s = 0; s < ft_ep_param_count(ep); s++)
      if (!strcmp(ft_ep_param_at(ep, s)->name, vecs[i].name)) vecs[i].data = d->dvec[s];
  ft_scalar_arg scalars[1] = {{"s", 0}};
  for (int s = 0; s < ft_ep_param_count(ep); s++)
    if (!strcmp(ft_ep_param_at(ep, s)->name, "s")) scalars[0].value = d->args.s[s];
  ft_args args = {d->dX, d->dW, d->dY, vecs, 3, scalars, 1, d->dtype};
  ft_check chk[2];
  for (int way = 0; way < 2; way++) {
    ASSERT_OK(ft_pdata_poison(d, 0, &e));
    st = way ? ft_plan_launch_ptrs(plan, d->dX, d->dW, d->dY, d->args.v, d->args.s, 0) : ft_plan_launch(plan, &args, 0);
    if (st != FT_OK) FT_FAIL_AT_("%s %s: %s", way ? "ft_plan_launch_ptrs" : "ft_plan_launch", v->name, ft_errmsg(ctx));
    ASSERT_OK(cudaDeviceSynchronize());
    ASSERT_OK(ft_pdata_check(d, &chk[way], &e));
    ASSERT_OK(cudaMemcpy(way ? by_ptr : by_name, d->dY, ybytes, cudaMemcpyDeviceToHost));
    if (chk[way].bad != 0 || !(chk[way].rel_err <= tol))
      FT_FAIL_AT_("%s by %s: %d bad elements, rel_err %.3g > %.3g", v->name, way ? "pointers" : "names",
                  (int)chk[way].bad, chk[way].rel_err, tol);
  }
  ASSERT_TRUE(memcmp(by_name, by_ptr, ybytes) == 0);

  /* The pointer entry point's checks: nothing launched, a message naming what is wrong. */
  ASSERT_EQ_INT(ft_plan_launch_ptrs(plan, d->dX, d->dW, d->dY, NULL, d->args.s, 0), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "vector 'bias' (slot 0) is NULL");
  ASSERT_EQ_INT(ft_plan_launch_ptrs(plan, d->dX, d->dW, d->dY, d->args.v, NULL, 0), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "scalar 's'");
  ASSERT_EQ_INT(ft_plan_launch_ptrs(plan, NULL, d->dW, d->dY, d->args.v, d->args.s, 0), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "x, w and y must be set");
  ASSERT_EQ_INT(ft_plan_launch_ptrs(plan, (const char *)d->dX + 1, d->dW, d->dY, d->args.v, d->args.s, 0),
                FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "x is not");
  ASSERT_EQ_INT(ft_plan_launch_ptrs(NULL, d->dX, d->dW, d->dY, d->args.v, d->args.s, 0), FT_ERR_INVALID_ARG);

  const double us_ptrs = host_us(plan, d, NULL), us_args = host_us(plan, d, &args);
  printf("BENCH %-44s %-16s rel_err %.3g (tol %.3g); host us per launch: ft_plan_launch_ptrs %.2f, "
         "ft_plan_launch %.2f\n", v->name, cfg.strategy, chk[1].rel_err, tol, us_ptrs, us_args);
  free(by_name);
  free(by_ptr);
  ft_pdata_free(d);
  ft_plan_destroy(plan);
}

int main(void) {
  if (!ft_test_have_gpu()) RETURN_SKIP("no CUDA device");
  ft_gpu *g = NULL;
  FT_TEST_OPEN_GPU(g);
  char path[512];
  ft_ctx *ctx;
  gpu_scratch_db(path, sizeof path, "gpu_launch_ptrs", &ctx);
  const ft_problem p = {100, 264, 256, PTRS_EPILOGUE, FT_MATH_BF16};
  ft_err e;
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_ep_parse(p.epilogue, &ep, &e));
  ft_variant_list *list = NULL;
  char msg[256];
  ASSERT_OK(ft_variants(&p, NULL, 0, &list, msg, sizeof msg));
  int done[2] = {0, 0};
  for (int i = 0; list && i < list->count; i++) {
    const ft_variant_info *v = &list->items[i];
    const int kind = v->strategy == FT_STRATEGY_CUBLAS_EPILOGUE;
    if (done[kind] || (v->strategy != FT_STRATEGY_FUSED && !kind)) continue;
    check_variant(ctx, g, &p, ep, v);
    done[kind] = 1;
  }
  ASSERT_TRUE(done[0] && done[1]);
  ft_variant_list_free(list);
  ft_ep_free(ep);
  ft_close(ctx);
  ft_remove_database(path);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
