// fusedtune Hopper tensor-core GEMM (family tc, src/family_tc.c): Y[m,n] = E(sum_k X[m,k] *
// W[n,k]), X [M,K] and W [N,K] row-major (both K-major), E = FT_EPILOGUE_EXPR applied to the
// fp32 accumulator in registers, one rounding at the store. Compiled by NVRTC for sm_90a.
//
// Structure: TMA (128-byte swizzle) fills a ring of FT_STAGES shared-memory stages guarded by
// full/empty mbarriers; warpgroup FT_CONSUMERS is the producer (one thread issues TMA,
// setmaxnreg.dec); warpgroups 0..FT_CONSUMERS-1 each own 64 rows of the FT_BM x FT_BN tile (with
// FT_PINGPONG each owns whole tiles, below) and run wgmma m64nBNk16 (bf16/fp16) or m64nBNk8 (tf32) from shared memory. The grid is
// persistent: block b walks tile units b, b + gridDim, ... in a grouped order (FT_GROUP unit
// rows walked column by column), so the producer prefetches the next tile while the consumers
// run the epilogue. With FT_CLUSTER 2 the two blocks of a cluster take adjacent tile rows of the
// same tile column and each loads half of the W tile, multicast to both.
//
// Variant defines (codegen, from the family): FT_BN, FT_CONSUMERS, FT_STAGES, FT_CLUSTER,
// FT_GROUP, FT_SMEM_BYTES; FT_DTYPE (ft_common.cuh: 0 fp32 storage with FT_TF32 or FT_3XTF32,
// 1 bf16, 2 fp16); 3xtf32: FT_CHUNK, FT_AREGS; FT_SPLITK (k slices); FT_TSTORE (TMA-store
// epilogue); FT_STREAMK (stream-K: WS one fp32 tile per block, FL a zeroed flag per block and
// consumer); FT_PINGPONG (ping-pong consumers, below); FT_EPI_W, FT_EPI_GROUPED, FT_EPI_EARLY (gemm_tc_config.cuh's defaults). Host contract (src/family_tc.c): grid a
// multiple of FT_CLUSTER, block 128 (FT_CONSUMERS + 1) threads, FT_SMEM_BYTES of dynamic shared
// memory, three tensor maps: box {FT_BK, FT_BM} over x, {FT_BK, FT_BN / FT_CLUSTER} over W
// (128-byte swizzle, zero fill, TFLOAT32 type in tf32 mode so TMA rounds to nearest, FLOAT32 in
// 3xtf32), and with FT_TSTORE {FT_C_COLS, 64} over Y in its storage type (zeros otherwise);
// K >= 1 and K * element size a multiple of 16 bytes (with FT_TSTORE N * element size too).
//
// 3xtf32 (FT_SPLIT): once a stage is full, all consumer threads split its raw fp32 x and W tiles
// into big = tf32_rn(v) (in place: the position, hence the swizzle, is kept) and small =
// tf32_rn(v - big) (into a small buffer), then each k tile adds small.big, big.small and big.big
// into a partial accumulator p that restarts every FT_CHUNK k tiles and is summed into d with
// fp32 adds: one tensor-core accumulator never carries a long sum, since its adds truncate.
// With FT_AREGS only W is split in shared memory; each warpgroup loads its x fragments from the
// raw tile and splits them in registers (wgmma with A from registers).
//
// FT_TSTORE: the epilogue goes through shared memory and TMA stores (a third tensor map, over Y,
// box {FT_C_COLS, 64}); without it each thread stores its pairs (tensor map tma_y unused).
//
// Split-K (FT_SPLITK > 1): a unit is a tile and one of FT_SPLITK contiguous ranges of k tiles
// (none empty: the host's rule); its raw fp32 sums go to slab z of WS (FT_SPLITK x M x N floats)
// and ft_tc_splitk_reduce, a second kernel, adds the slabs in order and applies E once.
//
// Stream-K (FT_STREAMK): the G = gridDim / FT_CLUSTER unit slots take the whole waves of units as
// above; the sk units of the last, partial wave (sk x ktiles k tiles in all, S) are cut evenly:
// slot s takes k tiles [S s / G, S (s + 1) / G) of them in unit order. A range that ends inside
// a unit publishes its raw sums (WS: a BM x BN fp32 tile per block, flags FL: one per block and
// warpgroup, zero between launches); the slot whose range ends a unit adds the sums of the slots
// before it that share the unit, in slot order, then applies E and stores. Each slot publishes
// first (its last range, before its whole units) and waits only at the unit its range starts
// inside (after its whole waves), for lower slots only, which never wait before they publish:
// no block waits on a block that waits (the host checks that the whole grid is resident).
//
// Ping-pong (FT_PINGPONG 1 or 2): a tile is 64 FT_PINGPONG rows, all of one consumer's (FT_MSUB
// m64 accumulators); consumer c takes work items j = c, c + 2, ... of the block's list, skipping
// the other's k tiles in the ring (every item has all k tiles: no split-K or stream-K). The
// producer loads in list order, so consumer 1's wgmma start as consumer 0's end and each
// consumer's epilogue overlaps the other's main loop. The main loops take turns through two named
// barriers (4: consumer 0's loop done, 5: consumer 1's): a consumer starts waiting on its first
// stage only once the other has passed every full barrier of its item, so each stage's barrier is
// then exactly one phase from the one awaited and the parity wait cannot match an older phase (a
// consumer free to run ahead, skipping the other's k tiles, passed on an earlier load and hung or
// faulted).

FT_DEFINE_APPLY_EPILOGUE()

// A CUtensorMap, opaque here (the kernel text includes no CUDA header).
struct alignas(64) FtTmaDesc {
  char b[128];
};

__device__ __forceinline__ unsigned ft_smem(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void ft_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}

__device__ __forceinline__ void ft_mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void ft_mbar_wait(unsigned bar, unsigned parity) {
  unsigned ok;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!ok);
}

// Releases a stage: one arrival on the empty barrier of every block of the cluster, since with
// multicast each block's producer writes into both blocks' stage.
__device__ __forceinline__ void ft_mbar_release(unsigned bar) {
#if FT_CLUSTER == 1
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
#else
#pragma unroll
  for (unsigned cta = 0; cta < FT_CLUSTER; cta++) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(cta));
    /* Default (.release.cta) semantics: the wgmma reads of the stage are complete by
     * wait_group already; an explicit .release.cluster here cost ~40 % (a cluster-scope fence
     * per k tile). */
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
  }
#endif
}

__device__ __forceinline__ void ft_tma_load(unsigned dst, const FtTmaDesc *map, int c0, int c1,
                                            unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
               "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar)
               : "memory");
}

