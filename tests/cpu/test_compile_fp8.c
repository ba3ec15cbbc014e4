/* The tensor-core family's fp8 (e4m3) kernels without a GPU: every variant enumerated for the
 * seed shapes and a ragged one, with scaled epilogues (per token x per channel, per tensor, and a
 * bias with an activation), compiles with NVRTC for sm_90a with no spill, no stack and no
 * serialized wgmma, within its register cap; a sample by default (tests/cpu/compile_sample.h), every
 * one with --sweep (label long). Also the fp8 rules of the family. */
#include "codegen.h"
#include "compile.h"
#include "compile_sample.h"
#include "family.h"
#include "ft_test.h"

typedef struct shape {
  const char *epilogue;
  int64_t m, n, k;
} shape;

static const shape k_shapes[] = {
    {"relu(x * sx * sw + bias) where row sx, col sw", 16, 14336, 4096},
    {"x * sx * sw where scalar sx, scalar sw", 128, 16384, 16384},
    {"gelu(x * sx * sw + bias) where row sx, col sw", 1024, 8192, 8192},
    {"silu(x * sx * sw) where row sx, col sw", 4096, 14336, 4096},
    {"x * sx * sw + bias where row sx, col sw", 127, 1000, 1008}, /* ragged M and N */
};

static int used_regs(const char *log) {
  const char *u = log ? strstr(log, "Used ") : NULL;
  return u ? atoi(u + 5) : -1;
}

