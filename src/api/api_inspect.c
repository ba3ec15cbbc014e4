/* GPU-free inspection for tools (fusedtune_tool.h): the kernel variants of a problem, optionally
 * compiled, and what an epilogue expression parses to. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "codegen.h"
#include "compile.h"
#include "fusedtune_tool.h"

_Static_assert(FT_EPILOGUE_MAX_PARAMS == FT_EP_MAX_PARAMS, "the public parameter table must hold every parameter");


/* The architecture and limits to enumerate for: arch, else the current device's, else sm_90. */
static ft_status pick_arch(const char *arch, ft_variant_list *l, ft_device_limits *lim, ft_err *err) {
  ft_gpu *g = NULL;
  ft_err ignored;
  if (!arch && ft_gpu_open(ft__current_device(), &g, &ignored) == FT_OK) {
    *lim = *ft_gpu_limits(g);
    snprintf(l->arch, sizeof l->arch, "%s", ft_gpu_arch(g));
    ft_gpu_close(g);
    return FT_OK;
  }
  if (!arch) arch = "sm_90";
  snprintf(l->arch, sizeof l->arch, "%s", arch);
  /* An architecture the caller named and fusedtune does not know is a bad argument. */
  if (ft_limits_for_arch(arch, lim, err) == FT_OK) return FT_OK;
  err->status = FT_ERR_INVALID_ARG;
  return FT_ERR_INVALID_ARG;
}

/* Appends the variants of kind; their kernel texts go to srcs (kept only when compiling). */
static ft_status add_kind(ft_variant_list *l, ft_variant_kind kind, const ft_problem *p, const ft_device_limits *lim,
                          ft_space_scope scope, const ft_epilogue *ep, ft_kernel_src **srcs, int keep, ft_err *err) {
  ft_variant *vs = NULL;
  int nv = 0;
  ft_status es = ft_space_enumerate_ep(kind, p->m, p->n, p->k, p->math, scope, ep, lim, &vs, NULL, &nv, err); /* the tune's */
  if (es == FT_ERR_UNSUPPORTED && kind == FT_VK_GEMM) es = FT_OK, nv = 0; /* the epilogue pass serves */
  FT_TRY(es);
  ft_variant_info *items = realloc(l->items, (size_t)(l->count + nv + 1) * sizeof *items);
  ft_kernel_src *ks = keep ? realloc(*srcs, (size_t)(l->count + nv + 1) * sizeof *ks) : NULL;
  if (items) l->items = items;
  if (ks) *srcs = ks;
  ft_status s = !items || (keep && !ks) ? ft__fail(err, FT_ERR_NOMEM, "out of memory for %d variants", nv) : FT_OK;
  for (int i = 0; i < nv && s == FT_OK; i++) {
    ft_variant_info *it = &l->items[l->count];
    memset(it, 0, sizeof *it);
    ft_variant_name(&vs[i], it->name, sizeof it->name);
    ft_variant_json(&vs[i], it->config, sizeof it->config);
    it->strategy = kind == FT_VK_GEMM ? FT_STRATEGY_FUSED : FT_STRATEGY_CUBLAS_EPILOGUE;
    ft_kernel_src src;
    s = ft_codegen_variant(&vs[i], ep, &src, err);
    if (s != FT_OK) break;
    memcpy(it->source_hash, src.hash, sizeof it->source_hash);
    it->regs = it->spill_bytes = -1;
    if (keep) (*srcs)[l->count] = src;
    else ft_kernel_src_free(&src);
    l->count++;
  }
  free(vs);
  return s;
}

/* The most "Used N registers" and the sum of "S bytes spill stores, L bytes spill loads" over the
 * entries of a ptxas -v log (a GEMM with a reduce kernel has two). */
static void ptxas_usage(const char *log, int *regs, int *spill) {
  for (const char *u = log; u && (u = strstr(u, "Used ")); u += 5) {
    const int r = atoi(u + 5);
    if (r > *regs) *regs = r;
  }
  int sum = 0, found = 0;
  for (const char *sp = log; sp && (sp = strstr(sp, "bytes stack frame, ")); sp += 19) {
    int stores = 0, loads = 0;
    if (sscanf(sp, "bytes stack frame, %d bytes spill stores, %d bytes spill loads", &stores, &loads) == 2)
      sum += stores + loads, found = 1;
  }
  if (found) *spill = sum;
}

static ft_status compile_list(ft_variant_list *l, ft_kernel_src *srcs, ft_variants_progress_fn progress, void *user,
                              ft_err *err) {
  ft_compile_job *jobs = calloc((size_t)l->count + 1, sizeof *jobs);
  if (!jobs) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < l->count; i++) {
    jobs[i].src = srcs[i].text;
    jobs[i].hash = srcs[i].hash;
    jobs[i].arch_suffix = srcs[i].arch_suffix;
  }
  double t0 = ft__now_s();
  ft_status s = ft_compile_many_progress(NULL, l->arch, jobs, l->count, 0, progress, user, err);
  l->compile_s = ft__now_s() - t0;
  l->compiled = 1;
  for (int i = 0; i < l->count; i++) {
    ft_variant_info *it = &l->items[i];
    it->compile_status = s == FT_OK ? jobs[i].status : s;
    l->n_compiled_ok += s == FT_OK && jobs[i].status == FT_OK;
    if (s == FT_OK && jobs[i].status != FT_OK)
      snprintf(it->compile_log, sizeof it->compile_log, "%.300s", jobs[i].log ? jobs[i].log : "");
    ptxas_usage(jobs[i].log, &it->regs, &it->spill_bytes);
    ft_compile_job_clear(&jobs[i]);
  }
  free(jobs);
  return s;
}

