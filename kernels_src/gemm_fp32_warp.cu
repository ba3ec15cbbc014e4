// fusedtune fp32 GEMM, warp-tiled (FT_LAYOUT 3): Y[m,n] = E(sum_k X[m,k] * W[n,k]), X [M,K]
// and W [N,K] row-major (K-contiguous), plain FFMA, each output summed over k in increasing
// order. Same defines and launch as gemm_fp32.cu, except FT_STAGES (tiles in flight, both
// through registers: 1 = the next tile's loads are issued as the current tile's compute starts;
// 2 = issued one tile earlier still, see below), FT_VEC (the width of the global loads of a
// 4-float chunk: 1, 2 or 4) and FT_STREAMK (> 0: a grid of that many blocks sharing the
// (tile, k tile) units evenly, so no SM idles in a last partial wave; see gemm_common.cuh).
//
// Why this shape (profiled with Nsight Compute; docs/BENCHMARKS.md, "Why the search space is
// what it is"). Hopper issues one FFMA per SM sub-partition per clock, so every instruction that
// is not an FFMA costs throughput:
// - Thread tiles of 16x8 (or 8x16) outputs: 6 128-bit shared loads per 128 FFMA. cuBLAS's own
//   SGEMM for these shapes uses the same 128x128x8 tile, 4 warps of 64x64 and 255 registers.
// - Tiles are kept k-major, As[BK][BM + 4] and Bs[BK][BN + 4], so a thread reads 4 consecutive
//   rows (columns) of one of its groups with one LDS.128. The lanes of a warp form an
//   FT_LM x FT_LN grid over a (FT_LM TM) x (FT_LN TN) warp tile (FT_LM 8 when TN > TM, keeping
//   the warp tile square), so one LDS of a warp reads at most 8 distinct vectors.
// - The fragments of k + 1 are read while the FFMA of k run (two register sets); the next
//   global tile is loaded into registers during the whole compute of the current one, then
//   stored transposed into the other shared buffer: one barrier per k tile.
// - Global loads are coalesced (the chunks of one row are adjacent lanes); the +4 padding
//   makes the transposing stores of those lanes land in different banks at bk 8 (at bk 16,
//   chunks 0 and 2 share banks: a 2-way conflict on 8 stores per tile).
// - FFMA in serpentine order, so consecutive FFMA share an operand (register reuse cache).
// The best variants run close to cuBLAS SGEMM's speed, well ahead of the [rows] layout of
// gemm_fp32.cu (docs/BENCHMARKS.md, "Why the search space is what it is").

#define FT_LN (32 / FT_LM)
#define FT_WM (FT_LM * FT_TM)
#define FT_WN (FT_LN * FT_TN)
#define FT_WARPS_N (FT_BN / FT_WN)
#define FT_THREADS ((FT_BM / FT_WM) * FT_WARPS_N * 32)
#define FT_GM (FT_TM / 4)
#define FT_GN (FT_TN / 4)
#define FT_A_CHUNKS (FT_BM * FT_BK / 4)
#define FT_B_CHUNKS (FT_BN * FT_BK / 4)
#define FT_A_LOADS ((FT_A_CHUNKS + FT_THREADS - 1) / FT_THREADS)
#define FT_B_LOADS ((FT_B_CHUNKS + FT_THREADS - 1) / FT_THREADS)
#define FT_LDA (FT_BM + 4)
#define FT_LDB (FT_BN + 4)
#define FT_A_FLOATS (FT_BK * FT_LDA)
#define FT_STAGE_FLOATS (FT_BK * (FT_LDA + FT_LDB))

#if FT_BK % 4 != 0 || FT_TM % 4 != 0 || FT_TN % 4 != 0 || FT_BM % FT_WM != 0 || \
    FT_BN % FT_WN != 0 || FT_BM < 32 || FT_BN < 32 || (FT_LM != 4 && FT_LM != 8)
#error "fusedtune: inconsistent warp-tiled GEMM variant"
#endif
// The host sizes the launch's dynamic shared memory (src/family/family_fp32_warp.c): two stages.
static_assert(FT_SMEM_BYTES == 2 * FT_STAGE_FLOATS * sizeof(float), "fusedtune: shared memory size");

