/* The tensor-core family without a GPU: the variants it enumerates for the seed shapes and a
 * ragged one, in tf32, bf16 and fp16, with the three test epilogues (a sample by default, every
 * one with --sweep: tests/cpu/compile_sample.h), compile with NVRTC for sm_90a, and
 * ptxas reports no spill, no stack and no serialized wgmma (those would reject it), and no more
 * registers than its __launch_bounds__ cap; plus the rejection rule on logs, the family's
 * validity rules and its wave-fitted tile widths. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <time.h>

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
    {"minsub", 128, 16384, 16384},
    {"biasrelu", 1024, 8192, 8192},
    {"x + 2*sigmoid(x)", 127, 1000, 1000}, /* ragged M and N */
    {"biasrelu", 512, 11008, 4096}, /* wave-fitted widths (168, 112) */
};
static const ft_math k_modes[] = {FT_MATH_TF32, FT_MATH_BF16, FT_MATH_FP16};
#define SAMPLE_STRIDE 3 /* the default run's: every 3rd variant of a shape and mode */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* "Used N registers" of a ptxas -v log, -1 without one. */
static int used_regs(const char *log) {
  const char *u = log ? strstr(log, "Used ") : NULL;
  return u ? atoi(u + 5) : -1;
}

static void compile_mode(const shape *sh, ft_math math, const ft_device_limits *lim, int stride, int *total) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_ep_parse(sh->epilogue, &ep, &e));
  ft_variant *v = NULL;
  int n = 0;
  ASSERT_OK(ft_space_enumerate_math(FT_VK_GEMM, sh->m, sh->n, sh->k, math, lim, &v, &n, &e));
  ASSERT_TRUE(n >= 4);
  const int all = n;
  unsigned char *keep = calloc((size_t)all, 1);
  ASSERT_TRUE(keep != NULL);
  if (keep) ft_sample_pick(v, all, stride, keep);
  n = 0;
  for (int i = 0; keep && i < all; i++)
    if (keep[i]) v[n++] = v[i]; /* the kept ones, in their order */
  free(keep);
  ft_kernel_src *src = calloc((size_t)n + 1, sizeof *src);
  ft_compile_job *jobs = calloc((size_t)n + 1, sizeof *jobs);
  ASSERT_TRUE(src && jobs);
  const ft_family *tc = ft_family_named("tc");
  for (int i = 0; src && jobs && i < n; i++) {
    ASSERT_TRUE(ft_family_of(&v[i]) == tc); /* no other family computes in these modes */
    ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[i], &e));
    ASSERT_EQ_STR(src[i].arch_suffix, "a");
    jobs[i].src = src[i].text, jobs[i].hash = src[i].hash, jobs[i].arch_suffix = src[i].arch_suffix;
  }
  const double t0 = now_s();
  ASSERT_OK(ft_compile_many(NULL, "sm_90", jobs, n, 0, &e));
  for (int i = 0; src && jobs && i < n; i++) {
    char name[128];
    ft_variant_name(&v[i], name, sizeof name);
    if (jobs[i].status != FT_OK) {
      FT_FAIL_AT_("%s %s: %.600s", ft_math_name(math), name, jobs[i].log ? jobs[i].log : "(no log)");
    } else {
      const int regs = used_regs(jobs[i].log), cap = tc->reg_cap(&v[i]);
      if (regs < 0 || regs > cap) FT_FAIL_AT_("%s: %d registers (cap %d)", name, regs, cap);
      ASSERT_TRUE(strstr(jobs[i].log, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads") != NULL);
    }
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
  printf("%-18s %lldx%lldx%lld %s: %d of %d variants compiled for sm_90a in %.1f s\n", sh->epilogue,
         (long long)sh->m, (long long)sh->n, (long long)sh->k, ft_math_name(math), n, all, now_s() - t0);
  *total += n;
  free(src);
  free(jobs);
  free(v);
  ft_ep_free(ep);
}

static void test_rejection(void) {
  char why[256];
  ASSERT_TRUE(!ft__compile_rejection(NULL, why, sizeof why));
  ASSERT_TRUE(!ft__compile_rejection("ptxas info    : Used 168 registers, used 1 barriers, 0 bytes stack frame, 0 "
                                     "bytes spill stores, 0 bytes spill loads\n",
                                     why, sizeof why));
  ASSERT_TRUE(ft__compile_rejection("ptxas info    : 8 bytes stack frame, 16 bytes spill stores, 24 bytes spill "
                                    "loads\n",
                                    why, sizeof why));
  ASSERT_CONTAINS(why, "16 bytes (stores) and 24 bytes (loads)");
  ASSERT_TRUE(ft__compile_rejection("ptxas warning : (C7515) Potential Performance Loss: wgmma.mma_async "
                                    "instructions are serialized\n",
                                    why, sizeof why));
  ASSERT_CONTAINS(why, "C7515");
  ASSERT_TRUE(ft__compile_rejection("ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async "
                                    "instructions are serialized due to non wgmma instructions reading accumulator "
                                    "registers of  a wgmma between start and end of the pipeline stage in the "
                                    "function 'ft_gemm_tc'\n",
                                    why, sizeof why));
  ASSERT_CONTAINS(why, "C7514");
}

/* Of the bf16 GEMM variants enumerated for (m, n, k): how many satisfy pred (*total: all of them). */
/* v is no valid variant, for the reason text names. */
#define ASSERT_INVALID(v, text)                                  \
  do {                                                           \
    char why_[200] = "";                                         \
    ASSERT_TRUE(!ft_variant_valid(&(v), why_, sizeof why_));     \
    ASSERT_CONTAINS(why_, text);                                 \
  } while (0)

/* A variant's JSON holds `tail` and reads back to the same variant; its name is `nm`. */
#define ASSERT_KEY_AND_NAME(v, tail, nm)                      \
  do {                                                        \
    char json_[512], name_[128];                              \
    ft_variant back_;                                         \
    ft_err e_;                                                \
    ft_variant_json(&(v), json_, sizeof json_);               \
    ASSERT_CONTAINS(json_, tail);                             \
    ASSERT_OK(ft_variant_from_json(json_, &back_, &e_));      \
    ASSERT_TRUE(memcmp(&back_, &(v), sizeof back_) == 0);     \
    ft_variant_name(&(v), name_, sizeof name_);               \
    ASSERT_EQ_STR(name_, nm);                                 \
  } while (0)

/* Compiles n fixed variants with the epilogue `epilogue` for sm_90a into jobs (src their texts;
 * the caller checks each job and frees both). */
static void compile_fixed(const ft_variant *vs, int n, const char *epilogue, ft_kernel_src *src, ft_compile_job *jobs) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_ep_parse(epilogue, &ep, &e));
  for (int i = 0; i < n; i++) {
    ASSERT_OK(ft_codegen_variant(&vs[i], ep, &src[i], &e));
    jobs[i].src = src[i].text, jobs[i].hash = src[i].hash, jobs[i].arch_suffix = src[i].arch_suffix;
  }
  ASSERT_OK(ft_compile_many(NULL, "sm_90", jobs, n, 0, &e));
  ft_ep_free(ep);
}