#if FT_CLUSTER > 1
// The same box into the same offset of every block in mask, each block's barrier told.
__device__ __forceinline__ void ft_tma_load_mc(unsigned dst, const FtTmaDesc *map, int c0, int c1,
                                               unsigned bar, unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
               "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
               : "memory");
}
#endif

__device__ __forceinline__ void ft_cluster_sync() {
#if FT_CLUSTER > 1
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
#endif
}

// K-major operand in 128-byte-swizzled rows of 128 bytes: 8-row atoms 1024 bytes apart (SBO),
// LBO unused for this swizzle (1 by convention), swizzle mode 1 = 128B.
__device__ __forceinline__ unsigned long long ft_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}


#if FT_SPLIT
__device__ __forceinline__ float ft_tf32_rn(float v) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return __uint_as_float(r);
}

// Splits nvec float4 at src (shared) in place into their big parts, the small parts to dst at the
// same offsets; thread t of nt.
__device__ __forceinline__ void ft_split(unsigned src, unsigned dst, int nvec, int t, int nt) {
  for (int i = t; i < nvec; i += nt) {
    float v[4], b[4], sm[4];
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                 : "r"(src + 16 * i)
                 : "memory");
#pragma unroll
    for (int j = 0; j < 4; j++) {
      b[j] = ft_tf32_rn(v[j]);
      sm[j] = ft_tf32_rn(v[j] - b[j]);
    }
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(src + 16 * i), "f"(b[0]), "f"(b[1]),
                 "f"(b[2]), "f"(b[3])
                 : "memory");
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(dst + 16 * i), "f"(sm[0]), "f"(sm[1]),
                 "f"(sm[2]), "f"(sm[3])
                 : "memory");
  }
}
#endif

// After a k tile's wgmma are committed: at the end of a chunk all of them are waited for and the
// partial sum p is added into d with fp32 adds; otherwise k tile kt - 1's are waited for (its
// stage can then be released).
__device__ __forceinline__ void ft_partial_done(float (&p)[FT_BN / 2], float (&d)[FT_BN / 2], int flush, int kt) {
  if (flush) {
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < FT_BN / 2; i++) {
      asm volatile("" : "+f"(p[i])::"memory");
      d[i] += p[i];
    }
  } else if (kt > 0) {
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
}

#if defined(FT_AREGS)
// This warpgroup's x fragments of one k tile from the raw swizzled tile at sa (its 64 rows),
// split into big and small. m64k8 tf32 A fragment, warp w rows 16 w..16 w + 15, g = lane / 4,
// t = lane % 4: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4). Element (r, c) of a
// 128-byte-swizzled row r sits in 16-byte chunk (c / 4) ^ (r % 8).
__device__ __forceinline__ void ft_load_split_a(unsigned sa, int warp, int lane, unsigned (&big)[FT_BK / FT_KSTEP][4],
                                                unsigned (&sml)[FT_BK / FT_KSTEP][4]) {
#pragma unroll
  for (int kk = 0; kk < FT_BK / FT_KSTEP; kk++)
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int r = 16 * warp + lane / 4 + 8 * (i & 1), c = 8 * kk + lane % 4 + 4 * (i >> 1);
      const unsigned addr = sa + (unsigned)r * 128u + ((((unsigned)c >> 2) ^ ((unsigned)r & 7u)) << 4) + ((unsigned)c & 3u) * 4u;
      float v;
      asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
      const float b = ft_tf32_rn(v);
      big[kk][i] = __float_as_uint(b);
      sml[kk][i] = __float_as_uint(ft_tf32_rn(v - b));
    }
}
#endif

__device__ __forceinline__ unsigned ft_pack(float lo, float hi) {
  unsigned r;
#if FT_DTYPE == 1
  asm("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(lo), "f"(hi));
#else
  asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(lo), "f"(hi));
#endif
  return r;
}

// E of two adjacent outputs (row, col), (row, col + 1), stored when inside the matrix.
__device__ __forceinline__ void ft_store2(ft_elem_t *__restrict__ Y, float a, float b, int row,
                                          int col, int M, int N, const FtEpArgs &ep) {
  if (row >= M || col >= N) return;
  ft_elem_t *dst = Y + (size_t)row * (size_t)N + col;
  if (col + 1 < N) {
    a = ft_apply_epilogue(a, row, col, ep);
    b = ft_apply_epilogue(b, row, col + 1, ep);
#if FT_DTYPE == 0
    if ((N & 1) == 0) {
      asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(dst), "f"(a), "f"(b) : "memory");
    } else {
      dst[0] = a;
      dst[1] = b;
    }
#else
    const unsigned p = ft_pack(a, b);
    if ((N & 1) == 0) {
      *reinterpret_cast<unsigned *>(dst) = p;
    } else {
      dst[0] = (unsigned short)(p & 0xFFFF);
      dst[1] = (unsigned short)(p >> 16);
    }
#endif
  } else {
    a = ft_apply_epilogue(a, row, col, ep);
#if FT_DTYPE == 0
    dst[0] = a;
#else
    dst[0] = (unsigned short)(ft_pack(a, 0.0f) & 0xFFFF);
#endif
  }
}

// A pair of finished outputs (row, col), (row, col + 1) of a tile wholly inside Y, N even.
__device__ __forceinline__ void ft_store2_inside(ft_elem_t *__restrict__ Y, float a, float b, int row, int col,
                                                 int N) {
  ft_elem_t *dst = Y + (size_t)row * (size_t)N + col;
#if FT_DTYPE == 0
  asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(dst), "f"(a), "f"(b) : "memory");
#else
  *reinterpret_cast<unsigned *>(dst) = ft_pack(a, b);
#endif
}

// FT_STORE_OVERLAP: a tile inside Y keeps E(accumulator) packed to 16-bit pairs (BN / 4
// registers) and its store boxes go out one per k tile of the warpgroup's next tile, each after
// that k tile's wgmma are issued, so the stores run while the tensor cores work on the next tile
// instead of between the tiles. boxes: how many are still to store (0: nothing pending).
struct FtPending {
#if FT_STORE_OVERLAP
  unsigned pk[FT_BN / 4]; /* pair (acc[2 p], acc[2 p + 1]) of the m64 accumulator layout */
  int boxes, r0, n0;
#endif
};

#if FT_TSTORE
// Every output pair (wl, j, h) a thread holds of a store box: 16-column group wl, 8-column half j,
// row half h (the m64 accumulator layout below).
#define FT_FOR_BOX_PAIRS                                        \
  _Pragma("unroll") for (int wl = 0; wl < FT_C_COLS / 16; wl++) \
    _Pragma("unroll") for (int j = 0; j < 2; j++)               \
      _Pragma("unroll") for (int h = 0; h < 2; h++)

// The accumulator index of pair (wl, j, h) of box c (its first element; the second follows).
__device__ __forceinline__ constexpr int ft_box_index(int c, int wl, int j, int h) {
  return 8 * (c * (FT_C_COLS / 16) + wl) + 4 * j + 2 * h;
}

