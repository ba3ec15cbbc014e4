/* Family epilogue_pass: the standalone elementwise pass Y = E(Y) that runs after cuBLAS's GEMM
 * (strategy "cublas+epilogue"; kernels_src/epilogue_pass.cu, names "epi_..."), or, where E adds
 * a bias to x as nn.Linear does, after cuBLASLt's GEMM with that bias folded in (its BIAS
 * epilogue: the GEMM PyTorch eager runs), the pass applying the rest (`lt`, "_lt"): never slower
 * than eager by more than eager's own GEMM. GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family.h"
#include "kernel_abi.h"

static int epi_valid(const ft_variant *v, char *why, size_t whylen) {
  if (v->block < 32 || v->block > 1024 || v->block % 32 != 0)
    FT_WHY("block %d: must be a multiple of 32 in 32..1024", v->block);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4) FT_WHY("vec %d: must be 1, 2 or 4", v->vec);
  if (v->ept < v->vec || v->ept > 64 || v->ept % v->vec != 0)
    FT_WHY("ept %d: must be a multiple of vec in vec..64", v->ept);
  if (v->bm || v->bn || v->bk || v->tm || v->tn || v->stages || v->split_k || v->swizzle || v->layout ||
      v->streamk || v->cluster || v->consumers || v->grid)
    FT_WHY("epilogue variant with GEMM fields");
  if (v->lt < 0 || v->lt > FT_EP_SLOTS) FT_WHY("lt %d: must be 0 (cuBLAS) or 1 + a bias slot below %d", v->lt, FT_EP_SLOTS);
  return 1;
}

/* Any m * n in every mode: a thread whose vector would cross the end of the matrix takes the
 * kernel's scalar path, and every vector start is a multiple of vec elements. */
static int epi_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                          char *why, size_t whylen) {
  (void)m;
  if (v->block > lim->max_threads_per_block) FT_WHY("block %d > device limit %d", v->block, lim->max_threads_per_block);
  /* cuBLASLt's bias GEMM: rows of whole 16-byte units, as its algorithms take them. */
  const int64_t elem = ft_math_dtype((ft_math)v->math) == FT_DTYPE_F32 ? 4 : 2;
  if (v->lt && ((n * elem) % 16 || (k * elem) % 16))
    FT_WHY("lt: n %lld and k %lld must be multiples of %lld (cuBLASLt's rows of 16 bytes)", (long long)n, (long long)k,
           (long long)(16 / elem));
  return 1;
}

static ft_status epi_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                               ft_space_sink *sink, ft_err *err) {
  static const int blocks[] = {128, 256, 512};
  static const int vecs[] = {4, 2, 1};
  /* The default space keeps vec 4 (9 of 36): in the exhaustive fp32 tunes of five shapes (H200,
   * 2026-12-01) the fastest vec-4 pass was within 0.1 % of the fastest pass (the 36 spanned 1-2 %),
   * and each pass left out costs a compilation and a measurement of the safe phase, which every
   * search runs first. The full space (exhaustive search) keeps them all. */
  const size_t nvec = ft_space_full(sink) ? 3 : 1;
  /* After cuBLASLt's bias GEMM as well, where E adds a bias to x; when nothing of E is left, one
   * variant (no pass runs). */
  int slot = -1;
  const ft_epilogue *ep = ft_space_epilogue(sink);
  const char *rest = ep ? ft_ep_cuda_folded(ep, &slot) : NULL;
  const int lt_only_gemm = rest && strcmp(rest, "x") == 0;
  /* A matrix operand is one more load in flight per element: at 16 elements per thread, in the
   * registers full occupancy leaves, ptxas spilled (3xtf32, x + bias + r, sm_90a). */
  const int max_ept = ep && ft_ep_has_matrix(ep) ? 8 : 16;
  ft_variant v = {0};
  v.kind = FT_VK_EPILOGUE;
  v.math = (int)math;
  for (int lt = 0; lt <= (rest ? 1 : 0); lt++)
    for (size_t i = 0; i < 3; i++)
      for (size_t j = 0; j < nvec; j++)
        for (int ept = vecs[j]; ept <= max_ept; ept *= 2) {
          v.block = blocks[i], v.vec = vecs[j], v.ept = ept, v.lt = lt ? slot + 1 : 0;
          if (!ft_variant_applicable(&v, m, n, k, lim, NULL, 0)) continue;
          /* Wide accesses and 8 elements per thread are what elementwise kernels like; the
           * folded bias saves the pass a vector read. */
          const double cost = (5 - v.vec) * 10.0 + (ept == 8 ? 0 : ept == 4 || ept == 16 ? 1 : 2) +
                              (v.block == 256 ? 0 : 0.5) - (lt ? 0.25 : 0.0);
          FT_TRY(ft_space_push(sink, &v, cost, err));
          if (lt && lt_only_gemm) return FT_OK;
        }
  return FT_OK;
}

