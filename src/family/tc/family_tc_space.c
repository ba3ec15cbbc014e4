/* The tensor-core family's search space (src/family/tc/family_tc.c has its rules): the cost model that
 * orders it, the tile widths fitted to waves, and the enumeration as one generator per axis.
 * GPU-free. */
#include <math.h>
#include <string.h>

#include "family_tc.h"

/* A tile's MMA efficiency by its width: measured at BN 64, 128, 192, 256 (below), linear between
 * them for the wave-fitted widths. */
static double tc_width_eff(int bn) {
  static const double at[] = {0.78, 0.92, 0.96, 1.0}; /* BN 64, 128, 192, 256 */
  if (bn <= 64) return at[0];
  if (bn >= 256) return at[3];
  const int i = (bn - 64) / 64;
  return at[i] + (at[i + 1] - at[i]) * (double)(bn - 64 - 64 * i) / 64.0;
}

/* Instructions per clock one warp issues evaluating a heavy E (its dependency chains and the
 * store boxes between them), read off the time E adds to a 128 x 128 ping-pong tile
 * (docs/BENCHMARKS.md, "Why the search space is what it is"). */
#define TC_EPI_IPC 0.15

/* What the epilogue adds where the MMA does not hide it, in tc_cost's unit (multiply-adds of the
 * busiest SM), for tiles_per_block tiles of kp k each. A tile's E is evaluated by the warpgroup(s)
 * holding its accumulator at TC_EPI_IPC per warp (at most one instruction per clock on each of
 * the four schedulers) and at the SM's 16 special-function results per clock. Cooperative: both
 * consumers evaluate their halves of every tile after its MMA, so every tile's E is exposed.
 * Ping-pong: one consumer's E runs beside the other's MMA, exposed where it outlasts a tile's MMA
 * and on the block's last tile. Split-K applies E in its reduction kernel (not modelled here). */
static double tc_epilogue_cost(const ft_variant *v, double tiles_per_block, int64_t kp, ft_ep_cost ec) {
  if ((ec.fp32 <= 0 && ec.mufu <= 0) || v->split_k > 1) return 0.0;
  const double macs_per_clk = 4096.0 / esize(v); /* the SM's tensor rate (tf32: half, fp8: twice bf16's) */
  const double tile = (double)tc_bm(v) * v->bn;                 /* outputs of a tile */
  const double warps = v->tc.pingpong ? 4.0 : 4.0 * v->tc.consumers;  /* the warps evaluating them */
  const double ops = ec.fp32 + ec.mufu;
  const double issue = fmax(tile / (32.0 * warps) * ops / TC_EPI_IPC, tile * ops / (32.0 * 4.0));
  const double e_clk = fmax(issue, tile * ec.mufu / 16.0);
  const double mma_clk = tile * (double)kp / macs_per_clk;
  /* Ping-pong and deferred E alike: E beside the next MMA, exposed where it outlasts it and on the
   * block's last tile. */
  const int beside = v->tc.pingpong || v->tc.defer;
  const double exposed =
      beside ? fmax(0.0, tiles_per_block - 1.0) * fmax(0.0, e_clk - mma_clk) + e_clk : tiles_per_block * e_clk;
  return exposed * macs_per_clk;
}

/* Time model: the busiest block's tiles (persistent blocks take units round robin) times a
 * tile's MMA work over an efficiency that grows with the tile width (wider wgmma, fewer
 * operand bytes per FLOP): the widest tile leads where it fills the SMs, a narrower one where
 * it leaves SMs idle (docs/BENCHMARKS.md, "Why the search space is what it is"). */