static int count_bf16(int64_t m, int64_t n, int64_t k, const ft_device_limits *lim, int (*pred)(const ft_variant *),
                      int *total) {
  ft_variant *vs = NULL;
  ft_err e;
  int count = 0;
  *total = 0;
  ASSERT_OK(ft_space_enumerate_math(FT_VK_GEMM, m, n, k, FT_MATH_BF16, lim, &vs, total, &e));
  for (int i = 0; i < *total; i++) count += pred(&vs[i]);
  free(vs);
  return count;
}

static int has_tstore(const ft_variant *v) { return v->tc.tstore != 0; }
static int has_streamk(const ft_variant *v) { return v->tc.streamk != 0; }
/* Stream-K where the enumeration should not offer it: without clusters of 2 or TMA stores. */
static int streamk_outside_rule(const ft_variant *v) { return v->tc.streamk && (v->tc.cluster != 2 || !v->tc.tstore); }

/* Shape-free rules: each field's range, a mode the family serves, no other family's fields. */
/* The TMA-store epilogue (tstore): its rules, its shared memory, its key and name. */
static void test_tstore(const ft_variant *base, const ft_device_limits *lim) {
  char why[160] = "", json[512], name[128];
  ft_err e;
  ft_variant t = *base;
  t.tc.tstore = 1;
  ASSERT_TRUE(ft_variant_valid(&t, why, sizeof why));
  ft_variant b = t;
  b.tc.tstore = 2;
  ASSERT_INVALID(b, "tstore 2");
  b = t, b.split_k = 2;
  ASSERT_INVALID(b, "split_k");
  /* Any multiple of 8: a width past whole boxes (bf16 boxes are 64 columns wide, fp32 ones 32)
   * stores its last columns directly; not a multiple of 8, or half the W tile per block of a
   * cluster in a part of an 8-row swizzle atom, is refused. */
  b = t, b.bn = 168;
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b.math = FT_MATH_TF32, b.bk = 32;
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b = t, b.bn = 100;
  ASSERT_INVALID(b, "multiple of 8");
  b = t, b.bn = 168, b.tc.cluster = 2, b.tc.grid = 132;
  ASSERT_INVALID(b, "multiple of 16");
  /* Y's rows in whole 16-byte units: N a multiple of 8 in bf16. */
  ASSERT_TRUE(ft_variant_applicable(&t, 128, 1000, 1000, lim, why, sizeof why));
  ASSERT_TRUE(!ft_variant_applicable(&t, 128, 1001, 1000, lim, why, sizeof why));
  ASSERT_CONTAINS(why, "TMA-store");
  ASSERT_TRUE(ft_variant_applicable(base, 128, 1001, 1000, lim, why, sizeof why)); /* direct stores serve it */
  /* Two 8 KiB boxes per consumer: the deepest ring that fits is shallower by them. */
  b = t, b.stages = 7;
  ft_variant d = *base;
  d.stages = 7;
  const int direct7 = ft_variant_applicable(&d, 128, 1000, 1000, lim, NULL, 0);
  const int boxes7 = ft_variant_applicable(&b, 128, 1000, 1000, lim, NULL, 0);
  ASSERT_TRUE(direct7 && !boxes7); /* 7 x 32 KiB fit alone, not with 32 KiB of boxes (227 KiB) */
  /* The key is written only when set, and the name says so. */
  ft_variant_json(&t, json, sizeof json);
  ASSERT_CONTAINS(json, ",\"tstore\":1}");
  ft_variant back;
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, &t, sizeof t) == 0);
  ASSERT_OK(ft_variant_from_json("{\"kind\":\"gemm\",\"bn\":128,\"bk\":64,\"stages\":6,\"consumers\":2,\"cluster\":1,"
                                 "\"swizzle\":8,\"grid\":132,\"layout\":4,\"math\":2,\"tstore\":0}",
                                 &back, &e));
  ASSERT_TRUE(memcmp(&back, base, sizeof *base) == 0); /* 0 is the same as no key */
  ft_variant_name(&t, name, sizeof name);
  ASSERT_EQ_STR(name, "tc_bm128_bn128_bk64_s6_c1_z8_p132_ts_bf16");
  /* The enumeration offers both epilogues where N allows, only direct stores where it does not. */
  int n = 0;
  const int ts = count_bf16(1024, 8192, 8192, lim, has_tstore, &n);
  ASSERT_TRUE(ts > 0 && ts < n);
  ASSERT_TRUE(count_bf16(1024, 8190, 8192, lim, has_tstore, &n) == 0 && n > 0);
}

/* Stream-K (streamk): its rules, the partial wave it needs, its workspace, flags, shared memory,
 * key and name, and where the enumeration offers it. */
