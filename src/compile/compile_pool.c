/* The tuner's compile pool (src/compile/compile_pool.h): one mutex, one condition variable broadcast
 * whenever a job ends or the limit moves; jobs are handed out by index, so the order is the
 * caller's. */
#include "compile_pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FT_POOL_MAX_THREADS 64

struct ft_compile_pool {
  ft_compile_job *jobs;
  const char *arch;
  int n;
  int next;  /* jobs[next] is the next to start */
  int limit; /* jobs below it may start */
  int stop;
  unsigned char *done;
  double first_start, last_end;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t th[FT_POOL_MAX_THREADS];
  int nthreads;
};


/* Runs jobs[j] (p->mu held on entry and on return). */
static void run_locked(ft_compile_pool *p, int j) {
  if (p->first_start == 0) p->first_start = ft__now_s();
  pthread_mutex_unlock(&p->mu);
  ft_compile_job_run(&p->jobs[j], p->arch);
  pthread_mutex_lock(&p->mu);
  p->done[j] = 1;
  p->last_end = ft__now_s();
  pthread_cond_broadcast(&p->cv);
}

static void *pool_thread(void *arg) {
  ft_compile_pool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->next >= (p->limit < p->n ? p->limit : p->n)) pthread_cond_wait(&p->cv, &p->mu);
    if (p->stop) break;
    run_locked(p, p->next++);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

ft_status ft_compile_pool_start(ft_compile_job *jobs, int n, const char *arch, int threads, int limit,
                                ft_compile_pool **out, ft_err *err) {
  *out = NULL;
  if ((!jobs && n > 0) || n < 0 || !arch || threads < 1)
    return ft__fail(err, FT_ERR_INVALID_ARG, "compile pool: bad arguments");
  ft_compile_pool *p = calloc(1, sizeof *p);
  unsigned char *done = calloc((size_t)n + 1, 1);
  if (!p || !done) {
    free(p);
    free(done);
    return ft__fail(err, FT_ERR_NOMEM, "compile pool: out of memory");
  }
  p->jobs = jobs, p->arch = arch, p->n = n, p->limit = limit, p->done = done;
  if (pthread_mutex_init(&p->mu, NULL) != 0) {
    free(done);
    free(p);
    return ft__fail(err, FT_ERR_NOMEM, "compile pool: no mutex");
  }
  if (pthread_cond_init(&p->cv, NULL) != 0) {
    pthread_mutex_destroy(&p->mu);
    free(done);
    free(p);
    return ft__fail(err, FT_ERR_NOMEM, "compile pool: no condition variable");
  }
  if (threads > FT_POOL_MAX_THREADS) threads = FT_POOL_MAX_THREADS;
  if (threads > n) threads = n;
  for (int t = 0; t < threads; t++) {
    if (pthread_create(&p->th[p->nthreads], NULL, pool_thread, p) != 0) break;
    p->nthreads++;
  }
  *out = p;
  return FT_OK;
}

void ft_compile_pool_set_limit(ft_compile_pool *p, int limit) {
  pthread_mutex_lock(&p->mu);
  p->limit = limit;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

void ft_compile_pool_wait(ft_compile_pool *p, int j) {
  if (j < 0 || j >= p->n) return;
  pthread_mutex_lock(&p->mu);
  if (p->limit <= j) {
    p->limit = j + 1;
    pthread_cond_broadcast(&p->cv);
  }
  if (p->nthreads == 0 && !p->done[j]) {
    run_locked(p, j); /* no thread will take it: here, then */
    if (p->next == j) p->next++;
  }
  while (!p->done[j]) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

int ft_compile_pool_done(ft_compile_pool *p, int j) {
  if (j < 0 || j >= p->n) return 0;
  pthread_mutex_lock(&p->mu);
  const int d = p->done[j];
  pthread_mutex_unlock(&p->mu);
  return d;
}

int ft_compile_pool_started(ft_compile_pool *p) {
  pthread_mutex_lock(&p->mu);
  const int s = p->next;
  pthread_mutex_unlock(&p->mu);
  return s;
}

int ft_compile_pool_threads(const ft_compile_pool *p) { return p->nthreads; }

double ft_compile_pool_stop(ft_compile_pool *p) {
  if (!p) return 0;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int t = 0; t < p->nthreads; t++) pthread_join(p->th[t], NULL);
  const double span = p->first_start > 0 ? p->last_end - p->first_start : 0;
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p->done);
  free(p);
  return span;
}

