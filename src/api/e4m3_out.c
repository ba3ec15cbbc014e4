/* An e4m3 y (ft_typed_args with y.dtype FT_DTYPE_E4M3): the checks of its fields that need no
 * GPU, made before ft_plan_launch_typed enqueues anything (api_launch.c adds the quantizer's
 * context). GPU-free, tested on the CPU (tests/cpu/test_fp8.c). */
#include <stddef.h>
#include <stdint.h>

#include "api_internal.h"

ft_status ft__e4m3_out_check(const ft_typed_args *a, const ft_epilogue *ep, int64_t m, int64_t n, ft_math math,
                             int64_t *rows, int64_t *cols, ft_err *err) {
  if (a->struct_size < offsetof(ft_typed_args, quantizer) + sizeof a->quantizer)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: y is e4m3, but args (struct_size %zu) end "
                    "before y_scales, y_work and quantizer: start from this version's FT_TYPED_ARGS_INIT",
                    a->struct_size);
  if (!a->y.data || !a->y_work || !a->y_scales || !a->quantizer)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: y is e4m3: set y (the codes), y_work (E's "
                    "result before quantization), y_scales (a scale per row) and quantizer");
  if ((uintptr_t)a->y_scales % sizeof(float))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: y_scales %p is not aligned to its 4-byte floats",
                    (void *)a->y_scales);
  if ((uintptr_t)a->y_work % 16)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: y_work %p is not 16-byte aligned (an e4m3 y's "
                    "buffer for E's result)", a->y_work);
  int ndim = 0;
  FT_TRY(ft_ep_output_shape(ep, m, n, &ndim, rows, cols, err));
  /* A one-value row reduction's [M] would be M rows of one code each (all +-448): no use. */
  if (ndim != 2)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: y is e4m3, but this plan's output is [%lld] (a "
                    "row reduction): an e4m3 y is quantized per row of an [M, N] output", (long long)*rows);
  if (*rows > ((int64_t)1 << 31) - 1) /* the quantizer's limit, checked before the plan is enqueued */
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: an e4m3 y of %lld rows: at most 2^31-1",
                    (long long)*rows);
  const size_t cells = (size_t)*rows * (size_t)*cols,
               work = cells * (ft_math_out_dtype(math) == FT_DTYPE_F32 ? 4 : 2),
               scales = (size_t)*rows * sizeof(float);
  if (ft__ranges_overlap(a->y_work, work, a->y.data, cells) ||
      ft__ranges_overlap(a->y_work, work, a->y_scales, scales) ||
      ft__ranges_overlap(a->y.data, cells, a->y_scales, scales))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: y (%zu codes), y_work (%zu bytes) and y_scales "
                    "(%zu bytes) overlap: an e4m3 y needs three separate buffers", cells, work, scales);
  return FT_OK;
}
