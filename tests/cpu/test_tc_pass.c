/* Family tc_pass without a GPU (src/family/tc/family_tc_pass.c: in 3xtf32, the reduction pass after
 * fusedtune's own tensor-core GEMM, one program): what enumerates it (softmax, log_softmax, groupnorm,
 * batchnorm and a one-value reduction in 3xtf32, each pass with a few GEMMs; in bf16 only batchnorm
 * with its column partials from the GEMM, test_gemm_partials; none for
 * an elementwise epilogue, none where the tensor-core GEMM does not apply), names, JSON both ways,
 * validity of each half, geometry (the GEMM's launch beside the pass's), alignment, what codegen
 * writes, and NVRTC compiles for sm_90a with each entry's ptxas registers within its own cap and no
 * spill. */
#include <stdlib.h>

#include "codegen.h"
#include "compile.h"
#include "epilogue_test_util.h"
#include "family.h"

/* The pruned (or full) GEMM-kind space of text on (m, n, k) in math (none: count 0). */
static ft_variant *enumerate(const char *text, int64_t m, int64_t n, int64_t k, ft_math math, int full, int *count) {
  ft_epilogue *ep = parse_ok(text);
  ft_device_limits lim;
  ft_variant *v = NULL;
  *count = 0;
  ft_err e;
  if (ep && ft_limits_for_arch("sm_90", &lim, &e) == FT_OK) {
    const ft_status s = ft_space_enumerate_ep(FT_VK_GEMM, m, n, k, math, full ? FT_SPACE_FULL : FT_SPACE_PRUNED, ep, &lim,
                                              &v, NULL, count, &e);
    ASSERT_TRUE(s == FT_OK || (s == FT_ERR_UNSUPPORTED && *count == 0));
  }
  ft_ep_free(ep);
  return v;
}

/* How many of v[0..n) are of family tc_pass. */
static int count_tcp(const ft_variant *v, int n) {
  int c = 0;
  for (int i = 0; i < n; i++) c += strcmp(ft_family_of(&v[i])->name, "tc_pass") == 0;
  return c;
}

