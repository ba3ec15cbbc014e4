/* Gated pairs: the rule a problem with x2 must meet (the interleaved weight's copy is
 * src/api/api_gated.c's, on the device). GPU-free. */
#include "gated.h"

ft_status ft_gated_check(const ft_epilogue *ep, ft_math math, int64_t n, ft_err *err) {
  if (!ep || !ft_ep_uses_x2(ep)) return FT_OK;
  if (n % FT_GATED_GROUP)
    return ft__fail(err, FT_ERR_INVALID_ARG, "n %lld: an epilogue with x2 (a gated pair) needs n a multiple of %d, the "
                    "interleaved weight's row group (ft_gated_interleave)", (long long)n, FT_GATED_GROUP);
  if (math == FT_MATH_FP8)
    return ft__fail(err, FT_ERR_UNSUPPORTED, "fp8: an epilogue with x2 (a gated pair) is not served in fp8 yet");
  return FT_OK;
}