static double tc_cost(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_ep_cost ec) {
  const int64_t units = tc_units(v, m, n) * tc_slices(v);
  const int64_t blocks_units = v->tc.grid / v->tc.cluster;
  double per_block = (double)((units + blocks_units - 1) / blocks_units);
  if (v->tc.streamk) { /* the whole waves, the slot's share of the partial one, and what splitting
                     * costs a slot, measured at about a sixth of a tile: a published and a
                     * gathered tile of raw sums, a pipeline drained and refilled at each cut
                     * (docs/BENCHMARKS.md, "Why the search space is what it is") */
    const tc_sk_split s = tc_sk(v, m, n, k);
    per_block = (double)s.waves + (double)s.share / (double)s.ktiles + 0.17;
  }
  /* Ping-pong's 128 x 128 tiles (two m64n128 wgmma per k step, the epilogue beside the other
   * consumer's loop) run like cooperative BN 256 or a little faster; 64-row ones slower than
   * those everywhere (docs/BENCHMARKS.md, "Why the search space is what it is"). */
  double eff = tc_width_eff(v->bn);
  /* Measured at 128 x 128; other widths scaled as the cooperative ones are. */
  if (v->tc.pingpong == 2) eff = 1.01 * tc_width_eff(v->bn) / tc_width_eff(128);
  if (v->tc.pingpong == 1) eff *= 0.85;
  /* fp8's ping-pong tiles (128 x 64 ones at BN <= 96: the partial sums' registers) run behind the
   * best cooperative kernel; scaled from BN 128 they would lead the model's order
   * (docs/BENCHMARKS.md, "Why the search space is what it is"). */
  if (fp8(v) && v->tc.pingpong == 2) eff *= 0.8;
  const int64_t kt = (k + v->bk - 1) / v->bk, kp = (kt + tc_slices(v) - 1) / tc_slices(v) * v->bk;
  double cost = per_block * v->tc.cluster * tc_bm(v) * v->bn * (double)kp / eff / v->tc.cluster;
  if (v->tc.cluster == 2) cost *= 0.98;   /* W multicast: +0-3 % where tiles share a column */
  if (v->stages < 4) cost *= 1.05;     /* too few loads in flight */
  if (v->swizzle == 16) cost *= 1.001; /* g8 and g16 measured alike: keep g8 first */
  if (split(v)) cost *= 3.0 * (1.0 + 0.5 / v->tc.chunk); /* three products; a pipeline drain per chunk */
  /* fp8: a drain and the fp32 adds per promotion; with two partial sums the adds run beside the
   * next chunk's wgmma. */
  if (fp8(v)) cost *= 1.0 + (v->tc.dual ? 0.02 : 0.1) / v->tc.chunk;
  /* A third less shared-memory traffic, but BN 64: slower than BN 128 from shared memory
   * (docs/BENCHMARKS.md, "Why the search space is what it is"). */
  if (v->tc.aregs) cost *= 1.07;
  /* Pre-split x and W: no split in the kernel (a third of its shared-memory traffic at BN 128),
   * but x's split each call: 0.55-0.87 of the in-kernel split's time on an H100 (docs/BENCHMARKS.md
   * 2026-12-06 (h)). */
  if (v->tc.presplit) cost *= 0.7;
  /* The TMA-store epilogue: a tile's stores no longer hold the next pack behind their register
   * reads, a large share of the stalls (docs/BENCHMARKS.md, "Why the search space is what it is"). */
  if (v->tc.tstore) cost *= 0.99;
  /* The staged epilogue: an extra pass over shared memory per box, a little slower with light
   * epilogues, a little faster with heavy ones (docs/BENCHMARKS.md, "Why the search space is what
   * it is"). */
  if (v->tc.staged && !split(v)) cost *= 1.03; /* 3xtf32: alike (tc_enumerate's forms say why) */
  /* E box by box instead of on the whole tile first: slower where both fit, so timed after its
   * early twin (docs/BENCHMARKS.md, "Why the search space is what it is"). */
  if (v->tc.late) cost *= 1.01;
  /* Deferred E: the raw sums packed and unpacked again, E's vector loads inside the k loop; the
   * early form where E costs little (tc_defer_twin). */
  if (v->tc.defer) cost *= 1.002;
  /* Split-K writes and the reduce kernel reads S fp32 slabs: ~50 multiply-adds per byte of the
   * device's, spread over 132 SMs. */
  if (v->split_k > 1) cost += 2.0 * v->split_k * (double)m * (double)n * 4.0 * 50.0 / 132.0;
  return cost + tc_epilogue_cost(v, per_block, kp, ec);
}

/* Waves of tile units a width needs: tiles of bm x bn over (m, n) on `slots` blocks. */
static int64_t tc_waves(int64_t m, int64_t n, int bm, int bn, int slots) {
  const int64_t units = (m + bm - 1) / bm * ((n + bn - 1) / bn);
  return (units + slots - 1) / slots;
}

