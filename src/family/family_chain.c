/* Family eager_chain: E run as PyTorch eager runs it, the safe plan no fused kernel or pass can
 * lose to without the tune seeing it (strategy "cublas+epilogue"; names "eager_..."). The GEMM of
 * the mode (cuBLASLt's with its BIAS epilogue where E's eager plan folds `x + bias` into it, as
 * nn.Linear's addmm does), then one kernel per step of the plan (src/epilogue/epilogue_eager.c):
 * an elementwise step (kernels_src/eager_step.cu) or a reduction a block per row (batchnorm's per
 * strip of 32 columns; kernels_src/reduce_pass.cu), each rounding to the element type, all steps
 * one program (ft_codegen_chain) and run by src/gpu/launch.c's ft_chain_enqueue, as the eager baseline runs
 * them. A variant is one problem's plan: its step count and fold, which codegen and the launch
 * check against E, and the vector its reductions read rows in. A gated pair (E with x2) is not
 * served: its GEMM writes the interleaved [m, 2n] product, which the steps do not read (the gated
 * pass is its safe strategy). GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "family.h"
#include "kernel_abi.h"

static ft_gemm_before chain_gemm_before(const ft_variant *v, ft_lt_prefix *lt) {
  *lt = (ft_lt_prefix){v->chain.lt - 1, FT_EP_LT_NONE, -1};
  return v->chain.lt ? FT_GEMM_CUBLASLT : FT_GEMM_CUBLAS;
}

/* E's eager plan when the family runs it, its bias folded into cuBLASLt's GEMM or not (fold): an E
 * that uses x2 has no chain here, nor one whose reduction no kernel serves, nor one with nothing
 * after the GEMM (the epilogue pass's candidate after cuBLAS or cuBLASLt's bias GEMM alone is that
 * chain). */
static ft_status plan_of(const ft_epilogue *ep, int fold, ft_ep_eager *plan, ft_err *err) {
  if (ft_ep_uses_x2(ep))
    return ft__fail(err, FT_ERR_UNSUPPORTED, "the eager chain does not compute a gated pair (E with x2): its GEMM "
                    "writes the interleaved [m, 2n] product; the gated pass (gate_...) is its safe strategy");
  FT_TRY(ft_ep_check_kernels(ep, err));
  FT_TRY(ft_ep_eager_plan_fold(ep, fold, plan, err));
  if (plan->nsteps < 1)
    return ft__fail(err, FT_ERR_UNSUPPORTED, "the eager chain of '%s' is its GEMM alone, the epilogue pass's candidate "
                    "without a pass", ft_ep_canonical(ep));
  return FT_OK;
}

static ft_status chain_eager_plan(const ft_variant *v, const ft_epilogue *ep, ft_ep_eager *plan, ft_err *err) {
  FT_TRY(plan_of(ep, v->chain.lt > 0, plan, err)); /* lt 0: cuBLAS, then every step (the bias one) */
  if (plan->nsteps != v->chain.steps || plan->gemm_bias_slot + 1 != v->chain.lt)
    return ft__fail(err, FT_ERR_INVALID_ARG, "the eager chain of %d step(s)%s is not the plan of '%s': %d step(s)%s",
                    v->chain.steps, v->chain.lt ? " after cuBLASLt's bias GEMM" : "", ft_ep_canonical(ep), plan->nsteps,
                    plan->gemm_bias_slot >= 0 ? " after cuBLASLt's bias GEMM" : "");
  return FT_OK;
}

static int chain_valid(const ft_variant *v, char *why, size_t whylen) {
  if (v->chain.steps < 1 || v->chain.steps > FT_EP_MAX_STEPS) FT_WHY("steps %d: must be in 1..%d", v->chain.steps, FT_EP_MAX_STEPS);
  if (v->chain.lt < 0 || v->chain.lt > FT_EP_SLOTS) FT_WHY("lt %d: must be 0 (cuBLAS) or 1 + a bias slot below %d", v->chain.lt, FT_EP_SLOTS);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4 && v->vec != 8) FT_WHY("vec %d: must be 1, 2, 4 or 8", v->vec);
  if (v->vec == 8 && ft_math_out_dtype((ft_math)v->math) == FT_DTYPE_F32) FT_WHY("vec 8: 16 bytes are 4 fp32 elements");
  if (v->chain.rblock != 0 && v->chain.rblock != 1024) FT_WHY("rblock %d: must be 0 (FT_AUX_BLOCK) or 1024", v->chain.rblock);
  if (v->bm || v->bn || v->bk || v->stages || v->split_k || v->swizzle) FT_WHY("eager chain variant with GEMM fields");
  return 1;
}

