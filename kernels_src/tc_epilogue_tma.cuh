// fusedtune tensor-core GEMM, layer 4b: the TMA-store epilogue. E(accumulator) is written into
// shared-memory boxes of 64 rows x 128 bytes (two per warpgroup, alternating) in the TMA store's
// 128-byte swizzle, and one thread stores each box: no per-element global store (each held the
// next pack behind its register read) and no bounds check (TMA clips). Columns of a wave-fitted
// BN past its last whole box are stored directly.
//
// Forms (FtTc): early (E on the whole tile in registers first, its vector loads free to go
// together), else box by box between the boxes' barriers (grouped: a box's E before its stores);
// staged (a box's raw sums to shared memory first, then a rolled loop applies E four outputs at a
// time: the unrolled forms emit E once per output of a thread's tile, which with a heavy E makes a
// kernel that runs its epilogue from instruction fetch); store overlap (the early E's tile kept
// packed and its boxes stored one per k tile of the next tile's mainloop); column-vector staging
// (the tile's slice of E's first column vector copied to shared memory during the k loop);
// deferred E (the store overlap's tile kept as raw sums in y's type, each box's E evaluated in
// parts beside the next tile's wgmma: a heavy E no longer holds the tensor core).

// The previous tile's packed outputs still to store (store overlap): pair (acc[2 p], acc[2 p + 1])
// of the m64 accumulator layout; boxes: how many are still to store (0: nothing pending); part:
// deferred E's next part of the current box. Deferred E keeps the tile's first kSmemBoxes boxes of
// raw sums in the two store buffers and the rest in pk, pair p being the accumulator's pair
// p + kSmemBoxes * kCols / 4 (registers beside the next tile's accumulator: BN 256 spilled with
// all in pk).
template <class C>
struct FtPending {
  enum : int { kBoxes = C::bn / C::kCols, kSmemBoxes = C::kDefer ? (kBoxes < 2 ? kBoxes : 2) : 0 };
  enum : int { kHeld = C::kStoreOverlap ? (kBoxes - kSmemBoxes) * (C::kCols / 4) : 0 };
  unsigned pk[kHeld > 0 ? kHeld : 1];
  int boxes = 0, r0 = 0, n0 = 0, part = 0;
};

// Calls f(wl, j, h) for every output pair a thread holds of a store box: 16-column group wl,
// 8-column half j, row half h.
template <class C, class F>
__device__ __forceinline__ void ft_for_box_pairs(F f) {
#pragma unroll
  for (int wl = 0; wl < C::kCols / 16; wl++)
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
      for (int h = 0; h < 2; h++) f(wl, j, h);
}

// The accumulator index of pair (wl, j, h) of box c (its first element; the second follows).
template <class C>
__device__ __forceinline__ constexpr int ft_box_index(int c, int wl, int j, int h) {
  return 8 * (c * (C::kCols / 16) + wl) + 4 * j + 2 * h;
}

// Where pair (wl, j, h) of this thread goes in a box buffer (row rb + 8 h, column cb + 16 wl + 8 j).
template <class C>
__device__ __forceinline__ unsigned ft_box_slot(unsigned buf, int rb, int cb, int wl, int j, int h) {
  return ft_swz128(buf, (unsigned)(rb + 8 * h), (unsigned)((16 * wl + 8 * j + cb) * C::kEsize));
}

// E of the output pair (wl, j, h) of box c into a, b (kGuard: only on outputs inside Y).
template <class C, bool kGuard>
__device__ __forceinline__ void ft_box_pair(const float (&d)[C::kAcc], int c, int wl, int j, int h, int row, int col,
                                            int M, int N, const FtEpArgs &ep, float &a, float &b) {
  const int i = ft_box_index<C>(c, wl, j, h);
  const int r = row + 8 * h, cc = col + c * C::kCols + 16 * wl + 8 * j;
  a = d[i], b = d[i + 1];
  if constexpr (C::kEarly)
    if (!kGuard) return; /* E ran on the whole tile already (ft_tile_store_tma) */
  if (!kGuard || (r < M && cc < N)) a = ft_apply_epilogue(a, r, cc, ep);
  if (!kGuard || (r < M && cc + 1 < N)) b = ft_apply_epilogue(b, r, cc + 1, ep);
}

