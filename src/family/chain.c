/* The eager-style chain's launch description (chain.h). GPU-free. */
#include "chain.h"

#include "kernel_abi.h"

#include <stdio.h>
#include <string.h>

void ft_chain_kernel_name(int j, char *buf, size_t len) { snprintf(buf, len, "ft_chain_%d", j); }

int ft_chain_reduce_vec(ft_math math, int64_t n) {
  int vec = ft_math_out_dtype(math) == FT_DTYPE_F32 ? 4 : 8;
  while (vec > 1 && n % vec) vec /= 2;
  return vec;
}

int ft_chain_reduce_block(ft_ep_red kind, int rblock) {
  if (kind == FT_RED_BATCHNORM) return 1024;
  return kind != FT_RED_GROUPNORM && rblock > 0 ? rblock : FT_AUX_BLOCK;
}

int ft_chain_row_block(int64_t m, int64_t n, int vec) { return m <= 256 && vec > 0 && n / vec >= 2048 ? 1024 : 0; }

void ft_chain_reads(ft_math math, int64_t m, int64_t n, int *vec, int *rblock) {
  *vec = ft_chain_reduce_vec(math, n);
  *rblock = ft_chain_row_block(m, n, *vec);
}

ft_status ft_chain_of_plan(const ft_ep_eager *plan, const ft_epilogue *ep, ft_math math, int64_t m, int64_t n,
                           int rblock, ft_chain *out, ft_err *err) {
  if (!plan || !ep || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "chain: NULL argument");
  if (rblock != 0 && rblock != 1024)
    return ft__fail(err, FT_ERR_INVALID_ARG, "chain: a row block of %d threads (0 or 1024)", rblock);
  memset(out, 0, sizeof *out);
  if (plan->nsteps < 1 || plan->nsteps > FT_EP_MAX_STEPS)
    return ft__fail(err, FT_ERR_UNSUPPORTED, "chain: E's eager plan has %d steps after the GEMM (1 to %d run as a "
                    "chain)", plan->nsteps, FT_EP_MAX_STEPS);
  int window = 1;
  const int64_t pooled = ft_ep_pool(ep, &window, NULL) != FT_RED_NONE && window > 0 ? n / window : n;
  /* The columns of a buffer of each shape (ft_ep_shape): N, 1 after a one-value reduction, N / w after a pool. */
  const int64_t cols_of[] = {[FT_EP_SHAPE_MN] = n, [FT_EP_SHAPE_M] = 1, [FT_EP_SHAPE_POOLED] = pooled};
  const size_t elem = ft_math_out_dtype(math) == FT_DTYPE_F32 ? 4 : 2;
  /* last[b]: the last step reading buffer b (b - 1, the step writing it, when none does). */
  int last[FT_EP_MAX_STEPS];
  for (int b = 0; b < plan->nsteps; b++) last[b] = b - 1;
  for (int j = 0; j < plan->nsteps; j++) {
    const ft_ep_step *s = &plan->steps[j];
    if ((unsigned)s->shape >= sizeof cols_of / sizeof cols_of[0] || s->nin < 0 || s->nin > 3)
      return ft__fail(err, FT_ERR_INTERNAL, "chain: step %d of the eager plan is malformed", j);
    for (int i = 0; i < s->nin; i++) {
      if (s->in[i] == FT_EP_BUF_X2) continue; /* a gated pair's second GEMM: the baseline's own buffer */
      if (s->in[i] < 0 || s->in[i] > j)
        return ft__fail(err, FT_ERR_INTERNAL, "chain: step %d reads buffer %d, not one written before it", j, s->in[i]);
      last[s->in[i]] = j;
    }
  }
  /* Buffers share the workspace where their lives do not overlap (a chain of six fp32 steps at
   * 8192 x 8192 would otherwise hold 1.5 GiB): buffer b lives from the step writing it (b - 1; the
   * GEMM for 0) to last[b], so it may take the bytes of a buffer whose last reader came before
   * b - 1 (never those step b - 1 reads while it writes b). */
  size_t slot_at[FT_EP_MAX_STEPS], slot_size[FT_EP_MAX_STEPS];
  int slot_last[FT_EP_MAX_STEPS], nslots = 0;
  size_t at = 0;
  for (int j = 0; j < plan->nsteps; j++) {
    const ft_ep_step *s = &plan->steps[j];
    ft_chain_step *c = &out->steps[j];
    ft_chain_kernel_name(j, c->kernel, sizeof c->kernel);
    c->reduce = s->reduce != FT_RED_NONE;
    c->block = c->reduce ? ft_chain_reduce_block(s->reduce, rblock) : FT_AUX_BLOCK;
    c->nin = s->nin;
    for (int i = 0; i < s->nin; i++) c->in[i] = s->in[i];
    /* A reduction reads its operand's columns; after a one-value reduction the steps run over its M
     * values, after a pool over its windows. */
    const int from = s->in[0] > 0 && s->in[0] <= j ? (int)plan->steps[s->in[0] - 1].shape : (int)FT_EP_SHAPE_MN;
    c->cols = (int)cols_of[c->reduce ? from : (int)s->shape];
    c->col_blocks = s->reduce == FT_RED_BATCHNORM ? (c->cols + 31) / 32 : 0;
    /* Buffer j (what step j reads as buffer j: the GEMM's for j = 0), sized by its shape: the
     * smallest free slot that holds it, else a new one. */
    const int shape = j == 0 ? (int)FT_EP_SHAPE_MN : (int)plan->steps[j - 1].shape;
    const size_t size = ((size_t)m * (size_t)cols_of[shape] * elem + 255) / 256 * 256;
    int pick = -1;
    for (int q = 0; q < nslots; q++)
      if (slot_last[q] < j - 1 && slot_size[q] >= size && (pick < 0 || slot_size[q] < slot_size[pick])) pick = q;
    if (pick < 0) {
      pick = nslots++;
      slot_at[pick] = at, slot_size[pick] = size;
      at += size;
    }
    slot_last[pick] = last[j];
    out->offset[j] = slot_at[pick];
  }
  out->nsteps = plan->nsteps;
  out->workspace_bytes = at;
  return FT_OK;
}
