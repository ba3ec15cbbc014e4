/* CUDA device discovery, fingerprint and cubin loading (runtime API only). */
#include "device.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

struct ft_gpu {
  int ordinal;
  ft_device_info info;
  ft_device_limits limits;
  char arch[16];
  cublasHandle_t cublas;
  cublasLtHandle_t cublaslt;
  ft_lt_gemm fp8[2]; /* ft_gpu_fp8_gemm's, for fp8_shape: two, a gated pair's [2n] and [n] GEMMs */
  int fp8_shape[2][3];
  int fp8_last;       /* the one used last (the other is replaced first) */
  void *fp8_ws;
};

void ft_device_fingerprint(ft_device_info *info) {
  char key[512];
  int n = snprintf(key, sizeof key, "%s|%d.%d|%d|%lld", info->name, info->cc_major, info->cc_minor,
                   info->sm_count, (long long)info->mem_bytes);
  ft__hash_hex(key, (size_t)n, info->fingerprint);
}

static void read_versions(ft_device_info *info) {
  int major = 0, minor = 0, patch = 0;
  cudaDriverGetVersion(&info->driver_version);
  cudaRuntimeGetVersion(&info->runtime_version);
  info->nvrtc_version = ft_nvrtc_version();
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    info->cublas_version = major * 10000 + minor * 100 + patch;
}

void ft_no_device_text(cudaError_t e, char *buf, size_t size) {
  /* The runtime says "driver version is insufficient" also when there is no driver at all;
   * whether libcuda can be loaded tells the two apart. */
  int have_driver = 0;
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    have_driver = h != NULL;
    if (h) dlclose(h);
  }
  if ((e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) && !have_driver)
    snprintf(buf, size, "no CUDA device: no NVIDIA driver found (libcuda.so.1 cannot be loaded), so no GPU is "
                        "usable on this machine");
  else if (e == cudaErrorNoDevice)
    snprintf(buf, size, "no CUDA device: the NVIDIA driver sees no GPU (check CUDA_VISIBLE_DEVICES)");
  else if (e == cudaErrorInsufficientDriver)
    snprintf(buf, size, "no CUDA device: the NVIDIA driver is older than this CUDA runtime (%s); update the driver",
             cudaGetErrorString(e));
  else if (e == cudaSuccess)
    snprintf(buf, size, "no CUDA device: none visible");
  else
    snprintf(buf, size, "no CUDA device: %s", cudaGetErrorString(e));
}

ft_status ft_gpu_open(int ordinal, ft_gpu **out, ft_err *err) {
  *out = NULL;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError(); /* clear the sticky "no driver" error */
    char text[256];
    ft_no_device_text(e, text, sizeof text);
    return ft__fail(err, FT_ERR_NO_DEVICE, "%s", text);
  }
  if (count <= ordinal)
    return ft__fail(err, FT_ERR_NO_DEVICE, "no CUDA device: %d device(s) visible, asked for #%d",
                    count, ordinal);
  FT_CUDA_TRY(err, cudaSetDevice(ordinal));
  struct cudaDeviceProp prop;
  FT_CUDA_TRY(err, cudaGetDeviceProperties(&prop, ordinal));
  ft_gpu *g = calloc(1, sizeof *g);
  if (!g) return ft__fail(err, FT_ERR_NOMEM, "out of memory opening the device");
  g->ordinal = ordinal;
  snprintf(g->info.name, sizeof g->info.name, "%s", prop.name);
  g->info.cc_major = prop.major;
  g->info.cc_minor = prop.minor;
  g->info.sm_count = prop.multiProcessorCount;
  g->info.mem_bytes = (int64_t)prop.totalGlobalMem;
  read_versions(&g->info);
  ft_device_fingerprint(&g->info);
  g->limits.cc_major = prop.major;
  g->limits.cc_minor = prop.minor;
  g->limits.sm_count = prop.multiProcessorCount;
  g->limits.max_threads_per_block = prop.maxThreadsPerBlock;
  g->limits.max_smem_per_block = (int)prop.sharedMemPerBlockOptin;
  g->limits.regs_per_block = prop.regsPerBlock;
  snprintf(g->arch, sizeof g->arch, "sm_%d%d", prop.major, prop.minor);
  *out = g;
  return FT_OK;
}

void ft_gpu_close(ft_gpu *g) {
  if (!g) return;
  ft_lt_gemm_free(&g->fp8[0]);
  ft_lt_gemm_free(&g->fp8[1]);
  cudaFree(g->fp8_ws);
  if (g->cublas) cublasDestroy(g->cublas);
  if (g->cublaslt) cublasLtDestroy(g->cublaslt);
  free(g);
}

