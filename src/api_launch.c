/* The C API's launches: ft_plan_launch (arguments bound by name) and ft_plan_launch_ptrs
 * (pointers in the epilogue's slot order, the per-call path of bindings such as Python's). Both
 * check what a launch can get wrong and enqueue through src/launch.c; neither allocates, locks or
 * looks anything up. */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"

static const char *const dtype_names[] = {"fp32", "bf16", "fp16"};

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
        FT_TRY(ft__bind_matrix(prm->name, dev->v[s], ft_math_dtype((ft_math)pl->run.v.math), y, pl->run.m, pl->run.n,
                               &dev->s[s], err));
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
  FT_TRY(ft__bind_args(plan->ep, args, plan->run.m, plan->run.n, &dev, ft__ctx_err(plan->ctx)));
  return enqueue(plan, "ft_plan_launch", args->x, args->w, args->y, &dev, stream);
}

ft_status ft_plan_launch_ptrs(ft_plan *plan, const void *x, const void *w, void *y, const void *const *vecs,
                              const float *scalars, cudaStream_t stream) {
  if (!plan) return FT_ERR_INVALID_ARG;
  ft_ep_args_dev dev;
  memset(&dev, 0, sizeof dev);
  FT_TRY(bind_slots(plan, vecs, scalars, y, &dev));
  return enqueue(plan, "ft_plan_launch_ptrs", x, w, y, &dev, stream);
}
