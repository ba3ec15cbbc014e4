/* Random problem data in every math mode (numbers.h makes and rounds the values), the float64
 * references (cuBLAS DGEMM on the inputs as the kernels see them, then the epilogue evaluated in
 * double by the same AST), the error norms every candidate is judged by, and cuBLAS's own error
 * that the tolerance (tolerance.h) starts from. */
#include "verify.h"

#include "compile.h"
#include "embedded.h"
#include "launch.h"
#include "parallel.h"
#include "verify_internal.h"
#include "fp8.h"
#include "gated.h"

#include <cublas_v2.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct narrow_job {
  ft_dtype dt;
  float *src;
  uint16_t *dst;
} narrow_job;

static void narrow_chunk(void *user, int chunk, size_t begin, size_t end) {
  (void)chunk;
  const narrow_job *j = user;
  for (size_t i = begin; i < end; i++) {
    j->dst[i] = j->dt == FT_DTYPE_BF16 ? ft_f32_to_bf16(j->src[i]) : ft_f32_to_f16(j->src[i]);
    j->src[i] = ft_round_to(j->dt, j->src[i]);
  }
}

/* Rounds src in place to the element type of d (16-bit modes) and uploads it in that type. */
static ft_status upload(const ft_pdata *d, void **dst, float *src, size_t n, ft_err *err) {
  FT_CUDA_TRY(err, cudaMalloc(dst, n * d->elem));
  if (d->dtype == FT_DTYPE_F32) {
    FT_CUDA_TRY(err, cudaMemcpy(*dst, src, n * sizeof(float), cudaMemcpyHostToDevice));
    return FT_OK;
  }
  uint16_t *tmp = malloc(n * sizeof *tmp);
  if (!tmp) return ft__fail(err, FT_ERR_NOMEM, "out of host memory for a %zu-element upload", n);
  narrow_job j = {d->dtype, src, tmp};
  ft_parallel_chunks(n, ft_host_chunks(n), 0, narrow_chunk, &j);
  const cudaError_t e = cudaMemcpy(*dst, tmp, n * sizeof *tmp, cudaMemcpyHostToDevice);
  free(tmp);
  return e == cudaSuccess ? FT_OK : ft_cuda_fail(err, e, "input upload");
}

typedef struct widen_job {
  const float *src;
  double *dst;
} widen_job;

static void widen_chunk(void *user, int chunk, size_t begin, size_t end) {
  (void)chunk;
  const widen_job *j = user;
  for (size_t i = begin; i < end; i++) j->dst[i] = j->src[i];
}

/* src widened to double on the device, through two pinned staging buffers: each block is
 * widened (on several threads) while the previous one is copied. Where pinned memory cannot be
 * had, one pageable buffer of the whole. */
