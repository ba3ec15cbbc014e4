/* The eager chain as a plan (family eager_chain, src/family/family_chain.c) without a GPU: one
 * variant per problem whose E has an eager plan (elementwise, bias folded into cuBLASLt's GEMM,
 * reductions), none for a gated pair or an E with nothing after the GEMM, with the refusal said;
 * its rules, name and JSON; its one program (every step an entry point, the eager baseline's text)
 * compiling with NVRTC for sm_90a without spills; its launch description (chain.h); and a stored
 * result of it served back by ft_lookup. */
#include <unistd.h>

#include "api_internal.h"
#include "chain.h"
#include "device.h"
#include "epilogue_test_util.h"
#include "family.h"

static const struct {
  const char *text;
  ft_math math;
  int steps, lt; /* the plan's, as the variant holds them (lt: the bias's slot + 1) */
  const char *name;
} k_cases[] = {
    {"min(x + bias, c) - c where c = 2.0", FT_MATH_FP32, 2, 1, "eager_s2_v4_lt"},
    {"sigmoid(x) * x * 2", FT_MATH_BF16, 3, 0, "eager_s3_v8_bf16"},
    {"gelu(x + bias)", FT_MATH_TF32, 1, 1, "eager_s1_v4_lt_tf32"},
    {"gelu(softmax(x + bias))", FT_MATH_BF16, 2, 1, "eager_s2_v8_lt_bf16"},
    {"silu(groupnorm(x + bias, 16) * g + b) where col g, col b", FT_MATH_FP16, 4, 2, "eager_s4_v8_lt_fp16"},
    {"logsumexp(clamp(2 * (x + bias), -10, 10))", FT_MATH_3XTF32, 3, 1, "eager_s3_v4_lt_3xtf32"},
    {"batchnorm(x * 2) * g where col g", FT_MATH_BF16, 3, 0, "eager_s3_v8_bf16"},
    {"relu(maxpool(x + bias, 3)) * r where row r", FT_MATH_FP32, 3, 1, "eager_s3_v4_lt"},
};
#define N_CASES (sizeof k_cases / sizeof k_cases[0])
#define M 300
#define N 4096

/* The chain variants of text's pruned (or full) space in math: how many, the last in *out. */
static int chains_of(const char *text, ft_math math, int64_t n, int scope, ft_variant *out) {
  int count = 0, found = 0;
  ft_variant *v = enumerate_scope(text, FT_VK_EPILOGUE, M, n, math, scope, &count);
  for (int i = 0; i < count; i++)
    if (v[i].family == FT_FAMILY_EAGER_CHAIN) *out = v[i], found++;
  free(v);
  return found;
}

/* The FT_BLOCK a chain program defines for step j (its namespace's first); -1 when none. */
static int step_block(const char *text, int j) {
  char ns[40];
  snprintf(ns, sizeof ns, "namespace ft_chain_step%d {\n", j);
  const char *at = strstr(text, ns), *def = at ? strstr(at, "#define FT_BLOCK ") : NULL;
  if (!def) return -1;
  char next[40];
  snprintf(next, sizeof next, "namespace ft_chain_step%d {\n", j + 1);
  const char *end = strstr(at, next);
  return end && def > end ? -1 : atoi(def + strlen("#define FT_BLOCK "));
}

/* Few long rows (128 of 16384): the row reductions take 1024 threads a block, in the variant
 * (rblock, "_r1024"), its program (FT_BLOCK), the launch's description and the baseline's text;
 * each step's FT_BLOCK is its launch's block (batchnorm 1024 always, groupnorm FT_AUX_BLOCK); the
 * programs compile for sm_90a without spills. */
