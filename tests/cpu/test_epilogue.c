/* The epilogue language, GPU-free: evaluation of every operator and function, canonical form,
 * rejections with their columns, eager plans, and that CUDA text never carries user text. */
#include <float.h>

#include "epilogue_test_util.h"

static double eval_at(const char *text, double x, const double *vals, int line) {
  ft_epilogue *ep = parse_ok_at(text, line);
  if (!ep) return NAN;
  double v = ft_ep_eval(ep, x, vals);
  ft_ep_free(ep);
  return v;
}
#define EVAL(text, x, vals) eval_at((text), (x), (vals), __LINE__)
#define ASSERT_CLOSE(a, b) ASSERT_NEAR((a), (b), 1e-15 * (1.0 + fabs(b)))

static void test_operators(void) {
  ASSERT_CLOSE(EVAL("x", 3.5, NULL), 3.5);
  ASSERT_CLOSE(EVAL("x + 2", 1.0, NULL), 3.0);
  ASSERT_CLOSE(EVAL("x - 2", 1.0, NULL), -1.0);
  ASSERT_CLOSE(EVAL("x * 3", 1.5, NULL), 4.5);
  ASSERT_CLOSE(EVAL("x / 4", 1.0, NULL), 0.25);
  ASSERT_CLOSE(EVAL("-x", 2.0, NULL), -2.0);
  ASSERT_CLOSE(EVAL("- -x", 2.0, NULL), 2.0);
  ASSERT_CLOSE(EVAL("1 - x - 1", 5.0, NULL), -5.0);    /* left associative */
  ASSERT_CLOSE(EVAL("1 - (x - 1)", 5.0, NULL), -3.0);
  ASSERT_CLOSE(EVAL("8 / x / 2", 2.0, NULL), 2.0);
  ASSERT_CLOSE(EVAL("8 / (x / 2)", 2.0, NULL), 8.0);
  ASSERT_CLOSE(EVAL("1 + x * 2", 3.0, NULL), 7.0);      /* precedence */
  ASSERT_CLOSE(EVAL("(1 + x) * 2", 3.0, NULL), 8.0);
  ASSERT_CLOSE(EVAL("-x * -x", 3.0, NULL), 9.0);
  ASSERT_CLOSE(EVAL("x * 1.5e1 + .5 + 2. + 1E-1", 1.0, NULL), 17.6);
}

static void test_functions(void) {
  ASSERT_CLOSE(EVAL("min(x, 2)", 3.0, NULL), 2.0);
  ASSERT_CLOSE(EVAL("min(x, 2)", 1.0, NULL), 1.0);
  ASSERT_CLOSE(EVAL("max(x, 2)", 3.0, NULL), 3.0);
  ASSERT_CLOSE(EVAL("max(x, 2)", 1.0, NULL), 2.0);
  ASSERT_CLOSE(EVAL("relu(x)", -1.0, NULL), 0.0);
  ASSERT_CLOSE(EVAL("relu(x)", 1.25, NULL), 1.25);
  ASSERT_CLOSE(EVAL("leaky_relu(x, 0.1)", -2.0, NULL), -0.2);
  ASSERT_CLOSE(EVAL("leaky_relu(x, 0.1)", 2.0, NULL), 2.0);
  ASSERT_CLOSE(EVAL("gelu(x)", 1.0, NULL), 0.8413447460685429);
  ASSERT_CLOSE(EVAL("gelu(x)", -1.0, NULL), -0.15865525393145707);
  ASSERT_CLOSE(EVAL("gelu(x)", 0.0, NULL), 0.0);
  ASSERT_CLOSE(EVAL("gelu_tanh(x)", 1.0, NULL), 0.8411919906082768);
  ASSERT_CLOSE(EVAL("gelu_tanh(x)", -2.0, NULL), -0.04540230591222494);
  ASSERT_CLOSE(EVAL("sigmoid(x)", 0.0, NULL), 0.5);
  ASSERT_CLOSE(EVAL("sigmoid(x)", 1.0, NULL), 0.7310585786300049);
  ASSERT_CLOSE(EVAL("silu(x)", 2.0, NULL), 1.7615941559557646);
  ASSERT_CLOSE(EVAL("swish(x)", 2.0, NULL), 1.7615941559557646);
  ASSERT_CLOSE(EVAL("tanh(x)", 0.5, NULL), 0.46211715726000974);
  ASSERT_CLOSE(EVAL("mish(x)", 1.0, NULL), 0.8650983882673103);
  ASSERT_CLOSE(EVAL("mish(x)", -2.0, NULL), -0.2525014826957089);
  ASSERT_CLOSE(EVAL("softplus(x)", 1.0, NULL), 1.3132616875182228);
  ASSERT_CLOSE(EVAL("softplus(x)", -3.0, NULL), 0.04858735157374206);
  ASSERT_CLOSE(EVAL("softplus(x)", 25.0, NULL), 25.0); /* threshold 20: identity above */
  ASSERT_CLOSE(EVAL("elu(x)", -1.0, NULL), -0.6321205588285577);
  ASSERT_CLOSE(EVAL("elu(x)", 2.0, NULL), 2.0);
  ASSERT_CLOSE(EVAL("hardtanh(x, -1, 1)", -3.0, NULL), -1.0);
  ASSERT_CLOSE(EVAL("hardtanh(x, -1, 1)", 0.5, NULL), 0.5);
  ASSERT_CLOSE(EVAL("clamp(x, -1, 2)", 5.0, NULL), 2.0);
  ASSERT_CLOSE(EVAL("abs(x)", -3.0, NULL), 3.0);
  ASSERT_CLOSE(EVAL("exp(x)", 1.0, NULL), 2.718281828459045);
  ASSERT_CLOSE(EVAL("log(x)", 2.718281828459045, NULL), 1.0);
  ASSERT_CLOSE(EVAL("sqrt(x)", 6.25, NULL), 2.5);
  /* NaN propagates through min, max, relu and clamp, as in torch. */
  ASSERT_TRUE(isnan(EVAL("min(x, 1)", NAN, NULL)));
  ASSERT_TRUE(isnan(EVAL("min(1, x)", NAN, NULL)));
  ASSERT_TRUE(isnan(EVAL("max(1, x)", NAN, NULL)));
  ASSERT_TRUE(isnan(EVAL("relu(x)", NAN, NULL)));
  ASSERT_TRUE(isnan(EVAL("clamp(x, 0, 1)", NAN, NULL)));
}

