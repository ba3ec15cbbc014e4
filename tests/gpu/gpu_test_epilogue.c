/* Device functions against the float64 evaluator: for every function of the language, a kernel
 * evaluating its CUDA text on 1M inputs over [-20, 20] ((0, 20] for log and sqrt), compiled
 * with NVRTC, loaded and launched through the runtime API; every result must be within
 * relative 1e-6 or absolute 1e-7 of ft_ep_eval in the precise forms (fp32, 3xtf32), relative
 * 4e-6 or absolute 1e-6 in the fast forms of the tensor-core modes (FT_EPI_FAST). Then ft_div, the epilogue's division, against
 * the host's IEEE division over every kind of float (random bit patterns and the special
 * values): within 1 ulp, NaN where IEEE gives NaN. Skips without a GPU. */
#include <float.h>

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "embedded.h"
#include "epilogue.h"
#include "ft_test.h"

#define N_INPUTS (1 << 20)
/* The tolerance of each form of the device functions (kernels_src/ft_math.cuh). */
typedef struct form_def {
  const char *name, *prelude;
  double rel_tol, abs_tol;
} form_def;
static const form_def k_forms[] = {{"precise", "", 1e-6, 1e-7}, {"fast", "#define FT_EPI_FAST 1\n", 4e-6, 1e-6}};

#define CUDA_OK(call)                                                                       \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      FT_FAIL_AT_("%s: %s (%s)", #call, cudaGetErrorName(e_), cudaGetErrorString(e_));     \
      goto done;                                                                             \
    }                                                                                        \
  } while (0)

/* The same check in cleanup code, where there is nowhere left to jump. */
#define CUDA_OK_CLEANUP(call)                                                               \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) FT_FAIL_AT_("%s: %s", #call, cudaGetErrorName(e_));             \
  } while (0)

