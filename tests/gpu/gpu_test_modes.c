/* Every math mode on the GPU: for each mode, ragged shapes and several epilogues, every baseline
 * (eager chain, cuBLAS GEMM alone against x W^T, the cuBLASLt epilogue where one matches) and
 * every enumerated epilogue-pass variant (after cuBLAS's GEMM of the mode) is within the mode's
 * tolerance (ft_pdata_tolerance; in 3xtf32 raised by ft_baseline_chain_tolerance) of the float64
 * reference, on poisoned output. Skips without a GPU. */
#include "baseline.h"
#include "codegen.h"
#include "compile.h"
#include "ft_test.h"
#include "launch.h"

typedef struct shape {
  int m, n, k;
} shape;

static const char *const k_epilogues[] = {"biasrelu", "gelu_tanh(x + bias)", "minsub", "x + bias + r where mat r",
                                          "silu(x) * s + bias * r where scalar s, row r", "biasgelu"};

static void judge(const char *what, const char *name, const ft_check *c, double tol) {
  if (c->bad != 0 || !(c->rel_err <= tol))
    FT_FAIL_AT_("%s %s: rel_err %.3g > tol %.3g or %lld non-finite (max_abs %.3g)", what, name, c->rel_err, tol,
                (long long)c->bad, c->max_abs_err);
}

/* Returns the eager chain's rel_err (NAN when it did not run). */
static double run_baselines(ft_baselines *bl, ft_pdata *d, double tol, const char *what) {
  ft_err e;
  double eager_err = NAN;
  for (int k = 0; k < FT_BL_COUNT; k++) {
    const char *desc = ft_baseline_describe(bl, (ft_baseline_kind)k);
    if (!ft_baseline_available(bl, (ft_baseline_kind)k)) {
      printf("  %-28s %s: not available\n", what, desc);
      continue;
    }
    ft_check c = {0, 0, 0};
    ft_status s = ft_pdata_poison(d, 0, &e);
    if (s == FT_OK) s = ft_baseline_enqueue(bl, (ft_baseline_kind)k, 0, &e);
    if (s == FT_OK) {
      const cudaError_t ce = cudaDeviceSynchronize();
      if (ce != cudaSuccess) s = ft_cuda_fail(&e, ce, "baseline execution");
    }
    if (s == FT_OK) s = k == FT_BL_CUBLAS_GEMM ? ft_pdata_check_gemm(d, &c, &e) : ft_pdata_check(d, &c, &e);
    if (s != FT_OK) {
      FT_FAIL_AT_("%s %s: %s", what, desc, e.msg);
      continue;
    }
    /* cuBLASLt's GELU epilogue approximates (H200: 1.64e-6 where SGEMM + the chain's gelu kernel
     * is at 3.1e-7): fine for fp32's 1e-5, short of 3xtf32's SGEMM-level bar, so there a
     * candidate like any other (rejected by the tuner), not a baseline the mode must meet. */
    const int informative = d->math == FT_MATH_3XTF32 && k == FT_BL_CUBLASLT;
    if (k == FT_BL_EAGER && c.bad == 0) eager_err = c.rel_err;
    printf("  %-28s %-52s rel_err %.3g%s\n", what, desc, c.rel_err,
           informative && c.rel_err > tol ? " (above 3xtf32's bar: not asserted)" : "");
    if (!informative) judge(what, desc, &c, tol);
  }
  return eager_err;
}

/* Every epilogue-pass variant of the mode, after cuBLAS's GEMM of the mode. */
static void run_passes(ft_gpu *g, const ft_epilogue *ep, ft_pdata *d, double tol, const char *what) {
  ft_err e;
  ft_variant *v = NULL;
  int nv = 0;
  if (ft_space_enumerate_math(FT_VK_EPILOGUE, d->m, d->n, d->k, d->math, ft_gpu_limits(g), &v, &nv, &e) != FT_OK) {
    FT_FAIL_AT_("%s: enumerate: %s", what, e.msg);
    return;
  }
  ft_kernel_src *src = calloc((size_t)nv, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)nv, sizeof *jobs);
  int n = 0, ok = 0;
  double worst = 0;
  for (int i = 0; src && jobs && i < nv; i++) {
    if (ft_codegen_variant(&v[i], ep, &src[n], &e) != FT_OK) {
      FT_FAIL_AT_("%s: codegen: %s", what, e.msg);
      continue;
    }
    jobs[n].src = src[n].text, jobs[n].hash = src[n].hash, jobs[n].arch_suffix = src[n].arch_suffix;
    v[n] = v[i];
    n++;
  }
  if (n && ft_compile_many(NULL, ft_gpu_arch(g), jobs, n, 0, &e) != FT_OK) {
    FT_FAIL_AT_("%s: compile: %s", what, e.msg);
    n = 0;
  }
  for (int i = 0; i < n; i++) {
    char name[128];
    ft_variant_name(&v[i], name, sizeof name);
    ft_launchable run;
    ft_check c = {0, 0, 0};
    ft_status s = jobs[i].status;
    if (s != FT_OK) ft__fail(&e, s, "does not compile: %.500s", jobs[i].log ? jobs[i].log : "");
    if (s == FT_OK)
      s = ft_launchable_init(&run, g, &v[i], d->m, d->n, d->k, jobs[i].cubin, jobs[i].cubin_size, src[i].kernel,
                             src[i].reduce, &e);
    if (s == FT_OK) {
      s = ft_launchable_check(&run, d->dX, d->dW, d->dY, name, &e);
      if (s == FT_OK) s = ft_pdata_poison(d, 0, &e);
      if (s == FT_OK) s = ft_launchable_enqueue(&run, d->dX, d->dW, d->dY, &d->args, 0, &e);
      if (s == FT_OK) {
        const cudaError_t ce = cudaDeviceSynchronize();
        if (ce != cudaSuccess) s = ft_cuda_fail(&e, ce, "epilogue pass execution");
      }
      if (s == FT_OK) s = ft_pdata_check(d, &c, &e);
      ft_launchable_free(&run);
    }
    if (s != FT_OK) {
      FT_FAIL_AT_("%s %s: %s", what, name, e.msg);
      continue;
    }
    judge(what, name, &c, tol);
    if (c.bad == 0 && c.rel_err <= tol) ok++;
    if (c.rel_err > worst) worst = c.rel_err;
  }
  printf("  %-28s %d of %d epilogue-pass variants within tolerance, worst rel_err %.3g\n", what, ok, nv, worst);
  for (int i = 0; i < n; i++) ft_compile_job_clear(&jobs[i]);
  for (int i = 0; i < n; i++) ft_kernel_src_free(&src[i]);
  free(src);
  free(jobs);
  free(v);
}

