/* Internal hooks of the C API: what the files of the public API (api*.c) share about an ft_ctx,
 * and, for tests, a pretended device so lookups run without a GPU. */
#ifndef FT_API_INTERNAL_H
#define FT_API_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "device.h"
#include "epilogue.h"
#include "launch.h"
#include "space.h"
#include "tuner.h"

/* A plan (ft_plan_create in api.c; its launches in api_launch.c). */
struct ft_plan {
  ft_ctx *ctx;
  char name[FT_NAME_MAX];
  ft_epilogue *ep;
  ft_launchable run;
};

void ft__ctx_set_device(ft_ctx *ctx, const ft_device_info *dev, const ft_device_limits *lim);

/* Whether the byte ranges [a, a + na) and [b, b + nb) share a byte (buffers a launch writes must not). */
static inline int ft__ranges_overlap(const void *a, size_t na, const void *b, size_t nb) {
  const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  return pa < pb + nb && pb < pa + na;
}

/* The context a quantizer was made from (NULL for NULL). */
ft_ctx *ft__quantizer_ctx(const ft_quantizer *q);
/* An e4m3 y's fields (ft_typed_args with y.dtype FT_DTYPE_E4M3) for a plan of epilogue ep at m x n
 * in mode math, before any launch: struct_size holding them, all set, y_scales 4- and y_work
 * 16-byte aligned, an [M, N] output (*rows x *cols) of at most 2^31 - 1 rows, y / y_work /
 * y_scales apart. FT_ERR_INVALID_ARG naming what is wrong. GPU-free (src/api/e4m3_out.c). */
ft_status ft__e4m3_out_check(const ft_typed_args *a, const ft_epilogue *ep, int64_t m, int64_t n, ft_math math,
                             int64_t *rows, int64_t *cols, ft_err *err);

/* The context's error record, database and open flags (FT_OPEN_*). */
ft_err *ft__ctx_err(ft_ctx *ctx);
ft_db *ft__ctx_db(ft_ctx *ctx);
unsigned ft__ctx_flags(const ft_ctx *ctx);
/* The context's GPU (the current device), opened on first use. */
ft_status ft__ctx_gpu(ft_ctx *ctx, ft_gpu **out);
/* Checks p (ft__check_problem) and parses its epilogue; *ep is owned by ctx, valid until the
 * next call on ctx. */
ft_status ft__ctx_problem(ft_ctx *ctx, const ft_problem *p, const ft_epilogue **ep);

/* The calling thread's current CUDA device (0 when none can be asked). */
int ft__current_device(void);

/* ft_check_problem without the epilogue parse: p, shape range, epilogue set, math mode. */
ft_status ft__check_problem(const ft_problem *p, ft_err *err);
/* What the parsed epilogue adds to the check: p's mode's rules (fp8: ft_fp8_check), it applies to
 * p's N (ft_ep_output_shape) and a kernel serves it (ft_ep_check_kernels). */
ft_status ft__check_epilogue_fits(const ft_problem *p, const ft_epilogue *ep, ft_err *err);

/* ft_lookup on the current device (device_name NULL) or on the device stored under that name;
 * *exact is FT_MATCH_EXACT for p's own shape, FT_MATCH_BUCKET for an M bucket (src/api/buckets.c),
 * FT_MATCH_NEAREST for the nearest (FT_LOOKUP_NEAREST). */
ft_status ft__lookup_best(ft_ctx *ctx, const char *device_name, const ft_problem *p, unsigned flags,
                          ft_best *out, int *exact);
void ft__fill_config(ft_config *out, const ft_best *b, int exact);
/* Whether b was measured with the kernel source generated today for (ep, b's config), through
 * the context's memo of source hashes. */
int ft__ctx_source_current(ft_ctx *ctx, const ft_epilogue *ep, const ft_best *b);
/* The M bucket serving p on device device_id (src/api/buckets.c): of the bests of key's epilogue and
 * math with p's N and K, the smallest tuned M > p->m, else the largest below, whose results hold
 * one that applies to p (lim: the device's) and is current. *found 0 when there is none. */
ft_status ft__lookup_bucket(ft_ctx *ctx, int64_t device_id, const ft_device_limits *lim, const ft_problem *p,
                            const ft_epilogue *ep, const ft_problem_key *key, ft_best *out, int *found);
/* ft_lookup_within on the current device (device_name NULL) or the one stored under that name. */
ft_status ft__lookup_within(ft_ctx *ctx, const char *device_name, const ft_problem *p, double tolerance,
                            ft_best *out);

/* ft_tune's run: the whole summary (caller frees it with ft_tune_summary_free). */
ft_status ft__tune_summary(ft_ctx *ctx, const ft_problem *p, const ft_tune_options *opt,
                           ft_tune_summary *sum);

/* Binds ep's names to a's vectors, matrices and scalars for an [m, n] output (src/api/api_bind.c):
 * FT_ERR_INVALID_ARG naming the operand when one is missing, unknown, misaligned or overlaps y. */
ft_status ft__bind_args(const ft_epilogue *ep, const ft_args *a, int m, int n, ft_ep_args_dev *dev, ft_err *err);
/* A matrix operand's checks (element-aligned, apart from the output y, E's output shape for an
 * [m, n] GEMM result: [m] after a one-value reduction) and its slot's scalar word (the row pitch,
 * ft_ep_mat_pitch). */
ft_status ft__bind_matrix(const char *name, const void *data, ft_dtype dtype, const void *y, const ft_epilogue *ep,
                          int m, int n, float *pitch_word, ft_err *err);

/* Copies a message into a caller buffer (msg may be NULL, msg_size 0). */
void ft__copy_msg(char *msg, size_t msg_size, const char *text);

#endif
