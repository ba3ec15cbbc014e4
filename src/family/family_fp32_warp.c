/* Family fp32_warp: warp-tiled fp32 FFMA GEMM over k-major tiles, 8x8 / 16x8 / 8x16 thread
 * tiles with double-buffered fragments, optional stream-K (kernels_src/gemm_fp32_warp.cu;
 * layout 3, names ending in "_w"). GPU-free. */
#include <stdio.h>

#include "family_fp32.h"

/* Lanes of a warp along m (4 or 8) and the warp tile, as the kernel derives them from FT_LM
 * (written by codegen): 8 lanes along m when tn > tm keeps the warp tile square. */
static int lanes_m(const ft_variant *v) { return v->fp32.tn > v->fp32.tm ? 8 : 4; }
static int warp_tile_m(const ft_variant *v) { return lanes_m(v) * v->fp32.tm; }
static int warp_tile_n(const ft_variant *v) { return (32 / lanes_m(v)) * v->fp32.tn; }

/* Double-buffered k-major As[bk][bm + 4], Bs[bk][bn + 4]. */
static size_t warp_smem(const ft_variant *v) {
  return 2 * (size_t)v->bk * (size_t)(v->bm + 4 + v->bn + 4) * sizeof(float);
}

static int ceil_div_int(int a, int b) { return (a + b - 1) / b; }

/* Registers per thread without spilling (fitted to ptxas -v, see tests/cpu/test_compile.c): two
 * fragment sets of tm + tn, staging in whole 4-float chunks. */
static int warp_reg_estimate(const ft_variant *v) {
  const int threads = ft_fp32_threads(v);
  const int staging = 4 * (ceil_div_int(v->bm * v->bk / 4, threads) + ceil_div_int(v->bn * v->bk / 4, threads));
  /* stages 2 keeps the staging live across the whole tile (ptxas cannot sink the loads);
   * 8x8 tiles at bk 16 measured 156-180 (ptxas keeps more shared loads in flight), and
   * with stages 2 they spilled at 255 whenever 2 or more blocks were to fit (so: prune) */
  const int bk16_8x8 = v->fp32.tm * v->fp32.tn == 64 && v->bk == 16 ? (v->stages == 2 ? 96 : 32) : 0;
  return v->fp32.tm * v->fp32.tn + 2 * (v->fp32.tm + v->fp32.tn) + staging * v->stages + 24 + bk16_8x8;
}

/* 4-float chunks, each 4 / vec loads. */
static int warp_loads(const ft_variant *v) {
  const int threads = ft_fp32_threads(v);
  return (ceil_div_int(v->bm * v->bk / 4, threads) + ceil_div_int(v->bn * v->bk / 4, threads)) * (4 / v->vec);
}

/* The most blocks per SM whose cap still holds the estimate (128-thread 16x8 tiles: 2, cap
 * 255; 256-thread 8x8 bk 8 tiles: 2, cap 128), at most 8 and 2048 threads. */
static int warp_min_blocks(const ft_variant *v) {
  const int threads = ft_fp32_threads(v);
  const int need = warp_reg_estimate(v);
  int b = 1;
  while (b < 8 && (b + 1) * threads <= 2048 && ft_fp32_launch_bounds_cap(threads, b + 1) >= need) b++;
  return b;
}

/* ptxas may use all of the cap __launch_bounds__ gives. */
static int warp_occ_regs(const ft_variant *v) {
  return ft_fp32_launch_bounds_cap(ft_fp32_threads(v), warp_min_blocks(v));
}

/* Faster than the best [rows] tiles, given 8 warps per SM; stages 2 a little faster again
 * when it fits (bk 8) (docs/BENCHMARKS.md, "Why the search space is what it is"). */
static double warp_efficiency(const ft_variant *v) { return v->stages == 2 ? 1.10 : 1.08; }

/* Up to 232 registers fit (the warp tile keeps fewer values live per FFMA); 240 spilled
 * 56-184 B. */
static const ft_fp32_traits k_warp = {warp_reg_estimate, warp_min_blocks, warp_occ_regs, warp_smem, warp_loads,
                                      232, warp_efficiency, 1};

