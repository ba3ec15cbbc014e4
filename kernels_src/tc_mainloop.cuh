// fusedtune tensor-core GEMM, layer 3: the mainloops. One consumer warpgroup's k tiles of one
// work item: wait for a stage of the ring, issue its wgmma, release the stage once they are done.
// Five forms: both operands from shared memory (tf32, bf16, fp16); fp8 with its partial sums
// promoted, one sum or two taking turns; 3xtf32 with each stage split into big and small tf32
// parts in shared memory, or split before the kernel (presplit: each stage loaded in parts); 3xtf32
// with x split in registers (aregs).
//
// 3xtf32: once a stage is full, all consumer threads split its raw fp32 tiles into big =
// tf32_rn(v) (in place: the position, hence the swizzle, is kept) and small = tf32_rn(v - big)
// (into one of three small buffers), then each k tile adds small.big, big.small and big.big into
// a partial accumulator p that restarts every chunk k tiles and is summed into d with fp32 adds:
// one tensor-core accumulator never carries a long sum, since its adds truncate.

// A consumer's position in the ring: the stage it waits for next and that stage's phase.
template <class C>
struct FtRing {
  int stage = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == C::stages) {
      stage = 0;
      phase ^= 1;
    }
  }
  // Where work item j's k tiles start when every item has all ktiles of them (ping-pong, whose
  // consumers skip each other's items).
  __device__ __forceinline__ void seek(int j, int ktiles) {
    const long long pos = (long long)j * ktiles;
    stage = (int)(pos % C::stages), phase = (unsigned)(pos / C::stages) & 1u;
  }
};

// The shared-memory addresses of one block's ring and its barriers.
struct FtRingSmem {
  unsigned sA, sB, small, full, empty;
};

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

// After a k tile's wgmma are committed: at the end of a chunk all of them are waited for and the
// partial sum p is added into d with fp32 adds; otherwise k tile kt - 1's are waited for (its
// stage can then be released).
template <int N>
__device__ __forceinline__ void ft_partial_done(float (&p)[N], float (&d)[N], int flush, int kt) {
  if (flush) {
    ft_wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < N; i++) {
      asm volatile("" : "+f"(p[i])::"memory");
      d[i] += p[i];
    }
  } else if (kt > 0) {
    ft_wgmma_wait<1>();
  }
}

// One k tile's three products from shared memory into the partial sum p (fresh: the chunk's first,
// which overwrites p), small terms first, committed as one group: x's big and small parts at da and
// das, W's at db and dbs.
template <class C, int N>
__device__ __forceinline__ void ft_3x_products(float (&p)[N], unsigned long long da, unsigned long long das,
                                               unsigned long long db, unsigned long long dbs, int fresh) {
  ft_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < C::kKsteps; kk++) ft_wgmma(p, das + 2 * kk, db + 2 * kk, !(fresh && kk == 0));
#pragma unroll
  for (int kk = 0; kk < C::kKsteps; kk++) ft_wgmma(p, da + 2 * kk, dbs + 2 * kk, 1);
#pragma unroll
  for (int kk = 0; kk < C::kKsteps; kk++) ft_wgmma(p, da + 2 * kk, db + 2 * kk, 1);
  ft_wgmma_commit();
}

// This warpgroup's x fragments of one k tile from the raw swizzled tile at sa (its 64 rows),
// split into big and small. m64k8 tf32 A fragment, warp w rows 16 w..16 w + 15, g = lane / 4,
// t = lane % 4: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4). Element (r, c) of a
// 128-byte-swizzled row r sits in 16-byte chunk (c / 4) ^ (r % 8).
template <class C>
__device__ __forceinline__ void ft_load_split_a(unsigned sa, int warp, int lane, unsigned (&big)[C::kKsteps][4],
                                                unsigned (&sml)[C::kKsteps][4]) {
#pragma unroll
  for (int kk = 0; kk < C::kKsteps; kk++)
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int r = 16 * warp + lane / 4 + 8 * (i & 1), c = 8 * kk + lane % 4 + 4 * (i >> 1);
      const unsigned addr = ft_swz128(sa, (unsigned)r, (unsigned)c * 4u);
      float v;
      asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
      const float b = ft_tf32_rn(v);
      big[kk][i] = __float_as_uint(b);
      sml[kk][i] = __float_as_uint(ft_tf32_rn(v - b));
    }
}

