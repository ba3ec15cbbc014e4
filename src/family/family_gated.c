/* Family gated_pass: a gated pair's safe strategy (E with x2; strategy "cublas+epilogue";
 * kernels_src/gated_pass.cu, names "gate_..."). cuBLAS's GEMM of the interleaved [2n, k] weight
 * (src/family/gated.h; in fp8 cuBLASLt's FP8 GEMM of the codes, scales 1, bf16 product) writes
 * [m, 2n] into the plan's workspace; the pass reads each output's x and x2
 * there (the same position in two neighbouring groups of 8 columns), applies E once and writes y
 * [m, n]. Its parameters are the epilogue pass's block, vec and ept. GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family.h"
#include "gated.h"
#include "kernel_abi.h"

/* Bytes of the GEMM's product in the workspace and of y: the output's element (bf16 in fp8). */
static size_t elem_of(const ft_variant *v) { return ft_math_out_dtype((ft_math)v->math) == FT_DTYPE_F32 ? 4 : 2; }

static int gate_valid(const ft_variant *v, char *why, size_t whylen) {
  if (v->pass.block < 32 || v->pass.block > 1024 || v->pass.block % 32 != 0)
    FT_WHY("block %d: must be a multiple of 32 in 32..1024", v->pass.block);
  /* A vector lies inside one group of 8 columns, which holds it whole. */
  if (v->vec != 1 && v->vec != 2 && v->vec != 4 && (v->vec != 8 || elem_of(v) != 2))
    FT_WHY("vec %d: must be 1, 2 or 4 (8 with 16-bit elements)", v->vec);
  if (v->pass.ept < v->vec || v->pass.ept > 64 || v->pass.ept % v->vec != 0)
    FT_WHY("ept %d: must be a multiple of vec in vec..64", v->pass.ept);
  if (v->pass.lt || v->pass.lt_act) FT_WHY("a gated pass runs after cuBLAS's GEMM only (lt 0, lt_act 0)");
  if (v->bm || v->bn || v->bk || v->stages || v->split_k || v->swizzle) FT_WHY("gated pass variant with GEMM fields");
  return 1;
}

static int gate_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                           char *why, size_t whylen) {
  (void)m, (void)k;
  if (v->pass.block > lim->max_threads_per_block) FT_WHY("block %d > device limit %d", v->pass.block, lim->max_threads_per_block);
  if (n % FT_GATED_GROUP) FT_WHY("n %lld: a gated pair needs n a multiple of %d", (long long)n, FT_GATED_GROUP);
  if (v->math == FT_MATH_FP8 && lim->cc_major * 10 + lim->cc_minor < 89)
    FT_WHY("fp8: cuBLASLt's FP8 GEMM needs sm_89 or newer, not sm_%d%d", lim->cc_major, lim->cc_minor);
  if ((int64_t)m * 2 * n > FT_MAX_ELEMS) FT_WHY("the [m, 2n] product of %lldx%lld exceeds the kernels' index range", (long long)m, (long long)n);
  return 1;
}

static ft_status gate_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                                ft_space_sink *sink, ft_err *err) {
  const ft_epilogue *ep = ft_space_epilogue(sink);
  if (!ep || !ft_ep_uses_x2(ep)) return FT_OK;
  static const int blocks[] = {256, 128, 512};
  const int wide = ft_math_out_dtype(math) == FT_DTYPE_F32 ? 4 : 8; /* 16-byte accesses */
  /* The default space keeps the widest vector (as the epilogue pass's does); the full one all. */
  const int narrowest = ft_space_full(sink) ? 1 : wide;
  const int max_ept = ft_ep_has_matrix(ep) ? 8 : 16; /* a matrix: one more load in flight per element */
  ft_variant v = {0};
  v.kind = FT_VK_EPILOGUE, v.family = FT_FAMILY_GATED_PASS, v.math = (int)math;
  for (size_t b = 0; b < 3; b++)
    for (int vec = wide; vec >= narrowest; vec /= 2)
      for (int ept = vec; ept <= (max_ept > vec ? max_ept : vec); ept *= 2) {
        v.pass.block = blocks[b], v.vec = vec, v.pass.ept = ept;
        if (!ft_variant_applicable(&v, m, n, k, lim, NULL, 0)) continue;
        const double cost = (wide / vec) * 10.0 + (ept == 8 ? 0 : 1) + 0.5 * (double)b;
        FT_TRY(ft_space_push(sink, &v, cost, err));
      }
  return FT_OK;
}

