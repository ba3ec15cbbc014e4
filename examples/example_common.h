/* What the examples share: opening the database and making a plan of the best stored
 * configuration, and the median of 30 CUDA-event-timed calls after 3 warm-ups. */
#ifndef FT_EXAMPLE_COMMON_H
#define FT_EXAMPLE_COMMON_H

#include <cuda_runtime_api.h>
#include <fusedtune.h>
#include <stdio.h>

/* Opens db_path (NULL: the default), looks p up (nearest shape allowed) and makes a plan of it.
 * Returns 0, 3 when nothing is tuned for p, 1 on another error (printed); *ctx is set for
 * ft_close either way. */
static int example_plan(const char *db_path, const ft_problem *p, ft_ctx **ctx, ft_config *cfg, ft_plan **plan) {
  ft_status s = ft_open(db_path, FT_OPEN_READONLY, ctx);
  if (s != FT_OK) {
    fprintf(stderr, "ft_open: %s\n", ft_errmsg(*ctx));
    return 1;
  }
  if ((s = ft_lookup(*ctx, p, FT_LOOKUP_NEAREST, cfg)) != FT_OK) {
    fprintf(stderr, "ft_lookup: %s\n", ft_errmsg(*ctx)); /* the message names its status */
    return s == FT_ERR_NOT_FOUND ? 3 : 1;
  }
  printf("lookup: %s %s (%s, tuned at %lldx%lldx%lld)\n", cfg->strategy, cfg->name, cfg->exact ? "exact" : "nearest",
         (long long)cfg->tuned_m, (long long)cfg->tuned_n, (long long)cfg->tuned_k);
  if ((s = ft_plan_create(*ctx, p, cfg, plan)) != FT_OK) {
    fprintf(stderr, "ft_plan_create: %s\n", ft_errmsg(*ctx));
    return 1;
  }
  return 0;
}

/* Median time in ms of fn(user) enqueued on the default stream. */
static float example_median_ms(void (*fn)(void *), void *user) {
  enum { REPS = 30 };
  float t[REPS];
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int r = -3; r < REPS; r++) {
    cudaEventRecord(e0, 0);
    fn(user);
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    if (r >= 0) cudaEventElapsedTime(&t[r], e0, e1);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  for (int i = 1; i < REPS; i++) /* insertion sort: tiny array */
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      const float tmp = t[j];
      t[j] = t[j - 1];
      t[j - 1] = tmp;
    }
  return t[REPS / 2];
}

#endif
