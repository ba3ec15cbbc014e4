/* The variant space: which kernel configurations exist, which fit a device and a shape, and
 * how they are launched, by asking each kernel family (src/family/family.h). GPU-free. */
#include "space.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "kernel_abi.h"

#define FT_SPACE_CAP 384 /* enumeration keeps the best-scored this many GEMM variants */

/* ------------------------------------------------------------------------------------------ */
/* Architectures known without a GPU. */

static const struct {
  const char *arch;
  ft_device_limits lim;
} k_arches[] = {
    /* A100: 108 SMs, 163 KB opt-in shared memory per block. */
    {"sm_80", {8, 0, 108, 1024, 166912, 65536}},
    /* RTX 4090 / L40 class: 128 SMs, 99 KB opt-in. */
    {"sm_89", {8, 9, 128, 1024, 101376, 65536}},
    /* H100 / H200: 132 SMs, 227 KB opt-in. */
    {"sm_90", {9, 0, 132, 1024, 232448, 65536}},
    {"sm_90a", {9, 0, 132, 1024, 232448, 65536}}, /* the same device, its wgmma/TMA features named */
};

ft_status ft_limits_for_arch(const char *arch, ft_device_limits *out, ft_err *err) {
  if (!arch || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "limits: NULL argument");
  for (size_t i = 0; i < sizeof k_arches / sizeof k_arches[0]; i++) {
    if (strcmp(arch, k_arches[i].arch) == 0) {
      *out = k_arches[i].lim;
      return FT_OK;
    }
  }
  return ft__fail(err, FT_ERR_UNSUPPORTED, "architecture \"%.32s%s\" is not known to fusedtune (known: sm_80, sm_89, "
                  "sm_90, sm_90a)", arch, strlen(arch) > 32 ? "..." : "");
}

/* ------------------------------------------------------------------------------------------ */
/* Validity (shape-free) and applicability: common rules here, the rest the family's. */

int ft_variant_valid(const ft_variant *v, char *why, size_t whylen) {
  if (!v) FT_WHY("NULL variant");
  if (v->kind != FT_VK_GEMM && v->kind != FT_VK_EPILOGUE) FT_WHY("unknown variant kind %d", (int)v->kind);
  const ft_family *f = ft_family_of(v);
  if (!f) {
    ft_family_missing(v->kind, v->family, why, whylen);
    return 0;
  }
  if (v->math < 0 || v->math >= FT_MATH_COUNT || !(f->maths & (1u << v->math)))
    FT_WHY("math mode %d: the %s kernels do not compute in it", v->math, f->name);
  for (const ft_family *const *o = ft_families(); *o; o++) {
    if ((*o)->params_offset == f->params_offset || (f->params2_size && (*o)->params_offset == f->params2_offset)) continue;
    const unsigned char *p = (const unsigned char *)v + (*o)->params_offset;
    for (size_t i = 0; i < (*o)->params_size; i++)
      if (p[i]) FT_WHY("%s variant with %s parameters set", f->name, (*o)->name);
  }
  return f->valid(v, why, whylen);
}

int ft_variant_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k,
                          const ft_device_limits *lim, char *why, size_t whylen) {
  if (!v || !lim) FT_WHY("NULL variant or limits");
  if (!ft_variant_valid(v, why, whylen)) return 0;
  ft_err shape;
  if (ft_check_shape(m, n, k, &shape) != FT_OK) FT_WHY("%s", shape.msg); /* the one shape rule, its words */
  ft_launch_geom g;
  ft_variant_geometry(v, m, n, k, &g);
  if (g.grid[0] > INT_MAX || g.rgrid[0] > INT_MAX) FT_WHY("grid too large");
  return ft_family_of(v)->applicable(v, m, n, k, lim, why, whylen);
}

/* ------------------------------------------------------------------------------------------ */
/* Geometry. */

static void geometry_init(ft_launch_geom *g) {
  memset(g, 0, sizeof *g);
  for (int i = 0; i < 3; i++)
    g->grid[i] = g->block[i] = g->cluster[i] = g->rgrid[i] = g->rblock[i] = g->ggrid[i] = g->gblock[i] = g->gcluster[i] = 1;
}

