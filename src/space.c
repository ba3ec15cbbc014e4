/* The variant space: which kernel configurations exist, which fit a device and a shape, how
 * they are named and written as JSON, and how they are launched. GPU-free. */
#include "space.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



/* The kernels index with size_t and take int dimensions; this bounds every matrix and the
 * split-K workspace (2^36 floats = 256 GiB, more than any GPU holds) so that grid sizes and
 * int tile arithmetic inside the kernels cannot overflow. */
#define FT_MAX_ELEMS ((int64_t)1 << 36)
#define FT_MAX_SPLIT_K 64
#define FT_MAX_STREAMK 4096  /* stream-K blocks: a few per SM of the largest GPUs */
#define FT_SK_MIN_UNITS 32   /* stream-K: at least this many k tiles per block */
#define FT_SPACE_CAP 384     /* enumeration keeps the best-scored this many GEMM variants */
#define FT_REDUCE_BLOCK 256  /* ft_splitk_reduce: threads per block, 4 elements per thread */
#define FT_FIXUP_BLOCK 256   /* ft_streamk_fixup: threads per block, 4 outputs per thread */
#define FT_STEP_BLOCK 256    /* ft_eager_step: threads per block, 4 elements per thread */

/* ------------------------------------------------------------------------------------------ */
/* Architectures known without a GPU. */

static const struct {
  const char *arch;
  ft_device_limits lim;
} k_arches[] = {
    /* A100: 108 SMs, 163 KB opt-in shared memory per block. */
    {"sm_80", {8, 0, 108, 1024, 166912, 65536}},
    /* RTX 4090 / L40 class: 128 SMs, 99 KB opt-in. */
    {"sm_89", {8, 9, 128, 1024, 101376, 65536}},
    /* H100 / H200: 132 SMs, 227 KB opt-in. */
    {"sm_90", {9, 0, 132, 1024, 232448, 65536}},
};

ft_status ft_limits_for_arch(const char *arch, ft_device_limits *out, ft_err *err) {
  if (!arch || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "limits: NULL argument");
  for (size_t i = 0; i < sizeof k_arches / sizeof k_arches[0]; i++) {
    if (strcmp(arch, k_arches[i].arch) == 0) {
      *out = k_arches[i].lim;
      return FT_OK;
    }
  }
  return ft__fail(err, FT_ERR_UNSUPPORTED, "limits: unknown architecture \"%.32s\" (known: sm_80, sm_89, sm_90)",
                  arch);
}

/* Per-SM figures the block limits do not carry, from the compute capability. */
static int sm_max_threads(const ft_device_limits *lim) {
  return (lim->cc_major == 8 && lim->cc_minor >= 6) ? 1536 : 2048;
}
static int64_t sm_smem(const ft_device_limits *lim) { return (int64_t)lim->max_smem_per_block + 1024; }

/* ------------------------------------------------------------------------------------------ */
/* Derived quantities of a GEMM variant. */

static int gemm_threads(const ft_variant *v) { return (v->bm / v->tm) * (v->bn / v->tn); }

/* Layout 3 (kernels_src/gemm_fp32_warp.cu): lanes of a warp along m (4 or 8) and the warp tile,
 * as the kernel derives them; 8 lanes along m when tn > tm keeps the warp tile square. */
static int warp_lanes_m(const ft_variant *v) { return v->tn > v->tm ? 8 : 4; }
static int warp_tile_m(const ft_variant *v) { return warp_lanes_m(v) * v->tm; }
static int warp_tile_n(const ft_variant *v) { return (32 / warp_lanes_m(v)) * v->tn; }

static size_t gemm_smem(const ft_variant *v) {
  if (v->layout == 3) /* double-buffered k-major As[bk][bm + 4], Bs[bk][bn + 4] */
    return 2 * (size_t)v->bk * (size_t)(v->bm + 4 + v->bn + 4) * sizeof(float);
  const size_t bufs = v->stages > 1 ? (size_t)v->stages : 2;
  return bufs * (size_t)(v->bm + v->bn) * (size_t)(v->bk + 4) * sizeof(float);
}

static int ceil_div_int(int a, int b) { return (a + b - 1) / b; }

/* Registers per thread the kernel needs without spilling: accumulators, one k-group of the
 * larger operand's fragments, the register-path staging, addressing, and more for BK = 32
 * (ptxas keeps more shared-memory loads in flight). A model fitted to ptxas -v output
 * (tests/test_compile.c prints it); it sets __launch_bounds__ and prunes the space. */
static int gemm_reg_estimate(const ft_variant *v) {
  const int threads = gemm_threads(v);
  if (v->layout == 3) { /* two fragment sets of tm + tn, staging in whole 4-float chunks */
    const int staging = 4 * (ceil_div_int(v->bm * v->bk / 4, threads) + ceil_div_int(v->bn * v->bk / 4, threads));
    /* stages 2 keeps the staging live across the whole tile (ptxas cannot sink the loads);
     * 8x8 tiles at bk 16 measured 156-180 (ptxas keeps more shared loads in flight), and
     * with stages 2 they spilled at 255 whenever 2 or more blocks were to fit (so: prune) */
    const int bk16_8x8 = v->tm * v->tn == 64 && v->bk == 16 ? (v->stages == 2 ? 96 : 32) : 0;
    return v->tm * v->tn + 2 * (v->tm + v->tn) + staging * v->stages + 24 + bk16_8x8;
  }
  int staging = 0;
  if (v->stages == 1)
    staging = (ceil_div_int(v->bm * v->bk, threads) + ceil_div_int(v->bn * v->bk, threads));
  const int frag = 4 * (v->tm > v->tn ? v->tm : v->tn);
  return v->tm * v->tn + frag + 4 + staging + 28 + (v->bk == 32 ? 24 : 0);
}

