/* Family tc_pass: in 3xtf32, the reduction pass (family reduce_pass: softmax, log_softmax,
 * groupnorm, batchnorm in place on y, a one-value row reduction from the workspace) after
 * fusedtune's own tensor-core GEMM instead of cuBLAS SGEMM (FT_FAMILY_TC_PASS, names
 * "tcp_<GEMM>_red_<pass>_3xtf32"). In every tensor-core mode (tf32, bf16, fp16, 3xtf32), batchnorm
 * (and softmax or log_softmax of it) with the pass's gemm: the GEMM also writes each m64 block's
 * column partials of batchnorm's argument from its accumulator (its tc.colstats,
 * kernels_src/tc_colstats.cuh), so the pass's first kernel only merges them and y is read once
 * after the GEMM, by the apply kernel, where cuBLAS + the column pass read it twice. A variant is a family tc variant (its block tc and bn, bk,
 * stages, swizzle) and a family reduce_pass variant (its block red and vec) side by side: every rule
 * is the two families' own, asked of each half. The program holds both: family tc's kernel with
 * the identity epilogue (it stores x W^T in fp32; ft_family.gemm_kernel, launched on geometry's
 * own_gemm grid) and the pass's kernels (the main kernel, and batchnorm's apply kernel as the
 * second), so a plan is one cubin under one source hash. The GEMM stores x W^T whole: no split-K,
 * stream-K, ping-pong (not in 3xtf32 anyway), staged or late form; a one-value reduction runs in
 * one column chunk (cols >= N: the GEMM writes all of x W^T into the workspace). The GEMM may be
 * the pre-split form (x and W split by ft_tc_presplit into the workspace after the pass's own part,
 * geometry's presplit_off; W once while its pointer stays), the fastest 3xtf32 GEMM where it fits.
 * Enumeration pairs
 * each pass the reduction pass enumerates with the few GEMMs family tc's cost model ranks best for
 * the shape with the identity epilogue, the best of each accumulation chunk first (TCP_GEMMS).
 * GPU-free. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_tc.h"
#include "kernel_abi.h"

extern const ft_family ft_family_tc, ft_family_reduce_pass;

/* The GEMMs each pass is paired with: family tc's best-ranked for the shape (pruned space), more in
 * the full one; and the best with the split in the kernel besides (pick_gemms). */
#define TCP_GEMMS 3
#define TCP_GEMMS_FULL 8

/* The variant's halves: family tc's GEMM (block tc; vec and red zero) and family reduce_pass's pass
 * (block red and vec; the GEMM fields zero). */
static ft_variant gemm_part(const ft_variant *v) {
  ft_variant g = *v;
  g.kind = FT_VK_GEMM, g.family = FT_FAMILY_TC, g.vec = 0;
  g.tc.colstats = v->red.gemm; /* the GEMM writes the pass's column partials */
  memset(&g.red, 0, sizeof g.red);
  return g;
}

static ft_variant pass_part(const ft_variant *v) {
  ft_variant p;
  memset(&p, 0, sizeof p);
  p.kind = FT_VK_EPILOGUE, p.family = FT_FAMILY_REDUCE_PASS, p.math = v->math, p.vec = v->vec, p.red = v->red;
  return p;
}

