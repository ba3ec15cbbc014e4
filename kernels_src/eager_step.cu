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
    const float4 a4 = ft_step_load4(in0, i), b4 = ft_step_load4(in1, i), c4 = ft_step_load4(in2, i);
    const float a[4] = {a4.x, a4.y, a4.z, a4.w}, b[4] = {b4.x, b4.y, b4.z, b4.w}, c[4] = {c4.x, c4.y, c4.z, c4.w};
    float o[4];
    ft_aux_lanes<4>(N, row, col, [&](int l, int r, int cl) { o[l] = ft_step_apply(a[l], b[l], c[l], r, cl, ep); });
    *reinterpret_cast<float4 *>(out + i) = make_float4(o[0], o[1], o[2], o[3]);
#else
    const uint2 a = ft_step_load4(in0, i), b = ft_step_load4(in1, i), c = ft_step_load4(in2, i);
    const unsigned aw[2] = {a.x, a.y}, bw[2] = {b.x, b.y}, cw[2] = {c.x, c.y};
    float o[4];
    ft_aux_lanes<4>(N, row, col, [&](int l, int r, int cl) {
      o[l] = ft_step_apply(ft_half_of(aw[l / 2], l % 2), ft_half_of(bw[l / 2], l % 2), ft_half_of(cw[l / 2], l % 2), r,
                           cl, ep);
    });
    *reinterpret_cast<uint2 *>(out + i) = make_uint2(ft_pack2(o[0], o[1]), ft_pack2(o[2], o[3]));
#endif
    return;
  }
  ft_aux_scalar<4>(i, total, N, row, col, [&](unsigned long long e, int r, int cl) {
    const float a = in0 ? ft_to_float(in0[e]) : 0.f, b = in1 ? ft_to_float(in1[e]) : 0.f,
                c = in2 ? ft_to_float(in2[e]) : 0.f;
    out[e] = ft_from_float(ft_step_apply(a, b, c, r, cl, ep));
  });
}
