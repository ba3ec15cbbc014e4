// fusedtune tensor-core GEMM with a fused row reduction (family tc_reduce), the second kernel:
// y[row] = POST(the row's statistic), from the ntiles partials the main kernel wrote to
// WS[row * ntiles + t] (tc_reduce.cuh). One warp per row: lane l folds partials l, l + 32, ... in
// order, then a fixed xor tree; the same bits every run. Codegen defines FT_RED_POST (the rest of
// E: IN0 the reduction's value, row, ep; col is 0).

__device__ __forceinline__ float ft_tcr_post(float IN0, int row, int col, const FtEpArgs &ep) {
  (void)IN0, (void)row, (void)col, (void)ep;
  return (float)(FT_RED_POST);
}

template <int kKind>
__device__ __forceinline__ float ft_tcr_warp(float s) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) s = ft_tcr_fold<kKind>(s, __shfl_xor_sync(0xffffffffu, s, off));
  return s;
}

extern "C" __global__ void __launch_bounds__(FT_AUX_BLOCK)
ft_tc_red_finalize(const float *__restrict__ WS, ft_elem_t *__restrict__ Y, int M, int N, FtEpArgs ep) {
  constexpr int kKind = FtTcThis::kRedKind;
  static_assert(kKind >= 1 && kKind <= 5, "fusedtune: the finalize kernel serves one-value row reductions");
  const int row = (int)blockIdx.x * (FT_AUX_BLOCK / 32) + (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  if (row >= M) return; /* a whole warp: the shuffles below see all 32 lanes */
  const int ntiles = (N + FtTcThis::bn - 1) / FtTcThis::bn;
  const float *part = WS + (size_t)row * (size_t)ntiles;
  float s = ft_tcr_identity<kKind>();
  for (int t = lane; t < ntiles; t += 32) s = ft_tcr_fold<kKind>(s, __ldcg(part + t));
  s = ft_tcr_warp<kKind>(s);
  float r = s;
  if constexpr (kKind == 5) { /* the tiles' log-sum-exps, max-subtracted */
    float e = 0.0f;
    for (int t = lane; t < ntiles; t += 32) e += ft_tcr_exp_term(__ldcg(part + t), s);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) e += __shfl_xor_sync(0xffffffffu, e, off);
    r = s + ft_logf(e);
  }
  if constexpr (kKind == 2) r = s / (float)N;
  if (lane == 0) Y[row] = ft_from_float(ft_tcr_post(r, row, 0, ep));
}
