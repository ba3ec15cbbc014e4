/* The variant space: enumeration bounds, applicability, names, strict JSON, geometry, shapes. */
#include "codegen.h"
#include "epilogue.h"
#include "ft_test.h"
#include "family.h"
#include "kernel_abi.h"
#include "space.h"

typedef struct shape {
  const char *name;
  int64_t m, n, k;
} shape;

static const shape k_shapes[] = {
    {"minsub", 128, 16384, 16384},
    {"biasrelu", 1024, 8192, 8192},
    {"ragged", 127, 1000, 999},
    {"tiny", 1, 1, 1},
    {"k2", 33, 65, 130},
};

static void check_geometry(const ft_variant *v, const shape *s) {
  ft_launch_geom g;
  ft_variant_geometry(v, s->m, s->n, s->k, &g);
  ASSERT_TRUE(g.grid[0] >= 1 && g.grid[1] == 1 && g.block[1] == 1 && g.block[2] == 1);
  if (v->kind == FT_VK_EPILOGUE) {
    ASSERT_EQ_INT(g.block[0], v->pass.block);
    ASSERT_TRUE((int64_t)g.grid[0] * v->pass.block * v->pass.ept >= s->m * s->n);
    ASSERT_EQ_INT(g.has_reduce, 0);
    return;
  }
  ASSERT_EQ_INT(g.block[0], (v->bm / v->fp32.tm) * (v->bn / v->fp32.tn));
  const int64_t tiles = ((s->m + v->bm - 1) / v->bm) * ((s->n + v->bn - 1) / v->bn);
  ASSERT_TRUE(g.smem > 0 && g.smem <= 232448);
  if (v->fp32.streamk > 0) { /* a grid of streamk blocks, two tile slots each, a fixup block per tile */
    ASSERT_EQ_INT(g.grid[0], v->fp32.streamk);
    ASSERT_EQ_INT(g.grid[2], 1);
    ASSERT_EQ_INT(g.has_reduce, 1);
    ASSERT_EQ_INT(g.workspace_bytes, (int64_t)v->fp32.streamk * 2 * v->bm * v->bn * 4);
    ASSERT_EQ_INT(g.rgrid[0], tiles);
    ASSERT_EQ_INT(g.rblock[0], 256);
    ASSERT_EQ_INT(g.rgrid[1], v->bm * v->bn / 1024);
    return;
  }
  ASSERT_EQ_INT(g.grid[0], tiles);
  ASSERT_EQ_INT(g.grid[2], v->split_k);
  ASSERT_TRUE(g.smem > 0 && g.smem <= 232448);
  ASSERT_EQ_INT(g.has_reduce, v->split_k > 1);
  if (v->split_k > 1) {
    ASSERT_EQ_INT(g.workspace_bytes, (int64_t)v->split_k * s->m * s->n * 4);
    ASSERT_TRUE((int64_t)g.rgrid[0] * g.rblock[0] * 4 >= s->m * s->n);
  } else {
    ASSERT_EQ_INT(g.workspace_bytes, 0);
  }
}

static void check_roundtrip(const ft_variant *v) {
  char json[256], name[128], name2[128];
  ASSERT_TRUE(ft_variant_json(v, json, sizeof json) < (int)sizeof json);
  ft_variant back;
  ft_err e;
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, v, sizeof back) == 0);
  ft_variant_name(v, name, sizeof name);
  ft_variant_name(&back, name2, sizeof name2);
  ASSERT_EQ_STR(name, name2);
}

/* Position of f in the family table (-1: not in it). */
static int family_index(const ft_family *f) {
  const ft_family *const *t = ft_families();
  for (int i = 0; t[i]; i++)
    if (t[i] == f) return i;
  return -1;
}

static int family_named(const char *name) {
  const ft_family *const *t = ft_families();
  for (int i = 0; t[i]; i++)
    if (!strcmp(t[i]->name, name)) return i;
  FT_FAIL_AT_("no family named %s", name);
  return -1;
}

/* The family table: every operation present, names and (kind, layout) unique, and every
 * variant a family enumerates belongs to it (ft_family_of finds the same entry). */
static void test_families(const ft_device_limits *lim) {
  const ft_family *const *t = ft_families();
  int n = 0;
  for (; t[n]; n++) {
    const ft_family *f = t[n];
    ASSERT_TRUE(f->name && f->suffix && f->arch_suffix && f->sources && f->sources[0] && f->kernel);
    ASSERT_TRUE(f->keys && f->opt_keys && f->variant_name && f->valid && f->applicable && f->enumerate &&
                f->reg_cap && f->geometry && f->defines && f->reduce_kernel && f->alignment && f->kernel_args);
    ASSERT_TRUE(f->revision >= 1);
    ASSERT_TRUE(ft_family_find(f->kind, f->id) == f);
    for (int j = 0; j < n; j++) {
      ASSERT_TRUE(strcmp(t[j]->name, f->name) != 0);
      ASSERT_TRUE(t[j]->kind != f->kind || t[j]->id != f->id);
    }
  }
  ASSERT_TRUE(n >= 3);
  for (int kind = FT_VK_GEMM; kind <= FT_VK_EPILOGUE; kind++) {
    ft_variant *vs = NULL;
    int nv = 0;
    ft_err e;
    ASSERT_OK(ft_space_enumerate((ft_variant_kind)kind, 1024, 8192, 8192, lim, &vs, &nv, &e));
    for (int j = 0; j < nv; j++) {
      const ft_family *f = ft_family_of(&vs[j]);
      ASSERT_TRUE(f != NULL && f->kind == (ft_variant_kind)kind);
      if (f && f->reduce_kernel(&vs[j])) ASSERT_TRUE(f->reduce_args != NULL);
    }
    free(vs);
  }
  /* A layout no family has, and a retired one, say so. */
  char why[160] = "";
  ft_family_missing(FT_VK_GEMM, 1, why, sizeof why);
  ASSERT_CONTAINS(why, "removed");
  ft_family_missing(FT_VK_GEMM, 7, why, sizeof why);
  ASSERT_CONTAINS(why, "layout 7");
}

