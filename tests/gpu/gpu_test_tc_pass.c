/* GPU: family tc_pass (src/family/tc/family_tc_pass.c), the reduction pass after fusedtune's own
 * tensor-core GEMM in 3xtf32, and batchnorm's column partials written by that GEMM (the pass's
 * gemm, "_gp") in bf16, fp16, tf32 and 3xtf32. Each variant kind on ragged M and N (no tile width divides them):
 * softmax and log_softmax (held and row forms, N odd too), groupnorm with groups of 16 and 64
 * features, batchnorm (row and column forms, several tiles of rows) and two one-value row
 * reductions with a pool inside (the GEMM into the workspace, one chunk): every variant of the pruned space (the full
 * one for softmax), output and workspace NaN-poisoned, random non-zero inputs, against the float64
 * reference with the tuner's tolerance. Then one variant launched twice on other y pointers (the
 * GEMM's cached tensor maps follow them). */
#include <math.h>

#include "tolerance.h"
#include "ft_test.h"
#include "gpu_launch_check.h"

typedef struct problem {
  const char *expr;
  int m, n, k;
  int full; /* the full space (more GEMMs per pass) */
  ft_math math; /* 0: 3xtf32 */
} problem;

static const problem k_problems[] = {
    {"softmax(gelu(x + bias))", 1000, 4000, 1000, 1, 0},
    {"softmax(x)", 333, 1001, 260, 0, 0}, /* N odd: the pass's vec 1, the GEMM's odd-N stores */
    {"log_softmax(x + bias)", 517, 2056, 512, 0, 0},
    {"groupnorm(x, 64)", 300, 1024, 512, 0, 0},       /* 16 features a group */
    {"groupnorm(x * 2 + bias, 64)", 257, 4096, 256, 0, 0}, /* 64 features */
    {"groupnorm(x, 256)", 129, 4096, 128, 0, 0},      /* 16 features, 256 groups */
    {"batchnorm(x)", 3000, 520, 256, 0, 0},           /* several tiles of rows, a partial strip */
    {"batchnorm(x + bias) * 2", 1000, 2056, 384, 0, 0},
    {"rowsum(maxpool(sigmoid(x), 2))", 77, 1004, 40, 0, 0}, /* a pool inside: tcr_ does not fuse it */
    {"logsumexp(avgpool(x + bias, 4))", 300, 5000, 256, 0, 0},
    /* A matrix read by the pass: in place after a normalization, in a one-value reduction's argument
     * (tcr_ does not read matrices). */
    {"(groupnorm(x + bias, 1) + r) * r where mat r", 300, 1024, 256, 0, 0},
    {"rowsum(x * r) where mat r", 77, 1001, 40, 0, 0},
    {"softmax(batchnorm(x + bias) * 2)", 1000, 520, 256, 0, 0}, /* the column-then-row form */
    /* The GEMM's column partials (m64 blocks straddling M's edge, tiles N's; the full space, where
     * they are enumerated) in every tensor-core mode */
    {"batchnorm(x + bias) * 2", 1000, 2056, 384, 1, FT_MATH_BF16},
    {"batchnorm(x)", 3001, 520, 256, 1, FT_MATH_FP16},
    {"softmax(batchnorm(x + bias) * 2)", 1000, 520, 256, 1, FT_MATH_BF16},
    {"batchnorm(x + bias)", 77, 1000, 128, 1, FT_MATH_TF32},
    {"batchnorm(x + bias) * 2", 1000, 2056, 384, 1, 0}, /* 3xtf32's partials (the full space) */
};
#define N_PROBLEMS (sizeof k_problems / sizeof k_problems[0])

/* Kinds of variants seen over the run: held, row, column, chunk. */
static int g_forms[4];
/* Variants with the GEMM's column partials (gemm) correct, over every mode. */
static int g_partials;

static int form_of(const ft_variant *v) { return v->red.team > 0 ? 0 : v->red.tile > 0 ? 2 : v->red.cols > 0 ? 3 : 1; }

