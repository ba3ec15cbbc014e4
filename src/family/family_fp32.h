/* What the two fp32 FFMA GEMM families (row tiles, warp tiles) share: the kernel ABI
 * (ft_gemm + ft_splitk_reduce / ft_streamk_fixup), the block-tile fields, split-K and stream-K
 * geometry, occupancy, the cost model and the enumeration of split factors. Each family passes
 * its own traits; nothing here asks which family it serves. GPU-free. */
#ifndef FT_FAMILY_FP32_H
#define FT_FAMILY_FP32_H

#include "family.h"

/* A family's resource rules, from its kernel source. */
typedef struct ft_fp32_traits {
  int (*reg_estimate)(const ft_variant *v); /* registers per thread without spilling */
  int (*min_blocks)(const ft_variant *v);   /* __launch_bounds__ minimum blocks per SM */
  int (*occ_regs)(const ft_variant *v);     /* registers per thread that bound occupancy */
  size_t (*smem)(const ft_variant *v);      /* dynamic shared memory, bytes */
  int (*loads)(const ft_variant *v);        /* global vector loads per thread and k tile */
  int reg_prune;                            /* above this estimate ptxas would spill */
  double (*efficiency)(const ft_variant *v); /* the family's factor in the cost model */
  int streamk;                              /* 1: the family offers stream-K */
} ft_fp32_traits;

int ft_fp32_threads(const ft_variant *v);
int ft_fp32_reg_cap(const ft_fp32_traits *t, const ft_variant *v);

/* The per-thread register cap ptxas derives from __launch_bounds__(threads, minb). */
int ft_fp32_launch_bounds_cap(int threads, int minb);

/* Common field rules of an FFMA GEMM variant (tile, vec, stages, split, swizzle, stream-K). */
int ft_fp32_valid_common(const ft_fp32_traits *t, const ft_variant *v, char *why, size_t whylen);
/* Threads per block (multiple of 32 in 32..1024): checked last, after the family's rules. */
int ft_fp32_valid_threads(const ft_variant *v, char *why, size_t whylen);

int ft_fp32_applicable(const ft_fp32_traits *t, const ft_variant *v, int64_t m, int64_t n, int64_t k,
                       const ft_device_limits *lim, char *why, size_t whylen);
void ft_fp32_geometry(const ft_fp32_traits *t, const ft_variant *v, int64_t m, int64_t n, int64_t k,
                      ft_launch_geom *g);
double ft_fp32_cost(const ft_fp32_traits *t, const ft_variant *v, int64_t m, int64_t n, int64_t k,
                    const ft_device_limits *lim);

/* Whether a block tile is worth trying for the shape; the widest vector width k allows. */
int ft_fp32_tile_plausible(int bm, int bn, int64_t m, int64_t n);
int ft_fp32_vec_for_k(int64_t k);

/* Pushes v with each worthwhile split factor and swizzle (and stream-K when the family has it),
 * if it fits the shape and device. */
ft_status ft_fp32_push_splits(const ft_fp32_traits *t, ft_variant *v, int64_t m, int64_t n, int64_t k,
                              const ft_device_limits *lim, ft_space_sink *sink, ft_err *err);

/* "gemm_bm64_bn128_bk16_t8x8_v4_s2_k1_z8" + "_sk<n>" with stream-K + suffix. */
int ft_fp32_name(const ft_variant *v, const char *suffix, char *buf, size_t len);
/* The JSON keys both write: tile fields, then "streamk" and "layout" when not 0. */
extern const ft_json_key ft_fp32_json_keys[], ft_fp32_json_opt_keys[];

/* The #defines both templates read (FT_BM ... FT_LAYOUT, FT_STREAMK). */
void ft_fp32_defines(const ft_fp32_traits *t, const ft_variant *v, ft_strbuf *b);

const char *ft_fp32_reduce_kernel(const ft_variant *v);
int ft_fp32_stream_k(const ft_variant *v);
void ft_fp32_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]);
ft_status ft_fp32_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err);
ft_status ft_fp32_reduce_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err);

#endif
