/* The tuning loop. Every candidate ends as one stored result (ok, compile_error, wrong_result,
 * launch_error), each in its own transaction, so an interrupted tune keeps what it measured. */
#include "tuner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "baseline.h"
#include "bench.h"
#include "compile.h"

typedef struct cand {
  ft_variant v;
  char name[128];
  char json[512];
  ft_kernel_src src;
  ft_compile_job job;
  ft_launch_geom geom;
  int known;    /* measured before with the same source: skipped unless --retune */
  int injected; /* the test hook's deliberately wrong candidate */
  double quick_ms;
} cand;

typedef struct tuner {
  ft_db *db;
  ft_gpu *g;
  const ft_tune_req *req;
  ft_epilogue *ep;
  ft_epilogue *wrong_ep; /* test hook only */
  ft_pdata *d;
  ft_baselines *bl;
  ft_bench *bench;
  int64_t device_id, problem_id, run_id;
  float *ws;
  size_t ws_bytes;
  double t0;
  ft_tune_summary *sum;
  cand *c;
  int nc;
} tuner;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int over_budget(const tuner *t) { return now_s() - t->t0 > t->req->budget_s; }

static void progress(tuner *t, int done, int total, const char *what) {
  if (!t->req->progress || total <= 0) return;
  double el = now_s() - t->t0;
  double eta = done > 0 ? el / done * (total - done) : 0;
  char best[64] = "-";
  for (int i = 0; i < t->sum->nentries; i++) {
    ft_tune_entry *e = &t->sum->entries[i];
    if (strcmp(e->status, "ok") == 0 && (!strcmp(e->strategy, "fused") || !strcmp(e->strategy, "cublas+epilogue"))) {
      double b = atof(best);
      if (best[0] == '-' || e->median_ms < b) snprintf(best, sizeof best, "%.4f", e->median_ms);
    }
  }
  if (t->req->progress == 2) {
    int w = 30, fill = total ? done * w / total : 0;
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fprintf(stderr, "\r%s [%s] %d/%d best %s ms ETA %.0fs   ", what, bar, done, total, best, eta);
    if (done == total) fputc('\n', stderr);
  } else if (done == total || done % 25 == 0) {
    fprintf(stderr, "%s: %d/%d done, best %s ms, %.0fs elapsed\n", what, done, total, best, el);
  }
}

/* Stores one result and mirrors it into the summary. */
static ft_status record(tuner *t, const char *strategy, const char *variant, const char *json,
                        const char *status, const ft_timing *tm, double rel, double maxabs,
                        const char *hash, const char *msg, ft_err *err) {
  ft_result_row r = {t->run_id, t->device_id, t->problem_id, strategy, variant, json, status,
                     tm ? tm->median_ms : -1, tm ? tm->min_ms : -1, tm ? tm->iqr_ms : -1,
                     tm ? tm->repeats : 0, rel, maxabs, hash, msg ? msg : ""};
  FT_TRY(ft_db_insert_result(t->db, &r, err));
  if (!strcmp(strategy, "fused") || !strcmp(strategy, "cublas+epilogue")) {
    if (!strcmp(status, "ok")) t->sum->n_ok++;
    else if (!strcmp(status, "wrong_result")) t->sum->n_wrong++;
    else if (!strcmp(status, "compile_error")) t->sum->n_compile_error++;
    else if (!strcmp(status, "launch_error")) t->sum->n_launch_error++;
  }
  if (t->sum->nentries >= FT_TUNE_MAX_ENTRIES) return FT_OK; /* stored; only the summary is full */
  ft_tune_entry *e = &t->sum->entries[t->sum->nentries++];
  memset(e, 0, sizeof *e);
  snprintf(e->strategy, sizeof e->strategy, "%s", strategy);
  snprintf(e->variant, sizeof e->variant, "%s", variant);
  snprintf(e->status, sizeof e->status, "%s", status);
  e->median_ms = r.median_ms;
  e->min_ms = r.min_ms;
  e->iqr_ms = r.iqr_ms;
  e->rel_err = rel;
  e->max_abs_err = maxabs;
  snprintf(e->message, sizeof e->message, "%s", msg ? msg : "");
  return FT_OK;
}

