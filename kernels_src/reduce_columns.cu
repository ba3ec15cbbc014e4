// fusedtune reduction pass, column form (FT_RED_FORM 2): batchnorm in place on y in two kernels.
// ft_reduce_pass (ft_red_colstats) takes a strip of 32 * FT_VEC columns (a lane's FT_VEC each) and
// a tile of FT_RED_TILE rows per block (grid: strips x tiles); each thread folds its rows (the
// block's warps take every kRedWarps-th row) kColBatch at a time: the batch's loads all issued
// first, its mean and sum of squared deviations taken from registers (two passes), then merged
// into the running pair (Chan); the warps' states are merged in order, and the tile's (mean, M2)
// per column goes to the workspace. The last block of a strip to finish (a counter per strip in
// flags, left zero again)
// merges the strip's tiles in tile order (Chan's formula) into each column's mean and 1 / std. So
// y is read twice and written once, and the result does not depend on which block finished last.
// The statistics take the tiles bottom-first: the GEMM before them (and the previous call's apply)
// wrote the last rows last, so those are still in L2; ft_reduce_apply then normalizes y top-first,
// starting where the statistics ended. Workspace: tiles x N float2 partials, then N float2 statistics.
// FT_RED_FORM 3 (softmax or log_softmax of batchnorm's values): the same statistics of batchnorm's
// argument, then ft_reduce_apply takes a row per block (the block-per-row form of reduce_pass.cu),
// each value normalized by its column's statistics as it is read.
// FT_RED_GEMM 1 (after family tc_pass's GEMM, forms 2 and 3): the GEMM wrote a partial per 64 rows
// from its accumulator (tc_colstats.cuh), so ft_reduce_pass only merges them (ft_red_colmerge) and
// y is read once, by the apply kernel.

constexpr int kColTile = FT_RED_FORM == 2 || FT_RED_FORM == 3 ? FT_RED_TILE : 1;
constexpr int kColWidth = 32 * FT_VEC;
constexpr bool kColFromGemm = FT_RED_GEMM != 0;
// Rows of a partial in the workspace: a tile's, or the GEMM's m64 block's.
constexpr int kColPartRows = kColFromGemm ? 64 : kColTile;
static_assert(!kColFromGemm || FT_RED_FORM == 2 || FT_RED_FORM == 3, "fusedtune: the GEMM's partials are the column form's");
// Rows a warp has in flight: each load is issued before the batch's arithmetic (a load per row,
// then a division, let one row in flight per warp, and the in-place apply's stores kept the next
// load behind them: about 2.7 TB/s on the H200, docs/BENCHMARKS.md 2026-12-07 (n)).
constexpr int kColBatch = 4;
// Tile partials the strip's merge loads at once (tiles merge in order, as before).
constexpr int kColMergeBatch = 4;

// Rows of the batch at rb (rb, rb + kRedWarps, ... below r1; rb < r1): at least 1.
__device__ __forceinline__ int ft_col_batch_rows(int rb, int r1) {
  return min(kColBatch, (r1 - rb + kRedWarps - 1) / kRedWarps);
}
static_assert(FT_RED_FORM != 2 || kRedKind == 9, "fusedtune: the column form computes batchnorm");
static_assert(FT_RED_FORM != 3 || kRedKind == 6 || kRedKind == 7,
              "fusedtune: the column-then-row form computes softmax or log_softmax of batchnorm");
static_assert((FT_RED_FORM != 2 && FT_RED_FORM != 3) || (kColTile >= kRedWarps && kColTile % kRedWarps == 0),
              "fusedtune: a tile gives every warp the same number of rows");

// (n, mean, m2) merged with (nb, mb, qb), Chan et al.; an empty side changes nothing (and an empty
// first side takes the other as it is: no d * d * 0, which a huge mean would make inf * 0).
__device__ __forceinline__ void ft_col_merge(float &n, float &mean, float &m2, float nb, float mb, float qb) {
  if (nb == 0.0f) return;
  if (n == 0.0f) {
    n = nb, mean = mb, m2 = qb;
    return;
  }
  const float t = n + nb, d = mb - mean, f = nb / t;
  m2 = m2 + qb + d * d * n * f;
  mean = fmaf(d, f, mean);
  n = t;
}

// Rows r0 + w, r0 + w + kRedWarps, ... below r1: how many warp w folds.
__device__ __forceinline__ float ft_col_count(int r0, int r1, int w) {
  return r1 - r0 > w ? (float)((r1 - r0 - w + kRedWarps - 1) / kRedWarps) : 0.0f;
}

