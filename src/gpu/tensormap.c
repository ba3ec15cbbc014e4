/* TMA tensor maps through the driver entry point; see tensormap.h. */
#include "tensormap.h"

#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

static PFN_cuTensorMapEncodeTiled_v12000 g_encode;
static cudaError_t g_encode_err = cudaSuccess;
static enum cudaDriverEntryPointQueryResult g_encode_q;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void find_encode(void) {
  void *fn = NULL;
  g_encode_err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &g_encode_q);
  if (g_encode_err == cudaSuccess && g_encode_q == cudaDriverEntryPointSuccess)
    g_encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
}

ft_status ft_tensormap_2d(ft_tensormap *out, const void *base, int kind, uint64_t rows, uint64_t cols,
                          uint32_t box_rows, uint32_t box_cols, ft_err *err) {
  static const CUtensorMapDataType types[] = {CU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
                                              CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                              CU_TENSOR_MAP_DATA_TYPE_UINT8};
  if (!out || !base || kind < 0 || kind > 4 || rows == 0 || cols == 0 || box_rows == 0 || box_cols == 0)
    return ft__fail(err, FT_ERR_INVALID_ARG, "tensor map: bad arguments");
  const uint64_t esize = kind <= 1 ? 4 : kind == 4 ? 1 : 2;
  if ((uintptr_t)base % 16 || (cols * esize) % 16)
    return ft__fail(err, FT_ERR_INVALID_ARG,
                    "tensor map: base must be 16-byte aligned and a row a multiple of 16 bytes (%llu x %llu B)",
                    (unsigned long long)cols, (unsigned long long)esize);
  pthread_once(&g_once, find_encode);
  if (!g_encode)
    return ft__fail(err, FT_ERR_CUDA, "tensor map: cuTensorMapEncodeTiled not found in the driver (%s, query %d)",
                    cudaGetErrorName(g_encode_err), (int)g_encode_q);
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * esize};
  const cuuint32_t box[2] = {box_cols, box_rows}, estr[2] = {1, 1};
  CUtensorMap map;
  const CUresult r = g_encode(&map, types[kind], 2, (void *)base, dims, strides, box, estr,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return ft__fail(err, FT_ERR_CUDA, "cuTensorMapEncodeTiled: CUresult %d (%llu x %llu, box %u x %u)", (int)r,
                    (unsigned long long)rows, (unsigned long long)cols, box_rows, box_cols);
  _Static_assert(sizeof map == sizeof out->bytes, "CUtensorMap is 128 bytes");
  memcpy(out->bytes, &map, sizeof map);
  return FT_OK;
}
