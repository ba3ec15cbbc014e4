/* Every enumerated GEMM and epilogue-pass variant, on shapes with and without ragged tails and
 * three epilogues, against the float64 reference: rel_err <= FT_TOL_FP32 and no unwritten or
 * non-finite element. Epilogue-pass variants run on the output of a plain GEMM variant (the
 * identity epilogue), so they are checked against the same E(x W^T) reference. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <time.h>

#include "codegen.h"
#include "compile.h"
#include "family.h"
#include "launch.h"
#include "ft_test.h"
#include "gpu_launch_check.h"
#include "verify.h"

typedef struct shape {
  int m, n, k;
} shape;

/* 1x1x1 and 17x33x65: everything is tail; 128x256x512: whole tiles and vec 4; 129x257x515:
 * tails in every dimension and vec 1; 64x4096x4096: skinny, split-K; 33x65x130: vec 2. */
static const shape k_shapes[] = {{1, 1, 1},       {17, 33, 65},     {128, 256, 512},
                                 {129, 257, 515}, {64, 4096, 4096}, {33, 65, 130}};
static const char *const k_epilogues[] = {"minsub", "biasrelu", "x + 2*sigmoid(x)"};

typedef struct tally {
  int gemm_ok, epi_ok, failed;
  double worst;
  char worst_name[256];
  int dead; /* the CUDA context is unusable: stop */
} tally;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A small plain GEMM with the identity epilogue: compiled with the batch (the identity must
 * compile for every shape); the epilogue passes run after cuBLAS SGEMM, as in the library. */
static ft_variant raw_gemm_variant(void) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM;
  v.bm = 32, v.bn = 32, v.bk = 8, v.fp32.tm = 4, v.fp32.tn = 4, v.vec = 1, v.stages = 1, v.split_k = 1, v.swizzle = 1;
  return v;
}

typedef struct batch {
  ft_variant *v; /* [0] is the raw GEMM */
  ft_kernel_src *src;
  ft_compile_job *jobs;
  int n;
} batch;

static void batch_free(batch *b) {
  for (int i = 0; i < b->n; i++) {
    ft_kernel_src_free(&b->src[i]);
    ft_compile_job_clear(&b->jobs[i]);
  }
  free(b->v);
  free(b->src);
  free(b->jobs);
  memset(b, 0, sizeof *b);
}

/* Warp-tiled (fp32_warp) variants the enumeration leaves out of small shapes (tiles of 64 and
 * more are "implausible" there) but that ft_lookup's nearest match may still launch on them:
 * each is added where it applies, so every kernel family meets every tail. The stream-K ones
 * split the units unevenly on purpose: 3, 7 and 5 blocks leave tiles shared by two or three
 * blocks, blocks inside one tile, and blocks with no work (fewer units than blocks: 1x1x1, and
 * 17x33x65 with 7 blocks on its 5 units). */
#define MAX_EXTRA 12
static int extra_warp_variants(const shape *sh, const ft_device_limits *lim, ft_variant out[MAX_EXTRA]) {
  static const int cfg[][8] = {/* bm, bn, bk, tm, tn, split_k, stages, streamk */
                               {128, 128, 8, 16, 8, 1, 1, 0},  {128, 128, 16, 8, 16, 2, 1, 0},
                               {64, 64, 16, 8, 8, 1, 1, 0},    {256, 128, 8, 16, 8, 3, 1, 0},
                               {128, 128, 8, 16, 8, 1, 2, 0},  {128, 256, 8, 8, 16, 4, 2, 0},
                               {128, 128, 8, 16, 8, 1, 2, 3},  {64, 64, 16, 8, 8, 1, 1, 7},
                               {128, 64, 8, 8, 8, 1, 2, 5},    {128, 256, 16, 8, 16, 1, 1, 132}};
  int n = 0;
  for (size_t i = 0; i < sizeof cfg / sizeof cfg[0] && n < MAX_EXTRA; i++) {
    ft_variant v = {0};
    v.kind = FT_VK_GEMM, v.family = ft_family_named("fp32_warp")->id, v.stages = cfg[i][6], v.swizzle = 1;
    v.bm = cfg[i][0], v.bn = cfg[i][1], v.bk = cfg[i][2], v.fp32.tm = cfg[i][3], v.fp32.tn = cfg[i][4];
    v.split_k = cfg[i][5], v.fp32.streamk = cfg[i][7];
    v.vec = sh->k % 4 == 0 ? 4 : sh->k % 2 == 0 ? 2 : 1;
    if (ft_variant_applicable(&v, sh->m, sh->n, sh->k, lim, NULL, 0)) out[n++] = v;
  }
  return n;
}