static void test_enumeration(void) {
  static const char *const exprs[] = {"softmax(x)",        "softmax(gelu(x + bias))", "log_softmax(x + bias)",
                                      "groupnorm(x, 256)", "groupnorm(x * 2, 64)",    "batchnorm(x)",
                                      "batchnorm(x + bias) * 2", "rowsum(maxpool(x + bias, 2))", "logsumexp(avgpool(x, 4))"};
  for (size_t i = 0; i < sizeof exprs / sizeof exprs[0]; i++) {
    int count = 0, full = 0;
    ft_variant *v = enumerate(exprs[i], 1000, 4096, 1000, FT_MATH_3XTF32, 0, &count);
    ASSERT_TRUE(count > 0);
    /* The one fused family for these in 3xtf32 but tc_norm, for a groupnorm whose groups fit a tile
     * (16 and 64 columns at N = 4096). */
    int tcn = 0;
    for (int j = 0; j < count; j++) tcn += v[j].family == FT_FAMILY_TC_NORM;
    ASSERT_EQ_INT(tcn > 0, strncmp(exprs[i], "groupnorm", 9) == 0);
    ASSERT_EQ_INT(count_tcp(v, count), count - tcn);
    /* A modest space: each pass with at most 4 GEMMs (the README's tunes stay fast). */
    ASSERT_TRUE(count - tcn <= 4 * 12);
    for (int j = 0; j < count; j++) {
      if (v[j].family == FT_FAMILY_TC_NORM) continue;
      ASSERT_TRUE(v[j].math == FT_MATH_3XTF32 && v[j].family == 6 && v[j].tc.chunk > 0);
      ASSERT_TRUE(!v[j].split_k && !v[j].tc.streamk && !v[j].tc.pingpong && !v[j].tc.staged && !v[j].tc.late);
      ASSERT_TRUE(v[j].red.cols == 0 || v[j].red.cols >= 4096); /* one chunk at most */
    }
    /* GEMMs of accumulation chunks 16, 8 and 4 are paired (a long K wants the short ones). */
    int chunk_seen[17] = {0};
    for (int j = 0; j < count; j++)
      if (v[j].family == 6 && v[j].tc.chunk <= 16) chunk_seen[v[j].tc.chunk] = 1;
    ASSERT_TRUE(chunk_seen[16] && chunk_seen[8] && chunk_seen[4]);
    /* The paired GEMMs: the pre-split form (x and W split before it: the faster 3xtf32 GEMM) of each
     * chunk, and the best with the split in the kernel, one of four. */
    int split_before = 0, split_in = 0;
    for (int j = 0; j < count; j++)
      if (v[j].family == 6) split_before += v[j].tc.presplit == 1, split_in += v[j].tc.presplit == 0;
    ASSERT_TRUE(split_in > 0 && split_before == 3 * split_in);
    free(v);
    v = enumerate(exprs[i], 1000, 4096, 1000, FT_MATH_3XTF32, 1, &full);
    ASSERT_TRUE(full >= count && count_tcp(v, full) >= count - tcn);
    free(v);
    /* bf16: cuBLAS's tensor-core GEMM before the pass already; tc_pass there is batchnorm's column
     * partials written by its GEMM (gemm) alone, in the full space only (measured slower). */
    v = enumerate(exprs[i], 1000, 4096, 1000, FT_MATH_BF16, 0, &count);
    ASSERT_EQ_INT(count_tcp(v, count), 0);
    free(v);
    v = enumerate(exprs[i], 1000, 4096, 1000, FT_MATH_BF16, 1, &count);
    int partials = 0;
    for (int j = 0; j < count; j++) partials += v[j].family == 6 && v[j].red.gemm == 1 && v[j].red.tile > 0;
    ASSERT_EQ_INT(count_tcp(v, count), partials);
    ASSERT_EQ_INT(partials > 0, strncmp(exprs[i], "batchnorm", 9) == 0);
    free(v);
    /* K not a multiple of 4 (TMA rows of 16 bytes): the tensor-core GEMM does not apply. */
    v = enumerate(exprs[i], 1000, 4096, 1001, FT_MATH_3XTF32, 0, &count);
    ASSERT_EQ_INT(count, 0);
    free(v);
  }
  /* An elementwise epilogue: family tc fuses it, tc_pass has nothing to add. */
  int count = 0;
  ft_variant *v = enumerate("minsub", 128, 16384, 16384, FT_MATH_3XTF32, 0, &count);
  ASSERT_TRUE(count > 0);
  ASSERT_EQ_INT(count_tcp(v, count), 0);
  free(v);
  /* Batchnorm's column form (tiles of rows, an apply kernel) is among them. */
  v = enumerate("batchnorm(x)", 16384, 4096, 4096, FT_MATH_3XTF32, 0, &count);
  int column = 0;
  for (int j = 0; j < count; j++) column += v[j].red.tile > 0;
  ASSERT_TRUE(column > 0);
  free(v);
}

/* A softmax variant in the held form after a 128 x 128 GEMM. */
static ft_variant tcp_variant(void) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM, v.family = 6, v.math = FT_MATH_3XTF32, v.bn = 128, v.bk = 32, v.stages = 4, v.swizzle = 8;
  v.tc.consumers = 2, v.tc.cluster = 1, v.tc.grid = 132, v.tc.chunk = 16;
  v.vec = 4, v.red.block = 256, v.red.team = 256, v.red.held = 4, v.red.groups = 1;
  return v;
}

/* Batchnorm's column partials from the GEMM (gemm) in bf16: enumerated (the full space) for batchnorm
 * and softmax of it, named "_gp", JSON both ways, their rules, the geometry (a merge block per 32 columns, partials
 * per 64 rows, no counters; the GEMM's shared memory holds [4][bn] float2 per consumer), codegen. */
