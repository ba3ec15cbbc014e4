/* The table of kernel families and what they share: lookup and argument lists. GPU-free. */
#include "family.h"

#include <stdio.h>
#include <string.h>

extern const ft_family ft_family_fp32_rows, ft_family_fp32_warp, ft_family_tc, ft_family_tc_reduce,
    ft_family_tc_pass, ft_family_tc_norm, ft_family_epilogue_pass, ft_family_reduce_pass, ft_family_gated_pass,
    ft_family_eager_chain;

/* One line per family. Enumeration visits them in this order. */
static const ft_family *const k_families[] = {
    &ft_family_fp32_rows,
    &ft_family_fp32_warp,
    &ft_family_tc,
    &ft_family_tc_reduce,
    &ft_family_tc_pass,
    &ft_family_tc_norm,
    &ft_family_epilogue_pass,
    &ft_family_reduce_pass,
    &ft_family_gated_pass,
    &ft_family_eager_chain,
    NULL,
};

/* Families that existed once, so that a result stored by an older fusedtune gets a message
 * that says what to do instead of "unknown". */
static const struct {
  ft_variant_kind kind;
  int id;
  const char *why;
} k_retired[] = {
    {FT_VK_GEMM, 1, "layout 1 (k-major \"_km\") was removed: layout 3 (\"_w\") replaces it; tune again"},
    {FT_VK_GEMM, 2, "layout 2 (k-major \"_kw\") was removed: layout 3 (\"_w\") replaces it; tune again"},
};

const ft_family *const *ft_families(void) { return k_families; }

const ft_family *ft_family_find(ft_variant_kind kind, int id) {
  for (const ft_family *const *f = k_families; *f; f++)
    if ((*f)->kind == kind && (*f)->id == id) return *f;
  return NULL;
}

const ft_family *ft_family_named(const char *name) {
  for (const ft_family *const *f = k_families; name && *f; f++)
    if (strcmp((*f)->name, name) == 0) return *f;
  return NULL;
}

const ft_family *ft_family_of(const ft_variant *v) { return v ? ft_family_find(v->kind, v->family) : NULL; }

ft_gemm_before ft_variant_gemm_before(const ft_variant *v, ft_lt_prefix *lt) {
  const ft_lt_prefix none = {-1, FT_EP_LT_NONE, -1};
  ft_lt_prefix got = none;
  const ft_family *fam = ft_family_of(v);
  const ft_gemm_before before = fam && fam->gemm_before ? fam->gemm_before(v, &got) : FT_GEMM_IN_KERNEL;
  if (lt) *lt = before == FT_GEMM_CUBLASLT ? got : none;
  return before;
}

int ft_variant_partial_sum(const ft_variant *v, int64_t k) {
  const ft_family *fam = ft_family_of(v);
  return fam && fam->partial_sum ? fam->partial_sum(v, k) : 0;
}

ft_gemm_before ft_family_after_cublas(const ft_variant *v, ft_lt_prefix *lt) {
  (void)v, (void)lt;
  return FT_GEMM_CUBLAS;
}

void ft_family_missing(ft_variant_kind kind, int id, char *why, size_t whylen) {
  if (!why || !whylen) return;
  for (size_t i = 0; i < sizeof k_retired / sizeof k_retired[0]; i++)
    if (k_retired[i].kind == kind && k_retired[i].id == id) {
      snprintf(why, whylen, "%s", k_retired[i].why);
      return;
    }
  snprintf(why, whylen, "layout %d: no kernel family of this kind has it", id);
}

void ft_arg_clear(ft_arg_store *st) { st->used = 0, st->n = 0, st->ntmaps = 0; }

ft_status ft_arg_push_tmap(ft_arg_store *st, const ft_tmap_desc *d, ft_err *err) {
  static const unsigned char none[128];
  if (st->ntmaps == (int)(sizeof st->tmaps / sizeof st->tmaps[0]))
    return ft__fail(err, FT_ERR_INTERNAL, "kernel arguments: more tensor maps than the argument store holds");
  FT_TRY(ft_arg_push(st, none, sizeof none, err));
  st->tmaps[st->ntmaps] = *d;
  st->tmap_arg[st->ntmaps++] = st->n - 1;
  return FT_OK;
}

ft_status ft_arg_push(ft_arg_store *st, const void *value, size_t size, ft_err *err) {
  /* 16-byte aligned offsets (64 for large structs such as tensor maps): enough for every
   * kernel parameter type. */
  const size_t align = size >= 64 ? 64 : 16;
  const size_t at = (st->used + align - 1) / align * align;
  if (st->n == (int)(sizeof st->ptrs / sizeof st->ptrs[0]) || at + size > sizeof st->bytes)
    return ft__fail(err, FT_ERR_INTERNAL, "kernel arguments: more than the argument store holds");
  memcpy(st->bytes + at, value, size);
  st->ptrs[st->n++] = st->bytes + at;
  st->used = at + size;
  return FT_OK;
}
