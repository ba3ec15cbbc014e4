/* Kernel text: "// fusedtune generated", the family's #defines for the variant, the shared ABI
 * constants, ft_common.cuh, ft_math.cuh, the epilogue's CUDA expression as a macro, then the
 * family's sources. Only numbers and text rebuilt from the epilogue AST enter the source; user
 * text never does. GPU-free. */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "fp8.h"
#include "embedded.h"
#include "family.h"
#include "kernel_abi.h"
#include "strbuf.h"

/* Bumped on purpose when kernels_src/eager_step.cu changes behaviour without its text showing
 * it (part of the step kernels' source hashes). */
#define FT_EAGER_STEP_REVISION 1



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

/* The host/kernel shared constants (src/base/kernel_abi.h), written into every source, and the
 * element type of the tensors in math mode math (FT_DTYPE; FT_TF32 for tf32 inputs, FT_3XTF32 for split ones). */
static void abi_defines(ft_strbuf *b, ft_math math) {
  ft_sb_printf(b, "#define FT_EP_SLOTS %d\n#define FT_AUX_BLOCK %d\n#define FT_AUX_ELEMS %d\n", FT_EP_SLOTS,
               FT_AUX_BLOCK, FT_AUX_ELEMS);
  const ft_dtype dt = ft_math_out_dtype(math);
  if (dt != FT_DTYPE_F32)
    ft_sb_printf(b, "#define FT_DTYPE %d\n", dt == FT_DTYPE_BF16 ? FT_KDTYPE_BF16 : FT_KDTYPE_F16);
  if (math == FT_MATH_TF32) ft_sb_puts(b, "#define FT_TF32 1\n");
  if (math == FT_MATH_3XTF32) ft_sb_puts(b, "#define FT_3XTF32 1\n");
  if (math == FT_MATH_FP8) ft_sb_puts(b, "#define FT_FP8 1\n");
  /* The epilogue's fast function forms (kernels_src/ft_math.cuh) where the tensors carry 8 to 11
   * bits; fp32 and 3xtf32 keep the precise ones (they are held to SGEMM's error). */
  if (ft_ep_fast_forms(math)) ft_sb_puts(b, "#define FT_EPI_FAST 1\n");
}

/* Moves a finished buffer into out and hashes what reaches the compiler: the code without
 * comments and with whitespace normalised (ft_code_digest), the compile options and the
 * revision of what generated it, so that a comment changes no hash and stored results stay
 * current. */
static ft_status finish(ft_strbuf *b, const char *generator, int revision, ft_kernel_src *out, ft_err *err) {
  if (b->oom) {
    free(b->p);
    return ft__fail(err, FT_ERR_NOMEM, "codegen: out of memory");
  }
  ft_strbuf h = {0};
  ft_sb_printf(&h, "fusedtune source hash 2\ngenerator %s revision %d\noptions %s\n", generator, revision,
               FT_NVRTC_OPTIONS);
  ft_code_digest(b->p, &h);
  if (h.oom) {
    free(b->p);
    free(h.p);
    return ft__fail(err, FT_ERR_NOMEM, "codegen: out of memory");
  }
  out->text = b->p;
  ft__hash_hex(h.p, h.len, out->hash);
  free(h.p);
  return FT_OK;
}

/* The epilogue's CUDA text, with each vector slot that E reads as fp32 in a 16-bit mode (fp8's
 * scales, ft_vec_is_f32) read through ft_vf32 (kernels_src/ft_common.cuh). */
static void put_expr(ft_strbuf *b, const char *expr, ft_math math, const ft_epilogue *ep) {
  for (const char *at = expr; *at;) {
    int slot = -1, len = 0;
    if (!strncmp(at, "ep.v[", 5) && sscanf(at + 5, "%d]%n", &slot, &len) == 1 && ep && ft_vec_is_f32(math, ep, slot)) {
      ft_sb_printf(b, "ft_vf32(ep.v[%d])", slot);
      at += 5 + len;
    } else {
      ft_sb_printf(b, "%c", *at++);
    }
  }
}

/* A bit per slot of ep that is a matrix operand (0: none, or no epilogue). */
static unsigned matrix_mask(const ft_epilogue *ep) {
  const int n = ep ? ft_ep_param_count(ep) : 0;
  unsigned mask = 0;
  for (int s = 0; s < n; s++)
    if (ft_ep_param_at(ep, s)->kind == FT_PARAM_MATRIX) mask |= 1u << s;
  return mask;
}

