/* Codegen: self-contained sources, stable hashes that change with the variant and epilogue,
 * and no user text in the kernel source. */
#include "codegen.h"
#include "family.h"
#include "ft_test.h"

static ft_variant gemm_variant(void) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM;
  v.bm = 128, v.bn = 128, v.bk = 16, v.fp32.tm = 8, v.fp32.tn = 8, v.vec = 4, v.stages = 3, v.split_k = 1, v.swizzle = 8;
  return v;
}

static ft_epilogue *parse(const char *text) {
  ft_epilogue *ep = NULL;
  ft_err e;
  if (ft_ep_parse(text, &ep, &e) != FT_OK) FT_FAIL_AT_("parse %s: %s", text, e.msg);
  return ep;
}

static void test_structure(ft_epilogue *ep) {
  ft_variant v = gemm_variant();
  ft_kernel_src k;
  ft_err e;
  ASSERT_OK(ft_codegen_variant(&v, ep, &k, &e));
  ASSERT_TRUE(strncmp(k.text, "// fusedtune generated\n", 23) == 0);
  ASSERT_CONTAINS(k.text, "#define FT_BM 128\n");
  ASSERT_CONTAINS(k.text, "#define FT_STAGES 3\n");
  ASSERT_CONTAINS(k.text, "#define FT_SWIZZLE 8\n");
  ASSERT_CONTAINS(k.text, "struct FtEpArgs");
  ASSERT_CONTAINS(k.text, "#define FT_EPILOGUE_EXPR (");
  ASSERT_CONTAINS(k.text, ft_ep_cuda(ep));
  ASSERT_CONTAINS(k.text, "ft_gemm(");
  ASSERT_TRUE(!strstr(k.text, "#include"));
  ASSERT_EQ_STR(k.kernel, "ft_gemm");
  ASSERT_EQ_STR(k.reduce, "");
  ASSERT_EQ_INT(strlen(k.hash), 16);
  /* The hash covers what reaches the compiler, not comments or layout: the same source with a
   * comment line, a block comment and re-indented lines digests the same; a changed token
   * does not. */
  {
    ft_strbuf a = {0}, b = {0}, c = {0};
    ft_code_digest(k.text, &a);
    ft_strbuf edited = {0};
    const char *second = strchr(k.text, '\n') + 1;
    ft_sb_putn(&edited, k.text, (size_t)(second - k.text));
    ft_sb_puts(&edited, "// a comment a developer added\n  /* and a block\n comment */  \n\n");
    for (const char *p = second; *p; p++) ft_sb_putn(&edited, *p == ' ' ? "   " : p, 1);
    ft_code_digest(edited.p, &b);
    ASSERT_TRUE(!a.oom && !b.oom && !edited.oom);
    ASSERT_EQ_STR(a.p, b.p);
    char *changed = ft__strdup(k.text);
    ASSERT_TRUE(changed != NULL);
    char *bm = changed ? strstr(changed, "#define FT_BM 128") : NULL;
    ASSERT_TRUE(bm != NULL);
    if (bm) bm[strlen("#define FT_BM 12")] = '9';
    if (changed) ft_code_digest(changed, &c);
    ASSERT_TRUE(c.p && strcmp(a.p, c.p) != 0);
    /* A literal keeps its inner spaces and comment markers. */
    ft_strbuf d = {0};
    ft_code_digest("#error \"a  // b\"  // gone\nx\n", &d);
    ASSERT_EQ_STR(d.p, "#error \"a  // b\"\nx\n");
    free(a.p), free(b.p), free(c.p), free(d.p), free(edited.p), free(changed);
  }
  ft_kernel_src k2;
  ASSERT_OK(ft_codegen_variant(&v, ep, &k2, &e));
  ASSERT_EQ_STR(k.hash, k2.hash); /* deterministic */
  ft_kernel_src_free(&k2);
  ft_kernel_src_free(&k);
  ASSERT_TRUE(k.text == NULL);
  ft_kernel_src_free(&k); /* twice is fine */
  ft_kernel_src_free(NULL);

  v.split_k = 4;
  ASSERT_OK(ft_codegen_variant(&v, ep, &k, &e));
  ASSERT_EQ_STR(k.reduce, "ft_splitk_reduce");
  ft_kernel_src_free(&k);

  /* Stream-K (warp-tiled only): its block count as a define and the fixup as second kernel. */
  v.split_k = 1, v.family = 3, v.fp32.tm = 16, v.bk = 8, v.stages = 2, v.swizzle = 1, v.fp32.streamk = 264;
  ASSERT_OK(ft_codegen_variant(&v, ep, &k, &e));
  ASSERT_CONTAINS(k.text, "#define FT_STREAMK 264\n");
  ASSERT_EQ_STR(k.reduce, "ft_streamk_fixup");
  ft_kernel_src_free(&k);

  ft_variant p = {0};
  p.kind = FT_VK_EPILOGUE, p.pass.block = 256, p.vec = 4, p.pass.ept = 8;
  ASSERT_OK(ft_codegen_variant(&p, ep, &k, &e));
  ASSERT_EQ_STR(k.kernel, "ft_epilogue_pass");
  ASSERT_CONTAINS(k.text, "#define FT_EPT 8\n");
  ASSERT_CONTAINS(k.text, "ft_epilogue_pass(");
  char pass_hash[17];
  snprintf(pass_hash, sizeof pass_hash, "%s", k.hash);
  ft_kernel_src_free(&k);
  /* The identity after cuBLAS launches no pass: no kernel name, a hash of its own (a copy pass
   * measured before is not its result). A fused kernel keeps its kernel with the identity. */
  ft_epilogue *id = NULL;
  ASSERT_OK(ft_ep_parse("x", &id, &e));
  ASSERT_OK(ft_codegen_variant(&p, id, &k, &e));
  ASSERT_EQ_STR(k.kernel, "");
  ASSERT_CONTAINS(k.text, "#define FT_PASS_NOT_LAUNCHED 1\n");
  ASSERT_TRUE(strcmp(k.hash, pass_hash) != 0);
  ft_kernel_src_free(&k);
  ASSERT_OK(ft_codegen_variant(&p, NULL, &k, &e));
  ASSERT_EQ_STR(k.kernel, "");
  ft_kernel_src_free(&k);
  ASSERT_OK(ft_codegen_variant(&v, id, &k, &e));
  ASSERT_TRUE(k.kernel[0] != '\0');
  ft_kernel_src_free(&k);
  ft_ep_free(id);
}

