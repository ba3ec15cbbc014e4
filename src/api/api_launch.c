/* The C API's launches: ft_plan_launch (arguments bound by name), ft_plan_launch_ptrs
 * (pointers in the epilogue's slot order, the per-call path of bindings such as Python's) and
 * ft_plan_launch_typed (by name, each tensor with its element type: what an fp8 plan needs; y in
 * e4m3 too: the plan into the caller's y_work, then the quantizer per row). All
 * check what a launch can get wrong and enqueue through src/gpu/launch.c; none allocates, locks or
 * looks anything up. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "fp8.h"

/* fp8 plans bind tensors of three element types: only ft_plan_launch_typed says them. */
static ft_status untyped_fp8(const ft_plan *plan, const char *fn) {
  if (plan->run.v.math != FT_MATH_FP8) return FT_OK;
  return ft__fail(ft__ctx_err(plan->ctx), FT_ERR_INVALID_ARG, "%s: an fp8 plan binds e4m3, bf16 and fp32 tensors: "
                  "launch it with ft_plan_launch_typed (each tensor's element type)", fn);
}

/* Binds slot s of the epilogue from the slot arrays: a vector's pointer from vecs[s], a
 * scalar's value from scalars[s] (NULL: its default). */
static ft_status bind_slots(ft_plan *pl, const void *const *vecs, const float *scalars, const void *y,
                            ft_ep_args_dev *dev) {
  ft_err *err = ft__ctx_err(pl->ctx);
  const int np = ft_ep_param_count(pl->ep);
  for (int s = 0; s < np; s++) {
    const ft_ep_param *prm = ft_ep_param_at(pl->ep, s);
    if (prm->kind == FT_PARAM_SCALAR) {
      if (scalars)
        dev->s[s] = scalars[s];
      else if (prm->has_default)
        dev->s[s] = (float)prm->def;
      else
        return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_ptrs: scalar '%s' (slot %d) has no default: pass "
                        "scalars", prm->name, s);
    } else {
      dev->v[s] = vecs ? vecs[s] : NULL;
      if (!dev->v[s])
        return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_ptrs: %s '%s' (slot %d) is NULL",
                        prm->kind == FT_PARAM_MATRIX ? "matrix" : "vector", prm->name, s);
      if (prm->kind == FT_PARAM_MATRIX) /* its slot's scalar word: the row pitch (scalars[s] unused) */
        FT_TRY(ft__bind_matrix(prm->name, dev->v[s], ft_vec_dtype((ft_math)pl->run.v.math, prm), y, pl->ep, pl->run.m,
                               pl->run.n, &dev->s[s], err));
    }
  }
  return FT_OK;
}

/* The checks both launches make on x, w and y, then the enqueue. */
static ft_status enqueue(ft_plan *plan, const char *fn, const void *x, const void *w, void *y,
                         const ft_ep_args_dev *dev, cudaStream_t stream) {
  ft_err *err = ft__ctx_err(plan->ctx);
  if (!x || !w || !y) return ft__fail(err, FT_ERR_INVALID_ARG, "%s: x, w and y must be set", fn);
  if (ft_launchable_check(&plan->run, x, w, y, plan->name, err) != FT_OK) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return ft__fail(err, FT_ERR_INVALID_ARG, "%s: %s", fn, msg);
  }
  return ft_launchable_enqueue(&plan->run, x, w, y, dev, stream, err);
}

ft_status ft_plan_launch(ft_plan *plan, const ft_args *args, cudaStream_t stream) {
  if (!plan) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__ctx_err(plan->ctx);
  if (!args) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch: args is NULL");
  if (!args->x || !args->w || !args->y) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch: x, w and y must be set");
  if ((args->n_vecs && !args->vecs) || (args->n_scalars && !args->scalars) || args->n_vecs < 0 || args->n_scalars < 0)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch: vecs/scalars arrays do not match their counts");
  FT_TRY(untyped_fp8(plan, "ft_plan_launch"));
  const ft_dtype want = ft_math_dtype((ft_math)plan->run.v.math);
  if (args->dtype != want)
    return ft__fail(err, FT_ERR_INVALID_ARG,
                    "ft_plan_launch: args.dtype %s, but the plan computes in %s on %s tensors (set args.dtype)",
                    ft_dtype_name(args->dtype), ft_math_name((ft_math)plan->run.v.math), ft_dtype_name(want));
  ft_ep_args_dev dev;
  memset(&dev, 0, sizeof dev);
  FT_TRY(ft__bind_args(plan->ep, args, plan->run.m, plan->run.n, &dev, ft__ctx_err(plan->ctx)));
  return enqueue(plan, "ft_plan_launch", args->x, args->w, args->y, &dev, stream);
}