static void test_streamk(const ft_variant *base, const ft_device_limits *lim) {
  char why[200] = "";
  ft_variant t = *base;
  t.tc.streamk = 1, t.bn = 256, t.stages = 4, t.tc.cluster = 2, t.tc.tstore = 1;
  ASSERT_TRUE(ft_variant_valid(&t, why, sizeof why));
  ft_variant b = t;
  b.tc.streamk = 2;
  ASSERT_INVALID(b, "streamk 2");
  b = t, b.tc.tstore = 0, b.split_k = 2;
  ASSERT_INVALID(b, "streamk excludes split_k");
  b = t, b.math = FT_MATH_3XTF32, b.bk = 32, b.bn = 128, b.tc.chunk = 4;
  ASSERT_INVALID(b, "3xtf32");
  /* 1024 x 8192: 4 x 32 = 128 units of 2 tiles for 66 slots: one whole wave, 62 units shared. */
  ASSERT_TRUE(ft_variant_applicable(&t, 1024, 8192, 8192, lim, why, sizeof why));
  /* 256 x 16384 with BN 256: 64 units of two tiles, fewer than the 66 slots: no whole wave. */
  ASSERT_TRUE(!ft_variant_applicable(&t, 256, 16384, 16384, lim, why, sizeof why));
  ASSERT_CONTAINS(why, "more tile units");
  /* 1024 x 8448: 4 x 33 = 132 units = 2 whole waves of 66: nothing partial either. */
  ASSERT_TRUE(!ft_variant_applicable(&t, 1024, 8448, 8192, lim, why, sizeof why));
  /* One unit past a wave with K = 64 (one k tile): 1 k tile for 66 slots. */
  ASSERT_TRUE(!ft_variant_applicable(&t, 1024, 8448 + 256, 64, lim, why, sizeof why));
  ASSERT_CONTAINS(why, "no k tile");
  /* Workspace: one fp32 tile per block; a flag per block and consumer; 32 bytes of schedule. */
  ft_launch_geom g, g0;
  memset(&g, 0, sizeof g), memset(&g0, 0, sizeof g0);
  ft_variant_geometry(&t, 1024, 8192, 8192, &g);
  ASSERT_TRUE(g.grid[0] == 132 && g.workspace_bytes == (size_t)132 * 128 * 256 * 4 && g.flag_bytes == 132 * 2 * 4);
  ASSERT_TRUE(!g.has_reduce);
  b = t, b.tc.streamk = 0;
  ft_variant_geometry(&b, 1024, 8192, 8192, &g0);
  /* The cooperative twin stages the bias slice instead (two consumers x 256 bf16: 1 KiB). */
  ASSERT_TRUE(g.smem + 1024 == g0.smem + 32 && g0.workspace_bytes == 0 && g0.flag_bytes == 0);
  ASSERT_KEY_AND_NAME(t, ",\"streamk\":1", "tc_bm128_bn256_bk64_s4_c2_z8_p132_sk_ts_bf16");
  /* Offered beside the others at 1024 x 8192 x 8192, with clusters of 2 and TMA stores only; not
   * at 128 x 16384 x 16384 (one tile row: no clusters of 2, which stream-K is offered with). */
  int n = 0;
  const int sk = count_bf16(1024, 8192, 8192, lim, has_streamk, &n);
  ASSERT_TRUE(sk > 0 && sk < n);
  ASSERT_TRUE(count_bf16(1024, 8192, 8192, lim, streamk_outside_rule, &n) == 0);
  ASSERT_TRUE(count_bf16(128, 16384, 16384, lim, has_streamk, &n) == 0 && n > 0);
}

static int has_pingpong(const ft_variant *v) { return v->tc.pingpong != 0; }
/* Ping-pong where the enumeration should not offer it: other than 128 x 128 tiles. */
static int pingpong_outside_rule(const ft_variant *v) { return v->tc.pingpong && (v->tc.pingpong != 2 || v->bn != 128); }

/* Ping-pong (pingpong): its rules, tile rows, shared memory, key and name, and where the
 * enumeration offers it. */