// Loads the 4 k (chunk) of one row from global memory: zero outside the matrix. With FT_VEC 4
// the host guarantees K % 4 == 0 and 16-byte alignment, so a chunk is wholly in or out.
// (Measured: a branch-free form, loading a valid dummy address when masked, ran 1.6x slower.)
__device__ __forceinline__ float4 ft_w_chunk(const float *P, int grow, int nrows, int K, int gk,
                                             int kend) {
  float4 r = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (grow >= nrows) return r;
  const float *p = P + (size_t)grow * (size_t)K + gk;
#if FT_VEC == 4
  if (gk < kend) r = __ldg(reinterpret_cast<const float4 *>(p));
#elif FT_VEC == 2
  if (gk < kend) {
    const float2 t = __ldg(reinterpret_cast<const float2 *>(p));
    r.x = t.x; r.y = t.y;
  }
  if (gk + 2 < kend) {
    const float2 t = __ldg(reinterpret_cast<const float2 *>(p + 2));
    r.z = t.x; r.w = t.y;
  }
#else
  if (gk < kend) r.x = __ldg(p);
  if (gk + 1 < kend) r.y = __ldg(p + 1);
  if (gk + 2 < kend) r.z = __ldg(p + 2);
  if (gk + 3 < kend) r.w = __ldg(p + 3);
#endif
  return r;
}

// Global tile (rows row0.., k k0..) -> registers, LOADS chunks per thread.
template <int ROWS, int LOADS>
__device__ __forceinline__ void ft_w_load(float4 (&r)[LOADS], const float *P, int row0,
                                          int nrows, int K, int k0, int kend) {
#pragma unroll
  for (int l = 0; l < LOADS; l++) {
    const int s = (int)threadIdx.x + l * FT_THREADS;
    if ((ROWS * FT_BK / 4) % FT_THREADS != 0 && s >= ROWS * FT_BK / 4) continue;
    r[l] = ft_w_chunk(P, row0 + s / (FT_BK / 4), nrows, K, k0 + (s % (FT_BK / 4)) * 4, kend);
  }
}

// Registers -> k-major shared tile S[k][ROWS].
template <int ROWS, int LOADS, int LD>
__device__ __forceinline__ void ft_w_store(const float4 (&r)[LOADS], float *S) {
#pragma unroll
  for (int l = 0; l < LOADS; l++) {
    const int s = (int)threadIdx.x + l * FT_THREADS;
    if ((ROWS * FT_BK / 4) % FT_THREADS != 0 && s >= ROWS * FT_BK / 4) continue;
    float *d = S + (s % (FT_BK / 4)) * 4 * LD + s / (FT_BK / 4);
    d[0] = r[l].x;
    d[LD] = r[l].y;
    d[2 * LD] = r[l].z;
    d[3 * LD] = r[l].w;
  }
}

// Fragments of one k: the thread's TM values of A and TN values of B.
__device__ __forceinline__ void ft_w_frag(float4 (&a)[FT_GM], float4 (&b)[FT_GN], const float *As,
                                          const float *Bs, int k, int r0, int c0) {
#pragma unroll
  for (int g = 0; g < FT_GM; g++)
    a[g] = *reinterpret_cast<const float4 *>(As + k * FT_LDA + r0 + g * (FT_LM * 4));
#pragma unroll
  for (int g = 0; g < FT_GN; g++)
    b[g] = *reinterpret_cast<const float4 *>(Bs + k * FT_LDB + c0 + g * (FT_LN * 4));
}

__device__ __forceinline__ void ft_w_fma(float (&acc)[FT_TM][FT_TN], const float4 (&a)[FT_GM],
                                         const float4 (&b)[FT_GN]) {
#pragma unroll
  for (int i = 0; i < FT_TM; i++) {
    const float4 av = a[i / 4];
    const float ai = (i % 4 == 0) ? av.x : (i % 4 == 1) ? av.y : (i % 4 == 2) ? av.z : av.w;
#pragma unroll
    for (int jj = 0; jj < FT_TN; jj++) {
      const int j = (i & 1) ? FT_TN - 1 - jj : jj;  // serpentine: b[j] reused across rows
      const float4 bv = b[j / 4];
      const float bj = (j % 4 == 0) ? bv.x : (j % 4 == 1) ? bv.y : (j % 4 == 2) ? bv.z : bv.w;
      acc[i][j] = fmaf(ai, bj, acc[i][j]);
    }
  }
}

