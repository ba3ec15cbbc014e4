/*
 * fusedtune — autotuned fused GEMM + elementwise-epilogue CUDA kernels, remembered in SQLite.
 *
 * This is the public header for programs that use tuned kernels. It is the manual: every function
 * documents its parameters, the statuses it can return, who owns what it returns, and its
 * thread-safety. fusedtune_tool.h adds what tools built on the library need (the fusedtune CLI
 * uses nothing else): export/import, iteration over stored results, device and variant listing,
 * epilogue inspection, benchmarking, a tune with a full report, the worker entry point.
 *
 * Problem solved: y[m, n] = E(sum_k x[m, k] * W[n, k]) with x [M, K] and W [N, K] row-major
 * (the nn.Linear layout), bias-like vectors [N] or [M], matrices [M, N] (a residual), and E an
 * elementwise expression ("epilogue") written in fusedtune's small expression language (see
 * docs/EPILOGUE.md), which may reduce each row (logsumexp, softmax, ...: y is then [M] or [M, N],
 * ft_output_shape).
 *
 * Thread-safety: an ft_ctx (and the ft_plan objects made from it) must be used by one thread
 * at a time. Several ft_ctx, opened in several threads on the same database, work concurrently.
 * ft_status_string() and ft_version_number() are safe from any thread.
 */
#ifndef FUSEDTUNE_H
#define FUSEDTUNE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h> /* cudaStream_t */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FT_API __declspec(dllexport)
#elif defined(__GNUC__)
#define FT_API __attribute__((visibility("default")))
#else
#define FT_API
#endif

#define FUSEDTUNE_VERSION_MAJOR 0
#define FUSEDTUNE_VERSION_MINOR 2
#define FUSEDTUNE_VERSION_PATCH 1
#define FUSEDTUNE_VERSION_STRING "0.2.1"
#define FUSEDTUNE_VERSION_NUMBER \
  (FUSEDTUNE_VERSION_MAJOR * 1000000 + FUSEDTUNE_VERSION_MINOR * 1000 + FUSEDTUNE_VERSION_PATCH)

/* Version of the library actually linked (compare with FUSEDTUNE_VERSION_NUMBER). */
FT_API int ft_version_number(void);
FT_API const char *ft_version_string(void);

/* One list for every status: the enum and ft_status_string() are generated from it. */
#define FT_STATUS_MAP(X)                                                                   \
  X(OK, 0, "success")                                                                      \
  X(ERR_INVALID_ARG, 1, "invalid argument")                                                \
  X(ERR_NOT_FOUND, 2, "not found")                                                         \
  X(ERR_NO_DEVICE, 3, "no CUDA device")                                                    \
  X(ERR_DB, 4, "database error")                                                           \
  X(ERR_CUDA, 5, "CUDA error")                                                             \
  X(ERR_COMPILE, 6, "kernel compilation failed")                                           \
  X(ERR_PARSE, 7, "epilogue expression does not parse")                                    \
  X(ERR_NOMEM, 8, "out of memory")                                                         \
  X(ERR_UNSUPPORTED, 9, "not supported")                                                   \
  X(ERR_VERSION, 10, "database from a newer fusedtune version")                            \
  X(ERR_IO, 11, "input/output error")                                                      \
  X(ERR_FORMAT, 12, "malformed input file")                                                \
  X(ERR_WRONG_RESULT, 13, "kernel result does not match the float64 reference")            \
  X(ERR_INTERRUPTED, 14, "interrupted")                                                    \
  X(ERR_CUBLAS, 15, "cuBLAS error")                                                        \
  X(ERR_INTERNAL, 16, "internal error")

typedef enum ft_status {
#define FT_STATUS_ENUM_(name, value, text) FT_##name = value,
  FT_STATUS_MAP(FT_STATUS_ENUM_)
#undef FT_STATUS_ENUM_
} ft_status;

/* A static English description of s ("unknown status" for values outside the list). Never NULL;
 * the string is static and must not be freed. */
FT_API const char *ft_status_string(ft_status s);

/* Math modes: one list, the enum and the names ("fp32", ...) used by the CLI and the database
 * generated from it.
 *   fp32  x, W, y, vectors fp32; FFMA on CUDA cores (no tensor cores): error <= 1e-5 vs float64.
 *   tf32  x, W, y, vectors fp32; inputs rounded to tf32 (round to nearest), tensor cores, fp32
 *         accumulate: error like cuBLAS's TF32 GEMM (~3e-4 relative).
 *   bf16  x, W, y, vectors bf16 (as a bf16 nn.Linear); fp32 accumulate, E in fp32 on the
 *         accumulator, one rounding at the store: error like cuBLAS's BF16 GEMM (~2e-3).
 *   fp16  as bf16 with fp16 storage (~3e-4).
 *   3xtf32  x, W, y, vectors fp32; each operand split into big = tf32(v) and small = tf32(v - big),
 *         three tensor-core products (small.big, big.small, big.big) with the partial sums taken
 *         into fp32 registers every few k: fp32-class error (<= 1e-5 vs float64, as fp32).
 *   fp8   x and W e4m3 (FT_DTYPE_E4M3, both [.., K] row-major as nn.Linear holds them), y, the
 *         bias and matrix operands bf16, the scales fp32: y = E(sum_k x W) with the dequantizing
 *         scales applied by E ("relu(x * sx * sw + bias) where row sx, col sw"; scalar for per
 *         tensor; a gated pair's x2 by sx and its weight's sw2, docs/MODES.md);
 *         fp32 accumulation (partial sums promoted into fp32 registers every few k tiles). K a
 *         multiple of 16. Launched with ft_plan_launch_typed (element type per tensor). */