/* A CUDA error that poisons the context (illegal address, trap, ...) ends the tune: nothing
 * after it could be trusted. Isolating candidates in a worker process is future work. */
static int context_lost(cudaError_t e) {
  return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorMisalignedAddress ||
         e == cudaErrorHardwareStackError || e == cudaErrorIllegalInstruction || e == cudaErrorAssert ||
         e == cudaErrorInvalidPc || e == cudaErrorLaunchTimeout;
}

/* ---- enqueue callbacks ---- */

typedef struct cand_call {
  tuner *t;
  cand *c;
  ft_loaded *l;
} cand_call;

static ft_status enqueue_cand(void *user, cudaStream_t s, ft_err *err) {
  cand_call *cc = user;
  tuner *t = cc->t;
  ft_pdata *d = t->d;
  if (cc->c->v.kind == FT_VK_EPILOGUE)
    FT_TRY(ft_cublas_sgemm(t->g, d->dX, d->dW, d->dY, d->m, d->n, d->k, s, err));
  return ft_variant_launch(cc->l, &cc->c->v, &cc->c->geom, d->dX, d->dW, d->dY, t->ws, d->m, d->n, d->k,
                           &d->args, s, err);
}

typedef struct bl_call {
  tuner *t;
  ft_baseline_kind kind;
} bl_call;

static ft_status enqueue_bl(void *user, cudaStream_t s, ft_err *err) {
  bl_call *bc = user;
  return ft_baseline_enqueue(bc->t->bl, bc->kind, s, err);
}

/* Runs fn once on poisoned output and checks it against the reference. */
static ft_status verify_once(tuner *t, ft_enqueue_fn fn, void *user, ft_check *chk, ft_err *err) {
  cudaStream_t s = ft_bench_stream(t->bench);
  FT_TRY(ft_pdata_poison(t->d, s, err));
  FT_TRY(fn(user, s, err));
  FT_CUDA_TRY(err, cudaStreamSynchronize(s));
  return ft_pdata_check(t->d, chk, err);
}

static ft_bench_opts bench_opts(const tuner *t, int repeats) {
  ft_bench_opts o = {2, repeats, t->req->flush_l2, 0.5};
  return o;
}

/* ---- baselines ---- */

static ft_status run_baselines(tuner *t, ft_err *err) {
  for (int k = 0; k < FT_BL_COUNT; k++) {
    if (!ft_baseline_available(t->bl, (ft_baseline_kind)k)) continue;
    bl_call bc = {t, (ft_baseline_kind)k};
    const char *strategy = ft_baseline_strategy((ft_baseline_kind)k);
    const char *desc = ft_baseline_describe(t->bl, (ft_baseline_kind)k);
    ft_check chk = {0, 0, 0};
    ft_timing tm;
    FT_TRY(verify_once(t, enqueue_bl, &bc, &chk, err));
    /* cublas_gemm computes no epilogue: its error against E(xW^T) is information, not a verdict. */
    int wrong = k != FT_BL_CUBLAS_GEMM && (chk.bad || !(chk.rel_err <= FT_TOL_FP32));
    ft_bench_opts o = bench_opts(t, t->req->repeats);
    FT_TRY(ft_bench_run(t->bench, enqueue_bl, &bc, &o, &tm, err));
    FT_TRY(record(t, strategy, desc, "{}", wrong ? "wrong_result" : "ok", &tm, chk.rel_err, chk.max_abs_err, "",
                  wrong ? "baseline disagrees with the float64 reference" : "", err));
    if (k == FT_BL_EAGER) t->sum->eager_ms = tm.median_ms;
  }
  return FT_OK;
}

