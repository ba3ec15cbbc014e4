/* Timing with CUDA events around each call, after warm-up; medians are what the tuner compares. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>

#define FT_MAX_REPEATS 1000
/* Events of one interleaved timing: every strategy's repeats, and the first mark. */
#define FT_MAX_MARKS (FT_BENCH_MAX_INTERLEAVED * FT_MAX_REPEATS + 1)

struct ft_bench {
  cudaStream_t stream;
  cudaEvent_t start[FT_MAX_REPEATS], stop[FT_MAX_REPEATS];
  int nevents;
  cudaEvent_t marks[FT_MAX_MARKS];
  int nmarks;
  void *flush;
  size_t flush_bytes;
  char fallback[300]; /* why the last timing ran on the stream though graphs were asked; "" when not */
};

void ft_bench_free(ft_bench *b) {
  if (!b) return;
  for (int i = 0; i < b->nevents; i++) {
    cudaEventDestroy(b->start[i]);
    cudaEventDestroy(b->stop[i]);
  }
  for (int i = 0; i < b->nmarks; i++) cudaEventDestroy(b->marks[i]);
  cudaFree(b->flush);
  if (b->stream) cudaStreamDestroy(b->stream);
  free(b);
}

ft_status ft_bench_create(ft_bench **out, ft_err *err) {
  *out = NULL;
  ft_bench *b = calloc(1, sizeof *b);
  if (!b) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  cudaError_t e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    free(b);
    return ft_cuda_fail(err, e, "cudaStreamCreate");
  }
  *out = b;
  return FT_OK;
}

cudaStream_t ft_bench_stream(const ft_bench *b) { return b->stream; }

