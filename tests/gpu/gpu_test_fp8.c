/* GPU: the fp8 mode. The quantizer's kernels against its host model (src/epilogue/e4m3.c), byte for byte
 * and scale for scale, per row and per tensor, bf16, fp16 and fp32 sources, on every path the
 * host picks (16-byte chunks held in registers or read twice, one element at a time for ragged
 * rows and unaligned pointers; k_qcases), with zero rows, -0, tiny values and scales far from
 * 1 among the data; its argument checks. Every enumerated fp8 variant (tensor-core kernels,
 * epilogue passes after cuBLASLt's FP8 GEMM) on ragged shapes (K and N multiples of 16) with
 * four scaled epilogues, output NaN-poisoned, against the float64 reference of the e4m3 values
 * and scales: within twice the error of the exact result rounded to bf16, plus 2^-12; the
 * end-to-end error against the unquantized bf16 layer printed per scaling. A plan of each kind
 * launched through ft_plan_launch_typed, and its refusals; with an e4m3 y (codes and row scales
 * against the host model of the bf16 y's quantization). FT_TEST_QUICK=1 leaves out the
 * variants' run. */
#include <unistd.h>

#include "e4m3.h"
#include "ft_test.h"
#include "gpu_launch_check.h"
#include "numbers.h"

/* A quantizer case: the source's dtype, and src / dst that many elements / bytes past an aligned
 * allocation (1: the one-element path, whatever cols is). */
typedef struct qcase {
  int64_t rows, cols;
  ft_dtype dt;
  int src_off, dst_off;
} qcase;

/* Each case per row and per tensor, byte for byte and scale for scale against the host model.
 * Per row with 16-byte chunks: a chunk a thread (16x4096), two (128x16384), eight (4096x4096,
 * 1024x8192: the rows' threads past what the SMs hold), rows read twice (65544 bf16 / 32772 fp32
 * columns: over 8192 chunks), many short rows (a few threads per row), fp16. One element at a
 * time: cols not a multiple of the chunk (ragged, rows of one column), unaligned src or dst, and
 * rows read twice (100003). */
static const qcase k_qcases[] = {
    {16, 4096, FT_DTYPE_BF16, 0, 0},    {128, 16384, FT_DTYPE_BF16, 0, 0}, {4096, 4096, FT_DTYPE_BF16, 0, 0},
    {1024, 8192, FT_DTYPE_F16, 0, 0},   {2, 65544, FT_DTYPE_BF16, 0, 0},   {3, 32772, FT_DTYPE_F32, 0, 0},
    {300, 4096, FT_DTYPE_F32, 0, 0},    {70001, 16, FT_DTYPE_BF16, 0, 0},  {5000, 8, FT_DTYPE_F32, 0, 0},
    {1, 16, FT_DTYPE_BF16, 0, 0},       {37, 129, FT_DTYPE_BF16, 0, 0},    {1024, 1000, FT_DTYPE_F32, 0, 0},
    {3000, 1, FT_DTYPE_BF16, 0, 0},     {5, 1, FT_DTYPE_F32, 0, 0},        {2, 100003, FT_DTYPE_BF16, 0, 0},
    {64, 4096, FT_DTYPE_BF16, 1, 0},    {64, 4096, FT_DTYPE_F32, 0, 1},    {33, 1040, FT_DTYPE_F16, 3, 5},
    {3, 16384, FT_DTYPE_F32, 0, 0}};

