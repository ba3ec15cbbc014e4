/* The tensor-core family on the GPU: every variant it enumerates, plus fixed variants the
 * enumeration leaves out (one consumer, clusters on small shapes, a grid smaller than the
 * tiles, two stages, 3xtf32 partial sums of 1 and 3 k tiles, x split in registers; each also with
 * the TMA-store epilogue where N allows, with stream-K where the grid leaves a partial wave, and
 * ping-pong with 64- and 128-row tiles, the staged epilogue, and deferred E in bf16),
 * in tf32, bf16, fp16 and 3xtf32, on
 * ragged shapes with the three test epilogues, through the library's launch path, output
 * NaN-poisoned first: each must match the float64 reference within the mode's tolerance (2x
 * cuBLAS's own error in that mode plus the output's unit roundoff; in 3xtf32 SGEMM's own error
 * (at least 2^-20) for chunks <= 4 k tiles, fp32's 1e-5 for longer ones; ft_pdata_tolerance). Then 3xtf32 at a long K: partial sums taken out must be at least as
 * accurate as cuBLAS SGEMM, and the same kernel never taking them out must not be (the check
 * can fail). FT_TEST_QUICK=1 takes the first epilogue only, FT_TEST_EPILOGUE=EXPR that one only. */
#define _POSIX_C_SOURCE 200809L

#include "codegen.h"
#include "compile.h"
#include "family.h"
#include "ft_test.h"
#include "gpu_launch_check.h"
#include "launch.h"
#include "verify.h"

typedef struct shape {
  int m, n, k;
} shape;

/* Ragged M and N everywhere; K not a multiple of the k tile except where K < it. N ends inside
 * the direct-stored tail of a 168-column TMA-store tile: 65x332x72 in its last 8-column chunk
 * (fp32 storage), 127x1000x1000 in its last 40 columns (16-bit storage). */
static const shape k_shapes[] = {{127, 1000, 1000}, {1, 77, 8}, {129, 264, 40}, {333, 520, 2056}, {1100, 1300, 520},
                                 {65, 332, 72}};
static const char *const k_epilogues[] = {"minsub", "biasrelu", "x + 2*sigmoid(x)"};
static const ft_math k_modes[] = {FT_MATH_BF16, FT_MATH_TF32, FT_MATH_FP16, FT_MATH_3XTF32};

typedef struct tally {
  int ok, failed;
  double worst_ratio; /* rel_err / tolerance */
  int accuracy_misses; /* 3xtf32 chunks > 4 within fp32's bound but not SGEMM's error */
  int rejected;        /* variants ptxas could not fit without spills (not run) */
  int streamk_ok;      /* stream-K runs correct */
  int pingpong_ok;     /* ping-pong runs correct */
  int staged_ok;       /* staged-epilogue runs correct */
  int fitted_ok;       /* runs correct with a BN not a multiple of 32 (wave-fitted widths) */
  int late_ok;         /* late-form (E box by box) runs correct */
  int defer_ok;        /* deferred-E runs correct (E under the next tile's k loop) */
  int any_epilogue;    /* in: FT_TEST_EPILOGUE's epilogue, not one of the three */
  char worst[320];
} tally;

#define K_EXTRA_ROWS 11
#define K_EXTRA_PER_ROW 14 /* extra_variants: at most this many per cfg row */

