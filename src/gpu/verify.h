/* Test data and the float64 reference, in every math mode: random inputs on the device in the
 * mode's element type, cuBLAS DGEMM on the inputs as the kernels see them, the epilogue
 * evaluated in double on the host by the same AST, error norms; the values themselves come from
 * numbers.h, the rule that judges the errors from tolerance.h. */
#ifndef FT_VERIFY_H
#define FT_VERIFY_H

#include "device.h"
#include "numbers.h"
#include "tolerance.h"

/* One problem's inputs, output buffer and references. */
typedef struct ft_pdata {
  int m, n, k;
  int gemm_n;                        /* the GEMM's columns: n, or 2n for a gated pair (E with x2),
                                      * whose dW is the interleaved [2n, k] weight (src/family/gated.h) */
  ft_math math;
  const ft_epilogue *ep;             /* the epilogue it was made for (not owned: it outlives d), or NULL */
  ft_dtype dtype;                    /* element type of dX, dW, dY and the device vectors (fp8: of dY
                                      * and the bias; dX, dW e4m3, the scales fp32) */
  size_t elem;                       /* its size in bytes: 4 or 2 */
  void *dX, *dW, *dY;                /* device: x [m,k], W [n,k], y [m,n] */
  void *dvec[FT_EP_SLOTS];           /* device vectors for COLVEC/ROWVEC slots, else NULL */
  float *hvec[FT_EP_SLOTS];          /* host values of the same, as the kernels read them */
  ft_ep_args_dev args;               /* what kernels receive (vectors + scalar values) */
  double *ref;                       /* host float64 reference of E(x W^T): [m,n], or the shape of a
                                      * reduction's y (out_count elements) */
  int64_t out_count;                 /* elements of y: m * n, or fewer after a reduction */
  double *ref_gemm;                  /* host [m,gemm_n] float64 x W^T (may alias ref when E is x) */
  double ref_norm, ref_gemm_norm;    /* their L2 norms over finite elements */
  void *host_y;                      /* host scratch [m,n] of elem bytes each, for checks */
  int host_y_pinned;                 /* host_y is cudaMallocHost's (else malloc's) */
  double *ref_e2e;                   /* fp8: host [m,n] E of the unquantized bf16 product (sx = sw = 1) */
  double ref_e2e_norm;
} ft_pdata;

/* Random inputs (x uniform [0,1), W and vectors uniform +-1/sqrt(k), scalars at their default or
 * 1.5 without one) from seed, the same values in every mode before conversion; in bf16 and fp16
 * modes x, W and the vectors are then rounded to the element type (to nearest even). In fp8 the
 * problem is a bf16 layer: x and W rounded to bf16, then quantized as the library's quantizer does
 * (src/epilogue/e4m3.c, the same bytes) per row / per tensor as E declares sx and sw, the scales bound from
 * the data; the reference is E of the e4m3 values and scales, ref_e2e E of the bf16 product. The
 * references are computed from the inputs as the kernels see them: the rounded 16-bit values
 * (exact in double), or in tf32 mode the fp32 values, so tf32's own rounding is error. With x2
 * in E (a gated pair) W is random [2n, k], taken as the interleaved weight: the reference is
 * E(x, x2) of the columns src/family/gated.h pairs. */
ft_status ft_pdata_create(ft_gpu *g, int m, int n, int k, const ft_epilogue *ep, ft_math math, uint64_t seed,
                          ft_pdata **out, ft_err *err);
void ft_pdata_free(ft_pdata *d);

/* Fills dY with NaN so an element no kernel wrote fails the check (all-ones bytes are a NaN in
 * fp32, bf16 and fp16). */
ft_status ft_pdata_poison(ft_pdata *d, cudaStream_t stream, ft_err *err);

/* dY holds m * gemm_n elements always (cuBLAS's GEMM writes it); y is its first out_count.
 * Copies dY back, converts it from the element type and compares: rel = ||y - ref|| / ||ref||,
 * max_abs, count of non-finite where the reference is finite. ft_pdata_check compares with
 * E(x W^T), ft_pdata_check_gemm with x W^T (for a GEMM without its epilogue). */
typedef struct ft_check {
  double rel_err, max_abs_err;
  int64_t bad; /* NaN/Inf elements where the reference is finite */
} ft_check;
ft_status ft_pdata_check(ft_pdata *d, ft_check *out, ft_err *err);
/* fp8: dY against E of the unquantized bf16 layer (what a user of the quantized layer gets). */
ft_status ft_pdata_check_e2e(ft_pdata *d, ft_check *out, ft_err *err);
ft_status ft_pdata_check_gemm(ft_pdata *d, ft_check *out, ft_err *err);

/* Runs cuBLAS's GEMM of d's mode once into dY (stream 0, synchronized), measures its error
 * against x W^T into *cublas_rel_err and sets *tol by ft_tolerance_rule. In fp32 it still
 * measures, and *tol is FT_TOL_FP32. Errors: CUDA, cuBLAS; FT_ERR_WRONG_RESULT when cuBLAS's
 * output has a non-finite element where the reference has none. */
ft_status ft_pdata_tolerance(ft_gpu *g, ft_pdata *d, double *tol, double *cublas_rel_err, ft_err *err);

/* The same values made on the GPU (kernels_src/input_gen.cu, compiled by NVRTC; what
 * ft_pdata_create uses for large inputs): open compiles and loads the generator (ft_loaded_free
 * ends it); fill writes n values of ft_fill_uniform(lo, hi, *s), rounded to dt, to the device
 * arrays elem (dt's element type: floats or 16-bit words) and ref (as doubles), on the legacy
 * stream, and advances *s as ft_fill_uniform does. */
ft_status ft_input_gen_open(ft_gpu *g, ft_loaded *gen, ft_err *err);
ft_status ft_input_gen_fill(const ft_loaded *gen, ft_dtype dt, size_t n, float lo, float hi, uint64_t *s,
                            void *elem, double *ref, ft_err *err);

#endif