// E of box c of this thread's accumulator into box buffer buf. kGuard: the tile crosses Y's edge,
// so E (which may read vectors) runs only on outputs inside; TMA clips the rest. row/col: the
// global coordinates of the thread's first output of the tile, rb its row in the box.
template <class C, bool kGuard>
__device__ __forceinline__ void ft_box_to_smem(const float (&d)[C::kAcc], int c, unsigned buf, int row, int col, int rb,
                                               int cb, int M, int N, const FtEpArgs &ep) {
  /* Grouped: E on all of the box's outputs first, then the stores: independent evaluations for
   * the scheduler to interleave (one warp per scheduler runs the epilogue, so a heavy E evaluated
   * output by output is bound by its dependency chain). */
  float e[C::kCols / 8][2][2];
  if constexpr (C::kGrouped)
    ft_for_box_pairs<C>([&](int wl, int j, int h) {
      ft_box_pair<C, kGuard>(d, c, wl, j, h, row, col, M, N, ep, e[2 * wl + j][h][0], e[2 * wl + j][h][1]);
    });
  ft_for_box_pairs<C>([&](int wl, int j, int h) {
    float a, b;
    if constexpr (C::kGrouped)
      a = e[2 * wl + j][h][0], b = e[2 * wl + j][h][1];
    else
      ft_box_pair<C, kGuard>(d, c, wl, j, h, row, col, M, N, ep, a, b);
    const unsigned addr = ft_box_slot<C>(buf, rb, cb, wl, j, h);
    /* No "memory" clobber: E's vector loads may move ahead of these stores; the proxy fence after
     * the box orders them before the TMA store. */
    if constexpr (C::dtype == 0)
      asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b));
    else
      asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(ft_pack<C::dtype>(a, b)));
  });
}

// Byte address of fp32 column col (0 .. kCols - 1) of staging row rr: 16-byte chunks XOR-swizzled
// by the row, so that both the accumulator's pair writes (8 rows x 32 bytes per warp) and the
// loop's float4 reads (two whole rows per warp) take the fewest wavefronts.
template <class C>
__device__ __forceinline__ unsigned ft_stage_addr(unsigned s, unsigned rr, unsigned col) {
  const unsigned byte = col * 4u;
  return s + rr * (unsigned)C::kStagePitch + (((byte >> 4) ^ (rr & 7u)) << 4) + (byte & 15u);
}

// Box c of this thread's accumulator raw into the staging box s, then (after the warpgroup's
// barrier) E on every output inside Y, four adjacent columns per step of a rolled loop, into the
// box buffer buf. r0, c0: the box's first row and column in Y. fp32 storage stages in buf itself.
template <class C>
__device__ __forceinline__ void ft_box_staged(const float (&d)[C::kAcc], int c, unsigned s, unsigned buf, int r0,
                                              int c0, int rb, int cb, int tid, int wg, int M, int N,
                                              const FtEpArgs &ep) {
  ft_for_box_pairs<C>([&](int wl, int j, int h) {
    const int i = ft_box_index<C>(c, wl, j, h);
    const unsigned to = ft_stage_addr<C>(s, (unsigned)(rb + 8 * h), (unsigned)(16 * wl + 8 * j + cb));
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(to), "f"(d[i]), "f"(d[i + 1]));
  });
  ft_bar_sync<128>(2 + wg);
#pragma unroll 1
  for (int q = tid; q < 64 * (C::kCols / 4); q += 128) {
    const int rr = q / (C::kCols / 4), col = 4 * (q % (C::kCols / 4));
    const unsigned from = ft_stage_addr<C>(s, (unsigned)rr, (unsigned)col);
    float v[4];
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                 : "r"(from)
                 : "memory");
    const int r = r0 + rr;
