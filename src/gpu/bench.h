/* Timing with CUDA events: warm-up, repeats, median / min / IQR, optional L2 flush. */
#ifndef FT_BENCH_H
#define FT_BENCH_H

#include "device.h"

/* Enqueues the work to time on stream (one "call" of a strategy). */
typedef ft_status (*ft_enqueue_fn)(void *user, cudaStream_t stream, ft_err *err);

typedef struct ft_bench_opts {
  int warmup;         /* untimed calls first (>= 1) */
  int repeats;        /* timed calls (>= 1; the tuner uses >= 20) */
  int flush_l2;       /* overwrite a buffer larger than L2 before each timed call */
  double max_seconds; /* fewer timed calls when they would take longer than this, never fewer than
                       * min(repeats, 20) (0 = no bound) */
  int graph_calls;    /* 0: calls enqueued on the stream. > 0: each strategy's calls are captured, this
                       * many to a CUDA graph, and each sample is one replay over graph_calls: what a
                       * model run as a graph sees, where back-to-back launches cost more than the
                       * kernels of a small problem (refused with flush_l2) */
} ft_bench_opts;

typedef struct ft_timing {
  double median_ms, min_ms, iqr_ms;
  int repeats; /* how many timed calls were actually made */
} ft_timing;

typedef struct ft_bench ft_bench; /* events, stream and flush buffer, reused across candidates */

ft_status ft_bench_create(ft_bench **out, ft_err *err);
void ft_bench_free(ft_bench *b); /* NULL is a no-op */
cudaStream_t ft_bench_stream(const ft_bench *b);
/* Why the last timing ran on the stream though opt->graph_calls asked for graphs (a call could
 * not be captured: the capture's error); NULL when it ran as asked. Valid until the next timing. */
const char *ft_bench_fallback(const ft_bench *b);

/* Times fn. A launch or execution error ends the timing with that error; with opt->graph_calls as
 * ft_bench_run_interleaved. */
ft_status ft_bench_run(ft_bench *b, ft_enqueue_fn fn, void *user, const ft_bench_opts *opt,
                       ft_timing *out, ft_err *err);

/* Times n (1..FT_BENCH_MAX_INTERLEAVED) strategies in rounds, each round one call of each in
 * the order ft_bench_round_order gives, so that the machine's drift under sustained load
 * (clocks, temperature) reaches them alike and each call runs after other work, as in a model,
 * after each of the others equally often; outs[j] is fns[j]'s. No L2 flush (refused);
 * max_seconds bounds the rounds as ft_bench_run bounds its calls. ratios (NULL: not wanted)
 * gets, for each j, the median over the rounds of fns[j]'s time over fns[ref]'s in the same
 * round: unlike the ratio of two medians it holds when the GPU's clock changes state during
 * the timing (docs/BENCHMARKS.md, "Why the search space is what it is"). With opt->graph_calls,
 * each strategy runs once on the stream, is captured (graph_calls calls to a graph) and a round
 * replays each graph once; where a call cannot be captured, the rounds run on the stream and
 * ft_bench_fallback says why. */
#define FT_BENCH_MAX_INTERLEAVED 4
#define FT_BENCH_MAX_GRAPH_CALLS 64 /* opt->graph_calls: 0..this */
ft_status ft_bench_run_interleaved(ft_bench *b, int n, const ft_enqueue_fn *fns, void *const *users,
                                   const ft_bench_opts *opt, ft_timing *outs, int ref, double *ratios, ft_err *err);

/* The median over i of a[i] / b[i] where both are positive (a and b kept); -1 when no pair is.
 * GPU-free. */
double ft_median_ratio(const double *a, const double *b, int n);

/* The order of round `round` of n strategies (1..FT_BENCH_MAX_INTERLEAVED) into order[0..n):
 * 0 first, then the (round mod (n - 1)!)-th permutation of 1..n-1. Over any (n - 1)!
 * consecutive rounds each strategy runs right after each other one equally often ((n - 2)!
 * times, a round's first after the round before's last) and never after itself. GPU-free. */
void ft_bench_round_order(int n, int round, int *order);

/* Median, min and interquartile range of n samples (sorted in place). */
void ft_stats(double *samples, int n, ft_timing *out);

#endif
