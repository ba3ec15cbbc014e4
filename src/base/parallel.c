/* See parallel.h: a shared chunk counter taken by each thread in turn. */
#include "parallel.h"

#include <pthread.h>
#include <unistd.h>

#define FT_PARALLEL_MAX_THREADS 64 /* the compile pool runs one per core */

typedef struct job {
  size_t n;
  int nchunks;
  ft_chunk_fn fn;
  void *user;
  pthread_mutex_t lock;
  int next;
} job;

/* c n / nchunks without the product overflowing. */
static size_t bound(size_t n, int nchunks, int c) {
  const size_t q = (size_t)nchunks;
  return n / q * (size_t)c + n % q * (size_t)c / q;
}

static void *worker(void *arg) {
  job *j = arg;
  for (;;) {
    pthread_mutex_lock(&j->lock);
    const int c = j->next < j->nchunks ? j->next++ : -1;
    pthread_mutex_unlock(&j->lock);
    if (c < 0) return NULL;
    j->fn(j->user, c, bound(j->n, j->nchunks, c), bound(j->n, j->nchunks, c + 1));
  }
}

void ft_parallel_chunks(size_t n, int nchunks, int threads, ft_chunk_fn fn, void *user) {
  if (nchunks < 1 || !fn) return;
  if (threads < 1) threads = ft_parallel_threads();
  if (threads > nchunks) threads = nchunks;
  if (threads > FT_PARALLEL_MAX_THREADS) threads = FT_PARALLEL_MAX_THREADS;
  job j = {n, nchunks, fn, user, PTHREAD_MUTEX_INITIALIZER, 0};
  pthread_t tid[FT_PARALLEL_MAX_THREADS];
  int started = 0;
  for (int t = 1; t < threads; t++)
    if (pthread_create(&tid[started], NULL, worker, &j) == 0) started++;
  worker(&j);
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
}

static int g_threads; /* ft_parallel_set_threads's; 0: half the cores */

void ft_parallel_set_threads(int threads) {
  g_threads = threads < 1 ? 0 : threads > FT_PARALLEL_MAX_THREADS ? FT_PARALLEL_MAX_THREADS : threads;
}

int ft_parallel_threads(void) {
  if (g_threads > 0) return g_threads;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const long t = cores / 2;
  return t < 1 ? 1 : t > 8 ? 8 : (int)t;
}
