/* fp8 (e4m3) with a gated pair (E with x2, scaled by sx and sw2) and with a matrix operand (a bf16
 * residual) without a GPU: which variants the tensor-core family and the safe strategy (the gated
 * pass, the epilogue pass after cuBLASLt's FP8 GEMM) enumerate, their names, JSON and geometry, and
 * NVRTC compiling one variant of every kind for sm_90a with no spill (ft_compile_many rejects a
 * spilling kernel): each ping-pong form with each promotion form, one and two consumers, direct and
 * TMA stores. The rules themselves are test_fp8's. */
#include <stdint.h>

#include "epilogue_test_util.h"
#include "family.h"
#include "fusedtune.h"
#include "gated.h"

static const char k_swiglu[] = "silu(x * sx * sw) * (x2 * sx * sw2) where row sx, col sw, col sw2";
static const char k_geglu_resid[] =
    "gelu_tanh(x * sx * sw + b1) * (x2 * sx * sw2 + b2) + r where row sx, col sw, col sw2, col b1, col b2, mat r";
static const char k_resid[] = "x * sx * sw + bias + r where row sx, col sw, mat r";

static ft_variant *enumerate_at(const char *text, ft_variant_kind kind, int64_t m, int64_t n, int64_t k, int scope,
                                int *count) {
  ft_epilogue *ep = parse_ok(text);
  ft_device_limits lim;
  ft_variant *v = NULL;
  ft_err e;
  *count = 0;
  if (ep && ft_limits_for_arch("sm_90", &lim, &e) == FT_OK)
    ASSERT_OK(ft_space_enumerate_ep(kind, m, n, k, FT_MATH_FP8, (ft_space_scope)scope, ep, &lim, &v, NULL, count, &e));
  ft_ep_free(ep);
  return v;
}

/* The tensor-core family's fp8 gated variants: direct stores over the interleaved weight's 2n
 * columns, 16-column groups, BN <= 128 (past it fp8 takes only the late TMA-store form, which a
 * pair has not), both promotion forms and the ping-pong forms; named "_g_fp8". */
static void test_enumeration_tc(void) {
  int count = 0;
  ft_variant *v = enumerate_at(k_swiglu, FT_VK_GEMM, 1000, 4096, 4096, FT_SPACE_PRUNED, &count);
  ASSERT_TRUE(count > 8);
  int dual = 0, single = 0, pp[3] = {0, 0, 0};
  for (int i = 0; i < count; i++) {
    ASSERT_TRUE(v[i].family == FT_FAMILY_TC && v[i].tc.gated == 1 && v[i].math == FT_MATH_FP8);
    ASSERT_TRUE(v[i].bn % 16 == 0 && v[i].bn <= 128 && !v[i].tc.tstore && !v[i].split_k && !v[i].tc.streamk);
    ASSERT_TRUE(v[i].tc.chunk >= 1 && v[i].bk == 128);
    dual += v[i].tc.dual, single += !v[i].tc.dual, pp[v[i].tc.pingpong]++;
    char name[128];
    ft_variant_name(&v[i], name, sizeof name);
    ASSERT_CONTAINS(name, "_g_fp8");
    round_trips(&v[i]);
    ft_launch_geom g, plain;
    ft_variant_geometry(&v[i], 1000, 4096, 4096, &g);
    ft_variant u = v[i];
    u.tc.gated = 0;
    ft_variant_geometry(&u, 1000, 8192, 4096, &plain); /* the tiles of the plain GEMM of 2n columns */
    ASSERT_EQ_INT(g.grid[0], plain.grid[0]);
  }
  ASSERT_TRUE(dual > 0 && single > 0 && pp[0] > 0 && pp[1] > 0 && pp[2] > 0);
  free(v);
  /* A residual: every store form of fp8, TMA stores included. */
  v = enumerate_at(k_resid, FT_VK_GEMM, 1000, 4096, 4096, FT_SPACE_PRUNED, &count);
  int ts = 0, direct = 0;
  for (int i = 0; i < count; i++) {
    ASSERT_TRUE(v[i].family == FT_FAMILY_TC && !v[i].tc.gated);
    ts += v[i].tc.tstore, direct += !v[i].tc.tstore;
  }
  ASSERT_TRUE(ts > 0 && direct > 0);
  free(v);
  /* The full space too: every variant of an E with x2 gated, none past BN 128 or late; no gated
   * variant for an E without x2. */
  v = enumerate_at(k_geglu_resid, FT_VK_GEMM, 64, 512, 256, FT_SPACE_FULL, &count);
  ASSERT_TRUE(count > 0);
  for (int i = 0; i < count; i++) ASSERT_TRUE(v[i].tc.gated == 1 && v[i].bn <= 128 && !v[i].tc.late);
  free(v);
  v = enumerate_at(k_resid, FT_VK_GEMM, 64, 512, 256, FT_SPACE_FULL, &count);
  ASSERT_TRUE(count > 0);
  for (int i = 0; i < count; i++) ASSERT_TRUE(v[i].family == FT_FAMILY_TC && !v[i].tc.gated);
  free(v);
}

