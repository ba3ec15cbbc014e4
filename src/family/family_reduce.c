/* Family reduce_pass: the row reductions of docs/EPILOGUE.md after cuBLAS's GEMM (strategy
 * "cublas+epilogue"; kernels_src/reduce_pass.cu, names "red_..."). One block per row. A one-value
 * reduction (rowsum, rowmean, rowmax, rowmin, logsumexp: y is [M]) runs in column chunks of
 * `cols`: cuBLAS writes a chunk of x W^T into the plan's workspace, the pass folds it into each
 * row's statistic, the last chunk writes y; so no M x N buffer exists unless a chunk is all of N
 * (which width is fastest is the tune's choice); the pools too (chunks of whole windows; y is
 * [M, N / w], or [M] for a row reduction of one). Softmax, log_softmax, groupnorm and batchnorm (y
 * is [M, N]) run in place on y after cuBLAS's GEMM into it (cols 0; batchnorm's blocks take
 * columns, not rows). Two more forms in place, beside that one, so that the tune picks by
 * measurement: the held form (team > 0; kernels_src/reduce_held.cu) gives each segment (a softmax's
 * row, a group) a team of threads holding it in registers, read once; the column form (tile > 0;
 * reduce_columns.cu) computes batchnorm's per-column partials over tiles of rows, merged in a fixed
 * order by the last block of each column strip, then applies them in a second kernel; with norm, the
 * form of softmax and log_softmax of batchnorm's values, the second kernel takes a row per block
 * instead, each value normalized by its column's statistics as it is read. GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family.h"
#include "kernel_abi.h"

static size_t elem_of(const ft_variant *v) { return ft_math_dtype((ft_math)v->math) == FT_DTYPE_F32 ? 4 : 2; }

static int red_valid(const ft_variant *v, char *why, size_t whylen) {
  if (v->red.block < 32 || v->red.block > 1024 || v->red.block % 32 != 0)
    FT_WHY("block %d: must be a multiple of 32 in 32..1024", v->red.block);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4 && (v->vec != 8 || elem_of(v) != 2))
    FT_WHY("vec %d: must be 1, 2 or 4 (8 with 16-bit elements)", v->vec);
  if (v->red.cols < 0 || v->red.cols % v->vec != 0) FT_WHY("cols %d: must be 0 or a positive multiple of vec", v->red.cols);
  if (v->bm || v->bn || v->bk || v->stages || v->split_k || v->swizzle)
    FT_WHY("reduction pass variant with GEMM fields");
  const ft_red_params *r = &v->red;
  if (r->team < 0 || r->tile < 0 || (r->team > 0 && r->tile > 0)) FT_WHY("team %d, tile %d: one form at most", r->team, r->tile);
  if (r->team == 0 && (r->held || r->groups)) FT_WHY("held %d, groups %d without a team", r->held, r->groups);
  if (r->team > 0) {
    if (r->team > 32 ? r->team % 32 != 0 : (r->team & (r->team - 1)) != 0)
      FT_WHY("team %d: a power of two up to 32, or whole warps", r->team);
    if (r->block < r->team || r->block % r->team != 0) FT_WHY("team %d does not divide block %d", r->team, r->block);
    if (r->held < 1 || r->held * v->vec > 64) FT_WHY("held %d: 1 to 64 elements a thread", r->held * v->vec);
    if (r->groups < 1 || r->groups > 65536) FT_WHY("groups %d: 1 to 65536", r->groups);
  }
  if (r->tile > 0 && (r->tile > 65536 || r->tile % (r->block / 32) != 0))
    FT_WHY("tile %d: at most 65536 rows, a multiple of the block's %d warps", r->tile, r->block / 32);
  if ((r->team > 0 || r->tile > 0) && r->cols) FT_WHY("cols %d: the held and column forms run in place", r->cols);
  if (r->norm < 0 || r->norm > 1 || (r->norm && r->tile <= 0)) FT_WHY("norm %d: 0, or 1 with the column form", r->norm);
  /* The GEMM's column partials exist only where family tc_pass's GEMM writes them (it checks its
   * pass with gemm 0, then this rule itself). */
  if (r->gemm) FT_WHY("gemm %d: the column partials of a GEMM's tiles come only with family tc_pass", r->gemm);
  return 1;
}

