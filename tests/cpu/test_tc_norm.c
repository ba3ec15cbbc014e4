/* Family tc_norm without a GPU (src/family/tc/family_tc_norm.c: groupnorm fused into the
 * tensor-core GEMM where its groups lie whole in the tile): what enumerates it (groups of 2, 4 and
 * multiples of 8 columns up to 128, in bf16, fp16, tf32 and 3xtf32; not groups of 256 or 512, nor 6
 * columns, nor a one-value reduction, nor a matrix operand, nor fp32 or fp8), its rules (BN holding
 * whole groups and at most 128 columns per consumer, 64 in 3xtf32; N = width x G; no TMA stores),
 * the name, JSON both ways, what codegen writes, and NVRTC compiles for sm_90a without spills. */
#include <stdlib.h>

#include "codegen.h"
#include "compile.h"
#include "epilogue_test_util.h"
#include "family.h"

/* The pruned GEMM-kind space of text on (m, n, k) in math, and how many of it are tc_norm's. */
static ft_variant *enumerate(const char *text, int64_t m, int64_t n, int64_t k, ft_math math, int *count, int *tcn) {
  ft_epilogue *ep = parse_ok(text);
  ft_device_limits lim;
  ft_variant *v = NULL;
  *count = *tcn = 0;
  ft_err e;
  if (ep && ft_limits_for_arch("sm_90", &lim, &e) == FT_OK) {
    const ft_status s =
        ft_space_enumerate_ep(FT_VK_GEMM, m, n, k, math, FT_SPACE_PRUNED, ep, &lim, &v, NULL, count, &e);
    ASSERT_TRUE(s == FT_OK || (s == FT_ERR_UNSUPPORTED && *count == 0));
  }
  for (int i = 0; i < *count; i++) *tcn += v[i].family == FT_FAMILY_TC_NORM;
  ft_ep_free(ep);
  return v;
}

static void test_enumeration(void) {
  static const struct {
    const char *expr;
    int n, width; /* 0: none */
  } cases[] = {
      {"groupnorm(x + bias, 512)", 8192, 16},  {"groupnorm(x, 256) * 2", 8192, 32},  {"relu(groupnorm(x, 4096))", 8192, 2},
      {"groupnorm(x, 2048)", 8192, 4},          {"groupnorm(x, 1024)", 8192, 8},       {"groupnorm(x, 64)", 8192, 128},
      {"groupnorm(x, 32)", 8192, 0},            {"groupnorm(x, 16)", 8192, 0},        {"groupnorm(x, 100)", 600, 0},
      {"rowsum(x)", 8192, 0},                   {"softmax(x)", 8192, 0},              {"groupnorm(x, 512) + r where mat r", 8192, 0},
  };
  static const ft_math modes[] = {FT_MATH_BF16, FT_MATH_FP16, FT_MATH_TF32, FT_MATH_3XTF32};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
      int count = 0, tcn = 0;
      ft_variant *v = enumerate(cases[c].expr, 1000, cases[c].n, 1024, modes[m], &count, &tcn);
      if (!cases[c].width || (modes[m] == FT_MATH_3XTF32 && cases[c].width > 64)) {
        if (tcn) FT_FAIL_AT_("%s %s: %d tc_norm variants, none expected", cases[c].expr, ft_math_name(modes[m]), tcn);
      } else if (!tcn) {
        FT_FAIL_AT_("%s %s: no tc_norm variant", cases[c].expr, ft_math_name(modes[m]));
      }
      for (int i = 0; i < count; i++) {
        if (v[i].family != FT_FAMILY_TC_NORM) continue;
        const int msub = v[i].tc.pingpong == 2 ? 2 : 1;
        ASSERT_EQ_INT(v[i].tc.normw, cases[c].width);
        ASSERT_EQ_INT(v[i].tc.normw * v[i].tc.normg, cases[c].n);
        ASSERT_TRUE(v[i].bn % v[i].tc.normw == 0 && msub * v[i].bn <= (modes[m] == FT_MATH_3XTF32 ? 64 : 128));
        ASSERT_TRUE(!v[i].tc.tstore && !v[i].split_k && !v[i].tc.streamk && !v[i].tc.gated);
      }
      free(v);
    }
  /* fp32 (FFMA) and fp8: none. */
  int count = 0, tcn = 0;
  free(enumerate("groupnorm(x + bias, 512)", 1000, 8192, 1024, FT_MATH_FP32, &count, &tcn));
  ASSERT_EQ_INT(tcn, 0);
}

/* A bf16 variant of groups of 16 columns in 128-wide tiles, for N = 8192. */
static ft_variant tcn_variant(void) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM, v.family = FT_FAMILY_TC_NORM, v.math = FT_MATH_BF16, v.bn = 128, v.bk = 64, v.stages = 6;
  v.swizzle = 8, v.tc.consumers = 2, v.tc.cluster = 1, v.tc.grid = 132, v.tc.normw = 16, v.tc.normg = 512;
  return v;
}