/* The safe strategy: the gated pass after cuBLASLt's FP8 GEMM of the interleaved codes (workspace
 * [m, 2n] bf16, x and W 16-byte aligned), the epilogue pass after it for a residual (no lt forms). */
static void test_enumeration_safe(void) {
  int count = 0;
  ft_variant *v = enumerate_at(k_swiglu, FT_VK_EPILOGUE, 100, 512, 256, FT_SPACE_PRUNED, &count);
  ASSERT_EQ_INT(count, 6); /* 3 blocks x ept 8, 16 at vec 8 */
  for (int i = 0; i < count; i++) {
    ASSERT_EQ_INT(v[i].family, FT_FAMILY_GATED_PASS);
    ASSERT_EQ_INT(v[i].vec, 8);
    ft_launch_geom g;
    ft_variant_geometry(&v[i], 100, 512, 256, &g);
    ASSERT_EQ_INT(g.gated, 1);
    ASSERT_EQ_INT(g.workspace_bytes, 100 * 2 * 512 * 2);
    size_t need[3];
    ft_family_of(&v[i])->alignment(&v[i], 100, 512, 256, need);
    ASSERT_TRUE(need[0] == 16 && need[1] == 16 && need[2] == 16);
    round_trips(&v[i]);
    char name[96];
    ft_variant_name(&v[i], name, sizeof name);
    if (i == 0) ASSERT_EQ_STR(name, "gate_b256_v8_e8_fp8");
  }
  free(v);
  /* Before sm_89 no FP8 GEMM: the pass is not applicable. */
  ft_device_limits old;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_80", &old, &e));
  ft_variant g = {.kind = FT_VK_EPILOGUE, .family = FT_FAMILY_GATED_PASS, .math = FT_MATH_FP8, .vec = 8,
                  .pass = {.block = 256, .ept = 8}};
  char why[160] = "";
  ASSERT_TRUE(!ft_variant_applicable(&g, 100, 512, 256, &old, why, sizeof why));
  ASSERT_CONTAINS(why, "fp8: cuBLASLt's FP8 GEMM needs sm_89 or newer");
  v = enumerate_at(k_resid, FT_VK_EPILOGUE, 100, 512, 256, FT_SPACE_PRUNED, &count);
  ASSERT_TRUE(count > 0);
  drop_chain(v, &count); /* the eager chain beside the passes: tests/cpu/test_chain.c */
  for (int i = 0; i < count; i++) ASSERT_TRUE(v[i].family == FT_FAMILY_EPILOGUE_PASS && !v[i].pass.lt && !v[i].pass.lt_c);
  free(v);
}

/* The kind of a tensor-core variant for the compile sample: what sets its registers and epilogue. */
static int tc_kind(const ft_variant *v) {
  return v->tc.pingpong + 3 * v->tc.dual + 6 * v->tc.tstore + 12 * v->tc.late + 24 * (v->tc.consumers - 1) +
         48 * (v->bn > 128);
}