static int tcp_valid(const ft_variant *v, char *why, size_t whylen) {
  if (v->split_k || v->tc.streamk || v->tc.pingpong || v->tc.staged || v->tc.late || v->tc.defer || v->tc.gated ||
      v->tc.dual)
    FT_WHY("tc_pass: the GEMM stores x W^T whole for the pass: split_k, streamk, pingpong, staged, late, defer, gated "
           "and dual do not apply");
  if (v->tc.colstats) FT_WHY("tc_pass: colstats %d: the pass's gemm says it", v->tc.colstats);
  if (v->red.gemm && v->bn % 32) /* tc_colstats.cuh takes the tile's columns in groups of 32 */
    FT_WHY("tc_pass: gemm at bn %d: the column partials take groups of 32 columns", v->bn);
  /* NVRTC for sm_90a, bf16 batchnorm(x + bias) at BN 256 with TMA stores: 192 to 1552 bytes spilled. */
  if (v->red.gemm && v->tc.tstore && v->bn > 128)
    FT_WHY("tc_pass: gemm with TMA stores at bn %d: the column partials beside the tile spill past 128", v->bn);
  if (v->red.gemm != 0 && (v->red.gemm != 1 || v->red.tile <= 0))
    FT_WHY("tc_pass: gemm %d: 1 with the column form (batchnorm's partials from the GEMM), else 0", v->red.gemm);
  if (v->math != FT_MATH_3XTF32 && !v->red.gemm)
    FT_WHY("tc_pass: in %s only the GEMM's column partials (gemm 1): cuBLAS's GEMM before any other pass is as fast",
           ft_math_name((ft_math)v->math));
  const ft_variant g = gemm_part(v);
  ft_variant p = pass_part(v);
  p.red.gemm = 0; /* the pass's own rules; gemm's are above */
  return ft_family_tc.valid(&g, why, whylen) && ft_family_reduce_pass.valid(&p, why, whylen);
}

/* Both halves' rules; a one-value reduction in one chunk (the GEMM computes all of x W^T). */
static int tcp_applicable(const ft_variant *v, int64_t m, int64_t n, int64_t k, const ft_device_limits *lim, char *why,
                          size_t whylen) {
  const ft_variant g = gemm_part(v);
  ft_variant p = pass_part(v);
  p.red.gemm = 0; /* as tcp_valid */
  if (v->red.cols > 0 && v->red.cols < n)
    FT_WHY("tc_pass: cols %d < n %lld: the GEMM writes all of x W^T into the workspace, one chunk", v->red.cols,
           (long long)n);
  if (m > 0x7fffffff || n > 0x7fffffff) FT_WHY("tc_pass: m %lld, n %lld: int sizes", (long long)m, (long long)n);
  return ft_family_tc.applicable(&g, m, n, k, lim, why, whylen) &&
         ft_family_reduce_pass.applicable(&p, m, n, k, lim, why, whylen);
}

/* The pass's geometry (its kernels, workspace, flags, chunk), and family tc's launch as own_gemm. */
static void tcp_geometry(const ft_variant *v, int64_t m, int64_t n, int64_t k, ft_launch_geom *g) {
  const ft_variant gv = gemm_part(v), pv = pass_part(v);
  ft_family_reduce_pass.geometry(&pv, m, n, k, g);
  ft_launch_geom t;
  memset(&t, 0, sizeof t);
  for (int i = 0; i < 3; i++) t.grid[i] = t.block[i] = t.cluster[i] = 1;
  ft_family_tc.geometry(&gv, m, n, k, &t);
  g->own_gemm = 1;
  memcpy(g->ggrid, t.grid, sizeof t.grid);
  memcpy(g->gblock, t.block, sizeof t.block);
  memcpy(g->gcluster, t.cluster, sizeof t.cluster);
  g->gsmem = t.smem;
  g->gpdl = t.pdl; /* the pass after it reads what it wrote: never itself launched so (g->pdl 0) */
  if (t.presplit_kp) tc_presplit_after(g, g->workspace_bytes, &t); /* after the pass's */
}

/* The tighter of the two kernels' caps (each is compiled to its own __launch_bounds__). */
static int tcp_reg_cap(const ft_variant *v) {
  const ft_variant g = gemm_part(v), p = pass_part(v);
  const int a = ft_family_tc.reg_cap(&g), b = ft_family_reduce_pass.reg_cap(&p);
  return a < b ? a : b;
}