// The address of byte `byte` of row rr of a box buffer in the TMA store's 128-byte swizzle
// (16-byte chunks XORed with the row), which also spreads a warp's stores over all banks.
__device__ __forceinline__ unsigned ft_box_addr(unsigned buf, unsigned rr, unsigned byte) {
  return buf + rr * 128u + (((byte >> 4) ^ (rr & 7u)) << 4) + (byte & 15u);
}

// E of the output pair (wl, j, h) of box c into a, b (kGuard: only on outputs inside Y).
template <bool kGuard>
__device__ __forceinline__ void ft_box_pair(const float (&d)[FT_BN / 2], int c, int wl, int j, int h, int row,
                                            int col, int M, int N, const FtEpArgs &ep, float &a, float &b) {
  const int i = ft_box_index(c, wl, j, h);
  const int r = row + 8 * h, cc = col + c * FT_C_COLS + 16 * wl + 8 * j;
  a = d[i], b = d[i + 1];
#if FT_EPI_EARLY
  if (!kGuard) return; /* E ran on the whole tile already (ft_tile_store_tma) */
#endif
  if (!kGuard || (r < M && cc < N)) a = ft_apply_epilogue(a, r, cc, ep);
  if (!kGuard || (r < M && cc + 1 < N)) b = ft_apply_epilogue(b, r, cc + 1, ep);
}

// E of box c (columns 16 (FT_C_COLS / 16) c ..) of this thread's accumulator into the warpgroup's
// 128-byte-swizzled box buffer buf (64 rows of 128 bytes, as the TMA store reads it; the swizzle
// spreads a warp's pairs over all banks). kGuard: the tile crosses Y's edge, so E (which may
// read vectors) runs only on outputs inside; TMA clips the rest. row/col: the global
// coordinates of the thread's first output of the tile, rb its row in the box.
template <bool kGuard>
__device__ __forceinline__ void ft_box_to_smem(const float (&d)[FT_BN / 2], int c, unsigned buf, int row, int col,
                                               int rb, int cb, int M, int N, const FtEpArgs &ep) {
#if FT_EPI_GROUPED
  /* E on all of the box's outputs first, then the stores: independent evaluations in one block
   * for the scheduler to interleave (one warp per scheduler runs the epilogue, so a heavy E
   * evaluated output by output is bound by its dependency chain). */
  float e[FT_C_COLS / 8][2][2];
  FT_FOR_BOX_PAIRS
    ft_box_pair<kGuard>(d, c, wl, j, h, row, col, M, N, ep, e[2 * wl + j][h][0], e[2 * wl + j][h][1]);
#endif
  FT_FOR_BOX_PAIRS {
#if FT_EPI_GROUPED
    const float a = e[2 * wl + j][h][0], b = e[2 * wl + j][h][1];
#else
    float a, b;
    ft_box_pair<kGuard>(d, c, wl, j, h, row, col, M, N, ep, a, b);
#endif
    const unsigned rr = (unsigned)(rb + 8 * h), byte = (unsigned)((16 * wl + 8 * j + cb) * FT_ESIZE);
    const unsigned addr = ft_box_addr(buf, rr, byte);
    /* No "memory" clobber: the epilogue's vector loads may move ahead of these stores; the
     * proxy fence after the box orders them before the TMA store. */
#if FT_DTYPE == 0
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b));
#else
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(ft_pack(a, b)));
#endif
  }
}

#if FT_EPI_STAGED
// Byte address of fp32 column col (0 .. FT_C_COLS - 1) of staging row rr: 16-byte chunks
// XOR-swizzled by the row, so that both the accumulator's pair writes (8 rows x 32 bytes per warp)
// and the loop's float4 reads (two whole rows per warp) take the fewest wavefronts.
__device__ __forceinline__ unsigned ft_stage_addr(unsigned s, unsigned rr, unsigned col) {
  const unsigned byte = col * 4u;
  return s + rr * (unsigned)FT_S_PITCH + (((byte >> 4) ^ (rr & 7u)) << 4) + (byte & 15u);
}

// Box c of this thread's accumulator raw into the staging box s, then (after the warpgroup's
// barrier) E on every output inside Y, four adjacent columns per step of a rolled loop, into the
// box buffer buf in the TMA store's swizzled layout. r0, c0: the box's first row and column in Y.
__device__ __forceinline__ void ft_box_staged(const float (&d)[FT_BN / 2], int c, unsigned s, unsigned buf, int r0,
                                              int c0, int rb, int cb, int tid, int wg, int M, int N,
                                              const FtEpArgs &ep) {
  FT_FOR_BOX_PAIRS {
    const int i = ft_box_index(c, wl, j, h);
    const unsigned to = ft_stage_addr(s, (unsigned)(rb + 8 * h), (unsigned)(16 * wl + 8 * j + cb));
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(to), "f"(d[i]), "f"(d[i + 1]));
  }
  asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");
#pragma unroll 1
  for (int q = tid; q < 64 * (FT_C_COLS / 4); q += 128) {
    const int rr = q / (FT_C_COLS / 4), col = 4 * (q % (FT_C_COLS / 4));
    const unsigned from = ft_stage_addr(s, (unsigned)rr, (unsigned)col);
    float v[4];
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                 : "r"(from)
                 : "memory");
    const int r = r0 + rr;
#pragma unroll
    for (int e = 0; e < 4; e++)
      if (r < M && c0 + col + e < N) v[e] = ft_apply_epilogue(v[e], r, c0 + col + e, ep);
#if FT_DTYPE == 0
    (void)buf; /* fp32: staged in the box buffer itself */
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(from), "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3])
                 : "memory");
#else
    const unsigned to = ft_box_addr(buf, (unsigned)rr, (unsigned)(col * FT_ESIZE));
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(to), "r"(ft_pack(v[0], v[1])), "r"(ft_pack(v[2], v[3]))
                 : "memory");
#endif
  }
}
#endif

#if FT_COLV_STAGE
// This consumer's copy of the tile's column-vector slice (BN elements from src) into dst: 16-byte
// cp.async chunks that land while the k loop runs; a vector not 16-byte aligned (a user's pointer
// may be any element's) is copied element by element, its loads waited for here. One buffer per
// consumer serves every tile: the previous tile's E read it before a barrier (its first store
// box's, or with FT_STORE_OVERLAP the one right after E) that all of the consumer's threads passed
// before any of them issues this copy.
__device__ __forceinline__ void ft_colv_fetch(ft_vec_t *dst, const ft_vec_t *src, int tid) {
  if ((reinterpret_cast<unsigned long long>(src) & 15u) == 0) {
    for (int c = tid; c < FT_COLV_BYTES / 16; c += 128)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(ft_smem(dst) + 16u * (unsigned)c),
                   "l"(reinterpret_cast<const char *>(src) + 16 * c)
                   : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
  } else {
    for (int e = tid; e < FT_BN; e += 128) dst[e] = src[e];
  }
}
#endif