static void test_gemm_partials(void) {
  int count = 0;
  ft_variant *v = enumerate("batchnorm(x + bias)", 16384, 4096, 4096, FT_MATH_BF16, 1, &count);
  const ft_variant *gp = NULL;
  for (int j = 0; j < count; j++)
    if (v[j].family == 6 && !gp) gp = &v[j];
  ASSERT_TRUE(gp != NULL);
  if (!gp) {
    free(v);
    return;
  }
  char why[200], name[160], json[512];
  ASSERT_TRUE(gp->red.gemm == 1 && gp->red.tile > 0 && !(gp->tc.tstore && gp->bn > 128));
  ASSERT_TRUE(ft_variant_valid(gp, why, sizeof why));
  ft_variant_name(gp, name, sizeof name);
  ASSERT_CONTAINS(name, "_gp_bf16");
  ft_variant_json(gp, json, sizeof json);
  ASSERT_CONTAINS(json, "\"gemm\":1");
  ft_variant back;
  ft_err e;
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, gp, sizeof back) == 0);
  ft_launch_geom g, plain;
  memset(&g, 0, sizeof g);
  memset(&plain, 0, sizeof plain);
  ft_variant_geometry(gp, 16384, 4096, 4096, &g);
  ASSERT_TRUE(g.own_gemm && g.has_reduce);
  ASSERT_EQ_INT((int)g.grid[0], 4096 / 32);
  ASSERT_EQ_INT((int)g.grid[1], 1);
  ASSERT_EQ_INT((int)g.rgrid[1], 16384 / gp->red.tile);
  ASSERT_TRUE(g.workspace_bytes == (size_t)(16384 / 64 + 1) * 4096 * 8);
  ASSERT_TRUE(g.flag_bytes == 0);
  ft_variant q = *gp;
  q.red.gemm = 0, q.math = FT_MATH_3XTF32; /* only to ask the GEMM's shared memory without the partials */
  q.family = 4, q.bk = gp->bk, q.vec = 0;
  memset(&q.red, 0, sizeof q.red);
  q.math = gp->math;
  ft_variant_geometry(&q, 16384, 4096, 4096, &plain);
  ASSERT_TRUE(g.gsmem == plain.smem + (size_t)gp->tc.consumers * 4 * (size_t)gp->bn * 8);
  /* The rules: gemm needs the column form; TMA stores at BN > 128 spilled. */
  ft_variant bad = *gp;
  bad.red.tile = 0;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "gemm 1");
  bad = *gp, bad.tc.tstore = 1, bad.bn = 256;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "spill");
  bad = *gp, bad.tc.colstats = 1;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  /* The pass alone never takes the GEMM's partials. */
  bad = *gp, bad.kind = FT_VK_EPILOGUE, bad.family = 1, bad.bn = bad.bk = bad.stages = bad.swizzle = 0;
  memset(&bad.tc, 0, sizeof bad.tc);
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "only with family tc_pass");
  ft_epilogue *ep = parse_ok("batchnorm(x + bias)");
  ft_kernel_src src;
  ASSERT_OK(ft_codegen_variant(gp, ep, &src, &e));
  ASSERT_CONTAINS(src.text, "#define FT_RED_GEMM 1");
  char want[64];
  snprintf(want, sizeof want, "colstat_bytes = %d,", gp->tc.consumers * 4 * gp->bn * 8);
  ASSERT_CONTAINS(src.text, want);
  ft_kernel_src_free(&src);
  ft_ep_free(ep);
  free(v);
  /* Softmax of batchnorm: the column-then-row form takes them too, one tile (its apply reads rows). */
  v = enumerate("softmax(batchnorm(x + bias) * 2)", 1000, 520, 256, FT_MATH_FP16, 1, &count);
  int norm = 0;
  for (int j = 0; j < count; j++) norm += v[j].family == 6 && v[j].red.gemm && v[j].red.norm && v[j].red.tile == 128;
  ASSERT_TRUE(norm > 0 && norm == count_tcp(v, count));
  free(v);
  /* GEMMs that differ only in their stages, shortened for the partials, are pushed once. */
  v = enumerate("batchnorm(x + bias) * 2", 1000, 2056, 384, FT_MATH_BF16, 1, &count);
  for (int a = 0; a < count; a++)
    for (int b = a + 1; b < count; b++) ASSERT_TRUE(memcmp(&v[a], &v[b], sizeof v[a]) != 0);
  free(v);
}