#define FT_MATH_MAP(X)   \
  X(FP32, 0, "fp32")     \
  X(TF32, 1, "tf32")     \
  X(BF16, 2, "bf16")     \
  X(FP16, 3, "fp16")     \
  X(3XTF32, 4, "3xtf32") \
  X(FP8, 5, "fp8")

typedef enum ft_math {
#define FT_MATH_ENUM_(name, value, text) FT_MATH_##name = value,
  FT_MATH_MAP(FT_MATH_ENUM_)
#undef FT_MATH_ENUM_
} ft_math;
#define FT_MATH_COUNT 6

/* Element type of the tensors a launch binds: FT_DTYPE_F32 in fp32, tf32 and 3xtf32 modes, BF16 / F16
 * in bf16 / fp16 modes; in fp8 mode x and W are E4M3 (float8_e4m3fn: 1 sign, 4 exponent bits of bias
 * 7, 3 mantissa bits, no infinities, largest finite 448), y and the bias BF16, every other vector
 * (the scales) F32. */
typedef enum ft_dtype { FT_DTYPE_F32 = 0, FT_DTYPE_BF16 = 1, FT_DTYPE_F16 = 2, FT_DTYPE_E4M3 = 3 } ft_dtype;

/* "fp32", "tf32", "bf16", "fp16", "3xtf32", "fp8"; "?" outside the list. Static, thread-safe. */
FT_API const char *ft_math_name(ft_math m);
/* The mode named text: 1 and *out set, else 0. Thread-safe. */
FT_API int ft_math_from_name(const char *text, ft_math *out);
/* The element type of mode m's input tensors x and W (FT_DTYPE_E4M3 in fp8; ft_math_out_dtype for y).
 * Thread-safe. */
FT_API ft_dtype ft_math_dtype(ft_math m);
/* The element type of mode m's output y and its bias (FT_DTYPE_BF16 in fp8, else ft_math_dtype). */
FT_API ft_dtype ft_math_out_dtype(ft_math m);
/* "fp32", "bf16", "fp16", "e4m3"; "?" outside the list. Static, thread-safe. */
FT_API const char *ft_dtype_name(ft_dtype d);

typedef struct ft_ctx ft_ctx;   /* a database connection plus (lazily) a CUDA device */
typedef struct ft_plan ft_plan; /* a loaded, ready-to-launch kernel configuration */
typedef struct ft_quantizer ft_quantizer; /* the fp8 quantizer (ft_quantizer_create) */

/* The problem: a zero-initialized struct with m, n, k and epilogue set is valid. */
typedef struct ft_problem {
  int64_t m;            /* rows of x and y */
  int64_t n;            /* output features: rows of W, columns of y */
  int64_t k;            /* input features: columns of x and W */
  const char *epilogue; /* expression or preset name, e.g. "minsub", "relu(x + bias)" */
  ft_math math;         /* FT_MATH_FP32 (0), TF32, BF16, FP16, 3XTF32 or FP8 */
} ft_problem;

/* Flags of ft_open. */
#define FT_OPEN_READONLY 0x1u /* never write the database (cubins compiled then are not stored) */
#define FT_OPEN_CREATE 0x2u   /* create the database file when it does not exist */

/* Flags of ft_lookup. */
#define FT_LOOKUP_NEAREST 0x1u /* fall back to the nearest tuned shape on this device */
#define FT_LOOKUP_EXACT 0x2u   /* the exact key only: no M bucket (excludes FT_LOOKUP_NEAREST) */
#define FT_LOOKUP_MODE_ONLY 0x4u /* p->math's own results only: fp32 means FFMA kernels and cuBLAS SGEMM
                                  * (without it, fp32 is served at fp32 accuracy: see ft_lookup) */

/* Values of ft_config.exact: how the configuration came to serve the problem asked for. The
 * field keeps its type and place (ft_config has no size field, so it cannot grow): 2 is new in
 * 0.3, and code that tested `if (!cfg.exact)` for "nearest" still reads a bucket as tuned. */
