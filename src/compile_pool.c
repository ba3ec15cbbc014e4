/* The tuner's compile pool (src/compile_pool.h): one mutex, one condition variable broadcast
 * whenever a job ends or the limit moves; jobs are handed out by index, so the order is the
 * caller's. */
#include "compile_pool.h"

#include <pthread.h>
#include <stdlib.h>

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