// Both operands from shared memory: nk k tiles into the kMsub m64 accumulators dd (ping-pong: the
// tile's blocks, 512 descriptor units = 64 rows apart; cooperative: this consumer's 64 rows of the
// stage). after_issue() runs once a k tile's wgmma are issued (the store overlap's hook); the
// stage of k tile kt - 1 is released once its wgmma are done. prev: the last stage used.
template <class C, class AfterIssue>
__device__ __forceinline__ void ft_mainloop_ss(float (&dd)[C::kMsub][C::kAcc], FtRing<C> &ring, int &prev, int nk,
                                               const FtRingSmem &rs, int wg, int tid, AfterIssue after_issue) {
  for (int kt = 0; kt < nk; kt++) {
    ft_mbar_wait(rs.full + 8 * ring.stage, ring.phase);
    const unsigned long long da = ft_desc(rs.sA + ring.stage * C::kA + (C::pingpong ? 0 : wg * (64 * 128)));
    const unsigned long long db = ft_desc(rs.sB + ring.stage * C::kB);
    ft_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < C::kKsteps; kk++) /* 32 bytes of k per step: +2 in desc */
#pragma unroll
      for (int h = 0; h < C::kMsub; h++) /* m64 block h: 64 rows of 128 bytes further, +512 */
        ft_wgmma(dd[h], da + 512 * h + 2 * kk, db + 2 * kk, (kt | kk) != 0);
    ft_wgmma_commit();
    after_issue();
    if (kt > 0) {
      ft_wgmma_wait<1>();
      if (tid == 0) ft_mbar_release<C::cluster>(rs.empty + 8 * prev);
    }
    prev = ring.stage;
    ring.advance();
  }
}

// 3xtf32 with the split in shared memory: three small buffers, since a warpgroup may still run k
// tile kt - 2's wgmma (it waited for kt - 3 before the barrier of kt - 1, which this one passed).
// Pre-split (presplit): the stage already holds both parts of x's and W's tiles (ft_tc_presplit
// wrote them with the same rounding), so a k tile is the three products alone, the same sums bit
// for bit, with no split, no barrier among the consumers and no small buffers.
template <class C>
__device__ __forceinline__ void ft_mainloop_3x(float (&d)[C::kAcc], FtRing<C> &ring, int &prev, int nk,
                                               const FtRingSmem &rs, int wg, int tid) {
  float p[C::kAcc];
#pragma unroll
  for (int i = 0; i < C::kAcc; i++) d[i] = 0.0f;
  for (int kt = 0; kt < nk; kt++) {
    ft_mbar_wait(rs.full + 8 * ring.stage, ring.phase);
    const unsigned a = rs.sA + ring.stage * C::kA, b = rs.sB + ring.stage * C::kB;
    const unsigned long long da = ft_desc(a + wg * (64 * 128)), db = ft_desc(b);
    unsigned long long das, dbs;
    if constexpr (C::presplit) {
      das = ft_desc(a + C::kApart + wg * (64 * 128)), dbs = ft_desc(b + C::kBpart);
    } else {
      const unsigned sm = rs.small + (unsigned)(kt % 3) * C::kStage;
      ft_split(a, sm, C::kA / 16, (int)threadIdx.x, 128 * C::consumers);
      ft_split(b, sm + C::kA, C::kB / 16, (int)threadIdx.x, 128 * C::consumers);
      ft_fence_async_smem(); /* the split's stores seen by wgmma, then by every consumer */
      ft_bar_sync_consumers<128 * C::consumers>();
      das = ft_desc(sm + wg * (64 * 128)), dbs = ft_desc(sm + C::kA);
    }
    const int fresh = kt % C::chunk == 0, flush = (kt + 1) % C::chunk == 0 || kt + 1 == nk;
    ft_3x_products<C>(p, da, das, db, dbs, fresh);
    ft_partial_done(p, d, flush, kt);
    if (kt > 0 && tid == 0) ft_mbar_release<C::cluster>(rs.empty + 8 * prev);
    prev = ring.stage;
    ring.advance();
  }
}

// fp8 (e4m3, k32 per wgmma): both operands from shared memory as ft_mainloop_ss, but the tensor
// core's fp8 sums keep fewer bits than fp32, so a partial sum restarts every chunk k tiles and is
// added into d with fp32 adds (DeepSeek-V3 promotes every 128 k). Every sum holds the kMsub m64
// blocks (ping-pong: the tile's, 64 rows apart in the stage; cooperative: this consumer's 64 rows).
// One k tile's wgmma into p (fresh: the chunk's first, which overwrites p).
template <class C>
__device__ __forceinline__ void ft_fp8_issue(float (&p)[C::kMsub][C::kAcc], const FtRing<C> &ring,
                                             const FtRingSmem &rs, int wg, int fresh) {
  ft_mbar_wait(rs.full + 8 * ring.stage, ring.phase);
  const unsigned long long da = ft_desc(rs.sA + ring.stage * C::kA + (C::pingpong ? 0 : wg * (64 * 128)));
  const unsigned long long db = ft_desc(rs.sB + ring.stage * C::kB);
  ft_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < C::kKsteps; kk++)