static void test_hashes(ft_epilogue *a, ft_epilogue *b) {
  ft_variant v = gemm_variant();
  ft_kernel_src k1, k2, k3, k4;
  ft_err e;
  ASSERT_OK(ft_codegen_variant(&v, a, &k1, &e));
  ASSERT_OK(ft_codegen_variant(&v, a, &k2, &e));
  ASSERT_EQ_STR(k1.hash, k2.hash); /* stable */
  ASSERT_TRUE(strcmp(k1.text, k2.text) == 0);
  v.bk = 32;
  ASSERT_OK(ft_codegen_variant(&v, a, &k3, &e));
  ASSERT_TRUE(strcmp(k1.hash, k3.hash) != 0); /* another variant */
  v.bk = 16;
  ASSERT_OK(ft_codegen_variant(&v, b, &k4, &e));
  ASSERT_TRUE(strcmp(k1.hash, k4.hash) != 0); /* another epilogue */
  ft_kernel_src_free(&k1);
  ft_kernel_src_free(&k2);
  ft_kernel_src_free(&k3);
  ft_kernel_src_free(&k4);

  /* Spellings of one expression give one kernel (the source comes from the canonical AST). */
  ft_epilogue *s1 = parse("relu(x + bias)");
  ft_epilogue *s2 = parse("relu( x+bias )");
  if (s1 && s2) {
    ASSERT_OK(ft_codegen_variant(&v, s1, &k1, &e));
    ASSERT_OK(ft_codegen_variant(&v, s2, &k2, &e));
    ASSERT_EQ_STR(k1.hash, k2.hash);
    ft_kernel_src_free(&k1);
    ft_kernel_src_free(&k2);
  }
  ft_ep_free(s1);
  ft_ep_free(s2);
}

/* What the user typed (spacing, comments, names) must not reach the kernel text verbatim. */
static void test_no_user_text(void) {
  static const char *text = "relu(x   +   bias)   ";
  ft_epilogue *ep = parse(text);
  if (!ep) return;
  ft_variant v = gemm_variant();
  ft_kernel_src k;
  ft_err e;
  ASSERT_OK(ft_codegen_variant(&v, ep, &k, &e));
  ASSERT_TRUE(!strstr(k.text, "x   +   bias"));
  ASSERT_TRUE(!strstr(k.text, "bias)")); /* the parameter is a slot, not a name */
  ft_kernel_src_free(&k);
  ft_ep_free(ep);
}