/* ---- candidates ---- */

static ft_status add_candidates(tuner *t, ft_variant_kind kind, int *cap, ft_err *err) {
  ft_variant *vs = NULL;
  int n = 0;
  FT_TRY(ft_space_enumerate(kind, t->req->m, t->req->n, t->req->k, ft_gpu_limits(t->g), &vs, &n, err));
  if (t->nc + n + 1 > *cap) {
    int ncap = t->nc + n + 8;
    cand *nc = realloc(t->c, (size_t)ncap * sizeof *nc);
    if (!nc) {
      free(vs);
      return ft__fail(err, FT_ERR_NOMEM, "out of memory for %d candidates", ncap);
    }
    memset(nc + *cap, 0, (size_t)(ncap - *cap) * sizeof *nc);
    t->c = nc;
    *cap = ncap;
  }
  for (int i = 0; i < n; i++) {
    cand *c = &t->c[t->nc++];
    memset(c, 0, sizeof *c);
    c->v = vs[i];
  }
  free(vs);
  return FT_OK;
}

static ft_status prepare_candidate(tuner *t, cand *c, ft_err *err) {
  ft_variant_name(&c->v, c->name, sizeof c->name);
  ft_variant_json(&c->v, c->json, sizeof c->json);
  ft_variant_geometry(&c->v, t->req->m, t->req->n, t->req->k, &c->geom);
  FT_TRY(ft_codegen_variant(&c->v, c->injected ? t->wrong_ep : t->ep, &c->src, err));
  if (c->injected) {
    size_t len = strlen(c->name);
    snprintf(c->name + len, sizeof c->name - len, "_injected_wrong");
  }
  c->job.src = c->src.text;
  c->job.hash = c->src.hash;
  if (!t->req->retune && !c->injected) {
    const char *strategy = c->v.kind == FT_VK_GEMM ? "fused" : "cublas+epilogue";
    FT_TRY(ft_db_has_result(t->db, t->device_id, t->problem_id, strategy, c->json, c->src.hash, &c->known, err));
  }
  return FT_OK;
}

static ft_status ensure_workspace(tuner *t, size_t bytes, ft_err *err) {
  if (bytes <= t->ws_bytes) return FT_OK;
  cudaFree(t->ws);
  t->ws = NULL;
  t->ws_bytes = 0;
  FT_CUDA_TRY(err, cudaMalloc((void **)&t->ws, bytes));
  t->ws_bytes = bytes;
  return FT_OK;
}

/* Verifies and times one candidate with `repeats`; stores the result when store is set.
 * Returns non-OK only for failures that end the tune (database, lost CUDA context). */
