/* 3xtf32 with x and W split before the kernel (family tc's presplit, kernels_src/gemm_tc.cu's
 * ft_tc_presplit and ft_mainloop_3x's pre-split branch) without a GPU: where it enumerates (the default and full spaces,
 * 3xtf32 only, never with aregs; families tc, tc_reduce, tc_norm and tc_pass's GEMM), its rules, the name and JSON both ways, the
 * geometry (the workspace holds x's and W's split rows of 2 Kp floats, Kp = K rounded up to 32;
 * shared memory: stages of both parts, no small buffers), and NVRTC compiles each form for sm_90a
 * without spills (--sweep: every presplit variant at four shapes, and a gated pair's at one). */
#include <stdlib.h>

#include "codegen.h"
#include "compile.h"
#include "epilogue_test_util.h"
#include "family.h"

static ft_variant *enumerate(const char *text, ft_math math, ft_space_scope mode, int *count, int *pre) {
  ft_epilogue *ep = parse_ok(text);
  ft_device_limits lim;
  ft_variant *v = NULL;
  *count = *pre = 0;
  ft_err e;
  if (ep && ft_limits_for_arch("sm_90", &lim, &e) == FT_OK)
    ASSERT_OK(ft_space_enumerate_ep(FT_VK_GEMM, 1000, 8192, 1000, math, mode, ep, &lim, &v, NULL, count, &e));
  for (int i = 0; i < *count; i++) *pre += v[i].tc.presplit;
  ft_ep_free(ep);
  return v;
}

static void test_enumeration(void) {
  int count = 0, pre = 0;
  ft_variant *v = enumerate("relu(x + bias)", FT_MATH_3XTF32, FT_SPACE_FULL, &count, &pre);
  ASSERT_TRUE(pre > 0);
  char why[256];
  ft_device_limits lim;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  for (int i = 0; i < count; i++) {
    if (!v[i].tc.presplit) continue;
    ASSERT_TRUE(v[i].family == FT_FAMILY_TC && !v[i].tc.aregs && v[i].split_k <= 1);
    if (!ft_variant_applicable(&v[i], 1000, 8192, 1000, &lim, why, sizeof why)) FT_FAIL_AT_("not applicable: %s", why);
  }
  free(v);
  /* The default space too (measured faster on an H100); other modes: none. */
  free(enumerate("relu(x + bias)", FT_MATH_3XTF32, FT_SPACE_PRUNED, &count, &pre));
  ASSERT_TRUE(pre > 0);
  free(enumerate("relu(x + bias)", FT_MATH_TF32, FT_SPACE_FULL, &count, &pre));
  ASSERT_EQ_INT(pre, 0);
  /* The reductions' tensor-core families pre-split too: groupnorm in the tile (tc_norm), the pass
   * after the GEMM (tc_pass, whose GEMM is family tc's), a row reduction in the tile (tc_reduce). */
  static const struct {
    const char *expr;
    int family;
  } reds[] = {{"groupnorm(x + bias, 512)", FT_FAMILY_TC_NORM}, {"groupnorm(x + bias, 512)", FT_FAMILY_TC_PASS},
              {"logsumexp(x + bias)", FT_FAMILY_TC_REDUCE}};
  for (size_t r = 0; r < sizeof reds / sizeof reds[0]; r++) {
    v = enumerate(reds[r].expr, FT_MATH_3XTF32, FT_SPACE_PRUNED, &count, &pre);
    int fam_pre = 0;
    for (int i = 0; i < count; i++) {
      fam_pre += v[i].tc.presplit && v[i].family == reds[r].family;
      if (v[i].tc.presplit && !ft_variant_applicable(&v[i], 1000, 8192, 1000, &lim, why, sizeof why))
        FT_FAIL_AT_("%s: not applicable: %s", reds[r].expr, why);
    }
    if (!fam_pre) FT_FAIL_AT_("%s: no pre-split variant of family %d", reds[r].expr, reds[r].family);
    free(v);
  }
}

static ft_variant pre_variant(void) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM, v.family = FT_FAMILY_TC, v.math = FT_MATH_3XTF32, v.bn = 128, v.bk = 32, v.stages = 3;
  v.swizzle = 8, v.tc.consumers = 2, v.tc.cluster = 2, v.tc.grid = 132, v.tc.chunk = 16, v.tc.presplit = 1;
  return v;
}