#define FT_STAGE_DOUBLES ((size_t)4 << 20) /* 32 MiB per staging buffer */
static ft_status upload_double(double **dst, const float *src, size_t n, ft_err *err) {
  cudaError_t e = cudaMalloc((void **)dst, n * sizeof(double));
  if (e != cudaSuccess) return ft_cuda_fail(err, e, "reference upload");
  double *stage = NULL;
  cudaEvent_t done[2] = {NULL, NULL};
  const size_t block = n < FT_STAGE_DOUBLES ? n : FT_STAGE_DOUBLES;
  if (cudaMallocHost((void **)&stage, 2 * block * sizeof(double)) != cudaSuccess ||
      cudaEventCreateWithFlags(&done[0], cudaEventDisableTiming) != cudaSuccess ||
      cudaEventCreateWithFlags(&done[1], cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    if (stage) cudaFreeHost(stage);
    if (done[0]) cudaEventDestroy(done[0]);
    double *tmp = malloc(n * sizeof(double));
    if (!tmp) return ft__fail(err, FT_ERR_NOMEM, "out of host memory for the reference (%zu doubles)", n);
    widen_job j = {src, tmp};
    ft_parallel_chunks(n, ft_host_chunks(n), 0, widen_chunk, &j);
    e = cudaMemcpy(*dst, tmp, n * sizeof(double), cudaMemcpyHostToDevice);
    free(tmp);
    return e == cudaSuccess ? FT_OK : ft_cuda_fail(err, e, "reference upload");
  }
  for (size_t at = 0, b = 0; at < n && e == cudaSuccess; at += block, b ^= 1) {
    const size_t len = n - at < block ? n - at : block;
    double *buf = stage + b * block;
    e = cudaEventSynchronize(done[b]); /* its previous copy has finished (an unrecorded event is done) */
    if (e != cudaSuccess) break;
    widen_job j = {src + at, buf};
    ft_parallel_chunks(len, ft_host_chunks(len), 0, widen_chunk, &j);
    e = cudaMemcpyAsync(*dst + at, buf, len * sizeof(double), cudaMemcpyHostToDevice, 0);
    if (e == cudaSuccess) e = cudaEventRecord(done[b], 0);
  }
  const cudaError_t e2 = cudaStreamSynchronize(0);
  if (e == cudaSuccess) e = e2;
  cudaEventDestroy(done[0]);
  cudaEventDestroy(done[1]);
  cudaFreeHost(stage);
  return e == cudaSuccess ? FT_OK : ft_cuda_fail(err, e, "reference upload");
}

/* acc[m][n] = sum_k x[m][k] * W[n][k] in float64 on the GPU (row-major device dx, dw; host acc). */
static ft_status reference_gemm_device(ft_gpu *g, const double *dx, const double *dw, int m, int n, int k,
                                       double *acc, ft_err *err) {
  void *hv;
  FT_TRY(ft_gpu_cublas(g, &hv, err));
  cublasHandle_t h = hv;
  double *dy = NULL;
  const cudaError_t ea = cudaMalloc((void **)&dy, (size_t)m * n * sizeof(double));
  ft_status st = ea == cudaSuccess ? FT_OK : ft_cuda_fail(err, ea, "reference output");
  if (st == FT_OK) {
    /* Column-major view: y^T [n x m] = W [k x n]^T * x^T [k x m]. */
    const double one = 1.0, zero = 0.0;
    cublasStatus_t s = cublasSetStream(h, 0);
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, dw, k, dx, k, &zero, dy, n);
    if (s != CUBLAS_STATUS_SUCCESS) st = ft_cublas_fail(err, s, "reference cublasDgemm");
  }
  if (st == FT_OK) {
    cudaError_t e = cudaMemcpy(acc, dy, (size_t)m * n * sizeof(double), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) st = ft_cuda_fail(err, e, "reference download");
  }
  cudaFree(dy);
  return st;
}

/* The same from host inputs, widened to double on their way over. */
ft_status ft__reference_gemm(ft_gpu *g, const float *hx, const float *hw, int m, int n, int k,
                                double *acc, ft_err *err) {
  double *dx = NULL, *dw = NULL;
  ft_status st = upload_double(&dx, hx, (size_t)m * k, err);
  if (st == FT_OK) st = upload_double(&dw, hw, (size_t)n * k, err);
  if (st == FT_OK) st = reference_gemm_device(g, dx, dw, m, n, k, acc, err);
  cudaFree(dx);
  cudaFree(dw);
  return st;
}

/* ---- the inputs made on the GPU (kernels_src/input_gen.cu) ---- */


ft_status ft_input_gen_open(ft_gpu *g, ft_loaded *gen, ft_err *err) {
  memset(gen, 0, sizeof *gen);
  size_t len = 0;
  const char *src = ft__embedded("kernels_src/input_gen.cu", &len);
  if (!src) return ft__fail(err, FT_ERR_INTERNAL, "kernels_src/input_gen.cu is not embedded");
  void *cubin = NULL;
  size_t size = 0;
  char *log = NULL;
  ft_status st = ft_compile_one(src, ft_gpu_arch(g), &cubin, &size, &log, err);
  if (st == FT_OK) st = ft_loaded_init(gen, cubin, size, "ft_make_input", NULL, err);
  free(cubin);
  free(log);
  return st;
}

ft_status ft_input_gen_fill(const ft_loaded *gen, ft_dtype dt, size_t n, float lo, float hi, uint64_t *s,
                            void *elem, double *ref, ft_err *err) {
  unsigned long long count = n, s0 = *s;
  float span = hi - lo; /* in float, as ft_fill_uniform computes it */
  int dtype = (int)dt;
  void *args[] = {&count, &s0, &lo, &span, &dtype, &elem, &ref};
  const size_t want = (n + 255) / 256;
  const dim3 grid = {(unsigned)(want < 65536 ? (want > 0 ? want : 1) : 65536), 1, 1}, block = {256, 1, 1};
  FT_CUDA_TRY(err, cudaLaunchKernel((const void *)gen->main, grid, block, args, 0, 0));
  *s += (uint64_t)n * FT_RNG_STEP;
  return FT_OK;
}