static int chain_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                            char *why, size_t whylen) {
  (void)m;
  if (n % v->vec) FT_WHY("n %lld: not a multiple of the chain's vector of %d", (long long)n, v->vec);
  if (v->math == FT_MATH_FP8 && v->chain.lt) FT_WHY("lt: not in fp8 (E's scales come before its bias)");
  if (v->math == FT_MATH_FP8 && lim->cc_major * 10 + lim->cc_minor < 89)
    FT_WHY("fp8: cuBLASLt's FP8 GEMM needs sm_89 or newer, not sm_%d%d", lim->cc_major, lim->cc_minor);
  /* cuBLASLt's bias GEMM: rows of whole 16-byte units, as its algorithms take them. */
  const int64_t elem = ft_math_dtype((ft_math)v->math) == FT_DTYPE_F32 ? 4 : 2;
  if (v->chain.lt && ((n * elem) % 16 || (k * elem) % 16))
    FT_WHY("lt: n %lld and k %lld must be multiples of %lld (cuBLASLt's rows of 16 bytes)", (long long)n, (long long)k,
           (long long)(16 / elem));
  return 1;
}

/* The variant of plan (E's, folded or not) for the shape; 0 where it does not apply. */
static int plan_variant(const ft_ep_eager *plan, int64_t m, int64_t n, int64_t k, ft_math math,
                        const ft_device_limits *lim, ft_variant *v) {
  memset(v, 0, sizeof *v);
  v->kind = FT_VK_EPILOGUE, v->family = FT_FAMILY_EAGER_CHAIN, v->math = (int)math;
  ft_chain_reads(math, m, n, &v->vec, &v->chain.rblock); /* as the eager baseline's (baseline.c) */
  v->chain.steps = plan->nsteps, v->chain.lt = plan->gemm_bias_slot + 1;
  return ft_variant_applicable(v, m, n, k, lim, NULL, 0);
}

/* One variant, E's plan, where E has one the family runs: its bias in cuBLASLt's bias GEMM; where
 * that GEMM does not take the shape and E reduces, the bias a step after cuBLAS (torch's addmm
 * falls back the same way; an elementwise E's one pass after cuBLAS beats such a chain). Its cost
 * orders it after the passes (every safe candidate is measured; this one most likely loses to one
 * pass). */
static ft_status chain_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                                 ft_space_sink *sink, ft_err *err) {
  const ft_epilogue *ep = ft_space_epilogue(sink);
  if (!ep) return FT_OK;
  ft_ep_eager *plan = malloc(sizeof *plan);
  if (!plan) return ft__fail(err, FT_ERR_NOMEM, "space: out of memory");
  ft_err none;
  ft_status s = FT_OK;
  ft_variant v = {0}; /* lt 0 where E has no plan: nothing to retry */
  int ok = plan_of(ep, 1, plan, &none) == FT_OK && plan_variant(plan, m, n, k, math, lim, &v);
  if (!ok && v.chain.lt && ft_ep_reduction(ep, NULL) != FT_RED_NONE)
    ok = plan_of(ep, 0, plan, &none) == FT_OK && plan_variant(plan, m, n, k, math, lim, &v);
  if (ok) s = ft_space_push(sink, &v, 100.0 + plan->nsteps, err);
  free(plan);
  return s;
}

/* The launch runs the chain's steps (ft_chain_enqueue): nothing here is asked of a geometry. */
static void chain_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  (void)v, (void)m, (void)n, (void)k, (void)g;
}

