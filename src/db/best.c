/* The best launchable result, skipping results of an older kernel source. */
#include "best.h"

#include <string.h>

#include "codegen.h"

int ft_best_source_is_current(const ft_best *b, const ft_epilogue *ep) {
  ft_variant v;
  ft_kernel_src src = {0};
  int current = ft_variant_from_json(b->config_json, &v, NULL) == FT_OK &&
                ft_codegen_variant(&v, ep, &src, NULL) == FT_OK && strcmp(src.hash, b->source_hash) == 0;
  ft_kernel_src_free(&src);
  return current;
}

typedef struct scan {
  const ft_epilogue *ep;
  ft_source_check check;
  void *user;
  ft_best *out;
  int found;
} scan;

static int is_current(const scan *s, const ft_best *b) {
  return s->check ? s->check(s->user, b) : ft_best_source_is_current(b, s->ep);
}

static int take_first_current(void *user, const ft_best *b) {
  scan *s = user;
  if (!is_current(s, b)) return 0;
  *s->out = *b;
  s->found = 1;
  return 1;
}

ft_status ft_best_current(ft_db *db, int64_t device_id, const ft_problem_key *key, const ft_epilogue *ep,
                          ft_source_check check, void *user, ft_best *out, int *stale, ft_err *err) {
  *stale = 0;
  ft_best best;
  FT_TRY(ft_db_best(db, device_id, key, &best, err));
  scan s = {ep, check, user, out, 0};
  if (is_current(&s, &best)) {
    *out = best;
    return FT_OK;
  }
  /* The best was measured with another kernel source: the best-ranked current one. */
  FT_TRY(ft_db_each_candidate(db, &best, take_first_current, &s, err));
  if (s.found) return FT_OK;
  *stale = 1;
  return ft__fail(err, FT_ERR_NOT_FOUND,
                  "only stale results for %lldx%lldx%lld (measured with an older kernel source): tune again",
                  (long long)key->m, (long long)key->n, (long long)key->k);
}