#define FT_MATCH_NEAREST 0 /* FT_LOOKUP_NEAREST: the nearest tuned shape (N or K differ) */
#define FT_MATCH_EXACT 1   /* tuned for this exact shape */
#define FT_MATCH_BUCKET 2  /* an M bucket: tuned at tuned_m, the smallest tuned M >= m with the same
                            * N, K, epilogue, math and device (the largest when m is beyond all) */

#define FT_CONFIG_JSON_MAX 512
#define FT_NAME_MAX 128

/* A tuned configuration as stored in the database. Plain data: copy freely. */
typedef struct ft_config {
  char strategy[32];                /* "fused" or "cublas+epilogue" (cuBLAS's GEMM, or with a config's
                                     * "lt" cuBLASLt's GEMM adding the bias, then one pass of E) */
  char name[FT_NAME_MAX];           /* variant name, e.g. "gemm_bm64_bn128_bk16_t8x8_v4_s2_k1_z8" */
  char config[FT_CONFIG_JSON_MAX];  /* variant configuration, JSON */
  char source_hash[17];             /* hash of the kernel source that was measured */
  double median_ms;                 /* measured median time */
  double eager_ms;                  /* eager-style baseline (latest stored), at the clock median_ms was
                                     * timed at: its median times the ratio of the two cuBLAS GEMMs
                                     * timed beside them, so eager_ms / median_ms is the speed-up
                                     * (docs/FORMAT.md, "best"); 0 when unknown */
  int64_t tuned_m, tuned_n, tuned_k; /* the shape it was tuned for */
  int exact;                        /* FT_MATCH_EXACT (1): tuned for this exact shape; FT_MATCH_BUCKET
                                     * (2): the M bucket tuned_m serves m; FT_MATCH_NEAREST (0):
                                     * nearest fallback */
  ft_math math;                     /* the mode it computes in (ft_lookup_within may pick another) */
  double rel_err;                   /* measured when tuned: relative L2 error against float64 */
  double max_abs_err;               /* ... and the largest absolute error (see docs/MODES.md) */
} ft_config;

/* Opens (FT_OPEN_CREATE: creates) the database at db_path; NULL means $FUSEDTUNE_DB, else
 * "./fusedtune.db". No GPU is touched. On success *ctx owns the connection; release it with
 * ft_close(). On failure *ctx is still set when memory allowed, so ft_errmsg(*ctx) explains; it
 * must be closed too.
 * Returns FT_OK, FT_ERR_INVALID_ARG (ctx NULL, unknown flags), FT_ERR_NOT_FOUND (file missing and
 * no FT_OPEN_CREATE), FT_ERR_DB (not a fusedtune database, unreadable, corrupt),
 * FT_ERR_VERSION (written by a newer fusedtune; left untouched), FT_ERR_NOMEM. */
FT_API ft_status ft_open(const char *db_path, unsigned flags, ft_ctx **ctx);

/* Frees the context, its device resources and closes the database. NULL is a no-op. Plans made
 * from ctx must be destroyed first. */
FT_API void ft_close(ft_ctx *ctx);

/* The last error message on ctx, in English, with the detail (SQLite message, NVRTC log head,
 * CUDA error name). Valid until the next call on ctx; owned by ctx. Never NULL. */
FT_API const char *ft_errmsg(const ft_ctx *ctx);

/* Checks p without touching a device or a database: p not NULL, 1 <= m, n, k <= 2^30, an
 * epilogue that parses and applies to p's N (groupnorm's G divides N, a pool's window fits), a
 * math mode that exists, fp8's rules (N and K multiples of 16, x scaled once by sx and sw, a gated
 * pair's x2 by sx and sw2; no reduction in fp8), a gated pair's N (with x2: a multiple of 8), and a reduction some
 * kernel serves. Every ft_ function taking a
 * problem makes this same check first. On failure, when msg is not NULL, writes a one-line reason naming what is
 * wrong ("shape 0x8x8: m, n and k must be positive") into msg (truncated to msg_size bytes,
 * always NUL-terminated when msg_size > 0).
 * Returns FT_OK, FT_ERR_INVALID_ARG (p or its epilogue NULL, shape out of range, G or a window
 * that does not fit N, fp8's K or scales, a gated pair's N), FT_ERR_PARSE, FT_ERR_UNSUPPORTED (math
 * mode, a reduction no kernel serves, a reduction in fp8), FT_ERR_NOMEM.
 * Thread-safe. */
FT_API ft_status ft_check_problem(const ft_problem *p, char *msg, size_t msg_size);