/* FtTcCfg for the GEMM, then the pass's #defines (their names do not meet). */
static void tcp_defines(const ft_variant *v, ft_strbuf *b) {
  const ft_variant g = gemm_part(v), p = pass_part(v);
  ft_family_tc.defines(&g, b);
  ft_family_reduce_pass.defines(&p, b);
}

static const char *tcp_reduce_kernel(const ft_variant *v) {
  const ft_variant p = pass_part(v);
  return ft_family_reduce_pass.reduce_kernel(&p);
}

/* TMA reads x and W (16 bytes); y as both kernels need it, or as the pass alone where the GEMM
 * writes into the workspace (a one-value reduction). */
static void tcp_alignment(const ft_variant *v, int m, int n, int k, size_t need[3]) {
  const ft_variant g = gemm_part(v), p = pass_part(v);
  size_t a[3] = {1, 1, 1}, b[3] = {1, 1, 1};
  ft_family_tc.alignment(&g, m, n, k, a);
  ft_family_reduce_pass.alignment(&p, m, n, k, b);
  for (int i = 0; i < 2; i++) need[i] = a[i] > b[i] ? a[i] : b[i];
  need[2] = v->red.cols > 0 || b[2] > a[2] ? b[2] : a[2];
}

static ft_status tcp_kernel_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  const ft_variant p = pass_part(v);
  return ft_family_reduce_pass.kernel_args(&p, io, st, err);
}

static ft_status tcp_reduce_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  const ft_variant p = pass_part(v);
  return ft_family_reduce_pass.reduce_args(&p, io, st, err);
}

/* ft_gemm_tc's arguments for io->y, the matrix the GEMM writes (no workspace, no flags). */
static ft_status tcp_gemm_args(const ft_variant *v, const ft_launch_io *io, ft_arg_store *st, ft_err *err) {
  const ft_variant g = gemm_part(v);
  return ft_family_tc.kernel_args(&g, io, st, err);
}

/* s without its last n characters. */
static void cut(char *s, size_t n) {
  const size_t len = strlen(s);
  s[len > n ? len - n : 0] = '\0';
}

/* "tcp_bm128_bn128_bk32_s4_c1_z8_p132_h16_ts_red_b256_v4_t256_h4_g1_3xtf32": family tc's name of the
 * GEMM ("tc_..." as "tcp_..."), then the pass's ("red_..."), each without its mode, then the mode. */
static int tcp_name(const ft_variant *v, char *buf, size_t len) {
  const ft_variant g = gemm_part(v), p = pass_part(v);
  char tc[160], red[96];
  const char *math = ft_math_name((ft_math)v->math);
  ft_family_tc.variant_name(&g, tc, sizeof tc);
  ft_family_reduce_pass.variant_name(&p, red, sizeof red);
  cut(tc, 1 + strlen(math));
  cut(red, 1 + strlen(math));
  return snprintf(buf, len, "tcp%s_%s_%s", tc + 2, red, math);
}

static int tcp_stream_k(const ft_variant *v) {
  (void)v;
  return 0;
}

/* Bytes the pass moves per element of y as multiply-add equivalents (as family tc's cost counts
 * split-K's slabs: ~50 per byte of the device's, over 132 SMs): in place, a read and a write (the
 * held form) or two reads and a write (the row and column forms); a one-value reduction reads the
 * workspace once. */
static double pass_cost(const ft_variant *p, int64_t m, int64_t n) {
  const double passes = p->red.cols > 0 ? 1.0 : p->red.team > 0 || p->red.gemm ? 2.0 : 3.0;
  return passes * (double)m * (double)n * 4.0 * 50.0 / 132.0;
}

/* The GEMMs to pair with: family tc's best-ranked forms for the identity epilogue that store x W^T
 * whole (tcp_valid), up to max into g and c; *got how many (0: none fits the device or K). */
