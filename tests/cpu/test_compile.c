/* NVRTC (no GPU needed): the enumerated variants of the seed and a ragged shape compile for
 * sm_90 (a sample by default, every one with --sweep: tests/cpu/compile_sample.h), a broken source
 * fails with a log, and ptxas resource usage of the leading variants and of the warp-tiled
 * tile configurations (every third by default, all with --sweep). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <time.h>

#include "codegen.h"
#include "compile.h"
#include "compile_sample.h"
#include "family.h"
#include "ft_test.h"

#define ARCH "sm_90"
#define SAMPLE_STRIDE 12     /* the default run's: every 12th variant of a family and split kind */
#define WARP_SAMPLE_STRIDE 3 /* ... and every 3rd warp-tiled tile configuration's ptxas usage */

typedef struct shape {
  const char *name, *epilogue;
  int64_t m, n, k;
} shape;

static const shape k_shapes[] = {
    {"minsub", "minsub", 128, 16384, 16384},
    {"biasrelu", "biasrelu", 1024, 8192, 8192},
    {"ragged", "minsub", 127, 1000, 999},
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Hashes already compiled for an earlier shape: the same variant and epilogue give the same
 * text, compiled once. */
typedef struct seen {
  char (*h)[17];
  int n, cap;
} seen;

static int seen_has(const seen *s, const char *h) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->h[i], h) == 0) return 1;
  return 0;
}

static void seen_add(seen *s, const char *h) {
  if (s->n == s->cap) {
    const int cap = s->cap ? 2 * s->cap : 1024;
    char(*nh)[17] = realloc(s->h, (size_t)cap * sizeof *nh);
    if (!nh) return; /* only costs a duplicate compile later */
    s->h = nh;
    s->cap = cap;
  }
  memcpy(s->h[s->n++], h, 17);
}

/* Sources of the GEMM and epilogue-pass variants of sh that ft_sample_pick keeps at stride,
 * plus its eager steps; returns the count. */
static int make_sources(const shape *sh, const ft_device_limits *lim, int stride, ft_kernel_src **out) {
  ft_err e;
  ft_epilogue *ep = NULL;
  if (ft_ep_parse(sh->epilogue, &ep, &e) != FT_OK) {
    FT_FAIL_AT_("parse %s: %s", sh->epilogue, e.msg);
    return 0;
  }
  ft_variant *g = NULL, *p = NULL;
  int ng = 0, np = 0;
  ASSERT_OK(ft_space_enumerate(FT_VK_GEMM, sh->m, sh->n, sh->k, lim, &g, &ng, &e));
  ASSERT_OK(ft_space_enumerate(FT_VK_EPILOGUE, sh->m, sh->n, sh->k, lim, &p, &np, &e));
  ft_ep_eager plan;
  ASSERT_OK(ft_ep_eager_plan(ep, &plan, &e));
  ft_kernel_src *src = calloc((size_t)(ng + np + plan.nsteps), sizeof *src);
  unsigned char *keep = calloc((size_t)(ng + np) + 1, 1);
  ASSERT_TRUE(src && keep);
  const int kg = keep ? ft_sample_pick(g, ng, stride, keep) : 0;
  const int kp = keep ? ft_sample_pick(p, np, stride, keep + ng) : 0;
  int n = 0;
  for (int i = 0; src && keep && i < ng + np; i++) {
    if (!keep[i]) continue;
    const ft_variant *v = i < ng ? &g[i] : &p[i - ng];
    if (ft_codegen_variant(v, ep, &src[n], &e) == FT_OK)
      n++;
    else
      FT_FAIL_AT_("codegen: %s", e.msg);
  }
  for (int i = 0; src && i < plan.nsteps; i++) {
    if (ft_codegen_eager_step(&plan.steps[i], FT_MATH_FP32, &src[n], &e) == FT_OK)
      n++;
    else
      FT_FAIL_AT_("codegen step: %s", e.msg);
  }
  printf("%-9s %lldx%lldx%lld: %d of %d gemm + %d of %d epilogue-pass variants + %d eager steps\n", sh->name,
         (long long)sh->m, (long long)sh->n, (long long)sh->k, kg, ng, kp, np, plan.nsteps);
  free(keep);
  free(g);
  free(p);
  ft_ep_free(ep);
  *out = src;
  return n;
}

