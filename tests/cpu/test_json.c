/* The strict JSON reader and the writer helpers. */
#include <float.h>
#include <locale.h>

#include "ft_test.h"
#include "json.h"

static ft_status parse(const char *text, ft_json_doc **doc, ft_err *err) {
  return ft_json_parse(text, strlen(text), NULL, doc, err);
}

/* Parses text expecting failure; returns the message. */
static const char *reject(const char *text, ft_err *err) {
  ft_json_doc *doc = NULL;
  ft_status s = ft_json_parse(text, strlen(text), NULL, &doc, err);
  if (s != FT_ERR_FORMAT) FT_FAIL_AT_("accepted or wrong status %d: %s", (int)s, text);
  if (doc) FT_FAIL_AT_("doc set on failure");
  ft_json_free(doc);
  return err->msg;
}

static void accept(const char *text) {
  ft_json_doc *doc = NULL;
  ft_err err;
  ft_status s = parse(text, &doc, &err);
  if (s != FT_OK) FT_FAIL_AT_("rejected %s: %s", text, err.msg);
  ft_json_free(doc);
}

/* Everything written to f, as a malloc'd string. */
static char *slurp(FILE *f) {
  long n = ftell(f);
  char *buf = malloc((size_t)n + 1);
  rewind(f);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = '\0';
  return buf;
}

static void test_values(void) {
  ft_json_doc *doc = NULL;
  ft_err err;
  const char *text =
      "{\"a\": [1, -2, 3.5, 1e3, true, false, null], \"s\": \"x\\n\\u00e9\\ud83d\\ude00\\\"\","
      " \"z\": {}, \"big\": 9223372036854775807, \"neg\": -9223372036854775808,"
      " \"over\": 9223372036854775808, \"tiny\": 4.9406564584124654e-324, \"nul\": \"a\\u0000b\"}";
  ASSERT_OK(parse(text, &doc, &err));
  const ft_json *root = ft_json_root(doc);
  ASSERT_EQ_INT(root->type, FT_JSON_OBJECT);
  ASSERT_EQ_INT(root->count, 8);
  const ft_json *a = ft_json_get(root, "a");
  ASSERT_TRUE(a && a->type == FT_JSON_ARRAY && a->count == 7);
  ASSERT_TRUE(a->items[0]->is_integer && a->items[0]->integer == 1);
  ASSERT_TRUE(a->items[1]->is_integer && a->items[1]->integer == -2);
  ASSERT_TRUE(!a->items[2]->is_integer);
  ASSERT_NEAR(a->items[2]->number, 3.5, 0);
  ASSERT_TRUE(!a->items[3]->is_integer); /* 1e3: not written as an integer */
  ASSERT_NEAR(a->items[3]->number, 1000, 0);
  ASSERT_TRUE(a->items[4]->type == FT_JSON_BOOL && a->items[4]->boolean == 1);
  ASSERT_TRUE(a->items[5]->type == FT_JSON_BOOL && a->items[5]->boolean == 0);
  ASSERT_EQ_INT(a->items[6]->type, FT_JSON_NULL);
  const ft_json *s = ft_json_get(root, "s");
  ASSERT_EQ_STR(s->str, "x\n\xc3\xa9\xf0\x9f\x98\x80\"");
  ASSERT_EQ_INT(ft_json_get(root, "z")->count, 0);
  ASSERT_TRUE(ft_json_get(root, "big")->is_integer);
  ASSERT_TRUE(ft_json_get(root, "big")->integer == INT64_MAX);
  ASSERT_TRUE(ft_json_get(root, "neg")->integer == INT64_MIN);
  ASSERT_TRUE(!ft_json_get(root, "over")->is_integer); /* out of int64: a double only */
  ASSERT_TRUE(ft_json_get(root, "tiny")->number > 0);
  const ft_json *nul = ft_json_get(root, "nul");
  ASSERT_EQ_INT(nul->str_len, 3);
  ASSERT_TRUE(ft_json_get(root, "missing") == NULL);
  ASSERT_TRUE(ft_json_get(a, "a") == NULL); /* not an object */
  ft_json_free(doc);

  accept("0");
  accept("-0");
  accept("\"\"");
  accept(" [ ] ");
  accept("1E+2");
  accept("1e-2");
  accept("[[[[[[[[[[1]]]]]]]]]]");
  accept("{\"a\":1,\"b\":{\"a\":2}}"); /* the same key in different objects is fine */
}

