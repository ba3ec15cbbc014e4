/* ft_plan_launch_typed: launch arguments that say each tensor's element type (what an fp8 plan
 * needs: e4m3 x and w, bf16 y and bias, fp32 scales), checked against the plan's, then the one
 * launch path (ft__plan_enqueue). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api_internal.h"
#include "fp8.h"

static ft_status need_type(ft_err *err, const char *what, const char *name, ft_dtype got, ft_dtype want, ft_math m) {
  if (got == want) return FT_OK;
  return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: %s%s%s is %s, but a %s plan reads %s there", what,
                  name ? " " : "", name ? name : "", ft_dtype_name(got), ft_math_name(m), ft_dtype_name(want));
}

ft_status ft_plan_launch_typed(ft_plan *plan, const ft_typed_args *a, cudaStream_t stream) {
  if (!plan) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__plan_err(plan);
  if (!a) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: args is NULL");
  if (a->struct_size < offsetof(ft_typed_args, n_scalars) + sizeof a->n_scalars || a->struct_size > sizeof *a)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: args must start from FT_TYPED_ARGS_INIT");
  if (a->n_vecs < 0 || a->n_vecs > FT_EP_MAX_PARAMS || (a->n_vecs && !a->vecs))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_plan_launch_typed: vecs does not match n_vecs (at most %d)",
                    FT_EP_MAX_PARAMS);
  const ft_math m = (ft_math)ft__plan_math(plan);
  FT_TRY(need_type(err, "x", NULL, a->x.dtype, ft_math_dtype(m), m));
  FT_TRY(need_type(err, "w", NULL, a->w.dtype, ft_math_dtype(m), m));
  FT_TRY(need_type(err, "y", NULL, a->y.dtype, ft_math_out_dtype(m), m));
  ft_vec_arg vecs[FT_EP_MAX_PARAMS];
  for (int i = 0; i < a->n_vecs; i++) {
    const char *name = a->vecs[i].name;
    /* An unknown name is the binder's to name; a known one must have its type. */
    for (int s = 0; name && s < ft_ep_param_count(ft__plan_ep(plan)); s++)
      if (!strcmp(ft_ep_param_at(ft__plan_ep(plan), s)->name, name))
        FT_TRY(need_type(err, "vector", name, a->vecs[i].dtype, ft_vec_dtype(m, name), m));
    vecs[i] = (ft_vec_arg){name, a->vecs[i].data};
  }
  const ft_args args = {a->x.data, a->w.data, (void *)(uintptr_t)a->y.data, vecs, a->n_vecs, a->scalars, a->n_scalars, ft_math_dtype(m)};
  return ft__plan_enqueue(plan, &args, stream);
}