static void compile_shape(const shape *sh, const ft_device_limits *lim, int stride, seen *done, int *total) {
  ft_kernel_src *src = NULL;
  const int n = make_sources(sh, lim, stride, &src);
  ft_compile_job *jobs = calloc((size_t)n + 1, sizeof *jobs);
  int nj = 0;
  for (int i = 0; jobs && i < n; i++) {
    if (seen_has(done, src[i].hash)) continue;
    jobs[nj].src = src[i].text;
    jobs[nj].hash = src[i].hash;
    nj++;
  }
  ft_err e;
  const double t0 = now_s();
  ASSERT_OK(ft_compile_many(NULL, ARCH, jobs, nj, 0, &e));
  const double dt = now_s() - t0;
  int failed = 0;
  for (int i = 0; i < nj; i++) {
    if (jobs[i].status != FT_OK || !jobs[i].cubin || jobs[i].cubin_size == 0) {
      if (failed++ < 3)
        FT_FAIL_AT_("%s: job %d failed: %.2000s", sh->name, i, jobs[i].log ? jobs[i].log : "(no log)");
    } else {
      seen_add(done, jobs[i].hash);
    }
    ft_compile_job_clear(&jobs[i]);
  }
  ASSERT_EQ_INT(failed, 0);
  printf("  compiled %d sources (%d shared with earlier shapes skipped) in %.1f s\n", nj, n - nj, dt);
  *total += nj;
  for (int i = 0; i < n; i++) ft_kernel_src_free(&src[i]);
  free(src);
  free(jobs);
}

static void test_bad_source(void) {
  ft_compile_job job = {0};
  job.src = "extern \"C\" __global__ void ft_gemm() { this is not CUDA; }";
  job.hash = "0000000000000bad";
  ft_err e;
  ASSERT_OK(ft_compile_many(NULL, ARCH, &job, 1, 1, &e));
  ASSERT_EQ_INT(job.status, FT_ERR_COMPILE);
  ASSERT_TRUE(job.cubin == NULL);
  ASSERT_TRUE(job.log != NULL && strstr(job.log, "error") != NULL);
  ft_compile_job_clear(&job);

  void *cubin = (void *)1;
  size_t size = 1;
  char *log = NULL;
  ASSERT_EQ_INT(ft_compile_one("__global__ void f( {", ARCH, &cubin, &size, &log, &e), FT_ERR_COMPILE);
  ASSERT_TRUE(cubin == NULL && size == 0);
  ASSERT_TRUE(log != NULL);
  ASSERT_CONTAINS(e.msg, "NVRTC compile failed");
  free(log);
  ASSERT_EQ_INT(ft_compile_one("int x;", "sm_999", &cubin, &size, &log, &e), FT_ERR_INVALID_ARG);
  ASSERT_TRUE(ft_compile_options("sm_999") == NULL);
  ASSERT_CONTAINS(ft_compile_options(ARCH), "--gpu-architecture=sm_90");
  ASSERT_CONTAINS(ft_compile_options(ARCH), "--ftz=false");
  ASSERT_TRUE(ft_nvrtc_version() >= 12000);
}

/* Identical sources in one batch compile once; every job still gets its own cubin. */
static void test_dedupe(const ft_device_limits *lim) {
  (void)lim;
  ft_variant v = {0};
  v.kind = FT_VK_EPILOGUE, v.pass.block = 256, v.vec = 4, v.pass.ept = 8;
  ft_kernel_src k;
  ft_err e;
  ASSERT_OK(ft_codegen_variant(&v, NULL, &k, &e));
  ft_compile_job jobs[3] = {{0}};
  for (int i = 0; i < 3; i++) jobs[i].src = k.text, jobs[i].hash = k.hash;
  ASSERT_OK(ft_compile_many(NULL, ARCH, jobs, 3, 2, &e));
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ_INT(jobs[i].status, FT_OK);
    ASSERT_TRUE(jobs[i].cubin && jobs[i].cubin_size == jobs[0].cubin_size);
    ASSERT_TRUE(i == 0 || jobs[i].cubin != jobs[0].cubin);
  }
  for (int i = 0; i < 3; i++) ft_compile_job_clear(&jobs[i]);
  ft_kernel_src_free(&k);
}

/* The per-thread register cap ptxas takes from the __launch_bounds__ v is compiled with, as
 * its family computes it (checked against the launch geometry's thread count). */
static int launch_bounds_regs(const ft_variant *v, const shape *sh) {
  ft_launch_geom g;
  ft_variant_geometry(v, sh->m, sh->n, sh->k, &g);
  const int threads = (int)(g.block[0] * g.block[1] * g.block[2]);
  if (threads < 32 || threads > 1024) FT_FAIL_AT_("launch geometry of %d threads", threads);
  return ft_family_of(v)->reg_cap(v);
}

/* What the space promises for every variant it enumerates: no spills, no stack frame, and no
 * more registers than the resident blocks it counted on leave each thread. */
static void check_usage(const ft_variant *v, const shape *sh, const char *name, const ft_kernel_usage *u) {
  const int cap = launch_bounds_regs(v, sh);
  if (u->regs > cap) FT_FAIL_AT_("%s: %d regs above the __launch_bounds__ cap %d", name, u->regs, cap);
  if (u->spill_stores || u->spill_loads || u->stack)
    FT_FAIL_AT_("%s: %d B spill stores, %d B spill loads, %d B stack (%d regs)", name, u->spill_stores,
                u->spill_loads, u->stack, u->regs);
}

