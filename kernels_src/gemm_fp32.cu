// fusedtune fp32 GEMM with a fused elementwise epilogue: Y[m,n] = E(sum_k X[m,k] * W[n,k]).
// X [M,K] and W [N,K] are row-major (both K-contiguous, nn.Linear's layout). Plain FFMA, no
// tensor cores, each output summed over k in increasing order.
//
// Variant defines (written by codegen): FT_BM, FT_BN, FT_BK (block tile), FT_TM, FT_TN
// (register tile of one thread), FT_VEC (global load width: 1, 2, 4), FT_STAGES (1: global ->
// registers -> double-buffered shared memory; >= 2: cp.async pipeline of that many stages),
// FT_SPLIT_K (k slices, gridDim.z; partials go to WS and ft_splitk_reduce applies E once),
// FT_SWIZZLE (block rasterization group along m for L2 reuse), FT_LAYOUT (0: tiles kept
// [rows][BK] as below; 1: k-major, see "Layout 1" further down), FT_MINB (__launch_bounds__).
//
// Layout. Both tiles are kept as in global memory, [rows][BK] with the row padded to BK + 4
// floats: cp.async can copy 16-byte pieces straight in, the register path stores float4
// without transposing, and a thread reads four consecutive k of one row with one 128-bit LDS.
// Thread (ty, tx) owns rows ty + i * TH_M and columns tx + j * TH_N (interleaved), so the eight
// threads of a quarter-warp read eight consecutive padded rows: the pad of 4 floats makes those
// rows start 4 banks apart, which is conflict-free, and A rows are shared (broadcast). The
// interleaving also makes the output stores of a warp contiguous in each row.
// Requirements (checked on the host by ft_variant_applicable): FT_VEC > 1 needs K % FT_VEC == 0
// and 4 * FT_VEC-byte aligned X and W, so a vector is wholly inside or outside the matrix.

FT_DEFINE_APPLY_EPILOGUE()

#ifndef FT_LAYOUT
#define FT_LAYOUT 0
#endif

#define FT_TH_N (FT_BN / FT_TN)
#define FT_TH_M (FT_BM / FT_TM)
#define FT_THREADS (FT_TH_M * FT_TH_N)
#define FT_LDS (FT_BK + 4)
#define FT_A_FLOATS (FT_BM * FT_LDS)
#define FT_STAGE_FLOATS ((FT_BM + FT_BN) * FT_LDS)
#define FT_KV (FT_BK / FT_VEC)
#define FT_A_VECS (FT_BM * FT_KV)
#define FT_B_VECS (FT_BN * FT_KV)
#define FT_A_LOADS ((FT_A_VECS + FT_THREADS - 1) / FT_THREADS)
#define FT_B_LOADS ((FT_B_VECS + FT_THREADS - 1) / FT_THREADS)

#if FT_BK % 4 != 0 || FT_BK % FT_VEC != 0 || FT_BM % FT_TM != 0 || FT_BN % FT_TN != 0
#error "fusedtune: inconsistent GEMM variant"
#endif
#if FT_LAYOUT >= 1 && (FT_STAGES != 1 || FT_TM % 4 != 0 || FT_TN % 4 != 0)
#error "fusedtune: the k-major layout needs stages 1 and thread tiles of whole float4 groups"
#endif
#if FT_LAYOUT == 2 && (FT_BM % (4 * FT_TM) != 0 || FT_BN % (8 * FT_TN) != 0)
#error "fusedtune: layout 2 needs whole 4x8-lane warp tiles"
#endif