static void test_row_block(void) {
  ASSERT_EQ_INT(ft_chain_row_block(256, 16384, 8), 1024);
  ASSERT_EQ_INT(ft_chain_row_block(257, 16384, 8), 0);  /* many rows */
  ASSERT_EQ_INT(ft_chain_row_block(128, 16376, 8), 0);  /* fewer than two vectors a thread */
  ASSERT_EQ_INT(ft_chain_row_block(128, 16384, 4), 1024);
  static const struct {
    const char *text;
    ft_math math;
    const char *name;
  } cases[] = {
      {"softmax(x + bias)", FT_MATH_BF16, "eager_s1_v8_r1024_lt_bf16"},
      {"softmax(batchnorm(x + bias) * 2)", FT_MATH_FP32, NULL},
      {"groupnorm(x + bias, 64) * 2", FT_MATH_FP32, NULL},
      {"rowsum(maxpool(x, 4)) * 2", FT_MATH_FP32, NULL},
      {"logsumexp(x * 2)", FT_MATH_3XTF32, NULL},
  };
  ft_err e;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int count = 0, found = 0;
    ft_variant *all = enumerate_scope(cases[c].text, FT_VK_EPILOGUE, 128, 16384, cases[c].math, FT_SPACE_PRUNED, &count);
    ft_variant v;
    for (int i = 0; i < count; i++)
      if (all[i].family == FT_FAMILY_EAGER_CHAIN) v = all[i], found++;
    free(all);
    ASSERT_EQ_INT(found, 1);
    ft_epilogue *ep = parse_ok(cases[c].text);
    if (found != 1 || !ep) continue;
    ASSERT_EQ_INT(v.chain.rblock, 1024);
    int vec, rblock;
    ft_chain_reads(cases[c].math, 128, 16384, &vec, &rblock); /* the eager baseline's */
    ASSERT_TRUE(vec == v.vec && rblock == v.chain.rblock);
    char name[96];
    ft_variant_name(&v, name, sizeof name);
    if (cases[c].name) ASSERT_EQ_STR(name, cases[c].name);
    ASSERT_CONTAINS(name, "_r1024");
    round_trips(&v);
    ft_kernel_src src;
    ASSERT_OK(ft_codegen_variant(&v, ep, &src, &e));
    ft_ep_eager plan;
    ft_chain ch;
    ASSERT_OK(ft_ep_eager_plan(ep, &plan, &e));
    ASSERT_OK(ft_chain_of_plan(&plan, ep, cases[c].math, 128, 16384, v.chain.rblock, &ch, &e));
    for (int j = 0; j < ch.nsteps; j++) {
      if (!ch.steps[j].reduce) continue;
      ASSERT_EQ_INT(step_block(src.text, j), ch.steps[j].block);
      const ft_ep_red kind = plan.steps[j].reduce;
      ASSERT_EQ_INT(ch.steps[j].block, kind == FT_RED_GROUPNORM ? FT_AUX_BLOCK : 1024);
    }
    ft_compile_job job;
    memset(&job, 0, sizeof job);
    job.src = src.text, job.hash = src.hash;
    ASSERT_OK(ft_compile_many(NULL, "sm_90a", &job, 1, 1, &e)); /* a spill is a rejection */
    if (job.status != FT_OK) FT_FAIL_AT_("%s: %.2000s", name, job.log ? job.log : "");
    ft_compile_job_clear(&job);
    ft_kernel_src_free(&src);
    ft_ep_free(ep);
  }
  ft_variant bad;
  memset(&bad, 0, sizeof bad);
  bad.kind = FT_VK_EPILOGUE, bad.family = FT_FAMILY_EAGER_CHAIN, bad.vec = 4, bad.chain.steps = 1, bad.chain.rblock = 512;
  char why[160];
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "rblock");
}