#define NVRTC_OK(call)                                                          \
  do {                                                                          \
    nvrtcResult r_ = (call);                                                    \
    if (r_ != NVRTC_SUCCESS) {                                                  \
      FT_FAIL_AT_("%s: %s", #call, nvrtcGetErrorString(r_));                    \
      goto done;                                                                \
    }                                                                           \
  } while (0)

typedef struct case_def {
  const char *expr;
  int positive; /* inputs in (0, 20] instead of [-20, 20] */
} case_def;

static const case_def k_cases[] = {
    {"min(x, 0.5)", 0},         {"max(x, -0.5)", 0},   {"relu(x)", 0},       {"leaky_relu(x, 0.01)", 0},
    {"gelu(x)", 0},             {"gelu_tanh(x)", 0},   {"sigmoid(x)", 0},    {"silu(x)", 0},
    {"tanh(x)", 0},             {"mish(x)", 0},        {"softplus(x)", 0},   {"elu(x)", 0},
    {"hardtanh(x, -1, 1)", 0},  {"clamp(x, -2, 3)", 0}, {"abs(x)", 0},       {"exp(x)", 0},
    {"log(x)", 1},              {"sqrt(x)", 1},        {"-x * 2 + 1", 0},    {"x / 3 - 0.25", 0},
    {"1 / (1 + x)", 0},         {"x / (x * x + 2)", 0},    {"tanh(softplus(x))", 0}, {"mish(mish(x))", 0},
};

typedef struct FtEpArgs {
  const float *v[8];
  float s[8];
} FtEpArgs;

static const char *const k_kernel_fmt =
    "struct FtEpArgs { const float *v[8]; float s[8]; };\n"
    "extern \"C\" __global__ void k(const float *in, float *out, int n, FtEpArgs ep) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n) return;\n"
    "  float x = in[i];\n"
    "  out[i] = %s;\n"
    "}\n";

/* The same kernel's shape for ft_div: a from in[0, n), b from in[n, 2n). */
static const char *const k_div_kernel =
    "extern \"C\" __global__ void k(const float *in, float *out, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) out[i] = ft_div(in[i], in[n + i]);\n"
    "}\n";

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform inputs plus the edges: zeros, the range ends, the softplus threshold, tiny values. */
static void fill_inputs(float *in, int positive, uint64_t seed) {
  static const float edges[] = {0.0f, -0.0f, 20.0f, -20.0f, 19.999998f, 1e-30f, -1e-30f, 1.0f, -1.0f, 0.5f};
  for (int i = 0; i < N_INPUTS; i++) {
    double u = (double)(splitmix64(&seed) >> 11) * 0x1.0p-53; /* [0, 1) */
    in[i] = positive ? (float)(20.0 * (1.0 - u)) : (float)(40.0 * u - 20.0);
  }
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    if (!positive || edges[i] > 0.0f) in[i] = edges[i];
}

/* The architecture option: the device's own when NVRTC knows it, else PTX for the newest
 * architecture NVRTC supports below it (the driver JIT-compiles PTX). */
static int pick_arch(int cc, char *opt, size_t n) {
  int count = 0, best = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return -1;
  int *archs = malloc(sizeof(int) * (size_t)count);
  if (!archs) return -1;
  if (nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS) count = 0;
  for (int i = 0; i < count; i++)
    if (archs[i] <= cc && archs[i] > best) best = archs[i];
  free(archs);
  if (best == 0) return -1;
  snprintf(opt, n, "--gpu-architecture=%s_%d", best == cc ? "sm" : "compute", best);
  return best == cc; /* 1: cubin, 0: PTX */
}

/* Compiles ft_math.cuh followed by body (k_kernel_fmt with expr_cuda in it when expr_cuda is not
 * NULL); returns malloc'd code (cubin or PTX) or NULL after recording why. */
static char *compile_kernel(const char *prelude, const char *body, const char *expr_cuda, int cc) {
  char *src = NULL, *code = NULL, *log = NULL;
  nvrtcProgram prog = NULL;
  size_t mlen = 0, size = 0, log_len = 0;
  const char *math = ft__embedded("kernels_src/ft_math.cuh", &mlen);
  char arch[64];
  int cubin = pick_arch(cc, arch, sizeof arch);
  if (!math || cubin < 0) {
    FT_FAIL_AT_("no ft_math.cuh or no NVRTC architecture for sm_%d", cc);
    return NULL;
  }
  const size_t plen = strlen(prelude);
  size_t n = plen + mlen + strlen(body) + (expr_cuda ? strlen(expr_cuda) : 0) + 1;
  if (!(src = malloc(n))) goto done;
  memcpy(src, prelude, plen);
  memcpy(src + plen, math, mlen);
  if (expr_cuda) snprintf(src + plen + mlen, n - plen - mlen, body, expr_cuda);
  else snprintf(src + plen + mlen, n - plen - mlen, "%s", body);
  NVRTC_OK(nvrtcCreateProgram(&prog, src, "gpu_test_epilogue.cu", 0, NULL, NULL));
  const char *opts[] = {arch};
  nvrtcResult r = nvrtcCompileProgram(prog, 1, opts);
  if (r != NVRTC_SUCCESS) {
    if (nvrtcGetProgramLogSize(prog, &log_len) == NVRTC_SUCCESS && (log = malloc(log_len + 1)) &&
        nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
      log[0] = '\0';
    FT_FAIL_AT_("NVRTC %s for %s:\n%s\n%s", nvrtcGetErrorString(r), arch, src, log ? log : "");
    goto done;
  }
  NVRTC_OK(cubin ? nvrtcGetCUBINSize(prog, &size) : nvrtcGetPTXSize(prog, &size));
  if (!(code = malloc(size))) goto done;
  if (cubin) NVRTC_OK(nvrtcGetCUBIN(prog, code));
  else NVRTC_OK(nvrtcGetPTX(prog, code));
  free(src);
  free(log);
  nvrtcDestroyProgram(&prog);
  return code;
done:
  free(code);
  free(src);
  free(log);
  if (prog) nvrtcDestroyProgram(&prog);
  return NULL;
}

/* Runs the kernel on in[0, n_in) and writes out[0, N_INPUTS) (the division kernel takes no ep:
 * the launch reads as many arguments as the kernel has). */
static void run_kernel(const char *code, const float *in, size_t n_in, float *out) {
  cudaLibrary_t lib = NULL;
  cudaKernel_t kern = NULL;
  float *d_in = NULL, *d_out = NULL;
  int n = N_INPUTS;
  FtEpArgs ep;
  memset(&ep, 0, sizeof ep);
  CUDA_OK(cudaLibraryLoadData(&lib, code, NULL, NULL, 0, NULL, NULL, 0));
  CUDA_OK(cudaLibraryGetKernel(&kern, lib, "k"));
  CUDA_OK(cudaMalloc((void **)&d_in, sizeof(float) * n_in));
  CUDA_OK(cudaMalloc((void **)&d_out, sizeof(float) * N_INPUTS));
  CUDA_OK(cudaMemcpy(d_in, in, sizeof(float) * n_in, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d_out, 0xff, sizeof(float) * N_INPUTS)); /* NaN: unwritten elements fail */
  void *args[] = {&d_in, &d_out, &n, &ep};
  dim3 block = {256, 1, 1}, grid = {(N_INPUTS + 255) / 256, 1, 1};
  CUDA_OK(cudaLaunchKernel((const void *)kern, grid, block, args, 0, NULL));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(out, d_out, sizeof(float) * N_INPUTS, cudaMemcpyDeviceToHost));
done:
  if (d_in) CUDA_OK_CLEANUP(cudaFree(d_in));
  if (d_out) CUDA_OK_CLEANUP(cudaFree(d_out));
  if (lib) CUDA_OK_CLEANUP(cudaLibraryUnload(lib));
}

/* Compares out[] with the float64 evaluation; prints the worst elements. */
static void compare(const form_def *f, const char *text, const ft_epilogue *ep, const float *in, const float *out) {
  const double REL_TOL = f->rel_tol, ABS_TOL = f->abs_tol;
  int bad = 0;
  double worst_rel = 0.0;
  for (int i = 0; i < N_INPUTS; i++) {
    double ref = ft_ep_eval(ep, (double)in[i], NULL), got = (double)out[i];
    double err = fabs(got - ref), rel = ref != 0.0 ? err / fabs(ref) : err;
    int ok = isnan(ref) ? isnan(got) : isinf(ref) ? got == ref : (err <= ABS_TOL || rel <= REL_TOL);
    if (ok && err > ABS_TOL && rel > worst_rel) worst_rel = rel;
    if (!ok && bad++ < 5)
      fprintf(stderr, "  %s: x = %.9g: got %.9g, float64 %.17g (abs %.3g, rel %.3g)\n", text, (double)in[i], got,
              ref, err, rel);
  }
  fprintf(stderr, "%-8s %-22s worst relative error %.3g, %d of %d outside tolerance\n", f->name, text, worst_rel, bad,
          N_INPUTS);
  if (bad) FT_FAIL_AT_("%s (%s): %d results outside relative %g / absolute %g", text, f->name, bad, REL_TOL, ABS_TOL);
}

static void check_case(const form_def *f, const case_def *c, int cc, float *in, float *out, uint64_t seed) {
  ft_epilogue *ep = NULL;
  ft_err err;
  if (ft_ep_parse(c->expr, &ep, &err) != FT_OK) {
    FT_FAIL_AT_("parse of %s: %s", c->expr, err.msg);
    return;
  }
  char *code = compile_kernel(f->prelude, k_kernel_fmt, ft_ep_cuda(ep), cc);
  if (code) {
    fill_inputs(in, c->positive, seed);
    for (int i = 0; i < N_INPUTS; i++) out[i] = NAN;
    int before = ft_test_failures;
    run_kernel(code, in, N_INPUTS, out);
    if (ft_test_failures == before) compare(f, c->expr, ep, in, out);
    free(code);
  }
  ft_ep_free(ep);
}

/* Distance in ulps between two non-NaN floats (the ordered integers of their bits: the largest
 * float and infinity are one apart); zeros of opposite signs count as far apart, since the sign
 * of a zero shows later (1 / -0 is -inf). */
static long long ulps_apart(float a, float b) {
  if (a == 0.0f && b == 0.0f) return signbit(a) == signbit(b) ? 0 : 1LL << 40;
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  const long long oa = ia < 0 ? -(long long)(ia & 0x7fffffff) - 1 : ia, ob = ib < 0 ? -(long long)(ib & 0x7fffffff) - 1 : ib;
  return oa > ob ? oa - ob : ob - oa;
}

static float float_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ft_div on N_INPUTS pairs: the special values against each other, then random bit patterns
 * (every exponent, subnormals, infinities and NaNs among them). */
static void check_div(int cc) {
  static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 3.0f, -7.0f, 0.1f, 1e10f, -1e-10f, 0x1p-149f, -0x1p-149f,
                                   1e-40f, -3e-39f, 0x1p-126f, 0x1.fffffep-127f, 0x1p126f, 0x1.8p126f, -0x1p127f,
                                   3.4028235e38f, -3.4028235e38f, INFINITY, -INFINITY, NAN};
  const int ns = (int)(sizeof specials / sizeof specials[0]);
  float *in = malloc(sizeof(float) * 2 * N_INPUTS), *out = malloc(sizeof(float) * N_INPUTS);
  char *code = NULL;
  if (!in || !out) {
    FT_FAIL_AT_("out of host memory");
    goto done;
  }
  uint64_t seed = 0xd1f0ULL;
  for (int i = 0; i < N_INPUTS; i++) {
    in[i] = float_of_bits((uint32_t)splitmix64(&seed));
    in[N_INPUTS + i] = float_of_bits((uint32_t)splitmix64(&seed));
    out[i] = NAN;
  }
  for (int i = 0; i < ns * ns; i++) in[i] = specials[i / ns], in[N_INPUTS + i] = specials[i % ns];
  /* Directed cases after the special values, 2^16 of each kind: subnormal numerators over
   * divisors in [2^-30, 2^31) (normal quotients whose residual falls under the subnormal grid
   * unless a is scaled first); quotients within 8 ulps below the largest float (a reciprocal an
   * ulp high overflows a * r); zero numerators of either sign. */
  int i = ns * ns;
  for (int k = 0; k < (1 << 16); k++, i++) {
    const uint32_t u = (uint32_t)splitmix64(&seed), v = (uint32_t)splitmix64(&seed);
    in[i] = float_of_bits((u & 0x807fffffu) | (u & 0x7fffffu ? 0 : 1u));
    in[N_INPUTS + i] = float_of_bits((v & 0x807fffffu) | ((uint32_t)(97 + v % 61) << 23));
  }
  for (int k = 0; k < (1 << 16); k++, i++) {
    const uint32_t v = (uint32_t)splitmix64(&seed);
    const float b = float_of_bits((v & 0x807fffffu) | ((uint32_t)(107 + v % 20) << 23)); /* [2^-20, 1) */
    in[i] = (float)((double)FLT_MAX * (1.0 - (double)(k % 8) * 0x1p-24) * (double)b);
    in[N_INPUTS + i] = b;
  }
  for (int k = 0; k < (1 << 16); k++, i++) {
    in[i] = k & 1 ? -0.0f : 0.0f;
    in[N_INPUTS + i] = float_of_bits((uint32_t)splitmix64(&seed));
  }
  if (!(code = compile_kernel("", k_div_kernel, NULL, cc))) goto done;
  int before = ft_test_failures, bad = 0;
  run_kernel(code, in, 2 * (size_t)N_INPUTS, out);
  if (ft_test_failures != before) goto done;
  long long worst = 0;
  for (int i = 0; i < N_INPUTS; i++) {
    const float a = in[i], b = in[N_INPUTS + i], want = a / b, got = out[i];
    const long long d = isnan(want) || isnan(got) ? (isnan(want) && isnan(got) ? 0 : 1LL << 40) : ulps_apart(want, got);
    if (d > worst && d <= 1) worst = d;
    if (d > 1 && bad++ < 5)
      fprintf(stderr, "  ft_div(%a, %a): got %a, IEEE %a (%lld ulps)\n", (double)a, (double)b, (double)got, (double)want, d);
  }
  fprintf(stderr, "%-22s worst %lld ulp, %d of %d more than 1 ulp from IEEE division (or a zero of the other sign)\n",
          "ft_div", worst, bad, N_INPUTS);
  if (bad) FT_FAIL_AT_("ft_div: %d quotients more than 1 ulp from IEEE division", bad);
done:
  free(code);
  free(in);
  free(out);
}

int main(void) {
  int count = 0, dev = 0, major = 0, minor = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) RETURN_SKIP("no CUDA device");
  float *in = malloc(sizeof(float) * N_INPUTS), *out = malloc(sizeof(float) * N_INPUTS);
  if (!in || !out) {
    FT_FAIL_AT_("out of host memory");
    goto done;
  }
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CUDA_OK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  for (size_t f = 0; f < sizeof k_forms / sizeof k_forms[0]; f++)
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
      check_case(&k_forms[f], &k_cases[i], major * 10 + minor, in, out, 0x5eed0000ULL + i);
  check_div(major * 10 + minor);
done:
  free(in);
  free(out);
  return FT_TEST_DONE();
}
