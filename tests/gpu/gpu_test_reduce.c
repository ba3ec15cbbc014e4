/* GPU: the row reductions, groupnorm, batchnorm and the pools (alone and inside a row reduction;
 * docs/EPILOGUE.md, "Reductions") after cuBLAS's GEMM
 * (groupnorm where G divides N: 1 group always, 7 of 143 at N = 1001, 16 of 256 at 4096). Every kind, in
 * every math mode on a ragged N (not a multiple of 2), in fp32 and bf16 also at M = 1 and on an
 * aligned shape: each
 * reduction-pass variant the tune would measure, output and workspace NaN-poisoned, against the
 * float64 reference with the tuner's tolerance; the eager chain (a kernel per op) too. A chunked
 * logsumexp gives the same bits run to run; rows of +inf give +inf. Then a tune of logsumexp(x + bias) and of a softmax
 * end to end: stored best (the pass or, for logsumexp, tests/gpu/gpu_test_reduce_tc.c's fused kernel), plan,
 * launch, check. FT_TEST_QUICK=1 (compute-sanitizer: scripts/gpu/sanitize.sh) checks k_quick alone. */
#include <math.h>
#include <unistd.h>

#include "baseline.h"
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
    "gelu(softmax(x + bias))",
    "log_softmax(x) * g where col g",
    "silu(groupnorm(x + bias, 1) * g + b) where col g, col b",
    "groupnorm(x * 2, 7)",
    "groupnorm(x, 16) + bias",
    "silu(batchnorm(x + bias) * g + b) where col g, col b",
    "batchnorm(x * 2) + bias",
    "relu(maxpool(x + bias, 3)) * r where row r",
    "avgpool(x, 4) * 2",
    "logsumexp(avgpool(x * g, 4) * r) where col g, row r",
    "rowmean(sigmoid(maxpool(x, 5)))",
    /* Groups of 16, 32, 64 and 512 features at N = 2048 (256, 64, 128 and 1024 at 4096; 130 and
     * 65 at 520), held form included. */
    "groupnorm(x + bias, 128)",
    "groupnorm(x, 64)",
    "relu(groupnorm(x, 32)) * g where col g",
    "groupnorm(x, 8)",
    "groupnorm(x + bias, 4)",
    /* 91 groups of 11 at N = 1001: a team of lanes per group, element by element (11 is no vector). */
    "groupnorm(x + bias, 91)",
    "log_softmax(gelu(x + bias))",
    /* A reduction written twice with the same argument: one, its value read twice. */
    "logsumexp(x + bias) * mish(logsumexp(x + bias))",
    "groupnorm(x, 16) * sigmoid(groupnorm(x, 16))",
    "rowsum(maxpool(x, 2) * maxpool(x, 2))",
    /* A matrix (`mat r`) read inside or after the reduction's argument, where y keeps N columns. */
    "(groupnorm(x + bias, 1) + r) * r where mat r",
    "softmax(x + r) * r where mat r",
    "log_softmax(x * r) where mat r",
    "relu(groupnorm(x + r, 16)) - r where mat r",
    "batchnorm(x + r) - r where mat r",
    "rowsum(x * r) where mat r",
    "maxpool(x * r, 2) where mat r",
    /* Softmax of batchnorm's values: the column-then-row form (red_..._r<tile>_n). */
    "softmax(batchnorm(x + bias) * s) where col s",
    "log_softmax(batchnorm(x * r) - r) where mat r",
};
#define N_EXPRS (sizeof k_exprs / sizeof k_exprs[0])

typedef struct shape {
  int m, n, k;
} shape;
/* The last two: M not a multiple of batchnorm's tiles (1000 rows: several tiles, the last partial),
 * N not of its strips (520 = 2 x 256 + 8). */
static const shape k_shapes[] = {{77, 1001, 40}, {1, 4099, 64}, {64, 4096, 128}, {33, 2048, 72}, {1000, 520, 32}};

/* FT_TEST_QUICK=1: a few small ragged problems, each form once at least: the one-value kinds in one
 * chunk (vec 1) and in chunks of 1024 columns with a 2-column tail; softmax, log_softmax and
 * groupnorm a block per row and held (teams of 2 lanes to 1024 threads); batchnorm's column form
 * (tiles of 64 to 256 over 200 rows, strips of 256 columns and 8 more); the pools, alone and in a
 * row reduction; softmax of batchnorm's values; a matrix operand. The pruned space: the blocks a
 * default tune measures, every held and column form. */