static void test_variant(void) {
  ft_variant v = tcp_variant();
  char why[200], name[128], json[512];
  ASSERT_TRUE(ft_variant_valid(&v, why, sizeof why));
  ft_variant_name(&v, name, sizeof name);
  ASSERT_EQ_STR(name, "tcp_bm128_bn128_bk32_s4_c1_z8_p132_h16_red_b256_v4_t256_h4_g1_3xtf32");
  ft_variant_json(&v, json, sizeof json);
  ASSERT_EQ_STR(json, "{\"kind\":\"gemm\",\"bn\":128,\"bk\":32,\"stages\":4,\"consumers\":2,\"cluster\":1,\"swizzle\":8,"
                      "\"grid\":132,\"block\":256,\"vec\":4,\"layout\":6,\"math\":4,\"chunk\":16,\"team\":256,"
                      "\"held\":4,\"groups\":1}");
  ft_variant back;
  ft_err e;
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, &v, sizeof v) == 0);
  /* Every form round-trips: batchnorm's column form, a one-value reduction's chunk, x in registers. */
  ft_variant forms[3] = {tcp_variant(), tcp_variant(), tcp_variant()};
  forms[0].red = (ft_red_params){.block = 256, .tile = 128};
  forms[1].red = (ft_red_params){.block = 512, .cols = 4096}, forms[1].tc.tstore = 1, forms[1].stages = 2;
  forms[2].bn = 64, forms[2].tc.aregs = 1, forms[2].tc.chunk = 8, forms[2].red.groups = 1;
  for (int i = 0; i < 3; i++) {
    ASSERT_TRUE(ft_variant_valid(&forms[i], why, sizeof why));
    ft_variant_json(&forms[i], json, sizeof json);
    ASSERT_OK(ft_variant_from_json(json, &back, &e));
    ASSERT_TRUE(memcmp(&back, &forms[i], sizeof back) == 0);
  }
  ft_variant_name(&forms[0], name, sizeof name);
  ASSERT_EQ_STR(name, "tcp_bm128_bn128_bk32_s4_c1_z8_p132_h16_red_b256_v4_r128_3xtf32");
  /* Keys of forms it does not build are refused. */
  ASSERT_EQ_INT(ft_variant_from_json("{\"kind\":\"gemm\",\"bn\":128,\"bk\":32,\"stages\":4,\"consumers\":2,\"cluster\":1,"
                                     "\"swizzle\":8,\"grid\":132,\"block\":256,\"vec\":4,\"layout\":6,\"math\":4,"
                                     "\"chunk\":16,\"split_k\":2}", &back, &e),
                FT_ERR_FORMAT);
  /* Each half's rules: the GEMM stores x W^T whole; the pass's block; the mode. */
  ft_variant bad = tcp_variant();
  bad.split_k = 2;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "tc_pass");
  bad = tcp_variant(), bad.red.block = 100;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "block 100");
  bad = tcp_variant(), bad.bn = 256;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "bn 256 > 128");
  bad = tcp_variant(), bad.math = FT_MATH_BF16, bad.bk = 64;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "only the GEMM's column partials");
  bad = tcp_variant(), bad.math = FT_MATH_FP8, bad.bk = 128;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "do not compute in it");
  bad = tcp_variant(), bad.fp32.tm = 4; /* another family's block */
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  /* Applicability: the GEMM's (K in 16-byte rows, sm_90), the pass's, one chunk. */
  ft_device_limits lim, a100;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  ASSERT_OK(ft_limits_for_arch("sm_80", &a100, &e));
  if (!ft_variant_applicable(&v, 1000, 4096, 1000, &lim, why, sizeof why)) FT_FAIL_AT_("not applicable: %s", why);
  ASSERT_TRUE(!ft_variant_applicable(&v, 1000, 4096, 1002, &lim, why, sizeof why));
  ASSERT_CONTAINS(why, "k 1002");
  ASSERT_TRUE(!ft_variant_applicable(&v, 1000, 4096, 1000, &a100, why, sizeof why));
  ASSERT_TRUE(!ft_variant_applicable(&forms[1], 1000, 8192, 1000, &lim, why, sizeof why));
  ASSERT_CONTAINS(why, "one chunk");
  ASSERT_TRUE(!ft_variant_applicable(&v, 1000, 4096 * 4, 1000, &lim, why, sizeof why)); /* a team holds 4096 */
}

