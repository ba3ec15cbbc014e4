/* Family tc: the Hopper tensor-core GEMM (layout 4, names "tc_..."; kernel in layers:
 * kernels_src/tc_config.cuh, wgmma_sm90.cuh, tc_ptx.cuh, tc_sched.cuh, tc_matrix.cuh,
 * tc_mainloop.cuh, tc_epilogue.cuh, tc_epilogue_tma.cuh, tc_reduce.cuh, tc_norm.cuh, gemm_tc.cu): TMA loads into a ring of stages, wgmma from
 * shared memory, a producer warpgroup and one or two consumer warpgroups (cooperative on one tile,
 * or ping-pong: two taking turns on whole tiles), a persistent grid walking tiles in a grouped
 * order, clusters of 2 multicasting the W tile, the epilogue applied to the accumulator in
 * registers, split-K and stream-K. tf32, bf16, fp16, 3xtf32 and fp8 modes; compiled for sm_90a. This
 * file: validity, applicability, geometry, the configuration the kernel is compiled with
 * (FtTcCfg) and its arguments; src/family/tc/family_tc_space.c: the cost model and the enumeration;
 * src/family/tc/family_tc.h: the rules both share. GPU-free: a launch's tensor maps are described here
 * (ft_arg_push_tmap) and encoded by src/gpu/launch.c. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family_tc.h"
#include "kernel_abi.h"

static int is_pow2_between(int x, int lo, int hi) { return x >= lo && x <= hi && (x & (x - 1)) == 0; }

static int tc_valid(const ft_variant *v, char *why, size_t whylen) {
  /* wgmma's N: any multiple of 8 (the accumulator's 8-column chunks); the enumeration takes 64,
   * 128, 192, 256 and the wave-fitted widths of tc_widths. */
  if (v->bn < 64 || v->bn > 256 || v->bn % 8) FT_WHY("tc: bn %d must be a multiple of 8 in 64..256", v->bn);
  if (v->bk != 128 / esize(v)) FT_WHY("tc: bk %d must be %d (128 bytes of k) in %s", v->bk, 128 / esize(v),
                                      ft_math_name((ft_math)v->math));
  if (v->tc.consumers != 1 && v->tc.consumers != 2) FT_WHY("tc: consumers %d must be 1 or 2", v->tc.consumers);
  if (v->tc.cluster != 1 && v->tc.cluster != 2) FT_WHY("tc: cluster %d must be 1 or 2", v->tc.cluster);
  if (v->tc.colstats && (v->tc.colstats != 1 || v->split_k > 1 || v->tc.streamk || v->tc.pingpong || v->tc.gated))
    FT_WHY("tc: colstats %d: 1, in a cooperative tile stored whole (no split-K, stream-K, ping-pong or gated pair)",
           v->tc.colstats);
  /* Each block of a cluster loads half the W tile: whole 8-row swizzle atoms. */
  if (v->tc.cluster == 2 && v->bn % 16) FT_WHY("tc: cluster 2 needs bn %d a multiple of 16 (half the W tile each)", v->bn);
  if (v->stages < 2 || v->stages > TC_MAX_STAGES) FT_WHY("tc: stages %d must be 2..%d", v->stages, TC_MAX_STAGES);
  if (!is_pow2_between(v->swizzle, 1, 16)) FT_WHY("tc: swizzle (tile group) %d must be 1, 2, 4, 8 or 16", v->swizzle);
  if (v->tc.grid < v->tc.cluster || v->tc.grid > TC_MAX_GRID || v->tc.grid % v->tc.cluster)
    FT_WHY("tc: grid %d must be a multiple of the cluster in %d..%d", v->tc.grid, v->tc.cluster, TC_MAX_GRID);
  if (promoted(v) && (v->tc.chunk < 1 || v->tc.chunk > TC_MAX_CHUNK))
    FT_WHY("tc: chunk %d (k tiles per partial sum) must be 1..%d in %s", v->tc.chunk, TC_MAX_CHUNK,
           ft_math_name((ft_math)v->math));
  /* Two accumulators (d, p) in a consumer's registers: 3xtf32's beside its split operands at BN
   * <= 128; fp8's within the 232 of setmaxnreg at BN <= 192 (NVRTC for sm_90a: no spill where E is
   * applied box by box), three of them with dual at BN <= 128; ping-pong 2 holds two m64 blocks of
   * each, so half the width. */
  if (split(v) && v->bn > 128)
    FT_WHY("tc: bn %d > 128 in %s (two accumulators in registers)", v->bn, ft_math_name((ft_math)v->math));
  const int msub = v->tc.pingpong == 2 ? 2 : 1;
  if (fp8(v) && msub * v->bn > (v->tc.dual ? 128 : 192))
    FT_WHY("tc: bn %d > %d in fp8 (%s accumulators of %d m64 block%s in registers)", v->bn,
           (v->tc.dual ? 128 : 192) / msub, v->tc.dual ? "three" : "two", msub, msub > 1 ? "s" : "");
  if (!promoted(v) && v->tc.chunk)
    FT_WHY("tc: chunk is a 3xtf32 and fp8 dimension, not of %s", ft_math_name((ft_math)v->math));
  if (v->tc.dual != 0 && v->tc.dual != 1) FT_WHY("tc: dual %d must be 0 or 1", v->tc.dual);
  if (v->tc.dual && !fp8(v)) FT_WHY("tc: dual (two partial sums) is fp8's, not %s", ft_math_name((ft_math)v->math));
  if (v->tc.aregs != 0 && v->tc.aregs != 1) FT_WHY("tc: aregs %d must be 0 or 1", v->tc.aregs);
  if (v->tc.aregs && (!split(v) || v->bn > 64)) FT_WHY("tc: aregs (x in registers) needs 3xtf32 and bn <= 64");
  if (v->tc.presplit != 0 && v->tc.presplit != 1) FT_WHY("tc: presplit %d must be 0 or 1", v->tc.presplit);
  if (v->tc.presplit && (!split(v) || v->tc.aregs || v->split_k > 1))
    FT_WHY("tc: presplit (x and W split before the kernel) is 3xtf32's, without aregs or split_k");
  if (v->split_k == 1 || v->split_k < 0 || v->split_k > TC_MAX_SPLIT)
    FT_WHY("tc: split_k %d must be 0 (none) or 2..%d", v->split_k, TC_MAX_SPLIT);
  if (v->tc.tstore != 0 && v->tc.tstore != 1) FT_WHY("tc: tstore %d must be 0 or 1", v->tc.tstore);
  if (v->tc.tstore && v->split_k > 1) FT_WHY("tc: tstore (TMA-store epilogue) and split_k exclude each other");
  if (v->tc.streamk != 0 && v->tc.streamk != 1) FT_WHY("tc: streamk %d must be 0 or 1", v->tc.streamk);
  if (v->tc.streamk && (v->split_k > 1 || promoted(v)))
    FT_WHY("tc: streamk excludes split_k, 3xtf32 and fp8");
  if (v->tc.normw || v->tc.normg) FT_WHY("tc: normw and normg are family tc_norm's");
  if (v->tc.pingpong < 0 || v->tc.pingpong > 2) FT_WHY("tc: pingpong %d must be 0, 1 or 2", v->tc.pingpong);
  if (v->tc.pingpong && v->tc.consumers != 2) FT_WHY("tc: pingpong needs 2 consumers, not %d", v->tc.consumers);
  if (v->tc.pingpong && (v->split_k > 1 || v->tc.streamk || split(v)))
    FT_WHY("tc: pingpong excludes split_k, streamk and 3xtf32");
  /* A consumer's accumulators in the 168 registers ptxas allots every thread. */
  if (v->tc.pingpong * v->bn > 256) FT_WHY("tc: pingpong %d with bn %d: more than 128 accumulator registers", v->tc.pingpong, v->bn);
  if (v->tc.staged != 0 && v->tc.staged != 1) FT_WHY("tc: staged %d must be 0 or 1", v->tc.staged);
  if (v->tc.staged && (!v->tc.tstore || v->tc.streamk))
    FT_WHY("tc: staged (epilogue from shared memory) needs tstore and excludes streamk");
  if (v->tc.late != 0 && v->tc.late != 1) FT_WHY("tc: late %d must be 0 or 1", v->tc.late);
  if (v->tc.late && (!v->tc.tstore || v->tc.pingpong || v->tc.streamk || v->tc.staged))
    FT_WHY("tc: late (E box by box) is a form of the cooperative TMA-store epilogue (not pingpong, streamk, staged)");
  /* At most 8 parts: with 16 NVVM put the held words in local memory (family_tc_space.c). */
  if (v->tc.defer < 0 || v->tc.defer > 8 || (v->tc.defer & (v->tc.defer - 1)))
    FT_WHY("tc: defer %d must be 0 or 1, 2, 4, 8 (parts of a store box)", v->tc.defer);
  /* The store overlap's packed tile (tc_config.cuh's kStoreOverlap, two consumers whatever E reads)
   * holds the raw sums, rounded to bf16: fp16's range would turn a sum past 65504 into inf before
   * an E that scales it down, where every other fused form gives the finite value. */
  if (v->tc.defer && (!v->tc.tstore || v->tc.pingpong || v->tc.streamk || v->tc.staged || v->tc.late || v->split_k > 1 ||
                      v->math != FT_MATH_BF16 || v->tc.consumers != 2 || v->bn % 64))
    FT_WHY("tc: defer (E under the next tile's k loop) is a form of the cooperative TMA-store epilogue in bf16 with "
           "two consumers and bn a multiple of 64 (not pingpong, streamk, staged, late or split_k)");
  if (v->bm || v->vec) FT_WHY("tc: bm and vec are not tensor-core parameters (bm is 64 x consumers)");
  if (v->tc.gated != 0 && v->tc.gated != 1) FT_WHY("tc: gated %d must be 0 or 1", v->tc.gated);
  /* A pair's x and x2 are a thread's chunks 2p and 2p + 1: whole 16-column groups, stored directly
   * (in fp8 too: its promoted sums have wgmma's accumulator layout). */
  if (v->tc.gated && (v->bn % 16 || v->tc.tstore || v->split_k > 1 || v->tc.streamk))
    FT_WHY("tc: gated needs bn a multiple of 16 and direct stores (no tstore, split_k or streamk)");
  return 1;
}