#define TC_MAX_FITTED 3

/* The widths to enumerate for tiles of bm rows: the standard four up to `widest` (256; fp8: 192,
 * tc_valid), then up to TC_MAX_FITTED wave-fitted ones: for w whole waves (from the widest's
 * count on), the narrowest multiple of 8 whose
 * tiles still fit in w waves, kept where w x BN (a block's columns of work) is at least 3 %
 * below the best standard width's: whole waves, as cuBLAS fits its own tile widths
 * (docs/BENCHMARKS.md, "Why the search space is what it is"). */
static size_t tc_widths(int64_t m, int64_t n, int bm, int slots, int widest, const int std_bns[4],
                        int out[4 + TC_MAX_FITTED]) {
  size_t k = 0;
  for (int i = 0; i < 4; i++)
    if (std_bns[i] <= widest) out[k++] = std_bns[i];
  if (slots < 1) return k; /* no waves to fit */
  int64_t best = -1;
  for (size_t i = 0; i < k; i++) {
    const int64_t work = tc_waves(m, n, bm, out[i], slots) * out[i];
    if (best < 0 || work < best) best = work;
  }
  const int64_t w0 = tc_waves(m, n, bm, widest, slots);
  for (int64_t w = w0; w < w0 + TC_MAX_FITTED; w++) {
    int bn = widest;
    while (bn - 8 >= 64 && tc_waves(m, n, bm, bn - 8, slots) <= w) bn -= 8;
    if ((double)(w * bn) > 0.97 * (double)best) continue; /* the widest fits w0 waves, so bn fits w */
    int dup = 0;
    for (size_t i = 0; i < k; i++) dup |= out[i] == bn;
    if (!dup) out[k++] = bn;
  }
  return k;
}

/* The enumeration as one generator per axis, in the order of k_tc_axes: each takes the point
 * built so far, sets its axis to each of its values (skipping what its rule excludes) and hands
 * every result to the next axis; the last one pushes. */
typedef struct tc_gen {
  int64_t m, n, k; /* the GEMM's: a gated pair's n is twice the output's (the interleaved weight's rows) */
  const ft_device_limits *lim;
  ft_space_sink *sink;
  int full;      /* FT_SPACE_FULL: also the forms the default space leaves out */
  ft_ep_cost ec; /* the epilogue's cost per element */
  int reduce;    /* family tc_reduce: no form that stores y through TMA or in split-K slabs */
} tc_gen;

typedef struct tc_point {
  ft_variant v;
  int fitted; /* v.bn is a wave-fitted width (tc_widths) */
  int most;   /* the deepest ring that fits the form */
  int slices; /* split-K slices, 1 for none */
} tc_point;

typedef ft_status (*tc_axis)(const tc_gen *g, tc_point p, int axis, ft_err *err);
static ft_status tc_next(const tc_gen *g, const tc_point *p, int axis, ft_err *err);

