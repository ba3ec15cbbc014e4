/* Matrix operands (`mat r`) on the GPU: in every mode (fp32, tf32, bf16, fp16, 3xtf32), on ragged
 * shapes, a deterministic sample of every family's enumerated GEMM variants (each family's first
 * and last variant always among them) and of the epilogue passes (cuBLAS + pass, the lt
 * twins included), launched through the library's launch path with the output NaN-poisoned first,
 * each against the float64 reference within the mode's tolerance (gpu_test_tc's). The matrices are buffers of
 * their own (they alias nothing). The second epilogue (two matrices, one used twice) runs on the
 * first shape. FT_TEST_SAMPLE=N sets how many variants of each kind per case (12). */
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

/* Ragged M and N; K a multiple of 8 (the tensor-core family's 16-byte rows in 16-bit modes). */
static const shape k_shapes[] = {{129, 264, 520}, {17, 77, 64}, {300, 1000, 136}};
static const char *const k_epilogues[] = {"x + bias + r where mat r", "(x + r) * sigmoid(r) + g where mat g, mat r"};
static const ft_math k_modes[] = {FT_MATH_FP32, FT_MATH_TF32, FT_MATH_BF16, FT_MATH_FP16, FT_MATH_3XTF32};

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

static int run_kind(ft_gpu *g, ft_variant_kind kind, const shape *sh, const ft_epilogue *ep, ft_math math, ft_pdata *d,
                    double tol, int cap, const char *what) {
  ft_err e;
  ft_variant *vs = NULL;
  int nv = 0, ok = 0;
  if (ft_space_enumerate_ep(kind, sh->m, sh->n, sh->k, math, FT_SPACE_PRUNED, ep, ft_gpu_limits(g), &vs, NULL, &nv,
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
     * rejects them as wrong results), never fp32's bound. */
    const double vtol =
        math == FT_MATH_3XTF32 && vs[pick[j]].tc.chunk > 4 ? (tol > FT_TOL_FP32 ? tol : FT_TOL_FP32) : tol;
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

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_GPU(g);
  const char *cap_env = getenv("FT_TEST_SAMPLE");
  const int cap = cap_env && atoi(cap_env) > 0 ? atoi(cap_env) : 12;
  int fused_ok = 0, pass_ok = 0;
  for (size_t mi = 0; mi < sizeof k_modes / sizeof k_modes[0]; mi++)
    for (size_t si = 0; si < sizeof k_shapes / sizeof k_shapes[0]; si++)
      for (size_t ei = 0; ei < (si == 0 ? sizeof k_epilogues / sizeof k_epilogues[0] : 1); ei++) {
        const shape *sh = &k_shapes[si];
        char what[128];
        snprintf(what, sizeof what, "%s %dx%dx%d [%s]", ft_math_name(k_modes[mi]), sh->m, sh->n, sh->k,
                 k_epilogues[ei]);
        ft_err e;
        ft_epilogue *ep = NULL;
        ft_pdata *d = NULL;
        double tol = 0, cublas_err = 0;
        if (ft_ep_parse(k_epilogues[ei], &ep, &e) != FT_OK ||
            ft_pdata_create(g, sh->m, sh->n, sh->k, ep, k_modes[mi], 99, &d, &e) != FT_OK ||
            ft_pdata_tolerance(g, d, &tol, &cublas_err, &e) != FT_OK) {
          FT_FAIL_AT_("%s: setup: %s", what, e.msg);
        } else {
          fused_ok += run_kind(g, FT_VK_GEMM, sh, ep, k_modes[mi], d, tol, cap, what);
          pass_ok += run_kind(g, FT_VK_EPILOGUE, sh, ep, k_modes[mi], d, tol, cap, what);
        }
        ft_pdata_free(d);
        ft_ep_free(ep);
      }
  printf("matrix operands: %d fused and %d pass variants correct\n", fused_ok, pass_ok);
  ASSERT_TRUE(fused_ok > 0 && pass_ok > 0);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
