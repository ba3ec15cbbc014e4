/* Kernel families: everything that differs between one kind of kernel and another (fp32 row
 * tiles, fp32 warp tiles, the standalone epilogue pass, ...) behind one table of operations.
 * A family is one file of host rules (src/family_*.c) plus its kernel source; nothing outside
 * that file tests which family a variant is: space.c, codegen.c and launch.c ask the table.
 * GPU-free.
 *
 * Adding a family: write src/family_<name>.c defining one `const ft_family`, its kernel source
 * in kernels_src/ (listed in CMakeLists.txt's FUSEDTUNE_EMBED_FILES), one line in k_families
 * (src/family/family.c), and tests; its tuning parameters are its own block of ft_variant (a struct
 * in src/family/space.h that only its file reads). docs/ARCHITECTURE.md has the checklist. */
#ifndef FT_FAMILY_H
#define FT_FAMILY_H

#include "space.h"
#include "strbuf.h"

/* Where enumeration puts a candidate with its modelled cost (lower = likely faster). For a fused
 * GEMM family the cost is a time in one unit shared by every family: the multiply-adds the
 * busiest SM executes (padding, waves and split slices included), divided by the kernel's
 * efficiency relative to cuBLAS's GEMM of the same mode (1: as fast per multiply-add), memory
 * traffic added as multiply-add equivalents. The tuner turns it into a predicted time with
 * the per-SM rate cuBLAS reached on the problem in the same run (src/tune/tuner.c predicted_ms), and
 * the fast search measures in that order and stops by its error (src/tune/search.c). The epilogue
 * pass's cost only orders the passes among themselves (all of them are measured). */
typedef struct ft_space_sink ft_space_sink;
ft_status ft_space_push(ft_space_sink *s, const ft_variant *v, double cost, ft_err *err);
/* Whether the sink takes the full space (FT_SPACE_FULL, src/family/space.h): a family with pruning
 * rules then pushes every form it builds. */
int ft_space_full(const ft_space_sink *s);
/* What the problem's epilogue costs per element in the mode's function forms (zero when the
 * enumeration was not told the epilogue), and the epilogue itself (NULL then). */
ft_ep_cost ft_space_epilogue_cost(const ft_space_sink *s);
const ft_epilogue *ft_space_epilogue(const ft_space_sink *s);

/* What a launch binds: the problem's device pointers and sizes. The kernel argument list is
 * the family's to build (ft_family.kernel_args), so a family with other parameters (tensor
 * maps, say) needs nothing outside its file. */
typedef struct ft_launch_io {
  const void *x, *w;
  void *y;
  void *ws; /* geometry's workspace_bytes, or NULL when 0 */
  unsigned *flags; /* geometry's flag_bytes, zero between launches, or NULL when 0 */
  int m, n, k;
  const void *ep; /* ft_ep_args_dev */
  int col0, ncols; /* geometry's chunk_cols: the chunk of columns this launch covers */
} ft_launch_io;

/* A Hopper TMA tensor map a kernel argument is to hold, described (GPU-free) by a family and
 * encoded by the launch (src/gpu/launch.c through src/gpu/tensormap.c, which asks the driver): a row-major
 * [rows, cols] matrix at base, read in box_rows x box_cols boxes; kind as ft_tensormap_2d's. */
typedef struct ft_tmap_desc {
  const void *base;
  int kind;
  uint64_t rows, cols;
  uint32_t box_rows, box_cols;
} ft_tmap_desc;

/* Storage the argument pointers point into: lives for one launch. */
typedef struct ft_arg_store {
  _Alignas(64) unsigned char bytes[1024];
  size_t used;
  void *ptrs[16];
  int n;
  ft_tmap_desc tmaps[4]; /* the tensor maps to encode into arguments tmap_arg[i] before the launch */
  int tmap_arg[4];
  int ntmaps;
} ft_arg_store;

/* A JSON key of a variant and the int field of ft_variant it fills. */
typedef struct ft_json_key {
  const char *name;
  size_t offset;
} ft_json_key;

/* What writes x W^T before a family's kernel runs. */
typedef enum ft_gemm_before {
  FT_GEMM_IN_KERNEL = 0, /* nothing: the family's kernel computes the GEMM itself */
  FT_GEMM_CUBLAS,        /* cuBLAS's GEMM of the mode (SGEMM in fp32 and 3xtf32) */
  FT_GEMM_CUBLASLT,      /* cuBLASLt's, applying E's first steps itself (ft_lt_prefix) */
  FT_GEMM_OWN,           /* the family's own GEMM kernel, in the kernel's program (ft_family.gemm_kernel) */
} ft_gemm_before;