static void test_rules(void) {
  char why[256];
  ft_err e;
  ft_variant v = pre_variant();
  ASSERT_TRUE(ft_variant_valid(&v, why, sizeof why));
  v.math = FT_MATH_TF32, v.tc.chunk = 0;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
  ASSERT_CONTAINS(why, "presplit");
  v = pre_variant(), v.bn = 64, v.tc.aregs = 1;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
  v = pre_variant(), v.split_k = 2;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
  v = pre_variant(), v.tc.presplit = 2;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
  /* tc_norm and tc_reduce pre-split their own kernels; the rule's other families do not. */
  v = pre_variant(), v.family = FT_FAMILY_TC_NORM, v.bn = 64, v.tc.normw = 16, v.tc.normg = 512;
  if (!ft_variant_valid(&v, why, sizeof why)) FT_FAIL_AT_("tc_norm pre-split: %s", why);
  v = pre_variant(), v.family = FT_FAMILY_TC_REDUCE;
  if (!ft_variant_valid(&v, why, sizeof why)) FT_FAIL_AT_("tc_reduce pre-split: %s", why);
  /* The workspace: x's and W's split rows, at most 4 GiB (65536 + 16384 rows of 2 x 16384 floats: 10 GiB). */
  ft_device_limits lim;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  v = pre_variant();
  ASSERT_TRUE(ft_variant_applicable(&v, 4096, 16384, 16384, &lim, why, sizeof why));
  ASSERT_TRUE(!ft_variant_applicable(&v, 65536, 16384, 16384, &lim, why, sizeof why));
  ASSERT_CONTAINS(why, "GiB of workspace");
  /* Name and JSON both ways; the in-kernel split's JSON has no presplit key (stored results keep
   * their configuration text). */
  v = pre_variant();
  char name[160], json[FT_CONFIG_JSON_MAX];
  ft_variant_name(&v, name, sizeof name);
  ASSERT_EQ_STR(name, "tc_bm128_bn128_bk32_s3_c2_z8_p132_h16w_3xtf32");
  ASSERT_TRUE(ft_variant_json(&v, json, sizeof json) > 0);
  ASSERT_CONTAINS(json, "\"presplit\":1");
  ft_variant back;
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, &v, sizeof v) == 0);
  v.tc.presplit = 0;
  ASSERT_TRUE(ft_variant_json(&v, json, sizeof json) > 0);
  ASSERT_TRUE(strstr(json, "presplit") == NULL);
  /* Geometry: x's 1000 and W's 8192 rows of 2 x 1024 floats (K = 1000 rounded up to 32). */
  v = pre_variant();
  ft_launch_geom g;
  ft_variant_geometry(&v, 1000, 8192, 1000, &g);
  ASSERT_EQ_INT(g.presplit_kp, 1024);
  ASSERT_EQ_INT(g.presplit_wrows, 8192);
  ASSERT_TRUE(g.workspace_bytes == (size_t)(1000 + 8192) * 2 * 1024 * sizeof(float));
  ASSERT_TRUE(!g.has_reduce && g.presplit_off == 0);
  /* tc_reduce: its row statistics (1000 rows x 64 tiles of 128 columns) first, the split rows after
   * them, 256-byte aligned, so the finalize kernel and the split never share bytes. */
  v = pre_variant(), v.family = FT_FAMILY_TC_REDUCE;
  ft_variant_geometry(&v, 1000, 8192, 1000, &g);
  ASSERT_TRUE(g.has_reduce && g.presplit_kp == 1024 && g.presplit_off >= (size_t)1000 * 64 * sizeof(float) &&
              g.presplit_off % 256 == 0 && g.presplit_wrows == 8192);
  ASSERT_TRUE(g.workspace_bytes == g.presplit_off + (size_t)(1000 + 8192) * 2 * 1024 * sizeof(float));
  v = pre_variant();
  ft_variant_geometry(&v, 1000, 8192, 1000, &g);
  /* Shared memory: three stages of both parts of both tiles, no small buffers. */
  ASSERT_TRUE(g.smem == (size_t)3 * 2 * (128 + 128) * 128 + 16 * 3 + 1024);
  v.tc.presplit = 0, v.stages = 4;
  ft_variant_geometry(&v, 1000, 8192, 1000, &g);
  ASSERT_EQ_INT(g.presplit_kp, 0);
  ASSERT_TRUE(g.workspace_bytes == 0);
}

/* v[0..n) for ep through NVRTC and ptxas for sm_90a: each compiles, none spills. */
static void check_compiles(const ft_variant *v, int n, const ft_epilogue *ep) {
  ft_kernel_src *src = calloc((size_t)n + 1, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)n + 1, sizeof *jobs);
  ft_err e;
  ASSERT_TRUE(src && jobs);
  for (int i = 0; src && jobs && i < n; i++) {
    char why[256];
    if (!ft_variant_valid(&v[i], why, sizeof why)) FT_FAIL_AT_("variant %d: %s", i, why);
    ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[i], &e));
    jobs[i] = (ft_compile_job){.src = src[i].text, .hash = src[i].hash, .arch_suffix = src[i].arch_suffix};
  }
  if (src && jobs && n) ASSERT_OK(ft_compile_many(NULL, "sm_90", jobs, n, 2, &e));
  for (int i = 0; src && jobs && i < n; i++) {
    char name[160];
    ft_variant_name(&v[i], name, sizeof name);
    if (jobs[i].status != FT_OK) FT_FAIL_AT_("%s: does not compile: %.1500s", name, jobs[i].log ? jobs[i].log : "");
    else if (jobs[i].log && strstr(jobs[i].log, "bytes spill stores") && !strstr(jobs[i].log, " 0 bytes spill stores"))
      FT_FAIL_AT_("%s: spills: %.1500s", name, jobs[i].log);
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  free(src), free(jobs);
}

