// fusedtune reduction pass entry: the form the host chose (FT_RED_FORM; src/family/family_reduce.c).
// flags: the column form's counters (kernels_src/reduce_columns.cu), else unused.
// At 512 threads and more, a bound without a block count let ptxas aim at full occupancy: 32
// registers and a spill (groupnorm's fp32 block-per-row pass); one block keeps the 128 cap.
#if FT_BLOCK >= 512
#define FT_RED_LAUNCH_BOUNDS __launch_bounds__(FT_BLOCK, 1)
#else
#define FT_RED_LAUNCH_BOUNDS __launch_bounds__(FT_BLOCK)
#endif
extern "C" __global__ void FT_RED_LAUNCH_BOUNDS
ft_reduce_pass(const ft_elem_t *src, int ld, ft_elem_t *y, float2 *stats, int M, int N, int col0, int ncols,
               FtEpArgs ep, unsigned *flags) {
  if constexpr (kRedForm == 1) {
    ft_red_held(y, M, N, ep);
  } else if constexpr (kRedForm == 2 || kRedForm == 3) {
    ft_red_colstats(src, stats, flags, M, N, ep);
  } else {
    (void)flags;
    ft_red_rows(src, ld, y, stats, M, N, col0, ncols, ep);
  }
}
#undef FT_RED_LAUNCH_BOUNDS // a chain program holds one such entry per reduction step