static void test_enumerate(const ft_device_limits *lim) {
  for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++) {
    const shape *s = &k_shapes[i];
    for (int kind = FT_VK_GEMM; kind <= FT_VK_EPILOGUE; kind++) {
      ft_variant *vs = NULL;
      int n = 0;
      ft_err e;
      ASSERT_OK(ft_space_enumerate((ft_variant_kind)kind, s->m, s->n, s->k, lim, &vs, &n, &e));
      printf("%-9s %s: %d variants\n", s->name, kind == FT_VK_GEMM ? "gemm" : "epilogue", n);
      ASSERT_TRUE(n > 0 && n <= 400);
      int vec_ok = 1, stages_seen = 0, split_seen = 0, layouts_seen = 0, streamk_seen = 0;
      for (int j = 0; j < n; j++) {
        char why[160] = "";
        if (!ft_variant_applicable(&vs[j], s->m, s->n, s->k, lim, why, sizeof why))
          FT_FAIL_AT_("%s variant %d not applicable: %s", s->name, j, why);
        if (kind == FT_VK_GEMM && vs[j].vec > 1 && s->k % vs[j].vec) vec_ok = 0;
        if (kind == FT_VK_GEMM) stages_seen |= 1 << vs[j].stages;
        if (kind == FT_VK_GEMM) layouts_seen |= 1 << family_index(ft_family_of(&vs[j]));
        if (vs[j].split_k > 1) split_seen = 1;
        if (vs[j].fp32.streamk > 0) streamk_seen = 1;
        check_roundtrip(&vs[j]);
        check_geometry(&vs[j], s);
        for (int q = 0; q < j; q++) ASSERT_TRUE(memcmp(&vs[q], &vs[j], sizeof vs[j]) != 0);
      }
      ASSERT_TRUE(vec_ok);
      if (kind == FT_VK_GEMM && s->k >= 999) ASSERT_EQ_INT(stages_seen, 0x1e); /* 1..4 all kept */
      if (kind == FT_VK_GEMM && s->m == 128 && s->k == 16384) ASSERT_TRUE(split_seen);
      /* The seed shapes leave a last wave partly empty (128 or 256 tiles on 132 SMs): stream-K
       * variants are measured there; the tiny shape has too little work per block for them. */
      if (kind == FT_VK_GEMM && s->k >= 8192) ASSERT_TRUE(streamk_seen);
      if (kind == FT_VK_GEMM && s->k == 1) ASSERT_TRUE(!streamk_seen);
      if (kind == FT_VK_GEMM && s->k >= 999) /* both FFMA families */
        ASSERT_EQ_INT(layouts_seen, (1 << family_named("fp32_rows")) | (1 << family_named("fp32_warp")));
      if (kind == FT_VK_GEMM && i == 0) {
        char name[128];
        ft_variant_name(&vs[0], name, sizeof name);
        printf("  first: %s\n", name);
      }
      free(vs);
    }
  }
}

/* The epilogue pass: the default space keeps vec 4 (9 passes), the full one all 36, and every
 * default pass is in the full space, in every mode (fp8's follows cuBLASLt's FP8 GEMM). */
static void test_pass_scopes(const ft_device_limits *lim) {
  for (int math = 0; math < FT_MATH_COUNT; math++) {
    ft_variant *pr = NULL, *fu = NULL;
    int np = 0, nf = 0;
    ft_err e;
    ASSERT_OK(ft_space_enumerate_scope(FT_VK_EPILOGUE, 1000, 1001, 999, (ft_math)math, FT_SPACE_PRUNED, lim, &pr, NULL,
                                       &np, &e));
    ASSERT_OK(ft_space_enumerate_scope(FT_VK_EPILOGUE, 1000, 1001, 999, (ft_math)math, FT_SPACE_FULL, lim, &fu, NULL,
                                       &nf, &e));
    ASSERT_EQ_INT(np, 9);
    ASSERT_EQ_INT(nf, 36);
    for (int i = 0; i < np; i++) {
      ASSERT_EQ_INT(pr[i].vec, 4);
      int found = 0;
      for (int j = 0; j < nf; j++) found += !memcmp(&pr[i], &fu[j], sizeof pr[i]);
      ASSERT_EQ_INT(found, 1);
    }
    free(pr);
    free(fu);
  }
}

static void test_limits(void) {
  ft_device_limits lim;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  ASSERT_EQ_INT(lim.sm_count, 132);
  ASSERT_EQ_INT(lim.max_smem_per_block, 227 * 1024);
  ASSERT_OK(ft_limits_for_arch("sm_80", &lim, &e));
  ASSERT_OK(ft_limits_for_arch("sm_89", &lim, &e));
  ASSERT_EQ_INT(ft_limits_for_arch("sm_99", &lim, &e), FT_ERR_UNSUPPORTED);
  ASSERT_CONTAINS(e.msg, "sm_99");
  ASSERT_EQ_INT(ft_limits_for_arch(NULL, &lim, &e), FT_ERR_INVALID_ARG);
}

