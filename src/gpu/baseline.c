/* cuBLAS / cuBLASLt baselines and the eager-style chain of per-op kernels, in the problem's math
 * mode: the GEMM of that mode (tf32 = FAST_TF32 compute; bf16 / fp16 = 16-bit tensors, fp32
 * accumulate), step kernels that read and write the mode's element type. */
#include "baseline.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "compile.h"
#include "launch.h"
#include "fp8.h"
#include "gated.h"
#include "lt_gemm.h"

#define FT_LT_WORKSPACE (32u << 20)


struct ft_baselines {
  ft_gpu *g;
  ft_pdata *d;
  const ft_epilogue *ep;
  cublasLtHandle_t lt;
  void *lt_ws;
  ft_lt_gemm eager_gemm; /* GEMM + BIAS for the eager chain when bias folds into addmm */
  ft_lt_gemm fused_lt;   /* the cuBLASLt built-in epilogue strategy */
  float *lt_scales;      /* fp8 per-tensor scales on the device, for fused_lt */
  int has_lt_epilogue;
  char lt_name[64];
  ft_ep_eager plan;
  int has_eager; /* 0 when cuBLASLt has no GEMM+BIAS algorithm for this problem and the plan with
                  * the bias as a step has more steps than a plan holds */
  ft_chain chain;                     /* the plan's steps, as family eager_chain's plans run them */
  ft_loaded prog;                     /* their one program */
  cudaKernel_t chain_k[FT_EP_MAX_STEPS];
  void *tmp[FT_EP_BUF_X2 + 1]; /* tmp[0] = GEMM output, tmp[j] = step j output, tmp[FT_EP_BUF_X2] = x2's GEMM */
  void *w_pair[2];              /* a gated pair's W1 and W2 apart ([n, k] each), for the eager chain */
  char gemm_desc[32];        /* "SGEMM", "BF16 GEMM", ... */
  char gemm_alone_desc[96];
  char eager_desc[128];
};

ft_strategy ft_baseline_strategy(ft_baseline_kind k) {
  static const ft_strategy s[FT_BL_COUNT] = {FT_STRATEGY_EAGER, FT_STRATEGY_CUBLAS_GEMM, FT_STRATEGY_CUBLASLT};
  return k < FT_BL_COUNT ? s[k] : FT_STRATEGY_EAGER;
}

/* A cuBLASLt GEMM over d's operands in d's mode (src/gpu/lt_gemm.c). */
static ft_status lt_gemm_init(ft_baselines *b, ft_lt_gemm *l, cublasLtEpilogue_t epi, const void *bias, ft_err *err) {
  const ft_pdata *d = b->d;
  return ft_lt_gemm_init(l, b->lt, d->math, d->m, d->n, d->k, epi, bias, FT_LT_WORKSPACE, 0, err); /* cudaMalloc'd */
}

static ft_status lt_gemm_run(ft_baselines *b, ft_lt_gemm *l, void *Y, cudaStream_t stream, ft_err *err) {
  return ft_lt_gemm_run(l, b->lt, b->d->dX, b->d->dW, Y, NULL, NULL, b->lt_ws, stream, err);
}

/* The fp8 problem of form (a text without declarations; ft_fp8_epilogue's body) with row and col
 * scales (outer 1) or scalar ones (0), parsed; NULL when it does not parse. */
static ft_epilogue *fp8_form(const char *form, int outer) {
  char text[512];
  if (ft_fp8_epilogue(form, text, sizeof text) != FT_OK) return NULL;
  char *where = strstr(text, " where ");
  if (where) snprintf(where, sizeof text - (size_t)(where - text), " where %s", outer ? "row sx, col sw" : "scalar sx, scalar sw");
  ft_epilogue *f = NULL;
  return ft_ep_parse(text, &f, NULL) == FT_OK ? f : NULL;
}

