/* GPU: the one-value row reductions fused into the tensor-core GEMM (family tc_reduce,
 * docs/EPILOGUE.md "Reductions"). Every kind on ragged M and N (no tile width divides 1001) in
 * bf16, fp16 and tf32, at M = 1 and over more N tiles than a warp has lanes (N = 5000) in bf16:
 * each variant of the space (the full one on the ragged shape in bf16), output and workspace
 * NaN-poisoned, against the float64 reference with the tuner's tolerance; at N = 5000 each gives
 * the same bits run to run. Rows of +inf give +inf from logsumexp. FT_TEST_QUICK=1 (compute-sanitizer:
 * scripts/gpu/sanitize.sh) checks k_quick alone, one variant per form. */
#include <math.h>

#include "ft_test.h"
#include "gpu_launch_check.h"
#include "gpu_quick.h"

static const char *const k_exprs[] = {
    "rowsum(sigmoid(x))",
    "rowmean(x + bias)",
    "rowmax(x) * 2",
    "-rowmin(x * r) where row r",
    "logsumexp(clamp(2 * (x + bias), -10, 10))",
    "logsumexp(x + bias)",
    "logsumexp(x + bias) * mish(logsumexp(x + bias))", /* one reduction, its value read twice */
};
#define N_EXPRS (sizeof k_exprs / sizeof k_exprs[0])

typedef struct shape {
  int m, n, k;
} shape;
static const shape k_shapes[] = {{77, 1001, 40}, {1, 4099, 64}, {200, 5000, 256}};

/* FT_TEST_QUICK=1, the pruned space on ragged shapes: a sum, a min with a row vector and a logsumexp
 * read twice in bf16, rowmean at M = 1, rowmax in tf32, logsumexp in 3xtf32 (every chunk form); more
 * k tiles than the first variant of each form has stages in bf16 and tf32 (the producer waits for a
 * stage's release); more N tiles than a warp has lanes, two consumers too, the same bits twice. */
static const struct {
  const char *expr;
  shape sh;
  ft_math math;
  int bits;
} k_quick[] = {
    {"rowsum(sigmoid(x))", {77, 1001, 600}, FT_MATH_BF16, 0}, /* 10 k tiles of 64 */
    {"-rowmin(x * r) where row r", {77, 1001, 40}, FT_MATH_BF16, 0},
    {"logsumexp(x + bias) * mish(logsumexp(x + bias))", {77, 1001, 40}, FT_MATH_BF16, 0},
    {"rowmean(x + bias)", {1, 4099, 64}, FT_MATH_BF16, 0},
    {"logsumexp(x + bias)", {129, 5000, 256}, FT_MATH_BF16, 1},
    {"rowmax(x) * 2", {77, 1001, 264}, FT_MATH_TF32, 0}, /* 9 k tiles of 32 */
    {"logsumexp(clamp(2 * (x + bias), -10, 10))", {77, 1001, 40}, FT_MATH_3XTF32, 0},
};

/* One launch of a compiled variant on fresh poison (output and workspace); y's m elements copied
 * to out (2 bytes each: bf16 and fp16 only). */
static ft_status launch_bits(ft_gpu *g, const ft_variant *v, const ft_compile_job *job, const ft_kernel_src *src,
                             ft_pdata *d, uint16_t *out, ft_err *e) {
  ft_launchable run;
  memset(&run, 0, sizeof run);
  FT_TRY(ft_launchable_init(&run, g, v, d->m, d->n, d->k, job->cubin, job->cubin_size, src->kernel, src->reduce, e));
  ft_status s = ft_pdata_poison(d, 0, e);
  if (s == FT_OK && run.ws && cudaMemset(run.ws, 0xff, run.geom.workspace_bytes) != cudaSuccess)
    s = ft__fail(e, FT_ERR_CUDA, "poisoning the workspace");
  if (s == FT_OK) s = ft_launchable_enqueue(&run, d->dX, d->dW, d->dY, &d->args, 0, e);
  if (s == FT_OK && cudaMemcpy(out, d->dY, (size_t)d->m * sizeof *out, cudaMemcpyDeviceToHost) != cudaSuccess)
    s = ft__fail(e, FT_ERR_CUDA, "copying y back");
  ft_launchable_free(&run);
  return s;
}

/* Every fused variant of expr on sh in math (full: of the full space, else the pruned one; quick: one
 * per form, ft_test_stages_only). bits: also launched twice more, the same bits. inf: every row must be +inf
 * (bf16) instead of matching the reference. Returns the variants checked. */