/* Above this the estimate says ptxas would spill even with all 255 registers (layout 0; the
 * warp-tiled layout 3 keeps fewer values live per FFMA: up to 232 fit, 240 spilled 56-184 B). */
#define FT_REG_PRUNE 190
#define FT_REG_PRUNE_WARP 232

/* Global vector loads per thread and k tile. ptxas keeps an address per load live across the
 * k loop, so many narrow loads cost registers the estimate does not see: beyond this, spills. */
#define FT_MAX_LOADS 16
static int gemm_loads(const ft_variant *v) {
  const int threads = gemm_threads(v);
  if (v->layout == 3) /* 4-float chunks, each 4 / vec loads */
    return (ceil_div_int(v->bm * v->bk / 4, threads) + ceil_div_int(v->bn * v->bk / 4, threads)) * (4 / v->vec);
  return ceil_div_int(v->bm * v->bk / v->vec, threads) + ceil_div_int(v->bn * v->bk / v->vec, threads);
}

/* The per-thread register cap ptxas derives from __launch_bounds__(threads, minb): the warps
 * of minb blocks, rounded up to whole groups of 4 (one per SM sub-partition), share the 64K
 * registers, allocated in steps of 8 (64 threads, minb 7: 14 warps count as 16, cap 128). */
static int launch_bounds_cap(int threads, int minb) {
  const int warps = (threads / 32 * minb + 3) / 4 * 4;
  const int cap = 65536 / (warps * 32) / 8 * 8;
  return cap > 255 ? 255 : cap;
}

int ft__gemm_min_blocks(const ft_variant *v) {
  const int threads = gemm_threads(v);
  if (v->layout == 3) {
    /* The most blocks per SM whose cap still holds the estimate (128-thread 16x8 tiles: 2, cap
     * 255; 256-thread 8x8 bk 8 tiles: 2, cap 128), at most 8 and 2048 threads. */
    const int need = gemm_reg_estimate(v);
    int b = 1;
    while (b < 8 && (b + 1) * threads <= 2048 && launch_bounds_cap(threads, b + 1) >= need) b++;
    return b;
  }
  /* The 8x8 tile wants all the registers ptxas can give it, and narrow loads need addresses
   * the estimate does not count: a cap would make either spill. */
  if (v->tm * v->tn >= 64 || v->vec < 4) return 1;
  /* 25 % headroom over the estimate: ptxas spilled at caps close to it. */
  const int need = (gemm_reg_estimate(v) * 5 / 4 + 7) / 8 * 8;
  int b = 65536 / (threads * need);
  if (b < 1) b = 1;
  if (b > 4) b = 4;
  return b;
}

/* ------------------------------------------------------------------------------------------ */
/* Validity (shape-free) and applicability. */

static int is_pow2_between(int x, int lo, int hi) {
  return x >= lo && x <= hi && (x & (x - 1)) == 0;
}

#define WHY(...)                                         \
  do {                                                   \
    if (why && whylen) snprintf(why, whylen, __VA_ARGS__); \
    return 0;                                            \
  } while (0)

static int gemm_valid(const ft_variant *v, char *why, size_t whylen) {
  if (!is_pow2_between(v->bm, 16, 256) || !is_pow2_between(v->bn, 16, 256))
    WHY("block tile %dx%d: each must be a power of two in 16..256", v->bm, v->bn);
  if (v->bk != 8 && v->bk != 16 && v->bk != 32) WHY("bk %d: must be 8, 16 or 32", v->bk);
  if (v->layout == 1 || v->layout == 2)
    WHY("layout %d (k-major \"_km\"/\"_kw\") was removed: layout 3 (\"_w\") replaces it; tune again",
        v->layout);
  if (v->layout != 0 && v->layout != 3) WHY("layout %d: must be 0 or 3", v->layout);
  if (v->layout == 0 && ((v->tm != 4 && v->tm != 8) || (v->tn != 4 && v->tn != 8)))
    WHY("thread tile %dx%d: each must be 4 or 8", v->tm, v->tn);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4) WHY("vec %d: must be 1, 2 or 4", v->vec);
  if (v->stages < 1 || v->stages > 4) WHY("stages %d: must be 1..4", v->stages);
  if (v->split_k < 1 || v->split_k > FT_MAX_SPLIT_K) WHY("split_k %d: must be 1..%d", v->split_k, FT_MAX_SPLIT_K);
  if (!is_pow2_between(v->swizzle, 1, 16)) WHY("swizzle %d: must be 1, 2, 4, 8 or 16", v->swizzle);
  if (v->streamk < 0 || v->streamk > FT_MAX_STREAMK) WHY("streamk %d: must be 0..%d", v->streamk, FT_MAX_STREAMK);
  if (v->streamk > 0 && v->layout != 3) WHY("streamk %d: only layout 3 (\"_w\") has stream-K", v->streamk);
  if (v->streamk > 0 && v->split_k != 1) WHY("streamk %d with split_k %d: stream-K already splits k", v->streamk, v->split_k);
  if (v->block != 0 || v->ept != 0) WHY("gemm variant with epilogue-pass fields");
  if (v->layout == 3) {
    if ((v->tm != 8 && v->tm != 16) || (v->tn != 8 && v->tn != 16) || v->tm * v->tn > 128)
      WHY("layout 3: thread tile %dx%d must be 8x8, 16x8 or 8x16", v->tm, v->tn);
    if (v->stages != 1 && v->stages != 2) WHY("layout 3 stages %d: must be 1 or 2", v->stages);
    if (v->bk == 32) WHY("layout 3 bk 32: must be 8 or 16");
    if (gemm_threads(v) > 256) /* 512 threads cap registers at 128: the 8x8 tile spills */
      WHY("layout 3: %d threads per block (block tile %dx%d over %dx%d): at most 256", gemm_threads(v), v->bm,
          v->bn, v->tm, v->tn);
    if (v->bm % warp_tile_m(v) || v->bn % warp_tile_n(v))
      WHY("layout 3: block tile %dx%d not whole warp tiles of %dx%d", v->bm, v->bn, warp_tile_m(v),
          warp_tile_n(v));
  }
  if (v->bm < v->tm || v->bn < v->tn) WHY("thread tile larger than block tile");
  const int threads = gemm_threads(v);
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    WHY("%d threads per block: must be a multiple of 32 in 32..1024", threads);
  return 1;
}