/* A variant beyond the tolerance is judged by its parts: its GEMM (family tc, the identity
 * epilogue) and then its pass (family reduce_pass in place on y), compiled and launched apart,
 * must give the same bits as the variant did (fused_y, y as its own launch left it). Then what
 * exceeds the tolerance is the arithmetic's, not the plan's plumbing: the GEMM's own error (a long
 * fp32 accumulation chunk, h16, at K = 256..512 is 1.7-3.5e-6 against x W^T on an H100, beyond
 * SGEMM's 2-3.5e-7: family tc's GEMM alone, which the tuner refuses there as it refuses this
 * variant) or the pass's under a normalization of few features. The GEMM alone is held to fp32's
 * bound (1e-5), which a shared wrong GEMM would not meet. Returns 1 when both hold; *gemm_err the
 * GEMM's rel_err against x W^T (printed beside the tolerance). */
static int same_as_parts(ft_gpu *g, const ft_variant *v, const ft_epilogue *ep, ft_pdata *d, const float *fused_y,
                         double *gemm_err) {
  ft_variant gv = *v, pv;
  gv.family = 4, gv.vec = 0;
  memset(&gv.red, 0, sizeof gv.red);
  memset(&pv, 0, sizeof pv);
  pv.kind = FT_VK_EPILOGUE, pv.family = 1, pv.math = v->math, pv.vec = v->vec, pv.red = v->red;
  ft_kernel_src src[2];
  ft_compile_job jobs[2];
  ft_launchable run[2];
  memset(src, 0, sizeof src);
  memset(jobs, 0, sizeof jobs);
  memset(run, 0, sizeof run);
  const size_t count = (size_t)d->m * (size_t)d->n;
  float *parts_y = malloc(count * sizeof *parts_y);
  ft_err e;
  ft_check cg = {0, 0, 0};
  ft_status st = parts_y ? FT_OK : ft__fail(&e, FT_ERR_NOMEM, "out of memory");
  if (st == FT_OK) st = ft_codegen_variant(&gv, NULL, &src[0], &e);
  if (st == FT_OK) st = ft_codegen_variant(&pv, ep, &src[1], &e);
  for (int i = 0; i < 2; i++) jobs[i] = (ft_compile_job){.src = src[i].text, .hash = src[i].hash, .arch_suffix = src[i].arch_suffix};
  if (st == FT_OK) st = ft_compile_many(NULL, ft_gpu_arch(g), jobs, 2, 0, &e);
  for (int i = 0; i < 2 && st == FT_OK; i++)
    if (jobs[i].status != FT_OK) st = ft__fail(&e, jobs[i].status, "compile: %.400s", jobs[i].log ? jobs[i].log : "");
  for (int i = 0; i < 2 && st == FT_OK; i++)
    st = ft_launchable_init(&run[i], g, i ? &pv : &gv, d->m, d->n, d->k, jobs[i].cubin, jobs[i].cubin_size, src[i].kernel,
                            src[i].reduce, &e);
  if (st == FT_OK) st = ft_pdata_poison(d, 0, &e);
  if (st == FT_OK) st = ft_launchable_enqueue(&run[0], d->dX, d->dW, d->dY, &d->args, 0, &e);
  if (st == FT_OK && cudaDeviceSynchronize() != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "the GEMM's execution");
  if (st == FT_OK) st = ft_pdata_check_gemm(d, &cg, &e);
  if (st == FT_OK) st = ft_launchable_enqueue_pass(&run[1], d->dY, &d->args, 0, &e);
  if (st == FT_OK && cudaDeviceSynchronize() != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "the pass's execution");
  if (st == FT_OK && cudaMemcpy(parts_y, d->dY, count * sizeof *parts_y, cudaMemcpyDeviceToHost) != cudaSuccess)
    st = ft__fail(&e, FT_ERR_CUDA, "reading y back");
  int ok = 0;
  *gemm_err = cg.rel_err;
  if (st != FT_OK) {
    FT_FAIL_AT_("parts of a tc_pass variant: %s", e.msg);
  } else if (cg.bad || !(cg.rel_err <= FT_TOL_FP32)) {
    /* Far looser than the rule (a chunk-16 GEMM's arithmetic is 1.7-3.5e-6 there), but a GEMM the
     * variant and its parts share must still be one: a wrong tile or K tail is off by far more. */
    FT_FAIL_AT_("its GEMM alone: rel_err %.3g > %.3g (fp32's bound) against x W^T, %lld non-finite", cg.rel_err,
                (double)FT_TOL_FP32, (long long)cg.bad);
  } else if (memcmp(parts_y, fused_y, count * sizeof *parts_y) != 0) {
    size_t first = 0;
    while (first < count && memcmp(&parts_y[first], &fused_y[first], sizeof *parts_y) == 0) first++;
    FT_FAIL_AT_("GEMM then pass apart differ from the variant first at element %zu: %.9g against %.9g", first,
                (double)parts_y[first], (double)fused_y[first]);
  } else {
    ok = 1;
  }
  for (int i = 0; i < 2; i++) {
    ft_launchable_free(&run[i]);
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  free(parts_y);
  return ok;
}

/* v's program written and compiled into src and job; with run, also loaded for (m, n, k). */
static ft_status compile_variant(ft_gpu *g, const ft_variant *v, const ft_epilogue *ep, int m, int n, int k,
                                 ft_kernel_src *src, ft_compile_job *job, ft_launchable *run, ft_err *e) {
  FT_TRY(ft_codegen_variant(v, ep, src, e));
  *job = (ft_compile_job){.src = src->text, .hash = src->hash, .arch_suffix = src->arch_suffix};
  FT_TRY(ft_compile_many(NULL, ft_gpu_arch(g), job, 1, 0, e));
  if (job->status != FT_OK) return ft__fail(e, job->status, "compile: %.400s", job->log ? job->log : "");
  return run ? ft_launchable_init(run, g, v, m, n, k, job->cubin, job->cubin_size, src->kernel, src->reduce, e) : FT_OK;
}

/* A variant with the GEMM's column partials (gemm) beyond the tolerance: its twin without them (in
 * 3xtf32 the same GEMM then the whole column pass; in the other modes cuBLAS's GEMM then it) run
 * on the same data; its rel_err in *twin_err. The partials change only where the statistics are
 * summed, so a right kernel is about as far off as its twin (the excess is its GEMM's arithmetic,
 * or the mode's rounding under a softmax); a wrong one is off by far more. */
static ft_status twin_error(ft_gpu *g, const ft_variant *v, const ft_epilogue *ep, ft_pdata *d, double *twin_err,
                            ft_err *e) {
  ft_variant t = *v;
  t.red.gemm = 0;
  if (v->math != FT_MATH_3XTF32) {
    memset(&t, 0, sizeof t);
    t.kind = FT_VK_EPILOGUE, t.family = 1, t.math = v->math, t.vec = v->vec, t.red = v->red, t.red.gemm = 0;
  }
  ft_kernel_src src;
  memset(&src, 0, sizeof src);
  ft_compile_job job;
  memset(&job, 0, sizeof job);
  ft_check chk = {0, 0, 0};
  ft_status st = compile_variant(g, &t, ep, d->m, d->n, d->k, &src, &job, NULL, e);
  if (st == FT_OK) st = ft_test_launch_check(g, &t, &job, &src, d, &chk, e);
  *twin_err = chk.bad ? INFINITY : chk.rel_err;
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  return st;
}

/* Every tc_pass variant of pr, checked; returns how many. */
static int check_problem(ft_gpu *g, const problem *pr) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  double tol = 0, cublas_err = 0;
  ft_variant *v = NULL;
  int nv = 0;
  const ft_math math = pr->math ? pr->math : FT_MATH_3XTF32;
  ft_status st = ft_ep_parse(pr->expr, &ep, &e);
  if (st == FT_OK) st = ft_pdata_create(g, pr->m, pr->n, pr->k, ep, math, 2718, &d, &e);
  double gemm_tol = 0; /* the rule's, for a GEMM alone */
  if (st == FT_OK) st = ft_test_tuner_tolerance(g, ep, d, &tol, &gemm_tol, &cublas_err, &e);
  if (st == FT_OK)
    st = ft_space_enumerate_ep(FT_VK_GEMM, pr->m, pr->n, pr->k, math, pr->full ? FT_SPACE_FULL : FT_SPACE_PRUNED, ep,
                               ft_gpu_limits(g), &v, NULL, &nv, &e);
  { /* groupnorm's problems enumerate family tc_norm too (gpu_test_norm_tc checks those) */
    int kept = 0;
    for (int i = 0; st == FT_OK && i < nv; i++)
      if (v[i].family == FT_FAMILY_TC_PASS) v[kept++] = v[i];
    nv = kept;
  }
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
  double worst = 0, worst_gemm = 0;
  int beyond = 0; /* beyond the tolerance, but the same bits as its GEMM then its pass apart */
  int beyond_twin = 0; /* with the GEMM's partials beyond the tolerance, as far off as their twins */
  double worst_twin = 0;
  for (int i = 0; src && jobs && i < nv; i++) {
    char name[128];
    ft_variant_name(&v[i], name, sizeof name);
    ft_check chk = {0, 0, 0};
    if (jobs[i].status != FT_OK) {
      FT_FAIL_AT_("%s: %s does not compile: %.800s", pr->expr, name, jobs[i].log ? jobs[i].log : "");
    } else if ((st = ft_test_launch_check(g, &v[i], &jobs[i], &src[i], d, &chk, &e)) != FT_OK) {
      FT_FAIL_AT_("%s %dx%dx%d: %s: %s", pr->expr, pr->m, pr->n, pr->k, name, e.msg);
    } else if (chk.bad) {
      FT_FAIL_AT_("%s %dx%dx%d: %s: %lld non-finite", pr->expr, pr->m, pr->n, pr->k, name, (long long)chk.bad);
    } else if (chk.rel_err <= tol) {
      g_forms[form_of(&v[i])]++;
      g_partials += v[i].red.gemm;
    } else if (v[i].red.gemm) {
      double twin = 0;
      if ((st = twin_error(g, &v[i], ep, d, &twin, &e)) != FT_OK) {
        FT_FAIL_AT_("%s %dx%dx%d: %s's twin: %s", pr->expr, pr->m, pr->n, pr->k, name, e.msg);
      } else if (!isfinite(twin) || !(chk.rel_err <= 1.25 * twin) || !(chk.rel_err <= 2.0 * tol)) {
        FT_FAIL_AT_("%s %dx%dx%d: %s: rel_err %.3g > %.3g, and its twin without the GEMM's partials %.3g (at most "
                    "1.25x that, and 2x the tolerance)", pr->expr, pr->m, pr->n, pr->k, name, chk.rel_err, tol, twin);
      } else {
        beyond_twin++;
        g_partials++;
        if (twin > worst_twin) worst_twin = twin;
      }
    } else if (v[i].red.cols > 0 || math != FT_MATH_3XTF32) {
      /* from the workspace: no pass runs alone on it (and same_as_parts reads fp32) */
      FT_FAIL_AT_("%s %dx%dx%d: %s: rel_err %.3g > %.3g", pr->expr, pr->m, pr->n, pr->k, name, chk.rel_err, tol);
    } else {
      /* Beyond the tolerance: the tuner refuses it here; its parts say whether it is still right. */
      double gemm_err = 0;
      const size_t bytes = (size_t)pr->m * (size_t)pr->n * sizeof(float);
      float *fused_y = malloc(bytes);
      if (!fused_y || cudaMemcpy(fused_y, d->dY, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        FT_FAIL_AT_("%s: reading y back", name);
      } else if (same_as_parts(g, &v[i], ep, d, fused_y, &gemm_err)) {
        beyond++;
        g_forms[form_of(&v[i])]++;
        if (gemm_err > worst_gemm) worst_gemm = gemm_err;
      } else {
        FT_FAIL_AT_("%s %dx%dx%d: %s: rel_err %.3g > %.3g and its parts disagree (above)", pr->expr, pr->m, pr->n, pr->k,
                    name, chk.rel_err, tol);
      }
      free(fused_y);
    }
    if (chk.rel_err > worst) worst = chk.rel_err;
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  printf("  %-30s %5dx%-5dx%-5d %3d tc_pass variants, worst rel_err %.2e (tol %.2e: the rule's %.2e raised to the "
         "fp32 chain's error, or set from it for a row sum; cuBLAS SGEMM alone %.2e)\n", pr->expr, pr->m, pr->n, pr->k, nv, worst, tol, gemm_tol, cublas_err);
  if (beyond_twin)
    printf("  %-30s %d with the GEMM's partials beyond the tolerance, each within 1.25x its twin's error (the same pass "
           "without them; worst twin %.2e)\n", "", beyond_twin, worst_twin);
  if (beyond)
    printf("  %-30s %d beyond the tolerance (refused by the tuner here), each the same bits as its GEMM then its "
           "pass apart; their GEMMs alone: worst rel_err %.2e against x W^T (the rule's %.2e)\n", "", beyond,
           worst_gemm, gemm_tol);
  fflush(stdout); /* progress, also when a timeout ends the test */
  free(src);
  free(jobs);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
  return nv;
}

/* One variant of a problem loaded for its launches: the problem's data and tolerance, its space, the
 * variant picked, its program and launchable. */
typedef struct loaded_one {
  ft_epilogue *ep;
  ft_pdata *d;
  ft_variant *v;
  int nv;
  double tol;
  ft_kernel_src src;
  ft_compile_job job;
  ft_launchable run;
} loaded_one;

/* pr's data (seed), its space in scope and the first variant with gemm == partials (any when
 * partials < 0), compiled and loaded into *o (zeroed first; load_free undoes it whatever happened). */
static ft_status load_one(ft_gpu *g, const problem *pr, ft_space_scope scope, int seed, int partials, loaded_one *o,
                          ft_err *e) {
  memset(o, 0, sizeof *o);
  const ft_math math = pr->math ? pr->math : FT_MATH_3XTF32;
  FT_TRY(ft_ep_parse(pr->expr, &o->ep, e));
  FT_TRY(ft_pdata_create(g, pr->m, pr->n, pr->k, o->ep, math, seed, &o->d, e));
  FT_TRY(ft_test_tuner_tolerance(g, o->ep, o->d, &o->tol, NULL, NULL, e));
  FT_TRY(ft_space_enumerate_ep(FT_VK_GEMM, pr->m, pr->n, pr->k, math, scope, o->ep, ft_gpu_limits(g), &o->v, NULL,
                               &o->nv, e));
  int pick = -1;
  for (int i = 0; i < o->nv && pick < 0; i++)
    if (partials < 0 || o->v[i].red.gemm == partials) pick = i;
  if (pick < 0) return ft__fail(e, FT_ERR_INTERNAL, "no variant%s", partials > 0 ? " with the GEMM's partials" : "");
  return compile_variant(g, &o->v[pick], o->ep, pr->m, pr->n, pr->k, &o->src, &o->job, &o->run, e);
}

static void load_free(loaded_one *o) {
  ft_launchable_free(&o->run);
  ft_compile_job_clear(&o->job);
  ft_kernel_src_free(&o->src);
  free(o->v);
  ft_pdata_free(o->d);
  ft_ep_free(o->ep);
}

/* One variant launched on y, then on another y buffer, then on y again: each result right (the GEMM's
 * argument list, two tensor maps, is rebuilt when a pointer changes). */
static void check_moved_pointers(ft_gpu *g) {
  const problem pr = {"softmax(x + bias)", 200, 1000, 128, 0, 0};
  ft_err e;
  loaded_one o;
  void *other = NULL;
  ft_status st = load_one(g, &pr, FT_SPACE_PRUNED, 99, -1, &o, &e);
  ft_pdata *d = o.d;
  const size_t bytes = (size_t)pr.m * pr.n * sizeof(float);
  if (st == FT_OK && cudaMalloc(&other, bytes) != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "cudaMalloc");
  void *ys[3] = {d ? d->dY : NULL, other, d ? d->dY : NULL};
  for (int r = 0; r < 3 && st == FT_OK; r++) {
    ft_check chk = {0, 0, 0};
    st = ft_pdata_poison(d, 0, &e);
    if (st == FT_OK && cudaMemset(ys[r], 0xff, bytes) != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "poison");
    if (st == FT_OK) st = ft_launchable_enqueue(&o.run, d->dX, d->dW, ys[r], &d->args, 0, &e);
    if (st == FT_OK && cudaDeviceSynchronize() != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "kernel execution");
    if (st == FT_OK && ys[r] != d->dY && cudaMemcpy(d->dY, ys[r], bytes, cudaMemcpyDeviceToDevice) != cudaSuccess)
      st = ft__fail(&e, FT_ERR_CUDA, "copy");
    if (st == FT_OK) st = ft_pdata_check(d, &chk, &e);
    if (st == FT_OK && (chk.bad || !(chk.rel_err <= o.tol)))
      FT_FAIL_AT_("launch %d (y %s): rel_err %.3g > %.3g, %lld non-finite", r, r == 1 ? "moved" : "back", chk.rel_err,
                  o.tol, (long long)chk.bad);
  }
  if (st != FT_OK) FT_FAIL_AT_("moved pointers: %s", e.msg);
  if (other) cudaFree(other);
  load_free(&o);
}

/* A variant with the GEMM's column partials reads E's arguments in its GEMM too, whose argument list
 * the launch keeps while nothing changes: launched with the bias at A, then at a copy B with A
 * poisoned (NaN), then at A restored: each right (a list kept with A's stale pointer gives NaN). */
static void check_partials_args(ft_gpu *g) {
  const problem pr = {"batchnorm(x + bias) * 2", 300, 1000, 128, 1, FT_MATH_BF16};
  ft_err e;
  loaded_one o;
  void *copy = NULL;
  ft_status st = load_one(g, &pr, FT_SPACE_FULL, 7, 1, &o, &e);
  ft_pdata *d = o.d;
  const size_t bytes = (size_t)pr.n * 2; /* the bias, bf16 */
  void *bias = d ? (void *)d->args.v[0] : NULL;
  if (st == FT_OK && (!bias || cudaMalloc(&copy, bytes) != cudaSuccess ||
                      cudaMemcpy(copy, bias, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess))
    st = ft__fail(&e, FT_ERR_CUDA, "the bias's copy");
  for (int r = 0; r < 3 && st == FT_OK; r++) {
    ft_ep_args_dev args = d->args;
    if (r == 1) {
      args.v[0] = copy;
      if (cudaMemset(bias, 0xff, bytes) != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "poison");
    }
    if (r == 2 && cudaMemcpy(bias, copy, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess)
      st = ft__fail(&e, FT_ERR_CUDA, "restore");
    ft_check chk = {0, 0, 0};
    if (st == FT_OK) st = ft_pdata_poison(d, 0, &e);
    if (st == FT_OK) st = ft_launchable_enqueue(&o.run, d->dX, d->dW, d->dY, &args, 0, &e);
    if (st == FT_OK && cudaDeviceSynchronize() != cudaSuccess) st = ft__fail(&e, FT_ERR_CUDA, "kernel execution");
    if (st == FT_OK) st = ft_pdata_check(d, &chk, &e);
    if (st == FT_OK && (chk.bad || !(chk.rel_err <= o.tol)))
      FT_FAIL_AT_("partials, launch %d (bias %s): rel_err %.3g > %.3g, %lld non-finite", r,
                  r == 1 ? "moved, the old one poisoned" : "back", chk.rel_err, o.tol, (long long)chk.bad);
  }
  if (st != FT_OK) FT_FAIL_AT_("partials' arguments: %s", e.msg);
  if (copy) cudaFree(copy);
  load_free(&o);
}

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_HOPPER(g);
  int checked = 0;
  for (size_t i = 0; i < N_PROBLEMS; i++) checked += check_problem(g, &k_problems[i]);
  check_moved_pointers(g);
  check_partials_args(g);
  printf("%d tc_pass variants checked (forms: %d held, %d row, %d column, %d one chunk correct)\n", checked, g_forms[0],
         g_forms[1], g_forms[2], g_forms[3]);
  for (int f = 0; f < 4; f++) ASSERT_TRUE(g_forms[f] > 0); /* every form ran */
  printf("%d with the GEMM's column partials (gemm) correct\n", g_partials);
  ASSERT_TRUE(g_partials > 0);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