static void test_params(void) {
  double v[FT_EP_MAX_PARAMS] = {0.5, 2.0};
  ft_epilogue *ep = parse_ok("minsub");
  if (!ep) return;
  ASSERT_EQ_INT(ft_ep_param_count(ep), 2);
  ASSERT_EQ_STR(ft_ep_param_at(ep, 0)->name, "bias");
  ASSERT_EQ_INT(ft_ep_param_at(ep, 0)->kind, FT_PARAM_COLVEC);
  ASSERT_EQ_STR(ft_ep_param_at(ep, 1)->name, "c");
  ASSERT_EQ_INT(ft_ep_param_at(ep, 1)->kind, FT_PARAM_SCALAR);
  ASSERT_EQ_INT(ft_ep_param_at(ep, 1)->has_default, 1);
  ASSERT_CLOSE(ft_ep_param_at(ep, 1)->def, 2.0);
  ASSERT_TRUE(ft_ep_param_at(ep, 2) == NULL);
  ASSERT_TRUE(ft_ep_param_at(ep, -1) == NULL);
  ASSERT_CLOSE(ft_ep_eval(ep, 1.0, v), -0.5); /* min(1.5, 2) - 2 */
  ASSERT_CLOSE(ft_ep_eval(ep, 3.0, v), 0.0);
  ASSERT_EQ_STR(ft_ep_cuda(ep), "(ft_min(x + ep.v[0][col], ep.s[1]) - ep.s[1])");
  ft_ep_free(ep);

  /* Slots follow names sorted bytewise, whatever the declaration order. */
  ep = parse_ok("x * s + r + bias + a where scalar s, row r, col a");
  if (!ep) return;
  ASSERT_EQ_INT(ft_ep_param_count(ep), 4);
  ASSERT_EQ_STR(ft_ep_param_at(ep, 0)->name, "a");
  ASSERT_EQ_STR(ft_ep_param_at(ep, 1)->name, "bias");
  ASSERT_EQ_STR(ft_ep_param_at(ep, 2)->name, "r");
  ASSERT_EQ_INT(ft_ep_param_at(ep, 2)->kind, FT_PARAM_ROWVEC);
  ASSERT_EQ_STR(ft_ep_param_at(ep, 3)->name, "s");
  ASSERT_EQ_INT(ft_ep_param_at(ep, 3)->has_default, 0);
  ASSERT_EQ_STR(ft_ep_canonical(ep), "x * s + r + bias + a where col a, row r, scalar s");
  ASSERT_EQ_STR(ft_ep_cuda(ep), "(x * ep.s[3] + ep.v[2][row] + ep.v[1][col] + ep.v[0][col])");
  ft_ep_free(ep);

  /* tanh(softplus(e)) becomes one device function in CUDA; the canonical text keeps both. */
  ep = parse_ok("tanh(softplus(x + bias)) * sigmoid(x + bias)");
  if (!ep) return;
  ASSERT_EQ_STR(ft_ep_canonical(ep), "tanh(softplus(x + bias)) * sigmoid(x + bias)");
  ASSERT_EQ_STR(ft_ep_cuda(ep), "(ft_tanh_softplus(x + ep.v[0][col]) * ft_sigmoid(x + ep.v[0][col]))");
  ft_ep_free(ep);
  ep = parse_ok("tanh(x * softplus(x))");
  if (!ep) return;
  ASSERT_EQ_STR(ft_ep_cuda(ep), "ft_tanh(x * ft_softplus(x))");
  ft_ep_free(ep);
  ep = parse_ok("x * s + r + bias + a where scalar s, row r, col a");
  if (!ep) return;
  double w[4] = {1.0, 10.0, 100.0, 2.0};
  ASSERT_CLOSE(ft_ep_eval(ep, 3.0, w), 117.0);
  ft_ep_free(ep);

  /* A variable may appear several times; eight parameters is the limit. */
  ep = parse_ok("x*a + a*b + b*c + c*d + d*e + e*f + f*g + g*bias where a=1,b=2,c=3,d=4,e=5,f=6,g=7");
  if (ep) ASSERT_EQ_INT(ft_ep_param_count(ep), 8);
  ft_ep_free(ep);
}