#pragma unroll
    for (int e = 0; e < 4; e++)
      if (r < M && c0 + col + e < N) v[e] = ft_apply_epilogue(v[e], r, c0 + col + e, ep);
    if constexpr (C::dtype == 0) {
      asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(from), "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3])
                   : "memory");
    } else {
      const unsigned to = ft_swz128(buf, (unsigned)rr, (unsigned)(col * C::kEsize));
      asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(to), "r"(ft_pack<C::dtype>(v[0], v[1])),
                   "r"(ft_pack<C::dtype>(v[2], v[3]))
                   : "memory");
    }
  }
}

// This consumer's copy of the tile's column-vector slice (bn elements from src) into dst: 16-byte
// cp.async chunks that land while the k loop runs; a vector not 16-byte aligned (a user's pointer
// may be any element's) is copied element by element, its loads waited for here. One buffer per
// consumer serves every tile: the previous tile's E read it before a barrier (its first store
// box's, or with store overlap the one right after E) that all of the consumer's threads passed
// before any of them issues this copy.
template <class C>
__device__ __forceinline__ void ft_colv_fetch(ft_vec_t *dst, const ft_vec_t *src, int tid) {
  if ((reinterpret_cast<unsigned long long>(src) & 15u) == 0) {
    for (int c = tid; c < C::colv_bytes / 16; c += 128)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(ft_smem(dst) + 16u * (unsigned)c),
                   "l"(reinterpret_cast<const char *>(src) + 16 * c)
                   : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
  } else {
    for (int e = tid; e < C::bn; e += 128) dst[e] = src[e];
  }
}

// One store box: buffer nbox & 1 of this warpgroup's two, once the TMA store that read it two
// boxes ago has finished reading (one thread waits, all pass the named barrier); fill(buf) writes
// it; a proxy fence and the barrier again, then one thread stores it at (col, r0).
template <class Fill>
__device__ __forceinline__ void ft_box_round(Fill fill, unsigned cbuf, const FtTmaDesc *map, int col, int r0, int tid,
                                             int wg, unsigned &nbox) {
  const unsigned buf = cbuf + (nbox & 1u) * (64 * 128);
  if (tid == 0) ft_tma_store_wait_read<1>();
  ft_bar_sync<128>(2 + wg);
  fill(buf);
  ft_fence_async_smem();
  ft_bar_sync<128>(2 + wg);
  if (tid == 0) ft_tma_store(map, col, r0, buf);
  nbox++;
}

// The next pending box of pt (box bn / kCols - boxes), written and stored. The box is picked by an
// unrolled loop so that every index into pt.pk is a constant (pk stays in registers).
template <class C>
__device__ __forceinline__ void ft_pending_box(FtPending<C> &pt, unsigned cbuf, const FtTmaDesc *map, int warp,
                                               int lane, int tid, int wg, unsigned &nbox) {
  const int rb = warp * 16 + lane / 4, cb = 2 * (lane % 4);
#pragma unroll
  for (int c = 0; c < C::bn / C::kCols; c++) {
    if (c != C::bn / C::kCols - pt.boxes) continue;
    ft_box_round(
        [&](unsigned buf) {
          ft_for_box_pairs<C>([&](int wl, int j, int h) {
            asm volatile("st.shared.b32 [%0], %1;" ::"r"(ft_box_slot<C>(buf, rb, cb, wl, j, h)),
                         "r"(pt.pk[ft_box_index<C>(c, wl, j, h) / 2]));
          });
        },
        cbuf, map, pt.n0 + c * C::kCols, pt.r0, tid, wg, nbox);
  }
  pt.boxes--;
}