/* Variants beyond the enumeration: each field's other values on this shape. */
static int extra_variants(ft_math math, const ft_device_limits *lim, const shape *sh, ft_variant *out) {
  static const int cfg[K_EXTRA_ROWS][6] = {
      /* bn, stages, consumers, cluster, group, grid */
      {64, 2, 1, 1, 1, 132}, {128, 4, 2, 2, 1, 8}, {256, 3, 2, 1, 16, 3}, {96, 5, 1, 2, 2, 132}, {224, 3, 2, 2, 4, 4},
      {256, 4, 2, 2, 8, 8},
      /* Wave-fitted widths: odd multiples of 8 (half a 16-column group at the end; with TMA
       * stores, columns past the last whole box stored directly), one a multiple of 16 in a cluster. */
      {168, 4, 2, 1, 8, 132}, {168, 3, 2, 1, 1, 5}, {120, 4, 1, 1, 8, 132}, {112, 4, 2, 2, 4, 6},
      {88, 5, 2, 1, 8, 132}, /* 128 x 88 ping-pong (two consumers, an odd multiple of 8) */
  };
  int n = 0;
  for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
    ft_variant v = {0};
    v.kind = FT_VK_GEMM, v.family = ft_family_named("tc")->id, v.math = (int)math;
    v.bk = math == FT_MATH_TF32 || math == FT_MATH_3XTF32 ? 32 : 64;
    v.tc.chunk = math == FT_MATH_3XTF32 ? (i % 2 ? 1 : 3) : 0;
    v.tc.aregs = math == FT_MATH_3XTF32 && cfg[i][0] <= 64; /* x split in registers */
    v.bn = cfg[i][0], v.stages = cfg[i][1], v.tc.consumers = cfg[i][2], v.tc.cluster = cfg[i][3];
    v.swizzle = cfg[i][4], v.tc.grid = cfg[i][5];
    if (ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0)) out[n++] = v;
    v.tc.tstore = 1; /* the TMA-store epilogue too, where N allows it (one consumer is not enumerated above 64 rows) */
    if (ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0)) out[n++] = v;
    v.tc.late = 1; /* ... and its late form (E box by box), which the enumeration offers at BN >= 192 only */
    if (ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0)) out[n++] = v;
    v.tc.late = 0;
    /* Deferred E (each tile's E under the next one's k loop) in a whole box and in 4 parts; the
     * small grids give blocks several tiles, so most boxes are stored from inside a k loop, some
     * after a short K's loop ended first. */
    for (v.tc.defer = 1; v.tc.defer <= 4; v.tc.defer *= 4)
      if (ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0)) out[n++] = v;
    v.tc.defer = 0;
    /* Stream-K with both epilogues, where the grid leaves a partial wave: small grids make
     * slots share units several ways (more blocks per unit than the enumeration allows). Wider
     * than 128 columns only as enumerated, with clusters and TMA stores (the others spill). */
    for (v.tc.tstore = 1; v.tc.tstore >= 0; v.tc.tstore--) {
      v.tc.streamk = 1;
      if (v.bn > 128 && (v.tc.cluster != 2 || !v.tc.tstore || v.bn != 256)) continue;
      if (ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0)) out[n++] = v;
    }
    v.tc.streamk = 0;
    /* Ping-pong with both store forms and 64- and 128-row tiles, beyond the enumeration's
     * group 8: small grids give each consumer several tiles and an odd count leaves the second
     * consumer one fewer. */
    for (v.tc.pingpong = 1; v.tc.pingpong <= 2; v.tc.pingpong++)
      for (v.tc.tstore = 1; v.tc.tstore >= 0; v.tc.tstore--)
        if (ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0)) out[n++] = v;
    v.tc.pingpong = 0;
    /* The staged epilogue (raw sums through shared memory, E in a rolled loop), cooperative and
     * ping-pong of both heights, a stage less where its staging box does not fit. */
    v.tc.tstore = 1, v.tc.staged = 1;
    for (int pp = 0; pp <= 2; pp++) {
      v.tc.pingpong = pp;
      if (!ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0) && v.stages > 2) v.stages--;
      if (ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0)) out[n++] = v;
      v.stages = cfg[i][1];
    }
    v.tc.pingpong = 0, v.tc.staged = 0;
  }
  return n;
}

/* The column-vector slice staged in shared memory (FtTc::kColvStage) from a bias whose address is
 * not 16-byte aligned (one element past an allocation, as a user's slice of a larger buffer may
 * be): the element-by-element copy then serves, and the result must be as correct as from the
 * aligned bias. bf16 BN 256 and tf32 BN 128, cooperative TMA-store kernels that stage it. */