/* From this many input elements (x and W together) on, ft_pdata_create makes the inputs on the GPU:
 * on the host, generating, rounding and widening them (and copying them over twice, once as
 * doubles) took most of a tune's preparation for a large W (docs/BENCHMARKS.md, "Why the search
 * space is what it is"), against one compilation of a small kernel on the GPU path. */
#define FT_DEVICE_INPUTS_MIN ((size_t)1 << 22)

/* x, W (in d's element type, and as doubles for the reference), the epilogue's parameters and
 * the reference GEMM, the inputs made by gen on the GPU. Leaves *s as host_inputs does. */
static ft_status device_inputs(ft_gpu *g, const ft_loaded *gen, ft_pdata *d, const ft_epilogue *ep, float bound,
                               uint64_t *s, ft_err *err) {
  const size_t nx = (size_t)d->m * d->k, nw = (size_t)d->gemm_n * d->k;
  double *dx = NULL, *dw = NULL;
  ft_status st = FT_OK;
  cudaError_t e = cudaMalloc(&d->dX, nx * d->elem);
  if (e == cudaSuccess) e = cudaMalloc(&d->dW, nw * d->elem);
  if (e == cudaSuccess) e = cudaMalloc((void **)&dx, nx * sizeof(double));
  if (e == cudaSuccess) e = cudaMalloc((void **)&dw, nw * sizeof(double));
  if (e != cudaSuccess) st = ft_cuda_fail(err, e, "input allocation");
  if (st == FT_OK) st = ft_input_gen_fill(gen, d->dtype, nx, 0.0f, 1.0f, s, d->dX, dx, err);
  if (st == FT_OK) st = ft_input_gen_fill(gen, d->dtype, nw, -bound, bound, s, d->dW, dw, err);
  if (st == FT_OK) st = ft__make_params(d, ep, bound, s, err);
  if (st == FT_OK) st = reference_gemm_device(g, dx, dw, d->m, d->gemm_n, d->k, d->ref, err);
  cudaFree(dx);
  cudaFree(dw);
  return st;
}

typedef struct epi_job {
  ft_pdata *d;
  const ft_epilogue *ep; /* NULL: the GEMM's norm only (E is x) */
  double gemm2[FT_MAX_CHUNKS], out2[FT_MAX_CHUNKS];
} epi_job;

static void epi_chunk(void *user, int chunk, size_t begin, size_t end) {
  epi_job *j = user;
  ft_pdata *d = j->d;
  const int np = j->ep ? ft_ep_param_count(j->ep) : 0;
  double vals[FT_EP_SLOTS] = {0};
  double g2 = 0.0, o2 = 0.0;
  for (size_t i = begin; i < end; i++) {
    double *v = &d->ref[i];
    if (isfinite(*v)) g2 += *v * *v;
    if (!j->ep) continue;
    d->ref_gemm[i] = *v;
    const size_t r = i / (size_t)d->n, c = i % (size_t)d->n;
    for (int s = 0; s < np; s++) vals[s] = ft__param_value(d, j->ep, s, r, c, i);
    *v = ft_ep_eval(j->ep, *v, vals);
    if (isfinite(*v)) o2 += *v * *v;
  }
  j->gemm2[chunk] = g2;
  j->out2[chunk] = o2;
}

/* A gated pair's chunk: ref [m, n] from the interleaved product ref_gemm [m, 2n]. */
static void gated_chunk(void *user, int chunk, size_t begin, size_t end) {
  epi_job *j = user;
  ft_pdata *d = j->d;
  const int np = ft_ep_param_count(j->ep);
  double vals[FT_EP_SLOTS] = {0};
  double o2 = 0.0;
  for (size_t i = begin; i < end; i++) {
    const size_t r = i / (size_t)d->n, c = i % (size_t)d->n;
    const double *g = d->ref_gemm + r * (size_t)d->gemm_n + (size_t)ft_gated_x_col((int64_t)c);
    for (int s = 0; s < np; s++) vals[s] = ft__param_value(d, j->ep, s, r, c, i);
    d->ref[i] = ft_ep_eval2(j->ep, g[0], g[FT_GATED_GROUP], vals);
    if (isfinite(d->ref[i])) o2 += d->ref[i] * d->ref[i];
  }
  j->out2[chunk] = o2;
}

