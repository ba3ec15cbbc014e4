/* Gated pairs (E with x2, docs/EPILOGUE.md "Gated pairs"): the interleaved weight's layout and the
 * problem rules every strategy shares. GPU-free (ft_gated_interleave is src/api/api_gated.c). */
#ifndef FT_GATED_H
#define FT_GATED_H

#include <stdint.h>

#include "common.h"
#include "epilogue.h"

/* W1's and W2's rows alternate in groups of this many in the interleaved [2N, K] weight. */
#define FT_GATED_GROUP 8

/* Column of the interleaved product [M, 2N] that holds x (W1's row c) of output column c; x2 is
 * FT_GATED_GROUP columns further. */
static inline int64_t ft_gated_x_col(int64_t c) {
  return 2 * FT_GATED_GROUP * (c / FT_GATED_GROUP) + c % FT_GATED_GROUP;
}

/* The GEMM's column count for output width n: 2n with x2 in E, else n. */
static inline int64_t ft_gemm_cols(const ft_epilogue *ep, int64_t n) { return ep && ft_ep_uses_x2(ep) ? 2 * n : n; }

/* With x2 in E: FT_ERR_INVALID_ARG unless n is a multiple of 8 (the interleave's group); in every
 * math mode (fp8's scales of x2 are ft_fp8_check's). FT_OK without x2. */
ft_status ft_gated_check(const ft_epilogue *ep, int64_t n, ft_err *err);

#endif
