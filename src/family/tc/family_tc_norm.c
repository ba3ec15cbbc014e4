/* Family tc_norm: groupnorm fused into the tensor-core GEMM where each group lies whole in the tile
 * (FT_FAMILY_TC_NORM, names "tcn_..._w<columns>"). Family tc's kernel and rules with the tile's
 * epilogue replaced (kernels_src/tc_norm.cuh): E's groupnorm argument on the accumulator, each
 * group's mean and variance from the registers, the rest of E on the normalized values, y stored
 * once; no workspace, no second kernel. A variant holds the group's width (normw, a constant of the
 * kernel) and G (normg): it applies where N = normw * normg and the tile holds whole groups. The
 * forms that store y otherwise (TMA stores, split-K, stream-K) and gated pairs do not apply.
 * GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family_tc.h"

extern const ft_family ft_family_tc;

/* v without its group: family tc's variant, which family tc's rules judge. */
static ft_variant tc_half(const ft_variant *v) {
  ft_variant t = *v;
  t.family = FT_FAMILY_TC, t.tc.normw = 0, t.tc.normg = 0;
  return t;
}

static int tcn_valid(const ft_variant *v, char *why, size_t whylen) {
  if (v->tc.tstore || v->split_k > 1 || v->tc.streamk || v->tc.staged || v->tc.late || v->tc.gated)
    FT_WHY("tc_norm: the tile normalizes and stores y itself: tstore, staged, late, split_k, streamk and gated do "
           "not apply");
  /* The tile is held from E's argument through its statistics to the stores: beyond 128 columns of
   * m64 blocks per consumer ptxas spilled (bf16, silu(groupnorm(x + bias, 512) * g + b): 40-96 B at
   * BN 192, 256 and ping-pong's two blocks of 128). */
  if ((v->tc.pingpong == 2 ? 2 : 1) * v->bn > 128)
    FT_WHY("tc_norm: %d m64 block(s) of bn %d: at most 128 columns of sums held per consumer",
           v->tc.pingpong == 2 ? 2 : 1, v->bn);
  if (split(v) && v->bn > 64) /* beside 3xtf32's second accumulator: 16 B spilled at BN 128 */
    FT_WHY("tc_norm: bn %d > 64 in 3xtf32 (its partial sums beside the held tile)", v->bn);
  if (v->tc.normg < 1 || !tc_norm_width_ok(v->tc.normw, v->bn))
    FT_WHY("tc_norm: a group of normw %d columns (2, 4 or a multiple of 8) must lie whole in bn %d, normg %d >= 1",
           v->tc.normw, v->bn, v->tc.normg);
  const ft_variant t = tc_half(v);
  return ft_family_tc.valid(&t, why, whylen);
}

static int tcn_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim, char *why,
                          size_t whylen) {
  if (m > 0x7fffffff || n > 0x7fffffff) FT_WHY("tc_norm: m %lld, n %lld: int sizes", (long long)m, (long long)n);
  if (n != (int64_t)v->tc.normw * v->tc.normg)
    FT_WHY("tc_norm: n %lld is not %d groups of %d columns (the variant's)", (long long)n, v->tc.normg, v->tc.normw);
  const ft_variant t = tc_half(v);
  return ft_family_tc.applicable(&t, m, n, k, lim, why, whylen);
}

static int tcn_reg_cap(const ft_variant *v) {
  const ft_variant t = tc_half(v);
  return ft_family_tc.reg_cap(&t);
}

/* Family tc's launch: no workspace (no split-K), no second kernel. */
static void tcn_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  const ft_variant t = tc_half(v);
  ft_family_tc.geometry(&t, m, n, k, g);
}

static void tcn_defines(const ft_variant *v, ft_strbuf *b) {
  const ft_variant t = tc_half(v);
  ft_sb_printf(b, "#define FT_TC_NORM_W %d\n", v->tc.normw);
  ft_family_tc.defines(&t, b);
}

static const char *tcn_reduce_kernel(const ft_variant *v) {
  (void)v;
  return NULL;
}

/* TMA reads x and W; the tile stores pairs of y (single elements at an odd N's edge). */
static void tcn_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  const ft_variant t = tc_half(v);
  ft_family_tc.alignment(&t, m, n, k, need);
}

/* ft_gemm_tc's arguments (no y map: no TMA stores). */
static ft_status tcn_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  const ft_variant t = tc_half(v);
  return ft_family_tc.kernel_args(&t, io, st, err);
}

/* "tcn_bm128_bn128_bk64_s4_c1_z8_p132_w32_bf16": family tc's name of the same parameters, "tcn",
 * the group's columns before the mode. */
static int tcn_name(const ft_variant *v, char *buf, size_t len) {
  const ft_variant t = tc_half(v);
  char tc[160];
  ft_family_tc.variant_name(&t, tc, sizeof tc);
  const char *mode = strrchr(tc, '_');
  const int head = mode ? (int)(mode - tc) : (int)strlen(tc);
  return snprintf(buf, len, "tcn%.*s_w%d%s", head - 2, tc + 2, v->tc.normw, mode ? mode : "");
}

static int tcn_stream_k(const ft_variant *v) {
  (void)v;
  return 0;
}

static const ft_json_key k_tcn_keys[] = {{"bn", offsetof(ft_variant, bn)},
                                         {"bk", offsetof(ft_variant, bk)},
                                         {"stages", offsetof(ft_variant, stages)},
                                         {"consumers", offsetof(ft_variant, tc.consumers)},
                                         {"cluster", offsetof(ft_variant, tc.cluster)},
                                         {"swizzle", offsetof(ft_variant, swizzle)},
                                         {"grid", offsetof(ft_variant, tc.grid)},
                                         {"normw", offsetof(ft_variant, tc.normw)},
                                         {"normg", offsetof(ft_variant, tc.normg)},
                                         {NULL, 0}};

const ft_family ft_family_tc_norm = {
    .name = "tc_norm",
    .kind = FT_VK_GEMM,
    .params_offset = offsetof(ft_variant, tc),
    .params_size = sizeof(ft_tc_params),
    .id = FT_FAMILY_TC_NORM,
    .suffix = "",
    .revision = 1,
    .arch_suffix = "a",
    .maths = (1u << FT_MATH_TF32) | (1u << FT_MATH_BF16) | (1u << FT_MATH_FP16) | (1u << FT_MATH_3XTF32),
    .sources = ft__tc_sources,
    .wants_colv_slot = 1,
    .kernel = "ft_gemm_tc",
    .reduces = 1,
    .red_kinds = 1u << FT_RED_GROUPNORM,
    .keys = k_tcn_keys,
    .opt_keys = ft__tc_opt_keys,
    .variant_name = tcn_name,
    .valid = tcn_valid,
    .applicable = tcn_applicable,
    .enumerate = ft__tc_enumerate_norm,
    .reg_cap = tcn_reg_cap,
    .geometry = tcn_geometry,
    .defines = tcn_defines,
    .partial_sum = ft__tc_partial_sum,
    .stream_k = tcn_stream_k,
    .reduce_kernel = tcn_reduce_kernel,
    .alignment = tcn_alignment,
    .kernel_args = tcn_kernel_args,
};
