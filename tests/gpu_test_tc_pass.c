/* GPU: family tc_pass (src/family/tc/family_tc_pass.c), the reduction pass after fusedtune's own
 * tensor-core GEMM in 3xtf32. Each variant kind on ragged M and N (no tile width divides them):
 * softmax and log_softmax (held and row forms, N odd too), groupnorm with groups of 16 and 64
 * features, batchnorm (row and column forms, several tiles of rows) and two one-value row
 * reductions with a pool inside (the GEMM into the workspace, one chunk): every variant of the pruned space (the full
 * one for softmax), output and workspace NaN-poisoned, random non-zero inputs, against the float64
 * reference with the tuner's tolerance. Then one variant launched twice on other y pointers (the
 * GEMM's cached tensor maps follow them). */
#include <math.h>

#include "baseline.h"
#include "ft_test.h"
#include "gpu_launch_check.h"

typedef struct problem {
  const char *expr;
  int m, n, k;
  int full; /* the full space (more GEMMs per pass) */
} problem;

static const problem k_problems[] = {
    {"softmax(gelu(x + bias))", 1000, 4000, 1000, 1},
    {"softmax(x)", 333, 1001, 260, 0}, /* N odd: the pass's vec 1, the GEMM's odd-N stores */
    {"log_softmax(x + bias)", 517, 2056, 512, 0},
    {"groupnorm(x, 64)", 300, 1024, 512, 0},       /* 16 features a group */
    {"groupnorm(x * 2 + bias, 64)", 257, 4096, 256, 0}, /* 64 features */
    {"groupnorm(x, 256)", 129, 4096, 128, 0},      /* 16 features, 256 groups */
    {"batchnorm(x)", 3000, 520, 256, 0},           /* several tiles of rows, a partial strip */
    {"batchnorm(x + bias) * 2", 1000, 2056, 384, 0},
    {"rowsum(maxpool(sigmoid(x), 2))", 77, 1004, 40, 0}, /* a pool inside: tcr_ does not fuse it */
    {"logsumexp(avgpool(x + bias, 4))", 300, 5000, 256, 0},
    /* A matrix read by the pass: in place after a normalization, in a one-value reduction's argument
     * (tcr_ does not read matrices). */
    {"(groupnorm(x + bias, 1) + r) * r where mat r", 300, 1024, 256, 0},
    {"rowsum(x * r) where mat r", 77, 1001, 40, 0},
    {"softmax(batchnorm(x + bias) * 2)", 1000, 520, 256, 0}, /* the column-then-row form */
};
#define N_PROBLEMS (sizeof k_problems / sizeof k_problems[0])

/* Kinds of variants seen over the run: held, row, column, chunk. */
static int g_forms[4];

static int form_of(const ft_variant *v) { return v->red.team > 0 ? 0 : v->red.tile > 0 ? 2 : v->red.cols > 0 ? 3 : 1; }

