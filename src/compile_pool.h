/* NVRTC compilation on a pool of threads that runs ahead of its consumer: each thread takes the
 * next job in order as soon as it is free (no batch waits for its slowest kernel), but only jobs
 * below a limit the consumer moves. GPU-free and database-free: the caller keeps the cubin cache
 * (src/compile.h), on its own thread. */
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

#endif