/* The shape of y for p, known before anything is launched: *ndim 2 and shape {M, N} for an
 * elementwise epilogue, softmax, log_softmax, groupnorm and batchnorm; *ndim 1 and shape {M, 1}
 * for a row reduction (rowsum, rowmean, rowmax, rowmin, logsumexp); *ndim 2 and {M, N / w} (the
 * quotient rounded down) with a pool of window w (docs/EPILOGUE.md, "Reductions"). Checks p as
 * ft_check_problem does, except that it answers for the reductions no kernel serves yet too
 * (batchnorm, pools: ft_check_problem, tunes and plans refuse those with
 * FT_ERR_UNSUPPORTED). Returns FT_OK,
 * FT_ERR_INVALID_ARG (ndim or shape NULL, and as ft_check_problem; an epilogue that cannot apply to
 * p's N: groupnorm's G not dividing N, a window wider than N), FT_ERR_PARSE, FT_ERR_UNSUPPORTED
 * (math mode), FT_ERR_NOMEM; the reason in msg as ft_check_problem. Thread-safe. */
FT_API ft_status ft_output_shape(const ft_problem *p, int *ndim, int64_t shape[2], char *msg, size_t msg_size);

/* Looks up the best configuration for p on the current CUDA device.
 * fp32 (the default mode, math 0) means fp32 tensors at fp32 accuracy: unless flags has
 * FT_LOOKUP_MODE_ONLY, p in fp32 is served by the better of its fp32 and 3xtf32 results (each
 * found as below; the closer match wins, then the lower ratio to cuBLAS SGEMM, which both modes
 * are timed beside), since a 3xtf32 result is stored as correct only when its error is at most
 * cuBLAS SGEMM's own on the problem (docs/MODES.md). out->math says which mode serves; plan it
 * with p as it is (ft_plan_create takes a 3xtf32 configuration for an fp32 problem).
 * Exact key (device, shape, epilogue, math) with a current kernel source -> FT_OK, out->exact=1.
 * Else, unless flags has FT_LOOKUP_EXACT, the M bucket that covers p->m: of the shapes tuned on
 * this device with p's N, K, epilogue and math, the smallest tuned M >= p->m (beyond the largest
 * tuned M, the largest) whose best applies to p and is current -> FT_OK, out->exact = 2
 * (FT_MATCH_BUCKET), out->tuned_m the bucket's M. Tuning M at powers of two (`tune --shape
 * 1..4096xNxK`) makes every M of a model's serving range a bucket lookup. No warning: a bucket is
 * a tuned configuration of this N and K.
 * With FT_LOOKUP_NEAREST and neither: the best configuration tuned on this device for the
 * same epilogue and math at the nearest shape (distance in log space) that applies to p ->
 * FT_OK, out->exact = 0. A result measured with a kernel source other than today's is stale:
 * never returned (as exact or as a bucket).
 * Returns FT_OK, FT_ERR_INVALID_ARG (also unknown flags, FT_LOOKUP_EXACT with FT_LOOKUP_NEAREST),
 * FT_ERR_PARSE, FT_ERR_UNSUPPORTED (math mode), FT_ERR_NOT_FOUND,
 * FT_ERR_NO_DEVICE, FT_ERR_CUDA, FT_ERR_DB. Arguments are checked before any device or database
 * access. A lookup needs the GPU: results are stored under the current device's fingerprint (name,
 * compute capability, SM count, memory), which is part of the key, and read from the device itself.
 * So without a usable GPU (no driver, none visible) it answers FT_ERR_NO_DEVICE, even on an empty
 * database; ft_errmsg() says which ("no NVIDIA driver found ..."). To read results tuned on
 * another machine without its GPU, name the device: ft_lookup_entry() (fusedtune_tool.h). */
FT_API ft_status ft_lookup(ft_ctx *ctx, const ft_problem *p, unsigned flags, ft_config *out);

/* The fastest stored configuration for p whose measured error is within tolerance, across the
 * modes that take p's tensors: fp32 tensors (p->math FP32, TF32 or 3XTF32) -> fp32, 3xtf32 and
 * tf32 results; bf16 -> bf16 and, where K is a multiple of 16, fp8 results of the fp8 problem
 * with the epilogue ft_fp8_epilogue(p->epilogue) (its stored error is against the bf16 layer:
 * plan that problem, quantizing x per token and W per channel with ft_quantize_e4m3); fp16 ->
 * fp16 only. "Error" is the relative L2 error against float64
 * measured when the configuration was tuned, on the tune's random inputs at the tuned shape
 * (docs/MODES.md): a measurement, not a promise for other inputs. Exact shapes only (no M
 * bucket), current kernel sources only. out->math says which mode was picked and out->rel_err its error: make the
 * plan with a problem of that math. Within a mode each candidate is that mode's stored best (ranked
 * against the mode's own cuBLAS GEMM); across modes the stored medians decide, as no common
 * reference was timed beside them. Ties in time go to the smaller error. tolerance must be > 0
 * and finite. Without a call to this function nothing changes: ft_lookup serves p->math alone.
 * Returns what ft_lookup returns; FT_ERR_NOT_FOUND when nothing stored is within tolerance, the
 * message naming the smallest error available. */
FT_API ft_status ft_lookup_within(ft_ctx *ctx, const ft_problem *p, double tolerance, ft_config *out);