static ft_status pick_gemms(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim, int partials,
                            ft_variant *g, double *c, int max, int *got, ft_err *err) {
  ft_variant *vs = NULL;
  double *cs = NULL;
  int nv = 0;
  *got = 0;
  ft_err mine;
  const ft_status s = ft_space_enumerate_ep(FT_VK_GEMM, m, n, k, math, FT_SPACE_PRUNED, NULL, lim, &vs, &cs, &nv, &mine);
  if (s == FT_ERR_UNSUPPORTED) return FT_OK;
  if (s != FT_OK) return ft__fail(err, s, "tc_pass: %s", mine.msg);
  /* The cheapest GEMM of each chunk first (vs is in cost order), then the next cheapest of any: the
   * cost model ranks the longest chunk first, and on a long K every chunk-16 GEMM can be beyond the
   * tolerance where a chunk-4 one is within it (KernelBench 98, 1024 x 8192 x 8192: only chunk-16
   * GEMMs were paired, every one wrong_result, SGEMM + the pass served at 0.99x eager). */
  unsigned char *taken = calloc((size_t)nv + 1, 1);
  if (!taken) {
    free(vs);
    free(cs);
    return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  }
  /* Passes 0 and 1 fill max; pass 2 adds the best GEMM with the split in the kernel where none was
   * taken (the cost model ranks the pre-split form first; it keeps the measured in-kernel form
   * beside it, one more candidate per pass). */
  int has_inkernel = 0;
  for (int pass = 0; pass < 3; pass++) {
    unsigned chunks = 0; /* bit c: a GEMM of chunk c taken in this pass (the enumerated chunks are 0..16;
                          * any from 31 on share the last bit) */
    if (pass == 2 && has_inkernel) break;
    for (int i = 0; i < nv && *got < max + (pass == 2); i++) {
      const ft_variant *t = &vs[i];
      if (taken[i] || ft_family_of(t) != &ft_family_tc || t->split_k || t->tc.streamk || t->tc.pingpong ||
          t->tc.staged || t->tc.late || t->tc.defer || t->tc.gated || t->tc.dual || (pass == 2 && t->tc.presplit) ||
          (partials && (t->bn % 32 || (t->tc.tstore && t->bn > 128)))) /* tcp_valid's rules */
        continue;
      /* The partials' own GEMMs (one chunk, 0) by store form instead: the best with TMA stores (BN
       * <= 128 there) beside the best without, whose BN 256 the cost model ranks first. */
      const unsigned bit = partials ? 1u << (t->tc.tstore ? 1 : 0) : 1u << (t->tc.chunk < 31 ? t->tc.chunk : 31);
      if (pass == 0 && (chunks & bit)) continue;
      has_inkernel |= !t->tc.presplit;
      chunks |= bit;
      taken[i] = 1;
      g[*got] = *t, c[*got] = cs[i];
      ++*got;
    }
  }
  free(taken);
  free(vs);
  free(cs);
  return FT_OK;
}

/* Each pass family reduce_pass enumerates for the problem's reduction (in place, or a one-value
 * reduction in one chunk) with each of family tc's best GEMMs: few candidates (the passes times
 * TCP_GEMMS), where the product of the spaces would be thousands. */
/* v with the GEMM's column partials (gemm 1) in the deepest ring that fits beside them: pushed
 * where applicable and not already among pushed[0 .. *npushed) (two GEMMs that differ only in
 * their stages can become one once shortened); the norm form's apply takes rows, so its tile is
 * the first one only. */
static ft_status push_gemm_partials(ft_variant v, const ft_variant *p, double cost, int64_t m, int64_t n, int64_t k,
                                    const ft_device_limits *lim, ft_variant *pushed, int *npushed, ft_space_sink *sink,
                                    ft_err *err) {
  if (p->red.tile <= 0 || (p->red.norm && p->red.tile != 128)) return FT_OK;
  v.red.gemm = 1;
  ft_variant g = gemm_part(&v);
  while (g.stages > 2 && tc_smem(&g) > (size_t)lim->max_smem_per_block) g.stages--;
  v.stages = g.stages;
  if (!ft_variant_applicable(&v, m, n, k, lim, NULL, 0)) return FT_OK;
  for (int i = 0; i < *npushed; i++)
    if (memcmp(&pushed[i], &v, sizeof v) == 0) return FT_OK;
  pushed[(*npushed)++] = v;
  return ft_space_push(sink, &v, cost, err);
}