static int epilogue_valid(const ft_variant *v, char *why, size_t whylen) {
  if (v->block < 32 || v->block > 1024 || v->block % 32 != 0)
    WHY("block %d: must be a multiple of 32 in 32..1024", v->block);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4) WHY("vec %d: must be 1, 2 or 4", v->vec);
  if (v->ept < v->vec || v->ept > 64 || v->ept % v->vec != 0)
    WHY("ept %d: must be a multiple of vec in vec..64", v->ept);
  if (v->bm || v->bn || v->bk || v->tm || v->tn || v->stages || v->split_k || v->swizzle || v->layout ||
      v->streamk)
    WHY("epilogue variant with GEMM fields");
  return 1;
}

int ft_variant_valid(const ft_variant *v, char *why, size_t whylen) {
  if (!v) WHY("NULL variant");
  if (v->kind == FT_VK_GEMM) return gemm_valid(v, why, whylen);
  if (v->kind == FT_VK_EPILOGUE) return epilogue_valid(v, why, whylen);
  WHY("unknown variant kind %d", (int)v->kind);
}

int ft_variant_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k,
                          const ft_device_limits *lim, char *why, size_t whylen) {
  if (!v || !lim) WHY("NULL variant or limits");
  if (!ft_variant_valid(v, why, whylen)) return 0;
  if (ft_check_shape(m, n, k, NULL) != FT_OK) WHY("shape %lldx%lldx%lld out of range", (long long)m, (long long)n, (long long)k);
  ft_launch_geom g;
  ft_variant_geometry(v, m, n, k, &g);
  if (g.grid[0] > INT_MAX || g.rgrid[0] > INT_MAX) WHY("grid too large");
  if (v->kind == FT_VK_EPILOGUE) {
    if (v->block > lim->max_threads_per_block) WHY("block %d > device limit %d", v->block, lim->max_threads_per_block);
    return 1;
  }
  const int threads = gemm_threads(v);
  if (threads > lim->max_threads_per_block) WHY("%d threads > device limit %d", threads, lim->max_threads_per_block);
  if (g.smem > (size_t)lim->max_smem_per_block) WHY("shared memory %zu B > device limit %d B", g.smem, lim->max_smem_per_block);
  const int est = gemm_reg_estimate(v);
  if (gemm_loads(v) > FT_MAX_LOADS) WHY("%d global loads per thread and tile: would spill", gemm_loads(v));
  if (est > (v->layout == 3 ? FT_REG_PRUNE_WARP : FT_REG_PRUNE) || (int64_t)threads * est > lim->regs_per_block)
    WHY("needs about %d registers per thread (%d threads): would spill", est, threads);
  if (v->vec > 1 && k % v->vec != 0) WHY("vec %d needs k %% %d == 0 (k = %lld)", v->vec, v->vec, (long long)k);
  if ((int64_t)v->split_k * m * n > FT_MAX_ELEMS) WHY("split-K workspace too large");
  return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Geometry. */

static unsigned ceil_div_u(int64_t a, int64_t b) { return (unsigned)((a + b - 1) / b); }

void ft_variant_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  (void)k;
  memset(g, 0, sizeof *g);
  for (int i = 0; i < 3; i++) g->grid[i] = g->block[i] = g->rgrid[i] = g->rblock[i] = 1;
  if (v->kind == FT_VK_EPILOGUE) {
    if (v->block <= 0 || v->ept <= 0) return;
    g->block[0] = (unsigned)v->block;
    g->grid[0] = ceil_div_u(m * n, (int64_t)v->block * v->ept);
    return;
  }
  if (v->bm <= 0 || v->bn <= 0 || v->tm <= 0 || v->tn <= 0) return;
  const int64_t tiles = ((m + v->bm - 1) / v->bm) * ((n + v->bn - 1) / v->bn);
  g->grid[0] = tiles > UINT_MAX ? UINT_MAX : (unsigned)tiles;
  g->grid[2] = v->split_k > 0 ? (unsigned)v->split_k : 1;
  g->block[0] = (unsigned)gemm_threads(v);
  g->smem = gemm_smem(v);
  if (v->streamk > 0) { /* two whole-tile partial slots per block; fixup blocks: (tile, 1024 outputs) */
    g->grid[0] = (unsigned)v->streamk;
    g->grid[2] = 1;
    g->workspace_bytes = (size_t)v->streamk * 2 * (size_t)v->bm * (size_t)v->bn * sizeof(float);
    g->has_reduce = 1;
    g->rblock[0] = FT_FIXUP_BLOCK;
    g->rgrid[0] = tiles > UINT_MAX ? UINT_MAX : (unsigned)tiles;
    g->rgrid[1] = (unsigned)(v->bm * v->bn / (FT_FIXUP_BLOCK * 4));
    return;
  }
  if (v->split_k > 1) {
    g->workspace_bytes = (size_t)v->split_k * (size_t)m * (size_t)n * sizeof(float);
    g->has_reduce = 1;
    g->rblock[0] = FT_REDUCE_BLOCK;
    g->rgrid[0] = ceil_div_u(m * n, (int64_t)FT_REDUCE_BLOCK * 4);
  }
}