/* canon(canon(e)) == canon(e), and the hash is of the canonical text. */
static void check_idempotent(const char *text, int line) {
  ft_epilogue *a = parse_ok_at(text, line);
  if (!a) return;
  ft_epilogue *b = parse_ok_at(ft_ep_canonical(a), line);
  if (b) {
    if (strcmp(ft_ep_canonical(a), ft_ep_canonical(b)) != 0 || strcmp(ft_ep_hash(a), ft_ep_hash(b)) != 0) {
      fprintf(stderr, "%s:%d: canon not idempotent: \"%s\" -> \"%s\"\n", __FILE__, line, ft_ep_canonical(a),
              ft_ep_canonical(b));
      ft_test_failures++;
    }
    char h[17];
    ft__hash_hex(ft_ep_canonical(a), strlen(ft_ep_canonical(a)), h);
    ASSERT_EQ_STR(ft_ep_hash(a), h);
    ASSERT_EQ_STR(ft_ep_cuda(a), ft_ep_cuda(b));
  }
  ft_ep_free(a);
  ft_ep_free(b);
}

static void test_idempotent(void) {
  static const char *const texts[] = {
      "none", "bias", "relu", "biasrelu", "biasgelu", "biassilu", "minsub", "x", "-x", "- - x",
      "-(-(-x))", "x - (x - x)", "(x - x) - x", "x / (x / x)", "x * (x * x)", "x + (x + x)",
      "x * (x + 1)", "(x + 1) * x", "-(x * 2)", "-x * 2", "x * -2", "x - -2", "x / -(x + 1)",
      "0.1 + x", "x * 1e-7", "x * 1e20", "x + 123456789012345678", "x * 0.30000000000000004",
      "x * 3.4028234663852886e38", "x + 1e-30", "x * 100", "x * 1e15 + 1e16",
      "min(x + bias, c) - c where c = -0", "x * c where c = -2.5e-9", "x * c where scalar c = 7",
      "leaky_relu(x, s) where s = 0.01", "hardtanh(x, lo, hi) where lo = -1, hi = 1",
      "clamp(x * r, -1, 1) + v where row r, col v", "gelu_tanh(x) / sqrt(abs(x) + 1)",
      "exp(log(sqrt(abs(x) + 1))) * tanh(mish(softplus(elu(x))))", "swish(x) * sigmoid(-x)",
      "max(min(x, 1), -1)", "x + bias where col bias", "(((x)))", "x+x*x-x/x",
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) check_idempotent(texts[i], __LINE__);
}

static void same_canon_at(const char *a, const char *b, int line) {
  ft_epilogue *ea = parse_ok_at(a, line), *eb = parse_ok_at(b, line);
  if (ea && eb && strcmp(ft_ep_canonical(ea), ft_ep_canonical(eb)) != 0) {
    fprintf(stderr, "%s:%d: \"%s\" -> \"%s\" but \"%s\" -> \"%s\"\n", __FILE__, line, a, ft_ep_canonical(ea), b,
            ft_ep_canonical(eb));
    ft_test_failures++;
  }
  if (ea && eb) ASSERT_EQ_STR(ft_ep_hash(ea), ft_ep_hash(eb));
  ft_ep_free(ea);
  ft_ep_free(eb);
}
#define SAME(a, b) same_canon_at((a), (b), __LINE__)

static void canon_is_at(const char *text, const char *want, int line) {
  ft_epilogue *ep = parse_ok_at(text, line);
  if (ep && strcmp(ft_ep_canonical(ep), want) != 0) {
    fprintf(stderr, "%s:%d: canon(\"%s\") = \"%s\", want \"%s\"\n", __FILE__, line, text, ft_ep_canonical(ep), want);
    ft_test_failures++;
  }
  ft_ep_free(ep);
}
#define CANON_IS(text, want) canon_is_at((text), (want), __LINE__)

static void test_spellings(void) {
  SAME("relu(x+bias)", "  relu ( ( x ) +\tbias )\n");
  SAME("biasrelu", "relu(x + bias)");
  SAME(" biasrelu ", "((relu((x + bias))))");
  SAME("minsub", "min(x + bias, c) - c where c = 2.0");
  SAME("minsub", "(min((x+bias),c))-(c) where c=2e0");
  SAME("minsub", "min(x + bias, c) - c where scalar c = 20e-1");
  SAME("minsub", "min(x + bias, c) - c where c = 2, col bias");
  SAME("x * c + v where c = 2, col v", "x*c+v where col v,c=2.000");
  SAME("swish(x)", "silu(x)");
  SAME("hardtanh(x, -1, 1)", "clamp(x, -1, 1)");
  SAME("biassilu", "swish(x + bias)");
  SAME("none", "x");
  SAME("none", "(x)");
  SAME("bias", "x + bias");
  SAME("relu", "relu(x)");
  SAME("x * 0.5", "x * 5e-1");
  SAME("x * 0.5", "x * .50");
  SAME("x + 1000", "x + 1e3");
  SAME("(x * 2) * 3", "x * 2 * 3");
  SAME("(x + 1) + 2", "x + 1 + 2");
}

