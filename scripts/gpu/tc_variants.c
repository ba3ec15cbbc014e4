/* Times chosen tensor-core variants of one problem beside cuBLAS's GEMM alone, each with the
 * problem's epilogue and with the identity (the difference is what E costs where it is not
 * hidden), in interleaved rounds: the median of per-round ratios to cuBLAS, and the median time.
 *
 *   tc_variants MxNxK EPILOGUE MATH CONFIG_JSON...
 *
 * MATH: tf32, bf16 or fp16. Built by scripts/gpu/build_tools.sh on the GPU machine. Inputs are
 * random, vectors and scalars of E bound by name (vectors random, scalars 0.5). */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusedtune.h"
#include "fusedtune_tool.h"

#define ROUNDS 15
#define PER_ROUND 10

#define CK(x)                                                                   \
  do {                                                                          \
    cudaError_t e_ = (x);                                                       \
    if (e_ != cudaSuccess) {                                                    \
      fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Random values in [-1, 1) as the mode's storage type. */
static void *rand_dev(size_t n, ft_dtype dt, unsigned seed) {
  const size_t es = dt == FT_DTYPE_F32 ? 4 : 2;
  unsigned char *h = malloc(n * es);
  unsigned s = seed;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    float f = (float)((s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
    if (es == 4) {
      memcpy(h + 4 * i, &f, 4);
    } else if (dt == FT_DTYPE_BF16) {
      unsigned u;
      memcpy(&u, &f, 4);
      unsigned short b = (unsigned short)(u >> 16);
      memcpy(h + 2 * i, &b, 2);
    } else { /* fp16 of a value in [-1, 1): exact enough for timing */
      _Float16 x = (_Float16)f;
      memcpy(h + 2 * i, &x, 2);
    }
  }
  void *d;
  CK(cudaMalloc(&d, n * es));
  CK(cudaMemcpy(d, h, n * es, cudaMemcpyHostToDevice));
  free(h);
  return d;
}

typedef struct cand {
  const char *label;
  ft_plan *plan; /* NULL: cuBLAS */
  ft_args args;
  double ms[ROUNDS], ratio[ROUNDS];
} cand;

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: tc_variants MxNxK EPILOGUE MATH CONFIG_JSON...\n");
    return 2;
  }
  char msg[512];
  ft_problem p = {0};
  if (ft_shape_parse(argv[1], &p.m, &p.n, &p.k, msg, sizeof msg) != FT_OK || !ft_math_from_name(argv[3], &p.math)) {
    fprintf(stderr, "bad shape or math: %s\n", msg);
    return 2;
  }
  const ft_dtype dt = ft_math_dtype(p.math);
  ft_ctx *ctx = NULL;
  if (ft_open("/tmp/tc_variants.db", FT_OPEN_CREATE, &ctx) != FT_OK) {
    fprintf(stderr, "open: %s\n", ft_errmsg(ctx));
    return 1;
  }
  void *x = rand_dev((size_t)(p.m * p.k), dt, 1), *w = rand_dev((size_t)(p.n * p.k), dt, 2);
  void *y;
  CK(cudaMalloc(&y, (size_t)(p.m * p.n) * (dt == FT_DTYPE_F32 ? 4 : 2)));
  const char *epis[2] = {argv[2], "x"};
  ft_epilogue_info *info[2] = {NULL, NULL};
  ft_vec_arg vecs[2][FT_EPILOGUE_MAX_PARAMS];
  ft_scalar_arg scal[2][FT_EPILOGUE_MAX_PARAMS];
  int nv[2] = {0, 0}, ns[2] = {0, 0};
  for (int e = 0; e < 2; e++) {
    if (ft_epilogue_inspect(epis[e], &info[e], msg, sizeof msg) != FT_OK) {
      fprintf(stderr, "epilogue: %s\n", msg);
      return 2;
    }
    for (int i = 0; i < info[e]->n_params; i++) {
      const ft_epilogue_param *q = &info[e]->params[i];
      if (q->type == FT_PARAM_TYPE_SCALAR) {
        scal[e][ns[e]++] = (ft_scalar_arg){q->name, 0.5f};
      } else {
        const size_t len = (size_t)(q->type == FT_PARAM_TYPE_COLVEC ? p.n : p.m);
        vecs[e][nv[e]++] = (ft_vec_arg){q->name, rand_dev(len, dt, 3 + (unsigned)i)};
      }
    }
  }
  const int nc = 1 + 2 * (argc - 4);
  cand *c = calloc((size_t)nc, sizeof *c);
  c[0].label = "cublas_gemm";
  for (int a = 4; a < argc; a++)
    for (int e = 0; e < 2; e++) {
      cand *q = &c[1 + 2 * (a - 4) + e];
      ft_problem pe = p;
      pe.epilogue = epis[e];
      ft_config cfg;
      memset(&cfg, 0, sizeof cfg);
      snprintf(cfg.strategy, sizeof cfg.strategy, "fused");
      snprintf(cfg.config, sizeof cfg.config, "%s", argv[a]);
      snprintf(cfg.name, sizeof cfg.name, "arg%d", a - 3);
      if (ft_plan_create(ctx, &pe, &cfg, &q->plan) != FT_OK) { /* a spill, say: reported, skipped */
        printf("  skipped %s (%s): %s\n", argv[a], epis[e], ft_errmsg(ctx));
        q->plan = NULL;
        q->label = NULL;
        continue;
      }
      char *label = malloc(600);
      snprintf(label, 600, "%s%s", e ? "  (E = x) " : "", argv[a]);
      q->label = label;
      q->args = (ft_args){x, w, y, vecs[e], nv[e], scal[e], ns[e], dt};
    }
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  const cudaDataType ty = dt == FT_DTYPE_F32 ? CUDA_R_32F : dt == FT_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  const cublasComputeType_t ct = p.math == FT_MATH_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float one = 1.0f, zero = 0.0f;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int r = -2; r < ROUNDS; r++) /* two rounds of warm-up */
    for (int i = 0; i < nc; i++) {
      if (i > 0 && !c[i].label) continue;
      CK(cudaEventRecord(e0, 0));
      for (int t = 0; t < PER_ROUND; t++) {
        if (!c[i].plan) {
          if (cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)p.n, (int)p.m, (int)p.k, &one, w, ty, (int)p.k, x, ty,
                           (int)p.k, &zero, y, ty, (int)p.n, ct, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
            return 1;
        } else if (ft_plan_launch(c[i].plan, &c[i].args, 0) != FT_OK) {
          fprintf(stderr, "launch: %s\n", ft_errmsg(ctx));
          return 1;
        }
      }
      CK(cudaEventRecord(e1, 0));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 0) c[i].ms[r] = ms / PER_ROUND, c[i].ratio[r] = c[0].ms[r] / (ms / PER_ROUND);
    }
  printf("%s %s %s: median ms, median of per-round (cuBLAS GEMM / candidate), %d rounds\n", argv[1], argv[2], argv[3],
         ROUNDS);
  for (int i = 0; i < nc; i++)
    if (c[i].label) printf("  %.4f  %.4fx  %s\n", median(c[i].ms, ROUNDS), median(c[i].ratio, ROUNDS), c[i].label);
  for (int i = 1; i < nc; i++) ft_plan_destroy(c[i].plan);
  ft_close(ctx);
  return 0;
}