static int compile_shape(const shape *sh, const ft_device_limits *lim, int stride) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_ep_parse(sh->epilogue, &ep, &e));
  ft_variant *v = NULL;
  int all = 0, n = 0;
  ASSERT_OK(ft_space_enumerate_math(FT_VK_GEMM, sh->m, sh->n, sh->k, FT_MATH_FP8, lim, &v, &all, &e));
  ASSERT_TRUE(all >= 4);
  int duals = 0, singles = 0; /* both promotion forms enumerated */
  for (int i = 0; i < all; i++) duals += v[i].tc.dual, singles += !v[i].tc.dual;
  ASSERT_TRUE(duals > 0 && singles > 0);
  unsigned char *keep = calloc((size_t)all + 1, 1);
  if (keep) ft_sample_pick(v, all, stride, keep);
  /* Ping-pong where the tiles allow it (two tile rows), and the first of each ping-pong form with
   * each promotion form compiled (pingpong 1 or 2, one or two partial sums). */
  int pp_first[3][2] = {{0}}, pps = 0;
  for (int i = 0; i < all; i++) {
    const int pp = v[i].tc.pingpong, d = v[i].tc.dual;
    pps += pp != 0;
    if (pp && !pp_first[pp][d] && keep) keep[i] = 1;
    if (pp) pp_first[pp][d] = 1;
  }
  ASSERT_TRUE(sh->m < 128 || (pps > 0 && pp_first[1][0] && pp_first[1][1] && pp_first[2][0] && pp_first[2][1]));
  for (int i = 0; keep && i < all; i++)
    if (keep[i]) v[n++] = v[i];
  free(keep);
  ft_kernel_src *src = calloc((size_t)n + 1, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)n + 1, sizeof *jobs);
  const ft_family *tc = ft_family_named("tc");
  for (int i = 0; src && jobs && i < n; i++) {
    /* Past BN 128 only the late form (E box by box; E on the whole tile first spills) and one
     * partial sum. */
    ASSERT_TRUE(ft_family_of(&v[i]) == tc && v[i].tc.chunk >= 1 && v[i].bk == 128 && v[i].bn <= 192);
    /* The partial sums' registers: m64 blocks x BN <= 192 (two partial sums: 128). */
    const int msub = v[i].tc.pingpong == 2 ? 2 : 1;
    ASSERT_TRUE(msub * v[i].bn <= (v[i].tc.dual ? 128 : 192));
    ASSERT_TRUE(v[i].bn <= 128 || ((v[i].tc.late || v[i].tc.pingpong) && v[i].tc.tstore && !v[i].tc.dual));
    ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[i], &e));
    jobs[i].src = src[i].text, jobs[i].hash = src[i].hash, jobs[i].arch_suffix = src[i].arch_suffix;
  }
  /* The scales are read as fp32, the bias as bf16. */
  if (src && n > 0) {
    ASSERT_CONTAINS(src[0].text, "#define FT_FP8 1");
    ASSERT_CONTAINS(src[0].text, "ft_vf32(ep.v[");
  }
  ASSERT_OK(ft_compile_many(NULL, "sm_90", jobs, n, 0, &e));
  for (int i = 0; src && jobs && i < n; i++) {
    char name[128];
    ft_variant_name(&v[i], name, sizeof name);
    if (jobs[i].status != FT_OK) {
      FT_FAIL_AT_("fp8 %s: %.600s", name, jobs[i].log ? jobs[i].log : "(no log)");
    } else {
      const int regs = used_regs(jobs[i].log), cap = tc->reg_cap(&v[i]);
      if (regs < 0 || regs > cap) FT_FAIL_AT_("%s: %d registers (cap %d)", name, regs, cap);
      if (!strstr(jobs[i].log, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"))
        FT_FAIL_AT_("%s spills: %.300s", name, jobs[i].log);
    }
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  printf("%-48s %lldx%lldx%lld fp8: %d of %d variants compiled for sm_90a\n", sh->epilogue, (long long)sh->m,
         (long long)sh->n, (long long)sh->k, n, all);
  free(src);
  free(jobs);
  free(v);
  ft_ep_free(ep);
  return n;
}

/* The family's fp8 rules: bk 128 (128 bytes of e4m3), chunk >= 1, m64 blocks x BN <= 192 (two
 * partial sums: 128), no stream-K; K a multiple of 16, N of 8 with TMA stores (bf16 y). */
static void test_rules(const ft_device_limits *lim) {
  ft_variant v;
  memset(&v, 0, sizeof v);
  v.kind = FT_VK_GEMM, v.family = 4, v.math = FT_MATH_FP8, v.bk = 128, v.bn = 128, v.stages = 4, v.swizzle = 8;
  v.tc.consumers = 2, v.tc.cluster = 1, v.tc.grid = 132, v.tc.chunk = 1, v.tc.tstore = 1;
  char why[200] = "";
  ASSERT_TRUE(ft_variant_valid(&v, why, sizeof why));
  ft_variant b = v;
  b.tc.chunk = 0;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  ASSERT_CONTAINS(why, "chunk 0 (k tiles per partial sum) must be 1..4096 in fp8");
  b = v, b.bk = 64;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  b = v, b.bn = 192, b.tc.late = 1; /* d and p: 192 registers */
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b.bn = 256;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  ASSERT_CONTAINS(why, "bn 256 > 192 in fp8 (two accumulators of 1 m64 block in registers)");
  b = v, b.tc.dual = 1; /* two partial sums: three accumulators */
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b.bn = 136;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  ASSERT_CONTAINS(why, "bn 136 > 128 in fp8 (three accumulators of 1 m64 block in registers)");
  b = v, b.math = FT_MATH_BF16, b.bk = 64, b.tc.chunk = 0, b.tc.dual = 1;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  ASSERT_CONTAINS(why, "dual (two partial sums) is fp8's, not bf16");
  /* Ping-pong: one m64 block per tile as the cooperative consumer's; two at half the width. */
  b = v, b.tc.pingpong = 1, b.tc.dual = 1;
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b.bn = 192, b.tc.dual = 0;
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b = v, b.tc.pingpong = 2;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  ASSERT_CONTAINS(why, "bn 128 > 96 in fp8 (two accumulators of 2 m64 blocks in registers)");
  b.bn = 96;
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b.tc.dual = 1;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  ASSERT_CONTAINS(why, "bn 96 > 64 in fp8 (three accumulators of 2 m64 blocks in registers)");
  b.bn = 64;
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b.tc.consumers = 1;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  ASSERT_CONTAINS(why, "pingpong needs 2 consumers");
  b = v, b.tc.pingpong = 1, b.tc.streamk = 1, b.tc.cluster = 2;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  b = v, b.tc.pingpong = 1, b.bn = 192, b.tc.late = 1; /* the late form is the cooperative one's */
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  ASSERT_CONTAINS(why, "late (E box by box)");
  ASSERT_TRUE(ft_variant_applicable(&v, 100, 1000, 1008, lim, why, sizeof why));
  ASSERT_TRUE(!ft_variant_applicable(&v, 100, 1000, 1000, lim, why, sizeof why));
  ASSERT_CONTAINS(why, "not a multiple of 16 (TMA rows of 16 bytes in fp8)");
  ASSERT_TRUE(!ft_variant_applicable(&v, 100, 1004, 1008, lim, why, sizeof why));
  ASSERT_CONTAINS(why, "TMA-store");
  char name[128];
  ft_variant_name(&v, name, sizeof name);
  ASSERT_EQ_STR(name, "tc_bm128_bn128_bk128_s4_c1_z8_p132_h1_ts_fp8");
  v.tc.dual = 1;
  ft_variant_name(&v, name, sizeof name);
  ASSERT_EQ_STR(name, "tc_bm128_bn128_bk128_s4_c1_z8_p132_h1d_ts_fp8");
  v.tc.pingpong = 2, v.bn = 64;
  ft_variant_name(&v, name, sizeof name);
  ASSERT_EQ_STR(name, "tc_bm128_bn64_bk128_s4_c1_z8_p132_h1d_pp_ts_fp8");
}

int main(int argc, char **argv) {
  const int stride = ft_sample_stride(argc, argv, 6);
  ft_device_limits lim;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  test_rules(&lim);
  int total = 0;
  for (size_t i = 0; i < sizeof k_shapes / sizeof *k_shapes; i++) total += compile_shape(&k_shapes[i], &lim, stride);
  printf("%d fp8 variants compiled\n", total);
  return ft_test_failures ? 1 : 0;
}