/* The GEMM's columns for the problem's n: a gated pair computes 2n (the interleaved weight's rows). */
static int64_t gemm_n(const ft_variant *v, int64_t n) { return v->tc.gated ? 2 * n : n; }

/* Hopper's wgmma and TMA (sm_90a); TMA rows must be whole 16-byte units. */
static int tc_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                         char *why, size_t whylen) {
  if (v->tc.gated && n % 8) FT_WHY("tc: gated: n %lld is not a multiple of 8 (the interleave's groups)", (long long)n);
  n = gemm_n(v, n);
  if (lim->cc_major != 9 || lim->cc_minor != 0)
    FT_WHY("tc: needs compute capability 9.0 (wgmma, TMA), device has %d.%d", lim->cc_major, lim->cc_minor);
  if ((k * esize(v)) % 16)
    FT_WHY("tc: k %lld is not a multiple of %d (TMA rows of 16 bytes in %s)", (long long)k, 16 / esize(v),
           ft_math_name((ft_math)v->math));
  if (v->tc.tstore && (n * osize(v)) % 16)
    FT_WHY("tc: n %lld is not a multiple of %d (TMA-store rows of 16 bytes in %s)", (long long)n, 16 / osize(v),
           ft_math_name((ft_math)v->math));
  if (tc_threads(v) > lim->max_threads_per_block) FT_WHY("tc: %d threads > device limit", tc_threads(v));
  /* The split rows of x and W live in the plan's workspace: (M + N) x 2 Kp floats. */
  const double split_gib = (double)(m + n) * 8.0 * (double)ft_presplit_kp(k) / (1 << 30);
  if (v->tc.presplit && split_gib > TC_PRESPLIT_MAX_GIB)
    FT_WHY("tc: presplit: x's and W's split rows would take %.1f GiB of workspace (at most %d)", split_gib,
           TC_PRESPLIT_MAX_GIB);
  if (v->split_k > 1) { /* every k slice gets a k tile: the kernel relies on it */
    const int64_t kt = (k + v->bk - 1) / v->bk, per = (kt + v->split_k - 1) / v->split_k;
    if ((v->split_k - 1) * per >= kt)
      FT_WHY("tc: split_k %d leaves a k slice empty (%lld k tiles)", v->split_k, (long long)kt);
  }
  if (v->tc.streamk) { /* a partial wave to share, and a k tile of it for every slot */
    const tc_sk_split s = tc_sk(v, m, n, k);
    if (s.waves < 1 || s.sk == 0)
      FT_WHY("tc: stream-K needs more tile units (%lld) than block slots (%lld), not a multiple of them",
             (long long)s.units, (long long)s.slots);
    if (s.sk * s.ktiles >= ((int64_t)1 << 31))
      FT_WHY("tc: stream-K: %lld k tiles in the partial wave, more than the kernel counts", (long long)(s.sk * s.ktiles));
    if (s.share < 1)
      FT_WHY("tc: stream-K: the partial wave (%lld units of %lld k tiles) gives a block slot no k tile",
             (long long)s.sk, (long long)s.ktiles);
  }
  if (tc_smem(v) > (size_t)lim->max_smem_per_block)
    FT_WHY("shared memory %zu B > device limit %d B", tc_smem(v), lim->max_smem_per_block);
  return 1;
}