static ft_status tcp_enumerate(int64_t m, int64_t n, int64_t k, ft_math math, const ft_device_limits *lim,
                               ft_space_sink *sink, ft_err *err) {
  const ft_epilogue *ep = ft_space_epilogue(sink);
  if (!ep || ft_ep_reduction(ep, NULL) == FT_RED_NONE || ft_ep_check_kernels(ep, NULL) != FT_OK) return FT_OK;
  /* Outside 3xtf32 only batchnorm's partials from the GEMM (cuBLAS's GEMM is as fast as family tc's
   * before any other pass); fp8 has no reduction. */
  const int partials_only = math != FT_MATH_3XTF32;
  /* The partials measured slower than cuBLAS + the column pass at 16384 x 4096 x 4096 in bf16 on
   * the H100 and the H200 (docs/BENCHMARKS.md 2026-12-07 (p): the epilogue holds the tensor cores
   * longer than a second read of y takes): the full space only (--strategy exhaustive). */
  const int partials = ft_space_full(sink);
  if (partials_only && !partials) return FT_OK;
  if (partials_only && (math == FT_MATH_FP8 || math == FT_MATH_FP32 ||
                        (ft_ep_reduction(ep, NULL) != FT_RED_BATCHNORM && ft_ep_norm(ep, NULL) != FT_RED_BATCHNORM)))
    return FT_OK;
  /* A one-value reduction family tc_reduce fuses needs no M x N buffer there: tc_pass takes the
   * rest (softmax, log_softmax, groupnorm, batchnorm, a pool inside a one-value reduction). */
  if (ft__tc_fuses_reduction(ep)) return FT_OK;
  ft_variant g[TCP_GEMMS_FULL + 1];
  double gc[TCP_GEMMS_FULL + 1];
  int ng = 0;
  FT_TRY(pick_gemms(m, n, k, math, lim, partials_only, g, gc, partials ? TCP_GEMMS_FULL : TCP_GEMMS, &ng, err));
  if (ng == 0) return FT_OK;
  ft_variant *ps = NULL;
  double *pc = NULL;
  int np = 0;
  ft_err mine;
  ft_status s = ft_space_enumerate_ep(FT_VK_EPILOGUE, m, n, k, math, ft_space_full(sink) ? FT_SPACE_FULL : FT_SPACE_PRUNED,
                                      ep, lim, &ps, &pc, &np, &mine);
  if (s == FT_ERR_UNSUPPORTED) return FT_OK; /* no pass serves it */
  if (s != FT_OK) return ft__fail(err, s, "tc_pass: %s", mine.msg);
  for (int i = 0; i < np && s == FT_OK; i++) {
    const ft_variant *p = &ps[i];
    if (ft_family_of(p) != &ft_family_reduce_pass || (p->red.cols > 0 && p->red.cols < n)) continue;
    ft_variant pushed[TCP_GEMMS_FULL + 1]; /* this pass's partials variants so far */
    int npushed = 0;
    for (int j = 0; j < ng && s == FT_OK; j++) {
      ft_variant v = g[j];
      v.family = FT_FAMILY_TC_PASS, v.vec = p->vec, v.red = p->red;
      /* The pass's own order (its cost) breaks ties between passes after the same GEMM. */
      const double cost = gc[j] + pass_cost(p, m, n) * (1.0 + 0.01 * pc[i]);
      if (partials && p->red.tile > 0) { /* the partials from the GEMM: one read of y fewer */
        ft_variant q = *p;
        q.red.gemm = 1;
        s = push_gemm_partials(v, p, gc[j] + pass_cost(&q, m, n) * (1.0 + 0.01 * pc[i]), m, n, k, lim, pushed, &npushed,
                               sink, err);
      }
      if (s != FT_OK || partials_only || !ft_variant_applicable(&v, m, n, k, lim, NULL, 0)) continue;
      s = ft_space_push(sink, &v, cost, err);
    }
  }
  free(ps);
  free(pc);
  return s;
}