static void test_invalid(ft_epilogue *ep) {
  ft_variant v = gemm_variant();
  ft_kernel_src k;
  ft_err e;
  v.bm = 96;
  ASSERT_EQ_INT(ft_codegen_variant(&v, ep, &k, &e), FT_ERR_INVALID_ARG);
  ASSERT_TRUE(k.text == NULL);
  v = gemm_variant();
  v.kind = (ft_variant_kind)7;
  ASSERT_EQ_INT(ft_codegen_variant(&v, ep, &k, &e), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_codegen_variant(NULL, ep, &k, &e), FT_ERR_INVALID_ARG);
}

static void test_eager_steps(ft_epilogue *ep) {
  ft_ep_eager plan;
  ft_err e;
  ASSERT_OK(ft_ep_eager_plan(ep, &plan, &e));
  for (int i = 0; i < plan.nsteps; i++) {
    ft_kernel_src k;
    ASSERT_OK(ft_codegen_eager_step(&plan.steps[i], FT_MATH_FP32, &k, &e));
    ASSERT_EQ_STR(k.kernel, "ft_eager_step");
    ASSERT_CONTAINS(k.text, "#define FT_STEP_EXPR (");
    ASSERT_CONTAINS(k.text, plan.steps[i].expr);
    ft_kernel_src_free(&k);
  }
  /* A step expression that is not an expression is refused, never pasted. */
  ft_ep_step bad = {0};
  strcpy(bad.expr, "IN0)\n#include <x>\n(");
  ft_kernel_src k;
  ASSERT_EQ_INT(ft_codegen_eager_step(&bad, FT_MATH_FP32, &k, &e), FT_ERR_INTERNAL);
  strcpy(bad.expr, "IN0 /* c */");
  ASSERT_EQ_INT(ft_codegen_eager_step(&bad, FT_MATH_FP32, &k, &e), FT_ERR_INTERNAL);
  bad.expr[0] = '\0';
  ASSERT_EQ_INT(ft_codegen_eager_step(&bad, FT_MATH_FP32, &k, &e), FT_ERR_INTERNAL);
}

/* An epilogue pass after cuBLASLt's bias GEMM (lt): the pass applies E with its `x + bias` read as
 * x; nothing is launched when that leaves x; a slot that is not E's folded bias is refused. */
static void test_lt_pass(ft_epilogue *minsub) {
  ft_err e;
  ft_variant v = {0};
  v.kind = FT_VK_EPILOGUE, v.pass.block = 256, v.vec = 4, v.pass.ept = 8, v.pass.lt = 1; /* minsub's bias is slot 0 */
  ft_kernel_src k;
  ASSERT_OK(ft_codegen_variant(&v, minsub, &k, &e));
  ASSERT_TRUE(strstr(k.text, "#define FT_PASS_AFTER_LT_BIAS 1\n") != NULL);
  ASSERT_TRUE(strstr(k.text, "#define FT_EPILOGUE_EXPR ((ft_min(x, ep.s[1]) - ep.s[1]))\n") != NULL);
  ASSERT_EQ_STR(k.kernel, "ft_epilogue_pass");
  ft_kernel_src plain;
  v.pass.lt = 0;
  ASSERT_OK(ft_codegen_variant(&v, minsub, &plain, &e));
  ASSERT_TRUE(strcmp(k.hash, plain.hash) != 0);
  ft_kernel_src_free(&k), ft_kernel_src_free(&plain);
  ft_epilogue *bias = parse("x + bias");
  v.pass.lt = 1;
  if (bias) {
    ASSERT_OK(ft_codegen_variant(&v, bias, &k, &e));
    ASSERT_EQ_STR(k.kernel, ""); /* cuBLASLt's GEMM is all of it */
    ft_kernel_src_free(&k);
  }
  v.pass.lt = 2;
  ASSERT_TRUE(ft_codegen_variant(&v, minsub, &k, &e) == FT_ERR_INVALID_ARG);
  ft_epilogue *nob = parse("relu(x)");
  v.pass.lt = 1;
  if (nob) ASSERT_TRUE(ft_codegen_variant(&v, nob, &k, &e) == FT_ERR_INVALID_ARG);
  /* After cuBLASLt's relu / gelu_tanh (with or without its bias): the pass applies the rest. */
  ft_epilogue *gb = parse("gelu_tanh(x + bias) * 1.5");
  v.pass.lt = 1, v.pass.lt_act = FT_EP_LT_GELU_TANH;
  if (gb) {
    ASSERT_OK(ft_codegen_variant(&v, gb, &k, &e));
    ASSERT_TRUE(strstr(k.text, "#define FT_PASS_AFTER_LT_ACT 2\n") != NULL);
    ASSERT_TRUE(strstr(k.text, "#define FT_EPILOGUE_EXPR ((x * 1.5f))\n") != NULL);
    ft_kernel_src_free(&k);
    v.pass.lt_act = FT_EP_LT_RELU; /* not E's activation */
    ASSERT_TRUE(ft_codegen_variant(&v, gb, &k, &e) == FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "lt_act 1");
  }
  v.pass.lt = 0, v.pass.lt_act = FT_EP_LT_RELU;
  if (nob) {
    ASSERT_OK(ft_codegen_variant(&v, nob, &k, &e));
    ASSERT_EQ_STR(k.kernel, ""); /* cuBLASLt's relu GEMM is all of it */
    ft_kernel_src_free(&k);
  }
  ft_ep_free(gb);
  ft_ep_free(bias);
  ft_ep_free(nob);
}