static void test_rejects(void) {
  ft_err err;
  static const char *const bad[] = {
      "", " ", "[1,]", "{\"a\":1,}", "[1 2]", "{\"a\" 1}", "{a:1}", "{'a':1}", "// c\n1",
      "01", "1.", ".5", "+1", "-", "1e", "1e+", "NaN", "Infinity", "-Infinity", "tru", "nul",
      "[1] x", "1 2", "\xEF\xBB\xBF{}", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"",
      "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\tb\"", "\"\xC0\x80\"", "\"\xED\xA0\x80\"",
      "\"\xF5\x80\x80\x80\"", "\"\xE2\x82\"", "\"\x80\"", "1e999", "-1e999", "[", "{", "{\"a\":}",
      "\"\\"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) reject(bad[i], &err);
  ASSERT_CONTAINS(reject("{\"k\":1,\"k\":2}", &err), "duplicate key \"k\"");
  ASSERT_CONTAINS(reject("[1,\n 2,\n x]", &err), "line 3, column 2");
  ASSERT_CONTAINS(reject("1e999", &err), "out of range");
  ASSERT_CONTAINS(reject("\"\xFF\"", &err), "invalid UTF-8");

  /* Raw NUL bytes in the text, outside and inside strings. */
  ft_json_doc *doc = NULL;
  ASSERT_EQ_INT(ft_json_parse("[1]\0", 4, NULL, &doc, &err), FT_ERR_FORMAT);
  ASSERT_EQ_INT(ft_json_parse("\"a\0\"", 4, NULL, &doc, &err), FT_ERR_FORMAT);
  /* Text not NUL-terminated: only len bytes are read. */
  ASSERT_OK(ft_json_parse("[12]xyz", 4, NULL, &doc, &err));
  ft_json_free(doc);
}

static void test_limits(void) {
  ft_err err;
  size_t n = 10000;
  char *deep = malloc(2 * n + 1);
  memset(deep, '[', n);
  memset(deep + n, ']', n);
  deep[2 * n] = '\0';
  ASSERT_CONTAINS(reject(deep, &err), "nesting deeper than 64");
  free(deep);

  ft_json_doc *doc = NULL;
  ft_json_limits lim = {8, 2};
  ASSERT_EQ_INT(ft_json_parse("[1,2,3,4,5]", 11, &lim, &doc, &err), FT_ERR_FORMAT);
  ASSERT_CONTAINS(err.msg, "exceeds the limit");
  ASSERT_OK(ft_json_parse("[[1]]", 5, &lim, &doc, &err));
  ft_json_free(doc);
  ASSERT_EQ_INT(ft_json_parse("[[[1]]]", 7, &lim, &doc, &err), FT_ERR_FORMAT);

  /* A large flat array and object: one allocation per container, sorted keys. */
  size_t items = 100000;
  char *big = malloc(items * 16 + 16);
  size_t o = 0;
  big[o++] = '{';
  for (size_t i = 0; i < items; i++) o += (size_t)sprintf(big + o, "%s\"k%zu\":%zu", i ? "," : "", i, i);
  big[o++] = '}';
  ASSERT_OK(ft_json_parse(big, o, NULL, &doc, &err));
  ASSERT_EQ_INT(ft_json_get(ft_json_root(doc), "k77777")->integer, 77777);
  ft_json_free(doc);
  free(big);
  ft_json_free(NULL);
}

