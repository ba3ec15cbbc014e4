/* The search (src/tune/search.c) on simulated candidates with known times and a simulated clock: the
 * safe candidates are measured and stored first in every search, a budget or an interruption
 * leaves a stored best no slower than the safe best, fused candidates go in predicted order
 * (random: shuffled, only them), the fast search's early stop fires when the rest cannot win
 * and not when a later one could under the model's error, and the fast search finds what the
 * exhaustive one finds (within 1 %) on synthetic spaces with model noise, in less time; the fast
 * search's error rule leaves out forms with partial sums as long as one beyond the tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ft_test.h"
#include "search.h"

#define MAXN 512

typedef struct sim {
  ft_search_item it[MAXN];
  int n;
  double true_ms[MAXN]; /* INFINITY: the candidate fails (wrong result, compile error) */
  double noise;         /* relative noise of a 5-repeat screening (less with more repeats) */
  double clock;         /* simulated seconds */
  uint64_t rng;
  int measured[3 * MAXN], nmeasured; /* measurement log */
  int stored[3 * MAXN], nstored;     /* store log */
  double stored_ms[3 * MAXN];
  int stop_after;       /* check_stop interrupts once this many measurements were made (0: never) */
  int over_tol[MAXN];   /* a failure of item i was a finite error beyond the tolerance */
} sim;

static double uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 9007199254740992.0;
}

