/* e4m3 on the host and the quantizer's model (src/epilogue/e4m3.h). The rounding is done in double on the
 * float value, which holds it exactly: nearest e4m3 value, ties to the even code. */
#include "e4m3.h"

#include <math.h>

#include "fp8.h"
#include "numbers.h"

uint8_t ft_e4m3_from_f32(float f) {
  const uint8_t sign = signbit(f) ? 0x80u : 0u;
  const double a = fabs((double)f);
  if (isnan(f)) return sign | 0x7fu;
  if (a >= FT_E4M3_MAX) return sign | 0x7eu; /* satfinite: 448 */
  if (a < 0x1p-6) return sign | (uint8_t)nearbyint(a * 0x1p9); /* subnormal: m * 2^-9 (8 is 2^-6's code) */
  int e;
  frexp(a, &e); /* a = fr * 2^e, fr in [0.5, 1): the leading bit is 2^(e-1) */
  const int m = (int)nearbyint(ldexp(a, 4 - e)); /* 8..16 units of 2^(e-4) */
  return sign | (uint8_t)(((e - 1 + 7) << 3) + (m - 8)); /* m == 16 carries into the exponent */
}

double ft_e4m3_to_double(uint8_t c) {
  const int ex = (c >> 3) & 15, m = c & 7;
  const double s = (c & 0x80u) ? -1.0 : 1.0;
  if (ex == 15 && m == 7) return NAN;
  return s * (ex ? ldexp(8 + m, ex - 10) : ldexp(m, -9));
}

float ft_e4m3_scale(float amax) { return amax > 0.0f ? amax / FT_E4M3_MAX : 1.0f; }

void ft_e4m3_quantize_model(const void *src, ft_dtype dt, int64_t rows, int64_t cols, int per_row, uint8_t *dst,
                            float *scales) {
  float amax = 0.0f;
  for (int64_t r = 0; r < rows; r++) {
    float row_amax = 0.0f;
    for (int64_t c = 0; c < cols; c++) row_amax = fmaxf(row_amax, fabsf((float)ft_elem_to_double(dt, src, (size_t)(r * cols + c))));
    if (per_row) scales[r] = ft_e4m3_scale(row_amax);
    amax = fmaxf(amax, row_amax);
  }
  if (!per_row) scales[0] = ft_e4m3_scale(amax);
  for (int64_t r = 0; r < rows; r++) {
    const float s = scales[per_row ? r : 0];
    for (int64_t c = 0; c < cols; c++) {
      const size_t i = (size_t)(r * cols + c);
      dst[i] = ft_e4m3_from_f32((float)ft_elem_to_double(dt, src, i) / s);
    }
  }
}
