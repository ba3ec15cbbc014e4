/* The CUDA text of epilogues compiles: kernels_src/ft_math.cuh plus the expression (and eager
 * steps) wrapped in small kernels, compiled by NVRTC for sm_90. NVRTC needs no GPU. */
#include <nvrtc.h>

#include "embedded.h"
#include "epilogue.h"
#include "ft_test.h"

static const char *const k_prelude =
    "struct FtEpArgs { const float *v[8]; float s[8]; };\n";

/* The fused form: y = E(y) over an M x N matrix. */
static const char *const k_fused_fmt =
    "extern \"C\" __global__ void k(float *y, int M, int N, FtEpArgs ep) {\n"
    "  int row = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row >= M || col >= N) return;\n"
    "  float x = y[row * N + col];\n"
    "  y[row * N + col] = %s;\n"
    "}\n";

/* The eager form: OUT = step(IN0, IN1, IN2). */
static const char *const k_step_fmt =
    "extern \"C\" __global__ void k(const float *in0, const float *in1, const float *in2, float *out,\n"
    "                               int M, int N, FtEpArgs ep) {\n"
    "  int row = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row >= M || col >= N) return;\n"
    "  int i = row * N + col;\n"
    "  (void)in0; (void)in1; (void)in2;\n"
    "%s"
    "  out[i] = %s;\n"
    "}\n";

/* Compiles ft_math.cuh + prelude + body; prints the log and fails on an error or a warning. */
static void compile_ok(const char *body, const char *what, int line) {
  size_t mlen = 0;
  const char *math = ft__embedded("kernels_src/ft_math.cuh", &mlen);
  if (!math) {
    fprintf(stderr, "%s:%d: kernels_src/ft_math.cuh is not embedded\n", __FILE__, line);
    ft_test_failures++;
    return;
  }
  size_t n = mlen + strlen(k_prelude) + strlen(body) + 1;
  char *src = malloc(n);
  if (!src) {
    ft_test_failures++;
    return;
  }
  snprintf(src, n, "%s%s%s", math, k_prelude, body);
  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, src, "epilogue_test.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    fprintf(stderr, "%s:%d: nvrtcCreateProgram: %s\n", __FILE__, line, nvrtcGetErrorString(r));
    ft_test_failures++;
    free(src);
    return;
  }
  const char *opts[] = {"--gpu-architecture=sm_90", "--std=c++17"};
  r = nvrtcCompileProgram(prog, 2, opts);
  size_t log_len = 0;
  char *log = NULL;
  if (nvrtcGetProgramLogSize(prog, &log_len) == NVRTC_SUCCESS && (log = malloc(log_len + 1)) != NULL) {
    log[0] = '\0';
    if (nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) log[0] = '\0';
  }
  int warned = log && strstr(log, "warning") != NULL;
  if (r != NVRTC_SUCCESS || warned) {
    fprintf(stderr, "%s:%d: %s: NVRTC %s\n--- source ---\n%s\n--- log ---\n%s\n", __FILE__, line, what,
            nvrtcGetErrorString(r), src, log ? log : "(no log)");
    ft_test_failures++;
  }
  free(log);
  nvrtcDestroyProgram(&prog);
  free(src);
}

static void compile_epilogue(const char *text, int line) {
  ft_epilogue *ep = NULL;
  ft_err err;
  if (ft_ep_parse(text, &ep, &err) != FT_OK) {
    fprintf(stderr, "%s:%d: parse of \"%s\" failed: %s\n", __FILE__, line, text, err.msg);
    ft_test_failures++;
    return;
  }
  char body[8192];
  snprintf(body, sizeof body, k_fused_fmt, ft_ep_cuda(ep));
  compile_ok(body, text, line);

  static ft_ep_eager plan;
  if (ft_ep_eager_plan(ep, &plan, &err) != FT_OK) {
    fprintf(stderr, "%s:%d: eager plan of \"%s\" failed: %s\n", __FILE__, line, text, err.msg);
    ft_test_failures++;
  } else {
    for (int i = 0; i < plan.nsteps; i++) {
      /* Declare only the operands the step reads: NVRTC warns about unused ones. */
      static const char *const reads[] = {"  float IN0 = in0[i];\n", "  float IN1 = in1[i];\n",
                                          "  float IN2 = in2[i];\n"};
      char decls[128] = "";
      for (int j = 0; j < plan.steps[i].nin; j++) strcat(decls, reads[j]);
      snprintf(body, sizeof body, k_step_fmt, decls, plan.steps[i].expr);
      compile_ok(body, plan.steps[i].expr, line);
    }
  }
  ft_ep_free(ep);
}

int main(void) {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) RETURN_FAIL("NVRTC unavailable");
  fprintf(stderr, "NVRTC %d.%d\n", major, minor);

  /* Every function, every parameter kind, literals of every shape, nested negation. */
  compile_epilogue(
      "min(x, a) + max(x, -a) + relu(x + bias) + leaky_relu(x, slope) + gelu(x) + gelu_tanh(x) "
      "+ sigmoid(x) * r + silu(x) * v + swish(x) + tanh(x) + mish(x) + softplus(x) + elu(x) "
      "+ hardtanh(x, -1, 1) + clamp(x, lo, 1.5e3) + abs(x) + exp(-abs(x)) + log(abs(x) + 1e-30) "
      "+ sqrt(abs(x)) / (x * x + 0.1) - -(-x) * 3.4e38 + 16777217 "
      "where a = 2, slope = 0.01, lo = -0, col v, row r",
      __LINE__);

  /* Each function alone. */
  static const char *const alone[] = {
      "min(x, 2)", "max(x, 2)", "relu(x)", "leaky_relu(x, 0.01)", "gelu(x)", "gelu_tanh(x)",
      "sigmoid(x)", "silu(x)", "swish(x)", "tanh(x)", "mish(x)", "softplus(x)", "elu(x)",
      "hardtanh(x, -1, 1)", "clamp(x, -2, 2)", "abs(x)", "exp(x)", "log(x)", "sqrt(x)",
  };
  for (size_t i = 0; i < sizeof alone / sizeof alone[0]; i++) compile_epilogue(alone[i], __LINE__);

  /* Presets, and eager plans reading several buffers. */
  const char *const *names;
  int n = ft_ep_presets(&names, NULL);
  for (int i = 0; i < n; i++) compile_epilogue(names[i], __LINE__);
  compile_epilogue("x + 2 * sigmoid(x)", __LINE__);
  compile_epilogue("clamp(x, relu(x) * lo, gelu(x) + r) where lo = 0.5, row r", __LINE__);
  return FT_TEST_DONE();
}
