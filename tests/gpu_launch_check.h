/* What the GPU kernel tests share: one compiled variant launched through the library's launch
 * path on a problem's data, output and workspace poisoned first, then compared with the float64
 * reference. */
#ifndef FT_TEST_GPU_LAUNCH_CHECK_H
#define FT_TEST_GPU_LAUNCH_CHECK_H

#include "codegen.h"
#include "compile.h"
#include "launch.h"
#include "verify.h"

/* All-ones bytes (a NaN) in the output and in the split-K / stream-K workspace, so that an
 * element no kernel wrote fails the check. */
static inline ft_status ft_test_launch_check(ft_gpu *g, const ft_variant *v, const ft_compile_job *job,
                                             const ft_kernel_src *src, ft_pdata *d, ft_check *chk, ft_err *e) {
  ft_launchable run;
  memset(&run, 0, sizeof run);
  FT_TRY(ft_launchable_init(&run, g, v, d->m, d->n, d->k, job->cubin, job->cubin_size, src->kernel, src->reduce, e));
  ft_status s = ft_pdata_poison(d, 0, e);
  if (s == FT_OK && run.ws) {
    const cudaError_t ce = cudaMemset(run.ws, 0xff, run.geom.workspace_bytes);
    if (ce != cudaSuccess) s = ft_cuda_fail(e, ce, "poisoning the workspace");
  }
  if (s == FT_OK) s = ft_launchable_enqueue(&run, d->dX, d->dW, d->dY, &d->args, 0, e);
  if (s == FT_OK) {
    const cudaError_t ce = cudaDeviceSynchronize();
    if (ce != cudaSuccess) s = ft_cuda_fail(e, ce, "kernel execution");
  }
  if (s == FT_OK) s = ft_pdata_check(d, chk, e);
  ft_launchable_free(&run);
  return s;
}

#endif
