/* libFuzzer target for the epilogue parser. On every accepted input: the canonical text parses
 * back to itself (same hash, same parameters, same CUDA texts, same values: a reduction's over a
 * small matrix), the CUDA texts hold only characters the emitter writes (a reduction has none for
 * the whole expression, and its two parts where a kernel serves it), the eager plan builds. Any
 * violation aborts. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "epilogue.h"

static void fail(const char *what, const char *text) {
  fprintf(stderr, "fuzz_epilogue: %s\ninput: %s\n", what, text);
  abort();
}

static int cuda_chars_ok(const char *s) {
  for (; *s; s++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-*/(), []", *s)) return 0;
  return 1;
}

/* Same value, NaN equal to NaN. */
static int same_value(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void check_params(const ft_epilogue *a, const ft_epilogue *b, const char *text) {
  if (ft_ep_param_count(a) != ft_ep_param_count(b)) fail("parameter count changed", text);
  for (int i = 0; i < ft_ep_param_count(a); i++) {
    const ft_ep_param *p = ft_ep_param_at(a, i), *q = ft_ep_param_at(b, i);
    if (!p || !q || strcmp(p->name, q->name) != 0 || p->kind != q->kind || p->has_default != q->has_default ||
        (p->has_default && !same_value(p->def, q->def)))
      fail("parameters changed", text);
  }
}

/* Texts equal, both NULL included. */
static int same_text(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* A reduction's reference over a 2 x 60 matrix (60: most group counts and windows divide it). */
static void check_matrix(const ft_epilogue *a, const ft_epilogue *b, const char *text) {
  enum { M = 2, N = 60 };
  double x[M * N], ya[M * N], yb[M * N], pv[FT_EP_MAX_PARAMS][N];
  const double *params[FT_EP_MAX_PARAMS];
  for (int i = 0; i < M * N; i++) x[i] = sin(0.7 * i) * 3.0;
  for (int s = 0; s < FT_EP_MAX_PARAMS; s++) {
    for (int j = 0; j < N; j++) pv[s][j] = 0.5 + s + 0.01 * j;
    params[s] = pv[s];
  }
  ft_err err;
  const ft_status sa = ft_ep_eval_matrix(a, M, N, x, params, ya, &err);
  if (sa != ft_ep_eval_matrix(b, M, N, x, params, yb, &err)) fail("canonical text's reference fails differently", text);
  if (sa != FT_OK) return; /* a group count or window that does not fit N = 60 */
  int64_t rows = 0, cols = 0;
  if (ft_ep_output_shape(a, M, N, NULL, &rows, &cols, &err) != FT_OK) fail("output shape", text);
  for (int64_t i = 0; i < rows * cols; i++)
    if (!same_value(ya[i], yb[i])) fail("canonical text's reference differs", text);
}

static void check_values(const ft_epilogue *a, const ft_epilogue *b, const char *text) {
  if (ft_ep_reduction(a, NULL) != FT_RED_NONE) {
    check_matrix(a, b, text);
    return;
  }
  static const double xs[] = {0.0, 1.0, -1.5, 3.25, -20.0, 1e-3};
  double vals[FT_EP_MAX_PARAMS];
  for (int i = 0; i < FT_EP_MAX_PARAMS; i++) vals[i] = 0.5 + i;
  for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
    if (!same_value(ft_ep_eval(a, xs[i], vals), ft_ep_eval(b, xs[i], vals)))
      fail("canonical text evaluates differently", text);
}

static void check_round_trip(const ft_epilogue *ep, const char *text) {
  ft_epilogue *again = NULL;
  ft_err err;
  if (ft_ep_parse(ft_ep_canonical(ep), &again, &err) != FT_OK) fail(err.msg, ft_ep_canonical(ep));
  if (strcmp(ft_ep_canonical(ep), ft_ep_canonical(again)) != 0) fail("canonical text not stable", text);
  if (strcmp(ft_ep_hash(ep), ft_ep_hash(again)) != 0) fail("hash not stable", text);
  const char *ia, *pa, *ib, *pb;
  ft_ep_cuda_reduce(ep, &ia, &pa);
  ft_ep_cuda_reduce(again, &ib, &pb);
  if (!same_text(ft_ep_cuda(ep), ft_ep_cuda(again)) || !same_text(ia, ib) || !same_text(pa, pb))
    fail("CUDA text not stable", text);
  check_params(ep, again, text);
  check_values(ep, again, text);
  ft_ep_free(again);
}

/* Both plans, the bias folded into the GEMM (fold 1) and kept a step (fold 0): steps read only
 * earlier buffers; the unfolded plan folds nothing and has as many steps or one more. */
static void check_eager(const ft_epilogue *ep, const char *text) {
  static ft_ep_eager plans[2];
  ft_status s[2];
  for (int fold = 0; fold < 2; fold++) {
    ft_err err;
    const ft_ep_eager *plan = &plans[fold];
    s[fold] = ft_ep_eager_plan_fold(ep, fold, &plans[fold], &err);
    if (s[fold] == FT_ERR_UNSUPPORTED) continue; /* too many passes or a very long step */
    if (s[fold] != FT_OK) fail(err.msg, text);
    for (int i = 0; i < plan->nsteps; i++) {
      const ft_ep_step *st = &plan->steps[i];
      if (st->nin < 1 || st->nin > 3 || !cuda_chars_ok(st->expr)) fail("bad eager step", text);
      for (int j = 0; j < st->nin; j++)
        if (st->in[j] < 0 || (st->in[j] > i && st->in[j] != FT_EP_BUF_X2)) fail("eager step reads a later buffer", text);
    }
  }
  if (s[0] == FT_OK && plans[0].gemm_bias_slot != -1) fail("an unfolded plan folds a bias", text);
  if (s[0] == FT_OK && s[1] == FT_OK && plans[0].nsteps != plans[1].nsteps + (plans[1].gemm_bias_slot >= 0))
    fail("the unfolded plan is not the folded one with the bias as one more step", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  ft_epilogue *ep = NULL;
  ft_err err;
  ft_status s = ft_ep_parse(text, &ep, &err);
  if (s == FT_OK) {
    const char *inner, *post, *whole = ft_ep_cuda(ep);
    ft_ep_cuda_reduce(ep, &inner, &post);
    const int reduces = ft_ep_reduction(ep, NULL) != FT_RED_NONE;
    if (reduces == (whole != NULL)) fail("a CUDA text for a reduction, or none for an elementwise E", text);
    if ((inner != NULL) != (reduces && ft_ep_check_kernels(ep, NULL) == FT_OK) || (inner == NULL) != (post == NULL))
      fail("a served reduction without its CUDA parts, or parts for another", text);
    const char *pool_arg = NULL;
    if ((ft_ep_pool(ep, NULL, &pool_arg) != FT_RED_NONE && inner) != (pool_arg != NULL))
      fail("a served pool without its argument's CUDA text, or a text without one", text);
    const char *texts[4] = {whole, inner, post, pool_arg};
    for (int i = 0; i < 4; i++)
      if (texts[i] && (!cuda_chars_ok(texts[i]) || strstr(texts[i], "--"))) fail("unexpected CUDA text", text);
    check_round_trip(ep, text);
    check_eager(ep, text);
    ft_ep_free(ep);
  } else if (ep != NULL || s != FT_ERR_PARSE || strncmp(err.msg, "epilogue: col ", 14) != 0) {
    fail("a failed parse must be FT_ERR_PARSE with a column", text);
  }
  free(text);
  return 0;
}