void ft_eager_step_geometry(int64_t m, int64_t n, ft_launch_geom *g) {
  memset(g, 0, sizeof *g);
  for (int i = 0; i < 3; i++) g->grid[i] = g->block[i] = g->rgrid[i] = g->rblock[i] = 1;
  g->block[0] = FT_STEP_BLOCK;
  g->grid[0] = ceil_div_u(m * n, (int64_t)FT_STEP_BLOCK * 4);
}

ft_status ft_check_shape(int64_t m, int64_t n, int64_t k, ft_err *err) {
  if (m < 1 || n < 1 || k < 1)
    return ft__fail(err, FT_ERR_INVALID_ARG, "shape %lldx%lldx%lld: m, n and k must be >= 1",
                    (long long)m, (long long)n, (long long)k);
  if (m > FT_MAX_DIM || n > FT_MAX_DIM || k > FT_MAX_DIM)
    return ft__fail(err, FT_ERR_INVALID_ARG, "shape %lldx%lldx%lld: each dimension must be <= %lld",
                    (long long)m, (long long)n, (long long)k, (long long)FT_MAX_DIM);
  /* Each factor is <= 2^30, so the products below cannot overflow int64. */
  if (m * k > FT_MAX_ELEMS || n * k > FT_MAX_ELEMS || m * n > FT_MAX_ELEMS)
    return ft__fail(err, FT_ERR_INVALID_ARG,
                    "shape %lldx%lldx%lld: a matrix has more than 2^36 elements",
                    (long long)m, (long long)n, (long long)k);
  return FT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Enumeration. */

typedef struct scored {
  ft_variant v;
  double cost; /* modelled time, arbitrary units: lower first */
} scored;

/* Blocks of v resident on one SM (threads, shared memory and registers permitting). */
static int gemm_occupancy(const ft_variant *v, const ft_device_limits *lim) {
  const int threads = gemm_threads(v);
  int est = gemm_reg_estimate(v);
  if (v->layout == 3) {
    est = launch_bounds_cap(threads, ft__gemm_min_blocks(v)); /* ptxas may use all of it */
  } else if (v->tm * v->tn >= 64) {
    est = 65536 / threads < 255 ? 65536 / threads : 255; /* see min_blocks */
  }
  int occ = sm_max_threads(lim) / threads;
  const int by_smem = (int)(sm_smem(lim) / (int64_t)gemm_smem(v));
  const int by_regs = 65536 / (threads * ((est + 7) / 8 * 8));
  if (by_smem < occ) occ = by_smem;
  if (by_regs < occ) occ = by_regs;
  return occ < 1 ? 1 : occ;
}

/* A coarse time model: the busiest SM's share of padded FMAs, divided by an efficiency that
 * rewards register-tile and block-tile reuse and enough resident warps, plus the split-K
 * traffic. It only orders candidates; the tuner measures. */
static double gemm_cost(const ft_variant *v, int64_t m, int64_t n, int64_t k,
                        const ft_device_limits *lim) {
  const int64_t tm = (m + v->bm - 1) / v->bm, tn = (n + v->bn - 1) / v->bn;
  const int64_t slice = ((k + v->split_k - 1) / v->split_k + v->bk - 1) / v->bk * v->bk;
  const int64_t blocks = v->streamk > 0 ? v->streamk : tm * tn * v->split_k;
  const int occ = gemm_occupancy(v, lim);
  const int64_t per_sm = (blocks + lim->sm_count - 1) / lim->sm_count;
  const int64_t resident = per_sm < occ ? per_sm : occ;
  const double warps = (double)resident * gemm_threads(v) / 32.0;
  const double reg_reuse = (double)(v->tm * v->tn) / (v->tm + v->tn) / 4.0; /* 8x8 -> 1 */
  const double blk_reuse = (double)v->bm * v->bn / (v->bm + v->bn) / 64.0;  /* 128^2 -> 1 */
  double eff = (reg_reuse < 1 ? reg_reuse : 1.0) * (blk_reuse < 1 ? 0.5 + 0.5 * blk_reuse : 1.0);
  eff *= warps >= 8 ? 1.0 : 0.55 + 0.45 * warps / 8.0;
  if (v->layout == 3) {
    /* Warp-tiled: measured on the H200 (2026-11-29) 10-16 % faster than the best [rows] tiles
     * (1.476 vs 1.620 ms at minsub, 2.826 vs 3.266 ms at biasrelu), given 8 warps per SM. */
    eff *= v->stages == 2 ? 1.10 : 1.08; /* stages 2: 1-2 % faster when it fits (bk 8) */
  } else if (v->stages == 1 || v->bk == 8) {
    eff *= 0.97; /* fewer loads in flight per barrier */
  }
  double fma = (double)per_sm * v->bm * v->bn * (double)slice;
  if (v->streamk > 0) /* every SM gets an even share of the padded work */
    fma = (double)(tm * tn) * v->bm * v->bn * (double)((k + v->bk - 1) / v->bk * v->bk) / lim->sm_count;
  double cost = fma / eff;
  if (v->streamk > 0) /* up to two whole-tile partials per block, written and read back */
    cost += 8.0 * 2.0 * 4.0 * 2.0 * (double)v->streamk * v->bm * v->bn / lim->sm_count;
  if (v->split_k > 1) /* partials written and read back: ~8 FMA-equivalents per byte */
    cost += 8.0 * 2.0 * 4.0 * (double)v->split_k * m * n / lim->sm_count;
  if (v->swizzle > 1) cost *= 0.995; /* small L2 gain on multi-row grids */
  if (v->streamk > 0) {
    /* Measured on the H200 (2026-11-29): the same tiles run 1.5-6 % slower in the stream-K
     * loop than one per block, and blocks at different k share fewer operands in L2 when
     * tiles share rows or columns. */
    cost /= tm > 1 && tn > 1 ? 0.95 : 0.97;
  }
  return cost;
}

static int cmp_scored(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->cost < y->cost) return -1;
  if (x->cost > y->cost) return 1;
  char nx[96], ny[96];
  ft_variant_name(&x->v, nx, sizeof nx);
  ft_variant_name(&y->v, ny, sizeof ny);
  return strcmp(nx, ny);
}