static ft_status measure(tuner *t, cand *c, int repeats, int store, ft_err *err) {
  const char *strategy = c->v.kind == FT_VK_GEMM ? "fused" : "cublas+epilogue";
  t->sum->n_measured += store;
  if (c->job.status != FT_OK) {
    char msg[256];
    snprintf(msg, sizeof msg, "%.250s", c->job.log ? c->job.log : "NVRTC failed");
    c->quick_ms = INFINITY;
    return store ? record(t, strategy, c->name, c->json, "compile_error", NULL, -1, -1, c->src.hash, msg, err) : FT_OK;
  }
  ft_loaded l;
  ft_err lerr;
  ft__err_clear(&lerr);
  ft_status st = ft_loaded_init(&l, c->job.cubin, c->job.cubin_size, c->src.kernel, c->src.reduce, &lerr);
  if (st == FT_OK) st = ensure_workspace(t, c->geom.workspace_bytes, &lerr);
  cand_call cc = {t, c, &l};
  ft_check chk = {0, 0, 0};
  if (st == FT_OK) st = verify_once(t, enqueue_cand, &cc, &chk, &lerr);
  ft_timing tm = {0, 0, 0, 0};
  int wrong = st == FT_OK && (chk.bad || !(chk.rel_err <= FT_TOL_FP32));
  if (st == FT_OK && !wrong) {
    ft_bench_opts o = bench_opts(t, repeats);
    st = ft_bench_run(t->bench, enqueue_cand, &cc, &o, &tm, &lerr);
  }
  ft_loaded_free(&l);
  cudaError_t sticky = cudaGetLastError();
  if (st != FT_OK) {
    c->quick_ms = INFINITY;
    if (store) FT_TRY(record(t, strategy, c->name, c->json, "launch_error", NULL, -1, -1, c->src.hash, lerr.msg, err));
    if (context_lost(sticky) || context_lost(cudaDeviceSynchronize()))
      return ft__fail(err, FT_ERR_CUDA, "candidate %s faulted (%s) and the CUDA context is lost; results so far are "
                      "stored, run tune again to continue", c->name, lerr.msg);
    return FT_OK;
  }
  if (wrong) {
    c->quick_ms = INFINITY;
    char msg[256];
    snprintf(msg, sizeof msg, "rel_err %.3g > %.0e or %lld non-finite element(s)", chk.rel_err, FT_TOL_FP32,
             (long long)chk.bad);
    return store ? record(t, strategy, c->name, c->json, "wrong_result", NULL, chk.rel_err, chk.max_abs_err,
                          c->src.hash, msg, err)
                 : FT_OK;
  }
  c->quick_ms = tm.median_ms;
  return store ? record(t, strategy, c->name, c->json, "ok", &tm, chk.rel_err, chk.max_abs_err, c->src.hash, "", err)
               : FT_OK;
}

static ft_status compile_candidates(tuner *t, ft_err *err) {
  ft_compile_job *jobs = calloc((size_t)t->nc, sizeof *jobs);
  int *idx = calloc((size_t)t->nc, sizeof *idx);
  if (!jobs || !idx) {
    free(jobs);
    free(idx);
    return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  }
  int n = 0;
  for (int i = 0; i < t->nc; i++)
    if (!t->c[i].known) {
      jobs[n] = t->c[i].job;
      idx[n++] = i;
    }
  double c0 = now_s();
  ft_status st = ft_compile_many(t->db, ft_gpu_arch(t->g), jobs, n, 0, err);
  t->sum->compile_s = now_s() - c0;
  for (int j = 0; j < n; j++) {
    t->c[idx[j]].job = jobs[j];
    t->sum->n_cached += jobs[j].cached;
    t->sum->n_compiled += !jobs[j].cached && jobs[j].status == FT_OK;
  }
  free(jobs);
  free(idx);
  return st;
}

static void shuffle(cand *c, int n, uint64_t seed) {
  uint64_t s = seed ? seed : 12345;
  for (int i = n - 1; i > 0; i--) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    int j = (int)((s >> 33) % (uint64_t)(i + 1));
    cand tmp = c[i];
    c[i] = c[j];
    c[j] = tmp;
  }
}

static ft_status check_stop(const tuner *t, ft_err *err) {
  if (t->req->stop && *t->req->stop)
    return ft__fail(err, FT_ERR_INTERRUPTED, "interrupted: %d result(s) of this run are stored; run the same tune "
                    "again to continue where it stopped", t->sum->nentries);
  return FT_OK;
}

static int cmp_quick(const void *a, const void *b) {
  double x = ((const cand *)a)->quick_ms, y = ((const cand *)b)->quick_ms;
  return (x > y) - (x < y);
}

