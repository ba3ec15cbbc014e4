/* See lt_gemm.h. */
#include "lt_gemm.h"

#include <stdlib.h>
#include <string.h>

#include "checks.h"

void ft_lt_gemm_free(ft_lt_gemm *l) {
  if (!l) return;
  if (l->op) cublasLtMatmulDescDestroy(l->op);
  if (l->la) cublasLtMatrixLayoutDestroy(l->la);
  if (l->lb) cublasLtMatrixLayoutDestroy(l->lb);
  if (l->lc) cublasLtMatrixLayoutDestroy(l->lc);
  cudaFree(l->ones);
  memset(l, 0, sizeof *l);
}

static ft_status set_bias(ft_lt_gemm *l, const void *bias, ft_err *err) {
  FT_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  l->bias = bias;
  return FT_OK;
}

ft_status ft_lt_gemm_scales(ft_lt_gemm *l, const float *sx, const float *sw, ft_err *err) {
  /* Column-major view: A is W, B is x. */
  FT_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sw, sizeof sw));
  FT_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sx, sizeof sx));
  return FT_OK;
}

/* fp8's scale mode and its starting pointers: 1.0 for every row and column. */
static ft_status fp8_scales(ft_lt_gemm *l, int m, int n, int outer, ft_err *err) {
  const int32_t mode = outer ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  FT_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode));
  FT_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode));
  const size_t len = (size_t)(m > n ? m : n);
  float *host = malloc(len * sizeof *host);
  if (!host) return ft__fail(err, FT_ERR_NOMEM, "out of host memory");
  for (size_t i = 0; i < len; i++) host[i] = 1.0f;
  cudaError_t e = cudaMalloc((void **)&l->ones, len * sizeof *host);
  if (e == cudaSuccess) e = cudaMemcpy(l->ones, host, len * sizeof *host, cudaMemcpyHostToDevice);
  free(host);
  if (e != cudaSuccess) return ft_cuda_fail(err, e, "fp8 GEMM scales");
  return ft_lt_gemm_scales(l, l->ones, l->ones, err);
}

static ft_status build(ft_lt_gemm *l, cublasLtHandle_t h, ft_math math, int m, int n, int k, cublasLtEpilogue_t epi,
                       const void *bias, size_t ws_bytes, uint32_t min_align, int outer, ft_err *err) {
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N; /* TN: what cuBLASLt's fp8 GEMM takes */
  const ft_dtype dt = ft_math_out_dtype(math);
  l->type = dt == FT_DTYPE_BF16 ? CUDA_R_16BF : dt == FT_DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F;
  const cudaDataType_t in = math == FT_MATH_FP8 ? CUDA_R_8F_E4M3 : l->type;
  const cublasComputeType_t compute = math == FT_MATH_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  FT_CUBLAS_TRY(err, cublasLtMatmulDescCreate(&l->op, compute, CUDA_R_32F));
  FT_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  FT_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  FT_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  const int32_t bias_type = (int32_t)l->type; /* the launch path sets the pointer per launch */
  FT_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                    sizeof bias_type));
  if (bias) FT_TRY(set_bias(l, bias, err));
  if (math == FT_MATH_FP8) FT_TRY(fp8_scales(l, m, n, outer, err));
  /* Column-major view: y^T [n x m] = (W as [k x n])^T (x as [k x m]). */
  FT_CUBLAS_TRY(err, cublasLtMatrixLayoutCreate(&l->la, in, (uint64_t)k, (uint64_t)n, k));
  FT_CUBLAS_TRY(err, cublasLtMatrixLayoutCreate(&l->lb, in, (uint64_t)k, (uint64_t)m, k));
  FT_CUBLAS_TRY(err, cublasLtMatrixLayoutCreate(&l->lc, l->type, (uint64_t)n, (uint64_t)m, n));
  cublasLtMatmulPreference_t pref = NULL;
  FT_CUBLAS_TRY(err, cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = ws_bytes;
  l->ws_bytes = ws_bytes;
  cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  /* An algorithm that takes pointers of this alignment only (cuBLASLt assumes 256 bytes). */
  static const cublasLtMatmulPreferenceAttributes_t k_align[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (size_t i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS && min_align; i++)
    s = cublasLtMatmulPreferenceSetAttribute(pref, k_align[i], &min_align, sizeof min_align);
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulAlgoGetHeuristic(h, l->op, l->la, l->lb, l->lc, l->lc, pref, 1, &heur, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  /* NOT_SUPPORTED: no algorithm for this combination (types, epilogue, leading dimensions). */
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS && found < 1))
    return ft__fail(err, FT_ERR_UNSUPPORTED, "cuBLASLt has no algorithm for this GEMM and epilogue");
  if (s != CUBLAS_STATUS_SUCCESS) return ft_cublas_fail(err, s, "cublasLtMatmulAlgoGetHeuristic");
  l->algo = heur.algo;
  l->ready = 1;
  return FT_OK;
}

ft_status ft_lt_gemm_init(ft_lt_gemm *l, cublasLtHandle_t h, ft_math math, int m, int n, int k, cublasLtEpilogue_t epi,
                          const void *bias, size_t ws_bytes, uint32_t min_align, ft_err *err) {
  memset(l, 0, sizeof *l);
  const ft_status s = build(l, h, math, m, n, k, epi, bias, ws_bytes, min_align, 0, err);
  if (s != FT_OK) ft_lt_gemm_free(l);
  return s;
}

ft_status ft_lt_gemm_init_fp8(ft_lt_gemm *l, cublasLtHandle_t h, int m, int n, int k, cublasLtEpilogue_t epi,
                              const void *bias, int outer, size_t ws_bytes, ft_err *err) {
  memset(l, 0, sizeof *l);
  const ft_status s = build(l, h, FT_MATH_FP8, m, n, k, epi, bias, ws_bytes, 0, outer, err);
  if (s != FT_OK) ft_lt_gemm_free(l);
  return s;
}

ft_status ft_lt_gemm_run(ft_lt_gemm *l, cublasLtHandle_t h, const void *x, const void *w, void *y, const void *bias,
                         const void *c, void *ws, cudaStream_t stream, ft_err *err) {
  if (!l->ready) return ft__fail(err, FT_ERR_INTERNAL, "cuBLASLt GEMM not initialised");
  if (bias && bias != l->bias) FT_TRY(set_bias(l, bias, err));
  const float one = 1.0f, zero = 0.0f;
  FT_CUBLAS_TRY(err, cublasLtMatmul(h, l->op, &one, w, l->la, x, l->lb, c ? &one : &zero, c ? c : y, l->lc, y, l->lc,
                                    &l->algo, ws, l->ws_bytes, stream));
  return FT_OK;
}
