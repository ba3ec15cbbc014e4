/* GPU: groupnorm fused into the tensor-core GEMM where its groups lie whole in the tile (family
 * tc_norm, kernels_src/tc_norm.cuh). Groups of 2, 4, 8, 16 and 64 columns, with E's argument and
 * the rest of E around the normalization (bias, column vectors, a scalar, activations), on ragged M,
 * N not a multiple of the tile (the last tile holds fewer groups) and K not one of the k tile, in
 * bf16, fp16, tf32 and 3xtf32: every tc_norm variant of the pruned space, output NaN-poisoned,
 * against the float64 reference with the tuner's tolerance (in 3xtf32 set by the fp32 chain's
 * error); the same bits on a second launch. A variant up to twice the tolerance is the mode's
 * arithmetic, not a wrong index (a group of 2 columns amplifies tf32's GEMM error; a 3xtf32 chunk
 * of 16 k tiles sits at SGEMM's error): it is counted and printed, and the tuner refuses it there.
 * An indexing or synchronization bug is orders of magnitude beyond. FT_TEST_QUICK=1 (compute-sanitizer:
 * scripts/gpu/sanitize.sh) checks k_quick alone, one variant per form. */
#include <math.h>

#include "ft_test.h"
#include "gpu_launch_check.h"
#include "gpu_quick.h"

typedef struct problem {
  const char *expr;
  int m, n, k;
} problem;

static const problem k_problems[] = {
    {"groupnorm(x + bias, 65)", 77, 1040, 40},                                      /* 16 columns, 1040 = 8 x 128 + 16 */
    {"silu(groupnorm(x * 2 + bias, 130) * g + b) where col g, col b", 300, 1040, 264}, /* 8 */
    {"groupnorm(x, 260) * s where scalar s = 0.5", 129, 1040, 64},                   /* 4 */
    {"relu(groupnorm(x + bias, 520))", 33, 1040, 48},                               /* 2 */
    {"hardtanh(groupnorm(gelu(x + bias), 16), -2, 2)", 200, 1024, 128},             /* 64 */
    {"groupnorm(x + bias, 512)", 1000, 8192, 256},                                  /* KernelBench 62 and 75's kind */
};
#define N_PROBLEMS (sizeof k_problems / sizeof k_problems[0])

/* FT_TEST_QUICK=1: each group width in bf16, then tf32 and 3xtf32 once; M from 33 to 200 (one and two
 * consumers); in one problem a mode more k tiles than the first variant of each form has stages (the
 * producer waits for a stage's release), in another one partial k tile. */
static const struct {
  problem pr;
  ft_math math;
} k_quick[] = {
    {{"groupnorm(x + bias, 65)", 77, 1040, 600}, FT_MATH_BF16}, /* 16 columns; 10 k tiles of 64 */
    {{"silu(groupnorm(x * 2 + bias, 130) * g + b) where col g, col b", 200, 1040, 264}, FT_MATH_BF16}, /* 8 */
    {{"groupnorm(x, 260) * s where scalar s = 0.5", 129, 1040, 64}, FT_MATH_BF16},                   /* 4 */
    {{"relu(groupnorm(x + bias, 520))", 33, 1040, 40}, FT_MATH_BF16},                               /* 2 */
    {{"hardtanh(groupnorm(gelu(x + bias), 16), -2, 2)", 200, 1024, 128}, FT_MATH_BF16},             /* 64 */
    {{"groupnorm(x, 260) * s where scalar s = 0.5", 129, 1040, 264}, FT_MATH_TF32}, /* 9 k tiles of 32 */
    {{"groupnorm(x + bias, 65)", 77, 1040, 264}, FT_MATH_3XTF32},                  /* 9, in chunks of 2 to 16 */
};