/* Which cuBLASLt built-in epilogue computes exactly this expression, if any; name gets
 * "cuBLASLt RELU_BIAS" with the mode ("cuBLASLt BF16 RELU_BIAS") outside fp32. In fp8 the forms
 * scale x by sx and sw, both per tensor (*outer 0) or per row and column (*outer 1: cuBLASLt's
 * outer-vector scale mode). */
static int match_lt_epilogue(const ft_epilogue *ep, const char *mode, int fp8, cublasLtEpilogue_t *epi, int *bias_slot,
                             int *outer, char *name, size_t namelen) {
  static const struct {
    const char *text;
    cublasLtEpilogue_t epi;
    const char *name;
  } forms[] = {
      {"x + bias", CUBLASLT_EPILOGUE_BIAS, "BIAS"},
      {"relu(x + bias)", CUBLASLT_EPILOGUE_RELU_BIAS, "RELU_BIAS"},
      {"gelu_tanh(x + bias)", CUBLASLT_EPILOGUE_GELU_BIAS, "GELU_BIAS"},
      {"relu(x)", CUBLASLT_EPILOGUE_RELU, "RELU"},
      {"gelu_tanh(x)", CUBLASLT_EPILOGUE_GELU, "GELU"},
  };
  for (size_t j = 0; j < (fp8 ? 2 : 1) * sizeof forms / sizeof forms[0]; j++) {
    const size_t i = j % (sizeof forms / sizeof forms[0]);
    ft_epilogue *f = NULL;
    if (fp8) f = fp8_form(forms[i].text, *outer = j < sizeof forms / sizeof forms[0]);
    else if (ft_ep_parse(forms[i].text, &f, NULL) != FT_OK) f = NULL;
    int same = f && strcmp(ft_ep_canonical(f), ft_ep_canonical(ep)) == 0;
    ft_ep_free(f);
    if (!same) continue;
    *epi = forms[i].epi;
    *bias_slot = -1;
    for (int s = 0; s < ft_ep_param_count(ep); s++)
      if (strcmp(ft_ep_param_at(ep, s)->name, "bias") == 0) *bias_slot = s;
    snprintf(name, namelen, "cuBLASLt %s%s%s", mode, forms[i].name,
             !fp8 ? "" : *outer ? ", row/col scales" : ", per-tensor scales");
    return 1;
  }
  return 0;
}

/* A gated pair's eager chain runs two GEMMs, as a model with W1 and W2 apart does: the halves of
 * the interleaved weight taken apart once (every other group of 8 rows), and x2's GEMM output. */
static ft_status split_pair(ft_baselines *b, size_t out_bytes, ft_err *err) {
  const ft_pdata *d = b->d;
  const size_t welem = d->math == FT_MATH_FP8 ? 1 : d->elem; /* W's element: e4m3 codes in fp8 */
  const size_t group = (size_t)FT_GATED_GROUP * (size_t)d->k * welem;
  for (int i = 0; i < 2; i++) {
    FT_CUDA_TRY(err, cudaMalloc(&b->w_pair[i], (size_t)d->n * (size_t)d->k * welem));
    FT_CUDA_TRY(err, cudaMemcpy2D(b->w_pair[i], group, (const char *)d->dW + (size_t)i * group, 2 * group, group,
                                  (size_t)d->n / FT_GATED_GROUP, cudaMemcpyDeviceToDevice));
  }
  FT_CUDA_TRY(err, cudaMalloc(&b->tmp[FT_EP_BUF_X2], out_bytes));
  return FT_OK;
}

/* The plan's steps as one program (the one a plan of family eager_chain compiles), through the cubin
 * cache in db. */