// One store box: buffer nbox & 1 of this warpgroup's two, once the TMA store that read it two
// boxes ago has finished reading (one thread waits, all pass the named barrier); fill(buf) writes
// it; a proxy fence and the barrier again, then one thread stores it at (col, r0).
template <class Fill>
__device__ __forceinline__ void ft_box_round(Fill fill, unsigned cbuf, const FtTmaDesc *map, int col, int r0, int tid,
                                             int wg, unsigned &nbox) {
  const unsigned buf = cbuf + (nbox & 1u) * FT_C_BOX_BYTES;
  if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
  asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");
  fill(buf);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");
  if (tid == 0) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                     (unsigned long long)map),
                 "r"(col), "r"(r0), "r"(buf)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  }
  nbox++;
}

#if FT_STORE_OVERLAP
// The next pending box of pt (box FT_BN / FT_C_COLS - boxes), written and stored. The box is
// picked by an unrolled loop so that every index into pt.pk is a constant (pk stays in registers).
__device__ __forceinline__ void ft_pending_box(FtPending &pt, unsigned cbuf, const FtTmaDesc *map, int warp, int lane,
                                               int tid, int wg, unsigned &nbox) {
  const int rb = warp * 16 + lane / 4, cb = 2 * (lane % 4);
#pragma unroll
  for (int c = 0; c < FT_BN / FT_C_COLS; c++) {
    if (c != FT_BN / FT_C_COLS - pt.boxes) continue;
    ft_box_round(
        [&](unsigned buf) {
          FT_FOR_BOX_PAIRS {
            const unsigned rr = (unsigned)(rb + 8 * h), byte = (unsigned)((16 * wl + 8 * j + cb) * FT_ESIZE);
            asm volatile("st.shared.b32 [%0], %1;" ::"r"(ft_box_addr(buf, rr, byte)), "r"(pt.pk[ft_box_index(c, wl, j, h) / 2]));
          }
        },
        cbuf, map, pt.n0 + c * FT_C_COLS, pt.r0, tid, wg, nbox);
  }
  pt.boxes--;
}
#endif

// The tile's E through shared memory and TMA stores, box by box, alternating this warpgroup's
// two box buffers (nbox counts its boxes across tiles): before a buffer is written again, the
// store that read it two boxes ago must have finished reading (one thread waits, all pass a
// named barrier); after it is written, a proxy fence and the barrier again, then one thread
// stores it. The staged form (FT_EPI_STAGED) passes that barrier once more in between, after the
// raw sums are staged and before the loop reads them.
__device__ __forceinline__ void ft_tile_store_tma(float (&d)[FT_BN / 2], unsigned cbuf, unsigned sbuf,
                                                  const FtTmaDesc *map, ft_elem_t *__restrict__ Y,
                                                  int r0, int n0, int M, int N, int wg, int warp, int lane,
                                                  unsigned &nbox, const FtEpArgs &ep, const ft_vec_t *colv,
                                                  FtPending &pt) {
  const int tid = warp * 32 + lane; /* r0: the first of the 64 rows this accumulator holds */
  if (r0 >= M) return; /* this warpgroup's rows of the tile are all outside */
  const int row = r0 + warp * 16 + lane / 4, cb = 2 * (lane % 4);
  const bool inside = r0 + 64 <= M && n0 + FT_BN <= N;
#if FT_EPI_EARLY && !FT_EPI_STAGED
  if (inside) { /* E on the whole tile in registers, its vector loads free to go together */
#if FT_COLV_STAGE
    /* This consumer's copies of the slice (ft_colv_fetch) done and seen by all its threads; E
     * then reads slot FT_EP_COLV_SLOT at colv[col - n0]. */
    asm volatile("cp.async.wait_all;" ::: "memory");
    asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");
    FtEpArgs eps = ep;
    eps.v[FT_EP_COLV_SLOT] = colv - n0;
#else
    (void)colv;
    const FtEpArgs &eps = ep;
#endif
#pragma unroll
    for (int i = 0; i < FT_BN / 2; i++)
      d[i] = ft_apply_epilogue(d[i], row + 8 * ((i >> 1) & 1), n0 + cb + 16 * (i / 8) + 8 * ((i >> 2) & 1) + (i & 1), eps);
#if FT_STORE_OVERLAP
#pragma unroll
    for (int q = 0; q < FT_BN / 4; q++) pt.pk[q] = ft_pack(d[2 * q], d[2 * q + 1]);
    pt.boxes = FT_BN / FT_C_COLS, pt.r0 = r0, pt.n0 = n0;
#if FT_COLV_STAGE
    /* No store box follows to order E's reads of the slice before another thread's copy of the
     * next tile's (ft_colv_fetch): this barrier does. */
    asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");
#endif
    return; /* stored during the next tile's k loop (ft_pending_box) */
#endif
  }
#else
  (void)colv;
#endif
#if FT_STORE_OVERLAP
  /* Nothing to keep: zeroed so that pk is not live from the previous tile across these stores
   * (without it ptxas kept the old pairs and spilled). */
#pragma unroll
  for (int q = 0; q < FT_BN / 4; q++) pt.pk[q] = 0u;
#endif
  (void)pt;
#pragma unroll
  for (int c = 0; c < FT_BN / FT_C_COLS; c++) {
    if (n0 + c * FT_C_COLS >= N) break;
    ft_box_round(
        [&](unsigned buf) {
#if FT_EPI_STAGED
          (void)inside, (void)row;
          ft_box_staged(d, c, FT_DTYPE == 0 ? buf : sbuf, buf, r0, n0 + c * FT_C_COLS, warp * 16 + lane / 4, cb, tid, wg,
                        M, N, ep);
#else
          (void)sbuf;
          if (inside)
            ft_box_to_smem<false>(d, c, buf, row, n0 + cb, warp * 16 + lane / 4, cb, M, N, ep);
          else
            ft_box_to_smem<true>(d, c, buf, row, n0 + cb, warp * 16 + lane / 4, cb, M, N, ep);
#endif
        },
        cbuf, map, n0 + c * FT_C_COLS, r0, tid, wg, nbox);
  }
#if FT_BN % FT_C_COLS
  /* A wave-fitted BN's columns past its last whole box: direct stores, 8-column chunks. */
#pragma unroll
  for (int q = FT_BN / FT_C_COLS * (FT_C_COLS / 8); q < FT_BN / 8; q++) {
    const int col = n0 + cb + 8 * q;
    if (inside) {
      float e[4];
#pragma unroll
      for (int k = 0; k < 4; k++) {
        e[k] = d[4 * q + k];
#if !FT_EPI_EARLY || FT_EPI_STAGED
        e[k] = ft_apply_epilogue(e[k], row + 8 * (k >> 1), col + (k & 1), ep);
#endif
      }
      ft_store2_inside(Y, e[0], e[1], row, col, N);
      ft_store2_inside(Y, e[2], e[3], row + 8, col, N);
    } else {
      ft_store2(Y, d[4 * q + 0], d[4 * q + 1], row, col, M, N, ep);
      ft_store2(Y, d[4 * q + 2], d[4 * q + 3], row + 8, col, M, N, ep);
    }
  }
#else
  (void)Y;
#endif
}
#endif