static void test_canonical_text(void) {
  CANON_IS("none", "x");
  CANON_IS("bias", "x + bias");
  CANON_IS("minsub", "min(x + bias, c) - c where c = 2");
  CANON_IS("biasgelu", "gelu(x + bias)");
  CANON_IS("biassilu", "silu(x + bias)");
  CANON_IS("swish(x)", "silu(x)");
  CANON_IS("x + (x + x)", "x + (x + x)"); /* no float reassociation */
  CANON_IS("(x + x) + x", "x + x + x");
  CANON_IS("x - (x + x)", "x - (x + x)");
  CANON_IS("x * (x / x)", "x * (x / x)");
  CANON_IS("(x * x) / x", "x * x / x");
  CANON_IS("x + (x * x)", "x + x * x");
  CANON_IS("(x + x) * x", "(x + x) * x");
  CANON_IS("--x", "- -x");
  CANON_IS("-(-(-x))", "- - -x");
  CANON_IS("x - -(-x)", "x - - -x");
  CANON_IS("-(x)", "-x");
  CANON_IS("-(x + 1)", "-(x + 1)");
  CANON_IS("(-x) * 2", "-x * 2");
  CANON_IS("x*-2", "x * -2");
  CANON_IS("x * 2.0", "x * 2");
  CANON_IS("x * 0.1", "x * 0.1");
  CANON_IS("x * 1e-5", "x * 1e-5");
  CANON_IS("x * 0.0001", "x * 0.0001");
  CANON_IS("x * 1e16", "x * 1e16");
  CANON_IS("x * 1.5e30", "x * 1.5e30");
  REJECT("x * 1e-400", 5, "below float's normal range"); /* rounds to 0: not what was written */
  CANON_IS("x * 123.456", "x * 123.456");
  CANON_IS("x + c where c = -0.0", "x + c where c = -0");
  CANON_IS("x * s + r where row r, scalar s", "x * s + r where row r, scalar s");
  CANON_IS("x + bias where col bias", "x + bias");
}

