/* A reduction pass alone, for bench/python/bench_reduce.py (ctypes): the in-place pass variants a
 * tune enumerates for an epilogue at [M, N] (the full space), compiled and launched on a y the caller
 * owns (a torch tensor), on the caller's stream, so that a CUDA graph captures them beside torch's
 * own kernels for the same step. Built on the GPU machine by scripts/gpu/bench_reduce.sh against
 * the library's internal archive (position-independent objects). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "compile.h"
#include "device.h"
#include "epilogue.h"
#include "launch.h"
#include "space.h"

typedef struct rp_pass {
  ft_launchable run;
  ft_ep_args_dev args;
} rp_pass;

static ft_gpu *g_gpu;
static char g_msg[2048 + 16];

const char *rp_error(void) { return g_msg; }

/* A variant this bench times: a reduction pass in place (not one that reads another chunk's
 * columns, nor the eager chain, which needs the problem's GEMM). */
static int in_place_pass(const ft_variant *v) { return v->family == FT_FAMILY_REDUCE_PASS && !v->red.cols; }

/* The in-place pass variants of expr at m x n in math (ft_math: 0 fp32, 2 bf16): how many, and the
 * name of variant index into name (or -1 on an error: rp_error). */
int rp_variants(const char *expr, int m, int n, int math, int index, char *name, int len) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_variant *v = NULL;
  int nv = 0, kept = 0;
  if (!g_gpu && ft_gpu_open(0, &g_gpu, &e) != FT_OK) return snprintf(g_msg, sizeof g_msg, "%s", e.msg), -1;
  if (ft_ep_parse(expr, &ep, &e) != FT_OK ||
      ft_space_enumerate_ep(FT_VK_EPILOGUE, m, n, 64, (ft_math)math, FT_SPACE_FULL, ep, ft_gpu_limits(g_gpu), &v, NULL,
                            &nv, &e) != FT_OK) {
    snprintf(g_msg, sizeof g_msg, "%s", e.msg);
    ft_ep_free(ep);
    return -1;
  }
  for (int i = 0; i < nv; i++) {
    if (!in_place_pass(&v[i])) continue;
    if (kept++ == index) ft_variant_name(&v[i], name, (size_t)len);
  }
  free(v);
  ft_ep_free(ep);
  return kept;
}

/* Opens in-place variant index of expr at m x n; vecs: a device pointer per parameter slot (NULL for
 * a scalar, which takes its default). NULL on an error. */
void *rp_open(const char *expr, int m, int n, int math, int index, void *const *vecs) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ft_variant *v = NULL, pick;
  int nv = 0, kept = 0, found = 0;
  if (!g_gpu && ft_gpu_open(0, &g_gpu, &e) != FT_OK) return snprintf(g_msg, sizeof g_msg, "%s", e.msg), NULL;
  if (ft_ep_parse(expr, &ep, &e) != FT_OK ||
      ft_space_enumerate_ep(FT_VK_EPILOGUE, m, n, 64, (ft_math)math, FT_SPACE_FULL, ep, ft_gpu_limits(g_gpu), &v, NULL,
                            &nv, &e) != FT_OK) {
    snprintf(g_msg, sizeof g_msg, "%s", e.msg);
    ft_ep_free(ep);
    return NULL;
  }
  for (int i = 0; i < nv && !found; i++)
    if (in_place_pass(&v[i]) && kept++ == index) pick = v[i], found = 1;
  free(v);
  rp_pass *p = calloc(1, sizeof *p);
  ft_kernel_src src = {0};
  ft_compile_job job = {0};
  ft_status s = !found ? ft__fail(&e, FT_ERR_INVALID_ARG, "no variant %d", index) : !p ? FT_ERR_NOMEM : FT_OK;
  if (s == FT_OK) s = ft_codegen_variant(&pick, ep, &src, &e);
  if (s == FT_OK) {
    job = (ft_compile_job){.src = src.text, .hash = src.hash, .arch_suffix = src.arch_suffix};
    s = ft_compile_source(NULL, ft_gpu_arch(g_gpu), &job, "bench", &e);
  }
  if (s == FT_OK) s = ft_launchable_init(&p->run, g_gpu, &pick, m, n, 64, job.cubin, job.cubin_size, src.kernel, src.reduce, &e);
  for (int i = 0; s == FT_OK && i < ft_ep_param_count(ep); i++) {
    const ft_ep_param *q = ft_ep_param_at(ep, i);
    p->args.v[i] = vecs[i];
    p->args.s[i] = q->kind == FT_PARAM_SCALAR ? (float)q->def : 0.0f;
  }
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  ft_ep_free(ep);
  if (s != FT_OK) {
    snprintf(g_msg, sizeof g_msg, "%s", e.msg);
    free(p);
    return NULL;
  }
  return p;
}

int rp_launch(void *h, void *y, void *stream) {
  rp_pass *p = h;
  ft_err e;
  if (ft_launchable_enqueue_pass(&p->run, y, &p->args, (cudaStream_t)stream, &e) != FT_OK)
    return snprintf(g_msg, sizeof g_msg, "%s", e.msg), -1;
  return 0;
}

void rp_close(void *h) {
  rp_pass *p = h;
  if (!p) return;
  ft_launchable_free(&p->run);
  free(p);
}
