/* What the GPU tests of an epilogue kind share (gpu_test_matop, gpu_test_gated): a deterministic
 * sample of a space's variants, each launched through the library's launch path on poisoned
 * output and checked against the float64 reference. */
#ifndef FT_TEST_GPU_SAMPLE_CHECK_H
#define FT_TEST_GPU_SAMPLE_CHECK_H

#include "family.h"
#include "ft_test.h"
#include "gpu_launch_check.h"

/* Indices of a sample of at most cap of n variants: evenly spaced, plus each family's first and
 * last (a family's variants are consecutive in the enumeration). */
static int sample(const ft_variant *vs, int n, int cap, int *out) {
  int c = 0;
  for (int i = 0; i < n; i++) {
    const int edge = i == 0 || i == n - 1 || ft_family_of(&vs[i]) != ft_family_of(&vs[i - 1]) ||
                     ft_family_of(&vs[i]) != ft_family_of(&vs[i + 1]);
    const int spaced = n <= cap || (long long)i * cap / n != (long long)(i + 1) * cap / n;
    if (edge || spaced) out[c++] = i;
  }
  return c;
}

/* A sample of at most cap (plus each family's edges) of kind's variants of scope on (m, n, k) in
 * math, each compiled, launched on d (poisoned first) and checked against its reference within tol;
 * returns how many were correct, a failure recorded for each that was not. */
static int run_kind(ft_gpu *g, ft_variant_kind kind, ft_space_scope scope, int m, int n, int k, const ft_epilogue *ep,
                    ft_math math, ft_pdata *d, double tol, int cap, const char *what) {
  ft_err e;
  ft_variant *vs = NULL;
  int nv = 0, ok = 0;
  if (ft_space_enumerate_ep(kind, m, n, k, math, scope, ep, ft_gpu_limits(g), &vs, NULL, &nv,
                            &e) != FT_OK) {
    FT_FAIL_AT_("%s: enumerate: %s", what, e.msg);
    return 0;
  }
  int *pick = calloc((size_t)nv + 1, sizeof *pick);
  const int np = pick ? sample(vs, nv, cap, pick) : 0;
  ft_kernel_src *src = calloc((size_t)np + 1, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)np + 1, sizeof *jobs);
  for (int j = 0; src && jobs && j < np; j++) {
    if (ft_codegen_variant(&vs[pick[j]], ep, &src[j], &e) != FT_OK) FT_FAIL_AT_("%s: codegen: %s", what, e.msg);
    jobs[j].src = src[j].text, jobs[j].hash = src[j].hash, jobs[j].arch_suffix = src[j].arch_suffix;
  }
  if (src && jobs && ft_compile_many(NULL, ft_gpu_arch(g), jobs, np, 0, &e) != FT_OK)
    FT_FAIL_AT_("%s: compile: %s", what, e.msg);
  for (int j = 0; src && jobs && j < np; j++) {
    char name[128];
    ft_variant_name(&vs[pick[j]], name, sizeof name);
    ft_check c = {0};
    ft_status s = jobs[j].status;
    if (s == FT_OK) s = ft_test_launch_check(g, &vs[pick[j]], &jobs[j], &src[j], d, &c, &e);
    /* As in gpu_test_tc: 3xtf32 chunks over 4 k tiles may miss SGEMM's accuracy (the tuner then
     * rejects them as wrong results), never fp32's bound. A gated pair's output carries both
     * sums' errors, so there chunks of 4 may miss it too (1.5e-6 against 9.5e-7 at 129x272x520,
     * H100, 2026-12-07). */
    const int strict_chunk = vs[pick[j]].tc.gated ? 2 : 4;
    const double vtol = math == FT_MATH_3XTF32 && vs[pick[j]].tc.chunk > strict_chunk
                            ? (tol > FT_TOL_FP32 ? tol : FT_TOL_FP32)
                            : tol;
    if (s != FT_OK || c.bad || !(c.rel_err <= vtol)) {
      FT_FAIL_AT_("%s %s: %s rel_err %.3g (tolerance %.3g), %lld non-finite", what, name,
                  s != FT_OK ? (jobs[j].status != FT_OK && jobs[j].log ? jobs[j].log : e.msg) : "", c.rel_err, vtol,
                  (long long)c.bad);
    } else {
      ok++;
    }
    ft_compile_job_clear(&jobs[j]);
    ft_kernel_src_free(&src[j]);
  }
  printf("%-60s %s: %d of %d sampled (%d enumerated) correct\n", what, kind == FT_VK_GEMM ? "fused" : "passes", ok, np,
         nv);
  fflush(stdout);
  free(src);
  free(jobs);
  free(pick);
  free(vs);
  return ok;
}

#endif