static void test_names(void) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM;
  v.bm = 64, v.bn = 128, v.bk = 16, v.fp32.tm = 8, v.fp32.tn = 8, v.vec = 4, v.stages = 2, v.split_k = 1, v.swizzle = 8;
  char buf[256];
  ft_variant_name(&v, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "gemm_bm64_bn128_bk16_t8x8_v4_s2_k1_z8");
  ft_variant_json(&v, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,"
                     "\"stages\":2,\"split_k\":1,\"swizzle\":8}");
  /* Layout 3 (warp-tiled): a name suffix and one more key; layout 0 written as before. */
  ft_variant km = v;
  km.bm = 128, km.bk = 8, km.fp32.tm = 16, km.stages = 1, km.split_k = 2, km.swizzle = 1, km.family = 3;
  ft_variant_name(&km, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "gemm_bm128_bn128_bk8_t16x8_v4_s1_k2_z1_w");
  ft_variant_json(&km, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "{\"kind\":\"gemm\",\"bm\":128,\"bn\":128,\"bk\":8,\"tm\":16,\"tn\":8,\"vec\":4,"
                     "\"stages\":1,\"split_k\":2,\"swizzle\":1,\"layout\":3}");
  ft_variant kb;
  ft_err kerr;
  ASSERT_OK(ft_variant_from_json(buf, &kb, &kerr));
  ASSERT_TRUE(memcmp(&kb, &km, sizeof km) == 0);
  /* An explicit "layout":0 is the same variant as no key. */
  ASSERT_OK(ft_variant_from_json("{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,"
                                 "\"vec\":4,\"stages\":2,\"split_k\":1,\"swizzle\":8,\"layout\":0}",
                                 &kb, &kerr));
  ASSERT_TRUE(memcmp(&kb, &v, sizeof v) == 0);
  /* Layouts 1 and 2 (k-major) were removed: a stored one is refused with a reason. */
  ASSERT_EQ_INT(ft_variant_from_json("{\"kind\":\"gemm\",\"bm\":128,\"bn\":128,\"bk\":8,\"tm\":8,"
                                     "\"tn\":8,\"vec\":4,\"stages\":1,\"split_k\":1,\"swizzle\":1,"
                                     "\"layout\":1}",
                                     &kb, &kerr),
                FT_ERR_FORMAT);
  ASSERT_CONTAINS(kerr.msg, "removed");
  ft_variant e = {0};
  e.kind = FT_VK_EPILOGUE, e.pass.block = 256, e.vec = 4, e.pass.ept = 8;
  ft_variant_name(&e, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "epi_b256_v4_e8");
  ft_variant_json(&e, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "{\"kind\":\"epilogue\",\"block\":256,\"vec\":4,\"ept\":8}");
  /* Whitespace and key order are free. */
  ft_variant back;
  ft_err err;
  ASSERT_OK(ft_variant_from_json(" { \"ept\" : 8 ,\n\"vec\":4, \"block\":256, \"kind\":\"epilogue\" } ", &back, &err));
  ASSERT_TRUE(memcmp(&back, &e, sizeof e) == 0);
}

/* Stream-K: only on layout 3 without split-K, named "_sk<n>", written as an optional key. */
static void test_streamk(const ft_device_limits *lim) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM, v.family = 3;
  v.bm = 128, v.bn = 256, v.bk = 8, v.fp32.tm = 16, v.fp32.tn = 8, v.vec = 4, v.stages = 2, v.split_k = 1, v.swizzle = 1;
  v.fp32.streamk = 132;
  char buf[256], why[160];
  ft_err e;
  ASSERT_TRUE(ft_variant_valid(&v, why, sizeof why));
  ft_variant_name(&v, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "gemm_bm128_bn256_bk8_t16x8_v4_s2_k1_z1_sk132_w");
  ft_variant_json(&v, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "{\"kind\":\"gemm\",\"bm\":128,\"bn\":256,\"bk\":8,\"tm\":16,\"tn\":8,\"vec\":4,"
                     "\"stages\":2,\"split_k\":1,\"swizzle\":1,\"streamk\":132,\"layout\":3}");
  check_roundtrip(&v);
  ASSERT_TRUE(ft_variant_applicable(&v, 128, 16384, 16384, lim, why, sizeof why));
  const shape odd = {"odd", 129, 257, 515};
  check_geometry(&v, &odd);
  ft_variant bad = v;
  bad.split_k = 2;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "split_k");
  bad = v, bad.fp32.streamk = -1;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  bad = v, bad.fp32.streamk = 4097;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "streamk");
  bad = v, bad.family = 0, bad.fp32.tm = 8, bad.stages = 1;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "layout 3");
  /* JSON: the same checks, and an epilogue variant has no such key. */
  ASSERT_EQ_INT(ft_variant_from_json("{\"kind\":\"gemm\",\"bm\":128,\"bn\":128,\"bk\":8,\"tm\":8,\"tn\":8,"
                                     "\"vec\":4,\"stages\":1,\"split_k\":1,\"swizzle\":1,\"streamk\":132}",
                                     &bad, &e),
                FT_ERR_FORMAT);
  ASSERT_CONTAINS(e.msg, "layout 3");
  ASSERT_EQ_INT(ft_variant_from_json("{\"kind\":\"epilogue\",\"block\":256,\"vec\":4,\"ept\":8,\"streamk\":1}",
                                     &bad, &e),
                FT_ERR_FORMAT);
  ASSERT_EQ_INT(ft_variant_from_json("{\"kind\":\"gemm\",\"bm\":128,\"bn\":256,\"bk\":8,\"tm\":16,\"tn\":8,"
                                     "\"vec\":4,\"stages\":2,\"split_k\":1,\"swizzle\":1,\"streamk\":132,"
                                     "\"layout\":3,\"streamk\":132}",
                                     &bad, &e),
                FT_ERR_FORMAT);
  ASSERT_CONTAINS(e.msg, "duplicate");
  /* "streamk":0 is the same variant as no key. */
  ft_variant plain = v;
  plain.fp32.streamk = 0;
  ASSERT_OK(ft_variant_from_json("{\"kind\":\"gemm\",\"bm\":128,\"bn\":256,\"bk\":8,\"tm\":16,\"tn\":8,"
                                 "\"vec\":4,\"stages\":2,\"split_k\":1,\"swizzle\":1,\"streamk\":0,\"layout\":3}",
                                 &bad, &e));
  ASSERT_TRUE(memcmp(&bad, &plain, sizeof plain) == 0);
  /* Each family owns its block of ft_variant: another family's block set is refused by name. */
  bad = v, bad.tc.pingpong = 1;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "fp32_warp variant with tc parameters");
  bad = v, bad.pass.lt = 1;
  ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
  ASSERT_CONTAINS(why, "with epilogue_pass parameters");
  ASSERT_TRUE(ft_variant_stream_k(&v) && !ft_variant_stream_k(&plain));
}

