// fusedtune device-side common code: the epilogue argument block and cp.async helpers.
// Compiled by NVRTC without system headers, so only builtins are used.

// FT_EP_SLOTS, FT_AUX_BLOCK and FT_AUX_ELEMS come from the host (src/kernel_abi.h), written
// by codegen: one definition for both sides.
#if !defined(FT_EP_SLOTS) || !defined(FT_AUX_BLOCK) || !defined(FT_AUX_ELEMS)
#error "fusedtune: kernel ABI constants missing (codegen writes them)"
#endif

// Same layout as the host's ft_ep_args_dev: vectors and scalars of the epilogue, by slot.
struct FtEpArgs {
  const float *v[FT_EP_SLOTS];
  float s[FT_EP_SLOTS];
};

// ft_apply_epilogue is defined by this macro, expanded in a template *after* codegen has
// written `#define FT_EPILOGUE_EXPR (...)`: a function body here would be preprocessed before
// the expression exists. It reads x, row, col and ep (the names ft_ep_cuda() uses).
#define FT_DEFINE_APPLY_EPILOGUE()                                                           \
  __device__ __forceinline__ float ft_apply_epilogue(float x, int row, int col,              \
                                                     const FtEpArgs &ep) {                   \
    (void)row;                                                                               \
    (void)col;                                                                               \
    (void)ep;                                                                                \
    return (float)(FT_EPILOGUE_EXPR);                                                        \
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
