/* The visible CUDA devices, for tools (fusedtune_tool.h). */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "fusedtune_tool.h"

ft_status ft_device_count(int *count, char *msg, size_t msg_size) {
  if (!count) {
    ft__copy_msg(msg, msg_size, "ft_device_count: count is NULL");
    return FT_ERR_INVALID_ARG;
  }
  *count = 0;
  cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess || *count == 0) {
    cudaGetLastError(); /* clear the sticky "no driver" error */
    char text[256];
    ft_no_device_text(e, text, sizeof text);
    ft__copy_msg(msg, msg_size, text);
    *count = 0;
    return FT_ERR_NO_DEVICE;
  }
  return FT_OK;
}

ft_status ft_device_describe(int ordinal, ft_device_desc *out, char *msg, size_t msg_size) {
  if (!out) {
    ft__copy_msg(msg, msg_size, "ft_device_describe: out is NULL");
    return FT_ERR_INVALID_ARG;
  }
  memset(out, 0, sizeof *out);
  int count = 0;
  ft_status s = ft_device_count(&count, msg, msg_size);
  if (s != FT_OK) return s;
  int current = ft__current_device();
  if (ordinal < 0) ordinal = current;
  ft_err err;
  ft__err_clear(&err);
  ft_gpu *g = NULL;
  s = ft_gpu_open(ordinal, &g, &err); /* makes ordinal current */
  if (s == FT_OK) {
    const ft_device_info *i = ft_gpu_info(g);
    out->ordinal = ordinal;
    snprintf(out->name, sizeof out->name, "%s", i->name);
    snprintf(out->fingerprint, sizeof out->fingerprint, "%s", i->fingerprint);
    snprintf(out->arch, sizeof out->arch, "%s", ft_gpu_arch(g));
    out->sm_count = i->sm_count;
    out->mem_bytes = i->mem_bytes;
    out->driver_version = i->driver_version;
    out->runtime_version = i->runtime_version;
    out->nvrtc_version = i->nvrtc_version;
    out->cublas_version = i->cublas_version;
  }
  ft_gpu_close(g);
  cudaError_t e = cudaSetDevice(current); /* leave the caller's device as it was */
  if (s == FT_OK && e != cudaSuccess) s = ft_cuda_fail(&err, e, "restoring the current device");
  if (s != FT_OK) ft__copy_msg(msg, msg_size, err.msg);
  return s;
}
