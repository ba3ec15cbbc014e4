/* Gated pairs: the rule a problem with x2 must meet (the interleaved weight's copy is
 * src/api/api_gated.c's, on the device). GPU-free. */
#include "gated.h"

ft_status ft_gated_check(const ft_epilogue *ep, int64_t n, ft_err *err) {
  if (!ep || !ft_ep_uses_x2(ep)) return FT_OK;
  if (n % FT_GATED_GROUP)
    return ft__fail(err, FT_ERR_INVALID_ARG, "n %lld: an epilogue with x2 (a gated pair) needs n a multiple of %d, the "
                    "interleaved weight's row group (ft_gated_interleave)", (long long)n, FT_GATED_GROUP);
  return FT_OK;
}