static const struct {
  const char *expr;
  shape sh;
  ft_math math;
} k_quick[] = {
    {"rowsum(sigmoid(x))", {77, 1001, 40}, FT_MATH_FP32},
    {"logsumexp(x + bias)", {33, 2050, 40}, FT_MATH_BF16},
    {"gelu(softmax(x + bias))", {77, 1001, 40}, FT_MATH_FP32},
    {"log_softmax(x) * g where col g", {200, 520, 32}, FT_MATH_BF16},
    {"groupnorm(x + bias, 8)", {77, 520, 40}, FT_MATH_BF16},
    {"groupnorm(x + bias, 91)", {77, 1001, 40}, FT_MATH_BF16},
    {"silu(batchnorm(x + bias) * g + b) where col g, col b", {200, 520, 32}, FT_MATH_BF16},
    {"relu(maxpool(x + bias, 3)) * r where row r", {77, 1001, 40}, FT_MATH_BF16},
    {"logsumexp(avgpool(x * g, 4) * r) where col g, row r", {33, 2050, 40}, FT_MATH_FP32},
    {"log_softmax(batchnorm(x * r) - r) where mat r", {200, 520, 32}, FT_MATH_FP32},
    {"rowsum(x * r) where mat r", {33, 2050, 40}, FT_MATH_FP32},
};

/* Every pass variant of expr on sh in math (of the space sp), and the eager chain. Returns the variants
 * checked. */
static int check_problem(ft_gpu *g, const char *expr, const shape *sh, ft_math math, ft_space_scope sp) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  double tol = 0, cublas_err = 0;
  ft_status st = ft_ep_parse(expr, &ep, &e);
  if (st == FT_OK && ft_ep_output_shape(ep, sh->m, sh->n, NULL, NULL, NULL, NULL) != FT_OK) { /* G does not divide N */
    ft_ep_free(ep);
    return 0;
  }
  if (st == FT_OK) st = ft_pdata_create(g, sh->m, sh->n, sh->k, ep, math, 4321, &d, &e);
  if (st == FT_OK) st = ft_pdata_tolerance(g, d, &tol, &cublas_err, &e);
  ft_variant *v = NULL;
  int nv = 0;
  if (st == FT_OK)
    st = ft_space_enumerate_ep(FT_VK_EPILOGUE, sh->m, sh->n, sh->k, math, sp, ep, ft_gpu_limits(g), &v, NULL, &nv, &e);
  if (st != FT_OK) {
    FT_FAIL_AT_("%s %dx%dx%d %s: setup: %s", expr, sh->m, sh->n, sh->k, ft_math_name(math), e.msg);
    ft_pdata_free(d);
    ft_ep_free(ep);
    return 0;
  }
  ft_kernel_src *src = calloc((size_t)nv, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)nv, sizeof *jobs);
  for (int i = 0; src && jobs && i < nv; i++) {
    ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[i], &e));
    jobs[i] = (ft_compile_job){.src = src[i].text, .hash = src[i].hash};
  }
  if (src && jobs) ASSERT_OK(ft_compile_many(NULL, ft_gpu_arch(g), jobs, nv, 0, &e));
  double worst = 0;
  for (int i = 0; src && jobs && i < nv; i++) {
    char name[96];
    ft_variant_name(&v[i], name, sizeof name);
    ft_check chk = {0, 0, 0};
    if (jobs[i].status != FT_OK) {
      FT_FAIL_AT_("%s: %s does not compile: %.800s", expr, name, jobs[i].log ? jobs[i].log : "");
    } else if ((st = ft_test_launch_check(g, &v[i], &jobs[i], &src[i], d, &chk, &e)) != FT_OK) {
      FT_FAIL_AT_("%s %dx%dx%d %s: %s: %s", expr, sh->m, sh->n, sh->k, ft_math_name(math), name, e.msg);
    } else if (chk.bad || !(chk.rel_err <= tol)) {
      FT_FAIL_AT_("%s %dx%dx%d %s: %s: rel_err %.3g > %.3g, %lld non-finite", expr, sh->m, sh->n, sh->k,
                  ft_math_name(math), name, chk.rel_err, tol, (long long)chk.bad);
    }
    if (chk.rel_err > worst) worst = chk.rel_err;
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  /* The eager chain: GEMM (+ bias), a kernel per elementwise op, one per reduction. */
  ft_baselines *bl = NULL;
  ft_check chk = {0, 0, 0};
  st = ft_baselines_create(g, NULL, ep, d, &bl, &e);
  if (st == FT_OK && ft_baseline_available(bl, FT_BL_EAGER)) {
    st = ft_pdata_poison(d, 0, &e);
    if (st == FT_OK) st = ft_baseline_enqueue(bl, FT_BL_EAGER, 0, &e);
    if (st == FT_OK) st = cudaDeviceSynchronize() == cudaSuccess ? FT_OK : FT_ERR_CUDA;
    if (st == FT_OK) st = ft_pdata_check(d, &chk, &e);
    /* The chain rounds each step's output to the mode's type, as PyTorch's does; in bf16 and fp16 a
     * reduction of those rounded values with cancellation exceeds the GEMM's rule (rowsum(x * r) at
     * 1x4099x64 bf16: 0.016 against 0.00726 on an H100). What this guards is the chain's plumbing,
     * which, broken, is off by O(1). */
    const double chain_tol = math == FT_MATH_BF16 || math == FT_MATH_FP16 ? 4 * tol : tol;
    if (st == FT_OK && (chk.bad || !(chk.rel_err <= chain_tol)))
      FT_FAIL_AT_("%s %s: eager chain rel_err %.3g > %.3g", expr, ft_math_name(math), chk.rel_err, chain_tol);
  }
  if (st != FT_OK) FT_FAIL_AT_("%s %s: eager chain: %s", expr, ft_math_name(math), e.msg);
  printf("  %-42s %5dx%-5dx%-4d %-6s %2d passes, worst rel_err %.2e, eager %.2e (tol %.2e)\n", expr, sh->m, sh->n,
         sh->k, ft_math_name(math), nv, worst, chk.rel_err, tol);
  ft_baselines_free(bl);
  free(src);
  free(jobs);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
  return nv;
}