static const ft_json_key k_tcp_keys[] = {{"bn", offsetof(ft_variant, bn)},
                                         {"bk", offsetof(ft_variant, bk)},
                                         {"stages", offsetof(ft_variant, stages)},
                                         {"consumers", offsetof(ft_variant, tc.consumers)},
                                         {"cluster", offsetof(ft_variant, tc.cluster)},
                                         {"swizzle", offsetof(ft_variant, swizzle)},
                                         {"grid", offsetof(ft_variant, tc.grid)},
                                         {"block", offsetof(ft_variant, red.block)},
                                         {"vec", offsetof(ft_variant, vec)},
                                         {NULL, 0}};
static const ft_json_key k_tcp_opt_keys[] = {
    {"layout", offsetof(ft_variant, family)},   {"math", offsetof(ft_variant, math)},
    {"chunk", offsetof(ft_variant, tc.chunk)},  {"aregs", offsetof(ft_variant, tc.aregs)},
    {"tstore", offsetof(ft_variant, tc.tstore)}, {"cols", offsetof(ft_variant, red.cols)},
    {"team", offsetof(ft_variant, red.team)},   {"held", offsetof(ft_variant, red.held)},
    {"groups", offsetof(ft_variant, red.groups)}, {"tile", offsetof(ft_variant, red.tile)},
    {"norm", offsetof(ft_variant, red.norm)},   {"presplit", offsetof(ft_variant, tc.presplit)},
    {"gemm", offsetof(ft_variant, red.gemm)},   {NULL, 0}};

/* Its own GEMM (family tc's kernel in the same program) writes x W^T before the pass. */
static ft_gemm_before tcp_gemm_before(const ft_variant *v, ft_lt_prefix *lt) {
  (void)v, (void)lt;
  return FT_GEMM_OWN;
}

const ft_family ft_family_tc_pass = {
    .name = "tc_pass",
    .kind = FT_VK_GEMM,
    .params_offset = offsetof(ft_variant, tc),
    .params_size = sizeof(ft_tc_params),
    .params2_offset = offsetof(ft_variant, red),
    .params2_size = sizeof(ft_red_params),
    .id = FT_FAMILY_TC_PASS,
    .suffix = "",
    .revision = 1,
    .arch_suffix = "a",
    .maths = (1u << FT_MATH_TF32) | (1u << FT_MATH_BF16) | (1u << FT_MATH_FP16) | (1u << FT_MATH_3XTF32),
    .sources = ft__tc_sources, /* the GEMM's; codegen writes the pass's text before them */
    .kernel = "ft_reduce_pass",
    .gemm_before = tcp_gemm_before,
    .gemm_kernel = "ft_gemm_tc",
    .gemm_args = tcp_gemm_args,
    .reduces = 1,
    .keys = k_tcp_keys,
    .opt_keys = k_tcp_opt_keys,
    .variant_name = tcp_name,
    .valid = tcp_valid,
    .applicable = tcp_applicable,
    .enumerate = tcp_enumerate,
    .reg_cap = tcp_reg_cap,
    .geometry = tcp_geometry,
    .defines = tcp_defines,
    .partial_sum = ft__tc_partial_sum,
    .stream_k = tcp_stream_k,
    .reduce_kernel = tcp_reduce_kernel,
    .alignment = tcp_alignment,
    .kernel_args = tcp_kernel_args,
    .reduce_args = tcp_reduce_args,
};
