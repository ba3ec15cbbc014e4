/* The rules both fp32 FFMA GEMM families share; see family_fp32.h. */
#include "family_fp32.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kernel_abi.h"

#define FT_MAX_STREAMK 4096 /* stream-K blocks: a few per SM of the largest GPUs */
#define FT_SK_MIN_UNITS 32  /* stream-K: at least this many k tiles per block */
/* Global vector loads per thread and k tile. ptxas keeps an address per load live across the
 * k loop, so many narrow loads cost registers the estimate does not see: beyond this, spills. */
#define FT_MAX_LOADS 16

int ft_fp32_threads(const ft_variant *v) { return (v->bm / v->fp32.tm) * (v->bn / v->fp32.tn); }

/* Per-SM figures the block limits do not carry, from the compute capability. */
static int sm_max_threads(const ft_device_limits *lim) {
  return (lim->cc_major == 8 && lim->cc_minor >= 6) ? 1536 : 2048;
}
static int64_t sm_smem(const ft_device_limits *lim) { return (int64_t)lim->max_smem_per_block + 1024; }

/* The warps of minb blocks, rounded up to whole groups of 4 (one per SM sub-partition), share
 * the 64K registers, allocated in steps of 8 (64 threads, minb 7: 14 warps count as 16, cap 128). */
int ft_fp32_launch_bounds_cap(int threads, int minb) {
  const int warps = (threads / 32 * minb + 3) / 4 * 4;
  const int cap = 65536 / (warps * 32) / 8 * 8;
  return cap > 255 ? 255 : cap;
}

int ft_fp32_reg_cap(const ft_fp32_traits *t, const ft_variant *v) {
  return ft_fp32_launch_bounds_cap(ft_fp32_threads(v), t->min_blocks(v));
}

static int is_pow2_between(int x, int lo, int hi) { return x >= lo && x <= hi && (x & (x - 1)) == 0; }

/* ------------------------------------------------------------------------------------------ */
/* Validity and applicability. */

int ft_fp32_valid_common(const ft_fp32_traits *t, const ft_variant *v, char *why, size_t whylen) {
  if (!is_pow2_between(v->bm, 16, 256) || !is_pow2_between(v->bn, 16, 256))
    FT_WHY("block tile %dx%d: each must be a power of two in 16..256", v->bm, v->bn);
  if (v->bk != 8 && v->bk != 16 && v->bk != 32) FT_WHY("bk %d: must be 8, 16 or 32", v->bk);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4) FT_WHY("vec %d: must be 1, 2 or 4", v->vec);
  if (v->stages < 1 || v->stages > 4) FT_WHY("stages %d: must be 1..4", v->stages);
  if (v->split_k < 1 || v->split_k > FT_MAX_SPLIT_K) FT_WHY("split_k %d: must be 1..%d", v->split_k, FT_MAX_SPLIT_K);
  if (!is_pow2_between(v->swizzle, 1, 16)) FT_WHY("swizzle %d: must be 1, 2, 4, 8 or 16", v->swizzle);
  if (v->fp32.streamk < 0 || v->fp32.streamk > FT_MAX_STREAMK) FT_WHY("streamk %d: must be 0..%d", v->fp32.streamk, FT_MAX_STREAMK);
  if (v->fp32.streamk > 0 && !t->streamk) FT_WHY("streamk %d: only layout 3 (\"_w\") has stream-K", v->fp32.streamk);
  if (v->fp32.streamk > 0 && v->split_k != 1) FT_WHY("streamk %d with split_k %d: stream-K already splits k", v->fp32.streamk, v->split_k);
  return 1;
}

int ft_fp32_valid_threads(const ft_variant *v, char *why, size_t whylen) {
  if (v->bm < v->fp32.tm || v->bn < v->fp32.tn) FT_WHY("thread tile larger than block tile");
  const int threads = ft_fp32_threads(v);
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    FT_WHY("%d threads per block: must be a multiple of 32 in 32..1024", threads);
  return 1;
}

