/* The float64 epilogue evaluator: the definitions of docs/EPILOGUE.md, mirrored by
 * kernels_src/ft_math.cuh. */
#include <math.h>

#include "epilogue_internal.h"

/* min/max propagate a NaN from either side, as torch.minimum/maximum do. */
static double ev_min(double a, double b) { return (a < b || a != a) ? a : b; }
static double ev_max(double a, double b) { return (a > b || a != a) ? a : b; }
static double ev_softplus(double a) { return a > 20.0 ? a : log1p(exp(a)); }

/* 0.5 x (1 + erf(x / sqrt 2)), written with erfc to avoid cancellation for negative x. */
static double ev_gelu(double a) { return 0.5 * a * erfc(-a * 0.70710678118654752440); }

static double ev_gelu_tanh(double a) {
  return 0.5 * a * (1.0 + tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)));
}

static double eval_call(fn_id fn, const double *a) {
  switch (fn) {
    case FN_MIN: return ev_min(a[0], a[1]);
    case FN_MAX: return ev_max(a[0], a[1]);
    case FN_RELU: return ev_max(a[0], 0.0);
    case FN_LEAKY_RELU: return a[0] > 0.0 ? a[0] : a[0] * a[1];
    case FN_GELU: return ev_gelu(a[0]);
    case FN_GELU_TANH: return ev_gelu_tanh(a[0]);
    case FN_SIGMOID: return 1.0 / (1.0 + exp(-a[0]));
    case FN_SILU: return a[0] / (1.0 + exp(-a[0]));
    case FN_TANH: return tanh(a[0]);
    case FN_MISH: return a[0] * tanh(ev_softplus(a[0]));
    case FN_SOFTPLUS: return ev_softplus(a[0]);
    case FN_ELU: return a[0] > 0.0 ? a[0] : expm1(a[0]);
    case FN_CLAMP: return ev_min(ev_max(a[0], a[1]), a[2]);
    case FN_ABS: return fabs(a[0]);
    case FN_EXP: return exp(a[0]);
    case FN_LOG: return log(a[0]);
    case FN_SQRT: return sqrt(a[0]);
    case FN_COUNT: break;
  }
  return NAN;
}

/* Node n's value; x2 is a gated pair's second product (NaN where none); leaf, when >= 0, a node
 * whose value is given (leaf_value: a reduction's result, epilogue_reduce_eval.c). */
static double eval_node(const ft_epilogue *ep, int n, double x, double x2, const double *vals, int leaf,
                        double leaf_value) {
  if (n == leaf) return leaf_value;
  const ep_node *nd = &ep->nodes[n];
  double a[3] = {0.0, 0.0, 0.0};
  for (int i = 0; i < nd->nkids; i++) a[i] = eval_node(ep, nd->kid[i], x, x2, vals, leaf, leaf_value);
  switch (nd->kind) {
    case N_NUM: return nd->num;
    case N_X: return x;
    case N_X2: return x2;
    case N_PARAM: return vals ? vals[nd->slot] : NAN;
    case N_NEG: return -a[0];
    case N_ADD: return a[0] + a[1];
    case N_SUB: return a[0] - a[1];
    case N_MUL: return a[0] * a[1];
    case N_DIV: return a[0] / a[1];
    case N_CALL: return eval_call((fn_id)nd->fn, a);
    case N_REF:
    case N_RED: /* a whole row's value: ft_ep_eval_matrix */
      break;
  }
  return NAN;
}

double ft_ep_eval(const ft_epilogue *ep, double x, const double *vals) {
  return eval_node(ep, ep->root, x, NAN, vals, -1, 0.0);
}

double ft_ep_eval2(const ft_epilogue *ep, double x, double x2, const double *vals) {
  return eval_node(ep, ep->root, x, x2, vals, -1, 0.0);
}

double ft__ep_eval_at(const ft_epilogue *ep, int n, double x, const double *vals, int leaf, double leaf_value) {
  return eval_node(ep, n, x, NAN, vals, leaf, leaf_value);
}
