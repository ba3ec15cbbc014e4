/* Number formats and random numbers on the host (numbers.h). */
#include "numbers.h"

#include <math.h>
#include <string.h>

#include "parallel.h"

/* splitmix64: a small, fast, well-mixed generator. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int ft_host_chunks(size_t n) {
  const size_t c = n / 65536;
  return c < 1 ? 1 : c > FT_MAX_CHUNKS ? FT_MAX_CHUNKS : (int)c;
}

typedef struct fill_job {
  float *a;
  float lo, hi;
  uint64_t s0;
} fill_job;

static void fill_chunk(void *user, int chunk, size_t begin, size_t end) {
  (void)chunk;
  const fill_job *f = user;
  /* splitmix64's i-th output is mix64(s0 + (i + 1) golden): any element can be made alone. */
  for (size_t i = begin; i < end; i++)
    f->a[i] = f->lo + (f->hi - f->lo) * (float)((mix64(f->s0 + (uint64_t)(i + 1) * FT_RNG_STEP) >> 40) * 0x1.0p-24);
}

void ft_fill_uniform(float *a, size_t n, float lo, float hi, uint64_t *s) {
  fill_job f = {a, lo, hi, *s};
  ft_parallel_chunks(n, ft_host_chunks(n), 0, fill_chunk, &f);
  *s += (uint64_t)n * FT_RNG_STEP;
}

/* Host conversions: round to nearest even by integer arithmetic on the bits, so the result
 * does not depend on the host's floating-point environment. */
static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t ft_f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u); /* a carry into the exponent is the correct rounding (to Inf too) */
  return (uint16_t)(u >> 16);
}

float ft_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t ft_f32_to_f16(float f) {
  const uint32_t u = f32_bits(f) & 0x7fffffffu;
  const uint16_t sign = (uint16_t)((f32_bits(f) >> 16) & 0x8000u);
  if (u > 0x7f800000u) return sign | 0x7e00u;   /* NaN */
  if (u >= 0x477ff000u) return sign | 0x7c00u;  /* >= 65520 (halfway above 65504) and Inf */
  if (u <= 0x33000000u) return sign;             /* <= 2^-25: ties to the even 0 */
  uint32_t mant, shift;
  uint32_t h;
  if (u >= 0x38800000u) { /* normal: 2^-14 and up */
    mant = u & 0x1fffu;
    h = ((((u >> 23) - 112u) << 10) | ((u >> 13) & 0x3ffu));
    shift = 13;
  } else { /* subnormal: units of 2^-24 */
    const uint32_t m = (u & 0x7fffffu) | 0x800000u;
    shift = 126u - (u >> 23);
    h = m >> shift;
    mant = m & ((1u << shift) - 1u);
  }
  const uint32_t half = 1u << (shift - 1);
  if (mant > half || (mant == half && (h & 1u))) h++; /* a carry into the exponent is right too */
  return (uint16_t)(sign | h);
}

float ft_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = ldexpf((float)m, -24);
    return sign ? -v : v;
  }
  if (e == 31) return bits_f32(sign | 0x7f800000u | (m << 13));
  return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

float ft_round_to(ft_dtype dt, float f) {
  if (dt == FT_DTYPE_BF16) return ft_bf16_to_f32(ft_f32_to_bf16(f));
  if (dt == FT_DTYPE_F16) return ft_f16_to_f32(ft_f32_to_f16(f));
  return f;
}

double ft_elem_to_double(ft_dtype dt, const void *base, size_t i) {
  if (dt == FT_DTYPE_F32) return ((const float *)base)[i];
  const uint16_t h = ((const uint16_t *)base)[i];
  return dt == FT_DTYPE_BF16 ? ft_bf16_to_f32(h) : ft_f16_to_f32(h);
}
