/* The order of interleaved timing rounds (src/gpu/bench.c ft_bench_round_order): each round a
 * permutation that starts with strategy 0; over (n - 1)! consecutive rounds (from any start)
 * every strategy follows each other one (n - 2)! times, a round's first after the previous
 * round's last, and none follows itself. And the per-round ratio the tuner ranks by. */
#include "bench.h"
#include "ft_test.h"

/* A GPU whose clock changes state halfway through a timing (H200: cuBLAS's GEMM at 1.35 or 1.55
 * ms), between a kernel 2 % faster than cuBLAS and cuBLAS in round 15: 15 of the kernel's calls
 * ran fast, 14 of cuBLAS's. The kernel's median then averages a fast and a slow call, cuBLAS's
 * two slow ones, and their ratio is 0.92; the median of the per-round ratios is the 0.98 of
 * every round. */
static void check_ratio(void) {
  double a[30], b[30];
  for (int i = 0; i < 30; i++) {
    a[i] = 0.98 * (i < 15 ? 1.35 : 1.55) * (1 + 0.001 * ((i + 1) % 3));
    b[i] = (i < 14 ? 1.35 : 1.55) * (1 + 0.001 * (i % 3)); /* cuBLAS, with a little noise */
  }
  const double r = ft_median_ratio(a, b, 30);
  ASSERT_TRUE(r > 0.975 && r < 0.985);
  ASSERT_NEAR(a[0], 0.98 * 1.35 * 1.001, 1e-12); /* the samples are kept */
  ft_timing ta, tb;
  ft_stats(a, 30, &ta);
  ft_stats(b, 30, &tb);
  ASSERT_TRUE(ta.median_ms / tb.median_ms < 0.93); /* what ranking by medians would have made of it */
  ASSERT_NEAR(ft_median_ratio((const double[]){2, 3}, (const double[]){1, 1}, 2), 2.5, 0);
  /* A 0 ms interval (an event pair that recorded nothing between) has no ratio. */
  ASSERT_NEAR(ft_median_ratio((const double[]){0, 3, 2}, (const double[]){1, 0, 1}, 3), 2.0, 0);
  ASSERT_NEAR(ft_median_ratio((const double[]){0}, (const double[]){1}, 1), -1, 0);
}

static void check(int n) {
  int f = 1;
  for (int i = 2; i < n; i++) f *= i; /* (n - 1)! */
  const int per_pair = f / (n > 1 ? n - 1 : 1); /* (n - 2)! */
  for (int start = 0; start < 2 * f; start++) {
    int follows[FT_BENCH_MAX_INTERLEAVED][FT_BENCH_MAX_INTERLEAVED] = {{0}}; /* [after][before] */
    int prev_last = -1;
    for (int r = start - 1; r < start + f; r++) {
      int order[FT_BENCH_MAX_INTERLEAVED], seen = 0;
      ft_bench_round_order(n, r, order); /* r = -1: the round before, cyclically */
      ASSERT_EQ_INT(order[0], 0);
      for (int q = 0; q < n; q++) {
        ASSERT_TRUE(order[q] >= 0 && order[q] < n);
        seen |= 1 << order[q];
      }
      ASSERT_EQ_INT(seen, (1 << n) - 1);
      if (r >= start) { /* the round before start only sets prev_last */
        if (n > 1) ASSERT_TRUE(order[0] != prev_last);
        if (prev_last >= 0 && n > 1) follows[order[0]][prev_last]++;
        for (int q = 1; q < n; q++) follows[order[q]][order[q - 1]]++;
      }
      prev_last = order[n - 1];
    }
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++) ASSERT_EQ_INT(follows[a][b], a == b ? 0 : per_pair);
  }
}

int main(void) {
  for (int n = 2; n <= FT_BENCH_MAX_INTERLEAVED; n++) check(n);
  int one = -1;
  ft_bench_round_order(1, 5, &one);
  ASSERT_EQ_INT(one, 0);
  int two[2];
  ft_bench_round_order(2, 7, two); /* two strategies keep their order: the tuner's pairs */
  ASSERT_TRUE(two[0] == 0 && two[1] == 1);
  check_ratio();
  return FT_TEST_DONE();
}