static ft_status search(tuner *t, ft_err *err) {
  int todo = 0;
  for (int i = 0; i < t->nc; i++) todo += !t->c[i].known;
  t->sum->n_skipped_known = t->nc - todo;
  if (!strcmp(t->req->search, "random")) shuffle(t->c, t->nc, t->req->seed);
  int halving = !strcmp(t->req->search, "halving");
  int done = 0;
  /* Halving: a short timing of everything, then the best quarter timed in full. */
  for (int i = 0; i < t->nc; i++) {
    cand *c = &t->c[i];
    if (c->known) continue;
    if (over_budget(t)) {
      t->sum->budget_exhausted = 1;
      break;
    }
    FT_TRY(check_stop(t, err));
    FT_TRY(measure(t, c, halving ? 5 : t->req->repeats, !halving, err));
    progress(t, ++done, todo, halving ? "screening" : "tuning");
  }
  if (!halving) return FT_OK;
  qsort(t->c, (size_t)t->nc, sizeof *t->c, cmp_quick);
  int keep = 0;
  for (int i = 0; i < t->nc; i++) keep += !t->c[i].known && isfinite(t->c[i].quick_ms) && t->c[i].quick_ms > 0;
  keep = keep / 4 < 4 ? (keep < 4 ? keep : 4) : keep / 4;
  done = 0;
  int total = 0;
  for (int i = 0; i < t->nc; i++) total += !t->c[i].known && t->c[i].quick_ms != 0;
  for (int i = 0; i < t->nc; i++) {
    cand *c = &t->c[i];
    if (c->known || c->quick_ms == 0) continue; /* never screened: out of budget */
    FT_TRY(check_stop(t, err));
    int full = i < keep && !over_budget(t);
    FT_TRY(measure(t, c, full ? t->req->repeats : 5, 1, err));
    progress(t, ++done, total, "timing");
  }
  return FT_OK;
}

static ft_status setup(tuner *t, ft_err *err) {
  ft_device_info info = *ft_gpu_info(t->g);
  FT_TRY(ft_db_upsert_device(t->db, &info, &t->device_id, err));
  snprintf(t->sum->device_name, sizeof t->sum->device_name, "%s", info.name);
  ft_problem_key key;
  ft_problem_key_set(&key, t->req->m, t->req->n, t->req->k, ft_ep_canonical(t->ep), ft_ep_hash(t->ep));
  snprintf(t->sum->epilogue, sizeof t->sum->epilogue, "%s", key.epilogue);
  FT_TRY(ft_db_upsert_problem(t->db, &key, &t->problem_id, err));
  char opts[512];
  snprintf(opts, sizeof opts,
           "{\"search\":\"%s\",\"budget_s\":%.17g,\"repeats\":%d,\"retune\":%d,\"flush_l2\":%d,\"seed\":%llu}",
           t->req->search, t->req->budget_s, t->req->repeats, t->req->retune, t->req->flush_l2,
           (unsigned long long)t->req->seed);
  FT_TRY(ft_db_begin_run(t->db, t->device_id, opts, t->req->budget_s, &t->run_id, err));
  return FT_OK;
}

static ft_status enumerate_all(tuner *t, ft_err *err) {
  int cap = 0;
  FT_TRY(add_candidates(t, FT_VK_GEMM, &cap, err));
  int n_gemm = t->nc;
  FT_TRY(add_candidates(t, FT_VK_EPILOGUE, &cap, err));
  if (t->req->max_candidates > 0 && t->nc > t->req->max_candidates) {
    /* Keep the head of both kinds (each list is ordered likely-good first). */
    int half = t->req->max_candidates / 2;
    int ng = n_gemm < half ? n_gemm : half, ne = t->nc - n_gemm;
    int keep_e = t->req->max_candidates - ng < ne ? t->req->max_candidates - ng : ne;
    memmove(t->c + ng, t->c + n_gemm, (size_t)keep_e * sizeof *t->c);
    t->nc = ng + keep_e;
  }
  const char *inject = getenv(FT_TEST_INJECT_ENV);
  if (inject && inject[0] == '1' && n_gemm > 0) {
    /* Scale the expression, keeping its `where` declarations outside the parentheses. */
    char text[FT_EP_MAX_TEXT + 64];
    const char *canon = ft_ep_canonical(t->ep), *w = strstr(canon, " where ");
    int len = w ? (int)(w - canon) : (int)strlen(canon);
    snprintf(text, sizeof text, "(%.*s) * 1.01%s", len, canon, w ? w : "");
    FT_TRY(ft_ep_parse(text, &t->wrong_ep, err));
    cand *c = &t->c[t->nc++];
    *c = t->c[0];
    c->injected = 1;
  }
  t->sum->n_candidates = t->nc;
  for (int i = 0; i < t->nc; i++) FT_TRY(prepare_candidate(t, &t->c[i], err));
  return FT_OK;
}