static int warp_valid(const ft_variant *v, char *why, size_t whylen) {
  if (!ft_fp32_valid_common(&k_warp, v, why, whylen)) return 0;
  if ((v->fp32.tm != 8 && v->fp32.tm != 16) || (v->fp32.tn != 8 && v->fp32.tn != 16) || v->fp32.tm * v->fp32.tn > 128)
    FT_WHY("layout 3: thread tile %dx%d must be 8x8, 16x8 or 8x16", v->fp32.tm, v->fp32.tn);
  if (v->stages != 1 && v->stages != 2) FT_WHY("layout 3 stages %d: must be 1 or 2", v->stages);
  if (v->bk == 32) FT_WHY("layout 3 bk 32: must be 8 or 16");
  if (ft_fp32_threads(v) > 256) /* 512 threads cap registers at 128: the 8x8 tile spills */
    FT_WHY("layout 3: %d threads per block (block tile %dx%d over %dx%d): at most 256", ft_fp32_threads(v), v->bm,
           v->bn, v->fp32.tm, v->fp32.tn);
  if (v->bm % warp_tile_m(v) || v->bn % warp_tile_n(v))
    FT_WHY("layout 3: block tile %dx%d not whole warp tiles of %dx%d", v->bm, v->bn, warp_tile_m(v), warp_tile_n(v));
  return ft_fp32_valid_threads(v, why, whylen);
}

static int warp_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                           char *why, size_t whylen) {
  return ft_fp32_applicable(&k_warp, v, m, n, k, lim, why, whylen);
}

/* 16x8, 8x16 and 8x8 thread tiles over 64..256 block tiles, loads issued one or two tiles
 * ahead. */
static ft_status warp_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                               ft_space_sink *sink,
                                ft_err *err) {
  static const int tiles[] = {32, 64, 128, 256};
  static const int bks[] = {8, 16};
  static const int wtts[][2] = {{16, 8}, {8, 16}, {8, 8}};
  (void)math; /* fp32 only */
  ft_variant v = {0};
  v.kind = FT_VK_GEMM;
  v.vec = ft_fp32_vec_for_k(k);
  v.split_k = 1, v.swizzle = 1; /* checked by ft_variant_valid before push_splits sets them */
  for (size_t a = 1; a < 4; a++)
    for (size_t c = 1; c < 4; c++) {
      if (!ft_fp32_tile_plausible(tiles[a], tiles[c], m, n)) continue;
      for (size_t t = 0; t < 3; t++)
        for (size_t kk = 0; kk < 2; kk++) {
          v.bm = tiles[a], v.bn = tiles[c], v.fp32.tm = wtts[t][0], v.fp32.tn = wtts[t][1];
          for (int st = 1; st <= 2; st++) {
            v.bk = bks[kk], v.stages = st, v.family = FT_FAMILY_FP32_WARP;
            if (!ft_variant_valid(&v, NULL, 0)) continue;
            FT_TRY(ft_fp32_push_splits(&k_warp, &v, m, n, k, lim, sink, err));
          }
        }
    }
  return FT_OK;
}

static void warp_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  ft_fp32_geometry(&k_warp, v, m, n, k, g);
}

static int warp_reg_cap(const ft_variant *v) { return ft_fp32_reg_cap(&k_warp, v); }

static void warp_defines(const ft_variant *v, ft_strbuf *b) {
  ft_fp32_defines(&k_warp, v, b);
  ft_sb_printf(b, "#define FT_LM %d\n", lanes_m(v));
}

static int warp_name(const ft_variant *v, char *buf, size_t len) { return ft_fp32_name(v, "_w", buf, len); }

static const char *const k_warp_sources[] = {"kernels_src/gemm_common.cuh", "kernels_src/gemm_fp32_warp.cu", NULL};

const ft_family ft_family_fp32_warp = {
    .name = "fp32_warp",
    .kind = FT_VK_GEMM,
    .params_offset = offsetof(ft_variant, fp32),
    .params_size = sizeof(ft_fp32_params),
    .id = FT_FAMILY_FP32_WARP,
    .suffix = "_w",
    .revision = 1,
    .arch_suffix = "",
    .maths = 1u << FT_MATH_FP32,
    .sources = k_warp_sources,
    .kernel = "ft_gemm",
    .keys = ft_fp32_json_keys,
    .opt_keys = ft_fp32_json_opt_keys,
    .variant_name = warp_name,
    .valid = warp_valid,
    .applicable = warp_applicable,
    .enumerate = warp_enumerate,
    .reg_cap = warp_reg_cap,
    .geometry = warp_geometry,
    .defines = warp_defines,
    .stream_k = ft_fp32_stream_k,
    .reduce_kernel = ft_fp32_reduce_kernel,
    .alignment = ft_fp32_alignment,
    .kernel_args = ft_fp32_kernel_args,
    .reduce_args = ft_fp32_reduce_args,
};