#if FT_SPLITK > 1
// Split-K: slice z's raw fp32 sums of two adjacent outputs into its M x N slab of WS.
__device__ __forceinline__ void ft_store_raw2(float *__restrict__ ws, float a, float b, int row, int col, int M,
                                              int N) {
  if (row >= M || col >= N) return;
  float *dst = ws + (size_t)row * (size_t)N + col;
  if (col + 1 < N && (N & 1) == 0) {
    asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(dst), "f"(a), "f"(b) : "memory");
  } else {
    dst[0] = a;
    if (col + 1 < N) dst[1] = b;
  }
}
#endif

// A block's work item: unit u (tile, with split-K also its k slice), its k tiles [k0, k0 + nk),
// and what becomes of the sums: kind 0 E and store; 1 (stream-K) publish them raw; 2 (stream-K)
// add the raw sums slots c0 .. c1 - 1 published for the unit, then E and store.
struct FtWork {
  int u, k0, nk, kind, c0, c1;
};

#if FT_STREAMK
__device__ __forceinline__ long long ft_sk_begin(int s, long long S, int G) { return S * s / G; }

// The slot whose range holds k tile i of the partial wave (S k tiles over G slots).
__device__ __forceinline__ int ft_sk_slot(long long i, long long S, int G) {
  int s = (int)(i * G / S);
  while (s + 1 < G && ft_sk_begin(s + 1, S, G) <= i) s++;
  while (s > 0 && ft_sk_begin(s, S, G) > i) s--;
  return s;
}
#endif

// Work item j of unit slot s of G (false past its last): producer and consumers walk the same
// list. Stream-K's schedule of the slot sits in shared memory at sched, written once at the
// start: its range [a, b) of the partial wave's k tiles, a / ktiles, b / ktiles, whether b ends
// inside a unit, the whole waves, and 1 + the first slot sharing the unit a starts in (0: no
// stream-K). Kept in registers, or divided out here, it cost the consumers spills at BN 256.
__device__ __forceinline__ bool ft_work(int j, int s, int G, int tile_units, int ktiles, int kper, unsigned sched,
                                        FtWork &w) {
  w.kind = 0, w.c0 = w.c1 = 0;
#if FT_STREAMK
  unsigned a, b, waves, c0p1, ta, tb, part;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(waves), "=r"(c0p1) : "r"(sched));
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(ta), "=r"(tb) : "r"(sched + 16));
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(part) : "r"(sched + 24));
  if (c0p1 != 0) {
    const unsigned kt = (unsigned)ktiles, dp = waves * (unsigned)G;
    if (part) { /* the range ends inside unit tb: published first */
      if (j == 0) {
        const unsigned lo = a > tb * kt ? a : tb * kt;
        w.u = (int)(dp + tb), w.k0 = (int)(lo - tb * kt), w.nk = (int)(b - lo), w.kind = 1;
        return true;
      }
      j--;
    }
    if (j < (int)waves) {
      w.u = s + j * G, w.k0 = 0, w.nk = ktiles;
      return true;
    }
    const unsigned t = ta + (unsigned)(j - (int)waves); /* units whose last k tile is in the range */
    if (t >= tb) return false;
    const unsigned lo = a > t * kt ? a : t * kt;
    w.u = (int)(dp + t), w.k0 = (int)(lo - t * kt), w.nk = (int)((t + 1) * kt - lo);
    if (lo > t * kt) w.kind = 2, w.c0 = (int)c0p1 - 1, w.c1 = s; /* only unit ta can start inside */
    return true;
  }
#endif
  (void)sched;
  const int u = s + j * G;
  if (u >= tile_units * FT_SPLITK) return false;
  const int z = u / tile_units;
  w.u = u, w.k0 = z * kper, w.nk = ktiles - w.k0 < kper ? ktiles - w.k0 : kper; /* >= 1: the host's rule */
  return true;
}

extern "C" __global__ void __launch_bounds__(FT_THREADS, 1)
ft_gemm_tc(const __grid_constant__ FtTmaDesc tma_x, const __grid_constant__ FtTmaDesc tma_w,
           const __grid_constant__ FtTmaDesc tma_y, ft_elem_t *__restrict__ Y, float *__restrict__ WS, unsigned *__restrict__ FL, int M, int N,
           int K, FtEpArgs ep) {
  extern __shared__ unsigned char ft_smem_raw[];
  /* The ring's base made opaque: as a constant expression of the symbol, NVVM recomputed it (and
   * ptxas its S2UR SR_CgaCtaId chain) in every k-loop iteration, 5 % of the loop's stall samples
   * on the H200 (BENCHMARKS.md, session 15); as a value it is computed once. Not with stream-K,
   * at the edge of its registers already: the value kept live made BN 192 spill. */
  unsigned base = (ft_smem(ft_smem_raw) + 1023u) & ~1023u;
#if !FT_STREAMK
  asm("" : "+r"(base));
#endif
  const unsigned sA = base, sB = base + FT_STAGES * FT_A_BYTES;
  const unsigned small = base + FT_STAGES * FT_STAGE_BYTES; /* FT_SMALL_BUFS stages' worth */
  const unsigned cbuf = small + FT_SMALL_BYTES; /* FT_TSTORE's box buffers, 1024-aligned */
  const unsigned sbuf = cbuf + FT_C_BYTES; /* FT_EPI_STAGED's staging boxes (16-bit storage) */
  const unsigned full = sbuf + FT_S_BYTES, empty = full + 8 * FT_STAGES;
  const unsigned sched = empty + 8 * FT_STAGES; /* stream-K: the slot's range (ft_work) */
  /* FT_COLV_STAGE: FT_COLV_BYTES per consumer after the schedule, as a generic pointer for E. */
  ft_vec_t *const colv_all = reinterpret_cast<ft_vec_t *>(ft_smem_raw + (sched + 32u * FT_STREAMK - ft_smem(ft_smem_raw)));
  /* 16-bit storage: wg broadcast from lane 0, so that the compiler knows it is warp-uniform and
   * keeps what derives from it (tile rows, shared-memory offsets) in uniform registers. H200,
   * 1024x8192^2 bf16, clusters of 1 (BENCHMARKS.md, session 11): relu(x + bias) 0.7-0.8 % faster,
   * x 0.3-0.4 %. Not in fp32 storage, where it made BN 256 with x + 2*sigmoid(x) spill. */
  const int wg = FT_ESIZE == 2 ? __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0) : (int)threadIdx.x / 128;
  const int tid = (int)threadIdx.x % 128;
