/* What an epilogue costs per output element, counted from its tree: FP32-pipe instructions and
 * special-function (MUFU: ex2, lg2, rcp) instructions, in the function forms the math mode
 * compiles (kernels_src/ft_math.cuh: fast in tf32/bf16/fp16, precise in fp32/3xtf32). A repeated
 * subexpression counts once, as the compiler evaluates it once. The counts were read off the
 * PTX of each form (one instruction a line, selects and constants aside) and are estimates for
 * ordering a search, not a promise. GPU-free. */
#include <string.h>

#include "epilogue_internal.h"

/* Per call of each function: {fp32, mufu} in the fast forms, then in the precise ones. */
static const double k_fn_cost[FN_COUNT][2][2] = {
    [FN_MIN] = {{1, 0}, {1, 0}},          [FN_MAX] = {{1, 0}, {1, 0}},
    [FN_RELU] = {{1, 0}, {1, 0}},         [FN_LEAKY_RELU] = {{2, 0}, {2, 0}},
    [FN_GELU] = {{22, 1}, {30, 1}},       [FN_GELU_TANH] = {{10, 2}, {16, 2}},
    [FN_SIGMOID] = {{6, 2}, {14, 2}},     [FN_SILU] = {{6, 2}, {14, 2}},
    [FN_TANH] = {{18, 2}, {18, 2}},       [FN_MISH] = {{10, 2}, {49, 4}},
    [FN_SOFTPLUS] = {{16, 2}, {30, 2}},   [FN_ELU] = {{13, 1}, {20, 1}},
    [FN_CLAMP] = {{2, 0}, {2, 0}},        [FN_ABS] = {{1, 0}, {1, 0}},
    [FN_EXP] = {{1, 1}, {8, 1}},          [FN_LOG] = {{1, 1}, {20, 1}},
    [FN_SQRT] = {{4, 1}, {4, 1}},
};
/* tanh(softplus(e)) as one function (epilogue_print.c): one exponential and a quotient. */
static const double k_tanh_softplus_cost[2][2] = {{9, 2}, {48, 4}};
/* ft_div: the scalings, the hardware reciprocal and a Newton step. */
static const double k_div_cost[2] = {14, 1};

/* Whether the subtrees at a and b are the same expression. */
static int same_tree(const ep_node *nodes, int a, int b) {
  if (a == b) return 1;
  const ep_node *x = &nodes[a], *y = &nodes[b];
  if (x->kind != y->kind || x->nkids != y->nkids || x->depth != y->depth) return 0;
  if (x->kind == N_NUM && x->num != y->num) return 0;
  if (x->kind == N_PARAM && x->slot != y->slot) return 0;
  if (x->kind == N_CALL && x->fn != y->fn) return 0;
  for (int i = 0; i < x->nkids; i++)
    if (!same_tree(nodes, x->kid[i], y->kid[i])) return 0;
  return 1;
}

int ft_ep_fast_forms(ft_math math) {
  return math == FT_MATH_TF32 || math == FT_MATH_BF16 || math == FT_MATH_FP16 || math == FT_MATH_FP8;
}

/* Whether node k (or a repetition of its expression) is an operand of a node other than parent. */
static int used_elsewhere(const ft_epilogue *ep, int k, int parent) {
  for (int i = 0; i < ep->nnodes; i++) {
    if (i == parent || same_tree(ep->nodes, i, parent)) continue;
    for (int j = 0; j < ep->nodes[i].nkids; j++)
      if (same_tree(ep->nodes, ep->nodes[i].kid[j], k)) return 1;
  }
  return 0;
}

ft_ep_cost ft_ep_cost_of(const ft_epilogue *ep, int fast) {
  ft_ep_cost c = {0, 0};
  if (!ep) return c;
  const ep_node *nodes = ep->nodes;
  const int f = fast ? 0 : 1;
  for (int n = 0; n < ep->nnodes; n++) {
    const ep_node *nd = &nodes[n];
    int seen = 0; /* an earlier node of the same expression: evaluated once */
    for (int m = 0; m < n && !seen; m++) seen = same_tree(nodes, m, n);
    if (seen) continue;
    switch (nd->kind) {
      case N_ADD:
      case N_SUB:
      case N_MUL:
      case N_NEG:
        c.fp32 += 1;
        break;
      case N_DIV:
        c.fp32 += k_div_cost[0], c.mufu += k_div_cost[1];
        break;
      case N_CALL:
        if (nd->fn == FN_TANH && nodes[nd->kid[0]].kind == N_CALL && nodes[nd->kid[0]].fn == FN_SOFTPLUS) {
          /* The pair is one function; its softplus, counted already, is evaluated alone only where
           * something else uses it. */
          c.fp32 += k_tanh_softplus_cost[f][0], c.mufu += k_tanh_softplus_cost[f][1];
          if (!used_elsewhere(ep, nd->kid[0], n))
            c.fp32 -= k_fn_cost[FN_SOFTPLUS][f][0], c.mufu -= k_fn_cost[FN_SOFTPLUS][f][1];
        } else {
          c.fp32 += k_fn_cost[nd->fn][f][0], c.mufu += k_fn_cost[nd->fn][f][1];
        }
        break;
      default: /* x, numbers and parameters: operands (a vector's load is the store path's) */
        break;
    }
  }
  if (c.fp32 < 0) c.fp32 = 0;
  if (c.mufu < 0) c.mufu = 0;
  return c;
}