static ft_status build_eager_steps(ft_baselines *b, ft_db *db, ft_err *err) {
  if (b->plan.nsteps == 0) return FT_OK;
  const ft_pdata *d = b->d;
  /* The vector and row block family eager_chain's variant of this problem takes (family_chain.c). */
  int vec, rblock;
  ft_chain_reads(d->math, d->m, d->n, &vec, &rblock);
  FT_TRY(ft_chain_of_plan(&b->plan, b->ep, d->math, d->m, d->n, rblock, &b->chain, err));
  ft_kernel_src src;
  FT_TRY(ft_codegen_chain(&b->plan, d->math, vec, rblock, b->ep, &src, err));
  ft_compile_job job = {.src = src.text, .hash = src.hash, .arch_suffix = src.arch_suffix};
  ft_status st = ft_compile_source(db, ft_gpu_arch(b->g), &job, "the eager chain's steps", err);
  if (st == FT_OK) st = ft_loaded_init(&b->prog, job.cubin, job.cubin_size, src.kernel, NULL, err);
  for (int j = 0; st == FT_OK && j < b->chain.nsteps; j++)
    st = ft_loaded_kernel(&b->prog, b->chain.steps[j].kernel, &b->chain_k[j], err);
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  return st;
}

/* fp8's cuBLASLt epilogue reads the scales through pointers: the row and column vectors, or the
 * scalars copied to the device. */
static ft_status fp8_lt_scales(ft_baselines *b, const ft_epilogue *ep, int outer, ft_err *err) {
  ft_fp8_scales sc;
  FT_TRY(ft_fp8_check(FT_MATH_FP8, b->d->n, b->d->k, ep, &sc, err));
  if (outer) {
    FT_TRY(ft_lt_gemm_scales(&b->fused_lt, b->d->dvec[sc.sx_slot], b->d->dvec[sc.sw_slot], err));
  } else {
    const float s[2] = {b->d->args.s[sc.sx_slot], b->d->args.s[sc.sw_slot]};
    FT_CUDA_TRY(err, cudaMalloc((void **)&b->lt_scales, sizeof s));
    FT_CUDA_TRY(err, cudaMemcpy(b->lt_scales, s, sizeof s, cudaMemcpyHostToDevice));
    FT_TRY(ft_lt_gemm_scales(&b->fused_lt, b->lt_scales, b->lt_scales + 1, err));
  }
  b->has_lt_epilogue = 1;
  return FT_OK;
}