/* What writes x W^T before each family's kernel, as codegen and launch ask it. */
static void test_gemm_before(void) {
  ft_lt_prefix lt;
  ft_variant v = {0};
  v.kind = FT_VK_EPILOGUE, v.family = FT_FAMILY_EPILOGUE_PASS;
  ASSERT_TRUE(ft_variant_gemm_before(&v, &lt) == FT_GEMM_CUBLAS);
  ASSERT_TRUE(lt.bias_slot == -1 && lt.act == FT_EP_LT_NONE && lt.c_slot == -1);
  v.pass.lt = 2, v.pass.lt_c = 1; /* cuBLASLt adds bias slot 1 and matrix slot 0 */
  ASSERT_TRUE(ft_variant_gemm_before(&v, &lt) == FT_GEMM_CUBLASLT);
  ASSERT_TRUE(lt.bias_slot == 1 && lt.act == FT_EP_LT_NONE && lt.c_slot == 0);
  v.pass.lt = 0, v.pass.lt_c = 0, v.pass.lt_act = FT_EP_LT_RELU;
  ASSERT_TRUE(ft_variant_gemm_before(&v, NULL) == FT_GEMM_CUBLASLT);
  v = (ft_variant){0};
  v.kind = FT_VK_EPILOGUE, v.family = FT_FAMILY_REDUCE_PASS;
  ASSERT_TRUE(ft_variant_gemm_before(&v, &lt) == FT_GEMM_CUBLAS && lt.bias_slot == -1);
  v.family = FT_FAMILY_GATED_PASS;
  ASSERT_TRUE(ft_variant_gemm_before(&v, NULL) == FT_GEMM_CUBLAS);
  v.kind = FT_VK_GEMM, v.family = FT_FAMILY_TC;
  ASSERT_TRUE(ft_variant_gemm_before(&v, NULL) == FT_GEMM_IN_KERNEL);
  v.family = FT_FAMILY_FP32_WARP;
  ASSERT_TRUE(ft_variant_gemm_before(&v, NULL) == FT_GEMM_IN_KERNEL);
  v.family = FT_FAMILY_TC_PASS;
  ASSERT_TRUE(ft_variant_gemm_before(&v, &lt) == FT_GEMM_OWN && lt.c_slot == -1);
  v.family = 99; /* no family */
  ASSERT_TRUE(ft_variant_gemm_before(&v, NULL) == FT_GEMM_IN_KERNEL);
  ASSERT_TRUE(ft_variant_gemm_before(NULL, &lt) == FT_GEMM_IN_KERNEL);
}

int main(void) {
  ft_epilogue *minsub = parse("minsub");
  ft_epilogue *biasrelu = parse("biasrelu");
  if (!minsub || !biasrelu) return FT_TEST_DONE();
  test_structure(minsub);
  test_hashes(minsub, biasrelu);
  test_no_user_text();
  test_invalid(minsub);
  test_eager_steps(minsub);
  test_lt_pass(minsub);
  test_gemm_before();
  ft_ep_free(minsub);
  ft_ep_free(biasrelu);
  return FT_TEST_DONE();
}