/* The first slot of ep that is a column vector, or -1 (none, or no epilogue). */
static int first_colvec_slot(const ft_epilogue *ep) {
  const int n = ep ? ft_ep_param_count(ep) : 0;
  for (int s = 0; s < n; s++)
    if (ft_ep_param_at(ep, s)->kind == FT_PARAM_COLVEC) return s;
  return -1;
}

/* A reduction pass's text after its #defines: the ABI, the prelude, the reduction's kind and E's
 * two parts, rebuilt from the AST as every expression is, then the pass's forms and its entry
 * (k_reduce_sources; the defines choose the form). */
static const char *const k_reduce_sources[] = {"kernels_src/reduce_pass.cu", "kernels_src/reduce_held.cu",
                                               "kernels_src/reduce_columns.cu", "kernels_src/reduce_entry.cu"};

/* A reduction's #defines after the prelude: its kind and E's parts, rebuilt from the AST. */
static ft_status reduce_defines(ft_strbuf *b, ft_ep_red r, int arg, const char *inner, const char *post, ft_ep_red pool,
                                int pool_w, const char *pool_arg, const char *norm_arg, ft_err *err) {
  FT_TRY(check_expr(inner, FT_EP_MAX_TEXT * 8, "reduction argument", err));
  FT_TRY(check_expr(post, FT_EP_MAX_TEXT * 8, "post-reduction", err));
  if (pool != FT_RED_NONE) FT_TRY(check_expr(pool_arg, FT_EP_MAX_TEXT * 8, "pool argument", err));
  if (norm_arg) FT_TRY(check_expr(norm_arg, FT_EP_MAX_TEXT * 8, "batchnorm argument", err));
  ft_sb_printf(b, "#define FT_RED_KIND %d\n#define FT_RED_ARG %d\n#define FT_RED_INNER (%s)\n#define FT_RED_POST (%s)\n",
               (int)r, arg, inner, post);
  ft_sb_printf(b, "#define FT_RED_POOL %d\n#define FT_RED_POOL_W %d\n#define FT_RED_POOL_ARG (%s)\n", (int)pool,
               pool != FT_RED_NONE ? pool_w : 1, pool != FT_RED_NONE ? pool_arg : "0.0f");
  if (norm_arg) ft_sb_printf(b, "#define FT_RED_NORM_ARG (%s)\n", norm_arg);
  return FT_OK;
}

static ft_status reduce_sources(ft_strbuf *b, ft_err *err) {
  for (size_t i = 0; i < sizeof k_reduce_sources / sizeof k_reduce_sources[0]; i++)
    FT_TRY(sb_embedded(b, k_reduce_sources[i], err));
  return FT_OK;
}

/* What every program starts with: the ABI of mode math and the common prelude. */
static ft_status prelude(ft_strbuf *b, ft_math math, ft_err *err) {
  abi_defines(b, math);
  FT_TRY(sb_embedded(b, "kernels_src/ft_common.cuh", err));
  return sb_embedded(b, "kernels_src/ft_math.cuh", err);
}

static ft_status reduce_body(ft_strbuf *b, ft_math math, ft_ep_red r, int arg, const char *inner, const char *post,
                             ft_ep_red pool, int pool_w, const char *pool_arg, const char *norm_arg, ft_err *err) {
  FT_TRY(prelude(b, math, err));
  FT_TRY(reduce_defines(b, r, arg, inner, post, pool, pool_w, pool_arg, norm_arg, err));
  return reduce_sources(b, err);
}