/* The column form: strips of 32 vectors of columns by tiles of rows. */
static int64_t col_strips(const ft_variant *v, int64_t n) { return (n + 32 * v->vec - 1) / (32 * v->vec); }
static int64_t col_tiles(const ft_variant *v, int64_t m) { return (m + v->red.tile - 1) / v->red.tile; }
/* The partials in the workspace: one per tile, or per 64 rows where the GEMM wrote them (gemm). */
#define RED_GEMM_PART_ROWS 64
static int64_t col_parts(const ft_variant *v, int64_t m) {
  return v->red.gemm ? (m + RED_GEMM_PART_ROWS - 1) / RED_GEMM_PART_ROWS : col_tiles(v, m);
}
/* The held form's blocks: block / team segments each. */
static int64_t held_blocks(const ft_variant *v, int64_t m) {
  const int64_t per = v->red.block / v->red.team;
  return (m * v->red.groups + per - 1) / per;
}

/* Every access is vec elements at a multiple of vec: the rows (N, or a chunk's width) too. */
static int red_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                          char *why, size_t whylen) {
  (void)k;
  if (v->red.block > lim->max_threads_per_block) FT_WHY("block %d > device limit %d", v->red.block, lim->max_threads_per_block);
  if (n % v->vec) FT_WHY("n %lld is not a multiple of vec %d", (long long)n, v->vec);
  if (m > 0x7fffffff) FT_WHY("m %lld: one block per row", (long long)m);
  if (v->red.team > 0) {
    const int64_t seg = n % v->red.groups ? 0 : n / v->red.groups;
    if (seg == 0 || seg % v->vec) FT_WHY("n %lld: not %d segments of whole vectors of %d", (long long)n, v->red.groups, v->vec);
    if ((int64_t)v->red.team * v->red.held * v->vec < seg)
      FT_WHY("segment of %lld values: more than a team of %d holds (%d each)", (long long)seg, v->red.team,
             v->red.held * v->vec);
    if (held_blocks(v, m) > 0x7fffffff) FT_WHY("m %lld: too many blocks", (long long)m);
  }
  if (v->red.tile > 0 && (col_tiles(v, m) > 65535 || col_strips(v, n) > 0x7fffffff))
    FT_WHY("m %lld: more than 65535 tiles of %d rows", (long long)m, v->red.tile);
  return 1;
}

static int red_reg_cap(const ft_variant *v);

/* The held form for a segment of seg values (the row, or a group) a row: for 1, 2, 4 and 8 vector
 * accesses a thread, the smallest team holding the segment (a power of two up to a warp, else whole
 * warps, at most 1024 threads), unless it would hold twice the segment or more, or hold more than
 * half the registers its block leaves a thread; a team of up to 64 threads in blocks of 256, a
 * wider one a block. */
static ft_status push_held(ft_variant v, int64_t m, int64_t n, int64_t k, int64_t seg, int groups,
                           const ft_device_limits *lim, ft_space_sink *sink, ft_err *err) {
  v.red.groups = groups;
  for (int held = 1; held <= 8; held *= 2) {
    const int64_t each = (int64_t)held * v.vec, need = (seg + each - 1) / each;
    int64_t team = 1;
    while (team < need && team < 32) team *= 2;
    if (team < need) team = (need + 31) / 32 * 32;
    if (team > 1024 || team * each >= 2 * seg || each > 64) continue;
    v.red.team = (int)team, v.red.held = held, v.red.block = team <= 64 ? 256 : (int)team;
    if (2 * each > red_reg_cap(&v)) continue;
    if (ft_variant_applicable(&v, m, n, k, lim, NULL, 0)) FT_TRY(ft_space_push(sink, &v, 0.01 * held, err));
  }
  return FT_OK;
}

/* Batchnorm's column form: tiles of 64 to 512 rows, blocks of 256 threads. */
static ft_status push_columns(ft_variant v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                              ft_space_sink *sink, ft_err *err) {
  static const int tiles[] = {128, 256, 512, 64};
  v.red.block = 256;
  for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
    v.red.tile = tiles[t];
    if (t > 0 && tiles[t] >= 2 * m) continue; /* one tile holds every row already */
    if (ft_variant_applicable(&v, m, n, k, lim, NULL, 0)) FT_TRY(ft_space_push(sink, &v, 0.01 * (double)(t + 1), err));
  }
  return FT_OK;
}