static void test_pingpong(const ft_variant *base, const ft_device_limits *lim) {
  char why[200] = "", name[128];
  ft_variant t = *base; /* BN 128, two consumers, 6 stages */
  t.tc.pingpong = 2, t.tc.tstore = 1;
  ASSERT_TRUE(ft_variant_valid(&t, why, sizeof why));
  ft_variant b = t;
  b.tc.pingpong = 3;
  ASSERT_INVALID(b, "pingpong 3");
  b = t, b.tc.consumers = 1;
  ASSERT_INVALID(b, "2 consumers");
  b = t, b.bn = 192; /* two m64 accumulators of 96 registers each */
  ASSERT_INVALID(b, "accumulator registers");
  b.tc.pingpong = 1; /* one of 96 */
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b = t, b.tc.tstore = 0, b.split_k = 2;
  ASSERT_INVALID(b, "pingpong excludes");
  b = t, b.bn = 256, b.stages = 4, b.tc.cluster = 2, b.tc.pingpong = 1, b.tc.streamk = 1;
  ASSERT_INVALID(b, "pingpong excludes");
  b = t, b.math = FT_MATH_3XTF32, b.bk = 32, b.tc.chunk = 4;
  ASSERT_INVALID(b, "pingpong excludes");
  /* Tiles of 64 pingpong rows: 128 x 128 and the cooperative tile alike in shared memory and
   * grid; 64-row tiles half the x stage and twice the tiles. */
  ft_launch_geom g, g0, g1;
  memset(&g, 0, sizeof g), memset(&g0, 0, sizeof g0), memset(&g1, 0, sizeof g1);
  b = t, b.tc.pingpong = 0;
  ft_variant_geometry(&t, 1024, 8192, 8192, &g);
  ft_variant_geometry(&b, 1024, 8192, 8192, &g0);
  /* ... but for the cooperative tile's staged column-vector slices (2 x 128 bf16). */
  ASSERT_TRUE(g.smem + 512 == g0.smem && g.grid[0] == 132 && g.block[0] == 384 && g.workspace_bytes == 0);
  b = t, b.tc.pingpong = 1;
  ft_variant_geometry(&b, 64, 256, 64, &g1); /* 1 x 2 tiles of 64 x 128 */
  ASSERT_TRUE(g1.smem == g.smem - 6 * 64 * 128 && g1.grid[0] == 2);
  ASSERT_KEY_AND_NAME(t, ",\"tstore\":1,\"pingpong\":2}", "tc_bm128_bn128_bk64_s6_c1_z8_p132_pp_ts_bf16");
  ft_variant_name(&b, name, sizeof name);
  ASSERT_EQ_STR(name, "tc_bm64_bn128_bk64_s6_c1_z8_p132_pp_ts_bf16");
  /* Offered at both seed shapes, 128 x 128 tiles only; never with one consumer's shapes (M <= 64). */
  int n = 0;
  ASSERT_TRUE(count_bf16(1024, 8192, 8192, lim, has_pingpong, &n) > 0);
  ASSERT_TRUE(count_bf16(1024, 8192, 8192, lim, pingpong_outside_rule, &n) == 0);
  ASSERT_TRUE(count_bf16(128, 16384, 16384, lim, has_pingpong, &n) > 0);
  ASSERT_TRUE(count_bf16(64, 16384, 16384, lim, has_pingpong, &n) == 0 && n > 0);
  /* What the enumeration rarely or never offers compiles clean too: 64-row tiles, direct stores. */
  ft_variant fixed[2] = {t, t};
  fixed[0].tc.pingpong = 1, fixed[0].bn = 256, fixed[0].stages = 4, fixed[0].tc.tstore = 0;
  fixed[1].tc.tstore = 0, fixed[1].math = FT_MATH_TF32, fixed[1].bk = 32;
  ft_kernel_src src[2] = {{0}};
  ft_compile_job jobs[2] = {{0}};
  for (int i = 0; i < 2; i++) ASSERT_TRUE(ft_variant_valid(&fixed[i], why, sizeof why));
  compile_fixed(fixed, 2, "biasrelu", src, jobs);
  for (int i = 0; i < 2; i++) {
    ASSERT_TRUE(jobs[i].status == FT_OK && jobs[i].log &&
                strstr(jobs[i].log, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads") != NULL);
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
}

/* The staged epilogue (staged): its rules, shared memory, key and name; it compiles clean and,
 * with gelu, to a much smaller kernel than the unrolled epilogue (its reason to exist); offered
 * only in the full space. */
static void test_staged(const ft_variant *base, const ft_device_limits *lim) {
  char why[200] = "";
  ft_variant t = *base; /* BN 128, two consumers, 6 stages */
  t.tc.tstore = 1, t.tc.staged = 1, t.tc.pingpong = 2, t.stages = 5;
  ASSERT_TRUE(ft_variant_valid(&t, why, sizeof why));
  ft_variant b = t;
  b.tc.staged = 2;
  ASSERT_INVALID(b, "staged 2");
  b = t, b.tc.tstore = 0;
  ASSERT_INVALID(b, "needs tstore");
  b = t, b.tc.pingpong = 0, b.bn = 256, b.stages = 3, b.tc.cluster = 2, b.tc.streamk = 1;
  ASSERT_INVALID(b, "excludes streamk");
  /* 16-bit storage: a 16 KiB fp32 staging box per consumer; fp32 storage stages in place. */
  ft_launch_geom g, g0;
  memset(&g, 0, sizeof g), memset(&g0, 0, sizeof g0);
  b = t, b.tc.staged = 0;
  ft_variant_geometry(&t, 1024, 8192, 8192, &g);
  ft_variant_geometry(&b, 1024, 8192, 8192, &g0);
  ASSERT_TRUE(g.smem == g0.smem + 2 * 64 * 256);
  ft_variant f = t, f0 = b;
  f.math = f0.math = FT_MATH_TF32, f.bk = f0.bk = 32;
  ft_variant_geometry(&f, 1024, 8192, 8192, &g);
  ft_variant_geometry(&f0, 1024, 8192, 8192, &g0);
  ASSERT_TRUE(g.smem == g0.smem);
  b = t, b.stages = 6; /* the sixth stage no longer fits beside the staging boxes */
  ASSERT_TRUE(!ft_variant_applicable(&b, 1024, 8192, 8192, lim, why, sizeof why));
  ASSERT_CONTAINS(why, "shared memory");
  ASSERT_KEY_AND_NAME(t, ",\"pingpong\":2,\"staged\":1}", "tc_bm128_bn128_bk64_s5_c1_z8_p132_pp_ts_se_bf16");
  /* gelu's E through the rolled loop: no spill, and under half the unrolled kernel's size (CUDA
   * 13.0: 30 KB against 165 KB). tf32 cooperative BN 256 staged in place. */
  ft_variant vs[3] = {t, b, f};
  vs[1].tc.staged = 0, vs[1].stages = 6;
  vs[2].tc.pingpong = 0, vs[2].bn = 256, vs[2].stages = 4;
  ft_kernel_src src[3] = {{0}};
  ft_compile_job jobs[3] = {{0}};
  for (int i = 0; i < 3; i++) ASSERT_TRUE(ft_variant_applicable(&vs[i], 1024, 8192, 8192, lim, why, sizeof why));
  compile_fixed(vs, 3, "biasgelu", src, jobs);
  for (int i = 0; i < 3; i++)
    ASSERT_TRUE(jobs[i].status == FT_OK && jobs[i].log &&
                strstr(jobs[i].log, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads") != NULL);
  printf("gelu kernel: staged %zu bytes, unrolled %zu bytes\n", jobs[0].cubin_size, jobs[1].cubin_size);
  ASSERT_TRUE(jobs[0].cubin_size > 0 && 2 * jobs[0].cubin_size < jobs[1].cubin_size);
  for (int i = 0; i < 3; i++) {
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
}

static int name_in(const ft_variant *v, const ft_variant *vs, int n) {
  char a[128], b[128];
  ft_variant_name(v, a, sizeof a);
  for (int i = 0; i < n; i++) {
    ft_variant_name(&vs[i], b, sizeof b);
    if (!strcmp(a, b)) return 1;
  }
  return 0;
}

/* The full space (exhaustive and random searches) holds the pruned one and the forms it leaves
 * out: 64-row ping-pong, ping-pong with direct stores or group 16, the staged epilogue (but in
 * 3xtf32, where the pruned space keeps it); also
 * where it holds more variants than the pruned space keeps (3xtf32 at 256 x 256 x 16384: 416).
 * The FFMA families have no such forms: in fp32 both spaces are the same. */
static void test_full_space(const ft_device_limits *lim) {
  static const int64_t shapes[][3] = {{1024, 8192, 8192}, {128, 16384, 16384}, {4096, 4096, 4096}, {256, 256, 16384}};
  static const ft_math modes[] = {FT_MATH_BF16, FT_MATH_TF32, FT_MATH_3XTF32};
  ft_err e;
  for (size_t si = 0; si < 4; si++)
    for (size_t mi = 0; mi < 3; mi++) {
      const int64_t *sh = shapes[si];
      ft_variant *pr = NULL, *fu = NULL;
      int np = 0, nf = 0;
      ASSERT_OK(ft_space_enumerate_scope(FT_VK_GEMM, sh[0], sh[1], sh[2], modes[mi], FT_SPACE_PRUNED, lim, &pr, NULL,
                                         &np, &e));
      ASSERT_OK(ft_space_enumerate_scope(FT_VK_GEMM, sh[0], sh[1], sh[2], modes[mi], FT_SPACE_FULL, lim, &fu, NULL,
                                         &nf, &e));
      int missing = 0, staged = 0, pp1 = 0, pruned_extra = 0, pruned_staged = 0;
      for (int i = 0; i < np; i++) {
        missing += !name_in(&pr[i], fu, nf);
        pruned_extra += (pr[i].tc.staged && modes[mi] != FT_MATH_3XTF32) || pr[i].tc.pingpong == 1;
        pruned_staged += pr[i].tc.staged;
      }
      for (int i = 0; i < nf; i++) staged += fu[i].tc.staged, pp1 += fu[i].tc.pingpong == 1;
      printf("%lldx%lldx%lld %s: pruned %d, full %d (%d staged, %d 64-row ping-pong)\n", (long long)sh[0],
             (long long)sh[1], (long long)sh[2], ft_math_name(modes[mi]), np, nf, staged, pp1);
      ASSERT_TRUE(missing == 0 && pruned_extra == 0);
      /* 3xtf32 keeps the staged epilogue in the pruned space too (tc_enumerate's forms say why),
       * wherever it keeps TMA stores. */
      if (modes[mi] == FT_MATH_3XTF32) ASSERT_TRUE(pruned_staged > 0);
      ASSERT_TRUE(nf > np && staged > 0 && (pp1 > 0 || modes[mi] == FT_MATH_3XTF32)); /* no ping-pong in 3xtf32 */
      free(pr);
      free(fu);
    }
  ft_variant *pr = NULL, *fu = NULL;
  int np = 0, nf = 0;
  ASSERT_OK(ft_space_enumerate_scope(FT_VK_GEMM, 1024, 8192, 8192, FT_MATH_FP32, FT_SPACE_PRUNED, lim, &pr, NULL, &np, &e));
  ASSERT_OK(ft_space_enumerate_scope(FT_VK_GEMM, 1024, 8192, 8192, FT_MATH_FP32, FT_SPACE_FULL, lim, &fu, NULL, &nf, &e));
  ASSERT_TRUE(np == nf && np > 0 && memcmp(pr, fu, (size_t)np * sizeof *pr) == 0);
  free(pr);
  free(fu);
}

static void test_late(const ft_variant *base, const ft_device_limits *lim);
static void test_defer(const ft_variant *base, const ft_device_limits *lim);
static void test_colv_stage(const ft_variant *base, const ft_device_limits *lim);

static void test_validity(const ft_device_limits *lim) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM, v.family = ft_family_named("tc")->id, v.math = FT_MATH_BF16;
  v.bn = 128, v.bk = 64, v.stages = 6, v.tc.consumers = 2, v.tc.cluster = 1, v.swizzle = 8, v.tc.grid = 132;
  char why[160] = "";
  ASSERT_TRUE(ft_variant_valid(&v, why, sizeof why));
  ft_variant b = v;
  b.bn = 48;
  ASSERT_INVALID(b, "bn 48");
  b = v, b.bk = 32; /* 128 bytes of k are 64 bf16 */
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  b = v, b.math = FT_MATH_TF32; /* ... and 32 floats */
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  b.bk = 32;
  ASSERT_TRUE(ft_variant_valid(&b, why, sizeof why));
  b = v, b.math = FT_MATH_FP32;
  ASSERT_INVALID(b, "math mode");
  b = v, b.tc.cluster = 2, b.tc.grid = 131;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  b = v, b.fp32.tm = 8;
  ASSERT_TRUE(!ft_variant_valid(&b, why, sizeof why));
  /* Applicability: K in whole 16-byte rows, compute capability 9.0, shared memory. */
  ASSERT_TRUE(ft_variant_applicable(&v, 128, 1000, 1000, lim, why, sizeof why));
  ASSERT_TRUE(!ft_variant_applicable(&v, 128, 1000, 1001, lim, why, sizeof why));
  ASSERT_CONTAINS(why, "multiple of 8");
  b = v, b.stages = 12;
  ASSERT_TRUE(!ft_variant_applicable(&b, 128, 1000, 1000, lim, why, sizeof why));
  ASSERT_CONTAINS(why, "shared memory");
  ft_device_limits a100;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_80", &a100, &e));
  ASSERT_TRUE(!ft_variant_applicable(&v, 128, 1000, 1000, &a100, why, sizeof why));
  ft_variant *vs = NULL;
  int n = 0;
  ASSERT_EQ_INT(ft_space_enumerate_math(FT_VK_GEMM, 128, 1000, 1000, FT_MATH_BF16, &a100, &vs, &n, &e),
                FT_ERR_UNSUPPORTED); /* no family serves bf16 GEMMs there: the epilogue pass does */
  free(vs);
  /* JSON and name round trip. */
  char json[512], name[128];
  ft_variant_json(&v, json, sizeof json);
  ASSERT_EQ_STR(json, "{\"kind\":\"gemm\",\"bn\":128,\"bk\":64,\"stages\":6,\"consumers\":2,\"cluster\":1,"
                      "\"swizzle\":8,\"grid\":132,\"layout\":4,\"math\":2}");
  ft_variant back;
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, &v, sizeof v) == 0);
  ft_variant_name(&v, name, sizeof name);
  ASSERT_EQ_STR(name, "tc_bm128_bn128_bk64_s6_c1_z8_p132_bf16");
  test_tstore(&v, lim);
  test_streamk(&v, lim);
  test_pingpong(&v, lim);
  test_staged(&v, lim);
  test_late(&v, lim);
  test_defer(&v, lim);
  test_colv_stage(&v, lim);
  test_full_space(lim);
}

/* The late form (late: E box by box, not on the whole tile first): its rules, key and name; with
 * silu in tf32 the cooperative BN 256 TMA-store kernel spills in the early form (CUDA 13.0 ptxas) and compiles clean
 * in the late one (why the enumeration offers it), and the full space offers it beside the early
 * form at BN >= 192 only. */
static int has_late(const ft_variant *v) { return v->tc.late != 0; }
static int late_outside_rule(const ft_variant *v) {
  return v->tc.late && (v->bn < 192 || !v->tc.tstore || v->tc.pingpong || v->tc.streamk || v->tc.staged);
}

static void test_late(const ft_variant *base, const ft_device_limits *lim) {
  char why[200] = "";
  ft_err e;
  ft_variant t = *base;
  t.tc.tstore = 1, t.tc.late = 1, t.bn = 256, t.stages = 4;
  ASSERT_TRUE(ft_variant_valid(&t, why, sizeof why));
  ft_variant b = t;
  b.tc.late = 2;
  ASSERT_INVALID(b, "late 2");
  b = t, b.tc.tstore = 0;
  ASSERT_INVALID(b, "late");
  b = t, b.bn = 128, b.tc.pingpong = 2;
  ASSERT_INVALID(b, "late");
  b = t, b.tc.staged = 1;
  ASSERT_INVALID(b, "late");
  ASSERT_KEY_AND_NAME(t, ",\"tstore\":1,\"late\":1}", "tc_bm128_bn256_bk64_s4_c1_z8_p132_ts_lt_bf16");
  int n = 0, in_full = 0, outside = 0;
  ASSERT_EQ_INT(count_bf16(1024, 8192, 8192, lim, has_late, &n), 0); /* the full space only */
  ft_variant *fu = NULL;
  ASSERT_OK(ft_space_enumerate_scope(FT_VK_GEMM, 1024, 8192, 8192, FT_MATH_BF16, FT_SPACE_FULL, lim, &fu, NULL, &n, &e));
  for (int i = 0; i < n; i++) in_full += has_late(&fu[i]), outside += late_outside_rule(&fu[i]);
  free(fu);
  ASSERT_TRUE(in_full > 0);
  ASSERT_EQ_INT(outside, 0);
  /* gelu in tf32 at BN 256: early spills, late fits (silu did too before the fast function forms). */
  ft_variant vs[2] = {t, t};
  for (int i = 0; i < 2; i++) vs[i].math = FT_MATH_TF32, vs[i].bk = 32, vs[i].tc.late = i;
  ft_kernel_src src[2] = {{0}};
  ft_compile_job jobs[2] = {{0}};
  compile_fixed(vs, 2, "gelu(x + bias)", src, jobs);
  char rej[256] = "";
  ASSERT_TRUE(jobs[0].status != FT_OK && ft__compile_rejection(jobs[0].log, rej, sizeof rej) && strstr(rej, "spilled"));
  ASSERT_EQ_INT(jobs[1].status, FT_OK);
  for (int i = 0; i < 2; i++) ft_compile_job_clear(&jobs[i]), ft_kernel_src_free(&src[i]);
}

/* Deferred E (defer: each tile's E under the next tile's k loop, in `defer` parts per store box):
 * its rules, key and name; the full space offers it beside the early TMA-store form for any E
 * (more parts the heavier E and the narrower the tile), never with a matrix operand, and the
 * default space not (TC_DEFER_IN_DEFAULT: measured slower); the cost model ranks it before its early twin with a
 * heavy E; no column-vector staging; it compiles for sm_90a without spills at BN 128 and 256 with a
 * heavy E. */
static int defer_outside_rule(const ft_variant *v) {
  return v->tc.defer && (!v->tc.tstore || v->tc.pingpong || v->tc.streamk || v->tc.staged || v->tc.late || v->split_k ||
                         v->bn % 64 || v->math != FT_MATH_BF16 || v->tc.consumers != 2 || v->tc.defer > 8);
}

/* Deferred twins in the space of (m, n, k, math, epilogue, scope); with costs, how many rank before
 * their early twin (*ahead) and after it (*behind); the parts of the first BN 256 and BN 128 twins. */
static int count_defer(int64_t m, int64_t n, int64_t k, ft_math math, const char *text, ft_space_scope scope,
                       const ft_device_limits *lim, int *outside, int *ahead, int *behind, int *parts256,
                       int *parts128) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_variant *vs = NULL;
  double *costs = NULL;
  int nv = 0, count = 0;
  *outside = *ahead = *behind = *parts256 = *parts128 = 0;
  ASSERT_OK(ft_ep_parse(text, &ep, &e));
  ASSERT_OK(ft_space_enumerate_ep(FT_VK_GEMM, m, n, k, math, scope, ep, lim, &vs, &costs, &nv, &e));
  for (int i = 0; i < nv; i++) {
    if (!vs[i].tc.defer) continue;
    count++;
    *outside += defer_outside_rule(&vs[i]);
    if (vs[i].bn == 256 && !*parts256) *parts256 = vs[i].tc.defer;
    if (vs[i].bn == 128 && !*parts128) *parts128 = vs[i].tc.defer;
    ft_variant early = vs[i];
    early.tc.defer = 0;
    for (int j = 0; j < nv; j++)
      if (memcmp(&vs[j], &early, sizeof early) == 0) *ahead += costs[i] < costs[j], *behind += costs[i] > costs[j];
  }
  free(vs);
  free(costs);
  ft_ep_free(ep);
  return count;
}

static void test_defer(const ft_variant *base, const ft_device_limits *lim) {
  char why[240] = "";
  ft_variant t = *base;
  t.tc.tstore = 1, t.tc.defer = 4, t.bn = 256, t.stages = 4;
  ASSERT_TRUE(ft_variant_valid(&t, why, sizeof why));
  ft_variant b = t;
  b.tc.defer = 3;
  ASSERT_INVALID(b, "defer 3");
  b.tc.defer = 16;
  ASSERT_INVALID(b, "defer 16");
  b = t, b.tc.consumers = 1;
  ASSERT_INVALID(b, "defer");
  b = t, b.math = FT_MATH_FP16;
  ASSERT_INVALID(b, "defer");
  b = t, b.tc.tstore = 0;
  ASSERT_INVALID(b, "defer");
  b = t, b.bn = 128, b.tc.pingpong = 2;
  ASSERT_INVALID(b, "defer");
  b = t, b.tc.late = 1;
  ASSERT_INVALID(b, "defer");
  b = t, b.bn = 192 - 8;
  ASSERT_INVALID(b, "defer");
  b = t, b.math = FT_MATH_TF32, b.bk = 32, b.bn = 128;
  ASSERT_INVALID(b, "defer");
  ASSERT_KEY_AND_NAME(t, ",\"tstore\":1,\"defer\":4}", "tc_bm128_bn256_bk64_s4_c1_z8_p132_ts_de4_bf16");
  { /* the early twin stages its bias slice in shared memory; the deferred form reads it from L2 */
    ft_err e;
    ft_epilogue *ep = NULL;
    ft_kernel_src src = {0};
    b = t, b.tc.defer = 0;
    ASSERT_OK(ft_ep_parse("gelu(x + bias)", &ep, &e));
    ASSERT_OK(ft_codegen_variant(&b, ep, &src, &e));
    ASSERT_TRUE(strstr(src.text, "colv_bytes = 512,") != NULL);
    ft_kernel_src_free(&src);
    ft_ep_free(ep);
  }
  /* A heavy E: twins in the full space, all within the rules, ranked before their early twins;
   * gelu_tanh at 1024x8192x8192: 8 parts at BN 256 and BN 128 (half the k tile's MMA time, at most 8). */
  int outside, ahead, behind, p256, p128;
  const char *heavy = "gelu_tanh(x + bias) * 1.5";
  ASSERT_TRUE(count_defer(1024, 8192, 8192, FT_MATH_BF16, heavy, FT_SPACE_FULL, lim, &outside, &ahead, &behind, &p256,
                          &p128) > 0);
  ASSERT_EQ_INT(outside, 0);
  ASSERT_TRUE(ahead > 0 && behind == 0);
  ASSERT_EQ_INT(p256, 8);
  ASSERT_EQ_INT(p128, 8);
  ASSERT_EQ_INT(count_defer(1000, 8200, 4096, FT_MATH_FP16, heavy, FT_SPACE_FULL, lim, &outside, &ahead, &behind,
                            &p256, &p128), 0); /* bf16 only: fp16's range (tc_valid) */
  /* A short K: every part needs a k tile of the next tile (4 k tiles here; at least 8 parts a box). */
  ASSERT_EQ_INT(count_defer(1024, 8192, 256, FT_MATH_BF16, heavy, FT_SPACE_FULL, lim, &outside, &ahead, &behind,
                            &p256, &p128), 0);
  /* The default space: none (TC_DEFER_IN_DEFAULT 0: measured slower on the H100). */
  ASSERT_EQ_INT(count_defer(1024, 8192, 8192, FT_MATH_BF16, heavy, FT_SPACE_PRUNED, lim, &outside, &ahead, &behind,
                            &p256, &p128), 0);
  ASSERT_EQ_INT(outside, 0);
  /* A light E: none in the pruned space; in the full one, within the rules. */
  ASSERT_EQ_INT(count_defer(1024, 8192, 8192, FT_MATH_BF16, "x + bias", FT_SPACE_PRUNED, lim, &outside, &ahead, &behind,
                            &p256, &p128), 0);
  ASSERT_TRUE(count_defer(1024, 8192, 8192, FT_MATH_BF16, "x + bias", FT_SPACE_FULL, lim, &outside, &ahead, &behind,
                          &p256, &p128) > 0);
  ASSERT_EQ_INT(outside, 0);
  /* Not with a matrix operand, nor in tf32, 3xtf32 or fp8. */
  ASSERT_EQ_INT(count_defer(1024, 8192, 8192, FT_MATH_BF16, "gelu(x + r) where mat r", FT_SPACE_FULL, lim, &outside,
                            &ahead, &behind, &p256, &p128), 0);
  ASSERT_EQ_INT(count_defer(1024, 8192, 8192, FT_MATH_TF32, heavy, FT_SPACE_FULL, lim, &outside, &ahead, &behind, &p256,
                            &p128), 0);
  ASSERT_EQ_INT(count_defer(1024, 8192, 8192, FT_MATH_FP8, "gelu(x * sx * sw + bias) where row sx, col sw",
                            FT_SPACE_FULL, lim, &outside, &ahead, &behind, &p256, &p128), 0);
  /* Compiles without spills (a part's E and its loads stay inside the k loop: tc_epilogue_tma.cuh). */
  ft_variant vs[2] = {t, t};
  vs[0].bn = 128, vs[0].stages = 5, vs[0].tc.defer = 8;
  vs[1].tc.defer = 8; /* BN 256: two boxes wait in the store buffers, two in registers */
  ft_kernel_src src[2] = {{0}};
  ft_compile_job jobs[2] = {{0}};
  compile_fixed(vs, 2, heavy, src, jobs);
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ_INT(jobs[i].status, FT_OK);
    ASSERT_TRUE(strstr(src[i].text, "defer = 8,") && strstr(src[i].text, "colv_bytes = 0,"));
    /* ft_gemm_tc's own line: no stack frame (the held words in registers), no spill */
    const char *props = jobs[i].log ? strstr(jobs[i].log, "Function properties for ft_gemm_tc") : NULL;
    const char *frame = props ? strstr(props, "bytes stack frame") : NULL;
    ASSERT_TRUE(frame && frame - props > 6 && !memcmp(frame - 3, " 0 bytes stack frame, 0 bytes spill stores, 0",
                                                       strlen(" 0 bytes stack frame, 0 bytes spill stores, 0")));
    ft_compile_job_clear(&jobs[i]), ft_kernel_src_free(&src[i]);
  }
}

static int is_fitted(const ft_variant *v) { return v->bn % 64 != 0 && v->bn != 192; }

/* Wave-fitted widths: at 512x11008x4096 BN 256, 192 and 128 make 1.3, 1.76 and 2.6 waves of
 * 128-row tiles on 132 SMs; 168 makes exactly 2 (and 112 exactly 3), so both are enumerated,
 * 168 only without clusters (half its W tile is 84 rows, not whole swizzle atoms), 112 also as
 * 128 x 112 ping-pong (the measured best there), and the model ranks a fitted width first. Where a standard width already fills its waves (the seed shapes) no
 * fitted one is added. */
/* Whether v's source for epilogue text contains want. */
static int source_has(const ft_variant *v, const char *text, const char *want) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_kernel_src src;
  if (ft_ep_parse(text, &ep, &e) != FT_OK || ft_codegen_variant(v, ep, &src, &e) != FT_OK) {
    ft_ep_free(ep);
    return -1;
  }
  const int has = strstr(src.text, want) != NULL;
  ft_kernel_src_free(&src);
  ft_ep_free(ep);
  return has;
}

