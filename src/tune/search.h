/* The search: in which order candidates are measured, with how many repeats, which are stored,
 * and when it stops. GPU-free and clock-free: the tuner (src/tune/tuner.c) drives it with callbacks
 * that time and store real candidates, tests/cpu/test_search.c with simulated ones and a simulated
 * clock.
 *
 * Every search measures and stores the safe candidates (cuBLAS + the epilogue pass) before any
 * fused one, so a search stopped by its budget, an interrupt or a failure leaves a stored best
 * that is never slower than the fastest safe configuration. Fused candidates are measured in the
 * cost model's order (random: shuffled), except where the model is not trusted. */
#ifndef FT_SEARCH_H
#define FT_SEARCH_H

#include <stdint.h>

#include "common.h"

typedef enum ft_search_kind {
  FT_SEARCH_FAST = 0,   /* screen in predicted order, stop early when the rest cannot win, time the best few */
  FT_SEARCH_EXHAUSTIVE, /* every candidate, full repeats, predicted order */
  FT_SEARCH_RANDOM,     /* every candidate, full repeats, fused ones shuffled */
  FT_SEARCH_HALVING,    /* screen every candidate, then time the best quarter of each kind */
  FT_SEARCH_COUNT
} ft_search_kind;

#define FT_SEARCH_NAMES "fast, exhaustive, random, halving"
#define FT_SEARCH_DEFAULT "fast"

/* "fast" -> FT_SEARCH_FAST; 0 for an unknown name. */
int ft_search_parse(const char *name, ft_search_kind *out);
const char *ft_search_name(ft_search_kind k);
/* Whether search k takes the full candidate space (src/family/space.h FT_SPACE_FULL): exhaustive and
 * random, which check the pruning the fast and halving searches rely on. */
int ft_search_takes_full_space(ft_search_kind k);

typedef struct ft_search_item {
  int safe;            /* in: a safe strategy (cuBLAS + epilogue pass) */
  int known;           /* in: measured by an earlier tune with the same source: not run again */
  double known_ms;     /* in, with known: its fastest stored correct median; INFINITY: none */
  int known_beyond;    /* in, with known and no correct median: it failed just beyond the tolerance
                        * (as beyond_tolerance below says), which the error rule counts */
  double predicted_ms; /* in: the cost model's time (fused items; only their order and ratios count) */
  /* in: how long its tensor-core partial sums are (fused items; 0: none, src/family/family.h
   * partial_sum). Their adds truncate, so the error grows with it: once the fast search finds one
   * item beyond the tolerance, it leaves out the fused items left whose rank is at least as large. */
  int err_rank;
  /* out */
  int repeats;         /* of its last measurement; 0: not measured in this search */
  int stored;          /* its last measurement was stored */
  int pruned;          /* out: left out by the error rule above (not measured in this search) */
  double ms;           /* last measured median; INFINITY when it failed (wrong, compile or launch error) */
} ft_search_item;

typedef struct ft_search_progress {
  const char *phase;   /* "safe", "tuning", "screening", "timing" */
  int done, total;     /* in this phase */
  double best_ms;      /* fastest measured so far (any candidate); < 0: none */
  double eta_s;        /* seconds left in the whole search, estimated; < 0: unknown */
  int left;            /* measurements expected to remain (the early stop's estimate included) */
} ft_search_progress;

typedef struct ft_search_ops {
  void *user;
  /* Verifies and times item i with repeats; *ms its median, INFINITY when it failed. Non-OK
   * only when the search cannot go on. */
  ft_status (*measure)(void *user, int i, int repeats, double *ms, ft_err *err);
  /* Stores item i's last measurement (one result). */
  ft_status (*store)(void *user, int i, ft_err *err);
  double (*clock)(void *user); /* seconds */
  /* Non-OK (FT_ERR_INTERRUPTED) ends the search after storing what it measured. NULL: never. */
  ft_status (*check_stop)(void *user, ft_err *err);
  void (*progress)(void *user, const ft_search_progress *p); /* optional */
  /* Whether item i's last measurement failed on an error just beyond the tolerance (finite: no NaN
   * or inf; near it), as err_rank's length of sums makes. NULL: never. */
  int (*beyond_tolerance)(void *user, int i);
} ft_search_ops;