/* The chunk widths a one-value reduction tries: from 1024 columns (a workspace of 1024 M values)
 * up to all of N, each distinct width once. */
static ft_status red_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                               ft_space_sink *sink, ft_err *err) {
  const ft_epilogue *ep = ft_space_epilogue(sink);
  int groups = 0;
  const ft_ep_red r = ep ? ft_ep_reduction(ep, &groups) : FT_RED_NONE;
  if (r == FT_RED_NONE || ft_ep_check_kernels(ep, NULL) != FT_OK) return FT_OK;
  const int rowwise = r == FT_RED_SOFTMAX || r == FT_RED_LOG_SOFTMAX || r == FT_RED_GROUPNORM || r == FT_RED_BATCHNORM;
  const int norm = ft_ep_norm(ep, NULL) != FT_RED_NONE; /* softmax of batchnorm: the column form only */
  /* The span each access must divide: the row, or a group of it. */
  const int64_t span = r == FT_RED_GROUPNORM && groups > 0 ? n / groups : n;
  /* A pool's chunks are whole windows (wide 1024 or more), the last one too, so that codegen can
   * check it; its windows are read value by value (vec 1). */
  int w = 1;
  const int pooled = ft_ep_pool(ep, &w, NULL) != FT_RED_NONE;
  static const int blocks[] = {256, 512, 128, 1024};
  const size_t nblocks = ft_space_full(sink) ? 4 : 2;
  ft_variant v = {0};
  v.kind = FT_VK_EPILOGUE, v.family = FT_FAMILY_REDUCE_PASS, v.math = (int)math;
  v.vec = pooled ? 1 : ft_math_dtype(math) == FT_DTYPE_F32 ? 4 : 8; /* 16 bytes, or the widest that divides */
  while (v.vec > 1 && (n % v.vec || span % v.vec)) v.vec /= 2;
  const int64_t unit = pooled ? w : v.vec, first = (1024 + unit - 1) / unit * unit;
  for (size_t b = 0; b < nblocks; b++) {
    v.red.block = blocks[b];
    if (norm) {
      v.red.norm = 1;
      if (b == 0) FT_TRY(push_columns(v, m, n, k, lim, sink, err));
      continue;
    }
    if (rowwise) {
      v.red.cols = 0;
      if (ft_variant_applicable(&v, m, n, k, lim, NULL, 0)) FT_TRY(ft_space_push(sink, &v, (double)b, err));
      if (b == 0 && r == FT_RED_BATCHNORM) FT_TRY(push_columns(v, m, n, k, lim, sink, err));
      if (b == 0 && r != FT_RED_BATCHNORM) FT_TRY(push_held(v, m, n, k, span, r == FT_RED_GROUPNORM ? groups : 1, lim, sink, err));
      continue;
    }
    for (int64_t cols = first;; cols *= 4) {
      v.red.cols = cols >= n ? (int)((n + unit - 1) / unit * unit) : (int)cols;
      /* Wider chunks: fewer GEMM calls, each nearer cuBLAS's whole-matrix speed. */
      if (ft_variant_applicable(&v, m, n, k, lim, NULL, 0))
        FT_TRY(ft_space_push(sink, &v, (double)b + 1.0 / (double)(v.red.cols / 1024 + 1), err));
      if (cols >= n) break;
    }
  }
  return FT_OK;
}

static int64_t chunk_of(const ft_variant *v, int64_t n) { return v->red.cols < n ? v->red.cols : n; }

/* The chunk's x W^T, then each row's statistic (a float2), 256-byte aligned. */
static size_t stats_offset(const ft_variant *v, int64_t m, int64_t n) {
  return ((size_t)m * (size_t)chunk_of(v, n) * elem_of(v) + 255) / 256 * 256;
}

/* The column form's workspace: partials x n (float2 each), then n statistics. With gemm the first
 * kernel only merges the GEMM's partials: a block per 32 columns (a lane each), no counters. */
