/* The engine (runner_engine.h): one problem on the GPU of this process; verifies and times jobs. */
#include "runner_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing_rule.h"

struct ft_engine {
  ft_gpu *g;
  ft_epilogue *own_ep;   /* ft_engine_keep_ep's (a worker's, parsed from the wire) */
  const ft_epilogue *ep; /* own_ep or the caller's */
  ft_pdata *d;
  ft_baselines *bl;
  ft_bench *bench;
  int flush_l2;
  int graph_calls; /* ft_timing_graph_calls's: > 0 times the problem's jobs as CUDA-graph replays */
  int warm;   /* the GPU has run FT_WARM_S of this problem's work: timings may start */
  double tol; /* on rel_err: ft_pdata_tolerance's, in 3xtf32 and fp8 as ft_baseline_chain_tolerance makes it */
  double gemm_tol; /* ft_pdata_tolerance's, the mode's rule on x W^T: what cuBLAS's GEMM alone is judged by */
};

/* Seconds of back-to-back work before the first timing. A GPU's clock climbs from idle while it
 * works; the first baseline, timed at once, read a cuBLAS GEMM 14 % slower than the same GEMM timed
 * seconds later (docs/BENCHMARKS.md, "Why the search space is what it is"), and every speed-up "vs
 * eager" is against that first baseline. */
#define FT_WARM_S 0.3


void ft_engine_keep_ep(ft_engine *e, ft_epilogue *ep) { e->own_ep = ep; }

void ft_engine_close(ft_engine *e) {
  if (!e) return;
  ft_baselines_free(e->bl);
  ft_bench_free(e->bench);
  ft_pdata_free(e->d);
  ft_ep_free(e->own_ep);
  ft_gpu_close(e->g);
  free(e);
}

ft_status ft_engine_open(int device, int flush_l2, ft_engine **out, ft_runner_device *dev, ft_err *err) {
  *out = NULL;
  memset(dev, 0, sizeof *dev);
  ft_engine *e = calloc(1, sizeof *e);
  if (!e) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  e->flush_l2 = flush_l2;
  const double t0 = ft__now_s();
  ft_status st = ft_gpu_open(device, &e->g, err);
  dev->gpu_open_s = ft__now_s() - t0;
  if (st != FT_OK) {
    ft_engine_close(e);
    return st;
  }
  dev->info = *ft_gpu_info(e->g);
  dev->limits = *ft_gpu_limits(e->g);
  snprintf(dev->arch, sizeof dev->arch, "%s", ft_gpu_arch(e->g));
  *out = e;
  return FT_OK;
}

ft_status ft_engine_prepare(ft_engine *e, const ft_tune_problem *p, uint64_t seed, ft_runner_ready *ready,
                                ft_err *err) {
  memset(ready, 0, sizeof *ready);
  e->ep = p->ep;
  e->graph_calls = ft_timing_graph_calls(p->m, p->n, p->k, p->math, p->ep, e->flush_l2);
  double t0 = ft__now_s();
  ft_status st = ft_pdata_create(e->g, (int)p->m, (int)p->n, (int)p->k, e->ep, p->math, seed, &e->d, err);
  ready->data_s = ft__now_s() - t0;
  /* The tolerance of the mode, from cuBLAS's own GEMM of that mode on this very problem. */
  t0 = ft__now_s();
  if (st == FT_OK) st = ft_pdata_tolerance(e->g, e->d, &ready->tol, &ready->cublas_rel_err, err);
  if (st == FT_OK) e->tol = e->gemm_tol = ready->tol;
  ready->tolerance_s = ft__now_s() - t0;
  t0 = ft__now_s();
  if (st == FT_OK) st = ft_bench_create(&e->bench, err);
  if (st == FT_OK) st = ft_baselines_create(e->g, NULL, e->ep, e->d, &e->bl, err);
  ready->baselines_setup_s = ft__now_s() - t0;
  /* 3xtf32 (fp8): the fp32 (bf16) chain's error may raise the tolerance (or set it, for a row sum, mean or
   * logsumexp). Its failure keeps the rule's tolerance rather than ending the tune: the eager baseline then reports it as its own result,
   * and an error that breaks the context shows at the next job. */
  t0 = ft__now_s();
  if (st == FT_OK) {
    ft_err cerr;
    ft__err_clear(&cerr);
    double tol = ready->tol;
    if (ft_baseline_chain_tolerance(e->bl, &tol, &cerr) == FT_OK) ready->tol = e->tol = tol;
  }
  ready->tolerance_s += ft__now_s() - t0;
  return st;
}

