/* ft_stored_load: every stored result read back for a report, each candidate named by its kernel
 * family with its configuration's keys (from the family table, so no family is named here). */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "family.h"
#include "fusedtune_tool.h"

static int field(const ft_variant *v, const ft_json_key *k) { return *(const int *)((const char *)v + k->offset); }

static void push_param(ft_stored_result *r, const char *name, int value) {
  if (r->n_params >= FT_STORED_PARAMS_MAX) return;
  ft_variant_param *p = &r->params[r->n_params++];
  snprintf(p->name, sizeof p->name, "%s", name);
  p->value = value;
}

/* The family and keys of a candidate's configuration; baselines have none. */
static void name_family(ft_stored_result *r) {
  r->family[0] = '\0';
  r->n_params = 0;
  if (!ft_strategy_is_candidate(r->strategy)) return;
  ft_variant v;
  const ft_family *f = ft_variant_from_json(r->config, &v, NULL) == FT_OK ? ft_family_of(&v) : NULL;
  if (!f) {
    snprintf(r->family, sizeof r->family, "unknown");
    return;
  }
  snprintf(r->family, sizeof r->family, "%s", f->name);
  for (const ft_json_key *k = f->keys; k->name; k++) push_param(r, k->name, field(&v, k));
  for (const ft_json_key *k = f->opt_keys; k->name; k++)
    if (field(&v, k)) push_param(r, k->name, field(&v, k));
}

ft_status ft_stored_load(ft_ctx *ctx, const ft_problem *p, unsigned flags, ft_stored **out) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__ctx_err(ctx);
  if (!out) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_stored_load: out is NULL");
  *out = NULL;
  if (flags & ~FT_STORED_ANY_MATH) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_stored_load: unknown flags 0x%x", flags);
  ft_problem_key *key = NULL;
  if (p) {
    const ft_epilogue *ep = NULL;
    FT_TRY(ft__ctx_problem(ctx, p, &ep));
    if (!(key = malloc(sizeof *key))) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
    ft_problem_key_set(key, p->m, p->n, p->k, p->math, ft_ep_canonical(ep), ft_ep_hash(ep));
  }
  ft_stored *s = NULL;
  ft_status st = ft_db_load_stored(ft__ctx_db(ctx), key, (flags & FT_STORED_ANY_MATH) != 0, &s, err);
  free(key);
  if (st != FT_OK) return st;
  for (int i = 0; i < s->n_problems; i++)
    for (int j = 0; j < s->problems[i].n_results; j++) name_family(&s->problems[i].results[j]);
  *out = s;
  return FT_OK;
}

void ft_stored_free(ft_stored *s) { ft_db_stored_free(s); }
