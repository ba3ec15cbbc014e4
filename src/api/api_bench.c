/* ft_bench_problem: times, in one run, the eager-style baseline, cuBLAS GEMM alone, cuBLAS SGEMM
 * 8192^3 (the library's own FFMA peak on this GPU), the stored best and (when that is not a fused
 * GEMM kernel) the fastest fused GEMM stored, each checked against float64 first. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "gated.h"
#include "baseline.h"
#include "bench.h"
#include "best.h"
#include "compile.h"
#include "launch.h"
#include "timing_rule.h"
#include "fusedtune_tool.h"
#include "verify.h"

typedef struct best_call {
  ft_gpu *g;
  ft_pdata *d;
  ft_launchable run;
} best_call;

static ft_status enqueue_best(void *user, cudaStream_t s, ft_err *err) {
  best_call *b = user;
  const ft_pdata *d = b->d;
  return ft_launchable_enqueue(&b->run, d->dX, d->dW, d->dY, &d->args, s, err);
}

typedef struct bl_call {
  ft_baselines *bl;
  ft_baseline_kind kind;
} bl_call;

static ft_status enqueue_bl(void *user, cudaStream_t s, ft_err *err) {
  bl_call *c = user;
  return ft_baseline_enqueue(c->bl, c->kind, s, err);
}

/* Compiles (through the cubin cache) and loads a stored configuration. */
static ft_status load_best(ft_db *db, const ft_epilogue *ep, const ft_best *best, best_call *b, ft_err *err) {
  ft_variant v;
  FT_TRY(ft_variant_from_json(best->config_json, &v, err));
  ft_kernel_src src;
  FT_TRY(ft_codegen_variant(&v, ep, &src, err));
  ft_compile_job job = {.src = src.text, .hash = src.hash, .arch_suffix = src.arch_suffix};
  ft_status st = ft_compile_source(db, ft_gpu_arch(b->g), &job, "best config", err);
  if (st == FT_OK)
    st = ft_launchable_init_ep(&b->run, b->g, &v, ep, b->d->m, b->d->n, b->d->k, job.cubin, job.cubin_size, src.kernel,
                               src.reduce, err);
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  return st;
}

static void free_call(best_call *b) { ft_launchable_free(&b->run); }

/* The fastest current result of the fused GEMM strategy, when the stored best is another one. */
typedef struct fused_scan {
  const ft_epilogue *ep;
  ft_best *out;
  int found;
} fused_scan;

static int take_fused(void *user, const ft_best *b) {
  fused_scan *f = user;
  if (strcmp(b->strategy, "fused") != 0 || !ft_best_source_is_current(b, f->ep)) return 0;
  *f->out = *b;
  f->found = 1;
  return 1;
}

/* Runs c once on poisoned output and checks it against the float64 reference. */
static ft_status check_call(best_call *c, ft_bench *bench, ft_check *chk, ft_err *err) {
  FT_TRY(ft_pdata_poison(c->d, ft_bench_stream(bench), err));
  FT_TRY(enqueue_best(c, ft_bench_stream(bench), err));
  cudaError_t e = cudaStreamSynchronize(ft_bench_stream(bench));
  if (e != cudaSuccess) return ft_cuda_fail(err, e, "configuration failed to run");
  return ft_pdata_check(c->d, chk, err);
}

/* cuBLAS's GEMM of the mode at 8192^3: the rate that mode reaches on this GPU. */
static ft_status time_peak(ft_gpu *g, ft_math math, ft_bench *bench, const ft_bench_opts *o, ft_timing *t,
                           ft_err *err) {
  ft_epilogue *none = NULL;
  FT_TRY(ft_ep_parse("none", &none, err));
  ft_pdata *d = NULL;
  ft_status st = ft_pdata_create(g, 8192, 8192, 8192, none, math, 1, &d, err);
  ft_baselines *bl = NULL;
  if (st == FT_OK) st = ft_baselines_create(g, NULL, none, d, &bl, err);
  bl_call c = {bl, FT_BL_CUBLAS_GEMM};
  if (st == FT_OK) st = ft_bench_run(bench, enqueue_bl, &c, o, t, err);
  ft_baselines_free(bl);
  ft_pdata_free(d);
  ft_ep_free(none);
  return st;
}

static int within_tol(const ft_check *c, double tol) { return c->bad == 0 && c->rel_err <= tol; }

/* Everything one bench holds on the device. */
typedef struct bench_run {
  ft_bench *bench;
  ft_baselines *bl;
  best_call b, fb; /* the stored best; the fastest fused GEMM when that is another strategy */
  ft_best best, fbest;
  double tol; /* the mode's tolerance on rel_err (ft_pdata_tolerance, ft_baseline_chain_tolerance) */
} bench_run;

/* The optional row: best effort, it must not cost the measurements asked for. A fault that
 * breaks the CUDA context still shows in those. */
static ft_status prepare_fused(ft_db *db, const ft_epilogue *ep, bench_run *r, ft_check *fchk,
                               ft_bench_report *out, ft_err *err) {
  fused_scan fs = {ep, &r->fbest, 0};
  FT_TRY(ft_db_each_candidate(db, &r->best, take_fused, &fs, err));
  if (!fs.found) return FT_OK;
  ft_err ferr;
  ft__err_clear(&ferr);
  if (load_best(db, ep, &r->fbest, &r->fb, &ferr) != FT_OK || check_call(&r->fb, r->bench, fchk, &ferr) != FT_OK) {
    snprintf(out->warning, sizeof out->warning, "fastest fused GEMM %s skipped: %.300s", r->fbest.variant, ferr.msg);
    return FT_OK;
  }
  out->has_fused = 1;
  ft__fill_config(&out->fused, &r->fbest, 1);
  return FT_OK;
}

