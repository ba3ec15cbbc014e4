/* The epilogue expression language: text -> AST -> canonical text, CUDA text, eager-style steps,
 * and a float64 host evaluator. GPU-free. Grammar and declarations: docs/EPILOGUE.md. */
#ifndef FT_EPILOGUE_H
#define FT_EPILOGUE_H

#include "common.h"

#define FT_EP_MAX_TEXT 4096  /* longer input is rejected */
#define FT_EP_MAX_DEPTH 64   /* deeper nesting is rejected */
#define FT_EP_MAX_PARAMS 8   /* scalars + vectors one expression may name */
#define FT_EP_NAME_MAX 32

typedef enum ft_param_kind {
  FT_PARAM_SCALAR = 0, /* one float, a kernel argument: ep.s[slot] */
  FT_PARAM_COLVEC = 1, /* float[N], indexed by output column: ep.v[slot][col] */
  FT_PARAM_ROWVEC = 2, /* float[M], indexed by output row: ep.v[slot][row] */
  FT_PARAM_MATRIX = 3  /* [M, N] row-major (`mat r`), indexed by output element: the kernel reads
                        * ep.v[slot][row * pitch + col] with the row pitch in elements in ep.s[slot]
                        * as int bits (ft_ep_mat_pitch) */
} ft_param_kind;

/* The scalar word of a matrix slot: its row pitch in elements, as the kernels read it
 * (__float_as_int(ep.s[slot])). */
float ft_ep_mat_pitch(int pitch);

/* Reductions (src/epilogue/epilogue_reduce.c, docs/EPILOGUE.md "Reductions"): calls whose value at an
 * element depends on its whole row, its group of a row, its column or a window of its row. */
typedef enum ft_ep_red {
  FT_RED_NONE = 0,
  FT_RED_ROWSUM, FT_RED_ROWMEAN, FT_RED_ROWMAX, FT_RED_ROWMIN, FT_RED_LOGSUMEXP, /* [M] */
  FT_RED_SOFTMAX, FT_RED_LOG_SOFTMAX,                                          /* [M, N], over the row */
  FT_RED_GROUPNORM,                                                            /* [M, N], over G groups */
  FT_RED_BATCHNORM,                                                            /* [M, N], over the column */
  FT_RED_MAXPOOL, FT_RED_AVGPOOL,                                              /* [M, N / w] */
  FT_RED_COUNT
} ft_ep_red;

/* The shape of y: every element ([M, N]), one value per row ([M]), or windows of w columns
 * ([M, floor(N / w)]). */
typedef enum ft_ep_shape { FT_EP_SHAPE_MN = 0, FT_EP_SHAPE_M = 1, FT_EP_SHAPE_POOLED = 2 } ft_ep_shape;

typedef struct ft_ep_param {
  char name[FT_EP_NAME_MAX];
  ft_param_kind kind;
  int has_default; /* scalars only */
  double def;      /* the default value when has_default */
} ft_ep_param;

typedef struct ft_epilogue ft_epilogue; /* a parsed, validated expression (immutable) */

/* Parses text (an expression or a preset name, with optional declarations, see
 * docs/EPILOGUE.md). On success *out is owned by the caller (ft_ep_free). On failure returns
 * FT_ERR_PARSE with "epilogue: col C: what (hint)" in err and *out = NULL. */
ft_status ft_ep_parse(const char *text, ft_epilogue **out, ft_err *err);
void ft_ep_free(ft_epilogue *ep); /* NULL is a no-op */

/* The canonical text (one text for every spelling of the same expression) and its 16-hex-digit
 * hash. Owned by ep. */
const char *ft_ep_canonical(const ft_epilogue *ep);
const char *ft_ep_hash(const ft_epilogue *ep);

/* Parameters in slot order (slot i is ep.s[i] / ep.v[i] in the kernel). Owned by ep. */
int ft_ep_param_count(const ft_epilogue *ep);
const ft_ep_param *ft_ep_param_at(const ft_epilogue *ep, int slot);

/* A CUDA C++ float expression for the whole epilogue, rebuilt from the AST (never user text);
 * NULL for a reduction (ft_ep_reduction), which no single elementwise expression computes.
 * It reads: `x` (float accumulator), `row`, `col` (int), `ep.s[i]`, `ep.v[i][col]` /
 * `ep.v[i][row]` and the device functions of kernels_src/ft_math.cuh. Owned by ep. */
const char *ft_ep_cuda(const ft_epilogue *ep);
/* The CUDA text of E after a GEMM that already added the bias: E with its `x + bias` (the one x
 * added to a column vector, as nn.Linear's addmm folds it) read as x; *slot (may be NULL) gets
 * that vector's slot. NULL (and *slot -1) when E has no such bias. Owned by ep. */