int ft_fp32_applicable(const ft_fp32_traits *t, const ft_variant *v, int64_t m, int64_t n, int64_t k,
                       const ft_device_limits *lim, char *why, size_t whylen) {
  const int threads = ft_fp32_threads(v);
  if (threads > lim->max_threads_per_block) FT_WHY("%d threads > device limit %d", threads, lim->max_threads_per_block);
  const size_t smem = t->smem(v);
  if (smem > (size_t)lim->max_smem_per_block) FT_WHY("shared memory %zu B > device limit %d B", smem, lim->max_smem_per_block);
  const int est = t->reg_estimate(v);
  if (t->loads(v) > FT_MAX_LOADS) FT_WHY("%d global loads per thread and tile: would spill", t->loads(v));
  if (est > t->reg_prune || (int64_t)threads * est > lim->regs_per_block)
    FT_WHY("needs about %d registers per thread (%d threads): would spill", est, threads);
  if (v->vec > 1 && k % v->vec != 0) FT_WHY("vec %d needs k %% %d == 0 (k = %lld)", v->vec, v->vec, (long long)k);
  if ((int64_t)v->split_k * m * n > FT_MAX_ELEMS) FT_WHY("split-K workspace too large");
  return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Geometry and launch. */

static unsigned ceil_div_u(int64_t a, int64_t b) { return (unsigned)((a + b - 1) / b); }

void ft_fp32_geometry(const ft_fp32_traits *t, const ft_variant *v, int64_t m, int64_t n, int64_t k,
                      ft_launch_geom *g) {
  (void)k;
  if (v->bm <= 0 || v->bn <= 0 || v->fp32.tm <= 0 || v->fp32.tn <= 0) return;
  const int64_t tiles = ((m + v->bm - 1) / v->bm) * ((n + v->bn - 1) / v->bn);
  g->grid[0] = tiles > UINT_MAX ? UINT_MAX : (unsigned)tiles;
  g->grid[2] = v->split_k > 0 ? (unsigned)v->split_k : 1;
  g->block[0] = (unsigned)ft_fp32_threads(v);
  g->smem = t->smem(v);
  if (v->fp32.streamk > 0) { /* two whole-tile partial slots per block; fixup blocks: (tile, outputs) */
    g->grid[0] = (unsigned)v->fp32.streamk;
    g->grid[2] = 1;
    g->workspace_bytes = (size_t)v->fp32.streamk * 2 * (size_t)v->bm * (size_t)v->bn * sizeof(float);
    g->has_reduce = 1;
    g->rblock[0] = FT_AUX_BLOCK;
    g->rgrid[0] = tiles > UINT_MAX ? UINT_MAX : (unsigned)tiles;
    g->rgrid[1] = (unsigned)(v->bm * v->bn / (FT_AUX_BLOCK * FT_AUX_ELEMS));
    return;
  }
  if (v->split_k > 1) {
    g->workspace_bytes = (size_t)v->split_k * (size_t)m * (size_t)n * sizeof(float);
    g->has_reduce = 1;
    g->rblock[0] = FT_AUX_BLOCK;
    g->rgrid[0] = ceil_div_u(m * n, (int64_t)FT_AUX_BLOCK * FT_AUX_ELEMS);
  }
}

const char *ft_fp32_reduce_kernel(const ft_variant *v) {
  if (v->fp32.streamk > 0) return "ft_streamk_fixup";
  return v->split_k > 1 ? "ft_splitk_reduce" : NULL;
}

/* What the vector loads and stores of kernels_src/gemm_fp32*.cu need. */
void ft_fp32_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  (void)m, (void)k;
  const size_t vec_bytes = (size_t)(v->vec > 0 ? v->vec : 1) * sizeof(float);
  need[0] = need[1] = vec_bytes;
  need[2] = v->split_k > 1 && n % 4 == 0 ? 4 * sizeof(float) : sizeof(float);
}

