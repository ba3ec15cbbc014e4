// fusedtune reduction pass: after cuBLAS's GEMM, one block per row reduces the row's values of
// E's reduction argument and applies the rest of E (the "cublas+epilogue" strategy for the row
// reductions of docs/EPILOGUE.md, and the eager chain's reduction steps).
//
// Codegen defines FT_RED_KIND (the ft_ep_red value: 1 rowsum, 2 rowmean, 3 rowmax, 4 rowmin,
// 5 logsumexp, 6 softmax, 7 log_softmax, 8 groupnorm, 9 batchnorm, 10 maxpool, 11 avgpool),
// FT_RED_ARG (groupnorm's G, a pool's w, else 0), FT_BLOCK (threads), FT_VEC (elements per access),
// FT_RED_INNER (the reduction's argument: x, row, col, ep; with a pool, of a window's value IN0)
// and FT_RED_POST (the rest of E: IN0 the reduction's value, row, col, ep); FT_RED_POOL (0, or the
// pool's kind: E's outermost reduction, or inside a row reduction), FT_RED_POOL_W (its window) and
// FT_RED_POOL_ARG (the windows' argument: x, row, col, ep).
//
// The block reads columns [col0, col0 + ncols) of its row from src (row stride ld). A one-value
// reduction (kinds 1-5) folds them into the row's running statistic, kept in stats between the
// column chunks of one launch sequence (chunks run in order, so the sums are the same every run),
// and after the last chunk writes y[row]. Softmax and log_softmax (kinds 6, 7; one chunk of all N
// columns) take the row's max and sum of exp, then read the row again and write y[row, col]: src
// may be y (the row is read whole before the block writes it). Groupnorm (8, in place too) takes
// each group's mean, then its variance from the values again (two passes: never negative), then
// writes the group normalized. Batchnorm (9, in place too) works by columns instead: a block takes
// 32 columns at a time (block b the groups b, b + gridDim.x, ...), its warps share the M rows, and
// mean, variance (again two passes) and the normalized values follow as for a group. With a pool
// (chunks of whole windows), a thread takes whole windows: max (NaN-propagating) or mean of the
// windows' argument, written as y[row, window] (10, 11) or folded into the row's statistic as a
// one-value reduction's values (a partial window at the row's end is dropped, as torch's pools
// do). Every sum is thread-sequential
// then a fixed tree, so results are deterministic; exponentials are max-subtracted.

#if FT_RED_KIND < 1 || FT_RED_KIND > 11
#error "fusedtune: FT_RED_KIND must be a row, group, column or window reduction (1..11)"
#endif

// The form (src/family/family_reduce.c): 0 a block per row (this file), 1 a team of threads per row or group
// holding it in registers (reduce_held.cu), 2 batchnorm's column partials over M tiles then an
// apply kernel (reduce_columns.cu), 3 those partials of batchnorm's argument then a block per row
// reducing its normalized values (softmax, log_softmax of batchnorm; reduce_columns.cu). The eager
// chain's steps use form 0 and write none of these.
#ifndef FT_RED_FORM
#define FT_RED_FORM 0
#define FT_RED_TEAM 0
#define FT_RED_HELD 0
#define FT_RED_GROUPS 0
#define FT_RED_TILE 0
#endif
#ifndef FT_RED_GEMM // 1: batchnorm's column partials written by family tc_pass's GEMM (reduce_columns.cu)
#define FT_RED_GEMM 0
#endif
constexpr int kRedForm = FT_RED_FORM;

constexpr int kRedKind = FT_RED_KIND;
constexpr bool kRedRowwise = kRedKind >= 6 && kRedKind <= 9; // softmax, log_softmax, groupnorm, batchnorm: [M, N]
constexpr int kRedPool = FT_RED_POOL;                        // 10 maxpool, 11 avgpool, 0 none
constexpr int kRedPoolW = FT_RED_POOL_W;
constexpr bool kRedTopPool = kRedKind >= 10;                 // y is [M, N / w]
constexpr bool kRedExp = kRedKind >= 5 && kRedKind <= 7;    // a running max and sum of exp
constexpr float kRedNormEps = 1e-5f;                        // torch's GroupNorm default
constexpr int kRedWarps = FT_BLOCK / 32;