int ft_variant_stream_k(const ft_variant *v) {
  const ft_family *f = ft_family_of(v);
  return f && f->stream_k && f->stream_k(v);
}

void ft_variant_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  geometry_init(g);
  const ft_family *f = ft_family_of(v);
  if (f) f->geometry(v, m, n, k, g);
}

void ft_eager_step_geometry(int64_t m, int64_t n, ft_launch_geom *g) {
  geometry_init(g);
  g->block[0] = FT_AUX_BLOCK;
  g->grid[0] = (unsigned)((m * n + (int64_t)FT_AUX_BLOCK * FT_AUX_ELEMS - 1) / ((int64_t)FT_AUX_BLOCK * FT_AUX_ELEMS));
  if (g->grid[0] == 0) g->grid[0] = 1;
}

ft_status ft_check_shape(int64_t m, int64_t n, int64_t k, ft_err *err) {
  if (m < 1 || n < 1 || k < 1)
    return ft__fail(err, FT_ERR_INVALID_ARG, "shape %lldx%lldx%lld: m, n and k must be >= 1",
                    (long long)m, (long long)n, (long long)k);
  if (m > FT_MAX_DIM || n > FT_MAX_DIM || k > FT_MAX_DIM)
    return ft__fail(err, FT_ERR_INVALID_ARG, "shape %lldx%lldx%lld: each dimension must be <= %lld",
                    (long long)m, (long long)n, (long long)k, (long long)FT_MAX_DIM);
  /* Each factor is <= 2^30, so the products below cannot overflow int64. */
  if (m * k > FT_MAX_ELEMS || n * k > FT_MAX_ELEMS || m * n > FT_MAX_ELEMS)
    return ft__fail(err, FT_ERR_INVALID_ARG,
                    "shape %lldx%lldx%lld: a matrix has more than 2^36 elements",
                    (long long)m, (long long)n, (long long)k);
  return FT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Enumeration. */

typedef struct scored {
  ft_variant v;
  double cost; /* modelled time, arbitrary units: lower first */
} scored;

static int cmp_scored(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->cost < y->cost) return -1;
  if (x->cost > y->cost) return 1;
  char nx[96], ny[96];
  ft_variant_name(&x->v, nx, sizeof nx);
  ft_variant_name(&y->v, ny, sizeof ny);
  return strcmp(nx, ny);
}

/* What the families push into: every candidate with its cost, sorted and capped afterwards. */
struct ft_space_sink {
  scored *a;
  int n, cap;
  int full;                 /* FT_SPACE_FULL */
  const ft_epilogue *ep;    /* the problem's epilogue, or NULL */
  ft_ep_cost ec;            /* its cost per element */
};

int ft_space_full(const ft_space_sink *s) { return s->full; }
ft_ep_cost ft_space_epilogue_cost(const ft_space_sink *s) { return s->ec; }
const ft_epilogue *ft_space_epilogue(const ft_space_sink *s) { return s->ep; }

ft_status ft_space_push(ft_space_sink *b, const ft_variant *v, double cost, ft_err *err) {
  if (b->n == b->cap) {
    const int cap = b->cap ? b->cap * 2 : 256;
    scored *na = realloc(b->a, (size_t)cap * sizeof *na);
    if (!na) return ft__fail(err, FT_ERR_NOMEM, "space: out of memory");
    b->a = na;
    b->cap = cap;
  }
  b->a[b->n].v = *v;
  b->a[b->n].cost = cost;
  b->n++;
  return FT_OK;
}

/* Marks (cost = -1) all but keep of the sorted candidates as dropped. Each split factor (and
 * stream-K) keeps its best FT_SPACE_RESERVE first, so the cost model alone cannot remove a
 * whole split factor (or split-free kernels) from what the tuner measures; the rest go by cost. */
