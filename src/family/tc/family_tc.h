/* The tensor-core family's rules that both its files need (src/family/tc/family_tc.c: validity,
 * applicability, geometry, the kernel's configuration and arguments; src/family/tc/family_tc_space.c: the
 * cost model and the enumeration). Internal to the family. GPU-free. */
#ifndef FT_FAMILY_TC_H
#define FT_FAMILY_TC_H

#include <stddef.h>
#include <stdint.h>

#include "family.h"

#define TC_MAX_STAGES 12
#define TC_MAX_GRID 4096

static inline int fp32_storage(const ft_variant *v) { return v->math == FT_MATH_TF32 || v->math == FT_MATH_3XTF32; }
static inline int fp8(const ft_variant *v) { return v->math == FT_MATH_FP8; }
/* Bytes of an element of x and W (esize), of y (osize): they differ in fp8 (e4m3 in, bf16 out). */
static inline int esize(const ft_variant *v) { return fp32_storage(v) ? 4 : fp8(v) ? 1 : 2; }
static inline int osize(const ft_variant *v) { return fp32_storage(v) ? 4 : 2; }
static inline int split(const ft_variant *v) { return v->math == FT_MATH_3XTF32; }
/* Partial sums promoted into fp32 registers every chunk k tiles: 3xtf32 and fp8. */
static inline int promoted(const ft_variant *v) { return split(v) || fp8(v); }
/* The family table's partial_sum, shared by tc, tc_pass, tc_reduce and tc_norm (their variants
 * carry tc's block): chunk k tiles of bk products in 3xtf32 and fp8, at most a split-K slice's k
 * tiles (the sum restarts with each slice), 0 otherwise. */
int ft__tc_partial_sum(const ft_variant *v, int64_t k);
/* Tile rows: the consumers' 64 each, or a ping-pong consumer's m64 blocks. */
static inline int tc_bm(const ft_variant *v) { return 64 * (v->tc.pingpong ? v->tc.pingpong : v->tc.consumers); }
static inline int tc_threads(const ft_variant *v) { return 128 * (v->tc.consumers + 1); }

/* The shared-memory regions of a variant, as kernels_src/tc_config.cuh checks and gemm_tc.cu lays
 * them out: the ring of stages (pre-split 3xtf32: each holds the big and the small parts of both
 * tiles), 3xtf32's three small buffers of a stage's size (of W's tile with x in registers; none
 * pre-split), the TMA-store epilogue's two 8 KiB boxes per consumer, the staged epilogue's
 * 16 KiB per consumer in 16-bit storage (fp32 stages in the boxes), two mbarriers per stage,
 * stream-K's 32-byte schedule, 1024 B to align the ring; then colv bytes per consumer. */
typedef struct tc_smem_regions {
  size_t stage, small, boxes, staging, base;
} tc_smem_regions;

static inline tc_smem_regions tc_regions(const ft_variant *v) {
  tc_smem_regions r;
  r.stage = (size_t)(tc_bm(v) + v->bn) * 128 * (v->tc.presplit ? 2 : 1);
  r.small = !split(v) || v->tc.presplit ? 0 : 3 * (v->tc.aregs ? (size_t)v->bn * 128 : r.stage);
  r.boxes = v->tc.tstore ? 2 * (size_t)v->tc.consumers * 64 * 128 : 0;
  r.staging = v->tc.staged && osize(v) == 2 ? (size_t)v->tc.consumers * 64 * 256 : 0;
  r.base = (size_t)v->stages * r.stage + r.small + r.boxes + r.staging + 16 * (size_t)v->stages +
           (v->tc.streamk ? 32 : 0) + 1024;
  return r;
}

static inline size_t tc_smem_base(const ft_variant *v) { return tc_regions(v).base; }

/* Every sm_90 device's opt-in shared memory per block (227 KiB): the family compiles for sm_90a
 * only, and the staging below is left out where it would not fit rather than cost a stage. */
#define TC_SMEM_OPTIN 232448

/* Family tc_pass's batchnorm partials (colstats): each consumer's [4][bn] float2, after the
 * column-vector slices (8-byte aligned there: the regions before are multiples of 8). */
static inline size_t tc_colstat_bytes(const ft_variant *v) {
  return v->tc.colstats ? (size_t)v->tc.consumers * 4 * (size_t)v->bn * 8 : 0;
}

/* Bytes per consumer for the tile's slice of the epilogue's first column vector (BN elements),
 * copied to shared memory during the k loop so that E reads it there, not from L2 after the
 * loop (gemm_tc.cu, FT_COLV_STAGE): the early E of the cooperative TMA-store form only (not
 * deferred). 0 where it does not apply or does not fit. */