static void col_geometry(const ft_variant *v, int64_t m, int64_t n, ft_launch_geom *g) {
  g->grid[0] = g->rgrid[0] = (unsigned)col_strips(v, n);
  g->grid[1] = g->rgrid[1] = (unsigned)col_tiles(v, m);
  g->rblock[0] = (unsigned)v->red.block, g->rblock[1] = g->rblock[2] = 1;
  g->has_reduce = 1;
  g->workspace_bytes = (size_t)(col_parts(v, m) + 1) * (size_t)n * 2 * sizeof(float);
  if (v->red.gemm) {
    g->grid[0] = (unsigned)((n + 31) / 32), g->grid[1] = 1;
    return;
  }
  g->flag_bytes = (size_t)col_strips(v, n) * sizeof(unsigned);
  g->flags_count_only = 1;
}

static void red_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  (void)k;
  if (v->red.block <= 0) return;
  g->block[0] = (unsigned)v->red.block;
  g->grid[0] = (unsigned)m;
  if (v->red.team > 0) g->grid[0] = (unsigned)held_blocks(v, m);
  if (v->red.tile > 0) col_geometry(v, m, n, g);
  if (v->red.norm) g->rgrid[0] = (unsigned)m, g->rgrid[1] = 1; /* then a block per row */
  if (v->red.cols > 0) {
    g->chunk_cols = (int)chunk_of(v, n);
    g->workspace_bytes = stats_offset(v, m, n) + (size_t)m * 2 * sizeof(float);
  }
}

static int red_reg_cap(const ft_variant *v) {
  const int cap = 65536 / (v->red.block > 0 ? v->red.block : 1) / 8 * 8;
  return cap > 255 ? 255 : cap;
}

static void red_defines(const ft_variant *v, ft_strbuf *b) {
  ft_sb_printf(b, "#define FT_BLOCK %d\n#define FT_VEC %d\n", v->red.block, v->vec);
  ft_sb_printf(b, "#define FT_RED_FORM %d\n#define FT_RED_TEAM %d\n#define FT_RED_HELD %d\n#define FT_RED_GROUPS %d\n"
               "#define FT_RED_TILE %d\n#define FT_RED_GEMM %d\n", v->red.team > 0 ? 1 : v->red.norm ? 3 : v->red.tile > 0 ? 2 : 0,
               v->red.team, v->red.held, v->red.groups, v->red.tile, v->red.gemm);
}

static const char *red_reduce_kernel(const ft_variant *v) { return v->red.tile > 0 ? "ft_reduce_apply" : NULL; }

/* cuBLAS reads x and W (a chunk's W rows start at a multiple of k); y: one element, or vec. */
static void red_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  (void)m, (void)n, (void)k;
  need[0] = need[1] = elem_of(v);
  need[2] = v->red.cols > 0 ? elem_of(v) : elem_of(v) * (size_t)v->vec;
}

/* ft_reduce_pass(src, ld, y, stats, M, N, col0, ncols, ep): a chunk from the workspace, or y in
 * place. */
static ft_status red_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  const int chunked = v->red.cols > 0;
  const void *src = chunked ? io->ws : io->y;
  void *stats = chunked ? (char *)io->ws + stats_offset(v, io->m, io->n) : v->red.tile > 0 ? io->ws : NULL;
  const int ld = chunked ? io->ncols : io->n, col0 = chunked ? io->col0 : 0, ncols = chunked ? io->ncols : io->n;
  FT_TRY(ft_arg_push(st, &src, sizeof src, err));
  FT_TRY(ft_arg_push(st, &ld, sizeof ld, err));
  FT_TRY(ft_arg_push(st, &io->y, sizeof io->y, err));
  FT_TRY(ft_arg_push(st, &stats, sizeof stats, err));
  FT_TRY(ft_arg_push(st, &io->m, sizeof io->m, err));
  FT_TRY(ft_arg_push(st, &io->n, sizeof io->n, err));
  FT_TRY(ft_arg_push(st, &col0, sizeof col0, err));
  FT_TRY(ft_arg_push(st, &ncols, sizeof ncols, err));
  FT_TRY(ft_arg_push(st, io->ep, sizeof(ft_ep_args_dev), err));
  return ft_arg_push(st, &io->flags, sizeof io->flags, err);
}