static ft_status codegen_reduce(const ft_variant *v, const ft_family *fam, const ft_epilogue *ep, ft_kernel_src *out,
                                ft_err *err) {
  FT_TRY(ft_ep_check_kernels(ep, err));
  const char *inner = NULL, *post = NULL;
  ft_ep_cuda_reduce(ep, &inner, &post);
  int arg = 0, pool_w = 0;
  const char *pool_arg = NULL, *norm_arg = NULL;
  const ft_ep_red r = ft_ep_reduction(ep, &arg), pool = ft_ep_pool(ep, &pool_w, &pool_arg);
  const int norm = ft_ep_norm(ep, &norm_arg) != FT_RED_NONE;
  if (norm != (v->red.norm > 0))
    return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: norm %d cannot compute '%s'%s (softmax or log_softmax of "
                    "batchnorm runs in the column form with norm 1, every other reduction with norm 0)", v->red.norm,
                    ft_ep_red_name(r), norm ? " of 'batchnorm'" : "");
  const int rowwise = r == FT_RED_SOFTMAX || r == FT_RED_LOG_SOFTMAX || r == FT_RED_GROUPNORM || r == FT_RED_BATCHNORM;
  if (rowwise != (v->red.cols == 0))
    return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: cols %d cannot compute '%s' (one-value reductions and pools run "
                    "in column chunks, softmax, log_softmax, groupnorm and batchnorm in place with cols 0)", v->red.cols,
                    ft_ep_red_name(r));
  const int held_kind = r == FT_RED_SOFTMAX || r == FT_RED_LOG_SOFTMAX || r == FT_RED_GROUPNORM;
  if (v->red.team > 0 && (!held_kind || pool != FT_RED_NONE || v->red.groups != (r == FT_RED_GROUPNORM ? arg : 1)))
    return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: the held form (team %d, %d segments a row) cannot compute '%s'%s",
                    v->red.team, v->red.groups, ft_ep_red_name(r), pool != FT_RED_NONE ? " of a pool" : "");
  if (v->red.tile > 0 && r != FT_RED_BATCHNORM && !norm)
    return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: the column form (tiles of %d rows) computes batchnorm, not '%s'",
                    v->red.tile, ft_ep_red_name(r));
  if (pool != FT_RED_NONE && v->red.cols % pool_w)
    return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: cols %d is not a multiple of %s's window %d", v->red.cols,
                    ft_ep_red_name(pool), pool_w);
  ft_strbuf b = {0};
  ft_sb_puts(&b, "// fusedtune generated\n");
  fam->defines(v, &b);
  /* A family with its own GEMM before the pass (FT_GEMM_OWN, ft_family.gemm_kernel): the pass's
   * text, then its GEMM's files with the identity epilogue (the GEMM stores x W^T), one program. */
  const int own_gemm = ft_variant_gemm_before(v, NULL) == FT_GEMM_OWN;
  if (own_gemm) ft_sb_puts(&b, "#define FT_EP_COLV_SLOT -1\n#define FT_EP_MAT_MASK 0u\n#define FT_EP_RED_KIND 0\n");
  ft_status s = reduce_body(&b, (ft_math)v->math, r, arg, inner, post, pool, pool_w, pool_arg, norm ? norm_arg : NULL,
                            err);
  if (s == FT_OK && own_gemm) {
    ft_sb_puts(&b, "#define FT_EPILOGUE_EXPR (x)\n");
    for (const char *const *f = fam->sources; s == FT_OK && *f; f++) s = sb_embedded(&b, *f, err);
  }
  if (s != FT_OK) {
    free(b.p);
    return s;
  }
  FT_TRY(finish(&b, fam->name, fam->revision, out, err));
  snprintf(out->kernel, sizeof out->kernel, "%s", fam->kernel);
  const char *second = fam->reduce_kernel(v);
  snprintf(out->reduce, sizeof out->reduce, "%s", second ? second : "");
  snprintf(out->arch_suffix, sizeof out->arch_suffix, "%s", fam->arch_suffix);
  return FT_OK;
}

/* An eager reduction step (ft_codegen_eager_reduce): FT_BLOCK and FT_VEC, then, in a program of
 * its own (own), the prelude; the reduction's defines and sources. A pool step reads the windows of
 * its operand as they are (IN0), y [M, n / w]. */