/* The first variant of each kind of text's enumerations at (m, n, k), codegen'd into src[*n]. */
static void sample_kinds(const char *text, int64_t m, int64_t n, int64_t k, ft_kernel_src *src, int *nsrc, int max) {
  int count = 0;
  ft_variant *v = enumerate_at(text, FT_VK_GEMM, m, n, k, FT_SPACE_FULL, &count);
  ft_epilogue *ep = parse_ok(text);
  unsigned char seen[96] = {0};
  ft_err e;
  for (int i = 0; ep && i < count && *nsrc < max; i++) {
    const int kind = tc_kind(&v[i]);
    if (seen[kind]) continue;
    seen[kind] = 1;
    ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[(*nsrc)++], &e));
  }
  ASSERT_TRUE(*nsrc < max);
  free(v);
  ft_ep_free(ep);
}

/* src's FT_EPILOGUE_EXPR line into line ("" when it has none). */
static void expr_line(const ft_kernel_src *src, char *line, size_t size) {
  const char *expr = strstr(src->text, "\n#define FT_EPILOGUE_EXPR ");
  ASSERT_TRUE(expr != NULL);
  snprintf(line, size, "%.*s", expr ? (int)strcspn(expr + 1, "\n") : 0, expr ? expr + 1 : "");
}

static void test_compiles(void) {
  enum { MAX = 64 };
  static ft_kernel_src src[MAX];
  int n = 0;
  sample_kinds(k_geglu_resid, 1000, 4096, 4096, src, &n, MAX); /* two consumers */
  sample_kinds(k_swiglu, 64, 4096, 4096, src, &n, MAX);        /* one */
  const int gated = n;
  sample_kinds(k_resid, 1000, 4096, 4096, src, &n, MAX);
  ASSERT_TRUE(gated >= 8 && n - gated >= 8);
  /* The safe strategy's passes, every variant of the default space. */
  static const char *const texts[] = {k_swiglu, k_geglu_resid, k_resid};
  ft_err e;
  for (size_t t = 0; t < 3; t++) {
    int count = 0;
    ft_variant *v = enumerate_at(texts[t], FT_VK_EPILOGUE, 100, 512, 256, FT_SPACE_PRUNED, &count);
    ft_epilogue *ep = parse_ok(texts[t]);
    for (int i = 0; ep && i < count && n < MAX; i++) ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[n++], &e));
    free(v);
    ft_ep_free(ep);
  }
  ASSERT_TRUE(n < MAX);
  /* The scales read as fp32, the matrix and the bias as bf16 (ft_vec_t: no ft_vf32 on them); a
   * pair's sw2 and its col vectors b1, b2 as fp32 too. src[0] is k_geglu_resid's first (gated)
   * kernel, src[gated] k_resid's first. */
  char line[512];
  expr_line(&src[0], line, sizeof line);
  ASSERT_CONTAINS(src[0].text, "#define FT_FP8 1");
  /* Slots by name: b1 0, b2 1, r 2, sw 3, sw2 4, sx 5. */
  ASSERT_CONTAINS(line, "(x2 * ft_vf32(ep.v[5])[row] * ft_vf32(ep.v[4])[col] + ft_vf32(ep.v[1])[col])");
  ASSERT_CONTAINS(line, "x * ft_vf32(ep.v[5])[row] * ft_vf32(ep.v[3])[col] + ft_vf32(ep.v[0])[col]");
  ASSERT_CONTAINS(line, ") + ep.v[2][(long long)row");
  expr_line(&src[gated], line, sizeof line);
  ASSERT_CONTAINS(src[gated].text, "#define FT_FP8 1");
  /* Slots by name: bias 0, r 1, sw 2, sx 3. */
  ASSERT_CONTAINS(line, "x * ft_vf32(ep.v[3])[row] * ft_vf32(ep.v[2])[col] + ep.v[0][col] + ep.v[1][(long long)row");
  printf("%d fp8 gated, %d fp8 residual and pass kernels\n", gated, n - gated);
  compile_sources(src, n, "fp8 gated / residual");
}

int main(void) {
  test_enumeration_tc();
  test_enumeration_safe();
  test_compiles();
  return FT_TEST_DONE();
}