static void tc_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  if (v->tc.consumers <= 0 || v->bn <= 0 || v->tc.cluster <= 0) return;
  n = gemm_n(v, n);
  int64_t blocks = tc_units(v, m, n) * tc_slices(v) * v->tc.cluster; /* no block without a unit of its own */
  if (blocks > v->tc.grid) blocks = v->tc.grid;
  g->grid[0] = (unsigned)blocks;
  g->block[0] = (unsigned)tc_threads(v);
  g->cluster[0] = (unsigned)v->tc.cluster;
  g->smem = tc_smem(v);
  g->pdl = 1; /* ft_gemm_tc_body's ft_grid_dependency_wait */
  if (v->split_k > 1) { /* fp32 slabs of the slices; the reduce kernel applies E */
    g->workspace_bytes = (size_t)v->split_k * (size_t)m * (size_t)n * sizeof(float);
    g->has_reduce = 1;
    g->rblock[0] = FT_AUX_BLOCK;
    const int64_t per_block = (int64_t)FT_AUX_BLOCK * FT_AUX_ELEMS;
    g->rgrid[0] = (unsigned)((m * n + per_block - 1) / per_block);
  }
  if (v->tc.streamk) { /* each block publishes at most one tile's raw sums; a flag per warpgroup */
    g->workspace_bytes = (size_t)blocks * (size_t)tc_bm(v) * (size_t)v->bn * sizeof(float);
    g->flag_bytes = (size_t)blocks * (size_t)v->tc.consumers * sizeof(unsigned);
  }
  if (v->tc.presplit) { /* x's M rows, then W's N rows, each of 2 Kp floats (big and small parts) */
    g->presplit_kp = (int)ft_presplit_kp(k);
    g->presplit_wrows = (int)n; /* the GEMM's: 2n for a gated pair */
    g->workspace_bytes = (size_t)(m + g->presplit_wrows) * 2 * (size_t)g->presplit_kp * sizeof(float);
  }
}

