/* The tuning loop, in one line: the runner opens the device; the candidates are enumerated and
 * start compiling (src/compile/compile_pool.c's plan) while the runner prepares the data; the baselines;
 * the search (src/tune/search.c) measures and stores. Every candidate ends as one stored result (ok,
 * compile_error, wrong_result, launch_error), each in its own transaction, so an interrupted
 * tune keeps what it measured. */
#include "tuner.h"

#include "gated.h"

#include <math.h>
#include <stdio.h> /* snprintf */
#include <stdlib.h>
#include <string.h>

#include "best.h"
#include "compile.h"
#include "compile_pool.h"
#include "runner.h"
#include "search.h"
#include "timing_rule.h"

typedef struct cand {
  ft_variant v;
  char name[128];
  char json[512];
  ft_kernel_src src;
  ft_launch_geom geom;
  int known;    /* measured before with the same source: skipped unless --retune */
  int injected; /* the test hook's planted candidate: 1 wrong, 2 fault, 3 hang (0: none) */
  double cost;  /* the family's modelled cost (ft_family.enumerate) */
  double known_ms; /* with known: the fastest correct median stored before (INFINITY: none) */
  double known_rank; /* with known: its lowest stored gemm_ratio, the best's rank (INFINITY: none) */
  double known_err;  /* with known: its lowest stored wrong_result rel_err (INFINITY: none) */
  ft_runner_result last;
  double quick_ms; /* the last measurement at this run's cuBLAS clock (on_run_clock) */
} cand;

typedef struct tuner {
  ft_db *db;
  const ft_tune_req *req;
  const ft_tune_problem *p;
  ft_epilogue *wrong_ep; /* test hook only */
  ft_runner *runner;
  ft_runner_device dev;  /* the device, as the runner found it */
  ft_runner_ready ready;
  int64_t device_id, problem_id, run_id;
  double t0;
  ft_tune_summary *sum;
  cand *c;
  int nc;
  ft_compile_job *jobs;  /* candidate i's compilation, written by the plan */
  ft_compile_plan *plan; /* what compiles, in the search's order, ahead of the timing */
  ft_search_kind search; /* req->search, parsed */
  double gemm_ms; /* cuBLAS GEMM alone in this run: the rate predictions and the measurements
                   * (on_run_clock) are scaled by */
  double eager_ratio; /* the eager chain's gemm_ratio in this run (<= 0: none) */
  ft_search_stats ss;
} tuner;

/* How this tune's runner times (the engine applies the same rule): calls per CUDA graph, 0 on the stream. */
static int graph_calls(const tuner *t) {
  return ft_timing_graph_calls(t->p->m, t->p->n, t->p->k, t->p->math, t->p->ep, t->req->flush_l2);
}


/* The eager chain at the clock best_ms is reported at (on_run_clock's), so that the progress
 * line's speed-up compares two ratios to cuBLAS; its median where either is unknown. */
static double eager_on_run_clock(const tuner *t) {
  return t->eager_ratio > 0 && t->gemm_ms > 0 ? t->eager_ratio * t->gemm_ms : t->sum->eager_ms;
}

/* Reports one step ("preparing", "compiling", ...) with a line for people. */
static void report_step(tuner *t, const char *phase, const char *message) {
  if (!t->req->progress) return;
  const ft_tune_progress u = {.phase = phase,
                              .message = message,
                              .best_ms = -1,
                              .elapsed_s = ft__now_s() - t->t0,
                              .eta_s = -1,
                              .eager_ms = eager_on_run_clock(t)};
  t->req->progress(t->req->progress_user, &u);
}

