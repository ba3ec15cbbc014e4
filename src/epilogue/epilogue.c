/* The epilogue expression language: the function and preset tables and the entry points of
 * epilogue.h. The work is in epilogue_lex.c, epilogue_parse.c, epilogue_print.c,
 * epilogue_eval.c and epilogue_eager.c. The grammar and every definition: docs/EPILOGUE.md. */
#include <stdlib.h>
#include <string.h>

#include "epilogue_internal.h"

const fn_def ft__ep_fns[FN_COUNT] = {
    [FN_MIN] = {"min", 2, "ft_min"},
    [FN_MAX] = {"max", 2, "ft_max"},
    [FN_RELU] = {"relu", 1, "ft_relu"},
    [FN_LEAKY_RELU] = {"leaky_relu", 2, "ft_leaky_relu"},
    [FN_GELU] = {"gelu", 1, "ft_gelu"},
    [FN_GELU_TANH] = {"gelu_tanh", 1, "ft_gelu_tanh"},
    [FN_SIGMOID] = {"sigmoid", 1, "ft_sigmoid"},
    [FN_SILU] = {"silu", 1, "ft_silu"},
    [FN_TANH] = {"tanh", 1, "ft_tanh"},
    [FN_MISH] = {"mish", 1, "ft_mish"},
    [FN_SOFTPLUS] = {"softplus", 1, "ft_softplus"},
    [FN_ELU] = {"elu", 1, "ft_elu"},
    [FN_CLAMP] = {"clamp", 3, "ft_clamp"},
    [FN_ABS] = {"abs", 1, "ft_abs"},
    [FN_EXP] = {"exp", 1, "ft_exp"},
    [FN_LOG] = {"log", 1, "ft_log"},
    [FN_SQRT] = {"sqrt", 1, "ft_sqrt"},
};

static const char *const k_preset_names[] = {"none",     "bias",     "relu",  "biasrelu",
                                             "biasgelu", "biassilu", "minsub"};
static const char *const k_preset_texts[] = {"x",
                                             "x + bias",
                                             "relu(x)",
                                             "relu(x + bias)",
                                             "gelu(x + bias)",
                                             "silu(x + bias)",
                                             "min(x + bias, c) - c where c = 2"};
#define N_PRESETS ((int)(sizeof k_preset_names / sizeof k_preset_names[0]))

int ft_ep_presets(const char *const **names, const char *const **texts) {
  if (names) *names = k_preset_names;
  if (texts) *texts = k_preset_texts;
  return N_PRESETS;
}

void ft_ep_free(ft_epilogue *ep) {
  if (!ep) return;
  free(ep->nodes);
  free(ep->canon);
  free(ep->cuda);
  free(ep->cuda_folded);
  free(ep->red_inner);
  free(ep->red_post);
  free(ep->red_pool_arg);
  free(ep->cuda_lt_act);
  free(ep->cuda_resid);
  free(ep->red_norm_arg);
  free(ep);
}

/* The CUDA text of E with node n read as x (what a GEMM that computed n already leaves in y). */
static char *cuda_reading_as_x(const ft_epilogue *ep, int n) {
  int *in_of = malloc((size_t)ep->nnodes * sizeof *in_of);
  if (!in_of) return NULL;
  for (int i = 0; i < ep->nnodes; i++) in_of[i] = -1;
  in_of[n] = FT__EP_AS_X;
  char *text = ft__ep_print_cuda(ep, ep->root, in_of);
  free(in_of);
  return text;
}