/* y after one launch of variant v of ep on d's inputs, output poisoned first, into host (d->out_count
 * elements of d->elem bytes). */
static ft_status run_variant(ft_gpu *g, const ft_variant *v, const ft_epilogue *ep, ft_pdata *d, void *host,
                             ft_err *e) {
  ft_kernel_src src = {0};
  ft_compile_job job = {0};
  ft_launchable run;
  memset(&run, 0, sizeof run);
  ft_status st = ft_codegen_variant(v, ep, &src, e);
  if (st == FT_OK) {
    job = (ft_compile_job){.src = src.text, .hash = src.hash, .arch_suffix = src.arch_suffix};
    st = ft_compile_source(NULL, ft_gpu_arch(g), &job, "reduce test", e);
  }
  if (st == FT_OK)
    st = ft_launchable_init_ep(&run, g, v, ep, d->m, d->n, d->k, job.cubin, job.cubin_size, src.kernel, src.reduce, e);
  if (st == FT_OK && run.ws && cudaMemset(run.ws, 0xff, run.geom.workspace_bytes) != cudaSuccess)
    st = ft__fail(e, FT_ERR_CUDA, "poisoning the workspace");
  if (st == FT_OK) st = ft_pdata_poison(d, 0, e);
  if (st == FT_OK) st = ft_launchable_enqueue(&run, d->dX, d->dW, d->dY, &d->args, 0, e);
  if (st == FT_OK && cudaMemcpy(host, d->dY, (size_t)d->out_count * d->elem, cudaMemcpyDeviceToHost) != cudaSuccess)
    st = ft__fail(e, FT_ERR_CUDA, "copy back");
  ft_launchable_free(&run);
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  return st;
}

static double as_float(const void *p, size_t elem) {
  float x;
  uint32_t u = 0;
  if (elem == 2) {
    uint16_t h;
    memcpy(&h, p, 2);
    u = (uint32_t)h << 16;
    memcpy(&x, &u, 4);
  } else {
    memcpy(&x, p, 4);
  }
  return x;
}

/* Two elements the same bits, or both NaN (of any payload). */
static int same_value(const void *a, const void *b, size_t elem) {
  float x, y;
  if (elem == 2) {
    uint16_t p, q;
    memcpy(&p, a, 2), memcpy(&q, b, 2);
    if (p == q) return 1;
    const uint32_t u = (uint32_t)p << 16, w = (uint32_t)q << 16; /* bf16: NaN as a float NaN */
    memcpy(&x, &u, 4), memcpy(&y, &w, 4);
  } else {
    if (memcmp(a, b, 4) == 0) return 1;
    memcpy(&x, a, 4), memcpy(&y, b, 4);
  }
  return isnan(x) && isnan(y);
}

