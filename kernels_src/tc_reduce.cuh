// fusedtune tensor-core GEMM, layer 4c: a one-value row reduction fused into the tile (family
// tc_reduce, src/family/tc/family_tc_reduce.c; FtTc's kRedKind: 1 rowsum, 2 rowmean, 3 rowmax, 4 rowmin,
// 5 logsumexp). E's reduction argument is FT_EPILOGUE_EXPR (ft_apply_epilogue) there; the
// accumulator becomes that argument in registers and each row of the m64 block is folded into one
// partial statistic per (row, N tile), written to WS[row * ntiles + n0 / bn] (fp32, ntiles =
// ceil(N / bn)); no y element is stored. The finalize kernel (tc_reduce_final.cu) folds a row's
// partials in a fixed order and applies the rest of E.
//
// In the m64nN accumulator layout (tc_epilogue.cuh) a row's bn values lie in the four lanes of one
// quad (lane / 4 the row, lane % 4 the column pair), so a row folds in registers and two xor
// shuffles, with no shared memory. The statistic: the sum (rowsum, rowmean), the max or min, and
// for logsumexp the tile's own log-sum-exp m + log(sum exp(v - m)) with m the tile row's max:
// one float, so the workspace is M x ntiles floats (under 1 % of the logits at BN >= 128 in bf16).

__device__ __forceinline__ float ft_tcr_inf() { return __int_as_float(0x7f800000); }

// The statistic of no value: a column past N or a row past M folds this.
template <int kKind>
__device__ __forceinline__ float ft_tcr_identity() {
  if constexpr (kKind == 3 || kKind == 5) return -ft_tcr_inf();
  if constexpr (kKind == 4) return ft_tcr_inf();
  return 0.0f;
}

// Two statistics as one: a sum, a max or a min (NaN propagates: ft_max, ft_min); logsumexp's max
// step (its sums are added separately).
template <int kKind>
__device__ __forceinline__ float ft_tcr_fold(float s, float v) {
  if constexpr (kKind == 3 || kKind == 5) return ft_max(s, v);
  if constexpr (kKind == 4) return ft_min(s, v);
  return s + v;
}

// exp(v - m) where m is the max of the values v is one of; an equal value counts 1 without the
// exponential (two +inf would give exp(inf - inf)); an m of NaN gives NaN.
__device__ __forceinline__ float ft_tcr_exp_term(float v, float m) { return v == m ? 1.0f : ft_expf(v - m); }

// The quad's fold of s (the same bits in its four lanes: each pairwise step is commutative).
template <int kKind>
__device__ __forceinline__ float ft_tcr_quad(float s) {
  s = ft_tcr_fold<kKind>(s, __shfl_xor_sync(0xffffffffu, s, 1));
  return ft_tcr_fold<kKind>(s, __shfl_xor_sync(0xffffffffu, s, 2));
}

// This thread's values of row half h (rows lane / 4 and + 8) with the reduction's argument
// applied, folded. kGuard: the tile crosses Y's edge; E runs only on outputs inside (it may read
// vectors), the rest fold the identity.
template <class C, bool kGuard>
__device__ __forceinline__ float ft_tcr_thread(float (&acc)[C::kAcc], int h, int row, int colb, int M, int N,
                                               const FtEpArgs &ep) {
  constexpr int kKind = C::kRedKind;
  float s = ft_tcr_identity<kKind>();
#pragma unroll
  for (int q = 0; q < C::bn / 8; q++)
#pragma unroll
    for (int e = 0; e < 2; e++) {
      const int i = 4 * q + 2 * h + e, col = colb + 8 * q + e;
      if (!kGuard || (row < M && col < N))
        acc[i] = ft_apply_epilogue(acc[i], row, col, ep);
      else
        acc[i] = ft_tcr_identity<kKind>();
      s = ft_tcr_fold<kKind>(s, acc[i]);
    }
  return s;
}

// logsumexp's second step: sum of exp(v - m) over this thread's values of row half h (m: the tile
// row's max; a folded identity -inf adds 0, or 1 where m is -inf, which log keeps -inf).
template <class C>
__device__ __forceinline__ float ft_tcr_sumexp(const float (&acc)[C::kAcc], int h, float m) {
  float s = 0.0f;
#pragma unroll
  for (int q = 0; q < C::bn / 8; q++) s += ft_tcr_exp_term(acc[4 * q + 2 * h], m) + ft_tcr_exp_term(acc[4 * q + 2 * h + 1], m);
  return s;
}

// One m64 accumulator (rows r0 .., columns n0 .. n0 + bn - 1): each of its rows inside Y gets its
// partial statistic in WS, written by the quad's lane 0.
template <class C>
__device__ __forceinline__ void ft_tile_reduce(float (&acc)[C::kAcc], float *__restrict__ WS, int r0, int n0, int M,
                                               int N, int warp, int lane, const FtEpArgs &ep) {
  constexpr int kKind = C::kRedKind;
  if (r0 >= M) return; /* this accumulator's rows are all outside */
  const int row = r0 + warp * 16 + lane / 4, colb = n0 + 2 * (lane % 4);
  const int ntiles = (N + C::bn - 1) / C::bn;
  const bool inside = r0 + 64 <= M && n0 + C::bn <= N;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int r = row + 8 * h;
    float s = inside ? ft_tcr_thread<C, false>(acc, h, r, colb, M, N, ep) : ft_tcr_thread<C, true>(acc, h, r, colb, M, N, ep);
    s = ft_tcr_quad<kKind>(s);
    if constexpr (kKind == 5) {
      float t = ft_tcr_sumexp<C>(acc, h, s);
      t += __shfl_xor_sync(0xffffffffu, t, 1);
      t += __shfl_xor_sync(0xffffffffu, t, 2);
      s = s + ft_logf(t); /* -inf, +inf and NaN maxima stay what they are */
    }
    if (lane % 4 == 0 && r < M) WS[(size_t)r * (size_t)ntiles + (size_t)(n0 / C::bn)] = s;
  }
}