/* 1 or 2 consumer warpgroups (64-row tiles only where M is that small). */
static ft_status axis_consumers(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  for (int c = (g->m <= 64 ? 1 : 2); c <= 2; c++) {
    p.v.tc.consumers = c;
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* The standard widths, then the wave-fitted ones for the consumers' tile rows. */
static ft_status axis_width(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  static const int k_bns[] = {256, 192, 128, 64};
  int bns[4 + TC_MAX_FITTED];
  const int widest = fp8(&p.v) ? 192 : 256; /* fp8: d and p in a consumer's registers (tc_valid) */
  size_t nstd = 0; /* tc_widths puts the standard widths first */
  for (size_t i = 0; i < sizeof k_bns / sizeof k_bns[0]; i++) nstd += k_bns[i] <= widest;
  const size_t nbn = tc_widths(g->m, g->n, 64 * p.v.tc.consumers, g->lim->sm_count, widest, k_bns, bns);
  for (size_t b = 0; b < nbn; b++) {
    p.v.bn = bns[b];
    p.fitted = b >= nstd;
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* Clusters of 1 and 2 (2: only where the partner's tile row is not empty); the persistent grid of
 * whole clusters. */
static ft_status axis_cluster(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  for (int cl = 1; cl <= 2; cl++) {
    p.v.tc.cluster = cl, p.v.tc.pingpong = 0;
    if (cl == 2 && (g->m + tc_bm(&p.v) - 1) / tc_bm(&p.v) < 2) continue;
    p.v.tc.grid = g->lim->sm_count / cl * cl;
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* Tile groups of 8 and 16 rows (16 only where there are more than 8 tile rows); no tile mostly
 * padding. */
static ft_status axis_group(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  for (int z = 8; z <= 16; z *= 2) {
    p.v.swizzle = z;
    if (z == 16 && (g->m + tc_bm(&p.v) - 1) / tc_bm(&p.v) <= 8) continue; /* one group either way */
    if (p.v.bn > 64 && p.v.bn >= 2 * g->n) continue;                       /* mostly padding */
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* The epilogue's form: TMA stores, then direct; cooperative, then 128 x 128 ping-pong, then
 * (full space only) 64-row ping-pong; the staged epilogue with TMA stores. Pruned: ping-pong with
 * 128 x 128 tiles only, in the preferred store form (TMA stores where allowed), group 8 and the
 * deepest ring: these run level with the best cooperative kernel, while 64-row ping-pong tiles
 * run behind both (twice the x loads per output). The staged epilogue gains little, except in
 * 3xtf32 (fp32 sums staged in place in the store boxes), where it stays: there it wins with heavy
 * epilogues. A wave-fitted width takes ping-pong in both store forms (one such kernel was the
 * best of all). fp8 takes its widest ping-pong tiles here too (64 x 128, 64 x 192, 128 x 64: the
 * partial sums' registers): behind the best cooperative kernel, so tc_cost ranks them after it;
 * kept for the shapes not measured (docs/BENCHMARKS.md, "Why the search space is what it is").
 * The deepest ring that fits the form is found here; axis_stages takes it and fewer. */
static ft_status axis_form(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  /* A BN past whole boxes stores the rest directly; a gated pair and a reduction store directly. */
  const int ts_ok = !g->reduce && !p.v.tc.gated && (g->n * osize(&p.v)) % 16 == 0;
  for (int form = 0; form < 2 * 3 * 2; form++) {
    const int ts = form < 6, pp = (int[]){0, 2, 1}[form / 2 % 3], staged = form % 2;
    if (!g->full && ((pp == 1 && !fp8(&p.v)) || (staged && !split(&p.v)))) continue;
    if (pp && (p.v.tc.consumers != 2 || split(&p.v))) continue;
    if (ts && !ts_ok) continue;
    if (staged && !ts) continue;
    p.v.tc.tstore = ts, p.v.tc.pingpong = pp, p.v.tc.staged = staged;
    if (pp * p.v.bn > 256) continue; /* a consumer's accumulators in its registers */
    if (fp8(&p.v) && (pp == 2 ? 2 : 1) * p.v.bn > 192) continue; /* and fp8's partial sums (tc_valid) */
    if (!g->full && pp && p.v.swizzle != 8) continue;
    /* fp8's widest ping-pong tiles (128 x BN <= 96 or 64 x BN <= 192, the partial sums in the
     * registers) in the preferred store form; the other modes' 128 x 128. */
    if (!g->full && pp && !p.fitted && (ts != ts_ok || (fp8(&p.v) ? pp * p.v.bn < 128 : p.v.bn != 128)))
      continue;
    if (pp && (tc_bm(&p.v) >= 2 * g->m || (g->m + tc_bm(&p.v) - 1) / tc_bm(&p.v) < p.v.tc.cluster)) continue; /* padding */
    p.most = 0;
    p.v.tc.aregs = 0, p.v.tc.chunk = 0, p.v.tc.dual = 0, p.v.split_k = 0; /* the ring is sized with shared-memory small buffers */
    for (int st = 2; st <= TC_MAX_STAGES; st++) {
      p.v.stages = st;
      if (tc_smem(&p.v) <= (size_t)g->lim->max_smem_per_block) p.most = st;
    }
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* The deepest ring and one stage less (ping-pong: the deepest only; full: two less, every form). */
static ft_status axis_stages(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  const int fewer = g->full ? 2 : p.v.tc.pingpong ? 0 : 1;
  for (int st = p.most; st >= 2 && st >= p.most - fewer; st--) {
    p.v.stages = st;
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* 3xtf32: k tiles per partial sum, 512, 256, 128, 64 k: the error grows with the chunk (the
 * tensor core's adds truncate); the tolerance (SGEMM's own error, or the fp32 chain's) decides
 * which are accurate enough. fp8: promotion every 512, 256 or 128 k (fp8 wgmma's sums keep fewer
 * bits than fp32; DeepSeek-V3 promotes every 128). Other modes: none. */
static ft_status axis_chunk(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  static const int chunks[] = {16, 8, 4, 2}, chunks8[] = {4, 2, 1};
  const int *list = fp8(&p.v) ? chunks8 : chunks;
  const size_t n = split(&p.v) ? 4 : fp8(&p.v) ? 3 : 1;
  for (size_t h = 0; h < n; h++) {
    p.v.tc.chunk = promoted(&p.v) ? list[h] : 0;
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* fp8: two partial sums taking turns (the promotion beside the tensor core), then one. */
static ft_status axis_dual(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  for (int d = fp8(&p.v) && (p.v.tc.pingpong == 2 ? 2 : 1) * p.v.bn <= 128; d >= 0; d--) {
    p.v.tc.dual = d;
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* 3xtf32 at BN <= 64: x split in registers, then in shared memory. */
static ft_status axis_aregs(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  for (int r = (split(&p.v) && p.v.bn <= 64); r >= 0; r--) {
    p.v.tc.aregs = r;
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* 3xtf32: x and W split before the kernel (presplit), at the deepest ring its doubled stages
 * allow, for the deepest ring of the in-kernel split form only (one presplit variant per form;
 * default and full space: 1.13-1.81x the in-kernel split on an H100, docs/BENCHMARKS.md
 * 2026-12-06 (h)). */
static ft_status axis_presplit(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  FT_TRY(tc_next(g, &p, axis, err));
  if (!split(&p.v) || p.v.tc.aregs || p.v.stages != p.most) return FT_OK;
  p.v.tc.presplit = 1;
  while (p.v.stages > 2 && tc_smem(&p.v) > (size_t)g->lim->max_smem_per_block) p.v.stages--;
  if (tc_smem(&p.v) > (size_t)g->lim->max_smem_per_block) return FT_OK;
  return tc_next(g, &p, axis, err);
}

/* Split-K only where the tiles leave SMs idle: 2, 4, 8 slices up to about two units per SM (not
 * with TMA stores or ping-pong). */
static ft_status axis_split_k(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  const int64_t tile_units = tc_units(&p.v, g->m, g->n);
  for (int sk = 1; sk <= (p.v.tc.tstore || p.v.tc.pingpong || p.v.tc.gated || g->reduce ? 1 : 8); sk *= 2) {
    if (sk > 1 && tile_units * p.v.tc.cluster * sk / 2 >= g->lim->sm_count) break;
    p.v.split_k = sk > 1 ? sk : 0;
    p.slices = sk;
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* Stream-K beside whole tiles where the last wave is partial and each slot's share of it is at
 * least half a tile's k tiles (at most three blocks per tile); with clusters of 2 and TMA stores
 * only: the others spilled at BN 256 (and at BN 192 in fp32 storage) at the 168-register cap
 * (docs/BENCHMARKS.md, "Why the search space is what it is"). A heavy epilogue can still spill:
 * rejected at compile time like any candidate. */
static ft_status axis_stream_k(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  const int sk_fits = p.v.tc.cluster == 2 && p.v.tc.tstore && !(esize(&p.v) == 4 && p.v.bn == 192);
  const int most = p.slices == 1 && !promoted(&p.v) && sk_fits && !p.v.tc.pingpong && !p.v.tc.staged;
  for (int on = 0; on <= most; on++) {
    p.v.tc.streamk = on;
    if (on && 2 * tc_sk(&p.v, g->m, g->n, g->k).share < tc_sk(&p.v, g->m, g->n, g->k).ktiles) continue;
    FT_TRY(tc_next(g, &p, axis, err));
  }
  return FT_OK;
}

/* Deferred E's parts per store box: the fewest (1, 2, 4, 8) whose E fits in half a k tile's MMA,
 * so that the next k tile's wgmma are not issued late. A part is a box's 32 outputs per thread
 * over the parts, evaluated by each warp at TC_EPI_IPC and by the consumers' warps sharing each
 * scheduler, plus the unpacking and packing. At most 8: with 16 NVVM turned the selection of a
 * part's held words into a lookup in local memory (a stack frame; NVRTC for sm_90a), and 16
 * parts measured slower than 8 (docs/BENCHMARKS.md 2026-12-07 (q)). */
static int tc_defer_parts(const ft_variant *v, ft_ep_cost ec) {
  const double ktile_clk = (double)tc_bm(v) * v->bn * v->bk / (4096.0 / esize(v));
  const double per_box = 64.0 * (128.0 / osize(v)) / 128.0, ops = ec.fp32 + ec.mufu + 3.0;
  int p = 1;
  while (p < 8 && fmax(per_box / p * ops / TC_EPI_IPC, v->tc.consumers * per_box / p * ops) > 0.5 * ktile_clk) p *= 2;
  return p;
}

/* E worth deferring in the default space: at least a sigmoid's instructions an output (lighter ones
 * cost less than the packing, and the early form's vector loads go together). */
#define TC_DEFER_MIN_OPS 8.0
/* Deferred E in the default space: 0, the full space only. Correct on the H100 but slower than its
 * early twin and than ping-pong (gelu_tanh at 1024 x 8192 x 8192: 1.115 x cuBLAS's GEMM against
 * 1.071 and 1.056; 16 parts a box slower still), docs/BENCHMARKS.md 2026-12-07 (q). */
#define TC_DEFER_IN_DEFAULT 0

/* The deferred-E twin of a point (E under the next tile's k loop, tc_config.cuh's kDefer) where
 * tc_valid allows it (the cooperative TMA-store form with E on the whole tile first, bf16, two
 * consumers, whole store boxes), with a k loop of at least a k tile per part and no matrix
 * operand (E's reads of it would wait inside the k loop); in the default space (once
 * TC_DEFER_IN_DEFAULT) only for an E of TC_DEFER_MIN_OPS or more. */
static ft_status tc_defer_twin(const tc_gen *g, tc_point p, ft_err *err) {
  const ft_epilogue *ep = ft_space_epilogue(g->sink);
  if (!ep || ft_ep_has_matrix(ep)) return FT_OK;
  if (!g->full && (!TC_DEFER_IN_DEFAULT || g->ec.fp32 + g->ec.mufu < TC_DEFER_MIN_OPS)) return FT_OK;
  p.v.tc.defer = tc_defer_parts(&p.v, g->ec);
  /* Every part under a k tile of the next tile: a shorter loop leaves the rest exposed after it,
   * which the cost model does not count. */
  if ((g->k + p.v.bk - 1) / p.v.bk < (int64_t)(p.v.bn / 64) * p.v.tc.defer) return FT_OK;
  if (!ft_variant_applicable(&p.v, g->m, g->n / (1 + p.v.tc.gated), g->k, g->lim, NULL, 0)) return FT_OK; /* valid too */
  return ft_space_push(g->sink, &p.v, tc_cost(&p.v, g->m, g->n, g->k, g->ec), err);
}

/* The point, where it applies, its deferred-E twin (tc_defer_twin) and its late twin (E box by
 * box) at BN >= 192, where a heavy E with E on the whole tile first spills (division, gelu in tf32: CPU compiles, docs/BENCHMARKS.md) and
 * is rejected at compile time while the late form fits. Full space only: in exhaustive tunes the
 * late kernels ran behind the best, which was never one of them (docs/BENCHMARKS.md, "Why the
 * search space is what it is"). */
static ft_status axis_emit(const tc_gen *g, tc_point p, int axis, ft_err *err) {
  (void)axis;
  /* fp8 past BN 128 (d and p: BN registers): E box by box only (the late form; ping-pong's is
   * always), in every space. E on the whole tile first spilled at BN 168-192, direct stores at
   * 168-192 with gelu (NVRTC for sm_90a). */
  if (fp8(&p.v) && p.v.bn > 128) {
    if (!p.v.tc.tstore || p.v.tc.staged) return FT_OK;
    p.v.tc.late = !p.v.tc.pingpong;
  }
  if (!ft_variant_applicable(&p.v, g->m, g->n / (1 + p.v.tc.gated), g->k, g->lim, NULL, 0)) return FT_OK; /* the problem's n */
  FT_TRY(ft_space_push(g->sink, &p.v, tc_cost(&p.v, g->m, g->n, g->k, g->ec), err));
  FT_TRY(tc_defer_twin(g, p, err));
  if (g->full && p.v.tc.tstore && !p.v.tc.pingpong && !p.v.tc.staged && !p.v.tc.streamk && !p.v.tc.late &&
      p.v.bn >= 192) {
    p.v.tc.late = 1;
    if (ft_variant_applicable(&p.v, g->m, g->n / (1 + p.v.tc.gated), g->k, g->lim, NULL, 0))
      FT_TRY(ft_space_push(g->sink, &p.v, tc_cost(&p.v, g->m, g->n, g->k, g->ec), err));
  }
  return FT_OK;
}

static const tc_axis k_tc_axes[] = {axis_consumers, axis_width, axis_cluster, axis_group,   axis_form,     axis_stages,
                                    axis_chunk,     axis_dual,  axis_aregs,   axis_presplit, axis_split_k, axis_stream_k,
                                    axis_emit};

static ft_status tc_next(const tc_gen *g, const tc_point *p, int axis, ft_err *err) {
  return k_tc_axes[axis + 1](g, *p, axis + 1, err);
}

/* reduce: the forms that store no y, or store it themselves (family tc_reduce, tc_norm's, with
 * normw and normg its group); the family's id. */
static ft_status tc_enumerate_as(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                                 ft_space_sink *sink, int reduce, int family, int normw, int normg, ft_err *err) {
  const ft_epilogue *ep = ft_space_epilogue(sink);
  const int pair = ep && ft_ep_uses_x2(ep); /* tiles of the [2n, k] interleaved weight's product */
  const tc_gen g = {m, pair ? 2 * n : n, k, lim, sink, ft_space_full(sink), ft_space_epilogue_cost(sink), reduce};
  tc_point p;
  memset(&p, 0, sizeof p);
  p.v.tc.gated = pair;
  p.v.kind = FT_VK_GEMM;
  p.v.family = family;
  p.v.tc.normw = normw, p.v.tc.normg = normg;
  p.v.math = (int)math;
  p.v.bk = 128 / esize(&p.v);
  p.slices = 1;
  return k_tc_axes[0](&g, p, 0, err);
}


ft_status ft__tc_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                           ft_space_sink *sink, ft_err *err) {
  return tc_enumerate_as(m, n, k, math, lim, sink, 0, FT_FAMILY_TC, 0, 0, err);
}

int ft__tc_fuses_reduction(const ft_epilogue *ep) {
  const ft_ep_red r = ep ? ft_ep_reduction(ep, NULL) : FT_RED_NONE;
  /* A pool inside the reduction folds windows, not elements, and a matrix in its argument would be
   * read by the tile: the reduction pass's alone (in 3xtf32 also tc_pass's). */
  return r >= FT_RED_ROWSUM && r <= FT_RED_LOGSUMEXP && ft_ep_pool(ep, NULL, NULL) == FT_RED_NONE &&
         !ft_ep_has_matrix(ep) && ft_ep_check_kernels(ep, NULL) == FT_OK;
}

ft_status ft__tc_enumerate_reduce(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                                  ft_space_sink *sink, ft_err *err) {
  if (!ft__tc_fuses_reduction(ft_space_epilogue(sink))) return FT_OK;
  return tc_enumerate_as(m, n, k, math, lim, sink, 1, FT_FAMILY_TC_REDUCE, 0, 0, err);
}

ft_status ft__tc_enumerate_norm(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                                ft_space_sink *sink, ft_err *err) {
  const ft_epilogue *ep = ft_space_epilogue(sink);
  int groups = 0;
  if (!ep || ft_ep_reduction(ep, &groups) != FT_RED_GROUPNORM || groups < 1 || n % groups ||
      ft_ep_pool(ep, NULL, NULL) != FT_RED_NONE || ft_ep_has_matrix(ep) || ft_ep_check_kernels(ep, NULL) != FT_OK)
    return FT_OK;
  const int64_t w = n / groups;
  if (w > 256 || !tc_norm_width_ok((int)w, (int)w)) return FT_OK; /* no tile holds such a group */
  return tc_enumerate_as(m, n, k, math, lim, sink, 1, FT_FAMILY_TC_NORM, (int)w, groups, err);
}
