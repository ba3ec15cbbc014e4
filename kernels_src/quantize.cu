// fusedtune: the fp8 (e4m3) quantizer (src/api/quantize.c). A bf16, fp16 or fp32 matrix [rows, cols]
// row-major becomes e4m3 codes and fp32 scales: scale = amax / 448 (1 where amax is 0) over a row
// (per token for x, per output channel for W) or over the whole tensor, then each value v is
// stored as e4m3(v / scale), rounded to nearest even and saturated to +-448. Every operation is
// IEEE-rounded (__fdiv_rn, no fast division), so src/epilogue/e4m3.c's host model gives the same bytes.
// Memory is read in chunks of 16 bytes (8 bf16/fp16, 4 fp32) and codes stored 4 or 8 bytes at a
// time where the host found the pointers and the row length aligned, else one element at a time.
// Compiled alone by NVRTC for sm_89+ (cvt to e4m3): no fusedtune header.

// The element of ft_dtype DT (0 fp32, 1 bf16, 2 fp16): its width and its value as a float.
template <int DT> struct ft_q_elem {
  static constexpr int bytes = DT == 0 ? 4 : 2;
  static __device__ __forceinline__ float value(unsigned b) {
    if constexpr (DT == 0) return __uint_as_float(b);
    if constexpr (DT == 1) return __uint_as_float(b << 16);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)b));
    return f;
  }
};

__device__ __forceinline__ float ft_q_scale(float amax) { return amax > 0.0f ? __fdiv_rn(amax, 448.0f) : 1.0f; }

// Two codes, lo's in the low byte (the lower address).
__device__ __forceinline__ unsigned ft_q_e4m3x2(float lo, float hi) {
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(hi), "f"(lo));
  return pair;
}

// V consecutive elements read as one access: 16 bytes (V = 16 / element bytes) or one element.
template <int DT, int V> struct ft_q_chunk {
  typedef ft_q_elem<DT> E;
  static_assert(V == 1 || V * E::bytes == 16, "a chunk is one element or 16 bytes");
  static constexpr int words = V == 1 ? 1 : 4;
  unsigned w[words];

  __device__ __forceinline__ void load(const unsigned char *p) {
    if constexpr (V == 1) {
      if constexpr (E::bytes == 4) w[0] = *reinterpret_cast<const unsigned *>(p);
      else w[0] = *reinterpret_cast<const unsigned short *>(p);
    } else {
      const uint4 u = *reinterpret_cast<const uint4 *>(p);
      w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
    }
  }
  __device__ __forceinline__ float at(int i) const {
    if constexpr (E::bytes == 4 || V == 1) return E::value(w[i]);
    else return E::value(i % 2 ? w[i / 2] >> 16 : w[i / 2] & 0xffffu);
  }
  __device__ __forceinline__ float amax(float a) const {
#pragma unroll
    for (int i = 0; i < V; i++) a = fmaxf(a, fabsf(at(i)));
    return a;
  }
  // The V codes of v / s at d (V bytes, aligned to V).
  __device__ __forceinline__ void store(unsigned char *d, float s) const {
    if constexpr (V == 1) {
      *d = (unsigned char)(ft_q_e4m3x2(__fdiv_rn(at(0), s), 0.0f) & 0xffu);
    } else {
      unsigned q[V / 4];
#pragma unroll
      for (int i = 0; i < V; i += 4)
        q[i / 4] = ft_q_e4m3x2(__fdiv_rn(at(i), s), __fdiv_rn(at(i + 1), s)) |
                   ft_q_e4m3x2(__fdiv_rn(at(i + 2), s), __fdiv_rn(at(i + 3), s)) << 16;
      if constexpr (V == 8) *reinterpret_cast<uint2 *>(d) = make_uint2(q[0], q[1]);
      else *reinterpret_cast<unsigned *>(d) = q[0];
    }
  }
};