/* ft_gemm(X, W, Y, WS, M, N, K, ep) */
ft_status ft_fp32_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  (void)v;
  FT_TRY(ft_arg_push(st, &io->x, sizeof io->x, err));
  FT_TRY(ft_arg_push(st, &io->w, sizeof io->w, err));
  FT_TRY(ft_arg_push(st, &io->y, sizeof io->y, err));
  FT_TRY(ft_arg_push(st, &io->ws, sizeof io->ws, err));
  FT_TRY(ft_arg_push(st, &io->m, sizeof io->m, err));
  FT_TRY(ft_arg_push(st, &io->n, sizeof io->n, err));
  FT_TRY(ft_arg_push(st, &io->k, sizeof io->k, err));
  return ft_arg_push(st, io->ep, sizeof(ft_ep_args_dev), err);
}

/* ft_splitk_reduce(WS, Y, M, N, S, ep) / ft_streamk_fixup(WS, Y, M, N, K, ep): the fixup
 * derives its blocks' ranges from K. */
ft_status ft_fp32_reduce_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  const int s = v->fp32.streamk > 0 ? io->k : v->split_k;
  FT_TRY(ft_arg_push(st, &io->ws, sizeof io->ws, err));
  FT_TRY(ft_arg_push(st, &io->y, sizeof io->y, err));
  FT_TRY(ft_arg_push(st, &io->m, sizeof io->m, err));
  FT_TRY(ft_arg_push(st, &io->n, sizeof io->n, err));
  FT_TRY(ft_arg_push(st, &s, sizeof s, err));
  return ft_arg_push(st, io->ep, sizeof(ft_ep_args_dev), err);
}

void ft_fp32_defines(const ft_fp32_traits *t, const ft_variant *v, ft_strbuf *b) {
  ft_sb_printf(b, "#define FT_BM %d\n#define FT_BN %d\n#define FT_BK %d\n", v->bm, v->bn, v->bk);
  ft_sb_printf(b, "#define FT_TM %d\n#define FT_TN %d\n#define FT_VEC %d\n", v->fp32.tm, v->fp32.tn, v->vec);
  ft_sb_printf(b, "#define FT_STAGES %d\n#define FT_SPLIT_K %d\n#define FT_SWIZZLE %d\n", v->stages, v->split_k,
               v->swizzle);
  ft_sb_printf(b, "#define FT_MINB %d\n#define FT_LAYOUT %d\n", t->min_blocks(v), v->family);
  if (v->fp32.streamk) ft_sb_printf(b, "#define FT_STREAMK %d\n", v->fp32.streamk);
  /* The kernel checks its shared-memory layout against what the host launches with. */
  ft_sb_printf(b, "#define FT_SMEM_BYTES %zu\n", t->smem(v));
}

int ft_fp32_name(const ft_variant *v, const char *suffix, char *buf, size_t len) {
  char sk[24] = "";
  if (v->fp32.streamk) snprintf(sk, sizeof sk, "_sk%d", v->fp32.streamk);
  return snprintf(buf, len, "gemm_bm%d_bn%d_bk%d_t%dx%d_v%d_s%d_k%d_z%d%s%s", v->bm, v->bn, v->bk, v->fp32.tm, v->fp32.tn,
                  v->vec, v->stages, v->split_k, v->swizzle, sk, suffix);
}

int ft_fp32_stream_k(const ft_variant *v) { return v->fp32.streamk > 0; }

const ft_json_key ft_fp32_json_keys[] = {
    {"bm", offsetof(ft_variant, bm)},         {"bn", offsetof(ft_variant, bn)},
    {"bk", offsetof(ft_variant, bk)},         {"tm", offsetof(ft_variant, fp32.tm)},
    {"tn", offsetof(ft_variant, fp32.tn)},         {"vec", offsetof(ft_variant, vec)},
    {"stages", offsetof(ft_variant, stages)}, {"split_k", offsetof(ft_variant, split_k)},
    {"swizzle", offsetof(ft_variant, swizzle)}, {NULL, 0}};