__device__ __forceinline__ float ft_red_inf() { return __int_as_float(0x7f800000); }

__device__ __forceinline__ float ft_red_inner(float x, int row, int col, const FtEpArgs &ep) {
  const float IN0 = x; // with a pool, the window's value
  (void)x; (void)IN0; (void)row; (void)col; (void)ep;
  return (float)(FT_RED_INNER);
}

// A row reduction of batchnorm's values (FT_RED_FORM 3, softmax or log_softmax): FT_RED_NORM_ARG is
// batchnorm's argument (x, row, col, ep), whose column statistics the column kernel takes
// (reduce_columns.cu); FT_RED_INNER then reads the normalized value as IN0.
#ifndef FT_RED_NORM_ARG
#define FT_RED_NORM_ARG (x)
#endif
__device__ __forceinline__ float ft_red_norm_arg(float x, int row, int col, const FtEpArgs &ep) {
  (void)x; (void)row; (void)col; (void)ep;
  return (float)(FT_RED_NORM_ARG);
}

// What the column form takes statistics of: batchnorm's argument.
__device__ __forceinline__ float ft_red_col_arg(float x, int row, int col, const FtEpArgs &ep) {
  if constexpr (kRedForm == 3) return ft_red_norm_arg(x, row, col, ep);
  else return ft_red_inner(x, row, col, ep);
}

__device__ __forceinline__ float ft_red_pool_arg(float x, int row, int col, const FtEpArgs &ep) {
  (void)x; (void)row; (void)col; (void)ep;
  return (float)(FT_RED_POOL_ARG);
}

// One window's max (NaN-propagating, as torch) or mean of the pool's argument; p is its first value.
__device__ __forceinline__ float ft_red_window(const ft_elem_t *p, int row, int col, const FtEpArgs &ep) {
  float r = ft_red_pool_arg(ft_to_float(p[0]), row, col, ep);
  for (int k = 1; k < kRedPoolW; k++) {
    const float v = ft_red_pool_arg(ft_to_float(p[k]), row, col + k, ep);
    r = kRedPool == 10 ? ((v > r || v != v) ? v : r) : r + v;
  }
  return kRedPool == 10 ? r : r / (float)kRedPoolW;
}

__device__ __forceinline__ float ft_red_post(float IN0, int row, int col, const FtEpArgs &ep) {
  (void)IN0; (void)row; (void)col; (void)ep;
  return (float)(FT_RED_POST);
}

// The running statistic: a = sum (rowsum, rowmean), max, min, or the max of a logsumexp with
// b = sum of exp(v - a).
struct FtRedState {
  float a, b;
};

__device__ __forceinline__ FtRedState ft_red_identity() {
  if constexpr (kRedKind == 3 || kRedExp) return {-ft_red_inf(), 0.0f};
  if constexpr (kRedKind == 4) return {ft_red_inf(), 0.0f};
  return {0.0f, 0.0f};
}

// Two (max, sum of exp) pairs as one; a -inf max (nothing yet, or only -inf values) adds zero,
// equal maxima (two +inf included) add their sums unscaled, and a NaN max propagates.
__device__ __forceinline__ FtRedState ft_red_merge(FtRedState s, FtRedState t) {
  if constexpr (kRedExp) {
    const float m = ft_max(s.a, t.a);
    if (m == -ft_red_inf()) return {m, s.b + t.b};
    const float sb = s.a == m ? s.b : s.b * ft_expf(s.a - m);
    const float tb = t.a == m ? t.b : t.b * ft_expf(t.a - m);
    return {m, sb + tb};
  } else if constexpr (kRedKind == 3) {
    return {ft_max(s.a, t.a), 0.0f};
  } else if constexpr (kRedKind == 4) {
    return {ft_min(s.a, t.a), 0.0f};
  } else {
    return {s.a + t.a, 0.0f};
  }
}