static int check_problem(ft_gpu *g, const char *expr, const shape *sh, ft_math math, int full, int bits, int inf,
                         int quick) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  double tol = 0, cublas_err = 0;
  ft_variant *v = NULL;
  int nv = 0;
  ft_status st = ft_ep_parse(expr, &ep, &e);
  if (st == FT_OK) st = ft_pdata_create(g, sh->m, sh->n, sh->k, ep, math, 4321, &d, &e);
  if (st == FT_OK) st = ft_pdata_tolerance(g, d, &tol, &cublas_err, &e);
  if (st == FT_OK)
    st = ft_space_enumerate_ep(FT_VK_GEMM, sh->m, sh->n, sh->k, math, full ? FT_SPACE_FULL : FT_SPACE_PRUNED, ep,
                               ft_gpu_limits(g), &v, NULL, &nv, &e);
  if (st == FT_OK && quick) {
    int kept = 0;
    for (int i = 0; i < nv; i++)
      if (!ft_test_stages_only(v, kept, &v[i])) v[kept++] = v[i];
    nv = kept;
  }
  if (st == FT_OK && nv == 0) st = ft__fail(&e, FT_ERR_INTERNAL, "no fused variant enumerated");
  if (st != FT_OK) {
    FT_FAIL_AT_("%s %dx%dx%d %s: setup: %s", expr, sh->m, sh->n, sh->k, ft_math_name(math), e.msg);
    free(v);
    ft_pdata_free(d);
    ft_ep_free(ep);
    return 0;
  }
  ft_kernel_src *src = calloc((size_t)nv, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)nv, sizeof *jobs);
  uint16_t *a = calloc((size_t)sh->m, 2), *b = calloc((size_t)sh->m, 2);
  ASSERT_TRUE(src && jobs && a && b);
  for (int i = 0; src && jobs && i < nv; i++) {
    ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[i], &e));
    ASSERT_TRUE(strncmp(ft_family_of(&v[i])->name, "tc_reduce", 10) == 0);
    jobs[i] = (ft_compile_job){.src = src[i].text, .hash = src[i].hash, .arch_suffix = src[i].arch_suffix};
  }
  if (src && jobs) ASSERT_OK(ft_compile_many(NULL, ft_gpu_arch(g), jobs, nv, 0, &e));
  double worst = 0;
  for (int i = 0; src && jobs && a && b && i < nv; i++) {
    char name[96];
    ft_variant_name(&v[i], name, sizeof name);
    ft_check chk = {0, 0, 0};
    if (jobs[i].status != FT_OK) {
      FT_FAIL_AT_("%s: %s does not compile: %.800s", expr, name, jobs[i].log ? jobs[i].log : "");
    } else if (inf) {
      st = launch_bits(g, &v[i], &jobs[i], &src[i], d, a, &e);
      int not_inf = 0;
      for (int r = 0; st == FT_OK && r < sh->m; r++) not_inf += a[r] != 0x7F80; /* bf16 +inf */
      if (st != FT_OK) FT_FAIL_AT_("%s: %s: %s", expr, name, e.msg);
      else if (not_inf) FT_FAIL_AT_("%s: %s: %d of %d rows of +inf give bits 0x%04x, not +inf", expr, name, not_inf, sh->m, a[0]);
    } else if ((st = ft_test_launch_check(g, &v[i], &jobs[i], &src[i], d, &chk, &e)) != FT_OK) {
      FT_FAIL_AT_("%s %dx%dx%d %s: %s: %s", expr, sh->m, sh->n, sh->k, ft_math_name(math), name, e.msg);
    } else if (chk.bad || !(chk.rel_err <= tol)) {
      FT_FAIL_AT_("%s %dx%dx%d %s: %s: rel_err %.3g > %.3g, %lld non-finite", expr, sh->m, sh->n, sh->k,
                  ft_math_name(math), name, chk.rel_err, tol, (long long)chk.bad);
    } else if (bits) {
      st = launch_bits(g, &v[i], &jobs[i], &src[i], d, a, &e);
      if (st == FT_OK) st = launch_bits(g, &v[i], &jobs[i], &src[i], d, b, &e);
      if (st != FT_OK) FT_FAIL_AT_("%s: %s: %s", expr, name, e.msg);
      else if (memcmp(a, b, (size_t)sh->m * 2) != 0) FT_FAIL_AT_("%s: %s: other bits on the second run", expr, name);
    }
    if (chk.rel_err > worst) worst = chk.rel_err;
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  printf("  %-42s %5dx%-5dx%-4d %-5s %2d fused variants, worst rel_err %.2e (tol %.2e)%s%s\n", expr, sh->m, sh->n, sh->k,
         ft_math_name(math), nv, worst, tol, bits ? ", same bits twice" : "", inf ? ", +inf rows" : "");
  fflush(stdout); /* progress, also when a timeout ends the test */
  free(a);
  free(b);
  free(src);
  free(jobs);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
  return nv;
}

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_HOPPER(g);
  static const ft_math maths[] = {FT_MATH_BF16, FT_MATH_FP16, FT_MATH_TF32, FT_MATH_3XTF32};
  int checked = 0;
  if (ft_test_quick()) { /* under compute-sanitizer: k_quick, no more */
    for (size_t i = 0; i < sizeof k_quick / sizeof k_quick[0]; i++)
      checked += check_problem(g, k_quick[i].expr, &k_quick[i].sh, k_quick[i].math, 0, k_quick[i].bits, 0, 1);
    printf("%d fused variants checked (quick)\n", checked);
    ft_gpu_close(g);
    return FT_TEST_DONE();
  }
  /* x * 1e30 * 1e30 overflows to +inf wherever x > 0: rows holding +inf many times. */
  const shape inf_shape = {33, 1001, 40};
  checked += check_problem(g, "logsumexp(x * 1e30 * 1e30)", &inf_shape, FT_MATH_BF16, 0, 0, 1, 0);
  /* The full space on the ragged shape in bf16; the pruned one (what a default tune measures)
   * elsewhere, which keeps the test near a minute. */
  for (size_t s = 0; s < sizeof k_shapes / sizeof k_shapes[0]; s++)
    for (size_t mi = 0; mi < (s == 0 ? 4u : 1u); mi++)
      for (size_t i = 0; i < N_EXPRS; i++)
        checked += check_problem(g, k_exprs[i], &k_shapes[s], maths[mi], s == 0 && mi == 0, s == 2, 0, 0);
  printf("%d fused variants checked\n", checked);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
