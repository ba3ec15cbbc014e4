/* The tensor-core family on the GPU: every variant it enumerates, plus fixed variants the
 * enumeration leaves out (one consumer, clusters on small shapes, a grid smaller than the
 * tiles, two stages), in tf32, bf16 and fp16, on ragged shapes with the three test epilogues,
 * through the library's launch path, output NaN-poisoned first: each must match the float64
 * reference within the mode's tolerance (2x cuBLAS's own error in that mode plus the output's
 * unit roundoff; ft_pdata_tolerance). FT_TEST_QUICK=1 takes the first epilogue only. */
#define _POSIX_C_SOURCE 200809L

#include "codegen.h"
#include "compile.h"
#include "family.h"
#include "ft_test.h"
#include "launch.h"
#include "verify.h"

typedef struct shape {
  int m, n, k;
} shape;

/* Ragged M and N everywhere; K not a multiple of the k tile except where K < it. */
static const shape k_shapes[] = {{127, 1000, 1000}, {1, 77, 8}, {129, 264, 40}, {333, 520, 2056}, {1100, 1300, 520}};
static const char *const k_epilogues[] = {"minsub", "biasrelu", "x + 2*sigmoid(x)"};
static const ft_math k_modes[] = {FT_MATH_BF16, FT_MATH_TF32, FT_MATH_FP16};

typedef struct tally {
  int ok, failed;
  double worst_ratio; /* rel_err / tolerance */
  char worst[320];
} tally;

/* Variants beyond the enumeration: each field's other values on this shape. */
static int extra_variants(ft_math math, const ft_device_limits *lim, const shape *sh, ft_variant *out) {
  static const int cfg[][6] = {
      /* bn, stages, consumers, cluster, group, grid */
      {64, 2, 1, 1, 1, 132}, {128, 4, 2, 2, 1, 8}, {256, 3, 2, 1, 16, 3}, {96, 5, 1, 2, 2, 132}, {224, 3, 2, 2, 4, 4},
  };
  int n = 0;
  for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
    ft_variant v = {0};
    v.kind = FT_VK_GEMM, v.layout = ft_family_named("tc")->layout, v.math = (int)math;
    v.bk = math == FT_MATH_TF32 ? 32 : 64;
    v.bn = cfg[i][0], v.stages = cfg[i][1], v.consumers = cfg[i][2], v.cluster = cfg[i][3];
    v.swizzle = cfg[i][4], v.grid = cfg[i][5];
    if (ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0)) out[n++] = v;
  }
  return n;
}

