/* The binding of the epilogue's operands for a launch (src/api/api_launch.c): ft_plan_launch's names
 * in ft_args (vectors, matrices (`mat NAME`, bound through ft_args.vecs by name like vectors) and
 * scalars, every name needed, none unknown), and each matrix's own checks, which
 * ft_plan_launch_ptrs makes too. */
#include <stdint.h>
#include <string.h>

#include "api_internal.h"
#include "epilogue.h"

static ft_status check_names(const ft_epilogue *ep, const ft_args *a, ft_err *err) {
  const int np = ft_ep_param_count(ep);
  for (int i = 0; i < a->n_vecs; i++) {
    int ok = 0;
    for (int s = 0; s < np; s++)
      ok |= a->vecs[i].name && !strcmp(a->vecs[i].name, ft_ep_param_at(ep, s)->name) &&
            ft_ep_param_at(ep, s)->kind != FT_PARAM_SCALAR;
    if (!ok)
      return ft__fail(err, FT_ERR_INVALID_ARG, "vector '%s' is not a vector or matrix of the epilogue",
                      a->vecs[i].name ? a->vecs[i].name : "(null)");
  }
  for (int i = 0; i < a->n_scalars; i++) {
    int ok = 0;
    for (int s = 0; s < np; s++)
      ok |= a->scalars[i].name && !strcmp(a->scalars[i].name, ft_ep_param_at(ep, s)->name) &&
            ft_ep_param_at(ep, s)->kind == FT_PARAM_SCALAR;
    if (!ok)
      return ft__fail(err, FT_ERR_INVALID_ARG, "scalar '%s' is not a scalar of the epilogue",
                      a->scalars[i].name ? a->scalars[i].name : "(null)");
  }
  return FT_OK;
}

/* A matrix operand: element-aligned (kernels read it element by element) and apart from y, which
 * kernels write while other threads still read the matrix (in place, y = r, is not supported). */
ft_status ft__bind_matrix(const char *name, const void *data, ft_dtype dtype, const void *y, const ft_epilogue *ep,
                          int m, int n, float *pitch_word, ft_err *err) {
  const size_t elem = dtype == FT_DTYPE_F32 ? 4 : 2;
  if ((uintptr_t)data % elem)
    return ft__fail(err, FT_ERR_INVALID_ARG, "matrix '%s' is not %zu-byte aligned (its element size)", name, elem);
  int64_t rows = m, cols = n; /* y's shape: [m] after a one-value reduction */
  FT_TRY(ft_ep_output_shape(ep, m, n, NULL, &rows, &cols, err));
  if (ft__ranges_overlap(data, (size_t)m * (size_t)n * elem, y, (size_t)rows * (size_t)cols * elem))
    return ft__fail(err, FT_ERR_INVALID_ARG, "matrix '%s' overlaps y: the output must be a separate buffer",
                    name);
  *pitch_word = ft_ep_mat_pitch(n); /* contiguous [m, n] */
  return FT_OK;
}

ft_status ft__bind_args(const ft_epilogue *ep, const ft_args *a, int m, int n, ft_ep_args_dev *dev, ft_err *err) {
  memset(dev, 0, sizeof *dev);
  FT_TRY(check_names(ep, a, err));
  const int np = ft_ep_param_count(ep);
  for (int s = 0; s < np; s++) {
    const ft_ep_param *prm = ft_ep_param_at(ep, s);
    int bound = 0;
    if (prm->kind == FT_PARAM_SCALAR) {
      for (int i = 0; i < a->n_scalars; i++)
        if (!strcmp(a->scalars[i].name, prm->name)) dev->s[s] = a->scalars[i].value, bound = 1;
      if (!bound && prm->has_default) dev->s[s] = (float)prm->def, bound = 1;
    } else {
      for (int i = 0; i < a->n_vecs; i++)
        if (!strcmp(a->vecs[i].name, prm->name) && a->vecs[i].data) dev->v[s] = a->vecs[i].data, bound = 1;
    }
    if (!bound)
      return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue %s '%s' is not bound in ft_args",
                      prm->kind == FT_PARAM_SCALAR ? "scalar" : prm->kind == FT_PARAM_MATRIX ? "matrix" : "vector",
                      prm->name);
    /* A matrix holds y's element type: the inputs' in every mode but fp8, whose are e4m3 (y bf16). */
    const ft_dtype mat_dtype = a->dtype == FT_DTYPE_E4M3 ? FT_DTYPE_BF16 : a->dtype;
    if (prm->kind == FT_PARAM_MATRIX) FT_TRY(ft__bind_matrix(prm->name, dev->v[s], mat_dtype, a->y, ep, m, n, &dev->s[s], err));
  }
  return FT_OK;
}