/* quick: one variant per form (ft_test_stages_only). */
static int check_problem(ft_gpu *g, const problem *pr, ft_math math, int quick) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  ft_variant *v = NULL;
  int nv = 0, checked = 0, beyond = 0;
  double tol = 0;
  ft_status st = ft_ep_parse(pr->expr, &ep, &e);
  if (st == FT_OK) st = ft_pdata_create(g, pr->m, pr->n, pr->k, ep, math, 2024, &d, &e);
  if (st == FT_OK) st = ft_test_tuner_tolerance(g, ep, d, &tol, NULL, NULL, &e);
  if (st == FT_OK)
    st = ft_space_enumerate_ep(FT_VK_GEMM, pr->m, pr->n, pr->k, math, FT_SPACE_PRUNED, ep, ft_gpu_limits(g), &v, NULL,
                               &nv, &e);
  if (st != FT_OK) {
    FT_FAIL_AT_("%s %dx%dx%d %s: setup: %s", pr->expr, pr->m, pr->n, pr->k, ft_math_name(math), e.msg);
    free(v);
    ft_pdata_free(d);
    ft_ep_free(ep);
    return 0;
  }
  double worst = 0;
  const size_t bytes = (size_t)pr->m * (size_t)pr->n * (math == FT_MATH_BF16 || math == FT_MATH_FP16 ? 2 : 4);
  unsigned char *first = malloc(bytes), *again = malloc(bytes);
  ASSERT_TRUE(first && again);
  for (int i = 0; first && again && i < nv; i++) {
    if (v[i].family != FT_FAMILY_TC_NORM || (quick && ft_test_stages_only(v, i, &v[i]))) continue;
    char name[160];
    ft_variant_name(&v[i], name, sizeof name);
    ft_kernel_src src;
    ft_compile_job job;
    memset(&job, 0, sizeof job);
    ft_check chk = {0, 0, 0};
    st = ft_codegen_variant(&v[i], ep, &src, &e);
    if (st == FT_OK) {
      job = (ft_compile_job){.src = src.text, .hash = src.hash, .arch_suffix = src.arch_suffix};
      st = ft_compile_many(NULL, ft_gpu_arch(g), &job, 1, 0, &e);
      if (st == FT_OK && job.status != FT_OK) st = ft__fail(&e, job.status, "compile: %.600s", job.log ? job.log : "");
    }
    if (st == FT_OK) st = ft_test_launch_check(g, &v[i], &job, &src, d, &chk, &e);
    if (st == FT_OK && cudaMemcpy(first, d->dY, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
      st = ft__fail(&e, FT_ERR_CUDA, "copying y back");
    ft_check chk2 = {0, 0, 0};
    if (st == FT_OK) st = ft_test_launch_check(g, &v[i], &job, &src, d, &chk2, &e);
    if (st == FT_OK && cudaMemcpy(again, d->dY, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
      st = ft__fail(&e, FT_ERR_CUDA, "copying y back");
    if (st != FT_OK) {
      FT_FAIL_AT_("%s %dx%dx%d %s: %s: %s", pr->expr, pr->m, pr->n, pr->k, ft_math_name(math), name, e.msg);
    } else if (chk.bad || !(chk.rel_err <= 2 * tol)) {
      FT_FAIL_AT_("%s %dx%dx%d %s: %s: rel_err %.3g > %.3g, %lld non-finite", pr->expr, pr->m, pr->n, pr->k,
                  ft_math_name(math), name, chk.rel_err, tol, (long long)chk.bad);
    } else if (memcmp(first, again, bytes) != 0) {
      FT_FAIL_AT_("%s %s: %s: another launch, other bits", pr->expr, ft_math_name(math), name);
    }
    if (st == FT_OK && chk.rel_err > tol) beyond++;
    if (chk.rel_err > worst) worst = chk.rel_err;
    checked++;
    ft_compile_job_clear(&job);
    ft_kernel_src_free(&src);
  }
  printf("  %-58s %5dx%-5dx%-4d %-6s %3d tc_norm variants, worst rel_err %.2e (tol %.2e), %d beyond it (refused)\n",
         pr->expr, pr->m, pr->n, pr->k, ft_math_name(math), checked, worst, tol, beyond);
  fflush(stdout);
  free(first);
  free(again);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
  return checked;
}

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_HOPPER(g);
  static const ft_math modes[] = {FT_MATH_BF16, FT_MATH_FP16, FT_MATH_TF32, FT_MATH_3XTF32};
  int checked = 0;
  const int quick = ft_test_quick();
  for (size_t i = 0; quick && i < sizeof k_quick / sizeof k_quick[0]; i++) {
    const int c = check_problem(g, &k_quick[i].pr, k_quick[i].math, 1);
    if (!c) FT_FAIL_AT_("%s %s: no tc_norm variant enumerated", k_quick[i].pr.expr, ft_math_name(k_quick[i].math));
    checked += c;
  }
  for (size_t m = 0; !quick && m < sizeof modes / sizeof modes[0]; m++)
    for (size_t i = 0; i < N_PROBLEMS; i++) {
      const int c = check_problem(g, &k_problems[i], modes[m], 0);
      if (!c) FT_FAIL_AT_("%s %s: no tc_norm variant enumerated", k_problems[i].expr, ft_math_name(modes[m]));
      checked += c;
    }
  printf("%d tc_norm variants checked\n", checked);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