static void test_rejections(void) {
  REJECT("", 1, "empty expression");
  REJECT("   \t", 5, "empty expression");
  REJECT("x + sigmod(x)", 5, "unknown function 'sigmod' (did you mean 'sigmoid'?)");
  REJECT("Relu(x)", 1, "(did you mean 'relu'?)");
  REJECT("foo(x)", 1, "unknown function 'foo'");
  REJECT("x + y", 5, "unknown name 'y'");
  REJECT("x * cc where c = 2", 5, "unknown name 'cc' (did you mean 'c'?)");
  REJECT("x + bais", 5, "(did you mean 'bias'?)");
  REJECT("x + relu", 5, "'relu' is a function");
  REJECT("x; y", 2, "unexpected character ';'");
  REJECT("x + {1}", 5, "unexpected character '{'");
  REJECT("x + \"1\"", 5, "unexpected character '\"'");
  REJECT("x #", 3, "unexpected character '#'");
  REJECT("x \\ 2", 3, "unexpected character '\\'");
  REJECT("x + \xc3\xa9", 5, "non-ASCII byte 0xc3");
  REJECT("x\x01", 2, "control character");
  REJECT("x + inf", 5, "numbers must be finite");
  REJECT("x * NaN", 5, "numbers must be finite");
  REJECT("x * 1e39", 5, "number out of float range");
  /* Below float's normal range: 0 (or a subnormal) in CUDA, itself in the float64 reference. */
  REJECT("x / 1e-46", 5, "number 1e-46 below float's normal range");
  REJECT("x * 1e-46", 5, "below float's normal range");
  REJECT("x * 1e-39", 5, "below float's normal range");
  REJECT("x * c where c = 1e-40", 17, "below float's normal range");
  REJECT("x * 1.1754942e-38", 5, "(smallest 1.17549435e-38)");
  /* The limits as the messages print them are accepted (issue 58 item 11: d57500e refused
   * 1.17549435e-38 as below "(smallest 1.17549435e-38)"): they round to FLT_MIN and FLT_MAX. */
  const char *limits[] = {"x * 1.17549435e-38", "x * c where c = -1.17549435e-38", "x * 3.40282347e+38",
                          "x / 1.1754943508222875e-38"};
  for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
    ft_epilogue *lim = NULL;
    ft_err lerr;
    if (ft_ep_parse(limits[i], &lim, &lerr) != FT_OK) FT_FAIL_AT_("'%s' refused: %s", limits[i], lerr.msg);
    ft_ep_free(lim);
  }
  REJECT("x * 1e999", 5, "number out of float range");
  REJECT("x * c where c = inf", 17, "numbers must be finite");
  REJECT("x * c where c = -1e40", 18, "number out of float range");
  REJECT("x * 1e", 5, "malformed number");
  REJECT("x * 2x", 5, "malformed number");
  REJECT("x * 0x10", 5, "malformed number");
  REJECT("x * 1.2.3", 5, "malformed number");
  REJECT("x +", 4, "expected an operand, found end of input");
  REJECT("x + * 2", 5, "expected an operand, found '*'");
  REJECT("+x", 1, "expected an operand");
  REJECT("(x + 1", 7, "expected ')'");
  REJECT("x + 1)", 6, "found ')'");
  REJECT("x x", 3, "found 'x'");
  REJECT("min(x)", 1, "'min' takes 2 arguments, got 1");
  REJECT("relu(x, 1)", 9, "'relu' takes 1 argument");
  REJECT("relu()", 1, "'relu' takes 1 argument, got 0");
  REJECT("clamp(x, 1, 2, 3)", 16, "'clamp' takes 3 arguments");
  REJECT("min(x,)", 7, "expected an operand");
  REJECT("2 * 3", 1, "does not use x");
  REJECT("c where c = 1", 1, "does not use x");
  REJECT("x where", 8, "expected a declaration");
  REJECT("x where c", 10, "expected '='");
  REJECT("x where col bias", 13, "'bias' is declared but not used");
  REJECT("x where c = ", 13, "expected a number");
  REJECT("x * c where c = 1, c = 2", 20, "'c' is declared twice");
  REJECT("x where c = 1", 9, "'c' is declared but not used");
  REJECT("x * x where x = 1", 13, "'x' is reserved");
  REJECT("x * relu where relu = 1", 5, "'relu' is a function"); /* use is checked first */
  REJECT("x where relu = 1", 9, "'relu' is a function and cannot name");
  REJECT("x where col where", 13, "'where' is reserved");
  REJECT("x + bias where bias = 1", 16, "'bias' is the built-in per-column vector");
  REJECT("x + bias where row bias", 20, "'bias' is the built-in per-column vector");
  REJECT("x + v where col v = 1", 19, "only scalars take a default");
  REJECT("x + v where col", 16, "expected a parameter name");
  REJECT("x + v where col v w", 19, "found 'w'");
  REJECT("x where c = 2 + 1", 15, "found '+'");
  REJECT("(x where c = 1)", 4, "expected ')'");
  REJECT("x * abcdefghijabcdefghijabcdefghijab", 5, "name longer than 31");
  REJECT("x*a+b+c+d+e+f+g+h+i where a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1", 59, "more than 8 parameters");
  REJECT("x*a+b+c+d+e+f+g+h+bias where a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1", 19, "more than 8 parameters");
}

/* Nesting at the limit parses; one more level is rejected where it starts, without recursing
 * further; long inputs are rejected before parsing. */
static void test_limits(void) {
  static char buf[FT_EP_MAX_TEXT * 4];
  for (int depth = FT_EP_MAX_DEPTH; depth <= FT_EP_MAX_DEPTH + 1; depth++) {
    buf[0] = '\0';
    for (int i = 0; i < depth; i++) strcat(buf, "(");
    strcat(buf, "x");
    for (int i = 0; i < depth; i++) strcat(buf, ")");
    if (depth == FT_EP_MAX_DEPTH) check_idempotent(buf, __LINE__);
    else REJECT(buf, depth, "nesting deeper than 64 levels");
    buf[0] = '\0';
    for (int i = 0; i < depth; i++) strcat(buf, "relu(");
    strcat(buf, "x");
    for (int i = 0; i < depth; i++) strcat(buf, ")");
    if (depth == FT_EP_MAX_DEPTH) check_idempotent(buf, __LINE__);
    else REJECT(buf, 5 * depth - 4, "nesting deeper");
    buf[0] = '\0';
    for (int i = 0; i < depth; i++) strcat(buf, "-");
    strcat(buf, "x");
    if (depth == FT_EP_MAX_DEPTH) check_idempotent(buf, __LINE__);
    else REJECT(buf, depth, "nesting deeper");
    /* A flat chain also nests: x+x+...+x is a left-deep tree. */
    strcpy(buf, "x");
    for (int i = 0; i < depth; i++) strcat(buf, "+x");
    if (depth == FT_EP_MAX_DEPTH) check_idempotent(buf, __LINE__);
    else REJECT(buf, 2 * depth, "nesting deeper");
  }
  /* Text at the nesting limit whose tree is shallower: its canonical text must parse too
   * (found by fuzzing when -(-x) was printed with parentheses). */
  buf[0] = '\0';
  for (int i = 0; i < FT_EP_MAX_DEPTH / 2; i++) strcat(buf, "-(");
  strcat(buf, "x");
  for (int i = 0; i < FT_EP_MAX_DEPTH / 2; i++) strcat(buf, ")");
  check_idempotent(buf, __LINE__);
  buf[0] = '\0';
  for (int i = 0; i < FT_EP_MAX_DEPTH / 2; i++) strcat(buf, "x * (");
  strcat(buf, "x");
  for (int i = 0; i < FT_EP_MAX_DEPTH / 2; i++) strcat(buf, ")");
  check_idempotent(buf, __LINE__);
  /* 100000 parentheses: rejected at the 65th, no stack overflow. */
  char *deep = malloc(100001);
  if (deep) {
    memset(deep, '(', 100000);
    deep[100000] = '\0';
    REJECT(deep, FT_EP_MAX_TEXT + 1, "longer than 4096 bytes");
    deep[FT_EP_MAX_TEXT] = '\0';
    REJECT(deep, FT_EP_MAX_DEPTH + 1, "nesting deeper");
    free(deep);
  }
  memset(buf, ' ', FT_EP_MAX_TEXT);
  buf[0] = 'x';
  buf[FT_EP_MAX_TEXT] = '\0';
  ft_ep_free(parse_ok(buf));
  buf[FT_EP_MAX_TEXT] = ' ';
  buf[FT_EP_MAX_TEXT + 1] = '\0';
  REJECT(buf, FT_EP_MAX_TEXT + 1, "text longer than 4096 bytes");
  /* Short enough, but its canonical text would not be (spaces around every operator): rejected,
   * since the canonical text is what the database parses again (found by fuzzing). A balanced
   * product of 1024 x's: 4093 bytes as written, 5115 in canonical form, 10 levels deep. */
  strcpy(buf, "x");
  for (int d = 0; d < 10; d++) {
    static char next[FT_EP_MAX_TEXT * 4];
    snprintf(next, sizeof next, "(%s*%s)", buf, buf);
    strcpy(buf, next);
  }
  ASSERT_EQ_INT((int)strlen(buf), 4093);
  REJECT(buf, 1, "canonical form is 5115 bytes, longer than 4096");
}