static void run_case(ft_gpu *g, const shape *sh, const char *eptext, ft_math math, tally *t) {
  char what[96];
  snprintf(what, sizeof what, "%dx%dx%d %s [%s]", sh->m, sh->n, sh->k, ft_math_name(math), eptext);
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  ft_variant *vs = NULL;
  int nv = 0;
  double tol = 0, cublas_err = 0;
  if (ft_ep_parse(eptext, &ep, &e) != FT_OK || ft_pdata_create(g, sh->m, sh->n, sh->k, ep, math, 4321, &d, &e) != FT_OK ||
      ft_pdata_tolerance(g, d, &tol, &cublas_err, &e) != FT_OK) {
    FT_FAIL_AT_("%s: setup: %s", what, e.msg);
    goto done;
  }
  const ft_device_limits *lim = ft_gpu_limits(g);
  if (ft_space_enumerate_math(FT_VK_GEMM, sh->m, sh->n, sh->k, math, lim, &vs, &nv, &e) != FT_OK) {
    FT_FAIL_AT_("%s: enumerate: %s", what, e.msg);
    goto done;
  }
  ft_variant *all = realloc(vs, (size_t)(nv + 8) * sizeof *all);
  if (!all) goto done;
  vs = all;
  nv += extra_variants(math, lim, sh, vs + nv);
  ft_kernel_src *src = calloc((size_t)nv, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)nv, sizeof *jobs);
  for (int i = 0; src && jobs && i < nv; i++) {
    if (ft_codegen_variant(&vs[i], ep, &src[i], &e) != FT_OK) FT_FAIL_AT_("%s: codegen: %s", what, e.msg);
    jobs[i].src = src[i].text, jobs[i].hash = src[i].hash, jobs[i].arch_suffix = src[i].arch_suffix;
  }
  if (src && jobs && ft_compile_many(NULL, ft_gpu_arch(g), jobs, nv, 0, &e) != FT_OK)
    FT_FAIL_AT_("%s: compile: %s", what, e.msg);
  int failed = 0;
  for (int i = 0; src && jobs && i < nv; i++) {
    char name[128];
    ft_variant_name(&vs[i], name, sizeof name);
    ft_check c = {0};
    ft_status s = jobs[i].status;
    ft_launchable run;
    memset(&run, 0, sizeof run);
    if (s == FT_OK)
      s = ft_launchable_init(&run, g, &vs[i], sh->m, sh->n, sh->k, jobs[i].cubin, jobs[i].cubin_size, src[i].kernel,
                             src[i].reduce, &e);
    if (s == FT_OK) s = ft_pdata_poison(d, 0, &e);
    if (s == FT_OK) s = ft_launchable_enqueue(&run, d->dX, d->dW, d->dY, &d->args, 0, &e);
    if (s == FT_OK) {
      const cudaError_t ce = cudaDeviceSynchronize();
      if (ce != cudaSuccess) s = ft_cuda_fail(&e, ce, "kernel execution");
    }
    if (s == FT_OK) s = ft_pdata_check(d, &c, &e);
    ft_launchable_free(&run);
    if (s != FT_OK || c.bad || !(c.rel_err <= tol)) {
      failed++;
      FT_FAIL_AT_("%s %s: %s rel_err %.3g (tolerance %.3g), %lld non-finite", what, name,
                  s != FT_OK ? (jobs[i].status != FT_OK && jobs[i].log ? jobs[i].log : e.msg) : "", c.rel_err, tol,
                  (long long)c.bad);
      if (s == FT_ERR_CUDA) break; /* the context may be gone */
    } else {
      t->ok++;
      if (c.rel_err / tol > t->worst_ratio) {
        t->worst_ratio = c.rel_err / tol;
        snprintf(t->worst, sizeof t->worst, "%s %s: %.3g of %.3g", what, name, c.rel_err, tol);
      }
    }
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  t->failed += failed;
  printf("%-44s %3d variants, %d failed; cuBLAS rel_err %.3g, tolerance %.3g\n", what, nv, failed, cublas_err, tol);
  fflush(stdout);
  free(src);
  free(jobs);
done:
  free(vs);
  ft_pdata_free(d);
  ft_ep_free(ep);
}

int main(void) {
  ft_gpu *g = NULL;
  ft_err e;
  const ft_status s = ft_gpu_open(0, &g, &e);
  if (s == FT_ERR_NO_DEVICE) RETURN_SKIP(e.msg);
  if (s != FT_OK) RETURN_FAIL("ft_gpu_open: %s", e.msg);
  const ft_device_limits *lim = ft_gpu_limits(g);
  if (lim->cc_major != 9 || lim->cc_minor != 0) {
    ft_gpu_close(g);
    RETURN_SKIP("the tensor-core family needs compute capability 9.0");
  }
  /* FT_TEST_SHAPE=MxNxK runs that shape alone (compute-sanitizer takes a small one). */
  const char *quick = getenv("FT_TEST_QUICK"), *only = getenv("FT_TEST_SHAPE");
  const size_t n_epi = quick && quick[0] == '1' ? 1 : sizeof k_epilogues / sizeof k_epilogues[0];
  tally t = {0, 0, 0, ""};
  for (size_t mi = 0; mi < sizeof k_modes / sizeof k_modes[0]; mi++)
    for (size_t ei = 0; ei < n_epi; ei++)
      for (size_t si = 0; si < sizeof k_shapes / sizeof k_shapes[0]; si++) {
        char name[64];
        snprintf(name, sizeof name, "%dx%dx%d", k_shapes[si].m, k_shapes[si].n, k_shapes[si].k);
        if (!only || strcmp(only, name) == 0) run_case(g, &k_shapes[si], k_epilogues[ei], k_modes[mi], &t);
      }
  printf("summary: %d tensor-core runs correct, %d failed; worst rel_err/tolerance %.2f (%s)\n", t.ok, t.failed,
         t.worst_ratio, t.worst);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
