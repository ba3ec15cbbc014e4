/* The one check of a problem (shape range, epilogue, math mode) that the API and the CLI share. */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "fp8.h"
#include "gated.h"

void ft__copy_msg(char *msg, size_t msg_size, const char *text) {
  if (msg && msg_size > 0) {
    ft__fit_text(msg, msg_size, text, strlen(text));
    ft__printable(msg);
  }
}

ft_status ft__check_problem(const ft_problem *p, ft_err *err) {
  if (!p) return ft__fail(err, FT_ERR_INVALID_ARG, "problem is NULL");
  if (p->m <= 0 || p->n <= 0 || p->k <= 0)
    return ft__fail(err, FT_ERR_INVALID_ARG, "shape %lldx%lldx%lld: m, n and k must be positive", (long long)p->m,
                    (long long)p->n, (long long)p->k);
  FT_TRY(ft_check_shape(p->m, p->n, p->k, err)); /* the kernels' limits */
  if (!p->epilogue) return ft__fail(err, FT_ERR_INVALID_ARG, "problem epilogue is NULL (use \"none\" for no epilogue)");
  if ((unsigned)p->math >= FT_MATH_COUNT)
    return ft__fail(err, FT_ERR_UNSUPPORTED, "math mode %d: must be one of FT_MATH_FP32, TF32, BF16, FP16, 3XTF32, FP8",
                    (int)p->math);
  return FT_OK;
}

ft_status ft__check_epilogue_fits(const ft_problem *p, const ft_epilogue *ep, ft_err *err) {
  FT_TRY(ft_gated_check(ep, p->n, err)); /* x2: n in whole groups of the interleave */
  FT_TRY(ft_fp8_check(p->math, p->n, p->k, ep, NULL, err)); /* fp8's own rules: N, K, the scales */
  FT_TRY(ft_ep_output_shape(ep, p->m, p->n, NULL, NULL, NULL, err));
  return ft_ep_check_kernels(ep, err);
}

ft_status ft_check_problem(const ft_problem *p, char *msg, size_t msg_size) {
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft__check_problem(p, &err);
  ft_epilogue *ep = NULL;
  if (s == FT_OK) s = ft_ep_parse(p->epilogue, &ep, &err);
  if (s == FT_OK) s = ft__check_epilogue_fits(p, ep, &err);
  ft_ep_free(ep);
  if (s != FT_OK) ft__copy_msg(msg, msg_size, err.msg[0] ? err.msg : ft_status_string(s));
  return s;
}

ft_status ft_output_shape(const ft_problem *p, int *ndim, int64_t shape[2], char *msg, size_t msg_size) {
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft__check_problem(p, &err);
  if (s == FT_OK && (!ndim || !shape)) s = ft__fail(&err, FT_ERR_INVALID_ARG, "ft_output_shape: ndim and shape must not be NULL");
  ft_epilogue *ep = NULL;
  if (s == FT_OK) s = ft_ep_parse(p->epilogue, &ep, &err);
  if (s == FT_OK) s = ft_ep_output_shape(ep, p->m, p->n, ndim, &shape[0], &shape[1], &err);
  ft_ep_free(ep);
  if (s != FT_OK) ft__copy_msg(msg, msg_size, err.msg[0] ? err.msg : ft_status_string(s));
  return s;
}