/* Every tc_pass variant of pr, checked; returns how many. */
static int check_problem(ft_gpu *g, const problem *pr) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  double tol = 0, cublas_err = 0;
  ft_variant *v = NULL;
  int nv = 0;
  const ft_math math = FT_MATH_3XTF32;
  ft_status st = ft_ep_parse(pr->expr, &ep, &e);
  if (st == FT_OK) st = ft_pdata_create(g, pr->m, pr->n, pr->k, ep, math, 2718, &d, &e);
  if (st == FT_OK) st = ft_pdata_tolerance(g, d, &tol, &cublas_err, &e);
  /* As the tuner judges 3xtf32: raised to the fp32 chain's own error (cuBLAS SGEMM, then the
   * eager steps), which a normalization of few features amplifies past SGEMM's GEMM error. */
  ft_baselines *bl = NULL;
  if (st == FT_OK) st = ft_baselines_create(g, NULL, ep, d, &bl, &e);
  if (st == FT_OK) st = ft_baseline_chain_tolerance(bl, &tol, &e);
  ft_baselines_free(bl);
  if (st == FT_OK)
    st = ft_space_enumerate_ep(FT_VK_GEMM, pr->m, pr->n, pr->k, math, pr->full ? FT_SPACE_FULL : FT_SPACE_PRUNED, ep,
                               ft_gpu_limits(g), &v, NULL, &nv, &e);
  if (st == FT_OK && nv == 0) st = ft__fail(&e, FT_ERR_INTERNAL, "no tc_pass variant enumerated");
  if (st != FT_OK) {
    FT_FAIL_AT_("%s %dx%dx%d: setup: %s", pr->expr, pr->m, pr->n, pr->k, e.msg);
    free(v);
    ft_pdata_free(d);
    ft_ep_free(ep);
    return 0;
  }
  ft_kernel_src *src = calloc((size_t)nv, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)nv, sizeof *jobs);
  ASSERT_TRUE(src && jobs);
  for (int i = 0; src && jobs && i < nv; i++) {
    ASSERT_EQ_STR(ft_family_of(&v[i])->name, "tc_pass");
    ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[i], &e));
    jobs[i] = (ft_compile_job){.src = src[i].text, .hash = src[i].hash, .arch_suffix = src[i].arch_suffix};
  }
  if (src && jobs) ASSERT_OK(ft_compile_many(NULL, ft_gpu_arch(g), jobs, nv, 0, &e));
  double worst = 0;
  for (int i = 0; src && jobs && i < nv; i++) {
    char name[128];
    ft_variant_name(&v[i], name, sizeof name);
    ft_check chk = {0, 0, 0};
    if (jobs[i].status != FT_OK) {
      FT_FAIL_AT_("%s: %s does not compile: %.800s", pr->expr, name, jobs[i].log ? jobs[i].log : "");
    } else if ((st = ft_test_launch_check(g, &v[i], &jobs[i], &src[i], d, &chk, &e)) != FT_OK) {
      FT_FAIL_AT_("%s %dx%dx%d: %s: %s", pr->expr, pr->m, pr->n, pr->k, name, e.msg);
    } else if (chk.bad || !(chk.rel_err <= tol)) {
      FT_FAIL_AT_("%s %dx%dx%d: %s: rel_err %.3g > %.3g, %lld non-finite", pr->expr, pr->m, pr->n, pr->k, name,
                  chk.rel_err, tol, (long long)chk.bad);
    } else {
      g_forms[form_of(&v[i])]++;
    }
    if (chk.rel_err > worst) worst = chk.rel_err;
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  printf("  %-30s %5dx%-5dx%-5d %3d tc_pass variants, worst rel_err %.2e (tol %.2e, cuBLAS SGEMM + pass %.2e)\n",
         pr->expr, pr->m, pr->n, pr->k, nv, worst, tol, cublas_err);
  fflush(stdout); /* progress, also when a timeout ends the test */
  free(src);
  free(jobs);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
  return nv;
}

/* One variant launched on y, then on another y buffer, then on y again: each result right (the GEMM's
 * argument list, two tensor maps, is rebuilt when a pointer changes). */