static void test_geometry(void) {
  ft_variant v = tcp_variant();
  ft_launch_geom g;
  ft_variant_geometry(&v, 1000, 4096, 1000, &g);
  /* The pass: teams of 256 a row, one row a block; the GEMM: family tc's persistent grid. */
  ASSERT_TRUE(g.own_gemm && g.block[0] == 256 && g.grid[0] == 1000 && !g.has_reduce && g.workspace_bytes == 0);
  ASSERT_TRUE(g.gblock[0] == 384 && g.ggrid[0] == 132 && g.gcluster[0] == 1 && g.gsmem > 100000);
  /* Batchnorm's column form: its apply kernel second, its partials in the workspace. */
  v.red = (ft_red_params){.block = 256, .tile = 128};
  ft_variant_geometry(&v, 1000, 4096, 1000, &g);
  ASSERT_TRUE(g.own_gemm && g.has_reduce && g.workspace_bytes > 0 && g.flag_bytes > 0);
  ASSERT_EQ_STR(ft_family_of(&v)->reduce_kernel(&v), "ft_reduce_apply");
  /* A one-value reduction: all of x W^T in the workspace (the GEMM's target), then the statistics. */
  v.red = (ft_red_params){.block = 256, .cols = 4096};
  ft_variant_geometry(&v, 1000, 4096, 1000, &g);
  ASSERT_TRUE(g.chunk_cols == 4096 && g.workspace_bytes >= (size_t)1000 * 4096 * 4);
  size_t need[3];
  ft_family_of(&v)->alignment(&v, 1000, 4096, 1000, need);
  ASSERT_TRUE(need[0] == 16 && need[1] == 16 && need[2] == 4); /* y [M], one element at a time */
  v = tcp_variant();
  ft_family_of(&v)->alignment(&v, 1000, 4096, 1000, need);
  ASSERT_TRUE(need[2] == 16); /* the pass's vectors of 4 */
  /* The pre-split GEMM: x's and W's split rows after the pass's own workspace (batchnorm's partials),
   * 256-byte aligned, so neither kernel writes over the other's. */
  v = tcp_variant();
  v.tc.presplit = 1, v.stages = 3, v.red = (ft_red_params){.block = 256, .tile = 128};
  char why[200];
  ASSERT_TRUE(ft_variant_valid(&v, why, sizeof why));
  ft_launch_geom plain;
  ft_variant q = v;
  q.tc.presplit = 0;
  ft_variant_geometry(&q, 1000, 4096, 1000, &plain);
  ft_variant_geometry(&v, 1000, 4096, 1000, &g);
  const size_t split = (size_t)(1000 + 4096) * 2 * (size_t)ft_presplit_kp(1000) * sizeof(float);
  ASSERT_TRUE(plain.presplit_kp == 0 && plain.presplit_off == 0 && plain.workspace_bytes > 0);
  ASSERT_TRUE(g.presplit_kp == (int)ft_presplit_kp(1000) && g.presplit_wrows == 4096 && g.presplit_off >= plain.workspace_bytes &&
              g.presplit_off % 256 == 0 && g.workspace_bytes == g.presplit_off + split);
  ASSERT_TRUE(g.own_gemm && g.has_reduce && g.flag_bytes == plain.flag_bytes);
  /* Family tc's own pre-split kernel keeps its split rows at the workspace's start. */
  q = v, q.family = FT_FAMILY_TC, q.vec = 0;
  memset(&q.red, 0, sizeof q.red);
  ASSERT_TRUE(ft_variant_valid(&q, why, sizeof why));
  ft_variant_geometry(&q, 1000, 4096, 1000, &plain);
  ASSERT_TRUE(plain.presplit_off == 0 && plain.workspace_bytes == split);
}