static void test_quantizer(ft_ctx *ctx) {
  ft_quantizer *q = NULL;
  ft_status st = ft_quantizer_create(ctx, &q);
  if (st != FT_OK) fprintf(stderr, "ft_quantizer_create: %s\n", ft_errmsg(ctx));
  ASSERT_OK(st);
  if (!q) return;
  uint64_t seed = 5;
  for (size_t ci = 0; ci < sizeof k_qcases / sizeof *k_qcases; ci++)
    for (int per_row = 0; per_row < 2; per_row++) {
      const qcase qc = k_qcases[ci];
      const int64_t r = qc.rows, c = qc.cols;
      const size_t n = (size_t)(r * c), esz = qc.dt == FT_DTYPE_F32 ? 4 : 2;
      float *f = malloc(n * sizeof *f);
      void *h = malloc(n * esz);
      uint8_t *want = malloc(n), *got = malloc(n);
      float *ws = malloc((size_t)r * sizeof *ws), *gs = malloc((size_t)r * sizeof *gs);
      ft_fill_uniform(f, n, -3.0f, 3.0f, &seed);
      for (size_t i = 0; i < n; i++) {
        /* Rows of different amax, all-zero rows, rows far from 1 (fp16: within its range), -0 and
         * tiny values among the others. */
        const float wide[] = {1.0f, 0x1p-100f, 0x1p100f, 0.0f, 0x1p-40f};
        const float narrow[] = {1.0f, 0x1p-10f, 0x1p5f, 0.0f, 1.0f};
        const size_t row = i / (size_t)c;
        float v = f[i] * (float)(1 + i % 7) * (qc.dt == FT_DTYPE_F16 ? narrow : wide)[row % 5];
        if (i % 97 == 5) v = -0.0f;
        if (i % 89 == 3) v *= 1e-30f;
        if (qc.dt == FT_DTYPE_F32) ((float *)h)[i] = v;
        else ((uint16_t *)h)[i] = qc.dt == FT_DTYPE_BF16 ? ft_f32_to_bf16(v) : ft_f32_to_f16(v);
      }
      ft_e4m3_quantize_model(h, qc.dt, r, c, per_row, want, ws);
      char *dsrc = NULL, *ddst = NULL;
      float *dsc = NULL;
      ASSERT_TRUE(cudaMalloc((void **)&dsrc, (n + 8) * esz) == cudaSuccess &&
                  cudaMalloc((void **)&ddst, n + 8) == cudaSuccess &&
                  cudaMalloc((void **)&dsc, (size_t)r * sizeof *dsc) == cudaSuccess);
      char *src = dsrc + (size_t)qc.src_off * esz, *dst = ddst + qc.dst_off;
      cudaMemcpy(src, h, n * esz, cudaMemcpyHostToDevice);
      cudaMemset(ddst, 0xff, n + 8); /* poisoned: NaN codes */
      ASSERT_OK(ft_quantize_e4m3(q, src, qc.dt, r, c, per_row ? FT_SCALE_ROW : FT_SCALE_TENSOR, dst, dsc, 0));
      ASSERT_TRUE(cudaDeviceSynchronize() == cudaSuccess);
      cudaMemcpy(got, dst, n, cudaMemcpyDeviceToHost);
      cudaMemcpy(gs, dsc, (size_t)(per_row ? r : 1) * sizeof *gs, cudaMemcpyDeviceToHost);
      size_t diff = 0, sdiff = 0;
      for (size_t i = 0; i < n; i++) diff += got[i] != want[i];
      for (int64_t i = 0; i < (per_row ? r : 1); i++) sdiff += memcmp(&gs[i], &ws[i], sizeof *gs) != 0;
      if (diff || sdiff)
        FT_FAIL_AT_("quantizer %lldx%lld %s (src +%d, dst +%d) %s: %zu codes and %zu scales differ from the model",
                    (long long)r, (long long)c, ft_dtype_name(qc.dt), qc.src_off, qc.dst_off,
                    per_row ? "per row" : "per tensor", diff, sdiff);
      cudaFree(dsrc), cudaFree(ddst), cudaFree(dsc);
      free(f), free(h), free(want), free(got), free(ws), free(gs);
    }
  /* Refusals name what is wrong, launch nothing. */
  float *dsc = NULL;
  cudaMalloc((void **)&dsc, 64);
  ASSERT_EQ_INT(ft_quantize_e4m3(q, dsc, FT_DTYPE_E4M3, 1, 16, FT_SCALE_ROW, dsc, dsc, 0), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "src is e4m3: bf16, fp16 or fp32 only");
  ASSERT_EQ_INT(ft_quantize_e4m3(q, dsc, FT_DTYPE_BF16, 0, 16, FT_SCALE_ROW, dsc, dsc, 0), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_quantize_e4m3(q, NULL, FT_DTYPE_BF16, 1, 16, FT_SCALE_ROW, dsc, dsc, 0), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_quantize_e4m3(q, (char *)dsc + 1, FT_DTYPE_BF16, 1, 16, FT_SCALE_ROW, dsc, dsc, 0),
                FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "is not aligned to its 2-byte elements");
  cudaFree(dsc);
  ft_quantizer_destroy(q);
}