static void test_bad_args(void) {
  ft_epilogue *ep = (ft_epilogue *)&ep;
  ASSERT_EQ_INT(ft_ep_parse(NULL, &ep, NULL), FT_ERR_INVALID_ARG);
  ASSERT_TRUE(ep == NULL);
  ASSERT_EQ_INT(ft_ep_parse("x", NULL, NULL), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_ep_parse("x +", &ep, NULL), FT_ERR_PARSE); /* err may be NULL */
  ft_ep_free(NULL);
}

static void step_is_at(const ft_ep_step *s, const char *expr, int nin, int in0, int in1, int line) {
  if (strcmp(s->expr, expr) != 0 || s->nin != nin || (nin > 0 && s->in[0] != in0) || (nin > 1 && s->in[1] != in1)) {
    fprintf(stderr, "%s:%d: step \"%s\" nin %d in {%d,%d}; want \"%s\" nin %d in {%d,%d}\n", __FILE__, line, s->expr,
            s->nin, s->in[0], s->in[1], expr, nin, in0, in1);
    ft_test_failures++;
  }
}
#define STEP_IS(s, expr, nin, in0, in1) step_is_at((s), (expr), (nin), (in0), (in1), __LINE__)

static ft_ep_eager *plan_of(const char *text, ft_ep_eager *pl) {
  ft_epilogue *ep = parse_ok(text);
  if (!ep) return NULL;
  ft_err err;
  ft_status s = ft_ep_eager_plan(ep, pl, &err);
  ft_ep_free(ep);
  ASSERT_OK(s);
  return s == FT_OK ? pl : NULL;
}