/* __launch_bounds__(threads, 1): ptxas starts every warp at 65536 / threads registers (168 for
 * 384 threads); setmaxnreg then moves them between the producer and the consumers. */
static int tc_reg_cap(const ft_variant *v) {
  const int cap = 65536 / tc_threads(v) / 8 * 8;
  return cap > 255 ? 255 : cap;
}

/* The variant as kernels_src/tc_config.cuh's FtTcCfg: its parameters and the regions sized above,
 * as enumerators (constants that NVRTC emits no storage for; flags 0 or 1). */
static void tc_defines(const ft_variant *v, ft_strbuf *b) {
  const tc_smem_regions r = tc_regions(v);
  ft_sb_puts(b, "struct FtTcCfg {\n  enum : int {\n");
  ft_sb_printf(b, "    dtype = %d, split3x = %d, fp8 = %d, chunk = %d, aregs = %d, dual = %d, presplit = %d,\n",
               fp32_storage(v) ? 0 : v->math == FT_MATH_FP16 ? 2 : 1, split(v), fp8(v), promoted(v) ? v->tc.chunk : 0,
               v->tc.aregs, v->tc.dual, v->tc.presplit);
  ft_sb_printf(b, "    bn = %d, consumers = %d, stages = %d, cluster = %d, group = %d,\n", v->bn, v->tc.consumers, v->stages,
               v->tc.cluster, v->swizzle);
  ft_sb_printf(b, "    pingpong = %d, split_k = %d, stream_k = %d, tma_store = %d, staged = %d, late = %d, defer = %d,\n"
               "    gated = %d,\n",
               v->tc.pingpong, tc_slices(v), v->tc.streamk, v->tc.tstore, v->tc.staged, v->tc.late, v->tc.defer,
               v->tc.gated);
  ft_sb_printf(b, "    small_bytes = %zu, box_bytes = %zu, staging_bytes = %zu, colv_bytes = %zu, colstat_bytes = %zu,\n"
               "    smem_bytes = %zu\n", r.small, r.boxes, r.staging, tc_colv_bytes(v), tc_colstat_bytes(v), tc_smem(v));
  ft_sb_puts(b, "  };\n};\n");
}

