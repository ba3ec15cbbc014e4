// Test-only kernels with the ft_gemm ABI, planted by the tuner's test hook
// (FUSEDTUNE_TEST_INJECT=fault,hang) to prove a faulting or hanging candidate costs one result
// and a worker restart, never the tune. Never enumerated, never stored as a best.
struct FtEpArgs {
  const float *v[8];
  float s[8];
};

extern "C" __global__ void ft_gemm(const float *X, const float *W, float *Y, float *WS, int M, int N,
                                   int K, FtEpArgs ep) {
#if defined(FT_TEST_FAULT)
  // A store 4 TiB past the output: an illegal address, which poisons the CUDA context.
  if (threadIdx.x == 0 && blockIdx.x == 0) Y[(size_t)1 << 40] = 1.0f;
#elif defined(FT_TEST_HANG)
  // Spin on an element no one writes (the output is NaN-poisoned first): never returns.
  volatile float *p = Y;
  while (p[0] != 12345.0f) {
  }
#endif
}