/* ref holds the interleaved product [m, 2n] on entry: it becomes ref_gemm, and ref E(x, x2). */
static ft_status gated_reference(ft_pdata *d, const ft_epilogue *ep, ft_err *err) {
  const size_t gemm_total = (size_t)d->m * d->gemm_n, total = (size_t)d->m * d->n;
  double g2 = 0.0, o2 = 0.0;
  for (size_t i = 0; i < gemm_total; i++)
    if (isfinite(d->ref[i])) g2 += d->ref[i] * d->ref[i];
  d->ref_gemm = d->ref;
  d->ref_gemm_norm = sqrt(g2);
  d->out_count = (int64_t)total;
  d->ref = malloc(total * sizeof(double));
  if (!d->ref) return ft__fail(err, FT_ERR_NOMEM, "out of host memory for the gated pair's reference");
  epi_job j = {d, ep, {0}, {0}};
  const int nchunks = ft_host_chunks(total);
  ft_parallel_chunks(total, nchunks, 0, gated_chunk, &j);
  for (int c = 0; c < nchunks; c++) o2 += j.out2[c];
  d->ref_norm = sqrt(o2);
  return FT_OK;
}

/* A reduction's reference (ft_ep_eval_matrix) from x W^T in ref_gemm, the parameters as the
 * kernels read them. */
static ft_status reduce_reference(ft_pdata *d, const ft_epilogue *ep, ft_err *err) {
  int64_t rows = 0, cols = 0;
  FT_TRY(ft_ep_output_shape(ep, d->m, d->n, NULL, &rows, &cols, err));
  d->out_count = rows * cols;
  const int np = ft_ep_param_count(ep);
  double *vals[FT_EP_SLOTS] = {0};
  const double *cvals[FT_EP_SLOTS] = {0};
  d->ref = malloc((size_t)d->out_count * sizeof(double));
  ft_status st = d->ref ? FT_OK : ft__fail(err, FT_ERR_NOMEM, "out of host memory for the reduction's reference");
  for (int s = 0; s < np && st == FT_OK; s++) {
    const ft_ep_param *p = ft_ep_param_at(ep, s);
    const size_t len = p->kind == FT_PARAM_SCALAR   ? 1
                       : p->kind == FT_PARAM_MATRIX ? (size_t)d->m * (size_t)d->n
                                                    : (size_t)(p->kind == FT_PARAM_COLVEC ? d->n : d->m);
    vals[s] = malloc(len * sizeof(double));
    if (!vals[s]) st = ft__fail(err, FT_ERR_NOMEM, "out of host memory for the reduction's reference");
    for (size_t i = 0; st == FT_OK && i < len; i++) vals[s][i] = p->kind == FT_PARAM_SCALAR ? d->args.s[s] : d->hvec[s][i];
    cvals[s] = vals[s];
  }
  if (st == FT_OK) st = ft_ep_eval_matrix(ep, d->m, d->n, d->ref_gemm, cvals, d->ref, err);
  for (int s = 0; s < np; s++) free(vals[s]);
  double o2 = 0.0;
  for (int64_t i = 0; st == FT_OK && i < d->out_count; i++)
    if (isfinite(d->ref[i])) o2 += d->ref[i] * d->ref[i];
  d->ref_norm = sqrt(o2);
  return st;
}