typedef struct call {
  ft_engine *e;
  const ft_runner_job *job;
  ft_launchable *run;
} call;

static ft_status enqueue(void *user, cudaStream_t s, ft_err *err) {
  call *c = user;
  ft_pdata *d = c->e->d;
  if (c->job->type == FT_JOB_BASELINE) return ft_baseline_enqueue(c->e->bl, (ft_baseline_kind)c->job->baseline, s, err);
  return ft_launchable_enqueue(c->run, d->dX, d->dW, d->dY, &d->args, s, err);
}

/* A CUDA error that poisons the context (illegal address, trap, ...): nothing after it counts. */
static int is_sticky(cudaError_t e) {
  return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorMisalignedAddress ||
         e == cudaErrorHardwareStackError || e == cudaErrorIllegalInstruction || e == cudaErrorAssert ||
         e == cudaErrorInvalidPc || e == cudaErrorLaunchTimeout || e == cudaErrorInvalidAddressSpace;
}

/* Runs the job back to back for FT_WARM_S (synchronizing every few calls, so the host never
 * queues far ahead), once per engine. */
static ft_status warm_up(ft_engine *e, call *c, ft_err *err) {
  cudaStream_t s = ft_bench_stream(e->bench);
  const double t0 = ft__now_s();
  for (int i = 0; ft__now_s() - t0 < FT_WARM_S; i++) {
    FT_TRY(enqueue(c, s, err));
    if (i % 4 == 3) FT_CUDA_TRY(err, cudaStreamSynchronize(s));
  }
  FT_CUDA_TRY(err, cudaStreamSynchronize(s));
  e->warm = 1;
  return FT_OK;
}