const ft_json_key ft_fp32_json_opt_keys[] = {
    {"streamk", offsetof(ft_variant, fp32.streamk)}, {"layout", offsetof(ft_variant, family)}, {NULL, 0}};

/* ------------------------------------------------------------------------------------------ */
/* Cost and enumeration. */

/* Blocks of v resident on one SM (threads, shared memory and registers permitting). */
static int occupancy(const ft_fp32_traits *t, const ft_variant *v, const ft_device_limits *lim) {
  const int threads = ft_fp32_threads(v);
  const int est = t->occ_regs(v);
  int occ = sm_max_threads(lim) / threads;
  const int by_smem = (int)(sm_smem(lim) / (int64_t)t->smem(v));
  const int by_regs = 65536 / (threads * ((est + 7) / 8 * 8));
  if (by_smem < occ) occ = by_smem;
  if (by_regs < occ) occ = by_regs;
  return occ < 1 ? 1 : occ;
}

/* A coarse time model: the busiest SM's share of padded FMAs, divided by an efficiency that
 * rewards register-tile and block-tile reuse and enough resident warps, plus the split-K
 * traffic. It only orders candidates; the tuner measures. */
double ft_fp32_cost(const ft_fp32_traits *t, const ft_variant *v, int64_t m, int64_t n, int64_t k,
                    const ft_device_limits *lim) {
  const int64_t tm = (m + v->bm - 1) / v->bm, tn = (n + v->bn - 1) / v->bn;
  const int64_t slice = ((k + v->split_k - 1) / v->split_k + v->bk - 1) / v->bk * v->bk;
  const int64_t blocks = v->fp32.streamk > 0 ? v->fp32.streamk : tm * tn * v->split_k;
  const int occ = occupancy(t, v, lim);
  const int64_t per_sm = (blocks + lim->sm_count - 1) / lim->sm_count;
  const int64_t resident = per_sm < occ ? per_sm : occ;
  const double warps = (double)resident * ft_fp32_threads(v) / 32.0;
  const double reg_reuse = (double)(v->fp32.tm * v->fp32.tn) / (v->fp32.tm + v->fp32.tn) / 4.0; /* 8x8 -> 1 */
  const double blk_reuse = (double)v->bm * v->bn / (v->bm + v->bn) / 64.0;  /* 128^2 -> 1 */
  double eff = (reg_reuse < 1 ? reg_reuse : 1.0) * (blk_reuse < 1 ? 0.5 + 0.5 * blk_reuse : 1.0);
  eff *= warps >= 8 ? 1.0 : 0.55 + 0.45 * warps / 8.0;
  eff *= t->efficiency(v);
  double fma = (double)per_sm * v->bm * v->bn * (double)slice;
  if (v->fp32.streamk > 0) /* every SM gets an even share of the padded work */
    fma = (double)(tm * tn) * v->bm * v->bn * (double)((k + v->bk - 1) / v->bk * v->bk) / lim->sm_count;
  double cost = fma / eff;
  if (v->fp32.streamk > 0) /* up to two whole-tile partials per block, written and read back */
    cost += 8.0 * 2.0 * 4.0 * 2.0 * (double)v->fp32.streamk * v->bm * v->bn / lim->sm_count;
  if (v->split_k > 1) /* partials written and read back: ~8 FMA-equivalents per byte */
    cost += 8.0 * 2.0 * 4.0 * (double)v->split_k * m * n / lim->sm_count;
  if (v->swizzle > 1) cost *= 0.995; /* small L2 gain on multi-row grids */
  if (v->fp32.streamk > 0) {
    /* The same tiles run slower in the stream-K loop than one per block, and blocks at
     * different k share fewer operands in L2 when tiles share rows or columns
     * (docs/BENCHMARKS.md, "Why the search space is what it is"). */
    cost /= tm > 1 && tn > 1 ? 0.95 : 0.97;
  }
  return cost;
}

