/* Problem lists (ft_problem_list_parse / _load) and `tune --problems`'s refusal of a bad file
 * without a GPU: good JSON and CSV, bad lines named by line, duplicates, empty files, unknown
 * fields, too-long epilogues; the database neither created nor changed. */
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "ft_test.h"
#include "fusedtune_tool.h"

static ft_problem_list *parse_ok(const char *text) {
  char msg[1024] = "";
  ft_problem_list *l = NULL;
  ft_status st = ft_problem_list_parse(text, strlen(text), "t", &l, msg, sizeof msg);
  if (st != FT_OK) FT_FAIL_AT_("'%s' refused: %s", text, msg);
  return l;
}

/* The list is refused with FT_ERR_FORMAT and the message holds want. */
static void parse_bad(const char *text, size_t len, const char *want) {
  char msg[1024] = "";
  ft_problem_list *l = NULL;
  ft_status st = ft_problem_list_parse(text, len, "t", &l, msg, sizeof msg);
  if (st != FT_ERR_FORMAT || l) FT_FAIL_AT_("'%.200s' gave %d (%s), expected a format error", text, (int)st, msg);
  ASSERT_CONTAINS(msg, want);
  ASSERT_TRUE(l == NULL);
}

static void test_json(void) {
  ft_problem_list *l = parse_ok("[\n {\"shape\": \"64x256x128\", \"epilogue\": \"relu(x+bias)\", \"math\": \"bf16\"},\n"
                                " {\"shape\": \"128x8x16\"},\n"
                                "\n {\"epilogue\": \"biasrelu\", \"shape\": \"64x256x128\", \"math\": \"bf16\"},\n"
                                " {\"shape\": \"32x32x32\", \"math\": \"auto\"}\n]");
  ASSERT_EQ_INT(l->csv, 0);
  ASSERT_EQ_INT(l->n_entries, 4);
  ASSERT_EQ_INT(l->count, 6); /* auto: three modes */
  ASSERT_EQ_INT(l->n_unique, 5);
  ASSERT_EQ_INT((int)l->items[0].problem.m, 64);
  ASSERT_EQ_INT((int)l->items[0].problem.n, 256);
  ASSERT_EQ_INT((int)l->items[0].problem.k, 128);
  ASSERT_EQ_INT(l->items[0].problem.math, FT_MATH_BF16);
  ASSERT_EQ_STR(l->items[0].problem.epilogue, "relu(x + bias)"); /* canonical */
  ASSERT_EQ_INT(l->items[0].line, 2);
  ASSERT_EQ_INT(l->items[1].line, 3);
  ASSERT_EQ_STR(l->items[1].problem.epilogue, "x"); /* the default: none */
  ASSERT_EQ_INT(l->items[1].problem.math, FT_MATH_FP32);
  /* the preset spelled otherwise is the same key */
  ASSERT_EQ_INT(l->items[2].line, 5);
  ASSERT_EQ_INT(l->items[2].duplicate_of, 0);
  ASSERT_EQ_INT(l->items[0].duplicate_of, -1);
  ASSERT_EQ_INT(l->items[3].problem.math, FT_MATH_FP32);
  ASSERT_EQ_INT(l->items[4].problem.math, FT_MATH_3XTF32);
  ASSERT_EQ_INT(l->items[5].problem.math, FT_MATH_TF32);
  ASSERT_EQ_INT(l->items[5].entry, 3);
  ft_problem_list_free(l);
  ft_problem_list_free(NULL);
}

static void test_csv(void) {
  ft_problem_list *l = parse_ok("shape,epilogue,math\r\n64x256x128,biasrelu,bf16\r\n\r\n"
                                " 128x8x16 , \"max(x, 0)\" ,\n"
                                "32x32x32,\"min(x, 1)\",fp32\n");
  ASSERT_TRUE(l != NULL);
  if (!l) return;
  ASSERT_EQ_INT(l->csv, 1);
  ASSERT_EQ_INT(l->count, 3);
  ASSERT_EQ_INT(l->items[1].line, 4);
  ASSERT_EQ_STR(l->items[1].problem.epilogue, "max(x, 0)");
  ASSERT_EQ_INT(l->items[2].line, 5);
  ft_problem_list_free(l);
}