/* Split factors worth trying: only when one split-free wave leaves SMs idle, each slice keeps
 * at least 256 k (and 4 tiles), and the grid grows to at most four full waves. */
static int split_candidates(const ft_variant *v, int64_t m, int64_t n, int64_t k,
                            const ft_device_limits *lim, int out[8]) {
  static const int cand[] = {1, 2, 3, 4, 6, 8, 12, 16};
  const int64_t tiles = ((m + v->bm - 1) / v->bm) * ((n + v->bn - 1) / v->bn);
  const int64_t slots = (int64_t)lim->sm_count * gemm_occupancy(v, lim);
  int cnt = 0;
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
    const int s = cand[i];
    if (s > 1 && (tiles >= slots || tiles * s > 4 * slots)) continue;
    if (s > 1 && (k / s < 256 || k / s < 4 * v->bk)) continue;
    out[cnt++] = s;
  }
  return cnt;
}

/* Stream-K blocks worth trying for layout-3 v (0: none): one per resident slot of the GPU,
 * when the tiles leave the last wave at most 98 % full and each block still gets
 * FT_SK_MIN_UNITS k tiles or more. */
static int streamk_blocks(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim) {
  if (v->layout != 3) return 0;
  const int64_t tiles = ((m + v->bm - 1) / v->bm) * ((n + v->bn - 1) / v->bn);
  const int64_t slots = (int64_t)lim->sm_count * gemm_occupancy(v, lim);
  const int64_t waves = (tiles + slots - 1) / slots;
  if (slots > FT_MAX_STREAMK || tiles * 100 > waves * slots * 98) return 0;
  if (tiles * ((k + v->bk - 1) / v->bk) < slots * FT_SK_MIN_UNITS) return 0;
  return (int)slots;
}

/* Whether a block tile is worth trying for this shape: no dimension more than twice the
 * problem (mostly padding), no extreme aspect ratios. */
static int tile_plausible(int bm, int bn, int64_t m, int64_t n) {
  if (bm > 32 && bm >= 2 * m) return 0;
  if (bn > 32 && bn >= 2 * n) return 0;
  if (bm > 4 * bn || bn > 4 * bm) return 0;
  return 1;
}

static int vec_for_k(int64_t k) { return k % 4 == 0 ? 4 : (k % 2 == 0 ? 2 : 1); }

typedef struct grow_buf {
  scored *a;
  int n, cap;
} grow_buf;

static ft_status push(grow_buf *b, const ft_variant *v, double cost, ft_err *err) {
  if (b->n == b->cap) {
    const int cap = b->cap ? b->cap * 2 : 256;
    scored *na = realloc(b->a, (size_t)cap * sizeof *na);
    if (!na) return ft__fail(err, FT_ERR_NOMEM, "space: out of memory");
    b->a = na;
    b->cap = cap;
  }
  b->a[b->n].v = *v;
  b->a[b->n].cost = cost;
  b->n++;
  return FT_OK;
}