/* ---- the compile plan ---- */

struct ft_compile_plan {
  ft_db *db;
  char arch[16];
  ft_compile_job *jobs;  /* the caller's, n of them */
  int n;
  int *pos;              /* job -> position on the pool, -1 when not there */
  unsigned char *have;   /* per job: its outputs are set (cache, pool or here); after pos[n] */
  ft_compile_job *queue; /* the uncached jobs in compile order (copies; moved to their jobs when taken) */
  int *job_of;           /* position -> job */
  unsigned char *taken;  /* per position: moved to its job; after job_of[n_order] */
  int nq;                /* positions */
  int reach;             /* 1 + the furthest position taken */
  int threads;
  int expect_left;       /* what the consumer expects still to take (< 0: unknown) */
  ft_compile_pool *pool;
  ft_status st;          /* the plan's cache read, when it failed */
  ft_err err;
  ft_compile_stats stats;
};

/* Moves a finished position to its job; a fresh compile is cached and counted. */
static void take_position(ft_compile_plan *p, int q) {
  ft_compile_job *job = &p->jobs[p->job_of[q]];
  *job = p->queue[q];
  memset(&p->queue[q], 0, sizeof p->queue[q]); /* the job owns cubin and log now */
  p->have[p->job_of[q]] = 1;
  p->taken[q] = 1;
  if (q + 1 > p->reach) p->reach = q + 1;
  ft_compile_cache_put(p->db, p->arch, job, 1);
  p->stats.n_compiled += job->status == FT_OK;
  p->stats.nvrtc_s += job->seconds;
}

/* How far the threads may run: what the consumer expects still to take beyond the furthest job
 * taken (everything while it does not say), and never less than eight jobs per thread: a window of
 * one job per thread made each step wait for the slowest kernel in it again, and one of four still
 * left the fp32 fast search waiting most of its time (docs/BENCHMARKS.md, "Why the search space is
 * what it is"): early in the search the bound admits fewer candidates than it ends up measuring.
 * What is compiled and not taken is cached for the next tune. */
static void move_limit(ft_compile_plan *p) {
  if (!p->pool) return;
  int ahead = p->expect_left < 0 ? p->nq : p->expect_left + p->threads;
  if (ahead < 8 * p->threads) ahead = 8 * p->threads;
  ft_compile_pool_set_limit(p->pool, p->reach + ahead);
}

/* The cache's answers for the plan, then the pool over the rest, in order. */
static void plan_fill(ft_compile_plan *p, const int *order, int n_order) {
  const double t0 = ft__now_s();
  p->queue = calloc((size_t)n_order + 1, sizeof *p->queue);
  p->job_of = calloc((size_t)n_order + 1, sizeof *p->job_of + 1);
  if (!p->queue || !p->job_of) {
    p->st = ft__fail(&p->err, FT_ERR_NOMEM, "out of memory");
    return;
  }
  p->taken = (unsigned char *)(p->job_of + n_order + 1);
  int m = 0;
  for (int q = 0; q < n_order; q++) {
    const int i = order[q];
    if (i < 0 || i >= p->n || p->have[i] || p->pos[i] != -1) continue; /* -2: listed already */
    p->queue[m] = p->jobs[i];
    p->pos[i] = -2; /* listed once */
    p->job_of[m++] = i;
  }
  for (int q = 0; q < m; q++) p->pos[p->job_of[q]] = -1;
  p->st = ft_compile_cache_get(p->db, p->arch, p->queue, m, &p->err);
  if (p->st != FT_OK) { /* cubins the lookup gave before it failed are nobody's else */
    for (int q = 0; q < m; q++) ft_compile_job_clear(&p->queue[q]);
    return;
  }
  for (int q = 0; q < m; q++) {
    const int i = p->job_of[q];
    if (p->queue[q].cached) {
      p->jobs[i] = p->queue[q];
      p->have[i] = 1;
      p->stats.n_cached++;
    } else {
      p->queue[p->nq] = p->queue[q];
      p->job_of[p->nq] = i;
      p->pos[i] = p->nq++;
    }
  }
  p->stats.compile_s += ft__now_s() - t0;
  if (p->nq > 0) p->st = ft_compile_pool_start(p->queue, p->nq, p->arch, p->threads, p->nq, &p->pool, &p->err);
}