typedef struct shape {
  int m, n, k;
} shape;

/* The last: more tiles than the 132 blocks at every width, so that ping-pong's second consumer
 * takes items (its turn, its seek past the other's k tiles). */
static const shape k_shapes[] = {{127, 1008, 1008}, {1, 256, 64}, {129, 272, 48}, {333, 528, 2064}, {645, 3088, 272}};
static const char *const k_epilogues[] = {
    "relu(x * sx * sw + bias) where row sx, col sw", "min(x * sx * sw + bias, c) - c where row sx, col sw, c = 2",
    "x * sx * sw where scalar sx, scalar sw", "silu(sw * x * sx) where row sx, scalar sw"};

/* The error of the exact result rounded once to bf16: what an ideal kernel has. */
static double ideal_error(const ft_pdata *d) {
  double e2 = 0, r2 = 0;
  for (size_t i = 0; i < (size_t)d->m * d->n; i++) {
    const double r = d->ref[i], y = ft_bf16_to_f32(ft_f32_to_bf16((float)r));
    if (!isfinite(r)) continue;
    e2 += (y - r) * (y - r), r2 += r * r;
  }
  return r2 > 0 ? sqrt(e2 / r2) : 0;
}

/* The fused tensor-core variants, then the epilogue passes after cuBLASLt's FP8 GEMM. */
static ft_status enumerate_fp8(const shape *sh, ft_gpu *g, ft_variant **out, int *count, ft_err *e) {
  ft_variant *v[2] = {NULL, NULL};
  int n[2] = {0, 0};
  ft_status st = ft_space_enumerate_math(FT_VK_GEMM, sh->m, sh->n, sh->k, FT_MATH_FP8, ft_gpu_limits(g), &v[0], &n[0], e);
  if (st == FT_OK)
    st = ft_space_enumerate_math(FT_VK_EPILOGUE, sh->m, sh->n, sh->k, FT_MATH_FP8, ft_gpu_limits(g), &v[1], &n[1], e);
  ft_variant *all = st == FT_OK ? realloc(v[0], (size_t)(n[0] + n[1] + 1) * sizeof *all) : NULL;
  if (all) memcpy(all + n[0], v[1], (size_t)n[1] * sizeof *all), v[0] = NULL;
  free(v[0]), free(v[1]);
  *out = all, *count = all ? n[0] + n[1] : 0;
  return st != FT_OK ? st : all ? FT_OK : FT_ERR_NOMEM;
}