/* Split factors worth trying: only when one split-free wave leaves SMs idle, each slice keeps
 * at least 256 k (and 4 tiles), and the grid grows to at most four full waves. */
static int split_candidates(const ft_fp32_traits *t, const ft_variant *v, int64_t m, int64_t n, int64_t k,
                            const ft_device_limits *lim, int out[8]) {
  static const int cand[] = {1, 2, 3, 4, 6, 8, 12, 16};
  const int64_t tiles = ((m + v->bm - 1) / v->bm) * ((n + v->bn - 1) / v->bn);
  const int64_t slots = (int64_t)lim->sm_count * occupancy(t, v, lim);
  int cnt = 0;
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
    const int s = cand[i];
    if (s > 1 && (tiles >= slots || tiles * s > 4 * slots)) continue;
    if (s > 1 && (k / s < 256 || k / s < 4 * v->bk)) continue;
    out[cnt++] = s;
  }
  return cnt;
}

/* Stream-K blocks worth trying (0: none): one per resident slot of the GPU, when the tiles
 * leave the last wave at most 98 % full and each block still gets FT_SK_MIN_UNITS k tiles. */
static int streamk_blocks(const ft_fp32_traits *t, const ft_variant *v, int64_t m, int64_t n, int64_t k,
                          const ft_device_limits *lim) {
  if (!t->streamk) return 0;
  const int64_t tiles = ((m + v->bm - 1) / v->bm) * ((n + v->bn - 1) / v->bn);
  const int64_t slots = (int64_t)lim->sm_count * occupancy(t, v, lim);
  const int64_t waves = (tiles + slots - 1) / slots;
  if (slots > FT_MAX_STREAMK || tiles * 100 > waves * slots * 98) return 0;
  if (tiles * ((k + v->bk - 1) / v->bk) < slots * FT_SK_MIN_UNITS) return 0;
  return (int)slots;
}

/* No dimension more than twice the problem (mostly padding), no extreme aspect ratios. */
int ft_fp32_tile_plausible(int bm, int bn, int64_t m, int64_t n) {
  if (bm > 32 && bm >= 2 * m) return 0;
  if (bn > 32 && bn >= 2 * n) return 0;
  if (bm > 4 * bn || bn > 4 * bm) return 0;
  return 1;
}

int ft_fp32_vec_for_k(int64_t k) { return k % 4 == 0 ? 4 : (k % 2 == 0 ? 2 : 1); }

ft_status ft_fp32_push_splits(const ft_fp32_traits *t, ft_variant *v, int64_t m, int64_t n, int64_t k,
                              const ft_device_limits *lim, ft_space_sink *sink, ft_err *err) {
  const int threads = ft_fp32_threads(v);
  if (threads < 64 || threads > 256) return FT_OK;
  v->split_k = 1, v->swizzle = 1;
  int splits[8];
  const int ns = split_candidates(t, v, m, n, k, lim, splits);
  const int multi_row = (m + v->bm - 1) / v->bm > 1 && (n + v->bn - 1) / v->bn > 1;
  for (int s = 0; s < ns; s++)
    for (int z = 1; z <= (multi_row ? 8 : 1); z += 7) {
      v->split_k = splits[s];
      v->swizzle = z;
      if (!ft_variant_applicable(v, m, n, k, lim, NULL, 0)) continue;
      FT_TRY(ft_space_push(sink, v, ft_fp32_cost(t, v, m, n, k, lim), err));
    }
  v->split_k = 1, v->swizzle = 1;
  const int sk = streamk_blocks(t, v, m, n, k, lim);
  if (sk > 0) {
    v->fp32.streamk = sk;
    if (ft_variant_applicable(v, m, n, k, lim, NULL, 0))
      FT_TRY(ft_space_push(sink, v, ft_fp32_cost(t, v, m, n, k, lim), err));
    v->fp32.streamk = 0;
  }
  return FT_OK;
}
