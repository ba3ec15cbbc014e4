/* Gated pairs (E with x2) without a GPU: the interleaved weight's helper (ft_gated_interleave on
 * host memory, its refusals), the column pairing the reference and the kernels share, the problem
 * rule (n a multiple of 8; fp8's scales of x2 in test_fp8), which families enumerate for a pair (the gated pass and the
 * tensor-core family's gated variants, nothing else), their names, JSON and geometry, codegen's refusals, and NVRTC compiling the gated passes (no
 * spills: ft_compile_many rejects a spilling kernel). */
#include <stdint.h>

#include "codegen.h"
#include "compile.h"
#include "epilogue_test_util.h"
#include "family.h"
#include "fusedtune.h"
#include "gated.h"

/* Element (r, c) of an [n, k] weight of elem-byte elements, marked by which weight it is. */
static void fill(unsigned char *w, int which, int n, int k, size_t elem) {
  for (int r = 0; r < n; r++)
    for (int c = 0; c < k; c++)
      for (size_t b = 0; b < elem; b++) w[((size_t)r * k + c) * elem + b] = (unsigned char)(which * 128 + (r * 7 + c + (int)b) % 127);
}

static void test_interleave(void) {
  enum { N = 24, K = 5 };
  static const size_t elems[] = {1, 2, 4};
  for (size_t e = 0; e < 3; e++) {
    const size_t elem = elems[e];
    static unsigned char w1[N * K * 4], w2[N * K * 4], d[2 * N * K * 4], ref1[N * K * 4], ref2[N * K * 4];
    fill(w1, 0, N, K, elem), fill(w2, 1, N, K, elem);
    memcpy(ref1, w1, sizeof w1), memcpy(ref2, w2, sizeof w2);
    char msg[200] = "";
    ASSERT_OK(ft_gated_interleave(w1, w2, d, N, K, elem, 0, msg, sizeof msg));
    /* Row 16j + i of dst: W1's 8j + i for i < 8, W2's 8j + i - 8 after. */
    int bad = 0;
    const size_t row = (size_t)K * elem;
    for (int r = 0; r < 2 * N; r++) {
      const int j = r / 16, i = r % 16;
      const unsigned char *src = i < 8 ? ref1 + (size_t)(8 * j + i) * row : ref2 + (size_t)(8 * j + i - 8) * row;
      bad += memcmp(d + (size_t)r * row, src, row) != 0;
    }
    ASSERT_EQ_INT(bad, 0);
    /* The reference's pairing: output column c's x is the product's column ft_gated_x_col(c). */
    for (int c = 0; c < N; c++) {
      const int64_t xc = ft_gated_x_col(c);
      bad += memcmp(d + (size_t)xc * row, ref1 + (size_t)c * row, row) != 0;
      bad += memcmp(d + (size_t)(xc + FT_GATED_GROUP) * row, ref2 + (size_t)c * row, row) != 0;
    }
    ASSERT_EQ_INT(bad, 0);
  }
  static unsigned char a[64 * 4], b[64 * 4], d[128 * 4];
  char msg[200];
  ASSERT_EQ_INT(ft_gated_interleave(a, b, d, 12, 4, 2, 0, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "n must be a positive multiple of 8");
  ASSERT_EQ_INT(ft_gated_interleave(a, b, d, 8, 4, 3, 0, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "element size 3: must be 1, 2 or 4 bytes");
  ASSERT_EQ_INT(ft_gated_interleave(a, NULL, d, 8, 4, 2, 0, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "must not be NULL");
  ASSERT_EQ_INT(ft_gated_interleave(a, b, a + 2, 8, 4, 2, 0, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "dst overlaps w1");
  ASSERT_EQ_INT(ft_gated_interleave(a, b, d, 8, 0, 2, 0, NULL, 0), FT_ERR_INVALID_ARG); /* msg may be NULL */
}

static void test_problem_rule(void) {
  char msg[256];
  ft_problem p = {.m = 16, .n = 100, .k = 64, .epilogue = "silu(x) * x2", .math = FT_MATH_BF16};
  ASSERT_EQ_INT(ft_check_problem(&p, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "n 100: an epilogue with x2 (a gated pair) needs n a multiple of 8");
  p.n = 104;
  ASSERT_OK(ft_check_problem(&p, msg, sizeof msg));
  /* fp8 serves a pair whose x2 is scaled by sx and its own weight's sw2 (test_fp8 has the rules). */
  p.math = FT_MATH_FP8, p.k = 64, p.n = 112;
  ASSERT_EQ_INT(ft_check_problem(&p, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "fp8: the epilogue must scale x by sx and sw");
  p.epilogue = "silu(x * sx * sw) * (x2 * sx * sw2) where row sx, col sw, col sw2";
  ASSERT_OK(ft_check_problem(&p, msg, sizeof msg));
}

static void test_enumeration(void) {
  int count = 0;
  /* The tensor-core family's gated variants alone among the fused ones: 16-column groups, direct
   * stores, tiles over the GEMM's 2n columns. */
  ft_variant *v = enumerate_scope("silu(x) * x2", FT_VK_GEMM, 64, 512, FT_MATH_BF16, FT_SPACE_FULL, &count);
  ASSERT_TRUE(count > 0);
  for (int i = 0; i < count; i++) {
    ASSERT_TRUE(v[i].family == 4 && v[i].tc.gated == 1 && v[i].bn % 16 == 0 && !v[i].tc.tstore && v[i].split_k == 0 &&
                !v[i].tc.streamk);
    ft_launch_geom g, plain;
    ft_variant_geometry(&v[i], 64, 512, 64, &g);
    ft_variant u = v[i];
    u.tc.gated = 0;
    ft_variant_geometry(&u, 64, 1024, 64, &plain); /* the same tiles as the plain GEMM of 2n columns */
    ASSERT_EQ_INT(g.grid[0], plain.grid[0]);
    char name[128], json[512];
    ft_variant_name(&v[i], name, sizeof name);
    ASSERT_CONTAINS(name, "_g_bf16");
    ft_variant_json(&v[i], json, sizeof json);
    ASSERT_CONTAINS(json, "\"gated\":1");
    ft_variant back;
    ft_err e;
    ASSERT_OK(ft_variant_from_json(json, &back, &e));
    ASSERT_TRUE(memcmp(&back, &v[i], sizeof back) == 0);
  }
  free(v);
  /* 3xtf32: the tensor-core family's gated forms, the split in shared memory, x in registers and
   * x and W split before the kernel (W's 2N interleaved rows) among them. */
  v = enumerate_scope("silu(x) * x2", FT_VK_GEMM, 64, 512, FT_MATH_3XTF32, FT_SPACE_FULL, &count);
  ASSERT_TRUE(count > 0);
  int forms[3] = {0, 0, 0}; /* in-kernel split, aregs, presplit */
  for (int i = 0; i < count; i++) {
    ASSERT_EQ_INT(v[i].tc.gated, 1);
    forms[v[i].tc.aregs ? 1 : v[i].tc.presplit ? 2 : 0]++;
    if (v[i].tc.presplit) {
      ft_launch_geom g;
      memset(&g, 0, sizeof g);
      ft_variant_geometry(&v[i], 64, 512, 520, &g);
      ASSERT_TRUE(g.workspace_bytes >= (size_t)(64 + 2 * 512) * 2 * (size_t)g.presplit_kp * sizeof(float));
      ASSERT_EQ_INT(g.presplit_wrows, 2 * 512); /* launch.c splits the interleaved weight's 2N rows */
    }
  }
  ASSERT_TRUE(forms[0] > 0 && forms[1] > 0 && forms[2] > 0);
  free(v);
  v = enumerate_scope("silu(x)", FT_VK_GEMM, 64, 512, FT_MATH_BF16, FT_SPACE_FULL, &count);
  for (int i = 0; i < count; i++) ASSERT_EQ_INT(v[i].tc.gated, 0);
  free(v);
  v = enumerate_scope("relu(x)", FT_VK_EPILOGUE, 64, 512, FT_MATH_BF16, FT_SPACE_FULL, &count);
  for (int i = 0; i < count; i++) ASSERT_TRUE(v[i].family != 2);
  free(v);
  v = enumerate_scope("silu(x) * x2", FT_VK_EPILOGUE, 100, 520, FT_MATH_BF16, FT_SPACE_PRUNED, &count);
  ASSERT_EQ_INT(count, 6); /* 3 blocks x ept 8, 16 at vec 8 */
  for (int i = 0; i < count; i++) {
    ASSERT_EQ_INT(v[i].family, 2);
    ASSERT_EQ_INT(v[i].vec, 8);
    ft_launch_geom g;
    ft_variant_geometry(&v[i], 100, 520, 64, &g);
    ASSERT_EQ_INT(g.gated, 1);
    ASSERT_EQ_INT(g.workspace_bytes, 100 * 2 * 520 * 2);
    ASSERT_EQ_INT(g.grid[0], (100 * 520 + v[i].pass.block * v[i].pass.ept - 1) / (v[i].pass.block * v[i].pass.ept));
    char name[96], json[256];
    ft_variant_name(&v[i], name, sizeof name);
    ft_variant_json(&v[i], json, sizeof json);
    ft_variant back;
    ft_err e;
    ASSERT_OK(ft_variant_from_json(json, &back, &e));
    ASSERT_TRUE(memcmp(&back, &v[i], sizeof back) == 0);
    if (i == 0) ASSERT_EQ_STR(name, "gate_b256_v8_e8_bf16");
  }
  free(v);
  /* n not a multiple of 8: nothing applies. */
  v = enumerate_scope("silu(x) * x2", FT_VK_EPILOGUE, 100, 100, FT_MATH_FP32, FT_SPACE_FULL, &count);
  ASSERT_EQ_INT(count, 0);
  free(v);
}

/* A sample of the tensor-core family's gated variants through NVRTC for sm_90a: the first and
 * last of the default space in bf16, fp16, tf32 and 3xtf32 (ptxas's spills are rejections). */
static void test_compiles_tc(void) {
  static const ft_math maths[] = {FT_MATH_BF16, FT_MATH_FP16, FT_MATH_TF32, FT_MATH_3XTF32};
  static ft_kernel_src src[8];
  int n = 0;
  ft_err e;
  ft_epilogue *ep = parse_ok("gelu_tanh(x + b1) * (x2 + b2) + r where col b1, col b2, mat r");
  for (size_t m = 0; ep && m < sizeof maths / sizeof maths[0]; m++) {
    int count = 0;
    ft_device_limits lim;
    ft_variant *v = NULL;
    ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
    ASSERT_OK(ft_space_enumerate_ep(FT_VK_GEMM, 4096, 14336, 4096, maths[m], FT_SPACE_PRUNED, ep, &lim, &v, NULL, &count, &e));
    ASSERT_TRUE(count > 1);
    for (int i = 0; i < count && n < 8; i += count - 1 > 0 ? count - 1 : 1) {
      ASSERT_TRUE(v[i].tc.gated == 1);
      ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[n++], &e));
    }
    free(v);
  }
  ft_ep_free(ep);
  compile_sources(src, n, "gated tc");
}

static void test_codegen(void) {
  ft_epilogue *gated = parse_ok("silu(x) * x2"), *plain = parse_ok("silu(x)");
  const ft_variant gate = {.kind = FT_VK_EPILOGUE, .family = FT_FAMILY_GATED_PASS, .math = FT_MATH_BF16, .vec = 8, .pass = {.block = 256, .ept = 8}};
  const ft_variant pass = {.kind = FT_VK_EPILOGUE, .math = FT_MATH_BF16, .vec = 4, .pass = {.block = 256, .ept = 8}};
  ft_kernel_src k;
  ft_err e;
  if (gated && plain) {
    ASSERT_OK(ft_codegen_variant(&gate, gated, &k, &e));
    ASSERT_EQ_STR(k.kernel, "ft_gated_pass");
    ASSERT_TRUE(k.text && strstr(k.text, "#define FT_EPILOGUE_EXPR ((ft_silu(x) * x2))"));
    ft_kernel_src_free(&k);
    ASSERT_EQ_INT(ft_codegen_variant(&gate, plain, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "computes a gated pair, and the epilogue does not use x2");
    ASSERT_EQ_INT(ft_codegen_variant(&pass, gated, &k, &e), FT_ERR_UNSUPPORTED);
    ASSERT_CONTAINS(e.msg, "x2");
  }
  ft_ep_free(gated), ft_ep_free(plain);
}

/* The gated passes through NVRTC: the full space of one expression in fp32 and bf16, the default
 * space of two in every mode the family serves. */
static void test_compiles(void) {
  static const char *const texts[] = {"silu(x) * x2", "gelu_tanh(x + b1) * (x2 + b2) + r where col b1, col b2, mat r"};
  static const ft_math maths[] = {FT_MATH_FP32, FT_MATH_TF32, FT_MATH_BF16, FT_MATH_FP16, FT_MATH_3XTF32};
  enum { MAX = 256 };
  static ft_kernel_src src[MAX];
  int n = 0;
  ft_err e;
  for (size_t t = 0; t < 2; t++)
    for (size_t m = 0; m < sizeof maths / sizeof maths[0]; m++) {
      int count = 0;
      const int full = t == 0 && (maths[m] == FT_MATH_FP32 || maths[m] == FT_MATH_BF16);
      ft_variant *v = enumerate_scope(texts[t], FT_VK_EPILOGUE, 64, 1024, maths[m], full ? FT_SPACE_FULL : FT_SPACE_PRUNED, &count);
      ft_epilogue *ep = parse_ok(texts[t]);
      ASSERT_TRUE(count > 0);
      for (int i = 0; ep && i < count && n < MAX; i++) ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[n++], &e));
      free(v);
      ft_ep_free(ep);
    }
  ASSERT_TRUE(n < MAX);
  compile_sources(src, n, "gated pass");
}

int main(void) {
  test_interleave();
  test_problem_rule();
  test_enumeration();
  test_codegen();
  test_compiles();
  test_compiles_tc();
  return FT_TEST_DONE();
}