/* Pushes v with each worthwhile split factor and swizzle, if it fits the shape and device. */
static ft_status push_splits(ft_variant *v, int64_t m, int64_t n, int64_t k,
                             const ft_device_limits *lim, grow_buf *b, ft_err *err) {
  const int threads = gemm_threads(v);
  if (threads < 64 || threads > 256) return FT_OK;
  v->split_k = 1, v->swizzle = 1;
  int splits[8];
  const int ns = split_candidates(v, m, n, k, lim, splits);
  const int multi_row = (m + v->bm - 1) / v->bm > 1 && (n + v->bn - 1) / v->bn > 1;
  for (int s = 0; s < ns; s++)
    for (int z = 1; z <= (multi_row ? 8 : 1); z += 7) {
      v->split_k = splits[s];
      v->swizzle = z;
      if (!ft_variant_applicable(v, m, n, k, lim, NULL, 0)) continue;
      FT_TRY(push(b, v, gemm_cost(v, m, n, k, lim), err));
    }
  v->split_k = 1, v->swizzle = 1;
  const int sk = streamk_blocks(v, m, n, k, lim);
  if (sk > 0) {
    v->streamk = sk;
    if (ft_variant_applicable(v, m, n, k, lim, NULL, 0)) FT_TRY(push(b, v, gemm_cost(v, m, n, k, lim), err));
    v->streamk = 0;
  }
  return FT_OK;
}

/* Every plausible GEMM variant at the widest vector width k allows. */
static ft_status enumerate_gemm(int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                                grow_buf *b, ft_err *err) {
  static const int tiles[] = {32, 64, 128, 256};
  static const int tts[][2] = {{8, 8}, {8, 4}, {4, 8}, {4, 4}};
  static const int bks[] = {8, 16, 32};
  ft_variant v = {0};
  v.kind = FT_VK_GEMM;
  v.vec = vec_for_k(k);
  for (size_t a = 0; a < 4; a++)
    for (size_t c = 0; c < 4; c++) {
      if (!tile_plausible(tiles[a], tiles[c], m, n)) continue;
      for (size_t t = 0; t < 4; t++)
        for (size_t kk = 0; kk < 3; kk++)
          for (int st = 1; st <= 4; st++) {
            v.bm = tiles[a], v.bn = tiles[c], v.tm = tts[t][0], v.tn = tts[t][1];
            v.bk = bks[kk], v.stages = st, v.layout = 0;
            /* Each thread loads whole vectors: tiles divide evenly over the threads. */
            if ((v.bm * v.bk / v.vec) % gemm_threads(&v) || (v.bn * v.bk / v.vec) % gemm_threads(&v))
              continue;
            FT_TRY(push_splits(&v, m, n, k, lim, b, err));
          }
    }
  /* Layout 3, warp-tiled: 16x8, 8x16 and 8x8 thread tiles over 64..256 block tiles, loads
   * issued one or two tiles ahead. */
  static const int wtts[][2] = {{16, 8}, {8, 16}, {8, 8}};
  for (size_t a = 1; a < 4; a++)
    for (size_t c = 1; c < 4; c++) {
      if (!tile_plausible(tiles[a], tiles[c], m, n)) continue;
      for (size_t t = 0; t < 3; t++)
        for (size_t kk = 0; kk < 2; kk++) {
          v.bm = tiles[a], v.bn = tiles[c], v.tm = wtts[t][0], v.tn = wtts[t][1];
          for (int st = 1; st <= 2; st++) {
            v.bk = bks[kk], v.stages = st, v.layout = 3;
            if (!ft_variant_valid(&v, NULL, 0)) continue;
            FT_TRY(push_splits(&v, m, n, k, lim, b, err));
          }
        }
    }
  return FT_OK;
}

static ft_status enumerate_epilogue(int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                                    grow_buf *b, ft_err *err) {
  static const int blocks[] = {128, 256, 512};
  static const int vecs[] = {4, 2, 1};
  ft_variant v = {0};
  v.kind = FT_VK_EPILOGUE;
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++)
      for (int ept = vecs[j]; ept <= 16; ept *= 2) {
        v.block = blocks[i], v.vec = vecs[j], v.ept = ept;
        if (!ft_variant_applicable(&v, m, n, k, lim, NULL, 0)) continue;
        /* Wide accesses and 8 elements per thread are what elementwise kernels like. */
        const double cost = (5 - v.vec) * 10.0 + (ept == 8 ? 0 : ept == 4 || ept == 16 ? 1 : 2) +
                            (v.block == 256 ? 0 : 0.5);
        FT_TRY(push(b, &v, cost, err));
      }
  return FT_OK;
}

/* Marks (cost = -1) all but keep of the sorted candidates as dropped. Each split factor (and
 * stream-K) keeps its best FT_SPACE_RESERVE first, so the cost model alone cannot remove a
 * whole split factor (or split-free kernels) from what the tuner measures; the rest go by cost. */
#define FT_SPACE_RESERVE 48
static void select_kept(scored *a, int n, int keep) {
  if (n <= keep) return;
  unsigned char *take = calloc((size_t)n, 1);
  int per_split[FT_MAX_SPLIT_K + 1] = {0}, taken = 0;
  if (take) {
    for (int i = 0; i < n && taken < keep; i++)
      if (per_split[a[i].v.streamk ? 0 : a[i].v.split_k]++ < FT_SPACE_RESERVE) take[i] = 1, taken++;
  }
  for (int i = 0; i < n; i++) {
    if (take && take[i]) continue;
    if (taken < keep) {
      taken++;
    } else {
      a[i].cost = -1;
    }
  }
  free(take);
}

