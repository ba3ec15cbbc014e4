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
#include "gpu_sample_check.h"
#include "launch.h"
#include "verify.h"

typedef struct shape {
  int m, n, k;
} shape;

/* Ragged M and N; K a multiple of 8 (the tensor-core family's 16-byte rows in 16-bit modes). */
static const shape k_shapes[] = {{129, 264, 520}, {17, 77, 64}, {300, 1000, 136}};
static const char *const k_epilogues[] = {"x + bias + r where mat r", "(x + r) * sigmoid(r) + g where mat g, mat r"};
static const ft_math k_modes[] = {FT_MATH_FP32, FT_MATH_TF32, FT_MATH_BF16, FT_MATH_FP16, FT_MATH_3XTF32};

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
          fused_ok += run_kind(g, FT_VK_GEMM, FT_SPACE_PRUNED, sh->m, sh->n, sh->k, ep, k_modes[mi], d, tol, cap, what);
          pass_ok += run_kind(g, FT_VK_EPILOGUE, FT_SPACE_PRUNED, sh->m, sh->n, sh->k, ep, k_modes[mi], d, tol, cap, what);
        }
        ft_pdata_free(d);
        ft_ep_free(ep);
      }
  printf("matrix operands: %d fused and %d pass variants correct\n", fused_ok, pass_ok);
  ASSERT_TRUE(fused_ok > 0 && pass_ok > 0);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