static void test_eager(void) {
  static ft_ep_eager pl;
  if (plan_of("minsub", &pl)) { /* addmm, then min, then sub */
    ASSERT_EQ_INT(pl.gemm_bias_slot, 0);
    ASSERT_EQ_INT(pl.nsteps, 2);
    STEP_IS(&pl.steps[0], "ft_min(IN0, ep.s[1])", 1, 0, 0);
    STEP_IS(&pl.steps[1], "(IN0 - ep.s[1])", 1, 1, 0);
  }
  if (plan_of("biasrelu", &pl)) {
    ASSERT_EQ_INT(pl.gemm_bias_slot, 0);
    ASSERT_EQ_INT(pl.nsteps, 1);
    STEP_IS(&pl.steps[0], "ft_relu(IN0)", 1, 0, 0);
  }
  if (plan_of("relu(bias + x)", &pl)) { /* either operand order folds */
    ASSERT_EQ_INT(pl.gemm_bias_slot, 0);
    ASSERT_EQ_INT(pl.nsteps, 1);
  }
  if (plan_of("x + 2*sigmoid(x)", &pl)) { /* x twice: nothing folds */
    ASSERT_EQ_INT(pl.gemm_bias_slot, -1);
    ASSERT_EQ_INT(pl.nsteps, 3);
    STEP_IS(&pl.steps[0], "ft_sigmoid(IN0)", 1, 0, 0);
    STEP_IS(&pl.steps[1], "(2.0f * IN0)", 1, 1, 0);
    STEP_IS(&pl.steps[2], "(IN0 + IN1)", 2, 0, 2);
  }
  if (plan_of("none", &pl)) {
    ASSERT_EQ_INT(pl.gemm_bias_slot, -1);
    ASSERT_EQ_INT(pl.nsteps, 0);
  }
  if (plan_of("bias", &pl)) {
    ASSERT_EQ_INT(pl.gemm_bias_slot, 0);
    ASSERT_EQ_INT(pl.nsteps, 0);
  }
  if (plan_of("x * x", &pl)) { /* one buffer read twice */
    ASSERT_EQ_INT(pl.nsteps, 1);
    STEP_IS(&pl.steps[0], "(IN0 * IN0)", 1, 0, 0);
  }
  if (plan_of("relu(x + r) where row r", &pl)) { /* only a column vector is addmm's bias */
    ASSERT_EQ_INT(pl.gemm_bias_slot, -1);
    ASSERT_EQ_INT(pl.nsteps, 2);
    STEP_IS(&pl.steps[0], "(IN0 + ep.v[0][row])", 1, 0, 0);
  }
  if (plan_of("clamp(x * (c * 2 + 1), -c, c) where c = 3", &pl)) { /* scalar work is inlined */
    ASSERT_EQ_INT(pl.nsteps, 2);
    STEP_IS(&pl.steps[0], "(IN0 * (ep.s[0] * 2.0f + 1.0f))", 1, 0, 0);
    STEP_IS(&pl.steps[1], "ft_clamp(IN0, -ep.s[0], ep.s[0])", 1, 1, 0);
  }
  /* More passes than FT_EP_MAX_STEPS: unsupported, not truncated. */
  char text[FT_EP_MAX_TEXT];
  strcpy(text, "relu(x)");
  for (int i = 0; i < 40; i++) strcat(text, " + relu(x)");
  ft_epilogue *ep = parse_ok(text);
  if (ep) {
    ft_err err;
    ASSERT_EQ_INT(ft_ep_eager_plan(ep, &pl, &err), FT_ERR_UNSUPPORTED);
    ft_ep_free(ep);
  }
}

