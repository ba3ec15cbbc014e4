// fusedtune eager-style step: OUT = f(IN0, IN1, IN2) elementwise over an [M, N] matrix, one
// kernel per operation like PyTorch eager. Codegen defines FT_STEP_EXPR, an expression over the
// float values IN0..IN2 of this element, row, col and ep. The buffers hold ft_elem_t; the step
// computes in fp32 and rounds its result to ft_elem_t, as eager code in bf16 rounds after every
// operation. Four elements per thread, one vector access (float4, or 8 bytes of 16-bit
// elements) where a whole vector is inside the matrix (the buffers come from cudaMalloc, so
// every vector start, a multiple of 4 elements, is aligned). Unused inputs may be NULL; OUT may
// be one of the inputs (no __restrict__): each element is read before it is written.

__device__ __forceinline__ float ft_step_apply(float IN0, float IN1, float IN2, int row, int col,
                                               const FtEpArgs &ep) {
  (void)IN0; (void)IN1; (void)IN2; (void)row; (void)col; (void)ep;
  return (float)(FT_STEP_EXPR);
}

#if FT_AUX_ELEMS != 4
#error "fusedtune: ft_eager_step handles four elements per thread"
#endif

#if FT_DTYPE == 0
__device__ __forceinline__ float4 ft_step_load4(const float *p, size_t i) {
  return p ? *reinterpret_cast<const float4 *>(p + i) : make_float4(0.f, 0.f, 0.f, 0.f);
}
#else
// 16-bit elements: four of them as two 32-bit words (one 8-byte access); zero bits are 0.0.
__device__ __forceinline__ uint2 ft_step_load4(const ft_elem_t *p, size_t i) {
  return p ? *reinterpret_cast<const uint2 *>(p + i) : make_uint2(0u, 0u);
}

__device__ __forceinline__ float ft_step_half(unsigned w, int hi) {
  return ft_to_float((ft_elem_t)(hi ? w >> 16 : w & 0xffffu));
}
#endif

extern "C" __global__ void __launch_bounds__(FT_AUX_BLOCK)
ft_eager_step(const ft_elem_t *in0, const ft_elem_t *in1,
              const ft_elem_t *in2, ft_elem_t *out, int M, int N, FtEpArgs ep) {
  const size_t total = (size_t)M * (size_t)N;
  const size_t i = ((size_t)blockIdx.x * FT_AUX_BLOCK + threadIdx.x) * FT_AUX_ELEMS;
  if (i >= total) return;
  int row, col;
  ft_rowcol(i, total, N, row, col);
  if (i + 4 <= total) {
#if FT_DTYPE == 0
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
#else
    const uint2 a = ft_step_load4(in0, i), b = ft_step_load4(in1, i), c = ft_step_load4(in2, i);
    const unsigned aw[2] = {a.x, a.y}, bw[2] = {b.x, b.y}, cw[2] = {c.x, c.y};
    unsigned o[2];
#pragma unroll
    for (int w = 0; w < 2; w++) {
      const float lo = ft_step_apply(ft_step_half(aw[w], 0), ft_step_half(bw[w], 0), ft_step_half(cw[w], 0), row,
                                     col, ep);
      ft_rowcol_next(N, row, col);
      const float hi = ft_step_apply(ft_step_half(aw[w], 1), ft_step_half(bw[w], 1), ft_step_half(cw[w], 1), row,
                                     col, ep);
      ft_rowcol_next(N, row, col);
      o[w] = (unsigned)ft_from_float(lo) | ((unsigned)ft_from_float(hi) << 16);
    }
    *reinterpret_cast<uint2 *>(out + i) = make_uint2(o[0], o[1]);
#endif
    return;
  }
  for (size_t e = i; e < total; e++) {
    const float a = in0 ? ft_to_float(in0[e]) : 0.f, b = in1 ? ft_to_float(in1[e]) : 0.f,
                c = in2 ? ft_to_float(in2[e]) : 0.f;
    out[e] = ft_from_float(ft_step_apply(a, b, c, row, col, ep));
    ft_rowcol_next(N, row, col);
  }
}
