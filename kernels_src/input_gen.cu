// fusedtune: a problem's inputs made on the GPU (src/gpu/verify.c), so that a large W need not be
// generated, rounded and widened on the host and copied over twice. Element i of a uniform array
// on [lo, lo + span) exactly as the host's ft_fill_uniform makes it (splitmix64's i-th output,
// its top 24 bits as a float in [0, 1), then lo + span u with each operation rounded on its
// own, no fused multiply-add), rounded to the element type the way the host rounds (to nearest
// even, by integer arithmetic on the bits), written in that type to elem and, widened, to ref
// (what the float64 reference multiplies). dtype as ft_dtype: 0 fp32, 1 bf16, 2 fp16.
// Compiled alone by NVRTC: no fusedtune header.

__device__ __forceinline__ unsigned long long ft_mix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__device__ __forceinline__ unsigned short ft_gen_bf16(unsigned u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

__device__ __forceinline__ unsigned short ft_gen_f16(unsigned bits) {
  const unsigned u = bits & 0x7fffffffu;
  const unsigned short sign = (unsigned short)((bits >> 16) & 0x8000u);
  if (u > 0x7f800000u) return sign | 0x7e00u;
  if (u >= 0x477ff000u) return sign | 0x7c00u;
  if (u <= 0x33000000u) return sign;
  unsigned mant, shift, h;
  if (u >= 0x38800000u) {
    mant = u & 0x1fffu;
    h = ((((u >> 23) - 112u) << 10) | ((u >> 13) & 0x3ffu));
    shift = 13;
  } else {
    const unsigned m = (u & 0x7fffffu) | 0x800000u;
    shift = 126u - (u >> 23);
    h = m >> shift;
    mant = m & ((1u << shift) - 1u);
  }
  const unsigned half = 1u << (shift - 1);
  if (mant > half || (mant == half && (h & 1u))) h++;
  return (unsigned short)(sign | h);
}

// The fp16 value h as a float (exact; the generator makes no Inf or NaN).
__device__ __forceinline__ float ft_gen_f16_value(unsigned short h) {
  const unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = __fmul_rn((float)m, 1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}

extern "C" __global__ void ft_make_input(unsigned long long n, unsigned long long s0, float lo, float span, int dtype,
                                         void *elem, double *ref) {
  const unsigned long long golden = 0x9e3779b97f4a7c15ULL;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned long long z = ft_mix64(s0 + (i + 1) * golden);
    const float u = __fmul_rn(__uint2float_rn((unsigned)(z >> 40)), 1.0f / 16777216.0f); /* exact */
    float v = __fadd_rn(lo, __fmul_rn(span, u));
    if (dtype == 1) {
      const unsigned short h = ft_gen_bf16(__float_as_uint(v));
      static_cast<unsigned short *>(elem)[i] = h;
      v = __uint_as_float((unsigned)h << 16);
    } else if (dtype == 2) {
      const unsigned short h = ft_gen_f16(__float_as_uint(v));
      static_cast<unsigned short *>(elem)[i] = h;
      v = ft_gen_f16_value(h);
    } else {
      static_cast<float *>(elem)[i] = v;
    }
    ref[i] = (double)v;
  }
}