static inline size_t tc_colv_bytes(const ft_variant *v) {
  /* Not with deferred E, which reads the previous tile's slice while the next one's would land. */
  if (!v->tc.tstore || v->tc.staged || v->tc.late || v->tc.defer || v->tc.pingpong || v->tc.streamk || v->split_k > 1)
    return 0;
  if (fp8(v)) return 0; /* the first column vector may be an fp32 scale: E reads it from L2 */
  const size_t per = (size_t)v->bn * (size_t)osize(v);
  return tc_smem_base(v) + (size_t)v->tc.consumers * per + tc_colstat_bytes(v) <= TC_SMEM_OPTIN ? per : 0;
}

static inline size_t tc_smem(const ft_variant *v) {
  return tc_smem_base(v) + (size_t)v->tc.consumers * tc_colv_bytes(v) + tc_colstat_bytes(v);
}

#define TC_MAX_CHUNK 4096
#define TC_PRESPLIT_MAX_GIB 4 /* a pre-split variant's workspace: x's and W's split rows */
#define TC_MAX_SPLIT 16

static inline int tc_slices(const ft_variant *v) { return v->split_k > 1 ? v->split_k : 1; }

/* Tile units of (m, n): tiles, or pairs of tiles of adjacent rows with clusters of 2 (split-K's
 * slices not counted). */
static inline int64_t tc_units(const ft_variant *v, int64_t m, int64_t n) {
  const int64_t tiles_m = (m + tc_bm(v) - 1) / tc_bm(v), tiles_n = (n + v->bn - 1) / v->bn;
  return (tiles_m + v->tc.cluster - 1) / v->tc.cluster * tiles_n;
}

/* Stream-K's split of the tiles (units) over the blocks' unit slots G = grid / cluster: `waves`
 * whole waves of units, then the last partial wave's `sk` units shared evenly, k tile by k tile,
 * by all G slots (as gemm_tc.cu's ft_work walks it). */
typedef struct tc_sk_split {
  int64_t units, slots, waves, sk, ktiles, share; /* share: k tiles of the partial wave per slot (rounded down) */
} tc_sk_split;

static inline tc_sk_split tc_sk(const ft_variant *v, int64_t m, int64_t n, int64_t k) {
  tc_sk_split s;
  s.units = tc_units(v, m, n);
  s.slots = v->tc.grid / v->tc.cluster;
  s.waves = s.slots > 0 ? s.units / s.slots : 0;
  s.sk = s.units - s.waves * s.slots;
  s.ktiles = (k + v->bk - 1) / v->bk;
  s.share = s.slots > 0 ? s.sk * s.ktiles / s.slots : 0;
  return s;
}


/* Pushes every variant of the family for (m, n, k) in mode math into sink (family_tc_space.c). */
ft_status ft__tc_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                           ft_space_sink *sink, ft_err *err);
/* The same for family tc_reduce (src/family/tc/family_tc_reduce.c, FT_FAMILY_TC_REDUCE): the forms that
 * store no y (no TMA stores, split-K or stream-K), for an epilogue that is a one-value row reduction. */
ft_status ft__tc_enumerate_reduce(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                                  ft_space_sink *sink, ft_err *err);
/* The same for family tc_norm (src/family/tc/family_tc_norm.c, FT_FAMILY_TC_NORM): tc_reduce's forms,
 * for an epilogue whose reduction is groupnorm with groups of 2, 4 or a multiple of 8 columns. */
ft_status ft__tc_enumerate_norm(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                                ft_space_sink *sink, ft_err *err);
/* Whether a group of w columns can be held in family tc's tile of bn columns (tc_norm.cuh). */
static inline int tc_norm_width_ok(int w, int bn) { return (w == 2 || w == 4 || (w > 0 && w % 8 == 0)) && bn % w == 0; }
/* Whether family tc_reduce fuses ep's reduction: a one-value row reduction of the elements (no
 * pool inside it) whose kernels exist. Family tc_pass leaves those to it. */
int ft__tc_fuses_reduction(const ft_epilogue *ep);
/* Family tc_pass (src/family/tc/family_tc_pass.c): family tc's GEMM, then the reduction pass. */
/* Family tc's JSON keys (family tc_reduce has the same). */
extern const ft_json_key ft__tc_keys[], ft__tc_opt_keys[];
/* Family tc's kernel files (family tc_pass's GEMM is that kernel). */
extern const char *const ft__tc_sources[];
/* g's workspace of own bytes (a reduction family's statistics or pass buffers), then family tc's
 * pre-split x and W as family tc's geometry tc lays them out (its workspace, rows of 2 Kp floats)
 * from the next 256-byte boundary on; tc may be g itself. */
static inline void tc_presplit_after(ft_launch_geom *g, size_t own, const ft_launch_geom *tc) {
  const int kp = tc->presplit_kp, wrows = tc->presplit_wrows;
  const size_t split = tc->workspace_bytes;
  g->presplit_kp = kp, g->presplit_wrows = wrows;
  g->presplit_off = (own + 255) / 256 * 256;
  g->workspace_bytes = g->presplit_off + split;
}

#endif