static ft_status finish(ft_epilogue *ep, ft_err *err) {
  const int reduces = ft_ep_reduction(ep, NULL) != FT_RED_NONE; /* no CUDA expression */
  ep->canon = ft__ep_print_canonical(ep);
  ep->cuda = reduces ? NULL : ft__ep_print_cuda(ep, ep->root, NULL);
  if (!ep->canon || (!reduces && !ep->cuda)) return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  if (reduces) FT_TRY(ft__ep_reduce_texts(ep, err));
  /* A reduction has no elementwise text for cuBLASLt's epilogues to shorten. */
  const int fold = reduces ? -1 : ft__ep_bias_fold(ep, &ep->fold_slot);
  if (fold >= 0 && !(ep->cuda_folded = cuda_reading_as_x(ep, fold)))
    return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  const int act = reduces ? -1 : ft__ep_act_fold(ep, &ep->lt_act_slot, &ep->lt_act);
  if (act >= 0 && !(ep->cuda_lt_act = cuda_reading_as_x(ep, act)))
    return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  const int resid = reduces ? -1 : ft__ep_resid_fold(ep, &ep->resid_slot, &ep->resid_bias_slot);
  if (resid >= 0 && !(ep->cuda_resid = cuda_reading_as_x(ep, resid)))
    return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  /* The canonical text is what the database stores and parses again (imports, lookups): it must
   * be accepted input itself. It can outgrow the input ("--x" is written "- -x"). */
  const size_t len = strlen(ep->canon);
  if (len > FT_EP_MAX_TEXT)
    return ft__fail(err, FT_ERR_PARSE, "epilogue: col 1: its canonical form is %zu bytes, longer than %d", len,
                    FT_EP_MAX_TEXT);
  ft__hash_hex(ep->canon, len, ep->hash);
  return FT_OK;
}

/* The preset expansion when the whole text, spaces aside, is a preset name. */
static const char *expand_preset(const char *text) {
  const char *word = text;
  while (is_space(*word)) word++;
  size_t len = 0;
  while (is_alnum(word[len])) len++;
  for (size_t i = len; word[i]; i++)
    if (!is_space(word[i])) return text;
  for (int i = 0; i < N_PRESETS; i++)
    if (strlen(k_preset_names[i]) == len && memcmp(k_preset_names[i], word, len) == 0) return k_preset_texts[i];
  return text;
}

ft_status ft_ep_parse(const char *text, ft_epilogue **out, ft_err *err) {
  if (out) *out = NULL;
  if (!text || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue: NULL argument");
  if (ft__bounded_len(text, FT_EP_MAX_TEXT + 1) > FT_EP_MAX_TEXT)
    return ft__fail(err, FT_ERR_PARSE, "epilogue: col %d: text longer than %d bytes", FT_EP_MAX_TEXT + 1,
                    FT_EP_MAX_TEXT);
  ft_epilogue *ep = calloc(1, sizeof *ep);
  if (ep) ep->fold_slot = ep->lt_act_slot = ep->resid_slot = ep->resid_bias_slot = -1;
  if (!ep) return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  parser p = {0};
  p.src = expand_preset(text);
  p.err = err;
  ft_status s = ft__ep_parse_text(&p, ep);
  ep->nodes = p.nodes;
  ep->nnodes = p.nnodes;
  if (s == FT_OK) s = finish(ep, err);
  if (s != FT_OK) {
    ft_ep_free(ep);
    return s;
  }
  *out = ep;
  return FT_OK;
}

const char *ft_ep_canonical(const ft_epilogue *ep) { return ep->canon; }
const char *ft_ep_hash(const ft_epilogue *ep) { return ep->hash; }
const char *ft_ep_cuda(const ft_epilogue *ep) { return ep->cuda; }
const char *ft_ep_cuda_folded(const ft_epilogue *ep, int *slot) {
  if (slot) *slot = ep->fold_slot;
  return ep->cuda_folded;
}
const char *ft_ep_cuda_resid(const ft_epilogue *ep, int *mat, int *bias) {
  if (mat) *mat = ep->resid_slot;
  if (bias) *bias = ep->resid_bias_slot;
  return ep->cuda_resid;
}
const char *ft_ep_cuda_lt_act(const ft_epilogue *ep, int *slot, ft_ep_lt_act *act) {
  if (slot) *slot = ep->lt_act_slot;
  if (act) *act = (ft_ep_lt_act)ep->lt_act;
  return ep->cuda_lt_act;
}
int ft_ep_param_count(const ft_epilogue *ep) { return ep->nparams; }
int ft_ep_uses_x2(const ft_epilogue *ep) { return ep->uses_x2; }

int ft_ep_has_matrix(const ft_epilogue *ep) {
  for (int i = 0; i < ep->nparams; i++)
    if (ep->params[i].kind == FT_PARAM_MATRIX) return 1;
  return 0;
}

float ft_ep_mat_pitch(int pitch) {
  float f;
  memcpy(&f, &pitch, sizeof f); /* int bits in a float word: __float_as_int on the device */
  return f;
}

const ft_ep_param *ft_ep_param_at(const ft_epilogue *ep, int slot) {
  if (slot < 0 || slot >= ep->nparams) return NULL;
  return &ep->params[slot];
}
