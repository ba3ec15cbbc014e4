// fusedtune Hopper tensor-core GEMM (family tc, src/family/tc/family_tc.c), the kernel: Y[m,n] =
// E(sum_k X[m,k] * W[n,k]), X [M,K] and W [N,K] row-major (both K-major), E = FT_EPILOGUE_EXPR
// applied to the fp32 accumulator in registers, one rounding at the store. Compiled by NVRTC for
// sm_90a. It composes the layers: tc_config.cuh (FtTc), tc_ptx.cuh, tc_sched.cuh (FtTiles),
// tc_matrix.cuh (E's matrix operands prefetched by the producer), tc_mainloop.cuh (the producer and
// the mainloops), tc_epilogue.cuh, tc_epilogue_tma.cuh, tc_gated.cuh (a gated pair's stores),
// tc_reduce.cuh (a row reduction's tile), tc_norm.cuh (groupnorm in the tile) and tc_colstats.cuh
// (batchnorm's column partials before the stores).
//
// Structure: TMA (128-byte swizzle) fills a ring of stages guarded by full/empty mbarriers;
// warpgroup `consumers` is the producer (one thread issues TMA, setmaxnreg.dec); warpgroups
// 0 .. consumers - 1 each own 64 rows of the kBM x bn tile (ping-pong: whole tiles, below) and
// run wgmma m64nBNk16 (bf16/fp16), m64nBNk8 (tf32) or m64nBNk32 (fp8, e4m3) from shared memory. The persistent grid
// walks the scheduler's work items, so the producer prefetches the next tile while the consumers
// run the epilogue.
//
// Host contract (src/family/tc/family_tc.c): grid a multiple of the cluster, block kThreads, smem_bytes of
// dynamic shared memory, three tensor maps: box {kBK, kBM} over x, {kBK, bn / cluster} over W
// (128-byte swizzle, zero fill, UINT8 in fp8, TFLOAT32 in tf32 mode so TMA rounds to nearest, FLOAT32 in
// 3xtf32), and with tma_store {kCols, 64} over Y in its storage type (zeros otherwise); K >= 1
// and K * element size a multiple of 16 bytes (with tma_store N * element size too). Split-K:
// WS holds split_k M x N fp32 slabs. Stream-K: WS one kBM x bn fp32 tile per block, FL a flag
// per block and consumer, zero between launches.
//
// Ping-pong (pingpong 1 or 2): a tile is 64 pingpong rows, all of one consumer's (kMsub m64
// accumulators); consumer c takes work items j = c, c + 2, ... of the block's list, skipping the
// other's k tiles in the ring (every item has all k tiles). The producer loads in list order, so
// consumer 1's wgmma start as consumer 0's end and each consumer's epilogue overlaps the other's
// mainloop. The mainloops take turns through two named barriers (4: consumer 0's loop done, 5:
// consumer 1's): a consumer starts waiting on its first stage only once the other has passed
// every full barrier of its item, so each stage's barrier is then exactly one phase from the one
// awaited and the parity wait cannot match an older phase.

// The shared-memory regions after the 1024-aligned ring base: the ring's x and W stages, the
// small buffers, the store boxes, the staging boxes, full and empty barriers, stream-K's schedule.
template <class C>
struct FtSmemMap {
  FtRingSmem ring;
  unsigned cbuf, sbuf, sched;
  __device__ __forceinline__ explicit FtSmemMap(unsigned base) {
    ring.sA = base, ring.sB = base + C::stages * C::kA;
    ring.small = base + C::stages * C::kStage;
    cbuf = ring.small + C::small_bytes; /* 1024-aligned */
    sbuf = cbuf + C::box_bytes;
    ring.full = sbuf + C::staging_bytes, ring.empty = ring.full + 8 * C::stages;
    sched = ring.empty + 8 * C::stages;
  }
};