/* ref holds x W^T on entry; keeps a copy in ref_gemm (unless E is x) and applies E to ref. */
static ft_status apply_epilogue(ft_pdata *d, const ft_epilogue *ep, ft_err *err) {
  if (ft_ep_uses_x2(ep)) return gated_reference(d, ep, err);
  const size_t total = (size_t)d->m * d->n;
  d->out_count = (int64_t)total;
  if (ft_ep_reduction(ep, NULL) != FT_RED_NONE) { /* the GEMM's values become ref_gemm */
    epi_job j = {d, NULL, {0}, {0}};
    const int nchunks = ft_host_chunks(total);
    ft_parallel_chunks(total, nchunks, 0, epi_chunk, &j);
    double g2 = 0.0;
    for (int c = 0; c < nchunks; c++) g2 += j.gemm2[c];
    d->ref_gemm_norm = sqrt(g2);
    d->ref_gemm = d->ref;
    d->ref = NULL;
    return reduce_reference(d, ep, err);
  }
  const int identity = strcmp(ft_ep_canonical(ep), "x") == 0;
  if (identity) {
    d->ref_gemm = d->ref;
  } else {
    d->ref_gemm = malloc(total * sizeof(double));
    if (!d->ref_gemm) return ft__fail(err, FT_ERR_NOMEM, "out of host memory for the GEMM reference");
  }
  epi_job j = {d, identity ? NULL : ep, {0}, {0}};
  const int nchunks = ft_host_chunks(total);
  ft_parallel_chunks(total, nchunks, 0, epi_chunk, &j);
  double g2 = 0.0, o2 = 0.0;
  for (int c = 0; c < nchunks; c++) g2 += j.gemm2[c], o2 += j.out2[c];
  d->ref_gemm_norm = sqrt(g2);
  d->ref_norm = identity ? d->ref_gemm_norm : sqrt(o2);
  return FT_OK;
}

ft_status ft__make_params(ft_pdata *d, const ft_epilogue *ep, float bound, uint64_t *seed, ft_err *err) {
  int np = ft_ep_param_count(ep);
  if (np > FT_EP_SLOTS) return ft__fail(err, FT_ERR_UNSUPPORTED, "more than %d parameters", FT_EP_SLOTS);
  for (int s = 0; s < np; s++) {
    const ft_ep_param *p = ft_ep_param_at(ep, s);
    if (p->kind == FT_PARAM_SCALAR) {
      d->args.s[s] = p->has_default ? (float)p->def : 1.5f;
      continue;
    }
    const int mat = p->kind == FT_PARAM_MATRIX;
    size_t len = mat ? (size_t)d->m * d->n : (size_t)(p->kind == FT_PARAM_COLVEC ? d->n : d->m);
    d->hvec[s] = malloc(len * sizeof(float));
    if (!d->hvec[s]) return ft__fail(err, FT_ERR_NOMEM, "out of host memory for operand '%s'", p->name);
    /* A matrix (a residual stream, say) is of the output's own scale: uniform in [-1, 1]. */
    ft_fill_uniform(d->hvec[s], len, mat ? -1.0f : -bound, mat ? 1.0f : bound, seed);
    if (ft_vec_is_f32(d->math, ep, s)) { /* fp8's fp32 vectors (the scales, set from the data later) */
      FT_CUDA_TRY(err, cudaMalloc(&d->dvec[s], len * sizeof(float)));
      FT_CUDA_TRY(err, cudaMemcpy(d->dvec[s], d->hvec[s], len * sizeof(float), cudaMemcpyHostToDevice));
    } else {
      FT_TRY(upload(d, &d->dvec[s], d->hvec[s], len, err)); /* hvec: the values as rounded */
    }
    d->args.v[s] = d->dvec[s];
    if (mat) d->args.s[s] = ft_ep_mat_pitch(d->n); /* contiguous [M, N] */
  }
  return FT_OK;
}

static ft_status host_inputs(ft_gpu *g, ft_pdata *d, const ft_epilogue *ep, float bound, uint64_t *s, ft_err *err);

