// fusedtune tensor-core GEMM, layer 4d: groupnorm with its groups whole inside the tile (family
// tc_norm, src/family/tc/family_tc_norm.c; FtTc's kRedKind 8, kNormW the columns of a group). E is
// POST(groupnorm(ARG(x W^T), G)): codegen's FT_EPILOGUE_EXPR is ARG (ft_apply_epilogue), FT_RED_POST
// the rest of E of the normalized value IN0. Each thread holds, for its two rows (lane / 4 and + 8),
// two adjacent columns of every 8-column chunk (tc_epilogue.cuh), so a group of kNormW columns lies
// in: one thread's pair (2), a lane pair (4), or the quad's kNormW / 8 chunks (8, 16, ...). Its mean,
// then the mean of the squared deviations from it (two passes over registers, never negative, as
// the held pass computes them: kernels_src/reduce_held.cu), come from the registers and at most two
// xor shuffles; y is stored once, after POST. No workspace, no second kernel.

template <class C>
__device__ __forceinline__ void ft_tile_groupnorm(float (&acc)[C::kAcc], ft_elem_t *__restrict__ Y, int r0, int n0,
                                                  int M, int N, int warp, int lane, const FtEpArgs &ep);

#if FT_TC_NORM_W > 0
constexpr float kTcNormEps = 1e-5f; // torch's GroupNorm default, as the reduction pass's

__device__ __forceinline__ float ft_tcn_post(float IN0, int row, int col, const FtEpArgs &ep) {
  (void)IN0, (void)row, (void)col, (void)ep;
  return (float)(FT_RED_POST);
}

// The sum of v over the lanes that hold one group's columns (the same bits in each of them).
template <int kW>
__device__ __forceinline__ float ft_tcn_lanes(float v) {
  if constexpr (kW >= 4) v += __shfl_xor_sync(0xffffffffu, v, 1);
  if constexpr (kW >= 8) v += __shfl_xor_sync(0xffffffffu, v, 2);
  return v;
}

// One m64 accumulator (rows r0 .., columns n0 .. n0 + bn - 1): ARG on each output, each group's
// statistics, POST of the normalized values, then the stores (E already applied). Outputs past Y's
// edge take 0 as ARG's value, run neither ARG nor POST (either may read vectors there) and are not
// stored; a group lies wholly inside or wholly outside N (the host's rule: N and bn multiples of
// kNormW), so no statistic mixes in such a 0. Every lane reaches every shuffle.
template <class C>
__device__ __forceinline__ void ft_tile_groupnorm(float (&acc)[C::kAcc], ft_elem_t *__restrict__ Y, int r0, int n0,
                                                  int M, int N, int warp, int lane, const FtEpArgs &ep) {
  constexpr int kW = C::kNormW;
  constexpr int kQ = kW >= 8 ? kW / 8 : 1; /* 8-column chunks one group spans */
  if (r0 >= M) return; /* this accumulator's rows are all outside: no lane stores */
  const int row = r0 + warp * 16 + lane / 4, colb = n0 + 2 * (lane % 4);
#pragma unroll
  for (int i = 0; i < C::kAcc; i++) {
    const int r = row + 8 * ((i >> 1) & 1), col = colb + 8 * (i / 4) + (i & 1);
    acc[i] = r < M && col < N ? ft_apply_epilogue(acc[i], r, col, ep) : 0.0f;
  }
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int r = row + 8 * h;
#pragma unroll
    for (int g = 0; g < C::bn / 8; g += kQ) {
      float s = 0.0f;
#pragma unroll
      for (int q = g; q < g + kQ; q++) s += acc[4 * q + 2 * h] + acc[4 * q + 2 * h + 1];
      const float mean = ft_tcn_lanes<kW>(s) / (float)kW;
      float d = 0.0f;
#pragma unroll
      for (int q = g; q < g + kQ; q++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const float t = acc[4 * q + 2 * h + e] - mean;
          d = fmaf(t, t, d);
        }
      const float rstd = 1.0f / sqrtf(ft_tcn_lanes<kW>(d) / (float)kW + kTcNormEps);
#pragma unroll
      for (int q = g; q < g + kQ; q++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const int i = 4 * q + 2 * h + e, col = colb + 8 * q + e;
          acc[i] = r < M && col < N ? ft_tcn_post((acc[i] - mean) * rstd, r, col, ep) : 0.0f; /* POST reads vectors */
        }
    }
  }
  const bool inside = r0 + 64 <= M && n0 + C::bn <= N && (N & 1) == 0;
#pragma unroll
  for (int q = 0; q < C::bn / 8; q++) {
    const int col = colb + 8 * q;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int r = row + 8 * h;
      const float a = acc[4 * q + 2 * h], b = acc[4 * q + 2 * h + 1];
      if (inside) {
        ft_store2_inside<C>(Y, a, b, r, col, N);
      } else if (r < M && col < N) {
        ft_elem_t *dst = Y + (size_t)r * (size_t)N + col;
        dst[0] = ft_from_float(a);
        if (col + 1 < N) dst[1] = ft_from_float(b);
      }
    }
  }
}
#endif
