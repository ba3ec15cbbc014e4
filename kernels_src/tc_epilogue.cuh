// fusedtune tensor-core GEMM, layer 4a: what becomes of a consumer's finished sums other than the
// TMA-store epilogue (tc_epilogue_tma.cuh): E and direct stores from registers, split-K's raw
// slabs, stream-K's published tiles.
//
// Accumulator layout of m64nN: acc[4 q + k] is row 16 warp + lane / 4 + 8 (k >> 1), column
// 8 q + 2 (lane % 4) + (k & 1): 8-column chunks, so any BN that is a multiple of 8.

// E of two adjacent outputs (row, col), (row, col + 1), stored when inside the matrix.
template <class C>
__device__ __forceinline__ void ft_store2(ft_elem_t *__restrict__ Y, float a, float b, int row, int col, int M, int N,
                                          const FtEpArgs &ep) {
  if (row >= M || col >= N) return;
  ft_elem_t *dst = Y + (size_t)row * (size_t)N + col;
  if (col + 1 < N) {
    a = ft_apply_epilogue(a, row, col, ep);
    b = ft_apply_epilogue(b, row, col + 1, ep);
    if constexpr (C::dtype == 0) {
      if ((N & 1) == 0) {
        asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(dst), "f"(a), "f"(b) : "memory");
      } else {
        dst[0] = a;
        dst[1] = b;
      }
    } else {
      const unsigned p = ft_pack<C::dtype>(a, b);
      if ((N & 1) == 0) {
        *reinterpret_cast<unsigned *>(dst) = p;
      } else {
        dst[0] = (unsigned short)(p & 0xFFFF);
        dst[1] = (unsigned short)(p >> 16);
      }
    }
  } else {
    a = ft_apply_epilogue(a, row, col, ep);
    if constexpr (C::dtype == 0)
      dst[0] = a;
    else
      dst[0] = (unsigned short)(ft_pack<C::dtype>(a, 0.0f) & 0xFFFF);
  }
}

// A pair of finished outputs (row, col), (row, col + 1) of a tile wholly inside Y, N even.
template <class C>
__device__ __forceinline__ void ft_store2_inside(ft_elem_t *__restrict__ Y, float a, float b, int row, int col, int N) {
  ft_elem_t *dst = Y + (size_t)row * (size_t)N + col;
  if constexpr (C::dtype == 0)
    asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(dst), "f"(a), "f"(b) : "memory");
  else
    *reinterpret_cast<unsigned *>(dst) = ft_pack<C::dtype>(a, b);
}

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

// One m64 accumulator (rows r0 .., columns n0 ..) stored without shared memory: E and each
// thread's pairs (split-K: raw sums into slab z of WS instead). A tile wholly inside Y takes E on
// a group of kEpiW x 16 columns first, then their stores, with no branch, so the group's epilogue
// vector loads are issued together rather than each behind a bounds check and the previous store;
// all at once would hold every loaded value beside the accumulator (spills in tf32). The empty
// asm keeps the next group's loads behind this group's stores.
template <class C>
__device__ __forceinline__ void ft_tile_store_direct(float (&acc)[C::kAcc], ft_elem_t *__restrict__ Y,
                                                     float *__restrict__ WS, int z, int r0, int n0, int M, int N,
                                                     int warp, int lane, const FtEpArgs &ep) {
  const int row = r0 + warp * 16 + lane / 4;
  const int colb = n0 + 2 * (lane % 4);
  if constexpr (C::split_k == 1) {
    if (r0 + 64 <= M && n0 + C::bn <= N && (N & 1) == 0) {
#pragma unroll
      for (int q0 = 0; q0 < C::bn / 8; q0 += 2 * C::kEpiW) {
#pragma unroll
        for (int i = 4 * q0; i < 4 * (q0 + 2 * C::kEpiW) && i < C::kAcc; i++) {
          const int col = colb + 8 * (i / 4) + (i & 1);
          acc[i] = ft_apply_epilogue(acc[i], row + 8 * ((i >> 1) & 1), col, ep);
        }
#pragma unroll
        for (int q = q0; q < q0 + 2 * C::kEpiW && q < C::bn / 8; q++) {
          ft_store2_inside<C>(Y, acc[4 * q + 0], acc[4 * q + 1], row, colb + 8 * q, N);
          ft_store2_inside<C>(Y, acc[4 * q + 2], acc[4 * q + 3], row + 8, colb + 8 * q, N);
        }
        asm volatile("" ::: "memory");
      }
      return;
    }
  }
  /* 8-column chunk q: acc[4 q .. 4 q + 3] (a BN that is an odd multiple of 8 ends in half a
   * 16-column group). */
#pragma unroll
  for (int q = 0; q < C::bn / 8; q++) {
    const int col = colb + 8 * q;
    if constexpr (C::split_k > 1) {
      float *ws = WS + (size_t)z * (size_t)M * (size_t)N;
      ft_store_raw2(ws, acc[4 * q + 0], acc[4 * q + 1], row, col, M, N);
      ft_store_raw2(ws, acc[4 * q + 2], acc[4 * q + 3], row + 8, col, M, N);
    } else {
      ft_store2<C>(Y, acc[4 * q + 0], acc[4 * q + 1], row, col, M, N, ep);
      ft_store2<C>(Y, acc[4 * q + 2], acc[4 * q + 3], row + 8, col, M, N, ep);
    }
  }
}

// Stream-K, a range that ends inside its unit: this warpgroup's raw sums published to the
// block's WS tile (float4 q of thread t at 128 q + t), then its flag FL[block, wg] raised.
template <class C>
__device__ __forceinline__ void ft_sk_publish(const float (&d)[C::kAcc], float *__restrict__ WS,
                                              unsigned *__restrict__ FL, int wg, int tid) {
  float4 *mine = reinterpret_cast<float4 *>(WS) + ((size_t)blockIdx.x * C::consumers + wg) * (C::bn / 8) * 128;
#pragma unroll
  for (int q = 0; q < C::bn / 8; q++)
    __stcg(mine + 128 * q + tid, make_float4(d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]));
  __threadfence();
  ft_bar_sync<128>(2 + wg);
  if (tid == 0)
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(FL + blockIdx.x * C::consumers + wg), "r"(1u) : "memory");
}

// Stream-K, the slot whose range ends the unit: the raw sums the unit's earlier slots c0 .. c1 - 1
// published, added in slot order once each one's flag is up (and put back to zero for the next
// launch).
template <class C>
__device__ __forceinline__ void ft_sk_gather(float (&d)[C::kAcc], const float *__restrict__ WS,
                                             unsigned *__restrict__ FL, int c0, int c1, unsigned rank, int wg,
                                             int tid) {
  for (int c = c0; c < c1; c++) {
    const unsigned cta = (unsigned)c * C::cluster + rank;
    unsigned *flag = FL + cta * C::consumers + wg;
    if (tid == 0) {
      unsigned ready;
      for (;;) {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(ready) : "l"(flag) : "memory");
        if (ready) break;
        __nanosleep(64);
      }
      asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(0u) : "memory");
    }
    ft_bar_sync<128>(2 + wg);
    const float4 *theirs = reinterpret_cast<const float4 *>(WS) + ((size_t)cta * C::consumers + wg) * (C::bn / 8) * 128;
#pragma unroll
    for (int q = 0; q < C::bn / 8; q++) {
      const float4 p = __ldcg(theirs + 128 * q + tid);
      d[4 * q] += p.x, d[4 * q + 1] += p.y, d[4 * q + 2] += p.z, d[4 * q + 3] += p.w;
    }
  }
}