// The GEMM's partials merged (kColFromGemm): a block per 32 columns, a lane per column; warp w
// merges the partials of its contiguous share in order, then warp 0 the warps' results in order
// (the same bits every run), into each column's mean and 1 / std after the partials.
__device__ __forceinline__ void ft_red_colmerge(float2 *ws, int M, int N) {
  constexpr int kBatch = 8; // partials in flight a lane
  __shared__ float part[3][kRedWarps][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, col = (int)blockIdx.x * 32 + lane;
  const int parts = (M + kColPartRows - 1) / kColPartRows;
  const int i0 = (int)((long long)parts * warp / kRedWarps), i1 = (int)((long long)parts * (warp + 1) / kRedWarps);
  float n = 0.0f, mu = 0.0f, q = 0.0f;
  if (col < N)
    for (int b = i0; b < i1; b += kBatch) {
      float2 p[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; u++)
        if (b + u < i1) p[u] = ws[(size_t)(b + u) * (size_t)N + col];
#pragma unroll
      for (int u = 0; u < kBatch; u++) {
        const int i = b + u;
        if (i < i1) ft_col_merge(n, mu, q, (float)(min(M, (i + 1) * kColPartRows) - i * kColPartRows), p[u].x, p[u].y);
      }
    }
  part[0][warp][lane] = n, part[1][warp][lane] = mu, part[2][warp][lane] = q;
  __syncthreads();
  if (warp != 0 || col >= N) return;
  n = mu = q = 0.0f;
  for (int w = 0; w < kRedWarps; w++) ft_col_merge(n, mu, q, part[0][w][lane], part[1][w][lane], part[2][w][lane]);
  ws[(size_t)parts * (size_t)N + col] = make_float2(mu, 1.0f / sqrtf(q / (float)M + kRedNormEps));
}

__device__ __forceinline__ void ft_red_colstats(const ft_elem_t *y, float2 *ws, unsigned *flags, int M, int N,
                                                const FtEpArgs &ep) {
  if constexpr (kColFromGemm) {
    (void)y, (void)flags, (void)ep;
    ft_red_colmerge(ws, M, N);
    return;
  }
  __shared__ float2 part[kRedWarps][kColWidth];
  __shared__ bool last;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, tiles = (int)gridDim.y;
  const int tile = tiles - 1 - (int)blockIdx.y; // bottom-first (the header says why)
  const int r0 = tile * kColTile, r1 = min(M, r0 + kColTile), c0 = (int)blockIdx.x * kColWidth;
  const int col = c0 + lane * FT_VEC;
  float mean[FT_VEC], m2[FT_VEC];
#pragma unroll
  for (int l = 0; l < FT_VEC; l++) mean[l] = m2[l] = 0.0f;
  if (col < N) {
    float n = 0.0f;
    for (int rb = r0 + warp; rb < r1; rb += kColBatch * kRedWarps) {
      const int nb = ft_col_batch_rows(rb, r1);
      FtRedPack q[kColBatch];
#pragma unroll
      for (int u = 0; u < kColBatch; u++)
        if (u < nb) q[u] = *reinterpret_cast<const FtRedPack *>(y + (size_t)(rb + u * kRedWarps) * (size_t)N + col);
      const float fb = (float)nb, inv = nb == kColBatch ? 1.0f / kColBatch : 1.0f / fb, t = n + fb, f = fb / t;
#pragma unroll
      for (int l = 0; l < FT_VEC; l++) {
        float x[kColBatch], sum = 0.0f, q2 = 0.0f;
#pragma unroll
        for (int u = 0; u < kColBatch; u++) {
          x[u] = u < nb ? ft_red_col_arg(ft_to_float(q[u].e[l]), rb + u * kRedWarps, col + l, ep) : 0.0f;
          sum += x[u];
        }
        const float mb = sum * inv;
#pragma unroll
        for (int u = 0; u < kColBatch; u++)
          if (u < nb) q2 = fmaf(x[u] - mb, x[u] - mb, q2);
        if (n == 0.0f) { // the first batch as it is (no d * d * 0: a huge mean would make inf * 0)
          mean[l] = mb, m2[l] = q2;
        } else {
          const float d = mb - mean[l];
          m2[l] = m2[l] + q2 + d * d * n * f;
          mean[l] = fmaf(d, f, mean[l]);
        }
      }
      n = t;
    }
  }
#pragma unroll
  for (int l = 0; l < FT_VEC; l++) part[warp][lane * FT_VEC + l] = make_float2(mean[l], m2[l]);
  __syncthreads();
  for (int t = threadIdx.x; t < kColWidth && c0 + t < N; t += FT_BLOCK) {
    float n = 0.0f, mu = 0.0f, q = 0.0f;
    for (int w = 0; w < kRedWarps; w++) ft_col_merge(n, mu, q, ft_col_count(r0, r1, w), part[w][t].x, part[w][t].y);
    ws[(size_t)tile * (size_t)N + c0 + t] = make_float2(mu, q);
  }
  __threadfence(); // the partials are visible before the count says so
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&flags[blockIdx.x], 1u) == (unsigned)tiles - 1u;
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int t = threadIdx.x; t < kColWidth && c0 + t < N; t += FT_BLOCK) {
    float n = 0.0f, mu = 0.0f, q = 0.0f;
    for (int i0 = 0; i0 < tiles; i0 += kColMergeBatch) { // the batch's loads first: one L2 trip a batch
      float2 p[kColMergeBatch];
#pragma unroll
      for (int u = 0; u < kColMergeBatch; u++)
        if (i0 + u < tiles) p[u] = __ldcg(ws + (size_t)(i0 + u) * (size_t)N + c0 + t); // L2: other blocks wrote it
#pragma unroll
      for (int u = 0; u < kColMergeBatch; u++) {
        const int i = i0 + u;
        if (i < tiles) ft_col_merge(n, mu, q, (float)(min(M, (i + 1) * kColTile) - i * kColTile), p[u].x, p[u].y);
      }
    }
    ws[(size_t)tiles * (size_t)N + c0 + t] = make_float2(mu, 1.0f / sqrtf(q / (float)M + kRedNormEps));
  }
  if (threadIdx.x == 0) flags[blockIdx.x] = 0u;
}