// Deferred E: part pt.part of the current pending box (C::defer parts of kCols / 4 / defer pairs
// each, in ft_for_box_pairs' order), or with kRest all that is left of the box (after the k loop:
// its E evaluated together, every vector load in flight at once, as the early form does): the raw
// pairs read, E evaluated, the results written into the box buffer, which the box's last part
// stores. The tile's first kSmemBoxes boxes wait in the two box buffers themselves (each thread
// reads and rewrites its own slots: no barrier until the store); the others in pt.pk, picked by
// unrolled loops so that every index into it is a constant, their first part waiting for the
// buffer as ft_box_round does.
template <class C, bool kRest>
__device__ __forceinline__ void ft_deferred_part(FtPending<C> &pt, unsigned cbuf, const FtTmaDesc *map, int warp,
                                                 int lane, int tid, int wg, unsigned &nbox, const FtEpArgs &ep) {
  constexpr int kBoxes = C::bn / C::kCols, kBoxPairs = C::kCols / 4, kPairs = kBoxPairs / C::defer;
  constexpr int kSmem = FtPending<C>::kSmemBoxes;
  const int rb = warp * 16 + lane / 4, cb = 2 * (lane % 4), box = kBoxes - pt.boxes, lo = pt.part * kPairs;
  const unsigned buf = cbuf + (nbox & 1u) * (64 * 128);
  /* The tile's origin made opaque here: it does not change during the k loop, so the compiler
   * would otherwise hoist E's vector loads of every part out of it, holding all of them in
   * registers across the loop (ptxas spilled kilobytes). */
  int r0 = pt.r0, n0 = pt.n0;
  asm volatile("" : "+r"(r0), "+r"(n0));
  auto slot_of = [&](int u) { return ft_box_slot<C>(buf, rb, cb, u / 4, u / 2 % 2, u % 2); };
  /* E of pair u of box c from its raw word w (the column kept opaque: nor above the branch that
   * picked this part). */
  auto pair_e = [&](int c, int u, unsigned w, float(&e)[2]) {
    const int r = r0 + rb + 8 * (u % 2);
    int col = n0 + cb + c * C::kCols + 16 * (u / 4) + 8 * (u / 2 % 2);
    asm volatile("" : "+r"(w), "+r"(col));
    float a, b;
    ft_unpack<C::dtype>(w, a, b);
    e[0] = ft_apply_epilogue(a, r, col, ep);
    e[1] = ft_apply_epilogue(b, r, col + 1, ep);
  };
  auto load = [&](int u) {
    unsigned w;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(w) : "r"(slot_of(u)) : "memory");
    return w;
  };
  auto store = [&](int u, const float(&e)[2]) {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(slot_of(u)), "r"(ft_pack<C::dtype>(e[0], e[1])) : "memory");
  };
  if (box >= kSmem && pt.part == 0) {
    if (tid == 0) ft_tma_store_wait_read<1>();
    ft_bar_sync<128>(2 + wg);
  }
  /* A held word of this box, picked by selects over the held boxes (and parts) so that every index
   * into pk is a constant: branches per box and part, alike with a light E, were merged into one
   * body indexing pk at run time, which put pk in local memory. */
  auto held = [&](int q, int t) { /* word t of part q (q < 0: pt.part) of the current box */
    unsigned w = 0u;
#pragma unroll
    for (int cc = kSmem; cc < kBoxes; cc++)
#pragma unroll
      for (int qq = 0; qq < C::defer; qq++) {
        const int u = qq * kPairs + t;
        if ((q < 0 || q == qq) && cc == box && (q >= 0 || qq == pt.part))
          w = pt.pk[ft_box_index<C>(cc - kSmem, u / 4, u / 2 % 2, u % 2) / 2];
      }
    return w;
  };
  /* Pair u's raw word (word t of part q, as held), from its slot or from pk. */
  auto word = [&](int u, int q, int t) { return box < kSmem ? load(u) : held(q, t); };
  /* E of every pair first, then the stores: independent chains for the scheduler to interleave. */
  if constexpr (kRest) {
    float e[kBoxPairs][2];
#pragma unroll
    for (int u = 0; u < kBoxPairs; u++)
      if (u >= lo) pair_e(box, u, word(u, u / kPairs, u % kPairs), e[u]);
#pragma unroll
    for (int u = 0; u < kBoxPairs; u++)
      if (u >= lo) store(u, e[u]);
  } else {
    float e[kPairs][2];
#pragma unroll
    for (int t = 0; t < kPairs; t++) pair_e(box, lo + t, word(lo + t, -1, t), e[t]);
#pragma unroll
    for (int t = 0; t < kPairs; t++) store(lo + t, e[t]);
  }
  if (kRest || ++pt.part == C::defer) {
    pt.part = 0;
    ft_fence_async_smem();
    ft_bar_sync<128>(2 + wg);
    if (tid == 0) ft_tma_store(map, n0 + box * C::kCols, r0, buf);
    nbox++;
    pt.boxes--;
  }
}