/* Every stride-th (all with stride 1) warp-tiled (fp32_warp) tile configuration minsub
 * enumerates (split-K and swizzle aside, with and without stream-K), in enumeration order,
 * passes check_usage: their register model sets __launch_bounds__ close to the limit. */
static void check_warp_spills(const ft_device_limits *lim, int stride) {
  const shape *sh = &k_shapes[0];
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_variant *g = NULL;
  int ng = 0, checked = 0, configs = 0;
  ASSERT_OK(ft_ep_parse(sh->epilogue, &ep, &e));
  ASSERT_OK(ft_space_enumerate(FT_VK_GEMM, sh->m, sh->n, sh->k, lim, &g, &ng, &e));
  const ft_family *warp = ft_family_named("fp32_warp");
  for (int i = 0; i < ng; i++) {
    if (ft_family_of(&g[i]) != warp) continue;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++)
      seen = ft_family_of(&g[j]) == warp && g[j].bm == g[i].bm && g[j].bn == g[i].bn && g[j].bk == g[i].bk &&
             g[j].fp32.tm == g[i].fp32.tm && g[j].fp32.tn == g[i].fp32.tn && g[j].stages == g[i].stages && g[j].vec == g[i].vec &&
             (g[j].fp32.streamk > 0) == (g[i].fp32.streamk > 0);
    if (seen || configs++ % stride != 0) continue;
    ft_kernel_src k;
    ft_kernel_usage u;
    char name[128];
    ft_variant_name(&g[i], name, sizeof name);
    ASSERT_OK(ft_codegen_variant(&g[i], ep, &k, &e));
    if (ft_compile_usage(k.text, ARCH, "ft_gemm", &u, &e) != FT_OK) FT_FAIL_AT_("usage %s: %s", name, e.msg);
    else check_usage(&g[i], sh, name, &u);
    checked++;
    ft_kernel_src_free(&k);
  }
  printf("warp-tiled tile configurations of %s checked for spills: %d of %d\n", sh->name, checked, configs);
  ASSERT_TRUE(checked > 0);
  free(g);
  ft_ep_free(ep);
}

/* ptxas -v of the leading GEMM variants of the seed shapes: registers, spills and stack. */
static void report_usage(const ft_device_limits *lim) {
  for (int s = 0; s < 2; s++) {
    const shape *sh = &k_shapes[s];
    ft_err e;
    ft_epilogue *ep = NULL;
    ft_variant *g = NULL;
    int ng = 0;
    if (ft_ep_parse(sh->epilogue, &ep, &e) != FT_OK) continue;
    ASSERT_OK(ft_space_enumerate(FT_VK_GEMM, sh->m, sh->n, sh->k, lim, &g, &ng, &e));
    printf("ptxas usage, first variants of %s:\n", sh->name);
    for (int i = 0; i < ng && i < 12; i++) {
      ft_kernel_src k;
      ft_kernel_usage u;
      char name[128];
      ft_variant_name(&g[i], name, sizeof name);
      ASSERT_OK(ft_codegen_variant(&g[i], ep, &k, &e));
      if (ft_compile_usage(k.text, ARCH, "ft_gemm", &u, &e) != FT_OK) {
        FT_FAIL_AT_("usage %s: %s", name, e.msg);
      } else {
        printf("  %-44s %3d regs, %4d B stack, %4d B spill stores, %4d B spill loads\n", name,
               u.regs, u.stack, u.spill_stores, u.spill_loads);
        check_usage(&g[i], sh, name, &u);
      }
      ft_kernel_src_free(&k);
    }
    free(g);
    ft_ep_free(ep);
  }
}

int main(int argc, char **argv) {
  const int stride = ft_sample_stride(argc, argv, SAMPLE_STRIDE);
  ft_device_limits lim;
  ft_err e;
  if (ft_limits_for_arch(ARCH, &lim, &e) != FT_OK) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  printf("NVRTC %d, options: %s\n", ft_nvrtc_version(), ft_compile_options(ARCH));
  test_bad_source();
  test_dedupe(&lim);
  report_usage(&lim);
  check_warp_spills(&lim, stride > 1 ? WARP_SAMPLE_STRIDE : 1);
  seen done = {0};
  int total = 0;
  const double t0 = now_s();
  for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++)
    compile_shape(&k_shapes[i], &lim, stride, &done, &total);
  printf("all shapes (%s): %d sources compiled in %.1f s\n", stride > 1 ? "sample" : "sweep", total, now_s() - t0);
  free(done.h);
  return FT_TEST_DONE();
}
