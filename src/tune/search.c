/* The search strategies over abstract items (see search.h). GPU-free.
 *
 * Why the early stop of the fast search is sound enough to be the default:
 * each fused item i has a predicted time p_i (the family's cost model in the units of this run's
 * cuBLAS rate) and, once screened, a measured time t_i; r_i = t_i / p_i is the model's error on
 * it. The items are screened in ascending p. Before screening item j, with R items left and
 * best the fastest time measured so far (safe ones included), the search stops when
 *     p_j * r_lo / (1 + slack) > best,
 *     r_lo = min(lowest r_i seen, exp(mu - z sd)),
 * mu and sd the mean and standard deviation of log r_i over the >= min_fused items measured in
 * this run, z the normal quantile of upper tail risk / R. Every item k left has p_k >= p_j, so
 * it can beat best only with r_k < best / p_k <= best / p_j < r_lo / (1 + slack): only if the
 * model errs in its favour by more than it did for any item measured, and by more than the
 * fitted error makes likely for any of the R: were log r normal with that mean and spread, each
 * falls below exp(mu - z sd) with chance risk / R, so some item left beats best with chance at
 * most risk (0.1), and by more than 1 + slack (2 %: the screening's noise and the 1 % the
 * target allows) with less. The bound needs no absolute accuracy: a model off by a constant
 * factor stops at the same place; it needs the model's error on the items left to look like
 * its error on the items measured. A whole kind of tile the model misjudges can break that;
 * min_fused, screening the predicted best first and the minimum-ratio term limit the damage, and
 * --strategy exhaustive remains for certainty.
 *
 * The fast search's second rule is about error, not time. In 3xtf32 and fp8 a kernel adds its
 * products into tensor-core partial sums (chunk k tiles long) whose adds truncate: a biased error
 * that grows with the sum's length, and that a row sum or a normalization adds up rather than
 * averages out (KernelBench 37 at 32768 x 4096 x 1024: every 512-product form 1.41e-6 against a
 * tolerance of 9.54e-7). The cost model ranks the longest sums first (fewer fp32 adds), so a
 * budget could go on forms that all fail alike. Once one item fails on a finite error just beyond
 * the tolerance (the tuner's beyond_tolerance: within 32 times it, the size a longer truncating sum
 * gives; a wrong kernel's is orders larger), the items left whose sums are at least as long are not
 * measured (err_rank); shorter ones still are. Not where an item with sums at least as long gave a
 * time in the same run: then the length is not what failed. exhaustive, random and halving
 * measure everything. */
#include "search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_names[FT_SEARCH_COUNT] = {"fast", "exhaustive", "random", "halving"};

int ft_search_parse(const char *name, ft_search_kind *out) {
  for (int k = 0; name && k < FT_SEARCH_COUNT; k++)
    if (!strcmp(name, k_names[k])) {
      if (out) *out = (ft_search_kind)k;
      return 1;
    }
  return 0;
}

const char *ft_search_name(ft_search_kind k) { return (unsigned)k < FT_SEARCH_COUNT ? k_names[k] : "?"; }

int ft_search_takes_full_space(ft_search_kind k) { return k == FT_SEARCH_EXHAUSTIVE || k == FT_SEARCH_RANDOM; }

int ft_search_cannot_win(double pred_ms, double ratio_lo, double best_ms, double slack) {
  if (!(pred_ms > 0) || !isfinite(pred_ms) || !(ratio_lo > 0) || !isfinite(best_ms)) return 0;
  return pred_ms * ratio_lo / (1.0 + slack) > best_ms;
}

int ft_search_ffma_outrun(double ratio) { return ratio > 0 && ratio * 1.05 < FT_FFMA_RATIO_FLOOR; }

/* z with 0.5 erfc(z / sqrt 2) = q, for 0 < q < 0.5, by bisection. */
static double upper_quantile(double q) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; i++) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * erfc(mid / sqrt(2.0)) > q) lo = mid;
    else hi = mid;
  }
  return hi;
}

double ft_search_ratio_floor(double mu, double sd, double min_ratio, int remaining, double risk) {
  if (!(min_ratio > 0) || remaining < 1 || !(risk > 0)) return min_ratio;
  const double q = risk / remaining;
  const double fit = exp(mu - (q < 0.5 ? upper_quantile(q) : 0) * (sd > 0 ? sd : 0));
  return fit < min_ratio ? fit : min_ratio;
}