ft_status ft_variants(const ft_problem *p, const char *arch, unsigned flags, ft_variant_list **out, char *msg,
                      size_t msg_size) {
  return ft_variants_v2(p, arch, flags, NULL, NULL, out, msg, msg_size);
}

ft_status ft_variants_v2(const ft_problem *p, const char *arch, unsigned flags, ft_variants_progress_fn progress,
                         void *user, ft_variant_list **out, char *msg, size_t msg_size) {
  ft_err err;
  ft__err_clear(&err);
  if (!out || (flags & ~(FT_VARIANTS_COMPILE | FT_VARIANTS_FULL))) {
    ft__copy_msg(msg, msg_size, out ? "ft_variants: unknown flags" : "ft_variants: out is NULL");
    return FT_ERR_INVALID_ARG;
  }
  *out = NULL;
  ft_epilogue *ep = NULL;
  ft_variant_list *l = calloc(1, sizeof *l);
  ft_kernel_src *srcs = NULL;
  int keep = (flags & FT_VARIANTS_COMPILE) != 0;
  ft_device_limits lim;
  ft_status s = l ? ft__check_problem(p, &err) : ft__fail(&err, FT_ERR_NOMEM, "out of memory");
  if (s == FT_OK) s = ft_ep_parse(p->epilogue, &ep, &err);
  if (s == FT_OK) s = ft__check_epilogue_fits(p, ep, &err);
  if (s == FT_OK) s = pick_arch(arch, l, &lim, &err);
  if (s == FT_OK) snprintf(l->epilogue, sizeof l->epilogue, "%s", ft_ep_canonical(ep));
  const ft_space_scope scope = flags & FT_VARIANTS_FULL ? FT_SPACE_FULL : FT_SPACE_PRUNED;
  if (s == FT_OK) s = add_kind(l, FT_VK_GEMM, p, &lim, scope, ep, &srcs, keep, &err);
  if (s == FT_OK) s = add_kind(l, FT_VK_EPILOGUE, p, &lim, scope, ep, &srcs, keep, &err);
  if (s == FT_OK && keep) s = compile_list(l, srcs, progress, user, &err);
  for (int i = 0; keep && srcs && l && i < l->count; i++) ft_kernel_src_free(&srcs[i]);
  free(srcs);
  ft_ep_free(ep);
  if (s != FT_OK) {
    ft_variant_list_free(l);
    ft__copy_msg(msg, msg_size, err.msg[0] ? err.msg : ft_status_string(s));
    return s;
  }
  *out = l;
  return FT_OK;
}

void ft_variant_list_free(ft_variant_list *list) {
  if (!list) return;
  free(list->items);
  free(list);
}

ft_status ft_epilogue_inspect(const char *text, ft_epilogue_info **out, char *msg, size_t msg_size) {
  if (!text || !out) {
    ft__copy_msg(msg, msg_size, "ft_epilogue_inspect: text and out must not be NULL");
    return FT_ERR_INVALID_ARG;
  }
  *out = NULL;
  ft_err err;
  ft__err_clear(&err);
  ft_epilogue *ep = NULL;
  ft_status s = ft_ep_parse(text, &ep, &err);
  if (s != FT_OK) {
    ft__copy_msg(msg, msg_size, err.msg);
    return s;
  }
  /* A reduction has no CUDA expression: the info's is empty. */
  const char *canon = ft_ep_canonical(ep), *cuda = ft_ep_cuda(ep) ? ft_ep_cuda(ep) : "";
  size_t lc = strlen(canon) + 1, lu = strlen(cuda) + 1;
  /* One block: the info, then its two strings, so one free releases everything. */
  ft_epilogue_info *info = calloc(1, sizeof *info + lc + lu);
  if (!info) {
    ft_ep_free(ep);
    ft__copy_msg(msg, msg_size, "out of memory");
    return FT_ERR_NOMEM;
  }
  char *strings = (char *)(info + 1);
  memcpy(strings, canon, lc);
  memcpy(strings + lc, cuda, lu);
  info->canonical = strings;
  info->cuda = strings + lc;
  snprintf(info->hash, sizeof info->hash, "%s", ft_ep_hash(ep));
  info->uses_x2 = ft_ep_uses_x2(ep);
  info->n_params = ft_ep_param_count(ep);
  for (int i = 0; i < info->n_params && i < FT_EPILOGUE_MAX_PARAMS; i++) {
    const ft_ep_param *prm = ft_ep_param_at(ep, i);
    ft_epilogue_param *q = &info->params[i];
    snprintf(q->name, sizeof q->name, "%s", prm->name);
    q->type = prm->kind == FT_PARAM_SCALAR ? FT_PARAM_TYPE_SCALAR
              : prm->kind == FT_PARAM_COLVEC ? FT_PARAM_TYPE_COLVEC
              : prm->kind == FT_PARAM_ROWVEC ? FT_PARAM_TYPE_ROWVEC : FT_PARAM_TYPE_MATRIX;
    q->has_default = prm->has_default;
    q->default_value = prm->def;
  }
  ft_ep_free(ep);
  *out = info;
  return FT_OK;
}

void ft_epilogue_info_free(ft_epilogue_info *info) { free(info); }

int ft_epilogue_preset(int i, const char **name, const char **text) {
  const char *const *names = NULL, *const *texts = NULL;
  int n = ft_ep_presets(&names, &texts);
  if (i >= 0 && i < n) {
    if (name) *name = names[i];
    if (text) *text = texts[i];
  }
  return n;
}