/* Every in-place variant of expr (the held and column forms among them) on an m x n problem: run
 * twice, the same bits each time; and, where same_as_first, the same values as the first variant
 * (the block-per-row form), NaN as NaN: rows of +-inf, whose results do not depend on the order of
 * the sums; where all_nan, NaN everywhere (softmax of rows whose max is +inf, as torch gives). */
static void check_forms_bits(ft_gpu *g, const char *expr, int m, int n, int k, ft_math math, int same_as_first,
                             int all_nan) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  ft_variant *v = NULL;
  int nv = 0, checked = 0;
  ft_status st = ft_ep_parse(expr, &ep, &e);
  if (st == FT_OK) st = ft_pdata_create(g, m, n, k, ep, math, 31, &d, &e);
  if (st == FT_OK)
    st = ft_space_enumerate_ep(FT_VK_EPILOGUE, m, n, k, math, FT_SPACE_FULL, ep, ft_gpu_limits(g), &v, NULL, &nv, &e);
  const size_t bytes = st == FT_OK ? (size_t)d->out_count * d->elem : 0;
  unsigned char *first = malloc(bytes + 1), *a = malloc(bytes + 1), *b = malloc(bytes + 1);
  int have_first = 0;
  for (int i = 0; st == FT_OK && first && a && b && i < nv; i++) {
    if (v[i].red.cols) continue;
    char name[96];
    ft_variant_name(&v[i], name, sizeof name);
    st = run_variant(g, &v[i], ep, d, a, &e);
    if (st == FT_OK) st = run_variant(g, &v[i], ep, d, b, &e);
    if (st != FT_OK) break;
    if (memcmp(a, b, bytes) != 0) FT_FAIL_AT_("%s %dx%d: %s gives other bits on a second run", expr, m, n, name);
    if (same_as_first && !have_first) memcpy(first, a, bytes), have_first = 1;
    int differ = 0;
    int64_t at = -1;
    for (int64_t j = 0; same_as_first && j < d->out_count; j++)
      if (!same_value(first + j * d->elem, a + j * d->elem, d->elem)) differ++, at = at < 0 ? j : at;
    int64_t finite = 0;
    for (int64_t j = 0; all_nan && j < d->out_count; j++) finite += !isnan(as_float(a + j * d->elem, d->elem));
    if (finite) FT_FAIL_AT_("%s %dx%d: %s gives %lld values not NaN (every row holds +inf)", expr, m, n, name, (long long)finite);
    if (differ)
      FT_FAIL_AT_("%s %dx%d: %s differs from the first variant at %d elements, first at %lld: %g, not %g", expr, m, n,
                  name, differ, (long long)at, as_float(a + at * d->elem, d->elem), as_float(first + at * d->elem, d->elem));
    checked++;
  }
  if (st != FT_OK) FT_FAIL_AT_("%s %dx%d: %s", expr, m, n, e.msg);
  else printf("  %-36s %5dx%-5d %s: %d in-place variants, the same bits run to run%s\n", expr, m, n,
              ft_math_name(math), checked, same_as_first ? ", the same values as the block-per-row form" : "");
  free(first), free(a), free(b);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
}

/* A chunked logsumexp twice on the same inputs: the same bits (fixed chunk order and trees). */
static void check_deterministic(ft_gpu *g) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  ASSERT_OK(ft_ep_parse("logsumexp(x + bias)", &ep, &e));
  if (!ep || ft_pdata_create(g, 300, 5000, 256, ep, FT_MATH_BF16, 99, &d, &e) != FT_OK) {
    FT_FAIL_AT_("determinism setup: %s", e.msg);
    ft_ep_free(ep);
    return;
  }
  const ft_variant v = {.kind = FT_VK_EPILOGUE, .family = FT_FAMILY_REDUCE_PASS, .math = FT_MATH_BF16, .vec = 8, .red = {.block = 256, .cols = 1024}};
  uint16_t a[300], b[300];
  ft_status st = run_variant(g, &v, ep, d, a, &e);
  if (st == FT_OK) st = run_variant(g, &v, ep, d, b, &e);
  if (st != FT_OK) FT_FAIL_AT_("determinism: %s", e.msg);
  else ASSERT_TRUE(memcmp(a, b, sizeof a) == 0);
  ft_pdata_free(d);
  ft_ep_free(ep);
}