static const char *tc_reduce_kernel(const ft_variant *v) { return v->split_k > 1 ? "ft_tc_splitk_reduce" : NULL; }

/* ft_tc_splitk_reduce(WS, Y, M, N, ep) */
static ft_status tc_reduce_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  (void)v;
  FT_TRY(ft_arg_push(st, &io->ws, sizeof io->ws, err));
  FT_TRY(ft_arg_push(st, &io->y, sizeof io->y, err));
  FT_TRY(ft_arg_push(st, &io->m, sizeof io->m, err));
  FT_TRY(ft_arg_push(st, &io->n, sizeof io->n, err));
  return ft_arg_push(st, io->ep, sizeof(ft_ep_args_dev), err);
}

/* TMA reads x and W from 16-byte aligned bases; y takes pairs of elements per store, or TMA
 * stores (tstore). */
static void tc_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  (void)m, (void)n, (void)k;
  need[0] = need[1] = 16;
  need[2] = v->tc.tstore ? 16 : 2 * (size_t)osize(v);
}

/* src/gpu/tensormap.c's kinds of x and W: 3xtf32 loads raw fp32 (the kernel splits it), tf32 has TMA
 * round, fp8 loads bytes; and of y (fp8's is bf16). */
static int map_kind(const ft_variant *v) {
  return split(v) ? 0 : v->math == FT_MATH_TF32 ? 1 : v->math == FT_MATH_BF16 ? 2 : fp8(v) ? 4 : 3;
}
static int map_kind_y(const ft_variant *v) { return fp32_storage(v) ? 0 : fp8(v) ? 2 : map_kind(v); }

