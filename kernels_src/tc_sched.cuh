// fusedtune tensor-core GEMM, layer 2: the tile scheduler. The grid is persistent: unit slot s of
// G = gridDim / cluster walks units s, s + G, ... in a grouped order (group tile rows walked
// column by column), so blocks running together share W and x tiles in L2; with clusters of 2 a
// unit is two tiles of adjacent rows, one per block. A unit is a tile and one of split_k
// contiguous ranges of its k tiles (slice-major: a tile's slices run at different times).
//
// Stream-K: the G unit slots take the whole waves of units as above; the sk units of the last,
// partial wave (sk x ktiles k tiles in all, S) are cut evenly: slot s takes k tiles
// [S s / G, S (s + 1) / G) of them in unit order. A range that ends inside a unit publishes its
// raw sums; the slot whose range ends a unit adds the sums of the slots before it that share the
// unit, in slot order, then applies E and stores. Each slot publishes first (its last range,
// before its whole units) and waits only at the unit its range starts inside (after its whole
// waves), for lower slots only, which never wait before they publish: no block waits on a block
// that waits (the host checks that the whole grid is resident).

// A block's work item: unit u, its k tiles [k0, k0 + nk), and what becomes of the sums: kind 0
// E and store; 1 (stream-K) publish them raw; 2 (stream-K) add the raw sums slots c0 .. c1 - 1
// published for the unit, then E and store.
struct FtWork {
  int u, k0, nk, kind, c0, c1;
};

__device__ __forceinline__ long long ft_sk_begin(int s, long long S, int G) { return S * s / G; }

// The slot whose range holds k tile i of the partial wave (S k tiles over G slots).
__device__ __forceinline__ int ft_sk_slot(long long i, long long S, int G) {
  int s = (int)(i * G / S);
  while (s + 1 < G && ft_sk_begin(s + 1, S, G) <= i) s++;
  while (s > 0 && ft_sk_begin(s, S, G) > i) s--;
  return s;
}

// Stream-K's schedule of this block's slot, written once into shared memory at sched (32 bytes)
// by one thread: its range [a, b) of the partial wave's k tiles, the whole waves, 1 + the first
// slot sharing the unit a starts in (0: no stream-K), a / ktiles, b / ktiles, whether b ends
// inside a unit. Kept in registers, or divided out in ft_work, it cost the consumers spills.
template <class C>
__device__ __forceinline__ void ft_sk_schedule(unsigned sched, int M, int N, int K) {
  const int tm = (M + C::kBM - 1) / C::kBM, units = (tm + C::cluster - 1) / C::cluster * ((N + C::bn - 1) / C::bn);
  const int G = (int)gridDim.x / C::cluster, s = (int)blockIdx.x / C::cluster, waves = units / G;
  const long long kt = (K + C::kBK - 1) / C::kBK, S = (long long)(units - waves * G) * kt;
  const long long a = ft_sk_begin(s, S, G), b = ft_sk_begin(s + 1, S, G);
  const unsigned on = S >= G && S < (1ll << 31); /* the host's rule; else every unit whole */
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(sched), "r"((unsigned)a), "r"((unsigned)b),
               "r"((unsigned)waves), "r"(on ? (unsigned)ft_sk_slot(a / kt * kt, S, G) + 1u : 0u)
               : "memory");
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(sched + 16), "r"((unsigned)(a / kt)),
               "r"((unsigned)(b / kt)), "r"((unsigned)(b % kt != 0)), "r"(0u)
               : "memory");
}

// Work item j of unit slot s of G (false past its last): the producer and the consumers walk the
// same list.
template <class C>
__device__ __forceinline__ bool ft_work(int j, int s, int G, int tile_units, int ktiles, int kper, unsigned sched,
                                        FtWork &w) {
  w.kind = 0, w.c0 = w.c1 = 0;
  if constexpr (C::stream_k) {
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
  }
  (void)sched;
  const int u = s + j * G;
  if (u >= tile_units * C::split_k) return false;
  const int z = u / tile_units;
  w.u = u, w.k0 = z * kper, w.nk = ktiles - w.k0 < kper ? ktiles - w.k0 : kper; /* >= 1: the host's rule */
  return true;
}

// The unit space of one launch, as every warpgroup of a block sees it.
template <class C>
struct FtTiles {
  int unit_rows, unit_cols, tile_units, slot, slots, ktiles, kper;
  unsigned rank, sched;

  __device__ __forceinline__ FtTiles(int M, int N, int K, unsigned rank_, unsigned sched_) {
    const int tiles_m = (M + C::kBM - 1) / C::kBM, tiles_n = (N + C::bn - 1) / C::bn;
    unit_rows = (tiles_m + C::cluster - 1) / C::cluster, unit_cols = tiles_n;
    tile_units = unit_rows * unit_cols;
    slot = (int)blockIdx.x / C::cluster, slots = (int)gridDim.x / C::cluster;
    ktiles = (K + C::kBK - 1) / C::kBK, kper = (ktiles + C::split_k - 1) / C::split_k;
    rank = rank_, sched = sched_;
  }

  __device__ __forceinline__ bool work(int j, FtWork &w) const {
    return ft_work<C>(j, slot, slots, tile_units, ktiles, kper, sched, w);
  }

  // Work item w's k slice z and the origin (m0, n0) of this block's tile of its unit.
  __device__ __forceinline__ void origin(const FtWork &w, int &z, int &m0, int &n0) const {
    z = w.u / tile_units;
    int ur, uc;
    ft_grouped_coords<C::group>(w.u - z * tile_units, unit_rows, unit_cols, ur, uc);
    m0 = (ur * C::cluster + (int)rank) * C::kBM, n0 = uc * C::bn;
  }
};