// One step of the pending stores inside the k loop: a whole box (store overlap) or a part of one
// (deferred E).
template <class C>
__device__ __forceinline__ void ft_pending_step(FtPending<C> &pt, unsigned cbuf, const FtTmaDesc *map, int warp,
                                                int lane, int tid, int wg, unsigned &nbox, const FtEpArgs &ep) {
  if constexpr (C::kDefer)
    ft_deferred_part<C, false>(pt, cbuf, map, warp, lane, tid, wg, nbox, ep);
  else
    ft_pending_box<C>(pt, cbuf, map, warp, lane, tid, wg, nbox);
}

// The pending stores left after a k loop, box by box. Deferred E: after the last tile's loop
// (kLast: no accumulator live) each box's E at once; after another, whose sums are live beside
// them, part by part (a whole box at once spilled at BN 256).
template <class C, bool kLast>
__device__ __forceinline__ void ft_pending_flush(FtPending<C> &pt, unsigned cbuf, const FtTmaDesc *map, int warp,
                                                 int lane, int tid, int wg, unsigned &nbox, const FtEpArgs &ep) {
  while (pt.boxes) {
    if constexpr (C::kDefer)
      ft_deferred_part<C, kLast>(pt, cbuf, map, warp, lane, tid, wg, nbox, ep);
    else
      ft_pending_box<C>(pt, cbuf, map, warp, lane, tid, wg, nbox);
  }
}