/* Enumerates, generates and compiles every variant of (shape, epilogue). */
static ft_status build_batch(ft_gpu *g, const shape *sh, const ft_epilogue *ep, batch *b, ft_err *e) {
  const ft_device_limits *lim = ft_gpu_limits(g);
  ft_variant *gv = NULL, *pv = NULL;
  int ng = 0, np = 0;
  FT_TRY(ft_space_enumerate(FT_VK_GEMM, sh->m, sh->n, sh->k, lim, &gv, &ng, e));
  /* The passes for this epilogue: after cuBLAS, and after cuBLASLt's bias GEMM where E adds a bias. */
  ft_status s = ft_space_enumerate_ep(FT_VK_EPILOGUE, sh->m, sh->n, sh->k, FT_MATH_FP32, FT_SPACE_PRUNED, ep, lim, &pv,
                                      NULL, &np, e);
  /* FT_TEST_FAMILY=NAME (e.g. fp32_warp): only the GEMM variants of that kernel family, no
   * epilogue passes (a quick check of one family). */
  const char *only = getenv("FT_TEST_FAMILY");
  if (s == FT_OK && only && only[0]) {
    int kept = 0;
    for (int i = 0; i < ng; i++)
      if (!strcmp(ft_family_of(&gv[i])->name, only)) gv[kept++] = gv[i];
    ng = kept;
    np = 0;
  }
  ft_variant extra[MAX_EXTRA];
  const int nx = only && only[0] != '3' ? 0 : extra_warp_variants(sh, lim, extra);
  const int n = 1 + ng + nx + np;
  b->v = calloc((size_t)n, sizeof *b->v);
  b->src = calloc((size_t)n, sizeof *b->src);
  b->jobs = calloc((size_t)n, sizeof *b->jobs);
  if (s == FT_OK && (!b->v || !b->src || !b->jobs)) s = ft__fail(e, FT_ERR_NOMEM, "test: out of memory");
  if (s == FT_OK) {
    b->v[0] = raw_gemm_variant();
    memcpy(b->v + 1, gv, (size_t)ng * sizeof *gv);
    memcpy(b->v + 1 + ng, extra, (size_t)nx * sizeof *extra);
    memcpy(b->v + 1 + ng + nx, pv, (size_t)np * sizeof *pv);
  }
  free(gv);
  free(pv);
  for (int i = 0; s == FT_OK && i < n; i++) {
    s = ft_codegen_variant(&b->v[i], i == 0 ? NULL : ep, &b->src[i], e);
    if (s == FT_OK) {
      b->jobs[i].src = b->src[i].text;
      b->jobs[i].hash = b->src[i].hash;
      b->jobs[i].arch_suffix = b->src[i].arch_suffix;
      b->n = i + 1;
    }
  }
  if (s == FT_OK) s = ft_compile_many(NULL, ft_gpu_arch(g), b->jobs, b->n, 0, e);
  return s;
}

/* Runs variant i of b through the library's launch path (an epilogue pass after cuBLAS SGEMM)
 * on poisoned output, with NaN in every workspace byte first (a partial the reduction reads but
 * no block wrote shows), and checks it. */
static ft_status run_variant(ft_gpu *g, const batch *b, int i, ft_pdata *d, ft_check *chk, ft_err *e) {
  return ft_test_launch_check(g, &b->v[i], &b->jobs[i], &b->src[i], d, chk, e);
}