/* ft_gemm_tc(tma_x, tma_w, tma_y, Y, WS, FL, M, N, K, ep): the maps are encoded for the launch's
 * pointers (pre-split: the workspace's split x and W, src/gpu/launch.c) (the launch path keeps them while the pointers stay); tma_y, over Y in the storage
 * type (no tf32 rounding on a store), only for tstore, else zeros. A gated pair's N is the GEMM's
 * (2n: W the interleaved weight); the kernel writes y [M, N / 2]. */
static ft_status tc_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  const int n = (int)gemm_n(v, io->n);
  /* Pre-split: x and w are the workspace's split rows, 2 Kp floats each (the kernel's K is K). */
  const uint64_t cols = v->tc.presplit ? 2 * (uint64_t)ft_presplit_kp(io->k) : (uint64_t)io->k;
  const ft_tmap_desc tx = {io->x, map_kind(v), (uint64_t)io->m, cols, (uint32_t)tc_bm(v), (uint32_t)v->bk};
  const ft_tmap_desc tw = {io->w, map_kind(v), (uint64_t)n, cols, (uint32_t)(v->bn / v->tc.cluster),
                           (uint32_t)v->bk};
  const ft_tmap_desc ty = {io->y, map_kind_y(v), (uint64_t)io->m, (uint64_t)io->n, 64, (uint32_t)(128 / osize(v))};
  static const unsigned char no_map[128];
  FT_TRY(ft_arg_push_tmap(st, &tx, err));
  FT_TRY(ft_arg_push_tmap(st, &tw, err));
  FT_TRY(v->tc.tstore ? ft_arg_push_tmap(st, &ty, err) : ft_arg_push(st, no_map, sizeof no_map, err));
  FT_TRY(ft_arg_push(st, &io->y, sizeof io->y, err));
  FT_TRY(ft_arg_push(st, &io->ws, sizeof io->ws, err));
  FT_TRY(ft_arg_push(st, &io->flags, sizeof io->flags, err));
  FT_TRY(ft_arg_push(st, &io->m, sizeof io->m, err));
  FT_TRY(ft_arg_push(st, &n, sizeof n, err));
  FT_TRY(ft_arg_push(st, &io->k, sizeof io->k, err));
  return ft_arg_push(st, io->ep, sizeof(ft_ep_args_dev), err);
}

/* "tc_bm128_bn256_bk64_s4_c1_z8_p132_bf16", "tc_bm128_bn128_bk32_s4_c1_z8_p132_h16_3xtf32" */
static int tc_name(const ft_variant *v, char *buf, size_t len) {
  char chunk[24] = "", slices[16] = "", defer[16] = "";
  if (v->tc.defer) snprintf(defer, sizeof defer, "_de%d", v->tc.defer);
  if (v->tc.chunk)
    snprintf(chunk, sizeof chunk, "_h%d%s", v->tc.chunk,
             v->tc.aregs ? "r" : v->tc.dual ? "d" : v->tc.presplit ? "w" : "");
  if (v->split_k > 1) snprintf(slices, sizeof slices, "_k%d", v->split_k);
  return snprintf(buf, len, "tc_bm%d_bn%d_bk%d_s%d_c%d_z%d_p%d%s%s%s%s%s%s%s%s%s_%s", tc_bm(v), v->bn, v->bk, v->stages,
                  v->tc.cluster, v->swizzle, v->tc.grid, chunk, slices, v->tc.streamk ? "_sk" : "", v->tc.pingpong ? "_pp" : "",
                  v->tc.tstore ? "_ts" : "", v->tc.staged ? "_se" : "", v->tc.late ? "_lt" : "", defer,
                  v->tc.gated ? "_g" : "", ft_math_name((ft_math)v->math));
}

int ft__tc_partial_sum(const ft_variant *v, int64_t k) {
  if (!promoted(v) || v->bk <= 0) return 0;
  const int64_t tiles = (k + v->bk - 1) / v->bk, slices = v->split_k > 1 ? v->split_k : 1;
  const int64_t per = (tiles + slices - 1) / slices; /* k tiles of one slice (tc_sched.cuh) */
  return (int)((v->tc.chunk < per ? v->tc.chunk : per) * v->bk);
}