// The tile's E through shared memory and TMA stores, box by box, alternating this warpgroup's two
// box buffers (nbox counts its boxes across tiles). r0: the first of the 64 rows this accumulator
// holds; sbuf: its staging box (staged form); colv: its column-vector slice (staging).
template <class C>
__device__ __forceinline__ void ft_tile_store_tma(float (&d)[C::kAcc], unsigned cbuf, unsigned sbuf,
                                                  const FtTmaDesc *map, ft_elem_t *__restrict__ Y, int r0, int n0,
                                                  int M, int N, int wg, int warp, int lane, unsigned &nbox,
                                                  const FtEpArgs &ep, const ft_vec_t *colv, FtPending<C> &pt) {
  const int tid = warp * 32 + lane;
  if (r0 >= M) return; /* this warpgroup's rows of the tile are all outside */
  const int row = r0 + warp * 16 + lane / 4, cb = 2 * (lane % 4);
  const bool inside = r0 + 64 <= M && n0 + C::bn <= N;
  if constexpr (C::kEarly && !C::staged) {
    if constexpr (C::kDefer) if (inside) { /* the raw sums, E evaluated during the next tile's k loop */
      constexpr int kSmem = FtPending<C>::kSmemBoxes;
      /* The two buffers free once the previous tile's stores have read them (usually long done; just
       * issued where a short k loop left the last box to ft_pending_flush), seen by every thread
       * of the warpgroup. */
      if (tid == 0) ft_tma_store_wait_read<0>();
      ft_bar_sync<128>(2 + wg);
#pragma unroll
      for (int c = 0; c < C::bn / C::kCols; c++)
        ft_for_box_pairs<C>([&](int wl, int j, int h) {
          const int i = ft_box_index<C>(c, wl, j, h);
          const unsigned p = ft_pack<C::dtype>(d[i], d[i + 1]);
          if (c < kSmem) /* box c goes out through buffer (nbox + c) & 1, as ft_deferred_part counts */
            asm volatile("st.shared.b32 [%0], %1;" ::"r"(ft_box_slot<C>(cbuf + ((nbox + c) & 1u) * (64 * 128),
                                                                        warp * 16 + lane / 4, cb, wl, j, h)),
                         "r"(p)
                         : "memory");
          else
            pt.pk[ft_box_index<C>(c - kSmem, wl, j, h) / 2] = p;
        });
      pt.boxes = C::bn / C::kCols, pt.r0 = r0, pt.n0 = n0, pt.part = 0;
      return;
    }
    if (inside) { /* E on the whole tile in registers, its vector loads free to go together */
      auto apply = [&](const FtEpArgs &eps) {
#pragma unroll
        for (int i = 0; i < C::kAcc; i++)
          d[i] = ft_apply_epilogue(d[i], row + 8 * ((i >> 1) & 1),
                                   n0 + cb + 16 * (i / 8) + 8 * ((i >> 2) & 1) + (i & 1), eps);
      };
      if constexpr (C::kColvStage) {
        /* This consumer's copies of the slice done and seen by all its threads; E then reads slot
         * kColvSlot at colv[col - n0]. */
        asm volatile("cp.async.wait_all;" ::: "memory");
        ft_bar_sync<128>(2 + wg);
        FtEpArgs eps = ep;
        eps.v[C::kColvSlot] = colv - n0;
        apply(eps);
      } else {
        (void)colv;
        apply(ep);
      }
      if constexpr (C::kStoreOverlap && !C::kDefer) {
#pragma unroll
        for (int q = 0; q < C::bn / 4; q++) pt.pk[q] = ft_pack<C::dtype>(d[2 * q], d[2 * q + 1]);
        pt.boxes = C::bn / C::kCols, pt.r0 = r0, pt.n0 = n0;
        /* No store box follows to order E's reads of the slice before another thread's copy of the
         * next tile's (ft_colv_fetch): this barrier does. */
        if constexpr (C::kColvStage) ft_bar_sync<128>(2 + wg);
        return; /* stored during the next tile's k loop (ft_pending_box) */
      }
    }
  }
  if constexpr (C::kStoreOverlap) {
    /* Nothing to keep: zeroed so that pk is not live from the previous tile across these stores
     * (without it ptxas kept the old pairs and spilled). */
#pragma unroll
    for (int q = 0; q < FtPending<C>::kHeld; q++) pt.pk[q] = 0u;
  }
#pragma unroll
  for (int c = 0; c < C::bn / C::kCols; c++) {
    if (n0 + c * C::kCols >= N) break;
    ft_box_round(
        [&](unsigned buf) {
          if constexpr (C::staged) {
            ft_box_staged<C>(d, c, C::dtype == 0 ? buf : sbuf, buf, r0, n0 + c * C::kCols, warp * 16 + lane / 4, cb,
                             tid, wg, M, N, ep);
          } else {
            if (inside)
              ft_box_to_smem<C, false>(d, c, buf, row, n0 + cb, warp * 16 + lane / 4, cb, M, N, ep);
            else
              ft_box_to_smem<C, true>(d, c, buf, row, n0 + cb, warp * 16 + lane / 4, cb, M, N, ep);
          }
        },
        cbuf, map, n0 + c * C::kCols, r0, tid, wg, nbox);
  }
  if constexpr (C::bn % C::kCols != 0) {
    /* A wave-fitted BN's columns past its last whole box: direct stores, 8-column chunks. */
#pragma unroll
    for (int q = C::bn / C::kCols * (C::kCols / 8); q < C::bn / 8; q++) {
      const int col = n0 + cb + 8 * q;
      if (inside) {
        float e[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
          e[k] = d[4 * q + k];
          if constexpr (!C::kEarly || C::staged) e[k] = ft_apply_epilogue(e[k], row + 8 * (k >> 1), col + (k & 1), ep);
        }
        ft_store2_inside<C>(Y, e[0], e[1], row, col, N);
        ft_store2_inside<C>(Y, e[2], e[3], row + 8, col, N);
      } else {
        ft_store2<C>(Y, d[4 * q + 0], d[4 * q + 1], row, col, M, N, ep);
        ft_store2<C>(Y, d[4 * q + 2], d[4 * q + 3], row + 8, col, M, N, ep);
      }
    }
  }
}
