/* The chunked host loops (src/base/parallel.c) and the test data drawn with them (ft_fill_uniform):
 * every chunk runs once over its exact range whatever the thread count, and the data are the
 * values one thread drawing splitmix64 in order gives. No GPU. */
#include <stdint.h>
#include <stdlib.h>

#include "ft_test.h"
#include "parallel.h"
#include "verify.h"

#define MAXC 64

typedef struct seen {
  int calls[MAXC];
  size_t begin[MAXC], end[MAXC];
  unsigned char *touched; /* per index: times covered */
} seen;

static void note(void *user, int chunk, size_t begin, size_t end) {
  seen *s = user;
  __atomic_fetch_add(&s->calls[chunk], 1, __ATOMIC_RELAXED);
  s->begin[chunk] = begin;
  s->end[chunk] = end;
  for (size_t i = begin; i < end; i++) s->touched[i]++; /* chunks are disjoint: no race */
}

static void check_cover(size_t n, int nchunks, int threads) {
  seen s = {{0}, {0}, {0}, calloc(n + 1, 1)};
  ASSERT_TRUE(s.touched != NULL);
  if (!s.touched) return;
  ft_parallel_chunks(n, nchunks, threads, note, &s);
  size_t at = 0;
  for (int c = 0; c < nchunks; c++) {
    ASSERT_EQ_INT(s.calls[c], 1);
    ASSERT_TRUE(s.begin[c] == at); /* contiguous, in order */
    ASSERT_TRUE(s.end[c] >= s.begin[c]);
    /* balanced: every chunk within one element of n / nchunks */
    ASSERT_TRUE(s.end[c] - s.begin[c] <= n / (size_t)nchunks + 1);
    at = s.end[c];
  }
  ASSERT_TRUE(at == n);
  int once = 1;
  for (size_t i = 0; i < n; i++) once &= s.touched[i] == 1;
  ASSERT_TRUE(once);
  free(s.touched);
}

static void test_cover(void) {
  check_cover(1000, 64, 1);
  check_cover(1000, 64, 8);
  check_cover(1000, 7, 3);
  check_cover(5, 64, 8);   /* more chunks than elements: empty chunks still run once */
  check_cover(0, 4, 4);
  check_cover(65537, 1, 16);
  check_cover(1u << 20, 64, 0); /* the default thread count */
  ASSERT_TRUE(ft_parallel_threads() >= 1 && ft_parallel_threads() <= 8);
}

/* The sequential splitmix64 the data were drawn with before the loops ran in chunks. */
static float sequential(uint64_t *s, float lo, float hi) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return lo + (hi - lo) * (float)((z >> 40) * 0x1.0p-24);
}

static void test_fill_matches_sequential(void) {
  const size_t n1 = 300000, n2 = 70001; /* several chunks each, ragged */
  float *a = malloc(n1 * sizeof *a), *b = malloc(n2 * sizeof *b);
  ASSERT_TRUE(a && b);
  if (!a || !b) return;
  uint64_t s = 0x5eed5eedULL, r = s;
  ft_fill_uniform(a, n1, 0.0f, 1.0f, &s);
  ft_fill_uniform(b, n2, -0.25f, 0.25f, &s); /* continues where the first left the state */
  int same = 1, in_range = 1, nonzero = 0;
  for (size_t i = 0; i < n1; i++) {
    same &= a[i] == sequential(&r, 0.0f, 1.0f);
    in_range &= a[i] >= 0.0f && a[i] < 1.0f;
    nonzero += a[i] != 0.0f;
  }
  for (size_t i = 0; i < n2; i++) {
    same &= b[i] == sequential(&r, -0.25f, 0.25f);
    in_range &= b[i] >= -0.25f && b[i] < 0.25f;
  }
  ASSERT_TRUE(same);
  ASSERT_TRUE(in_range);
  ASSERT_TRUE(nonzero > (int)(n1 - 10));
  ASSERT_TRUE(s == r); /* the state advanced by exactly the values drawn */
  free(a);
  free(b);
}

int main(void) {
  test_cover();
  test_fill_matches_sequential();
  return FT_TEST_DONE();
}
