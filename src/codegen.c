/* Kernel text: "// fusedtune generated", the variant's #defines, ft_common.cuh, ft_math.cuh, the
 * epilogue's CUDA expression as a macro, then the template (for a GEMM: gemm_common.cuh and the
 * layout's file). Only numbers and text rebuilt from
 * the epilogue AST enter the source; user text never does. GPU-free. */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embedded.h"
#include "strbuf.h"



/* Appends an embedded kernels_src file, ending with a newline. */
static ft_status sb_embedded(ft_strbuf *b, const char *name, ft_err *err) {
  size_t len = 0;
  const char *text = ft__embedded(name, &len);
  if (!text) return ft__fail(err, FT_ERR_INTERNAL, "codegen: %s is not embedded", name);
  ft_sb_putn(b, text, len);
  ft_sb_puts(b, "\n");
  return FT_OK;
}

/* Defence in depth: an expression pasted into a macro may only hold expression characters,
 * never a comment, a quote, a backslash, a '#' or a line break. The epilogue module already
 * rebuilds it from the AST; this keeps a bug there from becoming code injection. */
static ft_status check_expr(const char *e, size_t max, const char *what, ft_err *err) {
  if (!e) return ft__fail(err, FT_ERR_INTERNAL, "codegen: no %s expression", what);
  const size_t n = ft__bounded_len(e, max);
  if (n == 0 || n == max) return ft__fail(err, FT_ERR_INTERNAL, "codegen: %s expression empty or too long", what);
  static const char allowed[] = "_.,()[]+-*/<>=!?:&|~^% ";
  for (size_t i = 0; i < n; i++) {
    const char ch = e[i];
    const int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    if (!alnum && !strchr(allowed, ch))
      return ft__fail(err, FT_ERR_INTERNAL, "codegen: character 0x%02x not allowed in the %s expression",
                      (unsigned char)ch, what);
    if (ch == '/' && (e[i + 1] == '/' || e[i + 1] == '*'))
      return ft__fail(err, FT_ERR_INTERNAL, "codegen: comment in the %s expression", what);
  }
  return FT_OK;
}

static void variant_defines(ft_strbuf *b, const ft_variant *v) {
  if (v->kind == FT_VK_GEMM) {
    ft_sb_printf(b, "#define FT_BM %d\n#define FT_BN %d\n#define FT_BK %d\n", v->bm, v->bn, v->bk);
    ft_sb_printf(b, "#define FT_TM %d\n#define FT_TN %d\n#define FT_VEC %d\n", v->tm, v->tn, v->vec);
    ft_sb_printf(b, "#define FT_STAGES %d\n#define FT_SPLIT_K %d\n#define FT_SWIZZLE %d\n", v->stages,
              v->split_k, v->swizzle);
    ft_sb_printf(b, "#define FT_MINB %d\n#define FT_LAYOUT %d\n", ft__gemm_min_blocks(v), v->layout);
    if (v->streamk) ft_sb_printf(b, "#define FT_STREAMK %d\n", v->streamk);
  } else {
    ft_sb_printf(b, "#define FT_BLOCK %d\n#define FT_VEC %d\n#define FT_EPT %d\n", v->block, v->vec,
              v->ept);
  }
}

/* Moves a finished buffer into out and hashes it. */
static ft_status finish(ft_strbuf *b, ft_kernel_src *out, ft_err *err) {
  if (b->oom) {
    free(b->p);
    return ft__fail(err, FT_ERR_NOMEM, "codegen: out of memory");
  }
  out->text = b->p;
  ft__hash_hex(b->p, b->len, out->hash);
  return FT_OK;
}

ft_status ft_codegen_variant(const ft_variant *v, const ft_epilogue *ep, ft_kernel_src *out,
                             ft_err *err) {
  if (!v || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: NULL argument");
  memset(out, 0, sizeof *out);
  char why[160];
  if (!ft_variant_valid(v, why, sizeof why)) return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: %s", why);
  /* NULL epilogue: the identity, for a plain GEMM (tests, references). */
  const char *expr = ep ? ft_ep_cuda(ep) : "x";
  FT_TRY(check_expr(expr, FT_EP_MAX_TEXT * 8, "epilogue", err));

  ft_strbuf b = {0};
  ft_sb_puts(&b, "// fusedtune generated\n");
  variant_defines(&b, v);
  ft_status s = sb_embedded(&b, "kernels_src/ft_common.cuh", err);
  if (s == FT_OK) s = sb_embedded(&b, "kernels_src/ft_math.cuh", err);
  if (s == FT_OK) {
    ft_sb_puts(&b, "#define FT_EPILOGUE_EXPR (");
    ft_sb_puts(&b, expr);
    ft_sb_puts(&b, ")\n");
    if (v->kind == FT_VK_GEMM) {
      s = sb_embedded(&b, "kernels_src/gemm_common.cuh", err);
      if (s == FT_OK)
        s = sb_embedded(&b, v->layout == 3 ? "kernels_src/gemm_fp32_warp.cu" : "kernels_src/gemm_fp32.cu", err);
    } else {
      s = sb_embedded(&b, "kernels_src/epilogue_pass.cu", err);
    }
  }
  if (s != FT_OK) {
    free(b.p);
    return s;
  }
  FT_TRY(finish(&b, out, err));
  if (v->kind == FT_VK_GEMM) {
    strcpy(out->kernel, "ft_gemm");
    if (v->split_k > 1) strcpy(out->reduce, "ft_splitk_reduce");
    if (v->streamk > 0) strcpy(out->reduce, "ft_streamk_fixup");
  } else {
    strcpy(out->kernel, "ft_epilogue_pass");
  }
  return FT_OK;
}

ft_status ft_codegen_eager_step(const ft_ep_step *step, ft_kernel_src *out, ft_err *err) {
  if (!step || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: NULL argument");
  memset(out, 0, sizeof *out);
  FT_TRY(check_expr(step->expr, sizeof step->expr, "step", err));
  ft_strbuf b = {0};
  ft_sb_puts(&b, "// fusedtune generated\n");
  ft_status s = sb_embedded(&b, "kernels_src/ft_common.cuh", err);
  if (s == FT_OK) s = sb_embedded(&b, "kernels_src/ft_math.cuh", err);
  if (s == FT_OK) {
    ft_sb_puts(&b, "#define FT_STEP_EXPR (");
    ft_sb_puts(&b, step->expr);
    ft_sb_puts(&b, ")\n");
    s = sb_embedded(&b, "kernels_src/eager_step.cu", err);
  }
  if (s != FT_OK) {
    free(b.p);
    return s;
  }
  FT_TRY(finish(&b, out, err));
  strcpy(out->kernel, "ft_eager_step");
  return FT_OK;
}

void ft_kernel_src_free(ft_kernel_src *k) {
  if (!k) return;
  free(k->text);
  k->text = NULL;
}
