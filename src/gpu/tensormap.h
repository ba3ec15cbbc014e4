/* Hopper TMA tensor maps (CUtensorMap) for the tensor-core family, encoded by the driver's
 * cuTensorMapEncodeTiled reached through cudaGetDriverEntryPointByVersion: nothing links
 * libcuda, and a machine without a driver gets an error, not a loader failure. */
#ifndef FT_TENSORMAP_H
#define FT_TENSORMAP_H

#include <stdint.h>

#include "common.h"

/* An encoded map: opaque bytes the kernel takes as a __grid_constant__ parameter. */
typedef struct ft_tensormap {
  _Alignas(64) unsigned char bytes[128];
} ft_tensormap;

/* A row-major [rows, cols] matrix of elements of esize bytes (4 or 2) at base, read in boxes of
 * box_rows x box_cols elements with 128-byte swizzle and zero fill outside the matrix. kind:
 * 0 fp32, 1 tf32 (fp32 storage, rounded to tf32 by the load), 2 bf16, 3 fp16. base must be
 * 16-byte aligned and cols * esize a multiple of 16 (FT_ERR_INVALID_ARG otherwise). */
ft_status ft_tensormap_2d(ft_tensormap *out, const void *base, int kind, uint64_t rows, uint64_t cols,
                          uint32_t box_rows, uint32_t box_cols, ft_err *err);

#endif
