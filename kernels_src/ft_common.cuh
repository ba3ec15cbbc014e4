// fusedtune device-side common code: the epilogue argument block and cp.async helpers.
// Compiled by NVRTC without system headers, so only builtins are used.

// FT_EP_SLOTS, FT_AUX_BLOCK and FT_AUX_ELEMS come from the host (src/base/kernel_abi.h), written
// by codegen: one definition for both sides.
#if !defined(FT_EP_SLOTS) || !defined(FT_AUX_BLOCK) || !defined(FT_AUX_ELEMS)
#error "fusedtune: kernel ABI constants missing (codegen writes them)"
#endif

// Element type of the tensors (FT_DTYPE, from the variant's math mode; src/base/kernel_abi.h):
// 0 fp32, 1 bf16, 2 fp16. ft_elem_t is the storage type; ft_to_float / ft_from_float convert
// (round to nearest even when narrowing). ft_vec_t is an epilogue vector's element: it reads
// as float in every mode, so `x + ep.v[0][col]` is the same expression text everywhere.
#ifndef FT_DTYPE
#define FT_DTYPE 0
#endif
#if FT_DTYPE == 0
typedef float ft_elem_t;
typedef float ft_vec_t;
__device__ __forceinline__ float ft_to_float(float v) { return v; }
__device__ __forceinline__ float ft_from_float(float v) { return v; }
#elif FT_DTYPE == 1 || FT_DTYPE == 2
typedef unsigned short ft_elem_t;
__device__ __forceinline__ float ft_to_float(unsigned short b) {
#if FT_DTYPE == 1
  return __uint_as_float((unsigned)b << 16);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b));
  return f;
#endif
}
__device__ __forceinline__ unsigned short ft_from_float(float f) {
  unsigned short r;
#if FT_DTYPE == 1
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
#else
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
#endif
  return r;
}
struct ft_vec_t {
  unsigned short b;
  __device__ __forceinline__ operator float() const { return ft_to_float(b); }
};
// Element `hi` (0: low half, 1: high half) of a 32-bit word holding two 16-bit elements, and
// two values rounded into such a word.
__device__ __forceinline__ float ft_half_of(unsigned w, int hi) {
  return ft_to_float((ft_elem_t)(hi ? w >> 16 : w & 0xffffu));
}
__device__ __forceinline__ unsigned ft_pack2(float lo, float hi) {
  return (unsigned)ft_from_float(lo) | ((unsigned)ft_from_float(hi) << 16);
}
#else
#error "fusedtune: FT_DTYPE must be 0 (fp32), 1 (bf16) or 2 (fp16)"
#endif

// A vector slot that E reads as fp32 where the mode's vectors are 16-bit (fp8's scales; codegen
// writes ft_vf32(ep.v[i]) for those, src/epilogue/fp8.h).
template <class T>
__device__ __forceinline__ const float *ft_vf32(const T *p) {
  return reinterpret_cast<const float *>(p);
}

// Same layout as the host's ft_ep_args_dev: vectors and scalars of the epilogue, by slot.
struct FtEpArgs {
  const ft_vec_t *v[FT_EP_SLOTS];
  float s[FT_EP_SLOTS];
};

// ft_apply_epilogue is defined by this macro, expanded in a template *after* codegen has
// written `#define FT_EPILOGUE_EXPR (...)`: a function body here would be preprocessed before
// the expression exists. It reads x, row, col and ep (the names ft_ep_cuda() uses), and x2, a
// gated pair's second product, in ft_apply_epilogue2 (the gated kernels'; ft_apply_epilogue
// gives an E without x2 none).
#define FT_DEFINE_APPLY_EPILOGUE()                                                           \
  __device__ __forceinline__ float ft_apply_epilogue2(float x, float x2, int row, int col,   \
                                                      const FtEpArgs &ep) {                  \
    (void)x2;                                                                                \
    (void)row;                                                                               \
    (void)col;                                                                               \
    (void)ep;                                                                                \
    return (float)(FT_EPILOGUE_EXPR);                                                        \
  }                                                                                          \
  __device__ __forceinline__ float ft_apply_epilogue(float x, int row, int col,              \
                                                     const FtEpArgs &ep) {                   \
    return ft_apply_epilogue2(x, 0.0f, row, col, ep);                                        \
  }

// Index -> (row, column) of a rows x cols grid of tiles, G rows walked column by column, so
// blocks running together share W tiles as well as X tiles in L2 (G = 1: row-major order).
template <int G>
__device__ __forceinline__ void ft_grouped_coords(int i, int rows, int cols, int &r, int &c) {
  if (G > 1) {
    const int span = G * cols;
    const int group = i / span;
    const int first = group * G;
    const int n = min(rows - first, G);
    const int in_group = i - group * span;
    r = first + in_group % n;
    c = in_group / n;
  } else {
    (void)rows;
    r = i / cols;
    c = i - r * cols;
  }
}

// Shared-memory address of a generic pointer, as cp.async wants it.
__device__ __forceinline__ unsigned ft_smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// Asynchronous global -> shared copy of BYTES (4, 8 or 16). When pred is false the source size
// is 0, so nothing is read and the destination is zero-filled: masked tails stay in bounds.
// 16-byte copies bypass L1 (.cg); 4/8-byte copies must use .ca.
template <int BYTES>
__device__ __forceinline__ void ft_cp_async(void *smem, const void *gmem, bool pred) {
  const unsigned dst = ft_smem_addr(smem);
  const int src_size = pred ? BYTES : 0;
  if (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
                 "r"(src_size));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem),
                 "n"(BYTES), "r"(src_size));
  }
}

__device__ __forceinline__ void ft_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void ft_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Row and column of flat element i of an [M, N] row-major matrix. 32-bit division when the
// matrix is small enough, because 64-bit division costs several times more instructions.
__device__ __forceinline__ void ft_rowcol(unsigned long long i, unsigned long long total, int N,
                                          int &row, int &col) {
  if (total <= 0xffffffffull) {
    const unsigned ii = (unsigned)i, nn = (unsigned)N;
    const unsigned r = ii / nn;
    row = (int)r;
    col = (int)(ii - r * nn);
  } else {
    const unsigned long long r = i / (unsigned long long)N;
    row = (int)r;
    col = (int)(i - r * (unsigned long long)N);
  }
}

// Advances (row, col) by one element of a row of N columns.
__device__ __forceinline__ void ft_rowcol_next(int N, int &row, int &col) {
  if (++col == N) {
    col = 0;
    ++row;
  }
}

// The skeleton of the elementwise auxiliary kernels (the eager-style steps, the epilogue pass,
// the FFMA families' split-K reduction): a thread's run of consecutive elements of an [M, N]
// row-major matrix, from its first element's row and column (ft_rowcol) on, one vector access
// where the whole vector is inside the matrix, one element at a time where it is not.

// f(lane, row, col) for the LANES elements of one access, (row, col) advanced between them.
template <int LANES, class F>
__device__ __forceinline__ void ft_aux_lanes(int N, int &row, int &col, F f) {
#pragma unroll
  for (int l = 0; l < LANES; l++) {
    f(l, row, col);
    if (l + 1 < LANES) ft_rowcol_next(N, row, col);
  }
}

// f(e, row, col) for the elements e of [i, i + MAX) inside the matrix, one at a time.
template <int MAX, class F>
__device__ __forceinline__ void ft_aux_scalar(unsigned long long i, unsigned long long total, int N, int row, int col,
                                              F f) {
  for (unsigned long long e = i; e < i + MAX && e < total; e++) {
    f(e, row, col);
    ft_rowcol_next(N, row, col);
  }
}