/* Makes a launchable plan of cfg for p: takes the cubin from the database cache, compiling with
 * NVRTC only on a miss (then storing it unless the database is read-only), loads it on the
 * current device and allocates what it needs (split-K and stream-K workspace, stream-K's flags,
 * an eager chain's intermediate buffers, a pre-split 3xtf32 plan's parts).
 * *plan is owned by the caller: ft_plan_destroy() it before ft_close(ctx).
 * cfg must compute in p->math, except that an fp32 problem takes a 3xtf32 configuration (both
 * bind fp32 tensors; ft_lookup serves fp32 so).
 * Returns FT_OK, FT_ERR_INVALID_ARG, FT_ERR_PARSE, FT_ERR_UNSUPPORTED (cfg not applicable to p,
 * or a stream-K configuration whose grid does not fit on this device at once),
 * FT_ERR_NO_DEVICE, FT_ERR_COMPILE, FT_ERR_CUDA, FT_ERR_DB, FT_ERR_NOMEM. */
FT_API ft_status ft_plan_create(ft_ctx *ctx, const ft_problem *p, const ft_config *cfg,
                                ft_plan **plan);

/* A vector or matrix named by the epilogue (e.g. "bias", or "r" of `x + r where mat r`): device
 * pointer to n elements (per column) or m (per row) of the args' dtype, or for a matrix to an
 * [m, n] row-major matrix of it, element-aligned and not overlapping y (both checked at launch). */
typedef struct ft_vec_arg {
  const char *name;
  const void *data;
} ft_vec_arg;

/* A scalar named by the epilogue (e.g. "c"). */
typedef struct ft_scalar_arg {
  const char *name;
  float value;
} ft_scalar_arg;

/* Launch arguments: device pointers, bound by name. A name the epilogue needs that is not
 * bound here is an error unless the expression gives it a default (scalars only). dtype says
 * what x, w, y, the vectors and matrices hold; it must be the plan's mode's (ft_math_dtype), else
 * FT_ERR_INVALID_ARG: a zero-initialized ft_args means fp32 tensors. One dtype for all cannot
 * say what an fp8 plan binds: those take ft_typed_args (ft_plan_launch refuses them). */
typedef struct ft_args {
  const void *x; /* [m, k] row-major */
  const void *w; /* [n, k] row-major; with x2 in the epilogue (a gated pair) the interleaved [2n, k]
                  * weight (ft_gated_interleave) */
  void *y;       /* [m, n] row-major, written */
  const ft_vec_arg *vecs; /* the epilogue's vectors and matrices, by name */
  int n_vecs;
  const ft_scalar_arg *scalars;
  int n_scalars;
  ft_dtype dtype; /* element type of x, w, y and vecs */
} ft_args;

/* Enqueues the plan on stream (asynchronous; errors of the kernel itself surface at the next
 * synchronization). A plan's launches must not overlap in time (two streams at once): split-K,
 * stream-K, eager-chain (eager_...) and pre-split 3xtf32 configurations reuse the plan's workspace; one stream, or one plan per stream, is
 * safe, CUDA graph capture included. Checks arguments first: NULL pointers, alignment the variant needs, unbound
 * or unknown names -> FT_ERR_INVALID_ARG with a message on the plan's context, nothing launched.
 * Returns FT_OK, FT_ERR_INVALID_ARG, FT_ERR_CUDA, FT_ERR_CUBLAS. */
FT_API ft_status ft_plan_launch(ft_plan *plan, const ft_args *args, cudaStream_t stream);

/* ft_plan_launch with the arguments as pointers, for a caller that launches one plan many times
 * (a framework's op): no names to match and no struct to fill per call. x, w, y and the vectors
 * hold the plan's mode's element type (ft_math_dtype; not checked here: pointers carry no type).
 * vecs and scalars are indexed by the epilogue's parameter slot, the order of
 * ft_epilogue_inspect's params (fusedtune_tool.h; bias included, by name): for a vector (or
 * matrix) slot s vecs[s] is its device pointer, for a scalar slot scalars[s] its value; the other
 * kind's entries are not read. vecs may be NULL when the epilogue has no vector; scalars NULL takes every
 * scalar's default (FT_ERR_INVALID_ARG naming one without). The same checks and launch as
 * ft_plan_launch otherwise (alignment, NULL pointers, the same overlap rule), with no lookup,
 * allocation or lock on the way; on CUDA graph capture see ft_plan_launch. An fp8 plan is refused
 * (FT_ERR_INVALID_ARG: its tensors have three element types, ft_plan_launch_typed).
 * Returns FT_OK, FT_ERR_INVALID_ARG, FT_ERR_CUDA, FT_ERR_CUBLAS. */
FT_API ft_status ft_plan_launch_ptrs(ft_plan *plan, const void *x, const void *w, void *y, const void *const *vecs,
                                     const float *scalars, cudaStream_t stream);