#define FT_SPACE_RESERVE 48
static void select_kept(scored *a, int n, int keep) {
  if (n <= keep) return;
  unsigned char *take = calloc((size_t)n, 1);
  int per_split[FT_MAX_SPLIT_K + 1] = {0}, taken = 0;
  if (take) {
    for (int i = 0; i < n && taken < keep; i++)
      if (per_split[ft_variant_stream_k(&a[i].v) ? 0 : a[i].v.split_k]++ < FT_SPACE_RESERVE) take[i] = 1, taken++;
  }
  for (int i = 0; i < n; i++) {
    if (take && take[i]) continue;
    if (taken < keep) {
      taken++;
    } else {
      a[i].cost = -1;
    }
  }
  free(take);
}

ft_status ft_space_enumerate(ft_variant_kind kind, int64_t m, int64_t n, int64_t k,
                             const ft_device_limits *lim, ft_variant **out, int *count, ft_err *err) {
  return ft_space_enumerate_math(kind, m, n, k, FT_MATH_FP32, lim, out, count, err);
}

ft_status ft_space_enumerate_math(ft_variant_kind kind, int64_t m, int64_t n, int64_t k, ft_math math,
                                  const ft_device_limits *lim, ft_variant **out, int *count, ft_err *err) {
  return ft_space_enumerate_costs(kind, m, n, k, math, lim, out, NULL, count, err);
}

ft_status ft_space_enumerate_costs(ft_variant_kind kind, int64_t m, int64_t n, int64_t k, ft_math math,
                                   const ft_device_limits *lim, ft_variant **out, double **costs, int *count,
                                   ft_err *err) {
  return ft_space_enumerate_scope(kind, m, n, k, math, FT_SPACE_PRUNED, lim, out, costs, count, err);
}

/* Every variant kind's families push for the shape in mode math, full or pruned, sorted by cost;
 * b->a is malloc'd (caller frees). */
static ft_status collect(ft_variant_kind kind, int64_t m, int64_t n, int64_t k, ft_math math, int full,
                         const ft_epilogue *ep, const ft_device_limits *lim, ft_space_sink *b, ft_err *err) {
  memset(b, 0, sizeof *b);
  b->full = full;
  b->ep = ep;
  b->ec = ft_ep_cost_of(ep, ft_ep_fast_forms(math));
  ft_status s = FT_OK;
  /* A reduction only by the families that serve reductions, which serve nothing else (and the
   * eager chain, which serves any E). */
  const int reduces = ft_ep_reduction(ep, NULL) != FT_RED_NONE, pairs = ep && ft_ep_uses_x2(ep);
  for (const ft_family *const *f = ft_families(); *f && s == FT_OK; f++)
    if ((*f)->kind == kind && ((*f)->maths & (1u << math)) && ((*f)->any_epilogue || (*f)->reduces == reduces) &&
        (!pairs || (*f)->pair))
      s = (*f)->enumerate(m, n, k, math, lim, b, err);
  if (s != FT_OK) {
    free(b->a);
    b->a = NULL;
    return s;
  }
  if (b->n > 0) qsort(b->a, (size_t)b->n, sizeof *b->a, cmp_scored); /* none: b->a is NULL */
  return FT_OK;
}

static int cmp_variant(const void *a, const void *b) { return memcmp(a, b, sizeof(ft_variant)); }

/* The full space: the pruned one exactly as it is kept (so the exhaustive search times every
 * candidate the default one may), plus the variants only the full enumeration pushes, the
 * cheapest FT_SPACE_FULL_EXTRA of them. Families without pruning rules push the same in both,
 * so theirs is the pruned space. a (pruned, sorted, kept marked) and f (full, sorted) are
 * rewritten: the result is a, n entries, sorted by cost. */