static void test_rules(void) {
  ft_device_limits lim;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  char why[256];
  ft_variant v = tcn_variant();
  ASSERT_TRUE(ft_variant_valid(&v, why, sizeof why));
  ASSERT_TRUE(ft_variant_applicable(&v, 1000, 8192, 1024, &lim, why, sizeof why));
  ASSERT_TRUE(!ft_variant_applicable(&v, 1000, 4096, 1024, &lim, why, sizeof why)); /* another N: other groups */
  ASSERT_CONTAINS(why, "is not 512 groups of 16 columns");
  v.bn = 192;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
  ASSERT_CONTAINS(why, "at most 128 columns");
  v = tcn_variant(), v.tc.normw = 24;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why)); /* 24 does not divide 128 */
  v = tcn_variant(), v.tc.normw = 6, v.bn = 96;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why)); /* 6 columns span quads unevenly */
  v = tcn_variant(), v.tc.tstore = 1;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
  v = tcn_variant(), v.math = FT_MATH_3XTF32, v.bk = 32, v.tc.chunk = 4;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
  ASSERT_CONTAINS(why, "3xtf32");
  v.bn = 64;
  ASSERT_TRUE(ft_variant_valid(&v, why, sizeof why));
  /* Family tc keeps its fields zero. */
  v = tcn_variant(), v.family = FT_FAMILY_TC;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
  ASSERT_CONTAINS(why, "family tc_norm's");
  /* Name and JSON both ways. */
  v = tcn_variant();
  char name[160];
  ft_variant_name(&v, name, sizeof name);
  ASSERT_EQ_STR(name, "tcn_bm128_bn128_bk64_s6_c1_z8_p132_w16_bf16");
  char json[FT_CONFIG_JSON_MAX];
  ASSERT_TRUE(ft_variant_json(&v, json, sizeof json) > 0);
  ASSERT_CONTAINS(json, "\"normw\":16");
  ASSERT_CONTAINS(json, "\"normg\":512");
  ft_variant back;
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, &v, sizeof v) == 0);
  /* No workspace, no second kernel. */
  ft_launch_geom g;
  ft_variant_geometry(&v, 1000, 8192, 1024, &g);
  ASSERT_TRUE(g.workspace_bytes == 0 && !g.has_reduce);
}