static void test_kernels(ft_gpu *g, ft_db *db) {
  int ok = 0, failed = 0;
  double worst = 0;
  for (size_t si = 0; si < sizeof k_shapes / sizeof *k_shapes; si++)
    for (size_t ei = 0; ei < sizeof k_epilogues / sizeof *k_epilogues; ei++) {
      if ((si + ei) % 2) continue; /* two epilogues per shape, each epilogue on two shapes */
      const shape sh = k_shapes[si];
      ft_err e;
      ft_epilogue *ep = NULL;
      ASSERT_OK(ft_ep_parse(k_epilogues[ei], &ep, &e));
      ft_pdata *d = NULL;
      ft_status st = ft_pdata_create(g, sh.m, sh.n, sh.k, ep, FT_MATH_FP8, 41, &d, &e);
      if (st != FT_OK) FT_FAIL_AT_("pdata %dx%dx%d: %s", sh.m, sh.n, sh.k, e.msg);
      ft_variant *v = NULL;
      int n = 0;
      if (st == FT_OK) ASSERT_OK(enumerate_fp8(&sh, g, &v, &n, &e));
      ft_kernel_src *src = calloc((size_t)n + 1, sizeof *src);
      ft_compile_job *jobs = calloc((size_t)n + 1, sizeof *jobs);
      for (int i = 0; i < n; i++) {
        ASSERT_OK(ft_codegen_variant(&v[i], ep, &src[i], &e));
        jobs[i].src = src[i].text, jobs[i].hash = src[i].hash, jobs[i].arch_suffix = src[i].arch_suffix;
      }
      if (n) ASSERT_OK(ft_compile_many(db, ft_gpu_arch(g), jobs, n, 0, &e));
      const double ideal = d ? ideal_error(d) : 0, tol = 2 * ideal + 0x1p-12;
      double e2e_best = INFINITY;
      for (int i = 0; i < n; i++) {
        char name[128];
        ft_variant_name(&v[i], name, sizeof name);
        ft_check chk = {0, 0, 0}, e2e = {0, 0, 0};
        if (jobs[i].status != FT_OK) {
          FT_FAIL_AT_("%s: does not compile: %.300s", name, jobs[i].log ? jobs[i].log : "");
          failed++;
          continue;
        }
        st = ft_test_launch_check(g, &v[i], &jobs[i], &src[i], d, &chk, &e);
        if (st == FT_OK) st = ft_pdata_check_e2e(d, &e2e, &e);
        if (st != FT_OK || !(chk.rel_err <= tol)) {
          FT_FAIL_AT_("%dx%dx%d %s %s: rel %.3g > tol %.3g (bad %lld) %s", sh.m, sh.n, sh.k, k_epilogues[ei], name,
                      chk.rel_err, tol, (long long)chk.bad, st == FT_OK ? "" : e.msg);
          failed++;
        } else {
          ok++;
          if (chk.rel_err / tol > worst) worst = chk.rel_err / tol;
          if (e2e.rel_err < e2e_best) e2e_best = e2e.rel_err;
        }
        ft_compile_job_clear(&jobs[i]);
        ft_kernel_src_free(&src[i]);
      }
      printf("%-60s %4dx%5dx%5d: %d variants, ideal %.3g, end-to-end vs bf16 %.3g\n", k_epilogues[ei], sh.m, sh.n,
             sh.k, n, ideal, e2e_best);
      free(src), free(jobs), free(v);
      ft_pdata_free(d);
      ft_ep_free(ep);
    }
  printf("fp8 kernels: %d correct, %d failed; worst error / tolerance %.3f\n", ok, failed, worst);
  ASSERT_TRUE(ok > 0);
}

/* The quantizer then the fused kernel, back to back on one stream as a layer runs them: the
 * kernel is launched with programmatic stream serialization and the quantizer lets it start early
 * (griddepcontrol), so it must wait for the quantizer's codes and scales before reading them.
 * Two inputs alternate over the same codes and scales buffers, with no synchronization between
 * the calls; every call's y must be bit for bit what that input gave synchronized. */