static void test_write_string(void) {
  FILE *f = tmpfile();
  ft_json_write_string(f, "a\"b\\c\n\t\x01\x1f/\xc3\xa9");
  putc(' ', f);
  ft_json_write_string(f, NULL);
  putc(' ', f);
  ft_json_write_string(f, "bad\xff\xc3");
  char *out = slurp(f);
  fclose(f);
  ASSERT_EQ_STR(out, "\"a\\\"b\\\\c\\n\\t\\u0001\\u001f/\xc3\xa9\" null \"bad\xEF\xBF\xBD\xEF\xBF\xBD\"");
  free(out);

  /* Every byte value 1..255 in a string: what is written parses back, invalid bytes replaced. */
  char all[256];
  for (int i = 1; i < 256; i++) all[i - 1] = (char)i;
  all[255] = '\0';
  f = tmpfile();
  ft_json_write_string(f, all);
  out = slurp(f);
  fclose(f);
  ft_json_doc *doc = NULL;
  ft_err err;
  ASSERT_OK(parse(out, &doc, &err));
  const ft_json *v = ft_json_root(doc);
  ASSERT_TRUE(v && v->type == FT_JSON_STRING && memcmp(v->str, all, 127) == 0);
  ft_json_free(doc);
  free(out);
}

static void test_doubles(void) {
  char buf[32];
  ft_json_format_double(0.1, buf);
  ASSERT_EQ_STR(buf, "0.1");
  ft_json_format_double(2.0, buf);
  ASSERT_EQ_STR(buf, "2");
  ft_json_format_double(-0.0, buf);
  ASSERT_EQ_STR(buf, "-0");
  ft_json_format_double(1.0 / 0.0, buf);
  ASSERT_EQ_STR(buf, "null");
  ft_json_format_double(NAN, buf);
  ASSERT_EQ_STR(buf, "null");
  ft_json_format_double(1.0 / 3.0, buf);
  ASSERT_EQ_STR(buf, "0.3333333333333333");
  ft_json_format_double(0.1 + 0.2, buf);
  ASSERT_EQ_STR(buf, "0.30000000000000004");
  /* Round trip of awkward values through format and parse. */
  double vals[] = {DBL_MAX, DBL_MIN, 4.9406564584124654e-324, 1e21, 123456789.123456789,
                   1.5187e-3, 2.780, -7.25e-100};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    double back = 0;
    size_t n = ft_json_format_double(vals[i], buf);
    ASSERT_TRUE(ft_json_parse_double(buf, n, &back));
    ASSERT_TRUE(back == vals[i]);
  }
  unsigned long long x = 88172645463325252ULL;
  for (int i = 0; i < 20000; i++) { /* xorshift bit patterns: every finite double */
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    double v;
    memcpy(&v, &x, sizeof v);
    if (!isfinite(v)) continue;
    double back = 0;
    size_t n = ft_json_format_double(v, buf);
    if (!ft_json_parse_double(buf, n, &back) || back != v)
      FT_FAIL_AT_("round trip of %a gave %s", v, buf);
  }
  double d;
  ASSERT_TRUE(!ft_json_parse_double("1e999", 5, &d));
  ASSERT_TRUE(!ft_json_parse_double("0x10", 4, &d));
  ASSERT_TRUE(!ft_json_parse_double(" 1", 2, &d));
  ASSERT_TRUE(!ft_json_parse_double("inf", 3, &d));

  /* A host program with a ',' decimal locale must not change what is read or written. */
  if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
    ft_json_format_double(2.5, buf);
    ASSERT_EQ_STR(buf, "2.5");
    ASSERT_TRUE(ft_json_parse_double("2.5", 3, &d) && d == 2.5);
    setlocale(LC_NUMERIC, "C");
  } else {
    fprintf(stderr, "note: no de_DE/fr_FR locale installed; decimal-comma check not run\n");
  }
}

int main(void) {
  test_values();
  test_rejects();
  test_limits();
  test_write_string();
  test_doubles();
  return FT_TEST_DONE();
}