typedef struct run {
  ft_search_item *it;
  int n;
  const ft_search_cfg *cfg;
  const ft_search_ops *ops;
  ft_search_stats *st;
  int *pending; /* measured, not yet stored */
  int npending;
  int nratio;   /* fused items whose ratio measured / predicted is known */
  double min_ratio, sum_log, sum_log2;
  double spent; /* seconds spent measuring, for the ETA */
  int nspent;
  int retimes_after; /* full timings of screened items expected after the current phase */
  int fused_seen;    /* fused items that gave a time, known before or measured now (cfg->fused_floor) */
  int fused_tried;   /* fused items measured in this run, failures included */
  int prune_rank;    /* fast: the shortest partial sums (err_rank) measured beyond the tolerance; 0: none */
  int pass_rank;     /* fast: the longest partial sums of a fused item that gave a time (0: none) */
} run;

/* The fast search's error rule (search.h err_rank): whether item it is left out. */
static int rule_leaves_out(const run *r, const ft_search_item *it) {
  return r->prune_rank > 0 && !it->safe && !it->known && it->err_rank >= r->prune_rank;
}

/* Marks the items of idx[from..m) the error rule leaves out (counted once, taken off *total). */
static void prune_rest(run *r, const int *idx, int from, int m, int *total) {
  for (int q = from; q < m; q++) {
    ft_search_item *o = &r->it[idx[q]];
    if (o->pruned || !rule_leaves_out(r, o)) continue;
    o->pruned = 1;
    r->st->error_pruned++;
    (*total)--;
  }
}

/* After item i's measurement in the fast search's fused pass: a failure beyond the tolerance at
 * partial sums of rank e leaves out the items left of idx[from..m) with sums at least as long,
 * unless one at least as long already gave a time in this run (then length is not what failed). */
static void error_rule(run *r, int i, const int *idx, int from, int m, int *total) {
  const ft_search_item *it = &r->it[i];
  if (isfinite(it->ms)) {
    if (it->err_rank > r->pass_rank) r->pass_rank = it->err_rank;
    return;
  }
  if (it->err_rank <= 0 || !r->ops->beyond_tolerance || !r->ops->beyond_tolerance(r->ops->user, i) ||
      it->err_rank <= r->pass_rank || (r->prune_rank > 0 && it->err_rank >= r->prune_rank))
    return;
  r->prune_rank = it->err_rank;
  prune_rest(r, idx, from, m, total);
}

static double seen_ms(const ft_search_item *it) {
  if (it->repeats > 0) return it->ms;
  return it->known ? it->known_ms : INFINITY;
}

static void note_ratio(run *r, const ft_search_item *it) {
  const double t = seen_ms(it);
  if (it->safe || !isfinite(t) || !(it->predicted_ms > 0) || !isfinite(it->predicted_ms)) return;
  const double q = t / it->predicted_ms;
  if (r->nratio == 0 || q < r->min_ratio) r->min_ratio = q;
  r->sum_log += log(q);
  r->sum_log2 += log(q) * log(q);
  r->nratio++;
}

/* The early stop's r_lo for `remaining` items left (search.h, ft_search_ratio_floor). */
static double ratio_floor(const run *r, int remaining) {
  const int n = r->nratio;
  const double mu = r->sum_log / n;
  const double var = n > 1 ? (r->sum_log2 - n * mu * mu) / (n - 1) : 0;
  return ft_search_ratio_floor(mu, var > 0 ? sqrt(var) : 0, r->min_ratio, remaining, r->cfg->stop_risk);
}

static void note_best(run *r, const ft_search_item *it) {
  const double t = seen_ms(it);
  if (t < r->st->best_ms) r->st->best_ms = t;
  if (it->safe && t < r->st->best_safe_ms) r->st->best_safe_ms = t;
}

/* left: measurements of items not measured yet still expected; retimes: of items screened. */
static void report(run *r, const char *phase, int done, int total, int left, int retimes) {
  if (!r->ops->progress) return;
  ft_search_progress p = {phase, done, total, isfinite(r->st->best_ms) ? r->st->best_ms : -1,
                          r->nspent > 0 ? r->spent / r->nspent * (left + retimes) : -1, left};
  r->ops->progress(r->ops->user, &p);
}

static ft_status store(run *r, int i, ft_err *err) {
  FT_TRY(r->ops->store(r->ops->user, i, err));
  r->it[i].stored = 1;
  r->st->stored++;
  return FT_OK;
}