static void check_quantize_then_gemm(ft_ctx *ctx, ft_plan *plan, const ft_typed_args *a, int m, int n, int k) {
  ft_quantizer *q = NULL;
  ASSERT_OK(ft_quantizer_create(ctx, &q));
  if (!q) return;
  enum { kCalls = 40 };
  const size_t xn = (size_t)m * (size_t)k, yb = (size_t)m * (size_t)n * 2;
  uint16_t *hx = malloc(2 * xn * sizeof *hx);
  float *f = malloc(2 * xn * sizeof *f);
  uint64_t seed = 11;
  ft_fill_uniform(f, 2 * xn, -2.0f, 2.0f, &seed);
  for (size_t i = 0; i < 2 * xn; i++) hx[i] = ft_f32_to_bf16(f[i] * (i < xn ? 1.0f : 3.0f));
  void *dsrc = NULL, *dys = NULL;
  ASSERT_TRUE(cudaMalloc(&dsrc, 2 * xn * 2) == cudaSuccess && cudaMalloc(&dys, (kCalls + 2) * yb) == cudaSuccess);
  unsigned char *want = malloc(2 * yb), *got = malloc(kCalls * yb);
  if (dsrc && dys && hx && want && got) {
    cudaMemcpy(dsrc, hx, 2 * xn * 2, cudaMemcpyHostToDevice);
    for (int call = 0; call < kCalls + 2; call++) { /* the first two synchronized: the references */
      const char *src = (const char *)dsrc + (size_t)(call % 2) * xn * 2;
      ASSERT_OK(ft_quantize_e4m3(q, src, FT_DTYPE_BF16, m, k, FT_SCALE_ROW, (void *)a->x.data, (void *)a->vecs[0].data, 0));
      if (call < 2) cudaDeviceSynchronize();
      ASSERT_OK(ft_plan_launch_typed(plan, a, 0));
      cudaMemcpyAsync((char *)dys + (size_t)call * yb, a->y.data, yb, cudaMemcpyDeviceToDevice, 0);
      if (call < 2) cudaDeviceSynchronize();
    }
    ASSERT_TRUE(cudaDeviceSynchronize() == cudaSuccess);
    cudaMemcpy(want, dys, 2 * yb, cudaMemcpyDeviceToHost);
    cudaMemcpy(got, (char *)dys + 2 * yb, kCalls * yb, cudaMemcpyDeviceToHost);
    int differ = 0;
    for (int call = 0; call < kCalls; call++) differ += memcmp(got + (size_t)call * yb, want + (size_t)(call % 2) * yb, yb) != 0;
    ASSERT_TRUE(memcmp(want, want + yb, yb) != 0); /* the two inputs give two outputs */
    if (differ) FT_FAIL_AT_("quantizer then kernel, unsynchronized: %d of %d calls differ from their input's y", differ, kCalls);
    printf("quantizer then kernel %dx%dx%d, %d unsynchronized calls: %d differ\n", m, n, k, kCalls, differ);
  }
  cudaFree(dsrc), cudaFree(dys);
  free(hx), free(f), free(want), free(got);
  ft_quantizer_destroy(q);
}

/* The quantizer before each other form of the tensor-core kernel the space offers here: a
 * cluster of 2 (the multicast W), ping-pong consumers, stream-K (blocks waiting on each other's
 * flags), split-K (its second kernel after the wait-holding first), the first of each. At
 * 127×1008×1008 fp8's default space has ping-pong and split-K forms, no cluster or stream-K. */
static void check_forms_after_quantizer(ft_ctx *ctx, const ft_problem *p, const ft_variant *v, int n,
                                        const ft_typed_args *a) {
  static const char *const forms[] = {"cluster 2", "ping-pong", "stream-K", "split-K"};
  for (int f = 0; f < 4; f++) {
    int i = 0;
    while (i < n && !((f == 0 && v[i].tc.cluster > 1) || (f == 1 && v[i].tc.pingpong) ||
                      (f == 2 && v[i].tc.streamk) || (f == 3 && v[i].split_k > 1)))
      i++;
    if (i == n) {
      printf("quantizer then kernel: no %s form at %lldx%lldx%lld\n", forms[f], (long long)p->m, (long long)p->n,
             (long long)p->k);
      continue;
    }
    ft_config cfg;
    memset(&cfg, 0, sizeof cfg);
    strcpy(cfg.strategy, "fused");
    ft_variant_name(&v[i], cfg.name, sizeof cfg.name);
    ft_variant_json(&v[i], cfg.config, sizeof cfg.config);
    cfg.math = FT_MATH_FP8;
    ft_plan *plan = NULL;
    const ft_status st = ft_plan_create(ctx, p, &cfg, &plan);
    if (st != FT_OK) fprintf(stderr, "ft_plan_create %s: %s\n", cfg.name, ft_errmsg(ctx));
    ASSERT_OK(st);
    if (!plan) continue;
    printf("%s: %s\n", forms[f], cfg.name);
    check_quantize_then_gemm(ctx, plan, a, (int)p->m, (int)p->n, (int)p->k);
    ft_plan_destroy(plan);
  }
}