// One consumer warpgroup: its work items, mainloop, then the epilogue of each m64 accumulator.
template <class C>
__device__ __forceinline__ void ft_consumer(const FtTiles<C> &ts, const FtSmemMap<C> &sm, ft_vec_t *colv_all,
                                            const FtTmaDesc *tma_y, ft_elem_t *__restrict__ Y, float *__restrict__ WS,
                                            unsigned *__restrict__ FL, int M, int N, const FtEpArgs &ep, int wg,
                                            int tid) {
  float dd[C::kMsub][C::kAcc];
  float(&d)[C::kAcc] = dd[0]; /* the accumulator of every form but ping-pong's second m64 block */
  FtRing<C> ring;
  unsigned nbox = 0;
  const int warp = tid / 32, lane = tid % 32;
  ft_vec_t *const my_colv = colv_all + wg * (C::colv_bytes / (int)sizeof(ft_vec_t));
  const unsigned my_cbuf = sm.cbuf + (unsigned)wg * 2u * (64 * 128); /* this consumer's two store boxes */
  /* Batchnorm's column partials: this consumer's [4][bn] float2 after every consumer's colv slice. */
  float2 *const my_colst = reinterpret_cast<float2 *>(reinterpret_cast<unsigned char *>(colv_all) +
                                                      C::consumers * C::colv_bytes) + wg * 4 * C::bn;
  FtPending<C> pt; /* store overlap: the previous tile's boxes still to store */
  FtWork wk;
  for (int j = 0; ts.work(j, wk); j++) {
    if constexpr (C::pingpong) {
      if ((j & 1) != wg) continue; /* the other consumer's item */
      ring.seek(j, ts.ktiles);
    }
    int z, m0, n0;
    ts.origin(wk, z, m0, n0);
    int prev = 0;
    if constexpr (C::kColvStage)
      if (m0 + 64 * wg + 64 <= M && n0 + C::bn <= N) /* ft_tile_store_tma's `inside` */
        ft_colv_fetch<C>(my_colv, ep.v[C::kColvSlot] + n0, tid);
    if constexpr (C::pingpong)
      if (j > 0) ft_bar_sync<256>(5 - wg); /* the other's loop of item j - 1 done */
    if constexpr (C::split3x && C::aregs) {
      ft_mainloop_3x_aregs<C>(d, ring, prev, wk.nk, sm.ring, wg, warp, lane, tid);
    } else if constexpr (C::split3x) {
      ft_mainloop_3x<C>(d, ring, prev, wk.nk, sm.ring, wg, tid);
    } else {
      auto store_box = [&] { /* the store overlap: a box of the previous tile after a k tile's wgmma */
        if constexpr (C::kStoreOverlap)
          if (pt.boxes) ft_pending_step<C>(pt, my_cbuf, tma_y, warp, lane, tid, wg, nbox, ep);
      };
      if constexpr (C::fp8 && C::dual)
        ft_mainloop_fp8_dual<C>(dd, ring, prev, wk.nk, sm.ring, wg, tid, store_box);
      else if constexpr (C::fp8)
        ft_mainloop_fp8<C>(dd, ring, prev, wk.nk, sm.ring, wg, tid, store_box);
      else
        ft_mainloop_ss<C>(dd, ring, prev, wk.nk, sm.ring, wg, tid, store_box);
    }
    if constexpr (C::pingpong) { /* this loop done: the other's turn, if it has item j + 1 (arrivals match waits) */
      FtWork next;
      if (ts.work(j + 1, next)) ft_bar_arrive<256>(4 + wg);
    }
    ft_wgmma_wait<0>();
#pragma unroll
    for (int h = 0; h < C::kMsub; h++) ft_reg_fence(dd[h]);
    if (tid == 0) ft_mbar_release<C::cluster>(sm.ring.empty + 8 * prev);
    if constexpr (C::kStoreOverlap)
      ft_pending_flush<C, false>(pt, my_cbuf, tma_y, warp, lane, tid, wg, nbox, ep);

    if constexpr (C::stream_k) {
      /* What becomes of the sums, asked again rather than kept in registers across the k loop. */
      ts.work(j, wk);
      if (wk.kind == 1) {
        ft_sk_publish<C>(d, WS, FL, wg, tid);
        continue;
      }
      ft_sk_gather<C>(d, WS, FL, wk.c0, wk.c1, ts.rank, wg, tid); /* kind 2; none for kind 0 */
    }
#pragma unroll
    for (int h = 0; h < C::kMsub; h++) { /* ping-pong: the tile's blocks; else this consumer's 64 rows */
      const int r0 = m0 + (C::pingpong ? 64 * h : 64 * wg);
      if constexpr (C::kColStats) /* then the tile is stored as below, E the identity */
        ft_tile_colstats<C>(dd[h], reinterpret_cast<float2 *>(WS), my_colst, r0, n0, M, N, warp, lane, wg, tid, ep);
      if constexpr (C::kRedKind == 8)
        ft_tile_groupnorm<C>(dd[h], Y, r0, n0, M, N, warp, lane, ep);
      else if constexpr (C::kRedKind)
        ft_tile_reduce<C>(dd[h], WS, r0, n0, M, N, warp, lane, ep);
      else if constexpr (C::tma_store)
        ft_tile_store_tma<C>(dd[h], my_cbuf, sm.sbuf + (unsigned)wg * (C::staging_bytes / C::consumers), tma_y, Y, r0,
                             n0, M, N, wg, warp, lane, nbox, ep, my_colv, pt);
      else if constexpr (C::gated)
        ft_tile_store_gated<C>(dd[h], Y, r0, n0, M, N, warp, lane, ep);
      else
        ft_tile_store_direct<C>(dd[h], Y, WS, z, r0, n0, M, N, warp, lane, ep);
    }
  }
  if constexpr (C::kStoreOverlap)
    ft_pending_flush<C, true>(pt, my_cbuf, tma_y, warp, lane, tid, wg, nbox, ep); /* the last tile's */
}