#pragma unroll
    for (int h = 0; h < C::kMsub; h++) ft_wgmma(p[h], da + 512 * h + 2 * kk, db + 2 * kk, !(fresh && kk == 0));
  ft_wgmma_commit();
}

// A partial sum q added into d, once its wgmma are done.
template <class C>
__device__ __forceinline__ void ft_fp8_promote(float (&q)[C::kMsub][C::kAcc], float (&d)[C::kMsub][C::kAcc]) {
#pragma unroll
  for (int h = 0; h < C::kMsub; h++) {
    ft_reg_fence(q[h]);
#pragma unroll
    for (int i = 0; i < C::kAcc; i++) d[h][i] += q[h][i];
  }
}

// One partial sum p (dual 0): the end of a chunk waits for all its wgmma before the adds, so the
// tensor core idles while the pipeline drains and refills. after_issue() as in ft_mainloop_ss.
template <class C, class AfterIssue>
__device__ __forceinline__ void ft_mainloop_fp8(float (&d)[C::kMsub][C::kAcc], FtRing<C> &ring, int &prev, int nk,
                                                const FtRingSmem &rs, int wg, int tid, AfterIssue after_issue) {
  float p[C::kMsub][C::kAcc];
#pragma unroll
  for (int h = 0; h < C::kMsub; h++)
#pragma unroll
    for (int i = 0; i < C::kAcc; i++) d[h][i] = 0.0f;
  for (int kt = 0; kt < nk; kt++) {
    const int flush = (kt + 1) % C::chunk == 0 || kt + 1 == nk;
    ft_fp8_issue<C>(p, ring, rs, wg, kt % C::chunk == 0);
    after_issue();
    if (flush) {
      ft_wgmma_wait<0>();
      ft_fp8_promote<C>(p, d);
    } else if (kt > 0) {
      ft_wgmma_wait<1>();
    }
    if (kt > 0 && tid == 0) ft_mbar_release<C::cluster>(rs.empty + 8 * prev);
    prev = ring.stage;
    ring.advance();
  }
}

// Two partial sums taking turns by chunk (dual 1): a chunk's sum q is added into d once the next
// chunk's first k tile is issued into p (wait_group 1 then leaves only that k tile in flight), so
// the adds run beside the tensor core and nothing drains. Each sum is named statically (the loop
// goes two chunks at a time) and stays in registers: 3 x kMsub x BN / 2 accumulator registers. The
// first chunk is peeled so that wherever q is read, every path has left the same wgmma group in
// flight (with a run-time first-k-tile branch inside the loop ptxas serialized every wgmma, C7514).
template <class C, class AfterIssue>
__device__ __forceinline__ void ft_mainloop_fp8_dual(float (&d)[C::kMsub][C::kAcc], FtRing<C> &ring, int &prev, int nk,
                                                     const FtRingSmem &rs, int wg, int tid, AfterIssue after_issue) {
  float p0[C::kMsub][C::kAcc], p1[C::kMsub][C::kAcc];
  int kt = 0;
  /* One k tile into p: its wgmma issued, the previous k tile's waited for and its stage freed. */
  auto ktile = [&](float(&p)[C::kMsub][C::kAcc], int fresh, int wait) {
    ft_fp8_issue<C>(p, ring, rs, wg, fresh);
    after_issue();
    if (wait) {
      ft_wgmma_wait<1>();
      if (tid == 0) ft_mbar_release<C::cluster>(rs.empty + 8 * prev);
    }
    prev = ring.stage;
    ring.advance();
    kt++;
  };
  /* A chunk after the first: its first k tile into p, then q (the previous chunk's) into d. */
  auto chunk = [&](float(&p)[C::kMsub][C::kAcc], float(&q)[C::kMsub][C::kAcc]) {
    const int end = min(kt + (int)C::chunk, nk);
    ktile(p, 1, 1);
    ft_fp8_promote<C>(q, d);
    while (kt < end) ktile(p, 0, 1);
  };
#pragma unroll
  for (int h = 0; h < C::kMsub; h++)
#pragma unroll
    for (int i = 0; i < C::kAcc; i++) d[h][i] = 0.0f;
  ktile(p0, 1, 0);
  while (kt < min((int)C::chunk, nk)) ktile(p0, 0, 1);
  auto last = [&](float(&p)[C::kMsub][C::kAcc]) { /* the last chunk's sum, once its wgmma are done */
    ft_wgmma_wait<0>();
    ft_fp8_promote<C>(p, d);
  };
  for (;;) {
    if (kt >= nk) return last(p0);
    chunk(p1, p0);
    if (kt >= nk) return last(p1);
    chunk(p0, p1);
  }
}

