/* GPU: fp8 (e4m3) with a gated pair (x2 scaled by sx and its own weight's sw2) and with a matrix
 * operand (a bf16 residual). On ragged M and N multiples of 16 (fp8's rule), each epilogue on two
 * shapes: every enumerated variant of the default space (the tensor-core family's, the gated pass
 * or the epilogue pass after cuBLASLt's FP8 GEMM), launched through the library's launch path with
 * the output NaN-poisoned first, against the float64 reference of the e4m3 values and scales (each
 * weight of a pair quantized on its own: per channel or per tensor as E declares sw and sw2) within
 * the tuner's tolerance (twice cuBLASLt FP8's own error + 2^-12); the baselines (eager: two FP8 GEMMs
 * + the eager plan for a pair; the stacked GEMM alone) checked the same way; the end-to-end error
 * against the unquantized bf16 layer printed; ft_gated_interleave of the two halves' e4m3 codes
 * rebuilds the problem's weight byte for byte. */
#define _POSIX_C_SOURCE 200809L

#include "gpu_gated_check.h"

typedef struct shape {
  int m, n, k;
} shape;

static const shape k_shapes[] = {{129, 272, 528}, {17, 96, 64}, {333, 1008, 272}, {645, 2064, 1040}};
static const char *const k_epilogues[] = {
    "silu(x * sx * sw) * (x2 * sx * sw2) where row sx, col sw, col sw2",
    "gelu_tanh(x * sx * sw + b1) * (x2 * sx * sw2 + b2) + r where row sx, scalar sw, scalar sw2, col b1, col b2, mat r",
    "x * sx * sw + bias + r where row sx, col sw, mat r",
    "relu(x * sx * sw) * r - r where scalar sx, scalar sw, mat r"};

/* The end-to-end error against the unquantized bf16 layer (what a user of the quantized layer
 * gets) of kind's first variant (the model's likeliest best), within 0.1 (3-4e-2 measured on this
 * data, docs/MODES.md). */
static void print_e2e(ft_gpu *g, ft_variant_kind kind, const ft_epilogue *ep, ft_pdata *d, const char *what) {
  ft_err e;
  ft_variant *vs = NULL;
  int nv = 0;
  ft_kernel_src src;
  ft_compile_job job = {0};
  ft_check chk = {0, 0, 0}, e2e = {0, 0, 0};
  memset(&src, 0, sizeof src);
  ft_status s = ft_space_enumerate_ep(kind, d->m, d->n, d->k, FT_MATH_FP8, FT_SPACE_PRUNED, ep, ft_gpu_limits(g), &vs,
                                      NULL, &nv, &e);
  if (s == FT_OK && nv < 1) s = ft__fail(&e, FT_ERR_NOT_FOUND, "no variant");
  if (s == FT_OK) s = ft_codegen_variant(&vs[0], ep, &src, &e);
  if (s == FT_OK) job = (ft_compile_job){.src = src.text, .hash = src.hash, .arch_suffix = src.arch_suffix};
  if (s == FT_OK) s = ft_compile_many(NULL, ft_gpu_arch(g), &job, 1, 0, &e);
  if (s == FT_OK) s = job.status;
  if (s == FT_OK) s = ft_test_launch_check(g, &vs[0], &job, &src, d, &chk, &e);
  if (s == FT_OK) s = ft_pdata_check_e2e(d, &e2e, &e);
  if (s != FT_OK || e2e.bad || !(e2e.rel_err < 0.1))
    FT_FAIL_AT_("%s: end-to-end: %s rel_err %.3g", what, s != FT_OK ? e.msg : "", e2e.rel_err);
  else
    printf("  %-60s %s end-to-end vs the bf16 layer: %.3g\n", what, kind == FT_VK_GEMM ? "fused" : "pass", e2e.rel_err);
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  free(vs);
}

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_GPU(g);
  const ft_device_limits *lim = ft_gpu_limits(g);
  if (lim->cc_major * 10 + lim->cc_minor < 89) {
    ft_gpu_close(g);
    RETURN_SKIP("fp8 needs sm_89 or newer (cuBLASLt's FP8 GEMM)");
  }
  const int hopper = lim->cc_major == 9 && lim->cc_minor == 0; /* the tensor-core family's */
  int fused_ok = 0, pass_ok = 0;
  for (size_t ei = 0; ei < sizeof k_epilogues / sizeof k_epilogues[0]; ei++)
    for (size_t si = 0; si < sizeof k_shapes / sizeof k_shapes[0]; si++) {
      if ((si + ei) % 2) continue; /* each epilogue on two shapes, each shape with two epilogues */
      const shape *sh = &k_shapes[si];
      char what[200];
      snprintf(what, sizeof what, "fp8 %dx%dx%d [%s]", sh->m, sh->n, sh->k, k_epilogues[ei]);
      ft_err e;
      ft_epilogue *ep = NULL;
      ft_pdata *d = NULL;
      double tol = 0;
      if (ft_ep_parse(k_epilogues[ei], &ep, &e) != FT_OK ||
          ft_pdata_create(g, sh->m, sh->n, sh->k, ep, FT_MATH_FP8, 57, &d, &e) != FT_OK ||
          ft_test_tuner_tolerance(g, ep, d, &tol, NULL, NULL, &e) != FT_OK) {
        FT_FAIL_AT_("%s: setup: %s", what, e.msg);
      } else {
        if (ft_ep_uses_x2(ep)) check_interleave(d, what);
        check_baselines(g, ep, d, &tol, what);
        if (hopper) fused_ok += run_kind(g, FT_VK_GEMM, FT_SPACE_PRUNED, sh->m, sh->n, sh->k, ep, FT_MATH_FP8, d, tol,
                                         100000, what);
        pass_ok += run_kind(g, FT_VK_EPILOGUE, FT_SPACE_PRUNED, sh->m, sh->n, sh->k, ep, FT_MATH_FP8, d, tol, 100000, what);
        if (hopper) print_e2e(g, FT_VK_GEMM, ep, d, what);
        print_e2e(g, FT_VK_EPILOGUE, ep, d, what);
      }
      ft_pdata_free(d);
      ft_ep_free(ep);
    }
  printf("fp8 gated pairs and residuals: %d fused and %d pass variants correct\n", fused_ok, pass_ok);
  ASSERT_TRUE(pass_ok > 0 && (fused_ok > 0 || !hopper));
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