static void test_hostile_json(void) {
  static const char *bad[] = {
      "",
      "{}",
      "[]",
      "null",
      "{\"kind\":\"gemm\"}",
      "{\"kind\":\"epilogue\",\"block\":256,\"vec\":4}",                       /* missing */
      "{\"kind\":\"epilogue\",\"block\":256,\"vec\":4,\"ept\":8,\"x\":1}",     /* unknown key */
      "{\"kind\":\"epilogue\",\"block\":256,\"vec\":4,\"ept\":8,\"ept\":8}",   /* duplicate */
      "{\"kind\":\"epilogue\",\"block\":256,\"vec\":4,\"ept\":8} x",           /* trailing */
      "{\"kind\":\"epilogue\",\"block\":256,\"vec\":4,\"ept\":8,}",            /* trailing comma */
      "{\"kind\":\"epilogue\",\"block\":-256,\"vec\":4,\"ept\":8}",            /* negative */
      "{\"kind\":\"epilogue\",\"block\":256.0,\"vec\":4,\"ept\":8}",           /* fraction */
      "{\"kind\":\"epilogue\",\"block\":1e3,\"vec\":4,\"ept\":8}",             /* exponent */
      "{\"kind\":\"epilogue\",\"block\":0256,\"vec\":4,\"ept\":8}",            /* leading zero */
      "{\"kind\":\"epilogue\",\"block\":99999999999999999999,\"vec\":4,\"ept\":8}",
      "{\"kind\":\"epilogue\",\"block\":\"256\",\"vec\":4,\"ept\":8}",         /* wrong kind */
      "{\"kind\":4,\"block\":256,\"vec\":4,\"ept\":8}",
      "{\"kind\":\"epilogue\",\"block\":100,\"vec\":4,\"ept\":8}",             /* not % 32 */
      "{\"kind\":\"epilogue\",\"block\":256,\"vec\":3,\"ept\":8}",
      "{\"kind\":\"epilogue\",\"block\":256,\"vec\":4,\"ept\":6}",
      "{\"kind\":\"epilogue\",\"block\":4096,\"vec\":4,\"ept\":8}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":9,\"split_k\":1,\"swizzle\":8}",
      "{\"kind\":\"gemm\",\"bm\":96,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":2,\"split_k\":1,\"swizzle\":8}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":2,\"split_k\":0,\"swizzle\":8}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":2,\"split_k\":1000,\"swizzle\":8}",
      "{\"kind\":\"gemm\",\"bm\":256,\"bn\":256,\"bk\":16,\"tm\":4,\"tn\":4,\"vec\":4,\"stages\":2,\"split_k\":1,\"swizzle\":1}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":2,\"split_k\":1,\"swizzle\":8,\"block\":1}",
      "{\"kind\":\"gemm\\u0000\",\"bm\":64}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":2,\"split_k\":1,\"swizzle\":8",
      "{\"kind\":\"kernel\",\"bm\":64}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":1,\"split_k\":1,\"swizzle\":8,\"layout\":5}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":3,\"split_k\":1,\"swizzle\":8,\"layout\":3}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":4,\"tn\":8,\"vec\":4,\"stages\":1,\"split_k\":1,\"swizzle\":8,\"layout\":3}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":16,\"tn\":16,\"vec\":4,\"stages\":1,\"split_k\":1,\"swizzle\":8,\"layout\":3}",
      "{\"kind\":\"gemm\",\"bm\":32,\"bn\":128,\"bk\":16,\"tm\":16,\"tn\":8,\"vec\":4,\"stages\":1,\"split_k\":1,\"swizzle\":8,\"layout\":3}",
      "{\"kind\":\"gemm\",\"bm\":256,\"bn\":256,\"bk\":8,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":1,\"split_k\":1,\"swizzle\":1,\"layout\":3}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":2,\"split_k\":1,\"swizzle\":8,\"layout\":1}",
      "{\"kind\":\"gemm\",\"bm\":64,\"bn\":128,\"bk\":16,\"tm\":8,\"tn\":8,\"vec\":4,\"stages\":1,\"split_k\":1,\"swizzle\":8,\"layout\":\"km\"}",
      "{\"kind\":\"epilogue\",\"block\":256,\"vec\":4,\"ept\":8,\"layout\":0}",
      "{\"kind\":\"epilogue\",\"block\":256,\"vec\":4,\"ept\":8,\"kind\":\"gemm\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ft_variant v;
    ft_err e;
    ft__err_clear(&e);
    const ft_status s = ft_variant_from_json(bad[i], &v, &e);
    if (s != FT_ERR_FORMAT) FT_FAIL_AT_("accepted or wrong status %d: %s", (int)s, bad[i]);
    ASSERT_TRUE(e.msg[0] != '\0');
  }
  /* A very long input is refused before parsing. */
  char *big = malloc(100000);
  ASSERT_TRUE(big != NULL);
  if (big) {
    memset(big, ' ', 99999);
    big[0] = '{';
    big[99999] = '\0';
    ft_variant v;
    ft_err e;
    ASSERT_EQ_INT(ft_variant_from_json(big, &v, &e), FT_ERR_FORMAT);
    free(big);
  }
  ft_variant v;
  ft_err e;
  ASSERT_EQ_INT(ft_variant_from_json(NULL, &v, &e), FT_ERR_INVALID_ARG);
}

