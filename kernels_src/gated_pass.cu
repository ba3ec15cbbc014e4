// fusedtune gated pass: Y [M, N] = E(x, x2) from G [M, 2N], cuBLAS's product of x with the
// interleaved weight (src/family/gated.h): output column c's x is G's column 16 (c / 8) + c % 8, its x2
// the column 8 further. The "cuBLAS GEMM, then one pass" strategy of a gated pair.
//
// Variant defines: FT_BLOCK, FT_VEC (outputs per access: 1, 2, 4, or 8 with 16-bit elements) and
// FT_EPT (outputs per thread, a multiple of FT_VEC). N is a multiple of 8 and a vector starts at
// a multiple of FT_VEC, so it lies inside one group of 8 columns, and so do its x and x2. E runs
// in fp32; 16-bit outputs are rounded once, at the store.

FT_DEFINE_APPLY_EPILOGUE()

#if FT_EPT % FT_VEC != 0
#error "fusedtune: FT_EPT must be a multiple of FT_VEC"
#endif

// FT_VEC elements as one access of the matching width.
template <int BYTES> struct FtGateWord;
template <> struct FtGateWord<2> { typedef unsigned short T; };
template <> struct FtGateWord<4> { typedef unsigned T; };
template <> struct FtGateWord<8> { typedef uint2 T; };
template <> struct FtGateWord<16> { typedef uint4 T; };
union FtGatePack {
  typedef typename FtGateWord<sizeof(ft_elem_t) * FT_VEC>::T word;
  word w;
  ft_elem_t e[FT_VEC];
};

extern "C" __global__ void __launch_bounds__(FT_BLOCK)
ft_gated_pass(const ft_elem_t *__restrict__ G, ft_elem_t *__restrict__ Y, int M, int N, FtEpArgs ep) {
  const size_t total = (size_t)M * (size_t)N;
  const size_t block_base = (size_t)blockIdx.x * (size_t)(FT_BLOCK * FT_EPT);
  // Every vector's x and x2 loaded before the first store (the exit at the matrix's end kept the
  // later loads behind the earlier stores: two accesses in flight a thread; SASS); in rounds of at
  // most four vectors (64 outputs a thread at once used 255 registers and spilled).
  constexpr int kC = FT_EPT / FT_VEC > 4 ? 4 : FT_EPT / FT_VEC;
  for (int c0 = 0; c0 < FT_EPT / FT_VEC; c0 += kC) {
    FtGatePack a[kC], b[kC];
    int rows[kC], cols[kC];
#pragma unroll
    for (int c = 0; c < kC; c++) {
      const size_t i = block_base + ((size_t)(c0 + c) * FT_BLOCK + threadIdx.x) * FT_VEC;
      rows[c] = cols[c] = 0;
      if (i < total) {
        ft_rowcol(i, total, N, rows[c], cols[c]);
        const ft_elem_t *g = G + (size_t)rows[c] * 2 * (size_t)N + 16 * (cols[c] / 8) + cols[c] % 8;
        a[c].w = *reinterpret_cast<const FtGatePack::word *>(g);
        b[c].w = *reinterpret_cast<const FtGatePack::word *>(g + 8);
      }
    }
#pragma unroll
    for (int c = 0; c < kC; c++) {
      const size_t i = block_base + ((size_t)(c0 + c) * FT_BLOCK + threadIdx.x) * FT_VEC;
      if (i >= total) return;
      const int row = rows[c], col = cols[c];
      FtGatePack o;
#pragma unroll
      for (int l = 0; l < FT_VEC; l++)
        o.e[l] = ft_from_float(ft_apply_epilogue2(ft_to_float(a[c].e[l]), ft_to_float(b[c].e[l]), row, col + l, ep));
      *reinterpret_cast<FtGatePack::word *>(Y + i) = o.w;
    }
  }
}
