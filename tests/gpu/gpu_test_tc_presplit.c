/* GPU: 3xtf32 with x and W split before the kernel (family tc's presplit: ft_tc_presplit into the
 * plan's workspace, ft_mainloop_3x's pre-split branch). Every presplit variant of the full space on ragged shapes
 * (M, N not multiples of the tile, K not a multiple of 32, so the split rows' last block is
 * zero-padded), with an elementwise E, output and workspace NaN-poisoned: each the same bits as
 * its twin that splits in the kernel (the same parts, products and order), its error against the
 * float64 reference reported beside the tuner's tolerance (a long chunk's truncating sums may
 * exceed it in both forms: the tuner refuses those) and failed beyond 8 times it; and the weight's cache: W doubled in place reads as the
 * old W until ft_launchable_weight_changed, then gives exactly twice the old y (a power of two
 * scales the parts exactly), and a launch with another W pointer splits that W by itself. */
#include <math.h>

#include "ft_test.h"
#include "gpu_launch_check.h"

typedef struct problem {
  const char *expr;
  int m, n, k;
} problem;

static const problem k_problems[] = {
    {"relu(x + bias)", 77, 264, 40},                        /* one k tile, its last 24 columns padding */
    {"x * s + bias where scalar s = 0.5", 300, 1040, 1000}, /* K = 31 x 32 + 8 */
    {"gelu(x + bias)", 1000, 8192, 256},                    /* whole tiles of k, many tiles of y */
};
#define N_PROBLEMS (sizeof k_problems / sizeof k_problems[0])

/* Launches compiled v on d through a fresh launchable (checked against the reference), its y
 * copied to out. */