__device__ __forceinline__ FtRedState ft_red_add(FtRedState s, float v) {
  if constexpr (kRedExp) {
    // Online: one exponential per value, the sum rescaled when the max grows.
    if (v > s.a || v != v) return {v, (s.a == -ft_red_inf() ? 0.0f : s.b * ft_expf(s.a - v)) + 1.0f};
    // An equal maximum counts 1 without the exponential: two +inf would give exp(inf - inf).
    return {s.a, s.b + (v == -ft_red_inf() ? 0.0f : v == s.a ? 1.0f : ft_expf(v - s.a))};
  } else {
    return ft_red_merge(s, {v, 0.0f});
  }
}

// The block's statistic, the same in every thread: a shuffle tree per warp, then warp 0 over the
// warps' results in order.
__device__ __forceinline__ FtRedState ft_red_block(FtRedState s) {
  __shared__ FtRedState part[kRedWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // a previous call's readers of part[0] are done
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    const FtRedState t = {__shfl_down_sync(0xffffffffu, s.a, off), __shfl_down_sync(0xffffffffu, s.b, off)};
    s = ft_red_merge(s, t);
  }
  if (lane == 0) part[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < kRedWarps ? part[lane] : ft_red_identity();
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
      const FtRedState t = {__shfl_down_sync(0xffffffffu, s.a, off), __shfl_down_sync(0xffffffffu, s.b, off)};
      s = ft_red_merge(s, t);
    }
    if (lane == 0) part[0] = s;
  }
  __syncthreads();
  return part[0];
}

// FT_VEC consecutive elements, one access (the row and column starts are multiples of FT_VEC).
struct alignas(sizeof(ft_elem_t) * FT_VEC) FtRedPack {
  ft_elem_t e[FT_VEC];
};

// The elements first, first + stride, ... of a span of ncols (first and stride in FT_VEC-wide
// vectors where the span is whole aligned vectors; element by element where it is not: a group of
// another size, a configuration tuned at another N).
template <typename F>
__device__ __forceinline__ void ft_red_span(const ft_elem_t *src, int ncols, int first, int stride, F &&f) {
  if (FT_VEC > 1 && (ncols % FT_VEC != 0 || (unsigned long long)src % (sizeof(ft_elem_t) * FT_VEC) != 0)) {
    for (int j = first; j < ncols; j += stride) f(j, ft_to_float(src[j]));
    return;
  }
  // Four vectors read before the first is folded (a row of 128 blocks left each thread one read
  // in flight; `#pragma unroll` alone did not hoist the reads past a fold's branches, SASS); the
  // fold's order is the same. One at a time in the column-then-row form (softmax of batchnorm):
  // held across its normalization's calls, four spilled in 16-bit.
  constexpr int kU = kRedForm == 3 ? 1 : 4;
  const int step = stride * FT_VEC;
  int j = first * FT_VEC;
  for (; j + (kU - 1) * step < ncols; j += kU * step) {
    FtRedPack p[kU];
#pragma unroll
    for (int u = 0; u < kU; u++) p[u] = *reinterpret_cast<const FtRedPack *>(src + j + u * step);
#pragma unroll
    for (int u = 0; u < kU; u++)
#pragma unroll
      for (int l = 0; l < FT_VEC; l++) f(j + u * step + l, ft_to_float(p[u].e[l]));
  }
  for (; j < ncols; j += step) {
    const FtRedPack p = *reinterpret_cast<const FtRedPack *>(src + j);
#pragma unroll
    for (int l = 0; l < FT_VEC; l++) f(j + l, ft_to_float(p.e[l]));
  }
}

