// fusedtune tensor-core GEMM, layer 4e: batchnorm's column partials from the accumulator (family
// tc_pass with its pass's gemm: FtTc's kColStats). Before the tile is stored (x W^T as it is: the
// pass's apply kernel takes E's argument of y itself), each m64 block's per-column mean and sum of
// squared deviations of batchnorm's argument (ft_red_col_arg, from the pass's text before this
// file) go to WS[(r0 / 64) * N + col], the layout reduce_columns.cu's merge reads. So y is read
// once after the GEMM (the apply), not twice.
//
// In the m64nN layout (tc_epilogue.cuh) a column's 16 values of a warp lie in the eight lanes of one
// lane % 4 (rows lane / 4 and + 8): its sum over xor shuffles 4, 8, 16, the mean, then the squared
// deviations from it the same way (two passes from registers, never negative). The four warps'
// results meet in this consumer's [4][bn] float2 of shared memory and one thread per column merges
// them in warp order (Chan's formula, ft_col_merge): the same bits every run.

#if defined(FT_RED_FORM) && (FT_RED_FORM == 2 || FT_RED_FORM == 3) // batchnorm, or softmax of it
template <class C>
__device__ __forceinline__ void ft_tile_colstats(const float (&acc)[C::kAcc], float2 *__restrict__ WS, float2 *part,
                                                 int r0, int n0, int M, int N, int warp, int lane, int wg, int tid,
                                                 const FtEpArgs &ep) {
  if (r0 >= M) return; /* the consumer's rows are all outside: uniform over its 128 threads */
  const int row = r0 + warp * 16 + lane / 4, colb = n0 + 2 * (lane % 4);
  const int wrows = min(16, M - (r0 + warp * 16)); /* this warp's rows inside (may be <= 0) */
  const float inv = wrows > 0 ? 1.0f / (float)wrows : 0.0f;
  const bool in0 = row < M, in1 = row + 8 < M;
#pragma unroll
  for (int q = 0; q < C::bn / 8; q++)
#pragma unroll
    for (int e = 0; e < 2; e++) {
      const int col = colb + 8 * q + e;
      const bool cin = col < N;
      const float a = in0 && cin ? ft_red_col_arg(acc[4 * q + e], row, col, ep) : 0.0f;
      const float b = in1 && cin ? ft_red_col_arg(acc[4 * q + 2 + e], row + 8, col, ep) : 0.0f;
      float s = a + b;
      s += __shfl_xor_sync(0xffffffffu, s, 4);
      s += __shfl_xor_sync(0xffffffffu, s, 8);
      s += __shfl_xor_sync(0xffffffffu, s, 16);
      const float mean = s * inv, da = in0 ? a - mean : 0.0f, db = in1 ? b - mean : 0.0f;
      float d = fmaf(da, da, db * db);
      d += __shfl_xor_sync(0xffffffffu, d, 4);
      d += __shfl_xor_sync(0xffffffffu, d, 8);
      d += __shfl_xor_sync(0xffffffffu, d, 16);
      if (lane < 4) part[warp * C::bn + 8 * q + 2 * lane + e] = make_float2(mean, d);
    }
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