/* The column form's ft_reduce_apply(y, ws, M, N, ep). */
static ft_status red_reduce_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  (void)v;
  FT_TRY(ft_arg_push(st, &io->y, sizeof io->y, err));
  FT_TRY(ft_arg_push(st, &io->ws, sizeof io->ws, err));
  FT_TRY(ft_arg_push(st, &io->m, sizeof io->m, err));
  FT_TRY(ft_arg_push(st, &io->n, sizeof io->n, err));
  return ft_arg_push(st, io->ep, sizeof(ft_ep_args_dev), err);
}

/* "red_b256_v8_c2048_bf16" (chunks of 2048 columns), "red_b256_v8_bf16" (softmax in place),
 * "red_b256_v8_t4_h1_g256_bf16" (held: teams of 4, one access each, 256 groups a row),
 * "red_b256_v8_r128_bf16" (batchnorm's column form, tiles of 128 rows), "red_b256_v8_r128_n_bf16" (softmax
 * of batchnorm: its column statistics over tiles of 128 rows, then a block per row), "..._r128_gp_bf16"
 * (after family tc_pass's GEMM, which wrote the column partials). */
static int red_name(const ft_variant *v, char *buf, size_t len) {
  char cols[48] = "";
  if (v->red.cols) snprintf(cols, sizeof cols, "_c%d", v->red.cols);
  if (v->red.team) snprintf(cols, sizeof cols, "_t%d_h%d_g%d", v->red.team, v->red.held, v->red.groups);
  if (v->red.tile) snprintf(cols, sizeof cols, "_r%d%s%s", v->red.tile, v->red.norm ? "_n" : "", v->red.gemm ? "_gp" : "");
  return snprintf(buf, len, "red_b%d_v%d%s%s%s", v->red.block, v->vec, cols, v->math ? "_" : "",
                  v->math ? ft_math_name((ft_math)v->math) : "");
}

static const ft_json_key k_red_keys[] = {{"layout", offsetof(ft_variant, family)},
                                         {"block", offsetof(ft_variant, red.block)},
                                         {"vec", offsetof(ft_variant, vec)},
                                         {NULL, 0}};
static const ft_json_key k_red_opt_keys[] = {
    {"math", offsetof(ft_variant, math)},     {"cols", offsetof(ft_variant, red.cols)},
    {"team", offsetof(ft_variant, red.team)}, {"held", offsetof(ft_variant, red.held)},
    {"groups", offsetof(ft_variant, red.groups)}, {"tile", offsetof(ft_variant, red.tile)},
    {"norm", offsetof(ft_variant, red.norm)}, {"gemm", offsetof(ft_variant, red.gemm)}, {NULL, 0}};

static const char *const k_red_sources[] = {"kernels_src/reduce_pass.cu", "kernels_src/reduce_held.cu",
                                           "kernels_src/reduce_columns.cu", "kernels_src/reduce_entry.cu", NULL};

const ft_family ft_family_reduce_pass = {
    .name = "reduce_pass",
    .kind = FT_VK_EPILOGUE,
    .params_offset = offsetof(ft_variant, red),
    .params_size = sizeof(ft_red_params),
    .id = FT_FAMILY_REDUCE_PASS,
    .suffix = "",
    .revision = 2,
    .arch_suffix = "",
    .maths = (1u << FT_MATH_FP32) | (1u << FT_MATH_TF32) | (1u << FT_MATH_BF16) | (1u << FT_MATH_FP16) |
             (1u << FT_MATH_3XTF32),
    .sources = k_red_sources,
    .kernel = "ft_reduce_pass",
    .gemm_before = ft_family_after_cublas,
    .reduces = 1,
    .keys = k_red_keys,
    .opt_keys = k_red_opt_keys,
    .variant_name = red_name,
    .valid = red_valid,
    .applicable = red_applicable,
    .enumerate = red_enumerate,
    .reg_cap = red_reg_cap,
    .geometry = red_geometry,
    .defines = red_defines,
    .reduce_kernel = red_reduce_kernel,
    .alignment = red_alignment,
    .kernel_args = red_kernel_args,
    .reduce_args = red_reduce_args,
};