/* The column-vector slice staged in shared memory (FtTc::kColvStage): its bytes in the launch's
 * shared memory, only in the cooperative early TMA-store form and where it fits, and the slot
 * codegen names (the first column vector; none without one). */
static void test_colv_stage(const ft_variant *base, const ft_device_limits *lim) {
  ft_variant t = *base; /* BN 128, two consumers, 6 stages, bf16 */
  t.bn = 256, t.stages = 4, t.tc.tstore = 1;
  ASSERT_TRUE(ft_variant_applicable(&t, 1024, 8192, 8192, lim, NULL, 0));
  ft_variant d = t;
  d.tc.tstore = 0;
  ft_launch_geom g, gd;
  memset(&g, 0, sizeof g), memset(&gd, 0, sizeof gd);
  ft_variant_geometry(&t, 1024, 8192, 8192, &g);
  ft_variant_geometry(&d, 1024, 8192, 8192, &gd);
  ASSERT_TRUE(g.smem == gd.smem + 2 * 64 * 128 * 2 + 2 * 256 * 2); /* boxes, then 2 x 256 bf16 */
  ASSERT_TRUE(source_has(&t, "biasrelu", "colv_bytes = 512,") == 1);
  ASSERT_TRUE(source_has(&t, "biasrelu", "#define FT_EP_COLV_SLOT 0\n") == 1);
  ASSERT_TRUE(source_has(&t, "x + 2*sigmoid(x)", "#define FT_EP_COLV_SLOT -1\n") == 1);
  ASSERT_TRUE(source_has(&t, "max(x * a, 0) + b where scalar a, col b", "#define FT_EP_COLV_SLOT 1\n") == 1);
  ASSERT_TRUE(source_has(&d, "biasrelu", "colv_bytes = 5") == 0); /* direct stores: no early E */
  ft_variant l = t;
  l.tc.late = 1;
  ASSERT_TRUE(source_has(&l, "biasrelu", "colv_bytes = 5") == 0);
  /* tf32 at BN 256 and 4 stages: 2 KiB more would pass 227 KiB, so it is left out, not a stage. */
  ft_variant f = t;
  f.math = FT_MATH_TF32, f.bk = 32;
  ASSERT_TRUE(ft_variant_applicable(&f, 1024, 8192, 8192, lim, NULL, 0));
  ASSERT_TRUE(source_has(&f, "biasrelu", "colv_bytes = 2048,") == 0);
  f.stages = 3;
  ASSERT_TRUE(source_has(&f, "biasrelu", "colv_bytes = 1024,") == 1);
}