extern "C" __global__ void __launch_bounds__(FT_BLOCK)
ft_reduce_apply(ft_elem_t *y, const float2 *ws, int M, int N, FtEpArgs ep) {
  if constexpr (kRedForm == 2) {
    // Top-first, where the statistics ended; after the GEMM's partials bottom-first, where it ended.
    const int strip = (int)blockIdx.x, tile = kColFromGemm ? (int)(gridDim.y - 1 - blockIdx.y) : (int)blockIdx.y;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, col = strip * kColWidth + lane * FT_VEC;
    if (col >= N) return;
    const float2 *st = ws + (size_t)((M + kColPartRows - 1) / kColPartRows) * (size_t)N + col;
    float mean[FT_VEC], rstd[FT_VEC];
#pragma unroll
    for (int l = 0; l < FT_VEC; l++) mean[l] = st[l].x, rstd[l] = st[l].y;
    const int r1 = min(M, (tile + 1) * kColTile);
    for (int rb = tile * kColTile + warp; rb < r1; rb += kColBatch * kRedWarps) {
      const int nb = ft_col_batch_rows(rb, r1);
      FtRedPack q[kColBatch]; // the batch's loads before its stores (y is written in place)
#pragma unroll
      for (int u = 0; u < kColBatch; u++)
        if (u < nb) q[u] = *reinterpret_cast<const FtRedPack *>(y + (size_t)(rb + u * kRedWarps) * (size_t)N + col);
#pragma unroll
      for (int u = 0; u < kColBatch; u++) {
        if (u >= nb) break;
        const int r = rb + u * kRedWarps;
        FtRedPack o;
#pragma unroll
        for (int l = 0; l < FT_VEC; l++) {
          const float v = (ft_red_inner(ft_to_float(q[u].e[l]), r, col + l, ep) - mean[l]) * rstd[l];
          o.e[l] = ft_from_float(ft_red_post(v, r, col + l, ep));
        }
        *reinterpret_cast<FtRedPack *>(y + (size_t)r * (size_t)N + col) = o;
      }
    }
  } else if constexpr (kRedForm == 3) { // a block per row (grid M), y in place
    const float2 *st = ws + (size_t)((M + kColPartRows - 1) / kColPartRows) * (size_t)N;
    ft_red_rows(y, N, y, nullptr, M, N, 0, N, ep, [&](int row, int col, float x) {
      const float2 c = st[col];
      return (ft_red_norm_arg(x, row, col, ep) - c.x) * c.y;
    });
  }
}