// Layout 1 (k-major). Tiles are stored transposed, As[BK][BM + 4] and Bs[BK][BN + 4], so for
// one k a thread reads its TM values of A and TN values of B with TM/4 + TN/4 128-bit loads and
// does TM * TN FFMA, holding only TM + TN operands. Thread (ty, tx) owns the rows
// g * (BM / GM) + ty * 4 + i (GM = TM / 4 groups of 4 consecutive rows, i < 4), and likewise the
// columns with tx: a quarter-warp reads 8 consecutive float4 of B (conflict-free) and one float4
// of A (broadcast), and each thread's outputs form whole float4 in every row for the store.
// Global -> registers as float4 along k (prefetching the next tile during compute), then four
// scalar stores into the transposed, double-buffered shared tile; one barrier per k tile.
#define FT_LDM (FT_BM + 4)
#define FT_LDN (FT_BN + 4)
#define FT_KM_A_FLOATS (FT_BK * FT_LDM)
#define FT_KM_STAGE_FLOATS (FT_BK * (FT_LDM + FT_LDN))
#define FT_GM (FT_TM / 4)
#define FT_GN (FT_TN / 4)
// Layout 2 is layout 1 with the threads of a warp as 4 x 8 lanes over a (4 TM) x (8 TN) warp
// tile (groups at a stride of 16 rows / 32 columns), so one LDS.128 of a warp reads 4
// broadcast A vectors and 8 consecutive B vectors: one wavefront each. FT_RS / FT_CS: stride
// between a thread's row / column groups.
#if FT_LAYOUT == 2
#define FT_WM (4 * FT_TM)
#define FT_WN (8 * FT_TN)
#define FT_RS (FT_WM / FT_GM)
#define FT_CS (FT_WN / FT_GN)
#else
#define FT_RS (FT_BM / FT_GM)
#define FT_CS (FT_BN / FT_GN)
#endif

// Loads FT_VEC floats from global memory (read-only path).
__device__ __forceinline__ void ft_ld_vec(float (&r)[FT_VEC], const float *p) {
#if FT_VEC == 4
  const float4 t = __ldg(reinterpret_cast<const float4 *>(p));
  r[0] = t.x; r[1] = t.y; r[2] = t.z; r[3] = t.w;
#elif FT_VEC == 2
  const float2 t = __ldg(reinterpret_cast<const float2 *>(p));
  r[0] = t.x; r[1] = t.y;
#else
  r[0] = __ldg(p);
#endif
}

__device__ __forceinline__ void ft_st_vec(float *p, const float (&r)[FT_VEC]) {
#if FT_VEC == 4
  *reinterpret_cast<float4 *>(p) = make_float4(r[0], r[1], r[2], r[3]);
#elif FT_VEC == 2
  *reinterpret_cast<float2 *>(p) = make_float2(r[0], r[1]);
#else
  p[0] = r[0];
#endif
}

// Vector slot l of this thread in a ROWS x BK tile: its row and first k. False when the tile
// has fewer slots than the last round of threads.
template <int ROWS>
__device__ __forceinline__ bool ft_slot(int l, int &tr, int &kc) {
  const int slot = (int)threadIdx.x + l * FT_THREADS;
  tr = slot / FT_KV;
  kc = (slot - tr * FT_KV) * FT_VEC;
  return (ROWS * FT_KV) % FT_THREADS == 0 || slot < ROWS * FT_KV;
}

// Register path: global tile (rows row0.., k k0..) -> registers, zero outside the matrix.
template <int ROWS, int LOADS>
__device__ __forceinline__ void ft_load_regs(float (&r)[LOADS][FT_VEC], const float *P, int row0,
                                             int nrows, int K, int k0, int kend) {
#pragma unroll
  for (int l = 0; l < LOADS; l++) {
    int tr, kc;
    const bool in_tile = ft_slot<ROWS>(l, tr, kc);
    const int grow = row0 + tr, gk = k0 + kc;
    if (in_tile && grow < nrows && gk < kend) {
      ft_ld_vec(r[l], P + (size_t)grow * (size_t)K + gk);
    } else {
#pragma unroll
      for (int e = 0; e < FT_VEC; e++) r[l][e] = 0.0f;
    }
  }
}

template <int ROWS, int LOADS>
__device__ __forceinline__ void ft_store_regs(const float (&r)[LOADS][FT_VEC], float *S) {
#pragma unroll
  for (int l = 0; l < LOADS; l++) {
    int tr, kc;
    if (ft_slot<ROWS>(l, tr, kc)) ft_st_vec(S + tr * FT_LDS + kc, r[l]);
  }
}

// Register path into a k-major tile: element (row tr, k kc + e) goes to S[(kc + e) * LD + tr].
template <int ROWS, int LOADS, int LD>
__device__ __forceinline__ void ft_store_regs_t(const float (&r)[LOADS][FT_VEC], float *S) {
#pragma unroll
  for (int l = 0; l < LOADS; l++) {
    int tr, kc;
    if (ft_slot<ROWS>(l, tr, kc)) {
#pragma unroll
      for (int e = 0; e < FT_VEC; e++) S[(kc + e) * LD + tr] = r[l][e];
    }
  }
}