static void test_applicability(const ft_device_limits *lim) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM;
  v.bm = 128, v.bn = 128, v.bk = 16, v.fp32.tm = 8, v.fp32.tn = 8, v.vec = 4, v.stages = 3, v.split_k = 1, v.swizzle = 1;
  char why[160];
  ASSERT_TRUE(ft_variant_applicable(&v, 128, 256, 512, lim, why, sizeof why));
  ASSERT_TRUE(!ft_variant_applicable(&v, 128, 256, 514, lim, why, sizeof why));
  ASSERT_CONTAINS(why, "vec");
  v.vec = 2;
  ASSERT_TRUE(ft_variant_applicable(&v, 128, 256, 514, lim, why, sizeof why));
  v.stages = 4, v.bk = 32, v.bm = 256, v.bn = 256, v.fp32.tm = 8, v.fp32.tn = 8; /* 1024 threads, 295 KB */
  ASSERT_TRUE(!ft_variant_applicable(&v, 128, 256, 512, lim, why, sizeof why));
}

static void test_shapes(void) {
  ft_err e;
  ASSERT_OK(ft_check_shape(1, 1, 1, &e));
  ASSERT_OK(ft_check_shape(128, 16384, 16384, &e));
  ASSERT_EQ_INT(ft_check_shape(0, 1, 1, &e), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_check_shape(1, 0, 1, &e), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_check_shape(1, 1, 0, &e), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_check_shape(-5, 1, 1, &e), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_check_shape(INT64_MIN, 1, 1, &e), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_check_shape(FT_MAX_DIM + 1, 1, 1, &e), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_check_shape(1, 1, INT64_MAX, &e), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_check_shape(FT_MAX_DIM, FT_MAX_DIM, 1, &e), FT_ERR_INVALID_ARG);
  ASSERT_OK(ft_check_shape(FT_MAX_DIM, 1, 1, &e));
  ft_device_limits lim;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  ft_variant *vs = NULL;
  int n = -1;
  ASSERT_EQ_INT(ft_space_enumerate(FT_VK_GEMM, 0, 5, 5, &lim, &vs, &n, &e), FT_ERR_INVALID_ARG);
  ASSERT_TRUE(vs == NULL && n == 0);
}

/* The tensor-core family charges what E costs where the MMA does not hide it: nothing without an
 * epilogue cost (the same order and costs as before), more for the cooperative forms than for
 * ping-pong with a heavy one, which then comes first; counted from the parsed expression. */
static void test_epilogue_cost(const ft_device_limits *lim) {
  ft_err e;
  ft_variant *a = NULL, *b = NULL, *h = NULL;
  double *ca = NULL, *cb = NULL, *ch = NULL;
  int na = 0, nb = 0, nh = 0;
  ft_epilogue *ep = NULL, *none = NULL;
  ASSERT_OK(ft_ep_parse("mish(mish(x + bias))", &ep, &e));
  ASSERT_OK(ft_ep_parse("x", &none, &e));
  const ft_ep_cost heavy = ft_ep_cost_of(ep, 1);
  ASSERT_TRUE(heavy.fp32 > 10 && heavy.mufu >= 4);
  ASSERT_OK(ft_space_enumerate_scope(FT_VK_GEMM, 1024, 8192, 8192, FT_MATH_BF16, FT_SPACE_PRUNED, lim, &a, &ca, &na, &e));
  ASSERT_OK(ft_space_enumerate_ep(FT_VK_GEMM, 1024, 8192, 8192, FT_MATH_BF16, FT_SPACE_PRUNED, none, lim, &b, &cb, &nb, &e));
  ASSERT_OK(ft_space_enumerate_ep(FT_VK_GEMM, 1024, 8192, 8192, FT_MATH_BF16, FT_SPACE_PRUNED, ep, lim, &h, &ch, &nh,
                                  &e));
  ASSERT_EQ_INT(na, nb);
  int twins = 0; /* the heavy E adds deferred-E twins (tc_defer_twin, once in the default space), nothing else */
  for (int i = 0; i < nh; i++) twins += h[i].tc.defer != 0;
  ASSERT_EQ_INT(na + twins, nh);
  for (int i = 0; i < na && i < nb; i++) {
    ASSERT_TRUE(memcmp(&a[i], &b[i], sizeof a[i]) == 0);
    ASSERT_TRUE(ca[i] == cb[i]);
  }
  /* Every variant costs more with the heavy E; a cooperative one more than a ping-pong one of
   * the same tile count, and the cheapest is ping-pong. */
  double worst_pp = 0, least_coop = 1e300;
  for (int i = 0; i < nh; i++) {
    ft_variant early = h[i];
    early.tc.defer = 0; /* a deferred twin against its early form without E */
    int j = 0;
    while (j < na && memcmp(&a[j], &early, sizeof early) != 0) j++;
    ASSERT_TRUE(j < na);
    if (j < na) ASSERT_TRUE(ch[i] > ca[j]);
    if (j < na && h[i].tc.pingpong == 2 && ch[i] / ca[j] > worst_pp) worst_pp = ch[i] / ca[j];
    if (j < na && !h[i].tc.pingpong && !h[i].tc.defer && h[i].bn == 256 && h[i].split_k == 0 && ch[i] / ca[j] < least_coop)
      least_coop = ch[i] / ca[j];
  }
  ASSERT_TRUE(nh > 0 && h[0].tc.pingpong == 2);
  ASSERT_TRUE(worst_pp < least_coop);
  if (nh > 0) { /* the tc family's own block, and no other's */
    char why[160];
    ft_variant bad = h[0];
    ASSERT_TRUE(ft_variant_valid(&bad, why, sizeof why));
    bad.fp32.tm = 8;
    ASSERT_TRUE(!ft_variant_valid(&bad, why, sizeof why));
    ASSERT_CONTAINS(why, "tc variant with fp32_");
  }
  free(a), free(b), free(h), free(ca), free(cb), free(ch);
  ft_ep_free(ep);
  ft_ep_free(none);
}