static void misaligned_vector_case(ft_gpu *g) {
  const int m = 256, n = 1024, k = 192;
  const ft_math maths[2] = {FT_MATH_BF16, FT_MATH_TF32};
  for (int mi = 0; mi < 2; mi++) {
    ft_err e;
    ft_epilogue *ep = NULL;
    ft_pdata *d = NULL;
    void *shifted = NULL;
    double tol = 0, cublas_err = 0;
    if (ft_ep_parse("biasrelu", &ep, &e) != FT_OK || ft_pdata_create(g, m, n, k, ep, maths[mi], 77, &d, &e) != FT_OK ||
        ft_pdata_tolerance(g, d, &tol, &cublas_err, &e) != FT_OK) {
      FT_FAIL_AT_("misaligned bias: setup: %s", e.msg);
      goto next;
    }
    ft_variant v = {0};
    v.kind = FT_VK_GEMM, v.family = ft_family_named("tc")->id, v.math = maths[mi];
    v.bk = maths[mi] == FT_MATH_TF32 ? 32 : 64, v.bn = maths[mi] == FT_MATH_TF32 ? 128 : 256, v.stages = 4;
    v.tc.consumers = 2, v.tc.cluster = 1, v.swizzle = 8, v.tc.grid = 132, v.tc.tstore = 1;
    if (cudaMalloc(&shifted, (size_t)(n + 16) * d->elem) != cudaSuccess ||
        cudaMemcpy((char *)shifted + d->elem, d->dvec[0], (size_t)n * d->elem, cudaMemcpyDeviceToDevice) != cudaSuccess) {
      FT_FAIL_AT_("misaligned bias %s: the shifted copy of the bias could not be made", ft_math_name(maths[mi]));
      goto next;
    }
    ft_kernel_src src = {0};
    ft_compile_job job = {0};
    ft_status s = ft_codegen_variant(&v, ep, &src, &e);
    ASSERT_TRUE(s == FT_OK && strstr(src.text, "#define FT_EP_COLV_SLOT 0\n") && strstr(src.text, "colv_bytes = 512,"));
    if (s == FT_OK) {
      job.src = src.text, job.hash = src.hash, job.arch_suffix = src.arch_suffix;
      s = ft_compile_many(NULL, ft_gpu_arch(g), &job, 1, 0, &e);
      if (s == FT_OK) s = job.status;
    }
    if (s != FT_OK) FT_FAIL_AT_("misaligned bias %s: build: %s", ft_math_name(maths[mi]), e.msg);
    for (int shift = 0; shift < 2 && s == FT_OK; shift++) {
      const void *aligned = d->args.v[0];
      if (shift) d->args.v[0] = (char *)shifted + d->elem;
      ft_check c = {0};
      s = ft_test_launch_check(g, &v, &job, &src, d, &c, &e);
      d->args.v[0] = aligned;
      printf("%s %dx%dx%d biasrelu, bias %s: rel_err %.3g (tolerance %.3g), %lld non-finite\n", ft_math_name(maths[mi]),
             m, n, k, shift ? "one element past 16-byte alignment" : "aligned", c.rel_err, tol, (long long)c.bad);
      if (s != FT_OK || c.bad || !(c.rel_err <= tol)) FT_FAIL_AT_("misaligned bias %s shift %d: %s", ft_math_name(maths[mi]), shift, s != FT_OK ? e.msg : "wrong result");
    }
    ft_compile_job_clear(&job);
    ft_kernel_src_free(&src);
  next:
    if (shifted) ASSERT_OK(cudaFree(shifted));
    ft_pdata_free(d);
    ft_ep_free(ep);
  }
}

/* 3xtf32 at 128x264x65536 (K = 2048 k tiles): with partial sums taken out every 2 k tiles the
 * error must be within the mode's tolerance (cuBLAS SGEMM's own error, or 2^-20); with chunk
 * 4096 (never taken out) the tensor core's truncating adds carry the whole K and the error must
 * exceed it, or this check could not fail. */
