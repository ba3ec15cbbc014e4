/* Family tc_reduce: the one-value row reductions of docs/EPILOGUE.md (rowsum, rowmean, rowmax,
 * rowmin, logsumexp: y is [M]) fused into the tensor-core GEMM (FT_FAMILY_TC_REDUCE, names
 * "tcr_..."). Family tc's kernel and rules (src/family/tc/family_tc.c) with the tile's epilogue replaced:
 * each m64 block folds E's reduction argument over its rows into one fp32 statistic per (row, N
 * tile) in the plan's workspace (kernels_src/tc_reduce.cuh), and a second kernel folds a row's
 * statistics and applies the rest of E (kernels_src/tc_reduce_final.cu). No M x N buffer exists.
 * The forms that store y otherwise (TMA stores, split-K, stream-K) do not apply. GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family_tc.h"
#include "kernel_abi.h"

extern const ft_family ft_family_tc;

static int tcr_valid(const ft_variant *v, char *why, size_t whylen) {
  if (v->tc.tstore || v->split_k > 1 || v->tc.streamk || v->tc.staged || v->tc.late || v->tc.gated)
    FT_WHY("tc_reduce: the tile writes row statistics, not y: tstore, staged, late, split_k, streamk and gated do not "
           "apply");
  return ft_family_tc.valid(v, why, whylen);
}

/* Family tc's rules, and the statistics' workspace within size_t. */
static int tcr_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim, char *why,
                          size_t whylen) {
  if (m > 0x7fffffff || n > 0x7fffffff) FT_WHY("tc_reduce: m %lld, n %lld: int sizes", (long long)m, (long long)n);
  return ft_family_tc.applicable(v, m, n, k, lim, why, whylen);
}

static int64_t tcr_ntiles(const ft_variant *v, int64_t n) { return v->bn > 0 ? (n + v->bn - 1) / v->bn : 0; }

/* Family tc's launch, then the workspace (an fp32 statistic per row and N tile; a pre-split
 * variant's split x and W after them, geometry's presplit_off) and the finalize kernel: a warp per
 * row. */
static void tcr_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  ft_family_tc.geometry(v, m, n, k, g);
  if (v->bn <= 0) return;
  const size_t stats = (size_t)m * (size_t)tcr_ntiles(v, n) * sizeof(float);
  if (g->presplit_kp) tc_presplit_after(g, stats, g); /* after the statistics */
  else g->workspace_bytes = stats;
  g->has_reduce = 1;
  g->rblock[0] = FT_AUX_BLOCK;
  g->rgrid[0] = (unsigned)((m + FT_AUX_BLOCK / 32 - 1) / (FT_AUX_BLOCK / 32));
}

static int tcr_reg_cap(const ft_variant *v) { return ft_family_tc.reg_cap(v); }
static void tcr_defines(const ft_variant *v, ft_strbuf *b) { ft_family_tc.defines(v, b); }
static const char *tcr_reduce_kernel(const ft_variant *v) {
  (void)v;
  return "ft_tc_red_finalize";
}

/* TMA reads x and W; the finalize kernel stores y one element at a time. */
static void tcr_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  ft_family_tc.alignment(v, m, n, k, need);
  need[2] = (size_t)osize(v);
}

/* ft_gemm_tc's arguments (no y map: no TMA stores); the finalize kernel takes split-K's list,
 * ft_tc_red_finalize(WS, Y, M, N, ep). */
static ft_status tcr_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  return ft_family_tc.kernel_args(v, io, st, err);
}
static ft_status tcr_reduce_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  return ft_family_tc.reduce_args(v, io, st, err);
}

/* "tcr_bm128_bn256_bk64_s4_c2_z8_p132_bf16": family tc's name of the same parameters, "tcr". */
static int tcr_name(const ft_variant *v, char *buf, size_t len) {
  char tc[160];
  ft_family_tc.variant_name(v, tc, sizeof tc);
  return snprintf(buf, len, "tcr%s", tc + 2);
}

static int tcr_stream_k(const ft_variant *v) {
  (void)v;
  return 0;
}

static const char *const k_tcr_sources[] = {
    "kernels_src/tc_config.cuh",   "kernels_src/wgmma_sm90.cuh",      "kernels_src/tc_ptx.cuh",
    "kernels_src/tc_sched.cuh",    "kernels_src/tc_matrix.cuh",       "kernels_src/tc_mainloop.cuh",
    "kernels_src/tc_epilogue.cuh", "kernels_src/tc_epilogue_tma.cuh", "kernels_src/tc_gated.cuh",
    "kernels_src/tc_reduce.cuh",   "kernels_src/tc_norm.cuh",         "kernels_src/tc_colstats.cuh",
    "kernels_src/gemm_tc.cu",
    "kernels_src/tc_reduce_final.cu", NULL};

const ft_family ft_family_tc_reduce = {
    .name = "tc_reduce",
    .kind = FT_VK_GEMM,
    .params_offset = offsetof(ft_variant, tc),
    .params_size = sizeof(ft_tc_params),
    .id = FT_FAMILY_TC_REDUCE,
    .suffix = "",
    .revision = 1,
    .arch_suffix = "a",
    .maths = (1u << FT_MATH_TF32) | (1u << FT_MATH_BF16) | (1u << FT_MATH_FP16) | (1u << FT_MATH_3XTF32),
    .sources = k_tcr_sources,
    .wants_colv_slot = 1,
    .kernel = "ft_gemm_tc",
    .reduces = 1,
    .red_kinds = (1u << FT_RED_ROWSUM) | (1u << FT_RED_ROWMEAN) | (1u << FT_RED_ROWMAX) | (1u << FT_RED_ROWMIN) |
                 (1u << FT_RED_LOGSUMEXP),
    .keys = ft__tc_keys,
    .opt_keys = ft__tc_opt_keys,
    .variant_name = tcr_name,
    .valid = tcr_valid,
    .applicable = tcr_applicable,
    .enumerate = ft__tc_enumerate_reduce,
    .reg_cap = tcr_reg_cap,
    .geometry = tcr_geometry,
    .defines = tcr_defines,
    .partial_sum = ft__tc_partial_sum,
    .stream_k = tcr_stream_k,
    .reduce_kernel = tcr_reduce_kernel,
    .alignment = tcr_alignment,
    .kernel_args = tcr_kernel_args,
    .reduce_args = tcr_reduce_args,
};