static int tc_stream_k(const ft_variant *v) { return v->tc.streamk; }
static int tc_pair(const ft_variant *v) { return v->tc.gated; }

const ft_json_key ft__tc_keys[] = {{"bn", offsetof(ft_variant, bn)},
                                        {"bk", offsetof(ft_variant, bk)},
                                        {"stages", offsetof(ft_variant, stages)},
                                        {"consumers", offsetof(ft_variant, tc.consumers)},
                                        {"cluster", offsetof(ft_variant, tc.cluster)},
                                        {"swizzle", offsetof(ft_variant, swizzle)},
                                        {"grid", offsetof(ft_variant, tc.grid)},
                                        {NULL, 0}};
const ft_json_key ft__tc_opt_keys[] = {
    {"layout", offsetof(ft_variant, family)},
    {"math", offsetof(ft_variant, math)},
    {"chunk", offsetof(ft_variant, tc.chunk)},
    {"aregs", offsetof(ft_variant, tc.aregs)},
    {"presplit", offsetof(ft_variant, tc.presplit)},
    {"dual", offsetof(ft_variant, tc.dual)},
    {"split_k", offsetof(ft_variant, split_k)},
    {"tstore", offsetof(ft_variant, tc.tstore)},
    {"streamk", offsetof(ft_variant, tc.streamk)},
    {"pingpong", offsetof(ft_variant, tc.pingpong)},
    {"staged", offsetof(ft_variant, tc.staged)},
    {"late", offsetof(ft_variant, tc.late)},
    {"defer", offsetof(ft_variant, tc.defer)},
    {"gated", offsetof(ft_variant, tc.gated)},
    {NULL, 0}};

const char *const ft__tc_sources[] = {
    "kernels_src/tc_config.cuh",   "kernels_src/wgmma_sm90.cuh",     "kernels_src/tc_ptx.cuh",
    "kernels_src/tc_sched.cuh",    "kernels_src/tc_matrix.cuh",    "kernels_src/tc_mainloop.cuh",
    "kernels_src/tc_epilogue.cuh", "kernels_src/tc_epilogue_tma.cuh", "kernels_src/tc_gated.cuh",
    "kernels_src/tc_reduce.cuh",   "kernels_src/tc_norm.cuh",      "kernels_src/tc_colstats.cuh",
    "kernels_src/gemm_tc.cu",      NULL};

const ft_family ft_family_tc = {
    .name = "tc",
    .kind = FT_VK_GEMM,
    .params_offset = offsetof(ft_variant, tc),
    .params_size = sizeof(ft_tc_params),
    .id = FT_FAMILY_TC,
    .suffix = "",
    .revision = 1,
    .arch_suffix = "a",
    .maths = (1u << FT_MATH_TF32) | (1u << FT_MATH_BF16) | (1u << FT_MATH_FP16) | (1u << FT_MATH_3XTF32) |
             (1u << FT_MATH_FP8),
    .sources = ft__tc_sources,
    .wants_colv_slot = 1,
    .pair = tc_pair,
    .kernel = "ft_gemm_tc",
    .keys = ft__tc_keys,
    .opt_keys = ft__tc_opt_keys,
    .variant_name = tc_name,
    .valid = tc_valid,
    .applicable = tc_applicable,
    .enumerate = ft__tc_enumerate,
    .reg_cap = tc_reg_cap,
    .geometry = tc_geometry,
    .defines = tc_defines,
    .partial_sum = ft__tc_partial_sum,
    .stream_k = tc_stream_k,
    .reduce_kernel = tc_reduce_kernel,
    .alignment = tc_alignment,
    .kernel_args = tc_kernel_args,
    .reduce_args = tc_reduce_args,
};
