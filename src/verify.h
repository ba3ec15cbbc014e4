/* Test data and the float64 reference: random inputs on the device, cuBLAS DGEMM on upcast
 * inputs, the epilogue evaluated in double on the host by the same AST, error norms. */
#ifndef FT_VERIFY_H
#define FT_VERIFY_H

#include "device.h"

/* One problem's inputs, output buffer and reference. */
typedef struct ft_pdata {
  int m, n, k;
  float *dX, *dW, *dY;               /* device: x [m,k], W [n,k], y [m,n] */
  float *dvec[FT_EP_SLOTS];          /* device vectors for COLVEC/ROWVEC slots, else NULL */
  float *hvec[FT_EP_SLOTS];          /* host copies of the same */
  ft_ep_args_dev args;               /* what kernels receive (vectors + scalar values) */
  double *ref;                       /* host [m,n] float64 reference of E(x W^T) */
  double ref_norm;                   /* ||ref||_2 */
  float *host_y;                     /* host scratch [m,n] for checks */
} ft_pdata;

/* Random inputs (x uniform [0,1), W and vectors uniform +-1/sqrt(k), scalars at their default or
 * 1.5 without one) from seed, then the reference. */
ft_status ft_pdata_create(ft_gpu *g, int m, int n, int k, const ft_epilogue *ep, uint64_t seed,
                          ft_pdata **out, ft_err *err);
void ft_pdata_free(ft_pdata *d);

/* Fills dY with NaN so an element no kernel wrote fails the check. */
ft_status ft_pdata_poison(ft_pdata *d, cudaStream_t stream, ft_err *err);

/* Copies dY back and compares: rel = ||y - ref|| / ||ref||, max_abs, count of non-finite where
 * the reference is finite. */
typedef struct ft_check {
  double rel_err, max_abs_err;
  int64_t bad; /* NaN/Inf elements where the reference is finite */
} ft_check;
ft_status ft_pdata_check(ft_pdata *d, ft_check *out, ft_err *err);

/* The fp32 tolerance on rel_err. */
#define FT_TOL_FP32 1e-5

#endif