static void test_enumeration(void) {
  for (size_t c = 0; c < N_CASES; c++) {
    ft_variant v;
    memset(&v, 0, sizeof v);
    ASSERT_EQ_INT(chains_of(k_cases[c].text, k_cases[c].math, N, FT_SPACE_PRUNED, &v), 1);
    ASSERT_EQ_INT(v.chain.steps, k_cases[c].steps);
    ASSERT_EQ_INT(v.chain.lt, k_cases[c].lt);
    ASSERT_EQ_INT(ft_variant_strategy(&v), FT_STRATEGY_CUBLAS_EPILOGUE);
    char name[96];
    ft_variant_name(&v, name, sizeof name);
    ASSERT_EQ_STR(name, k_cases[c].name);
    round_trips(&v);
    ft_variant full;
    ASSERT_EQ_INT(chains_of(k_cases[c].text, k_cases[c].math, N, FT_SPACE_FULL, &full), 1);
    ASSERT_TRUE(memcmp(&full, &v, sizeof v) == 0);
  }
  /* Nothing after the GEMM (the epilogue pass's candidates are that chain), a gated pair (the gated
   * pass is its safe strategy): no chain. */
  ft_variant v;
  ASSERT_EQ_INT(chains_of("x + bias", FT_MATH_BF16, N, FT_SPACE_PRUNED, &v), 0);
  ASSERT_EQ_INT(chains_of("x", FT_MATH_FP32, N, FT_SPACE_PRUNED, &v), 0);
  ASSERT_EQ_INT(chains_of("silu(x) * x2", FT_MATH_BF16, N, FT_SPACE_PRUNED, &v), 0);
  /* cuBLASLt's bias GEMM wants rows of 16 bytes: at n = 4095 (1001) a reducing E's bias is a step
   * after cuBLAS (torch's addmm falls back the same way), the vector one element; an elementwise
   * E has no chain there (its one pass after cuBLAS is the better plan). */
  ASSERT_EQ_INT(chains_of("relu(x + bias) * 2", FT_MATH_BF16, 4095, FT_SPACE_PRUNED, &v), 0);
  ASSERT_EQ_INT(chains_of("softmax(x + bias) * 2", FT_MATH_BF16, 4095, FT_SPACE_PRUNED, &v), 1);
  ASSERT_EQ_INT(v.chain.lt, 0);
  ASSERT_EQ_INT(v.chain.steps, 3);
  ASSERT_EQ_INT(v.vec, 1);
  char name[96];
  ft_variant_name(&v, name, sizeof name);
  ASSERT_EQ_STR(name, "eager_s3_v1_bf16");
  { /* its program is the unfolded plan's: codegen rebuilds that plan, not the folded one */
    ft_epilogue *sm = parse_ok("softmax(x + bias) * 2");
    ft_ep_eager *unf = malloc(sizeof *unf), *fol = malloc(sizeof *fol);
    ft_kernel_src a, b, c;
    ft_err e;
    if (sm && unf && fol) {
      ASSERT_OK(ft_codegen_variant(&v, sm, &a, &e));
      ASSERT_OK(ft_ep_eager_plan_fold(sm, 0, unf, &e));
      ASSERT_OK(ft_ep_eager_plan_fold(sm, 1, fol, &e));
      ASSERT_OK(ft_codegen_chain(unf, (ft_math)v.math, v.vec, v.chain.rblock, sm, &b, &e));
      ASSERT_OK(ft_codegen_chain(fol, (ft_math)v.math, v.vec, v.chain.rblock, sm, &c, &e));
      ASSERT_EQ_STR(a.hash, b.hash);
      ASSERT_TRUE(strcmp(a.hash, c.hash) != 0);
      ft_kernel_src_free(&a), ft_kernel_src_free(&b), ft_kernel_src_free(&c);
    }
    free(unf), free(fol);
    ft_ep_free(sm);
  }
  ASSERT_EQ_INT(chains_of("groupnorm(x + bias, 143) * 2", FT_MATH_BF16, 1001, FT_SPACE_PRUNED, &v), 1);
  ASSERT_EQ_INT(v.chain.lt, 0);
  ASSERT_EQ_INT(v.chain.steps, 3);
  ASSERT_EQ_INT(chains_of("relu(x) * 2", FT_MATH_BF16, 4095, FT_SPACE_PRUNED, &v), 1);
  ASSERT_EQ_INT(v.vec, 1);
  /* The plans themselves: folded, the bias is the GEMM's; unfolded, the first step adds it. */
  ft_epilogue *ep = parse_ok("relu(x + bias) * 2");
  ft_ep_eager folded, unfolded;
  if (ep) {
    ASSERT_OK(ft_ep_eager_plan_fold(ep, 1, &folded, NULL));
    ASSERT_OK(ft_ep_eager_plan_fold(ep, 0, &unfolded, NULL));
    ASSERT_EQ_INT(folded.gemm_bias_slot, 0);
    ASSERT_EQ_INT(unfolded.gemm_bias_slot, -1);
    ASSERT_EQ_INT(unfolded.nsteps, folded.nsteps + 1);
    ASSERT_EQ_INT(unfolded.steps[0].in[0], 0); /* it reads the GEMM's output */
  }
  ft_ep_free(ep);
}