ft_status ft_space_enumerate(ft_variant_kind kind, int64_t m, int64_t n, int64_t k,
                             const ft_device_limits *lim, ft_variant **out, int *count, ft_err *err) {
  if (!lim || !out || !count) return ft__fail(err, FT_ERR_INVALID_ARG, "space: NULL argument");
  *out = NULL;
  *count = 0;
  FT_TRY(ft_check_shape(m, n, k, err));
  if (lim->sm_count < 1 || lim->max_threads_per_block < 32 || lim->max_smem_per_block < 1)
    return ft__fail(err, FT_ERR_INVALID_ARG, "space: device limits not filled in");
  grow_buf b = {0};
  ft_status s;
  if (kind == FT_VK_GEMM)
    s = enumerate_gemm(m, n, k, lim, &b, err);
  else if (kind == FT_VK_EPILOGUE)
    s = enumerate_epilogue(m, n, k, lim, &b, err);
  else
    s = ft__fail(err, FT_ERR_INVALID_ARG, "space: unknown variant kind %d", (int)kind);
  if (s != FT_OK) {
    free(b.a);
    return s;
  }
  if (b.n == 0) {
    free(b.a);
    return ft__fail(err, FT_ERR_UNSUPPORTED, "space: no variant fits %lldx%lldx%lld",
                    (long long)m, (long long)n, (long long)k);
  }
  qsort(b.a, (size_t)b.n, sizeof *b.a, cmp_scored);
  const int keep = b.n < FT_SPACE_CAP ? b.n : FT_SPACE_CAP;
  ft_variant *vs = malloc((size_t)keep * sizeof *vs);
  if (!vs) {
    free(b.a);
    return ft__fail(err, FT_ERR_NOMEM, "space: out of memory");
  }
  select_kept(b.a, b.n, keep);
  int j = 0;
  for (int i = 0; i < b.n && j < keep; i++)
    if (b.a[i].cost >= 0) vs[j++] = b.a[i].v;
  free(b.a);
  *out = vs;
  *count = keep;
  return FT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Names and JSON. */

int ft_variant_name(const ft_variant *v, char *buf, size_t len) {
  if (v->kind == FT_VK_EPILOGUE)
    return snprintf(buf, len, "epi_b%d_v%d_e%d", v->block, v->vec, v->ept);
  char sk[24] = "";
  if (v->streamk) snprintf(sk, sizeof sk, "_sk%d", v->streamk);
  return snprintf(buf, len, "gemm_bm%d_bn%d_bk%d_t%dx%d_v%d_s%d_k%d_z%d%s%s", v->bm, v->bn, v->bk,
                  v->tm, v->tn, v->vec, v->stages, v->split_k, v->swizzle, sk,
                  v->layout == 3 ? "_w" : "");
}

int ft_variant_json(const ft_variant *v, char *buf, size_t len) {
  if (v->kind == FT_VK_EPILOGUE)
    return snprintf(buf, len, "{\"kind\":\"epilogue\",\"block\":%d,\"vec\":%d,\"ept\":%d}",
                    v->block, v->vec, v->ept);
  return snprintf(buf, len,
                  "{\"kind\":\"gemm\",\"bm\":%d,\"bn\":%d,\"bk\":%d,\"tm\":%d,\"tn\":%d,"
                  "\"vec\":%d,\"stages\":%d,\"split_k\":%d,\"swizzle\":%d%s%.0d%s%.0d}",
                  v->bm, v->bn, v->bk, v->tm, v->tn, v->vec, v->stages, v->split_k, v->swizzle,
                  v->streamk ? ",\"streamk\":" : "", v->streamk, v->layout ? ",\"layout\":" : "",
                  v->layout); /* %.0d: 0 prints nothing */
}

/* The keys of each kind, in ft_variant_json's order, and where they land. */
typedef struct json_key {
  const char *name;
  size_t offset;
} json_key;

static const json_key k_gemm_keys[] = {
    {"bm", offsetof(ft_variant, bm)},         {"bn", offsetof(ft_variant, bn)},
    {"bk", offsetof(ft_variant, bk)},         {"tm", offsetof(ft_variant, tm)},
    {"tn", offsetof(ft_variant, tn)},         {"vec", offsetof(ft_variant, vec)},
    {"stages", offsetof(ft_variant, stages)}, {"split_k", offsetof(ft_variant, split_k)},
    {"swizzle", offsetof(ft_variant, swizzle)}};
static const json_key k_epi_keys[] = {{"block", offsetof(ft_variant, block)},
                                      {"vec", offsetof(ft_variant, vec)},
                                      {"ept", offsetof(ft_variant, ept)}};

#define JSON_MAX_INPUT 1024
#define JSON_MAX_FIELDS 16

typedef struct json_field {
  char key[16];
  int is_string;
  char str[16];
  long num;
} json_field;

typedef struct json_cursor {
  const char *p;
  ft_err *err;
} json_cursor;

static void skip_ws(json_cursor *c) {
  while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r') c->p++;
}

/* A short string of [a-z_] only: the only strings a variant has. */
static ft_status parse_word(json_cursor *c, char *out, size_t cap) {
  if (*c->p != '"') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected a string");
  c->p++;
  size_t n = 0;
  while ((*c->p >= 'a' && *c->p <= 'z') || *c->p == '_') {
    if (n + 1 >= cap) return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: string too long");
    out[n++] = *c->p++;
  }
  out[n] = '\0';
  if (*c->p != '"') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: unexpected character in string");
  c->p++;
  return FT_OK;
}

/* A non-negative integer of at most 6 digits, no sign, no leading zeros, no fraction. */
static ft_status parse_int(json_cursor *c, long *out) {
  const char *s = c->p;
  long v = 0;
  int digits = 0;
  while (*c->p >= '0' && *c->p <= '9') {
    if (++digits > 6) return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: number out of range");
    v = v * 10 + (*c->p++ - '0');
  }
  if (digits == 0) return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected a number or string");
  if (digits > 1 && *s == '0') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: leading zero");
  if (*c->p == '.' || *c->p == 'e' || *c->p == 'E')
    return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected an integer");
  *out = v;
  return FT_OK;
}

static ft_status parse_field(json_cursor *c, json_field *f) {
  memset(f, 0, sizeof *f);
  FT_TRY(parse_word(c, f->key, sizeof f->key));
  skip_ws(c);
  if (*c->p != ':') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected ':' after \"%s\"", f->key);
  c->p++;
  skip_ws(c);
  if (*c->p == '"') {
    f->is_string = 1;
    return parse_word(c, f->str, sizeof f->str);
  }
  return parse_int(c, &f->num);
}