// acc = the sum over k in [kbeg, kend) for the output tile at (m0, n0). Enters with every
// thread past its last read of shared memory (a barrier or the kernel's start).
__device__ __forceinline__ void ft_w_tile(float (&acc)[FT_TM][FT_TN], const float *__restrict__ X,
                                          const float *__restrict__ W, int M, int N, int K, int m0,
                                          int n0, int kbeg, int kend, float *smem, int r0, int c0) {
#pragma unroll
  for (int i = 0; i < FT_TM; i++)
#pragma unroll
    for (int j = 0; j < FT_TN; j++) acc[i][j] = 0.0f;
  const int ntiles = (kend - kbeg + FT_BK - 1) / FT_BK;
  if (ntiles <= 0) return;
  float4 ra[FT_A_LOADS], rb[FT_B_LOADS];
  ft_w_load<FT_BM, FT_A_LOADS>(ra, X, m0, M, K, kbeg, kend);
  ft_w_load<FT_BN, FT_B_LOADS>(rb, W, n0, N, K, kbeg, kend);
  ft_w_store<FT_BM, FT_A_LOADS, FT_LDA>(ra, smem);
  ft_w_store<FT_BN, FT_B_LOADS, FT_LDB>(rb, smem + FT_A_FLOATS);
#if FT_STAGES == 2
  {
    const int k1 = kbeg + (ntiles > 1 ? 1 : 0) * FT_BK;
    ft_w_load<FT_BM, FT_A_LOADS>(ra, X, m0, M, K, k1, kend);
    ft_w_load<FT_BN, FT_B_LOADS>(rb, W, n0, N, K, k1, kend);
  }
#endif
  __syncthreads();
  float4 fa[2][FT_GM], fb[2][FT_GN];
  ft_w_frag(fa[0], fb[0], smem, smem + FT_A_FLOATS, 0, r0, c0);
  // Branch-free body, so ptxas can schedule it as one block: after the last tile the
  // "next" tile is the current one again and goes to the buffer nobody reads any more.
  for (int t = 0; t < ntiles; t++) {
    const float *cur = smem + (t & 1) * FT_STAGE_FLOATS;
    float *nxt = smem + ((t + 1) & 1) * FT_STAGE_FLOATS;
#if FT_STAGES == 1
    const int k0 = kbeg + (t + 1 < ntiles ? t + 1 : t) * FT_BK;
    ft_w_load<FT_BM, FT_A_LOADS>(ra, X, m0, M, K, k0, kend);
    ft_w_load<FT_BN, FT_B_LOADS>(rb, W, n0, N, K, k0, kend);
#endif
#pragma unroll
    for (int k = 0; k < FT_BK; k++) {
      if (k == FT_BK - 1) {
        // Buffer nxt was last read before the previous barrier: fill it, publish it, and
        // read the first fragments of the next tile while the last FFMA of this one run.
        ft_w_store<FT_BM, FT_A_LOADS, FT_LDA>(ra, nxt);
        ft_w_store<FT_BN, FT_B_LOADS, FT_LDB>(rb, nxt + FT_A_FLOATS);
#if FT_STAGES == 2
        // Loads of tile t + 2 before the barrier, which ptxas does not move them across:
        // a whole tile of compute hides their latency. With stages 1 ptxas sinks the loads
        // it finds at the top of the tile down towards their stores when registers are
        // short, and the warps then wait on memory (Nsight Compute: long-scoreboard stalls;
        // 128x128 bk 8 16x8 at minsub ran 2.15 ms with stages 1, 1.70 ms with stages 2).
        const int k2 = kbeg + (t + 2 < ntiles ? t + 2 : ntiles - 1) * FT_BK;
        ft_w_load<FT_BM, FT_A_LOADS>(ra, X, m0, M, K, k2, kend);
        ft_w_load<FT_BN, FT_B_LOADS>(rb, W, n0, N, K, k2, kend);
#endif
        __syncthreads();
        ft_w_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], nxt, nxt + FT_A_FLOATS, 0, r0, c0);
      } else {
        ft_w_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], cur, cur + FT_A_FLOATS, k + 1, r0, c0);
      }
      ft_w_fma(acc, fa[k & 1], fb[k & 1]);
    }
  }
}