static void run_mode(ft_gpu *g, ft_math math, const shape *sh, const char *eptext) {
  char what[96];
  snprintf(what, sizeof what, "%s %dx%dx%d %s", ft_math_name(math), sh->m, sh->n, sh->k, eptext);
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  double tol = 0, cublas_err = 0;
  if (ft_ep_parse(eptext, &ep, &e) != FT_OK || ft_pdata_create(g, sh->m, sh->n, sh->k, ep, math, 77, &d, &e) != FT_OK ||
      ft_pdata_tolerance(g, d, &tol, &cublas_err, &e) != FT_OK) {
    FT_FAIL_AT_("%s: %s", what, e.msg);
  } else {
    ft_baselines *bl = NULL;
    const double rule = tol;
    if (ft_baselines_create(g, NULL, ep, d, &bl, &e) != FT_OK || ft_baseline_chain_tolerance(bl, &tol, &e) != FT_OK) {
      FT_FAIL_AT_("%s: baselines: %s", what, e.msg);
    } else {
      printf("%s: cuBLAS %s GEMM rel_err %.3g -> tolerance %.3g (the rule's %.3g)\n", what, ft_math_name(math),
             cublas_err, tol, rule);
      if (math == FT_MATH_FP32) ASSERT_NEAR(tol, FT_TOL_FP32, 0);
      else if (math == FT_MATH_3XTF32) ASSERT_TRUE(cublas_err > 0 && tol >= rule && tol <= FT_TOL_FP32);
      else ASSERT_TRUE(cublas_err > 0 && tol > cublas_err && tol == rule);
      const double eager_err = run_baselines(bl, d, tol, what);
      /* The tuner's tolerance is the rule's, raised in 3xtf32 to the chain's error where larger:
       * the chain run again here gives the same error (to 0.1 %), so the same tolerance. */
      ASSERT_NEAR(tol, ft_tolerance_with_chain(math, rule, eager_err), 1e-3 * tol);
      if (math == FT_MATH_3XTF32) ASSERT_TRUE(eager_err <= FT_TOL_FP32);
      run_passes(g, ep, d, tol, what);
    }
    ft_baselines_free(bl);
  }
  ft_pdata_free(d);
  ft_ep_free(ep);
}

int main(void) {
  if (!ft_test_have_gpu()) RETURN_SKIP("no CUDA device");
  ft_err e;
  ft_gpu *g = NULL;
  if (ft_gpu_open(0, &g, &e) != FT_OK) RETURN_FAIL("ft_gpu_open: %s", e.msg);
  /* 16-bit: K % 8 == 0 (cuBLAS's fast path) and an odd K; fp32 / tf32: all dimensions odd;
   * 3xtf32 also at longer K. (On the H200 SGEMM's error there stays under 3xtf32's 2^-20 floor,
   * 5.6e-7 at K 8192, so the chain's raise of the tolerance shows only at larger problems, e.g.
   * gelu at 4096^3 (docs/MODES.md); the assertions in run_mode hold either way.) */
  static const shape s16[] = {{127, 1000, 1000}, {129, 257, 515}}, s32[] = {{129, 257, 515}},
                     s3x[] = {{129, 257, 515}, {64, 264, 4096}, {512, 1024, 8192}};
  static const struct {
    ft_math math;
    const shape *shapes;
    int n;
  } runs[] = {
#define SHAPES(a) a, (int)(sizeof a / sizeof a[0])
      {FT_MATH_FP32, SHAPES(s32)}, {FT_MATH_TF32, SHAPES(s32)}, {FT_MATH_BF16, SHAPES(s16)},
      {FT_MATH_FP16, SHAPES(s16)}, {FT_MATH_3XTF32, SHAPES(s3x)},
#undef SHAPES
  };
  for (size_t ri = 0; ri < sizeof runs / sizeof runs[0]; ri++)
    for (int si = 0; si < runs[ri].n; si++)
      for (size_t ei = 0; ei < sizeof k_epilogues / sizeof k_epilogues[0]; ei++)
        run_mode(g, runs[ri].math, &runs[ri].shapes[si], k_epilogues[ei]);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