ft_status ft_plan_launch_ptrs(ft_plan *plan, const void *x, const void *w, void *y, const void *const *vecs,
                              const float *scalars, cudaStream_t stream) {
  if (!plan) return FT_ERR_INVALID_ARG;
  FT_TRY(untyped_fp8(plan, "ft_plan_launch_ptrs"));
  ft_ep_args_dev dev;
  memset(&dev, 0, sizeof dev);
  FT_TRY(bind_slots(plan, vecs, scalars, y, &dev));
  return enqueue(plan, "ft_plan_launch_ptrs", x, w, y, &dev, stream);
}

static ft_status need_type(ft_err *err, const char *what, const char *name, ft_dtype got, ft_dtype want, ft_math m) {
  if (got == want) return FT_OK;
  return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: %s%s%s is %s, but a %s plan reads %s there", what,
                  name ? " " : "", name ? name : "", ft_dtype_name(got), ft_math_name(m), ft_dtype_name(want));
}

ft_status ft_plan_launch_typed(ft_plan *plan, const ft_typed_args *a, cudaStream_t stream) {
  if (!plan) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__ctx_err(plan->ctx);
  if (!a) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: args is NULL");
  if (a->struct_size < offsetof(ft_typed_args, n_scalars) + sizeof a->n_scalars || a->struct_size > sizeof *a)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: args must start from FT_TYPED_ARGS_INIT");
  if (a->n_vecs < 0 || a->n_vecs > FT_EP_MAX_PARAMS || (a->n_vecs && !a->vecs) || a->n_scalars < 0 ||
      (a->n_scalars && !a->scalars))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: vecs/scalars arrays do not match their counts "
                    "(at most %d vectors)", FT_EP_MAX_PARAMS);
  const ft_math m = (ft_math)plan->run.v.math;
  FT_TRY(need_type(err, "x", NULL, a->x.dtype, ft_math_dtype(m), m));
  FT_TRY(need_type(err, "w", NULL, a->w.dtype, ft_math_dtype(m), m));
  /* An e4m3 y: E's result goes to y_work in the mode's output type, then the quantizer. */
  const int e4m3_out = a->y.dtype == FT_DTYPE_E4M3;
  int64_t rows = 0, cols = 0;
  if (e4m3_out) {
    FT_TRY(ft__e4m3_out_check(a, plan->ep, plan->run.m, plan->run.n, m, &rows, &cols, err));
    if (ft__quantizer_ctx(a->quantizer) != plan->ctx)
      return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: the quantizer for an e4m3 y was made from "
                      "another context than the plan's (ft_quantizer_create on the plan's context)");
  } else
    FT_TRY(need_type(err, "y", NULL, a->y.dtype, ft_math_out_dtype(m), m));
  void *y = e4m3_out ? a->y_work : (void *)(uintptr_t)a->y.data;
  ft_vec_arg vecs[FT_EP_MAX_PARAMS];
  for (int i = 0; i < a->n_vecs; i++) {
    const char *name = a->vecs[i].name;
    /* An unknown name is ft__bind_args' to name; a known one must have its type. */
    for (int s = 0; name && s < ft_ep_param_count(plan->ep); s++) {
      const ft_ep_param *prm = ft_ep_param_at(plan->ep, s);
      if (!strcmp(prm->name, name))
        FT_TRY(need_type(err, prm->kind == FT_PARAM_MATRIX ? "matrix" : "vector", name, a->vecs[i].dtype,
                         ft_vec_dtype(m, prm), m));
    }
    vecs[i] = (ft_vec_arg){name, a->vecs[i].data};
  }
  const ft_args args = {a->x.data, a->w.data, y, vecs, a->n_vecs, a->scalars, a->n_scalars, ft_math_dtype(m)};
  ft_ep_args_dev dev;
  FT_TRY(ft__bind_args(plan->ep, &args, plan->run.m, plan->run.n, &dev, err));
  FT_TRY(enqueue(plan, "ft_plan_launch_typed", a->x.data, a->w.data, y, &dev, stream));
  if (!e4m3_out) return FT_OK;
  return ft_quantize_e4m3(a->quantizer, y, ft_math_out_dtype(m), rows, cols, FT_SCALE_ROW, (void *)(uintptr_t)a->y.data,
                          a->y_scales, stream);
}