// The thread's outputs of the tile at (m0, n0): E in registers, then float4 stores (partials,
// without E, when split-K).
__device__ __forceinline__ void ft_w_store_out(const float (&acc)[FT_TM][FT_TN], float *__restrict__ Y,
                                               float *__restrict__ WS, int M, int N, int m0, int n0,
                                               int r0, int c0, const FtEpArgs &ep) {
#pragma unroll
  for (int i = 0; i < FT_TM; i++) {
    const int row = m0 + r0 + (i / 4) * (FT_LM * 4) + (i % 4);
    if (row >= M) continue;
#pragma unroll
    for (int g = 0; g < FT_GN; g++) {
      const int col = n0 + c0 + g * (FT_LN * 4);
      if (col >= N) continue;
      ft_store_group(Y, WS, &acc[i][g * 4], row, col, M, N, ep);
    }
  }
}

#if FT_STREAMK > 0
// The thread's partial sums into a whole-tile workspace slot (row-major FT_BM x FT_BN, also
// the rows and columns outside the matrix: ft_streamk_fixup reads only those inside).
__device__ __forceinline__ void ft_w_store_partial(const float (&acc)[FT_TM][FT_TN], float *slot,
                                                   int r0, int c0) {
#pragma unroll
  for (int i = 0; i < FT_TM; i++)
#pragma unroll
    for (int g = 0; g < FT_GN; g++)
      *reinterpret_cast<float4 *>(slot + (r0 + (i / 4) * (FT_LM * 4) + (i % 4)) * FT_BN + c0 +
                                  g * (FT_LN * 4)) =
          make_float4(acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
}
#endif

extern "C" __global__ void __launch_bounds__(FT_THREADS, FT_MINB)
ft_gemm(const float *__restrict__ X, const float *__restrict__ W, float *__restrict__ Y,
        float *__restrict__ WS, int M, int N, int K, FtEpArgs ep) {
  extern __shared__ float4 ft_smem4[];
  float *smem = reinterpret_cast<float *>(ft_smem4);
  const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31;
  const int r0 = (warp / FT_WARPS_N) * FT_WM + (lane / FT_LN) * 4;
  const int c0 = (warp % FT_WARPS_N) * FT_WN + (lane % FT_LN) * 4;
  float acc[FT_TM][FT_TN];
#if FT_STREAMK > 0
  // This block's units (see ft_sk_begin), one tile segment at a time: whole tiles get E and
  // their store here, the partial first and last ones go to the block's two workspace slots.
  // (The same tiles run slower in this loop than as one tile per block, ptxas scheduling the
  // main loop differently; keeping the loop state in shared memory instead of registers was
  // slower still: docs/BENCHMARKS.md, "Why the search space is what it is".)
  const int tiles_m = (M + FT_BM - 1) / FT_BM, tiles_n = (N + FT_BN - 1) / FT_BN;
  const int kt = (K + FT_BK - 1) / FT_BK;
  const long long units = (long long)tiles_m * tiles_n * kt;
  long long u = ft_sk_begin((long long)blockIdx.x, units);
  const long long uend = ft_sk_begin((long long)blockIdx.x + 1, units);
  for (int seg = 0; u < uend; seg++) {
    const int tile = (int)(u / kt);
    const int kt0 = (int)(u - (long long)tile * kt);
    const int kt1 = (int)(kt - kt0 < uend - u ? kt : kt0 + (uend - u));
    int bm, bn;
    ft_tile_coords(tile, tiles_m, tiles_n, bm, bn);
    if (seg > 0) __syncthreads(); /* everyone is done reading the last segment's tiles */
    ft_w_tile(acc, X, W, M, N, K, bm * FT_BM, bn * FT_BN, kt0 * FT_BK, min(K, kt1 * FT_BK), smem, r0, c0);
    if (kt0 == 0 && kt1 == kt)
      ft_w_store_out(acc, Y, WS, M, N, bm * FT_BM, bn * FT_BN, r0, c0, ep);
    else
      ft_w_store_partial(acc, WS + ((size_t)blockIdx.x * 2 + (seg > 0 ? 1 : 0)) * ((size_t)FT_BM * FT_BN), r0, c0);
    u += kt1 - kt0;
  }
#else
  int m0, n0, kbeg, kend;
  if (!ft_block_setup(M, N, K, m0, n0, kbeg, kend)) return;
  ft_w_tile(acc, X, W, M, N, K, m0, n0, kbeg, kend, smem, r0, c0);
  ft_w_store_out(acc, Y, WS, M, N, m0, n0, r0, c0, ep);
#endif
}