static void record(tally *t, const ft_variant *v, const char *what, const ft_check *c, ft_status s,
                   const char *msg) {
  char name[128];
  ft_variant_name(v, name, sizeof name);
  if (s != FT_OK || c->bad != 0 || !(c->rel_err <= FT_TOL_FP32)) {
    t->failed++;
    if (s != FT_OK)
      FT_FAIL_AT_("%s %s: %s", what, name, msg);
    else
      FT_FAIL_AT_("%s %s: rel_err %.3g, max_abs %.3g, %lld bad", what, name, c->rel_err,
                  c->max_abs_err, (long long)c->bad);
    if (s == FT_ERR_CUDA) t->dead = 1; /* a fault poisons the context for every later launch */
    return;
  }
  if (v->kind == FT_VK_GEMM)
    t->gemm_ok++;
  else
    t->epi_ok++;
  if (c->rel_err > t->worst) {
    t->worst = c->rel_err;
    snprintf(t->worst_name, sizeof t->worst_name, "%s %s", what, name);
  }
}

static void run_case(ft_gpu *g, const shape *sh, const char *eptext, tally *t) {
  char what[96];
  snprintf(what, sizeof what, "%dx%dx%d [%s]", sh->m, sh->n, sh->k, eptext);
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  batch b = {0};
  if (ft_ep_parse(eptext, &ep, &e) != FT_OK || ft_pdata_create(g, sh->m, sh->n, sh->k, ep, FT_MATH_FP32, 1234, &d, &e) != FT_OK) {
    FT_FAIL_AT_("%s: setup: %s", what, e.msg);
    goto done;
  }
  const double t0 = now_s();
  if (build_batch(g, sh, ep, &b, &e) != FT_OK) {
    FT_FAIL_AT_("%s: build: %s", what, e.msg);
    goto done;
  }
  const double t1 = now_s();
  if (b.jobs[0].status != FT_OK) {
    FT_FAIL_AT_("%s: raw GEMM: %s", what, b.jobs[0].log ? b.jobs[0].log : e.msg);
    goto done;
  }
  const int before = t->failed;
  for (int i = 1; i < b.n && !t->dead; i++) {
    ft_check c = {0};
    ft__err_clear(&e);
    ft_status s = b.jobs[i].status;
    if (s == FT_OK) s = run_variant(g, &b, i, d, &c, &e);
    record(t, &b.v[i], what, &c, s, b.jobs[i].status != FT_OK && b.jobs[i].log ? b.jobs[i].log : e.msg);
  }
  printf("%-36s %4d variants, %d failed (compile %.1f s, run %.1f s)\n", what, b.n - 1,
         t->failed - before, t1 - t0, now_s() - t1);
  fflush(stdout);
done:
  batch_free(&b);
  ft_pdata_free(d);
  ft_ep_free(ep);
}

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_GPU(g);
  printf("device %s (%s), NVRTC %d\n", ft_gpu_info(g)->name, ft_gpu_arch(g), ft_nvrtc_version());
  tally t = {0};
  /* Under compute-sanitizer, which is slow, the suite runs in parts: FT_TEST_QUICK=1 takes one
   * epilogue and leaves out 64x4096x4096; FT_TEST_SHAPE=MxNxK takes that shape alone. */
  const char *quick = getenv("FT_TEST_QUICK"), *only = getenv("FT_TEST_SHAPE");
  const int is_quick = quick && quick[0] == '1';
  const size_t n_epi = is_quick ? 1 : sizeof k_epilogues / sizeof k_epilogues[0];
  for (size_t ei = 0; ei < n_epi && !t.dead; ei++)
    for (size_t si = 0; si < sizeof k_shapes / sizeof k_shapes[0] && !t.dead; si++) {
      char name[64];
      snprintf(name, sizeof name, "%dx%dx%d", k_shapes[si].m, k_shapes[si].n, k_shapes[si].k);
      if (only ? strcmp(only, name) == 0 : !is_quick || k_shapes[si].k < 4096)
        run_case(g, &k_shapes[si], k_epilogues[ei], &t);
    }
  printf("summary: %d GEMM and %d epilogue-pass runs correct, %d failed; worst rel_err %.3g (%s)\n",
         t.gemm_ok, t.epi_ok, t.failed, t.worst, t.worst_name[0] ? t.worst_name : "-");
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