ft_status ft_baselines_create(ft_gpu *g, ft_db *db, const ft_epilogue *ep, ft_pdata *d,
                              ft_baselines **out, ft_err *err) {
  *out = NULL;
  ft_baselines *b = calloc(1, sizeof *b);
  if (!b) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  b->g = g;
  b->d = d;
  b->ep = ep;
  *out = b;
  cublasStatus_t cs = cublasLtCreate(&b->lt);
  if (cs != CUBLAS_STATUS_SUCCESS) return ft_cublas_fail(err, cs, "cublasLtCreate");
  FT_CUDA_TRY(err, cudaMalloc(&b->lt_ws, FT_LT_WORKSPACE));
  FT_TRY(ft_ep_check_kernels(ep, err)); /* a reduction step is a kernel the reduction pass serves */
  FT_TRY(ft_ep_eager_plan(ep, &b->plan, err));
  /* "SGEMM" in fp32 (as before modes existed) and 3xtf32 (cuBLAS's fp32-accurate GEMM), else
   * "BF16 GEMM"; mode: "" or "BF16 ". */
  const int sgemm = d->math == FT_MATH_FP32 || d->math == FT_MATH_3XTF32;
  char mode[8] = "";
  if (!sgemm) {
    const char *name = ft_math_name(d->math);
    for (size_t i = 0; name[i] && i < 4; i++) mode[i] = (char)toupper((unsigned char)name[i]);
    strcat(mode, " ");
  }
  if (sgemm) snprintf(b->gemm_desc, sizeof b->gemm_desc, "SGEMM");
  else snprintf(b->gemm_desc, sizeof b->gemm_desc, "%sGEMM", mode);
  b->has_eager = 1;
  if (b->plan.gemm_bias_slot >= 0) {
    ft_err lt_err;
    const ft_status s = lt_gemm_init(b, &b->eager_gemm, CUBLASLT_EPILOGUE_BIAS, d->dvec[b->plan.gemm_bias_slot], &lt_err);
    /* No algorithm (16-bit tensors with odd leading dimensions, say): cuBLAS, then the bias as a
     * step, as torch's addmm falls back (family eager_chain unfolds by its own fixed rule, cuBLASLt's
     * rows of 16 bytes, and only where E reduces: the two may differ); any other failure is an error. */
    if (s == FT_ERR_UNSUPPORTED) {
      ft_ep_eager *unfolded = malloc(sizeof *unfolded);
      if (!unfolded) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
      if (ft_ep_eager_plan_fold(ep, 0, unfolded, &lt_err) == FT_OK) b->plan = *unfolded;
      else b->has_eager = 0; /* one step more than a plan holds: no eager baseline, as before */
      free(unfolded);
    } else if (s != FT_OK) {
      return ft__fail(err, s, "%s", lt_err.msg);
    }
  }
  size_t bytes = (size_t)d->m * d->n * d->elem;
  for (int j = 0; j < b->plan.nsteps; j++) /* the last step writes y itself */
    FT_CUDA_TRY(err, cudaMalloc(&b->tmp[j], bytes));
  b->tmp[b->plan.nsteps] = d->dY;
  if (ft_ep_uses_x2(ep)) FT_TRY(split_pair(b, bytes, err));
  FT_TRY(build_eager_steps(b, db, err));
  int reducing = 0;
  for (int j = 0; j < b->plan.nsteps; j++) reducing += b->plan.steps[j].reduce != FT_RED_NONE;
  char kinds[32] = "elementwise kernel(s)";
  if (reducing) snprintf(kinds, sizeof kinds, "kernel(s), %d reducing", reducing);
  if (b->plan.gemm_bias_slot >= 0)
    snprintf(b->eager_desc, sizeof b->eager_desc, "cuBLASLt %sGEMM+BIAS + %d %s%s", mode, b->plan.nsteps, kinds,
             b->has_eager ? "" : " (no cuBLASLt algorithm)");
  else
    snprintf(b->eager_desc, sizeof b->eager_desc, "cuBLAS %s%s + %d %s", b->w_pair[0] ? "2 x " : "", b->gemm_desc,
             b->plan.nsteps, kinds);
  snprintf(b->gemm_alone_desc, sizeof b->gemm_alone_desc, "cuBLAS %s%s alone (no epilogue)", b->gemm_desc,
           b->w_pair[0] ? " of the stacked [2N, K] weight" : "");
  cublasLtEpilogue_t epi;
  int bias_slot = -1, outer = 0;
  const int fp8 = d->math == FT_MATH_FP8;
  if (match_lt_epilogue(ep, mode, fp8, &epi, &bias_slot, &outer, b->lt_name, sizeof b->lt_name)) {
    ft_err lt_err;
    const void *bias = bias_slot >= 0 ? d->dvec[bias_slot] : NULL;
    /* No algorithm for a fused epilogue is a fact about cuBLASLt, not an error of the tune. */
    if (!fp8 && lt_gemm_init(b, &b->fused_lt, epi, bias, &lt_err) == FT_OK) b->has_lt_epilogue = 1;
    if (fp8 && ft_lt_gemm_init_fp8(&b->fused_lt, b->lt, d->m, d->n, d->k, epi, bias, outer, FT_LT_WORKSPACE, &lt_err) == FT_OK)
      if (fp8_lt_scales(b, ep, outer, &lt_err) != FT_OK) ft_lt_gemm_free(&b->fused_lt); /* not offered, as above */
  }
  return FT_OK;
}

void ft_baselines_free(ft_baselines *b) {
  if (!b) return;
  ft_lt_gemm_free(&b->eager_gemm);
  ft_lt_gemm_free(&b->fused_lt);
  cudaFree(b->lt_scales);
  ft_loaded_free(&b->prog);
  for (int j = 0; j < b->plan.nsteps; j++) cudaFree(b->tmp[j]);
  cudaFree(b->tmp[FT_EP_BUF_X2]);
  cudaFree(b->w_pair[0]);
  cudaFree(b->w_pair[1]);
  cudaFree(b->lt_ws);
  if (b->lt) cublasLtDestroy(b->lt);
  free(b);
}