static ft_status bench_body(ft_ctx *ctx, ft_gpu *g, const ft_epilogue *ep, int repeats, bench_run *r,
                            ft_bench_report *out) {
  ft_err *err = ft__ctx_err(ctx);
  ft_db *db = ft__ctx_db(ctx);
  ft_check chk = {0, 0, 0}, fchk = {0, 0, 0};
  /* As the tune times this shape (decode-sized layers as CUDA-graph replays); cuBLAS's 8192^3 on the stream. */
  const ft_bench_opts o = {3, repeats, 0, 0, 0},
                      og = {3, repeats, 0, 0,
                            ft_timing_graph_calls(r->b.d->m, r->b.d->n, r->b.d->k, r->b.d->math, ep, 0)};
  ft_timing t_eager, t_gemm, t_best, t_peak, t_fused = {0};
  double cublas_err = 0;
  FT_TRY(ft_pdata_tolerance(g, r->b.d, &r->tol, &cublas_err, err));
  FT_TRY(ft_bench_create(&r->bench, err));
  FT_TRY(ft_baselines_create(g, db, ep, r->b.d, &r->bl, err));
  FT_TRY(ft_baseline_chain_tolerance(r->bl, &r->tol, err)); /* 3xtf32, fp8: the eager chain's error */
  FT_TRY(load_best(db, ep, &r->best, &r->b, err));
  FT_TRY(check_call(&r->b, r->bench, &chk, err));
  r->fb.g = g;
  r->fb.d = r->b.d;
  if (strcmp(r->best.strategy, "fused") != 0) FT_TRY(prepare_fused(db, ep, r, &fchk, out, err));
  bl_call ce = {r->bl, FT_BL_EAGER}, cg = {r->bl, FT_BL_CUBLAS_GEMM};
  /* Interleaved (one call of each per round, the order varied from round to round) so drift of
   * the machine under sustained load hits them alike and each row runs after each other one
   * equally often: timed one after the other, the later ones ran slower (docs/BENCHMARKS.md, "Why
   * the search space is what it is"). */
  const ft_enqueue_fn fns[4] = {enqueue_bl, enqueue_bl, enqueue_best, enqueue_best};
  void *const users[4] = {&ce, &cg, &r->b, &r->fb};
  ft_timing t[4];
  FT_TRY(ft_bench_run_interleaved(r->bench, out->has_fused ? 4 : 3, fns, users, &og, t, 0, NULL, err));
  if (ft_bench_fallback(r->bench)) {
    const size_t w = strlen(out->warning);
    snprintf(out->warning + w, sizeof out->warning - w, "%stimed on the stream, not as CUDA graphs: %.200s",
             w ? "; " : "", ft_bench_fallback(r->bench));
  }
  t_eager = t[0], t_gemm = t[1], t_best = t[2];
  if (out->has_fused) t_fused = t[3];
  FT_TRY(time_peak(g, r->b.d->math, r->bench, &o, &t_peak, err));
  out->eager_ms = t_eager.median_ms;
  out->gemm_ms = t_gemm.median_ms;
  out->best_ms = t_best.median_ms;
  out->peak_ms = t_peak.median_ms;
  out->best_rel_err = chk.rel_err;
  out->best_ok = within_tol(&chk, r->tol);
  out->tolerance = r->tol;
  out->fused_ms = t_fused.median_ms;
  out->fused_rel_err = fchk.rel_err;
  out->fused_ok = !out->has_fused || within_tol(&fchk, r->tol);
  return FT_OK;
}

ft_status ft_bench_problem(ft_ctx *ctx, const ft_problem *p, int repeats, ft_bench_report *out) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__ctx_err(ctx);
  if (!out) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_bench_problem: out is NULL");
  if (repeats < 20 || repeats > 1000)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_bench_problem: repeats %d is not in 20..1000", repeats);
  memset(out, 0, sizeof *out);
  const ft_epilogue *ep = NULL;
  FT_TRY(ft__ctx_problem(ctx, p, &ep));
  ft_gpu *g = NULL;
  FT_TRY(ft__ctx_gpu(ctx, &g));
  bench_run *r = calloc(1, sizeof *r);
  ft_epilogue *own = NULL; /* ctx's parse cache changes with the next call on ctx: keep a copy */
  if (!r) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  int exact = 0;
  ft_status st = ft__lookup_best(ctx, NULL, p, FT_LOOKUP_EXACT, &r->best, &exact);
  if (st == FT_OK) st = ft_ep_parse(p->epilogue, &own, err);
  if (st == FT_OK) {
    snprintf(out->device_name, sizeof out->device_name, "%s", ft_gpu_info(g)->name);
    snprintf(out->epilogue, sizeof out->epilogue, "%s", ft_ep_canonical(own));
    out->repeats = repeats;
    out->flops = 2.0 * (double)p->m * (double)ft_gemm_cols(own, p->n) * (double)p->k; /* a gated pair's: 2n */
    out->peak_flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
    ft__fill_config(&out->best, &r->best, 1);
    r->b.g = g;
    /* fp32 may be served by 3xtf32 (ft_lookup): the data and its tolerance are the served mode's. */
    ft_math served = p->math;
    if (!ft_math_from_name(r->best.key.math, &served)) served = p->math;
    st = ft_pdata_create(g, (int)p->m, (int)p->n, (int)p->k, own, served, 0, &r->b.d, err);
  }
  if (st == FT_OK) st = bench_body(ctx, g, own, repeats, r, out);
  free_call(&r->b);
  free_call(&r->fb);
  ft_baselines_free(r->bl);
  ft_bench_free(r->bench);
  ft_pdata_free(r->b.d);
  ft_ep_free(own);
  free(r);
  return st;
}