/* Rows full of +inf (x * 1e30 * 1e30 overflows wherever x > 0): every pass variant's logsumexp is
 * +inf, as torch gives, never the NaN of exp(inf - inf) (the verify check skips non-finite
 * references, so this looks at the bits). */
static void check_inf_rows(ft_gpu *g) {
  enum { M = 33, N = 1001, K = 40 };
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  ft_variant *v = NULL;
  int nv = 0;
  ft_status st = ft_ep_parse("logsumexp(x * 1e30 * 1e30)", &ep, &e);
  if (st == FT_OK) st = ft_pdata_create(g, M, N, K, ep, FT_MATH_FP32, 5, &d, &e);
  if (st == FT_OK)
    st = ft_space_enumerate_ep(FT_VK_EPILOGUE, M, N, K, FT_MATH_FP32, FT_SPACE_FULL, ep, ft_gpu_limits(g), &v, NULL, &nv, &e);
  for (int i = 0; st == FT_OK && i < nv; i++) {
    char name[96];
    ft_variant_name(&v[i], name, sizeof name);
    float y[M];
    st = run_variant(g, &v[i], ep, d, y, &e);
    int not_inf = 0;
    for (int r = 0; st == FT_OK && r < M; r++) not_inf += !(isinf(y[r]) && y[r] > 0);
    if (st == FT_OK && not_inf) FT_FAIL_AT_("%s: %d of %d rows of +inf give %g, not +inf", name, not_inf, M, y[0]);
  }
  if (st != FT_OK) FT_FAIL_AT_("inf rows: %s", e.msg);
  else printf("  logsumexp of +inf rows: +inf in %d pass variants\n", nv);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
}

/* A tune stores a reduction pass; its plan, launched on fresh inputs, matches float64. */
static void check_tune(ft_ctx *ctx, ft_gpu *g, const char *expr, int m, int n, int k, ft_math math) {
  ft_problem p = {m, n, k, expr, math};
  ft_tune_options opt = FT_TUNE_OPTIONS_INIT;
  opt.budget_s = 30;
  opt.repeats = 20;
  opt.quiet = 1;
  ft_config best;
  if (ft_tune(ctx, &p, &opt, &best) != FT_OK) {
    FT_FAIL_AT_("tune %s: %s", expr, ft_errmsg(ctx));
    return;
  }
  /* The reduction pass after cuBLAS, or (one-value reductions) the tensor-core GEMM with it fused,
   * or (3xtf32, which may serve fp32) the pass after the tensor-core GEMM. */
  if (strcmp(best.strategy, "fused") == 0)
    ASSERT_TRUE(strncmp(best.name, "tcr_", 4) == 0 || strncmp(best.name, "tcp_", 4) == 0);
  else
    ASSERT_TRUE(strcmp(best.strategy, "cublas+epilogue") == 0 && strncmp(best.name, "red_", 4) == 0);
  printf("  tune %s %dx%dx%d %s: %s %.4f ms, eager %.4f ms (%.2fx)\n", expr, m, n, k, ft_math_name(math), best.name,
         best.median_ms, best.eager_ms, best.eager_ms > 0 ? best.eager_ms / best.median_ms : 0.0);
  ft_plan *plan = NULL;
  if (ft_plan_create(ctx, &p, &best, &plan) != FT_OK) {
    FT_FAIL_AT_("plan %s: %s", best.name, ft_errmsg(ctx));
    return;
  }
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  double tol = 0, cublas_err = 0;
  ft_status st = ft_ep_parse(expr, &ep, &e);
  if (st == FT_OK) st = ft_pdata_create(g, m, n, k, ep, math, 777, &d, &e);
  if (st == FT_OK) st = ft_pdata_tolerance(g, d, &tol, &cublas_err, &e);
  if (st == FT_OK) st = ft_pdata_poison(d, 0, &e);
  if (st == FT_OK) {
    ft_vec_arg vecs[2];
    int nv = 0;
    for (int s = 0; s < ft_ep_param_count(ep); s++)
      if (ft_ep_param_at(ep, s)->kind != FT_PARAM_SCALAR) vecs[nv++] = (ft_vec_arg){ft_ep_param_at(ep, s)->name, d->dvec[s]};
    ft_args args = {d->dX, d->dW, d->dY, vecs, nv, NULL, 0, ft_math_dtype(math)};
    if (ft_plan_launch(plan, &args, 0) != FT_OK) FT_FAIL_AT_("launch %s: %s", best.name, ft_errmsg(ctx));
    ASSERT_OK(cudaDeviceSynchronize());
    ft_check chk = {0, 0, 0};
    ASSERT_OK(ft_pdata_check(d, &chk, &e));
    if (chk.bad || !(chk.rel_err <= tol)) FT_FAIL_AT_("plan %s: rel_err %.3g > %.3g", best.name, chk.rel_err, tol);
  } else {
    FT_FAIL_AT_("tune check %s: %s", expr, e.msg);
  }
  ft_pdata_free(d);
  ft_ep_free(ep);
  ft_plan_destroy(plan);
}