static ft_status tune_body(tuner *t, ft_err *err) {
  FT_TRY(ft_ep_parse(t->req->epilogue, &t->ep, err));
  FT_TRY(setup(t, err));
  if (t->req->progress) fprintf(stderr, "preparing inputs and the float64 reference...\n");
  FT_TRY(ft_pdata_create(t->g, (int)t->req->m, (int)t->req->n, (int)t->req->k, t->ep, t->req->seed, &t->d, err));
  FT_TRY(ft_bench_create(&t->bench, err));
  FT_TRY(ft_baselines_create(t->g, t->db, t->ep, t->d, &t->bl, err));
  FT_TRY(run_baselines(t, err));
  FT_TRY(enumerate_all(t, err));
  if (t->req->progress) fprintf(stderr, "compiling %d candidate(s)...\n", t->nc);
  FT_TRY(compile_candidates(t, err));
  if (t->req->progress)
    fprintf(stderr, "compiled %d, %d from the cache, in %.1f s\n", t->sum->n_compiled, t->sum->n_cached,
            t->sum->compile_s);
  return search(t, err);
}

ft_status ft_tune_run(ft_db *db, ft_gpu *g, const ft_tune_req *req, ft_tune_summary *out, ft_err *err) {
  memset(out, 0, sizeof *out);
  FT_TRY(ft_check_shape(req->m, req->n, req->k, err));
  if (req->math != FT_MATH_FP32) return ft__fail(err, FT_ERR_UNSUPPORTED, "only the fp32 math mode exists");
  tuner t;
  memset(&t, 0, sizeof t);
  t.db = db;
  t.g = g;
  t.req = req;
  t.sum = out;
  t.t0 = now_s();
  out->flops = 2.0 * (double)req->m * (double)req->n * (double)req->k;
  ft_status st = FT_OK;
  out->entries = calloc(FT_TUNE_MAX_ENTRIES, sizeof *out->entries);
  if (!out->entries) st = ft__fail(err, FT_ERR_NOMEM, "out of memory");
  if (st == FT_OK) st = tune_body(&t, err);
  if (t.run_id) {
    ft_err e2;
    ft_db_end_run(db, t.run_id,
                  st == FT_OK ? (out->budget_exhausted ? "budget" : "complete")
                              : st == FT_ERR_INTERRUPTED ? "interrupted" : "error",
                  &e2);
  }
  if (st == FT_OK && t.device_id && t.problem_id) {
    ft_problem_key key;
    ft_problem_key_set(&key, req->m, req->n, req->k, ft_ep_canonical(t.ep), ft_ep_hash(t.ep));
    ft_err e3;
    out->has_best = ft_db_best(db, t.device_id, &key, &out->best, &e3) == FT_OK;
  }
  out->total_s = now_s() - t.t0;
  for (int i = 0; i < t.nc; i++) {
    ft_compile_job_clear(&t.c[i].job);
    ft_kernel_src_free(&t.c[i].src);
  }
  free(t.c);
  cudaFree(t.ws);
  ft_baselines_free(t.bl);
  ft_bench_free(t.bench);
  ft_pdata_free(t.d);
  ft_ep_free(t.ep);
  ft_ep_free(t.wrong_ep);
  return st;
}

void ft_tune_summary_free(ft_tune_summary *s) {
  if (!s) return;
  free(s->entries);
  s->entries = NULL;
  s->nentries = 0;
}