const ft_device_info *ft_gpu_info(const ft_gpu *g) { return &g->info; }
const ft_device_limits *ft_gpu_limits(const ft_gpu *g) { return &g->limits; }
const char *ft_gpu_arch(const ft_gpu *g) { return g->arch; }
int ft_gpu_ordinal(const ft_gpu *g) { return g->ordinal; }

ft_status ft_gpu_cublas(ft_gpu *g, void **handle, ft_err *err) {
  if (!g->cublas) {
    cublasStatus_t s = cublasCreate(&g->cublas);
    if (s != CUBLAS_STATUS_SUCCESS) {
      g->cublas = NULL;
      return ft__fail(err, FT_ERR_CUBLAS, "cublasCreate: %s", cublasGetStatusString(s));
    }
    /* fp32 math mode: keep cuBLAS on FFMA (no TF32), as the baselines claim. */
    s = cublasSetMathMode(g->cublas, CUBLAS_PEDANTIC_MATH);
    if (s != CUBLAS_STATUS_SUCCESS)
      return ft__fail(err, FT_ERR_CUBLAS, "cublasSetMathMode: %s", cublasGetStatusString(s));
  }
  *handle = g->cublas;
  return FT_OK;
}

ft_status ft_gpu_cublaslt(ft_gpu *g, void **handle, ft_err *err) {
  if (!g->cublaslt) {
    const cublasStatus_t s = cublasLtCreate(&g->cublaslt);
    if (s != CUBLAS_STATUS_SUCCESS) {
      g->cublaslt = NULL;
      return ft__fail(err, FT_ERR_CUBLAS, "cublasLtCreate: %s", cublasGetStatusString(s));
    }
  }
  *handle = g->cublaslt;
  return FT_OK;
}

#define FT_FP8_WORKSPACE (32u << 20)

ft_status ft_gpu_fp8_gemm(ft_gpu *g, int m, int n, int k, ft_lt_gemm **gemm, void **ws, ft_err *err) {
  void *h = NULL;
  FT_TRY(ft_gpu_cublaslt(g, &h, err));
  int i = 0;
  while (i < 2 && !(g->fp8[i].ready && g->fp8_shape[i][0] == m && g->fp8_shape[i][1] == n && g->fp8_shape[i][2] == k)) i++;
  if (i == 2) {
    i = 1 - g->fp8_last;
    ft_lt_gemm_free(&g->fp8[i]);
    if (!g->fp8_ws) FT_CUDA_TRY(err, cudaMalloc(&g->fp8_ws, FT_FP8_WORKSPACE));
    FT_TRY(ft_lt_gemm_init_fp8(&g->fp8[i], h, m, n, k, CUBLASLT_EPILOGUE_DEFAULT, NULL, 0, FT_FP8_WORKSPACE, err));
    g->fp8_shape[i][0] = m, g->fp8_shape[i][1] = n, g->fp8_shape[i][2] = k;
  }
  g->fp8_last = i;
  *gemm = &g->fp8[i];
  *ws = g->fp8_ws;
  return FT_OK;
}

ft_status ft_loaded_init(ft_loaded *l, const void *cubin, size_t size, const char *kernel,
                         const char *reduce, ft_err *err) {
  (void)size;
  memset(l, 0, sizeof *l);
  FT_CUDA_TRY(err, cudaLibraryLoadData(&l->lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
  cudaError_t e = cudaLibraryGetKernel(&l->main, l->lib, kernel);
  if (e == cudaSuccess && reduce && reduce[0]) e = cudaLibraryGetKernel(&l->reduce, l->lib, reduce);
  if (e != cudaSuccess) {
    ft_loaded_free(l);
    return ft_cuda_fail(err, e, "cudaLibraryGetKernel");
  }
  return FT_OK;
}

ft_status ft_loaded_kernel(const ft_loaded *l, const char *name, cudaKernel_t *k, ft_err *err) {
  *k = NULL;
  if (!l->lib || !name || !name[0]) return ft__fail(err, FT_ERR_INTERNAL, "launch: no program or no kernel name");
  const cudaError_t e = cudaLibraryGetKernel(k, l->lib, name);
  if (e != cudaSuccess) {
    *k = NULL;
    return ft_cuda_fail(err, e, "cudaLibraryGetKernel");
  }
  return FT_OK;
}

void ft_loaded_free(ft_loaded *l) {
  if (l && l->lib) cudaLibraryUnload(l->lib);
  if (l) memset(l, 0, sizeof *l);
}