ft_status ft_pdata_create(ft_gpu *g, int m, int n, int k, const ft_epilogue *ep, ft_math math, uint64_t seed,
                          ft_pdata **out, ft_err *err) {
  *out = NULL;
  ft_pdata *d = calloc(1, sizeof *d);
  if (!d) return ft__fail(err, FT_ERR_NOMEM, "out of host memory");
  d->m = m;
  d->n = n;
  d->k = k;
  d->gemm_n = (int)ft_gemm_cols(ep, n);
  d->math = math;
  d->ep = ep;
  d->dtype = ft_math_out_dtype(math);
  d->elem = d->dtype == FT_DTYPE_F32 ? sizeof(float) : sizeof(uint16_t);
  uint64_t s = seed ? seed : 0x5eed5eedULL;
  float bound = 1.0f / sqrtf((float)k); /* nn.Linear's initialization range */
  const size_t gemm_elems = (size_t)m * d->gemm_n;
  d->ref = malloc(gemm_elems * sizeof(double));
  /* Pinned, so the copy back before each check runs at the bus's speed; pageable when that fails. */
  if (cudaMallocHost(&d->host_y, gemm_elems * d->elem) == cudaSuccess) {
    d->host_y_pinned = 1;
  } else {
    cudaGetLastError(); /* not sticky: clear it */
    d->host_y = malloc(gemm_elems * d->elem);
  }
  ft_status st = FT_OK;
  if (!d->ref || !d->host_y) st = ft__fail(err, FT_ERR_NOMEM, "out of host memory for %dx%dx%d", m, n, k);
  /* Large inputs are made on the GPU (the same values); where its generator does not compile,
   * on the host. */
  ft_loaded gen;
  memset(&gen, 0, sizeof gen);
  int on_device = 0;
  if (st == FT_OK) st = ft_gated_check(ep, n, err);
  if (st == FT_OK && math != FT_MATH_FP8 && ((size_t)m + d->gemm_n) * (size_t)k >= FT_DEVICE_INPUTS_MIN) {
    ft_err gerr;
    ft__err_clear(&gerr);
    const ft_status gs = ft_input_gen_open(g, &gen, &gerr);
    if (gs == FT_OK) on_device = 1;
    else if (gs != FT_ERR_COMPILE) st = gs, *err = gerr;
  }
  if (st == FT_OK && math == FT_MATH_FP8) {
    st = ft__pdata_fp8_inputs(g, d, ep, bound, &s, err);
  } else if (st == FT_OK && on_device) {
    st = device_inputs(g, &gen, d, ep, bound, &s, err);
  } else if (st == FT_OK) {
    st = host_inputs(g, d, ep, bound, &s, err);
  }
  ft_loaded_free(&gen);
  if (st == FT_OK) {
    const cudaError_t e = cudaMalloc(&d->dY, gemm_elems * d->elem);
    if (e != cudaSuccess) st = ft_cuda_fail(err, e, "output allocation");
  }
  if (st == FT_OK) st = apply_epilogue(d, ep, err);
  if (st != FT_OK) {
    ft_pdata_free(d);
    return st;
  }
  *out = d;
  return FT_OK;
}

/* ft_pdata_create's inputs made on the host (see device_inputs). */
static ft_status host_inputs(ft_gpu *g, ft_pdata *d, const ft_epilogue *ep, float bound, uint64_t *s, ft_err *err) {
  const int m = d->m, n = d->gemm_n, k = d->k;
  float *hx = malloc((size_t)m * k * sizeof(float));
  float *hw = malloc((size_t)n * k * sizeof(float));
  ft_status st = FT_OK;
  if (!hx || !hw) st = ft__fail(err, FT_ERR_NOMEM, "out of host memory for %dx%dx%d", m, n, k);
  if (st == FT_OK) {
    ft_fill_uniform(hx, (size_t)m * k, 0.0f, 1.0f, s);
    ft_fill_uniform(hw, (size_t)n * k, -bound, bound, s);
    st = ft__make_params(d, ep, bound, s, err);
  }
  /* In bf16 and fp16 modes the uploads round hx and hw in place: the reference sees what the
   * kernels see. In tf32 mode they stay fp32, so tf32's rounding is part of every error. */
  if (st == FT_OK) st = upload(d, &d->dX, hx, (size_t)m * k, err);
  if (st == FT_OK) st = upload(d, &d->dW, hw, (size_t)n * k, err);
  if (st == FT_OK) st = ft__reference_gemm(g, hx, hw, m, n, k, d->ref, err);
  free(hx);
  free(hw);
  return st;
}

void ft_pdata_free(ft_pdata *d) {
  if (!d) return;
  cudaFree(d->dX);
  cudaFree(d->dW);
  cudaFree(d->dY);
  for (int i = 0; i < FT_EP_SLOTS; i++) {
    cudaFree(d->dvec[i]);
    free(d->hvec[i]);
  }
  if (d->ref_gemm != d->ref) free(d->ref_gemm);
  free(d->ref);
  free(d->ref_e2e);
  if (d->host_y_pinned) cudaFreeHost(d->host_y);
  else free(d->host_y);
  free(d);
}