#if FT_CLUSTER > 1
  unsigned rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
#else
  const unsigned rank = 0;
#endif

  if (threadIdx.x == 0) {
    for (int s = 0; s < FT_STAGES; s++) {
      ft_mbar_init(full + 8 * s, 1);
      ft_mbar_init(empty + 8 * s, (FT_PINGPONG ? 1 : FT_CONSUMERS) * FT_CLUSTER); /* its consumers, cluster-wide */
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
#if FT_STREAMK
  if (threadIdx.x == 32) { /* the slot's share of the partial wave's S k tiles: [S s / G, S (s + 1) / G) */
    const int tm = (M + FT_BM - 1) / FT_BM, units = (tm + FT_CLUSTER - 1) / FT_CLUSTER * ((N + FT_BN - 1) / FT_BN);
    const int G = (int)gridDim.x / FT_CLUSTER, s = (int)blockIdx.x / FT_CLUSTER, waves = units / G;
    const long long kt = (K + FT_BK - 1) / FT_BK, S = (long long)(units - waves * G) * kt;
    const long long a = ft_sk_begin(s, S, G), b = ft_sk_begin(s + 1, S, G);
    const unsigned on = S >= G && S < (1ll << 31); /* the host's rule; else every unit whole */
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(sched), "r"((unsigned)a), "r"((unsigned)b),
                 "r"((unsigned)waves), "r"(on ? (unsigned)ft_sk_slot(a / kt * kt, S, G) + 1u : 0u)
                 : "memory");
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(sched + 16), "r"((unsigned)(a / kt)),
                 "r"((unsigned)(b / kt)), "r"((unsigned)(b % kt != 0)), "r"(0u)
                 : "memory");
  }
#endif
  __syncthreads();
  ft_cluster_sync(); /* remote barriers initialised before anyone signals them */

  const int tiles_m = (M + FT_BM - 1) / FT_BM, tiles_n = (N + FT_BN - 1) / FT_BN;
  const int unit_rows = (tiles_m + FT_CLUSTER - 1) / FT_CLUSTER, unit_cols = tiles_n;
#define FT_TILE_ORIGIN(ur, uc) ((ur) * FT_CLUSTER + (int)rank) * FT_BM, (uc) * FT_BN
  /* A unit is a tile and one of FT_SPLITK k slices (slice-major: the slices of a tile run at
   * different times, the tiles of a slice in the grouped order). */
  const int tile_units = unit_rows * unit_cols;
  const int slot = (int)blockIdx.x / FT_CLUSTER, slots = (int)gridDim.x / FT_CLUSTER;
  const int ktiles = (K + FT_BK - 1) / FT_BK, kper = (ktiles + FT_SPLITK - 1) / FT_SPLITK;
