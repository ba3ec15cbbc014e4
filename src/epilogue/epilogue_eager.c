/* The eager-style plan of an epilogue: the GEMM (maybe with the bias folded in), then one
 * elementwise pass per remaining operation, as PyTorch eager would run it. */
#include <stdlib.h>
#include <string.h>

#include "epilogue_internal.h"

typedef struct eager_ctx {
  const ft_epilogue *ep;
  int *buf;     /* node -> buffer holding its value (0 = GEMM, j = step j-1), or -1 */
  int *in_of;   /* scratch for the printer */
  char *xdep;   /* node depends on x */
  ft_ep_eager *out;
  ft_err *err;
  ft_ep_shape shape[FT_EP_BUF_X2 + 1]; /* buffer -> its shape (the GEMMs' outputs, then the steps') */
} eager_ctx;

static void mark_xdep(eager_ctx *c) {
  /* Children always precede parents in the node array, so one forward pass suffices. */
  for (int i = 0; i < c->ep->nnodes; i++) {
    const ep_node *nd = &c->ep->nodes[i];
    c->xdep[i] = nd->kind == N_X || nd->kind == N_X2;
    for (int k = 0; k < nd->nkids; k++) c->xdep[i] |= c->xdep[nd->kid[k]];
  }
}

/* The node of E's one x, or -1: x used more than once, or a gated pair (its GEMM has 2N columns,
 * so nothing of y's shape folds into it). What cuBLASLt's epilogues can take over starts there. */
static int single_x(const ft_epilogue *ep) {
  int xs = 0, xnode = -1;
  for (int i = 0; i < ep->nnodes; i++) {
    if (ep->nodes[i].kind == N_X) xs++, xnode = i;
    if (ep->nodes[i].kind == N_X2) return -1;
  }
  return xs == 1 ? xnode : -1;
}

int ft__ep_bias_fold(const ft_epilogue *ep, int *slot) {
  const int xnode = single_x(ep);
  *slot = -1;
  if (xnode < 0) return -1;
  for (int i = 0; i < ep->nnodes; i++) {
    const ep_node *nd = &ep->nodes[i];
    if (nd->kind != N_ADD || (nd->kid[0] != xnode && nd->kid[1] != xnode)) continue;
    const ep_node *other = &ep->nodes[nd->kid[0] == xnode ? nd->kid[1] : nd->kid[0]];
    if (other->kind != N_PARAM || ep->params[other->slot].kind != FT_PARAM_COLVEC) return -1;
    *slot = other->slot;
    return i;
  }
  return -1;
}

int ft__ep_act_fold(const ft_epilogue *ep, int *slot, int *act) {
  const int xnode = single_x(ep);
  int bias_slot;
  *slot = -1, *act = FT_EP_LT_NONE;
  if (xnode < 0) return -1;
  const int fold = ft__ep_bias_fold(ep, &bias_slot);
  const int inner = fold >= 0 ? fold : xnode;
  for (int i = 0; i < ep->nnodes; i++) {
    const ep_node *nd = &ep->nodes[i];
    if (nd->kind != N_CALL || nd->nkids != 1 || nd->kid[0] != inner) continue;
    if (nd->fn != FN_RELU && nd->fn != FN_GELU_TANH) continue;
    *act = nd->fn == FN_RELU ? FT_EP_LT_RELU : FT_EP_LT_GELU_TANH;
    *slot = fold >= 0 ? bias_slot : -1;
    return i;
  }
  return -1;
}

int ft__ep_resid_fold(const ft_epilogue *ep, int *mat, int *bias) {
  const int xnode = single_x(ep);
  *mat = *bias = -1;
  if (xnode < 0) return -1;
  int bias_slot;
  const int fold = ft__ep_bias_fold(ep, &bias_slot);
  const int inner = fold >= 0 ? fold : xnode;
  for (int i = 0; i < ep->nnodes; i++) {
    const ep_node *nd = &ep->nodes[i];
    if (nd->kind != N_ADD || (nd->kid[0] != inner && nd->kid[1] != inner)) continue;
    const ep_node *other = &ep->nodes[nd->kid[0] == inner ? nd->kid[1] : nd->kid[0]];
    if (other->kind != N_PARAM || ep->params[other->slot].kind != FT_PARAM_MATRIX) return -1;
    *mat = other->slot, *bias = fold >= 0 ? bias_slot : -1;
    return i;
  }
  return -1;
}

/* nn.Linear's addmm: the one `x + colvec` (either order) becomes the GEMM's own output (fold; else
 * it stays a step, as torch adds the bias where cuBLASLt has no algorithm for the shape). */