static void test_csv_values(void) {
  ft_problem_list *l = parse_ok("math,shape,epilogue\nfp16,64x256x128,biasrelu\n,128x8x16,\"max(x, 0)\"\n"
                                "auto,128x8x16,\"max(x,0)\"\n");
  ASSERT_EQ_INT(l->count, 5);
  ASSERT_EQ_INT(l->items[0].problem.math, FT_MATH_FP16);
  ASSERT_EQ_INT(l->items[1].problem.math, FT_MATH_FP32);
  ASSERT_EQ_INT(l->items[1].line, 3);
  ASSERT_EQ_INT(l->items[1].entry, 1);
  ASSERT_EQ_INT(l->items[2].duplicate_of, 1); /* auto's fp32 repeats line 3 */
  ASSERT_EQ_INT(l->items[2].line, 4);
  ASSERT_EQ_INT(l->n_unique, 4);
  ft_problem_list_free(l);
  /* a column left out takes its default; a byte-order mark is skipped */
  l = parse_ok("\xEF\xBB\xBFshape\n8x8x8\n");
  ASSERT_EQ_INT(l->count, 1);
  ASSERT_EQ_STR(l->items[0].problem.epilogue, "x");
  ft_problem_list_free(l);
}

static void test_bad(void) {
  const char *j;
  j = "[{\"shape\": \"64x256x128\"},\n {\"shape\": \"0x8x8\"}]";
  parse_bad(j, strlen(j), "t: entry 1 (line 2): shape 0x8x8: m, n and k must be positive");
  j = "[{\"shape\": \"64x256x128\"},\n\n {\"shape\": \"8x8x8\", \"epilog\": \"x\"}]";
  parse_bad(j, strlen(j), "entry 1 (line 3): unknown field \"epilog\"");
  j = "[{\"shape\": [8, 8, 8]}]";
  parse_bad(j, strlen(j), "\"shape\" must be a string, not an array");
  j = "[{\"epilogue\": \"x\"}]";
  parse_bad(j, strlen(j), "no shape");
  j = "[{\"shape\": \"8x8x8\", \"math\": \"fp64\"}]";
  parse_bad(j, strlen(j), "unknown math 'fp64'");
  j = "[{\"shape\": \"8x8x8\", \"epilogue\": \"sigmod(x)\"}]";
  parse_bad(j, strlen(j), "did you mean 'sigmoid'");
  j = "[{\"shape\": \"8x8x8\"},\n {\"shape\": \"8x8\"}]";
  parse_bad(j, strlen(j), "line 2): shape '8x8' is not MxNxK");
  j = "[{\"shape\": \"8x8x8\"}, 3]";
  parse_bad(j, strlen(j), "expected an object");
  j = "[{\"shape\": \"8x8x8\",\n}]";
  parse_bad(j, strlen(j), "t: line 2, column 1");
  j = "{\"shape\": \"8x8x8\"}";
  parse_bad(j, strlen(j), "expected a JSON array of problems, found an object");
  j = "[{\"shape\": \"8x8x8\", \"shape\": \"8x8x9\"}]";
  parse_bad(j, strlen(j), "duplicate key");
  j = "[{\"shape\": \"8x8x8\", \"epilogue\": \"x\\u0000\"}]";
  parse_bad(j, strlen(j), "NUL");
  parse_bad("[]", 2, "no problems");
  parse_bad("", 0, "empty");
  parse_bad(" \n\t\n", 4, "empty");
  /* CSV */
  j = "shape,epilogue\n8x8x8,x\n8x8x8,relu(x),fp32\n";
  parse_bad(j, strlen(j), "t: line 3: more fields than the header names");
  j = "shape,epilogue,math\n8x8x8,x\n";
  parse_bad(j, strlen(j), "line 2: 2 field(s), the header names 3");
  j = "shape,epilogue,dtype\n8x8x8,x,fp32\n";
  parse_bad(j, strlen(j), "line 1: unknown column 'dtype'");
  j = "epilogue,math\nx,fp32\n";
  parse_bad(j, strlen(j), "no 'shape' column");
  j = "shape,shape\n8x8x8,8x8x8\n";
  parse_bad(j, strlen(j), "named twice");
  j = "shape,epilogue\n8x8x8,\"max(x, 0)\n";
  parse_bad(j, strlen(j), "line 2: unterminated quoted field");
  j = "shape,math\n8x8x8,fp32\n\n9x9x0,fp32\n";
  parse_bad(j, strlen(j), "line 4: shape 9x9x0");
  j = "shape\n";
  parse_bad(j, strlen(j), "no problems (only a header line)");
  j = "shape,epilogue\n8x8x8,\"x + \"\"y\"\"\"\n"; /* "" is a quote, which no epilogue takes */
  parse_bad(j, strlen(j), "line 2: epilogue: col 5: unexpected character '\"'");
  parse_bad("shape\n8x8x8\0\n", 13, "NUL byte");
  /* an epilogue longer than the language takes */
  static char big[6000];
  strcpy(big, "shape,epilogue\n8x8x8,");
  size_t n = strlen(big);
  for (int i = 0; i < 2100; i++) memcpy(big + n + 2 * i, "x+", 2);
  n += 4200;
  strcpy(big + n, "x\n");
  parse_bad(big, strlen(big), "t: line 2: epilogue");
}