/* Stores every measurement not stored yet, in the order they were made. */
static ft_status flush(run *r, ft_err *err) {
  ft_status s = FT_OK;
  for (int p = 0; p < r->npending && s == FT_OK; p++)
    if (!r->it[r->pending[p]].stored) s = store(r, r->pending[p], err);
  r->npending = 0;
  return s;
}

/* Measures item i; the result is stored now (store_now) or by a later flush. Ends the search
 * when check_stop says so, after storing what was measured. */
static ft_status measure(run *r, int i, int repeats, int store_now, ft_err *err) {
  if (r->ops->check_stop) {
    ft_status s = r->ops->check_stop(r->ops->user, err);
    if (s != FT_OK) {
      ft_err e2;
      flush(r, &e2); /* the interruption is what is reported, */
      ft_status s2 = r->ops->check_stop(r->ops->user, err); /* its message counting what flush stored */
      return s2 != FT_OK ? s2 : s;
    }
  }
  ft_search_item *it = &r->it[i];
  const int first_fused = !it->safe && it->repeats == 0; /* counted once it gave a time (below) */
  const double t0 = r->ops->clock(r->ops->user);
  double ms = INFINITY;
  ft_status s = r->ops->measure(r->ops->user, i, repeats, &ms, err);
  if (s != FT_OK) {
    ft_err e2;
    flush(r, &e2);
    return s;
  }
  r->spent += r->ops->clock(r->ops->user) - t0;
  r->nspent++;
  it->ms = isfinite(ms) && ms >= 0 ? ms : INFINITY;
  r->fused_tried += first_fused;
  r->fused_seen += first_fused && isfinite(it->ms);
  it->repeats = repeats;
  it->stored = 0;
  r->st->measured++;
  note_best(r, it);
  /* A failure is final whatever the repeats: stored at once. */
  if (store_now || !isfinite(it->ms)) return store(r, i, err);
  r->pending[r->npending++] = i;
  return FT_OK;
}

/* Whether a pass ends before its next item: fused items start only before the deadline, except
 * until cfg->fused_floor of them gave a time (at most three times the floor tried: a kernel that
 * fails to compile or is wrong does not hold the tune past its budget for long); the safe ones
 * always. */
static int out_of_time(run *r, int is_safe) {
  if (is_safe || (r->fused_seen < r->cfg->fused_floor && r->fused_tried < 3 * r->cfg->fused_floor) ||
      !(r->ops->clock(r->ops->user) > r->cfg->deadline))
    return 0;
  r->st->budget_exhausted = 1;
  return 1;
}

/* The order fused items are measured in: predicted time, then index (items without a
 * prediction last). */
static double pred_key(const ft_search_item *it) {
  return it->predicted_ms > 0 && isfinite(it->predicted_ms) ? it->predicted_ms : INFINITY;
}

/* A stable insertion sort of idx by key (a few hundred items; qsort has no user pointer). */
static void sort_idx(const ft_search_item *it, int *idx, int m, double (*key)(const ft_search_item *)) {
  for (int p = 1; p < m; p++) {
    const int x = idx[p];
    const double kx = key(&it[x]);
    int q = p;
    while (q > 0 && key(&it[idx[q - 1]]) > kx) {
      idx[q] = idx[q - 1];
      q--;
    }
    idx[q] = x;
  }
}

static void shuffle(int *idx, int m, uint64_t seed) {
  uint64_t s = seed ? seed : 12345;
  for (int i = m - 1; i > 0; i--) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const int j = (int)((s >> 33) % (uint64_t)(i + 1));
    const int t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
}

static int todo(const run *r, const int *idx, int m) {
  int c = 0;
  for (int i = 0; i < m; i++) c += !r->it[idx[i]].known;
  return c;
}

/* Every item of idx fully timed and stored, in order; fused ones only before the deadline. */
static ft_status full_pass(run *r, const int *idx, int m, int is_safe, int later, ft_err *err) {
  const int total = todo(r, idx, m);
  int done = 0;
  for (int p = 0; p < m; p++) {
    const int i = idx[p];
    if (r->it[i].known) continue;
    if (out_of_time(r, is_safe)) break;
    FT_TRY(measure(r, i, r->cfg->repeats, 1, err));
    done++;
    report(r, is_safe ? "safe" : "tuning", done, total, total - done + later, 0);
  }
  return FT_OK;
}

static double ms_key(const ft_search_item *it) { return it->ms; }

/* After a screening of sc[0..m): the keep fastest correct ones within margin of ref timed in
 * full (before the deadline for fused ones), then everything stored. */