static void test_fitted_widths(const ft_device_limits *lim) {
  ft_variant *vs = NULL;
  double *costs = NULL;
  int n = 0, n168 = 0, n112 = 0, pp112 = 0, best = -1;
  ft_err e;
  ASSERT_OK(ft_space_enumerate_costs(FT_VK_GEMM, 512, 11008, 4096, FT_MATH_BF16, lim, &vs, &costs, &n, &e));
  for (int i = 0; i < n; i++) {
    if (ft_family_of(&vs[i]) != ft_family_named("tc")) continue;
    n168 += vs[i].bn == 168, n112 += vs[i].bn == 112, pp112 += vs[i].bn == 112 && vs[i].tc.pingpong == 2;
    if (vs[i].bn == 168) ASSERT_EQ_INT(vs[i].tc.cluster, 1);
    if (best < 0 || costs[i] < costs[best]) best = i;
  }
  ASSERT_TRUE(n168 > 0 && n112 > 0 && pp112 > 0);
  ASSERT_TRUE(best >= 0 && (vs[best].bn == 168 || vs[best].bn == 112));
  free(vs);
  free(costs);
  int total = 0;
  ASSERT_EQ_INT(count_bf16(1024, 8192, 8192, lim, is_fitted, &total), 0);
  ASSERT_EQ_INT(count_bf16(128, 16384, 16384, lim, is_fitted, &total), 0);
  ASSERT_EQ_INT(count_bf16(8192, 8192, 8192, lim, is_fitted, &total), 0);
  ASSERT_TRUE(count_bf16(128, 28672, 8192, lim, is_fitted, &total) > 0); /* 224: 128 tiles, one wave */
}

int main(int argc, char **argv) {
  const int stride = ft_sample_stride(argc, argv, SAMPLE_STRIDE);
  ft_device_limits lim;
  ft_err e;
  if (ft_limits_for_arch("sm_90", &lim, &e) != FT_OK) RETURN_FAIL("%s", e.msg);
  test_rejection();
  test_validity(&lim);
  test_fitted_widths(&lim);
  int total = 0;
  const double t0 = now_s();
  for (size_t s = 0; s < sizeof k_shapes / sizeof k_shapes[0]; s++)
    for (size_t m = 0; m < sizeof k_modes / sizeof k_modes[0]; m++) compile_mode(&k_shapes[s], k_modes[m], &lim, stride, &total);
  printf("%d tensor-core variants compiled (%s) in %.1f s\n", total, stride > 1 ? "sample" : "sweep", now_s() - t0);
  return FT_TEST_DONE();
}