// Layouts 1, 2: acc += A_tile * B_tile^T over the BK of one stage, one k at a time; the
// thread's rows are rb + g * FT_RS + (0..3), its columns cb + g * FT_CS + (0..3).
__device__ __forceinline__ void ft_compute_tile_km(float (&acc)[FT_TM][FT_TN], const float *As,
                                                   const float *Bs, int rb, int cb) {
#pragma unroll
  for (int kk = 0; kk < FT_BK; kk++) {
    float a[FT_TM], b[FT_TN];
#pragma unroll
    for (int g = 0; g < FT_GM; g++) {
      const float4 t =
          *reinterpret_cast<const float4 *>(As + kk * FT_LDM + g * FT_RS + rb);
      a[g * 4 + 0] = t.x; a[g * 4 + 1] = t.y; a[g * 4 + 2] = t.z; a[g * 4 + 3] = t.w;
    }
#pragma unroll
    for (int g = 0; g < FT_GN; g++) {
      const float4 t =
          *reinterpret_cast<const float4 *>(Bs + kk * FT_LDN + g * FT_CS + cb);
      b[g * 4 + 0] = t.x; b[g * 4 + 1] = t.y; b[g * 4 + 2] = t.z; b[g * 4 + 3] = t.w;
    }
#pragma unroll
    for (int i = 0; i < FT_TM; i++)
#pragma unroll
      for (int j = 0; j < FT_TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

// Layout 1: the output of one float4 group, (row, col .. col + 3), through E (or raw partials
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

// cp.async path: global tile -> shared memory directly; zero-filled outside the matrix.
template <int ROWS, int LOADS>
__device__ __forceinline__ void ft_load_async(float *S, const float *P, int row0, int nrows, int K,
                                              int k0, int kend) {
#pragma unroll
  for (int l = 0; l < LOADS; l++) {
    int tr, kc;
    if (!ft_slot<ROWS>(l, tr, kc)) continue;
    const int grow = row0 + tr, gk = k0 + kc;
    const bool ok = grow < nrows && gk < kend;
    // A masked copy reads nothing, but the address must still be a valid global one.
    const float *src = ok ? P + (size_t)grow * (size_t)K + gk : P;
    ft_cp_async<FT_VEC * 4>(S + tr * FT_LDS + kc, src, ok);
  }
}

// acc += A_tile * B_tile^T over the BK of one stage, four k at a time (one float4 per row).
__device__ __forceinline__ void ft_compute_tile(float (&acc)[FT_TM][FT_TN], const float *As,
                                                const float *Bs, int ty, int tx) {
#pragma unroll
  for (int kk = 0; kk < FT_BK; kk += 4) {
    float4 b[FT_TN];
#pragma unroll
    for (int j = 0; j < FT_TN; j++)
      b[j] = *reinterpret_cast<const float4 *>(Bs + (tx + j * FT_TH_N) * FT_LDS + kk);
#pragma unroll
    for (int i = 0; i < FT_TM; i++) {
      const float4 a = *reinterpret_cast<const float4 *>(As + (ty + i * FT_TH_M) * FT_LDS + kk);
#pragma unroll
      for (int j = 0; j < FT_TN; j++) {
        float c = acc[i][j];
        c = fmaf(a.x, b[j].x, c);
        c = fmaf(a.y, b[j].y, c);
        c = fmaf(a.z, b[j].z, c);
        c = fmaf(a.w, b[j].w, c);
        acc[i][j] = c;
      }
    }
  }
}

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

extern "C" __global__ void __launch_bounds__(FT_THREADS, FT_MINB)
ft_gemm(const float *__restrict__ X, const float *__restrict__ W, float *__restrict__ Y,
        float *__restrict__ WS, int M, int N, int K, FtEpArgs ep) {
  extern __shared__ float4 ft_smem4[];
  float *smem = reinterpret_cast<float *>(ft_smem4);

  const int tiles_m = (M + FT_BM - 1) / FT_BM, tiles_n = (N + FT_BN - 1) / FT_BN;
  int bm, bn;
  ft_block_tile(tiles_m, tiles_n, bm, bn);
  if (bm >= tiles_m) return;  // never with the host's grid; keeps a wrong grid in bounds
  const int m0 = bm * FT_BM, n0 = bn * FT_BN;

  // This slice's k range: whole BK tiles, so vector alignment holds inside every slice.
  int kbeg = 0, kend = K;
#if FT_SPLIT_K > 1
  {
    const long long per =
        ((long long)(K + FT_SPLIT_K - 1) / FT_SPLIT_K + FT_BK - 1) / FT_BK * FT_BK;
    const long long b = (long long)blockIdx.z * per;
    kbeg = (int)(b < K ? b : K);
    kend = (int)(b + per < K ? b + per : K);
  }
#endif
  const int ntiles = (kend - kbeg + FT_BK - 1) / FT_BK;
  const int tx = (int)threadIdx.x % FT_TH_N, ty = (int)threadIdx.x / FT_TH_N;
#if FT_LAYOUT == 2
#define FT_TR0 \
  ((int)(threadIdx.x >> 5) / (FT_BN / FT_WN) * FT_WM + (int)((threadIdx.x >> 3) & 3) * 4)
#define FT_TC0 \
  ((int)(threadIdx.x >> 5) % (FT_BN / FT_WN) * FT_WN + (int)(threadIdx.x & 7) * 4)
#elif FT_LAYOUT == 1
// First row / column of the thread's groups (inline, as ptxas allocates best at 128 regs).
#define FT_TR0 (ty * 4)
#define FT_TC0 (tx * 4)
#endif

  float acc[FT_TM][FT_TN];
#pragma unroll
  for (int i = 0; i < FT_TM; i++)
#pragma unroll
    for (int j = 0; j < FT_TN; j++) acc[i][j] = 0.0f;

#if FT_LAYOUT >= 1
  // Prefetch tile t + 1 into registers while computing tile t from k-major buffer t & 1.
  if (ntiles > 0) {
    float ra[FT_A_LOADS][FT_VEC], rb[FT_B_LOADS][FT_VEC];
    ft_load_regs<FT_BM, FT_A_LOADS>(ra, X, m0, M, K, kbeg, kend);
    ft_load_regs<FT_BN, FT_B_LOADS>(rb, W, n0, N, K, kbeg, kend);
    ft_store_regs_t<FT_BM, FT_A_LOADS, FT_LDM>(ra, smem);
    ft_store_regs_t<FT_BN, FT_B_LOADS, FT_LDN>(rb, smem + FT_KM_A_FLOATS);
    __syncthreads();
    for (int t = 0; t < ntiles; t++) {
      const float *cur = smem + (t & 1) * FT_KM_STAGE_FLOATS;
      const bool more = t + 1 < ntiles;
      if (more) {
        const int k0 = kbeg + (t + 1) * FT_BK;
        ft_load_regs<FT_BM, FT_A_LOADS>(ra, X, m0, M, K, k0, kend);
        ft_load_regs<FT_BN, FT_B_LOADS>(rb, W, n0, N, K, k0, kend);
      }
      ft_compute_tile_km(acc, cur, cur + FT_KM_A_FLOATS, FT_TR0, FT_TC0);
      if (more) {
        float *nxt = smem + ((t + 1) & 1) * FT_KM_STAGE_FLOATS;
        ft_store_regs_t<FT_BM, FT_A_LOADS, FT_LDM>(ra, nxt);
        ft_store_regs_t<FT_BN, FT_B_LOADS, FT_LDN>(rb, nxt + FT_KM_A_FLOATS);
      }
      // Buffer (t + 1) & 1 is complete and buffer t & 1 is free for iteration t + 1.
      __syncthreads();
    }
  }
#elif FT_STAGES == 1
  // Prefetch tile t + 1 into registers while computing tile t from shared buffer t & 1.
  if (ntiles > 0) {
    float ra[FT_A_LOADS][FT_VEC], rb[FT_B_LOADS][FT_VEC];
    ft_load_regs<FT_BM, FT_A_LOADS>(ra, X, m0, M, K, kbeg, kend);
    ft_load_regs<FT_BN, FT_B_LOADS>(rb, W, n0, N, K, kbeg, kend);
    ft_store_regs<FT_BM, FT_A_LOADS>(ra, smem);
    ft_store_regs<FT_BN, FT_B_LOADS>(rb, smem + FT_A_FLOATS);
    __syncthreads();
    for (int t = 0; t < ntiles; t++) {
      const float *cur = smem + (t & 1) * FT_STAGE_FLOATS;
      const bool more = t + 1 < ntiles;
      if (more) {
        const int k0 = kbeg + (t + 1) * FT_BK;
        ft_load_regs<FT_BM, FT_A_LOADS>(ra, X, m0, M, K, k0, kend);
        ft_load_regs<FT_BN, FT_B_LOADS>(rb, W, n0, N, K, k0, kend);
      }
      ft_compute_tile(acc, cur, cur + FT_A_FLOATS, ty, tx);
      if (more) {
        float *nxt = smem + ((t + 1) & 1) * FT_STAGE_FLOATS;
        ft_store_regs<FT_BM, FT_A_LOADS>(ra, nxt);
        ft_store_regs<FT_BN, FT_B_LOADS>(rb, nxt + FT_A_FLOATS);
      }
      // Buffer (t + 1) & 1 is complete and buffer t & 1 is free for iteration t + 1.
      __syncthreads();
    }
  }
#else
  // FT_STAGES - 1 tiles in flight ahead of the one being computed; one commit group per tile
  // (empty groups past the end keep the wait count uniform).
#pragma unroll
  for (int s = 0; s < FT_STAGES - 1; s++) {
    if (s < ntiles) {
      float *st = smem + s * FT_STAGE_FLOATS;
      const int k0 = kbeg + s * FT_BK;
      ft_load_async<FT_BM, FT_A_LOADS>(st, X, m0, M, K, k0, kend);
      ft_load_async<FT_BN, FT_B_LOADS>(st + FT_A_FLOATS, W, n0, N, K, k0, kend);
    }
    ft_cp_async_commit();
  }
  int read_stage = 0, write_stage = FT_STAGES - 1;
  for (int t = 0; t < ntiles; t++) {
    ft_cp_async_wait<FT_STAGES - 2>();
    // Tile t is visible to all threads, and all finished reading the stage refilled below.
    __syncthreads();
    const int pf = t + FT_STAGES - 1;
    if (pf < ntiles) {
      float *st = smem + write_stage * FT_STAGE_FLOATS;
      const int k0 = kbeg + pf * FT_BK;
      ft_load_async<FT_BM, FT_A_LOADS>(st, X, m0, M, K, k0, kend);
      ft_load_async<FT_BN, FT_B_LOADS>(st + FT_A_FLOATS, W, n0, N, K, k0, kend);
    }
    ft_cp_async_commit();
    const float *cur = smem + read_stage * FT_STAGE_FLOATS;
    ft_compute_tile(acc, cur, cur + FT_A_FLOATS, ty, tx);
    read_stage = read_stage + 1 == FT_STAGES ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == FT_STAGES ? 0 : write_stage + 1;
  }
  ft_cp_async_wait<0>();
#endif

  // Epilogue in registers, then the single store (partials, without E, when split-K).
#if FT_LAYOUT >= 1
  (void)tx;
  (void)ty;
#pragma unroll
  for (int i = 0; i < FT_TM; i++) {
    const int row = m0 + (i / 4) * FT_RS + FT_TR0 + (i % 4);
    if (row >= M) continue;
#pragma unroll
    for (int g = 0; g < FT_GN; g++) {
      const int col = n0 + g * FT_CS + FT_TC0;
      if (col >= N) continue;
      ft_store_group(Y, WS, &acc[i][g * 4], row, col, M, N, ep);
    }
  }
#else
#pragma unroll
  for (int i = 0; i < FT_TM; i++) {
    const int row = m0 + ty + i * FT_TH_M;
    if (row >= M) continue;
#pragma unroll
    for (int j = 0; j < FT_TN; j++) {
      const int col = n0 + tx + j * FT_TH_N;
      if (col >= N) continue;
#if FT_SPLIT_K > 1
      WS[(size_t)blockIdx.z * (size_t)M * (size_t)N + (size_t)row * (size_t)N + col] = acc[i][j];
#else
      Y[(size_t)row * (size_t)N + col] = ft_apply_epilogue(acc[i][j], row, col, ep);
#endif
    }
  }
#endif
#if FT_SPLIT_K > 1
  (void)Y;
  (void)ep;
#else
  (void)WS;
#endif
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
