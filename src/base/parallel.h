/* Host loops split into a fixed number of chunks run on several threads, so that what they
 * compute (per-chunk partial sums combined in chunk order) does not depend on how many threads
 * ran them. Used for the test data and the float64 checks (src/gpu/verify.c), which otherwise held a
 * tune's search for tens of ms per candidate at large outputs (docs/BENCHMARKS.md, "Why the
 * search space is what it is"), and by
 * the batch compiler (src/compile/compile.c, one chunk per job). GPU-free. */
#ifndef FT_PARALLEL_H
#define FT_PARALLEL_H

#include <stddef.h>

/* Chunk c of nchunks covers [c n / nchunks, (c + 1) n / nchunks). */
typedef void (*ft_chunk_fn)(void *user, int chunk, size_t begin, size_t end);

/* Runs fn on every chunk of [0, n), each exactly once, on up to `threads` threads counting the
 * caller (< 1: ft_parallel_threads()); returns when all are done. Where a thread cannot be
 * started, the threads that did (or the caller alone) run its chunks: never an error. */
void ft_parallel_chunks(size_t n, int nchunks, int threads, ft_chunk_fn fn, void *user);

/* The default thread count: half the online cores (the other half is left to NVRTC's threads,
 * which compile beside the checks during a tune), 1 to 8; or what ft_parallel_set_threads set. */
int ft_parallel_threads(void);
/* Tests: the default thread count from now on (1 to 64; < 1: half the cores again), so that a machine
 * of two cores still runs chunks on several threads. Set it before any work starts. */
void ft_parallel_set_threads(int threads);

#endif
