/* What the GPU kernel tests share: one compiled variant launched through the library's launch
 * path on a problem's data, output and workspace poisoned first, then compared with the float64
 * reference. */
#ifndef FT_TEST_GPU_LAUNCH_CHECK_H
#define FT_TEST_GPU_LAUNCH_CHECK_H

#include "baseline.h"
#include "codegen.h"
#include "compile.h"
#include "launch.h"
#include "verify.h"

/* All-ones bytes (a NaN) in the output and in the split-K / stream-K workspace, so that an
 * element no kernel wrote fails the check. A variant with a workspace runs twice, each time on
 * fresh poison, and chk is the worse run: what a launch leaves behind (stream-K's flags, which
 * every launch must leave zero, checked too) must not change the next one's result. */
static inline ft_status ft_test_launch_check(ft_gpu *g, const ft_variant *v, const ft_compile_job *job,
                                             const ft_kernel_src *src, ft_pdata *d, ft_check *chk, ft_err *e) {
  ft_launchable run;
  memset(&run, 0, sizeof run);
  /* With d's epilogue: an eager chain's steps are its plan's (ft_launchable_init_ep). */
  FT_TRY(ft_launchable_init_ep(&run, g, v, d->ep, d->m, d->n, d->k, job->cubin, job->cubin_size, src->kernel, src->reduce,
                               e));
  ft_status s = FT_OK;
  const int runs = run.ws || run.flags ? 2 : 1;
  for (int r = 0; r < runs && s == FT_OK; r++) {
    ft_check c = {0, 0, 0};
    s = ft_pdata_poison(d, 0, e);
    if (s == FT_OK && run.ws) {
      const cudaError_t ce = cudaMemset(run.ws, 0xff, run.geom.workspace_bytes);
      if (ce != cudaSuccess) s = ft_cuda_fail(e, ce, "poisoning the workspace");
      ft_launchable_weight_changed(&run); /* a pre-split W lived there: split it again */
    }
    if (s == FT_OK) s = ft_launchable_enqueue(&run, d->dX, d->dW, d->dY, &d->args, 0, e);
    if (s == FT_OK) {
      const cudaError_t ce = cudaDeviceSynchronize();
      if (ce != cudaSuccess) s = ft_cuda_fail(e, ce, "kernel execution");
    }
    if (s == FT_OK) s = ft_pdata_check(d, &c, e);
    if (s == FT_OK && (r == 0 || c.bad > chk->bad || c.rel_err > chk->rel_err || !(c.rel_err == c.rel_err))) *chk = c;
  }
  if (s == FT_OK && run.flags) {
    unsigned flags[4096];
    const size_t n = run.geom.flag_bytes / sizeof flags[0];
    if (n > sizeof flags / sizeof flags[0]) {
      s = ft__fail(e, FT_ERR_INTERNAL, "test: %zu stream-K flags, more than it reads back", n);
    } else {
      const cudaError_t ce = cudaMemcpy(flags, run.flags, run.geom.flag_bytes, cudaMemcpyDeviceToHost);
      if (ce != cudaSuccess) s = ft_cuda_fail(e, ce, "reading the stream-K flags back");
      for (size_t i = 0; s == FT_OK && i < n; i++)
        if (flags[i] != 0) s = ft__fail(e, FT_ERR_INTERNAL, "stream-K flag %zu is %u after a launch (must be 0)", i, flags[i]);
    }
  }
  ft_launchable_free(&run);
  return s;
}

/* The tolerance the tuner judges d's results by: the mode's rule from cuBLAS's error on x W^T
 * (*rule and that error *cublas_err, each may be NULL), raised in 3xtf32 to the fp32 eager
 * chain's own error (cuBLAS SGEMM, then the eager steps), which an epilogue such as a
 * normalization of few features amplifies. */
static inline ft_status ft_test_tuner_tolerance(ft_gpu *g, const ft_epilogue *ep, ft_pdata *d, double *tol,
                                                double *rule, double *cublas_err, ft_err *e) {
  double err = 0;
  FT_TRY(ft_pdata_tolerance(g, d, tol, &err, e));
  if (rule) *rule = *tol;
  if (cublas_err) *cublas_err = err;
  ft_baselines *bl = NULL;
  ft_status st = ft_baselines_create(g, NULL, ep, d, &bl, e);
  if (st == FT_OK) st = ft_baseline_chain_tolerance(bl, tol, e);
  ft_baselines_free(bl);
  return st;
}

#endif