static ft_status eager_reduce_text(ft_strbuf *b, const ft_ep_step *step, ft_math math, int vec, int rblock, int own,
                                   ft_err *err) {
  if (step->reduce < FT_RED_ROWSUM || step->reduce > FT_RED_AVGPOOL)
    return ft__fail(err, FT_ERR_UNSUPPORTED, "codegen: no eager kernel for '%s'", ft_ep_red_name(step->reduce));
  const int pool = step->reduce == FT_RED_MAXPOOL || step->reduce == FT_RED_AVGPOOL;
  ft_sb_printf(b, "#define FT_BLOCK %d\n#define FT_VEC %d\n", ft_chain_reduce_block(step->reduce, rblock), vec);
  const char *inner = pool ? "IN0" : "x";
  const ft_ep_red pk = pool ? step->reduce : FT_RED_NONE;
  if (own) return reduce_body(b, math, step->reduce, step->arg, inner, "IN0", pk, step->arg, "x", NULL, err);
  FT_TRY(reduce_defines(b, step->reduce, step->arg, inner, "IN0", pk, step->arg, "x", NULL, err));
  return reduce_sources(b, err);
}

/* An elementwise eager step after the prelude: its expression (ep's fp32 slots read so, as
 * put_expr does) and kernels_src/eager_step.cu. */
static ft_status eager_step_text(ft_strbuf *b, const ft_ep_step *step, ft_math math, const ft_epilogue *ep, ft_err *err) {
  FT_TRY(check_expr(step->expr, sizeof step->expr, "step", err));
  ft_sb_puts(b, "#define FT_STEP_EXPR (");
  put_expr(b, step->expr, math, ep);
  ft_sb_puts(b, ")\n");
  return sb_embedded(b, "kernels_src/eager_step.cu", err);
}