/* Each axis of the tensor-core enumeration keeps its own rule (src/family/tc/family_tc_space.c), in the
 * pruned and the full space of several shapes and modes. */
static void test_tc_axes(const ft_device_limits *lim) {
  static const int64_t shapes[][3] = {{128, 16384, 16384}, {1024, 8192, 8192}, {64, 6144, 4096}, {8192, 8192, 8192},
                                      {512, 11008, 4096}, {16, 14336, 4096}};
  static const ft_math modes[] = {FT_MATH_TF32, FT_MATH_BF16, FT_MATH_3XTF32};
  ft_err e;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (size_t mo = 0; mo < sizeof modes / sizeof modes[0]; mo++)
      for (int full = 0; full <= 1; full++) {
        const int64_t m = shapes[i][0];
        ft_variant *v = NULL;
        int n = 0, tc = 0;
        ASSERT_OK(ft_space_enumerate_scope(FT_VK_GEMM, m, shapes[i][1], shapes[i][2], modes[mo],
                                           full ? FT_SPACE_FULL : FT_SPACE_PRUNED, lim, &v, NULL, &n, &e));
        for (int j = 0; j < n; j++) {
          const ft_variant *t = &v[j];
          if (t->family != FT_FAMILY_TC) continue;
          tc++;
          const int bm = 64 * (t->tc.pingpong ? t->tc.pingpong : t->tc.consumers);
          const int64_t tiles_m = (m + bm - 1) / bm;
          ASSERT_TRUE(t->tc.consumers == 2 || m <= 64);                     /* consumers */
          ASSERT_TRUE(t->tc.cluster == 1 || (m + 64 * t->tc.consumers - 1) / (64 * t->tc.consumers) >= 2); /* cluster */
          ASSERT_TRUE(t->swizzle == 8 || (t->swizzle == 16 && tiles_m > 8)); /* group */
          ASSERT_TRUE(!t->tc.pingpong || (t->tc.consumers == 2 && modes[mo] != FT_MATH_3XTF32)); /* form */
          ASSERT_TRUE(full || t->tc.pingpong != 1);
          ASSERT_TRUE(full || !t->tc.pingpong || t->swizzle == 8);
          ASSERT_TRUE(full || !t->tc.staged || modes[mo] == FT_MATH_3XTF32);
          ASSERT_TRUE(!t->tc.staged || t->tc.tstore);
          ASSERT_TRUE((t->tc.chunk > 0) == (modes[mo] == FT_MATH_3XTF32)); /* chunk */
          ASSERT_TRUE(!t->tc.aregs || t->bn <= 64);                        /* aregs */
          ASSERT_TRUE(t->split_k == 0 || (!t->tc.tstore && !t->tc.pingpong)); /* split-K */
          ASSERT_TRUE(!t->tc.streamk || (t->tc.cluster == 2 && t->tc.tstore && !t->tc.pingpong && !t->tc.staged)); /* stream-K */
          ASSERT_TRUE(!t->tc.late || (full && t->tc.tstore && t->bn >= 192 && !t->tc.pingpong)); /* the late twin */
        }
        ASSERT_TRUE(tc > 0);
        free(v);
      }
}

/* v's name holds suffix, its JSON the key, and the JSON reads back as v. */
static void check_name_json(const ft_variant *v, const char *suffix, const char *key) {
  char name[128], json[256];
  ft_err e;
  ft_variant_name(v, name, sizeof name);
  ASSERT_TRUE(suffix && strstr(name, suffix) != NULL);
  ft_variant_json(v, json, sizeof json);
  ASSERT_TRUE(strstr(json, key) != NULL);
  ft_variant back;
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, v, sizeof back) == 0);
}

/* The epilogue pass after cuBLASLt's bias GEMM: enumerated beside the plain passes where E adds a
 * bias to x (one variant when nothing else is left), never otherwise; after its relu / gelu_tanh
 * epilogues where E begins with one of x or of x + bias; slot, name, JSON and rules; the GEMM
 * families refuse the fields. */
