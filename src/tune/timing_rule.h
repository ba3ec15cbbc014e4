/* How a tune times a problem's candidates: back to back on a stream, or as CUDA-graph replays
 * where the problem is small enough that launch gaps are a visible part of each call. GPU-free. */
#ifndef FT_TIMING_RULE_H
#define FT_TIMING_RULE_H

#include <stdint.h>

#include "epilogue.h"
#include "fusedtune.h"

/* The GEMM's least time in microseconds at an H100's dense peak rate of the mode (FFMA 67, tf32
 * 495, 3xtf32 a third of it, bf16 / fp16 989, fp8 1979 TFLOP/s) or its HBM rate (3.35 TB/s)
 * for reading x and W and writing y once, whichever bounds it; n_gemm is the GEMM's N (a gated
 * pair's 2n). */
double ft_timing_gemm_floor_us(int64_t m, int64_t n_gemm, int64_t k, ft_math math);

/* Below this floor a tune times candidates as graphs (decode-sized layers: 16×4096×14336 bf16 is
 * 35 µs, where a launch gap of 1–3 µs on the stream is what graph replay takes away). */
#define FT_TIMING_GRAPH_BELOW_US 40.0
/* Calls a timing graph holds (bench_graphs.py replays graphs of the same count). */
#define FT_TIMING_GRAPH_CALLS 10

/* ft_bench_opts.graph_calls for a tune of (m, n, k, math, ep; ep NULL: none): FT_TIMING_GRAPH_CALLS
 * where the floor of ep's GEMM (a gated pair's is 2n wide) is below FT_TIMING_GRAPH_BELOW_US,
 * else 0 (on the stream); 0 with an L2 flush (each call flushed apart)
 * and where the environment has FUSEDTUNE_GRAPH_TIMING=0 (a worker process inherits it). */
int ft_timing_graph_calls(int64_t m, int64_t n, int64_t k, ft_math math, const ft_epilogue *ep, int flush_l2);

#endif