static void test_rules(void) {
  const ft_variant ok = {.kind = FT_VK_EPILOGUE, .family = FT_FAMILY_EAGER_CHAIN, .math = FT_MATH_BF16, .vec = 8,
                         .chain = {.steps = 2, .lt = 1}};
  char why[160] = "";
  ASSERT_TRUE(ft_variant_valid(&ok, why, sizeof why));
  ft_variant bad = ok;
  bad.chain.steps = 0;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "steps 0");
  bad = ok, bad.bm = 64;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  bad = ok, bad.pass.block = 256; /* another family's block */
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  bad = ok, bad.math = FT_MATH_FP32; /* 8 fp32 elements are 32 bytes */
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ft_device_limits lim, old;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  ASSERT_OK(ft_limits_for_arch("sm_80", &old, &e));
  ASSERT_TRUE(ft_variant_applicable(&ok, 7, 4096, 64, &lim, why, sizeof why));
  ASSERT_TRUE(!ft_variant_applicable(&ok, 7, 4092, 64, &lim, why, sizeof why));
  ASSERT_CONTAINS(why, "vector of 8");
  bad = ok, bad.math = FT_MATH_FP8;
  ASSERT_TRUE(!ft_variant_applicable(&bad, 7, 4096, 64, &lim, why, sizeof why));
  bad.chain.lt = 0;
  ASSERT_TRUE(!ft_variant_applicable(&bad, 7, 4096, 64, &old, why, sizeof why));
  ASSERT_CONTAINS(why, "sm_89");
}

/* Every case's program: one entry point per step, the baseline's text (ft_codegen_chain of the same
 * plan: the same hash), and the refusals: a variant of another plan, no epilogue, a gated pair. */
