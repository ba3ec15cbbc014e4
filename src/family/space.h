/* The variant space: kernel configurations, their constraints, names and JSON form. What
 * differs between kernel families is asked of the family table (src/family/family.h). GPU-free. */
#ifndef FT_SPACE_H
#define FT_SPACE_H

#include "common.h"
#include "epilogue.h" /* ft_ep_cost */
#include "fusedtune_tool.h" /* ft_strategy */

typedef enum ft_variant_kind {
  FT_VK_GEMM = 0,    /* fused GEMM + epilogue (strategy "fused") */
  FT_VK_EPILOGUE = 1 /* standalone epilogue pass y = E(y) (strategy "cublas+epilogue") */
} ft_variant_kind;

/* Each family's own parameters, read by its file (and red.cols by codegen's reduction text); JSON
 * keys keep their names. A family leaves the other families' blocks zero (ft_variant_valid). */

/* The fp32 GEMM families (fp32_rows, fp32_warp: src/family_fp32*.c). */
typedef struct ft_fp32_params {
  int tm, tn;  /* register tile per thread: threads = (bm / tm) * (bn / tn) */
  int streamk; /* > 0 = a grid of this many blocks sharing the (tile, k tile) units evenly (shared tiles
                * summed by a fixup kernel that applies E), named "_sk<n>"; 0 = one block per tile and
                * split-K slice */
} ft_fp32_params;

/* The tensor-core family (src/family_tc*.c, kernels_src/tc_*.cuh). */
typedef struct ft_tc_params {
  int cluster;   /* thread-block cluster size along the shared operand */
  int consumers; /* consumer warpgroups (block rows = 64 consumers, or 64 pingpong) */
  int grid;      /* persistent grid size in blocks */
  int chunk;     /* 3xtf32 and fp8: k tiles per tensor-core partial sum before it is added into the
                  * fp32 accumulator (0 in other modes) */
  int aregs;     /* 3xtf32: 1 = x split in registers (wgmma A from registers, BN <= 64), 0 = split in
                  * shared memory */
  int presplit;  /* 3xtf32: 1 = x and W split into big and small tf32 parts before the kernel, in the
                  * plan's workspace (W once, x each call: geometry's presplit_kp), so the kernel only
                  * loads and multiplies; named "_h<chunk>w"; 0 = split in the kernel */
  int dual;      /* fp8: 1 = two partial sums taking turns by chunk, each added into the fp32 sums while
                  * the next chunk's wgmma run (BN <= 128), named "_h<chunk>d"; 0 = one, the pipeline
                  * drained at each promotion */
  int tstore;    /* 1 = epilogue through shared memory and TMA stores, 0 = each thread stores its outputs */
  int pingpong;  /* 0 = cooperative (the consumers split a tile of 64 consumers rows); 1 or 2 = ping-pong
                  * (two consumers, each owning whole tiles of 64 pingpong rows, one's epilogue beside
                  * the other's main loop), named "_pp" */
  int staged;    /* with tstore: 1 = a store box's raw sums staged in shared memory and E applied by a
                  * rolled loop (a heavy E is emitted four times per box, not once per output of the
                  * tile), named "_se" */
  int late;      /* cooperative with tstore (not stream-K or staged): 1 = E box by box between the store
                  * barriers, not on the whole tile first (FT_EPI_EARLY 0), which a heavy E may need to
                  * fit the registers; named "_lt" */
  int defer;     /* cooperative with tstore, bf16, two consumers: 0, or E deferred to the next tile's k
                  * loop: the tile kept as raw sums rounded to bf16 (as cuBLAS's y before a pass),
                  * each store box's E evaluated in `defer` parts (1, 2, 4, 8), one after each k
                  * tile's wgmma are issued, beside the tensor core; named "_de<defer>" */
  int streamk;   /* 1 = the last, partial wave of tiles shared k tile by k tile by all blocks of the
                  * persistent grid, which add each other's partial sums (named "_sk") */
  int gated;     /* 1 = a gated pair (E with x2): tiles of the interleaved [2n, k] weight's product, each
                  * thread pairing its chunks 2p and 2p + 1 into one output column of y [m, n] (direct
                  * stores; src/family/gated.h), named "_g" */
  int normw;     /* family tc_norm: groupnorm's group, this many columns (N / G), whole groups in each tile
                  * and normalized there; 0 in every other family */
  int normg;     /* with normw: G, the groups of a row (the variant applies where N = normw * normg) */
  int colstats;  /* family tc_pass's GEMM (from its pass's gemm, never stored here): 1 = each m64 block's
                  * per-column mean and sum of squared deviations of batchnorm's argument, from the
                  * accumulator, into the workspace (kernels_src/tc_colstats.cuh) */
} ft_tc_params;