static void epi_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  (void)k;
  if (v->block <= 0 || v->ept <= 0) return;
  g->block[0] = (unsigned)v->block;
  g->grid[0] = (unsigned)((m * n + (int64_t)v->block * v->ept - 1) / ((int64_t)v->block * v->ept));
}

/* __launch_bounds__(FT_BLOCK): one block's threads share the 64K registers. */
static int epi_reg_cap(const ft_variant *v) {
  const int cap = 65536 / (v->block > 0 ? v->block : 1) / 8 * 8;
  return cap > 255 ? 255 : cap;
}

static void epi_defines(const ft_variant *v, ft_strbuf *b) {
  ft_sb_printf(b, "#define FT_BLOCK %d\n#define FT_VEC %d\n#define FT_EPT %d\n", v->block, v->vec, v->ept);
}

static const char *epi_reduce_kernel(const ft_variant *v) {
  (void)v;
  return NULL;
}

/* cuBLAS reads x and W; the pass reads and writes y with vec-element accesses (4 * vec bytes
 * in fp32 and tf32, 2 * vec bytes of bf16 or fp16). */
static void epi_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  (void)m, (void)n, (void)k;
  const size_t elem = ft_math_dtype((ft_math)v->math) == FT_DTYPE_F32 ? sizeof(float) : 2;
  need[0] = need[1] = v->lt ? 16 : elem; /* cuBLASLt: 16-byte aligned operands */
  need[2] = (size_t)(v->vec > 0 ? v->vec : 1) * elem;
  if (v->lt && need[2] < 16) need[2] = 16;
}

/* ft_epilogue_pass(Y, M, N, ep) */
static ft_status epi_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  (void)v;
  FT_TRY(ft_arg_push(st, &io->y, sizeof io->y, err));
  FT_TRY(ft_arg_push(st, &io->m, sizeof io->m, err));
  FT_TRY(ft_arg_push(st, &io->n, sizeof io->n, err));
  return ft_arg_push(st, io->ep, sizeof(ft_ep_args_dev), err);
}

/* "epi_b256_v4_e8", "_lt" after cuBLASLt's bias GEMM, with "_bf16" (the mode) outside fp32. */
static int epi_name(const ft_variant *v, char *buf, size_t len) {
  return snprintf(buf, len, "epi_b%d_v%d_e%d%s%s%s", v->block, v->vec, v->ept, v->lt ? "_lt" : "", v->math ? "_" : "",
                  v->math ? ft_math_name((ft_math)v->math) : "");
}

static const ft_json_key k_epi_keys[] = {{"block", offsetof(ft_variant, block)},
                                         {"vec", offsetof(ft_variant, vec)},
                                         {"ept", offsetof(ft_variant, ept)},
                                         {NULL, 0}};
static const ft_json_key k_epi_opt_keys[] = {
    {"math", offsetof(ft_variant, math)}, {"lt", offsetof(ft_variant, lt)}, {NULL, 0}};

static const char *const k_epi_sources[] = {"kernels_src/epilogue_pass.cu", NULL};

const ft_family ft_family_epilogue_pass = {
    .name = "epilogue_pass",
    .kind = FT_VK_EPILOGUE,
    .layout = 0,
    .suffix = "",
    .revision = 1,
    .arch_suffix = "",
    .maths = (1u << FT_MATH_FP32) | (1u << FT_MATH_TF32) | (1u << FT_MATH_BF16) | (1u << FT_MATH_FP16) |
             (1u << FT_MATH_3XTF32),
    .sources = k_epi_sources,
    .kernel = "ft_epilogue_pass",
    .after_cublas = 1,
    .keys = k_epi_keys,
    .opt_keys = k_epi_opt_keys,
    .variant_name = epi_name,
    .valid = epi_valid,
    .applicable = epi_applicable,
    .enumerate = epi_enumerate,
    .reg_cap = epi_reg_cap,
    .geometry = epi_geometry,
    .defines = epi_defines,
    .reduce_kernel = epi_reduce_kernel,
    .alignment = epi_alignment,
    .kernel_args = epi_kernel_args,
    .reduce_args = NULL,
};