static ft_status confirm(run *r, int *sc, int m, int keep, double margin, double ref, int is_safe, int later,
                         ft_err *err) {
  sort_idx(r->it, sc, m, ms_key);
  int chosen = 0;
  for (int p = 0; p < m && chosen < keep; p++) {
    const int i = sc[p];
    if (!isfinite(r->it[i].ms) || r->it[i].ms > ref * (1.0 + margin)) break;
    chosen++;
  }
  for (int p = 0; p < chosen; p++) {
    if (out_of_time(r, is_safe)) break;
    /* The full timing replaces the screening result (one result per item); an interruption
     * before it stores the screening result. */
    FT_TRY(measure(r, sc[p], r->cfg->repeats, 1, err));
    report(r, "timing", p + 1, chosen, later, chosen - p - 1 + r->retimes_after);
  }
  return flush(r, err);
}

/* Screens idx in order with the short timing; the fast search's fused pass stops early by the
 * bound. The screened ones go to sc (count *msc). */
static ft_status screen(run *r, const int *idx, int m, int is_safe, int early, int later, int *sc, int *msc,
                        ft_err *err) {
  const ft_search_cfg *c = r->cfg;
  int total = todo(r, idx, m), done = 0;
  *msc = 0;
  if (early && !is_safe) prune_rest(r, idx, 0, m, &total); /* what earlier tunes found (ft_search_run) */
  for (int p = 0; p < m; p++) {
    const int i = idx[p];
    if (r->it[i].known || r->it[i].pruned) continue;
    if (out_of_time(r, is_safe)) break;
    if (early && r->nratio >= c->min_fused) {
      r->st->ratio_lo = ratio_floor(r, total - done);
      if (ft_search_cannot_win(r->it[i].predicted_ms, r->st->ratio_lo, r->st->best_ms, c->stop_slack)) {
        r->st->early_stopped = total - done;
        break;
      }
    }
    FT_TRY(measure(r, i, c->screen_repeats, 0, err));
    if (isfinite(r->it[i].ms)) sc[(*msc)++] = i;
    if (early && !is_safe) error_rule(r, i, idx, p + 1, m, &total);
    if (!is_safe) note_ratio(r, &r->it[i]);
    done++;
    int left = total - done;
    if (early && r->nratio >= c->min_fused) { /* what the bound, as it stands, still admits */
      const double lo = ratio_floor(r, left > 0 ? left : 1);
      left = 0;
      for (int q = p + 1; q < m; q++)
        left += !r->it[idx[q]].known && !r->it[idx[q]].pruned &&
                !ft_search_cannot_win(r->it[idx[q]].predicted_ms, lo, r->st->best_ms, c->stop_slack);
    }
    report(r, is_safe ? "safe" : "screening", done, total, left + later, r->retimes_after);
  }
  return FT_OK;
}

static int halving_keep(int good) { return good / 4 < 4 ? (good < 4 ? good : 4) : good / 4; }

static double min_ms(const ft_search_item *it, const int *sc, int m) {
  double b = INFINITY;
  for (int p = 0; p < m; p++)
    if (it[sc[p]].ms < b) b = it[sc[p]].ms;
  return b;
}

int ft_search_order(const ft_search_item *items, int n, const ft_search_cfg *cfg, int *order) {
  int ns = 0, nf = 0;
  for (int i = 0; i < n; i++)
    if (items[i].safe) order[ns++] = i;
  int *fused = order + ns;
  for (int i = 0; i < n; i++)
    if (!items[i].safe) fused[nf++] = i;
  if (cfg->kind == FT_SEARCH_RANDOM) shuffle(fused, nf, cfg->seed);
  else sort_idx(items, fused, nf, pred_key);
  return ns;
}

