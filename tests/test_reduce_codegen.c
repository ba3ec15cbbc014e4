/* The reduction pass (src/family_reduce.c, kernels_src/reduce_pass.cu) without a GPU: which
 * variants a reduction enumerates (and that no other family enumerates for one), their names,
 * JSON and geometry, the codegen refusals, and that every kind compiles with NVRTC in fp32 and
 * bf16, the eager chain's reduction steps included. */
#include "codegen.h"
#include "compile.h"
#include "epilogue_test_util.h"
#include "family.h"

static const char *const k_kinds[] = {
    "rowsum(sigmoid(x))", "rowmean(x + bias)", "rowmax(x) * 2", "-rowmin(x * r) where row r",
    "logsumexp(clamp(2 * (x + bias), -10, 10))", "gelu(softmax(x + bias))", "log_softmax(x) * g where col g",
    "silu(groupnorm(x + bias, 3) * g + b) where col g, col b",
    "batchnorm(x * 2) * g where col g", "relu(maxpool(x + bias, 3)) * r where row r",
    "logsumexp(avgpool(x * g, 4) * r) where col g, row r",
};
#define N_KINDS (sizeof k_kinds / sizeof k_kinds[0])

/* The pruned space of kind for text. */
static ft_variant *enumerate(const char *text, ft_variant_kind kind, int64_t m, int64_t n, ft_math math, int *count) {
  return enumerate_scope(text, kind, m, n, math, FT_SPACE_PRUNED, count);
}

static void test_enumeration(void) {
  int count = 0;
  /* Of the fused GEMM families only tc_reduce computes a reduction (tests/test_reduce_tc.c), and
   * none a softmax; the reduction pass computes nothing else. */
  ft_variant *v = enumerate("logsumexp(x + bias)", FT_VK_GEMM, 256, 4096, FT_MATH_BF16, &count);
  for (int i = 0; i < count; i++) ASSERT_EQ_STR(ft_family_of(&v[i])->name, "tc_reduce");
  free(v);
  v = enumerate("softmax(x + bias)", FT_VK_GEMM, 256, 4096, FT_MATH_BF16, &count);
  ASSERT_EQ_INT(count, 0);
  free(v);
  v = enumerate("relu(x + bias)", FT_VK_EPILOGUE, 256, 4096, FT_MATH_BF16, &count);
  ASSERT_TRUE(count > 0);
  for (int i = 0; i < count; i++) ASSERT_EQ_INT(v[i].layout, 0);
  free(v);
  /* logsumexp at N = 5000 in bf16: chunks of 1024, 4096 and all 5000 columns, vec 8. */
  v = enumerate("logsumexp(x + bias)", FT_VK_EPILOGUE, 300, 5000, FT_MATH_BF16, &count);
  ASSERT_EQ_INT(count, 6); /* 3 widths x 2 block sizes */
  int widths = 0;
  for (int i = 0; i < count; i++) {
    ASSERT_EQ_INT(v[i].layout, 1);
    ASSERT_EQ_INT(v[i].vec, 8);
    widths |= v[i].red.cols == 1024 ? 1 : v[i].red.cols == 4096 ? 2 : v[i].red.cols == 5000 ? 4 : 8;
    ft_launch_geom g;
    ft_variant_geometry(&v[i], 300, 5000, 64, &g);
    ASSERT_EQ_INT(g.grid[0], 300);
    ASSERT_EQ_INT(g.chunk_cols, v[i].red.cols);
    ASSERT_TRUE(g.workspace_bytes >= (size_t)300 * (size_t)v[i].red.cols * 2 + 300 * 8);
    char name[96], json[256];
    ft_variant_name(&v[i], name, sizeof name);
    ft_variant_json(&v[i], json, sizeof json);
    ft_variant back;
    ft_err e;
    ASSERT_OK(ft_variant_from_json(json, &back, &e));
    ASSERT_TRUE(memcmp(&back, &v[i], sizeof back) == 0);
    if (i == 0) ASSERT_CONTAINS(name, "red_b256_v8_c");
  }
  ASSERT_EQ_INT(widths, 7);
  free(v);
  /* Softmax in place (cols 0); a ragged N in fp32 reads one element at a time. */
  v = enumerate("softmax(x)", FT_VK_EPILOGUE, 5, 1001, FT_MATH_FP32, &count);
  ASSERT_EQ_INT(count, 2);
  for (int i = 0; i < count; i++) {
    ASSERT_EQ_INT(v[i].red.cols, 0);
    ASSERT_EQ_INT(v[i].vec, 1);
    ft_launch_geom g;
    ft_variant_geometry(&v[i], 5, 1001, 64, &g);
    ASSERT_EQ_INT(g.workspace_bytes, 0);
    ASSERT_EQ_INT(g.chunk_cols, 0);
  }
  if (count) {
    char name[96];
    ft_variant_name(&v[0], name, sizeof name);
    ASSERT_EQ_STR(name, "red_b256_v1");
  }
  free(v);
  /* Groupnorm in place; its accesses divide a group (4000 / 16 = 250: vec 2 in bf16). */
  v = enumerate("groupnorm(x, 16)", FT_VK_EPILOGUE, 8, 4000, FT_MATH_BF16, &count);
  ASSERT_EQ_INT(count, 2);
  for (int i = 0; i < count; i++) ASSERT_TRUE(v[i].red.cols == 0 && v[i].vec == 2);
  free(v);
  /* batchnorm: in place (cols 0), as the row-wise kinds. */
  v = enumerate("batchnorm(x)", FT_VK_EPILOGUE, 8, 64, FT_MATH_FP32, &count);
  ASSERT_EQ_INT(count, 2);
  for (int i = 0; i < count; i++) ASSERT_TRUE(v[i].red.cols == 0);
  free(v);
  /* A pool: chunks of whole windows (the last one too), read value by value. */
  v = enumerate("rowsum(maxpool(x, 3))", FT_VK_EPILOGUE, 8, 5000, FT_MATH_BF16, &count);
  ASSERT_EQ_INT(count, 6); /* 2 blocks x chunks of 1026, 4104 and all 5000 (5001) */
  for (int i = 0; i < count; i++) ASSERT_TRUE(v[i].vec == 1 && v[i].red.cols % 3 == 0);
  free(v);
  /* The reductions no kernel serves enumerate nothing: softmax of pooled values. */
  v = enumerate("softmax(maxpool(x, 2))", FT_VK_EPILOGUE, 8, 64, FT_MATH_FP32, &count);
  ASSERT_EQ_INT(count, 0);
  free(v);
}

