/* The C API's launches: ft_plan_launch (arguments bound by name) and ft_plan_launch_ptrs
 * (pointers in the epilogue's slot order, the per-call path of bindings such as Python's). Both
 * check what a launch can get wrong and enqueue through src/launch.c; neither allocates, locks or
 * looks anything up. */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"

static const char *const dtype_names[] = {"fp32", "bf16", "fp16"};

/* Binds the epilogue's names to args: every name needed, no name unknown. */
static ft_status bind_args(ft_plan *pl, const ft_args *a, ft_ep_args_dev *dev) {
  ft_err *err = ft__ctx_err(pl->ctx);
  memset(dev, 0, sizeof *dev);
  int np = ft_ep_param_count(pl->ep);
  for (int i = 0; i < a->n_vecs; i++) {
    int ok = 0;
    for (int s = 0; s < np; s++) ok |= a->vecs[i].name && !strcmp(a->vecs[i].name, ft_ep_param_at(pl->ep, s)->name) &&
                                      ft_ep_param_at(pl->ep, s)->kind != FT_PARAM_SCALAR;
    if (!ok) return ft__fail(err, FT_ERR_INVALID_ARG, "vector '%s' is not a vector of the epilogue",
                             a->vecs[i].name ? a->vecs[i].name : "(null)");
  }
  for (int i = 0; i < a->n_scalars; i++) {
    int ok = 0;
    for (int s = 0; s < np; s++) ok |= a->scalars[i].name && !strcmp(a->scalars[i].name, ft_ep_param_at(pl->ep, s)->name) &&
                                      ft_ep_param_at(pl->ep, s)->kind == FT_PARAM_SCALAR;
    if (!ok) return ft__fail(err, FT_ERR_INVALID_ARG, "scalar '%s' is not a scalar of the epilogue",
                             a->scalars[i].name ? a->scalars[i].name : "(null)");
  }
  for (int s = 0; s < np; s++) {
    const ft_ep_param *prm = ft_ep_param_at(pl->ep, s);
    int bound = 0;
    if (prm->kind == FT_PARAM_SCALAR) {
      for (int i = 0; i < a->n_scalars; i++)
        if (!strcmp(a->scalars[i].name, prm->name)) dev->s[s] = a->scalars[i].value, bound = 1;
      if (!bound && prm->has_default) dev->s[s] = (float)prm->def, bound = 1;
    } else {
      for (int i = 0; i < a->n_vecs; i++)
        if (!strcmp(a->vecs[i].name, prm->name) && a->vecs[i].data) dev->v[s] = a->vecs[i].data, bound = 1;
    }
    if (!bound) return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue %s '%s' is not bound in ft_args",
                                prm->kind == FT_PARAM_SCALAR ? "scalar" : "vector", prm->name);
  }
  return FT_OK;
}

/* Binds slot s of the epilogue from the slot arrays: a vector's pointer from vecs[s], a
 * scalar's value from scalars[s] (NULL: its default). */
static ft_status bind_slots(ft_plan *pl, const void *const *vecs, const float *scalars, ft_ep_args_dev *dev) {
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
        return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_ptrs: vector '%s' (slot %d) is NULL", prm->name, s);
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
  const ft_dtype want = ft_math_dtype((ft_math)plan->run.v.math);
  if (args->dtype != want)
    return ft__fail(err, FT_ERR_INVALID_ARG,
                    "ft_plan_launch: args.dtype %s, but the plan computes in %s on %s tensors (set args.dtype)",
                    (unsigned)args->dtype < 3 ? dtype_names[args->dtype] : "(invalid)",
                    ft_math_name((ft_math)plan->run.v.math), dtype_names[want]);
  ft_ep_args_dev dev;
  memset(&dev, 0, sizeof dev);
  FT_TRY(bind_args(plan, args, &dev));
  return enqueue(plan, "ft_plan_launch", args->x, args->w, args->y, &dev, stream);
}

ft_status ft_plan_launch_ptrs(ft_plan *plan, const void *x, const void *w, void *y, const void *const *vecs,
                              const float *scalars, cudaStream_t stream) {
  if (!plan) return FT_ERR_INVALID_ARG;
  ft_ep_args_dev dev;
  memset(&dev, 0, sizeof dev);
  FT_TRY(bind_slots(plan, vecs, scalars, &dev));
  return enqueue(plan, "ft_plan_launch_ptrs", x, w, y, &dev, stream);
}
