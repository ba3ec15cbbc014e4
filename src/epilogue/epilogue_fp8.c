/* The fp8 mode's scales in an epilogue (docs/MODES.md): E must multiply the GEMM result x by the
 * dequantizing scales sx and sw, each once and nowhere else, so that E with sx = sw = 1 applied to
 * the unquantized product is what the quantized layer approximates (the tuner's end-to-end
 * reference). */
#include <stdio.h>
#include <string.h>

#include "epilogue_internal.h"

static int slot_of(const ft_epilogue *ep, const char *name) {
  for (int i = 0; i < ep->nparams; i++)
    if (!strcmp(ep->params[i].name, name)) return i;
  return -1;
}

/* Leaves of the product tree rooted at n: how many are x, parameter a, parameter b. */
static void product_leaves(const ft_epilogue *ep, int n, int a, int b, int count[3]) {
  const ep_node *e = &ep->nodes[n];
  if (e->kind == N_MUL) {
    for (int i = 0; i < e->nkids; i++) product_leaves(ep, e->kid[i], a, b, count);
    return;
  }
  count[0] += e->kind == N_X;
  count[1] += e->kind == N_PARAM && e->slot == a;
  count[2] += e->kind == N_PARAM && e->slot == b;
}

int ft_ep_fp8_scales(const ft_epilogue *ep, int *sx_slot, int *sw_slot, char *why, size_t why_size) {
  static const char form[] = "e.g. \"relu(x * sx * sw + bias) where row sx, col sw\"";
  const int a = slot_of(ep, "sx"), b = slot_of(ep, "sw");
  if (a < 0 || b < 0) {
    snprintf(why, why_size, "fp8: the epilogue must scale x by sx and sw (%s): '%s' is missing", form, a < 0 ? "sx" : "sw");
    return 0;
  }
  const ft_param_kind ka = ep->params[a].kind, kb = ep->params[b].kind;
  if ((ka != FT_PARAM_SCALAR && ka != FT_PARAM_ROWVEC) || (kb != FT_PARAM_SCALAR && kb != FT_PARAM_COLVEC)) {
    snprintf(why, why_size, "fp8: sx scales x's rows (scalar or row sx), sw W's rows, the output columns (scalar or col sw)");
    return 0;
  }
  int xs = 0, uses_a = 0, uses_b = 0, xnode = -1;
  for (int i = 0; i < ep->nnodes; i++) {
    const ep_node *e = &ep->nodes[i];
    if (e->kind == N_X) xs++, xnode = i;
    uses_a += e->kind == N_PARAM && e->slot == a;
    uses_b += e->kind == N_PARAM && e->slot == b;
  }
  /* The product x belongs to: climb while the parent is a multiplication. */
  int top = xnode;
  for (int moved = xs == 1; moved;) {
    moved = 0;
    for (int i = 0; i < ep->nnodes && !moved; i++)
      if (ep->nodes[i].kind == N_MUL)
        for (int j = 0; j < ep->nodes[i].nkids; j++)
          if (ep->nodes[i].kid[j] == top) top = i, moved = 1;
  }
  int count[3] = {0, 0, 0};
  if (xs == 1) product_leaves(ep, top, a, b, count);
  if (xs != 1 || uses_a != 1 || uses_b != 1 || count[1] != 1 || count[2] != 1) {
    snprintf(why, why_size, "fp8: x must appear once, multiplied by sx and sw, which appear nowhere else (%s)", form);
    return 0;
  }
  *sx_slot = a;
  *sw_slot = b;
  return 1;
}