const char *ft_ep_cuda_folded(const ft_epilogue *ep, int *slot);
/* The activations cuBLASLt's GEMM can apply itself (its RELU, GELU and their _BIAS epilogues). */
typedef enum ft_ep_lt_act { FT_EP_LT_NONE = 0, FT_EP_LT_RELU = 1, FT_EP_LT_GELU_TANH = 2 } ft_ep_lt_act;
/* The CUDA text of E after such a GEMM: E with its `relu(x)`, `relu(x + bias)`, `gelu_tanh(x)` or
 * `gelu_tanh(x + bias)` (x occurring once) read as x; *act (may be NULL) gets which, *slot the
 * bias's slot or -1 when none is added. NULL (*act FT_EP_LT_NONE, *slot -1) when E has no such
 * prefix. Owned by ep. */
const char *ft_ep_cuda_lt_act(const ft_epilogue *ep, int *slot, ft_ep_lt_act *act);
/* The CUDA text of E after a GEMM that already added a residual, addmm's form (cuBLASLt's C = r,
 * beta 1, with its BIAS epilogue where E adds the bias first): E with its `x + r` or
 * `x + bias + r` (x occurring once, r a matrix operand, either order) read as x; *mat (may be
 * NULL) gets r's slot, *bias the bias's or -1. NULL (*mat and *bias -1) when E has no such sum.
 * Owned by ep. */
const char *ft_ep_cuda_resid(const ft_epilogue *ep, int *mat, int *bias);

/* What E costs per output element (src/epilogue/epilogue_cost.c): FP32-pipe and special-function (ex2, lg2,
 * rcp) instructions, in the fast function forms (fast != 0: tf32, bf16, fp16) or the precise ones;
 * a repeated subexpression counted once. An estimate for ordering a search. ep NULL: zero. */
typedef struct ft_ep_cost {
  double fp32, mufu;
} ft_ep_cost;
ft_ep_cost ft_ep_cost_of(const ft_epilogue *ep, int fast);
/* Whether math mode math evaluates E with the fast function forms (FT_EPI_FAST in
 * kernels_src/ft_math.cuh): tf32, bf16, fp16; fp32 and 3xtf32 keep the precise ones. */
int ft_ep_fast_forms(ft_math math);

/* Evaluates an elementwise epilogue in float64 for one element (NaN for a reduction: see
 * ft_ep_eval_matrix). vals[slot] holds, for each parameter, the scalar value or the vector
 * (matrix) element for this element's row/column. x2 (a gated pair's second product) reads as
 * NaN: ft_ep_eval2 gives it. */
double ft_ep_eval(const ft_epilogue *ep, double x, const double *vals);
double ft_ep_eval2(const ft_epilogue *ep, double x, double x2, const double *vals);

/* Whether E reads x2, the product of x with a second weight of W's shape (a gated pair,
 * `silu(x) * x2`; docs/EPILOGUE.md), and whether it names a matrix operand (`mat r`). */
int ft_ep_uses_x2(const ft_epilogue *ep);
int ft_ep_has_matrix(const ft_epilogue *ep);

/* Eager-style decomposition (what PyTorch eager runs): the GEMM, with `x + bias` folded into it
 * when x occurs once and directly as `x + <colvec>` (nn.Linear's addmm), then one elementwise
 * pass per remaining operation. Each step's expression reads buffers IN0..IN2 (float values of
 * earlier results at this element), plus parameters and constants like ft_ep_cuda. */
#define FT_EP_MAX_STEPS 64
#define FT_EP_BUF_X2 (FT_EP_MAX_STEPS + 1)
typedef struct ft_ep_step {
  char expr[512]; /* CUDA expression over IN0, IN1, IN2, ep.s[], ep.v[][] and row/col; "" when
                   * the step reduces */
  ft_ep_red reduce; /* FT_RED_NONE: elementwise; else the reduction of IN0 (one kernel, as torch) */
  int arg;          /* the reduction's G or w, else 0 */
  ft_ep_shape shape; /* the shape of the step's output buffer */
  int nin;        /* how many IN operands */
  int in[3];      /* operand buffers: 0 = GEMM output, j >= 1 = output of step j-1,
                  * FT_EP_BUF_X2 = the second GEMM's output (x2, a gated pair) */
} ft_ep_step;

typedef struct ft_ep_eager {
  int gemm_bias_slot; /* slot of the column vector folded into the GEMM, or -1 */
  int nsteps;
  ft_ep_step steps[FT_EP_MAX_STEPS];
} ft_ep_eager;