static void test_codegen(void) {
  ft_epilogue *sm = parse_ok("softmax(x + bias)"), *relu = parse_ok("relu(x)");
  ft_variant v = tcp_variant();
  ft_kernel_src k;
  ft_err e;
  if (sm && relu) {
    ASSERT_OK(ft_codegen_variant(&v, sm, &k, &e));
    ASSERT_EQ_STR(k.kernel, "ft_reduce_pass");
    ASSERT_EQ_STR(k.reduce, "");
    ASSERT_EQ_STR(k.arch_suffix, "a");
    ASSERT_CONTAINS(k.text, "struct FtTcCfg");
    ASSERT_CONTAINS(k.text, "#define FT_EP_RED_KIND 0\n");
    ASSERT_CONTAINS(k.text, "#define FT_EPILOGUE_EXPR (x)\n");
    ASSERT_CONTAINS(k.text, "#define FT_RED_FORM 1\n");
    ASSERT_CONTAINS(k.text, "ft_gemm_tc(");
    ASSERT_CONTAINS(k.text, "ft_reduce_pass(");
    ASSERT_EQ_STR(ft_family_of(&v)->gemm_kernel, "ft_gemm_tc");
    ft_kernel_src_free(&k);
    ASSERT_EQ_INT(ft_codegen_variant(&v, relu, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "compute reductions only");
  }
  ft_ep_free(sm), ft_ep_free(relu);
}

/* ptxas -v's report of entry `kernel` in log (src/compile/compile.c reads it the same way):
 * registers and bytes of stack and spill (-1: not found). */
static void entry_usage(const char *log, const char *kernel, int *regs, int *spill) {
  *regs = *spill = -1;
  char key[96];
  snprintf(key, sizeof key, "Compiling entry function '%s'", kernel);
  const char *p = log ? strstr(log, key) : NULL;
  const char *frame = p ? strstr(p, "bytes stack frame") : NULL, *used = p ? strstr(p, "Used ") : NULL;
  if (!frame || !used) return;
  while (frame > p && frame[-1] != '.' && frame[-1] != '\n') frame--;
  int stack = 0, st = 0, ld = 0;
  if (sscanf(frame, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &stack, &st, &ld) == 3)
    *spill = stack + st + ld;
  if (sscanf(used, "Used %d registers", regs) != 1) *regs = -1;
}

/* A variant of each kind through NVRTC and ptxas for sm_90a: one program with ft_gemm_tc and the
 * pass's entries, each within its own __launch_bounds__ cap (the GEMM's 65536 / 384, the pass's
 * 65536 / block) with no stack or spill. */
static void test_compiles(void) {
  static const struct {
    const char *expr;
    int64_t m, n, k;
  } probs[] = {{"softmax(gelu(x + bias))", 1000, 4000, 1000},
               {"groupnorm(x, 64)", 300, 1024, 512},
               {"batchnorm(x + bias)", 3000, 520, 256},
               {"rowsum(maxpool(sigmoid(x), 2))", 77, 1004, 40}};
  enum { N = sizeof probs / sizeof probs[0] };
  ft_kernel_src src[N];
  ft_compile_job jobs[N];
  ft_variant pick[N];
  memset(jobs, 0, sizeof jobs);
  memset(src, 0, sizeof src);
  ft_err e;
  for (int i = 0; i < N; i++) {
    int count = 0;
    ft_variant *v = enumerate(probs[i].expr, probs[i].m, probs[i].n, probs[i].k, FT_MATH_3XTF32, 0, &count);
    ft_epilogue *ep = parse_ok(probs[i].expr);
    ASSERT_TRUE(count > 0 && ep);
    /* tc_pass's first (groupnorm's groups fit a tile: tc_norm's come before); batchnorm: its column
     * form (three kernels in one program) */
    int at = 0;
    while (at < count - 1 && v[at].family != 6) at++;
    for (int j = 0; j < count; j++)
      if (i == 2 && v[j].red.tile > 0) {
        at = j;
        break;
      }
    if (count > 0) pick[i] = v[at];
    if (count > 0 && ep) ASSERT_OK(ft_codegen_variant(&v[at], ep, &src[i], &e));
    jobs[i] = (ft_compile_job){.src = src[i].text, .hash = src[i].hash, .arch_suffix = src[i].arch_suffix};
    free(v);
    ft_ep_free(ep);
  }
  ASSERT_OK(ft_compile_many(NULL, "sm_90", jobs, N, 2, &e));
  const ft_family *tc = ft_family_named("tc"), *red = ft_family_named("reduce_pass");
  for (int i = 0; i < N; i++) {
    char name[128];
    ft_variant_name(&pick[i], name, sizeof name);
    if (jobs[i].status != FT_OK) {
      FT_FAIL_AT_("%s: %s does not compile: %.2000s", probs[i].expr, name, jobs[i].log ? jobs[i].log : "");
      ft_kernel_src_free(&src[i]);
      continue;
    }
    ft_variant g = pick[i], p = pick[i];
    g.family = 4, g.vec = 0, memset(&g.red, 0, sizeof g.red);
    memset(&p, 0, sizeof p);
    p.kind = FT_VK_EPILOGUE, p.family = 1, p.math = pick[i].math, p.vec = pick[i].vec, p.red = pick[i].red;
    const struct {
      const char *kernel;
      int cap;
    } entries[] = {{"ft_gemm_tc", tc->reg_cap(&g)}, {"ft_reduce_pass", red->reg_cap(&p)}, {"ft_reduce_apply", red->reg_cap(&p)}};
    for (int j = 0; j < (pick[i].red.tile > 0 ? 3 : 2); j++) {
      int regs, spill;
      entry_usage(jobs[i].log, entries[j].kernel, &regs, &spill);
      printf("  %-28s %-72s %-16s %3d registers (cap %3d), %d bytes stack and spill\n", probs[i].expr, name,
             entries[j].kernel, regs, entries[j].cap, spill);
      if (regs < 0 || regs > entries[j].cap || spill != 0)
        FT_FAIL_AT_("%s: %s: %d registers (cap %d), %d bytes of stack and spill", name, entries[j].kernel, regs,
                    entries[j].cap, spill);
    }
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
}

int main(void) {
  test_enumeration();
  test_variant();
  test_gemm_partials();
  test_geometry();
  test_codegen();
  test_compiles();
  return FT_TEST_DONE();
}