/* A tensor bound at launch with its element type: x, w, y, or a vector named by the epilogue. */
typedef struct ft_tensor_arg {
  const char *name; /* the epilogue's name for a vector; ignored for x, w and y */
  const void *data; /* device pointer */
  ft_dtype dtype;   /* what data holds */
} ft_tensor_arg;

/* Launch arguments with the element type of every tensor: what an fp8 plan needs (e4m3 x and w,
 * bf16 y, bias and matrix operands (`mat r`), fp32 scale vectors; ft_math_dtype,
 * ft_math_out_dtype), and valid for every
 * mode. struct_size = sizeof(ft_typed_args) (FT_TYPED_ARGS_INIT), so the struct can grow. */
typedef struct ft_typed_args {
  size_t struct_size;
  ft_tensor_arg x; /* [m, k] row-major (fp8: e4m3, K-major as nn.Linear's input) */
  ft_tensor_arg w; /* [n, k] row-major (fp8: e4m3); a gated pair's interleaved [2n, k] */
  ft_tensor_arg y; /* [m, n] row-major, written (fp8: bf16) */
  const ft_tensor_arg *vecs;
  int n_vecs;
  const ft_scalar_arg *scalars; /* fp8 per-tensor scales are scalars ("scalar sx") */
  int n_scalars;
  /* An e4m3 output, for a next fp8 layer that then skips its quantizer: with y.dtype FT_DTYPE_E4M3
   * the launch writes E's result into y_work ([rows, cols] of ft_math_out_dtype, the output's
   * [M, N] shape (ft_output_shape; a one-value row reduction's [M] is refused), 16-byte aligned),
   * then quantizes it per row as ft_quantize_e4m3 with FT_SCALE_ROW does, on the same stream: y
   * the e4m3 codes, y_scales rows fp32 scales (code * scale ~ E's result). quantizer: one made from
   * the plan's context. The quantizer's kernel after the plan's; no allocation (y_work is the
   * caller's). Unused (may be zero) for any other y dtype. */
  float *y_scales;
  void *y_work;
  ft_quantizer *quantizer;
} ft_typed_args;
#define FT_TYPED_ARGS_INIT {sizeof(ft_typed_args), {0}, {0}, {0}, 0, 0, 0, 0, 0, 0, 0}

/* As ft_plan_launch, with each tensor's element type checked against what the plan reads or
 * writes there: any mismatch (an fp16 y for a bf16 output, a bf16 scale where the plan reads
 * fp32) is FT_ERR_INVALID_ARG naming the tensor, nothing launched, never a reinterpretation.
 * y may be FT_DTYPE_E4M3 in every mode (an e4m3 output: y_work, y_scales and quantizer above;
 * a GPU of sm_89 or newer, as the quantizer).
 * Returns FT_OK, FT_ERR_INVALID_ARG, FT_ERR_CUDA, FT_ERR_CUBLAS. */
FT_API ft_status ft_plan_launch_typed(ft_plan *plan, const ft_typed_args *args, cudaStream_t stream);

/* Frees the plan and its device resources. NULL is a no-op. */
FT_API void ft_plan_destroy(ft_plan *plan);

/* Tells the plan that the memory at the weight's address may hold new contents (a training step,
 * a load into the same memory, a free and a new allocation at the same address). A 3xtf32 plan
 * whose configuration pre-splits the operands ("presplit": 1; names "..._h<chunk>w_...") keeps W
 * split into big and small tf32 parts from the first launch with that W pointer and reuses it
 * while the pointer stays: after such a change, call this before the next launch (or the plan
 * computes with the old W). A launch with another W pointer splits that W by itself, so one plan
 * may serve several weights, at the cost of a split of W whenever the pointer changes. A launch
 * captured into a CUDA graph reads the split the plan holds when it holds one for that W (a
 * launch before the capture, as a warm-up makes, leaves it there): each replay reads it as it is
 * then, so after changing W in place call this and launch once outside the graph before the next
 * replay, and do not launch the plan with another W between replays (that W's split would
 * replace it). Where the plan holds no split of that W, the graph splits W at every replay.
 * Every other plan reads W at each launch; for those this does nothing. NULL is ignored. */
FT_API void ft_plan_weight_changed(ft_plan *plan);

/* A gated pair's weight (an epilogue with x2, `silu(x) * x2`: docs/EPILOGUE.md, "Gated pairs"):
 * its plans take w = one [2n, k] row-major matrix with W1's and W2's rows interleaved in groups
 * of 8, rows 16j .. 16j + 7 W1's 8j .. 8j + 7 and rows 16j + 8 .. 16j + 15 W2's, so x is the
 * product with W1 and x2 with W2; the problem's n is the output's (and W1's) row count. This writes
 * that matrix to dst from w1 and w2 ([n, k] row-major each, elem_size 1, 2 or 4 bytes per
 * element, n a multiple of 8). Pointers: all three host memory (copied here, stream not used), or
 * any mix the CUDA runtime can address (device, pinned, managed: enqueued on stream as two 2-D
 * copies, graph-capturable). dst must not overlap w1 or w2. msg (may be NULL) receives a one-line
 * reason on failure. Returns FT_OK, FT_ERR_INVALID_ARG (NULL pointers, n not a positive multiple
 * of 8, k < 1, another element size, dst overlapping), FT_ERR_CUDA. */