ft_status ft_compile_plan_start(ft_db *db, const char *arch, ft_compile_job *jobs, int n, const int *order,
                                int n_order, ft_compile_plan **out, ft_err *err) {
  *out = NULL;
  ft_compile_plan *p = calloc(1, sizeof *p);
  if (p) p->pos = calloc((size_t)n + 1, sizeof *p->pos + 1);
  if (!p || !p->pos) {
    free(p);
    return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  }
  p->have = (unsigned char *)(p->pos + n + 1);
  p->db = db;
  snprintf(p->arch, sizeof p->arch, "%s", arch);
  p->jobs = jobs;
  p->n = n;
  p->expect_left = -1;
  for (int i = 0; i < n; i++) p->pos[i] = -1;
  /* One pool of all: batches that each waited for their slowest kernel took several times as
   * long (docs/BENCHMARKS.md, "Why the search space is what it is"). */
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  p->threads = cores > 3 ? (int)cores - 2 : 1;
  plan_fill(p, order, n_order); /* a failure stays in p until a job is taken */
  *out = p;
  return FT_OK;
}

int ft_compile_plan_threads(const ft_compile_plan *p) { return p->threads; }

void ft_compile_plan_expect(ft_compile_plan *p, int left) { p->expect_left = left; }

ft_status ft_compile_plan_take(ft_compile_plan *p, int i, ft_err *err) {
  if (p->st != FT_OK) {
    *err = p->err;
    return p->st;
  }
  if (i < 0 || i >= p->n) return ft__fail(err, FT_ERR_INTERNAL, "compile plan: job %d of %d", i, p->n);
  if (!p->have[i]) {
    const double t0 = ft__now_s();
    const int q = p->pos[i];
    if (q >= 0 && p->pool) {
      ft_compile_pool_wait(p->pool, q);
      take_position(p, q);
    } else { /* outside the plan: through the cache, here */
      ft_compile_job *job = &p->jobs[i];
      FT_TRY(ft_compile_many(p->db, p->arch, job, 1, 1, err));
      p->have[i] = 1;
      p->stats.n_cached += job->cached;
      p->stats.n_compiled += !job->cached && job->status == FT_OK;
      const double spent = ft__now_s() - t0;
      if (!job->cached) p->stats.nvrtc_s += spent;
      p->stats.compile_s += spent;
    }
    p->stats.wait_s += ft__now_s() - t0;
  }
  move_limit(p);
  return FT_OK;
}

void ft_compile_plan_end(ft_compile_plan *p, ft_compile_stats *stats) {
  if (!p) return;
  if (p->pool) {
    p->stats.compile_s += ft_compile_pool_stop(p->pool);
    p->pool = NULL;
    for (int q = 0; q < p->nq; q++)
      if (!p->taken[q] && p->queue[q].ran) take_position(p, q);
  }
  for (int q = 0; q < p->nq; q++)
    if (!p->taken[q]) ft_compile_job_clear(&p->queue[q]);
  if (stats) {
    stats->n_compiled += p->stats.n_compiled;
    stats->n_cached += p->stats.n_cached;
    stats->compile_s += p->stats.compile_s;
    stats->nvrtc_s += p->stats.nvrtc_s;
    stats->wait_s += p->stats.wait_s;
  }
  free(p->queue);
  free(p->job_of); /* and taken */
  free(p->pos);    /* and have */
  free(p);
}