/* An e4m3 y (y.dtype FT_DTYPE_E4M3): the launch's codes and row scales, NaN-poisoned beforehand,
 * byte for byte the host model's quantization (src/epilogue/e4m3.c) of the bf16 y the same plan
 * writes, and within e4m3's rounding of it; and its refusals (fields unset, buffers overlapping,
 * a quantizer of another context, args ending before the fields), each before a launch. */
static void check_e4m3_output(ft_ctx *ctx, const char *db_path, ft_plan *plan, const ft_typed_args *a, int m, int n) {
  ft_quantizer *q = NULL;
  ASSERT_OK(ft_quantizer_create(ctx, &q));
  const size_t cells = (size_t)m * (size_t)n;
  uint16_t *yref = malloc(cells * 2);
  uint8_t *want = malloc(cells), *got = malloc(cells);
  float *want_s = malloc((size_t)m * sizeof(float)), *got_s = malloc((size_t)m * sizeof(float));
  void *codes = NULL, *work = NULL, *scales = NULL;
  ASSERT_TRUE(cudaMalloc(&codes, cells) == cudaSuccess && cudaMalloc(&work, cells * 2) == cudaSuccess &&
              cudaMalloc(&scales, (size_t)m * sizeof(float)) == cudaSuccess);
  if (q && yref && want && got && want_s && got_s && codes && work && scales) {
    ASSERT_OK(ft_plan_launch_typed(plan, a, 0)); /* the bf16 y, the reference's source */
    ASSERT_TRUE(cudaMemcpy(yref, a->y.data, cells * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
    ft_e4m3_quantize_model(yref, FT_DTYPE_BF16, m, n, 1, want, want_s);
    cudaMemset(codes, 0x7f, cells); /* e4m3 NaN */
    cudaMemset(work, 0xff, cells * 2);
    cudaMemset(scales, 0xff, (size_t)m * sizeof(float));
    ft_typed_args o = *a;
    o.y = (ft_tensor_arg){NULL, codes, FT_DTYPE_E4M3};
    o.y_work = work, o.y_scales = scales, o.quantizer = q;
    ASSERT_OK(ft_plan_launch_typed(plan, &o, 0));
    ASSERT_TRUE(cudaDeviceSynchronize() == cudaSuccess);
    cudaMemcpy(got, codes, cells, cudaMemcpyDeviceToHost);
    cudaMemcpy(got_s, scales, (size_t)m * sizeof(float), cudaMemcpyDeviceToHost);
    size_t differ = 0;
    double worst = 0;
    for (size_t i = 0; i < cells; i++) {
      differ += got[i] != want[i];
      /* half an e4m3 step of the value, or of the subnormals' 2^-9 at the row's scale */
      const double v = ft_bf16_to_f32(yref[i]), deq = ft_e4m3_to_double(got[i]) * got_s[i / (size_t)n];
      const double bound = fmax(fabs(v) * 0x1p-4, got_s[i / (size_t)n] * 0x1p-10);
      worst = fmax(worst, fabs(deq - v) / bound);
      if (!(fabs(deq - v) <= bound * 1.0001)) differ++;
    }
    const int scales_differ = memcmp(got_s, want_s, (size_t)m * sizeof(float)) != 0;
    if (differ || scales_differ)
      FT_FAIL_AT_("e4m3 y %dx%d: %zu codes off the host model or past half a step, scales %s", m, n, differ,
                  scales_differ ? "differ" : "equal");
    printf("e4m3 y %dx%d: codes and scales as the host model's, worst %.3f of half a step\n", m, n, worst);
    /* The refusals below, each before any launch: the buffers keep their poison. */
    cudaMemset(codes, 0x7f, cells);
    cudaMemset(work, 0xff, cells * 2);
    cudaMemset(scales, 0xff, (size_t)m * sizeof(float));
    ft_typed_args b = o;
    b.y_work = NULL;
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "y is e4m3: set y (the codes), y_work");
    b = o, b.y_work = (char *)codes + 16;
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "overlap");
    b = o, b.y_scales = (float *)((char *)work + 64);
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "overlap");
    b = o, b.y_scales = (float *)((char *)scales + 2);
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "y_scales");
    b = o, b.y_work = (char *)work + 8;
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "y_work");
    b = o, b.struct_size = offsetof(ft_typed_args, n_scalars) + sizeof b.n_scalars;
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "end before y_scales");
    ft_ctx *other = NULL;
    ft_quantizer *oq = NULL;
    ASSERT_OK(ft_open(db_path, 0, &other));
    if (other) ASSERT_OK(ft_quantizer_create(other, &oq));
    if (oq) {
      b = o, b.quantizer = oq;
      ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
      ASSERT_CONTAINS(ft_errmsg(ctx), "another context than the plan's");
    }
    ft_quantizer_destroy(oq);
    ft_close(other);
    /* the refused launches wrote nothing */
    ASSERT_TRUE(cudaDeviceSynchronize() == cudaSuccess);
    cudaMemcpy(got, codes, cells, cudaMemcpyDeviceToHost);
    cudaMemcpy(yref, work, cells * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(got_s, scales, (size_t)m * sizeof(float), cudaMemcpyDeviceToHost);
    size_t touched = 0;
    for (size_t i = 0; i < cells; i++) touched += got[i] != 0x7f || yref[i] != 0xffff;
    for (int i = 0; i < m; i++) {
      uint32_t u;
      memcpy(&u, &got_s[i], 4);
      touched += u != 0xffffffffu;
    }
    if (touched) FT_FAIL_AT_("e4m3 y: refused launches changed %zu elements of y, y_work or y_scales", touched);
  }
  cudaFree(codes), cudaFree(work), cudaFree(scales);
  free(yref), free(want), free(got), free(want_s), free(got_s);
  ft_quantizer_destroy(q);
}