int main(void) {
  if (!ft_test_have_gpu()) RETURN_SKIP("no CUDA device");
  ft_err e;
  ft_gpu *g = NULL;
  if (ft_gpu_open(0, &g, &e) != FT_OK) RETURN_FAIL("ft_gpu_open: %s", e.msg);
  int checked = 0;
  if (ft_test_quick()) { /* under compute-sanitizer: k_quick, no more */
    for (size_t i = 0; i < sizeof k_quick / sizeof k_quick[0]; i++) {
      const int c = check_problem(g, k_quick[i].expr, &k_quick[i].sh, k_quick[i].math, FT_SPACE_PRUNED);
      if (!c) FT_FAIL_AT_("%s: no pass variant enumerated", k_quick[i].expr);
      checked += c;
    }
    printf("%d pass variants checked (quick)\n", checked);
    ft_gpu_close(g);
    return FT_TEST_DONE();
  }
  /* The ragged shape in every mode; M = 1 and the aligned shape in fp32 and bf16. */
  for (int math = 0; math < FT_MATH_COUNT; math++)
    for (size_t s = 0; math != FT_MATH_FP8 && s < sizeof k_shapes / sizeof k_shapes[0]; s++) /* fp8 refuses reductions */
      for (size_t i = 0; i < N_EXPRS && (s == 0 || math == FT_MATH_FP32 || math == FT_MATH_BF16); i++)
        checked += check_problem(g, k_exprs[i], &k_shapes[s], (ft_math)math, FT_SPACE_FULL);
  printf("%d pass variants checked\n", checked);
  check_deterministic(g);
  check_inf_rows(g);
  /* The held and column forms: deterministic (batchnorm's tiles merged in order whichever block
   * finishes last), and on rows of +-inf (x * 1e30 * 1e30 overflows) equal to the row form. */
  check_forms_bits(g, "batchnorm(x + bias) * g where col g", 3000, 520, 32, FT_MATH_BF16, 0, 0);
  check_forms_bits(g, "batchnorm(x)", 1000, 77, 32, FT_MATH_FP32, 0, 0);
  check_forms_bits(g, "groupnorm(x + bias, 8)", 1000, 520, 32, FT_MATH_BF16, 0, 0);
  check_forms_bits(g, "softmax(x + bias)", 100, 5000, 32, FT_MATH_BF16, 0, 0);
  check_forms_bits(g, "softmax(x * 1e30 * 1e30)", 64, 1000, 16, FT_MATH_FP32, 1, 1);
  check_forms_bits(g, "log_softmax(x * 1e30 * 1e30)", 64, 1000, 16, FT_MATH_BF16, 1, 1);
  check_forms_bits(g, "groupnorm(x * 1e30 * 1e30, 8)", 64, 1024, 16, FT_MATH_BF16, 1, 0);
  char path[512];
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(path, sizeof path, "%s/gpu_reduce_%ld.db", tmp ? tmp : "/tmp", (long)getpid());
  ft_remove_database(path);
  ft_ctx *ctx = NULL;
  if (ft_open(path, FT_OPEN_CREATE, &ctx) == FT_OK) {
    check_tune(ctx, g, "logsumexp(x + bias)", 300, 5000, 256, FT_MATH_BF16);
    check_tune(ctx, g, "softmax(x * 2) * g where col g", 33, 1001, 64, FT_MATH_FP32);
  } else {
    FT_FAIL_AT_("ft_open: %s", ft_errmsg(ctx));
  }
  ft_close(ctx);
  ft_remove_database(path);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