static int make_sources(ft_kernel_src *src) {
  int n = 0;
  ft_err e;
  for (size_t c = 0; c < N_CASES; c++) {
    ft_variant v;
    memset(&v, 0, sizeof v);
    if (chains_of(k_cases[c].text, k_cases[c].math, N, FT_SPACE_PRUNED, &v) != 1) continue;
    ft_epilogue *ep = parse_ok(k_cases[c].text);
    if (!ep) continue;
    ASSERT_OK(ft_codegen_variant(&v, ep, &src[n], &e));
    ASSERT_EQ_STR(src[n].kernel, "ft_chain_0");
    for (int j = 0; j < v.chain.steps; j++) { /* "#define ft_eager_step ft_chain_<j>" or ft_reduce_pass's */
      char entry[16], def[24];
      ft_chain_kernel_name(j, entry, sizeof entry);
      snprintf(def, sizeof def, " %s\n", entry);
      ASSERT_CONTAINS(src[n].text, def);
    }
    ft_ep_eager plan;
    ft_kernel_src same;
    ASSERT_OK(ft_ep_eager_plan(ep, &plan, &e));
    ASSERT_OK(ft_codegen_chain(&plan, k_cases[c].math, v.vec, v.chain.rblock, ep, &same, &e));
    ASSERT_EQ_STR(same.hash, src[n].hash);
    ft_kernel_src_free(&same);
    ft_kernel_src k;
    ft_variant other = v;
    other.chain.steps++;
    ASSERT_EQ_INT(ft_codegen_variant(&other, ep, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "is not the plan of");
    other = v, other.chain.lt = v.chain.lt ? 0 : 1;
    ASSERT_EQ_INT(ft_codegen_variant(&other, ep, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_EQ_INT(ft_codegen_variant(&v, NULL, &k, &e), FT_ERR_INVALID_ARG);
    ft_ep_free(ep);
    n++;
  }
  ft_epilogue *gated = parse_ok("silu(x) * x2");
  const ft_variant g = {.kind = FT_VK_EPILOGUE, .family = FT_FAMILY_EAGER_CHAIN, .math = FT_MATH_BF16, .vec = 8,
                        .chain = {.steps = 3}};
  ft_kernel_src k;
  if (gated) ASSERT_EQ_INT(ft_codegen_variant(&g, gated, &k, &e), FT_ERR_UNSUPPORTED);
  if (gated) ASSERT_CONTAINS(e.msg, "does not compute a gated pair");
  ft_ep_free(gated);
  return n;
}

static void test_compiles(void) {
  ft_kernel_src src[N_CASES];
  const int n = make_sources(src);
  ASSERT_EQ_INT(n, (int)N_CASES);
  ft_compile_job jobs[N_CASES];
  memset(jobs, 0, sizeof jobs);
  for (int i = 0; i < n; i++) jobs[i].src = src[i].text, jobs[i].hash = src[i].hash;
  ft_err e;
  /* sm_90a, the H100's: ft_compile_many rejects a spilling kernel (ft__compile_rejection). */
  ASSERT_OK(ft_compile_many(NULL, "sm_90a", jobs, n, 2, &e));
  for (int i = 0; i < n; i++) {
    if (jobs[i].status != FT_OK) FT_FAIL_AT_("case %d does not compile: %.2000s", i, jobs[i].log ? jobs[i].log : "");
    ft_compile_job_clear(&jobs[i]);
  }
  /* ptxas's own count for one program's every step: registers within the cap, no stack. */
  ft_variant v;
  if (chains_of(k_cases[4].text, k_cases[4].math, N, FT_SPACE_PRUNED, &v) == 1) {
    for (int j = 0; j < v.chain.steps; j++) {
      char entry[16];
      ft_chain_kernel_name(j, entry, sizeof entry);
      ft_kernel_usage u;
      ASSERT_OK(ft_compile_usage(src[4].text, "sm_90a", entry, &u, &e));
      ASSERT_TRUE(u.regs > 0 && u.regs <= ft_family_of(&v)->reg_cap(&v));
      ASSERT_EQ_INT(u.spill_stores + u.spill_loads, 0);
    }
  }
  for (int i = 0; i < n; i++) ft_kernel_src_free(&src[i]);
  printf("%d eager chains compiled for sm_90a\n", n);
}

/* Buffers whose lives overlap (from the step writing one, b - 1, to the last step reading it) hold
 * disjoint bytes of the workspace, each inside it and 256-byte aligned; returns the bytes the
 * buffers would take without sharing. */
static size_t check_buffers(const ft_ep_eager *plan, const ft_chain *c, int64_t m, int64_t n, int64_t pooled,
                            size_t elem) {
  size_t size[FT_EP_MAX_STEPS], sum = 0;
  int last[FT_EP_MAX_STEPS];
  for (int b = 0; b < c->nsteps; b++) {
    const int shape = b == 0 ? (int)FT_EP_SHAPE_MN : (int)plan->steps[b - 1].shape;
    const int64_t cols = shape == FT_EP_SHAPE_MN ? n : shape == FT_EP_SHAPE_M ? 1 : pooled;
    size[b] = ((size_t)(m * cols) * elem + 255) / 256 * 256;
    sum += size[b];
    last[b] = b - 1;
    for (int j = b; j < c->nsteps; j++)
      for (int i = 0; i < c->steps[j].nin; i++)
        if (c->steps[j].in[i] == b) last[b] = j;
    ASSERT_EQ_INT(c->offset[b] % 256, 0);
    ASSERT_TRUE(c->offset[b] + size[b] <= c->workspace_bytes);
  }
  for (int b = 0; b < c->nsteps; b++)
    for (int d = b + 1; d < c->nsteps; d++)
      if (last[b] >= d - 1) /* alive when d is written */
        ASSERT_TRUE(c->offset[b] + size[b] <= c->offset[d] || c->offset[d] + size[d] <= c->offset[b]);
  return sum;
}

/* The launch's description: step kinds, columns (after a pool: its windows; after logsumexp: one),
 * buffers sized by shape in the workspace, sharing it where their lives allow. */
static void test_launch_description(void) {
  ft_err e;
  ft_epilogue *pool = parse_ok("relu(maxpool(x + bias, 3)) * r where row r");
  ft_epilogue *lse = parse_ok("logsumexp(clamp(2 * (x + bias), -10, 10))");
  ft_ep_eager plan;
  ft_chain c;
  if (pool) {
    ASSERT_OK(ft_ep_eager_plan(pool, &plan, &e));
    ASSERT_OK(ft_chain_of_plan(&plan, pool, FT_MATH_BF16, M, N, 0, &c, &e));
    ASSERT_EQ_INT(c.nsteps, 3);
    ASSERT_TRUE(c.steps[0].reduce && c.steps[0].cols == N);          /* the pool over the GEMM's [M, N] */
    ASSERT_TRUE(!c.steps[1].reduce && c.steps[1].cols == N / 3);     /* relu over its windows */
    const size_t mn = (M * N * 2 + 255) / 256 * 256, pooled = (M * (N / 3) * 2 + 255) / 256 * 256;
    ASSERT_EQ_INT(check_buffers(&plan, &c, M, N, N / 3, 2), mn + 2 * pooled);
    /* relu's windows (buffer 2) take the GEMM's bytes, which only the pool (step 0) read. */
    ASSERT_EQ_INT(c.workspace_bytes, mn + pooled);
    ASSERT_EQ_INT(c.offset[2], c.offset[0]);
    ASSERT_EQ_STR(c.steps[2].kernel, "ft_chain_2");
  }
  if (lse) {
    ASSERT_OK(ft_ep_eager_plan(lse, &plan, &e));
    ASSERT_OK(ft_chain_of_plan(&plan, lse, FT_MATH_FP32, M, N, 0, &c, &e));
    ASSERT_TRUE(c.steps[c.nsteps - 1].reduce && c.steps[c.nsteps - 1].cols == N);
    check_buffers(&plan, &c, M, N, N, 4);
  }
  /* A batchnorm step: 1024 threads a block, a block per strip of 32 columns; groupnorm's a block per
   * row of FT_AUX_BLOCK. */
  ft_epilogue *bn = parse_ok("batchnorm(x * 2) + 1"), *gn = parse_ok("groupnorm(x, 8) * 2");
  if (bn && gn) {
    ASSERT_OK(ft_ep_eager_plan(bn, &plan, &e));
    ASSERT_OK(ft_chain_of_plan(&plan, bn, FT_MATH_BF16, M, 1000, 0, &c, &e));
    int seen = 0;
    for (int j = 0; j < c.nsteps; j++) {
      if (!c.steps[j].reduce) continue;
      seen++;
      ASSERT_EQ_INT(c.steps[j].block, 1024);
      ASSERT_EQ_INT(c.steps[j].col_blocks, (1000 + 31) / 32);
    }
    ASSERT_EQ_INT(seen, 1);
    ASSERT_OK(ft_ep_eager_plan(gn, &plan, &e));
    ASSERT_OK(ft_chain_of_plan(&plan, gn, FT_MATH_BF16, M, N, 0, &c, &e));
    for (int j = 0; j < c.nsteps; j++)
      if (c.steps[j].reduce) ASSERT_TRUE(c.steps[j].block == FT_AUX_BLOCK && c.steps[j].col_blocks == 0);
  }
  ft_ep_free(bn);
  ft_ep_free(gn);
  /* Values read again later (x twice, a chain after a reduction's broadcast): the invariant on
   * longer plans, and fewer bytes than one buffer a step. */
  static const char *const more[] = {"elu(x + bias) + sigmoid(x + bias)", "tanh(softplus(x)) * sigmoid(x) - x / 3",
                                     "softmax(gelu(x + bias) * 2) * 0.5 + 1", "gelu(x) * sigmoid(x * 3) + relu(x) - 1"};
  for (size_t q = 0; q < sizeof more / sizeof more[0]; q++) {
    ft_epilogue *ep = parse_ok(more[q]);
    if (!ep) continue;
    ASSERT_OK(ft_ep_eager_plan(ep, &plan, &e));
    ASSERT_OK(ft_chain_of_plan(&plan, ep, FT_MATH_FP32, M, N, 0, &c, &e));
    const size_t unshared = check_buffers(&plan, &c, M, N, N, 4);
    if (c.nsteps >= 3) ASSERT_TRUE(c.workspace_bytes < unshared);
    ft_ep_free(ep);
  }
  /* A step reading a buffer not written before it is refused, not indexed. */
  ft_epilogue *two = parse_ok("relu(x + bias) * 2");
  if (two) {
    ASSERT_OK(ft_ep_eager_plan(two, &plan, &e));
    plan.steps[0].in[0] = plan.nsteps + 3;
    ASSERT_EQ_INT(ft_chain_of_plan(&plan, two, FT_MATH_FP32, M, N, 0, &c, &e), FT_ERR_INTERNAL);
    ft_ep_free(two);
  }
  ft_ep_free(pool);
  ft_ep_free(lse);
}

/* A result of the chain stored as a tune stores it comes back from ft_lookup as the best, its
 * configuration the variant, its source current. */
static void test_database(void) {
  char path[512];
  const char *dir = getenv("FT_TEST_TMP");
  snprintf(path, sizeof path, "%s/test_chain_%ld.db", dir ? dir : "/tmp", (long)getpid());
  ft_db_remove_files(path);
  const char *text = "gelu(softmax(x + bias))";
  ft_epilogue *ep = parse_ok(text);
  ft_variant v;
  if (!ep || chains_of(text, FT_MATH_BF16, N, FT_SPACE_PRUNED, &v) != 1) return;
  ft_device_info dev;
  memset(&dev, 0, sizeof dev);
  snprintf(dev.name, sizeof dev.name, "Test GPU H100-like");
  dev.cc_major = 9, dev.sm_count = 132, dev.mem_bytes = (int64_t)80 << 30;
  ft_device_fingerprint(&dev);
  ft_device_limits lim;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  ft_db *db = NULL;
  int64_t dev_id = 0, pid = 0, rid = 0;
  ASSERT_OK(ft_db_open(path, FT_DB_CREATE, &db, &e));
  if (!db) return;
  ASSERT_OK(ft_db_upsert_device(db, &dev, &dev_id, &e));
  ft_problem_key key;
  memset(&key, 0, sizeof key);
  key.m = M, key.n = N, key.k = 256;
  snprintf(key.layout, sizeof key.layout, "xrow_wrow");
  snprintf(key.math, sizeof key.math, "bf16");
  snprintf(key.epilogue, sizeof key.epilogue, "%s", ft_ep_canonical(ep));
  snprintf(key.epilogue_hash, sizeof key.epilogue_hash, "%s", ft_ep_hash(ep));
  ASSERT_OK(ft_db_upsert_problem(db, &key, &pid, &e));
  ASSERT_OK(ft_db_begin_run(db, dev_id, "{}", 10, &rid, &e));
  ft_kernel_src src;
  ASSERT_OK(ft_codegen_variant(&v, ep, &src, &e));
  char name[96], json[256];
  ft_variant_name(&v, name, sizeof name);
  ft_variant_json(&v, json, sizeof json);
  const ft_result_row r = {rid, dev_id, pid, "cublas+epilogue", name, json, "ok", 0.5, 0.5, 0.01, 30, 1e-3, 1e-2,
                           src.hash, "", 1.3};
  ASSERT_OK(ft_db_insert_result(db, &r, &e));
  const ft_result_row eager = {rid, dev_id, pid, "eager", "cuBLASLt BF16 GEMM+BIAS + 2 kernel(s), 1 reducing", "{}",
                               "ok", 0.5, 0.5, 0.01, 30, 1e-3, 1e-2, "", "", 1.3};
  ASSERT_OK(ft_db_insert_result(db, &eager, &e));
  ft_kernel_src_free(&src);
  ft_db_close(db);

  ft_ctx *ctx = NULL;
  ASSERT_OK(ft_open(path, 0, &ctx));
  if (ctx) {
    ft__ctx_set_device(ctx, &dev, &lim);
    ft_config cfg;
    const ft_problem p = {M, N, 256, text, FT_MATH_BF16};
    ASSERT_OK(ft_lookup(ctx, &p, 0, &cfg));
    ASSERT_EQ_STR(cfg.strategy, "cublas+epilogue");
    ASSERT_EQ_STR(cfg.name, name);
    ft_variant back;
    ASSERT_OK(ft_variant_from_json(cfg.config, &back, &e));
    ASSERT_TRUE(memcmp(&back, &v, sizeof v) == 0);
  }
  ft_close(ctx);
  ft_ep_free(ep);
  ft_db_remove_files(path);
}

int main(void) {
  test_enumeration();
  test_row_block();
  test_rules();
  test_launch_description();
  test_database();
  test_compiles();
  return FT_TEST_DONE();
}