/* Only characters of rebuilt CUDA text: identifiers, numbers, operators, brackets. */
static int cuda_chars_ok(const char *s) {
  for (; *s; s++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-*/(), []", *s)) return 0;
  return 1;
}

static void test_cuda_text(void) {
  static const char *const nasty[] = {
      "x; asm(\"trap;\")", "x /* */", "x // c", "x + __device__", "x }", "x #define", "x\\\n+1",
      "x + 1; } __global__ void evil() {", "x + printf", "x + \"s\"", "x + 'c'", "x ? 1 : 2",
      "x[0]", "x.y", "x & 1", "x ^ 2", "x ** 2", "x < 1", "x = 1",
  };
  for (size_t i = 0; i < sizeof nasty / sizeof nasty[0]; i++) {
    ft_epilogue *ep = NULL;
    ft_err err;
    ASSERT_EQ_INT(ft_ep_parse(nasty[i], &ep, &err), FT_ERR_PARSE);
    ASSERT_TRUE(ep == NULL);
  }
  /* Accepted names never reach the CUDA text: parameters become slots. */
  ft_epilogue *ep = parse_ok("x * __global__ + asm where __global__ = 2, col asm");
  if (ep) {
    ASSERT_EQ_STR(ft_ep_cuda(ep), "(x * ep.s[0] + ep.v[1][col])");
    ASSERT_EQ_STR(ft_ep_canonical(ep), "x * __global__ + asm where __global__ = 2, col asm");
  }
  ft_ep_free(ep);
  ep = parse_ok("gelu(x) * -(-x) - leaky_relu(x, 0.01) / mish(x) + 1e-30 + 3e38 + 16777217");
  if (ep) {
    ASSERT_TRUE(cuda_chars_ok(ft_ep_cuda(ep)));
    ASSERT_TRUE(strstr(ft_ep_cuda(ep), "--") == NULL);
    ASSERT_CONTAINS(ft_ep_cuda(ep), "0.00999999978f");
    ASSERT_CONTAINS(ft_ep_cuda(ep), "* - -x");
    ASSERT_CONTAINS(ft_ep_cuda(ep), "16777216.0f");
  }
  ft_ep_free(ep);
  ep = parse_ok("x");
  if (ep) ASSERT_EQ_STR(ft_ep_cuda(ep), "x");
  ft_ep_free(ep);
  /* Division goes through ft_div (branch-free, within 1 ulp: ft_math.cuh), a call in the text. */
  ep = parse_ok("-(8 / (x / 2)) * 3 / (x + 1)");
  if (ep) ASSERT_EQ_STR(ft_ep_cuda(ep), "ft_div(-ft_div(8.0f, ft_div(x, 2.0f)) * 3.0f, x + 1.0f)");
  ft_ep_free(ep);
}

static void test_presets(void) {
  const char *const *names, *const *texts;
  int n = ft_ep_presets(&names, &texts);
  ASSERT_EQ_INT(n, 7);
  ASSERT_EQ_INT(ft_ep_presets(NULL, NULL), n);
  for (int i = 0; i < n; i++) {
    SAME(names[i], texts[i]);
    check_idempotent(texts[i], __LINE__);
  }
  ASSERT_EQ_STR(names[6], "minsub");
}

/* The cost of E per element counted from its tree (src/epilogue/epilogue_cost.c): nothing for x, one FP32
 * instruction per operator, each function's forms, repeated subexpressions once, and
 * tanh(softplus(e)) as the one function the CUDA text makes of it. */
static void test_cost(void) {
  static const struct {
    const char *text;
    int fast;
    double fp32, mufu;
  } cases[] = {
      {"x", 1, 0, 0},
      {"x + bias", 1, 1, 0},
      {"relu(x + bias)", 1, 2, 0},
      {"mish(mish(x + bias))", 1, 21, 4},
      {"mish(mish(x + bias))", 0, 99, 8},
      {"tanh(softplus(x + bias)) * sigmoid(x + bias)", 1, 17, 4},
      {"x / 3", 1, 14, 1},
      {"exp(x) + exp(x)", 1, 2, 1},
      {"tanh(softplus(x)) + softplus(x)", 1, 26, 4}, /* the softplus alone is evaluated too */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ft_epilogue *ep = parse_ok(cases[i].text);
    if (!ep) continue;
    const ft_ep_cost c = ft_ep_cost_of(ep, cases[i].fast);
    ASSERT_CLOSE(c.fp32, cases[i].fp32);
    ASSERT_CLOSE(c.mufu, cases[i].mufu);
    ft_ep_free(ep);
  }
  const ft_ep_cost z = ft_ep_cost_of(NULL, 1);
  ASSERT_CLOSE(z.fp32 + z.mufu, 0.0);
}

/* E after a GEMM that added the bias (ft_ep_cuda_folded): the one x added to a column vector read
 * as x; nothing when there is no such term. */
static void test_folded(void) {
  static const struct {
    const char *text, *folded;
    int slot;
  } cases[] = {
      {"x + bias", "x", 0},
      {"bias + x", "x", 0},
      {"relu(x + bias)", "ft_relu(x)", 0},
      {"min(x + bias, c) - c where c = 2", "(ft_min(x, ep.s[1]) - ep.s[1])", 0},
      {"tanh(softplus(x + bias)) * sigmoid(x + bias)", NULL, -1}, /* two x */
      {"x * 2 + bias", NULL, -1},
      {"x + s where scalar s", NULL, -1},
      {"relu(x)", NULL, -1},
      {"x + a + b where col a, col b", "(x + ep.v[1][col])", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ft_epilogue *ep = parse_ok(cases[i].text);
    if (!ep) continue;
    int slot = 7;
    const char *f = ft_ep_cuda_folded(ep, &slot);
    if (cases[i].folded) ASSERT_EQ_STR(f, cases[i].folded);
    else ASSERT_TRUE(f == NULL);
    ASSERT_EQ_INT(slot, cases[i].slot);
    ft_ep_free(ep);
  }
}

/* E after cuBLASLt's relu / gelu_tanh epilogue (ft_ep_cuda_lt_act): that activation of x or of the
 * folded x + bias read as x; nothing for any other prefix or when x occurs twice. */
static void test_lt_act(void) {
  static const struct {
    const char *text, *rest;
    int slot, act;
  } cases[] = {
      {"relu(x + bias)", "x", 0, FT_EP_LT_RELU},
      {"relu(x)", "x", -1, FT_EP_LT_RELU},
      {"gelu_tanh(bias + x) * 1.5", "(x * 1.5f)", 0, FT_EP_LT_GELU_TANH},
      {"sigmoid(gelu_tanh(x)) * b where b = 3", "(ft_sigmoid(x) * ep.s[0])", -1, FT_EP_LT_GELU_TANH},
      {"gelu(x + bias)", NULL, -1, FT_EP_LT_NONE},   /* erf GELU: cuBLASLt's is the tanh form */
      {"relu(2 * x + bias)", NULL, -1, FT_EP_LT_NONE},
      {"relu(x) + x", NULL, -1, FT_EP_LT_NONE},      /* two x */
      {"x + bias", NULL, -1, FT_EP_LT_NONE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ft_epilogue *ep = parse_ok(cases[i].text);
    if (!ep) continue;
    int slot = 7;
    ft_ep_lt_act act = (ft_ep_lt_act)9;
    const char *f = ft_ep_cuda_lt_act(ep, &slot, &act);
    if (cases[i].rest) ASSERT_EQ_STR(f, cases[i].rest);
    else ASSERT_TRUE(f == NULL);
    ASSERT_EQ_INT(slot, cases[i].slot);
    ASSERT_EQ_INT((int)act, cases[i].act);
    ft_ep_free(ep);
  }
}

int main(void) {
  test_folded();
  test_lt_act();
  test_cost();
  test_operators();
  test_functions();
  test_params();
  test_idempotent();
  test_spellings();
  test_canonical_text();
  test_rejections();
  test_limits();
  test_bad_args();
  test_eager();
  test_cuda_text();
  test_presets();
  return FT_TEST_DONE();
}