/* Each form (direct and TMA stores, the staged epilogue, clusters of 1 and 2, chunks 16 and 4,
 * BN 64). */
static void test_compiles(void) {
  ft_epilogue *ep = parse_ok("relu(x + bias) * s where scalar s = 0.5");
  if (!ep) return;
  enum { N = 5 };
  ft_variant v[N];
  for (int i = 0; i < N; i++) v[i] = pre_variant();
  v[1].tc.tstore = 1;
  v[2].tc.tstore = 1, v[2].tc.staged = 1, v[2].stages = 2;
  v[3].tc.cluster = 1, v[3].tc.chunk = 4;
  v[4].bn = 64, v[4].stages = 4;
  check_compiles(v, N, ep);
  ft_ep_free(ep);
  /* The reductions' programs: the row reduction in the tile (tc_reduce), groupnorm in the tile
   * (tc_norm, BN 64 in 3xtf32), the GEMM before a batchnorm pass (tc_pass, its column form). */
  static const char *const exprs[] = {"logsumexp(x + bias)", "relu(groupnorm(x + bias, 512))", "batchnorm(x + bias) * 2"};
  ft_variant r[3] = {pre_variant(), pre_variant(), pre_variant()};
  r[0].family = FT_FAMILY_TC_REDUCE;
  r[1].family = FT_FAMILY_TC_NORM, r[1].bn = 64, r[1].stages = 4, r[1].tc.normw = 16, r[1].tc.normg = 512;
  r[2].family = FT_FAMILY_TC_PASS, r[2].vec = 4, r[2].red = (ft_red_params){.block = 256, .tile = 128};
  for (int i = 0; i < 3; i++) {
    ft_epilogue *rep = parse_ok(exprs[i]);
    if (rep) check_compiles(&r[i], 1, rep);
    ft_ep_free(rep);
  }
}

/* --sweep (CTest label sweep): every presplit variant of the full space at issue 55's shapes with an
 * elementwise E, and of a gated pair at a Llama MLP's. */
static void test_sweep(void) {
  static const int64_t shapes[][3] = {{1024, 8192, 8192}, {128, 16384, 16384}, {2048, 4096, 8192}, {1000, 1040, 1000}};
  ft_epilogue *ep = parse_ok("gelu(x + bias) * s where scalar s = 0.5");
  ft_device_limits lim;
  ft_err e;
  int total = 0;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  for (size_t si = 0; ep && si < sizeof shapes / sizeof shapes[0]; si++) {
    ft_variant *v = NULL;
    int nv = 0, n = 0;
    ASSERT_OK(ft_space_enumerate_ep(FT_VK_GEMM, shapes[si][0], shapes[si][1], shapes[si][2], FT_MATH_3XTF32,
                                    FT_SPACE_FULL, ep, &lim, &v, NULL, &nv, &e));
    for (int i = 0; i < nv; i++)
      if (v[i].tc.presplit) v[n++] = v[i];
    check_compiles(v, n, ep);
    printf("  %lldx%lldx%lld: %d presplit variants compiled\n", (long long)shapes[si][0], (long long)shapes[si][1],
           (long long)shapes[si][2], n);
    if (!n) FT_FAIL_AT_("%lldx%lldx%lld: no presplit variant", (long long)shapes[si][0], (long long)shapes[si][1],
                        (long long)shapes[si][2]);
    total += n;
    free(v);
  }
  ft_ep_free(ep);
  /* A gated pair (SwiGLU's halves at a Llama MLP's shape): W's 2N interleaved rows split. */
  ft_epilogue *pair = parse_ok("silu(x) * x2");
  ft_variant *v = NULL;
  int nv = 0, n = 0;
  if (pair)
    ASSERT_OK(ft_space_enumerate_ep(FT_VK_GEMM, 4096, 14336, 4096, FT_MATH_3XTF32, FT_SPACE_FULL, pair, &lim, &v, NULL,
                                    &nv, &e));
  for (int i = 0; i < nv; i++)
    if (v[i].tc.presplit && v[i].tc.gated) v[n++] = v[i];
  if (pair) check_compiles(v, n, pair);
  printf("  4096x14336x4096 'silu(x) * x2': %d presplit gated variants compiled\n", n);
  if (pair && !n) FT_FAIL_AT_("%s", "silu(x) * x2 at 4096x14336x4096: no presplit gated variant");
  total += n;
  free(v);
  ft_ep_free(pair);
  printf("%d presplit variants compiled (sweep)\n", total);
}

int main(int argc, char **argv) {
  test_enumeration();
  test_rules();
  if (argc == 2 && strcmp(argv[1], "--sweep") == 0) test_sweep();
  else test_compiles();
  return FT_TEST_DONE();
}