template <class C>
__device__ __forceinline__ void ft_gemm_tc_body(const FtTmaDesc *tma_x, const FtTmaDesc *tma_w, const FtTmaDesc *tma_y,
                                                ft_elem_t *__restrict__ Y, float *__restrict__ WS,
                                                unsigned *__restrict__ FL, int M, int N, int K, const FtEpArgs &ep) {
  extern __shared__ unsigned char ft_smem_raw[];
  /* The ring's base made opaque: as a constant expression of the symbol, NVVM recomputed it (and
   * ptxas its S2UR SR_CgaCtaId chain) in every k-loop iteration; as a value it is computed once.
   * Not with stream-K, at the edge of its registers already: the value kept live made BN 192
   * spill. */
  unsigned base = (ft_smem(ft_smem_raw) + 1023u) & ~1023u;
  if constexpr (!C::stream_k) asm("" : "+r"(base));
  const FtSmemMap<C> sm(base);
  /* The column-vector slices after the schedule, as a generic pointer for E. */
  ft_vec_t *const colv_all =
      reinterpret_cast<ft_vec_t *>(ft_smem_raw + (sm.sched + 32u * C::stream_k - ft_smem(ft_smem_raw)));
  /* 16-bit storage: wg broadcast from lane 0, so that the compiler knows it is warp-uniform and
   * keeps what derives from it in uniform registers (BENCHMARKS.md: 0.3-0.8 % faster in bf16).
   * Not in fp32 storage, where it made BN 256 with x + 2*sigmoid(x) spill. */
  const int wg = C::kEsize == 2 ? __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0) : (int)threadIdx.x / 128;
  const int tid = (int)threadIdx.x % 128;
  const unsigned rank = ft_cluster_rank<C::cluster>();

  if (threadIdx.x == 0) {
    for (int s = 0; s < C::stages; s++) {
      ft_mbar_init(sm.ring.full + 8 * s, 1);
      ft_mbar_init(sm.ring.empty + 8 * s, (C::pingpong ? 1 : C::consumers) * C::cluster); /* its consumers, cluster-wide */
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if constexpr (C::stream_k)
    if (threadIdx.x == 32) ft_sk_schedule<C>(sm.sched, M, N, K);
  __syncthreads();
  ft_cluster_sync<C::cluster>(); /* remote barriers initialised before anyone signals them */
  ft_grid_dependency_wait();     /* x, sx, the vectors: the kernel before (the quantizer) wrote them */

  const FtTiles<C> ts(M, N, K, rank, sm.sched);
  if (wg == C::consumers) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"((int)C::kProducerRegs));
    if (tid == 0) ft_producer<C>(ts, sm.ring, tma_x, tma_w, ep, M, N);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"((int)C::kConsumerRegs));
    ft_consumer<C>(ts, sm, colv_all, tma_y, Y, WS, FL, M, N, ep, wg, tid);
  }
  /* Shared memory must outlive the TMA stores reading it. */
  if constexpr (C::tma_store)
    if (wg < C::consumers && tid == 0) ft_tma_store_wait_all();
  __syncwarp();
  ft_cluster_sync<C::cluster>(); /* no block leaves while its partner may still write or signal it */
}

