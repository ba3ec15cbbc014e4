/* The reduction pass (src/family/family_reduce.c, kernels_src/reduce_pass.cu) without a GPU: which
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

/* The pruned space of kind for text, less the eager chain (tests/cpu/test_chain.c). */
static ft_variant *enumerate(const char *text, ft_variant_kind kind, int64_t m, int64_t n, ft_math math, int *count) {
  return drop_chain(enumerate_scope(text, kind, m, n, math, FT_SPACE_PRUNED, count), count);
}

static void test_enumeration(void) {
  int count = 0;
  /* Of the fused GEMM families only tc_reduce computes a reduction (tests/cpu/test_reduce_tc.c), and
   * none a softmax; the reduction pass computes nothing else. */
  ft_variant *v = enumerate("logsumexp(x + bias)", FT_VK_GEMM, 256, 4096, FT_MATH_BF16, &count);
  for (int i = 0; i < count; i++) ASSERT_EQ_STR(ft_family_of(&v[i])->name, "tc_reduce");
  free(v);
  v = enumerate("softmax(x + bias)", FT_VK_GEMM, 256, 4096, FT_MATH_BF16, &count);
  ASSERT_EQ_INT(count, 0);
  free(v);
  v = enumerate("relu(x + bias)", FT_VK_EPILOGUE, 256, 4096, FT_MATH_BF16, &count);
  ASSERT_TRUE(count > 0);
  for (int i = 0; i < count; i++) ASSERT_EQ_INT(v[i].family, 0);
  free(v);
  /* logsumexp at N = 5000 in bf16: chunks of 1024, 4096 and all 5000 columns, vec 8. */
  v = enumerate("logsumexp(x + bias)", FT_VK_EPILOGUE, 300, 5000, FT_MATH_BF16, &count);
  ASSERT_EQ_INT(count, 6); /* 3 widths x 2 block sizes */
  int widths = 0;
  for (int i = 0; i < count; i++) {
    ASSERT_EQ_INT(v[i].family, 1);
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
  /* Softmax in place (cols 0); a ragged N in fp32 reads one element at a time: two block-per-row
   * variants and four held ones (teams of 1024, 512, 256 and 128 holding 1, 2, 4 and 8 values each). */
  v = enumerate("softmax(x)", FT_VK_EPILOGUE, 5, 1001, FT_MATH_FP32, &count);
  ASSERT_EQ_INT(count, 6);
  int rows = 0, teams = 0;
  for (int i = 0; i < count; i++) {
    ASSERT_EQ_INT(v[i].red.cols, 0);
    ASSERT_EQ_INT(v[i].vec, 1);
    ft_launch_geom g;
    ft_variant_geometry(&v[i], 5, 1001, 64, &g);
    ASSERT_EQ_INT(g.workspace_bytes, 0);
    ASSERT_EQ_INT(g.chunk_cols, 0);
    char name[96];
    ft_variant_name(&v[i], name, sizeof name);
    rows += strcmp(name, "red_b256_v1") == 0;
    if (v[i].red.team) {
      teams |= v[i].red.team;
      ASSERT_TRUE(v[i].red.groups == 1 && v[i].red.block == v[i].red.team && g.grid[0] == 5);
      ASSERT_TRUE(v[i].red.team * v[i].red.held >= 1001 && v[i].red.team * v[i].red.held < 2002);
    }
  }
  ASSERT_EQ_INT(rows, 1);
  ASSERT_EQ_INT(teams, 1024 | 512 | 256 | 128);
  free(v);
  /* Groupnorm in place; its accesses divide a group (4000 / 16 = 250: vec 2 in bf16); the held
   * teams of 128, 64, 32 and 16 threads (one, two, four and eight accesses each). */
  v = enumerate("groupnorm(x, 16)", FT_VK_EPILOGUE, 8, 4000, FT_MATH_BF16, &count);
  ASSERT_EQ_INT(count, 6);
  for (int i = 0; i < count; i++) ASSERT_TRUE(v[i].red.cols == 0 && v[i].vec == 2);
  free(v);
  /* batchnorm: in place (cols 0), as the row-wise kinds, and the column form (one tile of 128 rows
   * holds all 8). */
  v = enumerate("batchnorm(x)", FT_VK_EPILOGUE, 8, 64, FT_MATH_FP32, &count);
  ASSERT_EQ_INT(count, 3);
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

/* The held form at the groupnorm shapes: groups of 16 features (512 a row of 8192) take a
 * team of 2 threads with one 16-byte access each, or one thread with two; 512 features take 64,
 * 32 or 16 threads. A whole row of 16384 (softmax) takes 1024 or 512 threads. The column form of
 * batchnorm at 16384 x 4096: strips of 256 columns (vec 8), a second kernel, a flag per strip. */
static void test_forms(void) {
  int count = 0;
  ft_variant *v = enumerate("groupnorm(x + bias, 512)", FT_VK_EPILOGUE, 1024, 8192, FT_MATH_BF16, &count);
  int seen = 0;
  for (int i = 0; i < count; i++) {
    if (!v[i].red.team) continue;
    ASSERT_TRUE(v[i].red.groups == 512 && v[i].vec == 8 && v[i].red.block == 256);
    seen |= v[i].red.team == 2 && v[i].red.held == 1 ? 1 : v[i].red.team == 1 && v[i].red.held == 2 ? 2 : 4;
    ft_launch_geom g;
    ft_variant_geometry(&v[i], 1024, 8192, 8192, &g);
    ASSERT_EQ_INT(g.grid[0], 1024 * 512 / (256 / v[i].red.team));
    ASSERT_EQ_INT(g.workspace_bytes, 0);
    char json[256];
    ft_variant back;
    ft_err e;
    ft_variant_json(&v[i], json, sizeof json);
    ASSERT_OK(ft_variant_from_json(json, &back, &e));
    ASSERT_TRUE(memcmp(&back, &v[i], sizeof back) == 0);
    /* Another N gives another segment: 4096 / 512 = 8 fits, 16384 / 512 = 32 does not. */
    ft_device_limits lim;
    ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
    ASSERT_TRUE(ft_variant_applicable(&v[i], 1024, 4096, 64, &lim, NULL, 0));
    ASSERT_TRUE(!ft_variant_applicable(&v[i], 1024, 16384, 64, &lim, NULL, 0));
  }
  ASSERT_EQ_INT(seen, 3);
  free(v);
  v = enumerate("groupnorm(x, 16)", FT_VK_EPILOGUE, 1024, 8192, FT_MATH_BF16, &count);
  seen = 0;
  for (int i = 0; i < count; i++) seen |= v[i].red.team == 64 ? 1 : v[i].red.team == 32 ? 2 : v[i].red.team == 16 ? 4 : 0;
  ASSERT_EQ_INT(seen, 7);
  free(v);
  v = enumerate("softmax(x + bias)", FT_VK_EPILOGUE, 128, 16384, FT_MATH_BF16, &count);
  seen = 0;
  for (int i = 0; i < count; i++) seen |= v[i].red.team == 1024 ? 1 : v[i].red.team == 512 ? 2 : 0;
  ASSERT_EQ_INT(seen, 3);
  free(v);
  v = enumerate("batchnorm(x + bias)", FT_VK_EPILOGUE, 16384, 4096, FT_MATH_BF16, &count);
  seen = 0;
  for (int i = 0; i < count; i++) {
    if (!v[i].red.tile) continue;
    seen++;
    ft_launch_geom g;
    ft_variant_geometry(&v[i], 16384, 4096, 4096, &g);
    ASSERT_TRUE(g.grid[0] == 16 && g.grid[1] == (unsigned)(16384 / v[i].red.tile) && g.has_reduce && g.flags_count_only);
    ASSERT_TRUE(g.rgrid[0] == g.grid[0] && g.rgrid[1] == g.grid[1] && g.rblock[0] == 256);
    ASSERT_EQ_INT(g.flag_bytes, 16 * sizeof(unsigned));
    ASSERT_EQ_INT(g.workspace_bytes, (size_t)(g.grid[1] + 1) * 4096 * 8);
    char json[256], name[96];
    ft_variant back;
    ft_err e;
    ft_variant_json(&v[i], json, sizeof json);
    ASSERT_OK(ft_variant_from_json(json, &back, &e));
    ASSERT_TRUE(memcmp(&back, &v[i], sizeof back) == 0);
    ft_variant_name(&v[i], name, sizeof name);
    ASSERT_CONTAINS(name, "_r");
  }
  ASSERT_EQ_INT(seen, 4);
  free(v);
}

static void test_codegen_refusals(void) {
  ft_epilogue *lse = parse_ok("logsumexp(x)"), *sm = parse_ok("softmax(x)"), *relu = parse_ok("relu(x)");
  ft_variant red = {0};
  red.kind = FT_VK_EPILOGUE, red.family = 1, red.red.block = 256, red.vec = 1, red.red.cols = 0;
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
    /* The held form: softmax or a groupnorm of its own G; the column form: batchnorm. */
    ft_epilogue *gn = parse_ok("groupnorm(x, 4)"), *bn = parse_ok("batchnorm(x)");
    red.red.cols = 0, red.red.team = 32, red.red.held = 1, red.red.groups = 2;
    if (gn) ASSERT_EQ_INT(ft_codegen_variant(&red, gn, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "held form (team 32, 2 segments a row) cannot compute 'groupnorm'");
    if (bn) ASSERT_EQ_INT(ft_codegen_variant(&red, bn, &k, &e), FT_ERR_INVALID_ARG);
    red.red.groups = 4;
    if (gn) ASSERT_OK(ft_codegen_variant(&red, gn, &k, &e));
    if (gn) ft_kernel_src_free(&k);
    red.red.team = red.red.held = red.red.groups = 0, red.red.tile = 64;
    ASSERT_EQ_INT(ft_codegen_variant(&red, sm, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "computes batchnorm, not 'softmax'");
    if (bn) ASSERT_OK(ft_codegen_variant(&red, bn, &k, &e));
    if (bn) ASSERT_EQ_STR(k.reduce, "ft_reduce_apply");
    if (bn) ft_kernel_src_free(&k);
    ft_ep_free(gn), ft_ep_free(bn);
  }
  ft_ep_free(lse), ft_ep_free(sm), ft_ep_free(relu);
}

/* Every held and column variant of the shapes through NVRTC for sm_90 (ptxas -v): no spill,
 * no stack, registers within the block's cap; fp32 at a ragged N too. */
static void test_forms_compile(void) {
  static const struct {
    const char *text;
    int m, n;
    ft_math math;
  } k_cases[] = {
      {"groupnorm(x + bias, 512)", 1024, 8192, FT_MATH_BF16},
      {"silu(groupnorm(x + bias, 256) * g + b) where col g, col b", 1024, 8192, FT_MATH_BF16},
      {"groupnorm(x + bias, 128)", 1024, 8192, FT_MATH_BF16},
      {"groupnorm(x + bias, 16)", 1024, 8192, FT_MATH_BF16},
      {"softmax(x + bias)", 128, 16384, FT_MATH_BF16},
      {"softmax(x)", 4096, 32768, FT_MATH_BF16},
      {"log_softmax(gelu(x + bias))", 1024, 8192, FT_MATH_BF16},
      {"softmax(x * 2)", 77, 1001, FT_MATH_FP32},
      {"groupnorm(x, 7)", 77, 1001, FT_MATH_FP32},
      {"batchnorm(x + bias) * g + b where col g, col b", 16384, 4096, FT_MATH_BF16},
      {"batchnorm(x)", 77, 1001, FT_MATH_FP32},
  };
  int checked = 0;
  for (size_t c = 0; c < sizeof k_cases / sizeof k_cases[0]; c++) {
    int count = 0;
    ft_variant *v = enumerate(k_cases[c].text, FT_VK_EPILOGUE, k_cases[c].m, k_cases[c].n, k_cases[c].math, &count);
    ft_epilogue *ep = parse_ok(k_cases[c].text);
    for (int i = 0; ep && i < count; i++) {
      if (!v[i].red.team && !v[i].red.tile) continue;
      ft_kernel_src k;
      ft_kernel_usage u;
      ft_err e;
      char name[96];
      ft_variant_name(&v[i], name, sizeof name);
      ASSERT_OK(ft_codegen_variant(&v[i], ep, &k, &e));
      const char *kernels[2] = {k.kernel, k.reduce};
      for (int j = 0; j < 2 && kernels[j][0]; j++) {
        if (ft_compile_usage(k.text, "sm_90", kernels[j], &u, &e) != FT_OK) {
          FT_FAIL_AT_("%s %s: %s", k_cases[c].text, name, e.msg);
          continue;
        }
        const int cap = ft_family_of(&v[i])->reg_cap(&v[i]);
        if (u.regs > cap || u.spill_stores || u.spill_loads || u.stack)
          FT_FAIL_AT_("%s %s %s: %d regs (cap %d), %d B spill stores, %d B spill loads, %d B stack", k_cases[c].text,
                      name, kernels[j], u.regs, cap, u.spill_stores, u.spill_loads, u.stack);
        printf("  %-40.40s %-30s %-16s %3d regs\n", k_cases[c].text, name, kernels[j], u.regs);
        checked++;
      }
      ft_kernel_src_free(&k);
    }
    free(v);
    ft_ep_free(ep);
  }
  ASSERT_TRUE(checked >= 20);
  printf("%d held and column kernels checked for spills\n", checked);
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
  test_forms();
  test_codegen_refusals();
  test_forms_compile();
  test_compiles();
  return FT_TEST_DONE();
}