const char *ft_bench_fallback(const ft_bench *b) { return b->fallback[0] ? b->fallback : NULL; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void ft_stats(double *s, int n, ft_timing *out) {
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  out->repeats = n;
  out->min_ms = s[0];
  out->median_ms = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  out->iqr_ms = s[(3 * (n - 1)) / 4] - s[(n - 1) / 4];
}

static ft_status ensure_events(ft_bench *b, int n, ft_err *err) {
  while (b->nevents < n) {
    FT_CUDA_TRY(err, cudaEventCreate(&b->start[b->nevents]));
    cudaError_t e = cudaEventCreate(&b->stop[b->nevents]);
    if (e != cudaSuccess) {
      cudaEventDestroy(b->start[b->nevents]);
      return ft_cuda_fail(err, e, "cudaEventCreate");
    }
    b->nevents++;
  }
  return FT_OK;
}

static ft_status ensure_flush(ft_bench *b, ft_err *err) {
  if (b->flush) return FT_OK;
  int dev = 0, l2 = 0;
  FT_CUDA_TRY(err, cudaGetDevice(&dev));
  FT_CUDA_TRY(err, cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  b->flush_bytes = (size_t)(l2 > 0 ? l2 : 64 << 20) * 2;
  FT_CUDA_TRY(err, cudaMalloc(&b->flush, b->flush_bytes));
  return FT_OK;
}

/* The repeats opt asks for (1..FT_MAX_REPEATS), bounded by the measured cost of one call (or one
 * round) so slow candidates cannot eat the budget, but never below 20 (or what was asked, if
 * less): medians of fewer are not trusted. */
static int bounded_repeats(const ft_bench_opts *opt, double one_s) {
  int reps = opt->repeats < 1 ? 1 : opt->repeats > FT_MAX_REPEATS ? FT_MAX_REPEATS : opt->repeats;
  if (opt->max_seconds > 0 && one_s > 0) {
    const int fit = (int)(opt->max_seconds / one_s), floor = reps < 20 ? reps : 20;
    if (fit < reps) reps = fit < floor ? floor : fit;
  }
  return reps;
}

ft_status ft_bench_run(ft_bench *b, ft_enqueue_fn fn, void *user, const ft_bench_opts *opt,
                       ft_timing *out, ft_err *err) {
  b->fallback[0] = 0;
  if (opt->graph_calls) return ft_bench_run_interleaved(b, 1, &fn, &user, opt, out, 0, NULL, err);
  if (opt->flush_l2) FT_TRY(ensure_flush(b, err));
  int warmup = opt->warmup < 1 ? 1 : opt->warmup;
  double t0 = ft__now_s();
  for (int i = 0; i < warmup; i++) FT_TRY(fn(user, b->stream, err));
  FT_CUDA_TRY(err, cudaStreamSynchronize(b->stream));
  const int reps = bounded_repeats(opt, (ft__now_s() - t0) / warmup);
  FT_TRY(ensure_events(b, reps, err));
  for (int i = 0; i < reps; i++) {
    if (opt->flush_l2)
      FT_CUDA_TRY(err, cudaMemsetAsync(b->flush, i & 0xff, b->flush_bytes, b->stream));
    FT_CUDA_TRY(err, cudaEventRecord(b->start[i], b->stream));
    FT_TRY(fn(user, b->stream, err));
    FT_CUDA_TRY(err, cudaEventRecord(b->stop[i], b->stream));
  }
  FT_CUDA_TRY(err, cudaStreamSynchronize(b->stream));
  double samples[FT_MAX_REPEATS];
  for (int i = 0; i < reps; i++) {
    float ms = 0;
    FT_CUDA_TRY(err, cudaEventElapsedTime(&ms, b->start[i], b->stop[i]));
    samples[i] = ms;
  }
  ft_stats(samples, reps, out);
  return FT_OK;
}

/* calls calls of fn captured into one graph, instantiated. The capture is always ended, so the
 * stream is usable after a call that cannot be captured (cudaStreamCaptureModeRelaxed: what a
 * call's library does on first use, allocations included, the warm-up has done already). */
static ft_status capture(ft_bench *b, ft_enqueue_fn fn, void *user, int calls, cudaGraphExec_t *exec, ft_err *err) {
  *exec = NULL;
  FT_CUDA_TRY(err, cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeRelaxed));
  ft_status st = FT_OK;
  for (int i = 0; st == FT_OK && i < calls; i++) st = fn(user, b->stream, err);
  cudaGraph_t g = NULL;
  const cudaError_t e = cudaStreamEndCapture(b->stream, &g);
  if (st == FT_OK && e != cudaSuccess) st = ft_cuda_fail(err, e, "cudaStreamEndCapture (timing as a CUDA graph)");
  if (st == FT_OK) {
    const cudaError_t ie = cudaGraphInstantiate(exec, g, 0);
    if (ie != cudaSuccess) *exec = NULL, st = ft_cuda_fail(err, ie, "cudaGraphInstantiate (timing as a CUDA graph)");
  }
  if (g) cudaGraphDestroy(g);
  return st;
}

/* One call of strategy j: its enqueue, or a replay of its graph. */
static ft_status one_call(ft_bench *b, const ft_enqueue_fn *fns, void *const *users, const cudaGraphExec_t *execs,
                          int j, ft_err *err) {
  if (!execs) return fns[j](users[j], b->stream, err);
  FT_CUDA_TRY(err, cudaGraphLaunch(execs[j], b->stream));
  return FT_OK;
}

void ft_bench_round_order(int n, int round, int *order) {
  if (n < 1) return;
  int rest[FT_BENCH_MAX_INTERLEAVED], f = 1;
  for (int i = 1; i < n; i++) rest[i - 1] = i, f *= i; /* f = (n - 1)! */
  int idx = round % f, left = n - 1;
  if (idx < 0) idx += f;
  order[0] = 0;
  for (int p = 1; p < n; p++) { /* the idx-th permutation of rest, lexicographic (Lehmer code) */
    f /= left;
    const int pick = idx / f;
    idx %= f;
    order[p] = rest[pick];
    for (int q = pick; q + 1 < left; q++) rest[q] = rest[q + 1];
    left--;
  }
}

double ft_median_ratio(const double *a, const double *b, int n) {
  double r[FT_MAX_REPEATS];
  int m = 0;
  for (int i = 0; i < n && m < FT_MAX_REPEATS; i++) /* a 0 ms interval has no ratio */
    if (a[i] > 0 && b[i] > 0 && isfinite(a[i] / b[i])) r[m++] = a[i] / b[i];
  if (m == 0) return -1;
  ft_timing t;
  ft_stats(r, m, &t);
  return t.median_ms;
}

static ft_status run_rounds(ft_bench *b, int n, const ft_enqueue_fn *fns, void *const *users,
                            const cudaGraphExec_t *execs, const ft_bench_opts *opt, ft_timing *outs, int ref,
                            double *ratios, ft_err *err) {
  const int warmup = opt->warmup < 1 ? 1 : opt->warmup;
  double t0 = ft__now_s();
  for (int j = 0; j < n; j++)
    for (int i = 0; i < warmup; i++) FT_TRY(fns[j](users[j], b->stream, err));
  FT_CUDA_TRY(err, cudaStreamSynchronize(b->stream));
  double round_s = (ft__now_s() - t0) / warmup;
  if (execs) { /* a replay of each graph (the first uploads it), then one that the round's cost is */
    for (int pass = 0; pass < 2; pass++) {
      t0 = ft__now_s();
      for (int j = 0; j < n; j++) FT_TRY(one_call(b, fns, users, execs, j, err));
      FT_CUDA_TRY(err, cudaStreamSynchronize(b->stream));
    }
    round_s = ft__now_s() - t0;
  }
  const int reps = bounded_repeats(opt, round_s);
  /* One chain of events: the call at position q of round i runs between marks i n + q and
   * i n + q + 1, with the stream never idle in between, so each interval is that call's time.
   * The rounds vary their order (ft_bench_round_order): what runs just before a call changes its
   * time (docs/BENCHMARKS.md, "Why the search space is what it is"), and in
   * one fixed order each strategy would always follow the same one. */
  const int marks = reps * n + 1;
  while (b->nmarks < marks) {
    FT_CUDA_TRY(err, cudaEventCreate(&b->marks[b->nmarks]));
    b->nmarks++; /* only once it exists: ft_bench_free destroys what is counted */
  }
  FT_CUDA_TRY(err, cudaEventRecord(b->marks[0], b->stream));
  int order[FT_BENCH_MAX_INTERLEAVED];
  for (int i = 0; i < reps; i++) {
    ft_bench_round_order(n, i, order);
    for (int q = 0; q < n; q++) {
      FT_TRY(one_call(b, fns, users, execs, order[q], err));
      FT_CUDA_TRY(err, cudaEventRecord(b->marks[i * n + q + 1], b->stream));
    }
  }
  FT_CUDA_TRY(err, cudaStreamSynchronize(b->stream));
  const double per = execs ? 1.0 / opt->graph_calls : 1.0; /* a sample is one replay of graph_calls calls */
  double samples[FT_BENCH_MAX_INTERLEAVED][FT_MAX_REPEATS];
  for (int i = 0; i < reps; i++) {
    ft_bench_round_order(n, i, order);
    for (int q = 0; q < n; q++) {
      float ms = 0;
      FT_CUDA_TRY(err, cudaEventElapsedTime(&ms, b->marks[i * n + q], b->marks[i * n + q + 1]));
      samples[order[q]][i] = ms * per;
    }
  }
  for (int j = 0; ratios && j < n; j++) ratios[j] = ft_median_ratio(samples[j], samples[ref], reps);
  for (int j = 0; j < n; j++) ft_stats(samples[j], reps, &outs[j]); /* sorts them */
  return FT_OK;
}

ft_status ft_bench_run_interleaved(ft_bench *b, int n, const ft_enqueue_fn *fns, void *const *users,
                                   const ft_bench_opts *opt, ft_timing *outs, int ref, double *ratios, ft_err *err) {
  if (ratios && (ref < 0 || ref >= n)) return ft__fail(err, FT_ERR_INVALID_ARG, "interleaved timing: reference %d", ref);
  if (n < 1 || n > FT_BENCH_MAX_INTERLEAVED || opt->flush_l2)
    return ft__fail(err, FT_ERR_INVALID_ARG, "interleaved timing of %d strategies%s", n,
                    opt->flush_l2 ? " with an L2 flush" : "");
  b->fallback[0] = 0;
  if (opt->graph_calls < 0 || opt->graph_calls > FT_BENCH_MAX_GRAPH_CALLS)
    return ft__fail(err, FT_ERR_INVALID_ARG, "timing as CUDA graphs of %d calls (0: on the stream, or 1..%d)",
                    opt->graph_calls, FT_BENCH_MAX_GRAPH_CALLS);
  if (opt->graph_calls == 0) return run_rounds(b, n, fns, users, NULL, opt, outs, ref, ratios, err);
  /* Each strategy's first calls (a weight's split, a library's workspace) run before its capture. */
  for (int j = 0; j < n; j++) FT_TRY(fns[j](users[j], b->stream, err));
  FT_CUDA_TRY(err, cudaStreamSynchronize(b->stream));
  cudaGraphExec_t execs[FT_BENCH_MAX_INTERLEAVED] = {NULL};
  ft_status st = FT_OK;
  for (int j = 0; st == FT_OK && j < n; j++) st = capture(b, fns[j], users[j], opt->graph_calls, &execs[j], err);
  if (st != FT_OK) {
    /* A call a graph cannot hold (a library's): the rounds on the stream instead, said by
     * ft_bench_fallback. A broken context fails them too, with its own error. */
    snprintf(b->fallback, sizeof b->fallback, "%.290s", err->msg);
    ft__err_clear(err);
    (void)cudaGetLastError();
  }
  st = run_rounds(b, n, fns, users, st == FT_OK ? execs : NULL, opt, outs, ref, ratios, err);
  for (int j = 0; j < n; j++)
    if (execs[j]) cudaGraphExecDestroy(execs[j]);
  return st;
}