/* Splits a flat object into fields; nothing but whitespace may follow it. */
static ft_status parse_object(json_cursor *c, json_field *fields, int *nfields) {
  *nfields = 0;
  skip_ws(c);
  if (*c->p != '{') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected '{'");
  c->p++;
  skip_ws(c);
  if (*c->p == '}') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: empty object");
  for (;;) {
    skip_ws(c);
    if (*nfields == JSON_MAX_FIELDS) return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: too many keys");
    FT_TRY(parse_field(c, &fields[*nfields]));
    for (int i = 0; i < *nfields; i++)
      if (strcmp(fields[i].key, fields[*nfields].key) == 0)
        return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: duplicate key \"%s\"", fields[i].key);
    (*nfields)++;
    skip_ws(c);
    if (*c->p == ',') {
      c->p++;
      continue;
    }
    if (*c->p != '}') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: expected ',' or '}'");
    c->p++;
    break;
  }
  skip_ws(c);
  if (*c->p != '\0') return ft__fail(c->err, FT_ERR_FORMAT, "variant JSON: trailing characters");
  return FT_OK;
}

/* Moves the integer fields named by keys into v; every key required, no other key allowed,
 * except the nopt optional keys, read when present. */
static ft_status assign_fields(const json_field *f, int nf, const json_key *keys, size_t nkeys,
                               const json_key *opt, size_t nopt, ft_variant *v, ft_err *err) {
  size_t present = 0;
  for (int i = 0; i < nf; i++)
    for (size_t j = 0; j < nopt; j++)
      if (strcmp(f[i].key, opt[j].name) == 0) present++;
  if ((size_t)nf != nkeys + 1 + present)
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: expected %zu keys, found %d", nkeys + 1 + present, nf);
  for (int i = 0; i < nf; i++) {
    if (strcmp(f[i].key, "kind") == 0) continue;
    const json_key *key = NULL;
    for (size_t j = 0; !key && j < nkeys; j++)
      if (strcmp(keys[j].name, f[i].key) == 0) key = &keys[j];
    for (size_t j = 0; !key && j < nopt; j++)
      if (strcmp(opt[j].name, f[i].key) == 0) key = &opt[j];
    if (!key) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: unknown key \"%s\"", f[i].key);
    if (f[i].is_string)
      return ft__fail(err, FT_ERR_FORMAT, "variant JSON: \"%s\" must be an integer", f[i].key);
    *(int *)((char *)v + key->offset) = (int)f[i].num;
  }
  return FT_OK;
}

ft_status ft_variant_from_json(const char *json, ft_variant *out, ft_err *err) {
  if (!json || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "variant JSON: NULL argument");
  if (ft__bounded_len(json, JSON_MAX_INPUT + 1) > JSON_MAX_INPUT)
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: longer than %d bytes", JSON_MAX_INPUT);
  json_field f[JSON_MAX_FIELDS];
  int nf;
  json_cursor c = {json, err};
  FT_TRY(parse_object(&c, f, &nf));
  const json_field *kind = NULL;
  for (int i = 0; i < nf; i++)
    if (strcmp(f[i].key, "kind") == 0) kind = &f[i];
  if (!kind || !kind->is_string) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: missing string \"kind\"");
  ft_variant v;
  memset(&v, 0, sizeof v);
  if (strcmp(kind->str, "gemm") == 0) {
    v.kind = FT_VK_GEMM;
    static const json_key optional[] = {{"streamk", offsetof(ft_variant, streamk)},
                                        {"layout", offsetof(ft_variant, layout)}};
    FT_TRY(assign_fields(f, nf, k_gemm_keys, sizeof k_gemm_keys / sizeof k_gemm_keys[0], optional,
                         sizeof optional / sizeof optional[0], &v, err));
  } else if (strcmp(kind->str, "epilogue") == 0) {
    v.kind = FT_VK_EPILOGUE;
    FT_TRY(assign_fields(f, nf, k_epi_keys, sizeof k_epi_keys / sizeof k_epi_keys[0], NULL, 0, &v, err));
  } else {
    return ft__fail(err, FT_ERR_FORMAT, "variant JSON: unknown kind \"%s\"", kind->str);
  }
  char why[160];
  if (!ft_variant_valid(&v, why, sizeof why)) return ft__fail(err, FT_ERR_FORMAT, "variant JSON: %s", why);
  *out = v;
  return FT_OK;
}