/* Reports the search's progress, with the eager-style baseline it is measured against. */
static void progress(void *user, const ft_search_progress *p) {
  tuner *t = user;
  if (t->plan) ft_compile_plan_expect(t->plan, p->left);
  if (!t->req->progress || p->total <= 0) return;
  const ft_tune_progress u = {.phase = p->phase,
                              .message = "",
                              .done = p->done,
                              .total = p->total,
                              .best_ms = p->best_ms,
                              .elapsed_s = ft__now_s() - t->t0,
                              .eta_s = p->eta_s,
                              .eager_ms = eager_on_run_clock(t)};
  t->req->progress(t->req->progress_user, &u);
}

/* Stores one result and mirrors it into the summary. */
static ft_status record(tuner *t, ft_strategy strategy, const char *variant, const char *json,
                        ft_result_status status, const ft_timing *tm, double gemm_ratio, double rel, double maxabs,
                        const char *hash, const char *msg, ft_err *err) {
  /* The lists become text here, at the database boundary. */
  const ft_result_row r = {.run_id = t->run_id,
                           .device_id = t->device_id,
                           .problem_id = t->problem_id,
                           .strategy = ft_strategy_name(strategy),
                           .variant = variant,
                           .config_json = json,
                           .status = ft_result_status_name(status),
                           .median_ms = tm ? tm->median_ms : -1,
                           .min_ms = tm ? tm->min_ms : -1,
                           .iqr_ms = tm ? tm->iqr_ms : -1,
                           .repeats = tm ? tm->repeats : 0,
                           .rel_err = rel,
                           .max_abs_err = maxabs,
                           .source_hash = hash,
                           .message = msg ? msg : "",
                           .gemm_ratio = tm ? gemm_ratio : -1};
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
  e->gemm_ratio = r.gemm_ratio > 0 ? r.gemm_ratio : -1;
  /* The report's field is shorter than the stored message: its head and tail, cut on characters. */
  ft__fit_text(e->message, sizeof e->message, msg ? msg : "", msg ? strlen(msg) : 0);
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
    FT_TRY(record(t, strategy, r.describe, "{}", r.status, r.status == FT_RESULT_OK ? &tm : NULL, r.gemm_ratio,
                  r.rel_err, r.max_abs_err, "", r.message, err));
    if (k == FT_BL_EAGER && r.status == FT_RESULT_OK) t->sum->eager_ms = r.median_ms, t->eager_ratio = r.gemm_ratio;
    if (k == FT_BL_CUBLAS_GEMM && r.status == FT_RESULT_OK) t->gemm_ms = r.median_ms;
  }
  return FT_OK;
}

/* ---- candidates ---- */