typedef struct ft_search_cfg {
  ft_search_kind kind;
  int repeats;            /* full timing */
  int screen_repeats;     /* fast and halving: the short timing */
  double deadline;        /* clock() after which no fused item starts (the budget); safe items always run */
  uint64_t seed;          /* random: the shuffle */
  int finalists;          /* fast: items of each kind (safe, fused) fully timed after screening */
  double finalist_margin; /* fast: ... only those screened within this fraction of the best */
  int min_fused;          /* fast: fused items measured before the early stop may fire */
  double stop_slack;      /* fast: the early stop's margin on the model's observed error */
  double stop_risk;       /* fast: the chance, under the fitted error, that one left out would win */
  int fused_floor;        /* fused items that must give a time even past the deadline, in the search's
                           * order (known working ones count; at most 3x as many tried): a budget the
                           * safe phase spends (a large GEMM timed in full, its passes compiled)
                           * still tries the cost model's best */
} ft_search_cfg;

#define FT_SEARCH_CFG_INIT {FT_SEARCH_FAST, 30, 5, 1e300, 0, 3, 0.02, 8, 0.02, 0.10, 1}

typedef struct ft_search_stats {
  int measured;          /* measurements made (a screened and re-timed item counts twice) */
  int stored;
  int budget_exhausted;  /* the deadline left fused items unmeasured (or unconfirmed) */
  int early_stopped;     /* fast: fused items left out because the bound says they cannot win */
  int error_pruned;      /* fast: fused items left out as at least as long in their partial sums as one
                          * beyond the tolerance (err_rank) */
  double ratio_lo;       /* fast: the ratio measured/predicted the early stop last assumed (< 0: none) */
  double best_ms, best_safe_ms; /* fastest of everything / of the safe items; INFINITY: none */
} ft_search_stats;

/* The order cfg's search may measure items[0..n) in, into order[0..n): the safe ones first (in
 * index order), then the fused ones by predicted time (random: shuffled by cfg->seed); only the
 * ratios of the predictions matter. Returns the number of safe items. It is the order
 * ft_search_run measures in, so a caller may start compiling in it before the search. */
int ft_search_order(const ft_search_item *items, int n, const ft_search_cfg *cfg, int *order);
/* Runs cfg's search over items[0..n) through ops. Returns FT_OK, what check_stop returned
 * (after storing every measurement made), or an error of measure or store. */
/* Whether ft_search_run over these items would measure anything (1), or stop with what earlier
 * tunes measured (0): a dry run that ends at its first measurement. The fast search's early stop
 * compares predicted times only through ratios, so the answer holds before the baselines set the
 * predictions' scale. 1 when out of memory or on bad arguments (the caller then runs the search). */
int ft_search_would_measure(const ft_search_item *items, int n, const ft_search_cfg *cfg);

ft_status ft_search_run(ft_search_item *items, int n, const ft_search_cfg *cfg, const ft_search_ops *ops,
                        ft_search_stats *stats, ft_err *err);

/* The early stop of the fast search (the argument for it is in src/tune/search.c). With the fused
 * items in ascending predicted time and ratio_lo the lowest measured / predicted to expect of
 * the rest: whether no item from one predicted at pred_ms on can beat best_ms unless the model
 * errs more than (1 + slack) times further in its favour. */
int ft_search_cannot_win(double pred_ms, double ratio_lo, double best_ms, double slack);

/* An FFMA kernel does the GEMM's multiply-adds at best at the FFMA peak, where cuBLAS SGEMM
 * already runs at about 3/4 of it on Hopper (51 of 67 TFLOP/s): none takes less than this share of
 * SGEMM's time. */
#define FT_FFMA_RATIO_FLOOR 0.75

/* Whether no FFMA kernel can beat a result whose time is ratio times cuBLAS SGEMM's (measured in
 * another run: 5 % for the clocks of the two); 0 for an unknown ratio (<= 0, NaN). */
int ft_search_ffma_outrun(double ratio);

/* The ratio_lo to expect of `remaining` more items, from n measured ones whose log(measured /
 * predicted) have mean mu and standard deviation sd and whose lowest ratio was min_ratio: the
 * lower of min_ratio and exp(mu - z sd), z the normal quantile with upper tail risk / remaining
 * (so that, were the log ratios normal, each of the remaining falls below it with chance at
 * most risk / remaining, and any of them with chance at most risk). */
double ft_search_ratio_floor(double mu, double sd, double min_ratio, int remaining, double risk);

#endif
