// fusedtune standalone epilogue pass: Y = E(Y) in place over an [M, N] row-major matrix (the
// "cuBLAS GEMM, then one fused elementwise kernel" strategy).
//
// Variant defines: FT_BLOCK (threads per block), FT_VEC (elements per access: 1, 2, 4) and
// FT_EPT (elements per thread, a multiple of FT_VEC). Block b covers elements
// [b * BLOCK * EPT, ...); its threads step through them FT_VEC at a time, adjacent threads on
// adjacent vectors, so every access of a warp is contiguous. Y holds ft_elem_t and must be
// sizeof(ft_elem_t) * FT_VEC-byte aligned (cudaMalloc is). E is computed in fp32 in every mode;
// 16-bit elements are rounded once, at the store.

FT_DEFINE_APPLY_EPILOGUE()

#if FT_EPT % FT_VEC != 0
#error "fusedtune: FT_EPT must be a multiple of FT_VEC"
#endif

#if FT_DTYPE != 0 && FT_VEC > 1
// 16-bit elements: FT_VEC of them as FT_VEC / 2 32-bit words, one 8- or 4-byte access.
struct alignas(2 * FT_VEC) ft_epi_pack {
  unsigned w[FT_VEC / 2];
};
using ft_epi_vec = ft_epi_pack;
#elif FT_VEC == 4
using ft_epi_vec = float4;
#elif FT_VEC == 2
using ft_epi_vec = float2;
#endif

// Every whole vector of the thread loaded before the first store: in place, each load would
// otherwise wait behind the previous vector's store (one access in flight a thread; SASS). Up to
// four vectors and 32 bytes: eight held across a heavy E's slow-path calls spilled (v2_e16,
// gelu_tanh in bf16), and so did 64 bytes at 512 threads (fp32 v4_e16, mish).
// FT_EPI_LOAD(T): vector c of the thread, at element i, preloaded or read now.
#if FT_VEC > 1 && FT_EPT / FT_VEC <= 4 && FT_EPT * (FT_DTYPE == 0 ? 4 : 2) <= 32
#define FT_EPI_PRELOAD 1
#define FT_EPI_LOAD(T) pre[c]
#else
#define FT_EPI_PRELOAD 0
#define FT_EPI_LOAD(T) (*reinterpret_cast<const T *>(Y + i))
#endif

extern "C" __global__ void __launch_bounds__(FT_BLOCK)
ft_epilogue_pass(ft_elem_t *__restrict__ Y, int M, int N, FtEpArgs ep) {
  const size_t total = (size_t)M * (size_t)N;
  const size_t block_base = (size_t)blockIdx.x * (size_t)(FT_BLOCK * FT_EPT);
#if FT_EPI_PRELOAD
  ft_epi_vec pre[FT_EPT / FT_VEC];
#pragma unroll
  for (int c = 0; c < FT_EPT / FT_VEC; c++) {
    const size_t i = block_base + ((size_t)c * FT_BLOCK + threadIdx.x) * FT_VEC;
    if (i + FT_VEC <= total) pre[c] = *reinterpret_cast<const ft_epi_vec *>(Y + i);
  }
#endif
#pragma unroll
  for (int c = 0; c < FT_EPT / FT_VEC; c++) {
    const size_t i = block_base + ((size_t)c * FT_BLOCK + threadIdx.x) * FT_VEC;
    if (i >= total) return;
    int row, col;
    ft_rowcol(i, total, N, row, col);
#if FT_DTYPE != 0 && FT_VEC > 1
    if (i + FT_VEC <= total) {
      const ft_epi_pack p = FT_EPI_LOAD(ft_epi_pack);
      float v[FT_VEC];
      ft_aux_lanes<FT_VEC>(N, row, col, [&](int l, int r, int cl) {
        v[l] = ft_apply_epilogue(ft_half_of(p.w[l / 2], l % 2), r, cl, ep);
      });
      ft_epi_pack o;
#pragma unroll
      for (int j = 0; j < FT_VEC / 2; j++) o.w[j] = ft_pack2(v[2 * j], v[2 * j + 1]);
      *reinterpret_cast<ft_epi_pack *>(Y + i) = o;
      continue;
    }
#elif FT_VEC == 4
    if (i + 4 <= total) {
      const float4 v = FT_EPI_LOAD(float4);
      const float a[4] = {v.x, v.y, v.z, v.w};
      float o[4];
      ft_aux_lanes<4>(N, row, col, [&](int l, int r, int cl) { o[l] = ft_apply_epilogue(a[l], r, cl, ep); });
      *reinterpret_cast<float4 *>(Y + i) = make_float4(o[0], o[1], o[2], o[3]);
      continue;
    }
#elif FT_VEC == 2
    if (i + 2 <= total) {
      const float2 v = FT_EPI_LOAD(float2);
      const float a[2] = {v.x, v.y};
      float o[2];
      ft_aux_lanes<2>(N, row, col, [&](int l, int r, int cl) { o[l] = ft_apply_epilogue(a[l], r, cl, ep); });
      *reinterpret_cast<float2 *>(Y + i) = make_float2(o[0], o[1]);
      continue;
    }
#endif
    // Scalar path: FT_VEC == 1, or the last partial vector of the matrix.
    ft_aux_scalar<FT_VEC>(i, total, N, row, col, [&](unsigned long long e, int r, int cl) {
      Y[e] = ft_from_float(ft_apply_epilogue(ft_to_float(Y[e]), r, cl, ep));
    });
  }
}
