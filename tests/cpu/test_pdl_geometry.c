/* Which kernels are launched with programmatic stream serialization (src/gpu/launch.c, with
 * FUSEDTUNE_PDL): such a kernel may start before the kernel ahead of it has finished, so it must
 * wait (griddepcontrol.wait) before it touches global memory. Over the full spaces of several
 * problems and modes: every variant whose geometry asks for it (pdl, or gpdl for a family's own
 * GEMM) compiles a program that is the tensor-core GEMM and calls that wait; no other does. */
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "epilogue_test_util.h"
#include "family.h"

static int g_pdl, g_gpdl, g_plain;

/* Whether text calls the wait as a statement of its own (only blanks before it on its line). */
static int calls_wait(const char *text) {
  static const char call[] = "ft_grid_dependency_wait();";
  for (const char *p = strstr(text, call); p; p = strstr(p + 1, call)) {
    const char *q = p;
    while (q > text && (q[-1] == ' ' || q[-1] == '\t')) q--;
    if (q == text || q[-1] == '\n') return 1;
  }
  return 0;
}

static void check_space(const char *text, int64_t m, int64_t n, int64_t k, ft_math math, ft_variant_kind kind) {
  ft_epilogue *ep = parse_ok(text);
  ft_device_limits lim;
  ft_variant *v = NULL;
  int count = 0;
  ft_err e;
  if (!ep || ft_limits_for_arch("sm_90", &lim, &e) != FT_OK) {
    ft_ep_free(ep);
    return;
  }
  const ft_status s = ft_space_enumerate_ep(kind, m, n, k, math, FT_SPACE_FULL, ep, &lim, &v, NULL, &count, &e);
  ASSERT_TRUE(s == FT_OK || (s == FT_ERR_UNSUPPORTED && count == 0));
  for (int i = 0; i < count; i++) {
    ft_launch_geom g;
    memset(&g, 0, sizeof g);
    ft_variant_geometry(&v[i], m, n, k, &g);
    if (!g.pdl && !g.gpdl) {
      g_plain++;
      continue;
    }
    ft_kernel_src src = {0};
    ASSERT_OK(ft_codegen_variant(&v[i], ep, &src, &e));
    const int waits = src.text && calls_wait(src.text);
    char name[160];
    ft_variant_name(&v[i], name, sizeof name);
    if (!waits) FT_FAIL_AT_("%s (%s, %s): launched with PDL, its program never waits", name, text, ft_math_name(math));
    if (g.pdl && strcmp(src.kernel, "ft_gemm_tc"))
      FT_FAIL_AT_("%s: PDL on main kernel %s, not the tensor-core GEMM", name, src.kernel);
    g_pdl += g.pdl, g_gpdl += g.gpdl;
    ft_kernel_src_free(&src);
  }
  free(v);
  ft_ep_free(ep);
}

int main(void) {
  static const char *const epis[] = {"relu(x + bias)", "softmax(x + bias)", "groupnorm(x, 16)", "rowsum(x)",
                                     "batchnorm(x)", "silu(x) * x2"};
  static const ft_math maths[] = {FT_MATH_BF16, FT_MATH_TF32, FT_MATH_3XTF32, FT_MATH_FP32};
  for (size_t i = 0; i < sizeof epis / sizeof *epis; i++)
    for (size_t j = 0; j < sizeof maths / sizeof *maths; j++)
      for (int kind = 0; kind < 2; kind++) check_space(epis[i], 256, 1024, 512, maths[j], (ft_variant_kind)kind);
  check_space("relu(x * sx * sw + bias) where row sx, col sw", 127, 1008, 1008, FT_MATH_FP8, FT_VK_GEMM);
  check_space("relu(x * sx * sw + bias) where row sx, col sw", 127, 1008, 1008, FT_MATH_FP8, FT_VK_EPILOGUE);
  printf("PDL on %d main kernels and %d own GEMMs; %d variants launched plainly\n", g_pdl, g_gpdl, g_plain);
  ASSERT_TRUE(g_pdl > 100 && g_gpdl > 0 && g_plain > 0); /* each kind is there to check */
  return FT_TEST_DONE();
}