/* The epilogue pass (src/family/family_epilogue.c). */
typedef struct ft_pass_params {
  int block; /* threads per block */
  int ept;   /* elements per thread (multiple of vec) */
  int lt;    /* 0: the pass runs after cuBLAS's GEMM and applies E; s + 1: after cuBLASLt's GEMM with
              * its BIAS epilogue adding the column vector of slot s (E's `x + bias`, as nn.Linear's
              * addmm folds it), the pass applying the rest of E, none when nothing is left; named
              * "_lt" */
  int lt_act; /* 1 (relu) or 2 (gelu_tanh), an ft_ep_lt_act: after cuBLASLt's GEMM applying that
              * activation itself (its RELU or GELU epilogue; RELU_BIAS or GELU_BIAS with lt's bias),
              * the pass applying the rest of E; named "_ltr", "_ltg" ("_ltbr", "_ltbg" with the bias) */
  int lt_c;   /* s + 1: cuBLASLt's GEMM also adds the matrix operand of slot s as its C (beta 1, E's
              * `x + r` or `x + bias + r` in addmm's form; lt the bias), the pass applying the rest;
              * named "_ltc" ("_ltbc" with the bias) */
} ft_pass_params;

/* The reduction pass (src/family/family_reduce.c). */
typedef struct ft_red_params {
  int block;  /* threads per block (one block per row, unless team or tile) */
  int cols;   /* a one-value row reduction: columns of x W^T per cuBLAS GEMM chunk (all of N when >= N);
               * 0: softmax and log_softmax, in place on y */
  int team;   /* > 0: the held form (softmax, log_softmax, groupnorm): this many threads per segment
               * (the row, or a group), the segment held in registers */
  int held;   /* with team: vec-wide accesses each thread holds (team * held * vec >= the segment) */
  int groups; /* with team: segments per row (groupnorm's G, else 1), so the segment is known from N */
  int tile;   /* > 0: batchnorm's column form, partial statistics over tiles of this many rows, then
               * an apply kernel */
  int norm;   /* 1 with tile: softmax or log_softmax of batchnorm's values; the apply kernel takes a row
               * per block, normalizing each value by its column's statistics as it reads it */
  int gemm;   /* 1 with tile (family tc_pass only): the column partials come from the GEMM's tiles, one
               * per 64 rows, so the first kernel only merges them (y read once, not twice); named "_gp" */
} ft_red_params;

/* The eager-style chain (src/family/family_chain.c): E's eager plan run as it is, one kernel a step. */
typedef struct ft_chain_params {
  int steps; /* the kernels after the GEMM: E's eager plan's step count (ft_ep_eager_plan_fold, folded
              * where lt > 0), at least 1 */
  int lt;    /* s + 1: the GEMM is cuBLASLt's with its BIAS epilogue adding the column vector of slot s,
              * as the eager plan folds E's `x + bias` (nn.Linear's addmm); 0: cuBLAS's plain GEMM */
  int rblock; /* threads a block of the reductions that read a row per block (not groupnorm, nor
               * batchnorm's strips): 1024 for few long rows (ft_chain_row_block), 0: FT_AUX_BLOCK */
} ft_chain_params;

/* The kernel families' ids (ft_variant.family, ft_family.id), unique within a kind; the table is
 * src/family/family.c's k_families. GEMM kind (strategy "fused"): */
enum ft_family_id {
  FT_FAMILY_FP32_ROWS = 0,  /* gemm_fp32.cu, "gemm_..." */
  FT_FAMILY_FP32_WARP = 3,  /* gemm_fp32_warp.cu, "gemm_..._w" (1 and 2 are retired: family.c's k_retired) */
  FT_FAMILY_TC = 4,         /* gemm_tc.cu, "tc_..." */
  FT_FAMILY_TC_REDUCE = 5,  /* a one-value row reduction fused in family tc's kernel, "tcr_..." */
  FT_FAMILY_TC_PASS = 6,    /* family tc's GEMM then the reduction pass, one program, "tcp_..." */
  FT_FAMILY_TC_NORM = 7,    /* groupnorm with its groups whole in family tc's tile, "tcn_..." */
  /* Epilogue kind (a pass after a GEMM, strategy "cublas+epilogue"): */
  FT_FAMILY_EPILOGUE_PASS = 0, /* epilogue_pass.cu, "epi_..." */
  FT_FAMILY_REDUCE_PASS = 1,   /* reduce_*.cu, "red_..." */
  FT_FAMILY_GATED_PASS = 2,    /* gated_pass.cu, "gate_..." */
  FT_FAMILY_EAGER_CHAIN = 3,   /* eager_step.cu and reduce_*.cu, a kernel per step of E's eager plan, "eager_..." */
};

