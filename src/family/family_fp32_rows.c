/* Family fp32_rows: fp32 FFMA GEMM over [rows][bk] shared tiles, register or cp.async staging
 * (kernels_src/gemm_fp32.cu; layout 0, names without a suffix). GPU-free. */
#include <stdio.h>

#include "family_fp32.h"

static size_t rows_smem(const ft_variant *v) {
  const size_t bufs = v->stages > 1 ? (size_t)v->stages : 2;
  return bufs * (size_t)(v->bm + v->bn) * (size_t)(v->bk + 4) * sizeof(float);
}

static int ceil_div_int(int a, int b) { return (a + b - 1) / b; }

/* Registers per thread the kernel needs without spilling: accumulators, one k-group of the
 * larger operand's fragments, the register-path staging, addressing, and more for BK = 32
 * (ptxas keeps more shared-memory loads in flight). A model fitted to ptxas -v output
 * (tests/cpu/test_compile.c prints it); it sets __launch_bounds__ and prunes the space. */
static int rows_reg_estimate(const ft_variant *v) {
  const int threads = ft_fp32_threads(v);
  int staging = 0;
  if (v->stages == 1)
    staging = (ceil_div_int(v->bm * v->bk, threads) + ceil_div_int(v->bn * v->bk, threads));
  const int frag = 4 * (v->fp32.tm > v->fp32.tn ? v->fp32.tm : v->fp32.tn);
  return v->fp32.tm * v->fp32.tn + frag + 4 + staging + 28 + (v->bk == 32 ? 24 : 0);
}

static int rows_loads(const ft_variant *v) {
  const int threads = ft_fp32_threads(v);
  return ceil_div_int(v->bm * v->bk / v->vec, threads) + ceil_div_int(v->bn * v->bk / v->vec, threads);
}

static int rows_min_blocks(const ft_variant *v) {
  /* The 8x8 tile wants all the registers ptxas can give it, and narrow loads need addresses
   * the estimate does not count: a cap would make either spill. */
  if (v->fp32.tm * v->fp32.tn >= 64 || v->vec < 4) return 1;
  /* 25 % headroom over the estimate: ptxas spilled at caps close to it. */
  const int need = (rows_reg_estimate(v) * 5 / 4 + 7) / 8 * 8;
  int b = 65536 / (ft_fp32_threads(v) * need);
  if (b < 1) b = 1;
  if (b > 4) b = 4;
  return b;
}

static int rows_occ_regs(const ft_variant *v) {
  const int threads = ft_fp32_threads(v);
  if (v->fp32.tm * v->fp32.tn >= 64) return 65536 / threads < 255 ? 65536 / threads : 255; /* see min_blocks */
  return rows_reg_estimate(v);
}

static double rows_efficiency(const ft_variant *v) {
  return v->stages == 1 || v->bk == 8 ? 0.97 : 1.0; /* fewer loads in flight per barrier */
}

/* Above this the estimate says ptxas would spill even with all 255 registers. */
static const ft_fp32_traits k_rows = {rows_reg_estimate, rows_min_blocks, rows_occ_regs, rows_smem, rows_loads,
                                      190, rows_efficiency, 0};

static int rows_valid(const ft_variant *v, char *why, size_t whylen) {
  if (!ft_fp32_valid_common(&k_rows, v, why, whylen)) return 0;
  if ((v->fp32.tm != 4 && v->fp32.tm != 8) || (v->fp32.tn != 4 && v->fp32.tn != 8))
    FT_WHY("thread tile %dx%d: each must be 4 or 8", v->fp32.tm, v->fp32.tn);
  return ft_fp32_valid_threads(v, why, whylen);
}

static int rows_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                           char *why, size_t whylen) {
  return ft_fp32_applicable(&k_rows, v, m, n, k, lim, why, whylen);
}

static ft_status rows_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                               ft_space_sink *sink,
                                ft_err *err) {
  static const int tiles[] = {32, 64, 128, 256};
  static const int tts[][2] = {{8, 8}, {8, 4}, {4, 8}, {4, 4}};
  static const int bks[] = {8, 16, 32};
  (void)math; /* fp32 only */
  ft_variant v = {0};
  v.kind = FT_VK_GEMM;
  v.vec = ft_fp32_vec_for_k(k);
  for (size_t a = 0; a < 4; a++)
    for (size_t c = 0; c < 4; c++) {
      if (!ft_fp32_tile_plausible(tiles[a], tiles[c], m, n)) continue;
      for (size_t t = 0; t < 4; t++)
        for (size_t kk = 0; kk < 3; kk++)
          for (int st = 1; st <= 4; st++) {
            v.bm = tiles[a], v.bn = tiles[c], v.fp32.tm = tts[t][0], v.fp32.tn = tts[t][1];
            v.bk = bks[kk], v.stages = st, v.family = FT_FAMILY_FP32_ROWS;
            /* Each thread loads whole vectors: tiles divide evenly over the threads. */
            if ((v.bm * v.bk / v.vec) % ft_fp32_threads(&v) || (v.bn * v.bk / v.vec) % ft_fp32_threads(&v))
              continue;
            FT_TRY(ft_fp32_push_splits(&k_rows, &v, m, n, k, lim, sink, err));
          }
    }
  return FT_OK;
}

static void rows_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  ft_fp32_geometry(&k_rows, v, m, n, k, g);
}

static int rows_reg_cap(const ft_variant *v) { return ft_fp32_reg_cap(&k_rows, v); }

static void rows_defines(const ft_variant *v, ft_strbuf *b) { ft_fp32_defines(&k_rows, v, b); }

static int rows_name(const ft_variant *v, char *buf, size_t len) { return ft_fp32_name(v, "", buf, len); }

static const char *const k_rows_sources[] = {"kernels_src/gemm_common.cuh", "kernels_src/gemm_fp32.cu", NULL};

const ft_family ft_family_fp32_rows = {
    .name = "fp32_rows",
    .kind = FT_VK_GEMM,
    .params_offset = offsetof(ft_variant, fp32),
    .params_size = sizeof(ft_fp32_params),
    .id = FT_FAMILY_FP32_ROWS,
    .suffix = "",
    .revision = 1,
    .arch_suffix = "",
    .maths = 1u << FT_MATH_FP32,
    .sources = k_rows_sources,
    .kernel = "ft_gemm",
    .keys = ft_fp32_json_keys,
    .opt_keys = ft_fp32_json_opt_keys,
    .variant_name = rows_name,
    .valid = rows_valid,
    .applicable = rows_applicable,
    .enumerate = rows_enumerate,
    .reg_cap = rows_reg_cap,
    .geometry = rows_geometry,
    .defines = rows_defines,
    .stream_k = ft_fp32_stream_k,
    .reduce_kernel = ft_fp32_reduce_kernel,
    .alignment = ft_fp32_alignment,
    .kernel_args = ft_fp32_kernel_args,
    .reduce_args = ft_fp32_reduce_args,
};
