/* The GPU tests' quick mode (FT_TEST_QUICK=1: compute-sanitizer's runs, scripts/gpu/sanitize.sh): a
 * few small problems, one variant per kernel form. */
#ifndef FT_TEST_GPU_QUICK_H
#define FT_TEST_GPU_QUICK_H

#include <stdlib.h>
#include <string.h>

#include "family.h"

/* Whether FT_TEST_QUICK=1 is set. */
static inline int ft_test_quick(void) {
  const char *q = getenv("FT_TEST_QUICK");
  return q && q[0] == '1';
}

/* Whether one of v[0..n) differs from x in its stages alone: the same code with another ring length,
 * which the quick mode leaves out. */
static inline int ft_test_stages_only(const ft_variant *v, int n, const ft_variant *x) {
  char a[160], b[160];
  ft_variant u = *x;
  for (int j = 0; j < n; j++) {
    if (v[j].family != x->family) continue;
    u.stages = v[j].stages;
    ft_variant_name(&u, a, sizeof a);
    ft_variant_name(&v[j], b, sizeof b);
    if (strcmp(a, b) == 0) return 1;
  }
  return 0;
}

#endif
