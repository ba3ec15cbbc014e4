// fusedtune reduction pass, held form (FT_RED_FORM 1): softmax, log_softmax and groupnorm in place on
// y, a team of FT_RED_TEAM threads per segment (the row, or one of its FT_RED_GROUPS groups) holding
// the segment in registers, FT_RED_HELD accesses of FT_VEC elements per thread. y is read once and
// written once; the statistics come from the registers: softmax's max then sum of exp, groupnorm's
// mean then the squared deviations from it (two passes over registers, never negative). The host
// (src/family/family_reduce.c) enumerates a team that covers the segment: FT_RED_TEAM * FT_RED_HELD * FT_VEC
// >= N / FT_RED_GROUPS, the segment and N multiples of FT_VEC, y aligned to a vector.
// Teams of up to 32 threads reduce with xor shuffles (every lane gets the same bits); wider teams
// (whole warps) add the warps' results in order through shared memory. Deterministic run to run.

constexpr int kHeldTeam = FT_RED_FORM == 1 ? FT_RED_TEAM : 1;
constexpr int kHeld = FT_RED_FORM == 1 ? FT_RED_HELD : 1;
constexpr int kHeldTeams = FT_BLOCK / kHeldTeam; // teams per block
constexpr int kHeldTeamWarps = kHeldTeam > 32 ? kHeldTeam / 32 : 1;
static_assert(FT_RED_FORM != 1 || (kRedKind >= 6 && kRedKind <= 8),
              "fusedtune: the held form computes softmax, log_softmax and groupnorm");
static_assert(FT_RED_FORM != 1 || (kHeldTeam >= 1 && FT_BLOCK % kHeldTeam == 0 &&
                                   (kHeldTeam <= 32 ? (kHeldTeam & (kHeldTeam - 1)) == 0 : kHeldTeam % 32 == 0)),
              "fusedtune: a team is a power of two up to a warp, or whole warps dividing the block");
static_assert(FT_RED_FORM != 1 || (kRedKind == 8 ? FT_RED_GROUPS == FT_RED_ARG : FT_RED_GROUPS == 1),
              "fusedtune: the held form's segments per row are groupnorm's G, else 1");

// The team's sum (Max: its NaN-propagating max) of v, the same bits in every lane of the team.
template <bool Max>
__device__ __forceinline__ float ft_held_team(float v) {
  const auto op = [](float a, float b) { return Max ? ft_max(a, b) : a + b; };
#pragma unroll
  for (int off = (kHeldTeam < 32 ? kHeldTeam : 32) / 2; off > 0; off /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
  if constexpr (kHeldTeam > 32) {
    __shared__ float part[kHeldTeams][kHeldTeamWarps];
    const int team = threadIdx.x / kHeldTeam, warp = threadIdx.x % kHeldTeam / 32;
    __syncthreads(); // a previous call's readers are done
    if (threadIdx.x % 32 == 0) part[team][warp] = v;
    __syncthreads();
    v = part[team][0];
#pragma unroll
    for (int w = 1; w < kHeldTeamWarps; w++) v = op(v, part[team][w]);
  }
  return v;
}

// One segment per team. Every thread reaches every shuffle and barrier (a team past the last
// segment computes on nothing and stores nothing).
__device__ __forceinline__ void ft_red_held(ft_elem_t *y, int M, int N, const FtEpArgs &ep) {
  const int S = N / FT_RED_GROUPS, lane = threadIdx.x % kHeldTeam;
  const long long seg = (long long)blockIdx.x * kHeldTeams + threadIdx.x / kHeldTeam;
  const bool live = seg < (long long)M * FT_RED_GROUPS;
  const int row = live ? (int)(seg / FT_RED_GROUPS) : 0, c0 = live ? (int)(seg % FT_RED_GROUPS) * S : 0;
  ft_elem_t *p = y + (size_t)row * (size_t)N + c0;
  float v[kHeld][FT_VEC];
  bool in[kHeld];
#pragma unroll
  for (int c = 0; c < kHeld; c++) {
    const int j = (c * kHeldTeam + lane) * FT_VEC;
    in[c] = live && j < S;
    if (in[c]) {
      const FtRedPack q = *reinterpret_cast<const FtRedPack *>(p + j);
#pragma unroll
      for (int l = 0; l < FT_VEC; l++) v[c][l] = ft_red_inner(ft_to_float(q.e[l]), row, c0 + j + l, ep);
    } else {
#pragma unroll
      for (int l = 0; l < FT_VEC; l++) v[c][l] = 0.0f;
    }
  }
  // The statistics, then each output from the held value alone (no second array: a row of 32
  // values a thread in blocks of 1024 threads fits the 64 registers such a block leaves).
  float mean = 0.0f, rstd = 0.0f, inv = 0.0f, lse = 0.0f, m = -ft_red_inf();
  bool finite = true;
  if constexpr (kRedKind == 8) {
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < kHeld; c++)
#pragma unroll
      for (int l = 0; l < FT_VEC; l++) s += in[c] ? v[c][l] : 0.0f;
    mean = ft_held_team<false>(s) / (float)S;
    float q = 0.0f;
#pragma unroll
    for (int c = 0; c < kHeld; c++)
#pragma unroll
      for (int l = 0; l < FT_VEC; l++) {
        const float d = v[c][l] - mean;
        q = in[c] ? fmaf(d, d, q) : q;
      }
    rstd = 1.0f / sqrtf(ft_held_team<false>(q) / (float)S + kRedNormEps);
  } else {
#pragma unroll
    for (int c = 0; c < kHeld; c++)
#pragma unroll
      for (int l = 0; l < FT_VEC; l++) m = in[c] ? ft_max(m, v[c][l]) : m;
    m = ft_held_team<true>(m);
    // As the block-per-row form sums: a value equal to the max counts 1 without the exponential
    // (two +inf), -inf counts 0. Softmax keeps each exponential in place of its value.
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < kHeld; c++)
#pragma unroll
      for (int l = 0; l < FT_VEC; l++) {
        const float x = v[c][l], e = x == -ft_red_inf() ? 0.0f : x == m ? 1.0f : ft_expf(x - m);
        s += in[c] ? e : 0.0f;
        if constexpr (kRedKind == 6) v[c][l] = e;
      }
    s = ft_held_team<false>(s);
    inv = 1.0f / s, lse = m + ft_logf(s);
    finite = m == m && m != ft_red_inf() && m != -ft_red_inf();
  }
  // A max of +-inf or NaN gives NaN throughout, as torch and the float64 reference do (their sum
  // holds exp(inf - inf)), and as the block-per-row form does.
  const auto out = [&](float x) {
    if constexpr (kRedKind == 8) return (x - mean) * rstd;
    return !finite ? __int_as_float(0x7fffffff) : kRedKind == 7 ? x - lse : x * inv;
  };
#pragma unroll
  for (int c = 0; c < kHeld; c++) {
    const int j = (c * kHeldTeam + lane) * FT_VEC;
    if (!in[c]) continue;
    FtRedPack q;
#pragma unroll
    for (int l = 0; l < FT_VEC; l++) q.e[l] = ft_from_float(ft_red_post(out(v[c][l]), row, c0 + j + l, ep));
    *reinterpret_cast<FtRedPack *>(p + j) = q;
  }
}