FT_API ft_status ft_gated_interleave(const void *w1, const void *w2, void *dst, int64_t n, int64_t k, size_t elem_size,
                                     cudaStream_t stream, char *msg, size_t msg_size);

/* The fp8 quantizer: a bf16 (fp16, fp32) matrix [rows, cols] row-major on the device becomes
 * e4m3 codes [rows, cols] and fp32 scales, scale = amax / 448 (1 where amax is 0), code =
 * e4m3(v / scale) rounded to nearest even and saturated to +-448; y's dequantized value is
 * code * scale. FT_SCALE_ROW: a scale per row, rows of them (x per token: "row sx"; W [N, K] per
 * output channel: "col sw"); FT_SCALE_TENSOR: one ("scalar"; read it back to bind it as a scalar).
 * Inputs must be finite. Made once per context and device (ft_quantizer_create compiles its
 * kernels with NVRTC, about a second); ft_quantize_e4m3 only enqueues (graph-capturable), so x
 * can be quantized on every call and W once. */
typedef enum ft_scaling { FT_SCALE_TENSOR = 0, FT_SCALE_ROW = 1 } ft_scaling;
/* Returns FT_OK, FT_ERR_INVALID_ARG, FT_ERR_NO_DEVICE, FT_ERR_UNSUPPORTED (a GPU before sm_89,
 * which has no e4m3 conversion), FT_ERR_COMPILE, FT_ERR_CUDA, FT_ERR_NOMEM. */
FT_API ft_status ft_quantizer_create(ft_ctx *ctx, ft_quantizer **out);
/* src of src_dtype (FT_DTYPE_BF16, F16 or F32), dst rows * cols bytes, scales rows (FT_SCALE_ROW)
 * or 1 floats, all device pointers (src aligned to its element size; 16-byte aligned src, dst
 * aligned to 8 codes (4 for fp32) and cols a multiple of 8 (4) take the fastest path). Returns
 * FT_OK, FT_ERR_INVALID_ARG (NULL pointers, a dimension < 1, another dtype, src unaligned),
 * FT_ERR_CUDA. */
FT_API ft_status ft_quantize_e4m3(ft_quantizer *q, const void *src, ft_dtype src_dtype, int64_t rows, int64_t cols,
                                  ft_scaling scaling, void *dst, float *scales, cudaStream_t stream);
FT_API void ft_quantizer_destroy(ft_quantizer *q); /* NULL is a no-op */

/* The fp8 problem of a bf16 layer y = E(x W^T): E with x replaced by (x * sx * sw) and "row sx,
 * col sw" declared (per-token x per-channel scales, what ft_quantize_e4m3 makes with FT_SCALE_ROW
 * for x and W), and a gated pair's x2 by (x2 * sx * sw2) with "col sw2" (the second weight's
 * per-channel scales: quantize W1 and W2 apart, then ft_gated_interleave the codes, elem_size 1),
 * in canonical form, into out. A matrix operand stays as it is (bf16 in fp8, as y). This is the
 * epilogue ft_lookup_within tries in fp8 for a bf16 problem. Returns FT_OK, FT_ERR_INVALID_ARG
 * (NULL, or out too small), FT_ERR_PARSE (E does not parse, or already names sx or sw, or, with
 * x2, sw2), FT_ERR_UNSUPPORTED (E has no fp8 form: x or x2 not exactly once, a reduction).
 * Thread-safe, no GPU. */
FT_API ft_status ft_fp8_epilogue(const char *epilogue, char *out, size_t out_size);

/* One update of a running tune, given to ft_tune_options.progress. Plain data, valid only
 * during the call. */
typedef struct ft_tune_progress {
  const char *phase;   /* "preparing", "compiling", "compiled" (a step: message set, total 0),
                        * or "safe" (the cuBLAS + epilogue-pass candidates, measured first),
                        * "tuning", "screening", "timing" (a loop over candidates) */
  const char *message; /* a line for people ("compiling 120 candidate(s)..."); "" in loops */
  int done, total;     /* candidates finished and to run in this phase; 0, 0 for a step */
  double best_ms;      /* best-ranked correct candidate so far, in ms at the clock of this run's
                        * cuBLAS GEMM baseline (its ratio to cuBLAS times that GEMM's median);
                        * < 0 when none yet */
  double elapsed_s;    /* since the tune started */
  double eta_s;        /* estimated seconds left in the search; < 0 when unknown */
  double eager_ms;     /* the eager-style baseline of this run, at best_ms's clock (best_ms is
                        * compared with it); 0 when not timed. Added in 0.2: read it only when
                        * ft_version_number() >= 2000 (a 0.1 library does not write it) */
} ft_tune_progress;