static void test_codegen(void) {
  ft_epilogue *gn = parse_ok("silu(groupnorm(x + bias, 512) * g + b) where col g, col b"), *sm = parse_ok("softmax(x)");
  ft_variant v = tcn_variant();
  ft_kernel_src k;
  ft_err e;
  if (gn && sm) {
    ASSERT_OK(ft_codegen_variant(&v, gn, &k, &e));
    ASSERT_EQ_STR(k.kernel, "ft_gemm_tc");
    ASSERT_EQ_STR(k.reduce, "");
    ASSERT_CONTAINS(k.text, "#define FT_TC_NORM_W 16\n");
    ASSERT_CONTAINS(k.text, "#define FT_EP_RED_KIND 8\n");
    ASSERT_CONTAINS(k.text, "#define FT_RED_POST (");
    ASSERT_CONTAINS(k.text, "ft_tile_groupnorm");
    ft_kernel_src_free(&k);
    ASSERT_EQ_INT(ft_codegen_variant(&v, sm, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "do not compute 'softmax'");
    /* Another G than the variant's: refused (its width would normalize other groups). */
    ft_epilogue *other = parse_ok("groupnorm(x + bias, 256)");
    if (other) {
      ASSERT_EQ_INT(ft_codegen_variant(&v, other, &k, &e), FT_ERR_INVALID_ARG);
      ASSERT_CONTAINS(e.msg, "holds groupnorm's 512 groups, E has 256");
    }
    ft_ep_free(other);
  }
  ft_ep_free(gn), ft_ep_free(sm);
}

/* Each width's first variant, in bf16 and 3xtf32, through NVRTC and ptxas for sm_90a: no spill. */
static void test_compiles(void) {
  static const struct {
    const char *expr;
    int n;
    ft_math math;
  } probs[] = {{"silu(groupnorm(x + bias, 512) * g + b) where col g, col b", 8192, FT_MATH_BF16},
               {"groupnorm(x * 2, 4096)", 8192, FT_MATH_FP16},
               {"relu(groupnorm(x + bias, 2048))", 8192, FT_MATH_TF32},
               {"groupnorm(gelu(x + bias), 128) * s where scalar s", 8192, FT_MATH_3XTF32}};
  enum { N = sizeof probs / sizeof probs[0] };
  ft_kernel_src src[N];
  ft_compile_job jobs[N];
  memset(jobs, 0, sizeof jobs);
  memset(src, 0, sizeof src);
  ft_err e;
  for (int i = 0; i < N; i++) {
    int count = 0, tcn = 0;
    ft_variant *v = enumerate(probs[i].expr, 1000, probs[i].n, 1024, probs[i].math, &count, &tcn);
    ft_epilogue *ep = parse_ok(probs[i].expr);
    int at = -1;
    for (int j = 0; j < count && at < 0; j++)
      if (v[j].family == FT_FAMILY_TC_NORM) at = j;
    ASSERT_TRUE(at >= 0 && ep);
    if (at >= 0 && ep) ASSERT_OK(ft_codegen_variant(&v[at], ep, &src[i], &e));
    jobs[i] = (ft_compile_job){.src = src[i].text, .hash = src[i].hash, .arch_suffix = src[i].arch_suffix};
    free(v);
    ft_ep_free(ep);
  }
  ASSERT_OK(ft_compile_many(NULL, "sm_90", jobs, N, 2, &e));
  for (int i = 0; i < N; i++) {
    if (jobs[i].status != FT_OK) FT_FAIL_AT_("%s: does not compile: %.2000s", probs[i].expr, jobs[i].log ? jobs[i].log : "");
    else if (jobs[i].log && (strstr(jobs[i].log, "bytes spill stores") && !strstr(jobs[i].log, " 0 bytes spill stores")))
      FT_FAIL_AT_("%s: spills: %.2000s", probs[i].expr, jobs[i].log);
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
}

/* --sweep (CTest label sweep): every tc_norm variant the pruned space enumerates for each group width
 * in each mode, through NVRTC and ptxas for sm_90a: none spills (the sample above takes one each). */
static void test_sweep(void) {
  static const struct {
    const char *expr;
    int64_t m, n, k;
  } probs[] = {{"groupnorm(x + bias, 4096)", 1000, 8192, 1024},                        /* 2 columns */
               {"relu(groupnorm(x, 2048))", 77, 8192, 264},                             /* 4 */
               {"groupnorm(x * 2, 1024) * s where scalar s", 1000, 8192, 1024},         /* 8 */
               {"silu(groupnorm(x + bias, 512) * g + b) where col g, col b", 1000, 8192, 1024}, /* 16 */
               {"clamp(groupnorm(x + bias, 256), -1, 1)", 32768, 8192, 1024},           /* 32 */
               {"groupnorm(gelu(x + bias), 64)", 1024, 4096, 4096},                     /* 64 */
               {"groupnorm(x, 64) + bias", 1024, 8192, 8192}};                          /* 128 */
  static const ft_math modes[] = {FT_MATH_BF16, FT_MATH_FP16, FT_MATH_TF32, FT_MATH_3XTF32};
  int total = 0;
  for (size_t p = 0; p < sizeof probs / sizeof probs[0]; p++)
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
      int count = 0, tcn = 0;
      ft_variant *v = enumerate(probs[p].expr, probs[p].m, probs[p].n, probs[p].k, modes[mi], &count, &tcn);
      ft_epilogue *ep = parse_ok(probs[p].expr);
      ft_kernel_src *src = calloc((size_t)tcn + 1, sizeof *src);
      ft_compile_job *jobs = calloc((size_t)tcn + 1, sizeof *jobs);
      ft_variant *pick = calloc((size_t)tcn + 1, sizeof *pick);
      ft_err e;
      int n = 0;
      for (int i = 0; ep && src && jobs && pick && i < count; i++) {
        if (v[i].family != FT_FAMILY_TC_NORM) continue;
        ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[n], &e));
        jobs[n] = (ft_compile_job){.src = src[n].text, .hash = src[n].hash, .arch_suffix = src[n].arch_suffix};
        pick[n++] = v[i];
      }
      if (n) ASSERT_OK(ft_compile_many(NULL, "sm_90", jobs, n, 2, &e));
      for (int i = 0; i < n; i++) {
        char name[160];
        ft_variant_name(&pick[i], name, sizeof name);
        if (jobs[i].status != FT_OK)
          FT_FAIL_AT_("%s %s: %s does not compile: %.1500s", probs[p].expr, ft_math_name(modes[mi]), name,
                      jobs[i].log ? jobs[i].log : "");
        ft_compile_job_clear(&jobs[i]);
        ft_kernel_src_free(&src[i]);
      }
      printf("  %-58s %-6s %3d tc_norm variants compiled\n", probs[p].expr, ft_math_name(modes[mi]), n);
      total += n;
      free(src), free(jobs), free(pick), free(v);
      ft_ep_free(ep);
    }
  printf("%d tc_norm variants compiled (sweep)\n", total);
}

int main(int argc, char **argv) {
  const int sweep = argc == 2 && strcmp(argv[1], "--sweep") == 0;
  if (argc > 1 && !sweep) {
    fprintf(stderr, "usage: %s [--sweep]\n", argv[0]);
    return 2;
  }
  test_enumeration();
  test_rules();
  test_codegen();
  if (sweep) test_sweep();
  else test_compiles();
  return FT_TEST_DONE();
}