static void check_moved_pointers(ft_gpu *g) {
  const problem pr = {"softmax(x + bias)", 200, 1000, 128, 0};
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  ft_variant *v = NULL;
  int nv = 0;
  double tol = 0, cublas_err = 0;
  ft_kernel_src src;
  memset(&src, 0, sizeof src);
  ft_compile_job job;
  memset(&job, 0, sizeof job);
  ft_launchable run;
  memset(&run, 0, sizeof run);
  void *other = NULL;
  ft_status st = ft_ep_parse(pr.expr, &ep, &e);
  if (st == FT_OK) st = ft_pdata_create(g, pr.m, pr.n, pr.k, ep, FT_MATH_3XTF32, 99, &d, &e);
  if (st == FT_OK) st = ft_pdata_tolerance(g, d, &tol, &cublas_err, &e);
  /* As the tuner judges 3xtf32: raised to the fp32 chain's own error (cuBLAS SGEMM, then the
   * eager steps), which a normalization of few features amplifies past SGEMM's GEMM error. */
  ft_baselines *bl = NULL;
  if (st == FT_OK) st = ft_baselines_create(g, NULL, ep, d, &bl, &e);
  if (st == FT_OK) st = ft_baseline_chain_tolerance(bl, &tol, &e);
  ft_baselines_free(bl);
  if (st == FT_OK)
    st = ft_space_enumerate_ep(FT_VK_GEMM, pr.m, pr.n, pr.k, FT_MATH_3XTF32, FT_SPACE_PRUNED, ep, ft_gpu_limits(g), &v,
                               NULL, &nv, &e);
  if (st == FT_OK && nv == 0) st = ft__fail(&e, FT_ERR_INTERNAL, "no variant");
  if (st == FT_OK) st = ft_codegen_variant(&v[0], ep, &src, &e);
  if (st == FT_OK) {
    job = (ft_compile_job){.src = src.text, .hash = src.hash, .arch_suffix = src.arch_suffix};
    st = ft_compile_many(NULL, ft_gpu_arch(g), &job, 1, 0, &e);
    if (st == FT_OK && job.status != FT_OK) st = ft__fail(&e, job.status, "compile: %.400s", job.log ? job.log : "");
  }
  if (st == FT_OK) st = ft_launchable_init(&run, g, &v[0], pr.m, pr.n, pr.k, job.cubin, job.cubin_size, src.kernel, src.reduce, &e);
  const size_t bytes = (size_t)pr.m * pr.n * sizeof(float);
  if (st == FT_OK && cudaMalloc(&other, bytes) != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "cudaMalloc");
  void *ys[3] = {d ? d->dY : NULL, other, d ? d->dY : NULL};
  for (int r = 0; r < 3 && st == FT_OK; r++) {
    ft_check chk = {0, 0, 0};
    st = ft_pdata_poison(d, 0, &e);
    if (st == FT_OK && cudaMemset(ys[r], 0xff, bytes) != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "poison");
    if (st == FT_OK) st = ft_launchable_enqueue(&run, d->dX, d->dW, ys[r], &d->args, 0, &e);
    if (st == FT_OK && cudaDeviceSynchronize() != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "kernel execution");
    if (st == FT_OK && ys[r] != d->dY && cudaMemcpy(d->dY, ys[r], bytes, cudaMemcpyDeviceToDevice) != cudaSuccess)
      st = ft__fail(&e, FT_ERR_CUDA, "copy");
    if (st == FT_OK) st = ft_pdata_check(d, &chk, &e);
    if (st == FT_OK && (chk.bad || !(chk.rel_err <= tol)))
      FT_FAIL_AT_("launch %d (y %s): rel_err %.3g > %.3g, %lld non-finite", r, r == 1 ? "moved" : "back", chk.rel_err, tol,
                  (long long)chk.bad);
  }
  if (st != FT_OK) FT_FAIL_AT_("moved pointers: %s", e.msg);
  if (other) cudaFree(other);
  ft_launchable_free(&run);
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
}

int main(void) {
  if (!ft_test_have_gpu()) RETURN_SKIP("no CUDA device");
  ft_err e;
  ft_gpu *g = NULL;
  if (ft_gpu_open(0, &g, &e) != FT_OK) RETURN_FAIL("ft_gpu_open: %s", e.msg);
  if (ft_gpu_limits(g)->cc_major != 9 || ft_gpu_limits(g)->cc_minor != 0) {
    ft_gpu_close(g);
    RETURN_SKIP("the tensor-core family needs compute capability 9.0");
  }
  int checked = 0;
  for (size_t i = 0; i < N_PROBLEMS; i++) checked += check_problem(g, &k_problems[i]);
  check_moved_pointers(g);
  printf("%d tc_pass variants checked (forms: %d held, %d row, %d column, %d one chunk correct)\n", checked, g_forms[0],
         g_forms[1], g_forms[2], g_forms[3]);
  for (int f = 0; f < 4; f++) ASSERT_TRUE(g_forms[f] > 0); /* every form ran */
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
