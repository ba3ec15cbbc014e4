// fusedtune GEMM pieces shared by the kernel templates (gemm_fp32.cu, gemm_fp32_warp.cu):
// block rasterization, the split-K slice of a block, a block's tile origin, the store of a float4 group of outputs
// through E, the deterministic split-K reduction and the stream-K fixup. Appended by codegen
// before the template.

#ifndef FT_STREAMK
#define FT_STREAMK 0 // stream-K blocks (gemm_fp32_warp.cu only); 0 = one block per tile and slice
#endif

FT_DEFINE_APPLY_EPILOGUE()

// Tile index -> (tile row, tile column), FT_SWIZZLE tile rows walked column by column
// (ft_grouped_coords).
__device__ __forceinline__ void ft_tile_coords(int bid, int tiles_m, int tiles_n, int &bm, int &bn) {
  ft_grouped_coords<FT_SWIZZLE>(bid, tiles_m, tiles_n, bm, bn);
}

__device__ __forceinline__ void ft_block_tile(int tiles_m, int tiles_n, int &bm, int &bn) {
  ft_tile_coords((int)blockIdx.x, tiles_m, tiles_n, bm, bn);
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

// Four outputs (row, col .. col + 3) to dst = &row[col]: one float4 store when the row holds
// whole vectors, else only the columns inside the matrix.
__device__ __forceinline__ void ft_store4(float *dst, const float *o, int col, int N) {
  if ((N & 3) == 0 && col + 3 < N && ((unsigned long long)dst & 15) == 0) {
    *reinterpret_cast<float4 *>(dst) = make_float4(o[0], o[1], o[2], o[3]);
  } else {
#pragma unroll
    for (int e = 0; e < 4; e++)
      if (col + e < N) dst[e] = o[e];
  }
}

// E applied to the sums v of (row, col .. col + 3), stored to Y.
__device__ __forceinline__ void ft_store_y(float *__restrict__ Y, const float *v, int row, int col, int N,
                                           const FtEpArgs &ep) {
  float o[4];
#pragma unroll
  for (int e = 0; e < 4; e++) /* E may read vectors at col + e: only inside the matrix */
    o[e] = col + e < N ? ft_apply_epilogue(v[e], row, col + e, ep) : 0.0f;
  ft_store4(Y + (size_t)row * (size_t)N + col, o, col, N);
}

// The output of one float4 group, (row, col .. col + 3), through E (or raw partials
// into the split-K workspace slice).
__device__ __forceinline__ void ft_store_group(float *__restrict__ Y, float *__restrict__ WS,
                                               const float *v, int row, int col, int M, int N,
                                               const FtEpArgs &ep) {
#if FT_SPLIT_K > 1
  (void)Y;
  (void)ep;
  ft_store4(WS + ((size_t)blockIdx.z * (size_t)M + (size_t)row) * (size_t)N + col, v, col, N);
#else
  (void)WS;
  (void)M;
  ft_store_y(Y, v, row, col, N, ep);
#endif
}

#if FT_AUX_ELEMS != 4
#error "fusedtune: the reduction kernels take 4 elements (one float4) per thread"
#endif

#if FT_SPLIT_K > 1
// Y = E(sum of the S slices of WS), slices added in index order so the result is the same on
// every run. Four consecutive elements per thread; float4 when a row holds whole vectors.
extern "C" __global__ void __launch_bounds__(FT_AUX_BLOCK)
ft_splitk_reduce(const float *__restrict__ WS, float *__restrict__ Y, int M, int N, int S,
                 FtEpArgs ep) {
  const size_t total = (size_t)M * (size_t)N;
  const size_t base = ((size_t)blockIdx.x * FT_AUX_BLOCK + threadIdx.x) * FT_AUX_ELEMS;
  if (base >= total) return;
  int row, col;
  ft_rowcol(base, total, N, row, col);
  if ((N & 3) == 0) {
    float4 s = *reinterpret_cast<const float4 *>(WS + base);
    for (int z = 1; z < S; z++) {
      const float4 p = *reinterpret_cast<const float4 *>(WS + (size_t)z * total + base);
      s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w;
    }
    const float a[4] = {s.x, s.y, s.z, s.w};
    float o[4];
    ft_aux_lanes<4>(N, row, col, [&](int l, int r, int c) { o[l] = ft_apply_epilogue(a[l], r, c, ep); });
    *reinterpret_cast<float4 *>(Y + base) = make_float4(o[0], o[1], o[2], o[3]);
    return;
  }
  ft_aux_scalar<4>(base, total, N, row, col, [&](unsigned long long e, int r, int c) {
    float s = WS[e];
    for (int z = 1; z < S; z++) s += WS[(size_t)z * total + e];
    Y[e] = ft_apply_epilogue(s, r, c, ep);
  });
}
#endif

#if FT_STREAMK > 0
// Stream-K: the work units, (tile, k tile) pairs in tile-major order, are split evenly over
// FT_STREAMK blocks, so every SM gets the same share however the tiles fall into waves. Block b
// takes units [ft_sk_begin(b), ft_sk_begin(b + 1)): with units = q FT_STREAMK + r, the first r
// blocks take q + 1. A tile that falls to one block gets E and its store there; a tile shared
// by several leaves partials (the block's first tile in its workspace slot 0, its last in
// slot 1, each a whole FT_BM x FT_BN tile) and ft_streamk_fixup adds them.
__device__ __forceinline__ long long ft_sk_begin(long long b, long long units) {
  const long long q = units / FT_STREAMK, r = units % FT_STREAMK;
  return b * q + (b < r ? b : r);
}

// The block whose range holds unit u (< units).
__device__ __forceinline__ int ft_sk_owner(long long u, long long units) {
  const long long q = units / FT_STREAMK, r = units % FT_STREAMK;
  if (u < r * (q + 1)) return (int)(u / (q + 1));
  return (int)(r + (u - r * (q + 1)) / q); /* q > 0 here: u >= r and u < q FT_STREAMK + r */
}

// Block (tile, chunk of 1024 outputs): Y = E(sum of the tile's partials), added in block
// order, which is k order, so the result is the same on every run. Tiles one block finished
// return at once. (One block per tile ran too few threads to keep memory busy.)
extern "C" __global__ void __launch_bounds__(FT_AUX_BLOCK)
ft_streamk_fixup(const float *__restrict__ WS, float *__restrict__ Y, int M, int N, int K,
                 FtEpArgs ep) {
  const int tiles_m = (M + FT_BM - 1) / FT_BM, tiles_n = (N + FT_BN - 1) / FT_BN;
  const int kt = (K + FT_BK - 1) / FT_BK;
  const int tile = (int)blockIdx.x, e = ((int)blockIdx.y * FT_AUX_BLOCK + (int)threadIdx.x) * FT_AUX_ELEMS;
  if (tile >= tiles_m * tiles_n || e >= FT_BM * FT_BN) return;
  const long long units = (long long)tiles_m * tiles_n * kt, u0 = (long long)tile * kt;
  const int b0 = ft_sk_owner(u0, units), b1 = ft_sk_owner(u0 + kt - 1, units);
  if (b0 == b1) return;
  int bm, bn;
  ft_tile_coords(tile, tiles_m, tiles_n, bm, bn);
  const int row = bm * FT_BM + e / FT_BN, col = bn * FT_BN + e % FT_BN;
  if (row >= M || col >= N) return;
  const size_t tile_floats = (size_t)FT_BM * FT_BN;
  /* b0 began before this tile unless its range starts exactly here; the later blocks all
   * began inside it, so it is their first tile (slot 0). */
  const size_t slot0 = (size_t)b0 * 2 + (ft_sk_begin(b0, units) == u0 ? 0 : 1);
  float4 s = *reinterpret_cast<const float4 *>(WS + slot0 * tile_floats + e);
  for (int b = b0 + 1; b <= b1; b++) {
    const float4 p = *reinterpret_cast<const float4 *>(WS + (size_t)b * 2 * tile_floats + e);
    s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w;
  }
  const float v[4] = {s.x, s.y, s.z, s.w};
  ft_store_y(Y, v, row, col, N, ep);
}
#endif