/* Called by ft_tune on the tuning thread; must not call back into the same ft_ctx. */
typedef void (*ft_tune_progress_fn)(void *user, const ft_tune_progress *update);

/* Options of ft_tune. Start from FT_TUNE_OPTIONS_INIT; struct_size rejects uninitialized use.
 * The fields from progress on were added in 0.2: a struct_size of FT_TUNE_OPTIONS_V1_SIZE (a
 * program built against 0.1) is accepted and they read as NULL / 0. */
typedef struct ft_tune_options {
  size_t struct_size;   /* sizeof(ft_tune_options) */
  const char *strategy; /* search: "fast" (default), "exhaustive", "random", "halving"; NULL = "fast" */
  double budget_s;      /* wall-clock bound of the whole tune; 0 = default (150 s) */
  int repeats;          /* timed repeats per candidate, >= 20 (default 30) */
  int retune;           /* 1: measure again even when results exist */
  int flush_l2;         /* 1: flush L2 between timed repeats */
  int quiet;            /* 1: progress is never called */
  uint64_t seed;        /* input seed; 0 = default */
  ft_tune_progress_fn progress; /* NULL: no progress reports (the library never prints) */
  void *progress_user;          /* passed to progress */
  volatile int *stop;   /* NULL, or set nonzero (a SIGINT handler) to end the tune after the
                         * candidate in flight: FT_ERR_INTERRUPTED, what was measured stays stored */
  const char *worker_exe; /* executable serving `EXE __worker FD` (see ft_worker_serve in
                           * fusedtune_tool.h); NULL: $FUSEDTUNE_WORKER, else fusedtune-worker
                           * found from the library's folder (../libexec/fusedtune/ installed) */
  int max_candidates;   /* measure at most this many candidates; 0 = all */
  int mode_only;        /* 1: tune p->math alone. 0 (default): a problem in fp32 (the default mode)
                         * is tuned at fp32 accuracy, in 3xtf32 (on devices of compute capability
                         * 9.0 and newer) and then in fp32, whose FFMA kernels are not compiled
                         * where the stored 3xtf32 best is faster than FFMA can be (ft_tune);
                         * added in 0.3 */
} ft_tune_options;

#define FT_TUNE_OPTIONS_V1_SIZE (offsetof(ft_tune_options, seed) + sizeof(uint64_t))
#define FT_TUNE_OPTIONS_INIT \
  {sizeof(ft_tune_options), "fast", 0.0, 30, 0, 0, 1, 0, NULL, NULL, NULL, NULL, 0, 0}

/* Tunes p on the current device, storing every measured candidate, and writes the best
 * launchable configuration to *best. Needs a writable database and a GPU. p in fp32 without
 * opt->mode_only is tuned in 3xtf32 (compute capability >= 9.0) and in fp32, each stored under
 * its own mode, and *best is what ft_lookup then serves (best->math says which); the budget
 * applies to each.
 * Candidates run in a worker process (opt->worker_exe, else the executable named by
 * $FUSEDTUNE_WORKER, else fusedtune-worker, found from the library's folder: installed in
 * ../libexec/fusedtune/, beside it in a build tree), so a faulting or hanging kernel costs one
 * result and a restart; a named worker that cannot be run is FT_ERR_IO; without a worker
 * executable they run in this process (the first progress message says where the library
 * looked) and a fault ends the tune with FT_ERR_CUDA (what was measured stays stored). Progress goes to opt->progress, never to a
 * stream. Blocks for up to the budget; not to be called concurrently on one ctx.
 * Every search measures and stores the cuBLAS + epilogue-pass candidates before any fused GEMM
 * kernel, so a tune ended by its budget, by opt->stop or by a failure never leaves a best slower
 * than the fastest of those (their measuring always completes; the budget bounds the rest).
 * "fast" then screens the fused kernels in the cost model's order with a few repeats, stops
 * when the model (its error measured in the same run) says the rest cannot win, and times the
 * best few in full; "exhaustive" times every candidate in full (docs/ARCHITECTURE.md).
 * Returns FT_OK, FT_ERR_INVALID_ARG, FT_ERR_PARSE, FT_ERR_UNSUPPORTED, FT_ERR_NO_DEVICE,
 * FT_ERR_CUDA, FT_ERR_CUBLAS, FT_ERR_COMPILE, FT_ERR_DB, FT_ERR_NOT_FOUND (no candidate was
 * correct), FT_ERR_INTERRUPTED, FT_ERR_IO (a worker that cannot be run or started). */
FT_API ft_status ft_tune(ft_ctx *ctx, const ft_problem *p, const ft_tune_options *opt,
                         ft_config *best);

#ifdef __cplusplus
}
#endif
#endif /* FUSEDTUNE_H */