typedef FtTc<FtTcCfg> FtTcThis; /* the variant codegen wrote */

extern "C" __global__ void __launch_bounds__(FtTcThis::kThreads, 1)
ft_gemm_tc(const __grid_constant__ FtTmaDesc tma_x, const __grid_constant__ FtTmaDesc tma_w,
           const __grid_constant__ FtTmaDesc tma_y, ft_elem_t *__restrict__ Y, float *__restrict__ WS,
           unsigned *__restrict__ FL, int M, int N, int K, FtEpArgs ep) {
  ft_gemm_tc_body<FtTcThis>(&tma_x, &tma_w, &tma_y, Y, WS, FL, M, N, K, ep);
}

// Split-K's second kernel: Y = E(sum of the split_k slabs of WS), added in slice order (the same
// result every run), one rounding to the element type; FT_AUX_ELEMS consecutive elements per
// thread. Launched only when split_k > 1 (the family's reduce_kernel).
extern "C" __global__ void __launch_bounds__(FT_AUX_BLOCK)
ft_tc_splitk_reduce(const float *__restrict__ WS, ft_elem_t *__restrict__ Y, int M, int N, FtEpArgs ep) {
  if constexpr (FtTcThis::split_k > 1) {
    const size_t total = (size_t)M * (size_t)N;
    const size_t base = ((size_t)blockIdx.x * FT_AUX_BLOCK + threadIdx.x) * FT_AUX_ELEMS;
    if (base >= total) return;
    int row, col;
    ft_rowcol(base, total, N, row, col);
    ft_aux_scalar<FT_AUX_ELEMS>(base, total, N, row, col, [&](unsigned long long e, int r, int c) {
      float s = WS[e];
#pragma unroll
      for (int z = 1; z < FtTcThis::split_k; z++) s += WS[(size_t)z * total + e];
      Y[e] = ft_from_float(ft_apply_epilogue(s, r, c, ep));
    });
  } else {
    (void)WS, (void)Y, (void)M, (void)N, (void)ep;
  }
}

// Pre-split 3xtf32's operands (presplit; launched by src/gpu/launch.c before ft_gemm_tc, on x each
// call and on W once): src [rows, K] fp32 into dst [rows, 2 Kp], Kp = K rounded up to 32, each
// 32-column block of k as its big parts tf32_rn(v) then its small parts tf32_rn(v - big), exactly
// what ft_split makes in shared memory; zeros past K. Four columns per thread (K is a multiple of
// 4: TMA's rows), a grid-stride loop. An empty kernel in the other variants.
extern "C" __global__ void __launch_bounds__(256)
ft_tc_presplit(const float *__restrict__ src, float *__restrict__ dst, int rows, int K, int Kp) {
  if constexpr (FtTcThis::presplit) {
    const long long quads = (long long)rows * (Kp / 4);
    for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < quads; i += (long long)gridDim.x * 256) {
      const long long r = i / (Kp / 4);
      const int c = (int)(i - r * (Kp / 4)) * 4; /* the first of four columns, within one 32-column block */
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (c < K) v = *reinterpret_cast<const float4 *>(src + r * K + c);
      const float in[4] = {v.x, v.y, v.z, v.w};
      float b[4], s[4];
#pragma unroll
      for (int j = 0; j < 4; j++) {
        b[j] = ft_tf32_rn(in[j]);
        s[j] = ft_tf32_rn(in[j] - b[j]);
      }
      float *row = dst + r * 2 * Kp + 2 * (c / 32) * 32 + c % 32;
      *reinterpret_cast<float4 *>(row) = make_float4(b[0], b[1], b[2], b[3]);
      *reinterpret_cast<float4 *>(row + 32) = make_float4(s[0], s[1], s[2], s[3]);
    }
  } else {
    (void)src, (void)dst, (void)rows, (void)K, (void)Kp;
  }
}