static double gauss(uint64_t *s) {
  const double u = uniform(s) + 1e-12, v = uniform(s);
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static ft_status sim_measure(void *user, int i, int repeats, double *ms, ft_err *err) {
  (void)err;
  sim *s = user;
  s->measured[s->nmeasured++] = i;
  const double t = s->true_ms[i];
  /* A measurement costs a verification, a warm-up and the repeats, plus a fixed overhead. */
  s->clock += 0.03 + (isfinite(t) ? (repeats + 3) * t * 1e-3 : 0);
  *ms = isfinite(t) ? t * (1 + s->noise * sqrt(5.0 / repeats) * (2 * uniform(&s->rng) - 1)) : INFINITY;
  return FT_OK;
}

static ft_status sim_store(void *user, int i, ft_err *err) {
  (void)err;
  sim *s = user;
  s->stored_ms[s->nstored] = s->it[i].ms;
  s->stored[s->nstored++] = i;
  return FT_OK;
}

static double sim_clock(void *user) { return ((sim *)user)->clock; }

static int sim_beyond(void *user, int i) {
  const sim *s = user;
  return !isfinite(s->true_ms[i]) && s->over_tol[i];
}

static ft_status sim_stop(void *user, ft_err *err) {
  sim *s = user;
  if (s->stop_after > 0 && s->nmeasured >= s->stop_after) return ft__fail(err, FT_ERR_INTERRUPTED, "interrupted");
  return FT_OK;
}

/* The order the tuner compiles in (ft_search_order): every item once, safe ones first. */
static void check_compile_order(const sim *s, const ft_search_cfg *cfg) {
  int order[MAXN], seen[MAXN] = {0}, seen_fused = 0;
  const int ns = ft_search_order(s->it, s->n, cfg, order);
  for (int p = 0; p < s->n; p++) {
    ASSERT_TRUE(order[p] >= 0 && order[p] < s->n && !seen[order[p]]);
    seen[order[p]] = 1;
    if (!s->it[order[p]].safe) seen_fused = 1;
    else ASSERT_TRUE(!seen_fused && p < ns); /* safe ones first in the compile order too */
  }
}

static int g_fused_floor = 1; /* run()'s cfg.fused_floor (the default's) */

static ft_status run(sim *s, ft_search_kind kind, double budget_s, ft_search_stats *st) {
  ft_search_cfg cfg = FT_SEARCH_CFG_INIT;
  cfg.kind = kind;
  cfg.fused_floor = g_fused_floor;
  cfg.deadline = s->clock + budget_s;
  cfg.seed = 7;
  ft_search_ops ops = {s, sim_measure, sim_store, sim_clock, sim_stop, NULL, sim_beyond};
  s->nmeasured = s->nstored = 0;
  check_compile_order(s, &cfg);
  ft_err e;
  ft__err_clear(&e);
  return ft_search_run(s->it, s->n, &cfg, &ops, st, &e);
}

/* The best the database would choose: the fastest stored correct result (each item's last). */
static int stored_best(const sim *s) {
  int b = -1;
  double bm = INFINITY;
  for (int k = 0; k < s->nstored; k++)
    if (s->stored_ms[k] < bm) bm = s->stored_ms[k], b = s->stored[k];
  return b;
}

static double stored_best_ms(const sim *s, int safe_only) {
  double bm = INFINITY;
  for (int k = 0; k < s->nstored; k++)
    if ((!safe_only || s->it[s->stored[k]].safe) && s->stored_ms[k] < bm) bm = s->stored_ms[k];
  return bm;
}

/* ns safe candidates near safe_ms, nf fused ones: true time = predicted * exp(sigma * N(0,1)),
 * predicted from lo upwards; every 17th fused one fails. */
static void make_space(sim *s, int ns, int nf, double safe_ms, double lo, double hi, double sigma, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->rng = seed;
  s->n = ns + nf;
  s->noise = 0.01;
  for (int i = 0; i < ns; i++) {
    s->it[i].safe = 1;
    s->true_ms[i] = safe_ms * (1 + 0.004 * uniform(&s->rng));
  }
  for (int j = 0; j < nf; j++) {
    ft_search_item *it = &s->it[ns + j];
    it->predicted_ms = lo * pow(hi / lo, uniform(&s->rng)) * 7.3; /* a scale the bound must not care about */
    s->true_ms[ns + j] = j % 17 == 16 ? INFINITY : it->predicted_ms / 7.3 * exp(sigma * gauss(&s->rng));
  }
}

/* Every safe candidate measured and stored before any fused one is measured. */
static void check_safe_first(const sim *s) {
  int first_fused = s->nmeasured, safe_stored = 0, ns = 0;
  for (int p = 0; p < s->nmeasured; p++)
    if (!s->it[s->measured[p]].safe) {
      first_fused = p;
      break;
    }
  for (int i = 0; i < s->n; i++) ns += s->it[i].safe && !s->it[i].known;
  for (int k = 0; k < s->nstored; k++) {
    if (!s->it[s->stored[k]].safe) break;
    safe_stored++;
  }
  ASSERT_EQ_INT(safe_stored, ns);
  for (int p = 0; p < first_fused; p++) ASSERT_TRUE(s->it[s->measured[p]].safe);
  ASSERT_TRUE(first_fused >= ns);
}

/* Each measured item stored exactly once, with its last measurement. */
static void check_stored_once(const sim *s) {
  for (int i = 0; i < s->n; i++) {
    int times = 0, measured = 0;
    for (int k = 0; k < s->nstored; k++) times += s->stored[k] == i;
    for (int p = 0; p < s->nmeasured; p++) measured |= s->measured[p] == i;
    ASSERT_EQ_INT(times, measured);
  }
}

static void test_safe_first_every_search(void) {
  for (int kind = 0; kind < FT_SEARCH_COUNT; kind++) {
    sim s;
    make_space(&s, 36, 200, 1.0, 0.8, 3.0, 0.15, 11 + (uint64_t)kind);
    ft_search_stats st;
    ASSERT_OK(run(&s, (ft_search_kind)kind, 1e9, &st));
    check_safe_first(&s);
    check_stored_once(&s);
    ASSERT_TRUE(stored_best_ms(&s, 0) <= stored_best_ms(&s, 1));
    ASSERT_EQ_INT(st.budget_exhausted, 0);
  }
}

/* A budget too small for anything but the safe ones, and one that ends in the fused ones. With
 * the default fused floor (1) the first fused item of the search's order is measured all the same
 * (once: no full timing past the deadline); with none, nothing fused is. */
static void test_budget(void) {
  for (int floor = 0; floor < 2; floor++)
    for (int kind = 0; kind < FT_SEARCH_COUNT; kind++)
      for (int b = 0; b < 2; b++) {
        sim s;
        make_space(&s, 36, 200, 1.0, 0.6, 3.0, 0.15, 21 + (uint64_t)kind);
        ft_search_stats st;
        g_fused_floor = floor;
        ASSERT_OK(run(&s, (ft_search_kind)kind, b == 0 ? 0.01 : 3.0, &st));
        g_fused_floor = 1;
        check_safe_first(&s);
        check_stored_once(&s);
        if (b == 0) ASSERT_TRUE(st.budget_exhausted);
        const int best = stored_best(&s);
        ASSERT_TRUE(best >= 0);
        ASSERT_TRUE(stored_best_ms(&s, 0) <= stored_best_ms(&s, 1));
        if (b == 1) continue;
        int fused = 0, first = -1;
        for (int p = 0; p < s.nmeasured; p++)
          if (!s.it[s.measured[p]].safe) fused++, first = first < 0 ? s.measured[p] : first;
        ASSERT_EQ_INT(fused, floor);
        if (floor == 0) ASSERT_TRUE(s.it[best].safe);
        if (floor == 1) { /* the search's first fused item (ft_search_order) */
          ft_search_cfg cfg = FT_SEARCH_CFG_INIT;
          cfg.kind = (ft_search_kind)kind, cfg.seed = 7;
          int order[MAXN];
          const int ns = ft_search_order(s.it, s.n, &cfg, order);
          ASSERT_EQ_INT(first, order[ns]);
        }
      }
}

/* Fused items a previous tune measured count toward the floor: past the deadline nothing more. */
static void test_budget_known(void) {
  sim s;
  make_space(&s, 8, 40, 1.0, 0.6, 3.0, 0.15, 5);
  s.it[20].known = 1, s.it[20].known_ms = 0.9; /* a fused item of an earlier tune */
  ft_search_stats st;
  ASSERT_OK(run(&s, FT_SEARCH_FAST, 0.01, &st));
  for (int p = 0; p < s.nmeasured; p++) ASSERT_TRUE(s.it[s.measured[p]].safe);
  /* A known failure (a compile error, a wrong result) does not: one fused item is measured. */
  make_space(&s, 8, 40, 1.0, 0.6, 3.0, 0.15, 5);
  s.it[20].known = 1, s.it[20].known_ms = INFINITY;
  ASSERT_OK(run(&s, FT_SEARCH_FAST, 0.01, &st));
  int fused = 0;
  for (int p = 0; p < s.nmeasured; p++) fused += !s.it[s.measured[p]].safe;
  ASSERT_TRUE(fused >= 1 && fused <= 3);
}

/* An interruption stores every measurement made before it; after the safe phase the stored
 * best is no slower than the safe best. */
static void test_interrupt(void) {
  for (int kind = 0; kind < FT_SEARCH_COUNT; kind++)
    for (int at = 3; at <= 42; at += 39) {
      sim s;
      make_space(&s, 36, 200, 1.0, 0.6, 3.0, 0.15, 31 + (uint64_t)kind);
      s.stop_after = at;
      ft_search_stats st;
      ASSERT_EQ_INT(run(&s, (ft_search_kind)kind, 1e9, &st), FT_ERR_INTERRUPTED);
      ASSERT_EQ_INT(s.nmeasured, at);
      check_stored_once(&s);
      if (at > 39) check_safe_first(&s); /* every search measures at most 36 + finalists safe ones */
      ASSERT_TRUE(stored_best_ms(&s, 0) <= stored_best_ms(&s, 1));
    }
}

static void test_order(void) {
  sim s;
  make_space(&s, 10, 100, 1.0, 0.5, 3.0, 0.2, 41);
  ft_search_stats st;
  ASSERT_OK(run(&s, FT_SEARCH_EXHAUSTIVE, 1e9, &st));
  double last = 0;
  for (int p = 0; p < s.nmeasured; p++) {
    const ft_search_item *it = &s.it[s.measured[p]];
    if (it->safe) continue;
    ASSERT_TRUE(it->predicted_ms >= last);
    last = it->predicted_ms;
  }
  ASSERT_EQ_INT(s.nmeasured, 110);
  /* random: safe ones first in their order, then every fused one once, not in predicted order */
  ASSERT_OK(run(&s, FT_SEARCH_RANDOM, 1e9, &st));
  check_safe_first(&s);
  for (int p = 0; p < 10; p++) ASSERT_EQ_INT(s.measured[p], p);
  int inversions = 0, seen[MAXN] = {0};
  for (int p = 10; p < s.nmeasured; p++) {
    ASSERT_TRUE(!seen[s.measured[p]]);
    seen[s.measured[p]] = 1;
    inversions += p > 10 && s.it[s.measured[p]].predicted_ms < s.it[s.measured[p - 1]].predicted_ms;
  }
  ASSERT_EQ_INT(s.nmeasured, 110);
  ASSERT_TRUE(inversions > 20);
  /* fast: the fused screenings in predicted order as well */
  ASSERT_OK(run(&s, FT_SEARCH_FAST, 1e9, &st));
  last = 0;
  int screened = 0;
  for (int p = 0; p < s.nmeasured; p++) {
    const ft_search_item *it = &s.it[s.measured[p]];
    if (it->safe || screened >= 100 - st.early_stopped) continue;
    ASSERT_TRUE(it->predicted_ms >= last);
    last = it->predicted_ms;
    screened++;
  }
}

static void test_bound(void) {
  ASSERT_TRUE(ft_search_cannot_win(2.0, 1.0, 1.5, 0.1));  /* 2 / 1.1 = 1.82 > 1.5 */
  ASSERT_TRUE(!ft_search_cannot_win(1.6, 1.0, 1.5, 0.1)); /* 1.45 < 1.5: could win */
  ASSERT_TRUE(!ft_search_cannot_win(2.0, 0.8, 1.5, 0.1)); /* the model was 20 % pessimistic once */
  ASSERT_TRUE(!ft_search_cannot_win(2.0, -1, 1.5, 0.1));  /* no error measured yet */
  /* fp32 accuracy: FFMA kernels are left out only below what they can reach, with 5 % to spare. */
  ASSERT_TRUE(ft_search_ffma_outrun(0.58)); /* 3xtf32 at the founding job: 1.72x eager */
  ASSERT_TRUE(ft_search_ffma_outrun(0.70));
  ASSERT_TRUE(!ft_search_ffma_outrun(0.72)); /* 0.756 > 0.75: an FFMA kernel might still win */
  ASSERT_TRUE(!ft_search_ffma_outrun(1.0));
  ASSERT_TRUE(!ft_search_ffma_outrun(0));   /* unknown */
  ASSERT_TRUE(!ft_search_ffma_outrun(NAN));
  ASSERT_TRUE(!ft_search_cannot_win(INFINITY, 1.0, 1.5, 0.1));
  ASSERT_TRUE(!ft_search_cannot_win(2.0, 1.0, INFINITY, 0.1)); /* nothing to beat */
  /* the floor: no spread -> the lowest ratio; spread -> lower with more items left */
  ASSERT_NEAR(ft_search_ratio_floor(0, 0, 0.9, 100, 0.1), 0.9, 1e-12);
  ASSERT_NEAR(ft_search_ratio_floor(0, 0.1, 0.9, 1, 0.1), exp(-0.1 * 1.2815515655), 1e-6);
  ASSERT_TRUE(ft_search_ratio_floor(0, 0.1, 0.9, 300, 0.1) < ft_search_ratio_floor(0, 0.1, 0.9, 30, 0.1));
}

/* An exact model: the search stops right after the bound says so, and has the true best. */
static void test_early_stop_fires(void) {
  sim s;
  memset(&s, 0, sizeof s);
  s.n = 4 + 100;
  for (int i = 0; i < 4; i++) s.it[i].safe = 1, s.true_ms[i] = 1.0;
  for (int j = 0; j < 100; j++) {
    s.it[4 + j].predicted_ms = 0.9 + 0.02 * j; /* 0.90 ... 2.88 */
    s.true_ms[4 + j] = s.it[4 + j].predicted_ms;
  }
  ft_search_stats st;
  ASSERT_OK(run(&s, FT_SEARCH_FAST, 1e9, &st));
  ASSERT_TRUE(st.early_stopped > 0);
  ASSERT_NEAR(st.ratio_lo, 1.0, 1e-12);
  /* Measured exactly those the bound admits: predicted <= best * (1 + slack) / ratio_lo. */
  int screened = 0;
  for (int j = 0; j < 100; j++) screened += s.it[4 + j].repeats > 0;
  ASSERT_EQ_INT(screened + st.early_stopped, 100);
  /* best 0.90, r_lo 1: admitted up to 0.918 (one), but min_fused = 8 are screened first */
  ASSERT_EQ_INT(screened, 8);
  ASSERT_EQ_INT(stored_best(&s), 4);
}

/* The model was more pessimistic about one measured candidate than about the rest: a later one
 * within that error of the incumbent can still win, so the bound must let the search reach it;
 * without that evidence the bound rules it out. */
static void test_early_stop_holds(void) {
  for (int evidence = 0; evidence < 2; evidence++) {
    sim s;
    memset(&s, 0, sizeof s);
    s.n = 2 + 40;
    s.it[0].safe = s.it[1].safe = 1;
    s.true_ms[0] = s.true_ms[1] = 1.0;
    for (int j = 0; j < 40; j++) {
      s.it[2 + j].predicted_ms = 1.0 + 0.01 * j; /* 1.00 ... 1.39 */
      s.true_ms[2 + j] = 1.05 * s.it[2 + j].predicted_ms;
    }
    /* The candidate predicted at 1.07 runs 6 % faster than predicted (still slower than the safe
     * best); the next one, predicted at 1.08, runs 12 % faster and is the true best. */
    if (evidence) s.true_ms[2 + 7] = 0.94 * s.it[2 + 7].predicted_ms;
    s.true_ms[2 + 8] = 0.95;
    ft_search_stats st;
    ASSERT_OK(run(&s, FT_SEARCH_FAST, 1e9, &st));
    ASSERT_TRUE(st.early_stopped > 0);
    if (evidence) {
      /* r_lo <= 0.94: admitted up to 1.0 * 1.02 / 0.94 = 1.085 */
      ASSERT_TRUE(s.it[2 + 8].repeats > 0);
      ASSERT_EQ_INT(stored_best(&s), 2 + 8);
    } else {
      /* r_lo = 1.05 (no spread): admitted up to 0.97, but min_fused = 8 are screened (to 1.07) */
      ASSERT_EQ_INT(s.it[2 + 8].repeats, 0);
      ASSERT_EQ_INT(st.early_stopped, 32);
    }
  }
}

/* A second search over what the first stored measures nothing: the known results count. */
static void test_known(void) {
  sim s;
  make_space(&s, 36, 300, 1.0, 0.7, 3.0, 0.15, 51);
  ft_search_stats st;
  ft_search_cfg fast = FT_SEARCH_CFG_INIT, exhaustive = FT_SEARCH_CFG_INIT;
  exhaustive.kind = FT_SEARCH_EXHAUSTIVE;
  ASSERT_EQ_INT(ft_search_would_measure(s.it, s.n, &fast), 1);
  ASSERT_OK(run(&s, FT_SEARCH_FAST, 1e9, &st));
  const int first = st.measured;
  for (int i = 0; i < s.n; i++)
    if (s.it[i].repeats > 0) {
      s.it[i].known = 1;
      s.it[i].known_ms = s.it[i].ms;
    }
  /* The dry run agrees before the search, on any scale of the predictions (the tuner asks before
   * its baselines set theirs), and leaves the items as they were. */
  for (int i = 0; i < s.n; i++) s.it[i].predicted_ms *= 3.1;
  const ft_search_item before = s.it[40];
  ASSERT_EQ_INT(ft_search_would_measure(s.it, s.n, &fast), 0);
  ASSERT_TRUE(memcmp(&before, &s.it[40], sizeof before) == 0);
  ASSERT_EQ_INT(ft_search_would_measure(s.it, s.n, &exhaustive), 1); /* it measures the rest */
  ASSERT_OK(run(&s, FT_SEARCH_FAST, 1e9, &st));
  ASSERT_EQ_INT(st.measured, 0);
  ASSERT_TRUE(first > 36);
  /* An unmeasured safe candidate, or a fused one predicted far below the best, is measured. */
  s.it[3].known = 0;
  ASSERT_EQ_INT(ft_search_would_measure(s.it, s.n, &fast), 1);
  s.it[3].known = 1;
  int j = 36;
  while (s.it[j].known) j++;
  s.it[j].predicted_ms = 1e-6;
  ASSERT_EQ_INT(ft_search_would_measure(s.it, s.n, &fast), 1);
  ASSERT_EQ_INT(ft_search_would_measure(NULL, 0, &fast), 1);
}

/* Synthetic spaces with model noise: the fast search's best (by true time) within 1 % of the
 * exhaustive one's, in a fraction of its time. */
static void test_fast_vs_exhaustive(void) {
  double worst = 1, time_ratio_sum = 0;
  int cases = 0, fused_wins = 0;
  for (int c = 0; c < 60; c++) {
    const double sigma = c % 3 == 0 ? 0.05 : c % 3 == 1 ? 0.15 : 0.25;
    const double lo = 0.9 + 0.015 * (c % 40); /* some spaces where fused wins, some where safe does */
    sim a, b;
    make_space(&a, 36, 384, 1.0, lo, 4.0, sigma, 1000 + (uint64_t)c);
    b = a;
    ft_search_stats sa, sb;
    ASSERT_OK(run(&a, FT_SEARCH_EXHAUSTIVE, 1e9, &sa));
    const double t_ex = a.clock;
    ASSERT_OK(run(&b, FT_SEARCH_FAST, 1e9, &sb));
    const double t_fast = b.clock;
    const double ex = a.true_ms[stored_best(&a)], fa = b.true_ms[stored_best(&b)];
    if (fa / ex > worst) worst = fa / ex;
    fused_wins += !a.it[stored_best(&a)].safe;
    time_ratio_sum += t_fast / t_ex;
    cases++;
    if (getenv("FT_TEST_VERBOSE") || fa > 1.01 * ex)
      fprintf(stderr, "case %d (sigma %.2f, lo %.2f): fast %.4f vs exhaustive %.4f, %d early-stopped\n", c, sigma,
              lo, fa, ex, sb.early_stopped);
    ASSERT_TRUE(fa <= 1.01 * ex);
  }
  fprintf(stderr, "fast vs exhaustive on %d spaces (%d won by a fused one): worst %.4fx, mean time %.0f %%\n", cases,
          fused_wins, worst, 100 * time_ratio_sum / cases);
  ASSERT_TRUE(fused_wins > 10 && fused_wins < cases - 10);
  ASSERT_TRUE(time_ratio_sum / cases < 0.30);
}

static int was_measured(const sim *s, int i) {
  for (int p = 0; p < s->nmeasured; p++)
    if (s->measured[p] == i) return 1;
  return 0;
}

/* Two safe items (2 ms) and nfused fused ones predicted 1.000, 1.001, ... ms (within the early
 * stop's slack of each other), each taking 1 ms: the error rule's tests set ranks and failures. */
static void two_safe(sim *s, int nfused) {
  memset(s, 0, sizeof *s);
  s->n = 2 + nfused;
  for (int i = 0; i < 2; i++) s->it[i].safe = 1, s->true_ms[i] = 2.0;
  for (int j = 0; j < nfused; j++) s->it[2 + j].predicted_ms = 1.0 + 0.001 * j, s->true_ms[2 + j] = 1.0;
}

/* The error rule (search.h err_rank): 2 safe items (one given a rank, which nothing prunes), then
 * fused ones in predicted order: a 256-product form first (predicted fastest), four 512-product
 * ones, four 128-product ones, one without partial sums. Case 0: the 256 form fails beyond the
 * tolerance: the fast search leaves out every 512 one (at once: none is counted as left or early
 * stopped) and measures every 128 one and the plain one. Case 1: a 512 one fails on NaN (not a
 * tolerance): nothing is left out. Case 2: the first 512 one fails beyond the tolerance: its three
 * siblings are left out (the 256 form, shorter, gave a time before: what the rule expects). Case 3:
 * as 2, then the first 128 one fails beyond the tolerance too: nothing more is left out, since the
 * 256 form, longer, gave a time (length is not what failed there). Case 4: a 512 one gives a time first (its prediction moved ahead), then the 256
 * form fails: nothing is left out (length is not what failed). The exhaustive and halving
 * searches measure everything in each case. */
static void test_error_rule(void) {
  static const ft_search_kind kinds[3] = {FT_SEARCH_FAST, FT_SEARCH_EXHAUSTIVE, FT_SEARCH_HALVING};
  for (int c = 0; c < 5; c++)
    for (int kind = 0; kind < 3; kind++) {
      sim s;
      two_safe(&s, 10);
      s.it[1].err_rank = 1024;
      static const int ranks[10] = {256, 512, 512, 512, 512, 128, 128, 128, 128, 0};
      for (int j = 0; j < 10; j++) s.it[2 + j].err_rank = ranks[j];
      if (c == 0) s.true_ms[2] = INFINITY, s.over_tol[2] = 1;
      if (c == 1) s.true_ms[3] = INFINITY;             /* NaN: over_tol stays 0 */
      if (c == 2 || c == 3) s.true_ms[3] = INFINITY, s.over_tol[3] = 1;
      if (c == 3) s.true_ms[7] = INFINITY, s.over_tol[7] = 1; /* then a 128 one, shorter than the 256 that passed */
      if (c == 4) s.true_ms[2] = INFINITY, s.over_tol[2] = 1, s.it[3].predicted_ms = 0.5;
      ft_search_stats st;
      ASSERT_OK(run(&s, kinds[kind], 1e9, &st));
      check_stored_once(&s);
      int left_out = 0;
      for (int i = 0; i < s.n; i++) {
        const int rank = i >= 2 ? ranks[i - 2] : 0;
        const int expect_out = kind == 0 && ((c == 0 && rank == 512) || ((c == 2 || c == 3) && i >= 4 && i <= 6));
        ASSERT_EQ_INT(was_measured(&s, i), !expect_out);
        ASSERT_EQ_INT(s.it[i].pruned, expect_out);
        left_out += expect_out;
      }
      ASSERT_EQ_INT(st.error_pruned, left_out);
      ASSERT_EQ_INT(st.early_stopped, 0);
      ASSERT_TRUE(stored_best(&s) >= 2); /* a fused one won: every working item is faster than safe */
    }
}

/* The error rule beside the early stop: items it left out are not counted as stopped by the cost
 * model. 2 safe items; 12 fused: a 256 form fails beyond the tolerance first, then 8 forms of 128
 * products (measured; the model exact), then 3 of 512 predicted far slower: the 512 ones are left
 * out by the rule at once, nothing is left to the early stop, and the last screening report's done
 * equals its total. */
static int g_last_done, g_last_total;
static void sim_progress(void *user, const ft_search_progress *p) {
  (void)user;
  if (strcmp(p->phase, "screening") == 0) g_last_done = p->done, g_last_total = p->total;
}

static void test_error_rule_counts(void) {
  sim s;
  two_safe(&s, 12);
  for (int j = 0; j < 12; j++) {
    ft_search_item *it = &s.it[2 + j];
    it->err_rank = j == 0 ? 256 : j <= 8 ? 128 : 512;
    it->predicted_ms = j == 0 ? 0.9 : j <= 8 ? 1.0 + 0.001 * j : 3.0;
    s.true_ms[2 + j] = j == 0 ? INFINITY : j <= 8 ? it->predicted_ms : 3.0;
  }
  s.over_tol[2] = 1;
  ft_search_cfg cfg = FT_SEARCH_CFG_INIT;
  cfg.fused_floor = g_fused_floor;
  cfg.deadline = 1e9;
  ft_search_ops ops = {&s, sim_measure, sim_store, sim_clock, sim_stop, sim_progress, sim_beyond};
  g_last_done = g_last_total = 0;
  ft_search_stats st;
  ft_err e;
  ASSERT_OK(ft_search_run(s.it, s.n, &cfg, &ops, &st, &e));
  ASSERT_EQ_INT(st.error_pruned, 3);
  ASSERT_EQ_INT(st.early_stopped, 0);
  for (int i = 11; i < 14; i++) ASSERT_TRUE(s.it[i].pruned && !was_measured(&s, i));
  ASSERT_EQ_INT(g_last_done, g_last_total); /* the screening's total left the pruned ones out */
}

/* The error rule counts what an earlier tune stored: a known 512-product form that failed just
 * beyond the tolerance leaves out this run's 512 ones from the start (the 256 ones measured);
 * not where a known 512 one worked, nor where the known failure was not near the tolerance. */
static void test_error_rule_known(void) {
  for (int c = 0; c < 3; c++) {
    sim s;
    two_safe(&s, 7);
    for (int j = 0; j < 7; j++) s.it[2 + j].err_rank = j < 5 ? 512 : 256;
    ft_search_item *k0 = &s.it[2], *k1 = &s.it[3];
    k0->known = 1, k0->known_ms = INFINITY, k0->known_beyond = c != 2;
    if (c == 1) k1->known = 1, k1->known_ms = 1.0;
    ft_search_stats st;
    ASSERT_OK(run(&s, FT_SEARCH_FAST, 1e9, &st));
    const int expect = c == 0 ? 4 : 0; /* items 3..6 */
    ASSERT_EQ_INT(st.error_pruned, expect);
    for (int i = 3; i < 7; i++) ASSERT_EQ_INT(was_measured(&s, i), c == 1 && i == 3 ? 0 : !expect);
    for (int i = 7; i < 9; i++) ASSERT_TRUE(was_measured(&s, i));
  }
}

int main(void) {
  test_bound();
  test_safe_first_every_search();
  test_budget();
  test_budget_known();
  test_interrupt();
  test_order();
  test_early_stop_fires();
  test_early_stop_holds();
  test_known();
  test_fast_vs_exhaustive();
  test_error_rule();
  test_error_rule_counts();
  test_error_rule_known();
  return FT_TEST_DONE();
}