// The largest a of each aligned group of `group` threads (a power of two; every thread of the
// block calls it once per launch) to every thread of the group.
__device__ __forceinline__ float ft_q_group_max(float a, int group) {
  for (int o = (group < 32 ? group : 32) / 2; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
  if (group <= 32) return a;
  __shared__ float part[32];
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = a;
  __syncthreads();
  const int first = (int)(threadIdx.x / 32) & ~(group / 32 - 1);
  for (int w = 0; w < group / 32; w++) a = fmaxf(a, part[first + w]);
  return a;
}

// Chunks a thread keeps in registers: a row of up to group * kHeld chunks is read once.
enum { kHeld = 8 };

// Per row: `group` threads (1..1024, a power of two) per row, blockDim / group rows per block.
// The row's chunks are strided over its threads; it is read once into registers when it fits
// (group * kHeld chunks), else twice (the amax, then the codes).
template <int DT, int V> struct ft_q_rows {
  static __device__ __forceinline__ void run(const unsigned char *src, long long rows, long long cols, int group,
                                             unsigned char *dst, float *scales) {
    typedef ft_q_chunk<DT, V> C;
    const int lane = (int)threadIdx.x & (group - 1);
    const long long r = (long long)blockIdx.x * (blockDim.x / group) + threadIdx.x / group;
    const bool live = r < rows;
    const long long n = cols / V; // V divides cols (the host's choice)
    const unsigned char *row = src + (live ? r : 0) * cols * C::E::bytes;
    unsigned char *drow = dst + (live ? r : 0) * cols;
    const bool held = n <= (long long)group * kHeld;
    C c[kHeld];
    float a = 0.0f;
    if (held) {
#pragma unroll
      for (int j = 0; j < kHeld; j++) {
        const long long i = lane + (long long)j * group;
        if (live && i < n) c[j].load(row + i * V * C::E::bytes);
      }
#pragma unroll
      for (int j = 0; j < kHeld; j++)
        if (live && lane + (long long)j * group < n) a = c[j].amax(a);
    } else if (live) {
      for (long long i = lane; i < n; i += group) {
        C t;
        t.load(row + i * V * C::E::bytes);
        a = t.amax(a);
      }
    }
    const float s = ft_q_scale(ft_q_group_max(a, group));
    if (!live) return;
    if (lane == 0) scales[r] = s;
    if (held) {
#pragma unroll
      for (int j = 0; j < kHeld; j++) {
        const long long i = lane + (long long)j * group;
        if (i < n) c[j].store(drow + i * V, s);
      }
    } else {
      for (long long i = lane; i < n; i += group) {
        C t;
        t.load(row + i * V * C::E::bytes);
        t.store(drow + i * V, s);
      }
    }
  }
};

// Per tensor, the elements [0, n) grid-strided: n / V chunks, then the last n % V one by one.
template <int DT, int V> struct ft_q_tensor {
  typedef ft_q_chunk<DT, V> C;
  typedef ft_q_chunk<DT, 1> One;
  static __device__ __forceinline__ unsigned long long first() {
    return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  }
  static __device__ __forceinline__ unsigned long long stride() { return (unsigned long long)gridDim.x * blockDim.x; }

  // The amax's bits into *amax (|v| orders as its bits).
  static __device__ __forceinline__ void amax(const unsigned char *src, unsigned long long n, unsigned *amax) {
    float a = 0.0f;
    for (unsigned long long i = first(); i < n / V; i += stride()) {
      C c;
      c.load(src + i * V * C::E::bytes);
      a = c.amax(a);
    }
    for (unsigned long long i = n / V * V + first(); i < n; i += stride()) {
      One c;
      c.load(src + i * C::E::bytes);
      a = c.amax(a);
    }
    a = ft_q_group_max(a, (int)blockDim.x);
    if (threadIdx.x == 0) atomicMax(amax, __float_as_uint(a));
  }
  // The codes, with the scale of the amax's bits at *amax.
  static __device__ __forceinline__ void apply(const unsigned char *src, unsigned long long n, const unsigned *amax,
                                               unsigned char *dst) {
    const float s = ft_q_scale(__uint_as_float(*amax));
    for (unsigned long long i = first(); i < n / V; i += stride()) {
      C c;
      c.load(src + i * V * C::E::bytes);
      c.store(dst + i * V, s);
    }
    for (unsigned long long i = n / V * V + first(); i < n; i += stride()) {
      One c;
      c.load(src + i * C::E::bytes);
      c.store(dst + i, s);
    }
  }
};

// The instance of Body for dtype (0 fp32, 1 bf16, 2 fp16) and vec (16-byte chunks, else one
// element); the branch is uniform over the launch.
template <template <int, int> class Body> struct ft_q_pick {
  template <typename F> static __device__ __forceinline__ void with(int dtype, int vec, F &&f) {
    if (dtype == 0) vec ? f(Body<0, 4>()) : f(Body<0, 1>());
    else if (dtype == 1) vec ? f(Body<1, 8>()) : f(Body<1, 1>());
    else vec ? f(Body<2, 8>()) : f(Body<2, 1>());
  }
};

extern "C" __global__ void __launch_bounds__(1024)
    ft_quant_rows(const void *src, int dtype, int vec, long long rows, long long cols, int group, unsigned char *dst,
                  float *scales) {
#if __CUDA_ARCH__ >= 900
  /* The GEMM after it (launched with programmatic stream serialization) may start its prologue now;
   * it waits (griddepcontrol.wait) for this grid to finish before reading x's codes or scales. */
  asm volatile("griddepcontrol.launch_dependents;");
#endif
  ft_q_pick<ft_q_rows>::with(dtype, vec, [&](auto body) {
    body.run(static_cast<const unsigned char *>(src), rows, cols, group, dst, scales);
  });
}

// Per tensor, step 1: the amax's bits into *amax (zeroed before).
extern "C" __global__ void ft_quant_amax(const void *src, int dtype, int vec, unsigned long long n, unsigned *amax) {
  ft_q_pick<ft_q_tensor>::with(dtype, vec,
                               [&](auto body) { body.amax(static_cast<const unsigned char *>(src), n, amax); });
}

// Per tensor, step 2: the codes, with the scale of *amax.
extern "C" __global__ void ft_quant_apply(const void *src, int dtype, int vec, unsigned long long n,
                                          const unsigned *amax, unsigned char *dst) {
  ft_q_pick<ft_q_tensor>::with(dtype, vec,
                               [&](auto body) { body.apply(static_cast<const unsigned char *>(src), n, amax, dst); });
}

// Per tensor, step 3: the amax's bits at *scale become the scale.
extern "C" __global__ void ft_quant_finish(float *scale) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *scale = ft_q_scale(__uint_as_float(*reinterpret_cast<unsigned *>(scale)));
}