#define FT_UNIT_COORDS(w)                                                   \
  const int z = (w).u / tile_units;                                         \
  int ur, uc;                                                               \
  ft_grouped_coords<FT_GROUP>((w).u - z * tile_units, unit_rows, unit_cols, ur, uc); \
  const int k0 = (w).k0, nk = (w).nk

  if (wg == FT_CONSUMERS) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(FT_PRODUCER_REGS));
    if (tid == 0) {
      asm volatile("prefetch.tensormap [%0];" ::"l"((unsigned long long)&tma_x) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"((unsigned long long)&tma_w) : "memory");
      int stage = 0;
      unsigned phase = 0;
      FtWork wk;
      for (int j = 0; ft_work(j, slot, slots, tile_units, ktiles, kper, sched, wk); j++) {
        FT_UNIT_COORDS(wk);
        (void)z;
        const int m0_n0[2] = {FT_TILE_ORIGIN(ur, uc)};
        const int m0 = m0_n0[0], n0 = m0_n0[1];
        for (int kt = 0; kt < nk; kt++) {
          const int kx = (k0 + kt) * FT_BK;
          ft_mbar_wait(empty + 8 * stage, phase ^ 1);
          const unsigned bar = full + 8 * stage;
          ft_mbar_expect_tx(bar, FT_STAGE_BYTES);
#if FT_CLUSTER > 1
          ft_tma_load(sA + stage * FT_A_BYTES, &tma_x, kx, m0, bar);
          ft_tma_load_mc(sB + stage * FT_B_BYTES + rank * (FT_B_BYTES / 2), &tma_w, kx,
                         n0 + (int)rank * (FT_BN / 2), bar, (unsigned short)3);
#else
          ft_tma_load(sA + stage * FT_A_BYTES, &tma_x, kx, m0, bar);
          ft_tma_load(sB + stage * FT_B_BYTES, &tma_w, kx, n0, bar);
#endif
          if (++stage == FT_STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(FT_CONSUMER_REGS));
    float dd[FT_MSUB][FT_BN / 2];
    float(&d)[FT_BN / 2] = dd[0]; /* the accumulator of every mode but ping-pong's second m64 block */
    int stage = 0;
    unsigned phase = 0, nbox = 0;
    const int warp = tid / 32, lane = tid % 32;
    (void)nbox, (void)cbuf, (void)sbuf, (void)tma_y, (void)FL, (void)d;
    ft_vec_t *const my_colv = colv_all + wg * (FT_COLV_BYTES / (int)sizeof(ft_vec_t)); /* FT_COLV_STAGE's */
    const unsigned my_cbuf = cbuf + (unsigned)wg * 2u * FT_C_BOX_BYTES; /* FT_TSTORE's two box buffers */
    (void)my_colv, (void)my_cbuf;
    FtPending pt; /* FT_STORE_OVERLAP: the previous tile's boxes still to store */
#if FT_STORE_OVERLAP
    pt.boxes = 0, pt.r0 = 0, pt.n0 = 0;
#endif
    FtWork wk;
    for (int j = 0; ft_work(j, slot, slots, tile_units, ktiles, kper, sched, wk); j++) {
#if FT_PINGPONG
      if ((j & 1) != wg) continue; /* the other consumer's item */
      {                             /* where item j's k tiles start in the ring: every item has all */
        const long long pos = (long long)j * ktiles;
        stage = (int)(pos % FT_STAGES), phase = (unsigned)(pos / FT_STAGES) & 1u;
      }
#endif
      FT_UNIT_COORDS(wk);
      (void)k0;
      const int m0_n0[2] = {FT_TILE_ORIGIN(ur, uc)};
      const int m0 = m0_n0[0], n0 = m0_n0[1];
      int prev = 0;
#if FT_COLV_STAGE
      if (m0 + 64 * wg + 64 <= M && n0 + FT_BN <= N) /* ft_tile_store_tma's `inside` */
        ft_colv_fetch(my_colv, ep.v[FT_EP_COLV_SLOT] + n0, tid);
#endif
#if FT_PINGPONG
      if (j > 0) asm volatile("bar.sync %0, 256;" ::"r"(5 - wg) : "memory"); /* the other's loop of item j - 1 done */
#endif
#if FT_SPLIT
      float p[FT_BN / 2];
#pragma unroll
      for (int i = 0; i < FT_BN / 2; i++) d[i] = 0.0f;
#endif
#if defined(FT_AREGS)
      /* x from registers: two fragment sets (big, small), one per k tile in flight (wait_group
       * 1 leaves k tile kt - 1's wgmma reading its set while kt's is written); the loop is
       * unrolled by two so that each set is named statically and stays in registers. */
      unsigned ab0[FT_BK / FT_KSTEP][4], as0[FT_BK / FT_KSTEP][4], ab1[FT_BK / FT_KSTEP][4], as1[FT_BK / FT_KSTEP][4];
      auto ktile = [&](int kt, unsigned(&ab)[FT_BK / FT_KSTEP][4], unsigned(&as)[FT_BK / FT_KSTEP][4]) {
        ft_mbar_wait(full + 8 * stage, phase);
        /* Three small buffers of W: as in the shared-memory path below. */
        const unsigned sm = small + (unsigned)(kt % 3) * FT_B_BYTES;
        ft_split(sB + stage * FT_B_BYTES, sm, FT_B_BYTES / 16, (int)threadIdx.x, 128 * FT_CONSUMERS);
        ft_load_split_a(sA + stage * FT_A_BYTES + wg * (64 * 128), warp, lane, ab, as);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("bar.sync 1, %0;" ::"n"(128 * FT_CONSUMERS) : "memory");
        const unsigned long long db = ft_desc(sB + stage * FT_B_BYTES), dbs = ft_desc(sm);
        const int fresh = kt % FT_CHUNK == 0, flush = (kt + 1) % FT_CHUNK == 0 || kt + 1 == nk;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < FT_BK / FT_KSTEP; kk++) ft_wgmma_rs(p, as[kk], db + 2 * kk, !(fresh && kk == 0));
#pragma unroll
        for (int kk = 0; kk < FT_BK / FT_KSTEP; kk++) ft_wgmma_rs(p, ab[kk], dbs + 2 * kk, 1);
#pragma unroll
        for (int kk = 0; kk < FT_BK / FT_KSTEP; kk++) ft_wgmma_rs(p, ab[kk], db + 2 * kk, 1);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        ft_partial_done(p, d, flush, kt);
        if (kt > 0 && tid == 0) ft_mbar_release(empty + 8 * prev);
        prev = stage;
        if (++stage == FT_STAGES) {
          stage = 0;
          phase ^= 1;
        }
      };
      for (int kt = 0; kt < nk; kt += 2) {
        ktile(kt, ab0, as0);
        if (kt + 1 < nk) ktile(kt + 1, ab1, as1);
      }
#else
      for (int kt = 0; kt < nk; kt++) {
        ft_mbar_wait(full + 8 * stage, phase);
        const unsigned long long da = ft_desc(sA + stage * FT_A_BYTES + (FT_PINGPONG ? 0 : wg * (64 * 128)));
        const unsigned long long db = ft_desc(sB + stage * FT_B_BYTES);
#if FT_SPLIT
        /* Three small buffers: a warpgroup may still run k tile kt - 2's wgmma (it waited for
         * kt - 3 before the barrier of kt - 1, which this one has passed). */
        const unsigned sm = small + (unsigned)(kt % 3) * FT_STAGE_BYTES;
        ft_split(sA + stage * FT_A_BYTES, sm, FT_A_BYTES / 16, (int)threadIdx.x, 128 * FT_CONSUMERS);
        ft_split(sB + stage * FT_B_BYTES, sm + FT_A_BYTES, FT_B_BYTES / 16, (int)threadIdx.x, 128 * FT_CONSUMERS);
        /* The generic-proxy stores made visible to wgmma (async proxy), then all consumers'. */
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("bar.sync 1, %0;" ::"n"(128 * FT_CONSUMERS) : "memory");
        const unsigned long long das = ft_desc(sm + wg * (64 * 128)), dbs = ft_desc(sm + FT_A_BYTES);
        const int fresh = kt % FT_CHUNK == 0, flush = (kt + 1) % FT_CHUNK == 0 || kt + 1 == nk;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < FT_BK / FT_KSTEP; kk++) /* small terms first */
          ft_wgmma(p, das + 2 * kk, db + 2 * kk, !(fresh && kk == 0));
#pragma unroll
        for (int kk = 0; kk < FT_BK / FT_KSTEP; kk++) ft_wgmma(p, da + 2 * kk, dbs + 2 * kk, 1);
#pragma unroll
        for (int kk = 0; kk < FT_BK / FT_KSTEP; kk++) ft_wgmma(p, da + 2 * kk, db + 2 * kk, 1);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        ft_partial_done(p, d, flush, kt);
        if (kt > 0 && tid == 0) ft_mbar_release(empty + 8 * prev);
#else
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < FT_BK / FT_KSTEP; kk++) /* 32 bytes of k per step: +2 in desc */
#pragma unroll
          for (int h = 0; h < FT_MSUB; h++) /* m64 block h: 64 rows of 128 bytes further, +512 */
            ft_wgmma(dd[h], da + 512 * h + 2 * kk, db + 2 * kk, (kt | kk) != 0);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#if FT_STORE_OVERLAP
        if (pt.boxes) ft_pending_box(pt, my_cbuf, &tma_y, warp, lane, tid, wg, nbox);
#endif
        if (kt > 0) {
          asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
          if (tid == 0) ft_mbar_release(empty + 8 * prev);
        }
#endif
        prev = stage;
        if (++stage == FT_STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
#endif
#if FT_PINGPONG
      { /* this loop done: the other consumer's turn, if it has item j + 1 (arrivals match waits) */
        FtWork next;
        if (ft_work(j + 1, slot, slots, tile_units, ktiles, kper, sched, next))
          asm volatile("bar.arrive %0, 256;" ::"r"(4 + wg) : "memory");
      }
#endif
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
      for (int h = 0; h < FT_MSUB; h++)
#pragma unroll
        for (int i = 0; i < FT_BN / 2; i++) asm volatile("" : "+f"(dd[h][i])::"memory");
      if (tid == 0) ft_mbar_release(empty + 8 * prev);
#if FT_STORE_OVERLAP
      while (pt.boxes) ft_pending_box(pt, my_cbuf, &tma_y, warp, lane, tid, wg, nbox);
#endif

#if FT_STREAMK
      /* What becomes of the sums, asked again rather than kept in registers across the k loop. */
      ft_work(j, slot, slots, tile_units, ktiles, kper, sched, wk);
      if (wk.kind == 1) {
        /* This block's published tile: per warpgroup, float4 q of thread t at 128 q + t. */
        float4 *mine = reinterpret_cast<float4 *>(WS) + ((size_t)blockIdx.x * FT_CONSUMERS + wg) * (FT_BN / 8) * 128;
#pragma unroll
        for (int q = 0; q < FT_BN / 8; q++) __stcg(mine + 128 * q + tid, make_float4(d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]));
        __threadfence();
        asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");
        if (tid == 0)
          asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(FL + blockIdx.x * FT_CONSUMERS + wg), "r"(1u) : "memory");
        continue;
      }
      for (int c = wk.c0; c < wk.c1; c++) { /* kind 2: the earlier slots' sums of this unit, in order */
        const unsigned cta = (unsigned)c * FT_CLUSTER + rank;
        unsigned *flag = FL + cta * FT_CONSUMERS + wg;
        if (tid == 0) {
          unsigned ready;
          for (;;) {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(ready) : "l"(flag) : "memory");
            if (ready) break;
            __nanosleep(64);
          }
          asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(0u) : "memory"); /* for the next launch */
        }
        asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");
        const float4 *theirs = reinterpret_cast<const float4 *>(WS) + ((size_t)cta * FT_CONSUMERS + wg) * (FT_BN / 8) * 128;
#pragma unroll
        for (int q = 0; q < FT_BN / 8; q++) {
          const float4 p = __ldcg(theirs + 128 * q + tid);
          d[4 * q] += p.x, d[4 * q + 1] += p.y, d[4 * q + 2] += p.z, d[4 * q + 3] += p.w;
        }
      }