ft_status ft_codegen_eager_reduce(const ft_ep_step *step, ft_math math, int vec, ft_kernel_src *out, ft_err *err) {
  if (!step || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: NULL argument");
  memset(out, 0, sizeof *out);
  ft_strbuf b = {0};
  ft_sb_puts(&b, "// fusedtune generated\n");
  const ft_status s = eager_reduce_text(&b, step, math, vec, 0, 1, err);
  if (s != FT_OK) {
    free(b.p);
    return s;
  }
  FT_TRY(finish(&b, "eager_reduce", FT_EAGER_STEP_REVISION, out, err));
  strcpy(out->kernel, "ft_reduce_pass");
  return FT_OK;
}

/* What the step sources define that the next step defines again. */
static const char k_step_undefs[] =
    "#undef FT_STEP_EXPR\n#undef FT_BLOCK\n#undef FT_VEC\n#undef FT_RED_KIND\n#undef FT_RED_ARG\n#undef FT_RED_INNER\n"
    "#undef FT_RED_POST\n#undef FT_RED_POOL\n#undef FT_RED_POOL_W\n#undef FT_RED_POOL_ARG\n#undef FT_RED_NORM_ARG\n"
    "#undef FT_RED_FORM\n#undef FT_RED_TEAM\n#undef FT_RED_HELD\n#undef FT_RED_GROUPS\n#undef FT_RED_TILE\n#undef FT_RED_GEMM\n"
    "#undef ft_eager_step\n#undef ft_reduce_pass\n#undef ft_reduce_apply\n";

ft_status ft_codegen_chain(const ft_ep_eager *plan, ft_math math, int vec, int rblock, const ft_epilogue *ep,
                           ft_kernel_src *out, ft_err *err) {
  if (!plan || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: NULL argument");
  memset(out, 0, sizeof *out);
  if (plan->nsteps < 1 || plan->nsteps > FT_EP_MAX_STEPS)
    return ft__fail(err, FT_ERR_UNSUPPORTED, "codegen: an eager chain of %d steps (1 to %d)", plan->nsteps,
                    FT_EP_MAX_STEPS);
  if (vec != 1 && vec != 2 && vec != 4 && vec != 8)
    return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: an eager chain's reduction vector of %d (1, 2, 4 or 8)", vec);
  ft_strbuf b = {0};
  ft_sb_puts(&b, "// fusedtune generated\n");
  ft_status s = prelude(&b, math, err);
  /* Each step in a namespace of its own, its entry points renamed ("ft_chain_<j>"): the step sources
   * define the same names, and the program holds them all. */
  for (int j = 0; s == FT_OK && j < plan->nsteps; j++) {
    const ft_ep_step *st = &plan->steps[j];
    char name[16];
    ft_chain_kernel_name(j, name, sizeof name);
    ft_sb_printf(&b, "namespace ft_chain_step%d {\n", j);
    if (st->reduce) {
      ft_sb_printf(&b, "#define ft_reduce_pass %s\n#define ft_reduce_apply %s_apply\n", name, name);
      s = eager_reduce_text(&b, st, math, vec, rblock, 0, err);
    } else {
      ft_sb_printf(&b, "#define ft_eager_step %s\n", name);
      s = eager_step_text(&b, st, math, ep, err);
    }
    ft_sb_puts(&b, k_step_undefs);
    ft_sb_puts(&b, "}\n");
  }
  if (s != FT_OK) {
    free(b.p);
    return s;
  }
  FT_TRY(finish(&b, "eager_chain", FT_EAGER_STEP_REVISION, out, err));
  ft_chain_kernel_name(0, out->kernel, sizeof out->kernel);
  return FT_OK;
}

/* A variant of a family that runs E's eager plan as a chain (ft_family.eager_plan): the plan, checked
 * against the variant by its family, as one program. */
static ft_status codegen_chain_variant(const ft_variant *v, const ft_family *fam, const ft_epilogue *ep,
                                       ft_kernel_src *out, ft_err *err) {
  if (!ep) return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: the %s kernels need the epilogue", fam->name);
  ft_ep_eager *plan = malloc(sizeof *plan);
  if (!plan) return ft__fail(err, FT_ERR_NOMEM, "codegen: out of memory");
  ft_status s = fam->eager_plan(v, ep, plan, err);
  if (s == FT_OK) s = ft_codegen_chain(plan, (ft_math)v->math, v->vec, v->chain.rblock, ep, out, err);
  free(plan);
  if (s == FT_OK) snprintf(out->arch_suffix, sizeof out->arch_suffix, "%s", fam->arch_suffix);
  return s;
}

ft_status ft_codegen_variant(const ft_variant *v, const ft_epilogue *ep, ft_kernel_src *out,
                             ft_err *err) {
  if (!v || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: NULL argument");
  memset(out, 0, sizeof *out);
  char why[160];
  if (!ft_variant_valid(v, why, sizeof why)) return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: %s", why);
  const ft_family *fam = ft_family_of(v);
  if (fam->eager_plan) return codegen_chain_variant(v, fam, ep, out, err);
  const int pairs = ep && ft_ep_uses_x2(ep), v_pair = fam->pair && fam->pair(v);
  if (pairs && !fam->pair)
    return ft__fail(err, FT_ERR_UNSUPPORTED, "codegen: the epilogue uses x2 (a gated pair's second product), which "
                    "family %s does not compute", fam->name);
  if (pairs != v_pair)
    return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: this %s variant computes %s, and the epilogue %s x2", fam->name,
                    v_pair ? "a gated pair" : "E of x alone", pairs ? "uses" : "does not use");
  /* NULL epilogue: the identity, for a plain GEMM (tests, references). After cuBLASLt's bias GEMM
   * (an epilogue pass's lt) the pass applies E with its `x + bias` already done. */
  const int reduces = ep && ft_ep_reduction(ep, NULL) != FT_RED_NONE;
  if (reduces != fam->reduces)
    return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: the %s kernels %s", fam->name,
                    reduces ? "compute elementwise epilogues, and this one reduces" : "compute reductions only");
  const ft_gemm_before before = ft_variant_gemm_before(v, NULL);
  if (reduces && before != FT_GEMM_IN_KERNEL) return codegen_reduce(v, fam, ep, out, err);
  const char *expr = ep ? ft_ep_cuda(ep) : "x", *post = NULL;
  /* A reduction fused into a GEMM family's tile: E's argument is its epilogue expression, the rest
   * of E (FT_RED_POST) the second kernel's. */
  const ft_ep_red red = reduces ? ft_ep_reduction(ep, NULL) : FT_RED_NONE;
  if (reduces) {
    FT_TRY(ft_ep_check_kernels(ep, err));
    if (red <= FT_RED_NONE || red >= FT_RED_COUNT || !((fam->red_kinds >> red) & 1u))
      return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: the %s kernels do not compute '%s'", fam->name,
                      ft_ep_red_name(red));
    /* A groupnorm held in the tile: the variant's groups (its width is a constant of the kernel, and
     * applicability checked N = width x groups) must be E's. */
    int groups = 0;
    if (red == FT_RED_GROUPNORM && (ft_ep_reduction(ep, &groups), groups != v->tc.normg))
      return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: the variant holds groupnorm's %d groups, E has %d",
                      v->tc.normg, groups);
    if (ft_ep_pool(ep, NULL, NULL) != FT_RED_NONE)
      return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: the %s kernels reduce elements, not the windows of '%s'",
                      fam->name, ft_ep_red_name(ft_ep_pool(ep, NULL, NULL)));
    if (matrix_mask(ep))
      return ft__fail(err, FT_ERR_UNSUPPORTED, "codegen: the %s kernels do not read matrix '%s' in a reduction's "
                      "argument (the reduction pass does)", fam->name, ft_ep_param_at(ep, __builtin_ctz(matrix_mask(ep)))->name);
    ft_ep_cuda_reduce(ep, &expr, &post);
    FT_TRY(check_expr(post, FT_EP_MAX_TEXT * 8, "post-reduction", err));
  }
  /* After a GEMM: what the family's kernel applies to its output (E less cuBLASLt's steps). */
  if (before != FT_GEMM_IN_KERNEL && fam->pass_expr) FT_TRY(fam->pass_expr(v, ep, &expr, err));
  FT_TRY(check_expr(expr, FT_EP_MAX_TEXT * 8, "epilogue", err));

  /* The identity after cuBLAS: y already holds the result, so no pass is launched (kernel "")
   * and the candidate is cuBLAS's GEMM alone; the define gives it a hash of its own (results
   * measured with a copy pass are not taken for it). */
  const int no_pass = before != FT_GEMM_IN_KERNEL && (!ep || strcmp(ft_ep_canonical(ep), "x") == 0 ||
                                                   (before == FT_GEMM_CUBLASLT && strcmp(expr, "x") == 0));

  ft_strbuf b = {0};
  ft_sb_puts(&b, "// fusedtune generated\n");
  if (no_pass) ft_sb_puts(&b, "#define FT_PASS_NOT_LAUNCHED 1\n");
  fam->defines(v, &b);
  if (fam->wants_colv_slot) {
    ft_sb_printf(&b, "#define FT_EP_COLV_SLOT %d\n", first_colvec_slot(ep));
    ft_sb_printf(&b, "#define FT_EP_MAT_MASK %uu\n", matrix_mask(ep));
    ft_sb_printf(&b, "#define FT_EP_RED_KIND %d\n", (int)red);
  }
  ft_status s = prelude(&b, (ft_math)v->math, err);
  if (s == FT_OK) {
    ft_sb_puts(&b, "#define FT_EPILOGUE_EXPR (");
    put_expr(&b, expr, (ft_math)v->math, ep);
    ft_sb_puts(&b, ")\n");
    if (post) {
      ft_sb_puts(&b, "#define FT_RED_POST (");
      put_expr(&b, post, (ft_math)v->math, ep);
      ft_sb_puts(&b, ")\n");
    }
    for (const char *const *f = fam->sources; s == FT_OK && *f; f++) s = sb_embedded(&b, *f, err);
  }
  if (s != FT_OK) {
    free(b.p);
    return s;
  }
  FT_TRY(finish(&b, fam->name, fam->revision, out, err));
  snprintf(out->kernel, sizeof out->kernel, "%s", no_pass ? "" : fam->kernel);
  const char *reduce = fam->reduce_kernel(v);
  snprintf(out->reduce, sizeof out->reduce, "%s", reduce ? reduce : "");
  snprintf(out->arch_suffix, sizeof out->arch_suffix, "%s", fam->arch_suffix);
  return FT_OK;
}

ft_status ft_codegen_eager_step(const ft_ep_step *step, ft_math math, ft_kernel_src *out, ft_err *err) {
  if (!step || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "codegen: NULL argument");
  memset(out, 0, sizeof *out);
  ft_strbuf b = {0};
  ft_sb_puts(&b, "// fusedtune generated\n");
  ft_status s = prelude(&b, math, err);
  if (s == FT_OK) s = eager_step_text(&b, step, math, NULL, err);
  if (s != FT_OK) {
    free(b.p);
    return s;
  }
  FT_TRY(finish(&b, "eager_step", FT_EAGER_STEP_REVISION, out, err));
  strcpy(out->kernel, "ft_eager_step");
  return FT_OK;
}

void ft_kernel_src_free(ft_kernel_src *k) {
  if (!k) return;
  free(k->text);
  k->text = NULL;
}