// 3xtf32 with x from registers: W split in shared memory (three small buffers as above), each
// warpgroup's x fragments split as it loads them. Two fragment sets (big, small), one per k tile
// in flight (wait_group 1 leaves k tile kt - 1's wgmma reading its set while kt's is written); the
// loop is unrolled by two so that each set is named statically and stays in registers.
template <class C>
__device__ __forceinline__ void ft_mainloop_3x_aregs(float (&d)[C::kAcc], FtRing<C> &ring, int &prev, int nk,
                                                     const FtRingSmem &rs, int wg, int warp, int lane, int tid) {
  float p[C::kAcc];
#pragma unroll
  for (int i = 0; i < C::kAcc; i++) d[i] = 0.0f;
  unsigned ab0[C::kKsteps][4], as0[C::kKsteps][4], ab1[C::kKsteps][4], as1[C::kKsteps][4];
  auto ktile = [&](int kt, unsigned(&ab)[C::kKsteps][4], unsigned(&as)[C::kKsteps][4]) {
    ft_mbar_wait(rs.full + 8 * ring.stage, ring.phase);
    const unsigned sm = rs.small + (unsigned)(kt % 3) * C::kB;
    ft_split(rs.sB + ring.stage * C::kB, sm, C::kB / 16, (int)threadIdx.x, 128 * C::consumers);
    ft_load_split_a<C>(rs.sA + ring.stage * C::kA + wg * (64 * 128), warp, lane, ab, as);
    ft_fence_async_smem();
    ft_bar_sync_consumers<128 * C::consumers>();
    const unsigned long long db = ft_desc(rs.sB + ring.stage * C::kB), dbs = ft_desc(sm);
    const int fresh = kt % C::chunk == 0, flush = (kt + 1) % C::chunk == 0 || kt + 1 == nk;
    ft_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < C::kKsteps; kk++) ft_wgmma_rs(p, as[kk], db + 2 * kk, !(fresh && kk == 0));
#pragma unroll
    for (int kk = 0; kk < C::kKsteps; kk++) ft_wgmma_rs(p, ab[kk], dbs + 2 * kk, 1);
#pragma unroll
    for (int kk = 0; kk < C::kKsteps; kk++) ft_wgmma_rs(p, ab[kk], db + 2 * kk, 1);
    ft_wgmma_commit();
    ft_partial_done(p, d, flush, kt);
    if (kt > 0 && tid == 0) ft_mbar_release<C::cluster>(rs.empty + 8 * prev);
    prev = ring.stage;
    ring.advance();
  };
  for (int kt = 0; kt < nk; kt += 2) {
    ktile(kt, ab0, as0);
    if (kt + 1 < nk) ktile(kt + 1, ab1, as1);
  }
}

// The producer: one thread issues the TMA loads of every work item's k tiles, in list order, into
// the ring (with clusters of 2, each block loads half the W tile, multicast to both).
template <class C>
__device__ __forceinline__ void ft_producer(const FtTiles<C> &ts, const FtRingSmem &rs, const FtTmaDesc *tma_x,
                                            const FtTmaDesc *tma_w, const FtEpArgs &ep, int M, int N) {
  ft_tma_prefetch(tma_x);
  ft_tma_prefetch(tma_w);
  FtRing<C> ring;
  FtWork wk;
  for (int j = 0; ts.work(j, wk); j++) {
    int z, m0, n0;
    ts.origin(wk, z, m0, n0);
    (void)z;
    ft_mat_prefetch<C>(ep, m0, n0, M, N); /* E's matrix operands: their tile into L2 (tc_matrix.cuh) */
    for (int kt = 0; kt < wk.nk; kt++) {
      const int kx = (wk.k0 + kt) * C::kBK;
      ft_mbar_wait(rs.empty + 8 * ring.stage, ring.phase ^ 1);
      const unsigned bar = rs.full + 8 * ring.stage;
      ft_mbar_expect_tx(bar, C::kStage);
      /* Pre-split rows hold 32-column blocks of big parts then small parts: part q of k tile kx at
       * column 2 kx + 32 q of x's and W's split rows. */
#pragma unroll
      for (int q = 0; q < C::kParts; q++) {
        const int col = C::presplit ? 2 * kx + C::kBK * q : kx;
        ft_tma_load(rs.sA + ring.stage * C::kA + q * C::kApart, tma_x, col, m0, bar);
        if constexpr (C::cluster > 1)
          ft_tma_load_mc(rs.sB + ring.stage * C::kB + q * C::kBpart + ts.rank * (C::kBpart / 2), tma_w, col,
                         n0 + (int)ts.rank * (C::bn / 2), bar, (unsigned short)3);
        else
          ft_tma_load(rs.sB + ring.stage * C::kB + q * C::kBpart, tma_w, col, n0, bar);
      }
      ring.advance();
    }
  }
}