static void test_shape_parse(void) {
  int64_t m, n, k;
  char msg[256];
  ASSERT_OK(ft_shape_parse("1x22x333", &m, &n, &k, msg, sizeof msg));
  ASSERT_EQ_INT((int)(m + n + k), 356);
  ASSERT_EQ_INT(ft_shape_parse("1x2x3 ", &m, &n, &k, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "trailing text");
  ASSERT_EQ_INT(ft_shape_parse("99999999999999999999x1x1", &m, &n, &k, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "M is too large");
  ASSERT_EQ_INT(ft_shape_parse(NULL, &m, &n, &k, msg, sizeof msg), FT_ERR_INVALID_ARG);
}

/* M ranges (issue 42): "A..BxNxK" stands for A, the powers of two between, and B. */
static void test_shape_range(void) {
  int64_t lo = 0, hi = 0, n = 0, k = 0, ms[FT_SHAPE_RANGE_MAX];
  char msg[256];
  ASSERT_OK(ft_shape_range_parse("1..4096x14336x4096", &lo, &hi, &n, &k, msg, sizeof msg));
  ASSERT_TRUE(lo == 1 && hi == 4096 && n == 14336 && k == 4096);
  ASSERT_EQ_INT(ft_shape_range_values(lo, hi, ms, FT_SHAPE_RANGE_MAX), 13);
  for (int i = 0; i < 13; i++) ASSERT_EQ_INT(ms[i], (int64_t)1 << i);
  ASSERT_OK(ft_shape_range_parse("128x256x512", &lo, &hi, &n, &k, msg, sizeof msg)); /* the plain form */
  ASSERT_TRUE(lo == 128 && hi == 128 && n == 256 && k == 512);
  ASSERT_EQ_INT(ft_shape_range_values(lo, hi, ms, 1), 1);
  ASSERT_OK(ft_shape_range_parse("40..100x8x8", &lo, &hi, &n, &k, msg, sizeof msg));
  ASSERT_EQ_INT(ft_shape_range_values(lo, hi, ms, FT_SHAPE_RANGE_MAX), 3);
  ASSERT_TRUE(ms[0] == 40 && ms[1] == 64 && ms[2] == 100);
  ASSERT_OK(ft_shape_range_parse("33..64x8x8", &lo, &hi, &n, &k, msg, sizeof msg));
  ASSERT_EQ_INT(ft_shape_range_values(lo, hi, ms, FT_SHAPE_RANGE_MAX), 2);
  ASSERT_OK(ft_shape_range_parse("64..64x8x8", &lo, &hi, &n, &k, msg, sizeof msg)); /* A == B: one M */
  ASSERT_EQ_INT(ft_shape_range_values(lo, hi, ms, FT_SHAPE_RANGE_MAX), 1);
  ASSERT_EQ_INT(ft_shape_range_values(3, 5, NULL, 0), 3); /* 3, 4, 5 */
  ASSERT_EQ_INT(ft_shape_range_values(1, INT64_MAX, ms, FT_SHAPE_RANGE_MAX), 64);
  ASSERT_TRUE(ms[62] == (int64_t)1 << 62 && ms[63] == INT64_MAX);
  ASSERT_EQ_INT(ft_shape_range_values(3, INT64_MAX, NULL, 0), 63);
  ASSERT_EQ_INT(ft_shape_range_values(0, 8, NULL, 0), 0);
  ASSERT_EQ_INT(ft_shape_range_values(9, 8, NULL, 0), 0);
  static const struct {
    const char *text, *want;
  } bad[] = {{"64..8x256x256", "M range 64..8 is reversed (A..B needs A <= B)"},
             {"0..64x8x8", "M range 0..64: A and B must be >= 1"},
             {"1..0x8x8", "M range 1..0"},
             {"1..x8x8", "M range '1..' is not A..B with decimal integers"},
             {"..64x8x8", "is not MxNxK or A..BxNxK"},
             {"1...64x8x8", "M range '1...64' is not A..B"},
             {"1..64..128x8x8", "is not A..B"},
             {"a..bx8x8", "is not MxNxK or A..BxNxK"},
             {"1..bx8x8", "M range '1..b' is not A..B"},
             {"-1..4x8x8", "is not MxNxK or A..BxNxK"},
             {"1..99999999999999999999x8x8", "B is too large"},
             {"99999999999999999999..1x8x8", "M is too large"},
             {"1..4096", "is not MxNxK or A..BxNxK"},
             {"1..4096x8", "is not MxNxK or A..BxNxK"},
             {"1..4096x8x8x", "trailing text 'x'"},
             {"1..4096x8x99999999999999999999", "K is too large"},
             {"1..4096x8x8 ", "trailing text"},
             {"", "is not MxNxK"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    msg[0] = 0;
    if (ft_shape_range_parse(bad[i].text, &lo, &hi, &n, &k, msg, sizeof msg) != FT_ERR_INVALID_ARG)
      FT_FAIL_AT_("'%s' was taken", bad[i].text);
    ASSERT_CONTAINS(msg, bad[i].want);
  }
  ASSERT_EQ_INT(ft_shape_range_parse(NULL, &lo, &hi, &n, &k, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_shape_range_parse("1x1x1", NULL, &hi, &n, &k, msg, sizeof msg), FT_ERR_INVALID_ARG);
  /* the plain parser keeps refusing a range */
  ASSERT_EQ_INT(ft_shape_parse("1..8x8x8", &lo, &n, &k, msg, sizeof msg), FT_ERR_INVALID_ARG);

  /* A problem list: one item per M (times the modes of auto), in file order; the ends checked
   * as any shape is. */
  ft_problem_list *l = parse_ok("shape,epilogue,math\n1..8x256x128,biasrelu,bf16\n33..64x256x128,,auto\n"
                                "4x256x128,biasrelu,bf16\n");
  if (l) {
    ASSERT_EQ_INT(l->n_entries, 3);
    ASSERT_EQ_INT(l->count, 4 + 2 * 3 + 1);
    ASSERT_EQ_INT(l->items[0].problem.m, 1);
    ASSERT_EQ_INT(l->items[3].problem.m, 8);
    ASSERT_EQ_INT(l->items[3].line, 2);
    ASSERT_EQ_INT(l->items[4].problem.m, 33);
    ASSERT_EQ_INT(l->items[4].problem.math, FT_MATH_FP32);
    ASSERT_EQ_INT(l->items[5].problem.math, FT_MATH_3XTF32);
    ASSERT_EQ_INT(l->items[9].problem.m, 64);
    ASSERT_EQ_INT(l->items[9].problem.math, FT_MATH_TF32);
    ASSERT_EQ_INT(l->items[10].problem.m, 4);
    ASSERT_EQ_INT(l->items[10].duplicate_of, 2); /* M 4 of the range on line 2 */
    ASSERT_EQ_INT(l->n_unique, 10);
    ft_problem_list_free(l);
  }
  l = parse_ok("[{\"shape\": \"16..64x8x8\"}]");
  if (l) {
    ASSERT_EQ_INT(l->count, 3);
    ft_problem_list_free(l);
  }
  parse_bad("shape\n8x8x8\n64..8x8x8\n", strlen("shape\n8x8x8\n64..8x8x8\n"), "t: line 3: shape '64..8x8x8': M range 64..8 is reversed");
  parse_bad("[{\"shape\": \"0..8x8x8\"}]", strlen("[{\"shape\": \"0..8x8x8\"}]"), "t: entry 0 (line 1): shape '0..8x8x8': M range 0..8: A and B");
  parse_bad("shape\n1..2147483648x8x8\n", strlen("shape\n1..2147483648x8x8\n"), "t: line 2: shape 2147483648x8x8");
}

static void test_load(void) {
  char msg[1024];
  ft_problem_list *l = NULL;
  ASSERT_EQ_INT(ft_problem_list_load("missing.csv", &l, msg, sizeof msg), FT_ERR_IO);
  ASSERT_CONTAINS(msg, "missing.csv");
  ASSERT_EQ_INT(ft_problem_list_load(".", &l, msg, sizeof msg), FT_ERR_IO);
  ASSERT_CONTAINS(msg, "not a regular file");
  FILE *f = fopen("p.csv", "w");
  fputs("shape,epilogue,math\n8x8x8,biasrelu,tf32\n", f);
  fclose(f);
  ASSERT_OK(ft_problem_list_load("p.csv", &l, msg, sizeof msg));
  ASSERT_EQ_INT(l->count, 1);
  ft_problem_list_free(l);
  f = fopen("bad.csv", "w");
  fputs("shape,epilogue,math\n8x8x8,biasrelu,tf32\n8x8x8,minsub,fp128\n", f);
  fclose(f);
  ASSERT_EQ_INT(ft_problem_list_load("bad.csv", &l, msg, sizeof msg), FT_ERR_FORMAT);
  ASSERT_CONTAINS(msg, "bad.csv: line 3: unknown math 'fp128'");
}

static void write_file(const char *name, const char *text) {
  FILE *f = fopen(name, "w");
  fputs(text, f);
  fclose(f);
}

/* `tune --problems` refuses a bad file with its line and exit 2 before anything else: no
 * database is created, an existing one keeps its bytes and mtime. */
static void test_cli(void) {
  write_file("bad.json", "[{\"shape\": \"64x256x128\", \"epilogue\": \"biasrelu\"},\n {\"shape\": \"64x0x8\"}]");
  ASSERT_EQ_INT(run("--db new.db tune --problems bad.json --devices all"), 2);
  ASSERT_CONTAINS(R.out, "bad.json: entry 1 (line 2): shape 64x0x8");
  ASSERT_EQ_INT(lines(R.out), 1);
  ASSERT_TRUE(access("new.db", F_OK) != 0);
  write_file("empty.csv", "");
  ASSERT_EQ_INT(run("--db new.db tune --problems empty.csv"), 2);
  ASSERT_CONTAINS(R.out, "empty");
  ASSERT_TRUE(access("new.db", F_OK) != 0);
  ASSERT_EQ_INT(run("--db old.db init"), 0);
  struct stat before, after;
  ASSERT_TRUE(stat("old.db", &before) == 0);
  sleep(1); /* an mtime that changed would show */
  write_file("bad.csv", "shape,epilogue,math\n8x8x8,biasrelu,fp32\n8x8x8,relu(x,fp32\n");
  ASSERT_EQ_INT(run("--db old.db tune --problems bad.csv"), 2);
  ASSERT_CONTAINS(R.out, "bad.csv: line 3: ");
  ASSERT_TRUE(stat("old.db", &after) == 0);
  ASSERT_TRUE(before.st_mtime == after.st_mtime && before.st_size == after.st_size);
  ASSERT_EQ_INT(run("--db old.db tune --problems missing.csv"), 1);
  ASSERT_CONTAINS(R.out, "missing.csv");
  /* option misuse */
  write_file("good.csv", "shape\n8x8x8\n");
  ASSERT_EQ_INT(run("--db new.db tune --problems good.csv --shape 8x8x8"), 2);
  ASSERT_EQ_INT(run("--db new.db tune --shape 8x8x8 --devices all"), 2);
  ASSERT_CONTAINS(R.out, "--devices goes with --problems");
  /* "" and "," name no device (issue 58 item 5: d57500e tuned "on 0 device(s)" and made the database). */
  const char *bad_devices[] = {"0,0", "x", "0,", "-1", ",1", "1,,2", "", ","};
  for (size_t i = 0; i < sizeof bad_devices / sizeof bad_devices[0]; i++) {
    char a[128];
    snprintf(a, sizeof a, "--db new.db tune --problems good.csv --devices '%s'", bad_devices[i]);
    if (run(a) != 2) FT_FAIL_AT_("--devices '%s' gave %d: %s", bad_devices[i], R.code, R.out);
    ASSERT_TRUE(access("new.db", F_OK) != 0);
  }
  ASSERT_EQ_INT(run("--db new.db tune --problems good.csv --devices ''"), 2);
  ASSERT_CONTAINS(R.out, "--devices is empty");
  /* a good file without a GPU: the device is missing, still no database */
  int count = 0;
  if (ft_device_count(&count, NULL, 0) != FT_OK) {
    ASSERT_EQ_INT(run("--db new.db tune --problems good.csv"), 1);
    ASSERT_CONTAINS(R.out, "no CUDA device");
    ASSERT_TRUE(access("new.db", F_OK) != 0);
  }
  /* an M range: a malformed one is a usage error naming it, before any database or device */
  static const char *const bad_ranges[] = {"64..8x256x256", "0..64x256x256", "1..x256x256", "a..bx8x8",
                                           "1..99999999999999999999x8x8", "1...8x8x8"};
  for (size_t i = 0; i < sizeof bad_ranges / sizeof bad_ranges[0]; i++) {
    char a[160];
    snprintf(a, sizeof a, "--db new.db tune --shape '%s'", bad_ranges[i]);
    if (run(a) != 2 || !strstr(R.out, bad_ranges[i]) || lines(R.out) != 1)
      FT_FAIL_AT_("tune --shape '%s' gave %d: %s", bad_ranges[i], R.code, R.out);
    ASSERT_TRUE(access("new.db", F_OK) != 0);
  }
  ASSERT_EQ_INT(run("--db old.db tune --shape 64..8x256x256"), 2);
  ASSERT_CONTAINS(R.out, "fusedtune tune: shape '64..8x256x256': M range 64..8 is reversed (A..B needs A <= B)");
  ASSERT_EQ_INT(run("--db new.db tune --shape 1..4096x0x8"), 2);
  ASSERT_CONTAINS(R.out, "positive");
  write_file("range.csv", "shape\n8x8x8\n64..8x8x8\n");
  ASSERT_EQ_INT(run("--db old.db tune --problems range.csv"), 2);
  ASSERT_CONTAINS(R.out, "range.csv: line 3: shape '64..8x8x8': M range 64..8 is reversed");
  ASSERT_TRUE(stat("old.db", &after) == 0);
  ASSERT_TRUE(before.st_mtime == after.st_mtime && before.st_size == after.st_size);
  if (ft_device_count(&count, NULL, 0) != FT_OK) {
    ASSERT_EQ_INT(run("--db new.db tune --shape 1..4096x256x256 --math bf16"), 1);
    ASSERT_CONTAINS(R.out, "no CUDA device");
    ASSERT_TRUE(access("new.db", F_OK) != 0);
  }
  ASSERT_EQ_INT(run("tune --help"), 0);
  ASSERT_CONTAINS(R.out, "--shape A..BxNxK");
  ASSERT_CONTAINS(R.out, "--problems FILE");
  ASSERT_CONTAINS(R.out, "--devices all|0,2");
}

/* The test-hook CLI: the parent's processes on pretended devices (FT_TEST_BATCH_DEVICES: each child
 * "tunes" a problem in 0.6 s without CUDA): every problem done once, a device whose process dies
 * mid-problem costs that problem, which another device finishes; Ctrl-C stops and says how to go on. */
static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* `ENV fusedtune --db fake.db tune --problems five.csv TAIL` in the scratch folder. */
static int fake(const char *env, const char *tail) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s '%s' --db fake.db tune --problems five.csv %s", env, getenv("FT_CLI_HOOKS"), tail);
  return capture(cmd);
}

static void test_fake_devices(void) {
  write_file("five.csv", "shape,epilogue,math\n64x256x128,biasrelu,bf16\n64x256x128,\"relu(x + bias)\",bf16\n"
                         "128x64x64,minsub,\n256x64x64,x,tf32\n512x64x64,x,fp16\n1024x64x64,x,fp32\n");
  /* With devices present, an empty --devices is still a usage error, nothing created. */
  ASSERT_EQ_INT(fake("FT_TEST_BATCH_DEVICES=2", "--devices ''"), 2);
  ASSERT_TRUE(access("fake.db", F_OK) != 0);
  ASSERT_EQ_INT(fake("FT_TEST_BATCH_DEVICES=3", "--devices all --json 2>/dev/null"), 0);
  ASSERT_CONTAINS(R.out, "\"lost_problems\":0");
  ASSERT_CONTAINS(R.out, "{\"line\":3,\"same_as_line\":2,\"math\":\"bf16\"}");
  ASSERT_EQ_INT(count(R.out, "\"status\":\"ok\""), 5);
  ASSERT_EQ_INT(fake("FT_TEST_BATCH_DEVICES=3 FT_TEST_BATCH_DIE=1", "--devices 0,1,2"), 0);
  ASSERT_CONTAINS(R.out, "device #1 lost: its process exited with status 3 while tuning");
  ASSERT_CONTAINS(R.out, "it went back to the queue");
  ASSERT_CONTAINS(R.out, "1 problem(s) were in flight on a lost device");
  ASSERT_EQ_INT(count(R.out, " ok "), 5);
  /* every device lost: what was not done is said */
  ASSERT_EQ_INT(fake("FT_TEST_BATCH_DEVICES=2 FT_TEST_BATCH_DIE=0", ""), 1);
  ASSERT_CONTAINS(R.out, "no device is left");
  ASSERT_EQ_INT(fake("FT_TEST_BATCH_DEVICES=2", "--devices 0,2"), 2);
  ASSERT_CONTAINS(R.out, "no device 2 (2 visible");
  /* Ctrl-C after the first problems: exit 1, what finished is listed, the way on is said */
  ASSERT_EQ_INT(fake("FT_TEST_BATCH_DEVICES=1", "2> err.txt & P=$!; for i in $(seq 300); do "
                     "grep -q ', best' err.txt && break; sleep 0.1; done; kill -INT $P; wait $P; rc=$?; "
                     "cat err.txt; exit $rc"), 1);
  ASSERT_CONTAINS(R.out, "interrupted: stopping after the candidates in flight");
  ASSERT_CONTAINS(R.out, "run the same command to continue");
  ASSERT_CONTAINS(R.out, " interrupted ");
}

int main(void) {
  cli = getenv("FT_CLI");
  if (enter_scratch("problems")) RETURN_FAIL("cannot make the scratch folder %s", dir);
  test_json();
  test_csv();
  test_csv_values();
  test_bad();
  test_shape_parse();
  test_shape_range();
  test_load();
  if (cli) test_cli();
  /* The CLI built with the hooks for the tests ($FT_CLI_HOOKS); the one for use has none. */
  if (getenv("FT_CLI_HOOKS")) test_fake_devices();
  else FT_FAIL_AT_("FT_CLI is not set (run through ctest): the CLI's refusals untested");
  if (!ft_test_failures) leave_scratch();
  return FT_TEST_DONE();
}
