/* The CUDA device: discovery, fingerprint and cubin loading through the runtime API
 * (cudaLibraryLoadData / cudaLibraryGetKernel), so nothing links libcuda and the binaries start
 * on machines without a driver. Launches: src/gpu/launch.h. */
#ifndef FT_DEVICE_H
#define FT_DEVICE_H

#include <cuda_runtime_api.h>

#include "checks.h"
#include "codegen.h"
#include "db.h"
#include "lt_gemm.h"
#include "space.h"

typedef struct ft_gpu ft_gpu;

/* Opens device ordinal (0 = first). No device or no driver -> FT_ERR_NO_DEVICE with
 * "no CUDA device: <reason>". Creates a cuBLAS handle on first use (ft_gpu_cublas). */
/* The one-line "no CUDA device: ..." reason for e, the error of cudaGetDeviceCount (cudaSuccess:
 * it counted none): names a missing driver as such. */
void ft_no_device_text(cudaError_t e, char *buf, size_t size);
ft_status ft_gpu_open(int ordinal, ft_gpu **out, ft_err *err);
void ft_gpu_close(ft_gpu *g); /* NULL is a no-op */

const ft_device_info *ft_gpu_info(const ft_gpu *g);
const ft_device_limits *ft_gpu_limits(const ft_gpu *g);
const char *ft_gpu_arch(const ft_gpu *g); /* "sm_90" */
int ft_gpu_ordinal(const ft_gpu *g);      /* the device ordinal it was opened on */
/* The cuBLAS handle (cublasHandle_t as void *), created on first call. */
ft_status ft_gpu_cublas(ft_gpu *g, void **handle, ft_err *err);
/* The device's cuBLASLt handle (a cublasLtHandle_t), created on first use. */
ft_status ft_gpu_cublaslt(ft_gpu *g, void **handle, ft_err *err);

/* cuBLASLt's fp8 GEMM alone for (m, n, k), per-tensor scale pointers at 1.0 (src/gpu/lt_gemm.h), built
 * on the first call for the shape and kept (two shapes at a time, the older replaced: a gated
 * pair's eager chain and its stacked GEMM; not thread-safe), with one workspace, stream-ordered:
 * what ft_cublas_gemm runs in fp8. */
ft_status ft_gpu_fp8_gemm(ft_gpu *g, int m, int n, int k, ft_lt_gemm **gemm, void **ws, ft_err *err);

/* Fills info with everything but the GPU fields (driver/runtime/NVRTC/cuBLAS versions), then
 * hashes name, compute capability, SM count and memory into the fingerprint. */
void ft_device_fingerprint(ft_device_info *info);

/* A cubin loaded on the current device, with the kernels of one variant. */
typedef struct ft_loaded {
  cudaLibrary_t lib;
  cudaKernel_t main;   /* ft_gemm / ft_epilogue_pass / ft_eager_step */
  cudaKernel_t reduce; /* ft_splitk_reduce / ft_streamk_fixup or NULL */
  size_t smem_allowed; /* dynamic shared memory main is already allowed to use (set once) */
} ft_loaded;

ft_status ft_loaded_init(ft_loaded *l, const void *cubin, size_t size, const char *kernel,
                         const char *reduce, ft_err *err);
void ft_loaded_free(ft_loaded *l); /* safe on a zeroed struct */
/* Another entry point of l's program by name (a family's own GEMM before its pass). */
ft_status ft_loaded_kernel(const ft_loaded *l, const char *name, cudaKernel_t *k, ft_err *err);

#endif
