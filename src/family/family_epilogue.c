/* Family epilogue_pass: the standalone elementwise pass Y = E(Y) that runs after cuBLAS's GEMM
 * (strategy "cublas+epilogue"; kernels_src/epilogue_pass.cu, names "epi_..."), or, where E adds
 * a bias to x as nn.Linear does, after cuBLASLt's GEMM with that bias folded in (its BIAS
 * epilogue: the GEMM PyTorch eager runs), the pass applying the rest (`lt`, "_lt"): never slower
 * than eager by more than eager's own GEMM; where E adds a residual matrix r to x, after
 * cuBLASLt's GEMM adding it as its C (addmm's form, `lt_c`, "_ltc"). In fp8 the GEMM is cuBLASLt's FP8 GEMM of the e4m3
 * codes (scales 1, bf16 y) and the pass applies all of E, the scales included. GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family.h"
#include "kernel_abi.h"

/* After cuBLASLt's GEMM (with a bias, an activation, a residual as its C), not cuBLAS's. */
static int after_lt(const ft_variant *v) { return v->pass.lt || v->pass.lt_act || v->pass.lt_c; }

/* cuBLASLt's GEMM with its bias, activation or residual (lt, lt_act, lt_c), else cuBLAS's. */
static ft_gemm_before epi_gemm_before(const ft_variant *v, ft_lt_prefix *lt) {
  *lt = (ft_lt_prefix){v->pass.lt - 1, (ft_ep_lt_act)v->pass.lt_act, v->pass.lt_c - 1};
  return after_lt(v) ? FT_GEMM_CUBLASLT : FT_GEMM_CUBLAS;
}

/* E less what cuBLASLt's GEMM applied: x + r (lt_c, with lt's bias: x + bias + r), an activation
 * of x (+ bias) (lt_act), x + bias (lt); E whole after cuBLAS's. */
static ft_status epi_pass_expr(const ft_variant *v, const ft_epilogue *ep, const char **expr, ft_err *err) {
  ft_lt_prefix lt;
  *expr = ep ? ft_ep_cuda(ep) : "x";
  if (epi_gemm_before(v, &lt) != FT_GEMM_CUBLASLT) return FT_OK;
  int mat = -1, slot = -1;
  if (lt.c_slot >= 0) {
    *expr = ep ? ft_ep_cuda_resid(ep, &mat, &slot) : NULL;
    if (!*expr || mat != lt.c_slot || slot != lt.bias_slot)
      return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: lt_c %d with lt %d, but the epilogue does not add matrix slot "
                      "%d to x%s", lt.c_slot + 1, lt.bias_slot + 1, lt.c_slot, lt.bias_slot >= 0 ? " + bias" : "");
  } else if (lt.act) {
    ft_ep_lt_act act = FT_EP_LT_NONE;
    *expr = ep ? ft_ep_cuda_lt_act(ep, &slot, &act) : NULL;
    if (!*expr || act != lt.act || slot != lt.bias_slot)
      return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: lt_act %d with lt %d, but the epilogue does not begin with that "
                      "activation of x%s", (int)lt.act, lt.bias_slot + 1, lt.bias_slot >= 0 ? " + bias" : "");
  } else {
    *expr = ep ? ft_ep_cuda_folded(ep, &slot) : NULL;
    if (!*expr || slot != lt.bias_slot)
      return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: lt %d, but the epilogue adds no bias of slot %d to x",
                      lt.bias_slot + 1, lt.bias_slot);
  }
  return FT_OK;
}

static int epi_valid(const ft_variant *v, char *why, size_t whylen) {
  if (v->pass.block < 32 || v->pass.block > 1024 || v->pass.block % 32 != 0)
    FT_WHY("block %d: must be a multiple of 32 in 32..1024", v->pass.block);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4) FT_WHY("vec %d: must be 1, 2 or 4", v->vec);
  if (v->pass.ept < v->vec || v->pass.ept > 64 || v->pass.ept % v->vec != 0)
    FT_WHY("ept %d: must be a multiple of vec in vec..64", v->pass.ept);
  if (v->bm || v->bn || v->bk || v->stages || v->split_k || v->swizzle || v->family)
    FT_WHY("epilogue variant with GEMM fields");
  if (v->pass.lt < 0 || v->pass.lt > FT_EP_SLOTS) FT_WHY("lt %d: must be 0 (cuBLAS) or 1 + a bias slot below %d", v->pass.lt, FT_EP_SLOTS);
  if (v->pass.lt_act < FT_EP_LT_NONE || v->pass.lt_act > FT_EP_LT_GELU_TANH)
    FT_WHY("lt_act %d: must be 0 (none), 1 (relu) or 2 (gelu_tanh)", v->pass.lt_act);
  if (v->pass.lt_c < 0 || v->pass.lt_c > FT_EP_SLOTS) FT_WHY("lt_c %d: must be 0 or 1 + a matrix slot below %d", v->pass.lt_c, FT_EP_SLOTS);
  if (v->pass.lt_c && v->pass.lt_act) FT_WHY("lt_c with lt_act: cuBLASLt's residual form applies no activation here");
  return 1;
}