static ft_status add_candidates(tuner *t, ft_variant_kind kind, int *cap, ft_err *err) {
  ft_variant *vs = NULL;
  double *costs = NULL;
  int n = 0;
  const ft_space_scope scope = ft_search_takes_full_space(t->search) ? FT_SPACE_FULL : FT_SPACE_PRUNED;
  ft_status s = ft_space_enumerate_ep(kind, t->p->m, t->p->n, t->p->k, t->p->math, scope, t->p->ep, &t->dev.limits, &vs,
                                      &costs, &n, err);
  /* No fused GEMM for the mode on this shape or device (the tensor-core family needs sm_90 and
   * K in 16-byte rows): cuBLAS + the epilogue pass serves it. */
  if (s == FT_ERR_UNSUPPORTED && kind == FT_VK_GEMM) s = FT_OK, n = 0;
  FT_TRY(s);
  if (t->nc + n + 3 > *cap) { /* + room for the test hook's planted candidates */
    int ncap = t->nc + n + 8;
    cand *nc = realloc(t->c, (size_t)ncap * sizeof *nc);
    if (!nc) {
      free(vs);
      free(costs);
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
    c->cost = costs[i];
  }
  free(vs);
  free(costs);
  return FT_OK;
}

#ifdef FT_TEST_HOOKS
/* The test hook's faulting or hanging kernel, read from the source tree (FT_TEST_FAULTS_CU: the
 * test build's kernels_src/test_faults.cu; no installed library holds it). */
static ft_status plant_faulty_source(cand *c, ft_err *err) {
  FILE *f = fopen(FT_TEST_FAULTS_CU, "rb");
  if (!f) return ft__fail(err, FT_ERR_IO, "test hook: cannot read %s", FT_TEST_FAULTS_CU);
  char body[16384];
  size_t len = fread(body, 1, sizeof body - 1, f);
  fclose(f);
  body[len] = 0;
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

static ft_status prepare_candidate(tuner *t, cand *c, ft_compile_job *job, ft_err *err) {
  ft_variant_name(&c->v, c->name, sizeof c->name);
  ft_variant_json(&c->v, c->json, sizeof c->json);
  ft_variant_geometry(&c->v, t->p->m, t->p->n, t->p->k, &c->geom);
#ifdef FT_TEST_HOOKS
  if (c->injected >= 2) {
    FT_TRY(plant_faulty_source(c, err));
  } else
#endif
  {
    FT_TRY(ft_codegen_variant(&c->v, c->injected ? t->wrong_ep : t->p->ep, &c->src, err));
  }
  if (c->injected) {
    static const char *const suffix[] = {"", "_injected_wrong", "_injected_fault", "_injected_hang"};
    size_t len = strlen(c->name);
    snprintf(c->name + len, sizeof c->name - len, "%s", suffix[c->injected]);
  }
  job->src = c->src.text;
  job->hash = c->src.hash;
  job->arch_suffix = c->src.arch_suffix;
  if (!t->req->retune && !c->injected) {
    /* Known only if timed as this run times (stream or graphs): ranks of the two differ most for
     * plans of several kernels, the small problems' launch gaps. */
    FT_TRY(ft_db_prior_result_ex(t->db, t->device_id, t->problem_id, ft_strategy_name(ft_variant_strategy(&c->v)),
                                 c->json, c->src.hash, graph_calls(t), &c->known, &c->known_ms, &c->known_rank,
                                 &c->known_err, err));
    /* Timed correctly but with no cuBLAS reference (before schema version 2, or --flush-l2): the
     * best ranks such a result after every ranked one, so a tune that ranks measures it again. */
    if (c->known && isfinite(c->known_ms) && !isfinite(c->known_rank) && !t->req->flush_l2) c->known = 0;
  }
  return FT_OK;
}

/* A measurement as a time at the clock of this run's cuBLAS baseline: its ratio to the cuBLAS
 * GEMM timed beside it (gemm_ratio) times that baseline, so the search compares candidates by
 * what the stored best is chosen by, not by medians the GPU's clock drift moved. The median
 * where either is missing. */
static double on_run_clock(const tuner *t, double median_ms, double gemm_ratio) {
  return gemm_ratio > 0 && isfinite(gemm_ratio) && t->gemm_ms > 0 ? gemm_ratio * t->gemm_ms : median_ms;
}

/* Verifies and times one candidate with `repeats` in the runner, keeping the result in c->last.
 * Returns non-OK only for failures that end the tune (runner). */
static ft_status run_candidate(tuner *t, cand *c, const ft_compile_job *cj, int repeats, ft_err *err) {
  ft_runner_result *r = &c->last;
  if (cj->status != FT_OK) {
    memset(r, 0, sizeof *r);
    r->median_ms = r->min_ms = r->iqr_ms = r->rel_err = r->max_abs_err = -1;
    r->status = FT_RESULT_COMPILE_ERROR;
    snprintf(r->message, sizeof r->message, "%.250s", cj->log ? cj->log : "NVRTC failed");
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
  job.cubin = cj->cubin;
  job.cubin_size = cj->cubin_size;
  const double t0 = ft__now_s();
  FT_TRY(ft_runner_run(t->runner, &job, r, err));
  ft_tune_phases *ph = &t->sum->phases;
  ph->measure_s += ft__now_s() - t0;
  ph->load_s += r->load_s;
  ph->verify_s += r->verify_s;
  ph->timing_s += r->time_s;
  ph->measurements++;
  c->quick_ms = r->status == FT_RESULT_OK ? on_run_clock(t, r->median_ms, r->gemm_ratio) : INFINITY;
  return FT_OK;
}

/* Stores the candidate's last result. */
static ft_status store_candidate(tuner *t, cand *c, ft_err *err) {
  const ft_runner_result *r = &c->last;
  int ok = r->status == FT_RESULT_OK;
  ft_timing tm = {r->median_ms, r->min_ms, r->iqr_ms, r->repeats};
  t->sum->n_measured++;
  return record(t, ft_variant_strategy(&c->v), c->name, c->json, r->status, ok ? &tm : NULL, r->gemm_ratio, r->rel_err,
                r->max_abs_err, c->src.hash, r->message, err);
}

/* ---- the search's operations on real candidates ---- */

static ft_status op_measure(void *user, int i, int repeats, double *ms, ft_err *err) {
  tuner *t = user;
  FT_TRY(ft_compile_plan_take(t->plan, i, err));
  FT_TRY(run_candidate(t, &t->c[i], &t->jobs[i], repeats, err));
  *ms = t->c[i].quick_ms;
  return FT_OK;
}

/* A wrong result whose error is finite (rel_err is infinite where an output was NaN or inf) and
 * within FT_ERROR_RULE_NEAR times the tolerance: the size a longer truncating partial sum gives
 * (KernelBench 37: 1.5x; 55's row sums: 6-25x), which a shorter one may meet (search.h err_rank);
 * a wrong kernel's error is orders larger and says nothing of the others. */
#define FT_ERROR_RULE_NEAR 32.0
static int near_miss(const tuner *t, double rel_err) {
  return isfinite(rel_err) && t->ready.tol > 0 && rel_err <= FT_ERROR_RULE_NEAR * t->ready.tol;
}

static int op_beyond_tolerance(void *user, int i) {
  const tuner *t = user;
  const ft_runner_result *r = &t->c[i].last;
  return r->status == FT_RESULT_WRONG_RESULT && near_miss(t, r->rel_err);
}

static ft_status op_store(void *user, int i, ft_err *err) { return store_candidate(user, &((tuner *)user)->c[i], err); }

static double op_clock(void *user) {
  (void)user;
  return ft__now_s();
}

static ft_status check_stop(const tuner *t, ft_err *err) {
  if (t->req->stop && *t->req->stop)
    return ft__fail(err, FT_ERR_INTERRUPTED, "interrupted: %d result(s) of this run are stored; run the same tune "
                    "again to continue where it stopped", t->sum->nentries);
  return FT_OK;
}

static ft_status op_check_stop(void *user, ft_err *err) { return check_stop(user, err); }

/* The predicted time of a fused candidate: its cost (multiply-adds of the busiest SM over an
 * efficiency relative to cuBLAS, see ft_family.enumerate) at the per-SM rate cuBLAS's GEMM
 * reached on this problem in this run. Without that baseline the eager one stands in; only
 * the order and the ratios matter to the search, so any common scale would do. */
static double predicted_ms(const tuner *t, const cand *c) {
  /* cuBLAS's GEMM of a gated pair is the stacked one: 2n columns, as the fused costs count them. */
  const double mnk = (double)t->p->m * (double)ft_gemm_cols(t->p->ep, t->p->n) * (double)t->p->k;
  const double ref = t->gemm_ms > 0 ? t->gemm_ms : t->sum->eager_ms > 0 ? t->sum->eager_ms : 1.0;
  return c->cost * t->dev.limits.sm_count * ref / mnk;
}

/* The search's items for the candidates (a calloc'd array, NULL when out of memory) and its
 * configuration. */
static ft_search_item *search_items(const tuner *t) {
  ft_search_item *it = calloc((size_t)t->nc + 1, sizeof *it);
  for (int i = 0; it && i < t->nc; i++) {
    const cand *c = &t->c[i];
    it[i].safe = c->v.kind == FT_VK_EPILOGUE;
    it[i].known = c->known;
    /* A rank is what the stored best is chosen by: at this run's clock it reads as a time. Before
     * the baselines (no clock yet) the ranks themselves stand in, on a clock of 1 ms: the search
     * compares times only in ratios, so it decides as it will at this run's clock. */
    const double clock = t->gemm_ms > 0 ? t->gemm_ms : 1.0;
    it[i].known_ms = !c->known ? INFINITY
                     : c->known_rank > 0 && isfinite(c->known_rank) ? c->known_rank * clock
                                                                     : c->known_ms;
    it[i].predicted_ms = it[i].safe ? 0 : predicted_ms(t, c);
    /* An earlier tune's failure just beyond this run's tolerance (a wrong result stores its rel_err). */
    it[i].known_beyond = c->known && !isfinite(c->known_ms) && near_miss(t, c->known_err);
    /* The test hook's planted wrong kernel says nothing of the others' sums. */
    it[i].err_rank = it[i].safe || c->injected ? 0 : ft_variant_partial_sum(&c->v, t->p->k);
  }
  return it;
}

static ft_search_cfg search_cfg(const tuner *t) {
  ft_search_cfg cfg = FT_SEARCH_CFG_INIT;
  cfg.kind = t->search;
  cfg.repeats = t->req->repeats;
  cfg.deadline = t->t0 + t->req->budget_s;
  cfg.seed = t->req->seed;
  return cfg;
}

static ft_status search(tuner *t, ft_err *err) {
  ft_search_item *it = search_items(t);
  if (!it) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  int todo = 0;
  for (int i = 0; i < t->nc; i++) todo += !t->c[i].known;
  t->sum->n_skipped_known = t->nc - todo;
  const ft_search_cfg cfg = search_cfg(t);
  /* The compilation was planned in ft_search_order's order when the device was known. */
  const ft_search_ops ops = {.user = t,
                             .measure = op_measure,
                             .store = op_store,
                             .clock = op_clock,
                             .check_stop = op_check_stop,
                             .progress = progress,
                             .beyond_tolerance = op_beyond_tolerance};
  ft_status s = ft_search_run(it, t->nc, &cfg, &ops, &t->ss, err);
  t->sum->budget_exhausted = t->ss.budget_exhausted;
  t->sum->n_early_stopped = t->ss.early_stopped;
  t->sum->n_error_pruned = t->ss.error_pruned;
  free(it);
  return s;
}

static ft_status setup(tuner *t, ft_err *err) {
  FT_TRY(ft_db_upsert_device(t->db, &t->dev.info, &t->device_id, err));
  const ft_device_info info = t->dev.info;
  snprintf(t->sum->device_name, sizeof t->sum->device_name, "%s", info.name);
  ft_problem_key key;
  ft_problem_key_set(&key, t->p->m, t->p->n, t->p->k, t->p->math, ft_ep_canonical(t->p->ep), ft_ep_hash(t->p->ep));
  snprintf(t->sum->epilogue, sizeof t->sum->epilogue, "%s", key.epilogue);
  FT_TRY(ft_db_upsert_problem(t->db, &key, &t->problem_id, err));
  char opts[512];
  snprintf(opts, sizeof opts,
           "{\"search\":\"%s\",\"budget_s\":%.17g,\"repeats\":%d,\"retune\":%d,\"flush_l2\":%d,\"seed\":%llu,"
           "\"graph_calls\":%d}",
           t->req->search, t->req->budget_s, t->req->repeats, t->req->retune, t->req->flush_l2,
           (unsigned long long)t->req->seed, graph_calls(t));
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
  while (base < n_gemm - 1 && (t->c[base].v.split_k != 1 || ft_variant_stream_k(&t->c[base].v))) base++; /* one kernel */
  static const char *const kinds[] = {"wrong", "fault", "hang"};
  for (int i = 0; i < 3; i++) {
    if (!strstr(inject, kinds[i])) continue;
    if (i == 0 && !t->wrong_ep) {
      /* Scale the expression, keeping its `where` declarations outside the parentheses. */
      char text[FT_EP_MAX_TEXT + 64];
      const char *canon = ft_ep_canonical(t->p->ep), *w = strstr(canon, " where ");
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

/* Whether a tune at fp32 accuracy can leave out every FFMA kernel: the stored, current 3xtf32 best
 * of this problem on this device (tuned first) ranks below what FFMA can reach, both ratios to the
 * same cuBLAS SGEMM. *ratio: that best's ratio (0: none). */
static ft_status ffma_outrun(tuner *t, double *ratio, int *outrun, ft_err *err) {
  *ratio = 0;
  *outrun = 0;
  if (!t->req->prune_ffma || t->p->math != FT_MATH_FP32 || ft_search_takes_full_space(t->search)) return FT_OK;
  ft_problem_key key;
  ft_problem_key_set(&key, t->p->m, t->p->n, t->p->k, FT_MATH_3XTF32, ft_ep_canonical(t->p->ep), ft_ep_hash(t->p->ep));
  ft_best b;
  int stale = 0;
  ft_err quiet;
  ft_status s = ft_best_current(t->db, t->device_id, &key, t->p->ep, NULL, NULL, &b, &stale, &quiet);
  if (s == FT_ERR_NOT_FOUND) return FT_OK;
  if (s != FT_OK) return ft__fail(err, s, "%s", quiet.msg);
  *ratio = b.gemm_ratio;
  *outrun = ft_search_ffma_outrun(b.gemm_ratio);
  return FT_OK;
}

static ft_status enumerate_all(tuner *t, ft_err *err) {
  int cap = 0;
  FT_TRY(add_candidates(t, FT_VK_GEMM, &cap, err));
  int n_gemm = t->nc;
  double ratio3 = 0;
  int outrun = 0;
  FT_TRY(ffma_outrun(t, &ratio3, &outrun, err));
  if (outrun && n_gemm > 0) {
    char line[240];
    snprintf(line, sizeof line, "%d FFMA kernel(s) left out: the stored 3xtf32 best runs at %.3f of cuBLAS SGEMM's time, "
             "below the %.2f no FFMA kernel reaches (--strategy exhaustive times them)", n_gemm, ratio3,
             FT_FFMA_RATIO_FLOOR);
    report_step(t, "preparing", line);
    t->sum->n_early_stopped += n_gemm;
    t->nc = n_gemm = 0;
  }
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
  t->jobs = calloc((size_t)t->nc + 1, sizeof *t->jobs);
  if (!t->jobs) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < t->nc; i++) FT_TRY(prepare_candidate(t, &t->c[i], &t->jobs[i], err));
  return FT_OK;
}

/* Starts compiling the candidates the search may measure, in the order it will measure them
 * (ft_search_order: the same before the baselines set the predictions' scale, which only the
 * ratios matter to), so that the kernels compile beside the runner's preparation and the
 * baselines. A failure of the plan's cache read stays in the plan until a candidate needs it. */
static ft_status start_compiling(tuner *t, ft_err *err) {
  ft_search_item *it = search_items(t);
  int *order = malloc(((size_t)t->nc + 1) * sizeof *order);
  if (!it || !order) {
    free(it);
    free(order);
    return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  }
  const ft_search_cfg cfg = search_cfg(t);
  ft_search_order(it, t->nc, &cfg, order);
  int n = 0; /* what was measured before is not compiled */
  for (int q = 0; q < t->nc; q++)
    if (!t->c[order[q]].known) order[n++] = order[q];
  ft_status s = ft_compile_plan_start(t->db, t->dev.arch, t->jobs, t->nc, order, n, &t->plan, err);
  free(it);
  free(order);
  return s;
}

/* Stops the compilation; what was compiled ahead is cached, and counted. */
static void end_compiling(tuner *t) {
  ft_compile_stats cs = {0};
  ft_compile_plan_end(t->plan, &cs);
  t->plan = NULL;
  t->sum->n_compiled += cs.n_compiled;
  t->sum->n_cached += cs.n_cached;
  t->sum->compile_s += cs.compile_s;
  t->sum->phases.nvrtc_s += cs.nvrtc_s;
  t->sum->phases.compile_wait_s += cs.wait_s;
}

/* A repeat of a finished tune: nothing to measure, so no compilation, data, reference or
 * baselines either; the stored best stands (--retune measures again). Either every candidate was
 * measured before, or the search, given what was, would measure none of the rest: its early stop
 * (scale-free, so decided before the baselines) leaves them out as the finished tune did. */
static int nothing_to_do(tuner *t) {
  int todo = 0;
  for (int i = 0; i < t->nc; i++) todo += !t->c[i].known;
  if (t->nc == 0) return 0;
  if (todo > 0) {
    ft_search_item *it = ft_search_takes_full_space(t->search) ? NULL : search_items(t);
    const ft_search_cfg cfg = search_cfg(t);
    const int measures = !it || ft_search_would_measure(it, t->nc, &cfg);
    free(it);
    if (measures) return 0;
  }
  t->sum->n_skipped_known = t->nc - todo;
  t->sum->n_early_stopped += todo;
  char line[300];
  if (todo == 0)
    snprintf(line, sizeof line, "every candidate was measured before with today's kernel sources: nothing to do "
             "(--retune measures again)");
  else
    snprintf(line, sizeof line, "%d candidate(s) measured before with today's kernel sources; by the cost model and "
             "its error on them the other %d cannot beat the stored best: nothing to do (--retune measures again, "
             "--strategy exhaustive measures every one)", t->nc - todo, todo);
  report_step(t, "compiled", line);
  return 1;
}

/* The run's record, its candidates, and their compilation started (*done: none to measure). */
static ft_status plan_candidates(tuner *t, int *done, ft_err *err) {
  const double t0 = ft__now_s();
  FT_TRY(setup(t, err));
  FT_TRY(enumerate_all(t, err));
  *done = nothing_to_do(t);
  if (!*done) FT_TRY(start_compiling(t, err));
  t->sum->phases.enumerate_s = ft__now_s() - t0;
  if (*done) return FT_OK;
  char line[200];
  snprintf(line, sizeof line, "%s search of %d candidate(s): compiling in its order on %d thread(s), beside the "
           "preparation and the timing...", t->req->search, t->nc, ft_compile_plan_threads(t->plan));
  report_step(t, "compiling", line);
  return FT_OK;
}

/* What the runner's start and preparation are about to do. */
static void report_preparing(tuner *t) {
  char no_worker[9000]; /* two paths of up to PATH_MAX */
  if (!t->req->worker_exe)
    snprintf(no_worker, sizeof no_worker,
             "preparing inputs and the float64 reference (no worker executable: %s, and $FUSEDTUNE_WORKER unset; "
             "candidates run in this process, where a faulting kernel ends the tune)...",
             ft_default_worker_where());
  report_step(t, "preparing",
              t->req->worker_exe ? "preparing inputs and the float64 reference in a worker process..." : no_worker);
}

/* The runner opens the device and prepares the data (about a second) while the candidates compile;
 * then the baselines, then the search. When the caller has the device open already, the
 * candidates are planned before the worker starts, and a repeat of a finished tune starts none. */
static ft_status tune_body(tuner *t, ft_err *err) {
  ft_tune_phases *ph = &t->sum->phases;
  const ft_runner_opts ro = {.worker_exe = t->req->worker_exe,
                             .job_timeout_s = t->req->job_timeout_s,
                             .device = t->req->device,
                             .seed = t->req->seed,
                             .flush_l2 = t->req->flush_l2};
  double t0 = ft__now_s();
  const int early = t->req->device_known != NULL;
  int done = 0;
  if (early) {
    t->dev = *t->req->device_known;
    FT_TRY(plan_candidates(t, &done, err));
    if (done) return FT_OK;
  }
  report_preparing(t);
  ft_runner_device found;
  FT_TRY(ft_runner_start(t->p, &ro, &t->runner, &found, err));
  if (early && strcmp(found.info.fingerprint, t->dev.info.fingerprint) != 0)
    return ft__fail(err, FT_ERR_CUDA, "the worker found device %d to be %s (fingerprint %s), the caller %s (%s); "
                    "is CUDA_VISIBLE_DEVICES the same for both?", t->req->device, found.info.name,
                    found.info.fingerprint, t->dev.info.name, t->dev.info.fingerprint);
  t->dev.gpu_open_s = found.gpu_open_s;
  if (!early) {
    t->dev = found;
    FT_TRY(plan_candidates(t, &done, err));
    if (done) return FT_OK;
  }
  FT_TRY(ft_runner_prepare(t->runner, &t->ready, err));
  ph->prepare_s = ft__now_s() - t0;
  ph->gpu_open_s = t->dev.gpu_open_s;
  ph->data_s = t->ready.data_s;
  ph->tolerance_s = t->ready.tolerance_s;
  ph->baselines_setup_s = t->ready.baselines_setup_s;
  t0 = ft__now_s();
  FT_TRY(run_baselines(t, err));
  ph->baselines_s = ft__now_s() - t0;
  t0 = ft__now_s();
  ft_status s = search(t, err);
  ph->search_s = ft__now_s() - t0;
  end_compiling(t); /* the threads stopped; what they compiled ahead is cached and counted */
  char line[200];
  snprintf(line, sizeof line, "compiled %d, %d from the cache, %.1f s of compilation", t->sum->n_compiled,
           t->sum->n_cached, t->sum->compile_s);
  report_step(t, "compiled", line);
  return s;
}

ft_status ft_tune_run(ft_db *db, const ft_tune_req *req, ft_tune_summary *out, ft_err *err) {
  memset(out, 0, sizeof *out);
  const ft_tune_problem *p = req->problem;
  tuner t;
  memset(&t, 0, sizeof t);
  if (!ft_search_parse(req->search, &t.search))
    return ft__fail(err, FT_ERR_INVALID_ARG, "unknown search '%s' (%s)", req->search ? req->search : "(null)",
                    FT_SEARCH_NAMES);
  t.db = db;
  t.req = req;
  t.p = p;
  t.sum = out;
  t.t0 = ft__now_s();
  out->flops = 2.0 * (double)p->m * (double)ft_gemm_cols(p->ep, p->n) * (double)p->k; /* a gated pair's GEMM: 2n */
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
    ft_problem_key_set(&key, p->m, p->n, p->k, p->math, ft_ep_canonical(p->ep), ft_ep_hash(p->ep));
    ft_err e3;
    int stale;
    out->has_best = ft_best_current(db, t.device_id, &key, p->ep, NULL, NULL, &out->best, &stale, &e3) == FT_OK;
  }
  end_compiling(&t); /* (again, after an error) before the jobs it writes to go */
  for (int i = 0; i < t.nc; i++) {
    if (t.jobs) ft_compile_job_clear(&t.jobs[i]);
    ft_kernel_src_free(&t.c[i].src);
  }
  free(t.jobs);
  free(t.c);
  if (t.runner) out->worker_restarts = ft_runner_restarts(t.runner);
  const double stop0 = ft__now_s();
  ft_runner_stop(t.runner); /* the worker's exit (its CUDA context's teardown) is waited for */
  out->phases.stop_s = ft__now_s() - stop0;
  out->total_s = ft__now_s() - t.t0;
  ft_ep_free(t.wrong_ep);
  return st;
}

void ft_tune_summary_free(ft_tune_summary *s) {
  if (!s) return;
  free(s->entries);
  s->entries = NULL;
  s->nentries = 0;
}
