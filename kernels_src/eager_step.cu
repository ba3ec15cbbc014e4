// fusedtune eager-style step: OUT = f(IN0, IN1, IN2) elementwise over an [M, N] matrix, one
// kernel per operation like PyTorch eager. Codegen defines FT_STEP_EXPR, an expression over the
// float values IN0..IN2 of this element, row, col and ep. Four elements per thread, float4
// accesses where a whole vector is inside the matrix (the buffers come from cudaMalloc, so
// every vector start, a multiple of 4 elements, is 16-byte aligned). Unused inputs may be NULL;
// OUT may be one of the inputs (no __restrict__): each element is read before it is written.

__device__ __forceinline__ float ft_step_apply(float IN0, float IN1, float IN2, int row, int col,
                                               const FtEpArgs &ep) {
  (void)IN0; (void)IN1; (void)IN2; (void)row; (void)col; (void)ep;
  return (float)(FT_STEP_EXPR);
}

__device__ __forceinline__ float4 ft_step_load4(const float *p, size_t i) {
  return p ? *reinterpret_cast<const float4 *>(p + i) : make_float4(0.f, 0.f, 0.f, 0.f);
}

extern "C" __global__ void __launch_bounds__(FT_AUX_BLOCK)
ft_eager_step(const float *in0, const float *in1,
              const float *in2, float *out, int M, int N, FtEpArgs ep) {
  const size_t total = (size_t)M * (size_t)N;
  const size_t i = ((size_t)blockIdx.x * FT_AUX_BLOCK + threadIdx.x) * FT_AUX_ELEMS;
  if (i >= total) return;
  int row, col;
  ft_rowcol(i, total, N, row, col);
  if (i + 4 <= total) {
    const float4 a = ft_step_load4(in0, i), b = ft_step_load4(in1, i), c = ft_step_load4(in2, i);
    float4 o;
    o.x = ft_step_apply(a.x, b.x, c.x, row, col, ep);
    ft_rowcol_next(N, row, col);
    o.y = ft_step_apply(a.y, b.y, c.y, row, col, ep);
    ft_rowcol_next(N, row, col);
    o.z = ft_step_apply(a.z, b.z, c.z, row, col, ep);
    ft_rowcol_next(N, row, col);
    o.w = ft_step_apply(a.w, b.w, c.w, row, col, ep);
    *reinterpret_cast<float4 *>(out + i) = o;
    return;
  }
  for (size_t e = i; e < total; e++) {
    const float a = in0 ? in0[e] : 0.f, b = in1 ? in1[e] : 0.f, c = in2 ? in2[e] : 0.f;
    out[e] = ft_step_apply(a, b, c, row, col, ep);
    ft_rowcol_next(N, row, col);
  }
}
