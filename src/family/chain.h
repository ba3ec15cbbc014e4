/* An eager-style chain: what runs after the GEMM when E is computed as PyTorch eager computes it,
 * one kernel per step of E's eager plan (src/epilogue/epilogue_eager.c), each step an entry point
 * of one program (ft_codegen_chain, src/family/codegen.c). The eager baseline (src/gpu/baseline.c)
 * and family eager_chain's plans (src/family/family_chain.c) both run its steps through
 * src/gpu/launch.c's ft_chain_enqueue (the same step kernels; the GEMM before them is each one's
 * own cuBLAS / cuBLASLt call, which may choose another algorithm).
 * GPU-free. */
#ifndef FT_CHAIN_H
#define FT_CHAIN_H

#include "epilogue.h"

/* The buffers steps read and write: 0 the GEMM's output, j step j-1's (the last step's is y),
 * FT_EP_BUF_X2 a gated pair's second GEMM's (the baseline's alone runs one). */
#define FT_CHAIN_BUFS (FT_EP_BUF_X2 + 1)

typedef struct ft_chain_step {
  char kernel[16]; /* its entry point, "ft_chain_<j>" */
  int reduce;      /* 1: a reduction, reduce_entry.cu's ft_reduce_pass over its operand, a block per row;
                    * 0: an elementwise step, eager_step.cu's ft_eager_step */
  int nin, in[3];  /* the buffers it reads */
  int cols;        /* columns of its operand (a reduction) or of its output (elementwise); M rows */
  int block;       /* threads per block of a reduction (ft_chain_reduce_block) */
  int col_blocks;  /* blocks of a batchnorm step (one a strip of 32 columns); 0: a block per row */
} ft_chain_step;

typedef struct ft_chain {
  int nsteps;
  ft_chain_step steps[FT_EP_MAX_STEPS];
  /* Buffer j < nsteps in a plan's workspace (256-byte aligned), sized by its shape, sharing bytes
   * with buffers whose lives ended before it is written; the last step writes y. */
  size_t offset[FT_EP_MAX_STEPS];
  size_t workspace_bytes;
} ft_chain;

/* The chain of plan (ep's) on an m x n GEMM result in mode math: buffers of the output's element
 * type; rblock: the row reductions' threads a block (ft_chain_row_block). FT_ERR_UNSUPPORTED for
 * a plan without steps. */
ft_status ft_chain_of_plan(const ft_ep_eager *plan, const ft_epilogue *ep, ft_math math, int64_t m, int64_t n,
                           int rblock, ft_chain *out, ft_err *err);
/* Step j's entry point, "ft_chain_<j>". */
void ft_chain_kernel_name(int j, char *buf, size_t len);
/* The vector a reduction step reads its rows in: 16 bytes of the mode's output elements where n
 * is a multiple, else the widest that divides n. */
int ft_chain_reduce_vec(ft_math math, int64_t n);
/* The threads of a reduction step's block, its program's FT_BLOCK: 1024 for batchnorm, whose blocks
 * take 32 columns each and share the M rows among their warps (more warps, more reads in flight:
 * with 256 it ran 4x slower than PyTorch's, docs/BENCHMARKS.md 2026-12-06 (j)); FT_AUX_BLOCK for
 * groupnorm (at 1024 its fp32 team form spills, and rows of 8 to 31 groups would leave the team
 * form); else rblock (0: FT_AUX_BLOCK). */
int ft_chain_reduce_block(ft_ep_red kind, int rblock);
/* The row reductions' block of an m x n chain read in vectors of vec: 1024 threads where the rows
 * are few (m <= 256: at most two blocks an SM) and long (n / vec >= 2048: two vectors a thread),
 * so more reads are in flight (a softmax of 128 rows of 16384 ran 2x slower than PyTorch's with
 * 256, docs/BENCHMARKS.md 2026-12-06 (j)); else 0, FT_AUX_BLOCK. */
int ft_chain_row_block(int64_t m, int64_t n, int vec);
/* The vector and the row block of the chain of an m x n problem in math (family eager_chain's
 * variant and the eager baseline take the same). */
void ft_chain_reads(ft_math math, int64_t m, int64_t n, int *vec, int *rblock);

#endif
