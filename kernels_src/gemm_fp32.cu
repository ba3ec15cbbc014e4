// fusedtune fp32 GEMM with a fused elementwise epilogue: Y[m,n] = E(sum_k X[m,k] * W[n,k]).
// X [M,K] and W [N,K] are row-major (both K-contiguous, nn.Linear's layout). Plain FFMA, no
// tensor cores, each output summed over k in increasing order.
//
// Variant defines (written by codegen): FT_BM, FT_BN, FT_BK (block tile), FT_TM, FT_TN
// (register tile of one thread), FT_VEC (global load width: 1, 2, 4), FT_STAGES (1: global ->
// registers -> double-buffered shared memory; >= 2: cp.async pipeline of that many stages),
// FT_SPLIT_K (k slices, gridDim.z; partials go to WS and ft_splitk_reduce applies E once),
// FT_SWIZZLE (block rasterization group along m for L2 reuse), FT_MINB (__launch_bounds__).
// This is layout 0; gemm_fp32_warp.cu is layout 3 (k-major tiles, warp-tiled threads).
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
// The host sizes the launch's dynamic shared memory (src/family/family_fp32_rows.c): FT_STAGES
// buffers, or two for register staging.
static_assert(FT_SMEM_BYTES == (FT_STAGES > 1 ? FT_STAGES : 2) * FT_STAGE_FLOATS * sizeof(float),
              "fusedtune: shared memory size");
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

// The k tile at k0 of X and W into shared stage `stage`, asynchronously.
__device__ __forceinline__ void ft_load_stage(float *smem, int stage, const float *X, const float *W,
                                              int M, int N, int K, int m0, int n0, int k0, int kend) {
  float *st = smem + stage * FT_STAGE_FLOATS;
  ft_load_async<FT_BM, FT_A_LOADS>(st, X, m0, M, K, k0, kend);
  ft_load_async<FT_BN, FT_B_LOADS>(st + FT_A_FLOATS, W, n0, N, K, k0, kend);
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

extern "C" __global__ void __launch_bounds__(FT_THREADS, FT_MINB)
ft_gemm(const float *__restrict__ X, const float *__restrict__ W, float *__restrict__ Y,
        float *__restrict__ WS, int M, int N, int K, FtEpArgs ep) {
  extern __shared__ float4 ft_smem4[];
  float *smem = reinterpret_cast<float *>(ft_smem4);

  int m0, n0, kbeg, kend;
  if (!ft_block_setup(M, N, K, m0, n0, kbeg, kend)) return;
  const int ntiles = (kend - kbeg + FT_BK - 1) / FT_BK;
  const int tx = (int)threadIdx.x % FT_TH_N, ty = (int)threadIdx.x / FT_TH_N;

  float acc[FT_TM][FT_TN];
#pragma unroll
  for (int i = 0; i < FT_TM; i++)
#pragma unroll
    for (int j = 0; j < FT_TN; j++) acc[i][j] = 0.0f;

#if FT_STAGES == 1
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
    if (s < ntiles) ft_load_stage(smem, s, X, W, M, N, K, m0, n0, kbeg + s * FT_BK, kend);
    ft_cp_async_commit();
  }
  int read_stage = 0, write_stage = FT_STAGES - 1;
  for (int t = 0; t < ntiles; t++) {
    ft_cp_async_wait<FT_STAGES - 2>();
    // Tile t is visible to all threads, and all finished reading the stage refilled below.
    __syncthreads();
    const int pf = t + FT_STAGES - 1;
    if (pf < ntiles) ft_load_stage(smem, write_stage, X, W, M, N, K, m0, n0, kbeg + pf * FT_BK, kend);
    ft_cp_async_commit();
    const float *cur = smem + read_stage * FT_STAGE_FLOATS;
    ft_compute_tile(acc, cur, cur + FT_A_FLOATS, ty, tx);
    read_stage = read_stage + 1 == FT_STAGES ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == FT_STAGES ? 0 : write_stage + 1;
  }
  ft_cp_async_wait<0>();
#endif

  // Epilogue in registers, then the single store (partials, without E, when split-K).
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
#if FT_SPLIT_K > 1
  (void)Y;
  (void)ep;
#else
  (void)WS;
#endif
}

