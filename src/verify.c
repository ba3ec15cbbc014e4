/* Random problem data and the float64 reference (cuBLAS DGEMM on upcast inputs + the epilogue
 * evaluated in double by the same AST), and the error norms every candidate is judged by. */
#include "verify.h"

#include <cublas_v2.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: a small, fast, well-mixed generator; the same seed gives the same inputs on every
 * machine, so every candidate of a problem sees identical data. */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi), never exactly zero-filled data. */
static void fill_uniform(float *a, size_t n, float lo, float hi, uint64_t *s) {
  for (size_t i = 0; i < n; i++) a[i] = lo + (hi - lo) * (float)((next_u64(s) >> 40) * 0x1.0p-24);
}

static ft_status upload(float **dst, const float *src, size_t n, ft_err *err) {
  FT_CUDA_TRY(err, cudaMalloc((void **)dst, n * sizeof(float)));
  FT_CUDA_TRY(err, cudaMemcpy(*dst, src, n * sizeof(float), cudaMemcpyHostToDevice));
  return FT_OK;
}

static ft_status upload_double(double **dst, const float *src, size_t n, ft_err *err) {
  double *tmp = malloc(n * sizeof(double));
  if (!tmp) return ft__fail(err, FT_ERR_NOMEM, "out of host memory for the reference (%zu doubles)", n);
  for (size_t i = 0; i < n; i++) tmp[i] = src[i];
  cudaError_t e = cudaMalloc((void **)dst, n * sizeof(double));
  if (e == cudaSuccess) e = cudaMemcpy(*dst, tmp, n * sizeof(double), cudaMemcpyHostToDevice);
  free(tmp);
  return e == cudaSuccess ? FT_OK : ft_cuda_fail(err, e, "reference upload");
}

/* acc[m][n] = sum_k x[m][k] * W[n][k] in float64 on the GPU (row-major x, W, acc). */
static ft_status reference_gemm(ft_gpu *g, const float *hx, const float *hw, int m, int n, int k,
                                double *acc, ft_err *err) {
  void *hv;
  FT_TRY(ft_gpu_cublas(g, &hv, err));
  cublasHandle_t h = hv;
  double *dx = NULL, *dw = NULL, *dy = NULL;
  ft_status st = upload_double(&dx, hx, (size_t)m * k, err);
  if (st == FT_OK) st = upload_double(&dw, hw, (size_t)n * k, err);
  if (st == FT_OK) {
    cudaError_t e = cudaMalloc((void **)&dy, (size_t)m * n * sizeof(double));
    if (e != cudaSuccess) st = ft_cuda_fail(err, e, "reference output");
  }
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
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);
  return st;
}

static void apply_epilogue(ft_pdata *d, const ft_epilogue *ep) {
  int np = ft_ep_param_count(ep);
  double vals[FT_EP_SLOTS] = {0};
  double norm2 = 0.0;
  for (int r = 0; r < d->m; r++) {
    for (int c = 0; c < d->n; c++) {
      for (int s = 0; s < np; s++) {
        const ft_ep_param *p = ft_ep_param_at(ep, s);
        if (p->kind == FT_PARAM_SCALAR) vals[s] = d->args.s[s];
        else vals[s] = d->hvec[s][p->kind == FT_PARAM_COLVEC ? c : r];
      }
      double *v = &d->ref[(size_t)r * d->n + c];
      *v = ft_ep_eval(ep, *v, vals);
      if (isfinite(*v)) norm2 += *v * *v;
    }
  }
  d->ref_norm = sqrt(norm2);
}