/* Any m * n in every mode: a thread whose vector would cross the end of the matrix takes the
 * kernel's scalar path, and every vector start is a multiple of vec elements. */
static int epi_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                          char *why, size_t whylen) {
  (void)m;
  if (v->pass.block > lim->max_threads_per_block) FT_WHY("block %d > device limit %d", v->pass.block, lim->max_threads_per_block);
  /* cuBLASLt's FP8 GEMM scales after the sum; E's scales are per row and column: nothing folds. */
  if (v->math == FT_MATH_FP8 && after_lt(v)) FT_WHY("lt: not in fp8 (E's scales come before its bias)");
  if (v->math == FT_MATH_FP8 && lim->cc_major * 10 + lim->cc_minor < 89)
    FT_WHY("fp8: cuBLASLt's FP8 GEMM needs sm_89 or newer, not sm_%d%d", lim->cc_major, lim->cc_minor);
  /* cuBLASLt's bias GEMM: rows of whole 16-byte units, as its algorithms take them. */
  const int64_t elem = ft_math_dtype((ft_math)v->math) == FT_DTYPE_F32 ? 4 : 2;
  if (after_lt(v) && ((n * elem) % 16 || (k * elem) % 16))
    FT_WHY("lt: n %lld and k %lld must be multiples of %lld (cuBLASLt's rows of 16 bytes)", (long long)n, (long long)k,
           (long long)(16 / elem));
  return 1;
}

static ft_status epi_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                               ft_space_sink *sink, ft_err *err) {
  static const int blocks[] = {128, 256, 512};
  static const int vecs[] = {4, 2, 1};
  /* The default space keeps vec 4 (9 of 36): the fastest vec-4 pass is as fast as the fastest
   * of all (docs/BENCHMARKS.md, "Why the search space is what it is"), and each pass left out
   * costs a compilation and a measurement of the safe phase, which every search runs first. The
   * full space (exhaustive search) keeps them all. */
  const size_t nvec = ft_space_full(sink) ? 3 : 1;
  /* After cuBLAS's GEMM; after cuBLASLt's bias GEMM where E adds a bias to x; after cuBLASLt's
   * GEMM applying E's relu or gelu_tanh of x (or of x + bias); after cuBLASLt's GEMM adding E's
   * residual r to x (or to x + bias) as its C, addmm's form. When nothing of E is left after
   * cuBLASLt's, one variant of that form (no pass runs). */
  const ft_epilogue *ep = ft_space_epilogue(sink);
  struct { const char *rest; int slot, c_slot; ft_ep_lt_act act; } form[4] = {{"", -1, -1, FT_EP_LT_NONE}};
  if (ep) form[1].rest = ft_ep_cuda_folded(ep, &form[1].slot), form[1].act = FT_EP_LT_NONE, form[1].c_slot = -1;
  if (ep) form[2].rest = ft_ep_cuda_lt_act(ep, &form[2].slot, &form[2].act), form[2].c_slot = -1;
  if (ep) form[3].rest = ft_ep_cuda_resid(ep, &form[3].c_slot, &form[3].slot), form[3].act = FT_EP_LT_NONE;
  /* A matrix operand is one more load in flight per element: at 16 elements per thread, in the
   * registers full occupancy leaves, ptxas spilled (3xtf32, x + bias + r, sm_90a). */
  const int max_ept = ep && ft_ep_has_matrix(ep) ? 8 : 16;
  ft_variant v = {0};
  v.kind = FT_VK_EPILOGUE;
  v.math = (int)math;
  for (int f = 0; f < (math == FT_MATH_FP8 ? 1 : 4); f++) {
    if (!form[f].rest) continue;
    const int lt_only_gemm = f > 0 && strcmp(form[f].rest, "x") == 0;
    int pushed = 0;
    for (size_t i = 0; i < 3; i++)
      for (size_t j = 0; j < nvec; j++)
        for (int ept = vecs[j]; ept <= max_ept && !(lt_only_gemm && pushed); ept *= 2) {
          v.pass.block = blocks[i], v.vec = vecs[j], v.pass.ept = ept;
          v.pass.lt = form[f].slot + 1, v.pass.lt_act = (int)form[f].act, v.pass.lt_c = form[f].c_slot + 1;
          if (!ft_variant_applicable(&v, m, n, k, lim, NULL, 0)) continue;
          /* Wide accesses and 8 elements per thread are what elementwise kernels like; what
           * cuBLASLt's GEMM does saves the pass work. */
          const double cost = (5 - v.vec) * 10.0 + (ept == 8 ? 0 : ept == 4 || ept == 16 ? 1 : 2) +
                              (v.pass.block == 256 ? 0 : 0.5) - 0.25 * f;
          FT_TRY(ft_space_push(sink, &v, cost, err));
          pushed++;
        }
  }
  return FT_OK;
}

static void epi_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  (void)k;
  if (v->pass.block <= 0 || v->pass.ept <= 0) return;
  g->block[0] = (unsigned)v->pass.block;
  g->grid[0] = (unsigned)((m * n + (int64_t)v->pass.block * v->pass.ept - 1) / ((int64_t)v->pass.block * v->pass.ept));
}