/* __launch_bounds__(FT_AUX_BLOCK) on every step but those of 1024 threads (batchnorm's, and the
 * row reductions' with rblock): ptxas holds those to at most 64 registers itself, choosing fewer
 * (test_chain.c compiles such programs, which a spill fails); the variant does not say which steps
 * it has. */
static int chain_reg_cap(const ft_variant *v) {
  (void)v;
  return 65536 / FT_AUX_BLOCK > 255 ? 255 : 65536 / FT_AUX_BLOCK;
}

static void chain_defines(const ft_variant *v, ft_strbuf *b) { (void)v, (void)b; }

static const char *chain_reduce_kernel(const ft_variant *v) {
  (void)v;
  return NULL;
}

/* cuBLAS reads x and W (cuBLASLt, in fp8 or with the bias: 16-byte aligned); the last step writes
 * y in 16-byte vectors (an elementwise step's four elements, a reduction's vec). */
static void chain_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  (void)m, (void)n, (void)k;
  const size_t elem = ft_math_out_dtype((ft_math)v->math) == FT_DTYPE_F32 ? sizeof(float) : 2;
  need[0] = need[1] = v->chain.lt || v->math == FT_MATH_FP8 ? 16 : elem;
  need[2] = 16;
}

static ft_status chain_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  (void)v, (void)io, (void)st;
  return ft__fail(err, FT_ERR_INTERNAL, "launch: an eager chain's steps take their arguments from the chain");
}

/* "eager_s3_v4", "_r1024" with 1024 threads a row reduction, "_lt" after cuBLASLt's bias GEMM,
 * "_bf16" (the mode) outside fp32. */
static int chain_name(const ft_variant *v, char *buf, size_t len) {
  char r[16] = "";
  if (v->chain.rblock) snprintf(r, sizeof r, "_r%d", v->chain.rblock);
  return snprintf(buf, len, "eager_s%d_v%d%s%s%s%s", v->chain.steps, v->vec, r, v->chain.lt ? "_lt" : "",
                  v->math ? "_" : "", v->math ? ft_math_name((ft_math)v->math) : "");
}

static const ft_json_key k_chain_keys[] = {{"layout", offsetof(ft_variant, family)},
                                           {"steps", offsetof(ft_variant, chain.steps)},
                                           {"vec", offsetof(ft_variant, vec)},
                                           {NULL, 0}};
static const ft_json_key k_chain_opt_keys[] = {
    {"math", offsetof(ft_variant, math)}, {"lt", offsetof(ft_variant, chain.lt)},
    {"rblock", offsetof(ft_variant, chain.rblock)}, {NULL, 0}};

static const char *const k_chain_sources[] = {"kernels_src/eager_step.cu", "kernels_src/reduce_pass.cu", NULL};

const ft_family ft_family_eager_chain = {
    .name = "eager_chain",
    .kind = FT_VK_EPILOGUE,
    .params_offset = offsetof(ft_variant, chain),
    .params_size = sizeof(ft_chain_params),
    .id = FT_FAMILY_EAGER_CHAIN,
    .suffix = "",
    .revision = 1,
    .arch_suffix = "",
    .maths = (1u << FT_MATH_FP32) | (1u << FT_MATH_TF32) | (1u << FT_MATH_BF16) | (1u << FT_MATH_FP16) |
             (1u << FT_MATH_3XTF32) | (1u << FT_MATH_FP8),
    .sources = k_chain_sources,
    .kernel = "ft_chain_0",
    .gemm_before = chain_gemm_before,
    .any_epilogue = 1,
    .eager_plan = chain_eager_plan,
    .keys = k_chain_keys,
    .opt_keys = k_chain_opt_keys,
    .variant_name = chain_name,
    .valid = chain_valid,
    .applicable = chain_applicable,
    .enumerate = chain_enumerate,
    .reg_cap = chain_reg_cap,
    .geometry = chain_geometry,
    .defines = chain_defines,
    .reduce_kernel = chain_reduce_kernel,
    .alignment = chain_alignment,
    .kernel_args = chain_kernel_args,
    .reduce_args = NULL,
};
