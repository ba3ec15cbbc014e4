// fusedtune tensor-core GEMM, layer 4c: E's matrix operands (`mat r`, FT_EP_MAT_MASK: the slots E
// reads at ep.v[s][row * pitch + col], the pitch in ep.s[s] as int bits). The producer thread, as it
// starts loading a work item's k tiles (its ring runs ahead of the consumers), prefetches into L2
// the slice of each matrix that the item's tile covers, as CUTLASS's epilogue-load warp loads the
// source tile ahead of the epilogue: E's loads at the tile's end then hit L2 rather than HBM, and
// the matrix is read while the MMA runs instead of in a burst at every wave's epilogue. A row's
// slice is one bulk prefetch (cp.async.bulk.prefetch.L2), which needs 16-byte aligned rows (N *
// element size a multiple of 16 and the matrix 16-byte aligned, the usual case); a matrix that is
// not is read by E unprefetched (a fallback of per-line prefetches beside the bulk form made
// ptxas spill). Prefetches are hints: nothing waits for them, no shared memory is used, and no
// address outside the matrix is formed (rows and columns are clipped to Y's).
template <class C>
__device__ __forceinline__ void ft_mat_prefetch(const FtEpArgs &ep, int m0, int n0, int M, int N) {
  if constexpr (C::kMatMask != 0u && C::split_k == 1) { /* split-K: E runs in ft_tc_splitk_reduce */
    n0 /= 1 + C::gated, N /= 1 + C::gated; /* a gated pair's tile covers bn / 2 output columns */
    const int rows = min(m0 + C::kBM, M) - m0, cols = min(n0 + C::bn / (1 + C::gated), N) - n0;
    if (rows <= 0 || cols <= 0) return;
    const unsigned bytes = (unsigned)cols * C::kEsize;
    /* In few registers: the producer runs in kProducerRegs (setmaxnreg.dec). The slots unrolled
     * (a rolled loop indexes ep at run time, which copies it to the stack), the rows rolled. */
#pragma unroll
    for (int s = 0; s < FT_EP_SLOTS; s++) {
      if (!((C::kMatMask >> s) & 1u)) continue;
      /* Read per work item through volatile asm, so that they cannot be hoisted to the kernel's
       * start and kept live through the consumers' code (where ptxas then spilled). */
      unsigned long long a;
      int pitch;
      asm volatile("mov.b64 %0, %1;" : "=l"(a) : "l"(reinterpret_cast<unsigned long long>(ep.v[s])));
      asm volatile("mov.b32 %0, %1;" : "=r"(pitch) : "r"(__float_as_int(ep.s[s])));
      const unsigned long long step = (unsigned long long)pitch * C::kEsize;
      if (((a | step | bytes) & 15u) != 0) continue; /* rows not 16-byte aligned: E reads them unprefetched */
      a += ((unsigned long long)m0 * (unsigned long long)pitch + (unsigned long long)n0) * C::kEsize;
#pragma unroll 1
      for (int r = 0; r < rows; r++, a += step)
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(bytes) : "memory");
    }
  } else {
    (void)ep, (void)m0, (void)n0, (void)M, (void)N;
  }
}