ft_status ft_pdata_poison(ft_pdata *d, cudaStream_t stream, ft_err *err) {
  /* All-ones bytes are a NaN in IEEE-754 single precision, in bf16 and in fp16. */
  FT_CUDA_TRY(err, cudaMemsetAsync(d->dY, 0xFF, (size_t)d->m * d->gemm_n * d->elem, stream));
  return FT_OK;
}

typedef struct check_job {
  const ft_pdata *d;
  const double *ref;
  double diff2[FT_MAX_CHUNKS], maxabs[FT_MAX_CHUNKS];
  int64_t bad[FT_MAX_CHUNKS];
} check_job;

static void check_chunk(void *user, int chunk, size_t begin, size_t end) {
  check_job *j = user;
  double diff2 = 0.0, maxabs = 0.0;
  int64_t bad = 0;
  for (size_t i = begin; i < end; i++) {
    double r = j->ref[i], y = ft_elem_to_double(j->d->dtype, j->d->host_y, i);
    if (!isfinite(r)) continue; /* the epilogue itself overflowed: nothing to compare */
    if (!isfinite(y)) {
      bad++;
      continue;
    }
    double e = fabs(y - r);
    diff2 += e * e;
    if (e > maxabs) maxabs = e;
  }
  j->diff2[chunk] = diff2;
  j->maxabs[chunk] = maxabs;
  j->bad[chunk] = bad;
}

static ft_status check_against(ft_pdata *d, const double *ref, double ref_norm, size_t total, ft_check *out,
                               ft_err *err) {
  FT_CUDA_TRY(err, cudaMemcpy(d->host_y, d->dY, total * d->elem, cudaMemcpyDeviceToHost));
  check_job j = {d, ref, {0}, {0}, {0}};
  const int nchunks = ft_host_chunks(total);
  ft_parallel_chunks(total, nchunks, 0, check_chunk, &j);
  double diff2 = 0.0, maxabs = 0.0;
  int64_t bad = 0;
  for (int c = 0; c < nchunks; c++) {
    diff2 += j.diff2[c];
    if (j.maxabs[c] > maxabs) maxabs = j.maxabs[c];
    bad += j.bad[c];
  }
  out->bad = bad;
  out->max_abs_err = maxabs;
  double denom = ref_norm > 0 ? ref_norm : 1.0;
  out->rel_err = bad ? INFINITY : sqrt(diff2) / denom;
  return FT_OK;
}

ft_status ft_pdata_check(ft_pdata *d, ft_check *out, ft_err *err) {
  return check_against(d, d->ref, d->ref_norm, (size_t)d->out_count, out, err);
}

ft_status ft_pdata_check_e2e(ft_pdata *d, ft_check *out, ft_err *err) {
  if (!d->ref_e2e) return ft__fail(err, FT_ERR_INTERNAL, "end-to-end check: only fp8 problems have a bf16 reference");
  return check_against(d, d->ref_e2e, d->ref_e2e_norm, (size_t)d->out_count, out, err);
}

ft_status ft_pdata_check_gemm(ft_pdata *d, ft_check *out, ft_err *err) {
  return check_against(d, d->ref_gemm, d->ref_gemm_norm, (size_t)d->m * d->gemm_n, out, err);
}

ft_status ft_pdata_tolerance(ft_gpu *g, ft_pdata *d, double *tol, double *cublas_rel_err, ft_err *err) {
  ft_check chk = {0, 0, 0};
  FT_TRY(ft_pdata_poison(d, 0, err));
  FT_TRY(ft_cublas_gemm(g, d->math, d->dX, d->dW, d->dY, d->m, d->gemm_n, d->k, 0, err));
  FT_CUDA_TRY(err, cudaStreamSynchronize(0));
  FT_TRY(ft_pdata_check_gemm(d, &chk, err));
  if (chk.bad)
    return ft__fail(err, FT_ERR_WRONG_RESULT, "cuBLAS %s GEMM wrote %lld non-finite element(s): no tolerance to derive",
                    ft_math_name(d->math), (long long)chk.bad);
  *cublas_rel_err = chk.rel_err;
  *tol = ft_tolerance_rule(d->math, chk.rel_err);
  return FT_OK;
}
