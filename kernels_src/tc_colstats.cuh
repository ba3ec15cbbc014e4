// fusedtune tensor-core GEMM, layer 4e: batchnorm's column partials from the accumulator (family
// tc_pass with its pass's gemm: FtTc's kColStats). Before the tile is stored (x W^T as it is: the
// pass's apply kernel takes E's argument of y itself), each m64 block's per-column mean and sum of
// squared deviations of batchnorm's argument (ft_red_col_arg, from the pass's text before this
// file) go to WS[(r0 / 64) * N + col], the layout reduce_columns.cu's merge reads. So y is read
// once after the GEMM (the apply), not twice.
//
// In the m64nN layout (tc_epilogue.cuh) a column's 16 values of a warp lie in the eight lanes of one
// lane % 4 (rows lane / 4 and + 8): their mean and sum of squared deviations come from pairwise
// merges over xor shuffles 16, 8, 4 (never negative; ft_tcb_warp). The four warps' results meet in this
// consumer's [4][bn] float2 of shared memory and one thread per column merges them in warp order
// (Chan's formula, ft_col_merge): the same bits every run.

#if defined(FT_RED_FORM) && (FT_RED_FORM == 2 || FT_RED_FORM == 3) // batchnorm, or softmax of it
// The value the apply kernel will read back: the sum rounded to y's storage type (16-bit modes), so
// the statistics describe that y, as after cuBLAS (a column whose mean is far from its spread
// would otherwise be normalized with its unrounded values' statistics).
__device__ __forceinline__ float ft_tcb_stored(float v) { return ft_to_float(ft_from_float(v)); }

// The warp's columns in groups of 8 of the thread's bn / 4: each column's (count, mean, M2) of the
// thread's two rows (those inside M), then three halving exchanges (xor 16, 8, 4: a lane keeps half
// of the group's columns left, sends the other half and merges what its partner sent by Chan's
// formula, the counts the same for every column), so each lane ends with one column of the group
// over the warp's rows: 14 shuffles a group (and one for the counts a step), not 48.
template <class C>
__device__ __forceinline__ void ft_tcb_warp(const float (&acc)[C::kAcc], float2 *part, int row, int colb, int M, int N,
                                            int warp, int lane, const FtEpArgs &ep) {
  const bool in0 = row < M, in1 = row + 8 < M; /* in1 implies in0 */
  const int j_end = 4 * ((lane >> 4) & 1) + 2 * ((lane >> 3) & 1) + ((lane >> 2) & 1); /* the column it ends with */
#pragma unroll
  for (int g = 0; g < C::bn / 32; g++) { /* 8 columns: chunks q = 4g .. 4g + 3, pairs e */
    float mu[8], m2[8];
#pragma unroll
    for (int j = 0; j < 8; j++) {
      const int q = 4 * g + j / 2, e = j & 1, col = colb + 8 * q + e;
      const bool cin = col < N; /* columns past N: their partials are not written */
      const float a = cin && in0 ? ft_red_col_arg(ft_tcb_stored(acc[4 * q + e]), row, col, ep) : 0.0f;
      const float b = cin && in1 ? ft_red_col_arg(ft_tcb_stored(acc[4 * q + 2 + e]), row + 8, col, ep) : 0.0f;
      mu[j] = in1 ? 0.5f * (a + b) : a, m2[j] = in1 ? 0.5f * (a - b) * (a - b) : 0.0f;
    }
    float n = (float)in0 + (float)in1;
#pragma unroll
    for (int half = 4, bit = 16; half >= 1; half /= 2, bit /= 2) {
      const bool up = (lane & bit) != 0; /* keeps the upper half of the columns left */
      const float nb = __shfl_xor_sync(0xffffffffu, n, bit), t = n + nb;
      const float f = t > 0.0f ? nb / t : 0.0f, w = n * f; /* w = n nb / t */
#pragma unroll
      for (int i = 0; i < half; i++) {
        const float km = up ? mu[half + i] : mu[i], kq = up ? m2[half + i] : m2[i];
        const float sm = up ? mu[i] : mu[half + i], sq = up ? m2[i] : m2[half + i];
        const float rm = __shfl_xor_sync(0xffffffffu, sm, bit), rq = __shfl_xor_sync(0xffffffffu, sq, bit);
        const float d = rm - km;
        /* an empty side changes nothing (no d * d * 0: a huge mean would make inf * 0) */
        mu[i] = nb == 0.0f ? km : n == 0.0f ? rm : fmaf(d, f, km);
        m2[i] = nb == 0.0f ? kq : n == 0.0f ? rq : kq + rq + d * d * w;
      }
      n = t;
    }
    part[warp * C::bn + 8 * (4 * g + j_end / 2) + 2 * (lane % 4) + (j_end & 1)] = make_float2(mu[0], m2[0]);
  }
}

template <class C>
__device__ __forceinline__ void ft_tile_colstats(const float (&acc)[C::kAcc], float2 *__restrict__ WS, float2 *part,
                                                 int r0, int n0, int M, int N, int warp, int lane, int wg, int tid,
                                                 const FtEpArgs &ep) {
  if (r0 >= M) return; /* the consumer's rows are all outside: uniform over its 128 threads */
  const int row = r0 + warp * 16 + lane / 4, colb = n0 + 2 * (lane % 4);
  ft_tcb_warp<C>(acc, part, row, colb, M, N, warp, lane, ep);
  ft_bar_sync<128>(2 + wg);
  for (int c = tid; c < C::bn; c += 128) {
    const int col = n0 + c;
    if (col >= N) continue;
    float n = 0.0f, mu = 0.0f, m2 = 0.0f;
#pragma unroll
    for (int w = 0; w < 4; w++) {
      const float2 p = part[w * C::bn + c];
      ft_col_merge(n, mu, m2, (float)max(0, min(16, M - (r0 + w * 16))), p.x, p.y);
    }
    WS[(size_t)(r0 / 64) * (size_t)N + col] = make_float2(mu, m2);
  }
  ft_bar_sync<128>(2 + wg); /* part is free for the next tile */
}
#else
template <class C>
__device__ __forceinline__ void ft_tile_colstats(const float (&acc)[C::kAcc], float2 *__restrict__ WS, float2 *part,
                                                 int r0, int n0, int M, int N, int warp, int lane, int wg, int tid,
                                                 const FtEpArgs &ep) {
  static_assert(!C::kColStats, "fusedtune: column partials in the tile need the column form's pass (batchnorm) before it");
}
#endif
