/* Which enumerated variants the NVRTC compile tests build. The default run (CTest label cpu)
 * compiles a sample chosen from the enumeration order alone, so every run compiles the same
 * sources: the leading (likely best) variant of each block tile, and every stride-th variant of
 * each family and split kind (none, split-K, stream-K), so that each family, split kind and
 * block tile is compiled at least once. The sweep (argument --sweep, CTest label sweep) compiles
 * every variant. */
#ifndef FT_COMPILE_SAMPLE_H
#define FT_COMPILE_SAMPLE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "space.h"

/* The stride the test's arguments ask for: 1 (every variant) for --sweep, sample without any;
 * anything else ends the test as a failure rather than run what was not asked for. */
static int ft_sample_stride(int argc, char **argv, int sample) {
  if (argc == 1) return sample;
  if (argc == 2 && strcmp(argv[1], "--sweep") == 0) return 1;
  fprintf(stderr, "usage: %s [--sweep]\n", argv[0]);
  exit(2);
}

/* 0: one block per tile, 1: split-K, 2: stream-K. */
static int ft_sample_split_kind(const ft_variant *v) {
  return ft_variant_stream_k(v) ? 2 : v->split_k > 1 ? 1 : 0;
}

/* The same family, mode and block tile (bm x bn x bk, consumer warpgroups, ping-pong and
 * cluster; the epilogue pass's block): the fields that set how much a block computes. */
static int ft_sample_same_tile(const ft_variant *a, const ft_variant *b) {
  return ft_family_of(a) == ft_family_of(b) && a->math == b->math && a->bm == b->bm && a->bn == b->bn &&
         a->bk == b->bk && a->tc.consumers == b->tc.consumers && a->tc.pingpong == b->tc.pingpong && a->tc.cluster == b->tc.cluster &&
         a->pass.block == b->pass.block;
}

/* Sets keep[i] for the variants of v[0..n) to compile (all of them when stride <= 1); returns
 * how many. */
static int ft_sample_pick(const ft_variant *v, int n, int stride, unsigned char *keep) {
  int kept = 0;
  for (int i = 0; i < n; i++) {
    int rank = 0, lead = 1; /* rank: position among the earlier variants of its family and split kind */
    for (int j = 0; j < i; j++) {
      if (ft_family_of(&v[j]) == ft_family_of(&v[i]) && ft_sample_split_kind(&v[j]) == ft_sample_split_kind(&v[i]))
        rank++;
      if (lead && ft_sample_same_tile(&v[j], &v[i])) lead = 0;
    }
    keep[i] = (unsigned char)(stride <= 1 || lead || rank % stride == 0);
    kept += keep[i];
  }
  return kept;
}

#endif