static void fold_bias(eager_ctx *c, int fold) {
  for (int i = 0; i < c->ep->nnodes; i++)
    if (c->ep->nodes[i].kind == N_X) c->buf[i] = 0; /* every x reads the GEMM output */
    else if (c->ep->nodes[i].kind == N_X2) c->buf[i] = FT_EP_BUF_X2; /* the second GEMM's */
  c->out->gemm_bias_slot = -1;
  const int node = fold ? ft__ep_bias_fold(c->ep, &c->out->gemm_bias_slot) : -1;
  if (node >= 0) c->buf[node] = 0;
}

/* A reduction is one kernel over its operand's buffer, as torch runs softmax, sum, amax, group_norm,
 * batch_norm or a pool (logsumexp is several in torch: one here, so the baseline is no slower). */
static ft_status emit_reduction(eager_ctx *c, int n, ft_ep_step *st) {
  const ep_node *nd = &c->ep->nodes[n];
  c->in_of[nd->kid[0]] = -1;
  st->expr[0] = '\0';
  st->reduce = (ft_ep_red)nd->fn;
  st->arg = (int)nd->num;
  if (st->reduce == FT_RED_MAXPOOL || st->reduce == FT_RED_AVGPOOL) st->shape = FT_EP_SHAPE_POOLED;
  else if (st->reduce <= FT_RED_LOGSUMEXP) st->shape = FT_EP_SHAPE_M;
  c->shape[c->out->nsteps + 1] = st->shape;
  c->buf[n] = ++c->out->nsteps;
  return FT_OK;
}

static ft_status emit_step(eager_ctx *c, int n) {
  const ep_node *nd = &c->ep->nodes[n];
  if (c->out->nsteps == FT_EP_MAX_STEPS)
    return ft__fail(c->err, FT_ERR_UNSUPPORTED, "epilogue: eager plan needs more than %d passes", FT_EP_MAX_STEPS);
  ft_ep_step *st = &c->out->steps[c->out->nsteps];
  memset(st, 0, sizeof *st);
  for (int k = 0; k < nd->nkids; k++) {
    int kid = nd->kid[k];
    if (!c->xdep[kid]) continue;
    int j = 0;
    while (j < st->nin && st->in[j] != c->buf[kid]) j++;
    if (j == st->nin) st->in[st->nin++] = c->buf[kid];
    c->in_of[kid] = j;
  }
  st->shape = st->nin ? c->shape[st->in[0]] : FT_EP_SHAPE_MN;
  if (nd->kind == N_RED) return emit_reduction(c, n, st);
  char *text = ft__ep_print_cuda(c->ep, n, c->in_of);
  for (int k = 0; k < nd->nkids; k++) c->in_of[nd->kid[k]] = -1;
  if (!text) return ft__fail(c->err, FT_ERR_NOMEM, "epilogue: out of memory");
  size_t len = strlen(text);
  if (len >= sizeof st->expr) {
    free(text);
    return ft__fail(c->err, FT_ERR_UNSUPPORTED, "epilogue: an eager step is longer than %zu characters",
                    sizeof st->expr - 1);
  }
  memcpy(st->expr, text, len + 1);
  free(text);
  c->shape[c->out->nsteps + 1] = st->shape;
  c->buf[n] = ++c->out->nsteps;
  return FT_OK;
}

/* Post-order: operands first, left to right, as eager code would run them. Operations that do
 * not involve x (constants, parameters) are inlined into the step that uses them. */
static ft_status plan_node(eager_ctx *c, int n) {
  if (!c->xdep[n] || c->buf[n] >= 0) return FT_OK;
  const ep_node *nd = &c->ep->nodes[n];
  for (int k = 0; k < nd->nkids; k++) FT_TRY(plan_node(c, nd->kid[k]));
  return emit_step(c, n);
}

ft_status ft_ep_eager_plan(const ft_epilogue *ep, ft_ep_eager *out, ft_err *err) {
  return ft_ep_eager_plan_fold(ep, 1, out, err);
}

ft_status ft_ep_eager_plan_fold(const ft_epilogue *ep, int fold, ft_ep_eager *out, ft_err *err) {
  if (!ep || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue: NULL argument");
  size_t nn = (size_t)ep->nnodes;
  eager_ctx c = {ep, malloc(nn * sizeof(int)), malloc(nn * sizeof(int)), malloc(nn), out, err, {FT_EP_SHAPE_MN}};
  ft_status s = FT_OK;
  if (!c.buf || !c.in_of || !c.xdep) {
    s = ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  } else {
    for (size_t i = 0; i < nn; i++) c.buf[i] = c.in_of[i] = -1;
    out->nsteps = 0;
    c.shape[0] = c.shape[FT_EP_BUF_X2] = FT_EP_SHAPE_MN;
    mark_xdep(&c);
    fold_bias(&c, fold);
    s = plan_node(&c, ep->root);
  }
  free(c.buf);
  free(c.in_of);
  free(c.xdep);
  return s;
}
