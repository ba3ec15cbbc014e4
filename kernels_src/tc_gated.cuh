// fusedtune tensor-core GEMM, layer 4d: a gated pair's epilogue (Cfg::gated; E with x2). The tile
// is BN columns of the product with the interleaved [2N', K] weight (src/family/gated.h: rows 16j .. 16j
// + 7 W1's 8j .., the next 8 W2's), so in the m64nBN accumulator layout (tc_epilogue.cuh) a
// thread's chunk 2p holds x and chunk 2p + 1 x2 of the same outputs: acc[8 p + k] and
// acc[8 p + 4 + k] pair into output column n0 / 2 + 8 p + 2 (lane % 4) + (k & 1) of y [M, N / 2]
// (N the GEMM's columns). N / 2 is a multiple of 8 and the column even, so a pair of adjacent
// outputs is inside y or outside it whole.

// E of a group of 16-column groups first, then their stores, as ft_tile_store_direct does: kEpiW
// of them, one where a consumer holds two m64 accumulators (ping-pong; more spilled at BN 128).
template <class C>
__device__ __forceinline__ void ft_tile_store_gated(float (&acc)[C::kAcc], ft_elem_t *__restrict__ Y, int r0, int n0,
                                                    int M, int N, int warp, int lane, const FtEpArgs &ep) {
  if constexpr (C::gated) {
    constexpr int W = C::kMsub > 1 ? 1 : C::kEpiW;
    const int out_n = N / 2;
    const int row = r0 + warp * 16 + lane / 4;
    const int colb = n0 / 2 + 2 * (lane % 4);
#pragma unroll
    for (int p0 = 0; p0 < C::bn / 16; p0 += W) {
      float y[4 * W];
#pragma unroll
      for (int p = p0; p < p0 + W && p < C::bn / 16; p++)
#pragma unroll
        for (int k = 0; k < 4; k++)
          y[4 * (p - p0) + k] = ft_apply_epilogue2(acc[8 * p + k], acc[8 * p + 4 + k], row + 8 * (k >> 1),
                                                   colb + 8 * p + (k & 1), ep);
#pragma unroll
      for (int p = p0; p < p0 + W && p < C::bn / 16; p++) {
        const int col = colb + 8 * p;
        if (col >= out_n) continue;
        if (row < M) ft_store2_inside<C>(Y, y[4 * (p - p0)], y[4 * (p - p0) + 1], row, col, out_n);
        if (row + 8 < M) ft_store2_inside<C>(Y, y[4 * (p - p0) + 2], y[4 * (p - p0) + 3], row + 8, col, out_n);
      }
      asm volatile("" ::: "memory");
    }
  } else {
    (void)acc, (void)Y, (void)r0, (void)n0, (void)M, (void)N, (void)warp, (void)lane, (void)ep;
  }
}