/* __launch_bounds__(FT_BLOCK): one block's threads share the 64K registers. */
static int epi_reg_cap(const ft_variant *v) {
  const int cap = 65536 / (v->pass.block > 0 ? v->pass.block : 1) / 8 * 8;
  return cap > 255 ? 255 : cap;
}

/* The kernel knows what cuBLASLt's GEMM applied before it (these first: the source text, and so
 * every stored hash, as before the defines moved here from codegen). */
static void epi_defines(const ft_variant *v, ft_strbuf *b) {
  ft_lt_prefix lt;
  if (epi_gemm_before(v, &lt) == FT_GEMM_CUBLASLT) {
    if (lt.bias_slot >= 0) ft_sb_puts(b, "#define FT_PASS_AFTER_LT_BIAS 1\n");
    if (lt.act) ft_sb_printf(b, "#define FT_PASS_AFTER_LT_ACT %d\n", (int)lt.act);
    if (lt.c_slot >= 0) ft_sb_printf(b, "#define FT_PASS_AFTER_LT_C %d\n", lt.c_slot);
  }
  ft_sb_printf(b, "#define FT_BLOCK %d\n#define FT_VEC %d\n#define FT_EPT %d\n", v->pass.block, v->vec, v->pass.ept);
}

static const char *epi_reduce_kernel(const ft_variant *v) {
  (void)v;
  return NULL;
}

/* cuBLAS reads x and W; the pass reads and writes y with vec-element accesses (4 * vec bytes
 * in fp32 and tf32, 2 * vec bytes of bf16 or fp16, fp8's y included). */
static void epi_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  (void)m, (void)n, (void)k;
  const size_t elem = ft_math_out_dtype((ft_math)v->math) == FT_DTYPE_F32 ? sizeof(float) : 2;
  const int lt = after_lt(v) || v->math == FT_MATH_FP8; /* cuBLASLt: 16-byte aligned operands */
  need[0] = need[1] = lt ? 16 : elem;
  need[2] = (size_t)(v->vec > 0 ? v->vec : 1) * elem;
  if (lt && need[2] < 16) need[2] = 16;
}

/* ft_epilogue_pass(Y, M, N, ep) */
static ft_status epi_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  (void)v;
  FT_TRY(ft_arg_push(st, &io->y, sizeof io->y, err));
  FT_TRY(ft_arg_push(st, &io->m, sizeof io->m, err));
  FT_TRY(ft_arg_push(st, &io->n, sizeof io->n, err));
  return ft_arg_push(st, io->ep, sizeof(ft_ep_args_dev), err);
}

/* "epi_b256_v4_e8", "_lt" after cuBLASLt's bias GEMM ("_ltr" / "_ltg" after its relu / gelu_tanh, "_ltbr" /
 * "_ltbg" with the bias; "_ltc" / "_ltbc" after its GEMM adding a residual), with "_bf16" (the mode)
 * outside fp32. */
static int epi_name(const ft_variant *v, char *buf, size_t len) {
  static const char *const acts[] = {"", "r", "g"};
  const char *act = v->pass.lt_c ? "c" : v->pass.lt_act >= 0 && v->pass.lt_act <= 2 ? acts[v->pass.lt_act] : "?";
  const char *lt = !after_lt(v) ? "" : (v->pass.lt_act || v->pass.lt_c) && v->pass.lt ? "_ltb" : "_lt";
  return snprintf(buf, len, "epi_b%d_v%d_e%d%s%s%s%s", v->pass.block, v->vec, v->pass.ept, lt, act, v->math ? "_" : "",
                  v->math ? ft_math_name((ft_math)v->math) : "");
}

static const ft_json_key k_epi_keys[] = {{"block", offsetof(ft_variant, pass.block)},
                                         {"vec", offsetof(ft_variant, vec)},
                                         {"ept", offsetof(ft_variant, pass.ept)},
                                         {NULL, 0}};
static const ft_json_key k_epi_opt_keys[] = {
    {"math", offsetof(ft_variant, math)}, {"lt", offsetof(ft_variant, pass.lt)},
    {"lt_act", offsetof(ft_variant, pass.lt_act)}, {"lt_c", offsetof(ft_variant, pass.lt_c)}, {NULL, 0}};

static const char *const k_epi_sources[] = {"kernels_src/epilogue_pass.cu", NULL};

const ft_family ft_family_epilogue_pass = {
    .name = "epilogue_pass",
    .kind = FT_VK_EPILOGUE,
    .params_offset = offsetof(ft_variant, pass),
    .params_size = sizeof(ft_pass_params),
    .id = FT_FAMILY_EPILOGUE_PASS,
    .suffix = "",
    .revision = 1,
    .arch_suffix = "",
    .maths = (1u << FT_MATH_FP32) | (1u << FT_MATH_TF32) | (1u << FT_MATH_BF16) | (1u << FT_MATH_FP16) |
             (1u << FT_MATH_3XTF32) | (1u << FT_MATH_FP8),
    .sources = k_epi_sources,
    .kernel = "ft_epilogue_pass",
    .gemm_before = epi_gemm_before,
    .pass_expr = epi_pass_expr,
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