static void test_lt_passes(const ft_device_limits *lim) {
  static const struct {
    const char *ep;
    int lt_variants;  /* bias only; -1: some */
    int act_variants; /* an activation (with the bias where E adds one); -1: some */
    const char *act_suffix;
  } cases[] = {{"relu(x + bias)", -1, 1, "_ltbr_bf16"},
               {"x + bias", 1, 0, NULL},
               {"relu(x)", 0, 1, "_ltr_bf16"},
               {"gelu_tanh(x + bias) * 1.5", -1, -1, "_ltbg_bf16"},
               {"sigmoid(gelu_tanh(x))", 0, -1, "_ltg_bf16"},
               {"gelu(x + bias)", -1, 0, NULL},
               {"relu(2 * x)", 0, 0, NULL},
               {"x", 0, 0, NULL}};
  ft_err e;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ft_epilogue *ep = NULL;
    ASSERT_OK(ft_ep_parse(cases[c].ep, &ep, &e));
    ft_variant *v = NULL;
    int n = 0, lt = 0, act = 0;
    ASSERT_OK(ft_space_enumerate_ep(FT_VK_EPILOGUE, 1024, 4096, 4096, FT_MATH_BF16, FT_SPACE_PRUNED, ep, lim, &v, NULL,
                                    &n, &e));
    for (int i = 0; i < n; i++)
      if (v[i].pass.lt_act) {
        act++;
        check_name_json(&v[i], cases[c].act_suffix, "\"lt_act\":");
      } else if (v[i].pass.lt) {
        lt++;
        ASSERT_EQ_INT(v[i].pass.lt, 1);
        check_name_json(&v[i], "_lt_bf16", "\"lt\":1");
      }
    if (cases[c].lt_variants < 0) ASSERT_TRUE(lt > 0 && lt < n);
    else ASSERT_EQ_INT(lt, cases[c].lt_variants);
    if (cases[c].act_variants < 0) ASSERT_TRUE(act > 1 && act < n);
    else ASSERT_EQ_INT(act, cases[c].act_variants);
    free(v);
    /* cuBLASLt's rows: n and k multiples of 16 bytes. */
    ASSERT_OK(ft_space_enumerate_ep(FT_VK_EPILOGUE, 1024, 4095, 4096, FT_MATH_BF16, FT_SPACE_PRUNED, ep, lim, &v, NULL,
                                    &n, &e));
    for (int i = 0; i < n; i++) ASSERT_TRUE(v[i].pass.lt == 0 && v[i].pass.lt_act == 0);
    free(v);
    /* fp8: the pass applies all of E after cuBLASLt's FP8 GEMM (E's scales come first). */
    ASSERT_OK(ft_space_enumerate_ep(FT_VK_EPILOGUE, 1024, 4096, 4096, FT_MATH_FP8, FT_SPACE_PRUNED, ep, lim, &v, NULL,
                                    &n, &e));
    int chains = 0; /* the eager chain beside the passes, where E has steps after the GEMM (tests/cpu/test_chain.c) */
    for (int i = 0; i < n; i++) chains += v[i].family == FT_FAMILY_EAGER_CHAIN;
    ASSERT_TRUE(chains <= 1);
    ASSERT_EQ_INT(n - chains, 9);
    for (int i = 0; i < n; i++) ASSERT_TRUE(v[i].pass.lt == 0 && v[i].pass.lt_act == 0);
    free(v);
    ft_ep_free(ep);
  }
  {
    ft_variant f = {0};
    char why[160];
    f.kind = FT_VK_EPILOGUE, f.math = FT_MATH_FP8, f.pass.block = 256, f.vec = 4, f.pass.ept = 8, f.pass.lt = 1;
    ASSERT_TRUE(!ft_variant_applicable(&f, 1024, 4096, 4096, lim, why, sizeof why));
    ASSERT_CONTAINS(why, "not in fp8");
    /* fp8's GEMM is cuBLASLt's FP8 GEMM: sm_89 (Ada) has it, sm_80 not. */
    ft_device_limits ada, ampere;
    ft_err e2;
    ASSERT_OK(ft_limits_for_arch("sm_89", &ada, &e2));
    ASSERT_OK(ft_limits_for_arch("sm_80", &ampere, &e2));
    f.pass.lt = 0;
    ASSERT_TRUE(ft_variant_applicable(&f, 1024, 4096, 4096, &ada, NULL, 0));
    ASSERT_TRUE(!ft_variant_applicable(&f, 1024, 4096, 4096, &ampere, why, sizeof why));
    ASSERT_CONTAINS(why, "needs sm_89 or newer, not sm_80");
  }
  ft_variant p = {0};
  p.kind = FT_VK_EPILOGUE, p.pass.block = 256, p.vec = 4, p.pass.ept = 8, p.pass.lt = FT_EP_SLOTS + 1;
  ASSERT_TRUE(!ft_variant_valid(&p, NULL, 0));
  p.pass.lt = 0, p.pass.lt_act = 3;
  char why[160];
  ASSERT_TRUE(!ft_variant_valid(&p, why, sizeof why));
  ASSERT_CONTAINS(why, "lt_act 3");
  ft_variant *g = NULL;
  int ng = 0;
  ASSERT_OK(ft_space_enumerate_math(FT_VK_GEMM, 1024, 4096, 4096, FT_MATH_BF16, lim, &g, &ng, &e));
  for (int i = 0; i < ng && i < 3; i++) {
    ft_variant t = g[i];
    t.pass.lt = 1;
    ASSERT_TRUE(!ft_variant_valid(&t, NULL, 0));
  }
  free(g);
}

/* The pass after cuBLASLt's GEMM adding a residual as its C (addmm's form, lt_c): enumerated where
 * E adds a matrix to x or to x + bias (one variant when nothing else is left), not in fp8, not
 * with rows cuBLASLt cannot take; names, JSON and the rules; codegen refuses a mismatch. */