// dst[j] = g(j, src[j]) over the span ft_red_span reads, stored a vector at a time where src and
// dst are both whole aligned vectors (element stores left a warp 8 store instructions a vector).
// Not in groupnorm's passes: beside their statistics the fp32 block-per-row form spilled.
template <typename G>
__device__ __forceinline__ void ft_red_span_map(const ft_elem_t *src, ft_elem_t *dst, int ncols, int first, int stride,
                                                G &&g) {
  // fp32: element stores (4 a vector; with the vector's registers the 128-thread form spilled);
  // so too the column-then-row form (it spilled in 16-bit).
  constexpr unsigned long long kAlign = sizeof(ft_elem_t) * FT_VEC;
  if (FT_DTYPE == 0 || kRedForm == 3 || FT_VEC == 1 || ncols % FT_VEC != 0 || (unsigned long long)src % kAlign != 0 ||
      (unsigned long long)dst % kAlign != 0) {
    ft_red_span(src, ncols, first, stride, [&](int j, float x) { dst[j] = ft_from_float(g(j, x)); });
    return;
  }
  constexpr int kU = 2;
  const int step = stride * FT_VEC;
  int j = first * FT_VEC;
  for (; j < ncols; j += kU * step) {
    FtRedPack p[kU]; // the batch's reads before its stores (dst may be src)
#pragma unroll
    for (int u = 0; u < kU; u++)
      if (j + u * step < ncols) p[u] = *reinterpret_cast<const FtRedPack *>(src + j + u * step);
#pragma unroll
    for (int u = 0; u < kU; u++) {
      if (j + u * step >= ncols) break;
      FtRedPack o;
#pragma unroll
      for (int l = 0; l < FT_VEC; l++) o.e[l] = ft_from_float(g(j + u * step + l, ft_to_float(p[u].e[l])));
      *reinterpret_cast<FtRedPack *>(dst + j + u * step) = o;
    }
  }
}


// A row's span shared by the block's threads.
template <typename F>
__device__ __forceinline__ void ft_red_row(const ft_elem_t *src, int ncols, F &&f) {
  ft_red_span(src, ncols, threadIdx.x, FT_BLOCK, f);
}

