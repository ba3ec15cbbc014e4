/* One way to check CUDA runtime, cuBLAS and NVRTC return codes: each failure becomes an
 * ft_status (FT_ERR_CUDA, FT_ERR_CUBLAS, FT_ERR_COMPILE) with "what: name: description" in
 * the ft_err. TRY returns from the function; GOTO sets a status variable and jumps to a
 * cleanup label. */
#ifndef FT_CHECKS_H
#define FT_CHECKS_H

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "common.h"

ft_status ft_cuda_fail(ft_err *err, cudaError_t e, const char *what);
ft_status ft_cublas_fail(ft_err *err, cublasStatus_t s, const char *what);
ft_status ft_nvrtc_fail(ft_err *err, nvrtcResult r, const char *what);

#define FT_CHECK_TRY_(type, ok, fail, err, call)       \
  do {                                                 \
    type ft_ck_ = (call);                              \
    if (ft_ck_ != (ok)) return fail((err), ft_ck_, #call); \
  } while (0)
#define FT_CHECK_GOTO_(type, ok, fail, err, st, label, call) \
  do {                                                       \
    type ft_ck_ = (call);                                    \
    if (ft_ck_ != (ok)) {                                    \
      (st) = fail((err), ft_ck_, #call);                     \
      goto label;                                            \
    }                                                        \
  } while (0)

#define FT_CUDA_TRY(err, call) FT_CHECK_TRY_(cudaError_t, cudaSuccess, ft_cuda_fail, err, call)
#define FT_CUBLAS_TRY(err, call) FT_CHECK_TRY_(cublasStatus_t, CUBLAS_STATUS_SUCCESS, ft_cublas_fail, err, call)
#define FT_NVRTC_TRY(err, call) FT_CHECK_TRY_(nvrtcResult, NVRTC_SUCCESS, ft_nvrtc_fail, err, call)
#define FT_CUDA_GOTO(err, st, label, call) \
  FT_CHECK_GOTO_(cudaError_t, cudaSuccess, ft_cuda_fail, err, st, label, call)
#define FT_CUBLAS_GOTO(err, st, label, call) \
  FT_CHECK_GOTO_(cublasStatus_t, CUBLAS_STATUS_SUCCESS, ft_cublas_fail, err, st, label, call)
#define FT_NVRTC_GOTO(err, st, label, call) \
  FT_CHECK_GOTO_(nvrtcResult, NVRTC_SUCCESS, ft_nvrtc_fail, err, st, label, call)

#endif