typedef struct ft_variant {
  ft_variant_kind kind;
  int family;     /* with kind, which kernel family computes it (an ft_family_id; JSON key "layout",
                   * the field's name in stored configurations) */
  int math;       /* ft_math the variant computes in (0 = fp32); families that serve other modes
                   * write it as the optional JSON key "math" */
  /* Common to the GEMM families (zero in the epilogue pass but vec). */
  int bm, bn, bk; /* block tile */
  int vec;        /* global load/store vector width: 1, 2, 4 (also the epilogue pass's) */
  int stages;     /* pipelining, as the family defines it */
  int split_k;    /* k slices; > 1 adds a reduction kernel that applies E once */
  int swizzle;    /* block rasterization group (1 = none) for L2 reuse */
  ft_fp32_params fp32;
  ft_tc_params tc;
  ft_pass_params pass;
  ft_red_params red;
  ft_chain_params chain;
} ft_variant;

/* What the device allows (from cudaGetDeviceProperties, or ft_limits_for_arch without a GPU). */
typedef struct ft_device_limits {
  int cc_major, cc_minor;
  int sm_count;
  int max_threads_per_block;
  int max_smem_per_block; /* opt-in maximum, bytes */
  int regs_per_block;
} ft_device_limits;

/* Limits of a known architecture ("sm_90", "sm_80", ...) for GPU-free enumeration. */
ft_status ft_limits_for_arch(const char *arch, ft_device_limits *out, ft_err *err);

/* All variants of kind applicable to (m, n, k) in math mode math within lim, likely-good first,
 * from every family that serves the mode. *out is malloc'd (caller frees). ft_space_enumerate
 * is the fp32 mode's. */
ft_status ft_space_enumerate_math(ft_variant_kind kind, int64_t m, int64_t n, int64_t k, ft_math math,
                                  const ft_device_limits *lim, ft_variant **out, int *count, ft_err *err);
/* Which space a family enumerates. PRUNED (the default search's, and what `variants` lists):
 * the forms measured worth timing, as each family's enumerate documents. FULL (the exhaustive
 * and random searches'): every form the family builds for the shape, the pruned ones among them,
 * so that an exhaustive tune checks the pruning rather than repeating it. Families without such
 * rules give both the same. */
typedef enum ft_space_scope { FT_SPACE_PRUNED = 0, FT_SPACE_FULL } ft_space_scope;

/* The same with each variant's modelled cost (*costs malloc'd, caller frees; NULL: not wanted):
 * see ft_family.enumerate for its unit. */
ft_status ft_space_enumerate_costs(ft_variant_kind kind, int64_t m, int64_t n, int64_t k, ft_math math,
                                   const ft_device_limits *lim, ft_variant **out, double **costs, int *count,
                                   ft_err *err);
/* ... in scope. */
ft_status ft_space_enumerate_scope(ft_variant_kind kind, int64_t m, int64_t n, int64_t k, ft_math math,
                                   ft_space_scope scope, const ft_device_limits *lim, ft_variant **out,
                                   double **costs, int *count, ft_err *err);
/* ... for the problem's epilogue ep (NULL: none known): a family may charge what E costs where the
 * schedule does not hide it (the tensor-core family's cost model), or build variants for its
 * form (the epilogue pass after cuBLASLt's bias GEMM). */
ft_status ft_space_enumerate_ep(ft_variant_kind kind, int64_t m, int64_t n, int64_t k, ft_math math,
                                ft_space_scope scope, const ft_epilogue *ep, const ft_device_limits *lim,
                                ft_variant **out, double **costs, int *count, ft_err *err);
ft_status ft_space_enumerate(ft_variant_kind kind, int64_t m, int64_t n, int64_t k,
                             const ft_device_limits *lim, ft_variant **out, int *count, ft_err *err);

/* Whether v shares k tiles between the blocks of its grid (stream-K, as its family builds it). */
int ft_variant_stream_k(const ft_variant *v);

/* Whether v is a well-formed variant of its kind, whatever the shape and device (every field in
 * range, unused fields zero); if not and why != NULL, a reason. Codegen accepts only these. */
int ft_variant_valid(const ft_variant *v, char *why, size_t whylen);

/* Whether v is valid and applicable to (m, n, k) on lim; if not and why != NULL, a reason. */
int ft_variant_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k,
                          const ft_device_limits *lim, char *why, size_t whylen);

/* Stable name ("gemm_bm64_bn128_bk16_t8x8_v4_s2_k1_z8", "..._z8_w" for layout 3,
 * "..._z1_sk132_w" with stream-K, "epi_b256_v4_e8") and JSON ({"kind":"gemm","bm":64,...} with
 * keys in a fixed order; "streamk" and "layout" written only when not 0, accepted as optional). Return bytes written (snprintf). */