int ft_baseline_available(const ft_baselines *b, ft_baseline_kind kind) {
  if (kind == FT_BL_CUBLASLT) return b->has_lt_epilogue;
  if (kind == FT_BL_EAGER) return b->has_eager;
  return kind < FT_BL_COUNT;
}

const char *ft_baseline_describe(const ft_baselines *b, ft_baseline_kind kind) {
  switch (kind) {
    case FT_BL_EAGER: return b->eager_desc;
    case FT_BL_CUBLAS_GEMM: return b->gemm_alone_desc;
    case FT_BL_CUBLASLT: return b->has_lt_epilogue ? b->lt_name : "cuBLASLt (no matching epilogue)";
    default: return "?";
  }
}

static ft_status run_eager(ft_baselines *b, cudaStream_t stream, ft_err *err) {
  ft_pdata *d = b->d;
  if (!b->has_eager) return ft__fail(err, FT_ERR_UNSUPPORTED, "no cuBLASLt GEMM+BIAS algorithm for this problem");
  if (b->plan.gemm_bias_slot >= 0) FT_TRY(lt_gemm_run(b, &b->eager_gemm, b->tmp[0], stream, err));
  else FT_TRY(ft_cublas_gemm(b->g, d->math, d->dX, b->w_pair[0] ? b->w_pair[0] : d->dW, b->tmp[0], d->m, d->n, d->k,
                             stream, err));
  if (b->w_pair[1]) FT_TRY(ft_cublas_gemm(b->g, d->math, d->dX, b->w_pair[1], b->tmp[FT_EP_BUF_X2], d->m, d->n, d->k, stream, err));
  return ft_chain_enqueue(&b->chain, b->chain_k, b->tmp, d->m, &d->args, stream, err);
}

ft_status ft_baseline_chain_tolerance(ft_baselines *b, double *tol, ft_err *err) {
  if ((b->d->math != FT_MATH_3XTF32 && b->d->math != FT_MATH_FP8) || !ft_baseline_available(b, FT_BL_EAGER))
    return FT_OK;
  ft_check chk = {0, 0, 0};
  FT_TRY(ft_pdata_poison(b->d, 0, err));
  FT_TRY(run_eager(b, 0, err));
  FT_CUDA_TRY(err, cudaStreamSynchronize(0));
  FT_TRY(ft_pdata_check(b->d, &chk, err));
  if (chk.bad) return FT_OK;
  /* A row's sum (of exponentials, for logsumexp) adds up its values' errors; a max or min takes one. */
  const ft_ep_red red = ft_ep_reduction(b->ep, NULL);
  const int sums = red == FT_RED_ROWSUM || red == FT_RED_ROWMEAN || red == FT_RED_LOGSUMEXP;
  *tol = sums ? ft_tolerance_rows_with_chain(b->d->math, *tol, chk.rel_err)
              : ft_tolerance_with_chain(b->d->math, *tol, chk.rel_err);
  return FT_OK;
}

ft_status ft_baseline_enqueue(ft_baselines *b, ft_baseline_kind kind, cudaStream_t stream, ft_err *err) {
  switch (kind) {
    case FT_BL_EAGER: return run_eager(b, stream, err);
    case FT_BL_CUBLAS_GEMM:
      return ft_cublas_gemm(b->g, b->d->math, b->d->dX, b->d->dW, b->d->dY, b->d->m, b->d->gemm_n, b->d->k, stream, err);
    case FT_BL_CUBLASLT:
      if (!b->has_lt_epilogue) return ft__fail(err, FT_ERR_UNSUPPORTED, "no cuBLASLt epilogue for this expression");
      return lt_gemm_run(b, &b->fused_lt, b->d->dY, stream, err);
    default: return ft__fail(err, FT_ERR_INVALID_ARG, "unknown baseline %d", (int)kind);
  }
}