static void test_codegen_refusals(void) {
  ft_epilogue *lse = parse_ok("logsumexp(x)"), *sm = parse_ok("softmax(x)"), *relu = parse_ok("relu(x)");
  ft_variant red = {0};
  red.kind = FT_VK_EPILOGUE, red.layout = 1, red.red.block = 256, red.vec = 1, red.red.cols = 0;
  ft_kernel_src k;
  ft_err e;
  if (lse && sm && relu) {
    ASSERT_EQ_INT(ft_codegen_variant(&red, lse, &k, &e), FT_ERR_INVALID_ARG); /* [M] needs chunks */
    ASSERT_CONTAINS(e.msg, "cols 0 cannot compute 'logsumexp'");
    ASSERT_OK(ft_codegen_variant(&red, sm, &k, &e));
    ft_kernel_src_free(&k);
    ASSERT_EQ_INT(ft_codegen_variant(&red, relu, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "compute reductions only");
    red.red.cols = 1024;
    ASSERT_EQ_INT(ft_codegen_variant(&red, sm, &k, &e), FT_ERR_INVALID_ARG);
    ft_epilogue *pool = parse_ok("avgpool(x, 3)");
    red.red.cols = 1024; /* not whole windows of 3 */
    if (pool) ASSERT_EQ_INT(ft_codegen_variant(&red, pool, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "cols 1024 is not a multiple of avgpool's window 3");
    ft_ep_free(pool);
    const ft_variant pass = {.kind = FT_VK_EPILOGUE, .vec = 4, .pass = {.block = 256, .ept = 8}};
    ASSERT_EQ_INT(ft_codegen_variant(&pass, lse, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "this one reduces");
  }
  ft_ep_free(lse), ft_ep_free(sm), ft_ep_free(relu);
}

/* Every kind in fp32 and bf16, the chain's reduction steps too, through NVRTC for sm_90. */
static void test_compiles(void) {
  ft_kernel_src src[64];
  int n = 0;
  ft_err e;
  for (int math = 0; math < 2; math++)
    for (size_t i = 0; i < N_KINDS; i++) {
      const ft_math mm = math ? FT_MATH_BF16 : FT_MATH_FP32;
      int count = 0;
      ft_variant *v = enumerate(k_kinds[i], FT_VK_EPILOGUE, 64, 3000, mm, &count);
      ft_epilogue *ep = parse_ok(k_kinds[i]);
      ASSERT_TRUE(count > 0);
      if (ep && count > 0 && n < 64) ASSERT_OK(ft_codegen_variant(&v[0], ep, &src[n++], &e));
      static ft_ep_eager plan;
      if (ep && ft_ep_eager_plan(ep, &plan, &e) == FT_OK)
        for (int s = 0; s < plan.nsteps && n < 64; s++)
          if (plan.steps[s].reduce) ASSERT_OK(ft_codegen_eager_reduce(&plan.steps[s], mm, math ? 8 : 4, &src[n++], &e));
      free(v);
      ft_ep_free(ep);
    }
  compile_sources(src, n, "reduction");
}

int main(void) {
  test_enumeration();
  test_codegen_refusals();
  test_compiles();
  return FT_TEST_DONE();
}
