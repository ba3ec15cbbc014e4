/* The tuning loop. Every candidate ends as one stored result (ok, compile_error, wrong_result,
 * launch_error), each in its own transaction, so an interrupted tune keeps what it measured. */
#include "tuner.h"

#include <math.h>
#include <stdio.h> /* snprintf */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "best.h"
#include "compile.h"
#include "embedded.h"
#include "runner.h"

typedef struct cand {
  ft_variant v;
  char name[128];
  char json[512];
  ft_kernel_src src;
  ft_compile_job job;
  ft_launch_geom geom;
  int known;    /* measured before with the same source: skipped unless --retune */
  int injected; /* the test hook's planted candidate: 1 wrong, 2 fault, 3 hang (0: none) */
  int screened; /* run in this tune (halving: its short timing) */
  ft_runner_result last;
  double quick_ms;
} cand;

typedef struct tuner {
  ft_db *db;
  const ft_tune_req *req;
  ft_epilogue *ep;
  ft_epilogue *wrong_ep; /* test hook only */
  ft_runner *runner;
  ft_runner_hello dev;   /* the device, as the runner found it */
  int64_t device_id, problem_id, run_id;
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

/* Reports one step ("preparing", "compiling", ...) with a line for people. */
static void report_step(tuner *t, const char *phase, const char *message) {
  if (!t->req->progress) return;
  ft_tune_progress u = {phase, message, 0, 0, -1, now_s() - t->t0, -1};
  t->req->progress(t->req->progress_user, &u);
}

/* Reports a loop's progress: done of total candidates, the fastest correct one so far. */
static void progress(tuner *t, int done, int total, const char *phase) {
  if (!t->req->progress || total <= 0) return;
  double el = now_s() - t->t0;
  ft_tune_progress u = {phase, "", done, total, -1, el, done > 0 ? el / done * (total - done) : -1};
  for (int i = 0; i < t->sum->nentries; i++) {
    ft_tune_entry *e = &t->sum->entries[i];
    if (e->status == FT_RESULT_OK && ft_strategy_is_candidate(e->strategy) &&
        (u.best_ms < 0 || e->median_ms < u.best_ms))
      u.best_ms = e->median_ms;
  }
  t->req->progress(t->req->progress_user, &u);
}

/* Stores one result and mirrors it into the summary. */
static ft_status record(tuner *t, ft_strategy strategy, const char *variant, const char *json,
                        ft_result_status status, const ft_timing *tm, double rel, double maxabs,
                        const char *hash, const char *msg, ft_err *err) {
  /* The lists become text here, at the database boundary. */
  ft_result_row r = {t->run_id, t->device_id, t->problem_id, ft_strategy_name(strategy), variant, json,
                     ft_result_status_name(status),
                     tm ? tm->median_ms : -1, tm ? tm->min_ms : -1, tm ? tm->iqr_ms : -1,
                     tm ? tm->repeats : 0, rel, maxabs, hash, msg ? msg : ""};
  FT_TRY(ft_db_insert_result(t->db, &r, err));
  if (ft_strategy_is_candidate(strategy)) {
    if (status == FT_RESULT_OK) t->sum->n_ok++;
    else if (status == FT_RESULT_WRONG_RESULT) t->sum->n_wrong++;
    else if (status == FT_RESULT_COMPILE_ERROR) t->sum->n_compile_error++;
    else if (status == FT_RESULT_LAUNCH_ERROR) t->sum->n_launch_error++;
    else if (status == FT_RESULT_TIMEOUT) t->sum->n_timeout++;
  }
  if (t->sum->nentries >= FT_TUNE_MAX_ENTRIES) return FT_OK; /* stored; only the summary is full */
  ft_tune_entry *e = &t->sum->entries[t->sum->nentries++];
  memset(e, 0, sizeof *e);
  e->strategy = strategy;
  snprintf(e->variant, sizeof e->variant, "%s", variant);
  e->status = status;
  e->median_ms = r.median_ms;
  e->min_ms = r.min_ms;
  e->iqr_ms = r.iqr_ms;
  e->rel_err = rel;
  e->max_abs_err = maxabs;
  snprintf(e->message, sizeof e->message, "%s", msg ? msg : "");
  return FT_OK;
}

/* ---- baselines ---- */

static ft_status run_baselines(tuner *t, ft_err *err) {
  for (int k = 0; k < FT_BL_COUNT; k++) {
    ft_runner_job job;
    memset(&job, 0, sizeof job);
    job.type = FT_JOB_BASELINE;
    job.baseline = k;
    job.repeats = t->req->repeats;
    ft_runner_result r;
    FT_TRY(ft_runner_run(t->runner, &job, &r, err));
    if (r.status == FT_RESULT_UNAVAILABLE) continue;
    ft_timing tm = {r.median_ms, r.min_ms, r.iqr_ms, r.repeats};
    const ft_strategy strategy = ft_baseline_strategy((ft_baseline_kind)k);
    FT_TRY(record(t, strategy, r.describe, "{}", r.status, r.status == FT_RESULT_OK ? &tm : NULL, r.rel_err,
                  r.max_abs_err, "", r.message, err));
    if (k == FT_BL_EAGER && r.status == FT_RESULT_OK) t->sum->eager_ms = r.median_ms;
  }
  return FT_OK;
}

/* ---- candidates ---- */

static ft_status add_candidates(tuner *t, ft_variant_kind kind, int *cap, ft_err *err) {
  ft_variant *vs = NULL;
  int n = 0;
  ft_status s = ft_space_enumerate_math(kind, t->req->m, t->req->n, t->req->k, t->req->math, &t->dev.limits, &vs, &n, err);
  /* No fused GEMM for the mode on this shape or device (the tensor-core family needs sm_90 and
   * K in 16-byte rows): cuBLAS + the epilogue pass serves it. */
  if (s == FT_ERR_UNSUPPORTED && kind == FT_VK_GEMM) s = FT_OK, n = 0;
  FT_TRY(s);
  if (t->nc + n + 3 > *cap) { /* + room for the test hook's planted candidates */
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

#ifdef FT_TEST_HOOKS
/* The test hook's faulting or hanging kernel (kernels_src/test_faults.cu). */
static ft_status plant_faulty_source(cand *c, ft_err *err) {
  size_t len = 0;
  const char *body = ft__embedded("kernels_src/test_faults.cu", &len);
  if (!body) return ft__fail(err, FT_ERR_INTERNAL, "kernels_src/test_faults.cu is not embedded");
  const char *def = c->injected == 2 ? "#define FT_TEST_FAULT 1\n" : "#define FT_TEST_HANG 1\n";
  memset(&c->src, 0, sizeof c->src);
  c->src.text = malloc(strlen(def) + len + 1);
  if (!c->src.text) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  memcpy(c->src.text, def, strlen(def));
  memcpy(c->src.text + strlen(def), body, len + 1);
  ft__hash_hex(c->src.text, strlen(c->src.text), c->src.hash);
  snprintf(c->src.kernel, sizeof c->src.kernel, "ft_gemm");
  c->geom.has_reduce = 0;
  return FT_OK;
}
#endif

static ft_status prepare_candidate(tuner *t, cand *c, ft_err *err) {
  ft_variant_name(&c->v, c->name, sizeof c->name);
  ft_variant_json(&c->v, c->json, sizeof c->json);
  ft_variant_geometry(&c->v, t->req->m, t->req->n, t->req->k, &c->geom);
#ifdef FT_TEST_HOOKS
  if (c->injected >= 2) {
    FT_TRY(plant_faulty_source(c, err));
  } else
#endif
  {
    FT_TRY(ft_codegen_variant(&c->v, c->injected ? t->wrong_ep : t->ep, &c->src, err));
  }
  if (c->injected) {
    static const char *const suffix[] = {"", "_injected_wrong", "_injected_fault", "_injected_hang"};
    size_t len = strlen(c->name);
    snprintf(c->name + len, sizeof c->name - len, "%s", suffix[c->injected]);
  }
  c->job.src = c->src.text;
  c->job.hash = c->src.hash;
  c->job.arch_suffix = c->src.arch_suffix;
  if (!t->req->retune && !c->injected) {
    FT_TRY(ft_db_has_result(t->db, t->device_id, t->problem_id, ft_strategy_name(ft_variant_strategy(&c->v)), c->json,
                            c->src.hash, &c->known, err));
  }
  return FT_OK;
}

/* Verifies and times one candidate with `repeats` in the runner, keeping the result in c->last.
 * Returns non-OK only for failures that end the tune (runner). */
static ft_status run_candidate(tuner *t, cand *c, int repeats, ft_err *err) {
  ft_runner_result *r = &c->last;
  if (c->job.status != FT_OK) {
    memset(r, 0, sizeof *r);
    r->median_ms = r->min_ms = r->iqr_ms = r->rel_err = r->max_abs_err = -1;
    r->status = FT_RESULT_COMPILE_ERROR;
    snprintf(r->message, sizeof r->message, "%.250s", c->job.log ? c->job.log : "NVRTC failed");
    c->quick_ms = INFINITY;
    return FT_OK;
  }
  ft_runner_job job;
  memset(&job, 0, sizeof job);
  job.type = FT_JOB_CANDIDATE;
  job.v = c->v;
  job.geom = c->geom;
  snprintf(job.kernel, sizeof job.kernel, "%s", c->src.kernel);
  snprintf(job.reduce, sizeof job.reduce, "%s", c->src.reduce);
  job.repeats = repeats;
  job.cubin = c->job.cubin;
  job.cubin_size = c->job.cubin_size;
  FT_TRY(ft_runner_run(t->runner, &job, r, err));
  c->quick_ms = r->status == FT_RESULT_OK ? r->median_ms : INFINITY;
  return FT_OK;
}

/* Stores the candidate's last result. */
static ft_status store_candidate(tuner *t, cand *c, ft_err *err) {
  const ft_runner_result *r = &c->last;
  int ok = r->status == FT_RESULT_OK;
  ft_timing tm = {r->median_ms, r->min_ms, r->iqr_ms, r->repeats};
  t->sum->n_measured++;
  return record(t, ft_variant_strategy(&c->v), c->name, c->json, r->status, ok ? &tm : NULL, r->rel_err, r->max_abs_err, c->src.hash,
                r->message, err);
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
  ft_status st = ft_compile_many(t->db, t->dev.arch, jobs, n, 0, err);
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

/* Screened candidates by their quick median, fastest first; the others last. */
static int cmp_quick(const void *a, const void *b) {
  const cand *ca = a, *cb = b;
  if (ca->screened != cb->screened) return cb->screened - ca->screened;
  double x = ca->quick_ms, y = cb->quick_ms;
  return (x > y) - (x < y);
}

static ft_status search(tuner *t, ft_err *err) {
  int todo = 0;
  for (int i = 0; i < t->nc; i++) todo += !t->c[i].known;
  t->sum->n_skipped_known = t->nc - todo;
  if (!strcmp(t->req->search, "random")) shuffle(t->c, t->nc, t->req->seed);
  int halving = !strcmp(t->req->search, "halving");
  int done = 0, screened = 0;
  /* Halving: a short timing of everything first; what is stored is decided below. */
  for (int i = 0; i < t->nc; i++) {
    cand *c = &t->c[i];
    if (c->known) continue;
    if (over_budget(t)) {
      t->sum->budget_exhausted = 1;
      break;
    }
    FT_TRY(check_stop(t, err));
    FT_TRY(run_candidate(t, c, halving ? 5 : t->req->repeats, err));
    c->screened = 1;
    screened++;
    if (!halving) FT_TRY(store_candidate(t, c, err));
    progress(t, ++done, todo, halving ? "screening" : "tuning");
  }
  if (!halving) return FT_OK;
  /* Then the best quarter (at least 4) timed in full, within the budget; the rest keep their
   * screening result (stored with its 5 repeats). */
  qsort(t->c, (size_t)t->nc, sizeof *t->c, cmp_quick);
  int good = 0;
  for (int i = 0; i < t->nc; i++) good += t->c[i].screened && isfinite(t->c[i].quick_ms);
  int keep = good / 4 < 4 ? (good < 4 ? good : 4) : good / 4;
  int rank = 0;
  done = 0;
  for (int i = 0; i < t->nc; i++) {
    cand *c = &t->c[i];
    if (!c->screened) continue;
    FT_TRY(check_stop(t, err));
    if (isfinite(c->quick_ms) && rank < keep) {
      if (over_budget(t)) {
        t->sum->budget_exhausted = 1;
      } else {
        rank++;
        FT_TRY(run_candidate(t, c, t->req->repeats, err));
      }
    }
    FT_TRY(store_candidate(t, c, err));
    progress(t, ++done, screened, "timing");
  }
  return FT_OK;
}

static ft_status setup(tuner *t, ft_err *err) {
  FT_TRY(ft_db_upsert_device(t->db, &t->dev.info, &t->device_id, err));
  const ft_device_info info = t->dev.info;
  snprintf(t->sum->device_name, sizeof t->sum->device_name, "%s", info.name);
  ft_problem_key key;
  ft_problem_key_set(&key, t->req->m, t->req->n, t->req->k, t->req->math, ft_ep_canonical(t->ep), ft_ep_hash(t->ep));
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

#ifdef FT_TEST_HOOKS
int ft_tune_test_hooks(void) { return 1; }

/* The test hook (see FT_TEST_INJECT_ENV): clones of a plain fused candidate whose kernel is
 * wrong, faults or hangs. Room for three extra candidates was reserved by add_candidates. */
static ft_status plant_test_candidates(tuner *t, int n_gemm, ft_err *err) {
  const char *inject = getenv(FT_TEST_INJECT_ENV);
  if (!inject || !inject[0] || n_gemm == 0) return FT_OK;
  int base = 0;
  while (base < n_gemm - 1 && (t->c[base].v.split_k != 1 || t->c[base].v.streamk)) base++; /* one kernel */
  static const char *const kinds[] = {"wrong", "fault", "hang"};
  for (int i = 0; i < 3; i++) {
    if (!strstr(inject, kinds[i])) continue;
    if (i == 0 && !t->wrong_ep) {
      /* Scale the expression, keeping its `where` declarations outside the parentheses. */
      char text[FT_EP_MAX_TEXT + 64];
      const char *canon = ft_ep_canonical(t->ep), *w = strstr(canon, " where ");
      int len = w ? (int)(w - canon) : (int)strlen(canon);
      snprintf(text, sizeof text, "(%.*s) * 1.01%s", len, canon, w ? w : "");
      FT_TRY(ft_ep_parse(text, &t->wrong_ep, err));
    }
    cand *c = &t->c[t->nc++];
    *c = t->c[base];
    c->injected = i + 1;
  }
  return FT_OK;
}
#else
int ft_tune_test_hooks(void) { return 0; }

/* Builds without -DFUSEDTUNE_TEST_HOOKS=ON have no hook: the variable is ignored. */
static ft_status plant_test_candidates(tuner *t, int n_gemm, ft_err *err) {
  (void)t, (void)n_gemm, (void)err;
  return FT_OK;
}
#endif

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
  FT_TRY(plant_test_candidates(t, n_gemm < t->nc ? n_gemm : t->nc, err));
  t->sum->n_candidates = t->nc;
  for (int i = 0; i < t->nc; i++) FT_TRY(prepare_candidate(t, &t->c[i], err));
  return FT_OK;
}

static ft_status tune_body(tuner *t, ft_err *err) {
  FT_TRY(ft_ep_parse(t->req->epilogue, &t->ep, err));
  ft_runner_setup rs;
  memset(&rs, 0, sizeof rs);
  rs.device = t->req->device;
  rs.m = t->req->m;
  rs.n = t->req->n;
  rs.k = t->req->k;
  /* The text as given (<= FT_EP_MAX_TEXT): the canonical form can be longer. */
  snprintf(rs.epilogue, sizeof rs.epilogue, "%s", t->req->epilogue);
  rs.seed = t->req->seed;
  rs.math = t->req->math;
  rs.flush_l2 = t->req->flush_l2;
  report_step(t, "preparing",
              t->req->worker_exe ? "preparing inputs and the float64 reference in a worker process..."
                                 : "preparing inputs and the float64 reference (no worker process: candidates run "
                                   "in this one)...");
  FT_TRY(ft_runner_start(t->req->worker_exe, &rs, t->req->job_timeout_s, &t->runner, &t->dev, err));
  FT_TRY(setup(t, err));
  FT_TRY(run_baselines(t, err));
  FT_TRY(enumerate_all(t, err));
  char line[128];
  snprintf(line, sizeof line, "compiling %d candidate(s)...", t->nc);
  report_step(t, "compiling", line);
  FT_TRY(compile_candidates(t, err));
  snprintf(line, sizeof line, "compiled %d, %d from the cache, in %.1f s", t->sum->n_compiled, t->sum->n_cached,
           t->sum->compile_s);
  report_step(t, "compiled", line);
  return search(t, err);
}

ft_status ft_tune_run(ft_db *db, const ft_tune_req *req, ft_tune_summary *out, ft_err *err) {
  memset(out, 0, sizeof *out);
  FT_TRY(ft_check_shape(req->m, req->n, req->k, err));
  if ((unsigned)req->math >= FT_MATH_COUNT) return ft__fail(err, FT_ERR_INVALID_ARG, "math mode %d", (int)req->math);
  tuner t;
  memset(&t, 0, sizeof t);
  t.db = db;
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
    ft_problem_key_set(&key, req->m, req->n, req->k, req->math, ft_ep_canonical(t.ep), ft_ep_hash(t.ep));
    ft_err e3;
    int stale;
    out->has_best = ft_best_current(db, t.device_id, &key, t.ep, NULL, NULL, &out->best, &stale, &e3) == FT_OK;
  }
  out->total_s = now_s() - t.t0;
  for (int i = 0; i < t.nc; i++) {
    ft_compile_job_clear(&t.c[i].job);
    ft_kernel_src_free(&t.c[i].src);
  }
  free(t.c);
  if (t.runner) out->worker_restarts = ft_runner_restarts(t.runner);
  ft_runner_stop(t.runner);
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