#endif
      /* Accumulator layout of m64nN: acc[4 q + k] is row 16 warp + lane/4 + 8 (k>>1), column
       * 8 q + 2 (lane%4) + (k&1): 8-column chunks, so any BN that is a multiple of 8. */
      /* Each m64 accumulator in turn (ping-pong: the tile's FT_MSUB blocks; else this consumer's
       * 64 rows); continue moves to the next. */
#pragma unroll
      for (int h = 0; h < FT_MSUB; h++) {
        float(&acc)[FT_BN / 2] = dd[h];
        const int r0 = m0 + (FT_PINGPONG ? 64 * h : 64 * wg); /* its first row */
#if FT_TSTORE
        ft_tile_store_tma(acc, my_cbuf, sbuf + (unsigned)wg * (FT_S_BYTES / FT_CONSUMERS),
                          &tma_y, Y, r0, n0, M, N, wg, warp, lane, nbox, ep, my_colv, pt);
        continue;
#endif
        const int row = r0 + warp * 16 + lane / 4;
        const int colb = n0 + 2 * (lane % 4);
#if FT_SPLITK == 1
        /* A tile wholly inside Y: E on a group of outputs first, then their stores, with no
         * branch, so the group's epilogue vector loads are issued together rather than each
         * behind a bounds check and the previous store (~12 us of load latency per 128 x 256
         * tile on the H200). Groups of FT_EPI_W x 16 columns: all at once would hold every
         * loaded value beside the accumulator (spills in tf32); the empty asm keeps the next
         * group's loads behind this group's stores. */
        if (r0 + 64 <= M && n0 + FT_BN <= N && (N & 1) == 0) {
#pragma unroll
          for (int q0 = 0; q0 < FT_BN / 8; q0 += 2 * FT_EPI_W) {
#pragma unroll
            for (int i = 4 * q0; i < 4 * (q0 + 2 * FT_EPI_W) && i < FT_BN / 2; i++) {
              const int col = colb + 8 * (i / 4) + (i & 1);
              acc[i] = ft_apply_epilogue(acc[i], row + 8 * ((i >> 1) & 1), col, ep);
            }
#pragma unroll
            for (int q = q0; q < q0 + 2 * FT_EPI_W && q < FT_BN / 8; q++) {
              ft_store2_inside(Y, acc[4 * q + 0], acc[4 * q + 1], row, colb + 8 * q, N);
              ft_store2_inside(Y, acc[4 * q + 2], acc[4 * q + 3], row + 8, colb + 8 * q, N);
            }
            asm volatile("" ::: "memory");
          }
          continue;
        }
#endif
        /* 8-column chunk q of the accumulator: acc[4 q .. 4 q + 3] (a BN that is an odd multiple of
         * 8 ends in half a 16-column group). */
#pragma unroll
        for (int q = 0; q < FT_BN / 8; q++) {
          const int col = colb + 8 * q;
#if FT_SPLITK > 1
          float *ws = WS + (size_t)z * (size_t)M * (size_t)N;
          ft_store_raw2(ws, acc[4 * q + 0], acc[4 * q + 1], row, col, M, N);
          ft_store_raw2(ws, acc[4 * q + 2], acc[4 * q + 3], row + 8, col, M, N);
#else
          ft_store2(Y, acc[4 * q + 0], acc[4 * q + 1], row, col, M, N, ep);
          ft_store2(Y, acc[4 * q + 2], acc[4 * q + 3], row + 8, col, M, N, ep);
#endif
        }
      }
    }
#if FT_STORE_OVERLAP
    while (pt.boxes) ft_pending_box(pt, my_cbuf, &tma_y, warp, lane, tid, wg, nbox); /* the last tile's */
#endif
  }
#if FT_TSTORE
  /* Shared memory must outlive the TMA stores reading it. */
  if (wg < FT_CONSUMERS && tid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
  __syncwarp();
  ft_cluster_sync(); /* no block leaves while its partner may still write or signal it */
}

#if FT_SPLITK > 1
// Y = E(sum of the FT_SPLITK slabs of WS), added in slice order (the same result every run), one
// rounding to the element type; FT_AUX_ELEMS consecutive elements per thread.
extern "C" __global__ void __launch_bounds__(FT_AUX_BLOCK)
ft_tc_splitk_reduce(const float *__restrict__ WS, ft_elem_t *__restrict__ Y, int M, int N, FtEpArgs ep) {
  const size_t total = (size_t)M * (size_t)N;
  const size_t base = ((size_t)blockIdx.x * FT_AUX_BLOCK + threadIdx.x) * FT_AUX_ELEMS;
  if (base >= total) return;
  int row, col;
  ft_rowcol(base, total, N, row, col);
  for (int e = 0; e < FT_AUX_ELEMS && base + e < total; e++) {
    float s = WS[base + e];
#pragma unroll
    for (int z = 1; z < FT_SPLITK; z++) s += WS[(size_t)z * total + base + e];
    Y[base + e] = ft_from_float(ft_apply_epilogue(s, row, col, ep));
    ft_rowcol_next(N, row, col);
  }
}
#endif
