// fusedtune GEMM pieces shared by the kernel templates (gemm_fp32.cu, gemm_fp32_warp.cu):
// block rasterization, the split-K slice of a block, a block's tile origin, the store of a float4 group of outputs
// through E, and the deterministic split-K reduction. Appended by codegen before the template.

FT_DEFINE_APPLY_EPILOGUE()

// Block -> (tile row, tile column). With FT_SWIZZLE = G, G tile rows are walked column by
// column, so blocks running together share W tiles as well as X tiles in L2.
__device__ __forceinline__ void ft_block_tile(int tiles_m, int tiles_n, int &bm, int &bn) {
  const int bid = (int)blockIdx.x;
#if FT_SWIZZLE > 1
  const int span = FT_SWIZZLE * tiles_n;
  const int group = bid / span;
  const int first = group * FT_SWIZZLE;
  const int rows = min(tiles_m - first, FT_SWIZZLE);
  const int in_group = bid - group * span;
  bm = first + in_group % rows;
  bn = in_group / rows;
#else
  (void)tiles_m;
  bm = bid / tiles_n;
  bn = bid - bm * tiles_n;
#endif
}

// This block's k range [kbeg, kend): whole BK tiles, so vector alignment holds in every slice.
__device__ __forceinline__ void ft_splitk_range(int K, int &kbeg, int &kend) {
  kbeg = 0;
  kend = K;
#if FT_SPLIT_K > 1
  const long long per = ((long long)(K + FT_SPLIT_K - 1) / FT_SPLIT_K + FT_BK - 1) / FT_BK * FT_BK;
  const long long b = (long long)blockIdx.z * per;
  kbeg = (int)(b < K ? b : K);
  kend = (int)(b + per < K ? b + per : K);
#endif
}

// This block's output tile origin (m0, n0) and k range; false for a block outside the tile grid
// (never with the host's grid; keeps a wrong grid in bounds).
__device__ __forceinline__ bool ft_block_setup(int M, int N, int K, int &m0, int &n0, int &kbeg,
                                               int &kend) {
  const int tiles_m = (M + FT_BM - 1) / FT_BM, tiles_n = (N + FT_BN - 1) / FT_BN;
  int bm, bn;
  ft_block_tile(tiles_m, tiles_n, bm, bn);
  if (bm >= tiles_m) return false;
  m0 = bm * FT_BM;
  n0 = bn * FT_BN;
  ft_splitk_range(K, kbeg, kend);
  return true;
}

// The output of one float4 group, (row, col .. col + 3), through E (or raw partials
// into the split-K workspace slice). float4 stores when the row holds whole vectors.
__device__ __forceinline__ void ft_store_group(float *__restrict__ Y, float *__restrict__ WS,
                                               const float *v, int row, int col, int M, int N,
                                               const FtEpArgs &ep) {
#if FT_SPLIT_K > 1
  float *dst = WS + ((size_t)blockIdx.z * (size_t)M + (size_t)row) * (size_t)N + col;
  float o[4] = {v[0], v[1], v[2], v[3]};
  (void)Y;
  (void)ep;
#else
  float *dst = Y + (size_t)row * (size_t)N + col;
  float o[4];
#pragma unroll
  for (int e = 0; e < 4; e++) /* E may read vectors at col + e: only inside the matrix */
    o[e] = col + e < N ? ft_apply_epilogue(v[e], row, col + e, ep) : 0.0f;
  (void)WS;
  (void)M;
#endif
  if ((N & 3) == 0 && col + 3 < N && ((unsigned long long)dst & 15) == 0) {
    *reinterpret_cast<float4 *>(dst) = make_float4(o[0], o[1], o[2], o[3]);
  } else {
#pragma unroll
    for (int e = 0; e < 4; e++)
      if (col + e < N) dst[e] = o[e];
  }
}

#if FT_SPLIT_K > 1
// Y = E(sum of the S slices of WS), slices added in index order so the result is the same on
// every run. Four consecutive elements per thread; float4 when a row holds whole vectors.
extern "C" __global__ void __launch_bounds__(256)
ft_splitk_reduce(const float *__restrict__ WS, float *__restrict__ Y, int M, int N, int S,
                 FtEpArgs ep) {
  const size_t total = (size_t)M * (size_t)N;
  const size_t base = ((size_t)blockIdx.x * 256 + threadIdx.x) * 4;
  if (base >= total) return;
  int row, col;
  ft_rowcol(base, total, N, row, col);
  if ((N & 3) == 0) {
    float4 s = *reinterpret_cast<const float4 *>(WS + base);
    for (int z = 1; z < S; z++) {
      const float4 p = *reinterpret_cast<const float4 *>(WS + (size_t)z * total + base);
      s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w;
    }
    float4 o;
    o.x = ft_apply_epilogue(s.x, row, col, ep);
    o.y = ft_apply_epilogue(s.y, row, col + 1, ep);
    o.z = ft_apply_epilogue(s.z, row, col + 2, ep);
    o.w = ft_apply_epilogue(s.w, row, col + 3, ep);
    *reinterpret_cast<float4 *>(Y + base) = o;
    return;
  }
  for (int e = 0; e < 4 && base + e < total; e++) {
    float s = WS[base + e];
    for (int z = 1; z < S; z++) s += WS[(size_t)z * total + base + e];
    Y[base + e] = ft_apply_epilogue(s, row, col, ep);
    ft_rowcol_next(N, row, col);
  }
}
#endif