// A sum over a team of `team` lanes (a power of two, aligned in its warp), in every lane of it.
__device__ __forceinline__ float ft_red_team_sum(float v, int team) {
  for (int off = team / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Groupnorm of one row: FT_RED_ARG groups of N / FT_RED_ARG consecutive values, each normalized by
// its own mean and biased variance (two passes: never negative). A row of at least as many groups
// as the block has warps gives each group a team of lanes (a vector each, up to a warp), the teams
// taking the groups in rounds and summing by shuffles; fewer, larger groups are taken one at a time
// by the whole block. (A block-wide sum per group left a row of 512 groups to 1024 barriers: the
// eager chain's groupnorm ran 4x slower than PyTorch's, docs/BENCHMARKS.md 2026-12-06 (j).)
__device__ __forceinline__ void ft_red_groups(const ft_elem_t *in, ft_elem_t *out, int row, int N, const FtEpArgs &ep) {
  const int gs = N / (FT_RED_ARG > 0 ? FT_RED_ARG : 1);
  if constexpr (FT_RED_ARG >= kRedWarps) {
    const int vectors = (gs + FT_VEC - 1) / FT_VEC;
    int team = 1;
    while (team < 32 && team < vectors) team *= 2;
    const int teams = FT_BLOCK / team, t = threadIdx.x / team, lane = threadIdx.x % team;
    for (int g0 = 0; g0 < FT_RED_ARG; g0 += teams) { // the same trip count in every thread: all shuffle
      const int g = g0 + t;
      const bool on = g < FT_RED_ARG;
      const int c0 = (on ? g : 0) * gs;
      float s = 0.0f;
      if (on) ft_red_span(in + c0, gs, lane, team, [&](int j, float x) { s += ft_red_inner(x, row, c0 + j, ep); });
      const float mean = ft_red_team_sum(s, team) / (float)gs;
      float q = 0.0f;
      if (on)
        ft_red_span(in + c0, gs, lane, team, [&](int j, float x) {
          const float d = ft_red_inner(x, row, c0 + j, ep) - mean;
          q = fmaf(d, d, q);
        });
      const float rstd = 1.0f / sqrtf(ft_red_team_sum(q, team) / (float)gs + kRedNormEps);
      if (on)
        ft_red_span(in + c0, gs, lane, team, [&](int j, float x) {
          const float r = (ft_red_inner(x, row, c0 + j, ep) - mean) * rstd;
          out[c0 + j] = ft_from_float(ft_red_post(r, row, c0 + j, ep));
        });
    }
    return;
  }
  for (int g = 0; g < FT_RED_ARG; g++) {
    const int c0 = g * gs;
    FtRedState s = {0.0f, 0.0f};
    ft_red_row(in + c0, gs, [&](int j, float x) { s.a += ft_red_inner(x, row, c0 + j, ep); });
    const float mean = ft_red_block(s).a / (float)gs;
    FtRedState q = {0.0f, 0.0f};
    ft_red_row(in + c0, gs, [&](int j, float x) {
      const float d = ft_red_inner(x, row, c0 + j, ep) - mean;
      q.a = fmaf(d, d, q.a);
    });
    const float rstd = 1.0f / sqrtf(ft_red_block(q).a / (float)gs + kRedNormEps);
    ft_red_row(in + c0, gs, [&](int j, float x) {
      const float r = (ft_red_inner(x, row, c0 + j, ep) - mean) * rstd;
      out[c0 + j] = ft_from_float(ft_red_post(r, row, c0 + j, ep));
    });
  }
}

// Batchnorm: columns in groups of 32 (a lane each), the M rows shared by the block's warps in a
// fixed order; the warps' partial sums added by warp 0 in order, so the bits are the same every run.
__device__ __forceinline__ float ft_red_column_sum(float v, float (*part)[32]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // a previous call's readers of part are done
  part[warp][lane] = v;
  __syncthreads();
  if (warp == 0) {
    float s = 0.0f;
    for (int w = 0; w < kRedWarps; w++) s += part[w][lane];
    part[0][lane] = s;
  }
  __syncthreads();
  return part[0][lane];
}

// f(row, value) for column col's rows warp, warp + kRedWarps, ... in that order, four reads in
// flight (a block's warps share a column strip's M rows: one read each left it latency-bound).
template <typename F>
__device__ __forceinline__ void ft_red_column_rows(const ft_elem_t *src, int M, int N, int col, F &&f) {
  int r = threadIdx.x / 32;
  for (; r + 3 * kRedWarps < M; r += 4 * kRedWarps) {
    float v[4];
#pragma unroll
    for (int u = 0; u < 4; u++) v[u] = ft_to_float(src[(size_t)(r + u * kRedWarps) * N + col]);
#pragma unroll
    for (int u = 0; u < 4; u++) f(r + u * kRedWarps, v[u]);
  }
  for (; r < M; r += kRedWarps) f(r, ft_to_float(src[(size_t)r * N + col]));
}

__device__ __forceinline__ void ft_red_columns(const ft_elem_t *src, ft_elem_t *y, int M, int N, const FtEpArgs &ep) {
  __shared__ float part[kRedWarps][32];
  const int lane = threadIdx.x % 32;
  for (int c0 = blockIdx.x * 32; c0 < N; c0 += gridDim.x * 32) { // the same trip count in every thread
    const int col = c0 + lane;
    const bool in = col < N;
    float s = 0.0f;
    if (in) ft_red_column_rows(src, M, N, col, [&](int r, float x) { s += ft_red_inner(x, r, col, ep); });
    const float mean = ft_red_column_sum(s, part) / (float)M;
    float q = 0.0f;
    if (in)
      ft_red_column_rows(src, M, N, col, [&](int r, float x) {
        const float d = ft_red_inner(x, r, col, ep) - mean;
        q = fmaf(d, d, q);
      });
    const float rstd = 1.0f / sqrtf(ft_red_column_sum(q, part) / (float)M + kRedNormEps);
    if (in)
      ft_red_column_rows(src, M, N, col, [&](int r, float x) {
        const float v = (ft_red_inner(x, r, col, ep) - mean) * rstd;
        y[(size_t)r * N + col] = ft_from_float(ft_red_post(v, r, col, ep));
      });
  }
}

// A one-value reduction's block statistic after a chunk: kept in stats for the next chunk, or (the
// last) combined into y[row]; count: the values a row mean divides by.
__device__ __forceinline__ void ft_red_finish(FtRedState s, int row, int col0, bool last, int count, float2 *stats,
                                              ft_elem_t *y, const FtEpArgs &ep) {
  if (threadIdx.x != 0) return;
  if (col0 > 0) s = ft_red_merge({stats[row].x, stats[row].y}, s); // the earlier chunks first
  if (!last) {
    stats[row] = make_float2(s.a, s.b);
    return;
  }
  float r = s.a;
  if constexpr (kRedKind == 2) r = s.a / (float)count;
  if constexpr (kRedKind == 5) r = s.a + ft_logf(s.b);
  y[row] = ft_from_float(ft_red_post(r, row, 0, ep));
}

// A row's value as it is read (the column-then-row form passes batchnorm's normalization instead).
struct FtRedAsRead {
  __device__ __forceinline__ float operator()(int, int, float x) const { return x; }
};

// The block-per-row form (FT_RED_FORM 0): kernels_src/reduce_entry.cu calls it; the row reductions
// read each value through pre(row, col, value) first.
template <typename Pre = FtRedAsRead>
__device__ __forceinline__ void ft_red_rows(const ft_elem_t *src, int ld, ft_elem_t *y, float2 *stats, int M, int N,
                                            int col0, int ncols, const FtEpArgs &ep, Pre pre = Pre()) {
  if constexpr (kRedKind == 9) { // src is y or a copy of it (ld N): every column of every row
    ft_red_columns(src, y, M, N, ep);
    return;
  }
  const int row = blockIdx.x;
  if (row >= M) return;
  const ft_elem_t *in = src + (size_t)row * (size_t)ld;
  if constexpr (kRedKind == 8) {
    ft_red_groups(in, y + (size_t)row * (size_t)N, row, N, ep);
    return;
  }
  FtRedState s = ft_red_identity();
  if constexpr (kRedPool != 0) { // whole windows of the chunk (col0 is a multiple of the window)
    const int nout = N / kRedPoolW, q0 = col0 / kRedPoolW, nwin = ncols / kRedPoolW;
    for (int p = threadIdx.x; p < nwin; p += FT_BLOCK) {
      const float v = ft_red_inner(ft_red_window(in + p * kRedPoolW, row, col0 + p * kRedPoolW, ep), row, q0 + p, ep);
      if constexpr (kRedTopPool) y[(size_t)row * (size_t)nout + q0 + p] = ft_from_float(ft_red_post(v, row, q0 + p, ep));
      else s = ft_red_add(s, v);
    }
    if constexpr (!kRedTopPool) ft_red_finish(ft_red_block(s), row, col0, col0 + ncols >= N, nout, stats, y, ep);
    return;
  }
  ft_red_row(in, ncols, [&](int j, float x) {
    s = ft_red_add(s, ft_red_inner(pre(row, col0 + j, x), row, col0 + j, ep));
  });
  s = ft_red_block(s);
  if constexpr (!kRedRowwise) {
    ft_red_finish(s, row, col0, col0 + ncols >= N, N, stats, y, ep);
  } else {
    // The row's values again (src may be y: every read of the row came before the barrier in
    // ft_red_block), each as its softmax or log_softmax.
    ft_elem_t *out = y + (size_t)row * (size_t)N + col0;
    // A max of +-inf or NaN gives NaN throughout, as torch and the float64 reference do (their sum
    // holds exp(inf - inf)).
    const float inv = 1.0f / s.b, lse = s.a + ft_logf(s.b);
    const bool finite = s.a == s.a && s.a != ft_red_inf() && s.a != -ft_red_inf();
    ft_red_span_map(in, out, ncols, threadIdx.x, FT_BLOCK, [&](int j, float x) {
      const float v = ft_red_inner(pre(row, col0 + j, x), row, col0 + j, ep);
      const float r = !finite ? __int_as_float(0x7fffffff) : kRedKind == 6 ? ft_expf(v - s.a) * inv : v - lse;
      return ft_red_post(r, row, col0 + j, ep);
    });
  }
}