ft_status ft_search_run(ft_search_item *items, int n, const ft_search_cfg *cfg, const ft_search_ops *ops,
                        ft_search_stats *stats, ft_err *err) {
  memset(stats, 0, sizeof *stats);
  stats->ratio_lo = -1;
  stats->best_ms = stats->best_safe_ms = INFINITY;
  if (n < 0 || (n > 0 && !items) || !cfg || !ops || !ops->measure || !ops->store || !ops->clock ||
      (unsigned)cfg->kind >= FT_SEARCH_COUNT || cfg->repeats < 1 || cfg->screen_repeats < 1)
    return ft__fail(err, FT_ERR_INVALID_ARG, "search: bad arguments");
  int *order = malloc((size_t)(3 * n + 1) * sizeof *order);
  if (!order) return ft__fail(err, FT_ERR_NOMEM, "search: out of memory");
  run r = {items, n, cfg, ops, stats, order + n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  int *sc = order + 2 * n;
  for (int i = 0; i < n; i++) {
    items[i].repeats = 0;
    items[i].stored = 0;
    items[i].ms = INFINITY;
    items[i].pruned = 0;
  }
  const int ns = ft_search_order(items, n, cfg, order), nf = n - ns;
  int *fused = order + ns;
  /* What earlier tunes measured counts: the incumbent, the model's error, and for the error rule
   * the longest sums that worked and the shortest just beyond the tolerance. */
  int known_prune = 0;
  for (int i = 0; i < n; i++) {
    if (!items[i].known) continue;
    r.fused_seen += !items[i].safe && isfinite(items[i].known_ms); /* one that works: a failure does not count */
    note_best(&r, &items[i]);
    note_ratio(&r, &items[i]);
    const int e = items[i].safe ? 0 : items[i].err_rank;
    if (e > 0 && isfinite(items[i].known_ms) && e > r.pass_rank) r.pass_rank = e;
    if (e > 0 && !isfinite(items[i].known_ms) && items[i].known_beyond && (known_prune == 0 || e < known_prune))
      known_prune = e;
  }
  if (known_prune > r.pass_rank) r.prune_rank = known_prune;
  const int fused_todo = todo(&r, fused, nf);
  ft_status s = FT_OK;
  int m = 0;
  switch (cfg->kind) {
  case FT_SEARCH_EXHAUSTIVE:
  case FT_SEARCH_RANDOM:
    s = full_pass(&r, order, ns, 1, fused_todo, err);
    if (s == FT_OK) s = full_pass(&r, fused, nf, 0, 0, err);
    break;
  case FT_SEARCH_HALVING:
    s = screen(&r, order, ns, 1, 0, fused_todo, sc, &m, err);
    if (s == FT_OK) s = confirm(&r, sc, m, halving_keep(m), INFINITY, 1, 1, fused_todo, err);
    if (s == FT_OK) s = screen(&r, fused, nf, 0, 0, 0, sc, &m, err);
    if (s == FT_OK) s = confirm(&r, sc, m, halving_keep(m), INFINITY, 1, 0, 0, err);
    break;
  case FT_SEARCH_FAST:
  default:
    r.retimes_after = 2 * cfg->finalists;
    s = screen(&r, order, ns, 1, 0, fused_todo, sc, &m, err);
    r.retimes_after = cfg->finalists;
    if (s == FT_OK) s = confirm(&r, sc, m, cfg->finalists, cfg->finalist_margin, min_ms(items, sc, m), 1,
                                fused_todo, err);
    if (s == FT_OK) s = screen(&r, fused, nf, 0, 1, 0, sc, &m, err);
    r.retimes_after = 0;
    /* Fused finalists only where their screening could beat the best so far. */
    if (s == FT_OK) s = confirm(&r, sc, m, cfg->finalists, cfg->finalist_margin, stats->best_ms, 0, 0, err);
    break;
  }
  if (s == FT_OK) s = flush(&r, err);
  free(order);
  return s;
}

/* The dry run's ops: its first measurement ends the search (FT_ERR_INTERRUPTED, caught below). */
static ft_status dry_measure(void *user, int i, int repeats, double *ms, ft_err *err) {
  (void)i, (void)repeats, (void)ms;
  *(int *)user = 1;
  return ft__fail(err, FT_ERR_INTERRUPTED, "dry run: a measurement");
}
static ft_status dry_store(void *user, int i, ft_err *err) {
  (void)user, (void)i, (void)err;
  return FT_OK;
}
static double dry_clock(void *user) {
  (void)user;
  return -INFINITY; /* before any deadline */
}

int ft_search_would_measure(const ft_search_item *items, int n, const ft_search_cfg *cfg) {
  if (n <= 0 || !items || !cfg) return 1;
  ft_search_item *copy = malloc((size_t)n * sizeof *copy);
  if (!copy) return 1;
  memcpy(copy, items, (size_t)n * sizeof *copy);
  int measured = 0;
  ft_search_stats st;
  ft_err e;
  const ft_search_ops ops = {.user = &measured, .measure = dry_measure, .store = dry_store, .clock = dry_clock};
  const ft_status s = ft_search_run(copy, n, cfg, &ops, &st, &e);
  free(copy);
  return measured || (s != FT_OK && s != FT_ERR_INTERRUPTED);
}