/* m * n outputs, ept per thread; the workspace holds the GEMM's [m, 2n]. */
static void gate_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  (void)k;
  if (v->pass.block <= 0 || v->pass.ept <= 0) return;
  g->block[0] = (unsigned)v->pass.block;
  const int64_t per_block = (int64_t)v->pass.block * v->pass.ept;
  g->grid[0] = (unsigned)((m * n + per_block - 1) / per_block);
  g->workspace_bytes = (size_t)m * 2 * (size_t)n * elem_of(v);
  g->gated = 1;
}

static int gate_reg_cap(const ft_variant *v) {
  const int cap = 65536 / (v->pass.block > 0 ? v->pass.block : 1) / 8 * 8;
  return cap > 255 ? 255 : cap;
}

static void gate_defines(const ft_variant *v, ft_strbuf *b) {
  ft_sb_printf(b, "#define FT_BLOCK %d\n#define FT_VEC %d\n#define FT_EPT %d\n", v->pass.block, v->vec, v->pass.ept);
}

static const char *gate_reduce_kernel(const ft_variant *v) {
  (void)v;
  return NULL;
}

/* cuBLAS reads x and the weight (fp8: cuBLASLt's FP8 GEMM, 16-byte aligned operands); the pass
 * writes y vec elements at a time. */
static void gate_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  (void)m, (void)n, (void)k;
  need[0] = need[1] = v->math == FT_MATH_FP8 ? 16 : elem_of(v);
  need[2] = elem_of(v) * (size_t)(v->vec > 0 ? v->vec : 1);
}

/* ft_gated_pass(G, Y, M, N, ep): G the workspace's [M, 2N] product. */
static ft_status gate_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  (void)v;
  if (!io->ws) return ft__fail(err, FT_ERR_INTERNAL, "gated pass: no workspace for the GEMM's product");
  FT_TRY(ft_arg_push(st, &io->ws, sizeof io->ws, err));
  FT_TRY(ft_arg_push(st, &io->y, sizeof io->y, err));
  FT_TRY(ft_arg_push(st, &io->m, sizeof io->m, err));
  FT_TRY(ft_arg_push(st, &io->n, sizeof io->n, err));
  return ft_arg_push(st, io->ep, sizeof(ft_ep_args_dev), err);
}

static int gate_pair(const ft_variant *v) {
  (void)v;
  return 1;
}

/* "gate_b256_v8_e8_bf16". */
static int gate_name(const ft_variant *v, char *buf, size_t len) {
  return snprintf(buf, len, "gate_b%d_v%d_e%d%s%s", v->pass.block, v->vec, v->pass.ept, v->math ? "_" : "",
                  v->math ? ft_math_name((ft_math)v->math) : "");
}

static const ft_json_key k_gate_keys[] = {{"layout", offsetof(ft_variant, family)},
                                          {"block", offsetof(ft_variant, pass.block)},
                                          {"vec", offsetof(ft_variant, vec)},
                                          {"ept", offsetof(ft_variant, pass.ept)},
                                          {NULL, 0}};
static const ft_json_key k_gate_opt_keys[] = {{"math", offsetof(ft_variant, math)}, {NULL, 0}};

static const char *const k_gate_sources[] = {"kernels_src/gated_pass.cu", NULL};

const ft_family ft_family_gated_pass = {
    .name = "gated_pass",
    .kind = FT_VK_EPILOGUE,
    .params_offset = offsetof(ft_variant, pass),
    .params_size = sizeof(ft_pass_params),
    .id = FT_FAMILY_GATED_PASS,
    .suffix = "",
    .revision = 1,
    .arch_suffix = "",
    .maths = (1u << FT_MATH_FP32) | (1u << FT_MATH_TF32) | (1u << FT_MATH_BF16) | (1u << FT_MATH_FP16) |
             (1u << FT_MATH_3XTF32) | (1u << FT_MATH_FP8),
    .sources = k_gate_sources,
    .kernel = "ft_gated_pass",
    .gemm_before = ft_family_after_cublas,
    .pair = gate_pair,
    .keys = k_gate_keys,
    .opt_keys = k_gate_opt_keys,
    .variant_name = gate_name,
    .valid = gate_valid,
    .applicable = gate_applicable,
    .enumerate = gate_enumerate,
    .reg_cap = gate_reg_cap,
    .geometry = gate_geometry,
    .defines = gate_defines,
    .reduce_kernel = gate_reduce_kernel,
    .alignment = gate_alignment,
    .kernel_args = gate_kernel_args,
    .reduce_args = NULL,
};