static void test_resid_passes(const ft_device_limits *lim) {
  static const struct {
    const char *ep;
    int count; /* lt_c variants; -1: some */
    int lt;    /* the bias's lt */
    const char *suffix;
  } cases[] = {{"x + r where mat r", 1, 0, "_ltc_bf16"},
               {"x + bias + r where mat r", 1, 1, "_ltbc_bf16"},
               {"relu(x + r) * 2 where mat r", -1, 0, "_ltc_bf16"},
               {"x * r where mat r", 0, 0, NULL},
               {"x + bias", 0, 0, NULL}};
  ft_err e;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ft_epilogue *ep = NULL;
    ASSERT_OK(ft_ep_parse(cases[c].ep, &ep, &e));
    ft_variant *v = NULL;
    int n = 0, found = 0;
    ASSERT_OK(ft_space_enumerate_ep(FT_VK_EPILOGUE, 1024, 4096, 4096, FT_MATH_BF16, FT_SPACE_PRUNED, ep, lim, &v, NULL,
                                    &n, &e));
    for (int i = 0; i < n; i++) {
      if (!v[i].pass.lt_c) continue;
      found++;
      ASSERT_EQ_INT(v[i].pass.lt, cases[c].lt);
      ASSERT_EQ_INT(v[i].pass.lt_act, 0);
      check_name_json(&v[i], cases[c].suffix, "\"lt_c\":");
      ft_kernel_src src;
      ASSERT_OK(ft_codegen_variant(&v[i], ep, &src, &e));
      ASSERT_CONTAINS(src.text, "#define FT_PASS_AFTER_LT_C");
      ft_kernel_src_free(&src);
    }
    if (cases[c].count < 0) ASSERT_TRUE(found > 1 && found < n);
    else ASSERT_EQ_INT(found, cases[c].count);
    free(v);
    /* Rows cuBLASLt cannot take (n * 2 bytes not a multiple of 16), and fp8: no residual form. */
    ASSERT_OK(ft_space_enumerate_ep(FT_VK_EPILOGUE, 1024, 4095, 4096, FT_MATH_BF16, FT_SPACE_PRUNED, ep, lim, &v, NULL,
                                    &n, &e));
    for (int i = 0; i < n; i++) ASSERT_EQ_INT(v[i].pass.lt_c, 0);
    free(v);
    ft_ep_free(ep);
  }
  ft_variant p = {0};
  p.kind = FT_VK_EPILOGUE, p.pass.block = 256, p.vec = 4, p.pass.ept = 8, p.pass.lt_c = FT_EP_SLOTS + 1;
  char why[160];
  ASSERT_TRUE(!ft_variant_valid(&p, why, sizeof why));
  ASSERT_CONTAINS(why, "lt_c");
  p.pass.lt_c = 1, p.pass.lt_act = 1;
  ASSERT_TRUE(!ft_variant_valid(&p, why, sizeof why));
  ASSERT_CONTAINS(why, "lt_c with lt_act");
  /* A variant whose matrix slot is not E's residual: codegen refuses it. */
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_ep_parse("x + bias + r where mat r", &ep, &e));
  p.pass.lt_act = 0, p.pass.lt_c = 1, p.pass.lt = 0, p.math = FT_MATH_BF16; /* slot 0 is the bias */
  ft_kernel_src src;
  ASSERT_EQ_INT(ft_codegen_variant(&p, ep, &src, &e), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(e.msg, "does not add matrix slot 0");
  ft_ep_free(ep);
}

/* A family describes a launch's tensor maps and the launch encodes them (src/gpu/launch.c): building
 * the tensor-core kernel's arguments touches no driver, so it runs here, without a GPU. */
static void test_tc_args_gpu_free(const ft_device_limits *lim) {
  ft_variant *v = NULL;
  int n = 0;
  ft_err e;
  ASSERT_OK(ft_space_enumerate_scope(FT_VK_GEMM, 256, 512, 1024, FT_MATH_BF16, FT_SPACE_FULL, lim, &v, NULL, &n, &e));
  int checked = 0, tstore = 0;
  static char x[64], w[64], y[64];
  static const ft_ep_args_dev ep;
  for (int j = 0; j < n; j++) {
    const ft_family *f = ft_family_of(&v[j]);
    if (!f || strcmp(f->name, "tc") != 0) continue;
    const ft_launch_io io = {x, w, y, NULL, NULL, 256, 512, 1024, &ep, 0, 512};
    ft_arg_store st;
    ft_arg_clear(&st);
    ASSERT_OK(f->kernel_args(&v[j], &io, &st, &e));
    ASSERT_EQ_INT(st.ntmaps, v[j].tc.tstore ? 3 : 2);
    ASSERT_TRUE(st.tmaps[0].base == x && st.tmaps[0].rows == 256 && st.tmaps[0].cols == 1024);
    ASSERT_TRUE(st.tmaps[1].base == w && st.tmaps[1].rows == 512 && st.tmaps[1].cols == 1024);
    ASSERT_EQ_INT(st.tmap_arg[0], 0);
    ASSERT_EQ_INT(st.tmap_arg[1], 1);
    if (st.ntmaps == 3) ASSERT_TRUE(st.tmaps[2].base == y && st.tmap_arg[2] == 2);
    checked++;
    tstore += v[j].tc.tstore;
  }
  ASSERT_TRUE(checked > 0 && tstore > 0);
  free(v);
}

int main(void) {
  ft_device_limits lim;
  ft_err e;
  if (ft_limits_for_arch("sm_90", &lim, &e) != FT_OK) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  test_limits();
  test_names();
  test_streamk(&lim);
  test_hostile_json();
  test_applicability(&lim);
  test_shapes();
  test_families(&lim);
  test_enumerate(&lim);
  test_pass_scopes(&lim);
  test_epilogue_cost(&lim);
  test_tc_axes(&lim);
  test_lt_passes(&lim);
  test_resid_passes(&lim);
  test_tc_args_gpu_free(&lim);
  return FT_TEST_DONE();
}