/* Verifies the job on poisoned output, then times it; fills res. */
static ft_status verify_and_time(ft_engine *e, call *c, ft_runner_result *res, ft_err *err) {
  cudaStream_t s = ft_bench_stream(e->bench);
  ft_check chk = {0, 0, 0};
  const double t0 = ft__now_s();
  FT_TRY(ft_pdata_poison(e->d, s, err));
  FT_TRY(enqueue(c, s, err));
  FT_CUDA_TRY(err, cudaStreamSynchronize(s));
  /* cuBLAS GEMM alone computes no epilogue: it is judged against x W^T. */
  const int gemm_only = c->job->type == FT_JOB_BASELINE && c->job->baseline == FT_BL_CUBLAS_GEMM;
  FT_TRY(gemm_only ? ft_pdata_check_gemm(e->d, &chk, err) : ft_pdata_check(e->d, &chk, err));
  res->rel_err = chk.rel_err;
  res->max_abs_err = chk.max_abs_err;
  const double t1 = ft__now_s();
  res->verify_s = t1 - t0;
  /* The GEMM alone by the mode's rule on x W^T: the chain's error on E's output (3xtf32) may set a
   * tolerance below SGEMM's own error on x W^T (one value per row: ft_tolerance_rows_with_chain). */
  const double tol = gemm_only ? e->gemm_tol : e->tol;
  if (chk.bad || !(chk.rel_err <= tol)) {
    res->status = FT_RESULT_WRONG_RESULT;
    snprintf(res->message, sizeof res->message, "rel_err %.3g > %.3g (%s) or %lld non-finite element(s)%s",
             chk.rel_err, tol, ft_math_name(e->d->math), (long long)chk.bad, gemm_only ? " (vs x W^T)" : "");
    return FT_OK;
  }
  /* fp8: correct against the e4m3 values and scales; what is stored is the error of the layer
   * against its unquantized bf16 inputs, which ft_lookup_within compares with a tolerance. */
  if (e->d->ref_e2e && !gemm_only) {
    FT_TRY(ft_pdata_check_e2e(e->d, &chk, err));
    res->rel_err = chk.rel_err;
    res->max_abs_err = chk.max_abs_err;
  }
  const ft_bench_opts o = {2, c->job->repeats, e->flush_l2, 0.5, e->graph_calls};
  if (!e->warm) FT_TRY(warm_up(e, c, err));
  ft_timing tm;
  /* In rounds with cuBLAS's GEMM alone (that GEMM itself with the eager-style chain), as fusedtune
   * bench times them: back to back, a kernel finds its own code and data in the caches, and a fused
   * gelu kernel timed so runs faster than between other kernels, where a model runs it
   * (docs/BENCHMARKS.md, "Why the search space is what it is"). Back to back still with an L2 flush
   * (which already separates the calls) and where the partner is unavailable. A failure of the
   * partner's call fails the timing (LAUNCH_ERROR): cuBLAS then no longer works in this context.
   * The median of the per-round ratios to cuBLAS's GEMM is kept (gemm_ratio): the clock drifts
   * between jobs, and changes state even within one, by more than candidates differ
   * (docs/BENCHMARKS.md, "Why the search space is what it is"), so the tuner ranks by it. */
  const int alone = c->job->type == FT_JOB_BASELINE && c->job->baseline == FT_BL_CUBLAS_GEMM;
  const ft_baseline_kind pk = alone ? FT_BL_EAGER : FT_BL_CUBLAS_GEMM;
  if (!e->flush_l2 && ft_baseline_available(e->bl, pk)) {
    const ft_runner_job gemm = {.type = FT_JOB_BASELINE, .baseline = (int)pk};
    call partner = {e, &gemm, NULL};
    const ft_enqueue_fn fns[2] = {enqueue, enqueue};
    void *const users[2] = {c, &partner};
    ft_timing both[2];
    double ratios[2];
    FT_TRY(ft_bench_run_interleaved(e->bench, 2, fns, users, &o, both, alone ? 0 : 1, ratios, err));
    tm = both[0];
    res->gemm_ratio = ratios[0]; /* 1 for cuBLAS's GEMM itself */
  } else {
    FT_TRY(ft_bench_run(e->bench, enqueue, c, &o, &tm, err));
  }
  if (ft_bench_fallback(e->bench))
    snprintf(res->message, sizeof res->message, "timed on the stream, not as a CUDA graph: %.400s",
             ft_bench_fallback(e->bench));
  res->time_s = ft__now_s() - t1;
  res->status = FT_RESULT_OK;
  res->median_ms = tm.median_ms;
  res->min_ms = tm.min_ms;
  res->iqr_ms = tm.iqr_ms;
  res->repeats = tm.repeats;
  return FT_OK;
}

void ft_engine_run(ft_engine *e, const ft_runner_job *job, ft_runner_result *res) {
  memset(res, 0, sizeof *res);
  res->median_ms = res->min_ms = res->iqr_ms = res->gemm_ratio = -1;
  res->rel_err = res->max_abs_err = -1;
  ft_launchable run;
  memset(&run, 0, sizeof run);
  call c = {e, job, &run};
  ft_err err;
  ft__err_clear(&err);
  ft_status st = FT_OK;
  if (job->type == FT_JOB_BASELINE) {
    snprintf(res->describe, sizeof res->describe, "%s", ft_baseline_describe(e->bl, (ft_baseline_kind)job->baseline));
    if (!ft_baseline_available(e->bl, (ft_baseline_kind)job->baseline)) {
      res->status = FT_RESULT_UNAVAILABLE;
      return;
    }
  } else {
    const ft_pdata *d = e->d;
    const double t0 = ft__now_s();
    st = ft_launchable_init_ep(&run, e->g, &job->v, e->ep, d->m, d->n, d->k, job->cubin, (size_t)job->cubin_size,
                               job->kernel, job->reduce, &err);
    res->load_s = ft__now_s() - t0;
  }
  if (st == FT_OK) st = verify_and_time(e, &c, res, &err);
  ft_launchable_free(&run);
  if (st != FT_OK) {
    res->status = FT_RESULT_LAUNCH_ERROR;
    snprintf(res->message, sizeof res->message, "%.500s", err.msg);
  }
  cudaError_t last = cudaGetLastError();
  res->context_lost = is_sticky(last) || is_sticky(cudaDeviceSynchronize());
}