static void long_k_case(ft_gpu *g) {
  const int m = 128, n = 264, k = 65536;
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  double tol = 0, sgemm_err = 0;
  if (ft_ep_parse("x", &ep, &e) != FT_OK || ft_pdata_create(g, m, n, k, ep, FT_MATH_3XTF32, 99, &d, &e) != FT_OK ||
      ft_pdata_tolerance(g, d, &tol, &sgemm_err, &e) != FT_OK) {
    FT_FAIL_AT_("long K: setup: %s", e.msg);
    goto done;
  }
  double errs[2] = {0, 0};
  const int chunks[2] = {2, 4096};
  for (int i = 0; i < 2; i++) {
    ft_variant v = {0};
    v.kind = FT_VK_GEMM, v.family = ft_family_named("tc")->id, v.math = FT_MATH_3XTF32;
    v.bk = 32, v.bn = 64, v.stages = 4, v.tc.consumers = 2, v.tc.cluster = 1, v.swizzle = 8, v.tc.grid = 132;
    v.tc.chunk = chunks[i];
    ft_kernel_src src = {0};
    ft_compile_job job = {0};
    ft_check c = {0};
    ft_status s = ft_codegen_variant(&v, ep, &src, &e);
    if (s == FT_OK) {
      job.src = src.text, job.hash = src.hash, job.arch_suffix = src.arch_suffix;
      s = ft_compile_many(NULL, ft_gpu_arch(g), &job, 1, 0, &e);
      if (s == FT_OK) s = job.status;
    }
    if (s == FT_OK) s = ft_test_launch_check(g, &v, &job, &src, d, &c, &e);
    if (s != FT_OK || c.bad) FT_FAIL_AT_("long K chunk %d: %s (%lld non-finite)", chunks[i], e.msg, (long long)c.bad);
    errs[i] = c.rel_err;
    ft_compile_job_clear(&job);
    ft_kernel_src_free(&src);
  }
  printf("3xtf32 %dx%dx%d: rel_err %.3g (partial sums every 2 k tiles), %.3g (never taken out), cuBLAS SGEMM %.3g, "
         "tolerance %.3g\n", m, n, k, errs[0], errs[1], sgemm_err, tol);
  ASSERT_TRUE(errs[0] <= tol);
  ASSERT_TRUE(errs[1] > tol);
done:
  ft_pdata_free(d);
  ft_ep_free(ep);
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
  ft_variant *all = realloc(vs, (size_t)(nv + K_EXTRA_ROWS * K_EXTRA_PER_ROW) * sizeof *all);
  if (!all) goto done;
  vs = all;
  const int n_enumerated = nv;
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
    /* The fixed stream-K variant at BN 256 with a heavy epilogue may exceed the 168 registers:
     * ptxas's spill is then the tuner's rejection too (stored as compile_error), counted here
     * apart. Enumerated variants get no such pass with the three test epilogues (the CPU sweep
     * compiles them without spill); with FT_TEST_EPILOGUE's any variant may be rejected so. */
    char why[256] = "";
    if (s != FT_OK && (t->any_epilogue || (i >= n_enumerated && vs[i].tc.streamk && vs[i].bn > 128)) &&
        ft__compile_rejection(jobs[i].log, why, sizeof why) && strstr(why, "spilled")) {
      t->rejected++;
      ft_compile_job_clear(&jobs[i]);
      ft_kernel_src_free(&src[i]);
      continue;
    }
    if (s == FT_OK) s = ft_test_launch_check(g, &vs[i], &jobs[i], &src[i], d, &c, &e);
    /* 3xtf32 chunks over 4 k tiles may miss SGEMM's accuracy (the tuner then rejects them), but
     * never fp32's bound: that would be a wrong kernel, not a long accumulation. */
    const double vtol = math == FT_MATH_3XTF32 && vs[i].tc.chunk > 4 ? (tol > FT_TOL_FP32 ? tol : FT_TOL_FP32) : tol;
    if (s == FT_OK && !c.bad && c.rel_err > tol && c.rel_err <= vtol) t->accuracy_misses++;
    if (s != FT_OK || c.bad || !(c.rel_err <= vtol)) {
      failed++;
      FT_FAIL_AT_("%s %s: %s rel_err %.3g (tolerance %.3g), %lld non-finite", what, name,
                  s != FT_OK ? (jobs[i].status != FT_OK && jobs[i].log ? jobs[i].log : e.msg) : "", c.rel_err, tol,
                  (long long)c.bad);
      if (s == FT_ERR_CUDA) break; /* the context may be gone */
    } else {
      t->ok++;
      t->streamk_ok += vs[i].tc.streamk != 0;
      t->pingpong_ok += vs[i].tc.pingpong != 0;
      t->staged_ok += vs[i].tc.staged != 0;
      t->fitted_ok += vs[i].bn % 32 != 0;
      t->late_ok += vs[i].tc.late != 0;
      t->defer_ok += vs[i].tc.defer != 0;
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
  FT_TEST_OPEN_GPU(g);
  const ft_device_limits *lim = ft_gpu_limits(g);
  if (lim->cc_major != 9 || lim->cc_minor != 0) {
    ft_gpu_close(g);
    RETURN_SKIP("the tensor-core family needs compute capability 9.0");
  }
  /* FT_TEST_SHAPE=MxNxK runs that shape alone (compute-sanitizer takes a small one). */
  /* FT_TEST_MODE=3xtf32 (say) runs that mode alone. */
  const char *quick = getenv("FT_TEST_QUICK"), *only = getenv("FT_TEST_SHAPE"), *mode = getenv("FT_TEST_MODE");
  /* FT_TEST_EPILOGUE=EXPR runs that epilogue alone (instead of the three, or quick's first). */
  const char *epi_only = getenv("FT_TEST_EPILOGUE");
  const char *const *epis = epi_only && *epi_only ? &epi_only : k_epilogues;
  const size_t n_epi = epi_only && *epi_only ? 1 : quick && quick[0] == '1' ? 1 : sizeof k_epilogues / sizeof k_epilogues[0];
  tally t = {0};
  t.any_epilogue = epi_only && *epi_only;
  for (size_t mi = 0; mi < sizeof k_modes / sizeof k_modes[0]; mi++)
    for (size_t ei = 0; ei < n_epi && (!mode || !strcmp(mode, ft_math_name(k_modes[mi]))); ei++)
      for (size_t si = 0; si < sizeof k_shapes / sizeof k_shapes[0]; si++) {
        char name[64];
        snprintf(name, sizeof name, "%dx%dx%d", k_shapes[si].m, k_shapes[si].n, k_shapes[si].k);
        if (!only || strcmp(only, name) == 0) run_case(g, &k_shapes[si], epis[ei], k_modes[mi], &t);
      }
  if (!only && (!mode || !strcmp(mode, "3xtf32"))) long_k_case(g);
  if (!only && (!mode || !strcmp(mode, "bf16"))) misaligned_vector_case(g);
  /* The fixed stream-K variants apply at 333x520x2056 and 1100x1300x520 in every mode but 3xtf32:
   * a run of all shapes that ran none of them tested nothing of stream-K. */
  if (!only && (!mode || strcmp(mode, "3xtf32") != 0)) ASSERT_TRUE(t.streamk_ok > 0);
  /* Ping-pong, enumerated and fixed, applies at every shape but 1x77x8 in those modes. */
  if (!only && (!mode || strcmp(mode, "3xtf32") != 0)) ASSERT_TRUE(t.pingpong_ok > 0);
  /* The fixed staged variants apply at every shape whose N allows TMA stores. */
  if (!only) ASSERT_TRUE(t.staged_ok > 0);
  /* The fixed wave-fitted widths apply at every shape but 1x77x8. */
  if (!only) ASSERT_TRUE(t.fitted_ok > 0);
  /* The fixed late forms apply wherever TMA stores do. */
  if (!only) ASSERT_TRUE(t.late_ok > 0);
  /* The fixed deferred-E forms apply in bf16 wherever TMA stores do at BN 64, 128, 256 with two consumers. */
  if (!only && (!mode || !strcmp(mode, "bf16"))) ASSERT_TRUE(t.defer_ok > 0);
  printf("summary: %d tensor-core runs correct, %d failed; worst rel_err/tolerance %.2f (%s); %d 3xtf32 run(s) of "
         "chunk > 4 within 1e-5 but above SGEMM's error; %d stream-K run(s) correct, %d variant(s) rejected "
         "by ptxas (spills); %d ping-pong run(s) correct; %d staged-epilogue run(s) correct; %d wave-fitted-width run(s) correct; %d late-form run(s) correct; %d deferred-E run(s) correct\n",
         t.ok, t.failed, t.worst_ratio, t.worst, t.accuracy_misses, t.streamk_ok, t.rejected, t.pingpong_ok, t.staged_ok,
         t.fitted_ok, t.late_ok, t.defer_ok);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