/* Fills *out; returns FT_ERR_UNSUPPORTED if the expression needs more than FT_EP_MAX_STEPS. */
ft_status ft_ep_eager_plan(const ft_epilogue *ep, ft_ep_eager *out, ft_err *err);
/* The same; fold 0 keeps `x + bias` a step rather than cuBLASLt's bias GEMM (gemm_bias_slot -1):
 * the plan where cuBLASLt has no bias algorithm for the shape (rows of 16-bit elements not whole
 * 16 bytes). */
ft_status ft_ep_eager_plan_fold(const ft_epilogue *ep, int fold, ft_ep_eager *out, ft_err *err);

/* The reduction's name ("logsumexp"); "" for FT_RED_NONE or outside the list. */
const char *ft_ep_red_name(ft_ep_red r);
/* The outermost reduction of E (FT_RED_NONE for an elementwise E) and its integer argument (G of
 * groupnorm, w of a pool; 0 otherwise) in *arg (may be NULL). */
ft_ep_red ft_ep_reduction(const ft_epilogue *ep, int *arg);
/* The shape of y for an m x n GEMM result: *ndim 1 ([M]: *rows = m, *cols = 1) or 2 ([*rows,
 * *cols]). FT_ERR_INVALID_ARG, with the reason, where E cannot apply to n columns (groupnorm's G
 * not dividing n, a window wider than n). Any output pointer may be NULL. */
ft_status ft_ep_output_shape(const ft_epilogue *ep, int64_t m, int64_t n, int *ndim, int64_t *rows, int64_t *cols,
                             ft_err *err);
/* FT_OK when a kernel serves E: every elementwise E, and the row reductions (rowsum, rowmean,
 * rowmax, rowmin, logsumexp, softmax, log_softmax), groupnorm, batchnorm, the pools and a row
 * reduction of a pool (not softmax or log_softmax of one), which the cuBLAS
 * + reduction pass strategy computes (src/family/family_reduce.c). Else FT_ERR_UNSUPPORTED naming the reduction:
 * tunes, plans and benches refuse it. */
ft_status ft_ep_check_kernels(const ft_epilogue *ep, ft_err *err);
/* A served reduction's two CUDA expressions (NULL for an elementwise E): *inner the reduction's
 * argument, per element of the GEMM result (reads x, row, col, ep); *post the rest of E, reading
 * the reduction's value as IN0 (and row, col, ep; col only where y is [M, N]). Owned by ep.
 * With a pool (ft_ep_pool), *inner reads a window's value as IN0 instead of x ("IN0" when the
 * pool is E's outermost reduction). */
void ft_ep_cuda_reduce(const ft_epilogue *ep, const char **inner, const char **post);
/* E's pool (FT_RED_MAXPOOL or FT_RED_AVGPOOL: outermost, or inside a row reduction), else
 * FT_RED_NONE; *w its window, *arg (a served E; else NULL) its windows' argument in CUDA, per
 * element of the GEMM result (reads x, row, col, ep). Any output may be NULL. */
ft_ep_red ft_ep_pool(const ft_epilogue *ep, int *w, const char **arg);
/* The batchnorm inside E's row reduction (FT_RED_BATCHNORM: `softmax(batchnorm(x + bias) * s)`),
 * else FT_RED_NONE; *arg (a served E; else NULL) its argument in CUDA, per element of the GEMM
 * result, and *inner (ft_ep_cuda_reduce) then reads its normalized value as IN0. arg may be NULL. */
ft_ep_red ft_ep_norm(const ft_epilogue *ep, const char **arg);

/* The float64 reference of the whole output: x is the m x n GEMM result (row-major), params[slot]
 * the parameter values (a scalar: params[slot][0]; a col vector: n values; a row vector: m; a
 * matrix: m x n, row-major), y
 * the output in the shape ft_ep_output_shape gives (row-major). Elementwise epilogues too.
 * Sums in double, two-pass variances, max-subtracted exponentials. FT_ERR_INVALID_ARG as
 * ft_ep_output_shape; FT_ERR_NOMEM. */
ft_status ft_ep_eval_matrix(const ft_epilogue *ep, int64_t m, int64_t n, const double *x,
                            const double *const *params, double *y, ft_err *err);

/* The presets, for listing: name and expression text. Returns the count; *names may be NULL. */
/* fp8: whether E multiplies x by the parameters sx and sw, and a gated pair's x2 by sx and sw2, sx
 * once per product, sw and sw2 once and used nowhere else (epilogue_fp8.c); 1 with their slots
 * (*sw2_slot -1 without x2; sw2_slot may be NULL), else 0 and a one-line reason in why. */
int ft_ep_fp8_scales(const ft_epilogue *ep, int *sx_slot, int *sw_slot, int *sw2_slot, char *why, size_t why_size);

int ft_ep_presets(const char *const **names, const char *const **texts);

#endif