/* The steps of E cuBLASLt's GEMM applies before the kernel: the column vector its epilogue adds
 * (bias_slot, -1: none), the activation after it, the matrix it adds as its C (c_slot, -1: none). */
typedef struct ft_lt_prefix {
  int bias_slot;
  ft_ep_lt_act act;
  int c_slot;
} ft_lt_prefix;

typedef struct ft_family {
  const char *name;     /* "fp32_rows": docs, `variants` output */
  ft_variant_kind kind; /* what the variant computes (strategy "fused" or "cublas+epilogue") */
  int id;               /* the ft_family_id naming it within its kind (ft_variant.family, JSON "layout") */
  const char *suffix;   /* appended to variant names ("_w"); "" for none */
  /* Bumped by a developer on purpose when the family's kernels change behaviour in a way the
   * source text does not show (it is part of every source hash). */
  int revision;
  const char *arch_suffix; /* appended to the device's "sm_XY" as the compile target ("a") */
  unsigned maths;          /* bit 1 << ft_math for each math mode the family serves */
  /* kernels_src files after the common prelude and the epilogue macro, in order. */
  const char *const *sources;
  const char *kernel; /* the main entry point */
  /* What writes x W^T before the kernel runs (ft_gemm_before; ask through
   * ft_variant_gemm_before): nothing (NULL: the kernel computes the GEMM itself), cuBLAS's GEMM,
   * cuBLASLt's applying E's first steps (*lt which), or the family's own GEMM kernel. */
  ft_gemm_before (*gemm_before)(const ft_variant *v, ft_lt_prefix *lt);
  /* With a GEMM before the kernel: *expr the expression (CUDA text) it applies to what that GEMM
   * wrote, E less the steps cuBLASLt applied; FT_ERR_INVALID_ARG when E does not begin with them.
   * NULL: E whole. */
  ft_status (*pass_expr)(const ft_variant *v, const ft_epilogue *ep, const char **expr, ft_err *err);
  /* With FT_GEMM_OWN: the family's own GEMM kernel in the same program (one cubin), launched in place
   * of cuBLAS's before the pass: it writes x W^T where cuBLAS's GEMM would (y, or the workspace of a
   * pass in one column chunk) on geometry's own_gemm launch, with gemm_args (io->y the place it
   * writes). src/family/tc/family_tc_pass.c is the one family with its own. */
  const char *gemm_kernel;
  ft_status (*gemm_args)(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err);
  int reduces;        /* 1: it serves the reductions ft_ep_check_kernels accepts, and nothing else */
  /* 1: it serves every E that has an eager plan, elementwise or reducing (reduces is then not asked). */
  int any_epilogue;
  /* With reduces and the GEMM in its kernel: bit 1 << ft_ep_red of each reduction the kernel computes
   * (E's outermost; codegen refuses the others). */
  unsigned red_kinds;
  /* Whether v computes a gated pair (E with x2, w the interleaved [2n, k] weight, src/family/gated.h): its
   * kernel then reads x2, and only E with x2 runs in it (codegen). NULL: the family computes E of x
   * alone, and does not enumerate for an E with x2. */
  int (*pair)(const ft_variant *v);
  /* 1: codegen writes FT_EP_COLV_SLOT, the epilogue's first column-vector slot (-1: none), for
   * a kernel that stages that vector's tile slice in shared memory, and FT_EP_MAT_MASK, a bit per
   * matrix-operand slot, for one that prefetches their tiles. */
  int wants_colv_slot;
  /* A chain of kernels after the GEMM, one per step of E's eager plan (family eager_chain,
   * src/family/chain.h): *plan is ep's eager plan, FT_ERR_INVALID_ARG where v is not that plan's
   * chain, FT_ERR_UNSUPPORTED where E has none the family runs. Codegen writes the plan as one
   * program (ft_codegen_chain) and the launch runs its steps (ft_chain_enqueue); the family's kernel
   * is step 0's, its geometry and kernel_args are not asked. NULL: the family runs one kernel (and a
   * second). */
  ft_status (*eager_plan)(const ft_variant *v, const ft_epilogue *ep, ft_ep_eager *plan, ft_err *err);

  /* Where its own parameters lie in ft_variant (offsetof and sizeof its block, src/family/space.h): the
   * blocks of the other families must stay zero. */
  size_t params_offset, params_size;
  /* A second block it owns beside the first (a family composed of two others: tc_pass's GEMM and
   * pass), 0 and 0 for none. */
  size_t params2_offset, params2_size;
  /* Its JSON form: {"kind":..., the keys in order, then each optional key that is not 0}. Both
   * lists end with a {NULL, 0} entry. */
  const ft_json_key *keys, *opt_keys;
  /* Its stable name ("gemm_bm64_..._z8_w"); returns what snprintf returns. */
  int (*variant_name)(const ft_variant *v, char *buf, size_t len);

  /* Family-specific well-formedness (common fields are checked by ft_variant_valid). */
  int (*valid)(const ft_variant *v, char *why, size_t whylen);
  /* Whether v (valid) fits (m, n, k) on lim; why as above. */
  int (*applicable)(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim,
                    char *why, size_t whylen);
  /* Pushes every plausible variant for the shape in math mode math (one of maths) with its
   * cost (in the unit ft_space_push describes). */
  ft_status (*enumerate)(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                         ft_space_sink *sink, ft_err *err);
  /* Resource estimate: registers per thread the kernel is compiled to fit (the cap ptxas takes
   * from its __launch_bounds__); a variant whose ptxas usage exceeds it, or spills, is wrong. */
  int (*reg_cap)(const ft_variant *v);
  /* Launch geometry: grid, block, cluster, dynamic shared memory, workspace, second kernel. */
  void (*geometry)(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g);
  /* The #defines that make the kernel source this variant. */
  void (*defines)(const ft_variant *v, ft_strbuf *b);
  /* Products one tensor-core partial sum of v accumulates on a K-deep problem before its fp32 add
   * (3xtf32 and fp8: chunk k tiles of bk, no more than a split-K slice or K holds), whose truncating
   * adds make an error that grows with it; 0 or NULL: none. The fast search's error rule orders
   * variants by it (src/tune/search.c). */
  int (*partial_sum)(const ft_variant *v, int64_t k);
  /* Whether v shares k tiles between the blocks of its grid (stream-K); NULL: the family never does. */
  int (*stream_k)(const ft_variant *v);
  /* The second kernel v launches after the main one (split-K reduction, stream-K fixup), or
   * NULL when it has none. */
  const char *(*reduce_kernel)(const ft_variant *v);
  /* Byte alignment x, w and y must have for v on (m, n, k). */
  void (*alignment)(const ft_variant *v, int m, int n, int k, size_t need[3]);
  /* Argument lists of the main and the second kernel. */
  ft_status (*kernel_args)(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err);
  ft_status (*reduce_args)(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err);
} ft_family;

