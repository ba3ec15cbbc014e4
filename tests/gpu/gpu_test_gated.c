/* Gated pairs (E with x2) on the GPU: in every mode that serves them (fp32, tf32, bf16, fp16,
 * 3xtf32), on ragged M and N multiples of 8 (88: not of 16), every gated pass (of the full space
 * on the first shape, the default one after) and a sample of the tensor-core family's gated
 * variants (16 and each family's edges per case), launched through the library's launch path
 * with the output NaN-poisoned first, each against the float64 reference of E(x W1^T, x W2^T)
 * within the mode's tolerance; the baselines (eager: two GEMMs + the eager plan; the stacked GEMM
 * alone) checked the same way; ft_gated_interleave on device pointers rebuilds the problem's
 * weight bit for bit from its halves. The second epilogue (biases and a matrix) runs on the first
 * shape. */
#define _POSIX_C_SOURCE 200809L

#include "gpu_gated_check.h"

typedef struct shape {
  int m, n, k;
} shape;

static const shape k_shapes[] = {{129, 272, 520}, {17, 88, 64}, {300, 1008, 136}};
static const char *const k_epilogues[] = {"silu(x) * x2", "gelu_tanh(x + b1) * (x2 + b2) + r where col b1, col b2, mat r"};
static const ft_math k_modes[] = {FT_MATH_FP32, FT_MATH_TF32, FT_MATH_BF16, FT_MATH_FP16, FT_MATH_3XTF32};

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_GPU(g);
  int fused_ok = 0, pass_ok = 0;
  for (size_t mi = 0; mi < sizeof k_modes / sizeof k_modes[0]; mi++)
    for (size_t si = 0; si < sizeof k_shapes / sizeof k_shapes[0]; si++)
      for (size_t ei = 0; ei < (si == 0 ? sizeof k_epilogues / sizeof k_epilogues[0] : 1); ei++) {
        const shape *sh = &k_shapes[si];
        char what[160];
        snprintf(what, sizeof what, "%s %dx%dx%d [%s]", ft_math_name(k_modes[mi]), sh->m, sh->n, sh->k, k_epilogues[ei]);
        ft_err e;
        ft_epilogue *ep = NULL;
        ft_pdata *d = NULL;
        double tol = 0, cublas_err = 0;
        if (ft_ep_parse(k_epilogues[ei], &ep, &e) != FT_OK ||
            ft_pdata_create(g, sh->m, sh->n, sh->k, ep, k_modes[mi], 99, &d, &e) != FT_OK ||
            ft_pdata_tolerance(g, d, &tol, &cublas_err, &e) != FT_OK) {
          FT_FAIL_AT_("%s: setup: %s", what, e.msg);
        } else {
          if (ei == 0) check_interleave(d, what);
          check_baselines(g, ep, d, &tol, what);
          /* The tensor-core family's gated variants: tf32, bf16, fp16 and 3xtf32 (fp32 has passes only). */
          const int fused = k_modes[mi] != FT_MATH_FP32;
          if (fused)
            fused_ok += run_kind(g, FT_VK_GEMM, FT_SPACE_PRUNED, sh->m, sh->n, sh->k, ep, k_modes[mi], d, tol, 16, what);
          pass_ok += run_kind(g, FT_VK_EPILOGUE, si == 0 ? FT_SPACE_FULL : FT_SPACE_PRUNED, sh->m, sh->n, sh->k, ep,
                              k_modes[mi], d, tol, 1000, what);
        }
        ft_pdata_free(d);
        ft_ep_free(ep);
      }
  printf("gated pairs: %d fused and %d pass variants correct\n", fused_ok, pass_ok);
  ASSERT_TRUE(pass_ok > 0 && fused_ok > 0);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