/* The public path: a plan of an fp8 configuration, launched with ft_plan_launch_typed on e4m3 x
 * and W, bf16 y and bias, fp32 scales; every mismatch refused before a launch. */
static void test_plan(ft_ctx *ctx, const char *db_path, ft_gpu *g, ft_variant_kind kind) {
  const char *epi = k_epilogues[0];
  const ft_problem p = {127, 1008, 1008, epi, FT_MATH_FP8};
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  ft_variant *v = NULL;
  int n = 0;
  ASSERT_OK(ft_ep_parse(epi, &ep, &e));
  ASSERT_OK(ft_pdata_create(g, (int)p.m, (int)p.n, (int)p.k, ep, FT_MATH_FP8, 7, &d, &e));
  ASSERT_OK(ft_space_enumerate_math(kind, p.m, p.n, p.k, FT_MATH_FP8, ft_gpu_limits(g), &v, &n, &e));
  if (!d || n < 1) return;
  ft_config cfg;
  memset(&cfg, 0, sizeof cfg);
  strcpy(cfg.strategy, kind == FT_VK_GEMM ? "fused" : "cublas+epilogue");
  ft_variant_name(&v[0], cfg.name, sizeof cfg.name);
  ft_variant_json(&v[0], cfg.config, sizeof cfg.config);
  cfg.math = FT_MATH_FP8;
  ft_plan *plan = NULL;
  ft_status st = ft_plan_create(ctx, &p, &cfg, &plan);
  if (st != FT_OK) fprintf(stderr, "ft_plan_create: %s\n", ft_errmsg(ctx));
  ASSERT_OK(st);
  void *dv[3] = {NULL, NULL, NULL}; /* sx, sw, bias by name */
  static const char *const names[] = {"sx", "sw", "bias"};
  for (int s = 0; s < ft_ep_param_count(ep); s++)
    for (int i = 0; i < 3; i++)
      if (!strcmp(ft_ep_param_at(ep, s)->name, names[i])) dv[i] = d->dvec[s];
  ASSERT_TRUE(dv[0] && dv[1] && dv[2]);
  const ft_tensor_arg vecs[] = {{"sx", dv[0], FT_DTYPE_F32}, {"sw", dv[1], FT_DTYPE_F32}, {"bias", dv[2], FT_DTYPE_BF16}};
  ft_typed_args a = FT_TYPED_ARGS_INIT;
  a.x = (ft_tensor_arg){NULL, d->dX, FT_DTYPE_E4M3};
  a.w = (ft_tensor_arg){NULL, d->dW, FT_DTYPE_E4M3};
  a.y = (ft_tensor_arg){NULL, d->dY, FT_DTYPE_BF16};
  a.vecs = vecs, a.n_vecs = 3;
  ft_check chk = {0, 0, 0};
  if (plan) {
    ASSERT_OK(ft_pdata_poison(d, 0, &e));
    ASSERT_OK(ft_plan_launch_typed(plan, &a, 0));
    ASSERT_TRUE(cudaDeviceSynchronize() == cudaSuccess);
    ASSERT_OK(ft_pdata_check(d, &chk, &e));
    ASSERT_TRUE(chk.rel_err <= 2 * ideal_error(d) + 0x1p-12);
    ft_typed_args b = a;
    b.y.dtype = FT_DTYPE_F16;
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "y is fp16, but a fp8 plan reads bf16 there");
    b = a, b.x.dtype = FT_DTYPE_BF16;
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "x is bf16, but a fp8 plan reads e4m3 there");
    const ft_tensor_arg bad_scale[] = {{"sx", dv[0], FT_DTYPE_BF16}, vecs[1], vecs[2]};
    b = a, b.vecs = bad_scale;
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "vector sx is bf16, but a fp8 plan reads fp32 there");
    b = a, b.n_vecs = 2; /* no bias */
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "'bias' is not bound");
    b = a, b.struct_size = 8;
    ASSERT_EQ_INT(ft_plan_launch_typed(plan, &b, 0), FT_ERR_INVALID_ARG);
    const ft_args old = {d->dX, d->dW, d->dY, NULL, 0, NULL, 0, FT_DTYPE_E4M3};
    ASSERT_EQ_INT(ft_plan_launch(plan, &old, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "launch it with ft_plan_launch_typed");
    ASSERT_EQ_INT(ft_plan_launch_ptrs(plan, d->dX, d->dW, d->dY, NULL, NULL, 0), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ft_errmsg(ctx), "ft_plan_launch_ptrs: an fp8 plan binds");
    check_e4m3_output(ctx, db_path, plan, &a, (int)p.m, (int)p.n);
    check_quantize_then_gemm(ctx, plan, &a, (int)p.m, (int)p.n, (int)p.k);
    if (kind == FT_VK_GEMM) check_forms_after_quantizer(ctx, &p, v, n, &a);
  }
  printf("plan %s launched typed: rel %.3g\n", cfg.name, chk.rel_err);
  ft_plan_destroy(plan);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
}

int main(void) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) RETURN_SKIP("no CUDA device");
  char path[512];
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(path, sizeof path, "%s/gpu_fp8_%ld.db", tmp ? tmp : "/tmp", (long)getpid());
  unlink(path);
  ft_ctx *ctx = NULL;
  ASSERT_OK(ft_open(path, FT_OPEN_CREATE, &ctx));
  setenv("FUSEDTUNE_PDL", "1", 0); /* the tensor-core kernels after the quantizer as a layer would run them with it */
  test_quantizer(ctx);
  ft_gpu *g = NULL;
  ft_err e;
  ASSERT_OK(ft_gpu_open(0, &g, &e));
  if (g) test_plan(ctx, path, g, FT_VK_GEMM);
  if (g) test_plan(ctx, path, g, FT_VK_EPILOGUE);
  if (g && !getenv("FT_TEST_QUICK")) test_kernels(g, NULL); /* FT_TEST_QUICK=1: the quantizer and the plan only */
  ft_gpu_close(g);
  ft_close(ctx);
  unlink(path);
  if (!ft_test_failures) printf("gpu_test_fp8: ok\n");
  return ft_test_failures ? 1 : 0;
}
