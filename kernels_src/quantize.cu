// fusedtune: the fp8 (e4m3) quantizer (src/quantize.c). A bf16, fp16 or fp32 matrix [rows, cols]
// row-major becomes e4m3 codes and fp32 scales: scale = amax / 448 (1 where amax is 0) over a row
// (per token for x, per output channel for W) or over the whole tensor, then each value v is
// stored as e4m3(v / scale), rounded to nearest even and saturated to +-448. Every operation is
// IEEE-rounded (__fdiv_rn, no fast division), so src/e4m3.c's host model gives the same bytes.
// Compiled alone by NVRTC for sm_89+ (cvt to e4m3): no fusedtune header.

__device__ __forceinline__ float ft_q_load(const void *src, int dtype, unsigned long long i) {
  if (dtype == 0) return static_cast<const float *>(src)[i];
  const unsigned short h = static_cast<const unsigned short *>(src)[i];
  if (dtype == 1) return __uint_as_float((unsigned)h << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

__device__ __forceinline__ unsigned char ft_q_e4m3(float v) {
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(v));
  return (unsigned char)(pair & 0xffu);
}

__device__ __forceinline__ float ft_q_scale(float amax) { return amax > 0.0f ? __fdiv_rn(amax, 448.0f) : 1.0f; }

// The largest |v| of the block's elements [begin, end), strided, to every thread.
__device__ __forceinline__ float ft_q_block_amax(const void *src, int dtype, unsigned long long begin,
                                                 unsigned long long end, unsigned long long stride) {
  __shared__ float part[32];
  float a = 0.0f;
  for (unsigned long long i = begin; i < end; i += stride) a = fmaxf(a, fabsf(ft_q_load(src, dtype, i)));
  for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = a;
  __syncthreads();
  a = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0f;
  if (threadIdx.x < 32)
    for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
  if (threadIdx.x == 0) part[0] = a;
  __syncthreads();
  a = part[0];
  __syncthreads(); /* part reusable */
  return a;
}

// Per row: one block per row, its scale and its codes.
extern "C" __global__ void ft_quant_rows(const void *src, int dtype, long long rows, long long cols,
                                         unsigned char *dst, float *scales) {
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const unsigned long long base = (unsigned long long)r * (unsigned long long)cols;
    const float s = ft_q_scale(ft_q_block_amax(src, dtype, base + threadIdx.x, base + cols, blockDim.x));
    if (threadIdx.x == 0) scales[r] = s;
    for (unsigned long long i = base + threadIdx.x; i < base + cols; i += blockDim.x)
      dst[i] = ft_q_e4m3(__fdiv_rn(ft_q_load(src, dtype, i), s));
  }
}

// Per tensor, step 1: the amax's bits into *amax (zeroed before; |v| orders as its bits).
extern "C" __global__ void ft_quant_amax(const void *src, int dtype, unsigned long long n, unsigned *amax) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const float a = ft_q_block_amax(src, dtype, (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x, n, stride);
  if (threadIdx.x == 0) atomicMax(amax, __float_as_uint(a));
}

// Per tensor, step 2: the codes, with the scale of *amax.
extern "C" __global__ void ft_quant_apply(const void *src, int dtype, unsigned long long n, const unsigned *amax,
                                          unsigned char *dst) {
  const float s = ft_q_scale(__uint_as_float(*amax));
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    dst[i] = ft_q_e4m3(__fdiv_rn(ft_q_load(src, dtype, i), s));
}

// Per tensor, step 3: the amax's bits at *scale become the scale.
extern "C" __global__ void ft_quant_finish(float *scale) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *scale = ft_q_scale(__uint_as_float(*reinterpret_cast<unsigned *>(scale)));
}