#define FT_SPACE_FULL_EXTRA 1024
static ft_status add_full_only(ft_space_sink *a, const ft_space_sink *f, ft_err *err) {
  ft_variant *seen = malloc(((size_t)a->n + 1) * sizeof *seen);
  if (!seen) return ft__fail(err, FT_ERR_NOMEM, "space: out of memory");
  for (int i = 0; i < a->n; i++) seen[i] = a->a[i].v;
  qsort(seen, (size_t)a->n, sizeof *seen, cmp_variant);
  int kept = 0;
  for (int i = 0; i < a->n; i++)
    if (a->a[i].cost >= 0) a->a[kept++] = a->a[i];
  const int n_pruned = a->n;
  a->n = kept;
  ft_status s = FT_OK;
  for (int i = 0, extra = 0; i < f->n && extra < FT_SPACE_FULL_EXTRA && s == FT_OK; i++) {
    if (bsearch(&f->a[i].v, seen, (size_t)n_pruned, sizeof *seen, cmp_variant)) continue;
    s = ft_space_push(a, &f->a[i].v, f->a[i].cost, err);
    extra++;
  }
  free(seen);
  if (s == FT_OK && a->n > 0) qsort(a->a, (size_t)a->n, sizeof *a->a, cmp_scored);
  return s;
}

ft_status ft_space_enumerate_scope(ft_variant_kind kind, int64_t m, int64_t n, int64_t k, ft_math math,
                                   ft_space_scope scope, const ft_device_limits *lim, ft_variant **out,
                                   double **costs, int *count, ft_err *err) {
  return ft_space_enumerate_ep(kind, m, n, k, math, scope, NULL, lim, out, costs, count, err);
}

ft_status ft_space_enumerate_ep(ft_variant_kind kind, int64_t m, int64_t n, int64_t k, ft_math math,
                                ft_space_scope scope, const ft_epilogue *ep, const ft_device_limits *lim,
                                ft_variant **out, double **costs, int *count, ft_err *err) {
  if (!lim || !out || !count) return ft__fail(err, FT_ERR_INVALID_ARG, "space: NULL argument");
  *out = NULL;
  if (costs) *costs = NULL;
  *count = 0;
  FT_TRY(ft_check_shape(m, n, k, err));
  if (lim->sm_count < 1 || lim->max_threads_per_block < 32 || lim->max_smem_per_block < 1)
    return ft__fail(err, FT_ERR_INVALID_ARG, "space: device limits not filled in");
  if (kind != FT_VK_GEMM && kind != FT_VK_EPILOGUE)
    return ft__fail(err, FT_ERR_INVALID_ARG, "space: unknown variant kind %d", (int)kind);
  ft_space_sink b;
  FT_TRY(collect(kind, m, n, k, math, 0, ep, lim, &b, err));
  if (b.n > 0) select_kept(b.a, b.n, b.n < FT_SPACE_CAP ? b.n : FT_SPACE_CAP); /* the pruned space: the cheapest FT_SPACE_CAP */
  ft_status s = FT_OK;
  if (scope == FT_SPACE_FULL) { /* also where the pruned space is empty: a form only the full one has */
    ft_space_sink f;
    s = collect(kind, m, n, k, math, 1, ep, lim, &f, err);
    if (s == FT_OK) s = add_full_only(&b, &f, err);
    free(f.a);
  }
  int keep = 0;
  for (int i = 0; i < b.n; i++) keep += b.a[i].cost >= 0;
  if (s == FT_OK && keep == 0) {
    free(b.a);
    return ft__fail(err, FT_ERR_UNSUPPORTED, "space: no %s variant fits %lldx%lldx%lld", ft_math_name(math),
                    (long long)m, (long long)n, (long long)k);
  }
  ft_variant *vs = s == FT_OK ? malloc((size_t)keep * sizeof *vs) : NULL;
  double *cs = s == FT_OK && costs ? malloc((size_t)keep * sizeof *cs) : NULL;
  if (s == FT_OK && (!vs || (costs && !cs))) s = ft__fail(err, FT_ERR_NOMEM, "space: out of memory");
  if (s != FT_OK) {
    free(b.a);
    free(vs);
    free(cs);
    return s;
  }
  int j = 0;
  for (int i = 0; i < b.n && j < keep; i++)
    if (b.a[i].cost >= 0) {
      if (cs) cs[j] = b.a[i].cost;
      vs[j++] = b.a[i].v;
    }
  free(b.a);
  *out = vs;
  if (costs) *costs = cs;
  *count = keep;
  return FT_OK;
}