static ft_status run_checked(ft_gpu *g, const ft_variant *v, const ft_compile_job *job, const ft_kernel_src *src,
                             ft_pdata *d, void *out, size_t bytes, ft_check *chk, ft_err *e) {
  if (job->status != FT_OK) return ft__fail(e, job->status, "compile: %.600s", job->log ? job->log : "");
  ft_status st = ft_test_launch_check(g, v, job, src, d, chk, e);
  if (st == FT_OK && cudaMemcpy(out, d->dY, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
    st = ft__fail(e, FT_ERR_CUDA, "copying y back");
  return st;
}

/* ptxas rejected the compile (spills, serialized wgmma): compile.c's "rejected: " reason first. */
static int rejected(const ft_compile_job *job) {
  return job->status != FT_OK && job->log && !strncmp(job->log, "rejected: ", 10);
}

static int check_problem(ft_gpu *g, const problem *pr) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  ft_variant *v = NULL;
  int nv = 0, checked = 0;
  double tol = 0, worst = 0;
  ft_status st = ft_ep_parse(pr->expr, &ep, &e);
  if (st == FT_OK) st = ft_pdata_create(g, pr->m, pr->n, pr->k, ep, FT_MATH_3XTF32, 31, &d, &e);
  if (st == FT_OK) st = ft_test_tuner_tolerance(g, ep, d, &tol, NULL, NULL, &e);
  if (st == FT_OK)
    st = ft_space_enumerate_ep(FT_VK_GEMM, pr->m, pr->n, pr->k, FT_MATH_3XTF32, FT_SPACE_FULL, ep, ft_gpu_limits(g), &v,
                               NULL, &nv, &e);
  if (st != FT_OK) {
    FT_FAIL_AT_("%s %dx%dx%d: setup: %s", pr->expr, pr->m, pr->n, pr->k, e.msg);
    free(v);
    ft_pdata_free(d);
    ft_ep_free(ep);
    return 0;
  }
  const size_t bytes = (size_t)pr->m * (size_t)pr->n * sizeof(float);
  float *pre = malloc(bytes), *twin = malloc(bytes);
  /* Each presplit variant (even index) and its twin (odd): the same tile, chunk and epilogue form,
   * split in the kernel; compiled together on every core. */
  ft_variant *pv = calloc(2 * (size_t)nv + 1, sizeof *pv);
  ft_kernel_src *src = calloc(2 * (size_t)nv + 1, sizeof *src);
  ft_compile_job *jobs = calloc(2 * (size_t)nv + 1, sizeof *jobs);
  ASSERT_TRUE(pre && twin && pv && src && jobs);
  int np = 0;
  for (int i = 0; pv && src && jobs && i < nv; i++) {
    if (!v[i].tc.presplit) continue;
    pv[np] = pv[np + 1] = v[i];
    pv[np + 1].tc.presplit = 0, pv[np + 1].stages = 2;
    for (int j = np; j < np + 2; j++) {
      ASSERT_OK(ft_codegen_variant(&pv[j], ep, &src[j], &e));
      jobs[j] = (ft_compile_job){.src = src[j].text, .hash = src[j].hash, .arch_suffix = src[j].arch_suffix};
    }
    np += 2;
  }
  if (np) ASSERT_OK(ft_compile_many(NULL, ft_gpu_arch(g), jobs, np, 0, &e));
  int refused = 0, beyond = 0;
  double worst_twin = 0;
  for (int i = 0; pre && twin && i < np; i += 2) {
    char name[160];
    ft_variant_name(&pv[i], name, sizeof name);
    /* ptxas's spill or serialized-wgmma rejection (a heavy E at BN 128 with direct stores) is
     * the tuner's refusal too: counted, not run. */
    if (rejected(&jobs[i]) || rejected(&jobs[i + 1])) {
      refused++;
      continue;
    }
    ft_check chk = {0, 0, 0}, chk_t = {0, 0, 0};
    st = run_checked(g, &pv[i], &jobs[i], &src[i], d, pre, bytes, &chk, &e);
    if (st == FT_OK) st = run_checked(g, &pv[i + 1], &jobs[i + 1], &src[i + 1], d, twin, bytes, &chk_t, &e);
    if (st != FT_OK) {
      FT_FAIL_AT_("%s %dx%dx%d: %s: %s", pr->expr, pr->m, pr->n, pr->k, name, e.msg);
      continue;
    }
    /* The contract: the same parts, products and order as the in-kernel split, so the same bits;
     * the error is then the in-kernel form's arithmetic (its chunk's truncating sums), which the
     * tuner judges by its tolerance. A far larger error is a wrong part or index. */
    if (memcmp(pre, twin, bytes) != 0)
      FT_FAIL_AT_("%s: %s: other bits than its twin that splits in the kernel (rel_err %.3g, twin %.3g)", pr->expr,
                  name, chk.rel_err, chk_t.rel_err);
    else if (chk.bad || !(chk.rel_err <= 8 * tol))
      FT_FAIL_AT_("%s %dx%dx%d: %s: rel_err %.3g > 8 x %.3g, %lld non-finite", pr->expr, pr->m, pr->n, pr->k, name,
                  chk.rel_err, tol, (long long)chk.bad);
    beyond += chk.rel_err > tol;
    if (chk.rel_err > worst) worst = chk.rel_err;
    if (chk_t.rel_err > worst_twin) worst_twin = chk_t.rel_err;
    checked++;
  }
  printf("  %-40s %5dx%-5dx%-4d %3d presplit variants with their twins' bits, worst rel_err %.2e (twin %.2e, tol "
         "%.2e; %d beyond it, refused by the tuner), %d rejected by ptxas\n",
         pr->expr, pr->m, pr->n, pr->k, checked, worst, worst_twin, tol, beyond, refused);
  fflush(stdout);
  for (int j = 0; j < np; j++) {
    ft_compile_job_clear(&jobs[j]);
    ft_kernel_src_free(&src[j]);
  }
  free(pv), free(src), free(jobs);
  free(pre);
  free(twin);
  free(v);
  ft_pdata_free(d);
  ft_ep_free(ep);
  return checked;
}

/* One launch of run (x d->dX, weight wp) captured into a graph on a stream of its own; the number
 * of its kernel nodes in *kernels. */
static ft_status capture(ft_launchable *run, ft_pdata *d, const void *wp, cudaGraphExec_t *exec, size_t *kernels,
                         cudaStream_t s, ft_err *e) {
  cudaGraph_t graph = NULL;
  FT_CUDA_TRY(e, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ft_status st = ft_launchable_enqueue(run, d->dX, wp, d->dY, &d->args, s, e);
  const cudaError_t ce = cudaStreamEndCapture(s, &graph);
  if (st == FT_OK && ce != cudaSuccess) st = ft_cuda_fail(e, ce, "cudaStreamEndCapture");
  size_t n = 0;
  if (st == FT_OK) FT_CUDA_TRY(e, cudaGraphGetNodes(graph, NULL, &n));
  cudaGraphNode_t *nodes = st == FT_OK ? calloc(n ? n : 1, sizeof *nodes) : NULL;
  *kernels = 0;
  if (st == FT_OK && (!nodes || cudaGraphGetNodes(graph, nodes, &n) != cudaSuccess))
    st = ft__fail(e, FT_ERR_CUDA, "the graph's nodes");
  for (size_t i = 0; st == FT_OK && i < n; i++) {
    enum cudaGraphNodeType t;
    if (cudaGraphNodeGetType(nodes[i], &t) == cudaSuccess && t == cudaGraphNodeTypeKernel) ++*kernels;
  }
  free(nodes);
  if (st == FT_OK && cudaGraphInstantiate(exec, graph, 0) != cudaSuccess)
    st = ft__fail(e, FT_ERR_CUDA, "cudaGraphInstantiate");
  if (graph) cudaGraphDestroy(graph);
  return st;
}

/* Under CUDA graphs: a capture after a launch with the same W holds no split of W (one kernel
 * fewer) and each replay reads the split as the last launch outside the graph left it (W changed
 * in place + weight_changed + one launch: the replay follows); a capture with no current split of
 * that W splits W in the graph. On entry w2 (= the original W) was launched last and y1 is its y;
 * d->dW holds 2 W. */
static void check_graphs(ft_gpu *g, ft_launchable *run, ft_pdata *d, void *w2, const float *y1, float *y2,
                         size_t ybytes, float *w, size_t wbytes) {
  (void)g;
  ft_err e;
  cudaStream_t s = NULL;
  cudaGraphExec_t warm = NULL, cold = NULL;
  size_t kw = 0, kc = 0;
  ASSERT_TRUE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
#define REPLAY_INTO(buf, exec)                                                                     \
  do {                                                                                             \
    ASSERT_TRUE(cudaMemset(d->dY, 0xff, ybytes) == cudaSuccess);                                   \
    ASSERT_TRUE(cudaGraphLaunch((exec), s) == cudaSuccess);                                        \
    ASSERT_TRUE(cudaStreamSynchronize(s) == cudaSuccess);                                          \
    ASSERT_TRUE(cudaMemcpy((buf), d->dY, ybytes, cudaMemcpyDeviceToHost) == cudaSuccess);          \
  } while (0)
  /* Warm: a launch with w2 before the capture; the graph reads its split. */
  ASSERT_OK(ft_launchable_enqueue(run, d->dX, w2, d->dY, &d->args, s, &e));
  ASSERT_OK(capture(run, d, w2, &warm, &kw, s, &e));
  if (warm) {
    REPLAY_INTO(y2, warm);
    ASSERT_TRUE(memcmp(y1, y2, ybytes) == 0);
    /* w2 doubled in place, told, launched once outside the graph: the replay gives 2 y. */
    for (size_t i = 0; i < wbytes / sizeof(float); i++) w[i] *= 2.0f;
    ASSERT_TRUE(cudaMemcpy(w2, w, wbytes, cudaMemcpyHostToDevice) == cudaSuccess);
    ft_launchable_weight_changed(run);
    ASSERT_OK(ft_launchable_enqueue(run, d->dX, w2, d->dY, &d->args, s, &e));
    REPLAY_INTO(y2, warm);
    int twice = 1;
    for (size_t i = 0; i < ybytes / sizeof(float); i++) twice &= y2[i] == 2.0f * y1[i];
    ASSERT_TRUE(twice);
  }
  /* Cold: told of a change and captured at once, the graph splits W itself (one kernel more). */
  ft_launchable_weight_changed(run);
  ASSERT_OK(capture(run, d, d->dW, &cold, &kc, s, &e));
  if (cold) {
    REPLAY_INTO(y2, cold);
    int twice = 1;
    for (size_t i = 0; i < ybytes / sizeof(float); i++) twice &= y2[i] == 2.0f * y1[i];
    ASSERT_TRUE(twice);
  }
  ASSERT_TRUE(kc == kw + 1);
  printf("  under CUDA graphs: %zu kernels with the split held, %zu splitting W; replays follow weight_changed\n", kw,
         kc);
#undef REPLAY_INTO
  if (warm) cudaGraphExecDestroy(warm);
  if (cold) cudaGraphExecDestroy(cold);
  cudaStreamDestroy(s);
}

/* The cache of W's split: stale by contract until ft_launchable_weight_changed, and split again
 * for another W pointer. */
static void check_weight_cache(ft_gpu *g) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_pdata *d = NULL;
  const int m = 129, n = 264, k = 72;
  ASSERT_OK(ft_ep_parse("x", &ep, &e));
  if (!ep || ft_pdata_create(g, m, n, k, ep, FT_MATH_3XTF32, 5, &d, &e) != FT_OK) {
    FT_FAIL_AT_("setup: %s", e.msg);
    ft_ep_free(ep);
    return;
  }
  ft_variant v = {0};
  v.kind = FT_VK_GEMM, v.family = FT_FAMILY_TC, v.math = FT_MATH_3XTF32, v.bn = 128, v.bk = 32, v.stages = 3;
  v.swizzle = 8, v.tc.consumers = 2, v.tc.cluster = 1, v.tc.grid = 132, v.tc.chunk = 4, v.tc.presplit = 1;
  ft_kernel_src src;
  ft_compile_job job;
  memset(&job, 0, sizeof job);
  ft_launchable run;
  memset(&run, 0, sizeof run);
  const size_t ybytes = (size_t)m * n * sizeof(float), wbytes = (size_t)n * k * sizeof(float);
  float *y1 = malloc(ybytes), *y2 = malloc(ybytes), *w = malloc(wbytes);
  void *w2 = NULL;
  ASSERT_TRUE(y1 && y2 && w);
  ASSERT_OK(ft_codegen_variant(&v, ep, &src, &e));
  job = (ft_compile_job){.src = src.text, .hash = src.hash, .arch_suffix = src.arch_suffix};
  ASSERT_OK(ft_compile_many(NULL, ft_gpu_arch(g), &job, 1, 0, &e));
  ASSERT_OK(job.status);
  ASSERT_OK(ft_launchable_init(&run, g, &v, m, n, k, job.cubin, job.cubin_size, src.kernel, src.reduce, &e));
#define LAUNCH_INTO(buf, wptr)                                                                     \
  do {                                                                                             \
    ASSERT_OK(ft_launchable_enqueue(&run, d->dX, (wptr), d->dY, &d->args, 0, &e));                 \
    ASSERT_TRUE(cudaDeviceSynchronize() == cudaSuccess);                                           \
    ASSERT_TRUE(cudaMemcpy((buf), d->dY, ybytes, cudaMemcpyDeviceToHost) == cudaSuccess);          \
  } while (0)
  if (y1 && y2 && w) {
    LAUNCH_INTO(y1, d->dW);
    /* W doubled in place: the cached split is the old W's, by contract. */
    ASSERT_TRUE(cudaMemcpy(w, d->dW, wbytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (size_t i = 0; i < (size_t)n * k; i++) w[i] *= 2.0f;
    ASSERT_TRUE(cudaMemcpy(d->dW, w, wbytes, cudaMemcpyHostToDevice) == cudaSuccess);
    LAUNCH_INTO(y2, d->dW);
    ASSERT_TRUE(memcmp(y1, y2, ybytes) == 0);
    ft_launchable_weight_changed(&run);
    LAUNCH_INTO(y2, d->dW);
    int twice = 1;
    for (size_t i = 0; i < (size_t)m * n; i++) twice &= y2[i] == 2.0f * y1[i];
    ASSERT_TRUE(twice);
    /* Another pointer to the original W (halved back): split by itself, y1 again. */
    for (size_t i = 0; i < (size_t)n * k; i++) w[i] *= 0.5f;
    ASSERT_TRUE(cudaMalloc(&w2, wbytes) == cudaSuccess);
    ASSERT_TRUE(cudaMemcpy(w2, w, wbytes, cudaMemcpyHostToDevice) == cudaSuccess);
    LAUNCH_INTO(y2, w2);
    ASSERT_TRUE(memcmp(y1, y2, ybytes) == 0);
    printf("  the weight's split: stale until weight_changed, then 2 y exactly; another W pointer split by itself\n");
    check_graphs(g, &run, d, w2, y1, y2, ybytes, w, wbytes);
  }
#undef LAUNCH_INTO
  cudaFree(w2);
  free(y1), free(y2), free(w);
  ft_launchable_free(&run);
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  ft_pdata_free(d);
  ft_ep_free(ep);
}

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_HOPPER(g);
  int checked = 0;
  for (size_t i = 0; i < N_PROBLEMS; i++) {
    const int c = check_problem(g, &k_problems[i]);
    if (!c) FT_FAIL_AT_("%s: no presplit variant enumerated", k_problems[i].expr);
    checked += c;
  }
  check_weight_cache(g);
  printf("%d presplit variants checked\n", checked);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
