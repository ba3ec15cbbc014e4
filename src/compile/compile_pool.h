/* NVRTC compilation on a pool of threads that runs ahead of its consumer: each thread takes the
 * next job in order as soon as it is free (no batch waits for its slowest kernel), but only jobs
 * below a limit the consumer moves. GPU-free and database-free: the caller keeps the cubin cache
 * (src/compile/compile.h), on its own thread. */
#ifndef FT_COMPILE_POOL_H
#define FT_COMPILE_POOL_H

#include "compile.h"

typedef struct ft_compile_pool ft_compile_pool;

/* Starts up to `threads` threads (1..64, at most n) over jobs[0..n), taken in index order while
 * index < limit. The pool writes each job's outputs; the caller reads job j only after
 * ft_compile_pool_wait(p, j) returned. When no thread can be created the pool still exists and
 * ft_compile_pool_wait compiles on the calling thread. FT_ERR_NOMEM, FT_ERR_INVALID_ARG. */
ft_status ft_compile_pool_start(ft_compile_job *jobs, int n, const char *arch, int threads, int limit,
                                ft_compile_pool **out, ft_err *err);
/* Jobs [0, limit) may start from now on (lowering it stops only what has not started). */
void ft_compile_pool_set_limit(ft_compile_pool *p, int limit);
/* Returns once job j is compiled, raising the limit past j first if needed. One consumer: the
 * pool is waited on from a single thread (the tuner's). */
void ft_compile_pool_wait(ft_compile_pool *p, int j);
/* Whether job j is compiled (never blocks on a compilation). */
int ft_compile_pool_done(ft_compile_pool *p, int j);
/* How many jobs have started (they start in index order: jobs [0, started)). */
int ft_compile_pool_started(ft_compile_pool *p);
/* Threads that are running (0: compilations happen in ft_compile_pool_wait). */
int ft_compile_pool_threads(const ft_compile_pool *p);
/* Takes no further job, waits for the ones in progress, joins the threads and frees the pool
 * (the jobs stay the caller's). Returns the wall seconds from the first compilation's start to
 * the last one's end (0: none ran). NULL is a no-op returning 0. */
double ft_compile_pool_stop(ft_compile_pool *p);

/* A tune's compile plan, on a pool: what to compile (the jobs the consumer will take), in which
 * order (the search's), and how far ahead of the consumer. The cubin cache answers for the whole
 * plan first; the rest compiles on cores - 2 threads (two stay free: the worker's launch loop and
 * the consumer's thread) in the plan's order, no further ahead than the consumer expects to take
 * (ft_compile_plan_expect), and never less than eight jobs per thread. The threads run NVRTC
 * only: the database is read and written on the consumer's thread, in these calls. */
typedef struct ft_compile_plan ft_compile_plan;

typedef struct ft_compile_stats {
  int n_compiled;  /* compiled by NVRTC, successfully */
  int n_cached;    /* taken from the cache */
  double compile_s; /* wall time: the cache reads, the pool's span, compiles outside the plan */
  double nvrtc_s;   /* NVRTC's own time in it */
  double wait_s;    /* the consumer's time waiting in ft_compile_plan_take */
} ft_compile_stats;

/* Plans jobs[0..n) (sources and hashes set; the caller's array, into which the plan writes each
 * job's outputs): order[0..n_order) lists the jobs to compile ahead, first to last; the others
 * compile when taken. A failure of the cache read (or of memory) is kept and returned by every
 * ft_compile_plan_take; FT_ERR_NOMEM when the plan itself cannot be made. arch is copied. */
ft_status ft_compile_plan_start(ft_db *db, const char *arch, ft_compile_job *jobs, int n, const int *order,
                                int n_order, ft_compile_plan **out, ft_err *err);
/* The threads the plan compiles on beside the consumer. */
int ft_compile_plan_threads(const ft_compile_plan *p);
/* The consumer expects to take `left` more jobs (< 0: unknown, everything): how far ahead the
 * threads may run from the next take on. */
void ft_compile_plan_expect(ft_compile_plan *p, int left);
/* Job i compiled (waited for on the pool, or compiled here through the cache when outside the
 * plan); its outputs are jobs[i]'s. Non-OK: the plan's kept failure, or the cache's. */
ft_status ft_compile_plan_take(ft_compile_plan *p, int i, ft_err *err);
/* Stops the threads; what they compiled ahead and nobody took is cached (for the next tune) and
 * handed to its job. Adds the plan's counts and times to *stats (when not NULL); frees the plan
 * (the jobs stay the caller's). NULL is a no-op. */
void ft_compile_plan_end(ft_compile_plan *p, ft_compile_stats *stats);

#endif
