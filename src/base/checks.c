/* Return codes of the CUDA runtime, cuBLAS and NVRTC as ft_status plus a message. */
#include "checks.h"

ft_status ft_cuda_fail(ft_err *err, cudaError_t e, const char *what) {
  return ft__fail(err, FT_ERR_CUDA, "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

ft_status ft_cublas_fail(ft_err *err, cublasStatus_t s, const char *what) {
  return ft__fail(err, FT_ERR_CUBLAS, "%s: %s", what, cublasGetStatusString(s));
}

ft_status ft_nvrtc_fail(ft_err *err, nvrtcResult r, const char *what) {
  return ft__fail(err, FT_ERR_COMPILE, "NVRTC %s: %s", what, nvrtcGetErrorString(r));
}