static ft_status make_params(ft_pdata *d, const ft_epilogue *ep, float bound, uint64_t *seed,
                             ft_err *err) {
  int np = ft_ep_param_count(ep);
  if (np > FT_EP_SLOTS) return ft__fail(err, FT_ERR_UNSUPPORTED, "more than %d parameters", FT_EP_SLOTS);
  for (int s = 0; s < np; s++) {
    const ft_ep_param *p = ft_ep_param_at(ep, s);
    if (p->kind == FT_PARAM_SCALAR) {
      d->args.s[s] = p->has_default ? (float)p->def : 1.5f;
      continue;
    }
    size_t len = (size_t)(p->kind == FT_PARAM_COLVEC ? d->n : d->m);
    d->hvec[s] = malloc(len * sizeof(float));
    if (!d->hvec[s]) return ft__fail(err, FT_ERR_NOMEM, "out of host memory for vector '%s'", p->name);
    fill_uniform(d->hvec[s], len, -bound, bound, seed);
    FT_TRY(upload(&d->dvec[s], d->hvec[s], len, err));
    d->args.v[s] = d->dvec[s];
  }
  return FT_OK;
}

ft_status ft_pdata_create(ft_gpu *g, int m, int n, int k, const ft_epilogue *ep, uint64_t seed,
                          ft_pdata **out, ft_err *err) {
  *out = NULL;
  ft_pdata *d = calloc(1, sizeof *d);
  if (!d) return ft__fail(err, FT_ERR_NOMEM, "out of host memory");
  d->m = m;
  d->n = n;
  d->k = k;
  uint64_t s = seed ? seed : 0x5eed5eedULL;
  float bound = 1.0f / sqrtf((float)k); /* nn.Linear's initialization range */
  float *hx = malloc((size_t)m * k * sizeof(float));
  float *hw = malloc((size_t)n * k * sizeof(float));
  d->ref = malloc((size_t)m * n * sizeof(double));
  d->host_y = malloc((size_t)m * n * sizeof(float));
  ft_status st = FT_OK;
  if (!hx || !hw || !d->ref || !d->host_y) st = ft__fail(err, FT_ERR_NOMEM, "out of host memory for %dx%dx%d", m, n, k);
  if (st == FT_OK) {
    fill_uniform(hx, (size_t)m * k, 0.0f, 1.0f, &s);
    fill_uniform(hw, (size_t)n * k, -bound, bound, &s);
    st = make_params(d, ep, bound, &s, err);
  }
  if (st == FT_OK) st = upload(&d->dX, hx, (size_t)m * k, err);
  if (st == FT_OK) st = upload(&d->dW, hw, (size_t)n * k, err);
  if (st == FT_OK) {
    cudaError_t e = cudaMalloc((void **)&d->dY, (size_t)m * n * sizeof(float));
    if (e != cudaSuccess) st = ft_cuda_fail(err, e, "output allocation");
  }
  if (st == FT_OK) st = reference_gemm(g, hx, hw, m, n, k, d->ref, err);
  if (st == FT_OK) apply_epilogue(d, ep);
  free(hx);
  free(hw);
  if (st != FT_OK) {
    ft_pdata_free(d);
    return st;
  }
  *out = d;
  return FT_OK;
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
  free(d->ref);
  free(d->host_y);
  free(d);
}

ft_status ft_pdata_poison(ft_pdata *d, cudaStream_t stream, ft_err *err) {
  /* All-ones bytes are a NaN in IEEE-754 single precision. */
  FT_CUDA_TRY(err, cudaMemsetAsync(d->dY, 0xFF, (size_t)d->m * d->n * sizeof(float), stream));
  return FT_OK;
}

ft_status ft_pdata_check(ft_pdata *d, ft_check *out, ft_err *err) {
  size_t total = (size_t)d->m * d->n;
  FT_CUDA_TRY(err, cudaMemcpy(d->host_y, d->dY, total * sizeof(float), cudaMemcpyDeviceToHost));
  double diff2 = 0.0, maxabs = 0.0;
  int64_t bad = 0;
  for (size_t i = 0; i < total; i++) {
    double r = d->ref[i], y = d->host_y[i];
    if (!isfinite(r)) continue; /* the epilogue itself overflowed: nothing to compare */
    if (!isfinite(y)) {
      bad++;
      continue;
    }
    double e = fabs(y - r);
    diff2 += e * e;
    if (e > maxabs) maxabs = e;
  }
  out->bad = bad;
  out->max_abs_err = maxabs;
  double denom = d->ref_norm > 0 ? d->ref_norm : 1.0;
  out->rel_err = bad ? INFINITY : sqrt(diff2) / denom;
  return FT_OK;
}
