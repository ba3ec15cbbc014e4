/* e4m3 (float8_e4m3fn) on the host: the conversions and the float64 model of the library's
 * quantizer (kernels_src/quantize.cu makes the same bytes). GPU-free. */
#ifndef FT_E4M3_H
#define FT_E4M3_H

#include <stddef.h>
#include <stdint.h>

#include "fusedtune.h"

/* f rounded to nearest even e4m3, saturated to +-448 (NaN -> 0x7f with f's sign). */
uint8_t ft_e4m3_from_f32(float f);
/* The value of code c (exact; 0x7f / 0xff: NaN). */
double ft_e4m3_to_double(uint8_t c);

/* The quantizer's scale of a block whose largest |v| is amax: amax / 448 rounded to float, 1
 * where amax is 0. */
float ft_e4m3_scale(float amax);

/* The model of ft_quantize_e4m3 for src [rows, cols] of type dt (bf16, fp16 or fp32): codes to
 * dst, the scales (rows of them per row, else one) to scales. */
void ft_e4m3_quantize_model(const void *src, ft_dtype dt, int64_t rows, int64_t cols, int per_row, uint8_t *dst,
                            float *scales);

#endif