int ft_variant_name(const ft_variant *v, char *buf, size_t len);
int ft_variant_json(const ft_variant *v, char *buf, size_t len);
/* Parses what ft_variant_json wrote (strictly); FT_ERR_FORMAT on anything else. */
ft_status ft_variant_from_json(const char *json, ft_variant *out, ft_err *err);

/* How to launch v on (m, n, k). */
typedef struct ft_launch_geom {
  unsigned grid[3], block[3];
  unsigned cluster[3];    /* thread-block cluster shape; 1x1x1 = no cluster */
  size_t smem;            /* dynamic shared memory bytes */
  size_t workspace_bytes; /* split-K or stream-K partials; 0 if none */
  size_t flag_bytes;      /* counters the blocks of one launch signal each other with: zeroed
                           * once, and every launch leaves them zero (tc stream-K); 0 if none */
  int flags_count_only;   /* the blocks only count through the flags, the last one doing the rest
                           * (the reduction pass's column form): none waits, so the grid need not
                           * be resident at once */
  int has_reduce;         /* a second kernel (split-K reduction, stream-K fixup) follows */
  int chunk_cols;         /* after cuBLAS: its GEMM runs in column chunks of this width into the
                           * workspace, the kernel after each (src/family/family_reduce.c); 0: one GEMM into y */
  int gated;              /* after cuBLAS: its GEMM of the interleaved [2n, k] weight writes [m, 2n]
                           * into the workspace, the kernel pairs x and x2 there into y (src/family/family_gated.c) */
  unsigned rgrid[3], rblock[3];
  /* after a GEMM of the family's own (ft_family.gemm_kernel), not cuBLAS's: that kernel's launch */
  int own_gemm;
  unsigned ggrid[3], gblock[3], gcluster[3];
  size_t gsmem;
  /* tc presplit: x and W pre-split by kernel FT_PRESPLIT_KERNEL into the workspace from byte
   * presplit_off on (0 in family tc; after the pass's own workspace in family tc_pass), rows of 2 Kp
   * floats (Kp = K rounded up to FT_PRESPLIT_COLS): x's M rows first, then W's presplit_wrows rows
   * (the GEMM's N: 2n for a gated pair's interleaved weight); 0: none */
  int presplit_kp, presplit_wrows;
  size_t presplit_off;
  /* The main kernel (pdl) or the own GEMM (gpdl) waits (griddepcontrol.wait) before it touches
   * global memory: launched with programmatic stream serialization, its launch and prologue overlap
   * the kernel before it where that one triggers early (the x quantizer; family tc) */
  int pdl, gpdl;
} ft_launch_geom;

void ft_variant_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g);

/* The pre-split layout (kernels_src/gemm_tc.cu's ft_tc_presplit, 3xtf32's k tile): each row of
 * 2 Kp floats holds blocks of FT_PRESPLIT_COLS big parts then as many small parts, in k order. */
#define FT_PRESPLIT_COLS 32
#define FT_PRESPLIT_KERNEL "ft_tc_presplit"
#define FT_PRESPLIT_BLOCK 256
static inline int64_t ft_presplit_kp(int64_t k) { return (k + FT_PRESPLIT_COLS - 1) / FT_PRESPLIT_COLS * FT_PRESPLIT_COLS; }

/* How to launch ft_eager_step on an [m, n] matrix (FT_AUX_BLOCK threads, FT_AUX_ELEMS elements
 * per thread: src/base/kernel_abi.h). */
void ft_eager_step_geometry(int64_t m, int64_t n, ft_launch_geom *g);

/* What a variant's results are stored as: FUSED (a GEMM kernel) or CUBLAS_EPILOGUE (a pass). */
static inline ft_strategy ft_variant_strategy(const ft_variant *v) {
  return v->kind == FT_VK_GEMM ? FT_STRATEGY_FUSED : FT_STRATEGY_CUBLAS_EPILOGUE;
}
/* Whether s is one the tuner chooses a best among (a candidate, not a baseline). */
static inline int ft_strategy_is_candidate(ft_strategy s) {
  return s == FT_STRATEGY_FUSED || s == FT_STRATEGY_CUBLAS_EPILOGUE;
}

/* Largest m, n, k (and products) the kernels' index types support. */
#define FT_MAX_DIM ((int64_t)1 << 30)
/* The kernels index with size_t and take int dimensions; this bounds every matrix and the
 * split-K workspace (2^36 floats = 256 GiB, more than any GPU holds) so that grid sizes and
 * int tile arithmetic inside the kernels cannot overflow. */
#define FT_MAX_ELEMS ((int64_t)1 << 36)
#define FT_MAX_SPLIT_K 64
ft_status ft_check_shape(int64_t m, int64_t n, int64_t k, ft_err *err);

#endif