/* The family of v (by kind and family id), or NULL when no family has that combination. */
const ft_family *ft_family_of(const ft_variant *v);
/* What writes x W^T before v's kernel (v's family's gemm_before; FT_GEMM_IN_KERNEL for a family
 * without one, or no family), *lt (may be NULL) the steps cuBLASLt applies, {-1, none, -1} unless
 * FT_GEMM_CUBLASLT. */
ft_gemm_before ft_variant_gemm_before(const ft_variant *v, ft_lt_prefix *lt);
/* v's family's partial_sum on a K-deep problem (0 without one, or no family). */
int ft_variant_partial_sum(const ft_variant *v, int64_t k);
/* gemm_before of the families whose kernel runs after cuBLAS's plain GEMM. */
ft_gemm_before ft_family_after_cublas(const ft_variant *v, ft_lt_prefix *lt);
const ft_family *ft_family_find(ft_variant_kind kind, int id);
const ft_family *ft_family_named(const char *name); /* NULL when no family has the name */
/* Why no family has (kind, id): a retired family's message ("was removed: ...") or
 * "unknown"; writes into why. */
void ft_family_missing(ft_variant_kind kind, int id, char *why, size_t whylen);
/* The families, in table order (NULL-terminated). */
const ft_family *const *ft_families(void);

/* Appends one argument of size bytes to st (copied); FT_ERR_INTERNAL when st is full. */
ft_status ft_arg_push(ft_arg_store *st, const void *value, size_t size, ft_err *err);
/* Appends a tensor-map argument (128 bytes, 64-aligned) that the launch encodes from d. */
ft_status ft_arg_push_tmap(ft_arg_store *st, const ft_tmap_desc *d, ft_err *err);
/* Empties st for the next launch's arguments. */
void ft_arg_clear(ft_arg_store *st);

/* WHY(...) in a family or space rule: writes the reason when asked and returns 0. */
#define FT_WHY(...)                                                \
  do {                                                             \
    if (why && whylen) snprintf(why, whylen, __VA_ARGS__);         \
    return 0;                                                      \
  } while (0)

#endif
