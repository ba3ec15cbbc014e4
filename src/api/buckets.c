/* M buckets (issue 42): a model serves many M (batch x sequence) at a few N, K. Tuned at a few M
 * of one (N, K, epilogue, math, device), say the powers of two of `tune --shape 1..4096xNxK`,
 * every M is served by the bucket that covers it: the smallest tuned M >= m, beyond the largest
 * the largest. ft_lookup takes it when the exact key is not tuned (ft_config.exact =
 * FT_MATCH_BUCKET, tuned_m the bucket's M). */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "space.h"

typedef struct bucket_scan {
  ft_ctx *ctx;
  const ft_device_limits *lim;
  const ft_problem *p;
  const ft_epilogue *ep;
  ft_best row; /* the usable result of the bucket being looked at */
  int row_found;
  ft_best above, below; /* the smallest usable bucket above m; the largest below */
  int have_above, have_below;
} bucket_scan;

/* Of one bucket's results (fastest first), the first that applies to the asked shape (a bucket's
 * configuration is launched at m, not at its own M) and was measured with today's kernel source. */
static int take_usable(void *user, const ft_best *b) {
  bucket_scan *sc = user;
  ft_variant v;
  char why[128];
  if (ft_variant_from_json(b->config_json, &v, NULL) != FT_OK) return 0;
  if (!ft_variant_applicable(&v, sc->p->m, sc->p->n, sc->p->k, sc->lim, why, sizeof why)) return 0;
  if (!ft__ctx_source_current(sc->ctx, sc->ep, b)) return 0;
  sc->row = *b;
  sc->row_found = 1;
  return 1;
}

/* The bests come by ascending M: the first usable one above m ends the scan. */
static int consider(void *user, const ft_best *best) {
  bucket_scan *sc = user;
  if (best->key.n != sc->p->n || best->key.k != sc->p->k || strcmp(best->key.layout, FT_DB_LAYOUT) != 0 ||
      best->key.m == sc->p->m)
    return 0; /* another N or K; the exact key is the caller's */
  sc->row_found = 0;
  ft_err e;
  if (ft_db_each_candidate(ft__ctx_db(sc->ctx), best, take_usable, sc, &e) != FT_OK || !sc->row_found) return 0;
  if (best->key.m > sc->p->m) {
    sc->above = sc->row;
    sc->have_above = 1;
    return 1;
  }
  sc->below = sc->row;
  sc->have_below = 1;
  return 0;
}

ft_status ft__lookup_bucket(ft_ctx *ctx, int64_t device_id, const ft_device_limits *lim, const ft_problem *p,
                            const ft_epilogue *ep, const ft_problem_key *key, ft_best *out, int *found) {
  *found = 0;
  bucket_scan *sc = calloc(1, sizeof *sc);
  if (!sc) return ft__fail(ft__ctx_err(ctx), FT_ERR_NOMEM, "out of memory");
  sc->ctx = ctx;
  sc->lim = lim;
  sc->p = p;
  sc->ep = ep;
  ft_status s = ft_db_each_best_for_epilogue(ft__ctx_db(ctx), device_id, key->epilogue_hash, key->math, consider, sc,
                                             ft__ctx_err(ctx));
  if (s == FT_OK && (sc->have_above || sc->have_below)) {
    *out = sc->have_above ? sc->above : sc->below;
    *found = 1;
  }
  free(sc);
  return s;
}
