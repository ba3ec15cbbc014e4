/* The fp8 mode's scales in an epilogue (docs/MODES.md): E must multiply the GEMM result x by the
 * dequantizing scales sx and sw, and a gated pair's x2 by sx and sw2 (its own weight's scales),
 * each once and nowhere else, so that E with every scale 1 applied to the unquantized products is
 * what the quantized layer approximates (the tuner's end-to-end reference). */
#include <stdio.h>
#include <string.h>

#include "epilogue_internal.h"

static int slot_of(const ft_epilogue *ep, const char *name) {
  for (int i = 0; i < ep->nparams; i++)
    if (!strcmp(ep->params[i].name, name)) return i;
  return -1;
}

/* Leaves of the product tree rooted at n that are parameter slot. */
static int product_uses(const ft_epilogue *ep, int n, int slot) {
  const ep_node *e = &ep->nodes[n];
  if (e->kind != N_MUL) return e->kind == N_PARAM && e->slot == slot;
  int count = 0;
  for (int i = 0; i < e->nkids; i++) count += product_uses(ep, e->kid[i], slot);
  return count;
}

/* The one node of kind (N_X or N_X2), or -1 where E has none or several. */
static int only_node(const ft_epilogue *ep, node_kind kind) {
  int at = -1, count = 0;
  for (int i = 0; i < ep->nnodes; i++)
    if (ep->nodes[i].kind == kind) at = i, count++;
  return count == 1 ? at : -1;
}

/* The product node n belongs to: climb while the parent is a multiplication. */
static int product_of(const ft_epilogue *ep, int n) {
  for (int moved = 1; moved;) {
    moved = 0;
    for (int i = 0; i < ep->nnodes && !moved; i++)
      if (ep->nodes[i].kind == N_MUL)
        for (int j = 0; j < ep->nodes[i].nkids; j++)
          if (ep->nodes[i].kid[j] == n) n = i, moved = 1;
  }
  return n;
}

static int uses_of(const ft_epilogue *ep, int slot) {
  int count = 0;
  for (int i = 0; i < ep->nnodes; i++) count += ep->nodes[i].kind == N_PARAM && ep->nodes[i].slot == slot;
  return count;
}

int ft_ep_fp8_scales(const ft_epilogue *ep, int *sx_slot, int *sw_slot, int *sw2_slot, char *why, size_t why_size) {
  static const char form[] = "e.g. \"relu(x * sx * sw + bias) where row sx, col sw\"";
  static const char pair_form[] = "e.g. \"silu(x * sx * sw) * (x2 * sx * sw2) where row sx, col sw, col sw2\"";
  const int pair = ep->uses_x2;
  const int a = slot_of(ep, "sx"), b = slot_of(ep, "sw"), c = pair ? slot_of(ep, "sw2") : -1;
  if (a < 0 || b < 0) {
    snprintf(why, why_size, "fp8: the epilogue must scale x by sx and sw (%s): '%s' is missing", pair ? pair_form : form,
             a < 0 ? "sx" : "sw");
    return 0;
  }
  if (pair && c < 0) {
    snprintf(why, why_size, "fp8: a gated pair's x2 must be scaled by sx and its own weight's scale sw2 (%s): 'sw2' is "
             "missing", pair_form);
    return 0;
  }
  const ft_param_kind ka = ep->params[a].kind, kb = ep->params[b].kind, kc = pair ? ep->params[c].kind : FT_PARAM_SCALAR;
  if ((ka != FT_PARAM_SCALAR && ka != FT_PARAM_ROWVEC) || (kb != FT_PARAM_SCALAR && kb != FT_PARAM_COLVEC) ||
      (kc != FT_PARAM_SCALAR && kc != FT_PARAM_COLVEC)) {
    snprintf(why, why_size, "fp8: sx scales x's rows (scalar or row sx), sw W's rows, the output columns (scalar or col "
             "sw%s)", pair ? "; sw2 the same for x2's weight" : "");
    return 0;
  }
  /* x's product holds sw once and sx; x2's sw2 once and sx; sx is used once per product (twice
   * where x and x2 share one), sw and sw2 nowhere else. */
  const int x = only_node(ep, N_X), x2 = pair ? only_node(ep, N_X2) : -1;
  const int px = x >= 0 ? product_of(ep, x) : -1, px2 = x2 >= 0 ? product_of(ep, x2) : -1;
  const int ok_x = x >= 0 && product_uses(ep, px, a) >= 1 && product_uses(ep, px, b) == 1 && uses_of(ep, b) == 1;
  const int ok_x2 = !pair || (x2 >= 0 && product_uses(ep, px2, a) >= 1 && product_uses(ep, px2, c) == 1 &&
                              uses_of(ep, c) == 1);
  const int sx_uses = x >= 0 && product_uses(ep, px, a) == 1 + (pair && px == px2) && uses_of(ep, a) == 1 + pair;
  if (!ok_x || (!pair && !sx_uses)) {
    snprintf(why, why_size, "fp8: x must appear once, multiplied by sx and sw, which appear nowhere else (%s)",
             pair ? pair_form : form);
    return 0;
  }
  if (!ok_x2 || !sx_uses) {
    snprintf(why, why_size, "fp8: x2 must appear once, multiplied by sx and sw2; sx scales x and x2 once each, sw and sw2 "
             "appear nowhere else (%s)", pair_form);
    return 0;
  }
  *sx_slot = a;
  *sw_slot = b;
  if (sw2_slot) *sw2_slot = c;
  return 1;
}
